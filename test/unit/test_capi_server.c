/*
 * test/unit/test_capi_server.c - the in-process server as an embedding
 * application sees it: this program links build/lib/libtritonserver.so and
 * uses only tritonserver.h (no core header), as Triton's simple.cc does.
 *
 * Covered: server options (stored, accepted, refused), ServerNew with a
 * missing repository and with a model that fails under exit_on_error,
 * start, stop, stop twice, live and ready before and after, the metadata,
 * config, statistics and index JSON, batch and transaction properties,
 * load, reload with a config parameter, a model given as config and
 * file parameters, unload, a repository registered and unregistered in explicit
 * mode, the refusals of the other modes, poll mode (a model added, one
 * removed), the metrics text, one inference and its statistics, and delete with
 * models loaded. Models come from test/models/capi_repo (the two identity
 * models of examples/model_repository, whose other models need backends this
 * test does not depend on) and test/models/control_repo; the backends from
 * build/backends, found as the library's default backend directory.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <ftw.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "triton/core/tritonserver.h"

#define EXAMPLES "test/models/capi_repo"
#define CONTROL "test/models/control_repo"

/* Asserts success, printing the error otherwise. */
static void ok(TRITONSERVER_Error *e) {
  if (e != NULL) {
    fprintf(stderr, "unexpected error: %s: %s\n",
            TRITONSERVER_ErrorCodeString(e), TRITONSERVER_ErrorMessage(e));
    TRITONSERVER_ErrorDelete(e);
    fail();
  }
}

/* Asserts an error of class `code` whose message holds `text`. */
static void fails(TRITONSERVER_Error *e, TRITONSERVER_Error_Code code,
                  const char *text) {
  assert_non_null(e);
  if (TRITONSERVER_ErrorCode(e) != code ||
      strstr(TRITONSERVER_ErrorMessage(e), text) == NULL) {
    fprintf(stderr, "expected %s \"%s\", got %s \"%s\"\n",
            TRITONSERVER_ErrorCodeString(e), text,
            TRITONSERVER_ErrorCodeString(e), TRITONSERVER_ErrorMessage(e));
    TRITONSERVER_ErrorDelete(e);
    fail();
  }
  TRITONSERVER_ErrorDelete(e);
}

static TRITONSERVER_ServerOptions *options(const char *repo,
                                           TRITONSERVER_ModelControlMode mode) {
  TRITONSERVER_ServerOptions *o = NULL;
  ok(TRITONSERVER_ServerOptionsNew(&o));
  ok(TRITONSERVER_ServerOptionsSetModelRepositoryPath(o, repo));
  ok(TRITONSERVER_ServerOptionsSetModelControlMode(o, mode));
  ok(TRITONSERVER_ServerOptionsSetLogInfo(o, false));
  ok(TRITONSERVER_ServerOptionsSetStrictModelConfig(o, false));
  ok(TRITONSERVER_ServerOptionsSetExitTimeout(o, 5));
  return o;
}

static TRITONSERVER_Server *start(TRITONSERVER_ServerOptions *o) {
  TRITONSERVER_Server *s = NULL;
  ok(TRITONSERVER_ServerNew(&s, o));
  assert_non_null(s);
  ok(TRITONSERVER_ServerOptionsDelete(o));
  return s;
}

/* The JSON text of a message, parsed. */
static json_t *json_of(TRITONSERVER_Message *m) {
  const char *base;
  size_t len;
  json_error_t jerr;
  json_t *j;

  ok(TRITONSERVER_MessageSerializeToJson(m, &base, &len));
  assert_int_equal(base[len], '\0');
  j = json_loadb(base, len, 0, &jerr);
  if (j == NULL)
    fprintf(stderr, "bad JSON (%s): %.*s\n", jerr.text, (int)len, base);
  assert_non_null(j);
  ok(TRITONSERVER_MessageDelete(m));
  return j;
}

static int model_ready(TRITONSERVER_Server *s, const char *name) {
  bool ready = true;
  ok(TRITONSERVER_ServerModelIsReady(s, name, -1, &ready));
  return ready;
}

/* ---- options --------------------------------------------------------------
 */

static void test_options(void **state) {
  TRITONSERVER_ServerOptions *o = NULL;
  TRITONSERVER_Server *s = (TRITONSERVER_Server *)1;
  (void)state;

  ok(TRITONSERVER_ServerOptionsNew(&o));
  fails(TRITONSERVER_ServerNew(&s, o), TRITONSERVER_ERROR_INVALID_ARG,
        "no model repository");
  assert_null(s);
  ok(TRITONSERVER_ServerOptionsSetModelRepositoryPath(o, EXAMPLES));
  ok(TRITONSERVER_ServerOptionsSetStartupModel(o, "identity_fp32"));
  fails(TRITONSERVER_ServerNew(&s, o), TRITONSERVER_ERROR_INVALID_ARG,
        "explicit");
  /* Stored, or accepted without effect. */
  ok(TRITONSERVER_ServerOptionsSetServerId(o, "embedded"));
  ok(TRITONSERVER_ServerOptionsSetStrictReadiness(o, true));
  ok(TRITONSERVER_ServerOptionsSetExitOnError(o, true));
  ok(TRITONSERVER_ServerOptionsSetPinnedMemoryPoolByteSize(o, 1 << 20));
  ok(TRITONSERVER_ServerOptionsSetCudaMemoryPoolByteSize(o, 0, 1 << 20));
  ok(TRITONSERVER_ServerOptionsSetModelLoadThreadCount(o, 2));
  ok(TRITONSERVER_ServerOptionsSetBufferManagerThreadCount(o, 2));
  ok(TRITONSERVER_ServerOptionsSetBackendConfig(o, "identity", "k", "v"));
  ok(TRITONSERVER_ServerOptionsSetBackendConfig(o, "identity", "k", "w"));
  ok(TRITONSERVER_ServerOptionsSetHostPolicy(o, "numa0", "numa-node", "0"));
  ok(TRITONSERVER_ServerOptionsSetMetricsConfig(o, "", "counter_latencies",
                                                "false"));
  ok(TRITONSERVER_ServerOptionsSetMetricsInterval(o, 500));
  ok(TRITONSERVER_ServerOptionsSetLogFormat(o, TRITONSERVER_LOG_ISO8601));
  ok(TRITONSERVER_ServerOptionsSetLogFile(o, "/tmp/inferd-unused.log"));
  ok(TRITONSERVER_ServerOptionsSetLogFile(o, "")); /* stderr again */
  ok(TRITONSERVER_ServerOptionsSetResponseCacheByteSize(o, 0));
  ok(TRITONSERVER_ServerOptionsSetRateLimiterMode(o,
                                                  TRITONSERVER_RATE_LIMIT_OFF));
  ok(TRITONSERVER_ServerOptionsSetModelConfigName(o, "config.pbtxt"));
  ok(TRITONSERVER_ServerOptionsSetModelNamespacing(o, true));
  ok(TRITONSERVER_ServerOptionsSetModelNamespacing(o, false));
  ok(TRITONSERVER_ServerOptionsSetRepoAgentDirectory(o, "/opt/agents"));
  fails(TRITONSERVER_ServerOptionsSetRepoAgentDirectory(o, NULL),
        TRITONSERVER_ERROR_INVALID_ARG, "NULL");
  /* Refused where accepting would mislead. */
  /* The response cache (the server's cache when this options object
   * starts one): the deprecated size, then a config replacing it. */
  ok(TRITONSERVER_ServerOptionsSetResponseCacheByteSize(o, 1024));
  ok(TRITONSERVER_ServerOptionsSetCacheConfig(o, "local",
                                              "{\"size\":\"1048576\"}"));
  ok(TRITONSERVER_ServerOptionsSetCacheDirectory(o, "/tmp"));
  fails(TRITONSERVER_ServerOptionsSetCacheConfig(o, "local", "[1]"),
        TRITONSERVER_ERROR_INVALID_ARG, "JSON object");
  ok(TRITONSERVER_ServerOptionsSetRateLimiterMode(
      o, TRITONSERVER_RATE_LIMIT_EXEC_COUNT));
  ok(TRITONSERVER_ServerOptionsAddRateLimiterResource(o, "R1", 4, 0));
  ok(TRITONSERVER_ServerOptionsAddRateLimiterResource(o, "R2", 2, -1));
  fails(TRITONSERVER_ServerOptionsAddRateLimiterResource(o, "R3", 1, -2),
        TRITONSERVER_ERROR_INVALID_ARG, "device");
  fails(TRITONSERVER_ServerOptionsAddRateLimiterResource(o, NULL, 1, 0),
        TRITONSERVER_ERROR_INVALID_ARG, "resource_name");
  ok(TRITONSERVER_ServerOptionsSetModelConfigName(o, "h100"));
  ok(TRITONSERVER_ServerOptionsSetMetricsConfig(o, "", "summary_latencies",
                                                "true"));
  ok(TRITONSERVER_ServerOptionsSetModelLoadDeviceLimit(
      o, TRITONSERVER_INSTANCEGROUPKIND_GPU, 0, 0.5));
  fails(TRITONSERVER_ServerOptionsSetModelLoadDeviceLimit(
            o, TRITONSERVER_INSTANCEGROUPKIND_CPU, 0, 0.5),
        TRITONSERVER_ERROR_UNSUPPORTED, "KIND_GPU");
  fails(TRITONSERVER_ServerOptionsSetModelLoadDeviceLimit(
            o, TRITONSERVER_INSTANCEGROUPKIND_GPU, -1, 0.5),
        TRITONSERVER_ERROR_INVALID_ARG, "device ID");
  fails(TRITONSERVER_ServerOptionsSetModelLoadDeviceLimit(
            o, TRITONSERVER_INSTANCEGROUPKIND_GPU, 0, 1.5),
        TRITONSERVER_ERROR_INVALID_ARG, "[0.0, 1.0]");
  ok(TRITONSERVER_ServerOptionsSetMetricsConfig(o, "", "summary_quantiles",
                                                "0.5:0.05,0.99:0.001"));
  fails(TRITONSERVER_ServerOptionsSetMetricsConfig(o, "", "summary_quantiles",
                                                   "1.5:0.1"),
        TRITONSERVER_ERROR_INVALID_ARG, "summary_quantiles");
  /* Bad values. */
  fails(TRITONSERVER_ServerOptionsSetCudaMemoryPoolByteSize(o, -1, 1),
        TRITONSERVER_ERROR_INVALID_ARG, "device");
  fails(TRITONSERVER_ServerOptionsSetModelControlMode(
            o, (TRITONSERVER_ModelControlMode)42),
        TRITONSERVER_ERROR_INVALID_ARG, "control mode");
  fails(TRITONSERVER_ServerOptionsSetMetricsConfig(o, "", "counter_latencies",
                                                   "maybe"),
        TRITONSERVER_ERROR_INVALID_ARG, "true or false");
  fails(TRITONSERVER_ServerOptionsSetModelRepositoryPath(NULL, "x"),
        TRITONSERVER_ERROR_INVALID_ARG, "NULL");
  ok(TRITONSERVER_ServerOptionsDelete(o));
  ok(TRITONSERVER_ServerOptionsDelete(NULL));
}

/* ---- start and stop -------------------------------------------------------
 */

static void test_bad_repository(void **state) {
  TRITONSERVER_Server *s = NULL;
  TRITONSERVER_ServerOptions *o = options("test/models/no_such_repository",
                                          TRITONSERVER_MODEL_CONTROL_NONE);
  TRITONSERVER_Error *e;
  (void)state;

  e = TRITONSERVER_ServerNew(&s, o);
  assert_non_null(e);
  TRITONSERVER_ErrorDelete(e);
  assert_null(s);
  ok(TRITONSERVER_ServerOptionsDelete(o));
}

static void test_exit_on_error(void **state) {
  TRITONSERVER_Server *s = NULL;
  TRITONSERVER_ServerOptions *o =
      options(CONTROL, TRITONSERVER_MODEL_CONTROL_NONE);
  bool ready = true;
  (void)state;

  /* broken_backend fails to load: Triton's error, nothing left running. */
  fails(TRITONSERVER_ServerNew(&s, o), TRITONSERVER_ERROR_INTERNAL,
        "failed to load all models");
  assert_null(s);
  /* Without exit on error the rest serves; the server is not ready
   * (strict readiness: a model failed). */
  ok(TRITONSERVER_ServerOptionsSetExitOnError(o, false));
  s = start(o);
  assert_true(model_ready(s, "identity_int32"));
  assert_false(model_ready(s, "broken_backend"));
  ok(TRITONSERVER_ServerIsReady(s, &ready));
  ok(TRITONSERVER_ServerDelete(s));
}

static void test_start_stop(void **state) {
  TRITONSERVER_Server *s =
      start(options(EXAMPLES, TRITONSERVER_MODEL_CONTROL_NONE));
  TRITONSERVER_Message *m = NULL;
  bool live = false, ready = false;
  (void)state;

  ok(TRITONSERVER_ServerIsLive(s, &live));
  ok(TRITONSERVER_ServerIsReady(s, &ready));
  assert_true(live);
  assert_true(ready);
  assert_true(model_ready(s, "identity_fp32"));
  assert_true(model_ready(s, "identity_bytes"));
  assert_false(model_ready(s, "no_such_model"));
  ok(TRITONSERVER_ServerSetExitTimeout(s, 3));

  ok(TRITONSERVER_ServerStop(s));
  ok(TRITONSERVER_ServerStop(s)); /* twice: nothing more to do */
  ok(TRITONSERVER_ServerIsLive(s, &live));
  ok(TRITONSERVER_ServerIsReady(s, &ready));
  assert_false(live);
  assert_false(ready);
  fails(TRITONSERVER_ServerModelMetadata(s, "identity_fp32", -1, &m),
        TRITONSERVER_ERROR_UNAVAILABLE, "stopped");
  ok(TRITONSERVER_ServerDelete(s));
}

static void test_delete_loaded(void **state) {
  /* Delete stops on its own: drains, unloads both models, frees. */
  TRITONSERVER_Server *s =
      start(options(EXAMPLES, TRITONSERVER_MODEL_CONTROL_NONE));
  (void)state;
  assert_true(model_ready(s, "identity_fp32"));
  ok(TRITONSERVER_ServerDelete(s));
  fails(TRITONSERVER_ServerDelete(NULL), TRITONSERVER_ERROR_INVALID_ARG,
        "NULL");
}

/* ---- queries --------------------------------------------------------------
 */

/* SetServerId names the server in its metadata (tritonserver's --id). */
static void test_server_id(void **state) {
  TRITONSERVER_ServerOptions *o =
      options(EXAMPLES, TRITONSERVER_MODEL_CONTROL_NONE);
  TRITONSERVER_Server *s;
  TRITONSERVER_Message *m = NULL;
  json_t *j;
  (void)state;
  ok(TRITONSERVER_ServerOptionsSetServerId(o, "embedded"));
  s = start(o);
  ok(TRITONSERVER_ServerMetadata(s, &m));
  j = json_of(m);
  assert_string_equal(json_string_value(json_object_get(j, "name")),
                      "embedded");
  json_decref(j);
  ok(TRITONSERVER_ServerDelete(s));
}

static void test_metadata(void **state) {
  TRITONSERVER_Server *s =
      start(options(EXAMPLES, TRITONSERVER_MODEL_CONTROL_NONE));
  TRITONSERVER_Message *m = NULL;
  json_t *j, *t;
  uint32_t flags = 0;
  void *voidp = (void *)1;
  (void)state;

  ok(TRITONSERVER_ServerMetadata(s, &m));
  j = json_of(m);
  assert_string_equal(json_string_value(json_object_get(j, "name")), "triton");
  assert_true(json_is_string(json_object_get(j, "version")));
  assert_true(json_array_size(json_object_get(j, "extensions")) > 0);
  json_decref(j);

  ok(TRITONSERVER_ServerModelMetadata(s, "identity_fp32", -1, &m));
  j = json_of(m);
  assert_string_equal(json_string_value(json_object_get(j, "name")),
                      "identity_fp32");
  assert_string_equal(
      json_string_value(json_array_get(json_object_get(j, "versions"), 0)),
      "1");
  assert_string_equal(json_string_value(json_object_get(j, "platform")),
                      "identity");
  t = json_array_get(json_object_get(j, "inputs"), 0);
  assert_string_equal(json_string_value(json_object_get(t, "name")), "INPUT0");
  assert_string_equal(json_string_value(json_object_get(t, "datatype")),
                      "FP32");
  assert_int_equal(
      json_integer_value(json_array_get(json_object_get(t, "shape"), 0)), -1);
  assert_int_equal(
      json_integer_value(json_array_get(json_object_get(t, "shape"), 1)), 16);
  json_decref(j);
  fails(TRITONSERVER_ServerModelMetadata(s, "no_such_model", -1, &m),
        TRITONSERVER_ERROR_NOT_FOUND, "no_such_model");
  fails(TRITONSERVER_ServerModelMetadata(s, "identity_fp32", 7, &m),
        TRITONSERVER_ERROR_NOT_FOUND, "version");

  ok(TRITONSERVER_ServerModelConfig(s, "identity_fp32", -1, 1, &m));
  j = json_of(m);
  assert_string_equal(json_string_value(json_object_get(j, "name")),
                      "identity_fp32");
  assert_int_equal(json_integer_value(json_object_get(j, "max_batch_size")), 8);
  assert_string_equal(json_string_value(json_object_get(j, "backend")),
                      "identity");
  json_decref(j);
  fails(TRITONSERVER_ServerModelConfig(s, "identity_fp32", -1, 2, &m),
        TRITONSERVER_ERROR_INVALID_ARG, "supported versions are: 1");

  ok(TRITONSERVER_ServerModelBatchProperties(s, "identity_fp32", -1, &flags,
                                             &voidp));
  assert_int_equal(flags, TRITONSERVER_BATCH_FIRST_DIM);
  assert_null(voidp);
  ok(TRITONSERVER_ServerModelBatchProperties(s, "identity_bytes", -1, &flags,
                                             NULL));
  assert_int_equal(flags, TRITONSERVER_BATCH_UNKNOWN);
  ok(TRITONSERVER_ServerModelTransactionProperties(s, "identity_fp32", -1,
                                                   &flags, NULL));
  assert_int_equal(flags, TRITONSERVER_TXN_ONE_TO_ONE);
  fails(TRITONSERVER_ServerModelTransactionProperties(s, "nope", -1, &flags,
                                                      NULL),
        TRITONSERVER_ERROR_NOT_FOUND, "nope");
  ok(TRITONSERVER_ServerDelete(s));
}

static void test_stats_and_index(void **state) {
  TRITONSERVER_Server *s =
      start(options(EXAMPLES, TRITONSERVER_MODEL_CONTROL_NONE));
  TRITONSERVER_Message *m = NULL;
  json_t *j, *e;
  (void)state;

  ok(TRITONSERVER_ServerModelStatistics(s, "", -1, &m));
  j = json_of(m);
  assert_int_equal(json_array_size(json_object_get(j, "model_stats")), 2);
  json_decref(j);
  ok(TRITONSERVER_ServerModelStatistics(s, "identity_fp32", -1, &m));
  j = json_of(m);
  e = json_array_get(json_object_get(j, "model_stats"), 0);
  assert_string_equal(json_string_value(json_object_get(e, "name")),
                      "identity_fp32");
  assert_string_equal(json_string_value(json_object_get(e, "version")), "1");
  assert_int_equal(json_integer_value(json_object_get(e, "inference_count")),
                   0);
  assert_non_null(json_object_get(
      json_object_get(json_object_get(e, "inference_stats"), "success"),
      "count"));
  json_decref(j);
  fails(TRITONSERVER_ServerModelStatistics(s, "no_such_model", -1, &m),
        TRITONSERVER_ERROR_INVALID_ARG, "no_such_model");

  ok(TRITONSERVER_ServerModelIndex(s, 0, &m));
  j = json_of(m);
  assert_int_equal(json_array_size(j), 2);
  e = json_array_get(j, 0);
  assert_string_equal(json_string_value(json_object_get(e, "name")),
                      "identity_bytes");
  assert_string_equal(json_string_value(json_object_get(e, "state")), "READY");
  json_decref(j);
  ok(TRITONSERVER_ServerModelIndex(s, TRITONSERVER_INDEX_FLAG_READY, &m));
  j = json_of(m);
  assert_int_equal(json_array_size(j), 2);
  json_decref(j);

  /* Model control is refused outside explicit mode, as Triton does. */
  fails(TRITONSERVER_ServerLoadModel(s, "identity_fp32"),
        TRITONSERVER_ERROR_UNAVAILABLE, "explicit model load");
  fails(TRITONSERVER_ServerUnloadModel(s, "identity_fp32"),
        TRITONSERVER_ERROR_UNAVAILABLE, "explicit model load");
  fails(TRITONSERVER_ServerPollModelRepository(s),
        TRITONSERVER_ERROR_UNAVAILABLE, "polling is disabled");
  fails(TRITONSERVER_ServerRegisterModelRepository(s, CONTROL, NULL, 0),
        TRITONSERVER_ERROR_UNSUPPORTED, "not EXPLICIT");
  fails(TRITONSERVER_ServerUnregisterModelRepository(s, EXAMPLES),
        TRITONSERVER_ERROR_UNSUPPORTED, "not EXPLICIT");
  ok(TRITONSERVER_ServerDelete(s));
}

/* ---- explicit model control -----------------------------------------------
 */

static void test_explicit(void **state) {
  TRITONSERVER_ServerOptions *o =
      options(CONTROL, TRITONSERVER_MODEL_CONTROL_EXPLICIT);
  TRITONSERVER_Server *s;
  TRITONSERVER_Message *m = NULL;
  TRITONSERVER_Parameter *p;
  json_t *j, *e;
  size_t i;
  (void)state;

  ok(TRITONSERVER_ServerOptionsSetStartupModel(o, "identity_int32"));
  s = start(o);
  assert_true(model_ready(s, "identity_int32"));
  assert_false(model_ready(s, "step1_identity"));

  /* The index lists the repository's models, never-loaded ones by name. */
  ok(TRITONSERVER_ServerModelIndex(s, 0, &m));
  j = json_of(m);
  assert_int_equal(json_array_size(j), 5);
  json_array_foreach(j, i, e) {
    const char *name = json_string_value(json_object_get(e, "name"));
    if (strcmp(name, "identity_int32") == 0)
      assert_string_equal(json_string_value(json_object_get(e, "state")),
                          "READY");
    else
      assert_null(json_object_get(e, "state"));
  }
  json_decref(j);

  ok(TRITONSERVER_ServerLoadModel(s, "step1_identity"));
  assert_true(model_ready(s, "step1_identity"));
  fails(TRITONSERVER_ServerLoadModel(s, "broken_backend"),
        TRITONSERVER_ERROR_INVALID_ARG, "broken_backend");
  fails(TRITONSERVER_ServerLoadModel(s, "no_such_model"),
        TRITONSERVER_ERROR_INVALID_ARG, "no_such_model");

  /* A reload with a config override: max_batch_size changes. */
  p = TRITONSERVER_ParameterNew(
      "config", TRITONSERVER_PARAMETER_STRING,
      "{\"name\":\"step1_identity\",\"backend\":\"identity\","
      "\"max_batch_size\":4,"
      "\"input\":[{\"name\":\"INPUT0\",\"data_type\":\"TYPE_INT32\","
      "\"dims\":[-1]}],"
      "\"output\":[{\"name\":\"OUTPUT0\",\"data_type\":\"TYPE_INT32\","
      "\"dims\":[-1]}]}");
  assert_non_null(p);
  ok(TRITONSERVER_ServerLoadModelWithParameters(
      s, "step1_identity", (const TRITONSERVER_Parameter **)&p, 1));
  TRITONSERVER_ParameterDelete(p);
  ok(TRITONSERVER_ServerModelConfig(s, "step1_identity", -1, 1, &m));
  j = json_of(m);
  assert_int_equal(json_integer_value(json_object_get(j, "max_batch_size")), 4);
  json_decref(j);
  p = TRITONSERVER_ParameterNew("config", TRITONSERVER_PARAMETER_INT,
                                &(int64_t){1});
  fails(TRITONSERVER_ServerLoadModelWithParameters(
            s, "step1_identity", (const TRITONSERVER_Parameter **)&p, 1),
        TRITONSERVER_ERROR_INVALID_ARG, "STRING");
  TRITONSERVER_ParameterDelete(p);

  /* A model given whole in the call: its config (which mends the broken
   * one on disk) and a file of version 1, loaded from a temporary folder, as
   * the HTTP repository extension does. */
  {
    const TRITONSERVER_Parameter *ps[2];
    static const char blob[] = "not a real model file";
    ps[0] = TRITONSERVER_ParameterNew(
        "config", TRITONSERVER_PARAMETER_STRING,
        "{\"backend\":\"identity\",\"max_batch_size\":0,"
        "\"input\":[{\"name\":\"INPUT0\",\"data_type\":\"TYPE_FP32\","
        "\"dims\":[2]}],"
        "\"output\":[{\"name\":\"OUTPUT0\",\"data_type\":\"TYPE_FP32\","
        "\"dims\":[2]}]}");
    ps[1] =
        TRITONSERVER_ParameterBytesNew("file:1/model.bin", blob, sizeof(blob));
    assert_non_null(ps[0]);
    assert_non_null(ps[1]);
    ok(TRITONSERVER_ServerLoadModelWithParameters(s, "broken_backend", ps, 2));
    assert_true(model_ready(s, "broken_backend"));
    TRITONSERVER_ParameterDelete((TRITONSERVER_Parameter *)ps[1]);
    ps[1] = TRITONSERVER_ParameterNew("file:1/model.bin",
                                      TRITONSERVER_PARAMETER_STRING, "x");
    fails(
        TRITONSERVER_ServerLoadModelWithParameters(s, "broken_backend", ps, 2),
        TRITONSERVER_ERROR_INVALID_ARG, "BYTES");
    TRITONSERVER_ParameterDelete((TRITONSERVER_Parameter *)ps[0]);
    TRITONSERVER_ParameterDelete((TRITONSERVER_Parameter *)ps[1]);
    ok(TRITONSERVER_ServerUnloadModel(s, "broken_backend"));
  }

  /* Unload: the model leaves readiness once the unload has begun. */
  ok(TRITONSERVER_ServerUnloadModel(s, "step1_identity"));
  assert_false(model_ready(s, "step1_identity"));
  ok(TRITONSERVER_ServerUnloadModel(s, "no_such_model")); /* as Triton */
  ok(TRITONSERVER_ServerLoadModel(s, "ensemble_identity"));
  assert_true(model_ready(s, "ensemble_identity"));
  assert_true(model_ready(s, "step2_identity"));
  ok(TRITONSERVER_ServerUnloadModelAndDependents(s, "ensemble_identity"));
  assert_false(model_ready(s, "ensemble_identity"));
  fails(TRITONSERVER_ServerPollModelRepository(s),
        TRITONSERVER_ERROR_UNAVAILABLE, "polling is disabled");

  /* A second repository, registered: its models load by name. */
  fails(TRITONSERVER_ServerLoadModel(s, "identity_fp32"),
        TRITONSERVER_ERROR_INVALID_ARG, "identity_fp32");
  ok(TRITONSERVER_ServerRegisterModelRepository(s, EXAMPLES, NULL, 0));
  fails(TRITONSERVER_ServerRegisterModelRepository(s, EXAMPLES, NULL, 0),
        TRITONSERVER_ERROR_ALREADY_EXISTS, "already been registered");
  fails(TRITONSERVER_ServerRegisterModelRepository(s, "test/models/nope", NULL,
                                                   0),
        TRITONSERVER_ERROR_INVALID_ARG, "repository not found");
  ok(TRITONSERVER_ServerLoadModel(s, "identity_fp32"));
  assert_true(model_ready(s, "identity_fp32"));
  ok(TRITONSERVER_ServerUnregisterModelRepository(s, EXAMPLES));
  fails(TRITONSERVER_ServerUnregisterModelRepository(s, EXAMPLES),
        TRITONSERVER_ERROR_INVALID_ARG, "repository not found");
  assert_true(model_ready(s, "identity_fp32")); /* stays loaded */
  fails(TRITONSERVER_ServerLoadModel(s, "identity_bytes"),
        TRITONSERVER_ERROR_INVALID_ARG, "identity_bytes");

  /* Name mappings: folder -> model name (the parameter's name is the
   * folder, its string value the name). */
  {
    const TRITONSERVER_Parameter *map[2];
    map[0] = TRITONSERVER_ParameterNew(
        "identity_bytes", TRITONSERVER_PARAMETER_STRING, "renamed_bytes");
    map[1] = TRITONSERVER_ParameterNew(
        "identity_int32", TRITONSERVER_PARAMETER_STRING, "renamed_bytes");
    fails(TRITONSERVER_ServerRegisterModelRepository(s, EXAMPLES, map, 2),
          TRITONSERVER_ERROR_INVALID_ARG,
          "there is a conflicting mapping for 'renamed_bytes'");
    ok(TRITONSERVER_ServerRegisterModelRepository(s, EXAMPLES, map, 1));
    ok(TRITONSERVER_ServerLoadModel(s, "renamed_bytes"));
    assert_true(model_ready(s, "renamed_bytes"));
    assert_false(model_ready(s, "identity_bytes"));
    fails(TRITONSERVER_ServerRegisterModelRepository(s, "test/models/ens_repo",
                                                     map, 1),
          TRITONSERVER_ERROR_ALREADY_EXISTS,
          "failed to register 'renamed_bytes', there is a conflicting "
          "mapping for 'renamed_bytes'");
    TRITONSERVER_ParameterDelete((TRITONSERVER_Parameter *)map[1]);
    map[1] = TRITONSERVER_ParameterNew(
        "identity_int32", TRITONSERVER_PARAMETER_INT, &(int64_t){1});
    fails(TRITONSERVER_ServerRegisterModelRepository(s, "test/models/ens_repo",
                                                     &map[1], 1),
          TRITONSERVER_ERROR_INVALID_ARG, "must be a string");
    ok(TRITONSERVER_ServerUnregisterModelRepository(s, EXAMPLES));
    ok(TRITONSERVER_ServerUnloadModel(s, "renamed_bytes"));
    TRITONSERVER_ParameterDelete((TRITONSERVER_Parameter *)map[0]);
    TRITONSERVER_ParameterDelete((TRITONSERVER_Parameter *)map[1]);
  }
  /* Delete with identity_int32 (and maybe unloading models) still there. */
  ok(TRITONSERVER_ServerDelete(s));
}

/* ---- poll mode ------------------------------------------------------------
 */

/* Writes <repo>/<name>/config.pbtxt (an identity model) and <name>/1/. */
static void add_model(const char *repo, const char *name) {
  char path[512];
  FILE *f;

  snprintf(path, sizeof(path), "%s/%s", repo, name);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof(path), "%s/%s/1", repo, name);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof(path), "%s/%s/config.pbtxt", repo, name);
  f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f,
          "name: \"%s\"\nbackend: \"identity\"\nmax_batch_size: 0\n"
          "input [ { name: \"INPUT0\" data_type: TYPE_INT32 dims: [ 4 ] } ]\n"
          "output [ { name: \"OUTPUT0\" data_type: TYPE_INT32 dims: [ 4 ] "
          "} ]\n",
          name);
  fclose(f);
}

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void test_poll(void **state) {
  char repo[] = "/tmp/ifd_capi_pollXXXXXX", path[512];
  TRITONSERVER_Server *s;
  (void)state;

  assert_non_null(mkdtemp(repo));
  add_model(repo, "first");
  s = start(options(repo, TRITONSERVER_MODEL_CONTROL_POLL));
  assert_true(model_ready(s, "first"));
  /* No timer polls: only the application's call finds changes. */
  add_model(repo, "second");
  assert_false(model_ready(s, "second"));
  ok(TRITONSERVER_ServerPollModelRepository(s));
  assert_true(model_ready(s, "second"));
  /* A model that left the repository unloads. */
  snprintf(path, sizeof(path), "%s/first", repo);
  assert_int_equal(nftw(path, rm_entry, 8, FTW_DEPTH | FTW_PHYS), 0);
  ok(TRITONSERVER_ServerPollModelRepository(s));
  assert_false(model_ready(s, "first"));
  assert_true(model_ready(s, "second"));
  fails(TRITONSERVER_ServerLoadModel(s, "first"),
        TRITONSERVER_ERROR_UNAVAILABLE, "polling is enabled");
  ok(TRITONSERVER_ServerDelete(s));
  assert_int_equal(nftw(repo, rm_entry, 8, FTW_DEPTH | FTW_PHYS), 0);
}

/* ---- one inference through the embedded server ----------------------------
 */

typedef struct waiter {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  TRITONSERVER_InferenceResponse *resp; /* the final response */
  int released;
  TRITONSERVER_Server *server; /* asked from the callback (loop thread) */
  int ready_in_cb;             /* ModelIsReady answered inline there */
  int load_code_in_cb;         /* LoadModel's error class there */
} waiter_t;

static TRITONSERVER_Error *alloc_fn(TRITONSERVER_ResponseAllocator *a,
                                    const char *name, size_t size,
                                    TRITONSERVER_MemoryType type,
                                    int64_t type_id, void *userp, void **buffer,
                                    void **buffer_userp,
                                    TRITONSERVER_MemoryType *actual_type,
                                    int64_t *actual_type_id) {
  (void)a;
  (void)name;
  (void)type;
  (void)type_id;
  (void)userp;
  *buffer = malloc(size > 0 ? size : 1);
  *buffer_userp = NULL;
  *actual_type = TRITONSERVER_MEMORY_CPU;
  *actual_type_id = 0;
  return NULL;
}

static TRITONSERVER_Error *release_fn(TRITONSERVER_ResponseAllocator *a,
                                      void *buffer, void *buffer_userp,
                                      size_t size, TRITONSERVER_MemoryType type,
                                      int64_t type_id) {
  (void)a;
  (void)buffer_userp;
  (void)size;
  (void)type;
  (void)type_id;
  free(buffer);
  return NULL;
}

static void on_response(TRITONSERVER_InferenceResponse *resp, uint32_t flags,
                        void *userp) {
  waiter_t *w = userp;
  bool ready = false;
  TRITONSERVER_Error *e;

  /* A callback may call the API: a query runs inline on the loop; a load,
   * which would wait for the loop, is refused. */
  if (TRITONSERVER_ServerModelIsReady(w->server, "identity_fp32", -1, &ready) ==
      NULL)
    w->ready_in_cb = ready;
  e = TRITONSERVER_ServerLoadModel(w->server, "identity_fp32");
  w->load_code_in_cb = e != NULL ? (int)TRITONSERVER_ErrorCode(e) : -1;
  TRITONSERVER_ErrorDelete(e);
  pthread_mutex_lock(&w->mu);
  if (flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL) w->resp = resp;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

static void on_release(TRITONSERVER_InferenceRequest *req, uint32_t flags,
                       void *userp) {
  waiter_t *w = userp;
  (void)req;
  (void)flags;
  pthread_mutex_lock(&w->mu);
  w->released = 1;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

static void test_infer(void **state) {
  TRITONSERVER_Server *s =
      start(options(EXAMPLES, TRITONSERVER_MODEL_CONTROL_NONE));
  TRITONSERVER_ResponseAllocator *alloc = NULL;
  TRITONSERVER_InferenceRequest *req = NULL;
  TRITONSERVER_Message *m = NULL;
  waiter_t w = {
      PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, s, 0, 0};
  const int64_t shape[2] = {1, 16};
  float in[16];
  const char *name;
  TRITONSERVER_DataType dtype;
  const int64_t *oshape;
  uint64_t dims;
  const void *base;
  size_t size;
  TRITONSERVER_MemoryType mt;
  int64_t mid;
  void *ouserp;
  json_t *j;
  int i;
  (void)state;

  for (i = 0; i < 16; i++) in[i] = (float)i * 0.5f;
  ok(TRITONSERVER_ResponseAllocatorNew(&alloc, alloc_fn, release_fn, NULL));
  ok(TRITONSERVER_InferenceRequestNew(&req, s, "identity_fp32", -1));
  ok(TRITONSERVER_InferenceRequestAddInput(req, "INPUT0",
                                           TRITONSERVER_TYPE_FP32, shape, 2));
  ok(TRITONSERVER_InferenceRequestAppendInputData(req, "INPUT0", in, sizeof(in),
                                                  TRITONSERVER_MEMORY_CPU, 0));
  ok(TRITONSERVER_InferenceRequestSetReleaseCallback(req, on_release, &w));
  ok(TRITONSERVER_InferenceRequestSetResponseCallback(req, alloc, NULL,
                                                      on_response, &w));
  ok(TRITONSERVER_ServerInferAsync(s, req, NULL));
  pthread_mutex_lock(&w.mu);
  while (w.resp == NULL || !w.released) pthread_cond_wait(&w.cv, &w.mu);
  pthread_mutex_unlock(&w.mu);
  ok(TRITONSERVER_InferenceResponseError(w.resp) == NULL
         ? NULL
         : TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 "response error"));
  ok(TRITONSERVER_InferenceResponseOutput(w.resp, 0, &name, &dtype, &oshape,
                                          &dims, &base, &size, &mt, &mid,
                                          &ouserp));
  assert_string_equal(name, "OUTPUT0");
  assert_int_equal(size, sizeof(in));
  assert_memory_equal(base, in, sizeof(in));
  assert_true(w.ready_in_cb);
  assert_int_equal(w.load_code_in_cb, TRITONSERVER_ERROR_UNAVAILABLE);
  ok(TRITONSERVER_InferenceResponseDelete(w.resp));
  ok(TRITONSERVER_InferenceRequestDelete(req));

  /* The statistics of the in-process request, as HTTP would show them. */
  ok(TRITONSERVER_ServerModelStatistics(s, "identity_fp32", 1, &m));
  j = json_of(m);
  assert_int_equal(json_integer_value(json_object_get(
                       json_array_get(json_object_get(j, "model_stats"), 0),
                       "inference_count")),
                   1);
  json_decref(j);
  ok(TRITONSERVER_ServerDelete(s));
  /* Only now: a response deleted off the loop is released on the loop
   * later (capi_infer.c), and its release still calls the allocator. */
  ok(TRITONSERVER_ResponseAllocatorDelete(alloc));
}

/* ---- metrics --------------------------------------------------------------
 */

static void test_metrics(void **state) {
  TRITONSERVER_ServerOptions *o;
  TRITONSERVER_Server *s =
      start(options(EXAMPLES, TRITONSERVER_MODEL_CONTROL_NONE));
  TRITONSERVER_Metrics *mx = NULL;
  const char *base;
  size_t len;
  (void)state;

  ok(TRITONSERVER_ServerMetrics(s, &mx));
  ok(TRITONSERVER_MetricsFormatted(mx, TRITONSERVER_METRIC_PROMETHEUS, &base,
                                   &len));
  assert_true(len > 0);
  assert_int_equal(base[len], '\0');
  assert_non_null(
      strstr(base, "nv_inference_request_success{model=\"identity_fp32\""));
  fails(TRITONSERVER_MetricsFormatted(mx, (TRITONSERVER_MetricFormat)9, &base,
                                      &len),
        TRITONSERVER_ERROR_INVALID_ARG, "format");
  ok(TRITONSERVER_MetricsDelete(mx));
  ok(TRITONSERVER_ServerDelete(s));

  o = options(EXAMPLES, TRITONSERVER_MODEL_CONTROL_NONE);
  ok(TRITONSERVER_ServerOptionsSetMetrics(o, false));
  s = start(o);
  fails(TRITONSERVER_ServerMetrics(s, &mx), TRITONSERVER_ERROR_UNSUPPORTED,
        "metrics not supported");
  ok(TRITONSERVER_ServerDelete(s));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options),
      cmocka_unit_test(test_bad_repository),
      cmocka_unit_test(test_exit_on_error),
      cmocka_unit_test(test_start_stop),
      cmocka_unit_test(test_delete_loaded),
      cmocka_unit_test(test_server_id),
      cmocka_unit_test(test_metadata),
      cmocka_unit_test(test_stats_and_index),
      cmocka_unit_test(test_explicit),
      cmocka_unit_test(test_poll),
      cmocka_unit_test(test_infer),
      cmocka_unit_test(test_metrics),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
