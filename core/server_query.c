/*
 * core/server_query.c - what the registry answers without changing: model
 * lookup for requests (ifd__server_resolve: a sequence's request goes where
 * its sequence began), model readiness, server and model metadata,
 * statistics and the repository index. Loop thread; nothing here allocates
 * beyond the arrays it returns.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/server_internal.h"

/* Triton's answer to a name in several repositories (--model-namespacing)
 * that a request does not resolve. */
static int ambiguous(size_t n, const char *name, int len, ifd_errmsg_t *err) {
  return ifd_errf(err, IFD_EINVAL,
                  "There are %zu identifiers of model '%.*s' in global map, "
                  "model namespace must be provided to resolve ambiguity.",
                  n, len, name);
}

static int find_in_entry(model_entry_t *e, const char *name, size_t name_len,
                         int64_t version, ifd_model_t **out, ifd_errmsg_t *err);

int ifd_server_find_model(ifd_server_t *s, const char *name, size_t name_len,
                          int64_t version, ifd_model_t **out,
                          ifd_errmsg_t *err) {
  model_entry_t *e = ifd__entry_find(s, name, name_len);
  if (e != NULL && e->next_same != NULL) {
    /* --model-namespacing: entries that left their repositories do not
     * count (a model moved from one repository to another). */
    size_t n;
    e = ifd__entry_resolve(s, NULL, name, name_len, &n);
    if (e == NULL)
      return ambiguous(n, name, name_len > 256 ? 256 : (int)name_len, err);
  }
  return find_in_entry(e, name, name_len, version, out, err);
}

/* The version a request of a sequence goes to: a retired version of `m`'s
 * model (same version number) that holds the request's sequence, else `m`.
 * O(1) unless `m`'s model has retired versions. */
static ifd_model_t *sequence_home(ifd_server_t *s, ifd_model_t *m,
                                  const ifd_request_t *req) {
  model_entry_t *e;
  if (s->rt.opts.ops->holds_sequence == NULL ||
      (req->flags & IFD_REQUEST_FLAG_SEQUENCE_START) != 0)
    return m;
  e = ifd__entry_of(s, m);
  if (e == NULL || e->retired == NULL) return m;
  for (ifd_model_t *r = e->retired; r != NULL; r = r->next_version)
    if (r->state == IFD_MODEL_READY && r->version == m->version &&
        s->rt.opts.ops->holds_sequence(r, req))
      return r;
  return m;
}

int ifd__server_resolve(ifd_server_t *s, const ifd_request_t *req,
                        ifd_model_t **out, ifd_errmsg_t *err) {
  int rc = ifd_server_find_model_in(s, req->model_namespace, req->model_name,
                                    strlen(req->model_name), req->model_version,
                                    out, err);
  if (rc == 0 && (req->correlation_id != 0 || req->correlation_id_str != NULL))
    *out = sequence_home(s, *out, req);
  return rc;
}

int ifd_server_find_model_in(ifd_server_t *s, const char *repo,
                             const char *name, size_t name_len, int64_t version,
                             ifd_model_t **out, ifd_errmsg_t *err) {
  model_entry_t *e;
  if (repo == NULL || !s->rt.opts.model_namespacing)
    return ifd_server_find_model(s, name, name_len, version, out, err);
  e = ifd__entry_find_in(s, repo, name, name_len);
  /* None in `repo` (or it left the repository): the global lookup, which
   * finds the one model of that name (Triton's, when the namespace has
   * none). */
  if (e == NULL || ifd__entry_gone(e))
    return ifd_server_find_model(s, name, name_len, version, out, err);
  return find_in_entry(e, name, name_len, version, out, err);
}

static int find_in_entry(model_entry_t *e, const char *name, size_t name_len,
                         int64_t version, ifd_model_t **out,
                         ifd_errmsg_t *err) {
  ifd_model_t *m, *best = NULL;
  int len = name_len > 256 ? 256 : (int)name_len;

  if (e == NULL)
    return ifd_errf(err, IFD_ENOTFOUND,
                    "Request for unknown model: '%.*s' is not found", len,
                    name);
  if (version < 0) {
    for (m = e->versions; m != NULL; m = m->next_version)
      if (m->state == IFD_MODEL_READY) best = m;
    if (best == NULL) /* NOT_FOUND, as Triton (404 / gRPC NOT_FOUND) */
      return ifd_errf(err, IFD_ENOTFOUND,
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
  if (s->rt.shutting_down) return 0;
  if (ifd_server_find_model(s, name, name_len, version, &m, NULL) != 0)
    return 0;
  return atomic_load_explicit(&m->unready_instances, memory_order_relaxed) == 0;
}

/* The extensions inferd serves, in tritonserver's order (its core lists
 * "trace" between "statistics" and "logging" when built with tracing, as
 * the release images are). cuda_shared_memory is listed
 * on a machine without a GPU too, as tritonserver does (its register then
 * answers "GPUs not supported"). */
static const char *const extensions[] = {"classification",
                                         "sequence",
                                         "model_repository",
                                         "model_repository(unload_dependents)",
                                         "schedule_policy",
                                         "model_configuration",
                                         "system_shared_memory",
                                         "cuda_shared_memory",
                                         "binary_tensor_data",
                                         "parameters",
                                         "statistics",
                                         "trace",
                                         "logging"};

static const ifd_server_info_t server_info = {
    IFD_SERVER_NAME, IFD_SERVER_VERSION, extensions,
    sizeof(extensions) / sizeof(extensions[0])};

void ifd__server_info_init(ifd_server_t *s) {
  s->info = server_info;
  if (s->server_id != NULL && s->server_id[0] != '\0')
    s->info.name = s->server_id;
}

const ifd_server_info_t *ifd_server_metadata(const ifd_server_t *s) {
  return s != NULL ? &s->info : &server_info;
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
  model_entry_t *e = ifd__entry_of(s, m);
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
    e = ifd__entry_find(s, name, name_len);
    if (e != NULL && e->next_same != NULL) {
      size_t k;
      e = ifd__entry_resolve(s, NULL, name, name_len, &k);
      if (e == NULL) return ambiguous(k, name, len, err);
    }
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
 * how many. A model known only because a request named it (not found by a
 * scan, never loaded) has no row. */
static size_t index_rows(const model_entry_t *e, int ready_only,
                         ifd_index_entry_t *arr) {
  const ifd_model_t *m;
  size_t n = 0;

  if (e->versions == NULL) {
    const char *state;
    if (ready_only || (!e->listed && e->reason == NULL)) return 0;
    if (e->reason != NULL)
      state = "UNAVAILABLE";
    else if (e->ops != NULL)
      state = "LOADING";
    else
      state = NULL; /* never loaded: the name alone */
    if (arr != NULL) {
      arr->name = e->name;
      arr->version = -1;
      arr->state = state;
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
      arr[n].reason =
          m->state == IFD_MODEL_READY ? e->reload_reason : m->reason;
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
