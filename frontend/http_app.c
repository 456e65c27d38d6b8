/*
 * frontend/http_app.c - one KServe v2 HTTP listener (ifd_http_t): builds
 * net/'s HTTP/1.1 transport with this front end's handler table, and keeps
 * what the routes read of their listener (server, metrics, restricted
 * APIs, cloud endpoint, SageMaker's multi-model endpoint).
 *
 * The handler table: dispatch hands each message to the routes
 * (http_routes.c); orphan keeps a slot whose work is in flight when its
 * connection closes (its request is cancelled, its answer dropped when it
 * comes); release frees the request and response a slot holds.
 */
#include <stdlib.h>
#include <string.h>

#include "core/infer.h"
#include "core/shm.h"
#include "frontend/internal.h"
#include "frontend/status.h"
#include "net/restrict.h"

struct ifd_http {
  ifd_http1_t *t;              /* owned: the transport; frees itself on stop */
  uv_loop_t *loop;             /* borrowed */
  ifd_server_t *server;        /* borrowed: outlives the front end */
  uint64_t json_offload_bytes; /* copied into every slot */
  int metrics_only;            /* the metrics listener */
  const struct ifd_metrics *metrics;  /* borrowed: outlives the front end */
  const ifd_restrict_t *restrict_api; /* borrowed: outlives the front end;
                                         NULL when nothing is restricted */
  const ifd_http_cloud_t *cloud;      /* borrowed: a cloud endpoint, or NULL */
  int overload_429;                   /* IFD_EOVERLOADED: 429, not 503 */
  struct ifd_mme *mme; /* owned (a reference): SageMaker's multi-model
                          endpoint (frontend/http_mme.c); NULL until used */
  void (*done)(void *arg);
  void *done_arg; /* borrowed: the caller's */
};

struct ifd_mme **ifd__http_mme_ref(ifd_http_t *h) {
  return &h->mme;
}

uv_loop_t *ifd__http_loop(const ifd_http_t *h) {
  return h->loop;
}

const struct ifd_restrict *ifd__http_restrict(const ifd_http_t *h) {
  return h->restrict_api;
}

ifd_server_t *ifd__http_server(const ifd_http_t *h) {
  return h->server;
}

ifd_http1_t *ifd__http_transport(const ifd_http_t *h) {
  return h->t;
}

const ifd_http_cloud_t *ifd__http_cloud(const ifd_http_t *h) {
  return h->cloud;
}

const struct ifd_metrics *ifd__http_metrics(const ifd_http_t *h,
                                            int *metrics_only) {
  *metrics_only = h->metrics_only;
  return h->metrics;
}

int ifd__http_slot_status(const ifd_http_slot_t *s, int code) {
  const ifd_http_t *h = ifd_http1_slot_app(&s->t);

  if (code == IFD_EOVERLOADED && h != NULL && h->overload_429) return 429;
  return ifd_http_status(code);
}

/* ---- the handler table --------------------------------------------------- */

static void on_dispatch(void *app, ifd_http1_slot_t *t, ifd_http_msg_t *msg) {
  ifd_http_t *h = app;
  ifd_http_slot_t *s = (ifd_http_slot_t *)t;

  s->json_offload = h->json_offload_bytes;
  ifd__http_dispatch(h, s, msg);
}

static int on_orphan(ifd_http1_slot_t *t) {
  ifd_http_slot_t *s = (ifd_http_slot_t *)t;

  if (s->load != NULL) { /* a model load's answer: no longer wanted */
    ifd_load_call_forget(s->load);
    s->load = NULL;
  }
  if (s->shm != NULL) { /* a shared-memory (un)register's answer */
    ifd_shm_call_forget(s->shm);
    s->shm = NULL;
  }
  if (s->req == NULL || s->answered) return 0;
  /* An orphan: its response callback frees it. */
  if (s->job != NULL)
    ifd__http_infer_cancel(s);
  else
    /* Submitted: the client will never read its answer, so the request is
     * cancelled (a queued one is dropped and answered at once, which frees
     * the orphan: `s` is not touched again). */
    ifd_request_cancel(s->req);
  return 1;
}

static void on_release(ifd_http1_slot_t *t) {
  ifd_http_slot_t *s = (ifd_http_slot_t *)t;

  if (s->resp != NULL) ifd_response_free(s->resp);
  if (s->req != NULL) ifd_request_unref(s->req);
  s->resp = NULL;
  s->req = NULL;
}

static const ifd_http1_handlers_t handlers = {
    .slot_size = sizeof(ifd_http_slot_t),
    .dispatch = on_dispatch,
    .orphan = on_orphan,
    .release = on_release,
};

void ifd__http_slot_free(ifd_http_slot_t *s) {
  if (s->t.hd == NULL) on_release(&s->t); /* a slot made by hand */
  ifd_http1_slot_free(&s->t);
}

/* ---- start and stop ------------------------------------------------------ */

int ifd_http_start(uv_loop_t *loop, ifd_server_t *server,
                   const ifd_http_opts_t *opts, ifd_http_t **out,
                   ifd_errmsg_t *err) {
  ifd_http1_opts_t t;
  int rc;
  ifd_http_t *h = calloc(1, sizeof(*h));

  if (h == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  h->loop = loop;
  h->server = server;
  h->metrics_only = opts->metrics_only;
  h->metrics = opts->metrics;
  h->restrict_api =
      opts->restrict_api != NULL && opts->restrict_api->n_rules != 0
          ? opts->restrict_api
          : NULL;
  h->cloud = opts->cloud;
  h->overload_429 = opts->overload_429;
  h->json_offload_bytes = opts->json_offload_bytes != 0
                              ? opts->json_offload_bytes
                              : IFD_HTTP_DEFAULT_JSON_OFFLOAD_BYTES;

  memset(&t, 0, sizeof(t));
  t.host = opts->host;
  t.unix_perm = opts->unix_perm;
  t.port = opts->port;
  t.max_input_size = opts->max_input_size;
  t.body_prealloc_max = opts->body_prealloc_max;
  t.max_connections = opts->max_connections;
  t.reuse_port = opts->reuse_port;
  t.retry_after_secs = opts->retry_after_secs;
  t.forward_headers = opts->forward_headers;
  t.restrict_api = h->restrict_api;
  t.tls = opts->tls;
  t.max_header_bytes = opts->max_header_bytes;
  t.max_headers = opts->max_headers;
  t.max_pipeline = opts->max_pipeline;
  t.header_timeout_ms = opts->header_timeout_ms;
  t.body_timeout_ms = opts->body_timeout_ms;
  t.idle_timeout_ms = opts->idle_timeout_ms;
  t.metrics_listener = opts->metrics_only;
  t.cloud_headers = opts->cloud != NULL;
  t.handlers = &handlers;
  t.app = h;
  rc = ifd_http1_start(loop, &t, &h->t, err);
  if (rc != 0) { /* the transport calls no handler: h is unused */
    free(h);
    return rc;
  }
  *out = h;
  return 0;
}

int ifd_http_port(const ifd_http_t *h) {
  return ifd_http1_port(h->t);
}

/* The transport is gone (every connection closed): the multi-model
 * endpoint stops waiting, then the caller hears of it. */
static void on_stopped(void *arg) {
  ifd_http_t *h = arg;
  void (*done)(void *) = h->done;
  void *done_arg = h->done_arg;

  ifd__http_mme_close(h->mme);
  free(h);
  if (done != NULL) done(done_arg);
}

void ifd_http_stop(ifd_http_t *h, uint64_t deadline_ms, void (*done)(void *arg),
                   void *arg) {
  h->done = done;
  h->done_arg = arg;
  ifd_http1_stop(h->t, deadline_ms, on_stopped, h);
}

void ifd_http_drained(ifd_http_t *h) {
  ifd_http1_drained(h->t);
}
