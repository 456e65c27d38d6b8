/*
 * test/unit/test_http.c - the pure parts of the HTTP front end.
 *
 * Covers the error-to-status table, the route matcher (every route, wrong
 * methods, malformed paths), the infer request decoder (every datatype,
 * nested data, range errors, BYTES, binary_data_size slicing, short and long
 * bodies, parameters and requested outputs), the response serializer (JSON,
 * binary, requested order, malformed outputs), the JSON text writers and the
 * half/bfloat16 conversions, and the head a slot gets. Requests are made by
 * hand (zeroed, with ifd_pool_init), so no server is needed.
 */
/* cmocka.h needs setjmp.h, stdarg.h and stddef.h before it. */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/infer.h"
#include "frontend/internal.h"
#include "frontend/status.h"

/* ---- helpers ---------------------------------------------------------- */

static ifd_request_t *req_new(void) {
  ifd_request_t *req = calloc(1, sizeof(*req));
  assert_non_null(req);
  ifd_pool_init(&req->pool);
  req->model_version = -1;
  return req;
}

static void req_free(ifd_request_t *req) {
  ifd_pool_destroy(&req->pool);
  free(req);
}

/* Decodes a JSON-only body; returns the code, the message in *err. */
static int decode(ifd_request_t *req, const char *json,
                  ifd_http_infer_info_t *info, ifd_errmsg_t *err) {
  ifd_errclear(err);
  return ifd__http_infer_decode(req, json, strlen(json), strlen(json), info,
                                err);
}

static char *hbuf_str(ifd_hbuf_t *b) {
  char *s = malloc(ifd_hbuf_size(b) + 1);
  assert_non_null(s);
  memcpy(s, b->data + b->start, ifd_hbuf_size(b));
  s[ifd_hbuf_size(b)] = '\0';
  return s;
}

/* ---- status ------------------------------------------------------------- */

static void test_status_table(void **state) {
  (void)state;
  assert_int_equal(ifd_http_status(0), 200);
  assert_int_equal(ifd_http_status(IFD_EINTERNAL), 500);
  assert_int_equal(ifd_http_status(IFD_ENOMEM), 500);
  assert_int_equal(ifd_http_status(IFD_EIO), 500);
  assert_int_equal(ifd_http_status(IFD_ENOTFOUND), 404);
  assert_int_equal(ifd_http_status(IFD_EUNAVAIL), 503);
  assert_int_equal(ifd_http_status(IFD_ETIMEOUT), 503);
  /* Triton's answer unless the front end sheds with 429 (test_overload). */
  assert_int_equal(ifd_http_status(IFD_EOVERLOADED), 503);
  assert_int_equal(ifd_grpc_status(IFD_EOVERLOADED), 14);
  assert_string_equal(ifd_http_reason(429), "Too Many Requests");
  assert_int_equal(ifd_http_status(IFD_EUNSUPPORTED), 501);
  assert_int_equal(ifd_http_status(IFD_EINVAL), 400);
  assert_int_equal(ifd_http_status(IFD_EPARSE), 400);
  assert_int_equal(ifd_http_status(IFD_ETOOBIG), 400);
  assert_int_equal(ifd_http_status(IFD_EEXISTS), 400);
  assert_int_equal(ifd_http_status(IFD_ECANCELLED), 400);
  assert_int_equal(ifd_http_status_of_class(0), 400);
  assert_int_equal(ifd_http_status_of_class(99), 400);
  assert_string_equal(ifd_http_reason(404), "Not Found");
  assert_string_equal(ifd_http_reason(405), "Method Not Allowed");
  assert_string_equal(ifd_http_reason(200), "OK");
  assert_string_equal(ifd_http_reason(299), "Unknown");
}

/* ---- routes ------------------------------------------------------------- */

static ifd_http_route_t route(ifd_http_method_t m, const char *path,
                              ifd_route_match_t *out) {
  return ifd__http_route(m, path, strlen(path), out);
}

static void assert_slice(const char *p, size_t n, const char *want) {
  assert_non_null(p);
  assert_int_equal(n, strlen(want));
  assert_memory_equal(p, want, n);
}

static void test_routes(void **state) {
  ifd_route_match_t m;
  (void)state;

  assert_int_equal(route(IFD_HTTP_GET, "/v2", &m), IFD_ROUTE_SERVER_META);
  assert_int_equal(route(IFD_HTTP_GET, "/v2/health/live", &m), IFD_ROUTE_LIVE);
  assert_int_equal(route(IFD_HTTP_GET, "/v2/health/ready", &m),
                   IFD_ROUTE_READY);
  assert_int_equal(route(IFD_HTTP_POST, "/v2/repository/index", &m),
                   IFD_ROUTE_REPO_INDEX);
  assert_int_equal(route(IFD_HTTP_POST, "/v2/repository/models/a/load", &m),
                   IFD_ROUTE_REPO_LOAD);
  assert_slice(m.model, m.model_len, "a");
  assert_int_equal(route(IFD_HTTP_POST, "/v2/repository/models/bb/unload", &m),
                   IFD_ROUTE_REPO_UNLOAD);
  assert_slice(m.model, m.model_len, "bb");
  assert_int_equal(route(IFD_HTTP_GET, "/v2/repository/models/a/load", &m),
                   IFD_ROUTE_BAD_METHOD);
  assert_int_equal(route(IFD_HTTP_GET, "/v2/repository/models/a/unload", &m),
                   IFD_ROUTE_BAD_METHOD);
  assert_int_equal(route(IFD_HTTP_POST, "/v2/repository/models/a/reload", &m),
                   IFD_ROUTE_NOT_FOUND);

  assert_int_equal(route(IFD_HTTP_GET, "/v2/models/resnet", &m),
                   IFD_ROUTE_MODEL_META);
  assert_slice(m.model, m.model_len, "resnet");
  assert_null(m.version);
  assert_int_equal(route(IFD_HTTP_GET, "/v2/models/resnet/versions/12", &m),
                   IFD_ROUTE_MODEL_META);
  assert_slice(m.model, m.model_len, "resnet");
  assert_slice(m.version, m.version_len, "12");
  assert_int_equal(route(IFD_HTTP_GET, "/v2/models/a/ready", &m),
                   IFD_ROUTE_MODEL_READY);
  assert_int_equal(route(IFD_HTTP_GET, "/v2/models/a/versions/3/ready", &m),
                   IFD_ROUTE_MODEL_READY);
  assert_slice(m.version, m.version_len, "3");
  assert_int_equal(route(IFD_HTTP_GET, "/v2/models/a/config", &m),
                   IFD_ROUTE_MODEL_CONFIG);
  assert_int_equal(route(IFD_HTTP_POST, "/v2/models/a/infer", &m),
                   IFD_ROUTE_INFER);
  assert_slice(m.model, m.model_len, "a");
  assert_int_equal(route(IFD_HTTP_POST, "/v2/models/a/versions/2/infer", &m),
                   IFD_ROUTE_INFER);
  assert_slice(m.version, m.version_len, "2");
  assert_int_equal(route(IFD_HTTP_POST, "/v2/models/a/generate", &m),
                   IFD_ROUTE_GENERATE);
  assert_slice(m.model, m.model_len, "a");
  assert_int_equal(
      route(IFD_HTTP_POST, "/v2/models/a/versions/4/generate_stream", &m),
      IFD_ROUTE_GENERATE_STREAM);
  assert_slice(m.version, m.version_len, "4");
  assert_int_equal(route(IFD_HTTP_GET, "/v2/models/a/generate_stream", &m),
                   IFD_ROUTE_BAD_METHOD);
  assert_int_equal(route(IFD_HTTP_POST, "/v2/models/a/generate/x", &m),
                   IFD_ROUTE_NOT_FOUND);
  /* A model may be named like a route word. */
  assert_int_equal(route(IFD_HTTP_GET, "/v2/models/infer", &m),
                   IFD_ROUTE_MODEL_META);
  assert_slice(m.model, m.model_len, "infer");
  assert_int_equal(route(IFD_HTTP_GET, "/v2/models/versions/versions/1", &m),
                   IFD_ROUTE_MODEL_META);
  assert_slice(m.model, m.model_len, "versions");

  /* Wrong methods. */
  assert_int_equal(route(IFD_HTTP_POST, "/v2/health/live", &m),
                   IFD_ROUTE_BAD_METHOD);
  assert_int_equal(route(IFD_HTTP_POST, "/v2", &m), IFD_ROUTE_BAD_METHOD);
  assert_int_equal(route(IFD_HTTP_GET, "/v2/models/a/infer", &m),
                   IFD_ROUTE_BAD_METHOD);
  assert_int_equal(route(IFD_HTTP_GET, "/v2/repository/index", &m),
                   IFD_ROUTE_BAD_METHOD);
  assert_int_equal(route(IFD_HTTP_OTHER, "/v2/models/a", &m),
                   IFD_ROUTE_BAD_METHOD);

  /* Unknown paths. */
  static const char *const nf[] = {
      "",
      "/",
      "/v",
      "/v1",
      "/v2x",
      "/v2/",
      "/v2//health/live",
      "/v2/health",
      "/v2/health/live/",
      "/v2/health/dead",
      "/v2/nosuch",
      "/v2/models",
      "/v2/models/",
      "/v2/models//ready",
      "/v2/models/a/versions",
      "/v2/models/a/versions/1/infer/x",
      "/v2/models/a/stats/x",
      "/v2/models/a/b/c/d/e/f/g",
      "/v2/repository",
      "/v2/repository/index/x",
      "v2/models/a",
      "/V2/models/a",
      "/v2/systemsharedmemory",
      "/v2/systemsharedmemory/register",
      "/v2/systemsharedmemory/region/r",
      "/v2/systemsharedmemory/region/r/x",
      "/v2/systemsharedmemory/x/r/status",
      "/v2/systemsharedmemory/region//status",
      "/v2/cudasharedmemory/region/r/status/x",
      "/v2/cudasharedmemory/register",
  };
  for (size_t i = 0; i < sizeof(nf) / sizeof(nf[0]); i++) {
    ifd_http_route_t r = route(IFD_HTTP_GET, nf[i], &m);
    if (r != IFD_ROUTE_NOT_FOUND) fail_msg("'%s' routed to %d", nf[i], (int)r);
    assert_null(m.model);
    assert_null(m.region);
  }
}

/* The shared-memory extensions: status GET, the others POST. */
static void test_routes_shm(void **state) {
  ifd_route_match_t m;
  (void)state;

  assert_int_equal(route(IFD_HTTP_GET, "/v2/systemsharedmemory/status", &m),
                   IFD_ROUTE_SHM_STATUS);
  assert_null(m.region);
  assert_int_equal(m.shm_cuda, 0);
  assert_int_equal(
      route(IFD_HTTP_GET, "/v2/systemsharedmemory/region/in%20r/status", &m),
      IFD_ROUTE_SHM_STATUS);
  assert_int_equal(m.region_len, 6);
  assert_memory_equal(m.region, "in%20r", 6);
  assert_int_equal(
      route(IFD_HTTP_POST, "/v2/systemsharedmemory/region/r/register", &m),
      IFD_ROUTE_SHM_REGISTER);
  assert_int_equal(
      route(IFD_HTTP_POST, "/v2/systemsharedmemory/region/r/unregister", &m),
      IFD_ROUTE_SHM_UNREGISTER);
  assert_int_equal(
      route(IFD_HTTP_POST, "/v2/systemsharedmemory/unregister", &m),
      IFD_ROUTE_SHM_UNREGISTER);
  assert_null(m.region);
  assert_int_equal(
      route(IFD_HTTP_POST, "/v2/cudasharedmemory/region/c/register", &m),
      IFD_ROUTE_SHM_REGISTER);
  assert_int_equal(m.shm_cuda, 1);
  assert_int_equal(route(IFD_HTTP_GET, "/v2/cudasharedmemory/status", &m),
                   IFD_ROUTE_SHM_STATUS);
  assert_int_equal(m.shm_cuda, 1);
  /* Wrong methods keep the route for the restricted-API check. */
  assert_int_equal(route(IFD_HTTP_POST, "/v2/systemsharedmemory/status", &m),
                   IFD_ROUTE_BAD_METHOD);
  assert_int_equal(m.route, IFD_ROUTE_SHM_STATUS);
  assert_int_equal(
      route(IFD_HTTP_GET, "/v2/systemsharedmemory/region/r/register", &m),
      IFD_ROUTE_BAD_METHOD);
  assert_int_equal(m.route, IFD_ROUTE_SHM_REGISTER);
}

/* ---- decoding ------------------------------------------------------------ */

static void test_decode_fp32_flat(void **state) {
  ifd_request_t *req = req_new();
  ifd_http_infer_info_t info;
  ifd_errmsg_t err;
  const float *f;
  (void)state;

  assert_int_equal(
      decode(req,
             "{\"id\":\"r1\",\"inputs\":[{\"name\":\"IN\",\"shape\":[1,4],"
             "\"datatype\":\"FP32\",\"data\":[0.5,1,-2.25,3e2]}]}",
             &info, &err),
      0);
  assert_string_equal(req->id, "r1");
  assert_int_equal(req->n_inputs, 1);
  assert_string_equal(req->inputs[0].name, "IN");
  assert_int_equal(req->inputs[0].dtype, IFD_TYPE_FP32);
  assert_int_equal(req->inputs[0].ndims, 2);
  assert_int_equal(req->inputs[0].shape[0], 1);
  assert_int_equal(req->inputs[0].shape[1], 4);
  assert_int_equal(req->inputs[0].byte_size, 16);
  f = req->inputs[0].data;
  assert_true(f[0] == 0.5f && f[1] == 1.0f && f[2] == -2.25f && f[3] == 300.0f);
  assert_int_equal(req->n_outputs, 0);
  assert_int_equal(info.binary_all, 0);
  req_free(req);
}

static void test_decode_nested_ints(void **state) {
  ifd_request_t *req = req_new();
  ifd_http_infer_info_t info;
  ifd_errmsg_t err;
  const int32_t *v;
  const int64_t *w;
  (void)state;

  assert_int_equal(
      decode(
          req,
          "{\"inputs\":[{\"name\":\"A\",\"datatype\":\"INT32\",\"shape\":[2,3],"
          "\"data\":[[1,2,3],[-4,5,2147483647]]},"
          "{\"name\":\"B\",\"datatype\":\"INT64\",\"shape\":[2,1,2],"
          "\"data\":[[[1,-9223372036854775808]],[[3,4]]]}]}",
          &info, &err),
      0);
  assert_string_equal(req->id, "");
  v = req->inputs[0].data;
  assert_int_equal(req->inputs[0].byte_size, 24);
  assert_int_equal(v[0], 1);
  assert_int_equal(v[3], -4);
  assert_int_equal(v[5], 2147483647);
  w = req->inputs[1].data;
  assert_int_equal(req->inputs[1].byte_size, 32);
  assert_true(w[1] == INT64_MIN);
  assert_int_equal(w[3], 4);
  req_free(req);
}

static void test_decode_types(void **state) {
  ifd_request_t *req = req_new();
  ifd_http_infer_info_t info;
  ifd_errmsg_t err;
  const uint8_t *b;
  const uint16_t *h;
  const double *d;
  (void)state;

  assert_int_equal(
      decode(
          req,
          "{\"inputs\":["
          "{\"name\":\"B\",\"datatype\":\"BOOL\",\"shape\":[3],\"data\":[true,"
          "false,true]},"
          "{\"name\":\"U8\",\"datatype\":\"UINT8\",\"shape\":[2],\"data\":[0,"
          "255]},"
          "{\"name\":\"H\",\"datatype\":\"FP16\",\"shape\":[4],\"data\":[1.0,0."
          "5,65504,1e6]},"
          "{\"name\":\"BF\",\"datatype\":\"BF16\",\"shape\":[2],\"data\":[1.0,-"
          "2]},"
          "{\"name\":\"D\",\"datatype\":\"FP64\",\"shape\":[1],\"data\":[0.1]},"
          "{\"name\":\"U64\",\"datatype\":\"UINT64\",\"shape\":[1],\"data\":["
          "9223372036854775807]},"
          "{\"name\":\"I8\",\"datatype\":\"INT8\",\"shape\":[2],\"data\":[-128,"
          "127]},"
          "{\"name\":\"U16\",\"datatype\":\"UINT16\",\"shape\":[1],\"data\":["
          "65535]},"
          "{\"name\":\"U32\",\"datatype\":\"UINT32\",\"shape\":[1],\"data\":["
          "4294967295]},"
          "{\"name\":\"I16\",\"datatype\":\"INT16\",\"shape\":[1],\"data\":[-"
          "32768]},"
          "{\"name\":\"S\",\"datatype\":\"FP32\",\"shape\":[],\"data\":[7]}"
          "]}",
          &info, &err),
      0);
  assert_int_equal(req->n_inputs, 11);
  b = req->inputs[0].data;
  assert_int_equal(req->inputs[0].byte_size, 3);
  assert_true(b[0] == 1 && b[1] == 0 && b[2] == 1);
  b = req->inputs[1].data;
  assert_true(b[0] == 0 && b[1] == 255);
  h = req->inputs[2].data;
  assert_int_equal(req->inputs[2].byte_size, 8);
  assert_int_equal(h[0], 0x3c00);
  assert_int_equal(h[1], 0x3800);
  assert_int_equal(h[2], 0x7bff);
  assert_int_equal(h[3], 0x7c00); /* overflow: infinity */
  h = req->inputs[3].data;
  assert_int_equal(h[0], 0x3f80);
  assert_int_equal(h[1], 0xc000);
  d = req->inputs[4].data;
  assert_true(d[0] == 0.1);
  assert_true(*(const uint64_t *)req->inputs[5].data == 9223372036854775807ull);
  assert_int_equal(((const int8_t *)req->inputs[6].data)[0], -128);
  assert_int_equal(((const uint16_t *)req->inputs[7].data)[0], 65535);
  assert_true(((const uint32_t *)req->inputs[8].data)[0] == 4294967295u);
  assert_int_equal(((const int16_t *)req->inputs[9].data)[0], -32768);
  assert_int_equal(req->inputs[10].ndims, 0);
  assert_true(((const float *)req->inputs[10].data)[0] == 7.0f);
  req_free(req);
}

static void test_decode_bytes(void **state) {
  ifd_request_t *req = req_new();
  ifd_http_infer_info_t info;
  ifd_errmsg_t err;
  static const char want[] = "\3\0\0\0one\0\0\0\0\5\0\0\0a\0b\"c";
  (void)state;

  assert_int_equal(
      decode(
          req,
          "{\"inputs\":[{\"name\":\"S\",\"datatype\":\"BYTES\",\"shape\":[3],"
          "\"data\":[\"one\",\"\",\"a\\u0000b\\\"c\"]}]}",
          &info, &err),
      0);
  assert_int_equal(req->inputs[0].byte_size, sizeof(want) - 1);
  assert_memory_equal(req->inputs[0].data, want, sizeof(want) - 1);
  req_free(req);
}

/* Tensors in shared memory are listed for the loop to resolve, their data
 * left unset; a placed output is never binary. */
static void test_decode_shm(void **state) {
  ifd_request_t *req = req_new();
  ifd_http_infer_info_t info;
  ifd_errmsg_t err;
  (void)state;

  assert_int_equal(
      decode(req,
             "{\"parameters\":{\"binary_data_output\":true},\"inputs\":["
             "{\"name\":\"A\",\"datatype\":\"INT32\",\"shape\":[1],"
             "\"data\":[5]},{\"name\":\"B\",\"datatype\":\"INT32\","
             "\"shape\":[4],\"parameters\":{\"shared_memory_region\":"
             "\"in\\u0031\",\"shared_memory_offset\":16,"
             "\"shared_memory_byte_size\":16}}],\"outputs\":[{\"name\":"
             "\"O\",\"parameters\":{\"shared_memory_region\":\"out\","
             "\"shared_memory_byte_size\":64,\"binary_data\":false}},"
             "{\"name\":\"P\"}]}",
             &info, &err),
      0);
  assert_int_equal(info.n_shm, 2);
  assert_string_equal(info.shm[0].region, "in1");
  assert_int_equal(info.shm[0].region_len, 3);
  assert_int_equal(info.shm[0].offset, 16);
  assert_int_equal(info.shm[0].byte_size, 16);
  assert_int_equal(info.shm[0].index, 1);
  assert_int_equal(info.shm[0].output, 0);
  assert_null(req->inputs[1].data);
  assert_string_equal(info.shm[1].region, "out");
  assert_int_equal(info.shm[1].offset, 0);
  assert_int_equal(info.shm[1].byte_size, 64);
  assert_int_equal(info.shm[1].index, 0);
  assert_int_equal(info.shm[1].output, 1);
  assert_int_equal(req->outputs[0].proto_flags, 0);
  assert_int_equal(req->outputs[1].proto_flags, IFD_HTTP_OUT_BINARY);
  req_free(req);
}

/* Each body must fail with `code` and a message containing `needle`. */
static void expect_fail(const char *json, int code, const char *needle) {
  ifd_request_t *req = req_new();
  ifd_http_infer_info_t info;
  ifd_errmsg_t err;
  int rc = decode(req, json, &info, &err);

  if (rc != code || strstr(err.text, needle) == NULL)
    fail_msg("%s: got %d '%s', want %d '%s'", json, rc, err.text, code, needle);
  req_free(req);
}

static void test_decode_errors(void **state) {
  (void)state;
  expect_fail("{not json", IFD_EINVAL, "failed to parse the request JSON");
  expect_fail("", IFD_EINVAL, "failed to parse the request JSON");
  /* No body at all (a POST without Content-Length): found by fuzzing, the
   * decoder did arithmetic on the NULL body (UBSan). */
  {
    ifd_request_t *req = req_new();
    ifd_http_infer_info_t info;
    ifd_errmsg_t err;
    ifd_errclear(&err);
    assert_int_equal(ifd__http_infer_decode(req, NULL, 0, 0, &info, &err),
                     IFD_EINVAL);
    assert_non_null(strstr(err.text, "failed to parse the request JSON"));
    assert_int_equal(ifd__http_infer_decode(req, NULL, 0, 4, &info, &err),
                     IFD_EINVAL);
    req_free(req);
  }
  expect_fail("[1]", IFD_EINVAL, "must be an object");
  expect_fail("{\"inputs\":\"x\"}", IFD_EINVAL, "Unable to parse 'inputs'");
  expect_fail("{}", IFD_EINVAL, "Unable to parse 'inputs'");
  expect_fail("{\"id\":5,\"inputs\":[]}", IFD_EINVAL, "'id'");
  expect_fail("{\"inputs\":[5]}", IFD_EINVAL, "not an object");
  expect_fail(
      "{\"inputs\":[{\"datatype\":\"FP32\",\"shape\":[1],\"data\":[1]}]}",
      IFD_EINVAL, "'name'");
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"FP33\",\"shape\":[1]"
      ",\"data\":[1]}]}",
      IFD_EINVAL, "invalid datatype 'FP33'");
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"FP32\",\"shape\":[-"
      "1],\"data\":[1]}]}",
      IFD_EINVAL, "'shape' of input 'X'");
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"FP32\",\"data\":[1]}]}",
      IFD_EINVAL, "'shape' of input 'X'");
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"FP32\",\"shape\":[1]}]}",
      IFD_EINVAL,
      "Input must set only one of the following fields: 'data', "
      "'binary_data_size' in 'parameters', 'shared_memory_region' "
      "in 'parameters'. But no field is set");
  /* Data that does not match the shape: 400, not Triton's 500. */
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"FP32\",\"shape\":[1,16],"
      "\"data\":[0,0,0,0,0,0,0,0,0,0]}]}",
      IFD_EINVAL, "shape does not match");
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"FP32\",\"shape\":[2],"
      "\"data\":[[1],[2],[3]]}]}",
      IFD_EINVAL, "shape does not match");
  /* A huge shape with little data allocates nothing and fails cleanly. */
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"FP32\",\"shape\":["
      "1000000000,"
      "1000000000],\"data\":[1]}]}",
      IFD_EINVAL, "shape does not match");
  /* Type and range checks. */
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"UINT8\",\"shape\":["
      "2],\"data\":[1,256]}]}",
      IFD_EINVAL, "out of range for UINT8");
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"INT8\",\"shape\":[1]"
      ",\"data\":[-129]}]}",
      IFD_EINVAL, "out of range for INT8");
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"UINT32\",\"shape\":["
      "1],\"data\":[-1]}]}",
      IFD_EINVAL, "out of range for UINT32");
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"INT32\",\"shape\":["
      "1],\"data\":[2147483648]}]}",
      IFD_EINVAL, "out of range for INT32");
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"INT32\",\"shape\":["
      "1],\"data\":[1.5]}]}",
      IFD_EINVAL, "not an integer");
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"BOOL\",\"shape\":[1]"
      ",\"data\":[1]}]}",
      IFD_EINVAL, "not a boolean");
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"FP32\",\"shape\":[1]"
      ",\"data\":[\"1\"]}]}",
      IFD_EINVAL, "not a number");
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"BYTES\",\"shape\":["
      "1],\"data\":[1]}]}",
      IFD_EINVAL, "not a string");
  /* Binary sizes without a binary section. */
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"FP32\",\"shape\":[1],"
      "\"parameters\":{\"binary_data_size\":4}}]}",
      IFD_EINVAL, "only 0 bytes");
  /* Shared memory: Triton's checks. */
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"FP32\",\"shape\":[1],"
      "\"data\":[1],\"parameters\":{\"shared_memory_region\":\"r\"}}]}",
      IFD_EINVAL, "But set 'data' 'shared_memory_region'");
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"FP32\",\"shape\":[1],"
      "\"parameters\":{\"shared_memory_region\":\"r\",\"binary_data_size\":"
      "4}}]}",
      IFD_EINVAL, "But set 'binary_data_size' 'shared_memory_region'");
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"FP32\",\"shape\":[1],"
      "\"parameters\":{\"shared_memory_region\":7}}]}",
      IFD_EINVAL, "'shared_memory_region' of input 'X'");
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"FP32\",\"shape\":[1],"
      "\"parameters\":{\"shared_memory_region\":\"r\","
      "\"shared_memory_offset\":-1}}]}",
      IFD_EINVAL, "'shared_memory_offset' of input 'X'");
  expect_fail(
      "{\"inputs\":[{\"name\":\"X\",\"datatype\":\"FP32\",\"shape\":[1],"
      "\"parameters\":{\"shared_memory_region\":\"r\","
      "\"shared_memory_byte_size\":1.5}}]}",
      IFD_EINVAL, "'shared_memory_byte_size' of input 'X'");
  expect_fail(
      "{\"inputs\":[],\"outputs\":[{\"name\":\"O\",\"parameters\":{"
      "\"shared_memory_region\":\"r\",\"classification\":2}}]}",
      IFD_EINVAL,
      "Output can't set both 'shared_memory_region' and 'classification'");
  expect_fail(
      "{\"inputs\":[],\"outputs\":[{\"name\":\"O\",\"parameters\":{"
      "\"shared_memory_region\":\"r\",\"binary_data\":true}}]}",
      IFD_EINVAL,
      "Output can't set both 'shared_memory_region' and "
      "'binary_data'");
  /* Parameters and outputs. */
  expect_fail("{\"parameters\":[],\"inputs\":[]}", IFD_EINVAL, "'parameters'");
  expect_fail("{\"parameters\":{\"sequence_start\":1},\"inputs\":[]}",
              IFD_EINVAL, "'sequence_start'");
  expect_fail("{\"parameters\":{\"priority\":-1},\"inputs\":[]}", IFD_EINVAL,
              "'priority'");
  expect_fail("{\"parameters\":{\"x\":{}},\"inputs\":[]}", IFD_EINVAL,
              "parameter 'x'");
  expect_fail("{\"inputs\":[],\"outputs\":{}}", IFD_EINVAL, "'outputs'");
  expect_fail(
      "{\"inputs\":[],\"outputs\":[{\"name\":\"O\",\"parameters\":"
      "{\"binary_data\":1}}]}",
      IFD_EINVAL, "'binary_data'");
}

static void test_decode_binary(void **state) {
  ifd_request_t *req = req_new();
  ifd_http_infer_info_t info;
  ifd_errmsg_t err;
  static const char json[] =
      "{\"inputs\":[{\"name\":\"A\",\"datatype\":\"FP32\",\"shape\":[2],"
      "\"parameters\":{\"binary_data_size\":8}},"
      "{\"name\":\"J\",\"datatype\":\"INT32\",\"shape\":[1],\"data\":[7]},"
      "{\"name\":\"B\",\"datatype\":\"UINT8\",\"shape\":[3],"
      "\"parameters\":{\"binary_data_size\":3}}]}";
  char body[sizeof(json) - 1 + 11];
  size_t jl = sizeof(json) - 1;
  float a[2] = {1.5f, -3.0f};
  (void)state;

  memcpy(body, json, jl);
  memcpy(body + jl, a, 8);
  memcpy(body + jl + 8, "\x01\x02\x03", 3);
  ifd_errclear(&err);
  assert_int_equal(
      ifd__http_infer_decode(req, body, sizeof(body), jl, &info, &err), 0);
  /* Zero copy: the binary inputs point into the body, in input order. */
  assert_ptr_equal(req->inputs[0].data, body + jl);
  assert_int_equal(req->inputs[0].byte_size, 8);
  assert_int_equal(((const int32_t *)req->inputs[1].data)[0], 7);
  assert_ptr_equal(req->inputs[2].data, body + jl + 8);
  assert_int_equal(req->inputs[2].byte_size, 3);
  req_free(req);

  /* A body shorter than the declared sizes. */
  req = req_new();
  assert_int_equal(
      ifd__http_infer_decode(req, body, sizeof(body) - 1, jl, &info, &err),
      IFD_EINVAL);
  assert_non_null(strstr(err.text, "input 'B'"));
  req_free(req);

  /* Bytes left over after every declared input. */
  req = req_new();
  {
    char longer[sizeof(body) + 2];
    memcpy(longer, body, sizeof(body));
    assert_int_equal(
        ifd__http_infer_decode(req, longer, sizeof(longer), jl, &info, &err),
        IFD_EINVAL);
    assert_non_null(strstr(err.text, "2 bytes"));
  }
  req_free(req);

  /* A JSON length beyond the body. */
  req = req_new();
  assert_int_equal(ifd__http_infer_decode(req, body, 10, 20, &info, &err),
                   IFD_EINVAL);
  req_free(req);
}

static void test_decode_params_outputs(void **state) {
  ifd_request_t *req = req_new();
  ifd_http_infer_info_t info;
  ifd_errmsg_t err;
  (void)state;

  assert_int_equal(
      decode(req,
             "{\"parameters\":{\"sequence_id\":42,\"sequence_start\":true,"
             "\"sequence_end\":false,\"priority\":3,\"timeout\":5000,"
             "\"binary_data_output\":true,\"s\":\"v\",\"i\":-7,\"b\":true,"
             "\"d\":2.5},"
             "\"inputs\":[],"
             "\"outputs\":[{\"name\":\"O1\"},{\"name\":\"O2\",\"parameters\":"
             "{\"binary_data\":false,\"classification\":3}}]}",
             &info, &err),
      0);
  assert_int_equal(req->correlation_id, 42);
  assert_null(req->correlation_id_str);
  assert_int_equal(req->flags, IFD_REQUEST_FLAG_SEQUENCE_START);
  assert_int_equal(req->priority, 3);
  assert_int_equal(req->timeout_us, 5000);
  assert_int_equal(info.binary_all, 1);
  assert_int_equal(req->n_params, 4);
  assert_string_equal(req->params[0].key, "s");
  assert_int_equal(req->params[0].type, IFD_PARAM_STRING);
  assert_string_equal(req->params[0].v.s, "v");
  assert_int_equal(req->params[1].type, IFD_PARAM_INT);
  assert_int_equal(req->params[1].v.i, -7);
  assert_int_equal(req->params[2].type, IFD_PARAM_BOOL);
  assert_int_equal(req->params[2].v.b, 1);
  assert_int_equal(req->params[3].type, IFD_PARAM_DOUBLE);
  assert_true(req->params[3].v.d == 2.5);
  assert_int_equal(req->n_outputs, 2);
  assert_string_equal(req->outputs[0].name, "O1");
  assert_int_equal(req->outputs[0].proto_flags, IFD_HTTP_OUT_BINARY);
  assert_string_equal(req->outputs[1].name, "O2");
  assert_int_equal(req->outputs[1].proto_flags, 0);
  assert_int_equal(req->outputs[1].class_count, 3);
  req_free(req);

  req = req_new();
  assert_int_equal(
      decode(req,
             "{\"parameters\":{\"sequence_id\":\"corr\",\"sequence_end\":true},"
             "\"inputs\":[]}",
             &info, &err),
      0);
  assert_string_equal(req->correlation_id_str, "corr");
  assert_int_equal(req->correlation_id, 0);
  assert_int_equal(req->flags, IFD_REQUEST_FLAG_SEQUENCE_END);
  assert_int_equal(info.binary_all, 0);
  req_free(req);
}

/* ---- serializing ----------------------------------------------------------
 */

typedef struct fake_resp {
  ifd_response_t resp;
  ifd_output_t outs[4];
  int64_t shapes[4][IFD_MAX_DIMS]; /* outs[i].shape */
  ifd_param_t params[4];
} fake_resp_t;

static void add_out(fake_resp_t *f, const char *name, ifd_dtype_t t,
                    const int64_t *shape, uint32_t ndims, const void *data,
                    size_t size) {
  ifd_output_t *o = &f->outs[f->resp.n_outputs++];
  o->name = name;
  o->dtype = t;
  o->shape = f->shapes[f->resp.n_outputs - 1];
  memcpy(o->shape, shape, ndims * sizeof(int64_t));
  o->ndims = ndims;
  o->buffer = (void *)data;
  o->byte_size = size;
  f->resp.outputs = f->outs;
}

static char *serialize(ifd_request_t *req, fake_resp_t *f, int binary_all,
                       uv_buf_t *bin, unsigned *nbin, int *rc) {
  ifd_hbuf_t b;
  ifd_errmsg_t err;
  char *s;

  ifd_errclear(&err);
  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  *rc = ifd__http_infer_serialize(req, &f->resp, 1, binary_all, &b, bin, nbin,
                                  &err);
  s = hbuf_str(&b);
  ifd_hbuf_free(&b);
  return s;
}

static void test_serialize_json(void **state) {
  ifd_request_t *req = req_new();
  fake_resp_t f;
  uv_buf_t bin[4];
  unsigned nbin;
  int rc;
  char *s;
  static const float v[4] = {0.0f, 1.0f, 0.5f, 123.123f};
  static const int64_t shape[2] = {1, 4};
  static const char bytes[] = "\3\0\0\0one\2\0\0\0\"\n";
  static const int64_t bshape[1] = {2};
  static const uint8_t bools[2] = {1, 0};
  (void)state;

  memset(&f, 0, sizeof(f));
  req->model_name = "m";
  req->id = "x\"y";
  add_out(&f, "OUT", IFD_TYPE_FP32, shape, 2, v, sizeof(v));
  add_out(&f, "S", IFD_TYPE_BYTES, bshape, 1, bytes, sizeof(bytes) - 1);
  add_out(&f, "B", IFD_TYPE_BOOL, bshape, 1, bools, 2);
  f.params[0] =
      (ifd_param_t){.key = "p0", .type = IFD_PARAM_STRING, .v.s = "str"};
  f.params[1] = (ifd_param_t){.key = "p1", .type = IFD_PARAM_INT, .v.i = 42};
  f.params[2] = (ifd_param_t){.key = "p2", .type = IFD_PARAM_BOOL, .v.b = 0};
  f.params[3] =
      (ifd_param_t){.key = "p3", .type = IFD_PARAM_DOUBLE, .v.d = 123.123};
  f.resp.params = f.params;
  f.resp.n_params = 4;
  s = serialize(req, &f, 0, bin, &nbin, &rc);
  assert_int_equal(rc, 0);
  assert_int_equal(nbin, 0);
  assert_string_equal(
      s,
      "{\"id\":\"x\\\"y\",\"model_name\":\"m\",\"model_version\":\"1\","
      "\"parameters\":{\"p0\":\"str\",\"p1\":42,\"p2\":false,\"p3\":123.123},"
      "\"outputs\":[{\"name\":\"OUT\",\"datatype\":\"FP32\",\"shape\":[1,4],"
      "\"data\":[0.0,1.0,0.5,123.123]},"
      "{\"name\":\"S\",\"datatype\":\"BYTES\",\"shape\":[2],\"data\":[\"one\","
      "\"\\\"\\n\"]},"
      "{\"name\":\"B\",\"datatype\":\"BOOL\",\"shape\":[2],\"data\":[true,"
      "false]}]}");
  free(s);

  /* Requested outputs come in the request's order; binary per output. */
  req->id = "";
  f.resp.n_params = 0;
  req->outputs = (ifd_output_req_t[]){
      {.name = "B"}, {.name = "OUT", .proto_flags = IFD_HTTP_OUT_BINARY}};
  req->n_outputs = 2;
  s = serialize(req, &f, 0, bin, &nbin, &rc);
  assert_int_equal(rc, 0);
  assert_string_equal(
      s,
      "{\"model_name\":\"m\",\"model_version\":\"1\",\"outputs\":["
      "{\"name\":\"B\",\"datatype\":\"BOOL\",\"shape\":[2],\"data\":[true,"
      "false]},"
      "{\"name\":\"OUT\",\"datatype\":\"FP32\",\"shape\":[1,4],"
      "\"parameters\":{\"binary_data_size\":16}}]}");
  assert_int_equal(nbin, 1);
  assert_ptr_equal(bin[0].base, v); /* zero copy */
  assert_int_equal(bin[0].len, 16);
  free(s);
  req_free(req);
}

/* An output placed in shared memory goes out as name, datatype and shape
 * only, in both the JSON and the binary form, and its bytes (device memory,
 * possibly) are never read. */
static void test_serialize_shm(void **state) {
  ifd_request_t *req = req_new();
  fake_resp_t f;
  uv_buf_t bin[4];
  unsigned nbin;
  int rc;
  char *s;
  static const int32_t v[4] = {1, 2, 3, 4};
  static const int64_t shape[2] = {1, 4};
  int32_t region[4];
  (void)state;

  memset(&f, 0, sizeof(f));
  req->model_name = "m";
  /* A buffer that does not match the shape: never looked at. */
  add_out(&f, "SHM", IFD_TYPE_INT32, shape, 2, region, 3);
  add_out(&f, "BIN", IFD_TYPE_INT32, shape, 2, v, sizeof(v));
  add_out(&f, "JS", IFD_TYPE_INT32, shape, 2, v, sizeof(v));
  req->outputs = (ifd_output_req_t[]){
      {.name = "SHM", .shm = {.ptr = region, .byte_size = 16}},
      {.name = "BIN", .proto_flags = IFD_HTTP_OUT_BINARY},
      {.name = "JS"}};
  req->n_outputs = 3;
  s = serialize(req, &f, 0, bin, &nbin, &rc);
  assert_int_equal(rc, 0);
  assert_string_equal(
      s,
      "{\"model_name\":\"m\",\"model_version\":\"1\",\"outputs\":["
      "{\"name\":\"SHM\",\"datatype\":\"INT32\",\"shape\":[1,4]},"
      "{\"name\":\"BIN\",\"datatype\":\"INT32\",\"shape\":[1,4],"
      "\"parameters\":{\"binary_data_size\":16}},"
      "{\"name\":\"JS\",\"datatype\":\"INT32\",\"shape\":[1,4],"
      "\"data\":[1,2,3,4]}]}");
  assert_int_equal(nbin, 1);
  assert_ptr_equal(bin[0].base, v);
  /* Only the JSON output counts towards the offload measure. */
  assert_int_equal(ifd__http_infer_json_bytes(req, &f.resp, 0), 16);
  free(s);
  req_free(req);
}

static void test_serialize_binary_all(void **state) {
  ifd_request_t *req = req_new();
  fake_resp_t f;
  uv_buf_t bin[4];
  unsigned nbin;
  int rc;
  char *s;
  static const int32_t v[2] = {1, -2};
  static const int64_t shape[1] = {2};
  static const int64_t empty[1] = {0};
  (void)state;

  memset(&f, 0, sizeof(f));
  req->model_name = "m";
  add_out(&f, "A", IFD_TYPE_INT32, shape, 1, v, 8);
  add_out(&f, "E", IFD_TYPE_INT32, empty, 1, NULL, 0);
  s = serialize(req, &f, 1, bin, &nbin, &rc);
  assert_int_equal(rc, 0);
  assert_int_equal(nbin, 2);
  assert_ptr_equal(bin[0].base, v);
  assert_int_equal(bin[1].len, 0);
  assert_string_equal(
      s,
      "{\"model_name\":\"m\",\"model_version\":\"1\",\"outputs\":["
      "{\"name\":\"A\",\"datatype\":\"INT32\",\"shape\":[2],"
      "\"parameters\":{\"binary_data_size\":8}},"
      "{\"name\":\"E\",\"datatype\":\"INT32\",\"shape\":[0],"
      "\"parameters\":{\"binary_data_size\":0}}]}");
  free(s);

  /* JSON of the same: ints and an empty tensor. */
  s = serialize(req, &f, 0, bin, &nbin, &rc);
  assert_int_equal(rc, 0);
  assert_non_null(strstr(s, "\"data\":[1,-2]"));
  assert_non_null(strstr(s, "\"shape\":[0],\"data\":[]"));
  free(s);
  req_free(req);
}

static void test_serialize_errors(void **state) {
  ifd_request_t *req = req_new();
  fake_resp_t f;
  uv_buf_t bin[4];
  unsigned nbin;
  int rc;
  static const int64_t shape[1] = {2};
  static const char bad[] = "\3\0\0\0one\x09\0\0\0x";
  float v[2] = {0};
  (void)state;

  req->model_name = "m";
  memset(&f, 0, sizeof(f));
  add_out(&f, "S", IFD_TYPE_BYTES, shape, 1, bad, sizeof(bad) - 1);
  free(serialize(req, &f, 0, bin, &nbin, &rc));
  assert_int_equal(rc, IFD_EINTERNAL);

  memset(&f, 0, sizeof(f));
  add_out(&f, "F", IFD_TYPE_FP32, shape, 1, v, 4); /* 2 elements need 8 bytes */
  free(serialize(req, &f, 0, bin, &nbin, &rc));
  assert_int_equal(rc, IFD_EINTERNAL);
  req_free(req);
}

/* ---- text writers
 * ------------------------------------------------------------ */

static void test_json_writers(void **state) {
  ifd_hbuf_t b;
  char *s;
  (void)state;

  ifd_hbuf_init(&b, 0);
  ifd_json_str(&b, "a\"b\\c\n\x01\xc3\xa9", 9);
  ifd_hbuf_put(&b, " ", 1);
  ifd_json_f32(&b, 0.1f);
  ifd_hbuf_put(&b, " ", 1);
  ifd_json_f32(&b, 1.0f);
  ifd_hbuf_put(&b, " ", 1);
  ifd_json_f32(&b, 16777216.0f);
  ifd_hbuf_put(&b, " ", 1);
  ifd_json_f32(&b, 3.4028235e38f);
  ifd_hbuf_put(&b, " ", 1);
  ifd_json_f64(&b, 0.1);
  ifd_hbuf_put(&b, " ", 1);
  ifd_json_f64(&b, -2.0);
  ifd_hbuf_put(&b, " ", 1);
  ifd_json_f32(&b, NAN);
  s = hbuf_str(&b);
  assert_string_equal(s,
                      "\"a\\\"b\\\\c\\n\\u0001\xc3\xa9\" 0.1 1.0 16777216.0 "
                      "3.4028235e+38 0.1 -2.0 NaN");
  free(s);
  ifd_hbuf_free(&b);

  /* Every float16 value survives f16 -> f32 -> f16. */
  for (uint32_t h = 0; h < 0x10000; h++) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) continue; /* NaN payloads */
    assert_int_equal(ifd_f32_to_f16(ifd_f16_to_f32((uint16_t)h)), h);
  }
  /* Round to nearest even, subnormals, bfloat16. */
  assert_int_equal(ifd_f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);
  assert_int_equal(ifd_f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);
  assert_int_equal(ifd_f32_to_f16(5.9604645e-08f), 0x0001);
  assert_int_equal(ifd_f32_to_f16(2.0e-08f), 0x0000);
  assert_true(ifd_bf16_to_f32(ifd_f32_to_bf16(3.0f)) == 3.0f);
  assert_int_equal(ifd_f32_to_bf16(1.00390625f), 0x3f80); /* tie: even */
}

/* ---- slot heads
 * ------------------------------------------------------------------ */

static char *iov_str(const ifd_http_slot_t *s) {
  size_t n = 0, at = 0;
  char *out;
  for (unsigned i = 0; i < s->t.niov; i++) n += s->t.iov[i].len;
  out = malloc(n + 1);
  assert_non_null(out);
  for (unsigned i = 0; i < s->t.niov; i++) {
    memcpy(out + at, s->t.iov[i].base, s->t.iov[i].len);
    at += s->t.iov[i].len;
  }
  out[n] = '\0';
  return out;
}

static void test_slot_heads(void **state) {
  ifd_http_slot_t *s = calloc(1, sizeof(*s));
  ifd_hbuf_t b;
  uv_buf_t bin[2] = {uv_buf_init("AB", 2), uv_buf_init("C", 1)};
  char *t;
  (void)state;

  s->t.iov = s->t.iov_inline;
  s->t.keep_alive = 1;
  ifd__http_slot_error(s, 404, "Not Found");
  assert_true(s->t.ready);
  t = iov_str(s);
  assert_string_equal(
      t,
      "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
      "Content-Length: 21\r\n\r\n{\"error\":\"Not Found\"}");
  free(t);
  ifd__http_slot_free(s);

  s = calloc(1, sizeof(*s));
  s->t.iov = s->t.iov_inline;
  s->t.keep_alive = 1;
  s->t.http10 = 1;
  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd_hbuf_puts(&b, "{}");
  ifd__http_slot_finish(s, 200, "application/octet-stream", &b, bin, 2, 2);
  assert_int_equal(s->t.niov, 3);
  t = iov_str(s);
  assert_string_equal(
      t,
      "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
      "Inference-Header-Content-Length: 2\r\nContent-Length: 5\r\n"
      "Connection: keep-alive\r\n\r\n{}ABC");
  free(t);
  ifd__http_slot_free(s);

  /* Many binary outputs spill the inline iovecs; empty bodies still work. */
  s = calloc(1, sizeof(*s));
  s->t.iov = s->t.iov_inline;
  s->t.close_after = 1;
  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  {
    uv_buf_t many[6];
    for (int i = 0; i < 6; i++) many[i] = uv_buf_init("x", 1);
    ifd__http_slot_finish(s, 200, NULL, &b, many, 6, -1);
  }
  assert_int_equal(s->t.niov, 7);
  t = iov_str(s);
  assert_string_equal(t,
                      "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: "
                      "close\r\n\r\nxxxxxx");
  free(t);
  ifd__http_slot_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_table),
      cmocka_unit_test(test_routes),
      cmocka_unit_test(test_routes_shm),
      cmocka_unit_test(test_decode_fp32_flat),
      cmocka_unit_test(test_decode_nested_ints),
      cmocka_unit_test(test_decode_types),
      cmocka_unit_test(test_decode_bytes),
      cmocka_unit_test(test_decode_errors),
      cmocka_unit_test(test_decode_shm),
      cmocka_unit_test(test_decode_binary),
      cmocka_unit_test(test_decode_params_outputs),
      cmocka_unit_test(test_serialize_json),
      cmocka_unit_test(test_serialize_binary_all),
      cmocka_unit_test(test_serialize_errors),
      cmocka_unit_test(test_serialize_shm),
      cmocka_unit_test(test_json_writers),
      cmocka_unit_test(test_slot_heads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
