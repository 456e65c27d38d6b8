/*
 * sched/sequence.c - Triton's sequence batcher, on the loop thread.
 *
 * A sequence is the requests that share a correlation ID, from a START
 * request to an END request. Every request of a sequence runs on the one
 * instance that holds the sequence, in arrival order, one at a time: the
 * next is dispatched only after the batch holding the previous one has
 * finished (the instance reported idle), so implicit state and per-slot
 * backend state see the requests in order.
 *
 * Direct strategy: each instance has max(1, max_batch_size) slots; a new
 * sequence takes the free slot of lowest index over all instances (so
 * sequences spread across instances) or waits in the backlog, a FIFO, and
 * moves into the first slot that frees. A batch for an instance holds the
 * head request of every busy slot at the batch position of its slot; slots
 * below the highest filled one that have nothing ready get a null request
 * (READY false, the shapes of a real request, zero data), as backends keep
 * per-slot state by position. Oldest strategy: each instance holds up to
 * max_candidate_sequences sequences and batches the oldest ready requests,
 * one per sequence, up to max_batch_size; CORRID tells the model whose each
 * row is. Either way, with a max_queue_delay_microseconds, a batch below
 * the target (direct: minimum_slot_utilization of the slots; oldest: the
 * largest preferred size) waits until its oldest request has waited that
 * long.
 *
 * Batches are formed at the end of the loop iteration that queued requests
 * (ifd_server_at_iteration_end) and when an instance reports idle, so the
 * requests read in one iteration go out together.
 *
 * Control inputs (START, END, READY, CORRID) and state inputs are added to
 * each request as ordinary inputs at dispatch; START/END/READY point at
 * constants of the batcher and CORRID at a few bytes of the request's pool.
 *
 * Idle sequences: a sequence with nothing queued or running, whose last
 * request arrived max_sequence_idle_microseconds ago, is released. The
 * deadlines sit in one min-heap with one timer; a request only records its
 * arrival time, and a deadline that comes due for a sequence that was used
 * since is pushed back then, so live traffic costs no heap work.
 *
 * sched/seq_batch.c forms the batches,
 * sched/seq_index.c keeps the sequences by ID and the idle heap,
 * sched/seq_inputs.c builds the added inputs and the null requests,
 * sched/seq_init.c the initial values of implicit states.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/check.h"
#include "base/log.h"
#include "core/model.h"
#include "core/seqstate.h"
#include "core/server.h"
#include "base/util.h"
#include "sched/seq_internal.h"
#include "core/request_internal.h"

/* ---- timers ---------------------------------------------------------------
 */

static void on_idle_timer(uv_timer_t *t);
static void on_wait_timer(uv_timer_t *t);

/* Starts `t` to fire at `at` (ns), rounded up to the loop's milliseconds. */
static void arm(uv_timer_t *t, uv_timer_cb cb, uint64_t at) {
  uint64_t now = ifd__seq_now_ns();
  uint64_t ms = at > now ? (at - now + 999999) / 1000000 : 0;
  uv_timer_start(t, cb, ms, 0);
}

static void timers_init(sb_t *b) {
  uv_loop_t *loop = ifd_server_loop(b->s->model->server);
  if (b->timers_init) return;
  uv_timer_init(loop, &b->idle_timer);
  uv_timer_init(loop, &b->wait_timer);
  /* Neither keeps the loop alive on its own. */
  uv_unref((uv_handle_t *)&b->idle_timer);
  uv_unref((uv_handle_t *)&b->wait_timer);
  b->timers_init = 1;
}

static void arm_idle(sb_t *b) {
  timers_init(b);
  if (b->heap_n == 0)
    uv_timer_stop(&b->idle_timer);
  else
    arm(&b->idle_timer, on_idle_timer, b->heap[0]->deadline);
}

void ifd__seq_wait(sb_t *b, inst_t *in, uint64_t until) {
  in->wait_until = until;
  timers_init(b);
  arm(&b->wait_timer, on_wait_timer, until);
}

/* ---- sequences -------------------------------------------------------------
 */

/* The ID as messages print it. */
static const char *id_name(uint64_t id, const char *sid, char *buf, size_t n) {
  if (sid != NULL) return sid;
  snprintf(buf, n, "%" PRIu64, id);
  return buf;
}

static const char *seq_name(const seq_t *q, char *buf, size_t n) {
  return id_name(q->id, q->sid, buf, n);
}

void ifd__seq_free(seq_t *q) {
  ifd_seq_state_unref(q->state);
  free(q->sid);
  free(q);
}

/* Places `q` in slot `slot` of instance `k`. */
static void seq_place(sb_t *b, seq_t *q, uint32_t k, uint32_t slot) {
  q->inst = (int32_t)k;
  q->slot = (int32_t)slot;
  b->inst[k].slots[slot] = q;
  b->n_active++;
  b->inst[k].dirty = 1;
}

/* A slot freed: the backlog's head takes it. */
static void slot_freed(sb_t *b, uint32_t k, uint32_t slot) {
  seq_t *q = b->bl_head;
  char name[32];
  b->inst[k].slots[slot] = NULL;
  b->n_active--;
  if (q == NULL) return;
  b->bl_head = q->bl_next;
  if (b->bl_head == NULL) b->bl_tail = NULL;
  q->bl_next = NULL;
  b->n_backlog--;
  IFD_VERBOSE(
      "sequence batcher of '%s': backlogged sequence %s takes slot "
      "%u of instance %u",
      b->s->model->name, seq_name(q, name, sizeof(name)), slot, k);
  seq_place(b, q, k, slot);
}

/* Finds a free slot: the lowest slot index over all instances. */
static int free_slot(sb_t *b, uint32_t *k, uint32_t *slot) {
  uint32_t i, j;
  for (i = 0; i < b->nslots; i++)
    for (j = 0; j < b->s->n_instances; j++)
      if (b->inst[j].slots[i] == NULL) {
        *k = j;
        *slot = i;
        return 1;
      }
  return 0;
}

static int seq_new(sb_t *b, const ifd_request_t *req, uint64_t hash,
                   seq_t **out, ifd_errmsg_t *err) {
  seq_t *q = calloc(1, sizeof(*q));
  uint32_t k, slot;
  if (q == NULL) goto out_nomem;
  q->id = req->correlation_id;
  if (req->correlation_id_str != NULL) {
    q->sid = strdup(req->correlation_id_str);
    if (q->sid == NULL) goto out_nomem;
  }
  q->hash = hash;
  q->inst = -1;
  q->slot = -1;
  if (b->n_state > 0) {
    q->state = ifd_seq_state_new(b->n_state);
    if (q->state == NULL) goto out_nomem;
  }
  q->deadline = ifd__seq_now_ns() + b->idle_ns;
  if (ifd__seq_heap_push(b, q) < 0) goto out_nomem;
  if (free_slot(b, &k, &slot)) {
    seq_place(b, q, k, slot);
  } else {
    if (b->bl_tail != NULL)
      b->bl_tail->bl_next = q;
    else
      b->bl_head = q;
    b->bl_tail = q;
    b->n_backlog++;
  }
  if (b->heap_n == 1 || b->heap[0] == q) arm_idle(b);
  *out = q;
  return 0;

out_nomem:
  if (q != NULL) {
    ifd__seq_heap_remove(b, q);
    ifd__seq_free(q);
  }
  return ifd_errf(err, IFD_ENOMEM, "out of memory");
}

/* Releases a sequence that holds no request any more: its slot goes to the
 * backlog, and it is freed unless a batch still runs one of its requests
 * (then the instance's idle report frees it). */
void ifd__seq_release(sb_t *b, seq_t *q) {
  ifd__seq_table_del(b, q);
  ifd__seq_heap_remove(b, q);
  if (q->inst >= 0) {
    uint32_t k = (uint32_t)q->inst, slot = (uint32_t)q->slot;
    q->inst = -1;
    slot_freed(b, k, slot);
  }
  if (!q->running) ifd__seq_free(q);
}

/* A sequence whose next request was cancelled ends there, as in Triton's
 * batchers: that request and every one queued after it are answered
 * CANCELLED, the slot goes to the backlog, and the ID is free (a later
 * request without START is refused). Requests ahead of the cancelled one
 * ran already, each in its turn. */
static void cancel_in_slot(sb_t *b, seq_t *q) {
  char name[32];
  IFD_VERBOSE("sequence batcher of '%s': force-end cancelled sequence %s",
              b->s->model->name, seq_name(q, name, sizeof(name)));
  while (q->head != NULL)
    ifd_request_abort(ifd__seq_pop(b, q), IFD_ECANCELLED, IFD__CANCELLED_MSG);
  q->done = 1;
  ifd__seq_release(b, q);
}

/* Forms instance k's next batch if it has room for one. */
static void try_dispatch(sb_t *b, uint32_t k) {
  inst_t *in = &b->inst[k];
  uint32_t i;
  in->dirty = 0;
  if (b->stopped) return;
  /* A slot released here may take a backlogged sequence whose head was
   * cancelled before it was queued: look at the slot again. */
  for (i = 0; i < b->nslots; i++) {
    seq_t *q = in->slots[i];
    while (q != NULL && q->head != NULL && !q->running &&
           ifd_request_is_cancelled(q->head)) {
      cancel_in_slot(b, q);
      q = in->slots[i];
    }
  }
  if (in->out >= PIPE) return;
  if (b->oldest)
    ifd__seq_form_oldest(b, k);
  else
    ifd__seq_form_direct(b, k);
}

static void dispatch_dirty(sb_t *b) {
  uint32_t k;
  for (k = 0; k < b->s->n_instances; k++)
    if (b->inst[k].dirty) try_dispatch(b, k);
}

static void on_kick(ifd_event_t *ev) {
  sb_t *b = ifd_container_of(ev, sb_t, kick_ev);
  b->kick_pending = 0;
  dispatch_dirty(b);
}

static void kick(sb_t *b, uint32_t k) {
  b->inst[k].dirty = 1;
  if (b->kick_pending) return;
  b->kick_pending = 1;
  b->kick_ev.fn = on_kick;
  ifd_server_at_iteration_end(b->s->model->server, &b->kick_ev);
}

static void on_wait_timer(uv_timer_t *t) {
  sb_t *b = ifd_container_of(t, sb_t, wait_timer);
  uint64_t now = ifd__seq_now_ns(), next = 0;
  uint32_t k;
  for (k = 0; k < b->s->n_instances; k++) {
    inst_t *in = &b->inst[k];
    if (in->wait_until == 0) continue;
    if (in->wait_until <= now) {
      /* Due: the batch goes now (or waits again if it grew meanwhile). */
      in->wait_until = 0;
      try_dispatch(b, k);
      if (in->wait_until != 0 && (next == 0 || in->wait_until < next))
        next = in->wait_until;
    } else if (next == 0 || in->wait_until < next) {
      next = in->wait_until;
    }
  }
  if (next != 0) arm(t, on_wait_timer, next);
}

/* ---- idle sequences --------------------------------------------------------
 */

/* Takes backlogged sequence `q` out of the backlog and frees it, its
 * queued requests answered with `error` and `msg`; the ID is free again. */
static void drop_backlogged(sb_t *b, seq_t *q, int error, const char *msg) {
  seq_t **pp = &b->bl_head, *prev = NULL;
  while (*pp != q) {
    prev = *pp;
    pp = &(*pp)->bl_next;
  }
  *pp = q->bl_next;
  if (b->bl_tail == q) b->bl_tail = prev;
  q->bl_next = NULL;
  b->n_backlog--;
  while (q->head != NULL) ifd_request_abort(ifd__seq_pop(b, q), error, msg);
  ifd__seq_table_del(b, q);
  ifd__seq_heap_remove(b, q);
  ifd__seq_free(q);
}

/* A backlogged sequence whose requests' timeout expired before it got a
 * slot: its requests are refused (as Triton's reaper does) and the ID is
 * free again. */
static void expire_backlog(sb_t *b, seq_t *q) {
  char name[32];
  IFD_VERBOSE("sequence batcher of '%s': backlogged sequence %s timed out",
              b->s->model->name, seq_name(q, name, sizeof(name)));
  drop_backlogged(b, q, IFD_EUNAVAIL,
                  "timeout of the corresponding sequence has been expired");
}

static void on_idle_timer(uv_timer_t *t) {
  sb_t *b = ifd_container_of(t, sb_t, idle_timer);
  uint64_t now = ifd__seq_now_ns();
  while (b->heap_n > 0 && b->heap[0]->deadline <= now + 500000) {
    seq_t *q = b->heap[0];
    char name[32];
    if (q->inst < 0 && q->bl_expire != 0 && q->bl_expire <= now + 500000) {
      expire_backlog(b, q);
      continue;
    }
    /* Not idle (work queued or running), or used since it was pushed: its
     * deadline moves on (a backlog expiry comes first when it is sooner). */
    if (q->head != NULL || q->running) {
      q->deadline = now + b->idle_ns;
      if (q->inst < 0 && q->bl_expire != 0 && q->bl_expire < q->deadline)
        q->deadline = q->bl_expire;
      ifd__seq_heap_head_moved(b);
      continue;
    }
    if (q->last_ns + b->idle_ns > now + 500000) {
      q->deadline = q->last_ns + b->idle_ns;
      ifd__seq_heap_head_moved(b);
      continue;
    }
    IFD_VERBOSE("sequence batcher of '%s': sequence %s idle for %" PRIu64
                " us, released",
                b->s->model->name, seq_name(q, name, sizeof(name)),
                b->idle_ns / 1000);
    q->expired = 1;
    ifd__seq_release(b, q);
  }
  arm_idle(b);
  dispatch_dirty(b);
}

/* ---- the scheduler kind ----------------------------------------------------
 */

static int check_id(sb_t *b, const ifd_request_t *req, ifd_errmsg_t *err) {
  const char *m = b->s->model->name;
  int str = req->correlation_id_str != NULL;
  if (str ? req->correlation_id_str[0] == '\0' : req->correlation_id == 0)
    return ifd_errf(err, IFD_EINVAL,
                    "inference request to model '%s' must specify a "
                    "non-zero or non-empty correlation ID",
                    m);
  /* Triton lets such a request through and its backend fails it reading
   * the ID (or writes a truncated CORRID): refused here, with the words
   * Triton's backends answer. */
  if (b->corrid_name != NULL && str != (b->corrid_dtype == IFD_TYPE_BYTES))
    return ifd_errf(err, IFD_EINVAL,
                    "[request id: %s] correlation ID in request is not %s "
                    "(the CORRID control of model '%s' is %s)",
                    req->id[0] != '\0' ? req->id : "<id_unknown>",
                    str ? "an unsigned int" : "a string", m,
                    ifd_dtype_config_name(b->corrid_dtype));
  if (req->batch_size > 1)
    return ifd_errf(err, IFD_EINVAL,
                    "inference request to model '%s' must specify batch-size "
                    "1 due to requirements of sequence batcher",
                    m);
  return 0;
}

static int seq_submit(ifd__sched_t *s, ifd_request_t *req, ifd_errmsg_t *err) {
  sb_t *b = s->impl;
  const char *sid = req->correlation_id_str;
  uint64_t hash;
  int start;
  int rc;
  IFD_ASSERT(ifd__req(req)->state == IFD_REQ_QUEUED);
  seq_t *q;

  /* An iterative sequence may begin with a request that has no ID: it
   * gets the next of the batcher's own IDs and starts a sequence (Triton's
   * IterativeSequencer; the IDs may meet a client's, as there). */
  if (b->iterative && sid == NULL && req->correlation_id == 0) {
    req->correlation_id = b->next_auto++;
    req->flags = IFD_REQUEST_FLAG_SEQUENCE_START;
  }
  start = (req->flags & IFD_REQUEST_FLAG_SEQUENCE_START) != 0;
  rc = check_id(b, req, err);
  if (rc < 0) return rc;
  hash = ifd__seq_hash(req->correlation_id, sid);
  q = ifd__seq_find(b, req->correlation_id, sid, hash);
  if (q == NULL) {
    if (!start) {
      char name[32];
      return ifd_errf(err, IFD_EINVAL,
                      "inference request for sequence %s to model '%s' must "
                      "specify the START flag on the first request of the "
                      "sequence",
                      id_name(req->correlation_id, sid, name, sizeof(name)),
                      s->model->name);
    }
    if (b->stopped)
      return ifd_errf(err, IFD_EUNAVAIL,
                      "Server is stopping, scheduler for model has stopped "
                      "accepting new inference requests");
    rc = seq_new(b, req, hash, &q, err);
    if (rc < 0) return rc;
    ifd__seq_table_add(b, q);
  } else if (start) {
    char name[32];
    IFD_WARN(
        "sequence %s for model '%s' has a conflict. The previous "
        "sequence did not end before this sequence start. Previous "
        "sequence will be terminated early.",
        seq_name(q, name, sizeof(name)), s->model->name);
  }
  sr(req)->next = NULL;
  sr(req)->seq = q;
  sr(req)->arrival = ifd__seq_now_ns();
  if (q->tail != NULL)
    sr(q->tail)->next = req;
  else
    q->head = req;
  q->tail = req;
  q->last_ns = sr(req)->arrival;
  s->queued++;
  /* After END, the ID is free for a new sequence. */
  if (req->flags & IFD_REQUEST_FLAG_SEQUENCE_END) ifd__seq_table_del(b, q);
  /* A request's timeout bounds how long its sequence may wait in the
   * backlog (Triton's backlog expiration); once in a slot it runs. */
  if (q->inst < 0 && req->timeout_us > 0 &&
      req->timeout_us < UINT64_MAX / 2000) {
    uint64_t exp = sr(req)->arrival + req->timeout_us * 1000;
    if (q->bl_expire == 0 || exp < q->bl_expire) q->bl_expire = exp;
    if (exp < q->deadline) {
      q->deadline = exp;
      ifd__seq_heap_remove(b, q);
      ifd__seq_heap_push(b, q); /* cannot fail: it just left the heap */
      if (b->heap[0] == q) arm_idle(b);
    }
  }
  if (q->inst >= 0) kick(b, (uint32_t)q->inst);
  return 0;
}

/* An instance runs its batches in the order they were queued: the
 * finished ones are the oldest it had out. */
static void seq_idle(ifd__sched_t *s, uint32_t k) {
  sb_t *b = s->impl;
  inst_t *in;
  uint64_t now = ifd__seq_now_ns();
  if (k >= s->n_instances) return;
  in = &b->inst[k];
  while (in->out > s->inst_jobs[k]) {
    ifd__seq_finish_running(b, in, in->first, now);
    in->first = (in->first + 1) % PIPE;
    in->out--;
  }
  try_dispatch(b, k);
}

static void seq_stop(ifd__sched_t *s) {
  sb_t *b = s->impl;
  uint32_t k, i;
  b->stopped = 1;
  if (b->timers_init) {
    uv_timer_stop(&b->idle_timer);
    uv_timer_stop(&b->wait_timer);
  }
  ifd__sched_refuse_queued(s);
  /* Every queued request is refused; the sequences go. */
  while (b->bl_head != NULL) {
    seq_t *q = b->bl_head;
    b->bl_head = q->bl_next;
    q->bl_next = NULL;
    b->n_backlog--;
    while (q->head != NULL)
      ifd_request_abort(ifd__seq_pop(b, q), IFD_EUNAVAIL,
                        "the model is being unloaded");
    ifd__seq_table_del(b, q);
    ifd__seq_heap_remove(b, q);
    ifd__seq_free(q);
  }
  b->bl_tail = NULL;
  for (k = 0; k < s->n_instances; k++)
    for (i = 0; i < b->nslots; i++) {
      seq_t *q = b->inst[k].slots[i];
      if (q == NULL) continue;
      while (q->head != NULL)
        ifd_request_abort(ifd__seq_pop(b, q), IFD_EUNAVAIL,
                          "the model is being unloaded");
      ifd__seq_release(b, q);
    }
}

/* Frees what is left (the model is gone or going: nothing runs). */
static void free_sb(sb_t *b) {
  ifd__sched_t *s = b->s;
  uint32_t i, k;
  for (k = 0; b->inst != NULL && k < s->n_instances; k++) {
    inst_t *in = &b->inst[k];
    uint32_t j;
    /* Sequences whose last request still ran at stop. */
    for (j = 0; j < PIPE; j++)
      for (i = 0; i < in->n_running[j]; i++)
        if (in->running[j][i]->inst < 0 && !in->running[j][i]->in_table &&
            in->running[j][i]->heap_ix == 0)
          ifd__seq_free(in->running[j][i]);
    for (i = 0; in->slots != NULL && i < b->nslots; i++)
      if (in->slots[i] != NULL) ifd__seq_free(in->slots[i]);
    free(in->slots);
    for (j = 0; j < PIPE; j++) free(in->running[j]);
  }
  for (i = 0; i < b->n_state; i++) ifd_blob_unref(b->init[i]);
  free(b->init);
  free(b->state_in);
  free(b->eq_in);
  free(b->inst);
  free(b->table);
  free(b->heap);
  free(b->batch);
  free(b->cand);
  free(b);
  ifd__sched_free_base(s);
}

static void on_timer_closed(uv_handle_t *h) {
  sb_t *b = h->data;
  if (--b->closing == 0) free_sb(b);
}

/* ---- preserve_ordering (oldest) ---------------------------------------------
 */

static uint64_t order_of(const ifd_response_t *r) {
  return sr(r->req)->order;
}

/* The model's response hold: responses in the order their requests were
 * batched on their instance (sched/order.c). A sequence's own requests run
 * one at a time, so this orders responses across the sequences of an
 * instance, as Triton's per-instance dynamic batcher does. */
static void hold_response(ifd_model_t *m, ifd_response_t *resp) {
  sb_t *b = ((ifd__sched_t *)m->sched)->impl;
  sreq_t *x = sr(resp->req);
  /* Null requests and requests never batched (refused) are not ordered. */
  if (!x->ordered || x->inst >= b->s->n_instances) {
    ifd_response_deliver(resp);
    return;
  }
  ifd__order_hold(&b->inst[x->inst].order, resp, x->order, order_of);
}

/* Responses still held mean an earlier request never got its FINAL
 * response: pass them on rather than leave their clients waiting. */
static void release_held(sb_t *b) {
  uint32_t k;
  if (b->s->model != NULL) b->s->model->hold_response = NULL;
  for (k = 0; k < b->s->n_instances; k++) ifd__order_release(&b->inst[k].order);
}

static void seq_destroy(ifd__sched_t *s) {
  sb_t *b = s->impl;
  if (!b->stopped) seq_stop(s);
  if (b->preserve_ordering) release_held(b);
  /* At once: the model may be freed before the timers' close callbacks. */
  ifd__sched_detach(s);
  if (!b->timers_init) {
    free_sb(b);
    return;
  }
  b->closing = 2;
  b->idle_timer.data = b;
  b->wait_timer.data = b;
  uv_close((uv_handle_t *)&b->idle_timer, on_timer_closed);
  uv_close((uv_handle_t *)&b->wait_timer, on_timer_closed);
}

/* A cancelled request cancels its sequence (Triton's batchers do so when
 * the request reaches the head of its sequence's queue). In a slot, it ends
 * the sequence when it comes next (try_dispatch: cancel_in_slot), so the
 * requests ahead of it run in order. In the backlog, the whole sequence is
 * answered CANCELLED at once and its ID freed; Triton does the same when a
 * slot frees for it, its clients waiting until then. A request already
 * executing is left to its backend, which sees it cancelled. */
static void seq_cancel(ifd__sched_t *s, ifd_request_t *req) {
  sb_t *b = s->impl;
  seq_t *q;
  char name[32];
  if (req->null_req || ifd__req(req)->state != IFD_REQ_QUEUED || b->stopped)
    return;
  q = sr(req)->seq;
  if (q == NULL) return;
  if (q->inst >= 0) {
    kick(b, (uint32_t)q->inst);
    return;
  }
  IFD_VERBOSE("sequence batcher of '%s': backlogged sequence %s cancelled",
              s->model->name, seq_name(q, name, sizeof(name)));
  drop_backlogged(b, q, IFD_ECANCELLED, IFD__CANCELLED_MSG);
}

/* ---- iterative sequences ----------------------------------------------------
 */

/* A request of an iterative sequence released with RESCHEDULE is the next
 * request of its sequence, neither START nor END (Triton clears its
 * flags): it goes back into the sequence's queue, found by its ID, so it
 * runs again in the sequence's slot in a later batch. It goes ahead of
 * requests the client queued for the sequence meanwhile (Triton appends
 * it; an iterative sequence is one request, where the two agree). A
 * sequence that ended meanwhile (idle timeout, cancelled, unloading)
 * refuses it with the words Triton's batcher answers a request without
 * START. */
static int seq_reschedule(ifd__sched_t *s, ifd_request_t *req,
                          ifd_errmsg_t *err) {
  sb_t *b = s->impl;
  const char *sid = req->correlation_id_str;
  seq_t *q;
  char name[32];
  IFD_ASSERT(ifd__req(req)->state == IFD_REQ_QUEUED);
  if (!b->iterative)
    return ifd_errf(err, IFD_EINVAL,
                    "Request is released with "
                    "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the "
                    "model is not configured to handle such a flag.");
  if (b->stopped)
    return ifd_errf(err, IFD_EUNAVAIL, "the model is being unloaded");
  /* The batcher's inputs come last; they are added again at dispatch. */
  req->n_inputs -= sr(req)->added;
  sr(req)->added = 0;
  req->flags &=
      ~(IFD_REQUEST_FLAG_SEQUENCE_START | IFD_REQUEST_FLAG_SEQUENCE_END);
  q = ifd__seq_find(b, req->correlation_id, sid,
                    ifd__seq_hash(req->correlation_id, sid));
  if (q == NULL)
    return ifd_errf(err, IFD_EINVAL,
                    "inference request for sequence %s to model '%s' must "
                    "specify the START flag on the first request of the "
                    "sequence",
                    id_name(req->correlation_id, sid, name, sizeof(name)),
                    s->model->name);
  sr(req)->seq = q;
  sr(req)->arrival = ifd__seq_now_ns();
  sr(req)->next = q->head;
  q->head = req;
  if (q->tail == NULL) q->tail = req;
  q->last_ns = sr(req)->arrival;
  s->queued++;
  if (q->inst >= 0) kick(b, (uint32_t)q->inst);
  return 0;
}

/* A request of an iterative sequence released for good ends its sequence
 * (Triton's IterativeSequencer sends a cancelled END for it), unless the
 * sequence has more requests queued, whose own releases end it. An END
 * request gave its slot up at dispatch already. */
static void seq_released(ifd__sched_t *s, ifd_request_t *req) {
  sb_t *b = s->impl;
  const char *sid = req->correlation_id_str;
  seq_t *q;
  int32_t k;
  if (!b->iterative || b->stopped ||
      (req->flags & IFD_REQUEST_FLAG_SEQUENCE_END))
    return;
  q = ifd__seq_find(b, req->correlation_id, sid,
                    ifd__seq_hash(req->correlation_id, sid));
  if (q == NULL || q->head != NULL) return;
  k = q->inst;
  q->done = 1;
  ifd__seq_release(b, q);
  /* The slot may have gone to a backlogged sequence. */
  if (k >= 0) kick(b, (uint32_t)k);
}

const ifd__sched_kind_t ifd__sequence_kind = {
    seq_submit, seq_idle,       seq_stop,    seq_destroy,
    seq_cancel, seq_reschedule, seq_released};

int ifd__sequence_holds(const ifd__sched_t *s, const ifd_request_t *req) {
  sb_t *b = s->impl;
  const char *sid = req->correlation_id_str;
  if (sid != NULL ? sid[0] == '\0' : req->correlation_id == 0) return 0;
  return ifd__seq_find(b, req->correlation_id, sid,
                       ifd__seq_hash(req->correlation_id, sid)) != NULL;
}

int ifd__sequence_counts(const ifd__sched_t *s, uint64_t *active,
                         uint64_t *backlog) {
  const sb_t *b = s->impl;
  *active = b->n_active;
  *backlog = b->n_backlog;
  return 0;
}

/* ---- creation ---------------------------------------------------------------
 */

int ifd__sequence_init(ifd__sched_t *s, ifd_errmsg_t *err) {
  const ifd_model_config_t *c = s->model->config;
  sb_t *b = calloc(1, sizeof(*b));
  uint32_t k;
  size_t i;
  int rc;

  if (b == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  b->s = s;
  s->impl = b;
  b->cfg = ifd_config_sequence(c);
  b->iterative = b->cfg->iterative_sequence;
  b->next_auto = 1;
  b->batching = c->max_batch_size > 0;
  b->ctl_shape[0] = 1;
  b->ctl_shape[1] = 1;
  /* Normalized to 1 s when 0; a century at most, so deadlines never wrap. */
  b->idle_ns = b->cfg->max_sequence_idle_microseconds < 3153600000000000ull
                   ? b->cfg->max_sequence_idle_microseconds * 1000
                   : 3153600000000000000ull;
  if (b->idle_ns == 0) b->idle_ns = 1000000000ull;
  b->max_batch = c->max_batch_size > 0 ? (uint32_t)c->max_batch_size : 1;
  if (b->cfg->strategy_choice_case ==
      INFERENCE__MODEL_SEQUENCE_BATCHING__STRATEGY_CHOICE_OLDEST) {
    const Inference__ModelSequenceBatching__StrategyOldest *o = b->cfg->oldest;
    b->oldest = 1;
    b->nslots = o->max_candidate_sequences > 0
                    ? (uint32_t)o->max_candidate_sequences
                    : 1;
    b->delay_ns = o->max_queue_delay_microseconds * 1000;
    /* A batch of the largest preferred size (else a full one) need not
     * wait. */
    b->target = o->n_preferred_batch_size > 0 ? 0 : b->max_batch;
    for (i = 0; i < o->n_preferred_batch_size; i++)
      if ((uint32_t)o->preferred_batch_size[i] > b->target)
        b->target = (uint32_t)o->preferred_batch_size[i];
  } else {
    const Inference__ModelSequenceBatching__StrategyDirect *d =
        b->cfg->strategy_choice_case ==
                INFERENCE__MODEL_SEQUENCE_BATCHING__STRATEGY_CHOICE_DIRECT
            ? b->cfg->direct
            : NULL;
    b->nslots = b->max_batch;
    if (d != NULL && d->minimum_slot_utilization > 0) {
      float need = d->minimum_slot_utilization * (float)b->nslots;
      b->delay_ns = d->max_queue_delay_microseconds * 1000;
      b->target = (uint32_t)need;
      if ((float)b->target < need) b->target++;
    }
  }
  rc = ifd__seq_read_controls(b, err);
  if (rc < 0) goto out_free;
  b->n_state = (uint32_t)b->cfg->n_state;
  b->preserve_ordering = b->oldest && b->cfg->oldest->preserve_ordering;
  b->n_added = (b->start.name != NULL) + (b->end.name != NULL) +
               (b->ready.name != NULL) + (b->corrid_name != NULL) + b->n_state;
  if (b->batching && c->n_input > 0) {
    b->eq_in = calloc(c->n_input, sizeof(*b->eq_in));
    if (b->eq_in == NULL) goto out_nomem;
    for (i = 0; i < c->n_input; i++) {
      const Inference__ModelInput *ci = c->input[i];
      size_t d;
      int variable = 0;
      for (d = 0; d < ci->n_dims; d++)
        if (ci->dims[d] < 0) variable = 1;
      if (variable && !ci->allow_ragged_batch) b->eq_in[b->n_eq++] = ci->name;
    }
  }
  if (b->n_state > 0) {
    b->state_in = calloc(b->n_state, sizeof(*b->state_in));
    if (b->state_in == NULL) goto out_nomem;
    for (k = 0; k < b->n_state; k++)
      b->state_in[k] = b->cfg->state[k]->input_name;
    rc = ifd__seq_initial_states(s->model, &b->init, err);
    if (rc < 0) {
      b->n_state = 0;
      goto out_free;
    }
  }
  s->inst_jobs =
      calloc(s->n_instances ? s->n_instances : 1, sizeof(*s->inst_jobs));
  b->inst = calloc(s->n_instances ? s->n_instances : 1, sizeof(*b->inst));
  b->table = calloc(64, sizeof(*b->table));
  b->batch = calloc(b->nslots, sizeof(*b->batch));
  b->cand = calloc(b->nslots, sizeof(*b->cand));
  if (s->inst_jobs == NULL || b->inst == NULL || b->table == NULL ||
      b->batch == NULL || b->cand == NULL)
    goto out_nomem;
  b->table_mask = 63;
  for (k = 0; k < s->n_instances; k++) {
    b->inst[k].slots = calloc(b->nslots, sizeof(seq_t *));
    b->inst[k].running[0] = calloc(b->nslots, sizeof(seq_t *));
    b->inst[k].running[1] = calloc(b->nslots, sizeof(seq_t *));
    if (b->inst[k].slots == NULL || b->inst[k].running[0] == NULL ||
        b->inst[k].running[1] == NULL)
      goto out_nomem;
  }
  if (b->preserve_ordering) s->model->hold_response = hold_response;
  return 0;

out_nomem:
  rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
out_free:
  s->impl = NULL;
  /* free_sb frees the base too: keep it for the caller. */
  {
    uint32_t j;
    for (k = 0; b->inst != NULL && k < s->n_instances; k++) {
      free(b->inst[k].slots);
      free(b->inst[k].running[0]);
      free(b->inst[k].running[1]);
    }
    for (j = 0; b->init != NULL && j < b->n_state; j++)
      ifd_blob_unref(b->init[j]);
    free(b->init);
    free(b->state_in);
    free(b->eq_in);
    free(b->inst);
    free(b->table);
    free(b->batch);
    free(b->cand);
    free(b);
  }
  return rc;
}
