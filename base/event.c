/*
 * base/event.c - multi-producer, single-consumer event queue drained by one
 * uv_async handle on the loop, with deferred wake-ups kept as a debt of the
 * queue (see base/event.h for who pays it).
 *
 * Memory ordering: `owed` changes only under mu; the loop's check handle
 * reads it without the lock as a hint (a stale 0 only means the debt is paid
 * by someone else a little later, a stale 1 costs one empty lock). The
 * `watching` / `deferring` pair is a Dekker handshake with sequentially
 * consistent accesses: a producer increments `deferring` before it reads
 * `watching`, the loop clears `watching` before it reads `deferring`, so
 * either the loop keeps its timer or the producer signals instead of owing.
 *
 * `looks` needs no handshake of its own: a producer reads it under mu after
 * linking its event, the loop clears it before it takes mu to drain. Either
 * the producer's critical section comes first and the drain finds the
 * event, or the loop's does and the producer, reading after the loop's
 * unlock, sees `looks` cleared and signals.
 *
 * Why waiting does not block the loop: the wait is taken only when the loop
 * has nothing else to do (the poll just before it found no I/O; no timer or
 * pending callback is due), it is checked again after every yield, it is
 * bounded by what the caller expects and by spin_max_ns (tens of
 * microseconds), and callers ask for it only after handing work to a model
 * whose recent executes were that cheap. It costs the loop at most that
 * long, once per hand-off; it saves a sleep and a wake-up per hand-off.
 *
 * Options weighed for that hand-off (issue 8): the instance spinning before
 * it parks (burns the core it shares with the loop when the server is
 * pinned to one); busy-polling cores (rejected: CPU while idle); a
 * lock-free ring instead of the mutex (negligible next to the syscalls); a
 * general "loop awake" flag set after every poll (the window between poll
 * and prepare is short, and requests are read inside the poll, so it saves
 * little); and the expected-event wait kept here, which removes the eventfd
 * write, the sleeping poll and the eventfd read of each cheap hand-off.
 */
#include "base/event.h"

#include <poll.h>
#include <sched.h>
#include <stddef.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/util.h"

/* This thread's deferral, if it defers. */
static _Thread_local struct {
  ifd_evq_t *q;    /* borrowed: the queue whose wake-ups it may owe */
  uint64_t max_ns; /* longest a debt of its own may wait for its pushes */
} defer;

static void on_async(uv_async_t *h) {
  ifd_evq_drain(ifd_container_of(h, ifd_evq_t, async));
}

static int has_events(ifd_evq_t *q) {
  int r;
  pthread_mutex_lock(&q->mu);
  r = q->head != NULL;
  pthread_mutex_unlock(&q->mu);
  return r;
}

/* Whether the loop has I/O ready: its epoll descriptor polls readable. */
static int io_ready(uv_loop_t *loop) {
  struct pollfd p = {uv_backend_fd(loop), POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

/* The wait for an expected event, in the check phase right after a poll
 * that did not block; see the file comment for its bounds. */
static void wait_expected(ifd_evq_t *q) {
  uv_loop_t *loop = q->async.loop;
  uint64_t now = ifd_now_ns(), until = now + q->expect_ns;
  int timeout, i;

  q->expect_ns = 0;
  uv_idle_stop(&q->nowait);
  /* With the idle handle stopped, a zero timeout means libuv has work due
   * (pending callbacks, closing handles, an expired timer). */
  timeout = uv_backend_timeout(loop);
  if (q->busy) timeout = 0;
  q->busy = 0;
  if (timeout >= 0 && (uint64_t)timeout * 1000000u < until - now)
    until = now + (uint64_t)timeout * 1000000u;
  q->waits++;
  /* The poll that just returned saw no I/O it had not dispatched, so the
   * first round yields without asking again. */
  for (i = 0;; i++) {
    if (has_events(q)) {
      q->waits_hit++;
      break;
    }
    if (ifd_now_ns() >= until || (i > 0 && io_ready(loop))) break;
    sched_yield();
  }
  atomic_store(&q->looks, 0);
  ifd_evq_drain(q);
}

/* After every poll: the loop is awake anyway, so a debt is paid by draining,
 * without a signal; an expected event is waited for. */
static void on_check(uv_check_t *h) {
  ifd_evq_t *q = ifd_container_of(h, ifd_evq_t, check);
  if (q->expect_ns != 0)
    wait_expected(q);
  else if (atomic_load_explicit(&q->owed, memory_order_relaxed))
    ifd_evq_drain(q);
}

/* Active only while an event is expected: an active idle handle makes
 * libuv poll without blocking; on_check stops it. */
static void on_nowait(uv_idle_t *h) {
  (void)h;
}

static void on_fallback(uv_timer_t *h) {
  ifd_evq_t *q = ifd_container_of(h, ifd_evq_t, fallback);
  if (atomic_load_explicit(&q->owed, memory_order_relaxed)) ifd_evq_drain(q);
}

/* Before every poll: watch (a repeating timer) while any producer defers,
 * stop when none does. */
static void on_watch(uv_prepare_t *h) {
  ifd_evq_t *q = ifd_container_of(h, ifd_evq_t, watch);
  if (atomic_load(&q->deferring) > 0) {
    if (!atomic_load_explicit(&q->watching, memory_order_relaxed)) {
      uv_timer_start(&q->fallback, on_fallback, IFD_EVQ_FALLBACK_MS,
                     IFD_EVQ_FALLBACK_MS);
      atomic_store(&q->watching, 1);
    }
    return;
  }
  if (!atomic_load_explicit(&q->watching, memory_order_relaxed)) return;
  atomic_store(&q->watching, 0);
  /* A producer that began deferring meanwhile may have seen watching == 1
   * and owe a wake-up: keep watching for it. */
  if (atomic_load(&q->deferring) > 0) {
    atomic_store(&q->watching, 1);
    return;
  }
  uv_timer_stop(&q->fallback);
}

int ifd_evq_init(uv_loop_t *loop, ifd_evq_t *q) {
  int rc;
  q->head = q->tail = NULL;
  q->owed_since = q->owed_max = 0;
  q->wakeups = 0;
  q->closing = 0;
  q->close_cb = NULL;
  atomic_init(&q->owed, 0);
  atomic_init(&q->deferring, 0);
  atomic_init(&q->watching, 0);
  atomic_init(&q->looks, 0);
  q->spin_max_ns = q->expect_ns = 0;
  q->busy = 0;
  q->waits = q->waits_hit = 0;
  rc = pthread_mutex_init(&q->mu, NULL);
  if (rc != 0) return UV_ENOMEM;
  rc = uv_async_init(loop, &q->async, on_async);
  if (rc != 0) {
    pthread_mutex_destroy(&q->mu);
    return rc;
  }
  q->async.data = q;
  /* These cannot fail on Linux. They do not keep the loop alive: the async
   * handle does, as before. */
  uv_check_init(loop, &q->check);
  uv_prepare_init(loop, &q->watch);
  uv_timer_init(loop, &q->fallback);
  uv_idle_init(loop, &q->nowait);
  uv_check_start(&q->check, on_check);
  uv_prepare_start(&q->watch, on_watch);
  uv_unref((uv_handle_t *)&q->check);
  uv_unref((uv_handle_t *)&q->watch);
  uv_unref((uv_handle_t *)&q->fallback);
  uv_unref((uv_handle_t *)&q->nowait);
  return 0;
}

void ifd_evq_push(ifd_evq_t *q, ifd_event_t *ev) {
  int send = 0;
  ev->next = NULL;
  pthread_mutex_lock(&q->mu);
  if (q->head == NULL) {
    q->head = ev;
    /* The empty-to-non-empty transition: signal, unless the loop looks
     * before it blocks; or owe the signal when this thread defers and the
     * loop watches for debts. */
    if (atomic_load(&q->looks)) {
      /* Nothing to send or owe: the loop's check drains it. */
    } else if (defer.q == q && atomic_load(&q->watching)) {
      q->owed_since = ifd_now_ns();
      q->owed_max = defer.max_ns;
      atomic_store_explicit(&q->owed, 1, memory_order_relaxed);
    } else {
      send = 1;
    }
  } else {
    q->tail->next = ev;
    /* A non-empty queue has its wake-up sent already, unless it is owed:
     * then anyone but a deferring producer within the bound pays it. */
    if (atomic_load_explicit(&q->owed, memory_order_relaxed) &&
        (defer.q != q || ifd_now_ns() - q->owed_since >= q->owed_max)) {
      atomic_store_explicit(&q->owed, 0, memory_order_relaxed);
      send = 1;
    }
  }
  q->tail = ev;
  q->wakeups += (uint64_t)send;
  pthread_mutex_unlock(&q->mu);
  if (send) uv_async_send(&q->async);
}

void ifd_evq_set_spin(ifd_evq_t *q, uint64_t max_ns) {
  q->spin_max_ns = max_ns;
}

int ifd_evq_expect(ifd_evq_t *q, uint64_t within_ns) {
  if (q->spin_max_ns == 0 || within_ns > q->spin_max_ns || q->closing) return 0;
  if (q->expect_ns == 0) q->busy = 0;
  if (within_ns > q->expect_ns) q->expect_ns = within_ns;
  if (within_ns == 0) q->expect_ns = 1;
  atomic_store(&q->looks, 1);
  uv_idle_start(&q->nowait, on_nowait);
  return 1;
}

void ifd_evq_busy(ifd_evq_t *q) {
  q->busy = 1;
}

/* Pays `q`'s debt now if one is owed (any thread). */
static void pay(ifd_evq_t *q) {
  int send;
  if (!atomic_load_explicit(&q->owed, memory_order_relaxed)) return;
  pthread_mutex_lock(&q->mu);
  send = atomic_load_explicit(&q->owed, memory_order_relaxed);
  atomic_store_explicit(&q->owed, 0, memory_order_relaxed);
  q->wakeups += (uint64_t)send;
  pthread_mutex_unlock(&q->mu);
  if (send) uv_async_send(&q->async);
}

void ifd_evq_defer_begin(ifd_evq_t *q, uint64_t max_ns) {
  if (defer.q != q) {
    ifd_evq_defer_end();
    defer.q = q;
    atomic_fetch_add(&q->deferring, 1);
  }
  defer.max_ns = max_ns;
}

void ifd_evq_defer_end(void) {
  ifd_evq_t *q = defer.q;
  if (q == NULL) return;
  defer.q = NULL;
  pay(q);
  atomic_fetch_sub(&q->deferring, 1);
}

int ifd_evq_owed(ifd_evq_t *q) {
  return atomic_load(&q->owed);
}

uint64_t ifd_evq_wakeups(ifd_evq_t *q) {
  uint64_t n;
  pthread_mutex_lock(&q->mu);
  n = q->wakeups;
  pthread_mutex_unlock(&q->mu);
  return n;
}

void ifd_evq_drain(ifd_evq_t *q) {
  for (;;) {
    ifd_event_t *ev;
    pthread_mutex_lock(&q->mu);
    ev = q->head;
    q->head = q->tail = NULL;
    /* Whatever was owed is being delivered now. */
    atomic_store_explicit(&q->owed, 0, memory_order_relaxed);
    pthread_mutex_unlock(&q->mu);
    if (ev == NULL) return;
    while (ev != NULL) {
      ifd_event_t *next = ev->next;
      /* fn may free the object that embeds ev: read next first. */
      ev->fn(ev);
      ev = next;
    }
  }
}

static ifd_evq_t *evq_of(uv_handle_t *h) {
  switch (h->type) {
    case UV_ASYNC:
      return ifd_container_of((uv_async_t *)h, ifd_evq_t, async);
    case UV_CHECK:
      return ifd_container_of((uv_check_t *)h, ifd_evq_t, check);
    case UV_PREPARE:
      return ifd_container_of((uv_prepare_t *)h, ifd_evq_t, watch);
    case UV_IDLE:
      return ifd_container_of((uv_idle_t *)h, ifd_evq_t, nowait);
    default:
      return ifd_container_of((uv_timer_t *)h, ifd_evq_t, fallback);
  }
}

static void on_closed(uv_handle_t *h) {
  ifd_evq_t *q = evq_of(h);
  if (--q->closing > 0) return;
  pthread_mutex_destroy(&q->mu);
  if (q->close_cb != NULL) q->close_cb((uv_handle_t *)&q->async);
}

void ifd_evq_close(ifd_evq_t *q, uv_close_cb cb) {
  q->close_cb = cb;
  IFD_VERBOSE(
      "completion queue: %llu wake-ups; %llu waits for an expected "
      "event, %llu got one",
      (unsigned long long)ifd_evq_wakeups(q), (unsigned long long)q->waits,
      (unsigned long long)q->waits_hit);
  q->closing = 5;
  /* Nobody waits any more: producers signal (their sends are harmless). */
  q->expect_ns = 0;
  atomic_store(&q->looks, 0);
  uv_close((uv_handle_t *)&q->async, on_closed);
  uv_close((uv_handle_t *)&q->check, on_closed);
  uv_close((uv_handle_t *)&q->watch, on_closed);
  uv_close((uv_handle_t *)&q->fallback, on_closed);
  uv_close((uv_handle_t *)&q->nowait, on_closed);
}
