/*
 * net/listen.c - resolve, bind and listen, shared by every front end. The
 * socket is plain: the connection layer accepts on it itself (net/conn.c,
 * "Accept"). TCP, or a Unix domain socket for a "unix:" address (a sidecar
 * next to its client: no TCP stack, and file permissions for access).
 */
#include "net/listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/log.h"

int ifd__net_is_unix(const char *host) {
  return host != NULL &&
         strncmp(host, IFD_UNIX_PREFIX, sizeof(IFD_UNIX_PREFIX) - 1) == 0;
}

const char *ifd__net_unix_path(const char *host) {
  const char *p = host + sizeof(IFD_UNIX_PREFIX) - 1;
  /* gRPC's unix://<absolute path>: the two slashes are the scheme's. */
  if (p[0] == '/' && p[1] == '/') p += 2;
  return p;
}

static int listen_tcp(const char *what, const char *host, int port,
                      int reuse_port, int *fd, int *bound_port,
                      ifd_errmsg_t *err) {
  struct addrinfo hints, *res = NULL;
  struct sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  int rc, s, one = 1;
  char service[16];

  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  snprintf(service, sizeof(service), "%d", port);
  rc = getaddrinfo(host, service, &hints, &res);
  if (rc != 0)
    return ifd_errf(err, IFD_EIO, "unable to resolve %s address %s:%d: %s",
                    what, host, port, gai_strerror(rc));
  s = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) {
    rc = errno;
    freeaddrinfo(res);
    return ifd_errf(err, IFD_EIO, "unable to create %s socket: %s", what,
                    strerror(rc));
  }
  rc = setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (rc == 0 && reuse_port)
    rc = setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  if (rc == 0) rc = bind(s, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  if (rc == 0) rc = listen(s, SOMAXCONN);
  if (rc == 0) rc = getsockname(s, (struct sockaddr *)&ss, &len);
  if (rc != 0) {
    rc = errno;
    close(s);
    return ifd_errf(err, IFD_EIO, "unable to bind %s to %s:%d: %s", what, host,
                    port, strerror(rc));
  }
  *fd = s;
  *bound_port = ss.ss_family == AF_INET6
                    ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                    : ntohs(((struct sockaddr_in *)&ss)->sin_port);
  return 0;
}

/* A file already at the socket's path: removed when it is a socket that
 * refuses connections (its server is gone), else refused: a live server
 * keeps its socket, and a file that is not a socket is not ours to delete.
 * The probe connects without blocking, so a live server with a full
 * backlog (EAGAIN) counts as live. Returns 0 (nothing there any more) or
 * IFD_EIO with why. */
static int clear_stale(const char *what, const struct sockaddr_un *sa,
                       ifd_errmsg_t *err) {
  const char *path = sa->sun_path;
  struct stat st;
  int s, rc, e;

  if (lstat(path, &st) != 0) {
    if (errno == ENOENT) return 0;
    return ifd_errf(err, IFD_EIO, "unable to bind %s to unix:%s: %s", what,
                    path, strerror(errno));
  }
  if (!S_ISSOCK(st.st_mode))
    return ifd_errf(err, IFD_EIO,
                    "unable to bind %s to unix:%s: the path exists and is "
                    "not a socket (remove it, or choose another path)",
                    what, path);
  s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0)
    return ifd_errf(err, IFD_EIO, "unable to create %s socket: %s", what,
                    strerror(errno));
  rc = connect(s, (const struct sockaddr *)sa, sizeof(*sa));
  e = errno;
  close(s);
  if (rc == 0 || e == EAGAIN || e == EINPROGRESS)
    return ifd_errf(err, IFD_EIO,
                    "unable to bind %s to unix:%s: another process is "
                    "listening on that socket",
                    what, path);
  if (e != ECONNREFUSED)
    return ifd_errf(err, IFD_EIO,
                    "unable to bind %s to unix:%s: the path holds a socket "
                    "that cannot be probed (%s); not removing it",
                    what, path, strerror(e));
  if (unlink(path) != 0 && errno != ENOENT)
    return ifd_errf(err, IFD_EIO,
                    "unable to remove the stale socket unix:%s for %s: %s",
                    path, what, strerror(errno));
  IFD_INFO("%s: removed the stale socket unix:%s (nobody listened on it)", what,
           path);
  return 0;
}

static int listen_unix(const char *what, const char *host,
                       const ifd_unix_perm_t *perm, int *fd,
                       ifd_unix_file_t *file, ifd_errmsg_t *err) {
  const char *path = ifd__net_unix_path(host);
  struct sockaddr_un sa;
  struct stat st;
  int s, rc;
  const char *step;

  if (path[0] == '\0')
    return ifd_errf(err, IFD_EIO, "%s address %s: empty socket path", what,
                    host);
  if (strlen(path) >= sizeof(sa.sun_path))
    return ifd_errf(err, IFD_EIO,
                    "%s address %s: the socket path is longer than %zu "
                    "bytes",
                    what, host, sizeof(sa.sun_path) - 1);
  memset(&sa, 0, sizeof(sa));
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path, path, strlen(path) + 1);
  rc = clear_stale(what, &sa, err);
  if (rc != 0) return rc;
  s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0)
    return ifd_errf(err, IFD_EIO, "unable to create %s socket: %s", what,
                    strerror(errno));
  if (bind(s, (const struct sockaddr *)&sa, sizeof(sa)) != 0) {
    rc = errno;
    close(s);
    return ifd_errf(err, IFD_EIO, "unable to bind %s to unix:%s: %s", what,
                    path, strerror(rc));
  }
  /* Permissions and owner before listen(): until then no client connects. */
  step = NULL;
  if (perm != NULL && perm->mode >= 0 && chmod(path, (mode_t)perm->mode) != 0)
    step = "set the mode of";
  else if (perm != NULL && (perm->uid >= 0 || perm->gid >= 0) &&
           chown(path, (uid_t)perm->uid, (gid_t)perm->gid) != 0)
    step = "set the owner of";
  else if (lstat(path, &st) != 0)
    step = "stat";
  else if (listen(s, SOMAXCONN) != 0)
    step = "listen on";
  if (step != NULL) {
    rc = errno;
    close(s);
    unlink(path);
    return ifd_errf(err, IFD_EIO, "unable to %s the %s socket unix:%s: %s",
                    step, what, path, strerror(rc));
  }
  file->path = strdup(path);
  if (file->path == NULL) {
    close(s);
    unlink(path);
    return ifd_errf(err, IFD_EIO, "out of memory");
  }
  file->dev = st.st_dev;
  file->ino = st.st_ino;
  *fd = s;
  return 0;
}

int ifd__net_listen(const char *what, const char *host, int port,
                    int reuse_port, const ifd_unix_perm_t *perm, int *fd,
                    int *bound_port, ifd_unix_file_t *file, ifd_errmsg_t *err) {
  file->path = NULL;
  if (ifd__net_is_unix(host)) {
    *bound_port = 0;
    return listen_unix(what, host, perm, fd, file, err);
  }
  return listen_tcp(what, host, port, reuse_port, fd, bound_port, err);
}

void ifd__net_unlink_unix(ifd_unix_file_t *file) {
  struct stat st;

  if (file->path == NULL) return;
  /* Only the file this listener made: never one that replaced it since. */
  if (lstat(file->path, &st) == 0 && st.st_dev == file->dev &&
      st.st_ino == file->ino && unlink(file->path) != 0)
    IFD_WARN("cannot remove the socket file %s: %s", file->path,
             strerror(errno));
  free(file->path);
  file->path = NULL;
}
