/*
 * sched/dynamic.c - Triton's dynamic batcher, on the loop thread.
 *
 * Requests wait in priority levels (level 0 is priority 1, the highest),
 * each a FIFO plus a "delayed" FIFO for requests whose queue timeout expired
 * under timeout_action DELAY. A batch is formed only when an instance is
 * idle, from the head of the highest non-empty level onwards, while the
 * requests fit in max_batch_size and have the same non-batch shapes. It is
 * sent at once when it is full (max_batch_size, or the largest preferred
 * size, trimmed to the largest preferred size it holds), when the next
 * request cannot join it, when no queue delay is configured, or when the
 * oldest request has waited max_queue_delay_microseconds; otherwise one
 * uv_timer wakes the batcher when that delay (or a queue timeout) expires.
 * So an idle model answers at once and a busy one grows its batches.
 *
 * Queue timeouts cost O(log n) per request and nothing per submit beyond a
 * look at the earliest deadline: requests with a deadline also sit in one
 * binary min-heap ordered by deadline, and expiring pops only what is due.
 *
 * preserve_ordering: the batcher holds each response back until every
 * request submitted before its own has had its FINAL response, through the
 * model's response hold (ifd_model_t.hold_response).
 */
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/check.h"
#include "base/log.h"
#include "core/model.h"
#include "core/server.h"
#include "base/util.h"
#include "sched/internal.h"
#include "core/request_internal.h"

/* The batcher's per-request state, laid over ifd_request_t.sched_area. */
typedef struct dreq {
  ifd_request_t *prev, *next; /* borrowed: links of its level's queue */
  uint64_t deadline;          /* queue timeout (ns), 0: none or expired */
  uint64_t arrival;           /* arrival number in this batcher */
  uint64_t order;             /* preserve_ordering: submission number */
  uint32_t heap_ix;           /* position in the deadline heap + 1; 0: none */
  uint32_t level;             /* priority level index */
  uint8_t delayed;            /* in its level's delayed queue */
  uint8_t ordered;            /* `order` is set */
} dreq_t;

_Static_assert(sizeof(dreq_t) <= sizeof(((ifd_request_t *)0)->sched_area),
               "the batcher's per-request state must fit the request's area");

static dreq_t *dr(ifd_request_t *r) {
  return (dreq_t *)(void *)&r->sched_area;
}

typedef struct rq {
  ifd_request_t *head, *tail; /* borrowed: linked through dreq prev/next */
} rq_t;

typedef struct level {
  rq_t main;               /* waiting in arrival order */
  rq_t delayed;            /* timed out under DELAY: served after main */
  uint64_t count;          /* both queues */
  int delay_on_timeout;    /* timeout_action DELAY (else REJECT) */
  uint64_t timeout_us;     /* default_timeout_microseconds, 0 none */
  int allow_override;      /* requests may shorten the timeout */
  uint32_t max_queue_size; /* 0 unbounded */
} level_t;

typedef struct dyn {
  ifd__sched_t *s; /* borrowed: owns this */
  level_t *levels; /* owned */
  uint32_t n_levels;
  uint32_t default_level; /* index */
  uint64_t max_batch;
  int32_t *preferred; /* owned: ascending */
  size_t n_preferred;
  uint64_t delay_ns;
  int has_timeouts;
  uv_timer_t timer; /* embedded; initialized on first use (loop) */
  int timer_init;
  ifd_request_t **batch; /* owned scratch: max_batch entries */
  ifd_request_t **heap;  /* owned: requests with a deadline, min-heap */
  uint32_t heap_n, heap_cap;
  uint64_t arrivals;  /* requests queued so far */
  ifd__order_t order; /* preserve_ordering: by submission */
} dyn_t;

static void rq_push(rq_t *q, ifd_request_t *r) {
  dr(r)->next = NULL;
  dr(r)->prev = q->tail;
  if (q->tail != NULL)
    dr(q->tail)->next = r;
  else
    q->head = r;
  q->tail = r;
}

static void rq_remove(rq_t *q, ifd_request_t *r) {
  dreq_t *x = dr(r);
  if (x->prev != NULL)
    dr(x->prev)->next = x->next;
  else
    q->head = x->next;
  if (x->next != NULL)
    dr(x->next)->prev = x->prev;
  else
    q->tail = x->prev;
  x->prev = x->next = NULL;
}

/* Takes `r` out of whichever queue of its level holds it. */
static void level_remove(level_t *l, ifd_request_t *r) {
  rq_remove(dr(r)->delayed ? &l->delayed : &l->main, r);
  dr(r)->delayed = 0;
}

/* ---- the deadline heap ----------------------------------------------------
 */

/* Heap order: earlier deadline first, then earlier arrival. */
static int due_before(ifd_request_t *a, ifd_request_t *b) {
  const dreq_t *x = dr(a), *y = dr(b);
  return x->deadline < y->deadline ||
         (x->deadline == y->deadline && x->arrival < y->arrival);
}

static void heap_set(dyn_t *d, uint32_t i, ifd_request_t *r) {
  d->heap[i] = r;
  dr(r)->heap_ix = i + 1;
}

static void heap_up(dyn_t *d, uint32_t i) {
  ifd_request_t *r = d->heap[i];
  while (i > 0 && due_before(r, d->heap[(i - 1) / 2])) {
    heap_set(d, i, d->heap[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
  heap_set(d, i, r);
}

static void heap_down(dyn_t *d, uint32_t i) {
  ifd_request_t *r = d->heap[i];
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= d->heap_n) break;
    if (c + 1 < d->heap_n && due_before(d->heap[c + 1], d->heap[c])) c++;
    if (!due_before(d->heap[c], r)) break;
    heap_set(d, i, d->heap[c]);
    i = c;
  }
  heap_set(d, i, r);
}

/* Returns 0 or IFD_ENOMEM (the heap could not grow). */
static int heap_push(dyn_t *d, ifd_request_t *r) {
  if (d->heap_n == d->heap_cap) {
    uint32_t cap = d->heap_cap ? d->heap_cap * 2 : 64;
    ifd_request_t **h = realloc(d->heap, cap * sizeof(*h));
    if (h == NULL || cap < d->heap_cap) {
      if (h != NULL) d->heap = h;
      return IFD_ENOMEM;
    }
    d->heap = h;
    d->heap_cap = cap;
  }
  heap_set(d, d->heap_n++, r);
  heap_up(d, d->heap_n - 1);
  return 0;
}

static void heap_remove(dyn_t *d, ifd_request_t *r) {
  uint32_t i = dr(r)->heap_ix - 1;
  ifd_request_t *last = d->heap[--d->heap_n];
  dr(r)->heap_ix = 0;
  if (last == r) return;
  heap_set(d, i, last);
  heap_up(d, i);
  heap_down(d, dr(last)->heap_ix - 1);
}

/* ---- configuration ------------------------------------------------------- */

static uint64_t req_size(const ifd_request_t *r) {
  return r->batch_size > 0 ? r->batch_size : 1;
}

/* Whether the model's input `name` has allow_ragged_batch. */
static int ragged(const ifd_model_config_t *c, const char *name) {
  size_t i;
  for (i = 0; i < c->n_input; i++)
    if (strcmp(c->input[i]->name, name) == 0)
      return c->input[i]->allow_ragged_batch;
  return 0;
}

/* Requests batch together only when every input has the same data type and
 * the same dims after the batch dimension, except that an input with
 * allow_ragged_batch may differ in shape (Triton's ragged batching: the
 * backend joins such inputs itself). */
static int compatible(const ifd_model_config_t *c, const ifd_request_t *a,
                      const ifd_request_t *b) {
  uint32_t i, j, k;
  if (a->n_inputs != b->n_inputs) return 0;
  for (i = 0; i < a->n_inputs; i++) {
    const ifd_input_t *x = &a->inputs[i], *y = NULL;
    for (j = 0; j < b->n_inputs; j++)
      if (strcmp(b->inputs[j].name, x->name) == 0) y = &b->inputs[j];
    if (y == NULL || y->dtype != x->dtype) return 0;
    if (y->ndims == x->ndims) {
      for (k = 1; k < x->ndims; k++)
        if (x->shape[k] != y->shape[k]) break;
      if (k == x->ndims) continue;
    }
    if (!ragged(c, x->name)) return 0;
  }
  return 1;
}

static const Inference__ModelQueuePolicy *level_policy(
    const Inference__ModelDynamicBatching *db, uint64_t priority) {
  size_t i;
  for (i = 0; i < db->n_priority_queue_policy; i++)
    if (db->priority_queue_policy[i]->key == priority)
      return db->priority_queue_policy[i]->value;
  return db->default_queue_policy;
}

static void hold_response(ifd_model_t *m, ifd_response_t *resp);

int ifd__dynamic_init(ifd__sched_t *s, ifd_errmsg_t *err) {
  const ifd_model_config_t *c = s->model->config;
  const Inference__ModelDynamicBatching *db = c->dynamic_batching;
  dyn_t *d = calloc(1, sizeof(*d));
  uint32_t i;
  size_t k;

  if (d == NULL) goto out_nomem;
  d->s = s;
  d->max_batch = (uint64_t)c->max_batch_size;
  d->n_levels = db->priority_levels > 0 ? (uint32_t)db->priority_levels : 1;
  d->default_level = db->priority_levels > 0 && db->default_priority_level > 0
                         ? (uint32_t)db->default_priority_level - 1
                         : 0;
  if (d->default_level >= d->n_levels) d->default_level = d->n_levels - 1;
  d->delay_ns = db->max_queue_delay_microseconds * 1000;
  d->levels = calloc(d->n_levels, sizeof(*d->levels));
  d->batch = calloc(d->max_batch, sizeof(*d->batch));
  d->preferred = calloc(db->n_preferred_batch_size + 1, sizeof(int32_t));
  if (d->levels == NULL || d->batch == NULL || d->preferred == NULL)
    goto out_nomem;
  for (k = 0; k < db->n_preferred_batch_size; k++) {
    /* Insertion keeps them ascending; configs list a handful. */
    size_t j = d->n_preferred++;
    while (j > 0 && d->preferred[j - 1] > db->preferred_batch_size[k]) {
      d->preferred[j] = d->preferred[j - 1];
      j--;
    }
    d->preferred[j] = db->preferred_batch_size[k];
  }
  for (i = 0; i < d->n_levels; i++) {
    const Inference__ModelQueuePolicy *p =
        level_policy(db, db->priority_levels > 0 ? i + 1 : 0);
    level_t *l = &d->levels[i];
    if (p == NULL) continue;
    l->delay_on_timeout = p->timeout_action ==
                          INFERENCE__MODEL_QUEUE_POLICY__TIMEOUT_ACTION__DELAY;
    l->timeout_us = p->default_timeout_microseconds;
    l->allow_override = p->allow_timeout_override;
    l->max_queue_size = p->max_queue_size;
    if (l->timeout_us > 0 || l->allow_override) d->has_timeouts = 1;
  }
  s->impl = d;
  if (db->preserve_ordering) s->model->hold_response = hold_response;
  return 0;

out_nomem:
  if (d != NULL) {
    free(d->levels);
    free(d->batch);
    free(d->preferred);
    free(d);
  }
  return ifd_errf(err, IFD_ENOMEM, "out of memory");
}

/* ---- queue timeouts ---------------------------------------------------- */

/* Order in which due requests are handled: by level, then by arrival (the
 * order of a walk over the levels' queues). */
static int handled_before(ifd_request_t *a, ifd_request_t *b) {
  const dreq_t *x = dr(a), *y = dr(b);
  return x->level < y->level ||
         (x->level == y->level && x->arrival < y->arrival);
}

/* Sorts a list linked through dreq.next by handled_before (merge sort). */
static ifd_request_t *sort_due(ifd_request_t *list) {
  ifd_request_t *slow, *fast, *a, *b, *head = NULL, **tail = &head;
  if (list == NULL || dr(list)->next == NULL) return list;
  for (slow = list, fast = dr(list)->next; fast != NULL && dr(fast)->next;
       fast = dr(dr(fast)->next)->next)
    slow = dr(slow)->next;
  b = dr(slow)->next;
  dr(slow)->next = NULL;
  a = sort_due(list);
  b = sort_due(b);
  while (a != NULL && b != NULL) {
    if (handled_before(b, a)) {
      *tail = b;
      b = dr(b)->next;
    } else {
      *tail = a;
      a = dr(a)->next;
    }
    tail = &dr(*tail)->next;
  }
  *tail = a != NULL ? a : b;
  return head;
}

/* Applies queue timeouts due by `now`: REJECT answers the request, DELAY
 * moves it behind the level's other requests. Costs O(k log n) for the k
 * requests due. Returns the earliest deadline still pending (0: none). */
static uint64_t expire(dyn_t *d, uint64_t now) {
  ifd_request_t *due = NULL, *r;

  /* Take every due request off the heap and its queue first: answering one
   * calls back into the protocol, which must find the queues consistent. */
  while (d->heap_n > 0 && dr(d->heap[0])->deadline <= now) {
    r = d->heap[0];
    heap_remove(d, r);
    level_remove(&d->levels[dr(r)->level], r);
    dr(r)->deadline = 0;
    dr(r)->next = due;
    due = r;
  }
  due = sort_due(due);
  while (due != NULL) {
    level_t *l;
    r = due;
    due = dr(r)->next;
    dr(r)->next = NULL;
    l = &d->levels[dr(r)->level];
    if (l->delay_on_timeout) {
      rq_push(&l->delayed, r);
      dr(r)->delayed = 1;
    } else {
      l->count--;
      d->s->queued--;
      ifd_request_abort(r, IFD_EUNAVAIL, "Request timeout expired");
    }
  }
  return d->heap_n > 0 ? dr(d->heap[0])->deadline : 0;
}

/* ---- batch formation ----------------------------------------------------- */

/* Collects the candidate batch into d->batch. *total is its size in batch
 * elements; *blocked says the next queued request could not join it. */
static uint32_t gather(dyn_t *d, uint64_t *total, int *blocked) {
  uint32_t n = 0, i;
  int pass;
  *total = 0;
  *blocked = 0;
  for (i = 0; i < d->n_levels; i++)
    for (pass = 0; pass < 2; pass++) {
      ifd_request_t *r =
          pass == 0 ? d->levels[i].main.head : d->levels[i].delayed.head;
      for (; r != NULL; r = dr(r)->next) {
        if (*total + req_size(r) > d->max_batch ||
            (n > 0 && !compatible(d->s->model->config, d->batch[0], r))) {
          *blocked = 1;
          return n;
        }
        d->batch[n++] = r;
        *total += req_size(r);
      }
    }
  return n;
}

/* Trims a full batch to the largest preferred size it holds as a prefix. */
static uint32_t trim_preferred(dyn_t *d, uint32_t n) {
  uint64_t acc = 0, best_n = 0;
  uint32_t i;
  size_t k;
  for (i = 0; i < n; i++) {
    acc += req_size(d->batch[i]);
    for (k = 0; k < d->n_preferred; k++)
      if ((uint64_t)d->preferred[k] == acc) best_n = i + 1;
  }
  return best_n > 0 ? (uint32_t)best_n : n;
}

static void remove_batch(dyn_t *d, uint32_t n) {
  uint32_t i;
  for (i = 0; i < n; i++) {
    ifd_request_t *r = d->batch[i];
    level_t *lv = &d->levels[dr(r)->level];
    level_remove(lv, r);
    if (dr(r)->heap_ix != 0) heap_remove(d, r);
    dr(r)->deadline = 0;
    lv->count--;
    d->s->queued--;
  }
}

static void on_timer(uv_timer_t *t);

static void arm(dyn_t *d, uint64_t at_ns, uint64_t now) {
  uint64_t ms;
  if (!d->timer_init) {
    uv_timer_init(ifd_server_loop(d->s->model->server), &d->timer);
    d->timer_init = 1;
  }
  /* libuv timers have millisecond resolution: round up so the batch is
   * never sent before its delay. */
  ms = at_ns > now ? (at_ns - now + 999999) / 1000000 : 0;
  uv_timer_start(&d->timer, on_timer, ms, 0);
}

static void schedule(dyn_t *d) {
  ifd__sched_t *s = d->s;
  uint64_t now = uv_hrtime(), next_timeout = 0;

  if (d->has_timeouts) next_timeout = expire(d, now);
  if (d->timer_init) uv_timer_stop(&d->timer);
  while (ifd__sched_has_idle(s) && s->queued > 0) {
    uint64_t total, waited;
    int blocked;
    uint32_t n = gather(d, &total, &blocked);
    int full = total >= d->max_batch ||
               (d->n_preferred > 0 &&
                total >= (uint64_t)d->preferred[d->n_preferred - 1]);
    if (n == 0) break;
    waited = now - d->batch[0]->t_queued;
    if (!full && !blocked && d->delay_ns > 0 && waited < d->delay_ns) {
      uint64_t at = d->batch[0]->t_queued + d->delay_ns;
      if (next_timeout != 0 && next_timeout < at) at = next_timeout;
      arm(d, at, now);
      return;
    }
    if (full && d->n_preferred > 0 && waited < d->delay_ns)
      n = trim_preferred(d, n);
    remove_batch(d, n);
    ifd__sched_dispatch(s, d->batch, n);
  }
  if (next_timeout != 0) arm(d, next_timeout, now);
}

static void on_timer(uv_timer_t *t) {
  schedule(ifd_container_of(t, dyn_t, timer));
}

static int dyn_submit(ifd__sched_t *s, ifd_request_t *req, ifd_errmsg_t *err) {
  dyn_t *d = s->impl;
  uint32_t lvl = req->priority > 0 && req->priority <= d->n_levels &&
                         s->model->config->dynamic_batching->priority_levels > 0
                     ? req->priority - 1
                     : d->default_level;
  level_t *l = &d->levels[lvl];
  uint64_t timeout_us = l->timeout_us;
  dreq_t *x = dr(req);

  IFD_ASSERT(ifd__req(req)->state == IFD_REQ_QUEUED);
  if (l->max_queue_size > 0 && l->count >= l->max_queue_size)
    return ifd_errf(err, IFD_EOVERLOADED,
                    "Exceeds maximum queue size for model '%s'",
                    s->model->name);
  memset(x, 0, sizeof(*x));
  req->t_queued = uv_hrtime();
  x->level = lvl;
  x->arrival = d->arrivals;
  /* A request may shorten the queue timeout, never lengthen it. */
  if (l->allow_override && req->timeout_us > 0 &&
      (timeout_us == 0 || req->timeout_us < timeout_us))
    timeout_us = req->timeout_us;
  if (timeout_us > 0) {
    x->deadline = req->t_queued + timeout_us * 1000;
    if (heap_push(d, req) < 0)
      return ifd_errf(err, IFD_ENOMEM, "out of memory");
  }
  d->arrivals++;
  if (s->model->hold_response != NULL) {
    x->order = d->order.next++;
    x->ordered = 1;
  }
  rq_push(&l->main, req);
  l->count++;
  s->queued++;
  schedule(d);
  return 0;
}

static void dyn_idle(ifd__sched_t *s, uint32_t instance) {
  (void)instance;
  schedule(s->impl);
}

static void dyn_stop(ifd__sched_t *s) {
  dyn_t *d = s->impl;
  uint32_t i;
  int pass;
  if (d->timer_init) uv_timer_stop(&d->timer);
  ifd__sched_refuse_queued(s);
  for (i = 0; i < d->n_levels; i++)
    for (pass = 0; pass < 2; pass++) {
      rq_t *q = pass == 0 ? &d->levels[i].main : &d->levels[i].delayed;
      while (q->head != NULL) {
        ifd_request_t *r = q->head;
        level_remove(&d->levels[i], r);
        if (dr(r)->heap_ix != 0) heap_remove(d, r);
        d->levels[i].count--;
        s->queued--;
        ifd_request_abort(r, IFD_EUNAVAIL, "the model is being unloaded");
      }
    }
}

/* ---- preserve_ordering --------------------------------------------------- */

static uint64_t order_of(const ifd_response_t *r) {
  return dr(r->req)->order;
}

/* The model's response hold: responses in submission order. */
static void hold_response(ifd_model_t *m, ifd_response_t *resp) {
  /* Installed only while the batcher exists (free_dyn removes it). */
  dyn_t *d = ((ifd__sched_t *)m->sched)->impl;
  dreq_t *x = dr(resp->req);
  /* Requests that never got a number (none today) go on at once. */
  if (!x->ordered) {
    ifd_response_deliver(resp);
    return;
  }
  ifd__order_hold(&d->order, resp, x->order, order_of);
}

/* ---- teardown ------------------------------------------------------------ */

/* Responses still held mean an earlier request never got its FINAL
 * response (a backend that never released it): pass them on rather than
 * leave their clients waiting. Then nothing refers to the model any more. */
static void release_held(dyn_t *d) {
  d->s->model->hold_response = NULL;
  ifd__order_release(&d->order);
  ifd__sched_detach(d->s);
}

/* Frees the batcher's memory; touches no model (it is detached). */
static void free_dyn(dyn_t *d) {
  ifd__sched_t *s = d->s;
  free(d->levels);
  free(d->batch);
  free(d->preferred);
  free(d->heap);
  free(d);
  ifd__sched_free_base(s);
}

static void on_timer_closed(uv_handle_t *h) {
  free_dyn(ifd_container_of((uv_timer_t *)h, dyn_t, timer));
}

static void dyn_destroy(ifd__sched_t *s) {
  dyn_t *d = s->impl;
  /* At once, not in the timer's close callback: the model may be freed
   * before that runs (ifd_server_free right after the last unload). */
  release_held(d);
  if (d->timer_init)
    uv_close((uv_handle_t *)&d->timer, on_timer_closed);
  else
    free_dyn(d);
}

/* A cancelled request still in a level leaves it unanswered by a batch;
 * one already dispatched may still be on the run queue. */
static void dyn_cancel(ifd__sched_t *s, ifd_request_t *req) {
  dyn_t *d = s->impl;
  level_t *l;
  if (ifd__req(req)->state != IFD_REQ_QUEUED) {
    ifd__sched_take_cancelled(s, req);
    return;
  }
  l = &d->levels[dr(req)->level];
  level_remove(l, req);
  if (dr(req)->heap_ix != 0) heap_remove(d, req);
  dr(req)->deadline = 0;
  l->count--;
  s->queued--;
  ifd_request_abort(req, IFD_ECANCELLED, IFD__CANCELLED_MSG);
}

const ifd__sched_kind_t ifd__dynamic_kind = {
    dyn_submit, dyn_idle, dyn_stop, dyn_destroy, dyn_cancel, NULL, NULL};
