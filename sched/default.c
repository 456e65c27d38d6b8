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
#include "core/log.h"
#include "core/model.h"
#include "sched/internal.h"
#include "sched/sched.h"

/* ---- shared instance bookkeeping ------------------------------------------
 */

int ifd__sched_dispatch(ifd__sched_t *s, ifd_request_t **reqs, uint32_t n) {
  uint32_t idx = s->idle[--s->n_idle];
  int rc = ifd_backend_execute(s->model, idx, reqs, n);
  if (rc < 0) {
    s->idle[s->n_idle++] = idx;
    return rc;
  }
  s->running[idx] = n;
  s->executing += n;
  return 0;
}

void ifd__sched_free_base(ifd__sched_t *s) {
  s->model->sched = NULL;
  free(s->idle);
  free(s->running);
  free(s);
}

static void on_idle(ifd_model_t *m, uint32_t idx, void *arg) {
  ifd__sched_t *s = arg;
  (void)m;
  s->executing -= s->running[idx];
  s->running[idx] = 0;
  s->idle[s->n_idle++] = idx;
  s->kind->idle(s);
}

/* ---- the default scheduler ------------------------------------------------
 */

typedef struct fifo {
  ifd_request_t *head; /* queued requests, linked through req->next */
  ifd_request_t *tail;
} fifo_t;

static int default_submit(ifd__sched_t *s, ifd_request_t *req,
                          ifd_errmsg_t *err) {
  fifo_t *q = s->impl;
  if (s->n_idle > 0) {
    int rc = ifd__sched_dispatch(s, &req, 1);
    if (rc == 0) return 0;
    return ifd_errf(err, rc, "cannot dispatch the request: %s",
                    ifd_strerror(rc));
  }
  req->next = NULL;
  if (q->tail != NULL)
    q->tail->next = req;
  else
    q->head = req;
  q->tail = req;
  s->queued++;
  return 0;
}

static void default_idle(ifd__sched_t *s) {
  fifo_t *q = s->impl;
  while (q->head != NULL && s->n_idle > 0) {
    ifd_request_t *req = q->head;
    q->head = req->next;
    if (q->head == NULL) q->tail = NULL;
    req->next = NULL;
    s->queued--;
    if (ifd__sched_dispatch(s, &req, 1) < 0)
      ifd_request_abort(req, IFD_ENOMEM,
                        "out of memory dispatching the request");
  }
}

static void default_stop(ifd__sched_t *s) {
  fifo_t *q = s->impl;
  while (q->head != NULL) {
    ifd_request_t *req = q->head;
    q->head = req->next;
    req->next = NULL;
    s->queued--;
    ifd_request_abort(req, IFD_EUNAVAIL, "the model is being unloaded");
  }
  q->tail = NULL;
}

static void default_destroy(ifd__sched_t *s) {
  free(s->impl);
  ifd__sched_free_base(s);
}

static const ifd__sched_kind_t default_kind = {default_submit, default_idle,
                                               default_stop, default_destroy};

/* ---- model operations -----------------------------------------------------
 */

static int sched_load(ifd_model_t *m, ifd_errmsg_t *err) {
  ifd__sched_t *s = calloc(1, sizeof(*s));
  uint32_t i;
  int rc;

  if (s == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  s->model = m;
  rc = ifd_backend_model_load(m, on_idle, s, err);
  if (rc < 0) {
    free(s);
    return rc;
  }
  /* After the backend's ModelInitialize: it may have completed the config
   * (auto-complete), which decides the scheduler kind. */
  s->n_instances = ifd_backend_instance_count(m);
  s->idle = calloc(s->n_instances, sizeof(*s->idle));
  s->running = calloc(s->n_instances, sizeof(*s->running));
  if (s->idle == NULL || s->running == NULL) {
    rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
    goto out_unload;
  }
  /* Pushed in reverse so instance 0 is taken first. */
  for (i = 0; i < s->n_instances; i++) s->idle[i] = s->n_instances - 1 - i;
  s->n_idle = s->n_instances;
  if (m->config->dynamic_batching != NULL && m->config->max_batch_size > 0) {
    s->kind = &ifd__dynamic_kind;
    rc = ifd__dynamic_init(s, err);
  } else {
    s->kind = &default_kind;
    s->impl = calloc(1, sizeof(fifo_t));
    rc = s->impl != NULL ? 0 : ifd_errf(err, IFD_ENOMEM, "out of memory");
  }
  if (rc < 0) goto out_unload;
  m->sched = s;
  return 0;

out_unload:
  ifd_backend_model_unload(m, NULL, NULL);
  free(s->impl);
  free(s->idle);
  free(s->running);
  free(s);
  return rc;
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
  ifd_backend_model_unload(m, sched_freed, m->sched);
}

static uint64_t sched_pending(const ifd_model_t *m) {
  const ifd__sched_t *s = m->sched;
  return s != NULL ? s->queued + s->executing : 0;
}

static uint64_t sched_queued(const ifd_model_t *m) {
  const ifd__sched_t *s = m->sched;
  return s != NULL ? s->queued : 0;
}

static const ifd_model_ops_t ops = {
    .queued = sched_queued,
    .load = sched_load,
    .unload = sched_unload,
    .submit = sched_submit,
    .stop = sched_stop,
    .pending = sched_pending,
};

const ifd_model_ops_t *ifd_sched_model_ops(void) {
  return &ops;
}
