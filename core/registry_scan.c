/*
 * core/registry_scan.c - the registry's view of the repositories: the scan
 * at start-up and the loads it queues, polling for changes (a timer, or a
 * client's poll) and the loads and unloads they call for, repository
 * registration, and where a load of a model reads its folder. Scans run on
 * libuv's thread pool; everything else on the loop. The operations themselves
 * are core/registry.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "core/registry_internal.h"

typedef struct scan_job {
  uv_work_t work;       /* embedded */
  ifd_server_t *server; /* borrowed */
  ifd_repo_scan_t scan; /* owned */
  char **repos;         /* owned: the repository list when queued */
  size_t n_repos;
  uint64_t *fps; /* owned: poll only, one per scan entry */
  int poll;
  int rc;
  ifd_errmsg_t err;
} scan_job_t;

static void scan_work(uv_work_t *w) {
  scan_job_t *j = (scan_job_t *)w;
  ifd_errclear(&j->err);
  j->rc =
      ifd_repo_scan_ns((const char *const *)j->repos, j->n_repos,
                       j->server->rt.opts.model_namespacing, &j->scan, &j->err);
  if (j->rc < 0 || !j->poll || j->scan.count == 0) return;
  j->fps = calloc(j->scan.count, sizeof(*j->fps));
  for (size_t i = 0; j->fps != NULL && i < j->scan.count; i++)
    j->fps[i] = ifd_repo_fingerprint(j->scan.entries[i].path);
}

/* Queues a load of `e` by name; `startup` counts it toward start-up. */
static reg_op_t *queue_load(ifd_server_t *s, model_entry_t *e, int startup) {
  reg_op_t *op = ifd__reg_op_new(s, e, OP_LOAD);
  if (op == NULL) {
    if (startup) s->rt.failed++;
    return NULL;
  }
  op->by_name = 1;
  op->startup = startup;
  if (startup) s->startup_ops++;
  ifd__reg_op_enqueue(op);
  return op;
}

/* The repository path that holds `path` ("<repo>/<name>"). */
static const char *repo_of(ifd_server_t *s, const char *path) {
  const char *repo = s->rt.opts.n_repos > 0 ? s->rt.opts.repos[0] : NULL;
  for (size_t k = 0; k < s->rt.opts.n_repos; k++) {
    size_t rl = strlen(s->rt.opts.repos[k]);
    if (strncmp(path, s->rt.opts.repos[k], rl) == 0 && path[rl] == '/')
      repo = s->rt.opts.repos[k];
  }
  return repo;
}

/* The entry of scanned model `re`: by name, or with --model-namespacing
 * by name and repository. */
static model_entry_t *scanned_entry(ifd_server_t *s,
                                    const ifd_repo_entry_t *re) {
  if (!s->rt.opts.model_namespacing)
    return ifd__entry_find(s, re->name, strlen(re->name));
  return ifd__entry_find_in(s, repo_of(s, re->path), re->name,
                            strlen(re->name));
}

/* Adds the scanned models the registry does not know yet (and marks every
 * known one listed or not). */
static void merge_scan(ifd_server_t *s, scan_job_t *j) {
  size_t i, k;
  for (i = 0; i < s->n_entries; i++) s->entries[i]->listed = 0;
  for (i = 0; i < j->scan.count; i++) {
    ifd_repo_entry_t *re = &j->scan.entries[i];
    model_entry_t *e = scanned_entry(s, re);
    if (e == NULL)
      e = ifd__reg_entry_add(s, re->name, re->path, repo_of(s, re->path));
    if (e != NULL) e->listed = 1;
  }
  for (k = 0; k < j->scan.n_duplicates; k++) {
    const char *name = j->scan.duplicates[k];
    model_entry_t *e = ifd__entry_find(s, name, strlen(name));
    if (e == NULL) e = ifd__reg_entry_add(s, name, NULL, NULL);
    if (e != NULL) e->listed = 1;
  }
}

/* Start-up: which models to load. */
static void startup_loads(ifd_server_t *s, scan_job_t *j) {
  size_t i, k;
  int all = s->rt.opts.control_mode != IFD_CONTROL_EXPLICIT;

  for (k = 0; k < s->rt.opts.n_load_models; k++)
    if (strcmp(s->rt.opts.load_models[k], "*") == 0) all = 1;
  for (k = 0; k < j->scan.n_duplicates; k++) {
    /* A name found in several repositories is ambiguous: Triton refuses to
     * load it, and so do we, listing it as unavailable with the reason. */
    const char *name = j->scan.duplicates[k];
    model_entry_t *e = ifd__entry_find(s, name, strlen(name));
    if (!all) continue;
    s->rt.failed++;
    if (e == NULL) continue;
    ifd__reg_set_str(&e->reason,
                     "the model appears in more than one model repository");
    IFD_ERROR("failed to load '%s': %s", e->name, e->reason);
  }
  if (all) {
    for (i = 0; i < j->scan.count; i++) {
      model_entry_t *e = scanned_entry(s, &j->scan.entries[i]);
      if (e != NULL)
        queue_load(s, e, 1);
      else
        s->rt.failed++;
    }
    return;
  }
  for (k = 0; k < s->rt.opts.n_load_models; k++) {
    const char *name = s->rt.opts.load_models[k];
    model_entry_t *e = ifd__entry_find(s, name, strlen(name));
    if (e == NULL && (e = ifd__reg_entry_add(s, name, NULL, NULL)) == NULL) {
      s->rt.failed++;
      continue;
    }
    for (; e != NULL; e = e->next_same) {
      if (e->ops != NULL) continue; /* named twice */
      /* Every repository's model of the name (--model-namespacing). */
      queue_load(s, e, 1);
    }
  }
}

static void poll_changes(ifd_server_t *s, scan_job_t *j) {
  size_t i;
  merge_scan(s, j);
  for (i = 0; i < j->scan.count; i++) {
    ifd_repo_entry_t *re = &j->scan.entries[i];
    model_entry_t *e = scanned_entry(s, re);
    if (e == NULL || e->ops != NULL) continue;
    if (j->fps != NULL && j->fps[i] == e->fp) continue;
    IFD_INFO("model '%s' changed on disk: loading it", e->name);
    queue_load(s, e, 0);
  }
  for (i = 0; i < s->n_entries; i++) {
    model_entry_t *e = s->entries[i];
    reg_op_t *op;
    if (e->listed || e->ops != NULL || !ifd__entry_serves(e)) continue;
    IFD_INFO("model '%s' left the repository: unloading it", e->name);
    op = ifd__reg_op_new(s, e, OP_UNLOAD);
    if (op == NULL) continue;
    op->by_name = 1;
    ifd__reg_op_enqueue(op);
  }
}

static void on_poll_timer(uv_timer_t *t);

static void scan_after(uv_work_t *w, int status) {
  scan_job_t *j = (scan_job_t *)w;
  ifd_server_t *s = j->server;
  (void)status;

  s->jobs--;
  if (j->rc < 0) {
    IFD_ERROR("cannot read the model repository: %s", j->err.text);
    if (!j->poll) s->rt.failed++;
  } else if (!j->poll) {
    merge_scan(s, j);
    startup_loads(s, j);
  } else if (!s->rt.shutting_down) {
    poll_changes(s, j);
  }
  if (j->poll) s->polling = 0;
  if (j->rc == 0) ifd_repo_scan_free(&j->scan);
  ifd__reg_repos_free(j->repos, j->n_repos);
  free(j->fps);
  if (!j->poll && --s->startup_ops == 0) ifd__server_loading_done(s);
  free(j);
  if (ifd__registry_idle(s)) ifd__server_registry_idle(s);
}

static int scan_start(ifd_server_t *s, int poll) {
  scan_job_t *j = calloc(1, sizeof(*j));
  if (j == NULL) return IFD_ENOMEM;
  if (ifd__reg_repos_copy(s, &j->repos, &j->n_repos) < 0) {
    free(j);
    return IFD_ENOMEM;
  }
  j->server = s;
  j->poll = poll;
  s->jobs++;
  if (uv_queue_work(s->rt.loop, &j->work, scan_work, scan_after) < 0) {
    s->jobs--;
    ifd__reg_repos_free(j->repos, j->n_repos);
    free(j);
    return IFD_EINTERNAL;
  }
  return 0;
}

static void on_poll_timer(uv_timer_t *t) {
  ifd_server_t *s = t->data;
  if (s->polling || s->rt.shutting_down || !s->rt.loading_done) return;
  if (scan_start(s, 1) == 0) s->polling = 1;
}

int ifd_server_register_repository(ifd_server_t *s, const char *path,
                                   ifd_errmsg_t *err) {
  return ifd_server_register_repository_mapped(s, path, NULL, 0, err);
}

const ifd_repo_map_t *ifd__repo_map_find(const ifd_server_t *s,
                                         const char *name) {
  for (size_t i = 0; i < s->n_maps; i++)
    if (strcmp(s->maps[i].name, name) == 0) return &s->maps[i];
  return NULL;
}

static void map_free(ifd_repo_map_t *m) {
  free(m->name);
  free(m->repo);
  free(m->path);
}

void ifd__repo_maps_free(ifd_server_t *s) {
  for (size_t i = 0; i < s->n_maps; i++) map_free(&s->maps[i]);
  free(s->maps);
  s->maps = NULL;
  s->n_maps = 0;
}

/* Checks the mappings of a registration as Triton does: none empty, none
 * named twice, none already mapped. */
static int maps_check(const ifd_server_t *s, const char *path,
                      const ifd_repo_mapping_t *maps, size_t n,
                      ifd_errmsg_t *err) {
  for (size_t i = 0; i < n; i++) {
    if (maps[i].name == NULL || maps[i].name[0] == '\0' ||
        maps[i].subdir == NULL || maps[i].subdir[0] == '\0' ||
        strchr(maps[i].subdir, '/') != NULL)
      return ifd_errf(err, IFD_EINVAL,
                      "failed to register '%s', a name mapping needs a "
                      "folder name and a model name",
                      path);
    for (size_t k = 0; k < i; k++)
      if (strcmp(maps[k].name, maps[i].name) == 0)
        return ifd_errf(err, IFD_EINVAL,
                        "failed to register '%s', there is a conflicting "
                        "mapping for '%s'",
                        path, maps[i].name);
    if (ifd__repo_map_find(s, maps[i].name) != NULL)
      return ifd_errf(err, IFD_EEXISTS,
                      "failed to register '%s', there is a conflicting "
                      "mapping for '%s'",
                      maps[i].name, maps[i].name);
  }
  return 0;
}

int ifd_server_register_repository_mapped(ifd_server_t *s, const char *path,
                                          const ifd_repo_mapping_t *maps,
                                          size_t n_maps, ifd_errmsg_t *err) {
  ifd_repo_map_t *grown_maps;
  char **grown, *copy;
  size_t i, added = 0;
  int rc;

  if (s->rt.opts.control_mode != IFD_CONTROL_EXPLICIT)
    return ifd_errf(err, IFD_EUNSUPPORTED,
                    "repository registration is not allowed if model control "
                    "mode is not EXPLICIT");
  for (i = 0; i < s->rt.opts.n_repos; i++)
    if (strcmp(s->repos[i], path) == 0)
      return ifd_errf(err, IFD_EEXISTS,
                      "model repository '%s' has already been registered",
                      path);
  if ((rc = maps_check(s, path, maps, n_maps, err)) < 0) return rc;
  grown_maps = n_maps > 0
                   ? realloc(s->maps, (s->n_maps + n_maps) * sizeof(*s->maps))
                   : s->maps;
  if (n_maps > 0 && grown_maps == NULL) goto out_nomem;
  s->maps = grown_maps;
  for (; added < n_maps; added++) {
    ifd_repo_map_t *m = &s->maps[s->n_maps + added];
    m->name = strdup(maps[added].name);
    m->repo = strdup(path);
    m->path = malloc(strlen(path) + strlen(maps[added].subdir) + 2);
    if (m->name == NULL || m->repo == NULL || m->path == NULL) {
      map_free(m);
      goto out_maps;
    }
    sprintf(m->path, "%s/%s", path, maps[added].subdir);
  }
  copy = strdup(path);
  grown = copy != NULL
              ? realloc(s->repos, (s->rt.opts.n_repos + 1) * sizeof(char *))
              : NULL;
  if (grown == NULL) {
    free(copy);
    goto out_maps;
  }
  grown[s->rt.opts.n_repos++] = copy;
  s->repos = grown;
  s->rt.opts.repos = (const char *const *)s->repos;
  s->n_maps += n_maps;
  return 0;

out_maps:
  while (added > 0) map_free(&s->maps[s->n_maps + --added]);
out_nomem:
  return ifd_errf(err, IFD_ENOMEM, "out of memory");
}

int ifd_server_unregister_repository(ifd_server_t *s, const char *path,
                                     ifd_errmsg_t *err) {
  size_t i, k;

  if (s->rt.opts.control_mode != IFD_CONTROL_EXPLICIT)
    return ifd_errf(err, IFD_EUNSUPPORTED,
                    "repository unregistration is not allowed if model "
                    "control mode is not EXPLICIT");
  for (i = 0; i < s->rt.opts.n_repos; i++)
    if (strcmp(s->repos[i], path) == 0) break;
  if (i == s->rt.opts.n_repos)
    return ifd_errf(err, IFD_EINVAL,
                    "failed to unregister '%s', repository not found", path);
  /* Jobs hold copies of the list; entries hold copies of their path (a
   * later load looks again: core/registry.c, load_start). */
  free(s->repos[i]);
  memmove(&s->repos[i], &s->repos[i + 1],
          (s->rt.opts.n_repos - i - 1) * sizeof(char *));
  s->rt.opts.n_repos--;
  for (i = k = 0; i < s->n_maps; i++) {
    if (strcmp(s->maps[i].repo, path) == 0)
      map_free(&s->maps[i]);
    else
      s->maps[k++] = s->maps[i];
  }
  s->n_maps = k;
  return 0;
}

int ifd_server_poll(ifd_server_t *s, void (*done)(void *arg), void *arg,
                    ifd_errmsg_t *err) {
  if (s->rt.opts.control_mode != IFD_CONTROL_POLL)
    return ifd_errf(err, IFD_EUNAVAIL, "polling is disabled");
  if (s->rt.shutting_down || !s->rt.loading_done || s->poll_done != NULL)
    return ifd_errf(err, IFD_EUNAVAIL,
                    "the model repository cannot be polled now (starting, "
                    "stopping, or a poll in progress)");
  /* A timer scan in flight: its changes are applied first, then ours. */
  if (!s->polling) {
    int rc = scan_start(s, 1);
    if (rc < 0) return ifd_errf(err, rc, "cannot poll the model repository");
    s->polling = 1;
  }
  s->poll_done = done;
  s->poll_arg = arg;
  return 0;
}

int ifd__registry_start(ifd_server_t *s) {
  int rc;
  s->startup_ops = 1; /* the scan */
  rc = scan_start(s, 0);
  if (rc < 0) {
    s->startup_ops = 0;
    return rc;
  }
  if (s->rt.opts.control_mode == IFD_CONTROL_POLL && s->rt.opts.poll_secs > 0) {
    uint64_t ms = (uint64_t)s->rt.opts.poll_secs * 1000;
    uv_timer_start(&s->poll_timer, on_poll_timer, ms, ms);
  }
  return 0;
}

void ifd__registry_init(ifd_server_t *s) {
  uv_timer_init(s->rt.loop, &s->poll_timer);
  uv_timer_init(s->rt.loop, &s->retire_timer);
  s->poll_timer.data = s;
  s->retire_timer.data = s;
}

int ifd__registry_idle(const ifd_server_t *s) {
  return s->ops_live == 0 && s->jobs == 0;
}

void ifd__registry_stop_polling(ifd_server_t *s) {
  uv_timer_stop(&s->poll_timer);
}

int ifd__registry_close(ifd_server_t *s, uv_close_cb cb) {
  s->poll_timer.data = s;
  s->retire_timer.data = s;
  uv_close((uv_handle_t *)&s->poll_timer, cb);
  uv_close((uv_handle_t *)&s->retire_timer, cb);
  return 2;
}

/* Is `repo` a registered repository now? */
static int repo_registered(const ifd_server_t *s, const char *repo) {
  for (size_t i = 0; i < s->rt.opts.n_repos; i++)
    if (strcmp(s->rt.opts.repos[i], repo) == 0) return 1;
  return 0;
}

/* Explicit mode: where a load of `e` reads its folder now. A name mapping
 * decides (*mapped set); else a folder found in a repository no longer
 * registered is looked for again. 0, or IFD_ENOMEM. */
int ifd__reg_locate(ifd_server_t *s, model_entry_t *e, int *mapped) {
  const ifd_repo_map_t *mp;
  char *path, *repo;

  *mapped = 0;
  if (s->rt.opts.control_mode != IFD_CONTROL_EXPLICIT) return 0;
  mp = ifd__repo_map_find(s, e->name);
  if (mp != NULL) {
    *mapped = 1;
    if (e->path != NULL && strcmp(e->path, mp->path) == 0) return 0;
    path = strdup(mp->path);
    repo = strdup(mp->repo);
    if (path == NULL || repo == NULL) {
      free(path);
      free(repo);
      return IFD_ENOMEM;
    }
  } else if (e->repo != NULL && !repo_registered(s, e->repo)) {
    path = repo = NULL;
  } else {
    return 0;
  }
  free(e->path);
  free(e->repo);
  e->path = path;
  e->repo = repo;
  return 0;
}
