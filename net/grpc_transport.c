/*
 * net/grpc_transport.c - the connections of the gRPC transport:
 * prior-knowledge h2c with nghttp2's server session on libuv. The calls
 * (routing by :path to the methods of ifd__grpc_methods, framing,
 * deadlines, statuses) are net/grpc_stream.c's; the transport knows nothing
 * of the methods' messages.
 *
 * Reading. All connections share one read buffer owned by the front end:
 * libuv calls alloc, read and the read callback back to back, and the
 * callback feeds everything to nghttp2_session_mem_recv before returning, so
 * no bytes wait in it and an idle connection holds no buffer. DATA payloads
 * are reassembled into one malloc'd buffer per gRPC message (allocated up to
 * min(declared, 64 MiB) at once and grown by doubling beyond, so a peer's
 * declared length alone cannot make us allocate much), whose ownership moves
 * to the method. nghttp2 sends WINDOW_UPDATEs itself as data is consumed; we
 * advertise 16 MiB stream and connection windows so big tensors flow.
 *
 * Writing. nghttp2_session_mem_send produces the frames. Control frames and
 * frame headers are small: they are copied into blocks of the connection's
 * next write batch. DATA frames use NGHTTP2_DATA_FLAG_NO_COPY: the
 * send_data callback appends the 9-byte frame header (copied) and iovecs
 * that point straight at the method's message pieces (not copied), so a
 * tensor goes from its output buffer to writev untouched. A message whose
 * last byte entered a batch moves to that batch's release list; its free_fn
 * runs once the batch's uv_write completes (or fails). Connections with
 * something to send are flushed by a uv_prepare handle just before the loop
 * blocks, so all output of one loop iteration goes in one uv_write; one write
 * is in flight per connection.
 *
 * Backpressure. A batch stops growing at MAX_BATCH_BYTES; while more than
 * OUT_HIGH_WATER bytes of the write in flight could not be handed to the
 * kernel, the connection stops reading (no new calls, no new input) until
 * the write completes. Bytes that HTTP/2 flow control holds back stay in the
 * streams' queues and do not pause reading: the peer's WINDOW_UPDATEs must
 * still be read. Those are bounded by MAX_CONCURRENT_STREAMS calls.
 *
 * Deadlines. Each connection has one uv_timer and a binary min-heap of its
 * streams' deadlines (grpc-timeout): O(log n) per stream, one timer armed for
 * the earliest.
 *
 * Lifetime. A stream (ifd_gstream_t) is counted: the transport's reference
 * is dropped when the HTTP/2 stream closes or the connection goes; a method
 * that answers later holds its own. A detached stream (conn == NULL) only
 * refuses sends. A connection's memory is freed in the close callback of
 * its last handle; nghttp2 callbacks never free it.
 */
#include <netdb.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <netdb.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/log.h"
#include "core/util.h"
#include "net/grpc_conn.h"
#include "net/listen.h"

#define STREAM_WINDOW (16 << 20)
#define CONN_WINDOW (16 << 20)
#define MAX_CONCURRENT_STREAMS 1024
#define MAX_HEADER_LIST (64 * 1024)
#define MAX_BATCH_BYTES ((size_t)32 << 20)
#define OUT_HIGH_WATER ((size_t)16 << 20)
#define BLOCK_SIZE 16384
#define DEFAULT_MAX_CONNECTIONS 65536u

static void close_conn(gconn_t *c, int graceful);
static void maybe_finish_stop(ifd_grpc_t *g);
static void on_prepare(uv_prepare_t *p);

int ifd_grpc_port(const ifd_grpc_t *g) {
  return g->port;
}

void ifd__gconn_mark_dirty(gconn_t *c) {
  ifd_grpc_t *g = c->g;

  if (c->closing || !link_empty(&c->dirty)) return;
  link_add(&g->dirty, &c->dirty);
  if (!uv_is_active((uv_handle_t *)&g->flusher))
    uv_prepare_start(&g->flusher, on_prepare);
}

static void mark_dirty(gconn_t *c) {
  ifd__gconn_mark_dirty(c);
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
  gconn_t *c = ifd_container_of(hd, gconn_t, tcp);

  (void)suggested;
  *buf = uv_buf_init(c->g->rbuf, READ_BUF_SIZE);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  gconn_t *c = ifd_container_of(s, gconn_t, tcp);
  ssize_t rc;

  if (nread == 0) return;
  if (nread < 0) {
    close_conn(c, 0);
    return;
  }
  if (c->closing) return;
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
  if (c->closing) return;
  if (status < 0) {
    close_conn(c, 0);
    return;
  }
  if (c->read_paused) {
    c->read_paused = 0;
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
  }
  flush(c);
}

/* Produces what nghttp2 has to send and writes it in one uv_write. */
static void flush(gconn_t *c) {
  batch_t tmp;

  if (c->closing || c->writing) return;
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
    if (!nghttp2_session_want_read(c->session) &&
        !nghttp2_session_want_write(c->session))
      close_conn(c, 1);
    return;
  }
  tmp = c->wb;
  c->wb = c->nb;
  c->nb = tmp;
  c->writing = 1;
  if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, c->wb.iov,
               (unsigned)c->wb.n_iov, on_write) != 0) {
    c->writing = 0;
    batch_reset(&c->wb);
    close_conn(c, 0);
    return;
  }
  if (!c->read_paused && c->tcp.write_queue_size > OUT_HIGH_WATER) {
    c->read_paused = 1;
    uv_read_stop((uv_stream_t *)&c->tcp);
  }
}

static void on_prepare(uv_prepare_t *p) {
  ifd_grpc_t *g = ifd_container_of(p, ifd_grpc_t, flusher);

  while (!link_empty(&g->dirty)) {
    gconn_t *c = ifd_container_of(g->dirty.next, gconn_t, dirty);
    link_del(&c->dirty);
    flush(c);
  }
  uv_prepare_stop(p);
}

/* ---- connection life ------------------------------------------------------
 */

static void on_handle_close(uv_handle_t *hd) {
  gconn_t *c = hd->data;
  ifd_grpc_t *g = c->g;

  if (--c->open_handles != 0) return;
  if (c->session != NULL) nghttp2_session_del(c->session);
  batch_reset(&c->wb);
  batch_reset(&c->nb);
  free(c->heap);
  link_del(&c->link);
  g->n_conns--;
  free(c);
  maybe_finish_stop(g);
}

static void on_shutdown(uv_shutdown_t *r, int status) {
  gconn_t *c = ifd_container_of(r, gconn_t, sreq);

  (void)status;
  uv_close((uv_handle_t *)&c->tcp, on_handle_close);
}

/* Closes now, or after a FIN (graceful: everything is written). Every
 * attached stream is cancelled first. */
static void close_conn(gconn_t *c, int graceful) {
  if (c->closing) return;
  c->closing = 1;
  link_del(&c->dirty);
  uv_read_stop((uv_stream_t *)&c->tcp);
  while (!link_empty(&c->streams)) {
    ifd_gstream_t *st = ifd_container_of(c->streams.next, ifd_gstream_t, link);
    if (c->session != NULL)
      nghttp2_session_set_stream_user_data(c->session, st->id, NULL);
    ifd__gstream_detach(st);
  }
  uv_close((uv_handle_t *)&c->timer, on_handle_close);
  if (graceful && !c->writing &&
      uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) == 0)
    return;
  uv_close((uv_handle_t *)&c->tcp, on_handle_close);
}

static int start_session(gconn_t *c) {
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, MAX_CONCURRENT_STREAMS},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST},
  };

  if (nghttp2_session_server_new(&c->session, c->g->cbs, c) != 0) {
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

static void on_connection(uv_stream_t *server, int status) {
  ifd_grpc_t *g = ifd_container_of(server, ifd_grpc_t, listener);
  gconn_t *c;

  if (status < 0) {
    IFD_WARN("gRPC accept failed: %s", uv_strerror(status));
    return;
  }
  c = calloc(1, sizeof(*c));
  if (c == NULL) return; /* libuv retries the accept later */
  c->g = g;
  link_init(&c->dirty);
  link_init(&c->streams);
  uv_tcp_init(g->loop, &c->tcp);
  uv_timer_init(g->loop, &c->timer);
  c->tcp.data = c;
  c->timer.data = c;
  c->open_handles = 2;
  link_add(&g->conns, &c->link);
  g->n_conns++;
  if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0 ||
      g->n_conns > g->max_connections || g->stopping) {
    close_conn(c, 0);
    return;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  if (start_session(c) != 0 ||
      uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
    close_conn(c, 0);
    return;
  }
  mark_dirty(c); /* our SETTINGS go first */
}

/* ---- start and stop --------------------------------------------------------
 */

static void free_grpc(ifd_grpc_t *g) {
  if (g->cbs != NULL) nghttp2_session_callbacks_del(g->cbs);
  free(g->mtab);
  free(g);
}

static void free_on_close(uv_handle_t *hd) {
  free_grpc(ifd_container_of(hd, ifd_grpc_t, listener));
}

int ifd_grpc_start(uv_loop_t *loop, ifd_server_t *server,
                   const ifd_grpc_opts_t *opts, ifd_grpc_t **out,
                   ifd_errmsg_t *err) {
  const char *host = opts->host != NULL ? opts->host : "0.0.0.0";
  int rc, open;
  ifd_grpc_t *g;

  g = calloc(1, sizeof(*g));
  if (g == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  g->loop = loop;
  g->server = server;
  g->max_message = opts->max_message_size != 0
                       ? opts->max_message_size
                       : IFD_GRPC_DEFAULT_MAX_MESSAGE_SIZE;
  g->max_connections = opts->max_connections != 0 ? opts->max_connections
                                                  : DEFAULT_MAX_CONNECTIONS;
  link_init(&g->conns);
  link_init(&g->dirty);
  if (ifd__grpc_callbacks_new(&g->cbs) != 0 || ifd__grpc_mtab_build(g) != 0) {
    free_grpc(g);
    return ifd_errf(err, IFD_ENOMEM, "out of memory");
  }

  rc = ifd__net_listen(loop, &g->listener, "gRPC", host, opts->port, 0,
                       on_connection, &g->port, &open, err);
  if (rc != 0) {
    if (open)
      uv_close((uv_handle_t *)&g->listener, free_on_close);
    else
      free_grpc(g);
    return rc;
  }
  uv_prepare_init(loop, &g->flusher);
  *out = g;
  return 0;
}

static void on_flusher_close(uv_handle_t *hd) {
  ifd_grpc_t *g = ifd_container_of(hd, ifd_grpc_t, flusher);
  void (*done)(void *) = g->done;
  void *arg = g->done_arg;

  free_grpc(g);
  if (done != NULL) done(arg);
}

static void maybe_finish_stop(ifd_grpc_t *g) {
  if (!g->stopping || !g->listener_closed || g->n_conns != 0) return;
  g->listener_closed = 0; /* run once */
  uv_close((uv_handle_t *)&g->flusher, on_flusher_close);
}

static void on_listener_close(uv_handle_t *hd) {
  ifd_grpc_t *g = ifd_container_of(hd, ifd_grpc_t, listener);

  g->listener_closed = 1;
  maybe_finish_stop(g);
}

void ifd_grpc_stop(ifd_grpc_t *g, void (*done)(void *arg), void *arg) {
  link_t *l, *next;

  g->stopping = 1;
  g->done = done;
  g->done_arg = arg;
  uv_close((uv_handle_t *)&g->listener, on_listener_close);
  for (l = g->conns.next; l != &g->conns; l = next) {
    gconn_t *c = ifd_container_of(l, gconn_t, link);
    next = l->next;
    if (c->closing) continue;
    c->stopping = 1;
    /* GOAWAY(2^31-1) first: the client opens no new stream; the final
     * GOAWAY with the last stream id follows when the calls are done. */
    nghttp2_submit_shutdown_notice(c->session);
    if (c->n_streams == 0) {
      c->terminated = 1;
      nghttp2_session_terminate_session(c->session, NGHTTP2_NO_ERROR);
    }
    mark_dirty(c);
  }
}
