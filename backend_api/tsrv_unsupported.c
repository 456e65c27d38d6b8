/*
 * backend_api/tsrv_unsupported.c - the rest of the ABI: every TRITONSERVER_*
 * and TRITONBACKEND_* function the headers declare that no other file of
 * backend_api/ defines.
 *
 * A backend built for Triton is opened with RTLD_NOW, so it loads only if
 * every symbol it references exists, even the ones it calls on paths inferd
 * never takes. Most functions here therefore only exist: they return an
 * UNSUPPORTED error naming themselves, which the backend reports the way it
 * reports any failure. Where the real thing is small and safe it is done for
 * real instead: CPU buffer attributes, the CPU memory manager, the names of
 * trace levels and activities, and reading a response's outputs back.
 *
 * Errors returned here are new objects the caller owns, as everywhere in the
 * API. The in-process API itself lives in capi_*.c.
 */
#include "backend_api/internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/infer.h"
#include "cuda/cuda_mem.h"
#include "cuda/gpu.h"

/* The error every unsupported function returns: a new object the caller
 * owns, whose message names the function. */
static TRITONSERVER_Error *unsupported(const char *fn) {
  char msg[192];
  snprintf(msg, sizeof(msg), "%s is not supported by inferd yet", fn);
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED, msg);
}

/* ---- metrics snapshot ---------------------------------------------------- */

/* A snapshot comes only from TRITONSERVER_ServerMetrics, which is unsupported,
 * so these never receive a valid object. */

TRITONSERVER_Error *TRITONSERVER_MetricsDelete(TRITONSERVER_Metrics *metrics) {
  (void)metrics;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_MetricsFormatted(
    TRITONSERVER_Metrics *metrics, TRITONSERVER_MetricFormat format,
    const char **base, size_t *byte_size) {
  (void)metrics;
  (void)format;
  (void)base;
  (void)byte_size;
  return unsupported(__func__);
}

/* ---- tracing ------------------------------------------------------------- */

/* The names are static strings, as in Triton, so they are given for real:
 * backends print them. Unknown values get "<unknown>", never NULL, so a
 * caller that prints the result cannot crash. */

const char *TRITONSERVER_InferenceTraceLevelString(
    TRITONSERVER_InferenceTraceLevel level) {
  switch (level) {
    case TRITONSERVER_TRACE_LEVEL_DISABLED:
      return "DISABLED";
    case TRITONSERVER_TRACE_LEVEL_MIN:
      return "MIN";
    case TRITONSERVER_TRACE_LEVEL_MAX:
      return "MAX";
    case TRITONSERVER_TRACE_LEVEL_TIMESTAMPS:
      return "TIMESTAMPS";
    case TRITONSERVER_TRACE_LEVEL_TENSORS:
      return "TENSORS";
  }
  return "<unknown>";
}

const char *TRITONSERVER_InferenceTraceActivityString(
    TRITONSERVER_InferenceTraceActivity activity) {
  switch (activity) {
    case TRITONSERVER_TRACE_REQUEST_START:
      return "REQUEST_START";
    case TRITONSERVER_TRACE_QUEUE_START:
      return "QUEUE_START";
    case TRITONSERVER_TRACE_COMPUTE_START:
      return "COMPUTE_START";
    case TRITONSERVER_TRACE_COMPUTE_INPUT_END:
      return "COMPUTE_INPUT_END";
    case TRITONSERVER_TRACE_COMPUTE_OUTPUT_START:
      return "COMPUTE_OUTPUT_START";
    case TRITONSERVER_TRACE_COMPUTE_END:
      return "COMPUTE_END";
    case TRITONSERVER_TRACE_REQUEST_END:
      return "REQUEST_END";
    case TRITONSERVER_TRACE_TENSOR_QUEUE_INPUT:
      return "TENSOR_QUEUE_INPUT";
    case TRITONSERVER_TRACE_TENSOR_BACKEND_INPUT:
      return "TENSOR_BACKEND_INPUT";
    case TRITONSERVER_TRACE_TENSOR_BACKEND_OUTPUT:
      return "TENSOR_BACKEND_OUTPUT";
    case TRITONSERVER_TRACE_CUSTOM_ACTIVITY:
      return "CUSTOM_ACTIVITY";
  }
  return "<unknown>";
}

/* Requests are never traced (TRITONBACKEND_RequestTrace gives NULL), so a
 * backend never holds a trace; creating one is unsupported, and so is every
 * use of one. */

TRITONSERVER_Error *TRITONSERVER_InferenceTraceNew(
    TRITONSERVER_InferenceTrace **trace, TRITONSERVER_InferenceTraceLevel level,
    uint64_t parent_id, TRITONSERVER_InferenceTraceActivityFn_t activity_fn,
    TRITONSERVER_InferenceTraceReleaseFn_t release_fn, void *trace_userp) {
  (void)trace;
  (void)level;
  (void)parent_id;
  (void)activity_fn;
  (void)release_fn;
  (void)trace_userp;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceTensorNew(
    TRITONSERVER_InferenceTrace **trace, TRITONSERVER_InferenceTraceLevel level,
    uint64_t parent_id, TRITONSERVER_InferenceTraceActivityFn_t activity_fn,
    TRITONSERVER_InferenceTraceTensorActivityFn_t tensor_activity_fn,
    TRITONSERVER_InferenceTraceReleaseFn_t release_fn, void *trace_userp) {
  (void)trace;
  (void)level;
  (void)parent_id;
  (void)activity_fn;
  (void)tensor_activity_fn;
  (void)release_fn;
  (void)trace_userp;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceReportActivity(
    TRITONSERVER_InferenceTrace *trace, uint64_t timestamp,
    const char *activity_name) {
  (void)trace;
  (void)timestamp;
  (void)activity_name;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceDelete(
    TRITONSERVER_InferenceTrace *trace) {
  (void)trace;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceId(
    TRITONSERVER_InferenceTrace *trace, uint64_t *id) {
  (void)trace;
  (void)id;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceParentId(
    TRITONSERVER_InferenceTrace *trace, uint64_t *parent_id) {
  (void)trace;
  (void)parent_id;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceModelName(
    TRITONSERVER_InferenceTrace *trace, const char **model_name) {
  (void)trace;
  (void)model_name;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceModelVersion(
    TRITONSERVER_InferenceTrace *trace, int64_t *model_version) {
  (void)trace;
  (void)model_version;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceRequestId(
    TRITONSERVER_InferenceTrace *trace, const char **request_id) {
  (void)trace;
  (void)request_id;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceSpawnChildTrace(
    TRITONSERVER_InferenceTrace *trace,
    TRITONSERVER_InferenceTrace **child_trace) {
  (void)trace;
  (void)child_trace;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceSetContext(
    TRITONSERVER_InferenceTrace *trace, const char *trace_context) {
  (void)trace;
  (void)trace_context;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceContext(
    TRITONSERVER_InferenceTrace *trace, const char **trace_context) {
  (void)trace;
  (void)trace_context;
  return unsupported(__func__);
}

/* ---- buffer attributes --------------------------------------------------- */

/* A plain record a backend may create, fill and read, as in Triton. */
struct TRITONSERVER_BufferAttributes {
  size_t byte_size;
  TRITONSERVER_MemoryType memory_type;
  int64_t memory_type_id;
  void *cuda_ipc_handle; /* borrowed: the caller's, see SetCudaIpcHandle */
};

/*
 * The attributes of an input's, an output's or a sequence state's buffer must
 * live as long as the input, output or state, but ifd_input_t, ifd_output_t
 * and TRITONBACKEND_State have no room for them and there is nothing to free
 * them with. Every such buffer is CPU memory of id 0 and only its size
 * varies, so the attributes handed out are views instead: a pointer to the
 * object itself with a tag in its low bits (all three types are at least
 * 4-aligned; malloc'd records never carry a tag). Views read through to the
 * live object and are read-only; deleting one is refused, as Triton's
 * contract says the input, output or state owns it.
 */
#define VIEW_INPUT ((uintptr_t)1)
#define VIEW_OUTPUT ((uintptr_t)2)
#define VIEW_STATE ((uintptr_t)3)
#define VIEW_MASK ((uintptr_t)3)

_Static_assert(_Alignof(ifd_input_t) >= 4 && _Alignof(ifd_output_t) >= 4,
               "buffer attribute views need two free low bits");

static TRITONSERVER_BufferAttributes *view_of(const void *obj, uintptr_t tag) {
  return (TRITONSERVER_BufferAttributes *)((uintptr_t)obj | tag);
}

static uintptr_t view_tag(const TRITONSERVER_BufferAttributes *ba) {
  return (uintptr_t)ba & VIEW_MASK;
}

/* Copies the attributes behind `ba`, a record or a view, into *out. */
static void attrs_read(const TRITONSERVER_BufferAttributes *ba,
                       struct TRITONSERVER_BufferAttributes *out /* OUT */) {
  const void *obj = (const void *)((uintptr_t)ba & ~VIEW_MASK);
  out->memory_type = TRITONSERVER_MEMORY_CPU;
  out->memory_type_id = 0;
  out->cuda_ipc_handle = NULL;
  switch (view_tag(ba)) {
    case VIEW_INPUT: {
      /* Where the data is: CPU, or a CUDA shared-memory region. */
      const ifd_input_t *in = obj;
      out->byte_size = (size_t)in->byte_size;
      out->memory_type = (TRITONSERVER_MemoryType)in->mem_type;
      out->memory_type_id = in->mem_id;
      break;
    }
    case VIEW_OUTPUT: {
      /* Where the buffer is: CPU, a GPU (until the response is sent), or a
       * CUDA shared-memory region. */
      const ifd_output_t *o = obj;
      out->byte_size = (size_t)o->byte_size;
      out->memory_type = (TRITONSERVER_MemoryType)o->mem_type;
      out->memory_type_id = o->mem_id;
      break;
    }
    case VIEW_STATE:
      out->byte_size =
          (size_t)ifd__state_buffer_size((const TRITONBACKEND_State *)obj);
      break;
    default:
      *out = *ba;
      return;
  }
}

TRITONSERVER_BufferAttributes *ifd__state_buffer_attributes(
    const TRITONBACKEND_State *state) {
  return view_of(state, VIEW_STATE);
}

#define WRITABLE_CHECK(ba)                                               \
  do {                                                                   \
    if (view_tag(ba) != 0)                                               \
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,       \
                                   "the buffer attributes of an input, " \
                                   "output or state are read-only");     \
  } while (0)

/* Defaults as Triton's: zero bytes of CPU memory 0, no IPC handle. */
TRITONSERVER_Error *TRITONSERVER_BufferAttributesNew(
    TRITONSERVER_BufferAttributes **buffer_attributes) {
  TRITONSERVER_BufferAttributes *ba;
  ARG_CHECK(buffer_attributes != NULL);
  ba = calloc(1, sizeof(*ba));
  if (ba == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  ba->memory_type = TRITONSERVER_MEMORY_CPU;
  *buffer_attributes = ba;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_BufferAttributesDelete(
    TRITONSERVER_BufferAttributes *buffer_attributes) {
  ARG_CHECK(buffer_attributes != NULL);
  if (view_tag(buffer_attributes) != 0)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "the buffer attributes of an input, output "
                                 "or state are owned by it and cannot be "
                                 "deleted");
  free(buffer_attributes);
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_BufferAttributesSetMemoryTypeId(
    TRITONSERVER_BufferAttributes *buffer_attributes, int64_t memory_type_id) {
  ARG_CHECK(buffer_attributes != NULL);
  WRITABLE_CHECK(buffer_attributes);
  buffer_attributes->memory_type_id = memory_type_id;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_BufferAttributesSetMemoryType(
    TRITONSERVER_BufferAttributes *buffer_attributes,
    TRITONSERVER_MemoryType memory_type) {
  ARG_CHECK(buffer_attributes != NULL);
  WRITABLE_CHECK(buffer_attributes);
  buffer_attributes->memory_type = memory_type;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_BufferAttributesSetCudaIpcHandle(
    TRITONSERVER_BufferAttributes *buffer_attributes, void *cuda_ipc_handle) {
  ARG_CHECK(buffer_attributes != NULL);
  WRITABLE_CHECK(buffer_attributes);
  buffer_attributes->cuda_ipc_handle = cuda_ipc_handle;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_BufferAttributesSetByteSize(
    TRITONSERVER_BufferAttributes *buffer_attributes, size_t byte_size) {
  ARG_CHECK(buffer_attributes != NULL);
  WRITABLE_CHECK(buffer_attributes);
  buffer_attributes->byte_size = byte_size;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_BufferAttributesMemoryTypeId(
    TRITONSERVER_BufferAttributes *buffer_attributes, int64_t *memory_type_id) {
  struct TRITONSERVER_BufferAttributes a;
  ARG_CHECK(buffer_attributes != NULL && memory_type_id != NULL);
  attrs_read(buffer_attributes, &a);
  *memory_type_id = a.memory_type_id;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_BufferAttributesMemoryType(
    TRITONSERVER_BufferAttributes *buffer_attributes,
    TRITONSERVER_MemoryType *memory_type) {
  struct TRITONSERVER_BufferAttributes a;
  ARG_CHECK(buffer_attributes != NULL && memory_type != NULL);
  attrs_read(buffer_attributes, &a);
  *memory_type = a.memory_type;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_BufferAttributesCudaIpcHandle(
    TRITONSERVER_BufferAttributes *buffer_attributes, void **cuda_ipc_handle) {
  struct TRITONSERVER_BufferAttributes a;
  ARG_CHECK(buffer_attributes != NULL && cuda_ipc_handle != NULL);
  attrs_read(buffer_attributes, &a);
  *cuda_ipc_handle = a.cuda_ipc_handle;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_BufferAttributesByteSize(
    TRITONSERVER_BufferAttributes *buffer_attributes, size_t *byte_size) {
  struct TRITONSERVER_BufferAttributes a;
  ARG_CHECK(buffer_attributes != NULL && byte_size != NULL);
  attrs_read(buffer_attributes, &a);
  *byte_size = a.byte_size;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_InputBufferAttributes(
    TRITONBACKEND_Input *input, const uint32_t index, const void **buffer,
    TRITONSERVER_BufferAttributes **buffer_attributes) {
  const ifd_input_t *in = (const ifd_input_t *)input;
  ARG_CHECK(input != NULL && buffer != NULL && buffer_attributes != NULL);
  /* One buffer per input, as TRITONBACKEND_InputProperties reports. */
  if (index != 0)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "input buffer index out of range");
  *buffer = in->data;
  *buffer_attributes = view_of(in, VIEW_INPUT);
  return NULL;
}

/* Before TRITONBACKEND_OutputBuffer the view reads zero bytes, as Triton's
 * default attributes do. */
TRITONSERVER_Error *TRITONBACKEND_OutputBufferAttributes(
    TRITONBACKEND_Output *output,
    TRITONSERVER_BufferAttributes **buffer_attributes) {
  ARG_CHECK(output != NULL && buffer_attributes != NULL);
  *buffer_attributes = view_of(output, VIEW_OUTPUT);
  return NULL;
}

/* ---- server options ------------------------------------------------------ */

/* Options configure a server made in process with TRITONSERVER_ServerNew;
 * inferd's server is configured by its command line. No options object can
 * be created, so no other function here can receive a valid one. */

TRITONSERVER_Error *TRITONSERVER_ServerOptionsNew(
    TRITONSERVER_ServerOptions **options) {
  (void)options;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsDelete(
    TRITONSERVER_ServerOptions *options) {
  (void)options;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetServerId(
    TRITONSERVER_ServerOptions *options, const char *server_id) {
  (void)options;
  (void)server_id;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetModelRepositoryPath(
    TRITONSERVER_ServerOptions *options, const char *model_repository_path) {
  (void)options;
  (void)model_repository_path;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetModelControlMode(
    TRITONSERVER_ServerOptions *options, TRITONSERVER_ModelControlMode mode) {
  (void)options;
  (void)mode;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetStartupModel(
    TRITONSERVER_ServerOptions *options, const char *model_name) {
  (void)options;
  (void)model_name;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetStrictModelConfig(
    TRITONSERVER_ServerOptions *options, bool strict) {
  (void)options;
  (void)strict;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetModelConfigName(
    TRITONSERVER_ServerOptions *options, const char *model_config_name) {
  (void)options;
  (void)model_config_name;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetRateLimiterMode(
    TRITONSERVER_ServerOptions *options, TRITONSERVER_RateLimitMode mode) {
  (void)options;
  (void)mode;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsAddRateLimiterResource(
    TRITONSERVER_ServerOptions *options, const char *resource_name,
    const size_t resource_count, const int device) {
  (void)options;
  (void)resource_name;
  (void)resource_count;
  (void)device;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetPinnedMemoryPoolByteSize(
    TRITONSERVER_ServerOptions *options, uint64_t size) {
  (void)options;
  (void)size;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetCudaMemoryPoolByteSize(
    TRITONSERVER_ServerOptions *options, int gpu_device, uint64_t size) {
  (void)options;
  (void)gpu_device;
  (void)size;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetCudaVirtualAddressSize(
    TRITONSERVER_ServerOptions *options, int gpu_device,
    size_t cuda_virtual_address_size) {
  (void)options;
  (void)gpu_device;
  (void)cuda_virtual_address_size;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetResponseCacheByteSize(
    TRITONSERVER_ServerOptions *options, uint64_t size) {
  (void)options;
  (void)size;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetCacheConfig(
    TRITONSERVER_ServerOptions *options, const char *cache_name,
    const char *config_json) {
  (void)options;
  (void)cache_name;
  (void)config_json;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetCacheDirectory(
    TRITONSERVER_ServerOptions *options, const char *cache_dir) {
  (void)options;
  (void)cache_dir;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetMinSupportedComputeCapability(
    TRITONSERVER_ServerOptions *options, double cc) {
  (void)options;
  (void)cc;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetExitOnError(
    TRITONSERVER_ServerOptions *options, bool exit) {
  (void)options;
  (void)exit;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetStrictReadiness(
    TRITONSERVER_ServerOptions *options, bool strict) {
  (void)options;
  (void)strict;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetExitTimeout(
    TRITONSERVER_ServerOptions *options, unsigned int timeout) {
  (void)options;
  (void)timeout;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetBufferManagerThreadCount(
    TRITONSERVER_ServerOptions *options, unsigned int thread_count) {
  (void)options;
  (void)thread_count;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetModelLoadThreadCount(
    TRITONSERVER_ServerOptions *options, unsigned int thread_count) {
  (void)options;
  (void)thread_count;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetModelLoadRetryCount(
    TRITONSERVER_ServerOptions *options, unsigned int retry_count) {
  (void)options;
  (void)retry_count;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetModelNamespacing(
    TRITONSERVER_ServerOptions *options, bool enable_namespace) {
  (void)options;
  (void)enable_namespace;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetEnablePeerAccess(
    TRITONSERVER_ServerOptions *options, bool enable_peer_access) {
  (void)options;
  (void)enable_peer_access;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetLogFile(
    TRITONSERVER_ServerOptions *options, const char *file) {
  (void)options;
  (void)file;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetLogInfo(
    TRITONSERVER_ServerOptions *options, bool log) {
  (void)options;
  (void)log;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetLogWarn(
    TRITONSERVER_ServerOptions *options, bool log) {
  (void)options;
  (void)log;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetLogError(
    TRITONSERVER_ServerOptions *options, bool log) {
  (void)options;
  (void)log;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetLogFormat(
    TRITONSERVER_ServerOptions *options, const TRITONSERVER_LogFormat format) {
  (void)options;
  (void)format;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetLogVerbose(
    TRITONSERVER_ServerOptions *options, int level) {
  (void)options;
  (void)level;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetMetrics(
    TRITONSERVER_ServerOptions *options, bool metrics) {
  (void)options;
  (void)metrics;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetGpuMetrics(
    TRITONSERVER_ServerOptions *options, bool gpu_metrics) {
  (void)options;
  (void)gpu_metrics;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetCpuMetrics(
    TRITONSERVER_ServerOptions *options, bool cpu_metrics) {
  (void)options;
  (void)cpu_metrics;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetMetricsInterval(
    TRITONSERVER_ServerOptions *options, uint64_t metrics_interval_ms) {
  (void)options;
  (void)metrics_interval_ms;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetBackendDirectory(
    TRITONSERVER_ServerOptions *options, const char *backend_dir) {
  (void)options;
  (void)backend_dir;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetRepoAgentDirectory(
    TRITONSERVER_ServerOptions *options, const char *repoagent_dir) {
  (void)options;
  (void)repoagent_dir;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetModelLoadDeviceLimit(
    TRITONSERVER_ServerOptions *options,
    const TRITONSERVER_InstanceGroupKind kind, const int device_id,
    const double fraction) {
  (void)options;
  (void)kind;
  (void)device_id;
  (void)fraction;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetBackendConfig(
    TRITONSERVER_ServerOptions *options, const char *backend_name,
    const char *setting, const char *value) {
  (void)options;
  (void)backend_name;
  (void)setting;
  (void)value;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetHostPolicy(
    TRITONSERVER_ServerOptions *options, const char *policy_name,
    const char *setting, const char *value) {
  (void)options;
  (void)policy_name;
  (void)setting;
  (void)value;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerOptionsSetMetricsConfig(
    TRITONSERVER_ServerOptions *options, const char *name, const char *setting,
    const char *value) {
  (void)options;
  (void)name;
  (void)setting;
  (void)value;
  return unsupported(__func__);
}

/* ---- server object ------------------------------------------------------- */

/* A backend does hold a TRITONSERVER_Server (TRITONBACKEND_ModelServer), but
 * what these functions do for it, model control and in-process inference
 * (BLS), is not offered to backends yet; inferd's own server is created and
 * driven by its main program, never through this API. Failing with
 * UNSUPPORTED leaves the server untouched. */

TRITONSERVER_Error *TRITONSERVER_ServerNew(
    TRITONSERVER_Server **server, TRITONSERVER_ServerOptions *options) {
  (void)server;
  (void)options;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerDelete(TRITONSERVER_Server *server) {
  (void)server;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerStop(TRITONSERVER_Server *server) {
  (void)server;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerSetExitTimeout(
    TRITONSERVER_Server *server, unsigned int timeout) {
  (void)server;
  (void)timeout;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerRegisterModelRepository(
    TRITONSERVER_Server *server, const char *repository_path,
    const TRITONSERVER_Parameter **name_mapping, const uint32_t mapping_count) {
  (void)server;
  (void)repository_path;
  (void)name_mapping;
  (void)mapping_count;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerUnregisterModelRepository(
    TRITONSERVER_Server *server, const char *repository_path) {
  (void)server;
  (void)repository_path;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerPollModelRepository(
    TRITONSERVER_Server *server) {
  (void)server;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerIsLive(TRITONSERVER_Server *server,
                                              bool *live) {
  (void)server;
  (void)live;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerIsReady(TRITONSERVER_Server *server,
                                               bool *ready) {
  (void)server;
  (void)ready;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerModelIsReady(TRITONSERVER_Server *server,
                                                    const char *model_name,
                                                    const int64_t model_version,
                                                    bool *ready) {
  (void)server;
  (void)model_name;
  (void)model_version;
  (void)ready;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerModelBatchProperties(
    TRITONSERVER_Server *server, const char *model_name,
    const int64_t model_version, uint32_t *flags, void **voidp) {
  (void)server;
  (void)model_name;
  (void)model_version;
  (void)flags;
  (void)voidp;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerModelTransactionProperties(
    TRITONSERVER_Server *server, const char *model_name,
    const int64_t model_version, uint32_t *txn_flags, void **voidp) {
  (void)server;
  (void)model_name;
  (void)model_version;
  (void)txn_flags;
  (void)voidp;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerMetadata(
    TRITONSERVER_Server *server, TRITONSERVER_Message **server_metadata) {
  (void)server;
  (void)server_metadata;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerModelMetadata(
    TRITONSERVER_Server *server, const char *model_name,
    const int64_t model_version, TRITONSERVER_Message **model_metadata) {
  (void)server;
  (void)model_name;
  (void)model_version;
  (void)model_metadata;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerModelStatistics(
    TRITONSERVER_Server *server, const char *model_name,
    const int64_t model_version, TRITONSERVER_Message **model_stats) {
  (void)server;
  (void)model_name;
  (void)model_version;
  (void)model_stats;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerModelConfig(
    TRITONSERVER_Server *server, const char *model_name,
    const int64_t model_version, const uint32_t config_version,
    TRITONSERVER_Message **model_config) {
  (void)server;
  (void)model_name;
  (void)model_version;
  (void)config_version;
  (void)model_config;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerModelIndex(
    TRITONSERVER_Server *server, uint32_t flags,
    TRITONSERVER_Message **model_index) {
  (void)server;
  (void)flags;
  (void)model_index;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerLoadModel(TRITONSERVER_Server *server,
                                                 const char *model_name) {
  (void)server;
  (void)model_name;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerLoadModelWithParameters(
    TRITONSERVER_Server *server, const char *model_name,
    const TRITONSERVER_Parameter **parameters, const uint64_t parameter_count) {
  (void)server;
  (void)model_name;
  (void)parameters;
  (void)parameter_count;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerUnloadModel(TRITONSERVER_Server *server,
                                                   const char *model_name) {
  (void)server;
  (void)model_name;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerUnloadModelAndDependents(
    TRITONSERVER_Server *server, const char *model_name) {
  (void)server;
  (void)model_name;
  return unsupported(__func__);
}

TRITONSERVER_Error *TRITONSERVER_ServerMetrics(TRITONSERVER_Server *server,
                                               TRITONSERVER_Metrics **metrics) {
  (void)server;
  (void)metrics;
  return unsupported(__func__);
}

/* ---- memory manager ------------------------------------------------------ */

/* Only the address matters: it is the one manager every backend gets. */
struct TRITONBACKEND_MemoryManager {
  int unused;
};

static TRITONBACKEND_MemoryManager memory_manager;

TRITONSERVER_Error *TRITONBACKEND_BackendMemoryManager(
    TRITONBACKEND_Backend *backend, TRITONBACKEND_MemoryManager **manager) {
  ARG_CHECK(backend != NULL && manager != NULL);
  *manager = &memory_manager;
  return NULL;
}

/*
 * The server's memory (cuda/cuda_mem.h): CPU memory from malloc; pinned
 * memory from the pinned pool, else malloc (pageable memory is a correct,
 * if slower to copy, stand-in); GPU memory from the device's pool, else
 * cudaMalloc. Without a GPU, GPU memory is unsupported, which Triton's
 * backend utilities treat as "try another memory type".
 */
TRITONSERVER_Error *TRITONBACKEND_MemoryManagerAllocate(
    TRITONBACKEND_MemoryManager *manager, void **buffer,
    const TRITONSERVER_MemoryType memory_type, const int64_t memory_type_id,
    const uint64_t byte_size) {
  int32_t type = (int32_t)memory_type;
  int64_t id = memory_type_id;
  ifd_errmsg_t err;
  int rc;
  ARG_CHECK(manager != NULL && buffer != NULL);
  switch (memory_type) {
    case TRITONSERVER_MEMORY_CPU:
    case TRITONSERVER_MEMORY_CPU_PINNED:
      id = 0; /* CPU memory has one id */
      break;
    case TRITONSERVER_MEMORY_GPU:
      break;
    default:
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                   "unknown memory type");
  }
  if (byte_size > SIZE_MAX)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "allocation larger than the address space");
  ifd_errclear(&err);
  /* A zero-byte request still gets a freeable buffer. */
  rc = ifd_cuda_alloc(&type, &id, byte_size > 0 ? byte_size : 1, buffer, &err);
  if (rc == IFD_EUNSUPPORTED)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                 "TRITONBACKEND_MemoryManagerAllocate of GPU "
                                 "memory: GPUs not supported");
  if (rc < 0)
    return TRITONSERVER_ErrorNew(rc == IFD_EINVAL
                                     ? TRITONSERVER_ERROR_INVALID_ARG
                                     : TRITONSERVER_ERROR_UNAVAILABLE,
                                 err.text);
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_MemoryManagerFree(
    TRITONBACKEND_MemoryManager *manager, void *buffer,
    const TRITONSERVER_MemoryType memory_type, const int64_t memory_type_id) {
  ARG_CHECK(manager != NULL);
  switch (memory_type) {
    case TRITONSERVER_MEMORY_CPU:
    case TRITONSERVER_MEMORY_CPU_PINNED:
      /* A pinned buffer from the pool goes back to it; one that fell back
       * to malloc is freed. */
      ifd_cuda_free(buffer, (int32_t)memory_type, 0);
      return NULL;
    case TRITONSERVER_MEMORY_GPU:
      if (ifd_gpu_count() == 0)
        return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                     "TRITONBACKEND_MemoryManagerFree of GPU "
                                     "memory: GPUs not supported");
      ifd_cuda_free(buffer, IFD_CUDA_MEM_GPU, memory_type_id);
      return NULL;
    default:
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                   "unknown memory type");
  }
}

/* ---- backend attributes -------------------------------------------------- */

/* These fill the object the server passes to TRITONBACKEND_GetBackendAttribute,
 * which inferd never calls (instance groups come from the model config
 * alone), so no valid attributes object ever reaches them. */

TRITONSERVER_Error *TRITONBACKEND_BackendAttributeAddPreferredInstanceGroup(
    TRITONBACKEND_BackendAttribute *backend_attributes,
    const TRITONSERVER_InstanceGroupKind kind, const uint64_t count,
    const uint64_t *device_ids, const uint64_t id_count) {
  (void)backend_attributes;
  (void)kind;
  (void)count;
  (void)device_ids;
  (void)id_count;
  return unsupported(__func__);
}

TRITONSERVER_Error *
TRITONBACKEND_BackendAttributeSetParallelModelInstanceLoading(
    TRITONBACKEND_BackendAttribute *backend_attributes, bool enabled) {
  (void)backend_attributes;
  (void)enabled;
  return unsupported(__func__);
}

/* ---- reading a response back --------------------------------------------- */

/*
 * A backend may list the outputs of a response it built (custom batchers and
 * the Python backend do). A TRITONBACKEND_Response is an ifd_response_t, so
 * these are read straight from it. Triton's header marks
 * InferenceResponseOutputByName as backend-implemented (ISPEC), but Triton's
 * server defines it and backends call it, so it is defined here too.
 */
TRITONSERVER_Error *TRITONBACKEND_InferenceResponseOutput(
    TRITONBACKEND_Response *response, const uint32_t index, const char **name,
    TRITONSERVER_DataType *datatype, const int64_t **shape,
    uint64_t *dim_count) {
  const ifd_response_t *resp = (const ifd_response_t *)response;
  const ifd_output_t *o;
  ARG_CHECK(response != NULL && name != NULL && datatype != NULL &&
            shape != NULL && dim_count != NULL);
  if (index >= resp->n_outputs)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "response output index out of range");
  o = &resp->outputs[index];
  *name = o->name;
  *datatype = (TRITONSERVER_DataType)o->dtype;
  *shape = o->shape;
  *dim_count = o->ndims;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_InferenceResponseOutputByName(
    TRITONBACKEND_Response *response, const char *name,
    TRITONSERVER_DataType *datatype, const int64_t **shape,
    uint64_t *dim_count) {
  const ifd_response_t *resp = (const ifd_response_t *)response;
  uint32_t i;
  ARG_CHECK(response != NULL && name != NULL && datatype != NULL &&
            shape != NULL && dim_count != NULL);
  for (i = 0; i < resp->n_outputs; i++) {
    const ifd_output_t *o = &resp->outputs[i];
    if (strcmp(o->name, name) != 0) continue;
    *datatype = (TRITONSERVER_DataType)o->dtype;
    *shape = o->shape;
    *dim_count = o->ndims;
    return NULL;
  }
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_NOT_FOUND,
                               "response has no output of that name");
}

/* ---- statistics ---------------------------------------------------------- */

/* Accepted and dropped, like the other TRITONBACKEND_*Report* functions in
 * tb_request.c until statistics land: a decoupled backend reports after
 * every response, and an error here would only fill its log. The caller
 * keeps ownership of `error`. */
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportResponseStatistics(
    TRITONBACKEND_ModelInstance *instance,
    TRITONBACKEND_ResponseFactory *response_factory,
    const uint64_t response_start, const uint64_t compute_output_start,
    const uint64_t response_end, const uint32_t send_flags,
    TRITONSERVER_Error *error) {
  ARG_CHECK(instance != NULL && response_factory != NULL);
  (void)response_start;
  (void)compute_output_start;
  (void)response_end;
  (void)send_flags;
  (void)error;
  return NULL;
}
