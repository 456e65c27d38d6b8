/*
 * test/unit/test_forward.c - net/forward.c and frontend/forward.c: headers
 * forwarded as parameters. Whole headers (gRPC metadata) and HTTP/1.1's pieces
 * (a name or value split anywhere, empty values), partial and case-insensitive
 * matching, and the parameters appended after a request's own ones.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <string.h>

#include "core/infer.h"
#include "frontend/forward.h"
#include "net/forward.h"

static ifd_fwd_re_t compile(const char *pattern) {
  ifd_fwd_re_t re;
  ifd_errmsg_t err;
  ifd_errclear(&err);
  assert_int_equal(ifd__fwd_compile(&re, pattern, &err), 0);
  return re;
}

static void test_compile_and_match(void **state) {
  ifd_fwd_re_t re = compile("fwd-[0-9]+");
  ifd_errmsg_t err;
  ifd_fwd_re_t bad;
  (void)state;
  assert_true(ifd__fwd_match(&re, "x-FWD-12"));
  assert_true(ifd__fwd_match(&re, "fwd-1-tail"));
  assert_false(ifd__fwd_match(&re, "fwd-"));
  ifd__fwd_re_free(&re);
  ifd_errclear(&err);
  assert_int_equal(ifd__fwd_compile(&bad, "a(", &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "at offset 2"));
}

/* tritonserver's patterns are RE2's, case-insensitive unless they say
 * otherwise; $ only at the very end; RE2 syntax POSIX ERE lacks. */
static void test_re2_syntax(void **state) {
  ifd_fwd_re_t re = compile("(?-i)^X-Id-\\d+$");
  (void)state;
  assert_true(ifd__fwd_match(&re, "X-Id-12"));
  assert_false(ifd__fwd_match(&re, "x-id-12"));
  assert_false(ifd__fwd_match(&re, "X-Id-12\n"));
  assert_false(ifd__fwd_match(&re, "X-Id-"));
  ifd__fwd_re_free(&re);
  re = compile("^(?P<pre>x-)(?:a|b)\\z|\\bTrace\\b|[[:digit:]]{3}");
  assert_true(ifd__fwd_match(&re, "X-A"));
  assert_false(ifd__fwd_match(&re, "x-ab"));
  assert_true(ifd__fwd_match(&re, "my-trace-id"));
  assert_true(ifd__fwd_match(&re, "h123"));
  assert_false(ifd__fwd_match(&re, "h12"));
  ifd__fwd_re_free(&re);
  re = compile("\\Qa.b\\E|\\p{Greek}");
  assert_true(ifd__fwd_match(&re, "xa.by"));
  assert_false(ifd__fwd_match(&re, "axb"));
  assert_true(ifd__fwd_match(&re, "x-\xce\xb1")); /* alpha, in UTF-8 */
  assert_false(ifd__fwd_match(&re, "x-\xce"));    /* invalid UTF-8 */
  ifd__fwd_re_free(&re);
  /* Catastrophic backtracking is cut off (no match), not run for long. */
  re = compile("^(a+)+$");
  assert_false(
      ifd__fwd_match(&re, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"));
  ifd__fwd_re_free(&re);
}

static void test_whole_headers(void **state) {
  ifd_fwd_re_t re = compile("^x-");
  ifd_fwd_buf_t b;
  (void)state;
  memset(&b, 0, sizeof(b));
  assert_int_equal(ifd__fwd_add(&b, &re, "x-a", 3, "1", 1), 0);
  assert_int_equal(ifd__fwd_add(&b, &re, "user-agent", 10, "grpc", 4), 0);
  assert_int_equal(ifd__fwd_add(&b, &re, "X-b", 3, "", 0), 0);
  assert_int_equal(b.n, 2);
  assert_int_equal(b.len, 11);
  assert_memory_equal(b.data,
                      "x-a\0"
                      "1\0"
                      "X-b\0"
                      "\0",
                      11);
  ifd__fwd_reset(&b);
  assert_int_equal(b.n, 0);
  assert_int_equal(b.len, 0);
  ifd__fwd_free(&b);
  ifd__fwd_re_free(&re);
}

static void test_pieces(void **state) {
  ifd_fwd_re_t re = compile("^x-fwd");
  ifd_fwd_buf_t b;
  (void)state;
  memset(&b, 0, sizeof(b));
  /* "X-Fwd-Long: some value" in pieces, then "Host: h", then an empty
   * "x-fwd-empty:", then one longer than the first allocation. */
  assert_int_equal(ifd__fwd_name(&b, "X-F", 3), 0);
  assert_int_equal(ifd__fwd_name(&b, "wd-Long", 7), 0);
  assert_int_equal(ifd__fwd_value(&b, "some ", 5), 0);
  assert_int_equal(ifd__fwd_value(&b, "value", 5), 0);
  assert_int_equal(ifd__fwd_end(&b, &re), 0);
  assert_int_equal(ifd__fwd_name(&b, "Host", 4), 0);
  assert_int_equal(ifd__fwd_value(&b, "h", 1), 0);
  assert_int_equal(ifd__fwd_end(&b, &re), 0);
  assert_int_equal(ifd__fwd_name(&b, "x-fwd-empty", 11), 0);
  assert_int_equal(ifd__fwd_end(&b, &re), 0);
  {
    char big[1000];
    memset(big, 'v', sizeof(big));
    assert_int_equal(ifd__fwd_name(&b, "x-fwd-big", 9), 0);
    assert_int_equal(ifd__fwd_value(&b, big, sizeof(big)), 0);
    assert_int_equal(ifd__fwd_end(&b, &re), 0);
  }
  assert_int_equal(b.n, 3);
  assert_string_equal(b.data, "X-Fwd-Long");
  assert_string_equal(b.data + 11, "some value");
  assert_string_equal(b.data + 22, "x-fwd-empty");
  assert_string_equal(b.data + 34, "");
  assert_string_equal(b.data + 35, "x-fwd-big");
  assert_int_equal(strlen(b.data + 45), 1000);
  ifd__fwd_free(&b);
  ifd__fwd_re_free(&re);
}

static void test_apply(void **state) {
  ifd_fwd_re_t re = compile("^h");
  ifd_fwd_buf_t b;
  ifd_request_t *req = ifd_request_new(NULL);
  ifd_errmsg_t err;
  ifd_param_t *p;
  uint32_t i;
  (void)state;
  memset(&b, 0, sizeof(b));
  /* Three parameters of the request's own, in an exactly sized array. */
  req->params = ifd_pool_calloc(&req->pool, 3, sizeof(ifd_param_t));
  for (i = 0; i < 3; i++) {
    req->params[i].key = "own";
    req->params[i].type = IFD_PARAM_INT;
    req->params[i].v.i = i;
  }
  req->n_params = 3;
  assert_int_equal(ifd__fwd_add(&b, &re, "h1", 2, "a", 1), 0);
  assert_int_equal(ifd__fwd_add(&b, &re, "h2", 2, "bb", 2), 0);
  ifd_errclear(&err);
  assert_int_equal(ifd__fwd_apply(req, b.data, b.len, b.n, &err), 0);
  assert_int_equal(req->n_params, 5);
  assert_int_equal(req->params[2].v.i, 2);
  assert_string_equal(req->params[3].key, "h1");
  assert_int_equal(req->params[3].type, IFD_PARAM_STRING);
  assert_string_equal(req->params[3].v.s, "a");
  assert_string_equal(req->params[4].v.s, "bb");
  /* The array keeps the capacity ifd_request_add_param grows from. */
  for (i = 0; i < 5; i++) {
    p = ifd_request_add_param(req, "more", 4);
    assert_non_null(p);
  }
  assert_int_equal(req->n_params, 10);
  assert_string_equal(req->params[4].v.s, "bb");
  assert_int_equal(ifd__fwd_apply(req, NULL, 0, 0, &err), 0);
  ifd_request_unref(req);
  ifd__fwd_free(&b);
  ifd__fwd_re_free(&re);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_compile_and_match),
      cmocka_unit_test(test_re2_syntax),
      cmocka_unit_test(test_whole_headers),
      cmocka_unit_test(test_pieces),
      cmocka_unit_test(test_apply),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
