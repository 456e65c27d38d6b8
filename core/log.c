/*
 * core/log.c - tritonserver-style log lines, one write(2) per line.
 */
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int verbose_level;
static int enabled[3] = {1, 1, 1};

void ifd_log_set_verbose(int level) {
  verbose_level = level;
}

void ifd_log_set_enabled(ifd_log_level_t level, int on) {
  if (level <= IFD_LOG_INFO) enabled[level] = on;
}

int ifd_log_enabled(ifd_log_level_t level) {
  if (level == IFD_LOG_VERBOSE) return verbose_level > 0;
  return enabled[level];
}

void ifd_log_write(ifd_log_level_t level, const char *file, int line,
                   const char *fmt, ...) {
  static const char letters[] = "EWIV";
  char buf[4096];
  struct timeval tv;
  struct tm tm;
  const char *base = strrchr(file, '/');
  size_t n;
  int k;
  va_list ap;

  gettimeofday(&tv, NULL);
  localtime_r(&tv.tv_sec, &tm);
  k = snprintf(buf, sizeof(buf), "%c%02d%02d %02d:%02d:%02d.%06ld %ld %s:%d] ",
               letters[level], tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
               tm.tm_sec, (long)tv.tv_usec, (long)syscall(SYS_gettid),
               base ? base + 1 : file, line);
  n = k > 0 ? (size_t)k : 0;
  if (n >= sizeof(buf) - 2) n = sizeof(buf) - 2;
  va_start(ap, fmt);
  k = vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
  va_end(ap);
  if (k > 0) n += (size_t)k;
  if (n > sizeof(buf) - 2) n = sizeof(buf) - 2;
  buf[n++] = '\n';
  /* A failed or short write of a log line has nowhere better to go. */
  if (write(STDERR_FILENO, buf, n) < 0) return;
}
