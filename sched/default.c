/*
 * sched/default.c - the model operations table, the instance bookkeeping
 * every scheduler shares, and the default scheduler.
 *
 * The default scheduler is Triton's: each request runs alone (no batching
 * across requests) on the first idle instance, in arrival order; with every
 * instance busy, requests wait in one FIFO queue and the next idle instance
 * takes the head. Models with `dynamic_batching` get the dynamic batcher
 * (sched/dynamic.c) instead. All of it runs on the loop thread.
 */
#include <stdlib.h>
#include <string.h>

#include "backend_api/backend_api.h"
#include "base/check.h"
#include "base/log.h"
#include "core/model.h"
#include "sched/internal.h"
#include "sched/sched.h"
#include "core/request_internal.h"

/* ---- shared instance bookkeeping ------------------------------------------
 */

void ifd__sched_dispatch(ifd__sched_t *s, ifd_request_t **reqs, uint32_t n) {
  uint32_t i;
  for (i = 0; i < n; i++) ifd_request_set_state(reqs[i], IFD_REQ_EXECUTING);
  s->back->enqueue(s->model, reqs, n);
  s->jobs_out++;
  s->executing += n;
}

void ifd__sched_dispatch_to(ifd__sched_t *s, uint32_t instance,
                            ifd_request_t **reqs, uint32_t n) {
  uint32_t i;
  for (i = 0; i < n; i++) ifd_request_set_state(reqs[i], IFD_REQ_EXECUTING);
  s->back->enqueue_to(s->model, instance, reqs, n);
  s->jobs_out++;
  s->inst_jobs[instance]++;
  s->executing += n;
}

void ifd__sched_refuse_queued(ifd__sched_t *s) {
  uint64_t jobs;
  ifd_request_t *r = s->back->take_queued(s->model, &jobs);
  /* Taken back before any instance saw them: never handed over. A kind
   * with per-instance counts calls this only at stop, when they no longer
   * matter. */
  s->jobs_out -= jobs;
  while (r != NULL) {
    ifd_request_t *next = r->next;
    r->next = NULL;
    s->executing--;
    ifd_request_abort(r, IFD_EUNAVAIL, "the model is being unloaded");
    r = next;
  }
}

int ifd__sched_take_cancelled(ifd__sched_t *s, ifd_request_t *req) {
  int job_gone;
  if (ifd__req(req)->state != IFD_REQ_EXECUTING ||
      s->back->take_request == NULL ||
      !s->back->take_request(s->model, req, &job_gone))
    return 0;
  s->executing--;
  if (job_gone) s->jobs_out--;
  ifd_request_abort(req, IFD_ECANCELLED, IFD__CANCELLED_MSG);
  /* A batch fewer on the run queue: a batcher may send its next one. */
  if (job_gone && s->model != NULL) s->kind->idle(s, 0);
  return 1;
}

void ifd__sched_detach(ifd__sched_t *s) {
  if (s->model == NULL) return;
  s->model->sched = NULL;
  s->model->hold_response = NULL;
  s->model = NULL;
}

void ifd__sched_free_base(ifd__sched_t *s) {
  ifd__sched_detach(s);
  free(s->inst_jobs);
  free(s);
}

static void on_idle(ifd_model_t *m, uint32_t instance, uint64_t jobs,
                    uint64_t reqs, void *arg) {
  ifd__sched_t *s = arg;
  (void)m;
  s->jobs_out -= jobs;
  s->executing -= reqs;
  if (s->inst_jobs != NULL && instance < s->n_instances)
    s->inst_jobs[instance] -= (uint32_t)jobs;
  s->kind->idle(s, instance);
}

/* ---- the default scheduler ------------------------------------------------
 */

/* Requests go straight to the model's run queue, which is the FIFO every
 * instance takes from: a free instance picks the oldest request, exactly the
 * default scheduler's order, and a busy instance can go on to the next
 * request without waiting for the loop. */
static int default_submit(ifd__sched_t *s, ifd_request_t *req,
                          ifd_errmsg_t *err) {
  (void)err;
  IFD_ASSERT(ifd__req(req)->state == IFD_REQ_QUEUED);
  ifd__sched_dispatch(s, &req, 1);
  return 0;
}

static void default_idle(ifd__sched_t *s, uint32_t instance) {
  (void)s;
  (void)instance;
}

static void default_stop(ifd__sched_t *s) {
  ifd__sched_refuse_queued(s);
}

static void default_destroy(ifd__sched_t *s) {
  ifd__sched_free_base(s);
}

static void default_cancel(ifd__sched_t *s, ifd_request_t *req) {
  ifd__sched_take_cancelled(s, req);
}

static const ifd__sched_kind_t default_kind = {
    default_submit, default_idle, default_stop, default_destroy,
    default_cancel, NULL,         NULL};

/* ---- model operations -----------------------------------------------------
 */

static const ifd__sched_backend_t backend_api = {
    ifd_backend_model_load,     ifd_backend_model_unload,
    ifd_backend_instance_count, ifd_backend_enqueue,
    ifd_backend_queued,         ifd_backend_take_queued,
    ifd_backend_enqueue_to,     ifd_backend_take_request,
};

int ifd__sched_load(ifd_model_t *m, const ifd__sched_backend_t *back,
                    ifd_errmsg_t *err) {
  ifd__sched_t *s = calloc(1, sizeof(*s));
  int rc;

  if (s == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  s->model = m;
  s->back = back;
  if (ifd__ensemble_is(m->config)) {
    /* No backend: its steps run on the composing models. */
    rc = ifd__ensemble_init(s, err);
    if (rc < 0) {
      free(s);
      return rc;
    }
    m->sched = s;
    return 0;
  }
  rc = back->model_load(m, on_idle, s, err);
  if (rc < 0) {
    free(s);
    return rc;
  }
  /* After the backend's ModelInitialize: it may have completed the config
   * (auto-complete), which decides the scheduler kind. */
  s->n_instances = back->instance_count(m);
  if (ifd_config_sequence(m->config) != NULL) {
    s->kind = &ifd__sequence_kind;
    rc = ifd__sequence_init(s, err);
  } else if (ifd_config_dynamic(m->config) != NULL &&
             m->config->max_batch_size > 0) {
    s->kind = &ifd__dynamic_kind;
    rc = ifd__dynamic_init(s, err);
  } else {
    s->kind = &default_kind;
  }
  if (rc < 0) goto out_unload;
  m->sched = s;
  return 0;

out_unload:
  back->model_unload(m, NULL, NULL);
  free(s->inst_jobs);
  free(s);
  return rc;
}

static int sched_load(ifd_model_t *m, ifd_errmsg_t *err) {
  return ifd__sched_load(m, &backend_api, err);
}

static int sched_submit(ifd_model_t *m, ifd_request_t *req, ifd_errmsg_t *err) {
  ifd__sched_t *s = m->sched;
  return s->kind->submit(s, req, err);
}

static void sched_stop(ifd_model_t *m) {
  ifd__sched_t *s = m->sched;
  s->kind->stop(s);
}

static void sched_freed(void *arg) {
  ifd__sched_t *s = arg;
  s->kind->destroy(s);
}

static void sched_unload(ifd_model_t *m) {
  ifd__sched_t *s = m->sched;
  s->back->model_unload(m, sched_freed, s);
}

static uint64_t sched_pending(const ifd_model_t *m) {
  const ifd__sched_t *s = m->sched;
  return s != NULL ? s->queued + s->executing : 0;
}

static uint64_t sched_queued(const ifd_model_t *m) {
  const ifd__sched_t *s = m->sched;
  /* Waiting in the scheduler, or on the run queue for a free instance. */
  return s != NULL ? s->queued + s->back->queued(m) : 0;
}

static int sched_sequences(const ifd_model_t *m, uint64_t *active,
                           uint64_t *backlog) {
  const ifd__sched_t *s = m->sched;
  if (s == NULL || s->kind != &ifd__sequence_kind) return -1;
  return ifd__sequence_counts(s, active, backlog);
}

static int sched_holds_sequence(const ifd_model_t *m,
                                const ifd_request_t *req) {
  const ifd__sched_t *s = m->sched;
  if (s == NULL || s->kind != &ifd__sequence_kind) return 0;
  return ifd__sequence_holds(s, req);
}

static void sched_cancel(ifd_model_t *m, ifd_request_t *req) {
  ifd__sched_t *s = m->sched;
  if (s != NULL && s->kind->cancel != NULL) s->kind->cancel(s, req);
}

/* Triton's words for a RESCHEDULE release that the model cannot take (the
 * outermost release callback of its InferenceRequest). */
static int not_reschedulable(ifd_errmsg_t *err) {
  return ifd_errf(err, IFD_EINVAL,
                  "Request is released with "
                  "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model "
                  "is not configured to handle such a flag.");
}

static int sched_reschedule(ifd_model_t *m, ifd_request_t *req,
                            ifd_errmsg_t *err) {
  ifd__sched_t *s = m->sched;
  if (s == NULL)
    return ifd_errf(err, IFD_EUNAVAIL, "the model is being unloaded");
  if (s->kind->reschedule == NULL) return not_reschedulable(err);
  return s->kind->reschedule(s, req, err);
}

static void sched_released(ifd_model_t *m, ifd_request_t *req) {
  ifd__sched_t *s = m->sched;
  if (s != NULL && s->kind->released != NULL) s->kind->released(s, req);
}

static const ifd_model_ops_t ops = {
    .reschedule = sched_reschedule,
    .released = sched_released,
    .cancel = sched_cancel,
    .queued = sched_queued,
    .load = sched_load,
    .unload = sched_unload,
    .submit = sched_submit,
    .stop = sched_stop,
    .pending = sched_pending,
    .sequences = sched_sequences,
    .holds_sequence = sched_holds_sequence,
    .deadlocks = ifd_backend_bls_deadlocks,
};

const ifd_model_ops_t *ifd_sched_model_ops(void) {
  return &ops;
}
