/*
 * sched/internal.h - what the schedulers of sched/ share: the instance
 * bookkeeping (which instances are idle, how many requests each runs) and
 * the table through which each scheduler kind plugs into the model ops.
 */
#ifndef IFD_SCHED_INTERNAL_H
#define IFD_SCHED_INTERNAL_H

#include <stdint.h>

#include "backend_api/backend_api.h"
#include "core/infer.h"
#include "core/model.h"

typedef struct ifd__sched ifd__sched_t;

/**
 * What a scheduler needs from the layer that runs its batches: backend_api's
 * functions of the same names in the server (see backend_api/backend_api.h
 * for each contract); test/unit/test_sched.c runs the schedulers on a fake.
 * Static table.
 */
typedef struct ifd__sched_backend {
  int (*model_load)(ifd_model_t *m, ifd_instance_idle_cb idle, void *idle_arg,
                    ifd_errmsg_t *err);
  void (*model_unload)(ifd_model_t *m, void (*freed)(void *arg), void *arg);
  uint32_t (*instance_count)(const ifd_model_t *m);
  void (*enqueue)(ifd_model_t *m, ifd_request_t **reqs, uint32_t n);
  uint64_t (*queued)(const ifd_model_t *m);
  ifd_request_t *(*take_queued)(ifd_model_t *m, uint64_t *jobs);
  void (*enqueue_to)(ifd_model_t *m, uint32_t instance, ifd_request_t **reqs,
                     uint32_t n);
  int (*take_request)(ifd_model_t *m, ifd_request_t *req, int *job_gone);
} ifd__sched_backend_t;

/** One scheduler kind. Every function runs on the loop thread. */
typedef struct ifd__sched_kind {
  /** Queues (or dispatches) a validated request; 0 or a negative code. */
  int (*submit)(ifd__sched_t *s, ifd_request_t *req, ifd_errmsg_t *err);
  /** Instance `instance` reported finished batches (jobs_out and
   *  inst_jobs already count them back): it may be free for the next. */
  void (*idle)(ifd__sched_t *s, uint32_t instance);
  /** Refuses every queued request (the model is about to unload). */
  void (*stop)(ifd__sched_t *s);
  /** Frees the kind's state, then calls ifd__sched_free_base(s). */
  void (*destroy)(ifd__sched_t *s);
  /** `req` (QUEUED or EXECUTING) was cancelled: drop it if it still waits
   *  (answered with IFD_ECANCELLED, counted as a failure), else leave it to
   *  its backend. */
  void (*cancel)(ifd__sched_t *s, ifd_request_t *req);
  /** Its backend released `req` (QUEUED again) with RESCHEDULE: queue it
   *  to run again; 0, or a negative code with `err` (the core answers the
   *  request with it). NULL: the kind never reschedules. */
  int (*reschedule)(ifd__sched_t *s, ifd_request_t *req, ifd_errmsg_t *err);
  /** Its backend released `req` for good. May be NULL. */
  void (*released)(ifd__sched_t *s, ifd_request_t *req);
} ifd__sched_kind_t;

struct ifd__sched {
  ifd_model_t *model;               /* borrowed: owns the scheduler */
  const ifd__sched_backend_t *back; /* borrowed: static table */
  const ifd__sched_kind_t *kind;    /* static table */
  void *impl;                       /* owned by the kind */
  uint32_t n_instances;
  uint64_t jobs_out;   /* batches handed to the run queue, not reported done */
  uint64_t executing;  /* their requests */
  uint64_t queued;     /* requests waiting in the kind's own queues */
  uint32_t *inst_jobs; /* owned, n_instances entries: batches handed to each
                          instance by ifd__sched_dispatch_to, not reported
                          done (NULL until a kind asks for it) */
};

/** An instance is free to take a batch (none is queued for it). */
static inline int ifd__sched_has_idle(const ifd__sched_t *s) {
  return s->jobs_out < s->n_instances;
}

/**
 * Loads `m` on `back` and creates its scheduler in m->sched, of the kind its
 * config asks for (ops->load; thread pool). Returns 0 or a negative code
 * with `err` filled; nothing stays loaded then.
 */
int ifd__sched_load(ifd_model_t *m, const ifd__sched_backend_t *back,
                    ifd_errmsg_t *err);

/**
 * Hands `n` requests as one batch to the model's run queue, where the first
 * free instance takes it; each becomes IFD_REQ_EXECUTING. Never fails.
 */
void ifd__sched_dispatch(ifd__sched_t *s, ifd_request_t **reqs, uint32_t n);

/**
 * Hands `n` requests as one batch to instance `instance` (the sequence
 * batcher: that instance holds their sequences); counted in
 * s->inst_jobs[instance] as well. Never fails; s->inst_jobs must exist.
 */
void ifd__sched_dispatch_to(ifd__sched_t *s, uint32_t instance,
                            ifd_request_t **reqs, uint32_t n);

/**
 * Takes cancelled request `req` (EXECUTING) back off the run queue if no
 * instance has taken it yet and answers it with IFD_ECANCELLED. Returns 1
 * when it did, 0 when the request runs (or ran) already.
 */
int ifd__sched_take_cancelled(ifd__sched_t *s, ifd_request_t *req);

/** The message a cancelled request is answered with. */
#define IFD__CANCELLED_MSG "Request was cancelled"

/** Takes back the batches still on the run queue and refuses their
 *  requests (model unloading). */
void ifd__sched_refuse_queued(ifd__sched_t *s);

/** Detaches the scheduler from its model at once (model->sched and its
 *  response hook cleared, s->model NULL). A kind whose destroy must wait for
 *  a handle to close calls it before closing: the model may be freed before
 *  the close callback runs. Idempotent. */
void ifd__sched_detach(ifd__sched_t *s);

/** Frees the shared part and detaches the scheduler from its model if it is
 *  still attached (the kind's destroy calls it last). */
void ifd__sched_free_base(ifd__sched_t *s);

/**
 * The implicit states of a sequence model (sequence_batching `state`,
 * sched/seq_init.c): validates them as Triton does and builds each one's
 * initial value, which START gives a sequence: a blob of the state's
 * data_type, shape [1, dims...] for a batching model else [dims...], zeros,
 * or the bytes of <model dir>/initial_state/<data_file>. Thread pool only
 * (reads files). Sets *out to a malloc'd array of one blob per state, in
 * config order (each holding one reference; *out NULL when the model has no
 * state), or returns IFD_EINVAL / IFD_EIO / IFD_ENOMEM with a message naming
 * the model and the state.
 */
int ifd__seq_initial_states(const ifd_model_t *m, ifd_blob_t ***out,
                            ifd_errmsg_t *err);

/** Creates the sequence batcher's state in s->impl (sched/sequence.c).
 *  Thread pool (load); reads initial_state files. */
int ifd__sequence_init(ifd__sched_t *s, ifd_errmsg_t *err);
extern const ifd__sched_kind_t ifd__sequence_kind;
/** Does the sequence batcher hold a live sequence with req's correlation
 *  ID (not ended: an END already queued frees the ID)? */
int ifd__sequence_holds(const ifd__sched_t *s, const ifd_request_t *req);
/** The sequence batcher's live sequences: in slots, and in the backlog. */
int ifd__sequence_counts(const ifd__sched_t *s, uint64_t *active,
                         uint64_t *backlog);

/** Responses in submission order (sched/order.c): a scheduler numbers its
 *  requests from 0 (`next`) and hands every response of a numbered request
 *  to ifd__order_hold from its model's response hold. */
typedef struct ifd__order {
  uint64_t next;        /* number of the next request */
  uint64_t head;        /* the request whose responses go next */
  ifd_response_t *held; /* owned: responses waiting their turn, ascending
                           number, linked by ->next */
} ifd__order_t;

/** Passes `resp` (of request number `num`; ownership passes) on now if its
 *  request is next, else keeps it until it is; `num_of` gives a held
 *  response's number. */
void ifd__order_hold(ifd__order_t *o, ifd_response_t *resp, uint64_t num,
                     uint64_t (*num_of)(const ifd_response_t *r));

/** Passes on every held response (teardown: an earlier request never got
 *  its FINAL response; its successors' clients must not wait for it). */
void ifd__order_release(ifd__order_t *o);

/** Creates the dynamic batcher's state in s->impl. Thread pool (load). */
int ifd__dynamic_init(ifd__sched_t *s, ifd_errmsg_t *err);
extern const ifd__sched_kind_t ifd__dynamic_kind;

/** Whether `cfg` is an ensemble's (platform "ensemble" or
 *  ensemble_scheduling set): it loads no backend (sched/ensemble_graph.c). */
int ifd__ensemble_is(const ifd_model_config_t *cfg);
/** Builds the ensemble's step graph from s->model->config and makes `s` an
 *  ensemble scheduler (kind, and a stand-in for backend_api: nothing to
 *  load, unload frees the scheduler on the loop). Thread pool (load).
 *  Returns 0, or IFD_EINVAL / IFD_ENOMEM with `err` naming the model. */
int ifd__ensemble_init(ifd__sched_t *s, ifd_errmsg_t *err);
extern const ifd__sched_kind_t ifd__ensemble_kind;

#endif
