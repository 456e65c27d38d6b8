/*
 * test/unit/test_grpc_infer.c - the gRPC inference codec
 * (frontend/grpc_infer*.c): ModelInferRequest bytes into a request (raw inputs
 * pointing into the message, typed contents converted per datatype, parameters,
 * requested outputs, Triton's raw/typed rules, malformed and truncated wire
 * bytes, unknown fields), and responses into iovec pieces that parse back as
 * ModelInferResponse / ModelStreamInferResponse with the output buffers
 * referenced, not copied. No transport and no server are involved.
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

#include "core/infer.h"
#include "frontend/grpc_infer.h"
#include "proto/grpc_service.pb-c.h"

/* ---- building requests --------------------------------------------------- */

typedef Inference__ModelInferRequest__InferInputTensor input_pb;
typedef Inference__ModelInferRequest__ParametersEntry param_pb;

/* Packs a protobuf-c message into a malloc'd buffer. */
static uint8_t *pack(const ProtobufCMessage *m, size_t *len) {
  *len = protobuf_c_message_get_packed_size(m);
  uint8_t *buf = malloc(*len + 1);
  assert_non_null(buf);
  assert_int_equal(protobuf_c_message_pack(m, buf), *len);
  return buf;
}

static void input_init(input_pb *t, const char *name, const char *dt,
                       int64_t *shape, size_t n_shape) {
  input_pb init = INFERENCE__MODEL_INFER_REQUEST__INFER_INPUT_TENSOR__INIT;
  *t = init;
  t->name = (char *)name;
  t->datatype = (char *)dt;
  t->shape = shape;
  t->n_shape = n_shape;
}

/* Decodes `buf` into a fresh request that owns it. */
static int decode(uint8_t *buf, size_t len, ifd_request_t **out,
                  ifd_errmsg_t *err) {
  ifd_request_t *req = ifd_request_new(NULL);
  assert_non_null(req);
  req->body = buf;
  ifd_errclear(err);
  *out = req;
  return ifd__grpc_infer_decode(req, buf, len, err);
}

static int decode_bytes(const void *bytes, size_t len, ifd_errmsg_t *err) {
  ifd_request_t *req;
  uint8_t *buf = malloc(len + 1);
  int rc;
  assert_non_null(buf);
  memcpy(buf, bytes, len);
  rc = decode(buf, len, &req, err);
  ifd_request_unref(req);
  return rc;
}

static int within(const void *p, size_t n, const uint8_t *buf, size_t len) {
  const uint8_t *q = p;
  return q >= buf && q + n <= buf + len;
}

/* ---- decoding ------------------------------------------------------------ */

static void test_raw_inputs_point_into_message(void **state) {
  Inference__ModelInferRequest m = INFERENCE__MODEL_INFER_REQUEST__INIT;
  input_pb a, b, *ins[2] = {&a, &b};
  int64_t sa[2] = {2, 2}, sb[1] = {3};
  float fa[4] = {1.5f, -2, 3, 4};
  int32_t ib[3] = {7, -8, 9};
  ProtobufCBinaryData raw[2] = {{sizeof(fa), (uint8_t *)fa},
                                {sizeof(ib), (uint8_t *)ib}};
  ifd_request_t *req;
  ifd_errmsg_t err;
  uint8_t *buf;
  size_t len;

  (void)state;
  input_init(&a, "A", "FP32", sa, 2);
  input_init(&b, "B", "INT32", sb, 1);
  m.model_name = "simple";
  m.model_version = "3";
  m.id = "req-1";
  m.n_inputs = 2;
  m.inputs = ins;
  m.n_raw_input_contents = 2;
  m.raw_input_contents = raw;
  buf = pack(&m.base, &len);
  assert_int_equal(decode(buf, len, &req, &err), 0);
  assert_string_equal(req->model_name, "simple");
  assert_int_equal(req->model_version, 3);
  assert_string_equal(req->id, "req-1");
  assert_int_equal(req->n_inputs, 2);
  assert_string_equal(req->inputs[0].name, "A");
  assert_int_equal(req->inputs[0].dtype, IFD_TYPE_FP32);
  assert_int_equal(req->inputs[0].ndims, 2);
  assert_int_equal(req->inputs[0].shape[1], 2);
  assert_int_equal(req->inputs[0].byte_size, sizeof(fa));
  assert_true(within(req->inputs[0].data, sizeof(fa), buf, len));
  assert_memory_equal(req->inputs[0].data, fa, sizeof(fa));
  assert_int_equal(req->inputs[1].dtype, IFD_TYPE_INT32);
  assert_int_equal(req->inputs[1].byte_size, sizeof(ib));
  assert_true(within(req->inputs[1].data, sizeof(ib), buf, len));
  assert_memory_equal(req->inputs[1].data, ib, sizeof(ib));
  assert_int_equal(req->n_outputs, 0);
  ifd_request_unref(req);
}

static void test_typed_contents(void **state) {
  Inference__ModelInferRequest m = INFERENCE__MODEL_INFER_REQUEST__INIT;
  Inference__InferTensorContents c[8];
  input_pb t[8], *ins[8];
  int64_t s2[1] = {2}, s3[1] = {3};
  float f32[2] = {0.25f, -1};
  int32_t i32[3] = {1, -2, 2147483647};
  int64_t i64[2] = {-5, 1LL << 40};
  protobuf_c_boolean bl[3] = {1, 0, 1};
  ProtobufCBinaryData by[2] = {{3, (uint8_t *)"abc"}, {0, NULL}};
  int32_t i8[3] = {-128, 0, 127};
  uint32_t u16[2] = {65535, 1};
  double f64[2] = {1e300, -0.5};
  const uint8_t want_bytes[] = {3, 0, 0, 0, 'a', 'b', 'c', 0, 0, 0, 0};
  const int8_t want_i8[3] = {-128, 0, 127};
  const uint16_t want_u16[2] = {65535, 1};
  const uint8_t want_bool[3] = {1, 0, 1};
  ifd_request_t *req;
  ifd_errmsg_t err;
  uint8_t *buf;
  size_t len, i;

  (void)state;
  for (i = 0; i < 8; i++) {
    Inference__InferTensorContents init =
        INFERENCE__INFER_TENSOR_CONTENTS__INIT;
    c[i] = init;
    ins[i] = &t[i];
  }
  input_init(&t[0], "f32", "FP32", s2, 1);
  c[0].n_fp32_contents = 2, c[0].fp32_contents = f32;
  input_init(&t[1], "i32", "INT32", s3, 1);
  c[1].n_int_contents = 3, c[1].int_contents = i32;
  input_init(&t[2], "i64", "INT64", s2, 1);
  c[2].n_int64_contents = 2, c[2].int64_contents = i64;
  input_init(&t[3], "bool", "BOOL", s3, 1);
  c[3].n_bool_contents = 3, c[3].bool_contents = bl;
  input_init(&t[4], "bytes", "BYTES", s2, 1);
  c[4].n_bytes_contents = 2, c[4].bytes_contents = by;
  input_init(&t[5], "i8", "INT8", s3, 1);
  c[5].n_int_contents = 3, c[5].int_contents = i8;
  input_init(&t[6], "u16", "UINT16", s2, 1);
  c[6].n_uint_contents = 2, c[6].uint_contents = u16;
  input_init(&t[7], "f64", "FP64", s2, 1);
  c[7].n_fp64_contents = 2, c[7].fp64_contents = f64;
  for (i = 0; i < 8; i++) t[i].contents = &c[i];
  m.model_name = "m";
  m.n_inputs = 8;
  m.inputs = ins;
  buf = pack(&m.base, &len);
  assert_int_equal(decode(buf, len, &req, &err), 0);
  assert_int_equal(req->n_inputs, 8);
  assert_int_equal(req->model_version, -1);
  assert_int_equal(req->inputs[0].byte_size, 8);
  assert_memory_equal(req->inputs[0].data, f32, 8);
  assert_int_equal(req->inputs[1].byte_size, 12);
  assert_memory_equal(req->inputs[1].data, i32, 12);
  assert_int_equal(req->inputs[2].byte_size, 16);
  assert_memory_equal(req->inputs[2].data, i64, 16);
  assert_int_equal(req->inputs[3].byte_size, 3);
  assert_memory_equal(req->inputs[3].data, want_bool, 3);
  assert_int_equal(req->inputs[4].dtype, IFD_TYPE_BYTES);
  assert_int_equal(req->inputs[4].byte_size, sizeof(want_bytes));
  assert_memory_equal(req->inputs[4].data, want_bytes, sizeof(want_bytes));
  assert_int_equal(req->inputs[5].byte_size, 3);
  assert_memory_equal(req->inputs[5].data, want_i8, 3);
  assert_int_equal(req->inputs[6].byte_size, 4);
  assert_memory_equal(req->inputs[6].data, want_u16, 4);
  assert_int_equal(req->inputs[7].byte_size, 16);
  assert_memory_equal(req->inputs[7].data, f64, 16);
  /* Converted copies live in the pool, not in the message. */
  assert_false(within(req->inputs[0].data, 8, buf, len));
  ifd_request_unref(req);
}

/* One typed input; returns decode's code with the message in `err`. */
static int decode_one_typed(const char *dt, int64_t dim,
                            Inference__InferTensorContents *c, int with_raw,
                            ifd_errmsg_t *err) {
  Inference__ModelInferRequest m = INFERENCE__MODEL_INFER_REQUEST__INIT;
  input_pb t, *ins[1] = {&t};
  int64_t shape[1] = {dim};
  uint8_t raw_bytes[8] = {0};
  ProtobufCBinaryData raw = {sizeof(raw_bytes), raw_bytes};
  ifd_request_t *req;
  uint8_t *buf;
  size_t len;
  int rc;

  input_init(&t, "x", dt, shape, 1);
  t.contents = c;
  m.model_name = "m";
  m.n_inputs = 1;
  m.inputs = ins;
  if (with_raw) {
    m.n_raw_input_contents = 1;
    m.raw_input_contents = &raw;
  }
  buf = pack(&m.base, &len);
  rc = decode(buf, len, &req, err);
  ifd_request_unref(req);
  return rc;
}

static void test_typed_errors(void **state) {
  Inference__InferTensorContents c = INFERENCE__INFER_TENSOR_CONTENTS__INIT;
  int32_t big[2] = {128, 0};
  float f[2] = {1, 2};
  ifd_errmsg_t err;

  (void)state;
  /* Mixing raw and typed. */
  c.n_fp32_contents = 2, c.fp32_contents = f;
  assert_int_equal(decode_one_typed("FP32", 2, &c, 1, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "contents field must not be specified"));
  /* Element count does not match the shape. */
  assert_int_equal(decode_one_typed("FP32", 3, &c, 0, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "fp32_contents"));
  /* Wrong field for the datatype: nothing in int_contents. */
  assert_int_equal(decode_one_typed("INT32", 2, &c, 0, &err), IFD_EINVAL);
  /* FP16 has no typed form. */
  assert_int_equal(decode_one_typed("FP16", 2, &c, 0, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "raw_input_contents"));
  /* Out of range for INT8. */
  c.n_fp32_contents = 0;
  c.n_int_contents = 2, c.int_contents = big;
  assert_int_equal(decode_one_typed("INT8", 2, &c, 0, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "out of range"));
  /* Unknown datatype. */
  assert_int_equal(decode_one_typed("FP8", 2, &c, 0, &err), IFD_EINVAL);
  /* No contents at all and a non-empty shape. */
  assert_int_equal(decode_one_typed("INT32", 2, NULL, 0, &err), IFD_EINVAL);
  /* No contents and an empty tensor: fine. */
  assert_int_equal(decode_one_typed("INT32", 0, NULL, 0, &err), 0);
}

static void test_raw_count_mismatch(void **state) {
  Inference__ModelInferRequest m = INFERENCE__MODEL_INFER_REQUEST__INIT;
  input_pb a, b, *ins[2] = {&a, &b};
  int64_t s[1] = {1};
  uint8_t four[4] = {0};
  ProtobufCBinaryData raw = {4, four};
  ifd_request_t *req;
  ifd_errmsg_t err;
  uint8_t *buf;
  size_t len;

  (void)state;
  input_init(&a, "a", "INT32", s, 1);
  input_init(&b, "b", "INT32", s, 1);
  m.model_name = "m";
  m.n_inputs = 2;
  m.inputs = ins;
  m.n_raw_input_contents = 1;
  m.raw_input_contents = &raw;
  buf = pack(&m.base, &len);
  assert_int_equal(decode(buf, len, &req, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "raw_input_contents"));
  ifd_request_unref(req);
}

static void test_malformed_bytes(void **state) {
  static const struct {
    const char *bytes;
    size_t len;
  } bad[] = {
      {"\x80", 1},     /* tag varint truncated */
      {"\x0a", 1},     /* length missing */
      {"\x0a\x85", 2}, /* length varint truncated */
      {"\x0a\x05"
       "ab",
       4},                     /* length past the end */
      {"\x08\x01", 2},         /* model_name as a varint */
      {"\x2a\x02\xff\xff", 4}, /* input: garbage inside */
      {"\x22\x02\x0a\x05", 4}, /* parameter entry truncated */
      {"\x32\x01\x80", 3},     /* requested output: bad varint */
      {"\x00\x00", 2},         /* field number 0 */
      {"\x0b\x0c", 2},         /* a group */
      {"\xf8\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11}, /* 11-byte tag */
      {"\x08", 1},             /* unknown-shaped varint tag, no value */
      {"\x99\x06\x01\x02", 4}, /* unknown fixed64 truncated */
  };
  ifd_errmsg_t err;
  size_t i;

  (void)state;
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    int rc = decode_bytes(bad[i].bytes, bad[i].len, &err);
    if (rc != IFD_EINVAL) fail_msg("case %zu: got %d", i, rc);
    assert_string_equal(err.text, "failed to parse ModelInferRequest");
  }
  /* The empty message is a valid (empty) request. */
  assert_int_equal(decode_bytes("", 0, &err), 0);
}

static void test_unknown_fields_skipped(void **state) {
  Inference__ModelInferRequest m = INFERENCE__MODEL_INFER_REQUEST__INIT;
  uint8_t *buf, *all;
  /* field 99 varint, field 100 fixed64, field 101 bytes, field 102 fixed32 */
  static const uint8_t extra[] = {
      0x98, 0x06, 0x96, 0x01, 0xa1, 0x06, 1,    2,    3, 4, 5, 6, 7,
      8,    0xaa, 0x06, 0x02, 'h',  'i',  0xb5, 0x06, 9, 9, 9, 9};
  ifd_request_t *req;
  ifd_errmsg_t err;
  size_t len;

  (void)state;
  m.model_name = "skip";
  m.id = "x";
  buf = pack(&m.base, &len);
  all = malloc(len + sizeof(extra));
  assert_non_null(all);
  memcpy(all, extra, sizeof(extra));
  memcpy(all + sizeof(extra), buf, len);
  free(buf);
  assert_int_equal(decode(all, len + sizeof(extra), &req, &err), 0);
  assert_string_equal(req->model_name, "skip");
  assert_string_equal(req->id, "x");
  ifd_request_unref(req);
}

static void set_int(Inference__InferParameter *v, int64_t x) {
  v->parameter_choice_case =
      INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM;
  v->int64_param = x;
}

static void set_bool(Inference__InferParameter *v, int b) {
  v->parameter_choice_case =
      INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM;
  v->bool_param = b;
}

static void test_parameters_and_outputs(void **state) {
  Inference__ModelInferRequest m = INFERENCE__MODEL_INFER_REQUEST__INIT;
  Inference__InferParameter v[8];
  param_pb e[8], *pe[8];
  Inference__ModelInferRequest__InferRequestedOutputTensor o[2], *po[2];
  Inference__ModelInferRequest__InferRequestedOutputTensor__ParametersEntry oe,
      *poe[1] = {&oe};
  Inference__InferParameter ov;
  static const char *keys[8] = {
      "sequence_id", "sequence_start",     "sequence_end", "priority",
      "timeout",     "binary_data_output", "custom_str",   "custom_double"};
  ifd_request_t *req;
  ifd_errmsg_t err;
  uint8_t *buf;
  size_t len, i;

  (void)state;
  for (i = 0; i < 8; i++) {
    Inference__InferParameter vi = INFERENCE__INFER_PARAMETER__INIT;
    param_pb ei = INFERENCE__MODEL_INFER_REQUEST__PARAMETERS_ENTRY__INIT;
    v[i] = vi;
    e[i] = ei;
    e[i].key = (char *)keys[i];
    e[i].value = &v[i];
    pe[i] = &e[i];
  }
  set_int(&v[0], 42);
  set_bool(&v[1], 1);
  set_bool(&v[2], 0);
  v[3].parameter_choice_case =
      INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_UINT64_PARAM;
  v[3].uint64_param = 3;
  set_int(&v[4], 5000);
  set_bool(&v[5], 1);
  v[6].parameter_choice_case =
      INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM;
  v[6].string_param = "hello";
  v[7].parameter_choice_case =
      INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_DOUBLE_PARAM;
  v[7].double_param = 0.5;
  for (i = 0; i < 2; i++) {
    Inference__ModelInferRequest__InferRequestedOutputTensor oi =
        INFERENCE__MODEL_INFER_REQUEST__INFER_REQUESTED_OUTPUT_TENSOR__INIT;
    o[i] = oi;
    po[i] = &o[i];
  }
  {
    Inference__InferParameter vi = INFERENCE__INFER_PARAMETER__INIT;
    Inference__ModelInferRequest__InferRequestedOutputTensor__ParametersEntry ei =
        INFERENCE__MODEL_INFER_REQUEST__INFER_REQUESTED_OUTPUT_TENSOR__PARAMETERS_ENTRY__INIT;
    ov = vi;
    oe = ei;
  }
  set_int(&ov, 3);
  oe.key = "classification";
  oe.value = &ov;
  o[0].name = "OUT1";
  o[1].name = "OUT0";
  o[1].n_parameters = 1;
  o[1].parameters = poe;
  m.model_name = "m";
  m.n_parameters = 8;
  m.parameters = pe;
  m.n_outputs = 2;
  m.outputs = po;
  buf = pack(&m.base, &len);
  assert_int_equal(decode(buf, len, &req, &err), 0);
  assert_int_equal(req->correlation_id, 42);
  assert_null(req->correlation_id_str);
  assert_int_equal(req->flags, IFD_REQUEST_FLAG_SEQUENCE_START);
  assert_int_equal(req->priority, 3);
  assert_int_equal(req->timeout_us, 5000);
  assert_int_equal(req->n_params, 2);
  assert_string_equal(req->params[0].key, "custom_str");
  assert_int_equal(req->params[0].type, IFD_PARAM_STRING);
  assert_string_equal(req->params[0].v.s, "hello");
  assert_int_equal(req->params[1].type, IFD_PARAM_DOUBLE);
  assert_true(req->params[1].v.d == 0.5);
  assert_int_equal(req->n_outputs, 2);
  assert_string_equal(req->outputs[0].name, "OUT1");
  assert_int_equal(req->outputs[0].class_count, 0);
  assert_string_equal(req->outputs[1].name, "OUT0");
  assert_int_equal(req->outputs[1].class_count, 3);
  ifd_request_unref(req);

  /* A string sequence id; a bad sequence_start type. */
  v[0].parameter_choice_case =
      INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM;
  v[0].string_param = "seq-a";
  m.n_parameters = 1;
  m.n_outputs = 0;
  buf = pack(&m.base, &len);
  assert_int_equal(decode(buf, len, &req, &err), 0);
  assert_string_equal(req->correlation_id_str, "seq-a");
  ifd_request_unref(req);
  set_int(&v[1], 1);
  m.parameters = &pe[1];
  buf = pack(&m.base, &len);
  assert_int_equal(decode(buf, len, &req, &err), IFD_EINVAL);
  assert_string_equal(err.text,
                      "invalid value type for 'sequence_start' parameter, "
                      "expected bool_param.");
  ifd_request_unref(req);
  /* Triton takes sequence_id as int64_param or string_param, never as
   * uint64_param. */
  v[0].parameter_choice_case =
      INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_UINT64_PARAM;
  v[0].uint64_param = 7;
  m.parameters = &pe[0];
  buf = pack(&m.base, &len);
  assert_int_equal(decode(buf, len, &req, &err), IFD_EINVAL);
  assert_string_equal(err.text,
                      "invalid value type for 'sequence_id' parameter, "
                      "expected int64_param or string_param.");
  ifd_request_unref(req);
}

static void test_bad_version(void **state) {
  Inference__ModelInferRequest m = INFERENCE__MODEL_INFER_REQUEST__INIT;
  ifd_request_t *req;
  ifd_errmsg_t err;
  uint8_t *buf;
  size_t len;

  (void)state;
  m.model_name = "m";
  m.model_version = "abc";
  buf = pack(&m.base, &len);
  assert_int_equal(decode(buf, len, &req, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text, "'abc'"));
  ifd_request_unref(req);
}

/* ---- decoding: shared-memory parameters ---------------------------------- */

typedef Inference__ModelInferRequest__InferInputTensor__ParametersEntry
    in_param_pb;
typedef Inference__ModelInferRequest__InferRequestedOutputTensor out_pb;
typedef Inference__ModelInferRequest__InferRequestedOutputTensor__ParametersEntry
    out_param_pb;

/* Decodes a request for model "m" with input "x" (INT32 [4]) carrying the
 * `n` parameters given (key, value), typed contents when `contents`, and
 * an output "y" with parameters `on`/`okeys`/`ovals`. Returns the code. */
static int decode_shm(size_t n, const char *const *keys,
                      const Inference__InferParameter *vals, int contents,
                      size_t on, const char *const *okeys,
                      const Inference__InferParameter *ovals,
                      ifd_errmsg_t *err) {
  Inference__ModelInferRequest m = INFERENCE__MODEL_INFER_REQUEST__INIT;
  Inference__InferTensorContents c = INFERENCE__INFER_TENSOR_CONTENTS__INIT;
  in_param_pb e[4], *pe[4];
  out_param_pb oe[4], *poe[4];
  out_pb
      o = INFERENCE__MODEL_INFER_REQUEST__INFER_REQUESTED_OUTPUT_TENSOR__INIT,
      *po[1] = {&o};
  input_pb t, *ins[1] = {&t};
  int64_t shape[1] = {4};
  int32_t four[4] = {1, 2, 3, 4};
  ifd_request_t *req;
  uint8_t *buf;
  size_t len, i;
  int rc;

  for (i = 0; i < n; i++) {
    in_param_pb ei =
        INFERENCE__MODEL_INFER_REQUEST__INFER_INPUT_TENSOR__PARAMETERS_ENTRY__INIT;
    e[i] = ei;
    e[i].key = (char *)keys[i];
    e[i].value = (Inference__InferParameter *)&vals[i];
    pe[i] = &e[i];
  }
  for (i = 0; i < on; i++) {
    out_param_pb ei =
        INFERENCE__MODEL_INFER_REQUEST__INFER_REQUESTED_OUTPUT_TENSOR__PARAMETERS_ENTRY__INIT;
    oe[i] = ei;
    oe[i].key = (char *)okeys[i];
    oe[i].value = (Inference__InferParameter *)&ovals[i];
    poe[i] = &oe[i];
  }
  input_init(&t, "x", "INT32", shape, 1);
  t.n_parameters = n;
  t.parameters = pe;
  if (contents) {
    c.n_int_contents = 4;
    c.int_contents = four;
    t.contents = &c;
  }
  o.name = "y";
  o.n_parameters = on;
  o.parameters = poe;
  m.model_name = "m";
  m.n_inputs = 1;
  m.inputs = ins;
  m.n_outputs = 1;
  m.outputs = po;
  buf = pack(&m.base, &len);
  rc = decode(buf, len, &req, err);
  ifd_request_unref(req);
  return rc;
}

static void set_str(Inference__InferParameter *v, const char *s) {
  v->parameter_choice_case =
      INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM;
  v->string_param = (char *)s;
}

/* Triton's rules for shared_memory_* parameters, checked before any region
 * is looked up (no server here: a lookup would need one). */
static void test_shm_parameter_rules(void **state) {
  static const char *const region_size[2] = {"shared_memory_region",
                                             "shared_memory_byte_size"};
  static const char *const all3[3] = {"shared_memory_region",
                                      "shared_memory_byte_size",
                                      "shared_memory_offset"};
  static const char *const cls[1] = {"classification"};
  Inference__InferParameter v[3], ov[3];
  ifd_errmsg_t err;
  size_t i;

  (void)state;
  for (i = 0; i < 3; i++) {
    Inference__InferParameter vi = INFERENCE__INFER_PARAMETER__INIT;
    v[i] = ov[i] = vi;
  }
  /* No byte size with the region. */
  set_str(&v[0], "r");
  assert_int_equal(decode_shm(1, region_size, v, 0, 0, NULL, NULL, &err),
                   IFD_EINVAL);
  assert_string_equal(err.text,
                      "'shared_memory_byte_size' must be specified along "
                      "with 'shared_memory_region' parameter for tensor 'x'");
  /* A byte size, or an offset, without the region. */
  set_int(&v[1], 16);
  assert_int_equal(
      decode_shm(1, &region_size[1], &v[1], 0, 0, NULL, NULL, &err),
      IFD_EINVAL);
  assert_string_equal(err.text,
                      "'shared_memory_byte_size' can not be specified "
                      "without 'shared_memory_region' parameter for tensor "
                      "'x'");
  set_int(&v[2], 0);
  assert_int_equal(decode_shm(1, &all3[2], &v[2], 0, 0, NULL, NULL, &err),
                   IFD_EINVAL);
  assert_string_equal(err.text,
                      "'shared_memory_offset' can not be specified without "
                      "'shared_memory_region' parameter for tensor 'x'");
  /* Wrong value types. */
  set_int(&v[0], 1);
  assert_int_equal(decode_shm(2, region_size, v, 0, 0, NULL, NULL, &err),
                   IFD_EINVAL);
  assert_string_equal(err.text,
                      "invalid value type for 'shared_memory_region' "
                      "parameter for tensor 'x', expected string_param.");
  set_str(&v[0], "r");
  set_bool(&v[1], 1);
  assert_int_equal(decode_shm(2, region_size, v, 0, 0, NULL, NULL, &err),
                   IFD_EINVAL);
  assert_string_equal(err.text,
                      "invalid value type for 'shared_memory_byte_size' "
                      "parameter for tensor 'x', expected int64_param.");
  set_int(&v[1], 16);
  v[2].parameter_choice_case =
      INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_UINT64_PARAM;
  v[2].uint64_param = 0;
  assert_int_equal(decode_shm(3, all3, v, 0, 0, NULL, NULL, &err), IFD_EINVAL);
  assert_string_equal(err.text,
                      "invalid value type for 'shared_memory_offset' "
                      "parameter for tensor 'x', expected int64_param.");
  /* Typed contents and a region. */
  assert_int_equal(decode_shm(2, region_size, v, 1, 0, NULL, NULL, &err),
                   IFD_EINVAL);
  assert_string_equal(err.text,
                      "unexpected 'content' provided when using shared "
                      "memory for input tensor 'x' for model 'm'");
  /* The same rules for an output; and not with classification. */
  set_str(&ov[0], "r");
  assert_int_equal(decode_shm(0, NULL, NULL, 1, 1, region_size, ov, &err),
                   IFD_EINVAL);
  assert_string_equal(err.text,
                      "'shared_memory_byte_size' must be specified along "
                      "with 'shared_memory_region' parameter for tensor 'y'");
  set_int(&ov[1], 2);
  assert_int_equal(decode_shm(0, NULL, NULL, 1, 1, cls, &ov[1], &err), 0);
  {
    static const char *const both[3] = {
        "shared_memory_region", "shared_memory_byte_size", "classification"};
    set_int(&ov[1], 16);
    set_int(&ov[2], 2);
    assert_int_equal(decode_shm(0, NULL, NULL, 1, 3, both, ov, &err),
                     IFD_EINVAL);
    assert_string_equal(
        err.text,
        "output can't set both 'shared_memory_region' and 'classification'");
  }
}

/* ---- encoding ------------------------------------------------------------ */

/* A response with outputs OUT0 (FP32 [2,2]) and OUT1 (BYTES [2]), and one
 * parameter. */
static ifd_response_t *make_response(ifd_request_t *req) {
  static const float f[4] = {1, 2, 3, 4};
  static const uint8_t by[] = {1, 0, 0, 0, 'x', 2, 0, 0, 0, 'y', 'z'};
  ifd_response_t *resp = ifd_response_new(req);
  ifd_output_t *o;

  assert_non_null(resp);
  resp->outputs = ifd_pool_calloc(&resp->pool, 3, sizeof(ifd_output_t));
  assert_non_null(resp->outputs);
  resp->n_outputs = resp->cap_outputs = 2;
  o = &resp->outputs[0];
  o->name = ifd_pool_strndup(&resp->pool, "OUT0", 4);
  o->dtype = IFD_TYPE_FP32;
  o->ndims = 2;
  o->shape = ifd_pool_calloc(&resp->pool, 2, sizeof(int64_t));
  assert_non_null(o->shape);
  o->shape[0] = o->shape[1] = 2;
  o->buffer = malloc(sizeof(f));
  memcpy(o->buffer, f, sizeof(f));
  o->byte_size = sizeof(f);
  o = &resp->outputs[1];
  o->name = ifd_pool_strndup(&resp->pool, "OUT1", 4);
  o->dtype = IFD_TYPE_BYTES;
  o->ndims = 1;
  o->shape = ifd_pool_calloc(&resp->pool, 1, sizeof(int64_t));
  assert_non_null(o->shape);
  o->shape[0] = 2;
  o->buffer = malloc(sizeof(by));
  memcpy(o->buffer, by, sizeof(by));
  o->byte_size = sizeof(by);
  resp->params = calloc(1, sizeof(ifd_param_t));
  resp->n_params = resp->cap_params = 1;
  resp->params[0].key = ifd_pool_strndup(&resp->pool, "count", 5);
  resp->params[0].type = IFD_PARAM_INT;
  resp->params[0].v.i = 9;
  return resp;
}

/* Concatenates the reply's pieces into one malloc'd buffer. */
static uint8_t *flatten(const ifd_grpc_reply_t *r, size_t *len) {
  size_t n = 0, i;
  uint8_t *buf;

  for (i = 0; i < r->msg.n_iov; i++) n += r->msg.iov[i].len;
  assert_int_equal(n, r->size);
  buf = malloc(n + 1);
  assert_non_null(buf);
  for (n = 0, i = 0; i < r->msg.n_iov; i++) {
    memcpy(buf + n, r->msg.iov[i].base, r->msg.iov[i].len);
    n += r->msg.iov[i].len;
  }
  *len = n;
  return buf;
}

/* Does some piece of the reply point at `p` (zero copy)? */
static int has_piece(const ifd_grpc_reply_t *r, const void *p, size_t n) {
  unsigned i;
  for (i = 0; i < r->msg.n_iov; i++)
    if (r->msg.iov[i].base == p && r->msg.iov[i].len == n) return 1;
  return 0;
}

static ifd_request_t *named_request(void) {
  ifd_request_t *req = ifd_request_new(NULL);
  assert_non_null(req);
  req->model_name = "simple";
  req->id = "r7";
  return req;
}

static void test_encode_response(void **state) {
  ifd_request_t *req = named_request();
  ifd_response_t *resp = make_response(req);
  Inference__ModelInferResponse *m;
  ifd_grpc_reply_t *r;
  ifd_errmsg_t err;
  uint8_t *bytes;
  size_t len;

  (void)state;
  ifd_errclear(&err);
  assert_int_equal(ifd__grpc_infer_encode(req, resp, 4, 0, &r, &err), 0);
  assert_true(has_piece(r, resp->outputs[0].buffer, 16));
  assert_true(has_piece(r, resp->outputs[1].buffer, 11));
  bytes = flatten(r, &len);
  m = inference__model_infer_response__unpack(NULL, len, bytes);
  assert_non_null(m);
  assert_string_equal(m->model_name, "simple");
  assert_string_equal(m->model_version, "4");
  assert_string_equal(m->id, "r7");
  assert_int_equal(m->n_parameters, 1);
  assert_string_equal(m->parameters[0]->key, "count");
  assert_int_equal(m->parameters[0]->value->int64_param, 9);
  assert_int_equal(m->n_outputs, 2);
  assert_string_equal(m->outputs[0]->name, "OUT0");
  assert_string_equal(m->outputs[0]->datatype, "FP32");
  assert_int_equal(m->outputs[0]->n_shape, 2);
  assert_int_equal(m->outputs[0]->shape[0], 2);
  assert_string_equal(m->outputs[1]->name, "OUT1");
  assert_string_equal(m->outputs[1]->datatype, "BYTES");
  assert_int_equal(m->n_raw_output_contents, 2);
  assert_int_equal(m->raw_output_contents[0].len, 16);
  assert_memory_equal(m->raw_output_contents[0].data, resp->outputs[0].buffer,
                      16);
  assert_int_equal(m->raw_output_contents[1].len, 11);
  assert_memory_equal(m->raw_output_contents[1].data, resp->outputs[1].buffer,
                      11);
  inference__model_infer_response__free_unpacked(m, NULL);
  free(bytes);
  r->resp = resp; /* the reply frees the response and the request ref */
  r->req = req;
  ifd__grpc_reply_free(r);
}

static void test_encode_requested_order_and_empty(void **state) {
  ifd_request_t *req = named_request();
  ifd_response_t *resp = make_response(req);
  Inference__ModelInferResponse *m;
  ifd_grpc_reply_t *r;
  ifd_errmsg_t err;
  uint8_t *bytes;
  size_t len;

  (void)state;
  /* OUT1 first, a name the response lacks, then OUT0 (made empty). */
  assert_non_null(ifd_request_add_output(req, "OUT1", 4));
  assert_non_null(ifd_request_add_output(req, "NOPE", 4));
  assert_non_null(ifd_request_add_output(req, "OUT0", 4));
  resp->outputs[0].shape[0] = 0;
  resp->outputs[0].byte_size = 0;
  ifd_errclear(&err);
  assert_int_equal(ifd__grpc_infer_encode(req, resp, -1, 0, &r, &err), 0);
  bytes = flatten(r, &len);
  m = inference__model_infer_response__unpack(NULL, len, bytes);
  assert_non_null(m);
  assert_string_equal(m->model_version, "");
  assert_int_equal(m->n_outputs, 2);
  assert_string_equal(m->outputs[0]->name, "OUT1");
  assert_string_equal(m->outputs[1]->name, "OUT0");
  assert_int_equal(m->n_raw_output_contents, 2);
  assert_int_equal(m->raw_output_contents[0].len, 11);
  assert_int_equal(m->raw_output_contents[1].len, 0);
  inference__model_infer_response__free_unpacked(m, NULL);
  free(bytes);
  ifd__grpc_reply_free(r);

  /* A byte size that does not match the shape is refused. */
  resp->outputs[0].shape[0] = 3;
  assert_int_equal(ifd__grpc_infer_encode(req, resp, 1, 0, &r, &err),
                   IFD_EINTERNAL);
  assert_non_null(strstr(err.text, "OUT0"));
  ifd_response_free(resp);
  ifd_request_unref(req);
}

/* An output the request placed in shared memory: an empty
 * raw_output_contents entry, and no piece points at its buffer; the other
 * output is sent as usual. */
static void test_encode_shm_output(void **state) {
  ifd_request_t *req = named_request();
  ifd_response_t *resp = make_response(req);
  Inference__ModelInferResponse *m;
  ifd_grpc_reply_t *r;
  ifd_errmsg_t err;
  uint8_t *bytes;
  size_t len;

  (void)state;
  assert_non_null(ifd_request_add_output(req, "OUT0", 4));
  assert_non_null(ifd_request_add_output(req, "OUT1", 4));
  /* A placement as ifd_shm_use leaves it (the backend wrote there). */
  req->outputs[0].shm.ptr = resp->outputs[0].buffer;
  req->outputs[0].shm.byte_size = resp->outputs[0].byte_size;
  ifd_errclear(&err);
  assert_int_equal(ifd__grpc_infer_encode(req, resp, 1, 0, &r, &err), 0);
  assert_false(has_piece(r, resp->outputs[0].buffer, 16));
  assert_true(has_piece(r, resp->outputs[1].buffer, 11));
  bytes = flatten(r, &len);
  m = inference__model_infer_response__unpack(NULL, len, bytes);
  assert_non_null(m);
  assert_int_equal(m->n_outputs, 2);
  assert_string_equal(m->outputs[0]->name, "OUT0");
  assert_int_equal(m->outputs[0]->n_shape, 2); /* shape and type as usual */
  assert_string_equal(m->outputs[0]->datatype, "FP32");
  assert_int_equal(m->n_raw_output_contents, 2);
  assert_int_equal(m->raw_output_contents[0].len, 0);
  assert_int_equal(m->raw_output_contents[1].len, 11);
  inference__model_infer_response__free_unpacked(m, NULL);
  free(bytes);
  memset(&req->outputs[0].shm, 0, sizeof(req->outputs[0].shm));
  ifd__grpc_reply_free(r);
  ifd_response_free(resp);
  ifd_request_unref(req);
}

static void test_encode_stream(void **state) {
  ifd_request_t *req = named_request();
  ifd_response_t *resp = make_response(req);
  Inference__ModelStreamInferResponse *m;
  ifd_grpc_reply_t *r;
  ifd_errmsg_t err;
  uint8_t *bytes;
  size_t len;

  (void)state;
  ifd_errclear(&err);
  assert_int_equal(
      ifd__grpc_infer_encode(
          req, resp, 2,
          IFD_GRPC_ENC_STREAM | IFD_GRPC_ENC_FINAL_PARAM | IFD_GRPC_ENC_FINAL,
          &r, &err),
      0);
  assert_true(has_piece(r, resp->outputs[0].buffer, 16));
  bytes = flatten(r, &len);
  m = inference__model_stream_infer_response__unpack(NULL, len, bytes);
  assert_non_null(m);
  assert_string_equal(m->error_message, "");
  assert_non_null(m->infer_response);
  assert_string_equal(m->infer_response->model_version, "2");
  assert_string_equal(m->infer_response->id, "r7");
  assert_int_equal(m->infer_response->n_outputs, 2);
  assert_int_equal(m->infer_response->n_raw_output_contents, 2);
  assert_memory_equal(m->infer_response->raw_output_contents[1].data,
                      resp->outputs[1].buffer, 11);
  assert_int_equal(m->infer_response->n_parameters, 2);
  assert_string_equal(m->infer_response->parameters[1]->key,
                      "triton_final_response");
  assert_true(m->infer_response->parameters[1]->value->bool_param);
  inference__model_stream_infer_response__free_unpacked(m, NULL);
  free(bytes);
  r->resp = resp;
  ifd__grpc_reply_free(r);

  /* An error message on the stream names the request by its id only. */
  assert_int_equal(ifd__grpc_stream_error(req, "boom", &r), 0);
  bytes = flatten(r, &len);
  m = inference__model_stream_infer_response__unpack(NULL, len, bytes);
  assert_non_null(m);
  assert_string_equal(m->error_message, "boom");
  assert_string_equal(m->infer_response->id, "r7");
  assert_string_equal(m->infer_response->model_name, "");
  assert_string_equal(m->infer_response->model_version, "");
  assert_int_equal(m->infer_response->n_outputs, 0);
  inference__model_stream_infer_response__free_unpacked(m, NULL);
  free(bytes);
  ifd__grpc_reply_free(r);
  ifd_request_unref(req);
}

static void test_pack_and_varints(void **state) {
  Inference__ServerLiveResponse live = INFERENCE__SERVER_LIVE_RESPONSE__INIT;
  static const uint64_t vals[] = {0, 1, 127, 128, 300, UINT32_MAX, UINT64_MAX};
  uint8_t b[10];
  ifd_grpc_reply_t *r;
  uint64_t v;
  size_t i, n;

  (void)state;
  /* live = false packs to nothing: no piece at all. */
  assert_int_equal(ifd__grpc_reply_pack(&live.base, &r), 0);
  assert_int_equal(r->size, 0);
  assert_int_equal(r->msg.n_iov, 0);
  ifd__grpc_reply_free(r);
  live.live = 1;
  assert_int_equal(ifd__grpc_reply_pack(&live.base, &r), 0);
  assert_int_equal(r->size, 2);
  assert_int_equal(r->msg.n_iov, 1);
  assert_memory_equal(r->msg.iov[0].base, "\x08\x01", 2);
  assert_ptr_equal(r->msg.free_arg, r);
  r->msg.free_fn(r->msg.free_arg);

  for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
    n = ifd__pb_put_varint(b, vals[i]);
    assert_int_equal(ifd__pb_get_varint(b, b + n, &v), (int)n);
    assert_true(v == vals[i]);
    if (n > 1) assert_int_equal(ifd__pb_get_varint(b, b + n - 1, &v), -1);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_raw_inputs_point_into_message),
      cmocka_unit_test(test_typed_contents),
      cmocka_unit_test(test_typed_errors),
      cmocka_unit_test(test_raw_count_mismatch),
      cmocka_unit_test(test_malformed_bytes),
      cmocka_unit_test(test_unknown_fields_skipped),
      cmocka_unit_test(test_parameters_and_outputs),
      cmocka_unit_test(test_bad_version),
      cmocka_unit_test(test_shm_parameter_rules),
      cmocka_unit_test(test_encode_response),
      cmocka_unit_test(test_encode_requested_order_and_empty),
      cmocka_unit_test(test_encode_shm_output),
      cmocka_unit_test(test_encode_stream),
      cmocka_unit_test(test_pack_and_varints),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
