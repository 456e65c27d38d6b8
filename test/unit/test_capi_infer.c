/*
 * test/unit/test_capi_infer.c - in-process inference through Triton's C API
 * (backend_api/capi/capi_infer.c, capi_request.c), from an application's seat.
 *
 * This program is an embedding application: it links
 * build/lib/libtritonserver.so (no internal header, no core object) and
 * includes triton/core/tritonserver.h only (capi_fixture.h: a temporary
 * repository, the server, an allocator, a waiter). It checks synchronous
 * and asynchronous inference with an allocator of its own (outputs written
 * in place: the buffer the allocator gave is the one
 * InferenceResponseOutput returns, and every buffer comes back through
 * release_fn before InferenceResponseDelete returns), an ensemble's output
 * copied into the allocator's buffer, callbacks on the server's loop
 * thread, one request resubmitted from its own release callback, a cancel
 * from a response callback, 8 threads x 500 requests at once, request
 * reuse, raw and multi-buffer inputs, the request's setters and getters,
 * flags and correlation IDs reaching a sequence model, cancellation of a
 * queued and of an executing request, the errors ServerInferAsync returns
 * and those that come back as a FINAL error response (unknown model or
 * version, shapes, byte size, data type, unknown input or output, a failing
 * allocator), and a decoupled model (several responses, then FINAL with a
 * NULL response). test_capi_stop.c stops servers with requests in flight.
 * Leaks: the allocator's counts here, ASan/LSan in the ASan build.
 *
 * No assertion depends on timing: waits are bounded (WAIT_S) only so that
 * a bug fails the test instead of hanging it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nftw, mkdtemp, readlink */
#endif
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "capi_fixture.h"

#define N_THREADS 8      /* the concurrency test: threads ... */
#define N_PER_THREAD 500 /* ... times requests each */

static pthread_t main_thread; /* the test's: callbacks never run on it */

static int setup(void **state) {
  (void)state;
  main_thread = pthread_self();
  if (capi_fixture_init() < 0) return -1;
  server = server_start(30);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  if (server != NULL) OK(TRITONSERVER_ServerDelete(server));
  server = NULL;
  capi_fixture_cleanup();
  return 0;
}

/* ---- inference
 * ---------------------------------------------------------------
 */

/* One request, waited for: output in place, callbacks on the loop thread. */
static void test_infer_sync(void **state) {
  TRITONSERVER_ResponseAllocator *a = allocator_new();
  TRITONSERVER_InferenceRequest *r;
  out_ctx_t ctx;
  waiter_t w;
  float in[16];
  const char *id;
  (void)state;
  fill(in, 16, 1.0f);
  memset(&ctx, 0, sizeof(ctx));
  waiter_init(&w);
  r = fp32_request(in);
  OK(TRITONSERVER_InferenceRequestSetId(r, "sync-1"));
  set_callbacks(r, a, &ctx, &w);
  OK(TRITONSERVER_ServerInferAsync(server, r, NULL));
  waiter_wait(&w);
  assert_int_equal(w.n_resp, 1);
  assert_int_equal(w.n_final, 1);
  assert_int_equal(w.flags[0], TRITONSERVER_RESPONSE_COMPLETE_FINAL);
  assert_int_equal(w.released, 1);
  /* Both callbacks ran on one thread, the server's, not this one. */
  assert_int_equal(w.other_threads, 0);
  assert_int_equal(pthread_equal(w.cb_thread, main_thread), 0);
  check_fp32_response(w.resp[0], in, &ctx);
  OK(TRITONSERVER_InferenceResponseId(w.resp[0], &id));
  assert_string_equal(id, "sync-1");
  /* The buffer goes back when the response is deleted (this thread). */
  assert_int_equal(atomic_load(&n_releases) + 1, atomic_load(&n_allocs));
  OK(TRITONSERVER_InferenceResponseDelete(w.resp[0]));
  w.resp[0] = NULL;
  OK(TRITONSERVER_InferenceRequestDelete(r));
  waiter_destroy(&w);
  OK(TRITONSERVER_ResponseAllocatorDelete(a));
  /* The delete from a foreign thread is posted to the loop: a later
   * request's round trip orders it (events run in order). */
  {
    waiter_t w2;
    float in2[16];
    fill(in2, 16, 3.0f);
    waiter_init(&w2);
    w2.keep = 0;
    r = fp32_request(in2);
    set_callbacks(r, NULL, NULL, &w2);
    OK(TRITONSERVER_ServerInferAsync(server, r, NULL));
    waiter_wait(&w2);
    assert_int_equal(w2.n_errors, 0);
    OK(TRITONSERVER_InferenceRequestDelete(r));
    waiter_destroy(&w2);
  }
  check_no_buffer_left();
}

/* The response cache through the in-process API: the hit's outputs (the
 * cache entry's bytes) are copied into the buffer the application's
 * allocator gives, as an ensemble's are; the model ran once. */
static void test_cache_hit(void **state) {
  static const int64_t shape[2] = {1, 16};
  TRITONSERVER_ResponseAllocator *a = allocator_new();
  TRITONSERVER_InferenceRequest *r;
  TRITONSERVER_Message *msg;
  const char *json;
  size_t len;
  float in[16];
  int i;
  (void)state;
  fill(in, 16, 7.0f);
  for (i = 0; i < 2; i++) {
    out_ctx_t ctx;
    waiter_t w;
    const char *name;
    TRITONSERVER_DataType dt;
    const int64_t *sh;
    uint64_t ndims;
    const void *base;
    size_t size;
    TRITONSERVER_MemoryType mt;
    int64_t mid;
    void *userp;
    memset(&ctx, 0, sizeof(ctx));
    waiter_init(&w);
    OK(TRITONSERVER_InferenceRequestNew(&r, server, "identity_cached", -1));
    OK(TRITONSERVER_InferenceRequestAddInput(r, "INPUT0",
                                             TRITONSERVER_TYPE_FP32, shape, 2));
    OK(TRITONSERVER_InferenceRequestAppendInputData(
        r, "INPUT0", in, sizeof(in), TRITONSERVER_MEMORY_CPU, 0));
    set_callbacks(r, a, &ctx, &w);
    OK(TRITONSERVER_ServerInferAsync(server, r, NULL));
    waiter_wait(&w);
    assert_int_equal(w.n_final, 1);
    OK(TRITONSERVER_InferenceResponseError(w.resp[0]));
    OK(TRITONSERVER_InferenceResponseOutput(w.resp[0], 0, &name, &dt, &sh,
                                            &ndims, &base, &size, &mt, &mid,
                                            &userp));
    assert_string_equal(name, "OUTPUT0");
    assert_int_equal(size, sizeof(in));
    assert_memory_equal(base, in, sizeof(in));
    /* The application's own buffer, on the hit too. */
    assert_int_equal(atomic_load(&ctx.allocs), 1);
    assert_ptr_equal(base, ctx.given[0]);
    OK(TRITONSERVER_InferenceResponseDelete(w.resp[0]));
    w.resp[0] = NULL;
    OK(TRITONSERVER_InferenceRequestDelete(r));
    waiter_destroy(&w);
  }
  OK(TRITONSERVER_ServerModelStatistics(server, "identity_cached", -1, &msg));
  OK(TRITONSERVER_MessageSerializeToJson(msg, &json, &len));
  assert_non_null(strstr(json, "\"execution_count\":1,"));
  assert_non_null(strstr(json, "\"cache_hit\":{\"count\":1,"));
  assert_non_null(strstr(json, "\"cache_miss\":{\"count\":1,"));
  OK(TRITONSERVER_MessageDelete(msg));
  OK(TRITONSERVER_ResponseAllocatorDelete(a));
}

/* Many requests in flight at once, each with its own data. */
#define N_ASYNC 64
static void test_infer_async(void **state) {
  TRITONSERVER_ResponseAllocator *a = allocator_new();
  TRITONSERVER_InferenceRequest *r[N_ASYNC];
  out_ctx_t *ctx = calloc(N_ASYNC, sizeof(*ctx));
  waiter_t *w = calloc(N_ASYNC, sizeof(*w));
  float(*in)[16] = calloc(N_ASYNC, sizeof(*in));
  int i;
  (void)state;
  assert_non_null(ctx);
  assert_non_null(w);
  assert_non_null(in);
  for (i = 0; i < N_ASYNC; i++) {
    char id[32];
    fill(in[i], 16, (float)i * 100.0f);
    waiter_init(&w[i]);
    r[i] = fp32_request(in[i]);
    snprintf(id, sizeof(id), "async-%d", i);
    OK(TRITONSERVER_InferenceRequestSetId(r[i], id));
    set_callbacks(r[i], a, &ctx[i], &w[i]);
  }
  for (i = 0; i < N_ASYNC; i++)
    OK(TRITONSERVER_ServerInferAsync(server, r[i], NULL));
  for (i = 0; i < N_ASYNC; i++) {
    const char *id;
    char want[32];
    waiter_wait(&w[i]);
    assert_int_equal(w[i].n_resp, 1);
    assert_int_equal(w[i].released, 1);
    check_fp32_response(w[i].resp[0], in[i], &ctx[i]);
    OK(TRITONSERVER_InferenceResponseId(w[i].resp[0], &id));
    snprintf(want, sizeof(want), "async-%d", i);
    assert_string_equal(id, want);
  }
  for (i = 0; i < N_ASYNC; i++) {
    waiter_destroy(&w[i]); /* deletes the response */
    OK(TRITONSERVER_InferenceRequestDelete(r[i]));
  }
  free(ctx);
  free(w);
  free(in);
  OK(TRITONSERVER_ResponseAllocatorDelete(a));
}

/* A request resubmitted from its own release callback, 50 times. */
static void test_resubmit_from_release(void **state) {
  TRITONSERVER_InferenceRequest *r;
  waiter_t w;
  float in[16];
  (void)state;
  fill(in, 16, 7.0f);
  waiter_init(&w);
  w.keep = 0;
  r = fp32_request(in);
  set_callbacks(r, NULL, NULL, &w);
  w.resubmit = r;
  w.resubmit_left = 50;
  OK(TRITONSERVER_ServerInferAsync(server, r, NULL));
  waiter_wait(&w);
  assert_int_equal(w.resubmit_left, 0);
  assert_int_equal(w.released, 1);
  assert_int_equal(w.n_resp, 51);
  assert_int_equal(w.n_errors, 0);
  assert_int_equal(w.other_threads, 0);
  OK(TRITONSERVER_InferenceRequestDelete(r));
  waiter_destroy(&w);
}

/* ---- many threads
 * ------------------------------------------------------------
 */

typedef struct worker {
  pthread_t thread;
  int index;
  TRITONSERVER_ResponseAllocator *a; /* shared */
  int done;                          /* requests that checked out */
  char failure[256];                 /* the first failure, "" when none */
} worker_t;

static void *worker_main(void *arg) {
  worker_t *wk = arg;
  TRITONSERVER_InferenceRequest *r;
  float in[16] = {0};
  int i;
  r = fp32_request(in); /* one request, reused after each release */
  for (i = 0; i < N_PER_THREAD && wk->failure[0] == 0; i++) {
    out_ctx_t ctx;
    waiter_t w;
    TRITONSERVER_Error *e;
    const void *base = NULL;
    const char *name;
    TRITONSERVER_DataType dt;
    const int64_t *shape;
    uint64_t nd;
    size_t size = 0;
    TRITONSERVER_MemoryType mt;
    int64_t mid;
    void *userp;
    fill(in, 16, (float)(wk->index * 100000 + i));
    memset(&ctx, 0, sizeof(ctx));
    waiter_init(&w);
    set_callbacks(r, wk->a, &ctx, &w);
    e = TRITONSERVER_ServerInferAsync(server, r, NULL);
    if (e != NULL) {
      snprintf(wk->failure, sizeof(wk->failure), "infer %d: %s", i,
               TRITONSERVER_ErrorMessage(e));
      TRITONSERVER_ErrorDelete(e);
      waiter_destroy(&w);
      break;
    }
    waiter_wait(&w);
    e = w.resp[0] != NULL ? TRITONSERVER_InferenceResponseError(w.resp[0])
                          : NULL;
    if (w.resp[0] == NULL || e != NULL ||
        TRITONSERVER_InferenceResponseOutput(w.resp[0], 0, &name, &dt, &shape,
                                             &nd, &base, &size, &mt, &mid,
                                             &userp) != NULL ||
        size != sizeof(in) || base != ctx.given[0] ||
        memcmp(base, in, sizeof(in)) != 0 || w.n_resp != 1)
      snprintf(wk->failure, sizeof(wk->failure),
               "request %d of thread %d: wrong response (%s)", i, wk->index,
               e != NULL ? TRITONSERVER_ErrorMessage(e) : "bad output");
    else
      wk->done++;
    waiter_destroy(&w); /* deletes the response: from this thread */
  }
  TRITONSERVER_ErrorDelete(TRITONSERVER_InferenceRequestDelete(r));
  return NULL;
}

static void test_many_threads(void **state) {
  worker_t wk[N_THREADS];
  int i;
  (void)state;
  memset(wk, 0, sizeof(wk));
  wk[0].a = allocator_new();
  for (i = 0; i < N_THREADS; i++) {
    wk[i].index = i;
    wk[i].a = wk[0].a;
    assert_int_equal(pthread_create(&wk[i].thread, NULL, worker_main, &wk[i]),
                     0);
  }
  for (i = 0; i < N_THREADS; i++) pthread_join(wk[i].thread, NULL);
  for (i = 0; i < N_THREADS; i++) {
    if (wk[i].failure[0] != 0) fail_msg("%s", wk[i].failure);
    assert_int_equal(wk[i].done, N_PER_THREAD);
  }
  OK(TRITONSERVER_ResponseAllocatorDelete(wk[0].a));
}

/* ---- the request object
 * ------------------------------------------------------
 */

/* Setters and getters; what is refused while the request is in flight. */
static void test_request_fields(void **state) {
  TRITONSERVER_InferenceRequest *r;
  waiter_t w;
  const char *s;
  uint32_t u32;
  uint64_t u64;
  int32_t in = LONG_MS;
  static const int64_t shape[1] = {1};
  bool cancelled = true;
  (void)state;
  OK(TRITONSERVER_InferenceRequestNew(&r, server, "sleep", -1));
  OK(TRITONSERVER_InferenceRequestId(r, &s));
  assert_string_equal(s, "");
  OK(TRITONSERVER_InferenceRequestSetId(r, "fields-1"));
  OK(TRITONSERVER_InferenceRequestId(r, &s));
  assert_string_equal(s, "fields-1");
  OK(TRITONSERVER_InferenceRequestSetFlags(
      r, TRITONSERVER_REQUEST_FLAG_SEQUENCE_START));
  OK(TRITONSERVER_InferenceRequestFlags(r, &u32));
  assert_int_equal(u32, TRITONSERVER_REQUEST_FLAG_SEQUENCE_START);
  OK(TRITONSERVER_InferenceRequestSetFlags(r, 0));
  OK(TRITONSERVER_InferenceRequestSetCorrelationId(r, 42));
  OK(TRITONSERVER_InferenceRequestCorrelationId(r, &u64));
  assert_int_equal(u64, 42);
  FAILS(TRITONSERVER_InferenceRequestCorrelationIdString(r, &s),
        TRITONSERVER_ERROR_INVALID_ARG, "not a string");
  OK(TRITONSERVER_InferenceRequestSetCorrelationIdString(r, "seq-a"));
  OK(TRITONSERVER_InferenceRequestCorrelationIdString(r, &s));
  assert_string_equal(s, "seq-a");
  FAILS(TRITONSERVER_InferenceRequestCorrelationId(r, &u64),
        TRITONSERVER_ERROR_INVALID_ARG, "not an unsigned int");
  OK(TRITONSERVER_InferenceRequestSetCorrelationId(r, 0));
  OK(TRITONSERVER_InferenceRequestSetPriority(r, 3));
  OK(TRITONSERVER_InferenceRequestPriority(r, &u32));
  assert_int_equal(u32, 3);
  OK(TRITONSERVER_InferenceRequestSetPriorityUInt64(r, 0));
  OK(TRITONSERVER_InferenceRequestPriorityUInt64(r, &u64));
  assert_int_equal(u64, 0);
  OK(TRITONSERVER_InferenceRequestSetTimeoutMicroseconds(r, 0));
  OK(TRITONSERVER_InferenceRequestTimeoutMicroseconds(r, &u64));
  assert_int_equal(u64, 0);
  OK(TRITONSERVER_InferenceRequestSetStringParameter(r, "s", "v"));
  OK(TRITONSERVER_InferenceRequestSetIntParameter(r, "i", -5));
  OK(TRITONSERVER_InferenceRequestSetBoolParameter(r, "b", true));
  OK(TRITONSERVER_InferenceRequestSetDoubleParameter(r, "d", 0.25));
  OK(TRITONSERVER_InferenceRequestSetStringParameter(r, "s", "replaced"));
  /* Inputs and outputs by name. */
  OK(TRITONSERVER_InferenceRequestAddInput(r, "IN", TRITONSERVER_TYPE_INT32,
                                           shape, 1));
  FAILS(TRITONSERVER_InferenceRequestAddInput(r, "IN", TRITONSERVER_TYPE_INT32,
                                              shape, 1),
        TRITONSERVER_ERROR_INVALID_ARG, "already exists");
  FAILS(TRITONSERVER_InferenceRequestAppendInputData(
            r, "NOPE", &in, sizeof(in), TRITONSERVER_MEMORY_CPU, 0),
        TRITONSERVER_ERROR_INVALID_ARG, "does not exist");
  FAILS(TRITONSERVER_InferenceRequestRemoveInput(r, "NOPE"),
        TRITONSERVER_ERROR_INVALID_ARG, "does not exist");
  OK(TRITONSERVER_InferenceRequestAppendInputData(r, "IN", &in, sizeof(in),
                                                  TRITONSERVER_MEMORY_CPU, 0));
  OK(TRITONSERVER_InferenceRequestAddRequestedOutput(r, "OUT"));
  FAILS(TRITONSERVER_InferenceRequestAddRequestedOutput(r, "OUT"),
        TRITONSERVER_ERROR_INVALID_ARG, "already requested");
  OK(TRITONSERVER_InferenceRequestRemoveRequestedOutput(r, "OUT"));
  FAILS(TRITONSERVER_InferenceRequestRemoveRequestedOutput(r, "OUT"),
        TRITONSERVER_ERROR_INVALID_ARG, "does not exist");
  OK(TRITONSERVER_InferenceRequestAddRequestedOutput(r, "OUT"));

  /* In flight (a sleep only a cancel ends): nothing may change. */
  waiter_init(&w);
  set_callbacks(r, NULL, NULL, &w);
  OK(TRITONSERVER_ServerInferAsync(server, r, NULL));
  FAILS(TRITONSERVER_ServerInferAsync(server, r, NULL),
        TRITONSERVER_ERROR_UNAVAILABLE, "in flight");
  FAILS(TRITONSERVER_InferenceRequestSetId(r, "x"),
        TRITONSERVER_ERROR_UNAVAILABLE, "in flight");
  FAILS(TRITONSERVER_InferenceRequestRemoveAllInputs(r),
        TRITONSERVER_ERROR_UNAVAILABLE, "in flight");
  FAILS(TRITONSERVER_InferenceRequestSetIntParameter(r, "i", 1),
        TRITONSERVER_ERROR_UNAVAILABLE, "in flight");
  FAILS(TRITONSERVER_InferenceRequestDelete(r), TRITONSERVER_ERROR_UNAVAILABLE,
        "in flight");
  OK(TRITONSERVER_InferenceRequestIsCancelled(r, &cancelled));
  assert_false(cancelled);
  OK(TRITONSERVER_InferenceRequestCancel(r));
  OK(TRITONSERVER_InferenceRequestIsCancelled(r, &cancelled));
  assert_true(cancelled);
  waiter_wait(&w);
  assert_int_equal(w.n_resp, 1);
  assert_non_null(w.resp[0]);
  {
    TRITONSERVER_Error *e = TRITONSERVER_InferenceResponseError(w.resp[0]);
    assert_non_null(e);
    assert_int_equal(TRITONSERVER_ErrorCode(e), TRITONSERVER_ERROR_CANCELLED);
  }
  waiter_destroy(&w);
  /* Released: the application's again. */
  OK(TRITONSERVER_InferenceRequestSetId(r, "fields-2"));
  OK(TRITONSERVER_InferenceRequestRemoveAllInputData(r, "IN"));
  OK(TRITONSERVER_InferenceRequestRemoveAllInputs(r));
  OK(TRITONSERVER_InferenceRequestRemoveAllRequestedOutputs(r));
  OK(TRITONSERVER_InferenceRequestDelete(r));
}

/* A request reused after its release, with other data each time; an input
 * given in several buffers. */
static void test_request_reuse(void **state) {
  TRITONSERVER_ResponseAllocator *a = allocator_new();
  TRITONSERVER_InferenceRequest *r;
  float in[16] = {0};
  int round;
  (void)state;
  r = fp32_request(in);
  for (round = 0; round < 4; round++) {
    out_ctx_t ctx;
    waiter_t w;
    fill(in, 16, (float)round * 10.0f);
    memset(&ctx, 0, sizeof(ctx));
    waiter_init(&w);
    if (round >= 2) {
      /* The same tensor in two pieces. */
      OK(TRITONSERVER_InferenceRequestRemoveAllInputData(r, "INPUT0"));
      OK(TRITONSERVER_InferenceRequestAppendInputData(
          r, "INPUT0", in, 5 * sizeof(float), TRITONSERVER_MEMORY_CPU, 0));
      OK(TRITONSERVER_InferenceRequestAppendInputData(
          r, "INPUT0", in + 5, 11 * sizeof(float), TRITONSERVER_MEMORY_CPU, 0));
    }
    set_callbacks(r, a, &ctx, &w);
    OK(TRITONSERVER_ServerInferAsync(server, r, NULL));
    waiter_wait(&w);
    check_fp32_response(w.resp[0], in, &ctx);
    waiter_destroy(&w);
  }
  OK(TRITONSERVER_InferenceRequestDelete(r));
  OK(TRITONSERVER_ResponseAllocatorDelete(a));
}

/* A raw input takes the model's only input's type and shape. */
static void test_raw_input(void **state) {
  TRITONSERVER_ResponseAllocator *a = allocator_new();
  TRITONSERVER_InferenceRequest *r;
  out_ctx_t ctx;
  waiter_t w;
  float in[16];
  (void)state;
  fill(in, 16, 9.0f);
  memset(&ctx, 0, sizeof(ctx));
  waiter_init(&w);
  OK(TRITONSERVER_InferenceRequestNew(&r, server, "identity_fp32", -1));
  OK(TRITONSERVER_InferenceRequestAddRawInput(r, "INPUT0"));
  OK(TRITONSERVER_InferenceRequestAppendInputData(r, "INPUT0", in, sizeof(in),
                                                  TRITONSERVER_MEMORY_CPU, 0));
  set_callbacks(r, a, &ctx, &w);
  OK(TRITONSERVER_ServerInferAsync(server, r, NULL));
  waiter_wait(&w);
  check_fp32_response(w.resp[0], in, &ctx);
  waiter_destroy(&w);
  OK(TRITONSERVER_InferenceRequestDelete(r));
  OK(TRITONSERVER_ResponseAllocatorDelete(a));
}

/* Sends one INT32 to a seqacc model; returns OUTPUT, and OUT_CORRID in
 * corrid (BYTES: a 4-byte length, then the text). */
static int32_t seq_step(const char *model, uint64_t id, const char *sid,
                        uint32_t flags, int32_t value, char *corrid,
                        size_t corrid_len) {
  static const int64_t shape[2] = {1, 1};
  TRITONSERVER_ResponseAllocator *a = allocator_new();
  TRITONSERVER_InferenceRequest *r;
  out_ctx_t ctx;
  waiter_t w;
  int32_t out = INT32_MIN;
  uint32_t i, n;
  memset(&ctx, 0, sizeof(ctx));
  waiter_init(&w);
  OK(TRITONSERVER_InferenceRequestNew(&r, server, model, -1));
  if (sid != NULL)
    OK(TRITONSERVER_InferenceRequestSetCorrelationIdString(r, sid));
  else
    OK(TRITONSERVER_InferenceRequestSetCorrelationId(r, id));
  OK(TRITONSERVER_InferenceRequestSetFlags(r, flags));
  OK(TRITONSERVER_InferenceRequestAddInput(r, "INPUT", TRITONSERVER_TYPE_INT32,
                                           shape, 2));
  OK(TRITONSERVER_InferenceRequestAppendInputData(
      r, "INPUT", &value, sizeof(value), TRITONSERVER_MEMORY_CPU, 0));
  OK(TRITONSERVER_InferenceRequestAddRequestedOutput(r, "OUTPUT"));
  OK(TRITONSERVER_InferenceRequestAddRequestedOutput(r, "OUT_CORRID"));
  set_callbacks(r, a, &ctx, &w);
  OK(TRITONSERVER_ServerInferAsync(server, r, NULL));
  waiter_wait(&w);
  assert_non_null(w.resp[0]);
  OK(TRITONSERVER_InferenceResponseError(w.resp[0]));
  OK(TRITONSERVER_InferenceResponseOutputCount(w.resp[0], &n));
  assert_int_equal(n, 2);
  for (i = 0; i < n; i++) {
    const char *name;
    TRITONSERVER_DataType dt;
    const int64_t *shp;
    uint64_t nd;
    const void *base;
    size_t size;
    TRITONSERVER_MemoryType mt;
    int64_t mid;
    void *userp;
    OK(TRITONSERVER_InferenceResponseOutput(w.resp[0], i, &name, &dt, &shp, &nd,
                                            &base, &size, &mt, &mid, &userp));
    if (strcmp(name, "OUTPUT") == 0) {
      assert_int_equal(size, sizeof(out));
      memcpy(&out, base, sizeof(out));
    } else {
      uint32_t len;
      assert_string_equal(name, "OUT_CORRID");
      assert_int_equal(dt, TRITONSERVER_TYPE_BYTES);
      assert_true(size >= 4);
      memcpy(&len, base, 4);
      assert_int_equal(size, 4 + (size_t)len);
      assert_true(len < corrid_len);
      memcpy(corrid, (const char *)base + 4, len);
      corrid[len] = 0;
    }
  }
  waiter_destroy(&w);
  OK(TRITONSERVER_InferenceRequestDelete(r));
  OK(TRITONSERVER_ResponseAllocatorDelete(a));
  return out;
}

/* Flags and correlation IDs reach the sequence batcher and the backend. */
static void test_sequence_round_trip(void **state) {
  const uint32_t START = TRITONSERVER_REQUEST_FLAG_SEQUENCE_START,
                 END = TRITONSERVER_REQUEST_FLAG_SEQUENCE_END;
  char cid[64];
  (void)state;
  assert_int_equal(seq_step("seq_u64", 1001, NULL, START, 5, cid, 64), 5);
  assert_string_equal(cid, "1001");
  assert_int_equal(seq_step("seq_u64", 1001, NULL, 0, 3, cid, 64), 8);
  /* END adds the numeric CORRID. */
  assert_int_equal(seq_step("seq_u64", 1001, NULL, END, 2, cid, 64), 1011);
  assert_int_equal(seq_step("seq_str", 0, "seq-x", START, 4, cid, 64), 4);
  assert_string_equal(cid, "seq-x");
  assert_int_equal(seq_step("seq_str", 0, "seq-x", END, 6, cid, 64), 10);
  assert_string_equal(cid, "seq-x");
}

/* ---- cancellation ---------------------------------------------------------
 */

static void expect_cancelled(waiter_t *w) {
  TRITONSERVER_Error *e;
  waiter_wait(w);
  assert_int_equal(w->n_resp, 1);
  assert_int_equal(w->released, 1);
  assert_non_null(w->resp[0]);
  e = TRITONSERVER_InferenceResponseError(w->resp[0]);
  assert_non_null(e);
  assert_int_equal(TRITONSERVER_ErrorCode(e), TRITONSERVER_ERROR_CANCELLED);
}

/* One instance runs a long sleep; a request queued behind it is cancelled
 * (answered without running), then the running one (it stops polling). */
static void test_cancel(void **state) {
  static const int32_t long_ms = LONG_MS, zero = 0;
  TRITONSERVER_InferenceRequest *busy, *queued;
  waiter_t wb, wq;
  bool c = false;
  (void)state;
  waiter_init(&wb);
  waiter_init(&wq);
  busy = sleep_request("sleep", &long_ms, &wb);
  queued = sleep_request("sleep", &zero, &wq);
  OK(TRITONSERVER_ServerInferAsync(server, busy, NULL));
  OK(TRITONSERVER_ServerInferAsync(server, queued, NULL));
  OK(TRITONSERVER_InferenceRequestCancel(queued));
  expect_cancelled(&wq);
  /* Still sleeping: nothing cancelled it. */
  pthread_mutex_lock(&wb.mu);
  assert_int_equal(wb.released, 0);
  pthread_mutex_unlock(&wb.mu);
  OK(TRITONSERVER_InferenceRequestIsCancelled(busy, &c));
  assert_false(c);
  /* Cancelled from the response callback of another request. */
  {
    waiter_t wt;
    float in[16];
    TRITONSERVER_InferenceRequest *trigger;
    fill(in, 16, 1.0f);
    waiter_init(&wt);
    wt.keep = 0;
    wt.cancel = busy;
    trigger = fp32_request(in);
    set_callbacks(trigger, NULL, NULL, &wt);
    OK(TRITONSERVER_ServerInferAsync(server, trigger, NULL));
    waiter_wait(&wt);
    OK(wt.cancel_err);
    assert_int_equal(wt.n_errors, 0);
    OK(TRITONSERVER_InferenceRequestDelete(trigger));
    waiter_destroy(&wt);
  }
  expect_cancelled(&wb);
  /* Cancelling a released request changes nothing; it runs again. */
  OK(TRITONSERVER_InferenceRequestCancel(queued));
  waiter_destroy(&wq);
  waiter_init(&wq);
  set_callbacks(queued, NULL, NULL, &wq);
  OK(TRITONSERVER_ServerInferAsync(server, queued, NULL));
  waiter_wait(&wq);
  OK(TRITONSERVER_InferenceResponseError(wq.resp[0]));
  waiter_destroy(&wq);
  waiter_destroy(&wb);
  OK(TRITONSERVER_InferenceRequestDelete(busy));
  OK(TRITONSERVER_InferenceRequestDelete(queued));
}

/* ---- errors ----------------------------------------------------------------
 */

/* What ServerInferAsync refuses on the caller's thread: no callback runs. */
static void test_errors_at_call(void **state) {
  TRITONSERVER_InferenceRequest *r;
  TRITONSERVER_ResponseAllocator *a = NULL;
  static const int64_t shape[2] = {1, 16};
  waiter_t w;
  (void)state;
  waiter_init(&w);
  FAILS(TRITONSERVER_ResponseAllocatorNew(&a, NULL, release_fn, NULL),
        TRITONSERVER_ERROR_INVALID_ARG, "");
  OK(TRITONSERVER_InferenceRequestNew(&r, server, "identity_fp32", -1));
  /* No response callback. */
  FAILS(TRITONSERVER_ServerInferAsync(server, r, NULL),
        TRITONSERVER_ERROR_INVALID_ARG, "response callback");
  set_callbacks(r, NULL, NULL, &w);
  /* An input without data. */
  OK(TRITONSERVER_InferenceRequestAddInput(r, "INPUT0", TRITONSERVER_TYPE_FP32,
                                           shape, 2));
  FAILS(TRITONSERVER_ServerInferAsync(server, r, NULL),
        TRITONSERVER_ERROR_INVALID_ARG, "no data");
  FAILS(TRITONSERVER_ServerInferAsync(NULL, r, NULL),
        TRITONSERVER_ERROR_INVALID_ARG, "");
  FAILS(TRITONSERVER_ServerInferAsync(server, NULL, NULL),
        TRITONSERVER_ERROR_INVALID_ARG, "");
  /* Still the application's: it may change and delete it. */
  OK(TRITONSERVER_InferenceRequestSetId(r, "x"));
  OK(TRITONSERVER_InferenceRequestDelete(r));
  assert_int_equal(w.n_resp, 0);
  assert_int_equal(w.released, 0);
  waiter_destroy(&w);
}

/* Sends r and expects one FINAL response carrying an error of `code` whose
 * text holds `part`, then the release. */
static void expect_error_response(TRITONSERVER_InferenceRequest *r,
                                  TRITONSERVER_ResponseAllocator *a,
                                  out_ctx_t *ctx, TRITONSERVER_Error_Code code,
                                  const char *part) {
  waiter_t w;
  TRITONSERVER_Error *e;
  uint32_t n = 99;
  waiter_init(&w);
  set_callbacks(r, a, ctx, &w);
  OK(TRITONSERVER_ServerInferAsync(server, r, NULL));
  waiter_wait(&w);
  assert_int_equal(w.n_resp, 1);
  assert_int_equal(w.flags[0], TRITONSERVER_RESPONSE_COMPLETE_FINAL);
  assert_int_equal(w.released, 1);
  assert_non_null(w.resp[0]);
  e = TRITONSERVER_InferenceResponseError(w.resp[0]);
  if (e == NULL) fail_msg("expected an error response with '%s'", part);
  if (TRITONSERVER_ErrorCode(e) != code ||
      strstr(TRITONSERVER_ErrorMessage(e), part) == NULL)
    fail_msg("got %s '%s', expected code %d with '%s'",
             TRITONSERVER_ErrorCodeString(e), TRITONSERVER_ErrorMessage(e),
             (int)code, part);
  /* The response owns its error: the same one each time. */
  assert_ptr_equal(TRITONSERVER_InferenceResponseError(w.resp[0]), e);
  OK(TRITONSERVER_InferenceResponseOutputCount(w.resp[0], &n));
  waiter_destroy(&w);
}

/* What the server checks comes back as a FINAL error response. */
static void test_error_responses(void **state) {
  TRITONSERVER_ResponseAllocator *a = allocator_new();
  TRITONSERVER_InferenceRequest *r;
  float in[16];
  int32_t i32[16];
  static const int64_t s15[2] = {1, 15}, s16[2] = {1, 16};
  out_ctx_t ctx;
  (void)state;
  fill(in, 16, 0.0f);
  memset(i32, 0, sizeof(i32));
  memset(&ctx, 0, sizeof(ctx));

  /* Unknown model. */
  OK(TRITONSERVER_InferenceRequestNew(&r, server, "no_such_model", -1));
  OK(TRITONSERVER_InferenceRequestAddInput(r, "INPUT0", TRITONSERVER_TYPE_FP32,
                                           s16, 2));
  OK(TRITONSERVER_InferenceRequestAppendInputData(r, "INPUT0", in, sizeof(in),
                                                  TRITONSERVER_MEMORY_CPU, 0));
  expect_error_response(r, a, &ctx, TRITONSERVER_ERROR_NOT_FOUND,
                        "unknown model");
  OK(TRITONSERVER_InferenceRequestDelete(r));

  /* Unknown version. */
  OK(TRITONSERVER_InferenceRequestNew(&r, server, "identity_fp32", 7));
  OK(TRITONSERVER_InferenceRequestAddInput(r, "INPUT0", TRITONSERVER_TYPE_FP32,
                                           s16, 2));
  OK(TRITONSERVER_InferenceRequestAppendInputData(r, "INPUT0", in, sizeof(in),
                                                  TRITONSERVER_MEMORY_CPU, 0));
  expect_error_response(r, a, &ctx, TRITONSERVER_ERROR_NOT_FOUND, "7");
  OK(TRITONSERVER_InferenceRequestDelete(r));

  /* A shape the model does not take ([1,15], with its 60 bytes). */
  r = fp32_request(in);
  OK(TRITONSERVER_InferenceRequestRemoveAllInputs(r));
  OK(TRITONSERVER_InferenceRequestAddInput(r, "INPUT0", TRITONSERVER_TYPE_FP32,
                                           s15, 2));
  OK(TRITONSERVER_InferenceRequestAppendInputData(
      r, "INPUT0", in, 15 * sizeof(float), TRITONSERVER_MEMORY_CPU, 0));
  expect_error_response(r, a, &ctx, TRITONSERVER_ERROR_INVALID_ARG, "shape");
  /* The right shape, too few bytes for it. */
  OK(TRITONSERVER_InferenceRequestRemoveAllInputs(r));
  OK(TRITONSERVER_InferenceRequestAddInput(r, "INPUT0", TRITONSERVER_TYPE_FP32,
                                           s16, 2));
  OK(TRITONSERVER_InferenceRequestAppendInputData(
      r, "INPUT0", in, 15 * sizeof(float), TRITONSERVER_MEMORY_CPU, 0));
  expect_error_response(r, a, &ctx, TRITONSERVER_ERROR_INVALID_ARG, "INPUT0");
  /* The wrong data type. */
  OK(TRITONSERVER_InferenceRequestRemoveAllInputs(r));
  OK(TRITONSERVER_InferenceRequestAddInput(r, "INPUT0", TRITONSERVER_TYPE_INT32,
                                           s16, 2));
  OK(TRITONSERVER_InferenceRequestAppendInputData(r, "INPUT0", i32, sizeof(i32),
                                                  TRITONSERVER_MEMORY_CPU, 0));
  expect_error_response(r, a, &ctx, TRITONSERVER_ERROR_INVALID_ARG, "INT32");
  /* An input the model does not have. */
  OK(TRITONSERVER_InferenceRequestRemoveAllInputs(r));
  OK(TRITONSERVER_InferenceRequestAddInput(r, "INPUT9", TRITONSERVER_TYPE_FP32,
                                           s16, 2));
  OK(TRITONSERVER_InferenceRequestAppendInputData(r, "INPUT9", in, sizeof(in),
                                                  TRITONSERVER_MEMORY_CPU, 0));
  expect_error_response(r, a, &ctx, TRITONSERVER_ERROR_INVALID_ARG, "INPUT9");
  /* An output the model does not have. */
  OK(TRITONSERVER_InferenceRequestRemoveAllInputs(r));
  OK(TRITONSERVER_InferenceRequestAddInput(r, "INPUT0", TRITONSERVER_TYPE_FP32,
                                           s16, 2));
  OK(TRITONSERVER_InferenceRequestAppendInputData(r, "INPUT0", in, sizeof(in),
                                                  TRITONSERVER_MEMORY_CPU, 0));
  OK(TRITONSERVER_InferenceRequestAddRequestedOutput(r, "OUTPUT9"));
  expect_error_response(r, a, &ctx, TRITONSERVER_ERROR_INVALID_ARG, "OUTPUT9");
  OK(TRITONSERVER_InferenceRequestRemoveRequestedOutput(r, "OUTPUT9"));
  /* No input at all. */
  OK(TRITONSERVER_InferenceRequestRemoveAllInputs(r));
  expect_error_response(r, a, &ctx, TRITONSERVER_ERROR_INVALID_ARG, "INPUT0");
  /* A failing allocator: the backend's error response names it. */
  OK(TRITONSERVER_InferenceRequestAddInput(r, "INPUT0", TRITONSERVER_TYPE_FP32,
                                           s16, 2));
  OK(TRITONSERVER_InferenceRequestAppendInputData(r, "INPUT0", in, sizeof(in),
                                                  TRITONSERVER_MEMORY_CPU, 0));
  ctx.fail = 1;
  atomic_store(&n_alloc_fail, 0);
  expect_error_response(r, a, &ctx, TRITONSERVER_ERROR_UNAVAILABLE,
                        "test allocator refuses");
  assert_int_equal(atomic_load(&n_alloc_fail), 1);
  assert_int_equal(atomic_load(&ctx.allocs), 0);
  /* ... and the same request, with a working allocator, succeeds. */
  ctx.fail = 0;
  {
    waiter_t w;
    int starts = atomic_load(&n_starts);
    waiter_init(&w);
    set_callbacks(r, a, &ctx, &w);
    OK(TRITONSERVER_ServerInferAsync(server, r, NULL));
    waiter_wait(&w);
    check_fp32_response(w.resp[0], in, &ctx);
    /* The allocator heard of the response once, before its buffer. */
    assert_int_equal(atomic_load(&n_starts), starts + 1);
    waiter_destroy(&w);
  }
  OK(TRITONSERVER_InferenceRequestDelete(r));
  OK(TRITONSERVER_ResponseAllocatorDelete(a));
  check_no_buffer_left();
}

/* An ensemble's output reaches the application in a buffer of its
 * allocator too (copied there when the response is delivered). */
static void test_ensemble_output(void **state) {
  static const int64_t shape[2] = {1, 16};
  TRITONSERVER_ResponseAllocator *a = allocator_new();
  TRITONSERVER_InferenceRequest *r;
  out_ctx_t ctx;
  waiter_t w;
  float in[16];
  const char *name;
  TRITONSERVER_DataType dt;
  const int64_t *shp;
  uint64_t nd;
  const void *base;
  size_t size;
  TRITONSERVER_MemoryType mt;
  int64_t mid;
  void *userp;
  (void)state;
  fill(in, 16, -4.0f);
  memset(&ctx, 0, sizeof(ctx));
  waiter_init(&w);
  OK(TRITONSERVER_InferenceRequestNew(&r, server, "ens_fp32", -1));
  OK(TRITONSERVER_InferenceRequestAddInput(r, "IN", TRITONSERVER_TYPE_FP32,
                                           shape, 2));
  OK(TRITONSERVER_InferenceRequestAppendInputData(r, "IN", in, sizeof(in),
                                                  TRITONSERVER_MEMORY_CPU, 0));
  set_callbacks(r, a, &ctx, &w);
  OK(TRITONSERVER_ServerInferAsync(server, r, NULL));
  waiter_wait(&w);
  assert_int_equal(w.n_resp, 1);
  OK(TRITONSERVER_InferenceResponseError(w.resp[0]));
  OK(TRITONSERVER_InferenceResponseOutput(w.resp[0], 0, &name, &dt, &shp, &nd,
                                          &base, &size, &mt, &mid, &userp));
  assert_string_equal(name, "OUT");
  assert_int_equal(size, sizeof(in));
  assert_memory_equal(base, in, sizeof(in));
  assert_int_equal(mt, TRITONSERVER_MEMORY_CPU);
  assert_int_equal(atomic_load(&ctx.allocs), 1);
  assert_ptr_equal(base, ctx.given[0]);
  assert_ptr_equal(userp, &ctx);
  waiter_destroy(&w);
  OK(TRITONSERVER_InferenceRequestDelete(r));
  OK(TRITONSERVER_ResponseAllocatorDelete(a));
  check_no_buffer_left();
}

/* ---- trace objects -------------------------------------------------------
 */

/* What an application's trace callbacks saw (the loop thread calls them). */
typedef struct trace_log {
  pthread_mutex_t mu;
  int n_acts;
  TRITONSERVER_InferenceTraceActivity acts[32];
  uint64_t ns[32];
  int n_tensors;
  TRITONSERVER_InferenceTraceActivity tensor_acts[16];
  char tensor_names[16][16];
  int released; /* traces handed back */
  TRITONSERVER_InferenceTrace *got[4];
} trace_log_t;

static void on_activity(TRITONSERVER_InferenceTrace *t,
                        TRITONSERVER_InferenceTraceActivity act, uint64_t ns,
                        void *userp) {
  trace_log_t *l = userp;
  uint64_t parent;
  OK(TRITONSERVER_InferenceTraceParentId(t, &parent));
  pthread_mutex_lock(&l->mu);
  if (parent == 0 && l->n_acts < 32) {
    l->acts[l->n_acts] = act;
    l->ns[l->n_acts++] = ns;
  }
  pthread_mutex_unlock(&l->mu);
}

static void on_tensor(TRITONSERVER_InferenceTrace *t,
                      TRITONSERVER_InferenceTraceActivity act, const char *name,
                      TRITONSERVER_DataType dt, const void *base, size_t size,
                      const int64_t *shape, uint64_t ndims,
                      TRITONSERVER_MemoryType mt, int64_t mid, void *userp) {
  trace_log_t *l = userp;
  (void)t;
  (void)base;
  (void)shape;
  (void)mt;
  (void)mid;
  assert_int_equal(dt, TRITONSERVER_TYPE_FP32);
  assert_int_equal(size, 16 * sizeof(float));
  assert_int_equal(ndims, 2);
  pthread_mutex_lock(&l->mu);
  if (l->n_tensors < 16) {
    l->tensor_acts[l->n_tensors] = act;
    snprintf(l->tensor_names[l->n_tensors++], 16, "%s", name);
  }
  pthread_mutex_unlock(&l->mu);
}

static void on_trace_release(TRITONSERVER_InferenceTrace *t, void *userp) {
  trace_log_t *l = userp;
  pthread_mutex_lock(&l->mu);
  if (l->released < 4) l->got[l->released] = t;
  l->released++;
  pthread_mutex_unlock(&l->mu);
}

/* Waits (bounded) until `n` traces came back. */
static void wait_released(trace_log_t *l, int n) {
  int i, done = 0;
  for (i = 0; i < WAIT_S * 100 && !done; i++) {
    pthread_mutex_lock(&l->mu);
    done = l->released >= n;
    pthread_mutex_unlock(&l->mu);
    if (!done) {
      struct timespec ts = {0, 10 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  assert_true(done);
}

/* A request sent with a trace reports its activities and tensors, then
 * hands the trace back; an ensemble's steps report to child traces. */
static void test_trace_objects(void **state) {
  static const int64_t shape[2] = {1, 16};
  TRITONSERVER_InferenceTrace *t, *child;
  TRITONSERVER_InferenceRequest *r;
  trace_log_t l;
  waiter_t w;
  float in[16];
  const char *s;
  int64_t version;
  uint64_t id, pid, cid;
  int i;
  (void)state;
  memset(&l, 0, sizeof(l));
  pthread_mutex_init(&l.mu, NULL);
  fill(in, 16, 2.0f);
  OK(TRITONSERVER_InferenceTraceTensorNew(
      &t,
      TRITONSERVER_TRACE_LEVEL_TIMESTAMPS | TRITONSERVER_TRACE_LEVEL_TENSORS, 0,
      on_activity, on_tensor, on_trace_release, &l));
  OK(TRITONSERVER_InferenceTraceId(t, &id));
  assert_true(id > 0);
  waiter_init(&w);
  w.keep = 0;
  r = fp32_request(in);
  OK(TRITONSERVER_InferenceRequestSetId(r, "traced"));
  set_callbacks(r, NULL, NULL, &w);
  OK(TRITONSERVER_ServerInferAsync(server, r, t));
  waiter_wait(&w);
  wait_released(&l, 1);
  assert_ptr_equal(l.got[0], t);
  OK(TRITONSERVER_InferenceTraceModelName(t, &s));
  assert_string_equal(s, "identity_fp32");
  OK(TRITONSERVER_InferenceTraceModelVersion(t, &version));
  assert_int_equal(version, 1);
  OK(TRITONSERVER_InferenceTraceRequestId(t, &s));
  assert_string_equal(s, "traced");
  /* Triton's activities, in the order they happened. */
  assert_int_equal(l.n_acts, 7);
  assert_int_equal(l.acts[0], TRITONSERVER_TRACE_REQUEST_START);
  assert_int_equal(l.acts[6], TRITONSERVER_TRACE_REQUEST_END);
  for (i = 1; i < l.n_acts; i++) assert_true(l.ns[i - 1] <= l.ns[i]);
  assert_int_equal(l.n_tensors, 3);
  assert_int_equal(l.tensor_acts[0], TRITONSERVER_TRACE_TENSOR_BACKEND_OUTPUT);
  assert_string_equal(l.tensor_names[0], "OUTPUT0");
  assert_int_equal(l.tensor_acts[1], TRITONSERVER_TRACE_TENSOR_QUEUE_INPUT);
  assert_string_equal(l.tensor_names[1], "INPUT0");
  assert_int_equal(l.tensor_acts[2], TRITONSERVER_TRACE_TENSOR_BACKEND_INPUT);
  OK(TRITONSERVER_InferenceTraceSpawnChildTrace(t, &child));
  OK(TRITONSERVER_InferenceTraceParentId(child, &pid));
  assert_int_equal(pid, id);
  OK(TRITONSERVER_InferenceTraceDelete(child));
  OK(TRITONSERVER_InferenceTraceDelete(t));
  OK(TRITONSERVER_InferenceRequestDelete(r));
  waiter_destroy(&w);

  /* An ensemble: the trace and one child per step come back. */
  memset(&l, 0, sizeof(l));
  pthread_mutex_init(&l.mu, NULL);
  OK(TRITONSERVER_InferenceTraceNew(&t, TRITONSERVER_TRACE_LEVEL_TIMESTAMPS, 0,
                                    on_activity, on_trace_release, &l));
  OK(TRITONSERVER_InferenceTraceId(t, &id));
  waiter_init(&w);
  w.keep = 0;
  OK(TRITONSERVER_InferenceRequestNew(&r, server, "ens_fp32", -1));
  OK(TRITONSERVER_InferenceRequestAddInput(r, "IN", TRITONSERVER_TYPE_FP32,
                                           shape, 2));
  OK(TRITONSERVER_InferenceRequestAppendInputData(r, "IN", in, sizeof(in),
                                                  TRITONSERVER_MEMORY_CPU, 0));
  set_callbacks(r, NULL, NULL, &w);
  OK(TRITONSERVER_ServerInferAsync(server, r, t));
  waiter_wait(&w);
  wait_released(&l, 2);
  pthread_mutex_lock(&l.mu);
  for (i = 0; i < l.released && i < 4; i++) {
    if (l.got[i] == t) continue;
    OK(TRITONSERVER_InferenceTraceParentId(l.got[i], &pid));
    OK(TRITONSERVER_InferenceTraceId(l.got[i], &cid));
    assert_int_equal(pid, id);
    assert_int_not_equal(cid, id);
  }
  assert_int_equal(l.released, 2); /* the ensemble's and its step's */
  pthread_mutex_unlock(&l.mu);
  OK(TRITONSERVER_InferenceRequestDelete(r));
  waiter_destroy(&w);
  pthread_mutex_lock(&l.mu);
  for (i = 0; i < l.released && i < 4; i++)
    OK(TRITONSERVER_InferenceTraceDelete(l.got[i]));
  pthread_mutex_unlock(&l.mu);
  pthread_mutex_destroy(&l.mu);
}

/* ---- decoupled --------------------------------------------------------------
 */

/* repeat_int32 answers IN = [4, 5, 6] with three responses, then a FINAL
 * flag without a response. */
static void test_decoupled(void **state) {
  TRITONSERVER_ResponseAllocator *a = allocator_new();
  TRITONSERVER_InferenceRequest *r;
  static const int32_t in[3] = {4, 5, 6};
  static const uint32_t delay[3] = {0, 0, 0}, wait_ms[1] = {0};
  static const int64_t s3[1] = {3}, s1[1] = {1};
  out_ctx_t ctx;
  waiter_t w;
  int i;
  (void)state;
  memset(&ctx, 0, sizeof(ctx));
  waiter_init(&w);
  OK(TRITONSERVER_InferenceRequestNew(&r, server, "repeat_int32", -1));
  OK(TRITONSERVER_InferenceRequestAddInput(r, "IN", TRITONSERVER_TYPE_INT32, s3,
                                           1));
  OK(TRITONSERVER_InferenceRequestAddInput(r, "DELAY", TRITONSERVER_TYPE_UINT32,
                                           s3, 1));
  OK(TRITONSERVER_InferenceRequestAddInput(r, "WAIT", TRITONSERVER_TYPE_UINT32,
                                           s1, 1));
  OK(TRITONSERVER_InferenceRequestAppendInputData(r, "IN", in, sizeof(in),
                                                  TRITONSERVER_MEMORY_CPU, 0));
  OK(TRITONSERVER_InferenceRequestAppendInputData(
      r, "DELAY", delay, sizeof(delay), TRITONSERVER_MEMORY_CPU, 0));
  OK(TRITONSERVER_InferenceRequestAppendInputData(
      r, "WAIT", wait_ms, sizeof(wait_ms), TRITONSERVER_MEMORY_CPU, 0));
  set_callbacks(r, a, &ctx, &w);
  OK(TRITONSERVER_ServerInferAsync(server, r, NULL));
  waiter_wait(&w);
  assert_int_equal(w.n_resp, 4);
  assert_int_equal(w.n_final, 1);
  assert_int_equal(w.n_null, 1);
  assert_null(w.resp[3]);
  assert_int_equal(w.flags[3], TRITONSERVER_RESPONSE_COMPLETE_FINAL);
  assert_int_equal(w.released, 1);
  for (i = 0; i < 3; i++) {
    uint32_t n, k, idx = 99;
    int32_t out = -1;
    assert_non_null(w.resp[i]);
    assert_int_equal(w.flags[i], 0);
    OK(TRITONSERVER_InferenceResponseError(w.resp[i]));
    OK(TRITONSERVER_InferenceResponseOutputCount(w.resp[i], &n));
    assert_int_equal(n, 2);
    for (k = 0; k < n; k++) {
      const char *name;
      TRITONSERVER_DataType dt;
      const int64_t *shp;
      uint64_t nd;
      const void *base;
      size_t size;
      TRITONSERVER_MemoryType mt;
      int64_t mid;
      void *userp;
      OK(TRITONSERVER_InferenceResponseOutput(w.resp[i], k, &name, &dt, &shp,
                                              &nd, &base, &size, &mt, &mid,
                                              &userp));
      assert_int_equal(size, 4);
      assert_ptr_equal(userp, &ctx); /* the allocator's buffers */
      if (strcmp(name, "OUT") == 0)
        memcpy(&out, base, 4);
      else
        memcpy(&idx, base, 4);
    }
    assert_int_equal(out, in[i]);
    assert_int_equal(idx, (uint32_t)i);
  }
  assert_int_equal(atomic_load(&ctx.allocs), 6);
  waiter_destroy(&w);
  OK(TRITONSERVER_InferenceRequestDelete(r));
  OK(TRITONSERVER_ResponseAllocatorDelete(a));
  check_no_buffer_left();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_infer_sync),
      cmocka_unit_test(test_cache_hit),
      cmocka_unit_test(test_infer_async),
      cmocka_unit_test(test_resubmit_from_release),
      cmocka_unit_test(test_many_threads),
      cmocka_unit_test(test_request_fields),
      cmocka_unit_test(test_request_reuse),
      cmocka_unit_test(test_raw_input),
      cmocka_unit_test(test_sequence_round_trip),
      cmocka_unit_test(test_cancel),
      cmocka_unit_test(test_errors_at_call),
      cmocka_unit_test(test_error_responses),
      cmocka_unit_test(test_ensemble_output),
      cmocka_unit_test(test_trace_objects),
      cmocka_unit_test(test_decoupled),
  };
  return cmocka_run_group_tests_name("in-process inference", tests, setup,
                                     teardown);
}
