/*
 * bench/perf/http.c - inferd-perf's HTTP/1.1 transport.
 *
 * One keep-alive connection per slot and no pipelining, as perf_analyzer
 * does: a slot writes run->payload (uv_try_write first, so that a request
 * that fits the socket buffer costs one syscall and no callback), then llhttp
 * parses the response straight out of one read buffer shared by every
 * connection (the loop parses each read before the next one, so one buffer
 * is enough). Bodies are not copied, except the first bytes of an error body
 * and the body of a control request (metadata, config, statistics). A
 * connection the server closes is reopened for the next request.
 *
 * Connections are created on demand and freed only in their close callback,
 * at shutdown; each is on the transport's list from creation to that point.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llhttp.h>

#include "bench/perf/perf.h"

enum { HC_CLOSED, HC_CONNECTING, HC_OPEN, HC_CLOSING };

typedef struct hconn hconn_t;

struct hconn {
  ifd_perf_slot_t slot; /* load connections only */
  union {
    uv_tcp_t tcp; /* the stream, TCP or not (see ifd_perf_sock_t) */
    ifd_perf_sock_t sock;
  };
  uv_connect_t creq;
  uv_write_t wreq;
  llhttp_t parser;
  ifd_perf_run_t *run; /* borrowed: outlives the connection */
  const char *req;     /* borrowed: run->payload or ctl_req */
  size_t req_len;
  int state;
  int pending_send; /* send once connected (or once the write is done) */
  int in_request;   /* request written or being written, response awaited */
  int writing;
  int complete; /* set by on_message_complete, handled after execute */
  int keep_alive;
  int status;
  int control;            /* a one-shot control GET (not a slot) */
  int done;               /* control or idle: the response is in */
  int failed;             /* control or idle: the request failed */
  int final;              /* do not reconnect: close is for good */
  ifd_perf_buf_t body;    /* control: the captured body (owned) */
  ifd_perf_buf_t ctl_req; /* control / idle: the request (owned) */
  char err[IFD_PERF_ERR_MAX];
  size_t errlen;
  hconn_t *next; /* the transport's list of every connection */
  hconn_t *prev;
};

struct ifd_perf_http {
  hconn_t *conns; /* owned: every connection until its close callback */
  int nopen;      /* idle mode: connections currently open */
};

/* Every read lands here: the loop parses it before reading again. */
static char read_buf[256 * 1024];

static llhttp_settings_t settings;
static int settings_ready;

static void conn_close(hconn_t *c);

static void list_add(ifd_perf_http_t *h, hconn_t *c) {
  c->next = h->conns;
  c->prev = NULL;
  if (h->conns) h->conns->prev = c;
  h->conns = c;
}

static void list_del(ifd_perf_http_t *h, hconn_t *c) {
  if (c->prev) c->prev->next = c->next;
  if (c->next) c->next->prev = c->prev;
  if (h->conns == c) h->conns = c->next;
}

/* ---- llhttp callbacks ---- */

static int on_headers_complete(llhttp_t *p) {
  hconn_t *c = p->data;
  c->status = p->status_code;
  return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t len) {
  hconn_t *c = p->data;
  if (c->control) {
    if (ifd__perf_buf_append(&c->body, at, len)) return -1;
  } else if (c->status != 200 && c->errlen < sizeof c->err - 1) {
    size_t n = sizeof c->err - 1 - c->errlen;
    if (n > len) n = len;
    memcpy(c->err + c->errlen, at, n);
    c->errlen += n;
  }
  return 0;
}

static int on_message_begin(llhttp_t *p) {
  hconn_t *c = p->data;
  c->errlen = 0;
  return 0;
}

static int on_message_complete(llhttp_t *p) {
  hconn_t *c = p->data;
  c->complete = 1;
  c->keep_alive = llhttp_should_keep_alive(p);
  return HPE_PAUSED; /* no pipelining: nothing may follow */
}

static void settings_init(void) {
  if (settings_ready) return;
  llhttp_settings_init(&settings);
  settings.on_message_begin = on_message_begin;
  settings.on_headers_complete = on_headers_complete;
  settings.on_body = on_body;
  settings.on_message_complete = on_message_complete;
  settings_ready = 1;
}

/* ---- completion ---- */

/* The request of c ended: ok with a complete response, or failed with msg. */
static void finish(hconn_t *c, int ok, const char *msg) {
  int was = c->in_request;
  c->in_request = 0;
  if (!was) return;
  if (c->control || !c->slot.vt) {
    c->done = 1;
    c->failed = !ok;
    if (!ok && msg) snprintf(c->err, sizeof c->err, "%s", msg);
    return;
  }
  if (ok && c->status == 200) {
    ifd__perf_run_done(&c->slot, 1, NULL, 0);
  } else if (ok) {
    char m[IFD_PERF_ERR_MAX];
    int n = snprintf(m, sizeof m, "HTTP %d: %.*s", c->status, (int)c->errlen,
                     c->err);
    ifd__perf_run_done(&c->slot, 0, m, n < 0 ? 0 : (size_t)n);
  } else {
    ifd__perf_run_done(&c->slot, 0, msg, strlen(msg));
  }
}

/* ---- I/O ---- */

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  (void)h;
  (void)hint;
  buf->base = read_buf;
  buf->len = sizeof read_buf;
}

static void on_write(uv_write_t *w, int status);

static int write_request(hconn_t *c) {
  uv_buf_t b = uv_buf_init((char *)c->req, (unsigned)c->req_len);
  int n;

  c->in_request = 1;
  n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
  if (n == (int)c->req_len) return 0;
  if (n == UV_EAGAIN) n = 0;
  if (n < 0) return n;
  b.base += n;
  b.len -= n;
  c->writing = 1;
  return uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_write);
}

static void on_write(uv_write_t *w, int status) {
  hconn_t *c = container_of(w, hconn_t, wreq);
  c->writing = 0;
  if (c->state != HC_OPEN) return; /* closing: its request is finished */
  if (status < 0) {
    conn_close(c); /* first: finish() may send again */
    finish(c, 0, uv_strerror(status));
    return;
  }
  if (c->pending_send && c->state == HC_OPEN) {
    int rc;
    c->pending_send = 0;
    rc = write_request(c);
    if (rc < 0) {
      conn_close(c); /* first: finish() may send again */
      finish(c, 0, uv_strerror(rc));
    }
  }
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  hconn_t *c = container_of(s, hconn_t, tcp);
  llhttp_errno_t e;

  if (nread == 0) return;
  if (nread < 0) {
    /* A body delimited by the end of the connection ends here. */
    if (nread == UV_EOF && c->in_request) llhttp_finish(&c->parser);
    if (c->complete) {
      c->complete = 0;
      conn_close(c);
      finish(c, 1, NULL);
      return;
    }
    conn_close(c); /* first: finish() may send again */
    finish(c, 0,
           nread == UV_EOF ? "connection closed by the server"
                           : uv_strerror((int)nread));
    return;
  }
  if (!c->in_request) {
    conn_close(c); /* first: finish() may send again */
    finish(c, 0, "unexpected bytes from the server");
    return;
  }
  e = llhttp_execute(&c->parser, buf->base, (size_t)nread);
  if (e == HPE_PAUSED) {
    /* A response ends exactly where the read does, unless the server sent
     * bytes we did not ask for: then the connection cannot be trusted. */
    const char *pos = llhttp_get_error_pos(&c->parser);
    llhttp_resume(&c->parser);
    if (pos != buf->base + nread) c->keep_alive = 0;
  } else if (e != HPE_OK) {
    char m[160];
    snprintf(m, sizeof m, "bad HTTP response: %s", llhttp_errno_name(e));
    conn_close(c); /* first: finish() may send again */
    finish(c, 0, m);
    return;
  }
  if (c->complete) {
    c->complete = 0;
    if (!c->keep_alive || c->control) conn_close(c);
    finish(c, 1, NULL);
  }
}

static void on_connect(uv_connect_t *req, int status) {
  hconn_t *c = container_of(req, hconn_t, creq);
  int rc;

  if (c->state != HC_CONNECTING) return; /* closed meanwhile */
  if (status < 0) {
    char m[IFD_PERF_ERR_MAX];
    snprintf(m, sizeof m, "cannot connect to %s: %s", c->run->authority,
             uv_strerror(status));
    c->pending_send = 0;
    if (!c->control && c->slot.vt) ifd__perf_run_fail(c->run, status, "%s", m);
    c->in_request = 1; /* the send that waited for this connection */
    conn_close(c);     /* first: finish() may send again */
    finish(c, 0, m);
    return;
  }
  c->state = HC_OPEN;
  if (c->run->http) c->run->http->nopen++;
  llhttp_init(&c->parser, HTTP_RESPONSE, &settings);
  c->parser.data = c;
  rc = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
  if (rc == 0 && c->pending_send) {
    c->pending_send = 0;
    rc = write_request(c);
  }
  if (rc < 0) {
    c->in_request = 1;
    conn_close(c); /* first: finish() may send again */
    finish(c, 0, uv_strerror(rc));
  }
}

static int conn_connect(hconn_t *c) {
  int rc = ifd__perf_sock_init(c->run, &c->sock);
  if (rc < 0) return rc;
  c->state = HC_CONNECTING;
  rc = ifd__perf_sock_connect(c->run, &c->sock, &c->creq, on_connect);
  if (rc < 0) conn_close(c);
  return rc;
}

static void on_close(uv_handle_t *h) {
  hconn_t *c = container_of(h, hconn_t, tcp);
  ifd_perf_http_t *t = c->run->http;

  c->state = HC_CLOSED;
  c->writing = 0;
  if (c->final) {
    list_del(t, c);
    ifd__perf_buf_free(&c->body);
    ifd__perf_buf_free(&c->ctl_req);
    ifd__perf_seq_slot_free(&c->slot);
    free(c);
    return;
  }
  /* A send that arrived while closing reopens the connection now. */
  if (c->pending_send) {
    int rc = conn_connect(c);
    if (rc < 0) {
      c->pending_send = 0;
      c->in_request = 1;
      finish(c, 0, uv_strerror(rc));
    }
  }
}

static void conn_close(hconn_t *c) {
  if (c->state == HC_CLOSED || c->state == HC_CLOSING) return;
  if (c->state == HC_OPEN && c->run->http) c->run->http->nopen--;
  c->state = HC_CLOSING;
  uv_close((uv_handle_t *)&c->tcp, on_close);
}

/* ---- slots ---- */

static int slot_send(ifd_perf_slot_t *s) {
  hconn_t *c = container_of(s, hconn_t, slot);
  int rc;

  c->status = 0;
  c->errlen = 0;
  c->req = s->req; /* sequence models rewrite theirs per request */
  c->req_len = s->req_len;
  if (c->state != HC_OPEN || c->writing) {
    c->pending_send = 1;
    c->in_request = 1;
    if (c->state == HC_CLOSED) {
      rc = conn_connect(c);
      if (rc < 0) {
        c->pending_send = 0;
        c->in_request = 0;
        return rc;
      }
    }
    return 0;
  }
  rc = write_request(c);
  if (rc < 0) {
    c->in_request = 0;
    conn_close(c);
  }
  return rc;
}

static const ifd_perf_slot_vt_t http_slot_vt = {slot_send};

static hconn_t *conn_new(ifd_perf_run_t *run) {
  hconn_t *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->run = run;
  c->state = HC_CLOSED;
  list_add(run->http, c);
  return c;
}

int ifd__perf_http_init(ifd_perf_run_t *run) {
  settings_init();
  run->http = calloc(1, sizeof *run->http);
  return run->http ? 0 : UV_ENOMEM;
}

int ifd__perf_http_slot_new(ifd_perf_run_t *run, ifd_perf_slot_t **out) {
  hconn_t *c = conn_new(run);
  if (!c) return UV_ENOMEM;
  c->slot.vt = &http_slot_vt;
  c->slot.run = run;
  c->req = run->payload.data;
  c->req_len = run->payload.len;
  *out = &c->slot;
  return 0;
}

/* ---- control requests ---- */

int ifd__perf_http_request(ifd_perf_run_t *run, const char *method,
                           const char *path, const char *body, size_t body_len,
                           int *status, ifd_perf_buf_t *out, char *err,
                           size_t errlen) {
  hconn_t *c = conn_new(run);
  int rc;

  if (!c) return UV_ENOMEM;
  err[0] = 0;
  c->control = 1;
  if (body)
    rc = ifd__perf_buf_printf(&c->ctl_req,
                              "%s %s HTTP/1.1\r\nHost: %s\r\n"
                              "Connection: close\r\n"
                              "Content-Type: application/json\r\n"
                              "Content-Length: %zu\r\n\r\n",
                              method, path, run->authority, body_len);
  else
    rc = ifd__perf_buf_printf(&c->ctl_req,
                              "%s %s HTTP/1.1\r\nHost: %s\r\n"
                              "Connection: close\r\n\r\n",
                              method, path, run->authority);
  if (rc == 0 && body) rc = ifd__perf_buf_append(&c->ctl_req, body, body_len);
  if (rc < 0) goto out_close;
  c->req = c->ctl_req.data;
  c->req_len = c->ctl_req.len;
  c->pending_send = 1;
  c->in_request = 1;
  rc = conn_connect(c);
  if (rc < 0) goto out_close;
  rc = ifd__perf_run_until(run, &c->done, 30000);
  if (rc < 0) {
    snprintf(err, errlen, "%s %s: no answer within 30 s", method, path);
    goto out_close;
  }
  if (c->failed) {
    snprintf(err, errlen, "%s %s: %s", method, path, c->err);
    rc = UV_EIO;
    goto out_close;
  }
  *status = c->status;
  *out = c->body;
  memset(&c->body, 0, sizeof c->body);
  rc = 0;

out_close:
  if (rc < 0 && !err[0])
    snprintf(err, errlen, "%s %s: %s", method, path, uv_strerror(rc));
  c->final = 1; /* on_close frees it from now on */
  if (c->state == HC_CLOSED) {
    list_del(run->http, c);
    ifd__perf_buf_free(&c->body);
    ifd__perf_buf_free(&c->ctl_req);
    free(c);
  } else {
    conn_close(c); /* freed in on_close */
  }
  return rc;
}

int ifd__perf_http_get(ifd_perf_run_t *run, const char *path, int *status,
                       ifd_perf_buf_t *body, char *err, size_t errlen) {
  return ifd__perf_http_request(run, "GET", path, NULL, 0, status, body, err,
                                errlen);
}

/* ---- idle connections ---- */

typedef struct idle_state {
  uv_timer_t timer;
  int fired;
} idle_state_t;

static void on_idle_timer(uv_timer_t *t) {
  idle_state_t *st = container_of(t, idle_state_t, timer);
  st->fired = 1;
}

int ifd__perf_http_idle(ifd_perf_run_t *run, int n, double seconds) {
  ifd_perf_http_t *h = run->http;
  const int window = 256; /* connects in flight at once */
  hconn_t **cs = calloc((size_t)n, sizeof *cs);
  idle_state_t st = {0};
  int started = 0, answered = 0, failed = 0, i, rc = 0;
  char first_err[IFD_PERF_ERR_MAX] = "";

  if (!cs) return UV_ENOMEM;
  for (i = 0; i < n; i++) {
    cs[i] = conn_new(run);
    if (!cs[i]) {
      rc = UV_ENOMEM;
      goto out_free;
    }
    rc = ifd__perf_buf_printf(
        &cs[i]->ctl_req, "GET /v2/health/live HTTP/1.1\r\nHost: %s\r\n\r\n",
        run->authority);
    if (rc < 0) goto out_free;
    cs[i]->req = cs[i]->ctl_req.data;
    cs[i]->req_len = cs[i]->ctl_req.len;
  }
  /* Open them with at most `window` handshakes outstanding, so that the
   * server's listen backlog never overflows. */
  while (answered < n) {
    int inflight = started - answered;
    while (started < n && inflight < window) {
      hconn_t *c = cs[started++];
      c->pending_send = 1;
      c->in_request = 1;
      if (conn_connect(c) < 0) {
        c->in_request = 0;
        c->done = c->failed = 1;
        snprintf(c->err, sizeof c->err, "cannot create a socket");
      }
      inflight++;
    }
    if (uv_run(run->loop, UV_RUN_ONCE) == 0 && started == n) break;
    answered = 0;
    for (i = 0; i < started; i++) answered += cs[i]->done;
  }
  for (i = 0; i < n; i++) {
    if (!cs[i]->done || cs[i]->failed || cs[i]->status != 200) {
      if (!failed++)
        snprintf(first_err, sizeof first_err, "%s",
                 cs[i]->failed ? cs[i]->err : "not HTTP 200");
    }
  }
  printf("idle connections: %d open\n", h->nopen);
  if (failed) printf("  %d of %d failed, first: %s\n", failed, n, first_err);
  fflush(stdout);

  uv_timer_init(run->loop, &st.timer);
  uv_timer_start(&st.timer, on_idle_timer, (uint64_t)(seconds * 1000), 0);
  ifd__perf_run_until(run, &st.fired, (uint64_t)(seconds * 1000) + 1000);
  printf("idle connections: %d still open at exit\n", h->nopen);
  uv_close((uv_handle_t *)&st.timer, NULL);
  uv_run(run->loop, UV_RUN_NOWAIT); /* st lives on this stack: close it */
  rc = failed ? UV_EIO : 0;

out_free:
  free(cs); /* the connections stay on the list; shutdown closes them */
  return rc;
}

/* ---- shutdown ---- */

void ifd__perf_http_shutdown(ifd_perf_run_t *run) {
  ifd_perf_http_t *h = run->http;
  hconn_t *c, *next;

  if (!h) return;
  for (c = h->conns; c; c = next) {
    next = c->next;
    c->final = 1;
    c->pending_send = 0;
    if (c->state == HC_CLOSED) {
      list_del(h, c);
      ifd__perf_buf_free(&c->body);
      ifd__perf_buf_free(&c->ctl_req);
      ifd__perf_seq_slot_free(&c->slot);
      free(c);
    } else {
      conn_close(c);
    }
  }
  while (h->conns) uv_run(run->loop, UV_RUN_ONCE);
  free(h);
  run->http = NULL;
}
