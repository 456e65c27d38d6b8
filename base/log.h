/*
 * base/log.h - logging in tritonserver's formats.
 *
 * Lines go to stderr, or to the --log-file, as tritonserver prints them:
 *   default:  `<L><mmdd> <hh:mm:ss.uuuuuu> <tid> <file>:<line>] <msg>`
 *   ISO8601:  `<yyyy>-<mm>-<dd>T<hh>:<mm>:<ss>Z <L> <tid> <file>:<line>] <msg>`
 * where <msg> is a JSON string ("..." escaped) unless
 * TRITON_SERVER_ESCAPE_LOG_MESSAGES=0.
 * (L is E, W, I or V). Safe to call from any thread: each line is formatted
 * into a local buffer and written with one write(2), so lines never
 * interleave. The settings (levels, format) may change at run time (the
 * logging extension, from the loop thread); every thread sees the change
 * at its next line.
 */
#ifndef IFD_BASE_LOG_H
#define IFD_BASE_LOG_H

#include <stddef.h>

typedef enum ifd_log_level {
  IFD_LOG_ERROR = 0,
  IFD_LOG_WARN = 1,
  IFD_LOG_INFO = 2,
  IFD_LOG_VERBOSE = 3,
} ifd_log_level_t;

typedef enum ifd_log_format {
  IFD_LOG_FORMAT_DEFAULT = 0,
  IFD_LOG_FORMAT_ISO8601 = 1,
} ifd_log_format_t;

/** Sets the verbose level (--log-verbose=N; 0 disables verbose lines). */
void ifd_log_set_verbose(int level);
/** The verbose level. */
int ifd_log_verbose(void);
/** Enables or disables info, warning and error lines (--log-info etc.). */
void ifd_log_set_enabled(ifd_log_level_t level, int enabled);
/** Returns non-zero when lines of `level` are printed. */
int ifd_log_enabled(ifd_log_level_t level);
/** Sets the line format (--log-format). */
void ifd_log_set_format(ifd_log_format_t format);
ifd_log_format_t ifd_log_format(void);
/** "default" or "ISO8601" (tritonserver's spellings). */
const char *ifd_log_format_name(ifd_log_format_t format);
/** Parses tritonserver's spellings; returns 0, or -1 for anything else. */
int ifd_log_parse_format(const char *text, ifd_log_format_t *out);

/**
 * Sends every later line to `path` (--log-file), opened for appending and
 * created when missing (0644), instead of stderr. Blocking (open(2)): call it
 * at start, never on the loop. Returns 0 or a negative errno (lines then still
 * go to stderr).
 */
int ifd_log_open_file(const char *path);
/** The --log-file path, "" while lines go to stderr. */
const char *ifd_log_file(void);

/** Whether messages are written as JSON strings: unless the environment
 *  variable TRITON_SERVER_ESCAPE_LOG_MESSAGES is "0" (read at the first
 *  call, as tritonserver reads it at start; it cannot change after). */
int ifd_log_escapes(void);
/**
 * Writes `msg` (len bytes) into `out` (cap bytes, at least 3) as a JSON
 * string: quoted, with quote, backslash and control characters escaped
 * (\n, \t, ..., \u00XX), other bytes as they are. A message too long for
 * `out` is cut before an escape, the closing quote kept. Returns the bytes
 * written (no NUL), 0 when cap < 3.
 */
size_t ifd_log_escape(char *out, size_t cap, const char *msg, size_t len);

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
