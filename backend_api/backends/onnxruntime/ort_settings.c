/*
 * backend_api/backends/onnxruntime/ort_settings.c - what a model's
 * configuration asks of its ONNX Runtime sessions: Triton's ORT parameters
 * (thread counts, execution mode, memory arena and pattern, session config
 * entries, arena shrinkage, shared sessions), the graph optimization level,
 * execution accelerators, custom op libraries and the CUDA provider's
 * options; and the creation of a session with them.
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

/* ---- settings -------------------------------------------------------------
 */

void ifd_ort_settings_free(ort_settings_t *s) {
  for (size_t i = 0; i < s->n_session; i++) {
    free(s->session_keys[i]);
    free(s->session_values[i]);
  }
  free(s->session_keys);
  free(s->session_values);
  free(s->arena_shrinkage);
  memset(s, 0, sizeof(*s));
}

TRITONSERVER_Error *ifd_ort_settings_read(const json_t *config,
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
    long long level = ifd_ort_member_int(graph, "level", 0);
    if (level == -1)
      s->graph_level = ORT_ENABLE_BASIC;
    else if (level == 1)
      s->graph_level = ORT_ENABLE_EXTENDED;
    else if (level == 2)
      s->graph_level = ORT_DISABLE_ALL;
  }
  e = ifd_ort_param_int(config, "execution_mode", 0, &s->execution_mode);
  if (e == NULL && s->execution_mode != 0 && s->execution_mode != 1)
    e = ifd_be_errf(ERR_ARG,
                    "Invalid configuration value provided. Expected values "
                    "for execution_mode are 0 or 1 but got %d .",
                    s->execution_mode);
  if (e == NULL)
    e = ifd_ort_param_int(config, "intra_op_thread_count", 0, &s->intra_op);
  if (e == NULL)
    e = ifd_ort_param_int(config, "inter_op_thread_count", 0, &s->inter_op);
  if (e == NULL)
    e = ifd_ort_param_bool(config, "enable_mem_arena", &s->mem_arena);
  if (e == NULL)
    e = ifd_ort_param_bool(config, "enable_mem_pattern", &s->mem_pattern);
  if (e == NULL) {
    int b = -1;
    e = ifd_ort_param_bool(config, "share_session_between_instances", &b);
    share = b == 1;
  }
  if (e != NULL) return e;
  s->share_session = share;
  if (ifd_ort_param(config, "memory.enable_memory_arena_shrinkage") != NULL) {
    s->arena_shrinkage =
        strdup(ifd_ort_param(config, "memory.enable_memory_arena_shrinkage"));
    if (s->arena_shrinkage == NULL) goto out_oom;
  }
  /* Every "session.*" parameter is an ONNX Runtime session config entry
   * (session.use_device_allocator_for_initializers, session.intra_op.
   * allow_spinning, ...): ONNX Runtime checks the keys it knows. */
  json_object_foreach((json_t *)params, key, v) {
    const char *val = ifd_ort_member_str(v, "string_value");
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
  ifd_ort_settings_free(s);
  return ifd_be_errf(ERR_INTERNAL, "out of memory");
}

/* optimization { execution_accelerators { cpu_execution_accelerator } }:
 * Triton's ORT backend knows "openvino" only when built with OpenVINO,
 * which this runtime is not; anything named is refused as Triton refuses
 * it. */
static TRITONSERVER_Error *cpu_accelerators(const ort_model_t *m) {
  const json_t *eas = json_object_get(
      json_object_get(json_object_get(m->config, "optimization"),
                      "execution_accelerators"),
      "cpu_execution_accelerator");
  for (size_t i = 0; json_is_array(eas) && i < json_array_size(eas); i++) {
    const char *name = ifd_ort_member_str(json_array_get(eas, i), "name");
    return ifd_be_errf(ERR_ARG,
                       "unknown Execution Accelerator '%s' is requested",
                       name != NULL ? name : "");
  }
  return NULL;
}

/* model_operations { op_library_filename }: libraries of custom
 * operators, registered with the session (ONNX Runtime loads and keeps
 * them). */
static TRITONSERVER_Error *custom_ops(const ort_model_t *m,
                                      OrtSessionOptions *o) {
  const json_t *libs = json_object_get(
      json_object_get(m->config, "model_operations"), "op_library_filename");
  for (size_t i = 0; json_is_array(libs) && i < json_array_size(libs); i++) {
    const json_t *v = json_array_get(libs, i);
    TRITONSERVER_Error *e;
    if (!json_is_string(v)) continue;
    e = ifd_ort_err(
        ifd_ort->RegisterCustomOpsLibrary_V2(o, json_string_value(v)));
    if (e != NULL) return e;
  }
  return NULL;
}

/* The CUDA provider's options for a KIND_GPU session: device_id, the
 * "cuda" gpu_execution_accelerator's parameters, and the deprecated model
 * parameters Triton still reads (cudnn_conv_algo_search, gpu_mem_limit,
 * arena_extend_strategy, do_copy_in_default_stream). */
static TRITONSERVER_Error *cuda_options(const ort_model_t *m, int32_t device,
                                        OrtCUDAProviderOptionsV2 *cuda) {
  const json_t *eas = json_object_get(
      json_object_get(json_object_get(m->config, "optimization"),
                      "execution_accelerators"),
      "gpu_execution_accelerator");
  static const char *const legacy[] = {"cudnn_conv_algo_search",
                                       "gpu_mem_limit", "arena_extend_strategy",
                                       "do_copy_in_default_stream"};
  static const char *const algo[] = {"EXHAUSTIVE", "HEURISTIC", "DEFAULT"};
  static const char *const arena[] = {"kNextPowerOfTwo", "kSameAsRequested"};
  const char *keys[64], *vals[64];
  char dev[16];
  size_t n = 0;
  snprintf(dev, sizeof(dev), "%d", (int)device);
  keys[n] = "device_id";
  vals[n++] = dev;
  for (size_t i = 0; json_is_array(eas) && i < json_array_size(eas); i++) {
    const json_t *ea = json_array_get(eas, i);
    const char *name = ifd_ort_member_str(ea, "name");
    const char *k;
    json_t *v;
    if (name == NULL || strcmp(name, "cuda") != 0)
      return ifd_be_errf(ERR_ARG,
                         "unknown Execution Accelerator '%s' is requested",
                         name != NULL ? name : "");
    json_object_foreach(json_object_get(ea, "parameters"), k, v) {
      if (json_is_string(v) && n < 64) {
        keys[n] = k;
        vals[n++] = json_string_value(v);
      }
    }
  }
  for (size_t i = 0; i < sizeof(legacy) / sizeof(legacy[0]) && n < 64; i++) {
    const char *v = ifd_ort_param(m->config, legacy[i]);
    if (v == NULL) continue;
    if (i == 0 || i == 2) {
      long x = strtol(v, NULL, 10);
      long max = i == 0 ? 2 : 1;
      if (x < 0 || x > max)
        return ifd_be_errf(ERR_ARG, "unsupported %s value '%s' is requested",
                           legacy[i], v);
      v = i == 0 ? algo[x] : arena[x];
    }
    keys[n] = legacy[i];
    vals[n++] = v;
  }
  return ifd_ort_err(ifd_ort->UpdateCUDAProviderOptions(cuda, keys, vals, n));
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
  if (e == NULL) e = cpu_accelerators(m);
  if (e == NULL) e = custom_ops(m, o);
  if (e == NULL && kind == TRITONSERVER_INSTANCEGROUPKIND_GPU) {
    /* The CUDA execution provider, where the runtime has it. The runtime
     * inferd installs (onnxruntime-node's) is CPU only. */
    int has_cuda = ifd_ort_has_cuda();
    if (e == NULL && !has_cuda)
      e = ifd_be_errf(ERR_ARG,
                      "unable to load model '%s': instance group kind "
                      "KIND_GPU needs ONNX Runtime's CUDA execution "
                      "provider, which the ONNX Runtime library loaded (%s) "
                      "cannot provide (%s); use KIND_CPU",
                      m->name, ifd_ort_version(), ifd_ort_no_cuda_reason());
    if (e == NULL) {
      OrtCUDAProviderOptionsV2 *cuda = NULL;
      e = ifd_ort_err(ifd_ort->CreateCUDAProviderOptions(&cuda));
      if (e == NULL) e = cuda_options(m, device, cuda);
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
TRITONSERVER_Error *ifd_ort_session_create(ort_model_t *m,
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
