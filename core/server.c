/*
 * core/server.c - the server object: creation, the end-of-iteration list,
 * start-up, and the two halves of the shutdown.
 *
 * The server owns what core/runtime.h holds (the cache, shared memory,
 * tracing, the rate limiter) and has those modules register their request
 * hooks when it is built; the accessors that only read that context, and
 * readiness, are in core/runtime.c. The model registry (start-up, load, reload,
 * unload, poll) is in core/registry.c, the read-only queries in
 * core/server_query.c. Shutdown: not ready -> wait for pending requests and
 * registry work (bounded) -> unload every version in reverse order of load
 * completion, one at a time (thread pool).
 */
#include "core/server.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "core/cache.h"
#include "core/metrics.h"
#include "core/server_internal.h"
#include "base/util.h"

/* Free request objects the loop keeps for reuse: enough for the requests
 * in flight at 128 connections, at about 2.2 KiB each (~280 KiB at most).
 * Beyond that a freed request goes back to malloc at once. */
#define REQ_CACHE_MAX 128

static void loading_done(ifd_server_t *s);
static void registry_idle(ifd_server_t *s);

/* The registry reports to the server through this table (s->owner). */
static const ifd_reg_owner_t registry_owner = {
    .registry_idle = registry_idle,
    .loading_done = loading_done,
};

/* ---- small helpers ----------------------------------------------------------
 */

/* Events scheduled while the list runs (a scheduler that forms a batch
 * here wakes an instance through another one) run in the same pass: the
 * loop is about to block, and nothing else would wake it for them. */
static void on_iteration_end(uv_prepare_t *p) {
  ifd_server_t *s = ifd_container_of(p, ifd_server_t, iter_end);
  ifd_event_t *ev;
  while ((ev = s->iter_head) != NULL) {
    s->iter_head = NULL;
    while (ev != NULL) {
      ifd_event_t *next = ev->next;
      ev->fn(ev);
      ev = next;
    }
  }
  uv_prepare_stop(p);
}

void ifd_server_at_iteration_end(ifd_server_t *s, ifd_event_t *ev) {
  if (s->iter_head == NULL) uv_prepare_start(&s->iter_end, on_iteration_end);
  /* Work for the next iteration: the loop must not wait for results now. */
  ifd_evq_busy(&s->rt.evq);
  ev->next = s->iter_head;
  s->iter_head = ev;
}

int ifd_parse_version(const char *str, size_t n, int64_t *out) {
  int64_t v = 0;
  size_t i;
  if (n == 0) {
    *out = -1;
    return 0;
  }
  for (i = 0; i < n; i++) {
    if (str[i] < '0' || str[i] > '9') return IFD_EINVAL;
    if (v > (INT64_MAX - (str[i] - '0')) / 10) return IFD_EINVAL;
    v = v * 10 + (str[i] - '0');
  }
  *out = v;
  return 0;
}

/* ---- creation ---------------------------------------------------------------
 */

static void free_backend_config(ifd_server_t *s) {
  size_t i;
  for (i = 0; s->backend_cfg != NULL && i < s->rt.opts.n_backend_config; i++) {
    free((char *)s->backend_cfg[i].backend);
    free((char *)s->backend_cfg[i].setting);
    free((char *)s->backend_cfg[i].value);
  }
  free(s->backend_cfg);
  s->backend_cfg = NULL;
}

/* Copies `n` settings into *out (calloc'd, strings strdup'd). 0 or -1 (out
 * of memory; free what was copied with free_settings(*out, n)). */
static int copy_settings(const ifd_backend_setting_t *src, size_t n,
                         ifd_backend_setting_t **out) {
  size_t i;
  *out = NULL;
  if (n == 0) return 0;
  *out = calloc(n, sizeof(**out));
  if (*out == NULL) return -1;
  for (i = 0; i < n; i++) {
    ifd_backend_setting_t *t = &(*out)[i];
    t->backend = strdup(src[i].backend);
    t->setting = strdup(src[i].setting);
    t->value = strdup(src[i].value);
    if (t->backend == NULL || t->setting == NULL || t->value == NULL) return -1;
  }
  return 0;
}

static void free_settings(ifd_backend_setting_t *a, size_t n) {
  size_t i;
  for (i = 0; a != NULL && i < n; i++) {
    free((char *)a[i].backend);
    free((char *)a[i].setting);
    free((char *)a[i].value);
  }
  free(a);
}

/* Copies the --backend-config settings (s->rt.opts already holds `opts`).
 * 0 or -1 (out of memory; what was copied is freed by free_backend_config). */
static int copy_backend_config(ifd_server_t *s, const ifd_server_opts_t *o) {
  size_t i;
  s->rt.opts.backend_config = NULL;
  if (o->n_backend_config == 0) return 0;
  s->backend_cfg = calloc(o->n_backend_config, sizeof(*s->backend_cfg));
  if (s->backend_cfg == NULL) {
    s->rt.opts.n_backend_config = 0;
    return -1;
  }
  for (i = 0; i < o->n_backend_config; i++) {
    ifd_backend_setting_t *t = &s->backend_cfg[i];
    t->backend = strdup(o->backend_config[i].backend);
    t->setting = strdup(o->backend_config[i].setting);
    t->value = strdup(o->backend_config[i].value);
    if (t->backend == NULL || t->setting == NULL || t->value == NULL) return -1;
  }
  s->rt.opts.backend_config = s->backend_cfg;
  return 0;
}

/* The response cache of --cache-config: the local one at once, a plugin
 * at ifd_server_start (on the pool). */
static int make_cache(ifd_server_t *s, const ifd_server_opts_t *o,
                      ifd_errmsg_t *err) {
  size_t n = o->n_cache_config, i;
  const char **kv = calloc(2 * n + 2, sizeof(*kv));
  int rc;
  if (kv == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  for (i = 0; i < n; i++) {
    kv[i] = o->cache_config[i].setting;
    kv[n + 1 + i] = o->cache_config[i].value;
  }
  rc = ifd_cache_new(o->cache_name, kv, kv + n + 1, n, o->cache_dir,
                     &s->rt.cache, err);
  free(kv);
  if (rc == 0) ifd_cache_register_hooks(&s->rt.hooks);
  if (rc == 0 && !ifd_cache_needs_open(s->rt.cache))
    IFD_INFO("response cache: '%s' (built in)", o->cache_name);
  return rc;
}

int ifd_server_new(uv_loop_t *loop, const ifd_server_opts_t *opts,
                   ifd_server_t **out, ifd_errmsg_t *err) {
  ifd_server_t *s = calloc(1, sizeof(*s));
  size_t i;
  int rc;

  if (s == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  s->rt.loop = loop;
  s->owner = &registry_owner;
  s->rt.loop_thread = uv_thread_self();
  s->rt.opts = *opts;
  s->repos = calloc(opts->n_repos ? opts->n_repos : 1, sizeof(char *));
  if (s->repos == NULL) goto out_nomem;
  for (i = 0; i < opts->n_repos; i++) {
    s->repos[i] = strdup(opts->repos[i]);
    if (s->repos[i] == NULL) goto out_nomem;
  }
  s->rt.opts.repos = (const char *const *)s->repos;
  s->backend_dir = ifd_strdup_null(opts->backend_dir);
  s->rt.opts.backend_dir = s->backend_dir;
  if (copy_backend_config(s, opts) < 0) goto out_nomem;
  s->load_models =
      calloc(opts->n_load_models ? opts->n_load_models : 1, sizeof(char *));
  if (s->load_models == NULL) goto out_nomem;
  for (i = 0; i < opts->n_load_models; i++) {
    s->load_models[i] = strdup(opts->load_models[i]);
    if (s->load_models[i] == NULL) goto out_nomem;
  }
  s->rt.opts.load_models = (const char *const *)s->load_models;
  if (copy_settings(opts->host_policy, opts->n_host_policy, &s->host_cfg) < 0)
    goto out_nomem;
  s->rt.opts.host_policy = s->host_cfg;
  s->server_id = ifd_strdup_null(opts->server_id);
  s->rt.opts.server_id = s->server_id;
  s->model_config_name = ifd_strdup_null(opts->model_config_name);
  s->rt.opts.model_config_name = s->model_config_name;
  if ((opts->server_id != NULL && s->server_id == NULL) ||
      (opts->model_config_name != NULL && s->model_config_name == NULL))
    goto out_nomem;
  s->repoagent_dir = ifd_strdup_null(opts->repoagent_dir);
  s->rt.opts.repoagent_dir = s->repoagent_dir;
  if (opts->repoagent_dir != NULL && s->repoagent_dir == NULL) goto out_nomem;
  if (opts->cache_name != NULL && make_cache(s, opts, err) < 0) goto out_free;
  s->rt.opts.cache_name = NULL; /* the cache keeps what it needs */
  s->rt.opts.cache_config = NULL;
  s->rt.opts.n_cache_config = 0;
  s->rt.opts.cache_dir = NULL;
  ifd__server_info_init(s);
  if (ifd__trace_init(s, &opts->trace) != 0) goto out_nomem;
  ifd_metrics_register_hooks(&s->rt.hooks, &s->rt.opts);
  s->rt.opts.trace.file = NULL; /* the trace module keeps its copy */
  ifd_strmap_init(&s->by_name);
  ifd_objcache_init(&s->rt.req_cache, sizeof(ifd_request_t), REQ_CACHE_MAX);
  s->rt.shm = ifd_shm_new(loop, opts->gpu_count);
  if (s->rt.shm == NULL) goto out_nomem;
  s->rt.opts.rate_limit_resources = NULL;
  s->rt.opts.n_rate_limit_resources = 0;
  if (opts->rate_limit &&
      ifd_rl_new(opts->rate_limit_resources, opts->n_rate_limit_resources,
                 &s->rt.rl) < 0)
    goto out_nomem;
  rc = ifd_evq_init(loop, &s->rt.evq);
  if (rc < 0) {
    ifd_errf(err, IFD_ENOMEM, "cannot create the completion queue: %s",
             uv_strerror(rc));
    goto out_free;
  }
  rc = uv_timer_init(loop, &s->drain_timer);
  if (NEVER(rc < 0)) abort(); /* uv_timer_init cannot fail on Linux */
  uv_prepare_init(loop, &s->iter_end);
  ifd__registry_init(s);
  *out = s;
  return 0;

out_nomem:
  ifd_errf(err, IFD_ENOMEM, "out of memory");
out_free:
  ifd_rl_free(s->rt.rl);
  ifd__trace_fini(s);
  ifd_cache_free(s->rt.cache);
  ifd_shm_free(s->rt.shm);
  for (i = 0; s->repos && i < opts->n_repos; i++) free(s->repos[i]);
  free(s->repos);
  for (i = 0; s->load_models && i < opts->n_load_models; i++)
    free(s->load_models[i]);
  free(s->load_models);
  free(s->backend_dir);
  free(s->server_id);
  free(s->model_config_name);
  free(s->repoagent_dir);
  free_settings(s->host_cfg, s->rt.opts.n_host_policy);
  free_backend_config(s);
  free(s);
  return err ? err->code : IFD_ENOMEM;
}

/* ---- start-up ---------------------------------------------------------------
 */

static void start_registry(ifd_server_t *s) {
  if (ifd__registry_start(s) < 0) {
    IFD_ERROR("cannot start loading models");
    s->rt.failed++;
    loading_done(s);
  }
}

/* A cache plugin is opened (dlopen, TRITONCACHE_CacheInitialize) on the
 * pool before any model loads: as tritonserver, a cache that fails to
 * open fails the start. */
static void cache_open_work(uv_work_t *w) {
  ifd_server_t *s = ifd_container_of(w, ifd_server_t, cache_work);
  s->cache_err.code =
      ifd_cache_open_plugin(s->rt.cache, s->rt.opts.cache_open, &s->cache_err);
}

static void cache_open_after(uv_work_t *w, int status) {
  ifd_server_t *s = ifd_container_of(w, ifd_server_t, cache_work);
  s->jobs--;
  if (status == 0 && s->cache_err.code == 0) {
    start_registry(s);
    return;
  }
  IFD_ERROR("failed to create the response cache: %s",
            status < 0 ? uv_strerror(status) : s->cache_err.text);
  s->rt.failed = -1; /* the start failed as a whole: done(s, -1) */
  loading_done(s);
}

void ifd_server_start(ifd_server_t *s,
                      void (*done)(ifd_server_t *s, int failed, void *arg),
                      void *arg) {
  s->started = 1;
  s->start_done = done;
  s->start_arg = arg;
  if (ifd_cache_needs_open(s->rt.cache)) {
    s->cache_err.code = 0;
    s->jobs++;
    if (uv_queue_work(s->rt.loop, &s->cache_work, cache_open_work,
                      cache_open_after) == 0)
      return;
    ifd_errf(&s->cache_err, IFD_EINTERNAL, "cannot queue the cache's load");
    cache_open_after(&s->cache_work, 0);
    return;
  }
  start_registry(s);
}

static void loaded_while_stopping(ifd_server_t *s);

static void loading_done(ifd_server_t *s) {
  void (*done)(ifd_server_t *, int, void *) = s->start_done;
  if (s->rt.loading_done) return;
  s->rt.loading_done = 1;
  s->start_done = NULL;
  IFD_INFO("model loading finished: %d model(s) failed", s->rt.failed);
  if (done != NULL) done(s, s->rt.failed, s->start_arg);
  if (s->rt.shutting_down) loaded_while_stopping(s);
}

static void registry_idle(ifd_server_t *s) {
  if (s->poll_done != NULL && !s->polling) {
    void (*done)(void *) = s->poll_done;
    s->poll_done = NULL;
    done(s->poll_arg);
  }
  if (s->rt.shutting_down && s->rt.loading_done) loaded_while_stopping(s);
}

/* ---- shutdown ---------------------------------------------------------------
 *
 * Two halves, so that a front end can close its connections in between:
 * ifd_server_drain (not ready; wait for requests in flight and registry
 * work, bounded by the deadline), then ifd_server_unload_all (one model
 * version at a time on the thread pool, reverse load order). Nothing here
 * allocates, so nothing has an out-of-memory fallback that could block the
 * loop.
 */

static void unload_next(ifd_server_t *s);

static ifd_model_t *latest_unloading(ifd_model_t *list, ifd_model_t *best) {
  for (ifd_model_t *m = list; m != NULL; m = m->next_version)
    if (m->state == IFD_MODEL_UNLOADING &&
        (best == NULL || m->load_seq > best->load_seq))
      best = m;
  return best;
}

/* The next version to unload: the UNLOADING one loaded last. O(n) per
 * unload, at exit only. */
static ifd_model_t *next_to_unload(ifd_server_t *s) {
  ifd_model_t *best = NULL;
  for (size_t i = 0; i < s->n_entries; i++) {
    best = latest_unloading(s->entries[i]->versions, best);
    best = latest_unloading(s->entries[i]->retired, best);
  }
  return best;
}

static void unload_work(uv_work_t *w) {
  ifd_server_t *s = ifd_container_of(w, ifd_server_t, unload_work);
  ifd__reg_agents_unload(s, s->unloading);
}

static void unload_after(uv_work_t *w, int status) {
  ifd_server_t *s = ifd_container_of(w, ifd_server_t, unload_work);
  ifd_model_t *m = s->unloading;
  (void)status;
  s->unloading = NULL;
  m->state = IFD_MODEL_UNAVAILABLE;
  IFD_INFO("successfully unloaded '%s' version %" PRId64, m->name, m->version);
  unload_next(s);
}

/* Runs after every event the unloads pushed (the queue is FIFO): the layers
 * above core free their model objects from such events, so only now is the
 * unload complete and ifd_server_free safe. */
static void on_unloaded(ifd_event_t *ev) {
  ifd_server_t *s = ifd_container_of(ev, ifd_server_t, unloaded_ev);
  void (*done)(ifd_server_t *, void *) = s->stop_done;

  s->stop_done = NULL;
  if (done != NULL) done(s, s->stop_arg);
}

static void unload_next(ifd_server_t *s) {
  ifd_model_t *m;

  while ((m = next_to_unload(s)) != NULL) {
    s->rt.opts.ops->stop(m);
    s->unloading = m;
    /* uv_queue_work fails only without a work callback. Should it fail,
     * leaving the backend loaded beats blocking the loop on its threads. */
    if (ALWAYS(uv_queue_work(s->rt.loop, &s->unload_work, unload_work,
                             unload_after) == 0))
      return;
    IFD_ERROR("cannot unload '%s' version %" PRId64, m->name, m->version);
    s->unloading = NULL;
    m->state = IFD_MODEL_UNAVAILABLE;
  }
  s->unloaded_ev.fn = on_unloaded;
  ifd_evq_push(&s->rt.evq, &s->unloaded_ev);
}

static void mark_unloading(ifd_model_t *list) {
  for (ifd_model_t *m = list; m != NULL; m = m->next_version)
    if (m->state == IFD_MODEL_READY) m->state = IFD_MODEL_UNLOADING;
}

static void start_unload(ifd_server_t *s) {
  s->unload_wanted = 0;
  for (size_t i = 0; i < s->n_entries; i++) {
    mark_unloading(s->entries[i]->versions);
    mark_unloading(s->entries[i]->retired);
  }
  s->n_retired = 0;
  unload_next(s);
}

static uint64_t pending_in(ifd_server_t *s, ifd_model_t *list) {
  uint64_t n = 0;
  for (ifd_model_t *m = list; m != NULL; m = m->next_version)
    if (m->state == IFD_MODEL_READY) n += s->rt.opts.ops->pending(m);
  return n;
}

static uint64_t pending_requests(ifd_server_t *s) {
  uint64_t n = 0;
  for (size_t i = 0; i < s->n_entries; i++) {
    n += pending_in(s, s->entries[i]->versions);
    n += pending_in(s, s->entries[i]->retired);
  }
  return n + ifd_cache_in_flight(s->rt.cache);
}

/* Calls `drained` once nothing is in flight (loads and other registry work
 * included) or the deadline has passed. Returns whether it did. */
static int drain_check(ifd_server_t *s) {
  void (*cb)(ifd_server_t *, uint64_t, void *) = s->drained;
  int busy;
  uint64_t n;

  if (cb == NULL) return 1;
  n = pending_requests(s);
  busy = !s->rt.loading_done || !ifd__registry_idle(s);
  if ((busy || n > 0) && uv_now(s->rt.loop) < s->drain_deadline) return 0;
  uv_timer_stop(&s->drain_timer);
  if (busy)
    IFD_WARN("exit timeout reached with model loads in flight");
  else if (n > 0)
    IFD_WARN("exit timeout reached with %" PRIu64 " request(s) in flight", n);
  s->drained = NULL;
  cb(s, n, s->drained_arg);
  return 1;
}

static void on_drain_timer(uv_timer_t *t) {
  drain_check(ifd_container_of(t, ifd_server_t, drain_timer));
}

/* Model loading or registry work ended while shutting down. */
static void loaded_while_stopping(ifd_server_t *s) {
  drain_check(s);
  if (s->unload_wanted && s->rt.loading_done && ifd__registry_idle(s))
    start_unload(s);
}

void ifd_server_drain(ifd_server_t *s, uint64_t deadline_ms,
                      void (*drained)(ifd_server_t *s, uint64_t left,
                                      void *arg),
                      void *arg) {
  s->drained = drained;
  s->drained_arg = arg;
  if (!s->started) s->rt.loading_done = 1; /* nothing was ever loaded */
  /* Loads in flight own their models: they finish first. Their end is no
   * longer reported to ifd_server_start's caller. */
  if (!s->rt.loading_done) s->start_done = NULL;
  s->rt.shutting_down = 1;
  ifd__registry_stop_polling(s);
  s->drain_deadline =
      deadline_ms != 0
          ? deadline_ms
          : uv_now(s->rt.loop) + (uint64_t)(s->rt.opts.exit_timeout_secs > 0
                                                ? s->rt.opts.exit_timeout_secs
                                                : 0) *
                                     1000;
  if (drain_check(s)) return;
  IFD_INFO("waiting for in-flight requests to finish");
  uv_timer_start(&s->drain_timer, on_drain_timer, 50, 50);
}

void ifd_server_unload_all(ifd_server_t *s,
                           void (*done)(ifd_server_t *s, void *arg),
                           void *arg) {
  s->stop_done = done;
  s->stop_arg = arg;
  s->rt.shutting_down = 1;
  ifd__registry_stop_polling(s);
  if (!s->started) s->rt.loading_done = 1;
  if (!s->rt.loading_done || !ifd__registry_idle(s)) {
    s->start_done = NULL;
    s->unload_wanted = 1; /* loaded_while_stopping starts it */
    return;
  }
  start_unload(s);
}

static void shutdown_drained(ifd_server_t *s, uint64_t left, void *arg) {
  (void)left;
  (void)arg;
  ifd_server_unload_all(s, s->stop_done, s->stop_arg);
}

void ifd_server_shutdown(ifd_server_t *s,
                         void (*done)(ifd_server_t *s, void *arg), void *arg) {
  s->stop_done = done;
  s->stop_arg = arg;
  ifd_server_drain(s, 0, shutdown_drained, NULL);
}

static void on_handle_closed(uv_handle_t *h) {
  ifd_server_t *s = h->data;
  size_t i;
  if (--s->closing_handles > 0) return;
  for (i = 0; i < s->rt.opts.n_repos; i++) free(s->repos[i]);
  free(s->repos);
  ifd__repo_maps_free(s);
  for (i = 0; i < s->rt.opts.n_load_models; i++) free(s->load_models[i]);
  free(s->load_models);
  free(s->backend_dir);
  free(s->server_id);
  free(s->model_config_name);
  free(s->repoagent_dir);
  free_settings(s->host_cfg, s->rt.opts.n_host_policy);
  free_backend_config(s);
  free(s);
}

void ifd_server_free(ifd_server_t *s) {
  size_t i;
  if (s == NULL) return;
  /* First run whatever the last unloads pushed: those events still write
   * into the models (backend_api frees its model objects there). */
  ifd_evq_drain(&s->rt.evq);
  s->freeing = 1;
  for (i = 0; i < s->n_entries; i++) ifd__entry_free(s->entries[i]);
  free(s->entries);
  ifd_strmap_free(&s->by_name);
  /* Every request should be gone by now; one that is not (a protocol
   * still closing) is freed directly when it goes. */
  ifd_objcache_drain(&s->rt.req_cache);
  ifd_objcache_init(&s->rt.req_cache, sizeof(ifd_request_t), 0);
  ifd_shm_free(s->rt.shm);
  s->rt.shm = NULL;
  /* Every model is unloaded: no instance is registered any more. */
  ifd_rl_free(s->rt.rl);
  s->rt.rl = NULL;
  ifd__trace_fini(s);
  ifd_cache_free(s->rt.cache);
  s->rt.cache = NULL;
  s->closing_handles = 3;
  s->rt.evq.async.data = s;
  s->drain_timer.data = s;
  s->iter_end.data = s;
  s->closing_handles += ifd__registry_close(s, on_handle_closed);
  ifd_evq_close(&s->rt.evq, on_handle_closed);
  uv_close((uv_handle_t *)&s->drain_timer, on_handle_closed);
  uv_close((uv_handle_t *)&s->iter_end, on_handle_closed);
}
