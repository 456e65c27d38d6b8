/*
 * bench/perf/capi.c - inferd-perf's in-process transport
 * (--service-kind=triton_c_api, perf_analyzer's C API mode).
 *
 * No socket: libtritonserver.so is dlopened from --triton-server-directory
 * (DIR/lib/ first, then DIR/), a server is created in this process with
 * TRITONSERVER_ServerNew (explicit model control, --model-repository, the
 * backends of --backend-directory or DIR/backends) and the model under test
 * is loaded with ServerLoadModel, as perf_analyzer does. Metadata, config
 * and statistics come from ServerModelMetadata / ModelConfig /
 * ModelStatistics, whose JSON is the HTTP routes' (model.c and stats.c
 * parse it).
 *
 * Each load slot owns one TRITONSERVER_InferenceRequest, built once from
 * the generated inputs (borrowed: AppendInputData points at the model's
 * data) and sent again with ServerInferAsync once the server has released
 * it. Outputs go to malloc'd buffers (our response allocator), freed when
 * the response is deleted in the response callback. A request is complete
 * when both its final response and its release have come: the callbacks
 * run on the server's thread, so they only put the slot on a queue guarded
 * by a mutex and wake the load thread if it waits on the condition
 * variable. The load thread (the libuv loop's, which owns every other
 * state) takes the queue in ifd__perf_capi_wait(), which stands for
 * uv_run(UV_RUN_ONCE) in sched.c, and hands each slot to
 * ifd__perf_run_done(), which sends again at once: the closed loop is
 * perf_analyzer's synchronous mode (one request per slot, the next sent
 * after the last one's response has reached the load thread). With
 * --spin-us the load thread polls the queue that long before it sleeps.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "bench/perf/perf.h"
#include "triton/core/tritonserver.h"

/* The functions used, looked up in the library once. */
#define IFD_PERF_CAPI_FNS(X)             \
  X(ErrorMessage)                        \
  X(ErrorCodeString)                     \
  X(ErrorDelete)                         \
  X(StringToDataType)                    \
  X(MessageSerializeToJson)              \
  X(MessageDelete)                       \
  X(ServerOptionsNew)                    \
  X(ServerOptionsDelete)                 \
  X(ServerOptionsSetModelRepositoryPath) \
  X(ServerOptionsSetModelControlMode)    \
  X(ServerOptionsSetStrictModelConfig)   \
  X(ServerOptionsSetBackendDirectory)    \
  X(ServerOptionsSetLogInfo)             \
  X(ServerOptionsSetExitTimeout)         \
  X(ServerNew)                           \
  X(ServerStop)                          \
  X(ServerDelete)                        \
  X(ServerLoadModel)                     \
  X(ServerModelMetadata)                 \
  X(ServerModelConfig)                   \
  X(ServerModelStatistics)               \
  X(ServerInferAsync)                    \
  X(ResponseAllocatorNew)                \
  X(ResponseAllocatorDelete)             \
  X(InferenceRequestNew)                 \
  X(InferenceRequestDelete)              \
  X(InferenceRequestAddInput)            \
  X(InferenceRequestAppendInputData)     \
  X(InferenceRequestAddRequestedOutput)  \
  X(InferenceRequestSetReleaseCallback)  \
  X(InferenceRequestSetResponseCallback) \
  X(InferenceResponseError)              \
  X(InferenceResponseDelete)

typedef struct capi_fns {
#define IFD_PERF_CAPI_FIELD(f) __typeof__(TRITONSERVER_##f) *f;
  IFD_PERF_CAPI_FNS(IFD_PERF_CAPI_FIELD)
#undef IFD_PERF_CAPI_FIELD
} capi_fns_t;

typedef struct capi_slot capi_slot_t;

struct ifd_perf_capi {
  void *dl; /* owned: the library's handle (never closed: backends' threads
               and atexit handlers may point into it) */
  capi_fns_t f;
  TRITONSERVER_Server *server;          /* owned */
  TRITONSERVER_ResponseAllocator *allc; /* owned */
  const ifd_perf_model_t *model;        /* borrowed: outlives the slots */
  capi_slot_t **slots;                  /* owned array, owned slots */
  int nslots, capslots;

  /* Shared with the server's thread. */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  capi_slot_t *done_head, *done_tail; /* complete requests, in order */
  int waiting;                        /* the load thread sleeps on cv */
  atomic_int pending; /* done_head is set: what --spin-us polls unlocked */
};

struct capi_slot {
  ifd_perf_slot_t base;
  ifd_perf_capi_t *capi;              /* borrowed: outlives the slot */
  TRITONSERVER_InferenceRequest *req; /* owned (the server's while sent) */
  /* Written by the server's thread under capi->mu while the request is in
   * flight, read by the load thread once the slot is on the done queue. */
  int got_final, released, failed;
  char err[IFD_PERF_ERR_MAX];
  capi_slot_t *next_done;
};

/* Copies the error's message into err, frees it, and returns UV_EIO. */
static int take_err(ifd_perf_capi_t *c, TRITONSERVER_Error *e, const char *what,
                    char *err, size_t errlen) {
  snprintf(err, errlen, "%s: %s: %s", what, c->f.ErrorCodeString(e),
           c->f.ErrorMessage(e));
  c->f.ErrorDelete(e);
  return UV_EIO;
}

/* ---- the response allocator (any thread) ---- */

static TRITONSERVER_Error *alloc_fn(
    TRITONSERVER_ResponseAllocator *a, const char *name, size_t size,
    TRITONSERVER_MemoryType type, int64_t id, void *userp, void **buffer,
    void **buffer_userp, TRITONSERVER_MemoryType *atype, int64_t *aid) {
  (void)a;
  (void)name;
  (void)type;
  (void)id;
  (void)userp;
  *buffer = malloc(size ? size : 1);
  *buffer_userp = NULL;
  *atype = TRITONSERVER_MEMORY_CPU;
  *aid = 0;
  /* A NULL buffer makes the server fail the output: the request's error. */
  return NULL;
}

static TRITONSERVER_Error *release_fn(TRITONSERVER_ResponseAllocator *a,
                                      void *buffer, void *buffer_userp,
                                      size_t size, TRITONSERVER_MemoryType type,
                                      int64_t id) {
  (void)a;
  (void)buffer_userp;
  (void)size;
  (void)type;
  (void)id;
  free(buffer);
  return NULL;
}

/* ---- callbacks (the server's thread) ---- */

/* Under c->mu: queues the slot once both the final response and the
 * release are in, and wakes the load thread if it sleeps. */
static void maybe_done(ifd_perf_capi_t *c, capi_slot_t *s) {
  if (!s->got_final || !s->released) return;
  s->next_done = NULL;
  if (c->done_tail)
    c->done_tail->next_done = s;
  else
    c->done_head = s;
  c->done_tail = s;
  atomic_store_explicit(&c->pending, 1, memory_order_release);
  if (c->waiting) pthread_cond_signal(&c->cv);
}

static void on_response(TRITONSERVER_InferenceResponse *resp, uint32_t flags,
                        void *userp) {
  capi_slot_t *s = userp;
  ifd_perf_capi_t *c = s->capi;
  TRITONSERVER_Error *e = NULL;
  char msg[IFD_PERF_ERR_MAX] = "";

  /* The response's error and its deletion need no lock. */
  if (resp) {
    e = c->f.InferenceResponseError(resp);
    if (e)
      snprintf(msg, sizeof msg, "%s: %s", c->f.ErrorCodeString(e),
               c->f.ErrorMessage(e));
    c->f.InferenceResponseDelete(resp);
  }
  pthread_mutex_lock(&c->mu);
  if (e && !s->failed) {
    s->failed = 1;
    memcpy(s->err, msg, sizeof s->err);
  }
  if (flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL) {
    s->got_final = 1;
    maybe_done(c, s);
  }
  pthread_mutex_unlock(&c->mu);
}

static void on_release(TRITONSERVER_InferenceRequest *req, uint32_t flags,
                       void *userp) {
  capi_slot_t *s = userp;
  ifd_perf_capi_t *c = s->capi;
  (void)req;
  if (!(flags & TRITONSERVER_REQUEST_RELEASE_ALL)) return;
  pthread_mutex_lock(&c->mu);
  s->released = 1;
  maybe_done(c, s);
  pthread_mutex_unlock(&c->mu);
}

/* ---- the load thread ---- */

static int capi_send(ifd_perf_slot_t *base) {
  capi_slot_t *s = container_of(base, capi_slot_t, base);
  ifd_perf_capi_t *c = s->capi;
  TRITONSERVER_Error *e;

  /* Not in flight: no callback touches these now. */
  s->got_final = s->released = s->failed = 0;
  s->err[0] = 0;
  e = c->f.ServerInferAsync(c->server, s->req, NULL);
  if (e) {
    char msg[IFD_PERF_ERR_MAX];
    take_err(c, e, "TRITONSERVER_ServerInferAsync", msg, sizeof msg);
    ifd__perf_run_fail(base->run, UV_EIO, "%s", msg);
    return UV_EIO;
  }
  return 0;
}

static const ifd_perf_slot_vt_t capi_vt = {capi_send};

void ifd__perf_capi_wait(ifd_perf_run_t *run) {
  ifd_perf_capi_t *c = run->capi;
  capi_slot_t *s, *next;
  int ms;

  uv_update_time(run->loop);
  ms = uv_backend_timeout(run->loop); /* -1: no timer; 0: one is due */
  if (run->opts->spin_us && ms != 0 &&
      !atomic_load_explicit(&c->pending, memory_order_acquire)) {
    /* --spin-us: poll before sleeping, as the server's loop does. */
    uint64_t end = uv_hrtime() + run->opts->spin_us * 1000;
    unsigned n = 0;
    while (!atomic_load_explicit(&c->pending, memory_order_acquire))
      if ((++n & 63) == 0 && uv_hrtime() >= end) break;
  }
  pthread_mutex_lock(&c->mu);
  if (!c->done_head && ms != 0) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (ms < 0 || ms > 1000) ms = 1000;
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    c->waiting = 1;
    while (!c->done_head) /* a spurious wake-up waits again */
      if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT) break;
    c->waiting = 0;
  }
  s = c->done_head;
  c->done_head = c->done_tail = NULL;
  atomic_store_explicit(&c->pending, 0, memory_order_relaxed);
  pthread_mutex_unlock(&c->mu);
  for (; s; s = next) {
    next = s->next_done;
    if (s->failed)
      ifd__perf_run_done(&s->base, 0, s->err, strlen(s->err));
    else
      ifd__perf_run_done(&s->base, 1, NULL, 0);
  }
  uv_update_time(run->loop);
  if (uv_backend_timeout(run->loop) == 0) uv_run(run->loop, UV_RUN_NOWAIT);
}

static int build_request(ifd_perf_capi_t *c, capi_slot_t *s, char *err,
                         size_t errlen) {
  const ifd_perf_model_t *m = c->model;
  TRITONSERVER_Error *e;
  int64_t version = m->version[0] ? strtoll(m->version, NULL, 10) : -1;
  int i;

  e = c->f.InferenceRequestNew(&s->req, c->server, m->name, version);
  if (e) return take_err(c, e, "TRITONSERVER_InferenceRequestNew", err, errlen);
  for (i = 0; i < m->ninputs; i++) {
    const ifd_perf_tensor_t *t = &m->inputs[i];
    e = c->f.InferenceRequestAddInput(s->req, t->name,
                                      c->f.StringToDataType(t->datatype),
                                      t->shape, (uint64_t)t->rank);
    if (!e)
      e = c->f.InferenceRequestAppendInputData(
          s->req, t->name, t->data, t->nbytes, TRITONSERVER_MEMORY_CPU, 0);
    if (e) return take_err(c, e, t->name, err, errlen);
  }
  for (i = 0; i < m->noutputs; i++) {
    e = c->f.InferenceRequestAddRequestedOutput(s->req, m->outputs[i].name);
    if (e) return take_err(c, e, m->outputs[i].name, err, errlen);
  }
  e = c->f.InferenceRequestSetReleaseCallback(s->req, on_release, s);
  if (!e)
    e = c->f.InferenceRequestSetResponseCallback(s->req, c->allc, NULL,
                                                 on_response, s);
  if (e) return take_err(c, e, "request callbacks", err, errlen);
  return 0;
}

int ifd__perf_capi_slot_new(ifd_perf_run_t *run, ifd_perf_slot_t **out) {
  ifd_perf_capi_t *c = run->capi;
  capi_slot_t *s;
  char err[IFD_PERF_ERR_MAX];
  int rc;

  if (c->nslots == c->capslots) {
    int cap = c->capslots ? c->capslots * 2 : 16;
    void *p = realloc(c->slots, (size_t)cap * sizeof *c->slots);
    if (!p) return UV_ENOMEM;
    c->slots = p;
    c->capslots = cap;
  }
  s = calloc(1, sizeof *s);
  if (!s) return UV_ENOMEM;
  s->base.vt = &capi_vt;
  s->base.run = run;
  s->capi = c;
  c->slots[c->nslots++] = s; /* freed by shutdown, even half built */
  rc = build_request(c, s, err, sizeof err);
  if (rc < 0) {
    ifd__perf_run_fail(run, rc, "cannot build the request: %s", err);
    return rc;
  }
  *out = &s->base;
  return 0;
}

/* ---- set-up, metadata, statistics ---- */

/* Serializes a message into a json_t (caller decrefs) and deletes it. */
static json_t *message_json(ifd_perf_capi_t *c, TRITONSERVER_Message *msg,
                            const char *what, char *err, size_t errlen) {
  const char *base = NULL;
  size_t n = 0;
  json_error_t je;
  json_t *j = NULL;
  TRITONSERVER_Error *e = c->f.MessageSerializeToJson(msg, &base, &n);

  if (e)
    take_err(c, e, what, err, errlen);
  else if (!(j = json_loadb(base, n, 0, &je)))
    snprintf(err, errlen, "%s: bad JSON: %s", what, je.text);
  c->f.MessageDelete(msg);
  return j;
}

static int64_t model_version(const ifd_perf_model_t *m) {
  return m->version[0] ? strtoll(m->version, NULL, 10) : -1;
}

int ifd__perf_capi_model_load(ifd_perf_run_t *run, ifd_perf_model_t *m,
                              char *err, size_t errlen) {
  ifd_perf_capi_t *c = run->capi;
  TRITONSERVER_Message *msg = NULL;
  TRITONSERVER_Error *e;
  json_t *meta = NULL, *cfg = NULL;
  int rc = UV_EIO;

  e = c->f.ServerModelMetadata(c->server, m->name, model_version(m), &msg);
  if (e) return take_err(c, e, "failed to get model metadata", err, errlen);
  meta = message_json(c, msg, "model metadata", err, errlen);
  if (!meta) goto out_free;
  e = c->f.ServerModelConfig(c->server, m->name, model_version(m), 1, &msg);
  if (e) {
    take_err(c, e, "failed to get model config", err, errlen);
    goto out_free;
  }
  cfg = message_json(c, msg, "model config", err, errlen);
  if (!cfg) goto out_free;
  rc = ifd__perf_model_json(m, meta, cfg, err, errlen);

out_free:
  json_decref(cfg);
  json_decref(meta);
  return rc;
}

int ifd__perf_capi_payload(ifd_perf_run_t *run, const ifd_perf_model_t *m) {
  run->capi->model = m;
  return 0;
}

int ifd__perf_capi_stats(ifd_perf_run_t *run, const ifd_perf_model_t *m,
                         ifd_perf_stats_t *out, char *err, size_t errlen) {
  ifd_perf_capi_t *c = run->capi;
  TRITONSERVER_Message *msg = NULL;
  TRITONSERVER_Error *e;
  json_t *root;
  int rc;

  e = c->f.ServerModelStatistics(c->server, m->name, model_version(m), &msg);
  if (e)
    return take_err(c, e, "TRITONSERVER_ServerModelStatistics", err, errlen);
  root = message_json(c, msg, "model statistics", err, errlen);
  if (!root) return UV_EIO;
  rc = ifd__perf_stats_json(root, out);
  if (rc < 0) snprintf(err, errlen, "model statistics: no model_stats");
  json_decref(root);
  return rc;
}

static void *open_library(const char *dir, char *err, size_t errlen) {
  static const char *const rel[] = {"lib/libtritonserver.so",
                                    "libtritonserver.so"};
  char path[4096];
  size_t i;
  void *h;

  for (i = 0; i < sizeof rel / sizeof rel[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, rel[i]);
    if (access(path, F_OK)) continue;
    /* GLOBAL: backends loaded by the server bind to this copy of the API. */
    h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h) snprintf(err, errlen, "cannot load %s: %s", path, dlerror());
    return h;
  }
  snprintf(err, errlen,
           "no libtritonserver.so in %s/lib or %s (--triton-server-directory)",
           dir, dir);
  return NULL;
}

int ifd__perf_capi_init(ifd_perf_run_t *run, char *err, size_t errlen) {
  const ifd_perf_opts_t *o = run->opts;
  ifd_perf_capi_t *c;
  TRITONSERVER_ServerOptions *so = NULL;
  TRITONSERVER_Error *e = NULL;
  pthread_condattr_t ca;
  char backends[4096];

  c = calloc(1, sizeof *c);
  if (!c) return UV_ENOMEM;
  pthread_mutex_init(&c->mu, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&c->cv, &ca);
  pthread_condattr_destroy(&ca);
  run->capi = c;

  c->dl = open_library(o->server_dir, err, errlen);
  if (!c->dl) return UV_ENOENT;
#define IFD_PERF_CAPI_SYM(fn)                                                \
  *(void **)&c->f.fn = dlsym(c->dl, "TRITONSERVER_" #fn);                    \
  if (!c->f.fn) {                                                            \
    snprintf(err, errlen, "libtritonserver.so has no TRITONSERVER_%s", #fn); \
    return UV_ENOENT;                                                        \
  }
  IFD_PERF_CAPI_FNS(IFD_PERF_CAPI_SYM)
#undef IFD_PERF_CAPI_SYM

  if (o->backend_dir)
    snprintf(backends, sizeof backends, "%s", o->backend_dir);
  else
    snprintf(backends, sizeof backends, "%s/backends", o->server_dir);
  e = c->f.ServerOptionsNew(&so);
  if (!e) e = c->f.ServerOptionsSetModelRepositoryPath(so, o->repository);
  if (!e)
    e = c->f.ServerOptionsSetModelControlMode(
        so, TRITONSERVER_MODEL_CONTROL_EXPLICIT);
  if (!e) e = c->f.ServerOptionsSetStrictModelConfig(so, false);
  if (!e) e = c->f.ServerOptionsSetBackendDirectory(so, backends);
  if (!e) e = c->f.ServerOptionsSetLogInfo(so, false);
  if (!e) e = c->f.ServerOptionsSetExitTimeout(so, 5);
  if (e) {
    take_err(c, e, "server options", err, errlen);
    goto out_fail;
  }
  e = c->f.ServerNew(&c->server, so);
  if (e) {
    c->server = NULL;
    take_err(c, e, "TRITONSERVER_ServerNew", err, errlen);
    goto out_fail;
  }
  if (o->model && (e = c->f.ServerLoadModel(c->server, o->model))) {
    take_err(c, e, "failed to load the model", err, errlen);
    goto out_fail;
  }
  e = c->f.ResponseAllocatorNew(&c->allc, alloc_fn, release_fn, NULL);
  if (e) {
    c->allc = NULL;
    take_err(c, e, "TRITONSERVER_ResponseAllocatorNew", err, errlen);
    goto out_fail;
  }
  c->f.ServerOptionsDelete(so);
  return 0;

out_fail:
  if (so) c->f.ServerOptionsDelete(so);
  return UV_EIO;
}

void ifd__perf_capi_shutdown(ifd_perf_run_t *run) {
  ifd_perf_capi_t *c = run->capi;
  TRITONSERVER_Error *e;
  int i, nheld = 0;

  if (!c) return;
  /* Stopping first lets every request still in flight (a failed run)
   * finish: its callbacks then touch no freed slot. */
  if (c->server && (e = c->f.ServerStop(c->server))) {
    fprintf(stderr, "warning: TRITONSERVER_ServerStop: %s\n",
            c->f.ErrorMessage(e));
    c->f.ErrorDelete(e);
  }
  for (i = 0; i < c->nslots; i++) {
    capi_slot_t *s = c->slots[i];
    int held;
    pthread_mutex_lock(&c->mu);
    held = s->base.busy && !s->released;
    pthread_mutex_unlock(&c->mu);
    if (held) { /* still the server's: left to the process's end */
      nheld++;
      continue;
    }
    if (s->req) c->f.InferenceRequestDelete(s->req);
    free(s);
  }
  free(c->slots);
  if (c->allc) c->f.ResponseAllocatorDelete(c->allc);
  if (c->server && (e = c->f.ServerDelete(c->server))) {
    fprintf(stderr, "warning: TRITONSERVER_ServerDelete: %s\n",
            c->f.ErrorMessage(e));
    c->f.ErrorDelete(e);
  }
  run->capi = NULL;
  if (nheld) return; /* their callbacks may still take c->mu */
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  free(c);
}
