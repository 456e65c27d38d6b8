/*
 * test/unit/test_json_f32.c - ifd__json_number_f32() must give exactly
 * (float)strtod() for every number text, whichever path it takes.
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

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static void check_text(const char *text) {
  float got, want = (float)strtod(text, NULL);
  const char *end = text + strlen(text);
  const char *after = ifd__json_number_f32(text, end, &got);
  assert_ptr_equal(after, end);
  if (memcmp(&got, &want, sizeof(got)) != 0) {
    fprintf(stderr, "'%s': got %.9g, (float)strtod gives %.9g\n", text,
            (double)got, (double)want);
    fail();
  }
}

/* Integers past int64_t never get here: the validator rejects them, as
 * jansson did. */
static void test_fixed_cases(void **state) {
  static const char *cases[] = {"0",
                                "-0",
                                "0.0",
                                "-0.0",
                                "1",
                                "-1",
                                "0.5",
                                "0.1",
                                "0.10000000149011612",
                                "3.4028234663852886e38",
                                "3.4028235677973366e38",
                                "1e38",
                                "1e39",
                                "1e-38",
                                "1.401298464324817e-45",
                                "7e-46",
                                "1e-50",
                                "16777217",
                                "16777216.5",
                                "0.30000001192092896",
                                "123456789012345678",
                                "1234567890123456789012.5",
                                "1.00000005960464477539",
                                "2.5e-3",
                                "9007199254740993",
                                "4.9406564584124654e-324",
                                "1e22",
                                "1e23",
                                "-65504.0",
                                "65504.5"};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) check_text(cases[i]);
}

/* Floats printed the way clients print them: as doubles (17 digits), and
 * their shortest forms; plus neighbours of halfway points. */
static void test_random_floats(void **state) {
  char text[64];
  long i;
  (void)state;
  for (i = 0; i < 1000000; i++) {
    uint32_t bits = (uint32_t)next();
    float f;
    memcpy(&f, &bits, sizeof(f));
    if (!isfinite(f)) continue;
    snprintf(text, sizeof(text), "%.17g", (double)f);
    check_text(text);
    snprintf(text, sizeof(text), "%.9g", (double)f);
    check_text(text);
    /* Halfway between f and its successor: the hardest case. */
    snprintf(text, sizeof(text), "%.17g",
             ((double)f + (double)nextafterf(f, INFINITY)) / 2);
    check_text(text);
  }
}

/* Arbitrary decimal strings: 1 to 20 digits, a point anywhere, exponents. */
static void test_random_decimals(void **state) {
  char text[64];
  long i;
  (void)state;
  for (i = 0; i < 1000000; i++) {
    int nd = 1 + (int)(next() % 20), point = (int)(next() % (nd + 1)), k, n = 0;
    /* A JSON integer is validated to fit int64_t before it gets here. */
    if (point == 0 || point == nd) {
      point = 0;
      if (nd > 18) nd = 18;
    }
    if (next() & 1) text[n++] = '-';
    for (k = 0; k < nd; k++) {
      if (k == point && k > 0) text[n++] = '.';
      text[n++] = (char)('0' + (k == 0 ? 1 + next() % 9 : next() % 10));
    }
    if (next() % 3 == 0)
      n += snprintf(text + n, sizeof(text) - (size_t)n, "e%d",
                    (int)(next() % 80) - 40);
    text[n] = '\0';
    check_text(text);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixed_cases),
      cmocka_unit_test(test_random_floats),
      cmocka_unit_test(test_random_decimals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
