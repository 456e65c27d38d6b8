/*
 * test/unit/test_state.c - the implicit state of sequence models: the
 * backend's side of the ABI (backend_api/state/tb_state.c:
 * TRITONBACKEND_StateNew, _StateBuffer, _StateUpdate, _StateBufferAttributes)
 * and the initial values built at load (sched/seq_init.c:
 * ifd__seq_initial_states).
 *
 * The requests are bare request objects (no server, no scheduler) bound to a
 * fake model whose config is parsed from text; the sequence's state is an
 * ifd_seq_state_t made here, as the sequence batcher would make it. A value
 * a backend publishes is checked through ifd_seq_state_take, as the batcher
 * reads it. Every test frees what it made, so an ASan build reports any leak
 * or double free (state objects go with their request, buffers never
 * published go with their state object).
 *
 * The initial values are read from a throw-away model folder under mkdtemp:
 * zeros, a data_file, a file too short or too long, bad configs with
 * Triton's messages, and variable-size (-1) dims.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend_api/internal.h"
#include "core/config.h"
#include "core/infer.h"
#include "core/model.h"
#include "core/seqstate.h"
#include "sched/internal.h"

/* ---- fixtures ------------------------------------------------------------ */

static const char *const STATE_CONFIG =
    "name: \"m\"\n"
    "backend: \"fake\"\n"
    "max_batch_size: 4\n"
    "sequence_batching {\n"
    "  state [\n"
    "    {\n"
    "      input_name: \"IN_STATE\"\n"
    "      output_name: \"OUT_STATE\"\n"
    "      data_type: TYPE_INT32\n"
    "      dims: [ 2 ]\n"
    "    },\n"
    "    {\n"
    "      input_name: \"IN_TEXT\"\n"
    "      output_name: \"OUT_TEXT\"\n"
    "      data_type: TYPE_STRING\n"
    "      dims: [ -1 ]\n"
    "    }\n"
    "  ]\n"
    "}\n";

static const char *const PLAIN_CONFIG =
    "name: \"plain\"\n"
    "backend: \"fake\"\n"
    "max_batch_size: 4\n"
    "sequence_batching { }\n";

static const char *const DYNAMIC_CONFIG =
    "name: \"dyn\"\n"
    "backend: \"fake\"\n"
    "max_batch_size: 4\n"
    "dynamic_batching { }\n";

/* A model that is never loaded: the references requests take on it are
 * dropped by request_free, so it starts with plenty. */
static void model_init(ifd_model_t *m, const char *text, const char *name,
                       const char *path) {
  ifd_errmsg_t err;
  memset(m, 0, sizeof(*m));
  m->name = (char *)name;
  m->path = (char *)path;
  m->refs = 1000;
  if (ifd_config_parse(text, strlen(text), "config.pbtxt", name, &m->config,
                       &err) != 0)
    fail_msg("config: %s", err.text);
}

static void model_fini(ifd_model_t *m) {
  ifd_config_free(m->config);
  m->config = NULL;
}

typedef struct fixture {
  ifd_model_t model;       /* with the two states */
  ifd_model_t plain;       /* sequence batching without states */
  ifd_model_t dynamic;     /* no sequence batching */
  ifd_seq_state_t *seq;    /* the sequence's state: 2 entries */
  ifd_request_t *req;      /* a request of the sequence */
  ifd_request_t *null_req; /* a null request: no seq_state */
} fixture_t;

static ifd_request_t *request_of(ifd_model_t *m, ifd_seq_state_t *seq) {
  ifd_request_t *req = ifd_request_new(NULL);
  assert_non_null(req);
  m->refs++;
  req->model = m;
  req->seq_state = ifd_seq_state_ref(seq);
  return req;
}

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof(*f));
  assert_non_null(f);
  model_init(&f->model, STATE_CONFIG, "m", "/nonexistent");
  model_init(&f->plain, PLAIN_CONFIG, "plain", "/nonexistent");
  model_init(&f->dynamic, DYNAMIC_CONFIG, "dyn", "/nonexistent");
  f->seq = ifd_seq_state_new(2);
  assert_non_null(f->seq);
  f->req = request_of(&f->model, f->seq);
  f->null_req = request_of(&f->model, NULL);
  f->null_req->null_req = 1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  ifd_request_unref(f->req);
  ifd_request_unref(f->null_req);
  ifd_seq_state_unref(f->seq);
  assert_int_equal(f->model.refs, 1000);
  model_fini(&f->model);
  model_fini(&f->plain);
  model_fini(&f->dynamic);
  free(f);
  return 0;
}

#define TREQ(r) ((TRITONBACKEND_Request *)(r))

/* Expects `e` to be an error of `code` whose message contains `text`, and
 * deletes it. */
static void expect_error(TRITONSERVER_Error *e, TRITONSERVER_Error_Code code,
                         const char *text) {
  if (e == NULL) fail_msg("expected an error containing \"%s\"", text);
  if (TRITONSERVER_ErrorCode(e) != code ||
      strstr(TRITONSERVER_ErrorMessage(e), text) == NULL) {
    char msg[512];
    snprintf(msg, sizeof(msg), "%s", TRITONSERVER_ErrorMessage(e));
    TRITONSERVER_ErrorDelete(e);
    fail_msg("got error %d \"%s\", expected %d with \"%s\"", (int)code, msg,
             (int)code, text);
  }
  TRITONSERVER_ErrorDelete(e);
}

static void expect_ok(TRITONSERVER_Error *e) {
  if (e != NULL) {
    char msg[512];
    snprintf(msg, sizeof(msg), "%s", TRITONSERVER_ErrorMessage(e));
    TRITONSERVER_ErrorDelete(e);
    fail_msg("unexpected error: %s", msg);
  }
}

/* Creates OUT_STATE [1, 2] INT32 with values a, b and updates it. */
static void write_int_state(ifd_request_t *req, int32_t a, int32_t b) {
  static const int64_t shape[] = {1, 2};
  TRITONBACKEND_State *st = NULL;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mid = 0;
  void *buf = NULL;
  int32_t v[2] = {a, b};

  expect_ok(TRITONBACKEND_StateNew(&st, TREQ(req), "OUT_STATE",
                                   TRITONSERVER_TYPE_INT32, shape, 2));
  assert_non_null(st);
  expect_ok(TRITONBACKEND_StateBuffer(st, &buf, sizeof(v), &mt, &mid));
  assert_non_null(buf);
  memcpy(buf, v, sizeof(v));
  expect_ok(TRITONBACKEND_StateUpdate(st));
}

/* ---- the ABI --------------------------------------------------------------
 */

/* StateNew, StateBuffer, StateUpdate: the loop sees the new value, with its
 * shape and type; the state object goes with the request. */
static void test_publish_then_take(void **state) {
  fixture_t *f = *state;
  ifd_blob_t *b;

  assert_null(ifd_seq_state_take(f->seq, 0));
  write_int_state(f->req, 7, -3);
  b = ifd_seq_state_take(f->seq, 0);
  assert_non_null(b);
  assert_int_equal(b->dtype, IFD_TYPE_INT32);
  assert_int_equal(b->ndims, 2);
  assert_int_equal(b->shape[0], 1);
  assert_int_equal(b->shape[1], 2);
  assert_int_equal(b->size, 8);
  assert_int_equal(((int32_t *)b->data)[0], 7);
  assert_int_equal(((int32_t *)b->data)[1], -3);
  /* Nothing else published: take again gives the same value. */
  assert_ptr_equal(ifd_seq_state_take(f->seq, 0), b);
  assert_null(ifd_seq_state_take(f->seq, 1));

  /* A second request of the sequence replaces it; the first value goes
   * when the state drops it (ASan: no leak, no double free). */
  {
    ifd_request_t *r2 = request_of(&f->model, f->seq);
    write_int_state(r2, 1, 2);
    write_int_state(r2, 3, 4); /* the last update of a request wins */
    ifd_request_unref(r2);
  }
  b = ifd_seq_state_take(f->seq, 0);
  assert_int_equal(((int32_t *)b->data)[0], 3);
  assert_int_equal(((int32_t *)b->data)[1], 4);
}

/* The value outlives the request that published it, and the blob's one
 * reference is the state's. */
static void test_value_outlives_request(void **state) {
  fixture_t *f = *state;
  ifd_request_t *r = request_of(&f->model, f->seq);
  ifd_blob_t *b;
  write_int_state(r, 11, 12);
  ifd_request_unref(r);
  b = ifd_seq_state_take(f->seq, 0);
  assert_non_null(b);
  assert_int_equal(atomic_load(&b->refs), 1);
  assert_int_equal(((int32_t *)b->data)[1], 12);
}

/* A null request (no seq_state) may create, fill and update states: the
 * value is dropped, the sequence's state is untouched. */
static void test_null_request(void **state) {
  fixture_t *f = *state;
  TRITONBACKEND_State *st = NULL;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mid = 0, shape[] = {1, 2};
  void *buf;

  write_int_state(f->null_req, 5, 6);
  assert_null(ifd_seq_state_take(f->seq, 0));
  /* A buffer handed out and never published goes with the request. */
  expect_ok(TRITONBACKEND_StateNew(&st, TREQ(f->null_req), "OUT_STATE",
                                   TRITONSERVER_TYPE_INT32, shape, 2));
  expect_ok(TRITONBACKEND_StateBuffer(st, &buf, 8, &mt, &mid));
  /* The name still has to be one of the model's. */
  expect_error(TRITONBACKEND_StateNew(&st, TREQ(f->null_req), "nope",
                                      TRITONSERVER_TYPE_INT32, shape, 2),
               TRITONSERVER_ERROR_INVALID_ARG,
               "state 'nope' is not a valid state name.");
}

/* Unknown names, a model without states, a model without sequence batching,
 * a data type other than the config's, a bad shape. */
static void test_state_new_errors(void **state) {
  fixture_t *f = *state;
  TRITONBACKEND_State *st = (TRITONBACKEND_State *)f; /* set to NULL */
  int64_t shape[] = {1, 2}, neg[] = {1, -1};
  ifd_request_t *rp = request_of(&f->plain, NULL);
  ifd_request_t *rd = request_of(&f->dynamic, NULL);

  expect_error(TRITONBACKEND_StateNew(&st, TREQ(f->req), "undefined_state",
                                      TRITONSERVER_TYPE_INT32, NULL, 0),
               TRITONSERVER_ERROR_INVALID_ARG,
               "state 'undefined_state' is not a valid state name.");
  assert_null(st);
  /* The name is the output_name, not the input_name. */
  expect_error(TRITONBACKEND_StateNew(&st, TREQ(f->req), "IN_STATE",
                                      TRITONSERVER_TYPE_INT32, shape, 2),
               TRITONSERVER_ERROR_INVALID_ARG, "not a valid state name");
  expect_error(TRITONBACKEND_StateNew(&st, TREQ(rp), "OUT_STATE",
                                      TRITONSERVER_TYPE_INT32, shape, 2),
               TRITONSERVER_ERROR_INVALID_ARG,
               "unable to add state 'OUT_STATE'. State configuration is "
               "missing for model 'plain'.");
  expect_error(TRITONBACKEND_StateNew(&st, TREQ(rd), "OUT_STATE",
                                      TRITONSERVER_TYPE_INT32, shape, 2),
               TRITONSERVER_ERROR_INVALID_ARG,
               "State configuration is missing for model 'dyn'");
  expect_error(TRITONBACKEND_StateNew(&st, TREQ(f->req), "OUT_STATE",
                                      TRITONSERVER_TYPE_FP32, shape, 2),
               TRITONSERVER_ERROR_INVALID_ARG,
               "unexpected datatype FP32 for state 'OUT_STATE' of model 'm'");
  expect_error(TRITONBACKEND_StateNew(&st, TREQ(f->req), "OUT_STATE",
                                      TRITONSERVER_TYPE_INT32, neg, 2),
               TRITONSERVER_ERROR_INVALID_ARG, "fully specified");
  expect_error(TRITONBACKEND_StateNew(NULL, TREQ(f->req), "OUT_STATE",
                                      TRITONSERVER_TYPE_INT32, shape, 2),
               TRITONSERVER_ERROR_INVALID_ARG, "invalid argument");
  expect_error(TRITONBACKEND_StateNew(&st, TREQ(f->req), NULL,
                                      TRITONSERVER_TYPE_INT32, shape, 2),
               TRITONSERVER_ERROR_INVALID_ARG, "invalid argument");
  assert_null(atomic_load(&f->req->attached));
  ifd_request_unref(rp);
  ifd_request_unref(rd);
}

/* Update without a buffer, twice, with a buffer that does not fit the shape;
 * StateBuffer after the update. Nothing is published by a failed update. */
static void test_update_errors(void **state) {
  fixture_t *f = *state;
  TRITONBACKEND_State *st;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mid = 0, shape[] = {1, 2}, empty[] = {1, 0};
  void *buf;

  expect_ok(TRITONBACKEND_StateNew(&st, TREQ(f->req), "OUT_STATE",
                                   TRITONSERVER_TYPE_INT32, shape, 2));
  expect_error(TRITONBACKEND_StateUpdate(st), TRITONSERVER_ERROR_INVALID_ARG,
               "has no buffer");
  expect_ok(TRITONBACKEND_StateBuffer(st, &buf, 12, &mt, &mid));
  expect_error(TRITONBACKEND_StateUpdate(st), TRITONSERVER_ERROR_INVALID_ARG,
               "its buffer holds 12 bytes, shape [1,2] of INT32 needs 8");
  assert_null(ifd_seq_state_take(f->seq, 0));
  /* A new size gives a new buffer, which fits. */
  expect_ok(TRITONBACKEND_StateBuffer(st, &buf, 8, &mt, &mid));
  memset(buf, 0, 8);
  expect_ok(TRITONBACKEND_StateUpdate(st));
  expect_error(TRITONBACKEND_StateUpdate(st), TRITONSERVER_ERROR_INVALID_ARG,
               "already updated");
  expect_error(TRITONBACKEND_StateBuffer(st, &buf, 8, &mt, &mid),
               TRITONSERVER_ERROR_INVALID_ARG, "already updated");
  assert_null(buf);
  assert_non_null(ifd_seq_state_take(f->seq, 0));

  /* An empty value needs no buffer. */
  expect_ok(TRITONBACKEND_StateNew(&st, TREQ(f->req), "OUT_STATE",
                                   TRITONSERVER_TYPE_INT32, empty, 2));
  expect_ok(TRITONBACKEND_StateUpdate(st));
  assert_int_equal(ifd_seq_state_take(f->seq, 0)->size, 0);
  assert_int_equal(ifd_seq_state_take(f->seq, 0)->shape[1], 0);
  expect_error(TRITONBACKEND_StateUpdate(NULL), TRITONSERVER_ERROR_INVALID_ARG,
               "invalid argument");
}

/* The same name twice in one request is the same object (as in Triton); the
 * second StateNew sets the shape, and a spent object starts afresh. */
static void test_same_object(void **state) {
  fixture_t *f = *state;
  TRITONBACKEND_State *a, *b;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mid = 0, s1[] = {1, 2}, s2[] = {1, 1};
  void *buf1, *buf2;

  expect_ok(TRITONBACKEND_StateNew(&a, TREQ(f->req), "OUT_STATE",
                                   TRITONSERVER_TYPE_INT32, s1, 2));
  expect_ok(TRITONBACKEND_StateBuffer(a, &buf1, 4, &mt, &mid));
  expect_ok(TRITONBACKEND_StateNew(&b, TREQ(f->req), "OUT_STATE",
                                   TRITONSERVER_TYPE_INT32, s2, 2));
  assert_ptr_equal(a, b);
  /* Same size: the same buffer. */
  expect_ok(TRITONBACKEND_StateBuffer(b, &buf2, 4, &mt, &mid));
  assert_ptr_equal(buf1, buf2);
  *(int32_t *)buf2 = 42;
  expect_ok(TRITONBACKEND_StateUpdate(b));
  assert_int_equal(ifd_seq_state_take(f->seq, 0)->shape[1], 1);
  assert_int_equal(*(int32_t *)ifd_seq_state_take(f->seq, 0)->data, 42);

  expect_ok(TRITONBACKEND_StateNew(&b, TREQ(f->req), "OUT_STATE",
                                   TRITONSERVER_TYPE_INT32, s1, 2));
  assert_ptr_equal(a, b);
  expect_error(TRITONBACKEND_StateUpdate(b), TRITONSERVER_ERROR_INVALID_ARG,
               "has no buffer");
  /* A different state is a different object. */
  expect_ok(TRITONBACKEND_StateNew(&b, TREQ(f->req), "OUT_TEXT",
                                   TRITONSERVER_TYPE_BYTES, s2, 2));
  assert_ptr_not_equal(a, b);
}

/* BYTES states: the buffer must hold the shape's element count in Triton's
 * format; -1 dims of the config do not matter, the shape comes from
 * StateNew. */
static void test_bytes_state(void **state) {
  fixture_t *f = *state;
  static const unsigned char two[] = {2, 0, 0, 0,   'h', 'i', 3,
                                      0, 0, 0, 'y', 'o', 'u'};
  TRITONBACKEND_State *st;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mid = 0, shape[] = {1, 2}, three[] = {1, 3};
  void *buf;
  ifd_blob_t *b;

  expect_ok(TRITONBACKEND_StateNew(&st, TREQ(f->req), "OUT_TEXT",
                                   TRITONSERVER_TYPE_BYTES, three, 2));
  expect_ok(TRITONBACKEND_StateBuffer(st, &buf, sizeof(two), &mt, &mid));
  memcpy(buf, two, sizeof(two));
  expect_error(TRITONBACKEND_StateUpdate(st), TRITONSERVER_ERROR_INVALID_ARG,
               "does not hold the 3 BYTES elements of shape [1,3]");
  expect_ok(TRITONBACKEND_StateNew(&st, TREQ(f->req), "OUT_TEXT",
                                   TRITONSERVER_TYPE_BYTES, shape, 2));
  expect_ok(TRITONBACKEND_StateUpdate(st));
  b = ifd_seq_state_take(f->seq, 1);
  assert_non_null(b);
  assert_int_equal(b->dtype, IFD_TYPE_BYTES);
  assert_int_equal(b->size, sizeof(two));
  assert_memory_equal(b->data, two, sizeof(two));
}

/* Memory: CPU whatever was asked; the attributes are a read-only view owned
 * by the state. */
static void test_buffer_memory_and_attributes(void **state) {
  fixture_t *f = *state;
  TRITONBACKEND_State *st;
  TRITONSERVER_BufferAttributes *ba = NULL;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_GPU;
  int64_t mid = 3, shape[] = {1, 2};
  size_t size = 99;
  void *buf;

  expect_ok(TRITONBACKEND_StateNew(&st, TREQ(f->req), "OUT_STATE",
                                   TRITONSERVER_TYPE_INT32, shape, 2));
  expect_ok(TRITONBACKEND_StateBufferAttributes(st, &ba));
  assert_non_null(ba);
  expect_ok(TRITONSERVER_BufferAttributesByteSize(ba, &size));
  assert_int_equal(size, 0);

  expect_ok(TRITONBACKEND_StateBuffer(st, &buf, 8, &mt, &mid));
  assert_int_equal(mt, TRITONSERVER_MEMORY_CPU);
  assert_int_equal(mid, 0);
  assert_int_equal((uintptr_t)buf % 64, 0);
  expect_ok(TRITONBACKEND_StateBufferAttributes(st, &ba));
  expect_ok(TRITONSERVER_BufferAttributesByteSize(ba, &size));
  assert_int_equal(size, 8);
  mt = TRITONSERVER_MEMORY_GPU;
  expect_ok(TRITONSERVER_BufferAttributesMemoryType(ba, &mt));
  assert_int_equal(mt, TRITONSERVER_MEMORY_CPU);
  mid = 5;
  expect_ok(TRITONSERVER_BufferAttributesMemoryTypeId(ba, &mid));
  assert_int_equal(mid, 0);
  expect_error(TRITONSERVER_BufferAttributesSetByteSize(ba, 4),
               TRITONSERVER_ERROR_INVALID_ARG, "read-only");
  expect_error(TRITONSERVER_BufferAttributesDelete(ba),
               TRITONSERVER_ERROR_INVALID_ARG, "cannot be deleted");
  expect_error(TRITONBACKEND_StateBufferAttributes(st, NULL),
               TRITONSERVER_ERROR_INVALID_ARG, "invalid argument");
  memset(buf, 0, 8);
  expect_ok(TRITONBACKEND_StateUpdate(st));
  /* Readable while the state lives: the size of the last buffer. */
  expect_ok(TRITONSERVER_BufferAttributesByteSize(ba, &size));
  assert_int_equal(size, 8);
  expect_error(TRITONBACKEND_StateBuffer(st, &buf, 8, NULL, &mid),
               TRITONSERVER_ERROR_INVALID_ARG, "invalid argument");
}

/* Backends run a batch's requests on several threads: states of one request
 * made from two threads at once, and updates of one sequence from requests
 * on several threads (the last one wins, none leaks). */
#define THREADS 4
#define ROUNDS 200

typedef struct worker {
  ifd_request_t *req;
  const char *name;
  int id;
} worker_t;

static void *worker_main(void *arg) {
  worker_t *w = arg;
  int i;
  for (i = 0; i < ROUNDS; i++) {
    if (strcmp(w->name, "OUT_STATE") == 0) {
      write_int_state(w->req, w->id, i);
    } else {
      static const unsigned char empty[] = {0, 0, 0, 0};
      int64_t shape[] = {1, 1};
      TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
      int64_t mid = 0;
      TRITONBACKEND_State *st;
      void *buf;
      expect_ok(TRITONBACKEND_StateNew(&st, TREQ(w->req), w->name,
                                       TRITONSERVER_TYPE_BYTES, shape, 2));
      expect_ok(TRITONBACKEND_StateBuffer(st, &buf, 4, &mt, &mid));
      memcpy(buf, empty, 4);
      expect_ok(TRITONBACKEND_StateUpdate(st));
    }
  }
  return NULL;
}

static void test_threads(void **state) {
  fixture_t *f = *state;
  pthread_t t[THREADS];
  worker_t w[THREADS];
  ifd_request_t *reqs[THREADS];
  ifd_blob_t *b;
  int i;

  /* Threads 0 and 1 share a request (different states); 2 and 3 have their
   * own requests of the same sequence. */
  reqs[0] = request_of(&f->model, f->seq);
  reqs[1] = reqs[0];
  reqs[2] = request_of(&f->model, f->seq);
  reqs[3] = request_of(&f->model, f->seq);
  for (i = 0; i < THREADS; i++) {
    w[i].req = reqs[i];
    w[i].name = i == 1 ? "OUT_TEXT" : "OUT_STATE";
    w[i].id = i;
    assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
  }
  for (i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  b = ifd_seq_state_take(f->seq, 0);
  assert_non_null(b);
  assert_int_equal(((int32_t *)b->data)[1], ROUNDS - 1);
  assert_true(((int32_t *)b->data)[0] != 1);
  b = ifd_seq_state_take(f->seq, 1);
  assert_non_null(b);
  assert_int_equal(b->size, 4);
  ifd_request_unref(reqs[0]);
  ifd_request_unref(reqs[2]);
  ifd_request_unref(reqs[3]);
}

/* ---- initial values --------------------------------------------------------
 */

typedef struct dir_fixture {
  char root[64]; /* the model folder */
  char sub[96];  /* its initial_state/ */
} dir_fixture_t;

static int dir_setup(void **state) {
  dir_fixture_t *d = calloc(1, sizeof(*d));
  assert_non_null(d);
  snprintf(d->root, sizeof(d->root), "/tmp/ifd_state_XXXXXX");
  assert_non_null(mkdtemp(d->root));
  snprintf(d->sub, sizeof(d->sub), "%s/initial_state", d->root);
  assert_int_equal(mkdir(d->sub, 0700), 0);
  *state = d;
  return 0;
}

static int dir_teardown(void **state) {
  dir_fixture_t *d = *state;
  char cmd[160];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->root);
  assert_int_equal(system(cmd), 0);
  free(d);
  return 0;
}

static void write_file(const dir_fixture_t *d, const char *name,
                       const void *data, size_t n) {
  char path[256];
  FILE *fp;
  snprintf(path, sizeof(path), "%s/%s", d->sub, name);
  fp = fopen(path, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(data, 1, n, fp), n);
  assert_int_equal(fclose(fp), 0);
}

/* Runs ifd__seq_initial_states on a config made of `mbs` and the text of
 * the state list; returns its code, *out and err as it left them. */
static int initial(const dir_fixture_t *d, int mbs, const char *states,
                   ifd_blob_t ***out, ifd_errmsg_t *err) {
  char text[4096];
  ifd_model_t m;
  int rc;
  snprintf(text, sizeof(text),
           "name: \"m\"\nbackend: \"fake\"\nmax_batch_size: %d\n"
           "sequence_batching { %s }\n",
           mbs, states);
  model_init(&m, text, "m", d->root);
  ifd_errclear(err);
  rc = ifd__seq_initial_states(&m, out, err);
  model_fini(&m);
  return rc;
}

static void free_blobs(ifd_blob_t **b, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) {
    assert_int_equal(atomic_load(&b[i]->refs), 1);
    ifd_blob_unref(b[i]);
  }
  free(b);
}

static void expect_init_error(const dir_fixture_t *d, int mbs,
                              const char *states, int code, const char *text) {
  ifd_blob_t **out = (ifd_blob_t **)&out;
  ifd_errmsg_t err;
  int rc = initial(d, mbs, states, &out, &err);
  if (rc != code || strstr(err.text, text) == NULL)
    fail_msg("got %d \"%s\", expected %d with \"%s\"", rc, err.text, code,
             text);
  assert_null(out);
}

/* No state: nothing. A model without sequence batching: nothing. */
static void test_init_none(void **state) {
  dir_fixture_t *d = *state;
  ifd_blob_t **out = (ifd_blob_t **)&out;
  ifd_errmsg_t err;
  ifd_model_t m;

  assert_int_equal(initial(d, 4, "", &out, &err), 0);
  assert_null(out);
  model_init(&m, DYNAMIC_CONFIG, "dyn", d->root);
  out = (ifd_blob_t **)&out;
  assert_int_equal(ifd__seq_initial_states(&m, &out, &err), 0);
  assert_null(out);
  model_fini(&m);
}

/* Without initial_state: zeros of the state's dims, [1, dims] when batching;
 * -1 becomes 1 (Triton's first value of a variable-size state); BYTES zeros
 * are empty strings. */
static void test_init_default_zeros(void **state) {
  dir_fixture_t *d = *state;
  ifd_blob_t **out;
  ifd_errmsg_t err;
  static const unsigned char zeros[16];

  assert_int_equal(initial(d, 4,
                           "state [ { input_name: \"I\" output_name: \"O\" "
                           "data_type: TYPE_FP32 dims: [ 2, 3 ] },"
                           "{ input_name: \"I2\" output_name: \"O2\" "
                           "data_type: TYPE_INT64 dims: [ -1, 2 ] },"
                           "{ input_name: \"I3\" output_name: \"O3\" "
                           "data_type: TYPE_STRING dims: [ -1 ] } ]",
                           &out, &err),
                   0);
  assert_non_null(out);
  assert_int_equal(out[0]->dtype, IFD_TYPE_FP32);
  assert_int_equal(out[0]->ndims, 3);
  assert_int_equal(out[0]->shape[0], 1);
  assert_int_equal(out[0]->shape[1], 2);
  assert_int_equal(out[0]->shape[2], 3);
  assert_int_equal(out[0]->size, 24);
  assert_memory_equal(out[0]->data, zeros, 16);
  assert_int_equal(out[1]->dtype, IFD_TYPE_INT64);
  assert_int_equal(out[1]->ndims, 3);
  assert_int_equal(out[1]->shape[1], 1);
  assert_int_equal(out[1]->shape[2], 2);
  assert_int_equal(out[1]->size, 16);
  assert_memory_equal(out[1]->data, zeros, 16);
  assert_int_equal(out[2]->dtype, IFD_TYPE_BYTES);
  assert_int_equal(out[2]->ndims, 2);
  assert_int_equal(out[2]->shape[1], 1);
  assert_int_equal(out[2]->size, 4);
  assert_memory_equal(out[2]->data, zeros, 4);
  free_blobs(out, 3);

  /* Not batching: the dims alone. */
  assert_int_equal(initial(d, 0,
                           "state { input_name: \"I\" output_name: \"O\" "
                           "data_type: TYPE_INT8 dims: [ -1, 5 ] }",
                           &out, &err),
                   0);
  assert_int_equal(out[0]->ndims, 2);
  assert_int_equal(out[0]->shape[0], 1);
  assert_int_equal(out[0]->shape[1], 5);
  assert_int_equal(out[0]->size, 5);
  free_blobs(out, 1);
}

/* initial_state zero_data: its own dims (which may fix a -1 of the state). */
static void test_init_zero_data(void **state) {
  dir_fixture_t *d = *state;
  ifd_blob_t **out;
  ifd_errmsg_t err;
  static const unsigned char zeros[24];

  assert_int_equal(
      initial(d, 2,
              "state { input_name: \"I\" output_name: \"O\" "
              "data_type: TYPE_INT32 dims: [ -1, 3 ] "
              "initial_state { name: \"init\" data_type: TYPE_INT32 "
              "dims: [ 2, 3 ] zero_data: true } }",
              &out, &err),
      0);
  assert_int_equal(out[0]->ndims, 3);
  assert_int_equal(out[0]->shape[0], 1);
  assert_int_equal(out[0]->shape[1], 2);
  assert_int_equal(out[0]->shape[2], 3);
  assert_int_equal(out[0]->size, 24);
  assert_memory_equal(out[0]->data, zeros, 24);
  free_blobs(out, 1);
}

/* initial_state data_file: the file's bytes; a longer file gives its first
 * bytes (Triton); BYTES takes the whole file, which must hold the count. */
static void test_init_data_file(void **state) {
  dir_fixture_t *d = *state;
  ifd_blob_t **out;
  ifd_errmsg_t err;
  int32_t v[3] = {1, -2, 300}, longer[4] = {4, 5, 6, 7};
  static const unsigned char text[] = {1, 0, 0, 0, 'a', 0, 0, 0, 0};

  write_file(d, "v.bin", v, sizeof(v));
  assert_int_equal(initial(d, 0,
                           "state { input_name: \"I\" output_name: \"O\" "
                           "data_type: TYPE_INT32 dims: [ 3 ] "
                           "initial_state { name: \"init\" data_type: "
                           "TYPE_INT32 dims: [ 3 ] data_file: \"v.bin\" } }",
                           &out, &err),
                   0);
  assert_int_equal(out[0]->ndims, 1);
  assert_int_equal(out[0]->shape[0], 3);
  assert_int_equal(out[0]->size, 12);
  assert_memory_equal(out[0]->data, v, 12);
  free_blobs(out, 1);

  {
    char sub[160];
    snprintf(sub, sizeof(sub), "%s/more", d->sub);
    assert_int_equal(mkdir(sub, 0700), 0);
  }
  write_file(d, "more/long.bin", longer, sizeof(longer));
  assert_int_equal(initial(d, 1,
                           "state { input_name: \"I\" output_name: \"O\" "
                           "data_type: TYPE_INT32 dims: [ -1 ] "
                           "initial_state { name: \"init\" data_type: "
                           "TYPE_INT32 dims: [ 2 ] data_file: "
                           "\"more/long.bin\" } }",
                           &out, &err),
                   0);
  assert_int_equal(out[0]->ndims, 2);
  assert_int_equal(out[0]->shape[0], 1);
  assert_int_equal(out[0]->shape[1], 2);
  assert_int_equal(out[0]->size, 8);
  assert_memory_equal(out[0]->data, longer, 8);
  free_blobs(out, 1);

  write_file(d, "t.bin", text, sizeof(text));
  assert_int_equal(initial(d, 1,
                           "state { input_name: \"I\" output_name: \"O\" "
                           "data_type: TYPE_STRING dims: [ 2 ] "
                           "initial_state { name: \"init\" data_type: "
                           "TYPE_STRING dims: [ 2 ] data_file: \"t.bin\" } }",
                           &out, &err),
                   0);
  assert_int_equal(out[0]->dtype, IFD_TYPE_BYTES);
  assert_int_equal(out[0]->shape[1], 2);
  assert_int_equal(out[0]->size, sizeof(text));
  assert_memory_equal(out[0]->data, text, sizeof(text));
  free_blobs(out, 1);

  /* The same file does not hold three strings. */
  expect_init_error(d, 1,
                    "state { input_name: \"I\" output_name: \"O\" "
                    "data_type: TYPE_STRING dims: [ 3 ] "
                    "initial_state { name: \"init\" data_type: TYPE_STRING "
                    "dims: [ 3 ] data_file: \"t.bin\" } }",
                    IFD_EINVAL, "does not hold 3 BYTES elements");
}

/* A file too short, missing, outside initial_state/. */
static void test_init_file_errors(void **state) {
  dir_fixture_t *d = *state;
  int32_t v[3] = {1, 2, 3};

  write_file(d, "short.bin", v, 8);
  expect_init_error(d, 0,
                    "state { input_name: \"I\" output_name: \"O\" "
                    "data_type: TYPE_INT32 dims: [ 3 ] "
                    "initial_state { name: \"init\" data_type: TYPE_INT32 "
                    "dims: [ 3 ] data_file: \"short.bin\" } }",
                    IFD_EINVAL,
                    "initial_state setting expects 12 bytes, but the data "
                    "provided from short.bin only has 8 bytes.");
  expect_init_error(d, 0,
                    "state { input_name: \"I\" output_name: \"O\" "
                    "data_type: TYPE_INT32 dims: [ 3 ] "
                    "initial_state { name: \"init\" data_type: TYPE_INT32 "
                    "dims: [ 3 ] data_file: \"missing.bin\" } }",
                    IFD_EIO, "failed to open text file for read");
  expect_init_error(d, 0,
                    "state { input_name: \"I\" output_name: \"O\" "
                    "data_type: TYPE_INT32 dims: [ 3 ] "
                    "initial_state { name: \"init\" data_type: TYPE_INT32 "
                    "dims: [ 3 ] data_file: \"../config.pbtxt\" } }",
                    IFD_EINVAL, "must be a relative path inside");
  expect_init_error(d, 0,
                    "state { input_name: \"I\" output_name: \"O\" "
                    "data_type: TYPE_INT32 dims: [ 3 ] "
                    "initial_state { name: \"init\" data_type: TYPE_INT32 "
                    "dims: [ 3 ] data_file: \"/etc/passwd\" } }",
                    IFD_EINVAL, "must be a relative path inside");
  expect_init_error(d, 0,
                    "state { input_name: \"I\" output_name: \"O\" "
                    "data_type: TYPE_INT32 dims: [ 3 ] "
                    "initial_state { name: \"init\" data_type: TYPE_INT32 "
                    "dims: [ 3 ] data_file: \"\" } }",
                    IFD_EINVAL, "must be a relative path inside");
  /* A folder is no file. */
  expect_init_error(d, 0,
                    "state { input_name: \"I\" output_name: \"O\" "
                    "data_type: TYPE_INT32 dims: [ 3 ] "
                    "initial_state { name: \"init\" data_type: TYPE_INT32 "
                    "dims: [ 3 ] data_file: \".\" } }",
                    IFD_EIO, "not a regular file");
}

/* Configs Triton refuses, with its messages, and those inferd refuses. */
static void test_init_bad_configs(void **state) {
  dir_fixture_t *d = *state;
  static const struct {
    const char *states;
    int code;
    const char *text;
  } cases[] = {
      {"state { output_name: \"O\" data_type: TYPE_INT32 dims: [ 1 ] }",
       IFD_EINVAL, "must specify 'input_name'"},
      {"state { input_name: \"I\" data_type: TYPE_INT32 dims: [ 1 ] }",
       IFD_EINVAL, "state 'I' must specify 'output_name' for m"},
      {"state { input_name: \"I\" output_name: \"O\" dims: [ 1 ] }", IFD_EINVAL,
       "state 'I' must specify 'data_type' for m"},
      {"state { input_name: \"I\" output_name: \"O\" data_type: TYPE_INT32 "
       "dims: [ 0 ] }",
       IFD_EINVAL, "dimension must be integer >= 1, or -1"},
      {"state { input_name: \"I\" output_name: \"O\" data_type: TYPE_INT32 "
       "dims: [ -2 ] }",
       IFD_EINVAL, "dimension must be integer >= 1, or -1"},
      {"state [ { input_name: \"I\" output_name: \"O\" data_type: TYPE_INT32 "
       "dims: [ 1 ] }, { input_name: \"I\" output_name: \"O2\" "
       "data_type: TYPE_INT32 dims: [ 1 ] } ]",
       IFD_EINVAL, "State input name 'I' specified more than once."},
      {"state [ { input_name: \"I\" output_name: \"O\" data_type: TYPE_INT32 "
       "dims: [ 1 ] }, { input_name: \"I2\" output_name: \"O\" "
       "data_type: TYPE_INT32 dims: [ 1 ] } ]",
       IFD_EINVAL, "State output name 'O' specified more than once."},
      {"state { input_name: \"I\" output_name: \"O\" data_type: TYPE_INT32 "
       "dims: [ 1 ] use_growable_memory: true }",
       IFD_EINVAL,
       "In order to 'use_growable_memory', you must also enable "
       "'use_single_buffer' for state input name 'I'."},
      {"state { input_name: \"I\" output_name: \"O\" data_type: TYPE_INT32 "
       "dims: [ 1 ] use_growable_memory: true "
       "use_same_buffer_for_input_output: true } } "
       "instance_group { kind: KIND_CPU",
       IFD_EINVAL, "'use_growable_memory' can only work with KIND_GPU"},
      {"state { input_name: \"I\" output_name: \"O\" data_type: TYPE_INT32 "
       "dims: [ 1 ] initial_state [ { name: \"a\" data_type: TYPE_INT32 "
       "dims: [ 1 ] zero_data: true }, { name: \"b\" data_type: TYPE_INT32 "
       "dims: [ 1 ] zero_data: true } ] }",
       IFD_EINVAL,
       "initial_state field for state input 'I' must contain exactly one or "
       "zero element. Found '2' elements."},
      {"state { input_name: \"I\" output_name: \"O\" data_type: TYPE_INT32 "
       "dims: [ 1 ] initial_state { name: \"a\" data_type: TYPE_FP32 "
       "dims: [ 1 ] zero_data: true } }",
       IFD_EINVAL,
       "The data type used for 'initial_state' field of state 'I' does not "
       "match the state data type."},
      {"state { input_name: \"I\" output_name: \"O\" data_type: TYPE_INT32 "
       "dims: [ 1 ] initial_state { data_type: TYPE_INT32 "
       "dims: [ 1 ] zero_data: true } }",
       IFD_EINVAL,
       "Field 'name' must be set when using initial_state for state input "
       "'I'."},
      {"state { input_name: \"I\" output_name: \"O\" data_type: TYPE_INT32 "
       "dims: [ 1, 2 ] initial_state { name: \"a\" data_type: TYPE_INT32 "
       "dims: [ 1 ] zero_data: true } }",
       IFD_EINVAL,
       "Number of dimensions in 'initial_state' doesn't match the size of "
       "'state' dimensions for state input 'I'. 1 != 2"},
      {"state { input_name: \"I\" output_name: \"O\" data_type: TYPE_INT32 "
       "dims: [ -1 ] initial_state { name: \"a\" data_type: TYPE_INT32 "
       "dims: [ -1 ] zero_data: true } }",
       IFD_EINVAL,
       "'initial_state' field for state input name 'I' contains variable "
       "dimensions."},
      {"state { input_name: \"I\" output_name: \"O\" data_type: TYPE_INT32 "
       "dims: [ 4 ] initial_state { name: \"a\" data_type: TYPE_INT32 "
       "dims: [ 3 ] zero_data: true } }",
       IFD_EINVAL,
       "'initial_state' dim for input name 'I' doesn't match 'state' dim "
       "description. 3 != 4"},
      {"state { input_name: \"I\" output_name: \"O\" data_type: TYPE_INT32 "
       "dims: [ 4 ] initial_state { name: \"a\" data_type: TYPE_INT32 "
       "dims: [ 4 ] } }",
       IFD_EINVAL,
       "initial_state setting expects state 'I' to have state_data set"},
      {"state { input_name: \"I\" output_name: \"O\" data_type: TYPE_INT32 "
       "dims: [ 1000000000, 1000000000, 1000000000 ] }",
       IFD_EINVAL, "state 'I' of model 'm' is too large"},
  };
  size_t i;
  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    expect_init_error(d, 4, cases[i].states, cases[i].code, cases[i].text);

  /* Growable memory on GPU instances is fine: inferd keeps states in CPU
   * memory, which the ABI allows. (The list closes sequence_batching early
   * to add an instance group.) */
  {
    ifd_blob_t **out;
    ifd_errmsg_t err;
    assert_int_equal(
        initial(d, 4,
                "state { input_name: \"I\" output_name: \"O\" data_type: "
                "TYPE_INT32 dims: [ 1 ] use_growable_memory: true "
                "use_same_buffer_for_input_output: true } } "
                "instance_group { kind: KIND_GPU gpus: [ 0 ]",
                &out, &err),
        0);
    free_blobs(out, 1);
  }

  /* A later state's error frees the values built before it. */
  expect_init_error(d, 4,
                    "state [ { input_name: \"I\" output_name: \"O\" "
                    "data_type: TYPE_INT32 dims: [ 8 ] }, "
                    "{ input_name: \"I2\" output_name: \"O2\" "
                    "data_type: TYPE_INT32 dims: [ 1 ] initial_state "
                    "{ name: \"a\" data_type: TYPE_INT32 dims: [ 1 ] "
                    "data_file: \"none.bin\" } } ]",
                    IFD_EIO, "none.bin");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_publish_then_take, setup, teardown),
      cmocka_unit_test_setup_teardown(test_value_outlives_request, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_null_request, setup, teardown),
      cmocka_unit_test_setup_teardown(test_state_new_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_update_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_same_object, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bytes_state, setup, teardown),
      cmocka_unit_test_setup_teardown(test_buffer_memory_and_attributes, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
      cmocka_unit_test_setup_teardown(test_init_none, dir_setup, dir_teardown),
      cmocka_unit_test_setup_teardown(test_init_default_zeros, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_init_zero_data, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_init_data_file, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_init_file_errors, dir_setup,
                                      dir_teardown),
      cmocka_unit_test_setup_teardown(test_init_bad_configs, dir_setup,
                                      dir_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
