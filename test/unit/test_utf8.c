/*
 * test/unit/test_utf8.c - base/utf8.h, the one UTF-8 validator (the front
 * ends' outgoing text, the JSON writer, and proto/'s string fields): the
 * sequence length at every boundary of the well-formed ranges, whole-string
 * validity, and the U+FFFD repair.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "base/utf8.h"

static size_t seq(const char *s, size_t n) {
  return ifd_utf8_seq((const unsigned char *)s, n);
}

static void test_seq_bounds(void **state) {
  (void)state;
  assert_int_equal(seq("\x00", 1), 1);
  assert_int_equal(seq("\x7f", 1), 1);
  assert_int_equal(seq("\xc2\x80", 2), 2);         /* U+0080 */
  assert_int_equal(seq("\xdf\xbf", 2), 2);         /* U+07FF */
  assert_int_equal(seq("\xe0\xa0\x80", 3), 3);     /* U+0800 */
  assert_int_equal(seq("\xed\x9f\xbf", 3), 3);     /* U+D7FF */
  assert_int_equal(seq("\xee\x80\x80", 3), 3);     /* U+E000 */
  assert_int_equal(seq("\xef\xbf\xbf", 3), 3);     /* U+FFFF */
  assert_int_equal(seq("\xf0\x90\x80\x80", 4), 4); /* U+10000 */
  assert_int_equal(seq("\xf4\x8f\xbf\xbf", 4), 4); /* U+10FFFF */
}

static void test_seq_ill_formed(void **state) {
  (void)state;
  assert_int_equal(seq("\x80", 1), 0); /* stray continuation */
  assert_int_equal(seq("\xbf", 1), 0);
  assert_int_equal(seq("\xc0\x80", 2), 0);         /* overlong NUL */
  assert_int_equal(seq("\xc1\xbf", 2), 0);         /* overlong */
  assert_int_equal(seq("\xe0\x9f\xbf", 3), 0);     /* overlong U+07FF */
  assert_int_equal(seq("\xf0\x8f\xbf\xbf", 4), 0); /* overlong U+FFFF */
  assert_int_equal(seq("\xed\xa0\x80", 3), 0);     /* surrogate U+D800 */
  assert_int_equal(seq("\xed\xbf\xbf", 3), 0);     /* surrogate U+DFFF */
  assert_int_equal(seq("\xf4\x90\x80\x80", 4), 0); /* U+110000 */
  assert_int_equal(seq("\xf5\x80\x80\x80", 4), 0);
  assert_int_equal(seq("\xff", 1), 0);
  assert_int_equal(seq("\xe2\x82", 2), 0);     /* truncated */
  assert_int_equal(seq("\xe2\x82\xac", 2), 0); /* cut by n */
  assert_int_equal(seq("\xe2\x28\xac", 3), 0); /* bad continuation */
}

static void test_valid(void **state) {
  (void)state;
  assert_true(ifd_utf8_valid("", 0));
  assert_true(ifd_utf8_valid("plain ascii", 11));
  assert_true(ifd_utf8_valid("a\0b", 3));
  assert_true(ifd_utf8_valid("\xe2\x82\xac 5", 5));
  assert_true(ifd_utf8_valid("x\xf0\x9f\x98\x80y", 6));
  assert_false(ifd_utf8_valid("x\xf0\x9f\x98", 4));
  assert_false(ifd_utf8_valid("ok\xc3", 3));
  assert_false(ifd_utf8_valid("\xed\xa0\x80", 3));
}

static void test_repair(void **state) {
  char out[64];
  size_t n;
  (void)state;
  n = ifd_utf8_repair(
      "a\xff"
      "b",
      3, out);
  assert_int_equal(n, 5);
  assert_memory_equal(out,
                      "a\xef\xbf\xbd"
                      "b",
                      5);
  /* Each byte of an ill-formed sequence becomes one U+FFFD. */
  n = ifd_utf8_repair("\xe2\x82", 2, out);
  assert_int_equal(n, 6);
  assert_memory_equal(out, "\xef\xbf\xbd\xef\xbf\xbd", 6);
  /* Well-formed sequences pass through untouched. */
  n = ifd_utf8_repair("\xc3\xa9\x80", 3, out);
  assert_int_equal(n, 5);
  assert_memory_equal(out, "\xc3\xa9\xef\xbf\xbd", 5);
  assert_true(ifd_utf8_valid(out, n));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_seq_bounds),
      cmocka_unit_test(test_seq_ill_formed),
      cmocka_unit_test(test_valid),
      cmocka_unit_test(test_repair),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
