/*
 * backend_api/capi/capi_query.c - what an application asks a
 * TRITONSERVER_Server: liveness and readiness, metadata, configuration,
 * statistics, the repository index, batch and transaction properties, model
 * control (load, unload, poll, repository registration) and the metrics text.
 *
 * Each call works on either kind of server (app/embed.c): one
 * TRITONSERVER_ServerNew made, or inferd's executable's, which a backend
 * reaches through TRITONBACKEND_ModelServer. Every one reads loop-owned
 * state, so it runs on the loop through ifd__capi_run (inline when called
 * from the loop itself, a callback; a call that would wait for a later loop
 * callback, a load or a poll, is refused there), and renders JSON through
 * core/render_json.h, the renderer the HTTP routes use, so both give the
 * same text.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend_api/internal.h"
#include "base/log.h"
#include "core/metrics.h"
#include "core/render_json.h"

#define ERR(code, msg) TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_##code, (msg))

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
  const ifd_repo_mapping_t *maps; /* borrowed: the caller's name mappings */
  size_t n_maps;
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
  rc = q->flags ? ifd_server_register_repository_mapped(
                      c->server, q->name, q->maps, q->n_maps, &err)
                : ifd_server_unregister_repository(c->server, q->name, &err);
  ifd__capi_call_done(c, rc < 0 ? error_of(rc, &err) : NULL);
}

TRITONSERVER_Error *TRITONSERVER_ServerRegisterModelRepository(
    TRITONSERVER_Server *server, const char *repository_path,
    const TRITONSERVER_Parameter **name_mapping, const uint32_t mapping_count) {
  query_t q = {0};
  struct stat st;
  ifd_repo_mapping_t *maps = NULL;
  TRITONSERVER_Error *e;
  char msg[PATH_MAX + 600];

  SERVER_CHECK(server);
  if (repository_path == NULL)
    return ERR(INVALID_ARG, "repository_path must not be NULL");
  if (mapping_count > 0 && name_mapping == NULL)
    return ERR(INVALID_ARG, "name_mapping must not be NULL");
  /* Each parameter maps a folder (its name) to a model name (its string
   * value), as Triton reads them. */
  if (mapping_count > 0) {
    maps = calloc(mapping_count, sizeof(*maps));
    if (maps == NULL) return ERR(INTERNAL, "out of memory");
  }
  for (uint32_t i = 0; i < mapping_count; i++) {
    const TRITONSERVER_Parameter *p = name_mapping[i];
    if (p == NULL || p->type != TRITONSERVER_PARAMETER_STRING) {
      snprintf(msg, sizeof(msg),
               "Mapped model name must be a string, found another type for "
               "%.256s",
               p != NULL && p->name != NULL ? p->name : "");
      free(maps);
      return ERR(INVALID_ARG, msg);
    }
    maps[i].subdir = p->name;
    maps[i].name = p->v.s;
  }
  /* Checked here: the loop does no file I/O. */
  if (stat(repository_path, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(msg, sizeof(msg), "failed to register '%s', repository not found",
             repository_path);
    free(maps);
    return ERR(INVALID_ARG, msg);
  }
  q.name = repository_path;
  q.flags = 1;
  q.maps = maps;
  q.n_maps = mapping_count;
  e = run(server, &q, register_fn);
  free(maps);
  return e;
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
  int enabled;
  ifd_metrics_t *m = ifd__capi_metrics(c->server, &enabled);

  if (!enabled) {
    ifd__capi_call_done(c, ERR(UNSUPPORTED, "metrics not supported"));
    return;
  }
  q->text = ifd_metrics_text(c->server, m, &q->len);
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
