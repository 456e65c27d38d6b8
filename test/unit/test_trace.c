/*
 * test/unit/test_trace.c - core/trace.c: settings (global, model
 * overrides, fallback, clearing, Triton's refusals), sampling by rate and
 * count, the JSON record (info, ordered timestamps, tensors, child
 * traces), and the files (one JSON array at exit, indexed files every
 * log_frequency traces), on a server without models.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "core/infer.h"
#include "core/model.h"
#include "core/server.h"
#include "core/server_internal.h"
#include "core/trace.h"

typedef struct fixture {
  uv_loop_t loop;
  ifd_server_t *s;
  ifd_model_t model; /* a stand-in: only name and version are read */
  char dir[64];
  char file[96];
} fixture_t;

static const ifd_model_ops_t no_ops;

static void start(fixture_t *f, const ifd_trace_config_t *tc) {
  ifd_server_opts_t o;
  ifd_errmsg_t err;
  memset(&o, 0, sizeof(o));
  o.ops = &no_ops;
  o.trace = *tc;
  assert_int_equal(uv_loop_init(&f->loop), 0);
  assert_int_equal(ifd_server_new(&f->loop, &o, &f->s, &err), 0);
  f->model.name = "m";
  f->model.version = 3;
}

/* Frees the server: the trace module writes its files and joins its
 * writer before this returns. */
static void stop(fixture_t *f) {
  ifd_server_free(f->s);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&f->loop), 0);
}

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof(*f));
  snprintf(f->dir, sizeof(f->dir), "/tmp/ifd_trace_XXXXXX");
  assert_non_null(mkdtemp(f->dir));
  snprintf(f->file, sizeof(f->file), "%s/t.json", f->dir);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
  if (system(cmd) != 0) return -1;
  free(f);
  return 0;
}

static void config(ifd_trace_config_t *c, const char *file, int level,
                   uint32_t rate) {
  ifd_trace_config_default(c);
  c->file = file;
  c->level = level;
  c->rate = rate;
}

/* A request of f->model, sampled as ifd_request_submit would. */
static ifd_request_t *sampled(fixture_t *f, const char *id) {
  ifd_request_t *req = ifd_request_new(f->s);
  assert_non_null(req);
  req->model = &f->model;
  req->id = id;
  if (f->s->rt.hooks.sample_on) ifd__trace_sample(req);
  return req;
}

/* Ends it as request_free does, without touching the stand-in model. */
static void finish(ifd_request_t *req) {
  if (req->trace != NULL) ifd__trace_finish(req);
  req->model = NULL;
  ifd_request_unref(req);
}

static char *slurp(const char *path) {
  FILE *fp = fopen(path, "rb");
  char *buf;
  long n;
  if (fp == NULL) return NULL;
  fseek(fp, 0, SEEK_END);
  n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  buf = calloc(1, (size_t)n + 1);
  if (fread(buf, 1, (size_t)n, fp) != (size_t)n) n = 0;
  fclose(fp);
  return buf;
}

static int count_of(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++) n++;
  return n;
}

static void test_defaults_and_get(void **state) {
  fixture_t *f = *state;
  ifd_trace_config_t c;
  ifd_trace_view_t v;
  ifd_trace_config_default(&c);
  assert_int_equal(c.level, 0);
  assert_int_equal(c.rate, 1000);
  assert_int_equal(c.count, -1);
  assert_int_equal(c.log_frequency, 0);
  start(f, &c);
  assert_int_equal(f->s->rt.hooks.sample_on, 0);
  ifd_trace_get(f->s, NULL, &v);
  assert_int_equal(v.rate, 1000);
  assert_string_equal(v.file, "");
  ifd_trace_get(f->s, "m", &v); /* no override: the global one */
  assert_int_equal(v.count, -1);
  stop(f);
}

static void test_updates(void **state) {
  fixture_t *f = *state;
  ifd_trace_config_t c;
  ifd_trace_update_t u;
  ifd_trace_view_t v;
  ifd_errmsg_t err;
  config(&c, f->file, 0, 1000);
  start(f, &c);
  /* Global: TIMESTAMPS at rate 2 turns sampling on. */
  memset(&u, 0, sizeof(u));
  u.has_level = 1;
  u.level = IFD_TRACE_TIMESTAMPS;
  u.has_rate = 1;
  u.rate = 2;
  assert_int_equal(ifd_trace_update(f->s, NULL, &u, &err), 0);
  assert_int_equal(f->s->rt.hooks.sample_on, 1);
  /* Model: its own count, the rest follows the global. */
  memset(&u, 0, sizeof(u));
  u.has_count = 1;
  u.count = 5;
  assert_int_equal(ifd_trace_update(f->s, "m", &u, &err), 0);
  ifd_trace_get(f->s, "m", &v);
  assert_int_equal(v.count, 5);
  assert_int_equal(v.rate, 2);
  assert_int_equal(v.level, IFD_TRACE_TIMESTAMPS);
  /* A global change reaches the fields the model does not give. */
  memset(&u, 0, sizeof(u));
  u.has_rate = 1;
  u.rate = 9;
  assert_int_equal(ifd_trace_update(f->s, "", &u, &err), 0);
  ifd_trace_get(f->s, "m", &v);
  assert_int_equal(v.rate, 9);
  assert_int_equal(v.count, 5);
  /* Clearing its only field drops the override. */
  memset(&u, 0, sizeof(u));
  u.clear_count = 1;
  assert_int_equal(ifd_trace_update(f->s, "m", &u, &err), 0);
  ifd_trace_get(f->s, "m", &v);
  assert_int_equal(v.count, -1);
  /* Refusals, with Triton's reasons; nothing changes. */
  memset(&u, 0, sizeof(u));
  u.has_rate = 1;
  u.rate = 0;
  assert_int_equal(ifd_trace_update(f->s, NULL, &u, &err), IFD_EINVAL);
  assert_string_equal(err.text,
                      "Attempting to set invalid trace setting :sample rate "
                      "must be non-zero");
  ifd_trace_get(f->s, NULL, &v);
  assert_int_equal(v.rate, 9);
  /* OFF is always accepted, and stops sampling. */
  memset(&u, 0, sizeof(u));
  u.has_level = 1;
  u.level = 0;
  assert_int_equal(ifd_trace_update(f->s, NULL, &u, &err), 0);
  assert_int_equal(f->s->rt.hooks.sample_on, 0);
  stop(f);
}

static void test_no_file_refused(void **state) {
  fixture_t *f = *state;
  ifd_trace_config_t c;
  ifd_trace_update_t u;
  ifd_errmsg_t err;
  config(&c, NULL, 0, 1);
  start(f, &c);
  memset(&u, 0, sizeof(u));
  u.has_level = 1;
  u.level = IFD_TRACE_TENSORS;
  assert_int_equal(ifd_trace_update(f->s, "m", &u, &err), IFD_EINVAL);
  assert_string_equal(err.text,
                      "Attempting to set invalid trace setting :trace file "
                      "name is not given");
  stop(f);
}

static void test_rate_count_and_file(void **state) {
  fixture_t *f = *state;
  ifd_trace_config_t c;
  ifd_trace_view_t v;
  ifd_request_t *r[10];
  char *text;
  int i, traced = 0;
  config(&c, f->file, IFD_TRACE_TIMESTAMPS, 3);
  c.count = 2;
  start(f, &c);
  for (i = 0; i < 10; i++) {
    r[i] = sampled(f, "rid");
    traced += r[i]->trace != NULL;
  }
  /* Requests 3 and 6 traced; then the count is spent. */
  assert_int_equal(traced, 2);
  assert_non_null(r[2]->trace);
  assert_non_null(r[5]->trace);
  assert_int_equal(f->s->rt.hooks.sample_on, 0);
  ifd_trace_get(f->s, NULL, &v);
  assert_int_equal(v.count, 0);
  r[2]->t_queued = 100;
  r[2]->t_exec_start = 200;
  r[2]->t_exec_end = 300;
  for (i = 0; i < 10; i++) finish(r[i]);
  stop(f);
  text = slurp(f->file);
  assert_non_null(text);
  assert_int_equal(text[0], '[');
  assert_int_equal(text[strlen(text) - 1], ']');
  assert_int_equal(count_of(text,
                            "\"model_name\":\"m\",\"model_version\":3,"
                            "\"request_id\":\"rid\"}"),
                   2);
  assert_non_null(strstr(text, "{\"name\":\"QUEUE_START\",\"ns\":100}"));
  /* In time order: QUEUE_START (100) before COMPUTE_START (200). */
  assert_true(strstr(text, "QUEUE_START") < strstr(text, "COMPUTE_START"));
  assert_null(strstr(text, "HTTP_")); /* no front end: no receive/send */
  free(text);
}

static void test_log_frequency(void **state) {
  fixture_t *f = *state;
  ifd_trace_config_t c;
  char path[128], *text;
  int i, k;
  config(&c, f->file, IFD_TRACE_TIMESTAMPS, 1);
  c.log_frequency = 2;
  start(f, &c);
  for (i = 0; i < 5; i++) finish(sampled(f, ""));
  stop(f);
  for (k = 0; k < 3; k++) {
    snprintf(path, sizeof(path), "%s.%d", f->file, k);
    text = slurp(path);
    assert_non_null(text);
    assert_int_equal(count_of(text, "\"model_name\""), k < 2 ? 2 : 1);
    assert_int_equal(text[0], '[');
    free(text);
  }
  snprintf(path, sizeof(path), "%s.3", f->file);
  assert_int_not_equal(access(path, F_OK), 0);
  assert_int_not_equal(access(f->file, F_OK), 0);
}

static void test_tensors_children_names(void **state) {
  fixture_t *f = *state;
  ifd_trace_config_t c;
  ifd_request_t *p, *child;
  ifd_response_t *resp;
  int64_t shape[2] = {1, 3};
  int32_t in[3] = {1, -2, 3};
  unsigned char bytes[] = {2, 0, 0, 0, 'h', '"'};
  int64_t one = 1;
  uint64_t pid;
  ifd_input_t *inp;
  char *text;
  config(&c, f->file, IFD_TRACE_TIMESTAMPS | IFD_TRACE_TENSORS, 1);
  start(f, &c);
  p = sampled(f, "");
  assert_non_null(p->trace);
  inp = ifd_request_add_input(p, "IN", 2, IFD_TYPE_INT32, shape, 2);
  inp->data = in;
  inp->byte_size = sizeof(in);
  inp = ifd_request_add_input(p, "S", 1, IFD_TYPE_BYTES, &one, 1);
  inp->data = bytes;
  inp->byte_size = sizeof(bytes);
  child = ifd_request_new(f->s);
  ifd_trace_child(child, p);
  assert_non_null(child->trace);
  assert_int_equal(child->trace->parent_id, p->trace->id);
  pid = p->trace->id;
  child->model = &f->model;
  /* A response with one output, delivered on the loop. */
  resp = calloc(1, sizeof(*resp));
  resp->req = p;
  resp->flags = IFD_RESPONSE_FINAL;
  resp->n_outputs = 1;
  resp->outputs = calloc(1, sizeof(ifd_output_t));
  resp->outputs[0].name = "OUT";
  resp->outputs[0].dtype = IFD_TYPE_INT32;
  resp->outputs[0].shape = shape;
  resp->outputs[0].ndims = 2;
  resp->outputs[0].buffer = in;
  resp->outputs[0].byte_size = sizeof(in);
  ifd__trace_response(p, resp);
  free(resp->outputs);
  free(resp);
  /* The parent goes first; the group is written with its last trace. */
  finish(p);
  finish(child);
  stop(f);
  text = slurp(f->file);
  assert_non_null(text);
  assert_non_null(strstr(text,
                         "\"activity\":\"TENSOR_QUEUE_INPUT\","
                         "\"tensor\":{\"name\":\"IN\",\"data\":\"1,-2,"
                         "3\",\"shape\":\"1,3\",\"dtype\":\"INT32\"}"));
  assert_non_null(strstr(text, "\"activity\":\"TENSOR_BACKEND_INPUT\""));
  assert_non_null(strstr(text,
                         "\"activity\":\"TENSOR_BACKEND_OUTPUT\","
                         "\"tensor\":{\"name\":\"OUT\""));
  /* BYTES: each element quoted, a quote inside escaped. */
  assert_non_null(strstr(text, "\"data\":\"\\\"h\\\"\\\"\""));
  {
    char want[48];
    snprintf(want, sizeof(want), "\"parent_id\":%llu", (unsigned long long)pid);
    assert_non_null(strstr(text, want));
  }
  assert_non_null(strstr(text, "INFER_RESPONSE_COMPLETE"));
  assert_int_equal(count_of(text, "\"model_name\""), 2);
  free(text);
  assert_string_equal(
      ifd_trace_point_name(IFD_TP_RECV_START, IFD_TRACE_PROTO_GRPC),
      "GRPC_WAITREAD_START");
  assert_string_equal(
      ifd_trace_point_name(IFD_TP_SEND_END, IFD_TRACE_PROTO_HTTP),
      "HTTP_SEND_END");
  assert_string_equal(
      ifd_trace_point_name(IFD_TP_COMPUTE_INPUT_END, IFD_TRACE_PROTO_HTTP),
      "COMPUTE_INPUT_END");
}

static void test_model_only_sampling(void **state) {
  fixture_t *f = *state;
  ifd_trace_config_t c;
  ifd_trace_update_t u;
  ifd_errmsg_t err;
  ifd_request_t *a, *b;
  ifd_model_t other;
  config(&c, f->file, 0, 1);
  start(f, &c);
  memset(&u, 0, sizeof(u));
  u.has_level = 1;
  u.level = IFD_TRACE_TIMESTAMPS;
  assert_int_equal(ifd_trace_update(f->s, "m", &u, &err), 0);
  assert_int_equal(f->s->rt.hooks.sample_on, 1);
  a = sampled(f, "");
  assert_non_null(a->trace);
  memset(&other, 0, sizeof(other));
  other.name = "n";
  b = ifd_request_new(f->s);
  b->model = &other;
  ifd__trace_sample(b);
  assert_null(b->trace);
  finish(a);
  finish(b);
  /* The setting it was sampled from was replaced meanwhile: still
   * written (by the old setting, when its last trace went). */
  stop(f);
  assert_int_equal(access(f->file, F_OK), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_defaults_and_get, setup, teardown),
      cmocka_unit_test_setup_teardown(test_updates, setup, teardown),
      cmocka_unit_test_setup_teardown(test_no_file_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rate_count_and_file, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_log_frequency, setup, teardown),
      cmocka_unit_test_setup_teardown(test_tensors_children_names, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_model_only_sampling, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
