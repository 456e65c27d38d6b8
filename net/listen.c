/*
 * net/listen.c - resolve, bind and listen, shared by every front end. The
 * socket is plain: the connection layer accepts on it itself (net/conn.c,
 * "Accept").
 */
#include "net/listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int ifd__net_listen(const char *what, const char *host, int port,
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
