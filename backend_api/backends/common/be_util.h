/*
 * backend_api/backends/common/be_util.h - what inferd's own backends share
 * for errors and log lines: a TRITONSERVER_Error from a printf format, and
 * a log line under the backend's name. Built into each backend that uses it
 * (backend_api/backends/common/).
 */
#ifndef IFD_BACKENDS_COMMON_BE_UTIL_H
#define IFD_BACKENDS_COMMON_BE_UTIL_H

#include <stdarg.h>

#include "triton/core/tritonserver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A new error (the caller's) with the formatted message, cut at 4 KiB. */
TRITONSERVER_Error *ifd_be_errf(TRITONSERVER_Error_Code code, const char *fmt,
                                ...) __attribute__((format(printf, 2, 3)));

/* Logs the formatted message at `level` with `tag` (the backend's name) as
 * its file, when that level is on. */
void ifd_be_vlog(TRITONSERVER_LogLevel level, const char *tag, const char *fmt,
                 va_list ap) __attribute__((format(printf, 3, 0)));

#ifdef __cplusplus
}
#endif

#endif
