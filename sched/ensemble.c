/*
 * sched/ensemble.c - the ensemble scheduler: a model whose "instances" are
 * other models.
 *
 * At load (thread pool) an ensemble's config becomes an immutable graph
 * (sched/ensemble_graph.c): tensors (the ensemble inputs first, in config
 * order, then every tensor a step writes), steps (the composing model and
 * version, which tensor feeds each of its inputs and which tensor each of its
 * outputs becomes), the steps each ensemble output needs, and for every tensor
 * the steps that read it. No backend is loaded and nothing about the composing
 * models is looked at: they are found per request by name and version through
 * core's submit path, so a reload of a composing model is picked up by the next
 * request and a composing model that is gone fails the request with core's
 * error.
 *
 * A request (loop thread) gets an execution state from the scheduler's free
 * list: a value per tensor (shape, type and data pointer, borrowed from the
 * ensemble request's inputs or from a step's held response) and a run per
 * step. Every step whose inputs are all known is started as a child request
 * (ifd_request_new + ifd_request_submit, the step's model name and version,
 * the ensemble request's id, correlation ID, flags, priority, timeout and
 * parameters), so independent steps run at the same time and a composing
 * model batches ensemble traffic with its direct traffic. A child's inputs
 * borrow the bytes they read: nothing is copied between steps. When a
 * child's FINAL response arrives, its outputs become ensemble tensors (the
 * response is held until the execution ends), and every step that became
 * ready starts. When every needed step is done, the ensemble's response is
 * built on the loop: its outputs point into the held step responses (their
 * ifd_response_t.keep is the execution, which lives until the response is
 * freed). The first failing step fails the request at once with its error,
 * prefixed as Triton does ("in ensemble '<name>', ..."); steps not started
 * then never start; children in flight finish and their answers are
 * dropped.
 *
 * An execution ends when it was answered, every child was released by its
 * backend (so none reads a borrowed input any more) and its response was
 * freed; then the held step responses are freed and the ensemble request is
 * released. Statistics follow Triton: the ensemble counts its own requests
 * (success, failure, queue: submit to the scheduler; one execution of the
 * request's batch size per success) with compute durations that are the sums
 * of its steps', taken once every child was released; each composing model
 * counts its child requests like direct ones.
 *
 * Between an ensemble that does not batch and composing models that do,
 * shapes are reshaped as Triton does (a batch of 1 added or removed; see
 * reshape_for): only then is the composing model looked up at start.
 *
 * Decoupled composing models (several responses per step) are not in inferd
 * yet: a step's outputs come from the one response that carries them, and a
 * second response with outputs fails the request with a clear error. The
 * runs already tell a response from the step's end (the FINAL flag), so
 * streaming steps can be added by letting a run hold a list of responses.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "core/log.h"
#include "core/model.h"
#include "core/util.h"
#include "sched/ensemble.h"
#include "sched/internal.h"

/* ---- per request ----------------------------------------------------------
 */

/* What a child request carries of a sequence: the ensemble request's, or
 * what a step's response overrode (Triton lets a composing model's
 * "sequence_id" / "sequence_start" / "sequence_end" response parameters flow
 * to the steps after it and to the ensemble's response). */
typedef struct ens_seq {
  uint64_t id;
  const char *str; /* borrowed: the ensemble request's or a held response's */
  uint32_t flags;
} ens_seq_t;

typedef struct ens_val {
  const int64_t *shape; /* borrowed: the request's input or a held output */
  const void *data;     /* borrowed: same */
  uint64_t byte_size;
  uint32_t ndims;
  ifd_dtype_t dtype;
  uint8_t state;  /* VAL_* */
  int32_t from;   /* the run whose response holds it; -1: the request */
  uint64_t batch; /* batch size of the request it came from; 0: that
                     model (or the ensemble) does not batch */
} ens_val_t;

enum { VAL_PENDING = 0, VAL_SET, VAL_ABSENT };

typedef struct ens_exec ens_exec_t;

typedef struct ens_run {
  ens_exec_t *x;        /* borrowed: its execution */
  ifd_request_t *child; /* borrowed: its request, from submit to release
                           (cancelled with the ensemble's); NULL else */
  ifd_response_t *resp; /* owned: the response holding the outputs */
  uint32_t idx;
  uint32_t missing; /* inputs not known yet */
  uint8_t needed, started, done;
  ens_seq_t seq;  /* what its request carried, then its response's override */
  uint64_t batch; /* its request's batch size (0: the model does not batch) */
} ens_run_t;

typedef struct ens ens_t;

struct ens_exec {
  ens_t *e;              /* borrowed: the scheduler outlives it */
  ifd_request_t *parent; /* the ensemble request; its backend reference is
                            ours until maybe_release */
  ifd_model_t *model;    /* counted reference: the ensemble, which owns the
                            scheduler, outlives the execution */
  ens_exec_t *next_free; /* free list link */
  int refs;         /* the run (until answered) + children not released + the
                       response while it is out */
  uint32_t live;    /* children submitted, not yet released */
  uint32_t running; /* children started, FINAL not yet seen */
  uint32_t left;    /* needed steps not done */
  int answered, released, failed, in_submit, deferred;
  uint64_t t_start;       /* the scheduler got the request */
  uint64_t ci, infer, co; /* sums of the children's compute durations */
  ifd_req_attach_t keep;  /* the response's keep (see ifd_response_t) */
  ifd_event_t answer_ev;  /* an answer deferred out of submit */
  int defer_code;
  ifd_param_t params[3]; /* the response's parameters */
  ifd_output_t *outs;    /* borrowed: in this block, n_outputs entries */
  ens_run_t *runs;       /* borrowed: in this block, n_steps entries */
  ens_val_t *vals;       /* borrowed: in this block, n_tensors entries */
  char defer_msg[400];   /* last: written only when used, never zeroed */
};

/* Executions kept for reuse: enough for the requests in flight at a
 * moderate concurrency; the rest are freed. */
#define FREE_MAX 64

struct ens {
  ifd__sched_t *s;       /* borrowed: owns this */
  ens_graph_t g;         /* owned */
  size_t exec_size;      /* bytes of one execution block */
  ens_exec_t *free_list; /* owned: FREE_MAX at most */
  uint32_t n_free;
  uint32_t alive;        /* executions not ended (s->executing counts those
                            whose request is not released) */
  int dying;             /* unloaded: free with the last execution */
  ifd_event_t unload_ev; /* pushed by the unload (thread pool) */
  void (*freed)(void *arg);
  void *freed_arg;
};

static const char *ens_name(const ens_t *e) {
  return e->s->model->name;
}

/* ---- executions: memory ---------------------------------------------------
 */

static ens_exec_t *exec_get(ens_t *e) {
  ens_exec_t *x = e->free_list;
  const ens_graph_t *g = &e->g;
  char *p;

  if (x != NULL) {
    e->free_list = x->next_free;
    e->n_free--;
  } else {
    x = malloc(e->exec_size);
    if (x == NULL) return NULL;
  }
  /* One block: the header, then runs, values and response outputs. */
  p = (char *)x;
  memset(x, 0, offsetof(ens_exec_t, defer_msg));
  x->runs = (ens_run_t *)(p + sizeof(*x));
  x->vals = (ens_val_t *)(x->runs + g->n_steps);
  x->outs = (ifd_output_t *)(x->vals + g->n_tensors);
  memset(x->runs, 0, g->n_steps * sizeof(*x->runs));
  memset(x->vals, 0, g->n_tensors * sizeof(*x->vals));
  x->e = e;
  return x;
}

static void exec_recycle(ens_t *e, ens_exec_t *x) {
  if (e->dying || e->n_free >= FREE_MAX) {
    free(x);
    return;
  }
  x->next_free = e->free_list;
  e->free_list = x;
  e->n_free++;
}

static void ens_free(ifd__sched_t *s) {
  ens_t *e = s->impl;
  ens_exec_t *x, *next;
  for (x = e->free_list; x != NULL; x = next) {
    next = x->next_free;
    free(x);
  }
  ifd__ens_graph_free(&e->g);
  free(e);
  s->impl = NULL;
  ifd__sched_free_base(s);
}

/* ---- executions: the end --------------------------------------------------
 */

/*
 * Once the request was answered and every child released: the ensemble's
 * statistics (the children's compute times are final then), and the
 * request goes back, since no step reads its inputs any more. The
 * execution itself lives on while the response borrows its steps' buffers
 * (see exec_end), so that an ensemble used as a step of another one
 * releases its request while the outer one still holds its response.
 */
static void maybe_release(ens_exec_t *x) {
  ifd_request_t *p = x->parent;
  uint64_t now, batch;
  ifd_model_stats_t *st;

  if (x->released || !x->answered || x->live != 0) return;
  x->released = 1;
  st = &p->model->stats;
  now = uv_hrtime();
  batch = p->batch_size > 0 ? p->batch_size : 1;
  ifd_stats_request_ns(st, !x->failed,
                       now > p->t_received ? now - p->t_received : 0,
                       x->t_start > p->t_queued ? x->t_start - p->t_queued : 0,
                       x->ci, x->infer, x->co, batch);
  if (!x->failed) ifd_stats_batch_ns(st, batch, x->ci, x->infer, x->co);
  /* The request's own phases as sums of its steps': an outer ensemble
   * whose step this is adds them up like a composing model's (Triton's
   * secondary statistics). Core does not count this request (sched_counts),
   * so nothing else reads these. */
  p->t_exec_start = x->t_start;
  p->t_compute_start = p->t_exec_start + x->ci;
  p->t_compute_end = p->t_compute_start + x->infer;
  p->t_exec_end = p->t_compute_end + x->co;
  x->e->s->executing--;
  ifd_request_release_now(p, 1 /* TRITONSERVER_REQUEST_RELEASE_ALL */);
}

/* Nothing uses the execution any more (its request was released, its
 * response freed): frees the held responses and the execution. */
static void exec_end(ens_exec_t *x) {
  ens_t *e = x->e;
  ifd_model_t *m = x->model;
  uint32_t i;

  for (i = 0; i < e->g.n_steps; i++)
    if (x->runs[i].resp != NULL) ifd_response_free(x->runs[i].resp);
  exec_recycle(e, x);
  /* Unloaded meanwhile: the scheduler goes with its last execution. */
  if (--e->alive == 0 && e->dying) ens_free(e->s);
  ifd_model_unref(m);
}

static void exec_put(ens_exec_t *x) {
  if (--x->refs == 0) exec_end(x);
}

/* The response was freed: its borrowed buffers are free to go. */
static void on_keep_drop(ifd_req_attach_t *a) {
  ens_exec_t *x = ifd_container_of(a, ens_exec_t, keep);
  exec_put(x);
}

/* ---- executions: answers --------------------------------------------------
 */

/* Fails the ensemble request with `code` and `msg` (Triton's prefix added),
 * once; no step starts after. Drops the run's reference. */
static void fail_exec(ens_exec_t *x, int code, const char *msg) {
  char buf[sizeof(x->defer_msg)];
  if (x->answered || x->deferred) return;
  if (code >= 0) code = IFD_EINTERNAL;
  snprintf(buf, sizeof(buf), "in ensemble '%s', %s", ens_name(x->e),
           msg != NULL ? msg : ifd_strerror(code));
  x->failed = 1;
  if (x->in_submit) {
    /* Not from inside the request's own submit: answered at the end of
     * this loop iteration (ens_submit schedules it). */
    x->deferred = 1;
    x->defer_code = code;
    memcpy(x->defer_msg, buf, sizeof(buf));
    return;
  }
  x->answered = 1;
  ifd_request_fail(x->parent, code, buf);
  maybe_release(x);
  exec_put(x);
}

static void answer(ens_exec_t *x);

static void on_deferred_answer(ifd_event_t *ev) {
  ens_exec_t *x = ifd_container_of(ev, ens_exec_t, answer_ev);
  if (!x->failed) {
    answer(x);
    return;
  }
  x->answered = 1;
  ifd_request_fail(x->parent, x->defer_code, x->defer_msg);
  maybe_release(x);
  exec_put(x);
}

/* The sequence values a tensor carries. */
static const ens_seq_t *seq_of(const ens_exec_t *x, const ens_seq_t *req,
                               uint32_t t) {
  const ens_val_t *v = &x->vals[t];
  return v->from >= 0 ? &x->runs[v->from].seq : req;
}

/* Triton's CompareDimsWithWildcard: same rank, each dim equal or -1. */
static int dims_match(const int64_t *cfg, uint32_t ncfg, const int64_t *shape,
                      uint32_t n) {
  uint32_t i;
  if (ncfg != n) return 0;
  for (i = 0; i < n; i++)
    if (cfg[i] != -1 && shape[i] != -1 && cfg[i] != shape[i]) return 0;
  return 1;
}

/*
 * Triton's ReshapeTensorDims, between a batching model and one that is not
 * (possible in an ensemble that does not batch, whose composing models may):
 * a tensor without a batch dimension that matches the batching consumer's
 * dims gets a batch of 1 prepended (into `room`, ndims + 1 entries); a
 * batched tensor of batch 1 that does not match a non-batching consumer's
 * dims loses its batch dimension. Otherwise the shape stays.
 */
static void reshape_for(int batching, const int64_t *cfg, uint32_t ncfg,
                        const ens_val_t *v, int64_t *room,
                        const int64_t **shape, uint32_t *ndims) {
  *shape = v->shape;
  *ndims = v->ndims;
  if (batching == (v->batch != 0)) return;
  if (batching) {
    if (room != NULL && dims_match(cfg, ncfg, v->shape, v->ndims)) {
      room[0] = 1;
      memcpy(room + 1, v->shape, v->ndims * sizeof(*room));
      *shape = room;
      *ndims = v->ndims + 1;
    }
  } else if (v->batch == 1 && v->ndims > 0 &&
             !dims_match(cfg, ncfg, v->shape, v->ndims)) {
    *shape = v->shape + 1;
    *ndims = v->ndims - 1;
  }
}

/* Every needed step is done: the response, its outputs pointing into the
 * steps' held responses. */
static void answer(ens_exec_t *x) {
  const ens_graph_t *g = &x->e->g;
  ifd_request_t *p = x->parent;
  ens_seq_t req_seq = {p->correlation_id, p->correlation_id_str, p->flags};
  const ens_seq_t *seq = &req_seq;
  ifd_response_t *resp;
  uint32_t i, n = 0;
  int first = 1;

  if (x->in_submit) {
    /* NEVER with the schedulers there are (a step answers on a later loop
     * turn), but not from inside the request's own submit either way. */
    x->deferred = 1;
    return;
  }
  resp = ifd_response_new(p);
  if (resp == NULL) {
    fail_exec(x, IFD_ENOMEM, "out of memory");
    return;
  }
  for (i = 0; i < g->n_outputs; i++) {
    uint32_t t = g->outputs[i];
    const ens_val_t *v = &x->vals[t];
    ifd_output_t *o;
    if (p->n_outputs != 0) {
      uint32_t k;
      for (k = 0; k < p->n_outputs; k++)
        if (strcmp(p->outputs[k].name, g->tensors[t].name) == 0) break;
      if (k == p->n_outputs) continue;
    }
    if (first) seq = seq_of(x, &req_seq, t);
    first = 0;
    /* A composing model that did not produce it: left out, as Triton. */
    if (v->state != VAL_SET) continue;
    o = &x->outs[n++];
    memset(o, 0, sizeof(*o));
    o->name = g->tensors[t].name;
    o->dtype = v->dtype;
    {
      const int64_t *shape;
      /* Only a stripped batch dimension here: never a longer shape. */
      reshape_for(g->batching, g->out_dims[i], g->out_ndims[i], v, NULL, &shape,
                  &o->ndims);
      o->shape = (int64_t *)shape; /* never written: the response is ours */
    }
    o->buffer = (void *)v->data;
    o->byte_size = v->byte_size;
    o->resp = resp;
  }
  resp->outputs = x->outs;
  resp->n_outputs = resp->cap_outputs = n;
  x->params[0].key = "sequence_id";
  if (seq->str != NULL) {
    x->params[0].type = IFD_PARAM_STRING;
    x->params[0].v.s = seq->str;
  } else {
    x->params[0].type = IFD_PARAM_INT;
    x->params[0].v.i = (int64_t)seq->id;
  }
  x->params[1].key = "sequence_start";
  x->params[1].type = IFD_PARAM_BOOL;
  x->params[1].v.b = (seq->flags & IFD_REQUEST_FLAG_SEQUENCE_START) != 0;
  x->params[2].key = "sequence_end";
  x->params[2].type = IFD_PARAM_BOOL;
  x->params[2].v.b = (seq->flags & IFD_REQUEST_FLAG_SEQUENCE_END) != 0;
  resp->params = x->params;
  resp->n_params = resp->cap_params = 3;
  x->keep.drop = on_keep_drop;
  resp->keep = &x->keep;
  x->refs++; /* the response's, dropped when it is freed */
  x->answered = 1;
  ifd_response_send_now(resp, IFD_RESPONSE_FINAL, 0, NULL);
  maybe_release(x);
  exec_put(x); /* the run's */
}

/* ---- executions: steps ----------------------------------------------------
 */

static void on_child_response(ifd_response_t *resp, void *arg);
static void on_child_release(ifd_request_t *req, int success, void *arg);

/* Starts step `i` as a child request. On failure the request fails. */
static void start(ens_exec_t *x, uint32_t i) {
  const ens_step_t *st = &x->e->g.steps[i];
  ens_run_t *r = &x->runs[i];
  ifd_request_t *p = x->parent, *c;
  ens_seq_t req_seq = {p->correlation_id, p->correlation_id_str, p->flags};
  const ens_seq_t *seq = &req_seq;
  const ifd_model_config_t *mc = NULL;
  ifd_errmsg_t err;
  uint32_t k;
  int rc;

  r->started = 1;
  if (ifd_request_is_cancelled(p)) {
    fail_exec(x, IFD_ECANCELLED, IFD__CANCELLED_MSG);
    return;
  }
  if (!x->e->g.batching) {
    /* Its composing models may batch (a batching ensemble's all do: the
     * config checks see to it), so shapes may need Triton's reshape. A
     * model that is not there is left for the submit to refuse. */
    ifd_model_t *m;
    if (ifd_server_find_model(p->server, st->model, strlen(st->model),
                              st->version, &m, &err) == 0)
      mc = m->config;
  }
  c = ifd_request_new(p->server);
  if (c == NULL || ifd_request_reserve_inputs(c, st->n_in) < 0) {
    ifd_request_unref(c);
    fail_exec(x, IFD_ENOMEM, "out of memory");
    return;
  }
  for (k = 0; k < st->n_in; k++) {
    const ens_val_t *v = &x->vals[st->in[k].tensor];
    const int64_t *shape = v->shape;
    uint32_t ndims = v->ndims;
    ifd_input_t *in;
    if (v->from >= 0 && seq == &req_seq) seq = &x->runs[v->from].seq;
    /* An optional input nobody gave: left out of the child too. */
    if (v->state != VAL_SET) continue;
    if (mc != NULL) {
      const Inference__ModelInput *ci = NULL;
      size_t q;
      for (q = 0; q < mc->n_input; q++)
        if (strcmp(mc->input[q]->name, st->in[k].name) == 0) ci = mc->input[q];
      if (ci != NULL && v->ndims < IFD_MAX_DIMS) {
        int64_t *room =
            ifd_pool_alloc(&c->pool, (v->ndims + 1) * sizeof(*room));
        reshape_for(mc->max_batch_size > 0, ci->dims, (uint32_t)ci->n_dims, v,
                    room, &shape, &ndims);
      }
    }
    in = ifd_request_add_input_borrowed(c, st->in[k].name, v->dtype, shape,
                                        ndims);
    in->data = v->data; /* reserved above: never NULL */
    in->byte_size = v->byte_size;
  }
  r->seq = *seq;
  c->model_name = st->model;
  c->model_version = st->version;
  c->id = p->id;
  c->correlation_id = seq->id;
  c->correlation_id_str = seq->str;
  c->flags = seq->flags;
  c->priority = p->priority;
  c->timeout_us = p->timeout_us;
  c->params = p->params;
  c->n_params = p->n_params;
  c->outputs = st->req_outs;
  c->n_outputs = st->n_out;
  c->on_response = on_child_response;
  c->on_release = on_child_release;
  c->cb_arg = r;
  /* Counted before the submit: a scheduler may answer and release the
   * child from inside it. The caller holds a reference of its own (this
   * call's in ens_submit, the responding child's in step_done), so the
   * execution outlives this function either way. */
  x->live++;
  x->running++;
  x->refs++; /* the child's, dropped at its release */
  ifd_errclear(&err);
  r->child = c;
  rc = ifd_request_submit(c, &err);
  r->batch = c->batch_size; /* set by the submit's validation */
  if (rc < 0) r->child = NULL;
  ifd_request_unref(c); /* the backend's reference keeps it from here */
  if (rc < 0) {
    /* Refused up front: no callback follows. */
    x->live--;
    x->running--;
    x->refs--;
    fail_exec(x, rc, err.text[0] ? err.text : ifd_strerror(rc));
  }
}

/* Runs every needed step that became ready because tensor `t` is known. */
static void tensor_known(ens_exec_t *x, uint32_t t) {
  const ens_tensor_t *tt = &x->e->g.tensors[t];
  uint32_t k;
  for (k = 0; k < tt->n_readers; k++) {
    ens_run_t *r = &x->runs[tt->readers[k]];
    if (!r->needed || r->started) continue;
    if (--r->missing == 0 && !x->failed) start(x, r->idx);
  }
}

/* A composing model's response may carry the sequence on (see ens_seq_t). */
static void seq_override(ens_run_t *r, const ifd_response_t *resp) {
  uint32_t i;
  for (i = 0; i < resp->n_params; i++) {
    const ifd_param_t *pa = &resp->params[i];
    if (strcmp(pa->key, "sequence_id") == 0) {
      if (pa->type == IFD_PARAM_INT) {
        r->seq.id = (uint64_t)pa->v.i;
        r->seq.str = NULL;
      } else if (pa->type == IFD_PARAM_STRING) {
        r->seq.str = pa->v.s;
        r->seq.id = 0;
      }
    } else if (pa->type == IFD_PARAM_BOOL &&
               strcmp(pa->key, "sequence_start") == 0) {
      r->seq.flags = (r->seq.flags & ~IFD_REQUEST_FLAG_SEQUENCE_START) |
                     (pa->v.b ? IFD_REQUEST_FLAG_SEQUENCE_START : 0);
    } else if (pa->type == IFD_PARAM_BOOL &&
               strcmp(pa->key, "sequence_end") == 0) {
      r->seq.flags = (r->seq.flags & ~IFD_REQUEST_FLAG_SEQUENCE_END) |
                     (pa->v.b ? IFD_REQUEST_FLAG_SEQUENCE_END : 0);
    }
  }
}

/* Step `r` ended (its FINAL response came, without an error). */
static void step_done(ens_exec_t *x, ens_run_t *r) {
  const ens_step_t *st = &x->e->g.steps[r->idx];
  uint32_t k;

  r->done = 1;
  if (r->resp != NULL) seq_override(r, r->resp);
  for (k = 0; k < st->n_out; k++) {
    ens_val_t *v = &x->vals[st->out[k].tensor];
    const ifd_output_t *o =
        r->resp != NULL ? ifd_response_output(r->resp, st->out[k].name) : NULL;
    v->from = (int32_t)r->idx;
    v->batch = r->batch;
    if (o == NULL) {
      /* Not produced: an absent tensor (an optional input downstream, a
       * left-out ensemble output), as Triton. */
      v->state = VAL_ABSENT;
      continue;
    }
    v->state = VAL_SET;
    v->dtype = o->dtype;
    v->shape = o->shape;
    v->ndims = o->ndims;
    v->data = o->buffer;
    v->byte_size = o->byte_size;
  }
  for (k = 0; k < st->n_out && !x->failed; k++)
    tensor_known(x, st->out[k].tensor);
  if (x->failed) return;
  if (--x->left == 0) {
    answer(x);
  } else if (x->running == 0) {
    /* NEVER with a validated config: a needed step can never run. */
    fail_exec(
        x, IFD_EINVAL,
        "unexpected deadlock, at least one output is not set while no more "
        "ensemble steps can be made");
  }
}

static void on_child_response(ifd_response_t *resp, void *arg) {
  ens_run_t *r = arg;
  ens_exec_t *x = r->x;
  int final = (resp->flags & IFD_RESPONSE_FINAL) != 0;

  if (final) x->running--;
  if (resp->error != 0) {
    fail_exec(x, resp->error, resp->error_msg);
    ifd_response_free(resp);
    return;
  }
  if (x->failed || resp->n_outputs == 0) {
    /* Dropped: the request failed already, or a flags-only response. */
    ifd_response_free(resp);
  } else if (r->resp != NULL) {
    ifd_response_free(resp);
    fail_exec(x, IFD_EUNSUPPORTED,
              "a composing model sent more than one response with outputs; "
              "decoupled composing models are not supported in ensembles yet");
    return;
  } else {
    r->resp = resp; /* held until the execution ends */
  }
  if (final && !x->failed) step_done(x, r);
}

static void on_child_release(ifd_request_t *req, int success, void *arg) {
  ens_run_t *r = arg;
  ens_exec_t *x = r->x;
  r->child = NULL;
  /* Triton adds the composing models' compute durations of this request to
   * the ensemble's (its secondary statistics aggregator): successes only. */
  if (success) {
    if (req->t_exec_start != 0 && req->t_compute_start > req->t_exec_start)
      x->ci += req->t_compute_start - req->t_exec_start;
    if (req->t_compute_start != 0 && req->t_compute_end > req->t_compute_start)
      x->infer += req->t_compute_end - req->t_compute_start;
    if (req->t_compute_end != 0 && req->t_exec_end > req->t_compute_end)
      x->co += req->t_exec_end - req->t_compute_end;
  }
  x->live--;
  maybe_release(x);
  exec_put(x);
}

/* ---- the scheduler kind ---------------------------------------------------
 */

static int64_t find_input(const ens_graph_t *g, const char *name) {
  uint32_t i;
  for (i = 0; i < g->n_inputs; i++)
    if (strcmp(g->tensors[i].name, name) == 0) return i;
  return -1;
}

static int ens_submit(ifd__sched_t *s, ifd_request_t *req, ifd_errmsg_t *err) {
  ens_t *e = s->impl;
  const ens_graph_t *g = &e->g;
  ens_exec_t *x;
  uint32_t i, k;

  x = exec_get(e);
  if (x == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  x->parent = req;
  req->sched_area.p[0] = x;
  x->t_start = uv_hrtime();
  for (i = 0; i < g->n_tensors; i++) x->vals[i].from = -1;
  for (i = 0; i < g->n_inputs; i++) x->vals[i].state = VAL_ABSENT;
  for (i = 0; i < req->n_inputs; i++) {
    const ifd_input_t *in = &req->inputs[i];
    int64_t t = find_input(g, in->name);
    ens_val_t *v;
    if (t < 0) {
      /* NEVER: core's validation refused it first. */
      exec_recycle(e, x);
      return ifd_errf(err, IFD_EINVAL,
                      "unexpected inference input '%s' for model '%s'",
                      in->name, s->model->name);
    }
    v = &x->vals[t];
    v->state = VAL_SET;
    v->dtype = in->dtype;
    v->shape = in->shape;
    v->ndims = in->ndims;
    v->data = in->data;
    v->byte_size = in->byte_size;
    v->batch = req->batch_size;
  }
  /* The steps this request needs: all, or those its outputs need. */
  for (i = 0; i < g->n_steps; i++) {
    x->runs[i].x = x;
    x->runs[i].idx = i;
    x->runs[i].needed = req->n_outputs == 0;
  }
  for (k = 0; k < req->n_outputs; k++)
    for (i = 0; i < g->n_outputs; i++)
      if (strcmp(req->outputs[k].name, g->tensors[g->outputs[i]].name) == 0) {
        const uint8_t *need = &g->needs[(size_t)i * g->n_steps];
        uint32_t j;
        for (j = 0; j < g->n_steps; j++) x->runs[j].needed |= need[j];
      }
  for (i = 0; i < g->n_steps; i++) {
    ens_run_t *r = &x->runs[i];
    if (!r->needed) continue;
    x->left++;
    for (k = 0; k < g->steps[i].n_in; k++)
      if (g->steps[i].in[k].tensor >= g->n_inputs) r->missing++;
  }

  ifd_request_set_state(req, IFD_REQ_EXECUTING);
  req->sched_counts = 1;
  s->executing++;
  e->alive++;
  x->model = s->model;
  ifd_model_ref(x->model);
  x->refs = 2; /* the run's, and this call's */
  x->in_submit = 1;
  for (i = 0; i < g->n_steps && !x->failed; i++)
    if (x->runs[i].needed && x->runs[i].missing == 0) start(x, i);
  if (!x->failed && x->left > 0 && x->running == 0)
    fail_exec(
        x, IFD_EINVAL,
        "unexpected deadlock, at least one output is not set while no more "
        "ensemble steps can be made");
  x->in_submit = 0;
  if (x->deferred) {
    /* The run's reference goes with the deferred answer. */
    x->answer_ev.fn = on_deferred_answer;
    ifd_server_at_iteration_end(s->model->server, &x->answer_ev);
  }
  exec_put(x);
  return 0;
}

static void ens_idle(ifd__sched_t *s, uint32_t instance) {
  (void)s;
  (void)instance;
}

/* Nothing waits in an ensemble: its requests are with the composing
 * models, which refuse what they have queued when they unload. */
static void ens_stop(ifd__sched_t *s) {
  (void)s;
}

static void ens_destroy(ifd__sched_t *s) {
  ens_t *e = s->impl;
  if (e->alive > 0) {
    /* Executions still hold pointers into the graph: the last one frees
     * the scheduler (exec_end). They hold the model meanwhile. */
    e->dying = 1;
    return;
  }
  ens_free(s);
}

/* An ensemble request cancelled cancels its steps' requests: each one still
 * queued is dropped (its CANCELLED answer fails the ensemble request), each
 * one running sees the flag, and no further step starts (start()). */
static void ens_cancel(ifd__sched_t *s, ifd_request_t *req) {
  ens_exec_t *x = req->sched_area.p[0];
  uint32_t i;
  (void)s;
  if (x == NULL || x->parent != req || x->released) return;
  x->refs++; /* a child's answer may end the execution meanwhile */
  for (i = 0; i < x->e->g.n_steps; i++)
    if (x->runs[i].child != NULL) ifd_request_cancel(x->runs[i].child);
  exec_put(x);
}

const ifd__sched_kind_t ifd__ensemble_kind = {ens_submit, ens_idle, ens_stop,
                                              ens_destroy, ens_cancel};

/* ---- what stands in for backend_api ---------------------------------------
 */

static int eb_load(ifd_model_t *m, ifd_instance_idle_cb idle, void *idle_arg,
                   ifd_errmsg_t *err) {
  (void)m;
  (void)idle;
  (void)idle_arg;
  (void)err;
  return 0;
}

static void on_unload_ev(ifd_event_t *ev) {
  ens_t *e = ifd_container_of(ev, ens_t, unload_ev);
  if (e->freed != NULL) e->freed(e->freed_arg);
}

/* Thread pool: the scheduler goes on the loop, like a backend model's
 * memory (ifd_backend_model_unload). */
static void eb_unload(ifd_model_t *m, void (*freed)(void *arg), void *arg) {
  ifd__sched_t *s = m->sched;
  ens_t *e = s->impl;
  e->freed = freed;
  e->freed_arg = arg;
  e->unload_ev.fn = on_unload_ev;
  ifd_evq_push(ifd_server_evq(m->server), &e->unload_ev);
}

static uint32_t eb_instances(const ifd_model_t *m) {
  (void)m;
  return 0;
}

static void eb_enqueue(ifd_model_t *m, ifd_request_t **reqs, uint32_t n) {
  (void)m;
  (void)reqs;
  (void)n;
}

static uint64_t eb_queued(const ifd_model_t *m) {
  (void)m;
  return 0;
}

static ifd_request_t *eb_take_queued(ifd_model_t *m, uint64_t *jobs) {
  (void)m;
  *jobs = 0;
  return NULL;
}

static void eb_enqueue_to(ifd_model_t *m, uint32_t instance,
                          ifd_request_t **reqs, uint32_t n) {
  (void)m;
  (void)instance;
  (void)reqs;
  (void)n;
}

static const ifd__sched_backend_t ensemble_backend = {
    eb_load,   eb_unload,      eb_instances,  eb_enqueue,
    eb_queued, eb_take_queued, eb_enqueue_to, NULL,
};

int ifd__ensemble_init(ifd__sched_t *s, ifd_errmsg_t *err) {
  ens_t *e = calloc(1, sizeof(*e));
  int rc;

  if (e == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  rc = ifd__ens_graph_build(s->model->config, &e->g, err);
  if (rc < 0) {
    free(e);
    return rc;
  }
  e->s = s;
  e->exec_size = sizeof(ens_exec_t) + e->g.n_steps * sizeof(ens_run_t) +
                 e->g.n_tensors * sizeof(ens_val_t) +
                 e->g.n_outputs * sizeof(ifd_output_t);
  s->impl = e;
  s->back = &ensemble_backend;
  s->kind = &ifd__ensemble_kind;
  s->n_instances = 0;
  return 0;
}
