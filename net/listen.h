/*
 * net/listen.h - the listening socket every front end (HTTP, gRPC, metrics)
 * starts the same way, through the connection layer (net/conn.c): TCP on
 * host:port, or a Unix domain socket when the address is "unix:<path>".
 */
#ifndef IFD_NET_LISTEN_H
#define IFD_NET_LISTEN_H

#include <sys/types.h>

#include "base/error.h"

/* An address that names a Unix domain socket: "unix:<path>", or gRPC's
 * "unix://<absolute path>" (so "unix:///run/x.sock" is /run/x.sock). */
#define IFD_UNIX_PREFIX "unix:"

/** Whether `host` names a Unix domain socket (starts with "unix:"). */
int ifd__net_is_unix(const char *host);

/** The path of a "unix:" address (inside `host`: borrowed). */
const char *ifd__net_unix_path(const char *host);

/** The socket file's permissions and owner (--*-unix-socket-mode, -owner,
 *  -group); -1 leaves each as it comes (the mode the umask leaves, the
 *  process's user and group). */
typedef struct ifd_unix_perm {
  int mode;
  long uid, gid;
} ifd_unix_perm_t;

#define IFD_UNIX_PERM_DEFAULT ((ifd_unix_perm_t){-1, -1, -1})

/** The socket file a listener made, removed when it closes. */
typedef struct ifd_unix_file {
  char *path; /* owned (malloc'd): NULL for a TCP listener */
  dev_t dev;  /* identity of the file made, so that only it is removed */
  ino_t ino;
} ifd_unix_file_t;

/**
 * Creates a non-blocking, close-on-exec listening socket (called at
 * start-up, before the loop runs). `what` names the service in errors
 * ("HTTP", "gRPC").
 *
 * TCP: resolves `host`:`port` (numeric service), sets SO_REUSEADDR (and
 * SO_REUSEPORT when asked), binds and listens; *bound_port is the real port
 * (when `port` was 0).
 *
 * "unix:<path>": `port` and `reuse_port` are not used. A file already at
 * the path is removed only when it is a socket nobody listens on (a
 * connect is refused: the leftover of a process that died); anything else
 * (a live socket, another kind of file) is refused. The socket is bound,
 * given `perm` (NULL: defaults) before it listens, so no client connects
 * through wider permissions, and recorded in *file for
 * ifd__net_unlink_unix; *bound_port is 0.
 *
 * Returns 0 with *fd (owned by the caller: close(2) it), or IFD_EIO with a
 * message naming the address (nothing to close or remove then).
 */
int ifd__net_listen(const char *what, const char *host, int port,
                    int reuse_port, const ifd_unix_perm_t *perm, int *fd,
                    int *bound_port, ifd_unix_file_t *file, ifd_errmsg_t *err);

/** Removes the socket file in `file` if it is still the one the listener
 *  made (same device and inode), and frees the path. No-op for TCP. */
void ifd__net_unlink_unix(ifd_unix_file_t *file);

#endif
