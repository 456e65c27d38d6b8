/*
 * backend_api/server/tsrv_error.c - TRITONSERVER_Error objects.
 *
 * An error is a single malloc'd block holding its code and a private copy of
 * its message. Allocation failure cannot be reported through an error, so
 * ErrorNew falls back to a static "out of memory" error that ErrorDelete
 * recognises and never frees.
 */
#include "backend_api/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
  TRITONSERVER_Error_Code code;
  char msg[sizeof("out of memory creating error")];
} oom_error = {TRITONSERVER_ERROR_INTERNAL, "out of memory creating error"};

#define OOM_ERROR ((TRITONSERVER_Error *)(void *)&oom_error)

TRITONSERVER_Error *TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code,
                                          const char *msg) {
  if (msg == NULL) msg = "";
  size_t len = strlen(msg);
  TRITONSERVER_Error *err = malloc(sizeof(*err) + len + 1);
  if (err == NULL) return OOM_ERROR;
  err->code = code;
  memcpy(err->msg, msg, len + 1);
  return err;
}

void TRITONSERVER_ErrorDelete(TRITONSERVER_Error *error) {
  if (error != OOM_ERROR) free(error);
}

TRITONSERVER_Error_Code TRITONSERVER_ErrorCode(TRITONSERVER_Error *error) {
  return error != NULL ? error->code : TRITONSERVER_ERROR_UNKNOWN;
}

const char *TRITONSERVER_ErrorCodeString(TRITONSERVER_Error *error) {
  switch (TRITONSERVER_ErrorCode(error)) {
    case TRITONSERVER_ERROR_UNKNOWN:
      return "Unknown";
    case TRITONSERVER_ERROR_INTERNAL:
      return "Internal";
    case TRITONSERVER_ERROR_NOT_FOUND:
      return "Not found";
    case TRITONSERVER_ERROR_INVALID_ARG:
      return "Invalid argument";
    case TRITONSERVER_ERROR_UNAVAILABLE:
      return "Unavailable";
    case TRITONSERVER_ERROR_UNSUPPORTED:
      return "Unsupported";
    case TRITONSERVER_ERROR_ALREADY_EXISTS:
      return "Already exists";
    case TRITONSERVER_ERROR_CANCELLED:
      return "Cancelled";
  }
  return "<invalid code>";
}

const char *TRITONSERVER_ErrorMessage(TRITONSERVER_Error *error) {
  return error != NULL ? error->msg : "";
}

TRITONSERVER_Error *ifd__errorf(TRITONSERVER_Error_Code code, const char *fmt,
                                ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  return TRITONSERVER_ErrorNew(code, msg);
}
