/*
 * net/conn.c - the connection layer: listener, accept, connection list,
 * per-iteration flusher, per-connection timers, graceful close and the
 * shutdown deadline, shared by every protocol (see net/conn.h).
 *
 * Accept. libuv accepts a pending connection itself and then calls the
 * connection callback; until uv_accept takes that socket, it stops watching
 * the listener. So every callback must end in uv_accept. The connection
 * object comes from `spare` (allocated ahead), else from calloc; when both
 * are missing the socket is accepted into `reject` and closed, so the client
 * sees the connection end and the listener keeps accepting. Should a second
 * connection need rejecting while `reject` is still closing, its uv_accept
 * is owed and paid from reject's close callback.
 *
 * Lifetime. A connection is freed in the close callback of its last handle
 * (the socket, and the timer once used); the set is done once its listener,
 * reject, flusher and deadline handles and every connection are closed.
 */
#include "net/conn.h"

#include <stdlib.h>

#include "core/log.h"
#include "core/util.h"
#include "net/listen.h"

static void on_prepare(uv_prepare_t *p);
static void maybe_finish(ifd_conn_set_t *set);

/* ---- dirty list and flusher ------------------------------------------- */

void ifd__conn_mark_dirty(ifd_conn_t *c) {
  ifd_conn_set_t *set = c->set;

  if (c->closing || !ifd__link_empty(&c->dirty)) return;
  ifd__link_add(&set->dirty, &c->dirty);
  if (!uv_is_active((uv_handle_t *)&set->flusher))
    uv_prepare_start(&set->flusher, on_prepare);
}

static void on_prepare(uv_prepare_t *p) {
  ifd_conn_set_t *set = ifd_container_of(p, ifd_conn_set_t, flusher);

  while (!ifd__link_empty(&set->dirty)) {
    ifd_conn_t *c = ifd_container_of(set->dirty.next, ifd_conn_t, dirty);
    ifd__link_del(&c->dirty);
    set->proto->on_flush(c);
  }
  uv_prepare_stop(p);
}

/* ---- reading and timers -------------------------------------------------- */

int ifd__conn_read_start(ifd_conn_t *c, uv_alloc_cb alloc, uv_read_cb cb) {
  if (c->closing) return UV_EINVAL;
  return uv_read_start((uv_stream_t *)&c->tcp, alloc, cb);
}

void ifd__conn_read_stop(ifd_conn_t *c) {
  uv_read_stop((uv_stream_t *)&c->tcp);
}

static void on_timer(uv_timer_t *t) {
  ifd_conn_t *c = ifd_container_of(t, ifd_conn_t, timer);

  if (c->set->proto->on_timer != NULL) c->set->proto->on_timer(c);
}

void ifd__conn_timer_start(ifd_conn_t *c, uint64_t ms) {
  if (c->closing) return;
  if (!c->timer_init) {
    uv_timer_init(c->set->loop, &c->timer);
    c->timer_init = 1;
    c->open_handles++;
  }
  uv_timer_start(&c->timer, on_timer, ms, 0);
}

void ifd__conn_timer_stop(ifd_conn_t *c) {
  if (c->timer_init) uv_timer_stop(&c->timer);
}

/* ---- closing ------------------------------------------------------------- */

static void on_conn_handle_close(uv_handle_t *hd) {
  ifd_conn_t *c = hd->data;
  ifd_conn_set_t *set = c->set;

  if (--c->open_handles != 0) return;
  set->proto->on_free(c);
  ifd__link_del(&c->link);
  set->n_conns--;
  free(c);
  maybe_finish(set);
}

static void on_shutdown(uv_shutdown_t *r, int status) {
  ifd_conn_t *c = ifd_container_of(r, ifd_conn_t, sreq);

  (void)status;
  uv_close((uv_handle_t *)&c->tcp, on_conn_handle_close);
}

void ifd__conn_close(ifd_conn_t *c, int graceful) {
  if (c->closing) return;
  c->closing = 1;
  ifd__link_del(&c->dirty);
  uv_read_stop((uv_stream_t *)&c->tcp);
  c->set->proto->on_closing(c);
  if (c->timer_init) uv_close((uv_handle_t *)&c->timer, on_conn_handle_close);
  if (graceful && c->opened &&
      uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) == 0)
    return;
  uv_close((uv_handle_t *)&c->tcp, on_conn_handle_close);
}

/* ---- accepting ----------------------------------------------------------- */

static void on_connection(uv_stream_t *l, int status);

static void on_reject_close(uv_handle_t *hd) {
  ifd_conn_set_t *set = ifd_container_of(hd, ifd_conn_set_t, reject);

  set->reject_busy = 0;
  if (set->accept_owed) {
    set->accept_owed = 0;
    if (!set->stopping) on_connection((uv_stream_t *)&set->listener, 0);
  }
  maybe_finish(set);
}

/* Accepts the pending connection into `reject` and closes it: no memory for
 * a connection, but the listener must keep accepting. */
static void reject_one(ifd_conn_set_t *set) {
  if (set->reject_busy) {
    set->accept_owed = 1; /* paid by on_reject_close */
    return;
  }
  IFD_WARN("%s: out of memory for a new connection: closing it",
           set->proto->name);
  uv_tcp_init(set->loop, &set->reject);
  set->reject_busy = 1;
  (void)uv_accept((uv_stream_t *)&set->listener, (uv_stream_t *)&set->reject);
  uv_close((uv_handle_t *)&set->reject, on_reject_close);
}

static void on_connection(uv_stream_t *l, int status) {
  ifd_conn_set_t *set = ifd_container_of(l, ifd_conn_set_t, listener);
  ifd_conn_t *c;

  if (status < 0) {
    IFD_WARN("%s accept failed: %s", set->proto->name, uv_strerror(status));
    return;
  }
  c = set->spare;
  set->spare = NULL;
  if (c == NULL) c = calloc(1, set->proto->size);
  if (c == NULL) {
    reject_one(set);
    return;
  }
  c->set = set;
  ifd__link_init(&c->dirty);
  uv_tcp_init(set->loop, &c->tcp);
  c->tcp.data = c;
  c->timer.data = c;
  c->open_handles = 1;
  ifd__link_add(&set->conns, &c->link);
  set->n_conns++;
  if (uv_accept(l, (uv_stream_t *)&c->tcp) != 0 ||
      (set->max_connections != 0 && set->n_conns > set->max_connections) ||
      set->stopping) {
    ifd__conn_close(c, 0);
    return;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  if (set->proto->on_open(c) != 0) {
    ifd__conn_close(c, 0);
    return;
  }
  c->opened = 1;
  /* For the next accept; if this fails, that one tries calloc again. */
  set->spare = calloc(1, set->proto->size);
}

/* A test seam (the fuzz targets under test/fuzz/): the same steps as
 * on_connection with an already connected socket in place of uv_accept, so
 * a test feeds a protocol bytes through one end of a socketpair. Kept apart
 * from on_connection, which it must stay in step with. */
int ifd__conn_set_adopt(ifd_conn_set_t *set, uv_os_sock_t fd) {
  ifd_conn_t *c;

  if (set->stopping) return IFD_EINVAL;
  c = calloc(1, set->proto->size);
  if (c == NULL) return IFD_ENOMEM;
  c->set = set;
  ifd__link_init(&c->dirty);
  uv_tcp_init(set->loop, &c->tcp);
  c->tcp.data = c;
  c->timer.data = c;
  c->open_handles = 1;
  ifd__link_add(&set->conns, &c->link);
  set->n_conns++;
  if (uv_tcp_open(&c->tcp, fd) != 0) {
    ifd__conn_close(c, 0);
    return IFD_EIO;
  }
  if (set->proto->on_open(c) != 0) {
    ifd__conn_close(c, 0);
    return 0;
  }
  c->opened = 1;
  return 0;
}

/* ---- the set ------------------------------------------------------------- */

static void on_set_handle_close(uv_handle_t *hd) {
  ifd_conn_set_t *set = hd->data;

  if (--set->open_handles == 0 && set->closed != NULL) set->closed(set);
}

static void maybe_finish(ifd_conn_set_t *set) {
  if (!set->stopping || set->finished || set->n_conns != 0 || set->reject_busy)
    return;
  set->finished = 1;
  uv_close((uv_handle_t *)&set->flusher, on_set_handle_close);
  uv_close((uv_handle_t *)&set->deadline, on_set_handle_close);
}

int ifd__conn_set_start(ifd_conn_set_t *set, uv_loop_t *loop,
                        const ifd_conn_proto_t *proto, const char *host,
                        int port, int reuse_port, unsigned max_connections,
                        ifd_errmsg_t *err) {
  int open = 0, rc;

  set->loop = loop;
  set->proto = proto;
  set->max_connections = max_connections;
  ifd__link_init(&set->conns);
  ifd__link_init(&set->dirty);
  uv_prepare_init(loop, &set->flusher);
  uv_timer_init(loop, &set->deadline);
  set->flusher.data = set;
  set->deadline.data = set;
  set->open_handles = 2;
  rc = ifd__net_listen(loop, &set->listener, proto->name, host, port,
                       reuse_port, on_connection, &set->port, &open, err);
  if (open) {
    set->listener.data = set;
    set->open_handles++;
  }
  set->listening = open != 0;
  if (rc != 0) return rc;
  set->spare = calloc(1, proto->size);
  if (set->spare == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  return 0;
}

static void on_deadline(uv_timer_t *t) {
  ifd_conn_set_t *set = ifd_container_of(t, ifd_conn_set_t, deadline);

  if (set->n_conns != 0)
    IFD_WARN("%s: exit timeout reached: closing %u connection(s)",
             set->proto->name, set->n_conns);
  ifd__conn_set_abort(set);
}

/* Calls on_stop(phase) for every connection; a callback may close its own
 * connection, but its memory stays until a close callback, so `next` holds. */
static void each_stop(ifd_conn_set_t *set, ifd_conn_phase_t phase) {
  ifd_link_t *l, *next;

  for (l = set->conns.next; l != &set->conns; l = next) {
    ifd_conn_t *c = ifd_container_of(l, ifd_conn_t, link);
    next = l->next;
    if (c->closing || !c->opened) continue;
    c->stopping = 1;
    set->proto->on_stop(c, phase);
  }
}

void ifd__conn_set_stop(ifd_conn_set_t *set, uint64_t deadline_ms,
                        void (*closed)(ifd_conn_set_t *set)) {
  uint64_t now = uv_now(set->loop);

  set->stopping = 1;
  set->closed = closed;
  free(set->spare);
  set->spare = NULL;
  if (set->listening) {
    set->listening = 0;
    uv_close((uv_handle_t *)&set->listener, on_set_handle_close);
  }
  each_stop(set, IFD_CONN_DRAIN);
  if (deadline_ms != 0)
    uv_timer_start(&set->deadline, on_deadline,
                   deadline_ms > now ? deadline_ms - now : 0, 0);
  maybe_finish(set);
}

void ifd__conn_set_close(ifd_conn_set_t *set) {
  each_stop(set, IFD_CONN_CLOSE);
}

void ifd__conn_set_abort(ifd_conn_set_t *set) {
  ifd_link_t *l, *next;

  for (l = set->conns.next; l != &set->conns; l = next) {
    ifd_conn_t *c = ifd_container_of(l, ifd_conn_t, link);
    next = l->next;
    ifd__conn_close(c, 0);
  }
}
