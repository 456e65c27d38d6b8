/*
 * test/unit/test_http_infer.c - the thread-pool offload of large JSON infer
 * bodies (frontend/http_infer.c, included so its static jobs are reachable).
 *
 * Covers the measure that decides whether a response is encoded on the pool,
 * a decode job and an encode job run inline (their results match the inline
 * path's), and jobs whose connection closes while they are queued or running
 * on a real libuv loop and pool: each is dropped quietly, its slot, request
 * and response freed (ASan reports a leak or a use after free otherwise),
 * and the loop closes with nothing left.
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

#include "frontend/http_infer.c"

/* ---- helpers ---------------------------------------------------------- */

static const char json_req[] =
    "{\"id\":\"r\",\"inputs\":[{\"name\":\"IN\",\"datatype\":\"FP32\","
    "\"shape\":[4],\"data\":[1,2.5,-3,0.1]}],"
    "\"parameters\":{\"binary_data_output\":true}}";

/* A request as the route hands it over: it owns a malloc'd copy of `body`. */
static ifd_request_t *req_with_body(const char *body, size_t len) {
  ifd_request_t *req = ifd_request_new(NULL);
  assert_non_null(req);
  req->body = malloc(len != 0 ? len : 1);
  assert_non_null(req->body);
  memcpy(req->body, body, len);
  req->model_name = "m";
  return req;
}

/* A response with one FP32 output of `n` elements 0, 1, 2, ... */
static ifd_response_t *resp_fp32(ifd_request_t *req, const char *name,
                                 size_t n) {
  ifd_response_t *resp = ifd_response_new(req);
  ifd_output_t *o;
  float *v;
  size_t i;

  assert_non_null(resp);
  /* Outputs and their shapes live in the response's pool (core/infer.h). */
  resp->outputs = ifd_pool_calloc(&resp->pool, 1, sizeof(*resp->outputs));
  assert_non_null(resp->outputs);
  resp->n_outputs = resp->cap_outputs = 1;
  o = &resp->outputs[0];
  o->name = ifd_pool_strndup(&resp->pool, name, strlen(name));
  o->dtype = IFD_TYPE_FP32;
  o->shape = ifd_pool_calloc(&resp->pool, 1, sizeof(*o->shape));
  assert_non_null(o->shape);
  o->shape[0] = (int64_t)n;
  o->ndims = 1;
  v = malloc(n * sizeof(float) + 1);
  assert_non_null(v);
  for (i = 0; i < n; i++) v[i] = (float)i;
  o->buffer = v;
  o->byte_size = n * sizeof(float);
  return resp;
}

/* A slot whose connection has closed (conn == NULL), holding `req` as the
 * exchange does while a job runs. */
static ifd_http_slot_t *orphan_slot(ifd_request_t *req) {
  ifd_http_slot_t *s = calloc(1, sizeof(*s));
  assert_non_null(s);
  s->t.iov = s->t.iov_inline;
  s->req = req;
  return s;
}

static char *text_of(const ifd_hbuf_t *b) {
  char *s = malloc(ifd_hbuf_size(b) + 1);
  assert_non_null(s);
  memcpy(s, b->data + b->start, ifd_hbuf_size(b));
  s[ifd_hbuf_size(b)] = '\0';
  return s;
}

/* ---- the measure ------------------------------------------------------ */

static void test_json_bytes(void **state) {
  ifd_request_t *req = ifd_request_new(NULL);
  ifd_response_t *resp;
  (void)state;

  assert_non_null(req);
  resp = resp_fp32(req, "OUT", 100);
  /* All outputs, as JSON or all binary. */
  assert_int_equal(ifd__http_infer_json_bytes(req, resp, 0), 400);
  assert_int_equal(ifd__http_infer_json_bytes(req, resp, 1), 0);
  /* Requested outputs: binary per output; unknown names count nothing. */
  req->outputs = (ifd_output_req_t[]){{.name = "OUT"}, {.name = "NONE"}};
  req->n_outputs = 2;
  assert_int_equal(ifd__http_infer_json_bytes(req, resp, 1), 400);
  req->outputs[0].proto_flags = IFD_HTTP_OUT_BINARY;
  assert_int_equal(ifd__http_infer_json_bytes(req, resp, 0), 0);
  req->n_outputs = 0;
  ifd_response_free(resp);
  ifd_request_unref(req);
}

/* ---- jobs run inline -------------------------------------------------- */

static void test_decode_job(void **state) {
  ifd_request_t *req = req_with_body(json_req, sizeof(json_req) - 1);
  job_t j;
  float want[4] = {1.0f, 2.5f, -3.0f, 0.1f};
  (void)state;

  memset(&j, 0, sizeof(j));
  j.req = req;
  j.body_len = j.json_len = sizeof(json_req) - 1;
  ifd_errclear(&j.err);
  job_work(&j.work);
  assert_int_equal(j.rc, 0);
  assert_int_equal(j.info.binary_all, 1);
  assert_string_equal(req->id, "r");
  assert_int_equal(req->n_inputs, 1);
  assert_int_equal(req->inputs[0].byte_size, sizeof(want));
  assert_memory_equal(req->inputs[0].data, want, sizeof(want));
  /* All JSON: the text went as soon as it was decoded. */
  assert_null(req->body);
  ifd_request_unref(req);

  /* A binary input points into the body, which stays. */
  {
    static const char hdr[] =
        "{\"inputs\":[{\"name\":\"IN\",\"datatype\":\"FP32\","
        "\"shape\":[4],\"parameters\":{\"binary_data_size\":16}}]}";
    char body[sizeof(hdr) - 1 + sizeof(want)];
    memcpy(body, hdr, sizeof(hdr) - 1);
    memcpy(body + sizeof(hdr) - 1, want, sizeof(want));
    req = req_with_body(body, sizeof(body));
    memset(&j, 0, sizeof(j));
    j.req = req;
    j.body_len = sizeof(body);
    j.json_len = sizeof(hdr) - 1;
    ifd_errclear(&j.err);
    job_work(&j.work);
    assert_int_equal(j.rc, 0);
    assert_non_null(req->body);
    assert_ptr_equal(req->inputs[0].data, (char *)req->body + j.json_len);
    assert_memory_equal(req->inputs[0].data, want, sizeof(want));
    ifd_request_unref(req);
  }

  /* A decode error comes back in the job, as the inline path reports it. */
  req = req_with_body("{\"inputs\":[", 11);
  memset(&j, 0, sizeof(j));
  j.req = req;
  j.body_len = j.json_len = 11;
  ifd_errclear(&j.err);
  job_work(&j.work);
  assert_int_equal(j.rc, IFD_EINVAL);
  assert_non_null(strstr(j.err.text, "failed to parse the request JSON"));
  ifd_request_unref(req);
}

static void test_encode_job(void **state) {
  ifd_request_t *req = ifd_request_new(NULL);
  ifd_response_t *resp;
  ifd_errmsg_t err;
  ifd_hbuf_t b;
  uv_buf_t bin[1];
  unsigned nbin;
  job_t *j;
  char *got, *want;
  int binary_all;
  (void)state;

  assert_non_null(req);
  req->model_name = "m";
  resp = resp_fp32(req, "OUT", 1000);
  for (binary_all = 0; binary_all <= 1; binary_all++) {
    j = calloc(1, sizeof(*j));
    assert_non_null(j);
    j->bin = malloc(sizeof(uv_buf_t));
    assert_non_null(j->bin);
    j->req = req;
    j->encode = 1;
    j->resp = resp;
    j->version = 3;
    j->binary_all = binary_all;
    ifd_errclear(&j->err);
    job_work(&j->work);
    assert_int_equal(j->rc, 0);

    ifd_errclear(&err);
    ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
    assert_int_equal(ifd__http_infer_serialize(req, resp, 3, binary_all, &b,
                                               bin, &nbin, &err),
                     0);
    got = text_of(&j->text);
    want = text_of(&b);
    assert_string_equal(got, want);
    assert_int_equal(j->nbin, nbin);
    if (nbin != 0) assert_ptr_equal(j->bin[0].base, resp->outputs[0].buffer);
    /* The text keeps its head room for the slot's status line. */
    assert_int_equal(j->text.start, IFD_HTTP_HEADROOM);
    free(got);
    free(want);
    ifd_hbuf_free(&b);
    job_free(j);
  }
  ifd_response_free(resp);
  ifd_request_unref(req);
}

/* ---- jobs on a real pool whose connection went away ------------------- */

/* A decode job for an orphan slot, queued on `loop`. */
static ifd_http_slot_t *queue_decode(uv_loop_t *loop, const char *body,
                                     size_t len) {
  ifd_request_t *req = req_with_body(body, len);
  ifd_http_slot_t *s = orphan_slot(req);
  job_t *j = calloc(1, sizeof(*j));

  assert_non_null(j);
  j->slot = s;
  j->req = req;
  j->body_len = j->json_len = len;
  ifd_errclear(&j->err);
  assert_int_equal(job_queue(loop, j), 0);
  assert_ptr_equal(s->job, j);
  return s;
}

/* An encode job for an orphan slot that holds the response. */
static ifd_http_slot_t *queue_encode(uv_loop_t *loop, size_t n) {
  ifd_request_t *req = ifd_request_new(NULL);
  ifd_http_slot_t *s;
  job_t *j;

  assert_non_null(req);
  req->model_name = "m";
  s = orphan_slot(req);
  s->resp = resp_fp32(req, "OUT", n);
  j = calloc(1, sizeof(*j));
  assert_non_null(j);
  j->bin = malloc(sizeof(uv_buf_t));
  assert_non_null(j->bin);
  j->slot = s;
  j->req = req;
  j->encode = 1;
  j->resp = s->resp;
  ifd_errclear(&j->err);
  assert_int_equal(job_queue(loop, j), 0);
  return s;
}

static void test_orphaned_jobs_are_dropped(void **state) {
  enum { N = 24 };
  uv_loop_t loop;
  ifd_http_slot_t *s[N];
  size_t big_len = 0;
  char *big;
  int i;
  (void)state;

  /* Bodies large enough that the pool's threads are still busy when the
   * later jobs are cancelled; every job is dropped either way. */
  big = malloc(1 << 20);
  assert_non_null(big);
  big_len += (size_t)sprintf(big,
                             "{\"inputs\":[{\"name\":\"IN\",\"datatype\":"
                             "\"FP32\",\"shape\":[%d],\"data\":[",
                             100000);
  for (i = 0; i < 100000; i++) {
    memcpy(big + big_len, i != 0 ? ",0.5" : "0.5", i != 0 ? 4 : 3);
    big_len += i != 0 ? 4 : 3;
  }
  memcpy(big + big_len, "]}]}", 4);
  big_len += 4;

  assert_int_equal(uv_loop_init(&loop), 0);
  for (i = 0; i < N; i++)
    s[i] = i % 3 == 2 ? queue_encode(&loop, 100000)
                      : queue_decode(&loop, big, big_len);
  /* The connection layer cancels what has not started; a decode error and a
   * job left running are dropped the same way. */
  for (i = N / 2; i < N; i++) ifd__http_infer_cancel(s[i]);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
  free(big);
}

static void test_orphaned_decode_error(void **state) {
  uv_loop_t loop;
  (void)state;

  assert_int_equal(uv_loop_init(&loop), 0);
  queue_decode(&loop, "{\"inputs\":[", 11);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_json_bytes),
      cmocka_unit_test(test_decode_job),
      cmocka_unit_test(test_encode_job),
      cmocka_unit_test(test_orphaned_jobs_are_dropped),
      cmocka_unit_test(test_orphaned_decode_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
