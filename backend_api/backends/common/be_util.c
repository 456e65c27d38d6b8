/*
 * backend_api/backends/common/be_util.c - errors and log lines for inferd's
 * own backends; see be_util.h.
 */
#include "be_util.h"

#include <stdio.h>

TRITONSERVER_Error *ifd_be_errf(TRITONSERVER_Error_Code code, const char *fmt,
                                ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return TRITONSERVER_ErrorNew(code, buf);
}

void ifd_be_vlog(TRITONSERVER_LogLevel level, const char *tag, const char *fmt,
                 va_list ap) {
  char buf[4096];
  if (!TRITONSERVER_LogIsEnabled(level)) return;
  vsnprintf(buf, sizeof(buf), fmt, ap);
  TRITONSERVER_ErrorDelete(TRITONSERVER_LogMessage(level, tag, 0, buf));
}
