/*
 * core/log.h - logging in tritonserver's format.
 *
 * Lines go to stderr as `<L><mmdd> <hh:mm:ss.uuuuuu> <tid> <file>:<line>]
 * <msg>` (L is E, W, I or V), the layout tritonserver prints. Safe to call from
 * any thread: each line is formatted into a local buffer and written with one
 * write(2), so lines never interleave.
 */
#ifndef IFD_CORE_LOG_H
#define IFD_CORE_LOG_H

typedef enum ifd_log_level {
  IFD_LOG_ERROR = 0,
  IFD_LOG_WARN = 1,
  IFD_LOG_INFO = 2,
  IFD_LOG_VERBOSE = 3,
} ifd_log_level_t;

/** Sets the verbose level (--log-verbose=N; 0 disables verbose lines). */
void ifd_log_set_verbose(int level);
/** Enables or disables info, warning and error lines (--log-info etc.). */
void ifd_log_set_enabled(ifd_log_level_t level, int enabled);
/** Returns non-zero when lines of `level` are printed. */
int ifd_log_enabled(ifd_log_level_t level);

void ifd_log_write(ifd_log_level_t level, const char *file, int line,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#define IFD_LOG(level, ...)                                  \
  do {                                                       \
    if (ifd_log_enabled(level))                              \
      ifd_log_write(level, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define IFD_ERROR(...) IFD_LOG(IFD_LOG_ERROR, __VA_ARGS__)
#define IFD_WARN(...) IFD_LOG(IFD_LOG_WARN, __VA_ARGS__)
#define IFD_INFO(...) IFD_LOG(IFD_LOG_INFO, __VA_ARGS__)
#define IFD_VERBOSE(...) IFD_LOG(IFD_LOG_VERBOSE, __VA_ARGS__)

#endif
