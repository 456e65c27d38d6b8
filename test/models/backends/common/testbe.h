/*
 * test/models/backends/common/testbe.h - what every test backend repeats:
 * a monotonic clock for statistics, logging an error through the server's
 * log (and deleting it), and the backend API version check of
 * TRITONBACKEND_Initialize. Public ABI only, like the backends. Define
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

#endif
