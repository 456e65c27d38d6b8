/*
 * net/listen.h - the listening socket every front end (HTTP, gRPC, metrics)
 * starts the same way, through the connection layer (net/conn.c).
 */
#ifndef IFD_NET_LISTEN_H
#define IFD_NET_LISTEN_H

#include <uv.h>

#include "core/error.h"

/**
 * Resolves `host`:`port` (numeric service; called at start-up, before the
 * loop runs), initializes `tcp` on `loop`, sets SO_REUSEPORT when asked,
 * binds and listens with `cb`. `what` names the service in errors
 * ("HTTP", "gRPC").
 *
 * Returns 0 with *bound_port set (the real port when `port` was 0), or
 * IFD_EIO with a message naming the address. On failure *handle_open says
 * whether `tcp` was initialized: then the caller must uv_close it (and free
 * its owner in the close callback); otherwise it may free at once.
 */
int ifd__net_listen(uv_loop_t *loop, uv_tcp_t *tcp, const char *what,
                    const char *host, int port, int reuse_port,
                    uv_connection_cb cb, int *bound_port, int *handle_open,
                    ifd_errmsg_t *err);

#endif
