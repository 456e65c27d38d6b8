/*
 * net/http1.h - the HTTP/1.1 transport: listener, connections, llhttp, the
 * response FIFO and its writes, on a libuv loop.
 *
 * The transport knows no route. Each parsed request becomes an
 * ifd_http_msg_t and a response slot handed to the application through its
 * handler table (ifd_http1_handlers_t) with its application object; the
 * application answers the slot, at once or later, with the ifd_http1_slot_*
 * functions, and the transport writes the answers in request order
 * (pipelining). A slot is the application's own struct that begins with an
 * ifd_http1_slot_t (h2o's pattern: the generic part embedded first), sized
 * by the table. Everything runs on the loop thread; nothing here locks.
 */
#ifndef IFD_NET_HTTP1_H
#define IFD_NET_HTTP1_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "base/error.h"
#include "base/jsonw.h"
#include "net/tls.h"

struct ifd_fwd_re;   /* net/forward.h */
struct ifd_restrict; /* net/restrict.h */

typedef struct ifd_http1 ifd_http1_t;
typedef struct ifd_http1_conn ifd_http1_conn_t;

typedef enum ifd_http_method {
  IFD_HTTP_GET = 0,
  IFD_HTTP_POST,
  IFD_HTTP_OTHER,
  IFD_HTTP_DELETE, /* only the SageMaker endpoint tells it apart */
} ifd_http_method_t;

#define IFD_SLOT_INLINE_IOV 4

/** One piece of a streamed body (chunked transfer coding), queued on its
 *  slot until written. */
typedef struct ifd_http_piece {
  struct ifd_http_piece *next; /* owned: the rest of the slot's queue */
  char *buf;                   /* owned (malloc'd): the bytes of `iov` */
  uv_buf_t iov;                /* points into buf */
} ifd_http_piece_t;

struct ifd_http1_handlers;

/** The transport's part of a response slot (the first member of the
 *  application's slot). */
typedef struct ifd_http1_slot {
  struct ifd_http1_slot *next; /* FIFO link; owned by the connection's FIFO */
  ifd_http1_conn_t *conn;      /* borrowed; NULL once the connection closed
                                  while the slot waited (an orphan) */
  const struct ifd_http1_handlers *hd; /* borrowed: the transport's table;
                                          NULL for a slot made by hand */
  char *buf; /* owned (malloc'd): head, then JSON text */
  uv_buf_t iov_inline[IFD_SLOT_INLINE_IOV];
  uv_buf_t *iov; /* owned when != iov_inline */
  unsigned niov;
  ifd_http_piece_t *pieces;       /* owned: streamed pieces not yet written,
                                     oldest first (a prefix of them may be in the
                                     write in flight: n_pieces_writing) */
  ifd_http_piece_t **pieces_tail; /* borrowed: where the next piece goes */
  size_t pieces_bytes;            /* bytes queued in `pieces` */
  unsigned n_pieces_writing;      /* pieces at the head in the write */
  unsigned ready : 1;             /* iov complete: may be written */
  unsigned streaming : 1;         /* a streamed answer began: pieces, not iov */
  unsigned stream_end : 1;        /* its last piece is queued */
  unsigned chunked : 1;           /* streamed with chunked transfer coding (else
                                     HTTP/1.0: raw, then the connection closes) */
  unsigned keep_alive : 1;        /* the request allows another after it */
  unsigned close_after : 1;       /* close the connection once written */
  unsigned http10 : 1;            /* the request was HTTP/1.0 */
} ifd_http1_slot_t;

/* Request headers only a cloud endpoint reads (the transport fills them
 * when ifd_http1_opts_t.cloud_headers is set; frontend/http_cloud.c reads
 * them). */
#define IFD_HTTP_CLOUD_HDR_MAX 1024
typedef struct ifd_http_cloud_hdrs {
  char ctype[IFD_HTTP_CLOUD_HDR_MAX]; /* Content-Type */
  size_t ctype_len;
  char redirect[IFD_HTTP_CLOUD_HDR_MAX]; /* X-Vertex-Ai-Triton-Redirect */
  size_t redirect_len;
  char target[IFD_HTTP_CLOUD_HDR_MAX]; /* X-Amzn-SageMaker-Target-Model */
  size_t target_len;
  unsigned has_ctype : 1, has_redirect : 1, has_target : 1;
  unsigned too_long : 1; /* one of them was longer than the buffer */
} ifd_http_cloud_hdrs_t;

/** Message handed to the application; `body` moves to it. */
typedef struct ifd_http_msg {
  ifd_http_method_t method;
  const char *path; /* borrowed: connection's buffer, valid during dispatch */
  size_t path_len;
  char *body; /* owned (from the shared buffer pool, base/bufpool.h: given
                 back with ifd_bufpool_put) or NULL: the handler takes it */
  size_t body_len;
  uint64_t header_len; /* Inference-Header-Content-Length */
  int has_header_len;
  uint64_t t_received;  /* uv_hrtime() when the message began */
  uint16_t restrict_ok; /* restricted API groups whose header matched */
  /* --http-header-forward-pattern: the matching headers (net/forward.h's
   * pairs; borrowed: the connection's, valid during dispatch). */
  const char *fwd;
  size_t fwd_len;
  uint32_t fwd_n;
  /* A cloud endpoint's headers (borrowed: the connection's, valid during
   * dispatch); NULL unless ifd_http1_opts_t.cloud_headers. */
  const ifd_http_cloud_hdrs_t *cloud;
} ifd_http_msg_t;

/** What the transport calls in the application (loop thread). */
typedef struct ifd_http1_handlers {
  /** Bytes of the application's slot, which begins with an
   *  ifd_http1_slot_t; the transport allocates it zeroed. */
  size_t slot_size;
  /** One parsed request: takes msg->body (frees it or keeps it) and always
   *  ends with `slot` answered, now or later. */
  void (*dispatch)(void *app, ifd_http1_slot_t *slot, ifd_http_msg_t *msg);
  /** The connection closes while `slot` is in its FIFO (slot->conn is
   *  already NULL): returns 1 when the application keeps the slot as an
   *  orphan and frees it itself (ifd_http1_slot_free) once its work ends,
   *  0 for the transport to free it now. May be NULL (0). */
  int (*orphan)(ifd_http1_slot_t *slot);
  /** Frees what the application's part of `slot` holds, just before
   *  ifd_http1_slot_free frees the slot. May be NULL. */
  void (*release)(ifd_http1_slot_t *slot);
} ifd_http1_handlers_t;

typedef struct ifd_http1_opts {
  const char *host; /* borrowed: address to bind; NULL = "0.0.0.0";
                       "unix:<path>": a Unix domain socket, and
                       `port` is not used */
  /* A "unix:" socket file's mode and owner (borrowed: outlives the
   * transport; NULL: the umask's mode, the process's owner). */
  const struct ifd_unix_perm *unix_perm;
  int port;                /* 0 picks a free port (see ifd_http1_port) */
  uint64_t max_input_size; /* largest body; 0 = default 64 MiB */
  /* A body whose Content-Length is at most this is allocated whole when its
   * headers are complete and read into place; a longer one (or a chunked
   * one) grows as its bytes arrive. 0: every body grows. */
  uint64_t body_prealloc_max;
  unsigned max_connections;  /* 0 = default 65536 */
  int reuse_port;            /* set SO_REUSEPORT before binding */
  unsigned retry_after_secs; /* a 429 answer says Retry-After: this (0:
                                no header) */
  /* Request headers whose names match become msg->fwd (borrowed: outlives
   * the transport; NULL: none). */
  const struct ifd_fwd_re *forward_headers;
  /* Restricted API groups: their headers are matched into
   * msg->restrict_ok (borrowed: outlives the transport; NULL or empty:
   * nothing restricted). */
  const struct ifd_restrict *restrict_api;
  /* HTTPS: every connection speaks TLS with this context (borrowed:
   * outlives the transport); NULL: plain HTTP. */
  ifd_tls_ctx_t *tls;
  /* Limits; 0 takes the default below. Request line and headers; header
   * fields per request; requests queued on one connection before it stops
   * reading. */
  uint32_t max_header_bytes;
  uint32_t max_headers;
  unsigned max_pipeline;
  /* Timeouts in ms; 0 turns one off. header: from a request's first byte
   * to its last header (408); body: without BODY_PROGRESS (1 MiB) more of a
   * body (408); idle: nothing in flight (closed). */
  uint64_t header_timeout_ms;
  uint64_t body_timeout_ms;
  uint64_t idle_timeout_ms;
  int metrics_listener; /* counted apart, as "metrics" (net/conn.h) */
  int cloud_headers;    /* fill msg->cloud */
  /* The application (borrowed: outlive the transport). */
  const ifd_http1_handlers_t *handlers;
  void *app;
} ifd_http1_opts_t;

#define IFD_HTTP_DEFAULT_MAX_INPUT_SIZE ((uint64_t)64 << 20)
/* --http-body-prealloc-size's default: a 16 MiB tensor and its header. */
#define IFD_HTTP_DEFAULT_BODY_PREALLOC ((uint64_t)32 << 20)
#define IFD_HTTP_DEFAULT_MAX_CONNECTIONS 65536u
#define IFD_HTTP_DEFAULT_MAX_HEADER_BYTES 65536u
#define IFD_HTTP_DEFAULT_MAX_HEADERS 100u
#define IFD_HTTP_DEFAULT_MAX_PIPELINE 32u
/* The timeouts inferd's command line sets by default (seconds). */
#define IFD_HTTP_DEFAULT_HEADER_TIMEOUT_SECS 30
#define IFD_HTTP_DEFAULT_BODY_TIMEOUT_SECS 60
#define IFD_HTTP_DEFAULT_IDLE_TIMEOUT_SECS 300

/**
 * Binds, listens and starts accepting on `loop`; `opts` is copied (its
 * host string is not kept). Returns 0 and *out, or: IFD_EIO with a message
 * naming the address when resolving, binding or listening fails;
 * IFD_ENOMEM. On failure no handler is called.
 */
int ifd_http1_start(uv_loop_t *loop, const ifd_http1_opts_t *opts,
                    ifd_http1_t **out, ifd_errmsg_t *err);

/** The bound port (useful after binding port 0). */
int ifd_http1_port(const ifd_http1_t *t);

/**
 * Begins the shutdown: stops accepting, closes idle connections now and
 * busy ones once their in-flight responses are written (a request parsed
 * only in part is dropped). Slots still waiting then go to the handlers'
 * orphan. At `deadline_ms` (uv_now() time; 0: none) every connection still
 * open (a client that stopped reading) is closed.
 *
 * `done(arg)` runs on the loop once every handle is closed; `t` has been
 * freed by then. Call at most once.
 */
void ifd_http1_stop(ifd_http1_t *t, uint64_t deadline_ms,
                    void (*done)(void *arg), void *arg);

/** After ifd_http1_stop, once the application has nothing left in flight:
 *  closes what is still open. */
void ifd_http1_drained(ifd_http1_t *t);

/** Reason phrase of an HTTP status ("Not Found"); static, never NULL. */
const char *ifd_http_reason(int status);

/** The application object of a slot's transport; NULL for an orphan or a
 *  slot made by hand. */
void *ifd_http1_slot_app(const ifd_http1_slot_t *s);

/**
 * Completes `slot` with status line and headers in front of `body` (whose
 * head room receives them; the slot takes body's memory) followed by `nbin`
 * extra buffers (borrowed: they must live until the slot is freed, e.g.
 * output tensors of the application's response). `ctype` NULL: no
 * Content-Type. `hdr_len` >= 0 adds Inference-Header-Content-Length; a 429
 * gets Retry-After (ifd_http1_opts_t.retry_after_secs). Then marks the slot
 * ready. On ENOMEM the slot gets a static 500 instead.
 */
void ifd_http1_slot_finish(ifd_http1_slot_t *slot, int status,
                           const char *ctype, ifd_hbuf_t *body,
                           const uv_buf_t *bin, unsigned nbin, int64_t hdr_len);

/** Completes `slot` with {"error": msg} and `status`, under Content-Type
 *  `ctype`. */
void ifd_http1_slot_error_as(ifd_http1_slot_t *slot, int status,
                             const char *ctype, const char *msg);

/*
 * Streamed answers: the status line and headers go out first, then each
 * body piece as it is queued (chunked transfer coding; for an HTTP/1.0
 * client raw bytes and a close). Pieces are written from the head of the
 * FIFO as any answer; slots behind a stream wait for its end. A stream that
 * holds more than IFD_HTTP_STREAM_MAX_QUEUED unwritten bytes when a piece
 * comes (a client that stopped reading) closes its connection: the slot
 * becomes an orphan.
 */

#define IFD_HTTP_STREAM_MAX_QUEUED ((size_t)32 << 20)

/** Begins a streamed answer in `slot` (not ready, not streaming yet) with
 *  `status` and Content-Type `ctype`. Returns 0 or IFD_ENOMEM (the slot is
 *  then finished with a static 500). */
int ifd_http1_slot_stream_begin(ifd_http1_slot_t *slot, int status,
                                const char *ctype);

/** Queues `body` (its content; the slot takes its memory, whose head room
 *  receives the chunk size) as the next piece of a streamed answer. An
 *  empty body queues nothing. Returns 0 or IFD_ENOMEM (the connection is
 *  closed: a chunked body cannot be mended). */
int ifd_http1_slot_stream_put(ifd_http1_slot_t *slot, ifd_hbuf_t *body);

/** Ends a streamed answer: queues the last chunk. */
void ifd_http1_slot_stream_end(ifd_http1_slot_t *slot);

/** Frees a slot that is no longer in any FIFO (orphans, slots made by
 *  hand): the handlers' release first, when it has a table. */
void ifd_http1_slot_free(ifd_http1_slot_t *slot);

#endif
