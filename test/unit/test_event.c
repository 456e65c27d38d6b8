/*
 * test/unit/test_event.c - the completion queue (base/event.c): ordering
 * with producers on several threads, and deferred wake-ups as a debt of the
 * queue: owed only while the loop watches, paid by any other producer, by
 * the debtor once past its bound or when it stops deferring, by the loop
 * when it wakes for anything else, and by the loop's fallback timer when the
 * debtor is stuck in a long job with nothing else happening. Expected
 * events: while the loop looks, producers do not signal and the loop's
 * check drains what came; the wait ends on the event, on ready I/O, on a
 * due timer, or at its bound, and it is off by default and for long bounds.
 *
 * Threads are ordered with semaphores, never with sleeps, and no duration is
 * asserted: the only waits are the loop's own (uv_run).
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "base/event.h"
#include "base/util.h"

typedef struct item {
  ifd_event_t ev;
  int producer, seq;
} item_t;

static int delivered;

static void on_count(ifd_event_t *ev) {
  (void)ev;
  delivered++;
}

static void on_closed(uv_handle_t *h) {
  (*(int *)h->data)++;
}

/* Closes q and checks that the loop has nothing left. */
static void close_and_check(uv_loop_t *loop, ifd_evq_t *q) {
  int closed = 0;
  q->async.data = &closed;
  ifd_evq_close(q, on_closed);
  uv_run(loop, UV_RUN_DEFAULT);
  assert_int_equal(closed, 1);
  assert_int_equal(uv_loop_close(loop), 0);
}

/* Runs one non-blocking loop iteration: the prepare handle sees who defers
 * and arms the fallback timer (the loop "watches"). */
static void loop_tick(uv_loop_t *loop) {
  uv_run(loop, UV_RUN_NOWAIT);
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- producers on threads, some deferring -------------------------------
 */

#define PRODUCERS 4
#define PER_PRODUCER 20000

static item_t items[PRODUCERS][PER_PRODUCER];
static int last_seq[PRODUCERS];
static int received;
static ifd_evq_t tq;

static void on_item(ifd_event_t *ev) {
  item_t *it = ifd_container_of(ev, item_t, ev);
  /* Events of one producer arrive in the order it pushed them. */
  assert_int_equal(it->seq, last_seq[it->producer] + 1);
  last_seq[it->producer] = it->seq;
  if (++received == PRODUCERS * PER_PRODUCER) uv_stop(tq.async.loop);
}

static void *producer(void *arg) {
  int p = (int)(intptr_t)arg, i;
  for (i = 0; i < PER_PRODUCER; i++) {
    /* Odd producers defer in windows of 64 events, with a 20 us bound. */
    if (p % 2 == 1 && i % 64 == 0) ifd_evq_defer_begin(&tq, 20000);
    items[p][i].producer = p;
    items[p][i].seq = i;
    items[p][i].ev.fn = on_item;
    ifd_evq_push(&tq, &items[p][i].ev);
    if (p % 2 == 1 && i % 64 == 63) ifd_evq_defer_end();
  }
  ifd_evq_defer_end();
  return NULL;
}

static void test_threads_in_order(void **state) {
  uv_loop_t loop;
  pthread_t th[PRODUCERS];
  int i;
  (void)state;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ifd_evq_init(&loop, &tq), 0);
  for (i = 0; i < PRODUCERS; i++) last_seq[i] = -1;
  for (i = 0; i < PRODUCERS; i++)
    assert_int_equal(
        pthread_create(&th[i], NULL, producer, (void *)(intptr_t)i), 0);
  /* Every event reaches the loop: no debt is left unpaid. */
  uv_run(&loop, UV_RUN_DEFAULT);
  for (i = 0; i < PRODUCERS; i++) pthread_join(th[i], NULL);
  assert_int_equal(received, PRODUCERS * PER_PRODUCER);
  for (i = 0; i < PRODUCERS; i++)
    assert_int_equal(last_seq[i], PER_PRODUCER - 1);
  assert_int_equal(ifd_evq_owed(&tq), 0);
  close_and_check(&loop, &tq);
}

/* ---- deferral on one thread ----------------------------------------------
 */

static void test_plain_push_signals_once(void **state) {
  uv_loop_t loop;
  ifd_evq_t q;
  ifd_event_t evs[3];
  int i;
  (void)state;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ifd_evq_init(&loop, &q), 0);
  delivered = 0;
  /* One wake-up per empty-to-non-empty transition. */
  for (i = 0; i < 3; i++) {
    evs[i].fn = on_count;
    ifd_evq_push(&q, &evs[i]);
  }
  assert_int_equal(ifd_evq_wakeups(&q), 1);
  ifd_evq_drain(&q);
  assert_int_equal(delivered, 3);
  ifd_evq_push(&q, &evs[0]);
  assert_int_equal(ifd_evq_wakeups(&q), 2);
  uv_run(&loop, UV_RUN_NOWAIT);
  assert_int_equal(delivered, 4);
  close_and_check(&loop, &q);
}

static void test_defer_owes_only_while_watched(void **state) {
  uv_loop_t loop;
  ifd_evq_t q;
  ifd_event_t evs[4];
  int i;
  (void)state;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ifd_evq_init(&loop, &q), 0);
  for (i = 0; i < 4; i++) evs[i].fn = on_count;
  delivered = 0;

  /* The loop has not seen anyone defer yet: no timer would pay a debt, so
   * the push signals as if nobody deferred. */
  ifd_evq_defer_begin(&q, UINT64_MAX);
  ifd_evq_push(&q, &evs[0]);
  assert_int_equal(ifd_evq_wakeups(&q), 1);
  assert_false(ifd_evq_owed(&q));
  loop_tick(&loop); /* drains, and starts watching */
  assert_int_equal(delivered, 1);
  assert_int_equal(q.watching, 1);

  /* Watched: the wake-up is owed, not sent, and further pushes of the
   * debtor within its bound add to the same debt. */
  ifd_evq_push(&q, &evs[1]);
  ifd_evq_push(&q, &evs[2]);
  assert_int_equal(ifd_evq_wakeups(&q), 1);
  assert_true(ifd_evq_owed(&q));

  /* Stopping pays it: one wake-up for both events. */
  ifd_evq_defer_end();
  assert_false(ifd_evq_owed(&q));
  assert_int_equal(ifd_evq_wakeups(&q), 2);
  uv_run(&loop, UV_RUN_NOWAIT);
  assert_int_equal(delivered, 3);

  /* Nobody defers: the loop stops watching. */
  loop_tick(&loop);
  assert_int_equal(q.watching, 0);
  close_and_check(&loop, &q);
}

static void test_bound_paid_by_debtor(void **state) {
  uv_loop_t loop;
  ifd_evq_t q;
  ifd_event_t evs[3];
  uint64_t t0;
  int i;
  (void)state;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ifd_evq_init(&loop, &q), 0);
  for (i = 0; i < 3; i++) evs[i].fn = on_count;
  delivered = 0;

  ifd_evq_defer_begin(&q, 200000); /* 200 us */
  loop_tick(&loop);
  t0 = mono_ns();
  ifd_evq_push(&q, &evs[0]);
  assert_true(ifd_evq_owed(&q));
  /* Past the bound, the debtor's own next push pays. */
  while (mono_ns() - t0 < 400000)
    ;
  ifd_evq_push(&q, &evs[1]);
  assert_false(ifd_evq_owed(&q));
  assert_int_equal(ifd_evq_wakeups(&q), 1);
  /* A non-empty queue whose wake-up went out: no second signal. */
  ifd_evq_push(&q, &evs[2]);
  assert_int_equal(ifd_evq_wakeups(&q), 1);
  ifd_evq_defer_end();
  assert_int_equal(ifd_evq_wakeups(&q), 1);
  uv_run(&loop, UV_RUN_NOWAIT);
  assert_int_equal(delivered, 3);
  close_and_check(&loop, &q);
}

static void test_drain_settles_debt(void **state) {
  uv_loop_t loop;
  ifd_evq_t q;
  ifd_event_t ev;
  (void)state;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ifd_evq_init(&loop, &q), 0);
  ev.fn = on_count;
  delivered = 0;
  ifd_evq_defer_begin(&q, UINT64_MAX);
  loop_tick(&loop);
  ifd_evq_push(&q, &ev);
  assert_true(ifd_evq_owed(&q));
  ifd_evq_drain(&q);
  assert_false(ifd_evq_owed(&q));
  assert_int_equal(delivered, 1);
  /* Nothing left to pay. */
  ifd_evq_defer_end();
  assert_int_equal(ifd_evq_wakeups(&q), 0);
  close_and_check(&loop, &q);
}

/* ---- a debtor stuck in a long job ----------------------------------------
 */

typedef struct debtor {
  ifd_evq_t *q;
  ifd_event_t ev;
  uint64_t max_ns;
  sem_t began;  /* debtor -> test: it defers */
  sem_t go;     /* test -> debtor: the loop watches, push */
  sem_t pushed; /* debtor -> test: it owes, now "in a long job" */
  sem_t finish; /* test -> debtor: the long job ends */
} debtor_t;

static void *debtor_main(void *arg) {
  debtor_t *d = arg;
  ifd_evq_defer_begin(d->q, d->max_ns);
  sem_post(&d->began);
  sem_wait(&d->go);
  ifd_evq_push(d->q, &d->ev);
  sem_post(&d->pushed);
  sem_wait(&d->finish); /* the long job: no push, no job boundary */
  ifd_evq_defer_end();
  return NULL;
}

static void debtor_start(debtor_t *d, pthread_t *th, ifd_evq_t *q,
                         uv_loop_t *loop, uint64_t max_ns) {
  d->q = q;
  d->ev.fn = on_count;
  d->max_ns = max_ns;
  sem_init(&d->began, 0, 0);
  sem_init(&d->go, 0, 0);
  sem_init(&d->pushed, 0, 0);
  sem_init(&d->finish, 0, 0);
  assert_int_equal(pthread_create(th, NULL, debtor_main, d), 0);
  sem_wait(&d->began);
  loop_tick(loop); /* the loop sees the producer defer: it watches */
  sem_post(&d->go);
  sem_wait(&d->pushed);
}

static void debtor_finish(debtor_t *d, pthread_t th) {
  sem_post(&d->finish);
  pthread_join(th, NULL);
  sem_destroy(&d->began);
  sem_destroy(&d->go);
  sem_destroy(&d->pushed);
  sem_destroy(&d->finish);
}

static ifd_evq_t *other_q;
static ifd_event_t other_ev;

static void *other_main(void *arg) {
  (void)arg;
  ifd_evq_push(other_q, &other_ev);
  return NULL;
}

/* The reported stall: model A's instance owes the wake-up and runs a long
 * job; model B's instance pushes its response onto the non-empty queue. B
 * must wake the loop: the loop then runs both events while A still runs. */
static void test_debt_paid_by_another_producer(void **state) {
  uv_loop_t loop;
  ifd_evq_t q;
  debtor_t a;
  pthread_t ta, tb;
  (void)state;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ifd_evq_init(&loop, &q), 0);
  delivered = 0;
  debtor_start(&a, &ta, &q, &loop, UINT64_MAX);
  assert_true(ifd_evq_owed(&q));
  assert_int_equal(ifd_evq_wakeups(&q), 0);

  other_q = &q;
  other_ev.fn = on_count;
  assert_int_equal(pthread_create(&tb, NULL, other_main, NULL), 0);
  pthread_join(tb, NULL);
  assert_false(ifd_evq_owed(&q));
  assert_int_equal(ifd_evq_wakeups(&q), 1);

  /* Blocks until the wake-up B sent: both events arrive, A still owes
   * nothing and is still in its job. */
  while (delivered < 2) uv_run(&loop, UV_RUN_ONCE);
  assert_int_equal(delivered, 2);
  debtor_finish(&a, ta);
  assert_int_equal(ifd_evq_wakeups(&q), 1);
  close_and_check(&loop, &q);
}

/* Nobody else pushes: the loop's fallback timer pays the debt while the
 * debtor is still in its long job. */
static void test_bound_paid_by_loop_timer(void **state) {
  uv_loop_t loop;
  ifd_evq_t q;
  debtor_t a;
  pthread_t ta;
  (void)state;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ifd_evq_init(&loop, &q), 0);
  delivered = 0;
  debtor_start(&a, &ta, &q, &loop, UINT64_MAX);
  assert_true(ifd_evq_owed(&q));
  /* The async handle is never signalled: only the timer can end this. */
  while (delivered < 1) uv_run(&loop, UV_RUN_ONCE);
  assert_false(ifd_evq_owed(&q));
  assert_int_equal(ifd_evq_wakeups(&q), 0);
  debtor_finish(&a, ta);
  close_and_check(&loop, &q);
}

static void on_poke(uv_async_t *h) {
  (void)h;
}

/* The loop woken for anything else pays the debt by draining (check
 * handle), with no signal of the queue's own. */
static void test_debt_paid_by_awake_loop(void **state) {
  uv_loop_t loop;
  ifd_evq_t q;
  uv_async_t poke;
  debtor_t a;
  pthread_t ta;
  (void)state;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ifd_evq_init(&loop, &q), 0);
  assert_int_equal(uv_async_init(&loop, &poke, on_poke), 0);
  delivered = 0;
  debtor_start(&a, &ta, &q, &loop, UINT64_MAX);
  assert_true(ifd_evq_owed(&q));
  uv_async_send(&poke);
  uv_run(&loop, UV_RUN_ONCE);
  assert_int_equal(delivered, 1);
  assert_false(ifd_evq_owed(&q));
  assert_int_equal(ifd_evq_wakeups(&q), 0);
  debtor_finish(&a, ta);
  uv_close((uv_handle_t *)&poke, NULL);
  close_and_check(&loop, &q);
}

/* ---- expected events -----------------------------------------------------
 */

static void test_expect_off_by_default(void **state) {
  uv_loop_t loop;
  ifd_evq_t q;
  ifd_event_t ev = {NULL, on_count};
  (void)state;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ifd_evq_init(&loop, &q), 0);
  delivered = 0;
  assert_int_equal(ifd_evq_expect(&q, 1000), 0);
  /* A bound longer than the queue's is not expected either. */
  ifd_evq_set_spin(&q, 30000);
  assert_int_equal(ifd_evq_expect(&q, 30001), 0);
  ifd_evq_push(&q, &ev);
  assert_int_equal(ifd_evq_wakeups(&q), 1);
  uv_run(&loop, UV_RUN_NOWAIT);
  assert_int_equal(delivered, 1);
  assert_int_equal(q.waits, 0);
  close_and_check(&loop, &q);
}

static ifd_evq_t *push_q;
static ifd_event_t push_ev;
static sem_t push_go;

static void *push_main(void *arg) {
  (void)arg;
  sem_wait(&push_go);
  push_ev.fn = on_count;
  ifd_evq_push(push_q, &push_ev);
  return NULL;
}

/* Pushed while the loop looks: no signal, and the loop's next iteration
 * drains it without blocking. */
static void test_expected_event_needs_no_signal(void **state) {
  uv_loop_t loop;
  ifd_evq_t q;
  pthread_t t;
  (void)state;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ifd_evq_init(&loop, &q), 0);
  delivered = 0;
  ifd_evq_set_spin(&q, UINT64_MAX / 4);
  assert_int_equal(ifd_evq_expect(&q, UINT64_MAX / 4), 1);
  push_q = &q;
  sem_init(&push_go, 0, 0);
  assert_int_equal(pthread_create(&t, NULL, push_main, NULL), 0);
  sem_post(&push_go);
  pthread_join(t, NULL);
  assert_int_equal(ifd_evq_wakeups(&q), 0);
  uv_run(&loop, UV_RUN_ONCE);
  assert_int_equal(delivered, 1);
  assert_int_equal(q.waits, 1);
  assert_int_equal(q.waits_hit, 1);
  /* Looking ended with the drain: the next push signals. */
  ifd_evq_push(&q, &push_ev);
  assert_int_equal(ifd_evq_wakeups(&q), 1);
  uv_run(&loop, UV_RUN_ONCE);
  assert_int_equal(delivered, 2);
  sem_destroy(&push_go);
  close_and_check(&loop, &q);
}

/* The loop waits for a producer that runs only once the wait has begun
 * (it may share the loop's core: the wait yields); the wait's bound is
 * far longer than the test. */
static void test_wait_gets_late_event(void **state) {
  uv_loop_t loop;
  ifd_evq_t q;
  pthread_t t;
  (void)state;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ifd_evq_init(&loop, &q), 0);
  delivered = 0;
  ifd_evq_set_spin(&q, UINT64_MAX / 4);
  push_q = &q;
  sem_init(&push_go, 0, 0);
  assert_int_equal(pthread_create(&t, NULL, push_main, NULL), 0);
  assert_int_equal(ifd_evq_expect(&q, UINT64_MAX / 4), 1);
  sem_post(&push_go);
  uv_run(&loop, UV_RUN_ONCE);
  pthread_join(t, NULL);
  assert_int_equal(delivered, 1);
  assert_int_equal(ifd_evq_wakeups(&q), 0);
  assert_int_equal(q.waits_hit, 1);
  sem_destroy(&push_go);
  close_and_check(&loop, &q);
}

/* Nothing comes: the poll does not block, the wait ends at its bound, and
 * a later push signals as usual. */
static void test_wait_ends_at_bound(void **state) {
  uv_loop_t loop;
  ifd_evq_t q;
  ifd_event_t ev = {NULL, on_count};
  (void)state;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ifd_evq_init(&loop, &q), 0);
  delivered = 0;
  ifd_evq_set_spin(&q, 30000);
  assert_int_equal(ifd_evq_expect(&q, 20000), 1);
  /* The async handle keeps the loop alive: this would block for good if
   * the poll blocked. */
  uv_run(&loop, UV_RUN_ONCE);
  assert_int_equal(q.waits, 1);
  assert_int_equal(q.waits_hit, 0);
  assert_int_equal(atomic_load(&q.looks), 0);
  ifd_evq_push(&q, &ev);
  assert_int_equal(ifd_evq_wakeups(&q), 1);
  uv_run(&loop, UV_RUN_ONCE);
  assert_int_equal(delivered, 1);
  close_and_check(&loop, &q);
}

static void on_timer_fired(uv_timer_t *t) {
  (void)t;
}

static void on_readable(uv_poll_t *p, int status, int events) {
  (void)p;
  (void)status;
  (void)events;
  /* Leaves the byte unread: the descriptor stays ready. */
}

/* Other work ends the wait long before its bound (100 s): a timer due
 * soon, I/O ready, or work queued for the loop's next iteration. The 50 s
 * margins only tell "ended early" from "ran to its bound". */
static void test_wait_ends_on_other_work(void **state) {
  uv_loop_t loop;
  ifd_evq_t q;
  uv_timer_t timer;
  uv_poll_t poll_h;
  int fds[2];
  uint64_t t0;
  (void)state;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ifd_evq_init(&loop, &q), 0);
  ifd_evq_set_spin(&q, 100000000000ull);

  /* Repeating: a timer due 1 ms after the loop's cached time may fire in
   * the timers phase before the poll on a slow machine, and a one-shot one
   * would then leave no timer at all for the wait to end on. */
  uv_timer_init(&loop, &timer);
  uv_timer_start(&timer, on_timer_fired, 1, 1);
  t0 = mono_ns();
  assert_int_equal(ifd_evq_expect(&q, 100000000000ull), 1);
  uv_run(&loop, UV_RUN_ONCE);
  assert_true(mono_ns() - t0 < 50000000000ull);
  assert_int_equal(q.waits, 1);
  uv_timer_stop(&timer);
  uv_close((uv_handle_t *)&timer, NULL);

  assert_int_equal(pipe(fds), 0);
  assert_int_equal(write(fds[1], "x", 1), 1);
  uv_poll_init(&loop, &poll_h, fds[0]);
  uv_poll_start(&poll_h, UV_READABLE, on_readable);
  t0 = mono_ns();
  assert_int_equal(ifd_evq_expect(&q, 100000000000ull), 1);
  uv_run(&loop, UV_RUN_ONCE);
  assert_true(mono_ns() - t0 < 50000000000ull);
  assert_int_equal(q.waits, 2);
  assert_int_equal(q.waits_hit, 0);
  uv_close((uv_handle_t *)&poll_h, NULL);

  /* Work the loop queued for its next iteration. */
  t0 = mono_ns();
  assert_int_equal(ifd_evq_expect(&q, 100000000000ull), 1);
  ifd_evq_busy(&q);
  uv_run(&loop, UV_RUN_ONCE);
  assert_true(mono_ns() - t0 < 50000000000ull);
  assert_int_equal(q.waits, 3);
  assert_int_equal(atomic_load(&q.looks), 0);
  close_and_check(&loop, &q);
  close(fds[0]);
  close(fds[1]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_threads_in_order),
      cmocka_unit_test(test_plain_push_signals_once),
      cmocka_unit_test(test_defer_owes_only_while_watched),
      cmocka_unit_test(test_bound_paid_by_debtor),
      cmocka_unit_test(test_drain_settles_debt),
      cmocka_unit_test(test_debt_paid_by_another_producer),
      cmocka_unit_test(test_bound_paid_by_loop_timer),
      cmocka_unit_test(test_debt_paid_by_awake_loop),
      cmocka_unit_test(test_expect_off_by_default),
      cmocka_unit_test(test_expected_event_needs_no_signal),
      cmocka_unit_test(test_wait_gets_late_event),
      cmocka_unit_test(test_wait_ends_at_bound),
      cmocka_unit_test(test_wait_ends_on_other_work),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
