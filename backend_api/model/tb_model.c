/*
 * backend_api/model/tb_model.c - TRITONBACKEND_Backend*, _Model* and
 * _ModelInstance* functions: what a backend may ask about itself, its models
 * and its instances, and where it keeps its own state.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "backend_api/internal.h"
#include "inferd/inferd_backend.h"
#include "core/config.h"
#include "base/log.h"
#include "core/server.h"

/* ---- backend --------------------------------------------------------------
 */

TRITONSERVER_Error *TRITONBACKEND_BackendName(TRITONBACKEND_Backend *backend,
                                              const char **name) {
  ARG_CHECK(backend != NULL && name != NULL);
  *name = backend->name;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_BackendConfig(
    TRITONBACKEND_Backend *backend, TRITONSERVER_Message **backend_config) {
  ARG_CHECK(backend != NULL && backend_config != NULL);
  *backend_config = backend->config;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_BackendExecutionPolicy(
    TRITONBACKEND_Backend *backend, TRITONBACKEND_ExecutionPolicy *policy) {
  ARG_CHECK(backend != NULL && policy != NULL);
  *policy = backend->policy;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_BackendSetExecutionPolicy(
    TRITONBACKEND_Backend *backend, TRITONBACKEND_ExecutionPolicy policy) {
  ARG_CHECK(backend != NULL);
  /* Every instance has a thread of its own, which is what both policies
   * ask for here: DEVICE_BLOCKING differs only in sharing threads across
   * instances of one device, an optimisation we do not need. */
  backend->policy = policy;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_BackendArtifacts(
    TRITONBACKEND_Backend *backend, TRITONBACKEND_ArtifactType *artifact_type,
    const char **location) {
  ARG_CHECK(backend != NULL && artifact_type != NULL && location != NULL);
  *artifact_type = TRITONBACKEND_ARTIFACT_FILESYSTEM;
  *location = backend->dir;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_BackendState(TRITONBACKEND_Backend *backend,
                                               void **state) {
  ARG_CHECK(backend != NULL && state != NULL);
  *state = backend->state;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_BackendSetState(
    TRITONBACKEND_Backend *backend, void *state) {
  ARG_CHECK(backend != NULL);
  backend->state = state;
  return NULL;
}

/* ---- model ----------------------------------------------------------------
 */

TRITONSERVER_Error *TRITONBACKEND_ModelName(TRITONBACKEND_Model *model,
                                            const char **name) {
  ARG_CHECK(model != NULL && name != NULL);
  *name = model->model->name;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelVersion(TRITONBACKEND_Model *model,
                                               uint64_t *version) {
  ARG_CHECK(model != NULL && version != NULL);
  *version = (uint64_t)model->model->version;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelRepository(
    TRITONBACKEND_Model *model, TRITONBACKEND_ArtifactType *artifact_type,
    const char **location) {
  ARG_CHECK(model != NULL && artifact_type != NULL && location != NULL);
  *artifact_type = TRITONBACKEND_ARTIFACT_FILESYSTEM;
  *location = model->model->path;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelConfig(
    TRITONBACKEND_Model *model, const uint32_t config_version,
    TRITONSERVER_Message **model_config) {
  json_t *j;
  char *text;
  ARG_CHECK(model != NULL && model_config != NULL);
  if (config_version != 1)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                 "model configuration version must be 1");
  j = ifd_config_to_json(model->model->config);
  text = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  if (text == NULL ||
      (*model_config = ifd__message_new_owned(text, strlen(text))) == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelAutoCompleteConfig(
    TRITONBACKEND_Model *model, bool *auto_complete_config) {
  ARG_CHECK(model != NULL && auto_complete_config != NULL);
  *auto_complete_config = !model->strict;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelSetConfig(
    TRITONBACKEND_Model *model, const uint32_t config_version,
    TRITONSERVER_Message *model_config) {
  ifd_model_config_t *cfg = NULL;
  ifd_config_opts_t copts = {0};
  ifd_errmsg_t err;
  const char *base;
  size_t len;
  json_t *j;
  int rc;

  ARG_CHECK(model != NULL && model_config != NULL);
  if (config_version != 1)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                 "model configuration version must be 1");
  TRITONSERVER_MessageSerializeToJson(model_config, &base, &len);
  j = json_loadb(base, len, 0, NULL);
  if (j == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "model configuration is not valid JSON");
  ifd_errclear(&err);
  copts.strict = model->strict;
  copts.gpu_count = ifd_server_opts(model->model->server)->gpu_count;
  copts.gpu_skip = ifd_server_opts(model->model->server)->gpu_skip;
  rc = ifd_config_from_json(j, &cfg, &err);
  json_decref(j);
  if (rc == 0) rc = ifd_config_normalize(cfg, &copts, &err);
  if (rc == 0) rc = ifd_config_validate(cfg, &copts, &err);
  if (rc == 0 && strcmp(cfg->name, model->model->name) != 0)
    rc = ifd_errf(&err, IFD_EINVAL,
                  "model configuration name '%s' does not match model '%s'",
                  cfg->name, model->model->name);
  if (rc < 0) {
    ifd_config_free(cfg);
    return ifd__error_from(rc, err.text);
  }
  /* Only reachable during ModelInitialize: the model is not yet visible to
   * any other thread, so the swap needs no lock. */
  ifd_config_free(model->model->config);
  model->model->config = cfg;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelServer(TRITONBACKEND_Model *model,
                                              TRITONSERVER_Server **server) {
  ARG_CHECK(model != NULL && server != NULL);
  *server = (TRITONSERVER_Server *)model->model->server;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelBackend(
    TRITONBACKEND_Model *model, TRITONBACKEND_Backend **backend) {
  ARG_CHECK(model != NULL && backend != NULL);
  *backend = model->backend;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelState(TRITONBACKEND_Model *model,
                                             void **state) {
  ARG_CHECK(model != NULL && state != NULL);
  *state = model->state;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelSetState(TRITONBACKEND_Model *model,
                                                void *state) {
  ARG_CHECK(model != NULL);
  model->state = state;
  return NULL;
}

/* Serializes memory reports (rare: at load, and when a backend updates
 * them), so each reporter's latest report is replaced whole. */
static pthread_mutex_t memory_mu = PTHREAD_MUTEX_INITIALIZER;

/* What a backend reports about the memory its model or one instance holds:
 * the reporter's latest report replaces its previous one (Triton keeps the
 * latest of each), and the model's memory_usage (statistics extension) sums
 * the model's and its instances' by memory type and device. `reported` is
 * the reporter's previous report, by slot. */
static TRITONSERVER_Error *report_memory(ifd_model_stats_t *st,
                                         uint64_t *reported,
                                         TRITONSERVER_BufferAttributes **usage,
                                         uint32_t n) {
  uint64_t now[IFD_STATS_MEM_SLOTS] = {0};
  uint32_t i;
  for (i = 0; i < n; i++) {
    TRITONSERVER_MemoryType type;
    int64_t id;
    size_t bytes;
    TRITONSERVER_Error *e;
    int k;
    if (usage[i] == NULL)
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                   "memory usage entry is NULL");
    if ((e = TRITONSERVER_BufferAttributesMemoryType(usage[i], &type)) !=
            NULL ||
        (e = TRITONSERVER_BufferAttributesMemoryTypeId(usage[i], &id)) !=
            NULL ||
        (e = TRITONSERVER_BufferAttributesByteSize(usage[i], &bytes)) != NULL)
      return e;
    k = ifd_stats_memory_slot((int32_t)type, id);
    if (k >= 0) now[k] += (uint64_t)bytes;
  }
  pthread_mutex_lock(&memory_mu);
  ifd_stats_memory_replace(st, reported, now);
  pthread_mutex_unlock(&memory_mu);
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelReportMemoryUsage(
    TRITONBACKEND_Model *model, TRITONSERVER_BufferAttributes **usage,
    uint32_t usage_size) {
  ARG_CHECK(model != NULL && (usage != NULL || usage_size == 0));
  return report_memory(&model->model->stats, model->mem_reported, usage,
                       usage_size);
}

/* ---- model instance ---------------------------------------------------------
 */

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceName(
    TRITONBACKEND_ModelInstance *instance, const char **name) {
  ARG_CHECK(instance != NULL && name != NULL);
  *name = instance->name;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceKind(
    TRITONBACKEND_ModelInstance *instance,
    TRITONSERVER_InstanceGroupKind *kind) {
  ARG_CHECK(instance != NULL && kind != NULL);
  *kind = instance->kind;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceDeviceId(
    TRITONBACKEND_ModelInstance *instance, int32_t *device_id) {
  ARG_CHECK(instance != NULL && device_id != NULL);
  *device_id = instance->device_id;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceHostPolicy(
    TRITONBACKEND_ModelInstance *instance, TRITONSERVER_Message **host_policy) {
  ARG_CHECK(instance != NULL && host_policy != NULL);
  /* Owned by the instance, as Triton's is owned by the server. */
  *host_policy = instance->host_policy;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceIsPassive(
    TRITONBACKEND_ModelInstance *instance, bool *is_passive) {
  ARG_CHECK(instance != NULL && is_passive != NULL);
  *is_passive = instance->passive;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceProfileCount(
    TRITONBACKEND_ModelInstance *instance, uint32_t *count) {
  ARG_CHECK(instance != NULL && count != NULL);
  *count = 0;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceProfileName(
    TRITONBACKEND_ModelInstance *instance, const uint32_t index,
    const char **profile_name) {
  ARG_CHECK(instance != NULL && profile_name != NULL);
  (void)index;
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                               "the instance has no optimization profiles");
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceSecondaryDeviceCount(
    TRITONBACKEND_ModelInstance *instance, uint32_t *count) {
  ARG_CHECK(instance != NULL && count != NULL);
  *count = 0;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceSecondaryDeviceProperties(
    TRITONBACKEND_ModelInstance *instance, uint32_t index, const char **kind,
    int64_t *id) {
  ARG_CHECK(instance != NULL && kind != NULL && id != NULL);
  (void)index;
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                               "the instance has no secondary devices");
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceModel(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Model **model) {
  ARG_CHECK(instance != NULL && model != NULL);
  *model = instance->model;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceState(
    TRITONBACKEND_ModelInstance *instance, void **state) {
  ARG_CHECK(instance != NULL && state != NULL);
  *state = instance->state;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceSetState(
    TRITONBACKEND_ModelInstance *instance, void *state) {
  ARG_CHECK(instance != NULL);
  instance->state = state;
  return NULL;
}

TRITONSERVER_Error *INFERD_ModelInstanceSetReady(
    TRITONBACKEND_ModelInstance *instance, bool ready) {
  ARG_CHECK(instance != NULL);
  int was = atomic_exchange(&instance->not_ready, ready ? 0 : 1);
  if (was != (ready ? 0 : 1))
    atomic_fetch_add(&instance->model->model->unready_instances,
                     ready ? -1 : 1);
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportMemoryUsage(
    TRITONBACKEND_ModelInstance *instance,
    TRITONSERVER_BufferAttributes **usage, uint32_t usage_size) {
  ARG_CHECK(instance != NULL && (usage != NULL || usage_size == 0));
  return report_memory(&instance->model->model->stats, instance->mem_reported,
                       usage, usage_size);
}
