/*
 * test/models/backends/abicheck/abicheck.c - the "abicheck" test backend.
 *
 * README: built as libtriton_abicheck.so; uses the public Triton ABI only.
 * It checks, from inside a backend, that the server's side of the ABI
 * answers what Triton would for the model test/models/abi_repo/abicheck and
 * the request test/e2e/test_abi.py sends (id "abi-1", input "IN" INT32 [1]
 * holding 7). Each request is answered with output "REPORT", INT32 of shape
 * [N], element i being 1 when check i passed and 0 when it failed, in the
 * order of `checks` below; the string parameter "failures" names the failed
 * checks (comma-separated, "" when none) and the integer parameter "checked"
 * holds N.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

#define TESTBE_NAME "abicheck"
#include "../common/testbe.h"

/* What the model config and the test's request imply. */
#define EXPECT_NAME "abicheck"
#define EXPECT_REQUEST_ID "abi-1"
#define EXPECT_IN_VALUE 7

/* The checks, in REPORT order. */
#define CHECKS(X)             \
  X(api_version)              \
  X(backend_name)             \
  X(backend_config)           \
  X(backend_artifacts)        \
  X(backend_state)            \
  X(initialize_once)          \
  X(model_name)               \
  X(model_version)            \
  X(model_repository)         \
  X(model_config)             \
  X(model_autocomplete)       \
  X(model_state)              \
  X(instance_name)            \
  X(instance_kind)            \
  X(instance_device_id)       \
  X(instance_state)           \
  X(request_id)               \
  X(request_input_count)      \
  X(input_properties)         \
  X(input_buffer)             \
  X(input_buffer_attributes)  \
  X(request_outputs)          \
  X(response_int_parameter)   \
  X(datatype_string)          \
  X(string_to_datatype)       \
  X(datatype_byte_size)       \
  X(null_attribute_error)     \
  X(buffer_attributes)        \
  X(memory_manager)           \
  X(response_output_readback) \
  X(output_buffer_attributes)

enum {
#define X(name) CHECK_##name,
  CHECKS(X)
#undef X
      NCHECKS
};

static const char *const check_names[NCHECKS] = {
#define X(name) #name,
    CHECKS(X)
#undef X
};

/* TRITONBACKEND_Initialize calls: the library must be initialized once even
 * though the model has two instances. Atomic because instance threads read
 * it. */
static atomic_int init_calls;

/* Distinct addresses handed to the *SetState functions. */
static int backend_token;
typedef struct model_state {
  TRITONBACKEND_Model *self; /* borrowed: the model */
} model_state_t;
typedef struct instance_state {
  TRITONBACKEND_ModelInstance *self; /* borrowed: the instance */
} instance_state_t;

/* True when the call succeeded; a failure is logged and its error freed. */
static int ok(TRITONSERVER_Error *err, const char *what) {
  if (err == NULL) return 1;
  log_if_error(err, what);
  return 0;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
  atomic_fetch_add(&init_calls, 1);
  return TRITONBACKEND_BackendSetState(backend, &backend_token);
}

TRITONSERVER_Error *TRITONBACKEND_Finalize(TRITONBACKEND_Backend *backend) {
  (void)backend;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
  model_state_t *st = calloc(1, sizeof(*st));
  TRITONSERVER_Error *err;
  if (st == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  st->self = model;
  err = TRITONBACKEND_ModelSetState(model, st);
  if (err != NULL) free(st);
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model) {
  void *st = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelState(model, &st);
  free(st);
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(
    TRITONBACKEND_ModelInstance *instance) {
  instance_state_t *st = calloc(1, sizeof(*st));
  TRITONSERVER_Error *err;
  if (st == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  st->self = instance;
  err = TRITONBACKEND_ModelInstanceSetState(instance, st);
  if (err != NULL) free(st);
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceFinalize(
    TRITONBACKEND_ModelInstance *instance) {
  void *st = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceState(instance, &st);
  free(st);
  return err;
}

/* ---- the checks -----------------------------------------------------------
 */

static void check_backend(TRITONBACKEND_Backend *backend, int32_t *r) {
  uint32_t major = 0, minor = 0;
  r[CHECK_api_version] = ok(TRITONBACKEND_ApiVersion(&major, &minor),
                            "TRITONBACKEND_ApiVersion") &&
                         major == 1 && minor >= 19;

  const char *name = NULL;
  r[CHECK_backend_name] =
      ok(TRITONBACKEND_BackendName(backend, &name), "BackendName") &&
      name != NULL && strcmp(name, EXPECT_NAME) == 0;

  TRITONSERVER_Message *msg = NULL;
  const char *json = NULL;
  size_t len = 0;
  /* The backend config is owned by the server: not deleted here. */
  r[CHECK_backend_config] =
      ok(TRITONBACKEND_BackendConfig(backend, &msg), "BackendConfig") &&
      msg != NULL &&
      ok(TRITONSERVER_MessageSerializeToJson(msg, &json, &len),
         "MessageSerializeToJson") &&
      json != NULL && strstr(json, "\"cmdline\"") != NULL;
  /* Logged whole: test_abi.py checks that --backend-config reaches it. */
  if (json != NULL)
    log_if_error(TRITONSERVER_LogMessage(TRITONSERVER_LOG_INFO, __FILE__,
                                         __LINE__, json),
                 "LogMessage");

  TRITONBACKEND_ArtifactType at = (TRITONBACKEND_ArtifactType)-1;
  const char *loc = NULL;
  char path[4096];
  struct stat st;
  r[CHECK_backend_artifacts] =
      ok(TRITONBACKEND_BackendArtifacts(backend, &at, &loc),
         "BackendArtifacts") &&
      at == TRITONBACKEND_ARTIFACT_FILESYSTEM && loc != NULL &&
      stat(loc, &st) == 0 && S_ISDIR(st.st_mode) &&
      snprintf(path, sizeof(path), "%s/libtriton_abicheck.so", loc) <
          (int)sizeof(path) &&
      stat(path, &st) == 0 && S_ISREG(st.st_mode);

  void *state = NULL;
  r[CHECK_backend_state] =
      ok(TRITONBACKEND_BackendState(backend, &state), "BackendState") &&
      state == &backend_token;

  r[CHECK_initialize_once] = atomic_load(&init_calls) == 1;
}

static void check_model(TRITONBACKEND_Model *model, int32_t *r) {
  const char *name = NULL;
  r[CHECK_model_name] =
      ok(TRITONBACKEND_ModelName(model, &name), "ModelName") && name != NULL &&
      strcmp(name, EXPECT_NAME) == 0;

  uint64_t version = 0;
  r[CHECK_model_version] =
      ok(TRITONBACKEND_ModelVersion(model, &version), "ModelVersion") &&
      version == 1;

  TRITONBACKEND_ArtifactType at = (TRITONBACKEND_ArtifactType)-1;
  const char *loc = NULL;
  r[CHECK_model_repository] =
      ok(TRITONBACKEND_ModelRepository(model, &at, &loc), "ModelRepository") &&
      at == TRITONBACKEND_ARTIFACT_FILESYSTEM && loc != NULL &&
      ends_with(loc, "/" EXPECT_NAME);

  TRITONSERVER_Message *cfg = NULL;
  const char *json = NULL;
  size_t len = 0;
  /* ModelConfig's message belongs to the caller. */
  r[CHECK_model_config] =
      ok(TRITONBACKEND_ModelConfig(model, 1, &cfg), "ModelConfig") &&
      cfg != NULL &&
      ok(TRITONSERVER_MessageSerializeToJson(cfg, &json, &len),
         "MessageSerializeToJson") &&
      json != NULL && strstr(json, "\"max_batch_size\":0") != NULL &&
      strstr(json, "\"p1\"") != NULL;
  if (cfg != NULL)
    log_if_error(TRITONSERVER_MessageDelete(cfg), "MessageDelete");

  bool autocomplete = false;
  r[CHECK_model_autocomplete] =
      ok(TRITONBACKEND_ModelAutoCompleteConfig(model, &autocomplete),
         "ModelAutoCompleteConfig");

  void *state = NULL;
  r[CHECK_model_state] =
      ok(TRITONBACKEND_ModelState(model, &state), "ModelState") &&
      state != NULL && ((model_state_t *)state)->self == model;
}

static void check_instance(TRITONBACKEND_ModelInstance *instance, int32_t *r) {
  const char *name = NULL;
  r[CHECK_instance_name] = ok(TRITONBACKEND_ModelInstanceName(instance, &name),
                              "ModelInstanceName") &&
                           name != NULL &&
                           (strcmp(name, EXPECT_NAME "_0_0") == 0 ||
                            strcmp(name, EXPECT_NAME "_0_1") == 0);

  TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_AUTO;
  r[CHECK_instance_kind] = ok(TRITONBACKEND_ModelInstanceKind(instance, &kind),
                              "ModelInstanceKind") &&
                           kind == TRITONSERVER_INSTANCEGROUPKIND_CPU;

  int32_t device_id = -1;
  r[CHECK_instance_device_id] =
      ok(TRITONBACKEND_ModelInstanceDeviceId(instance, &device_id),
         "ModelInstanceDeviceId") &&
      device_id == 0;

  void *state = NULL;
  r[CHECK_instance_state] =
      ok(TRITONBACKEND_ModelInstanceState(instance, &state),
         "ModelInstanceState") &&
      state != NULL && ((instance_state_t *)state)->self == instance;
}

static void check_request(TRITONBACKEND_Request *request, int32_t *r) {
  const char *id = NULL;
  r[CHECK_request_id] =
      ok(TRITONBACKEND_RequestId(request, &id), "RequestId") && id != NULL &&
      strcmp(id, EXPECT_REQUEST_ID) == 0;

  uint32_t count = 0;
  r[CHECK_request_input_count] =
      ok(TRITONBACKEND_RequestInputCount(request, &count),
         "RequestInputCount") &&
      count == 1;

  TRITONBACKEND_Input *input = NULL;
  const char *iname = NULL;
  TRITONSERVER_DataType dtype = TRITONSERVER_TYPE_INVALID;
  const int64_t *shape = NULL;
  uint32_t dims = 0, nbuf = 0;
  uint64_t size = 0;
  int have_input =
      ok(TRITONBACKEND_RequestInput(request, "IN", &input), "RequestInput") &&
      input != NULL;
  r[CHECK_input_properties] =
      have_input &&
      ok(TRITONBACKEND_InputProperties(input, &iname, &dtype, &shape, &dims,
                                       &size, &nbuf),
         "InputProperties") &&
      iname != NULL && strcmp(iname, "IN") == 0 &&
      dtype == TRITONSERVER_TYPE_INT32 && dims == 1 && shape != NULL &&
      shape[0] == 1 && size == sizeof(int32_t) && nbuf == 1;

  const void *buf = NULL;
  uint64_t bsize = 0;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mt_id = 0;
  int32_t value = 0;
  r[CHECK_input_buffer] =
      have_input &&
      ok(TRITONBACKEND_InputBuffer(input, 0, &buf, &bsize, &mt, &mt_id),
         "InputBuffer") &&
      buf != NULL && bsize == sizeof(int32_t) &&
      mt != TRITONSERVER_MEMORY_GPU &&
      (memcpy(&value, buf, sizeof(value)), value == EXPECT_IN_VALUE);

  const void *abuf = NULL;
  TRITONSERVER_BufferAttributes *attrs = NULL;
  size_t asize = 0;
  TRITONSERVER_MemoryType amt = TRITONSERVER_MEMORY_GPU;
  int64_t amt_id = -1;
  /* The input owns its attributes: not deleted here. */
  r[CHECK_input_buffer_attributes] =
      have_input &&
      ok(TRITONBACKEND_InputBufferAttributes(input, 0, &abuf, &attrs),
         "InputBufferAttributes") &&
      attrs != NULL && abuf == buf &&
      ok(TRITONSERVER_BufferAttributesByteSize(attrs, &asize),
         "BufferAttributesByteSize") &&
      ok(TRITONSERVER_BufferAttributesMemoryType(attrs, &amt),
         "BufferAttributesMemoryType") &&
      ok(TRITONSERVER_BufferAttributesMemoryTypeId(attrs, &amt_id),
         "BufferAttributesMemoryTypeId") &&
      asize == sizeof(int32_t) && amt == mt && amt_id == mt_id;

  const char *oname = NULL;
  count = 0;
  r[CHECK_request_outputs] =
      ok(TRITONBACKEND_RequestOutputCount(request, &count),
         "RequestOutputCount") &&
      count == 1 &&
      ok(TRITONBACKEND_RequestOutputName(request, 0, &oname),
         "RequestOutputName") &&
      oname != NULL && strcmp(oname, "REPORT") == 0;
}

/* Checks that need no server object. */
static void check_free_functions(TRITONBACKEND_Backend *backend, int32_t *r) {
  const char *s = TRITONSERVER_DataTypeString(TRITONSERVER_TYPE_FP32);
  r[CHECK_datatype_string] = s != NULL && strcmp(s, "FP32") == 0;
  r[CHECK_string_to_datatype] =
      TRITONSERVER_StringToDataType("INT64") == TRITONSERVER_TYPE_INT64 &&
      TRITONSERVER_StringToDataType("NOPE") == TRITONSERVER_TYPE_INVALID;
  r[CHECK_datatype_byte_size] =
      TRITONSERVER_DataTypeByteSize(TRITONSERVER_TYPE_INT32) == 4 &&
      TRITONSERVER_DataTypeByteSize(TRITONSERVER_TYPE_FP64) == 8 &&
      TRITONSERVER_DataTypeByteSize(TRITONSERVER_TYPE_BYTES) == 0;

  /* A refused call answers with a real error object, never a silent
   * success: the backend attributes object is required. */
  TRITONSERVER_Error *err =
      TRITONBACKEND_BackendAttributeSetParallelModelInstanceLoading(NULL, true);
  const char *msg = err != NULL ? TRITONSERVER_ErrorMessage(err) : NULL;
  r[CHECK_null_attribute_error] =
      err != NULL &&
      TRITONSERVER_ErrorCode(err) == TRITONSERVER_ERROR_INVALID_ARG &&
      msg != NULL && msg[0] != '\0';
  TRITONSERVER_ErrorDelete(err);

  TRITONSERVER_BufferAttributes *ba = NULL;
  size_t size = 0;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_GPU;
  int64_t mt_id = -1;
  void *ipc = &size;
  int b = ok(TRITONSERVER_BufferAttributesNew(&ba), "BufferAttributesNew") &&
          ba != NULL;
  b = b &&
      ok(TRITONSERVER_BufferAttributesMemoryType(ba, &mt),
         "BufferAttributesMemoryType") &&
      mt == TRITONSERVER_MEMORY_CPU &&
      ok(TRITONSERVER_BufferAttributesCudaIpcHandle(ba, &ipc),
         "BufferAttributesCudaIpcHandle") &&
      ipc == NULL;
  b = b &&
      ok(TRITONSERVER_BufferAttributesSetByteSize(ba, 123),
         "BufferAttributesSetByteSize") &&
      ok(TRITONSERVER_BufferAttributesSetMemoryType(
             ba, TRITONSERVER_MEMORY_CPU_PINNED),
         "BufferAttributesSetMemoryType") &&
      ok(TRITONSERVER_BufferAttributesSetMemoryTypeId(ba, 3),
         "BufferAttributesSetMemoryTypeId") &&
      ok(TRITONSERVER_BufferAttributesByteSize(ba, &size),
         "BufferAttributesByteSize") &&
      ok(TRITONSERVER_BufferAttributesMemoryType(ba, &mt),
         "BufferAttributesMemoryType") &&
      ok(TRITONSERVER_BufferAttributesMemoryTypeId(ba, &mt_id),
         "BufferAttributesMemoryTypeId") &&
      size == 123 && mt == TRITONSERVER_MEMORY_CPU_PINNED && mt_id == 3;
  if (ba != NULL)
    b = ok(TRITONSERVER_BufferAttributesDelete(ba), "BufferAttributesDelete") &&
        b;
  r[CHECK_buffer_attributes] = b;

  TRITONBACKEND_MemoryManager *mm = NULL;
  void *p = NULL;
  int m = ok(TRITONBACKEND_BackendMemoryManager(backend, &mm),
             "BackendMemoryManager") &&
          mm != NULL &&
          ok(TRITONBACKEND_MemoryManagerAllocate(
                 mm, &p, TRITONSERVER_MEMORY_CPU, 0, 64),
             "MemoryManagerAllocate") &&
          p != NULL;
  if (p != NULL) {
    memset(p, 0xab, 64);
    m = ok(TRITONBACKEND_MemoryManagerFree(mm, p, TRITONSERVER_MEMORY_CPU, 0),
           "MemoryManagerFree") &&
        m;
  }
  r[CHECK_memory_manager] = m;
}

static void join_failures(const int32_t *r, char *out, size_t size) {
  size_t used = 0;
  out[0] = '\0';
  for (int i = 0; i < NCHECKS; i++) {
    if (r[i]) continue;
    int n = snprintf(out + used, size - used, "%s%s", used ? "," : "",
                     check_names[i]);
    if (n < 0 || (size_t)n >= size - used) break;
    used += (size_t)n;
  }
}

/* Runs every check for one request and writes the response's REPORT. */
static TRITONSERVER_Error *process(TRITONBACKEND_ModelInstance *instance,
                                   TRITONBACKEND_Request *request,
                                   TRITONBACKEND_Response *response) {
  int32_t r[NCHECKS];
  TRITONBACKEND_Model *model = NULL;
  TRITONBACKEND_Backend *backend = NULL;
  TRITONSERVER_Error *err;

  memset(r, 0, sizeof(r));
  err = TRITONBACKEND_ModelInstanceModel(instance, &model);
  if (err == NULL) err = TRITONBACKEND_ModelBackend(model, &backend);
  if (err != NULL) return err;

  check_backend(backend, r);
  check_model(model, r);
  check_instance(instance, r);
  check_request(request, r);
  check_free_functions(backend, r);
  r[CHECK_response_int_parameter] =
      ok(TRITONBACKEND_ResponseSetIntParameter(response, "checked", NCHECKS),
         "ResponseSetIntParameter");

  TRITONBACKEND_Output *output = NULL;
  const int64_t shape[1] = {NCHECKS};
  void *dst = NULL;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mt_id = 0;
  err = TRITONBACKEND_ResponseOutput(response, &output, "REPORT",
                                     TRITONSERVER_TYPE_INT32, shape, 1);
  if (err == NULL)
    err = TRITONBACKEND_OutputBuffer(output, &dst, sizeof(r), &mt, &mt_id);
  if (err == NULL && mt == TRITONSERVER_MEMORY_GPU)
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                "abicheck needs a CPU output buffer");
  if (err != NULL) return err;

  const char *oname = NULL;
  TRITONSERVER_DataType odt = TRITONSERVER_TYPE_INVALID;
  const int64_t *oshape = NULL;
  uint64_t odims = 0;
  r[CHECK_response_output_readback] =
      ok(TRITONBACKEND_InferenceResponseOutput(response, 0, &oname, &odt,
                                               &oshape, &odims),
         "InferenceResponseOutput") &&
      oname != NULL && strcmp(oname, "REPORT") == 0 &&
      odt == TRITONSERVER_TYPE_INT32 && odims == 1 && oshape != NULL &&
      oshape[0] == NCHECKS;

  TRITONSERVER_BufferAttributes *attrs = NULL;
  size_t asize = 0;
  /* The output owns its attributes: not deleted here. */
  r[CHECK_output_buffer_attributes] =
      ok(TRITONBACKEND_OutputBufferAttributes(output, &attrs),
         "OutputBufferAttributes") &&
      attrs != NULL &&
      ok(TRITONSERVER_BufferAttributesByteSize(attrs, &asize),
         "BufferAttributesByteSize") &&
      asize == sizeof(r);

  memcpy(dst, r, sizeof(r));
  char failures[1024];
  join_failures(r, failures, sizeof(failures));
  return TRITONBACKEND_ResponseSetStringParameter(response, "failures",
                                                  failures);
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request **requests,
    const uint32_t request_count) {
  uint64_t exec_start = now_ns();
  for (uint32_t i = 0; i < request_count; i++) {
    TRITONBACKEND_Response *response = NULL;
    bool success = false;
    uint64_t start = now_ns();
    TRITONSERVER_Error *err = TRITONBACKEND_ResponseNew(&response, requests[i]);
    if (err != NULL) {
      log_if_error(err, "cannot create response");
    } else {
      err = process(instance, requests[i], response);
      success = (err == NULL);
      log_if_error(TRITONBACKEND_ResponseSend(
                       response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, err),
                   "cannot send response");
      TRITONSERVER_ErrorDelete(err);
    }
    uint64_t end = now_ns();
    log_if_error(
        TRITONBACKEND_ModelInstanceReportStatistics(
            instance, requests[i], success, exec_start, start, end, end),
        "cannot report statistics");
    log_if_error(TRITONBACKEND_RequestRelease(requests[i],
                                              TRITONSERVER_REQUEST_RELEASE_ALL),
                 "cannot release request");
  }
  uint64_t end = now_ns();
  if (request_count > 0)
    log_if_error(TRITONBACKEND_ModelInstanceReportBatchStatistics(
                     instance, request_count, exec_start, exec_start, end, end),
                 "cannot report batch statistics");
  return NULL;
}
