/*
 * core/event.c - multi-producer, single-consumer event queue drained by one
 * uv_async handle on the loop.
 */
#include "core/event.h"

#include <stddef.h>
#include <time.h>

/* This thread's deferred wake-up, if it is deferring. */
static _Thread_local struct {
  int on;          /* between defer_begin and defer_end */
  uint64_t max_ns; /* longest an event may wait for its wake-up */
  ifd_evq_t *q;    /* the queue whose wake-up this thread owes; NULL none */
  uint64_t since;  /* when the first deferred event was pushed */
} defer;

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void on_async(uv_async_t *h) {
  ifd_evq_drain((ifd_evq_t *)h->data);
}

int ifd_evq_init(uv_loop_t *loop, ifd_evq_t *q) {
  int rc;
  q->head = q->tail = NULL;
  rc = pthread_mutex_init(&q->mu, NULL);
  if (rc != 0) return UV_ENOMEM;
  rc = uv_async_init(loop, &q->async, on_async);
  if (rc != 0) {
    pthread_mutex_destroy(&q->mu);
    return rc;
  }
  q->async.data = q;
  return 0;
}

void ifd_evq_push(ifd_evq_t *q, ifd_event_t *ev) {
  int was_empty;
  ev->next = NULL;
  pthread_mutex_lock(&q->mu);
  was_empty = q->head == NULL;
  if (was_empty)
    q->head = ev;
  else
    q->tail->next = ev;
  q->tail = ev;
  pthread_mutex_unlock(&q->mu);
  /* A non-empty queue has a wake-up pending already (or owed by the thread
   * that deferred it): uv_async_send coalesces, but skipping it saves the
   * write(2) on the eventfd. */
  if (!was_empty) return;
  if (defer.on && (defer.q == NULL || defer.q == q)) {
    uint64_t now = mono_ns();
    if (defer.q == NULL) {
      defer.q = q;
      defer.since = now;
      return;
    }
    /* Only one empty-to-non-empty transition can be owed per queue: the
     * loop drained what this thread deferred before; wake it now. */
  }
  uv_async_send(&q->async);
}

void ifd_evq_defer_begin(uint64_t max_ns) {
  defer.on = 1;
  defer.max_ns = max_ns;
}

void ifd_evq_defer_flush(void) {
  if (defer.q != NULL) uv_async_send(&defer.q->async);
  defer.q = NULL;
  defer.since = 0;
}

void ifd_evq_defer_end(void) {
  ifd_evq_defer_flush();
  defer.on = 0;
}

uint64_t ifd_evq_deferred_age(void) {
  return defer.q != NULL ? mono_ns() - defer.since : 0;
}

void ifd_evq_drain(ifd_evq_t *q) {
  for (;;) {
    ifd_event_t *ev;
    pthread_mutex_lock(&q->mu);
    ev = q->head;
    q->head = q->tail = NULL;
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

void ifd_evq_close(ifd_evq_t *q, uv_close_cb cb) {
  uv_close((uv_handle_t *)&q->async, cb);
}
