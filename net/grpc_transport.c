/*
 * net/grpc_transport.c - the connections of the gRPC transport:
 * prior-knowledge h2c with nghttp2's server session on the connection layer
 * (net/conn.c: accept, connection list, flusher, timers, close, shutdown
 * deadline). The calls themselves (routing by :path to the application's
 * method table, framing, deadlines) are net/grpc_stream.c's, their answers
 * and statuses net/grpc_send.c's.
 *
 * Reading. All connections share one read buffer owned by the transport:
 * libuv calls alloc, read and the read callback back to back, and the
 * callback feeds everything to nghttp2_session_mem_recv before returning, so
 * no bytes wait in it and an idle connection holds no buffer. nghttp2 sends
 * WINDOW_UPDATEs itself as data is consumed; we advertise 16 MiB stream and
 * connection windows so big tensors flow.
 *
 * Writing. nghttp2_session_mem_send produces the frames. Control frames and
 * frame headers are small: they are copied into blocks of the connection's
 * next write batch; DATA frames point at the methods' messages (see
 * grpc_send.c). Connections with something to send are flushed by the
 * connection layer just before the loop blocks, so all output of one loop
 * iteration goes in one uv_write; one write is in flight per connection.
 *
 * Backpressure. A batch stops growing at MAX_BATCH_BYTES; while more than
 * OUT_HIGH_WATER bytes of the write in flight could not be handed to the
 * kernel, the connection stops reading (no new calls, no new input) until
 * the write completes. Bytes that HTTP/2 flow control holds back stay in the
 * streams' queues and do not pause reading: the peer's WINDOW_UPDATEs must
 * still be read. Those are bounded per call by --grpc-stream-buffer-bytes
 * and per connection by --grpc-max-connection-buffer-bytes.
 *
 * Limits. SETTINGS carry --grpc-max-concurrent-streams (nghttp2 refuses the
 * streams past it) and --grpc-max-header-list-size; nghttp2 bounds
 * CONTINUATION frames per header block and its own RST_STREAM rate. The
 * timer-driven limits (idle timeout, keepalive, rapid reset) are
 * net/grpc_limits.c's; after a GOAWAY of ours the input is ignored and the
 * connection closes once the GOAWAY is written.
 *
 * Shutdown. Draining sends GOAWAY(2^31-1) so the client opens no new call;
 * calls in flight go on. Once the core has nothing left in flight, the calls
 * still open are answered UNAVAILABLE, and the final GOAWAY follows when the
 * last one has closed; at the deadline net/conn.c closes what is left.
 *
 * Lifetime. A connection's memory is freed in the close callback of its last
 * handle (net/conn.c); nghttp2 callbacks never free it.
 */
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/util.h"
#include "net/grpc_conn.h"

#define STREAM_WINDOW (16 << 20)
#define CONN_WINDOW (16 << 20)
/* CONTINUATION frames after one HEADERS (CVE-2024-28182): a request's
 * headers fit in one or two frames; nghttp2 ends the connection past it. */
#define MAX_CONTINUATIONS 8
#define MAX_BATCH_BYTES ((size_t)32 << 20)
#define OUT_HIGH_WATER ((size_t)16 << 20)
#define BLOCK_SIZE 16384
#define DEFAULT_MAX_CONNECTIONS 65536u

static void close_conn(gconn_t *c, int graceful);

int ifd_grpc_port(const ifd_grpc_t *g) {
  return g->set.port;
}

static void mark_dirty(gconn_t *c) {
  ifd__conn_mark_dirty(&c->base);
}

/* ---- write batches ------------------------------------------------------- */

int ifd__gbatch_push(batch_t *b, const void *p, size_t n) {
  if (b->n_iov == b->cap_iov) {
    size_t cap = b->cap_iov != 0 ? b->cap_iov * 2 : 64;
    uv_buf_t *iov = realloc(b->iov, cap * sizeof(*iov));
    if (iov == NULL) return IFD_ENOMEM;
    b->iov = iov;
    b->cap_iov = cap;
  }
  b->iov[b->n_iov++] = uv_buf_init((char *)p, (unsigned)n);
  b->bytes += n;
  return 0;
}

/* Appends a copy of `n` bytes, merged with the previous piece when that
 * one ends right where the copy goes. */
int ifd__gbatch_copy(batch_t *b, const void *p, size_t n) {
  blk_t *k = b->blocks;
  uint8_t *dst;

  if (k == NULL || k->cap - k->len < n) {
    size_t cap = n > BLOCK_SIZE ? n : BLOCK_SIZE;
    k = malloc(sizeof(*k) + cap);
    if (k == NULL) return IFD_ENOMEM;
    k->len = 0;
    k->cap = cap;
    k->next = b->blocks;
    b->blocks = k;
  }
  dst = k->data + k->len;
  memcpy(dst, p, n);
  k->len += n;
  if (b->n_iov != 0 &&
      (uint8_t *)b->iov[b->n_iov - 1].base + b->iov[b->n_iov - 1].len == dst) {
    b->iov[b->n_iov - 1].len += n;
    b->bytes += n;
    return 0;
  }
  return ifd__gbatch_push(b, dst, n);
}

static void qmsg_release(qmsg_t *q) {
  if (q->free_fn != NULL) q->free_fn(q->free_arg);
  free(q);
}

/* Frees what the batch kept and releases its messages; idle connections
 * keep no buffers. */
static void batch_reset(batch_t *b) {
  while (b->blocks != NULL) {
    blk_t *k = b->blocks;
    b->blocks = k->next;
    free(k);
  }
  while (b->rel != NULL) {
    qmsg_t *q = b->rel;
    b->rel = q->next;
    qmsg_release(q);
  }
  free(b->iov);
  b->iov = NULL;
  b->n_iov = b->cap_iov = 0;
  b->bytes = 0;
}

void ifd__gbatch_release_later(batch_t *b, qmsg_t *q) {
  q->next = b->rel;
  b->rel = q;
}

/* ---- reading and writing ------------------------------------------------- */

static void on_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *buf) {
  gconn_t *c = hd->data;

  (void)suggested;
  *buf = uv_buf_init(c->g->rbuf, READ_BUF_SIZE);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  gconn_t *c = s->data;
  ssize_t rc;

  if (nread == 0) return;
  if (nread < 0) {
    close_conn(c, 0);
    return;
  }
  if (c->base.closing || c->goaway_close) return;
  c->last_read = uv_now(c->g->loop);
  rc = nghttp2_session_mem_recv(c->session, (const uint8_t *)buf->base,
                                (size_t)nread);
  if (rc < 0) {
    IFD_VERBOSE("gRPC connection dropped: %s", nghttp2_strerror((int)rc));
    close_conn(c, 0);
    return;
  }
  mark_dirty(c);
}

static void flush(gconn_t *c);

static void on_write(uv_write_t *w, int status) {
  gconn_t *c = ifd_container_of(w, gconn_t, wreq);

  c->writing = 0;
  batch_reset(&c->wb);
  if (c->base.closing) return;
  if (status < 0) {
    close_conn(c, 0);
    return;
  }
  if (c->read_paused) {
    c->read_paused = 0;
    ifd__conn_read_start(&c->base, on_alloc, on_read);
  }
  flush(c);
}

/* Hands the batch in c->wb to the kernel: what the socket takes now is done
 * at once (most responses: no write request, so libuv needs no epoll_ctl to
 * watch for writability and stop again, and no callback on the next
 * iteration); only the rest goes through uv_write. Returns 1 when all of it
 * was written (c->wb is reset), 0 when a uv_write is in flight, -1 when the
 * connection was closed. */
static int write_batch(gconn_t *c) {
  batch_t *b = &c->wb;
  size_t first = 0, done;
  int w;

  c->writing = 1;
  w = ifd__conn_try_write(&c->base, b->iov, (unsigned)b->n_iov);
  if (w < 0 && w != UV_EAGAIN) {
    c->writing = 0;
    batch_reset(b);
    close_conn(c, 0);
    return -1;
  }
  done = w > 0 ? (size_t)w : 0;
  while (first < b->n_iov && done >= b->iov[first].len)
    done -= b->iov[first++].len;
  if (first == b->n_iov) {
    c->writing = 0;
    batch_reset(b);
    return 1;
  }
  /* The batch keeps every piece alive until on_write; uv_write copies the
   * uv_buf_t array, so adjusting it here is safe. */
  b->iov[first].base += done;
  b->iov[first].len -= done;
  if (ifd__conn_write(&c->base, &c->wreq, b->iov + first,
                      (unsigned)(b->n_iov - first), on_write) != 0) {
    c->writing = 0;
    batch_reset(b);
    close_conn(c, 0);
    return -1;
  }
  return 0;
}

/* Produces what nghttp2 has to send and writes it: one write per batch of
 * up to MAX_BATCH_BYTES, until nghttp2 has nothing more or a write waits
 * for the socket. */
static void flush(gconn_t *c) {
  batch_t tmp;

  for (;;) {
    if (c->base.closing || c->writing) return;
    while (c->nb.bytes < MAX_BATCH_BYTES) {
      const uint8_t *data;
      ssize_t n = nghttp2_session_mem_send(c->session, &data);
      if (n < 0) {
        IFD_WARN("gRPC connection dropped: %s", nghttp2_strerror((int)n));
        close_conn(c, 0);
        return;
      }
      if (n == 0) break;
      if (ifd__gbatch_copy(&c->nb, data, (size_t)n) != 0) {
        close_conn(c, 0);
        return;
      }
    }
    if (c->nb.n_iov == 0) {
      batch_reset(&c->nb); /* releases only: nothing references them now */
      if (c->goaway_close || (!nghttp2_session_want_read(c->session) &&
                              !nghttp2_session_want_write(c->session)))
        close_conn(c, 1);
      return;
    }
    tmp = c->wb;
    c->wb = c->nb;
    c->nb = tmp;
    if (write_batch(c) != 1) break;
  }
  if (c->writing && !c->read_paused &&
      ifd__conn_write_queue_size(&c->base) > OUT_HIGH_WATER) {
    c->read_paused = 1;
    ifd__conn_read_stop(&c->base);
  }
}

static void on_flush(ifd_conn_t *base) {
  flush((gconn_t *)base);
}

/* ---- connection life ------------------------------------------------------
 */

static void on_timer(ifd_conn_t *base) {
  ifd__gconn_on_timer((gconn_t *)base);
}

/* Every attached stream is cancelled before the handles close. */
static void on_closing(ifd_conn_t *base) {
  gconn_t *c = (gconn_t *)base;

  if (c->streams.next == NULL) return; /* on_open never ran */
  while (!ifd__link_empty(&c->streams)) {
    ifd_gstream_t *st = ifd_container_of(c->streams.next, ifd_gstream_t, link);
    if (c->session != NULL)
      nghttp2_session_set_stream_user_data(c->session, st->id, NULL);
    ifd__gstream_detach(st);
  }
}

static void on_free(ifd_conn_t *base) {
  gconn_t *c = (gconn_t *)base;

  if (c->session != NULL) nghttp2_session_del(c->session);
  batch_reset(&c->wb);
  batch_reset(&c->nb);
  free(c->heap);
}

/* Closes now, or after a FIN (graceful: everything is written). */
static void close_conn(gconn_t *c, int graceful) {
  ifd__conn_close(&c->base, graceful && !c->writing);
}

static int start_session(gconn_t *c) {
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS,
       c->g->lim.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, c->g->lim.max_header_list_size},
  };

  if (nghttp2_session_server_new2(&c->session, c->g->cbs, c, c->g->h2opt) !=
      0) {
    c->session = NULL;
    return IFD_ENOMEM;
  }
  if (nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, iv,
                              IFD_ARRAY_SIZE(iv)) != 0 ||
      nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0,
                                            CONN_WINDOW) != 0)
    return IFD_ENOMEM;
  return 0;
}

static int on_open(ifd_conn_t *base) {
  gconn_t *c = (gconn_t *)base;

  c->g = ifd_container_of(base->set, ifd_grpc_t, set);
  ifd__link_init(&c->streams);
  c->opened = c->idle_since = c->last_read = uv_now(c->g->loop);
  if (start_session(c) != 0 ||
      ifd__conn_read_start(base, on_alloc, on_read) != 0)
    return -1;
  mark_dirty(c); /* our SETTINGS go first */
  ifd__gconn_arm(c);
  return 0;
}

static void on_stop(ifd_conn_t *base, ifd_conn_phase_t phase) {
  gconn_t *c = (gconn_t *)base;

  if (phase == IFD_CONN_DRAIN) {
    c->stopping = 1;
    /* GOAWAY(2^31-1) first: the client opens no new stream; the final
     * GOAWAY with the last stream id follows when the calls are done. */
    nghttp2_submit_shutdown_notice(c->session);
  } else {
    ifd__gconn_end_calls(c);
  }
  if (c->n_streams == 0 && !c->terminated) {
    c->terminated = 1;
    nghttp2_session_terminate_session(c->session, NGHTTP2_NO_ERROR);
  }
  mark_dirty(c);
}

static const ifd_conn_proto_t grpc_proto = {
    .name = "gRPC",
    .size = sizeof(gconn_t),
    .on_open = on_open,
    .on_flush = on_flush,
    .on_timer = on_timer,
    .on_stop = on_stop,
    .on_closing = on_closing,
    .on_free = on_free,
};

/* ---- start and stop --------------------------------------------------------
 */

static void free_grpc(ifd_grpc_t *g) {
  if (g->cbs != NULL) nghttp2_session_callbacks_del(g->cbs);
  if (g->h2opt != NULL) nghttp2_option_del(g->h2opt);
  free(g->mtab);
  if (g->app_free != NULL) g->app_free(g->app);
  free(g);
}

static void on_set_closed(ifd_conn_set_t *set) {
  ifd_grpc_t *g = ifd_container_of(set, ifd_grpc_t, set);
  void (*done)(void *) = g->done;
  void *arg = g->done_arg;

  free_grpc(g);
  if (done != NULL) done(arg);
}

void ifd_grpc_opts_defaults(ifd_grpc_opts_t *o) {
  memset(o, 0, sizeof(*o));
  o->limits_set = 1;
  o->max_concurrent_streams = IFD_GRPC_DEFAULT_MAX_STREAMS;
  o->max_header_list_size = IFD_GRPC_DEFAULT_MAX_HEADER_LIST;
  o->idle_timeout_ms = IFD_GRPC_DEFAULT_IDLE_TIMEOUT_MS;
  o->max_resets_per_second = IFD_GRPC_DEFAULT_MAX_RESETS;
  o->max_connection_buffer = IFD_GRPC_DEFAULT_CONN_BUFFER;
  o->keepalive_time_ms = IFD_GRPC_DEFAULT_KEEPALIVE_TIME_MS;
  o->keepalive_timeout_ms = IFD_GRPC_DEFAULT_KEEPALIVE_TIMEOUT_MS;
  o->max_pings_without_data = IFD_GRPC_DEFAULT_MAX_PINGS_WITHOUT_DATA;
  o->min_recv_ping_interval_ms = IFD_GRPC_DEFAULT_MIN_RECV_PING_MS;
  o->max_ping_strikes = IFD_GRPC_DEFAULT_MAX_PING_STRIKES;
}

/* nghttp2's own guards, set from the limits: its RST_STREAM rate limit is
 * kept looser than ours (which logs and says why), and CONTINUATION frames
 * are bounded. Header values with leading or trailing whitespace are let
 * through (RFC 9113 forbids them, nghttp2 resets such a stream with
 * PROTOCOL_ERROR): tritonserver's gRPC stack serves them, and clients send
 * them. */
static int h2_options(ifd_grpc_t *g) {
  uint64_t r = g->lim.max_resets_per_second;

  if (nghttp2_option_new(&g->h2opt) != 0) return IFD_ENOMEM;
  nghttp2_option_set_max_continuations(g->h2opt, MAX_CONTINUATIONS);
  nghttp2_option_set_no_rfc9113_leading_and_trailing_ws_validation(g->h2opt, 1);
  if (r == 0)
    nghttp2_option_set_stream_reset_rate_limit(g->h2opt, UINT64_MAX / 2,
                                               UINT64_MAX / 2);
  else
    nghttp2_option_set_stream_reset_rate_limit(
        g->h2opt, 2 * r > 1000 ? 2 * r : 1000, r > 33 ? r : 33);
  return 0;
}

int ifd_grpc_serve(uv_loop_t *loop, const ifd_grpc_opts_t *opts,
                   ifd_grpc_t **out, ifd_errmsg_t *err) {
  const char *host = opts->host != NULL ? opts->host : "0.0.0.0";
  int rc;
  ifd_grpc_t *g;

  g = calloc(1, sizeof(*g));
  if (g == NULL) {
    if (opts->app_free != NULL) opts->app_free(opts->app);
    return ifd_errf(err, IFD_ENOMEM, "out of memory");
  }
  g->loop = loop;
  g->app = opts->app;
  g->app_free = opts->app_free;
  g->methods = opts->methods;
  g->max_message = opts->max_message_size != 0
                       ? opts->max_message_size
                       : IFD_GRPC_DEFAULT_MAX_MESSAGE_SIZE;
  g->max_queued = opts->stream_buffer_bytes != 0
                      ? opts->stream_buffer_bytes
                      : IFD_GRPC_DEFAULT_STREAM_BUFFER_BYTES;
  if (opts->limits_set) {
    g->lim = *opts;
  } else {
    ifd_grpc_opts_defaults(&g->lim);
    g->lim.restrict_api = opts->restrict_api;
  }
  if (g->lim.max_concurrent_streams == 0)
    g->lim.max_concurrent_streams = IFD_GRPC_DEFAULT_MAX_STREAMS;
  if (g->lim.max_header_list_size == 0)
    g->lim.max_header_list_size = IFD_GRPC_DEFAULT_MAX_HEADER_LIST;
  if (g->lim.max_connection_buffer == 0)
    g->lim.max_connection_buffer = IFD_GRPC_DEFAULT_CONN_BUFFER;
  g->restrict_api = g->lim.restrict_api;
  g->fwd_re = opts->forward_headers;
  if (ifd__grpc_callbacks_new(&g->cbs) != 0 || ifd__grpc_mtab_build(g) != 0 ||
      h2_options(g) != 0) {
    free_grpc(g);
    return ifd_errf(err, IFD_ENOMEM, "out of memory");
  }
  g->set.tls = opts->tls; /* before any accept: the loop is not running */
  g->set.unix_perm = opts->unix_perm;
  rc = ifd__conn_set_start(&g->set, loop, &grpc_proto, host, opts->port,
                           opts->reuse_port,
                           opts->max_connections != 0 ? opts->max_connections
                                                      : DEFAULT_MAX_CONNECTIONS,
                           err);
  if (rc != 0) {
    ifd__conn_set_stop(&g->set, 0, on_set_closed);
    return rc;
  }
  *out = g;
  return 0;
}

void ifd_grpc_stop(ifd_grpc_t *g, uint64_t deadline_ms, void (*done)(void *arg),
                   void *arg) {
  g->done = done;
  g->done_arg = arg;
  ifd__conn_set_stop(&g->set, deadline_ms, on_set_closed);
}

void ifd_grpc_drained(ifd_grpc_t *g) {
  ifd__conn_set_close(&g->set);
}
