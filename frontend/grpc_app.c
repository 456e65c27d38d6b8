/*
 * frontend/grpc_app.c - one KServe v2 gRPC listener: builds net/'s gRPC
 * transport with the service's method table (frontend/grpc_service.c) and
 * an ifd_grpc_app_t as its application object, and gives the handlers the
 * call's server, status table and forwarded metadata.
 */
#include <stdlib.h>

#include "frontend/forward.h"
#include "frontend/frontend.h"
#include "frontend/grpc_app.h"
#include "frontend/status.h"

ifd_server_t *ifd_gstream_server(const ifd_gstream_t *st) {
  const ifd_grpc_app_t *app = ifd_gstream_app(st);
  return app != NULL ? app->server : NULL;
}

int ifd__gstream_status(const ifd_gstream_t *st, int code) {
  const ifd_grpc_app_t *app = ifd_gstream_app(st);
  if (code == IFD_EOVERLOADED && app != NULL && app->overload_429)
    return IFD_GRPC_RESOURCE_EXHAUSTED;
  return ifd_grpc_status(code);
}

int ifd__gstream_forward(const ifd_gstream_t *st, ifd_request_t *req,
                         ifd_errmsg_t *err) {
  const char *data;
  size_t len;
  uint32_t n;

  ifd_gstream_forwarded(st, &data, &len, &n);
  return ifd__fwd_apply(req, data, len, n, err);
}

int ifd_grpc_start(uv_loop_t *loop, ifd_server_t *server,
                   const ifd_grpc_opts_t *opts, ifd_grpc_t **out,
                   ifd_errmsg_t *err) {
  ifd_grpc_opts_t o = *opts;
  ifd_grpc_app_t *app = calloc(1, sizeof(*app));

  if (app == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  app->server = server;
  app->overload_429 = opts->overload_429;
  o.methods = ifd__grpc_methods;
  o.app = app;
  o.app_free = free;
  return ifd_grpc_serve(loop, &o, out, err); /* owns app from here on */
}
