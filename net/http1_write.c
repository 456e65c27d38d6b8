/*
 * net/http1_write.c - the HTTP/1.1 transport's answers: response slots,
 * their status line and headers, streamed answers (chunked pieces), and
 * the writes of each connection's FIFO.
 *
 * Each parsed message appends a slot to its connection's FIFO; slots are
 * finished in any order (an application answers later) but written from
 * the head only, so responses keep request order. A finished slot marks
 * its connection dirty; the connection layer's flusher (net/conn.c) writes
 * every dirty connection's ready slots in one write just before the loop
 * blocks, which batches pipelined responses. One write is in flight per
 * connection. A streamed answer is a slot that holds a queue of pieces
 * instead of one iovec list: each write takes the pieces queued so far, the
 * slot stays at the head until its last piece is written, and the slots
 * behind it wait.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "base/util.h"
#include "net/http1_internal.h"

const char ifd__http1_oom_response[] =
    "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
    "Content-Length: 25\r\nConnection: close\r\n\r\n{\"error\":\"out of "
    "memory\"}";
const size_t ifd__http1_oom_response_len = sizeof(ifd__http1_oom_response) - 1;

const char *ifd_http_reason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

/* ---- slots ------------------------------------------------------------- */

ifd_http1_slot_t *ifd__http1_slot_push(ifd_http1_conn_t *c) {
  ifd_http1_slot_t *s = calloc(1, c->h->handlers->slot_size);

  if (s == NULL) return NULL;
  s->conn = c;
  s->hd = c->h->handlers;
  s->iov = s->iov_inline;
  s->pieces_tail = &s->pieces;
  if (c->tail != NULL)
    c->tail->next = s;
  else
    c->head = s;
  c->tail = s;
  c->n_slots++;
  return s;
}

/* Frees the first `n` pieces of `s` (all when n is larger). */
static void pieces_drop(ifd_http1_slot_t *s, unsigned n) {
  while (s->pieces != NULL && n-- > 0) {
    ifd_http_piece_t *p = s->pieces;
    s->pieces = p->next;
    s->pieces_bytes -= p->iov.len;
    free(p->buf);
    free(p);
  }
  if (s->pieces == NULL) s->pieces_tail = &s->pieces;
}

void ifd_http1_slot_free(ifd_http1_slot_t *s) {
  if (s->hd != NULL && s->hd->release != NULL) s->hd->release(s);
  pieces_drop(s, UINT_MAX);
  if (s->iov != s->iov_inline) free(s->iov);
  free(s->buf);
  free(s);
}

static void mark_dirty(ifd_http1_conn_t *c) {
  ifd__conn_mark_dirty(&c->base);
}

void ifd__http1_slot_static(ifd_http1_slot_t *s, const char *text, size_t n) {
  s->iov[0] = uv_buf_init((char *)text, (unsigned)n);
  s->niov = 1;
  s->ready = 1;
  if (s->conn != NULL) mark_dirty(s->conn);
}

/* Appends `s` (length n) at o when it fits before `end`; NULL once not. */
static char *put_mem(char *o, const char *end, const char *s, size_t n) {
  if (o == NULL || n > (size_t)(end - o)) return NULL;
  memcpy(o, s, n);
  return o + n;
}

#define PUT_LIT(o, end, lit) put_mem(o, end, lit, sizeof(lit) - 1)

/* Appends v in decimal (a '-' first when negative), as %lld would. */
static char *put_dec(char *o, const char *end, int64_t v) {
  char t[24];
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  int n = (int)sizeof(t);

  do {
    t[--n] = (char)('0' + u % 10);
    u /= 10;
  } while (u > 0);
  if (v < 0) t[--n] = '-';
  return put_mem(o, end, t + n, sizeof(t) - (size_t)n);
}

void ifd_http1_slot_finish(ifd_http1_slot_t *s, int status, const char *ctype,
                           ifd_hbuf_t *body, const uv_buf_t *bin, unsigned nbin,
                           int64_t hdr_len) {
  char head[IFD_HTTP_HEADROOM];
  const char *end = head + sizeof(head), *reason = ifd_http_reason(status);
  uint64_t total = ifd_hbuf_size(body);
  unsigned i;
  char *o = head;
  int n;

  /* Built by hand: two snprintf calls were ~7% of a small request. */
  for (i = 0; i < nbin; i++) total += bin[i].len;
  o = PUT_LIT(o, end, "HTTP/1.1 ");
  o = put_dec(o, end, status);
  o = PUT_LIT(o, end, " ");
  o = put_mem(o, end, reason, strlen(reason));
  o = PUT_LIT(o, end, "\r\n");
  if (ctype != NULL) {
    o = PUT_LIT(o, end, "Content-Type: ");
    o = put_mem(o, end, ctype, strlen(ctype));
    o = PUT_LIT(o, end, "\r\n");
  }
  if (hdr_len >= 0) {
    o = PUT_LIT(o, end, "Inference-Header-Content-Length: ");
    o = put_dec(o, end, hdr_len);
    o = PUT_LIT(o, end, "\r\n");
  }
  o = PUT_LIT(o, end, "Content-Length: ");
  if (NEVER(total > INT64_MAX)) o = NULL; /* no body is that large */
  o = put_dec(o, end, (int64_t)total);
  o = PUT_LIT(o, end, "\r\n");
  if (status == 429 && s->conn != NULL && s->conn->h->retry_after_secs > 0) {
    o = PUT_LIT(o, end, "Retry-After: ");
    o = put_dec(o, end, s->conn->h->retry_after_secs);
    o = PUT_LIT(o, end, "\r\n");
  }
  if (s->close_after || !s->keep_alive)
    o = PUT_LIT(o, end, "Connection: close\r\n");
  else if (s->http10)
    o = PUT_LIT(o, end, "Connection: keep-alive\r\n");
  o = PUT_LIT(o, end, "\r\n");
  if (o == NULL) goto out_oom;
  n = (int)(o - head);
  if (ifd_hbuf_prepend(body, head, (size_t)n) != 0) goto out_oom;
  if (nbin + 1 > IFD_SLOT_INLINE_IOV) {
    s->iov = malloc((nbin + 1) * sizeof(uv_buf_t));
    if (s->iov == NULL) {
      s->iov = s->iov_inline;
      goto out_oom;
    }
  }
  s->buf = body->data;
  s->iov[0] =
      uv_buf_init(body->data + body->start, (unsigned)ifd_hbuf_size(body));
  body->data = NULL;
  for (i = 0; i < nbin; i++) s->iov[i + 1] = bin[i];
  s->niov = nbin + 1;
  s->ready = 1;
  if (s->conn != NULL) mark_dirty(s->conn);
  return;

out_oom:
  ifd_hbuf_free(body);
  s->close_after = 1;
  ifd__http1_slot_static(s, ifd__http1_oom_response,
                         ifd__http1_oom_response_len);
}

void ifd_http1_slot_error_as(ifd_http1_slot_t *s, int status, const char *ctype,
                             const char *msg) {
  ifd_hbuf_t b;

  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd_hbuf_puts(&b, "{\"error\":");
  ifd_json_str(&b, msg, strlen(msg));
  ifd_hbuf_puts(&b, "}");
  ifd_http1_slot_finish(s, status, ctype, &b, NULL, 0, -1);
}

void ifd__http1_slot_error(ifd_http1_slot_t *s, int status, const char *msg) {
  ifd_http1_slot_error_as(s, status, "application/json", msg);
}

void *ifd_http1_slot_app(const ifd_http1_slot_t *s) {
  return s->conn != NULL ? s->conn->h->app : NULL;
}

/* ---- streamed answers ---------------------------------------------------- */

/* Queues `buf` (owned, malloc'd; the piece is iov within it) on `s`. Returns
 * 0, or IFD_ENOMEM with buf freed. */
static int piece_push(ifd_http1_slot_t *s, char *buf, uv_buf_t iov) {
  ifd_http_piece_t *p = malloc(sizeof(*p));

  if (p == NULL) {
    free(buf);
    return IFD_ENOMEM;
  }
  p->next = NULL;
  p->buf = buf;
  p->iov = iov;
  *s->pieces_tail = p;
  s->pieces_tail = &p->next;
  s->pieces_bytes += iov.len;
  if (s->conn != NULL) mark_dirty(s->conn);
  return 0;
}

/* Whether pieces for `s` are wanted: its connection is open. */
static int stream_live(const ifd_http1_slot_t *s) {
  return s->conn != NULL && !s->conn->base.closing;
}

int ifd_http1_slot_stream_begin(ifd_http1_slot_t *s, int status,
                                const char *ctype) {
  char head[IFD_HTTP_HEADROOM], *buf;
  const char *end = head + sizeof(head), *reason = ifd_http_reason(status);
  char *o = head;
  size_t n;

  s->chunked = !s->http10;
  if (s->http10) s->close_after = 1; /* the close ends the body */
  o = PUT_LIT(o, end, "HTTP/1.1 ");
  o = put_dec(o, end, status);
  o = PUT_LIT(o, end, " ");
  o = put_mem(o, end, reason, strlen(reason));
  o = PUT_LIT(o, end, "\r\nContent-Type: ");
  o = put_mem(o, end, ctype, strlen(ctype));
  o = PUT_LIT(o, end, "\r\n");
  if (s->chunked) o = PUT_LIT(o, end, "Transfer-Encoding: chunked\r\n");
  if (s->close_after || !s->keep_alive)
    o = PUT_LIT(o, end, "Connection: close\r\n");
  o = PUT_LIT(o, end, "\r\n");
  if (o == NULL || (buf = malloc((size_t)(o - head))) == NULL) goto out_oom;
  n = (size_t)(o - head);
  memcpy(buf, head, n);
  if (piece_push(s, buf, uv_buf_init(buf, (unsigned)n)) != 0) goto out_oom;
  s->streaming = 1;
  return 0;

out_oom:
  s->close_after = 1;
  ifd__http1_slot_static(s, ifd__http1_oom_response,
                         ifd__http1_oom_response_len);
  return IFD_ENOMEM;
}

int ifd_http1_slot_stream_put(ifd_http1_slot_t *s, ifd_hbuf_t *body) {
  size_t size = ifd_hbuf_size(body);
  char line[24];
  int n;

  if (size == 0 || !stream_live(s) || s->stream_end) {
    ifd_hbuf_free(body);
    return 0;
  }
  /* A client that stopped reading: no unbounded buffering for it. (What is
   * queued before this piece counts: one large answer still goes out.) */
  if (s->pieces_bytes > IFD_HTTP_STREAM_MAX_QUEUED) {
    IFD_WARN(
        "HTTP: closing a connection whose client does not read its "
        "streamed answer (%zu bytes queued)",
        s->pieces_bytes);
    ifd_hbuf_free(body);
    ifd__http1_close(s->conn, 0);
    return 0;
  }
  if (s->chunked) {
    n = snprintf(line, sizeof(line), "%zx\r\n", size);
    if (ifd_hbuf_prepend(body, line, (size_t)n) != 0) goto out_oom;
    ifd_hbuf_put(body, "\r\n", 2);
  }
  if (body->oom || ifd_hbuf_size(body) > UINT32_MAX) goto out_oom;
  if (piece_push(s, body->data,
                 uv_buf_init(body->data + body->start,
                             (unsigned)ifd_hbuf_size(body))) != 0) {
    body->data = NULL;
    goto out_oom;
  }
  body->data = NULL; /* the piece took it */
  return 0;

out_oom:
  ifd_hbuf_free(body);
  if (stream_live(s)) ifd__http1_close(s->conn, 0);
  return IFD_ENOMEM;
}

void ifd_http1_slot_stream_end(ifd_http1_slot_t *s) {
  static const char last[] = "0\r\n\r\n";
  char *buf;

  if (s->stream_end) return;
  s->stream_end = 1;
  if (s->chunked && stream_live(s)) {
    buf = malloc(sizeof(last) - 1);
    if (buf == NULL ||
        piece_push(s, buf, uv_buf_init(buf, sizeof(last) - 1)) != 0) {
      ifd__http1_close(s->conn, 0);
      return;
    }
    memcpy(buf, last, sizeof(last) - 1);
  }
  if (s->conn != NULL) mark_dirty(s->conn);
}

static void flush(ifd_http1_conn_t *c);

static void on_write(uv_write_t *w, int status) {
  ifd_http1_conn_t *c = ifd_container_of(w, ifd_http1_conn_t, wreq);
  unsigned i, k = c->n_writing;
  int close_after = 0;

  c->n_writing = 0;
  for (i = 0; i < k; i++) {
    ifd_http1_slot_t *s = c->head;
    c->head = s->next;
    if (c->head == NULL) c->tail = NULL;
    c->n_slots--;
    close_after |= s->close_after;
    ifd_http1_slot_free(s);
  }
  /* A stream whose first pieces went out stays at the head. */
  if (c->head != NULL && c->head->n_pieces_writing != 0) {
    pieces_drop(c->head, c->head->n_pieces_writing);
    c->head->n_pieces_writing = 0;
  }
  if (c->base.closing) return;
  if (status < 0) {
    ifd__http1_close(c, 0);
    return;
  }
  if (close_after && c->error_sent && !c->stopping && c->head == NULL &&
      ifd__conn_shutdown(&c->base) == 0) {
    /* An error ended the request early: the client may still be sending.
     * Read and discard (on_read: no_more) until it closes or LINGER_MS. */
    ifd__conn_deadline(&c->base, TQ_LINGER);
    ifd__http1_read_start(c);
    return;
  }
  if (close_after || (c->head == NULL && c->stopping)) {
    ifd__http1_close(c, 1);
    return;
  }
  /* Not here: this may run in the flusher, where requests parsed now would
   * wait for the loop's next wake-up (ifd__conn_defer). */
  if (c->read_paused && c->n_slots <= c->h->max_pipeline / 2 &&
      ifd__conn_defer(&c->base) != 0) {
    ifd__http1_close(c, 0);
    return;
  }
  /* Nothing in flight and no request begun: idle from now. */
  if (c->head == NULL && !c->in_headers && !c->in_body && !c->no_more &&
      !c->read_paused)
    ifd__conn_deadline(&c->base, TQ_IDLE);
  flush(c);
}

/* How many of s's pieces fit `room` iovecs (all when they do). */
static unsigned pieces_fit(const ifd_http1_slot_t *s, unsigned room, int *all) {
  const ifd_http_piece_t *p;
  unsigned n = 0;

  for (p = s->pieces; p != NULL && n < room; p = p->next) n++;
  *all = p == NULL;
  return n;
}

/* Writes the ready slots at the head of the FIFO in one uv_write: whole
 * answers, and the pieces queued so far of a streamed answer, behind which
 * the rest waits. */
static void flush(ifd_http1_conn_t *c) {
  uv_buf_t stack[64], *bufs = stack;
  ifd_http1_slot_t *s, *part = NULL;
  unsigned k = 0, n = 0, np = 0;

  if (c->base.closing || c->n_writing != 0) return;
  for (s = c->head; s != NULL; s = s->next) {
    if (s->streaming) {
      int all;
      np = pieces_fit(s, MAX_WRITE_IOV - n, &all);
      if (!(all && s->stream_end)) { /* some of it only: it stays */
        if (np != 0) part = s;
        break;
      }
      n += np;
    } else {
      if (!s->ready) break;
      if (k != 0 && n + s->niov > MAX_WRITE_IOV) break;
      n += s->niov;
    }
    k++;
    if (s->close_after) break;
  }
  if (part != NULL) n += np;
  if (k == 0 && part == NULL) return;
  if (n == 0) { /* only ended streams with nothing left to send */
    c->n_writing = k;
    on_write(&c->wreq, 0);
    return;
  }
  if (n > sizeof(stack) / sizeof(stack[0])) {
    bufs = malloc(n * sizeof(uv_buf_t));
    if (bufs == NULL) {
      ifd__http1_close(c, 0);
      return;
    }
  }
  n = 0;
  for (s = c->head; k-- > 0; s = s->next) {
    if (s->streaming) {
      const ifd_http_piece_t *p;
      for (p = s->pieces; p != NULL; p = p->next) bufs[n++] = p->iov;
    } else {
      memcpy(bufs + n, s->iov, s->niov * sizeof(uv_buf_t));
      n += s->niov;
    }
    c->n_writing++;
  }
  if (part != NULL) {
    const ifd_http_piece_t *p = part->pieces;
    unsigned i;
    for (i = 0; i < np; i++, p = p->next) bufs[n++] = p->iov;
    part->n_pieces_writing = np;
  }
  /* Most responses fit the socket buffer: write them now. A write request
   * would cost libuv an epoll_ctl per response to stop watching for
   * writability afterwards; only what the kernel did not take goes through
   * uv_write. */
  {
    int w = ifd__conn_try_write(&c->base, bufs, n);
    unsigned first = 0;
    size_t done = w > 0 ? (size_t)w : 0;
    if (w < 0 && w != UV_EAGAIN) {
      if (bufs != stack) free(bufs);
      c->n_writing = 0;
      if (part != NULL) part->n_pieces_writing = 0;
      ifd__http1_close(c, 0);
      return;
    }
    while (first < n && done >= bufs[first].len) done -= bufs[first++].len;
    if (first == n) {
      if (bufs != stack) free(bufs);
      on_write(&c->wreq, 0); /* everything went: finish inline */
      return;
    }
    bufs[first].base += done;
    bufs[first].len -= done;
    /* uv_write copies the uv_buf_t array, so bufs may go at once. */
    if (ifd__conn_write(&c->base, &c->wreq, bufs + first, n - first,
                        on_write) != 0) {
      c->n_writing = 0;
      if (part != NULL) part->n_pieces_writing = 0;
      ifd__http1_close(c, 0);
    }
  }
  if (bufs != stack) free(bufs);
}

void ifd__http1_on_flush(ifd_conn_t *base) {
  flush((ifd_http1_conn_t *)base);
}
