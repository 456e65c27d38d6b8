/*
 * test/unit/test_classify.c - the classification extension's top-N tensor
 * and label files (core/classify.c).
 *
 * Covers Triton's value formatting per type, per-batch-entry top-N with
 * labels, ties in index order, N above the class count, an entry the buffer
 * does not hold, the refused types, and label files with and without a last
 * newline, empty lines and a missing file.
 */
/* cmocka.h needs setjmp.h, stdarg.h and stddef.h before it. */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/classify.h"

/* The BYTES elements of r joined with '|'. */
static char *joined(const ifd_class_result_t *r) {
  static char buf[1024];
  const unsigned char *p = r->data, *end = p + r->byte_size;
  size_t o = 0;

  buf[0] = '\0';
  while (p < end) {
    uint32_t len;
    memcpy(&len, p, 4);
    if (o != 0) buf[o++] = '|';
    memcpy(buf + o, p + 4, len);
    o += len;
    p += 4 + len;
  }
  buf[o] = '\0';
  return buf;
}

static void test_fp32_batched_labels(void **state) {
  const float x[8] = {1.1f, 3.3f, 0.5f, 2.4f, 4, 3, 2, 1};
  const int64_t shape[2] = {2, 4};
  char text[] = "zero\0one\0\0three";
  const char *lines[4] = {text, text + 5, text + 9, text + 10};
  ifd_labels_t l = {text, lines, 4};
  ifd_class_result_t r;
  ifd_errmsg_t err;
  ifd_pool_t pool;
  (void)state;

  ifd_pool_init(&pool);
  assert_int_equal(ifd_classify(x, sizeof(x), IFD_TYPE_FP32, shape, 2, 1, 3, &l,
                                &pool, &r, &err),
                   0);
  assert_int_equal(r.ndims, 2);
  assert_int_equal(r.shape[0], 2);
  assert_int_equal(r.shape[1], 3);
  assert_string_equal(joined(&r),
                      "3.300000:1:one|2.400000:3:three|1.100000:0:zero|"
                      "4.000000:0:zero|3.000000:1:one|2.000000:2");
  /* Not batching: one list over every element; N above the count. */
  assert_int_equal(ifd_classify(x, sizeof(x), IFD_TYPE_FP32, shape, 2, 0, 20,
                                NULL, &pool, &r, &err),
                   0);
  assert_int_equal(r.ndims, 1);
  assert_int_equal(r.shape[0], 8);
  assert_string_equal(joined(&r),
                      "4.000000:4|3.300000:1|3.000000:5|2.400000:3|"
                      "2.000000:6|1.100000:0|1.000000:7|0.500000:2");
  ifd_pool_destroy(&pool);
}

static void test_integers_and_ties(void **state) {
  const int8_t a[5] = {3, -7, 9, 3, -128};
  const uint64_t u[3] = {1, UINT64_MAX, 1};
  const int64_t s5[1] = {5}, s3[1] = {3};
  const double d[3] = {-0.25, 1e20, -0.25};
  ifd_class_result_t r;
  ifd_errmsg_t err;
  ifd_pool_t pool;
  (void)state;

  ifd_pool_init(&pool);
  assert_int_equal(
      ifd_classify(a, 5, IFD_TYPE_INT8, s5, 1, 0, 5, NULL, &pool, &r, &err), 0);
  assert_string_equal(joined(&r), "9:2|3:0|3:3|-7:1|-128:4");
  assert_int_equal(ifd_classify(u, sizeof(u), IFD_TYPE_UINT64, s3, 1, 0, 3,
                                NULL, &pool, &r, &err),
                   0);
  assert_string_equal(joined(&r), "18446744073709551615:1|1:0|1:2");
  assert_int_equal(ifd_classify(d, sizeof(d), IFD_TYPE_FP64, s3, 1, 0, 2, NULL,
                                &pool, &r, &err),
                   0);
  assert_string_equal(joined(&r), "100000000000000000000.000000:1|-0.250000:0");
  /* A batch entry the buffer does not hold has no classes. */
  {
    const int64_t s[2] = {2, 3};
    assert_int_equal(ifd_classify(d, sizeof(d), IFD_TYPE_FP64, s, 2, 1, 1, NULL,
                                  &pool, &r, &err),
                     0);
    assert_int_equal(r.shape[0], 2);
    assert_int_equal(r.shape[1], 1);
    assert_string_equal(joined(&r), "100000000000000000000.000000:1");
  }
  ifd_pool_destroy(&pool);
}

static void test_refused_types(void **state) {
  static const ifd_dtype_t types[] = {IFD_TYPE_BOOL, IFD_TYPE_FP16,
                                      IFD_TYPE_BF16, IFD_TYPE_BYTES};
  static const char *const names[] = {"BOOL", "FP16", "BF16", "BYTES"};
  const int64_t s[1] = {2};
  const char data[8] = {0};
  ifd_class_result_t r;
  ifd_errmsg_t err;
  ifd_pool_t pool;
  char want[128];
  size_t i;
  (void)state;

  ifd_pool_init(&pool);
  for (i = 0; i < 4; i++) {
    assert_int_equal(ifd_classify(data, sizeof(data), types[i], s, 1, 0, 1,
                                  NULL, &pool, &r, &err),
                     IFD_EINVAL);
    snprintf(want, sizeof(want),
             "class result not available for output due to unsupported type "
             "'%s'",
             names[i]);
    assert_string_equal(err.text, want);
  }
  ifd_pool_destroy(&pool);
}

static void check_labels(const char *content, size_t n,
                         const char *const *want) {
  char path[] = "/tmp/inferd_labels_XXXXXX";
  int fd = mkstemp(path);
  ifd_labels_t l;
  ifd_errmsg_t err;
  size_t i;

  assert_true(fd >= 0);
  assert_int_equal(write(fd, content, strlen(content)),
                   (ssize_t)strlen(content));
  close(fd);
  assert_int_equal(ifd_labels_load(&l, path, &err), 0);
  unlink(path);
  assert_int_equal(l.n, n);
  for (i = 0; i < n; i++) assert_string_equal(l.line[i], want[i]);
  ifd_labels_free(&l);
}

static void test_labels(void **state) {
  static const char *const three[] = {"cat", "", "dog"};
  static const char *const cr[] = {"a\r", "b"};
  ifd_labels_t l;
  ifd_errmsg_t err;
  (void)state;

  check_labels("cat\n\ndog\n", 3, three);
  check_labels("cat\n\ndog", 3, three);
  check_labels("a\r\nb", 2, cr); /* std::getline keeps the '\r' */
  check_labels("", 0, NULL);
  assert_int_equal(ifd_labels_load(&l, "/nonexistent/labels.txt", &err),
                   IFD_ENOTFOUND);
  assert_string_equal(err.text,
                      "failed to open text file for read "
                      "/nonexistent/labels.txt: No such file or directory");
  ifd_labels_free(&l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fp32_batched_labels),
      cmocka_unit_test(test_integers_and_ties),
      cmocka_unit_test(test_refused_types),
      cmocka_unit_test(test_labels),
  };
  return cmocka_run_group_tests_name("classify", tests, NULL, NULL);
}
