/*
 * test/unit/test_ort_backend.c - the ONNX Runtime backend's logic that
 * needs no ONNX Runtime: Triton's configuration checks and their texts,
 * auto-complete of max_batch_size, inputs and outputs, the model
 * parameters, BYTES to C strings and back, instance group names and the
 * data type tables.
 *
 * The backend's .c files are included, so their static functions are
 * reachable; no ORT function is called (ifd_ort stays NULL), the server's
 * TRITONSERVER_* functions come from the test library. What needs the
 * runtime itself is covered by test_ort_api (the function table) and the
 * e2e tests (test/e2e/test_onnxruntime*.py).
 */
/* cmocka.h needs setjmp.h, stdarg.h and stddef.h before it. */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "backend_api/backends/onnxruntime/ort_exec.c"
#include "backend_api/backends/onnxruntime/ort_check.c"
#include "backend_api/backends/onnxruntime/ort_model.c"
#include "backend_api/backends/onnxruntime/ort_settings.c"
#include "backend_api/backends/onnxruntime/ort_util.c"
#include "backend_api/backends/common/batch_io.c"
#include "backend_api/backends/common/be_util.c"

const OrtApi *ifd_ort;
const char *ifd_ort_version(void) {
  return "test";
}
int ifd_ort_has_cuda(void) {
  return 0;
}
const char *ifd_ort_no_cuda_reason(void) {
  return "test";
}

/* Checks that e is an error whose message contains `want`, and frees it. */
static void expect_err(TRITONSERVER_Error *e, TRITONSERVER_Error_Code code,
                       const char *want) {
  assert_non_null(e);
  if (strstr(TRITONSERVER_ErrorMessage(e), want) == NULL)
    fail_msg("message '%s' lacks '%s'", TRITONSERVER_ErrorMessage(e), want);
  assert_int_equal(TRITONSERVER_ErrorCode(e), code);
  TRITONSERVER_ErrorDelete(e);
}

static ort_io_t io_of(const char *name, ONNXTensorElementDataType t,
                      int64_t *dims, size_t n) {
  ort_io_t io = {(char *)name, t, dims, n};
  return io;
}

static void test_compare_dims_batching(void **state) {
  ort_model_t m = {.name = "m", .max_batch_size = 8};
  int64_t model[] = {-1, 4}, fixed[] = {3, 4};
  int64_t four[] = {4}, five[] = {5}, any[] = {-1};
  ort_io_t io = io_of("x", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, model, 2);
  (void)state;
  assert_null(compare_dims(&m, "x", &io, four, 1, 0));
  assert_null(compare_dims(&m, "x", &io, four, 1, 1));
  expect_err(compare_dims(&m, "x", &io, five, 1, 0),
             TRITONSERVER_ERROR_INVALID_ARG,
             "model 'm', tensor 'x': the model expects 2 dimensions (shape "
             "[-1,4]) but the model configuration specifies 2 dimensions (an "
             "initial batch dimension because max_batch_size > 0 followed by "
             "the explicit tensor shape, making complete shape [-1,5])");
  /* A -1 in the configuration where the model fixes the dim fails too. */
  expect_err(compare_dims(&m, "x", &io, any, 1, 0),
             TRITONSERVER_ERROR_INVALID_ARG, "making complete shape [-1,-1]");
  io.dims = fixed;
  expect_err(compare_dims(&m, "x", &io, four, 1, 0),
             TRITONSERVER_ERROR_INVALID_ARG,
             "for the model to support batching the shape should have at "
             "least 1 dimension and the first dimension must be -1; but shape "
             "expected by the model is [3,4]");
}

static void test_compare_dims_exact(void **state) {
  ort_model_t m = {.name = "m", .max_batch_size = 0};
  int64_t model[] = {-1, -1}, cfg[] = {2, 3}, wild[] = {-1, -1};
  ort_io_t io = io_of("y", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, model, 2);
  (void)state;
  /* An input's dynamic model dims take any configured size... */
  assert_null(compare_dims(&m, "y", &io, cfg, 2, 0));
  /* ...an output's must be configured dynamic too (Triton compares exactly). */
  expect_err(compare_dims(&m, "y", &io, cfg, 2, 1),
             TRITONSERVER_ERROR_INVALID_ARG,
             "model 'm', tensor 'y': the model expects 2 dimensions (shape "
             "[-1,-1]) but the model configuration specifies 2 dimensions "
             "(shape [2,3])");
  assert_null(compare_dims(&m, "y", &io, wild, 2, 1));
  expect_err(compare_dims(&m, "y", &io, cfg, 1, 0),
             TRITONSERVER_ERROR_INVALID_ARG, "specifies 1 dimensions");
}

static void test_scalar(void **state) {
  ort_model_t m = {.name = "m"};
  int64_t ones[] = {1, 1}, two[] = {2};
  (void)state;
  assert_null(check_scalar(&m, "s", ones, 2));
  assert_null(check_scalar(&m, "s", NULL, 0));
  expect_err(check_scalar(&m, "s", two, 1), TRITONSERVER_ERROR_INVALID_ARG,
             "unable to load model 'm', scalar tensor 's', should only "
             "provide 1 in the model configuration when the model doesn't "
             "support batching. Model configuration provided: [2].");
}

static void test_type_check(void **state) {
  ort_model_t m = {.name = "m"};
  int64_t d[] = {1};
  ort_io_t io = io_of("x", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, d, 1);
  (void)state;
  assert_null(check_type(&m, "input", "x", "TYPE_FP32", &io));
  expect_err(check_type(&m, "input", "x", "TYPE_INT32", &io),
             TRITONSERVER_ERROR_INVALID_ARG,
             "unable to load model 'm', configuration expects datatype "
             "TYPE_INT32 for input 'x', model provides TYPE_FP32");
  expect_err(check_type(&m, "output", "x", "TYPE_FOO", &io),
             TRITONSERVER_ERROR_INTERNAL,
             "unsupported datatype TYPE_FOO for output 'x' for model 'm'");
}

static void test_not_allowed_sorted(void **state) {
  int64_t d[] = {1};
  ort_io_t v[] = {io_of("b", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, d, 1),
                  io_of("a", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, d, 1)};
  ort_io_list_t l = {v, 2, 2};
  (void)state;
  expect_err(not_allowed("input", "zz", &l), TRITONSERVER_ERROR_INVALID_ARG,
             "unexpected inference input 'zz', allowed inputs are: a, b");
  expect_err(not_allowed("output", "q", &l), TRITONSERVER_ERROR_INVALID_ARG,
             "unexpected inference output 'q', allowed outputs are: a, b");
}

/* A model state for the auto-complete functions: config {} and a backend
 * with the given default-max-batch-size. */
static ort_model_t ac_model(ort_backend_t *b, int dflt, int mbs) {
  ort_model_t m = {.backend = b, .name = "m", .max_batch_size = mbs};
  b->default_max_batch_size = dflt;
  m.config = json_object();
  if (mbs > 0)
    json_object_set_new(m.config, "max_batch_size", json_integer(mbs));
  return m;
}

static void test_autocomplete_max_batch(void **state) {
  ort_backend_t b;
  int64_t batched[] = {-1, 3}, fixed[] = {2, 3};
  ort_io_t in = io_of("i", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, batched, 2);
  ort_io_t out = io_of("o", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, batched, 2);
  ort_io_list_t li = {&in, 1, 1}, lo = {&out, 1, 1};
  ort_model_t m = ac_model(&b, 4, 0);
  (void)state;
  assert_null(complete_max_batch(&m, &li, &lo));
  assert_int_equal(m.max_batch_size, 4);
  assert_int_equal(
      json_integer_value(json_object_get(m.config, "max_batch_size")), 4);
  assert_non_null(json_object_get(m.config, "dynamic_batching"));
  json_decref(m.config);

  /* A sequence batcher keeps its scheduler. */
  m = ac_model(&b, 4, 0);
  json_object_set_new(m.config, "sequence_batching", json_object());
  assert_null(complete_max_batch(&m, &li, &lo));
  assert_null(json_object_get(m.config, "dynamic_batching"));
  json_decref(m.config);

  /* default-max-batch-size 1: batching without a dynamic batcher. */
  m = ac_model(&b, 1, 0);
  assert_null(complete_max_batch(&m, &li, &lo));
  assert_int_equal(m.max_batch_size, 1);
  assert_null(json_object_get(m.config, "dynamic_batching"));
  json_decref(m.config);

  /* An output with a fixed first dim: no batching; a configured
   * max_batch_size is then an error. */
  out.dims = fixed;
  m = ac_model(&b, 4, 0);
  assert_null(complete_max_batch(&m, &li, &lo));
  assert_int_equal(m.max_batch_size, 0);
  json_decref(m.config);
  m = ac_model(&b, 4, 8);
  expect_err(complete_max_batch(&m, &li, &lo), TRITONSERVER_ERROR_INVALID_ARG,
             "autofill failed for model 'm': model does not support batching "
             "while non-zero max_batch_size is specified");
  json_decref(m.config);
}

static void test_autocomplete_io(void **state) {
  ort_backend_t b;
  int64_t batched[] = {-1, 3, 2}, scalar_row[] = {-1};
  ort_io_t v[] = {
      io_of("a", ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, batched, 3),
      io_of("b", ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING, scalar_row, 1),
      io_of("init", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, NULL, 0)};
  ort_io_list_t l = {v, 3, 2}; /* "init" is an overridable initializer */
  ort_model_t m = ac_model(&b, 4, 4);
  json_t *arr, *a, *bb;
  char *text;
  (void)state;
  assert_null(complete_io(&m, "input", &l));
  arr = json_object_get(m.config, "input");
  assert_int_equal(json_array_size(arr), 2);
  a = json_array_get(arr, 0);
  bb = json_array_get(arr, 1);
  text = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS);
  assert_string_equal(
      text, "{\"data_type\":\"TYPE_INT64\",\"dims\":[3,2],\"name\":\"a\"}");
  free(text);
  text = json_dumps(bb, JSON_COMPACT | JSON_SORT_KEYS);
  assert_string_equal(text,
                      "{\"data_type\":\"TYPE_STRING\",\"dims\":[1],"
                      "\"name\":\"b\",\"reshape\":{\"shape\":[]}}");
  free(text);
  json_decref(m.config);

  /* Without batching the first dim stays and no reshape is added. */
  m = ac_model(&b, 4, 0);
  assert_null(complete_io(&m, "output", &l));
  text = json_dumps(json_object_get(m.config, "output"),
                    JSON_COMPACT | JSON_SORT_KEYS);
  assert_string_equal(
      text,
      "[{\"data_type\":\"TYPE_INT64\",\"dims\":[-1,3,2],\"name\":\"a\"},"
      "{\"data_type\":\"TYPE_STRING\",\"dims\":[-1],\"name\":\"b\"}]");
  free(text);
  json_decref(m.config);
}

static json_t *config_with(const char *params_json) {
  json_t *c = json_object();
  json_object_set_new(c, "parameters", json_loads(params_json, 0, NULL));
  return c;
}

static void test_settings(void **state) {
  ort_settings_t s;
  json_t *c;
  (void)state;
  c = config_with(
      "{\"intra_op_thread_count\":{\"string_value\":\"3\"},"
      "\"execution_mode\":{\"string_value\":\"1\"},"
      "\"enable_mem_arena\":{\"string_value\":\"OFF\"},"
      "\"enable_mem_pattern\":{\"string_value\":\"true\"},"
      "\"share_session_between_instances\":{\"string_value\":\"1\"},"
      "\"memory.enable_memory_arena_shrinkage\":{\"string_value\":\"cpu:0\"},"
      "\"session.intra_op.allow_spinning\":{\"string_value\":\"0\"},"
      "\"other\":{\"string_value\":\"x\"}}");
  json_object_set_new(c, "optimization",
                      json_loads("{\"graph\":{\"level\":-1}}", 0, NULL));
  assert_null(ifd_ort_settings_read(c, &s));
  assert_int_equal(s.intra_op, 3);
  assert_int_equal(s.inter_op, 0);
  assert_int_equal(s.execution_mode, 1);
  assert_int_equal(s.mem_arena, 0);
  assert_int_equal(s.mem_pattern, 1);
  assert_int_equal(s.share_session, 1);
  assert_int_equal(s.graph_level, ORT_ENABLE_BASIC);
  assert_string_equal(s.arena_shrinkage, "cpu:0");
  assert_int_equal(s.n_session, 1);
  assert_string_equal(s.session_keys[0], "session.intra_op.allow_spinning");
  assert_string_equal(s.session_values[0], "0");
  ifd_ort_settings_free(&s);
  json_decref(c);

  /* Graph levels: 1 extended, 2 none, anything else all. */
  c = config_with("{}");
  json_object_set_new(c, "optimization",
                      json_loads("{\"graph\":{\"level\":\"2\"}}", 0, NULL));
  assert_null(ifd_ort_settings_read(c, &s));
  assert_int_equal(s.graph_level, ORT_DISABLE_ALL);
  assert_int_equal(s.mem_arena, -1);
  ifd_ort_settings_free(&s);
  json_decref(c);

  c = config_with("{\"execution_mode\":{\"string_value\":\"5\"}}");
  expect_err(ifd_ort_settings_read(c, &s), TRITONSERVER_ERROR_INVALID_ARG,
             "Expected values for execution_mode are 0 or 1 but got 5");
  json_decref(c);
  c = config_with("{\"intra_op_thread_count\":{\"string_value\":\"many\"}}");
  expect_err(ifd_ort_settings_read(c, &s), TRITONSERVER_ERROR_INVALID_ARG,
             "failed to convert 'many' to integral number");
  json_decref(c);
  c = config_with("{\"enable_mem_pattern\":{\"string_value\":\"yes\"}}");
  expect_err(ifd_ort_settings_read(c, &s), TRITONSERVER_ERROR_INVALID_ARG,
             "failed to convert 'yes' to boolean");
  json_decref(c);
}

static void test_split_strings(void **state) {
  char text[64];
  const char *out[3];
  TRITONSERVER_Error *e;
  /* "ab", "", "xyz" */
  const char good[] =
      "\x02\x00\x00\x00"
      "ab"
      "\x00\x00\x00\x00"
      "\x03\x00\x00\x00"
      "xyz";
  (void)state;
  assert_int_equal(
      split_strings(good, sizeof(good) - 1, 3, "in", text, out, &e), 3);
  assert_null(e);
  assert_string_equal(out[0], "ab");
  assert_string_equal(out[1], "");
  assert_string_equal(out[2], "xyz");
  /* Too few bytes for the third length. */
  assert_int_equal(split_strings(good, 10, 3, "in", text, out, &e), 2);
  expect_err(e, TRITONSERVER_ERROR_INVALID_ARG,
             "incomplete string length for inference input 'in'");
  /* A length past the end. */
  assert_int_equal(
      split_strings(good, sizeof(good) - 2, 3, "in", text, out, &e), 2);
  expect_err(e, TRITONSERVER_ERROR_INVALID_ARG,
             "incomplete string data for inference input 'in'");
  /* Bytes left over after the expected strings. */
  split_strings(good, sizeof(good) - 1, 2, "in", text, out, &e);
  expect_err(e, TRITONSERVER_ERROR_INVALID_ARG,
             "expected 2 strings for inference input 'in'");
}

static void test_write_strings(void **state) {
  const char content[] = "abxyz";
  size_t offs[] = {0, 2, 2};
  char out[32];
  (void)state;
  /* Elements 1..2 of {"ab", "", "xyz"}. */
  write_strings(out, content, offs, 5, 3, 1, 2);
  assert_memory_equal(out,
                      "\x00\x00\x00\x00"
                      "\x03\x00\x00\x00"
                      "xyz",
                      11);
}

static void test_group_of(void **state) {
  char *g;
  (void)state;
  g = group_of("m_0_1");
  assert_string_equal(g, "m_0");
  free(g);
  g = group_of("my_model_2_10");
  assert_string_equal(g, "my_model_2");
  free(g);
  g = group_of("name_x");
  assert_string_equal(g, "name_x");
  free(g);
  g = group_of("plain");
  assert_string_equal(g, "plain");
  free(g);
}

static void test_types(void **state) {
  (void)state;
  assert_int_equal(ifd_ort_to_triton(ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT),
                   TRITONSERVER_TYPE_FP32);
  assert_int_equal(ifd_ort_to_triton(ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING),
                   TRITONSERVER_TYPE_BYTES);
  assert_int_equal(ifd_ort_to_triton(ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16),
                   TRITONSERVER_TYPE_BF16);
  assert_int_equal(ifd_ort_to_triton(ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64),
                   TRITONSERVER_TYPE_INVALID);
  assert_int_equal(ifd_ort_from_triton(TRITONSERVER_TYPE_BOOL),
                   ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL);
  assert_int_equal(ifd_ort_from_config("TYPE_STRING"),
                   ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING);
  assert_int_equal(ifd_ort_from_config("FP32"),
                   ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED);
  assert_int_equal(ifd_ort_from_config(NULL),
                   ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED);
  assert_string_equal(ifd_ort_config_name(ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16),
                      "TYPE_UINT16");
  assert_string_equal(ifd_ort_onnx_name(ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE),
                      "DOUBLE");
  assert_string_equal(
      ifd_ort_onnx_name(ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128),
      "COMPLEX128");
  for (int t = 1; t <= 16; t++) {
    TRITONSERVER_DataType d = ifd_ort_to_triton((ONNXTensorElementDataType)t);
    if (d != TRITONSERVER_TYPE_INVALID)
      assert_int_equal(ifd_ort_from_triton(d), t);
  }
}

static void test_shape_str(void **state) {
  char buf[16];
  int64_t d[] = {-1, 12345, 3};
  (void)state;
  assert_string_equal(ifd_ort_shape_str(d, 3, buf, sizeof(buf)),
                      "[-1,12345,3]");
  assert_string_equal(ifd_ort_shape_str(NULL, 0, buf, sizeof(buf)), "[]");
  /* Truncated, never overrun. */
  assert_int_equal(strlen(ifd_ort_shape_str(d, 3, buf, 6)), 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_compare_dims_batching),
      cmocka_unit_test(test_compare_dims_exact),
      cmocka_unit_test(test_scalar),
      cmocka_unit_test(test_type_check),
      cmocka_unit_test(test_not_allowed_sorted),
      cmocka_unit_test(test_autocomplete_max_batch),
      cmocka_unit_test(test_autocomplete_io),
      cmocka_unit_test(test_settings),
      cmocka_unit_test(test_split_strings),
      cmocka_unit_test(test_write_strings),
      cmocka_unit_test(test_group_of),
      cmocka_unit_test(test_types),
      cmocka_unit_test(test_shape_str),
  };
  return cmocka_run_group_tests_name("ort_backend", tests, NULL, NULL);
}
