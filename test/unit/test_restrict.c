/*
 * test/unit/test_restrict.c - net/restrict.c: parsing Triton's
 * --http-restricted-api / --grpc-restricted-protocol rules (groups, the
 * errors Triton gives), matching whole header fields (gRPC metadata), and
 * the streaming matcher the HTTP/1.1 parser feeds in pieces.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <stdint.h>
#include <string.h>

#include "net/restrict.h"

#define BIT(g) ((uint16_t)(1u << (g)))

static int add(ifd_restrict_t *r, const char *arg, ifd_errmsg_t *err) {
  ifd_errclear(err);
  return ifd_restrict_add(r, arg, "", "api", err);
}

static void test_groups(void **state) {
  (void)state;
  assert_int_equal(ifd_restrict_group("health", 6), IFD_API_HEALTH);
  assert_int_equal(ifd_restrict_group("model-repository", 16),
                   IFD_API_MODEL_REPOSITORY);
  assert_int_equal(ifd_restrict_group("logging", 7), IFD_API_LOGGING);
  assert_int_equal(ifd_restrict_group("Health", 6), IFD_API_NONE);
  assert_int_equal(ifd_restrict_group("healt", 5), IFD_API_NONE);
  assert_int_equal(ifd_restrict_group("", 0), IFD_API_NONE);
}

static void test_parse(void **state) {
  ifd_restrict_t r;
  ifd_errmsg_t err;

  (void)state;
  memset(&r, 0, sizeof(r));
  assert_false(ifd_restrict_on(&r, IFD_API_HEALTH));
  assert_false(ifd_restrict_on(NULL, IFD_API_HEALTH));
  assert_int_equal(
      add(&r, "model-repository,statistics:Admin-Key=s=cret", &err), 0);
  assert_true(ifd_restrict_on(&r, IFD_API_MODEL_REPOSITORY));
  assert_true(ifd_restrict_on(&r, IFD_API_STATISTICS));
  assert_false(ifd_restrict_on(&r, IFD_API_HEALTH));
  assert_false(ifd_restrict_on(&r, IFD_API_NONE));
  /* The key as given; the value is everything after the first '='. */
  assert_string_equal(ifd_restrict_header(&r, IFD_API_STATISTICS), "Admin-Key");
  assert_string_equal(r.rules[0].value, "s=cret");
  assert_int_equal(add(&r, "health:k=v", &err), 0);
  assert_string_equal(ifd_restrict_header(&r, IFD_API_HEALTH), "k");
  assert_int_equal(r.n_rules, 2);

  /* A group in two rules; the rule is refused whole. */
  assert_int_equal(add(&r, "trace,statistics:x=y", &err), IFD_EINVAL);
  assert_string_equal(err.text,
                      "restricted api 'statistics' can not be specified in "
                      "multiple config groups");
  assert_false(ifd_restrict_on(&r, IFD_API_TRACE));
  assert_int_equal(add(&r, "trace,trace:x=y", &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "'trace' can not be specified"));
  assert_int_equal(add(&r, "tracing:x=y", &err), IFD_EINVAL);
  assert_string_equal(err.text, "unknown restricted api 'tracing'");
  assert_int_equal(add(&r, "trace,:x=y", &err), IFD_EINVAL);
  assert_string_equal(err.text, "unknown restricted api ''");
  assert_int_equal(add(&r, "trace", &err), IFD_EINVAL);
  assert_int_equal(add(&r, "trace:x", &err), IFD_EINVAL);
  assert_int_equal(add(&r, ":x=y", &err), IFD_EINVAL);
  assert_int_equal(add(&r, "trace:=y", &err), IFD_EINVAL);
  assert_int_equal(add(&r, "trace:x=", &err), IFD_EINVAL);
  assert_int_equal(add(&r, "trace:a b=y", &err), IFD_EINVAL);
  assert_int_equal(r.n_rules, 2);
  ifd_restrict_free(&r);
  assert_int_equal(r.n_rules, 0);
  assert_int_equal(r.restricted, 0);

  /* gRPC: the prefix, and "protocol" in messages. */
  ifd_errclear(&err);
  assert_int_equal(ifd_restrict_add(&r, "inference:key=v",
                                    "triton-grpc-protocol-", "protocol", &err),
                   0);
  assert_string_equal(ifd_restrict_header(&r, IFD_API_INFERENCE),
                      "triton-grpc-protocol-key");
  assert_int_equal(ifd_restrict_add(&r, "inference:key=v",
                                    "triton-grpc-protocol-", "protocol", &err),
                   IFD_EINVAL);
  assert_string_equal(err.text,
                      "restricted protocol 'inference' can not be specified "
                      "in multiple config groups");
  ifd_restrict_free(&r);
}

static void test_match(void **state) {
  ifd_restrict_t r;
  ifd_errmsg_t err;
#define M(n, v)                                           \
  ifd_restrict_match(&r, (const uint8_t *)(n), strlen(n), \
                     (const uint8_t *)(v), strlen(v))

  (void)state;
  memset(&r, 0, sizeof(r));
  assert_int_equal(add(&r, "health,metadata:a=1", &err), 0);
  assert_int_equal(add(&r, "inference:b=2", &err), 0);
  assert_int_equal(M("a", "1"), BIT(IFD_API_HEALTH) | BIT(IFD_API_METADATA));
  assert_int_equal(M("A", "1"), BIT(IFD_API_HEALTH) | BIT(IFD_API_METADATA));
  assert_int_equal(M("b", "2"), BIT(IFD_API_INFERENCE));
  assert_int_equal(M("b", "1"), 0);
  assert_int_equal(M("a", "11"), 0);
  assert_int_equal(M("a", ""), 0);
  assert_int_equal(M("ab", "1"), 0);
  ifd_restrict_free(&r);
#undef M
}

/* Feeds `name: value` to the streaming matcher cut every `step` bytes. */
static void feed(const ifd_restrict_t *r, ifd_restrict_scan_t *s,
                 const char *name, const char *value, size_t step) {
  size_t i, n;

  for (i = 0, n = strlen(name); i < n; i += step)
    ifd_restrict_scan_name(r, s, name + i, n - i < step ? n - i : step);
  for (i = 0, n = strlen(value); i < n; i += step)
    ifd_restrict_scan_value(r, s, value + i, n - i < step ? n - i : step);
  ifd_restrict_scan_done(r, s);
}

static void test_scan(void **state) {
  ifd_restrict_t r;
  ifd_restrict_scan_t s;
  ifd_errmsg_t err;
  size_t step;

  (void)state;
  memset(&r, 0, sizeof(r));
  assert_int_equal(add(&r, "model-repository:admin-key=secret", &err), 0);
  assert_int_equal(add(&r, "statistics:admin=secret", &err), 0);
  for (step = 1; step <= 12; step++) {
    ifd_restrict_scan_reset(&s);
    feed(&r, &s, "Host", "x", step);
    feed(&r, &s, "admin-keys", "secret", step);
    feed(&r, &s, "admin-ke", "secret", step);
    feed(&r, &s, "admin-key", "secre", step);
    feed(&r, &s, "admin-key", "secret!", step);
    feed(&r, &s, "admin-key", "", step);
    assert_int_equal(s.ok, 0);
    feed(&r, &s, "ADMIN-Key", "secret", step);
    assert_int_equal(s.ok, BIT(IFD_API_MODEL_REPOSITORY));
    feed(&r, &s, "admin", "secret", step);
    assert_int_equal(s.ok,
                     BIT(IFD_API_MODEL_REPOSITORY) | BIT(IFD_API_STATISTICS));
    ifd_restrict_scan_reset(&s);
    assert_int_equal(s.ok, 0);
  }
  ifd_restrict_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_groups),
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_match),
      cmocka_unit_test(test_scan),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
