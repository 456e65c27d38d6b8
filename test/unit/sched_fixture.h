/*
 * test/unit/sched_fixture.h - the fixture test_sched.c and test_sequence.c
 * share: a server on a real loop whose models run on a fake backend.
 *
 * The schedulers run exactly as in the server (core submit -> sched ->
 * run queue); only backend_api is replaced, through sched's own seam
 * (ifd__sched_backend_t): the fake records each batch handed to the run
 * queue, and the test "executes" a batch by sending a FINAL response for
 * each request, releasing it, and reporting the instance idle, all on the
 * loop thread. Nothing runs on another thread but model loading. Include
 * once, from a test's .c file, after cmocka.h.
 */
#ifndef IFD_TEST_SCHED_FIXTURE_H
#define IFD_TEST_SCHED_FIXTURE_H

#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/model.h"
#include "core/server.h"
#include "sched/internal.h"
#include "sched/sched.h"
#include "core/request_internal.h"

/* ---- the fake backend ------------------------------------------------------
 */

#define MAX_BATCHES 1024
#define MAX_MODELS 16

typedef struct batch {
  ifd_model_t *m;
  ifd_request_t *reqs[16];
  uint32_t n;
  uint32_t instance; /* the instance it was queued for (0: any) */
  int done;
  uint64_t at; /* uv_hrtime() at dispatch */
} batch_t;

typedef struct loaded {
  ifd_model_t *m;
  ifd_instance_idle_cb idle;
  void *arg;
} loaded_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static loaded_t models[MAX_MODELS]; /* guarded by mu (loads run on the pool) */
static int n_models;
static batch_t batches[MAX_BATCHES];
static int n_batches;
static int n_freed;

static int fake_load(ifd_model_t *m, ifd_instance_idle_cb idle, void *arg,
                     ifd_errmsg_t *err) {
  (void)err;
  pthread_mutex_lock(&mu);
  assert_true(n_models < MAX_MODELS);
  models[n_models].m = m;
  models[n_models].idle = idle;
  models[n_models].arg = arg;
  n_models++;
  pthread_mutex_unlock(&mu);
  return 0;
}

typedef struct freed_ev {
  ifd_event_t ev;
  void (*freed)(void *arg);
  void *arg;
} freed_ev_t;

static void on_freed(ifd_event_t *ev) {
  freed_ev_t *f = (freed_ev_t *)ev;
  if (f->freed != NULL) f->freed(f->arg);
  n_freed++;
  free(f);
}

/* test_free_in_stop_callback holds the freed events back (pool thread:
 * guarded by mu) and hands them to the loop itself. */
static int hold_freed;
static freed_ev_t *held_freed[MAX_MODELS];
static int n_held_freed;

/* Like backend_api: `freed` runs later, on the loop. */
static void fake_unload(ifd_model_t *m, void (*freed)(void *arg), void *arg) {
  freed_ev_t *f = calloc(1, sizeof(*f));
  assert_non_null(f);
  f->ev.fn = on_freed;
  f->freed = freed;
  f->arg = arg;
  pthread_mutex_lock(&mu);
  if (hold_freed) {
    held_freed[n_held_freed++] = f;
    pthread_mutex_unlock(&mu);
    return;
  }
  pthread_mutex_unlock(&mu);
  ifd_evq_push(ifd_server_evq(m->server), &f->ev);
}

static uint32_t fake_instances(const ifd_model_t *m) {
  uint32_t n = 0;
  size_t i;
  for (i = 0; i < m->config->n_instance_group; i++)
    n += (uint32_t)m->config->instance_group[i]->count;
  return n;
}

static void fake_enqueue_to(ifd_model_t *m, uint32_t instance,
                            ifd_request_t **reqs, uint32_t n) {
  batch_t *b = &batches[n_batches++];
  uint32_t i;
  assert_true(n_batches <= MAX_BATCHES);
  assert_true(n <= 16);
  b->m = m;
  b->n = n;
  b->instance = instance;
  b->done = 0;
  b->at = uv_hrtime();
  for (i = 0; i < n; i++) {
    /* Dispatch (on the loop) made it EXECUTING. */
    assert_int_equal(ifd__req(reqs[i])->state, IFD_REQ_EXECUTING);
    b->reqs[i] = reqs[i];
  }
}

static void fake_enqueue(ifd_model_t *m, ifd_request_t **reqs, uint32_t n) {
  fake_enqueue_to(m, 0, reqs, n);
}

/* Every batch is taken by an instance at once: nothing waits on the fake
 * run queue. */
static uint64_t fake_queued(const ifd_model_t *m) {
  (void)m;
  return 0;
}

static ifd_request_t *fake_take_queued(ifd_model_t *m, uint64_t *jobs) {
  (void)m;
  *jobs = 0;
  return NULL;
}

/* A test that sets fake_runq_waits keeps the batches "on the run queue"
 * (no instance took them yet): a cancelled request can be taken back out
 * of its batch, which the fake then records without it. */
static int fake_runq_waits;
static int fake_taken_back;

static int fake_take_request(ifd_model_t *m, ifd_request_t *req,
                             int *job_gone) {
  int i;
  uint32_t k;
  *job_gone = 0;
  if (!fake_runq_waits) return 0;
  for (i = 0; i < n_batches; i++) {
    batch_t *b = &batches[i];
    if (b->m != m || b->done) continue;
    for (k = 0; k < b->n; k++) {
      if (b->reqs[k] != req) continue;
      memmove(&b->reqs[k], &b->reqs[k + 1], (b->n - k - 1) * sizeof(req));
      b->n--;
      if (b->n == 0) {
        b->done = 1;
        *job_gone = 1;
      }
      fake_taken_back++;
      return 1;
    }
  }
  return 0;
}

static const ifd__sched_backend_t fake_backend = {
    fake_load,   fake_unload,      fake_instances,  fake_enqueue,
    fake_queued, fake_take_queued, fake_enqueue_to, fake_take_request,
};

static int test_load(ifd_model_t *m, ifd_errmsg_t *err) {
  return ifd__sched_load(m, &fake_backend, err);
}

static ifd_model_ops_t test_ops;

/* ---- the model repository ------------------------------------------------
 */

static char root[64];

/* A model of the fake backend with input IN (`in`: more fields of it). */
static void write_model_in(const char *name, const char *in,
                           const char *extra) {
  char path[512];
  FILE *f;
  snprintf(path, sizeof(path), "%s/%s", root, name);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof(path), "%s/%s/1", root, name);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof(path), "%s/%s/config.pbtxt", root, name);
  f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f,
          "name: \"%s\" backend: \"fake\" "
          "input [{ name: \"IN\" data_type: TYPE_FP32 dims: [ -1 ] %s }] "
          "output [{ name: \"OUT\" data_type: TYPE_FP32 dims: [ -1 ] }] %s",
          name, in, extra);
  fclose(f);
}

static void write_model(const char *name, const char *extra) {
  write_model_in(name, "", extra);
}

static int rm_one(const char *p, const struct stat *st, int fl, struct FTW *f) {
  (void)st;
  (void)fl;
  (void)f;
  return remove(p);
}

/* The models of the including test (a function it defines). */
static void write_models(void);

static void make_repo(void) {
  snprintf(root, sizeof(root), "/tmp/ifd_sched_XXXXXX");
  assert_non_null(mkdtemp(root));
  write_models();
}

static __attribute__((unused)) void write_models_sched(void) {
  write_model("def", "max_batch_size: 8 instance_group [{ count: 2 }]");
  write_model("dyn",
              "max_batch_size: 8 instance_group [{ count: 1 }] "
              "dynamic_batching { }");
  write_model("pref",
              "max_batch_size: 8 instance_group [{ count: 1 }] "
              "dynamic_batching { preferred_batch_size: [ 2, 4 ] "
              "max_queue_delay_microseconds: 30000000 }");
  write_model("delay",
              "max_batch_size: 4 instance_group [{ count: 1 }] "
              "dynamic_batching { max_queue_delay_microseconds: 100000 }");
  write_model("prio",
              "max_batch_size: 1 instance_group [{ count: 1 }] "
              "dynamic_batching { priority_levels: 2 "
              "default_priority_level: 2 }");
  write_model("reject",
              "max_batch_size: 1 instance_group [{ count: 1 }] "
              "dynamic_batching { default_queue_policy { "
              "timeout_action: REJECT default_timeout_microseconds: 2000000 "
              "allow_timeout_override: true max_queue_size: 3 } }");
  write_model("delayq",
              "max_batch_size: 1 instance_group [{ count: 1 }] "
              "dynamic_batching { default_queue_policy { "
              "timeout_action: DELAY allow_timeout_override: true } }");
  write_model("noovr",
              "max_batch_size: 1 instance_group [{ count: 1 }] "
              "dynamic_batching { default_queue_policy { "
              "timeout_action: REJECT allow_timeout_override: false } }");
  write_model("ord",
              "max_batch_size: 1 instance_group [{ count: 3 }] "
              "dynamic_batching { preserve_ordering: true }");
  write_model("stress",
              "max_batch_size: 4 instance_group [{ count: 2 }] "
              "dynamic_batching { default_queue_policy { "
              "timeout_action: REJECT allow_timeout_override: true } }");
}

/* ---- the server and its loop ----------------------------------------------
 */

typedef struct answer {
  char id[32];
  int error;
  char msg[128];
  uint64_t at; /* uv_hrtime() when it reached the protocol */
} answer_t;

static uv_loop_t loop;
static ifd_server_t *server;
static int loaded, stopped;
static answer_t answers[MAX_BATCHES];
static int n_answers;

static void on_loaded(ifd_server_t *s, int failed, void *arg) {
  (void)s;
  (void)arg;
  assert_int_equal(failed, 0);
  loaded = 1;
}

static void on_stopped(ifd_server_t *s, void *arg) {
  (void)s;
  (void)arg;
  stopped = 1;
}

/* The protocol: records each FINAL answer, then drops its reference. */
static void on_response(ifd_response_t *resp, void *arg) {
  ifd_request_t *req = resp->req;
  answer_t *a = &answers[n_answers++];
  (void)arg;
  assert_true(n_answers <= MAX_BATCHES);
  assert_true(resp->flags & IFD_RESPONSE_FINAL);
  snprintf(a->id, sizeof(a->id), "%s", req->id);
  a->error = resp->error;
  snprintf(a->msg, sizeof(a->msg), "%s",
           resp->error_msg != NULL ? resp->error_msg : "");
  a->at = uv_hrtime();
  ifd_response_free(resp);
  ifd_request_unref(req);
}

static float zeros[64];

/* Submits a request of `batch` rows of `cols` floats. Returns the request
 * (the protocol's reference is dropped with its answer), or NULL with
 * *rc set when it was refused up front. */
static __attribute__((unused)) ifd_request_t *submit(
    const char *model, const char *id, int64_t batch, int64_t cols,
    uint32_t priority, uint64_t timeout_us, int *rc) {
  ifd_request_t *req = ifd_request_new(server);
  int64_t shape[2] = {batch, cols};
  ifd_input_t *in;
  ifd_errmsg_t err;
  int r;

  assert_non_null(req);
  req->model_name = model;
  req->id = ifd_pool_strndup(&req->pool, id, strlen(id));
  req->priority = priority;
  req->timeout_us = timeout_us;
  req->on_response = on_response;
  in = ifd_request_add_input(req, "IN", 2, IFD_TYPE_FP32, shape, 2);
  assert_non_null(in);
  in->data = zeros;
  in->byte_size = (uint64_t)(batch * cols) * sizeof(float);
  r = ifd_request_submit(req, &err);
  if (rc != NULL) *rc = r;
  if (r < 0) {
    /* Refused by the scheduler (validation failures stay INIT). */
    if (ifd__req(req)->state != IFD_REQ_INIT)
      assert_int_equal(ifd__req(req)->state, IFD_REQ_FAILED_ENQUEUE);
    ifd_request_unref(req);
    return NULL;
  }
  return req;
}

/* Runs what the loop has ready, without blocking. */
static void pump(void) {
  uv_run(&loop, UV_RUN_NOWAIT);
  uv_run(&loop, UV_RUN_NOWAIT);
}

static loaded_t *model_of(ifd_model_t *m) {
  int i;
  for (i = 0; i < n_models; i++)
    if (models[i].m == m) return &models[i];
  fail_msg("no such model");
  return NULL;
}

/* Executes batch k as a backend would: a FINAL response and a release per
 * request, then the instance reports itself idle. */
static void complete(int k) {
  batch_t *b = &batches[k];
  loaded_t *l = model_of(b->m);
  uint32_t i;
  assert_true(k < n_batches);
  assert_false(b->done);
  b->done = 1;
  for (i = 0; i < b->n; i++) {
    ifd_response_t *resp = ifd_response_new(b->reqs[i]);
    assert_non_null(resp);
    ifd_response_send(resp, IFD_RESPONSE_FINAL, 0, NULL);
    ifd_request_release(b->reqs[i], 1);
  }
  l->idle(b->m, b->instance, 1, b->n, l->arg);
  pump();
}

static void on_wait_timer(uv_timer_t *t) {
  *(int *)t->data = 1;
}

static void free_handle(uv_handle_t *h) {
  free(h);
}

/* Runs the loop for at least `ms` milliseconds. Each call has a timer of
 * its own, freed when its close completes: a stack timer reused by the
 * next call while its close was still pending corrupted the loop's handle
 * list (seen as a rare hang in epoll_wait with no timer armed). */
static __attribute__((unused)) void wait_ms(uint64_t ms) {
  uv_timer_t *t = malloc(sizeof(*t));
  int fired = 0;
  assert_non_null(t);
  uv_timer_init(&loop, t);
  t->data = &fired;
  uv_timer_start(t, on_wait_timer, ms, 0);
  while (!fired) uv_run(&loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)t, free_handle);
  pump();
}

static void shutdown_all(void) {
  int k;
  if (stopped) return;
  /* Whatever still executes finishes first. */
  for (k = 0; k < n_batches; k++)
    if (!batches[k].done) complete(k);
  ifd_server_shutdown(server, on_stopped, NULL);
  while (!stopped || n_freed < n_models) uv_run(&loop, UV_RUN_ONCE);
}

static int setup(void **state) {
  ifd_server_opts_t o;
  ifd_errmsg_t err;
  static const char *repos[1];
  (void)state;
  n_models = n_batches = n_freed = n_answers = 0;
  loaded = stopped = 0;
  make_repo();
  test_ops = *ifd_sched_model_ops();
  test_ops.load = test_load;
  memset(&o, 0, sizeof(o));
  repos[0] = root;
  o.repos = repos;
  o.n_repos = 1;
  o.ops = &test_ops;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ifd_server_new(&loop, &o, &server, &err), 0);
  ifd_server_start(server, on_loaded, NULL);
  while (!loaded) uv_run(&loop, UV_RUN_ONCE);
  return 0;
}

static int teardown(void **state) {
  int i, j;
  (void)state;
  if (server != NULL) {
    shutdown_all();
    ifd_server_free(server);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
  nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  /* No request was answered twice. */
  for (i = 0; i < n_answers; i++)
    for (j = i + 1; j < n_answers; j++)
      assert_string_not_equal(answers[i].id, answers[j].id);
  return 0;
}

static void assert_answer(int i, const char *id, int error, const char *msg) {
  assert_true(i < n_answers);
  assert_string_equal(answers[i].id, id);
  assert_int_equal(answers[i].error, error);
  if (msg != NULL) assert_non_null(strstr(answers[i].msg, msg));
}

static void assert_batch(int k, const char *const *ids, uint32_t n) {
  uint32_t i;
  assert_true(k < n_batches);
  assert_int_equal(batches[k].n, n);
  for (i = 0; i < n; i++) assert_string_equal(batches[k].reqs[i]->id, ids[i]);
}

#define BATCH(k, ...)                                      \
  do {                                                     \
    static const char *const ids_[] = {__VA_ARGS__};       \
    assert_batch(k, ids_, sizeof(ids_) / sizeof(ids_[0])); \
  } while (0)

#endif
