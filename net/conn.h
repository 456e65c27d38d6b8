/*
 * net/conn.h - the connection layer under every front end (HTTP/1.1, gRPC,
 * metrics): the listener and accept, the connection list, the flusher that
 * writes once per loop iteration, per-connection timers, graceful close and
 * the shutdown deadline.
 *
 * A protocol connection embeds ifd_conn_t as its FIRST member and describes
 * itself with a const ifd_conn_proto_t (h2o's base-connection pattern); a
 * front end embeds an ifd_conn_set_t, which owns the listening socket and
 * every connection accepted on it. Everything runs on the loop thread.
 *
 * Accept never stalls: the set accepts itself (accept4 on the listening
 * socket, watched by a uv_poll_t) and admits each socket into a connection
 * object allocated ahead of time (or fresh); a socket beyond
 * --max-connections, or with no memory for its connection, is closed at
 * once and counted, so the listen backlog never fills with clients nobody
 * serves. When the process runs out of file descriptors (EMFILE/ENFILE)
 * accepting pauses for IFD_CONN_FD_PAUSE_MS instead of spinning (libuv's own
 * accept would close such clients silently), warns at most once a second
 * and counts every pause; the waiting clients stay in the backlog until
 * descriptors free up.
 *
 * Timeouts (header, body, idle: anything per connection) cost no handle per
 * connection: a set has a few timeout queues, each with one duration, and a
 * connection sits on at most one of them. Arming puts it at the tail with
 * deadline now + duration, so every queue stays sorted by deadline for free;
 * one coarse timer per set (IFD_CONN_SWEEP_MS granularity) wakes at the
 * earliest head and expires what is due (proto->on_expire).
 *
 * Shutdown has one deadline: ifd__conn_set_stop() closes the listener and
 * asks every connection to drain (no new requests, finish those in flight);
 * ifd__conn_set_close() asks them to end what is still open (gRPC answers
 * open calls UNAVAILABLE); at the deadline every connection left is closed
 * hard. The set's `closed` callback runs once every handle is closed.
 */
#ifndef IFD_NET_CONN_H
#define IFD_NET_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "base/error.h"
#include "net/listen.h"
#include "net/tls.h"

/** An intrusive doubly linked list node (a list head is a node too). */
typedef struct ifd_link {
  struct ifd_link *prev, *next; /* borrowed: neighbours in one list */
} ifd_link_t;

static inline void ifd__link_init(ifd_link_t *l) {
  l->prev = l->next = l;
}
static inline int ifd__link_empty(const ifd_link_t *l) {
  return l->next == l;
}
static inline void ifd__link_add(ifd_link_t *head, ifd_link_t *l) {
  l->prev = head->prev;
  l->next = head;
  head->prev->next = l;
  head->prev = l;
}
static inline void ifd__link_del(ifd_link_t *l) {
  l->prev->next = l->next;
  l->next->prev = l->prev;
  ifd__link_init(l);
}

typedef struct ifd_conn ifd_conn_t;
typedef struct ifd_conn_set ifd_conn_set_t;

/** Shutdown phases handed to ifd_conn_proto_t.on_stop. */
typedef enum ifd_conn_phase {
  /* Stop taking new requests; let those in flight finish; close when idle. */
  IFD_CONN_DRAIN = 1,
  /* Nothing more is coming from the core: end what is still open (gRPC:
   * UNAVAILABLE) and close once the last bytes are written. */
  IFD_CONN_CLOSE = 2,
} ifd_conn_phase_t;

/** What a protocol tells the connection layer. All callbacks: loop thread. */
typedef struct ifd_conn_proto {
  const char *name; /* "HTTP", "gRPC": for logs */
  size_t size;      /* bytes of the protocol connection; ifd_conn_t first */
  /** Accepted (the rest of the struct is zeroed): set up and start reading
   *  (ifd__conn_read_start). Returns 0, or non-zero to close it at once. */
  int (*on_open)(ifd_conn_t *c);
  /** The connection was marked dirty this iteration: write what is ready. */
  void (*on_flush)(ifd_conn_t *c);
  /** The connection's timer fired (may be NULL when no timer is used). */
  void (*on_timer)(ifd_conn_t *c);
  /** A shutdown phase began (see ifd_conn_phase_t). */
  void (*on_stop)(ifd_conn_t *c, ifd_conn_phase_t phase);
  /** ifd__conn_close was called: drop or orphan the calls in flight. Runs
   *  once, before the handles close; also for a connection whose on_open
   *  never ran (c->opened == 0). */
  void (*on_closing)(ifd_conn_t *c);
  /** Every handle is closed: free what the protocol part owns (not `c`). */
  void (*on_free)(ifd_conn_t *c);
  /** c's deadline on timeout queue `q` passed; c is off every queue now
   *  (may be NULL when no timeout queue is used). */
  void (*on_expire)(ifd_conn_t *c, unsigned q);
  /** ifd__conn_defer asked for it (may be NULL when never asked). */
  void (*on_deferred)(ifd_conn_t *c);
  /** The `protocol` label of the set's metrics ("http", "grpc"); NULL: the
   *  name. */
  const char *label;
} ifd_conn_proto_t;

/* Timeout queues per set (see the top of this file): the protocol's
 * 0 .. IFD_CONN_NQUEUES - 2, and the last one the connection layer's own
 * (lingering closes, IFD_CONN_LINGER_MS). */
#define IFD_CONN_NQUEUES 5
#define IFD_CONN_Q_LINGER (IFD_CONN_NQUEUES - 1)
/* The longest a closed connection is read (and what comes dropped) after
 * its FIN, waiting for the peer's (see "lingering close" in conn.c). */
#define IFD_CONN_LINGER_MS 5000
/* Granularity of the sweep timer: deadlines fire up to this much late. */
#define IFD_CONN_SWEEP_MS 250
/* How long accepting pauses when the process is out of file descriptors. */
#define IFD_CONN_FD_PAUSE_MS 100

/** Why a protocol closed a connection on a limit (for metrics). */
typedef enum ifd_conn_limit {
  IFD_CONN_LIMIT_HEADER_SIZE,    /* 431: request line and headers too large */
  IFD_CONN_LIMIT_HEADER_COUNT,   /* 431: too many header fields */
  IFD_CONN_LIMIT_HEADER_TIMEOUT, /* 408: headers not complete in time */
  IFD_CONN_LIMIT_BODY_TIMEOUT,   /* 408: body stalled */
  IFD_CONN_LIMIT_IDLE_TIMEOUT,   /* idle keep-alive connection closed */
  IFD_CONN_LIMIT_N
} ifd_conn_limit_t;

/** Counters of one protocol label, for /metrics. Loop thread only. */
typedef struct ifd_conn_stats {
  const char *label;       /* borrowed: static (proto->label or name) */
  uint64_t open;           /* connections open now */
  uint64_t accepted;       /* connections admitted */
  uint64_t rejected_max;   /* closed at accept: --max-connections */
  uint64_t rejected_nomem; /* closed at accept: no memory */
  uint64_t fd_pauses;      /* accepting paused: EMFILE/ENFILE */
  uint64_t closed[IFD_CONN_LIMIT_N]; /* closed on a protocol limit */
} ifd_conn_stats_t;

/** A timeout queue: connections in deadline order (same duration each). */
typedef struct ifd_conn_tq {
  ifd_link_t conns; /* ifd_conn.tq_link, earliest deadline first */
  uint64_t ms;      /* the duration; 0: the queue is off */
} ifd_conn_tq_t;

struct ifd_conn {
  uv_tcp_t tcp;        /* embedded: the socket */
  uv_timer_t timer;    /* embedded: initialized on first use */
  uv_shutdown_t sreq;  /* embedded: graceful close */
  ifd_conn_set_t *set; /* borrowed: outlives the connection */
  ifd_link_t link;     /* in set->conns */
  ifd_link_t dirty;    /* in set->dirty while a flush is wanted */
  ifd_link_t tq_link;  /* in set->tq[tq - 1].conns while tq != 0 */
  uint64_t tq_due;     /* deadline on that queue (uv_now() time) */
  unsigned char tq;    /* 1 + the timeout queue it is on; 0: none */
  ifd_tls_conn_t *tls; /* owned: NULL unless the set serves TLS */
  unsigned open_handles;
  unsigned opened : 1;      /* on_open succeeded */
  unsigned closing : 1;     /* ifd__conn_close was called */
  unsigned stopping : 1;    /* a shutdown phase reached it */
  unsigned timer_init : 1;  /* `timer` is initialized */
  unsigned shut : 1;        /* a shutdown (FIN) was asked for */
  unsigned shut_done : 1;   /* ... and its callback ran */
  unsigned tcp_closing : 1; /* uv_close was called on `tcp` */
  unsigned deferred : 1;    /* in set->deferred */
  unsigned lingering : 1;   /* closed, after its FIN: read to the peer's,
                               on queue IFD_CONN_Q_LINGER */
};

struct ifd_conn_set {
  uv_poll_t listener;            /* embedded: watches listen_fd */
  uv_timer_t pause;              /* embedded: resumes accepting after EMFILE */
  uv_prepare_t flusher;          /* embedded: flushes dirty connections */
  uv_timer_t deadline;           /* embedded: the shutdown deadline */
  uv_timer_t sweeper;            /* embedded: expires timeout queues */
  uv_timer_t defer_timer;        /* embedded: runs on_deferred */
  uv_loop_t *loop;               /* borrowed */
  const ifd_conn_proto_t *proto; /* borrowed: static */
  ifd_conn_stats_t *stats;       /* borrowed: static (process-wide table) */
  ifd_conn_t *spare;             /* owned: allocated ahead for an accept */
  ifd_link_t conns;              /* every open connection (ifd_conn.link) */
  ifd_link_t dirty;              /* connections to flush (ifd_conn.dirty) */
  ifd_conn_tq_t tq[IFD_CONN_NQUEUES]; /* timeout queues */
  uint64_t sweep_due;                 /* when `sweeper` fires; 0: idle */
  ifd_conn_t **deferred; /* owned array of borrowed: NULL once closed */
  unsigned n_deferred, cap_deferred;
  int listen_fd;         /* owned: closed with `listener` */
  uint64_t fd_logged_at; /* uv_now() of the last out-of-descriptors warning */
  unsigned fd_unlogged;  /* pauses since that warning */
  unsigned n_conns;
  unsigned max_connections;
  int port;
  unsigned open_handles; /* set handles until their close callbacks */
  unsigned listening : 1;
  unsigned stopping : 1;
  unsigned finished : 1; /* the closing of the set's handles began */
  unsigned aborted : 1;  /* ifd__conn_set_abort ran: no more lingering */
  void (*closed)(ifd_conn_set_t *set); /* runs once every handle is closed */
  /* borrowed: outlives the set; NULL: plain TCP. Set by the front end
   * before the loop runs (see net/tls.h). */
  ifd_tls_ctx_t *tls;
  /* borrowed: outlives the set; NULL: defaults. A "unix:" listener's file
   * mode and owner, set like `tls` before the start. */
  const ifd_unix_perm_t *unix_perm;
  ifd_unix_file_t unix_file; /* owned: a "unix:" listener's socket file,
                                removed when the listener closes */
};

/**
 * Initializes `set` on `loop` and starts listening on host:port, or on the
 * Unix domain socket of a "unix:<path>" host (see ifd__net_listen; its file
 * is removed when the listener closes). `proto` must outlive the set.
 * `max_connections` 0 means unlimited. Returns 0, or IFD_EIO with a message
 * naming the address, or IFD_ENOMEM. On failure the set still needs
 * ifd__conn_set_stop (whose `closed` then runs) before its memory goes.
 */
int ifd__conn_set_start(ifd_conn_set_t *set, uv_loop_t *loop,
                        const ifd_conn_proto_t *proto, const char *host,
                        int port, int reuse_port, unsigned max_connections,
                        ifd_errmsg_t *err);

/**
 * Begins the shutdown: stops accepting and sends IFD_CONN_DRAIN to every
 * connection. `deadline_ms` (uv_now() time; 0: none) is when every
 * connection still open is closed hard. `closed(set)` runs on the loop once
 * the listener and every connection are closed; the set's memory may be
 * freed there. Call once.
 */
void ifd__conn_set_stop(ifd_conn_set_t *set, uint64_t deadline_ms,
                        void (*closed)(ifd_conn_set_t *set));

/** Sends IFD_CONN_CLOSE to every connection (after ifd__conn_set_stop). */
void ifd__conn_set_close(ifd_conn_set_t *set);

/** Closes every connection now, lingering ones included (after
 *  ifd__conn_set_stop). */
void ifd__conn_set_abort(ifd_conn_set_t *set);

/** Asks for c's on_flush before the loop next blocks (once per iteration). */
void ifd__conn_mark_dirty(ifd_conn_t *c);

/** Starts reading with the protocol's callbacks. Returns 0 or a libuv code. */
int ifd__conn_read_start(ifd_conn_t *c, uv_alloc_cb alloc, uv_read_cb cb);
void ifd__conn_read_stop(ifd_conn_t *c);

/**
 * uv_try_write and uv_write on c's socket, through TLS when the set serves
 * it (see net/tls.h: same contracts; one ifd__conn_write in flight, whose
 * callback runs with UV_ECANCELED when the connection closes first). A
 * protocol writes only through these.
 */
int ifd__conn_try_write(ifd_conn_t *c, const uv_buf_t *bufs, unsigned n);
int ifd__conn_write(ifd_conn_t *c, uv_write_t *req, const uv_buf_t *bufs,
                    unsigned n, uv_write_cb cb);
/** Bytes written to `c` that the kernel has not taken yet (libuv's
 *  write_queue_size, plus what TLS still holds, plaintext or not). */
size_t ifd__conn_write_queue_size(const ifd_conn_t *c);

/**
 * Sets the duration of timeout queue `q` (< IFD_CONN_Q_LINGER: the last
 * queue is the connection layer's own) to `ms`; 0 turns the queue off (arming
 * it then takes the connection off every queue). Call before connections use
 * it: those already on `q` keep their deadlines.
 */
void ifd__conn_set_timeout(ifd_conn_set_t *set, unsigned q, uint64_t ms);

/** (Re)starts c's deadline on queue `q`: now + the queue's duration. A
 *  connection is on one queue at most: this takes it off any other. */
void ifd__conn_deadline(ifd_conn_t *c, unsigned q);

/** Restarts c's deadline on the queue it is on (activity); none: nothing. */
void ifd__conn_touch(ifd_conn_t *c);

/** Takes c off its timeout queue. */
void ifd__conn_deadline_clear(ifd_conn_t *c);

/** Expires every deadline at or before `now` (the sweeper calls it with
 *  uv_now(); exposed for tests) and re-arms the sweeper. */
void ifd__conn_sweep(ifd_conn_set_t *set, uint64_t now);

/**
 * Runs proto->on_deferred(c) early in the next loop iteration (its timers
 * phase), once however often asked before. For work that must not run where
 * the caller is: the flusher runs just before the loop blocks, where a
 * request submitted to the core would wait for the next wake-up (the core
 * starts its end-of-iteration hand-off then). Returns 0 or IFD_ENOMEM.
 */
int ifd__conn_defer(ifd_conn_t *c);

/** Counts a connection closed on a protocol limit (metrics). */
void ifd__conn_count_limit(ifd_conn_t *c, ifd_conn_limit_t why);

/** The process-wide counters, one entry per protocol label that started a
 *  set; *n entries. Loop thread. */
const ifd_conn_stats_t *ifd__conn_stats(size_t *n);

/** Arms c's one timer (re-arms when running); on_timer runs after `ms`. */
void ifd__conn_timer_start(ifd_conn_t *c, uint64_t ms);
void ifd__conn_timer_stop(ifd_conn_t *c);

/**
 * Sends a FIN once the bytes already handed to the kernel are out, and keeps
 * `c` open: reading goes on (a lingering close: a client still sending gets
 * the answer before a reset). Close it later with ifd__conn_close. Returns 0
 * or a libuv code (closing, or already shut).
 */
int ifd__conn_shutdown(ifd_conn_t *c);

/**
 * Closes `c`: with `graceful`, after a FIN once the bytes already handed to
 * the kernel are out (the caller has no write in flight), and then lingers:
 * reads and drops what the peer still sends until it closes too, for
 * IFD_CONN_LINGER_MS at most (otherwise a request the peer sent meanwhile,
 * unread at close(2), makes the kernel answer RST and drop the response
 * bytes still queued); without `graceful`, at once. Calls on_closing now and
 * on_free when every handle is closed, then frees `c`. Safe to call again
 * (no effect).
 */
void ifd__conn_close(ifd_conn_t *c, int graceful);

/**
 * A test seam: serves the connected stream socket `fd` (e.g. one end of a
 * socketpair) as if it had just been accepted. The front end's object
 * embeds its set as its first member (ifd_http_t, ifd_grpc_t), so a test
 * converts that pointer to reach it. Returns 0 once the connection exists
 * (it then owns `fd`, even if on_open refused it and it is closing), or
 * IFD_EUNAVAIL (--max-connections) / IFD_ENOMEM / IFD_EINVAL (stopping) /
 * IFD_EIO (libuv refused `fd`), after which the caller still owns `fd`.
 */
int ifd__conn_set_adopt(ifd_conn_set_t *set, uv_os_sock_t fd);

#endif
