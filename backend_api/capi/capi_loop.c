/*
 * backend_api/capi/capi_loop.c - how the in-process API reaches the loop.
 *
 * The TRITONSERVER_* functions of the in-process API are called from any
 * thread: an application's, a backend's instance thread (BLS), or the loop
 * itself (a response callback). Loop-owned state is never touched from
 * another thread, so a call posts an event on the server's completion queue
 * and, when it must answer synchronously, sleeps on its own condition
 * variable until the loop has answered. On the loop thread the work runs
 * inline instead (waiting there would wait for ourselves).
 */
#include "backend_api/internal.h"
#include "base/check.h"

#include <pthread.h>
#include <stdatomic.h>

struct ifd_metrics *ifd__capi_metrics(ifd_server_t *s, int *enabled) {
  const ifd__capi_host_t *h = ifd_server_host(s);
  /* inferd's executable: its gauges belong to its metrics service. */
  if (h == NULL) {
    *enabled = 1;
    return NULL;
  }
  *enabled = h->metrics_on;
  return h->metrics;
}

int ifd__capi_open(TRITONSERVER_Server *server) {
  const ifd__capi_host_t *h = ifd_server_host(SRV(server));
  return h == NULL || !atomic_load(&h->closed);
}

TRITONSERVER_Error *ifd__capi_post(TRITONSERVER_Server *server,
                                   ifd_event_t *ev) {
  ifd__capi_host_t *h = ifd_server_host(SRV(server));

  /* Announced before `closed` is read: TRITONSERVER_ServerStop sets closed,
   * then waits for posting to drop to 0 before it queues its own event, so
   * a post that saw the server open lands before the shutdown begins. */
  if (h != NULL) atomic_fetch_add(&h->posting, 1);
  /* A backend's execute (BLS) still posts while the stop drains: its
   * requests are part of work accepted before the stop, and the loop runs
   * until ServerDelete, after every instance thread has ended. */
  if (h != NULL && atomic_load(&h->closed) &&
      ifd__instance_current(NULL, NULL) == NULL) {
    atomic_fetch_sub(&h->posting, 1);
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE,
                                 "the server is stopped");
  }
  ifd_evq_push(ifd_server_evq(SRV(server)), ev);
  if (h != NULL) atomic_fetch_sub(&h->posting, 1);
  return NULL;
}

static void run_call(ifd_event_t *ev) {
  ifd__capi_call_t *c = (ifd__capi_call_t *)ev; /* ev is first */
  IFD_ASSERT(ifd_server_on_loop(c->server));
  c->fn(c);
}

TRITONSERVER_Error *ifd__capi_run(TRITONSERVER_Server *server,
                                  ifd__capi_call_t *c) {
  TRITONSERVER_Error *err;
  c->server = SRV(server);
  c->err = NULL;
  c->done = 0;
  if (ifd_server_on_loop(SRV(server))) {
    c->on_loop = 1;
    c->fn(c);
    /* fn must finish inline on the loop (see ifd__capi_call_t.fn). */
    IFD_ASSERT(c->done);
    return c->err;
  }
  c->on_loop = 0;
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  c->ev.fn = run_call;
  err = ifd__capi_post(server, &c->ev);
  if (err == NULL) {
    pthread_mutex_lock(&c->mu);
    while (!c->done) pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    err = c->err;
  }
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  return err;
}

void ifd__capi_call_done(ifd__capi_call_t *c, TRITONSERVER_Error *err) {
  IFD_ASSERT(!c->done); /* once per call */
  c->err = err;
  if (c->on_loop) {
    c->done = 1;
    return;
  }
  /* The waiter may free `c` as soon as it sees done: signal under the lock
   * and touch nothing after unlocking. */
  pthread_mutex_lock(&c->mu);
  c->done = 1;
  pthread_cond_signal(&c->cv);
  pthread_mutex_unlock(&c->mu);
}
