/*
 * frontend/grpc_service.c - the handlers of inference.GRPCInferenceService and
 * grpc.health.v1.Health, and the method table the transport routes by.
 *
 * Every handler runs on the loop thread, called by net/grpc_transport.c with
 * one whole request message. Health, metadata, configuration, statistics,
 * the repository index and unload are answered at once, their messages
 * filled from
 * core's plain structs and the model's own config message (the same source
 * as the HTTP routes' JSON, so both protocols say the same thing). The
 * messages borrow core's strings and arrays: they are packed before the
 * handler returns to the loop.
 * RepositoryModelLoad answers when the load ends (see "model control").
 * The shared-memory RPCs live in frontend/grpc_shm.c, ModelInfer and
 * ModelStreamInfer in frontend/grpc_model_infer.c; this table routes to
 * them.
 *
 * Errors map to gRPC status through ifd_grpc_status (frontend/status.c) only.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/bufpool.h"
#include "core/model.h"
#include "core/server.h"
#include "frontend/grpc_infer.h"
#include "net/grpc_internal.h"
#include "frontend/grpc_shm.h"
#include "frontend/logging.h"
#include "frontend/trace_api.h"
#include "frontend/repo_control.h"
#include "net/restrict.h"
#include "frontend/status.h"
#include "base/utf8.h"
#include "proto/grpc_service.pb-c.h"
#include "proto/health.pb-c.h"

/* ---- helpers ------------------------------------------------------------ */

/* Ends a call with the gRPC status of an IFD_E* code. */
void ifd__grpc_finish_code(ifd_gstream_t *st, int code, const char *msg) {
  ifd_gstream_finish(st, ifd__gstream_status(st, code),
                     msg != NULL && msg[0] != '\0' ? msg : ifd_strerror(code));
}

/* Finishes a call after its one response was queued with result `rc`. On
 * IFD_ECANCELLED and IFD_ETOOBIG the call is over already. */
static void finish_sent(ifd_gstream_t *st, int rc) {
  if (rc == 0)
    ifd_gstream_finish(st, IFD_GRPC_OK, NULL);
  else if (rc == IFD_ENOMEM)
    ifd__grpc_finish_code(st, rc, "out of memory");
}

/* Answers a unary call with one message and OK. */
void ifd__grpc_reply(ifd_gstream_t *st, const ProtobufCMessage *m) {
  ifd_grpc_reply_t *r;

  if (ifd__grpc_reply_pack(m, &r) != 0) {
    ifd__grpc_finish_code(st, IFD_ENOMEM, "out of memory");
    return;
  }
  finish_sent(st, ifd_gstream_send(st, &r->msg));
}

/* Unpacks a request message and frees `msg`. Returns the message (free it
 * with protobuf_c_message_free_unpacked), or NULL after finishing the call
 * with INVALID_ARGUMENT. */
void *ifd__grpc_unpack(ifd_gstream_t *st, const ProtobufCMessageDescriptor *d,
                       uint8_t *msg, size_t len) {
  ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, len, msg);
  char text[128];

  ifd_bufpool_put(msg);
  if (m == NULL) {
    snprintf(text, sizeof(text), "failed to parse %s", d->short_name);
    ifd_gstream_finish(st, IFD_GRPC_INVALID_ARGUMENT, text);
  }
  return m;
}

/* Resolves a model by name and version string. Returns it (borrowed until
 * the loop next runs unloading), or NULL after finishing the call. */
static ifd_model_t *find_model(ifd_gstream_t *st, const char *name,
                               const char *version) {
  ifd_errmsg_t err;
  ifd_model_t *m;
  int64_t v;
  int rc;

  ifd_errclear(&err);
  rc = ifd__grpc_parse_version(version, strlen(version), &v, &err);
  if (rc == 0)
    rc = ifd_server_find_model(ifd_gstream_server(st), name, strlen(name), v,
                               &m, &err);
  if (rc != 0) {
    ifd__grpc_finish_code(st, rc, err.text);
    return NULL;
  }
  return m;
}

/* ---- response memory ----------------------------------------------------- */

/* The small structs and strings of a response message come from one list
 * of allocations, freed together once the message is packed. */
typedef struct arena {
  void **ptrs; /* owned, each entry owned */
  size_t n, cap;
} arena_t;

static void *arena_alloc(arena_t *a, size_t size) {
  void *p;

  if (a->n == a->cap) {
    size_t cap = a->cap != 0 ? 2 * a->cap : 64;
    void **np = realloc(a->ptrs, cap * sizeof(void *));
    if (np == NULL) return NULL;
    a->ptrs = np;
    a->cap = cap;
  }
  p = calloc(1, size != 0 ? size : 1);
  if (p != NULL) a->ptrs[a->n++] = p;
  return p;
}

static void arena_free(arena_t *a) {
  while (a->n > 0) free(a->ptrs[--a->n]);
  free(a->ptrs);
}

/* An array of `n` pointers with room for the `size`-byte structs they
 * point at; the structs are zeroed for the caller to init. */
static void **struct_array(arena_t *a, size_t n, size_t size) {
  char *block = arena_alloc(a, n * (sizeof(void *) + size));
  void **ptrs = (void **)block;
  size_t i;

  if (block == NULL) return NULL;
  for (i = 0; i < n; i++) ptrs[i] = block + n * sizeof(void *) + i * size;
  return ptrs;
}

/* A proto3 string field must hold UTF-8 (clients refuse the message
 * otherwise), and names and reasons may carry a folder name's bytes. Returns
 * `s` itself when it is well-formed, else a repaired copy from the arena
 * (base/utf8.h); NULL on ENOMEM. */
static char *text(arena_t *a, const char *s) {
  size_t n = strlen(s);
  char *r;

  if (ifd_utf8_valid(s, n)) return (char *)s;
  if (n > (SIZE_MAX - 1) / 3 || (r = arena_alloc(a, 3 * n + 1)) == NULL)
    return NULL;
  r[ifd_utf8_repair(s, n, r)] = '\0';
  return r;
}

/* Room for a version as a decimal string, NUL included. */
#define VERSION_CHARS 24

/* A version as a string from the arena ("" for -1); NULL on ENOMEM. */
static char *version_text(arena_t *a, int64_t v) {
  char *t = arena_alloc(a, VERSION_CHARS);

  if (t != NULL && v >= 0) snprintf(t, VERSION_CHARS, "%" PRId64, v);
  return t;
}

/* ---- health and metadata ------------------------------------------------ */

static void on_server_live(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  Inference__ServerLiveResponse r = INFERENCE__SERVER_LIVE_RESPONSE__INIT;
  ProtobufCMessage *q = ifd__grpc_unpack(
      st, &inference__server_live_request__descriptor, msg, len);

  if (q == NULL) return;
  protobuf_c_message_free_unpacked(q, NULL);
  r.live = ifd_server_live(ifd_gstream_server(st)) != 0;
  ifd__grpc_reply(st, &r.base);
}

static void on_server_ready(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  Inference__ServerReadyResponse r = INFERENCE__SERVER_READY_RESPONSE__INIT;
  ProtobufCMessage *q = ifd__grpc_unpack(
      st, &inference__server_ready_request__descriptor, msg, len);

  if (q == NULL) return;
  protobuf_c_message_free_unpacked(q, NULL);
  r.ready = ifd_server_ready(ifd_gstream_server(st)) != 0;
  ifd__grpc_reply(st, &r.base);
}

static void on_health_check(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  Grpc__Health__V1__HealthCheckResponse r =
      GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
  ProtobufCMessage *q = ifd__grpc_unpack(
      st, &grpc__health__v1__health_check_request__descriptor, msg, len);

  if (q == NULL) return;
  protobuf_c_message_free_unpacked(q, NULL);
  r.status =
      ifd_server_ready(ifd_gstream_server(st))
          ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING
          : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING;
  ifd__grpc_reply(st, &r.base);
}

static void on_model_ready(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  Inference__ModelReadyResponse r = INFERENCE__MODEL_READY_RESPONSE__INIT;
  Inference__ModelReadyRequest *q = ifd__grpc_unpack(
      st, &inference__model_ready_request__descriptor, msg, len);
  ifd_errmsg_t err;
  int64_t v;

  if (q == NULL) return;
  ifd_errclear(&err);
  if (ifd__grpc_parse_version(q->version, strlen(q->version), &v, &err) != 0) {
    ifd__grpc_finish_code(st, err.code, err.text);
  } else {
    /* Unknown or not ready alike: ready = false, as tritonserver answers. */
    r.ready = ifd_server_model_ready(ifd_gstream_server(st), q->name,
                                     strlen(q->name), v) != 0;
    ifd__grpc_reply(st, &r.base);
  }
  protobuf_c_message_free_unpacked(&q->base, NULL);
}

static void on_server_metadata(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  Inference__ServerMetadataResponse r =
      INFERENCE__SERVER_METADATA_RESPONSE__INIT;
  ProtobufCMessage *q = ifd__grpc_unpack(
      st, &inference__server_metadata_request__descriptor, msg, len);
  const ifd_server_info_t *info;

  if (q == NULL) return;
  protobuf_c_message_free_unpacked(q, NULL);
  info = ifd_server_metadata(ifd_gstream_server(st));
  /* protobuf-c's string fields are not const; packing only reads them. */
  r.name = (char *)info->name;
  r.version = (char *)info->version;
  r.n_extensions = info->n_extensions;
  r.extensions = (char **)info->extensions;
  ifd__grpc_reply(st, &r.base);
}

/* TensorMetadata views of core's tensor infos, from the arena; names and
 * shapes are borrowed from `t`. Returns the pointer array, or NULL. */
static Inference__ModelMetadataResponse__TensorMetadata **tensor_views(
    arena_t *a, const ifd_tensor_info_t *t, size_t n) {
  Inference__ModelMetadataResponse__TensorMetadata **vp = (void *)struct_array(
      a, n, sizeof(Inference__ModelMetadataResponse__TensorMetadata));
  size_t i;

  if (vp == NULL) return NULL;
  for (i = 0; i < n; i++) {
    inference__model_metadata_response__tensor_metadata__init(vp[i]);
    vp[i]->name = (char *)t[i].name; /* config text: checked UTF-8 */
    vp[i]->datatype = (char *)ifd_dtype_name(t[i].dtype);
    vp[i]->n_shape = t[i].n_shape;
    vp[i]->shape = (int64_t *)t[i].shape;
  }
  return vp;
}

static void on_model_metadata(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  Inference__ModelMetadataResponse r = INFERENCE__MODEL_METADATA_RESPONSE__INIT;
  Inference__ModelMetadataRequest *q = ifd__grpc_unpack(
      st, &inference__model_metadata_request__descriptor, msg, len);
  ifd_model_info_t info = {0};
  arena_t a = {NULL, 0, 0};
  ifd_model_t *m;
  size_t i;

  if (q == NULL) return;
  m = find_model(st, q->name, q->version);
  if (m == NULL) goto out_free;
  if (ifd_server_model_metadata(ifd_gstream_server(st), m, &info) != 0)
    goto out_nomem;
  r.name = text(&a, info.name);
  r.platform = (char *)info.platform; /* config text: checked UTF-8 */
  r.n_versions = info.n_versions;
  r.versions = arena_alloc(&a, info.n_versions * sizeof(char *));
  r.n_inputs = info.n_inputs;
  r.inputs = tensor_views(&a, info.inputs, info.n_inputs);
  r.n_outputs = info.n_outputs;
  r.outputs = tensor_views(&a, info.outputs, info.n_outputs);
  if (r.name == NULL || r.versions == NULL || r.inputs == NULL ||
      r.outputs == NULL)
    goto out_nomem;
  for (i = 0; i < info.n_versions; i++)
    if ((r.versions[i] = version_text(&a, info.versions[i])) == NULL)
      goto out_nomem;
  ifd__grpc_reply(st, &r.base);
  goto out_free;

out_nomem:
  ifd__grpc_finish_code(st, IFD_ENOMEM, "out of memory");
out_free:
  arena_free(&a);
  ifd_model_info_free(&info);
  protobuf_c_message_free_unpacked(&q->base, NULL);
}

static void on_model_config(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  Inference__ModelConfigResponse r = INFERENCE__MODEL_CONFIG_RESPONSE__INIT;
  Inference__ModelConfigRequest *q = ifd__grpc_unpack(
      st, &inference__model_config_request__descriptor, msg, len);
  ifd_model_t *m;

  if (q == NULL) return;
  m = find_model(st, q->name, q->version);
  if (m != NULL) {
    /* The config is the very inference.ModelConfig message: packed as is. */
    r.config = m->config;
    ifd__grpc_reply(st, &r.base);
  }
  protobuf_c_message_free_unpacked(&q->base, NULL);
}

static void on_repository_index(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  Inference__RepositoryIndexResponse r =
      INFERENCE__REPOSITORY_INDEX_RESPONSE__INIT;
  Inference__RepositoryIndexRequest *q = ifd__grpc_unpack(
      st, &inference__repository_index_request__descriptor, msg, len);
  Inference__RepositoryIndexResponse__ModelIndex **mi;
  arena_t a = {NULL, 0, 0};
  ifd_index_entry_t *rows = NULL;
  size_t i, n;

  if (q == NULL) return;
  /* One repository namespace: repository_name is not used, as with
   * tritonserver's default (non-namespaced) repositories. */
  if (ifd_server_repository_index(ifd_gstream_server(st), q->ready != 0, &rows,
                                  &n) != 0)
    goto out_nomem;
  mi = (void *)struct_array(
      &a, n, sizeof(Inference__RepositoryIndexResponse__ModelIndex));
  if (mi == NULL) goto out_nomem;
  for (i = 0; i < n; i++) {
    inference__repository_index_response__model_index__init(mi[i]);
    mi[i]->name = text(&a, rows[i].name);
    /* A whole-model row has no version: proto3's empty string. */
    mi[i]->version = version_text(&a, rows[i].version);
    /* A model never loaded: name only (proto3's empty strings). */
    mi[i]->state = (char *)(rows[i].state != NULL ? rows[i].state : "");
    mi[i]->reason = text(&a, rows[i].reason != NULL ? rows[i].reason : "");
    if (mi[i]->name == NULL || mi[i]->version == NULL || mi[i]->reason == NULL)
      goto out_nomem;
  }
  r.n_models = n;
  r.models = mi;
  ifd__grpc_reply(st, &r.base);
  goto out_free;

out_nomem:
  ifd__grpc_finish_code(st, IFD_ENOMEM, "out of memory");
out_free:
  arena_free(&a);
  free(rows);
  protobuf_c_message_free_unpacked(&q->base, NULL);
}

/* ---- statistics --------------------------------------------------------- */

/* Fills `n` StatisticDuration fields (to[k]) from core's durations. Returns
 * 0 or IFD_ENOMEM. */
static int durations(arena_t *a, Inference__StatisticDuration **const *to,
                     const ifd_duration_t *const *from, size_t n) {
  Inference__StatisticDuration *d = arena_alloc(a, n * sizeof(*d));
  size_t k;

  if (d == NULL) return IFD_ENOMEM;
  for (k = 0; k < n; k++) {
    inference__statistic_duration__init(&d[k]);
    d[k].count = from[k]->count;
    d[k].ns = from[k]->ns;
    *to[k] = &d[k];
  }
  return 0;
}

/* One model version's statistics as ModelStatistics (strings borrowed from
 * `e` or repaired into the arena, structs from the arena). Returns 0 or
 * IFD_ENOMEM. */
static int model_stats(arena_t *a, const ifd_stats_entry_t *e,
                       Inference__ModelStatistics *m) {
  const ifd_model_stats_t *s = e->stats;
  Inference__InferStatistics *st = arena_alloc(a, sizeof(*st));
  size_t i;

  inference__model_statistics__init(m);
  m->name = text(a, e->name);
  m->version = version_text(a, e->version);
  if (st == NULL || m->name == NULL || m->version == NULL) return IFD_ENOMEM;
  inference__infer_statistics__init(st);
  m->last_inference = s->last_inference_ms;
  m->inference_count = s->inference_count;
  m->execution_count = s->execution_count;
  m->inference_stats = st;
  {
    Inference__StatisticDuration **const to[8] = {
        &st->success,       &st->fail,          &st->queue,
        &st->compute_input, &st->compute_infer, &st->compute_output,
        &st->cache_hit,     &st->cache_miss};
    const ifd_duration_t *const from[8] = {
        &s->success,       &s->fail,           &s->queue,     &s->compute_input,
        &s->compute_infer, &s->compute_output, &s->cache_hit, &s->cache_miss};
    if (durations(a, to, from, 8) != 0) return IFD_ENOMEM;
  }
  /* Response statistics: one map entry per response index reported. */
  if (s->n_responses > 0) {
    size_t k, nr = s->n_responses;
    m->response_stats = (void *)struct_array(
        a, nr, sizeof(Inference__ModelStatistics__ResponseStatsEntry));
    Inference__InferResponseStatistics *v = arena_alloc(a, nr * sizeof(*v));
    char *keys = arena_alloc(a, nr * 24);
    if (m->response_stats == NULL || v == NULL || keys == NULL)
      return IFD_ENOMEM;
    m->n_response_stats = nr;
    for (k = 0; k < nr; k++) {
      Inference__ModelStatistics__ResponseStatsEntry *en = m->response_stats[k];
      const ifd_response_stats_t *rs = &s->responses[k];
      Inference__StatisticDuration **const to[6] = {
          &v[k].compute_infer, &v[k].compute_output, &v[k].success,
          &v[k].fail,          &v[k].empty_response, &v[k].cancel};
      const ifd_duration_t *const from[6] = {
          &rs->compute_infer, &rs->compute_output, &rs->success,
          &rs->fail,          &rs->empty_response, &rs->cancel};
      inference__model_statistics__response_stats_entry__init(en);
      inference__infer_response_statistics__init(&v[k]);
      snprintf(keys + 24 * k, 24, "%zu", k);
      en->key = keys + 24 * k;
      en->value = &v[k];
      if (durations(a, to, from, 6) != 0) return IFD_ENOMEM;
    }
  }
  /* Memory usage is what the backend reported. */
  {
    ifd_mem_usage_t mu[IFD_STATS_MEM_SLOTS];
    size_t k, nmu = ifd_stats_memory_usage(s, mu, IFD_STATS_MEM_SLOTS);
    if (nmu > 0) {
      m->memory_usage =
          (void *)struct_array(a, nmu, sizeof(Inference__MemoryUsage));
      if (m->memory_usage == NULL) return IFD_ENOMEM;
      m->n_memory_usage = nmu;
      for (k = 0; k < nmu; k++) {
        inference__memory_usage__init(m->memory_usage[k]);
        m->memory_usage[k]->type = (char *)mu[k].type;
        m->memory_usage[k]->id = mu[k].id;
        m->memory_usage[k]->byte_size = mu[k].byte_size;
      }
    }
  }
  if (s->n_batches == 0) return 0;
  m->n_batch_stats = s->n_batches;
  m->batch_stats = (void *)struct_array(
      a, s->n_batches, sizeof(Inference__InferBatchStatistics));
  if (m->batch_stats == NULL) return IFD_ENOMEM;
  for (i = 0; i < s->n_batches; i++) {
    Inference__InferBatchStatistics *b = m->batch_stats[i];
    const ifd_batch_stats_t *bs = &s->batches[i];
    Inference__StatisticDuration **const to[3] = {
        &b->compute_input, &b->compute_infer, &b->compute_output};
    const ifd_duration_t *const from[3] = {
        &bs->compute_input, &bs->compute_infer, &bs->compute_output};
    inference__infer_batch_statistics__init(b);
    b->batch_size = bs->batch_size;
    if (durations(a, to, from, 3) != 0) return IFD_ENOMEM;
  }
  return 0;
}

static void on_model_statistics(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  Inference__ModelStatisticsResponse r =
      INFERENCE__MODEL_STATISTICS_RESPONSE__INIT;
  Inference__ModelStatisticsRequest *q = ifd__grpc_unpack(
      st, &inference__model_statistics_request__descriptor, msg, len);
  arena_t a = {NULL, 0, 0};
  ifd_stats_entry_t *rows = NULL;
  ifd_errmsg_t err;
  int64_t v = -1;
  size_t i, n = 0;
  int rc;

  if (q == NULL) return;
  ifd_errclear(&err);
  rc = ifd__grpc_parse_version(q->version, strlen(q->version), &v, &err);
  if (rc == 0)
    rc = ifd_server_stats(ifd_gstream_server(st),
                          q->name[0] != '\0' ? q->name : NULL, strlen(q->name),
                          v, &rows, &n, &err);
  if (rc != 0) {
    ifd__grpc_finish_code(st, rc, err.text);
    goto out_free;
  }
  r.n_model_stats = n;
  if (n > 0) {
    r.model_stats =
        (void *)struct_array(&a, n, sizeof(Inference__ModelStatistics));
    rc = r.model_stats != NULL ? 0 : IFD_ENOMEM;
  }
  for (i = 0; rc == 0 && i < n; i++)
    rc = model_stats(&a, &rows[i], r.model_stats[i]);
  if (rc != 0)
    ifd__grpc_finish_code(st, rc, "out of memory");
  else
    ifd__grpc_reply(st, &r.base);

out_free:
  arena_free(&a);
  free(rows);
  protobuf_c_message_free_unpacked(&q->base, NULL);
}

/* ---- model control --------------------------------------------------------
 *
 * RepositoryModelLoad answers once the load has ended. Meanwhile the call
 * holds a stream reference and keeps the load call as its method data; if
 * the call ends first (client cancel, deadline, connection lost, server
 * stop), on_cancel forgets the load call (the load itself goes on) and
 * drops the reference. RepositoryModelUnload answers as soon as the unload
 * has begun, as tritonserver does.
 */

static void on_load_done(int rc, const char *msg, void *arg) {
  ifd_gstream_t *st = arg; /* counted reference, the call's */
  Inference__RepositoryModelLoadResponse r =
      INFERENCE__REPOSITORY_MODEL_LOAD_RESPONSE__INIT;

  ifd_gstream_set_data(st, NULL);
  if (!ifd_gstream_closed(st)) {
    if (rc == 0)
      ifd__grpc_reply(st, &r.base);
    else
      ifd__grpc_finish_code(st, rc, msg);
  }
  ifd_gstream_unref(st);
}

static void on_repository_model_load(ifd_gstream_t *st, uint8_t *msg,
                                     size_t len) {
  Inference__RepositoryModelLoadRequest *q = ifd__grpc_unpack(
      st, &inference__repository_model_load_request__descriptor, msg, len);
  ifd_load_call_t *call = NULL;
  ifd_load_req_t lr;
  ifd_errmsg_t err;
  int rc;

  if (q == NULL) return;
  ifd_errclear(&err);
  rc = ifd__load_req_from_grpc(q, &lr, &err);
  if (rc == 0) {
    ifd_gstream_ref(st); /* on_load_done's or on_load_cancel's */
    rc = ifd_server_load_model(ifd_gstream_server(st), q->model_name,
                               strlen(q->model_name), &lr.params, on_load_done,
                               st, &call, &err);
    ifd__load_req_free(&lr);
    if (rc == 0)
      ifd_gstream_set_data(st, call);
    else
      ifd_gstream_unref(st); /* refused at once: no callback follows */
  }
  if (rc != 0) ifd__grpc_finish_code(st, rc, err.text);
  protobuf_c_message_free_unpacked(&q->base, NULL);
}

static void on_load_cancel(ifd_gstream_t *st) {
  ifd_load_call_t *call = ifd_gstream_data(st);

  if (call == NULL) return; /* no load waiting (answered, or refused) */
  ifd_gstream_set_data(st, NULL);
  ifd_load_call_forget(call);
  ifd_gstream_unref(st); /* on_load_done will not run */
}

static void on_repository_model_unload(ifd_gstream_t *st, uint8_t *msg,
                                       size_t len) {
  Inference__RepositoryModelUnloadRequest *q = ifd__grpc_unpack(
      st, &inference__repository_model_unload_request__descriptor, msg, len);
  Inference__RepositoryModelUnloadResponse r =
      INFERENCE__REPOSITORY_MODEL_UNLOAD_RESPONSE__INIT;
  ifd_errmsg_t err;
  int dependents, rc;

  if (q == NULL) return;
  ifd_errclear(&err);
  rc = ifd__unload_req_from_grpc(q, &dependents, &err);
  if (rc == 0)
    rc = ifd_server_unload_model(ifd_gstream_server(st), q->model_name,
                                 strlen(q->model_name), dependents, &err);
  if (rc == 0)
    ifd__grpc_reply(st, &r.base);
  else
    ifd__grpc_finish_code(st, rc, err.text);
  protobuf_c_message_free_unpacked(&q->base, NULL);
}

/* ---- the method table ---------------------------------------------------- */

#define SVC "/inference.GRPCInferenceService/"
#define UNARY(rpc, grp, fn) \
  { SVC #rpc, 0, fn, NULL, NULL, IFD_API_##grp }

/* The groups are Triton's (--grpc-restricted-protocol). */
const ifd_grpc_method_t ifd__grpc_methods[] = {
    UNARY(ServerLive, HEALTH, on_server_live),
    UNARY(ServerReady, HEALTH, on_server_ready),
    UNARY(ModelReady, HEALTH, on_model_ready),
    UNARY(ServerMetadata, METADATA, on_server_metadata),
    UNARY(ModelMetadata, METADATA, on_model_metadata),
    {SVC "ModelInfer", 0, ifd__grpc_model_infer, NULL,
     ifd__grpc_model_infer_cancel, IFD_API_INFERENCE},
    {SVC "ModelStreamInfer", 1, ifd__grpc_stream_infer,
     ifd__grpc_stream_infer_end, ifd__grpc_stream_infer_cancel,
     IFD_API_INFERENCE},
    UNARY(ModelConfig, MODEL_CONFIG, on_model_config),
    UNARY(ModelStatistics, STATISTICS, on_model_statistics),
    UNARY(RepositoryIndex, MODEL_REPOSITORY, on_repository_index),
    {SVC "RepositoryModelLoad", 0, on_repository_model_load, NULL,
     on_load_cancel, IFD_API_MODEL_REPOSITORY},
    UNARY(RepositoryModelUnload, MODEL_REPOSITORY, on_repository_model_unload),
    /* Shared memory: frontend/grpc_shm.c. Register and unregister answer once
     * the region table's operation completes. */
    UNARY(SystemSharedMemoryStatus, SHARED_MEMORY, ifd__grpc_shm_system_status),
    {SVC "SystemSharedMemoryRegister", 0, ifd__grpc_shm_system_register, NULL,
     ifd__grpc_shm_cancel, IFD_API_SHARED_MEMORY},
    {SVC "SystemSharedMemoryUnregister", 0, ifd__grpc_shm_system_unregister,
     NULL, ifd__grpc_shm_cancel, IFD_API_SHARED_MEMORY},
    UNARY(CudaSharedMemoryStatus, SHARED_MEMORY, ifd__grpc_shm_cuda_status),
    {SVC "CudaSharedMemoryRegister", 0, ifd__grpc_shm_cuda_register, NULL,
     ifd__grpc_shm_cancel, IFD_API_SHARED_MEMORY},
    {SVC "CudaSharedMemoryUnregister", 0, ifd__grpc_shm_cuda_unregister, NULL,
     ifd__grpc_shm_cancel, IFD_API_SHARED_MEMORY},
    UNARY(TraceSetting, TRACE, ifd__grpc_trace_setting),
    UNARY(LogSettings, LOGGING, ifd__grpc_log_settings),
    {"/grpc.health.v1.Health/Check", 0, on_health_check, NULL, NULL,
     IFD_API_HEALTH},
    {NULL, 0, NULL, NULL, NULL, 0},
};
