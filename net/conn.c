/*
 * net/conn.c - the connection layer: listener, accept, connection list,
 * per-iteration flusher, timeout queues, per-connection timers, graceful
 * close and the shutdown deadline, shared by every protocol (see
 * net/conn.h).
 *
 * Accept. The listening socket is watched with a uv_poll_t and accepted
 * with accept4() here, not by uv_listen: libuv, out of descriptors, accepts
 * and closes pending clients silently (its EMFILE trick), and a listener
 * cannot pause. Each readable event accepts up to ACCEPT_BATCH sockets; a
 * socket is admitted into `spare` (allocated ahead) or a fresh calloc, or
 * closed at once when the set is full (--max-connections) or out of memory,
 * counted either way. EMFILE/ENFILE (and ENOBUFS/ENOMEM from the kernel)
 * stop the poll for IFD_CONN_FD_PAUSE_MS: pending clients wait in the
 * backlog; one warning a second at most.
 *
 * Timeout queues. See net/conn.h: arming appends at the tail of a queue of
 * one duration, so the head is always the earliest; the sweeper is armed for
 * the earliest head rounded up to IFD_CONN_SWEEP_MS, and a head that left
 * early only makes it wake once for nothing.
 *
 * Deferred work (ifd__conn_defer): connections wait in an array of the set
 * (a closing one is cleared from it) for a zero-delay timer, so that no
 * connection carries a handle or a link for it.
 *
 * Lingering close. After a graceful close's FIN the socket is still read,
 * and what comes is dropped, until the peer's FIN (or an error), for
 * IFD_CONN_LINGER_MS at most (the layer's own timeout queue): close(2) with
 * unread bytes would make the kernel send RST and drop the response bytes
 * still queued (an HTTP client that pipelined a request behind the last
 * response, say). ifd__conn_set_abort ends it.
 *
 * Lifetime. A connection is freed in the close callback of its last handle
 * (the socket, and the timer once used); the set is done once its listener,
 * pause, flusher, deadline, sweeper and defer handles and every connection
 * are closed.
 */
#include "base/check.h"
#include "net/conn.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"
#include "net/listen.h"

/* Sockets accepted per readable event, so that a connect storm does not
 * hold the loop. */
#define ACCEPT_BATCH 64
/* At most one warning this often while out of descriptors. */
#define FD_LOG_INTERVAL_MS 1000
/* Protocol labels in the process-wide counters. */
#define MAX_LABELS 8

static void on_prepare(uv_prepare_t *p);
static void maybe_finish(ifd_conn_set_t *set);

/* Process-wide counters, by protocol label: loop thread only. */
static ifd_conn_stats_t stats[MAX_LABELS];
static char stats_labels[MAX_LABELS + 1][16]; /* lower-cased names */
static size_t n_stats;
static ifd_conn_stats_t stats_overflow; /* more labels than MAX_LABELS */

/* The counters of proto's label (its name lower-cased when it has none). */
static ifd_conn_stats_t *stats_for(const ifd_conn_proto_t *proto) {
  const char *label = proto->label;
  size_t i;

  if (label == NULL) {
    char *l = stats_labels[n_stats]; /* free until kept below */
    for (i = 0; proto->name[i] != '\0' && i + 1 < sizeof(stats_labels[0]); i++)
      l[i] = (char)tolower((unsigned char)proto->name[i]);
    l[i] = '\0';
    label = l;
  }
  for (i = 0; i < n_stats; i++)
    if (strcmp(stats[i].label, label) == 0) return &stats[i];
  if (NEVER(n_stats == MAX_LABELS)) return &stats_overflow;
  stats[n_stats].label = label;
  return &stats[n_stats++];
}

const ifd_conn_stats_t *ifd__conn_stats(size_t *n) {
  *n = n_stats;
  return stats;
}

void ifd__conn_count_limit(ifd_conn_t *c, ifd_conn_limit_t why) {
  if (why < IFD_CONN_LIMIT_N) c->set->stats->closed[why]++;
}
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
    if (c->tls != NULL) ifd__tls_prepare(c);
    if (!c->closing) set->proto->on_flush(c);
  }
  uv_prepare_stop(p);
}

/* ---- reading and timers -------------------------------------------------- */

int ifd__conn_read_start(ifd_conn_t *c, uv_alloc_cb alloc, uv_read_cb cb) {
  if (c->closing) return UV_EINVAL;
  if (c->tls != NULL) return ifd__tls_read_start(c, alloc, cb);
  return uv_read_start((uv_stream_t *)&c->tcp, alloc, cb);
}

void ifd__conn_read_stop(ifd_conn_t *c) {
  if (c->tls != NULL) {
    ifd__tls_read_stop(c);
    return;
  }
  uv_read_stop((uv_stream_t *)&c->tcp);
}

int ifd__conn_try_write(ifd_conn_t *c, const uv_buf_t *bufs, unsigned n) {
  if (c->tls != NULL) return ifd__tls_try_write(c, bufs, n);
  return uv_try_write((uv_stream_t *)&c->tcp, bufs, n);
}

int ifd__conn_write(ifd_conn_t *c, uv_write_t *req, const uv_buf_t *bufs,
                    unsigned n, uv_write_cb cb) {
  if (c->tls != NULL) return ifd__tls_write(c, req, bufs, n, cb);
  return uv_write(req, (uv_stream_t *)&c->tcp, bufs, n, cb);
}

size_t ifd__conn_write_queue_size(const ifd_conn_t *c) {
  return c->tcp.write_queue_size +
         (c->tls != NULL ? ifd__tls_queued_bytes(c) : 0);
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

/* ---- timeout queues ------------------------------------------------------ */

static void on_sweep(uv_timer_t *t);
static void linger_end(ifd_conn_t *c);

/* Makes the sweeper fire no later than `due` (rounded up to the grain, so
 * that deadlines close together share one wake-up). */
static void sweep_arm(ifd_conn_set_t *set, uint64_t due) {
  uint64_t now = uv_now(set->loop);

  due = (due + IFD_CONN_SWEEP_MS - 1) / IFD_CONN_SWEEP_MS * IFD_CONN_SWEEP_MS;
  if (set->finished || (set->sweep_due != 0 && set->sweep_due <= due)) return;
  set->sweep_due = due;
  uv_timer_start(&set->sweeper, on_sweep, due > now ? due - now : 0, 0);
}

void ifd__conn_set_timeout(ifd_conn_set_t *set, unsigned q, uint64_t ms) {
  if (q < IFD_CONN_Q_LINGER) set->tq[q].ms = ms;
}

void ifd__conn_deadline_clear(ifd_conn_t *c) {
  if (c->tq == 0) return;
  ifd__link_del(&c->tq_link);
  c->tq = 0;
}

/* Puts `c` on queue `q` (on): now + its duration. */
static void tq_put(ifd_conn_t *c, unsigned q) {
  ifd_conn_set_t *set = c->set;
  ifd_conn_tq_t *tq = &set->tq[q];

  c->tq_due = uv_now(set->loop) + tq->ms;
  c->tq = (unsigned char)(q + 1);
  ifd__link_add(&tq->conns, &c->tq_link);
  /* Alone on the queue: it is the head, maybe the earliest of all. */
  if (tq->conns.next == &c->tq_link) sweep_arm(set, c->tq_due);
}

void ifd__conn_deadline(ifd_conn_t *c, unsigned q) {
  ifd__conn_deadline_clear(c);
  if (q >= IFD_CONN_Q_LINGER || c->closing || c->set->tq[q].ms == 0) return;
  tq_put(c, q);
}

void ifd__conn_touch(ifd_conn_t *c) {
  if (c->tq != 0) ifd__conn_deadline(c, (unsigned)c->tq - 1);
}

void ifd__conn_sweep(ifd_conn_set_t *set, uint64_t now) {
  uint64_t next = 0;
  unsigned q;

  set->sweep_due = 0;
  for (q = 0; q < IFD_CONN_NQUEUES; q++) {
    ifd_link_t *head = &set->tq[q].conns;
    while (!ifd__link_empty(head)) {
      ifd_conn_t *c = ifd_container_of(head->next, ifd_conn_t, tq_link);
      if (c->tq_due > now) break;
      ifd__conn_deadline_clear(c);
      if (q == IFD_CONN_Q_LINGER)
        linger_end(c);
      else if (set->proto->on_expire != NULL)
        set->proto->on_expire(c, q);
    }
  }
  /* Callbacks may have armed queues again: the earliest head of all. */
  for (q = 0; q < IFD_CONN_NQUEUES; q++) {
    ifd_link_t *head = &set->tq[q].conns;
    if (!ifd__link_empty(head)) {
      ifd_conn_t *c = ifd_container_of(head->next, ifd_conn_t, tq_link);
      if (next == 0 || c->tq_due < next) next = c->tq_due;
    }
  }
  if (next != 0) sweep_arm(set, next);
}

static void on_sweep(uv_timer_t *t) {
  ifd_conn_set_t *set = ifd_container_of(t, ifd_conn_set_t, sweeper);

  ifd__conn_sweep(set, uv_now(set->loop));
}

/* ---- deferred work ---------------------------------------------------------
 */

static void on_defer_timer(uv_timer_t *t) {
  ifd_conn_set_t *set = ifd_container_of(t, ifd_conn_set_t, defer_timer);
  unsigned i, n = set->n_deferred;

  /* Connections deferred by these callbacks are appended (the array may
   * move: indexes only) and wait for the next round, which ifd__conn_defer
   * armed. */
  for (i = 0; i < n; i++) {
    ifd_conn_t *c = set->deferred[i];
    if (c == NULL) continue;
    set->deferred[i] = NULL;
    c->deferred = 0;
    if (set->proto->on_deferred != NULL) set->proto->on_deferred(c);
  }
  if (set->deferred == NULL) return; /* the set finished meanwhile */
  memmove(set->deferred, set->deferred + n,
          (set->n_deferred - n) * sizeof(*set->deferred));
  set->n_deferred -= n;
}

int ifd__conn_defer(ifd_conn_t *c) {
  ifd_conn_set_t *set = c->set;

  if (c->deferred || c->closing || set->finished) return 0;
  if (set->n_deferred == set->cap_deferred) {
    unsigned cap = set->cap_deferred != 0 ? set->cap_deferred * 2 : 16;
    ifd_conn_t **a = realloc(set->deferred, cap * sizeof(*a));
    if (a == NULL) return IFD_ENOMEM;
    set->deferred = a;
    set->cap_deferred = cap;
  }
  set->deferred[set->n_deferred++] = c;
  c->deferred = 1;
  if (!uv_is_active((uv_handle_t *)&set->defer_timer))
    uv_timer_start(&set->defer_timer, on_defer_timer, 0, 0);
  return 0;
}

/* A closing connection leaves the deferred array (rare: a scan). */
static void undefer(ifd_conn_t *c) {
  ifd_conn_set_t *set = c->set;
  unsigned i;

  for (i = 0; i < set->n_deferred; i++)
    if (set->deferred[i] == c) set->deferred[i] = NULL;
  c->deferred = 0;
}

/* ---- closing ------------------------------------------------------------- */

static void on_conn_handle_close(uv_handle_t *hd) {
  ifd_conn_t *c = hd->data;
  ifd_conn_set_t *set = c->set;

  if (--c->open_handles != 0) return;
  ifd__tls_free(c); /* cancels a TLS write first: its callback runs */
  set->proto->on_free(c);
  ifd__link_del(&c->link);
  set->n_conns--;
  set->stats->open--;
  free(c);
  maybe_finish(set);
}

static void close_tcp(ifd_conn_t *c) {
  if (c->tcp_closing) return;
  c->tcp_closing = 1;
  uv_close((uv_handle_t *)&c->tcp, on_conn_handle_close);
}

/* ---- lingering close (see the top of this file) --------------------------
 */

static void linger_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *buf) {
  static char sink[4096]; /* loop thread only; the bytes are dropped */

  (void)hd;
  (void)suggested;
  *buf = uv_buf_init(sink, sizeof(sink));
}

static void linger_end(ifd_conn_t *c) {
  ifd__conn_deadline_clear(c);
  c->lingering = 0;
  close_tcp(c);
}

static void linger_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  (void)buf;
  if (nread < 0) linger_end(s->data); /* the peer's FIN, or an error */
}

static void on_shutdown(uv_shutdown_t *r, int status) {
  ifd_conn_t *c = ifd_container_of(r, ifd_conn_t, sreq);

  c->shut_done = 1;
  /* Not closed: the protocol's own lingering close reads on. */
  if (!c->closing) return;
  if (status == 0 && !c->set->aborted && !c->tcp_closing &&
      uv_read_start((uv_stream_t *)&c->tcp, linger_alloc, linger_read) == 0) {
    c->lingering = 1;
    tq_put(c, IFD_CONN_Q_LINGER);
    return;
  }
  close_tcp(c);
}

int ifd__conn_shutdown(ifd_conn_t *c) {
  int rc;

  if (c->closing || c->shut) return UV_EINVAL;
  rc = uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown);
  if (rc == 0) c->shut = 1;
  return rc;
}

void ifd__conn_close(ifd_conn_t *c, int graceful) {
  if (c->closing) return;
  c->closing = 1;
  ifd__link_del(&c->dirty);
  ifd__conn_deadline_clear(c);
  if (c->deferred) undefer(c);
  uv_read_stop((uv_stream_t *)&c->tcp);
  c->set->proto->on_closing(c);
  if (c->tls != NULL) ifd__tls_close(c, graceful); /* close_notify */
  if (c->timer_init) uv_close((uv_handle_t *)&c->timer, on_conn_handle_close);
  if (graceful && c->shut && !c->shut_done) return; /* on_shutdown closes */
  if (graceful && c->opened && !c->shut &&
      uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) == 0) {
    c->shut = 1;
    return;
  }
  close_tcp(c);
}

/* ---- accepting ----------------------------------------------------------- */

static void on_listen_io(uv_poll_t *p, int status, int events);

static void on_pause_end(uv_timer_t *t) {
  ifd_conn_set_t *set = ifd_container_of(t, ifd_conn_set_t, pause);

  if (set->listening) uv_poll_start(&set->listener, UV_READABLE, on_listen_io);
}

/* Out of descriptors (or kernel memory): stop accepting for a while rather
 * than spin on a listener that stays readable. One warning per
 * FD_LOG_INTERVAL_MS at most, counting the pauses since the last one. */
static void pause_accepting(ifd_conn_set_t *set, int err) {
  uint64_t now = uv_now(set->loop);

  set->stats->fd_pauses++;
  set->fd_unlogged++;
  if (set->fd_logged_at == 0 || now - set->fd_logged_at >= FD_LOG_INTERVAL_MS) {
    IFD_WARN(
        "%s: cannot accept a connection: %s (%u open): pausing accepting "
        "for %d ms (%u pause(s) since the last warning)",
        set->proto->name, strerror(err), set->n_conns, IFD_CONN_FD_PAUSE_MS,
        set->fd_unlogged);
    set->fd_logged_at = now != 0 ? now : 1;
    set->fd_unlogged = 0;
  }
  uv_poll_stop(&set->listener);
  uv_timer_start(&set->pause, on_pause_end, IFD_CONN_FD_PAUSE_MS, 0);
}

/* Takes the accepted socket `fd` into a connection, or closes it. */
/* Makes socket `fd` a connection of `set`. Returns 0 once the connection
 * owns `fd` (even if on_open refused it and it is closing), or IFD_EUNAVAIL
 * (--max-connections), IFD_ENOMEM or IFD_EIO (libuv refused `fd`), each
 * counted, after which the caller still owns `fd`. */
static int admit(ifd_conn_set_t *set, int fd) {
  ifd_conn_t *c;

  if (set->max_connections != 0 && set->n_conns >= set->max_connections) {
    set->stats->rejected_max++;
    return IFD_EUNAVAIL;
  }
  c = set->spare;
  set->spare = NULL;
  if (c == NULL) c = calloc(1, set->proto->size);
  if (c == NULL) {
    set->stats->rejected_nomem++;
    IFD_WARN("%s: out of memory for a new connection: closing it",
             set->proto->name);
    return IFD_ENOMEM;
  }
  c->set = set;
  ifd__link_init(&c->dirty);
  ifd__link_init(&c->tq_link);
  uv_tcp_init(set->loop, &c->tcp);
  c->tcp.data = c;
  c->timer.data = c;
  c->open_handles = 1;
  ifd__link_add(&set->conns, &c->link);
  set->n_conns++;
  set->stats->open++;
  if (uv_tcp_open(&c->tcp, fd) != 0) {
    ifd__conn_close(c, 0);
    return IFD_EIO;
  }
  set->stats->accepted++;
  uv_tcp_nodelay(&c->tcp, 1); /* fails, harmlessly, on a socketpair */
  if ((set->tls != NULL && ifd__tls_attach(c, set->tls) != 0) ||
      set->proto->on_open(c) != 0) {
    ifd__conn_close(c, 0);
    return 0;
  }
  c->opened = 1;
  /* For the next accept; if this fails, that one tries calloc again. */
  set->spare = calloc(1, set->proto->size);
  return 0;
}

/* A test seam (the fuzz targets under test/fuzz/ feed a protocol bytes
 * through one end of a socketpair): an already connected socket admitted
 * as if accepted. */
int ifd__conn_set_adopt(ifd_conn_set_t *set, uv_os_sock_t fd) {
  if (set->stopping) return IFD_EINVAL;
  return admit(set, fd);
}

static void on_listen_io(uv_poll_t *p, int status, int events) {
  ifd_conn_set_t *set = ifd_container_of(p, ifd_conn_set_t, listener);
  int i, fd;

  (void)events;
  if (status < 0) {
    IFD_WARN("%s: listener error: %s", set->proto->name, uv_strerror(status));
    return;
  }
  for (i = 0; i < ACCEPT_BATCH && set->listening && !set->stopping; i++) {
    fd = accept4(set->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      if (admit(set, fd) != 0) close(fd);
      continue;
    }
    switch (errno) {
      case EINTR:
      case ECONNABORTED:
      case EPROTO:
        continue; /* that client is gone; try the next */
      case EMFILE:
      case ENFILE:
      case ENOBUFS:
      case ENOMEM:
        pause_accepting(set, errno);
        return;
      case EAGAIN:
#if EWOULDBLOCK != EAGAIN
      case EWOULDBLOCK:
#endif
        return;
      default:
        IFD_WARN("%s: accept failed: %s", set->proto->name, strerror(errno));
        return;
    }
  }
}

/* ---- the set ------------------------------------------------------------- */

static void on_set_handle_close(uv_handle_t *hd) {
  ifd_conn_set_t *set = hd->data;

  if (--set->open_handles == 0 && set->closed != NULL) set->closed(set);
}

static void maybe_finish(ifd_conn_set_t *set) {
  if (!set->stopping || set->finished || set->n_conns != 0) return;
  set->finished = 1;
  uv_close((uv_handle_t *)&set->flusher, on_set_handle_close);
  uv_close((uv_handle_t *)&set->deadline, on_set_handle_close);
  uv_close((uv_handle_t *)&set->sweeper, on_set_handle_close);
  uv_close((uv_handle_t *)&set->pause, on_set_handle_close);
  uv_close((uv_handle_t *)&set->defer_timer, on_set_handle_close);
  free(set->deferred);
  set->deferred = NULL;
  set->n_deferred = set->cap_deferred = 0;
}

/* The listening socket goes with its poll handle. */
static void on_listener_close(uv_handle_t *hd) {
  ifd_conn_set_t *set = hd->data;

  close(set->listen_fd);
  set->listen_fd = -1;
  ifd__net_unlink_unix(&set->unix_file);
  on_set_handle_close(hd);
}

int ifd__conn_set_start(ifd_conn_set_t *set, uv_loop_t *loop,
                        const ifd_conn_proto_t *proto, const char *host,
                        int port, int reuse_port, unsigned max_connections,
                        ifd_errmsg_t *err) {
  unsigned q;
  int rc;

  set->loop = loop;
  set->proto = proto;
  set->stats = stats_for(proto);
  set->max_connections = max_connections;
  set->listen_fd = -1;
  ifd__link_init(&set->conns);
  ifd__link_init(&set->dirty);
  for (q = 0; q < IFD_CONN_NQUEUES; q++) ifd__link_init(&set->tq[q].conns);
  set->tq[IFD_CONN_Q_LINGER].ms = IFD_CONN_LINGER_MS;
  uv_prepare_init(loop, &set->flusher);
  uv_timer_init(loop, &set->deadline);
  uv_timer_init(loop, &set->sweeper);
  uv_timer_init(loop, &set->pause);
  uv_timer_init(loop, &set->defer_timer);
  set->flusher.data = set;
  set->deadline.data = set;
  set->sweeper.data = set;
  set->pause.data = set;
  set->defer_timer.data = set;
  set->open_handles = 5;
  rc = ifd__net_listen(proto->name, host, port, reuse_port, set->unix_perm,
                       &set->listen_fd, &set->port, &set->unix_file, err);
  if (rc != 0) return rc;
  rc = uv_poll_init_socket(loop, &set->listener, set->listen_fd);
  if (rc != 0) {
    close(set->listen_fd);
    set->listen_fd = -1;
    ifd__net_unlink_unix(&set->unix_file);
    return ifd_errf(err, IFD_EIO, "unable to watch the %s socket: %s",
                    proto->name, uv_strerror(rc));
  }
  set->listener.data = set;
  set->open_handles++;
  set->listening = 1;
  uv_poll_start(&set->listener, UV_READABLE, on_listen_io);
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
    uv_timer_stop(&set->pause);
    uv_close((uv_handle_t *)&set->listener, on_listener_close);
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

  set->aborted = 1;
  for (l = set->conns.next; l != &set->conns; l = next) {
    ifd_conn_t *c = ifd_container_of(l, ifd_conn_t, link);
    next = l->next;
    if (c->lingering)
      linger_end(c);
    else
      ifd__conn_close(c, 0);
  }
}
