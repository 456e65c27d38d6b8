/*
 * core/registry.c - the model registry: which models exist, which of their
 * versions serve, and every change to that (start-up, load, reload, unload,
 * repository polling).
 *
 * Each model name has an entry and a queue of operations (load or unload)
 * that run one at a time in arrival order, so concurrent calls on a model
 * are serialized and the last word wins. An operation's blocking parts run
 * on libuv's thread pool (their work functions are core/registry_work.c's)
 * and report back in after-work callbacks:
 *
 *   LOAD:   prepare (pool: find the folder, write override files, read and
 *           validate the config, pick versions, fingerprint the files)
 *           -> for an ensemble: its composing models loaded first (each a
 *           dependency load queued on that model), cycle and cross-model
 *           checks -> every version loaded beside what serves (pool, through
 *           ops->load) -> all ready: the new set takes traffic at once, the
 *           old versions retire (they finish the requests they accepted,
 *           then unload) | some failed: the old set keeps serving.
 *   UNLOAD: every serving version refuses what is queued, finishes what
 *           executes, and unloads (pool); the caller is answered at once.
 *
 * A load of a serving model whose files did not change (same fingerprint,
 * no override) does nothing. In poll mode a timer rescans the repositories
 * (pool) and queues the loads, reloads and unloads the changes call for.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ensemble_check.h"
#include "core/cache.h"
#include "base/log.h"
#include "core/server_internal.h"
#include "base/util.h"

#include "core/registry_internal.h"

static void op_start(reg_op_t *op);
static void op_finish(reg_op_t *op, int rc, const char *msg);
static void op_continue(reg_op_t *op);
static void retire_check(ifd_server_t *s);
static void on_retire_timer(uv_timer_t *t);

/* ---- small helpers ----------------------------------------------------------
 */

/* Triton's prefix of a status in a reason: the name of its error class. */
static const char *status_name(int code) {
  switch (code) {
    case IFD_EINVAL:
    case IFD_EPARSE:
    case IFD_ETOOBIG:
      return "Invalid argument";
    case IFD_ENOTFOUND:
      return "Not found";
    case IFD_EUNAVAIL:
    case IFD_ETIMEOUT:
      return "Unavailable";
    case IFD_EUNSUPPORTED:
      return "Unsupported";
    case IFD_EEXISTS:
      return "Already exists";
    case IFD_ECANCELLED:
      return "Cancelled";
    case IFD_EUNKNOWN:
      return "Unknown";
    default:
      return "Internal";
  }
}

/* "<Status>: <text>" as Triton writes a failed version's reason. */
static char *status_text(int code, const char *text) {
  const char *name = status_name(code);
  char *r = malloc(strlen(name) + strlen(text) + 3);
  if (r != NULL) sprintf(r, "%s: %s", name, text);
  return r;
}

void ifd__reg_set_str(char **slot, const char *val) {
  free(*slot);
  *slot = ifd_strdup_null(val);
}

/* ---- entries and model objects
 * ------------------------------------------------
 */

static void src_unref(ifd_server_t *s, ifd_model_src_t *src);

static void model_released(ifd_model_t *m);

static ifd_model_t *model_new(ifd_server_t *s, model_entry_t *e,
                              int64_t version, const char *path) {
  ifd_model_t *m = calloc(1, sizeof(*m));
  if (m == NULL) return NULL;
  m->server = s;
  m->name = strdup(e->name);
  m->path = strdup(path);
  m->repo = strdup(e->repo != NULL ? e->repo : "");
  m->version = version;
  m->state = IFD_MODEL_LOADING;
  m->refs = 1; /* the registry's */
  m->free_fn = model_released;
  if (s->rt.opts.summary_latencies)
    m->stats.summary = calloc(1, sizeof(*m->stats.summary));
  if (m->name == NULL || m->path == NULL || m->repo == NULL ||
      (s->rt.opts.summary_latencies && m->stats.summary == NULL)) {
    free(m->stats.summary);
    free(m->name);
    free(m->path);
    free(m->repo);
    free(m);
    return NULL;
  }
  return m;
}

/* Called when a model's last reference goes (its free_fn). The registry
 * keeps its own reference until the model leaves it, so this only runs
 * after that. */
static void model_released(ifd_model_t *m) {
  ifd_server_t *s = m->server;
  ifd_stats_free(&m->stats);
  ifd__model_free_labels(m);
  ifd_config_free(m->config);
  if (m->src != NULL) src_unref(s, m->src);
  free(m->name);
  free(m->path);
  free(m->repo);
  free(m->reason);
  free(m);
}

static void model_fail(ifd_model_t *m, int code, const char *why) {
  m->state = IFD_MODEL_UNAVAILABLE;
  free(m->reason);
  m->reason = status_text(code, why);
}

/* Inserts `m` into a list kept in ascending version order. */
static void list_insert(ifd_model_t **list, ifd_model_t *m) {
  ifd_model_t **pp = list;
  while (*pp != NULL && (*pp)->version < m->version) pp = &(*pp)->next_version;
  m->next_version = *pp;
  *pp = m;
}

static void list_remove(ifd_model_t **list, ifd_model_t *m) {
  ifd_model_t **pp = list;
  while (*pp != NULL && *pp != m) pp = &(*pp)->next_version;
  if (*pp == m) *pp = m->next_version;
  m->next_version = NULL;
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

/* ---- thread-pool jobs -------------------------------------------------------
 */

/* A job's own copy of the repository list: TRITONSERVER_ServerRegister/
 * UnregisterModelRepository change the server's on the loop while jobs run.
 * Returns 0 or IFD_ENOMEM. */
int ifd__reg_repos_copy(const ifd_server_t *s, char ***out, size_t *n) {
  char **a = calloc(s->rt.opts.n_repos ? s->rt.opts.n_repos : 1, sizeof(*a));
  size_t i;
  if (a == NULL) return IFD_ENOMEM;
  for (i = 0; i < s->rt.opts.n_repos; i++) {
    a[i] = strdup(s->rt.opts.repos[i]);
    if (a[i] == NULL) {
      while (i > 0) free(a[--i]);
      free(a);
      return IFD_ENOMEM;
    }
  }
  *out = a;
  *n = s->rt.opts.n_repos;
  return 0;
}

void ifd__reg_repos_free(char **a, size_t n) {
  size_t i;
  for (i = 0; a != NULL && i < n; i++) free(a[i]);
  free(a);
}

static reg_job_t *job_new(ifd_server_t *s, reg_op_t *op, ifd_model_t *m) {
  reg_job_t *j = calloc(1, sizeof(*j));
  if (j == NULL) return NULL;
  j->server = s;
  j->op = op;
  j->model = m;
  return j;
}

/* Queues `j`; 0, or a negative code (j freed). */
static int job_queue(reg_job_t *j, uv_work_cb work, uv_after_work_cb after) {
  ifd_server_t *s = j->server;
  s->jobs++;
  if (uv_queue_work(s->rt.loop, &j->work, work, after) == 0) return 0;
  s->jobs--;
  free(j->name);
  free(j->path);
  ifd__reg_repos_free(j->repos, j->n_repos);
  free(j);
  return IFD_EINTERNAL;
}

/* Ends a job's accounting (after-work callbacks, last). */
static void job_end(ifd_server_t *s, reg_job_t *j) {
  free(j->name);
  free(j->path);
  free(j->repo);
  ifd__reg_repos_free(j->repos, j->n_repos);
  free(j);
  s->jobs--;
  if (ifd__registry_idle(s)) ifd__server_registry_idle(s);
}

static void rm_after(uv_work_t *w, int status) {
  reg_job_t *j = (reg_job_t *)w;
  (void)status;
  job_end(j->server, j);
}

static void src_unref(ifd_server_t *s, ifd_model_src_t *src) {
  reg_job_t *j = NULL;
  if (--src->refs > 0) return;
  if (s->freeing) {
    /* The server is going: nothing will serve any more, and a job would
     * report to a freed server. */
    ifd_repo_remove_temp(src->dir);
    free(src->dir);
    free(src);
    return;
  }
  j = job_new(s, NULL, NULL);
  if (j != NULL) {
    j->path = src->dir;
    src->dir = NULL;
    if (job_queue(j, ifd__reg_rm_work, rm_after) < 0)
      IFD_WARN("cannot remove a temporary model folder");
  }
  if (src->dir != NULL)
    IFD_WARN("temporary model folder '%s' left on disk", src->dir);
  free(src->dir);
  free(src);
}

/* ---- operations -------------------------------------------------------------
 */

reg_op_t *ifd__reg_op_new(ifd_server_t *s, model_entry_t *e, op_kind_t kind) {
  reg_op_t *op = calloc(1, sizeof(*op));
  if (op == NULL) return NULL;
  op->server = s;
  op->entry = e;
  op->kind = kind;
  return op;
}

/* Appends `op` to its entry's queue and starts it if it is the head. */
void ifd__reg_op_enqueue(reg_op_t *op) {
  model_entry_t *e = op->entry;
  reg_op_t **pp = &e->ops;
  while (*pp != NULL) pp = &(*pp)->next;
  *pp = op;
  op->server->ops_live++;
  if (e->ops == op) op_start(op);
}

/* Ends a chain of repository agents no version took (LOAD_FAIL, then
 * ModelFinalize), on the pool. */
static void agents_end(ifd_server_t *s, void *chain) {
  reg_job_t *j;
  if (s->freeing) {
    s->rt.opts.repoagent_ops->release(chain);
    return;
  }
  j = job_new(s, NULL, NULL);
  if (j != NULL) {
    j->agents = chain;
    if (job_queue(j, ifd__reg_agents_end_work, rm_after) == 0) return;
  }
  IFD_ERROR("cannot end the repository agents of a load");
}

void ifd__reg_op_free(reg_op_t *op) {
  ifd_server_t *s = op->server;
  if (op->agents != NULL) agents_end(s, op->agents);
  free(op->end_msg);
  free(op->config);
  free(op->files);
  free(op->call);
  free(op->waiters);
  ifd_config_free(op->cfg);
  free(op->versions);
  ifd__reg_unref_list(op->staged);
  if (op->src != NULL) src_unref(s, op->src);
  free(op);
}

static int add_waiter(reg_op_t *dep, reg_op_t *waiter) {
  reg_op_t **w =
      realloc(dep->waiters, (dep->n_waiters + 1) * sizeof(*dep->waiters));
  if (w == NULL) return IFD_ENOMEM;
  dep->waiters = w;
  w[dep->n_waiters++] = waiter;
  waiter->deps++;
  return 0;
}

/* Ends `op`: answers its caller, wakes the ops waiting for it, and starts
 * the next op of its entry. */
static void op_finish(reg_op_t *op, int rc, const char *msg) {
  ifd_server_t *s = op->server;
  model_entry_t *e = op->entry;
  size_t i;

  if (op->call != NULL && op->call->done != NULL)
    op->call->done(rc, rc < 0 ? msg : "", op->call->arg);
  if (op->startup && rc < 0) s->rt.failed++;
  e->ops = op->next;
  for (i = 0; i < op->n_waiters; i++)
    if (--op->waiters[i]->deps == 0) op_continue(op->waiters[i]);
  if (op->startup && --s->startup_ops == 0) ifd__server_loading_done(s);
  s->ops_live--;
  ifd__reg_op_free(op);
  if (e->ops != NULL) {
    op_start(e->ops);
  } else if (!e->listed && e->versions == NULL && e->retired == NULL &&
             e->reason == NULL) {
    /* Named by a request but never found: no trace of it is kept. */
    ifd__reg_entry_remove(s, e);
  }
  if (ifd__registry_idle(s)) ifd__server_registry_idle(s);
}

/* ---- unloading --------------------------------------------------------------
 */

static void unload_done_ev(ifd_event_t *ev);

/* The unload ran; its completion waits for the events it pushed (the layers
 * above core free their model objects from them; the queue is FIFO). */
static void unload_after(uv_work_t *w, int status) {
  reg_job_t *j = (reg_job_t *)w;
  (void)status;
  j->ev.fn = unload_done_ev;
  ifd_evq_push(&j->server->rt.evq, &j->ev);
}

static void version_unloaded(ifd_server_t *s, ifd_model_t *m, reg_op_t *op);

static void unload_done_ev(ifd_event_t *ev) {
  reg_job_t *j = ifd_container_of(ev, reg_job_t, ev);
  ifd_server_t *s = j->server;
  ifd_model_t *m = j->model;
  reg_op_t *op = j->op;
  IFD_INFO("successfully unloaded '%s' version %" PRId64, m->name, m->version);
  version_unloaded(s, m, op);
  job_end(s, j);
}

/* Unloads one READY version on the pool: what is queued for it is refused,
 * what executes finishes first. `op` (may be NULL) hears of its end. */
static void version_unload(ifd_server_t *s, ifd_model_t *m, reg_op_t *op) {
  reg_job_t *j = job_new(s, op, m);
  s->rt.opts.ops->stop(m);
  m->state = IFD_MODEL_UNLOADING;
  if (op != NULL) op->loading++;
  if (j == NULL || job_queue(j, ifd__reg_unload_work, unload_after) < 0) {
    /* Leaving the backend loaded beats blocking the loop on its threads. */
    IFD_ERROR("cannot unload '%s' version %" PRId64, m->name, m->version);
    version_unloaded(s, m, op);
  }
}

static model_entry_t *entry_of(ifd_server_t *s, const ifd_model_t *m) {
  return ifd__entry_of(s, m);
}

static void version_unloaded(ifd_server_t *s, ifd_model_t *m, reg_op_t *op) {
  model_entry_t *e = entry_of(s, m);
  int retired = 0;

  m->state = IFD_MODEL_UNAVAILABLE;
  if (e != NULL) {
    for (ifd_model_t *r = e->retired; r != NULL; r = r->next_version)
      if (r == m) retired = 1;
  }
  if (retired) {
    /* A replaced version: gone from the registry once unloaded. */
    list_remove(&e->retired, m);
    ifd_model_unref(m);
  } else {
    ifd__reg_set_str(&m->reason, "unloaded");
  }
  if (op != NULL && --op->loading == 0) op_finish(op, 0, NULL);
}

/* Queues an unload of `name`'s composing models that were loaded for it
 * only (unload_dependents), for the ensemble config `cfg`. */
static void unload_dependents(ifd_server_t *s, const char *repo,
                              const ifd_model_config_t *cfg) {
  const Inference__ModelEnsembling *es = cfg->ensemble_scheduling;
  for (size_t i = 0; i < es->n_step; i++) {
    const char *dep = es->step[i]->model_name;
    model_entry_t *d = ifd__entry_resolve(s, repo, dep, strlen(dep), NULL);
    reg_op_t *op;
    if (d == NULL || d->by_name || !ifd__entry_serves(d)) continue;
    op = ifd__reg_op_new(s, d, OP_UNLOAD);
    if (op == NULL) continue;
    op->unload_dependents = 1;
    ifd__reg_op_enqueue(op);
  }
}

static void unload_start(reg_op_t *op) {
  ifd_server_t *s = op->server;
  model_entry_t *e = op->entry;
  ifd_model_t *m;
  ifd_model_config_t *ens = NULL;

  if (op->by_name) e->by_name = 0;
  for (m = e->versions; m != NULL; m = m->next_version)
    if (m->state == IFD_MODEL_READY && ifd__reg_is_ensemble(m->config))
      ens = m->config;
  if (op->unload_dependents && ens != NULL) {
    /* Queued behind this op on other entries: the config outlives them. */
    unload_dependents(s, e->repo, ens);
  }
  op->loading = 1; /* held until every version is asked */
  for (m = e->versions; m != NULL; m = m->next_version)
    if (m->state == IFD_MODEL_READY) version_unload(s, m, op);
  free(e->reload_reason);
  e->reload_reason = NULL;
  if (--op->loading == 0) op_finish(op, 0, NULL);
}

/* ---- retiring ---------------------------------------------------------------
 *
 * A reload leaves the old versions READY but out of reach: lookups see the
 * new set only. Each keeps running what it accepted; once nothing is queued
 * or executing for it, it unloads. A timer looks while any is waiting.
 */

static void retire(ifd_server_t *s, model_entry_t *e, ifd_model_t *m) {
  list_insert(&e->retired, m);
  if (m->state != IFD_MODEL_READY) return;
  s->n_retired++;
  retire_check(s);
}

/* Live sequences of a retired version: they stay on it until they end
 * (END, or the idle timeout), so a reload cuts no sequence short. */
static int holds_sequences(ifd_server_t *s, const ifd_model_t *m) {
  uint64_t active = 0, backlog = 0;
  if (s->rt.opts.ops->sequences == NULL ||
      s->rt.opts.ops->sequences(m, &active, &backlog) < 0)
    return 0;
  return active + backlog > 0;
}

static void retire_check(ifd_server_t *s) {
  size_t i;
  if (s->n_retired == 0) {
    uv_timer_stop(&s->retire_timer);
    return;
  }
  for (i = 0; i < s->n_entries; i++) {
    ifd_model_t *m, *next;
    for (m = s->entries[i]->retired; m != NULL; m = next) {
      next = m->next_version;
      if (m->state != IFD_MODEL_READY || s->rt.opts.ops->pending(m) > 0 ||
          holds_sequences(s, m))
        continue;
      s->n_retired--;
      version_unload(s, m, NULL);
    }
  }
  if (s->n_retired > 0 && !uv_is_active((uv_handle_t *)&s->retire_timer))
    uv_timer_start(&s->retire_timer, on_retire_timer, 5, 5);
  else if (s->n_retired == 0)
    uv_timer_stop(&s->retire_timer);
}

static void on_retire_timer(uv_timer_t *t) {
  retire_check(t->data);
}

/* ---- loading ----------------------------------------------------------------
 */

/* A model-level failure of `op`'s load: recorded where the index shows it
 * (the model's row when nothing serves, else the serving versions'). */
static void load_refused(reg_op_t *op, const char *reason, const char *msg) {
  model_entry_t *e = op->entry;
  if (ifd__entry_serves(e)) {
    ifd__reg_set_str(&e->reload_reason, reason);
  } else {
    ifd__reg_unref_list(e->versions);
    e->versions = NULL;
    ifd__reg_set_str(&e->reason, reason);
  }
  IFD_ERROR("failed to load '%s': %s", e->name, reason);
  op_finish(op, IFD_EINVAL, msg);
}

static void prepare_after(uv_work_t *w, int status) {
  reg_job_t *j = (reg_job_t *)w;
  ifd_server_t *s = j->server;
  reg_op_t *op = j->op;
  model_entry_t *e = op->entry;
  char msg[MSG_MAX];
  (void)status;

  if (j->path != NULL && e->path == NULL && op->n_files == 0) {
    e->path = j->path;
    e->repo = j->repo;
    j->path = j->repo = NULL;
  }
  if (op->n_files > 0 && j->rc == 0) {
    op->src = calloc(1, sizeof(*op->src));
    if (op->src == NULL) {
      ifd_repo_remove_temp(j->path);
      j->rc = ifd_errf(&j->err, IFD_ENOMEM, "out of memory");
    } else {
      op->src->refs = 1;
      op->src->dir = j->path;
      j->path = NULL;
    }
  }
  if (j->rc < 0) {
    snprintf(msg, sizeof(msg),
             "failed to load '%s', failed to poll from model repository",
             e->name);
    if (j->rc == IFD_ENOTFOUND && e->path == NULL) {
      IFD_ERROR("failed to load '%s': no such model in the repository",
                e->name);
      op_finish(op, IFD_EINVAL, msg);
    } else if (j->rc == IFD_EPARSE && op->config != NULL) {
      IFD_ERROR("failed to load '%s': %s", e->name, j->err.text);
      op_finish(op, IFD_EINVAL, msg);
    } else {
      const char *why = j->err.text[0] ? j->err.text : ifd_strerror(j->rc);
      size_t n = strlen(msg);
      /* Triton's answer, with the reason it logs. */
      snprintf(msg + n, sizeof(msg) - n, ": %s", why);
      e->fp = op->fp;
      load_refused(op, why, msg);
    }
    job_end(s, j);
    return;
  }
  ifd_config_free(e->cfg);
  e->cfg = config_clone(op->cfg);
  if (ifd__entry_serves(e) && ifd__reg_unchanged(e, op)) {
    op_finish(op, 0, NULL);
    job_end(s, j);
    return;
  }
  e->fp = op->fp;
  if (op->n_versions == 0) {
    snprintf(msg, sizeof(msg), "failed to load '%s', no version is available",
             e->name);
    load_refused(op, "no version is available for the version policy", msg);
    job_end(s, j);
    return;
  }
  if (ifd__reg_is_ensemble(op->cfg)) {
    const Inference__ModelEnsembling *es = op->cfg->ensemble_scheduling;
    ifd_reg_ens_ctx_t ctx = {s, e->repo};
    ifd_errmsg_t err;
    ifd_errclear(&err);
    if (ifd_ensemble_find_cycle(op->cfg, ifd__reg_ens_config_of, &ctx, &err) <
        0) {
      char *r = status_text(err.code, err.text);
      load_refused(op, r != NULL ? r : err.text, err.text);
      free(r);
      job_end(s, j);
      return;
    }
    /* Composing models load first: a dependency load on each that does not
     * serve yet (or is busy), this op waiting for all of them. */
    op->deps = 1; /* held while the dependencies are queued */
    for (size_t i = 0; i < es->n_step; i++) {
      const char *dn = es->step[i]->model_name;
      size_t n;
      model_entry_t *d = ifd__entry_resolve(s, e->repo, dn, strlen(dn), &n);
      reg_op_t *dop;
      if (d == e || (d == NULL && n > 1)) continue; /* ambiguous: refused */
      if (d != NULL && d->ops == NULL && ifd__entry_serves(d)) continue;
      if (d == NULL && (d = ifd__reg_entry_add(s, dn, NULL, NULL)) == NULL)
        continue;
      /* A step naming the same model twice waits once. */
      dop = d->ops;
      while (dop != NULL && dop->next != NULL) dop = dop->next;
      if (dop != NULL && dop->kind == OP_LOAD && dop->dep_only &&
          !dop->started) {
        add_waiter(dop, op);
        continue;
      }
      dop = ifd__reg_op_new(s, d, OP_LOAD);
      if (dop == NULL) continue;
      dop->dep_only = 1;
      if (add_waiter(dop, op) < 0) {
        ifd__reg_op_free(dop);
        continue;
      }
      ifd__reg_op_enqueue(dop);
    }
    job_end(s, j);
    if (--op->deps == 0) op_continue(op);
    return;
  }
  job_end(s, j);
  op_continue(op);
}

static void settle(reg_op_t *op);

static void load_after(uv_work_t *w, int status) {
  reg_job_t *j = (reg_job_t *)w;
  ifd_server_t *s = j->server;
  ifd_model_t *m = j->model;
  reg_op_t *op = j->op;
  (void)status;

  if (j->rc == 0) {
    m->state = IFD_MODEL_READY;
    m->load_seq = ++s->load_seq;
    IFD_INFO("successfully loaded '%s' version %" PRId64, m->name, m->version);
    if (m->config->response_cache != NULL &&
        m->config->response_cache->enable && !ifd_cache_model_on(m))
      IFD_INFO(
          "model '%s' enables response_cache, but the server has no "
          "response cache (--cache-config): its responses are not cached",
          m->name);
  } else {
    model_fail(m, j->rc, j->err.text[0] ? j->err.text : ifd_strerror(j->rc));
    IFD_ERROR("failed to load '%s' version %" PRId64 ": %s", m->name,
              m->version, m->reason);
  }
  job_end(s, j);
  if (--op->loading == 0) settle(op);
}

/* The dependencies of `op` (if any) have ended: check, then load every
 * version beside what serves. */
static void op_continue(reg_op_t *op) {
  ifd_server_t *s = op->server;
  model_entry_t *e = op->entry;
  const char *dir = op->agent_loc != NULL ? op->agent_loc
                    : op->src != NULL     ? op->src->dir
                                          : e->path;
  size_t i;

  if (ifd__reg_is_ensemble(op->cfg)) {
    ifd_reg_ens_ctx_t ctx = {s, e->repo};
    ifd_errmsg_t err;
    ifd_errclear(&err);
    if (ifd_ensemble_find_cycle(op->cfg, ifd__reg_ens_config_of, &ctx, &err) <
            0 ||
        ifd_ensemble_check(op->cfg, ifd__reg_ens_lookup, &ctx, &err) < 0) {
      char *r = status_text(err.code, err.text);
      load_refused(op, r != NULL ? r : err.text, err.text);
      free(r);
      return;
    }
    /* As Triton: an ensemble streams when a composing model does. */
    if (op->cfg->model_transaction_policy != NULL &&
        ifd_ensemble_decoupled(op->cfg, ifd__reg_ens_lookup, &ctx))
      op->cfg->model_transaction_policy->decoupled = 1;
  }
  op->loading = 1; /* held while the loads are queued */
  for (i = 0; i < op->n_versions; i++) {
    ifd_model_t *m = model_new(s, e, op->versions[i], dir);
    reg_job_t *j;
    if (m == NULL) continue;
    list_insert(&op->staged, m);
    m->config = i + 1 == op->n_versions ? op->cfg : config_clone(op->cfg);
    m->group_defaults = op->group_defaults;
    if (m->config == op->cfg) op->cfg = NULL;
    if (op->src != NULL) {
      m->src = op->src;
      op->src->refs++;
    }
    if (m->config == NULL) {
      model_fail(m, IFD_ENOMEM, "out of memory");
      continue;
    }
    j = job_new(s, op, m);
    if (j == NULL) {
      model_fail(m, IFD_ENOMEM, "out of memory");
      continue;
    }
    op->loading++;
    if (job_queue(j, ifd__reg_load_work, load_after) < 0) {
      op->loading--;
      model_fail(m, IFD_EINTERNAL, "cannot queue the load");
    }
  }
  if (--op->loading == 0) settle(op);
}

/* Hands the chain of `op`'s agents to its READY versions, with one hold
 * for telling the agents how the load went (op_end). */
static void agents_share(reg_op_t *op) {
  ifd_model_agents_t *ma = calloc(1, sizeof(*ma));
  unsigned live = 1;
  if (ma == NULL) return; /* op_free ends the chain: LOAD_FAIL */
  ma->chain = op->agents;
  ma->ops = op->server->rt.opts.repoagent_ops;
  for (ifd_model_t *m = op->staged; m != NULL; m = m->next_version)
    if (m->state == IFD_MODEL_READY) {
      m->agents = ma;
      live++;
    }
  atomic_init(&ma->live, live);
  op->agents = NULL;
  op->ma = ma;
}

static void agents_loaded_after(uv_work_t *w, int status) {
  reg_job_t *j = (reg_job_t *)w;
  reg_op_t *op = j->op;
  (void)status;
  job_end(j->server, j);
  op_finish(op, op->end_rc, op->end_msg);
}

/* Ends `op` with (rc, msg), its agents (if any) told LOAD_COMPLETE (ok) or
 * LOAD_FAIL first. */
static void op_end(reg_op_t *op, int rc, const char *msg, int ok) {
  ifd_server_t *s = op->server;
  reg_job_t *j;
  if (op->ma == NULL) {
    op_finish(op, rc, msg);
    return;
  }
  op->end_rc = rc;
  op->end_msg = ifd_strdup_null(msg);
  j = job_new(s, op, NULL);
  if (j != NULL) {
    j->ma = op->ma;
    j->agents_ok = ok;
    if (job_queue(j, ifd__reg_agents_loaded_work, agents_loaded_after) == 0)
      return;
  }
  /* Out of memory only: the agents miss LOAD_COMPLETE; they still end
   * with the last version that unloads, or stay (logged) when none
   * loaded: ending them would block the loop. */
  IFD_ERROR("cannot tell the repository agents of '%s' how its load went",
            op->entry->name);
  if (atomic_fetch_sub(&op->ma->live, 1) == 1)
    IFD_ERROR("the repository agents of '%s' are left loaded", op->entry->name);
  op_finish(op, rc, msg);
}

/* Every version of `op` has loaded or failed: swap or keep. */
static void settle(reg_op_t *op) {
  ifd_server_t *s = op->server;
  model_entry_t *e = op->entry;
  ifd_model_t *m, *next;
  char msg[MSG_MAX];
  size_t used = 0;
  int failed = 0, serving = ifd__entry_serves(e);

  const char *first = NULL;

  msg[0] = '\0';
  for (m = op->staged; m != NULL; m = m->next_version) {
    if (m->state == IFD_MODEL_READY) continue;
    failed++;
    if (first == NULL) first = m->reason;
    if (used < sizeof(msg)) {
      /* Triton lists each failed version, each ending in ";\n". */
      int n = snprintf(msg + used, sizeof(msg) - used,
                       "version %" PRId64 " is at UNAVAILABLE state: %s;\n",
                       m->version, m->reason != NULL ? m->reason : "");
      used += n > 0 ? (size_t)n : 0;
    }
  }
  if (op->staged == NULL) failed = 1;
  if (op->agents != NULL) agents_share(op);
  if (failed && serving) {
    /* The old set keeps serving; what did load of the new one unloads. */
    ifd__reg_set_str(&e->reload_reason,
                     first != NULL ? first : "reload failed");
    for (m = op->staged; m != NULL; m = next) {
      next = m->next_version;
      m->next_version = NULL;
      if (m->state == IFD_MODEL_READY)
        retire(s, e, m);
      else
        ifd_model_unref(m);
    }
    op->staged = NULL;
  } else {
    /* The new set takes traffic now; the old one finishes what it has. */
    ifd_model_t *old = e->versions;
    e->versions = op->staged;
    op->staged = NULL;
    for (m = old; m != NULL; m = next) {
      next = m->next_version;
      m->next_version = NULL;
      if (m->state == IFD_MODEL_READY)
        retire(s, e, m);
      else
        ifd_model_unref(m);
    }
    free(e->reason);
    e->reason = NULL;
    free(e->reload_reason);
    e->reload_reason = NULL;
    e->override = op->config != NULL || op->n_files > 0;
  }
  if (failed) {
    char full[MSG_MAX + 256];
    snprintf(full, sizeof(full), "load failed for model '%s': %s", e->name,
             msg);
    op_end(op, IFD_EINVAL, full, !failed);
  } else {
    op_end(op, 0, NULL, !failed);
  }
}

static void op_start(reg_op_t *op) {
  ifd_server_t *s = op->server;
  model_entry_t *e = op->entry;
  reg_job_t *j;
  char msg[512];
  int mapped = 0;

  op->started = 1;
  if (op->kind == OP_UNLOAD) {
    unload_start(op);
    return;
  }
  if (op->by_name) e->by_name = 1;
  if (op->dep_only && ifd__entry_serves(e)) {
    op_finish(op, 0, NULL);
    return;
  }
  j = ifd__reg_locate(s, e, &mapped) == 0 ? job_new(s, op, NULL) : NULL;
  if (j != NULL) {
    j->name = strdup(e->name);
    j->path = ifd_strdup_null(e->path);
    j->same_fp = ifd__reg_unchanged_fp(e, op);
    j->mapped = mapped;
  }
  if (j == NULL || j->name == NULL || (e->path != NULL && j->path == NULL) ||
      (e->path == NULL && ifd__reg_repos_copy(s, &j->repos, &j->n_repos) < 0) ||
      job_queue(j, ifd__reg_prepare_work, prepare_after) < 0) {
    if (j != NULL) {
      free(j->name);
      free(j->path);
      ifd__reg_repos_free(j->repos, j->n_repos);
      free(j);
    }
    snprintf(msg, sizeof(msg), "failed to load '%s': out of memory", e->name);
    op_finish(op, IFD_ENOMEM, msg);
  }
}
