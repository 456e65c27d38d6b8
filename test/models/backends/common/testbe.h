/*
 * test/models/backends/common/testbe.h - what every test backend repeats:
 * a monotonic clock for statistics, logging an error through the server's
 * log (and deleting it), the backend API version check of
 * TRITONBACKEND_Initialize, and the execute loop of the backends that answer
 * each request with one response. Public ABI only, like the backends. Define
 * TESTBE_NAME (the backend's name, for log lines) before including it.
 */
#ifndef IFD_TESTBE_H
#define IFD_TESTBE_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

#ifndef TESTBE_NAME
#error "define TESTBE_NAME before including testbe.h"
/* Fills one request's response; its error, if any, goes in the response. */
typedef TRITONSERVER_Error *(*testbe_process_fn)(
    TRITONBACKEND_Request *request, TRITONBACKEND_Response *response,
    void *arg);

/* TRITONBACKEND_ModelInstanceExecute of a one-response backend: answers
 * each request with one FINAL response that `process` fills, reports the
 * request's statistics and releases it, then reports the batch. */
static inline void testbe_execute_each(TRITONBACKEND_ModelInstance *instance,
                                       TRITONBACKEND_Request **requests,
                                       uint32_t request_count,
                                       testbe_process_fn process, void *arg) {
  uint64_t exec_start = now_ns(), exec_end;
  uint32_t r;
  for (r = 0; r < request_count; r++) {
    TRITONBACKEND_Response *response = NULL;
    uint64_t start = now_ns(), end;
    int ok = 0;
    TRITONSERVER_Error *err = TRITONBACKEND_ResponseNew(&response, requests[r]);
    if (err != NULL) {
      log_if_error(err, "cannot create response");
    } else {
      err = process(requests[r], response, arg);
      ok = err == NULL;
      log_if_error(TRITONBACKEND_ResponseSend(
                       response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, err),
                   "cannot send response");
      TRITONSERVER_ErrorDelete(err);
    }
    end = now_ns();
    log_if_error(TRITONBACKEND_ModelInstanceReportStatistics(
                     instance, requests[r], ok, exec_start, start, end, end),
                 "cannot report statistics");
    log_if_error(TRITONBACKEND_RequestRelease(requests[r],
                                              TRITONSERVER_REQUEST_RELEASE_ALL),
                 "cannot release request");
  }
  exec_end = now_ns();
  if (request_count > 0)
    log_if_error(TRITONBACKEND_ModelInstanceReportBatchStatistics(
                     instance, request_count, exec_start, exec_start, exec_end,
                     exec_end),
                 "cannot report batch statistics");
}

#endif

static inline uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Logs `err` (if any) as "<backend>: <what>: <message>" and deletes it. */
static inline void log_if_error(TRITONSERVER_Error *err, const char *what) {
  char buf[512];
  if (err == NULL) return;
  snprintf(buf, sizeof(buf), "%s: %s: %s", TESTBE_NAME, what,
           TRITONSERVER_ErrorMessage(err));
  TRITONSERVER_ErrorDelete(
      TRITONSERVER_LogMessage(TRITONSERVER_LOG_ERROR, __FILE__, __LINE__, buf));
  TRITONSERVER_ErrorDelete(err);
}

/* TRITONBACKEND_Initialize's check: the server's backend API must be the
 * one these backends were built against (same major, minor not older). */
static inline TRITONSERVER_Error *testbe_check_api(void) {
  uint32_t major = 0, minor = 0;
  TRITONSERVER_Error *err = TRITONBACKEND_ApiVersion(&major, &minor);
  if (err != NULL) return err;
  if (major != TRITONBACKEND_API_VERSION_MAJOR ||
      minor < TRITONBACKEND_API_VERSION_MINOR)
    return TRITONSERVER_ErrorNew(
        TRITONSERVER_ERROR_UNSUPPORTED,
        "triton backend API version does not support this backend");
  return NULL;
}

/* Fills one request's response; its error, if any, goes in the response. */
typedef TRITONSERVER_Error *(*testbe_process_fn)(
    TRITONBACKEND_Request *request, TRITONBACKEND_Response *response,
    void *arg);

/* TRITONBACKEND_ModelInstanceExecute of a one-response backend: answers
 * each request with one FINAL response that `process` fills, reports the
 * request's statistics and releases it, then reports the batch. */
static inline void testbe_execute_each(TRITONBACKEND_ModelInstance *instance,
                                       TRITONBACKEND_Request **requests,
                                       uint32_t request_count,
                                       testbe_process_fn process, void *arg) {
  uint64_t exec_start = now_ns(), exec_end;
  uint32_t r;
  for (r = 0; r < request_count; r++) {
    TRITONBACKEND_Response *response = NULL;
    uint64_t start = now_ns(), end;
    int ok = 0;
    TRITONSERVER_Error *err = TRITONBACKEND_ResponseNew(&response, requests[r]);
    if (err != NULL) {
      log_if_error(err, "cannot create response");
    } else {
      err = process(requests[r], response, arg);
      ok = err == NULL;
      log_if_error(TRITONBACKEND_ResponseSend(
                       response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, err),
                   "cannot send response");
      TRITONSERVER_ErrorDelete(err);
    }
    end = now_ns();
    log_if_error(TRITONBACKEND_ModelInstanceReportStatistics(
                     instance, requests[r], ok, exec_start, start, end, end),
                 "cannot report statistics");
    log_if_error(TRITONBACKEND_RequestRelease(requests[r],
                                              TRITONSERVER_REQUEST_RELEASE_ALL),
                 "cannot release request");
  }
  exec_end = now_ns();
  if (request_count > 0)
    log_if_error(TRITONBACKEND_ModelInstanceReportBatchStatistics(
                     instance, request_count, exec_start, exec_start, exec_end,
                     exec_end),
                 "cannot report batch statistics");
}

#endif
