/*
 * test/models/backends/square/square.c - the "square" test backend, a
 * decoupled model after Triton's square example.
 *
 * README: built as libtriton_square.so; uses the public Triton ABI only. The
 * model must be decoupled. Input IN (INT32 [1]) holding N: N responses, each
 * with output OUT (INT32 [1]) = N, none for N = 0, then a flags-only FINAL
 * (TRITONBACKEND_ResponseFactorySendFlags). Unlike the repeat backend it
 * sends everything from execute, through a response factory, before it
 * releases the request.
 *
 * A negative N (a test hook, not in Triton's example) sends one error
 * response with the FINAL flag; so does a missing or mistyped IN.
 *
 * As Triton's square backend, it reports every response's statistics
 * through the TRITONBACKEND_ModelInstanceResponseStatistics API, and reads
 * the same model config parameters (string values, integers):
 * CUSTOM_INFER_DELAY_NS and CUSTOM_OUTPUT_DELAY_NS (sleeps before and while
 * writing each output), CUSTOM_FAIL_COUNT F and CUSTOM_EMPTY_COUNT E: of N
 * responses the last E are empty (not sent, reported with no output) and
 * the F before them fail ("simulated failure", no FINAL flag).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

#define TESTBE_NAME "square"
#include "../common/testbe.h"

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
  (void)backend;
  return testbe_check_api();
}

/* The model's CUSTOM_* parameters (model state). */
typedef struct params {
  uint64_t infer_delay_ns, output_delay_ns, fail_count, empty_count;
} params_t;

/* The integer string_value of parameter `key` in the config JSON, or 0. A
 * plain scan: inferd writes "key":{"string_value":"N"}. */
static uint64_t param_of(const char *json, const char *key) {
  char pat[96];
  const char *p;
  snprintf(pat, sizeof(pat), "\"%s\"", key);
  p = strstr(json, pat);
  if (p == NULL) return 0;
  p = strstr(p, "\"string_value\"");
  if (p == NULL) return 0;
  p = strchr(p + 14, '"'); /* the value's opening quote */
  return p != NULL ? strtoull(p + 1, NULL, 10) : 0;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
  TRITONSERVER_Message *msg = NULL;
  const char *json = NULL;
  size_t len = 0;
  params_t *p = calloc(1, sizeof(*p));
  TRITONSERVER_Error *err =
      p == NULL ? TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                        "square: out of memory")
                : TRITONBACKEND_ModelConfig(model, 1, &msg);
  if (err == NULL) err = TRITONSERVER_MessageSerializeToJson(msg, &json, &len);
  if (err == NULL) {
    p->infer_delay_ns = param_of(json, "CUSTOM_INFER_DELAY_NS");
    p->output_delay_ns = param_of(json, "CUSTOM_OUTPUT_DELAY_NS");
    p->fail_count = param_of(json, "CUSTOM_FAIL_COUNT");
    p->empty_count = param_of(json, "CUSTOM_EMPTY_COUNT");
    err = TRITONBACKEND_ModelSetState(model, p);
  }
  if (msg != NULL) TRITONSERVER_MessageDelete(msg);
  if (err != NULL) free(p);
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model) {
  void *p = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelState(model, &p);
  free(p);
  return err;
}

static void sleep_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  if (ns > 0) nanosleep(&ts, NULL);
}

/* Reports one response's statistics, as Triton's square does. */
static TRITONSERVER_Error *report(TRITONBACKEND_ModelInstance *instance,
                                  TRITONBACKEND_ResponseFactory *factory,
                                  uint64_t start, uint64_t output_start,
                                  uint64_t end, TRITONSERVER_Error *error) {
  TRITONBACKEND_ModelInstanceResponseStatistics *rs = NULL;
  TRITONSERVER_Error *err =
      TRITONBACKEND_ModelInstanceResponseStatisticsNew(&rs);
  if (err == NULL)
    err = TRITONBACKEND_ModelInstanceResponseStatisticsSetModelInstance(
        rs, instance);
  if (err == NULL)
    err = TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseFactory(
        rs, factory);
  if (err == NULL)
    err = TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseStart(rs,
                                                                        start);
  if (err == NULL)
    err = TRITONBACKEND_ModelInstanceResponseStatisticsSetComputeOutputStart(
        rs, output_start);
  if (err == NULL)
    err = TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseEnd(rs, end);
  if (err == NULL)
    err = TRITONBACKEND_ModelInstanceResponseStatisticsSetError(rs, error);
  if (err == NULL)
    err = TRITONBACKEND_ModelInstanceReportResponseStatistics(rs);
  if (rs != NULL) {
    TRITONSERVER_Error *e2 =
        TRITONBACKEND_ModelInstanceResponseStatisticsDelete(rs);
    if (err == NULL)
      err = e2;
    else
      TRITONSERVER_ErrorDelete(e2);
  }
  return err;
}

/* Reads the one INT32 of IN. */
static TRITONSERVER_Error *read_n(TRITONBACKEND_Request *request, int32_t *n) {
  TRITONBACKEND_Input *input = NULL;
  TRITONSERVER_DataType dtype;
  uint32_t nbuf = 0;
  uint64_t size = 0, off = 0;
  char *dst = (char *)n;
  TRITONSERVER_Error *err = TRITONBACKEND_RequestInput(request, "IN", &input);
  if (err == NULL)
    err = TRITONBACKEND_InputProperties(input, NULL, &dtype, NULL, NULL, &size,
                                        &nbuf);
  if (err != NULL) return err;
  if (dtype != TRITONSERVER_TYPE_INT32 || size != sizeof(int32_t))
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "square: IN must be one INT32");
  for (uint32_t b = 0; err == NULL && b < nbuf; b++) {
    const void *src = NULL;
    uint64_t len = 0;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mt_id = 0;
    err = TRITONBACKEND_InputBuffer(input, b, &src, &len, &mt, &mt_id);
    if (err == NULL &&
        (len > size - off || (mt == TRITONSERVER_MEMORY_GPU && len)))
      err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                  "square: bad IN buffer");
    if (err == NULL && len > 0) memcpy(dst + off, src, len);
    off += len;
  }
  if (err == NULL && off != size)
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                "square: IN buffers are short");
  return err;
}

/* One response OUT = n from the factory (not FINAL), failing with
 * `fail` (borrowed) when set, after the output delay. */
static TRITONSERVER_Error *send_one(TRITONBACKEND_ResponseFactory *factory,
                                    int32_t n, const params_t *p,
                                    TRITONSERVER_Error *fail) {
  static const int64_t shape[1] = {1};
  TRITONBACKEND_Response *response = NULL;
  TRITONBACKEND_Output *output = NULL;
  void *dst = NULL;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mt_id = 0;
  TRITONSERVER_Error *err =
      TRITONBACKEND_ResponseNewFromFactory(&response, factory);
  if (err != NULL) return err;
  err = TRITONBACKEND_ResponseOutput(response, &output, "OUT",
                                     TRITONSERVER_TYPE_INT32, shape, 1);
  if (err == NULL)
    err = TRITONBACKEND_OutputBuffer(output, &dst, sizeof(n), &mt, &mt_id);
  if (err == NULL && mt == TRITONSERVER_MEMORY_GPU)
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                "square needs a CPU output buffer");
  if (err != NULL) {
    TRITONBACKEND_ResponseDelete(response);
    return err;
  }
  memcpy(dst, &n, sizeof(n));
  sleep_ns(p->output_delay_ns);
  return TRITONBACKEND_ResponseSend(response, 0, fail);
}

/* Answers one request; returns whether it succeeded. */
static int process(TRITONBACKEND_ModelInstance *instance, const params_t *p,
                   TRITONBACKEND_Request *request) {
  TRITONBACKEND_ResponseFactory *factory = NULL;
  int32_t n = 0;
  TRITONSERVER_Error *err = TRITONBACKEND_ResponseFactoryNew(&factory, request);
  if (err != NULL) {
    log_if_error(err, "cannot create a response factory");
    return 0;
  }
  err = read_n(request, &n);
  if (err == NULL && n < 0)
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                "square: IN must not be negative");
  for (int32_t i = 0; err == NULL && i < n; i++) {
    /* Triton's square: of n, the last E empty, the F before them failed. */
    uint64_t k = (uint64_t)i;
    int empty = k + p->empty_count >= (uint64_t)n;
    int failed = !empty && k + p->fail_count + p->empty_count >= (uint64_t)n;
    TRITONSERVER_Error *fail =
        failed ? TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNKNOWN,
                                       "simulated failure")
               : NULL;
    uint64_t start = now_ns(), output_start = 0, end;
    sleep_ns(p->infer_delay_ns);
    if (!empty) {
      output_start = now_ns();
      err = send_one(factory, n, p, fail);
    }
    end = now_ns();
    if (err == NULL)
      log_if_error(report(instance, factory, start, output_start, end, fail),
                   "cannot report response statistics");
    TRITONSERVER_ErrorDelete(fail);
  }
  if (err == NULL) {
    log_if_error(TRITONBACKEND_ResponseFactorySendFlags(
                     factory, TRITONSERVER_RESPONSE_COMPLETE_FINAL),
                 "cannot send the final flag");
  } else {
    TRITONBACKEND_Response *response = NULL;
    TRITONSERVER_Error *e2 =
        TRITONBACKEND_ResponseNewFromFactory(&response, factory);
    if (e2 == NULL)
      e2 = TRITONBACKEND_ResponseSend(
          response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, err);
    log_if_error(e2, "cannot send the error response");
    TRITONSERVER_ErrorDelete(err);
  }
  log_if_error(TRITONBACKEND_ResponseFactoryDelete(factory),
               "cannot delete the response factory");
  return err == NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request **requests,
    const uint32_t request_count) {
  uint64_t exec_start = now_ns();
  TRITONBACKEND_Model *model = NULL;
  void *state = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceModel(instance, &model);
  if (err == NULL) err = TRITONBACKEND_ModelState(model, &state);
  if (err != NULL) return err;
  for (uint32_t r = 0; r < request_count; r++) {
    uint64_t start = now_ns();
    int ok = process(instance, (const params_t *)state, requests[r]);
    uint64_t end = now_ns();
    log_if_error(TRITONBACKEND_ModelInstanceReportStatistics(
                     instance, requests[r], ok, exec_start, start, end, end),
                 "cannot report statistics");
    log_if_error(TRITONBACKEND_RequestRelease(requests[r],
                                              TRITONSERVER_REQUEST_RELEASE_ALL),
                 "cannot release request");
  }
  uint64_t end = now_ns();
  if (request_count > 0)
    log_if_error(TRITONBACKEND_ModelInstanceReportBatchStatistics(
                     instance, request_count, exec_start, exec_start, end, end),
                 "cannot report batch statistics");
  return NULL;
}
