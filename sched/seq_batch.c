/*
 * sched/seq_batch.c - the sequence batcher's batches: taking the head
 * request of a sequence into a batch (controls, states, END), and forming
 * an instance's next batch, by slot (direct strategy, with null requests in
 * the gaps) or by age (oldest strategy), or waiting for it to fill up to
 * max_queue_delay. sched/sequence.c decides when (see its opening comment);
 * this file decides what. Loop thread only.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "core/request_internal.h"
#include "core/server.h"
#include "sched/seq_internal.h"

ifd_request_t *ifd__seq_pop(sb_t *b, seq_t *q) {
  ifd_request_t *r = q->head;
  IFD_ASSERT(r != NULL && ifd__req(r)->state == IFD_REQ_QUEUED);
  q->head = sr(r)->next;
  if (q->head == NULL) q->tail = NULL;
  sr(r)->next = NULL;
  b->s->queued--;
  return r;
}

/* Takes the head request of `q` into the batch: controls, states, and the
 * sequence's END (its slot goes at once). Returns it, or NULL when it had to
 * be refused (out of memory). */
static ifd_request_t *take(sb_t *b, inst_t *in, seq_t *q) {
  ifd_request_t *r = ifd__seq_pop(b, q);
  uint32_t before = r->n_inputs;
  /* Read now: a refused request may be freed by its answer. */
  int end = (r->flags & IFD_REQUEST_FLAG_SEQUENCE_END) != 0;
  if (ifd__seq_prepare(b, r, q) < 0) {
    ifd_request_abort(r, IFD_ENOMEM,
                      "out of memory adding the sequence batcher's inputs");
    r = NULL;
  } else {
    uint32_t cur = (in->first + in->out) % PIPE;
    /* How many inputs the batcher added (null_request copies the rest). */
    sr(r)->added = r->n_inputs - before;
    /* A rescheduled request keeps its place in the instance's order. */
    if (b->preserve_ordering && !sr(r)->ordered) {
      sr(r)->inst = (uint32_t)(in - b->inst);
      sr(r)->order = in->order.next++;
      sr(r)->ordered = 1;
    }
    q->running = 1;
    in->running[cur][in->n_running[cur]++] = q;
  }
  if (end) {
    q->done = 1;
    ifd__seq_release(b, q);
  }
  return r;
}

/* The sequences of running list `j` are out no more: their batch finished,
 * or it was never sent. */
void ifd__seq_finish_running(sb_t *b, inst_t *in, uint32_t j, uint64_t now) {
  uint32_t i;
  for (i = 0; i < in->n_running[j]; i++) {
    seq_t *q = in->running[j][i];
    q->running = 0;
    q->last_ns = now;
    /* Released while its last request ran (END, idle, stop). */
    if (q->inst < 0 && q->heap_ix == 0 && !q->in_table && q->head == NULL &&
        (q->done || q->expired || b->stopped))
      ifd__seq_free(q);
  }
  in->n_running[j] = 0;
}

/* The batch being formed for `in` is not sent after all. */
static void abandon(sb_t *b, inst_t *in) {
  ifd__seq_finish_running(b, in, (in->first + in->out) % PIPE,
                          ifd__seq_now_ns());
}

/* The batch being formed for `in` goes out. */
static void sent(inst_t *in) {
  in->out++;
}

/* A sequence whose next request may join the batch being formed. */
static int ready(const seq_t *q) {
  return q != NULL && q->head != NULL && !q->running;
}

static const ifd_input_t *find_input(const ifd_request_t *r, const char *name) {
  uint32_t i;
  for (i = 0; i < r->n_inputs; i++)
    if (strcmp(r->inputs[i].name, name) == 0) return &r->inputs[i];
  return NULL;
}

/* Can `y` join a batch that holds `x`? The inputs with variable dims and
 * no allow_ragged_batch must have the same shape in every row, as Triton's
 * batchers require (fixed dims agree by validation). */
static int same_shapes(const sb_t *b, const ifd_request_t *x,
                       const ifd_request_t *y) {
  uint32_t i, d;
  for (i = 0; i < b->n_eq; i++) {
    const ifd_input_t *a = find_input(x, b->eq_in[i]);
    const ifd_input_t *c = find_input(y, b->eq_in[i]);
    if (a == NULL || c == NULL) {
      if (a != c) return 0; /* an optional input in one row only */
      continue;
    }
    if (a->ndims != c->ndims) return 0;
    for (d = 1; d < a->ndims; d++)
      if (a->shape[d] != c->shape[d]) return 0;
  }
  return 1;
}

/* Direct: one request per busy slot, at its slot's position. A slot whose
 * request cannot join (other shapes than the first) gets a null request
 * and goes in a later batch, as in Triton. */
void ifd__seq_form_direct(sb_t *b, uint32_t k) {
  inst_t *in = &b->inst[k];
  uint32_t i, n_ready = 0, top = 0, n;
  uint64_t oldest = UINT64_MAX;
  ifd_request_t *like = NULL, *first = NULL;

  for (i = 0; i < b->nslots; i++) {
    seq_t *q = in->slots[i];
    b->batch[i] = NULL;
    if (!ready(q)) continue;
    if (first == NULL)
      first = q->head;
    else if (b->n_eq > 0 && !same_shapes(b, first, q->head))
      continue;
    b->batch[i] = q->head; /* chosen: taken below */
    n_ready++;
    top = i + 1;
    if (sr(q->head)->arrival < oldest) oldest = sr(q->head)->arrival;
  }
  if (n_ready == 0) return;
  if (b->delay_ns > 0 && n_ready < b->target &&
      ifd__seq_now_ns() - oldest < b->delay_ns) {
    ifd__seq_wait(b, in, oldest + b->delay_ns);
    return;
  }
  in->wait_until = 0;
  for (i = 0; i < top; i++) {
    if (b->batch[i] == NULL) continue;
    b->batch[i] = take(b, in, in->slots[i]);
    if (like == NULL) like = b->batch[i];
  }
  for (i = 0, n = 0; i < top; i++) {
    if (b->batch[i] == NULL) {
      if (like == NULL) break; /* every real one was refused */
      b->batch[i] = ifd__seq_null_request(b, like);
      if (b->batch[i] == NULL) {
        /* Without a null request the later slots would shift: fail the
         * whole batch rather than run rows in the wrong slots. */
        uint32_t j;
        for (j = 0; j < top; j++)
          if (b->batch[j] != NULL) {
            if (b->batch[j]->null_req)
              ifd_request_unref(b->batch[j]);
            else
              ifd_request_abort(b->batch[j], IFD_ENOMEM,
                                "out of memory forming a batch");
          }
        abandon(b, in);
        return;
      }
    }
    n++;
  }
  if (n == 0) {
    abandon(b, in);
    return;
  }
  sent(in);
  ifd__sched_dispatch_to(b->s, k, b->batch, n);
  /* The null requests' protocol references: nobody waits for them. */
  for (i = 0; i < n; i++)
    if (b->batch[i]->null_req) ifd_request_unref(b->batch[i]);
}

static int by_arrival(const void *x, const void *y) {
  const seq_t *a = *(seq_t *const *)x, *c = *(seq_t *const *)y;
  uint64_t ta = sr(a->head)->arrival, tc = sr(c->head)->arrival;
  return ta < tc ? -1 : ta > tc;
}

/* Oldest: the oldest ready requests, one per sequence. */
void ifd__seq_form_oldest(sb_t *b, uint32_t k) {
  inst_t *in = &b->inst[k];
  uint32_t i, nc = 0, n = 0, want;

  for (i = 0; i < b->nslots; i++)
    if (ready(in->slots[i])) b->cand[nc++] = in->slots[i];
  if (nc == 0) return;
  qsort(b->cand, nc, sizeof(*b->cand), by_arrival);
  /* The oldest, and those that can join it (same shapes), oldest first. */
  if (b->n_eq > 0) {
    uint32_t j = 1;
    for (i = 1; i < nc; i++)
      if (same_shapes(b, b->cand[0]->head, b->cand[i]->head))
        b->cand[j++] = b->cand[i];
    nc = j;
  }
  want = nc < b->max_batch ? nc : b->max_batch;
  if (b->delay_ns > 0 && want < b->target &&
      ifd__seq_now_ns() - sr(b->cand[0]->head)->arrival < b->delay_ns) {
    ifd__seq_wait(b, in, sr(b->cand[0]->head)->arrival + b->delay_ns);
    return;
  }
  in->wait_until = 0;
  for (i = 0; i < want; i++) {
    ifd_request_t *r = take(b, in, b->cand[i]);
    if (r != NULL) b->batch[n++] = r;
  }
  if (n == 0) {
    abandon(b, in);
    return;
  }
  sent(in);
  ifd__sched_dispatch_to(b->s, k, b->batch, n);
}
