/*
 * test/unit/test_registry.c - model control in the registry (core/registry.c)
 * with fake model operations: explicit mode start-up, load and unload by
 * name with their answers, a load of an unchanged model doing nothing, a
 * reload swapping in a new version set while the old one finishes its
 * requests, a failed reload keeping the old set, overrides (config, files),
 * ensembles loading their composing models and unload_dependents, model
 * namespacing, calls on one model serialized, poll mode following the
 * disk, none mode refusing, repositories registered with name mappings.
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

static int n_loaded, n_unloaded;
static uint64_t pending_of_a; /* what fake_pending says for model "a" */

/* ---- fake model operations ------------------------------------------------
 */

static int fake_load(ifd_model_t *m, ifd_errmsg_t *err) {
  const char *fail = ifd_config_param(m->config, "fail");
  if (fail != NULL) return ifd_errf(err, IFD_EINVAL, "refused: %s", fail);
  __atomic_add_fetch(&n_loaded, 1, __ATOMIC_SEQ_CST);
  m->backend_model = m; /* something to see */
  return 0;
}

static void fake_unload(ifd_model_t *m) {
  __atomic_add_fetch(&n_unloaded, 1, __ATOMIC_SEQ_CST);
  m->backend_model = NULL;
}

static int fake_submit(ifd_model_t *m, ifd_request_t *req, ifd_errmsg_t *err) {
  (void)m;
  (void)err;
  ifd_request_abort(req, IFD_EUNAVAIL, "fake scheduler");
  return 0;
}

static void fake_stop(ifd_model_t *m) {
  (void)m;
}

static uint64_t fake_pending(const ifd_model_t *m) {
  return strcmp(m->name, "a") == 0 ? pending_of_a : 0;
}

static const ifd_model_ops_t fake_ops = {
    fake_load, fake_unload, fake_submit, fake_stop, fake_pending, fake_pending,
    NULL,      NULL,        NULL,        NULL,      NULL,         NULL};

#define ID_CONFIG(name)                                             \
  "name: \"" name                                                   \
  "\" backend: \"identity\" max_batch_size: 8 "                     \
  " input [{ name: \"INPUT0\" data_type: TYPE_FP32 dims: [ 4 ] }] " \
  "output [{ name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [ 4 ] }] "

#define ENS_CONFIG                                                     \
  "name: \"e\" platform: \"ensemble\" max_batch_size: 8 "              \
  "input [{ name: \"IN\" data_type: TYPE_FP32 dims: [ 4 ] }] "         \
  "output [{ name: \"OUT\" data_type: TYPE_FP32 dims: [ 4 ] }] "       \
  "ensemble_scheduling { step [ "                                      \
  "{ model_name: \"a\" model_version: -1 input_map { key: \"INPUT0\" " \
  "value: \"IN\" } output_map { key: \"OUTPUT0\" value: \"mid\" } }, " \
  "{ model_name: \"b\" model_version: -1 input_map { key: \"INPUT0\" " \
  "value: \"mid\" } output_map { key: \"OUTPUT0\" value: \"OUT\" } } ] }"

static void make_repo(void) {
  snprintf(root, sizeof(root), "/tmp/ifd_reg_XXXXXX");
  assert_non_null(mkdtemp(root));
  mkdirs("a");
  mkdirs("a/1");
  write_file("a/config.pbtxt", ID_CONFIG("a"));
  mkdirs("b");
  mkdirs("b/1");
  write_file("b/config.pbtxt", ID_CONFIG("b"));
  mkdirs("e");
  mkdirs("e/1");
  write_file("e/config.pbtxt", ENS_CONFIG);
}

typedef struct run {
  uv_loop_t loop;
  ifd_server_t *s;
  int failed, loaded, stopped;
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

/* The answer of one load call. */
typedef struct answer {
  int done, rc;
  char msg[1024];
} answer_t;

static void on_answer(int rc, const char *msg, void *arg) {
  answer_t *a = arg;
  a->done++;
  a->rc = rc;
  snprintf(a->msg, sizeof(a->msg), "%s", msg);
}

/* Runs the loop until *flag is set (bounded: 20 s). */
static void run_until(run_t *r, const int *flag) {
  for (int i = 0; i < 20000 && !*flag; i++)
    uv_run(&r->loop, UV_RUN_NOWAIT), usleep(1000);
  assert_true(*flag);
}

/* Runs the loop a while: lets pool jobs and timers report. */
static void settle(run_t *r) {
  for (int i = 0; i < 100; i++) {
    uv_run(&r->loop, UV_RUN_NOWAIT);
    usleep(1000);
  }
}

static void start(run_t *r, ifd_control_mode_t mode, const char *const *load,
                  size_t n_load, int poll_secs) {
  static const char *repos[1];
  ifd_server_opts_t o;
  ifd_errmsg_t err;

  make_repo();
  repos[0] = root;
  memset(&o, 0, sizeof(o));
  memset(r, 0, sizeof(*r));
  o.repos = repos;
  o.n_repos = 1;
  o.ops = &fake_ops;
  o.control_mode = mode;
  o.load_models = load;
  o.n_load_models = n_load;
  o.poll_secs = poll_secs;
  n_loaded = n_unloaded = 0;
  pending_of_a = 0;
  assert_int_equal(uv_loop_init(&r->loop), 0);
  assert_int_equal(ifd_server_new(&r->loop, &o, &r->s, &err), 0);
  ifd_server_start(r->s, on_loaded, r);
  run_until(r, &r->loaded);
}

static void stop(run_t *r) {
  ifd_server_shutdown(r->s, on_stopped, r);
  run_until(r, &r->stopped);
  uv_run(&r->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&r->loop), 0);
  nftw(root, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static void load(run_t *r, const char *name, const ifd_load_params_t *p,
                 answer_t *a) {
  ifd_errmsg_t err;
  memset(a, 0, sizeof(*a));
  assert_int_equal(ifd_server_load_model(r->s, name, strlen(name), p, on_answer,
                                         a, NULL, &err),
                   0);
  assert_int_equal(a->done, 0); /* never from inside the call */
  run_until(r, &a->done);
}

/* The index row of `name` (the first one). */
static ifd_index_entry_t row_of(run_t *r, const char *name) {
  ifd_index_entry_t *rows, found = {0};
  size_t n;
  assert_int_equal(ifd_server_repository_index(r->s, 0, &rows, &n), 0);
  for (size_t i = 0; i < n; i++)
    if (strcmp(rows[i].name, name) == 0) {
      found = rows[i];
      break;
    }
  free(rows);
  return found;
}

static int ready(run_t *r, const char *name) {
  return ifd_server_model_ready(r->s, name, strlen(name), -1);
}

static ifd_model_t *serving(run_t *r, const char *name) {
  ifd_model_t *m = NULL;
  ifd_errmsg_t err;
  if (ifd_server_find_model(r->s, name, strlen(name), -1, &m, &err) < 0)
    return NULL;
  return m;
}

/* ---- tests ----------------------------------------------------------------
 */

static void test_explicit_load_unload(void **state) {
  run_t r;
  answer_t a;
  ifd_errmsg_t err;
  ifd_index_entry_t row;
  (void)state;

  start(&r, IFD_CONTROL_EXPLICIT, NULL, 0, 0);
  assert_int_equal(n_loaded, 0);
  assert_true(ifd_server_ready(r.s)); /* ready with nothing loaded */
  row = row_of(&r, "a");
  assert_non_null(row.name);
  assert_null(row.state); /* never loaded: the name alone */

  load(&r, "a", NULL, &a);
  assert_int_equal(a.rc, 0);
  assert_true(ready(&r, "a"));
  assert_int_equal(n_loaded, 1);
  row = row_of(&r, "a");
  assert_string_equal(row.state, "READY");
  assert_int_equal(row.version, 1);

  /* Nothing changed: a second load does nothing. */
  load(&r, "a", NULL, &a);
  assert_int_equal(a.rc, 0);
  assert_int_equal(n_loaded, 1);

  /* An unknown model: Triton's answer, and no trace in the index. */
  load(&r, "nope", NULL, &a);
  assert_true(a.rc < 0);
  assert_string_equal(
      a.msg, "failed to load 'nope', failed to poll from model repository");
  assert_null(row_of(&r, "nope").name);

  /* Unload answers at once; the version ends UNAVAILABLE "unloaded". */
  assert_int_equal(ifd_server_unload_model(r.s, "a", 1, 0, &err), 0);
  assert_false(ready(&r, "a"));
  settle(&r);
  assert_int_equal(n_unloaded, 1);
  row = row_of(&r, "a");
  assert_string_equal(row.state, "UNAVAILABLE");
  assert_string_equal(row.reason, "unloaded");
  /* Unknown and already unloaded models: no error, as Triton. */
  assert_int_equal(ifd_server_unload_model(r.s, "a", 1, 0, &err), 0);
  assert_int_equal(ifd_server_unload_model(r.s, "zz", 2, 0, &err), 0);

  /* Loaded again after the unload. */
  load(&r, "a", NULL, &a);
  assert_int_equal(a.rc, 0);
  assert_true(ready(&r, "a"));
  stop(&r);
}

static void test_reload_swaps_and_drains(void **state) {
  const char *names[] = {"a"};
  run_t r;
  answer_t a;
  ifd_model_t *old, *now;
  ifd_load_params_t p = {0};
  const char *cfg =
      "{\"name\":\"a\",\"backend\":\"identity\",\"max_batch_size\":2,"
      "\"input\":[{\"name\":\"INPUT0\",\"data_type\":\"TYPE_FP32\","
      "\"dims\":[4]}],\"output\":[{\"name\":\"OUTPUT0\",\"data_type\":"
      "\"TYPE_FP32\",\"dims\":[4]}]}";
  (void)state;

  start(&r, IFD_CONTROL_EXPLICIT, names, 1, 0);
  assert_int_equal(r.failed, 0);
  old = serving(&r, "a");
  assert_non_null(old);
  ifd_model_ref(old);

  /* A reload while the old set has requests in flight: the new set serves
   * at once, the old one keeps running until its requests are done. */
  pending_of_a = 3;
  p.config = cfg;
  p.config_len = strlen(cfg);
  load(&r, "a", &p, &a);
  assert_int_equal(a.rc, 0);
  now = serving(&r, "a");
  assert_ptr_not_equal(now, old);
  assert_int_equal(now->config->max_batch_size, 2);
  settle(&r);
  assert_int_equal(old->state, IFD_MODEL_READY); /* still finishing */
  assert_int_equal(n_unloaded, 0);
  pending_of_a = 0;
  settle(&r);
  assert_int_equal(old->state, IFD_MODEL_UNAVAILABLE);
  assert_int_equal(n_unloaded, 1);
  ifd_model_unref(old);

  /* A reload that fails keeps the set that serves, with the reason. */
  {
    const char *bad =
        "{\"name\":\"a\",\"backend\":\"identity\",\"max_batch_size\":4,"
        "\"parameters\":{\"fail\":{\"string_value\":\"no\"}},"
        "\"input\":[{\"name\":\"INPUT0\",\"data_type\":\"TYPE_FP32\","
        "\"dims\":[4]}],\"output\":[{\"name\":\"OUTPUT0\",\"data_type\":"
        "\"TYPE_FP32\",\"dims\":[4]}]}";
    ifd_index_entry_t row;
    p.config = bad;
    p.config_len = strlen(bad);
    load(&r, "a", &p, &a);
    assert_true(a.rc < 0);
    assert_string_equal(a.msg,
                        "load failed for model 'a': version 1 is at "
                        "UNAVAILABLE state: Invalid argument: refused: no;\n");
    assert_ptr_equal(serving(&r, "a"), now);
    row = row_of(&r, "a");
    assert_string_equal(row.state, "READY");
    assert_string_equal(row.reason, "Invalid argument: refused: no");
  }

  /* An override that is not JSON: Triton's answer; still serving. */
  p.config = "{nope";
  p.config_len = 5;
  load(&r, "a", &p, &a);
  assert_true(a.rc < 0);
  assert_string_equal(
      a.msg, "failed to load 'a', failed to poll from model repository");
  assert_ptr_equal(serving(&r, "a"), now);

  /* A plain load after an override reloads from the file. */
  load(&r, "a", NULL, &a);
  assert_int_equal(a.rc, 0);
  assert_int_equal(serving(&r, "a")->config->max_batch_size, 8);
  stop(&r);
}

static void test_file_override(void **state) {
  run_t r;
  answer_t a;
  ifd_errmsg_t err;
  ifd_model_t *m;
  ifd_load_file_t files[1] = {{"1/model.txt", 11, "hello", 5}};
  ifd_load_params_t p = {0};
  char path[512], dir[512];
  struct stat st;
  const char *cfg =
      "{\"backend\":\"identity\",\"max_batch_size\":1,"
      "\"input\":[{\"name\":\"INPUT0\",\"data_type\":\"TYPE_FP32\","
      "\"dims\":[4]}],\"output\":[{\"name\":\"OUTPUT0\",\"data_type\":"
      "\"TYPE_FP32\",\"dims\":[4]}]}";
  (void)state;

  start(&r, IFD_CONTROL_EXPLICIT, NULL, 0, 0);
  /* A path that leaves the model folder is refused at once. */
  {
    ifd_load_file_t bad[1] = {{"../x", 4, "x", 1}};
    p.files = bad;
    p.n_files = 1;
    p.config = cfg;
    p.config_len = strlen(cfg);
    assert_int_equal(
        ifd_server_load_model(r.s, "b", 1, &p, on_answer, &a, NULL, &err),
        IFD_EINVAL);
  }
  p.files = files;
  p.n_files = 1;
  load(&r, "b", &p, &a);
  assert_int_equal(a.rc, 0);
  m = serving(&r, "b");
  assert_non_null(m);
  assert_null(strstr(m->path, root)); /* not the repository's folder */
  snprintf(path, sizeof(path), "%s/1/model.txt", m->path);
  snprintf(dir, sizeof(dir), "%s", m->path);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_size, 5);

  /* Unloaded: the temporary folder goes with the last version. */
  assert_int_equal(ifd_server_unload_model(r.s, "b", 1, 0, &err), 0);
  settle(&r);
  load(&r, "b", NULL, &a); /* replaces the unloaded rows */
  assert_int_equal(a.rc, 0);
  settle(&r);
  assert_int_equal(stat(dir, &st), -1);
  stop(&r);
}

static void test_ensemble_dependents(void **state) {
  run_t r;
  answer_t a;
  ifd_errmsg_t err;
  (void)state;

  start(&r, IFD_CONTROL_EXPLICIT, NULL, 0, 0);
  /* Loading the ensemble loads its composing models first. */
  load(&r, "e", NULL, &a);
  assert_int_equal(a.rc, 0);
  assert_true(ready(&r, "e"));
  assert_true(ready(&r, "a"));
  assert_true(ready(&r, "b"));

  /* A plain unload leaves them; unload_dependents takes them. */
  assert_int_equal(ifd_server_unload_model(r.s, "e", 1, 0, &err), 0);
  settle(&r);
  assert_false(ready(&r, "e"));
  assert_true(ready(&r, "a"));
  load(&r, "e", NULL, &a);
  assert_int_equal(a.rc, 0);
  assert_int_equal(ifd_server_unload_model(r.s, "e", 1, 1, &err), 0);
  settle(&r);
  assert_false(ready(&r, "a"));
  assert_false(ready(&r, "b"));

  /* A model loaded by name is not the ensemble's to unload. */
  load(&r, "a", NULL, &a);
  load(&r, "e", NULL, &a);
  assert_int_equal(ifd_server_unload_model(r.s, "e", 1, 1, &err), 0);
  settle(&r);
  assert_true(ready(&r, "a"));
  assert_false(ready(&r, "b"));
  stop(&r);
}

/* --model-namespacing: "a" in two repositories (the second one's load
 * fails on purpose, so the two are told apart); the ensemble "e" of the
 * first resolves its "a" there. */
static void test_namespacing(void **state) {
  static const char *repos[2];
  char other[64], path[128];
  run_t r;
  answer_t a;
  ifd_server_opts_t o;
  ifd_errmsg_t err;
  ifd_model_t *m = NULL;
  FILE *f;
  (void)state;

  make_repo();
  snprintf(other, sizeof(other), "/tmp/ifd_reg_ns_XXXXXX");
  assert_non_null(mkdtemp(other));
  snprintf(path, sizeof(path), "%s/a", other);
  assert_int_equal(mkdir(path, 0700), 0);
  snprintf(path, sizeof(path), "%s/a/1", other);
  assert_int_equal(mkdir(path, 0700), 0);
  snprintf(path, sizeof(path), "%s/a/config.pbtxt", other);
  f = fopen(path, "w");
  assert_non_null(f);
  fputs(ID_CONFIG("a") " parameters { key: \"fail\" value: { string_value: "
                       "\"other\" } }",
        f);
  fclose(f);
  repos[0] = root;
  repos[1] = other;
  memset(&o, 0, sizeof(o));
  memset(&r, 0, sizeof(r));
  o.repos = repos;
  o.n_repos = 2;
  o.ops = &fake_ops;
  o.control_mode = IFD_CONTROL_EXPLICIT;
  o.model_namespacing = 1;
  n_loaded = n_unloaded = 0;
  assert_int_equal(uv_loop_init(&r.loop), 0);
  assert_int_equal(ifd_server_new(&r.loop, &o, &r.s, &err), 0);
  ifd_server_start(r.s, on_loaded, &r);
  run_until(&r, &r.loaded);

  /* The ensemble resolves "a" in its own repository: it loads. */
  load(&r, "e", NULL, &a);
  assert_int_equal(a.rc, 0);
  assert_true(ready(&r, "e"));
  assert_int_equal(n_loaded, 3);
  /* "a" is two models: a request by that name is ambiguous. */
  assert_int_equal(ifd_server_find_model(r.s, "a", 1, -1, &m, &err),
                   IFD_EINVAL);
  assert_string_equal(err.text,
                      "There are 2 identifiers of model 'a' in global map, "
                      "model namespace must be provided to resolve "
                      "ambiguity.");
  /* ... except from the ensemble's repository. */
  assert_int_equal(ifd_server_find_model_in(r.s, root, "a", 1, -1, &m, &err),
                   0);
  assert_string_equal(m->repo, root);
  /* A load by name is both models' and answers once, with the failure. */
  load(&r, "a", NULL, &a);
  assert_int_equal(a.done, 1);
  assert_true(a.rc < 0);
  assert_non_null(strstr(a.msg, "refused: other"));
  /* An unload by name is both models'. */
  assert_int_equal(ifd_server_unload_model(r.s, "a", 1, 0, &err), 0);
  settle(&r);
  assert_int_equal(ifd_server_find_model_in(r.s, root, "a", 1, -1, &m, &err),
                   IFD_ENOTFOUND);
  stop(&r);
  nftw(other, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static void test_calls_serialized(void **state) {
  run_t r;
  answer_t a;
  ifd_errmsg_t err;
  (void)state;

  start(&r, IFD_CONTROL_EXPLICIT, NULL, 0, 0);
  /* load, unload, load, unload in one go: the last word wins. */
  memset(&a, 0, sizeof(a));
  assert_int_equal(
      ifd_server_load_model(r.s, "a", 1, NULL, on_answer, &a, NULL, &err), 0);
  assert_int_equal(ifd_server_unload_model(r.s, "a", 1, 0, &err), 0);
  assert_int_equal(
      ifd_server_load_model(r.s, "a", 1, NULL, NULL, NULL, NULL, &err), 0);
  assert_int_equal(ifd_server_unload_model(r.s, "a", 1, 0, &err), 0);
  run_until(&r, &a.done);
  settle(&r);
  assert_false(ready(&r, "a"));
  assert_int_equal(n_loaded, 2);
  assert_int_equal(n_unloaded, 2);

  /* A forgotten caller is not called. */
  {
    ifd_load_call_t *call;
    memset(&a, 0, sizeof(a));
    assert_int_equal(
        ifd_server_load_model(r.s, "a", 1, NULL, on_answer, &a, &call, &err),
        0);
    ifd_load_call_forget(call);
    settle(&r);
    assert_int_equal(a.done, 0);
    assert_true(ready(&r, "a"));
  }
  stop(&r);
}

static void test_version_policy_change(void **state) {
  const char *names[] = {"a"};
  run_t r;
  answer_t a;
  ifd_model_t *v1;
  ifd_load_params_t p = {0};
  ifd_index_entry_t *rows;
  size_t n, k, ready_rows = 0;
  const char *all =
      "{\"name\":\"a\",\"backend\":\"identity\",\"max_batch_size\":8,"
      "\"version_policy\":{\"all\":{}},"
      "\"input\":[{\"name\":\"INPUT0\",\"data_type\":\"TYPE_FP32\","
      "\"dims\":[4]}],\"output\":[{\"name\":\"OUTPUT0\",\"data_type\":"
      "\"TYPE_FP32\",\"dims\":[4]}]}";
  (void)state;

  start(&r, IFD_CONTROL_EXPLICIT, names, 1, 0);
  mkdirs("a/2");
  /* The default policy (latest 1) served version 1 before 2 existed; a
   * reload with policy "all" serves both. */
  p.config = all;
  p.config_len = strlen(all);
  load(&r, "a", &p, &a);
  assert_int_equal(a.rc, 0);
  assert_true(ifd_server_model_ready(r.s, "a", 1, 1));
  assert_true(ifd_server_model_ready(r.s, "a", 1, 2));
  v1 = NULL;
  assert_int_equal(ifd_server_find_model(r.s, "a", 1, 1, &v1, NULL), 0);
  /* Back to the file's policy (latest 1): version 1 leaves, 2 serves. */
  load(&r, "a", NULL, &a);
  assert_int_equal(a.rc, 0);
  settle(&r);
  assert_false(ifd_server_model_ready(r.s, "a", 1, 1));
  assert_true(ifd_server_model_ready(r.s, "a", 1, 2));
  assert_int_equal(ifd_server_repository_index(r.s, 0, &rows, &n), 0);
  for (k = 0; k < n; k++)
    if (strcmp(rows[k].name, "a") == 0 && rows[k].state != NULL &&
        strcmp(rows[k].state, "READY") == 0)
      ready_rows++;
  free(rows);
  assert_int_equal(ready_rows, 1);
  stop(&r);
}

static void test_none_and_poll_refuse(void **state) {
  run_t r;
  ifd_errmsg_t err;
  (void)state;

  start(&r, IFD_CONTROL_NONE, NULL, 0, 0);
  assert_true(ready(&r, "a") && ready(&r, "b") && ready(&r, "e"));
  assert_int_equal(
      ifd_server_load_model(r.s, "a", 1, NULL, on_answer, NULL, NULL, &err),
      IFD_EUNAVAIL);
  assert_string_equal(err.text, IFD_MODEL_CONTROL_REFUSED_TEXT);
  assert_int_equal(ifd_server_unload_model(r.s, "a", 1, 0, &err), IFD_EUNAVAIL);
  stop(&r);
}

static void test_poll_follows_disk(void **state) {
  run_t r;
  ifd_model_t *old;
  char path[512];
  int changed = 0;
  (void)state;

  start(&r, IFD_CONTROL_POLL, NULL, 0, 1);
  assert_true(ready(&r, "a"));
  old = serving(&r, "a");

  /* A changed config reloads at the next poll. */
  write_file("a/config.pbtxt", ID_CONFIG("a") "parameters { key: \"x\" "
                                              "value { string_value: \"1\" "
                                              "} }");
  for (int i = 0; i < 100 && !changed; i++) {
    settle(&r);
    changed = serving(&r, "a") != old;
  }
  assert_true(changed);
  assert_non_null(ifd_config_param(serving(&r, "a")->config, "x"));

  /* A removed folder unloads; a new one loads. */
  snprintf(path, sizeof(path), "%s/b", root);
  nftw(path, rm_one, 8, FTW_DEPTH | FTW_PHYS);
  mkdirs("c");
  mkdirs("c/1");
  write_file("c/config.pbtxt", ID_CONFIG("c"));
  changed = 0;
  for (int i = 0; i < 100 && !changed; i++) {
    settle(&r);
    changed = !ready(&r, "b") && ready(&r, "c");
  }
  assert_true(changed);
  stop(&r);
}

/* Writes <dir>/<name>/config.pbtxt (named `cfg_name`) and <name>/1/. */
static void other_model(const char *dir, const char *name,
                        const char *cfg_name) {
  char path[160];
  FILE *f;

  snprintf(path, sizeof(path), "%s/%s", dir, name);
  assert_int_equal(mkdir(path, 0700), 0);
  snprintf(path, sizeof(path), "%s/%s/1", dir, name);
  assert_int_equal(mkdir(path, 0700), 0);
  snprintf(path, sizeof(path), "%s/%s/config.pbtxt", dir, name);
  f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f,
          "name: \"%s\" backend: \"identity\" max_batch_size: 0 "
          "input [ { name: \"INPUT0\" data_type: TYPE_INT32 dims: [ 4 ] } ] "
          "output [ { name: \"OUTPUT0\" data_type: TYPE_INT32 dims: [ 4 ] } ]",
          cfg_name);
  fclose(f);
}

/* A repository registered with name mappings (TRITONSERVER_Server-
 * RegisterModelRepository's, SageMaker's multi-model loads): the folder
 * serves under the mapped name (its config's name becomes it), even over
 * a folder of that name elsewhere; conflicts are refused with Triton's
 * texts; unregistering drops the mapping, and a later load looks again. */
static void test_name_mappings(void **state) {
  char other[64], third[64];
  run_t r;
  answer_t a;
  ifd_errmsg_t err;
  ifd_model_t *m;
  ifd_repo_mapping_t map = {"folder_x", "mapped"},
                     dup[2] = {{"folder_x", "n1"}, {"folder_y", "n1"}};
  (void)state;

  start(&r, IFD_CONTROL_EXPLICIT, NULL, 0, 0);
  snprintf(other, sizeof(other), "/tmp/ifd_reg_map_XXXXXX");
  assert_non_null(mkdtemp(other));
  other_model(other, "folder_x", "folder_x");
  other_model(other, "folder_y", "folder_y");
  snprintf(third, sizeof(third), "/tmp/ifd_reg_map_XXXXXX");
  assert_non_null(mkdtemp(third));
  other_model(third, "a", "a");

  /* Not registered yet: no such model. */
  load(&r, "mapped", NULL, &a);
  assert_true(a.rc < 0);

  /* Two names for one model in one call: refused, nothing registered. */
  assert_int_equal(
      ifd_server_register_repository_mapped(r.s, other, dup, 2, &err),
      IFD_EINVAL);
  assert_non_null(strstr(err.text, "there is a conflicting mapping for 'n1'"));
  assert_int_equal(
      ifd_server_register_repository_mapped(r.s, other, &map, 1, &err), 0);
  load(&r, "mapped", NULL, &a);
  assert_int_equal(a.rc, 0);
  assert_true(ready(&r, "mapped"));
  m = serving(&r, "mapped");
  assert_non_null(m);
  assert_string_equal(m->config->name, "mapped");
  /* The repository's other folders load by their own name. */
  load(&r, "folder_y", NULL, &a);
  assert_int_equal(a.rc, 0);

  /* The same name again, from another repository: ALREADY_EXISTS. */
  map.subdir = "a";
  assert_int_equal(
      ifd_server_register_repository_mapped(r.s, third, &map, 1, &err),
      IFD_EEXISTS);
  assert_string_equal(err.text,
                      "failed to register 'mapped', there is a conflicting "
                      "mapping for 'mapped'");
  /* The same repository again. */
  assert_int_equal(ifd_server_register_repository(r.s, other, &err),
                   IFD_EEXISTS);
  /* An empty folder name. */
  map.subdir = "";
  map.name = "n2";
  assert_int_equal(
      ifd_server_register_repository_mapped(r.s, third, &map, 1, &err),
      IFD_EINVAL);

  /* Unregistered: the model stays loaded; once unloaded, it cannot load
   * again, and the name may be mapped anew (to another folder). */
  assert_int_equal(ifd_server_unregister_repository(r.s, other, &err), 0);
  assert_true(ready(&r, "mapped"));
  assert_int_equal(ifd_server_unload_model(r.s, "mapped", 6, 0, &err), 0);
  settle(&r);
  load(&r, "mapped", NULL, &a);
  assert_true(a.rc < 0);
  map.subdir = "a";
  map.name = "mapped";
  assert_int_equal(
      ifd_server_register_repository_mapped(r.s, third, &map, 1, &err), 0);
  load(&r, "mapped", NULL, &a);
  assert_int_equal(a.rc, 0);
  m = serving(&r, "mapped");
  assert_non_null(m);
  assert_string_equal(m->repo, third);
  /* The mapping wins over the root repository's folder of that name. */
  map.subdir = "folder_x";
  map.name = "b";
  assert_int_equal(
      ifd_server_register_repository_mapped(r.s, other, &map, 1, &err), 0);
  load(&r, "b", NULL, &a);
  assert_int_equal(a.rc, 0);
  m = serving(&r, "b");
  assert_non_null(m);
  assert_string_equal(m->repo, other);
  stop(&r);
  nftw(other, rm_one, 8, FTW_DEPTH | FTW_PHYS);
  nftw(third, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_explicit_load_unload),
      cmocka_unit_test(test_reload_swaps_and_drains),
      cmocka_unit_test(test_file_override),
      cmocka_unit_test(test_ensemble_dependents),
      cmocka_unit_test(test_namespacing),
      cmocka_unit_test(test_calls_serialized),
      cmocka_unit_test(test_version_policy_change),
      cmocka_unit_test(test_none_and_poll_refuse),
      cmocka_unit_test(test_poll_follows_disk),
      cmocka_unit_test(test_name_mappings),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
