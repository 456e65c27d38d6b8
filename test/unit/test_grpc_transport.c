/*
 * test/unit/test_grpc_transport.c - the gRPC transport over real sockets.
 *
 * The transport is started on 127.0.0.1:0 on a private loop, and a small
 * nghttp2 CLIENT session driven over a uv_tcp on the same loop makes the
 * calls, so every test is deterministic and single-threaded. The methods
 * are defined here (echo_methods, the application's table the transport is
 * given), which keeps frontend/ out of the link: an echo unary method
 * (answering in three pieces), an echo bidi method, one answering after a timer
 * while holding a reference, one that never answers, and one that fails with a
 * message to percent-encode. Shutdown: an idle bidi stream survives draining
 * and is answered UNAVAILABLE once the core is drained; a call that never ends
 * is closed at the deadline. Every test ends with ifd_grpc_stop's done and
 * uv_loop_close() == 0.
 */
/* cmocka.h needs setjmp.h, stdarg.h and stddef.h before it. */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <nghttp2/nghttp2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/bufpool.h"
#include "net/grpc.h"
#include "net/grpc_internal.h"
#include "net/restrict.h"

#define MAX_CALLS 64

/* ---- the methods ---------------------------------------------------------
 */

static uv_loop_t loop;
static int n_never_msgs, n_never_cancels, n_delayed_started, n_echo_cancels;
static int n_bidi_msgs;

typedef struct echo {
  uv_buf_t iov[3];
  uint8_t *msg; /* owned */
} echo_t;

static void echo_free(void *arg) {
  echo_t *e = arg;
  ifd_bufpool_put(e->msg);
  free(e);
}

/* Sends `msg` back in three pieces (gathered by the transport). */
static int echo_send(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  echo_t *e = malloc(sizeof(*e));
  ifd_gmsg_t m;

  assert_non_null(e);
  e->msg = msg;
  e->iov[0] = uv_buf_init((char *)msg, (unsigned)(len / 3));
  e->iov[1] = uv_buf_init((char *)msg + len / 3, (unsigned)(len / 3));
  e->iov[2] =
      uv_buf_init((char *)msg + 2 * (len / 3), (unsigned)(len - 2 * (len / 3)));
  m.iov = e->iov;
  m.n_iov = 3;
  m.free_fn = echo_free;
  m.free_arg = e;
  return ifd_gstream_send(st, &m);
}

static void unary_msg(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  assert_null(ifd_gstream_app(st));
  assert_int_equal(echo_send(st, msg, len), 0);
  ifd_gstream_finish(st, IFD_GRPC_OK, NULL);
  assert_true(ifd_gstream_closed(st));
}

static void echo_cancel(ifd_gstream_t *st) {
  (void)st;
  n_echo_cancels++;
}

static void bidi_msg(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  n_bidi_msgs++;
  assert_int_equal(echo_send(st, msg, len), 0);
}

static void bidi_end(ifd_gstream_t *st) {
  ifd_gstream_finish(st, IFD_GRPC_OK, NULL);
}

typedef struct delayed {
  uv_timer_t timer;
  ifd_gstream_t *st; /* counted */
  uint8_t *msg;      /* owned until echoed */
  size_t len;
} delayed_t;

static void delayed_closed(uv_handle_t *h) {
  delayed_t *d = h->data;
  ifd_gstream_unref(d->st);
  free(d);
}

static void delayed_fire(uv_timer_t *t) {
  delayed_t *d = t->data;

  /* On a cancelled call this fails harmlessly and frees the message. */
  if (echo_send(d->st, d->msg, d->len) == 0)
    ifd_gstream_finish(d->st, IFD_GRPC_OK, NULL);
  uv_close((uv_handle_t *)&d->timer, delayed_closed);
}

static void delayed_msg(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  delayed_t *d = malloc(sizeof(*d));

  assert_non_null(d);
  n_delayed_started++;
  ifd_gstream_ref(st);
  d->st = st;
  d->msg = msg;
  d->len = len;
  uv_timer_init(&loop, &d->timer);
  d->timer.data = d;
  uv_timer_start(&d->timer, delayed_fire, 100, 0);
}

static void never_msg(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  (void)len;
  ifd_bufpool_put(msg);
  n_never_msgs++;
  ifd_gstream_set_data(st, &n_never_msgs);
  assert_ptr_equal(ifd_gstream_data(st), &n_never_msgs);
}

static void never_cancel(ifd_gstream_t *st) {
  assert_true(ifd_gstream_closed(st));
  n_never_cancels++;
}

static void fail_method(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  (void)len;
  ifd_bufpool_put(msg);
  ifd_gstream_finish(st, IFD_GRPC_INVALID_ARGUMENT, "bad \xc3\xbc 100%\n");
}

static void timeout_msg(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  uint64_t ns = ifd_gstream_timeout_ns(st);
  uint8_t *p = ifd_bufpool_get(ifd_bufpool_shared(), 8);

  (void)len;
  ifd_bufpool_put(msg);
  assert_non_null(p);
  memcpy(p, &ns, 8);
  assert_int_equal(echo_send(st, p, 8), 0);
  ifd_gstream_finish(st, IFD_GRPC_OK, NULL);
}

static int n_huge_freed, huge_rc;

static void huge_free(void *arg) {
  (void)arg;
  n_huge_freed++;
}

/* Claims a response over the maximum: the transport refuses it before
 * reading a byte, so the pieces need not exist. */
static void huge_msg(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  static uint8_t one;
  static uv_buf_t iov[2];
  ifd_gmsg_t m;

  (void)len;
  ifd_bufpool_put(msg);
  iov[0] = uv_buf_init((char *)&one, 1);
  iov[1].base = (char *)&one;
  iov[1].len = ifd_gstream_max_message(st);
  m.iov = iov;
  m.n_iov = 2;
  m.free_fn = huge_free;
  m.free_arg = NULL;
  huge_rc = ifd_gstream_send(st, &m);
  assert_true(ifd_gstream_closed(st));
  /* Later sends fail harmlessly. */
  m.n_iov = 1;
  assert_int_equal(ifd_gstream_send(st, &m), IFD_ECANCELLED);
  ifd_gstream_finish(st, IFD_GRPC_OK, NULL); /* ignored: already finished */
}

static const ifd_grpc_method_t echo_methods[] = {
    {"/test.Echo/Huge", 0, huge_msg, NULL, echo_cancel, 0},
    {"/test.Echo/Unary", 0, unary_msg, NULL, echo_cancel, 0},
    {"/test.Echo/Bidi", 1, bidi_msg, bidi_end, echo_cancel, 0},
    {"/test.Echo/Delayed", 0, delayed_msg, NULL, NULL, 0},
    {"/test.Echo/Never", 0, never_msg, NULL, never_cancel, 0},
    {"/test.Echo/Fail", 0, fail_method, NULL, NULL, 0},
    {"/test.Echo/Timeout", 0, timeout_msg, NULL, NULL, 0},
    {NULL, 0, NULL, NULL, NULL, 0},
};

/* Starts the transport on the test loop with the echo methods. */
static int serve(ifd_grpc_opts_t *o, ifd_grpc_t **out, ifd_errmsg_t *err) {
  o->methods = echo_methods;
  return ifd_grpc_serve(&loop, o, out, err);
}

/* ---- the client ------------------------------------------------------------
 */

typedef struct tclient tclient_t;

typedef struct tcall {
  tclient_t *cl; /* borrowed */
  int32_t id;
  uint8_t *body; /* owned: bytes to send */
  size_t body_len, body_off, body_cap;
  int body_eof, deferred;
  int http_status, grpc_status;
  char grpc_message[512];
  uint8_t *resp; /* owned: DATA payload received */
  size_t resp_len, resp_cap;
  int closed;
  uint32_t close_code;
} tcall_t;

struct tclient {
  uv_tcp_t tcp;
  uv_connect_t creq;
  nghttp2_session *s; /* owned */
  tcall_t *calls[MAX_CALLS];
  int n_calls;
  int connected, eof, closing, handle_closed;
  const char *raw; /* borrowed: bytes to send instead of HTTP/2 */
};

typedef struct twrite {
  uv_write_t req;
  uint8_t *buf; /* owned */
} twrite_t;

static tclient_t *clients[8];

static void grow(uint8_t **p, size_t *cap, size_t need) {
  if (need <= *cap) return;
  size_t c = *cap != 0 ? *cap : 4096;
  while (c < need) c *= 2;
  *p = realloc(*p, c);
  assert_non_null(*p);
  *cap = c;
}

static void on_cwrite(uv_write_t *w, int status) {
  twrite_t *t = (twrite_t *)w;
  (void)status;
  free(t->buf);
  free(t);
}

static void client_flush(tclient_t *cl) {
  uint8_t *buf = NULL;
  size_t len = 0, cap = 0;
  twrite_t *w;
  uv_buf_t b;

  if (!cl->connected || cl->closing || cl->s == NULL) return;
  for (;;) {
    const uint8_t *d;
    ssize_t n = nghttp2_session_mem_send(cl->s, &d);
    assert_true(n >= 0);
    if (n == 0) break;
    grow(&buf, &cap, len + (size_t)n);
    memcpy(buf + len, d, (size_t)n);
    len += (size_t)n;
  }
  if (len == 0) return;
  w = malloc(sizeof(*w));
  assert_non_null(w);
  w->buf = buf;
  b = uv_buf_init((char *)buf, (unsigned)len);
  assert_int_equal(uv_write(&w->req, (uv_stream_t *)&cl->tcp, &b, 1, on_cwrite),
                   0);
}

static void client_closed(uv_handle_t *h) {
  tclient_t *cl = h->data;
  cl->handle_closed = 1;
}

static void client_close(tclient_t *cl) {
  if (cl->closing) return;
  cl->closing = 1;
  uv_close((uv_handle_t *)&cl->tcp, client_closed);
}

static void on_calloc(uv_handle_t *h, size_t sugg, uv_buf_t *b) {
  (void)h;
  b->base = malloc(sugg);
  b->len = sugg;
  assert_non_null(b->base);
}

static void on_cread(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
  tclient_t *cl = s->data;

  if (n < 0) {
    cl->eof = 1;
    client_close(cl);
  } else if (n > 0 && cl->s != NULL && !cl->closing) {
    ssize_t rc = nghttp2_session_mem_recv(cl->s, (uint8_t *)b->base, (size_t)n);
    assert_int_equal(rc, n);
    client_flush(cl);
  }
  free(b->base);
}

static int c_on_header(nghttp2_session *s, const nghttp2_frame *frame,
                       const uint8_t *name, size_t namelen,
                       const uint8_t *value, size_t valuelen, uint8_t flags,
                       void *user) {
  tcall_t *t = nghttp2_session_get_stream_user_data(s, frame->hd.stream_id);
  (void)flags;
  (void)user;
  if (t == NULL) return 0;
  if (namelen == 7 && memcmp(name, ":status", 7) == 0)
    t->http_status = atoi((const char *)value);
  else if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0)
    t->grpc_status = atoi((const char *)value);
  else if (namelen == 12 && memcmp(name, "grpc-message", 12) == 0 &&
           valuelen < sizeof(t->grpc_message)) {
    memcpy(t->grpc_message, value, valuelen);
    t->grpc_message[valuelen] = '\0';
  }
  return 0;
}

static int c_on_data(nghttp2_session *s, uint8_t flags, int32_t id,
                     const uint8_t *data, size_t len, void *user) {
  tcall_t *t = nghttp2_session_get_stream_user_data(s, id);
  (void)flags;
  (void)user;
  if (t == NULL) return 0;
  grow(&t->resp, &t->resp_cap, t->resp_len + len);
  memcpy(t->resp + t->resp_len, data, len);
  t->resp_len += len;
  return 0;
}

static int c_on_close(nghttp2_session *s, int32_t id, uint32_t code,
                      void *user) {
  tcall_t *t = nghttp2_session_get_stream_user_data(s, id);
  (void)user;
  if (t == NULL) return 0;
  t->closed = 1;
  t->close_code = code;
  return 0;
}

static void on_connect(uv_connect_t *r, int status) {
  tclient_t *cl = r->data;
  nghttp2_session_callbacks *cb;
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 16 << 20},
  };

  assert_int_equal(status, 0);
  cl->connected = 1;
  assert_int_equal(uv_read_start((uv_stream_t *)&cl->tcp, on_calloc, on_cread),
                   0);
  if (cl->raw != NULL) {
    twrite_t *w = malloc(sizeof(*w));
    uv_buf_t b;
    assert_non_null(w);
    w->buf = (uint8_t *)strdup(cl->raw);
    b = uv_buf_init((char *)w->buf, (unsigned)strlen(cl->raw));
    assert_int_equal(
        uv_write(&w->req, (uv_stream_t *)&cl->tcp, &b, 1, on_cwrite), 0);
    return;
  }
  assert_int_equal(nghttp2_session_callbacks_new(&cb), 0);
  nghttp2_session_callbacks_set_on_header_callback(cb, c_on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, c_on_data);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, c_on_close);
  assert_int_equal(nghttp2_session_client_new(&cl->s, cb, cl), 0);
  nghttp2_session_callbacks_del(cb);
  assert_int_equal(nghttp2_submit_settings(cl->s, NGHTTP2_FLAG_NONE, iv, 1), 0);
  assert_int_equal(nghttp2_session_set_local_window_size(
                       cl->s, NGHTTP2_FLAG_NONE, 0, 64 << 20),
                   0);
  client_flush(cl);
}

static int port;

static tclient_t *client_new(const char *raw) {
  tclient_t *cl = calloc(1, sizeof(*cl));
  struct sockaddr_in addr;
  size_t i;

  assert_non_null(cl);
  cl->raw = raw;
  uv_tcp_init(&loop, &cl->tcp);
  cl->tcp.data = cl;
  cl->creq.data = cl;
  uv_ip4_addr("127.0.0.1", port, &addr);
  assert_int_equal(uv_tcp_connect(&cl->creq, &cl->tcp,
                                  (const struct sockaddr *)&addr, on_connect),
                   0);
  for (i = 0; i < 8; i++)
    if (clients[i] == NULL) {
      clients[i] = cl;
      return cl;
    }
  fail_msg("too many clients");
  return NULL;
}

static int run_until(int (*pred)(void *), void *arg, double secs) {
  uint64_t end = uv_hrtime() + (uint64_t)(secs * 1e9);
  size_t i;

  for (;;) {
    for (i = 0; i < 8; i++)
      if (clients[i] != NULL) client_flush(clients[i]);
    if (pred(arg)) return 1;
    if (uv_hrtime() > end) return 0;
    uv_run(&loop, UV_RUN_ONCE);
  }
}

static int handle_closed(void *arg) {
  return ((tclient_t *)arg)->handle_closed;
}

static void client_free(tclient_t *cl) {
  int i;

  client_close(cl);
  assert_true(run_until(handle_closed, cl, 5));
  for (i = 0; i < 8; i++)
    if (clients[i] == cl) clients[i] = NULL;
  for (i = 0; i < cl->n_calls; i++) {
    free(cl->calls[i]->body);
    free(cl->calls[i]->resp);
    free(cl->calls[i]);
  }
  if (cl->s != NULL) nghttp2_session_del(cl->s);
  free(cl);
}

static ssize_t c_read(nghttp2_session *s, int32_t id, uint8_t *buf,
                      size_t length, uint32_t *flags, nghttp2_data_source *src,
                      void *user) {
  tcall_t *t = src->ptr;
  size_t n = t->body_len - t->body_off;

  (void)s;
  (void)id;
  (void)user;
  if (n > length) n = length;
  memcpy(buf, t->body + t->body_off, n);
  t->body_off += n;
  if (t->body_off == t->body_len) {
    if (t->body_eof) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
    } else if (n == 0) {
      t->deferred = 1;
      return NGHTTP2_ERR_DEFERRED;
    }
  }
  return (ssize_t)n;
}

/* Appends raw bytes to the request body (eof: the client half-closes). */
static void call_append(tcall_t *t, const void *p, size_t n, int eof) {
  grow(&t->body, &t->body_cap, t->body_len + n);
  if (n > 0) memcpy(t->body + t->body_len, p, n);
  t->body_len += n;
  t->body_eof = eof;
  if (t->deferred && t->id > 0) {
    t->deferred = 0;
    assert_int_equal(nghttp2_session_resume_data(t->cl->s, t->id), 0);
  }
}

/* Appends one framed message (flag 0). */
static void call_msg(tcall_t *t, const void *p, size_t n, int eof) {
  uint8_t pre[5] = {0, (uint8_t)(n >> 24), (uint8_t)(n >> 16),
                    (uint8_t)(n >> 8), (uint8_t)n};
  call_append(t, pre, 5, 0);
  call_append(t, p, n, eof);
}

static int connected(void *arg) {
  return ((tclient_t *)arg)->s != NULL || ((tclient_t *)arg)->eof;
}

/* Starts a call; `hdrs` is NULL or name, value, ..., NULL replacing the
 * defaults of the same name. body_mode 0: no DATA at all (END_STREAM on
 * HEADERS); 1: a body provider. */
static tcall_t *call_start(tclient_t *cl, const char *path,
                           const char *const *hdrs, int body_mode) {
  tcall_t *t = calloc(1, sizeof(*t));
  nghttp2_nv nv[12];
  const char *names[12], *values[12];
  size_t n = 0, i;
  nghttp2_data_provider prd;

  assert_non_null(t);
  assert_true(run_until(connected, cl, 5));
  assert_non_null(cl->s);
  t->cl = cl;
  t->grpc_status = -1;
  names[n] = ":method", values[n++] = "POST";
  names[n] = ":scheme", values[n++] = "http";
  names[n] = ":authority", values[n++] = "localhost";
  names[n] = ":path", values[n++] = path;
  names[n] = "content-type", values[n++] = "application/grpc";
  names[n] = "te", values[n++] = "trailers";
  for (; hdrs != NULL && hdrs[0] != NULL; hdrs += 2) {
    for (i = 0; i < n; i++)
      if (strcmp(names[i], hdrs[0]) == 0) break;
    names[i] = hdrs[0];
    values[i] = hdrs[1];
    if (i == n) n++;
  }
  for (i = 0; i < n; i++) {
    nv[i].name = (uint8_t *)names[i];
    nv[i].value = (uint8_t *)values[i];
    nv[i].namelen = strlen(names[i]);
    nv[i].valuelen = strlen(values[i]);
    nv[i].flags = NGHTTP2_NV_FLAG_NONE;
  }
  prd.source.ptr = t;
  prd.read_callback = c_read;
  t->id =
      nghttp2_submit_request(cl->s, NULL, nv, n, body_mode ? &prd : NULL, t);
  assert_true(t->id > 0);
  assert_true(cl->n_calls < MAX_CALLS);
  cl->calls[cl->n_calls++] = t;
  return t;
}

static int call_closed(void *arg) {
  return ((tcall_t *)arg)->closed;
}

static void wait_closed(tcall_t *t, double secs) {
  assert_true(run_until(call_closed, t, secs));
}

/* The i-th message of the response (framed); returns 0 when absent. */
static int resp_msg(const tcall_t *t, int i, const uint8_t **p, size_t *n) {
  size_t off = 0;

  for (;;) {
    size_t len;
    if (t->resp_len - off < 5) return 0;
    assert_int_equal(t->resp[off], 0);
    len = ((size_t)t->resp[off + 1] << 24) | ((size_t)t->resp[off + 2] << 16) |
          ((size_t)t->resp[off + 3] << 8) | t->resp[off + 4];
    if (t->resp_len - off - 5 < len) return 0;
    if (i-- == 0) {
      *p = t->resp + off + 5;
      *n = len;
      return 1;
    }
    off += 5 + len;
  }
}

static int resp_count(const tcall_t *t) {
  const uint8_t *p;
  size_t n;
  int i = 0;

  while (resp_msg(t, i, &p, &n)) i++;
  return i;
}

static void fill(uint8_t *p, size_t n, unsigned seed) {
  size_t i;
  for (i = 0; i < n; i++) p[i] = (uint8_t)(i * 31 + seed + (i >> 13));
}

/* ---- fixture ------------------------------------------------------------- */

static ifd_grpc_t *srv;
static int srv_done;
static uv_timer_t guard;

static void on_guard(uv_timer_t *t) {
  (void)t;
}

static void on_stopped(void *arg) {
  *(int *)arg = 1;
}

static int setup(void **state) {
  ifd_grpc_opts_t o;
  ifd_errmsg_t err;

  (void)state;
  assert_int_equal(uv_loop_init(&loop), 0);
  memset(&o, 0, sizeof(o));
  o.host = "127.0.0.1";
  o.max_message_size = 100 << 20;
  assert_int_equal(serve(&o, &srv, &err), 0);
  port = ifd_grpc_port(srv);
  assert_true(port > 0);
  srv_done = 0;
  n_never_msgs = n_never_cancels = n_delayed_started = n_echo_cancels = 0;
  n_bidi_msgs = 0;
  /* Keeps UV_RUN_ONCE from blocking long in run_until. */
  uv_timer_init(&loop, &guard);
  uv_timer_start(&guard, on_guard, 5, 5);
  return 0;
}

static int is_set(void *arg) {
  return *(int *)arg;
}

static int teardown(void **state) {
  size_t i;

  (void)state;
  for (i = 0; i < 8; i++)
    if (clients[i] != NULL) client_free(clients[i]);
  if (srv != NULL) {
    ifd_grpc_stop(srv, 0, on_stopped, &srv_done);
    srv = NULL;
  }
  assert_true(run_until(is_set, &srv_done, 10));
  uv_close((uv_handle_t *)&guard, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
  return 0;
}

/* ---- tests ------------------------------------------------------------------
 */

static void check_echo(tcall_t *t, const uint8_t *want, size_t n) {
  const uint8_t *p;
  size_t len;

  assert_int_equal(t->http_status, 200);
  assert_int_equal(t->grpc_status, 0);
  assert_int_equal(resp_count(t), 1);
  assert_true(resp_msg(t, 0, &p, &len));
  assert_int_equal(len, n);
  if (n > 0) assert_memory_equal(p, want, n);
}

static void test_unary_small(void **state) {
  tclient_t *cl = client_new(NULL);
  tcall_t *t;
  uint8_t data[100];

  (void)state;
  fill(data, sizeof(data), 1);
  t = call_start(cl, "/test.Echo/Unary", NULL, 1);
  call_msg(t, data, sizeof(data), 1);
  wait_closed(t, 5);
  check_echo(t, data, sizeof(data));
  assert_int_equal(t->close_code, 0);
  /* An empty message echoes as an empty message. */
  t = call_start(cl, "/test.Echo/Unary", NULL, 1);
  call_msg(t, "", 0, 1);
  wait_closed(t, 5);
  check_echo(t, NULL, 0);
  assert_int_equal(n_echo_cancels, 0);
}

static void test_unary_64mib(void **state) {
  tclient_t *cl = client_new(NULL);
  size_t n = (size_t)64 << 20;
  uint8_t *data = malloc(n);
  tcall_t *t;

  (void)state;
  assert_non_null(data);
  fill(data, n, 7);
  t = call_start(cl, "/test.Echo/Unary", NULL, 1);
  call_msg(t, data, n, 1);
  wait_closed(t, 120);
  check_echo(t, data, n);
  free(data);
}

static int all_closed(void *arg) {
  tclient_t *cl = arg;
  int i;
  for (i = 0; i < cl->n_calls; i++)
    if (!cl->calls[i]->closed) return 0;
  return 1;
}

static void test_concurrent(void **state) {
  tclient_t *cl = client_new(NULL);
  uint8_t data[32][3000];
  int i;

  (void)state;
  for (i = 0; i < 32; i++) {
    tcall_t *t = call_start(
        cl, i % 8 == 7 ? "/test.Echo/Delayed" : "/test.Echo/Unary", NULL, 1);
    fill(data[i], sizeof(data[i]), (unsigned)i);
    call_msg(t, data[i], (size_t)(i * 90 + 1), 1);
  }
  assert_true(run_until(all_closed, cl, 10));
  for (i = 0; i < 32; i++)
    check_echo(cl->calls[i], data[i], (size_t)(i * 90 + 1));
  assert_int_equal(n_delayed_started, 4);
}

typedef struct want_msgs {
  tcall_t *t;
  int n;
} want_msgs_t;

static int has_msgs(void *arg) {
  want_msgs_t *w = arg;
  return resp_count(w->t) >= w->n || w->t->closed;
}

static void test_bidi(void **state) {
  tclient_t *cl = client_new(NULL);
  tcall_t *t;
  uint8_t buf[4000];
  int i;

  (void)state;
  t = call_start(cl, "/test.Echo/Bidi", NULL, 1);
  for (i = 0; i < 100; i++) {
    want_msgs_t w = {t, i + 1};
    fill(buf, sizeof(buf), (unsigned)i);
    call_msg(t, buf, (size_t)(i * 37 + 1), 0);
    assert_true(run_until(has_msgs, &w, 5));
    assert_int_equal(resp_count(t), i + 1);
    assert_false(t->closed);
  }
  call_append(t, NULL, 0, 1);
  wait_closed(t, 5);
  assert_int_equal(t->grpc_status, 0);
  assert_int_equal(resp_count(t), 100);
  for (i = 0; i < 100; i++) {
    const uint8_t *p;
    size_t n;
    fill(buf, sizeof(buf), (unsigned)i);
    assert_true(resp_msg(t, i, &p, &n));
    assert_int_equal(n, (size_t)(i * 37 + 1));
    assert_memory_equal(p, buf, n);
  }
  assert_int_equal(n_bidi_msgs, 100);
  /* All at once, with END_STREAM right after. */
  t = call_start(cl, "/test.Echo/Bidi", NULL, 1);
  for (i = 0; i < 10; i++) call_msg(t, buf, 10, i == 9);
  wait_closed(t, 5);
  assert_int_equal(t->grpc_status, 0);
  assert_int_equal(resp_count(t), 10);
}

static void expect_status(tcall_t *t, int status, const char *msg) {
  wait_closed(t, 5);
  assert_int_equal(t->http_status, 200);
  assert_int_equal(t->grpc_status, status);
  if (msg != NULL) assert_string_equal(t->grpc_message, msg);
}

static void test_errors(void **state) {
  tclient_t *cl = client_new(NULL);
  static const char *const gzip[] = {"grpc-encoding", "gzip", NULL};
  static const char *const snappy[] = {"grpc-encoding", "snappy", NULL};
  static const char *const bad_ct[] = {"content-type", "text/plain", NULL};
  static const char *const bad_method[] = {":method", "GET", NULL};
  uint8_t pre[5] = {1, 0, 0, 0, 3};
  tcall_t *t;

  (void)state;
  t = call_start(cl, "/test.Echo/Nope", NULL, 1);
  call_msg(t, "x", 1, 1);
  expect_status(t, IFD_GRPC_UNIMPLEMENTED, "unknown method /test.Echo/Nope");
  assert_int_equal(resp_count(t), 0);

  t = call_start(cl, "/test.Echo/Unary", NULL, 1);
  call_append(t, pre, 5, 0);
  call_append(t, "abc", 3, 1);
  expect_status(t, IFD_GRPC_INTERNAL,
                "compressed message without grpc-encoding");

  /* gzip is read: "abc" is not a gzip stream. */
  t = call_start(cl, "/test.Echo/Unary", gzip, 1);
  call_append(t, pre, 5, 0);
  call_append(t, "abc", 3, 1);
  expect_status(t, IFD_GRPC_INTERNAL, "message is not valid gzip data");

  t = call_start(cl, "/test.Echo/Unary", snappy, 1);
  call_append(t, pre, 5, 0);
  call_append(t, "abc", 3, 1);
  expect_status(t, IFD_GRPC_UNIMPLEMENTED,
                "grpc-encoding snappy is not supported (gzip and deflate are)");

  /* A prefix announcing 10 bytes, 3 sent, then END_STREAM. */
  t = call_start(cl, "/test.Echo/Unary", NULL, 1);
  pre[0] = 0;
  pre[4] = 10;
  call_append(t, pre, 5, 0);
  call_append(t, "abc", 3, 1);
  expect_status(t, IFD_GRPC_INTERNAL, NULL);
  assert_non_null(strstr(t->grpc_message, "incomplete"));

  t = call_start(cl, "/test.Echo/Unary", NULL, 1);
  call_append(t, pre, 3, 1);
  expect_status(t, IFD_GRPC_INTERNAL, NULL);

  t = call_start(cl, "/test.Echo/Unary", NULL, 0);
  expect_status(t, IFD_GRPC_INTERNAL, "unary call without a request message");

  t = call_start(cl, "/test.Echo/Unary", NULL, 1);
  call_msg(t, "a", 1, 0);
  call_msg(t, "b", 1, 1);
  expect_status(t, IFD_GRPC_INTERNAL, NULL);

  t = call_start(cl, "/test.Echo/Fail", NULL, 1);
  call_msg(t, "a", 1, 1);
  expect_status(t, IFD_GRPC_INVALID_ARGUMENT, "bad %C3%BC 100%25%0A");

  t = call_start(cl, "/test.Echo/Unary", bad_ct, 1);
  call_msg(t, "a", 1, 1);
  wait_closed(t, 5);
  assert_int_equal(t->http_status, 415);

  t = call_start(cl, "/test.Echo/Unary", bad_method, 0);
  wait_closed(t, 5);
  assert_int_equal(t->http_status, 405);

  /* The connection still serves calls. */
  t = call_start(cl, "/test.Echo/Unary", NULL, 1);
  call_msg(t, "ok", 2, 1);
  wait_closed(t, 5);
  check_echo(t, (const uint8_t *)"ok", 2);
  assert_false(cl->eof);
}

static void test_oversized(void **state) {
  tclient_t *cl = client_new(NULL);
  uint8_t pre[5] = {0, 0x0c, 0x80, 0, 0}; /* 200 MiB > 100 MiB */
  tcall_t *t;

  (void)state;
  t = call_start(cl, "/test.Echo/Unary", NULL, 1);
  call_append(t, pre, 5, 0);
  call_append(t, "0123456789", 10, 0);
  expect_status(t, IFD_GRPC_RESOURCE_EXHAUSTED,
                "message of 209715200 bytes exceeds the maximum of 104857600");
  /* Not half-closed: the server reset the stream after its trailers. */
  assert_int_equal(t->close_code, NGHTTP2_NO_ERROR);
  assert_int_equal(n_echo_cancels, 1);
  t = call_start(cl, "/test.Echo/Unary", NULL, 1);
  call_msg(t, "next", 4, 1);
  wait_closed(t, 5);
  check_echo(t, (const uint8_t *)"next", 4);
  assert_false(cl->eof);
}

static void test_response_too_big(void **state) {
  tclient_t *cl = client_new(NULL);
  tcall_t *t;

  (void)state;
  n_huge_freed = 0;
  t = call_start(cl, "/test.Echo/Huge", NULL, 1);
  call_msg(t, "z", 1, 1);
  expect_status(t, IFD_GRPC_RESOURCE_EXHAUSTED,
                "response message of 104857601 bytes exceeds the maximum of "
                "104857600");
  assert_int_equal(huge_rc, IFD_ETOOBIG);
  assert_int_equal(n_huge_freed, 2);
  assert_int_equal(resp_count(t), 0);
  /* The transport ended the call, so the method hears of it. */
  assert_int_equal(n_echo_cancels, 1);
}

static void test_deadline(void **state) {
  static const char *const tmo[] = {"grpc-timeout", "50m", NULL};
  static const char *const tmo2[] = {"grpc-timeout", "5S", NULL};
  tclient_t *cl = client_new(NULL);
  uint64_t t0;
  uint64_t ns;
  const uint8_t *p;
  size_t n;
  tcall_t *t;

  (void)state;
  t = call_start(cl, "/test.Echo/Never", tmo, 1);
  call_msg(t, "z", 1, 1);
  t0 = uv_hrtime();
  expect_status(t, IFD_GRPC_DEADLINE_EXCEEDED, "deadline exceeded");
  assert_true(uv_hrtime() - t0 >= 40000000u);
  assert_int_equal(n_never_msgs, 1);
  assert_int_equal(n_never_cancels, 1);

  t = call_start(cl, "/test.Echo/Timeout", tmo2, 1);
  call_msg(t, "z", 1, 1);
  wait_closed(t, 5);
  assert_int_equal(t->grpc_status, 0);
  assert_true(resp_msg(t, 0, &p, &n));
  assert_int_equal(n, 8);
  memcpy(&ns, p, 8);
  assert_true(ns > 4000000000u && ns <= 5000000000u);
}

static int never_started(void *arg) {
  return n_never_msgs == *(int *)arg;
}
static int never_cancelled(void *arg) {
  return n_never_cancels == *(int *)arg;
}

static void test_client_rst(void **state) {
  tclient_t *cl = client_new(NULL);
  tcall_t *t;
  int one = 1, two = 2;

  (void)state;
  t = call_start(cl, "/test.Echo/Never", NULL, 1);
  call_msg(t, "z", 1, 1);
  assert_true(run_until(never_started, &one, 5));
  assert_int_equal(n_never_cancels, 0);
  assert_int_equal(nghttp2_submit_rst_stream(cl->s, NGHTTP2_FLAG_NONE, t->id,
                                             NGHTTP2_CANCEL),
                   0);
  assert_true(run_until(never_cancelled, &one, 5));

  /* A client vanishing mid-call cancels it too. */
  t = call_start(cl, "/test.Echo/Never", NULL, 1);
  call_msg(t, "z", 1, 1);
  assert_true(run_until(never_started, &two, 5));
  client_free(cl);
  assert_true(run_until(never_cancelled, &two, 5));
}

static int got_eof(void *arg) {
  return ((tclient_t *)arg)->eof;
}

static void test_garbage(void **state) {
  tclient_t *raw = client_new("GET / HTTP/1.1\r\nHost: x\r\n\r\nmore garbage");
  tclient_t *cl;
  tcall_t *t;

  (void)state;
  assert_true(run_until(got_eof, raw, 5));
  client_free(raw);
  cl = client_new(NULL);
  t = call_start(cl, "/test.Echo/Unary", NULL, 1);
  call_msg(t, "hi", 2, 1);
  wait_closed(t, 5);
  check_echo(t, (const uint8_t *)"hi", 2);
}

static int delayed_started(void *arg) {
  return n_delayed_started == *(int *)arg;
}

static int stop_finished(void *arg) {
  tcall_t *t = arg;
  return t->closed && srv_done && t->cl->eof;
}

static void test_stop_in_flight(void **state) {
  tclient_t *cl = client_new(NULL);
  tclient_t *idle = client_new(NULL);
  tcall_t *t;
  int one = 1;

  (void)state;
  t = call_start(cl, "/test.Echo/Delayed", NULL, 1);
  call_msg(t, "late", 4, 1);
  assert_true(run_until(connected, idle, 5));
  assert_true(run_until(delayed_started, &one, 5));
  ifd_grpc_stop(srv, 0, on_stopped, &srv_done);
  srv = NULL;
  assert_true(run_until(stop_finished, t, 5));
  check_echo(t, (const uint8_t *)"late", 4);
  assert_true(idle->eof);
}

/* Shutdown with an idle bidi stream: draining keeps it; once the core is
 * drained it is answered UNAVAILABLE and the connection closes. */
static void test_stop_idle_stream(void **state) {
  tclient_t *cl = client_new(NULL);
  ifd_grpc_t *g = srv;
  tcall_t *t;
  want_msgs_t w;
  int i;

  (void)state;
  t = call_start(cl, "/test.Echo/Bidi", NULL, 1);
  call_msg(t, "x", 1, 0);
  w.t = t;
  w.n = 1;
  assert_true(run_until(has_msgs, &w, 5));
  ifd_grpc_stop(g, uv_now(&loop) + 3600 * 1000, on_stopped, &srv_done);
  srv = NULL;
  for (i = 0; i < 10; i++) uv_run(&loop, UV_RUN_ONCE);
  assert_false(t->closed);
  assert_false(srv_done);
  ifd_grpc_drained(g);
  wait_closed(t, 5);
  assert_int_equal(t->grpc_status, IFD_GRPC_UNAVAILABLE);
  assert_true(run_until(is_set, &srv_done, 5));
  assert_true(run_until(got_eof, cl, 5));
  assert_int_equal(n_echo_cancels, 1);
}

/* A call that never ends keeps its connection until the deadline. */
static void test_stop_deadline(void **state) {
  tclient_t *cl = client_new(NULL);
  tcall_t *t;
  int one = 1;

  (void)state;
  t = call_start(cl, "/test.Echo/Never", NULL, 1);
  call_msg(t, "x", 1, 1);
  assert_true(run_until(never_started, &one, 5));
  ifd_grpc_stop(srv, uv_now(&loop) + 100, on_stopped, &srv_done);
  srv = NULL;
  assert_true(run_until(is_set, &srv_done, 5));
  assert_true(run_until(got_eof, cl, 5));
  assert_int_equal(n_never_cancels, 1);
}

static void test_max_connections(void **state) {
  ifd_grpc_opts_t o;
  ifd_errmsg_t err;
  ifd_grpc_t *g2;
  int saved = port, done2 = 0;
  tclient_t *a, *b;
  tcall_t *t;

  (void)state;
  memset(&o, 0, sizeof(o));
  o.host = "127.0.0.1";
  o.max_connections = 1;
  assert_int_equal(serve(&o, &g2, &err), 0);
  port = ifd_grpc_port(g2);
  a = client_new(NULL);
  t = call_start(a, "/test.Echo/Unary", NULL, 1);
  call_msg(t, "a", 1, 1);
  wait_closed(t, 5);
  b = client_new(NULL);
  assert_true(run_until(got_eof, b, 5));
  client_free(b);
  client_free(a);
  port = saved;
  ifd_grpc_stop(g2, 0, on_stopped, &done2);
  assert_true(run_until(is_set, &done2, 5));
}

/* --grpc-restricted-protocol: the test methods are all of group 0
 * (health); restricting it asks every call for the metadata. */
static void test_restricted(void **state) {
  static const char *const wrong[] = {"triton-grpc-protocol-k", "w", NULL};
  static const char *const bare[] = {"k", "v", NULL};
  static const char *const right[] = {"triton-grpc-protocol-k", "v", NULL};
  ifd_restrict_t r;
  ifd_grpc_opts_t o;
  ifd_errmsg_t err;
  ifd_grpc_t *g2;
  int saved = port, done2 = 0;
  tclient_t *cl;
  tcall_t *t;

  (void)state;
  memset(&r, 0, sizeof(r));
  assert_int_equal(ifd_restrict_add(&r, "health,inference:k=v",
                                    "triton-grpc-protocol-", "protocol", &err),
                   0);
  memset(&o, 0, sizeof(o));
  o.host = "127.0.0.1";
  o.restrict_api = &r;
  assert_int_equal(serve(&o, &g2, &err), 0);
  port = ifd_grpc_port(g2);
  cl = client_new(NULL);
  t = call_start(cl, "/test.Echo/Unary", NULL, 1);
  call_msg(t, "a", 1, 1);
  expect_status(t, IFD_GRPC_UNAVAILABLE,
                "This protocol is restricted, expecting header "
                "'triton-grpc-protocol-k'");
  t = call_start(cl, "/test.Echo/Unary", wrong, 1);
  call_msg(t, "a", 1, 1);
  expect_status(t, IFD_GRPC_UNAVAILABLE, NULL);
  t = call_start(cl, "/test.Echo/Unary", bare, 1);
  call_msg(t, "a", 1, 1);
  expect_status(t, IFD_GRPC_UNAVAILABLE, NULL);
  assert_int_equal(n_echo_cancels, 0); /* the method never saw them */
  t = call_start(cl, "/test.Echo/Unary", right, 1);
  call_msg(t, "ok", 2, 1);
  wait_closed(t, 5);
  check_echo(t, (const uint8_t *)"ok", 2);
  client_free(cl);
  port = saved;
  ifd_grpc_stop(g2, 0, on_stopped, &done2);
  assert_true(run_until(is_set, &done2, 5));
  ifd_restrict_free(&r);
}

/* --grpc-max-header-list-size: a call past it is refused, the connection
 * serves the next one. */
static void test_header_list_limit(void **state) {
  static char big[3000];
  static const char *hdrs[] = {"x-big", big, NULL};
  ifd_grpc_opts_t o;
  ifd_errmsg_t err;
  ifd_grpc_t *g2;
  int saved = port, done2 = 0;
  tclient_t *cl;
  tcall_t *t;

  (void)state;
  memset(big, 'v', sizeof(big) - 1);
  ifd_grpc_opts_defaults(&o);
  o.host = "127.0.0.1";
  o.max_header_list_size = 2048;
  assert_int_equal(serve(&o, &g2, &err), 0);
  port = ifd_grpc_port(g2);
  cl = client_new(NULL);
  t = call_start(cl, "/test.Echo/Unary", NULL, 1);
  call_msg(t, "a", 1, 1);
  wait_closed(t, 5);
  check_echo(t, (const uint8_t *)"a", 1);
  t = call_start(cl, "/test.Echo/Unary", hdrs, 1);
  call_msg(t, "a", 1, 1);
  expect_status(t, IFD_GRPC_RESOURCE_EXHAUSTED,
                "header list of more than 2048 bytes (the server's "
                "SETTINGS_MAX_HEADER_LIST_SIZE)");
  t = call_start(cl, "/test.Echo/Unary", NULL, 1);
  call_msg(t, "ok", 2, 1);
  wait_closed(t, 5);
  check_echo(t, (const uint8_t *)"ok", 2);
  assert_false(cl->eof);
  client_free(cl);
  port = saved;
  ifd_grpc_stop(g2, 0, on_stopped, &done2);
  assert_true(run_until(is_set, &done2, 5));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_unary_small, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unary_64mib, setup, teardown),
      cmocka_unit_test_setup_teardown(test_concurrent, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bidi, setup, teardown),
      cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_oversized, setup, teardown),
      cmocka_unit_test_setup_teardown(test_response_too_big, setup, teardown),
      cmocka_unit_test_setup_teardown(test_deadline, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_rst, setup, teardown),
      cmocka_unit_test_setup_teardown(test_garbage, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stop_in_flight, setup, teardown),
      cmocka_unit_test_setup_teardown(test_max_connections, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stop_idle_stream, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stop_deadline, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restricted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_header_list_limit, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
