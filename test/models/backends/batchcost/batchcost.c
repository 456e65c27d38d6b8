/*
 * test/models/backends/batchcost/batchcost.c - the "batchcost" test backend.
 *
 * README: built as libtriton_batchcost.so; uses the public Triton ABI only.
 * Every execute costs a FIXED time, whatever the number of requests in the
 * batch: the model config parameter "batch_cost_ms" ({"string_value":"N"},
 * default 0). This makes the dynamic batcher observable: N requests batched
 * together take one cost, N requests executed one by one take N.
 *
 * For each request, OUTPUT0 is a copy of INPUT0 (same data type and shape).
 * An optional input "FAIL" (TYPE_BOOL) that holds a true value turns that
 * request's response into an error (TRITONSERVER_ERROR_INTERNAL "requested
 * failure") and it is reported with success=false.
 *
 * Statistics: TRITONBACKEND_ModelInstanceReportStatistics once per request
 * and TRITONBACKEND_ModelInstanceReportBatchStatistics once per execute, with
 * exec_start < compute_start <= compute_end < exec_end (CLOCK_MONOTONIC ns),
 * the batch size being the sum of the requests' first dims when the model
 * batches (max_batch_size > 0), else the number of requests. Statistics are
 * reported BEFORE the responses are sent, so that a client that got its
 * response and then reads the statistics finds its request counted.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

#define TESTBE_NAME "batchcost"
#include "../common/testbe.h"

typedef struct model_state {
  long batch_cost_ms; /* fixed cost of one execute */
  int max_batch_size; /* 0: the model does not batch */
} model_state_t;

/* A small but real gap: returns a time strictly after `after`. */
static uint64_t later_than(uint64_t after) {
  struct timespec d = {0, 2000L}; /* 2 us */
  uint64_t t;
  nanosleep(&d, NULL);
  while ((t = now_ns()) <= after)
    ;
  return t;
}

static void sleep_ms(long ms) {
  if (ms <= 0) return;
  struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&d, &d) != 0)
    ;
}

/*
 * Reads an integer that follows `key` in the config JSON: either directly
 * ("max_batch_size": 8) or inside a parameter ({"string_value":"N"}).
 * Returns `dflt` when absent or malformed. A plain text scan, no JSON library.
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
  (void)backend;
  return testbe_check_api();
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
  TRITONSERVER_Message *config = NULL;
  const char *json = NULL;
  size_t json_len = 0;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelConfig(model, 1, &config);
  if (err != NULL) return err;
  err = TRITONSERVER_MessageSerializeToJson(config, &json, &json_len);
  if (err != NULL) goto out_delete_config;

  model_state_t *st = calloc(1, sizeof(*st));
  if (st == NULL) {
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
    goto out_delete_config;
  }
  st->batch_cost_ms =
      config_int(json, json_len, "\"batch_cost_ms\"", "\"string_value\"", 0);
  st->max_batch_size =
      (int)config_int(json, json_len, "\"max_batch_size\"", NULL, 0);
  err = TRITONBACKEND_ModelSetState(model, st);
  if (err != NULL) free(st);
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

/* True when the request has a "FAIL" input holding a true value. */
static bool wants_failure(TRITONBACKEND_Request *request) {
  TRITONBACKEND_Input *input = NULL;
  uint32_t nbuf = 0;
  TRITONSERVER_Error *err = TRITONBACKEND_RequestInput(request, "FAIL", &input);
  if (err != NULL) {
    TRITONSERVER_ErrorDelete(err);
    return false;
  }
  err =
      TRITONBACKEND_InputProperties(input, NULL, NULL, NULL, NULL, NULL, &nbuf);
  for (uint32_t b = 0; err == NULL && b < nbuf; b++) {
    const void *src = NULL;
    uint64_t n = 0;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mt_id = 0;
    err = TRITONBACKEND_InputBuffer(input, b, &src, &n, &mt, &mt_id);
    if (err == NULL && mt != TRITONSERVER_MEMORY_GPU)
      for (uint64_t i = 0; i < n; i++)
        if (((const unsigned char *)src)[i] != 0) return true;
  }
  TRITONSERVER_ErrorDelete(err);
  return false;
}

/* True when OUTPUT0 is requested (or no output is named at all). */
static bool output0_requested(TRITONBACKEND_Request *request) {
  uint32_t count = 0;
  TRITONSERVER_Error *err = TRITONBACKEND_RequestOutputCount(request, &count);
  if (err != NULL) {
    TRITONSERVER_ErrorDelete(err);
    return true;
  }
  if (count == 0) return true;
  for (uint32_t i = 0; i < count; i++) {
    const char *name = NULL;
    err = TRITONBACKEND_RequestOutputName(request, i, &name);
    if (err != NULL) {
      TRITONSERVER_ErrorDelete(err);
      continue;
    }
    if (name != NULL && strcmp(name, "OUTPUT0") == 0) return true;
  }
  return false;
}

/* Copies INPUT0 into a new OUTPUT0 of response. */
static TRITONSERVER_Error *copy_input0(TRITONBACKEND_Request *request,
                                       TRITONBACKEND_Response *response) {
  TRITONBACKEND_Input *input = NULL;
  TRITONBACKEND_Output *output = NULL;
  TRITONSERVER_DataType dtype;
  const int64_t *shape = NULL;
  uint32_t dims = 0, nbuf = 0;
  uint64_t byte_size = 0, off = 0;
  void *dst = NULL;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mt_id = 0;

  TRITONSERVER_Error *err =
      TRITONBACKEND_RequestInput(request, "INPUT0", &input);
  if (err != NULL) return err;
  err = TRITONBACKEND_InputProperties(input, NULL, &dtype, &shape, &dims,
                                      &byte_size, &nbuf);
  if (err != NULL) return err;
  if (!output0_requested(request)) return NULL;
  err = TRITONBACKEND_ResponseOutput(response, &output, "OUTPUT0", dtype, shape,
                                     dims);
  if (err != NULL) return err;
  err = TRITONBACKEND_OutputBuffer(output, &dst, byte_size, &mt, &mt_id);
  if (err != NULL) return err;
  if (mt == TRITONSERVER_MEMORY_GPU && byte_size > 0)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                 "batchcost needs a CPU output buffer");
  for (uint32_t b = 0; b < nbuf; b++) {
    const void *src = NULL;
    uint64_t n = 0;
    TRITONSERVER_MemoryType in_mt = TRITONSERVER_MEMORY_CPU;
    int64_t in_mt_id = 0;
    err = TRITONBACKEND_InputBuffer(input, b, &src, &n, &in_mt, &in_mt_id);
    if (err != NULL) return err;
    if (in_mt == TRITONSERVER_MEMORY_GPU && n > 0)
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                   "batchcost needs CPU input buffers");
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

/* Batch size of one request: the first dim of INPUT0 when the model batches. */
static uint64_t request_batch_size(TRITONBACKEND_Request *request,
                                   const model_state_t *st) {
  TRITONBACKEND_Input *input = NULL;
  const int64_t *shape = NULL;
  uint32_t dims = 0;
  if (st == NULL || st->max_batch_size <= 0) return 1;
  TRITONSERVER_Error *err =
      TRITONBACKEND_RequestInput(request, "INPUT0", &input);
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
  if (request_count == 0) return NULL;

  TRITONBACKEND_Response **responses =
      calloc(request_count, sizeof(*responses));
  TRITONSERVER_Error **errors = calloc(request_count, sizeof(*errors));
  if (responses == NULL || errors == NULL) {
    free(responses);
    free(errors);
    /* Nothing taken over yet: the server answers every request. */
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  }

  /* From here on every request is ours: each gets a response and a release. */
  uint64_t exec_start = now_ns();
  uint64_t batch_size = 0;
  for (uint32_t r = 0; r < request_count; r++) {
    batch_size += request_batch_size(requests[r], st);
    err = TRITONBACKEND_ResponseNew(&responses[r], requests[r]);
    if (err != NULL) {
      log_if_error(err, "cannot create response");
      responses[r] = NULL;
    }
  }
  uint64_t compute_start = later_than(exec_start);

  /* The fixed cost of this execute, however many requests it holds. */
  sleep_ms(st != NULL ? st->batch_cost_ms : 0);

  for (uint32_t r = 0; r < request_count; r++) {
    if (responses[r] == NULL) continue;
    if (wants_failure(requests[r]))
      errors[r] = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                        "requested failure");
    else
      errors[r] = copy_input0(requests[r], responses[r]);
  }
  uint64_t compute_end = now_ns();
  if (compute_end < compute_start) compute_end = compute_start;
  uint64_t exec_end = later_than(compute_end);

  /* Statistics first, so they are in place when a client sees its response. */
  for (uint32_t r = 0; r < request_count; r++)
    log_if_error(
        TRITONBACKEND_ModelInstanceReportStatistics(
            instance, requests[r], responses[r] != NULL && errors[r] == NULL,
            exec_start, compute_start, compute_end, exec_end),
        "cannot report statistics");
  log_if_error(TRITONBACKEND_ModelInstanceReportBatchStatistics(
                   instance, batch_size, exec_start, compute_start, compute_end,
                   exec_end),
               "cannot report batch statistics");

  for (uint32_t r = 0; r < request_count; r++) {
    if (responses[r] != NULL)
      log_if_error(
          TRITONBACKEND_ResponseSend(
              responses[r], TRITONSERVER_RESPONSE_COMPLETE_FINAL, errors[r]),
          "cannot send response");
    /* The caller of ResponseSend keeps ownership of the error. */
    TRITONSERVER_ErrorDelete(errors[r]);
    log_if_error(TRITONBACKEND_RequestRelease(requests[r],
                                              TRITONSERVER_REQUEST_RELEASE_ALL),
                 "cannot release request");
  }
  free(responses);
  free(errors);
  return NULL;
}
