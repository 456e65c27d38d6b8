/*
 * test/unit/test_batch_io.c - Triton's ragged batching helpers shared by the
 * ONNX Runtime and PyTorch backends (backend_api/backends/common/batch_io.c):
 * the six batch input kinds' shapes and values, the configuration reader and
 * its errors, and BATCH_SCATTER_WITH_INPUT_SHAPE's per-request shapes.
 */
/* cmocka.h needs setjmp.h, stdarg.h and stddef.h before it. */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "backend_api/backends/common/batch_io.c"
#include "backend_api/backends/common/be_util.c"

/* Three requests of a [items, 2, k] source: 1x2x3, 2x2x1 and 1x2x2. */
static const int64_t s0[] = {1, 2, 3}, s1[] = {2, 2, 1}, s2[] = {1, 2, 2};
static const ifd_shape_ref_t three[] = {{s0, 3}, {s1, 3}, {s2, 3}};

static void check_kind(ifd_batch_kind_t kind, size_t want_nd,
                       const int64_t *want_shape, const int32_t *want,
                       size_t want_n) {
  int64_t shape[2];
  int32_t ints[16];
  float floats[16];
  size_t nd = ifd_batch_input_shape(kind, three, 3, shape);
  assert_int_equal(nd, want_nd);
  for (size_t d = 0; d < nd; d++) assert_int_equal(shape[d], want_shape[d]);
  assert_int_equal(ifd_batch_elements(shape, nd), (int64_t)want_n);
  memset(ints, 0x7f, sizeof(ints));
  ifd_batch_input_fill(kind, TRITONSERVER_TYPE_INT32, three, 3, ints,
                       (int64_t)want_n);
  for (size_t i = 0; i < want_n; i++) assert_int_equal(ints[i], want[i]);
  assert_int_equal(ints[want_n], 0x7f7f7f7f); /* nothing past count */
  ifd_batch_input_fill(kind, TRITONSERVER_TYPE_FP32, three, 3, floats,
                       (int64_t)want_n);
  for (size_t i = 0; i < want_n; i++) assert_true(floats[i] == (float)want[i]);
}

static void test_element_counts(void **state) {
  (void)state;
  check_kind(IFD_BATCH_ELEMENT_COUNT, 1, (int64_t[]){3}, (int32_t[]){6, 4, 4},
             3);
  check_kind(IFD_BATCH_ACCUMULATED_ELEMENT_COUNT, 1, (int64_t[]){3},
             (int32_t[]){6, 10, 14}, 3);
  check_kind(IFD_BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO, 1, (int64_t[]){4},
             (int32_t[]){0, 6, 10, 14}, 4);
}

static void test_max_element_count_as_shape(void **state) {
  (void)state;
  /* The shape is the information; the values are zero. */
  check_kind(IFD_BATCH_MAX_ELEMENT_COUNT_AS_SHAPE, 1, (int64_t[]){6},
             (int32_t[]){0, 0, 0, 0, 0, 0}, 6);
}

static void test_item_shapes(void **state) {
  (void)state;
  /* Four batch items (1 + 2 + 1), each [2, k] less its batch dim. */
  check_kind(IFD_BATCH_ITEM_SHAPE, 2, (int64_t[]){4, 2},
             (int32_t[]){2, 3, 2, 1, 2, 1, 2, 2}, 8);
  check_kind(IFD_BATCH_ITEM_SHAPE_FLATTEN, 1, (int64_t[]){8},
             (int32_t[]){2, 3, 2, 1, 2, 1, 2, 2}, 8);
}

static void test_one_request_and_scalars(void **state) {
  int64_t shape[2];
  int32_t v[2] = {-1, -1};
  const ifd_shape_ref_t scalar[] = {{NULL, 0}};
  (void)state;
  /* A scalar source has one element and no items. */
  assert_int_equal(
      ifd_batch_input_shape(IFD_BATCH_ELEMENT_COUNT, scalar, 1, shape), 1);
  assert_int_equal(shape[0], 1);
  ifd_batch_input_fill(IFD_BATCH_ELEMENT_COUNT, TRITONSERVER_TYPE_INT32, scalar,
                       1, v, 1);
  assert_int_equal(v[0], 1);
  assert_int_equal(
      ifd_batch_input_shape(IFD_BATCH_ITEM_SHAPE_FLATTEN, scalar, 1, shape), 1);
  assert_int_equal(shape[0], 0);
  assert_int_equal(
      ifd_batch_input_shape(IFD_BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO, NULL,
                            0, shape),
      1);
  assert_int_equal(shape[0], 1);
}

static void test_read_config(void **state) {
  json_error_t jerr;
  json_t *c = json_loads(
      "{\"batch_input\": [{\"kind\": \"BATCH_ITEM_SHAPE\", \"data_type\": "
      "\"TYPE_FP32\", \"source_input\": [\"RAGGED__0\"], \"target_name\": "
      "[\"SHAPE__1\", \"SHAPE__2\"]}, {\"kind\": \"BATCH_ELEMENT_COUNT\", "
      "\"data_type\": \"TYPE_INT32\", \"source_input\": [\"RAGGED__0\"], "
      "\"target_name\": [\"COUNT__3\"]}]}",
      0, &jerr);
  ifd_batch_input_t *b = NULL;
  size_t n = 0;
  (void)state;
  assert_non_null(c);
  assert_null(ifd_batch_inputs_read(c, "m", &b, &n));
  assert_int_equal(n, 2);
  assert_int_equal(b[0].kind, IFD_BATCH_ITEM_SHAPE);
  assert_int_equal(b[0].dtype, TRITONSERVER_TYPE_FP32);
  assert_string_equal(b[0].source, "RAGGED__0");
  assert_int_equal(b[0].n_targets, 2);
  assert_string_equal(b[0].targets[1], "SHAPE__2");
  assert_int_equal(b[1].kind, IFD_BATCH_ELEMENT_COUNT);
  assert_int_equal(b[1].dtype, TRITONSERVER_TYPE_INT32);
  ifd_batch_inputs_free(b, n);
  json_decref(c);

  /* None: nothing allocated. */
  c = json_loads("{}", 0, &jerr);
  assert_null(ifd_batch_inputs_read(c, "m", &b, &n));
  assert_null(b);
  assert_int_equal(n, 0);
  json_decref(c);
}

static void expect_err(const char *config, const char *want) {
  json_error_t jerr;
  json_t *c = json_loads(config, 0, &jerr);
  ifd_batch_input_t *b = NULL;
  size_t n = 0;
  TRITONSERVER_Error *e;
  assert_non_null(c);
  e = ifd_batch_inputs_read(c, "m", &b, &n);
  assert_non_null(e);
  if (strstr(TRITONSERVER_ErrorMessage(e), want) == NULL)
    fail_msg("message '%s' lacks '%s'", TRITONSERVER_ErrorMessage(e), want);
  assert_int_equal(TRITONSERVER_ErrorCode(e), TRITONSERVER_ERROR_INVALID_ARG);
  assert_null(b);
  TRITONSERVER_ErrorDelete(e);
  json_decref(c);
}

static void test_read_errors(void **state) {
  (void)state;
  expect_err(
      "{\"batch_input\": [{\"kind\": \"BATCH_NOPE\", "
      "\"source_input\": [\"x\"]}]}",
      "unexpected batch input kind 'BATCH_NOPE'");
  /* The second entry fails: the first one's strings are freed (ASan). */
  expect_err(
      "{\"batch_input\": [{\"kind\": \"BATCH_ELEMENT_COUNT\", "
      "\"source_input\": [\"x\"], \"target_name\": [\"t\"]}, "
      "{\"kind\": \"BATCH_ELEMENT_COUNT\", \"source_input\": []}]}",
      "batch input 1 of model 'm' names no source_input");
}

static void test_scatter_shape(void **state) {
  const int64_t dims[] = {-1, 3}, src_dims[] = {2, 5};
  const ifd_shape_ref_t src = {src_dims, 2};
  int64_t shape[8];
  (void)state;
  /* Batching: [-1] + [-1, 3], the -1s from the source's [2, 5]. */
  assert_int_equal(ifd_batch_scatter_shape(1, dims, 2, &src, shape, 8), 3);
  assert_int_equal(shape[0], 2);
  assert_int_equal(shape[1], 5);
  assert_int_equal(shape[2], 3);
  /* Not batching: [-1, 3]. */
  assert_int_equal(ifd_batch_scatter_shape(0, dims, 2, &src, shape, 8), 2);
  assert_int_equal(shape[0], 2);
  assert_int_equal(shape[1], 3);
  /* Past the source's rank a -1 is 0; cap bounds the writes. */
  const ifd_shape_ref_t one = {src_dims, 1};
  assert_int_equal(ifd_batch_scatter_shape(1, dims, 2, &one, shape, 8), 3);
  assert_int_equal(shape[1], 0);
  assert_int_equal(ifd_batch_scatter_shape(1, dims, 2, &src, shape, 2), 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_element_counts),
      cmocka_unit_test(test_max_element_count_as_shape),
      cmocka_unit_test(test_item_shapes),
      cmocka_unit_test(test_one_request_and_scalars),
      cmocka_unit_test(test_read_config),
      cmocka_unit_test(test_read_errors),
      cmocka_unit_test(test_scatter_shape),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
