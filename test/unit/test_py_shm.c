/*
 * test/unit/test_py_shm.c - the Python backend's DOWN segment allocator
 * (backend_api/backends/python/shm.c, included): first fit, alignment,
 * growth of the memfd, coalescing on free, the limit, unknown frees, and
 * freeing every block of a dead stub's generation.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend_api/backends/python/shm.c"

#define MIB ((uint64_t)1 << 20)

static uint64_t file_size(int fd) {
  struct stat sb;
  assert_int_equal(fstat(fd, &sb), 0);
  return (uint64_t)sb.st_size;
}

static int setup(void **state) {
  ifd__py_down_t *d = calloc(1, sizeof(*d));
  int fd = memfd_create("test-py-down", MFD_CLOEXEC);
  assert_true(fd >= 0);
  ifd__py_down_init(d, fd, 8 * MIB);
  *state = d;
  return 0;
}

static int teardown(void **state) {
  ifd__py_down_t *d = *state;
  close(d->fd);
  ifd__py_down_destroy(d);
  free(d);
  return 0;
}

static void test_alloc_aligned_and_grows(void **state) {
  ifd__py_down_t *d = *state;
  uint64_t a, b, c;
  assert_int_equal(file_size(d->fd), 0);
  assert_int_equal(ifd__py_down_alloc(d, 1, 1, &a), 0);
  assert_int_equal(ifd__py_down_alloc(d, 0, 1, &b), 0);
  assert_int_equal(ifd__py_down_alloc(d, 100, 1, &c), 0);
  assert_int_equal(a, 0);
  assert_int_equal(b, IFD_PY_DOWN_ALIGN); /* size 0 still takes a block */
  assert_int_equal(c, 2 * IFD_PY_DOWN_ALIGN);
  assert_int_equal(file_size(d->fd), MIB); /* grown once, to 1 MiB */
  assert_int_equal(d->n_used, 3);
}

static void test_free_coalesces_and_reuses(void **state) {
  ifd__py_down_t *d = *state;
  uint64_t off[4], x;
  for (int i = 0; i < 4; i++)
    assert_int_equal(ifd__py_down_alloc(d, 1000, 1, &off[i]), 0);
  /* Freeing 1 and 2 leaves one hole that a block of 2048 fits. */
  assert_int_equal(ifd__py_down_free(d, off[1]), 0);
  assert_int_equal(ifd__py_down_free(d, off[2]), 0);
  assert_int_equal(ifd__py_down_alloc(d, 2048, 1, &x), 0);
  assert_int_equal(x, off[1]);
  /* Everything back: a single free range covering the file. */
  assert_int_equal(ifd__py_down_free(d, x), 0);
  assert_int_equal(ifd__py_down_free(d, off[0]), 0);
  assert_int_equal(ifd__py_down_free(d, off[3]), 0);
  assert_int_equal(d->n_used, 0);
  assert_int_equal(d->n_free, 1);
  assert_int_equal(d->free_r[0].off, 0);
  assert_int_equal(d->free_r[0].size, d->size);
}

static void test_unknown_free(void **state) {
  ifd__py_down_t *d = *state;
  uint64_t a;
  assert_int_equal(ifd__py_down_free(d, 0), -ENOENT);
  assert_int_equal(ifd__py_down_alloc(d, 10, 1, &a), 0);
  assert_int_equal(ifd__py_down_free(d, a + 8), -ENOENT);
  assert_int_equal(ifd__py_down_free(d, a), 0);
  assert_int_equal(ifd__py_down_free(d, a), -ENOENT); /* twice */
}

static void test_growth_uses_the_free_tail(void **state) {
  ifd__py_down_t *d = *state;
  uint64_t a, b;
  assert_int_equal(ifd__py_down_alloc(d, MIB / 2, 1, &a), 0);
  assert_int_equal(file_size(d->fd), MIB);
  /* 3/4 MiB does not fit the free half: the file doubles, and the block
   * starts where the used part ends (the free tail joins it). */
  assert_int_equal(ifd__py_down_alloc(d, 3 * MIB / 4, 1, &b), 0);
  assert_int_equal(b, MIB / 2);
  assert_int_equal(file_size(d->fd), 2 * MIB);
}

static void test_limit(void **state) {
  ifd__py_down_t *d = *state;
  uint64_t a, b;
  assert_int_equal(ifd__py_down_alloc(d, 9 * MIB, 1, &a), -ENOSPC);
  assert_int_equal(ifd__py_down_alloc(d, 6 * MIB, 1, &a), 0);
  assert_int_equal(ifd__py_down_alloc(d, 3 * MIB, 1, &b), -ENOSPC);
  assert_true(file_size(d->fd) <= 8 * MIB);
  assert_int_equal(ifd__py_down_alloc(d, 2 * MIB, 1, &b), 0);
  assert_int_equal(file_size(d->fd), 8 * MIB);
  assert_int_equal(ifd__py_down_free(d, a), 0);
  assert_int_equal(ifd__py_down_alloc(d, 5 * MIB, 1, &a), 0);
}

static void test_free_generation(void **state) {
  ifd__py_down_t *d = *state;
  uint64_t a, b, c;
  assert_int_equal(ifd__py_down_alloc(d, 100, 1, &a), 0);
  assert_int_equal(ifd__py_down_alloc(d, 100, 2, &b), 0);
  assert_int_equal(ifd__py_down_alloc(d, 100, 1, &c), 0);
  ifd__py_down_free_gen(d, 1);
  assert_int_equal(d->n_used, 1);
  assert_int_equal(ifd__py_down_free(d, a), -ENOENT);
  assert_int_equal(ifd__py_down_free(d, b), 0);
  assert_int_equal(d->n_free, 1);
}

/* The segment's bytes are really shared: a second mapping sees them. */
static void test_bytes_through_a_mapping(void **state) {
  ifd__py_down_t *d = *state;
  uint64_t a;
  assert_int_equal(ifd__py_down_alloc(d, 4096, 1, &a), 0);
  char *m = mmap(NULL, d->limit, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_NORESERVE, d->fd, 0);
  assert_true(m != MAP_FAILED);
  memset(m + a, 0x5a, 4096);
  char *r =
      mmap(NULL, d->limit, PROT_READ, MAP_SHARED | MAP_NORESERVE, d->fd, 0);
  assert_true(r != MAP_FAILED);
  assert_int_equal((unsigned char)r[a + 4095], 0x5a);
  munmap(m, d->limit);
  munmap(r, d->limit);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_alloc_aligned_and_grows, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_free_coalesces_and_reuses, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_unknown_free, setup, teardown),
      cmocka_unit_test_setup_teardown(test_growth_uses_the_free_tail, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_limit, setup, teardown),
      cmocka_unit_test_setup_teardown(test_free_generation, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bytes_through_a_mapping, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
