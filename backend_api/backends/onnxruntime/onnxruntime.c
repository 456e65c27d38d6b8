/*
 * backend_api/backends/onnxruntime/onnxruntime.c - inferd's ONNX Runtime
 * backend: the TRITONBACKEND_* entry points.
 *
 * Built as libtriton_onnxruntime.so, through the public backend ABI only,
 * and installed beside ONNX Runtime's libonnxruntime.so.1 (it finds it
 * through its $ORIGIN rpath). It serves what Triton's ORT backend serves:
 * platform "onnxruntime_onnx" or backend "onnxruntime", model.onnx (a file,
 * or a folder holding model.onnx and its external weights), with Triton's
 * auto-complete, checks, parameters and messages (docs/backends.md, "ONNX
 * Runtime").
 *
 * Backend settings (--backend-config=onnxruntime,<key>=<value>):
 *   default-max-batch-size   max_batch_size auto-complete gives a model
 *                            that can batch (the server passes 4)
 *   enable-global-threadpool 1: one intra-op/inter-op pool for every
 *                            session (then intra_op_thread_count and
 *                            inter_op_thread_count set its sizes here, and
 *                            the models' own are ignored)
 *
 * Threads: TRITONBACKEND_Initialize and _ModelInitialize run on a pool
 * thread, each instance's initialize, execute and finalize on the
 * instance's own thread; instances of one model may initialize in
 * parallel (the backend says so through TRITONBACKEND_GetBackendAttribute).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const OrtApi *ifd_ort;
static const OrtApiBase *ort_base;

const char *ifd_ort_version(void) {
  return ort_base != NULL ? ort_base->GetVersionString() : "unknown";
}

/* cmdline.<key> of the backend configuration, or NULL. */
static const char *cmdline(const json_t *cfg, const char *key) {
  const json_t *v = json_object_get(json_object_get(cfg, "cmdline"), key);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

static TRITONSERVER_Error *cmdline_int(const json_t *cfg, const char *key,
                                       int dflt, int *out) {
  const char *s = cmdline(cfg, key);
  char *end;
  long v;
  *out = dflt;
  if (s == NULL) return NULL;
  v = strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < 0 || v > 1000000)
    return ifd_be_errf(TRITONSERVER_ERROR_INVALID_ARG,
                       "failed to convert '%s' to integral number (backend "
                       "setting '%s')",
                       s, key);
  *out = (int)v;
  return NULL;
}

/* The environment: one per process, with global thread pools when asked. */
static TRITONSERVER_Error *make_env(ort_backend_t *b, const json_t *cfg) {
  int intra = 0, inter = 0;
  TRITONSERVER_Error *e;
  OrtLoggingLevel level = TRITONSERVER_LogIsEnabled(TRITONSERVER_LOG_VERBOSE)
                              ? ORT_LOGGING_LEVEL_VERBOSE
                              : ORT_LOGGING_LEVEL_WARNING;
  if (!b->global_pool)
    return ifd_ort_err(ifd_ort->CreateEnv(level, "inferd", &b->env));
  e = cmdline_int(cfg, "intra_op_thread_count", 0, &intra);
  if (e == NULL) e = cmdline_int(cfg, "inter_op_thread_count", 0, &inter);
  if (e == NULL) {
    OrtThreadingOptions *t = NULL;
    e = ifd_ort_err(ifd_ort->CreateThreadingOptions(&t));
    if (e == NULL && intra > 0)
      e = ifd_ort_err(ifd_ort->SetGlobalIntraOpNumThreads(t, intra));
    if (e == NULL && inter > 0)
      e = ifd_ort_err(ifd_ort->SetGlobalInterOpNumThreads(t, inter));
    if (e == NULL)
      e = ifd_ort_err(
          ifd_ort->CreateEnvWithGlobalThreadPools(level, "inferd", t, &b->env));
    if (t != NULL) ifd_ort->ReleaseThreadingOptions(t);
  }
  return e;
}

/* Whether the CUDA execution provider works, probed once in
 * TRITONBACKEND_Initialize (after the environment exists, which the CUDA
 * provider's functions need). Being listed by GetAvailableProviders is not
 * enough: onnxruntime-node's build lists it but ships without the provider
 * libraries, so setting its options is what tells. */
static int cuda_usable;
static char cuda_why[512];

static void probe_cuda(void) {
  char **providers = NULL;
  int n = 0, listed = 0;
  OrtCUDAProviderOptionsV2 *cuda = NULL;
  const char *k[] = {"device_id"};
  const char *v[] = {"0"};
  TRITONSERVER_Error *e =
      ifd_ort_err(ifd_ort->GetAvailableProviders(&providers, &n));
  for (int i = 0; e == NULL && i < n; i++)
    if (strcmp(providers[i], "CUDAExecutionProvider") == 0) listed = 1;
  if (providers != NULL)
    TRITONSERVER_ErrorDelete(
        ifd_ort_err(ifd_ort->ReleaseAvailableProviders(providers, n)));
  if (e == NULL && !listed)
    e = ifd_be_errf(TRITONSERVER_ERROR_UNSUPPORTED,
                    "it is not built with the CUDA execution provider");
  if (e == NULL) e = ifd_ort_err(ifd_ort->CreateCUDAProviderOptions(&cuda));
  if (e == NULL)
    e = ifd_ort_err(ifd_ort->UpdateCUDAProviderOptions(cuda, k, v, 1));
  if (cuda != NULL) ifd_ort->ReleaseCUDAProviderOptions(cuda);
  cuda_usable = e == NULL;
  if (e != NULL) {
    snprintf(cuda_why, sizeof(cuda_why), "%s", TRITONSERVER_ErrorMessage(e));
    TRITONSERVER_ErrorDelete(e);
  }
}

int ifd_ort_has_cuda(void) {
  return cuda_usable;
}

const char *ifd_ort_no_cuda_reason(void) {
  return cuda_why;
}

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
  uint32_t major = 0, minor = 0;
  TRITONSERVER_Message *msg = NULL;
  const char *buf = NULL;
  size_t len = 0;
  json_t *cfg = NULL;
  ort_backend_t *b;
  const char *gp;
  TRITONSERVER_Error *e = TRITONBACKEND_ApiVersion(&major, &minor);
  if (e != NULL) return e;
  if (major != TRITONBACKEND_API_VERSION_MAJOR ||
      minor < TRITONBACKEND_API_VERSION_MINOR)
    return ifd_be_errf(TRITONSERVER_ERROR_UNSUPPORTED,
                       "Triton TRITONBACKEND API version: %u.%u does not "
                       "support 'onnxruntime' TRITONBACKEND API version: "
                       "%u.%u",
                       major, minor, TRITONBACKEND_API_VERSION_MAJOR,
                       TRITONBACKEND_API_VERSION_MINOR);
  /* ONNX Runtime stays mapped until the process exits, even when this
   * backend is unloaded with its last model and loaded again later: the
   * runtime keeps process-wide state (its protobuf and logging singletons)
   * that is not made to be torn down and set up again, and a leak checker
   * can then still name it. */
  if (dlopen("libonnxruntime.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) ==
      NULL)
    ifd_ort_log(TRITONSERVER_LOG_WARN, "cannot pin libonnxruntime.so.1: %s",
                dlerror());
  ort_base = OrtGetApiBase();
  ifd_ort = ort_base != NULL ? ort_base->GetApi(IFD_ORT_API_VERSION) : NULL;
  if (ifd_ort == NULL)
    return ifd_be_errf(TRITONSERVER_ERROR_UNSUPPORTED,
                       "the ONNX Runtime library loaded (version %s) does not "
                       "offer C API version %d, which this backend was "
                       "written for (ONNX Runtime 1.%d or newer is needed; "
                       "third_party/install-onnxruntime.sh installs it)",
                       ifd_ort_version(), IFD_ORT_API_VERSION,
                       IFD_ORT_API_VERSION);
  ifd_ort_log(TRITONSERVER_LOG_INFO,
              "TRITONBACKEND_Initialize: onnxruntime (ONNX Runtime %s, C API "
              "version %d)",
              ifd_ort_version(), IFD_ORT_API_VERSION);

  e = TRITONBACKEND_BackendConfig(backend, &msg);
  if (e == NULL) e = TRITONSERVER_MessageSerializeToJson(msg, &buf, &len);
  if (e == NULL) {
    cfg = len > 0 ? json_loadb(buf, len, 0, NULL) : json_object();
    if (cfg == NULL)
      e = ifd_be_errf(TRITONSERVER_ERROR_INVALID_ARG,
                      "backend configuration is not JSON");
  }
  /* The backend configuration message stays the server's. */
  if (e != NULL) return e;

  b = calloc(1, sizeof(*b));
  if (b == NULL) {
    json_decref(cfg);
    return ifd_be_errf(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  }
  pthread_mutex_init(&b->load_mu, NULL);
  e = cmdline_int(cfg, "default-max-batch-size", 0, &b->default_max_batch_size);
  gp = cmdline(cfg, "enable-global-threadpool");
  b->global_pool =
      gp != NULL && (strcmp(gp, "1") == 0 || strcmp(gp, "true") == 0);
  if (e == NULL) e = make_env(b, cfg);
  if (e == NULL) e = ifd_ort_err(ifd_ort->DisableTelemetryEvents(b->env));
  if (e == NULL) probe_cuda();
  if (e == NULL) e = TRITONBACKEND_BackendSetState(backend, b);
  json_decref(cfg);
  if (e != NULL) {
    if (b->env != NULL) ifd_ort->ReleaseEnv(b->env);
    pthread_mutex_destroy(&b->load_mu);
    free(b);
  }
  return e;
}

TRITONSERVER_Error *TRITONBACKEND_Finalize(TRITONBACKEND_Backend *backend) {
  void *vb = NULL;
  TRITONSERVER_Error *e = TRITONBACKEND_BackendState(backend, &vb);
  ort_backend_t *b = vb;
  if (e != NULL || b == NULL) return e;
  if (b->env != NULL) ifd_ort->ReleaseEnv(b->env);
  pthread_mutex_destroy(&b->load_mu);
  free(b);
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_GetBackendAttribute(
    TRITONBACKEND_Backend *backend, TRITONBACKEND_BackendAttribute *attr) {
  TRITONSERVER_Error *e;
  (void)backend;
  /* Instances create their own sessions: they may do so in parallel. */
  e = TRITONBACKEND_BackendAttributeSetParallelModelInstanceLoading(attr, true);
  /* A CPU-only runtime prefers CPU instances: a model without an
   * instance_group then gets KIND_CPU even on a machine with GPUs, where
   * the server honours the preference. */
  if (e == NULL && !ifd_ort_has_cuda())
    e = TRITONBACKEND_BackendAttributeAddPreferredInstanceGroup(
        attr, TRITONSERVER_INSTANCEGROUPKIND_CPU, 0, NULL, 0);
  return e;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
  TRITONBACKEND_Backend *backend = NULL;
  void *vb = NULL;
  ort_model_t *m = NULL;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelBackend(model, &backend);
  if (e == NULL) e = TRITONBACKEND_BackendState(backend, &vb);
  if (e == NULL) e = ifd_ort_model_new(vb, model, &m);
  if (e == NULL) {
    e = TRITONBACKEND_ModelSetState(model, m);
    if (e != NULL) ifd_ort_model_free(m);
  }
  return e;
}

TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model) {
  void *vm = NULL;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelState(model, &vm);
  if (e == NULL) ifd_ort_model_free(vm);
  return e;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(
    TRITONBACKEND_ModelInstance *instance) {
  TRITONBACKEND_Model *model = NULL;
  void *vm = NULL;
  ort_instance_t *in = NULL;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceModel(instance, &model);
  if (e == NULL) e = TRITONBACKEND_ModelState(model, &vm);
  if (e == NULL) e = ifd_ort_instance_new(vm, instance, &in);
  if (e == NULL) {
    e = TRITONBACKEND_ModelInstanceSetState(instance, in);
    if (e != NULL) ifd_ort_instance_free(in);
  }
  return e;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceFinalize(
    TRITONBACKEND_ModelInstance *instance) {
  void *vi = NULL;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceState(instance, &vi);
  if (e == NULL) ifd_ort_instance_free(vi);
  return e;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request **requests,
    const uint32_t request_count) {
  void *vi = NULL;
  TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceState(instance, &vi);
  if (e != NULL) return e;
  /* From here the requests are ours: each is answered and released. */
  ifd_ort_execute(vi, instance, requests, request_count);
  return NULL;
}
