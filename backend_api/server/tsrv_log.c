/*
 * backend_api/server/tsrv_log.c - TRITONSERVER_LogIsEnabled /
 * TRITONSERVER_LogMessage on top of the project logger (base/log.h), so backend
 * lines share the server's format, levels and single-write(2) atomicity.
 */
#include "backend_api/internal.h"

#include "base/log.h"

/* TRITONSERVER_LogLevel numbering differs from ifd_log_level_t. */
static int map_level(TRITONSERVER_LogLevel level, ifd_log_level_t *out) {
  switch (level) {
    case TRITONSERVER_LOG_INFO:
      *out = IFD_LOG_INFO;
      return 0;
    case TRITONSERVER_LOG_WARN:
      *out = IFD_LOG_WARN;
      return 0;
    case TRITONSERVER_LOG_ERROR:
      *out = IFD_LOG_ERROR;
      return 0;
    case TRITONSERVER_LOG_VERBOSE:
      *out = IFD_LOG_VERBOSE;
      return 0;
  }
  return -1;
}

bool TRITONSERVER_LogIsEnabled(TRITONSERVER_LogLevel level) {
  ifd_log_level_t l;
  return map_level(level, &l) == 0 && ifd_log_enabled(l) != 0;
}

TRITONSERVER_Error *TRITONSERVER_LogMessage(TRITONSERVER_LogLevel level,
                                            const char *filename,
                                            const int line, const char *msg) {
  ifd_log_level_t l;
  if (map_level(level, &l) != 0)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "unknown log level");
  if (ifd_log_enabled(l))
    ifd_log_write(l, filename != NULL ? filename : "<unknown>", line, "%s",
                  msg != NULL ? msg : "");
  return NULL;
}
