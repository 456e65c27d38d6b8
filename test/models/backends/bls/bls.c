/*
 * test/models/backends/bls/bls.c - the "bls" test backend: business logic
 * scripting in plain C, a model whose execute runs other models through the
 * in-process API.
 *
 * README: built as libtriton_bls.so; uses the public Triton headers only.
 * The server comes from TRITONBACKEND_ModelServer. For each request, execute
 * runs the model config's steps one after the other: each step builds a
 * TRITONSERVER_InferenceRequest, sends it with TRITONSERVER_ServerInferAsync
 * (outputs in buffers from the model's own response allocator: malloc) and
 * waits on a condition variable of its own until the call's FINAL response
 * and its release have both come. Every response of a step is gathered (a
 * decoupled callee sends several): an output's bytes are concatenated across
 * responses. The BLS response carries every output of every step under the
 * callee's names. A callee's error (an error response, or a refused call)
 * becomes the BLS request's error, code and message unchanged. A call
 * carries the id of the request it serves, and the cancellation of that
 * request: the waiting thread polls TRITONBACKEND_RequestIsCancelled every
 * 5 ms and then calls TRITONSERVER_InferenceRequestCancel on its call.
 *
 * Model config parameters ({"string_value": ...}):
 *   calls      "model[:dst=src,...][;model...]": the steps. Step 0 sends the
 *              request's inputs, step k the outputs of step k-1; with a map,
 *              only the listed tensors, input dst taking tensor src.
 *   max_depth  the depth at which the model stops calling and echoes
 *              instead (default: never). A request's depth is its INT
 *              parameter "bls_depth" (0 when absent); every call sends
 *              depth + 1, so a model can call itself, or a cycle run, a
 *              bounded number of times.
 *   echo       "dst=src,...": at max_depth, output dst is a copy of input
 *              src.
 *
 * Threads: execute runs on the instance's thread and blocks there while its
 * calls run; response and release callbacks run on the server's loop
 * thread and only queue and signal. The allocator runs on the callee's
 * thread.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

#define TESTBE_NAME "bls"
#include "../common/testbe.h"

#define MAX_STEPS 8
#define MAX_MAPS 8
#define MAX_TENSORS 16
#define MAX_DIMS 8
#define NAME_MAX_LEN 64
#define CANCEL_POLL_MS 5

typedef struct map {
  char dst[NAME_MAX_LEN], src[NAME_MAX_LEN];
} map_t;

typedef struct step {
  char model[NAME_MAX_LEN];
  map_t maps[MAX_MAPS];
  unsigned n_maps; /* 0: every tensor, same name */
} step_t;

typedef struct model_state {
  TRITONSERVER_Server *server;           /* borrowed: outlives the model */
  TRITONSERVER_ResponseAllocator *alloc; /* owned */
  step_t steps[MAX_STEPS];
  unsigned n_steps;
  int64_t max_depth; /* -1: always call */
  map_t echo[MAX_MAPS];
  unsigned n_echo;
} model_state_t;

/* A tensor: a request's input (borrowed buffers) or a gathered output. */
typedef struct tensor {
  char name[NAME_MAX_LEN];
  TRITONSERVER_DataType dtype;
  int64_t shape[MAX_DIMS];
  uint32_t ndims;
  const void *data; /* borrowed (inputs), or `owned` */
  char *owned;      /* owned: a gathered output's bytes */
  size_t size;
  unsigned parts; /* responses that held it */
} tensor_t;

typedef struct tensors {
  tensor_t t[MAX_TENSORS];
  unsigned n;
} tensors_t;

/* One call in flight: the loop thread's callbacks queue and signal, the
 * instance thread waits and drains. */
typedef struct pending {
  struct pending *next;
  TRITONSERVER_InferenceResponse *resp; /* owned: deleted once read */
} pending_t;

typedef struct call {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pending_t *head, *tail; /* guarded by mu: responses not read yet */
  bool final;             /* guarded by mu: the FINAL flag came */
  bool released;          /* guarded by mu: the release callback ran */
  bool oom;               /* guarded by mu: a response could not be queued */
} call_t;

/* ---- config ----------------------------------------------------------------
 */

/* The string_value of parameter `key` in the config JSON, copied into out
 * (escapes are not expected in these tests' values). False when absent. */
static bool param_string(const char *json, const char *key, char *out,
                         size_t cap) {
  char quoted[NAME_MAX_LEN + 2];
  const char *p = strstr(json, "\"parameters\"");
  size_t n = 0;
  snprintf(quoted, sizeof(quoted), "\"%s\"", key);
  if (p != NULL) p = strstr(p, quoted);
  if (p != NULL) p = strstr(p, "\"string_value\"");
  if (p != NULL) p = strchr(p + strlen("\"string_value\""), '"');
  if (p == NULL) return false;
  for (p++; *p != '"'; p++) {
    if (*p == '\0' || n + 1 >= cap) return false;
    out[n++] = *p;
  }
  out[n] = '\0';
  return true;
}

static void trim_copy(char *dst, const char *b, const char *e) {
  size_t n;
  while (b < e && *b == ' ') b++;
  while (e > b && e[-1] == ' ') e--;
  n = (size_t)(e - b) < NAME_MAX_LEN - 1 ? (size_t)(e - b) : NAME_MAX_LEN - 1;
  memcpy(dst, b, n);
  dst[n] = '\0';
}

/* Parses "dst=src,dst=src" (up to `end`) into maps. -1 when malformed. */
static int parse_maps(const char *s, const char *end, map_t *maps,
                      unsigned *n) {
  *n = 0;
  while (s < end) {
    const char *comma = memchr(s, ',', (size_t)(end - s));
    const char *stop = comma != NULL ? comma : end;
    const char *eq = memchr(s, '=', (size_t)(stop - s));
    if (eq == NULL || *n >= MAX_MAPS) return -1;
    trim_copy(maps[*n].dst, s, eq);
    trim_copy(maps[*n].src, eq + 1, stop);
    if (maps[*n].dst[0] == '\0' || maps[*n].src[0] == '\0') return -1;
    (*n)++;
    s = stop + (comma != NULL);
  }
  return 0;
}

static TRITONSERVER_Error *bad_param(const char *key, const char *value) {
  char msg[1200];
  snprintf(msg, sizeof(msg), "bls: malformed parameter %s: '%.1023s'", key,
           value);
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, msg);
}

static TRITONSERVER_Error *parse_config(const char *json, model_state_t *st) {
  char buf[1024], *s;
  st->max_depth = -1;
  if (param_string(json, "max_depth", buf, sizeof(buf))) {
    char *end;
    st->max_depth = strtoll(buf, &end, 10);
    if (end == buf || *end != '\0' || st->max_depth < 0)
      return bad_param("max_depth", buf);
  }
  if (param_string(json, "echo", buf, sizeof(buf)) &&
      parse_maps(buf, buf + strlen(buf), st->echo, &st->n_echo) < 0)
    return bad_param("echo", buf);
  if (!param_string(json, "calls", buf, sizeof(buf)))
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "bls: the model config needs parameter "
                                 "'calls'");
  for (s = buf; *s != '\0';) {
    char *semi = strchr(s, ';');
    char *stop = semi != NULL ? semi : s + strlen(s);
    char *colon = memchr(s, ':', (size_t)(stop - s));
    step_t *step = &st->steps[st->n_steps];
    if (st->n_steps >= MAX_STEPS) return bad_param("calls", buf);
    trim_copy(step->model, s, colon != NULL ? colon : stop);
    if (step->model[0] == '\0') return bad_param("calls", buf);
    if (colon != NULL &&
        parse_maps(colon + 1, stop, step->maps, &step->n_maps) < 0)
      return bad_param("calls", buf);
    st->n_steps++;
    s = semi != NULL ? semi + 1 : stop;
  }
  if (st->n_steps == 0) return bad_param("calls", buf);
  return NULL;
}

/* ---- the response allocator (any thread) ---------------------------------
 */

static TRITONSERVER_Error *alloc_fn(TRITONSERVER_ResponseAllocator *allocator,
                                    const char *tensor_name, size_t byte_size,
                                    TRITONSERVER_MemoryType memory_type,
                                    int64_t memory_type_id, void *userp,
                                    void **buffer, void **buffer_userp,
                                    TRITONSERVER_MemoryType *actual_type,
                                    int64_t *actual_type_id) {
  (void)allocator;
  (void)tensor_name;
  (void)memory_type;
  (void)memory_type_id;
  (void)userp;
  *buffer = malloc(byte_size > 0 ? byte_size : 1);
  *buffer_userp = NULL;
  *actual_type = TRITONSERVER_MEMORY_CPU;
  *actual_type_id = 0;
  if (*buffer == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 "bls: out of memory for an output");
  return NULL;
}

static TRITONSERVER_Error *release_fn(TRITONSERVER_ResponseAllocator *allocator,
                                      void *buffer, void *buffer_userp,
                                      size_t byte_size,
                                      TRITONSERVER_MemoryType memory_type,
                                      int64_t memory_type_id) {
  (void)allocator;
  (void)buffer_userp;
  (void)byte_size;
  (void)memory_type;
  (void)memory_type_id;
  free(buffer);
  return NULL;
}

/* ---- callbacks (the server's loop thread): queue and signal ---------------
 */

static void on_response(TRITONSERVER_InferenceResponse *resp, uint32_t flags,
                        void *userp) {
  call_t *c = userp;
  pending_t *p = NULL;
  if (resp != NULL) {
    p = calloc(1, sizeof(*p));
    if (p == NULL) TRITONSERVER_InferenceResponseDelete(resp);
  }
  pthread_mutex_lock(&c->mu);
  if (p != NULL) {
    p->resp = resp;
    if (c->tail != NULL)
      c->tail->next = p;
    else
      c->head = p;
    c->tail = p;
  } else if (resp != NULL) {
    c->oom = true;
  }
  if (flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL) c->final = true;
  pthread_cond_signal(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

static void on_release(TRITONSERVER_InferenceRequest *request, uint32_t flags,
                       void *userp) {
  call_t *c = userp;
  (void)request;
  (void)flags;
  pthread_mutex_lock(&c->mu);
  c->released = true;
  pthread_cond_signal(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

/* ---- tensors ---------------------------------------------------------------
 */

static void tensors_clear(tensors_t *ts) {
  for (unsigned i = 0; i < ts->n; i++) free(ts->t[i].owned);
  ts->n = 0;
}

static tensor_t *tensors_find(tensors_t *ts, const char *name) {
  for (unsigned i = 0; i < ts->n; i++)
    if (strcmp(ts->t[i].name, name) == 0) return &ts->t[i];
  return NULL;
}

static TRITONSERVER_Error *errorf(TRITONSERVER_Error_Code code, const char *fmt,
                                  ...) __attribute__((format(printf, 2, 3)));

static TRITONSERVER_Error *errorf(TRITONSERVER_Error_Code code, const char *fmt,
                                  ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  return TRITONSERVER_ErrorNew(code, msg);
}

/* The request's inputs, as tensors pointing at its buffers (one buffer
 * each: these tests send contiguous CPU inputs). */
static TRITONSERVER_Error *request_inputs(TRITONBACKEND_Request *request,
                                          tensors_t *ts) {
  uint32_t count = 0;
  TRITONSERVER_Error *err = TRITONBACKEND_RequestInputCount(request, &count);
  for (uint32_t i = 0; err == NULL && i < count; i++) {
    TRITONBACKEND_Input *in = NULL;
    const char *name = NULL;
    const int64_t *shape = NULL;
    uint32_t ndims = 0, nbuf = 0;
    uint64_t size = 0, bsize = 0;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mt_id = 0;
    tensor_t *t = &ts->t[ts->n];
    if (ts->n >= MAX_TENSORS)
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                   "bls: too many inputs");
    err = TRITONBACKEND_RequestInputByIndex(request, i, &in);
    if (err == NULL)
      err = TRITONBACKEND_InputProperties(in, &name, &t->dtype, &shape, &ndims,
                                          &size, &nbuf);
    if (err != NULL) break;
    if (ndims > MAX_DIMS || nbuf > 1 || strlen(name) >= NAME_MAX_LEN)
      return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                    "bls: input '%s' is not one buffer of at most 8 dims",
                    name);
    snprintf(t->name, sizeof(t->name), "%s", name);
    memcpy(t->shape, shape, ndims * sizeof(shape[0]));
    t->ndims = ndims;
    t->size = (size_t)size;
    t->data = "";
    if (nbuf == 1) {
      err = TRITONBACKEND_InputBuffer(in, 0, &t->data, &bsize, &mt, &mt_id);
      if (err == NULL && (mt == TRITONSERVER_MEMORY_GPU || bsize != size))
        return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                      "bls: input '%s' is not in CPU memory", name);
    }
    ts->n++;
  }
  return err;
}

/* Adds response `resp`'s outputs to `ts`, concatenating an output that an
 * earlier response of the call already held. */
static TRITONSERVER_Error *gather(TRITONSERVER_InferenceResponse *resp,
                                  tensors_t *ts) {
  uint32_t count = 0;
  TRITONSERVER_Error *err =
      TRITONSERVER_InferenceResponseOutputCount(resp, &count);
  for (uint32_t i = 0; err == NULL && i < count; i++) {
    const char *name;
    TRITONSERVER_DataType dtype;
    const int64_t *shape;
    uint64_t ndims;
    const void *base;
    size_t size;
    TRITONSERVER_MemoryType mt;
    int64_t mt_id;
    void *userp;
    tensor_t *t;
    char *grown;
    err = TRITONSERVER_InferenceResponseOutput(resp, i, &name, &dtype, &shape,
                                               &ndims, &base, &size, &mt,
                                               &mt_id, &userp);
    if (err != NULL) break;
    if (mt == TRITONSERVER_MEMORY_GPU || ndims > MAX_DIMS ||
        strlen(name) >= NAME_MAX_LEN)
      return errorf(TRITONSERVER_ERROR_INTERNAL,
                    "bls: output '%s' is not in CPU memory, or has more than "
                    "8 dims",
                    name);
    t = tensors_find(ts, name);
    if (t == NULL) {
      if (ts->n >= MAX_TENSORS)
        return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                     "bls: too many outputs");
      t = &ts->t[ts->n++];
      memset(t, 0, sizeof(*t));
      snprintf(t->name, sizeof(t->name), "%s", name);
      t->dtype = dtype;
      memcpy(t->shape, shape, ndims * sizeof(shape[0]));
      t->ndims = (uint32_t)ndims;
    } else if (t->dtype != dtype) {
      return errorf(TRITONSERVER_ERROR_INTERNAL,
                    "bls: output '%s' changed its data type between "
                    "responses",
                    name);
    }
    grown = realloc(t->owned, t->size + size + 1);
    if (grown == NULL)
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                   "bls: out of memory");
    if (size > 0) memcpy(grown + t->size, base, size);
    t->owned = grown;
    t->data = grown;
    t->size += size;
    if (++t->parts > 1) {
      /* Several responses: one flat tensor of every element. */
      uint32_t es = TRITONSERVER_DataTypeByteSize(dtype);
      t->ndims = 1;
      t->shape[0] = es > 0 ? (int64_t)(t->size / es) : (int64_t)t->size;
    }
  }
  return err;
}

/* ---- one call --------------------------------------------------------------
 */

/* Adds tensor `t` to request r as input `name`. */
static TRITONSERVER_Error *add_input(TRITONSERVER_InferenceRequest *r,
                                     const char *name, const tensor_t *t) {
  TRITONSERVER_Error *err = TRITONSERVER_InferenceRequestAddInput(
      r, name, t->dtype, t->shape, t->ndims);
  if (err == NULL)
    err = TRITONSERVER_InferenceRequestAppendInputData(
        r, name, t->data, t->size, TRITONSERVER_MEMORY_CPU, 0);
  return err;
}

/* Builds the request of `step` from `in`; it takes the id of the request
 * it serves (`outer`), so the callee's log lines name it. */
static TRITONSERVER_Error *build(TRITONSERVER_InferenceRequest *r,
                                 TRITONBACKEND_Request *outer,
                                 const step_t *step, tensors_t *in,
                                 int64_t depth) {
  const char *id = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_RequestId(outer, &id);
  if (err == NULL && id != NULL && id[0] != '\0')
    err = TRITONSERVER_InferenceRequestSetId(r, id);
  if (err == NULL)
    err = TRITONSERVER_InferenceRequestSetIntParameter(r, "bls_depth", depth);
  if (step->n_maps == 0)
    for (unsigned i = 0; err == NULL && i < in->n; i++)
      err = add_input(r, in->t[i].name, &in->t[i]);
  for (unsigned i = 0; err == NULL && i < step->n_maps; i++) {
    const tensor_t *t = tensors_find(in, step->maps[i].src);
    if (t == NULL)
      return errorf(TRITONSERVER_ERROR_INVALID_ARG,
                    "bls: no tensor '%s' to send to model '%s'",
                    step->maps[i].src, step->model);
    err = add_input(r, step->maps[i].dst, t);
  }
  return err;
}

/* A deadline CANCEL_POLL_MS from now on the monotonic clock. */
static struct timespec poll_deadline(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_nsec += CANCEL_POLL_MS * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

/* Once `outer` is cancelled (its client went away), cancels the call r
 * too, once. Called without c->mu: the cancel waits for the loop thread,
 * whose callbacks take c->mu. */
static void forward_cancel(TRITONBACKEND_Request *outer,
                           TRITONSERVER_InferenceRequest *r, bool *sent) {
  bool cancelled = false;
  if (*sent) return;
  log_if_error(TRITONBACKEND_RequestIsCancelled(outer, &cancelled),
               "cannot ask for cancellation");
  if (!cancelled) return;
  *sent = true;
  log_if_error(TRITONSERVER_InferenceRequestCancel(r), "cannot cancel a call");
}

/* Runs `step` for request `outer` with inputs `in` and waits for it: its
 * gathered outputs in *out (cleared first), or the callee's error. While it
 * waits it polls `outer` for cancellation every CANCEL_POLL_MS and
 * forwards it to the call. */
static TRITONSERVER_Error *run_step(model_state_t *st,
                                    TRITONBACKEND_Request *outer,
                                    const step_t *step, tensors_t *in,
                                    int64_t depth, tensors_t *out) {
  TRITONSERVER_InferenceRequest *r = NULL;
  TRITONSERVER_Error *err, *failed = NULL;
  pthread_condattr_t ca;
  bool cancel_sent = false;
  call_t c;

  memset(&c, 0, sizeof(c));
  pthread_mutex_init(&c.mu, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&c.cv, &ca);
  pthread_condattr_destroy(&ca);
  tensors_clear(out);
  err = TRITONSERVER_InferenceRequestNew(&r, st->server, step->model, -1);
  if (err != NULL) goto out_destroy;
  err = build(r, outer, step, in, depth);
  if (err == NULL)
    err = TRITONSERVER_InferenceRequestSetReleaseCallback(r, on_release, &c);
  if (err == NULL)
    err = TRITONSERVER_InferenceRequestSetResponseCallback(r, st->alloc, NULL,
                                                           on_response, &c);
  if (err == NULL) err = TRITONSERVER_ServerInferAsync(st->server, r, NULL);
  if (err != NULL) goto out_delete;

  /* Drains responses as they come, until the FINAL flag and the release. */
  pthread_mutex_lock(&c.mu);
  for (;;) {
    pending_t *p = c.head;
    if (p == NULL) {
      struct timespec until = poll_deadline();
      if (c.final && c.released) break;
      if (pthread_cond_timedwait(&c.cv, &c.mu, &until) == ETIMEDOUT &&
          !cancel_sent) {
        pthread_mutex_unlock(&c.mu);
        forward_cancel(outer, r, &cancel_sent);
        pthread_mutex_lock(&c.mu);
      }
      continue;
    }
    c.head = p->next;
    if (c.head == NULL) c.tail = NULL;
    pthread_mutex_unlock(&c.mu);
    if (failed == NULL) {
      TRITONSERVER_Error *re = TRITONSERVER_InferenceResponseError(p->resp);
      /* The response owns its error: copied before the delete. */
      if (re != NULL)
        failed = TRITONSERVER_ErrorNew(TRITONSERVER_ErrorCode(re),
                                       TRITONSERVER_ErrorMessage(re));
      else
        failed = gather(p->resp, out);
    }
    log_if_error(TRITONSERVER_InferenceResponseDelete(p->resp),
                 "cannot delete a response");
    free(p);
    pthread_mutex_lock(&c.mu);
  }
  if (c.oom && failed == NULL)
    failed = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                   "bls: out of memory queueing a response");
  pthread_mutex_unlock(&c.mu);
  err = failed;

out_delete:
  /* Here the request was released, or never sent. */
  log_if_error(TRITONSERVER_InferenceRequestDelete(r),
               "cannot delete a request");
out_destroy:
  pthread_cond_destroy(&c.cv);
  pthread_mutex_destroy(&c.mu);
  if (err != NULL) tensors_clear(out);
  return err;
}

/* ---- execute ---------------------------------------------------------------
 */

static int64_t request_depth(TRITONBACKEND_Request *request) {
  uint32_t n = 0;
  if (TRITONBACKEND_RequestParameterCount(request, &n) != NULL) return 0;
  for (uint32_t i = 0; i < n; i++) {
    const char *key;
    TRITONSERVER_ParameterType type;
    const void *v;
    TRITONSERVER_Error *err =
        TRITONBACKEND_RequestParameter(request, i, &key, &type, &v);
    if (err != NULL) {
      TRITONSERVER_ErrorDelete(err);
      return 0;
    }
    if (strcmp(key, "bls_depth") == 0 && type == TRITONSERVER_PARAMETER_INT)
      return *(const int64_t *)v;
  }
  return 0;
}

/* Did the client ask for output `name` (no list: every output)? */
static bool requested(TRITONBACKEND_Request *request, const char *name) {
  uint32_t n = 0;
  TRITONSERVER_Error *err = TRITONBACKEND_RequestOutputCount(request, &n);
  if (err != NULL) {
    TRITONSERVER_ErrorDelete(err);
    return true;
  }
  for (uint32_t i = 0; i < n; i++) {
    const char *o = NULL;
    err = TRITONBACKEND_RequestOutputName(request, i, &o);
    if (err != NULL) {
      TRITONSERVER_ErrorDelete(err);
      continue;
    }
    if (strcmp(o, name) == 0) return true;
  }
  return n == 0;
}

/* Adds tensor t to the response as output `name`, when requested. */
static TRITONSERVER_Error *respond_tensor(TRITONBACKEND_Request *request,
                                          TRITONBACKEND_Response *response,
                                          const char *name, const tensor_t *t) {
  TRITONBACKEND_Output *output = NULL;
  void *dst = NULL;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mt_id = 0;
  TRITONSERVER_Error *err;
  if (!requested(request, name)) return NULL;
  err = TRITONBACKEND_ResponseOutput(response, &output, name, t->dtype,
                                     t->shape, t->ndims);
  if (err == NULL)
    err = TRITONBACKEND_OutputBuffer(output, &dst, t->size, &mt, &mt_id);
  if (err == NULL && mt == TRITONSERVER_MEMORY_GPU && t->size > 0)
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                "bls needs CPU output buffers");
  if (err == NULL && t->size > 0) memcpy(dst, t->data, t->size);
  return err;
}

static TRITONSERVER_Error *echo(const model_state_t *st, tensors_t *in,
                                TRITONBACKEND_Request *request,
                                TRITONBACKEND_Response *response) {
  TRITONSERVER_Error *err = NULL;
  for (unsigned i = 0; err == NULL && i < st->n_echo; i++) {
    const tensor_t *t = tensors_find(in, st->echo[i].src);
    if (t == NULL)
      err = errorf(TRITONSERVER_ERROR_INVALID_ARG,
                   "bls: no input '%s' to echo as '%s'", st->echo[i].src,
                   st->echo[i].dst);
    else
      err = respond_tensor(request, response, st->echo[i].dst, t);
  }
  return err;
}

/* Runs every step: step k reads prev (the request's inputs for step 0)
 * into cur, and its outputs go in the response as soon as it ends. */
static TRITONSERVER_Error *run_steps(model_state_t *st, int64_t depth,
                                     tensors_t *in, tensors_t *a, tensors_t *b,
                                     TRITONBACKEND_Request *request,
                                     TRITONBACKEND_Response *response) {
  static const unsigned cap = MAX_STEPS * MAX_TENSORS;
  char(*names)[NAME_MAX_LEN] = malloc(cap * NAME_MAX_LEN);
  unsigned n_names = 0;
  tensors_t *prev = in, *cur = a;
  TRITONSERVER_Error *err = NULL;
  if (names == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 "bls: out of memory");
  for (unsigned k = 0; err == NULL && k < st->n_steps; k++) {
    err = run_step(st, request, &st->steps[k], prev, depth + 1, cur);
    for (unsigned i = 0; err == NULL && i < cur->n; i++) {
      for (unsigned j = 0; err == NULL && j < n_names; j++)
        if (strcmp(names[j], cur->t[i].name) == 0)
          err = errorf(TRITONSERVER_ERROR_INTERNAL,
                       "bls: two steps return output '%s'", names[j]);
      if (err == NULL)
        err = respond_tensor(request, response, cur->t[i].name, &cur->t[i]);
      if (err == NULL && n_names < cap)
        memcpy(names[n_names++], cur->t[i].name, NAME_MAX_LEN);
    }
    prev = cur;
    cur = cur == a ? b : a;
  }
  free(names);
  return err;
}

static TRITONSERVER_Error *process(TRITONBACKEND_Request *request,
                                   TRITONBACKEND_Response *response,
                                   void *arg) {
  model_state_t *st = arg;
  int64_t depth = request_depth(request);
  tensors_t *ts = calloc(3, sizeof(tensors_t)); /* inputs, then two steps' */
  TRITONSERVER_Error *err;
  if (ts == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 "bls: out of memory");
  err = request_inputs(request, &ts[0]);
  if (err == NULL) {
    if (st->max_depth >= 0 && depth >= st->max_depth)
      err = echo(st, &ts[0], request, response);
    else
      err = run_steps(st, depth, &ts[0], &ts[1], &ts[2], request, response);
  }
  tensors_clear(&ts[1]);
  tensors_clear(&ts[2]);
  free(ts);
  return err;
}

/* ---- the backend's entry points --------------------------------------------
 */

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
  (void)backend;
  return testbe_check_api();
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
  TRITONSERVER_Message *config = NULL;
  const char *json = NULL;
  size_t json_len = 0;
  model_state_t *st = calloc(1, sizeof(*st));
  TRITONSERVER_Error *err;
  if (st == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 "bls: out of memory");
  err = TRITONBACKEND_ModelServer(model, &st->server);
  if (err == NULL) err = TRITONBACKEND_ModelConfig(model, 1, &config);
  if (err == NULL)
    err = TRITONSERVER_MessageSerializeToJson(config, &json, &json_len);
  if (err == NULL) {
    /* The JSON is not promised to end in a NUL: a copy that does. */
    char *copy = strndup(json, json_len);
    err = copy != NULL ? parse_config(copy, st)
                       : TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                               "bls: out of memory");
    free(copy);
  }
  if (config != NULL)
    TRITONSERVER_ErrorDelete(TRITONSERVER_MessageDelete(config));
  if (err == NULL)
    err = TRITONSERVER_ResponseAllocatorNew(&st->alloc, alloc_fn, release_fn,
                                            NULL);
  if (err == NULL) err = TRITONBACKEND_ModelSetState(model, st);
  if (err != NULL) {
    if (st->alloc != NULL)
      TRITONSERVER_ErrorDelete(TRITONSERVER_ResponseAllocatorDelete(st->alloc));
    free(st);
  }
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model) {
  void *vst = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelState(model, &vst);
  model_state_t *st = vst;
  if (err != NULL) return err;
  if (st != NULL) {
    log_if_error(TRITONSERVER_ResponseAllocatorDelete(st->alloc),
                 "cannot delete the response allocator");
    free(st);
  }
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request **requests,
    const uint32_t request_count) {
  TRITONBACKEND_Model *model = NULL;
  void *st = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceModel(instance, &model);
  if (err == NULL) err = TRITONBACKEND_ModelState(model, &st);
  if (err != NULL) return err;
  testbe_execute_each(instance, requests, request_count, process, st);
  return NULL;
}
