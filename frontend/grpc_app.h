/*
 * frontend/grpc_app.h - the KServe v2 gRPC application over net/'s gRPC
 * transport: the method table it serves (frontend/grpc_service.c) and what
 * every handler reads of its call's listener (frontend/grpc_app.c).
 *
 * ifd_grpc_start (frontend/frontend.h) makes one ifd_grpc_app_t per
 * listener and hands it to the transport as its application object; the
 * transport frees it with itself.
 */
#ifndef IFD_FRONTEND_GRPC_APP_H
#define IFD_FRONTEND_GRPC_APP_H

#include "base/error.h"
#include "core/infer.h"
#include "core/server.h"
#include "net/grpc_internal.h"

/** What one gRPC listener serves. */
typedef struct ifd_grpc_app {
  ifd_server_t *server; /* borrowed: outlives the listener */
  int overload_429;     /* IFD_EOVERLOADED: RESOURCE_EXHAUSTED */
} ifd_grpc_app_t;

/** The methods of inference.GRPCInferenceService and grpc.health.v1.Health
 *  (frontend/grpc_service.c); NULL-path terminated. */
extern const ifd_grpc_method_t ifd__grpc_methods[];

/** Server the call belongs to (its listener's). */
ifd_server_t *ifd_gstream_server(const ifd_gstream_t *st);
/** The gRPC status of IFD_E* `code` on this call's listener: Triton's
 *  (frontend/status.h), but RESOURCE_EXHAUSTED for IFD_EOVERLOADED under
 *  --overload-status=429. */
int ifd__gstream_status(const ifd_gstream_t *st, int code);
/** Appends the call's metadata that --grpc-header-forward-pattern matched
 *  to req's parameters (strings). 0 or IFD_ENOMEM with `err` set. */
int ifd__gstream_forward(const ifd_gstream_t *st, ifd_request_t *req,
                         ifd_errmsg_t *err);

#endif
