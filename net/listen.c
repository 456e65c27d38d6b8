/*
 * net/listen.c - resolve, bind and listen, shared by every front end.
 */
#include "net/listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

int ifd__net_listen(uv_loop_t *loop, uv_tcp_t *tcp, const char *what,
                    const char *host, int port, int reuse_port,
                    uv_connection_cb cb, int *bound_port, int *handle_open,
                    ifd_errmsg_t *err) {
  struct addrinfo hints, *res = NULL;
  struct sockaddr_storage ss;
  int rc, len = sizeof(ss), one = 1;
  char service[16];
  uv_os_fd_t fd;

  *handle_open = 0;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  snprintf(service, sizeof(service), "%d", port);
  rc = getaddrinfo(host, service, &hints, &res);
  if (rc != 0)
    return ifd_errf(err, IFD_EIO, "unable to resolve %s address %s:%d: %s",
                    what, host, port, gai_strerror(rc));
  rc = uv_tcp_init_ex(loop, tcp, (unsigned)res->ai_family);
  if (rc != 0) {
    freeaddrinfo(res);
    return ifd_errf(err, IFD_EIO, "unable to create %s socket: %s", what,
                    uv_strerror(rc));
  }
  *handle_open = 1;
  if (reuse_port && (rc = uv_fileno((uv_handle_t *)tcp, &fd)) == 0 &&
      setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0)
    rc = uv_translate_sys_error(errno);
  if (rc == 0) rc = uv_tcp_bind(tcp, res->ai_addr, 0);
  freeaddrinfo(res);
  if (rc == 0) rc = uv_listen((uv_stream_t *)tcp, SOMAXCONN, cb);
  if (rc == 0) rc = uv_tcp_getsockname(tcp, (struct sockaddr *)&ss, &len);
  if (rc != 0)
    return ifd_errf(err, IFD_EIO, "unable to bind %s to %s:%d: %s", what, host,
                    port, uv_strerror(rc));
  *bound_port = ss.ss_family == AF_INET6
                    ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                    : ntohs(((struct sockaddr_in *)&ss)->sin_port);
  return 0;
}
