/*
 * test/unit/test_ensemble_check.c - an ensemble against its composing models.
 *
 * Each test builds a small registry of configs parsed from pbtxt text (the
 * models of Triton's qa/L0_model_config ensemble cases: fp32_dim1_batch4 and
 * friends), normalized and validated as the server does, and checks one rule
 * of ifd_ensemble_check or ifd_ensemble_find_cycle: the code and Triton
 * 2.47's whole message, or acceptance where Triton accepts.
 */
/* cmocka.h needs setjmp.h, stdarg.h and stddef.h before it. */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/ensemble_check.h"

/* ---- a registry of configs ---- */

#define MAX_MODELS 16

typedef struct entry {
  ifd_model_config_t *cfg; /* owned */
  int64_t versions[4];     /* the READY versions */
  size_t n_versions;
} entry_t;

typedef struct reg {
  entry_t e[MAX_MODELS];
  size_t n;
} reg_t;

static const ifd_config_opts_t cpu_opts = {0, 0, NULL, 0, 0, 0, NULL};

/* Parses, normalizes and validates `text`; fails the test on an error. */
static ifd_model_config_t *load(const char *text) {
  ifd_model_config_t *cfg = NULL;
  ifd_errmsg_t err;
  ifd_errclear(&err);
  int rc = ifd_config_parse(text, strlen(text), "test.pbtxt", NULL, &cfg, &err);
  if (rc == 0) rc = ifd_config_normalize(cfg, &cpu_opts, &err);
  if (rc == 0) rc = ifd_config_validate(cfg, &cpu_opts, &err);
  if (rc != 0) fail_msg("config refused (%d): %s\n%s", rc, err.text, text);
  return cfg;
}

/* Adds a model READY at version 1. */
static ifd_model_config_t *put(reg_t *r, const char *text) {
  assert_true(r->n < MAX_MODELS);
  entry_t *e = &r->e[r->n++];
  e->cfg = load(text);
  e->versions[0] = 1;
  e->n_versions = 1;
  return e->cfg;
}

static entry_t *entry(reg_t *r, const char *name) {
  for (size_t i = 0; i < r->n; i++)
    if (strcmp(r->e[i].cfg->name, name) == 0) return &r->e[i];
  return NULL;
}

static void reg_free(reg_t *r) {
  for (size_t i = 0; i < r->n; i++) ifd_config_free(r->e[i].cfg);
  r->n = 0;
}

static ifd_ens_status_t lookup(void *arg, const char *name, int64_t version,
                               const ifd_model_config_t **cfg) {
  entry_t *e = entry(arg, name);
  *cfg = NULL;
  if (e == NULL || e->n_versions == 0) return IFD_ENS_MISSING;
  for (size_t i = 0; i < e->n_versions; i++) {
    if (version == -1 || e->versions[i] == version) {
      *cfg = e->cfg;
      return IFD_ENS_READY;
    }
  }
  return IFD_ENS_NO_VERSION;
}

/* Every model's config, ensembles or not: ifd_ensemble_find_cycle must look
 * at the scheduling choice itself (dynamic_batching shares the pointer of
 * ensemble_scheduling). */
static const ifd_model_config_t *config_of(void *arg, const char *name) {
  entry_t *e = entry(arg, name);
  return e != NULL ? e->cfg : NULL;
}

/* Checks `ens` (in the registry) and expects `want` as the whole message, or
 * success when `want` is NULL. */
static void expect(reg_t *r, const char *ens, const char *want) {
  ifd_errmsg_t err;
  ifd_errclear(&err);
  entry_t *e = entry(r, ens);
  assert_non_null(e);
  int rc = ifd_ensemble_check(e->cfg, lookup, r, &err);
  if (want == NULL) {
    if (rc != 0) fail_msg("refused (%d): %s", rc, err.text);
    return;
  }
  assert_int_equal(rc, IFD_EINVAL);
  if (strcmp(err.text, want) != 0)
    fail_msg("message\n got: %s\nwant: %s", err.text, want);
}

/* ---- the models ---- */

/* The texts are laid out by hand, one step per line: clang-format would
 * split the string literals where they read worst. */
/* clang-format off */
#define TENSOR(n, t, d) "{ name: \"" n "\" data_type: " t " dims: [ " d " ] }"
#define F16(n) TENSOR(n, "TYPE_FP32", "16")
#define IDENTITY(name, mbs, t, d)                                            \
  "name: \"" name "\" backend: \"identity\" max_batch_size: " mbs            \
  " input [ " TENSOR("INPUT0", t, d) " ]"                                    \
  " output [ " TENSOR("OUTPUT0", t, d) " ]"                                  \
  " instance_group [ { kind: KIND_CPU } ]"

/* An ensemble `name` batching `mbs`, with FP32 [16] input "data" and output
 * "prob", running `steps`. */
#define ENSEMBLE(name, mbs, steps)                                           \
  "name: \"" name "\" platform: \"ensemble\" max_batch_size: " mbs           \
  " input [ " F16("data") " ] output [ " F16("prob") " ]"                    \
  " ensemble_scheduling { step [ " steps " ] }"
#define STEPV(model, v, maps) "{ model_name: \"" model "\" model_version: " v " " maps " }"
#define STEP(model, maps) STEPV(model, "-1", maps)
#define IN(k, v) "input_map { key: \"" k "\" value: \"" v "\" } "
#define OUT(k, v) "output_map { key: \"" k "\" value: \"" v "\" } "
/* data -> fp32_dim1_batch4 -> temp_tensor -> `second` -> prob */
#define CHAIN(name, mbs, second)                                             \
  ENSEMBLE(name, mbs,                                                        \
    STEP("fp32_dim1_batch4", IN("INPUT0", "data") OUT("OUTPUT0", "temp_tensor")) ", " \
    STEP(second, IN("INPUT0", "temp_tensor") OUT("OUTPUT0", "prob")))
#define ONE_STEP(name, model)                                                \
  ENSEMBLE(name, "2", STEP(model, IN("data", "data") OUT("prob", "prob")))

static const char *const fp32_dim1_batch4 = IDENTITY("fp32_dim1_batch4", "4", "TYPE_FP32", "16");
static const char *const fp32_dim1_batch2 = IDENTITY("fp32_dim1_batch2", "2", "TYPE_FP32", "16");
static const char *const int32_dim1_batch4 = IDENTITY("int32_dim1_batch4", "4", "TYPE_INT32", "16");
static const char *const fp32_dim3_batch4 = IDENTITY("fp32_dim3_batch4", "4", "TYPE_FP32", "16, 16, 16");
static const char *const fp32_dim2_nobatch = IDENTITY("fp32_dim2_nobatch", "0", "TYPE_FP32", "-1, 16");
static const char *const fp32_dim1_batch4_input4 =
    "name: \"fp32_dim1_batch4_input4\" backend: \"identity\" max_batch_size: 4"
    " input [ " F16("INPUT0") "," F16("INPUT1") "," F16("INPUT2") "," F16("INPUT3") " ]"
    " output [ " F16("OUTPUT0") "," F16("OUTPUT1") "," F16("OUTPUT2") "," F16("OUTPUT3") " ]";
static const char *const fp32_dim1_batch4_output3 =
    "name: \"fp32_dim1_batch4_output3\" backend: \"identity\" max_batch_size: 4"
    " input [ " F16("INPUT0") "," F16("INPUT1") "," F16("INPUT2") " ]"
    " output [ " F16("OUTPUT0") "," F16("OUTPUT1") "," F16("OUTPUT2") " ]";
static const char *const dyn_identity =
    "name: \"dyn\" backend: \"identity\" max_batch_size: 8"
    " input [ " F16("INPUT0") " ] output [ " F16("OUTPUT0") " ]"
    " dynamic_batching { max_queue_delay_microseconds: 100 }";
/* A model with an optional second input. */
static const char *const opt_input =
    "name: \"opt\" backend: \"identity\" max_batch_size: 4"
    " input [ " F16("INPUT0") ", { name: \"EXTRA\" data_type: TYPE_FP32 dims: [ 16 ] optional: true } ]"
    " output [ " F16("OUTPUT0") " ]";
static const char *const decoupled =
    "name: \"dec\" backend: \"identity\" max_batch_size: 4"
    " input [ " F16("INPUT0") " ] output [ " F16("OUTPUT0") " ]"
    " model_transaction_policy { decoupled: true }";

static const char *const inner_ensemble = ENSEMBLE("inner_ensemble", "2",
    STEP("fp32_dim1_batch4", IN("INPUT0", "data") OUT("OUTPUT0", "prob")));
static const char *const embedded_ensemble = ENSEMBLE("embedded_ensemble", "2",
    STEP("inner_ensemble", IN("data", "data") OUT("prob", "prob")));
static const char *const outer4 = ENSEMBLE("outer4", "4",
    STEP("inner_ensemble", IN("data", "data") OUT("prob", "prob")));
static const char *const outer_bad = ENSEMBLE("outer_bad", "2",
    STEP("inner_ensemble", IN("INPUT0", "data") OUT("prob", "prob")));

static const char *const non_existing_model = ENSEMBLE("non_existing_model", "2",
    STEP("fp32_dim1_batch4", IN("INPUT0", "data") OUT("OUTPUT0", "t1")) ", "
    STEP("nope_a", IN("INPUT0", "t1") OUT("OUTPUT0", "t2")) ", "
    STEP("nope_b", IN("INPUT0", "t2") OUT("OUTPUT0", "prob")));
static const char *const missing_after_version = ENSEMBLE("ens", "4",
    STEPV("fp32_dim1_batch4", "3", IN("INPUT0", "data") OUT("OUTPUT0", "t")) ", "
    STEP("gone", IN("INPUT0", "t") OUT("OUTPUT0", "prob")));

static const char *const no_required_version = ENSEMBLE("no_required_version", "4",
    STEPV("fp32_dim1_batch4", "2", IN("INPUT0", "data") OUT("OUTPUT0", "prob")));
static const char *const no_required_version_2 = ENSEMBLE("no_required_version_2", "4",
    STEP("fp32_dim1_batch4", IN("INPUT0", "data") OUT("OUTPUT0", "t")) ", "
    STEPV("fp32_dim1_batch4", "2", IN("INPUT0", "t") OUT("OUTPUT0", "prob")));
static const char *const required_v1 = ENSEMBLE("v1", "4",
    STEPV("fp32_dim1_batch4", "1", IN("INPUT0", "data") OUT("OUTPUT0", "prob")));

static const char *const invalid_input_map = ENSEMBLE("invalid_input_map", "2",
    STEP("fp32_dim1_batch4", IN("INPUT0", "data") IN("invalid_input", "data") OUT("OUTPUT0", "prob")));
static const char *const unmapped_input = ENSEMBLE("unmapped_input", "2",
    STEP("fp32_dim1_batch4_output3",
         IN("INPUT0", "data") IN("INPUT1", "data") IN("INPUT2", "data")
         OUT("OUTPUT0", "t2") OUT("OUTPUT1", "t3") OUT("OUTPUT2", "t4")) ", "
    STEP("fp32_dim1_batch4_input4",
         IN("INPUT1", "t2") IN("INPUT2", "t3") IN("INPUT3", "t4") OUT("OUTPUT0", "prob")));
static const char *const invalid_output_map = ENSEMBLE("invalid_output_map", "2",
    STEP("fp32_dim1_batch4_output3",
         IN("INPUT0", "data") IN("INPUT1", "data") IN("INPUT2", "data")
         OUT("OUTPUT0", "t1") OUT("invalid_output", "t2")) ", "
    STEP("fp32_dim1_batch4_output3",
         IN("INPUT0", "t1") IN("INPUT1", "t2") IN("INPUT2", "t1") OUT("OUTPUT0", "prob")));
static const char *const unmapped_output = ENSEMBLE("unmapped_output", "2",
    STEP("fp32_dim1_batch4_output3",
         IN("INPUT0", "data") IN("INPUT1", "data") IN("INPUT2", "data") OUT("OUTPUT0", "prob")));

static const char *const inconsistent_data_type = ENSEMBLE("inconsistent_data_type", "2",
    STEP("int32_dim1_batch4", IN("INPUT0", "data") OUT("OUTPUT0", "temp_tensor")) ", "
    STEP("fp32_dim1_batch2", IN("INPUT0", "temp_tensor") OUT("OUTPUT0", "prob")));
static const char *const inconsistent_shape_2 =
    "name: \"inconsistent_shape_2\" platform: \"ensemble\" max_batch_size: 0"
    " input [ " TENSOR("data", "TYPE_FP32", "4, 16") " ]"
    " output [ " TENSOR("prob", "TYPE_FP32", "4, 16") " ]"
    " ensemble_scheduling { step [ "
    STEP("fp32_dim2_nobatch", IN("INPUT0", "data") OUT("OUTPUT0", "temp_tensor")) ", "
    STEP("fp32_dim1_batch4", IN("INPUT0", "temp_tensor") OUT("OUTPUT0", "prob")) " ] }";
static const char *const reshape_ok =
    "name: \"ens\" platform: \"ensemble\" max_batch_size: 4"
    " input [ { name: \"data\" data_type: TYPE_FP32 dims: [ 4, 4 ] reshape { shape: [ 16 ] } } ]"
    " output [ " F16("prob") " ]"
    " ensemble_scheduling { step [ "
    STEP("fp32_dim1_batch4", IN("INPUT0", "data") OUT("OUTPUT0", "prob")) " ] }";
static const char *const reshape_bad =
    "name: \"ens2\" platform: \"ensemble\" max_batch_size: 4"
    " input [ { name: \"data\" data_type: TYPE_FP32 dims: [ 16 ] reshape { shape: [ 4, 4 ] } } ]"
    " output [ " F16("prob") " ]"
    " ensemble_scheduling { step [ "
    STEP("fp32_dim1_batch4", IN("INPUT0", "data") OUT("OUTPUT0", "prob")) " ] }";
static const char *const decoupled_fan_in = ENSEMBLE("fan_in", "4",
    STEP("dec", IN("INPUT0", "data") OUT("OUTPUT0", "a")) ", "
    STEP("dec", IN("INPUT0", "data") OUT("OUTPUT0", "b")) ", "
    STEP("fp32_dim1_batch4_input4",
         IN("INPUT0", "a") IN("INPUT1", "b") IN("INPUT2", "data") IN("INPUT3", "a")
         OUT("OUTPUT0", "mix")) ", "
    STEP("fp32_dim1_batch4", IN("INPUT0", "mix") OUT("OUTPUT0", "prob")));

static const char *const self_circular_dependency = ENSEMBLE("self_circular_dependency", "2",
    STEP("fp32_dim1_batch4", IN("INPUT0", "data") OUT("OUTPUT0", "t")) ", "
    STEP("self_circular_dependency", IN("data", "t") OUT("prob", "prob")));
static const char *const diamond_top = ENSEMBLE("top", "2",
    STEP("l", IN("data", "data") OUT("prob", "p1")) ", "
    STEP("rr", IN("data", "p1") OUT("prob", "prob")));
static const char *const diamond_bottom = ENSEMBLE("bottom", "2",
    STEP("fp32_dim1_batch4", IN("INPUT0", "data") OUT("OUTPUT0", "prob")));
/* clang-format on */

/* ---- tests: acceptance ---- */

static void test_two_steps_ok(void **state) {
  (void)state;
  reg_t r = {0};
  put(&r, fp32_dim1_batch4);
  const ifd_model_config_t *ens =
      put(&r, CHAIN("ens", "4", "fp32_dim1_batch4"));
  expect(&r, "ens", NULL);
  assert_int_equal(ifd_ensemble_decoupled(ens, lookup, &r), 0);
  reg_free(&r);
}

static void test_not_an_ensemble(void **state) {
  (void)state;
  reg_t r = {0};
  put(&r, fp32_dim1_batch4);
  expect(&r, "fp32_dim1_batch4", NULL);
  reg_free(&r);
}

/* autofill_noplatform_success/ensemble/embedded_ensemble: a step that is an
 * ensemble is checked against that ensemble's config. */
static void test_nested_ensemble(void **state) {
  (void)state;
  reg_t r = {0};
  put(&r, fp32_dim1_batch4);
  put(&r, inner_ensemble);
  put(&r, embedded_ensemble);
  put(&r, outer4);
  put(&r, outer_bad);
  expect(&r, "embedded_ensemble", NULL);
  expect(&r, "outer4",
         "ensemble outer4 allows maximum batch size 4, but it contains model "
         "inner_ensemble which only allows maximum batch size to be 2");
  expect(&r, "outer_bad",
         "in ensemble outer_bad, ensemble tensor data is mapping to "
         "non-existing input INPUT0 in model inner_ensemble");
  reg_free(&r);
}

/* ---- tests: the dependency graph ---- */

/* autofill_noplatform/ensemble/non_existing_model: the first step model that
 * does not exist is named; a model with no READY version is as missing. */
static void test_missing_model(void **state) {
  (void)state;
  reg_t r = {0};
  put(&r, fp32_dim1_batch4);
  put(&r, non_existing_model);
  expect(&r, "non_existing_model",
         "ensemble non_existing_model contains models that are not available "
         "or ambiguous: nope_a");
  put(&r, fp32_dim1_batch2);
  entry(&r, "fp32_dim1_batch2")->n_versions = 0;
  put(&r, CHAIN("ens", "2", "fp32_dim1_batch2"));
  expect(&r, "ens",
         "ensemble ens contains models that are not available or ambiguous: "
         "fp32_dim1_batch2");
  reg_free(&r);
}

/* autofill_noplatform/ensemble/no_required_version{,_2}: a version other than
 * -1 must be loaded, whichever step asks for it. */
static void test_required_version(void **state) {
  (void)state;
  reg_t r = {0};
  put(&r, fp32_dim1_batch4);
  put(&r, no_required_version);
  put(&r, no_required_version_2);
  put(&r, required_v1);
  expect(&r, "no_required_version",
         "ensemble 'no_required_version' depends on 'fp32_dim1_batch4' whose "
         "required version 2 is not loaded.");
  expect(&r, "no_required_version_2",
         "ensemble 'no_required_version_2' depends on 'fp32_dim1_batch4' "
         "whose required version 2 is not loaded.");
  expect(&r, "v1", NULL);
  entry(&r, "fp32_dim1_batch4")->versions[1] = 2;
  entry(&r, "fp32_dim1_batch4")->n_versions = 2;
  expect(&r, "no_required_version_2", NULL);
  reg_free(&r);
}

/* Triton connects the graph before it looks at versions: a missing model in
 * a later step wins over a missing version in an earlier one. */
static void test_missing_before_version(void **state) {
  (void)state;
  reg_t r = {0};
  put(&r, fp32_dim1_batch4);
  put(&r, missing_after_version);
  expect(&r, "ens",
         "ensemble ens contains models that are not available or ambiguous: "
         "gone");
  reg_free(&r);
}

/* ---- tests: ValidateEnsembleConfig ---- */

/* autofill_noplatform/ensemble/invalid_batch_size; a composing model that
 * does not batch is accepted in a batching ensemble. */
static void test_max_batch_size(void **state) {
  (void)state;
  reg_t r = {0};
  put(&r, fp32_dim1_batch4);
  put(&r, fp32_dim1_batch2);
  put(&r, fp32_dim2_nobatch);
  put(&r, CHAIN("invalid_batch_size", "3", "fp32_dim1_batch2"));
  put(&r, CHAIN("two", "2", "fp32_dim1_batch2"));
  put(&r, CHAIN("nobatch", "4", "fp32_dim2_nobatch"));
  expect(&r, "invalid_batch_size",
         "ensemble invalid_batch_size allows maximum batch size 3, but it "
         "contains model fp32_dim1_batch2 which only allows maximum batch "
         "size to be 2");
  expect(&r, "two", NULL);
  expect(&r, "nobatch", NULL);
  reg_free(&r);
}

/* autofill_noplatform/ensemble/invalid_input_map */
static void test_invalid_input_map(void **state) {
  (void)state;
  reg_t r = {0};
  put(&r, fp32_dim1_batch4);
  put(&r, invalid_input_map);
  expect(&r, "invalid_input_map",
         "in ensemble invalid_input_map, ensemble tensor data is mapping to "
         "non-existing input invalid_input in model fp32_dim1_batch4");
  reg_free(&r);
}

/* autofill_noplatform/ensemble/unmapped_input; an optional input may stay
 * unmapped. */
static void test_unmapped_input(void **state) {
  (void)state;
  reg_t r = {0};
  put(&r, fp32_dim1_batch4);
  put(&r, fp32_dim1_batch4_output3);
  put(&r, fp32_dim1_batch4_input4);
  put(&r, unmapped_input);
  put(&r, opt_input);
  put(&r, CHAIN("ens_opt", "4", "opt"));
  expect(&r, "unmapped_input",
         "in ensemble unmapped_input, input INPUT0 in model "
         "fp32_dim1_batch4_input4 is not mapped to any ensemble tensors");
  expect(&r, "ens_opt", NULL);
  reg_free(&r);
}

/* autofill_noplatform/ensemble/invalid_output_map; outputs need not all be
 * mapped (autofill_noplatform_success/ensemble/unmapped_output). */
static void test_output_map(void **state) {
  (void)state;
  reg_t r = {0};
  put(&r, fp32_dim1_batch4_output3);
  put(&r, invalid_output_map);
  put(&r, unmapped_output);
  expect(&r, "invalid_output_map",
         "in ensemble invalid_output_map, ensemble tensor t2 is mapped from "
         "non-existing output invalid_output in model "
         "fp32_dim1_batch4_output3");
  expect(&r, "unmapped_output", NULL);
  reg_free(&r);
}

/* autofill_noplatform/ensemble/inconsistent_data_type: the ensemble input
 * meets the first step's input. */
static void test_data_type(void **state) {
  (void)state;
  reg_t r = {0};
  put(&r, int32_dim1_batch4);
  put(&r, fp32_dim1_batch2);
  put(&r, inconsistent_data_type);
  expect(&r, "inconsistent_data_type",
         "in ensemble inconsistent_data_type, ensemble tensor data: "
         "inconsistent data type: TYPE_FP32 is inferred from model "
         "inconsistent_data_type while TYPE_INT32 is inferred from model "
         "int32_dim1_batch4");
  reg_free(&r);
}

/* autofill_noplatform/ensemble/inconsistent_shape: a tensor between steps. */
static void test_shape(void **state) {
  (void)state;
  reg_t r = {0};
  put(&r, fp32_dim1_batch4);
  put(&r, fp32_dim3_batch4);
  put(&r, CHAIN("inconsistent_shape", "2", "fp32_dim3_batch4"));
  expect(&r, "inconsistent_shape",
         "in ensemble inconsistent_shape, ensemble tensor temp_tensor: "
         "inconsistent shape: [-1,16] is inferred from model fp32_dim1_batch4 "
         "while [-1,16,16,16] is inferred from model fp32_dim3_batch4");
  reg_free(&r);
}

/* autofill_noplatform_success/ensemble/inconsistent_shape{,_2}: a batching
 * model's [16] meets a non-batching model's [-1,16], both ways round, and a
 * non-batching ensemble's [4,16] meets both, as does a non-batching
 * ensemble's [16] a batching model's [16]. */
static void test_shape_with_batch_dim(void **state) {
  (void)state;
  reg_t r = {0};
  put(&r, fp32_dim1_batch4);
  put(&r, fp32_dim2_nobatch);
  put(&r, CHAIN("inconsistent_shape", "2", "fp32_dim2_nobatch"));
  put(&r, inconsistent_shape_2);
  put(&r, CHAIN("nobatch16", "0", "fp32_dim1_batch4"));
  put(&r, CHAIN("nobatch_dim3", "0", "fp32_dim3_batch4"));
  put(&r, fp32_dim3_batch4);
  expect(&r, "inconsistent_shape", NULL);
  expect(&r, "inconsistent_shape_2", NULL);
  expect(&r, "nobatch16", NULL);
  expect(&r, "nobatch_dim3",
         "in ensemble nobatch_dim3, ensemble tensor temp_tensor: inconsistent "
         "shape: [-1,16] is inferred from model fp32_dim1_batch4 while "
         "[-1,16,16,16] is inferred from model fp32_dim3_batch4");
  reg_free(&r);
}

/* An ensemble input is seen through its reshape. */
static void test_reshape(void **state) {
  (void)state;
  reg_t r = {0};
  put(&r, fp32_dim1_batch4);
  put(&r, reshape_ok);
  put(&r, reshape_bad);
  expect(&r, "ens", NULL);
  expect(&r, "ens2",
         "in ensemble ens2, ensemble tensor data: inconsistent shape: "
         "[-1,4,4] is inferred from model ens2 while [-1,16] is inferred from "
         "model fp32_dim1_batch4");
  reg_free(&r);
}

/* A decoupled step makes the ensemble decoupled; a step fed by two different
 * decoupled models is refused. */
static void test_decoupled(void **state) {
  (void)state;
  reg_t r = {0};
  put(&r, fp32_dim1_batch4);
  put(&r, fp32_dim1_batch4_input4);
  put(&r, decoupled);
  const ifd_model_config_t *ens = put(&r, CHAIN("ens", "4", "dec"));
  put(&r, decoupled_fan_in);
  expect(&r, "ens", NULL);
  assert_int_equal(ifd_ensemble_decoupled(ens, lookup, &r), 1);
  /* Triton names the model the step's first output was first seen in. */
  expect(&r, "fan_in",
         "in ensemble fan_in, step of model 'fp32_dim1_batch4_input4' "
         "receives inputs originated from different decoupled models");
  reg_free(&r);
}

/* ---- tests: cycles ---- */

static void expect_cycle(reg_t *r, const char *ens, const char *want) {
  ifd_errmsg_t err;
  ifd_errclear(&err);
  int rc = ifd_ensemble_find_cycle(entry(r, ens)->cfg, config_of, r, &err);
  if (want == NULL) {
    if (rc != 0) fail_msg("cycle found (%d): %s", rc, err.text);
    return;
  }
  assert_int_equal(rc, IFD_EINVAL);
  if (strcmp(err.text, want) != 0)
    fail_msg("message\n got: %s\nwant: %s", err.text, want);
}

/* autofill_noplatform/ensemble/circular_dependency */
static void test_cycle_two(void **state) {
  (void)state;
  reg_t r = {0};
  put(&r, ONE_STEP("circular_dependency", "circular_dependency_2"));
  put(&r, ONE_STEP("circular_dependency_2", "circular_dependency"));
  expect_cycle(&r, "circular_dependency",
               "circular dependency between ensembles: circular_dependency -> "
               "... -> circular_dependency_2 -> circular_dependency");
  expect_cycle(&r, "circular_dependency_2",
               "circular dependency between ensembles: circular_dependency_2 "
               "-> ... -> circular_dependency -> circular_dependency_2");
  reg_free(&r);
}

/* autofill_noplatform/ensemble/self_circular_dependency */
static void test_cycle_self(void **state) {
  (void)state;
  reg_t r = {0};
  put(&r, fp32_dim1_batch4);
  put(&r, self_circular_dependency);
  expect_cycle(&r, "self_circular_dependency",
               "circular dependency between ensembles: "
               "self_circular_dependency -> ... -> self_circular_dependency "
               "-> self_circular_dependency");
  reg_free(&r);
}

/* A longer cycle names the ensemble that closes it; a cycle that does not
 * pass through the start is not reported for it (and the walk ends); a
 * diamond of ensembles is no cycle; a model with dynamic_batching (which
 * shares its pointer with ensemble_scheduling) is no ensemble. */
static void test_cycle_paths(void **state) {
  (void)state;
  reg_t r = {0};
  put(&r, fp32_dim1_batch4);
  put(&r, ONE_STEP("a", "b"));
  put(&r, ONE_STEP("b", "c"));
  put(&r, ONE_STEP("c", "a"));
  put(&r, ONE_STEP("x", "y"));
  put(&r, ONE_STEP("y", "z"));
  put(&r, ONE_STEP("z", "y"));
  put(&r, diamond_top);
  put(&r, ONE_STEP("l", "bottom"));
  put(&r, ONE_STEP("rr", "bottom"));
  put(&r, diamond_bottom);
  put(&r, dyn_identity);
  put(&r, CHAIN("ens_dyn", "4", "dyn"));
  expect_cycle(&r, "a",
               "circular dependency between ensembles: a -> ... -> c -> a");
  expect_cycle(&r, "x", NULL);
  expect_cycle(&r, "y",
               "circular dependency between ensembles: y -> ... -> z -> y");
  expect_cycle(&r, "top", NULL);
  expect_cycle(&r, "fp32_dim1_batch4", NULL);
  expect_cycle(&r, "dyn", NULL);
  expect_cycle(&r, "ens_dyn", NULL);
  expect(&r, "dyn", NULL);
  expect(&r, "ens_dyn", NULL);
  reg_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_two_steps_ok),
      cmocka_unit_test(test_not_an_ensemble),
      cmocka_unit_test(test_nested_ensemble),
      cmocka_unit_test(test_missing_model),
      cmocka_unit_test(test_required_version),
      cmocka_unit_test(test_missing_before_version),
      cmocka_unit_test(test_max_batch_size),
      cmocka_unit_test(test_invalid_input_map),
      cmocka_unit_test(test_unmapped_input),
      cmocka_unit_test(test_output_map),
      cmocka_unit_test(test_data_type),
      cmocka_unit_test(test_shape),
      cmocka_unit_test(test_shape_with_batch_dim),
      cmocka_unit_test(test_reshape),
      cmocka_unit_test(test_decoupled),
      cmocka_unit_test(test_cycle_two),
      cmocka_unit_test(test_cycle_self),
      cmocka_unit_test(test_cycle_paths),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
