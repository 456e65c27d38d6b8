/*
 * net/listen.h - the listening socket every front end (HTTP, gRPC, metrics)
 * starts the same way, through the connection layer (net/conn.c).
 */
#ifndef IFD_NET_LISTEN_H
#define IFD_NET_LISTEN_H

#include "core/error.h"

/**
 * Resolves `host`:`port` (numeric service; called at start-up, before the
 * loop runs), creates a non-blocking, close-on-exec TCP socket with
 * SO_REUSEADDR (and SO_REUSEPORT when asked), binds and listens. `what`
 * names the service in errors ("HTTP", "gRPC").
 *
 * Returns 0 with *fd (owned by the caller: close(2) it) and *bound_port (the
 * real port when `port` was 0), or IFD_EIO with a message naming the
 * address (nothing to close then).
 */
int ifd__net_listen(const char *what, const char *host, int port,
                    int reuse_port, int *fd, int *bound_port,
                    ifd_errmsg_t *err);

#endif
