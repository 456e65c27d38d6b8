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
 */
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "core/log.h"
#include "core/model.h"
#include "core/server.h"
#include "core/util.h"
#include "sched/internal.h"

typedef struct rq {
  ifd_request_t *head, *tail; /* linked through req->next */
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
} dyn_t;

static void rq_push(rq_t *q, ifd_request_t *r) {
  r->next = NULL;
  if (q->tail != NULL)
    q->tail->next = r;
  else
    q->head = r;
  q->tail = r;
}

/* Removes `r`, whose predecessor is `prev` (NULL for the head). */
static void rq_unlink(rq_t *q, ifd_request_t *prev, ifd_request_t *r) {
  if (prev != NULL)
    prev->next = r->next;
  else
    q->head = r->next;
  if (q->tail == r) q->tail = prev;
  r->next = NULL;
}

static uint64_t req_size(const ifd_request_t *r) {
  return r->batch_size > 0 ? r->batch_size : 1;
}

/* Requests batch together only when every input has the same data type and
 * the same dims after the batch dimension. */
static int compatible(const ifd_request_t *a, const ifd_request_t *b) {
  uint32_t i, j, k;
  if (a->n_inputs != b->n_inputs) return 0;
  for (i = 0; i < a->n_inputs; i++) {
    const ifd_input_t *x = &a->inputs[i], *y = NULL;
    for (j = 0; j < b->n_inputs; j++)
      if (strcmp(b->inputs[j].name, x->name) == 0) y = &b->inputs[j];
    if (y == NULL || y->dtype != x->dtype || y->ndims != x->ndims) return 0;
    for (k = 1; k < x->ndims; k++)
      if (x->shape[k] != y->shape[k]) return 0;
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

/* Applies queue timeouts due by `now`: REJECT answers the request,
 * DELAY moves it behind the level's other requests. Returns the earliest
 * deadline still pending (0: none). */
static uint64_t expire(dyn_t *d, uint64_t now) {
  uint64_t next = 0;
  uint32_t i;
  for (i = 0; i < d->n_levels; i++) {
    level_t *l = &d->levels[i];
    ifd_request_t *prev = NULL, *r = l->main.head;
    while (r != NULL) {
      ifd_request_t *nx = r->next;
      if (r->sched_deadline == 0 || r->sched_deadline > now) {
        if (r->sched_deadline != 0 && (next == 0 || r->sched_deadline < next))
          next = r->sched_deadline;
        prev = r;
        r = nx;
        continue;
      }
      rq_unlink(&l->main, prev, r);
      r->sched_deadline = 0;
      if (l->delay_on_timeout) {
        rq_push(&l->delayed, r);
      } else {
        l->count--;
        d->s->queued--;
        ifd_request_abort(r, IFD_EUNAVAIL, "Request timeout expired");
      }
      r = nx;
    }
  }
  return next;
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
      for (; r != NULL; r = r->next) {
        if (*total + req_size(r) > d->max_batch ||
            (n > 0 && !compatible(d->batch[0], r))) {
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
    level_t *lv = &d->levels[r->sched_level];
    /* Batches come from queue heads, in order: unlink from whichever
     * queue of its level it heads. */
    if (lv->main.head == r)
      rq_unlink(&lv->main, NULL, r);
    else
      rq_unlink(&lv->delayed, NULL, r);
    lv->count--;
    d->s->queued--;
    r->sched_deadline = 0;
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

  if (l->max_queue_size > 0 && l->count >= l->max_queue_size)
    return ifd_errf(err, IFD_EUNAVAIL,
                    "Exceeds maximum queue size for model '%s'",
                    s->model->name);
  req->t_queued = uv_hrtime();
  req->sched_level = lvl;
  /* A request may shorten the queue timeout, never lengthen it. */
  if (l->allow_override && req->timeout_us > 0 &&
      (timeout_us == 0 || req->timeout_us < timeout_us))
    timeout_us = req->timeout_us;
  req->sched_deadline = timeout_us > 0 ? req->t_queued + timeout_us * 1000 : 0;
  rq_push(&l->main, req);
  l->count++;
  s->queued++;
  schedule(d);
  return 0;
}

static void dyn_idle(ifd__sched_t *s) {
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
        rq_unlink(q, NULL, r);
        d->levels[i].count--;
        s->queued--;
        ifd_request_abort(r, IFD_EUNAVAIL, "the model is being unloaded");
      }
    }
}

static void free_dyn(dyn_t *d) {
  ifd__sched_t *s = d->s;
  free(d->levels);
  free(d->batch);
  free(d->preferred);
  free(d);
  ifd__sched_free_base(s);
}

static void on_timer_closed(uv_handle_t *h) {
  free_dyn(ifd_container_of((uv_timer_t *)h, dyn_t, timer));
}

static void dyn_destroy(ifd__sched_t *s) {
  dyn_t *d = s->impl;
  if (d->timer_init)
    uv_close((uv_handle_t *)&d->timer, on_timer_closed);
  else
    free_dyn(d);
}

const ifd__sched_kind_t ifd__dynamic_kind = {dyn_submit, dyn_idle, dyn_stop,
                                             dyn_destroy};
