/*
 * core/event.h - the completion queue: events from any thread to the loop.
 *
 * Instance threads and backends push events (response ready, request
 * released, instance idle); the loop drains them all in one uv_async
 * callback. A producer signals the async handle only on the queue's
 * empty-to-non-empty transition, and the consumer swaps the whole list out
 * under the lock and runs it unlocked, so one wake-up serves many events.
 * Events are embedded in the objects they concern: pushing never allocates.
 */
#ifndef IFD_CORE_EVENT_H
#define IFD_CORE_EVENT_H

#include <pthread.h>
#include <stdint.h>
#include <uv.h>

typedef struct ifd_event ifd_event_t;

struct ifd_event {
  ifd_event_t *next;           /* guarded by the queue's mu while queued */
  void (*fn)(ifd_event_t *ev); /* runs on the loop thread */
};

typedef struct ifd_evq {
  uv_async_t async; /* embedded; reached back with container_of */
  pthread_mutex_t mu;
  ifd_event_t *head; /* guarded by mu */
  ifd_event_t *tail; /* guarded by mu */
} ifd_evq_t;

/** Initializes the queue on `loop`. Returns 0 or a negative libuv code. */
int ifd_evq_init(uv_loop_t *loop, ifd_evq_t *q);

/** Pushes `ev` (any thread). Its fn runs on the loop thread later, in push
 *  order. `ev` must stay valid until then and must not be queued twice. */
void ifd_evq_push(ifd_evq_t *q, ifd_event_t *ev);

/**
 * Coalesced wake-ups for a producer thread that has more work queued (an
 * instance thread with a backlog): between ifd_evq_defer_begin() and
 * ifd_evq_defer_end(), pushes from this thread queue their events without
 * waking the loop, unless `max_ns` have passed since the first deferred
 * event (so a long job's responses are not held). ifd_evq_defer_end() wakes
 * the loop once for everything deferred. Per thread; never nested.
 */
void ifd_evq_defer_begin(uint64_t max_ns);
void ifd_evq_defer_end(void);
/** Wakes the loop for events this thread deferred, if any, and keeps
 *  deferring (used between two jobs of a backlog). */
void ifd_evq_defer_flush(void);
/** Nanoseconds since this thread's first deferred event (0: none). */
uint64_t ifd_evq_deferred_age(void);

/** Runs every queued event now (loop thread; also used by tests). */
void ifd_evq_drain(ifd_evq_t *q);

/** Closes the async handle; `q` may be freed in `cb`. Loop thread. */
void ifd_evq_close(ifd_evq_t *q, uv_close_cb cb);

#endif
