/*
 * net/grpc_stream.c - the calls of the gRPC transport: nghttp2's session
 * callbacks, request routing by :path, gRPC message framing in and out,
 * deadlines, and finishing a call with its status. The connections they run
 * on (reading, write batches, start and stop) are net/grpc_transport.c's.
 *
 * Reading. DATA payloads are reassembled into one malloc'd buffer per gRPC
 * message that grows as bytes arrive (from at most MAX_PREALLOC, doubling up
 * to the declared length), so a peer's declared length alone cannot make us
 * allocate much; its ownership moves to the method.
 *
 * Writing. DATA frames use NGHTTP2_DATA_FLAG_NO_COPY: the send_data callback
 * appends the 9-byte frame header (copied) and iovecs that point straight at
 * the method's message pieces (not copied), so a tensor goes from its output
 * buffer to writev untouched. A message whose last byte entered a batch
 * moves to that batch's release list; its free_fn runs once the batch's
 * uv_write completes (or fails).
 * A call's unwritten messages (held back by HTTP/2 flow control: a slow
 * reader) are capped at --grpc-stream-buffer-bytes: a send past the cap
 * ends the call with RESOURCE_EXHAUSTED instead of buffering without bound.
 *
 * Deadlines. Each connection has a binary min-heap of its streams'
 * deadlines (grpc-timeout), O(log n) per stream, and one timer armed for
 * the earliest of them and of the connection's other events (see
 * net/grpc_limits.c).
 *
 * Limits. A header list past --grpc-max-header-list-size refuses its call
 * (RESOURCE_EXHAUSTED); --grpc-max-connection-buffer-bytes bounds what all
 * calls of a connection hold of request and response messages together;
 * --grpc-restricted-protocol calls without their metadata get UNAVAILABLE.
 *
 * Lifetime. A stream (ifd_gstream_t) is counted: the transport's reference
 * is dropped when the HTTP/2 stream closes or the connection goes; a method
 * that answers later holds its own. A detached stream (conn == NULL) only
 * refuses sends.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/util.h"
#include "net/grpc_conn.h"
#include "net/status.h"

/* Largest part of a message allocated before its bytes arrive. */
#define MAX_PREALLOC ((size_t)64 << 10)
/* Expire deadlines this close to now (timers run in whole ms). */
#define DEADLINE_SLACK_NS 1000000u
/* A header block this many times the header list limit (and at least
 * HARD_HEADER_MIN bytes) ends the connection. */
#define HARD_HEADER_FACTOR 4u
#define HARD_HEADER_MIN ((uint64_t)64 << 10)
/* What --grpc-restricted-protocol's metadata keys begin with. */
#define RESTRICT_PREFIX "triton-grpc-protocol-"
#define RESTRICT_PREFIX_LEN (sizeof(RESTRICT_PREFIX) - 1)

static void finish_call(ifd_gstream_t *st, int status, const char *msg,
                        int by_method);

static void mark_dirty(gconn_t *c) {
  ifd__conn_mark_dirty(&c->base);
}

/* ---- method table ------------------------------------------------------ */

static uint64_t hash_path(const char *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  size_t i;

  for (i = 0; i < n; i++) {
    h ^= (uint8_t)p[i];
    h *= 1099511628211ull;
  }
  return h;
}

int ifd__grpc_mtab_build(ifd_grpc_t *g) {
  size_t n = 0, cap = 8, i, j;

  while (ifd__grpc_methods[n].path != NULL) n++;
  while (cap < 2 * n) cap *= 2;
  g->mtab = calloc(cap, sizeof(*g->mtab));
  if (g->mtab == NULL) return IFD_ENOMEM;
  g->mtab_mask = cap - 1;
  for (i = 0; i < n; i++) {
    const ifd_grpc_method_t *m = &ifd__grpc_methods[i];
    uint64_t h = hash_path(m->path, strlen(m->path));
    for (j = h & g->mtab_mask; g->mtab[j].m != NULL; j = (j + 1) & g->mtab_mask)
      if (strcmp(g->mtab[j].m->path, m->path) == 0) break;
    if (g->mtab[j].m != NULL) continue; /* a duplicate: the first wins */
    g->mtab[j].m = m;
    g->mtab[j].hash = h;
  }
  return 0;
}

static const ifd_grpc_method_t *mtab_find(const ifd_grpc_t *g, const char *p,
                                          size_t n) {
  uint64_t h = hash_path(p, n);
  size_t j;

  for (j = h & g->mtab_mask; g->mtab[j].m != NULL; j = (j + 1) & g->mtab_mask) {
    const ifd_grpc_method_t *m = g->mtab[j].m;
    if (g->mtab[j].hash == h && strlen(m->path) == n &&
        memcmp(m->path, p, n) == 0)
      return m;
  }
  return NULL;
}

/* ---- streams --------------------------------------------------------------
 */

ifd_server_t *ifd_gstream_server(const ifd_gstream_t *st) {
  return st->server;
}

int ifd__gstream_status(const ifd_gstream_t *st, int code) {
  if (code == IFD_EOVERLOADED && st->conn != NULL && st->conn->g->overload_429)
    return 8; /* RESOURCE_EXHAUSTED */
  return ifd_grpc_status(code);
}

int ifd__gstream_forward(const ifd_gstream_t *st, ifd_request_t *req,
                         ifd_errmsg_t *err) {
  return ifd__fwd_apply(req, st->fwd.data, st->fwd.len, st->fwd.n, err);
}
void *ifd_gstream_data(const ifd_gstream_t *st) {
  return st->data;
}
void ifd_gstream_set_data(ifd_gstream_t *st, void *data) {
  st->data = data;
}
uint64_t ifd_gstream_max_message(const ifd_gstream_t *st) {
  return st->max_message;
}
int ifd_gstream_closed(const ifd_gstream_t *st) {
  return st->finished || st->conn == NULL;
}

uint64_t ifd_gstream_timeout_ns(const ifd_gstream_t *st) {
  uint64_t now;

  if (st->deadline == 0) return 0;
  now = uv_hrtime();
  return now >= st->deadline ? 1 : st->deadline - now;
}

void ifd_gstream_ref(ifd_gstream_t *st) {
  st->refs++;
}

void ifd_gstream_unref(ifd_gstream_t *st) {
  if (--st->refs != 0) return;
  /* The transport's reference goes last at detach, so nothing is queued. */
  free(st->in);
  free(st->unary);
  free(st->path);
  free(st->message);
  ifd__fwd_free(&st->fwd);
  free(st);
}

/* ---- deadlines ---------------------------------------------------------- */

void ifd__gconn_on_deadline(gconn_t *c) {
  uint64_t now = uv_hrtime();

  while (c->heap_n > 0 && c->heap[0]->deadline <= now + DEADLINE_SLACK_NS) {
    ifd_gstream_t *st = c->heap[0];
    ifd__gheap_del(c, st);
    IFD_VERBOSE("gRPC stream %d: deadline exceeded", (int)st->id);
    ifd_gstream_ref(st);
    finish_call(st, IFD_GRPC_DEADLINE_EXCEEDED, "deadline exceeded", 0);
    if (!st->cancel_sent) {
      st->cancel_sent = 1;
      if (st->method != NULL && st->method->on_cancel != NULL)
        st->method->on_cancel(st);
    }
    ifd_gstream_unref(st);
  }
}

/* ---- finishing calls ---------------------------------------------------- */

/* Percent-encodes a grpc-message as the gRPC spec asks: bytes outside
 * 0x20..0x7e and '%' become %XX. Returns NULL for none or on ENOMEM. */
static char *percent_encode(const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  size_t n = 0, i;
  char *out, *o;

  if (s == NULL || s[0] == '\0') return NULL;
  for (i = 0; s[i] != '\0'; i++) {
    uint8_t ch = (uint8_t)s[i];
    n += (ch < 0x20 || ch > 0x7e || ch == '%') ? 3 : 1;
  }
  out = malloc(n + 1);
  if (out == NULL) return NULL;
  for (o = out, i = 0; s[i] != '\0'; i++) {
    uint8_t ch = (uint8_t)s[i];
    if (ch < 0x20 || ch > 0x7e || ch == '%') {
      *o++ = '%';
      *o++ = hex[ch >> 4];
      *o++ = hex[ch & 15];
    } else {
      *o++ = (char)ch;
    }
  }
  *o = '\0';
  return out;
}

#define NV_STATIC(n, v)                                              \
  {                                                                  \
    (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, sizeof(v) - 1,    \
        NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE \
  }

static nghttp2_nv nv_make(const char *n, const char *v) {
  nghttp2_nv nv;

  nv.name = (uint8_t *)n;
  nv.value = (uint8_t *)v;
  nv.namelen = strlen(n);
  nv.valuelen = strlen(v);
  nv.flags = NGHTTP2_NV_FLAG_NONE;
  return nv;
}

/* grpc-status and grpc-message header fields; `num` holds the number. */
static size_t status_nv(const ifd_gstream_t *st, nghttp2_nv *nv, char *num) {
  size_t n = 0;

  snprintf(num, 12, "%d", st->status);
  nv[n++] = nv_make("grpc-status", num);
  if (st->message != NULL) nv[n++] = nv_make("grpc-message", st->message);
  return n;
}

/* Sends the whole response as one HEADERS frame with END_STREAM. */
static void submit_trailers_only(ifd_gstream_t *st, const char *http_status) {
  nghttp2_nv nv[5];
  char num[12];
  size_t n = 0;
  int rc;

  nv[n++] = nv_make(":status", http_status);
  nv[n++] = (nghttp2_nv)NV_STATIC("content-type", "application/grpc");
  n += status_nv(st, nv + n, num);
  st->headers_sent = 1;
  rc = nghttp2_submit_response(st->conn->session, st->id, nv, n, NULL);
  if (rc != 0)
    nghttp2_submit_rst_stream(st->conn->session, NGHTTP2_FLAG_NONE, st->id,
                              NGHTTP2_INTERNAL_ERROR);
  mark_dirty(st->conn);
}

static void finish_with_http(ifd_gstream_t *st, const char *http_status,
                             int status, const char *msg) {
  if (st->finished || st->conn == NULL) return;
  st->finished = 1;
  st->cancel_sent = 1; /* the method never saw the call */
  st->status = status;
  st->message = percent_encode(msg);
  ifd__gheap_del(st->conn, st);
  submit_trailers_only(st, http_status);
}

/* Decides the call's status. Trailers follow the queued messages (the data
 * provider submits them once it has handed out the last byte); a call that
 * sent nothing gets a Trailers-Only response. */
static void finish_call(ifd_gstream_t *st, int status, const char *msg,
                        int by_method) {
  gconn_t *c = st->conn;

  if (st->finished || c == NULL) return;
  IFD_VERBOSE("gRPC stream %d: finished with status %d%s%s", (int)st->id,
              status, msg != NULL && msg[0] != '\0' ? ": " : "",
              msg != NULL ? msg : "");
  st->finished = 1;
  st->method_finished = by_method != 0;
  st->status = status;
  st->message = percent_encode(msg);
  ifd__gheap_del(c, st);
  if (c->base.closing) return;
  if (!st->headers_sent) {
    submit_trailers_only(st, "200");
    return;
  }
  if (st->deferred) {
    st->deferred = 0;
    nghttp2_session_resume_data(c->session, st->id);
  }
  mark_dirty(c);
}

/* The transport ends a call the method did not finish: status, then
 * on_cancel so the method drops its work. */
static void fail_call(ifd_gstream_t *st, int status, const char *msg) {
  finish_call(st, status, msg, 0);
  if (!st->cancel_sent) {
    st->cancel_sent = 1;
    if (st->method != NULL && st->method->on_cancel != NULL)
      st->method->on_cancel(st);
  }
}

void ifd_gstream_finish(ifd_gstream_t *st, int grpc_status, const char *msg) {
  finish_call(st, grpc_status, msg, 1);
}

/* ---- sending ------------------------------------------------------------ */

static ssize_t on_read_data(nghttp2_session *s, int32_t id, uint8_t *buf,
                            size_t length, uint32_t *flags,
                            nghttp2_data_source *src, void *user) {
  ifd_gstream_t *st = src->ptr;
  size_t n = length;
  nghttp2_nv nv[2];
  char num[12];

  (void)buf;
  (void)user;
  if (st->out_unsent < n) n = (size_t)st->out_unsent;
  if (n == 0 && !st->finished) {
    st->deferred = 1;
    return NGHTTP2_ERR_DEFERRED;
  }
  *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
  if (n == st->out_unsent && st->finished) {
    *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    if (nghttp2_submit_trailer(s, id, nv, status_nv(st, nv, num)) != 0)
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
  return (ssize_t)n;
}

/* Moves past empty pieces and releases messages whose bytes are all in a
 * batch. */
static void out_settle(gconn_t *c, ifd_gstream_t *st) {
  qmsg_t *q;

  while ((q = st->out_head) != NULL) {
    if (st->out_piece < 0) {
      if (st->out_off < 5) return;
      st->out_piece = 0;
      st->out_off = 0;
    }
    while ((unsigned)st->out_piece < q->n_iov &&
           st->out_off == q->iov[st->out_piece].len) {
      st->out_piece++;
      st->out_off = 0;
    }
    if ((unsigned)st->out_piece < q->n_iov) return;
    st->out_head = q->next;
    if (st->out_head == NULL) st->out_tail = NULL;
    st->out_piece = -1;
    st->out_off = 0;
    ifd__gbatch_release_later(&c->nb, q);
  }
}

static int on_send_data(nghttp2_session *s, nghttp2_frame *frame,
                        const uint8_t *framehd, size_t length,
                        nghttp2_data_source *src, void *user) {
  gconn_t *c = user;
  ifd_gstream_t *st = src->ptr;

  (void)s;
  (void)frame;
  if (ifd__gbatch_copy(&c->nb, framehd, 9) != 0)
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  st->out_unsent -= length;
  c->out_bytes -= length;
  while (length > 0) {
    qmsg_t *q = st->out_head;
    size_t k;
    if (q == NULL) return NGHTTP2_ERR_CALLBACK_FAILURE; /* NEVER */
    if (st->out_piece < 0) {
      k = 5 - st->out_off;
      if (k > length) k = length;
      if (ifd__gbatch_copy(&c->nb, q->prefix + st->out_off, k) != 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    } else {
      const uv_buf_t *b = &q->iov[st->out_piece];
      k = b->len - st->out_off;
      if (k > length) k = length;
      if (ifd__gbatch_push(&c->nb, b->base + st->out_off, k) != 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    st->out_off += k;
    length -= k;
    out_settle(c, st);
  }
  return 0;
}

/* On IFD_ETOOBIG the transport finishes the call itself, so the method's
 * on_cancel runs when the stream closes: the call ended without the method
 * finishing it. */
/* ---- response compression ---------------------------------------------- */

void ifd_gstream_compress(ifd_gstream_t *st) {
  int algos[2], n = 0, level;
  if (st->conn == NULL || st->headers_sent) return;
  level = st->conn->g->lim.infer_compression_level;
  if (level <= 0) return;
  /* gRPC core's ranking: gzip, then deflate, among those accepted. */
  if (st->accept_zip & (1u << ZIP_GZIP)) algos[n++] = ZIP_GZIP;
  if (st->accept_zip & (1u << ZIP_DEFLATE)) algos[n++] = ZIP_DEFLATE;
  if (n == 0) return;
  st->out_zip = (uint8_t)(level == 1   ? algos[0]
                          : level == 2 ? algos[n / 2]
                                       : algos[n - 1]);
}

int ifd_gstream_send(ifd_gstream_t *st, const ifd_gmsg_t *msg) {
  gconn_t *c = st->conn;
  uint64_t total = 0;
  unsigned i;
  qmsg_t *q;
  char text[128];

  if (st->finished || c == NULL || c->base.closing) {
    if (msg->free_fn != NULL) msg->free_fn(msg->free_arg);
    return IFD_ECANCELLED;
  }
  for (i = 0; i < msg->n_iov; i++) total += msg->iov[i].len;
  if (total > st->max_message || total > UINT32_MAX) {
    if (msg->free_fn != NULL) msg->free_fn(msg->free_arg);
    snprintf(text, sizeof(text),
             "response message of %llu bytes exceeds the maximum of %llu",
             (unsigned long long)total, (unsigned long long)st->max_message);
    finish_call(st, IFD_GRPC_RESOURCE_EXHAUSTED, text, 0);
    return IFD_ETOOBIG;
  }
  /* Flow control: the peer reads slower than the call produces. Rather
   * than buffer without bound, the call ends; what is queued still goes
   * out, then the status. */
  if (st->out_unsent != 0 && st->out_unsent + 5 + total > c->g->max_queued) {
    if (msg->free_fn != NULL) msg->free_fn(msg->free_arg);
    snprintf(text, sizeof(text),
             "the client reads too slowly: more than %llu response bytes "
             "queued on the stream",
             (unsigned long long)c->g->max_queued);
    finish_call(st, IFD_GRPC_RESOURCE_EXHAUSTED, text, 0);
    return IFD_ETOOBIG;
  }
  /* The same for the whole connection: many calls, each under its own
   * cap, must not add up without bound. */
  if (c->out_bytes != 0 &&
      c->out_bytes + 5 + total > c->g->lim.max_connection_buffer) {
    if (msg->free_fn != NULL) msg->free_fn(msg->free_arg);
    snprintf(text, sizeof(text),
             "the client reads too slowly: more than %llu response bytes "
             "queued on the connection",
             (unsigned long long)c->g->lim.max_connection_buffer);
    finish_call(st, IFD_GRPC_RESOURCE_EXHAUSTED, text, 0);
    return IFD_ETOOBIG;
  }
  q = malloc(sizeof(*q));
  if (q == NULL) {
    if (msg->free_fn != NULL) msg->free_fn(msg->free_arg);
    return IFD_ENOMEM;
  }
  q->next = NULL;
  q->iov = msg->iov;
  q->n_iov = msg->n_iov;
  q->free_fn = msg->free_fn;
  q->free_arg = msg->free_arg;
  q->prefix[0] = 0;
  if (st->out_zip != ZIP_NONE && total > 0) {
    /* The compressed copy replaces the message, released at once. */
    ifd__gzip_msg_t *z =
        ifd__gzip_compress(msg->iov, msg->n_iov, total, st->out_zip);
    if (z != NULL) {
      if (msg->free_fn != NULL) msg->free_fn(msg->free_arg);
      q->iov = &z->iov;
      q->n_iov = 1;
      q->free_fn = free;
      q->free_arg = z;
      q->prefix[0] = 1;
      total = z->iov.len;
    }
  }
  q->prefix[1] = (uint8_t)(total >> 24);
  q->prefix[2] = (uint8_t)(total >> 16);
  q->prefix[3] = (uint8_t)(total >> 8);
  q->prefix[4] = (uint8_t)total;
  if (!st->headers_sent) {
    static const nghttp2_nv nv[] = {
        NV_STATIC(":status", "200"),
        NV_STATIC("content-type", "application/grpc"),
        NV_STATIC("grpc-encoding", "gzip"),
        NV_STATIC("grpc-encoding", "deflate"),
    };
    nghttp2_nv hv[3] = {nv[0], nv[1], nv[2]};
    nghttp2_data_provider prd;
    if (st->out_zip == ZIP_DEFLATE) hv[2] = nv[3];
    prd.source.ptr = st;
    prd.read_callback = on_read_data;
    if (nghttp2_submit_response(c->session, st->id, hv,
                                st->out_zip != ZIP_NONE ? 3 : 2, &prd) != 0) {
      if (q->free_fn != NULL) q->free_fn(q->free_arg); /* msg's, or z */
      free(q);
      return IFD_ENOMEM;
    }
    st->headers_sent = 1;
  } else if (st->deferred) {
    st->deferred = 0;
    nghttp2_session_resume_data(c->session, st->id);
  }
  if (st->out_tail != NULL)
    st->out_tail->next = q;
  else
    st->out_head = q;
  st->out_tail = q;
  st->out_unsent += 5 + total;
  c->out_bytes += 5 + total;
  mark_dirty(c);
  return 0;
}

/* ---- stream life ------------------------------------------------------ */

/* Ends the transport's hold on a stream: the HTTP/2 stream closed or the
 * connection goes. Queued messages are released after the next write (a
 * partly sent one may still be referenced by the write in flight). */
void ifd__gstream_detach(ifd_gstream_t *st) {
  gconn_t *c = st->conn;

  if (c == NULL) return;
  ifd__gheap_del(c, st);
  while (st->out_head != NULL) {
    qmsg_t *q = st->out_head;
    st->out_head = q->next;
    ifd__gbatch_release_later(&c->nb, q);
  }
  st->out_tail = NULL;
  c->out_bytes -= st->out_unsent;
  st->out_unsent = 0;
  c->in_bytes -= st->held;
  st->held = 0;
  ifd__link_del(&st->link);
  if (--c->n_streams == 0) ifd__gconn_on_idle(c);
  st->conn = NULL;
  free(st->in);
  st->in = NULL;
  free(st->unary);
  st->unary = NULL;
  if (!st->method_finished && !st->cancel_sent) {
    st->cancel_sent = 1;
    if (st->method != NULL && st->method->on_cancel != NULL)
      st->method->on_cancel(st);
  }
  st->finished = 1;
  if (c->stopping && c->n_streams == 0 && !c->base.closing && !c->terminated) {
    c->terminated = 1;
    nghttp2_session_terminate_session(c->session, NGHTTP2_NO_ERROR);
  }
  mark_dirty(c);
  ifd_gstream_unref(st);
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t code,
                           void *user) {
  ifd_gstream_t *st = nghttp2_session_get_stream_user_data(s, id);

  (void)user;
  if (st == NULL) return 0;
  IFD_VERBOSE("gRPC stream %d closed (error code %u)", (int)id, code);
  nghttp2_session_set_stream_user_data(s, id, NULL);
  ifd__gstream_detach(st);
  return 0;
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *frame,
                            void *user) {
  gconn_t *c = user;
  ifd_gstream_t *st;

  if (frame->hd.type != NGHTTP2_HEADERS ||
      frame->headers.cat != NGHTTP2_HCAT_REQUEST)
    return 0;
  st = calloc(1, sizeof(*st));
  if (st == NULL) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  st->conn = c;
  st->server = c->g->server;
  st->id = frame->hd.stream_id;
  st->refs = 1;
  st->heap_idx = NO_HEAP;
  st->max_message = c->g->max_message;
  st->out_piece = -1;
  ifd__link_add(&c->streams, &st->link);
  if (c->n_streams++ == 0) ifd__gconn_arm(c); /* keepalive with calls */
  nghttp2_session_set_stream_user_data(s, st->id, st);
  return 0;
}

/* Parses grpc-timeout ("100m": 1 to 8 digits and a unit) into ns. */
static int parse_timeout(const uint8_t *v, size_t n, uint64_t *ns) {
  uint64_t x = 0, mul;
  size_t i;

  if (n < 2 || n > 9) return -1;
  for (i = 0; i + 1 < n; i++) {
    if (v[i] < '0' || v[i] > '9') return -1;
    x = x * 10 + (uint64_t)(v[i] - '0');
  }
  switch (v[n - 1]) {
    case 'H':
      mul = 3600000000000ull;
      break;
    case 'M':
      mul = 60000000000ull;
      break;
    case 'S':
      mul = 1000000000ull;
      break;
    case 'm':
      mul = 1000000ull;
      break;
    case 'u':
      mul = 1000ull;
      break;
    case 'n':
      mul = 1ull;
      break;
    default:
      return -1;
  }
  /* 99999999H overflows: cap far beyond any real deadline (~146 years). */
  *ns = x > (UINT64_MAX / 4) / mul ? UINT64_MAX / 4 : x * mul;
  return 0;
}

static int hdr_is(const uint8_t *name, size_t n, const char *want) {
  return n == strlen(want) && memcmp(name, want, n) == 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *frame,
                     const uint8_t *name, size_t namelen, const uint8_t *value,
                     size_t valuelen, uint8_t flags, void *user) {
  gconn_t *c = user;
  const ifd_restrict_t *rs = c->g->restrict_api;
  ifd_gstream_t *st;
  uint64_t ns, size, limit = c->g->lim.max_header_list_size;

  (void)flags;
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  st = nghttp2_session_get_stream_user_data(s, frame->hd.stream_id);
  if (st == NULL) return 0;
  /* The header list size as SETTINGS_MAX_HEADER_LIST_SIZE counts it
   * (RFC 9113 6.5.2): decoded bytes, so an HPACK block of tiny references
   * to one big table entry counts in full. Past the limit the call is
   * refused; far past it (a peer ignoring our SETTINGS, or an HPACK bomb)
   * the connection ends. */
  size = (uint64_t)st->hdr_bytes + namelen + valuelen + 32;
  st->hdr_bytes = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
  if (size > HARD_HEADER_FACTOR * limit && size > HARD_HEADER_MIN) {
    ifd__gconn_goaway(c, NGHTTP2_ENHANCE_YOUR_CALM, NULL,
                      "a header block far beyond the header list limit");
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
  if (size > limit) st->hdr_over = 1;
  if (st->hdr_over || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  if (rs != NULL && rs->n_rules != 0 && namelen > RESTRICT_PREFIX_LEN &&
      memcmp(name, RESTRICT_PREFIX, RESTRICT_PREFIX_LEN) == 0)
    st->restrict_ok |= ifd_restrict_match(rs, name, namelen, value, valuelen);
  /* --grpc-header-forward-pattern sees the call's metadata as gRPC hands
   * it to tritonserver: no pseudo-headers, nor what the transport itself
   * reads (te, content-type, grpc-*). */
  if (c->g->fwd_re != NULL && namelen > 0 && name[0] != ':' &&
      !hdr_is(name, namelen, "te") && !hdr_is(name, namelen, "content-type") &&
      !(namelen >= 5 && memcmp(name, "grpc-", 5) == 0) &&
      ifd__fwd_add(&st->fwd, c->g->fwd_re, (const char *)name, namelen,
                   (const char *)value, valuelen) != 0)
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  if (hdr_is(name, namelen, ":method")) {
    st->is_post = valuelen == 4 && memcmp(value, "POST", 4) == 0;
  } else if (hdr_is(name, namelen, ":path")) {
    st->method = mtab_find(st->conn->g, (const char *)value, valuelen);
    if (st->method == NULL && st->path == NULL) {
      st->path = malloc(valuelen + 1);
      if (st->path == NULL) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
      memcpy(st->path, value, valuelen);
      st->path[valuelen] = '\0';
    }
  } else if (hdr_is(name, namelen, "content-type")) {
    /* "application/grpc", "application/grpc+proto", "...;charset" */
    st->ct_ok = valuelen >= 16 && memcmp(value, "application/grpc", 16) == 0 &&
                (valuelen == 16 || value[16] == '+' || value[16] == ';');
  } else if (hdr_is(name, namelen, "grpc-encoding")) {
    if (valuelen == 8 && memcmp(value, "identity", 8) == 0) {
      st->enc_state = ENC_IDENTITY;
    } else {
      size_t k =
          valuelen < sizeof(st->enc) - 1 ? valuelen : sizeof(st->enc) - 1;
      st->enc_state = ENC_OTHER;
      memcpy(st->enc, value, k);
      st->enc[k] = '\0';
      st->in_zip = (uint8_t)ifd__gzip_algo(st->enc);
    }
  } else if (hdr_is(name, namelen, "grpc-accept-encoding")) {
    st->accept_zip = ifd__gzip_accepted((const char *)value, valuelen);
  } else if (hdr_is(name, namelen, "grpc-timeout")) {
    if (parse_timeout(value, valuelen, &ns) != 0) {
      st->timeout_bad = 1;
    } else {
      uint64_t now = uv_hrtime();
      st->deadline = now + (ns == 0 ? 1 : ns);
    }
  }
  return 0;
}

/* The request HEADERS are complete: validate and route. */
static void start_call(ifd_gstream_t *st) {
  const ifd_restrict_t *rs = st->conn->g->restrict_api;
  char text[200];

  st->started = 1;
  if (st->hdr_over) {
    snprintf(text, sizeof(text),
             "header list of more than %u bytes (the server's "
             "SETTINGS_MAX_HEADER_LIST_SIZE)",
             st->conn->g->lim.max_header_list_size);
    finish_with_http(st, "200", IFD_GRPC_RESOURCE_EXHAUSTED, text);
    return;
  }
  if (!st->is_post) {
    finish_with_http(st, "405", IFD_GRPC_INTERNAL,
                     "gRPC requires the POST method");
    return;
  }
  if (!st->ct_ok) {
    finish_with_http(st, "415", IFD_GRPC_INTERNAL,
                     "invalid gRPC request content-type");
    return;
  }
  if (st->method == NULL) {
    snprintf(text, sizeof(text), "unknown method %.140s",
             st->path != NULL ? st->path : "");
    IFD_VERBOSE("gRPC stream %d: %s", (int)st->id, text);
    finish_call(st, IFD_GRPC_UNIMPLEMENTED, text, 0);
    return;
  }
  IFD_VERBOSE("gRPC stream %d: %s", (int)st->id, st->method->path);
  if (ifd_restrict_on(rs, (ifd_api_group_t)st->method->group) &&
      !((st->restrict_ok >> st->method->group) & 1u)) {
    snprintf(text, sizeof(text),
             "This protocol is restricted, expecting header '%s'",
             ifd_restrict_header(rs, (ifd_api_group_t)st->method->group));
    finish_with_http(st, "200", IFD_GRPC_UNAVAILABLE, text);
    return;
  }
  if (st->timeout_bad) {
    fail_call(st, IFD_GRPC_INTERNAL, "malformed grpc-timeout");
    return;
  }
  if (st->deadline != 0 && ifd__gheap_add(st->conn, st) != 0)
    fail_call(st, IFD_GRPC_RESOURCE_EXHAUSTED, "out of memory");
}

/* Keeps conn->in_bytes equal to what the calls hold of request messages:
 * the one being reassembled and a unary request waiting for END_STREAM. */
static void set_held(ifd_gstream_t *st) {
  gconn_t *c = st->conn;
  uint64_t now = st->in_cap + (st->unary != NULL ? st->unary_len : 0);

  c->in_bytes = c->in_bytes - st->held + now;
  st->held = now;
}

/* Whether this call may hold `want` bytes of request messages without the
 * connection passing --grpc-max-connection-buffer-bytes; fails the call
 * when not. A call alone on its connection always may (its messages are
 * bounded by the maximum message size). Returns 0 or -1. */
static int room_for(ifd_gstream_t *st, uint64_t want) {
  gconn_t *c = st->conn;
  uint64_t others = c->in_bytes - st->held;
  char text[160];

  if (others == 0 || others + want <= c->g->lim.max_connection_buffer) return 0;
  snprintf(text, sizeof(text),
           "more than %llu bytes of request messages buffered on the "
           "connection",
           (unsigned long long)c->g->lim.max_connection_buffer);
  fail_call(st, IFD_GRPC_RESOURCE_EXHAUSTED, text);
  return -1;
}

/* A whole request message: to the method (streaming) or kept until
 * END_STREAM (unary). Takes `msg`. */
static void deliver(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  st->n_in++;
  if (st->method->streaming) {
    ifd_gstream_ref(st);
    st->method->on_message(st, msg, len);
    ifd_gstream_unref(st);
    return;
  }
  if (st->unary != NULL) {
    free(msg);
    fail_call(st, IFD_GRPC_INTERNAL,
              "unary call with more than one request message");
    return;
  }
  st->unary = msg;
  st->unary_len = len;
  set_held(st);
}

/* Reads the 5-byte prefix just completed and prepares the buffer. Returns
 * 0, or -1 when the call was failed. */
static int begin_message(ifd_gstream_t *st) {
  uint64_t need = ((uint64_t)st->prefix[1] << 24) |
                  ((uint64_t)st->prefix[2] << 16) |
                  ((uint64_t)st->prefix[3] << 8) | st->prefix[4];
  size_t cap;
  char text[160];

  if (st->prefix[0] > 1) {
    fail_call(st, IFD_GRPC_INTERNAL, "invalid gRPC message compressed flag");
    return -1;
  }
  if (st->prefix[0] == 1 && (st->enc_state != ENC_OTHER || !st->in_zip)) {
    if (st->enc_state != ENC_OTHER) {
      fail_call(st, IFD_GRPC_INTERNAL,
                "compressed message without grpc-encoding");
    } else {
      snprintf(text, sizeof(text),
               "grpc-encoding %s is not supported (gzip and deflate are)",
               st->enc);
      fail_call(st, IFD_GRPC_UNIMPLEMENTED, text);
    }
    return -1;
  }
  st->in_flag = st->prefix[0];
  if (need > st->max_message) {
    snprintf(text, sizeof(text),
             "message of %llu bytes exceeds the maximum of %llu",
             (unsigned long long)need, (unsigned long long)st->max_message);
    fail_call(st, IFD_GRPC_RESOURCE_EXHAUSTED, text);
    return -1;
  }
  cap = need < MAX_PREALLOC ? (size_t)need : MAX_PREALLOC;
  if (room_for(st, cap + (st->unary != NULL ? st->unary_len : 0)) != 0)
    return -1;
  st->in = malloc(cap != 0 ? cap : 1);
  if (st->in == NULL) {
    fail_call(st, IFD_GRPC_RESOURCE_EXHAUSTED,
              "out of memory for the request message");
    return -1;
  }
  st->in_len = 0;
  st->in_cap = cap;
  st->in_need = (size_t)need;
  set_held(st);
  return 0;
}

/* A compressed request message: inflated in place of `*msg`. Returns 0, or
 * -1 when the call was failed (and *msg freed). */
static int inflate_message(ifd_gstream_t *st, uint8_t **msg, size_t *len) {
  uint8_t *out;
  size_t out_len;
  char text[160];
  int rc = ifd__gzip_inflate(*msg, *len, st->in_zip, st->max_message, &out,
                             &out_len);

  free(*msg);
  *msg = NULL;
  if (rc == IFD_ETOOBIG) {
    snprintf(text, sizeof(text),
             "message decompresses to more than the maximum of %llu bytes",
             (unsigned long long)st->max_message);
    fail_call(st, IFD_GRPC_RESOURCE_EXHAUSTED, text);
  } else if (rc == IFD_ENOMEM) {
    fail_call(st, IFD_GRPC_RESOURCE_EXHAUSTED,
              "out of memory for the request message");
  } else if (rc < 0) {
    snprintf(text, sizeof(text), "message is not valid %s data", st->enc);
    fail_call(st, IFD_GRPC_INTERNAL, text);
  }
  if (rc < 0) return -1;
  /* A unary request is held until END_STREAM: counted as it is now. */
  if (!st->method->streaming &&
      room_for(st, out_len + (st->unary != NULL ? st->unary_len : 0)) != 0) {
    free(out);
    return -1;
  }
  *msg = out;
  *len = out_len;
  return 0;
}

static void message_done(ifd_gstream_t *st) {
  uint8_t *msg = st->in;
  size_t len = st->in_len;

  st->in = NULL;
  st->in_len = st->in_cap = st->in_need = 0;
  st->prefix_len = 0;
  set_held(st);
  if (st->in_flag && inflate_message(st, &msg, &len) != 0) return;
  deliver(st, msg, len);
}

static int on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id,
                         const uint8_t *data, size_t len, void *user) {
  ifd_gstream_t *st = nghttp2_session_get_stream_user_data(s, id);

  (void)flags;
  (void)user;
  if (st == NULL || st->finished || st->conn == NULL || st->method == NULL)
    return 0;
  while (len > 0 && !st->finished) {
    size_t k;
    if (st->prefix_len < 5) {
      k = 5 - st->prefix_len;
      if (k > len) k = len;
      memcpy(st->prefix + st->prefix_len, data, k);
      st->prefix_len += (unsigned)k;
      data += k;
      len -= k;
      if (st->prefix_len < 5) break;
      if (begin_message(st) != 0) break;
      if (st->in_need == 0) message_done(st);
      continue;
    }
    k = st->in_need - st->in_len;
    if (k > len) k = len;
    if (st->in_len + k > st->in_cap) {
      size_t cap = st->in_cap * 2;
      uint8_t *p;
      if (cap < st->in_len + k) cap = st->in_len + k;
      if (cap > st->in_need) cap = st->in_need;
      if (room_for(st, cap + (st->unary != NULL ? st->unary_len : 0)) != 0)
        break;
      p = realloc(st->in, cap);
      if (p == NULL) {
        fail_call(st, IFD_GRPC_RESOURCE_EXHAUSTED,
                  "out of memory for the request message");
        break;
      }
      st->in = p;
      st->in_cap = cap;
      set_held(st);
    }
    memcpy(st->in + st->in_len, data, k);
    st->in_len += k;
    data += k;
    len -= k;
    if (st->in_len == st->in_need) message_done(st);
  }
  return 0;
}

/* The client half-closed. */
static void remote_end(ifd_gstream_t *st) {
  char text[160];
  uint8_t *msg;

  st->remote_closed = 1;
  if (st->finished || st->conn == NULL || st->method == NULL) return;
  if (st->prefix_len != 0) {
    snprintf(text, sizeof(text),
             "incomplete message: %llu of %llu bytes before the end of the "
             "stream",
             (unsigned long long)(st->prefix_len < 5 ? 0 : st->in_len),
             (unsigned long long)(st->prefix_len < 5 ? 0 : st->in_need));
    if (st->prefix_len < 5)
      snprintf(text, sizeof(text), "incomplete message prefix");
    fail_call(st, IFD_GRPC_INTERNAL, text);
    return;
  }
  if (st->method->streaming) {
    if (st->method->on_end != NULL) {
      ifd_gstream_ref(st);
      st->method->on_end(st);
      ifd_gstream_unref(st);
    }
    return;
  }
  if (st->unary == NULL) {
    fail_call(st, IFD_GRPC_INTERNAL, "unary call without a request message");
    return;
  }
  msg = st->unary;
  st->unary = NULL;
  set_held(st);
  ifd_gstream_ref(st);
  st->method->on_message(st, msg, st->unary_len);
  ifd_gstream_unref(st);
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *frame,
                         void *user) {
  ifd_gstream_t *st;

  if (frame->hd.type == NGHTTP2_PING || frame->hd.type == NGHTTP2_RST_STREAM) {
    ifd__gconn_on_control(user, frame);
    return 0;
  }
  if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
    return 0;
  st = nghttp2_session_get_stream_user_data(s, frame->hd.stream_id);
  if (st == NULL) return 0;
  /* Known before start_call answers, so no RST follows a response to a
   * request that is already complete. */
  if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) st->remote_closed = 1;
  if (frame->hd.type == NGHTTP2_HEADERS && !st->started) start_call(st);
  if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) && st->conn != NULL)
    remote_end(st);
  return 0;
}

/* After our END_STREAM, tells a client still sending to stop (as grpc-go
 * does): RST_STREAM(NO_ERROR) follows the final HEADERS. */
static int on_frame_send(nghttp2_session *s, const nghttp2_frame *frame,
                         void *user) {
  ifd_gstream_t *st;

  if (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA)
    ifd__gconn_on_data_sent(user);
  if (frame->hd.type != NGHTTP2_HEADERS ||
      !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
    return 0;
  st = nghttp2_session_get_stream_user_data(s, frame->hd.stream_id);
  if (st != NULL && !st->remote_closed)
    nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_NO_ERROR);
  return 0;
}

int ifd__grpc_callbacks_new(nghttp2_session_callbacks **out) {
  nghttp2_session_callbacks *cb;

  if (nghttp2_session_callbacks_new(&cb) != 0) return IFD_ENOMEM;
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
  nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
  nghttp2_session_callbacks_set_send_data_callback(cb, on_send_data);
  *out = cb;
  return 0;
}

/* ---- server stop ------------------------------------------------------ */

void ifd__gconn_end_calls(gconn_t *c) {
  ifd_link_t *l, *next;

  /* fail_call may close a stream (a Trailers-Only response is only
   * submitted here), but detaching waits for on_stream_close, so `next`
   * stays in the list. */
  for (l = c->streams.next; l != &c->streams; l = next) {
    ifd_gstream_t *st = ifd_container_of(l, ifd_gstream_t, link);
    next = l->next;
    ifd_gstream_ref(st);
    fail_call(st, IFD_GRPC_UNAVAILABLE, "the server is shutting down");
    ifd_gstream_unref(st);
  }
}
