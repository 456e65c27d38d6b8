/*
 * test/unit/test_pbjson.c - tests for proto/pbjson_print.c and proto/pbjson.c:
 * messages to JSON in the shape tritonserver prints model configs, and JSON
 * back to messages with every accepted spelling and the path-naming errors.
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

/* Dumps `j` compactly, in insertion order, and compares with `want`. */
static void assert_dump(const json_t *j, const char *want) {
  char *s;
  assert_non_null(j);
  s = json_dumps(j, JSON_COMPACT);
  assert_non_null(s);
  if (strcmp(s, want) != 0) print_error("got:  %s\nwant: %s\n", s, want);
  assert_string_equal(s, want);
  free(s);
}

static json_t *load(const char *text) {
  json_error_t je;
  json_t *j = json_loads(text, JSON_ALLOW_NUL, &je);
  if (j == NULL) print_error("bad test JSON: %s\n", je.text);
  assert_non_null(j);
  return j;
}

/* Converts JSON text to a pbtest.All and asserts success. */
static Pbtest__All *to_all(const char *text) {
  json_t *j = load(text);
  ProtobufCMessage *m = NULL;
  ifd_errmsg_t err;
  int rc = ifd_pbjson_to_message(&pbtest__all__descriptor, j, &m, &err);
  if (rc != 0) print_error("unexpected error: %s\ninput: %s\n", err.text, text);
  assert_int_equal(rc, 0);
  assert_non_null(m);
  json_decref(j);
  return (Pbtest__All *)m;
}

/* Asserts that converting JSON text to `desc` fails with exactly `want`. */
static void to_err_desc(const ProtobufCMessageDescriptor *desc,
                        const char *text, const char *want) {
  json_t *j = load(text);
  ProtobufCMessage *m = (ProtobufCMessage *)(uintptr_t)1;
  ifd_errmsg_t err;
  int rc = ifd_pbjson_to_message(desc, j, &m, &err);
  if (rc != IFD_EPARSE || strcmp(err.text, want) != 0)
    print_error("input: %s\ngot: %d %s\nwant: %s\n", text, rc,
                rc ? err.text : "", want);
  assert_int_equal(rc, IFD_EPARSE);
  assert_null(m);
  assert_string_equal(err.text, want);
  json_decref(j);
}

static void to_err(const char *text, const char *want) {
  to_err_desc(&pbtest__all__descriptor, text, want);
}

static void free_all(Pbtest__All *m) {
  protobuf_c_message_free_unpacked(&m->base, NULL);
}

/* ---- message -> JSON --------------------------------------------------------
 */

static void test_empty_message(void **state) {
  Pbtest__All a = PBTEST__ALL__INIT;
  Pbtest__Inner in = PBTEST__INNER__INIT;
  json_t *j;
  (void)state;
  j = ifd_pbjson_from_message(&a.base);
  assert_dump(
      j,
      "{\"f_int32\":0,\"f_int64\":0,\"f_uint32\":0,\"f_uint64\":0,\"f_sint32\":"
      "0,"
      "\"f_sint64\":0,\"f_fixed32\":0,\"f_fixed64\":0,\"f_sfixed32\":0,"
      "\"f_sfixed64\":0,\"f_float\":0,\"f_double\":0,\"f_bool\":false,"
      "\"f_string\":\"\",\"f_bytes\":\"\",\"f_enum\":\"COLOR_UNSPECIFIED\","
      "\"r_int32\":[],\"r_uint64\":[],\"r_float\":[],\"r_bool\":[],"
      "\"r_string\":[],\"r_bytes\":[],\"r_enum\":[],\"r_inner\":[],"
      "\"r_double\":[],\"r_sint64\":[],\"m_inner\":{},\"m_str\":{},"
      "\"m_int\":{},\"m_bool\":{}}");
  json_decref(j);
  /* A set sub-message prints; unset ones (child) do not. */
  a.f_inner = &in;
  in.id = 3;
  j = ifd_pbjson_from_message(&a.base);
  assert_dump(json_object_get(j, "f_inner"),
              "{\"id\":3,\"label\":\"\",\"vals\":[]}");
  json_decref(j);
  assert_null(ifd_pbjson_from_message(NULL));
}

static void test_scalar_values(void **state) {
  Pbtest__All a = PBTEST__ALL__INIT;
  uint8_t bytes[] = {'h', 'e', 'l', 'l', 'o'};
  json_t *j;
  (void)state;
  a.f_int32 = INT32_MIN;
  a.f_int64 = INT64_MIN;
  a.f_uint32 = UINT32_MAX;
  a.f_uint64 = UINT64_MAX;
  a.f_sint64 = INT64_MAX;
  a.f_fixed64 = (uint64_t)INT64_MAX;
  a.f_float = 0.1f;
  a.f_double = -2.5;
  a.f_bool = 1;
  a.f_string = "caf\xc3\xa9";
  a.f_bytes.data = bytes;
  a.f_bytes.len = 5;
  a.f_enum = PBTEST__COLOR__NEGATIVE;
  j = ifd_pbjson_from_message(&a.base);
  assert_non_null(j);
  assert_true(json_integer_value(json_object_get(j, "f_int32")) == INT32_MIN);
  assert_true(json_integer_value(json_object_get(j, "f_int64")) == INT64_MIN);
  assert_true(json_integer_value(json_object_get(j, "f_uint32")) == UINT32_MAX);
  /* Above INT64_MAX a uint64 prints as a decimal string. */
  assert_string_equal(json_string_value(json_object_get(j, "f_uint64")),
                      "18446744073709551615");
  assert_true(json_is_integer(json_object_get(j, "f_fixed64")));
  assert_true(json_integer_value(json_object_get(j, "f_fixed64")) == INT64_MAX);
  assert_true(json_integer_value(json_object_get(j, "f_sint64")) == INT64_MAX);
  /* 0.1f prints as the double 0.1, not 0.10000000149011612. */
  assert_true(json_real_value(json_object_get(j, "f_float")) == 0.1);
  assert_true(json_real_value(json_object_get(j, "f_double")) == -2.5);
  assert_true(json_is_true(json_object_get(j, "f_bool")));
  assert_string_equal(json_string_value(json_object_get(j, "f_string")),
                      "caf\xc3\xa9");
  assert_string_equal(json_string_value(json_object_get(j, "f_bytes")),
                      "aGVsbG8=");
  assert_string_equal(json_string_value(json_object_get(j, "f_enum")),
                      "NEGATIVE");
  json_decref(j);

  /* Unknown enum numbers print as numbers; non-finite floats as strings;
   * ill-formed UTF-8 is repaired rather than failing. */
  a.f_enum = 42;
  a.f_float = NAN;
  a.f_double = -INFINITY;
  a.f_string =
      "a\xff"
      "b";
  j = ifd_pbjson_from_message(&a.base);
  assert_int_equal(json_integer_value(json_object_get(j, "f_enum")), 42);
  assert_string_equal(json_string_value(json_object_get(j, "f_float")), "NaN");
  assert_string_equal(json_string_value(json_object_get(j, "f_double")),
                      "-Infinity");
  assert_string_equal(json_string_value(json_object_get(j, "f_string")),
                      "a\xef\xbf\xbd"
                      "b");
  json_decref(j);
}

static void test_base64_lengths(void **state) {
  static const struct {
    const char *raw, *b64;
  } cases[] = {{"", ""},
               {"f", "Zg=="},
               {"fo", "Zm8="},
               {"foo", "Zm9v"},
               {"foob", "Zm9vYg=="},
               {"fooba", "Zm9vYmE="},
               {"foobar", "Zm9vYmFy"}};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    Pbtest__All a = PBTEST__ALL__INIT, *back;
    char in[64];
    json_t *j;
    a.f_bytes.data = (uint8_t *)(uintptr_t)cases[i].raw;
    a.f_bytes.len = strlen(cases[i].raw);
    j = ifd_pbjson_from_message(&a.base);
    assert_string_equal(json_string_value(json_object_get(j, "f_bytes")),
                        cases[i].b64);
    json_decref(j);
    snprintf(in, sizeof(in), "{\"f_bytes\":\"%s\"}", cases[i].b64);
    back = to_all(in);
    assert_int_equal(back->f_bytes.len, strlen(cases[i].raw));
    if (back->f_bytes.len > 0)
      assert_memory_equal(back->f_bytes.data, cases[i].raw, back->f_bytes.len);
    free_all(back);
  }
}

static void test_repeated_maps_oneof(void **state) {
  Pbtest__All *m;
  json_t *j;
  ProtobufCMessage *pm;
  ifd_errmsg_t err;
  static const char text[] =
      "r_int32: [1, -2] r_uint64: [18446744073709551615, 5]"
      " r_float: [0.5, inf] r_string: ['x', ''] r_bytes: '\\x01'"
      " r_enum: [RED, 9] r_inner { id: 1 } r_inner { }"
      " m_inner { key: 'a' value { id: 2 } } m_inner { key: 'b' }"
      " m_str { key: 'k' value: 'v' } m_str { key: 'k' value: 'w' }"
      " m_int { key: -7 value: 'neg' } m_bool { key: false value: 3 }"
      " c_str: 'chosen'";
  (void)state;
  assert_int_equal(ifd_pbtext_parse(&pbtest__all__descriptor, text,
                                    sizeof(text) - 1, "x", &pm, &err),
                   0);
  j = ifd_pbjson_from_message(pm);
  assert_dump(json_object_get(j, "r_int32"), "[1,-2]");
  assert_dump(json_object_get(j, "r_uint64"), "[\"18446744073709551615\",5]");
  assert_dump(json_object_get(j, "r_float"), "[0.5,\"Infinity\"]");
  assert_dump(json_object_get(j, "r_string"), "[\"x\",\"\"]");
  assert_dump(json_object_get(j, "r_bytes"), "[\"AQ==\"]");
  assert_dump(json_object_get(j, "r_enum"), "[\"RED\",9]");
  assert_dump(json_object_get(j, "r_inner"),
              "[{\"id\":1,\"label\":\"\",\"vals\":[]},"
              "{\"id\":0,\"label\":\"\",\"vals\":[]}]");
  /* Maps are objects; an absent message value is the default message; a
   * repeated key keeps its last value; non-string keys print in decimal. */
  assert_dump(json_object_get(j, "m_inner"),
              "{\"a\":{\"id\":2,\"label\":\"\",\"vals\":[]},"
              "\"b\":{\"id\":0,\"label\":\"\",\"vals\":[]}}");
  assert_dump(json_object_get(j, "m_str"), "{\"k\":\"w\"}");
  assert_dump(json_object_get(j, "m_int"), "{\"-7\":\"neg\"}");
  assert_dump(json_object_get(j, "m_bool"), "{\"false\":3}");
  /* Only the selected oneof member prints. */
  assert_string_equal(json_string_value(json_object_get(j, "c_str")), "chosen");
  assert_null(json_object_get(j, "c_int"));
  assert_null(json_object_get(j, "c_inner"));
  assert_null(json_object_get(j, "f_inner"));
  json_decref(j);
  protobuf_c_message_free_unpacked(pm, NULL);

  m = to_all("{\"c_int\": 0}");
  j = ifd_pbjson_from_message(&m->base);
  assert_int_equal(json_integer_value(json_object_get(j, "c_int")), 0);
  json_decref(j);
  free_all(m);
}

static void test_proto2_presence(void **state) {
  Pbtest2__Opt o = PBTEST2__OPT__INIT;
  Pbtest2__Sub s = PBTEST2__SUB__INIT;
  json_t *j;
  (void)state;
  s.name = "n";
  o.req = 5;
  j = ifd_pbjson_from_message(&o.base);
  /* Fields with a has_ flag print only when it is set; o_str holds its
   * declared default and prints. */
  assert_dump(j, "{\"o_str\":\"hi\",\"subs\":[],\"req\":5}");
  json_decref(j);
  o.has_o_int32 = 1;
  o.has_kind = 1;
  o.sub = &s;
  o.pick_case = PBTEST2__OPT__PICK_P_U64;
  o.p_u64 = 1;
  j = ifd_pbjson_from_message(&o.base);
  assert_dump(j,
              "{\"o_int32\":0,\"o_str\":\"hi\",\"kind\":\"TWO\","
              "\"sub\":{\"name\":\"n\"},\"subs\":[],\"req\":5,\"p_u64\":1}");
  json_decref(j);
}

static void test_declaration_order(void **state) {
  Pbtest__Ordered o = PBTEST__ORDERED__INIT;
  json_t *j;
  (void)state;
  j = ifd_pbjson_from_message(&o.base);
  assert_dump(j, "{\"z\":0,\"a\":0,\"b\":0}");
  json_decref(j);
  o.o_case = PBTEST__ORDERED__O_M;
  o.m = 5;
  o.z = 1;
  j = ifd_pbjson_from_message(&o.base);
  assert_dump(j, "{\"z\":1,\"a\":0,\"b\":0,\"m\":5}");
  json_decref(j);
}

/* ---- JSON -> message
 * ---------------------------------------------------------- */

static void test_to_message_values(void **state) {
  Pbtest__All *m;
  (void)state;
  m = to_all(
      "{\"f_int32\": -5, \"fInt64\": \"-9223372036854775808\","
      " \"f_uint32\": 4294967295.0, \"fUint64\": \"18446744073709551615\","
      " \"f_sint32\": 1e3, \"f_sint64\": 9223372036854775807,"
      " \"fFixed32\": \"7\", \"f_fixed64\": 8, \"f_sfixed32\": -9,"
      " \"f_sfixed64\": \"-10\", \"f_float\": 1.5, \"f_double\": \"NaN\","
      " \"f_bool\": true, \"f_string\": \"s\\u00e9\", \"f_bytes\": \"_-8=\","
      " \"f_enum\": \"GREEN\", \"fInner\": {\"id\": 4, \"vals\": [\"1\", 2]},"
      " \"r_float\": [\"Infinity\", \"-Infinity\", 2, \"2.5\"],"
      " \"r_enum\": [1, \"BLUE\", -5], \"r_bool\": [false],"
      " \"r_string\": [\"a\", \"\"], \"r_inner\": [{}, {\"label\": \"z\"}],"
      " \"m_inner\": {\"k\": {\"id\": 1}}, \"mStr\": {\"a\": \"b\", \"c\": "
      "\"d\"},"
      " \"m_int\": {\"-2147483648\": \"min\"}, \"m_bool\": {\"true\": 1},"
      " \"c_inner\": {\"id\": 6}, \"f_string\": \"last\"}");
  assert_int_equal(m->f_int32, -5);
  assert_true(m->f_int64 == INT64_MIN);
  assert_int_equal(m->f_uint32, UINT32_MAX);
  assert_true(m->f_uint64 == UINT64_MAX);
  assert_int_equal(m->f_sint32, 1000);
  assert_true(m->f_sint64 == INT64_MAX);
  assert_int_equal(m->f_fixed32, 7);
  assert_true(m->f_fixed64 == 8);
  assert_int_equal(m->f_sfixed32, -9);
  assert_true(m->f_sfixed64 == -10);
  assert_true(m->f_float == 1.5f);
  assert_true(isnan(m->f_double));
  assert_true(m->f_bool);
  /* jansson keeps the last of two equal keys, so "last" wins here. */
  assert_string_equal(m->f_string, "last");
  assert_int_equal(m->f_bytes.len, 2);
  assert_memory_equal(m->f_bytes.data, "\xff\xef", 2);
  assert_int_equal(m->f_enum, PBTEST__COLOR__GREEN);
  assert_int_equal(m->f_inner->id, 4);
  assert_int_equal(m->f_inner->n_vals, 2);
  assert_true(m->f_inner->vals[0] == 1 && m->f_inner->vals[1] == 2);
  assert_int_equal(m->n_r_float, 4);
  assert_true(isinf(m->r_float[0]) && m->r_float[0] > 0);
  assert_true(isinf(m->r_float[1]) && m->r_float[1] < 0);
  assert_true(m->r_float[2] == 2.0f && m->r_float[3] == 2.5f);
  assert_int_equal(m->n_r_enum, 3);
  assert_int_equal(m->r_enum[1], PBTEST__COLOR__BLUE);
  assert_int_equal(m->r_enum[2], PBTEST__COLOR__NEGATIVE);
  assert_int_equal(m->n_r_inner, 2);
  assert_string_equal(m->r_inner[1]->label, "z");
  assert_int_equal(m->n_m_inner, 1);
  assert_string_equal(m->m_inner[0]->key, "k");
  assert_int_equal(m->m_inner[0]->value->id, 1);
  assert_int_equal(m->n_m_str, 2);
  assert_string_equal(m->m_str[1]->key, "c");
  assert_string_equal(m->m_str[1]->value, "d");
  assert_int_equal(m->m_int[0]->key, INT32_MIN);
  assert_true(m->m_bool[0]->key);
  assert_int_equal(m->choice_case, PBTEST__ALL__CHOICE_C_INNER);
  assert_int_equal(m->c_inner->id, 6);
  free_all(m);

  /* null means "not set", for every kind of field. */
  m = to_all(
      "{\"f_int32\": null, \"f_inner\": null, \"r_int32\": null,"
      " \"m_str\": null, \"c_str\": null, \"c_int\": 2}");
  assert_int_equal(m->f_int32, 0);
  assert_null(m->f_inner);
  assert_int_equal(m->n_r_int32, 0);
  assert_int_equal(m->n_m_str, 0);
  assert_int_equal(m->choice_case, PBTEST__ALL__CHOICE_C_INT);
  free_all(m);
  m = to_all("{}");
  assert_ptr_equal(m->f_string, protobuf_c_empty_string);
  free_all(m);
}

static void test_to_message_errors(void **state) {
  json_t *deep, *cur;
  ProtobufCMessage *m;
  ifd_errmsg_t err;
  int i;
  (void)state;
  to_err("[]", "$: expected object for message pbtest.All, got array");
  to_err("{\"nope\": 1}", "$.nope: unknown field 'nope' in message pbtest.All");
  to_err(
      "{\"f_inner\": {\"id\": 1, \"max_batch\": 2}}",
      "$.f_inner.max_batch: unknown field 'max_batch' in message pbtest.Inner");
  to_err("{\"r_inner\": [{}, {\"id\": \"x\"}]}",
         "$.r_inner[1].id: expected integer for field 'id', got \"x\"");
  to_err("{\"f_inner\": {\"vals\": [1, 2.5]}}",
         "$.f_inner.vals[1]: expected integer for field 'vals', got 2.5");
  to_err("{\"f_int32\": 2147483648}",
         "$.f_int32: value out of range for int32 field 'f_int32'");
  to_err("{\"f_int32\": -2147483649}",
         "$.f_int32: value out of range for int32 field 'f_int32'");
  to_err("{\"f_uint32\": -1}",
         "$.f_uint32: value out of range for uint32 field 'f_uint32'");
  to_err("{\"f_uint64\": \"18446744073709551616\"}",
         "$.f_uint64: value out of range for uint64 field 'f_uint64'");
  to_err("{\"f_uint64\": 1e20}",
         "$.f_uint64: value out of range for uint64 field 'f_uint64'");
  to_err("{\"f_int64\": \"9223372036854775808\"}",
         "$.f_int64: value out of range for int64 field 'f_int64'");
  to_err("{\"f_int64\": \" 1\"}",
         "$.f_int64: expected integer for field 'f_int64', got \" 1\"");
  to_err("{\"f_int32\": true}",
         "$.f_int32: expected integer for field 'f_int32', got true");
  to_err("{\"f_bool\": 1}",
         "$.f_bool: expected true or false for field 'f_bool', got integer");
  to_err("{\"f_bool\": \"true\"}",
         "$.f_bool: expected true or false for field 'f_bool', got string");
  to_err("{\"f_float\": 1e39}",
         "$.f_float: value out of range for float field 'f_float'");
  to_err("{\"f_float\": \"nan\"}",
         "$.f_float: expected number for field 'f_float', got \"nan\"");
  to_err("{\"f_double\": []}",
         "$.f_double: expected number for field 'f_double', got array");
  to_err("{\"f_string\": 5}",
         "$.f_string: expected string for field 'f_string', got integer");
  to_err("{\"f_string\": \"a\\u0000b\"}",
         "$.f_string: string field 'f_string' contains a NUL character");
  to_err("{\"f_bytes\": \"abc*\"}",
         "$.f_bytes: invalid base64 for field 'f_bytes'");
  to_err("{\"f_bytes\": \"a\"}",
         "$.f_bytes: invalid base64 for field 'f_bytes'");
  to_err("{\"f_bytes\": \"YQ=\"}",
         "$.f_bytes: invalid base64 for field 'f_bytes'");
  to_err("{\"f_enum\": \"TYPE_FOO\"}",
         "$.f_enum: unknown enum value 'TYPE_FOO' for field 'f_enum'");
  to_err("{\"f_enum\": true}",
         "$.f_enum: expected enum name for field 'f_enum', got true");
  to_err("{\"f_enum\": 2147483648}",
         "$.f_enum: value out of range for enum field 'f_enum'");
  to_err("{\"f_inner\": 5}",
         "$.f_inner: expected object for field 'f_inner', got integer");
  to_err("{\"r_int32\": 5}",
         "$.r_int32: expected array for repeated field 'r_int32', got integer");
  to_err("{\"r_int32\": [1, null]}",
         "$.r_int32[1]: null is not allowed in repeated field 'r_int32'");
  to_err("{\"m_str\": []}",
         "$.m_str: expected object for map field 'm_str', got array");
  to_err("{\"m_str\": {\"a\": null}}",
         "$.m_str[\"a\"]: null is not a valid map value");
  to_err("{\"m_str\": {\"a\": 1}}",
         "$.m_str[\"a\"]: expected string for field 'value', got integer");
  to_err("{\"m_int\": {\"x\": \"y\"}}",
         "$.m_int[\"x\"]: expected integer as map key, got \"x\"");
  to_err("{\"m_int\": {\"2147483648\": \"y\"}}",
         "$.m_int[\"2147483648\"]: map key out of range for int32");
  to_err("{\"m_bool\": {\"yes\": 1}}",
         "$.m_bool[\"yes\"]: expected true or false as map key");
  to_err("{\"m_inner\": {\"k\": {\"bad\": 1}}}",
         "$.m_inner[\"k\"].bad: unknown field 'bad' in message pbtest.Inner");
  to_err("{\"c_int\": 1, \"c_str\": \"x\"}",
         "$.c_str: field 'c_str' and field 'c_int' are in one oneof");
  to_err("{\"f_int32\": 1, \"fInt32\": 2}",
         "$.fInt32: field 'f_int32' is given more than once");
  to_err_desc(&pbtest2__opt__descriptor, "{\"req\": 1, \"sub\": {}}",
              "$: missing required field 'name' in message pbtest2.Sub");
  to_err_desc(&pbtest2__opt__descriptor, "{\"req\": 1, \"kind\": \"THREE\"}",
              "$.kind: unknown enum value 'THREE' for field 'kind'");

  /* A JSON string with an embedded NUL in a key is not a field name. */
  {
    json_t *j = json_object();
    json_object_setn_new(j, "f_int32\0x", 9, json_integer(1));
    m = (ProtobufCMessage *)(uintptr_t)1;
    assert_int_equal(
        ifd_pbjson_to_message(&pbtest__all__descriptor, j, &m, &err),
        IFD_EPARSE);
    assert_null(m);
    json_decref(j);
  }
  assert_int_equal(
      ifd_pbjson_to_message(&pbtest__all__descriptor, NULL, &m, &err),
      IFD_EPARSE);

  /* Nesting: 64 levels of messages below the root are fine, 65 are not. */
  for (i = 64; i <= 65; i++) {
    int k;
    deep = json_object();
    cur = json_object();
    json_object_set_new(deep, "f_inner", cur);
    for (k = 1; k < i; k++) {
      json_t *next = json_object();
      json_object_set_new(cur, "child", next);
      cur = next;
    }
    m = NULL;
    if (i == 64) {
      assert_int_equal(
          ifd_pbjson_to_message(&pbtest__all__descriptor, deep, &m, &err), 0);
      protobuf_c_message_free_unpacked(m, NULL);
    } else {
      assert_int_equal(
          ifd_pbjson_to_message(&pbtest__all__descriptor, deep, &m, &err),
          IFD_EPARSE);
      assert_non_null(
          strstr(err.text, "messages nested deeper than 64 levels"));
      assert_null(m);
    }
    json_decref(deep);
  }
}

/* JSON -> message -> JSON gives back the input, in the printer's order. */
static void test_json_round_trip(void **state) {
  static const char doc[] =
      "{\"f_int32\":-1,\"f_int64\":-9223372036854775808,\"f_uint32\":"
      "4294967295,"
      "\"f_uint64\":\"18446744073709551615\",\"f_sint32\":3,\"f_sint64\":-4,"
      "\"f_fixed32\":5,\"f_fixed64\":6,\"f_sfixed32\":-7,\"f_sfixed64\":-8,"
      "\"f_float\":0.25,\"f_double\":-0.5,\"f_bool\":true,\"f_string\":\"str\","
      "\"f_bytes\":\"AAEC\",\"f_enum\":\"BLUE\","
      "\"f_inner\":{\"id\":1,\"label\":\"l\",\"vals\":[1,2],"
      "\"child\":{\"id\":2,\"label\":\"\",\"vals\":[]}},"
      "\"r_int32\":[1,2],\"r_uint64\":[0,\"18446744073709551615\"],"
      "\"r_float\":[\"NaN\",1.5],\"r_bool\":[true,false],\"r_string\":[\"a\"],"
      "\"r_bytes\":[\"\"],\"r_enum\":[\"RED\",7],"
      "\"r_inner\":[{\"id\":0,\"label\":\"\",\"vals\":[]}],\"r_double\":[0.125]"
      ","
      "\"r_sint64\":[-1],\"m_inner\":{\"x\":{\"id\":9,\"label\":\"\",\"vals\":["
      "]}},"
      "\"m_str\":{\"a\":\"b\"},\"m_int\":{\"-1\":\"m\"},\"m_bool\":{\"true\":1}"
      ","
      "\"c_inner\":{\"id\":3,\"label\":\"\",\"vals\":[]}}";
  json_t *in = load(doc), *out;
  ProtobufCMessage *m;
  ifd_errmsg_t err;
  (void)state;
  assert_int_equal(
      ifd_pbjson_to_message(&pbtest__all__descriptor, in, &m, &err), 0);
  out = ifd_pbjson_from_message(m);
  assert_dump(out, doc);
  assert_true(json_equal(in, out));
  json_decref(in);
  json_decref(out);
  protobuf_c_message_free_unpacked(m, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_empty_message),
      cmocka_unit_test(test_scalar_values),
      cmocka_unit_test(test_base64_lengths),
      cmocka_unit_test(test_repeated_maps_oneof),
      cmocka_unit_test(test_proto2_presence),
      cmocka_unit_test(test_declaration_order),
      cmocka_unit_test(test_to_message_values),
      cmocka_unit_test(test_to_message_errors),
      cmocka_unit_test(test_json_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
