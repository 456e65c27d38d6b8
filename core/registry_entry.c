/*
 * core/registry_entry.c - the registry's entries: one per model name, or
 * with --model-namespacing one per repository's model of a name (the
 * entries of a name are linked through next_same; by_name maps the name to
 * the first). Finding, adding and removing them; the queries an operation
 * asks of them (has the set on disk changed, what an ensemble's names
 * mean). Loop thread.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/registry_internal.h"
#include "base/check.h"
#include "base/log.h"
#include "base/util.h"

model_entry_t *ifd__entry_find(ifd_server_t *s, const char *name, size_t len) {
  return ifd_strmap_get(&s->by_name, name, len);
}

/* Does entry `e` live in repository `repo` (NULL or "": not known)? */
static int in_repo(const model_entry_t *e, const char *repo) {
  if (e->repo == NULL || repo == NULL)
    return (repo == NULL || !repo[0]) == (e->repo == NULL);
  return strcmp(e->repo, repo) == 0;
}

model_entry_t *ifd__entry_find_in(ifd_server_t *s, const char *repo,
                                  const char *name, size_t len) {
  for (model_entry_t *e = ifd__entry_find(s, name, len); e != NULL;
       e = e->next_same)
    if (in_repo(e, repo)) return e;
  return NULL;
}

int ifd__entry_gone(const model_entry_t *e) {
  return e->path != NULL && !e->listed && e->ops == NULL &&
         !ifd__entry_serves(e);
}

model_entry_t *ifd__entry_resolve(ifd_server_t *s, const char *repo,
                                  const char *name, size_t len, size_t *n) {
  model_entry_t *head = ifd__entry_find(s, name, len), *e, *live = NULL;
  size_t count = 0, n_live = 0;
  for (e = head; e != NULL; e = e->next_same) {
    count++;
    if (!ifd__entry_gone(e)) {
      n_live++;
      live = e;
    }
  }
  if (n != NULL) *n = n_live > 0 ? n_live : count;
  if (count <= 1) return head;
  /* --model-namespacing: the model of the asker's repository first, unless
   * it left its repository; then the only one of that name still there (a
   * model that moved to another repository). */
  if (repo != NULL && (e = ifd__entry_find_in(s, repo, name, len)) != NULL &&
      (!ifd__entry_gone(e) || n_live == 0))
    return e;
  return n_live == 1 ? live : NULL;
}

model_entry_t *ifd__entry_of(ifd_server_t *s, const ifd_model_t *m) {
  model_entry_t *head = ifd__entry_find(s, m->name, strlen(m->name));
  if (head == NULL || head->next_same == NULL) return head;
  return ifd__entry_find_in(s, m->repo, m->name, strlen(m->name));
}

model_entry_t *ifd__reg_entry_add(ifd_server_t *s, const char *name,
                                  const char *path, const char *repo) {
  model_entry_t *e = calloc(1, sizeof(*e));
  model_entry_t **arr, *same;
  if (e == NULL) return NULL;
  e->name = strdup(name);
  e->path = ifd_strdup_null(path);
  e->repo = ifd_strdup_null(repo);
  arr = realloc(s->entries, (s->n_entries + 1) * sizeof(*arr));
  same = e->name != NULL ? ifd__entry_find(s, e->name, strlen(e->name)) : NULL;
  if (same != NULL) {
    /* Another repository's model of that name (--model-namespacing). */
    while (same->next_same != NULL) same = same->next_same;
  }
  if (e->name == NULL || arr == NULL ||
      (same == NULL &&
       ifd_strmap_put(&s->by_name, e->name, strlen(e->name), e) < 0)) {
    if (arr != NULL) s->entries = arr;
    free(e->name);
    free(e->path);
    free(e->repo);
    free(e);
    return NULL;
  }
  s->entries = arr;
  if (same != NULL) same->next_same = e;
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

void ifd__reg_unref_list(ifd_model_t *m) {
  while (m != NULL) {
    ifd_model_t *next = m->next_version;
    m->next_version = NULL;
    ifd_model_unref(m);
    m = next;
  }
}

void ifd__entry_free(model_entry_t *e) {
  ifd__reg_unref_list(e->versions);
  ifd__reg_unref_list(e->retired);
  ifd_config_free(e->cfg);
  free(e->name);
  free(e->path);
  free(e->repo);
  free(e->reason);
  free(e->reload_reason);
  free(e);
}

int ifd__entry_serves(const model_entry_t *e) {
  for (const ifd_model_t *m = e->versions; m != NULL; m = m->next_version)
    if (m->state == IFD_MODEL_READY) return 1;
  return 0;
}

void ifd__reg_entry_remove(ifd_server_t *s, model_entry_t *e) {
  model_entry_t *head = ifd__entry_find(s, e->name, strlen(e->name));
  size_t i;
  if (head == e) {
    ifd_strmap_del(&s->by_name, e->name, strlen(e->name));
    /* Cannot fail: the map held the name a moment ago. */
    if (e->next_same != NULL &&
        NEVER(ifd_strmap_put(&s->by_name, e->next_same->name,
                             strlen(e->next_same->name), e->next_same) < 0))
      IFD_ERROR("model '%s' left the name map", e->name);
  } else if (head != NULL) {
    while (head->next_same != NULL && head->next_same != e)
      head = head->next_same;
    if (head->next_same == e) head->next_same = e->next_same;
  }
  for (i = 0; s->entries[i] != e; i++)
    ;
  memmove(&s->entries[i], &s->entries[i + 1],
          (s->n_entries - i - 1) * sizeof(*s->entries));
  s->n_entries--;
  ifd__entry_free(e);
}

/* Still in flight: any version loading or unloading, or a scheduler not yet
 * freed (an unloaded version's scheduler goes after its unload reports). */
static int list_busy(const ifd_model_t *m) {
  for (; m != NULL; m = m->next_version)
    if (m->state != IFD_MODEL_UNAVAILABLE || m->sched != NULL) return 1;
  return 0;
}

int ifd_server_remove_model(ifd_server_t *s, const char *name, size_t name_len,
                            ifd_errmsg_t *err) {
  model_entry_t *e = ifd__entry_find(s, name, name_len);
  int len = name_len > 256 ? 256 : (int)name_len;
  ifd_model_t *m;

  if (e == NULL)
    return ifd_errf(err, IFD_ENOTFOUND, "model '%.*s' is not in the registry",
                    len, name);
  if (e->ops != NULL)
    return ifd_errf(err, IFD_EUNAVAIL, "model '%.*s' is being loaded", len,
                    name);
  for (m = e->versions; m != NULL; m = m->next_version)
    if (m->state != IFD_MODEL_UNAVAILABLE || m->sched != NULL)
      return ifd_errf(err, IFD_EUNAVAIL,
                      "model '%.*s' version %" PRId64 " is still %s", len, name,
                      m->version,
                      m->state == IFD_MODEL_READY ? "loaded" : "in transition");
  if (list_busy(e->retired))
    return ifd_errf(err, IFD_EUNAVAIL, "model '%.*s' is still unloading", len,
                    name);
  ifd__reg_entry_remove(s, e);
  return 0;
}

/* ---- queries of the registry's operations (core/registry.c) ---- */

int ifd__reg_is_ensemble(const ifd_model_config_t *c) {
  return c != NULL && c->platform != NULL &&
         strcmp(c->platform, "ensemble") == 0 && c->ensemble_scheduling != NULL;
}

/* Is the set that serves `e` the one `op` found on disk (same versions,
 * all ready, same files, no override either way)? */
int ifd__reg_unchanged(const model_entry_t *e, const reg_op_t *op) {
  const ifd_model_t *m = e->versions;
  size_t i;
  if (op->config != NULL || op->n_files > 0 || e->override || op->fp != e->fp)
    return 0;
  for (i = 0; i < op->n_versions; i++, m = m->next_version)
    if (m == NULL || m->version != op->versions[i] ||
        m->state != IFD_MODEL_READY)
      return 0;
  return m == NULL;
}

uint64_t ifd__reg_unchanged_fp(const model_entry_t *e, const reg_op_t *op) {
  if (op->config != NULL || op->n_files > 0 || e->override ||
      e->versions == NULL)
    return 0;
  for (const ifd_model_t *m = e->versions; m != NULL; m = m->next_version)
    if (m->state != IFD_MODEL_READY) return 0;
  return e->fp;
}

const ifd_model_config_t *ifd__reg_ens_config_of(void *arg, const char *name) {
  ifd_reg_ens_ctx_t *c = arg;
  model_entry_t *e =
      ifd__entry_resolve(c->s, c->repo, name, strlen(name), NULL);
  return e != NULL && ifd__reg_is_ensemble(e->cfg) ? e->cfg : NULL;
}

ifd_ens_status_t ifd__reg_ens_lookup(void *arg, const char *name,
                                     int64_t version,
                                     const ifd_model_config_t **cfg) {
  ifd_reg_ens_ctx_t *c = arg;
  model_entry_t *e =
      ifd__entry_resolve(c->s, c->repo, name, strlen(name), NULL);
  ifd_model_t *m, *best = NULL;
  if (e == NULL) return IFD_ENS_MISSING;
  for (m = e->versions; m != NULL; m = m->next_version)
    if (m->state == IFD_MODEL_READY &&
        (version < 0 ? 1 : m->version == version))
      best = m;
  if (best != NULL) {
    *cfg = best->config;
    return IFD_ENS_READY;
  }
  return ifd__entry_serves(e) ? IFD_ENS_NO_VERSION : IFD_ENS_MISSING;
}
