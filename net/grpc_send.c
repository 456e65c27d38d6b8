/*
 * net/grpc_send.c - the answers of the gRPC transport's calls: response
 * messages queued, framed into HTTP/2 DATA frames and compressed, and a
 * call finished with its grpc-status and grpc-message (trailers, or a
 * Trailers-Only response). The calls themselves are net/grpc_stream.c's.
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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "base/util.h"
#include "net/grpc_conn.h"

static void mark_dirty(gconn_t *c) {
  ifd__conn_mark_dirty(&c->base);
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

void ifd__gstream_finish_http(ifd_gstream_t *st, const char *http_status,
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
void ifd__gstream_finish_call(ifd_gstream_t *st, int status, const char *msg,
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
void ifd__gstream_fail(ifd_gstream_t *st, int status, const char *msg) {
  ifd__gstream_finish_call(st, status, msg, 0);
  if (!st->cancel_sent) {
    st->cancel_sent = 1;
    if (st->method != NULL && st->method->on_cancel != NULL)
      st->method->on_cancel(st);
  }
}

void ifd_gstream_finish(ifd_gstream_t *st, int grpc_status, const char *msg) {
  ifd__gstream_finish_call(st, grpc_status, msg, 1);
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

int ifd__grpc_on_send_data(nghttp2_session *s, nghttp2_frame *frame,
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
    if (NEVER(q == NULL)) return NGHTTP2_ERR_CALLBACK_FAILURE;
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
    ifd__gstream_finish_call(st, IFD_GRPC_RESOURCE_EXHAUSTED, text, 0);
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
    ifd__gstream_finish_call(st, IFD_GRPC_RESOURCE_EXHAUSTED, text, 0);
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
    ifd__gstream_finish_call(st, IFD_GRPC_RESOURCE_EXHAUSTED, text, 0);
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
