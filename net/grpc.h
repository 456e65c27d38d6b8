/*
 * net/grpc.h - the gRPC front end: inference.GRPCInferenceService and
 * grpc.health.v1.Health over HTTP/2 (nghttp2, prior-knowledge h2c) on the
 * server's loop.
 */
#ifndef IFD_NET_GRPC_H
#define IFD_NET_GRPC_H

#include <stdint.h>
#include <uv.h>

#include "core/error.h"
#include "core/server.h"
#include "net/tls.h"

typedef struct ifd_grpc ifd_grpc_t;

typedef struct ifd_grpc_opts {
  const char *host;          /* borrowed: bind address; NULL = "0.0.0.0" */
  int port;                  /* 0 picks a free port (see ifd_grpc_port) */
  uint64_t max_message_size; /* largest message either way; 0 = default */
  unsigned max_connections;  /* 0 = default 65536 */
  /* Most response bytes one call may have queued but not yet written (a
   * slow reader): a send past it finishes the call with RESOURCE_EXHAUSTED.
   * A message is always queued when nothing else is. 0 = default. */
  uint64_t stream_buffer_bytes;
  /* gRPC over TLS (ALPN h2): every connection speaks TLS with this context
   * (borrowed: outlives the front end); NULL: prior-knowledge h2c. */
  ifd_tls_ctx_t *tls;
} ifd_grpc_opts_t;

/* tritonserver accepts messages up to INT32_MAX bytes. */
#define IFD_GRPC_DEFAULT_MAX_MESSAGE_SIZE ((uint64_t)INT32_MAX)
/* Default per-call cap on queued response bytes (64 MiB). */
#define IFD_GRPC_DEFAULT_STREAM_BUFFER_BYTES ((uint64_t)64 << 20)

/**
 * Binds, listens and serves on `loop`. `server` is borrowed and must outlive
 * the front end (until ifd_grpc_stop's `done`). Returns 0 and *out, or
 * IFD_EIO with a message naming the address, or IFD_ENOMEM.
 */
int ifd_grpc_start(uv_loop_t *loop, ifd_server_t *server,
                   const ifd_grpc_opts_t *opts, ifd_grpc_t **out,
                   ifd_errmsg_t *err);

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
