/*
 * backend_api/backends/python/bls.c - business logic scripting: a stub's
 * BLS_INFER becomes a TRITONSERVER_InferenceRequest sent with
 * TRITONSERVER_ServerInferAsync; each of its responses goes back as a
 * BLS_RESPONSE.
 *
 * The request's inputs point into the BLS_INFER payload (no copy), which
 * the call keeps until its release. Outputs land in malloc'ed buffers of
 * the backend's response allocator. The response callback runs on the
 * server's loop thread: it only queues the response on the instance's
 * channel and wakes the reader, which serializes it (tensor bytes inline:
 * one copy into the message) and writes it to the stub. Answers for a stub
 * that died meanwhile (another generation) are dropped. A call holds a
 * reference on the channel, so it may outlive its instance.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_DIMS 64

TRITONSERVER_ResponseAllocator *ifd__py_bls_alloc;

/* One call in flight. Two references: the release, and the FINAL
 * response. */
typedef struct bls_call {
  ifd__py_chan_t *chan; /* a reference */
  uint32_t id, gen;
  char *payload; /* owned: the inputs' bytes */
  atomic_int refs;
} bls_call_t;

static void call_put(bls_call_t *c) {
  if (atomic_fetch_sub(&c->refs, 1) != 1) return;
  ifd__py_chan_put(c->chan);
  free(c->payload);
  free(c);
}

/* ---- callbacks (the server's threads) ------------------------------------ */

static void on_response(TRITONSERVER_InferenceResponse *resp, uint32_t flags,
                        void *userp) {
  bls_call_t *c = userp;
  ifd__py_item_t *it = calloc(1, sizeof(*it));
  if (it != NULL) {
    it->call_id = c->id;
    it->gen = c->gen;
    it->flags = flags;
    it->resp = resp;
    resp = NULL;
    if (ifd__py_chan_push(c->chan, it) == 0) it = NULL;
  }
  ifd__py_item_free(it); /* the instance is gone: nobody waits */
  if (resp != NULL)
    ifd__py_log_error(TRITONSERVER_InferenceResponseDelete(resp),
                      "cannot delete a BLS response");
  if (flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL) call_put(c);
}

static void on_release(TRITONSERVER_InferenceRequest *r, uint32_t flags,
                       void *userp) {
  (void)flags;
  ifd__py_log_error(TRITONSERVER_InferenceRequestDelete(r),
                    "cannot delete a BLS request");
  call_put(userp);
}

/* ---- answers (reader thread) --------------------------------------------- */

/* Appends one RESP for response `resp` (NULL: has_response 0). */
static void put_resp(ifd__py_buf_t *b, size_t base,
                     TRITONSERVER_InferenceResponse *resp) {
  uint32_t count = 0;
  if (resp == NULL) {
    ifd__py_buf_u32(b, 0);
    return;
  }
  ifd__py_buf_u32(b, 1);
  /* ResponseError's error belongs to the response; OutputCount's to us. */
  TRITONSERVER_Error *err = TRITONSERVER_InferenceResponseError(resp);
  bool owned = false;
  if (err == NULL) {
    err = TRITONSERVER_InferenceResponseOutputCount(resp, &count);
    owned = err != NULL;
  }
  size_t mark = b->len;
  if (err == NULL) {
    ifd__py_buf_u32(b, 0);
    ifd__py_buf_u32(b, count);
    for (uint32_t i = 0; i < count && err == NULL; i++) {
      const char *name;
      TRITONSERVER_DataType dt;
      const int64_t *shape;
      uint64_t dims;
      const void *base_p;
      size_t size;
      TRITONSERVER_MemoryType mt;
      int64_t mt_id;
      void *userp;
      err = TRITONSERVER_InferenceResponseOutput(resp, i, &name, &dt, &shape,
                                                 &dims, &base_p, &size, &mt,
                                                 &mt_id, &userp);
      if (err == NULL && mt == TRITONSERVER_MEMORY_GPU && size > 0)
        err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                    "a BLS output is in GPU memory");
      if (err != NULL) break;
      const char *dts = TRITONSERVER_DataTypeString(dt);
      ifd__py_buf_str(b, name, strlen(name));
      ifd__py_buf_str(b, dts, strlen(dts));
      ifd__py_buf_u32(b, (uint32_t)dims);
      ifd__py_buf_add(b, shape, dims * sizeof(int64_t));
      ifd__py_buf_u64(b, size);
      ifd__py_buf_u32(b, 0);
      ifd__py_buf_u32(b, 0);
      ifd__py_buf_pad8(b, base);
      ifd__py_buf_add(b, base_p, size);
    }
    if (err == NULL) return;
    /* An output could not be read: the response becomes that error. The
     * response owns errors it returns from ResponseError, not these. */
    b->len = mark;
    ifd__py_buf_u32(b, 1);
    ifd__py_buf_u32(b, (uint32_t)TRITONSERVER_ErrorCode(err));
    const char *m = TRITONSERVER_ErrorMessage(err);
    ifd__py_buf_str(b, m, strlen(m));
    TRITONSERVER_ErrorDelete(err);
    return;
  }
  ifd__py_buf_u32(b, 1);
  ifd__py_buf_u32(b, (uint32_t)TRITONSERVER_ErrorCode(err));
  const char *m = TRITONSERVER_ErrorMessage(err);
  ifd__py_buf_str(b, m, strlen(m));
  if (owned) TRITONSERVER_ErrorDelete(err);
}

/* Writes a FINAL error answer to call `id`. */
static void answer_error(ifd__py_instance_t *in, uint32_t id,
                         TRITONSERVER_Error *err) {
  ifd__py_buf_t b = {0};
  const char *m = TRITONSERVER_ErrorMessage(err);
  ifd__py_buf_u32(&b, IFD_PY_FLAG_FINAL);
  ifd__py_buf_u32(&b, 1);
  ifd__py_buf_u32(&b, 1);
  ifd__py_buf_u32(&b, (uint32_t)TRITONSERVER_ErrorCode(err));
  ifd__py_buf_str(&b, m, strlen(m));
  if (!b.oom) ifd__py_send_now(in, IFD_PY_MSG_BLS_RESPONSE, id, b.p, b.len);
  free(b.p);
  TRITONSERVER_ErrorDelete(err);
}

void ifd__py_bls_drain(ifd__py_instance_t *in) {
  ifd__py_chan_t *ch = in->chan;
  pthread_mutex_lock(&ch->mu);
  ifd__py_item_t *it = ch->head;
  ch->head = ch->tail = NULL;
  pthread_mutex_unlock(&ch->mu);
  pthread_mutex_lock(&in->mu);
  uint32_t gen = in->gen;
  pthread_mutex_unlock(&in->mu);
  ifd__py_buf_t b = {0};
  while (it != NULL) {
    ifd__py_item_t *next = it->next;
    if (it->gen == gen && it->msg_type != 0) {
      ifd__py_send_now(in, it->msg_type, it->call_id, it->msg, it->msg_len);
    } else if (it->gen == gen) {
      b.len = 0;
      b.oom = 0;
      ifd__py_buf_u32(&b, it->flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL
                              ? IFD_PY_FLAG_FINAL
                              : 0);
      put_resp(&b, 0, it->resp);
      if (b.oom)
        answer_error(in, it->call_id,
                     TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                           "out of memory for a BLS "
                                           "response"));
      else
        ifd__py_send_now(in, IFD_PY_MSG_BLS_RESPONSE, it->call_id, b.p, b.len);
    }
    ifd__py_item_free(it);
    it = next;
  }
  free(b.p);
}

/* ---- BLS_INFER ----------------------------------------------------------- */

static TRITONSERVER_Error *bad(const char *what) {
  return ifd__py_errorf(TRITONSERVER_ERROR_INVALID_ARG,
                        "malformed BLS request from the stub: %s", what);
}

static TRITONSERVER_Error *set_params(TRITONSERVER_InferenceRequest *r,
                                      json_t *params) {
  const char *k;
  json_t *v;
  TRITONSERVER_Error *err = NULL;
  if (params == NULL || json_is_null(params)) return NULL;
  if (!json_is_object(params)) return bad("parameters");
  json_object_foreach(params, k, v) {
    if (json_is_string(v))
      err = TRITONSERVER_InferenceRequestSetStringParameter(
          r, k, json_string_value(v));
    else if (json_is_boolean(v))
      err =
          TRITONSERVER_InferenceRequestSetBoolParameter(r, k, json_is_true(v));
    else if (json_is_integer(v))
      err = TRITONSERVER_InferenceRequestSetIntParameter(
          r, k, (int64_t)json_integer_value(v));
    else if (json_is_real(v))
      err = TRITONSERVER_InferenceRequestSetDoubleParameter(r, k,
                                                            json_real_value(v));
    else
      err = ifd__py_errorf(TRITONSERVER_ERROR_INVALID_ARG,
                           "BLS request parameter '%s' is not a str, int, "
                           "bool or float",
                           k);
    if (err != NULL) return err;
  }
  return NULL;
}

/* Fills request r from the JSON and the inputs after it (at rd). */
static TRITONSERVER_Error *build(TRITONSERVER_InferenceRequest *r, json_t *j,
                                 ifd__py_rd_t *rd) {
  TRITONSERVER_Error *err = NULL;
  json_t *v = json_object_get(j, "request_id");
  if (json_is_string(v) && json_string_length(v) > 0)
    err = TRITONSERVER_InferenceRequestSetId(r, json_string_value(v));
  v = json_object_get(j, "correlation_id");
  if (err == NULL && json_is_string(v))
    err = TRITONSERVER_InferenceRequestSetCorrelationIdString(
        r, json_string_value(v));
  else if (err == NULL && json_is_integer(v) && json_integer_value(v) != 0)
    err = TRITONSERVER_InferenceRequestSetCorrelationId(
        r, (uint64_t)json_integer_value(v));
  v = json_object_get(j, "flags");
  if (err == NULL && json_is_integer(v) && json_integer_value(v) != 0)
    err = TRITONSERVER_InferenceRequestSetFlags(
        r, (uint32_t)json_integer_value(v));
  v = json_object_get(j, "timeout");
  if (err == NULL && json_is_integer(v) && json_integer_value(v) > 0)
    err = TRITONSERVER_InferenceRequestSetTimeoutMicroseconds(
        r, (uint64_t)json_integer_value(v));
  if (err == NULL) err = set_params(r, json_object_get(j, "parameters"));
  if (err != NULL) return err;

  json_t *inputs = json_object_get(j, "inputs");
  if (inputs != NULL && !json_is_array(inputs)) return bad("inputs");
  size_t i;
  json_array_foreach(inputs, i, v) {
    json_t *name = json_object_get(v, "name");
    json_t *dtype = json_object_get(v, "dtype");
    json_t *shape = json_object_get(v, "shape");
    int64_t dims[MAX_DIMS];
    uint64_t size = 0;
    if (!json_is_string(name) || !json_is_string(dtype) ||
        !json_is_array(shape) || json_array_size(shape) > MAX_DIMS)
      return bad("an input");
    for (size_t d = 0; d < json_array_size(shape); d++)
      dims[d] = (int64_t)json_integer_value(json_array_get(shape, d));
    if (ifd__py_rd_u64(rd, &size) != 0 || ifd__py_rd_pad8(rd) != 0 ||
        (uint64_t)(rd->end - rd->p) < size)
      return bad("input bytes");
    const char *n = json_string_value(name);
    err = TRITONSERVER_InferenceRequestAddInput(
        r, n, TRITONSERVER_StringToDataType(json_string_value(dtype)), dims,
        json_array_size(shape));
    if (err == NULL)
      err = TRITONSERVER_InferenceRequestAppendInputData(
          r, n, rd->p, size, TRITONSERVER_MEMORY_CPU, 0);
    if (err != NULL) return err;
    rd->p += size;
  }
  json_t *outs = json_object_get(j, "requested_output_names");
  if (outs != NULL && !json_is_array(outs))
    return bad("requested_output_names");
  json_array_foreach(outs, i, v) {
    if (!json_is_string(v)) return bad("requested_output_names");
    err = TRITONSERVER_InferenceRequestAddRequestedOutput(r,
                                                          json_string_value(v));
    if (err != NULL) return err;
  }
  return NULL;
}

void ifd__py_bls_infer(ifd__py_instance_t *in, uint32_t id, char *payload,
                       size_t len) {
  ifd__py_rd_t rd = {payload, payload, payload + len};
  const char *js = NULL;
  uint32_t jlen = 0;
  json_t *j = NULL;
  TRITONSERVER_InferenceRequest *r = NULL;
  TRITONSERVER_Error *err = NULL;
  bls_call_t *c = NULL;
  if (ifd__py_rd_str(&rd, &js, &jlen) != 0 ||
      (j = json_loadb(js, jlen, 0, NULL)) == NULL || !json_is_object(j)) {
    err = bad("JSON");
    goto out_fail;
  }
  json_t *name = json_object_get(j, "model_name");
  json_t *ver = json_object_get(j, "model_version");
  if (!json_is_string(name)) {
    err = bad("model_name");
    goto out_fail;
  }
  c = calloc(1, sizeof(*c));
  if (c == NULL) {
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
    goto out_fail;
  }
  err = TRITONSERVER_InferenceRequestNew(
      &r, in->model->server, json_string_value(name),
      json_is_integer(ver) ? (int64_t)json_integer_value(ver) : -1);
  if (err == NULL) err = build(r, j, &rd);
  if (err == NULL)
    err = TRITONSERVER_InferenceRequestSetReleaseCallback(r, on_release, c);
  if (err == NULL)
    err = TRITONSERVER_InferenceRequestSetResponseCallback(
        r, ifd__py_bls_alloc, NULL, on_response, c);
  if (err != NULL) goto out_fail;
  pthread_mutex_lock(&in->chan->mu);
  in->chan->refs++;
  pthread_mutex_unlock(&in->chan->mu);
  c->chan = in->chan;
  c->id = id;
  pthread_mutex_lock(&in->mu);
  c->gen = in->gen;
  pthread_mutex_unlock(&in->mu);
  c->payload = payload;
  atomic_init(&c->refs, 2);
  payload = NULL;
  err = TRITONSERVER_ServerInferAsync(in->model->server, r, NULL);
  if (err != NULL) {
    /* Neither callback will run. */
    payload = c->payload;
    c->payload = NULL;
    ifd__py_chan_put(c->chan);
    goto out_fail;
  }
  json_decref(j);
  return;
out_fail:
  if (r != NULL)
    ifd__py_log_error(TRITONSERVER_InferenceRequestDelete(r),
                      "cannot delete a BLS request");
  free(c);
  json_decref(j);
  free(payload);
  answer_error(in, id, err);
}

/* ---- the allocator (any thread) ------------------------------------------ */

static TRITONSERVER_Error *alloc_fn(TRITONSERVER_ResponseAllocator *allocator,
                                    const char *tensor_name, size_t byte_size,
                                    TRITONSERVER_MemoryType memory_type,
                                    int64_t memory_type_id, void *userp,
                                    void **buffer, void **buffer_userp,
                                    TRITONSERVER_MemoryType *actual_type,
                                    int64_t *actual_type_id) {
  (void)allocator;
  (void)tensor_name;
  (void)memory_type;
  (void)memory_type_id;
  (void)userp;
  *buffer = malloc(byte_size > 0 ? byte_size : 1);
  *buffer_userp = NULL;
  *actual_type = TRITONSERVER_MEMORY_CPU;
  *actual_type_id = 0;
  if (*buffer == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 "out of memory for a BLS output");
  return NULL;
}

static TRITONSERVER_Error *release_fn(TRITONSERVER_ResponseAllocator *allocator,
                                      void *buffer, void *buffer_userp,
                                      size_t byte_size,
                                      TRITONSERVER_MemoryType memory_type,
                                      int64_t memory_type_id) {
  (void)allocator;
  (void)buffer_userp;
  (void)byte_size;
  (void)memory_type;
  (void)memory_type_id;
  free(buffer);
  return NULL;
}

TRITONSERVER_Error *ifd__py_bls_init(void) {
  if (ifd__py_bls_alloc != NULL) return NULL;
  return TRITONSERVER_ResponseAllocatorNew(&ifd__py_bls_alloc, alloc_fn,
                                           release_fn, NULL);
}

void ifd__py_bls_fini(void) {
  if (ifd__py_bls_alloc != NULL)
    ifd__py_log_error(TRITONSERVER_ResponseAllocatorDelete(ifd__py_bls_alloc),
                      "cannot delete the BLS allocator");
  ifd__py_bls_alloc = NULL;
}
