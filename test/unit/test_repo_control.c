/*
 * test/unit/test_repo_control.c - load and unload parameters of the model
 * repository extension (frontend/repo_control.c): HTTP JSON bodies, gRPC
 * messages, and the base64 decoder, with tritonserver's refusals.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/repo_control.h"

/* ---- base64 ----------------------------------------------------------------
 */

static long b64(const char *s, uint8_t *out) {
  return ifd__base64_decode(s, strlen(s), out);
}

static void test_base64(void **state) {
  uint8_t out[64];
  (void)state;

  assert_int_equal(b64("", out), 0);
  assert_int_equal(b64("Zg==", out), 1);
  assert_memory_equal(out, "f", 1);
  assert_int_equal(b64("Zm8=", out), 2);
  assert_memory_equal(out, "fo", 2);
  assert_int_equal(b64("Zm9v", out), 3);
  assert_memory_equal(out, "foo", 3);
  assert_int_equal(b64("Zm9vYmFy", out), 6);
  assert_memory_equal(out, "foobar", 6);
  /* Unpadded is accepted. */
  assert_int_equal(b64("Zg", out), 1);
  assert_int_equal(b64("Zm8", out), 2);
  /* Every byte value survives. */
  assert_int_equal(b64("AP8Qf4A=", out), 5);
  assert_memory_equal(out, "\x00\xff\x10\x7f\x80", 5);
  assert_int_equal(b64("+/+/", out), 3);
  assert_memory_equal(out, "\xfb\xff\xbf", 3);
  /* Refused: outside the alphabet, URL-safe digits, whitespace, padding
   * in the middle or too much of it, impossible lengths. */
  assert_int_equal(b64("Zm9v!", out), -1);
  assert_int_equal(b64("Zm-_", out), -1);
  assert_int_equal(b64("Zm9v\n", out), -1);
  assert_int_equal(b64("Zg==Zg==", out), -1);
  assert_int_equal(b64("Z===", out), -1);
  assert_int_equal(b64("Zg=", out), -1);
  assert_int_equal(b64("Z", out), -1);
  assert_int_equal(b64("Zm9vY", out), -1);
  assert_int_equal(b64("=", out), -1);
}

/* ---- HTTP load
 * ---------------------------------------------------------------
 */

static int load_json(const char *body, ifd_load_req_t *r, ifd_errmsg_t *err) {
  ifd_errclear(err);
  return ifd__load_req_from_json(body, strlen(body), r, err);
}

static void refused(const char *body, const char *msg) {
  ifd_load_req_t r;
  ifd_errmsg_t err;

  assert_int_equal(load_json(body, &r, &err), IFD_EINVAL);
  assert_string_equal(err.text, msg);
  assert_null(r.json);
  assert_null(r.files);
}

static void test_load_json_empty(void **state) {
  static const char *const bodies[] = {"", "{}", "{\"parameters\": {}}",
                                       "{\"other\": 1}"};
  ifd_load_req_t r;
  ifd_errmsg_t err;
  size_t i;
  (void)state;

  for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
    assert_int_equal(load_json(bodies[i], &r, &err), 0);
    assert_null(r.params.config);
    assert_int_equal(r.params.n_files, 0);
    ifd__load_req_free(&r);
  }
}

static void test_load_json_config_and_files(void **state) {
  ifd_load_req_t r;
  ifd_errmsg_t err;
  (void)state;

  assert_int_equal(
      load_json("{\"parameters\": {\"config\": \"{\\\"max_batch_size\\\": 2}\","
                " \"file:1/model.bin\": \"AAEC\", \"file:2/x\": \"\"}}",
                &r, &err),
      0);
  assert_non_null(r.params.config);
  assert_int_equal(r.params.config_len, strlen("{\"max_batch_size\": 2}"));
  assert_memory_equal(r.params.config, "{\"max_batch_size\": 2}",
                      r.params.config_len);
  assert_int_equal(r.params.n_files, 2);
  assert_ptr_equal(r.params.files, r.files);
  assert_int_equal(r.files[0].path_len, strlen("1/model.bin"));
  assert_memory_equal(r.files[0].path, "1/model.bin", r.files[0].path_len);
  assert_int_equal(r.files[0].len, 3);
  assert_memory_equal(r.files[0].data, "\x00\x01\x02", 3);
  assert_int_equal(r.files[1].path_len, 3);
  assert_memory_equal(r.files[1].path, "2/x", 3);
  assert_int_equal(r.files[1].len, 0);
  ifd__load_req_free(&r);
  /* Free twice is harmless (the struct is cleared). */
  ifd__load_req_free(&r);
}

static void test_load_json_refused(void **state) {
  ifd_load_req_t r;
  ifd_errmsg_t err;
  (void)state;

  /* Triton's words (it answers 500 to each of these). */
  refused("{\"parameters\": {\"config\": {\"name\": \"m\"}}}",
          "attempt to access JSON non-string as string");
  refused("{\"parameters\": {\"file:1/m\": 5}}",
          "attempt to access JSON non-string as string");
  refused("{\"parameters\": {\"color\": \"blue\"}}",
          "unexpected error on creating Triton parameter");
  refused("{\"parameters\": {\"config\": \"{}\", \"color\": 1}}",
          "attempt to access JSON non-string as string");
  refused("{\"parameters\": {\"file:1/m\": \"not base64!\"}}",
          "invalid base64 in load parameter 'file:1/m'");
  refused("{\"parameters\": [1]}",
          "Unable to parse 'parameters': expected an object");
  refused("[1]", "failed to parse the request JSON buffer: expected an object");
  /* Not JSON: jansson's words after Triton's prefix. */
  assert_int_equal(load_json("{not json", &r, &err), IFD_EINVAL);
  assert_non_null(
      strstr(err.text, "failed to parse the request JSON buffer: "));
  assert_null(r.json);
}

/* ---- HTTP unload
 * -------------------------------------------------------------
 */

static int unload_json(const char *body, int *dep, ifd_errmsg_t *err) {
  ifd_errclear(err);
  return ifd__unload_req_from_json(body, strlen(body), dep, err);
}

static void test_unload_json(void **state) {
  ifd_errmsg_t err;
  int dep = -1;
  (void)state;

  assert_int_equal(unload_json("", &dep, &err), 0);
  assert_int_equal(dep, 0);
  assert_int_equal(unload_json("{}", &dep, &err), 0);
  assert_int_equal(dep, 0);
  assert_int_equal(
      unload_json("{\"parameters\": {\"unload_dependents\": true}}", &dep,
                  &err),
      0);
  assert_int_equal(dep, 1);
  assert_int_equal(
      unload_json("{\"parameters\": {\"unload_dependents\": false}}", &dep,
                  &err),
      0);
  assert_int_equal(dep, 0);
  /* As tritonserver (200 recorded): another type unloads the model alone. */
  assert_int_equal(
      unload_json("{\"parameters\": {\"unload_dependents\": \"true\"}}", &dep,
                  &err),
      0);
  assert_int_equal(dep, 0);
  assert_int_equal(unload_json("{\"parameters\": 3}", &dep, &err), 0);
  assert_int_equal(dep, 0);
  assert_int_equal(unload_json("{nope", &dep, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "failed to parse the request JSON buffer"));
  assert_int_equal(unload_json("true", &dep, &err), IFD_EINVAL);
}

/* ---- gRPC ------------------------------------------------------------------
 */

typedef struct pb_load {
  Inference__RepositoryModelLoadRequest q;
  Inference__RepositoryModelLoadRequest__ParametersEntry e[3];
  Inference__RepositoryModelLoadRequest__ParametersEntry *ep[3];
  Inference__ModelRepositoryParameter v[3];
} pb_load_t;

static void pb_load_init(pb_load_t *p, size_t n) {
  size_t i;

  inference__repository_model_load_request__init(&p->q);
  p->q.model_name = "m";
  for (i = 0; i < 3; i++) {
    inference__repository_model_load_request__parameters_entry__init(&p->e[i]);
    inference__model_repository_parameter__init(&p->v[i]);
    p->e[i].value = &p->v[i];
    p->ep[i] = &p->e[i];
  }
  p->q.n_parameters = n;
  p->q.parameters = p->ep;
}

static void test_load_grpc(void **state) {
  static uint8_t bytes[] = {0, 1, 2, 3};
  ifd_load_req_t r;
  ifd_errmsg_t err;
  pb_load_t p;
  (void)state;

  pb_load_init(&p, 0);
  assert_int_equal(ifd__load_req_from_grpc(&p.q, &r, &err), 0);
  assert_null(r.params.config);
  ifd__load_req_free(&r);

  pb_load_init(&p, 2);
  p.e[0].key = "config";
  p.v[0].parameter_choice_case =
      INFERENCE__MODEL_REPOSITORY_PARAMETER__PARAMETER_CHOICE_STRING_PARAM;
  p.v[0].string_param = "{\"max_batch_size\": 2}";
  p.e[1].key = "file:1/model.bin";
  p.v[1].parameter_choice_case =
      INFERENCE__MODEL_REPOSITORY_PARAMETER__PARAMETER_CHOICE_BYTES_PARAM;
  p.v[1].bytes_param.data = bytes;
  p.v[1].bytes_param.len = sizeof(bytes);
  ifd_errclear(&err);
  assert_int_equal(ifd__load_req_from_grpc(&p.q, &r, &err), 0);
  assert_string_equal(r.params.config, "{\"max_batch_size\": 2}");
  assert_int_equal(r.params.n_files, 1);
  assert_memory_equal(r.params.files[0].path, "1/model.bin", 11);
  assert_int_equal(r.params.files[0].path_len, 11);
  assert_ptr_equal(r.params.files[0].data, bytes); /* no copy */
  assert_int_equal(r.params.files[0].len, 4);
  ifd__load_req_free(&r);

  /* Triton's words for each refusal. */
  p.v[0].parameter_choice_case =
      INFERENCE__MODEL_REPOSITORY_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM;
  p.v[0].bool_param = 1;
  assert_int_equal(ifd__load_req_from_grpc(&p.q, &r, &err), IFD_EINVAL);
  assert_string_equal(err.text,
                      "invalid value type for load parameter 'config', "
                      "expected string_param.");
  assert_null(r.files);

  pb_load_init(&p, 1);
  p.e[0].key = "file:1/x";
  p.v[0].parameter_choice_case =
      INFERENCE__MODEL_REPOSITORY_PARAMETER__PARAMETER_CHOICE_STRING_PARAM;
  p.v[0].string_param = "AAEC";
  assert_int_equal(ifd__load_req_from_grpc(&p.q, &r, &err), IFD_EINVAL);
  assert_string_equal(err.text,
                      "invalid value type for load parameter 'file:1/x', "
                      "expected bytes_param.");

  p.e[0].key = "color";
  assert_int_equal(ifd__load_req_from_grpc(&p.q, &r, &err), IFD_EINVAL);
  assert_string_equal(err.text, "unrecognized load parameter 'color'.");

  pb_load_init(&p, 0);
  p.q.repository_name = "other";
  assert_int_equal(ifd__load_req_from_grpc(&p.q, &r, &err), IFD_EUNSUPPORTED);
  assert_string_equal(err.text,
                      "'repository_name' specification is not supported");
}

static void test_unload_grpc(void **state) {
  Inference__RepositoryModelUnloadRequest q;
  Inference__RepositoryModelUnloadRequest__ParametersEntry e, *ep = &e;
  Inference__ModelRepositoryParameter v;
  ifd_errmsg_t err;
  int dep = -1;
  (void)state;

  inference__repository_model_unload_request__init(&q);
  inference__repository_model_unload_request__parameters_entry__init(&e);
  inference__model_repository_parameter__init(&v);
  q.model_name = "m";
  assert_int_equal(ifd__unload_req_from_grpc(&q, &dep, &err), 0);
  assert_int_equal(dep, 0);

  q.n_parameters = 1;
  q.parameters = &ep;
  e.key = "unload_dependents";
  e.value = &v;
  v.parameter_choice_case =
      INFERENCE__MODEL_REPOSITORY_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM;
  v.bool_param = 1;
  assert_int_equal(ifd__unload_req_from_grpc(&q, &dep, &err), 0);
  assert_int_equal(dep, 1);

  v.parameter_choice_case =
      INFERENCE__MODEL_REPOSITORY_PARAMETER__PARAMETER_CHOICE_STRING_PARAM;
  v.string_param = "true";
  ifd_errclear(&err);
  assert_int_equal(ifd__unload_req_from_grpc(&q, &dep, &err), IFD_EINVAL);
  assert_string_equal(err.text,
                      "invalid value type for 'unload_dependents' parameter, "
                      "expected bool_param.");

  e.key = "something_else"; /* ignored, as tritonserver */
  assert_int_equal(ifd__unload_req_from_grpc(&q, &dep, &err), 0);
  assert_int_equal(dep, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_base64),
      cmocka_unit_test(test_load_json_empty),
      cmocka_unit_test(test_load_json_config_and_files),
      cmocka_unit_test(test_load_json_refused),
      cmocka_unit_test(test_unload_json),
      cmocka_unit_test(test_load_grpc),
      cmocka_unit_test(test_unload_grpc),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
