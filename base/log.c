/*
 * base/log.c - tritonserver-style log lines, one write(2) per line.
 *
 * The settings are relaxed atomics: a change made on the loop thread (the
 * logging extension) reaches other threads at their next line, and no line
 * needs more than one consistent reading of each setting.
 *
 * Messages are written as JSON strings (quoted, escaped as JSON encoders
 * escape: quote, backslash and control characters), as tritonserver writes
 * them, so a message that holds a newline or a forged line prefix (a client
 * controls tensor names and IDs) cannot inject a log line. The environment
 * variable TRITON_SERVER_ESCAPE_LOG_MESSAGES=0, read once, writes them raw.
 */
#include "base/log.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define RELAXED memory_order_relaxed

static atomic_int verbose_level;
static atomic_int enabled[3] = {1, 1, 1};
static atomic_int format;
/* Where lines go. Replaced only by ifd_log_open_file; a replaced file and
 * path are kept open and allocated (another thread may be writing to it),
 * which costs one descriptor per change: a change happens at start, or when
 * an embedding application makes a server with another log file. */
static atomic_int out_fd = STDERR_FILENO;
static _Atomic(char *) out_path; /* the --log-file path; NULL */
static atomic_int escape = 1;    /* messages as JSON strings */
static pthread_once_t escape_once = PTHREAD_ONCE_INIT;

/* Like tritonserver: escaped unless the variable is exactly "0". */
static void read_escape(void) {
  const char *v = getenv("TRITON_SERVER_ESCAPE_LOG_MESSAGES");
  atomic_store_explicit(&escape, !(v != NULL && strcmp(v, "0") == 0), RELAXED);
}

int ifd_log_escapes(void) {
  pthread_once(&escape_once, read_escape);
  return atomic_load_explicit(&escape, RELAXED);
}

size_t ifd_log_escape(char *out, size_t cap, const char *msg, size_t len) {
  static const char hex[] = "0123456789ABCDEF";
  size_t n = 0, i;
  if (cap < 3) return 0;
  out[n++] = '"';
  for (i = 0; i < len; i++) {
    unsigned char c = (unsigned char)msg[i];
    char two = 0;
    switch (c) {
      case '"':
        two = '"';
        break;
      case '\\':
        two = '\\';
        break;
      case '\b':
        two = 'b';
        break;
      case '\f':
        two = 'f';
        break;
      case '\n':
        two = 'n';
        break;
      case '\r':
        two = 'r';
        break;
      case '\t':
        two = 't';
        break;
      default:
        break;
    }
    /* Room for the longest escape and the closing quote, else cut here. */
    if (n + 7 > cap) break;
    if (two != 0) {
      out[n++] = '\\';
      out[n++] = two;
    } else if (c < 0x20) {
      memcpy(out + n, "\\u00", 4);
      out[n + 4] = hex[c >> 4];
      out[n + 5] = hex[c & 15];
      n += 6;
    } else {
      out[n++] = (char)c;
    }
  }
  out[n++] = '"';
  return n;
}

void ifd_log_set_verbose(int level) {
  atomic_store_explicit(&verbose_level, level < 0 ? 0 : level, RELAXED);
}

int ifd_log_verbose(void) {
  return atomic_load_explicit(&verbose_level, RELAXED);
}

void ifd_log_set_enabled(ifd_log_level_t level, int on) {
  if (level <= IFD_LOG_INFO)
    atomic_store_explicit(&enabled[level], on != 0, RELAXED);
}

int ifd_log_enabled(ifd_log_level_t level) {
  if (level == IFD_LOG_VERBOSE)
    return atomic_load_explicit(&verbose_level, RELAXED) > 0;
  return atomic_load_explicit(&enabled[level], RELAXED);
}

void ifd_log_set_format(ifd_log_format_t f) {
  atomic_store_explicit(&format, (int)f, RELAXED);
}

ifd_log_format_t ifd_log_format(void) {
  return (ifd_log_format_t)atomic_load_explicit(&format, RELAXED);
}

const char *ifd_log_format_name(ifd_log_format_t f) {
  return f == IFD_LOG_FORMAT_ISO8601 ? "ISO8601" : "default";
}

int ifd_log_parse_format(const char *text, ifd_log_format_t *out) {
  if (strcmp(text, "default") == 0)
    *out = IFD_LOG_FORMAT_DEFAULT;
  else if (strcmp(text, "ISO8601") == 0)
    *out = IFD_LOG_FORMAT_ISO8601;
  else
    return -1;
  return 0;
}

int ifd_log_open_file(const char *path) {
  char *copy = strdup(path);
  int fd;
  if (copy == NULL) return -ENOMEM;
  fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    int e = errno;
    free(copy);
    return -e;
  }
  atomic_store(&out_path, copy);
  atomic_store(&out_fd, fd);
  return 0;
}

const char *ifd_log_file(void) {
  const char *p = atomic_load(&out_path);
  return p != NULL ? p : "";
}

void ifd_log_write(ifd_log_level_t level, const char *file, int line,
                   const char *fmt, ...) {
  /* Triton writes verbose lines with the INFO letter. */
  static const char letters[] = "EWII";
  /* An escaped message may grow 6 times; long ones are cut. */
  char buf[8192];
  struct timeval tv;
  struct tm tm;
  const char *base = strrchr(file, '/');
  size_t n;
  int k;
  va_list ap;

  gettimeofday(&tv, NULL);
  if (ifd_log_format() == IFD_LOG_FORMAT_ISO8601) {
    gmtime_r(&tv.tv_sec, &tm);
    k = snprintf(buf, sizeof(buf),
                 "%04d-%02d-%02dT%02d:%02d:%02dZ %c %ld %s:%d] ",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec, letters[level],
                 (long)syscall(SYS_gettid), base ? base + 1 : file, line);
  } else {
    localtime_r(&tv.tv_sec, &tm);
    k = snprintf(buf, sizeof(buf),
                 "%c%02d%02d %02d:%02d:%02d.%06ld %ld %s:%d] ", letters[level],
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (long)tv.tv_usec, (long)syscall(SYS_gettid),
                 base ? base + 1 : file, line);
  }
  n = k > 0 ? (size_t)k : 0;
  if (n >= sizeof(buf) - 2) n = sizeof(buf) - 2;
  va_start(ap, fmt);
  if (ifd_log_escapes()) {
    char msg[4096];
    k = vsnprintf(msg, sizeof(msg), fmt, ap);
    if (k < 0) k = 0;
    if ((size_t)k >= sizeof(msg)) k = (int)sizeof(msg) - 1;
    n += ifd_log_escape(buf + n, sizeof(buf) - n - 1, msg, (size_t)k);
  } else {
    k = vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
    if (k > 0) n += (size_t)k;
    if (n > sizeof(buf) - 2) n = sizeof(buf) - 2;
  }
  va_end(ap);
  buf[n++] = '\n';
  /* A failed or short write of a log line has nowhere better to go. */
  if (write(atomic_load_explicit(&out_fd, RELAXED), buf, n) < 0) return;
}
