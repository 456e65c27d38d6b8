/*
 * app/embed.c - the embedded entry: the in-process server's
 * TRITONSERVER_ServerNew, ServerStop, ServerDelete and ServerSetExitTimeout.
 * Part of libtritonserver.so.
 *
 * A server made here runs the same core as inferd's executable, built by
 * the same runtime (app/runtime.c), on a libuv loop and a thread of its own
 * (no HTTP, no gRPC). TRITONSERVER_Server* is the core's ifd_server_t
 * itself; the capi_server_t around it is reached with ifd_server_host(),
 * its first member being the ifd__capi_host_t that backend_api's in-process
 * API reads (backend_api/capi/capi_loop.c). The server of inferd's executable,
 * which backends get from TRITONBACKEND_ModelServer (BLS), has no host: the
 * queries and model control work on it too, but it cannot be stopped, deleted
 * or given an exit timeout through the API (a backend must not stop its host).
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
 * The options (TRITONSERVER_ServerOptions), the queries, model control and
 * metrics calls, and in-process inference stay at the ABI edge, in
 * backend_api/capi_*.c.
 */
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "app/runtime.h"
#include "backend_api/internal.h"
#include "base/log.h"
#include "base/util.h"
#include "core/metrics.h"
#include "cuda/cuda_mem.h"
#include "cuda/gpu.h"

/* The longest the loop spins for expected events before it blocks, as
 * inferd's --loop-spin-us default (base/event.h, "Expected events"). */
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
  uv_loop_t loop;    /* embedded; loop thread only */
  ifd_server_t *srv; /* owned by the loop thread; set once the loop thread
                        created it, before ServerNew returns */
  const ifd_server_opts_t *so; /* borrowed: ServerNew's, during start only */
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
    ifd_runtime_free(cs->srv);
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
  cs->host.metrics = NULL;
  stop_part_done(cs);
}

/* Drains, unloads every model and stops metrics (loop thread, once). */
static void begin_stop(capi_server_t *cs) {
  uint64_t deadline;

  if (cs->stopping) return;
  cs->stopping = 1;
  cs->stop_parts = 1; /* the drain and unload */
  if (cs->host.metrics != NULL) {
    cs->stop_parts++;
    ifd_metrics_stop(cs->host.metrics, on_metrics_stopped, cs);
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
  ifd_runtime_free(cs->srv);
}

static void on_loaded(ifd_server_t *s, int failed, void *arg) {
  capi_server_t *cs = arg;
  (void)s;
  if (failed < 0 || (failed > 0 && cs->exit_on_error)) {
    IFD_ERROR("%d model(s) failed to load and exit on error is set", failed);
    pthread_mutex_lock(&cs->mu);
    cs->start_err = ERR(INTERNAL, failed < 0 ? "failed to create the "
                                               "response cache"
                                             : "failed to load all models");
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
  if (ifd_runtime_new(&cs->loop, cs->so, &cs->srv, &err) < 0) {
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
  if (cs->host.metrics_on) {
    if (ifd_metrics_start(cs->srv, cs->metrics_interval_ms, &cs->host.metrics) <
        0)
      cs->host.metrics = NULL; /* ServerMetrics then renders no gauges */
    else
      ifd_metrics_allow_gpu(cs->host.metrics, cs->gpu_metrics);
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
  ifd_backend_setting_t *bc = NULL; /* owned: views for so */
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
  if (options->log_file != NULL && options->log_file[0] != '\0' &&
      strcmp(options->log_file, ifd_log_file()) != 0) {
    int e = ifd_log_open_file(options->log_file);
    if (e < 0)
      return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                         "cannot open log file '%s': %s", options->log_file,
                         strerror(-e));
  }
  ifd_log_set_format((ifd_log_format_t)options->log_format);
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
  so.summary_latencies = options->summary_latencies;
  so.gpu_limit_set = options->gpu_limit_set;
  memcpy(so.gpu_limit, options->gpu_limit, sizeof(so.gpu_limit));
  so.quantiles = options->quantiles;
  so.no_counter_latencies = options->no_counter_latencies;
  so.server_id = options->server_id;
  so.model_config_name = options->model_config_name;
  so.min_compute_capability = options->min_compute_capability;
  so.model_load_retry_count = options->model_load_retry_count;
  so.rate_limit = options->rate_limit;
  so.rate_limit_resources = options->rl_res;
  so.n_rate_limit_resources = options->n_rl_res;
  so.repoagent_dir = options->repoagent_dir;
  so.model_namespacing = options->model_namespacing;
  so.gpu_count = ifd_gpu_count();
  so.gpu_skip = ifd_gpu_unsupported(so.min_compute_capability);
  /* Backend settings, then host policies: views of the options' copies,
   * read by ifd_server_new (which copies them) before this function
   * returns. */
  if (options->n_backend_config + options->n_host_policy +
          options->n_cache_config >
      0) {
    size_t k, nb = options->n_backend_config, nh = options->n_host_policy;
    bc = calloc(nb + nh + options->n_cache_config, sizeof(*bc));
    if (bc == NULL) return ERR(INTERNAL, "out of memory");
    for (k = 0; k < nb + nh + options->n_cache_config; k++) {
      const ifd__capi_setting_t *t = k < nb ? &options->backend_config[k]
                                     : k < nb + nh
                                         ? &options->host_policy[k - nb]
                                         : &options->cache_config[k - nb - nh];
      bc[k].backend = t->group;
      bc[k].setting = t->setting;
      bc[k].value = t->value;
    }
    so.backend_config = bc;
    so.n_backend_config = nb;
    so.host_policy = bc + nb;
    so.n_host_policy = nh;
    so.cache_config = bc + nb + nh;
    so.n_cache_config = options->n_cache_config;
  }
  so.cache_name = options->cache_name;
  so.cache_dir = options->cache_dir;

  cs = calloc(1, sizeof(*cs));
  if (cs == NULL) {
    free(bc);
    return ERR(INTERNAL, "out of memory");
  }
  pthread_mutex_init(&cs->mu, NULL);
  pthread_cond_init(&cs->cv, NULL);
  cs->so = &so;
  cs->host.metrics_on = options->metrics;
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
    free(bc);
    return ERR(INTERNAL, "cannot start the server's thread");
  }
  pthread_mutex_lock(&cs->mu);
  while (cs->phase == PHASE_STARTING) pthread_cond_wait(&cs->cv, &cs->mu);
  err = cs->start_err;
  cs->start_err = NULL;
  pthread_mutex_unlock(&cs->mu);
  cs->so = NULL;
  free(bc);
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
