/*
 * backend_api/backends/onnxruntime/ort_model.c - a model and its instances
 * for the ONNX Runtime backend.
 *
 * Per model (TRITONBACKEND_ModelInitialize, on a pool thread): the
 * configuration is read as JSON (jansson), auto-completed from the model
 * when the server allows it (Triton's rules: inputs and outputs from the
 * model when the configuration has none, max_batch_size from
 * default-max-batch-size when every input and output has a dynamic first
 * dimension, and then a dynamic batcher), and turned into session settings.
 *
 * Per instance (TRITONBACKEND_ModelInstanceInitialize, on the instance's
 * thread): a session is created from the model file (or the instance
 * group's shared one is taken, with share_session_between_instances) and
 * the configuration is checked against what the session declares, with
 * the texts of Triton's ORT backend, so a log grep that works on Triton
 * works here.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define ERR_ARG TRITONSERVER_ERROR_INVALID_ARG
#define ERR_INTERNAL TRITONSERVER_ERROR_INTERNAL

/* ---- configuration JSON ---------------------------------------------------
 */

/* A JSON integer, or a string holding one (int64 fields may be either). */
static int json_int(const json_t *v, long long *out) {
  if (json_is_integer(v)) {
    *out = json_integer_value(v);
    return 1;
  }
  if (json_is_string(v)) {
    char *end;
    const char *s = json_string_value(v);
    errno = 0;
    *out = strtoll(s, &end, 10);
    return end != s && *end == '\0' && errno == 0;
  }
  return 0;
}

static long long member_int(const json_t *o, const char *key, long long dflt) {
  long long v;
  return json_int(json_object_get(o, key), &v) ? v : dflt;
}

static const char *member_str(const json_t *o, const char *key) {
  const json_t *v = json_object_get(o, key);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

static int member_bool(const json_t *o, const char *key) {
  return json_is_true(json_object_get(o, key));
}

/* The shape of a configuration tensor: reshape.shape when given (that is
 * what the model sees), else dims. *n = 0 and NULL for an empty shape. */
static TRITONSERVER_Error *config_shape(const json_t *io, int64_t **dims,
                                        size_t *n) {
  const json_t *reshape = json_object_get(io, "reshape");
  const json_t *arr = json_is_object(reshape)
                          ? json_object_get(reshape, "shape")
                          : json_object_get(io, "dims");
  size_t i;
  *dims = NULL;
  *n = json_is_array(arr) ? json_array_size(arr) : 0;
  if (*n == 0) return NULL;
  *dims = calloc(*n, sizeof(int64_t));
  if (*dims == NULL) return ifd_ort_errf(ERR_INTERNAL, "out of memory");
  for (i = 0; i < *n; i++) {
    long long d;
    if (!json_int(json_array_get(arr, i), &d)) {
      free(*dims);
      *dims = NULL;
      return ifd_ort_errf(ERR_ARG, "dims of '%s' are not integers",
                          member_str(io, "name"));
    }
    (*dims)[i] = d;
  }
  return NULL;
}

/* parameters { key: K value { string_value: V } } -> V, or NULL. */
static const char *param(const json_t *config, const char *key) {
  const json_t *p = json_object_get(json_object_get(config, "parameters"), key);
  return member_str(p, "string_value");
}

static TRITONSERVER_Error *param_int(const json_t *config, const char *key,
                                     int dflt, int *out) {
  const char *s = param(config, key);
  char *end;
  long v;
  *out = dflt;
  if (s == NULL) return NULL;
  errno = 0;
  v = strtol(s, &end, 10);
  if (end == s || errno != 0 || v < -2147483647L || v > 2147483647L)
    return ifd_ort_errf(ERR_ARG, "failed to convert '%s' to integral number",
                        s);
  *out = (int)v;
  return NULL;
}

/* Triton's boolean words: true/on/1 and false/off/0, any case. */
static TRITONSERVER_Error *parse_bool(const char *s, int *out) {
  char low[8];
  size_t i;
  for (i = 0; s[i] != '\0' && i + 1 < sizeof(low); i++)
    low[i] = (char)tolower((unsigned char)s[i]);
  low[i] = '\0';
  if (s[i] == '\0') {
    if (!strcmp(low, "true") || !strcmp(low, "on") || !strcmp(low, "1")) {
      *out = 1;
      return NULL;
    }
    if (!strcmp(low, "false") || !strcmp(low, "off") || !strcmp(low, "0")) {
      *out = 0;
      return NULL;
    }
  }
  return ifd_ort_errf(ERR_ARG, "failed to convert '%s' to boolean", s);
}

static TRITONSERVER_Error *param_bool(const json_t *config, const char *key,
                                      int *out) {
  const char *s = param(config, key);
  *out = -1;
  return s == NULL ? NULL : parse_bool(s, out);
}

/* ---- settings -------------------------------------------------------------
 */

static void settings_free(ort_settings_t *s) {
  for (size_t i = 0; i < s->n_session; i++) {
    free(s->session_keys[i]);
    free(s->session_values[i]);
  }
  free(s->session_keys);
  free(s->session_values);
  free(s->arena_shrinkage);
  memset(s, 0, sizeof(*s));
}

static TRITONSERVER_Error *settings_read(const json_t *config,
                                         ort_settings_t *s) {
  const json_t *params = json_object_get(config, "parameters");
  const json_t *graph =
      json_object_get(json_object_get(config, "optimization"), "graph");
  TRITONSERVER_Error *e;
  const char *key;
  json_t *v;
  int share = 0;

  memset(s, 0, sizeof(*s));
  s->graph_level = ORT_ENABLE_ALL;
  if (json_is_object(graph)) {
    long long level = member_int(graph, "level", 0);
    if (level == -1)
      s->graph_level = ORT_ENABLE_BASIC;
    else if (level == 1)
      s->graph_level = ORT_ENABLE_EXTENDED;
    else if (level == 2)
      s->graph_level = ORT_DISABLE_ALL;
  }
  e = param_int(config, "execution_mode", 0, &s->execution_mode);
  if (e == NULL && s->execution_mode != 0 && s->execution_mode != 1)
    e = ifd_ort_errf(ERR_ARG,
                     "Invalid configuration value provided. Expected values "
                     "for execution_mode are 0 or 1 but got %d .",
                     s->execution_mode);
  if (e == NULL)
    e = param_int(config, "intra_op_thread_count", 0, &s->intra_op);
  if (e == NULL)
    e = param_int(config, "inter_op_thread_count", 0, &s->inter_op);
  if (e == NULL) e = param_bool(config, "enable_mem_arena", &s->mem_arena);
  if (e == NULL) e = param_bool(config, "enable_mem_pattern", &s->mem_pattern);
  if (e == NULL) {
    int b = -1;
    e = param_bool(config, "share_session_between_instances", &b);
    share = b == 1;
  }
  if (e != NULL) return e;
  s->share_session = share;
  if (param(config, "memory.enable_memory_arena_shrinkage") != NULL) {
    s->arena_shrinkage =
        strdup(param(config, "memory.enable_memory_arena_shrinkage"));
    if (s->arena_shrinkage == NULL) goto out_oom;
  }
  /* Every "session.*" parameter is an ONNX Runtime session config entry
   * (session.use_device_allocator_for_initializers, session.intra_op.
   * allow_spinning, ...): ONNX Runtime checks the keys it knows. */
  json_object_foreach((json_t *)params, key, v) {
    const char *val = member_str(v, "string_value");
    char **k2, **v2;
    if (strncmp(key, "session.", 8) != 0 || val == NULL) continue;
    k2 = realloc(s->session_keys, (s->n_session + 1) * sizeof(char *));
    if (k2 == NULL) goto out_oom;
    s->session_keys = k2;
    v2 = realloc(s->session_values, (s->n_session + 1) * sizeof(char *));
    if (v2 == NULL) goto out_oom;
    s->session_values = v2;
    s->session_keys[s->n_session] = strdup(key);
    s->session_values[s->n_session] = strdup(val);
    s->n_session++;
    if (s->session_keys[s->n_session - 1] == NULL ||
        s->session_values[s->n_session - 1] == NULL)
      goto out_oom;
  }
  return NULL;
out_oom:
  settings_free(s);
  return ifd_ort_errf(ERR_INTERNAL, "out of memory");
}

/* Session options for one session of the model. */
static TRITONSERVER_Error *session_options(ort_model_t *m,
                                           TRITONSERVER_InstanceGroupKind kind,
                                           int32_t device,
                                           OrtSessionOptions **out) {
  const ort_settings_t *s = &m->settings;
  OrtSessionOptions *o = NULL;
  TRITONSERVER_Error *e = ifd_ort_err(ifd_ort->CreateSessionOptions(&o));
  if (e != NULL) return e;
  e = ifd_ort_err(ifd_ort->SetSessionGraphOptimizationLevel(
      o, (GraphOptimizationLevel)s->graph_level));
  if (e == NULL)
    e = ifd_ort_err(ifd_ort->SetSessionExecutionMode(
        o, s->execution_mode == 0 ? ORT_SEQUENTIAL : ORT_PARALLEL));
  if (e == NULL && m->backend->global_pool) {
    e = ifd_ort_err(ifd_ort->DisablePerSessionThreads(o));
  } else {
    if (e == NULL && s->intra_op > 0)
      e = ifd_ort_err(ifd_ort->SetIntraOpNumThreads(o, s->intra_op));
    if (e == NULL && s->inter_op > 0)
      e = ifd_ort_err(ifd_ort->SetInterOpNumThreads(o, s->inter_op));
  }
  if (e == NULL && s->mem_arena >= 0)
    e = ifd_ort_err(s->mem_arena ? ifd_ort->EnableCpuMemArena(o)
                                 : ifd_ort->DisableCpuMemArena(o));
  if (e == NULL && s->mem_pattern >= 0)
    e = ifd_ort_err(s->mem_pattern ? ifd_ort->EnableMemPattern(o)
                                   : ifd_ort->DisableMemPattern(o));
  for (size_t i = 0; e == NULL && i < s->n_session; i++)
    e = ifd_ort_err(ifd_ort->AddSessionConfigEntry(o, s->session_keys[i],
                                                   s->session_values[i]));
  if (e == NULL && kind == TRITONSERVER_INSTANCEGROUPKIND_GPU) {
    /* The CUDA execution provider, where the runtime has it. The runtime
     * inferd installs (onnxruntime-node's) is CPU only. */
    int has_cuda = ifd_ort_has_cuda();
    if (e == NULL && !has_cuda)
      e = ifd_ort_errf(ERR_ARG,
                       "unable to load model '%s': instance group kind "
                       "KIND_GPU needs ONNX Runtime's CUDA execution "
                       "provider, which the ONNX Runtime library loaded (%s) "
                       "cannot provide (%s); use KIND_CPU",
                       m->name, ifd_ort_version(), ifd_ort_no_cuda_reason());
    if (e == NULL) {
      OrtCUDAProviderOptionsV2 *cuda = NULL;
      char dev[16];
      const char *k[] = {"device_id"};
      const char *v[] = {dev};
      snprintf(dev, sizeof(dev), "%d", (int)device);
      e = ifd_ort_err(ifd_ort->CreateCUDAProviderOptions(&cuda));
      if (e == NULL)
        e = ifd_ort_err(ifd_ort->UpdateCUDAProviderOptions(cuda, k, v, 1));
      if (e == NULL)
        e = ifd_ort_err(
            ifd_ort->SessionOptionsAppendExecutionProvider_CUDA_V2(o, cuda));
      if (cuda != NULL) ifd_ort->ReleaseCUDAProviderOptions(cuda);
    }
  }
  if (e != NULL) {
    ifd_ort->ReleaseSessionOptions(o);
    return e;
  }
  *out = o;
  return NULL;
}

/* Resident set size of the process, in bytes (0 if unknown). */
static uint64_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long long size = 0, res = 0;
  if (f == NULL) return 0;
  if (fscanf(f, "%llu %llu", &size, &res) != 2) res = 0;
  fclose(f);
  return res * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Creates a session over the model file. Session creation is serialized
 * in the backend, so the resident memory it adds can be told apart from
 * another session's; *added is that growth (an estimate: other threads of
 * the server may allocate meanwhile). */
static TRITONSERVER_Error *session_create(ort_model_t *m,
                                          TRITONSERVER_InstanceGroupKind kind,
                                          int32_t device, OrtSession **out,
                                          uint64_t *added) {
  OrtSessionOptions *o = NULL;
  TRITONSERVER_Error *e;
  uint64_t before, after;
  e = session_options(m, kind, device, &o);
  if (e != NULL) return e;
  pthread_mutex_lock(&m->backend->load_mu);
  before = rss_bytes();
  e = ifd_ort_err(ifd_ort->CreateSession(m->backend->env, m->path, o, out));
  after = rss_bytes();
  pthread_mutex_unlock(&m->backend->load_mu);
  ifd_ort->ReleaseSessionOptions(o);
  if (added != NULL) *added = after > before ? after - before : 0;
  return e;
}

/* ---- the model file --------------------------------------------------------
 */

/* <repository>/<version>/<default_model_filename or model.onnx>, and
 * <that>/model.onnx when it is a folder (a model with external weights). */
static TRITONSERVER_Error *model_path(ort_model_t *m) {
  TRITONBACKEND_ArtifactType type;
  const char *repo = NULL;
  const char *file = member_str(m->config, "default_model_filename");
  uint64_t version = 0;
  struct stat st;
  char *p = NULL;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelRepository(m->tm, &type, &repo);
  if (e == NULL) e = TRITONBACKEND_ModelVersion(m->tm, &version);
  if (e != NULL) return e;
  if (type != TRITONBACKEND_ARTIFACT_FILESYSTEM)
    return ifd_ort_errf(TRITONSERVER_ERROR_UNSUPPORTED,
                        "unsupported artifact type for model '%s'", m->name);
  if (file == NULL || file[0] == '\0') file = "model.onnx";
  if (asprintf(&p, "%s/%llu/%s", repo, (unsigned long long)version, file) < 0)
    return ifd_ort_errf(ERR_INTERNAL, "out of memory");
  if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
    char *q = NULL;
    if (asprintf(&q, "%s/model.onnx", p) < 0) q = NULL;
    free(p);
    if (q == NULL) return ifd_ort_errf(ERR_INTERNAL, "out of memory");
    p = q;
  }
  free(m->path);
  m->path = p;
  if (access(p, F_OK) != 0)
    return ifd_ort_errf(TRITONSERVER_ERROR_UNAVAILABLE,
                        "unable to find '%s' for model instance '%s'", p,
                        m->name);
  return NULL;
}

/* ---- auto-complete
 * ----------------------------------------------------------- */

static json_t *dims_json(const int64_t *d, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a != NULL && i < n; i++)
    json_array_append_new(a, json_integer(d[i]));
  return a;
}

/* Triton's AutoCompleteIO: the model's tensors in the model's order; the
 * batch dimension left out when batching; a tensor with no dimension left
 * gets dims [1] (and an empty reshape when batching). */
static TRITONSERVER_Error *complete_io(ort_model_t *m, const char *key,
                                       const ort_io_list_t *ios) {
  json_t *arr = json_array();
  if (arr == NULL) return ifd_ort_errf(ERR_INTERNAL, "out of memory");
  for (size_t i = 0; i < ios->n_graph; i++) {
    const ort_io_t *io = &ios->v[i];
    size_t skip = m->max_batch_size > 0 ? 1 : 0;
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(io->name));
    json_object_set_new(o, "data_type",
                        json_string(ifd_ort_config_name(io->otype)));
    if (io->n_dims > skip) {
      json_object_set_new(o, "dims",
                          dims_json(io->dims + skip, io->n_dims - skip));
    } else {
      int64_t one = 1;
      json_object_set_new(o, "dims", dims_json(&one, 1));
      if (m->max_batch_size > 0) {
        json_t *r = json_object();
        json_object_set_new(r, "shape", json_array());
        json_object_set_new(o, "reshape", r);
      }
    }
    json_array_append_new(arr, o);
  }
  json_object_set_new(m->config, key, arr);
  return NULL;
}

static int all_batchable(const ort_io_list_t *l) {
  for (size_t i = 0; i < l->n_graph; i++)
    if (l->v[i].n_dims == 0 || l->v[i].dims[0] != -1) return 0;
  return 1;
}

/* Triton's AutoCompleteMaxBatch. */
static TRITONSERVER_Error *complete_max_batch(ort_model_t *m,
                                              const ort_io_list_t *in,
                                              const ort_io_list_t *out) {
  if (all_batchable(in) && all_batchable(out)) {
    if (m->max_batch_size == 0) {
      int mbs = m->backend->default_max_batch_size;
      m->max_batch_size = mbs > 0 ? mbs : 0;
      json_object_set_new(m->config, "max_batch_size",
                          json_integer(m->max_batch_size));
      ifd_ort_log(TRITONSERVER_LOG_WARN,
                  "autofilled max_batch_size to %d for model '%s' since "
                  "batching is supporrted but no max_batch_size is specified "
                  "in model configuration. Must specify max_batch_size to "
                  "utilize autofill with a larger max batch size",
                  m->max_batch_size, m->name);
    }
    if (m->max_batch_size > 1 &&
        json_object_get(m->config, "sequence_batching") == NULL &&
        json_object_get(m->config, "dynamic_batching") == NULL)
      json_object_set_new(m->config, "dynamic_batching", json_object());
  } else if (m->max_batch_size != 0) {
    return ifd_ort_errf(ERR_ARG,
                        "autofill failed for model '%s': model does not "
                        "support batching while non-zero max_batch_size is "
                        "specified",
                        m->name);
  }
  return NULL;
}

static size_t array_size(const json_t *o, const char *key) {
  const json_t *a = json_object_get(o, key);
  return json_is_array(a) ? json_array_size(a) : 0;
}

static TRITONSERVER_Error *auto_complete(ort_model_t *m) {
  size_t n_in =
      array_size(m->config, "input") + array_size(m->config, "batch_input");
  size_t n_out = array_size(m->config, "output");
  ort_io_list_t in = {0}, out = {0};
  OrtSession *s = NULL;
  OrtAllocator *alloc = NULL;
  TRITONSERVER_Error *e;

  if (n_in > 0 && n_out > 0) {
    ifd_ort_log(TRITONSERVER_LOG_INFO,
                "skipping model configuration auto-complete for '%s': inputs "
                "and outputs already specified",
                m->name);
    return NULL;
  }
  e = session_create(m, TRITONSERVER_INSTANCEGROUPKIND_CPU, 0, &s, NULL);
  if (e == NULL)
    e = ifd_ort_err(ifd_ort->GetAllocatorWithDefaultOptions(&alloc));
  if (e == NULL) e = ifd_ort_read_ios(s, alloc, 0, &in);
  if (e == NULL) e = ifd_ort_read_ios(s, alloc, 1, &out);
  if (e == NULL) e = complete_max_batch(m, &in, &out);
  if (e == NULL && n_in == 0) e = complete_io(m, "input", &in);
  if (e == NULL && n_out == 0) e = complete_io(m, "output", &out);
  if (e == NULL) {
    char *text = json_dumps(m->config, JSON_COMPACT);
    TRITONSERVER_Message *msg = NULL;
    if (text == NULL) return ifd_ort_errf(ERR_INTERNAL, "out of memory");
    e = TRITONSERVER_MessageNewFromSerializedJson(&msg, text, strlen(text));
    if (e == NULL) e = TRITONBACKEND_ModelSetConfig(m->tm, 1, msg);
    if (msg != NULL) TRITONSERVER_ErrorDelete(TRITONSERVER_MessageDelete(msg));
    if (e == NULL)
      ifd_ort_log(TRITONSERVER_LOG_VERBOSE, "post auto-complete:\n%s", text);
    free(text);
  }
  ifd_ort_io_free(&in);
  ifd_ort_io_free(&out);
  if (s != NULL) ifd_ort->ReleaseSession(s);
  return e;
}

/* ---- the model
 * ----------------------------------------------------------------- */

static TRITONSERVER_Error *read_config(ort_model_t *m) {
  TRITONSERVER_Message *msg = NULL;
  const char *buf = NULL;
  size_t len = 0;
  json_error_t jerr;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelConfig(m->tm, 1, &msg);
  if (e == NULL) e = TRITONSERVER_MessageSerializeToJson(msg, &buf, &len);
  if (e == NULL) {
    json_decref(m->config);
    m->config = json_loadb(buf, len, 0, &jerr);
    if (m->config == NULL)
      e = ifd_ort_errf(ERR_INTERNAL, "model configuration of '%s': %s", m->name,
                       jerr.text);
  }
  if (msg != NULL) TRITONSERVER_ErrorDelete(TRITONSERVER_MessageDelete(msg));
  if (e == NULL)
    m->max_batch_size = (int)member_int(m->config, "max_batch_size", 0);
  return e;
}

static ort_out_t *out_find(ort_model_t *m, const char *name) {
  for (size_t i = 0; i < m->n_outs; i++)
    if (strcmp(m->outs[i].name, name) == 0) return &m->outs[i];
  return NULL;
}

/* Adds (or marks) the output `name`. */
static TRITONSERVER_Error *out_add(ort_model_t *m, const json_t *io,
                                   int state) {
  const char *name = member_str(io, state ? "output_name" : "name");
  ort_out_t *o, *grown;
  TRITONSERVER_Error *e;
  if (name == NULL)
    return ifd_ort_errf(ERR_ARG, "an output of model '%s' has no name",
                        m->name);
  o = out_find(m, name);
  if (o == NULL) {
    grown = realloc(m->outs, (m->n_outs + 1) * sizeof(*grown));
    if (grown == NULL) return ifd_ort_errf(ERR_INTERNAL, "out of memory");
    m->outs = grown;
    o = &m->outs[m->n_outs];
    memset(o, 0, sizeof(*o));
    o->name = strdup(name);
    if (o->name == NULL) return ifd_ort_errf(ERR_INTERNAL, "out of memory");
    m->n_outs++;
    o->dtype =
        ifd_ort_to_triton(ifd_ort_from_config(member_str(io, "data_type")));
    e = config_shape(io, &o->shape, &o->n_shape);
    if (e != NULL) return e;
    o->fixed_shape = 1;
    for (size_t i = 0; i < o->n_shape; i++)
      if (o->shape[i] < 0) o->fixed_shape = 0;
  }
  if (state)
    o->is_state = 1;
  else
    o->is_output = 1;
  return NULL;
}

static TRITONSERVER_Error *outs_read(ort_model_t *m) {
  const json_t *outs = json_object_get(m->config, "output");
  const json_t *states =
      json_object_get(json_object_get(m->config, "sequence_batching"), "state");
  TRITONSERVER_Error *e = NULL;
  size_t i;
  for (i = 0; e == NULL && i < array_size(m->config, "output"); i++)
    e = out_add(m, json_array_get(outs, i), 0);
  for (i = 0; e == NULL && json_is_array(states) && i < json_array_size(states);
       i++)
    e = out_add(m, json_array_get(states, i), 1);
  return e;
}

/* The first string of array `key` of o, or NULL. */
static const char *first_str(const json_t *o, const char *key) {
  const json_t *a = json_object_get(o, key);
  const json_t *v = json_is_array(a) ? json_array_get(a, 0) : NULL;
  return json_is_string(v) ? json_string_value(v) : NULL;
}

/* batch_input and batch_output (Triton's ragged batching). */
static TRITONSERVER_Error *batch_io_read(ort_model_t *m) {
  static const char *const kinds[] = {
      "BATCH_ELEMENT_COUNT",
      "BATCH_ACCUMULATED_ELEMENT_COUNT",
      "BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO",
      "BATCH_MAX_ELEMENT_COUNT_AS_SHAPE",
      "BATCH_ITEM_SHAPE",
      "BATCH_ITEM_SHAPE_FLATTEN"};
  const json_t *bis = json_object_get(m->config, "batch_input");
  const json_t *bos = json_object_get(m->config, "batch_output");
  size_t n = array_size(m->config, "batch_input");
  if (n > 0) {
    m->batch_inputs = calloc(n, sizeof(*m->batch_inputs));
    if (m->batch_inputs == NULL)
      return ifd_ort_errf(ERR_INTERNAL, "out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    const json_t *bi = json_array_get(bis, i);
    const json_t *targets = json_object_get(bi, "target_name");
    const char *kind = member_str(bi, "kind");
    const char *source = first_str(bi, "source_input");
    ort_batch_input_t *b = &m->batch_inputs[i];
    size_t k;
    m->n_batch_inputs++;
    for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
      if (kind != NULL && strcmp(kind, kinds[k]) == 0) break;
    if (k == sizeof(kinds) / sizeof(kinds[0]))
      return ifd_ort_errf(ERR_ARG, "unexpected batch input kind '%s'",
                          kind != NULL ? kind : "");
    if (source == NULL)
      return ifd_ort_errf(ERR_ARG,
                          "batch input %zu of model '%s' names no source_input",
                          i, m->name);
    b->kind = (ort_batch_kind_t)k;
    b->dtype =
        ifd_ort_to_triton(ifd_ort_from_config(member_str(bi, "data_type"))) ==
                TRITONSERVER_TYPE_FP32
            ? TRITONSERVER_TYPE_FP32
            : TRITONSERVER_TYPE_INT32;
    b->source = strdup(source);
    b->n_targets = json_is_array(targets) ? json_array_size(targets) : 0;
    b->targets = calloc(b->n_targets + 1, sizeof(char *));
    if (b->source == NULL || b->targets == NULL)
      return ifd_ort_errf(ERR_INTERNAL, "out of memory");
    for (size_t t = 0; t < b->n_targets; t++) {
      const json_t *v = json_array_get(targets, t);
      b->targets[t] = strdup(json_is_string(v) ? json_string_value(v) : "");
      if (b->targets[t] == NULL)
        return ifd_ort_errf(ERR_INTERNAL, "out of memory");
    }
  }
  for (size_t i = 0; i < array_size(m->config, "batch_output"); i++) {
    const json_t *bo = json_array_get(bos, i);
    const char *kind = member_str(bo, "kind");
    const char *target = first_str(bo, "target_name");
    const char *source = first_str(bo, "source_input");
    ort_out_t *o;
    if (kind == NULL || strcmp(kind, "BATCH_SCATTER_WITH_INPUT_SHAPE") != 0)
      return ifd_ort_errf(ERR_ARG, "unexpected batch output kind '%s'",
                          kind != NULL ? kind : "");
    o = target != NULL ? out_find(m, target) : NULL;
    if (o == NULL || source == NULL)
      return ifd_ort_errf(ERR_ARG,
                          "batch output %zu of model '%s' must name one of "
                          "its outputs and a source_input",
                          i, m->name);
    free(o->scatter_source);
    o->scatter_source = strdup(source);
    if (o->scatter_source == NULL)
      return ifd_ort_errf(ERR_INTERNAL, "out of memory");
  }
  return NULL;
}

TRITONSERVER_Error *ifd_ort_model_new(ort_backend_t *b, TRITONBACKEND_Model *tm,
                                      ort_model_t **out) {
  ort_model_t *m = calloc(1, sizeof(*m));
  const char *name = NULL;
  bool ac = false;
  TRITONSERVER_Error *e;
  if (m == NULL) return ifd_ort_errf(ERR_INTERNAL, "out of memory");
  m->backend = b;
  m->tm = tm;
  pthread_mutex_init(&m->mu, NULL);
  e = TRITONBACKEND_ModelName(tm, &name);
  if (e == NULL && (m->name = strdup(name)) == NULL)
    e = ifd_ort_errf(ERR_INTERNAL, "out of memory");
  if (e == NULL) e = read_config(m);
  if (e == NULL) e = settings_read(m->config, &m->settings);
  if (e == NULL) e = model_path(m);
  if (e == NULL) e = TRITONBACKEND_ModelAutoCompleteConfig(tm, &ac);
  if (e == NULL && ac) {
    e = auto_complete(m);
    if (e == NULL) e = read_config(m);
  }
  if (e == NULL) e = outs_read(m);
  if (e == NULL) e = batch_io_read(m);
  if (e != NULL) {
    ifd_ort_model_free(m);
    return e;
  }
  *out = m;
  return NULL;
}

void ifd_ort_model_free(ort_model_t *m) {
  if (m == NULL) return;
  for (size_t i = 0; i < m->n_outs; i++) {
    free(m->outs[i].name);
    free(m->outs[i].shape);
    free(m->outs[i].scatter_source);
  }
  for (size_t i = 0; i < m->n_batch_inputs; i++) {
    for (size_t t = 0; t < m->batch_inputs[i].n_targets; t++)
      free(m->batch_inputs[i].targets[t]);
    free(m->batch_inputs[i].targets);
    free(m->batch_inputs[i].source);
  }
  free(m->batch_inputs);
  for (size_t i = 0; i < m->n_shared; i++) {
    free(m->shared[i].group);
    if (m->shared[i].session != NULL)
      ifd_ort->ReleaseSession(m->shared[i].session);
  }
  free(m->shared);
  free(m->outs);
  settings_free(&m->settings);
  json_decref(m->config);
  pthread_mutex_destroy(&m->mu);
  free(m->path);
  free(m->name);
  free(m);
}

/* ---- checking the configuration against the session ------------------------
 */

/* Triton's CompareDimsSupported (backend_common.h). */
static TRITONSERVER_Error *compare_dims(const ort_model_t *m,
                                        const char *tensor, const ort_io_t *io,
                                        const int64_t *dims, size_t n,
                                        int exact) {
  char a[256], b[256];
  int64_t full[65];
  size_t nf = 0, i;
  int ok;
  if (m->max_batch_size > 0) {
    if (io->n_dims == 0 || io->dims[0] != -1)
      return ifd_ort_errf(
          ERR_ARG,
          "model '%s', tensor '%s': for the model to support "
          "batching the shape should have at least 1 "
          "dimension and the first dimension must be -1; but "
          "shape expected by the model is %s",
          m->name, tensor,
          ifd_ort_shape_str(io->dims, io->n_dims, a, sizeof(a)));
    if (n + 1 > sizeof(full) / sizeof(full[0]))
      return ifd_ort_errf(ERR_ARG, "model '%s', tensor '%s': too many dims",
                          m->name, tensor);
    full[nf++] = -1;
  }
  for (i = 0; i < n && nf < sizeof(full) / sizeof(full[0]); i++)
    full[nf++] = dims[i];
  ok = io->n_dims == nf;
  for (i = 0; ok && i < nf; i++)
    if (exact || io->dims[i] != -1) ok = io->dims[i] == full[i];
  if (ok) return NULL;
  if (m->max_batch_size > 0)
    return ifd_ort_errf(
        ERR_ARG,
        "model '%s', tensor '%s': the model expects %zu dimensions (shape "
        "%s) but the model configuration specifies %zu dimensions (an "
        "initial batch dimension because max_batch_size > 0 followed by the "
        "explicit tensor shape, making complete shape %s)",
        m->name, tensor, io->n_dims,
        ifd_ort_shape_str(io->dims, io->n_dims, a, sizeof(a)), nf,
        ifd_ort_shape_str(full, nf, b, sizeof(b)));
  return ifd_ort_errf(ERR_ARG,
                      "model '%s', tensor '%s': the model expects %zu "
                      "dimensions (shape %s) but the model configuration "
                      "specifies %zu dimensions (shape %s)",
                      m->name, tensor, io->n_dims,
                      ifd_ort_shape_str(io->dims, io->n_dims, a, sizeof(a)), n,
                      ifd_ort_shape_str(dims, n, b, sizeof(b)));
}

/* "unexpected inference input 'x', allowed inputs are: a, b" (names
 * sorted, as Triton lists them from a std::set). */
static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static TRITONSERVER_Error *not_allowed(const char *what, const char *name,
                                       const ort_io_list_t *l) {
  const char **names = calloc(l->n + 1, sizeof(char *));
  char list[1024];
  size_t len = 0;
  if (names == NULL) return ifd_ort_errf(ERR_INTERNAL, "out of memory");
  for (size_t i = 0; i < l->n; i++) names[i] = l->v[i].name;
  qsort(names, l->n, sizeof(char *), cmp_str);
  list[0] = '\0';
  for (size_t i = 0; i < l->n && len < sizeof(list); i++)
    len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
                            i ? ", " : "", names[i]);
  free(names);
  return ifd_ort_errf(ERR_ARG,
                      "unexpected inference %s '%s', allowed %ss are: %s", what,
                      name, what, list);
}

/* The type check of one configuration tensor against the model's. */
static TRITONSERVER_Error *check_type(const ort_model_t *m, const char *what,
                                      const char *name, const char *dtype,
                                      const ort_io_t *io) {
  ONNXTensorElementDataType t = ifd_ort_from_config(dtype);
  if (t == ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED)
    return ifd_ort_errf(ERR_INTERNAL,
                        "unsupported datatype %s for %s '%s' for "
                        "model '%s'",
                        dtype != NULL ? dtype : "(none)", what, name, m->name);
  if (t != io->otype)
    return ifd_ort_errf(ERR_ARG,
                        "unable to load model '%s', configuration expects "
                        "datatype %s for %s '%s', model provides %s",
                        m->name, dtype, what, name,
                        ifd_ort_config_name(io->otype));
  return NULL;
}

/* A scalar model tensor: every configured dim must be 1. */
static TRITONSERVER_Error *check_scalar(const ort_model_t *m, const char *name,
                                        const int64_t *dims, size_t n) {
  char a[256];
  for (size_t i = 0; i < n; i++)
    if (dims[i] != 1)
      return ifd_ort_errf(ERR_ARG,
                          "unable to load model '%s', scalar tensor '%s', "
                          "should only provide 1 in the model configuration "
                          "when the model doesn't support batching. Model "
                          "configuration provided: %s.",
                          m->name, name,
                          ifd_ort_shape_str(dims, n, a, sizeof(a)));
  return NULL;
}

static TRITONSERVER_Error *check_inputs(const ort_instance_t *in,
                                        size_t expected) {
  const ort_model_t *m = in->model;
  const json_t *ios = json_object_get(m->config, "input");
  char a[256];
  if (in->inputs.n_graph != expected)
    return ifd_ort_errf(ERR_ARG,
                        "unable to load model '%s', configuration expects %zu "
                        "inputs, model provides %zu",
                        m->name, expected, in->inputs.n_graph);
  for (size_t i = 0; json_is_array(ios) && i < json_array_size(ios); i++) {
    const json_t *io = json_array_get(ios, i);
    const char *name = member_str(io, "name");
    const ort_io_t *mio;
    int64_t *dims = NULL;
    size_t n = 0;
    TRITONSERVER_Error *e;
    int optional = member_bool(io, "optional");
    int ragged = member_bool(io, "allow_ragged_batch");
    if (name == NULL) continue;
    if (optional && m->max_batch_size != 0)
      return ifd_ort_errf(ERR_ARG,
                          "unable to load model '%s', optional input '%s' is "
                          "not supported for models that support batching",
                          m->name, name);
    mio = ifd_ort_io_find(&in->inputs, name);
    if (mio == NULL) return not_allowed("input", name, &in->inputs);
    e = check_type(m, "input", name, member_str(io, "data_type"), mio);
    if (e == NULL) e = config_shape(io, &dims, &n);
    if (e == NULL && optional && ragged)
      e = ifd_ort_errf(ERR_ARG,
                       "unable to load model '%s', configuration expects "
                       "model provides input with shape [-1] for ragged "
                       "input '%s', which is not supported for optional input",
                       m->name, name);
    if (e == NULL && ragged) {
      if (mio->n_dims != 1 || mio->dims[0] != -1)
        e = ifd_ort_errf(
            ERR_ARG,
            "unable to load model '%s', configuration expects "
            "model provides input with shape [-1]  for ragged "
            "input '%s', model provides %s",
            m->name, name,
            ifd_ort_shape_str(mio->dims, mio->n_dims, a, sizeof(a)));
    } else if (e == NULL) {
      e = mio->n_dims != 0 ? compare_dims(m, name, mio, dims, n, 0)
                           : check_scalar(m, name, dims, n);
    }
    free(dims);
    if (e != NULL) return e;
  }
  return NULL;
}

static TRITONSERVER_Error *check_outputs(ort_instance_t *in) {
  ort_model_t *m = in->model;
  const json_t *ios = json_object_get(m->config, "output");
  const json_t *states =
      json_object_get(json_object_get(m->config, "sequence_batching"), "state");
  for (size_t i = 0; json_is_array(ios) && i < json_array_size(ios); i++) {
    const json_t *io = json_array_get(ios, i);
    const char *name = member_str(io, "name");
    const ort_io_t *mio;
    int64_t *dims = NULL;
    size_t n = 0;
    TRITONSERVER_Error *e;
    if (name == NULL) continue;
    mio = ifd_ort_io_find(&in->outputs, name);
    if (mio == NULL) return not_allowed("output", name, &in->outputs);
    e = check_type(m, "output", name, member_str(io, "data_type"), mio);
    if (e == NULL) e = config_shape(io, &dims, &n);
    /* A batch output's shape need not match the model's. */
    if (e == NULL && out_find(m, name)->scatter_source == NULL)
      e = mio->n_dims != 0 ? compare_dims(m, name, mio, dims, n, 1)
                           : check_scalar(m, name, dims, n);
    free(dims);
    if (e != NULL) return e;
  }
  for (size_t i = 0; json_is_array(states) && i < json_array_size(states);
       i++) {
    const json_t *st = json_array_get(states, i);
    const char *name = member_str(st, "output_name");
    const char *dtype = member_str(st, "data_type");
    const ort_io_t *mio;
    TRITONSERVER_Error *e;
    if (name == NULL) continue;
    mio = ifd_ort_io_find(&in->outputs, name);
    if (mio == NULL) return not_allowed("output", name, &in->outputs);
    if (ifd_ort_from_config(dtype) == ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED)
      return ifd_ort_errf(ERR_INTERNAL,
                          "unsupported datatype %s for output state '%s' for "
                          "model '%s'",
                          dtype != NULL ? dtype : "(none)", name, m->name);
    e = check_type(m, "output state", name, dtype, mio);
    if (e != NULL) return e;
  }
  /* Where each produced output sits among the model's outputs, and which
   * are scalars (their shape then comes from the configuration). */
  in->out_index = calloc(m->n_outs + 1, sizeof(size_t));
  if (in->out_index == NULL) return ifd_ort_errf(ERR_INTERNAL, "out of memory");
  for (size_t i = 0; i < m->n_outs; i++) {
    const ort_io_t *mio = ifd_ort_io_find(&in->outputs, m->outs[i].name);
    in->out_index[i] = (size_t)(mio - in->outputs.v);
    m->outs[i].scalar = mio->n_dims == 0;
  }
  return NULL;
}

/* A sequence control: present in the model, dims [1], the control's type.
 * Returns 1 in *have when the configuration names one of `kind`. */
static TRITONSERVER_Error *check_control(const ort_instance_t *in,
                                         const char *kind, int *have) {
  const ort_model_t *m = in->model;
  const json_t *cis = json_object_get(
      json_object_get(m->config, "sequence_batching"), "control_input");
  char a[256];
  *have = 0;
  for (size_t i = 0; json_is_array(cis) && i < json_array_size(cis); i++) {
    const json_t *ci = json_array_get(cis, i);
    const json_t *cs = json_object_get(ci, "control");
    const char *name = member_str(ci, "name");
    for (size_t j = 0; json_is_array(cs) && j < json_array_size(cs); j++) {
      const json_t *c = json_array_get(cs, j);
      const char *k = member_str(c, "kind");
      const char *dtype = NULL;
      const ort_io_t *mio;
      size_t skip = m->max_batch_size > 0 ? 1 : 0;
      if (k == NULL || strcmp(k, kind) != 0 || name == NULL) continue;
      *have = 1;
      if (array_size(c, "int32_false_true") > 0)
        dtype = "TYPE_INT32";
      else if (array_size(c, "fp32_false_true") > 0)
        dtype = "TYPE_FP32";
      else if (array_size(c, "bool_false_true") > 0)
        dtype = "TYPE_BOOL";
      else
        dtype = member_str(c, "data_type");
      mio = ifd_ort_io_find(&in->inputs, name);
      if (mio == NULL)
        return ifd_ort_errf(ERR_INTERNAL,
                            "configuration specified sequence control '%s', "
                            "but model does not provide that input",
                            name);
      if (mio->n_dims != skip + 1 || mio->dims[skip] != 1)
        return ifd_ort_errf(
            ERR_ARG,
            "unable to load model '%s', sequence control '%s' in model has "
            "dims %s but dims [1] is expected",
            m->name, name,
            ifd_ort_shape_str(mio->dims + (mio->n_dims >= skip ? skip : 0),
                              mio->n_dims >= skip ? mio->n_dims - skip : 0, a,
                              sizeof(a)));
      if (ifd_ort_from_config(dtype) != mio->otype)
        return ifd_ort_errf(ERR_ARG,
                            "unable to load model '%s', sequence control '%s', "
                            "the model expects data-type %s but the model "
                            "configuration specifies data-type %s",
                            m->name, name, ifd_ort_onnx_name(mio->otype),
                            dtype != NULL ? dtype : "(none)");
      return NULL;
    }
  }
  return NULL;
}

static TRITONSERVER_Error *check_config(ort_instance_t *in) {
  const ort_model_t *m = in->model;
  const json_t *ios = json_object_get(m->config, "input");
  const json_t *seq = json_object_get(m->config, "sequence_batching");
  static const char *const kinds[] = {
      "CONTROL_SEQUENCE_START", "CONTROL_SEQUENCE_END",
      "CONTROL_SEQUENCE_READY", "CONTROL_SEQUENCE_CORRID"};
  size_t expected = 0;
  TRITONSERVER_Error *e;
  for (size_t i = 0; json_is_array(ios) && i < json_array_size(ios); i++)
    if (!member_bool(json_array_get(ios, i), "optional")) expected++;
  expected += array_size(m->config, "batch_input");
  if (seq != NULL) {
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
      int have = 0;
      e = check_control(in, kinds[k], &have);
      if (e != NULL) return e;
      expected += (size_t)have;
    }
    expected += array_size(seq, "state");
  }
  e = check_inputs(in, expected);
  if (e == NULL) e = check_outputs(in);
  return e;
}

/* ---- instances
 * ------------------------------------------------------------------- */

/* "m_0_1" -> "m_0": Triton names instance k of group g "<g>_<k>". */
static char *group_of(const char *instance) {
  char *g = strdup(instance);
  char *us = g != NULL ? strrchr(g, '_') : NULL;
  if (us != NULL && us != g && us[1] != '\0' &&
      strspn(us + 1, "0123456789") == strlen(us + 1))
    *us = '\0';
  return g;
}

/* The group's shared session, created by the first of its instances. */
static TRITONSERVER_Error *shared_session(ort_model_t *m, ort_instance_t *in,
                                          TRITONSERVER_InstanceGroupKind kind,
                                          int32_t device, uint64_t *added) {
  TRITONSERVER_Error *e = NULL;
  size_t i;
  in->group = group_of(in->name);
  if (in->group == NULL) return ifd_ort_errf(ERR_INTERNAL, "out of memory");
  pthread_mutex_lock(&m->mu);
  for (i = 0; i < m->n_shared; i++)
    if (strcmp(m->shared[i].group, in->group) == 0) break;
  if (i == m->n_shared) {
    ort_shared_t *grown =
        realloc(m->shared, (m->n_shared + 1) * sizeof(*grown));
    OrtSession *s = NULL;
    if (grown == NULL) {
      e = ifd_ort_errf(ERR_INTERNAL, "out of memory");
      goto out_unlock;
    }
    m->shared = grown;
    e = session_create(m, kind, device, &s, added);
    if (e != NULL) goto out_unlock;
    grown[i].group = strdup(in->group);
    grown[i].session = s;
    grown[i].refs = 0;
    m->n_shared++;
    ifd_ort_log(TRITONSERVER_LOG_INFO, "Mapped session for instance group: %s",
                in->group);
  } else {
    ifd_ort_log(TRITONSERVER_LOG_INFO, "Reusing session for instance: %s",
                in->name);
  }
  m->shared[i].refs++;
  in->session = m->shared[i].session;
out_unlock:
  pthread_mutex_unlock(&m->mu);
  return e;
}

static void shared_release(ort_model_t *m, ort_instance_t *in) {
  pthread_mutex_lock(&m->mu);
  for (size_t i = 0; i < m->n_shared; i++)
    if (strcmp(m->shared[i].group, in->group) == 0 &&
        --m->shared[i].refs == 0) {
      ifd_ort->ReleaseSession(m->shared[i].session);
      free(m->shared[i].group);
      m->shared[i] = m->shared[--m->n_shared];
      break;
    }
  pthread_mutex_unlock(&m->mu);
}

TRITONSERVER_Error *ifd_ort_instance_new(ort_model_t *m,
                                         TRITONBACKEND_ModelInstance *ti,
                                         ort_instance_t **out) {
  ort_instance_t *in = calloc(1, sizeof(*in));
  TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
  int32_t device = 0;
  const char *name = NULL;
  uint64_t added = 0;
  TRITONSERVER_Error *e;
  if (in == NULL) return ifd_ort_errf(ERR_INTERNAL, "out of memory");
  in->model = m;
  e = TRITONBACKEND_ModelInstanceName(ti, &name);
  if (e == NULL) e = TRITONBACKEND_ModelInstanceKind(ti, &kind);
  if (e == NULL) e = TRITONBACKEND_ModelInstanceDeviceId(ti, &device);
  if (e == NULL && (in->name = strdup(name)) == NULL)
    e = ifd_ort_errf(ERR_INTERNAL, "out of memory");
  if (e == NULL) {
    if (m->settings.share_session)
      e = shared_session(m, in, kind, device, &added);
    else
      e = session_create(m, kind, device, &in->session, &added);
  }
  if (e == NULL)
    e = ifd_ort_err(ifd_ort->GetAllocatorWithDefaultOptions(&in->alloc));
  if (e == NULL)
    e = ifd_ort_err(ifd_ort->CreateCpuMemoryInfo(
        OrtArenaAllocator, OrtMemTypeDefault, &in->cpu_info));
  if (e == NULL)
    e = ifd_ort_err(ifd_ort->CreateIoBinding(in->session, &in->binding));
  if (e == NULL) e = ifd_ort_err(ifd_ort->CreateRunOptions(&in->run_opts));
  if (e == NULL && m->settings.arena_shrinkage != NULL)
    e = ifd_ort_err(ifd_ort->AddRunConfigEntry(
        in->run_opts, "memory.enable_memory_arena_shrinkage",
        m->settings.arena_shrinkage));
  if (e == NULL) e = ifd_ort_read_ios(in->session, in->alloc, 0, &in->inputs);
  if (e == NULL) e = ifd_ort_read_ios(in->session, in->alloc, 1, &in->outputs);
  if (e == NULL) e = check_config(in);
  if (e == NULL && added > 0) {
    /* What creating the session added to the server's resident memory. */
    TRITONSERVER_BufferAttributes *ba = NULL;
    e = TRITONSERVER_BufferAttributesNew(&ba);
    if (e == NULL)
      e = TRITONSERVER_BufferAttributesSetMemoryType(ba,
                                                     TRITONSERVER_MEMORY_CPU);
    if (e == NULL) e = TRITONSERVER_BufferAttributesSetMemoryTypeId(ba, 0);
    if (e == NULL) e = TRITONSERVER_BufferAttributesSetByteSize(ba, added);
    if (e == NULL) e = TRITONBACKEND_ModelInstanceReportMemoryUsage(ti, &ba, 1);
    if (ba != NULL)
      TRITONSERVER_ErrorDelete(TRITONSERVER_BufferAttributesDelete(ba));
    /* A statistic, not a reason to refuse the model. */
    if (e != NULL) {
      ifd_ort_log(TRITONSERVER_LOG_WARN,
                  "memory usage of '%s' not reported: %s", in->name,
                  TRITONSERVER_ErrorMessage(e));
      TRITONSERVER_ErrorDelete(e);
      e = NULL;
    }
  }
  if (e != NULL) {
    ifd_ort_instance_free(in);
    return e;
  }
  *out = in;
  return NULL;
}

void ifd_ort_instance_free(ort_instance_t *in) {
  if (in == NULL) return;
  if (in->binding != NULL) ifd_ort->ReleaseIoBinding(in->binding);
  if (in->run_opts != NULL) ifd_ort->ReleaseRunOptions(in->run_opts);
  if (in->cpu_info != NULL) ifd_ort->ReleaseMemoryInfo(in->cpu_info);
  if (in->session != NULL) {
    if (in->group != NULL)
      shared_release(in->model, in);
    else
      ifd_ort->ReleaseSession(in->session);
  }
  ifd_ort_io_free(&in->inputs);
  ifd_ort_io_free(&in->outputs);
  free(in->out_index);
  free(in->group);
  free(in->name);
  free(in);
}
