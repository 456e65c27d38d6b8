/*
 * test/unit/test_config.c - model config loading, defaults and validation.
 *
 * The conformance tests load the three configs tritonserver 2.47 was run
 * with (test/unit/data/<m>.config.pbtxt) and compare the normalized config's
 * JSON with the body tritonserver returned for GET /v2/models/<m>/config
 * (test/unit/data/<m>.config.json). The validation tests are a table, one row
 * per rule, each run as its own cmocka test and checked for the error code
 * and a piece of Triton's message. Run from the repository root.
 */
/* cmocka.h needs setjmp.h, stdarg.h and stddef.h before it. */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/config.h"

/* ---- helpers ---- */

static const ifd_config_opts_t cpu_opts = {0, 0, NULL, 0, 0, 0, NULL};

static ifd_model_config_t *parse_ok(const char *text, const char *name) {
  ifd_model_config_t *cfg = NULL;
  ifd_errmsg_t err;
  ifd_errclear(&err);
  int rc = ifd_config_parse(text, strlen(text), "test.pbtxt", name, &cfg, &err);
  if (rc != 0) fail_msg("parse failed (%d): %s\n%s", rc, err.text, text);
  assert_non_null(cfg);
  return cfg;
}

/* Parses, normalizes with `opts` and validates; returns the validate code. */
static int check(const char *text, const ifd_config_opts_t *opts,
                 ifd_errmsg_t *err) {
  ifd_model_config_t *cfg = parse_ok(text, "m");
  int rc;
  ifd_errclear(err);
  rc = ifd_config_normalize(cfg, opts, err);
  assert_int_equal(rc, 0);
  rc = ifd_config_validate(cfg, opts, err);
  ifd_config_free(cfg);
  return rc;
}

static void assert_json_equal(json_t *got, json_t *want) {
  if (!json_equal(got, want)) {
    char *g = json_dumps(got, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    char *w = json_dumps(want, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    print_error("got:\n%s\nwant:\n%s\n", g ? g : "(null)", w ? w : "(null)");
    free(g);
    free(w);
    fail();
  }
}

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* A temporary folder per test that needs files. */
static int tmp_setup(void **state) {
  char *root = malloc(64);
  if (root == NULL) return -1;
  snprintf(root, 64, "/tmp/ifd_config_XXXXXX");
  if (mkdtemp(root) == NULL) {
    free(root);
    return -1;
  }
  *state = root;
  return 0;
}

static int tmp_teardown(void **state) {
  char *root = *state;
  nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  free(root);
  return 0;
}

/* ---- conformance with tritonserver 2.47 ---- */

static void conformance(const char *root, const char *model) {
  char src[256], dir[512], dst[600];
  ifd_model_config_t *cfg = NULL;
  ifd_errmsg_t err;
  json_error_t jerr;
  json_t *want, *got;
  FILE *in;
  char text[4096];
  size_t n;

  /* Copy the config into <root>/<model>/config.pbtxt. */
  snprintf(src, sizeof(src), "test/unit/data/%s.config.pbtxt", model);
  in = fopen(src, "r");
  if (in == NULL) fail_msg("cannot open %s (run from the repo root)", src);
  n = fread(text, 1, sizeof(text) - 1, in);
  fclose(in);
  text[n] = '\0';
  snprintf(dir, sizeof(dir), "%s/%s", root, model);
  assert_int_equal(mkdir(dir, 0755), 0);
  snprintf(dst, sizeof(dst), "%s/config.pbtxt", dir);
  write_file(dst, text);

  ifd_errclear(&err);
  assert_int_equal(ifd_config_load(dir, model, &cpu_opts, &cfg, &err), 0);
  assert_int_equal(ifd_config_normalize(cfg, &cpu_opts, &err), 0);
  if (ifd_config_validate(cfg, &cpu_opts, &err) != 0) fail_msg("%s", err.text);

  snprintf(src, sizeof(src), "test/unit/data/%s.config.json", model);
  want = json_load_file(src, 0, &jerr);
  if (want == NULL) fail_msg("%s: %s", src, jerr.text);
  got = ifd_config_to_json(cfg);
  assert_non_null(got);
  assert_json_equal(got, want);
  /* Key order is tritonserver's too (declaration order). */
  char *gs = json_dumps(got, JSON_COMPACT),
       *ws = json_dumps(want, JSON_COMPACT);
  assert_non_null(gs);
  assert_non_null(ws);
  assert_string_equal(gs, ws);
  free(gs);
  free(ws);

  /* The JSON converts back to the same config. */
  ifd_model_config_t *back = NULL;
  assert_int_equal(ifd_config_from_json(got, &back, &err), 0);
  json_t *again = ifd_config_to_json(back);
  assert_json_equal(again, want);

  json_decref(again);
  ifd_config_free(back);
  json_decref(got);
  json_decref(want);
  ifd_config_free(cfg);
}

static void test_conformance_identity_fp32(void **state) {
  conformance(*state, "identity_fp32");
}

static void test_conformance_identity_bytes(void **state) {
  conformance(*state, "identity_bytes");
}

static void test_conformance_batched(void **state) {
  conformance(*state, "batched");
}

/* features.json, section "ensemble": the ensemble's config (no instance
 * group, no optimization, a transaction policy) and a composing model's (one
 * instance group named after the model). */
static void test_conformance_ensemble(void **state) {
  conformance(*state, "ensemble_identity");
}

static void test_conformance_composing(void **state) {
  conformance(*state, "step1_identity");
}

/* ---- parse and load ---- */

static void test_name_filled(void **state) {
  (void)state;
  ifd_model_config_t *cfg = parse_ok("backend: \"identity\"", "m");
  assert_string_equal(cfg->name, "m");
  ifd_config_free(cfg);
  cfg = parse_ok("", "m");
  assert_string_equal(cfg->name, "m");
  ifd_config_free(cfg);
}

static void test_name_mismatch(void **state) {
  ifd_errmsg_t err;
  (void)state;
  /* Parsing keeps the config's own name: Triton compares it with the folder
   * only after validation. */
  ifd_model_config_t *cfg =
      parse_ok("name: \"other\" backend: \"identity\"", "m");
  assert_string_equal(cfg->name, "other");
  ifd_errclear(&err);
  assert_int_equal(ifd_config_check_name(cfg, "other", &err), 0);
  assert_int_equal(ifd_config_check_name(cfg, "m", &err), IFD_EINVAL);
  assert_int_equal(err.code, IFD_EINVAL);
  assert_non_null(strstr(err.text,
                         "unexpected directory name 'm' for model "
                         "'other', directory name must equal model "
                         "name"));
  ifd_config_free(cfg);
}

/* Writes <root>/<dir>/config.pbtxt with `text` (and a version folder 1) and
 * runs ifd_config_prepare on it; returns its code, the message in `err`. */
static int prepare(const char *root, const char *dir, const char *text,
                   int strict, ifd_errmsg_t *err) {
  char path[512];
  ifd_config_opts_t opts = {strict, 0, NULL, 0, 0, 0, NULL};
  ifd_model_config_t *cfg = (void *)0x1;
  int rc;

  snprintf(path, sizeof(path), "%s/%s", root, dir);
  mkdir(path, 0755);
  snprintf(path, sizeof(path), "%s/%s/1", root, dir);
  mkdir(path, 0755);
  snprintf(path, sizeof(path), "%s/%s/config.pbtxt", root, dir);
  write_file(path, text);
  snprintf(path, sizeof(path), "%s/%s", root, dir);
  ifd_errclear(err);
  rc = ifd_config_prepare(path, dir, &opts, &cfg, err);
  if (rc == 0) {
    assert_non_null(cfg);
    ifd_config_free(cfg);
  } else {
    assert_null(cfg);
  }
  return rc;
}

/* Triton validates a config before it compares its name with the folder's
 * (Triton's own suite: ensemble_scheduling_no_set, model_warm_up_set). */
static void test_prepare_validates_before_name(void **state) {
  const char *root = *state;
  ifd_errmsg_t err;

  /* Misnamed and invalid: the complaint is about what is invalid. */
  assert_int_equal(prepare(root, "a",
                           "name: \"a_other\" platform: \"ensemble\" "
                           "max_batch_size: 8",
                           0, &err),
                   IFD_EINVAL);
  assert_non_null(strstr(err.text,
                         "ensemble scheduling must be set for ensemble "
                         "a_other whose platform is ensemble"));
  assert_int_equal(prepare(root, "b",
                           "name: \"b_other\" backend: \"identity\" "
                           "max_batch_size: -1",
                           1, &err),
                   IFD_EINVAL);
  assert_non_null(strstr(
      err.text, "'max_batch_size' must be non-negative value for b_other"));

  /* Misnamed only: the name. */
  assert_int_equal(
      prepare(root, "c", "name: \"c_other\" backend: \"identity\"", 1, &err),
      IFD_EINVAL);
  assert_non_null(strstr(err.text,
                         "unexpected directory name 'c' for model "
                         "'c_other', directory name must equal "
                         "model name"));

  /* Inputs and outputs: before the name when auto-completion is off (Triton
   * checks them with the rest), after it when on (Triton checks them when
   * the backend has completed the config). */
#define BAD_IO                                                        \
  "backend: \"identity\" input [ { name: \"I\" data_type: TYPE_FP32 " \
  "dims: [ 0 ] } ]"
  assert_int_equal(prepare(root, "d", "name: \"d_other\" " BAD_IO, 1, &err),
                   IFD_EINVAL);
  assert_non_null(strstr(err.text, "dimension must be integer >= 1"));
  assert_int_equal(prepare(root, "e", "name: \"e_other\" " BAD_IO, 0, &err),
                   IFD_EINVAL);
  assert_non_null(strstr(err.text, "unexpected directory name 'e'"));
  assert_int_equal(prepare(root, "f", "name: \"f\" " BAD_IO, 0, &err),
                   IFD_EINVAL);
  assert_non_null(strstr(err.text, "dimension must be integer >= 1"));
#undef BAD_IO

  /* A good config passes, named or not. */
  assert_int_equal(prepare(root, "g", "backend: \"identity\"", 1, &err), 0);
  assert_int_equal(
      prepare(root, "h", "name: \"h\" backend: \"identity\"", 0, &err), 0);
}

static void test_parse_error_names_file(void **state) {
  char *root = *state, dir[256], path[300];
  ifd_model_config_t *cfg = (void *)0x1;
  ifd_errmsg_t err;
  snprintf(dir, sizeof(dir), "%s/m", root);
  assert_int_equal(mkdir(dir, 0755), 0);
  snprintf(path, sizeof(path), "%s/config.pbtxt", dir);
  write_file(path, "name: \"m\"\nmax_batch_size: {\n");
  ifd_errclear(&err);
  assert_int_equal(ifd_config_load(dir, "m", &cpu_opts, &cfg, &err),
                   IFD_EPARSE);
  assert_null(cfg);
  assert_non_null(strstr(err.text, path));
  write_file(path, "no_such_field: 1\n");
  assert_int_equal(ifd_config_load(dir, "m", &cpu_opts, &cfg, &err),
                   IFD_EPARSE);
  assert_non_null(strstr(err.text, "no_such_field"));
}

/* --model-config-name: configs/<name>.pbtxt when it exists, else
 * config.pbtxt. */
static void test_custom_config_name(void **state) {
  char *root = *state, dir[256], path[320];
  ifd_config_opts_t named = {0, 0, "small", 0, 0, 0, NULL};
  ifd_model_config_t *cfg = NULL;
  ifd_errmsg_t err;
  snprintf(dir, sizeof(dir), "%s/m", root);
  assert_int_equal(mkdir(dir, 0755), 0);
  snprintf(path, sizeof(path), "%s/config.pbtxt", dir);
  write_file(path, "backend: \"identity\"\nmax_batch_size: 8\n");
  ifd_errclear(&err);
  assert_int_equal(ifd_config_load(dir, "m", &named, &cfg, &err), 0);
  assert_int_equal(cfg->max_batch_size, 8);
  ifd_config_free(cfg);
  snprintf(path, sizeof(path), "%s/configs", dir);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof(path), "%s/configs/small.pbtxt", dir);
  write_file(path, "backend: \"identity\"\nmax_batch_size: 2\n");
  assert_int_equal(ifd_config_load(dir, "m", &named, &cfg, &err), 0);
  assert_int_equal(cfg->max_batch_size, 2);
  ifd_config_free(cfg);
  assert_int_equal(ifd_config_load(dir, "m", &cpu_opts, &cfg, &err), 0);
  assert_int_equal(cfg->max_batch_size, 8);
  ifd_config_free(cfg);
}

static void test_missing_file_strict(void **state) {
  char *root = *state, dir[256];
  ifd_config_opts_t strict = {1, 0, NULL, 0, 0, 0, NULL};
  ifd_model_config_t *cfg = (void *)0x1;
  ifd_errmsg_t err;
  snprintf(dir, sizeof(dir), "%s/m.identity", root);
  assert_int_equal(mkdir(dir, 0755), 0);
  ifd_errclear(&err);
  assert_int_equal(ifd_config_load(dir, "m.identity", &strict, &cfg, &err),
                   IFD_ENOTFOUND);
  assert_null(cfg);
  assert_int_equal(err.code, IFD_ENOTFOUND);
  assert_non_null(strstr(err.text, "config.pbtxt"));
}

static void test_missing_file_autofill(void **state) {
  char *root = *state, dir[256];
  ifd_model_config_t *cfg = NULL;
  ifd_errmsg_t err;

  /* The backend comes from the model name "<anything>.<backend>". */
  snprintf(dir, sizeof(dir), "%s/m.identity", root);
  assert_int_equal(mkdir(dir, 0755), 0);
  ifd_errclear(&err);
  assert_int_equal(ifd_config_load(dir, "m.identity", &cpu_opts, &cfg, &err),
                   0);
  assert_string_equal(cfg->name, "m.identity");
  assert_string_equal(cfg->backend, "identity");
  assert_string_equal(cfg->default_model_filename, "model.identity");
  assert_int_equal(cfg->n_input, 0);
  ifd_config_free(cfg);

  /* Or from the files of the first version folder. */
  snprintf(dir, sizeof(dir), "%s/onnx", root);
  assert_int_equal(mkdir(dir, 0755), 0);
  snprintf(dir, sizeof(dir), "%s/onnx/1", root);
  assert_int_equal(mkdir(dir, 0755), 0);
  snprintf(dir, sizeof(dir), "%s/onnx/1/model.onnx", root);
  write_file(dir, "");
  snprintf(dir, sizeof(dir), "%s/onnx", root);
  assert_int_equal(ifd_config_load(dir, "onnx", &cpu_opts, &cfg, &err), 0);
  assert_string_equal(cfg->backend, "onnxruntime");
  assert_string_equal(cfg->platform, "onnxruntime_onnx");
  assert_string_equal(cfg->default_model_filename, "model.onnx");
  /* Triton gives TensorFlow and ONNX Runtime two CPU instances. */
  assert_int_equal(ifd_config_normalize(cfg, &cpu_opts, &err), 0);
  assert_int_equal(cfg->n_instance_group, 1);
  assert_int_equal(cfg->instance_group[0]->count, 2);
  ifd_config_free(cfg);

  snprintf(dir, sizeof(dir), "%s/py", root);
  assert_int_equal(mkdir(dir, 0755), 0);
  snprintf(dir, sizeof(dir), "%s/py/3", root);
  assert_int_equal(mkdir(dir, 0755), 0);
  snprintf(dir, sizeof(dir), "%s/py/3/model.py", root);
  write_file(dir, "");
  snprintf(dir, sizeof(dir), "%s/py", root);
  assert_int_equal(ifd_config_load(dir, "py", &cpu_opts, &cfg, &err), 0);
  assert_string_equal(cfg->backend, "python");
  assert_string_equal(cfg->platform, "");
  ifd_config_free(cfg);

  /* Nothing to go on: Triton's "Invalid model name" error. */
  snprintf(dir, sizeof(dir), "%s/plain", root);
  assert_int_equal(mkdir(dir, 0755), 0);
  cfg = (void *)0x1;
  assert_int_equal(ifd_config_load(dir, "plain", &cpu_opts, &cfg, &err),
                   IFD_EINVAL);
  assert_null(cfg);
  assert_non_null(strstr(err.text,
                         "Invalid model name: Could not determine "
                         "backend for model 'plain'"));
}

/* ---- platform and backend ---- */

static void test_backend_name(void **state) {
  static const struct {
    const char *text, *backend;
  } rows[] = {
      {"backend: \"identity\"", "identity"},
      {"platform: \"tensorrt_plan\"", "tensorrt"},
      {"platform: \"tensorflow_graphdef\"", "tensorflow"},
      {"platform: \"tensorflow_savedmodel\"", "tensorflow"},
      {"platform: \"onnxruntime_onnx\"", "onnxruntime"},
      {"platform: \"pytorch_libtorch\"", "pytorch"},
      {"platform: \"ensemble\"", ""},
      {"platform: \"onnxruntime_onnx\" backend: \"custom\"", "custom"},
      {"platform: \"mystery\"", NULL},
      {"", NULL},
  };
  (void)state;
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
    ifd_model_config_t *cfg = parse_ok(rows[i].text, "m");
    const char *b = ifd_config_backend_name(cfg);
    if (rows[i].backend == NULL)
      assert_null(b);
    else
      assert_string_equal(b, rows[i].backend);
    ifd_config_free(cfg);
  }
}

static void test_platform_derives_backend(void **state) {
  static const struct {
    const char *platform, *backend, *file;
  } rows[] = {
      {"tensorrt_plan", "tensorrt", "model.plan"},
      {"tensorflow_graphdef", "tensorflow", "model.graphdef"},
      {"tensorflow_savedmodel", "tensorflow", "model.savedmodel"},
      {"onnxruntime_onnx", "onnxruntime", "model.onnx"},
      {"pytorch_libtorch", "pytorch", "model.pt"},
      {"ensemble", "", ""},
  };
  char text[256];
  ifd_errmsg_t err;
  (void)state;
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
    snprintf(text, sizeof(text), "platform: \"%s\"", rows[i].platform);
    ifd_model_config_t *cfg = parse_ok(text, "m");
    assert_int_equal(ifd_config_normalize(cfg, &cpu_opts, &err), 0);
    assert_string_equal(cfg->platform, rows[i].platform);
    assert_string_equal(cfg->backend, rows[i].backend);
    assert_string_equal(cfg->default_model_filename, rows[i].file);
    ifd_config_free(cfg);
  }
  /* The reverse: a known backend fills its platform. */
  ifd_model_config_t *cfg = parse_ok("backend: \"tensorrt\"", "m");
  assert_int_equal(ifd_config_normalize(cfg, &cpu_opts, &err), 0);
  assert_string_equal(cfg->platform, "tensorrt_plan");
  ifd_config_free(cfg);
  /* And a given default_model_filename is kept. */
  cfg = parse_ok(
      "platform: \"onnxruntime_onnx\" default_model_filename: "
      "\"net.onnx\"",
      "m");
  assert_int_equal(ifd_config_normalize(cfg, &cpu_opts, &err), 0);
  assert_string_equal(cfg->default_model_filename, "net.onnx");
  ifd_config_free(cfg);
}

/* ---- normalize ---- */

#define IO                                                      \
  "input [ { name: \"I\" data_type: TYPE_FP32 dims: [ 4 ] } ] " \
  "output [ { name: \"O\" data_type: TYPE_FP32 dims: [ 4 ] } ] "
#define BASE "name: \"m\" backend: \"identity\" max_batch_size: 8 " IO

static void test_normalize_gpu(void **state) {
  ifd_config_opts_t gpu2 = {0, 2, NULL, 0, 0, 0, NULL};
  ifd_errmsg_t err;
  (void)state;
  ifd_model_config_t *cfg = parse_ok(BASE, "m");
  assert_int_equal(ifd_config_normalize(cfg, &gpu2, &err), 0);
  assert_int_equal(cfg->n_instance_group, 1);
  Inference__ModelInstanceGroup *g = cfg->instance_group[0];
  assert_string_equal(g->name, "m");
  assert_int_equal(g->kind, INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_GPU);
  assert_int_equal(g->count, 1);
  assert_int_equal(g->n_gpus, 2);
  assert_int_equal(g->gpus[0], 0);
  assert_int_equal(g->gpus[1], 1);
  assert_int_equal(ifd_config_validate(cfg, &gpu2, &err), 0);
  ifd_config_free(cfg);

  /* KIND_AUTO with a GPU that does not exist falls back to CPU. */
  cfg = parse_ok(BASE "instance_group [ { gpus: [ 5 ] }, { count: 3 } ]", "m");
  assert_int_equal(ifd_config_normalize(cfg, &gpu2, &err), 0);
  assert_int_equal(cfg->instance_group[0]->kind,
                   INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_CPU);
  assert_string_equal(cfg->instance_group[0]->name, "m_0");
  assert_int_equal(cfg->instance_group[1]->kind,
                   INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_GPU);
  assert_string_equal(cfg->instance_group[1]->name, "m_1");
  assert_int_equal(cfg->instance_group[1]->count, 3);
  ifd_config_free(cfg);
}

/* A backend's preferred instance groups (Triton's NormalizeInstanceGroup):
 * they fill only what the config left to the defaults. */
static void test_prefer_groups(void **state) {
  ifd_group_defaults_t d;
  ifd_config_opts_t cpu = {0, 0, NULL, 0, 0, 0, &d};
  ifd_config_opts_t gpus = {0, 2, NULL, 0, 0, 0, &d};
  int32_t gpu1[1] = {1};
  ifd_pref_group_t pref[2] = {
      {INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_GPU, 4, gpu1, 1},
      {INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_CPU, 3, NULL, 0}};
  ifd_errmsg_t err;
  (void)state;
  /* No instance_group, no GPU: the GPU preference is skipped, the CPU one
   * gives kind and count. */
  ifd_model_config_t *cfg = parse_ok(BASE, "m");
  assert_int_equal(ifd_config_normalize(cfg, &cpu, &err), 0);
  assert_true(d.added);
  assert_int_equal(cfg->instance_group[0]->count, 1);
  assert_int_equal(ifd_config_prefer_groups(cfg, &cpu, &d, pref, 2, &err), 0);
  assert_int_equal(cfg->instance_group[0]->kind,
                   INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_CPU);
  assert_int_equal(cfg->instance_group[0]->count, 3);
  assert_string_equal(cfg->instance_group[0]->name, "m");
  ifd_config_free(cfg);
  /* With GPUs: the GPU preference, on the listed GPU that exists. */
  cfg = parse_ok(BASE, "m");
  assert_int_equal(ifd_config_normalize(cfg, &gpus, &err), 0);
  assert_int_equal(cfg->instance_group[0]->n_gpus, 2);
  assert_int_equal(ifd_config_prefer_groups(cfg, &gpus, &d, pref, 2, &err), 0);
  assert_int_equal(cfg->instance_group[0]->kind,
                   INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_GPU);
  assert_int_equal(cfg->instance_group[0]->count, 4);
  assert_int_equal(cfg->instance_group[0]->n_gpus, 1);
  assert_int_equal(cfg->instance_group[0]->gpus[0], 1);
  ifd_config_free(cfg);
  /* A group's own count stays; one without takes its kind's preference. */
  cfg = parse_ok(BASE
                 "instance_group [ { kind: KIND_CPU count: 2 }, "
                 "{ kind: KIND_CPU } ]",
                 "m");
  assert_int_equal(ifd_config_normalize(cfg, &cpu, &err), 0);
  assert_false(d.added);
  assert_int_equal(d.count_unset, 2);
  assert_int_equal(ifd_config_prefer_groups(cfg, &cpu, &d, pref, 2, &err), 0);
  assert_int_equal(cfg->instance_group[0]->count, 2);
  assert_int_equal(cfg->instance_group[1]->count, 3);
  ifd_config_free(cfg);
}

/* GPUs below --min-supported-compute-capability are ignored, as if
 * absent: not picked for KIND_GPU or KIND_AUTO, refused when named. */
static void test_normalize_gpu_below_min_cc(void **state) {
  ifd_config_opts_t o = {0,   3, NULL, 1u << 1,
                         7.5, 0, NULL}; /* GPU 1 is too old */
  ifd_config_opts_t only_old = {0, 1, NULL, 1u << 0, 0, 0, NULL};
  ifd_errmsg_t err;
  (void)state;
  ifd_model_config_t *cfg = parse_ok(BASE, "m");
  assert_int_equal(ifd_config_normalize(cfg, &o, &err), 0);
  Inference__ModelInstanceGroup *g = cfg->instance_group[0];
  assert_int_equal(g->kind, INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_GPU);
  assert_int_equal(g->n_gpus, 2);
  assert_int_equal(g->gpus[0], 0);
  assert_int_equal(g->gpus[1], 2);
  assert_int_equal(ifd_config_validate(cfg, &o, &err), 0);
  ifd_config_free(cfg);

  /* KIND_AUTO naming the ignored GPU runs on CPU. */
  cfg = parse_ok(BASE "instance_group [ { gpus: [ 1 ] } ]", "m");
  assert_int_equal(ifd_config_normalize(cfg, &o, &err), 0);
  assert_int_equal(cfg->instance_group[0]->kind,
                   INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_CPU);
  ifd_config_free(cfg);

  /* KIND_GPU naming it is refused with Triton's message and the list. */
  cfg = parse_ok(BASE "instance_group [ { kind: KIND_GPU gpus: [ 1 ] } ]", "m");
  assert_int_equal(ifd_config_normalize(cfg, &o, &err), 0);
  assert_int_equal(ifd_config_validate(cfg, &o, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text,
                         "specifies invalid or unsupported gpu id 1. "
                         "GPUs with at least the minimum required "
                         "CUDA compute compatibility of 7.500000 "
                         "are: 0, 2"));
  ifd_config_free(cfg);

  /* The only GPU is too old: AUTO is CPU, GPU has none available. */
  cfg = parse_ok(BASE, "m");
  assert_int_equal(ifd_config_normalize(cfg, &only_old, &err), 0);
  assert_int_equal(cfg->instance_group[0]->kind,
                   INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_CPU);
  ifd_config_free(cfg);
  cfg = parse_ok(BASE "instance_group [ { kind: KIND_GPU } ]", "m");
  assert_int_equal(ifd_config_normalize(cfg, &only_old, &err), 0);
  assert_int_equal(ifd_config_validate(cfg, &only_old, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "no GPUs are available"));
  ifd_config_free(cfg);
}

static void test_normalize_batchers(void **state) {
  ifd_errmsg_t err;
  (void)state;
  ifd_model_config_t *cfg = parse_ok(BASE "dynamic_batching { }", "m");
  assert_int_equal(ifd_config_normalize(cfg, &cpu_opts, &err), 0);
  assert_int_equal(cfg->dynamic_batching->n_preferred_batch_size, 1);
  assert_int_equal(cfg->dynamic_batching->preferred_batch_size[0], 8);
  /* Only ensembles get a transaction policy by default. */
  assert_null(cfg->model_transaction_policy);
  ifd_config_free(cfg);

  cfg = parse_ok(BASE "sequence_batching { oldest { } }", "m");
  assert_int_equal(ifd_config_normalize(cfg, &cpu_opts, &err), 0);
  assert_true(cfg->sequence_batching->max_sequence_idle_microseconds ==
              1000000);
  assert_int_equal(cfg->sequence_batching->oldest->n_preferred_batch_size, 1);
  assert_int_equal(cfg->sequence_batching->oldest->preferred_batch_size[0], 8);
  assert_int_equal(ifd_config_validate(cfg, &cpu_opts, &err), 0);
  ifd_config_free(cfg);

  /* No strategy: the direct one, written into the config as Triton does. */
  cfg = parse_ok(BASE "sequence_batching { }", "m");
  assert_int_equal(ifd_config_normalize(cfg, &cpu_opts, &err), 0);
  assert_int_equal(cfg->sequence_batching->strategy_choice_case,
                   INFERENCE__MODEL_SEQUENCE_BATCHING__STRATEGY_CHOICE_DIRECT);
  assert_non_null(cfg->sequence_batching->direct);
  assert_int_equal(ifd_config_validate(cfg, &cpu_opts, &err), 0);
  ifd_config_free(cfg);

  /* Given values stay. */
  cfg = parse_ok(BASE
                 "sequence_batching { max_sequence_idle_microseconds: 5 }"
                 "optimization { input_pinned_memory { enable: false } }",
                 "m");
  assert_int_equal(ifd_config_normalize(cfg, &cpu_opts, &err), 0);
  assert_true(cfg->sequence_batching->max_sequence_idle_microseconds == 5);
  assert_false(cfg->optimization->input_pinned_memory->enable);
  assert_true(cfg->optimization->output_pinned_memory->enable);
  ifd_config_free(cfg);
}

#define IMAP(k, v) "input_map { key: \"" k "\" value: \"" v "\" } "
#define OMAP(k, v) "output_map { key: \"" k "\" value: \"" v "\" } "

#define ENSEMBLE_OK                                                            \
  "name: \"m\" platform: \"ensemble\" max_batch_size: 8 " IO                   \
  "ensemble_scheduling { step [ "                                              \
  "{ model_name: \"a\" model_version: -1 input_map { key: \"x\" value: \"I\" " \
  "}"                                                                          \
  "  output_map { key: \"y\" value: \"T\" } }, "                               \
  "{ model_name: \"b\" model_version: -1 input_map { key: \"x\" value: \"T\" " \
  "}"                                                                          \
  "  output_map { key: \"y\" value: \"O\" } } ] }"

static void test_ensemble_ok(void **state) {
  ifd_errmsg_t err;
  (void)state;
  ifd_model_config_t *cfg = parse_ok(ENSEMBLE_OK, "m");
  assert_int_equal(ifd_config_normalize(cfg, &cpu_opts, &err), 0);
  /* Ensembles get no optimization and no instance groups, and a transaction
   * policy (not decoupled until a decoupled composing model says so). */
  assert_null(cfg->optimization);
  assert_int_equal(cfg->n_instance_group, 0);
  assert_non_null(cfg->model_transaction_policy);
  assert_false(cfg->model_transaction_policy->decoupled);
  assert_string_equal(cfg->backend, "");
  if (ifd_config_validate(cfg, &cpu_opts, &err) != 0) fail_msg("%s", err.text);
  json_t *j = ifd_config_to_json(cfg);
  assert_non_null(json_object_get(j, "ensemble_scheduling"));
  /* A field newer than 2.47 is left out while it has its default. */
  assert_null(json_object_get(json_object_get(j, "ensemble_scheduling"),
                              "max_inflight_responses"));
  json_decref(j);
  ifd_config_free(cfg);
}

/* The whole message for an ensemble output no step can compute: Triton
 * names the first tensor it finds, walking back through the steps, that
 * nothing writes, and names none when the walk only finds a cycle (its
 * suite: unreachable_output_2, unreachable_output_3). */
static void test_ensemble_unreachable_output(void **state) {
  static const struct {
    const char *steps, *msg;
  } rows[] = {
      {"{ model_name: \"a\" " IMAP("x", "I") OMAP(
           "y", "P") "}, "
                     "{ model_name: \"b\" " IMAP("x", "O") OMAP("y", "O") "}",
       "output 'O' for ensemble 'm' is not written"},
      {"{ model_name: \"a\" " IMAP("x", "I")
           OMAP("y", "P") "}, "
                          "{ model_name: \"b\" " IMAP("x", "lost")
                              OMAP("y", "O") "}",
       "output 'O' for ensemble 'm' is not written: at least one of its "
       "depending tensors, 'lost', is not connected"},
      /* Two steps back, past a tensor that is written but not ready. */
      {"{ model_name: \"a\" " IMAP("x", "I")
           OMAP("y", "P") "}, "
                          "{ model_name: \"b\" " IMAP("x", "P") IMAP("z", "mid")
                              OMAP("y", "O") "}, { model_name: \"c\" " IMAP(
                                  "x", "src") OMAP("y", "mid") "}",
       "output 'O' for ensemble 'm' is not written: at least one of its "
       "depending tensors, 'src', is not connected"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
    char text[1024];
    ifd_errmsg_t err;
    snprintf(text, sizeof(text),
             "name: \"m\" platform: \"ensemble\" " IO
             "output [ { name: \"P\" data_type: TYPE_FP32 dims: [ 4 ] } ] "
             "ensemble_scheduling { step [ %s ] }",
             rows[i].steps);
    assert_int_equal(check(text, &cpu_opts, &err), IFD_EINVAL);
    if (strcmp(err.text, rows[i].msg) != 0)
      fail_msg("row %zu:\n  got:  %s\n  want: %s", i, err.text, rows[i].msg);
  }
}

static void test_valid_shapes(void **state) {
  static const char *ok[] = {
      /* Reshape with matching runs between variable dims. */
      "name: \"m\" backend: \"b\" max_batch_size: 8 "
      "input [ { name: \"I\" data_type: TYPE_FP32 dims: [ 2, 4, -1, 6 ] "
      "reshape { shape: [ 8, -1, 6 ] } } ]",
      /* A scalar through an empty reshape, batching model. */
      "name: \"m\" backend: \"b\" max_batch_size: 8 "
      "input [ { name: \"I\" data_type: TYPE_FP32 dims: [ 1 ] reshape { } } ]",
      /* No inputs or outputs at all is fine for Triton. */
      "name: \"m\" backend: \"b\"",
      /* Dynamic batching with max_batch_size 0 and no preferred sizes. */
      "name: \"m\" backend: \"b\" dynamic_batching { }",
      /* NHWC with 3 dims; TensorRT shape tensor. */
      "name: \"m\" platform: \"tensorrt_plan\" "
      "input [ { name: \"I\" data_type: TYPE_FP32 format: FORMAT_NHWC "
      "dims: [ 3, 4, 5 ] is_shape_tensor: true } ]",
      /* Sequence controls of every kind, correct. */
      "name: \"m\" backend: \"b\" max_batch_size: 2 sequence_batching { "
      "control_input [ { name: \"S\" control [ { kind: CONTROL_SEQUENCE_START "
      "int32_false_true: [ 0, 1 ] } ] }, { name: \"C\" control [ { kind: "
      "CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] } ] }",
      /* model_warmup: Triton's config validation checks nothing of it (an
       * ensemble's aside); a variable dim, a missing data kind, a batch of
       * 0 or an unknown input are refused, or skipped, when the model
       * loads (backend_api/model/warmup.c, test/e2e/test_warmup.py). */
      "name: \"m\" backend: \"b\" max_batch_size: 8 "
      "input [ { name: \"I\" data_type: TYPE_FP32 dims: [ -1 ] } ] "
      "model_warmup [ { name: \"w\" batch_size: 0 count: 3 inputs { key: "
      "\"I\" value: { data_type: TYPE_FP32 dims: [ -1 ] } } inputs { key: "
      "\"X\" value: { data_type: TYPE_STRING dims: [ 2 ] input_data_file: "
      "\"x\" } } }, { } ]",
  };
  ifd_errmsg_t err;
  (void)state;
  for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
    if (check(ok[i], &cpu_opts, &err) != 0)
      fail_msg("row %zu: %s", i, err.text);
  }
}

/* ---- validation failures, one row per rule ---- */

typedef struct bad_case {
  const char *rule;
  const char *text;
  int gpu_count;
  int code;
  const char *msg;
} bad_case_t;

#define MB "name: \"m\" backend: \"identity\" max_batch_size: 8 "
#define IN(x) "input [ { " x " } ] "
#define OUT(x) "output [ { " x " } ] "
#define SEQ(x) MB IO "sequence_batching { " x " }"
#define CTRL(n, x) "{ name: \"" n "\" control [ { " x " } ] }"
#define ENS(x) "name: \"m\" platform: \"ensemble\" " IO x
#define STEP(x) "ensemble_scheduling { step [ { " x " } ] }"

static const bad_case_t bad_cases[] = {
    {"name", "backend: \"identity\"", 0, IFD_EINVAL,
     "model configuration must specify 'name'"},
    {"backend_or_platform", "name: \"m\"", 0, IFD_EINVAL,
     "unexpected platform type '' for m"},
    {"ensemble_no_backend", "name: \"m\" platform: \"ensemble\" backend: \"x\"",
     0, IFD_EINVAL,
     "Ensemble model 'm' must have platform type 'ensemble' and empty backend"},
    {"platform_backend_pair",
     "name: \"m\" platform: \"tensorrt_plan\" backend: \"onnxruntime\"", 0,
     IFD_EINVAL,
     "unexpected 'platform' and 'backend' pair, got:tensorrt_plan, "
     "onnxruntime"},
    {"max_batch_size", "name: \"m\" backend: \"b\" max_batch_size: -1", 0,
     IFD_EINVAL, "'max_batch_size' must be non-negative value for m"},
    {"preferred_positive", MB IO "dynamic_batching { preferred_batch_size: 0 }",
     0, IFD_EINVAL, "dynamic batching preferred size must be positive for m"},
    {"preferred_max", MB IO "dynamic_batching { preferred_batch_size: [4, 9] }",
     0, IFD_EINVAL,
     "dynamic batching preferred size must be <= max batch size for m"},
    {"default_priority",
     MB IO "dynamic_batching { priority_levels: 2 default_priority_level: 3 }",
     0, IFD_EINVAL, "default priority level must be in range [1, 2] for m"},
    {"priority_policy_level",
     MB IO "dynamic_batching { priority_levels: 2 default_priority_level: 1 "
           "priority_queue_policy { key: 3 value { max_queue_size: 1 } } }",
     0, IFD_EINVAL,
     "priority queue policy must have priority level in range [1, 2] for m"},
    {"preserve_ordering_levels",
     MB IO "dynamic_batching { preserve_ordering: true priority_levels: 2 "
           "default_priority_level: 1 }",
     0, IFD_EINVAL,
     "Only one priority level is allowed when "
     "'preserve_ordering' is true for m"},
    {"preserve_ordering_delay",
     MB IO "dynamic_batching { preserve_ordering: true default_queue_policy { "
           "timeout_action: DELAY default_timeout_microseconds: 10 } }",
     0, IFD_EINVAL, "Queue policy can not have DELAY as timeout action"},
    {"sequence_cache", SEQ("") " response_cache { enable: true }", 0,
     IFD_EINVAL,
     "Response Cache does not currently support model m with "
     "sequence batching scheduler"},
    {"control_name",
     SEQ("control_input [ " CTRL("",
                                 "kind: CONTROL_SEQUENCE_START "
                                 "int32_false_true: [0, 1]") " ]"),
     0, IFD_EINVAL, "sequence batching control tensor must have a name for m"},
    {"control_tensor_once",
     SEQ("control_input [ " CTRL(
         "S",
         "kind: CONTROL_SEQUENCE_START "
         "int32_false_true: [0, 1]") ", " CTRL("S",
                                               "kind: CONTROL_SEQUENCE_END "
                                               "int32_false_true: [0, 1]") " "
                                                                           "]"),
     0, IFD_EINVAL,
     "sequence batching control tensor 'S' is specified for "
     "multiple control kinds for m"},
    {"control_kind_once",
     SEQ("control_input [ " CTRL(
         "S",
         "kind: CONTROL_SEQUENCE_START "
         "int32_false_true: [0, 1]") ", " CTRL("T",
                                               "kind: CONTROL_SEQUENCE_START "
                                               "int32_false_true: [0, 1]") " "
                                                                           "]"),
     0, IFD_EINVAL,
     "sequence batching specifies multiple CONTROL_SEQUENCE_START tensors for "
     "m"},
    {"control_values",
     SEQ("control_input [ " CTRL("S", "kind: CONTROL_SEQUENCE_READY") " ]"), 0,
     IFD_EINVAL,
     "sequence batching must specify either 'int32_false_true', "
     "'fp32_false_true' or 'bool_false_true' for "
     "CONTROL_SEQUENCE_READY for m"},
    {"control_one_list",
     SEQ("control_input [ " CTRL("S",
                                 "kind: CONTROL_SEQUENCE_END "
                                 "int32_false_true: [0, 1] "
                                 "bool_false_true: [false, true]") " ]"),
     0, IFD_EINVAL, "sequence batching specifies more than one from"},
    {"control_two_entries",
     SEQ("control_input [ " CTRL("S",
                                 "kind: CONTROL_SEQUENCE_START "
                                 "fp32_false_true: [0]") " ]"),
     0, IFD_EINVAL,
     "sequence batching control 'fp32_false_true' must have "
     "exactly 2 entries for CONTROL_SEQUENCE_START for m"},
    {"corrid_no_values",
     SEQ("control_input [ " CTRL("C",
                                 "kind: CONTROL_SEQUENCE_CORRID "
                                 "data_type: TYPE_INT64 "
                                 "int32_false_true: [0, 1]") " ]"),
     0, IFD_EINVAL, "sequence batching must not specify either"},
    {"corrid_type",
     SEQ("control_input [ " CTRL("C",
                                 "kind: CONTROL_SEQUENCE_CORRID "
                                 "data_type: TYPE_FP32") " ]"),
     0, IFD_EINVAL,
     "unexpected data type for control CONTROL_SEQUENCE_CORRID "
     "for m. Allowed data types are TYPE_UINT64"},
    {"oldest_preferred", SEQ("oldest { preferred_batch_size: [ 16 ] }"), 0,
     IFD_EINVAL,
     "sequence batching preferred batch size must be <= max batch size for m"},
    {"oldest_preferred_positive",
     SEQ("oldest { preferred_batch_size: [ -1 ] }"), 0, IFD_EINVAL,
     "sequence batching preferred batch size must be positive for m"},
    {"slot_utilization", SEQ("direct { minimum_slot_utilization: 1.5 }"), 0,
     IFD_EINVAL,
     "sequence batching minimum slot utilization must be in range "
     "(0.0, 1.0] for m"},
    {"ensemble_platform", MB IO STEP("model_name: \"a\""), 0, IFD_EINVAL,
     "ensemble scheduling cannot be set for model 'm' whose platform is not "
     "ensemble"},
    {"ensemble_needs_scheduling", ENS(""), 0, IFD_EINVAL,
     "ensemble scheduling must be set for ensemble m whose platform is "
     "ensemble"},
    {"ensemble_instance_group",
     ENS("instance_group [ { count: 1 } ] " STEP("model_name: \"a\"")), 0,
     IFD_EINVAL, "instance group should not be specified for ensemble 'm'"},
    {"ensemble_optimization",
     ENS("optimization { priority: PRIORITY_MAX } " STEP("model_name: \"a\"")),
     0, IFD_EINVAL, "optimization should not be specified for ensemble 'm'"},
    {"ensemble_warmup",
     ENS("model_warmup [ { name: \"w\" } ] " STEP("model_name: \"a\"")), 0,
     IFD_EINVAL, "model_warmup can not be specified for ensemble 'm'"},
    {"ensemble_steps", ENS("ensemble_scheduling { }"), 0, IFD_EINVAL,
     "must specify 'step' for ensemble 'm'"},
    {"step_model_name", ENS(STEP(IMAP("x", "I") OMAP("y", "O"))), 0, IFD_EINVAL,
     "must specify 'model_name' in step 0 of ensemble 'm'"},
    {"step_input_map", ENS(STEP("model_name: \"a\" " OMAP("y", "O"))), 0,
     IFD_EINVAL, "must specify 'input_map' in step 0 of ensemble 'm'"},
    {"step_output_map", ENS(STEP("model_name: \"a\" " IMAP("x", "I"))), 0,
     IFD_EINVAL, "must specify 'output_map' in step 0 of ensemble 'm'"},
    {"ensemble_output_once",
     ENS("ensemble_scheduling { step [ { model_name: \"a\" " IMAP("x", "I")
             OMAP("y", "O") "}, { model_name: \"b\" " IMAP("x", "I")
                 OMAP("y", "O") "} ] }"),
     0, IFD_EINVAL,
     "ensemble tensor 'O' can appear in an output map only once "
     "for ensemble 'm' step 1"},
    {"ensemble_input_used",
     ENS(STEP("model_name: \"a\" " IMAP("x", "Z") OMAP("y", "O"))), 0,
     IFD_EINVAL, "ensemble input 'I' for ensemble m' is not used"},
    {"ensemble_output_used",
     ENS(STEP("model_name: \"a\" " IMAP("x", "I") OMAP("y", "Q"))), 0,
     IFD_EINVAL, "ensemble output 'O' for ensemble m' is not used"},
    {"ensemble_output_written",
     ENS("ensemble_scheduling { step [ { model_name: \"a\" " IMAP("x", "I")
             OMAP("y", "T") "}, { model_name: \"b\" " IMAP("x", "T")
                 IMAP("z", "U") OMAP("y", "O") "} ] }"),
     0, IFD_EINVAL,
     "output 'O' for ensemble 'm' is not written: at least one of its "
     "depending tensors, 'U', is not connected"},
    /* Text format keeps the last of a repeated map key (Triton's suite:
     * tensor_to_input_overmapped): "x" reads I, and T is left unused. */
    {"ensemble_input_map_last_wins",
     ENS("ensemble_scheduling { step [ { model_name: \"a\" " IMAP("x", "I")
             OMAP("y", "T") "}, { model_name: \"b\" " IMAP("x", "T")
                 IMAP("x", "I") OMAP("y", "O") "} ] }"),
     0, IFD_EINVAL, "ensemble tensor 'T' is unused in ensemble 'm'"},
    {"ensemble_tensor_unused",
     ENS("ensemble_scheduling { step [ { model_name: \"a\" " IMAP("x", "I")
             OMAP("y", "O") OMAP("z", "T") "} ] }"),
     0, IFD_EINVAL, "ensemble tensor 'T' is unused in ensemble 'm'"},
    {"decoupled_cache",
     MB IO "model_transaction_policy { decoupled: true } "
           "response_cache { enable: true }",
     0, IFD_EINVAL,
     "Response Cache does not currently support model m with "
     "'decoupled' transaction policy"},
    {"metric_identifier", MB IO "model_metrics { metric_control [ { } ] }", 0,
     IFD_EINVAL, "metric control must specify 'metric_identifier'"},
    {"metric_family",
     MB IO "model_metrics { metric_control [ { metric_identifier { } } ] }", 0,
     IFD_EINVAL, "metric identifier must specify non-empty 'family'"},
    {"metric_histogram",
     MB IO "model_metrics { metric_control [ { metric_identifier { family: "
           "\"f\" } } ] }",
     0, IFD_EINVAL, "metric control must specify 'histogram_options'"},
    {"metric_buckets",
     MB IO "model_metrics { metric_control [ { metric_identifier { family: "
           "\"f\" } histogram_options { } } ] }",
     0, IFD_EINVAL, "histogram options must specify non-empty 'buckets'"},
    {"gpu_none", MB IO "instance_group [ { kind: KIND_GPU } ]", 0, IFD_EINVAL,
     "instance group m_0 of model m has kind KIND_GPU but no GPUs are "
     "available"},
    {"gpu_id", MB IO "instance_group [ { kind: KIND_GPU gpus: [ 0, 5 ] } ]", 2,
     IFD_EINVAL,
     "instance group m_0 of model m specifies invalid or "
     "unsupported gpu id 5. GPUs with at least the minimum "
     "required CUDA compute compatibility of 6.000000 are: 0, 1"},
    {"cpu_gpus", MB IO "instance_group [ { kind: KIND_CPU gpus: [ 0 ] } ]", 1,
     IFD_EINVAL,
     "instance group m_0 of model m has kind KIND_CPU but specifies one or "
     "more GPUs"},
    {"model_gpus",
     MB IO "instance_group [ { name: \"g\" kind: KIND_MODEL gpus: [ 0 ] } ]", 1,
     IFD_EINVAL,
     "instance group g of model m has kind KIND_MODEL but "
     "specifies one or more GPUs"},
    {"profile_trt", MB IO "instance_group [ { profile: [ \"0\" ] } ]", 0,
     IFD_EINVAL,
     "specifies profile field which is only supported for TensorRT "
     "models"},
    {"input_name", MB IN("data_type: TYPE_FP32 dims: [ 1 ]"), 0, IFD_EINVAL,
     "model input must specify 'name' for m"},
    {"input_data_type", MB IN("name: \"I\" dims: [ 1 ]"), 0, IFD_EINVAL,
     "model input 'I' must specify 'data_type' for m"},
    {"input_dims", MB IN("name: \"I\" data_type: TYPE_FP32"), 0, IFD_EINVAL,
     "model input 'I' must specify 'dims' for m"},
    {"input_dim_value", MB IN("name: \"I\" data_type: TYPE_FP32 dims: [4, 0]"),
     0, IFD_EINVAL,
     "model input 'I' dimension must be integer >= 1, or -1 to "
     "indicate a variable-size dimension for m"},
    {"output_dim_value",
     MB OUT("name: \"O\" data_type: TYPE_FP32 dims: [ -2 ]"), 0, IFD_EINVAL,
     "model output 'O' dimension must be integer >= 1, or -1"},
    {"output_name", MB OUT("data_type: TYPE_FP32 dims: [ 1 ]"), 0, IFD_EINVAL,
     "model output must specify 'name' for m"},
    {"empty_reshape_nonbatching",
     "name: \"m\" backend: \"b\" " IN("name: \"I\" data_type: TYPE_FP32 "
                                      "dims: [ 1 ] reshape { }"),
     0, IFD_EINVAL,
     "model input 'I' cannot have empty reshape for "
     "non-batching model as scalar tensors are not supported"},
    {"reshape_dim_value",
     MB IN("name: \"I\" data_type: TYPE_FP32 dims: [ 4 ] "
           "reshape { shape: [ 0 ] }"),
     0, IFD_EINVAL, "model input 'I' reshape dimensions must be integer >= 1"},
    {"reshape_size",
     MB IN("name: \"I\" data_type: TYPE_FP32 dims: [ 4 ] "
           "reshape { shape: [ 2, 3 ] }"),
     0, IFD_EINVAL, "model input 'I' has different size for dims and reshape"},
    {"reshape_variable_count",
     MB IN("name: \"I\" data_type: TYPE_FP32 dims: [ -1, 4 ] "
           "reshape { shape: [ -1, 2, -1 ] }"),
     0, IFD_EINVAL,
     "model input 'I' has different number of variable-size "
     "dimensions for dims and reshape"},
    {"reshape_variable_runs",
     MB OUT("name: \"O\" data_type: TYPE_FP32 dims: [ 2, 4, -1, 6 ] "
            "reshape { shape: [ 4, -1, 12 ] }"),
     0, IFD_EINVAL, "model output 'O' has different size for dims and reshape"},
    {"image_format",
     MB IN("name: \"I\" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [3, 4]"),
     0, IFD_EINVAL, "model input NHWC/NCHW require 3 dims for m"},
    {"shape_tensor",
     MB OUT("name: \"O\" data_type: TYPE_INT32 dims: [ 2 ] "
            "is_shape_tensor: true"),
     0, IFD_EINVAL, "shape tensors are only supported for TensorRT platform"},
    {"non_linear_io",
     MB IN("name: \"I\" data_type: TYPE_FP32 dims: [ 3, 4, 5 ] "
           "is_non_linear_format_io: true"),
     0, IFD_EINVAL,
     "Non-linear IO format is only supported for the TensorRT "
     "platform"},
    {"non_linear_io_dims",
     "name: \"m\" platform: \"tensorrt_plan\" " IN(
         "name: \"I\" data_type: TYPE_FP32 dims: [ 3, 4 ] "
         "is_non_linear_format_io: true"),
     0, IFD_EINVAL, "Non-linear IO format input requires 3 dims"},
    {"input_unique",
     MB "input [ { name: \"I\" data_type: TYPE_FP32 dims: [ 1 ] }, "
        "{ name: \"I\" data_type: TYPE_INT32 dims: [ 1 ] } ]",
     0, IFD_EINVAL, "model input 'I' is specified more than once for m"},
    {"output_unique",
     MB "output [ { name: \"O\" data_type: TYPE_FP32 dims: [ 1 ] }, "
        "{ name: \"O\" data_type: TYPE_INT32 dims: [ 1 ] } ]",
     0, IFD_EINVAL, "model output 'O' is specified more than once for m"},
    {"batch_input_sources",
     MB IO "batch_input [ { kind: BATCH_ELEMENT_COUNT target_name: \"N\" "
           "data_type: TYPE_INT32 } ]",
     0, IFD_EINVAL,
     "batch input kind 'BATCH_ELEMENT_COUNT' expects 1 source input, got 0"},
    {"batch_input_type",
     MB IO "batch_input [ { kind: BATCH_ITEM_SHAPE target_name: \"N\" "
           "data_type: TYPE_INT64 source_input: \"I\" } ]",
     0, IFD_EINVAL, "batch input data type must be TYPE_INT32 or TYPE_FP32"},
    {"batch_input_source_name",
     MB IO "batch_input [ { target_name: \"N\" data_type: TYPE_FP32 "
           "source_input: \"X\" } ]",
     0, IFD_EINVAL, "unknown source input name 'X'"},
    {"batch_output_target",
     MB IO "batch_output [ { target_name: \"Z\" source_input: \"I\" } ]", 0,
     IFD_EINVAL, "unknown target output name 'Z'"},
    {"batch_output_target_once",
     MB IO "batch_output [ { target_name: [ \"O\", \"O\" ] "
           "source_input: \"I\" } ]",
     0, IFD_EINVAL, "target output name 'O' can only be specified once"},
    {"batch_output_sources", MB IO "batch_output [ { target_name: \"O\" } ]", 0,
     IFD_EINVAL,
     "batch output kind 'BATCH_SCATTER_WITH_INPUT_SHAPE' expects 1 source "
     "input, got 0"},
};

static void test_bad_case(void **state) {
  const bad_case_t *c = *state;
  ifd_config_opts_t opts = {0, c->gpu_count, NULL, 0, 0, 0, NULL};
  ifd_model_config_t *cfg = NULL;
  ifd_errmsg_t err;
  int rc;

  /* The "name" row leaves the model name out on purpose. */
  int anonymous = strcmp(c->rule, "name") == 0;
  ifd_errclear(&err);
  rc = ifd_config_parse(c->text, strlen(c->text), "test.pbtxt",
                        anonymous ? NULL : "m", &cfg, &err);
  if (rc != 0) fail_msg("[%s] parse failed: %s", c->rule, err.text);
  rc = ifd_config_normalize(cfg, &opts, &err);
  assert_int_equal(rc, 0);
  rc = ifd_config_validate(cfg, &opts, &err);
  ifd_config_free(cfg);
  if (rc != c->code || err.code != c->code || strstr(err.text, c->msg) == NULL)
    fail_msg(
        "[%s] rc %d (want %d), message:\n  %s\nwanted it to contain:\n  "
        "%s",
        c->rule, rc, c->code, err.text, c->msg);
}

/* ---- JSON and parameters ---- */

static void test_json_new_fields(void **state) {
  ifd_errmsg_t err;
  (void)state;
  ifd_model_config_t *cfg = parse_ok(
      "name: \"m\" platform: \"tensorrt_plan\" "
      "input [ { name: \"I\" data_type: TYPE_FP32 dims: [ 3, 4, 5 ] "
      "is_non_linear_format_io: true }, "
      "{ name: \"J\" data_type: TYPE_FP32 dims: [ 1 ] } ]",
      "m");
  assert_int_equal(ifd_config_normalize(cfg, &cpu_opts, &err), 0);
  assert_int_equal(ifd_config_validate(cfg, &cpu_opts, &err), 0);
  json_t *j = ifd_config_to_json(cfg);
  json_t *in = json_object_get(j, "input");
  assert_true(json_is_true(
      json_object_get(json_array_get(in, 0), "is_non_linear_format_io")));
  assert_null(
      json_object_get(json_array_get(in, 1), "is_non_linear_format_io"));
  assert_string_equal(json_string_value(json_object_get(j, "backend")),
                      "tensorrt");
  json_decref(j);
  ifd_config_free(cfg);
}

/* Keys of `obj` in iteration order, comma-separated, into buf. */
static const char *keys_of(json_t *obj, char *buf, size_t size) {
  const char *k;
  json_t *v;
  size_t len = 0;
  buf[0] = '\0';
  json_object_foreach(obj, k, v) {
    len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "," : "", k);
    if (len >= size) break;
  }
  return buf;
}

static void test_json_order(void **state) {
  char buf[512];
  ifd_errmsg_t err;
  (void)state;
  ifd_model_config_t *cfg = parse_ok(
      BASE
      "sequence_batching { control_input [ { name: \"S\" control [ { "
      "kind: CONTROL_SEQUENCE_START bool_false_true: [ false, true ] } ] "
      "} ] direct { } }",
      "m");
  assert_int_equal(ifd_config_normalize(cfg, &cpu_opts, &err), 0);
  json_t *j = ifd_config_to_json(cfg);
  json_t *sb = json_object_get(j, "sequence_batching");
  assert_string_equal(keys_of(sb, buf, sizeof(buf)),
                      "direct,max_sequence_idle_microseconds,control_input,"
                      "state,iterative_sequence");
  json_t *c = json_array_get(
      json_object_get(json_array_get(json_object_get(sb, "control_input"), 0),
                      "control"),
      0);
  assert_string_equal(keys_of(c, buf, sizeof(buf)),
                      "kind,int32_false_true,fp32_false_true,bool_false_true,"
                      "data_type");
  json_decref(j);
  ifd_config_free(cfg);
}

static void test_from_json_errors(void **state) {
  ifd_model_config_t *cfg = (void *)0x1;
  ifd_errmsg_t err;
  (void)state;
  json_t *j = json_pack("{s:s, s:i}", "name", "m", "no_such_field", 1);
  ifd_errclear(&err);
  assert_int_equal(ifd_config_from_json(j, &cfg, &err), IFD_EINVAL);
  assert_int_equal(err.code, IFD_EINVAL);
  assert_null(cfg);
  json_decref(j);

  j = json_pack("{s:s, s:i}", "name", "m", "max_batch_size", 4);
  assert_int_equal(ifd_config_from_json(j, &cfg, &err), 0);
  assert_string_equal(cfg->name, "m");
  assert_int_equal(cfg->max_batch_size, 4);
  ifd_config_free(cfg);
  json_decref(j);
}

static void test_param(void **state) {
  (void)state;
  ifd_model_config_t *cfg = parse_ok(
      "name: \"m\" parameters { key: \"a\" value { string_value: \"1\" } } "
      "parameters { key: \"b\" value { } }",
      "m");
  assert_string_equal(ifd_config_param(cfg, "a"), "1");
  assert_string_equal(ifd_config_param(cfg, "b"), "");
  assert_null(ifd_config_param(cfg, "c"));
  ifd_config_free(cfg);
  ifd_config_free(NULL);
}

int main(void) {
  const struct CMUnitTest fixed[] = {
      cmocka_unit_test_setup_teardown(test_conformance_identity_fp32, tmp_setup,
                                      tmp_teardown),
      cmocka_unit_test_setup_teardown(test_conformance_identity_bytes,
                                      tmp_setup, tmp_teardown),
      cmocka_unit_test_setup_teardown(test_conformance_ensemble, tmp_setup,
                                      tmp_teardown),
      cmocka_unit_test_setup_teardown(test_conformance_composing, tmp_setup,
                                      tmp_teardown),
      cmocka_unit_test_setup_teardown(test_conformance_batched, tmp_setup,
                                      tmp_teardown),
      cmocka_unit_test(test_name_filled),
      cmocka_unit_test(test_name_mismatch),
      cmocka_unit_test_setup_teardown(test_prepare_validates_before_name,
                                      tmp_setup, tmp_teardown),
      cmocka_unit_test_setup_teardown(test_parse_error_names_file, tmp_setup,
                                      tmp_teardown),
      cmocka_unit_test_setup_teardown(test_custom_config_name, tmp_setup,
                                      tmp_teardown),
      cmocka_unit_test_setup_teardown(test_missing_file_strict, tmp_setup,
                                      tmp_teardown),
      cmocka_unit_test_setup_teardown(test_missing_file_autofill, tmp_setup,
                                      tmp_teardown),
      cmocka_unit_test(test_backend_name),
      cmocka_unit_test(test_platform_derives_backend),
      cmocka_unit_test(test_normalize_gpu),
      cmocka_unit_test(test_normalize_gpu_below_min_cc),
      cmocka_unit_test(test_prefer_groups),
      cmocka_unit_test(test_normalize_batchers),
      cmocka_unit_test(test_ensemble_ok),
      cmocka_unit_test(test_ensemble_unreachable_output),
      cmocka_unit_test(test_valid_shapes),
      cmocka_unit_test(test_json_new_fields),
      cmocka_unit_test(test_json_order),
      cmocka_unit_test(test_from_json_errors),
      cmocka_unit_test(test_param),
  };
  enum { N_FIXED = sizeof(fixed) / sizeof(fixed[0]) };
  enum { N_BAD = sizeof(bad_cases) / sizeof(bad_cases[0]) };
  struct CMUnitTest tests[N_FIXED + N_BAD];
  char names[N_BAD][64];

  memcpy(tests, fixed, sizeof(fixed));
  for (size_t i = 0; i < N_BAD; i++) {
    snprintf(names[i], sizeof(names[i]), "invalid_%s", bad_cases[i].rule);
    tests[N_FIXED + i] = (struct CMUnitTest){
        .name = names[i],
        .test_func = test_bad_case,
        .initial_state = (void *)&bad_cases[i],
    };
  }
  return _cmocka_run_group_tests("config", tests, N_FIXED + N_BAD, NULL, NULL);
}
