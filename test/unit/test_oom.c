/*
 * test/unit/test_oom.c - allocation failure injection.
 *
 * This test is linked with -Wl,--wrap for malloc, calloc, realloc and strdup
 * (see the Makefile), so every allocation made by inferd's own objects goes
 * through the wrappers below. Each case runs an operation once to count its
 * allocations, then again failing allocation i for every i: the operation
 * must fail cleanly (an error code, never a crash) or succeed, and must free
 * whatever it allocated (ASan's leak checker in the sanitizer build, and the
 * outstanding-allocation count here, check that).
 *
 * The transports (HTTP/1.1 and gRPC connection handling) are swept the same
 * way on a real server (test/fuzz/fuzz_server.h: fake identity models, one
 * connection per exchange over a socketpair): for every i, allocation i of
 * an exchange fails; the connection must end (an answer, a 500, a gRPC
 * error or a close: never a hang), and a clean exchange right after must
 * be answered in full. Accept is checked over TCP with memory exhausted.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <uv.h>

#include "core/config.h"
#include "core/infer.h"
#include "base/objcache.h"
#include "core/server.h"
#include "frontend/grpc_infer.h"
#include "frontend/internal.h"
#include "proto/grpc_service.pb-c.h"
#include "base/pool.h"
#include "core/stats.h"
#include "base/strmap.h"
#include "triton/core/tritonbackend.h"
#include "net/grpc.h"
#include "frontend/frontend.h"
#include "test/fuzz/fuzz_server.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void *__real_mmap(void *a, size_t n, int prot, int flags, int fd, off_t off);

static long fail_at = -1; /* allocation index to fail; -1: none */
static long n_allocs;     /* allocations attempted since the last reset */
static int fail_all;      /* every allocation fails (memory exhausted) */

static int should_fail(void) {
  return n_allocs++ == fail_at || fail_all;
}

void *__wrap_malloc(size_t n) {
  return should_fail() ? NULL : __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t m) {
  return should_fail() ? NULL : __real_calloc(n, m);
}
void *__wrap_realloc(void *p, size_t n) {
  return should_fail() ? NULL : __real_realloc(p, n);
}
char *__wrap_strdup(const char *s) {
  return should_fail() ? NULL : __real_strdup(s);
}
/* The buffer pool (base/bufpool.c) maps its big buffers itself. */
void *__wrap_mmap(void *a, size_t n, int prot, int flags, int fd, off_t off) {
  return should_fail() ? MAP_FAILED : __real_mmap(a, n, prot, flags, fd, off);
}

typedef int (*op_fn)(void);

/* Runs op with no failure to learn its allocation count, then fails each
 * allocation in turn. Returns how many runs failed cleanly. */
static long sweep(op_fn op) {
  long total, i, clean_failures = 0;
  fail_at = -1;
  n_allocs = 0;
  assert_int_equal(op(), 0);
  total = n_allocs;
  assert_true(total > 0);
  for (i = 0; i < total; i++) {
    int rc;
    fail_at = i;
    n_allocs = 0;
    rc = op();
    if (rc != 0) clean_failures++;
  }
  fail_at = -1;
  return clean_failures;
}

static const char config_text[] =
    "name: \"m\" backend: \"identity\" max_batch_size: 8\n"
    "input [ { name: \"INPUT0\" data_type: TYPE_FP32 dims: [ 16 ] },\n"
    "        { name: \"INPUT1\" data_type: TYPE_STRING dims: [ -1 ] } ]\n"
    "output [ { name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [ 16 ] } ]\n"
    "dynamic_batching { preferred_batch_size: [ 2, 4 ] "
    "  priority_queue_policy { key: 1 value { max_queue_size: 3 } } }\n"
    "parameters { key: \"a\" value { string_value: \"b\" } }\n";

/* Parse, normalize, validate and render a config. */
static int config_op(void) {
  ifd_model_config_t *cfg = NULL;
  ifd_config_opts_t o = {0, 0, NULL, 0, 0, 0, NULL};
  ifd_errmsg_t err;
  json_t *j;
  int rc;

  rc = ifd_config_parse(config_text, strlen(config_text), "config.pbtxt", "m",
                        &cfg, &err);
  if (rc == 0) rc = ifd_config_normalize(cfg, &o, &err);
  if (rc == 0) rc = ifd_config_validate(cfg, &o, &err);
  if (rc == 0) {
    j = ifd_config_to_json(cfg);
    /* jansson's own allocations are not wrapped; ours inside it are. */
    if (j == NULL) rc = IFD_ENOMEM;
    json_decref(j);
  }
  ifd_config_free(cfg);
  return rc;
}

static void test_config_oom(void **state) {
  (void)state;
  assert_true(sweep(config_op) > 0);
}

static int stats_op(void) {
  ifd_model_stats_t st;
  uint64_t sizes[] = {1,  8,  2,  4,  3,  5,  6,  7, 9,
                      10, 11, 12, 13, 14, 15, 16, 17};
  size_t i;
  int rc = 0;
  memset(&st, 0, sizeof(st));
  for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
    if (ifd_stats_batch(&st, sizes[i], 1, 2, 3, 4) < 0) rc = IFD_ENOMEM;
  /* Executions are counted even when a new batch size cannot be stored. */
  assert_int_equal(st.execution_count, 17);
  ifd_stats_free(&st);
  return rc;
}

static void test_stats_oom(void **state) {
  (void)state;
  assert_true(sweep(stats_op) > 0);
}

static int strmap_op(void) {
  static char keys[300][8];
  ifd_strmap_t m;
  int i, rc = 0;
  ifd_strmap_init(&m);
  for (i = 0; i < 300 && rc == 0; i++) {
    keys[i][0] = (char)('a' + i % 26);
    keys[i][1] = (char)('a' + i / 26);
    keys[i][2] = '\0';
    rc = ifd_strmap_put(&m, keys[i], 2, keys[i]);
  }
  /* What was inserted before the failure is still there. */
  if (rc != 0)
    for (int k = 0; k < i - 1; k++)
      assert_ptr_equal(ifd_strmap_get(&m, keys[k], 2), keys[k]);
  ifd_strmap_free(&m);
  return rc;
}

static void test_strmap_oom(void **state) {
  (void)state;
  assert_true(sweep(strmap_op) > 0);
}

static int pool_op(void) {
  ifd_pool_t p;
  int i, rc = 0;
  ifd_pool_init(&p);
  for (i = 0; i < 50 && rc == 0; i++)
    if (ifd_pool_alloc(&p, (size_t)(i * 300 + 1)) == NULL) rc = IFD_ENOMEM;
  ifd_pool_destroy(&p);
  return rc;
}

static void test_pool_oom(void **state) {
  (void)state;
  assert_true(sweep(pool_op) > 0);
}

/* The metadata JSON writers (frontend/http_meta.c): a failed allocation marks
 * the buffer, every later append is a no-op, and nothing leaks. Enough rows
 * to grow the buffer several times, and a reason that is not UTF-8 (its
 * repair allocates too). */
static int meta_json_op(void) {
  ifd_model_stats_t st;
  ifd_stats_entry_t e[40];
  ifd_index_entry_t rows[40];
  ifd_hbuf_t b;
  int i, rc;
  memset(&st, 0, sizeof(st));
  for (i = 0; i < 40; i++) {
    e[i].name = "a_model_with_a_longish_name";
    e[i].version = i;
    e[i].stats = &st;
    rows[i].name = e[i].name;
    rows[i].version = i % 2 ? i : -1;
    rows[i].state = "UNAVAILABLE";
    rows[i].reason = "bad \xff byte";
  }
  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd__json_stats(&b, e, 40);
  ifd__json_repo_index(&b, rows, 40);
  rc = b.oom ? IFD_ENOMEM : 0;
  ifd_hbuf_free(&b);
  return rc;
}

static void test_meta_json_oom(void **state) {
  (void)state;
  assert_true(sweep(meta_json_op) > 0);
}

/* An HTTP infer body with JSON data, typed BYTES and parameters, decoded
 * into a request: the allocations come from the request pool. */
static int http_decode_op(void) {
  static const char body[] =
      "{\"id\":\"r1\",\"parameters\":{\"priority\":1,\"custom\":\"x\"},"
      "\"inputs\":[{\"name\":\"INPUT0\",\"datatype\":\"FP32\","
      "\"shape\":[2,2],\"data\":[[1,2],[3,4]]},{\"name\":\"INPUT1\","
      "\"datatype\":\"BYTES\",\"shape\":[2],\"data\":[\"ab\",\"c\"]}],"
      "\"outputs\":[{\"name\":\"OUTPUT0\",\"parameters\":"
      "{\"binary_data\":true}}]}";
  ifd_http_infer_info_t info;
  ifd_errmsg_t err;
  ifd_request_t *req = ifd_request_new(NULL);
  int rc;
  if (req == NULL) return IFD_ENOMEM;
  rc = ifd__http_infer_decode(req, body, sizeof(body) - 1, sizeof(body) - 1,
                              &info, &err);
  ifd_request_unref(req);
  return rc;
}

static void test_http_decode_oom(void **state) {
  (void)state;
  assert_true(sweep(http_decode_op) > 0);
}

/* A packed ModelInferRequest with raw and typed inputs, decoded. */
static uint8_t grpc_msg[512];
static size_t grpc_len;

static int grpc_decode_op(void) {
  ifd_errmsg_t err;
  ifd_request_t *req = ifd_request_new(NULL);
  int rc;
  if (req == NULL) return IFD_ENOMEM;
  rc = ifd__grpc_infer_decode(req, grpc_msg, grpc_len, &err);
  ifd_request_unref(req);
  return rc;
}

static void test_grpc_decode_oom(void **state) {
  Inference__ModelInferRequest r = INFERENCE__MODEL_INFER_REQUEST__INIT;
  Inference__ModelInferRequest__InferInputTensor in =
      INFERENCE__MODEL_INFER_REQUEST__INFER_INPUT_TENSOR__INIT;
  Inference__ModelInferRequest__InferInputTensor *ins[1] = {&in};
  int64_t shape[2] = {1, 4};
  uint8_t raw[16] = {0};
  ProtobufCBinaryData rc[1] = {{sizeof(raw), raw}};
  (void)state;
  r.model_name = "m";
  r.id = "id";
  in.name = "INPUT0";
  in.datatype = "FP32";
  in.shape = shape;
  in.n_shape = 2;
  r.inputs = ins;
  r.n_inputs = 1;
  r.raw_input_contents = rc;
  r.n_raw_input_contents = 1;
  grpc_len = inference__model_infer_request__get_packed_size(&r);
  assert_true(grpc_len <= sizeof(grpc_msg));
  inference__model_infer_request__pack(&r, grpc_msg);
  assert_true(sweep(grpc_decode_op) > 0);
}

/* ifd_request_fail with memory exhausted: the request still gets exactly
 * one FINAL error response (before, nothing was sent and a connection's
 * response queue waited forever). The protocol may drop its reference
 * before it frees the response: the response keeps the request alive. */
static ifd_response_t *failed_resp;
static int n_failed;

static void on_fail_response(ifd_response_t *resp, void *arg) {
  (void)arg;
  n_failed++;
  failed_resp = resp;
}

static void test_request_fail_oom(void **state) {
  char long_msg[1000];
  ifd_request_t *req;
  (void)state;

  req = ifd_request_new(NULL);
  assert_non_null(req);
  req->on_response = on_fail_response;
  fail_all = 1;
  ifd_request_fail(req, IFD_EUNAVAIL, "Request timeout expired");
  fail_all = 0;
  assert_int_equal(n_failed, 1);
  assert_non_null(failed_resp);
  assert_ptr_equal(failed_resp->req, req);
  assert_true(failed_resp->flags & IFD_RESPONSE_FINAL);
  assert_int_equal(failed_resp->error, IFD_EUNAVAIL);
  assert_string_equal(failed_resp->error_msg, "Request timeout expired");
  ifd_request_unref(req); /* the response still holds the request */
  assert_ptr_equal(failed_resp->req, req);
  ifd_response_free(failed_resp);

  /* A long message is cut to what fits without allocating. */
  memset(long_msg, 'x', sizeof(long_msg) - 1);
  long_msg[sizeof(long_msg) - 1] = '\0';
  n_failed = 0;
  req = ifd_request_new(NULL);
  assert_non_null(req);
  req->on_response = on_fail_response;
  fail_all = 1;
  ifd_request_fail(req, IFD_EINTERNAL, long_msg);
  fail_all = 0;
  assert_int_equal(n_failed, 1);
  assert_int_equal(failed_resp->error, IFD_EINTERNAL);
  assert_true(strlen(failed_resp->error_msg) >= 100);
  assert_true(strncmp(failed_resp->error_msg, long_msg,
                      strlen(failed_resp->error_msg)) == 0);
  ifd_response_free(failed_resp);
  ifd_request_unref(req);
}

/* The object cache: an empty cache fails cleanly when malloc does; a cached
 * object is handed out without allocating. */
static void test_objcache_oom(void **state) {
  ifd_objcache_t c;
  void *p;
  (void)state;

  ifd_objcache_init(&c, 256, 2);
  fail_all = 1;
  assert_null(ifd_objcache_get(&c));
  fail_all = 0;
  p = ifd_objcache_get(&c);
  assert_non_null(p);
  ifd_objcache_put(&c, p);
  fail_all = 1;
  assert_ptr_equal(ifd_objcache_get(&c), p);
  fail_all = 0;
  ifd_objcache_put(&c, p);
  ifd_objcache_drain(&c);
}

/* With memory exhausted, a server still hands out the requests it cached,
 * and a request's first response (its slot) needs no allocation: only a
 * second response at once fails, cleanly. */
static void test_request_and_slot_oom(void **state) {
  uv_loop_t loop;
  ifd_server_opts_t o;
  ifd_server_t *s;
  ifd_errmsg_t err;
  ifd_request_t *req;
  ifd_response_t *first;
  (void)state;

  memset(&o, 0, sizeof(o));
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ifd_server_new(&loop, &o, &s, &err), 0);
  fail_all = 1;
  assert_null(ifd_request_new(s)); /* nothing cached yet */
  fail_all = 0;
  req = ifd_request_new(s);
  assert_non_null(req);
  ifd_request_unref(req);

  fail_all = 1;
  req = ifd_request_new(s);
  assert_non_null(req); /* the cached one */
  first = ifd_response_new(req);
  assert_non_null(first);
  assert_true(first->embedded);
  assert_null(ifd_response_new(req));
  fail_all = 0;
  ifd_response_free(first);
  ifd_request_unref(req);
  ifd_server_free(s);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* A backend's small output buffers come from the response's pool (no
 * malloc once the pool has room), large ones from malloc, whose failure is
 * an error for the backend; the response frees each the right way. */
static void test_output_buffers_oom(void **state) {
  ifd_request_t *req = ifd_request_new(NULL);
  ifd_response_t *resp;
  TRITONBACKEND_Output *small = NULL, *large = NULL;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_GPU;
  TRITONSERVER_Error *e;
  int64_t mt_id = 1, shape[2] = {1, 16};
  void *buf = NULL;
  (void)state;

  assert_non_null(req);
  resp = ifd_response_new(req);
  assert_non_null(resp);
  resp->cap_outputs = 2;
  resp->outputs = ifd_pool_calloc(&resp->pool, 2, sizeof(ifd_output_t));
  assert_non_null(resp->outputs);
  fail_all = 1;
  assert_null(TRITONBACKEND_ResponseOutput((TRITONBACKEND_Response *)resp,
                                           &small, "OUTPUT0",
                                           TRITONSERVER_TYPE_FP32, shape, 2));
  assert_null(TRITONBACKEND_OutputBuffer(small, &buf, 64, &mt, &mt_id));
  assert_non_null(buf);
  assert_int_equal(mt, TRITONSERVER_MEMORY_CPU);
  assert_int_equal(mt_id, 0);
  assert_true(resp->outputs[0].buffer_in_pool);
  memset(buf, 1, 64);
  assert_null(TRITONBACKEND_ResponseOutput((TRITONBACKEND_Response *)resp,
                                           &large, "OUTPUT1",
                                           TRITONSERVER_TYPE_FP32, shape, 2));
  buf = NULL;
  e = TRITONBACKEND_OutputBuffer(large, &buf, 1 << 20, &mt, &mt_id);
  fail_all = 0;
  assert_non_null(e);
  assert_null(buf);
  TRITONSERVER_ErrorDelete(e);
  /* Now it works, from the shared buffer pool (1 MiB: mapped). */
  assert_null(TRITONBACKEND_OutputBuffer(large, &buf, 1 << 20, &mt, &mt_id));
  assert_non_null(buf);
  assert_false(resp->outputs[1].buffer_in_pool);
  assert_true(resp->outputs[1].buffer_in_bufpool);
  memset(buf, 2, 1 << 20);
  ifd_response_free(resp);
  ifd_request_unref(req);
}

/* ---- the transports ---------------------------------------------------- */

static const char h2_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/* Reads a seed of the fuzz corpus (test/fuzz/corpus/<rel>) into *out
 * (caller frees). Done with no failure injected. */
static size_t read_seed(const char *rel, uint8_t **out) {
  char path[256];
  FILE *f;
  long n;

  snprintf(path, sizeof(path), "test/fuzz/corpus/%s", rel);
  f = fopen(path, "rb");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  n = ftell(f);
  assert_true(n > 0);
  rewind(f);
  *out = __real_malloc((size_t)n);
  assert_non_null(*out);
  assert_int_equal(fread(*out, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  return (size_t)n;
}

/* Serves seed `rel` once with allocation i failing, for every i it makes;
 * after each, `probe` (a seed) must still get a complete answer starting
 * with `want` (its length checked against a clean run). */
static void sweep_transport(ifd_conn_set_t *set, const char *prefix,
                            const char *rel, const char *probe,
                            const char *want) {
  uint8_t *in, *pin;
  size_t n = read_seed(rel, &in), pn = read_seed(probe, &pin), probe_len;
  long total, i;

  fz_guard_ms = 20000;
  /* Twice without failures: the first run fills the server's caches. */
  fail_at = -1;
  assert_int_equal(fz_serve(set, prefix, pin, pn), 0);
  probe_len = fz_last.n_read;
  assert_true(probe_len > 0);
  assert_int_equal(fz_serve(set, prefix, in, n), 0);
  n_allocs = 0;
  assert_int_equal(fz_serve(set, prefix, in, n), 0);
  total = n_allocs;
  if (getenv("OOM_DEBUG")) fprintf(stderr, "%s: %ld\n", rel, total);
  assert_true(total > 0);
  for (i = 0; i < total; i++) {
    int rc;
    fail_at = i;
    n_allocs = 0;
    rc = fz_serve(set, prefix, in, n);
    fail_at = -1;
    /* The connection could not be created, or it ended by itself. */
    assert_true(rc == 0 || rc == IFD_ENOMEM);
    if (rc == 0 && fz_last.n_read != 0)
      assert_memory_equal(fz_last.head, want, strlen(want));
    assert_int_equal(fz_serve(set, prefix, pin, pn), 0);
    assert_int_equal(fz_last.n_read, probe_len);
    assert_memory_equal(fz_last.head, want, strlen(want));
  }
  /* Memory exhausted for a whole exchange. */
  fail_all = 1;
  n_allocs = 0;
  assert_true(fz_serve(set, prefix, in, n) != -1);
  fail_all = 0;
  assert_int_equal(fz_serve(set, prefix, pin, pn), 0);
  assert_int_equal(fz_last.n_read, probe_len);
  free(in);
  free(pin);
}

static const char *http_seeds[] = {
    "http1/health",          "http1/model_meta",
    "http1/config",          "http1/stats",
    "http1/index",           "http1/infer_fp32",
    "http1/infer_bytes",     "http1/infer_multi",
    "http1/infer_binary",    "http1/infer_chunked",
    "http1/pipelined",       "http1/expect_continue",
    "http1/generate_stream", "http1/bad_json",
    "http1/long_url",        NULL};

static void test_http_transport_oom(void **state) {
  ifd_http_t *h;
  ifd_http_opts_t o;
  ifd_errmsg_t err;
  int i;
  (void)state;

  fz_server_init();
  memset(&o, 0, sizeof(o));
  o.host = "127.0.0.1";
  assert_int_equal(ifd_http_start(&fz_loop, fz_server, &o, &h, &err), 0);
  for (i = 0; http_seeds[i] != NULL; i++)
    sweep_transport((ifd_conn_set_t *)(void *)ifd__http_transport(h), NULL,
                    http_seeds[i], "http1/health", "HTTP/1.1 ");
  ifd_http_stop(h, 0, fz_on_front_done, NULL);
  assert_int_equal(fz_server_fini(), 0);
}

static const char *grpc_seeds[] = {"grpc/live_ready",
                                   "grpc/model_meta",
                                   "grpc/config",
                                   "grpc/stats_index",
                                   "grpc/infer_raw_fp32",
                                   "grpc/infer_typed_fp32",
                                   "grpc/infer_typed_bytes",
                                   "grpc/stream_infer",
                                   "grpc/concurrent",
                                   "grpc/rst_stream",
                                   "grpc/unknown_method",
                                   "grpc/health",
                                   NULL};

static void test_grpc_transport_oom(void **state) {
  ifd_grpc_t *g;
  ifd_grpc_opts_t o;
  ifd_errmsg_t err;
  int i;
  (void)state;

  fz_server_init();
  memset(&o, 0, sizeof(o));
  o.host = "127.0.0.1";
  assert_int_equal(ifd_grpc_start(&fz_loop, fz_server, &o, &g, &err), 0);
  /* Every answer starts with the server's SETTINGS frame: 3 length bytes,
   * then type 4. */
  for (i = 0; grpc_seeds[i] != NULL; i++)
    sweep_transport((ifd_conn_set_t *)(void *)g, h2_preface, grpc_seeds[i],
                    "grpc/live_ready", "");
  ifd_grpc_stop(g, 0, fz_on_front_done, NULL);
  assert_int_equal(fz_server_fini(), 0);
}

/* ---- accept with memory exhausted (TCP) ---------------------------------- */

typedef struct tcp_client {
  uv_tcp_t tcp;
  uv_connect_t creq;
  uv_write_t wreq;
  uv_shutdown_t sreq;
  char buf[4096];
  char head[64];
  size_t n_read;
  int eof, closed, half_close;
  const char *req;
  size_t req_len;
} tcp_client_t;

static void tc_alloc(uv_handle_t *h, size_t sugg, uv_buf_t *b) {
  tcp_client_t *c = h->data;
  (void)sugg;
  *b = uv_buf_init(c->buf, sizeof(c->buf));
}

static void tc_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
  tcp_client_t *c = s->data;
  if (n > 0) {
    if (c->n_read < sizeof(c->head) - 1) {
      size_t k = sizeof(c->head) - 1 - c->n_read;
      memcpy(c->head + c->n_read, b->base, k < (size_t)n ? k : (size_t)n);
    }
    c->n_read += (size_t)n;
  } else if (n < 0) {
    c->eof = 1;
    uv_read_stop(s);
  }
}

static void tc_written(uv_write_t *w, int status) {
  (void)w;
  (void)status;
}

static void tc_shut(uv_shutdown_t *r, int status) {
  (void)r;
  (void)status;
}

static void tc_connected(uv_connect_t *r, int status) {
  tcp_client_t *c = r->handle->data;
  uv_buf_t b = uv_buf_init((char *)c->req, (unsigned)c->req_len);
  if (status < 0) {
    c->eof = 1;
    return;
  }
  uv_read_start((uv_stream_t *)&c->tcp, tc_alloc, tc_read);
  uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, tc_written);
  if (c->half_close) uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, tc_shut);
}

static void tc_closed(uv_handle_t *h) {
  ((tcp_client_t *)h->data)->closed = 1;
}

/* Connects to the port, sends `req` (then half-closes when `half_close`:
 * an HTTP/2 connection stays open otherwise), reads until the server
 * closes. */
static void tcp_exchange(int port, const void *req, size_t len, int half_close,
                         tcp_client_t *c) {
  struct sockaddr_in a;

  memset(c, 0, sizeof(*c));
  c->req = req;
  c->req_len = len;
  c->half_close = half_close;
  uv_ip4_addr("127.0.0.1", port, &a);
  assert_int_equal(uv_tcp_init(&fz_loop, &c->tcp), 0);
  c->tcp.data = c;
  assert_int_equal(uv_tcp_connect(&c->creq, &c->tcp,
                                  (const struct sockaddr *)&a, tc_connected),
                   0);
  while (!c->eof) uv_run(&fz_loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&c->tcp, tc_closed);
  while (!c->closed) uv_run(&fz_loop, UV_RUN_ONCE);
}

/* The listener keeps accepting with memory exhausted: the connection
 * allocated ahead serves (or fails with a 500 / a close), the next one is
 * accepted and closed at once, and once memory is back a connection is
 * served in full. */
static void test_accept_oom(void **state) {
  static const char req[] =
      "GET /v2/health/ready HTTP/1.1\r\nConnection: close\r\n\r\n";
  static tcp_client_t c;
  ifd_http_t *h;
  ifd_http_opts_t o;
  ifd_errmsg_t err;
  (void)state;

  fz_server_init();
  memset(&o, 0, sizeof(o));
  o.host = "127.0.0.1";
  assert_int_equal(ifd_http_start(&fz_loop, fz_server, &o, &h, &err), 0);
  fail_all = 1;
  tcp_exchange(ifd_http_port(h), req, strlen(req), 0, &c);
  if (c.n_read != 0) assert_memory_equal(c.head, "HTTP/1.1 ", 9);
  tcp_exchange(ifd_http_port(h), req, strlen(req), 0, &c);
  assert_int_equal(c.n_read, 0);
  fail_all = 0;
  tcp_exchange(ifd_http_port(h), req, strlen(req), 0, &c);
  assert_memory_equal(c.head, "HTTP/1.1 200 OK\r\n", 17);
  ifd_http_stop(h, 0, fz_on_front_done, NULL);
  assert_int_equal(fz_server_fini(), 0);
}

/* The same for gRPC: the client sends the preface and a ServerLive call,
 * then half-closes; a served connection answers with the server's
 * SETTINGS frame first. */
static void test_grpc_accept_oom(void **state) {
  static tcp_client_t c;
  uint8_t *seed, *req;
  size_t n, len;
  ifd_grpc_t *g;
  ifd_grpc_opts_t o;
  ifd_errmsg_t err;
  (void)state;

  n = read_seed("grpc/live_ready", &seed);
  len = strlen(h2_preface) + n;
  req = __real_malloc(len);
  assert_non_null(req);
  memcpy(req, h2_preface, strlen(h2_preface));
  memcpy(req + strlen(h2_preface), seed, n);
  fz_server_init();
  memset(&o, 0, sizeof(o));
  o.host = "127.0.0.1";
  assert_int_equal(ifd_grpc_start(&fz_loop, fz_server, &o, &g, &err), 0);
  fail_all = 1;
  tcp_exchange(ifd_grpc_port(g), req, len, 1, &c);
  tcp_exchange(ifd_grpc_port(g), req, len, 1, &c);
  assert_int_equal(c.n_read, 0);
  fail_all = 0;
  tcp_exchange(ifd_grpc_port(g), req, len, 1, &c);
  assert_true(c.n_read >= 9);
  assert_int_equal(c.head[3], 4); /* SETTINGS */
  ifd_grpc_stop(g, 0, fz_on_front_done, NULL);
  assert_int_equal(fz_server_fini(), 0);
  free(req);
  free(seed);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_config_oom),
      cmocka_unit_test(test_stats_oom),
      cmocka_unit_test(test_strmap_oom),
      cmocka_unit_test(test_pool_oom),
      cmocka_unit_test(test_meta_json_oom),
      cmocka_unit_test(test_http_decode_oom),
      cmocka_unit_test(test_grpc_decode_oom),
      cmocka_unit_test(test_request_fail_oom),
      cmocka_unit_test(test_objcache_oom),
      cmocka_unit_test(test_request_and_slot_oom),
      cmocka_unit_test(test_output_buffers_oom),
      cmocka_unit_test(test_http_transport_oom),
      cmocka_unit_test(test_grpc_transport_oom),
      cmocka_unit_test(test_accept_oom),
      cmocka_unit_test(test_grpc_accept_oom),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
