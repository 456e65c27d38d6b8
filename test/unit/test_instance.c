/*
 * test/unit/test_instance.c - a model's run queue and its instances
 * (backend_api/model/instance.c), run inline: no instance thread, the test
 * takes and runs each batch itself (ifd__instances_inline, ifd__instance_step),
 * so every step is deterministic. The backend is a fake one built in the test
 * (function pointers in a TRITONBACKEND_Backend, no shared library), and the
 * requests are bare request objects: the run queue only links them.
 *
 * Checked: initialize and finalize of every instance on the caller's thread,
 * FIFO order of batches across instances, batch sizes, what is queued and
 * what is taken back, idle reports reaching the loop through the completion
 * queue (several jobs in one report), batch statistics, no idle report once
 * * the model is unloading.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend_api/internal.h"
#include "core/request_internal.h"
#include "core/server.h"
#include "cuda/gpu.h"
#include "inferd/inferd_backend.h"

#define MAX_SEEN 64

/* What the fake backend saw. */
static struct {
  int inits, finis;
  pthread_t init_thread;
  ifd_request_t *seen[MAX_SEEN]; /* requests in execution order */
  uint32_t batch[MAX_SEEN];      /* batch sizes in execution order */
  uint32_t instance[MAX_SEEN];   /* which instance ran each batch */
  int n_seen, n_batches;
  int other_thread; /* an execute ran off the caller's thread */
  int inputs_found; /* inputs ifd__instance_request_of traced to their
                       request during an execute */
} fake;

/* What the loop heard. */
static struct {
  int calls;
  uint64_t jobs, reqs;
} idle;

static TRITONSERVER_Error *fake_inst_init(TRITONBACKEND_ModelInstance *in) {
  (void)in;
  fake.inits++;
  fake.init_thread = pthread_self();
  return NULL;
}

static TRITONSERVER_Error *fake_inst_fini(TRITONBACKEND_ModelInstance *in) {
  (void)in;
  fake.finis++;
  return NULL;
}

static TRITONSERVER_Error *fake_execute(TRITONBACKEND_ModelInstance *in,
                                        TRITONBACKEND_Request **reqs,
                                        const uint32_t n) {
  uint32_t i;
  if (!pthread_equal(pthread_self(), fake.init_thread)) fake.other_thread = 1;
  for (i = 0; i < n; i++) {
    ifd_request_t *r = (ifd_request_t *)reqs[i];
    uint32_t k;
    fake.seen[fake.n_seen++] = r;
    for (k = 0; k < r->n_inputs; k++)
      if (ifd__instance_request_of(&r->inputs[k]) == r) fake.inputs_found++;
  }
  fake.instance[fake.n_batches] = in->index;
  fake.batch[fake.n_batches++] = n;
  TRITONSERVER_ErrorDelete(TRITONBACKEND_ModelInstanceReportBatchStatistics(
      in, n, 1000, 2000, 3000, 4000));
  return NULL;
}

static void on_idle(ifd_model_t *m, uint32_t instance, uint64_t jobs,
                    uint64_t reqs, void *arg) {
  (void)m;
  (void)instance;
  (void)arg;
  idle.calls++;
  idle.jobs += jobs;
  idle.reqs += reqs;
}

/* One fake model with `n` inline instances on a real server's loop. */
typedef struct fixture {
  uv_loop_t loop;
  ifd_server_t *server;
  ifd_model_t model;
  TRITONBACKEND_Backend backend;
  TRITONBACKEND_Model *bm;
  ifd_request_t reqs[MAX_SEEN];
} fixture_t;

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof(*f));
  ifd_server_opts_t opts;
  ifd_errmsg_t err;
  uint32_t i;

  memset(&fake, 0, sizeof(fake));
  memset(&idle, 0, sizeof(idle));
  memset(&opts, 0, sizeof(opts));
  assert_non_null(f);
  assert_int_equal(uv_loop_init(&f->loop), 0);
  assert_int_equal(ifd_server_new(&f->loop, &opts, &f->server, &err), 0);

  f->backend.name = "fake";
  f->backend.inst_init = fake_inst_init;
  f->backend.inst_fini = fake_inst_fini;
  f->backend.execute = fake_execute;

  f->model.server = f->server;
  f->model.name = "fake_model";
  f->bm = calloc(1, sizeof(*f->bm));
  assert_non_null(f->bm);
  f->bm->model = &f->model;
  f->bm->backend = &f->backend;
  f->bm->idle = on_idle;
  f->bm->coalesce = 1;
  pthread_mutex_init(&f->bm->feed.mu, NULL);
  pthread_cond_init(&f->bm->feed.q.cv, NULL);
  f->bm->n_instances = 2;
  f->bm->instances = calloc(2, sizeof(*f->bm->instances));
  assert_non_null(f->bm->instances);
  for (i = 0; i < 2; i++) {
    TRITONBACKEND_ModelInstance *in = &f->bm->instances[i];
    in->model = f->bm;
    in->index = i;
    pthread_mutex_init(&in->mu, NULL);
    pthread_cond_init(&in->cv, NULL);
    pthread_cond_init(&in->q.cv, NULL);
  }
  f->model.backend_model = f->bm;

  ifd__instances_inline = 1;
  assert_int_equal(ifd__instances_start(f->bm, &err), 0);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  uint32_t i;
  /* The wake-up the enqueues scheduled runs while the model exists. */
  uv_run(&f->loop, UV_RUN_NOWAIT);
  ifd__instances_stop(f->bm);
  ifd__instances_inline = 0;
  /* Idle events still queued run before the model goes. */
  ifd_evq_drain(ifd_server_evq(f->server));
  for (i = 0; i < f->bm->n_instances; i++) {
    TRITONBACKEND_ModelInstance *in = &f->bm->instances[i];
    free(in->job);
    free(in->reports);
    ifd__warmup_instance_free(in);
    if (in->init_err != NULL) TRITONSERVER_ErrorDelete(in->init_err);
    pthread_mutex_destroy(&in->mu);
    pthread_cond_destroy(&in->cv);
    pthread_cond_destroy(&in->q.cv);
  }
  free(f->bm->instances);
  pthread_mutex_destroy(&f->bm->feed.mu);
  pthread_cond_destroy(&f->bm->feed.q.cv);
  free(f->bm);
  ifd_stats_free(&f->model.stats);
  ifd_server_free(f->server);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&f->loop), 0);
  free(f);
  return 0;
}

/* Queues reqs[first .. first+n) as one batch. */
static void enqueue(fixture_t *f, uint32_t first, uint32_t n) {
  ifd_request_t *batch[MAX_SEEN];
  uint32_t i;
  for (i = 0; i < n; i++) batch[i] = &f->reqs[first + i];
  ifd_backend_enqueue(&f->model, batch, n);
}

static void test_init_inline(void **state) {
  fixture_t *f = *state;
  /* Both instances initialized on this thread, no thread started. */
  assert_int_equal(fake.inits, 2);
  assert_true(pthread_equal(fake.init_thread, pthread_self()));
  assert_int_equal(f->bm->instances[0].started, 0);
  assert_int_equal(f->bm->instances[0].inline_run, 1);
  assert_int_equal(f->bm->instances[1].init_state, 1);
  /* Nothing queued: a step runs nothing. */
  assert_int_equal(ifd__instance_step(&f->bm->instances[0]), 0);
  assert_int_equal(ifd_backend_queued(&f->model), 0);
}

static void test_fifo_across_instances(void **state) {
  fixture_t *f = *state;
  int i;
  /* Batches of 1, 3 and 2 requests. */
  enqueue(f, 0, 1);
  enqueue(f, 1, 3);
  enqueue(f, 4, 2);
  assert_int_equal(ifd_backend_queued(&f->model), 6);

  /* Whichever instance is free takes the oldest batch. */
  assert_int_equal(ifd__instance_step(&f->bm->instances[1]), 1);
  assert_int_equal(ifd_backend_queued(&f->model), 5);
  assert_int_equal(ifd__instance_step(&f->bm->instances[0]), 1);
  assert_int_equal(ifd__instance_step(&f->bm->instances[1]), 1);
  assert_int_equal(ifd__instance_step(&f->bm->instances[0]), 0);
  assert_int_equal(ifd_backend_queued(&f->model), 0);

  assert_int_equal(fake.n_batches, 3);
  assert_int_equal(fake.batch[0], 1);
  assert_int_equal(fake.batch[1], 3);
  assert_int_equal(fake.batch[2], 2);
  assert_int_equal(fake.instance[0], 1);
  assert_int_equal(fake.instance[1], 0);
  assert_int_equal(fake.instance[2], 1);
  for (i = 0; i < 6; i++) assert_ptr_equal(fake.seen[i], &f->reqs[i]);
  /* A request's state is the loop's to set (the scheduler marks it
   * EXECUTING when it dispatches): the instance leaves it as it found it. */
  for (i = 0; i < 6; i++)
    assert_int_equal(ifd__req(&f->reqs[i])->state, IFD_REQ_INIT);
  assert_false(fake.other_thread);

  /* The loop hears of all of it: one idle report per instance at most,
   * carrying every job it finished. */
  assert_int_equal(idle.calls, 0);
  ifd_evq_drain(ifd_server_evq(f->server));
  assert_int_equal(idle.jobs, 3);
  assert_int_equal(idle.reqs, 6);
  assert_true(idle.calls >= 1 && idle.calls <= 2);
  /* The backend's batch statistics were carried with them. */
  assert_int_equal(f->model.stats.execution_count, 3);
  /* Inline steps leave nothing owed. */
  assert_false(ifd_evq_owed(ifd_server_evq(f->server)));
}

static void test_take_back_queued(void **state) {
  fixture_t *f = *state;
  uint64_t jobs = 0;
  ifd_request_t *r;
  int n = 0;
  enqueue(f, 0, 2);
  enqueue(f, 2, 1);
  enqueue(f, 3, 3);
  assert_int_equal(ifd__instance_step(&f->bm->instances[0]), 1);
  /* What no instance took comes back, linked in order. */
  r = ifd_backend_take_queued(&f->model, &jobs);
  assert_int_equal(jobs, 2);
  for (; r != NULL; r = r->next) assert_ptr_equal(r, &f->reqs[2 + n++]);
  assert_int_equal(n, 4);
  assert_int_equal(ifd_backend_queued(&f->model), 0);
  assert_int_equal(ifd__instance_step(&f->bm->instances[1]), 0);
  assert_int_equal(fake.n_seen, 2);
}

/* A cancelled request is taken out of its batch while no instance took it:
 * the first of a batch, one in the middle, and a batch's only request
 * (the batch goes); a batch being run is not touched. */
static void test_take_one_request(void **state) {
  fixture_t *f = *state;
  int gone = -1;
  enqueue(f, 0, 2); /* taken by an instance below */
  enqueue(f, 2, 3);
  enqueue(f, 5, 1);
  assert_int_equal(ifd__instance_step(&f->bm->instances[0]), 1);
  assert_int_equal(ifd_backend_take_request(&f->model, &f->reqs[0], &gone), 0);
  assert_int_equal(ifd_backend_take_request(&f->model, &f->reqs[2], &gone), 1);
  assert_int_equal(gone, 0);
  assert_int_equal(ifd_backend_take_request(&f->model, &f->reqs[5], &gone), 1);
  assert_int_equal(gone, 1);
  assert_int_equal(ifd_backend_queued(&f->model), 2);
  assert_int_equal(ifd_backend_take_request(&f->model, &f->reqs[4], &gone), 1);
  assert_int_equal(gone, 0);
  assert_int_equal(ifd_backend_take_request(&f->model, &f->reqs[4], &gone), 0);
  /* What is left of the batch runs: request 3 alone. */
  assert_int_equal(ifd__instance_step(&f->bm->instances[1]), 1);
  assert_int_equal(ifd__instance_step(&f->bm->instances[0]), 0);
  assert_int_equal(fake.n_batches, 2);
  assert_int_equal(fake.batch[1], 1);
  assert_int_equal(fake.n_seen, 3);
  assert_ptr_equal(fake.seen[2], &f->reqs[3]);
  assert_int_equal(ifd_backend_queued(&f->model), 0);
}

static void test_no_idle_report_while_unloading(void **state) {
  fixture_t *f = *state;
  enqueue(f, 0, 1);
  assert_int_equal(ifd__instance_step(&f->bm->instances[0]), 1);
  atomic_store(&f->bm->unloading, 1);
  ifd_evq_drain(ifd_server_evq(f->server));
  /* The scheduler may be going away: it is not called. */
  assert_int_equal(idle.calls, 0);
}

/* An instance adds a job's count and its requests' count to two counters;
 * the loop may take the job count between the two additions, so the next
 * report carries requests alone. It must still reach the scheduler: dropped,
 * those requests stayed "executing" and a shutdown waited on them. */
static void test_report_with_requests_only(void **state) {
  fixture_t *f = *state;
  TRITONBACKEND_ModelInstance *in = &f->bm->instances[0];
  /* A real report first (it arms the instance's idle event). */
  enqueue(f, 0, 1);
  assert_int_equal(ifd__instance_step(in), 1);
  ifd_evq_drain(ifd_server_evq(f->server));
  assert_int_equal(idle.calls, 1);
  assert_int_equal(idle.jobs, 1);
  assert_int_equal(idle.reqs, 1);
  /* Then the interleaving: the job count went with that report, the
   * requests' count came after it and queued a report of its own. */
  atomic_store(&in->done_reqs, 3);
  atomic_store(&in->idle_queued, 1);
  ifd_evq_push(ifd_server_evq(f->server), &in->idle_ev);
  ifd_evq_drain(ifd_server_evq(f->server));
  assert_int_equal(idle.calls, 2);
  assert_int_equal(idle.jobs, 1);
  assert_int_equal(idle.reqs, 4);
}

static void test_stop_finalizes_inline(void **state) {
  fixture_t *f = *state;
  ifd__instances_stop(f->bm);
  assert_int_equal(fake.finis, 2);
  /* A second stop (teardown's) finalizes nothing twice. */
  ifd__instances_stop(f->bm);
  assert_int_equal(fake.finis, 2);
}

/* The backend ABI finds the request an input belongs to (for its device
 * copies) among the batch the calling thread executes, and only there. */
static void test_request_of_input(void **state) {
  fixture_t *f = *state;
  ifd_input_t in[3];
  memset(in, 0, sizeof(in));
  f->reqs[1].inputs = in;
  f->reqs[1].n_inputs = 2;
  f->reqs[2].inputs = in + 2;
  f->reqs[2].n_inputs = 1;
  enqueue(f, 0, 3);
  assert_int_equal(ifd__instance_step(&f->bm->instances[0]), 1);
  assert_int_equal(fake.inputs_found, 3);
  assert_null(ifd__instance_request_of(&in[0]));
}

/* A GPU instance's thread is bound to its device before the backend
 * initializes it; without a GPU that fails cleanly, before the backend
 * sees the instance. */
/* INFERD_ModelInstanceSetReady counts each instance once on its model. */
static void test_instance_set_ready(void **state) {
  fixture_t *f = *state;
  TRITONBACKEND_ModelInstance *a = &f->bm->instances[0];
  TRITONBACKEND_ModelInstance *b = &f->bm->instances[1];
  assert_int_equal(atomic_load(&f->model.unready_instances), 0);
  assert_null(INFERD_ModelInstanceSetReady(a, false));
  assert_null(INFERD_ModelInstanceSetReady(a, false));
  assert_int_equal(atomic_load(&f->model.unready_instances), 1);
  assert_null(INFERD_ModelInstanceSetReady(b, false));
  assert_int_equal(atomic_load(&f->model.unready_instances), 2);
  assert_null(INFERD_ModelInstanceSetReady(a, true));
  assert_null(INFERD_ModelInstanceSetReady(a, true));
  assert_int_equal(atomic_load(&f->model.unready_instances), 1);
  assert_null(INFERD_ModelInstanceSetReady(b, true));
  assert_int_equal(atomic_load(&f->model.unready_instances), 0);
  TRITONSERVER_Error *err = INFERD_ModelInstanceSetReady(NULL, true);
  assert_non_null(err);
  assert_int_equal(TRITONSERVER_ErrorCode(err), TRITONSERVER_ERROR_INVALID_ARG);
  TRITONSERVER_ErrorDelete(err);
}

static void test_gpu_instance_binding(void **state) {
  fixture_t *f = *state;
  ifd_errmsg_t err;
  uint32_t i;
  int rc;
  ifd__instances_stop(f->bm);
  fake.inits = fake.finis = 0;
  for (i = 0; i < f->bm->n_instances; i++) f->bm->instances[i].init_state = 0;
  f->bm->instances[0].kind = TRITONSERVER_INSTANCEGROUPKIND_GPU;
  f->bm->instances[0].device_id = 0;
  ifd_errclear(&err);
  rc = ifd__instances_start(f->bm, &err);
  if (ifd_gpu_count() == 0) {
    assert_true(rc < 0);
    assert_non_null(strstr(err.text, "GPUs not supported"));
    assert_int_equal(fake.inits, 1); /* the CPU instance only */
    assert_int_equal(f->bm->instances[0].init_state, -1);
  } else {
    assert_int_equal(rc, 0);
    assert_int_equal(fake.inits, 2);
    assert_int_equal(ifd_gpu_thread_device(), 0);
    assert_non_null(ifd_gpu_thread_stream());
  }
  ifd__instances_stop(f->bm);
  assert_int_equal(ifd_gpu_thread_device(), -1);
}

/* An execute that answers each request (with an error when warm_fail is
 * set) and releases it, as a real backend does; warmup waits for both. */
static int warm_fail;
static TRITONSERVER_Error *warm_execute(TRITONBACKEND_ModelInstance *in,
                                        TRITONBACKEND_Request **reqs,
                                        const uint32_t n) {
  uint32_t i;
  if (!pthread_equal(pthread_self(), fake.init_thread)) fake.other_thread = 1;
  for (i = 0; i < n; i++) {
    ifd_request_t *r = (ifd_request_t *)reqs[i];
    ifd_response_t *resp = ifd_response_new(r);
    assert_non_null(resp);
    assert_int_equal(r->n_inputs, 1);
    assert_string_equal(r->inputs[0].name, "IN");
    assert_int_equal(r->inputs[0].ndims, 2);
    assert_int_equal(r->inputs[0].shape[0], 1);
    assert_int_equal(r->inputs[0].shape[1], 4);
    assert_int_equal(r->inputs[0].byte_size, 16);
    assert_memory_equal(r->inputs[0].data, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
                        16);
    ifd_response_send(resp, IFD_RESPONSE_FINAL, warm_fail ? IFD_EINTERNAL : 0,
                      warm_fail ? "boom" : NULL);
    ifd_request_release(r, TRITONSERVER_REQUEST_RELEASE_ALL);
  }
  fake.instance[fake.n_batches] = in->index;
  fake.batch[fake.n_batches++] = n;
  /* Counted in the model's statistics once the load succeeded. */
  TRITONSERVER_ErrorDelete(TRITONBACKEND_ModelInstanceReportBatchStatistics(
      in, n, 1000, 2000, 3000, 4000));
  return NULL;
}

/* model_warmup runs on every instance before ifd__instances_start returns:
 * count 2 on each of the two instances, 3 requests of batch 1 each; a
 * failing response fails the start with Triton's text. */
static void test_warmup_inline(void **state) {
  fixture_t *f = *state;
  Inference__ModelConfig cfg = INFERENCE__MODEL_CONFIG__INIT;
  Inference__ModelWarmup w = INFERENCE__MODEL_WARMUP__INIT;
  Inference__ModelWarmup *ws[1] = {&w};
  Inference__ModelWarmup__InputsEntry e =
      INFERENCE__MODEL_WARMUP__INPUTS_ENTRY__INIT;
  Inference__ModelWarmup__InputsEntry *es[1] = {&e};
  Inference__ModelWarmup__Input in = INFERENCE__MODEL_WARMUP__INPUT__INIT;
  int64_t dims[1] = {4};
  ifd_errmsg_t err;
  uint32_t i;

  in.data_type = INFERENCE__DATA_TYPE__TYPE_INT32;
  in.n_dims = 1;
  in.dims = dims;
  in.input_data_type_case =
      INFERENCE__MODEL_WARMUP__INPUT__INPUT_DATA_TYPE_ZERO_DATA;
  in.zero_data = 1;
  e.key = "IN";
  e.value = &in;
  w.name = "s";
  w.batch_size = 3;
  w.count = 2;
  w.n_inputs = 1;
  w.inputs = es;
  cfg.max_batch_size = 8;
  cfg.n_model_warmup = 1;
  cfg.model_warmup = ws;

  ifd__instances_stop(f->bm);
  f->model.config = &cfg;
  f->backend.execute = warm_execute;
  memset(&fake, 0, sizeof(fake));
  for (i = 0; i < f->bm->n_instances; i++) f->bm->instances[i].init_state = 0;
  ifd_errclear(&err);
  assert_int_equal(ifd__instances_start(f->bm, &err), 0);
  assert_int_equal(fake.n_batches, 4);
  for (i = 0; i < 4; i++) assert_int_equal(fake.batch[i], 3);
  assert_int_equal(fake.instance[0] + fake.instance[1], 0);
  assert_int_equal(fake.instance[2] + fake.instance[3], 2);
  assert_int_equal(fake.other_thread, 0);
  assert_null(f->bm->warmup);
  /* Counted as Triton counts them: 12 requests (no statistics reported:
   * successes by their final responses), 4 executions. */
  assert_int_equal(f->model.stats.inference_count, 12);
  assert_int_equal(f->model.stats.execution_count, 4);
  assert_int_equal(f->model.stats.success.count, 12);
  for (i = 0; i < f->bm->n_instances; i++)
    assert_int_equal(f->bm->instances[i].n_reports, 0);

  /* A failing warmup: the instance is finalized, the start fails, and
   * nothing more is counted. */
  ifd__instances_stop(f->bm);
  memset(&fake, 0, sizeof(fake));
  warm_fail = 1;
  for (i = 0; i < f->bm->n_instances; i++) f->bm->instances[i].init_state = 0;
  ifd_errclear(&err);
  assert_int_equal(ifd__instances_start(f->bm, &err), IFD_EINVAL);
  /* Every request's error, as Triton lists them. */
  assert_string_equal(err.text,
                      "failed to run warmup sample 's': boom; boom; boom; ");
  assert_int_equal(fake.finis, 2);
  assert_int_equal(fake.n_batches, 2); /* the first run of each instance */
  assert_int_equal(f->model.stats.inference_count, 12);
  assert_int_equal(f->model.stats.execution_count, 4);
  warm_fail = 0;
  ifd__instances_stop(f->bm);
  assert_int_equal(fake.finis, 2); /* not finalized twice */
  f->model.config = NULL;
  f->backend.execute = fake_execute;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_warmup_inline, setup, teardown),
      cmocka_unit_test_setup_teardown(test_init_inline, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fifo_across_instances, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_take_back_queued, setup, teardown),
      cmocka_unit_test_setup_teardown(test_take_one_request, setup, teardown),
      cmocka_unit_test_setup_teardown(test_report_with_requests_only, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_no_idle_report_while_unloading,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_stop_finalizes_inline, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_request_of_input, setup, teardown),
      cmocka_unit_test_setup_teardown(test_instance_set_ready, setup, teardown),
      cmocka_unit_test_setup_teardown(test_gpu_instance_binding, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
