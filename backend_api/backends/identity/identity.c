/*
 * backend_api/backends/identity/identity.c - the identity backend.
 *
 * README: built as libtriton_identity.so and loaded like any third-party
 * backend, through the public Triton ABI only. For every requested output
 * OUTPUTn it returns a copy of input INPUTn (same data type, BYTES included,
 * and same shape). Requests of a batch are answered one by one; an error in
 * one request becomes that request's error response. A requested OUTPUTn
 * whose INPUTn is an optional input the request left out is answered with
 * zeros of INPUTn's config data type and dims (a variable dim counts as 1),
 * behind the batch size of the request's first input when the model batches,
 * as Triton's identity backend does. Optional model config
 * parameter "execute_delay_ms" ({"string_value":"N"}) sleeps N ms per execute,
 * which tests use to observe instance concurrency.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

/* An optional input of the config: a requested output it feeds is zeros
 * when a request leaves it out. */
typedef struct opt_input {
  char name[64];
  TRITONSERVER_DataType dtype;
  int64_t dims[8];
  uint32_t ndims;
} opt_input_t;

/* Per-model state, set with TRITONBACKEND_ModelSetState. */
typedef struct model_state {
  char *name;            /* owned */
  long execute_delay_ms; /* 0: no delay */
  int max_batch_size;    /* from the config; 0: no batching */
  opt_input_t *opt;      /* owned, n_opt entries */
  uint32_t n_opt;
} model_state_t;

/* Reads the optional inputs of the config JSON into st. 0, or -1 when out
 * of memory (a config it cannot read has none). */
static int read_optional_inputs(model_state_t *st, const char *json,
                                size_t len) {
  json_t *root = json_loadb(json, len, 0, NULL);
  json_t *inputs = json_object_get(root, "input");
  size_t i, n = json_array_size(inputs);
  int rc = 0;
  if (n > 0 && (st->opt = calloc(n, sizeof(*st->opt))) == NULL) rc = -1;
  for (i = 0; rc == 0 && i < n; i++) {
    json_t *in = json_array_get(inputs, i), *dims = json_object_get(in, "dims");
    const char *name = json_string_value(json_object_get(in, "name"));
    const char *type = json_string_value(json_object_get(in, "data_type"));
    opt_input_t *o = &st->opt[st->n_opt];
    size_t d;
    if (!json_is_true(json_object_get(in, "optional")) || name == NULL ||
        type == NULL || strncmp(type, "TYPE_", 5) != 0 ||
        strlen(name) >= sizeof(o->name) ||
        json_array_size(dims) > sizeof(o->dims) / sizeof(o->dims[0]))
      continue;
    o->dtype = strcmp(type, "TYPE_STRING") == 0
                   ? TRITONSERVER_TYPE_BYTES
                   : TRITONSERVER_StringToDataType(type + 5);
    if (o->dtype == TRITONSERVER_TYPE_INVALID) continue;
    strcpy(o->name, name);
    o->ndims = (uint32_t)json_array_size(dims);
    for (d = 0; d < o->ndims; d++) {
      json_t *v = json_array_get(dims, d);
      /* The config JSON writes int64 dims as strings. */
      long long x = json_is_string(v) ? strtoll(json_string_value(v), NULL, 10)
                                      : (long long)json_integer_value(v);
      o->dims[d] = x > 0 ? x : 1;
    }
    st->n_opt++;
  }
  json_decref(root);
  return rc;
}

static void log_text(TRITONSERVER_LogLevel level, int line, const char *text) {
  if (TRITONSERVER_LogIsEnabled(level))
    TRITONSERVER_ErrorDelete(
        TRITONSERVER_LogMessage(level, __FILE__, line, text));
}

/* Logs and frees err when it is an error. */
static void log_if_error(TRITONSERVER_Error *err, const char *what) {
  char buf[512];
  if (err == NULL) return;
  snprintf(buf, sizeof(buf), "identity: %s: %s", what,
           TRITONSERVER_ErrorMessage(err));
  log_text(TRITONSERVER_LOG_ERROR, __LINE__, buf);
  TRITONSERVER_ErrorDelete(err);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Reads an integer that follows `key` in the config JSON: either directly
 * ("max_batch_size": 8) or as a parameter ({"string_value":"N"}). Returns
 * `dflt` when absent or malformed. No JSON library: a plain text scan.
 */
static long config_int(const char *json, size_t len, const char *key,
                       const char *subkey, long dflt) {
  char *copy = malloc(len + 1);
  if (copy == NULL) return dflt;
  memcpy(copy, json, len);
  copy[len] = '\0';
  long v = dflt;
  const char *p = strstr(copy, key);
  if (p != NULL && subkey != NULL) p = strstr(p, subkey);
  if (p != NULL) p = strchr(p + strlen(subkey != NULL ? subkey : key), ':');
  if (p != NULL) {
    p++;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '"')
      p++;
    char *end;
    long n = strtol(p, &end, 10);
    if (end != p && n >= 0) v = n;
  }
  free(copy);
  return v;
}

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
  const char *name = NULL;
  uint32_t major = 0, minor = 0;
  TRITONSERVER_Error *err = TRITONBACKEND_BackendName(backend, &name);
  if (err != NULL) return err;
  err = TRITONBACKEND_ApiVersion(&major, &minor);
  if (err != NULL) return err;
  char buf[256];
  snprintf(buf, sizeof(buf),
           "TRITONBACKEND_Initialize: %s (server API %u.%u, built for %u.%u)",
           name, (unsigned)major, (unsigned)minor,
           (unsigned)TRITONBACKEND_API_VERSION_MAJOR,
           (unsigned)TRITONBACKEND_API_VERSION_MINOR);
  log_text(TRITONSERVER_LOG_INFO, __LINE__, buf);
  if (major != TRITONBACKEND_API_VERSION_MAJOR ||
      minor < TRITONBACKEND_API_VERSION_MINOR)
    return TRITONSERVER_ErrorNew(
        TRITONSERVER_ERROR_UNSUPPORTED,
        "triton backend API version does not support this backend");
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
  const char *name = NULL;
  TRITONSERVER_Message *config = NULL;
  const char *json = NULL;
  size_t json_len = 0;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelName(model, &name);
  if (err != NULL) return err;
  err = TRITONBACKEND_ModelConfig(model, 1, &config);
  if (err != NULL) return err;
  err = TRITONSERVER_MessageSerializeToJson(config, &json, &json_len);
  if (err != NULL) goto out_delete_config;

  model_state_t *st = calloc(1, sizeof(*st));
  if (st == NULL || (st->name = malloc(strlen(name) + 1)) == NULL) {
    free(st);
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
    goto out_delete_config;
  }
  strcpy(st->name, name);
  st->execute_delay_ms =
      config_int(json, json_len, "\"execute_delay_ms\"", "\"string_value\"", 0);
  st->max_batch_size =
      (int)config_int(json, json_len, "\"max_batch_size\"", NULL, 0);
  if (read_optional_inputs(st, json, json_len) < 0) {
    free(st->opt);
    free(st->name);
    free(st);
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
    goto out_delete_config;
  }
  char buf[512];
  snprintf(buf, sizeof(buf),
           "TRITONBACKEND_ModelInitialize: %s (config %zu bytes)", name,
           json_len);
  log_text(TRITONSERVER_LOG_INFO, __LINE__, buf);

  err = TRITONBACKEND_ModelSetState(model, st);
  if (err != NULL) {
    free(st->opt);
    free(st->name);
    free(st);
  }
out_delete_config:
  TRITONSERVER_ErrorDelete(TRITONSERVER_MessageDelete(config));
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model) {
  void *vstate = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelState(model, &vstate);
  if (err != NULL) return err;
  model_state_t *st = vstate;
  if (st != NULL) {
    free(st->opt);
    free(st->name);
    free(st);
  }
  return NULL;
}

/* The instance state borrows the model state: the model outlives it. */
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

/* Answers output_name with zeros shaped like optional input `o` (which the
 * request left out), behind the batch size of the request's first input
 * when the model batches. */
static TRITONSERVER_Error *zero_output(TRITONBACKEND_Request *request,
                                       TRITONBACKEND_Response *response,
                                       const char *output_name,
                                       const model_state_t *st,
                                       const opt_input_t *o) {
  int64_t shape[9];
  uint32_t nd = 0, d;
  uint64_t elems = 1, byte_size;
  TRITONBACKEND_Output *output = NULL;
  void *dst = NULL;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mt_id = 0;
  TRITONSERVER_Error *err;
  if (st->max_batch_size > 0) {
    TRITONBACKEND_Input *first = NULL;
    const int64_t *fs = NULL;
    uint32_t fd = 0;
    err = TRITONBACKEND_RequestInputByIndex(request, 0, &first);
    if (err == NULL)
      err = TRITONBACKEND_InputProperties(first, NULL, NULL, &fs, &fd, NULL,
                                          NULL);
    if (err == NULL && fd > 0) shape[nd++] = fs[0];
    TRITONSERVER_ErrorDelete(err);
  }
  for (d = 0; d < o->ndims; d++) shape[nd++] = o->dims[d];
  for (d = 0; d < nd; d++) elems *= (uint64_t)shape[d];
  /* BYTES: a zero length per element, empty strings. */
  byte_size = elems * (o->dtype == TRITONSERVER_TYPE_BYTES
                           ? 4u
                           : TRITONSERVER_DataTypeByteSize(o->dtype));
  err = TRITONBACKEND_ResponseOutput(response, &output, output_name, o->dtype,
                                     shape, nd);
  if (err != NULL) return err;
  err = TRITONBACKEND_OutputBuffer(output, &dst, byte_size, &mt, &mt_id);
  if (err != NULL) return err;
  if (mt == TRITONSERVER_MEMORY_GPU && byte_size > 0)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                 "identity needs a CPU output buffer");
  if (byte_size > 0) memset(dst, 0, byte_size);
  return NULL;
}

/* Copies input INPUT<suffix of output_name> into a new output of response. */
static TRITONSERVER_Error *copy_one(TRITONBACKEND_Request *request,
                                    TRITONBACKEND_Response *response,
                                    const char *output_name,
                                    const model_state_t *st) {
  char input_name[256];
  TRITONBACKEND_Input *input = NULL;
  TRITONBACKEND_Output *output = NULL;
  TRITONSERVER_DataType dtype;
  const int64_t *shape = NULL;
  uint32_t dims = 0, nbuf = 0;
  uint64_t byte_size = 0;
  void *dst = NULL;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mt_id = 0;
  TRITONSERVER_Error *err;

  /* OUTPUT<n> answers INPUT<n>. Built by hand: this runs for every
   * request, and snprintf costs more than the rest of the name lookup. */
  size_t suffix = strlen(output_name);
  if (strncmp(output_name, "OUTPUT", 6) != 0 ||
      suffix - 6 >= sizeof(input_name) - 5)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "requested output must be named OUTPUT<n>");
  memcpy(input_name, "INPUT", 5);
  memcpy(input_name + 5, output_name + 6, suffix - 6 + 1);
  err = TRITONBACKEND_RequestInput(request, input_name, &input);
  if (err != NULL) {
    TRITONSERVER_ErrorDelete(err);
    for (uint32_t i = 0; st != NULL && i < st->n_opt; i++)
      if (strcmp(st->opt[i].name, input_name) == 0)
        return zero_output(request, response, output_name, st, &st->opt[i]);
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "no input matches a requested output");
  }
  err = TRITONBACKEND_InputProperties(input, NULL, &dtype, &shape, &dims,
                                      &byte_size, &nbuf);
  if (err != NULL) return err;
  err = TRITONBACKEND_ResponseOutput(response, &output, output_name, dtype,
                                     shape, dims);
  if (err != NULL) return err;
  err = TRITONBACKEND_OutputBuffer(output, &dst, byte_size, &mt, &mt_id);
  if (err != NULL) return err;
  if (mt == TRITONSERVER_MEMORY_GPU && byte_size > 0)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                 "identity needs a CPU output buffer");

  uint64_t off = 0;
  for (uint32_t b = 0; b < nbuf; b++) {
    const void *src = NULL;
    uint64_t n = 0;
    TRITONSERVER_MemoryType in_mt = TRITONSERVER_MEMORY_CPU;
    int64_t in_mt_id = 0;
    err = TRITONBACKEND_InputBuffer(input, b, &src, &n, &in_mt, &in_mt_id);
    if (err != NULL) return err;
    if (in_mt == TRITONSERVER_MEMORY_GPU && n > 0)
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                   "identity needs CPU input buffers");
    if (n > byte_size - off)
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                   "input buffers exceed the input byte size");
    if (n > 0) memcpy((char *)dst + off, src, n);
    off += n;
  }
  if (off != byte_size)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 "input buffers are shorter than the input");
  return NULL;
}

static TRITONSERVER_Error *process(TRITONBACKEND_Request *request,
                                   TRITONBACKEND_Response *response,
                                   const model_state_t *st) {
  uint32_t count = 0;
  uint64_t corr_id = 0;
  /* Triton's identity backend reads the correlation ID of every request, so
   * a string one fails there ("correlation ID in request is not an unsigned
   * int", 400); this one answers the same. */
  TRITONSERVER_Error *err =
      TRITONBACKEND_RequestCorrelationId(request, &corr_id);
  if (err == NULL) err = TRITONBACKEND_RequestOutputCount(request, &count);
  for (uint32_t i = 0; err == NULL && i < count; i++) {
    const char *name = NULL;
    err = TRITONBACKEND_RequestOutputName(request, i, &name);
    if (err == NULL) err = copy_one(request, response, name, st);
  }
  return err;
}

/* Batch size of one request: first dim of its first input when batching. */
static uint64_t request_batch_size(TRITONBACKEND_Request *request,
                                   const model_state_t *st) {
  TRITONBACKEND_Input *input = NULL;
  const int64_t *shape = NULL;
  uint32_t dims = 0;
  if (st->max_batch_size <= 0) return 1;
  TRITONSERVER_Error *err =
      TRITONBACKEND_RequestInputByIndex(request, 0, &input);
  if (err == NULL)
    err = TRITONBACKEND_InputProperties(input, NULL, NULL, &shape, &dims, NULL,
                                        NULL);
  if (err != NULL) {
    TRITONSERVER_ErrorDelete(err);
    return 1;
  }
  return (dims > 0 && shape[0] > 0) ? (uint64_t)shape[0] : 1;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request **requests,
    const uint32_t request_count) {
  void *vstate = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceState(instance, &vstate);
  if (err != NULL) return err;
  const model_state_t *st = vstate;

  uint64_t exec_start = now_ns();
  if (st != NULL && st->execute_delay_ms > 0) {
    struct timespec d = {st->execute_delay_ms / 1000,
                         (st->execute_delay_ms % 1000) * 1000000L};
    while (nanosleep(&d, &d) != 0)
      ;
  }
  uint64_t compute_start = now_ns();
  uint64_t batch_size = 0;

  /* From here on every request is ours: each gets a response and a release. */
  for (uint32_t r = 0; r < request_count; r++) {
    TRITONBACKEND_Request *request = requests[r];
    TRITONBACKEND_Response *response = NULL;
    bool ok = false;
    uint64_t req_start = now_ns();

    err = TRITONBACKEND_ResponseNew(&response, request);
    if (err != NULL) {
      log_if_error(err, "cannot create response");
    } else {
      if (st != NULL) batch_size += request_batch_size(request, st);
      err = process(request, response, st);
      ok = (err == NULL);
      log_if_error(TRITONBACKEND_ResponseSend(
                       response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, err),
                   "cannot send response");
      TRITONSERVER_ErrorDelete(err);
    }
    uint64_t req_end = now_ns();
    log_if_error(
        TRITONBACKEND_ModelInstanceReportStatistics(
            instance, request, ok, exec_start, req_start, req_end, req_end),
        "cannot report statistics");
    log_if_error(
        TRITONBACKEND_RequestRelease(request, TRITONSERVER_REQUEST_RELEASE_ALL),
        "cannot release request");
  }

  uint64_t end = now_ns();
  if (batch_size > 0)
    log_if_error(TRITONBACKEND_ModelInstanceReportBatchStatistics(
                     instance, batch_size, exec_start, compute_start, end, end),
                 "cannot report batch statistics");
  return NULL;
}
