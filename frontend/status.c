/*
 * frontend/status.c - error code to HTTP status, and HTTP reason phrases.
 *
 * The table keys on the Triton error class rather than on each IFD_E* code,
 * so a code added to base/error.h maps correctly as soon as its class is set.
 */
#include "frontend/status.h"

#include "base/error.h"

int ifd_http_status_of_class(int cls) {
  switch (cls) {
    case 1:
      return 500; /* TRITONSERVER_ERROR_INTERNAL */
    case 2:
      return 404; /* TRITONSERVER_ERROR_NOT_FOUND */
    case 4:
      return 503; /* TRITONSERVER_ERROR_UNAVAILABLE */
    case 5:
      return 501; /* TRITONSERVER_ERROR_UNSUPPORTED */
    default:
      return 400;
  }
}

int ifd_http_status(int code) {
  if (code >= 0) return 200;
  return ifd_http_status_of_class(ifd_error_class(code));
}

int ifd_grpc_status_of_class(int cls) {
  switch (cls) {
    case 1:
      return 13; /* INTERNAL -> INTERNAL */
    case 2:
      return 5; /* NOT_FOUND -> NOT_FOUND */
    case 3:
      return 3; /* INVALID_ARG -> INVALID_ARGUMENT */
    case 4:
      return 14; /* UNAVAILABLE -> UNAVAILABLE */
    case 5:
      return 12; /* UNSUPPORTED -> UNIMPLEMENTED */
    case 6:
      return 6; /* ALREADY_EXISTS -> ALREADY_EXISTS */
    case 7:
      return 1; /* CANCELLED -> CANCELLED */
    default:
      return 2; /* UNKNOWN -> UNKNOWN */
  }
}

int ifd_grpc_status(int code) {
  if (code >= 0) return 0;
  if (code == IFD_ETIMEOUT) return 4; /* DEADLINE_EXCEEDED */
  if (code == IFD_ETOOBIG) return 8;  /* RESOURCE_EXHAUSTED */
  return ifd_grpc_status_of_class(ifd_error_class(code));
}
