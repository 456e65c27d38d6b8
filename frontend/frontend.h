/*
 * frontend/frontend.h - the front ends: the KServe v2 HTTP/REST API (its
 * routes, the cloud endpoints, the metrics listener) over net/'s HTTP/1.1
 * transport, and the KServe v2 gRPC service over net/'s gRPC transport.
 *
 * One HTTP listener on the server's loop accepts connections; the
 * transport (net/http1.h) parses requests and writes responses strictly in
 * request order (pipelining), and the routes here answer health, metadata,
 * config, repository, infer, generate and the extensions. Everything runs
 * on the loop thread; nothing here locks.
 */
#ifndef IFD_FRONTEND_FRONTEND_H
#define IFD_FRONTEND_FRONTEND_H

#include <stdint.h>
#include <uv.h>

#include "base/error.h"
#include "core/server.h"
#include "net/grpc.h"
#include "net/http1.h"
#include "net/tls.h"

struct ifd_fwd_re; /* net/forward.h */

typedef struct ifd_http ifd_http_t;

typedef struct ifd_http_opts {
  const char *host; /* borrowed: address to bind; NULL = "0.0.0.0";
                       "unix:<path>": a Unix domain socket, and
                       `port` is not used */
  /* A "unix:" socket file's mode and owner (borrowed: outlives the front
   * end; NULL: the umask's mode, the process's owner). */
  const struct ifd_unix_perm *unix_perm;
  int port;                   /* 0 picks a free port (see ifd_http_port) */
  uint64_t max_input_size;    /* --http-max-input-size; 0 = default 64 MiB */
  uint64_t body_prealloc_max; /* --http-body-prealloc-size; 0: bodies grow */
  unsigned max_connections;   /* 0 = default 65536 */
  int reuse_port;             /* set SO_REUSEPORT before binding */
  /* --overload-status=429: a request refused for load (IFD_EOVERLOADED) is
   * answered 429 with Retry-After: retry_after_secs (0: no header) instead
   * of Triton's 503. */
  int overload_429;
  unsigned retry_after_secs;
  /* --http-header-forward-pattern (borrowed: outlives the front end; NULL:
   * none): matching request headers become parameters of infer requests. */
  const struct ifd_fwd_re *forward_headers; /* net/forward.h */
  /* Metrics listener: serves only GET /metrics from `metrics` (borrowed:
   * outlives the front end). */
  int metrics_only;
  const struct ifd_metrics *metrics;
  /* --http-json-offload-bytes: JSON infer bodies this large are decoded and
   * encoded on the libuv thread pool; 0 = default 256 KiB. */
  uint64_t json_offload_bytes;
  /* Triton's --http-restricted-api (borrowed: outlives the front end; NULL
   * or empty: nothing restricted). */
  const struct ifd_restrict *restrict_api;
  /* HTTPS: every connection speaks TLS with this context (borrowed:
   * outlives the front end); NULL: plain HTTP. */
  ifd_tls_ctx_t *tls;
  /* Limits (docs/connections.md); 0 takes
   * the default below. --http-max-header-bytes: request line and headers;
   * --http-max-headers: header fields per request; --http-max-pipeline:
   * requests queued on one connection before it stops reading. */
  uint32_t max_header_bytes;
  uint32_t max_headers;
  unsigned max_pipeline;
  /* Timeouts in ms; 0 turns one off. header: from a request's first byte
   * to its last header (408); body: without BODY_PROGRESS (1 MiB) more of a
   * body (408); idle: nothing in flight (closed). */
  uint64_t header_timeout_ms;
  uint64_t body_timeout_ms;
  uint64_t idle_timeout_ms;
  /* A cloud endpoint (SageMaker, Vertex AI: frontend/http_cloud.c) instead of
   * the KServe v2 routes (borrowed: outlives the front end); NULL: none. */
  const struct ifd_http_cloud *cloud;
} ifd_http_opts_t;

/* The cloud endpoints tritonserver serves beside KServe v2: their paths
 * map onto the same handlers (docs/cloud_endpoints.md). */
typedef enum ifd_http_cloud_kind {
  IFD_HTTP_CLOUD_SAGEMAKER = 1,
  IFD_HTTP_CLOUD_VERTEX_AI,
} ifd_http_cloud_kind_t;

typedef struct ifd_http_cloud {
  ifd_http_cloud_kind_t kind;
  /* The model /invocations (SageMaker) or the predict route (Vertex AI)
   * infers on (borrowed: outlives the front end). */
  const char *model;
  /* SageMaker: SAGEMAKER_TRITON_PING_MODE is "live" (GET /ping answers
   * liveness) rather than "ready". */
  int ping_live;
  /* Vertex AI: AIP_PREDICT_ROUTE and AIP_HEALTH_ROUTE (borrowed). */
  const char *predict_route;
  const char *health_route;
} ifd_http_cloud_t;

/* The other defaults (limits, timeouts) are the transport's: net/http1.h. */
#define IFD_HTTP_DEFAULT_JSON_OFFLOAD_BYTES ((uint64_t)256 << 10)

/**
 * Binds, listens and starts accepting on `loop`. `server` is borrowed and
 * must outlive the front end (until ifd_http_stop's `done`); `opts` is copied
 * (its host string is not kept).
 *
 * Returns 0 and *out, or: IFD_EIO with a message naming the address when
 * resolving, binding or listening fails; IFD_ENOMEM.
 */
int ifd_http_start(uv_loop_t *loop, ifd_server_t *server,
                   const ifd_http_opts_t *opts, ifd_http_t **out,
                   ifd_errmsg_t *err);

/** The bound port (useful after binding port 0). */
int ifd_http_port(const ifd_http_t *h);

/**
 * Begins the shutdown: stops accepting, closes idle connections now and
 * busy ones once their in-flight responses are written (a request parsed
 * only in part is dropped). Requests still executing for connections that
 * the client closed do not delay it: their responses are dropped when they
 * arrive. At `deadline_ms` (uv_now() time; 0: none) every connection still
 * open (a client that stopped reading) is closed.
 *
 * `done(arg)` runs on the loop once every handle is closed; `h` has been
 * freed by then. Call at most once.
 */
void ifd_http_stop(ifd_http_t *h, uint64_t deadline_ms, void (*done)(void *arg),
                   void *arg);

/** After ifd_http_stop, once the core has no request left in flight (for
 *  HTTP/1.1 nothing changes: each connection closes after its last
 *  response). */
void ifd_http_drained(ifd_http_t *h);

/**
 * Binds, listens and serves the KServe v2 gRPC service
 * (inference.GRPCInferenceService and grpc.health.v1.Health) on `loop`
 * through net/'s gRPC transport. `server` is borrowed and must outlive the
 * front end (until ifd_grpc_stop's `done`); `opts` is copied (its methods,
 * app and app_free are set here). Returns 0 and *out, or IFD_EIO with a
 * message naming the address, or IFD_ENOMEM.
 */
int ifd_grpc_start(uv_loop_t *loop, ifd_server_t *server,
                   const ifd_grpc_opts_t *opts, ifd_grpc_t **out,
                   ifd_errmsg_t *err);

#endif
