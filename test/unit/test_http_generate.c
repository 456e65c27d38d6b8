/*
 * test/unit/test_http_generate.c - Triton's generate extension: the body to
 * request mapping and the response to flat JSON (frontend/http_generate_map.c),
 * and the exchange's handling of responses whose connection closed
 * (frontend/http_generate.c, included so its static callback is reachable).
 *
 * Covers inputs from scalars, one-element and nested arrays against the
 * model's shape (-1 read as 1), every message Triton gives for a wrong type
 * or shape and for a body that is not JSON, members that become parameters
 * (top level and the "parameters" object), BYTES inputs and outputs, the
 * output order (by name), one-element outputs as scalars and longer ones as
 * arrays, response parameters, and an orphaned exchange that frees its slot
 * with the request's FINAL response (ASan reports a leak otherwise).
 */
/* cmocka.h needs setjmp.h, stdarg.h and stddef.h before it. */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/http_generate.c"

/* ---- helpers ---------------------------------------------------------- */

static const int64_t dim_var[] = {-1};
static const int64_t dim_batch_var[] = {-1, -1};
static const int64_t dim_two[] = {2};

/* repeat_int32's inputs, identity_int32's (a batching model: -1 first) and
 * a fixed [2] FP32 one, a BYTES one and a BOOL one. */
static const ifd_tensor_info_t inputs[] = {
    {"IN", IFD_TYPE_INT32, dim_var, 1},
    {"DELAY", IFD_TYPE_UINT32, dim_var, 1},
    {"INPUT0", IFD_TYPE_INT32, dim_batch_var, 2},
    {"PAIR", IFD_TYPE_FP32, dim_two, 1},
    {"TEXT", IFD_TYPE_BYTES, dim_var, 1},
    {"FLAG", IFD_TYPE_BOOL, dim_var, 1},
};
#define N_INPUTS (sizeof(inputs) / sizeof(inputs[0]))

/* Decodes `body`; returns the code, the message in err. */
static int decode_body(ifd_request_t *req, const char *body,
                       ifd_errmsg_t *err) {
  ifd_errclear(err);
  return ifd__http_generate_decode(req, body, strlen(body), inputs, N_INPUTS,
                                   err);
}

static void expect_error(const char *body, const char *msg) {
  ifd_request_t *req = ifd_request_new(NULL);
  ifd_errmsg_t err;

  assert_non_null(req);
  assert_int_equal(decode_body(req, body, &err), IFD_EINVAL);
  assert_string_equal(err.text, msg);
  ifd_request_unref(req);
}

static const ifd_input_t *input_named(const ifd_request_t *req,
                                      const char *name) {
  uint32_t i;
  for (i = 0; i < req->n_inputs; i++)
    if (strcmp(req->inputs[i].name, name) == 0) return &req->inputs[i];
  return NULL;
}

static const ifd_param_t *param_named(const ifd_request_t *req,
                                      const char *key) {
  uint32_t i;
  for (i = 0; i < req->n_params; i++)
    if (strcmp(req->params[i].key, key) == 0) return &req->params[i];
  return NULL;
}

/* Adds an output of `n` elements of `dtype` copied from `data` (byte_size
 * bytes) to `resp`. */
static void add_output(ifd_response_t *resp, const char *name,
                       ifd_dtype_t dtype, int64_t n, const void *data,
                       size_t byte_size) {
  ifd_output_t *o;

  if (resp->outputs == NULL) {
    resp->outputs = ifd_pool_calloc(&resp->pool, 4, sizeof(*resp->outputs));
    assert_non_null(resp->outputs);
    resp->cap_outputs = 4;
  }
  assert_true(resp->n_outputs < resp->cap_outputs);
  o = &resp->outputs[resp->n_outputs++];
  o->name = ifd_pool_strndup(&resp->pool, name, strlen(name));
  o->dtype = dtype;
  o->shape = ifd_pool_calloc(&resp->pool, 1, sizeof(*o->shape));
  assert_non_null(o->shape);
  o->shape[0] = n;
  o->ndims = 1;
  o->buffer = malloc(byte_size + 1);
  assert_non_null(o->buffer);
  memcpy(o->buffer, data, byte_size);
  o->byte_size = byte_size;
}

static char *encode(const ifd_response_t *resp, int rc_want) {
  ifd_errmsg_t err;
  ifd_hbuf_t b;
  char *s;

  ifd_errclear(&err);
  ifd_hbuf_init(&b, 0);
  assert_int_equal(ifd__http_generate_encode(&b, resp, "m", 1, &err), rc_want);
  s = strndup(b.data + b.start, ifd_hbuf_size(&b));
  ifd_hbuf_free(&b);
  assert_non_null(s);
  return s;
}

/* ---- decoding --------------------------------------------------------- */

static void test_decode_scalars_and_arrays(void **state) {
  ifd_request_t *req = ifd_request_new(NULL);
  const ifd_input_t *in;
  ifd_errmsg_t err;
  float pair[2];
  int32_t v;

  (void)state;
  assert_non_null(req);
  assert_int_equal(decode_body(req,
                               "{\"IN\":[5],\"INPUT0\":[[7]],\"PAIR\":[1.5,-2],"
                               "\"FLAG\":true,\"DELAY\":3}",
                               &err),
                   0);
  assert_int_equal(req->n_inputs, 5);
  in = input_named(req, "IN");
  assert_non_null(in);
  assert_int_equal(in->ndims, 1);
  assert_int_equal(in->shape[0], 1);
  assert_int_equal(in->byte_size, 4);
  memcpy(&v, in->data, 4);
  assert_int_equal(v, 5);
  in = input_named(req, "INPUT0"); /* [-1, -1]: [1, 1] */
  assert_non_null(in);
  assert_int_equal(in->ndims, 2);
  assert_int_equal(in->shape[0], 1);
  assert_int_equal(in->shape[1], 1);
  memcpy(&v, in->data, 4);
  assert_int_equal(v, 7);
  in = input_named(req, "PAIR");
  assert_non_null(in);
  assert_int_equal(in->byte_size, 8);
  memcpy(pair, in->data, 8);
  assert_true(pair[0] == 1.5f && pair[1] == -2.0f);
  in = input_named(req, "FLAG");
  assert_non_null(in);
  assert_int_equal(((const unsigned char *)in->data)[0], 1);
  in = input_named(req, "DELAY");
  assert_non_null(in);
  memcpy(&v, in->data, 4);
  assert_int_equal(v, 3);
  assert_int_equal(req->n_params, 0);
  ifd_request_unref(req);
}

static void test_decode_bytes(void **state) {
  ifd_request_t *req = ifd_request_new(NULL);
  const ifd_input_t *in;
  ifd_errmsg_t err;
  uint32_t len;

  (void)state;
  assert_non_null(req);
  assert_int_equal(decode_body(req, "{\"TEXT\":\"a\\u0000b\"}", &err), 0);
  in = input_named(req, "TEXT");
  assert_non_null(in);
  assert_int_equal(in->byte_size, 7);
  memcpy(&len, in->data, 4);
  assert_int_equal(len, 3);
  assert_memory_equal((const char *)in->data + 4, "a\0b", 3);
  ifd_request_unref(req);
}

static void test_decode_parameters(void **state) {
  ifd_request_t *req = ifd_request_new(NULL);
  const ifd_param_t *p;
  ifd_errmsg_t err;

  (void)state;
  assert_non_null(req);
  assert_int_equal(
      decode_body(req,
                  "{\"IN\":1,\"color\":\"blue\",\"n\":3,\"stream\":false,"
                  "\"parameters\":{\"temperature\":0.5,\"top\":\"k\"}}",
                  &err),
      0);
  assert_int_equal(req->n_inputs, 1);
  assert_int_equal(req->n_params, 5);
  p = param_named(req, "color");
  assert_non_null(p);
  assert_int_equal(p->type, IFD_PARAM_STRING);
  assert_string_equal(p->v.s, "blue");
  p = param_named(req, "n");
  assert_non_null(p);
  assert_int_equal(p->type, IFD_PARAM_INT);
  assert_int_equal(p->v.i, 3);
  p = param_named(req, "stream");
  assert_non_null(p);
  assert_int_equal(p->type, IFD_PARAM_BOOL);
  assert_false(p->v.b);
  p = param_named(req, "temperature");
  assert_non_null(p);
  assert_int_equal(p->type, IFD_PARAM_DOUBLE);
  assert_true(p->v.d == 0.5);
  p = param_named(req, "top");
  assert_non_null(p);
  assert_string_equal(p->v.s, "k");
  ifd_request_unref(req);
}

static void test_decode_errors(void **state) {
  static const char shape[] =
      "Unable to parse 'data': Shape does not match true shape of 'data' "
      "field";

  (void)state;
  expect_error("{\"IN\":[1,2,3]}", shape);
  expect_error("{\"IN\":[]}", shape);
  expect_error("{\"INPUT0\":[[1],[2]]}", shape);
  expect_error("{\"PAIR\":1}", shape);
  expect_error("{\"IN\":\"x\"}",
               "Unable to parse 'data': attempt to access JSON "
               "non-signed-integer as signed-integer");
  expect_error("{\"IN\":1.5}",
               "Unable to parse 'data': attempt to access JSON "
               "non-signed-integer as signed-integer");
  expect_error("{\"DELAY\":-1}",
               "Unable to parse 'data': attempt to access JSON "
               "non-unsigned-integer as unsigned-integer");
  expect_error("{\"PAIR\":[1,\"a\"]}",
               "Unable to parse 'data': attempt to access JSON non-number as "
               "double");
  expect_error("{\"TEXT\":1}",
               "Unable to parse 'data': attempt to access JSON non-string as "
               "string");
  expect_error("{\"FLAG\":1}",
               "Unable to parse 'data': attempt to access JSON non-boolean as "
               "boolean");
  expect_error("{\"IN\":3000000000}",
               "Unable to parse 'data': 3000000000 is out of range for INT32");
  expect_error("{not json",
               "failed to parse the request JSON buffer: Missing a name for "
               "object member. at 1");
  expect_error("",
               "failed to parse the request JSON buffer: The document is "
               "empty. at 0");
  expect_error("{\"IN\":1} x",
               "failed to parse the request JSON buffer: The document root "
               "must not be followed by other values. at 9");
  expect_error("[1]",
               "failed to parse the request JSON buffer: the generate request "
               "must be a JSON object");
  expect_error("{\"IN\":1,\"triton_enable_empty_final_response\":true}",
               "parameter keys starting with 'triton_' are reserved for Triton "
               "usage and should not be specified.");
  expect_error("{\"IN\":1,\"parameters\":{\"triton_x\":1}}",
               "parameter keys starting with 'triton_' are reserved for Triton "
               "usage and should not be specified.");
  expect_error("{\"IN\":1,\"x\":null}",
               "Unable to parse parameter 'x': expected a string, a number or "
               "a boolean");
  expect_error("{\"IN\":1,\"parameters\":{\"x\":[1]}}",
               "Unable to parse parameter 'x': expected a string, a number or "
               "a boolean");
}

/* ---- encoding --------------------------------------------------------- */

static void test_encode_flat(void **state) {
  ifd_request_t *req = ifd_request_new(NULL);
  ifd_response_t *resp;
  int32_t out = 5, many[3] = {1, -2, 3};
  uint32_t idx = 0;
  char *s;

  (void)state;
  assert_non_null(req);
  resp = ifd_response_new(req);
  assert_non_null(resp);
  /* Sent OUT first: generate lists IDX first (by name). */
  add_output(resp, "OUT", IFD_TYPE_INT32, 1, &out, 4);
  add_output(resp, "IDX", IFD_TYPE_UINT32, 1, &idx, 4);
  add_output(resp, "MANY", IFD_TYPE_INT32, 3, many, 12);
  add_output(resp, "TXT", IFD_TYPE_BYTES, 1, "\2\0\0\0hi", 6);
  resp->params = calloc(2, sizeof(*resp->params));
  assert_non_null(resp->params);
  resp->n_params = resp->cap_params = 2;
  resp->params[0] = (ifd_param_t){.key = "p0",
                                  .type = IFD_PARAM_STRING,
                                  .v.s = "an example string parameter"};
  resp->params[1] =
      (ifd_param_t){.key = "p1", .type = IFD_PARAM_DOUBLE, .v.d = 123.123};
  s = encode(resp, 0);
  assert_string_equal(s,
                      "{\"IDX\":0,\"MANY\":[1,-2,3],\"OUT\":5,\"TXT\":\"hi\","
                      "\"model_name\":\"m\",\"model_version\":\"1\","
                      "\"p0\":\"an example string parameter\","
                      "\"p1\":123.123}");
  free(s);
  ifd_response_free(resp);
  ifd_request_unref(req);
}

static void test_encode_no_outputs_and_bad_output(void **state) {
  ifd_request_t *req = ifd_request_new(NULL);
  ifd_response_t *resp;
  int32_t v = 1;
  char *s;

  (void)state;
  assert_non_null(req);
  resp = ifd_response_new(req);
  assert_non_null(resp);
  s = encode(resp, 0);
  assert_string_equal(s, "{\"model_name\":\"m\",\"model_version\":\"1\"}");
  free(s);
  add_output(resp, "BAD", IFD_TYPE_INT32, 2, &v, 4); /* 4 bytes for 2 */
  free(encode(resp, IFD_EINTERNAL));
  ifd_response_free(resp);
  ifd_request_unref(req);
}

/* ---- the exchange ------------------------------------------------------- */

/* A generate_stream exchange whose connection closed: its responses are
 * freed as they come and the FINAL one frees the slot, request included. */
static void test_orphan_frees_with_final(void **state) {
  ifd_request_t *req = ifd_request_new(NULL);
  ifd_http_slot_t *s = calloc(1, sizeof(*s));
  ifd_response_t *resp;
  int stream;

  (void)state;
  for (stream = 0; stream < 2; stream++) {
    if (stream == 1) {
      req = ifd_request_new(NULL);
      s = calloc(1, sizeof(*s));
    }
    assert_non_null(req);
    assert_non_null(s);
    s->t.iov = s->t.iov_inline;
    s->t.pieces_tail = &s->t.pieces;
    s->req = req;
    s->gen = ifd_pool_calloc(&req->pool, 1, sizeof(*s->gen));
    assert_non_null(s->gen);
    s->gen->stream = stream;
    req->model_name = "m";
    req->on_response = on_gen_response;
    req->cb_arg = s;
    resp = ifd_response_new(req);
    assert_non_null(resp);
    on_gen_response(resp, s); /* not final */
    resp = ifd_response_new(req);
    assert_non_null(resp);
    resp->flags = IFD_RESPONSE_FINAL;
    resp->empty = 1;
    on_gen_response(resp, s); /* frees s and the request */
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decode_scalars_and_arrays),
      cmocka_unit_test(test_decode_bytes),
      cmocka_unit_test(test_decode_parameters),
      cmocka_unit_test(test_decode_errors),
      cmocka_unit_test(test_encode_flat),
      cmocka_unit_test(test_encode_no_outputs_and_bad_output),
      cmocka_unit_test(test_orphan_frees_with_final),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
