/*
 * backend_api/backends/python/wire.c - byte buffers, message framing and
 * payload cursors of the Python backend's protocol (ipc.h), and its small
 * logging and error helpers.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* Longest payload accepted from a stub (BLS inputs and RESPONSE data travel
 * inline, so this is the largest such message). */
#define MAX_PAYLOAD ((uint64_t)4 << 30)

void ifd__py_buf_add(ifd__py_buf_t *b, const void *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (p == NULL) {
      b->oom = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  if (n > 0) memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

void ifd__py_buf_fmt(ifd__py_buf_t *b, const char *fmt, ...) {
  char tmp[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
  va_end(ap);
  if (n > 0)
    ifd__py_buf_add(b, tmp,
                    (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

void ifd__py_buf_jstr(ifd__py_buf_t *b, const char *s, size_t n) {
  ifd__py_buf_add(b, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', (char)c};
      ifd__py_buf_add(b, e, 2);
    } else if (c < 0x20) {
      ifd__py_buf_fmt(b, "\\u%04x", c);
    } else {
      ifd__py_buf_add(b, &s[i], 1);
    }
  }
  ifd__py_buf_add(b, "\"", 1);
}

void ifd__py_buf_jcstr(ifd__py_buf_t *b, const char *s) {
  ifd__py_buf_jstr(b, s, strlen(s));
}

void ifd__py_buf_u32(ifd__py_buf_t *b, uint32_t v) {
  ifd__py_buf_add(b, &v, 4);
}

void ifd__py_buf_u64(ifd__py_buf_t *b, uint64_t v) {
  ifd__py_buf_add(b, &v, 8);
}

void ifd__py_buf_str(ifd__py_buf_t *b, const char *s, size_t n) {
  ifd__py_buf_u32(b, (uint32_t)n);
  ifd__py_buf_add(b, s, n);
}

void ifd__py_buf_pad8(ifd__py_buf_t *b, size_t base) {
  static const char zeros[8] = {0};
  size_t rel = b->len - base;
  if (rel % 8 != 0) ifd__py_buf_add(b, zeros, 8 - rel % 8);
}

int ifd__py_write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -EPIPE;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

int ifd__py_read_all(int fd, void *p, size_t n) {
  char *c = p;
  while (n > 0) {
    ssize_t r = read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -EPIPE;
    c += r;
    n -= (size_t)r;
  }
  return 0;
}

int ifd__py_send(int fd, uint32_t type, uint32_t id, const void *payload,
                 size_t len) {
  ifd_py_hdr_t h = {type, id, len};
  struct iovec iov[2] = {{&h, sizeof(h)}, {(void *)payload, len}};
  struct msghdr m = {0};
  if (fd < 0) return -EPIPE;
  /* Header and payload in one sendmsg: the stub reads the message in one
   * recv when it fits its buffer. What a short write leaves goes on as
   * plain sends. */
  m.msg_iov = iov;
  m.msg_iovlen = len > 0 ? 2 : 1;
  ssize_t w;
  do w = sendmsg(fd, &m, MSG_NOSIGNAL);
  while (w < 0 && errno == EINTR);
  if (w <= 0) return -EPIPE;
  size_t done = (size_t)w;
  if (done < sizeof(h)) {
    int rc = ifd__py_write_all(fd, (const char *)&h + done, sizeof(h) - done);
    if (rc != 0 || len == 0) return rc;
    return ifd__py_write_all(fd, payload, len);
  }
  done -= sizeof(h);
  return done < len
             ? ifd__py_write_all(fd, (const char *)payload + done, len - done)
             : 0;
}

int ifd__py_recv(int fd, ifd_py_hdr_t *h, char **payload) {
  *payload = NULL;
  int rc = ifd__py_read_all(fd, h, sizeof(*h));
  if (rc != 0) return rc;
  if (h->length > MAX_PAYLOAD) return -EPROTO;
  char *p = malloc(h->length + 1);
  if (p == NULL) return -ENOMEM;
  rc = ifd__py_read_all(fd, p, h->length);
  if (rc != 0) {
    free(p);
    return rc;
  }
  p[h->length] = '\0';
  *payload = p;
  return 0;
}

int ifd__py_rd_bytes(ifd__py_rd_t *r, void *dst, size_t n) {
  if ((size_t)(r->end - r->p) < n) return -1;
  if (n > 0) memcpy(dst, r->p, n);
  r->p += n;
  return 0;
}

int ifd__py_rd_u32(ifd__py_rd_t *r, uint32_t *v) {
  return ifd__py_rd_bytes(r, v, 4);
}

int ifd__py_rd_u64(ifd__py_rd_t *r, uint64_t *v) {
  return ifd__py_rd_bytes(r, v, 8);
}

int ifd__py_rd_str(ifd__py_rd_t *r, const char **s, uint32_t *n) {
  if (ifd__py_rd_u32(r, n) != 0 || (size_t)(r->end - r->p) < *n) return -1;
  *s = r->p;
  r->p += *n;
  return 0;
}

int ifd__py_rd_pad8(ifd__py_rd_t *r) {
  size_t rel = (size_t)(r->p - r->base);
  size_t pad = rel % 8 ? 8 - rel % 8 : 0;
  if ((size_t)(r->end - r->p) < pad) return -1;
  r->p += pad;
  return 0;
}

TRITONSERVER_Error *ifd__py_errorf(TRITONSERVER_Error_Code code,
                                   const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return TRITONSERVER_ErrorNew(code, buf);
}

void ifd__py_log(TRITONSERVER_LogLevel level, const char *file, int line,
                 const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  if (!TRITONSERVER_LogIsEnabled(level)) return;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  TRITONSERVER_ErrorDelete(TRITONSERVER_LogMessage(level, file, line, buf));
}

void ifd__py_log_error(TRITONSERVER_Error *err, const char *what) {
  if (err == NULL) return;
  IFD_PY_LOG(TRITONSERVER_LOG_ERROR, "python backend: %s: %s", what,
             TRITONSERVER_ErrorMessage(err));
  TRITONSERVER_ErrorDelete(err);
}

uint64_t ifd__py_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
