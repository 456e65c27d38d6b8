/*
 * net/http1.c - the HTTP/1.1 transport's listener and connections: llhttp
 * on libuv (its answers and writes: net/http1_write.c).
 *
 * Reading. All connections share one 64 KiB read buffer owned by the
 * transport: libuv calls alloc, read and the read callback back to back for one
 * stream, and the callback parses everything before returning, so no bytes
 * wait in it between reads and an idle connection holds no buffer. The URL
 * and the two headers we need are copied out as llhttp reports them. A body
 * goes into ONE buffer of the shared buffer pool (base/bufpool.h: a big
 * one's pages stay mapped between requests): allocated whole when its headers
 * are complete if its Content-Length is at most body_prealloc_max
 * (--http-body-prealloc-size), otherwise grown as its bytes arrive
 * (doubling, up to Content-Length, or max_input_size for chunked bodies), so
 * a longer declared length alone allocates nothing; once a body has started,
 * alloc hands libuv the free part of that buffer directly, so a large body
 * is read into place.
 * The buffer moves to the application with the message (msg->body): an
 * inference request keeps it as its body, and binary tensors point into it,
 * zero copy.
 *
 * Dispatch. Each parsed message appends a slot (net/http1_write.c) to the
 * connection's FIFO and goes to the application's dispatch handler with its
 * application object; the transport knows no route.
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
 * Slots still waiting for a response then go to the application's orphan
 * handler (slot->conn = NULL): it keeps the ones whose work is in flight
 * and drops their answer when it arrives, so nothing points at a freed
 * connection.
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

#include "base/bufpool.h"
#include "base/check.h"
#include "base/log.h"
#include "base/util.h"
#include "net/http1_internal.h"

#define MAX_URL 8192
/* The clock of a body restarts each time this many bytes of it arrived. */
#define BODY_PROGRESS ((size_t)1 << 20)
/* A body read goes straight into the body buffer when this much is left. */
#define DIRECT_READ_MIN 4096
/* The first allocation of a body, before it doubles as bytes arrive. */
#define BODY_FIRST_CHUNK 65536

static const char continue_response[] = "HTTP/1.1 100 Continue\r\n\r\n";

/* Answers `status` with {"error": msg} and closes once written; parsing
 * stops. Returns -1 for llhttp callbacks to return. */
static int fail(ifd_http1_conn_t *c, int status, const char *msg) {
  ifd_http1_slot_t *s;

  c->no_more = 1;
  if (c->error_sent) return -1;
  c->error_sent = 1;
  s = ifd__http1_slot_push(c);
  if (s == NULL) return -1; /* close_conn follows from the read callback */
  s->close_after = 1;
  ifd__http1_slot_error(s, status, msg);
  return -1;
}

/* Answers a limit with `status` (fail) and counts it; reading stops. */
static int fail_limit(ifd_http1_conn_t *c, int status, ifd_conn_limit_t why,
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
static int count_header_bytes(ifd_http1_conn_t *c, size_t n) {
  if (c->hdr_bytes > c->h->max_header_bytes ||
      n > c->h->max_header_bytes - c->hdr_bytes)
    return fail_limit(c, 431, IFD_CONN_LIMIT_HEADER_SIZE,
                      "request header fields too large "
                      "(--http-max-header-bytes)");
  c->hdr_bytes += (uint32_t)n;
  return 0;
}

/* ---- llhttp callbacks ---------------------------------------------------- */

static ifd_http1_conn_t *conn_of(llhttp_t *p) {
  return p->data;
}

static void reset_msg(ifd_http1_conn_t *c) {
  ifd_bufpool_put(c->body);
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
  ifd_http1_conn_t *c = conn_of(p);

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
  ifd_http1_conn_t *c = conn_of(p);

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
  ifd_http1_conn_t *c = conn_of(p);
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
static int wanted_header(const ifd_http1_conn_t *c) {
  if (HNAME_IS(c, "expect")) return 1;
  if (HNAME_IS(c, "inference-header-content-length")) return 2;
  if (!c->h->cloud_headers) return 0;
  if (HNAME_IS(c, "content-type")) return 3;
  if (HNAME_IS(c, "x-vertex-ai-triton-redirect")) return 4;
  if (HNAME_IS(c, "x-amzn-sagemaker-target-model")) return 5;
  return 0;
}

/* Appends a piece of a cloud endpoint's header value. Returns 0 or -1
 * (out of memory: answered). */
static int cloud_value(ifd_http1_conn_t *c, int which, const char *at,
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
  ifd_http1_conn_t *c = conn_of(p);
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
  ifd_http1_conn_t *c = conn_of(p);
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
  ifd_http1_conn_t *c = conn_of(p);
  ifd_http1_t *h = c->h;
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
    c->body_need = (size_t)p->content_length;
    /* A length within body_prealloc_max is allocated whole now, so the body
     * is read into place with no growth copy. A longer one gets nothing
     * for its declaration: its buffer grows as the bytes arrive
     * (body_reserve), so a client that declares much and sends slowly
     * holds little. Without the memory now, growing is tried later. */
    if (c->body_need <= h->body_prealloc_max) {
      c->body = ifd_bufpool_get(ifd_bufpool_shared(), c->body_need);
      if (c->body != NULL) c->body_cap = c->body_need;
    }
  }
  if (c->expect_continue && (c->chunked || c->body_need > 0)) {
    ifd_http1_slot_t *s = ifd__http1_slot_push(c);
    if (s == NULL) return fail(c, 500, "out of memory");
    s->keep_alive = 1;
    ifd__http1_slot_static(s, continue_response, sizeof(continue_response) - 1);
  }
  if (c->chunked || c->body_need > 0) {
    c->in_body = 1;
    c->body_mark = 0;
    ifd__conn_deadline(&c->base, TQ_BODY);
  }
  return 0;
}

/* Restarts the body clock once BODY_PROGRESS more bytes arrived. */
static void body_progress(ifd_http1_conn_t *c) {
  if (c->body_len - c->body_mark < BODY_PROGRESS) return;
  c->body_mark = c->body_len;
  ifd__conn_touch(&c->base);
}

/* Makes room for `n` more body bytes (body_len + n <= limit): the buffer
 * doubles from BODY_FIRST_CHUNK, capped at `limit` (the Content-Length, or
 * max_input_size for a chunked body), so it never holds much more than twice
 * the bytes received. Returns 0 or IFD_ENOMEM. */
static int body_reserve(ifd_http1_conn_t *c, size_t n, size_t limit) {
  size_t want = c->body_len + n, cap;
  char *b;

  if (want <= c->body_cap) return 0;
  cap = c->body_cap != 0 ? c->body_cap * 2 : BODY_FIRST_CHUNK;
  if (cap < want) cap = want;
  if (cap > limit) cap = limit;
  b = ifd_bufpool_grow(ifd_bufpool_shared(), c->body, c->body_len, cap);
  if (b == NULL) return IFD_ENOMEM;
  c->body = b;
  c->body_cap = cap;
  return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n) {
  ifd_http1_conn_t *c = conn_of(p);
  size_t limit = c->chunked ? c->h->max_input_size : c->body_need;

  /* Read straight into the body by on_alloc: nothing to copy. */
  if (c->body != NULL && at == c->body + c->body_len) {
    c->body_len += n;
    body_progress(c);
    return 0;
  }
  if (n > limit - c->body_len) {
    if (NEVER(!c->chunked)) /* llhttp stops the body at Content-Length */
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
  ifd_http1_conn_t *c = conn_of(p);
  ifd_http1_slot_t *s = ifd__http1_slot_push(c);
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
  c->h->handlers->dispatch(c->h->app, s, &msg);
  /* Enough queued (max_pipeline): feed keeps the rest of the bytes. */
  return c->no_more || c->n_slots >= c->h->max_pipeline ? HPE_PAUSED : 0;
}

/* ---- reading and writing ------------------------------------------------- */

static void on_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *buf) {
  ifd_http1_conn_t *c = hd->data;
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

static void stop_reading(ifd_http1_conn_t *c) {
  ifd__conn_read_stop(&c->base);
}

/* Parses `n` bytes. When llhttp pauses for the pipeline bound, the bytes
 * it did not parse are copied to c->pending (the read buffer is shared) and
 * reading stops until resume_reading. */
static void feed(ifd_http1_conn_t *c, const char *data, size_t n) {
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
        ifd__http1_close(c, 0);
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
    if (c->head == NULL) ifd__http1_close(c, 0);
  }
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  ifd_http1_conn_t *c = st->data;

  if (nread == 0) return;
  if (nread < 0) {
    /* End of input while requests are in flight: HTTP/1.1 cannot tell a
     * client that half-closed from one that left, and one that left is the
     * case that matters (a client's timeout): like Go's net/http, the
     * client is taken as gone. The connection closes, and on_free cancels
     * its submitted requests; their responses are never written. */
    ifd__http1_close(c, 0);
    return;
  }
  if (c->no_more || c->base.closing) return;
  feed(c, buf->base, (size_t)nread);
}

void ifd__http1_read_start(ifd_http1_conn_t *c) {
  ifd__conn_read_start(&c->base, on_alloc, on_read);
}

/* Half the pipelined answers are out (deferred from on_write): parse what
 * was kept, then read again (unless that paused once more). */
static void resume_reading(ifd_conn_t *base) {
  ifd_http1_conn_t *c = (ifd_http1_conn_t *)base;
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
  ifd__http1_read_start(c);
}

/* ---- connection life ------------------------------------------------------
 */

/* Runs once every handle is closed: a write in flight has been cancelled
 * (on_write ran), so the slots can go. */
static void on_free(ifd_conn_t *base) {
  ifd_http1_conn_t *c = (ifd_http1_conn_t *)base;
  ifd_http1_slot_t *s, *next;

  for (s = c->head; s != NULL; s = next) {
    next = s->next;
    s->conn = NULL;
    s->next = NULL;
    /* The application may keep it as an orphan (and free it at once, from
     * inside the call: `s` is not touched again then). */
    if (c->h->handlers->orphan == NULL || !c->h->handlers->orphan(s))
      ifd_http1_slot_free(s);
  }
  ifd_bufpool_put(c->body);
  free(c->pending);
  if (c->url != c->url_inline) free(c->url);
  ifd__fwd_free(&c->fwd);
  free(c->cloud);
}

static void on_closing(ifd_conn_t *base) {
  (void)base;
}

void ifd__http1_close(ifd_http1_conn_t *c, int graceful) {
  ifd__conn_close(&c->base, graceful && c->n_writing == 0);
}

static int on_open(ifd_conn_t *base) {
  ifd_http1_conn_t *c = (ifd_http1_conn_t *)base;
  ifd_http1_t *h = ifd_container_of(base->set, ifd_http1_t, set);

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
 * application answers), so the client knows not to send another request. A
 * request read only in part is dropped. Nothing more to do when the
 * application is drained: the responses already came; at the deadline
 * net/conn.c closes what is left. */
static void on_stop(ifd_conn_t *base, ifd_conn_phase_t phase) {
  ifd_http1_conn_t *c = (ifd_http1_conn_t *)base;

  (void)phase;
  c->stopping = 1;
  c->no_more = 1;
  stop_reading(c);
  ifd__conn_deadline_clear(base);
  if (c->head == NULL) {
    ifd__http1_close(c, 0);
    return;
  }
  if (!c->tail->ready && !c->tail->streaming) c->tail->close_after = 1;
}

/* A deadline passed (see "Limits" at the top). */
static void on_expire(ifd_conn_t *base, unsigned q) {
  ifd_http1_conn_t *c = (ifd_http1_conn_t *)base;

  if (q == TQ_LINGER) {
    ifd__http1_close(c, 0);
    return;
  }
  if (q == TQ_IDLE) {
    ifd__conn_count_limit(base, IFD_CONN_LIMIT_IDLE_TIMEOUT);
    ifd__http1_close(c, 1);
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
  if (c->head == NULL) ifd__http1_close(c, 0); /* no memory for the answer */
}

static const ifd_conn_proto_t http_proto = {
    .name = "HTTP",
    .label = "http",
    .size = sizeof(ifd_http1_conn_t),
    .on_open = on_open,
    .on_flush = ifd__http1_on_flush,
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
    .size = sizeof(ifd_http1_conn_t),
    .on_open = on_open,
    .on_flush = ifd__http1_on_flush,
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
  ifd_http1_t *h = ifd_container_of(set, ifd_http1_t, set);
  void (*done)(void *) = h->done;
  void *arg = h->done_arg;

  free(h);
  if (done != NULL) done(arg);
}

int ifd_http1_start(uv_loop_t *loop, const ifd_http1_opts_t *opts,
                    ifd_http1_t **out, ifd_errmsg_t *err) {
  const char *host = opts->host != NULL ? opts->host : "0.0.0.0";
  int rc;
  ifd_http1_t *h;

  IFD_ASSERT(opts->handlers != NULL && opts->handlers->dispatch != NULL);
  IFD_ASSERT(opts->handlers->slot_size >= sizeof(ifd_http1_slot_t));
  h = calloc(1, sizeof(*h));
  if (h == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  h->loop = loop;
  h->handlers = opts->handlers;
  h->app = opts->app;
  h->restrict_api =
      opts->restrict_api != NULL && opts->restrict_api->n_rules != 0
          ? opts->restrict_api
          : NULL;
  h->fwd_re = opts->forward_headers;
  h->cloud_headers = opts->cloud_headers;
  h->max_input_size = opts->max_input_size != 0
                          ? opts->max_input_size
                          : IFD_HTTP_DEFAULT_MAX_INPUT_SIZE;
  h->body_prealloc_max = opts->body_prealloc_max;
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
  h->retry_after_secs = opts->retry_after_secs;
  h->max_header_bytes = opts->max_header_bytes != 0
                            ? opts->max_header_bytes
                            : IFD_HTTP_DEFAULT_MAX_HEADER_BYTES;
  h->max_headers =
      opts->max_headers != 0 ? opts->max_headers : IFD_HTTP_DEFAULT_MAX_HEADERS;
  h->max_pipeline = opts->max_pipeline != 0 ? opts->max_pipeline
                                            : IFD_HTTP_DEFAULT_MAX_PIPELINE;

  rc = ifd__conn_set_start(
      &h->set, loop, opts->metrics_listener ? &metrics_proto : &http_proto,
      host, opts->port, opts->reuse_port,
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

int ifd_http1_port(const ifd_http1_t *h) {
  return h->set.port;
}

void ifd_http1_stop(ifd_http1_t *h, uint64_t deadline_ms,
                    void (*done)(void *arg), void *arg) {
  h->done = done;
  h->done_arg = arg;
  ifd__conn_set_stop(&h->set, deadline_ms, on_set_closed);
}

void ifd_http1_drained(ifd_http1_t *h) {
  ifd__conn_set_close(&h->set);
}
