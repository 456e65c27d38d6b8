/*
 * core/server.c - the server object and its model registry.
 *
 * The registry maps a model name to an entry holding that model's versions.
 * It lives on the loop thread. Everything that touches the file system or a
 * backend (scan, config parse, ops->load, ops->unload) runs as a uv_work_t on
 * libuv's thread pool and reports back in its after-work callback, so the
 * loop never blocks on a load.
 *
 * Start-up: scan (pool) -> per model: config + versions (pool) -> per
 * version: ops->load (pool) -> READY or UNAVAILABLE with a reason. Shutdown:
 * not ready -> wait for pending requests (bounded) -> unload every version in
 * reverse order of load completion, one at a time (pool).
 */
#include "core/server.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/model.h"
#include "core/objcache.h"
#include "core/repo.h"
#include "core/strmap.h"
#include "core/util.h"

typedef struct model_entry {
  char *name;            /* owned */
  char *path;            /* owned */
  char *repo;            /* owned */
  ifd_model_t *versions; /* owned list, ascending version */
  char *reason;          /* owned: model-level failure (bad config), or NULL */
  int preparing;         /* config/version work in flight */
} model_entry_t;

struct ifd_server {
  uv_loop_t *loop;         /* borrowed: outlives the server */
  ifd_server_opts_t opts;  /* strings owned (copied) */
  char **repos;            /* owned copies behind opts.repos */
  char *backend_dir;       /* owned copy behind opts.backend_dir */
  ifd_evq_t evq;           /* embedded completion queue */
  ifd_strmap_t by_name;    /* name -> model_entry_t* */
  model_entry_t **entries; /* owned array, sorted by name */
  size_t n_entries;
  int started; /* ifd_server_start was called */
  int loading_done;
  int shutting_down;
  int failed;            /* models that failed to load */
  unsigned pending_work; /* load work items in flight */
  uint64_t load_seq;
  void (*start_done)(ifd_server_t *, int, void *);
  void *start_arg;
  /* shutdown */
  uv_timer_t drain_timer;  /* embedded */
  uv_prepare_t iter_end;   /* embedded: runs the at_iteration_end list */
  ifd_event_t *iter_head;  /* loop thread: callbacks for this iteration */
  uint64_t drain_deadline; /* uv_now() ms */
  void (*drained)(ifd_server_t *, uint64_t, void *);
  void *drained_arg;       /* borrowed: the caller's */
  uv_work_t unload_work;   /* embedded: the one unload in flight */
  ifd_model_t *unloading;  /* borrowed: registry; the model it unloads */
  ifd_event_t unloaded_ev; /* embedded: queued after the last unload */
  int unload_wanted;       /* ifd_server_unload_all waits for loads */
  void (*stop_done)(ifd_server_t *, void *);
  void *stop_arg; /* borrowed: the caller's */
  int closing_handles;
  /* Loop thread: free request objects for reuse (core/infer.c). */
  ifd_objcache_t req_cache;
};

/* Free request objects the loop keeps for reuse: enough for the requests
 * in flight at 128 connections, at about 2.2 KiB each (~280 KiB at most).
 * Beyond that a freed request goes back to malloc at once. */
#define REQ_CACHE_MAX 128

/* ---- small helpers ----------------------------------------------------------
 */

static char *xstrdup(const char *s) {
  return s ? strdup(s) : NULL;
}

uv_loop_t *ifd_server_loop(ifd_server_t *s) {
  return s->loop;
}

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
  ifd_evq_busy(&s->evq);
  ev->next = s->iter_head;
  s->iter_head = ev;
}
ifd_evq_t *ifd_server_evq(ifd_server_t *s) {
  return &s->evq;
}
ifd_objcache_t *ifd_server_req_cache(ifd_server_t *s) {
  return &s->req_cache;
}
const ifd_server_opts_t *ifd_server_opts(const ifd_server_t *s) {
  return &s->opts;
}
int ifd_server_live(const ifd_server_t *s) {
  return !s->shutting_down;
}

int ifd_server_ready(const ifd_server_t *s) {
  if (s->shutting_down || !s->loading_done) return 0;
  return s->opts.strict_readiness ? s->failed == 0 : 1;
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

int ifd_server_new(uv_loop_t *loop, const ifd_server_opts_t *opts,
                   ifd_server_t **out, ifd_errmsg_t *err) {
  ifd_server_t *s = calloc(1, sizeof(*s));
  size_t i;
  int rc;

  if (s == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  s->loop = loop;
  s->opts = *opts;
  s->repos = calloc(opts->n_repos ? opts->n_repos : 1, sizeof(char *));
  if (s->repos == NULL) goto out_nomem;
  for (i = 0; i < opts->n_repos; i++) {
    s->repos[i] = strdup(opts->repos[i]);
    if (s->repos[i] == NULL) goto out_nomem;
  }
  s->opts.repos = (const char *const *)s->repos;
  s->backend_dir = xstrdup(opts->backend_dir);
  s->opts.backend_dir = s->backend_dir;
  ifd_strmap_init(&s->by_name);
  ifd_objcache_init(&s->req_cache, sizeof(ifd_request_t), REQ_CACHE_MAX);
  rc = ifd_evq_init(loop, &s->evq);
  if (rc < 0) {
    ifd_errf(err, IFD_ENOMEM, "cannot create the completion queue: %s",
             uv_strerror(rc));
    goto out_free;
  }
  rc = uv_timer_init(loop, &s->drain_timer);
  if (rc < 0) abort(); /* uv_timer_init cannot fail on Linux */
  uv_prepare_init(loop, &s->iter_end);
  *out = s;
  return 0;

out_nomem:
  ifd_errf(err, IFD_ENOMEM, "out of memory");
out_free:
  for (i = 0; s->repos && i < opts->n_repos; i++) free(s->repos[i]);
  free(s->repos);
  free(s->backend_dir);
  free(s);
  return err ? err->code : IFD_ENOMEM;
}

/* ---- registry ---------------------------------------------------------------
 */

static model_entry_t *entry_find(ifd_server_t *s, const char *name,
                                 size_t len) {
  return ifd_strmap_get(&s->by_name, name, len);
}

static model_entry_t *entry_add(ifd_server_t *s, const char *name,
                                const char *path, const char *repo) {
  model_entry_t *e = calloc(1, sizeof(*e));
  model_entry_t **arr;
  if (e == NULL) return NULL;
  e->name = strdup(name);
  e->path = xstrdup(path);
  e->repo = xstrdup(repo);
  arr = realloc(s->entries, (s->n_entries + 1) * sizeof(*arr));
  if (e->name == NULL || arr == NULL ||
      ifd_strmap_put(&s->by_name, e->name, strlen(e->name), e) < 0) {
    if (arr != NULL) s->entries = arr;
    free(e->name);
    free(e->path);
    free(e->repo);
    free(e);
    return NULL;
  }
  s->entries = arr;
  {
    /* Keep the array sorted by name: the repository index lists it. */
    size_t i = s->n_entries++;
    while (i > 0 && strcmp(s->entries[i - 1]->name, e->name) > 0) {
      s->entries[i] = s->entries[i - 1];
      i--;
    }
    s->entries[i] = e;
  }
  return e;
}

/* Drops an entry that has left the registry: its versions' references and
 * its strings. */
static void entry_free(model_entry_t *e) {
  ifd_model_t *m, *next;
  for (m = e->versions; m != NULL; m = next) {
    next = m->next_version;
    m->next_version = NULL;
    ifd_model_unref(m);
  }
  free(e->name);
  free(e->path);
  free(e->repo);
  free(e->reason);
  free(e);
}

int ifd_server_remove_model(ifd_server_t *s, const char *name, size_t name_len,
                            ifd_errmsg_t *err) {
  model_entry_t *e = entry_find(s, name, name_len);
  int len = name_len > 256 ? 256 : (int)name_len;
  ifd_model_t *m;
  size_t i;

  if (e == NULL)
    return ifd_errf(err, IFD_ENOTFOUND, "model '%.*s' is not in the registry",
                    len, name);
  if (e->preparing)
    return ifd_errf(err, IFD_EUNAVAIL, "model '%.*s' is being loaded", len,
                    name);
  /* An unloaded version's scheduler is freed after the unload reports
   * back (m->sched goes NULL then): it still refers to the model. */
  for (m = e->versions; m != NULL; m = m->next_version)
    if (m->state != IFD_MODEL_UNAVAILABLE || m->sched != NULL)
      return ifd_errf(err, IFD_EUNAVAIL,
                      "model '%.*s' version %" PRId64 " is still %s", len, name,
                      m->version,
                      m->state == IFD_MODEL_READY ? "loaded" : "in transition");
  ifd_strmap_del(&s->by_name, e->name, strlen(e->name));
  for (i = 0; s->entries[i] != e; i++)
    ;
  memmove(&s->entries[i], &s->entries[i + 1],
          (s->n_entries - i - 1) * sizeof(*s->entries));
  s->n_entries--;
  entry_free(e);
  return 0;
}

static void entry_fail(model_entry_t *e, const char *why) {
  free(e->reason);
  e->reason = strdup(why);
}

static ifd_model_t *model_new(ifd_server_t *s, model_entry_t *e,
                              int64_t version) {
  ifd_model_t *m = calloc(1, sizeof(*m));
  ifd_model_t **pp;
  if (m == NULL) return NULL;
  m->server = s;
  m->name = strdup(e->name);
  m->path = strdup(e->path);
  m->repo = strdup(e->repo);
  m->version = version;
  m->state = IFD_MODEL_LOADING;
  m->refs = 1; /* the registry's */
  if (m->name == NULL || m->path == NULL || m->repo == NULL) {
    free(m->name);
    free(m->path);
    free(m->repo);
    free(m);
    return NULL;
  }
  for (pp = &e->versions; *pp != NULL && (*pp)->version < version;
       pp = &(*pp)->next_version)
    ;
  m->next_version = *pp;
  *pp = m;
  return m;
}

static void model_free(ifd_model_t *m) {
  ifd_stats_free(&m->stats);
  ifd_config_free(m->config);
  free(m->name);
  free(m->path);
  free(m->repo);
  free(m->reason);
  free(m);
}

/* Called when a model's last reference goes. The registry keeps its own
 * reference until the model leaves it (ifd_server_remove_model or
 * ifd_server_free), so this only runs after that. */
void ifd__server_model_released(ifd_model_t *m) {
  model_free(m);
}

static void model_fail(ifd_model_t *m, const char *why) {
  m->state = IFD_MODEL_UNAVAILABLE;
  free(m->reason);
  m->reason = strdup(why);
}

/* ---- loading ----------------------------------------------------------------
 */

typedef struct scan_job {
  uv_work_t work;       /* embedded */
  ifd_server_t *server; /* borrowed */
  ifd_repo_scan_t scan; /* owned */
  int rc;
  ifd_errmsg_t err;
} scan_job_t;

typedef struct prepare_job {
  uv_work_t work;          /* embedded */
  ifd_server_t *server;    /* borrowed */
  model_entry_t *entry;    /* borrowed: registry */
  ifd_model_config_t *cfg; /* owned until handed to the versions */
  int64_t *versions;       /* owned */
  size_t n_versions;
  int rc;
  ifd_errmsg_t err;
} prepare_job_t;

typedef struct load_job {
  uv_work_t work;     /* embedded */
  ifd_model_t *model; /* borrowed: registry */
  int rc;
  ifd_errmsg_t err;
} load_job_t;

static void loaded_while_stopping(ifd_server_t *s);

static void work_done(ifd_server_t *s) {
  if (--s->pending_work > 0 || s->loading_done) return;
  s->loading_done = 1;
  IFD_INFO("model loading finished: %d model(s) failed", s->failed);
  if (s->start_done != NULL) s->start_done(s, s->failed, s->start_arg);
  if (s->shutting_down) loaded_while_stopping(s);
}

static void load_work(uv_work_t *w) {
  load_job_t *j = (load_job_t *)w;
  const ifd_model_ops_t *ops = j->model->server->opts.ops;
  ifd_errclear(&j->err);
  j->rc = ops->load(j->model, &j->err);
}

static void load_after(uv_work_t *w, int status) {
  load_job_t *j = (load_job_t *)w;
  ifd_model_t *m = j->model;
  ifd_server_t *s = m->server;
  (void)status;
  if (j->rc == 0) {
    m->state = IFD_MODEL_READY;
    m->load_seq = ++s->load_seq;
    IFD_INFO("successfully loaded '%s' version %" PRId64, m->name, m->version);
  } else {
    model_fail(m, j->err.text[0] ? j->err.text : ifd_strerror(j->rc));
    s->failed++;
    IFD_ERROR("failed to load '%s' version %" PRId64 ": %s", m->name,
              m->version, m->reason);
  }
  free(j);
  work_done(s);
}

/* Deep copy through the wire format: configs are small and this keeps every
 * version's config independent (a backend may complete each on its own). */
static ifd_model_config_t *config_clone(const ifd_model_config_t *c) {
  size_t n = protobuf_c_message_get_packed_size(&c->base);
  uint8_t *buf = malloc(n ? n : 1);
  ifd_model_config_t *r;
  if (buf == NULL) return NULL;
  protobuf_c_message_pack(&c->base, buf);
  r = inference__model_config__unpack(NULL, n, buf);
  free(buf);
  return r;
}

static void start_version_load(ifd_server_t *s, ifd_model_t *m) {
  load_job_t *j = calloc(1, sizeof(*j));
  if (j == NULL) {
    model_fail(m, "out of memory");
    s->failed++;
    return;
  }
  j->model = m;
  s->pending_work++;
  if (uv_queue_work(s->loop, &j->work, load_work, load_after) < 0) {
    s->pending_work--;
    free(j);
    model_fail(m, "cannot queue the load");
    s->failed++;
  }
}

static void prepare_work(uv_work_t *w) {
  prepare_job_t *j = (prepare_job_t *)w;
  ifd_server_t *s = j->server;
  ifd_config_opts_t copts = {s->opts.strict_config, s->opts.gpu_count};

  ifd_errclear(&j->err);
  j->rc = ifd_config_prepare(j->entry->path, j->entry->name, &copts, &j->cfg,
                             &j->err);
  if (j->rc < 0) return;
  j->rc = ifd_repo_versions(j->entry->path, j->cfg, &j->versions,
                            &j->n_versions, &j->err);
}

static void prepare_after(uv_work_t *w, int status) {
  prepare_job_t *j = (prepare_job_t *)w;
  ifd_server_t *s = j->server;
  model_entry_t *e = j->entry;
  size_t i;
  (void)status;

  e->preparing = 0;
  if (j->rc < 0) {
    entry_fail(e, j->err.text[0] ? j->err.text : ifd_strerror(j->rc));
    s->failed++;
    IFD_ERROR("failed to load '%s': %s", e->name, e->reason);
  } else if (j->n_versions == 0) {
    entry_fail(e, "no version is available for the version policy");
    s->failed++;
    IFD_ERROR("failed to load '%s': %s", e->name, e->reason);
  } else {
    for (i = 0; i < j->n_versions; i++) {
      ifd_model_t *m = model_new(s, e, j->versions[i]);
      if (m == NULL) {
        entry_fail(e, "out of memory");
        s->failed++;
        break;
      }
      m->config = i + 1 == j->n_versions ? j->cfg : config_clone(j->cfg);
      if (m->config == NULL) {
        model_fail(m, "out of memory");
        s->failed++;
        continue;
      }
      if (m->config == j->cfg) j->cfg = NULL;
      start_version_load(s, m);
    }
  }
  ifd_config_free(j->cfg);
  free(j->versions);
  free(j);
  work_done(s);
}

static void start_prepare(ifd_server_t *s, model_entry_t *e) {
  prepare_job_t *j = calloc(1, sizeof(*j));
  if (j == NULL) {
    entry_fail(e, "out of memory");
    s->failed++;
    return;
  }
  j->server = s;
  j->entry = e;
  e->preparing = 1;
  s->pending_work++;
  if (uv_queue_work(s->loop, &j->work, prepare_work, prepare_after) < 0) {
    s->pending_work--;
    e->preparing = 0;
    free(j);
    entry_fail(e, "cannot queue the load");
    s->failed++;
  }
}

static void scan_work(uv_work_t *w) {
  scan_job_t *j = (scan_job_t *)w;
  ifd_errclear(&j->err);
  j->rc = ifd_repo_scan(j->server->opts.repos, j->server->opts.n_repos,
                        &j->scan, &j->err);
}

static void scan_after(uv_work_t *w, int status) {
  scan_job_t *j = (scan_job_t *)w;
  ifd_server_t *s = j->server;
  size_t i, k;
  (void)status;

  if (j->rc < 0) {
    IFD_ERROR("cannot read the model repository: %s", j->err.text);
    s->failed++;
  } else {
    for (i = 0; i < j->scan.count; i++) {
      ifd_repo_entry_t *re = &j->scan.entries[i];
      const char *repo = s->opts.repos[0];
      model_entry_t *e;
      for (k = 0; k < s->opts.n_repos; k++) {
        size_t rl = strlen(s->opts.repos[k]);
        if (strncmp(re->path, s->opts.repos[k], rl) == 0 && re->path[rl] == '/')
          repo = s->opts.repos[k];
      }
      if (entry_find(s, re->name, strlen(re->name)) != NULL) continue;
      e = entry_add(s, re->name, re->path, repo);
      if (e == NULL) {
        s->failed++;
        continue;
      }
      start_prepare(s, e);
    }
    /* A name found in several repositories is ambiguous: Triton refuses to
     * load it, and so do we, listing it as unavailable with the reason. */
    for (k = 0; k < j->scan.n_duplicates; k++) {
      const char *name = j->scan.duplicates[k];
      model_entry_t *e = entry_find(s, name, strlen(name));
      if (e == NULL) e = entry_add(s, name, NULL, NULL);
      s->failed++;
      if (e == NULL) continue;
      entry_fail(e, "the model appears in more than one model repository");
      IFD_ERROR("failed to load '%s': %s", e->name, e->reason);
    }
    ifd_repo_scan_free(&j->scan);
  }
  free(j);
  work_done(s);
}

void ifd_server_start(ifd_server_t *s,
                      void (*done)(ifd_server_t *s, int failed, void *arg),
                      void *arg) {
  scan_job_t *j = calloc(1, sizeof(*j));
  s->started = 1;
  s->start_done = done;
  s->start_arg = arg;
  s->pending_work = 1;
  if (j == NULL || (j->server = s, uv_queue_work(s->loop, &j->work, scan_work,
                                                 scan_after)) < 0) {
    free(j);
    IFD_ERROR("cannot start loading models");
    s->failed++;
    s->pending_work = 0;
    s->loading_done = 1;
    if (done != NULL) done(s, s->failed, arg);
  }
}

/* ---- lookup and metadata
 * ------------------------------------------------------ */

int ifd_server_find_model(ifd_server_t *s, const char *name, size_t name_len,
                          int64_t version, ifd_model_t **out,
                          ifd_errmsg_t *err) {
  model_entry_t *e = entry_find(s, name, name_len);
  ifd_model_t *m, *best = NULL;
  int len = name_len > 256 ? 256 : (int)name_len;

  if (e == NULL)
    return ifd_errf(err, IFD_ENOTFOUND,
                    "Request for unknown model: '%.*s' is not found", len,
                    name);
  if (version < 0) {
    for (m = e->versions; m != NULL; m = m->next_version)
      if (m->state == IFD_MODEL_READY) best = m;
    if (best == NULL)
      return ifd_errf(err, IFD_EUNAVAIL,
                      "Request for unknown model: '%.*s' has no available "
                      "versions",
                      len, name);
    *out = best;
    return 0;
  }
  for (m = e->versions; m != NULL; m = m->next_version)
    if (m->version == version) break;
  if (m == NULL)
    return ifd_errf(err, IFD_ENOTFOUND,
                    "Request for unknown model: '%.*s' version %" PRId64
                    " is not found",
                    len, name, version);
  if (m->state != IFD_MODEL_READY)
    return ifd_errf(err, IFD_EUNAVAIL,
                    "Request for unknown model: '%.*s' version %" PRId64
                    " is not at ready state",
                    len, name, version);
  *out = m;
  return 0;
}

int ifd_server_model_ready(ifd_server_t *s, const char *name, size_t name_len,
                           int64_t version) {
  ifd_model_t *m;
  if (s->shutting_down) return 0;
  return ifd_server_find_model(s, name, name_len, version, &m, NULL) == 0;
}

/* The extensions inferd serves, in tritonserver's order. Not listed until
 * they land: classification, the shared memory ones, logging. */
static const char *const extensions[] = {"sequence",
                                         "model_repository",
                                         "model_repository(unload_dependents)",
                                         "schedule_policy",
                                         "model_configuration",
                                         "binary_tensor_data",
                                         "parameters",
                                         "statistics"};

static const ifd_server_info_t server_info = {
    IFD_SERVER_NAME, IFD_SERVER_VERSION, extensions,
    sizeof(extensions) / sizeof(extensions[0])};

const ifd_server_info_t *ifd_server_metadata(const ifd_server_t *s) {
  (void)s;
  return &server_info;
}

/* Points `t` at one config tensor; its shape goes to *shape, which moves on. */
static void tensor_info(ifd_tensor_info_t *t, const char *name, int dtype,
                        const int64_t *dims, size_t n_dims, int batched,
                        int64_t **shape) {
  int64_t *p = *shape;
  t->name = name;
  t->dtype = (ifd_dtype_t)dtype;
  t->shape = p;
  t->n_shape = n_dims + (batched ? 1 : 0);
  if (batched) *p++ = -1;
  if (n_dims > 0) memcpy(p, dims, n_dims * sizeof(*p));
  *shape = p + n_dims;
}

int ifd_server_model_metadata(ifd_server_t *s, const ifd_model_t *m,
                              ifd_model_info_t *out) {
  const ifd_model_config_t *c = m->config;
  model_entry_t *e = entry_find(s, m->name, strlen(m->name));
  const ifd_model_t *v;
  ifd_tensor_info_t *tensors;
  int64_t *versions, *shape;
  size_t i, n_versions = 0, n_dims = 0, n_tensors = c->n_input + c->n_output;
  int batched = c->max_batch_size > 0;

  memset(out, 0, sizeof(*out));
  for (v = e != NULL ? e->versions : NULL; v != NULL; v = v->next_version)
    if (v->state == IFD_MODEL_READY) n_versions++;
  for (i = 0; i < c->n_input; i++) n_dims += c->input[i]->n_dims + 1;
  for (i = 0; i < c->n_output; i++) n_dims += c->output[i]->n_dims + 1;
  /* One block: the tensors, then every int64_t (versions, shapes). */
  out->mem = malloc(n_tensors * sizeof(*tensors) +
                    (n_versions + n_dims) * sizeof(int64_t) + 1);
  if (out->mem == NULL) return IFD_ENOMEM;
  tensors = out->mem;
  versions = (int64_t *)(tensors + n_tensors);
  shape = versions + n_versions;
  for (v = e != NULL ? e->versions : NULL; v != NULL; v = v->next_version)
    if (v->state == IFD_MODEL_READY) versions[out->n_versions++] = v->version;
  for (i = 0; i < c->n_input; i++)
    tensor_info(&tensors[i], c->input[i]->name, c->input[i]->data_type,
                c->input[i]->dims, c->input[i]->n_dims, batched, &shape);
  for (i = 0; i < c->n_output; i++)
    tensor_info(&tensors[c->n_input + i], c->output[i]->name,
                c->output[i]->data_type, c->output[i]->dims,
                c->output[i]->n_dims, batched, &shape);
  out->name = m->name;
  out->platform = c->platform != NULL && c->platform[0] != '\0' ? c->platform
                  : c->backend != NULL                          ? c->backend
                                                                : "";
  out->versions = versions;
  out->inputs = tensors;
  out->n_inputs = c->n_input;
  out->outputs = tensors + c->n_input;
  out->n_outputs = c->n_output;
  return 0;
}

void ifd_model_info_free(ifd_model_info_t *info) {
  free(info->mem);
  info->mem = NULL;
}

void ifd_server_foreach_ready(ifd_server_t *s,
                              void (*fn)(ifd_model_t *m, void *arg),
                              void *arg) {
  size_t i;
  ifd_model_t *m;
  for (i = 0; i < s->n_entries; i++)
    for (m = s->entries[i]->versions; m != NULL; m = m->next_version)
      if (m->state == IFD_MODEL_READY) fn(m, arg);
}

/* Writes the statistics rows of `e`'s READY versions (version -1: all of
 * them) into arr (NULL: only counts them); returns how many. */
static size_t stats_rows(const model_entry_t *e, int64_t version,
                         ifd_stats_entry_t *arr) {
  const ifd_model_t *m;
  size_t n = 0;

  for (m = e->versions; m != NULL; m = m->next_version) {
    if (m->state != IFD_MODEL_READY || (version >= 0 && m->version != version))
      continue;
    if (arr != NULL) {
      arr[n].name = m->name;
      arr[n].version = m->version;
      arr[n].stats = &m->stats;
    }
    n++;
  }
  return n;
}

int ifd_server_stats(ifd_server_t *s, const char *name, size_t name_len,
                     int64_t version, ifd_stats_entry_t **out, size_t *n_out,
                     ifd_errmsg_t *err) {
  model_entry_t *e = NULL;
  ifd_stats_entry_t *arr;
  size_t i, n = 0;
  int len = name_len > 256 ? 256 : (int)name_len;

  *out = NULL;
  *n_out = 0;
  if (name != NULL) {
    e = entry_find(s, name, name_len);
    n = e != NULL ? stats_rows(e, version, NULL) : 0;
    if (n == 0 && (e == NULL || version < 0))
      return ifd_errf(err, IFD_EINVAL,
                      "requested model '%.*s' is not available", len, name);
    if (n == 0)
      return ifd_errf(err, IFD_EINVAL,
                      "requested model version %" PRId64
                      " is not available for model '%.*s'",
                      version, len, name);
  } else {
    for (i = 0; i < s->n_entries; i++) n += stats_rows(s->entries[i], -1, NULL);
    if (n == 0) return 0;
  }
  arr = malloc(n * sizeof(*arr));
  if (arr == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  if (e != NULL) {
    n = stats_rows(e, version, arr);
  } else {
    n = 0;
    for (i = 0; i < s->n_entries; i++)
      n += stats_rows(s->entries[i], -1, arr + n);
  }
  *out = arr;
  *n_out = n;
  return 0;
}

static const char *state_name(ifd_model_state_t st) {
  switch (st) {
    case IFD_MODEL_LOADING:
      return "LOADING";
    case IFD_MODEL_READY:
      return "READY";
    case IFD_MODEL_UNLOADING:
      return "UNLOADING";
    default:
      return "UNAVAILABLE";
  }
}

/* Writes the index rows of `e` into arr (NULL: only counts them); returns
 * how many. */
static size_t index_rows(const model_entry_t *e, int ready_only,
                         ifd_index_entry_t *arr) {
  const ifd_model_t *m;
  size_t n = 0;

  if (e->versions == NULL) {
    if (ready_only) return 0;
    if (arr != NULL) {
      arr->name = e->name;
      arr->version = -1;
      arr->state =
          e->reason == NULL && e->preparing ? "LOADING" : "UNAVAILABLE";
      arr->reason = e->reason;
    }
    return 1;
  }
  for (m = e->versions; m != NULL; m = m->next_version) {
    if (ready_only && m->state != IFD_MODEL_READY) continue;
    if (arr != NULL) {
      arr[n].name = e->name;
      arr[n].version = m->version;
      arr[n].state = state_name(m->state);
      arr[n].reason = m->reason;
    }
    n++;
  }
  return n;
}

int ifd_server_repository_index(ifd_server_t *s, int ready_only,
                                ifd_index_entry_t **out, size_t *n_out) {
  ifd_index_entry_t *arr;
  size_t i, n = 0;

  *out = NULL;
  *n_out = 0;
  for (i = 0; i < s->n_entries; i++)
    n += index_rows(s->entries[i], ready_only, NULL);
  if (n == 0) return 0;
  arr = malloc(n * sizeof(*arr));
  if (arr == NULL) return IFD_ENOMEM;
  n = 0;
  for (i = 0; i < s->n_entries; i++)
    n += index_rows(s->entries[i], ready_only, arr + n);
  *out = arr;
  *n_out = n;
  return 0;
}

/* ---- shutdown ---------------------------------------------------------------
 *
 * Two halves, so that a front end can close its connections in between:
 * ifd_server_drain (not ready; wait for requests in flight, bounded by the
 * deadline), then ifd_server_unload_all (one model version at a time on the
 * thread pool, reverse load order). Nothing here allocates, so nothing has
 * an out-of-memory fallback that could block the loop.
 */

static void unload_next(ifd_server_t *s);

/* The next version to unload: the UNLOADING one loaded last. O(n) per
 * unload, at exit only. */
static ifd_model_t *next_to_unload(ifd_server_t *s) {
  ifd_model_t *best = NULL, *m;
  size_t i;

  for (i = 0; i < s->n_entries; i++)
    for (m = s->entries[i]->versions; m != NULL; m = m->next_version)
      if (m->state == IFD_MODEL_UNLOADING &&
          (best == NULL || m->load_seq > best->load_seq))
        best = m;
  return best;
}

static void unload_work(uv_work_t *w) {
  ifd_server_t *s = ifd_container_of(w, ifd_server_t, unload_work);
  s->opts.ops->unload(s->unloading);
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
    s->opts.ops->stop(m);
    s->unloading = m;
    if (uv_queue_work(s->loop, &s->unload_work, unload_work, unload_after) == 0)
      return;
    /* NEVER: uv_queue_work fails only without a work callback. Leaving the
     * backend loaded beats blocking the loop on its threads. */
    IFD_ERROR("cannot unload '%s' version %" PRId64, m->name, m->version);
    s->unloading = NULL;
    m->state = IFD_MODEL_UNAVAILABLE;
  }
  s->unloaded_ev.fn = on_unloaded;
  ifd_evq_push(&s->evq, &s->unloaded_ev);
}

static void start_unload(ifd_server_t *s) {
  size_t i;
  ifd_model_t *m;

  s->unload_wanted = 0;
  for (i = 0; i < s->n_entries; i++)
    for (m = s->entries[i]->versions; m != NULL; m = m->next_version)
      if (m->state == IFD_MODEL_READY) m->state = IFD_MODEL_UNLOADING;
  unload_next(s);
}

static uint64_t pending_requests(ifd_server_t *s) {
  uint64_t n = 0;
  size_t i;
  ifd_model_t *m;
  for (i = 0; i < s->n_entries; i++)
    for (m = s->entries[i]->versions; m != NULL; m = m->next_version)
      if (m->state == IFD_MODEL_READY) n += s->opts.ops->pending(m);
  return n;
}

/* Calls `drained` once nothing is in flight (loads included) or the
 * deadline has passed. Returns whether it did. */
static int drain_check(ifd_server_t *s) {
  void (*cb)(ifd_server_t *, uint64_t, void *) = s->drained;
  uint64_t n;

  if (cb == NULL) return 1;
  n = pending_requests(s);
  if ((!s->loading_done || n > 0) && uv_now(s->loop) < s->drain_deadline)
    return 0;
  uv_timer_stop(&s->drain_timer);
  if (!s->loading_done)
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

/* Model loading ended while shutting down (work_done). */
static void loaded_while_stopping(ifd_server_t *s) {
  drain_check(s);
  if (s->unload_wanted) start_unload(s);
}

void ifd_server_drain(ifd_server_t *s, uint64_t deadline_ms,
                      void (*drained)(ifd_server_t *s, uint64_t left,
                                      void *arg),
                      void *arg) {
  s->drained = drained;
  s->drained_arg = arg;
  if (!s->started) s->loading_done = 1; /* nothing was ever loaded */
  /* Loads in flight own their models: they finish first. Their end is no
   * longer reported to ifd_server_start's caller. */
  if (!s->loading_done) s->start_done = NULL;
  s->shutting_down = 1;
  s->drain_deadline =
      deadline_ms != 0
          ? deadline_ms
          : uv_now(s->loop) + (uint64_t)(s->opts.exit_timeout_secs > 0
                                             ? s->opts.exit_timeout_secs
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
  s->shutting_down = 1;
  if (!s->started) s->loading_done = 1;
  if (!s->loading_done) {
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
  if (--s->closing_handles > 0) return;
  for (size_t i = 0; i < s->opts.n_repos; i++) free(s->repos[i]);
  free(s->repos);
  free(s->backend_dir);
  free(s);
}

void ifd_server_free(ifd_server_t *s) {
  size_t i;
  if (s == NULL) return;
  /* First run whatever the last unloads pushed: those events still write
   * into the models (backend_api frees its model objects there). */
  ifd_evq_drain(&s->evq);
  for (i = 0; i < s->n_entries; i++) entry_free(s->entries[i]);
  free(s->entries);
  ifd_strmap_free(&s->by_name);
  /* Every request should be gone by now; one that is not (a protocol
   * still closing) is freed directly when it goes. */
  ifd_objcache_drain(&s->req_cache);
  ifd_objcache_init(&s->req_cache, sizeof(ifd_request_t), 0);
  s->closing_handles = 3;
  s->evq.async.data = s;
  s->drain_timer.data = s;
  s->iter_end.data = s;
  ifd_evq_close(&s->evq, on_handle_closed);
  uv_close((uv_handle_t *)&s->drain_timer, on_handle_closed);
  uv_close((uv_handle_t *)&s->iter_end, on_handle_closed);
}

/* ---- model control ----------------------------------------------------------
 */

int ifd_server_load_model(ifd_server_t *s, const char *name, size_t name_len,
                          const ifd_load_params_t *params, ifd_load_cb done,
                          void *arg, ifd_load_call_t **call,
                          ifd_errmsg_t *err) {
  (void)name;
  (void)name_len;
  (void)params;
  (void)done;
  (void)arg;
  if (call != NULL) *call = NULL;
  if (s->opts.control_mode != IFD_CONTROL_EXPLICIT || s->shutting_down)
    return ifd_errf(err, IFD_EUNAVAIL, "%s", IFD_MODEL_CONTROL_REFUSED_TEXT);
  return ifd_errf(err, IFD_EUNSUPPORTED, "not implemented yet");
}

void ifd_load_call_forget(ifd_load_call_t *call) {
  (void)call;
}

int ifd_server_unload_model(ifd_server_t *s, const char *name, size_t name_len,
                            int unload_dependents, ifd_errmsg_t *err) {
  (void)name;
  (void)name_len;
  (void)unload_dependents;
  if (s->opts.control_mode != IFD_CONTROL_EXPLICIT || s->shutting_down)
    return ifd_errf(err, IFD_EUNAVAIL, "%s", IFD_MODEL_CONTROL_REFUSED_TEXT);
  return ifd_errf(err, IFD_EUNSUPPORTED, "not implemented yet");
}
