/*
 * test/unit/test_server.c - the server's registry and lifecycle, with fake
 * model operations in place of backends: start-up loading on the thread
 * pool, version policies, failures that stay local to one model, lookups and
 * their errors, the metadata, statistics and repository index structs,
 * request validation, shutdown unloading in reverse load order with nothing
 * left on the loop, and that every event queued for a model runs before the
 * model is freed (the fake unload pushes one, as backend_api's does).
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/model.h"
#include "core/server.h"
#include "test/unit/repo_fixture.h"

static char *unload_log[32];
static int n_unloaded, n_loaded, submitted;

/* ---- fake model operations ------------------------------------------------
 */

static int fake_load(ifd_model_t *m, ifd_errmsg_t *err) {
  if (strncmp(m->name, "fail", 4) == 0)
    return ifd_errf(err, IFD_EINVAL, "backend refused '%s'", m->name);
  __atomic_add_fetch(&n_loaded, 1, __ATOMIC_SEQ_CST);
  return 0;
}

/* What backend_api's unload leaves behind: an event, run on the loop later,
 * that writes into the model (loader.c's on_model_freed). */
typedef struct model_ev {
  ifd_event_t ev;
  ifd_model_t *m; /* borrowed: must still be alive when ev runs */
} model_ev_t;

static model_ev_t unload_evs[32];
static int n_unload_evs;

static void on_model_ev(ifd_event_t *ev) {
  model_ev_t *e = (model_ev_t *)ev;
  e->m->backend_model = NULL;
  n_unload_evs++;
}

static void fake_unload(ifd_model_t *m) {
  char buf[64];
  model_ev_t *e = &unload_evs[n_unloaded];
  snprintf(buf, sizeof(buf), "%s:%lld", m->name, (long long)m->version);
  unload_log[n_unloaded++] = strdup(buf);
  e->m = m;
  e->ev.fn = on_model_ev;
  ifd_evq_push(ifd_server_evq(m->server), &e->ev);
}

static int fake_submit(ifd_model_t *m, ifd_request_t *req, ifd_errmsg_t *err) {
  (void)m;
  (void)err;
  submitted++;
  /* Refuse like a scheduler would after queueing: answer and release. */
  ifd_request_abort(req, IFD_EUNAVAIL, "fake scheduler");
  return 0;
}

static void fake_stop(ifd_model_t *m) {
  (void)m;
}
static uint64_t fake_pending(const ifd_model_t *m) {
  (void)m;
  return 0;
}

static const ifd_model_ops_t fake_ops = {
    fake_load, fake_unload, fake_submit, fake_stop, fake_pending, fake_pending,
    NULL,      NULL,        NULL,        NULL,      NULL,         NULL};

#define ID_CONFIG(name, mbs)                                        \
  "name: \"" name "\" backend: \"identity\" max_batch_size: " #mbs  \
  " input [{ name: \"INPUT0\" data_type: TYPE_FP32 dims: [ 4 ] }] " \
  "output [{ name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [ 4 ] }] "

static void make_repo(void) {
  snprintf(root, sizeof(root), "/tmp/ifd_srv_XXXXXX");
  assert_non_null(mkdtemp(root));
  mkdirs("a");
  mkdirs("a/1");
  write_file("a/config.pbtxt", ID_CONFIG("a", 8));
  mkdirs("v");
  mkdirs("v/1");
  mkdirs("v/2");
  mkdirs("v/3");
  write_file("v/config.pbtxt",
             ID_CONFIG("v", 0) "version_policy { latest { num_versions: 2 } }");
  mkdirs("fail_backend");
  mkdirs("fail_backend/1");
  write_file("fail_backend/config.pbtxt", ID_CONFIG("fail_backend", 0));
  mkdirs("bad_syntax");
  mkdirs("bad_syntax/1");
  write_file("bad_syntax/config.pbtxt",
             "name: \"bad_syntax\" max_batch_size: {");
  mkdirs("no_versions");
  write_file("no_versions/config.pbtxt", ID_CONFIG("no_versions", 0));
}

typedef struct run {
  uv_loop_t loop;
  ifd_server_t *s;
  int failed;
  int loaded;
  int stopped;
} run_t;

static void on_loaded(ifd_server_t *s, int failed, void *arg) {
  run_t *r = arg;
  (void)s;
  r->failed = failed;
  r->loaded = 1;
}

static void on_stopped(ifd_server_t *s, void *arg) {
  run_t *r = arg;
  r->stopped = 1;
  ifd_server_free(s);
}

static int responses;
static int last_error;
static void on_response(ifd_response_t *resp, void *arg) {
  (void)arg;
  responses++;
  last_error = resp->error;
  ifd_response_free(resp);
}

static void test_lifecycle(void **state) {
  const char *repos[1];
  ifd_server_opts_t o;
  ifd_errmsg_t err;
  run_t r;
  ifd_model_t *m;
  ifd_model_info_t info;
  ifd_index_entry_t *rows;
  ifd_stats_entry_t *stats;
  size_t n_rows;
  ifd_request_t *req;
  int64_t shape[2] = {2, 4};
  float data[8] = {0};
  int i;
  (void)state;

  make_repo();
  repos[0] = root;
  memset(&o, 0, sizeof(o));
  memset(&r, 0, sizeof(r));
  o.repos = repos;
  o.n_repos = 1;
  o.strict_readiness = 1;
  o.ops = &fake_ops;
  assert_int_equal(uv_loop_init(&r.loop), 0);
  assert_int_equal(ifd_server_new(&r.loop, &o, &r.s, &err), 0);
  assert_true(ifd_server_live(r.s));
  assert_false(ifd_server_ready(r.s));
  ifd_server_start(r.s, on_loaded, &r);
  while (!r.loaded) uv_run(&r.loop, UV_RUN_ONCE);

  /* a:1, v:2, v:3 load; fail_backend, bad_syntax, no_versions fail alone. */
  assert_int_equal(n_loaded, 3);
  assert_int_equal(r.failed, 3);
  assert_false(ifd_server_ready(r.s)); /* strict readiness */
  assert_true(ifd_server_model_ready(r.s, "a", 1, -1));
  assert_true(ifd_server_model_ready(r.s, "v", 1, 3));
  assert_false(ifd_server_model_ready(r.s, "v", 1, 1));
  assert_false(ifd_server_model_ready(r.s, "fail_backend", 12, -1));

  /* Lookups and their errors. */
  assert_int_equal(ifd_server_find_model(r.s, "v", 1, -1, &m, &err), 0);
  assert_int_equal(m->version, 3);
  assert_int_equal(ifd_server_find_model(r.s, "nope", 4, -1, &m, &err),
                   IFD_ENOTFOUND);
  assert_string_equal(err.text,
                      "Request for unknown model: 'nope' is not found");
  assert_int_equal(ifd_server_find_model(r.s, "v", 1, 7, &m, &err),
                   IFD_ENOTFOUND);
  assert_non_null(strstr(err.text, "version 7 is not found"));
  assert_int_equal(ifd_server_find_model(r.s, "fail_backend", 12, 1, &m, &err),
                   IFD_EUNAVAIL);
  /* No READY version: NOT_FOUND "... has no available versions", as Triton. */
  assert_int_equal(ifd_server_find_model(r.s, "bad_syntax", 10, -1, &m, &err),
                   IFD_ENOTFOUND);
  assert_non_null(strstr(err.text, "has no available versions"));

  /* Server metadata: static strings. */
  {
    const ifd_server_info_t *si = ifd_server_metadata(r.s);
    assert_string_equal(si->name, "triton");
    assert_string_equal(si->version, IFD_SERVER_VERSION);
    assert_int_equal(si->n_extensions, 13);
    assert_string_equal(si->extensions[0], "classification");
    assert_string_equal(si->extensions[1], "sequence");
    assert_string_equal(si->extensions[3],
                        "model_repository(unload_dependents)");
    assert_string_equal(si->extensions[6], "system_shared_memory");
    assert_string_equal(si->extensions[10], "statistics");
    assert_string_equal(si->extensions[11], "trace");
    assert_string_equal(si->extensions[12], "logging");
  }

  /* Model metadata: ready versions only, batch dimension prepended. */
  assert_int_equal(ifd_server_find_model(r.s, "a", 1, -1, &m, &err), 0);
  assert_int_equal(ifd_server_model_metadata(r.s, m, &info), 0);
  assert_string_equal(info.name, "a");
  assert_string_equal(info.platform, "identity"); /* no platform: backend */
  assert_int_equal(info.n_versions, 1);
  assert_int_equal(info.versions[0], 1);
  assert_int_equal(info.n_inputs, 1);
  assert_string_equal(info.inputs[0].name, "INPUT0");
  assert_int_equal(info.inputs[0].dtype, IFD_TYPE_FP32);
  assert_int_equal(info.inputs[0].n_shape, 2);
  assert_int_equal(info.inputs[0].shape[0], -1);
  assert_int_equal(info.inputs[0].shape[1], 4);
  assert_int_equal(info.n_outputs, 1);
  assert_string_equal(info.outputs[0].name, "OUTPUT0");
  assert_int_equal(info.outputs[0].n_shape, 2);
  assert_int_equal(info.outputs[0].shape[0], -1);
  ifd_model_info_free(&info);
  assert_null(info.mem);
  /* v does not batch (no -1) and has two ready versions of three. */
  assert_int_equal(ifd_server_find_model(r.s, "v", 1, 2, &m, &err), 0);
  assert_int_equal(ifd_server_model_metadata(r.s, m, &info), 0);
  assert_int_equal(info.n_versions, 2);
  assert_int_equal(info.versions[0], 2);
  assert_int_equal(info.versions[1], 3);
  assert_int_equal(info.inputs[0].n_shape, 1);
  assert_int_equal(info.inputs[0].shape[0], 4);
  ifd_model_info_free(&info);

  /* Repository index: sorted by name then version, failures with their
   * reasons, whole-model rows (the config failed) without a version. */
  assert_int_equal(ifd_server_repository_index(r.s, 0, &rows, &n_rows), 0);
  assert_int_equal(n_rows, 6);
  assert_string_equal(rows[0].name, "a");
  assert_int_equal(rows[0].version, 1);
  assert_string_equal(rows[0].state, "READY");
  assert_null(rows[0].reason);
  assert_string_equal(rows[1].name, "bad_syntax");
  assert_int_equal(rows[1].version, -1);
  assert_string_equal(rows[1].state, "UNAVAILABLE");
  assert_non_null(strstr(rows[1].reason, "config.pbtxt"));
  assert_string_equal(rows[2].name, "fail_backend");
  assert_int_equal(rows[2].version, 1);
  assert_string_equal(rows[2].state, "UNAVAILABLE");
  assert_non_null(strstr(rows[2].reason, "backend refused"));
  assert_string_equal(rows[3].name, "no_versions");
  assert_int_equal(rows[3].version, -1);
  assert_non_null(strstr(rows[3].reason, "no version is available"));
  assert_string_equal(rows[4].name, "v");
  assert_int_equal(rows[4].version, 2);
  assert_int_equal(rows[5].version, 3);
  free(rows);
  assert_int_equal(ifd_server_repository_index(r.s, 1, &rows, &n_rows), 0);
  assert_int_equal(n_rows, 3);
  assert_string_equal(rows[0].name, "a");
  assert_string_equal(rows[1].name, "v");
  assert_string_equal(rows[2].state, "READY");
  free(rows);

  /* Statistics: READY versions only, by name then version; the entries
   * point at the models' own counters. */
  assert_int_equal(ifd_server_stats(r.s, NULL, 0, -1, &stats, &n_rows, &err),
                   0);
  assert_int_equal(n_rows, 3);
  assert_string_equal(stats[0].name, "a");
  assert_string_equal(stats[1].name, "v");
  assert_int_equal(stats[1].version, 2);
  assert_int_equal(stats[2].version, 3);
  assert_int_equal(ifd_server_find_model(r.s, "v", 1, 3, &m, &err), 0);
  assert_ptr_equal(stats[2].stats, &m->stats);
  free(stats);
  assert_int_equal(ifd_server_stats(r.s, "v", 1, -1, &stats, &n_rows, &err), 0);
  assert_int_equal(n_rows, 2);
  free(stats);
  assert_int_equal(ifd_server_stats(r.s, "v", 1, 3, &stats, &n_rows, &err), 0);
  assert_int_equal(n_rows, 1);
  assert_int_equal(stats[0].version, 3);
  free(stats);
  assert_int_equal(ifd_server_stats(r.s, "v", 1, 1, &stats, &n_rows, &err),
                   IFD_EINVAL);
  assert_null(stats);
  assert_string_equal(err.text,
                      "requested model version 1 is not available for "
                      "model 'v'");
  assert_int_equal(
      ifd_server_stats(r.s, "fail_backend", 12, -1, &stats, &n_rows, &err),
      IFD_EINVAL);
  assert_string_equal(err.text,
                      "requested model 'fail_backend' is not available");
  assert_int_equal(ifd_server_stats(r.s, "nope", 4, 1, &stats, &n_rows, &err),
                   IFD_EINVAL);
  assert_string_equal(err.text, "requested model 'nope' is not available");

  /* A request: validated against the config, then handed to the scheduler,
   * whose abort answers it once. */
  req = ifd_request_new(r.s);
  req->model_name = "a";
  req->on_response = on_response;
  {
    ifd_input_t *in =
        ifd_request_add_input(req, "INPUT0", 6, IFD_TYPE_FP32, shape, 2);
    in->data = data;
    in->byte_size = sizeof(data);
  }
  assert_int_equal(ifd_request_submit(req, &err), 0);
  assert_int_equal(submitted, 1);
  assert_int_equal(responses, 1);
  assert_int_equal(last_error, IFD_EUNAVAIL);
  assert_int_equal(req->batch_size, 2);
  ifd_request_unref(req);

  /* Refused up front: unknown model, no callback. */
  req = ifd_request_new(r.s);
  req->model_name = "nope";
  req->on_response = on_response;
  assert_int_equal(ifd_request_submit(req, &err), IFD_ENOTFOUND);
  assert_int_equal(responses, 1);
  ifd_request_unref(req);

  /* Shutdown: unload in reverse order of load completion. */
  ifd_server_shutdown(r.s, on_stopped, &r);
  uv_run(&r.loop, UV_RUN_DEFAULT);
  assert_true(r.stopped);
  assert_int_equal(n_unloaded, 3);
  for (i = 0; i < n_unloaded; i++) free(unload_log[i]);
  assert_int_equal(uv_loop_close(&r.loop), 0);
  nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_validation(void **state) {
  ifd_model_t m;
  ifd_errmsg_t err;
  ifd_request_t *req;
  ifd_input_t *in;
  float data[32] = {0};
  int64_t ok[2] = {2, 16}, bad[2] = {1, 15}, big[2] = {9, 16}, flat[1] = {16};
  const char *cfg_text =
      "name: \"m\" backend: \"identity\" max_batch_size: 8 "
      "input [{ name: \"INPUT0\" data_type: TYPE_FP32 dims: [ 16 ] }, "
      "       { name: \"OPT\" data_type: TYPE_INT32 dims: [ 1 ] optional: true "
      "}] "
      "output [{ name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [ 16 ] }]";
  (void)state;

  memset(&m, 0, sizeof(m));
  m.name = "m";
  assert_int_equal(
      ifd_config_parse(cfg_text, strlen(cfg_text), "t", "m", &m.config, &err),
      0);

#define NEW_REQ(shape, nd, dt, bytes)                            \
  do {                                                           \
    req = ifd_request_new(NULL);                                 \
    in = ifd_request_add_input(req, "INPUT0", 6, dt, shape, nd); \
    in->data = data;                                             \
    in->byte_size = bytes;                                       \
  } while (0)

  NEW_REQ(ok, 2, IFD_TYPE_FP32, 2 * 16 * 4);
  assert_int_equal(ifd_model_validate_request(&m, req, &err), 0);
  assert_int_equal(req->batch_size, 2);
  ifd_request_unref(req);

  NEW_REQ(ok, 2, IFD_TYPE_INT32, 2 * 16 * 4);
  assert_int_equal(ifd_model_validate_request(&m, req, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text,
                         "inference input 'INPUT0' data-type is 'INT32', "
                         "but model 'm' expects 'FP32'"));
  ifd_request_unref(req);

  NEW_REQ(bad, 2, IFD_TYPE_FP32, 15 * 4);
  assert_int_equal(ifd_model_validate_request(&m, req, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "Expected [-1,16], got [1,15]"));
  ifd_request_unref(req);

  NEW_REQ(flat, 1, IFD_TYPE_FP32, 16 * 4);
  assert_int_equal(ifd_model_validate_request(&m, req, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "unexpected shape for input 'INPUT0'"));
  ifd_request_unref(req);

  NEW_REQ(big, 2, IFD_TYPE_FP32, 9 * 16 * 4);
  assert_int_equal(ifd_model_validate_request(&m, req, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "batch-size must be <= 8 for 'm'"));
  ifd_request_unref(req);

  NEW_REQ(ok, 2, IFD_TYPE_FP32, 100);
  assert_int_equal(ifd_model_validate_request(&m, req, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "Expected 128, got 100"));
  ifd_request_unref(req);

  NEW_REQ(ok, 2, IFD_TYPE_FP32, 2 * 16 * 4);
  assert_non_null(ifd_request_add_output(req, "NOPE", 4));
  assert_int_equal(ifd_model_validate_request(&m, req, &err), IFD_EINVAL);
  assert_non_null(
      strstr(err.text, "unexpected inference output 'NOPE' for model 'm'"));
  ifd_request_unref(req);

  NEW_REQ(ok, 2, IFD_TYPE_FP32, 2 * 16 * 4);
  in = ifd_request_add_input(req, "INPUTX", 6, IFD_TYPE_FP32, ok, 2);
  assert_int_equal(ifd_model_validate_request(&m, req, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "unexpected inference input 'INPUTX'"));
  ifd_request_unref(req);

  /* A missing required input (OPT is optional, INPUT0 is not). */
  req = ifd_request_new(NULL);
  {
    int64_t s1[2] = {1, 1};
    int32_t v = 1;
    in = ifd_request_add_input(req, "OPT", 3, IFD_TYPE_INT32, s1, 2);
    in->data = &v;
    in->byte_size = 4;
    assert_int_equal(ifd_model_validate_request(&m, req, &err), IFD_EINVAL);
    assert_non_null(strstr(err.text, "missing required input(s) ['INPUT0']"));
  }
  ifd_request_unref(req);
  ifd_config_free(m.config);
}

/* ---- events queued at shutdown ------------------------------------------ */

static model_ev_t late_ev;
static int late_ran;

static void on_late_ev(ifd_event_t *ev) {
  on_model_ev(ev);
  late_ran = 1;
}

static void on_unloaded_free(ifd_server_t *s, void *arg) {
  run_t *r = arg;
  r->stopped = 1;
  /* Done means complete: every event the unloads pushed has run. */
  assert_int_equal(n_unload_evs, n_unloaded);
  /* One more event for a model is still queued when the server is freed
   * (as when a front end frees it in the same callback): it must run
   * before the models go. ASan reports the write into a freed model
   * otherwise. */
  late_ev.ev.fn = on_late_ev;
  ifd_evq_push(ifd_server_evq(s), &late_ev.ev);
  ifd_server_free(s);
  assert_true(late_ran);
}

static void test_free_runs_queued_events(void **state) {
  const char *repos[1];
  ifd_server_opts_t o;
  ifd_errmsg_t err;
  run_t r;
  int i;
  (void)state;

  n_unloaded = n_loaded = n_unload_evs = 0;
  late_ran = 0;
  make_repo();
  repos[0] = root;
  memset(&o, 0, sizeof(o));
  memset(&r, 0, sizeof(r));
  o.repos = repos;
  o.n_repos = 1;
  o.ops = &fake_ops;
  assert_int_equal(uv_loop_init(&r.loop), 0);
  assert_int_equal(ifd_server_new(&r.loop, &o, &r.s, &err), 0);
  ifd_server_start(r.s, on_loaded, &r);
  while (!r.loaded) uv_run(&r.loop, UV_RUN_ONCE);
  assert_int_equal(ifd_server_find_model(r.s, "a", 1, -1, &late_ev.m, &err), 0);
  ifd_server_shutdown(r.s, on_unloaded_free, &r);
  uv_run(&r.loop, UV_RUN_DEFAULT);
  assert_true(r.stopped);
  assert_int_equal(n_unloaded, 3);
  for (i = 0; i < n_unloaded; i++) free(unload_log[i]);
  assert_int_equal(uv_loop_close(&r.loop), 0);
  nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The registry deletes a model with nothing in flight: it leaves lookups at
 * once, its name can be found no more, and the other models are untouched
 * (the name map stays consistent around the removed slot). */
static void test_remove_model(void **state) {
  const char *repos[1];
  ifd_server_opts_t o;
  ifd_errmsg_t err;
  run_t r;
  ifd_model_t *m;
  int i;
  (void)state;

  n_loaded = n_unloaded = 0;
  make_repo();
  repos[0] = root;
  memset(&o, 0, sizeof(o));
  memset(&r, 0, sizeof(r));
  o.repos = repos;
  o.n_repos = 1;
  o.ops = &fake_ops;
  assert_int_equal(uv_loop_init(&r.loop), 0);
  assert_int_equal(ifd_server_new(&r.loop, &o, &r.s, &err), 0);
  ifd_server_start(r.s, on_loaded, &r);
  while (!r.loaded) uv_run(&r.loop, UV_RUN_ONCE);

  /* Loaded versions stay. */
  assert_int_equal(ifd_server_remove_model(r.s, "a", 1, &err), IFD_EUNAVAIL);
  assert_non_null(strstr(err.text, "model 'a' version 1 is still loaded"));
  assert_int_equal(ifd_server_remove_model(r.s, "v", 1, &err), IFD_EUNAVAIL);
  assert_int_equal(ifd_server_remove_model(r.s, "nope", 4, &err),
                   IFD_ENOTFOUND);
  assert_string_equal(err.text, "model 'nope' is not in the registry");

  /* A model that failed at its config (no versions), and one whose only
   * version failed to load. */
  assert_int_equal(ifd_server_remove_model(r.s, "bad_syntax", 10, &err), 0);
  assert_int_equal(ifd_server_find_model(r.s, "bad_syntax", 10, -1, &m, &err),
                   IFD_ENOTFOUND);
  assert_int_equal(ifd_server_remove_model(r.s, "bad_syntax", 10, &err),
                   IFD_ENOTFOUND);
  assert_int_equal(ifd_server_remove_model(r.s, "fail_backend", 12, &err), 0);
  assert_int_equal(ifd_server_find_model(r.s, "fail_backend", 12, 1, &m, &err),
                   IFD_ENOTFOUND);

  /* The rest is as it was. */
  assert_true(ifd_server_model_ready(r.s, "a", 1, -1));
  assert_true(ifd_server_model_ready(r.s, "v", 1, 2));
  assert_true(ifd_server_model_ready(r.s, "v", 1, 3));
  assert_int_equal(ifd_server_find_model(r.s, "no_versions", 11, -1, &m, &err),
                   IFD_ENOTFOUND);
  assert_int_equal(ifd_server_remove_model(r.s, "no_versions", 11, &err), 0);
  assert_int_equal(ifd_server_find_model(r.s, "no_versions", 11, -1, &m, &err),
                   IFD_ENOTFOUND);
  assert_true(ifd_server_model_ready(r.s, "a", 1, -1));

  /* Shutdown unloads what is left: a, v:3, v:2. */
  ifd_server_shutdown(r.s, on_stopped, &r);
  uv_run(&r.loop, UV_RUN_DEFAULT);
  assert_true(r.stopped);
  assert_int_equal(n_unloaded, 3);
  for (i = 0; i < n_unloaded; i++) free(unload_log[i]);
  assert_int_equal(uv_loop_close(&r.loop), 0);
  nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* An event scheduled for the end of the iteration by another such event
 * runs in the same pass, before the loop blocks (the sequence batcher
 * forms a batch there, and the batch's wake-up of an instance is one of
 * these: run a pass later, it waited for the next unrelated wake-up of the
 * loop, up to a second). */
static ifd_server_t *iter_server;
static int iter_first, iter_second;
static ifd_event_t iter_ev1, iter_ev2;

static void iter_second_fn(ifd_event_t *ev) {
  (void)ev;
  iter_second++;
}

static void iter_first_fn(ifd_event_t *ev) {
  (void)ev;
  iter_first++;
  iter_ev2.fn = iter_second_fn;
  ifd_server_at_iteration_end(iter_server, &iter_ev2);
}

static void test_iteration_end_chain(void **state) {
  ifd_server_opts_t o;
  ifd_errmsg_t err;
  uv_loop_t loop;
  (void)state;
  memset(&o, 0, sizeof(o));
  o.ops = &fake_ops;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ifd_server_new(&loop, &o, &iter_server, &err), 0);
  iter_ev1.fn = iter_first_fn;
  ifd_server_at_iteration_end(iter_server, &iter_ev1);
  uv_run(&loop, UV_RUN_NOWAIT);
  assert_int_equal(iter_first, 1);
  assert_int_equal(iter_second, 1);
  ifd_server_free(iter_server);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lifecycle),
      cmocka_unit_test(test_free_runs_queued_events),
      cmocka_unit_test(test_validation),
      cmocka_unit_test(test_remove_model),
      cmocka_unit_test(test_iteration_end_chain),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
