/*
 * test/unit/test_objcache.c - recycling of the per-request objects: the
 * bounded object cache, the server's request cache (a recycled request comes
 * back as new), and the response slot embedded in each request (claimed by
 * exactly one of many racing threads, handed back on the loop, and keeping
 * its request alive until it is freed).
 *
 * Allocation failures of these paths are in test_oom.c.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "core/infer.h"
#include "base/objcache.h"
#include "core/server.h"
#include "core/request_internal.h"

/* ---- the cache itself ------------------------------------------------------
 */

static void test_cache_reuse_lifo(void **state) {
  ifd_objcache_t c;
  void *a, *b;
  (void)state;

  ifd_objcache_init(&c, 100, 4);
  a = ifd_objcache_get(&c);
  b = ifd_objcache_get(&c);
  assert_non_null(a);
  assert_non_null(b);
  assert_int_equal(c.n, 0);
  memset(a, 0xab, 100); /* the whole size is usable */
  memset(b, 0xcd, 100);
  ifd_objcache_put(&c, a);
  ifd_objcache_put(&c, b);
  assert_int_equal(c.n, 2);
  /* Last in, first out. */
  assert_ptr_equal(ifd_objcache_get(&c), b);
  assert_ptr_equal(ifd_objcache_get(&c), a);
  assert_int_equal(c.n, 0);
  ifd_objcache_put(&c, a);
  ifd_objcache_put(&c, b);
  ifd_objcache_put(&c, NULL); /* ignored */
  assert_int_equal(c.n, 2);
  ifd_objcache_drain(&c);
  assert_int_equal(c.n, 0);
  assert_null(c.head);
}

static void test_cache_is_bounded(void **state) {
  ifd_objcache_t c;
  void *objs[10];
  int i;
  (void)state;

  /* Smaller than a pointer: rounded up so the link fits. */
  ifd_objcache_init(&c, 1, 3);
  assert_true(c.size >= sizeof(void *));
  for (i = 0; i < 10; i++) assert_non_null(objs[i] = ifd_objcache_get(&c));
  for (i = 0; i < 10; i++) ifd_objcache_put(&c, objs[i]);
  /* Only three are kept; the other seven went back to malloc (ASan's leak
   * checker sees any that did not). */
  assert_int_equal(c.n, 3);
  ifd_objcache_drain(&c);
  assert_int_equal(c.n, 0);

  /* max 0 caches nothing. */
  ifd_objcache_init(&c, 64, 0);
  objs[0] = ifd_objcache_get(&c);
  assert_non_null(objs[0]);
  ifd_objcache_put(&c, objs[0]);
  assert_int_equal(c.n, 0);
  assert_null(c.head);
}

/* ---- the server's request cache ------------------------------------------
 */

typedef struct {
  uv_loop_t loop;
  ifd_server_t *s;
} srv_t;

static void srv_open(srv_t *t) {
  ifd_server_opts_t o;
  ifd_errmsg_t err;
  memset(&o, 0, sizeof(o));
  assert_int_equal(uv_loop_init(&t->loop), 0);
  assert_int_equal(ifd_server_new(&t->loop, &o, &t->s, &err), 0);
}

static void srv_close(srv_t *t) {
  ifd_server_free(t->s);
  uv_run(&t->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&t->loop), 0);
}

static void test_request_recycled_as_new(void **state) {
  srv_t t;
  ifd_request_t *req, *again;
  ifd_response_t *resp;
  int64_t shape[2] = {1, 4};
  char big[3000];
  unsigned i;
  (void)state;

  srv_open(&t);
  req = ifd_request_new(t.s);
  assert_non_null(req);
  /* Dirty everything a protocol and a scheduler would. */
  assert_non_null(
      ifd_request_add_input(req, "INPUT0", 6, IFD_TYPE_FP32, shape, 2));
  assert_non_null(ifd_request_add_output(req, "OUTPUT0", 7));
  assert_non_null(ifd_request_add_param(req, "p", 1));
  memset(big, 'x', sizeof(big));
  assert_non_null(ifd_pool_strndup(&req->pool, big, sizeof(big) - 1));
  req->body = malloc(16);
  req->id = "r1";
  req->model_version = 3;
  req->flags = 3;
  req->sched_area.u[0] = 42;
  req->sched_area.p[IFD_REQUEST_SCHED_WORDS - 1] = req;
  req->t_received = 99;
  resp = ifd_response_new(req); /* takes the slot */
  assert_non_null(resp);
  assert_true(resp->embedded);
  ifd_response_free(resp);
  ifd_request_unref(req);

  /* The next request reuses the object, and it is as good as new. */
  again = ifd_request_new(t.s);
  assert_ptr_equal(again, req);
  assert_ptr_equal(again->server, t.s);
  assert_null(again->model);
  assert_int_equal(again->model_version, -1);
  assert_string_equal(again->id, "");
  assert_int_equal(again->flags, 0);
  assert_int_equal(again->n_inputs, 0);
  assert_int_equal(again->n_outputs, 0);
  assert_int_equal(again->n_params, 0);
  assert_null(again->inputs);
  assert_null(again->body);
  assert_int_equal(ifd__req(again)->refs, 1);
  assert_int_equal(ifd__req(again)->state, IFD_REQ_INIT);
  assert_int_equal(again->t_received, 0);
  for (i = 0; i < IFD_REQUEST_SCHED_WORDS; i++)
    assert_int_equal(again->sched_area.u[i], 0);
  assert_int_equal(atomic_load(&ifd__req(again)->resp_slot_busy), 0);
  assert_int_equal(atomic_load(&ifd__req(again)->open_responses), 0);
  assert_null(again->pool.chunks);
  ifd_request_unref(again);
  srv_close(&t);
}

static void test_request_cache_bounded_and_drained(void **state) {
  srv_t t;
  ifd_request_t *reqs[300];
  ifd_objcache_t *c;
  int i;
  (void)state;

  srv_open(&t);
  c = ifd_server_req_cache(t.s);
  for (i = 0; i < 300; i++) assert_non_null(reqs[i] = ifd_request_new(t.s));
  for (i = 0; i < 300; i++) ifd_request_unref(reqs[i]);
  assert_true(c->n > 0);
  assert_true(c->n <= c->max);
  assert_true(c->max < 300);
  /* The server returns what it holds when it is freed (ASan's leak checker
   * would see it otherwise), and frees a straggler directly. */
  srv_close(&t);
}

/* ---- the response slot ------------------------------------------------------
 */

static void test_slot_outlives_request_refs(void **state) {
  srv_t t;
  ifd_request_t *req;
  ifd_response_t *first, *second, *third;
  (void)state;

  srv_open(&t);
  req = ifd_request_new(t.s);
  first = ifd_response_new(req);
  second = ifd_response_new(req);
  assert_ptr_equal(first, &ifd__req(req)->resp_slot);
  assert_true(first->embedded);
  assert_false(second->embedded);
  assert_ptr_not_equal(second, &ifd__req(req)->resp_slot);
  assert_int_equal(atomic_load(&ifd__req(req)->open_responses), 2);
  ifd_response_free(second);
  /* The slot is out: it is not claimed twice. */
  third = ifd_response_new(req);
  assert_false(third->embedded);
  ifd_response_free(third);

  /* The protocol drops the request before it frees the response (a write
   * still in flight): the request stays until the response goes. */
  ifd_request_unref(req);
  assert_int_equal(ifd_server_req_cache(t.s)->n, 0);
  assert_ptr_equal(first->req, req);
  assert_int_equal(ifd__req(req)->refs, 0);
  ifd_response_free(first);
  assert_int_equal(ifd_server_req_cache(t.s)->n, 1);
  srv_close(&t);
}

static void test_slot_handed_back_and_reused(void **state) {
  ifd_request_t *req = ifd_request_new(NULL);
  ifd_response_t *a, *b;
  (void)state;

  assert_non_null(req);
  a = ifd_response_new(req);
  assert_true(a->embedded);
  a->error = IFD_EINVAL;
  a->n_params = 7;
  assert_non_null(ifd_pool_alloc(&a->pool, 2000)); /* a chunk of its own */
  ifd_response_free(a);
  /* Freed on the loop: the next response gets the slot again, clean. */
  b = ifd_response_new(req);
  assert_ptr_equal(b, a);
  assert_true(b->embedded);
  assert_int_equal(b->error, 0);
  assert_int_equal(b->n_params, 0);
  assert_null(b->pool.chunks);
  assert_ptr_equal(b->req, req);
  ifd_response_free(b);
  ifd_request_unref(req);
}

/* Backends create responses on their instance threads (decoupled ones from
 * any thread): many threads race for one request's slot. */
#define RACERS 8
#define ROUNDS 200

typedef struct {
  ifd_request_t *req;
  pthread_barrier_t *go;
  ifd_response_t *got;
} racer_t;

static void *racer(void *arg) {
  racer_t *r = arg;
  pthread_barrier_wait(r->go);
  r->got = ifd_response_new(r->req);
  /* A backend thread fills its response before it sends it. */
  if (r->got != NULL) r->got->flags = 1;
  return NULL;
}

static void test_slot_race(void **state) {
  pthread_barrier_t go;
  pthread_t th[RACERS];
  racer_t rs[RACERS];
  int round, i, embedded;
  (void)state;

  for (round = 0; round < ROUNDS; round++) {
    ifd_request_t *req = ifd_request_new(NULL);
    assert_non_null(req);
    assert_int_equal(pthread_barrier_init(&go, NULL, RACERS), 0);
    for (i = 0; i < RACERS; i++) {
      rs[i].req = req;
      rs[i].go = &go;
      rs[i].got = NULL;
      assert_int_equal(pthread_create(&th[i], NULL, racer, &rs[i]), 0);
    }
    for (i = 0; i < RACERS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&go);
    embedded = 0;
    for (i = 0; i < RACERS; i++) {
      assert_non_null(rs[i].got);
      assert_ptr_equal(rs[i].got->req, req);
      if (rs[i].got->embedded) {
        embedded++;
        assert_ptr_equal(rs[i].got, &ifd__req(req)->resp_slot);
      }
    }
    assert_int_equal(embedded, 1);
    assert_int_equal(atomic_load(&ifd__req(req)->open_responses), RACERS);
    /* The loop frees them, the request first this time. */
    ifd_request_unref(req);
    for (i = 0; i < RACERS; i++) ifd_response_free(rs[i].got);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cache_reuse_lifo),
      cmocka_unit_test(test_cache_is_bounded),
      cmocka_unit_test(test_request_recycled_as_new),
      cmocka_unit_test(test_request_cache_bounded_and_drained),
      cmocka_unit_test(test_slot_outlives_request_refs),
      cmocka_unit_test(test_slot_handed_back_and_reused),
      cmocka_unit_test(test_slot_race),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
