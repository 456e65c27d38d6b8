/*
 * net/http1.c - the HTTP/1.1 listener and connections: llhttp on libuv.
 *
 * Reading. All connections share one 64 KiB read buffer owned by the front
 * end: libuv calls alloc, read and the read callback back to back for one
 * stream, and the callback parses everything before returning, so no bytes
 * wait in it between reads and an idle connection holds no buffer. The URL
 * and the two headers we need are copied out as llhttp reports them. A body
 * goes into ONE malloc'd buffer that grows as its bytes arrive (doubling, up
 * to Content-Length, or max_input_size for chunked bodies), so a declared
 * length alone allocates nothing; once a body has started, alloc hands libuv
 * the free part of that buffer directly, so a large body is read into place.
 * The buffer moves to the request (req->body) with the message: binary
 * tensors point into it, zero copy.
 *
 * Writing. Each parsed message appends a slot to the connection's FIFO;
 * slots are finished in any order (an infer answers later) but written from
 * the head only, so responses keep request order. A finished slot marks its
 * connection dirty; a uv_prepare handle writes every dirty connection's
 * ready slots in one uv_write just before the loop blocks (the connection
 * layer's flusher, net/conn.c), which batches pipelined responses. One write
 * is in flight per connection. A streamed answer (generate_stream, chunked)
 * is a slot that holds a queue of pieces instead of one iovec list: each
 * write takes the pieces queued so far, the slot stays at the head until its
 * last piece is written, and the slots behind it wait. Pieces that arrive
 * while a write is in flight leave together in the next one.
 *
 * Limits. The request line and headers together may take max_header_bytes
 * (counted from llhttp's callbacks, and exactly for a read that is header
 * bytes only) and max_headers fields: beyond either, 431 and close. Three
 * of the set's timeout queues (net/conn.h) hold a connection: HEADER from
 * the first byte of a request until its headers are complete (408 and
 * close: slowloris), BODY while a body arrives (408 and close when it
 * stalls: the clock restarts each BODY_PROGRESS bytes), IDLE while nothing
 * is in flight (closed quietly). A connection waiting for its answers is
 * on none. Pipelining is bounded by max_pipeline: llhttp pauses after that
 * many queued requests, the unparsed rest of the read is kept (at most one
 * read, READ_BUF_SIZE) and reading stops until half the answers are out.
 * An error answered before the request's end closes lingering: FIN, then
 * what the client still sends is read and dropped for up to LINGER_MS.
 *
 * Lifetime. Accept, the connection list, closing and the shutdown deadline
 * are net/conn.c's; a connection's memory is freed only in its close
 * callback.
 * Slots still waiting for a response then become orphans (slot->conn =
 * NULL): the response is dropped when it arrives, so a request never points
 * at a freed connection.
 */
#include <errno.h>
#include <limits.h>
#include <llhttp.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "base/log.h"
#include "base/util.h"
#include "net/conn.h"
#include "net/forward.h"
#include "net/internal.h"
#include "net/restrict.h"
#include "net/status.h"

#define READ_BUF_SIZE 65536
#define MAX_URL 8192
/* The clock of a body restarts each time this many bytes of it arrived. */
#define BODY_PROGRESS ((size_t)1 << 20)

/* The set's timeout queues (net/conn.h). */
enum { TQ_HEADER = 0, TQ_BODY = 1, TQ_IDLE = 2, TQ_LINGER = 3 };
/* How long a connection answered with an error mid-request reads on (and
 * discards) after its FIN, so that a client still sending reads the answer
 * rather than a reset. */
#define LINGER_MS 2000
/* A body read goes straight into the body buffer when this much is left. */
#define DIRECT_READ_MIN 4096
#define MAX_WRITE_IOV 1024
/* The first allocation of a body, before it doubles as bytes arrive. */
#define BODY_FIRST_CHUNK 65536

struct ifd_http {
  ifd_conn_set_t set;   /* embedded, first: listener and connections */
  uv_loop_t *loop;      /* borrowed */
  ifd_server_t *server; /* borrowed: outlives the front end */
  llhttp_settings_t settings;
  uint64_t max_input_size;
  uint64_t json_offload_bytes; /* copied into every slot (http_infer.c) */
  int metrics_only;
  uint32_t max_header_bytes;          /* request line and headers */
  uint32_t max_headers;               /* header fields per request */
  unsigned max_pipeline;              /* requests queued before reading stops */
  const struct ifd_metrics *metrics;  /* borrowed: outlives the front end */
  const ifd_restrict_t *restrict_api; /* borrowed: outlives the front end;
                                         NULL when nothing is restricted */
  const ifd_fwd_re_t *fwd_re;    /* borrowed: --http-header-forward-pattern, or
                               NULL */
  const ifd_http_cloud_t *cloud; /* borrowed: a cloud endpoint, or NULL */
  int overload_429;              /* IFD_EOVERLOADED: 429, not 503 */
  unsigned retry_after_secs;     /* its Retry-After; 0: none */
  struct ifd_mme *mme;           /* owned (a reference): SageMaker's multi-model
                                    endpoint (net/http_mme.c); NULL until used */
  void (*done)(void *arg);
  void *done_arg;           /* borrowed: the caller's */
  char rbuf[READ_BUF_SIZE]; /* shared read buffer (see top of file) */
};

struct ifd_http_conn {
  ifd_conn_t base; /* embedded, first: socket, timer, lists, closing */
  uv_write_t wreq; /* embedded: the one write in flight */
  ifd_http_t *h;   /* borrowed: outlives the connection */
  llhttp_t parser;
  ifd_http_slot_t *head; /* owned: response FIFO, oldest first */
  ifd_http_slot_t *tail; /* borrowed: last of the FIFO */
  unsigned n_slots;
  unsigned n_writing; /* slots at the head inside the write in flight */

  /* The message being parsed. */
  char *url; /* owned when != url_inline */
  size_t url_len, url_cap;
  char hname[40]; /* header name, lower-cased; hname_len > size: ignored */
  size_t hname_len;
  char hval[24]; /* value of a header we want; hval_len > size: too long */
  size_t hval_len;
  uint64_t header_len; /* Inference-Header-Content-Length */
  char *pending;       /* owned: bytes read but not parsed (pipeline pause) */
  size_t pending_len;
  size_t body_mark;   /* body_len when the body clock last restarted */
  uint32_t hdr_bytes; /* request line and header bytes so far */
  uint32_t n_headers; /* header fields so far */
  uint32_t msg_seq;   /* messages begun (see feed) */
  char *body;         /* owned (malloc'd); NULL until body bytes arrive */
  size_t body_len, body_cap;
  size_t body_need; /* Content-Length; 0 for none or chunked */
  uint64_t t_begin;
  unsigned has_header_len : 1, expect_continue : 1, chunked : 1;
  ifd_restrict_scan_t rscan;    /* --http-restricted-api headers seen */
  ifd_fwd_buf_t fwd;            /* headers to forward (h->fwd_re); owned */
  ifd_http_cloud_hdrs_t *cloud; /* owned: headers a cloud endpoint reads
                                   (h->cloud); NULL until the first one */

  unsigned no_more : 1;     /* parse no further requests */
  unsigned stopping : 1;    /* ifd_http_stop: close once the FIFO drains */
  unsigned read_paused : 1; /* stopped reading for backpressure */
  unsigned error_sent : 1;  /* an error slot ends the FIFO */
  unsigned in_headers : 1;  /* a message began; its headers are not done */
  unsigned in_body : 1;     /* its headers are done; its body is not */
  char url_inline[256];
};

static const char oom_response[] =
    "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
    "Content-Length: 25\r\nConnection: close\r\n\r\n{\"error\":\"out of "
    "memory\"}";
static const char continue_response[] = "HTTP/1.1 100 Continue\r\n\r\n";

static void close_conn(ifd_http_conn_t *c, int graceful);

struct ifd_mme **ifd__http_mme_ref(ifd_http_t *h) {
  return &h->mme;
}

uv_loop_t *ifd__http_loop(const ifd_http_t *h) {
  return h->loop;
}

const struct ifd_restrict *ifd__http_restrict(const ifd_http_t *h) {
  return h->restrict_api;
}

ifd_server_t *ifd__http_server(const ifd_http_t *h) {
  return h->server;
}

const ifd_http_cloud_t *ifd__http_cloud(const ifd_http_t *h) {
  return h->cloud;
}

const struct ifd_metrics *ifd__http_metrics(const ifd_http_t *h,
                                            int *metrics_only) {
  *metrics_only = h->metrics_only;
  return h->metrics;
}

int ifd_http_port(const ifd_http_t *h) {
  return h->set.port;
}

/* ---- slots ------------------------------------------------------------- */

static ifd_http_slot_t *slot_push(ifd_http_conn_t *c) {
  ifd_http_slot_t *s = calloc(1, sizeof(*s));

  if (s == NULL) return NULL;
  s->conn = c;
  s->iov = s->iov_inline;
  s->pieces_tail = &s->pieces;
  s->json_offload = c->h->json_offload_bytes;
  if (c->tail != NULL)
    c->tail->next = s;
  else
    c->head = s;
  c->tail = s;
  c->n_slots++;
  return s;
}

/* Frees the first `n` pieces of `s` (all when n is larger). */
static void pieces_drop(ifd_http_slot_t *s, unsigned n) {
  while (s->pieces != NULL && n-- > 0) {
    ifd_http_piece_t *p = s->pieces;
    s->pieces = p->next;
    s->pieces_bytes -= p->iov.len;
    free(p->buf);
    free(p);
  }
  if (s->pieces == NULL) s->pieces_tail = &s->pieces;
}

void ifd__http_slot_free(ifd_http_slot_t *s) {
  pieces_drop(s, UINT_MAX);
  if (s->resp != NULL) ifd_response_free(s->resp);
  if (s->req != NULL) ifd_request_unref(s->req);
  if (s->iov != s->iov_inline) free(s->iov);
  free(s->buf);
  free(s);
}

static void mark_dirty(ifd_http_conn_t *c) {
  ifd__conn_mark_dirty(&c->base);
}

static void slot_static(ifd_http_slot_t *s, const char *text, size_t n) {
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

void ifd__http_slot_finish(ifd_http_slot_t *s, int status, const char *ctype,
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
  if (total > INT64_MAX) o = NULL; /* NEVER: no body is that large */
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
  slot_static(s, oom_response, sizeof(oom_response) - 1);
}

void ifd__http_slot_error_as(ifd_http_slot_t *s, int status, const char *ctype,
                             const char *msg) {
  ifd_hbuf_t b;

  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd_hbuf_puts(&b, "{\"error\":");
  ifd_json_str(&b, msg, strlen(msg));
  ifd_hbuf_puts(&b, "}");
  ifd__http_slot_finish(s, status, ctype, &b, NULL, 0, -1);
}

int ifd__http_slot_status(const ifd_http_slot_t *s, int code) {
  if (code == IFD_EOVERLOADED && s->conn != NULL && s->conn->h->overload_429)
    return 429;
  return ifd_http_status(code);
}

void ifd__http_slot_error(ifd_http_slot_t *s, int status, const char *msg) {
  ifd__http_slot_error_as(s, status, "application/json", msg);
}

/* ---- streamed answers ---------------------------------------------------- */

/* Queues `buf` (owned, malloc'd; the piece is iov within it) on `s`. Returns
 * 0, or IFD_ENOMEM with buf freed. */
static int piece_push(ifd_http_slot_t *s, char *buf, uv_buf_t iov) {
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
static int stream_live(const ifd_http_slot_t *s) {
  return s->conn != NULL && !s->conn->base.closing;
}

int ifd__http_slot_stream_begin(ifd_http_slot_t *s, int status,
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
  slot_static(s, oom_response, sizeof(oom_response) - 1);
  return IFD_ENOMEM;
}

int ifd__http_slot_stream_put(ifd_http_slot_t *s, ifd_hbuf_t *body) {
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
    close_conn(s->conn, 0);
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
  if (stream_live(s)) close_conn(s->conn, 0);
  return IFD_ENOMEM;
}

void ifd__http_slot_stream_end(ifd_http_slot_t *s) {
  static const char last[] = "0\r\n\r\n";
  char *buf;

  if (s->stream_end) return;
  s->stream_end = 1;
  if (s->chunked && stream_live(s)) {
    buf = malloc(sizeof(last) - 1);
    if (buf == NULL ||
        piece_push(s, buf, uv_buf_init(buf, sizeof(last) - 1)) != 0) {
      close_conn(s->conn, 0);
      return;
    }
    memcpy(buf, last, sizeof(last) - 1);
  }
  if (s->conn != NULL) mark_dirty(s->conn);
}

/* Answers `status` with {"error": msg} and closes once written; parsing
 * stops. Returns -1 for llhttp callbacks to return. */
static int fail(ifd_http_conn_t *c, int status, const char *msg) {
  ifd_http_slot_t *s;

  c->no_more = 1;
  if (c->error_sent) return -1;
  c->error_sent = 1;
  s = slot_push(c);
  if (s == NULL) return -1; /* close_conn follows from the read callback */
  s->close_after = 1;
  ifd__http_slot_error(s, status, msg);
  return -1;
}

/* Answers a limit with `status` (fail) and counts it; reading stops. */
static int fail_limit(ifd_http_conn_t *c, int status, ifd_conn_limit_t why,
                      const char *msg) {
  if (!c->error_sent) {
    ifd__conn_count_limit(&c->base, why);
    IFD_VERBOSE("HTTP: %s", msg);
  }
  c->in_headers = c->in_body = 0;
  ifd__conn_deadline_clear(&c->base);
  return fail(c, status, msg);
}

/* Counts `n` more request line and header bytes; -1 (431) past the limit. */
static int count_header_bytes(ifd_http_conn_t *c, size_t n) {
  if (c->hdr_bytes > c->h->max_header_bytes ||
      n > c->h->max_header_bytes - c->hdr_bytes)
    return fail_limit(c, 431, IFD_CONN_LIMIT_HEADER_SIZE,
                      "request header fields too large "
                      "(--http-max-header-bytes)");
  c->hdr_bytes += (uint32_t)n;
  return 0;
}

/* ---- llhttp callbacks ---------------------------------------------------- */

static ifd_http_conn_t *conn_of(llhttp_t *p) {
  return p->data;
}

static void reset_msg(ifd_http_conn_t *c) {
  free(c->body);
  c->body = NULL;
  c->body_len = c->body_cap = c->body_need = 0;
  c->url_len = 0;
  c->hname_len = c->hval_len = 0;
  c->header_len = 0;
  c->has_header_len = c->expect_continue = c->chunked = 0;
  ifd_restrict_scan_reset(&c->rscan);
  ifd__fwd_reset(&c->fwd);
  if (c->cloud != NULL) {
    c->cloud->ctype_len = c->cloud->redirect_len = c->cloud->target_len = 0;
    c->cloud->has_ctype = c->cloud->has_redirect = c->cloud->too_long = 0;
    c->cloud->has_target = 0;
  }
}

static int on_message_begin(llhttp_t *p) {
  ifd_http_conn_t *c = conn_of(p);

  reset_msg(c);
  c->t_begin = uv_hrtime();
  c->hdr_bytes = 0;
  c->n_headers = 0;
  c->msg_seq++;
  c->in_headers = 1;
  /* The header clock starts at the request's first byte. */
  ifd__conn_deadline(&c->base, TQ_HEADER);
  return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t n) {
  ifd_http_conn_t *c = conn_of(p);

  if (count_header_bytes(c, n) != 0) return -1;
  if (n > MAX_URL - c->url_len) return fail(c, 400, "request URL too long");
  if (c->url_len + n > c->url_cap) {
    char *u = malloc(MAX_URL);
    if (u == NULL) return fail(c, 500, "out of memory");
    memcpy(u, c->url, c->url_len);
    c->url = u;
    c->url_cap = MAX_URL;
  }
  memcpy(c->url + c->url_len, at, n);
  c->url_len += n;
  return 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t n) {
  ifd_http_conn_t *c = conn_of(p);
  size_t i;

  if (count_header_bytes(c, n) != 0) return -1;
  if (c->h->restrict_api != NULL)
    ifd_restrict_scan_name(c->h->restrict_api, &c->rscan, at, n);
  if (c->h->fwd_re != NULL && ifd__fwd_name(&c->fwd, at, n) != 0)
    return fail(c, 500, "out of memory");
  /* Only short names interest us; a longer one is marked and skipped. */
  if (c->hname_len > sizeof(c->hname) || n > sizeof(c->hname) - c->hname_len) {
    c->hname_len = sizeof(c->hname) + 1;
    return 0;
  }
  for (i = 0; i < n; i++) {
    char ch = at[i];
    c->hname[c->hname_len++] = (ch >= 'A' && ch <= 'Z') ? (char)(ch + 32) : ch;
  }
  return 0;
}

#define HNAME_IS(c, lit)                \
  ((c)->hname_len == sizeof(lit) - 1 && \
   memcmp((c)->hname, lit, sizeof(lit) - 1) == 0)

/* 1 Expect, 2 Inference-Header-Content-Length; on a cloud endpoint's
 * listener also 3 Content-Type, 4 X-Vertex-Ai-Triton-Redirect, 5
 * X-Amzn-SageMaker-Target-Model. */
static int wanted_header(const ifd_http_conn_t *c) {
  if (HNAME_IS(c, "expect")) return 1;
  if (HNAME_IS(c, "inference-header-content-length")) return 2;
  if (c->h->cloud == NULL) return 0;
  if (HNAME_IS(c, "content-type")) return 3;
  if (HNAME_IS(c, "x-vertex-ai-triton-redirect")) return 4;
  if (HNAME_IS(c, "x-amzn-sagemaker-target-model")) return 5;
  return 0;
}

/* Appends a piece of a cloud endpoint's header value. Returns 0 or -1
 * (out of memory: answered). */
static int cloud_value(ifd_http_conn_t *c, int which, const char *at,
                       size_t n) {
  ifd_http_cloud_hdrs_t *ch = c->cloud;
  char *buf;
  size_t *len;

  if (ch == NULL) {
    ch = c->cloud = calloc(1, sizeof(*ch));
    if (ch == NULL) return fail(c, 500, "out of memory");
  }
  buf = which == 3 ? ch->ctype : which == 4 ? ch->redirect : ch->target;
  len = which == 3   ? &ch->ctype_len
        : which == 4 ? &ch->redirect_len
                     : &ch->target_len;
  if (n > IFD_HTTP_CLOUD_HDR_MAX - *len) {
    ch->too_long = 1;
    return 0;
  }
  memcpy(buf + *len, at, n);
  *len += n;
  return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t n) {
  ifd_http_conn_t *c = conn_of(p);
  int which;

  if (count_header_bytes(c, n) != 0) return -1;
  if (c->h->restrict_api != NULL)
    ifd_restrict_scan_value(c->h->restrict_api, &c->rscan, at, n);
  if (c->h->fwd_re != NULL && ifd__fwd_value(&c->fwd, at, n) != 0)
    return fail(c, 500, "out of memory");
  which = wanted_header(c);
  if (which == 0) return 0;
  if (which >= 3) return cloud_value(c, which, at, n);
  if (c->hval_len > sizeof(c->hval) || n > sizeof(c->hval) - c->hval_len) {
    c->hval_len = sizeof(c->hval) + 1;
    return 0;
  }
  memcpy(c->hval + c->hval_len, at, n);
  c->hval_len += n;
  return 0;
}

static int on_header_value_complete(llhttp_t *p) {
  ifd_http_conn_t *c = conn_of(p);
  int which = wanted_header(c);
  size_t i, n = c->hval_len;
  uint64_t v = 0;

  if (c->h->restrict_api != NULL)
    ifd_restrict_scan_done(c->h->restrict_api, &c->rscan);
  if (c->h->fwd_re != NULL && ifd__fwd_end(&c->fwd, c->h->fwd_re) != 0)
    return fail(c, 500, "out of memory");
  c->hname_len = 0;
  c->hval_len = 0;
  /* ": " and CRLF, which no callback reports. */
  if (count_header_bytes(c, 4) != 0) return -1;
  if (++c->n_headers > c->h->max_headers)
    return fail_limit(c, 431, IFD_CONN_LIMIT_HEADER_COUNT,
                      "too many request header fields (--http-max-headers)");
  if (which >= 3) {
    if (cloud_value(c, which, "", 0) != 0) return -1; /* an empty value */
    if (which == 3)
      c->cloud->has_ctype = 1;
    else if (which == 4)
      c->cloud->has_redirect = 1;
    else
      c->cloud->has_target = 1;
  } else if (which == 1) {
    c->expect_continue =
        n == 12 && strncasecmp(c->hval, "100-continue", 12) == 0;
  } else if (which == 2) {
    if (n == 0 || n > 19) goto out_bad;
    for (i = 0; i < n; i++) {
      if (c->hval[i] < '0' || c->hval[i] > '9') goto out_bad;
      v = v * 10 + (uint64_t)(c->hval[i] - '0');
    }
    c->header_len = v;
    c->has_header_len = 1;
  }
  return 0;

out_bad:
  return fail(c, 400, "invalid Inference-Header-Content-Length header");
}

static int on_headers_complete(llhttp_t *p) {
  ifd_http_conn_t *c = conn_of(p);
  ifd_http_t *h = c->h;
  char msg[160];

  c->in_headers = 0;
  ifd__conn_deadline_clear(&c->base);
  if (p->flags & F_CHUNKED) {
    c->chunked = 1;
  } else if (p->content_length > 0) {
    if (p->content_length > h->max_input_size) {
      snprintf(msg, sizeof(msg),
               "request body of %llu bytes exceeds the limit of %llu bytes "
               "(--http-max-input-size)",
               (unsigned long long)p->content_length,
               (unsigned long long)h->max_input_size);
      return fail(c, 400, msg);
    }
    /* Nothing is allocated for a declared length: the buffer grows as the
     * bytes arrive (body_reserve). */
    c->body_need = (size_t)p->content_length;
  }
  if (c->expect_continue && (c->chunked || c->body_need > 0)) {
    ifd_http_slot_t *s = slot_push(c);
    if (s == NULL) return fail(c, 500, "out of memory");
    s->keep_alive = 1;
    slot_static(s, continue_response, sizeof(continue_response) - 1);
  }
  if (c->chunked || c->body_need > 0) {
    c->in_body = 1;
    c->body_mark = 0;
    ifd__conn_deadline(&c->base, TQ_BODY);
  }
  return 0;
}

/* Restarts the body clock once BODY_PROGRESS more bytes arrived. */
static void body_progress(ifd_http_conn_t *c) {
  if (c->body_len - c->body_mark < BODY_PROGRESS) return;
  c->body_mark = c->body_len;
  ifd__conn_touch(&c->base);
}

/* Makes room for `n` more body bytes (body_len + n <= limit): the buffer
 * doubles from BODY_FIRST_CHUNK, capped at `limit` (the Content-Length, or
 * max_input_size for a chunked body), so it never holds much more than twice
 * the bytes received. Returns 0 or IFD_ENOMEM. */
static int body_reserve(ifd_http_conn_t *c, size_t n, size_t limit) {
  size_t want = c->body_len + n, cap;
  char *b;

  if (want <= c->body_cap) return 0;
  cap = c->body_cap != 0 ? c->body_cap * 2 : BODY_FIRST_CHUNK;
  if (cap < want) cap = want;
  if (cap > limit) cap = limit;
  b = realloc(c->body, cap);
  if (b == NULL) return IFD_ENOMEM;
  c->body = b;
  c->body_cap = cap;
  return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n) {
  ifd_http_conn_t *c = conn_of(p);
  size_t limit = c->chunked ? c->h->max_input_size : c->body_need;

  /* Read straight into the body by on_alloc: nothing to copy. */
  if (c->body != NULL && at == c->body + c->body_len) {
    c->body_len += n;
    body_progress(c);
    return 0;
  }
  if (n > limit - c->body_len) {
    if (!c->chunked) /* NEVER: llhttp stops the body at Content-Length */
      return fail(c, 400, "request body longer than its Content-Length");
    return fail(c, 400,
                "request body exceeds the limit (--http-max-input-size)");
  }
  if (body_reserve(c, n, limit) != 0) return fail(c, 500, "out of memory");
  memcpy(c->body + c->body_len, at, n);
  c->body_len += n;
  body_progress(c);
  return 0;
}

static int on_message_complete(llhttp_t *p) {
  ifd_http_conn_t *c = conn_of(p);
  ifd_http_slot_t *s = slot_push(c);
  ifd_http_msg_t msg;
  char *q;

  c->in_body = 0;
  ifd__conn_deadline_clear(&c->base);
  if (s == NULL) return fail(c, 500, "out of memory");
  s->keep_alive = llhttp_should_keep_alive(p) != 0;
  s->http10 = p->http_major == 1 && p->http_minor == 0;
  if (!s->keep_alive || c->stopping) {
    s->close_after = 1;
    c->no_more = 1;
  }
  memset(&msg, 0, sizeof(msg));
  msg.method = p->method == HTTP_GET      ? IFD_HTTP_GET
               : p->method == HTTP_POST   ? IFD_HTTP_POST
               : p->method == HTTP_DELETE ? IFD_HTTP_DELETE
                                          : IFD_HTTP_OTHER;
  msg.path = c->url;
  q = memchr(c->url, '?', c->url_len);
  msg.path_len = q != NULL ? (size_t)(q - c->url) : c->url_len;
  msg.body = c->body;
  msg.body_len = c->body_len;
  msg.header_len = c->header_len;
  msg.has_header_len = c->has_header_len;
  msg.t_received = c->t_begin;
  msg.restrict_ok = c->rscan.ok;
  msg.fwd = c->fwd.data;
  msg.fwd_len = c->fwd.len;
  msg.fwd_n = c->fwd.n;
  msg.cloud = c->cloud;
  c->body = NULL; /* the dispatch owns it now */
  c->body_len = c->body_cap = c->body_need = 0;
  ifd__http_dispatch(c->h, s, &msg);
  /* Enough queued (max_pipeline): feed keeps the rest of the bytes. */
  return c->no_more || c->n_slots >= c->h->max_pipeline ? HPE_PAUSED : 0;
}

/* ---- reading and writing ------------------------------------------------- */

static void on_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *buf) {
  ifd_http_conn_t *c = hd->data;
  size_t left;

  (void)suggested;
  /* Inside a Content-Length body the next bytes are body bytes: read them
   * into place. */
  if (!c->no_more && !c->chunked && c->body_need > c->body_len &&
      c->body_need - c->body_len >= DIRECT_READ_MIN &&
      body_reserve(c, DIRECT_READ_MIN, c->body_need) == 0) {
    left = c->body_cap - c->body_len;
    if (left > UINT32_MAX) left = UINT32_MAX;
    *buf = uv_buf_init(c->body + c->body_len, (unsigned)left);
    return;
  }
  *buf = uv_buf_init(c->h->rbuf, READ_BUF_SIZE);
}

static void stop_reading(ifd_http_conn_t *c) {
  ifd__conn_read_stop(&c->base);
}

/* Parses `n` bytes. When llhttp pauses for the pipeline bound, the bytes
 * it did not parse are copied to c->pending (the read buffer is shared) and
 * reading stops until resume_reading. */
static void feed(ifd_http_conn_t *c, const char *data, size_t n) {
  int was_in_headers = c->in_headers;
  uint32_t seq = c->msg_seq, before = c->hdr_bytes;
  llhttp_errno_t rc;
  char msg[200];

  rc = llhttp_execute(&c->parser, data, n);
  /* The whole read was header bytes of one message: count it exactly
   * (whitespace and the like reach no callback). */
  if (rc == HPE_OK && was_in_headers && c->in_headers && c->msg_seq == seq &&
      (uint64_t)before + n > c->hdr_bytes)
    c->hdr_bytes = before + (uint32_t)(n < UINT32_MAX ? n : UINT32_MAX);
  if (rc == HPE_PAUSED && !c->no_more) {
    const char *pos = llhttp_get_error_pos(&c->parser);
    size_t left = pos != NULL && pos >= data && pos <= data + n
                      ? (size_t)(data + n - pos)
                      : 0;
    llhttp_resume(&c->parser);
    stop_reading(c);
    c->read_paused = 1;
    ifd__conn_deadline_clear(&c->base); /* not reading: no clock runs */
    if (left > 0) {
      c->pending = malloc(left);
      if (c->pending == NULL) {
        close_conn(c, 0);
        return;
      }
      memcpy(c->pending, pos, left);
      c->pending_len = left;
    }
    return;
  }
  if (rc != HPE_OK && !(rc == HPE_PAUSED && c->no_more)) {
    snprintf(msg, sizeof(msg), "malformed HTTP request: %s",
             llhttp_get_error_reason(&c->parser) != NULL
                 ? llhttp_get_error_reason(&c->parser)
                 : llhttp_errno_name(rc));
    fail(c, 400, msg);
  } else if (!c->no_more && c->in_headers &&
             c->hdr_bytes > c->h->max_header_bytes) {
    fail_limit(c, 431, IFD_CONN_LIMIT_HEADER_SIZE,
               "request header fields too large (--http-max-header-bytes)");
  }
  if (c->no_more) {
    stop_reading(c);
    ifd__conn_deadline_clear(&c->base);
    /* The error slot could not be allocated: nothing left to say. */
    if (c->head == NULL) close_conn(c, 0);
  }
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  ifd_http_conn_t *c = st->data;

  if (nread == 0) return;
  if (nread < 0) {
    /* End of input while requests are in flight: HTTP/1.1 cannot tell a
     * client that half-closed from one that left, and one that left is the
     * case that matters (a client's timeout): like Go's net/http, the
     * client is taken as gone. The connection closes, and on_free cancels
     * its submitted requests; their responses are never written. */
    close_conn(c, 0);
    return;
  }
  if (c->no_more || c->base.closing) return;
  feed(c, buf->base, (size_t)nread);
}

/* Half the pipelined answers are out (deferred from on_write): parse what
 * was kept, then read again (unless that paused once more). */
static void resume_reading(ifd_conn_t *base) {
  ifd_http_conn_t *c = (ifd_http_conn_t *)base;
  char *p = c->pending;
  size_t n = c->pending_len;

  if (!c->read_paused || c->no_more) return;
  c->read_paused = 0;
  c->pending = NULL;
  c->pending_len = 0;
  if (p != NULL) {
    feed(c, p, n);
    free(p);
  }
  if (c->read_paused || c->no_more || c->base.closing) return;
  if (c->in_headers)
    ifd__conn_deadline(&c->base, TQ_HEADER);
  else if (c->in_body)
    ifd__conn_deadline(&c->base, TQ_BODY);
  else if (c->head == NULL)
    ifd__conn_deadline(&c->base, TQ_IDLE);
  ifd__conn_read_start(&c->base, on_alloc, on_read);
}

static void flush(ifd_http_conn_t *c);

static void on_write(uv_write_t *w, int status) {
  ifd_http_conn_t *c = ifd_container_of(w, ifd_http_conn_t, wreq);
  unsigned i, k = c->n_writing;
  int close_after = 0;

  c->n_writing = 0;
  for (i = 0; i < k; i++) {
    ifd_http_slot_t *s = c->head;
    c->head = s->next;
    if (c->head == NULL) c->tail = NULL;
    c->n_slots--;
    close_after |= s->close_after;
    ifd__http_slot_free(s);
  }
  /* A stream whose first pieces went out stays at the head. */
  if (c->head != NULL && c->head->n_pieces_writing != 0) {
    pieces_drop(c->head, c->head->n_pieces_writing);
    c->head->n_pieces_writing = 0;
  }
  if (c->base.closing) return;
  if (status < 0) {
    close_conn(c, 0);
    return;
  }
  if (close_after && c->error_sent && !c->stopping && c->head == NULL &&
      ifd__conn_shutdown(&c->base) == 0) {
    /* An error ended the request early: the client may still be sending.
     * Read and discard (on_read: no_more) until it closes or LINGER_MS. */
    ifd__conn_deadline(&c->base, TQ_LINGER);
    ifd__conn_read_start(&c->base, on_alloc, on_read);
    return;
  }
  if (close_after || (c->head == NULL && c->stopping)) {
    close_conn(c, 1);
    return;
  }
  /* Not here: this may run in the flusher, where requests parsed now would
   * wait for the loop's next wake-up (ifd__conn_defer). */
  if (c->read_paused && c->n_slots <= c->h->max_pipeline / 2 &&
      ifd__conn_defer(&c->base) != 0) {
    close_conn(c, 0);
    return;
  }
  /* Nothing in flight and no request begun: idle from now. */
  if (c->head == NULL && !c->in_headers && !c->in_body && !c->no_more &&
      !c->read_paused)
    ifd__conn_deadline(&c->base, TQ_IDLE);
  flush(c);
}

/* How many of s's pieces fit `room` iovecs (all when they do). */
static unsigned pieces_fit(const ifd_http_slot_t *s, unsigned room, int *all) {
  const ifd_http_piece_t *p;
  unsigned n = 0;

  for (p = s->pieces; p != NULL && n < room; p = p->next) n++;
  *all = p == NULL;
  return n;
}

/* Writes the ready slots at the head of the FIFO in one uv_write: whole
 * answers, and the pieces queued so far of a streamed answer, behind which
 * the rest waits. */
static void flush(ifd_http_conn_t *c) {
  uv_buf_t stack[64], *bufs = stack;
  ifd_http_slot_t *s, *part = NULL;
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
      close_conn(c, 0);
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
      close_conn(c, 0);
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
      close_conn(c, 0);
    }
  }
  if (bufs != stack) free(bufs);
}

static void on_flush(ifd_conn_t *base) {
  flush((ifd_http_conn_t *)base);
}

/* ---- connection life ------------------------------------------------------
 */

/* Runs once every handle is closed: a write in flight has been cancelled
 * (on_write ran), so the slots can go. */
static void on_free(ifd_conn_t *base) {
  ifd_http_conn_t *c = (ifd_http_conn_t *)base;
  ifd_http_slot_t *s, *next;

  for (s = c->head; s != NULL; s = next) {
    next = s->next;
    if (s->load != NULL) { /* a model load's answer: no longer wanted */
      ifd_load_call_forget(s->load);
      s->load = NULL;
    }
    if (s->shm != NULL) { /* a shared-memory (un)register's answer */
      ifd_shm_call_forget(s->shm);
      s->shm = NULL;
    }
    if (s->req != NULL && !s->answered) {
      s->conn = NULL; /* an orphan: its response callback frees it */
      s->next = NULL;
      if (s->job != NULL)
        ifd__http_infer_cancel(s);
      else
        /* Submitted: the client will never read its answer, so the
         * request is cancelled (a queued one is dropped and answered at
         * once, which frees the orphan: `s` is not touched again). */
        ifd_request_cancel(s->req);
    } else {
      ifd__http_slot_free(s);
    }
  }
  free(c->body);
  free(c->pending);
  if (c->url != c->url_inline) free(c->url);
  ifd__fwd_free(&c->fwd);
  free(c->cloud);
}

static void on_closing(ifd_conn_t *base) {
  (void)base;
}

/* Closes now, or after a FIN (graceful: the last response is out). */
static void close_conn(ifd_http_conn_t *c, int graceful) {
  ifd__conn_close(&c->base, graceful && c->n_writing == 0);
}

static int on_open(ifd_conn_t *base) {
  ifd_http_conn_t *c = (ifd_http_conn_t *)base;
  ifd_http_t *h = ifd_container_of(base->set, ifd_http_t, set);

  c->h = h;
  c->url = c->url_inline;
  c->url_cap = sizeof(c->url_inline);
  llhttp_init(&c->parser, HTTP_REQUEST, &h->settings);
  c->parser.data = c;
  ifd__conn_deadline(base, TQ_IDLE);
  return ifd__conn_read_start(base, on_alloc, on_read);
}

/* Shutdown: no further requests; idle connections close now, busy ones once
 * their last response is written (on_write). That last response says
 * `Connection: close` when its head is not built yet (it is built when the
 * core answers), so the client knows not to send another request. A request
 * read only in part is dropped. Nothing more to do when the core is drained:
 * the responses already came; at the deadline net/conn.c closes what is
 * left. */
static void on_stop(ifd_conn_t *base, ifd_conn_phase_t phase) {
  ifd_http_conn_t *c = (ifd_http_conn_t *)base;

  (void)phase;
  c->stopping = 1;
  c->no_more = 1;
  stop_reading(c);
  ifd__conn_deadline_clear(base);
  if (c->head == NULL) {
    close_conn(c, 0);
    return;
  }
  if (!c->tail->ready && !c->tail->streaming) c->tail->close_after = 1;
}

/* A deadline passed (see "Limits" at the top). */
static void on_expire(ifd_conn_t *base, unsigned q) {
  ifd_http_conn_t *c = (ifd_http_conn_t *)base;

  if (q == TQ_LINGER) {
    close_conn(c, 0);
    return;
  }
  if (q == TQ_IDLE) {
    ifd__conn_count_limit(base, IFD_CONN_LIMIT_IDLE_TIMEOUT);
    close_conn(c, 1);
    return;
  }
  if (q == TQ_HEADER)
    fail_limit(c, 408, IFD_CONN_LIMIT_HEADER_TIMEOUT,
               "timed out waiting for the request headers "
               "(--http-header-timeout-secs)");
  else
    fail_limit(c, 408, IFD_CONN_LIMIT_BODY_TIMEOUT,
               "timed out waiting for the request body "
               "(--http-body-timeout-secs)");
  stop_reading(c);
  if (c->head == NULL) close_conn(c, 0); /* no memory for the answer */
}

static const ifd_conn_proto_t http_proto = {
    .name = "HTTP",
    .label = "http",
    .size = sizeof(ifd_http_conn_t),
    .on_open = on_open,
    .on_flush = on_flush,
    .on_timer = NULL,
    .on_stop = on_stop,
    .on_closing = on_closing,
    .on_free = on_free,
    .on_expire = on_expire,
    .on_deferred = resume_reading,
};

/* The metrics listener: the same connections, counted apart. */
static const ifd_conn_proto_t metrics_proto = {
    .name = "metrics HTTP",
    .label = "metrics",
    .size = sizeof(ifd_http_conn_t),
    .on_open = on_open,
    .on_flush = on_flush,
    .on_timer = NULL,
    .on_stop = on_stop,
    .on_closing = on_closing,
    .on_free = on_free,
    .on_expire = on_expire,
    .on_deferred = resume_reading,
};

/* ---- start and stop --------------------------------------------------------
 */

static void on_set_closed(ifd_conn_set_t *set) {
  ifd_http_t *h = ifd_container_of(set, ifd_http_t, set);
  void (*done)(void *) = h->done;
  void *arg = h->done_arg;

  ifd__http_mme_close(h->mme);
  free(h);
  if (done != NULL) done(arg);
}

int ifd_http_start(uv_loop_t *loop, ifd_server_t *server,
                   const ifd_http_opts_t *opts, ifd_http_t **out,
                   ifd_errmsg_t *err) {
  const char *host = opts->host != NULL ? opts->host : "0.0.0.0";
  int rc;
  ifd_http_t *h;

  h = calloc(1, sizeof(*h));
  if (h == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  h->loop = loop;
  h->server = server;
  h->metrics_only = opts->metrics_only;
  h->metrics = opts->metrics;
  h->restrict_api =
      opts->restrict_api != NULL && opts->restrict_api->n_rules != 0
          ? opts->restrict_api
          : NULL;
  h->fwd_re = opts->forward_headers;
  h->cloud = opts->cloud;
  h->max_input_size = opts->max_input_size != 0
                          ? opts->max_input_size
                          : IFD_HTTP_DEFAULT_MAX_INPUT_SIZE;
  h->json_offload_bytes = opts->json_offload_bytes != 0
                              ? opts->json_offload_bytes
                              : IFD_HTTP_DEFAULT_JSON_OFFLOAD_BYTES;
  llhttp_settings_init(&h->settings);
  h->settings.on_message_begin = on_message_begin;
  h->settings.on_url = on_url;
  h->settings.on_header_field = on_header_field;
  h->settings.on_header_value = on_header_value;
  h->settings.on_header_value_complete = on_header_value_complete;
  h->settings.on_headers_complete = on_headers_complete;
  h->settings.on_body = on_body;
  h->settings.on_message_complete = on_message_complete;

  h->set.tls = opts->tls; /* before any accept: the loop is not running */
  h->set.unix_perm = opts->unix_perm;
  h->overload_429 = opts->overload_429;
  h->retry_after_secs = opts->retry_after_secs;
  h->max_header_bytes = opts->max_header_bytes != 0
                            ? opts->max_header_bytes
                            : IFD_HTTP_DEFAULT_MAX_HEADER_BYTES;
  h->max_headers =
      opts->max_headers != 0 ? opts->max_headers : IFD_HTTP_DEFAULT_MAX_HEADERS;
  h->max_pipeline = opts->max_pipeline != 0 ? opts->max_pipeline
                                            : IFD_HTTP_DEFAULT_MAX_PIPELINE;

  rc = ifd__conn_set_start(
      &h->set, loop, opts->metrics_only ? &metrics_proto : &http_proto, host,
      opts->port, opts->reuse_port,
      opts->max_connections != 0 ? opts->max_connections
                                 : IFD_HTTP_DEFAULT_MAX_CONNECTIONS,
      err);
  ifd__conn_set_timeout(&h->set, TQ_HEADER, opts->header_timeout_ms);
  ifd__conn_set_timeout(&h->set, TQ_BODY, opts->body_timeout_ms);
  ifd__conn_set_timeout(&h->set, TQ_IDLE, opts->idle_timeout_ms);
  ifd__conn_set_timeout(&h->set, TQ_LINGER, LINGER_MS);
  if (rc != 0) {
    ifd__conn_set_stop(&h->set, 0, on_set_closed);
    return rc;
  }
  *out = h;
  return 0;
}

void ifd_http_stop(ifd_http_t *h, uint64_t deadline_ms, void (*done)(void *arg),
                   void *arg) {
  h->done = done;
  h->done_arg = arg;
  ifd__conn_set_stop(&h->set, deadline_ms, on_set_closed);
}

void ifd_http_drained(ifd_http_t *h) {
  ifd__conn_set_close(&h->set);
}
