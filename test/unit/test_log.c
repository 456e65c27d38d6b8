/*
 * test/unit/test_log.c - base/log.c: messages written as JSON strings
 * (tritonserver's log message escaping), cut long messages, and the line
 * shapes of both formats.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

static size_t esc(char *out, size_t cap, const char *msg) {
  size_t n = ifd_log_escape(out, cap, msg, strlen(msg));
  out[n] = '\0';
  return n;
}

static void test_escape(void **state) {
  char out[256];
  (void)state;
  esc(out, sizeof(out), "AsyncLoad() 'simple'");
  assert_string_equal(out, "\"AsyncLoad() 'simple'\"");
  esc(out, sizeof(out), "a \"b\" c\\d");
  assert_string_equal(out, "\"a \\\"b\\\" c\\\\d\"");
  esc(out, sizeof(out), "1\n2\r3\t4\b5\f6");
  assert_string_equal(out, "\"1\\n2\\r3\\t4\\b5\\f6\"");
  /* Other control characters (ESC, BEL) as \u00XX; UTF-8 and / as is. */
  esc(out, sizeof(out), "\x1b[31mred\x07 caf\xc3\xa9 a/b");
  assert_string_equal(out, "\"\\u001B[31mred\\u0007 caf\xc3\xa9 a/b\"");
  esc(out, sizeof(out), "");
  assert_string_equal(out, "\"\"");
}

/* A message longer than the room is cut before an escape, still quoted. */
static void test_escape_cut(void **state) {
  char out[16];
  size_t n;
  (void)state;
  n = esc(out, sizeof(out), "abcdefghijklmnopqrstuvwxyz");
  assert_true(n < sizeof(out));
  assert_int_equal(out[0], '"');
  assert_int_equal(out[n - 1], '"');
  n = esc(out, sizeof(out), "\n\n\n\n\n\n\n\n\n\n");
  assert_int_equal(out[n - 1], '"');
  assert_int_equal(out[n - 2], 'n');
  assert_int_equal(out[n - 3], '\\');
  assert_int_equal(ifd_log_escape(out, 2, "x", 1), 0);
}

static char *read_all(const char *path) {
  FILE *f = fopen(path, "r");
  static char buf[65536];
  size_t n;
  assert_non_null(f);
  n = fread(buf, 1, sizeof(buf) - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* Lines as tritonserver writes them: a forged line in a message stays in
 * its own line's JSON string. */
static void test_lines(void **state) {
  char path[] = "/tmp/ifd_log_XXXXXX";
  int fd = mkstemp(path);
  regex_t re;
  char *text, *nl;
  (void)state;
  assert_true(fd >= 0);
  close(fd);
  assert_true(ifd_log_escapes()); /* the test runs without the variable */
  assert_int_equal(ifd_log_open_file(path), 0);
  ifd_log_set_format(IFD_LOG_FORMAT_DEFAULT);
  IFD_INFO("unknown input '%s'",
           "x\nI0205 18:34:18.707423 1 file.cc:123] forged");
  ifd_log_set_format(IFD_LOG_FORMAT_ISO8601);
  IFD_WARN("plain");
  ifd_log_set_format(IFD_LOG_FORMAT_DEFAULT);
  text = read_all(path);
  nl = strchr(text, '\n');
  assert_non_null(nl);
  *nl = '\0';
  assert_int_equal(
      regcomp(&re,
              "^I[0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6} [0-9]+ "
              "test_log\\.c:[0-9]+] \"unknown input 'x\\\\nI0205 "
              "18:34:18\\.707423 1 file\\.cc:123] forged'\"$",
              REG_EXTENDED | REG_NOSUB),
      0);
  assert_int_equal(regexec(&re, text, 0, NULL, 0), 0);
  regfree(&re);
  assert_int_equal(
      regcomp(&re,
              "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z W "
              "[0-9]+ test_log\\.c:[0-9]+] \"plain\"\n$",
              REG_EXTENDED | REG_NOSUB),
      0);
  assert_int_equal(regexec(&re, nl + 1, 0, NULL, 0), 0);
  regfree(&re);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_escape),
      cmocka_unit_test(test_escape_cut),
      cmocka_unit_test(test_lines),
  };
  unsetenv("TRITON_SERVER_ESCAPE_LOG_MESSAGES");
  return cmocka_run_group_tests(tests, NULL, NULL);
}
