/*
 * core/event.c - multi-producer, single-consumer event queue drained by one
 * uv_async handle on the loop.
 */
#include "core/event.h"

#include <stddef.h>

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
  /* A non-empty queue has a wake-up pending already: uv_async_send
   * coalesces, but skipping it saves the write(2) on the eventfd. */
  if (was_empty) uv_async_send(&q->async);
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
