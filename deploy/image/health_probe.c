/*
 * inferd-health-probe: the container image's HEALTHCHECK (deploy/image/).
 *
 * The image holds no shell and no curl, so the health check is this program:
 * one HTTP/1.1 GET of a URL on a numeric address, exit 0 when the answer's
 * status is 200 and 1 otherwise (refused, timed out, malformed, any other
 * status), with one line on stderr saying why. It links libc only, which the
 * image carries anyway.
 *
 *   inferd-health-probe [http://ADDR:PORT/PATH] [TIMEOUT_MS]
 *
 * ADDR is an IPv4 address, an IPv6 address in brackets, or "localhost"
 * (127.0.0.1: the image has no resolver configuration to trust). The
 * default URL is http://127.0.0.1:8000/v2/health/ready, the default timeout
 * 2000 ms for the whole exchange.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_URL "http://127.0.0.1:8000/v2/health/ready"

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Splits `url` into an address and a path. Returns 0, or -1 when the URL is
 * not http://ADDR:PORT/PATH with a numeric ADDR (or localhost). */
static int parse_url(const char *url, struct sockaddr_storage *sa, /* OUT */
                     socklen_t *salen /* OUT */, const char **path /* OUT */) {
  char host[64];
  const char *p, *end, *colon;
  long port;
  char *stop;
  size_t n;

  if (strncmp(url, "http://", 7) != 0) return -1;
  p = url + 7;
  end = p + strcspn(p, "/");
  *path = *end ? end : "/";
  if (*p == '[') {
    const char *rb = memchr(p, ']', (size_t)(end - p));
    if (rb == NULL || rb[1] != ':') return -1;
    n = (size_t)(rb - p - 1);
    if (n >= sizeof(host)) return -1;
    memcpy(host, p + 1, n);
    colon = rb + 1;
  } else {
    colon = memchr(p, ':', (size_t)(end - p));
    if (colon == NULL) return -1;
    n = (size_t)(colon - p);
    if (n >= sizeof(host)) return -1;
    memcpy(host, p, n);
  }
  host[n] = '\0';
  errno = 0;
  port = strtol(colon + 1, &stop, 10);
  if (stop != end || errno != 0 || port <= 0 || port > 65535) return -1;
  if (strcmp(host, "localhost") == 0) strcpy(host, "127.0.0.1");

  memset(sa, 0, sizeof(*sa));
  struct sockaddr_in *in4 = (struct sockaddr_in *)sa;
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
  if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    in4->sin_port = htons((unsigned short)port);
    *salen = sizeof(*in4);
    return 0;
  }
  if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons((unsigned short)port);
    *salen = sizeof(*in6);
    return 0;
  }
  return -1;
}

/* Waits until `fd` is ready for `events` or `deadline` (CLOCK_MONOTONIC ms)
 * passes. Returns 0, or -1 on timeout or error. */
static int wait_fd(int fd, short events, long long deadline) {
  struct pollfd pfd = {.fd = fd, .events = events};
  for (;;) {
    long long left = deadline - now_ms();
    int r;
    if (left <= 0) return -1;
    r = poll(&pfd, 1, (int)left);
    if (r > 0) return 0;
    if (r < 0 && errno != EINTR) return -1;
  }
}

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : DEFAULT_URL;
  long timeout_ms = argc > 2 ? strtol(argv[2], NULL, 10) : 2000;
  struct sockaddr_storage sa;
  socklen_t salen;
  const char *path;
  char req[1024], resp[256];
  size_t got = 0, sent = 0, reqlen;
  long long deadline;
  int fd, err = 0, status;
  socklen_t errlen = sizeof(err);

  if (argc > 3 || timeout_ms <= 0 || parse_url(url, &sa, &salen, &path) != 0) {
    fprintf(stderr,
            "usage: inferd-health-probe [http://ADDR:PORT/PATH] "
            "[TIMEOUT_MS]  (ADDR numeric or localhost)\n");
    return 2;
  }
  reqlen = (size_t)snprintf(req, sizeof(req),
                            "GET %s HTTP/1.1\r\nHost: probe\r\n"
                            "Connection: close\r\n\r\n",
                            path);
  if (reqlen >= sizeof(req)) {
    fprintf(stderr, "inferd-health-probe: path too long\n");
    return 2;
  }
  deadline = now_ms() + timeout_ms;

  fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    perror("inferd-health-probe: socket");
    return 1;
  }
  if (connect(fd, (struct sockaddr *)&sa, salen) != 0 &&
      (errno != EINPROGRESS || wait_fd(fd, POLLOUT, deadline) != 0 ||
       getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &errlen) != 0 || err != 0)) {
    fprintf(stderr, "inferd-health-probe: connect %s: %s\n", url,
            err ? strerror(err) : "timed out");
    goto out_close;
  }
  while (sent < reqlen) {
    ssize_t w = send(fd, req + sent, reqlen - sent, MSG_NOSIGNAL);
    if (w > 0) {
      sent += (size_t)w;
    } else if (w < 0 && errno == EAGAIN &&
               wait_fd(fd, POLLOUT, deadline) == 0) {
      continue;
    } else {
      fprintf(stderr, "inferd-health-probe: send: %s\n",
              w < 0 ? strerror(errno) : "closed");
      goto out_close;
    }
  }
  /* The status line is all that matters: read until it is complete. */
  while (got < sizeof(resp) - 1 && memchr(resp, '\n', got) == NULL) {
    ssize_t r = recv(fd, resp + got, sizeof(resp) - 1 - got, 0);
    if (r > 0) {
      got += (size_t)r;
    } else if (r < 0 && errno == EAGAIN && wait_fd(fd, POLLIN, deadline) == 0) {
      continue;
    } else {
      break;
    }
  }
  resp[got] = '\0';
  close(fd);
  if (sscanf(resp, "HTTP/1.%*1[01] %3d", &status) != 1) {
    fprintf(stderr, "inferd-health-probe: %s: no HTTP answer\n", url);
    return 1;
  }
  if (status != 200) {
    fprintf(stderr, "inferd-health-probe: %s: status %d\n", url, status);
    return 1;
  }
  return 0;

out_close:
  close(fd);
  return 1;
}
