/*
 * backend_api/capi/capi_options.c - TRITONSERVER_ServerOptions: what an
 * application sets before TRITONSERVER_ServerNew.
 *
 * Every setter of tritonserver.h exists. Those inferd has a meaning for are
 * stored and used by ServerNew (app/embed.c): repositories, model control,
 * startup models, strict config, exit on error, strict readiness, exit
 * timeout, backend directory, log and metrics settings, memory pools, the
 * repository agent directory, model namespacing, the response cache
 * (SetCacheConfig, SetCacheDirectory, the deprecated
 * SetResponseCacheByteSize), the rate limiter (SetRateLimiterMode,
 * AddRateLimiterResource).
 * Settings inferd has no use for but whose absence changes nothing an
 * application can observe (thread counts, the peer access switch, a server
 * id) are accepted with a warning logged once per process. Settings whose
 * acceptance would mislead fail with UNSUPPORTED, naming the option, so
 * the application learns at once.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <inttypes.h>
#include <string.h>

#include <jansson.h>

#include "backend_api/internal.h"
#include "base/log.h"

#define ERR(code, msg) TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_##code, (msg))

/* Logs once per process and call site that an option is accepted but has
 * no effect in inferd. */
#define WARN_ONCE(fn, why)                       \
  do {                                           \
    static atomic_int warned_;                   \
    if (atomic_exchange(&warned_, 1) == 0)       \
      IFD_WARN("%s: accepted, but %s", fn, why); \
  } while (0)

#define OPT_CHECK(o)                                                      \
  do {                                                                    \
    if ((o) == NULL) return ERR(INVALID_ARG, "options must not be NULL"); \
  } while (0)

static TRITONSERVER_Error *oom(void) {
  return ERR(INTERNAL, "out of memory");
}

/* Appends a copy of `s` to a string array. */
static TRITONSERVER_Error *push_str(char ***arr, size_t *n, const char *s) {
  char **grown, *copy;

  if (s == NULL) return ERR(INVALID_ARG, "the string must not be NULL");
  copy = strdup(s);
  if (copy == NULL) return oom();
  grown = realloc(*arr, (*n + 1) * sizeof(**arr));
  if (grown == NULL) {
    free(copy);
    return oom();
  }
  grown[(*n)++] = copy;
  *arr = grown;
  return NULL;
}

static void free_strs(char **arr, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) free(arr[i]);
  free(arr);
}

/* Appends (or, for a repeated group and setting, replaces) a setting. */
static TRITONSERVER_Error *push_setting(ifd__capi_setting_t **arr, size_t *n,
                                        const char *group, const char *setting,
                                        const char *value) {
  ifd__capi_setting_t *grown, t;
  size_t i;

  if (group == NULL || setting == NULL || value == NULL)
    return ERR(INVALID_ARG, "name, setting and value must not be NULL");
  t.group = strdup(group);
  t.setting = strdup(setting);
  t.value = strdup(value);
  if (t.group == NULL || t.setting == NULL || t.value == NULL) goto out_oom;
  for (i = 0; i < *n; i++) {
    if (strcmp((*arr)[i].group, group) == 0 &&
        strcmp((*arr)[i].setting, setting) == 0) {
      free(t.group);
      free(t.setting);
      free((*arr)[i].value);
      (*arr)[i].value = t.value;
      return NULL;
    }
  }
  grown = realloc(*arr, (*n + 1) * sizeof(**arr));
  if (grown == NULL) goto out_oom;
  grown[(*n)++] = t;
  *arr = grown;
  return NULL;

out_oom:
  free(t.group);
  free(t.setting);
  free(t.value);
  return oom();
}

static void free_settings(ifd__capi_setting_t *arr, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) {
    free(arr[i].group);
    free(arr[i].setting);
    free(arr[i].value);
  }
  free(arr);
}

int ifd__capi_default_backend_dir(char *out, size_t n) {
  Dl_info info;
  char dir[PATH_MAX];
  char *slash;
  size_t len;

  /* Where this very code was loaded from: libtritonserver.so, or the
   * executable that stands in for it. */
  if (dladdr((void *)ifd__capi_default_backend_dir, &info) == 0 ||
      info.dli_fname == NULL || realpath(info.dli_fname, dir) == NULL)
    return -1;
  slash = strrchr(dir, '/');
  if (slash == NULL) return -1;
  *slash = '\0';
  len = strlen(dir);
  /* <prefix>/lib/libtritonserver.so -> <prefix>/backends. */
  if (len >= 4 && strcmp(dir + len - 4, "/lib") == 0) dir[len - 4] = '\0';
  if ((size_t)snprintf(out, n, "%s/backends", dir) >= n) return -1;
  return 0;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsNew(
    TRITONSERVER_ServerOptions **options) {
  TRITONSERVER_ServerOptions *o;

  if (options == NULL) return ERR(INVALID_ARG, "options must not be NULL");
  o = calloc(1, sizeof(*o));
  if (o == NULL) return oom();
  /* Triton's defaults (its TritonServerOptions). */
  o->control_mode = IFD_CONTROL_NONE;
  o->strict_config = 1;
  o->exit_on_error = 1;
  o->strict_readiness = 1;
  o->exit_timeout_secs = 30;
  o->log_info = o->log_warn = o->log_error = 1;
  o->metrics = 1;
  o->gpu_metrics = 1;
  o->metrics_interval_ms = 2000;
  ifd_cuda_mem_opts_default(&o->cuda_mem);
  *options = o;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsDelete(
    TRITONSERVER_ServerOptions *options) {
  if (options == NULL) return NULL;
  free_strs(options->repos, options->n_repos);
  free_strs(options->startup_models, options->n_startup_models);
  free(options->backend_dir);
  free(options->repoagent_dir);
  free(options->log_file);
  free(options->server_id);
  free(options->model_config_name);
  free_settings(options->backend_config, options->n_backend_config);
  free_settings(options->host_policy, options->n_host_policy);
  for (size_t k = 0; k < options->n_rl_res; k++)
    free((char *)options->rl_res[k].name);
  free(options->rl_res);
  free_settings(options->cache_config, options->n_cache_config);
  free(options->cache_name);
  free(options->cache_dir);
  free(options);
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetServerId(
    TRITONSERVER_ServerOptions *options, const char *server_id) {
  OPT_CHECK(options);
  char *copy = strdup(server_id != NULL ? server_id : "");
  if (copy == NULL) return ERR(INTERNAL, "out of memory");
  free(options->server_id);
  options->server_id = copy;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetModelRepositoryPath(
    TRITONSERVER_ServerOptions *options, const char *model_repository_path) {
  OPT_CHECK(options);
  return push_str(&options->repos, &options->n_repos, model_repository_path);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetModelControlMode(
    TRITONSERVER_ServerOptions *options, TRITONSERVER_ModelControlMode mode) {
  OPT_CHECK(options);
  switch (mode) {
    case TRITONSERVER_MODEL_CONTROL_NONE:
      options->control_mode = IFD_CONTROL_NONE;
      return NULL;
    case TRITONSERVER_MODEL_CONTROL_POLL:
      options->control_mode = IFD_CONTROL_POLL;
      return NULL;
    case TRITONSERVER_MODEL_CONTROL_EXPLICIT:
      options->control_mode = IFD_CONTROL_EXPLICIT;
      return NULL;
  }
  return ERR(INVALID_ARG, "unknown model control mode");
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetStartupModel(
    TRITONSERVER_ServerOptions *options, const char *model_name) {
  OPT_CHECK(options);
  return push_str(&options->startup_models, &options->n_startup_models,
                  model_name);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetStrictModelConfig(
    TRITONSERVER_ServerOptions *options, bool strict) {
  OPT_CHECK(options);
  options->strict_config = strict;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetModelConfigName(
    TRITONSERVER_ServerOptions *options, const char *model_config_name) {
  OPT_CHECK(options);
  /* <model>/configs/<name>.pbtxt where it exists, else config.pbtxt. */
  char *copy = strdup(model_config_name != NULL ? model_config_name : "");
  if (copy == NULL) return ERR(INTERNAL, "out of memory");
  free(options->model_config_name);
  options->model_config_name = copy;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetRateLimiterMode(
    TRITONSERVER_ServerOptions *options, TRITONSERVER_RateLimitMode mode) {
  OPT_CHECK(options);
  if (mode != TRITONSERVER_RATE_LIMIT_OFF &&
      mode != TRITONSERVER_RATE_LIMIT_EXEC_COUNT)
    return ERR(INVALID_ARG, "invalid rate limit mode");
  options->rate_limit = mode == TRITONSERVER_RATE_LIMIT_EXEC_COUNT;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsAddRateLimiterResource(
    TRITONSERVER_ServerOptions *options, const char *resource_name,
    const size_t resource_count, const int device) {
  OPT_CHECK(options);
  ifd_rl_resource_t *nr;
  char *name;
  if (resource_name == NULL)
    return ERR(INVALID_ARG, "invalid argument: resource_name");
  if (device < IFD_RL_ANY_DEVICE)
    return ERR(INVALID_ARG, "invalid argument: device (-1 for every device)");
  if (resource_count > UINT32_MAX)
    return ERR(INVALID_ARG, "invalid argument: resource_count too large");
  nr = realloc(options->rl_res, (options->n_rl_res + 1) * sizeof(*nr));
  if (nr == NULL) return ERR(INTERNAL, "out of memory");
  options->rl_res = nr;
  name = strdup(resource_name);
  if (name == NULL) return ERR(INTERNAL, "out of memory");
  nr[options->n_rl_res].name = name;
  nr[options->n_rl_res].count = (uint32_t)resource_count;
  nr[options->n_rl_res].device = device;
  options->n_rl_res++;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetPinnedMemoryPoolByteSize(
    TRITONSERVER_ServerOptions *options, uint64_t size) {
  OPT_CHECK(options);
  options->cuda_mem.pinned_bytes = size;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetCudaMemoryPoolByteSize(
    TRITONSERVER_ServerOptions *options, int gpu_device, uint64_t size) {
  OPT_CHECK(options);
  if (gpu_device < 0 || gpu_device >= IFD_CUDA_MAX_DEVICES)
    return ERR(INVALID_ARG, "GPU device id out of range");
  options->cuda_mem.cuda_bytes[gpu_device] = size;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetCudaVirtualAddressSize(
    TRITONSERVER_ServerOptions *options, int gpu_device,
    size_t cuda_virtual_address_size) {
  OPT_CHECK(options);
  (void)gpu_device;
  (void)cuda_virtual_address_size;
  WARN_ONCE(__func__, "inferd's GPU pools do not grow virtually");
  return NULL;
}

/* Replaces the options' cache with `name` and no settings yet. */
static TRITONSERVER_Error *reset_cache(TRITONSERVER_ServerOptions *options,
                                       const char *name) {
  char *n = strdup(name);
  if (n == NULL) return ERR(INTERNAL, "out of memory");
  free_settings(options->cache_config, options->n_cache_config);
  options->cache_config = NULL;
  options->n_cache_config = 0;
  free(options->cache_name);
  options->cache_name = n;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetResponseCacheByteSize(
    TRITONSERVER_ServerOptions *options, uint64_t size) {
  char v[32];
  TRITONSERVER_Error *e;
  OPT_CHECK(options);
  /* Deprecated in Triton: the local cache of `size` bytes (0: none). */
  if (size == 0) return NULL;
  if ((e = reset_cache(options, "local")) != NULL) return e;
  snprintf(v, sizeof(v), "%" PRIu64, size);
  return push_setting(&options->cache_config, &options->n_cache_config, "local",
                      "size", v);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetCacheConfig(
    TRITONSERVER_ServerOptions *options, const char *cache_name,
    const char *config_json) {
  json_error_t jerr;
  json_t *root, *v;
  const char *k;
  TRITONSERVER_Error *e;
  OPT_CHECK(options);
  if (cache_name == NULL || cache_name[0] == '\0' || config_json == NULL)
    return ERR(INVALID_ARG, "cache name and config must not be NULL");
  root = json_loads(config_json, 0, &jerr);
  if (root == NULL || !json_is_object(root)) {
    json_decref(root);
    return ERR(INVALID_ARG, "cache config must be a JSON object");
  }
  e = reset_cache(options, cache_name);
  json_object_foreach(root, k, v) {
    char num[64];
    const char *val = json_is_string(v) ? json_string_value(v) : NULL;
    if (e != NULL) break;
    if (val == NULL && json_is_integer(v)) {
      snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
               json_integer_value(v));
      val = num;
    }
    if (val == NULL) {
      e = ERR(INVALID_ARG, "cache config values must be strings");
      break;
    }
    e = push_setting(&options->cache_config, &options->n_cache_config,
                     cache_name, k, val);
  }
  json_decref(root);
  return e;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetCacheDirectory(
    TRITONSERVER_ServerOptions *options, const char *cache_dir) {
  char *d;
  OPT_CHECK(options);
  if (cache_dir == NULL) return ERR(INVALID_ARG, "cache directory is NULL");
  d = strdup(cache_dir);
  if (d == NULL) return ERR(INTERNAL, "out of memory");
  free(options->cache_dir);
  options->cache_dir = d;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetMinSupportedComputeCapability(
    TRITONSERVER_ServerOptions *options, double cc) {
  OPT_CHECK(options);
  /* Passed to backends (min-compute-capability); inferd itself uses every
   * GPU the CUDA runtime lists. */
  options->min_compute_capability = cc;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetExitOnError(
    TRITONSERVER_ServerOptions *options, bool exit) {
  OPT_CHECK(options);
  options->exit_on_error = exit;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetStrictReadiness(
    TRITONSERVER_ServerOptions *options, bool strict) {
  OPT_CHECK(options);
  options->strict_readiness = strict;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetExitTimeout(
    TRITONSERVER_ServerOptions *options, unsigned int timeout) {
  OPT_CHECK(options);
  if (timeout > INT_MAX / 1000)
    return ERR(INVALID_ARG, "exit timeout out of range");
  options->exit_timeout_secs = timeout;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetBufferManagerThreadCount(
    TRITONSERVER_ServerOptions *options, unsigned int thread_count) {
  OPT_CHECK(options);
  (void)thread_count;
  WARN_ONCE(__func__, "inferd copies buffers on the threads that need them");
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetModelLoadThreadCount(
    TRITONSERVER_ServerOptions *options, unsigned int thread_count) {
  OPT_CHECK(options);
  (void)thread_count;
  WARN_ONCE(__func__,
            "models load on libuv's thread pool (UV_THREADPOOL_SIZE)");
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetModelLoadRetryCount(
    TRITONSERVER_ServerOptions *options, unsigned int retry_count) {
  OPT_CHECK(options);
  options->model_load_retry_count = retry_count;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetModelNamespacing(
    TRITONSERVER_ServerOptions *options, bool enable_namespace) {
  OPT_CHECK(options);
  options->model_namespacing = enable_namespace;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetEnablePeerAccess(
    TRITONSERVER_ServerOptions *options, bool enable_peer_access) {
  OPT_CHECK(options);
  (void)enable_peer_access;
  return NULL; /* inferd never enables peer access between GPUs */
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetLogFile(
    TRITONSERVER_ServerOptions *options, const char *file) {
  OPT_CHECK(options);
  char *copy = strdup(file != NULL ? file : "");
  if (copy == NULL) return ERR(INTERNAL, "out of memory");
  free(options->log_file);
  options->log_file = copy;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetLogInfo(
    TRITONSERVER_ServerOptions *options, bool log) {
  OPT_CHECK(options);
  options->log_info = log;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetLogWarn(
    TRITONSERVER_ServerOptions *options, bool log) {
  OPT_CHECK(options);
  options->log_warn = log;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetLogError(
    TRITONSERVER_ServerOptions *options, bool log) {
  OPT_CHECK(options);
  options->log_error = log;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetLogFormat(
    TRITONSERVER_ServerOptions *options, const TRITONSERVER_LogFormat format) {
  OPT_CHECK(options);
  if (format == TRITONSERVER_LOG_DEFAULT)
    options->log_format = IFD_LOG_FORMAT_DEFAULT;
  else if (format == TRITONSERVER_LOG_ISO8601)
    options->log_format = IFD_LOG_FORMAT_ISO8601;
  else
    return ERR(INVALID_ARG, "unknown log format");
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetLogVerbose(
    TRITONSERVER_ServerOptions *options, int level) {
  OPT_CHECK(options);
  options->log_verbose = level;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetMetrics(
    TRITONSERVER_ServerOptions *options, bool metrics) {
  OPT_CHECK(options);
  options->metrics = metrics;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetGpuMetrics(
    TRITONSERVER_ServerOptions *options, bool gpu_metrics) {
  OPT_CHECK(options);
  options->gpu_metrics = gpu_metrics;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetCpuMetrics(
    TRITONSERVER_ServerOptions *options, bool cpu_metrics) {
  OPT_CHECK(options);
  if (!cpu_metrics)
    WARN_ONCE(__func__, "CPU and memory gauges are always sampled");
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetMetricsInterval(
    TRITONSERVER_ServerOptions *options, uint64_t metrics_interval_ms) {
  OPT_CHECK(options);
  if (metrics_interval_ms == 0)
    return ERR(INVALID_ARG, "the metrics interval must be positive");
  options->metrics_interval_ms = metrics_interval_ms;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetBackendDirectory(
    TRITONSERVER_ServerOptions *options, const char *backend_dir) {
  char *copy;

  OPT_CHECK(options);
  if (backend_dir == NULL)
    return ERR(INVALID_ARG, "backend directory must not be NULL");
  copy = strdup(backend_dir);
  if (copy == NULL) return oom();
  free(options->backend_dir);
  options->backend_dir = copy;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetRepoAgentDirectory(
    TRITONSERVER_ServerOptions *options, const char *repoagent_dir) {
  char *copy;
  OPT_CHECK(options);
  if (repoagent_dir == NULL)
    return ERR(INVALID_ARG, "repoagent_dir must not be NULL");
  copy = strdup(repoagent_dir);
  if (copy == NULL) return ERR(INTERNAL, "out of memory");
  free(options->repoagent_dir);
  options->repoagent_dir = copy;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetModelLoadDeviceLimit(
    TRITONSERVER_ServerOptions *options,
    const TRITONSERVER_InstanceGroupKind kind, const int device_id,
    const double fraction) {
  char msg[128];
  OPT_CHECK(options);
  if (kind != TRITONSERVER_INSTANCEGROUPKIND_GPU)
    return ERR(UNSUPPORTED,
               "model load device limit is only supported for "
               "KIND_GPU");
  if (device_id < 0 || device_id >= 64) {
    snprintf(msg, sizeof(msg), "expects device ID in [0, 63], got %d",
             device_id);
    return ERR(INVALID_ARG, msg);
  }
  if (!(fraction >= 0.0 && fraction <= 1.0)) {
    snprintf(msg, sizeof(msg),
             "expects limit fraction to be in range [0.0, 1.0], got %g",
             fraction);
    return ERR(INVALID_ARG, msg);
  }
  options->gpu_limit_set |= 1ull << device_id;
  options->gpu_limit[device_id] = fraction;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetBackendConfig(
    TRITONSERVER_ServerOptions *options, const char *backend_name,
    const char *setting, const char *value) {
  OPT_CHECK(options);
  /* Backends find it in TRITONBACKEND_BackendConfig's "cmdline" object
   * (backend_api/model/loader.c); backend "" applies to every backend. */
  return push_setting(&options->backend_config, &options->n_backend_config,
                      backend_name, setting, value);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetHostPolicy(
    TRITONSERVER_ServerOptions *options, const char *policy_name,
    const char *setting, const char *value) {
  OPT_CHECK(options);
  /* numa-node and cpu-cores pick the CPUs of the policy's instance
   * threads (backend_api/model/loader.c). */
  return push_setting(&options->host_policy, &options->n_host_policy,
                      policy_name, setting, value);
}

/* A boolean setting's value, as tritonserver reads "true"/"false". */
static int parse_bool(const char *v, int *out) {
  if (strcmp(v, "true") == 0)
    *out = 1;
  else if (strcmp(v, "false") == 0)
    *out = 0;
  else
    return -1;
  return 0;
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetMetricsConfig(
    TRITONSERVER_ServerOptions *options, const char *name, const char *setting,
    const char *value) {
  int on;

  OPT_CHECK(options);
  if (name == NULL || setting == NULL || value == NULL)
    return ERR(INVALID_ARG, "name, setting and value must not be NULL");
  if (strcmp(setting, "counter_latencies") == 0 ||
      strcmp(setting, "histogram_latencies") == 0 ||
      strcmp(setting, "summary_latencies") == 0) {
    if (parse_bool(value, &on) != 0)
      return ERR(INVALID_ARG, "metrics config: expected true or false");
    if (setting[0] == 'c')
      options->no_counter_latencies = !on;
    else if (setting[0] == 'h')
      options->histogram_latencies = on;
    else
      options->summary_latencies = on;
    return NULL;
  }
  if (strcmp(setting, "summary_quantiles") == 0) {
    char why[128], msg[192];
    if (ifd_quantiles_parse(value, &options->quantiles, why, sizeof(why)) == 0)
      return NULL;
    snprintf(msg, sizeof(msg), "metrics config summary_quantiles: %s", why);
    return ERR(INVALID_ARG, msg);
  }
  IFD_WARN("%s: unknown setting '%s', ignored", __func__, setting);
  return NULL;
}
