/*
 * test/unit/test_sched.c - the default scheduler and the dynamic batcher,
 * driven through the server on a real loop with a fake backend.
 *
 * The schedulers run exactly as in the server (core submit -> sched ->
 * run queue); only backend_api is replaced, through sched's own seam
 * (ifd__sched_backend_t): the fake records each batch handed to the run
 * queue, and the test "executes" a batch by sending a FINAL response for
 * each request, releasing it, and reporting the instance idle, all on the
 * loop thread. Nothing runs on another thread but model loading, so every
 * case is deterministic; the time-based cases (queue delay, timeouts) wait
 * on the loop and assert only lower bounds that the design guarantees.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "sched_fixture.h"

static void write_models(void) {
  write_models_sched();
  write_model_in("ragged", "allow_ragged_batch: true",
                 "max_batch_size: 8 instance_group [{ count: 1 }] "
                 "dynamic_batching { }");
}

/* ---- the default scheduler ------------------------------------------------
 */

/* Each request runs alone, handed to the run queue at once in arrival
 * order (the instances take the oldest first); responses go out as they
 * come. */
static void test_default(void **state) {
  ifd_request_t *r;
  (void)state;
  r = submit("def", "d0", 3, 4, 0, 0, NULL);
  assert_non_null(r);
  submit("def", "d1", 1, 4, 0, 0, NULL);
  submit("def", "d2", 2, 4, 0, 0, NULL);
  assert_int_equal(n_batches, 3);
  BATCH(0, "d0");
  BATCH(1, "d1");
  BATCH(2, "d2");
  complete(2);
  complete(0);
  complete(1);
  assert_int_equal(n_answers, 3);
  assert_answer(0, "d2", 0, NULL);
  assert_answer(1, "d0", 0, NULL);
  assert_answer(2, "d1", 0, NULL);
}

/* ---- the dynamic batcher ------------------------------------------------
 */

/* No delay: an idle instance gets what is queued at once; a batch grows
 * while the next request fits max_batch_size and has the same shape. */
static void test_dynamic_batches(void **state) {
  (void)state;
  submit("dyn", "a0", 1, 4, 0, 0, NULL);
  assert_int_equal(n_batches, 1); /* idle instance: sent at once */
  submit("dyn", "a1", 3, 4, 0, 0, NULL);
  submit("dyn", "a2", 4, 4, 0, 0, NULL);
  submit("dyn", "a3", 2, 4, 0, 0, NULL);
  submit("dyn", "a4", 1, 5, 0, 0, NULL); /* another shape */
  assert_int_equal(n_batches, 1);        /* the only instance is busy */
  complete(0);
  BATCH(1, "a1", "a2"); /* 3 + 4 rows; a3 would make 9 > 8 */
  complete(1);
  BATCH(2, "a3"); /* a4 cannot join: its shape differs */
  complete(2);
  BATCH(3, "a4");
  complete(3);
  assert_int_equal(n_batches, 4);
  assert_int_equal(n_answers, 5);
  assert_answer(0, "a0", 0, NULL);
  assert_answer(4, "a4", 0, NULL);
}

/* allow_ragged_batch: requests whose shapes differ batch together (the
 * backend joins them); max_batch_size still bounds the rows. */
static void test_dynamic_ragged(void **state) {
  (void)state;
  submit("ragged", "r0", 1, 4, 0, 0, NULL);
  assert_int_equal(n_batches, 1);
  submit("ragged", "r1", 1, 3, 0, 0, NULL);
  submit("ragged", "r2", 1, 7, 0, 0, NULL);
  submit("ragged", "r3", 6, 1, 0, 0, NULL);
  submit("ragged", "r4", 1, 2, 0, 0, NULL); /* 1 + 1 + 6 + 1 > 8 */
  complete(0);
  BATCH(1, "r1", "r2", "r3");
  complete(1);
  BATCH(2, "r4");
  complete(2);
  assert_int_equal(n_answers, 5);
}

/* Preferred sizes: a batch is sent before the delay once it reaches the
 * largest preferred size, trimmed to the largest preferred size it holds
 * as a prefix; a smaller one waits for the delay. */
static void test_preferred(void **state) {
  char id[16];
  int i;
  (void)state;
  for (i = 0; i < 3; i++) {
    snprintf(id, sizeof(id), "p%d", i);
    submit("pref", id, 1, 4, 0, 0, NULL);
    assert_int_equal(n_batches, 0); /* waiting for more (30 s delay) */
  }
  submit("pref", "p3", 1, 4, 0, 0, NULL);
  BATCH(0, "p0", "p1", "p2", "p3"); /* 4: the largest preferred size */
  for (i = 4; i < 9; i++) {
    snprintf(id, sizeof(id), "p%d", i);
    submit("pref", id, 1, 4, 0, 0, NULL);
  }
  assert_int_equal(n_batches, 1);
  complete(0);
  BATCH(1, "p4", "p5", "p6", "p7"); /* 5 queued, trimmed to 4 */
  complete(1);
  assert_int_equal(n_batches, 2); /* p8 alone waits for the delay */
  assert_int_equal(n_answers, 8);
  /* Unloading refuses what is still queued. */
  shutdown_all();
  assert_int_equal(n_answers, 9);
  assert_answer(8, "p8", IFD_EUNAVAIL, "the model is being unloaded");
}

/* max_queue_delay: a batch that is not full waits for the delay (never
 * less), one that is full goes at once. */
static void test_delay_timer(void **state) {
  uint64_t t0 = uv_hrtime();
  (void)state;
  submit("delay", "q0", 1, 4, 0, 0, NULL);
  submit("delay", "q1", 1, 4, 0, 0, NULL);
  assert_int_equal(n_batches, 0);
  while (n_batches == 0) uv_run(&loop, UV_RUN_ONCE);
  BATCH(0, "q0", "q1");
  assert_true(batches[0].at - t0 >= 100 * 1000000ull);
  complete(0);
  submit("delay", "q2", 1, 4, 0, 0, NULL);
  submit("delay", "q3", 3, 4, 0, 0, NULL); /* 4 rows: max_batch_size */
  assert_int_equal(n_batches, 2);          /* sent within the submit */
  BATCH(1, "q2", "q3");
  complete(1);
  assert_int_equal(n_answers, 4);
}

/* Priority levels: the highest level's requests go first; priority 0 and
 * out-of-range priorities get the default level. */
static void test_priorities(void **state) {
  (void)state;
  submit("prio", "x0", 1, 4, 0, 0, NULL);
  submit("prio", "lo1", 1, 4, 2, 0, NULL);
  submit("prio", "lo2", 1, 4, 0, 0, NULL);
  submit("prio", "hi", 1, 4, 1, 0, NULL);
  submit("prio", "bad", 1, 4, 7, 0, NULL);
  BATCH(0, "x0");
  complete(0);
  BATCH(1, "hi");
  complete(1);
  BATCH(2, "lo1");
  complete(2);
  BATCH(3, "lo2");
  complete(3);
  BATCH(4, "bad");
  complete(4);
  assert_int_equal(n_answers, 5);
}

/* REJECT: a request whose queue timeout expires is answered with an error;
 * a request may shorten the level's timeout but not lengthen it; a full
 * queue refuses at submit. */
static void test_queue_reject(void **state) {
  uint64_t t1, t2, t3;
  int rc;
  (void)state;
  submit("reject", "r0", 1, 4, 0, 0, NULL); /* runs: the instance is busy */
  t1 = uv_hrtime();
  submit("reject", "r1", 1, 4, 0, 0, NULL); /* level default: 1 s */
  t2 = uv_hrtime();
  submit("reject", "r2", 1, 4, 0, 30000, NULL); /* shortened: 30 ms */
  t3 = uv_hrtime();
  submit("reject", "r3", 1, 4, 0, 10000000, NULL); /* 10 s: stays 1 s */
  assert_null(submit("reject", "r4", 1, 4, 0, 0, &rc));
  /* max_queue_size 3: overloaded (UNAVAILABLE, or 429 if asked) */
  assert_int_equal(rc, IFD_EOVERLOADED);
  while (n_answers < 1) uv_run(&loop, UV_RUN_ONCE);
  assert_answer(0, "r2", IFD_EUNAVAIL, "Request timeout expired");
  assert_true(answers[0].at - t2 >= 30 * 1000000ull);
  while (n_answers < 3) uv_run(&loop, UV_RUN_ONCE);
  assert_answer(1, "r1", IFD_EUNAVAIL, "Request timeout expired");
  assert_answer(2, "r3", IFD_EUNAVAIL, "Request timeout expired");
  assert_true(answers[1].at - t1 >= 1000 * 1000000ull);
  assert_true(answers[2].at - t3 >= 1000 * 1000000ull);
  assert_true(answers[2].at - t3 < 9000 * 1000000ull);
  assert_int_equal(n_batches, 1);
  complete(0);
  assert_int_equal(n_answers, 4);
  assert_answer(3, "r0", 0, NULL);
  /* The queue has room again. */
  submit("reject", "r5", 1, 4, 0, 0, NULL);
  BATCH(1, "r5");
  complete(1);
  assert_answer(4, "r5", 0, NULL);
}

/* allow_timeout_override false: a request's own timeout is ignored. */
static void test_queue_no_override(void **state) {
  (void)state;
  submit("noovr", "n0", 1, 4, 0, 0, NULL);
  submit("noovr", "n1", 1, 4, 0, 1000, NULL); /* 1 ms, ignored */
  wait_ms(50);
  assert_int_equal(n_answers, 0);
  complete(0);
  BATCH(1, "n1");
  complete(1);
  assert_answer(1, "n1", 0, NULL);
}

/* DELAY: a request whose timeout expired waits behind every request of its
 * level that has not, and still runs. */
static void test_queue_delay(void **state) {
  (void)state;
  submit("delayq", "e0", 1, 4, 0, 0, NULL);
  submit("delayq", "late", 1, 4, 0, 20000, NULL); /* expires in 20 ms */
  wait_ms(60);
  submit("delayq", "b", 1, 4, 0, 0, NULL);
  submit("delayq", "c", 1, 4, 0, 0, NULL);
  assert_int_equal(n_answers, 0);
  complete(0);
  BATCH(1, "b");
  complete(1);
  BATCH(2, "c");
  complete(2);
  BATCH(3, "late");
  complete(3);
  assert_int_equal(n_answers, 4);
  assert_answer(3, "late", 0, NULL);
}

/* preserve_ordering: responses reach the protocol in submission order
 * whatever order the instances finish in. */
static void test_preserve_ordering(void **state) {
  ifd_request_t *o3;
  ifd_response_t *final, *extra;
  (void)state;
  submit("ord", "o0", 1, 4, 0, 0, NULL);
  submit("ord", "o1", 1, 4, 0, 0, NULL);
  submit("ord", "o2", 1, 4, 0, 0, NULL);
  assert_int_equal(n_batches, 3); /* three instances */
  complete(2);
  complete(1);
  assert_int_equal(n_answers, 0); /* held for o0 */
  complete(0);
  assert_int_equal(n_answers, 3);
  assert_answer(0, "o0", 0, NULL);
  assert_answer(1, "o1", 0, NULL);
  assert_answer(2, "o2", 0, NULL);

  /* A response sent after its request's FINAL one is dropped, and holds
   * nothing up behind it. */
  o3 = submit("ord", "o3", 1, 4, 0, 0, NULL);
  BATCH(3, "o3");
  batches[3].done = 1;
  final = ifd_response_new(o3);
  extra = ifd_response_new(o3);
  ifd_response_send(final, IFD_RESPONSE_FINAL, 0, NULL);
  ifd_request_release(o3, 1);
  model_of(batches[3].m)
      ->idle(batches[3].m, 0, 1, 1, model_of(batches[3].m)->arg);
  pump();
  assert_int_equal(n_answers, 4);
  ifd_response_send(extra, 0, 0, NULL);
  pump();
  submit("ord", "o4", 1, 4, 0, 0, NULL);
  submit("ord", "o5", 1, 4, 0, 0, NULL);
  BATCH(4, "o4");
  BATCH(5, "o5");
  complete(5);
  complete(4);
  assert_int_equal(n_answers, 6);
  assert_answer(4, "o4", 0, NULL);
  assert_answer(5, "o5", 0, NULL);
}

/* Queue timeouts under churn: requests with assorted deadlines, batches
 * completing meanwhile. Each request is answered once, and none is
 * rejected before its deadline. */
#define N_STRESS 200
static void test_timeout_churn(void **state) {
  uint64_t t_sub[N_STRESS], timeout[N_STRESS];
  char id[16];
  int i, next = 0, rejected = 0;
  (void)state;
  for (i = 0; i < N_STRESS; i++) {
    snprintf(id, sizeof(id), "s%d", i);
    timeout[i] = i % 7 == 0 ? 0 : 5000 + (uint64_t)(i * 7919 % 60) * 1000;
    t_sub[i] = uv_hrtime();
    assert_non_null(submit("stress", id, 1, 4, 0, timeout[i], NULL));
  }
  while (n_answers < N_STRESS) {
    wait_ms(2);
    while (next < n_batches && batches[next].done) next++;
    if (next < n_batches) complete(next);
  }
  for (i = 0; i < n_answers; i++) {
    int k = atoi(answers[i].id + 1);
    if (answers[i].error == 0) continue;
    rejected++;
    assert_non_null(strstr(answers[i].msg, "Request timeout expired"));
    assert_true(timeout[k] > 0);
    assert_true(answers[i].at - t_sub[k] >= timeout[k] * 1000);
  }
  assert_true(rejected > 0);
}

/* ---- teardown ------------------------------------------------------------ */

/* The unloads' freed events and the shutdown's done event were drained in
 * one go (the order the loop happened to see them in): the schedulers are
 * destroyed (a batcher's timer starts closing), then the server is freed
 * before that close completes. */
static void on_stopped_free(ifd_server_t *s, void *arg) {
  int i;
  (void)arg;
  stopped = 1;
  pthread_mutex_lock(&mu);
  for (i = 0; i < n_held_freed; i++)
    ifd_evq_push(ifd_server_evq(s), &held_freed[i]->ev);
  n_held_freed = hold_freed = 0;
  pthread_mutex_unlock(&mu);
  ifd_evq_drain(ifd_server_evq(s));
  ifd_server_free(s);
}

/* The server may be freed in its shutdown callback, right after the last
 * unload (an embedding application does that): a dynamic batcher whose
 * timer is still closing then must not touch its model (ASan reported a
 * use-after-free in free_dyn when it did, about one run in four of the e2e
 * queue-policy test, depending on the order of two wake-ups). */
/* ---- cancellation ---------------------------------------------------------
 */

/* The dynamic batcher drops a cancelled request that waits in its queue:
 * answered CANCELLED at once, counted as a failure, never in a batch. A
 * request already executing only gets the flag (its backend reads it) and
 * is answered by its backend, once. */
static void test_cancel_dynamic(void **state) {
  ifd_request_t *a0, *a1, *a2;
  ifd_model_t *m;
  (void)state;
  a0 = submit("dyn", "a0", 1, 4, 0, 0, NULL); /* runs */
  a1 = submit("dyn", "a1", 1, 4, 0, 0, NULL); /* queued */
  a2 = submit("dyn", "a2", 1, 4, 0, 0, NULL); /* queued */
  assert_non_null(a0);
  assert_non_null(a1);
  assert_non_null(a2);
  m = a0->model;
  assert_int_equal(n_batches, 1);
  ifd_request_cancel(a1);
  assert_int_equal(n_answers, 1);
  assert_answer(0, "a1", IFD_ECANCELLED, IFD__CANCELLED_MSG);
  assert_int_equal(m->stats.fail.count, 1);
  ifd_request_cancel(a0); /* executing: flag only */
  assert_true(ifd_request_is_cancelled(a0));
  assert_int_equal(n_answers, 1);
  ifd_request_cancel(a0); /* idempotent */
  assert_int_equal(n_answers, 1);
  complete(0);
  assert_answer(1, "a0", 0, NULL);
  BATCH(1, "a2"); /* a1 never reaches a batch */
  complete(1);
  assert_int_equal(n_answers, 3);
  assert_answer(2, "a2", 0, NULL);
  assert_int_equal(m->stats.fail.count, 1);
}

/* The default scheduler's requests wait on the run queue until an instance
 * takes them: a cancelled one still there is taken back and answered
 * CANCELLED; its batch goes, the others run. */
static void test_cancel_run_queue(void **state) {
  ifd_request_t *d1;
  (void)state;
  fake_runq_waits = 1;
  fake_taken_back = 0;
  submit("def", "d0", 1, 4, 0, 0, NULL);
  d1 = submit("def", "d1", 1, 4, 0, 0, NULL);
  submit("def", "d2", 1, 4, 0, 0, NULL);
  assert_int_equal(n_batches, 3);
  ifd_request_cancel(d1);
  assert_int_equal(fake_taken_back, 1);
  assert_int_equal(n_answers, 1);
  assert_answer(0, "d1", IFD_ECANCELLED, IFD__CANCELLED_MSG);
  assert_true(batches[1].done); /* its batch is gone */
  complete(0);
  complete(2);
  assert_int_equal(n_answers, 3);
  assert_answer(1, "d0", 0, NULL);
  assert_answer(2, "d2", 0, NULL);
  fake_runq_waits = 0;
}

static void test_free_in_stop_callback(void **state) {
  int k;
  (void)state;
  submit("delay", "q0", 1, 4, 0, 0, NULL);
  while (n_batches == 0) uv_run(&loop, UV_RUN_ONCE); /* the timer ran */
  complete(0);
  for (k = 0; k < n_batches; k++)
    if (!batches[k].done) complete(k);
  pthread_mutex_lock(&mu);
  hold_freed = 1;
  pthread_mutex_unlock(&mu);
  ifd_server_shutdown(server, on_stopped_free, NULL);
  server = NULL;
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_true(stopped);
  assert_int_equal(n_answers, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_default, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dynamic_batches, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dynamic_ragged, setup, teardown),
      cmocka_unit_test_setup_teardown(test_preferred, setup, teardown),
      cmocka_unit_test_setup_teardown(test_delay_timer, setup, teardown),
      cmocka_unit_test_setup_teardown(test_priorities, setup, teardown),
      cmocka_unit_test_setup_teardown(test_queue_reject, setup, teardown),
      cmocka_unit_test_setup_teardown(test_queue_no_override, setup, teardown),
      cmocka_unit_test_setup_teardown(test_queue_delay, setup, teardown),
      cmocka_unit_test_setup_teardown(test_preserve_ordering, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cancel_dynamic, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cancel_run_queue, setup, teardown),
      cmocka_unit_test_setup_teardown(test_timeout_churn, setup, teardown),
      cmocka_unit_test_setup_teardown(test_free_in_stop_callback, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
