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
 * Accept never stalls: a spare connection is allocated ahead of time, and
 * when neither the spare nor a fresh allocation is available the socket is
 * still accepted, into a handle kept for that purpose, and closed at once.
 * (libuv stops watching the listener until uv_accept takes the connection
 * it already accepted, so skipping uv_accept would stop accepting for good.)
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

#include "core/error.h"

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
} ifd_conn_proto_t;

struct ifd_conn {
  uv_tcp_t tcp;        /* embedded: the socket */
  uv_timer_t timer;    /* embedded: initialized on first use */
  uv_shutdown_t sreq;  /* embedded: graceful close */
  ifd_conn_set_t *set; /* borrowed: outlives the connection */
  ifd_link_t link;     /* in set->conns */
  ifd_link_t dirty;    /* in set->dirty while a flush is wanted */
  unsigned open_handles;
  unsigned opened : 1;     /* on_open succeeded */
  unsigned closing : 1;    /* ifd__conn_close was called */
  unsigned stopping : 1;   /* a shutdown phase reached it */
  unsigned timer_init : 1; /* `timer` is initialized */
};

struct ifd_conn_set {
  uv_tcp_t listener;             /* embedded */
  uv_tcp_t reject;               /* embedded: accepts and closes when out of
                                    memory */
  uv_prepare_t flusher;          /* embedded: flushes dirty connections */
  uv_timer_t deadline;           /* embedded: the shutdown deadline */
  uv_loop_t *loop;               /* borrowed */
  const ifd_conn_proto_t *proto; /* borrowed: static */
  ifd_conn_t *spare;             /* owned: allocated ahead for an accept */
  ifd_link_t conns;              /* every open connection (ifd_conn.link) */
  ifd_link_t dirty;              /* connections to flush (ifd_conn.dirty) */
  unsigned n_conns;
  unsigned max_connections;
  int port;
  unsigned open_handles; /* set handles until their close callbacks */
  unsigned listening : 1;
  unsigned stopping : 1;
  unsigned reject_busy : 1; /* `reject` is closing */
  unsigned accept_owed : 1; /* a connection waits for uv_accept */
  unsigned finished : 1;    /* the closing of the set's handles began */
  void (*closed)(ifd_conn_set_t *set); /* runs once every handle is closed */
};

/**
 * Initializes `set` on `loop` and starts listening on host:port (see
 * ifd__net_listen). `proto` must outlive the set. `max_connections` 0 means
 * unlimited. Returns 0, or IFD_EIO with a message naming the address, or
 * IFD_ENOMEM. On failure the set still needs ifd__conn_set_stop (whose
 * `closed` then runs) before its memory goes.
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

/** Closes every connection now (after ifd__conn_set_stop). */
void ifd__conn_set_abort(ifd_conn_set_t *set);

/** Asks for c's on_flush before the loop next blocks (once per iteration). */
void ifd__conn_mark_dirty(ifd_conn_t *c);

/** Starts reading with the protocol's callbacks. Returns 0 or a libuv code. */
int ifd__conn_read_start(ifd_conn_t *c, uv_alloc_cb alloc, uv_read_cb cb);
void ifd__conn_read_stop(ifd_conn_t *c);

/** Arms c's one timer (re-arms when running); on_timer runs after `ms`. */
void ifd__conn_timer_start(ifd_conn_t *c, uint64_t ms);
void ifd__conn_timer_stop(ifd_conn_t *c);

/**
 * Closes `c`: with `graceful`, after a FIN once the bytes already handed to
 * the kernel are out (the caller has no write in flight); otherwise at once.
 * Calls on_closing now and on_free when every handle is closed, then frees
 * `c`. Safe to call again (no effect).
 */
void ifd__conn_close(ifd_conn_t *c, int graceful);

/**
 * A test seam: serves the connected stream socket `fd` (e.g. one end of a
 * socketpair) as if it had just been accepted. The front end's object
 * embeds its set as its first member (ifd_http_t, ifd_grpc_t), so a test
 * converts that pointer to reach it. Returns 0 once the connection exists
 * (it then owns `fd`, even if on_open refused it and it is closing), or
 * IFD_ENOMEM / IFD_EINVAL (stopping) / IFD_EIO (libuv refused `fd`), after
 * which the caller still owns `fd`.
 */
int ifd__conn_set_adopt(ifd_conn_set_t *set, uv_os_sock_t fd);

#endif
