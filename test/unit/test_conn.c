/*
 * test/unit/test_conn.c - the connection layer (net/conn.c) over real
 * sockets on a private loop, with allocation failures injected.
 *
 * This test is linked with -Wl,--wrap for malloc, calloc and realloc (see
 * the Makefile): the wrappers can fail every calloc of one size (a
 * connection object) and record the largest single allocation. Cases:
 *  - accept survives running out of memory: the spare connection serves one
 *    client, the next ones are accepted and closed, and once memory is back
 *    the listener still accepts (libuv stops watching a listener whose
 *    accepted socket is never taken);
 *  - the shutdown phases reach every connection, and at the deadline a
 *    connection that does not close by itself is closed;
 *  - a graceful close lingers until the client's FIN (what the client still
 *    sends is dropped), ended by the deadline or the linger timer;
 *  - an HTTP request's declared Content-Length allocates nothing by itself:
 *    the body buffer grows with the bytes that arrive;
 *  - timeout queues expire connections in deadline order (a touch moves one
 *    to the back, a cleared or closed one never expires), both when swept
 *    with a given time and from the set's sweep timer;
 *  - --max-connections: the connection past the limit is closed at once and
 *    counted, and the listener goes on accepting;
 *  - deferred work runs once per connection however often asked, in a later
 *    iteration, and never for a connection closed meanwhile.
 * Every case ends with uv_loop_close() == 0.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/util.h"
#include "net/conn.h"
#include "frontend/frontend.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);

static size_t fail_calloc_size; /* calloc(1, this) fails; 0: none */
static size_t max_alloc;        /* largest single allocation seen */

static void note(size_t n) {
  if (n > max_alloc) max_alloc = n;
}
void *__wrap_malloc(size_t n) {
  note(n);
  return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t m) {
  if (fail_calloc_size != 0 && n * m == fail_calloc_size) return NULL;
  note(n * m);
  return __real_calloc(n, m);
}
void *__wrap_realloc(void *p, size_t n) {
  note(n);
  return __real_realloc(p, n);
}

static uv_loop_t loop;
static uv_timer_t guard;

static void on_guard(uv_timer_t *t) {
  (void)t;
}

/* Runs the loop until cond(arg) or `seconds` pass. */
static int run_until(int (*cond)(void *), void *arg, double seconds) {
  uint64_t end = uv_hrtime() + (uint64_t)(seconds * 1e9);
  while (!cond(arg)) {
    if (uv_hrtime() > end) return 0;
    uv_run(&loop, UV_RUN_ONCE);
  }
  return 1;
}

static int never(void *arg) {
  (void)arg;
  return 0;
}

static void setup_loop(void) {
  assert_int_equal(uv_loop_init(&loop), 0);
  uv_timer_init(&loop, &guard);
  uv_timer_start(&guard, on_guard, 5, 5);
  fail_calloc_size = 0;
  max_alloc = 0;
}

static void teardown_loop(void) {
  uv_close((uv_handle_t *)&guard, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- a test protocol: greets, then waits for the client to close ------- */

typedef struct tconn {
  ifd_conn_t base;
  int phases; /* bit per ifd_conn_phase_t seen */
} tconn_t;

static int n_open, n_closing, n_free, close_on_stop;
static ifd_conn_t *expired[8]; /* on_expire order */
static unsigned expired_q[8];
static int n_expired;
static ifd_conn_t *deferred_ran[8];
static int n_deferred_ran;

static void t_alloc(uv_handle_t *h, size_t n, uv_buf_t *buf) {
  static char b[256];
  (void)h;
  (void)n;
  *buf = uv_buf_init(b, sizeof(b));
}

static void t_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  (void)buf;
  if (n < 0) ifd__conn_close(s->data, 0);
}

static int t_open(ifd_conn_t *c) {
  uv_buf_t b = uv_buf_init("hi", 2);
  n_open++;
  assert_int_equal(uv_try_write((uv_stream_t *)&c->tcp, &b, 1), 2);
  return ifd__conn_read_start(c, t_alloc, t_read);
}

static void t_flush(ifd_conn_t *c) {
  (void)c;
}

static void t_stop(ifd_conn_t *c, ifd_conn_phase_t phase) {
  ((tconn_t *)c)->phases |= 1 << phase;
  if (close_on_stop) ifd__conn_close(c, 1);
}

static void t_closing(ifd_conn_t *c) {
  (void)c;
  n_closing++;
}

static void t_free(ifd_conn_t *c) {
  (void)c;
  n_free++;
}

static void t_expire(ifd_conn_t *c, unsigned q) {
  assert_int_equal(c->tq, 0); /* off its queue already */
  assert_true(n_expired < 8);
  expired_q[n_expired] = q;
  expired[n_expired++] = c;
}

static void t_deferred(ifd_conn_t *c) {
  assert_true(n_deferred_ran < 8);
  deferred_ran[n_deferred_ran++] = c;
}

static const ifd_conn_proto_t tproto = {
    .name = "test",
    .size = sizeof(tconn_t),
    .on_open = t_open,
    .on_flush = t_flush,
    .on_timer = NULL,
    .on_stop = t_stop,
    .on_closing = t_closing,
    .on_free = t_free,
    .on_expire = t_expire,
    .on_deferred = t_deferred,
};

static ifd_conn_set_t set;
static int set_closed;

static void on_set_closed(ifd_conn_set_t *s) {
  assert_ptr_equal(s, &set);
  set_closed = 1;
}

static int is_set(void *arg) {
  return *(int *)arg;
}

/* ---- a test client --------------------------------------------------- */

typedef struct client {
  uv_tcp_t tcp;
  uv_connect_t creq;
  char got[8];
  size_t n;
  int connected, eof, closed;
} client_t;

static void c_alloc(uv_handle_t *h, size_t n, uv_buf_t *buf) {
  client_t *c = h->data;
  (void)n;
  *buf = uv_buf_init(c->got + c->n, (unsigned)(sizeof(c->got) - c->n));
}

static void c_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  client_t *c = s->data;
  (void)buf;
  if (n > 0) c->n += (size_t)n;
  if (n < 0) {
    c->eof = 1;
    uv_read_stop(s);
  }
}

static void c_connected(uv_connect_t *r, int status) {
  client_t *c = r->data;
  if (status != 0) {
    c->eof = 1;
    return;
  }
  c->connected = 1;
  uv_read_start((uv_stream_t *)&c->tcp, c_alloc, c_read);
}

static client_t *client_new(int port) {
  client_t *c = malloc(sizeof(*c));
  struct sockaddr_in a;

  assert_non_null(c);
  memset(c, 0, sizeof(*c));
  uv_tcp_init(&loop, &c->tcp);
  c->tcp.data = c;
  c->creq.data = c;
  uv_ip4_addr("127.0.0.1", port, &a);
  assert_int_equal(
      uv_tcp_connect(&c->creq, &c->tcp, (struct sockaddr *)&a, c_connected), 0);
  return c;
}

static void c_closed(uv_handle_t *h) {
  free(h->data);
}

static void client_free(client_t *c) {
  uv_close((uv_handle_t *)&c->tcp, c_closed);
}

static int greeted(void *arg) {
  client_t *c = arg;
  return c->n == 2;
}

static int got_eof(void *arg) {
  return ((client_t *)arg)->eof;
}

static void start_set(void) {
  ifd_errmsg_t err;

  memset(&set, 0, sizeof(set));
  set_closed = 0;
  n_open = n_closing = n_free = close_on_stop = n_expired = 0;
  n_deferred_ran = 0;
  assert_int_equal(
      ifd__conn_set_start(&set, &loop, &tproto, "127.0.0.1", 0, 0, 0, &err), 0);
}

/* ---- tests ----------------------------------------------------------------
 */

static void test_accept_out_of_memory(void **state) {
  client_t *a, *b, *c, *d, *e, *f;

  (void)state;
  setup_loop();
  start_set();

  a = client_new(set.port);
  assert_true(run_until(greeted, a, 5));
  assert_string_equal(a->got, "hi");

  /* No connection object can be allocated from here on. */
  fail_calloc_size = sizeof(tconn_t);
  b = client_new(set.port); /* served by the spare allocated ahead */
  assert_true(run_until(greeted, b, 5));
  c = client_new(set.port); /* no spare left: accepted and closed */
  assert_true(run_until(got_eof, c, 5));
  assert_int_equal(c->n, 0);
  d = client_new(set.port); /* two at once: one may wait for `reject` */
  e = client_new(set.port);
  assert_true(run_until(got_eof, d, 5));
  assert_true(run_until(got_eof, e, 5));
  assert_int_equal(d->n + e->n, 0);

  /* Memory is back: the listener still accepts. */
  fail_calloc_size = 0;
  f = client_new(set.port);
  assert_true(run_until(greeted, f, 5));
  assert_int_equal(n_open, 3);

  client_free(a);
  client_free(b);
  client_free(c);
  client_free(d);
  client_free(e);
  client_free(f);
  assert_true(run_until(is_set, &n_free, 5));
  ifd__conn_set_stop(&set, 0, on_set_closed);
  assert_true(run_until(is_set, &set_closed, 5));
  assert_int_equal(n_free, 3);
  assert_int_equal(n_closing, 3);
  teardown_loop();
}

static int all_freed(void *arg) {
  return n_free == *(int *)arg;
}

static void test_stop_phases_and_deadline(void **state) {
  client_t *a, *b;
  tconn_t *ta, *tb;
  int two = 2;

  (void)state;
  setup_loop();
  start_set();
  a = client_new(set.port);
  b = client_new(set.port);
  assert_true(run_until(greeted, a, 5));
  assert_true(run_until(greeted, b, 5));
  ta = (tconn_t *)ifd_container_of(set.conns.next, ifd_conn_t, link);
  tb = (tconn_t *)ifd_container_of(set.conns.next->next, ifd_conn_t, link);

  /* Neither connection closes by itself: the deadline closes both. */
  ifd__conn_set_stop(&set, uv_now(&loop) + 50, on_set_closed);
  assert_int_equal(ta->phases, 1 << IFD_CONN_DRAIN);
  ifd__conn_set_close(&set);
  assert_int_equal(tb->phases, (1 << IFD_CONN_DRAIN) | (1 << IFD_CONN_CLOSE));
  assert_true(run_until(is_set, &set_closed, 5));
  assert_true(run_until(all_freed, &two, 1));
  assert_true(run_until(got_eof, a, 5));
  assert_true(run_until(got_eof, b, 5));
  client_free(a);
  client_free(b);
  teardown_loop();
}

static void test_stop_closes_at_once(void **state) {
  client_t *a;

  (void)state;
  setup_loop();
  start_set();
  close_on_stop = 1;
  a = client_new(set.port);
  assert_true(run_until(greeted, a, 5));
  /* A deadline far away: the set closes as soon as its connection did (the
   * graceful close lingers until the client's FIN). */
  ifd__conn_set_stop(&set, uv_now(&loop) + 3600 * 1000, on_set_closed);
  assert_true(run_until(got_eof, a, 5));
  client_free(a);
  assert_true(run_until(is_set, &set_closed, 5));
  teardown_loop();
}

/* A graceful close lingers: what the client still sends after the server's
 * FIN is read and dropped (no RST), and the connection ends with the
 * client's FIN; one that never closes ends at the deadline, or at the latest
 * IFD_CONN_LINGER_MS after its FIN. */
static void client_send(client_t *c, const char *text) {
  uv_buf_t b = uv_buf_init((char *)text, (unsigned)strlen(text));
  assert_int_equal(uv_try_write((uv_stream_t *)&c->tcp, &b, 1),
                   (int)strlen(text));
}

static void test_graceful_close_lingers(void **state) {
  client_t *a;
  uint64_t t0;

  (void)state;
  setup_loop();
  /* Closed by the client: the set closes at once after it. */
  start_set();
  close_on_stop = 1;
  a = client_new(set.port);
  assert_true(run_until(greeted, a, 5));
  ifd__conn_set_stop(&set, uv_now(&loop) + 3600 * 1000, on_set_closed);
  assert_true(run_until(got_eof, a, 5));
  client_send(a, "a request sent after the server's FIN");
  assert_false(run_until(is_set, &set_closed, 0.2));
  assert_int_equal(n_free, 0);
  client_free(a);
  assert_true(run_until(is_set, &set_closed, 5));

  /* The client never closes: the deadline ends the lingering. */
  start_set();
  close_on_stop = 1;
  a = client_new(set.port);
  assert_true(run_until(greeted, a, 5));
  ifd__conn_set_stop(&set, uv_now(&loop) + 100, on_set_closed);
  assert_true(run_until(got_eof, a, 5));
  assert_true(run_until(is_set, &set_closed, 5));
  client_free(a);

  /* No deadline either: the linger timer ends it. */
  start_set();
  close_on_stop = 1;
  a = client_new(set.port);
  assert_true(run_until(greeted, a, 5));
  t0 = uv_hrtime();
  ifd__conn_set_stop(&set, 0, on_set_closed);
  assert_true(run_until(got_eof, a, 5));
  assert_true(run_until(is_set, &set_closed, IFD_CONN_LINGER_MS / 1000.0 + 5));
  assert_true(uv_hrtime() - t0 >= (uint64_t)IFD_CONN_LINGER_MS / 2 * 1000000);
  client_free(a);
  teardown_loop();
}

/* ---- HTTP: the body grows with its bytes --------------------------------- */

static int wrote;

static void on_written(uv_write_t *w, int status) {
  assert_int_equal(status, 0);
  wrote = 1;
  free(w);
}

static int done_flag(void *arg) {
  return *(int *)arg;
}

static void on_http_stopped(void *arg) {
  *(int *)arg = 1;
}

static void test_http_body_allocated_as_it_arrives(void **state) {
  static const char head[] =
      "POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\n"
      "Content-Length: 60000000\r\n\r\n";
  const size_t sent = 1 << 20; /* 1 MiB of the declared 60 MB */
  ifd_http_opts_t o;
  ifd_http_t *h;
  ifd_errmsg_t err;
  client_t *c;
  uv_write_t *w;
  uv_buf_t bufs[2];
  char *body;
  int stopped = 0;

  (void)state;
  setup_loop();
  memset(&o, 0, sizeof(o));
  o.host = "127.0.0.1";
  assert_int_equal(ifd_http_start(&loop, NULL, &o, &h, &err), 0);
  c = client_new(ifd_http_port(h));
  while (!c->connected) uv_run(&loop, UV_RUN_ONCE);

  body = calloc(1, sent);
  assert_non_null(body);
  max_alloc = 0;
  w = malloc(sizeof(*w));
  bufs[0] = uv_buf_init((char *)head, sizeof(head) - 1);
  bufs[1] = uv_buf_init(body, (unsigned)sent);
  wrote = 0;
  assert_int_equal(uv_write(w, (uv_stream_t *)&c->tcp, bufs, 2, on_written), 0);
  assert_true(run_until(done_flag, &wrote, 10));
  run_until(never, NULL, 0.3); /* the server reads what is there */
  /* Never the declared length: at most twice what arrived, plus the first
   * chunk. */
  assert_true(max_alloc <= 2 * sent + 65536);
  free(body);

  ifd_http_stop(h, 0, on_http_stopped, &stopped);
  assert_true(run_until(done_flag, &stopped, 5));
  assert_true(run_until(got_eof, c, 5));
  client_free(c);
  teardown_loop();
}

/* ---- timeout queues ------------------------------------------------------ */

static ifd_conn_t *nth_conn(int i) {
  ifd_link_t *l = set.conns.next;
  while (i-- > 0) l = l->next;
  return ifd_container_of(l, ifd_conn_t, link);
}

static int expired_n(void *arg) {
  return n_expired >= *(int *)arg;
}

static void test_timeout_queues(void **state) {
  client_t *cl[4];
  ifd_conn_t *a, *b, *c, *d;
  uint64_t now;
  int i, four = 4;

  (void)state;
  setup_loop();
  start_set();
  for (i = 0; i < 4; i++) {
    cl[i] = client_new(set.port);
    assert_true(run_until(greeted, cl[i], 5));
  }
  a = nth_conn(0), b = nth_conn(1), c = nth_conn(2), d = nth_conn(3);
  ifd__conn_set_timeout(&set, 0, 300000);
  ifd__conn_set_timeout(&set, 1, 100000);
  ifd__conn_set_timeout(&set, 2, 0); /* off */

  now = uv_now(&loop);
  ifd__conn_deadline(a, 0);
  ifd__conn_deadline(b, 0);
  ifd__conn_deadline(c, 1);
  ifd__conn_deadline(d, 1);
  ifd__conn_touch(a);          /* a goes behind b */
  ifd__conn_deadline_clear(d); /* d never expires */
  ifd__conn_deadline(b, 2);    /* an off queue: b is on none */
  assert_int_equal(b->tq, 0);
  ifd__conn_deadline(b, 0); /* back, behind a now */

  ifd__conn_sweep(&set, now + 50000);
  assert_int_equal(n_expired, 0);
  ifd__conn_sweep(&set, now + 200000);
  assert_int_equal(n_expired, 1);
  assert_ptr_equal(expired[0], c);
  assert_int_equal(expired_q[0], 1);
  ifd__conn_sweep(&set, now + 10000000);
  assert_int_equal(n_expired, 3);
  assert_ptr_equal(expired[1], a);
  assert_ptr_equal(expired[2], b);
  ifd__conn_sweep(&set, now + 20000000);
  assert_int_equal(n_expired, 3);

  /* From the sweeper itself; a connection that closes leaves its queue. */
  ifd__conn_set_timeout(&set, 1, 30);
  ifd__conn_deadline(d, 1);
  ifd__conn_deadline(a, 1);
  ifd__conn_close(a, 0);
  now = uv_now(&loop);
  assert_true(run_until(expired_n, &four, 5));
  assert_ptr_equal(expired[3], d);
  assert_true(uv_now(&loop) >= now + 30);
  run_until(never, NULL, 0.4);
  assert_int_equal(n_expired, 4);

  for (i = 0; i < 4; i++) client_free(cl[i]);
  assert_true(run_until(all_freed, &four, 5));
  ifd__conn_set_stop(&set, 0, on_set_closed);
  assert_true(run_until(is_set, &set_closed, 5));
  teardown_loop();
}

static void test_max_connections(void **state) {
  client_t *a, *b, *c, *d;
  const ifd_conn_stats_t *st;
  size_t n, i;
  uint64_t rejected = 0;
  int three = 3; /* a, b, d: c never had a connection object */

  (void)state;
  setup_loop();
  start_set();
  set.max_connections = 2;
  a = client_new(set.port);
  b = client_new(set.port);
  assert_true(run_until(greeted, a, 5));
  assert_true(run_until(greeted, b, 5));
  st = ifd__conn_stats(&n);
  for (i = 0; i < n; i++)
    if (strcmp(st[i].label, "test") == 0) rejected = st[i].rejected_max;
  c = client_new(set.port); /* over the limit: closed at once */
  assert_true(run_until(got_eof, c, 5));
  assert_int_equal(c->n, 0);
  for (i = 0; i < n; i++)
    if (strcmp(st[i].label, "test") == 0)
      assert_int_equal(st[i].rejected_max, rejected + 1);
  client_free(a);
  assert_true(run_until(is_set, &n_free, 5));
  d = client_new(set.port); /* room again */
  assert_true(run_until(greeted, d, 5));
  client_free(b);
  client_free(c);
  client_free(d);
  assert_true(run_until(all_freed, &three, 5));
  ifd__conn_set_stop(&set, 0, on_set_closed);
  assert_true(run_until(is_set, &set_closed, 5));
  teardown_loop();
}

static int deferred_n(void *arg) {
  return n_deferred_ran >= *(int *)arg;
}

static void test_defer(void **state) {
  client_t *cl[3];
  ifd_conn_t *a, *b, *c;
  int i, two = 2, three = 3;

  (void)state;
  setup_loop();
  start_set();
  for (i = 0; i < 3; i++) {
    cl[i] = client_new(set.port);
    assert_true(run_until(greeted, cl[i], 5));
  }
  a = nth_conn(0), b = nth_conn(1), c = nth_conn(2);
  assert_int_equal(ifd__conn_defer(a), 0);
  assert_int_equal(ifd__conn_defer(b), 0);
  assert_int_equal(ifd__conn_defer(a), 0); /* once only */
  assert_int_equal(ifd__conn_defer(c), 0);
  assert_int_equal(n_deferred_ran, 0); /* not from where it was asked */
  ifd__conn_close(c, 0);               /* closed meanwhile: never runs */
  assert_true(run_until(deferred_n, &two, 5));
  run_until(never, NULL, 0.05);
  assert_int_equal(n_deferred_ran, 2);
  assert_ptr_equal(deferred_ran[0], a);
  assert_ptr_equal(deferred_ran[1], b);
  assert_int_equal(ifd__conn_defer(b), 0); /* may be asked again */
  assert_true(run_until(deferred_n, &three, 5));
  assert_ptr_equal(deferred_ran[2], b);

  for (i = 0; i < 3; i++) client_free(cl[i]);
  assert_true(run_until(all_freed, &three, 5));
  ifd__conn_set_stop(&set, 0, on_set_closed);
  assert_true(run_until(is_set, &set_closed, 5));
  teardown_loop();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_accept_out_of_memory),
      cmocka_unit_test(test_stop_phases_and_deadline),
      cmocka_unit_test(test_stop_closes_at_once),
      cmocka_unit_test(test_graceful_close_lingers),
      cmocka_unit_test(test_http_body_allocated_as_it_arrives),
      cmocka_unit_test(test_timeout_queues),
      cmocka_unit_test(test_max_connections),
      cmocka_unit_test(test_defer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
