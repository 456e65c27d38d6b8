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

/* One response OUT = n from the factory (not FINAL). */
static TRITONSERVER_Error *send_one(TRITONBACKEND_ResponseFactory *factory,
                                    int32_t n) {
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
  return TRITONBACKEND_ResponseSend(response, 0, NULL);
}

/* Answers one request; returns whether it succeeded. */
static int process(TRITONBACKEND_Request *request) {
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
  for (int32_t i = 0; err == NULL && i < n; i++) err = send_one(factory, n);
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
  for (uint32_t r = 0; r < request_count; r++) {
    uint64_t start = now_ns();
    int ok = process(requests[r]);
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
