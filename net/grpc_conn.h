/*
 * net/grpc_conn.h - what the parts of the gRPC transport share:
 * net/grpc_transport.c (connections: reading, write batches, the nghttp2
 * session's output, start and stop), net/grpc_stream.c (calls: nghttp2's
 * callbacks, routing, message framing in, deadlines), net/grpc_send.c
 * (answers: framing out, compression, finishing) and net/grpc_limits.c.
 * Nothing outside the transport includes it; the methods see
 * net/grpc_internal.h.
 */
#ifndef IFD_NET_GRPC_CONN_H
#define IFD_NET_GRPC_CONN_H

#include <nghttp2/nghttp2.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "net/conn.h"
#include "net/forward.h"
#include "net/grpc.h"
#include "net/grpc_internal.h"
#include "net/restrict.h"

#define READ_BUF_SIZE (256 * 1024)
#define NO_HEAP ((unsigned)-1)

/* One queued response message. */
typedef struct qmsg {
  struct qmsg *next;   /* owned by the stream's queue or a batch's releases */
  const uv_buf_t *iov; /* borrowed: valid until free_fn */
  unsigned n_iov;
  void (*free_fn)(void *arg);
  void *free_arg; /* borrowed: the method's */
  uint8_t prefix[5];
} qmsg_t;

/* A block of copied bytes (frame headers, control frames). */
typedef struct blk {
  struct blk *next; /* owned: older blocks */
  size_t len, cap;
  uint8_t data[];
} blk_t;

/* What one uv_write sends, and what it keeps alive. */
typedef struct batch {
  uv_buf_t *iov; /* owned (malloc'd) */
  size_t n_iov, cap_iov;
  blk_t *blocks; /* owned: chain, newest first */
  qmsg_t *rel;   /* owned: messages to release after the write */
  size_t bytes;
} batch_t;

typedef struct mslot {
  const ifd_grpc_method_t *m; /* borrowed: the application's table */
  uint64_t hash;
} mslot_t;

struct ifd_grpc {
  ifd_conn_set_t set; /* embedded, first: listener, connections */
  uv_loop_t *loop;    /* borrowed */
  void *app;          /* the application's (ifd_grpc_opts_t.app): owned when
                         app_free is set */
  void (*app_free)(void *app);
  const ifd_grpc_method_t *methods; /* borrowed: outlives the transport */
  nghttp2_session_callbacks *cbs;   /* owned */
  mslot_t *mtab;                    /* owned: path -> method, open addressing */
  size_t mtab_mask;
  uint64_t max_message;
  uint64_t max_queued;   /* per call: see ifd_grpc_opts_t.stream_buffer_bytes */
  ifd_grpc_opts_t lim;   /* the HTTP/2 limits and keepalive, defaults filled */
  nghttp2_option *h2opt; /* owned */
  const ifd_restrict_t *restrict_api; /* borrowed: outlives the front end */
  const ifd_fwd_re_t *fwd_re; /* borrowed: --grpc-header-forward-pattern, or
                                NULL */
  void (*done)(void *arg);
  void *done_arg;           /* borrowed: the caller's */
  char rbuf[READ_BUF_SIZE]; /* shared read buffer (see grpc_transport.c) */
};

typedef struct gconn {
  ifd_conn_t base;          /* embedded, first: socket, timer, lists */
  uv_write_t wreq;          /* embedded: the one write in flight */
  ifd_grpc_t *g;            /* borrowed: outlives the connection */
  nghttp2_session *session; /* owned */
  ifd_link_t streams;       /* attached streams (ifd_gstream.link) */
  unsigned n_streams;
  ifd_gstream_t **heap; /* owned array; borrowed entries: deadlines */
  unsigned heap_n, heap_cap;
  batch_t wb; /* the write in flight */
  batch_t nb; /* the next write (and releases waiting for it) */
  unsigned writing : 1;
  unsigned read_paused : 1;
  unsigned stopping : 1;
  unsigned terminated : 1;   /* the final GOAWAY is submitted */
  unsigned ping_out : 1;     /* our keepalive PING awaits its ACK */
  unsigned goaway_close : 1; /* our GOAWAY is out: close once written */
  unsigned aged : 1;         /* --grpc-max-connection-age reached: drains */
  unsigned age_ended : 1;    /* ... and its grace ended: calls were ended */
  /* Limits and keepalive (grpc_transport.c), uv_now() ms. */
  uint64_t timer_due;  /* when the timer fires; 0: not armed */
  uint64_t idle_since; /* the last call ended (or the connection opened) */
  uint64_t opened;     /* the connection was accepted */
  uint64_t last_read;  /* bytes last arrived */
  uint64_t ping_sent;  /* our last keepalive PING */
  uint64_t ping_recv;  /* the client's last PING; 0: none yet */
  uint64_t rst_window; /* start of the current second of RST_STREAMs */
  unsigned rst_count;  /* client RST_STREAMs in it */
  unsigned pings_unanswered_data; /* our PINGs since we last sent data */
  unsigned ping_strikes;
  uint64_t in_bytes;  /* partial and held request messages of every call */
  uint64_t out_bytes; /* queued response bytes of every call */
} gconn_t;

enum { ENC_NONE = 0, ENC_IDENTITY, ENC_OTHER };
/* Response compression (--grpc-infer-response-compression-level): the
 * algorithms of grpc-accept-encoding, as bits, and the one chosen. */
enum { ZIP_NONE = 0, ZIP_DEFLATE = 1, ZIP_GZIP = 2 };

/* ---- net/grpc_zip.c: gRPC message compression (gzip, deflate) ---------- */

/** The algorithms a grpc-accept-encoding value lists ("identity, deflate,
 *  gzip"), as 1 << ZIP_* bits. */
uint8_t ifd__gzip_accepted(const char *v, size_t n);

/** The ZIP_* of a grpc-encoding value: ZIP_NONE for any other. */
int ifd__gzip_algo(const char *v);

/** A compressed message: one block, its bytes after the header. */
typedef struct ifd__gzip_msg {
  uv_buf_t iov;
  uint8_t data[];
} ifd__gzip_msg_t;

/** Compresses the `n` buffers of `iov` (`total` bytes) as `zip` (gzip:
 *  RFC 1952; deflate: gRPC's, a zlib stream, RFC 1950). Returns the block
 *  (free() it), or NULL when out of memory or when it would not shrink. */
ifd__gzip_msg_t *ifd__gzip_compress(const uv_buf_t *iov, unsigned n,
                                    uint64_t total, int zip);

/** Decompresses the `len` bytes at `in`, compressed as `zip`, into a new
 *  buffer of the shared buffer pool (*out, *out_len; *out is never NULL on
 *  success; give it back with ifd_bufpool_put) of at
 *  most `max` bytes. Returns 0, IFD_ETOOBIG when the message would pass
 *  `max`, IFD_ENOMEM, or IFD_EINVAL when the bytes are not a whole stream
 *  of that algorithm. */
int ifd__gzip_inflate(const uint8_t *in, size_t len, int zip, uint64_t max,
                      uint8_t **out, size_t *out_len);

struct ifd_gstream {
  gconn_t *conn;                   /* borrowed; NULL once detached */
  void *app;                       /* borrowed: the transport's app */
  const ifd_grpc_method_t *method; /* borrowed: the application's table;
                                      NULL: not routed */
  void *data;                      /* the method's */
  ifd_link_t link;                 /* in conn->streams while attached */
  int32_t id;
  unsigned refs;
  unsigned heap_idx; /* in conn->heap, or NO_HEAP */
  uint64_t max_message;
  uint64_t deadline; /* uv_hrtime() ns; 0 = none */
  /* Request headers. */
  char *path; /* owned: copy of :path (only kept for unknown methods) */
  char enc[48];
  int enc_state;
  uint8_t in_zip;     /* ZIP_* of grpc-encoding: how compressed request
                         messages (flag 1) are read */
  uint8_t in_flag;    /* the compressed flag of the message being read */
  uint8_t accept_zip; /* grpc-accept-encoding: 1 << ZIP_* */
  uint8_t out_zip;    /* ZIP_*: how response messages are compressed */
  int timeout_bad;
  /* Inbound message being reassembled. */
  uint8_t prefix[5];
  unsigned prefix_len;
  uint8_t *in; /* owned (malloc'd) */
  size_t in_len, in_cap, in_need;
  uint8_t *unary; /* owned: the unary request, until END_STREAM */
  size_t unary_len;
  unsigned n_in;
  uint64_t held;        /* this call's share of conn->in_bytes */
  uint32_t hdr_bytes;   /* header list size so far (RFC 9113 6.5.2 counting) */
  uint16_t restrict_ok; /* restricted groups whose metadata matched */
  ifd_fwd_buf_t fwd;    /* metadata to forward (g->fwd_re); owned */
  /* Outbound queue, oldest first; the head may be partly sent. */
  qmsg_t *out_head, *out_tail; /* owned */
  int out_piece;               /* -1: in the prefix; else iov index */
  size_t out_off;
  uint64_t out_unsent;
  int status;
  char *message; /* owned: percent-encoded grpc-message, or NULL */
  unsigned is_post : 1;
  unsigned ct_ok : 1;
  unsigned started : 1;         /* request headers accepted */
  unsigned remote_closed : 1;   /* END_STREAM seen */
  unsigned headers_sent : 1;    /* response HEADERS submitted */
  unsigned finished : 1;        /* status decided; no more sends */
  unsigned method_finished : 1; /* ... by the method itself */
  unsigned cancel_sent : 1;     /* on_cancel ran (or must not) */
  unsigned deferred : 1;        /* the data provider returned DEFERRED */
  unsigned hdr_over : 1;        /* the header list exceeded the limit */
};

/* ---- grpc_transport.c ------------------------------------------------- */

/** Appends a piece that is not copied (it must live until the write ends).
 *  Returns 0 or IFD_ENOMEM. */
int ifd__gbatch_push(batch_t *b, const void *p, size_t n);
/** Appends a copy of `n` bytes. Returns 0 or IFD_ENOMEM. */
int ifd__gbatch_copy(batch_t *b, const void *p, size_t n);
/** Releases `q` (its free_fn) once the batch's write is done. */
void ifd__gbatch_release_later(batch_t *b, qmsg_t *q);

/* ---- grpc_send.c ------------------------------------------------------ */

/** Decides the call's status (`by_method`: the method finished it).
 *  Trailers follow the queued messages; a call that sent nothing gets a
 *  Trailers-Only response. */
void ifd__gstream_finish_call(ifd_gstream_t *st, int status, const char *msg,
                              int by_method);
/** The transport ends a call the method did not finish: status, then the
 *  method's on_cancel so it drops its work. */
void ifd__gstream_fail(ifd_gstream_t *st, int status, const char *msg);
/** Refuses a call before any method saw it: a Trailers-Only response with
 *  HTTP status `http_status`. */
void ifd__gstream_finish_http(ifd_gstream_t *st, const char *http_status,
                              int status, const char *msg);
/** nghttp2's send_data callback (NGHTTP2_DATA_FLAG_NO_COPY frames). */
int ifd__grpc_on_send_data(nghttp2_session *s, nghttp2_frame *frame,
                           const uint8_t *framehd, size_t length,
                           nghttp2_data_source *source, void *user_data);

/* ---- grpc_stream.c ---------------------------------------------------- */

/** Builds g->mtab from g->methods. Returns 0 or IFD_ENOMEM. */
int ifd__grpc_mtab_build(ifd_grpc_t *g);
/** The nghttp2 callbacks of a server session. Returns 0 or IFD_ENOMEM. */
int ifd__grpc_callbacks_new(nghttp2_session_callbacks **out);
/** Ends the transport's hold on a stream (see grpc_stream.c). */
void ifd__gstream_detach(ifd_gstream_t *st);
/** The connection's timer fired: expires the deadlines that are due. */
void ifd__gconn_on_deadline(gconn_t *c);
/** Server stop: finishes every call still open on `c` with UNAVAILABLE. */
void ifd__gconn_end_calls(gconn_t *c);

/* ---- grpc_limits.c --------------------------------------------------- */

/** Adds a call with a deadline to the heap. Returns 0 or IFD_ENOMEM. */
int ifd__gheap_add(gconn_t *c, ifd_gstream_t *st);
/** Removes a call from the heap (no effect when it is not there). */
void ifd__gheap_del(gconn_t *c, ifd_gstream_t *st);
/** The connection's timer fired: deadlines, idle timeout, keepalive. */
void ifd__gconn_on_timer(gconn_t *c);

/** (Re)arms the connection's timer for the earliest of its deadlines, idle
 *  timeout and keepalive events, unless it already fires earlier. */
void ifd__gconn_arm(gconn_t *c);
/** A client PING or RST_STREAM arrived (counted against the limits). */
void ifd__gconn_on_control(gconn_t *c, const nghttp2_frame *frame);
/** We sent HEADERS or DATA: ping strikes and unanswered pings reset. */
void ifd__gconn_on_data_sent(gconn_t *c);
/** The last call closed: the idle timeout starts. */
void ifd__gconn_on_idle(gconn_t *c);
/** Ends the connection: GOAWAY(`code`, debug data `debug` or NULL), input
 *  ignored from now on, closed once written; logs `why`. */
void ifd__gconn_goaway(gconn_t *c, uint32_t code, const char *debug,
                       const char *why);

#endif
