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
 * An ensemble with a decoupled composing model is decoupled itself (the
 * registry sets its config so): each response with outputs of a decoupled
 * step runs the steps after it again on those outputs, in a frame of its own
 * (sched/ensemble_internal.h), and each frame whose outputs are complete is
 * an ensemble response; the request ends with a flags-only FINAL once
 * nothing runs. A step that is not decoupled answers one response with
 * outputs; a second one fails the request.
 *
 * This file is the scheduler kind (submit, cancel, unload) and the
 * executions' memory; sched/ensemble_exec.c runs an execution.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "core/model.h"
#include "base/check.h"
#include "base/util.h"
#include "sched/ensemble_internal.h"

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
  /* One block: the header, then the root's runs, values and response
   * outputs. */
  p = (char *)x;
  memset(x, 0, offsetof(ens_exec_t, defer_msg));
  x->root.runs = (ens_run_t *)(p + sizeof(*x));
  x->root.vals = (ens_val_t *)(x->root.runs + g->n_steps);
  x->root.outs = (ifd_output_t *)(x->root.vals + g->n_tensors);
  memset(x->root.runs, 0, g->n_steps * sizeof(*x->root.runs));
  memset(x->root.vals, 0, g->n_tensors * sizeof(*x->root.vals));
  x->root.x = x;
  x->e = e;
  return x;
}

void ifd__ens_exec_recycle(ens_t *e, ens_exec_t *x) {
  if (e->dying || e->n_free >= IFD__ENS_FREE_MAX) {
    free(x);
    return;
  }
  x->next_free = e->free_list;
  e->free_list = x;
  e->n_free++;
}

void ifd__ens_free(ifd__sched_t *s) {
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
  for (i = 0; i < g->n_inputs; i++) x->root.vals[i].state = VAL_ABSENT;
  for (i = 0; i < req->n_inputs; i++) {
    const ifd_input_t *in = &req->inputs[i];
    int64_t t = find_input(g, in->name);
    ens_val_t *v;
    if (NEVER(t < 0)) {
      /* Core's validation (ifd_model_validate_request) refused it first. */
      ifd__ens_exec_recycle(e, x);
      return ifd_errf(err, IFD_EINVAL,
                      "unexpected inference input '%s' for model '%s'",
                      in->name, s->model->name);
    }
    v = &x->root.vals[t];
    ifd__ens_val_set(v, in->dtype, in->shape, in->ndims, in->data,
                     in->byte_size, in->mem_type, in->mem_id);
    v->batch = req->batch_size;
  }
  /* The steps this request needs: all, or those its outputs need. */
  for (i = 0; i < g->n_steps; i++) {
    x->root.runs[i].x = x;
    x->root.runs[i].f = &x->root;
    x->root.runs[i].idx = i;
    x->root.runs[i].needed = req->n_outputs == 0;
  }
  for (k = 0; k < req->n_outputs; k++)
    for (i = 0; i < g->n_outputs; i++)
      if (strcmp(req->outputs[k].name, g->tensors[g->outputs[i]].name) == 0) {
        const uint8_t *need = &g->needs[(size_t)i * g->n_steps];
        uint32_t j;
        for (j = 0; j < g->n_steps; j++) x->root.runs[j].needed |= need[j];
      }
  for (i = 0; i < g->n_steps; i++) {
    ens_run_t *r = &x->root.runs[i];
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
  ifd__ens_exec_begin(x);
  ifd__ens_exec_put(x);
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
  ifd__ens_free(s);
}

/* An ensemble request cancelled cancels its steps' requests: each one still
 * queued is dropped (its CANCELLED answer fails the ensemble request), each
 * one running sees the flag, and no further step starts (start()). */
static void ens_cancel(ifd__sched_t *s, ifd_request_t *req) {
  ens_exec_t *x = req->sched_area.p[0];
  (void)s;
  if (x == NULL || x->parent != req || x->released) return;
  ifd__ens_exec_cancel(x);
}

const ifd__sched_kind_t ifd__ensemble_kind = {
    ens_submit, ens_idle, ens_stop, ens_destroy, ens_cancel, NULL, NULL};

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
  e->frame_size = e->g.n_steps * sizeof(ens_run_t) +
                  e->g.n_tensors * sizeof(ens_val_t) +
                  e->g.n_outputs * sizeof(ifd_output_t);
  e->exec_size = sizeof(ens_exec_t) + e->frame_size;
  e->frame_size += sizeof(ens_frame_t);
  e->streaming = s->model->config->model_transaction_policy != NULL &&
                 s->model->config->model_transaction_policy->decoupled;
  s->impl = e;
  s->back = &ensemble_backend;
  s->kind = &ifd__ensemble_kind;
  s->n_instances = 0;
  return 0;
}
