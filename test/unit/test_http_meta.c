/*
 * test/unit/test_http_meta.c - the JSON bodies of the metadata, statistics
 * and repository index routes (frontend/http_meta.c), written from core's plain
 * structs, and the text string writer they use (base/jsonw.c).
 *
 * The bodies were built with jansson before core handed out structs, and
 * clients compare them with tritonserver's: each writer is checked byte for
 * byte against that jansson construction (kept below as the reference, in
 * the field order core used) on hand-made and random values, and against
 * literal texts for the layouts the reference capture shows.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <inttypes.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/server.h"
#include "frontend/internal.h"

/* ---- helpers ------------------------------------------------------------- */

/* The text a writer produced, NUL-terminated (free it). */
static char *text_of(ifd_hbuf_t *b) {
  size_t n = ifd_hbuf_size(b);
  char *t = malloc(n + 1);
  assert_false(b->oom);
  assert_non_null(t);
  memcpy(t, b->data + b->start, n);
  t[n] = '\0';
  ifd_hbuf_free(b);
  return t;
}

/* jansson's compact text of `j` (takes j), as the routes sent it. */
static char *jansson_text(json_t *j) {
  char *t;
  assert_non_null(j);
  t = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
  json_decref(j);
  assert_non_null(t);
  return t;
}

static void assert_same(char *ours, char *ref) {
  if (strcmp(ours, ref) != 0) {
    fprintf(stderr, "ours: %s\nref:  %s\n", ours, ref);
    fail();
  }
  free(ours);
  free(ref);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* A count or duration as the statistics hold them: mostly small, sometimes
 * up to INT64_MAX (jansson's integers are signed: that is its range). */
static uint64_t rand_count(void) {
  switch (next_rand() % 4) {
    case 0:
      return 0;
    case 1:
      return next_rand() % 1000;
    case 2:
      return next_rand() % 10000000000ull;
    default:
      return next_rand() >> 1;
  }
}

/* ---- the reference: the jansson construction, as core did it ------------- */

static json_t *ref_dur(const ifd_duration_t *d) {
  return json_pack("{s:I, s:I}", "count", (json_int_t)d->count, "ns",
                   (json_int_t)d->ns);
}

static json_t *ref_stats_entry(const ifd_stats_entry_t *e) {
  const ifd_model_stats_t *st = e->stats;
  json_t *batches = json_array();
  char v[24];
  size_t i;

  for (i = 0; i < st->n_batches; i++) {
    const ifd_batch_stats_t *b = &st->batches[i];
    json_array_append_new(
        batches, json_pack("{s:I, s:o, s:o, s:o}", "batch_size",
                           (json_int_t)b->batch_size, "compute_input",
                           ref_dur(&b->compute_input), "compute_infer",
                           ref_dur(&b->compute_infer), "compute_output",
                           ref_dur(&b->compute_output)));
  }
  snprintf(v, sizeof(v), "%" PRId64, e->version);
  return json_pack(
      "{s:s, s:s, s:I, s:I, s:I, s:{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o},"
      " s:{}, s:o, s:[]}",
      "name", e->name, "version", v, "last_inference",
      (json_int_t)st->last_inference_ms, "inference_count",
      (json_int_t)st->inference_count, "execution_count",
      (json_int_t)st->execution_count, "inference_stats", "success",
      ref_dur(&st->success), "fail", ref_dur(&st->fail), "queue",
      ref_dur(&st->queue), "compute_input", ref_dur(&st->compute_input),
      "compute_infer", ref_dur(&st->compute_infer), "compute_output",
      ref_dur(&st->compute_output), "cache_hit", ref_dur(&st->cache_hit),
      "cache_miss", ref_dur(&st->cache_miss), "response_stats", "batch_stats",
      batches, "memory_usage");
}

static json_t *ref_stats(const ifd_stats_entry_t *e, size_t n) {
  json_t *arr = json_array();
  size_t i;
  for (i = 0; i < n; i++) json_array_append_new(arr, ref_stats_entry(&e[i]));
  return json_pack("{s:o}", "model_stats", arr);
}

static json_t *ref_tensor(const ifd_tensor_info_t *t) {
  json_t *shape = json_array();
  size_t i;
  for (i = 0; i < t->n_shape; i++)
    json_array_append_new(shape, json_integer(t->shape[i]));
  return json_pack("{s:s, s:s, s:o}", "name", t->name, "datatype",
                   ifd_dtype_name(t->dtype), "shape", shape);
}

static json_t *ref_model_info(const ifd_model_info_t *m) {
  json_t *versions = json_array(), *inputs = json_array(),
         *outputs = json_array();
  size_t i;
  for (i = 0; i < m->n_versions; i++) {
    char buf[24];
    snprintf(buf, sizeof(buf), "%" PRId64, m->versions[i]);
    json_array_append_new(versions, json_string(buf));
  }
  for (i = 0; i < m->n_inputs; i++)
    json_array_append_new(inputs, ref_tensor(&m->inputs[i]));
  for (i = 0; i < m->n_outputs; i++)
    json_array_append_new(outputs, ref_tensor(&m->outputs[i]));
  return json_pack("{s:s, s:o, s:s, s:o, s:o}", "name", m->name, "versions",
                   versions, "platform", m->platform, "inputs", inputs,
                   "outputs", outputs);
}

static json_t *ref_index(const ifd_index_entry_t *e, size_t n) {
  json_t *arr = json_array();
  size_t i;
  for (i = 0; i < n; i++) {
    json_t *o = json_pack("{s:s}", "name", e[i].name);
    if (e[i].version >= 0) {
      char buf[24];
      snprintf(buf, sizeof(buf), "%" PRId64, e[i].version);
      json_object_set_new(o, "version", json_string(buf));
    }
    if (e[i].state != NULL)
      json_object_set_new(o, "state", json_string(e[i].state));
    if (e[i].reason != NULL)
      json_object_set_new(o, "reason", json_string(e[i].reason));
    json_array_append_new(arr, o);
  }
  return arr;
}

/* ---- server metadata ----------------------------------------------------- */

static void test_server_info(void **state) {
  static const char *const ext[] = {"a", "b"};
  ifd_server_info_t none = {"x", "1", NULL, 0}, two = {"n", "v", ext, 2};
  ifd_hbuf_t b;
  (void)state;

  ifd_hbuf_init(&b, 0);
  ifd__json_server_info(&b, ifd_server_metadata(NULL));
  assert_same(text_of(&b),
              strdup("{\"name\":\"triton\",\"version\":\"" IFD_SERVER_VERSION
                     "\",\"extensions\":[\"classification\",\"sequence\","
                     "\"model_repository\","
                     "\"model_repository(unload_dependents)\","
                     "\"schedule_policy\",\"model_configuration\","
                     "\"system_shared_memory\",\"cuda_shared_memory\","
                     "\"binary_tensor_data\",\"parameters\","
                     "\"statistics\",\"trace\",\"logging\"]}"));
  ifd_hbuf_init(&b, 0);
  ifd__json_server_info(&b, &none);
  assert_same(text_of(&b),
              strdup("{\"name\":\"x\",\"version\":\"1\",\"extensions\":[]}"));
  ifd_hbuf_init(&b, 0);
  ifd__json_server_info(&b, &two);
  assert_same(text_of(&b), strdup("{\"name\":\"n\",\"version\":\"v\","
                                  "\"extensions\":[\"a\",\"b\"]}"));
}

/* ---- model metadata ------------------------------------------------------ */

static void test_model_info(void **state) {
  int64_t s_in[2] = {-1, 16}, s_out[3] = {-1, 2, 3}, s_scalar[1] = {1};
  int64_t versions[3] = {1, 7, INT64_MAX};
  ifd_tensor_info_t in[2] = {{"INPUT0", IFD_TYPE_FP32, s_in, 2},
                             {"IN\"1\"", IFD_TYPE_BYTES, s_scalar, 1}};
  ifd_tensor_info_t out[1] = {{"OUTPUT0", IFD_TYPE_INT64, s_out, 3}};
  ifd_model_info_t m = {
      "identity_fp32", "identity", versions, 1, in, 1, out, 1, NULL};
  ifd_hbuf_t b;
  (void)state;

  /* The reference capture's layout, literally. */
  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd__json_model_info(&b, &m);
  assert_same(text_of(&b),
              strdup("{\"name\":\"identity_fp32\",\"versions\":[\"1\"],"
                     "\"platform\":\"identity\",\"inputs\":[{\"name\":"
                     "\"INPUT0\",\"datatype\":\"FP32\",\"shape\":[-1,16]}],"
                     "\"outputs\":[{\"name\":\"OUTPUT0\",\"datatype\":"
                     "\"INT64\",\"shape\":[-1,2,3]}]}"));
  /* More of everything, and nothing of anything, as jansson wrote them. */
  m.n_versions = 3;
  m.n_inputs = 2;
  ifd_hbuf_init(&b, 0);
  ifd__json_model_info(&b, &m);
  assert_same(text_of(&b), jansson_text(ref_model_info(&m)));
  m.n_versions = m.n_inputs = m.n_outputs = 0;
  m.platform = "";
  ifd_hbuf_init(&b, 0);
  ifd__json_model_info(&b, &m);
  assert_same(text_of(&b), jansson_text(ref_model_info(&m)));
  in[0].n_shape = 0; /* a scalar of a non-batching model */
  m.n_inputs = 1;
  ifd_hbuf_init(&b, 0);
  ifd__json_model_info(&b, &m);
  assert_same(text_of(&b), jansson_text(ref_model_info(&m)));
}

/* ---- statistics ---------------------------------------------------------- */

static void test_stats_layout(void **state) {
  ifd_model_stats_t st;
  ifd_request_times_t t = {1, 2, 3, 4, 5, 6};
  ifd_stats_entry_t e = {"m", 3, &st};
  ifd_hbuf_t b;
  (void)state;

  memset(&st, 0, sizeof(st));
  ifd_stats_request(&st, &t, 1, 1, 7);
  ifd_stats_batch(&st, 1, 3, 4, 5, 6);
  st.last_inference_ms = 42;
  ifd_hbuf_init(&b, 0);
  ifd__json_stats(&b, &e, 1);
  assert_same(
      text_of(&b),
      strdup(
          "{\"model_stats\":[{\"name\":\"m\",\"version\":\"3\","
          "\"last_inference\":42,"
          "\"inference_count\":1,\"execution_count\":1,\"inference_stats\":{"
          "\"success\":{\"count\":1,\"ns\":5},\"fail\":{\"count\":0,\"ns\":0},"
          "\"queue\":{\"count\":1,\"ns\":1},\"compute_input\":{\"count\":1,"
          "\"ns\":1},"
          "\"compute_infer\":{\"count\":1,\"ns\":1},"
          "\"compute_output\":{\"count\":1,\"ns\":1},"
          "\"cache_hit\":{\"count\":0,\"ns\":0},\"cache_miss\":{\"count\":0,"
          "\"ns\":0}},\"response_stats\":{},\"batch_stats\":[{\"batch_size\":"
          "1,\"compute_input\":{\"count\":1,\"ns\":1},\"compute_infer\":{"
          "\"count\":1,\"ns\":1},\"compute_output\":{\"count\":1,\"ns\":1}}],"
          "\"memory_usage\":[]}]}"));
  /* No model at all. */
  ifd_hbuf_init(&b, 0);
  ifd__json_stats(&b, NULL, 0);
  assert_same(text_of(&b), strdup("{\"model_stats\":[]}"));
  ifd_stats_free(&st);
}

/* Random counters, several entries and batch sizes: byte for byte what
 * jansson wrote. */
static void test_stats_random(void **state) {
  ifd_model_stats_t st[4];
  ifd_stats_entry_t e[4] = {{"a", 1, &st[0]},
                            {"b", 0, &st[1]},
                            {"b", 12, &st[2]},
                            {"c\t\"x\"", INT64_MAX, &st[3]}};
  int round, k;
  size_t i;
  (void)state;

  for (round = 0; round < 200; round++) {
    for (k = 0; k < 4; k++) {
      ifd_duration_t *d[8] = {&st[k].success,       &st[k].fail,
                              &st[k].queue,         &st[k].compute_input,
                              &st[k].compute_infer, &st[k].compute_output,
                              &st[k].cache_hit,     &st[k].cache_miss};
      memset(&st[k], 0, sizeof(st[k]));
      st[k].last_inference_ms = rand_count();
      st[k].inference_count = rand_count();
      st[k].execution_count = rand_count();
      for (i = 0; i < 8; i++) {
        d[i]->count = rand_count();
        d[i]->ns = rand_count();
      }
      for (i = next_rand() % 4; i > 0; i--)
        assert_int_equal(
            ifd_stats_batch(&st[k], 1 + next_rand() % 64, 10,
                            10 + next_rand() % 100, 200, 200 + next_rand() % 9),
            0);
    }
    {
      ifd_hbuf_t b;
      size_t n = 1 + (size_t)(next_rand() % 4);
      ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
      ifd__json_stats(&b, e, n);
      assert_same(text_of(&b), jansson_text(ref_stats(e, n)));
    }
    for (k = 0; k < 4; k++) ifd_stats_free(&st[k]);
  }
}

/* ---- repository index ---------------------------------------------------- */

static void test_repo_index(void **state) {
  ifd_index_entry_t rows[6] = {
      {"a", 1, "READY", NULL},
      {"bad", -1, "UNAVAILABLE", "/r/bad/config.pbtxt:6:1: expected ','"},
      {"fail", 3, "UNAVAILABLE", "backend said \"no\"\\\n"},
      {"loading", -1, "LOADING", NULL},
      {"never", -1, NULL, NULL},
      {"z", 0, "UNLOADING", ""},
  };
  ifd_hbuf_t b;
  (void)state;

  ifd_hbuf_init(&b, 0);
  ifd__json_repo_index(&b, rows, 2);
  assert_same(text_of(&b),
              strdup("[{\"name\":\"a\",\"version\":\"1\",\"state\":\"READY\"},"
                     "{\"name\":\"bad\",\"state\":\"UNAVAILABLE\",\"reason\":"
                     "\"/r/bad/config.pbtxt:6:1: expected ','\"}]"));
  ifd_hbuf_init(&b, 0);
  ifd__json_repo_index(&b, rows, 6);
  assert_same(text_of(&b), jansson_text(ref_index(rows, 6)));
  /* A model never loaded (explicit mode): its name only, as Triton. */
  ifd_hbuf_init(&b, 0);
  ifd__json_repo_index(&b, rows + 4, 1);
  assert_same(text_of(&b), strdup("[{\"name\":\"never\"}]"));
  ifd_hbuf_init(&b, 0);
  ifd__json_repo_index(&b, NULL, 0);
  assert_same(text_of(&b), strdup("[]"));
}

/* ---- text strings -------------------------------------------------------- */

static char *text_json(const char *s, size_t n) {
  ifd_hbuf_t b;
  ifd_hbuf_init(&b, 0);
  ifd_json_text(&b, s, n);
  return text_of(&b);
}

/* Well-formed UTF-8 is written as jansson wrote it (which escapes control
 * characters with upper-case hex, where we write lower case: both are the
 * same JSON string). */
static void test_text_valid(void **state) {
  static const char *const cases[] = {"",
                                      "plain",
                                      "quote\" back\\slash / slash",
                                      "\t\n\r\b\f",
                                      "caf\xc3\xa9",
                                      "\xe2\x82\xac\xf0\x9f\x98\x80",
                                      "\xef\xbf\xbf",
                                      "\xf4\x8f\xbf\xbf",
                                      "\x7f"};
  size_t i;
  (void)state;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    assert_same(text_json(cases[i], strlen(cases[i])),
                jansson_text(json_string(cases[i])));
  assert_same(text_json("\x01\x1f", 2), strdup("\"\\u0001\\u001f\""));
  /* An embedded NUL is a character like any other. */
  assert_same(text_json("a\0b", 3), strdup("\"a\\u0000b\""));
}

/* Each byte of an ill-formed sequence becomes U+FFFD, so the body is always
 * JSON that a client can decode (jansson refused such a string, and the
 * route answered 500 or dropped the row). */
static void test_text_ill_formed(void **state) {
  static const struct {
    const char *in, *out;
  } cases[] = {
      {"\xff", "\"\xef\xbf\xbd\""},
      {"a\x80z", "\"a\xef\xbf\xbdz\""},
      {"\xc3", "\"\xef\xbf\xbd\""},                 /* truncated */
      {"\xc0\xaf", "\"\xef\xbf\xbd\xef\xbf\xbd\""}, /* overlong */
      {"\xe0\x80\xaf", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""},
      {"\xed\xa0\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""}, /* D800 */
      {"\xf4\x90\x80\x80x",
       "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdx\""}, /* >10FFFF */
      {"ok\xc3\xa9\xe2\x82\"", "\"ok\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\\\"\""},
  };
  size_t i;
  (void)state;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char *got = text_json(cases[i].in, strlen(cases[i].in));
    json_t *back = json_loads(got, JSON_DECODE_ANY, NULL);
    assert_non_null(back); /* well-formed JSON */
    json_decref(back);
    assert_same(got, strdup(cases[i].out));
  }
}

/* Random bytes: valid input is written as jansson would write it, and any
 * input gives text jansson reads back. */
static void test_text_random(void **state) {
  char in[24];
  int round;
  size_t i, n;
  (void)state;

  for (round = 0; round < 20000; round++) {
    char *got;
    json_t *j;
    n = next_rand() % sizeof(in);
    for (i = 0; i < n; i++) {
      uint64_t r = next_rand();
      /* Bias towards lead and continuation bytes. */
      in[i] = (char)(r % 3 == 0   ? 0x80 | (r >> 8) % 64
                     : r % 3 == 1 ? 0xc0 | (r >> 8) % 64
                                  : 0x20 + (r >> 8) % 96);
    }
    got = text_json(in, n);
    j = json_loadb(got, strlen(got), JSON_DECODE_ANY, NULL);
    assert_non_null(j);
    json_decref(j);
    j = json_stringn(in, n);
    if (j != NULL)
      assert_same(got, jansson_text(j));
    else
      free(got);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_server_info),
      cmocka_unit_test(test_model_info),
      cmocka_unit_test(test_stats_layout),
      cmocka_unit_test(test_stats_random),
      cmocka_unit_test(test_repo_index),
      cmocka_unit_test(test_text_valid),
      cmocka_unit_test(test_text_ill_formed),
      cmocka_unit_test(test_text_random),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
