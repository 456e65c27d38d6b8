/*
 * test/unit/test_bufpool.c - base/bufpool.c: size classes, reuse of a given
 * buffer by the next take of its class, the bounds (per class and in bytes,
 * and a lowered cap), grow keeping the contents, small buffers that are
 * never kept, and takes and gives racing on several threads.
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

#include "base/bufpool.c"

static void test_classes(void **state) {
  size_t size;
  (void)state;
  assert_int_equal(class_of(IFD_BUFPOOL_MIN, &size), 0);
  assert_int_equal(size, 65536);
  assert_int_equal(class_of(65537, &size), 1);
  assert_int_equal(size, 98304);
  assert_int_equal(class_of(98305, &size), 2);
  assert_int_equal(size, 131072);
  /* A 1 MiB tensor is its class exactly; 16 MiB and a header is 24 MiB. */
  class_of((size_t)1 << 20, &size);
  assert_int_equal(size, (size_t)1 << 20);
  class_of(((size_t)16 << 20) + 200, &size);
  assert_int_equal(size, (size_t)24 << 20);
  assert_int_equal(class_of(((size_t)1 << MAX_SHIFT) + 1, &size), -1);
}

static void test_reuse_and_bounds(void **state) {
  ifd_bufpool_t *p = ifd_bufpool_new((size_t)4 << 20, 2);
  ifd_bufpool_stats_t st;
  char *a, *b, *c, *d;
  (void)state;
  assert_non_null(p);
  a = ifd_bufpool_get(p, (size_t)1 << 20);
  assert_non_null(a);
  assert_int_equal((uintptr_t)a % 4096, 0);
  assert_true(ifd_bufpool_size(a) >= ((size_t)1 << 20));
  memset(a, 0x5a, (size_t)1 << 20);
  ifd_bufpool_put(a);
  /* The next take of the class gets the same buffer back, pages and all. */
  b = ifd_bufpool_get(p, 900000);
  assert_ptr_equal(a, b);
  assert_int_equal((unsigned char)b[12345], 0x5a);
  ifd_bufpool_get_stats(p, &st);
  assert_int_equal(st.hits, 1);
  assert_int_equal(st.misses, 1);
  /* Per class: two kept, the third unmapped. */
  c = ifd_bufpool_get(p, (size_t)1 << 20);
  d = ifd_bufpool_get(p, (size_t)1 << 20);
  ifd_bufpool_put(b);
  ifd_bufpool_put(c);
  ifd_bufpool_put(d);
  ifd_bufpool_get_stats(p, &st);
  assert_int_equal(st.cached, 2);
  assert_int_equal(st.cached_bytes, (size_t)2 << 20);
  assert_int_equal(st.unmapped, 1);
  /* In bytes: a 3 MiB buffer does not fit beside the 2 MiB kept (cap 4). */
  a = ifd_bufpool_get(p, (size_t)3 << 20);
  ifd_bufpool_put(a);
  ifd_bufpool_get_stats(p, &st);
  assert_int_equal(st.cached_bytes, (size_t)2 << 20);
  assert_int_equal(st.unmapped, 2);
  /* A lower cap unmaps what is beyond it. */
  ifd_bufpool_set_cap(p, (size_t)1 << 20, 2);
  ifd_bufpool_get_stats(p, &st);
  assert_int_equal(st.cached, 1);
  ifd_bufpool_set_cap(p, 0, 0);
  ifd_bufpool_get_stats(p, &st);
  assert_int_equal(st.cached, 0);
  assert_int_equal(st.cached_bytes, 0);
  ifd_bufpool_free(p);
}

static void test_small_and_grow(void **state) {
  ifd_bufpool_t *p = ifd_bufpool_new((size_t)64 << 20, 8);
  ifd_bufpool_stats_t st;
  char *a;
  size_t i;
  (void)state;
  /* Small: malloc'd, never kept (ASan sees them). */
  a = ifd_bufpool_get(p, 100);
  assert_non_null(a);
  assert_int_equal((uintptr_t)a % 16, 0);
  memcpy(a, "0123456789", 10);
  /* Growing past IFD_BUFPOOL_MIN moves it into a class, contents kept. */
  a = ifd_bufpool_grow(p, a, 10, 200000);
  assert_non_null(a);
  assert_memory_equal(a, "0123456789", 10);
  for (i = 0; i < 200000; i++) a[i] = (char)i;
  /* Within its size: the same buffer. */
  assert_ptr_equal(ifd_bufpool_grow(p, a, 200000, ifd_bufpool_size(a)), a);
  a = ifd_bufpool_grow(p, a, 200000, (size_t)3 << 20);
  for (i = 0; i < 200000; i++) assert_int_equal(a[i], (char)i);
  ifd_bufpool_put(a);
  ifd_bufpool_put(NULL);
  ifd_bufpool_get_stats(p, &st);
  assert_int_equal(st.cached, 2); /* the 256K class and the 3 MiB one */
  a = ifd_bufpool_grow(p, NULL, 0, 0);
  assert_non_null(a);
  ifd_bufpool_put(a);
  ifd_bufpool_free(p);
  assert_non_null(ifd_bufpool_shared());
  assert_ptr_equal(ifd_bufpool_shared(), ifd_bufpool_shared());
}

#define NTHREADS 4
#define ROUNDS 2000

static void *churn(void *arg) {
  ifd_bufpool_t *p = arg;
  unsigned i, seed = (unsigned)(uintptr_t)&i;
  void *held[4] = {NULL, NULL, NULL, NULL};
  for (i = 0; i < ROUNDS; i++) {
    unsigned k = i % 4;
    size_t n = IFD_BUFPOOL_MIN << (rand_r(&seed) % 5);
    ifd_bufpool_put(held[k]);
    held[k] = ifd_bufpool_get(p, n);
    if (held[k] == NULL) return (void *)1;
    memset(held[k], (int)i, 64);
  }
  for (i = 0; i < 4; i++) ifd_bufpool_put(held[i]);
  return NULL;
}

static void test_threads(void **state) {
  ifd_bufpool_t *p = ifd_bufpool_new((size_t)8 << 20, 4);
  pthread_t t[NTHREADS];
  ifd_bufpool_stats_t st;
  void *rv;
  int i;
  (void)state;
  for (i = 0; i < NTHREADS; i++)
    assert_int_equal(pthread_create(&t[i], NULL, churn, p), 0);
  for (i = 0; i < NTHREADS; i++) {
    assert_int_equal(pthread_join(t[i], &rv), 0);
    assert_null(rv);
  }
  ifd_bufpool_get_stats(p, &st);
  assert_true(st.cached_bytes <= ((size_t)8 << 20));
  assert_int_equal(st.hits + st.misses, NTHREADS * ROUNDS);
  assert_true(st.hits > 0);
  ifd_bufpool_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_classes),
      cmocka_unit_test(test_reuse_and_bounds),
      cmocka_unit_test(test_small_and_grow),
      cmocka_unit_test(test_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
