/*
 * test/unit/test_sched.c - the default scheduler and the dynamic batcher,
 * driven through the server on a real loop with a fake backend.
 *
 * The schedulers run exactly as in the server (core submit -> sched ->
 * run queue); only backend_api is replaced, through sched's own seam
 * (ifd__sched_backend_t): the fake records each batch handed to the run
 * queue, and the test "executes" a batch by sending a FINAL response for
 * each request, releasing it, and reporting the instance idle, all on the
 * loop thread. Nothing runs on another thread but model loading, so every
 * case is deterministic; the time-based cases (queue delay, timeouts) wait
 * on the loop and assert only lower bounds that the design guarantees.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

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
    assert_int_equal(reqs[i]->state, IFD_REQ_EXECUTING);
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

static const ifd__sched_backend_t fake_backend = {
    fake_load,   fake_unload,      fake_instances,  fake_enqueue,
    fake_queued, fake_take_queued, fake_enqueue_to,
};

static int test_load(ifd_model_t *m, ifd_errmsg_t *err) {
  return ifd__sched_load(m, &fake_backend, err);
}

static ifd_model_ops_t test_ops;

/* ---- the model repository ------------------------------------------------
 */

static char root[64];

static void write_model(const char *name, const char *extra) {
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
          "input [{ name: \"IN\" data_type: TYPE_FP32 dims: [ -1 ] }] "
          "output [{ name: \"OUT\" data_type: TYPE_FP32 dims: [ -1 ] }] %s",
          name, extra);
  fclose(f);
}

static int rm_one(const char *p, const struct stat *st, int fl, struct FTW *f) {
  (void)st;
  (void)fl;
  (void)f;
  return remove(p);
}

static void make_repo(void) {
  snprintf(root, sizeof(root), "/tmp/ifd_sched_XXXXXX");
  assert_non_null(mkdtemp(root));
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
static ifd_request_t *submit(const char *model, const char *id, int64_t batch,
                             int64_t cols, uint32_t priority,
                             uint64_t timeout_us, int *rc) {
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
    if (req->state != IFD_REQ_INIT)
      assert_int_equal(req->state, IFD_REQ_FAILED_ENQUEUE);
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

/* Runs the loop for at least `ms` milliseconds. */
static void wait_ms(uint64_t ms) {
  uv_timer_t t;
  int fired = 0;
  uv_timer_init(&loop, &t);
  t.data = &fired;
  uv_timer_start(&t, on_wait_timer, ms, 0);
  while (!fired) uv_run(&loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&t, NULL);
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

/* ---- the default scheduler ------------------------------------------------
 */

/* Each request runs alone, handed to the run queue at once in arrival
 * order (the instances take the oldest first); responses go out as they
 * come. */
static void test_default(void **state) {
  ifd_request_t *r;
  (void)state;
  r = submit("def", "d0", 3, 4, 0, 0, NULL);
  assert_non_null(r);
  submit("def", "d1", 1, 4, 0, 0, NULL);
  submit("def", "d2", 2, 4, 0, 0, NULL);
  assert_int_equal(n_batches, 3);
  BATCH(0, "d0");
  BATCH(1, "d1");
  BATCH(2, "d2");
  complete(2);
  complete(0);
  complete(1);
  assert_int_equal(n_answers, 3);
  assert_answer(0, "d2", 0, NULL);
  assert_answer(1, "d0", 0, NULL);
  assert_answer(2, "d1", 0, NULL);
}

/* ---- the dynamic batcher ------------------------------------------------
 */

/* No delay: an idle instance gets what is queued at once; a batch grows
 * while the next request fits max_batch_size and has the same shape. */
static void test_dynamic_batches(void **state) {
  (void)state;
  submit("dyn", "a0", 1, 4, 0, 0, NULL);
  assert_int_equal(n_batches, 1); /* idle instance: sent at once */
  submit("dyn", "a1", 3, 4, 0, 0, NULL);
  submit("dyn", "a2", 4, 4, 0, 0, NULL);
  submit("dyn", "a3", 2, 4, 0, 0, NULL);
  submit("dyn", "a4", 1, 5, 0, 0, NULL); /* another shape */
  assert_int_equal(n_batches, 1);        /* the only instance is busy */
  complete(0);
  BATCH(1, "a1", "a2"); /* 3 + 4 rows; a3 would make 9 > 8 */
  complete(1);
  BATCH(2, "a3"); /* a4 cannot join: its shape differs */
  complete(2);
  BATCH(3, "a4");
  complete(3);
  assert_int_equal(n_batches, 4);
  assert_int_equal(n_answers, 5);
  assert_answer(0, "a0", 0, NULL);
  assert_answer(4, "a4", 0, NULL);
}

/* Preferred sizes: a batch is sent before the delay once it reaches the
 * largest preferred size, trimmed to the largest preferred size it holds
 * as a prefix; a smaller one waits for the delay. */
static void test_preferred(void **state) {
  char id[16];
  int i;
  (void)state;
  for (i = 0; i < 3; i++) {
    snprintf(id, sizeof(id), "p%d", i);
    submit("pref", id, 1, 4, 0, 0, NULL);
    assert_int_equal(n_batches, 0); /* waiting for more (30 s delay) */
  }
  submit("pref", "p3", 1, 4, 0, 0, NULL);
  BATCH(0, "p0", "p1", "p2", "p3"); /* 4: the largest preferred size */
  for (i = 4; i < 9; i++) {
    snprintf(id, sizeof(id), "p%d", i);
    submit("pref", id, 1, 4, 0, 0, NULL);
  }
  assert_int_equal(n_batches, 1);
  complete(0);
  BATCH(1, "p4", "p5", "p6", "p7"); /* 5 queued, trimmed to 4 */
  complete(1);
  assert_int_equal(n_batches, 2); /* p8 alone waits for the delay */
  assert_int_equal(n_answers, 8);
  /* Unloading refuses what is still queued. */
  shutdown_all();
  assert_int_equal(n_answers, 9);
  assert_answer(8, "p8", IFD_EUNAVAIL, "the model is being unloaded");
}

/* max_queue_delay: a batch that is not full waits for the delay (never
 * less), one that is full goes at once. */
static void test_delay_timer(void **state) {
  uint64_t t0 = uv_hrtime();
  (void)state;
  submit("delay", "q0", 1, 4, 0, 0, NULL);
  submit("delay", "q1", 1, 4, 0, 0, NULL);
  assert_int_equal(n_batches, 0);
  while (n_batches == 0) uv_run(&loop, UV_RUN_ONCE);
  BATCH(0, "q0", "q1");
  assert_true(batches[0].at - t0 >= 100 * 1000000ull);
  complete(0);
  submit("delay", "q2", 1, 4, 0, 0, NULL);
  submit("delay", "q3", 3, 4, 0, 0, NULL); /* 4 rows: max_batch_size */
  assert_int_equal(n_batches, 2);          /* sent within the submit */
  BATCH(1, "q2", "q3");
  complete(1);
  assert_int_equal(n_answers, 4);
}

/* Priority levels: the highest level's requests go first; priority 0 and
 * out-of-range priorities get the default level. */
static void test_priorities(void **state) {
  (void)state;
  submit("prio", "x0", 1, 4, 0, 0, NULL);
  submit("prio", "lo1", 1, 4, 2, 0, NULL);
  submit("prio", "lo2", 1, 4, 0, 0, NULL);
  submit("prio", "hi", 1, 4, 1, 0, NULL);
  submit("prio", "bad", 1, 4, 7, 0, NULL);
  BATCH(0, "x0");
  complete(0);
  BATCH(1, "hi");
  complete(1);
  BATCH(2, "lo1");
  complete(2);
  BATCH(3, "lo2");
  complete(3);
  BATCH(4, "bad");
  complete(4);
  assert_int_equal(n_answers, 5);
}

/* REJECT: a request whose queue timeout expires is answered with an error;
 * a request may shorten the level's timeout but not lengthen it; a full
 * queue refuses at submit. */
static void test_queue_reject(void **state) {
  uint64_t t1, t2, t3;
  int rc;
  (void)state;
  submit("reject", "r0", 1, 4, 0, 0, NULL); /* runs: the instance is busy */
  t1 = uv_hrtime();
  submit("reject", "r1", 1, 4, 0, 0, NULL); /* level default: 1 s */
  t2 = uv_hrtime();
  submit("reject", "r2", 1, 4, 0, 30000, NULL); /* shortened: 30 ms */
  t3 = uv_hrtime();
  submit("reject", "r3", 1, 4, 0, 10000000, NULL); /* 10 s: stays 1 s */
  assert_null(submit("reject", "r4", 1, 4, 0, 0, &rc));
  assert_int_equal(rc, IFD_EUNAVAIL); /* max_queue_size 3 */
  while (n_answers < 1) uv_run(&loop, UV_RUN_ONCE);
  assert_answer(0, "r2", IFD_EUNAVAIL, "Request timeout expired");
  assert_true(answers[0].at - t2 >= 30 * 1000000ull);
  while (n_answers < 3) uv_run(&loop, UV_RUN_ONCE);
  assert_answer(1, "r1", IFD_EUNAVAIL, "Request timeout expired");
  assert_answer(2, "r3", IFD_EUNAVAIL, "Request timeout expired");
  assert_true(answers[1].at - t1 >= 1000 * 1000000ull);
  assert_true(answers[2].at - t3 >= 1000 * 1000000ull);
  assert_true(answers[2].at - t3 < 9000 * 1000000ull);
  assert_int_equal(n_batches, 1);
  complete(0);
  assert_int_equal(n_answers, 4);
  assert_answer(3, "r0", 0, NULL);
  /* The queue has room again. */
  submit("reject", "r5", 1, 4, 0, 0, NULL);
  BATCH(1, "r5");
  complete(1);
  assert_answer(4, "r5", 0, NULL);
}

/* allow_timeout_override false: a request's own timeout is ignored. */
static void test_queue_no_override(void **state) {
  (void)state;
  submit("noovr", "n0", 1, 4, 0, 0, NULL);
  submit("noovr", "n1", 1, 4, 0, 1000, NULL); /* 1 ms, ignored */
  wait_ms(50);
  assert_int_equal(n_answers, 0);
  complete(0);
  BATCH(1, "n1");
  complete(1);
  assert_answer(1, "n1", 0, NULL);
}

/* DELAY: a request whose timeout expired waits behind every request of its
 * level that has not, and still runs. */
static void test_queue_delay(void **state) {
  (void)state;
  submit("delayq", "e0", 1, 4, 0, 0, NULL);
  submit("delayq", "late", 1, 4, 0, 20000, NULL); /* expires in 20 ms */
  wait_ms(60);
  submit("delayq", "b", 1, 4, 0, 0, NULL);
  submit("delayq", "c", 1, 4, 0, 0, NULL);
  assert_int_equal(n_answers, 0);
  complete(0);
  BATCH(1, "b");
  complete(1);
  BATCH(2, "c");
  complete(2);
  BATCH(3, "late");
  complete(3);
  assert_int_equal(n_answers, 4);
  assert_answer(3, "late", 0, NULL);
}

/* preserve_ordering: responses reach the protocol in submission order
 * whatever order the instances finish in. */
static void test_preserve_ordering(void **state) {
  ifd_request_t *o3;
  ifd_response_t *final, *extra;
  (void)state;
  submit("ord", "o0", 1, 4, 0, 0, NULL);
  submit("ord", "o1", 1, 4, 0, 0, NULL);
  submit("ord", "o2", 1, 4, 0, 0, NULL);
  assert_int_equal(n_batches, 3); /* three instances */
  complete(2);
  complete(1);
  assert_int_equal(n_answers, 0); /* held for o0 */
  complete(0);
  assert_int_equal(n_answers, 3);
  assert_answer(0, "o0", 0, NULL);
  assert_answer(1, "o1", 0, NULL);
  assert_answer(2, "o2", 0, NULL);

  /* A response sent after its request's FINAL one is dropped, and holds
   * nothing up behind it. */
  o3 = submit("ord", "o3", 1, 4, 0, 0, NULL);
  BATCH(3, "o3");
  batches[3].done = 1;
  final = ifd_response_new(o3);
  extra = ifd_response_new(o3);
  ifd_response_send(final, IFD_RESPONSE_FINAL, 0, NULL);
  ifd_request_release(o3, 1);
  model_of(batches[3].m)
      ->idle(batches[3].m, 0, 1, 1, model_of(batches[3].m)->arg);
  pump();
  assert_int_equal(n_answers, 4);
  ifd_response_send(extra, 0, 0, NULL);
  pump();
  submit("ord", "o4", 1, 4, 0, 0, NULL);
  submit("ord", "o5", 1, 4, 0, 0, NULL);
  BATCH(4, "o4");
  BATCH(5, "o5");
  complete(5);
  complete(4);
  assert_int_equal(n_answers, 6);
  assert_answer(4, "o4", 0, NULL);
  assert_answer(5, "o5", 0, NULL);
}

/* Queue timeouts under churn: requests with assorted deadlines, batches
 * completing meanwhile. Each request is answered once, and none is
 * rejected before its deadline. */
#define N_STRESS 200
static void test_timeout_churn(void **state) {
  uint64_t t_sub[N_STRESS], timeout[N_STRESS];
  char id[16];
  int i, next = 0, rejected = 0;
  (void)state;
  for (i = 0; i < N_STRESS; i++) {
    snprintf(id, sizeof(id), "s%d", i);
    timeout[i] = i % 7 == 0 ? 0 : 5000 + (uint64_t)(i * 7919 % 60) * 1000;
    t_sub[i] = uv_hrtime();
    assert_non_null(submit("stress", id, 1, 4, 0, timeout[i], NULL));
  }
  while (n_answers < N_STRESS) {
    wait_ms(2);
    while (next < n_batches && batches[next].done) next++;
    if (next < n_batches) complete(next);
  }
  for (i = 0; i < n_answers; i++) {
    int k = atoi(answers[i].id + 1);
    if (answers[i].error == 0) continue;
    rejected++;
    assert_non_null(strstr(answers[i].msg, "Request timeout expired"));
    assert_true(timeout[k] > 0);
    assert_true(answers[i].at - t_sub[k] >= timeout[k] * 1000);
  }
  assert_true(rejected > 0);
}

/* ---- teardown ------------------------------------------------------------ */

/* The unloads' freed events and the shutdown's done event were drained in
 * one go (the order the loop happened to see them in): the schedulers are
 * destroyed (a batcher's timer starts closing), then the server is freed
 * before that close completes. */
static void on_stopped_free(ifd_server_t *s, void *arg) {
  int i;
  (void)arg;
  stopped = 1;
  pthread_mutex_lock(&mu);
  for (i = 0; i < n_held_freed; i++)
    ifd_evq_push(ifd_server_evq(s), &held_freed[i]->ev);
  n_held_freed = hold_freed = 0;
  pthread_mutex_unlock(&mu);
  ifd_evq_drain(ifd_server_evq(s));
  ifd_server_free(s);
}

/* The server may be freed in its shutdown callback, right after the last
 * unload (an embedding application does that): a dynamic batcher whose
 * timer is still closing then must not touch its model (ASan reported a
 * use-after-free in free_dyn when it did, about one run in four of the e2e
 * queue-policy test, depending on the order of two wake-ups). */
static void test_free_in_stop_callback(void **state) {
  int k;
  (void)state;
  submit("delay", "q0", 1, 4, 0, 0, NULL);
  while (n_batches == 0) uv_run(&loop, UV_RUN_ONCE); /* the timer ran */
  complete(0);
  for (k = 0; k < n_batches; k++)
    if (!batches[k].done) complete(k);
  pthread_mutex_lock(&mu);
  hold_freed = 1;
  pthread_mutex_unlock(&mu);
  ifd_server_shutdown(server, on_stopped_free, NULL);
  server = NULL;
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_true(stopped);
  assert_int_equal(n_answers, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_default, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dynamic_batches, setup, teardown),
      cmocka_unit_test_setup_teardown(test_preferred, setup, teardown),
      cmocka_unit_test_setup_teardown(test_delay_timer, setup, teardown),
      cmocka_unit_test_setup_teardown(test_priorities, setup, teardown),
      cmocka_unit_test_setup_teardown(test_queue_reject, setup, teardown),
      cmocka_unit_test_setup_teardown(test_queue_no_override, setup, teardown),
      cmocka_unit_test_setup_teardown(test_queue_delay, setup, teardown),
      cmocka_unit_test_setup_teardown(test_preserve_ordering, setup, teardown),
      cmocka_unit_test_setup_teardown(test_timeout_churn, setup, teardown),
      cmocka_unit_test_setup_teardown(test_free_in_stop_callback, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
