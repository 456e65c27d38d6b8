/*
 * test/unit/test_pbtext.c - tests for the protobuf text-format parser
 * (proto/pbtext.c) over the schemas in test/unit/pbtest.proto and
 * pbtest2.proto: every syntax form, exact error positions, integer limits,
 * escapes, malformed and truncated input, and a text -> JSON round trip.
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

#include "pbtest.pb-c.h"
#include "pbtest2.pb-c.h"
#include "proto/pbtext.h"

#define FILE_NAME "t.pbtxt"

/* Parses `len` bytes into a pbtest.All, returning the code; *out set on 0. */
static int parse_all(const char *text, size_t len, Pbtest__All **out,
                     ifd_errmsg_t *err) {
  ProtobufCMessage *m = (ProtobufCMessage *)(uintptr_t)1;
  int rc;
  ifd_errclear(err);
  rc =
      ifd_pbtext_parse(&pbtest__all__descriptor, text, len, FILE_NAME, &m, err);
  if (rc != 0) {
    /* The contract: no message on failure, and a located message. */
    assert_null(m);
    assert_int_equal(err->code, rc);
    if (rc == IFD_EPARSE)
      assert_memory_equal(err->text, FILE_NAME ":", strlen(FILE_NAME) + 1);
  } else {
    assert_non_null(m);
  }
  *out = (Pbtest__All *)m;
  return rc;
}

static Pbtest__All *ok_n(const char *text, size_t len) {
  ifd_errmsg_t err;
  Pbtest__All *m;
  int rc = parse_all(text, len, &m, &err);
  if (rc != 0) print_error("unexpected error: %s\ninput: %s\n", err.text, text);
  assert_int_equal(rc, 0);
  return m;
}

static Pbtest__All *ok(const char *text) {
  return ok_n(text, strlen(text));
}

static void free_all(Pbtest__All *m) {
  protobuf_c_message_free_unpacked(&m->base, NULL);
}

/* Asserts that parsing fails with a message containing `want`. */
static void err_n(const char *text, size_t len, const char *want) {
  ifd_errmsg_t err;
  Pbtest__All *m;
  int rc = parse_all(text, len, &m, &err);
  if (rc != IFD_EPARSE || strstr(err.text, want) == NULL)
    print_error("input: %.*s\ngot: %d %s\nwant: %s\n", (int)len, text, rc,
                err.text, want);
  assert_int_equal(rc, IFD_EPARSE);
  assert_non_null(strstr(err.text, want));
}

static void err(const char *text, const char *want) {
  err_n(text, strlen(text), want);
}

/* Asserts the exact error text, position included. */
static void err_exact(const char *text, const char *want) {
  ifd_errmsg_t e;
  Pbtest__All *m;
  int rc = parse_all(text, strlen(text), &m, &e);
  if (rc == 0) free_all(m);
  assert_int_equal(rc, IFD_EPARSE);
  assert_string_equal(e.text, want);
}

/* ---- valid documents ------------------------------------------------------
 */

static void test_empty_input(void **state) {
  Pbtest__All *m;
  const char *blank[] = {"", "   \n\t\r\n", "# only a comment", "#c\n\n#d\n",
                         "\xef\xbb\xbf"};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(blank) / sizeof(blank[0]); i++) {
    m = ok(blank[i]);
    assert_int_equal(m->f_int32, 0);
    assert_ptr_equal(m->f_string, protobuf_c_empty_string);
    assert_int_equal(m->n_r_int32, 0);
    assert_null(m->r_int32);
    assert_null(m->f_inner);
    assert_int_equal(m->f_enum, PBTEST__COLOR__COLOR_UNSPECIFIED);
    assert_int_equal(m->choice_case, PBTEST__ALL__CHOICE__NOT_SET);
    free_all(m);
  }
  /* A NULL text of length 0 is an empty document too. */
  m = ok_n(NULL, 0);
  free_all(m);
}

static void test_all_scalars(void **state) {
  Pbtest__All *m;
  (void)state;
  m =
      ok("f_int32: -1\n"
         "f_int64: -1234567890123\n"
         "f_uint32: 4000000000\n"
         "f_uint64: 12345678901234567890\n"
         "f_sint32: -7\n"
         "f_sint64: -8\n"
         "f_fixed32: 9\n"
         "f_fixed64: 10\n"
         "f_sfixed32: -11\n"
         "f_sfixed64: -12\n"
         "f_float: 1.5\n"
         "f_double: -2.25e2\n"
         "f_bool: true\n"
         "f_string: \"hello\"\n"
         "f_bytes: \"\\000\\001b\"\n"
         "f_enum: BLUE\n");
  assert_int_equal(m->f_int32, -1);
  assert_true(m->f_int64 == -1234567890123LL);
  assert_int_equal(m->f_uint32, 4000000000u);
  assert_true(m->f_uint64 == 12345678901234567890ULL);
  assert_int_equal(m->f_sint32, -7);
  assert_true(m->f_sint64 == -8);
  assert_int_equal(m->f_fixed32, 9);
  assert_true(m->f_fixed64 == 10);
  assert_int_equal(m->f_sfixed32, -11);
  assert_true(m->f_sfixed64 == -12);
  assert_true(m->f_float == 1.5f);
  assert_true(m->f_double == -225.0);
  assert_true(m->f_bool);
  assert_string_equal(m->f_string, "hello");
  assert_int_equal(m->f_bytes.len, 3);
  assert_memory_equal(m->f_bytes.data, "\0\1b", 3);
  assert_int_equal(m->f_enum, PBTEST__COLOR__BLUE);
  free_all(m);
}

/* Reads integer field `name` of `m`, sign-extended to 64 bits. */
static uint64_t read_int(const ProtobufCMessage *m, const char *name) {
  const ProtobufCFieldDescriptor *f =
      protobuf_c_message_descriptor_get_field_by_name(m->descriptor, name);
  const char *p = (const char *)m + f->offset;
  int32_t i32;
  uint32_t u32;
  uint64_t u64;
  switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
      memcpy(&i32, p, 4);
      return (uint64_t)(int64_t)i32;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
      memcpy(&u32, p, 4);
      return u32;
    default:
      memcpy(&u64, p, 8);
      return u64;
  }
}

static void test_integer_limits(void **state) {
  static const struct {
    const char *field, *text;
    int ok;
    uint64_t want;
  } cases[] = {
      {"f_int32", "2147483647", 1, 2147483647},
      {"f_int32", "-2147483648", 1, (uint64_t)INT64_C(-2147483648)},
      {"f_int32", "2147483648", 0, 0},
      {"f_int32", "-2147483649", 0, 0},
      {"f_int32", "0x7fffffff", 1, 0x7fffffff},
      {"f_int32", "0x80000000", 0, 0},
      {"f_int32", "-0x80000000", 1, (uint64_t)INT64_C(-2147483648)},
      {"f_int32", "- 5", 1, (uint64_t)INT64_C(-5)},
      {"f_sint32", "-2147483648", 1, (uint64_t)INT64_C(-2147483648)},
      {"f_sint32", "2147483648", 0, 0},
      {"f_sfixed32", "2147483647", 1, 2147483647},
      {"f_sfixed32", "-2147483649", 0, 0},
      {"f_uint32", "4294967295", 1, 4294967295u},
      {"f_uint32", "4294967296", 0, 0},
      {"f_uint32", "-1", 0, 0},
      {"f_uint32", "-0", 1, 0},
      {"f_uint32", "0xFFFFFFFF", 1, 4294967295u},
      {"f_fixed32", "4294967296", 0, 0},
      {"f_fixed32", "-3", 0, 0},
      {"f_int64", "9223372036854775807", 1, INT64_MAX},
      {"f_int64", "-9223372036854775808", 1, (uint64_t)INT64_MIN},
      {"f_int64", "9223372036854775808", 0, 0},
      {"f_int64", "-9223372036854775809", 0, 0},
      {"f_sint64", "-9223372036854775808", 1, (uint64_t)INT64_MIN},
      {"f_sint64", "9223372036854775808", 0, 0},
      {"f_sfixed64", "-0x8000000000000000", 1, (uint64_t)INT64_MIN},
      {"f_sfixed64", "0x8000000000000000", 0, 0},
      {"f_uint64", "18446744073709551615", 1, UINT64_MAX},
      {"f_uint64", "18446744073709551616", 0, 0},
      {"f_uint64", "0xffffffffffffffff", 1, UINT64_MAX},
      {"f_uint64", "0x10000000000000000", 0, 0},
      {"f_uint64", "-1", 0, 0},
      {"f_uint64", "99999999999999999999999999", 0, 0},
      {"f_fixed64", "18446744073709551615", 1, UINT64_MAX},
      {"f_fixed64", "-1", 0, 0},
      {"f_int32", "017", 1, 15},
      {"f_int32", "0", 1, 0},
      {"f_int32", "0X1f", 1, 31},
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char text[128], want[128];
    snprintf(text, sizeof(text), "%s: %s", cases[i].field, cases[i].text);
    if (cases[i].ok) {
      Pbtest__All *m = ok(text);
      if (read_int(&m->base, cases[i].field) != cases[i].want)
        print_error("case %zu: %s\n", i, text);
      assert_true(read_int(&m->base, cases[i].field) == cases[i].want);
      free_all(m);
    } else {
      const ProtobufCFieldDescriptor *f =
          protobuf_c_message_descriptor_get_field_by_name(
              &pbtest__all__descriptor, cases[i].field);
      static const char *names[] = {
          [PROTOBUF_C_TYPE_INT32] = "int32",
          [PROTOBUF_C_TYPE_SINT32] = "sint32",
          [PROTOBUF_C_TYPE_SFIXED32] = "sfixed32",
          [PROTOBUF_C_TYPE_INT64] = "int64",
          [PROTOBUF_C_TYPE_SINT64] = "sint64",
          [PROTOBUF_C_TYPE_SFIXED64] = "sfixed64",
          [PROTOBUF_C_TYPE_UINT32] = "uint32",
          [PROTOBUF_C_TYPE_FIXED32] = "fixed32",
          [PROTOBUF_C_TYPE_UINT64] = "uint64",
          [PROTOBUF_C_TYPE_FIXED64] = "fixed64",
      };
      snprintf(want, sizeof(want),
               FILE_NAME ":1:%zu: value out of range for %s field '%s'",
               strlen(cases[i].field) + 3, names[f->type], cases[i].field);
      err_exact(text, want);
    }
  }
}

static void test_bad_integers(void **state) {
  (void)state;
  err_exact("f_int32: abc",
            FILE_NAME ":1:10: expected integer for field 'f_int32', got 'abc'");
  err("f_int32: 1.5", "expected integer for field 'f_int32', got '1.5'");
  err("f_int32: 1e5", "expected integer for field 'f_int32', got '1e5'");
  err("f_int32: 08", "expected integer for field 'f_int32', got '08'");
  err("f_int32: 0x", "expected integer for field 'f_int32', got '0x'");
  err("f_int32: 12abc", "got '12abc'");
  err("f_int32: \"5\"", "expected integer for field 'f_int32', got '\"5\"'");
  err("f_int32: -",
      "unexpected end of input, expected integer for field 'f_int32'");
  err("f_int32: --5", "expected integer for field 'f_int32', got '-'");
  err("f_int32:", "unexpected end of input, expected integer");
  err("f_uint64: true", "expected integer for field 'f_uint64', got 'true'");
}

static void test_floats_values(void **state) {
  Pbtest__All *m;
  (void)state;
  m =
      ok("r_float: [1, 2.5, -0.5, .25, 5., 1e3, 1.5e-1, 2.5f, 3F, inf, -inf,"
         " Infinity, -INF, nan, 1e39, -1e39]\n"
         "f_double: 1e308 r_double: [NaN, -1.25, 7]\n");
  assert_int_equal(m->n_r_float, 16);
  assert_true(m->r_float[0] == 1.0f);
  assert_true(m->r_float[1] == 2.5f);
  assert_true(m->r_float[2] == -0.5f);
  assert_true(m->r_float[3] == 0.25f);
  assert_true(m->r_float[4] == 5.0f);
  assert_true(m->r_float[5] == 1000.0f);
  assert_true(m->r_float[6] == 0.15f);
  assert_true(m->r_float[7] == 2.5f);
  assert_true(m->r_float[8] == 3.0f);
  assert_true(isinf(m->r_float[9]) && m->r_float[9] > 0);
  assert_true(isinf(m->r_float[10]) && m->r_float[10] < 0);
  assert_true(isinf(m->r_float[11]) && m->r_float[11] > 0);
  assert_true(isinf(m->r_float[12]) && m->r_float[12] < 0);
  assert_true(isnan(m->r_float[13]));
  assert_true(isinf(m->r_float[14]) && m->r_float[14] > 0);
  assert_true(isinf(m->r_float[15]) && m->r_float[15] < 0);
  assert_true(m->f_double == 1e308);
  assert_int_equal(m->n_r_double, 3);
  assert_true(isnan(m->r_double[0]));
  assert_true(m->r_double[1] == -1.25);
  assert_true(m->r_double[2] == 7.0);
  free_all(m);
  err("f_double: 0x1p3", "expected number for field 'f_double', got '0x1p3'");
  err("f_double: 0x10", "expected number for field 'f_double'");
  err("f_float: abc", "expected number for field 'f_float', got 'abc'");
  err("f_float: 1.2.3", "expected number for field 'f_float', got '1.2.3'");
  err("f_float: 1e", "expected number for field 'f_float', got '1e'");
  err("f_float: \"1\"", "expected number for field 'f_float'");
  err("f_float: true", "expected number for field 'f_float', got 'true'");
}

static void test_bools(void **state) {
  Pbtest__All *m;
  (void)state;
  m = ok("r_bool: [true, false, True, False, t, f, 1, 0, 0x1]");
  assert_int_equal(m->n_r_bool, 9);
  assert_true(m->r_bool[0] && !m->r_bool[1] && m->r_bool[2] && !m->r_bool[3]);
  assert_true(m->r_bool[4] && !m->r_bool[5] && m->r_bool[6] && !m->r_bool[7]);
  assert_true(m->r_bool[8]);
  free_all(m);
  err("f_bool: yes", "expected boolean for field 'f_bool', got 'yes'");
  err("f_bool: 2", "expected boolean for field 'f_bool', got '2'");
  err("f_bool: TRUE", "expected boolean for field 'f_bool', got 'TRUE'");
  err("f_bool: -1", "expected boolean for field 'f_bool', got '-'");
}

static void test_enums(void **state) {
  Pbtest__All *m;
  (void)state;
  m = ok("f_enum: GREEN r_enum: [RED, 2, NEGATIVE, -5, 77] r_enum: BLUE");
  assert_int_equal(m->f_enum, PBTEST__COLOR__GREEN);
  assert_int_equal(m->n_r_enum, 6);
  assert_int_equal(m->r_enum[0], PBTEST__COLOR__RED);
  assert_int_equal(m->r_enum[1], PBTEST__COLOR__GREEN);
  assert_int_equal(m->r_enum[2], PBTEST__COLOR__NEGATIVE);
  assert_int_equal(m->r_enum[3], -5);
  assert_int_equal(m->r_enum[4], 77); /* proto3 enums are open */
  assert_int_equal(m->r_enum[5], PBTEST__COLOR__BLUE);
  free_all(m);
  err_exact("f_enum: TYPE_FOO",
            FILE_NAME ":1:9: unknown enum value 'TYPE_FOO' for field 'f_enum'");
  err("f_enum: red", "unknown enum value 'red' for field 'f_enum'");
  err("f_enum: \"RED\"",
      "expected enum value name or number for field 'f_enum'");
  err("f_enum: 2147483648", "value out of range for enum field 'f_enum'");
}

static void test_strings_and_escapes(void **state) {
  Pbtest__All *m;
  (void)state;
  m =
      ok("f_string: \"a\\nb\\tc\\\"d\\\\e\\x41\\101\\'\\?\\a\\b\\f\\r\\v\"\n"
         "r_string: 'single \"quoted\"'\n"
         "r_string: \"adj\" 'acent' \"\" \"\\n\"\n"
         "r_string: \"\\u00e9\\U0001F600\\ud83d\\ude00\"\n"
         "r_string: \"\\x4\\x414\"\n"
         "r_string: \"\xc3\xa9 raw utf-8\"\n"
         "r_bytes: \"\\0\\xff\\377\\777z\"\n"
         "r_bytes: \"\"\n");
  assert_string_equal(m->f_string, "a\nb\tc\"d\\eAA'?\a\b\f\r\v");
  assert_int_equal(m->n_r_string, 5);
  assert_string_equal(m->r_string[0], "single \"quoted\"");
  assert_string_equal(m->r_string[1], "adjacent\n");
  assert_string_equal(m->r_string[2],
                      "\xc3\xa9\xf0\x9f\x98\x80\xf0\x9f\x98\x80");
  assert_string_equal(m->r_string[3],
                      "\x04"
                      "A4");
  assert_string_equal(m->r_string[4], "\xc3\xa9 raw utf-8");
  assert_int_equal(m->n_r_bytes, 2);
  assert_int_equal(m->r_bytes[0].len, 5);
  assert_memory_equal(m->r_bytes[0].data, "\0\xff\xff\xffz", 5);
  assert_int_equal(m->r_bytes[1].len, 0);
  free_all(m);

  err_exact("f_string: \"abc\nf_int32: 1",
            FILE_NAME ":1:11: unterminated string");
  err_exact("\n  f_string: 'abc", FILE_NAME ":2:13: unterminated string");
  err("f_string: \"abc\\", "unterminated string");
  err("f_string: \"abc\\\n\"", "unterminated string");
  err("f_string: \"a\" \"b", "unterminated string");
  err_exact("f_string: \"ab\\qc\"",
            FILE_NAME ":1:14: invalid escape sequence '\\q' in string");
  err("f_string: \"\\xg\"", "invalid \\x escape");
  err("f_string: \"\\u12\"", "invalid \\u escape");
  err("f_string: \"\\ud800\"", "invalid code point");
  err("f_string: \"\\U00110000\"", "invalid code point");
  err("f_string: \"a\\0b\"",
      "string field 'f_string' contains a NUL character");
  err("f_string: \"\\xff\"", "string field 'f_string' is not valid UTF-8");
  err("f_string: 5", "expected string for field 'f_string', got '5'");
  err("f_bytes: abc", "expected string for field 'f_bytes', got 'abc'");
}

static void test_comments_and_separators(void **state) {
  Pbtest__All *m;
  (void)state;
  m =
      ok("# leading\n"
         "f_int32 # after name\n"
         " : # after colon\n"
         " 5 # after value\n"
         ", f_int64: 6; f_uint32: 7,\n"
         "f_inner # before brace\n"
         "{ # inside\n"
         "  id: 1; # x\n"
         "  vals: [ # in list\n"
         "    1, # one\n"
         "    2 # two\n"
         "  ] ,\n"
         "} ;\n"
         "r_string: \"a\" # between adjacent strings\n"
         "  \"b\"\n"
         "# trailing comment without newline");
  assert_int_equal(m->f_int32, 5);
  assert_true(m->f_int64 == 6);
  assert_int_equal(m->f_uint32, 7);
  assert_non_null(m->f_inner);
  assert_int_equal(m->f_inner->id, 1);
  assert_int_equal(m->f_inner->n_vals, 2);
  assert_true(m->f_inner->vals[1] == 2);
  assert_int_equal(m->n_r_string, 1);
  assert_string_equal(m->r_string[0], "ab");
  free_all(m);
  err("f_int32: 1,, f_int64: 2", "expected field name, got ','");
  err("f_int32: 1 ;; ", "expected field name, got ';'");
}

static void test_repeated_scalars(void **state) {
  Pbtest__All *m;
  char *big;
  size_t i, o = 0;
  (void)state;
  m = ok("r_int32: 1 r_int32: [2, 3] r_int32: [] r_int32: [4] r_int32: -5");
  assert_int_equal(m->n_r_int32, 5);
  assert_int_equal(m->r_int32[0], 1);
  assert_int_equal(m->r_int32[1], 2);
  assert_int_equal(m->r_int32[2], 3);
  assert_int_equal(m->r_int32[3], 4);
  assert_int_equal(m->r_int32[4], -5);
  assert_int_equal(m->n_r_uint64, 0);
  free_all(m);
  m = ok("r_int32: []");
  assert_int_equal(m->n_r_int32, 0);
  assert_null(m->r_int32);
  free_all(m);
  /* Arrays grow past many doublings. */
  big = malloc(20000 * 8 + 32);
  assert_non_null(big);
  o += (size_t)sprintf(big, "r_sint64: [");
  for (i = 0; i < 20000; i++)
    o += (size_t)sprintf(big + o, "%s%zu", i ? "," : "", i);
  strcpy(big + o, "]");
  m = ok(big);
  assert_int_equal(m->n_r_sint64, 20000);
  for (i = 0; i < 20000; i++) assert_true(m->r_sint64[i] == (int64_t)i);
  free_all(m);
  free(big);
  err("r_int32: [1, 2,]", "expected integer for field 'r_int32', got ']'");
  err("r_int32: [1 2]",
      "expected ',' or ']' in the list of field 'r_int32', got '2'");
  err("r_int32: [1, 2", "unexpected end of input, expected ',' or ']'");
  err("f_int32: [1]", "expected integer for field 'f_int32', got '['");
  err("r_int32 [1]", "expected ':' after field 'r_int32', got '['");
}

static void test_messages(void **state) {
  Pbtest__All *m;
  (void)state;
  m = ok("f_inner {}");
  assert_non_null(m->f_inner);
  assert_int_equal(m->f_inner->id, 0);
  assert_ptr_equal(m->f_inner->label, protobuf_c_empty_string);
  free_all(m);
  m = ok("f_inner: {}");
  assert_non_null(m->f_inner);
  free_all(m);
  m = ok("f_inner <>");
  assert_non_null(m->f_inner);
  free_all(m);
  m = ok("f_inner: < id: 3 child { child: < label: 'deep' > } >");
  assert_int_equal(m->f_inner->id, 3);
  assert_string_equal(m->f_inner->child->child->label, "deep");
  assert_null(m->f_inner->child->child->child);
  free_all(m);
  /* A non-repeated message field given twice merges. */
  m = ok("f_inner { id: 1 vals: 1 } f_inner { label: \"x\" vals: 2 }");
  assert_int_equal(m->f_inner->id, 1);
  assert_string_equal(m->f_inner->label, "x");
  assert_int_equal(m->f_inner->n_vals, 2);
  free_all(m);
  /* Scalars and strings given twice: the last one wins. */
  m =
      ok("f_int32: 1 f_int32: 2 f_string: \"a\" f_string: \"b\" f_bytes: \"x\""
         " f_bytes: \"yz\" f_string: \"\"");
  assert_int_equal(m->f_int32, 2);
  assert_string_equal(m->f_string, "");
  assert_int_equal(m->f_bytes.len, 2);
  free_all(m);
  err("f_inner { id: 1 >", "expected field name or '}', got '>'");
  err("f_inner < id: 1 }", "expected field name or '>', got '}'");
  err("f_inner: 5", "expected '{' or '<' for message field 'f_inner', got '5'");
  err("f_inner", "unexpected end of input, expected '{' or '<'");
  err("f_int32 { }", "expected ':' after field 'f_int32', got '{'");
  err("f_inner { [ext]: 1 }", "expected field name or '}', got '['");
  err("}", "expected field name, got '}'");
}

static void test_message_lists(void **state) {
  Pbtest__All *m;
  (void)state;
  m =
      ok("r_inner [ { id: 1 }, < id: 2 >, {} ]\n"
         "r_inner: [ { label: 'four' } ]\n"
         "r_inner { id: 5 }\n"
         "r_inner: { id: 6 }\n"
         "r_inner: []\n"
         "r_inner []\n");
  assert_int_equal(m->n_r_inner, 6);
  assert_int_equal(m->r_inner[0]->id, 1);
  assert_int_equal(m->r_inner[1]->id, 2);
  assert_int_equal(m->r_inner[2]->id, 0);
  assert_string_equal(m->r_inner[3]->label, "four");
  assert_int_equal(m->r_inner[4]->id, 5);
  assert_int_equal(m->r_inner[5]->id, 6);
  free_all(m);
  err("r_inner [ { id: 1 } { id: 2 } ]", "expected ',' or ']'");
  err("r_inner [ 1 ]",
      "expected '{' or '<' for message field 'r_inner', got '1'");
  err("f_inner [ {} ]",
      "expected '{' or '<' for message field 'f_inner', got '['");
}

static void test_maps(void **state) {
  Pbtest__All *m;
  (void)state;
  m =
      ok("m_str { key: \"a\" value: \"1\" }\n"
         "m_str [ { key: 'b' value: '2' }, { value: '3' key: 'c' } ]\n"
         "m_str: { key: 'a' value: 'again' }\n"
         "m_inner { key: \"x\" value { id: 9 vals: [1, 2] } }\n"
         "m_inner { key: \"novalue\" }\n"
         "m_int { key: -3 value: \"minus three\" }\n"
         "m_bool < key: true value: 1 >\n");
  /* A repeated key: the last value wins (protobuf's parser, and Triton's
   * suite: an ensemble step's input_map). One entry per key remains. */
  assert_int_equal(m->n_m_str, 3);
  assert_string_equal(m->m_str[0]->key, "a");
  assert_string_equal(m->m_str[0]->value, "again");
  assert_string_equal(m->m_str[1]->key, "b");
  assert_string_equal(m->m_str[2]->key, "c");
  assert_string_equal(m->m_str[2]->value, "3");
  assert_int_equal(m->n_m_inner, 2);
  assert_string_equal(m->m_inner[0]->key, "x");
  assert_int_equal(m->m_inner[0]->value->id, 9);
  assert_int_equal(m->m_inner[0]->value->n_vals, 2);
  assert_null(m->m_inner[1]->value);
  assert_int_equal(m->n_m_int, 1);
  assert_int_equal(m->m_int[0]->key, -3);
  assert_string_equal(m->m_int[0]->value, "minus three");
  assert_int_equal(m->n_m_bool, 1);
  assert_true(m->m_bool[0]->key);
  assert_int_equal(m->m_bool[0]->value, 1);
  free_all(m);
  /* Integer and bool keys, and a message value, are maps too. */
  m =
      ok("m_int { key: 1 value: 'x' } m_int { key: 2 value: 'y' } "
         "m_int { key: 1 value: 'z' } m_bool { key: false value: 1 } "
         "m_bool { key: false value: 2 } m_inner { key: '' value { id: 1 } } "
         "m_inner { value { id: 2 } }");
  assert_int_equal(m->n_m_int, 2);
  assert_int_equal(m->m_int[0]->key, 1);
  assert_string_equal(m->m_int[0]->value, "z");
  assert_int_equal(m->m_int[1]->key, 2);
  assert_int_equal(m->n_m_bool, 1);
  assert_int_equal(m->m_bool[0]->value, 2);
  assert_int_equal(m->n_m_inner, 1);
  assert_int_equal(m->m_inner[0]->value->id, 2);
  free_all(m);
  err("m_str { key: \"a\" val: \"b\" }",
      "unknown field 'val' in message pbtest.All.MStrEntry");
  err("m_int { key: \"a\" }", "expected integer for field 'key', got '\"a\"'");
}

static void test_oneof(void **state) {
  Pbtest__All *m;
  (void)state;
  m = ok("c_int: 5");
  assert_int_equal(m->choice_case, PBTEST__ALL__CHOICE_C_INT);
  assert_int_equal(m->c_int, 5);
  free_all(m);
  /* Switching members frees the previous one (checked under valgrind). */
  m =
      ok("c_str: \"s\" c_inner { id: 1 } c_inner { label: 'l' } c_str: 'x'"
         " c_str: 'y' c_inner { id: 2 }");
  assert_int_equal(m->choice_case, PBTEST__ALL__CHOICE_C_INNER);
  assert_int_equal(m->c_inner->id, 2);
  assert_ptr_equal(m->c_inner->label, protobuf_c_empty_string);
  free_all(m);
  m = ok("c_inner { id: 1 } c_inner { label: 'l' }");
  assert_int_equal(m->c_inner->id, 1);
  assert_string_equal(m->c_inner->label, "l");
  free_all(m);
  m = ok("c_inner { id: 1 } c_int: 3");
  assert_int_equal(m->choice_case, PBTEST__ALL__CHOICE_C_INT);
  assert_int_equal(m->c_int, 3);
  free_all(m);
  m = ok("c_int: 3 c_str: \"last\"");
  assert_int_equal(m->choice_case, PBTEST__ALL__CHOICE_C_STR);
  assert_string_equal(m->c_str, "last");
  free_all(m);
}

static void test_error_positions(void **state) {
  (void)state;
  err_exact("f_int32: 1\nmax_batch: 3\n",
            FILE_NAME ":2:1: unknown field 'max_batch' in message pbtest.All");
  err_exact("f_inner {\n  id: 1\n  max_batch: 2\n}", FILE_NAME
            ":3:3: unknown field 'max_batch' in message pbtest.Inner");
  err_exact("f_inner {\n  id: 1\n",
            FILE_NAME ":3:1: unexpected end of input, expected '}'");
  err_exact("f_inner <\n  id: 1",
            FILE_NAME ":2:8: unexpected end of input, expected '>'");
  err_exact("\n\n   f_int32: 2147483648",
            FILE_NAME ":3:13: value out of range for int32 field 'f_int32'");
  err_exact("f_int32: 1\n  f_int32: -2147483649",
            FILE_NAME ":2:12: value out of range for int32 field 'f_int32'");
  err_exact("\tf_int32: x",
            FILE_NAME ":1:11: expected integer for field 'f_int32', got 'x'");
  err_exact("f_int32 5",
            FILE_NAME ":1:9: expected ':' after field 'f_int32', got '5'");
}

static void test_garbage(void **state) {
  static const char nul_doc[] = "f_int32: 1\0f_int32: 2";
  static const char nul_in_bytes[] = "f_bytes: \"a\0b\"";
  Pbtest__All *m;
  (void)state;
  err_n(nul_doc, sizeof(nul_doc) - 1,
        FILE_NAME ":1:11: expected field name, got '\\x00'");
  err_n("\0", 1, "expected field name, got '\\x00'");
  m = ok_n(nul_in_bytes, sizeof(nul_in_bytes) - 1);
  assert_int_equal(m->f_bytes.len, 3);
  assert_memory_equal(m->f_bytes.data, "a\0b", 3);
  free_all(m);
  err("\x01\x02", "expected field name, got '\\x01'");
  err("\xff\xfe", "expected field name, got '\\xff'");
  err("f_int32: 1 @", "expected field name, got '@'");
  err("{", "expected field name, got '{'");
  err(":", "expected field name, got ':'");
  err("5", "expected field name, got '5'");
  err("\"str\"", "expected field name, got '\"str\"'");
  err("f_int32: \x80", "expected integer for field 'f_int32', got '\\x80'");
  {
    /* A field name longer than any real one is unknown, not a crash. */
    char name[400];
    memset(name, 'a', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    err(name, "unknown field 'aaaa");
  }
}

/* Builds "f_inner { child { child { ... id: 1 } } }" with `levels` braces. */
static char *nested(int levels) {
  size_t cap = (size_t)levels * 12 + 64, o = 0;
  char *s = malloc(cap);
  int i;
  assert_non_null(s);
  o += (size_t)sprintf(s, "f_inner {");
  for (i = 1; i < levels; i++) o += (size_t)sprintf(s + o, " child {");
  o += (size_t)sprintf(s + o, " id: 1 ");
  for (i = 0; i < levels; i++) s[o++] = '}';
  s[o] = '\0';
  return s;
}

static void test_deep_nesting(void **state) {
  Pbtest__All *m;
  Pbtest__Inner *in;
  char *s;
  int depth = 1;
  (void)state;
  s = nested(64);
  m = ok(s);
  for (in = m->f_inner; in->child != NULL; in = in->child) depth++;
  assert_int_equal(depth, 64);
  assert_int_equal(in->id, 1);
  free_all(m);
  free(s);
  s = nested(65);
  err(s, "messages nested deeper than 64 levels");
  free(s);
  /* Far deeper than the stack would allow without the cap. */
  s = nested(200000);
  err(s, "messages nested deeper than 64 levels");
  free(s);
}

static const char full_doc[] =
    "# a document that uses most of the syntax\n"
    "f_int32: -42\n"
    "f_int64: -9223372036854775808\n"
    "f_uint32: 4294967295\n"
    "f_uint64: 0xffffffffffffffff\n"
    "f_sint32: -2147483648\n"
    "f_sint64: 9223372036854775807\n"
    "f_fixed32: 017\n"
    "f_fixed64: 18446744073709551615\n"
    "f_sfixed32: 2147483647\n"
    "f_sfixed64: -1\n"
    "f_float: 0.1\n"
    "f_double: -2.5e-3\n"
    "f_bool: True\n"
    "f_string: \"he said \\\"hi\\\"\\n\" 'and left \\u00e9'\n"
    "f_bytes: \"\\x00\\001\\377z\"\n"
    "f_enum: GREEN\n"
    "f_inner { id: 7 label: \"seven\" vals: [1, -2, 3] child < id: 8 > }\n"
    "r_int32: [1, 2, 3]\n"
    "r_int32: 4;\n"
    "r_uint64: [18446744073709551615, 0]\n"
    "r_float: [1, 2.5, inf, -inf, nan]\n"
    "r_double: [0.1, 1e300]\n"
    "r_bool: [true, false, t, f, 1, 0]\n"
    "r_string: [\"a\", 'b'], r_string: \"\"\n"
    "r_bytes: \"\\xde\\xad\" r_bytes: \"\" r_bytes: \"ab\"\n"
    "r_enum: [RED, 3, NEGATIVE]\n"
    "r_inner [ { id: 1 }, { id: 2 label: \"two\" } ]\n"
    "r_inner: { id: 3 }\n"
    "r_sint64: [-1, 1]\n"
    "m_str { key: \"k1\" value: \"v1\" }\n"
    "m_str [ { key: \"k2\" value: \"v2\" } ]\n"
    "m_inner { key: \"x\" value { id: 9 vals: 10 } }\n"
    "m_inner { key: \"y\" value: { } }\n"
    "m_int { key: -3 value: \"minus three\" }\n"
    "m_int { key: 2147483647 value: \"max\" }\n"
    "m_bool { key: true value: 1 } m_bool { key: false value: -1 }\n"
    "c_inner { id: 11 }\n";

/* Returns 1 when a prefix of `doc` of length `n` ends inside a block, a list
 * or a string, where the parser must report an error. */
static int cut_inside(const char *doc, size_t n) {
  int depth = 0;
  char quote = 0;
  size_t i;
  for (i = 0; i < n; i++) {
    char c = doc[i];
    if (quote) {
      if (c == '\\')
        i++;
      else if (c == quote)
        quote = 0;
    } else if (c == '#') {
      while (i < n && doc[i] != '\n') i++;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '{' || c == '<' || c == '[') {
      depth++;
    } else if (c == '}' || c == '>' || c == ']') {
      depth--;
    }
  }
  return depth > 0 || quote != 0;
}

static void test_truncated_prefixes(void **state) {
  size_t n, len = sizeof(full_doc) - 1, oks = 0, errs = 0;
  (void)state;
  for (n = 0; n < len; n++) {
    ifd_errmsg_t e;
    Pbtest__All *m;
    int rc = parse_all(full_doc, n, &m, &e);
    if (rc == 0) {
      if (cut_inside(full_doc, n))
        print_error("prefix %zu parsed: ...%.20s\n", n,
                    full_doc + n - (n > 20 ? 20 : n));
      assert_false(cut_inside(full_doc, n));
      free_all(m);
      oks++;
    } else {
      assert_int_equal(rc, IFD_EPARSE);
      errs++;
    }
  }
  assert_true(errs > oks * 3);
  free_all(ok(full_doc));
}

/* A deterministic generator of token soup: every input must parse or fail
 * cleanly, never crash or leak. */
static void test_token_soup(void **state) {
  static const char *toks[] = {
      "f_int32", "f_inner", "r_inner",    "m_str",    "m_inner",
      "c_inner", "c_str",   "c_int",      "child",    "id",
      "key",     "value",   "r_int32",    "f_string", "f_bytes",
      "f_enum",  "RED",     "f_float",    "r_float",  ":",
      "{",       "}",       "<",          ">",        "[",
      "]",       ",",       ";",          "-",        "1",
      "0x1f",    "1.5",     "inf",        "\"",       "'",
      "\\",      "\"s\"",   "'q\\x41'",   "#",        "\n",
      " ",       "\0",      "\xff",       "true",     "99999999999999999999",
      "label",   "vals",    "\"\\u00e9\""};
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  char buf[512];
  int iter;
  (void)state;
  for (iter = 0; iter < 30000; iter++) {
    size_t o = 0;
    int k, ntok;
    ifd_errmsg_t e;
    Pbtest__All *m;
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    ntok = (int)((seed >> 33) % 40);
    for (k = 0; k < ntok; k++) {
      const char *t;
      size_t tl;
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      t = toks[(seed >> 33) % (sizeof(toks) / sizeof(toks[0]))];
      tl = t[0] == '\0' ? 1 : strlen(t);
      if (o + tl + 1 >= sizeof(buf)) break;
      memcpy(buf + o, t, tl);
      o += tl;
      if ((seed >> 20) & 1) buf[o++] = ' ';
    }
    if (parse_all(buf, o, &m, &e) == 0) free_all(m);
  }
}

/* Flips bytes of the full document at random. */
static void test_mutations(void **state) {
  uint64_t seed = 12345;
  char buf[sizeof(full_doc)];
  int iter, oks = 0;
  (void)state;
  for (iter = 0; iter < 5000; iter++) {
    ifd_errmsg_t e;
    Pbtest__All *m;
    int k;
    memcpy(buf, full_doc, sizeof(full_doc));
    for (k = 0; k < 3; k++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      buf[(seed >> 33) % (sizeof(full_doc) - 1)] = (char)(seed >> 13);
    }
    if (parse_all(buf, sizeof(full_doc) - 1, &m, &e) == 0) {
      free_all(m);
      oks++;
    }
  }
  assert_true(oks < 5000);
}

/* ---- proto2: has_ flags, defaults, required ---------------------------------
 */

static void test_proto2_presence(void **state) {
  ProtobufCMessage *pm;
  Pbtest2__Opt *m;
  ifd_errmsg_t e;
  (void)state;
  assert_int_equal(ifd_pbtext_parse(&pbtest2__opt__descriptor, "req: 1", 6,
                                    "p.pbtxt", &pm, &e),
                   0);
  m = (Pbtest2__Opt *)pm;
  assert_false(m->has_o_int32);
  assert_false(m->has_o_def);
  assert_int_equal(m->o_def, 7);
  assert_string_equal(m->o_str, "hi");
  assert_false(m->has_kind);
  assert_int_equal(m->kind, PBTEST2__OPT__KIND__TWO);
  assert_false(m->has_o_bytes);
  assert_null(m->sub);
  assert_int_equal(m->req, 1);
  protobuf_c_message_free_unpacked(pm, NULL);

  {
    static const char doc[] =
        "req: 2 o_int32: 0 o_def: 8 o_str: 'a' o_str: 'b' o_bytes: ''"
        " kind: ONE o_double: 0 o_bool: false sub { name: 'n' n: 3 }"
        " subs [{ name: 'x' }, { name: 'y' }] p_str: 'p' p_u64: "
        "18446744073709551615";
    assert_int_equal(ifd_pbtext_parse(&pbtest2__opt__descriptor, doc,
                                      sizeof(doc) - 1, "p.pbtxt", &pm, &e),
                     0);
  }
  m = (Pbtest2__Opt *)pm;
  assert_true(m->has_o_int32 && m->o_int32 == 0);
  assert_true(m->has_o_def && m->o_def == 8);
  assert_string_equal(m->o_str, "b");
  assert_true(m->has_o_bytes && m->o_bytes.len == 0);
  assert_true(m->has_kind && m->kind == PBTEST2__OPT__KIND__ONE);
  assert_true(m->has_o_double && m->has_o_bool && !m->o_bool);
  assert_string_equal(m->sub->name, "n");
  assert_true(m->sub->has_n && m->sub->n == 3);
  assert_int_equal(m->n_subs, 2);
  assert_string_equal(m->subs[1]->name, "y");
  assert_int_equal(m->pick_case, PBTEST2__OPT__PICK_P_U64);
  assert_true(m->p_u64 == UINT64_MAX);
  protobuf_c_message_free_unpacked(pm, NULL);

  pm = (ProtobufCMessage *)(uintptr_t)1;
  assert_int_equal(
      ifd_pbtext_parse(&pbtest2__opt__descriptor, "req: 1 sub { n: 1 }", 19,
                       "p.pbtxt", &pm, &e),
      IFD_EPARSE);
  assert_null(pm);
  assert_string_equal(
      e.text,
      "p.pbtxt:1:20: missing required field 'name' in message pbtest2.Sub");
  assert_int_equal(ifd_pbtext_parse(&pbtest2__opt__descriptor,
                                    "req: 1 subs {} ", 15, NULL, &pm, &e),
                   IFD_EPARSE);
  assert_string_equal(
      e.text,
      "<input>:1:16: missing required field 'name' in message pbtest2.Sub");
  assert_int_equal(ifd_pbtext_parse(&pbtest2__opt__descriptor, "kind: THREE",
                                    11, "p.pbtxt", &pm, &e),
                   IFD_EPARSE);
  assert_string_equal(
      e.text, "p.pbtxt:1:7: unknown enum value 'THREE' for field 'kind'");
}

/* ---- round trip through JSON ------------------------------------------------
 */

static void test_json_round_trip(void **state) {
  Pbtest__All *m1 = ok(full_doc), *m2;
  ProtobufCMessage *pm;
  ifd_errmsg_t e;
  json_t *j1, *j2;
  uint8_t *b1, *b2;
  size_t n1, n2;
  (void)state;
  j1 = ifd_pbjson_from_message(&m1->base);
  assert_non_null(j1);
  assert_int_equal(ifd_pbjson_to_message(&pbtest__all__descriptor, j1, &pm, &e),
                   0);
  m2 = (Pbtest__All *)pm;
  j2 = ifd_pbjson_from_message(pm);
  assert_non_null(j2);
  if (!json_equal(j1, j2)) {
    char *a = json_dumps(j1, JSON_SORT_KEYS),
         *b = json_dumps(j2, JSON_SORT_KEYS);
    print_error("%s\n%s\n", a, b);
    free(a);
    free(b);
  }
  assert_true(json_equal(j1, j2));
  /* The two messages also serialise to the same wire bytes. */
  n1 = protobuf_c_message_get_packed_size(&m1->base);
  n2 = protobuf_c_message_get_packed_size(pm);
  assert_int_equal(n1, n2);
  b1 = malloc(n1);
  b2 = malloc(n2);
  assert_non_null(b1);
  assert_non_null(b2);
  protobuf_c_message_pack(&m1->base, b1);
  protobuf_c_message_pack(pm, b2);
  assert_memory_equal(b1, b2, n1);
  /* Spot-check a few converted values. */
  assert_string_equal(json_string_value(json_object_get(j1, "f_uint64")),
                      "18446744073709551615");
  assert_true(json_integer_value(json_object_get(j1, "f_int64")) == INT64_MIN);
  assert_string_equal(json_string_value(json_object_get(j1, "f_enum")),
                      "GREEN");
  assert_true(m2->f_float == 0.1f);
  free(b1);
  free(b2);
  json_decref(j1);
  json_decref(j2);
  free_all(m1);
  free_all(m2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_empty_input),
      cmocka_unit_test(test_all_scalars),
      cmocka_unit_test(test_integer_limits),
      cmocka_unit_test(test_bad_integers),
      cmocka_unit_test(test_floats_values),
      cmocka_unit_test(test_bools),
      cmocka_unit_test(test_enums),
      cmocka_unit_test(test_strings_and_escapes),
      cmocka_unit_test(test_comments_and_separators),
      cmocka_unit_test(test_repeated_scalars),
      cmocka_unit_test(test_messages),
      cmocka_unit_test(test_message_lists),
      cmocka_unit_test(test_maps),
      cmocka_unit_test(test_oneof),
      cmocka_unit_test(test_error_positions),
      cmocka_unit_test(test_garbage),
      cmocka_unit_test(test_deep_nesting),
      cmocka_unit_test(test_truncated_prefixes),
      cmocka_unit_test(test_token_soup),
      cmocka_unit_test(test_mutations),
      cmocka_unit_test(test_proto2_presence),
      cmocka_unit_test(test_json_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
