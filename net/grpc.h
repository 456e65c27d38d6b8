/*
 * net/grpc.h - the gRPC transport: gRPC calls over HTTP/2 (nghttp2,
 * prior-knowledge h2c or TLS with ALPN h2) on a libuv loop.
 *
 * The transport knows no service: the application passes its method table
 * (net/grpc_internal.h's ifd_grpc_method_t) and its object in the options,
 * and the transport routes each call by its :path to one of those methods.
 * The KServe v2 service (inference.GRPCInferenceService, grpc.health.v1)
 * is frontend/'s (frontend/frontend.h: ifd_grpc_start).
 */
#ifndef IFD_NET_GRPC_H
#define IFD_NET_GRPC_H

#include <stdint.h>
#include <uv.h>

#include "base/error.h"
#include "net/tls.h"

struct ifd_fwd_re;      /* net/forward.h */
struct ifd_grpc_method; /* net/grpc_internal.h */

typedef struct ifd_grpc ifd_grpc_t;

typedef struct ifd_grpc_opts {
  const char *host; /* borrowed: bind address; NULL = "0.0.0.0";
                      "unix:<path>": a Unix domain socket, and
                      `port` is not used */
  /* A "unix:" socket file's mode and owner (borrowed: outlives the front
   * end; NULL: the umask's mode, the process's owner). */
  const struct ifd_unix_perm *unix_perm;
  int port;                  /* 0 picks a free port (see ifd_grpc_port) */
  uint64_t max_message_size; /* largest message either way; 0 = default */
  unsigned max_connections;  /* 0 = default 65536 */
  int reuse_port;            /* set SO_REUSEPORT before binding */
  /* --grpc-header-forward-pattern (borrowed: outlives the front end; NULL:
   * none): matching request metadata become parameters of infer requests. */
  const struct ifd_fwd_re *forward_headers; /* net/forward.h */
  /* Most response bytes one call may have queued but not yet written (a
   * slow reader): a send past it finishes the call with RESOURCE_EXHAUSTED.
   * A message is always queued when nothing else is. 0 = default. */
  uint64_t stream_buffer_bytes;
  /* HTTP/2 limits and keepalive (docs/connections.md). Used
   * only when `limits_set` (ifd_grpc_opts_defaults fills them in); a
   * zeroed struct gets every default. 0 turns off the ones marked (0). */
  int limits_set;
  unsigned max_concurrent_streams; /* SETTINGS_MAX_CONCURRENT_STREAMS */
  unsigned max_header_list_size;   /* SETTINGS_MAX_HEADER_LIST_SIZE, bytes */
  uint64_t idle_timeout_ms;        /* (0) GOAWAY after this long idle */
  unsigned max_resets_per_second;  /* (0) client RST_STREAMs per second
                                      before GOAWAY(ENHANCE_YOUR_CALM) */
  /* Most bytes one connection may hold for its calls: partial request
   * messages plus queued responses (one message always fits). */
  uint64_t max_connection_buffer;
  /* Triton's keepalive flags (gRPC core's channel arguments). */
  uint64_t keepalive_time_ms;    /* (0) server PING interval */
  uint64_t keepalive_timeout_ms; /* close when its ACK takes longer */
  int keepalive_permit_without_calls;
  unsigned max_pings_without_data; /* (0) */
  uint64_t min_recv_ping_interval_ms;
  unsigned max_ping_strikes; /* (0) */
  /* --grpc-max-connection-age (0: none): past it a connection gets
   * GOAWAY(2^31-1) and drains like a shutting-down one; its open calls may
   * finish for --grpc-max-connection-age-grace more ms (0: as long as they
   * take), then they get UNAVAILABLE and it closes. */
  uint64_t max_connection_age_ms;
  uint64_t max_connection_age_grace_ms;
  /* --grpc-infer-response-compression-level: 0 none, 1 low, 2 medium,
   * 3 high (ModelInfer and ModelStreamInfer responses; see
   * ifd_gstream_compress). */
  int infer_compression_level;
  /* Triton's --grpc-restricted-protocol (borrowed: outlives the front end;
   * NULL: nothing restricted). */
  const struct ifd_restrict *restrict_api;
  /* gRPC over TLS (ALPN h2): every connection speaks TLS with this context
   * (borrowed: outlives the front end); NULL: prior-knowledge h2c. */
  ifd_tls_ctx_t *tls;
  /* --overload-status=429: a request refused for load (IFD_EOVERLOADED)
   * ends RESOURCE_EXHAUSTED instead of Triton's UNAVAILABLE (read by the
   * application, frontend/grpc_app.c; the transport does not use it). */
  int overload_429;
  /* The application. `methods` (borrowed: outlives the transport; NULL-path
   * terminated) are the calls served: an unknown path gets UNIMPLEMENTED.
   * `app` (owned once ifd_grpc_serve is called, when app_free is set) is
   * what ifd_gstream_app() returns for every call; app_free(app) runs when
   * the transport is freed (after ifd_grpc_stop's done, or when
   * ifd_grpc_serve fails). */
  const struct ifd_grpc_method *methods;
  void *app;
  void (*app_free)(void *app);
} ifd_grpc_opts_t;

/* Defaults of the HTTP/2 limits. */
#define IFD_GRPC_DEFAULT_MAX_STREAMS 1024u
#define IFD_GRPC_DEFAULT_MAX_HEADER_LIST (16u << 10)
#define IFD_GRPC_DEFAULT_IDLE_TIMEOUT_MS ((uint64_t)300000)
#define IFD_GRPC_DEFAULT_MAX_RESETS 200u
#define IFD_GRPC_DEFAULT_CONN_BUFFER ((uint64_t)1 << 30)
/* Triton's (gRPC core's) keepalive defaults. */
#define IFD_GRPC_DEFAULT_KEEPALIVE_TIME_MS ((uint64_t)7200000)
#define IFD_GRPC_DEFAULT_KEEPALIVE_TIMEOUT_MS ((uint64_t)20000)
#define IFD_GRPC_DEFAULT_MAX_PINGS_WITHOUT_DATA 2u
#define IFD_GRPC_DEFAULT_MIN_RECV_PING_MS ((uint64_t)300000)
#define IFD_GRPC_DEFAULT_MAX_PING_STRIKES 2u

/* tritonserver accepts messages up to INT32_MAX bytes. */
#define IFD_GRPC_DEFAULT_MAX_MESSAGE_SIZE ((uint64_t)INT32_MAX)
/* Default per-call cap on queued response bytes (64 MiB). */
#define IFD_GRPC_DEFAULT_STREAM_BUFFER_BYTES ((uint64_t)64 << 20)

/** Zeroes `o` and fills in every default (limits_set = 1). */
void ifd_grpc_opts_defaults(ifd_grpc_opts_t *o);

/**
 * Binds, listens and serves opts->methods on `loop`; `opts` is copied.
 * Returns 0 and *out, or IFD_EIO with a message naming the address, or
 * IFD_ENOMEM (opts->app is then freed through opts->app_free, possibly
 * later from the loop).
 */
int ifd_grpc_serve(uv_loop_t *loop, const ifd_grpc_opts_t *opts,
                   ifd_grpc_t **out, ifd_errmsg_t *err);

/** The bound port. */
int ifd_grpc_port(const ifd_grpc_t *g);

/**
 * Begins the shutdown: stops accepting and sends GOAWAY(2^31-1) on every
 * connection (the client opens no new call); calls in flight go on. At
 * `deadline_ms` (uv_now() time; 0: none) every connection still open is
 * closed. `done(arg)` runs on the loop once every handle is closed; `g` is
 * freed by then. Call at most once.
 */
void ifd_grpc_stop(ifd_grpc_t *g, uint64_t deadline_ms, void (*done)(void *arg),
                   void *arg);

/**
 * After ifd_grpc_stop, once the core has no request left in flight: every
 * call still open (an idle ModelStreamInfer stream) is finished with
 * UNAVAILABLE, then each connection ends with its final GOAWAY and closes
 * once its last bytes are written.
 */
void ifd_grpc_drained(ifd_grpc_t *g);

#endif
