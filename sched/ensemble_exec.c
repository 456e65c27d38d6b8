/*
 * sched/ensemble_exec.c - one ensemble request's execution: its steps as
 * child requests, their answers, the ensemble's responses, and the end.
 *
 * Frames (see sched/ensemble_internal.h) hold the tensors: the root those of
 * the request and of the steps that run once; a streaming ensemble's other
 * frames those of one response of a decoupled step each. A step runs in the
 * root when everything it reads is known there (a count per run), and in
 * another frame when it reads a tensor that frame holds and every tensor it
 * reads is known from there (looked up towards the root). A tensor known in
 * a frame may complete a step or the outputs in that frame and in every frame
 * below it (a late root step may be what a frame's step still waits for), so
 * the frame's subtree is walked.
 *
 * Answers: an ensemble that does not stream answers once, with FINAL, when
 * every needed step is done (or fails). A streaming one answers every frame
 * whose requested outputs are all known, and holds at least one of them
 * itself (the root: all), as soon as they are; it ends with a flags-only
 * FINAL once no step runs or can start. Each response's outputs point into
 * the held step responses, which stay until the execution ends.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/check.h"
#include "base/log.h"
#include "core/metrics.h"
#include "core/model.h"
#include "base/util.h"
#include "sched/ensemble_internal.h"

static const char *ens_name(const ens_t *e) {
  return e->s->model->name;
}

/* ---- the end -------------------------------------------------------------
 */

/*
 * Once the request was answered and every child released: the ensemble's
 * statistics (the children's compute times are final then), and the
 * request goes back, since no step reads its inputs any more. The
 * execution itself lives on while the responses borrow its steps' buffers
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

static void free_runs(const ens_t *e, ens_frame_t *f) {
  uint32_t i;
  for (i = 0; i < e->g.n_steps; i++)
    if (f->runs[i].resp != NULL) ifd_response_free(f->runs[i].resp);
}

/* Nothing uses the execution any more (its request was released, its
 * responses freed): frees the held responses, the frames and the
 * execution. */
static void exec_end(ens_exec_t *x) {
  ens_t *e = x->e;
  ifd_model_t *m = x->model;
  ens_frame_t *f, *next;

  free_runs(e, &x->root);
  for (f = x->frames; f != NULL; f = next) {
    next = f->next;
    free_runs(e, f);
    if (f->src != NULL) ifd_response_free(f->src);
    free(f);
  }
  x->frames = NULL;
  ifd__ens_exec_recycle(e, x);
  /* Unloaded meanwhile: the scheduler goes with its last execution. */
  if (--e->alive == 0 && e->dying) ifd__ens_free(e->s);
  ifd_model_unref(m);
}

void ifd__ens_exec_put(ens_exec_t *x) {
  if (--x->refs == 0) exec_end(x);
}

/* A response was freed: its borrowed buffers are free to go. */
static void on_keep_drop(ifd_req_attach_t *a) {
  ens_frame_t *f = ifd_container_of(a, ens_frame_t, keep);
  ifd__ens_exec_put(f->x);
}

/* ---- answers -------------------------------------------------------------
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
     * this loop iteration (ifd__ens_exec_begin schedules it). */
    x->deferred = 1;
    x->defer_code = code;
    memcpy(x->defer_msg, buf, sizeof(buf));
    return;
  }
  x->answered = 1;
  ifd_request_fail(x->parent, code, buf);
  maybe_release(x);
  ifd__ens_exec_put(x);
}

/* The value of tensor `t` seen from frame `f`: its own, else its
 * ancestors'; PENDING when none knows it. */
static const ens_val_t *val_in(const ens_frame_t *f, uint32_t t) {
  const ens_val_t *v = &f->vals[t];
  while (v->state == VAL_PENDING && f->parent != NULL) {
    f = f->parent;
    v = &f->vals[t];
  }
  return v;
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

/* Whether ensemble output `i` is one the request asked for (all when it
 * named none). */
static int wanted(const ifd_request_t *p, const ens_graph_t *g, uint32_t i) {
  uint32_t k;
  if (p->n_outputs == 0) return 1;
  for (k = 0; k < p->n_outputs; k++)
    if (strcmp(p->outputs[k].name, g->tensors[g->outputs[i]].name) == 0)
      return 1;
  return 0;
}

/* Sends frame `f`'s response (FINAL when `flags` says so: then the request
 * is answered): its outputs point into the held step responses. Returns 0,
 * or IFD_ENOMEM (nothing sent). */
static int answer_frame(ens_exec_t *x, ens_frame_t *f, uint32_t flags) {
  const ens_graph_t *g = &x->e->g;
  ifd_request_t *p = x->parent;
  ens_seq_t req_seq = {p->correlation_id, p->correlation_id_str, p->flags};
  const ens_seq_t *seq = &req_seq;
  ifd_response_t *resp;
  uint32_t i, n = 0;
  int first = 1;

  resp = ifd_response_new(p);
  if (resp == NULL) return IFD_ENOMEM;
  f->answered = 1;
  if (flags & IFD_RESPONSE_FINAL) x->answered = 1;
  for (i = 0; i < g->n_outputs; i++) {
    const ens_val_t *v = val_in(f, g->outputs[i]);
    ifd_output_t *o;
    const int64_t *shape;
    if (!wanted(p, g, i)) continue;
    if (first && v->src != NULL) seq = &v->src->seq;
    first = 0;
    /* A composing model that did not produce it: left out, as Triton. */
    if (v->state != VAL_SET) continue;
    o = &f->outs[n++];
    memset(o, 0, sizeof(*o));
    o->name = g->tensors[g->outputs[i]].name;
    o->dtype = v->dtype;
    /* Only a stripped batch dimension here: never a longer shape. */
    reshape_for(g->batching, g->out_dims[i], g->out_ndims[i], v, NULL, &shape,
                &o->ndims);
    o->shape = (int64_t *)shape; /* never written: the response is ours */
    o->buffer = (void *)v->data;
    o->byte_size = v->byte_size;
    o->mem_type = v->mem_type;
    o->mem_id = v->mem_id;
    o->resp = resp;
  }
  resp->outputs = f->outs;
  resp->n_outputs = resp->cap_outputs = n;
  f->params[0].key = "sequence_id";
  if (seq->str != NULL) {
    f->params[0].type = IFD_PARAM_STRING;
    f->params[0].v.s = seq->str;
  } else {
    f->params[0].type = IFD_PARAM_INT;
    f->params[0].v.i = (int64_t)seq->id;
  }
  f->params[1].key = "sequence_start";
  f->params[1].type = IFD_PARAM_BOOL;
  f->params[1].v.b = (seq->flags & IFD_REQUEST_FLAG_SEQUENCE_START) != 0;
  f->params[2].key = "sequence_end";
  f->params[2].type = IFD_PARAM_BOOL;
  f->params[2].v.b = (seq->flags & IFD_REQUEST_FLAG_SEQUENCE_END) != 0;
  resp->params = f->params;
  resp->n_params = resp->cap_params = 3;
  f->x = x;
  f->keep.drop = on_keep_drop;
  resp->keep = &f->keep;
  x->refs++; /* the response's, dropped when it is freed */
  ifd_response_send_now(resp, flags, 0, NULL);
  return 0;
}

/* A streaming ensemble's end: nothing runs and nothing can start, so the
 * request ends with a flags-only FINAL (after the frames' responses). */
static void finish_stream(ens_exec_t *x) {
  ifd_response_t *resp = ifd_response_new(x->parent);
  if (resp == NULL) {
    fail_exec(x, IFD_ENOMEM, "out of memory");
    return;
  }
  resp->empty = 1;
  x->answered = 1;
  ifd_response_send_now(resp, IFD_RESPONSE_FINAL, 0, NULL);
  maybe_release(x);
  ifd__ens_exec_put(x); /* the run's */
}

/* The answer that ends the execution: the root's FINAL response (not
 * streaming: every needed step is done), or a stream's FINAL flag. */
static void answer(ens_exec_t *x) {
  if (NEVER(x->in_submit)) {
    /* Not with the schedulers there are (a step answers on a later loop
     * turn), but not from inside the request's own submit either way. */
    x->deferred = 1;
    return;
  }
  if (x->e->streaming) {
    finish_stream(x);
    return;
  }
  if (answer_frame(x, &x->root, IFD_RESPONSE_FINAL) < 0) {
    fail_exec(x, IFD_ENOMEM, "out of memory");
    return;
  }
  maybe_release(x);
  ifd__ens_exec_put(x); /* the run's */
}

static void on_deferred_answer(ifd_event_t *ev) {
  ens_exec_t *x = ifd_container_of(ev, ens_exec_t, answer_ev);
  if (!x->failed) {
    answer(x);
    return;
  }
  x->answered = 1;
  ifd_request_fail(x->parent, x->defer_code, x->defer_msg);
  maybe_release(x);
  ifd__ens_exec_put(x);
}

/* A streaming ensemble answers frame `f` once every requested output is
 * known from it and it holds one of them itself (else an ancestor answers
 * with the same values). */
static void answer_if_ready(ens_exec_t *x, ens_frame_t *f) {
  const ens_graph_t *g = &x->e->g;
  uint32_t i;
  int own = f->parent == NULL;
  /* Never in submit: a step answers on a later loop turn. */
  if (f->answered || x->failed || x->answered || NEVER(x->in_submit)) return;
  for (i = 0; i < g->n_outputs; i++) {
    if (!wanted(x->parent, g, i)) continue;
    if (val_in(f, g->outputs[i])->state == VAL_PENDING) return;
    if (f->vals[g->outputs[i]].state != VAL_PENDING) own = 1;
  }
  if (own && answer_frame(x, f, 0) < 0)
    fail_exec(x, IFD_ENOMEM, "out of memory");
}

/* Ends a streaming execution when no child runs any more (none can start
 * then: steps start as soon as what they read is known). */
static void stream_maybe_done(ens_exec_t *x) {
  if (x->e->streaming && x->running == 0 && !x->failed && !x->answered)
    answer(x);
}

/* ---- steps ---------------------------------------------------------------
 */

static void on_child_response(ifd_response_t *resp, void *arg);
static void on_child_release(ifd_request_t *req, int success, void *arg);

/* Starts run `r` (of step r->idx in frame r->f) as a child request. On
 * failure the request fails. */
static void start(ens_exec_t *x, ens_run_t *r) {
  const ens_step_t *st = &x->e->g.steps[r->idx];
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
  if (!x->e->g.batching || x->e->streaming) {
    /* Its composing models may batch (a batching ensemble's all do: the
     * config checks see to it), so shapes may need Triton's reshape; and a
     * streaming ensemble needs to know which steps stream. A model that is
     * not there is left for the submit to refuse. */
    ifd_model_t *m;
    if (ifd_server_find_model_in(p->server, p->model->repo, st->model,
                                 strlen(st->model), st->version, &m,
                                 &err) == 0) {
      if (!x->e->g.batching) mc = m->config;
      r->decoupled = x->e->streaming && ifd_metrics_decoupled(m);
    }
  }
  c = ifd_request_new(p->server);
  if (c == NULL || ifd_request_reserve_inputs(c, st->n_in) < 0) {
    ifd_request_unref(c);
    fail_exec(x, IFD_ENOMEM, "out of memory");
    return;
  }
  for (k = 0; k < st->n_in; k++) {
    const ens_val_t *v = val_in(r->f, st->in[k].tensor);
    const int64_t *shape = v->shape;
    uint32_t ndims = v->ndims;
    ifd_input_t *in;
    if (v->src != NULL && seq == &req_seq) seq = &v->src->seq;
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
    in->mem_type = v->mem_type;
    in->mem_id = v->mem_id;
  }
  r->seq = *seq;
  c->model_name = st->model;
  c->model_namespace = p->model->repo;
  c->model_version = st->version;
  c->id = p->id;
  /* A step runs on behalf of whoever sent the ensemble's request: a BLS
   * call's chain goes on, so the deadlock rule sees a cycle through an
   * ensemble too. */
  c->caller_chain = p->caller_chain;
  c->ensemble_step = 1;
  c->caller_chain_len = p->caller_chain_len;
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
   * request's submit, or the responding child's callback), so the
   * execution outlives this function either way. */
  x->live++;
  x->running++;
  x->refs++; /* the child's, dropped at its release */
  ifd_errclear(&err);
  r->child = c;
  /* A traced ensemble request traces its steps as children. */
  if (p->trace != NULL) ifd_trace_child(c, p);
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

/* Whether step `r` of frame f (not the root) can start there: it reads a
 * tensor f holds, and every tensor it reads is known from f. */
static int ready_in_frame(const ens_exec_t *x, const ens_run_t *r) {
  const ens_step_t *st = &x->e->g.steps[r->idx];
  uint32_t k;
  int own = 0;
  for (k = 0; k < st->n_in; k++) {
    uint32_t t = st->in[k].tensor;
    if (val_in(r->f, t)->state == VAL_PENDING) return 0;
    if (r->f->vals[t].state != VAL_PENDING) own = 1;
  }
  return own;
}

/* Tensor `t` became known in frame `f`: starts the steps it completes, in f
 * and below, and answers the frames it completes (streaming). */
static void tensor_known(ens_exec_t *x, ens_frame_t *f, uint32_t t) {
  const ens_tensor_t *tt = &x->e->g.tensors[t];
  ens_frame_t *d = f;
  uint32_t k;

  for (;;) {
    for (k = 0; k < tt->n_readers && !x->failed; k++) {
      ens_run_t *r = &d->runs[tt->readers[k]];
      if (!r->needed || r->started) continue;
      if (d->parent == NULL) {
        /* The root counts what each step still misses. */
        if (--r->missing == 0) start(x, r);
      } else if (ready_in_frame(x, r)) {
        start(x, r);
      }
    }
    if (x->failed) return;
    if (x->e->streaming) answer_if_ready(x, d);
    /* Next in f's subtree, depth first. */
    if (d->child != NULL) {
      d = d->child;
      continue;
    }
    while (d != f && d->sibling == NULL) d = d->parent;
    if (d == f) return;
    d = d->sibling;
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

/* Sets step r's outputs, from `resp` (NULL: none produced), as values of
 * frame `f`, then lets what they complete start. */
static void set_outputs(ens_exec_t *x, ens_run_t *r, ens_frame_t *f,
                        const ifd_response_t *resp) {
  const ens_step_t *st = &x->e->g.steps[r->idx];
  uint32_t k;

  if (resp != NULL) seq_override(r, resp);
  for (k = 0; k < st->n_out; k++) {
    ens_val_t *v = &f->vals[st->out[k].tensor];
    const ifd_output_t *o =
        resp != NULL ? ifd_response_output(resp, st->out[k].name) : NULL;
    v->src = r;
    v->batch = r->batch;
    if (o == NULL) {
      /* Not produced: an absent tensor (an optional input downstream, a
       * left-out ensemble output), as Triton. */
      v->state = VAL_ABSENT;
      continue;
    }
    ifd__ens_val_set(v, o->dtype, o->shape, o->ndims, o->buffer, o->byte_size,
                     o->mem_type, o->mem_id);
  }
  for (k = 0; k < st->n_out && !x->failed; k++)
    tensor_known(x, f, st->out[k].tensor);
}

/* Step `r` ended (its FINAL response came, without an error). */
static void step_done(ens_exec_t *x, ens_run_t *r) {
  r->done = 1;
  /* A decoupled step's outputs went to frames of their own. */
  if (!r->decoupled) set_outputs(x, r, r->f, r->resp);
  if (x->failed || x->e->streaming || r->f->parent != NULL) return;
  if (--x->left == 0) {
    answer(x);
  } else if (NEVER(x->running == 0)) {
    /* Not with a validated config: a needed step can never run. */
    fail_exec(
        x, IFD_EINVAL,
        "unexpected deadlock, at least one output is not set while no more "
        "ensemble steps can be made");
  }
}

/* A decoupled step's response with outputs: a new frame below the step's,
 * holding `resp` (taken) and its outputs. */
static void fork_frame(ens_exec_t *x, ens_run_t *r, ifd_response_t *resp) {
  const ens_t *e = x->e;
  const ens_graph_t *g = &e->g;
  ens_frame_t *f = calloc(1, e->frame_size);
  uint32_t i;

  if (f == NULL) {
    ifd_response_free(resp);
    fail_exec(x, IFD_ENOMEM, "out of memory");
    return;
  }
  f->runs = (ens_run_t *)(f + 1);
  f->vals = (ens_val_t *)(f->runs + g->n_steps);
  f->outs = (ifd_output_t *)(f->vals + g->n_tensors);
  f->x = x;
  for (i = 0; i < g->n_steps; i++) {
    f->runs[i].x = x;
    f->runs[i].f = f;
    f->runs[i].idx = i;
    f->runs[i].needed = x->root.runs[i].needed;
  }
  f->src = resp;
  f->parent = r->f;
  f->sibling = r->f->child;
  r->f->child = f;
  f->next = x->frames;
  x->frames = f;
  set_outputs(x, r, f, resp);
}

static void on_child_response(ifd_response_t *resp, void *arg) {
  ens_run_t *r = arg;
  ens_exec_t *x = r->x;
  int final = (resp->flags & IFD_RESPONSE_FINAL) != 0;

  /* The child's reference (dropped at its release, which comes after its
   * responses) keeps the execution through this callback. */
  if (final) x->running--;
  if (resp->error != 0) {
    fail_exec(x, resp->error, resp->error_msg);
    ifd_response_free(resp);
  } else if (x->failed || x->answered || resp->n_outputs == 0) {
    /* Dropped: the request failed already, or a flags-only response. */
    ifd_response_free(resp);
  } else if (r->decoupled) {
    fork_frame(x, r, resp);
  } else if (r->resp != NULL) {
    ifd_response_free(resp);
    fail_exec(x, IFD_EUNSUPPORTED,
              "a composing model sent more than one response with outputs "
              "to an ensemble that is not decoupled");
  } else {
    r->resp = resp; /* held until the execution ends */
  }
  if (final && !x->failed) step_done(x, r);
  if (final && !x->failed) stream_maybe_done(x);
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
  ifd__ens_exec_put(x);
}

/* ---- the execution's life -------------------------------------------------
 */

void ifd__ens_exec_begin(ens_exec_t *x) {
  const ens_graph_t *g = &x->e->g;
  uint32_t i;

  x->in_submit = 1;
  for (i = 0; i < g->n_steps && !x->failed; i++)
    if (x->root.runs[i].needed && x->root.runs[i].missing == 0)
      start(x, &x->root.runs[i]);
  if (!x->failed && x->e->streaming) {
    /* Nothing to run at all: the stream ends at once. */
    if (x->running == 0) x->deferred = 1;
  } else if (!x->failed && x->left > 0 && x->running == 0) {
    fail_exec(
        x, IFD_EINVAL,
        "unexpected deadlock, at least one output is not set while no more "
        "ensemble steps can be made");
  }
  x->in_submit = 0;
  if (x->deferred) {
    /* The run's reference goes with the deferred answer. */
    x->answer_ev.fn = on_deferred_answer;
    ifd_server_at_iteration_end(x->e->s->model->server, &x->answer_ev);
  }
}

static void cancel_runs(ens_frame_t *f, uint32_t n) {
  uint32_t i;
  for (i = 0; i < n; i++)
    if (f->runs[i].child != NULL) ifd_request_cancel(f->runs[i].child);
}

void ifd__ens_exec_cancel(ens_exec_t *x) {
  ens_frame_t *f;
  x->refs++; /* a child's answer may end the execution meanwhile */
  cancel_runs(&x->root, x->e->g.n_steps);
  for (f = x->frames; f != NULL; f = f->next) cancel_runs(f, x->e->g.n_steps);
  ifd__ens_exec_put(x);
}
