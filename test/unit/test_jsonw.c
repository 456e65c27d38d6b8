/*
 * test/unit/test_jsonw.c - the JSON number writer of base/jsonw.c: FP32
 * values are written as the shortest decimal that reads back to the same
 * float, through a printf-free fast path checked here against strtof.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/internal.h"

/* The shortest %.Ng that round-trips: the reference. Our writer spells
 * numbers up to 1e7 without an exponent ("1000000.0" where %g says "1e+06"),
 * so for those the reference is the digit count of that plain form. */
static int reference_len(float v) {
  char tmp[40];
  int p, n = 0;
  for (p = 1; p <= 9; p++) {
    n = snprintf(tmp, sizeof(tmp), "%.*g", p, (double)v);
    if (strtof(tmp, NULL) == v) break;
  }
  if (strchr(tmp, 'e') != NULL && fabsf(v) >= 1.0f && fabsf(v) < 1e7f)
    n = snprintf(tmp, sizeof(tmp), "%.0f", (double)v);
  return n;
}

static void check(float v) {
  ifd_hbuf_t b;
  char text[64];
  float back;
  ifd_hbuf_init(&b, 0);
  ifd_json_f32(&b, v);
  assert_false(b.oom);
  assert_true(b.len > 0 && b.len < sizeof(text));
  memcpy(text, b.data, b.len);
  text[b.len] = '\0';
  back = strtof(text, NULL);
  if (memcmp(&back, &v, sizeof(v)) != 0) {
    fprintf(stderr, "%.9g written as '%s' reads back as %.9g\n", (double)v,
            text, (double)back);
    fail();
  }
  /* A float stays a float: there is always a '.' or an exponent. */
  assert_non_null(strpbrk(text, ".eE"));
  /* No longer than the shortest %g form, plus the ".0" it may need. */
  assert_true((int)b.len <= reference_len(v) + 2);
  ifd_hbuf_free(&b);
}

static void test_exact_and_edge_values(void **state) {
  static const float values[] = {0.5f,        1.0f,       1.5f,
                                 2.0f,        0.1f,       0.3f,
                                 3.14159f,    1e-5f,      9.99999e-6f,
                                 1e7f,        9999999.0f, 16777216.0f,
                                 16777217.0f, 123456.7f,  0.000123f,
                                 65504.0f,    1e-45f,     3.4e38f,
                                 -0.25f,      -1e-3f,     1.17549435e-38f,
                                 0.1f + 0.2f, 100.0f,     1e6f};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
    check(values[i]);
    check(-values[i]);
    check(nextafterf(values[i], INFINITY));
    check(nextafterf(values[i], 0.0f));
  }
}

static void test_short_forms(void **state) {
  ifd_hbuf_t b;
  (void)state;
  ifd_hbuf_init(&b, 0);
  ifd_json_f32(&b, 0.5f);
  ifd_json_f32(&b, 0.1f);
  ifd_json_f32(&b, 2.0f);
  ifd_json_f32(&b, -0.0f);
  ifd_json_f32(&b, 1e6f);
  assert_int_equal(b.len, strlen("0.50.12.0-0.01000000.0"));
  assert_memory_equal(b.data, "0.50.12.0-0.01000000.0", b.len);
  ifd_hbuf_free(&b);
}

/* Every exponent in range and random mantissas: bit patterns, not values,
 * so the whole float space is sampled. */
static void test_random_bits(void **state) {
  uint64_t x = 0x9e3779b97f4a7c15ull;
  long i;
  (void)state;
  for (i = 0; i < 2000000; i++) {
    uint32_t bits;
    float v;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    bits = (uint32_t)(x >> 32);
    memcpy(&v, &bits, sizeof(v));
    if (!isfinite(v)) continue;
    check(v);
  }
}

/* Whole numbers below 1e7 take their own path: exactly "N.0" (what the
 * general path writes for them) and the round trip; every one up to 2^20,
 * every 13th beyond (ASan runs this too). */
static void test_whole_numbers(void **state) {
  ifd_hbuf_t b;
  char want[32];
  int32_t i;
  int n;
  (void)state;
  ifd_hbuf_init(&b, 0);
  for (i = -9999999; i <= 9999999;
       i += (i < -1048576 || i > 1048576) ? 13 : 1) {
    b.len = 0;
    ifd_json_f32(&b, (float)i);
    n = snprintf(want, sizeof(want), "%d.0", (int)i);
    if (i == 0) n = snprintf(want, sizeof(want), "0.0");
    if (b.len != (size_t)n || memcmp(b.data, want, b.len) != 0) {
      fprintf(stderr, "%d written as '%.*s'\n", (int)i, (int)b.len, b.data);
      fail();
    }
    if (i % 997 == 0) check((float)i);
  }
  /* Just past the path's bound: 1e7 is written with an exponent. */
  check(1e7f);
  check(-1e7f);
  check(nextafterf(1e7f, 0.0f));
  ifd_hbuf_free(&b);
}

/* Values like a tensor's: uniform in [-1000, 1000). */
static void test_random_values(void **state) {
  long i;
  (void)state;
  srand(7);
  for (i = 0; i < 1000000; i++)
    check((float)(((double)rand() / RAND_MAX) * 2000.0 - 1000.0));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exact_and_edge_values),
      cmocka_unit_test(test_short_forms),
      cmocka_unit_test(test_random_bits),
      cmocka_unit_test(test_whole_numbers),
      cmocka_unit_test(test_random_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
