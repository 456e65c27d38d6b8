/*
 * test/unit/test_core.c - core building blocks: error codes, the request
 * pool, the string map and the completion queue (with real threads).
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "base/error.h"
#include "base/event.h"
#include "core/infer.h"
#include "base/pool.h"
#include "base/strmap.h"
#include "base/util.h"

static void test_errors(void **state) {
  ifd_errmsg_t e;
  (void)state;
  assert_string_equal(ifd_strerror(0), "success");
  assert_string_equal(ifd_strerror(IFD_EINVAL), "invalid argument");
  assert_string_equal(ifd_strerror(IFD_ETIMEOUT), "deadline exceeded");
  assert_string_equal(ifd_strerror(-1000), "unknown error");
  assert_string_equal(ifd_strerror(5), "unknown error");
  /* Triton error classes: NOT_FOUND 2, INVALID_ARG 3, UNAVAILABLE 4. */
  assert_int_equal(ifd_error_class(IFD_ENOTFOUND), 2);
  assert_int_equal(ifd_error_class(IFD_EINVAL), 3);
  assert_int_equal(ifd_error_class(IFD_EUNAVAIL), 4);
  assert_int_equal(ifd_error_class(IFD_EUNSUPPORTED), 5);
  assert_int_equal(ifd_error_class(IFD_ENOMEM), 1);
  assert_int_equal(ifd_error_class(IFD_EPARSE), 3);
  assert_int_equal(ifd_errf(&e, IFD_EINVAL, "x=%d", 42), IFD_EINVAL);
  assert_string_equal(e.text, "x=42");
  assert_int_equal(e.code, IFD_EINVAL);
  assert_int_equal(ifd_errf(NULL, IFD_EIO, "ignored"), IFD_EIO);
  ifd_errclear(&e);
  assert_int_equal(e.code, 0);
  assert_string_equal(e.text, "");
}

static void test_pool(void **state) {
  ifd_pool_t p;
  char *a, *b, *big, *s;
  int i;
  (void)state;
  ifd_pool_init(&p);
  a = ifd_pool_alloc(&p, 3);
  b = ifd_pool_alloc(&p, 5);
  assert_non_null(a);
  assert_non_null(b);
  assert_int_equal((uintptr_t)a % 16, 0);
  assert_int_equal((uintptr_t)b % 16, 0);
  assert_true(b >= a + 16);
  /* Inline chunk first: no malloc for small requests. */
  assert_null(p.chunks);
  big = ifd_pool_alloc(&p, 100000);
  assert_non_null(big);
  memset(big, 0xab, 100000);
  assert_non_null(p.chunks);
  for (i = 0; i < 1000; i++) {
    char *x = ifd_pool_alloc(&p, 24);
    assert_non_null(x);
    memset(x, i & 0xff, 24);
  }
  s = ifd_pool_strndup(&p, "hello world", 5);
  assert_string_equal(s, "hello");
  assert_null(ifd_pool_calloc(&p, SIZE_MAX / 2, 4));
  assert_null(ifd_pool_alloc(&p, SIZE_MAX - 3));
  a = ifd_pool_calloc(&p, 10, 8);
  for (i = 0; i < 80; i++) assert_int_equal(a[i], 0);
  ifd_pool_destroy(&p);
  assert_null(p.chunks);
}

static void test_strmap(void **state) {
  ifd_strmap_t m;
  char keys[2000][24];
  int i;
  (void)state;
  ifd_strmap_init(&m);
  assert_null(ifd_strmap_get(&m, "x", 1));
  for (i = 0; i < 2000; i++) {
    snprintf(keys[i], sizeof(keys[i]), "model_%d", i);
    assert_int_equal(ifd_strmap_put(&m, keys[i], strlen(keys[i]), keys[i]), 0);
  }
  assert_int_equal(m.count, 2000);
  for (i = 0; i < 2000; i++)
    assert_ptr_equal(ifd_strmap_get(&m, keys[i], strlen(keys[i])), keys[i]);
  /* Lookups use (pointer, length): a prefix is a different key. */
  assert_null(ifd_strmap_get(&m, "model_1", 6));
  assert_null(ifd_strmap_get(&m, "model_20000", 11));
  /* Replacing keeps the count. */
  assert_int_equal(ifd_strmap_put(&m, keys[7], strlen(keys[7]), keys[8]), 0);
  assert_int_equal(m.count, 2000);
  assert_ptr_equal(ifd_strmap_get(&m, "model_7", 7), keys[8]);
  ifd_strmap_free(&m);
  assert_null(ifd_strmap_get(&m, "model_7", 7));
}

/* Removal against a reference: random puts and deletes over a small key
 * set, so probe runs form, wrap around the table and are cut by removals;
 * every key is checked after every step. */
static void test_strmap_del(void **state) {
  ifd_strmap_t m;
  char keys[48][16];
  int present[48] = {0};
  unsigned seed = 12345;
  int i, k, step, n = 0;
  (void)state;
  ifd_strmap_init(&m);
  assert_null(ifd_strmap_del(&m, "x", 1)); /* empty, no table yet */
  for (i = 0; i < 48; i++) snprintf(keys[i], sizeof(keys[i]), "m%d", i);
  for (step = 0; step < 20000; step++) {
    seed = seed * 1103515245u + 12345u;
    k = (int)((seed >> 16) % 48);
    if ((seed >> 8) & 1) {
      assert_int_equal(ifd_strmap_put(&m, keys[k], strlen(keys[k]), keys[k]),
                       0);
      n += !present[k];
      present[k] = 1;
    } else {
      void *v = ifd_strmap_del(&m, keys[k], strlen(keys[k]));
      assert_ptr_equal(v, present[k] ? keys[k] : NULL);
      n -= present[k];
      present[k] = 0;
    }
    assert_int_equal(m.count, n);
    for (i = 0; i < 48; i++)
      assert_ptr_equal(ifd_strmap_get(&m, keys[i], strlen(keys[i])),
                       present[i] ? keys[i] : NULL);
  }
  /* A removed key can come back. */
  for (i = 0; i < 48; i++) ifd_strmap_del(&m, keys[i], strlen(keys[i]));
  assert_int_equal(m.count, 0);
  assert_int_equal(ifd_strmap_put(&m, keys[3], strlen(keys[3]), keys[4]), 0);
  assert_ptr_equal(ifd_strmap_get(&m, keys[3], strlen(keys[3])), keys[4]);
  ifd_strmap_free(&m);
}

/* ---- completion queue --------------------------------------------------- */

#define PRODUCERS 4
#define PER_PRODUCER 5000

typedef struct item {
  ifd_event_t ev;
  int producer, seq;
} item_t;

static item_t items[PRODUCERS][PER_PRODUCER];
static int last_seq[PRODUCERS];
static int received;
static ifd_evq_t q;

static void on_item(ifd_event_t *ev) {
  item_t *it = ifd_container_of(ev, item_t, ev);
  /* Events of one producer arrive in the order it pushed them. */
  assert_int_equal(it->seq, last_seq[it->producer] + 1);
  last_seq[it->producer] = it->seq;
  if (++received == PRODUCERS * PER_PRODUCER) ifd_evq_close(&q, NULL);
}

static void *producer(void *arg) {
  int p = (int)(intptr_t)arg, i;
  for (i = 0; i < PER_PRODUCER; i++) {
    items[p][i].producer = p;
    items[p][i].seq = i;
    items[p][i].ev.fn = on_item;
    ifd_evq_push(&q, &items[p][i].ev);
  }
  return NULL;
}

static void test_evq_threads(void **state) {
  uv_loop_t loop;
  pthread_t th[PRODUCERS];
  int i;
  (void)state;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ifd_evq_init(&loop, &q), 0);
  for (i = 0; i < PRODUCERS; i++) last_seq[i] = -1;
  for (i = 0; i < PRODUCERS; i++)
    assert_int_equal(
        pthread_create(&th[i], NULL, producer, (void *)(intptr_t)i), 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  for (i = 0; i < PRODUCERS; i++) pthread_join(th[i], NULL);
  assert_int_equal(received, PRODUCERS * PER_PRODUCER);
  for (i = 0; i < PRODUCERS; i++)
    assert_int_equal(last_seq[i], PER_PRODUCER - 1);
  /* Every handle closed: nothing leaks. */
  assert_int_equal(uv_loop_close(&loop), 0);
}

static int drained;
static void on_count(ifd_event_t *ev) {
  (void)ev;
  drained++;
}

static void test_evq_drain_inline(void **state) {
  uv_loop_t loop;
  ifd_evq_t q2;
  ifd_event_t evs[3];
  int i;
  (void)state;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ifd_evq_init(&loop, &q2), 0);
  for (i = 0; i < 3; i++) {
    evs[i].fn = on_count;
    ifd_evq_push(&q2, &evs[i]);
  }
  ifd_evq_drain(&q2);
  assert_int_equal(drained, 3);
  ifd_evq_drain(&q2); /* empty: nothing runs */
  assert_int_equal(drained, 3);
  ifd_evq_close(&q2, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* The protocols size a request's inputs array exactly; inputs added after
 * that (the sequence batcher's controls) must move it, not write past it
 * (they did: ASan saw the overrun, and backends read garbage shapes). */
static void test_inputs_after_exact_array(void **state) {
  static const int64_t one[2] = {1, 1};
  ifd_request_t *req = ifd_request_new(NULL);
  uint32_t i;
  (void)state;
  assert_non_null(req);
  req->inputs = ifd_pool_calloc(&req->pool, 1, sizeof(ifd_input_t));
  assert_non_null(req->inputs);
  req->inputs[0].name = "IN";
  req->inputs[0].shape = (int64_t *)one;
  req->inputs[0].ndims = 2;
  req->n_inputs = 1;
  for (i = 0; i < 20; i++) {
    ifd_input_t *in =
        ifd_request_add_input_borrowed(req, "CTL", IFD_TYPE_INT32, one, 2);
    assert_non_null(in);
    if (i == 0) assert_int_equal(ifd_request_reserve_inputs(req, 5), 0);
  }
  assert_int_equal(req->n_inputs, 21);
  assert_true(req->cap_inputs >= 21);
  assert_string_equal(req->inputs[0].name, "IN");
  assert_int_equal(req->inputs[0].ndims, 2);
  assert_string_equal(req->inputs[20].name, "CTL");
  ifd_request_unref(req);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_pool),
      cmocka_unit_test(test_strmap),
      cmocka_unit_test(test_strmap_del),
      cmocka_unit_test(test_evq_threads),
      cmocka_unit_test(test_evq_drain_inline),
      cmocka_unit_test(test_inputs_after_exact_array),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
