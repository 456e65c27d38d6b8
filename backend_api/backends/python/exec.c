/*
 * backend_api/backends/python/exec.c - execute: EXECUTE, RESULT,
 * EXECUTE_DONE, RESPONSE (decoupled models and the response sender).
 *
 * Execute copies each request's inputs once into its own DOWN block and
 * sends the whole batch in one EXECUTE. Each request is then "open" (in
 * in->open under a rid) until its FINAL response: RESULT answers every
 * open request of the batch at once (outputs copied once from UP into the
 * output buffers); EXECUTE_DONE leaves them open for RESPONSE messages,
 * which the reader turns into responses through a response factory; ERROR
 * fails those still open. Whoever removes a request from the table (under
 * mu) answers and releases it, so each request ends exactly once; a
 * non-FINAL RESPONSE is sent under mu, so it always precedes the FINAL one.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_DIMS 64
#define MAX_NAME 256

static TRITONSERVER_Error *oom(void) {
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
}

/* ---- the open requests --------------------------------------------------- */

ifd__py_open_t *ifd__py_claim(ifd__py_instance_t *in, uint32_t batch,
                              size_t *n) {
  size_t k = 0;
  *n = 0;
  for (size_t i = 0; i < in->n_open; i++)
    if (batch == 0 || in->open[i].batch == batch) k++;
  if (k == 0) return NULL;
  ifd__py_open_t *o = malloc(k * sizeof(*o));
  for (size_t i = 0; i < in->n_open;) {
    if (batch != 0 && in->open[i].batch != batch) {
      i++;
      continue;
    }
    if (o != NULL) {
      o[(*n)++] = in->open[i];
    } else {
      /* No memory for the list: this one fails here, under mu. */
      ifd__py_fail_claimed(in, &in->open[i], 1, TRITONSERVER_ERROR_INTERNAL,
                           "out of memory");
    }
    in->open[i] = in->open[--in->n_open];
  }
  return o;
}

/* Reports statistics and releases a request that got its FINAL response. */
static void finish(ifd__py_instance_t *in, ifd__py_open_t *o, bool ok) {
  uint64_t now = ifd__py_now_ns();
  uint64_t done = o->t_done != 0 ? o->t_done : now;
  if (o->factory != NULL)
    ifd__py_log_error(TRITONBACKEND_ResponseFactoryDelete(o->factory),
                      "cannot delete a response factory");
  o->factory = NULL;
  ifd__py_log_error(
      TRITONBACKEND_ModelInstanceReportStatistics(
          in->instance, o->req, ok, o->t_start, o->t_start, done, now),
      "cannot report statistics");
  ifd__py_log_error(
      TRITONBACKEND_RequestRelease(o->req, TRITONSERVER_REQUEST_RELEASE_ALL),
      "cannot release a request");
}

/* A new response of o's request (its factory's once it has one). */
static TRITONSERVER_Error *response_new(ifd__py_open_t *o,
                                        TRITONBACKEND_Response **resp) {
  if (o->factory != NULL)
    return TRITONBACKEND_ResponseNewFromFactory(resp, o->factory);
  return TRITONBACKEND_ResponseNew(resp, o->req);
}

void ifd__py_fail_claimed(ifd__py_instance_t *in, ifd__py_open_t *o, size_t n,
                          TRITONSERVER_Error_Code code, const char *msg) {
  for (size_t i = 0; i < n; i++) {
    TRITONBACKEND_Response *resp = NULL;
    TRITONSERVER_Error *e = response_new(&o[i], &resp);
    if (e == NULL) {
      TRITONSERVER_Error *err = TRITONSERVER_ErrorNew(code, msg);
      ifd__py_log_error(TRITONBACKEND_ResponseSend(
                            resp, TRITONSERVER_RESPONSE_COMPLETE_FINAL, err),
                        "cannot send a response");
      TRITONSERVER_ErrorDelete(err);
    } else {
      ifd__py_log_error(e, "cannot create a response");
    }
    finish(in, &o[i], false);
  }
}

/* Sends every request an error response and releases it (requests that
 * never became open). */
static void fail_requests(ifd__py_instance_t *in, TRITONBACKEND_Request **reqs,
                          uint32_t count, TRITONSERVER_Error *err) {
  uint64_t now = ifd__py_now_ns();
  for (uint32_t r = 0; r < count; r++) {
    if (reqs[r] == NULL) continue;
    TRITONBACKEND_Response *resp = NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_ResponseNew(&resp, reqs[r]);
    if (e == NULL)
      ifd__py_log_error(TRITONBACKEND_ResponseSend(
                            resp, TRITONSERVER_RESPONSE_COMPLETE_FINAL, err),
                        "cannot send a response");
    else
      ifd__py_log_error(e, "cannot create a response");
    ifd__py_log_error(TRITONBACKEND_ModelInstanceReportStatistics(
                          in->instance, reqs[r], false, now, now, now, now),
                      "cannot report statistics");
    ifd__py_log_error(
        TRITONBACKEND_RequestRelease(reqs[r], TRITONSERVER_REQUEST_RELEASE_ALL),
        "cannot release a request");
  }
  TRITONSERVER_ErrorDelete(err);
}

/* ---- RESP ---------------------------------------------------------------- */

static TRITONSERVER_Error *malformed(ifd__py_instance_t *in) {
  return ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL,
                        "malformed answer from the stub of model '%s'",
                        in->model_name);
}

TRITONSERVER_Error *ifd__py_fill(ifd__py_instance_t *in,
                                 TRITONBACKEND_Response *resp, ifd__py_rd_t *r,
                                 TRITONSERVER_Error **user_err) {
  uint32_t is_err = 0, n = 0;
  *user_err = NULL;
  if (ifd__py_rd_u32(r, &is_err) != 0) return malformed(in);
  if (is_err) {
    uint32_t code = 0, len = 0;
    const char *s = NULL;
    if (ifd__py_rd_u32(r, &code) != 0 || ifd__py_rd_str(r, &s, &len) != 0)
      return malformed(in);
    char *msg = strndup(s, len);
    *user_err = TRITONSERVER_ErrorNew((TRITONSERVER_Error_Code)code,
                                      msg != NULL ? msg : "out of memory");
    free(msg);
    return NULL;
  }
  if (ifd__py_rd_u32(r, &n) != 0) return malformed(in);
  for (uint32_t i = 0; i < n; i++) {
    char name[MAX_NAME], dtype[32];
    const char *s = NULL;
    uint32_t len = 0, dims = 0, where = 0, zero = 0;
    int64_t shape[MAX_DIMS];
    uint64_t size = 0, off = 0;
    const char *src = NULL;
    if (ifd__py_rd_str(r, &s, &len) != 0 || len >= sizeof(name))
      return malformed(in);
    memcpy(name, s, len);
    name[len] = '\0';
    if (ifd__py_rd_str(r, &s, &len) != 0 || len >= sizeof(dtype))
      return malformed(in);
    memcpy(dtype, s, len);
    dtype[len] = '\0';
    if (ifd__py_rd_u32(r, &dims) != 0 || dims > MAX_DIMS ||
        ifd__py_rd_bytes(r, shape, sizeof(int64_t) * dims) != 0 ||
        ifd__py_rd_u64(r, &size) != 0 || ifd__py_rd_u32(r, &where) != 0 ||
        ifd__py_rd_u32(r, &zero) != 0)
      return malformed(in);
    if (where == 1) {
      if (ifd__py_rd_u64(r, &off) != 0 || off + size < off ||
          ifd__py_up_check(in, off + size) != 0)
        return malformed(in);
      src = in->up_base + off;
    } else {
      if (ifd__py_rd_pad8(r) != 0 || (uint64_t)(r->end - r->p) < size)
        return malformed(in);
      src = r->p;
      r->p += size;
    }
    if (resp == NULL || *user_err != NULL) continue;
    TRITONBACKEND_Output *out = NULL;
    void *dst = NULL;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mt_id = 0;
    TRITONSERVER_Error *err = TRITONBACKEND_ResponseOutput(
        resp, &out, name, TRITONSERVER_StringToDataType(dtype), shape, dims);
    if (err == NULL)
      err = TRITONBACKEND_OutputBuffer(out, &dst, size, &mt, &mt_id);
    if (err == NULL && mt == TRITONSERVER_MEMORY_GPU && size > 0)
      err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                  "the python backend needs CPU output "
                                  "buffers");
    if (err != NULL) {
      *user_err = err; /* the response fails; the cursor goes on */
      continue;
    }
    if (size > 0) memcpy(dst, src, size);
  }
  return NULL;
}

/* Builds and sends one response of o from the RESP at r (has_response 1).
 * Returns whether it succeeded; *bad set when the RESP was malformed. */
static bool respond(ifd__py_instance_t *in, ifd__py_open_t *o, ifd__py_rd_t *r,
                    uint32_t flags, bool *bad) {
  TRITONBACKEND_Response *resp = NULL;
  TRITONSERVER_Error *user_err = NULL;
  TRITONSERVER_Error *err = response_new(o, &resp);
  if (err != NULL) {
    ifd__py_log_error(err, "cannot create a response");
    /* The cursor still has to pass this RESP. */
    err = ifd__py_fill(in, NULL, r, &user_err);
    *bad = err != NULL;
    TRITONSERVER_ErrorDelete(user_err);
    TRITONSERVER_ErrorDelete(err);
    return false;
  }
  err = ifd__py_fill(in, resp, r, &user_err);
  *bad = err != NULL;
  TRITONSERVER_Error *sent = err != NULL ? err : user_err;
  ifd__py_log_error(TRITONBACKEND_ResponseSend(resp, flags, sent),
                    "cannot send a response");
  bool ok = sent == NULL;
  TRITONSERVER_ErrorDelete(err);
  TRITONSERVER_ErrorDelete(user_err);
  return ok;
}

/* ---- RESPONSE (reader thread) -------------------------------------------- */

static ifd__py_open_t *find_open(ifd__py_instance_t *in, uint32_t rid) {
  for (size_t i = 0; i < in->n_open; i++)
    if (in->open[i].rid == rid) return &in->open[i];
  return NULL;
}

void ifd__py_on_response(ifd__py_instance_t *in, const char *p, size_t len) {
  ifd__py_rd_t r = {p, p, p + len};
  uint32_t rid = 0, flags = 0, has = 0;
  bool bad = false;
  if (ifd__py_rd_u32(&r, &rid) != 0 || ifd__py_rd_u32(&r, &flags) != 0 ||
      ifd__py_rd_u32(&r, &has) != 0) {
    IFD_PY_LOG(TRITONSERVER_LOG_ERROR, "python model '%s': malformed RESPONSE",
               in->model_name);
    return;
  }
  bool final = flags & IFD_PY_FLAG_FINAL;
  pthread_mutex_lock(&in->mu);
  ifd__py_open_t *slot = find_open(in, rid);
  if (slot == NULL) {
    pthread_mutex_unlock(&in->mu);
    IFD_PY_LOG(TRITONSERVER_LOG_WARN,
               "python model '%s': RESPONSE for request %u, which has ended",
               in->model_name, (unsigned)rid);
    return;
  }
  if (!final) {
    TRITONSERVER_Error *err = NULL;
    if (slot->factory == NULL)
      err = TRITONBACKEND_ResponseFactoryNew(&slot->factory, slot->req);
    if (err != NULL) {
      slot->factory = NULL;
      ifd__py_log_error(err, "cannot create a response factory");
    } else if (has) {
      respond(in, slot, &r, 0, &bad);
    }
    pthread_mutex_unlock(&in->mu);
    if (bad)
      IFD_PY_LOG(TRITONSERVER_LOG_ERROR,
                 "python model '%s': malformed RESPONSE", in->model_name);
    return;
  }
  ifd__py_open_t o = *slot;
  *slot = in->open[--in->n_open];
  pthread_mutex_unlock(&in->mu);
  bool ok = true;
  if (has) {
    ok = respond(in, &o, &r, TRITONSERVER_RESPONSE_COMPLETE_FINAL, &bad);
  } else {
    TRITONSERVER_Error *err = NULL;
    if (o.factory == NULL)
      err = TRITONBACKEND_ResponseFactoryNew(&o.factory, o.req);
    if (err == NULL)
      err = TRITONBACKEND_ResponseFactorySendFlags(
          o.factory, TRITONSERVER_RESPONSE_COMPLETE_FINAL);
    if (err != NULL) {
      ok = false;
      ifd__py_log_error(err, "cannot send the final flag");
    }
  }
  if (bad)
    IFD_PY_LOG(TRITONSERVER_LOG_ERROR, "python model '%s': malformed RESPONSE",
               in->model_name);
  finish(in, &o, ok);
}

/* ---- RELEASE (reading thread) -------------------------------------------- */

void ifd__py_on_release(ifd__py_instance_t *in, const char *p, size_t len) {
  uint32_t rid = 0, flags = 0;
  if (len < 8) {
    IFD_PY_LOG(TRITONSERVER_LOG_ERROR, "python model '%s': malformed RELEASE",
               in->model_name);
    return;
  }
  memcpy(&rid, p, 4);
  memcpy(&flags, p + 4, 4);
  pthread_mutex_lock(&in->mu);
  ifd__py_open_t *slot = find_open(in, rid), o;
  if (slot != NULL) {
    o = *slot;
    *slot = in->open[--in->n_open];
  }
  pthread_mutex_unlock(&in->mu);
  if (slot == NULL) return; /* it ended meanwhile (the stub died) */
  if (o.factory != NULL)
    ifd__py_log_error(TRITONBACKEND_ResponseFactoryDelete(o.factory),
                      "cannot delete a response factory");
  o.factory = NULL;
  /* The request goes back to its scheduler for a later execute; one the
   * server cannot reschedule fails with its reason. */
  TRITONSERVER_Error *err = TRITONBACKEND_RequestRelease(o.req, flags);
  if (err == NULL) return;
  ifd__py_fail_claimed(in, &o, 1, TRITONSERVER_ErrorCode(err),
                       TRITONSERVER_ErrorMessage(err));
  TRITONSERVER_ErrorDelete(err);
}

/* ---- EXECUTE ------------------------------------------------------------- */

/* Appends the request's parameters: u32 count, then per parameter str key,
 * u32 kind (IFD_PY_PARAM_*) and its value (ipc.h). */
static TRITONSERVER_Error *write_params(ifd__py_buf_t *b,
                                        TRITONBACKEND_Request *req) {
  uint32_t npar = 0;
  TRITONSERVER_Error *err = TRITONBACKEND_RequestParameterCount(req, &npar);
  if (err != NULL) return err;
  ifd__py_buf_u32(b, npar);
  for (uint32_t i = 0; i < npar; i++) {
    const char *key = NULL;
    TRITONSERVER_ParameterType t;
    const void *v = NULL;
    err = TRITONBACKEND_RequestParameter(req, i, &key, &t, &v);
    if (err != NULL) return err;
    ifd__py_buf_str(b, key, strlen(key));
    if (t == TRITONSERVER_PARAMETER_STRING) {
      ifd__py_buf_u32(b, IFD_PY_PARAM_STR);
      ifd__py_buf_str(b, (const char *)v, strlen((const char *)v));
    } else if (t == TRITONSERVER_PARAMETER_INT) {
      ifd__py_buf_u32(b, IFD_PY_PARAM_INT);
      ifd__py_buf_u64(b, (uint64_t) * (const int64_t *)v);
    } else if (t == TRITONSERVER_PARAMETER_BOOL) {
      ifd__py_buf_u32(b, IFD_PY_PARAM_BOOL);
      ifd__py_buf_u32(b, *(const bool *)v ? 1 : 0);
    } else if (t == TRITONSERVER_PARAMETER_DOUBLE) {
      ifd__py_buf_u32(b, IFD_PY_PARAM_DOUBLE);
      ifd__py_buf_add(b, v, sizeof(double));
    } else {
      ifd__py_buf_u32(b, IFD_PY_PARAM_NULL);
    }
  }
  return NULL;
}

/* Appends request `req` (rid) to the EXECUTE payload (ipc.h's REQ), its
 * inputs copied into a new DOWN block of generation gen (*block: its
 * offset). */
static TRITONSERVER_Error *add_request(ifd__py_instance_t *in, ifd__py_buf_t *b,
                                       TRITONBACKEND_Request *req, uint32_t gen,
                                       uint32_t rid, uint64_t *block) {
  const char *id = NULL;
  uint64_t corr = 0, total = 0;
  uint32_t nin = 0, nout = 0, flags = 0;
  TRITONSERVER_Error *err = TRITONBACKEND_RequestId(req, &id);
  if (err == NULL) err = TRITONBACKEND_RequestInputCount(req, &nin);
  if (err == NULL) err = TRITONBACKEND_RequestOutputCount(req, &nout);
  if (err == NULL) err = TRITONBACKEND_RequestFlags(req, &flags);
  if (err != NULL) return err;
  for (uint32_t i = 0; i < nin; i++) {
    TRITONBACKEND_Input *input = NULL;
    uint64_t size = 0;
    err = TRITONBACKEND_RequestInputByIndex(req, i, &input);
    if (err == NULL)
      err = TRITONBACKEND_InputProperties(input, NULL, NULL, NULL, NULL, &size,
                                          NULL);
    if (err != NULL) return err;
    total =
        ((total + IFD_PY_DOWN_ALIGN - 1) & ~(uint64_t)(IFD_PY_DOWN_ALIGN - 1)) +
        size;
  }
  int rc = ifd__py_down_alloc(&in->down, total, gen, block);
  if (rc == -ENOSPC)
    return ifd__py_errorf(TRITONSERVER_ERROR_INVALID_ARG,
                          "python model '%s': the inputs of a request (%llu "
                          "bytes) do not fit the shared memory segment of the "
                          "stub (at most %llu bytes in use at once)",
                          in->model_name, (unsigned long long)total,
                          (unsigned long long)IFD_PY_SEG_MAX);
  if (rc != 0)
    return ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL,
                          "python model '%s': shared memory: %s",
                          in->model_name, strerror(-rc));

  ifd__py_buf_u32(b, rid);
  ifd__py_buf_u32(b, flags);
  ifd__py_buf_u64(b, *block);
  ifd__py_buf_u64(b, total);
  if (id == NULL) id = "";
  ifd__py_buf_str(b, id, strlen(id));
  err = TRITONBACKEND_RequestCorrelationId(req, &corr);
  if (err != NULL) {
    const char *cs = NULL;
    TRITONSERVER_ErrorDelete(err);
    err = TRITONBACKEND_RequestCorrelationIdString(req, &cs);
    if (err != NULL) goto out_free;
    if (cs == NULL) cs = "";
    ifd__py_buf_u32(b, 1);
    ifd__py_buf_str(b, cs, strlen(cs));
  } else {
    ifd__py_buf_u32(b, 0);
    ifd__py_buf_u64(b, corr);
  }
  /* The trace context the request came with (OpenTelemetry's), for
   * request.trace().get_context(). */
  TRITONSERVER_InferenceTrace *trace = NULL;
  const char *tctx = NULL;
  err = TRITONBACKEND_RequestTrace(req, &trace);
  if (err == NULL && trace != NULL)
    err = TRITONSERVER_InferenceTraceContext(trace, &tctx);
  if (err != NULL) goto out_free;
  if (tctx != NULL && tctx[0] != '\0') {
    ifd__py_buf_u32(b, 1);
    ifd__py_buf_str(b, tctx, strlen(tctx));
  } else {
    ifd__py_buf_u32(b, 0);
  }
  ifd__py_buf_u32(b, nout);
  for (uint32_t i = 0; i < nout; i++) {
    const char *name = NULL;
    err = TRITONBACKEND_RequestOutputName(req, i, &name);
    if (err != NULL) goto out_free;
    ifd__py_buf_str(b, name, strlen(name));
  }
  err = write_params(b, req);
  if (err != NULL) goto out_free;
  ifd__py_buf_u32(b, nin);
  uint64_t pos = *block;
  for (uint32_t i = 0; i < nin; i++) {
    TRITONBACKEND_Input *input = NULL;
    const char *name = NULL;
    TRITONSERVER_DataType dt;
    const int64_t *shape = NULL;
    uint32_t dims = 0, nbuf = 0;
    uint64_t size = 0, off = 0;
    err = TRITONBACKEND_RequestInputByIndex(req, i, &input);
    if (err == NULL)
      err = TRITONBACKEND_InputProperties(input, &name, &dt, &shape, &dims,
                                          &size, &nbuf);
    if (err != NULL) goto out_free;
    pos = (pos + IFD_PY_DOWN_ALIGN - 1) & ~(uint64_t)(IFD_PY_DOWN_ALIGN - 1);
    const char *dts = TRITONSERVER_DataTypeString(dt);
    ifd__py_buf_str(b, name, strlen(name));
    ifd__py_buf_str(b, dts, strlen(dts));
    ifd__py_buf_u32(b, dims);
    ifd__py_buf_add(b, shape, sizeof(int64_t) * dims);
    ifd__py_buf_u64(b, pos);
    ifd__py_buf_u64(b, size);
    for (uint32_t k = 0; k < nbuf; k++) {
      const void *src = NULL;
      uint64_t n = 0;
      TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
      int64_t mt_id = 0;
      err = TRITONBACKEND_InputBuffer(input, k, &src, &n, &mt, &mt_id);
      if (err != NULL) goto out_free;
      if (mt == TRITONSERVER_MEMORY_GPU && n > 0) {
        err = ifd__py_errorf(TRITONSERVER_ERROR_UNSUPPORTED,
                             "the python backend needs CPU input buffers");
        goto out_free;
      }
      if (n > size - off) {
        err = ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL,
                             "input buffers exceed the input byte size");
        goto out_free;
      }
      if (n > 0) memcpy(in->down_base + pos + off, src, n);
      off += n;
    }
    pos += size;
  }
  if (b->oom) {
    err = oom();
    goto out_free;
  }
  return NULL;
out_free:
  ifd__py_down_free(&in->down, *block);
  return err;
}

/* Answers the open requests of batch `id` from a RESULT. A RESP with
 * has_response 0 leaves its request open (its sender answers it). */
static void on_result(ifd__py_instance_t *in, uint32_t id, const char *p,
                      size_t len, const uint32_t *rids, uint32_t count,
                      uint64_t t_done) {
  ifd__py_rd_t r = {p, p, p + len};
  uint32_t n = 0;
  bool bad = ifd__py_rd_u32(&r, &n) != 0 || n != count;
  for (uint32_t i = 0; i < count && !bad; i++) {
    uint32_t has = 0;
    if (ifd__py_rd_u32(&r, &has) != 0) {
      bad = true;
      break;
    }
    if (!has) continue;
    pthread_mutex_lock(&in->mu);
    ifd__py_open_t *slot = find_open(in, rids[i]), o;
    if (slot != NULL) {
      o = *slot;
      *slot = in->open[--in->n_open];
    }
    pthread_mutex_unlock(&in->mu);
    if (slot == NULL) {
      /* It ended already (FINAL RESPONSE, or the stub died): skip. */
      TRITONSERVER_Error *ue = NULL, *e = ifd__py_fill(in, NULL, &r, &ue);
      bad = e != NULL;
      TRITONSERVER_ErrorDelete(e);
      TRITONSERVER_ErrorDelete(ue);
      continue;
    }
    o.t_done = t_done;
    bool ok = respond(in, &o, &r, TRITONSERVER_RESPONSE_COMPLETE_FINAL, &bad);
    finish(in, &o, ok);
  }
  if (!bad) return;
  size_t nc = 0;
  pthread_mutex_lock(&in->mu);
  ifd__py_open_t *o = ifd__py_claim(in, id, &nc);
  pthread_mutex_unlock(&in->mu);
  char msg[256];
  snprintf(msg, sizeof(msg), "malformed answer from the stub of model '%s'",
           in->model_name);
  ifd__py_fail_claimed(in, o, nc, TRITONSERVER_ERROR_INTERNAL, msg);
  free(o);
}

void ifd__py_execute(ifd__py_instance_t *in, TRITONBACKEND_Request **requests,
                     uint32_t count) {
  uint64_t start = ifd__py_now_ns();
  uint32_t gen = 0, id = 0;
  ifd__py_buf_t b = {0}, one = {0};
  TRITONSERVER_Error *err = ifd__py_call_begin(in, &gen, &id);
  if (err != NULL) {
    fail_requests(in, requests, count, err);
    return;
  }
  uint32_t *rids = calloc(count ? count : 1, sizeof(*rids));
  uint64_t *blocks = calloc(count ? count : 1, sizeof(*blocks));
  TRITONBACKEND_Request **reqs = calloc(count ? count : 1, sizeof(*reqs));
  uint32_t kept = 0;
  if (rids == NULL || blocks == NULL || reqs == NULL) {
    fail_requests(in, requests, count, oom());
    goto out_end_call;
  }
  ifd__py_buf_u32(&b, in->decoupled ? 1 : 0);
  ifd__py_buf_u32(&b, 0); /* the count, set once known */
  for (uint32_t r = 0; r < count; r++) {
    uint32_t rid = ++in->next_rid;
    if (rid == 0) rid = ++in->next_rid;
    one.len = 0;
    one.oom = 0;
    err = add_request(in, &one, requests[r], gen, rid, &blocks[kept]);
    if (err != NULL) {
      /* This request fails alone; the others run. */
      TRITONBACKEND_Request *single[1] = {requests[r]};
      fail_requests(in, single, 1, err);
      continue;
    }
    ifd__py_buf_add(&b, one.p, one.len);
    rids[kept] = rid;
    reqs[kept++] = requests[r];
  }
  if (!b.oom) memcpy(b.p + 4, &kept, 4);
  if (b.oom && kept > 0) {
    for (uint32_t k = 0; k < kept; k++) ifd__py_down_free(&in->down, blocks[k]);
    fail_requests(in, reqs, kept, oom());
    kept = 0;
  }
  if (kept == 0) goto out_end_call;

  /* The execution's batch size, as Triton's Python backend counts it: the
   * sum over the kept requests of the first input's first dim for a
   * batching model, 1 per request otherwise. Read now: once the requests
   * are open the reader may release them. */
  uint64_t batch = 0;
  for (uint32_t k = 0; k < kept; k++) {
    TRITONBACKEND_Input *i0 = NULL;
    const int64_t *shape = NULL;
    uint32_t nd = 0;
    TRITONSERVER_Error *e =
        in->batching ? TRITONBACKEND_RequestInputByIndex(reqs[k], 0, &i0)
                     : NULL;
    if (e == NULL && i0 != NULL)
      e = TRITONBACKEND_InputProperties(i0, NULL, NULL, &shape, &nd, NULL,
                                        NULL);
    batch += e == NULL && nd > 0 && shape[0] > 0 ? (uint64_t)shape[0] : 1;
    TRITONSERVER_ErrorDelete(e);
  }
  /* Open the requests: from here on, the reader may end them. */
  pthread_mutex_lock(&in->mu);
  bool same = in->gen == gen;
  if (same && in->n_open + kept > in->cap_open) {
    size_t cap = in->cap_open ? in->cap_open * 2 : 16;
    while (cap < in->n_open + kept) cap *= 2;
    ifd__py_open_t *a = realloc(in->open, cap * sizeof(*a));
    if (a != NULL) {
      in->open = a;
      in->cap_open = cap;
    }
  }
  bool room = in->n_open + kept <= in->cap_open;
  if (same && room) {
    for (uint32_t k = 0; k < kept; k++) {
      ifd__py_open_t *o = &in->open[in->n_open++];
      memset(o, 0, sizeof(*o));
      o->rid = rids[k];
      o->batch = id;
      o->req = reqs[k];
      o->t_start = start;
    }
  }
  pthread_mutex_unlock(&in->mu);
  if (!same || !room) {
    for (uint32_t k = 0; k < kept; k++) ifd__py_down_free(&in->down, blocks[k]);
    fail_requests(in, reqs, kept,
                  !room ? oom()
                        : ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL,
                                         "stub process for model '%s' "
                                         "instance '%s' exited unexpectedly; "
                                         "it is restarted",
                                         in->model_name, in->inst_name));
    goto out_end_call;
  }

  /* A failed send means the stub died: its EOF fails the requests. */
  ifd_py_hdr_t h;
  char *payload = NULL;
  int rc = ifd__py_call_exec(in, gen, id, b.p, b.len, &h, &payload);
  free(b.p);
  b.p = NULL;
  if (rc != 0) goto out;
  uint64_t t_done = ifd__py_now_ns();
  /* One execution of the kept requests (the model's execute returned). */
  ifd__py_log_error(TRITONBACKEND_ModelInstanceReportBatchStatistics(
                        in->instance, batch, start, start, t_done, t_done),
                    "cannot report batch statistics");
  if (h.type == IFD_PY_MSG_RESULT) {
    on_result(in, id, payload, h.length, rids, kept, t_done);
  } else if (h.type == IFD_PY_MSG_EXECUTE_DONE) {
    pthread_mutex_lock(&in->mu);
    for (size_t i = 0; i < in->n_open; i++)
      if (in->open[i].batch == id) in->open[i].t_done = t_done;
    pthread_mutex_unlock(&in->mu);
  } else {
    TRITONSERVER_Error *e = h.type == IFD_PY_MSG_ERROR
                                ? ifd__py_error_payload(in, payload, h.length)
                                : malformed(in);
    size_t n = 0;
    pthread_mutex_lock(&in->mu);
    ifd__py_open_t *o = ifd__py_claim(in, id, &n);
    pthread_mutex_unlock(&in->mu);
    ifd__py_fail_claimed(in, o, n, TRITONSERVER_ErrorCode(e),
                         TRITONSERVER_ErrorMessage(e));
    free(o);
    TRITONSERVER_ErrorDelete(e);
  }
  free(payload);
  goto out;
out_end_call:
  /* Nothing was sent: the call ends here. */
  pthread_mutex_lock(&in->mu);
  in->wait_id = 0;
  pthread_mutex_unlock(&in->mu);
out:
  free(b.p);
  free(one.p);
  free(rids);
  free(blocks);
  free(reqs);
}
