/*
 * backend_api/capi_server.c - the in-process server: TRITONSERVER_ServerNew,
 * Stop, Delete, and every TRITONSERVER_Server* query and model control call.
 *
 * A server made here runs the same core as inferd's executable, on a libuv
 * loop and a thread of its own (no HTTP, no gRPC). TRITONSERVER_Server* is
 * the core's ifd_server_t itself; the capi_server_t around it is reached
 * with ifd_server_host(), its first member being the ifd__capi_host_t that
 * capi_loop.c reads. The server of inferd's executable, which backends get
 * from TRITONBACKEND_ModelServer (BLS), has no host: the queries and model
 * control work on it too, but it cannot be stopped, deleted or given an exit
 * timeout through the API (a backend must not stop its host).
 *
 * Life of an embedded server:
 *   ServerNew  the caller's thread starts the loop thread and waits; the
 *              loop thread creates the server, starts metrics sampling and
 *              the start-up loads; once they have ended ServerNew returns
 *              (or, with exit_on_error and a failed model, stops and frees
 *              everything and returns Triton's error).
 *   ServerStop no more calls are posted (ifd__capi_host_t.closed); the loop
 *              drains requests in flight up to the exit timeout, unloads
 *              every model and stops metrics; Stop returns then. The server
 *              object stays valid (IsLive and IsReady answer false).
 *   ServerDelete  stops if needed, then the loop frees the server, its loop
 *              ends, the thread is joined and the object freed.
 *
 * Every query reads loop-owned state, so it runs on the loop through
 * ifd__capi_run (inline when called from the loop itself, a callback), and
 * renders JSON through core/render_json.h, the renderer HTTP uses.
 */
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <uv.h>

#include "backend_api/internal.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/render_json.h"
#include "core/util.h"
#include "cuda/cuda_mem.h"
#include "cuda/gpu.h"
#include "sched/sched.h"

/* The longest the loop spins for expected events before it blocks, as
 * inferd's --loop-spin-us default (core/event.h, "Expected events"). */
#define LOOP_SPIN_NS (30u * 1000u)

#define ERR(code, msg) TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_##code, (msg))

typedef enum phase {
  PHASE_STARTING = 0, /* the start-up loads run */
  PHASE_RUNNING,      /* ServerNew returned the server */
  PHASE_ENDED,        /* the loop ended (a failed start, or Delete) */
} phase_t;

typedef struct capi_server {
  ifd__capi_host_t host; /* first: what ifd_server_host() returns */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  phase_t phase;                 /* guarded by mu */
  int stopped;                   /* guarded by mu: Stop's work has ended */
  TRITONSERVER_Error *start_err; /* guarded by mu: why the start failed */
  uv_thread_t thread;
  uv_loop_t loop;         /* embedded; loop thread only */
  ifd_server_t *srv;      /* owned by the loop thread; set once the loop thread
                             created it, before ServerNew returns */
  ifd_metrics_t *metrics; /* owned: loop thread, until metrics stop */
  const ifd_server_opts_t *so; /* borrowed: ServerNew's, during start only */
  int metrics_on;
  int gpu_metrics;
  uint64_t metrics_interval_ms;
  int exit_on_error;
  atomic_uint exit_timeout_secs; /* ServerSetExitTimeout, any thread */
  int stopping;                  /* loop thread: the shutdown began */
  int stop_parts;                /* loop thread: shutdown steps still running */
  int free_at_end;     /* loop thread: free the server once stopped (a failed
                          start) */
  ifd_event_t stop_ev; /* embedded: pushed once, by the first Stop */
  ifd_event_t free_ev; /* embedded: pushed once, by Delete */
} capi_server_t;

static capi_server_t *host_of(TRITONSERVER_Server *server) {
  return (capi_server_t *)ifd_server_host(SRV(server));
}

/* ---- CUDA pools: once per process, however many servers ----------------- */

static pthread_mutex_t cuda_mu = PTHREAD_MUTEX_INITIALIZER;
static int cuda_users; /* guarded by cuda_mu */

static void cuda_acquire(const ifd_cuda_mem_opts_t *o, int gpu_count) {
  pthread_mutex_lock(&cuda_mu);
  /* The first server's pool sizes hold until the last server is gone. */
  if (cuda_users++ == 0) ifd_cuda_mem_init(o, gpu_count);
  pthread_mutex_unlock(&cuda_mu);
}

static void cuda_release(void) {
  pthread_mutex_lock(&cuda_mu);
  if (--cuda_users == 0) ifd_cuda_mem_fini();
  pthread_mutex_unlock(&cuda_mu);
}

/* ---- the loop thread ------------------------------------------------------
 */

static void set_phase(capi_server_t *cs, phase_t phase) {
  pthread_mutex_lock(&cs->mu);
  cs->phase = phase;
  pthread_cond_broadcast(&cs->cv);
  pthread_mutex_unlock(&cs->mu);
}

static void stop_part_done(capi_server_t *cs) {
  if (--cs->stop_parts > 0) return;
  if (cs->free_at_end) {
    /* A failed start: nobody holds the server; its handles close and
     * uv_run returns. */
    ifd_server_free(cs->srv);
    return;
  }
  pthread_mutex_lock(&cs->mu);
  cs->stopped = 1;
  pthread_cond_broadcast(&cs->cv);
  pthread_mutex_unlock(&cs->mu);
}

static void on_unloaded(ifd_server_t *s, void *arg) {
  (void)s;
  stop_part_done(arg);
}

static void on_drained(ifd_server_t *s, uint64_t left, void *arg) {
  if (left > 0)
    IFD_WARN("exit timeout expired with %llu request(s) in flight",
             (unsigned long long)left);
  ifd_server_unload_all(s, on_unloaded, arg);
}

static void on_metrics_stopped(void *arg) {
  capi_server_t *cs = arg;
  cs->metrics = NULL;
  stop_part_done(cs);
}

/* Drains, unloads every model and stops metrics (loop thread, once). */
static void begin_stop(capi_server_t *cs) {
  uint64_t deadline;

  if (cs->stopping) return;
  cs->stopping = 1;
  cs->stop_parts = 1; /* the drain and unload */
  if (cs->metrics != NULL) {
    cs->stop_parts++;
    ifd_metrics_stop(cs->metrics, on_metrics_stopped, cs);
  }
  uv_update_time(&cs->loop);
  deadline =
      uv_now(&cs->loop) + (uint64_t)atomic_load(&cs->exit_timeout_secs) * 1000u;
  ifd_server_drain(cs->srv, deadline, on_drained, cs);
}

static void on_stop_ev(ifd_event_t *ev) {
  begin_stop(ifd_container_of(ev, capi_server_t, stop_ev));
}

static void on_free_ev(ifd_event_t *ev) {
  capi_server_t *cs = ifd_container_of(ev, capi_server_t, free_ev);
  ifd_server_free(cs->srv);
}

static void on_loaded(ifd_server_t *s, int failed, void *arg) {
  capi_server_t *cs = arg;
  (void)s;
  if (failed > 0 && cs->exit_on_error) {
    IFD_ERROR("%d model(s) failed to load and exit on error is set", failed);
    pthread_mutex_lock(&cs->mu);
    cs->start_err = ERR(INTERNAL, "failed to load all models");
    pthread_mutex_unlock(&cs->mu);
    atomic_store(&cs->host.closed, 1);
    cs->free_at_end = 1;
    begin_stop(cs);
    return;
  }
  IFD_INFO("inferd %s ready in process (%s build)", IFD_SERVER_VERSION,
           ifd_gpu_build());
  set_phase(cs, PHASE_RUNNING);
}

static void loop_main(void *arg) {
  capi_server_t *cs = arg;
  ifd_errmsg_t err;
  int rc;

  ifd_errclear(&err);
  if (uv_loop_init(&cs->loop) != 0) {
    pthread_mutex_lock(&cs->mu);
    cs->start_err = ERR(INTERNAL, "cannot create the event loop");
    pthread_mutex_unlock(&cs->mu);
    set_phase(cs, PHASE_ENDED);
    return;
  }
  if (ifd_server_new(&cs->loop, cs->so, &cs->srv, &err) < 0) {
    pthread_mutex_lock(&cs->mu);
    cs->start_err = ifd__error_from(err.code != 0 ? err.code : IFD_ENOMEM,
                                    err.text[0] != '\0' ? err.text : NULL);
    pthread_mutex_unlock(&cs->mu);
    uv_loop_close(&cs->loop);
    set_phase(cs, PHASE_ENDED);
    return;
  }
  ifd_server_set_host(cs->srv, &cs->host);
  ifd_evq_set_spin(ifd_server_evq(cs->srv), LOOP_SPIN_NS);
  if (cs->metrics_on) {
    if (ifd_metrics_start(cs->srv, cs->metrics_interval_ms, &cs->metrics) < 0)
      cs->metrics = NULL; /* ServerMetrics then renders no gauges */
    else
      ifd_metrics_allow_gpu(cs->metrics, cs->gpu_metrics);
  }
  ifd_server_start(cs->srv, on_loaded, cs);
  uv_run(&cs->loop, UV_RUN_DEFAULT);
  rc = uv_loop_close(&cs->loop);
  if (rc != 0)
    IFD_WARN("in-process server loop closed with handles open: %s",
             uv_strerror(rc));
  set_phase(cs, PHASE_ENDED);
}

/* ---- new, stop, delete ----------------------------------------------------
 */

static void capi_free(capi_server_t *cs) {
  pthread_cond_destroy(&cs->cv);
  pthread_mutex_destroy(&cs->mu);
  free(cs);
}

TRITONSERVER_Error *TRITONSERVER_ServerNew(
    TRITONSERVER_Server **server, TRITONSERVER_ServerOptions *options) {
  char backend_dir[PATH_MAX];
  ifd_server_opts_t so;
  capi_server_t *cs;
  TRITONSERVER_Error *err;

  if (server == NULL || options == NULL)
    return ERR(INVALID_ARG, "server and options must not be NULL");
  *server = NULL;
  if (options->n_repos == 0)
    return ERR(INVALID_ARG, "no model repository path was set");
  if (options->n_startup_models > 0 &&
      options->control_mode != IFD_CONTROL_EXPLICIT)
    return ERR(INVALID_ARG,
               "startup models can only be given in explicit model control "
               "mode");

  /* Logging is the process's, as in Triton: the last server made sets it. */
  ifd_log_set_verbose(options->log_verbose);
  ifd_log_set_enabled(IFD_LOG_INFO, options->log_info);
  ifd_log_set_enabled(IFD_LOG_WARN, options->log_warn);
  ifd_log_set_enabled(IFD_LOG_ERROR, options->log_error);

  memset(&so, 0, sizeof(so));
  so.repos = (const char *const *)options->repos;
  so.n_repos = options->n_repos;
  so.control_mode = options->control_mode;
  so.load_models = (const char *const *)options->startup_models;
  so.n_load_models = options->n_startup_models;
  /* Triton polls only when the application calls
   * TRITONSERVER_ServerPollModelRepository: no timer. */
  so.poll_secs = 0;
  if (options->backend_dir != NULL) {
    so.backend_dir = options->backend_dir;
  } else if (ifd__capi_default_backend_dir(backend_dir, sizeof(backend_dir)) ==
             0) {
    so.backend_dir = backend_dir;
  }
  so.strict_config = options->strict_config;
  so.exit_on_error = options->exit_on_error;
  so.strict_readiness = options->strict_readiness;
  so.exit_timeout_secs = (int)options->exit_timeout_secs;
  so.histogram_latencies = options->histogram_latencies;
  so.no_counter_latencies = options->no_counter_latencies;
  so.gpu_count = ifd_gpu_count();
  so.ops = ifd_sched_model_ops();

  cs = calloc(1, sizeof(*cs));
  if (cs == NULL) return ERR(INTERNAL, "out of memory");
  pthread_mutex_init(&cs->mu, NULL);
  pthread_cond_init(&cs->cv, NULL);
  cs->so = &so;
  cs->metrics_on = options->metrics;
  cs->gpu_metrics = options->gpu_metrics;
  cs->metrics_interval_ms = options->metrics_interval_ms;
  cs->exit_on_error = options->exit_on_error;
  atomic_init(&cs->exit_timeout_secs, options->exit_timeout_secs);
  atomic_init(&cs->host.closed, 0);
  atomic_init(&cs->host.posting, 0);
  cs->stop_ev.fn = on_stop_ev;
  cs->free_ev.fn = on_free_ev;

  /* Before any model loads; without a GPU there is nothing to set up. */
  cuda_acquire(&options->cuda_mem, so.gpu_count);
  if (uv_thread_create(&cs->thread, loop_main, cs) != 0) {
    cuda_release();
    capi_free(cs);
    return ERR(INTERNAL, "cannot start the server's thread");
  }
  pthread_mutex_lock(&cs->mu);
  while (cs->phase == PHASE_STARTING) pthread_cond_wait(&cs->cv, &cs->mu);
  err = cs->start_err;
  cs->start_err = NULL;
  pthread_mutex_unlock(&cs->mu);
  cs->so = NULL;
  if (err != NULL) {
    /* The loop thread has ended (PHASE_ENDED) or is about to. */
    uv_thread_join(&cs->thread);
    cuda_release();
    capi_free(cs);
    return err;
  }
  *server = (TRITONSERVER_Server *)cs->srv;
  return NULL;
}

static TRITONSERVER_Error *refuse_host(const char *fn) {
  char msg[256];
  snprintf(msg, sizeof(msg),
           "%s: this server belongs to inferd's executable and is not "
           "controlled through the API (a backend must not stop its host)",
           fn);
  return ERR(UNSUPPORTED, msg);
}

TRITONSERVER_Error *TRITONSERVER_ServerStop(TRITONSERVER_Server *server) {
  capi_server_t *cs;

  if (server == NULL) return ERR(INVALID_ARG, "server must not be NULL");
  cs = host_of(server);
  if (cs == NULL) return refuse_host(__func__);
  if (atomic_exchange(&cs->host.closed, 1) == 0) {
    /* Posts that saw the server open land first (capi_loop.c). */
    while (atomic_load(&cs->host.posting) != 0) sched_yield();
    ifd_evq_push(ifd_server_evq(SRV(server)), &cs->stop_ev);
  }
  /* A callback on the loop cannot wait for the loop, nor can a backend's
   * execute wait for a stop that waits for its own request: the stop goes
   * on without them. */
  if (ifd_server_on_loop(SRV(server)) || ifd__instance_current(NULL, NULL))
    return NULL;
  pthread_mutex_lock(&cs->mu);
  while (!cs->stopped) pthread_cond_wait(&cs->cv, &cs->mu);
  pthread_mutex_unlock(&cs->mu);
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerDelete(TRITONSERVER_Server *server) {
  capi_server_t *cs;
  TRITONSERVER_Error *err;

  if (server == NULL) return ERR(INVALID_ARG, "server must not be NULL");
  cs = host_of(server);
  if (cs == NULL) return refuse_host(__func__);
  if (ifd_server_on_loop(SRV(server)) || ifd__instance_current(NULL, NULL))
    return ERR(UNAVAILABLE,
               "TRITONSERVER_ServerDelete: called on a thread of the server "
               "(a callback or a backend's execute); delete it from another "
               "thread");
  err = TRITONSERVER_ServerStop(server);
  if (err != NULL) return err;
  /* Stopped: nothing else is posted, and this is pushed once. */
  ifd_evq_push(ifd_server_evq(SRV(server)), &cs->free_ev);
  uv_thread_join(&cs->thread);
  cuda_release();
  capi_free(cs);
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerSetExitTimeout(
    TRITONSERVER_Server *server, unsigned int timeout) {
  capi_server_t *cs;

  if (server == NULL) return ERR(INVALID_ARG, "server must not be NULL");
  cs = host_of(server);
  if (cs == NULL) return refuse_host(__func__);
  atomic_store(&cs->exit_timeout_secs, timeout);
  return NULL;
}

/* ---- queries: run on the loop ----------------------------------------------
 *
 * Each call fills a query_t on the caller's stack, ifd__capi_run runs its
 * function on the loop (inline when already there) and the caller reads the
 * result once the loop is done with it.
 */

typedef struct query {
  ifd__capi_call_t call; /* first: the loop hands it back */
  const char *name;      /* borrowed: the caller's */
  int64_t version;
  uint32_t flags;
  int unload_dependents;
  const ifd_load_params_t *params; /* borrowed: the caller's */
  int b;                           /* OUT: a yes/no answer */
  uint32_t u32;                    /* OUT: properties */
  char *text;                      /* OUT: owned, rendered JSON or metrics */
  size_t len;
} query_t;

/* The error of a negative IFD code and the message core wrote. */
static TRITONSERVER_Error *error_of(int rc, const ifd_errmsg_t *err) {
  return ifd__error_from(rc, err->text[0] != '\0' ? err->text : NULL);
}

static TRITONSERVER_Error *run(TRITONSERVER_Server *server, query_t *q,
                               void (*fn)(ifd__capi_call_t *c)) {
  q->call.fn = fn;
  q->call.arg = q;
  return ifd__capi_run(server, &q->call);
}

static void done_text(query_t *q) {
  ifd__capi_call_done(&q->call,
                      q->text != NULL ? NULL : ERR(INTERNAL, "out of memory"));
}

/* Finds the READY model the query names (loop thread); on failure ends the
 * call with core's error and returns NULL. */
static ifd_model_t *find_model(query_t *q) {
  ifd_model_t *m = NULL;
  ifd_errmsg_t err;
  int rc;

  ifd_errclear(&err);
  rc = ifd_server_find_model(q->call.server, q->name, strlen(q->name),
                             q->version, &m, &err);
  if (rc < 0) {
    ifd__capi_call_done(&q->call, error_of(rc, &err));
    return NULL;
  }
  return m;
}

#define SERVER_CHECK(s)                                                  \
  do {                                                                   \
    if ((s) == NULL) return ERR(INVALID_ARG, "server must not be NULL"); \
  } while (0)

static void live_fn(ifd__capi_call_t *c) {
  query_t *q = c->arg;
  q->b = ifd_server_live(c->server);
  ifd__capi_call_done(c, NULL);
}

TRITONSERVER_Error *TRITONSERVER_ServerIsLive(TRITONSERVER_Server *server,
                                              bool *live) {
  query_t q = {0};
  TRITONSERVER_Error *err;

  SERVER_CHECK(server);
  if (live == NULL) return ERR(INVALID_ARG, "live must not be NULL");
  /* A stopped server is neither live nor ready; it is no error to ask. */
  if (!ifd__capi_open(server)) {
    *live = false;
    return NULL;
  }
  err = run(server, &q, live_fn);
  if (err == NULL) *live = q.b != 0;
  return err;
}

static void ready_fn(ifd__capi_call_t *c) {
  query_t *q = c->arg;
  q->b = ifd_server_ready(c->server);
  ifd__capi_call_done(c, NULL);
}

TRITONSERVER_Error *TRITONSERVER_ServerIsReady(TRITONSERVER_Server *server,
                                               bool *ready) {
  query_t q = {0};
  TRITONSERVER_Error *err;

  SERVER_CHECK(server);
  if (ready == NULL) return ERR(INVALID_ARG, "ready must not be NULL");
  if (!ifd__capi_open(server)) {
    *ready = false;
    return NULL;
  }
  err = run(server, &q, ready_fn);
  if (err == NULL) *ready = q.b != 0;
  return err;
}

static void model_ready_fn(ifd__capi_call_t *c) {
  query_t *q = c->arg;
  q->b =
      ifd_server_model_ready(c->server, q->name, strlen(q->name), q->version);
  ifd__capi_call_done(c, NULL);
}

TRITONSERVER_Error *TRITONSERVER_ServerModelIsReady(TRITONSERVER_Server *server,
                                                    const char *model_name,
                                                    const int64_t model_version,
                                                    bool *ready) {
  query_t q = {0};
  TRITONSERVER_Error *err;

  SERVER_CHECK(server);
  if (model_name == NULL || ready == NULL)
    return ERR(INVALID_ARG, "model_name and ready must not be NULL");
  q.name = model_name;
  q.version = model_version;
  err = run(server, &q, model_ready_fn);
  if (err == NULL) *ready = q.b != 0;
  return err;
}

static void batch_props_fn(ifd__capi_call_t *c) {
  query_t *q = c->arg;
  ifd_model_t *m = find_model(q);
  if (m == NULL) return;
  q->u32 = m->config->max_batch_size > 0 ? TRITONSERVER_BATCH_FIRST_DIM
                                         : TRITONSERVER_BATCH_UNKNOWN;
  ifd__capi_call_done(c, NULL);
}

TRITONSERVER_Error *TRITONSERVER_ServerModelBatchProperties(
    TRITONSERVER_Server *server, const char *model_name,
    const int64_t model_version, uint32_t *flags, void **voidp) {
  query_t q = {0};
  TRITONSERVER_Error *err;

  SERVER_CHECK(server);
  if (model_name == NULL || flags == NULL)
    return ERR(INVALID_ARG, "model_name and flags must not be NULL");
  q.name = model_name;
  q.version = model_version;
  err = run(server, &q, batch_props_fn);
  if (err != NULL) return err;
  *flags = q.u32;
  if (voidp != NULL) *voidp = NULL;
  return NULL;
}

static void txn_props_fn(ifd__capi_call_t *c) {
  query_t *q = c->arg;
  ifd_model_t *m = find_model(q);
  if (m == NULL) return;
  q->u32 = ifd_metrics_decoupled(m) ? TRITONSERVER_TXN_DECOUPLED
                                    : TRITONSERVER_TXN_ONE_TO_ONE;
  ifd__capi_call_done(c, NULL);
}

TRITONSERVER_Error *TRITONSERVER_ServerModelTransactionProperties(
    TRITONSERVER_Server *server, const char *model_name,
    const int64_t model_version, uint32_t *txn_flags, void **voidp) {
  query_t q = {0};
  TRITONSERVER_Error *err;

  SERVER_CHECK(server);
  if (model_name == NULL || txn_flags == NULL)
    return ERR(INVALID_ARG, "model_name and txn_flags must not be NULL");
  q.name = model_name;
  q.version = model_version;
  err = run(server, &q, txn_props_fn);
  if (err != NULL) return err;
  *txn_flags = q.u32;
  if (voidp != NULL) *voidp = NULL;
  return NULL;
}

/* Wraps the rendered text of a finished query in a message. */
static TRITONSERVER_Error *message_of(query_t *q, TRITONSERVER_Message **out) {
  *out = ifd__message_new_owned(q->text, q->len);
  q->text = NULL; /* the message owns it, or it was freed */
  return *out != NULL ? NULL : ERR(INTERNAL, "out of memory");
}

static void server_meta_fn(ifd__capi_call_t *c) {
  query_t *q = c->arg;
  q->text = ifd_render_server_info(ifd_server_metadata(c->server), &q->len);
  done_text(q);
}

TRITONSERVER_Error *TRITONSERVER_ServerMetadata(
    TRITONSERVER_Server *server, TRITONSERVER_Message **server_metadata) {
  query_t q = {0};
  TRITONSERVER_Error *err;

  SERVER_CHECK(server);
  if (server_metadata == NULL)
    return ERR(INVALID_ARG, "server_metadata must not be NULL");
  err = run(server, &q, server_meta_fn);
  return err != NULL ? err : message_of(&q, server_metadata);
}

static void model_meta_fn(ifd__capi_call_t *c) {
  query_t *q = c->arg;
  ifd_model_info_t info;
  ifd_model_t *m = find_model(q);

  if (m == NULL) return;
  if (ifd_server_model_metadata(c->server, m, &info) != 0) {
    ifd__capi_call_done(c, ERR(INTERNAL, "out of memory"));
    return;
  }
  q->text = ifd_render_model_info(&info, &q->len);
  ifd_model_info_free(&info);
  done_text(q);
}

TRITONSERVER_Error *TRITONSERVER_ServerModelMetadata(
    TRITONSERVER_Server *server, const char *model_name,
    const int64_t model_version, TRITONSERVER_Message **model_metadata) {
  query_t q = {0};
  TRITONSERVER_Error *err;

  SERVER_CHECK(server);
  if (model_name == NULL || model_metadata == NULL)
    return ERR(INVALID_ARG, "model_name and model_metadata must not be NULL");
  q.name = model_name;
  q.version = model_version;
  err = run(server, &q, model_meta_fn);
  return err != NULL ? err : message_of(&q, model_metadata);
}

static void stats_fn(ifd__capi_call_t *c) {
  query_t *q = c->arg;
  ifd_stats_entry_t *rows;
  ifd_errmsg_t err;
  size_t n;
  int rc;

  ifd_errclear(&err);
  /* An empty name asks for every model, as in Triton. */
  rc = ifd_server_stats(c->server, q->name[0] != '\0' ? q->name : NULL,
                        strlen(q->name), q->version, &rows, &n, &err);
  if (rc < 0) {
    ifd__capi_call_done(c, error_of(rc, &err));
    return;
  }
  q->text = ifd_render_stats(rows, n, &q->len);
  free(rows);
  done_text(q);
}

TRITONSERVER_Error *TRITONSERVER_ServerModelStatistics(
    TRITONSERVER_Server *server, const char *model_name,
    const int64_t model_version, TRITONSERVER_Message **model_stats) {
  query_t q = {0};
  TRITONSERVER_Error *err;

  SERVER_CHECK(server);
  if (model_name == NULL || model_stats == NULL)
    return ERR(INVALID_ARG, "model_name and model_stats must not be NULL");
  q.name = model_name;
  q.version = model_version;
  err = run(server, &q, stats_fn);
  return err != NULL ? err : message_of(&q, model_stats);
}

static void config_fn(ifd__capi_call_t *c) {
  query_t *q = c->arg;
  ifd_model_t *m = find_model(q);
  if (m == NULL) return;
  q->text = ifd_render_model_config(m, &q->len);
  done_text(q);
}

TRITONSERVER_Error *TRITONSERVER_ServerModelConfig(
    TRITONSERVER_Server *server, const char *model_name,
    const int64_t model_version, const uint32_t config_version,
    TRITONSERVER_Message **model_config) {
  query_t q = {0};
  TRITONSERVER_Error *err;

  SERVER_CHECK(server);
  if (model_name == NULL || model_config == NULL)
    return ERR(INVALID_ARG, "model_name and model_config must not be NULL");
  if (config_version != 1) {
    char msg[160];
    snprintf(msg, sizeof(msg),
             "model configuration version %u not supported, supported "
             "versions are: 1",
             (unsigned)config_version);
    return ERR(INVALID_ARG, msg);
  }
  q.name = model_name;
  q.version = model_version;
  err = run(server, &q, config_fn);
  return err != NULL ? err : message_of(&q, model_config);
}

static void index_fn(ifd__capi_call_t *c) {
  query_t *q = c->arg;
  ifd_index_entry_t *rows;
  size_t n;

  if (ifd_server_repository_index(
          c->server, (q->flags & TRITONSERVER_INDEX_FLAG_READY) != 0, &rows,
          &n) != 0) {
    ifd__capi_call_done(c, ERR(INTERNAL, "out of memory"));
    return;
  }
  q->text = ifd_render_repo_index(rows, n, &q->len);
  free(rows);
  done_text(q);
}

TRITONSERVER_Error *TRITONSERVER_ServerModelIndex(
    TRITONSERVER_Server *server, uint32_t flags,
    TRITONSERVER_Message **model_index) {
  query_t q = {0};
  TRITONSERVER_Error *err;

  SERVER_CHECK(server);
  if (model_index == NULL)
    return ERR(INVALID_ARG, "model_index must not be NULL");
  q.flags = flags;
  err = run(server, &q, index_fn);
  return err != NULL ? err : message_of(&q, model_index);
}

/* ---- model control --------------------------------------------------------
 */

static void load_done(int rc, const char *msg, void *arg) {
  query_t *q = arg;
  ifd__capi_call_done(
      &q->call,
      rc < 0 ? ifd__error_from(rc, msg != NULL && msg[0] != '\0' ? msg : NULL)
             : NULL);
}

static void load_fn(ifd__capi_call_t *c) {
  query_t *q = c->arg;
  ifd_errmsg_t err;
  int rc;

  /* The load ends in a later loop callback, which a caller on the loop
   * itself cannot wait for. */
  if (c->on_loop) {
    ifd__capi_call_done(
        c, ERR(UNAVAILABLE,
               "a model load cannot be waited for on the server's own "
               "thread (from a callback)"));
    return;
  }
  ifd_errclear(&err);
  rc = ifd_server_load_model(c->server, q->name, strlen(q->name), q->params,
                             load_done, q, NULL, &err);
  if (rc < 0) ifd__capi_call_done(c, error_of(rc, &err));
}

TRITONSERVER_Error *TRITONSERVER_ServerLoadModel(TRITONSERVER_Server *server,
                                                 const char *model_name) {
  return TRITONSERVER_ServerLoadModelWithParameters(server, model_name, NULL,
                                                    0);
}

TRITONSERVER_Error *TRITONSERVER_ServerLoadModelWithParameters(
    TRITONSERVER_Server *server, const char *model_name,
    const TRITONSERVER_Parameter **parameters, const uint64_t parameter_count) {
  ifd_load_params_t params;
  ifd_load_file_t *files = NULL;
  query_t q = {0};
  TRITONSERVER_Error *err = NULL;
  uint64_t i;

  SERVER_CHECK(server);
  if (model_name == NULL)
    return ERR(INVALID_ARG, "model_name must not be NULL");
  if (parameter_count > 0 && parameters == NULL)
    return ERR(INVALID_ARG, "parameters must not be NULL");
  memset(&params, 0, sizeof(params));
  if (parameter_count > 0) {
    files = calloc((size_t)parameter_count, sizeof(*files));
    if (files == NULL) return ERR(INTERNAL, "out of memory");
  }
  /* As the HTTP repository extension reads them: "config" is a whole model
   * configuration in JSON; "file:<version>/<name>" the bytes of a file of
   * the model's folder. */
  for (i = 0; i < parameter_count; i++) {
    const TRITONSERVER_Parameter *p = parameters[i];
    char msg[320];
    if (p == NULL || p->name == NULL) {
      err = ERR(INVALID_ARG, "a load parameter is NULL");
      goto out;
    }
    if (strcmp(p->name, "config") == 0) {
      if (p->type != TRITONSERVER_PARAMETER_STRING) {
        err = ERR(INVALID_ARG,
                  "the 'config' load parameter must be a STRING holding the "
                  "model configuration in JSON");
        goto out;
      }
      params.config = p->v.s;
      params.config_len = strlen(p->v.s);
    } else if (strncmp(p->name, "file:", 5) == 0) {
      if (p->type != TRITONSERVER_PARAMETER_BYTES) {
        snprintf(msg, sizeof(msg),
                 "the '%.200s' load parameter must be BYTES (the file's "
                 "contents)",
                 p->name);
        err = ERR(INVALID_ARG, msg);
        goto out;
      }
      files[params.n_files].path = p->name + 5;
      files[params.n_files].path_len = strlen(p->name + 5);
      files[params.n_files].data = p->v.bytes.base;
      files[params.n_files].len = (size_t)p->v.bytes.size;
      params.n_files++;
    } else {
      IFD_VERBOSE("load of '%s': parameter '%s' ignored", model_name, p->name);
    }
  }
  params.files = files;
  q.name = model_name;
  q.params = &params;
  err = run(server, &q, load_fn);

out:
  free(files);
  return err;
}

static void unload_fn(ifd__capi_call_t *c) {
  query_t *q = c->arg;
  ifd_errmsg_t err;
  int rc;

  ifd_errclear(&err);
  rc = ifd_server_unload_model(c->server, q->name, strlen(q->name),
                               q->unload_dependents, &err);
  ifd__capi_call_done(c, rc < 0 ? error_of(rc, &err) : NULL);
}

/* Returns once the unload has begun, as Triton documents: the model leaves
 * readiness at once, its versions unload when their requests are done. */
static TRITONSERVER_Error *unload(TRITONSERVER_Server *server,
                                  const char *model_name, int dependents) {
  query_t q = {0};

  SERVER_CHECK(server);
  if (model_name == NULL)
    return ERR(INVALID_ARG, "model_name must not be NULL");
  q.name = model_name;
  q.unload_dependents = dependents;
  return run(server, &q, unload_fn);
}

TRITONSERVER_Error *TRITONSERVER_ServerUnloadModel(TRITONSERVER_Server *server,
                                                   const char *model_name) {
  return unload(server, model_name, 0);
}

TRITONSERVER_Error *TRITONSERVER_ServerUnloadModelAndDependents(
    TRITONSERVER_Server *server, const char *model_name) {
  return unload(server, model_name, 1);
}

static void poll_done(void *arg) {
  query_t *q = arg;
  ifd__capi_call_done(&q->call, NULL);
}

static void poll_fn(ifd__capi_call_t *c) {
  query_t *q = c->arg;
  ifd_errmsg_t err;
  int rc;

  if (c->on_loop) {
    ifd__capi_call_done(
        c, ERR(UNAVAILABLE,
               "a repository poll cannot be waited for on the server's own "
               "thread (from a callback)"));
    return;
  }
  ifd_errclear(&err);
  rc = ifd_server_poll(c->server, poll_done, q, &err);
  if (rc < 0) ifd__capi_call_done(c, error_of(rc, &err));
}

/* Returns once the changes found are applied (loads and unloads ended), as
 * Triton's does. */
TRITONSERVER_Error *TRITONSERVER_ServerPollModelRepository(
    TRITONSERVER_Server *server) {
  query_t q = {0};

  SERVER_CHECK(server);
  return run(server, &q, poll_fn);
}

static void register_fn(ifd__capi_call_t *c) {
  query_t *q = c->arg;
  ifd_errmsg_t err;
  int rc;

  ifd_errclear(&err);
  rc = q->flags ? ifd_server_register_repository(c->server, q->name, &err)
                : ifd_server_unregister_repository(c->server, q->name, &err);
  ifd__capi_call_done(c, rc < 0 ? error_of(rc, &err) : NULL);
}

TRITONSERVER_Error *TRITONSERVER_ServerRegisterModelRepository(
    TRITONSERVER_Server *server, const char *repository_path,
    const TRITONSERVER_Parameter **name_mapping, const uint32_t mapping_count) {
  query_t q = {0};
  struct stat st;

  SERVER_CHECK(server);
  if (repository_path == NULL)
    return ERR(INVALID_ARG, "repository_path must not be NULL");
  (void)name_mapping;
  if (mapping_count > 0)
    return ERR(UNSUPPORTED,
               "TRITONSERVER_ServerRegisterModelRepository: name mappings are "
               "not supported by inferd (a model's name is its folder's)");
  /* Checked here: the loop does no file I/O. */
  if (stat(repository_path, &st) != 0 || !S_ISDIR(st.st_mode)) {
    char msg[PATH_MAX + 64];
    snprintf(msg, sizeof(msg), "failed to register '%s', repository not found",
             repository_path);
    return ERR(INVALID_ARG, msg);
  }
  q.name = repository_path;
  q.flags = 1;
  return run(server, &q, register_fn);
}

TRITONSERVER_Error *TRITONSERVER_ServerUnregisterModelRepository(
    TRITONSERVER_Server *server, const char *repository_path) {
  query_t q = {0};

  SERVER_CHECK(server);
  if (repository_path == NULL)
    return ERR(INVALID_ARG, "repository_path must not be NULL");
  q.name = repository_path;
  q.flags = 0;
  return run(server, &q, register_fn);
}

/* ---- metrics ----------------------------------------------------------------
 */

/* A snapshot of the Prometheus text, taken on the loop. */
struct TRITONSERVER_Metrics {
  char *text; /* owned: NUL-terminated, len bytes */
  size_t len;
};

static void metrics_fn(ifd__capi_call_t *c) {
  query_t *q = c->arg;
  capi_server_t *cs = ifd_server_host(c->server);

  if (cs != NULL && !cs->metrics_on) {
    ifd__capi_call_done(c, ERR(UNSUPPORTED, "metrics not supported"));
    return;
  }
  /* The executable's server (a backend asking) renders without the gauges:
   * they belong to its metrics service. */
  q->text =
      ifd_metrics_text(c->server, cs != NULL ? cs->metrics : NULL, &q->len);
  done_text(q);
}

TRITONSERVER_Error *TRITONSERVER_ServerMetrics(TRITONSERVER_Server *server,
                                               TRITONSERVER_Metrics **metrics) {
  query_t q = {0};
  TRITONSERVER_Metrics *m;
  TRITONSERVER_Error *err;

  SERVER_CHECK(server);
  if (metrics == NULL) return ERR(INVALID_ARG, "metrics must not be NULL");
  err = run(server, &q, metrics_fn);
  if (err != NULL) return err;
  m = malloc(sizeof(*m));
  if (m == NULL) {
    free(q.text);
    return ERR(INTERNAL, "out of memory");
  }
  m->text = q.text;
  m->len = q.len;
  *metrics = m;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_MetricsDelete(TRITONSERVER_Metrics *metrics) {
  if (metrics != NULL) {
    free(metrics->text);
    free(metrics);
  }
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_MetricsFormatted(
    TRITONSERVER_Metrics *metrics, TRITONSERVER_MetricFormat format,
    const char **base, size_t *byte_size) {
  if (metrics == NULL || base == NULL || byte_size == NULL)
    return ERR(INVALID_ARG, "metrics, base and byte_size must not be NULL");
  if (format != TRITONSERVER_METRIC_PROMETHEUS)
    return ERR(INVALID_ARG, "unknown metrics format");
  *base = metrics->text;
  *byte_size = metrics->len;
  return NULL;
}
