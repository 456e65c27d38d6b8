/*
 * test/unit/test_capi_stop.c - stopping an in-process server with requests
 * in flight (backend_api/capi/capi_infer.c with app/embed.c), from an
 * application's seat (capi_fixture.h): ServerStop drains what is in flight
 * within the exit timeout, ServerDelete without Stop answers what the
 * timeout left, every request gets exactly one FINAL response and one
 * release, a request sent after Stop is refused at the call, and a
 * response deleted after ServerStop gives its buffers back. Each test
 * starts and deletes a server of its own.
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

static int setup(void **state) {
  (void)state;
  return capi_fixture_init();
}

static int teardown(void **state) {
  (void)state;
  capi_fixture_cleanup();
  return 0;
}

/* ---- stopping with requests in flight
 * ----------------------------------------
 */

#define N_INFLIGHT 6

/* Sends N_INFLIGHT requests of `ms` each to sleep_plain (one instance),
 * then stops the server (stop_first) or deletes it at once; every request
 * gets exactly one FINAL response and one release. */
static void stop_with_requests(int stop_first, unsigned exit_timeout_s,
                               int32_t ms) {
  TRITONSERVER_ResponseAllocator *a = allocator_new();
  TRITONSERVER_InferenceRequest *r[N_INFLIGHT];
  waiter_t w[N_INFLIGHT];
  out_ctx_t ctx[N_INFLIGHT];
  int i, ok = 0;
  server = server_start(exit_timeout_s);
  memset(ctx, 0, sizeof(ctx));
  for (i = 0; i < N_INFLIGHT; i++) {
    waiter_init(&w[i]);
    w[i].keep = 0; /* responses deleted in the callback */
    r[i] = sleep_request("sleep_plain", &ms, &w[i]);
    OK(TRITONSERVER_InferenceRequestAddRequestedOutput(r[i], "OUT"));
    set_callbacks(r[i], a, &ctx[i], &w[i]);
    OK(TRITONSERVER_ServerInferAsync(server, r[i], NULL));
  }
  if (stop_first) {
    TRITONSERVER_InferenceRequest *late;
    waiter_t wl;
    OK(TRITONSERVER_ServerStop(server));
    /* Stopped: a new request is refused at the call. */
    waiter_init(&wl);
    late = sleep_request("sleep_plain", &ms, &wl);
    FAILS(TRITONSERVER_ServerInferAsync(server, late, NULL),
          TRITONSERVER_ERROR_UNAVAILABLE, "stopped");
    OK(TRITONSERVER_InferenceRequestDelete(late));
    waiter_destroy(&wl);
  }
  OK(TRITONSERVER_ServerDelete(server));
  server = NULL;
  /* The loop thread is gone: every callback has run. */
  for (i = 0; i < N_INFLIGHT; i++) {
    assert_int_equal(w[i].released, 1);
    assert_int_equal(w[i].n_final, 1);
    assert_int_equal(w[i].n_resp, 1);
    if (w[i].n_errors == 0) ok++;
    OK(TRITONSERVER_InferenceRequestDelete(r[i]));
    waiter_destroy(&w[i]);
  }
  if (stop_first && exit_timeout_s >= 30) assert_int_equal(ok, N_INFLIGHT);
  OK(TRITONSERVER_ResponseAllocatorDelete(a));
  check_no_buffer_left();
}

/* Stop drains: with a generous exit timeout every request succeeds. */
static void test_stop_drains(void **state) {
  (void)state;
  stop_with_requests(1, 30, 20);
}

/* Delete without Stop, a short exit timeout and more work queued than it
 * allows: whatever was not served is answered with an error. */
static void test_delete_in_flight(void **state) {
  (void)state;
  stop_with_requests(0, 1, 400);
}

/* A response the application still holds when the server stops: deleting
 * it after ServerStop (before ServerDelete) gives its buffer back. */
static void test_response_held_over_stop(void **state) {
  TRITONSERVER_ResponseAllocator *a = allocator_new();
  TRITONSERVER_InferenceRequest *r;
  out_ctx_t ctx;
  waiter_t w;
  float in[16];
  (void)state;
  server = server_start(30);
  fill(in, 16, 2.0f);
  memset(&ctx, 0, sizeof(ctx));
  waiter_init(&w);
  r = fp32_request(in);
  set_callbacks(r, a, &ctx, &w);
  OK(TRITONSERVER_ServerInferAsync(server, r, NULL));
  waiter_wait(&w);
  check_fp32_response(w.resp[0], in, &ctx);
  OK(TRITONSERVER_ServerStop(server));
  OK(TRITONSERVER_InferenceResponseDelete(w.resp[0]));
  w.resp[0] = NULL;
  assert_int_equal(atomic_load(&n_allocs), atomic_load(&n_releases));
  OK(TRITONSERVER_ServerDelete(server));
  server = NULL;
  waiter_destroy(&w);
  OK(TRITONSERVER_InferenceRequestDelete(r));
  OK(TRITONSERVER_ResponseAllocatorDelete(a));
  check_no_buffer_left();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stop_drains),
      cmocka_unit_test(test_delete_in_flight),
      cmocka_unit_test(test_response_held_over_stop),
  };
  return cmocka_run_group_tests_name("stop with requests in flight", tests,
                                     setup, teardown);
}
