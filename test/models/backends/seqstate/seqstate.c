/*
 * test/models/backends/seqstate/seqstate.c - the "seqstate" test backend:
 * implicit sequence state, for the sequence batcher's end-to-end tests.
 *
 * README: built as libtriton_seqstate.so; uses the public Triton ABI only.
 * The model's sequence_batching has one `state` entry; its input_name (the
 * state the server hands in, e.g. INPUT_STATE) and output_name (the state
 * the backend hands back, e.g. OUTPUT_STATE) are read from the config. Both
 * are INT32. For every request:
 *
 *   new_state[k] = INPUT[k] + (k < elements of old_state ? old_state[k] : 0)
 *
 * with new_state of INPUT's shape (so a state with variable dims takes the
 * shape of the last INPUT), stored with TRITONBACKEND_StateNew /
 * StateBuffer / StateUpdate; OUTPUT (INT32) is new_state and OLD_STATE
 * (INT32, when the config declares it and the request asks for it) is the
 * state the request came with, in its shape. A request whose READY control
 * (when the config has one) is 0 is a null request: it gets OUTPUT = INPUT
 * and no state update. Parameter execute_delay_ms N sleeps N ms per execute.
 * A request without the state input is an error response naming it.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

#define TESTBE_NAME "seqstate"
#include "../common/testbe.h"

#define NAME_MAX_LEN 64

typedef struct model_state {
  char state_in[NAME_MAX_LEN];  /* the state's input_name */
  char state_out[NAME_MAX_LEN]; /* the state's output_name */
  char ready[NAME_MAX_LEN];     /* the READY control's input; "" if none */
  long execute_delay_ms;
} model_state_t;

/* An INT32 tensor gathered from a request input (data malloc'd). */
typedef struct tensor {
  int32_t *data; /* owned */
  uint64_t n;    /* elements */
  int64_t shape[8];
  uint32_t dims;
} tensor_t;

static void sleep_ms(long ms) {
  if (ms <= 0) return;
  struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&d, &d) != 0)
    ;
}

static TRITONSERVER_Error *error2(const char *fmt, const char *a) {
  char buf[256];
  snprintf(buf, sizeof(buf), fmt, a);
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, buf);
}

/* ---- the model config (a text scan of its JSON, no JSON library) ------ */

static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

/* The value after the first `"key" :` at or after from, or NULL. */
static const char *after_key(const char *from, const char *key) {
  size_t klen = strlen(key);
  for (const char *p = from; p != NULL && *p != '\0'; p++) {
    if (*p != '"' || strncmp(p + 1, key, klen) != 0 || p[1 + klen] != '"')
      continue;
    const char *q = skip_ws(p + klen + 2);
    if (*q == ':') return skip_ws(q + 1);
  }
  return NULL;
}

static bool read_string(const char *p, char *out, size_t cap) {
  size_t n = 0;
  if (p == NULL || *p != '"') return false;
  for (p++; *p != '"'; p++) {
    if (*p == '\0' || n + 1 >= cap) return false;
    out[n++] = *p;
  }
  out[n] = '\0';
  return true;
}

static TRITONSERVER_Error *parse_config(const char *json, model_state_t *st) {
  char buf[32];
  const char *seq = after_key(json, "sequence_batching");
  const char *state = seq != NULL ? after_key(seq, "state") : NULL;
  if (state == NULL || *state != '[' ||
      !read_string(after_key(state, "input_name"), st->state_in,
                   sizeof(st->state_in)) ||
      !read_string(after_key(state, "output_name"), st->state_out,
                   sizeof(st->state_out)))
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "seqstate: the model's sequence_batching "
                                 "needs a state with input_name and "
                                 "output_name");
  const char *k =
      seq != NULL ? strstr(seq, "\"CONTROL_SEQUENCE_READY\"") : NULL;
  for (const char *p = k; p != NULL && p > seq; p--)
    if (strncmp(p, "\"name\"", 6) == 0) {
      read_string(after_key(p, "name"), st->ready, sizeof(st->ready));
      break;
    }
  const char *params = after_key(json, "parameters");
  const char *d = params != NULL ? after_key(params, "execute_delay_ms") : NULL;
  if (d != NULL && read_string(after_key(d, "string_value"), buf, sizeof(buf)))
    st->execute_delay_ms = atol(buf);
  return NULL;
}

/* ---- lifecycle ----------------------------------------------------------- */

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
  (void)backend;
  return testbe_check_api();
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
  TRITONSERVER_Message *config = NULL;
  const char *json = NULL;
  size_t json_len = 0;
  char *copy = NULL;
  model_state_t *st = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelConfig(model, 1, &config);
  if (err != NULL) return err;
  err = TRITONSERVER_MessageSerializeToJson(config, &json, &json_len);
  if (err != NULL) goto out_delete_config;
  copy = malloc(json_len + 1);
  st = calloc(1, sizeof(*st));
  if (copy == NULL || st == NULL) {
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
    goto out_free;
  }
  memcpy(copy, json, json_len);
  copy[json_len] = '\0';
  err = parse_config(copy, st);
  if (err == NULL) err = TRITONBACKEND_ModelSetState(model, st);
  if (err == NULL) st = NULL; /* the model's now */
out_free:
  free(st);
  free(copy);
out_delete_config:
  TRITONSERVER_ErrorDelete(TRITONSERVER_MessageDelete(config));
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model) {
  void *vstate = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelState(model, &vstate);
  if (err != NULL) return err;
  free(vstate);
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(
    TRITONBACKEND_ModelInstance *instance) {
  TRITONBACKEND_Model *model = NULL;
  void *vstate = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceModel(instance, &model);
  if (err == NULL) err = TRITONBACKEND_ModelState(model, &vstate);
  if (err == NULL) err = TRITONBACKEND_ModelInstanceSetState(instance, vstate);
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceFinalize(
    TRITONBACKEND_ModelInstance *instance) {
  (void)instance;
  return NULL;
}

/* ---- requests --------------------------------------------------------------
 */

/* Gathers INT32 input `name` into t; *present false when it is absent. */
static TRITONSERVER_Error *read_int32(TRITONBACKEND_Request *request,
                                      const char *name, bool *present,
                                      tensor_t *t) {
  TRITONBACKEND_Input *input = NULL;
  TRITONSERVER_DataType dtype;
  const int64_t *shape = NULL;
  uint32_t nbuf = 0;
  uint64_t size = 0, off = 0;
  memset(t, 0, sizeof(*t));
  *present = false;
  TRITONSERVER_Error *err = TRITONBACKEND_RequestInput(request, name, &input);
  if (err != NULL) {
    TRITONSERVER_ErrorDelete(err);
    return NULL;
  }
  *present = true;
  err = TRITONBACKEND_InputProperties(input, NULL, &dtype, &shape, &t->dims,
                                      &size, &nbuf);
  if (err != NULL) return err;
  if (dtype != TRITONSERVER_TYPE_INT32 || size % sizeof(int32_t) != 0)
    return error2("input %s must be INT32", name);
  if (t->dims > 8) return error2("input %s has too many dims", name);
  memcpy(t->shape, shape, t->dims * sizeof(int64_t));
  t->n = size / sizeof(int32_t);
  t->data = malloc(size > 0 ? size : 1);
  if (t->data == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  for (uint32_t b = 0; b < nbuf; b++) {
    const void *src = NULL;
    uint64_t n = 0;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mt_id = 0;
    err = TRITONBACKEND_InputBuffer(input, b, &src, &n, &mt, &mt_id);
    if (err != NULL) return err;
    if (n > size - off || (mt == TRITONSERVER_MEMORY_GPU && n > 0))
      return error2("bad %s buffer", name);
    if (n > 0) memcpy((char *)t->data + off, src, n);
    off += n;
  }
  if (off != size) return error2("%s buffers are shorter than it", name);
  return NULL;
}

/* True when the request has a READY input that holds only zero bytes. */
static bool is_null_request(TRITONBACKEND_Request *request,
                            const model_state_t *ms) {
  TRITONBACKEND_Input *input = NULL;
  uint32_t nbuf = 0;
  if (ms->ready[0] == '\0') return false;
  TRITONSERVER_Error *err =
      TRITONBACKEND_RequestInput(request, ms->ready, &input);
  if (err == NULL)
    err = TRITONBACKEND_InputProperties(input, NULL, NULL, NULL, NULL, NULL,
                                        &nbuf);
  for (uint32_t b = 0; err == NULL && b < nbuf; b++) {
    const void *src = NULL;
    uint64_t n = 0;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mt_id = 0;
    err = TRITONBACKEND_InputBuffer(input, b, &src, &n, &mt, &mt_id);
    if (err == NULL)
      for (uint64_t i = 0; i < n; i++)
        if (((const unsigned char *)src)[i] != 0) return false;
  }
  if (err != NULL) {
    TRITONSERVER_ErrorDelete(err);
    return false; /* no READY: treated as a real request */
  }
  return true;
}

static bool output_requested(TRITONBACKEND_Request *request, const char *name) {
  uint32_t count = 0;
  TRITONSERVER_Error *err = TRITONBACKEND_RequestOutputCount(request, &count);
  if (err != NULL) {
    TRITONSERVER_ErrorDelete(err);
    return false;
  }
  for (uint32_t i = 0; i < count; i++) {
    const char *n = NULL;
    err = TRITONBACKEND_RequestOutputName(request, i, &n);
    if (err != NULL) {
      TRITONSERVER_ErrorDelete(err);
      continue;
    }
    if (n != NULL && strcmp(n, name) == 0) return true;
  }
  return false;
}

static TRITONSERVER_Error *put_output(TRITONBACKEND_Request *request,
                                      TRITONBACKEND_Response *response,
                                      const char *name, const tensor_t *t) {
  TRITONBACKEND_Output *output = NULL;
  void *dst = NULL;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mt_id = 0;
  uint64_t size = t->n * sizeof(int32_t);
  if (!output_requested(request, name)) return NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ResponseOutput(
      response, &output, name, TRITONSERVER_TYPE_INT32, t->shape, t->dims);
  if (err == NULL)
    err = TRITONBACKEND_OutputBuffer(output, &dst, size, &mt, &mt_id);
  if (err == NULL && mt == TRITONSERVER_MEMORY_GPU && size > 0)
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                "seqstate needs CPU output buffers");
  if (err == NULL && size > 0) memcpy(dst, t->data, size);
  return err;
}

static TRITONSERVER_Error *process(const model_state_t *ms,
                                   TRITONBACKEND_Request *request,
                                   TRITONBACKEND_Response *response) {
  tensor_t in, old;
  bool present = false, old_present = false;
  TRITONBACKEND_State *state = NULL;
  void *buf = NULL;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mt_id = 0;
  memset(&old, 0, sizeof(old));
  TRITONSERVER_Error *err = read_int32(request, "INPUT", &present, &in);
  if (err == NULL && !present)
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                "request has no INPUT");
  if (err != NULL) goto out_free;
  if (is_null_request(request, ms)) {
    err = put_output(request, response, "OUTPUT", &in);
    goto out_free;
  }
  err = read_int32(request, ms->state_in, &old_present, &old);
  if (err == NULL && !old_present)
    err = error2("request has no state input %s", ms->state_in);
  if (err != NULL) goto out_free;
  for (uint64_t k = 0; k < in.n && k < old.n; k++) in.data[k] += old.data[k];
  /* in now holds the new state. */
  err = TRITONBACKEND_StateNew(&state, request, ms->state_out,
                               TRITONSERVER_TYPE_INT32, in.shape, in.dims);
  if (err == NULL)
    err = TRITONBACKEND_StateBuffer(state, &buf, in.n * sizeof(int32_t), &mt,
                                    &mt_id);
  if (err == NULL && mt == TRITONSERVER_MEMORY_GPU && in.n > 0)
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                "seqstate needs a CPU state buffer");
  if (err == NULL) {
    if (in.n > 0) memcpy(buf, in.data, in.n * sizeof(int32_t));
    err = TRITONBACKEND_StateUpdate(state);
  }
  if (err == NULL) err = put_output(request, response, "OUTPUT", &in);
  if (err == NULL) err = put_output(request, response, "OLD_STATE", &old);
out_free:
  free(old.data);
  free(in.data);
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request **requests,
    const uint32_t request_count) {
  void *vstate = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceState(instance, &vstate);
  if (err != NULL) return err;
  const model_state_t *ms = vstate;
  if (request_count == 0) return NULL;
  TRITONBACKEND_Response **responses =
      calloc(request_count, sizeof(*responses));
  TRITONSERVER_Error **errors = calloc(request_count, sizeof(*errors));
  if (responses == NULL || errors == NULL) {
    free(responses);
    free(errors);
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  }

  /* From here on every request is ours: each gets a response and a release. */
  uint64_t exec_start = now_ns();
  sleep_ms(ms->execute_delay_ms);
  uint64_t compute_start = now_ns();
  for (uint32_t r = 0; r < request_count; r++) {
    err = TRITONBACKEND_ResponseNew(&responses[r], requests[r]);
    if (err != NULL) {
      log_if_error(err, "cannot create response");
      responses[r] = NULL;
      continue;
    }
    errors[r] = process(ms, requests[r], responses[r]);
  }
  uint64_t compute_end = now_ns();
  uint64_t exec_end = now_ns();
  for (uint32_t r = 0; r < request_count; r++)
    log_if_error(
        TRITONBACKEND_ModelInstanceReportStatistics(
            instance, requests[r], responses[r] != NULL && errors[r] == NULL,
            exec_start, compute_start, compute_end, exec_end),
        "cannot report statistics");
  log_if_error(TRITONBACKEND_ModelInstanceReportBatchStatistics(
                   instance, request_count, exec_start, compute_start,
                   compute_end, exec_end),
               "cannot report batch statistics");
  for (uint32_t r = 0; r < request_count; r++) {
    if (responses[r] != NULL)
      log_if_error(
          TRITONBACKEND_ResponseSend(
              responses[r], TRITONSERVER_RESPONSE_COMPLETE_FINAL, errors[r]),
          "cannot send response");
    TRITONSERVER_ErrorDelete(errors[r]);
    log_if_error(TRITONBACKEND_RequestRelease(requests[r],
                                              TRITONSERVER_REQUEST_RELEASE_ALL),
                 "cannot release request");
  }
  free(responses);
  free(errors);
  return NULL;
}
