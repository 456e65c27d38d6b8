/*
 * base/event.h - the completion queue: events from any thread to the loop.
 *
 * Instance threads and backends push events (response ready, request
 * released, instance idle); the loop drains them all in one uv_async
 * callback. A producer signals the async handle only on the queue's
 * empty-to-non-empty transition, and the consumer swaps the whole list out
 * under the lock and runs it unlocked, so one wake-up serves many events.
 * Events are embedded in the objects they concern: pushing never allocates.
 *
 * Deferred wake-ups are a debt of the queue, not of a thread. A producer
 * working through a backlog of cheap jobs may leave the wake-up for the
 * events it queues owed (ifd_evq_defer_begin), so that the loop hears of
 * several jobs at once. The debt is written in the queue, and it is paid
 * (the async handle signalled) by:
 *  - any other producer that pushes onto the queue while it is owed, so one
 *    thread's coalescing never holds another's events back;
 *  - the deferring producer itself, on its first push once the debt is
 *    older than the bound it gave, and when it stops deferring;
 *  - the loop, whenever it is awake for anything else (a check handle after
 *    every poll), and, while any producer defers, by a timer that bounds a
 *    debt whose owner is stuck in a long job with nothing else happening
 *    (IFD_EVQ_FALLBACK_MS: libuv timers count milliseconds).
 * A producer owes a wake-up only while the loop is watching (its timer
 * armed); otherwise it signals as if it did not defer.
 *
 * Expected events. Handing a job to a cheap model on another thread, the
 * loop knows an event is due within microseconds; waking up for it through
 * the async handle costs an eventfd write on the producer and, on the loop,
 * a poll that sleeps, wakes and reads the eventfd. So the loop may say it
 * expects an event (ifd_evq_expect): until it next looks at the queue, a
 * producer need not signal ("the loop looks"). The loop then polls without
 * blocking and, in its check phase, waits for the queue to fill, yielding
 * the CPU (the producer may share its core), for at most the time the
 * caller expects and never more than the queue's bound (ifd_evq_set_spin,
 * off by default). The wait ends at once when anything else is due: I/O
 * ready, a timer due, libuv's own pending work, work the loop queued for
 * its next iteration (ifd_evq_busy). Then it stops looking and
 * drains whatever came. Events that come later signal as usual.
 */
#ifndef IFD_BASE_EVENT_H
#define IFD_BASE_EVENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

/* The loop's own bound on an owed wake-up, when no push or job boundary
 * pays it first: at most about twice this (timer resolution). */
#define IFD_EVQ_FALLBACK_MS 1

typedef struct ifd_event ifd_event_t;

struct ifd_event {
  ifd_event_t *next;           /* guarded by the queue's mu while queued */
  void (*fn)(ifd_event_t *ev); /* runs on the loop thread */
};

typedef struct ifd_evq {
  uv_async_t async;    /* embedded; reached back with container_of */
  uv_check_t check;    /* embedded: pays a debt after every poll */
  uv_prepare_t watch;  /* embedded: arms the fallback timer before a poll */
  uv_timer_t fallback; /* embedded: pays a debt nobody else paid */
  uv_idle_t nowait;    /* embedded: keeps the poll from blocking while an
                          event is expected */
  pthread_mutex_t mu;
  ifd_event_t *head;    /* guarded by mu */
  ifd_event_t *tail;    /* guarded by mu */
  uint64_t owed_since;  /* guarded by mu: when the debt began (ns) */
  uint64_t owed_max;    /* guarded by mu: the bound its owner gave (ns) */
  atomic_int owed;      /* written under mu; read without it by the loop */
  atomic_int deferring; /* producers between defer_begin and defer_end */
  atomic_int watching;  /* loop: the fallback timer is armed */
  atomic_int looks;     /* loop: it will look at the queue before it next
                           blocks, so producers need not signal */
  uint64_t spin_max_ns; /* loop thread: longest wait for an expected event
                           (0: never wait) */
  uint64_t expect_ns;   /* loop thread: wait asked for (0: none) */
  int busy;             /* loop thread: work of its own came up since */
  uint64_t waits;       /* loop thread: waits for expected events */
  uint64_t waits_hit;   /* loop thread: waits that got an event */
  int closing;          /* loop thread: handles left to close */
  uv_close_cb close_cb; /* loop thread: called when the last one closed */
  uint64_t wakeups;     /* guarded by mu: async sends (tests, statistics) */
} ifd_evq_t;

/** Initializes the queue on `loop`. Returns 0 or a negative libuv code. */
int ifd_evq_init(uv_loop_t *loop, ifd_evq_t *q);

/** Pushes `ev` (any thread). Its fn runs on the loop thread later, in push
 *  order. `ev` must stay valid until then and must not be queued twice. */
void ifd_evq_push(ifd_evq_t *q, ifd_event_t *ev);

/**
 * Starts deferring this thread's wake-ups of `q`: an event it pushes onto
 * an empty queue leaves the wake-up owed instead of signalling, for at most
 * `max_ns` as far as this thread's own pushes and ifd_evq_defer_end() can
 * see (see the file comment for who else pays). Per thread, one queue at a
 * time; a second call for the same queue only changes the bound.
 */
void ifd_evq_defer_begin(ifd_evq_t *q, uint64_t max_ns);

/** Stops deferring and pays the queue's debt, if any (any debt: paying is
 *  always safe). No-op when this thread does not defer. */
void ifd_evq_defer_end(void);

/** Whether `q`'s wake-up is owed right now (tests, assertions). */
int ifd_evq_owed(ifd_evq_t *q);

/** Sets the longest the loop waits for an expected event (loop thread;
 *  0, the default, turns waiting off). */
void ifd_evq_set_spin(ifd_evq_t *q, uint64_t max_ns);

/**
 * Loop thread, before it hands work to another thread: an event is
 * expected on `q` within about `within_ns`. When that is within the
 * queue's bound, producers stop signalling and the loop, instead of
 * sleeping in its next poll, waits for the queue to fill (see the file
 * comment). Returns 1 when the loop will wait, 0 when not (waiting off, or
 * `within_ns` too long).
 */
int ifd_evq_expect(ifd_evq_t *q, uint64_t within_ns);

/** Loop thread: the loop has work of its own for its next iteration, so a
 *  wait for an expected event asked for earlier is cut short. */
void ifd_evq_busy(ifd_evq_t *q);

/** Async sends so far (tests and statistics). */
uint64_t ifd_evq_wakeups(ifd_evq_t *q);

/** Runs every queued event now (loop thread; also used by tests). A debt is
 *  settled by the drain. */
void ifd_evq_drain(ifd_evq_t *q);

/**
 * Closes the queue's handles (loop thread); `cb` runs once, after the last
 * one closed, with the async handle as argument (its `data` is left for the
 * caller). `q` may be freed in `cb`; `cb` may be NULL.
 */
void ifd_evq_close(ifd_evq_t *q, uv_close_cb cb);

#endif
