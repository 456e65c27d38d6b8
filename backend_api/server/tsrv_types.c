/*
 * backend_api/server/tsrv_types.c - enum names, data type sizes, API versions
 * and TRITONSERVER_Parameter objects.
 *
 * Names match Triton's exactly: clients and backends print and compare them.
 */
#include "backend_api/internal.h"

#include <stdlib.h>
#include <string.h>

/* Indexed by TRITONSERVER_DataType; NULL marks INVALID. */
static const struct {
  const char *name;
  uint32_t size;
} dtypes[] = {
    [TRITONSERVER_TYPE_INVALID] = {NULL, 0},
    [TRITONSERVER_TYPE_BOOL] = {"BOOL", 1},
    [TRITONSERVER_TYPE_UINT8] = {"UINT8", 1},
    [TRITONSERVER_TYPE_UINT16] = {"UINT16", 2},
    [TRITONSERVER_TYPE_UINT32] = {"UINT32", 4},
    [TRITONSERVER_TYPE_UINT64] = {"UINT64", 8},
    [TRITONSERVER_TYPE_INT8] = {"INT8", 1},
    [TRITONSERVER_TYPE_INT16] = {"INT16", 2},
    [TRITONSERVER_TYPE_INT32] = {"INT32", 4},
    [TRITONSERVER_TYPE_INT64] = {"INT64", 8},
    [TRITONSERVER_TYPE_FP16] = {"FP16", 2},
    [TRITONSERVER_TYPE_FP32] = {"FP32", 4},
    [TRITONSERVER_TYPE_FP64] = {"FP64", 8},
    [TRITONSERVER_TYPE_BYTES] = {"BYTES", 0},
    [TRITONSERVER_TYPE_BF16] = {"BF16", 2},
};

#define NDTYPES (sizeof(dtypes) / sizeof(dtypes[0]))

const char *TRITONSERVER_DataTypeString(TRITONSERVER_DataType datatype) {
  if ((unsigned)datatype < NDTYPES && dtypes[datatype].name != NULL)
    return dtypes[datatype].name;
  return "<invalid>";
}

TRITONSERVER_DataType TRITONSERVER_StringToDataType(const char *dtype) {
  if (dtype == NULL) return TRITONSERVER_TYPE_INVALID;
  for (size_t i = 1; i < NDTYPES; i++)
    if (strcmp(dtype, dtypes[i].name) == 0) return (TRITONSERVER_DataType)i;
  return TRITONSERVER_TYPE_INVALID;
}

uint32_t TRITONSERVER_DataTypeByteSize(TRITONSERVER_DataType datatype) {
  return (unsigned)datatype < NDTYPES ? dtypes[datatype].size : 0;
}

const char *TRITONSERVER_MemoryTypeString(TRITONSERVER_MemoryType memtype) {
  switch (memtype) {
    case TRITONSERVER_MEMORY_CPU:
      return "CPU";
    case TRITONSERVER_MEMORY_CPU_PINNED:
      return "CPU_PINNED";
    case TRITONSERVER_MEMORY_GPU:
      return "GPU";
  }
  return "<invalid>";
}

const char *TRITONSERVER_ParameterTypeString(
    TRITONSERVER_ParameterType paramtype) {
  switch (paramtype) {
    case TRITONSERVER_PARAMETER_STRING:
      return "STRING";
    case TRITONSERVER_PARAMETER_INT:
      return "INT";
    case TRITONSERVER_PARAMETER_BOOL:
      return "BOOL";
    case TRITONSERVER_PARAMETER_DOUBLE:
      return "DOUBLE";
    case TRITONSERVER_PARAMETER_BYTES:
      return "BYTES";
  }
  return "<invalid>";
}

const char *TRITONSERVER_InstanceGroupKindString(
    TRITONSERVER_InstanceGroupKind kind) {
  switch (kind) {
    case TRITONSERVER_INSTANCEGROUPKIND_AUTO:
      return "AUTO";
    case TRITONSERVER_INSTANCEGROUPKIND_CPU:
      return "CPU";
    case TRITONSERVER_INSTANCEGROUPKIND_GPU:
      return "GPU";
    case TRITONSERVER_INSTANCEGROUPKIND_MODEL:
      return "MODEL";
  }
  return "<invalid>";
}

/* Trace level and activity names are static strings, as in Triton:
 * backends print them. The trace objects are the in-process API's
 * (capi/capi_trace.c). Unknown values get "<unknown>", never NULL, so a
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

/* The trace objects themselves are in backend_api/capi/capi_trace.c. */

TRITONSERVER_Error *TRITONSERVER_ApiVersion(uint32_t *major, uint32_t *minor) {
  if (major == NULL || minor == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "major and minor are required");
  *major = TRITONSERVER_API_VERSION_MAJOR;
  *minor = TRITONSERVER_API_VERSION_MINOR;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ApiVersion(uint32_t *major, uint32_t *minor) {
  if (major == NULL || minor == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "major and minor are required");
  *major = TRITONBACKEND_API_VERSION_MAJOR;
  *minor = TRITONBACKEND_API_VERSION_MINOR;
  return NULL;
}

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d != NULL) memcpy(d, s, n);
  return d;
}

TRITONSERVER_Parameter *TRITONSERVER_ParameterNew(
    const char *name, const TRITONSERVER_ParameterType type,
    const void *value) {
  if (name == NULL || value == NULL || type == TRITONSERVER_PARAMETER_BYTES)
    return NULL;
  TRITONSERVER_Parameter *p = calloc(1, sizeof(*p));
  if (p == NULL) return NULL;
  p->name = dup_str(name);
  if (p->name == NULL) goto out_free_param;
  p->type = type;
  switch (type) {
    case TRITONSERVER_PARAMETER_STRING:
      p->v.s = dup_str((const char *)value);
      if (p->v.s == NULL) goto out_free_name;
      break;
    case TRITONSERVER_PARAMETER_INT:
      memcpy(&p->v.i, value, sizeof(p->v.i));
      break;
    case TRITONSERVER_PARAMETER_BOOL:
      memcpy(&p->v.b, value, sizeof(p->v.b));
      break;
    case TRITONSERVER_PARAMETER_DOUBLE:
      memcpy(&p->v.d, value, sizeof(p->v.d));
      break;
    default:
      goto out_free_name;
  }
  return p;

out_free_name:
  free(p->name);
out_free_param:
  free(p);
  return NULL;
}

TRITONSERVER_Parameter *TRITONSERVER_ParameterBytesNew(const char *name,
                                                       const void *byte_ptr,
                                                       const uint64_t size) {
  if (name == NULL) return NULL;
  TRITONSERVER_Parameter *p = calloc(1, sizeof(*p));
  if (p == NULL) return NULL;
  p->name = dup_str(name);
  if (p->name == NULL) {
    free(p);
    return NULL;
  }
  p->type = TRITONSERVER_PARAMETER_BYTES;
  p->v.bytes.base = byte_ptr;
  p->v.bytes.size = size;
  return p;
}

void TRITONSERVER_ParameterDelete(TRITONSERVER_Parameter *parameter) {
  if (parameter == NULL) return;
  if (parameter->type == TRITONSERVER_PARAMETER_STRING) free(parameter->v.s);
  free(parameter->name);
  free(parameter);
}
