/*
 * test/unit/test_grpc_service.c - the metadata, statistics and repository
 * index handlers of frontend/grpc_service.c (included to reach its method
 * table; frontend/grpc_model_infer.c too, for its parameter checks),
 * filling their protobuf messages straight from core's structs.
 *
 * A real server loads a small repository through fake model operations (no
 * backend); the calls go through a fake stream that keeps the bytes sent and
 * the final status, so no transport is involved. Each reply is unpacked
 * with protobuf-c and compared with what core holds.
 *
 * The shared-memory RPCs (frontend/grpc_shm.c, reached through the method
 * table) run against the server's real region table with a POSIX shared-memory
 * object: register and unregister answer after the loop has run their work.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/bufpool.h"
#include "core/shm.h"
#include "frontend/grpc_model_infer.c"
#include "frontend/grpc_service.c"
#include "test/unit/repo_fixture.h"

/* ---- a fake stream ------------------------------------------------------- */

struct ifd_gstream {
  ifd_server_t *server; /* borrowed */
  uint8_t *sent;        /* owned: the bytes of the one message sent */
  size_t n_sent;
  int n_messages;
  int finished;
  int status;
  char message[512];
  int refs;
  void *data;
};

ifd_server_t *ifd_gstream_server(const ifd_gstream_t *st) {
  return st->server;
}
void *ifd_gstream_data(const ifd_gstream_t *st) {
  return st->data;
}
void ifd_gstream_set_data(ifd_gstream_t *st, void *data) {
  st->data = data;
}
uint64_t ifd_gstream_timeout_ns(const ifd_gstream_t *st) {
  (void)st;
  return 0;
}
uint64_t ifd_gstream_max_message(const ifd_gstream_t *st) {
  (void)st;
  return 1u << 30;
}
int ifd_gstream_closed(const ifd_gstream_t *st) {
  return st->finished;
}
/* No --grpc-infer-response-compression-level here. */
void ifd_gstream_compress(ifd_gstream_t *st) {
  (void)st;
}
/* No --grpc-header-forward-pattern here. */
int ifd__gstream_status(const ifd_gstream_t *st, int code) {
  (void)st;
  return ifd_grpc_status(code);
}
int ifd__gstream_forward(const ifd_gstream_t *st, ifd_request_t *req,
                         ifd_errmsg_t *err) {
  (void)st;
  (void)req;
  (void)err;
  return 0;
}
void ifd_gstream_ref(ifd_gstream_t *st) {
  st->refs++;
}
void ifd_gstream_unref(ifd_gstream_t *st) {
  st->refs--;
}

int ifd_gstream_send(ifd_gstream_t *st, const ifd_gmsg_t *msg) {
  unsigned i;
  size_t n = 0;
  for (i = 0; i < msg->n_iov; i++) n += msg->iov[i].len;
  free(st->sent);
  st->sent = malloc(n + 1);
  assert_non_null(st->sent);
  st->n_sent = 0;
  for (i = 0; i < msg->n_iov; i++) {
    memcpy(st->sent + st->n_sent, msg->iov[i].base, msg->iov[i].len);
    st->n_sent += msg->iov[i].len;
  }
  st->n_messages++;
  if (msg->free_fn != NULL) msg->free_fn(msg->free_arg);
  return 0;
}

void ifd_gstream_finish(ifd_gstream_t *st, int grpc_status, const char *msg) {
  assert_false(st->finished); /* a call is finished once */
  st->finished = 1;
  st->status = grpc_status;
  snprintf(st->message, sizeof(st->message), "%s", msg != NULL ? msg : "");
}

/* Calls the unary method `rpc` with `req` packed; returns the stream (its
 * sent bytes and status are the caller's to check; free with done()). */
static ifd_gstream_t *call(ifd_server_t *s, const char *rpc,
                           const ProtobufCMessage *req) {
  const ifd_grpc_method_t *m;
  ifd_gstream_t *st = calloc(1, sizeof(*st));
  size_t len = protobuf_c_message_get_packed_size(req);
  uint8_t *buf = ifd_bufpool_get(ifd_bufpool_shared(), len + 1);
  char path[128];

  assert_non_null(st);
  assert_non_null(buf);
  protobuf_c_message_pack(req, buf);
  snprintf(path, sizeof(path), SVC "%s", rpc);
  for (m = ifd__grpc_methods; m->path != NULL; m++)
    if (strcmp(m->path, path) == 0) break;
  assert_non_null(m->path);
  st->server = s;
  st->refs = 1;
  m->on_message(st, buf, len);
  assert_true(st->finished);
  assert_int_equal(st->refs, 1);
  return st;
}

/* Starts the unary method `rpc` with `req` packed, without requiring an
 * answer yet (methods that answer from a later callback). */
static ifd_gstream_t *start(ifd_server_t *s, const char *rpc,
                            const ProtobufCMessage *req,
                            const ifd_grpc_method_t **method) {
  const ifd_grpc_method_t *m;
  ifd_gstream_t *st = calloc(1, sizeof(*st));
  size_t len = protobuf_c_message_get_packed_size(req);
  uint8_t *buf = ifd_bufpool_get(ifd_bufpool_shared(), len + 1);
  char path[128];

  assert_non_null(st);
  assert_non_null(buf);
  protobuf_c_message_pack(req, buf);
  snprintf(path, sizeof(path), SVC "%s", rpc);
  for (m = ifd__grpc_methods; m->path != NULL; m++)
    if (strcmp(m->path, path) == 0) break;
  assert_non_null(m->path);
  st->server = s;
  st->refs = 1;
  m->on_message(st, buf, len);
  if (method != NULL) *method = m;
  return st;
}

/* Runs the loop until `st` is answered; the method's reference is gone. */
static void settle(ifd_server_t *s, ifd_gstream_t *st) {
  int i;
  for (i = 0; i < 100000 && !st->finished; i++)
    uv_run(ifd_server_loop(s), UV_RUN_ONCE);
  assert_true(st->finished);
  assert_int_equal(st->refs, 1);
}

static void done(ifd_gstream_t *st) {
  free(st->sent);
  free(st);
}

/* ---- a server with fake model operations --------------------------------- */

static int fake_load(ifd_model_t *m, ifd_errmsg_t *err) {
  if (strncmp(m->name, "fail", 4) == 0)
    return ifd_errf(err, IFD_EINVAL, "backend refused '%s'", m->name);
  return 0;
}
static void fake_unload(ifd_model_t *m) {
  (void)m;
}
static int fake_submit(ifd_model_t *m, ifd_request_t *req, ifd_errmsg_t *err) {
  (void)m;
  (void)req;
  return ifd_errf(err, IFD_EUNSUPPORTED, "no inference here");
}
static void fake_stop(ifd_model_t *m) {
  (void)m;
}
static uint64_t fake_pending(const ifd_model_t *m) {
  (void)m;
  return 0;
}
static const ifd_model_ops_t fake_ops = {
    fake_load, fake_unload, fake_submit, fake_stop, fake_pending, fake_pending,
    NULL,      NULL,        NULL,        NULL,      NULL,         NULL};

typedef struct fixture {
  uv_loop_t loop;
  ifd_server_t *s;
  int loaded, stopped;
} fixture_t;

static void on_loaded(ifd_server_t *s, int failed, void *arg) {
  (void)s;
  (void)failed;
  ((fixture_t *)arg)->loaded = 1;
}

static void on_stopped(ifd_server_t *s, void *arg) {
  ((fixture_t *)arg)->stopped = 1;
  ifd_server_free(s);
}

static int setup(void **state) {
  static fixture_t f;
  const char *repos[1];
  ifd_server_opts_t o;
  ifd_errmsg_t err;

  snprintf(root, sizeof(root), "/tmp/ifd_gsvc_XXXXXX");
  assert_non_null(mkdtemp(root));
  mkdirs("b");
  mkdirs("b/1");
  mkdirs("b/2");
  write_file("b/config.pbtxt",
             "name: \"b\" platform: \"pytorch_libtorch\" backend: \"identity\" "
             "max_batch_size: 8 "
             "version_policy { all {} } "
             "input [{ name: \"IN\" data_type: TYPE_INT64 dims: [ 2, 3 ] }, "
             "       { name: \"S\" data_type: TYPE_STRING dims: [ 1 ] }] "
             "output [{ name: \"OUT\" data_type: TYPE_FP16 dims: [ -1 ] }]");
  mkdirs("fail_me");
  mkdirs("fail_me/3");
  write_file("fail_me/config.pbtxt",
             "name: \"fail_me\" backend: \"identity\" "
             "input [{ name: \"I\" data_type: TYPE_FP32 dims: [ 1 ] }] "
             "output [{ name: \"O\" data_type: TYPE_FP32 dims: [ 1 ] }]");
  mkdirs("syntax");
  write_file("syntax/config.pbtxt", "name: {");
  memset(&f, 0, sizeof(f));
  memset(&o, 0, sizeof(o));
  repos[0] = root;
  o.repos = repos;
  o.n_repos = 1;
  o.ops = &fake_ops;
  assert_int_equal(uv_loop_init(&f.loop), 0);
  assert_int_equal(ifd_server_new(&f.loop, &o, &f.s, &err), 0);
  ifd_server_start(f.s, on_loaded, &f);
  while (!f.loaded) uv_run(&f.loop, UV_RUN_ONCE);
  *state = &f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  ifd_server_shutdown(f->s, on_stopped, f);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_true(f->stopped);
  assert_int_equal(uv_loop_close(&f->loop), 0);
  nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  return 0;
}

/* ---- the handlers -------------------------------------------------------- */

static void test_server_metadata(void **state) {
  fixture_t *f = *state;
  Inference__ServerMetadataRequest q = INFERENCE__SERVER_METADATA_REQUEST__INIT;
  Inference__ServerMetadataResponse *r;
  ifd_gstream_t *st = call(f->s, "ServerMetadata", &q.base);
  const ifd_server_info_t *info = ifd_server_metadata(f->s);
  size_t i;

  assert_int_equal(st->status, IFD_GRPC_OK);
  r = inference__server_metadata_response__unpack(NULL, st->n_sent, st->sent);
  assert_non_null(r);
  assert_string_equal(r->name, "triton");
  assert_string_equal(r->version, IFD_SERVER_VERSION);
  assert_int_equal(r->n_extensions, info->n_extensions);
  for (i = 0; i < r->n_extensions; i++)
    assert_string_equal(r->extensions[i], info->extensions[i]);
  inference__server_metadata_response__free_unpacked(r, NULL);
  done(st);
}

static void test_model_metadata(void **state) {
  fixture_t *f = *state;
  Inference__ModelMetadataRequest q = INFERENCE__MODEL_METADATA_REQUEST__INIT;
  Inference__ModelMetadataResponse *r;
  ifd_gstream_t *st;

  q.name = "b";
  q.version = "1";
  st = call(f->s, "ModelMetadata", &q.base);
  assert_int_equal(st->status, IFD_GRPC_OK);
  r = inference__model_metadata_response__unpack(NULL, st->n_sent, st->sent);
  assert_non_null(r);
  assert_string_equal(r->name, "b");
  assert_string_equal(r->platform, "pytorch_libtorch");
  assert_int_equal(r->n_versions, 2);
  assert_string_equal(r->versions[0], "1");
  assert_string_equal(r->versions[1], "2");
  assert_int_equal(r->n_inputs, 2);
  assert_string_equal(r->inputs[0]->name, "IN");
  assert_string_equal(r->inputs[0]->datatype, "INT64");
  assert_int_equal(r->inputs[0]->n_shape, 3);
  assert_int_equal(r->inputs[0]->shape[0], -1);
  assert_int_equal(r->inputs[0]->shape[1], 2);
  assert_int_equal(r->inputs[0]->shape[2], 3);
  assert_string_equal(r->inputs[1]->datatype, "BYTES");
  assert_int_equal(r->n_outputs, 1);
  assert_string_equal(r->outputs[0]->name, "OUT");
  assert_string_equal(r->outputs[0]->datatype, "FP16");
  assert_int_equal(r->outputs[0]->n_shape, 2);
  assert_int_equal(r->outputs[0]->shape[1], -1);
  inference__model_metadata_response__free_unpacked(r, NULL);
  done(st);

  /* Errors come from the lookup, with its message: a model with no READY
   * version is NOT_FOUND, as Triton. */
  q.name = "fail_me";
  q.version = "";
  st = call(f->s, "ModelMetadata", &q.base);
  assert_int_equal(st->status, IFD_GRPC_NOT_FOUND);
  assert_int_equal(st->n_messages, 0);
  done(st);
  q.name = "b";
  q.version = "x";
  st = call(f->s, "ModelMetadata", &q.base);
  assert_int_equal(st->status, IFD_GRPC_INVALID_ARGUMENT);
  done(st);
}

static void test_repository_index(void **state) {
  fixture_t *f = *state;
  Inference__RepositoryIndexRequest q =
      INFERENCE__REPOSITORY_INDEX_REQUEST__INIT;
  Inference__RepositoryIndexResponse *r;
  ifd_gstream_t *st = call(f->s, "RepositoryIndex", &q.base);

  assert_int_equal(st->status, IFD_GRPC_OK);
  r = inference__repository_index_response__unpack(NULL, st->n_sent, st->sent);
  assert_non_null(r);
  assert_int_equal(r->n_models, 4);
  assert_string_equal(r->models[0]->name, "b");
  assert_string_equal(r->models[0]->version, "1");
  assert_string_equal(r->models[0]->state, "READY");
  assert_string_equal(r->models[0]->reason, "");
  assert_string_equal(r->models[1]->version, "2");
  assert_string_equal(r->models[2]->name, "fail_me");
  assert_string_equal(r->models[2]->version, "3");
  assert_string_equal(r->models[2]->state, "UNAVAILABLE");
  assert_string_equal(r->models[2]->reason,
                      "Invalid argument: backend refused 'fail_me'");
  /* A whole-model row: no version (proto3's empty string). */
  assert_string_equal(r->models[3]->name, "syntax");
  assert_string_equal(r->models[3]->version, "");
  assert_string_equal(r->models[3]->state, "UNAVAILABLE");
  assert_non_null(strstr(r->models[3]->reason, "config.pbtxt"));
  inference__repository_index_response__free_unpacked(r, NULL);
  done(st);

  q.ready = 1;
  st = call(f->s, "RepositoryIndex", &q.base);
  r = inference__repository_index_response__unpack(NULL, st->n_sent, st->sent);
  assert_non_null(r);
  assert_int_equal(r->n_models, 2);
  assert_string_equal(r->models[1]->version, "2");
  inference__repository_index_response__free_unpacked(r, NULL);
  done(st);
}

static void test_statistics(void **state) {
  fixture_t *f = *state;
  Inference__ModelStatisticsRequest q =
      INFERENCE__MODEL_STATISTICS_REQUEST__INIT;
  Inference__ModelStatisticsResponse *r;
  Inference__ModelStatistics *ms;
  ifd_request_times_t t = {100, 110, 150, 160, 260, 270};
  ifd_model_t *m;
  ifd_gstream_t *st;

  /* Counters of b:2, as requests and executions would leave them. */
  assert_int_equal(ifd_server_find_model(f->s, "b", 1, 2, &m, NULL), 0);
  ifd_stats_request(&m->stats, &t, 1, 4, 0);
  ifd_stats_request(&m->stats, &t, 0, 1, 300);
  assert_int_equal(ifd_stats_batch(&m->stats, 4, 150, 160, 260, 270), 0);
  assert_int_equal(ifd_stats_batch(&m->stats, 1, 150, 151, 152, 160), 0);
  m->stats.last_inference_ms = 1234567890123ull;
  m->stats.cache_miss.count = 7;
  m->stats.cache_miss.ns = UINT64_MAX;

  q.name = "b";
  q.version = "2";
  st = call(f->s, "ModelStatistics", &q.base);
  assert_int_equal(st->status, IFD_GRPC_OK);
  r = inference__model_statistics_response__unpack(NULL, st->n_sent, st->sent);
  assert_non_null(r);
  assert_int_equal(r->n_model_stats, 1);
  ms = r->model_stats[0];
  assert_string_equal(ms->name, "b");
  assert_string_equal(ms->version, "2");
  assert_int_equal(ms->last_inference, 1234567890123ull);
  assert_int_equal(ms->inference_count, 4);
  assert_int_equal(ms->execution_count, 2);
  assert_int_equal(ms->inference_stats->success->count, 1);
  assert_int_equal(ms->inference_stats->success->ns, 170);
  assert_int_equal(ms->inference_stats->fail->count, 1);
  assert_int_equal(ms->inference_stats->fail->ns, 170);
  assert_int_equal(ms->inference_stats->queue->ns, 40);
  assert_int_equal(ms->inference_stats->compute_input->ns, 10);
  assert_int_equal(ms->inference_stats->compute_infer->ns, 100);
  assert_int_equal(ms->inference_stats->compute_output->ns, 10);
  assert_int_equal(ms->inference_stats->cache_hit->count, 0);
  assert_int_equal(ms->inference_stats->cache_miss->count, 7);
  assert_true(ms->inference_stats->cache_miss->ns == UINT64_MAX);
  assert_int_equal(ms->n_batch_stats, 2);
  assert_int_equal(ms->batch_stats[0]->batch_size, 1);
  assert_int_equal(ms->batch_stats[0]->compute_infer->ns, 1);
  assert_int_equal(ms->batch_stats[1]->batch_size, 4);
  assert_int_equal(ms->batch_stats[1]->compute_input->count, 1);
  assert_int_equal(ms->batch_stats[1]->compute_input->ns, 10);
  assert_int_equal(ms->batch_stats[1]->compute_output->ns, 10);
  assert_int_equal(ms->n_response_stats, 0);
  assert_int_equal(ms->n_memory_usage, 0);
  inference__model_statistics_response__free_unpacked(r, NULL);
  done(st);

  /* Every model: the READY versions, b:1 untouched. */
  q.name = "";
  q.version = "";
  st = call(f->s, "ModelStatistics", &q.base);
  r = inference__model_statistics_response__unpack(NULL, st->n_sent, st->sent);
  assert_non_null(r);
  assert_int_equal(r->n_model_stats, 2);
  assert_string_equal(r->model_stats[0]->version, "1");
  assert_int_equal(r->model_stats[0]->execution_count, 0);
  assert_int_equal(r->model_stats[0]->n_batch_stats, 0);
  assert_non_null(r->model_stats[0]->inference_stats->success);
  assert_int_equal(r->model_stats[1]->execution_count, 2);
  inference__model_statistics_response__free_unpacked(r, NULL);
  done(st);

  /* Unknown or not ready: INVALID_ARGUMENT with Triton's message. */
  q.name = "fail_me";
  st = call(f->s, "ModelStatistics", &q.base);
  assert_int_equal(st->status, IFD_GRPC_INVALID_ARGUMENT);
  assert_string_equal(st->message,
                      "requested model 'fail_me' is not available");
  done(st);
  q.name = "b";
  q.version = "9";
  st = call(f->s, "ModelStatistics", &q.base);
  assert_int_equal(st->status, IFD_GRPC_INVALID_ARGUMENT);
  assert_string_equal(st->message,
                      "requested model version 9 is not available for "
                      "model 'b'");
  done(st);
}

/* The config is the model's own message, sent as is. */
static void test_model_config(void **state) {
  fixture_t *f = *state;
  Inference__ModelConfigRequest q = INFERENCE__MODEL_CONFIG_REQUEST__INIT;
  Inference__ModelConfigResponse *r;
  ifd_model_t *m;
  ifd_gstream_t *st;
  size_t n;
  uint8_t *want;

  q.name = "b";
  st = call(f->s, "ModelConfig", &q.base);
  assert_int_equal(st->status, IFD_GRPC_OK);
  r = inference__model_config_response__unpack(NULL, st->n_sent, st->sent);
  assert_non_null(r);
  assert_non_null(r->config);
  assert_int_equal(ifd_server_find_model(f->s, "b", 1, -1, &m, NULL), 0);
  n = protobuf_c_message_get_packed_size(&m->config->base);
  want = malloc(n + 1);
  assert_non_null(want);
  protobuf_c_message_pack(&m->config->base, want);
  {
    size_t got_n = protobuf_c_message_get_packed_size(&r->config->base);
    uint8_t *got = malloc(got_n + 1);
    assert_non_null(got);
    protobuf_c_message_pack(&r->config->base, got);
    assert_int_equal(got_n, n);
    assert_memory_equal(got, want, n);
    free(got);
  }
  free(want);
  inference__model_config_response__free_unpacked(r, NULL);
  done(st);
}

/* Strings for proto3 fields: well-formed UTF-8 is borrowed as is, anything
 * else becomes a repaired copy (each bad byte U+FFFD) from the arena. */
static void test_text(void **state) {
  arena_t a = {NULL, 0, 0};
  const char *ok = "caf\xc3\xa9";
  char *r;
  (void)state;

  assert_ptr_equal(text(&a, ok), ok);
  assert_int_equal(a.n, 0);
  r = text(&a, "bad\xffname\xc3");
  assert_string_equal(r, "bad\xef\xbf\xbdname\xef\xbf\xbd");
  assert_string_equal(version_text(&a, 12), "12");
  assert_string_equal(version_text(&a, -1), "");
  arena_free(&a);
}

/* Which triton_* request parameters gRPC accepts, with tritonserver's texts. */
static void test_triton_params(void **state) {
  fixture_t *f = *state;
  ifd_request_t *req = ifd_request_new(f->s);
  ifd_param_t *p;
  ifd_errmsg_t err;

  assert_non_null(req);
  ifd_errclear(&err);
  assert_int_equal(check_triton_params(req, &err), 0);
  p = ifd_request_add_param(req, "mine", 4);
  assert_non_null(p);
  p->type = IFD_PARAM_INT;
  p = ifd_request_add_param(req, "triton_enable_empty_final_response", 34);
  assert_non_null(p);
  p->type = IFD_PARAM_BOOL;
  p->v.b = 1;
  assert_int_equal(check_triton_params(req, &err), 0);
  assert_true(wants_final_flag(req));
  p->v.b = 0;
  assert_false(wants_final_flag(req));
  p->type = IFD_PARAM_INT;
  assert_int_equal(check_triton_params(req, &err), IFD_EINVAL);
  assert_string_equal(err.text,
                      "invalid value type for "
                      "'triton_enable_empty_final_response' parameter, "
                      "expected bool_param.");
  assert_false(wants_final_flag(req));
  p->type = IFD_PARAM_BOOL;
  p = ifd_request_add_param(req, "triton_", 7);
  assert_non_null(p);
  p->type = IFD_PARAM_BOOL;
  ifd_errclear(&err);
  assert_int_equal(check_triton_params(req, &err), IFD_EINVAL);
  assert_non_null(strstr(err.text,
                         "are reserved for Triton usage. Only the "
                         "following keys starting with 'triton_' "
                         "are allowed: "
                         "triton_enable_empty_final_response"));
  ifd_request_unref(req);
}

/* ---- shared memory ---------------------------------------------------------
 */

typedef Inference__SystemSharedMemoryStatusResponse sys_status_pb;

/* Status of the system regions (`name` or all) as a response message. */
static sys_status_pb *shm_status(ifd_server_t *s, const char *name, int *status,
                                 char *msg, size_t msg_size) {
  Inference__SystemSharedMemoryStatusRequest q =
      INFERENCE__SYSTEM_SHARED_MEMORY_STATUS_REQUEST__INIT;
  ifd_gstream_t *st;
  sys_status_pb *r = NULL;

  q.name = (char *)name;
  st = call(s, "SystemSharedMemoryStatus", &q.base);
  *status = st->status;
  snprintf(msg, msg_size, "%s", st->message);
  if (st->status == IFD_GRPC_OK) {
    r = inference__system_shared_memory_status_response__unpack(
        NULL, st->n_sent, st->sent);
    assert_non_null(r);
  }
  done(st);
  return r;
}

static int shm_register(ifd_server_t *s, const char *name, const char *key,
                        uint64_t offset, uint64_t size, char *msg,
                        size_t msg_size) {
  Inference__SystemSharedMemoryRegisterRequest q =
      INFERENCE__SYSTEM_SHARED_MEMORY_REGISTER_REQUEST__INIT;
  ifd_gstream_t *st;
  int status;

  q.name = (char *)name;
  q.key = (char *)key;
  q.offset = offset;
  q.byte_size = size;
  st = start(s, "SystemSharedMemoryRegister", &q.base, NULL);
  settle(s, st);
  status = st->status;
  if (msg != NULL) snprintf(msg, msg_size, "%s", st->message);
  done(st);
  return status;
}

static void shm_unregister(ifd_server_t *s, const char *rpc, const char *name) {
  Inference__SystemSharedMemoryUnregisterRequest q =
      INFERENCE__SYSTEM_SHARED_MEMORY_UNREGISTER_REQUEST__INIT;
  ifd_gstream_t *st;

  q.name = (char *)name; /* same fields as the CUDA request */
  st = start(s, rpc, &q.base, NULL);
  settle(s, st);
  assert_int_equal(st->status, IFD_GRPC_OK);
  assert_int_equal(st->n_sent, 0); /* an empty message */
  assert_int_equal(st->n_messages, 1);
  done(st);
}

static void test_shared_memory_rpcs(void **state) {
  fixture_t *f = *state;
  Inference__SystemSharedMemoryRegisterRequest q =
      INFERENCE__SYSTEM_SHARED_MEMORY_REGISTER_REQUEST__INIT;
  Inference__CudaSharedMemoryRegisterRequest cq =
      INFERENCE__CUDA_SHARED_MEMORY_REGISTER_REQUEST__INIT;
  Inference__CudaSharedMemoryStatusRequest csq =
      INFERENCE__CUDA_SHARED_MEMORY_STATUS_REQUEST__INIT;
  const ifd_grpc_method_t *m;
  sys_status_pb *r;
  ifd_gstream_t *st, *gone;
  uint8_t handle[IFD_CUDA_IPC_HANDLE_BYTES] = {0};
  char key[64], msg[512], want[256];
  int fd, status;

  snprintf(key, sizeof(key), "/ifd_gsvc_%d", (int)getpid());
  fd = shm_open(key, O_RDWR | O_CREAT | O_EXCL, 0600);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, 8192), 0);
  close(fd);

  /* Nothing registered; then two regions, one at a page offset. */
  r = shm_status(f->s, "", &status, msg, sizeof(msg));
  assert_int_equal(r->n_regions, 0);
  protobuf_c_message_free_unpacked(&r->base, NULL);
  assert_int_equal(shm_register(f->s, "a", key, 0, 64, NULL, 0), IFD_GRPC_OK);
  assert_int_equal(shm_register(f->s, "b", key, 4096, 32, NULL, 0),
                   IFD_GRPC_OK);
  r = shm_status(f->s, "", &status, msg, sizeof(msg));
  assert_int_equal(r->n_regions, 2);
  assert_string_equal(r->regions[0]->key, "a");
  assert_string_equal(r->regions[0]->value->name, "a");
  assert_string_equal(r->regions[0]->value->key, key);
  assert_int_equal(r->regions[0]->value->byte_size, 64);
  assert_string_equal(r->regions[1]->key, "b");
  assert_int_equal(r->regions[1]->value->offset, 4096);
  assert_int_equal(r->regions[1]->value->byte_size, 32);
  protobuf_c_message_free_unpacked(&r->base, NULL);
  r = shm_status(f->s, "b", &status, msg, sizeof(msg));
  assert_int_equal(r->n_regions, 1);
  protobuf_c_message_free_unpacked(&r->base, NULL);
  assert_null(shm_status(f->s, "nope", &status, msg, sizeof(msg)));
  assert_int_equal(status, IFD_GRPC_NOT_FOUND);
  assert_string_equal(msg,
                      "Unable to find system shared memory region: 'nope'");

  /* Triton's codes: a name twice, a key that does not open. */
  assert_int_equal(shm_register(f->s, "a", key, 0, 64, msg, sizeof(msg)),
                   6 /* ALREADY_EXISTS */);
  assert_string_equal(msg, "shared memory region 'a' already in manager");
  assert_int_equal(
      shm_register(f->s, "x", "/ifd_gsvc_none", 0, 64, msg, sizeof(msg)),
      IFD_GRPC_INTERNAL);
  snprintf(want, sizeof(want),
           "Unable to open shared memory region: '/ifd_gsvc_none'");
  assert_string_equal(msg, want);

  /* The call ends before the mapping is done: the registration goes on,
   * the answer is dropped, the method's reference is back at once. */
  q.name = "c";
  q.key = key;
  q.byte_size = 16;
  gone = start(f->s, "SystemSharedMemoryRegister", &q.base, &m);
  assert_false(gone->finished);
  assert_int_equal(gone->refs, 2);
  assert_non_null(m->on_cancel);
  gone->finished = 1; /* what the transport does before on_cancel */
  m->on_cancel(gone);
  assert_int_equal(gone->refs, 1);
  assert_null(gone->data);
  /* "c" gets registered all the same. */
  for (;;) {
    size_t n;
    r = shm_status(f->s, "", &status, msg, sizeof(msg));
    n = r->n_regions;
    protobuf_c_message_free_unpacked(&r->base, NULL);
    if (n == 3) break;
    assert_int_equal(n, 2);
    uv_run(ifd_server_loop(f->s), UV_RUN_ONCE);
  }

  /* CUDA: refused without a GPU in this build's test (no device opened);
   * its status is empty and knows no system region. */
  cq.name = "cuda_region";
  cq.raw_handle.data = handle;
  cq.raw_handle.len = sizeof(handle);
  cq.byte_size = 64;
  st = start(f->s, "CudaSharedMemoryRegister", &cq.base, NULL);
  settle(f->s, st);
  if (st->status != IFD_GRPC_OK) {
    assert_int_equal(st->status, IFD_GRPC_INVALID_ARGUMENT);
    assert_non_null(strstr(st->message, "'cuda_region'"));
  }
  done(st);
  csq.name = "a";
  st = call(f->s, "CudaSharedMemoryStatus", &csq.base);
  assert_int_equal(st->status, IFD_GRPC_NOT_FOUND);
  done(st);
  shm_unregister(f->s, "CudaSharedMemoryUnregister", "");

  /* Unregister one, an unknown one, then all. */
  shm_unregister(f->s, "SystemSharedMemoryUnregister", "a");
  shm_unregister(f->s, "SystemSharedMemoryUnregister", "nope");
  r = shm_status(f->s, "", &status, msg, sizeof(msg));
  assert_int_equal(r->n_regions, 2);
  protobuf_c_message_free_unpacked(&r->base, NULL);
  shm_unregister(f->s, "SystemSharedMemoryUnregister", "");
  assert_int_equal(ifd_shm_count(ifd_server_shm(f->s)), 0);
  /* The forgotten answer never came. */
  assert_int_equal(gone->refs, 1);
  assert_int_equal(gone->n_messages, 0);
  done(gone);
  shm_unlink(key);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_server_metadata),
      cmocka_unit_test(test_model_metadata),
      cmocka_unit_test(test_repository_index),
      cmocka_unit_test(test_statistics),
      cmocka_unit_test(test_model_config),
      cmocka_unit_test(test_text),
      cmocka_unit_test(test_triton_params),
      cmocka_unit_test(test_shared_memory_rpcs),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
