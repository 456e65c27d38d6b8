/*
 * sched/default.c - the default scheduler and the model operations table.
 *
 * The default scheduler is Triton's: each request runs alone (no batching
 * across requests) on the first idle instance, in arrival order; with every
 * instance busy, requests wait in one FIFO queue and the next idle instance
 * takes the head. All of it runs on the loop thread.
 */
#include <stdlib.h>
#include <string.h>

#include "backend_api/backend_api.h"
#include "core/log.h"
#include "core/model.h"
#include "sched/sched.h"

typedef struct sched {
  ifd_model_t *model;  /* borrowed: owns the scheduler */
  ifd_request_t *head; /* FIFO of queued requests (req->next) */
  ifd_request_t *tail;
  uint64_t queued;
  uint32_t n_instances;
  uint32_t *idle; /* owned: stack of idle instance indexes */
  uint32_t n_idle;
  uint32_t *running; /* owned: requests executing per instance */
  uint64_t executing;
} sched_t;

static int dispatch(sched_t *s, uint32_t idx, ifd_request_t *req) {
  int rc = ifd_backend_execute(s->model, idx, &req, 1);
  if (rc < 0) return rc;
  s->running[idx] = 1;
  s->executing++;
  return 0;
}

static void on_idle(ifd_model_t *m, uint32_t idx, void *arg) {
  sched_t *s = arg;
  (void)m;
  s->executing -= s->running[idx];
  s->running[idx] = 0;
  while (s->head != NULL) {
    ifd_request_t *req = s->head;
    s->head = req->next;
    if (s->head == NULL) s->tail = NULL;
    req->next = NULL;
    s->queued--;
    if (dispatch(s, idx, req) == 0) return;
    ifd_request_abort(req, IFD_ENOMEM, "out of memory dispatching the request");
  }
  s->idle[s->n_idle++] = idx;
}

static int sched_submit(ifd_model_t *m, ifd_request_t *req, ifd_errmsg_t *err) {
  sched_t *s = m->sched;
  if (s->n_idle > 0) {
    uint32_t idx = s->idle[--s->n_idle];
    int rc = dispatch(s, idx, req);
    if (rc == 0) return 0;
    s->idle[s->n_idle++] = idx;
    return ifd_errf(err, rc, "cannot dispatch the request: %s",
                    ifd_strerror(rc));
  }
  req->next = NULL;
  if (s->tail != NULL)
    s->tail->next = req;
  else
    s->head = req;
  s->tail = req;
  s->queued++;
  return 0;
}

static int sched_load(ifd_model_t *m, ifd_errmsg_t *err) {
  sched_t *s = calloc(1, sizeof(*s));
  uint32_t i;
  int rc;

  if (s == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  s->model = m;
  rc = ifd_backend_model_load(m, on_idle, s, err);
  if (rc < 0) {
    free(s);
    return rc;
  }
  s->n_instances = ifd_backend_instance_count(m);
  s->idle = calloc(s->n_instances, sizeof(*s->idle));
  s->running = calloc(s->n_instances, sizeof(*s->running));
  if (s->idle == NULL || s->running == NULL) {
    ifd_backend_model_unload(m, NULL, NULL);
    free(s->idle);
    free(s->running);
    free(s);
    return ifd_errf(err, IFD_ENOMEM, "out of memory");
  }
  /* Pushed in reverse so instance 0 is taken first. */
  for (i = 0; i < s->n_instances; i++) s->idle[i] = s->n_instances - 1 - i;
  s->n_idle = s->n_instances;
  m->sched = s;
  return 0;
}

static void sched_stop(ifd_model_t *m) {
  sched_t *s = m->sched;
  while (s->head != NULL) {
    ifd_request_t *req = s->head;
    s->head = req->next;
    req->next = NULL;
    s->queued--;
    ifd_request_abort(req, IFD_EUNAVAIL, "the model is being unloaded");
  }
  s->tail = NULL;
}

static void sched_freed(void *arg) {
  sched_t *s = arg;
  s->model->sched = NULL;
  free(s->idle);
  free(s->running);
  free(s);
}

static void sched_unload(ifd_model_t *m) {
  ifd_backend_model_unload(m, sched_freed, m->sched);
}

static uint64_t sched_pending(const ifd_model_t *m) {
  const sched_t *s = m->sched;
  return s != NULL ? s->queued + s->executing : 0;
}

static const ifd_model_ops_t ops = {
    .load = sched_load,
    .unload = sched_unload,
    .submit = sched_submit,
    .stop = sched_stop,
    .pending = sched_pending,
};

const ifd_model_ops_t *ifd_sched_model_ops(void) {
  return &ops;
}
