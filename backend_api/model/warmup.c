/*
 * backend_api/model/warmup.c - model warmup: the config's model_warmup samples,
 * run on every instance before its model is ready.
 *
 * As Triton does: each sample (name, batch_size, inputs, count) becomes
 * batch_size requests of batch 1 (no batch dimension for a model that does
 * not batch) executed together, count times (0 means once), on each
 * instance. An input's data is zeros, random bytes, or the raw bytes of
 * <model>/warmup/<input_data_file>; a BYTES input's zero (and random) data
 * is four zero bytes per element, i.e. empty strings, and a BYTES file is
 * taken whole. An input the config does not declare (a sequence batcher
 * control input) is passed to the backend as given. A sample of batch_size
 * 0 is skipped. The first error response fails the model's load with
 * "failed to run warmup sample '<name>': <error>; ".
 *
 * Where it runs: the samples' data (files read) is built once per model on
 * the loading thread (the libuv pool; ifd__instances_start), then each
 * instance thread runs them right after TRITONBACKEND_ModelInstanceInitialize
 * and before it reports its initialization, so a backend finds the thread,
 * device and stream it will serve on, and the model becomes ready only once
 * every instance warmed up. The loop is never involved.
 *
 * The requests are the core's own request objects (core/infer.h) handed
 * straight to the instance's execute, as Triton prepares its warmup
 * requests to the state just before execute: no validation, no scheduler,
 * no client. A request sink (ifd_req_sink_t) takes their responses and
 * release on the backend's thread instead of the completion queue, so the
 * responses are discarded and the thread waits on a condition variable for
 * them.
 *
 * Statistics: as Triton, what the backend reports for warmup requests is
 * counted in the model's statistics (and so its metrics): each request
 * (its times as the backend reported them, queue time nil) and each
 * execution (ReportBatchStatistics). Instance threads only record them
 * (the request records here, the batch reports in the instance's usual
 * list); the loading thread counts them in ifd__warmup_count once every
 * instance warmed up, before the version is published: the loop reads a
 * version's statistics only once it is ready, and the load's completion
 * event orders these writes before that. A load that fails counts none.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_api/internal.h"
#include "base/clock.h"
#include "base/log.h"
#include "core/infer.h"
#include "core/request_internal.h"

/* Room for the errors of one sample run (the rest is cut). */
#define WARM_ERR_MAX 1024

typedef struct winput {
  const char *name; /* borrowed: the model config */
  ifd_dtype_t dtype;
  int64_t shape[IFD_MAX_DIMS + 1];
  uint32_t ndims;
  const void *data; /* borrowed: the sample's zero or random buffer, or a
                       file's bytes */
  uint64_t byte_size;
} winput_t;

typedef struct wsample {
  const char *name; /* borrowed: the model config */
  uint32_t batch_size, count;
  winput_t *inputs; /* owned: n_inputs entries */
  uint32_t n_inputs;
  void *zero, *random; /* owned: synthetic data (may be NULL) */
  char **files;        /* owned: file contents, each owned */
  uint32_t n_files;
} wsample_t;

struct ifd__warmup {
  wsample_t *samples; /* owned: n entries */
  uint32_t n;
};

/* One warmup request to count once the load succeeded. */
typedef struct wstat {
  ifd_request_times_t t;
  uint64_t done_ns; /* when it was released */
  int success;
} wstat_t;

/* An instance's sink for its warmup requests. Lives as long as the
 * instance (ifd__warmup_instance_free), so a backend thread that is still
 * leaving a sink callback never touches freed memory. */
struct ifd__warm_sink {
  ifd_req_sink_t sink; /* first: core calls it */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint32_t released;      /* guarded by mu: requests released so far */
  char err[WARM_ERR_MAX]; /* guarded by mu: "<error>; " per error response */
  size_t err_len;
  int failed; /* guarded by mu: an error response came */
  /* The instance thread's only: requests to count (ifd__warmup_count). */
  wstat_t *stats; /* owned */
  uint32_t n_stats, cap_stats;
};

/* Per-request words of sched_area (no scheduler owns a warmup request). */
#define W_RELEASED 0
#define W_FINAL 1
#define W_ERROR 2 /* an error response came */
#define W_DONE_NS 3

void ifd__warmup_free(ifd__warmup_t *w) {
  uint32_t i, k;
  if (w == NULL) return;
  for (i = 0; i < w->n; i++) {
    wsample_t *s = &w->samples[i];
    for (k = 0; k < s->n_files; k++) free(s->files[k]);
    free(s->files);
    free(s->inputs);
    free(s->zero);
    free(s->random);
  }
  free(w->samples);
  free(w);
}

/* Reads the whole file at `path` into *out (owned) and *len. Triton's text
 * on failure. */
static int read_file(const char *path, char **out, size_t *len,
                     ifd_errmsg_t *err) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  long n;
  int rc = 0;
  if (f == NULL)
    return ifd_errf(err, IFD_EINTERNAL,
                    "failed to open text file for read %s: %s", path,
                    strerror(errno));
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
      fseek(f, 0, SEEK_SET) != 0) {
    rc = ifd_errf(err, IFD_EINTERNAL, "failed to read text file %s: %s", path,
                  strerror(errno));
    goto out_close;
  }
  buf = malloc((size_t)n + 1);
  if (buf == NULL) {
    rc = ifd_errf(err, IFD_ENOMEM, "out of memory reading %s", path);
    goto out_close;
  }
  if (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    rc = ifd_errf(err, IFD_EINTERNAL, "failed to read text file %s", path);
    free(buf);
    goto out_close;
  }
  *out = buf;
  *len = (size_t)n;
out_close:
  fclose(f);
  return rc;
}

/* Bytes of one batch-1 input: its element count times the type's size, or
 * 4 bytes per element for BYTES (as Triton sizes them). */
static int input_bytes(const char *name,
                       const Inference__ModelWarmup__Input *in, uint64_t *out,
                       ifd_errmsg_t *err) {
  int64_t count = 1;
  size_t es = ifd_dtype_size((ifd_dtype_t)in->data_type), i;
  /* One dim is kept for the batch dimension. */
  if (in->n_dims > IFD_MAX_DIMS - 1)
    return ifd_errf(err, IFD_EINVAL,
                    "warmup setting for input '%s' has more than %d dims", name,
                    IFD_MAX_DIMS - 1);
  for (i = 0; i < in->n_dims; i++) {
    if (in->dims[i] < 0)
      return ifd_errf(err, IFD_EINVAL,
                      "warmup setting expects all variable-size dimensions are "
                      "specified for input '%s'",
                      name);
    if (in->dims[i] != 0 && count > INT64_MAX / 16 / in->dims[i])
      return ifd_errf(err, IFD_EINVAL,
                      "warmup setting for input '%s' is too large", name);
    count *= in->dims[i];
  }
  *out = (uint64_t)count * (es == 0 ? 4 : es);
  return 0;
}

/* Fills `buf` with pseudo-random bytes (xorshift; warmup needs no quality). */
static void fill_random(unsigned char *buf, uint64_t n) {
  struct timespec ts;
  uint64_t x, i;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  x = (uint64_t)ts.tv_nsec * 2654435761u + (uint64_t)ts.tv_sec + 1;
  for (i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    buf[i] = (unsigned char)(x >> 24);
  }
}

static int prepare_sample(const ifd_model_t *m,
                          const Inference__ModelWarmup *ws, wsample_t *s,
                          ifd_errmsg_t *err) {
  const int batching = m->config->max_batch_size > 0;
  uint64_t max_zero = 0, max_random = 0;
  size_t i, k;
  int rc;

  s->name = ws->name;
  s->batch_size = ws->batch_size;
  s->count = ws->count > 0 ? ws->count : 1;
  /* First pass: sizes of the synthetic buffers (one of each per sample,
   * shared by its inputs, as Triton does). */
  for (i = 0; i < ws->n_inputs; i++) {
    const Inference__ModelWarmup__InputsEntry *e = ws->inputs[i];
    uint64_t n;
    if (e->value == NULL) continue;
    rc = input_bytes(e->key, e->value, &n, err);
    if (rc < 0) return rc;
    switch (e->value->input_data_type_case) {
      case INFERENCE__MODEL_WARMUP__INPUT__INPUT_DATA_TYPE_ZERO_DATA:
        if (n > max_zero) max_zero = n;
        break;
      case INFERENCE__MODEL_WARMUP__INPUT__INPUT_DATA_TYPE_RANDOM_DATA:
        /* Random strings are zeros too: empty strings (Triton's way). */
        if (e->value->data_type == INFERENCE__DATA_TYPE__TYPE_STRING) {
          if (n > max_zero) max_zero = n;
        } else if (n > max_random) {
          max_random = n;
        }
        break;
      default:
        break;
    }
  }
  s->zero = calloc(1, max_zero > 0 ? max_zero : 1);
  s->random = malloc(max_random > 0 ? max_random : 1);
  s->inputs = calloc(ws->n_inputs > 0 ? ws->n_inputs : 1, sizeof(*s->inputs));
  s->files = calloc(ws->n_inputs > 0 ? ws->n_inputs : 1, sizeof(*s->files));
  if (s->zero == NULL || s->random == NULL || s->inputs == NULL ||
      s->files == NULL)
    return ifd_errf(err, IFD_ENOMEM, "out of memory preparing warmup");
  fill_random(s->random, max_random);

  /* Second pass: each input's shape and data. */
  for (i = 0; i < ws->n_inputs; i++) {
    const Inference__ModelWarmup__InputsEntry *e = ws->inputs[i];
    const Inference__ModelWarmup__Input *wi = e->value;
    winput_t *in = &s->inputs[s->n_inputs];
    uint64_t n = 0;
    if (wi == NULL) continue;
    rc = input_bytes(e->key, wi, &n, err);
    if (rc < 0) return rc;
    switch (wi->input_data_type_case) {
      case INFERENCE__MODEL_WARMUP__INPUT__INPUT_DATA_TYPE_ZERO_DATA:
        in->data = s->zero;
        break;
      case INFERENCE__MODEL_WARMUP__INPUT__INPUT_DATA_TYPE_RANDOM_DATA:
        in->data = wi->data_type == INFERENCE__DATA_TYPE__TYPE_STRING
                       ? s->zero
                       : s->random;
        break;
      case INFERENCE__MODEL_WARMUP__INPUT__INPUT_DATA_TYPE_INPUT_DATA_FILE: {
        char path[4096];
        char *bytes = NULL;
        size_t len = 0;
        if ((size_t)snprintf(path, sizeof(path), "%s/warmup/%s", m->path,
                             wi->input_data_file) >= sizeof(path))
          return ifd_errf(err, IFD_EINVAL, "warmup data file path too long");
        rc = read_file(path, &bytes, &len, err);
        if (rc < 0) return rc;
        s->files[s->n_files++] = bytes;
        if (wi->data_type == INFERENCE__DATA_TYPE__TYPE_STRING) {
          n = len;
        } else if (n > len) {
          /* Triton's text, its missing space included. */
          return ifd_errf(err, IFD_EINVAL,
                          "warmup setting expects %" PRIu64
                          " bytes, but the data provided from %sonly has %zu "
                          "bytes",
                          n, wi->input_data_file, len);
        }
        in->data = bytes;
        break;
      }
      default:
        return ifd_errf(err, IFD_EINVAL,
                        "warmup setting expects input '%s' to have "
                        "input_data_type set",
                        e->key);
    }
    in->name = e->key;
    in->dtype = (ifd_dtype_t)wi->data_type;
    in->byte_size = n;
    in->ndims = 0;
    if (batching) in->shape[in->ndims++] = 1;
    for (k = 0; k < wi->n_dims; k++) in->shape[in->ndims++] = wi->dims[k];
    s->n_inputs++;
  }
  return 0;
}

int ifd__warmup_prepare(TRITONBACKEND_Model *bm, ifd_errmsg_t *err) {
  const ifd_model_config_t *cfg = bm->model->config;
  ifd__warmup_t *w;
  size_t i;
  int rc;

  bm->warmup = NULL;
  if (cfg == NULL || cfg->n_model_warmup == 0) return 0;
  w = calloc(1, sizeof(*w));
  if (w == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  w->samples = calloc(cfg->n_model_warmup, sizeof(*w->samples));
  if (w->samples == NULL) {
    free(w);
    return ifd_errf(err, IFD_ENOMEM, "out of memory");
  }
  for (i = 0; i < cfg->n_model_warmup; i++) {
    const Inference__ModelWarmup *ws = cfg->model_warmup[i];
    if (ws->batch_size == 0) {
      IFD_VERBOSE("Skipping batch 0 warmup sample '%s'", ws->name);
      continue;
    }
    IFD_VERBOSE("Generating warmup sample data for '%s'", ws->name);
    rc = prepare_sample(bm->model, ws, &w->samples[w->n++], err);
    if (rc < 0) {
      ifd__warmup_free(w);
      return rc;
    }
  }
  if (w->n == 0) {
    ifd__warmup_free(w);
    return 0;
  }
  bm->warmup = w;
  return 0;
}

/* ---- the sink: a warmup request's responses and release ----------------- */

static void on_response(ifd_req_sink_t *sink, ifd_response_t *resp) {
  struct ifd__warm_sink *k = (struct ifd__warm_sink *)sink;
  ifd_request_t *req = resp->req;
  pthread_mutex_lock(&k->mu);
  if (!resp->discard) {
    if (resp->flags & IFD_RESPONSE_FINAL) req->sched_area.u[W_FINAL] = 1;
    if (resp->error < 0) {
      req->sched_area.u[W_ERROR] = 1;
      const char *msg =
          resp->error_msg != NULL ? resp->error_msg : ifd_strerror(resp->error);
      int n = snprintf(k->err + k->err_len, sizeof(k->err) - k->err_len, "%s; ",
                       msg);
      if (n > 0) k->err_len += (size_t)n;
      if (k->err_len >= sizeof(k->err)) k->err_len = sizeof(k->err) - 1;
      k->failed = 1;
    }
  }
  ifd_sink_response_done(resp);
  pthread_cond_broadcast(&k->cv);
  pthread_mutex_unlock(&k->mu);
}

static void on_release(ifd_req_sink_t *sink, ifd_request_t *req,
                       uint32_t flags) {
  struct ifd__warm_sink *k = (struct ifd__warm_sink *)sink;
  (void)flags;
  pthread_mutex_lock(&k->mu);
  req->sched_area.u[W_RELEASED] = 1;
  req->sched_area.u[W_DONE_NS] = ifd_now_ns();
  k->released++;
  pthread_cond_broadcast(&k->cv);
  pthread_mutex_unlock(&k->mu);
}

static void on_unheld(ifd_req_sink_t *sink, ifd_request_t *req) {
  struct ifd__warm_sink *k = (struct ifd__warm_sink *)sink;
  pthread_mutex_lock(&k->mu);
  atomic_fetch_sub(&ifd__req(req)->open_responses, 1);
  pthread_cond_broadcast(&k->cv);
  pthread_mutex_unlock(&k->mu);
}

/* Whether every request is released with nothing open on it; k->mu held. */
static int all_done(ifd_request_t **reqs, uint32_t n) {
  uint32_t i;
  for (i = 0; i < n; i++)
    if (!reqs[i]->sched_area.u[W_RELEASED] ||
        atomic_load(&ifd__req(reqs[i])->open_responses) > 0)
      return 0;
  return 1;
}

void ifd__warmup_instance_free(TRITONBACKEND_ModelInstance *in) {
  if (in->warm == NULL) return;
  free(in->warm->stats);
  pthread_mutex_destroy(&in->warm->mu);
  pthread_cond_destroy(&in->warm->cv);
  free(in->warm);
  in->warm = NULL;
}

/* Records what request `req` counts (the instance thread, after the run):
 * a success as Triton judges it (the backend's report, else its final
 * response). Out of memory: it is not counted. */
static void note_stat(struct ifd__warm_sink *k, const ifd_request_t *req) {
  wstat_t *w;
  if (k->n_stats == k->cap_stats) {
    uint32_t ncap = k->cap_stats ? k->cap_stats * 2 : 8;
    wstat_t *ns = realloc(k->stats, ncap * sizeof(*ns));
    if (ns == NULL) return;
    k->stats = ns;
    k->cap_stats = ncap;
  }
  w = &k->stats[k->n_stats++];
  w->t.received = req->t_received;
  w->t.queued = req->t_queued;
  w->t.exec_start = req->t_exec_start;
  w->t.compute_start = req->t_compute_start;
  w->t.compute_end = req->t_compute_end;
  w->t.exec_end = req->t_exec_end;
  w->done_ns = req->sched_area.u[W_DONE_NS];
  w->success = req->stat_reported
                   ? req->stat_success
                   : req->sched_area.u[W_FINAL] && !req->sched_area.u[W_ERROR];
}

void ifd__warmup_count(TRITONBACKEND_ModelInstance *in) {
  struct ifd__warm_sink *k = in->warm;
  ifd_model_stats_t *st = &in->model->model->stats;
  uint32_t i;
  if (k == NULL) return;
  for (i = 0; i < k->n_stats; i++)
    ifd_stats_request(st, &k->stats[i].t, k->stats[i].success, 1,
                      k->stats[i].done_ns);
  k->n_stats = 0;
  ifd__instance_flush_reports(in);
}

/* Frees a warmup request (its sink saw it released, nothing open on it). */
static void request_drop(ifd_request_t *req) {
  /* Borrowed while it ran; cleared so that the unref frees it here, off
   * the loop, like the plain malloc'd request it is. */
  req->model = NULL;
  req->server = NULL;
  req->sink = NULL;
  ifd_request_unref(req);
}

/* Builds the sample's requests, executes them as one batch on `in`, and
 * waits for their end. NULL, or the error that fails the load. */
static TRITONSERVER_Error *run_sample(TRITONBACKEND_ModelInstance *in,
                                      const wsample_t *s) {
  struct ifd__warm_sink *k = in->warm;
  ifd_model_t *m = in->model->model;
  ifd_request_t **reqs;
  TRITONSERVER_Error *e = NULL;
  uint32_t i, j, n = 0;

  reqs = calloc(s->batch_size, sizeof(*reqs));
  if (reqs == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 "out of memory running warmup");
  for (i = 0; i < s->batch_size; i++) {
    ifd_request_t *req = ifd_request_new(NULL);
    if (req == NULL) goto out_nomem;
    reqs[n++] = req;
    req->server = m->server;
    req->model = m;
    req->model_name = m->name;
    req->model_version = m->version;
    req->sink = &k->sink;
    req->batch_size = m->config->max_batch_size > 0 ? 1 : 0;
    if (ifd_request_reserve_inputs(req, s->n_inputs) < 0) goto out_nomem;
    for (j = 0; j < s->n_inputs; j++) {
      const winput_t *wi = &s->inputs[j];
      ifd_input_t *t = ifd_request_add_input(req, wi->name, strlen(wi->name),
                                             wi->dtype, wi->shape, wi->ndims);
      if (t == NULL) goto out_nomem;
      t->data = wi->data;
      t->byte_size = wi->byte_size;
    }
  }

  pthread_mutex_lock(&k->mu);
  k->released = 0;
  k->err_len = 0;
  k->err[0] = '\0';
  k->failed = 0;
  pthread_mutex_unlock(&k->mu);

  /* Triton stamps a warmup request's start and queue start just before
   * its execute: no queue time. */
  for (i = 0; i < n; i++)
    reqs[i]->t_received = reqs[i]->t_queued = ifd_now_ns();
  ifd__instance_execute(in, reqs, n);

  pthread_mutex_lock(&k->mu);
  while (!all_done(reqs, n)) pthread_cond_wait(&k->cv, &k->mu);
  for (i = 0; i < n && !k->failed; i++)
    if (!reqs[i]->sched_area.u[W_FINAL]) {
      /* Triton would wait for ever; a load that never ends helps no one. */
      snprintf(k->err, sizeof(k->err),
               "the backend released the request without a final response; ");
      k->failed = 1;
    }
  /* INVALID_ARG whatever the backend said, as Triton's WarmUp. */
  if (k->failed)
    e = ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                    "failed to run warmup sample '%s': %s", s->name, k->err);
  pthread_mutex_unlock(&k->mu);
  for (i = 0; i < n; i++) {
    if (e == NULL) note_stat(k, reqs[i]);
    request_drop(reqs[i]);
  }
  free(reqs);
  return e;

out_nomem:
  for (i = 0; i < n; i++) request_drop(reqs[i]);
  free(reqs);
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                               "out of memory running warmup");
}

TRITONSERVER_Error *ifd__warmup_run(TRITONBACKEND_ModelInstance *in) {
  const ifd__warmup_t *w = in->model->warmup;
  TRITONSERVER_Error *e = NULL;
  uint32_t i, it;

  if (w == NULL || in->passive) return NULL;
  if (in->warm == NULL) {
    in->warm = calloc(1, sizeof(*in->warm));
    if (in->warm == NULL)
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                   "out of memory running warmup");
    pthread_mutex_init(&in->warm->mu, NULL);
    pthread_cond_init(&in->warm->cv, NULL);
    in->warm->sink.response = on_response;
    in->warm->sink.release = on_release;
    in->warm->sink.unheld = on_unheld;
  }
  for (i = 0; i < w->n && e == NULL; i++) {
    const wsample_t *s = &w->samples[i];
    for (it = 1; it <= s->count && e == NULL; it++) {
      IFD_VERBOSE(
          "model '%s' instance %s is running warmup sample '%s' for "
          "iteration %" PRIu32,
          in->model->model->name, in->name, s->name, it);
      e = run_sample(in, s);
    }
  }
  return e;
}
