/*
 * backend_api/backends/python/ops.c - the stub's small requests: LOG
 * (pb_utils.Logger, through TRITONSERVER_LogMessage with the model's file
 * and line), CANCEL_QUERY (InferenceRequest.is_cancelled), METRIC
 * (pb_utils.MetricFamily and Metric on the TRITONSERVER_Metric* API) and
 * MODEL_CONTROL (pb_utils.load_model, unload_model, is_model_ready on the
 * TRITONSERVER_Server* model control API).
 *
 * All run on the reading thread, except loads and unloads, which run on a
 * thread each and hand their answer to the reader through the channel. The stub
 * names metrics and families by handles from a table kept here (never pointers
 * it could forge); when the stub dies or ends, whatever it created is deleted,
 * metrics first.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- LOG ----------------------------------------------------------------- */

void ifd__py_on_log(ifd__py_instance_t *in, const char *p, size_t len) {
  ifd__py_rd_t r = {p, p, p + len};
  uint32_t level = 0, line = 0, flen = 0, mlen = 0;
  const char *file = NULL, *msg = NULL;
  if (ifd__py_rd_u32(&r, &level) != 0 || ifd__py_rd_u32(&r, &line) != 0 ||
      ifd__py_rd_str(&r, &file, &flen) != 0 ||
      ifd__py_rd_str(&r, &msg, &mlen) != 0) {
    IFD_PY_LOG(TRITONSERVER_LOG_ERROR, "python model '%s': malformed LOG",
               in->model_name);
    return;
  }
  if (level > TRITONSERVER_LOG_VERBOSE) level = TRITONSERVER_LOG_INFO;
  if (!TRITONSERVER_LogIsEnabled((TRITONSERVER_LogLevel)level)) return;
  char *f = strndup(file, flen), *m = strndup(msg, mlen);
  if (f != NULL && m != NULL)
    TRITONSERVER_ErrorDelete(
        TRITONSERVER_LogMessage((TRITONSERVER_LogLevel)level, f, (int)line, m));
  free(f);
  free(m);
}

/* ---- CANCEL_QUERY -------------------------------------------------------- */

void ifd__py_on_cancel_query(ifd__py_instance_t *in, uint32_t id, const char *p,
                             size_t len) {
  uint32_t rid = 0, cancelled = 0;
  if (len >= 4) memcpy(&rid, p, 4);
  pthread_mutex_lock(&in->mu);
  for (size_t i = 0; i < in->n_open; i++) {
    if (in->open[i].rid != rid) continue;
    bool c = false;
    TRITONSERVER_Error *err =
        TRITONBACKEND_RequestIsCancelled(in->open[i].req, &c);
    if (err == NULL)
      cancelled = c;
    else
      ifd__py_log_error(err, "cannot ask for cancellation");
    break;
  }
  pthread_mutex_unlock(&in->mu);
  ifd__py_send_now(in, IFD_PY_MSG_CANCEL_ANSWER, id, &cancelled, 4);
}

/* ---- METRIC -------------------------------------------------------------- */

static uint64_t handle_add(ifd__py_instance_t *in, void *p, int is_family) {
  if (in->n_handles == in->cap_handles) {
    size_t cap = in->cap_handles ? in->cap_handles * 2 : 16;
    ifd__py_handle_t *a = realloc(in->handles, cap * sizeof(*a));
    if (a == NULL) return 0;
    in->handles = a;
    in->cap_handles = cap;
  }
  ifd__py_handle_t *h = &in->handles[in->n_handles++];
  h->h = ++in->next_handle;
  h->is_family = is_family;
  h->p = p;
  return h->h;
}

static ifd__py_handle_t *handle_find(ifd__py_instance_t *in, json_t *j,
                                     const char *key, int is_family) {
  json_t *v = json_object_get(j, key);
  if (!json_is_integer(v)) return NULL;
  uint64_t h = (uint64_t)json_integer_value(v);
  for (size_t i = 0; i < in->n_handles; i++)
    if (in->handles[i].h == h && in->handles[i].is_family == is_family)
      return &in->handles[i];
  return NULL;
}

static void handle_remove(ifd__py_instance_t *in, ifd__py_handle_t *h) {
  *h = in->handles[--in->n_handles];
}

void ifd__py_metrics_clear(ifd__py_instance_t *in) {
  for (int fam = 0; fam < 2; fam++)
    for (size_t i = 0; i < in->n_handles; i++) {
      ifd__py_handle_t *h = &in->handles[i];
      if (h->is_family != fam || h->p == NULL) continue;
      ifd__py_log_error(fam ? TRITONSERVER_MetricFamilyDelete(h->p)
                            : TRITONSERVER_MetricDelete(h->p),
                        "cannot delete a metric");
      h->p = NULL;
    }
  in->n_handles = 0;
}

static TRITONSERVER_Error *no_handle(void) {
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                               "unknown metric handle");
}

static TRITONSERVER_Error *metric_new(ifd__py_instance_t *in, json_t *j,
                                      uint64_t *out) {
  ifd__py_handle_t *fam = handle_find(in, j, "family", 1);
  json_t *labels = json_object_get(j, "labels");
  json_t *buckets = json_object_get(j, "buckets");
  const TRITONSERVER_Parameter **params = NULL;
  TRITONSERVER_MetricArgs *args = NULL;
  TRITONSERVER_Metric *m = NULL;
  TRITONSERVER_Error *err = NULL;
  size_t n = 0;
  double *b = NULL;
  if (fam == NULL) return no_handle();
  if (labels != NULL && json_is_object(labels) && json_object_size(labels)) {
    const char *k;
    json_t *v;
    params = calloc(json_object_size(labels), sizeof(*params));
    if (params == NULL) goto out_nomem;
    json_object_foreach(labels, k, v) {
      if (!json_is_string(v)) {
        err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                    "metric label values must be strings");
        goto out;
      }
      params[n] = TRITONSERVER_ParameterNew(k, TRITONSERVER_PARAMETER_STRING,
                                            json_string_value(v));
      if (params[n] == NULL) goto out_nomem;
      n++;
    }
  }
  if (buckets != NULL && json_is_array(buckets)) {
    size_t nb = json_array_size(buckets);
    b = calloc(nb ? nb : 1, sizeof(*b));
    if (b == NULL) goto out_nomem;
    for (size_t i = 0; i < nb; i++)
      b[i] = json_number_value(json_array_get(buckets, i));
    err = TRITONSERVER_MetricArgsNew(&args);
    if (err == NULL) err = TRITONSERVER_MetricArgsSetHistogram(args, b, nb);
    if (err != NULL) goto out;
    err = TRITONSERVER_MetricNewWithArgs(&m, fam->p, params, n, args);
  } else {
    err = TRITONSERVER_MetricNew(&m, fam->p, params, n);
  }
  if (err == NULL) {
    *out = handle_add(in, m, 0);
    if (*out == 0) {
      TRITONSERVER_ErrorDelete(TRITONSERVER_MetricDelete(m));
      goto out_nomem;
    }
  }
  goto out;
out_nomem:
  err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
out:
  for (size_t i = 0; i < n; i++)
    TRITONSERVER_ParameterDelete((TRITONSERVER_Parameter *)params[i]);
  free(params);
  free(b);
  if (args != NULL)
    TRITONSERVER_ErrorDelete(TRITONSERVER_MetricArgsDelete(args));
  return err;
}

/* Runs one METRIC op; *value / *handle set for the ops that answer one. */
static TRITONSERVER_Error *metric_op(ifd__py_instance_t *in, json_t *j,
                                     uint64_t *handle, double *value,
                                     int *has_value) {
  const char *op = json_string_value(json_object_get(j, "op"));
  double v = json_number_value(json_object_get(j, "value"));
  ifd__py_handle_t *h;
  TRITONSERVER_Error *err;
  if (op == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "METRIC without an op");
  if (strcmp(op, "family_new") == 0) {
    const char *name = json_string_value(json_object_get(j, "name"));
    const char *desc = json_string_value(json_object_get(j, "description"));
    json_int_t kind = json_integer_value(json_object_get(j, "kind"));
    TRITONSERVER_MetricFamily *f = NULL;
    if (name == NULL || kind < 0 || kind > 2)
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                   "a metric family needs a name and a kind");
    err = TRITONSERVER_MetricFamilyNew(&f, (TRITONSERVER_MetricKind)kind, name,
                                       desc != NULL ? desc : "");
    if (err != NULL) return err;
    *handle = handle_add(in, f, 1);
    if (*handle == 0) {
      TRITONSERVER_ErrorDelete(TRITONSERVER_MetricFamilyDelete(f));
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                   "out of memory");
    }
    return NULL;
  }
  if (strcmp(op, "metric_new") == 0) return metric_new(in, j, handle);
  if (strcmp(op, "family_delete") == 0 || strcmp(op, "metric_delete") == 0) {
    int fam = op[0] == 'f';
    h = handle_find(in, j, "handle", fam);
    if (h == NULL) return no_handle();
    err = fam ? TRITONSERVER_MetricFamilyDelete(h->p)
              : TRITONSERVER_MetricDelete(h->p);
    if (err == NULL) handle_remove(in, h);
    return err;
  }
  h = handle_find(in, j, "handle", 0);
  if (h == NULL) return no_handle();
  if (strcmp(op, "increment") == 0)
    return TRITONSERVER_MetricIncrement(h->p, v);
  if (strcmp(op, "set") == 0) return TRITONSERVER_MetricSet(h->p, v);
  if (strcmp(op, "observe") == 0) return TRITONSERVER_MetricObserve(h->p, v);
  if (strcmp(op, "value") == 0) {
    *has_value = 1;
    return TRITONSERVER_MetricValue(h->p, value);
  }
  return ifd__py_errorf(TRITONSERVER_ERROR_INVALID_ARG,
                        "unknown METRIC op '%s'", op);
}

void ifd__py_on_metric(ifd__py_instance_t *in, uint32_t id, const char *p,
                       size_t len) {
  ifd__py_buf_t b = {0};
  uint64_t handle = 0;
  double value = 0;
  int has_value = 0;
  TRITONSERVER_Error *err;
  json_t *j = json_loadb(p, len, 0, NULL);
  if (j == NULL || !json_is_object(j))
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                "METRIC is not a JSON object");
  else
    err = metric_op(in, j, &handle, &value, &has_value);
  json_decref(j);
  if (err != NULL) {
    ifd__py_buf_add(&b, "{\"error\":", 9);
    ifd__py_buf_jcstr(&b, TRITONSERVER_ErrorMessage(err));
    ifd__py_buf_fmt(&b, ",\"code\":%u}", (unsigned)TRITONSERVER_ErrorCode(err));
    TRITONSERVER_ErrorDelete(err);
  } else if (handle != 0) {
    ifd__py_buf_fmt(&b, "{\"handle\":%llu}", (unsigned long long)handle);
  } else if (has_value) {
    ifd__py_buf_fmt(&b, "{\"value\":%.17g}", value);
  } else {
    ifd__py_buf_add(&b, "{}", 2);
  }
  if (!b.oom) ifd__py_send_now(in, IFD_PY_MSG_METRIC_ANSWER, id, b.p, b.len);
  free(b.p);
}

/* ---- MODEL_CONTROL ------------------------------------------------------- */

/* A load or an unload on its own thread: it may take as long as the model
 * takes to load, and neither reader may wait that long. */
typedef struct control_job {
  TRITONSERVER_Server *server; /* borrowed: outlives every model */
  ifd__py_chan_t *chan;        /* a reference: where the answer goes */
  uint32_t id, gen;
  json_t *j;     /* owned: the request */
  char *payload; /* owned: the file bytes point into it */
  const char *files;
  size_t files_len;
} control_job_t;

/* The answer's JSON text for err (NULL: `ok`); malloc'ed, *len set. */
static char *control_answer(TRITONSERVER_Error *err, const char *ok,
                            size_t *len) {
  char *s;
  if (err == NULL) {
    s = strdup(ok);
  } else {
    json_t *a = json_pack("{s:s, s:i}", "error", TRITONSERVER_ErrorMessage(err),
                          "code", (int)TRITONSERVER_ErrorCode(err));
    s = a != NULL ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
  }
  *len = s != NULL ? strlen(s) : 0;
  return s;
}

static TRITONSERVER_Error *control_load(control_job_t *job, const char *name) {
  TRITONSERVER_Error *err = NULL;
  const char *config = json_string_value(json_object_get(job->j, "config"));
  json_t *files = json_object_get(job->j, "files");
  size_t nfiles = json_is_array(files) ? json_array_size(files) : 0;
  const TRITONSERVER_Parameter **params = calloc(nfiles + 1, sizeof(*params));
  size_t n = 0, off = 0;
  if (params == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  if (config != NULL && config[0] != '\0')
    params[n++] = TRITONSERVER_ParameterNew(
        "config", TRITONSERVER_PARAMETER_STRING, config);
  for (size_t i = 0; i < nfiles && err == NULL; i++) {
    json_t *f = json_array_get(files, i);
    const char *key = json_string_value(json_array_get(f, 0));
    json_int_t size = json_integer_value(json_array_get(f, 1));
    if (key == NULL || size < 0 || (uint64_t)size > job->files_len - off) {
      err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                  "malformed MODEL_CONTROL from the stub");
      break;
    }
    params[n++] =
        TRITONSERVER_ParameterBytesNew(key, job->files + off, (uint64_t)size);
    off += (size_t)size;
  }
  for (size_t i = 0; i < n && err == NULL; i++)
    if (params[i] == NULL)
      err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  if (err == NULL)
    err = TRITONSERVER_ServerLoadModelWithParameters(job->server, name, params,
                                                     n);
  for (size_t i = 0; i < n; i++)
    if (params[i] != NULL)
      TRITONSERVER_ParameterDelete((TRITONSERVER_Parameter *)params[i]);
  free(params);
  return err;
}

static void *control_main(void *arg) {
  control_job_t *job = arg;
  const char *op = json_string_value(json_object_get(job->j, "op"));
  const char *name = json_string_value(json_object_get(job->j, "name"));
  TRITONSERVER_Error *err;
  if (name == NULL || op == NULL)
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                "malformed MODEL_CONTROL from the stub");
  else if (strcmp(op, "load") == 0)
    err = control_load(job, name);
  else if (json_is_true(json_object_get(job->j, "unload_dependents")))
    err = TRITONSERVER_ServerUnloadModelAndDependents(job->server, name);
  else
    err = TRITONSERVER_ServerUnloadModel(job->server, name);
  ifd__py_item_t *it = calloc(1, sizeof(*it));
  if (it != NULL) {
    it->call_id = job->id;
    it->gen = job->gen;
    it->msg_type = IFD_PY_MSG_MODEL_CONTROL_ANSWER;
    it->msg = control_answer(err, "{}", &it->msg_len);
    if (it->msg == NULL || ifd__py_chan_push(job->chan, it) != 0) {
      ifd__py_item_free(it); /* the stub then never hears: it died too */
    }
  }
  TRITONSERVER_ErrorDelete(err);
  ifd__py_chan_put(job->chan);
  json_decref(job->j);
  free(job->payload);
  free(job);
  return NULL;
}

/* Readiness, at once (the reading thread waits for the loop's answer,
 * which never waits on a backend). */
static TRITONSERVER_Error *control_ready(ifd__py_instance_t *in, json_t *j,
                                         bool *ready) {
  const char *name = json_string_value(json_object_get(j, "name"));
  const char *ver = json_string_value(json_object_get(j, "version"));
  int64_t version = -1;
  if (name == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "malformed MODEL_CONTROL from the stub");
  if (ver != NULL && ver[0] != '\0') {
    char *end = NULL;
    long long v = strtoll(ver, &end, 10);
    if (end == ver || *end != '\0' || v < 0)
      return ifd__py_errorf(
          TRITONSERVER_ERROR_INVALID_ARG,
          "failed to get model version from specified version string '%s', "
          "version should be an integral value > 0",
          ver);
    version = (int64_t)v;
  }
  return TRITONSERVER_ServerModelIsReady(in->model->server, name, version,
                                         ready);
}

void ifd__py_on_model_control(ifd__py_instance_t *in, uint32_t id,
                              char *payload, size_t len) {
  ifd__py_rd_t r = {payload, payload, payload + len};
  const char *js = NULL;
  uint32_t jlen = 0;
  json_t *j = NULL;
  TRITONSERVER_Error *err = NULL;
  char *ans = NULL;
  size_t alen = 0;
  if (ifd__py_rd_str(&r, &js, &jlen) != 0 ||
      (j = json_loadb(js, jlen, 0, NULL)) == NULL || !json_is_object(j)) {
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                "malformed MODEL_CONTROL from the stub");
    goto out_answer;
  }
  const char *op = json_string_value(json_object_get(j, "op"));
  if (op != NULL && strcmp(op, "ready") == 0) {
    bool ready = false;
    err = control_ready(in, j, &ready);
    if (err == NULL) {
      ans = strdup(ready ? "{\"ready\":true}" : "{\"ready\":false}");
      alen = ans != NULL ? strlen(ans) : 0;
    }
    goto out_answer;
  }
  control_job_t *job = calloc(1, sizeof(*job));
  if (job == NULL) {
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
    goto out_answer;
  }
  job->server = in->model->server;
  job->id = id;
  pthread_mutex_lock(&in->mu);
  job->gen = in->gen;
  pthread_mutex_unlock(&in->mu);
  job->j = j;
  job->files = r.p;
  job->files_len = (size_t)(r.end - r.p);
  job->payload = payload;
  pthread_mutex_lock(&in->chan->mu);
  in->chan->refs++;
  pthread_mutex_unlock(&in->chan->mu);
  job->chan = in->chan;
  pthread_attr_t attr;
  pthread_t t;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&t, &attr, control_main, job);
  pthread_attr_destroy(&attr);
  if (rc == 0) return;
  ifd__py_chan_put(job->chan);
  free(job);
  err = ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL, "pthread_create: %s",
                       strerror(rc));
out_answer:
  if (err != NULL) {
    free(ans);
    ans = control_answer(err, "{}", &alen);
    TRITONSERVER_ErrorDelete(err);
  }
  if (ans != NULL)
    ifd__py_send_now(in, IFD_PY_MSG_MODEL_CONTROL_ANSWER, id, ans, alen);
  free(ans);
  json_decref(j);
  free(payload);
}
