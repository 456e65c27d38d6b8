/*
 * test/unit/test_dtype.c - data type names, sizes and shape arithmetic.
 *
 * Covers both name spellings in both directions, element sizes, element and
 * byte counts at the int64 limit, shape matching with -1, shape printing
 * including truncation, and the BYTES wire-format check fed malformed buffers.
 */
/* cmocka.h needs setjmp.h, stdarg.h and stddef.h before it. */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <stdint.h>
#include <string.h>

#include "core/dtype.h"
#include "base/error.h"

static void test_names_round_trip(void **state) {
  (void)state;
  for (int t = IFD_TYPE_BOOL; t <= IFD_TYPE_BF16; t++) {
    const char *name = ifd_dtype_name((ifd_dtype_t)t);
    assert_int_equal(ifd_dtype_from_name(name, strlen(name)), t);
  }
  assert_string_equal(ifd_dtype_name(IFD_TYPE_FP32), "FP32");
  assert_string_equal(ifd_dtype_name(IFD_TYPE_BYTES), "BYTES");
  assert_string_equal(ifd_dtype_name(IFD_TYPE_BF16), "BF16");
  assert_string_equal(ifd_dtype_name(IFD_TYPE_INVALID), "INVALID");
  assert_string_equal(ifd_dtype_name((ifd_dtype_t)99), "INVALID");
  assert_string_equal(ifd_dtype_name((ifd_dtype_t)-1), "INVALID");
}

static void test_config_names(void **state) {
  (void)state;
  assert_string_equal(ifd_dtype_config_name(IFD_TYPE_FP32), "TYPE_FP32");
  assert_string_equal(ifd_dtype_config_name(IFD_TYPE_BYTES), "TYPE_STRING");
  assert_string_equal(ifd_dtype_config_name(IFD_TYPE_BOOL), "TYPE_BOOL");
  assert_string_equal(ifd_dtype_config_name(IFD_TYPE_INVALID), "TYPE_INVALID");
  assert_string_equal(ifd_dtype_config_name((ifd_dtype_t)15), "TYPE_INVALID");
}

static void test_from_name_rejects(void **state) {
  (void)state;
  assert_int_equal(ifd_dtype_from_name("FP3", 3), IFD_TYPE_INVALID);
  assert_int_equal(ifd_dtype_from_name("FP322", 5), IFD_TYPE_INVALID);
  assert_int_equal(ifd_dtype_from_name("fp32", 4), IFD_TYPE_INVALID);
  assert_int_equal(ifd_dtype_from_name("", 0), IFD_TYPE_INVALID);
  assert_int_equal(ifd_dtype_from_name("INVALID", 7), IFD_TYPE_INVALID);
  assert_int_equal(ifd_dtype_from_name("TYPE_FP32", 9), IFD_TYPE_INVALID);
  assert_int_equal(ifd_dtype_from_name(NULL, 0), IFD_TYPE_INVALID);
  /* Only `n` bytes are read: a longer buffer with a valid prefix works. */
  assert_int_equal(ifd_dtype_from_name("INT8xyz", 4), IFD_TYPE_INT8);
  assert_int_equal(ifd_dtype_from_name("INT16", 3), IFD_TYPE_INVALID);
}

static void test_sizes(void **state) {
  (void)state;
  assert_int_equal(ifd_dtype_size(IFD_TYPE_BOOL), 1);
  assert_int_equal(ifd_dtype_size(IFD_TYPE_UINT8), 1);
  assert_int_equal(ifd_dtype_size(IFD_TYPE_UINT16), 2);
  assert_int_equal(ifd_dtype_size(IFD_TYPE_UINT32), 4);
  assert_int_equal(ifd_dtype_size(IFD_TYPE_UINT64), 8);
  assert_int_equal(ifd_dtype_size(IFD_TYPE_INT8), 1);
  assert_int_equal(ifd_dtype_size(IFD_TYPE_INT16), 2);
  assert_int_equal(ifd_dtype_size(IFD_TYPE_INT32), 4);
  assert_int_equal(ifd_dtype_size(IFD_TYPE_INT64), 8);
  assert_int_equal(ifd_dtype_size(IFD_TYPE_FP16), 2);
  assert_int_equal(ifd_dtype_size(IFD_TYPE_FP32), 4);
  assert_int_equal(ifd_dtype_size(IFD_TYPE_FP64), 8);
  assert_int_equal(ifd_dtype_size(IFD_TYPE_BF16), 2);
  assert_int_equal(ifd_dtype_size(IFD_TYPE_BYTES), 0);
  assert_int_equal(ifd_dtype_size(IFD_TYPE_INVALID), 0);
  assert_int_equal(ifd_dtype_size((ifd_dtype_t)42), 0);
}

static void test_shape_count(void **state) {
  int64_t n = -7;
  (void)state;
  assert_int_equal(ifd_shape_count(NULL, 0, &n), 0);
  assert_int_equal(n, 1); /* a scalar */
  assert_int_equal(ifd_shape_count((int64_t[]){2, 3, 4}, 3, &n), 0);
  assert_int_equal(n, 24);
  assert_int_equal(ifd_shape_count((int64_t[]){5, 0, 7}, 3, &n), 0);
  assert_int_equal(n, 0);
  assert_int_equal(ifd_shape_count((int64_t[]){INT64_MAX}, 1, &n), 0);
  assert_true(n == INT64_MAX);
}

static void test_shape_count_errors(void **state) {
  int64_t n = 99;
  (void)state;
  assert_int_equal(ifd_shape_count((int64_t[]){2, -1}, 2, &n), IFD_EINVAL);
  assert_int_equal(ifd_shape_count((int64_t[]){-5}, 1, &n), IFD_EINVAL);
  /* A zero does not hide a negative dim further on. */
  assert_int_equal(ifd_shape_count((int64_t[]){0, -1}, 2, &n), IFD_EINVAL);
  assert_int_equal(ifd_shape_count((int64_t[]){INT64_MAX, 2}, 2, &n),
                   IFD_ETOOBIG);
  assert_int_equal(ifd_shape_count((int64_t[]){1LL << 32, 1LL << 31}, 2, &n),
                   IFD_ETOOBIG);
  assert_int_equal(n, 99); /* untouched on error */
  /* Just below the limit is fine. */
  assert_int_equal(
      ifd_shape_count((int64_t[]){1LL << 31, (1LL << 31) - 1}, 2, &n), 0);
}

static void test_byte_size(void **state) {
  int64_t b = 0;
  (void)state;
  assert_int_equal(
      ifd_shape_byte_size(IFD_TYPE_FP32, (int64_t[]){2, 16}, 2, &b), 0);
  assert_int_equal(b, 128);
  assert_int_equal(ifd_shape_byte_size(IFD_TYPE_INT64, NULL, 0, &b), 0);
  assert_int_equal(b, 8);
  assert_int_equal(ifd_shape_byte_size(IFD_TYPE_BOOL, (int64_t[]){0, 4}, 2, &b),
                   0);
  assert_int_equal(b, 0);
  assert_int_equal(ifd_shape_byte_size(IFD_TYPE_BYTES, (int64_t[]){2}, 1, &b),
                   IFD_EINVAL);
  assert_int_equal(ifd_shape_byte_size(IFD_TYPE_INVALID, (int64_t[]){2}, 1, &b),
                   IFD_EINVAL);
  assert_int_equal(ifd_shape_byte_size(IFD_TYPE_FP32, (int64_t[]){-1}, 1, &b),
                   IFD_EINVAL);
  /* The element count fits, the byte count does not. */
  assert_int_equal(
      ifd_shape_byte_size(IFD_TYPE_FP64, (int64_t[]){1LL << 61}, 1, &b),
      IFD_ETOOBIG);
  assert_int_equal(
      ifd_shape_byte_size(IFD_TYPE_FP64, (int64_t[]){1LL << 59}, 1, &b), 0);
  assert_true(b == (int64_t)1 << 62);
}

static void test_shape_matches(void **state) {
  (void)state;
  assert_int_equal(
      ifd_shape_matches((int64_t[]){-1, 16}, 2, (int64_t[]){4, 16}, 2), 1);
  assert_int_equal(
      ifd_shape_matches((int64_t[]){-1, 16}, 2, (int64_t[]){4, 15}, 2), 0);
  assert_int_equal(
      ifd_shape_matches((int64_t[]){-1, -1}, 2, (int64_t[]){0, 9}, 2), 1);
  assert_int_equal(ifd_shape_matches((int64_t[]){16}, 1, (int64_t[]){1, 16}, 2),
                   0);
  assert_int_equal(ifd_shape_matches((int64_t[]){-1}, 1, NULL, 0), 0);
  assert_int_equal(ifd_shape_matches(NULL, 0, NULL, 0), 1);
  assert_int_equal(ifd_shape_matches((int64_t[]){3}, 1, (int64_t[]){-1}, 1), 0);
}

static void test_shape_format(void **state) {
  char buf[64];
  (void)state;
  assert_string_equal(
      ifd_shape_format((int64_t[]){-1, 16}, 2, buf, sizeof(buf)), "[-1,16]");
  assert_string_equal(ifd_shape_format(NULL, 0, buf, sizeof(buf)), "[]");
  assert_string_equal(ifd_shape_format((int64_t[]){7}, 1, buf, sizeof(buf)),
                      "[7]");
  assert_string_equal(
      ifd_shape_format((int64_t[]){INT64_MAX, INT64_MIN}, 2, buf, sizeof(buf)),
      "[9223372036854775807,-9223372036854775808]");
  /* Exactly fits: "[1,2]" is 5 chars plus NUL. */
  assert_string_equal(ifd_shape_format((int64_t[]){1, 2}, 2, buf, 6), "[1,2]");
}

static void test_shape_format_truncates(void **state) {
  char buf[64];
  (void)state;
  memset(buf, 'x', sizeof(buf));
  ifd_shape_format((int64_t[]){1, 2, 3, 4, 5}, 5, buf, 8);
  assert_int_equal(strlen(buf), 7);
  assert_string_equal(buf, "[1,2...");
  assert_int_equal(buf[8], 'x'); /* nothing written past `size` */

  ifd_shape_format((int64_t[]){1, 2}, 2, buf, 5);
  assert_string_equal(buf, "[...");
  ifd_shape_format((int64_t[]){1, 2}, 2, buf, 3);
  assert_string_equal(buf, "..");
  ifd_shape_format((int64_t[]){1, 2}, 2, buf, 1);
  assert_string_equal(buf, "");
  buf[0] = 'q';
  ifd_shape_format((int64_t[]){1, 2}, 2, buf, 0);
  assert_int_equal(buf[0], 'q'); /* size 0: nothing written */

  /* Many dims into a small buffer. */
  int64_t many[IFD_MAX_DIMS];
  for (size_t i = 0; i < IFD_MAX_DIMS; i++) many[i] = 123456789;
  ifd_shape_format(many, IFD_MAX_DIMS, buf, sizeof(buf));
  assert_int_equal(strlen(buf), sizeof(buf) - 1);
  assert_memory_equal(buf + sizeof(buf) - 4, "...", 3);
}

static void test_bytes_validate(void **state) {
  /* "one", "", "xy" */
  static const unsigned char ok[] = {3, 0, 0, 0, 'o', 'n', 'e', 0,  0,
                                     0, 0, 2, 0, 0,   0,   'x', 'y'};
  (void)state;
  assert_int_equal(ifd_bytes_validate(ok, sizeof(ok), 3), 0);
  assert_int_equal(ifd_bytes_validate(NULL, 0, 0), 0);
  assert_int_equal(ifd_bytes_validate(ok, 0, 0), 0);
  assert_int_equal(ifd_bytes_validate(ok, 7, 1), 0);
  assert_int_equal(ifd_bytes_validate(ok, 11, 2), 0);
}

static void test_bytes_validate_malformed(void **state) {
  static const unsigned char ok[] = {3, 0, 0, 0, 'o', 'n', 'e', 0,  0,
                                     0, 0, 2, 0, 0,   0,   'x', 'y'};
  static const unsigned char huge[] = {0xff, 0xff, 0xff, 0xff, 'a'};
  static const unsigned char big_len[] = {0, 0, 0, 1, 'a', 'b'};
  (void)state;
  /* Too few elements in the buffer. */
  assert_int_equal(ifd_bytes_validate(ok, sizeof(ok), 4), IFD_EINVAL);
  /* Bytes left over after the last element. */
  assert_int_equal(ifd_bytes_validate(ok, sizeof(ok), 2), IFD_EINVAL);
  assert_int_equal(ifd_bytes_validate(ok, sizeof(ok), 0), IFD_EINVAL);
  /* Every truncation of a valid buffer fails. */
  for (size_t n = 1; n < sizeof(ok); n++) {
    if (n == 7 || n == 11) continue; /* element boundaries */
    assert_int_equal(ifd_bytes_validate(ok, n, 3), IFD_EINVAL);
  }
  /* A partial length prefix. */
  assert_int_equal(ifd_bytes_validate(ok, 2, 1), IFD_EINVAL);
  /* A length far beyond the buffer, including one that would wrap. */
  assert_int_equal(ifd_bytes_validate(huge, sizeof(huge), 1), IFD_EINVAL);
  assert_int_equal(ifd_bytes_validate(big_len, sizeof(big_len), 1), IFD_EINVAL);
  /* Negative count; data NULL with a size. */
  assert_int_equal(ifd_bytes_validate(ok, sizeof(ok), -1), IFD_EINVAL);
  assert_int_equal(ifd_bytes_validate(NULL, 4, 1), IFD_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names_round_trip),
      cmocka_unit_test(test_config_names),
      cmocka_unit_test(test_from_name_rejects),
      cmocka_unit_test(test_sizes),
      cmocka_unit_test(test_shape_count),
      cmocka_unit_test(test_shape_count_errors),
      cmocka_unit_test(test_byte_size),
      cmocka_unit_test(test_shape_matches),
      cmocka_unit_test(test_shape_format),
      cmocka_unit_test(test_shape_format_truncates),
      cmocka_unit_test(test_bytes_validate),
      cmocka_unit_test(test_bytes_validate_malformed),
  };
  return cmocka_run_group_tests_name("dtype", tests, NULL, NULL);
}
