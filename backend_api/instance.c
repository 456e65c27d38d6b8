/*
 * backend_api/instance.c - one thread per model instance.
 *
 * Each instance thread runs TRITONBACKEND_ModelInstanceInitialize on itself
 * (so thread-bound resources such as a CUDA stream live there), then waits on
 * its mailbox for a batch, runs TRITONBACKEND_ModelInstanceExecute, and
 * pushes an idle event to the loop. The mailbox holds at most one batch: the
 * scheduler only gives work to an instance it knows is idle. Stopping lets
 * the current execute finish, then finalizes the instance on its thread.
 */
#include <stdlib.h>
#include <string.h>

#include "backend_api/internal.h"
#include "core/log.h"
#include "core/server.h"

static void on_idle(ifd_event_t *ev) {
  TRITONBACKEND_ModelInstance *in =
      (TRITONBACKEND_ModelInstance *)((char *)ev -
                                      offsetof(TRITONBACKEND_ModelInstance,
                                               idle_ev));
  TRITONBACKEND_Model *bm = in->model;
  ifd__instance_flush_reports(in);
  if (!bm->unloading && bm->idle != NULL)
    bm->idle(bm->model, in->index, bm->idle_arg);
}

/* An execute that returns an error leaves its requests to the server, as
 * Triton's contract says: each gets an error response and is released. */
static void fail_batch(ifd_request_t **reqs, uint32_t n,
                       TRITONSERVER_Error *e) {
  const char *msg = TRITONSERVER_ErrorMessage(e);
  int code = ifd__code_from_class(TRITONSERVER_ErrorCode(e));
  uint32_t i;
  for (i = 0; i < n; i++) {
    ifd_response_t *resp = ifd_response_new(reqs[i]);
    if (resp != NULL) ifd_response_send(resp, IFD_RESPONSE_FINAL, code, msg);
    ifd_request_release(reqs[i], TRITONSERVER_REQUEST_RELEASE_ALL);
  }
  TRITONSERVER_ErrorDelete(e);
}

static void run_batch(TRITONBACKEND_ModelInstance *in, ifd_request_t **reqs,
                      uint32_t n) {
  TRITONBACKEND_Backend *b = in->model->backend;
  TRITONSERVER_Error *e;
  uint64_t now = ifd_now_ns();
  uint32_t i;
  for (i = 0; i < n; i++) reqs[i]->t_exec_start = now;
  e = b->execute(in, (TRITONBACKEND_Request **)reqs, n);
  if (e != NULL) {
    IFD_VERBOSE("execute on '%s' failed: %s", in->name,
                TRITONSERVER_ErrorMessage(e));
    fail_batch(reqs, n, e);
  }
}

static void *instance_main(void *arg) {
  TRITONBACKEND_ModelInstance *in = arg;
  TRITONBACKEND_Backend *b = in->model->backend;
  TRITONSERVER_Error *e = NULL;

  if (b->inst_init != NULL) e = b->inst_init(in);
  pthread_mutex_lock(&in->mu);
  in->init_state = e == NULL ? 1 : -1;
  in->init_err = e;
  pthread_cond_broadcast(&in->cv);
  pthread_mutex_unlock(&in->mu);
  if (e != NULL) return NULL;

  for (;;) {
    ifd_request_t **job;
    uint32_t n;
    pthread_mutex_lock(&in->mu);
    while (!in->has_job && !in->stop) {
      in->waiting = 1;
      pthread_cond_wait(&in->cv, &in->mu);
      in->waiting = 0;
    }
    if (!in->has_job) {
      pthread_mutex_unlock(&in->mu);
      break;
    }
    job = in->job;
    n = in->n_job;
    pthread_mutex_unlock(&in->mu);

    /* The job array is only rewritten by the loop after the idle event, so
     * it is read here without the lock. */
    run_batch(in, job, n);
    pthread_mutex_lock(&in->mu);
    in->has_job = 0;
    pthread_mutex_unlock(&in->mu);
    in->idle_ev.fn = on_idle;
    ifd_evq_push(ifd_server_evq(in->model->model->server), &in->idle_ev);
  }

  if (b->inst_fini != NULL) {
    e = b->inst_fini(in);
    if (e != NULL) {
      IFD_ERROR("TRITONBACKEND_ModelInstanceFinalize of '%s' failed: %s",
                in->name, TRITONSERVER_ErrorMessage(e));
      TRITONSERVER_ErrorDelete(e);
    }
  }
  return NULL;
}

int ifd__instance_report_batch(TRITONBACKEND_ModelInstance *in,
                               const ifd__batch_report_t *r) {
  int rc = 0;
  pthread_mutex_lock(&in->mu);
  if (in->n_reports == in->cap_reports) {
    uint32_t ncap = in->cap_reports ? in->cap_reports * 2 : 4;
    ifd__batch_report_t *nr = realloc(in->reports, ncap * sizeof(*nr));
    if (nr == NULL) {
      rc = IFD_ENOMEM;
      goto out_unlock;
    }
    in->reports = nr;
    in->cap_reports = ncap;
  }
  in->reports[in->n_reports++] = *r;
out_unlock:
  pthread_mutex_unlock(&in->mu);
  return rc;
}

void ifd__instance_flush_reports(TRITONBACKEND_ModelInstance *in) {
  ifd_model_stats_t *st = &in->model->model->stats;
  ifd__batch_report_t buf[8];
  uint32_t i, n;
  /* Copy a few at a time so the lock is held only for a memcpy. */
  do {
    pthread_mutex_lock(&in->mu);
    n = in->n_reports < 8 ? in->n_reports : 8;
    if (n > 0) memcpy(buf, in->reports + in->n_reports - n, n * sizeof(*buf));
    in->n_reports -= n;
    pthread_mutex_unlock(&in->mu);
    for (i = 0; i < n; i++)
      ifd_stats_batch(st, buf[i].batch_size, buf[i].exec_start,
                      buf[i].compute_start, buf[i].compute_end,
                      buf[i].exec_end);
  } while (n > 0);
}

int ifd__instances_start(TRITONBACKEND_Model *bm, ifd_errmsg_t *err) {
  uint32_t i;
  int rc = 0;

  for (i = 0; i < bm->n_instances; i++) {
    TRITONBACKEND_ModelInstance *in = &bm->instances[i];
    if (pthread_create(&in->thread, NULL, instance_main, in) != 0)
      return ifd_errf(err, IFD_ENOMEM, "cannot start a thread for '%s'",
                      in->name);
    in->started = 1;
  }
  /* Initialize instances in parallel, then collect every result. */
  for (i = 0; i < bm->n_instances; i++) {
    TRITONBACKEND_ModelInstance *in = &bm->instances[i];
    pthread_mutex_lock(&in->mu);
    while (in->init_state == 0) pthread_cond_wait(&in->cv, &in->mu);
    if (in->init_state < 0 && rc == 0) {
      rc = ifd__take_error(in->init_err,
                           "TRITONBACKEND_ModelInstanceInitialize failed", err);
      in->init_err = NULL;
    }
    pthread_mutex_unlock(&in->mu);
  }
  return rc;
}

void ifd__instances_stop(TRITONBACKEND_Model *bm) {
  uint32_t i;
  for (i = 0; i < bm->n_instances; i++) {
    TRITONBACKEND_ModelInstance *in = &bm->instances[i];
    if (!in->started) continue;
    pthread_mutex_lock(&in->mu);
    in->stop = 1;
    pthread_cond_signal(&in->cv);
    pthread_mutex_unlock(&in->mu);
  }
  for (i = 0; i < bm->n_instances; i++) {
    TRITONBACKEND_ModelInstance *in = &bm->instances[i];
    if (!in->started) continue;
    pthread_join(in->thread, NULL);
    in->started = 0;
  }
}

int ifd_backend_execute(ifd_model_t *m, uint32_t index, ifd_request_t **reqs,
                        uint32_t n) {
  TRITONBACKEND_Model *bm = m->backend_model;
  TRITONBACKEND_ModelInstance *in = &bm->instances[index];
  uint32_t i;
  int wake;

  pthread_mutex_lock(&in->mu);
  if (in->has_job) {
    pthread_mutex_unlock(&in->mu);
    IFD_ERROR("instance '%s' given a batch while busy", in->name);
    return IFD_EINTERNAL;
  }
  if (n > in->cap_job) {
    ifd_request_t **nj = realloc(in->job, n * sizeof(*nj));
    if (nj == NULL) {
      pthread_mutex_unlock(&in->mu);
      return IFD_ENOMEM;
    }
    in->job = nj;
    in->cap_job = n;
  }
  for (i = 0; i < n; i++) {
    in->job[i] = reqs[i];
    reqs[i]->state = IFD_REQ_EXECUTING;
  }
  in->n_job = n;
  in->has_job = 1;
  wake = in->waiting;
  pthread_mutex_unlock(&in->mu);
  /* Signalled after unlocking, and only when the thread sleeps: a thread
   * woken while the mutex is still held would run, block on it at once,
   * and cost two more context switches per request. */
  if (wake) pthread_cond_signal(&in->cv);
  return 0;
}
