/*
 * backend_api/backends/onnxruntime/ort_util.c - the ONNX Runtime backend's
 * small helpers: error conversion, data type tables, shapes as text,
 * logging, and reading a session's inputs and outputs.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define ERR_ARG TRITONSERVER_ERROR_INVALID_ARG
#define ERR_INTERNAL TRITONSERVER_ERROR_INTERNAL

TRITONSERVER_Error *ifd_ort_err(OrtStatus *status) {
  TRITONSERVER_Error *e;
  OrtErrorCode code;
  if (status == NULL) return NULL;
  code = ifd_ort->GetErrorCode(status);
  e = ifd_be_errf(code == ORT_INVALID_ARGUMENT ? TRITONSERVER_ERROR_INVALID_ARG
                                               : TRITONSERVER_ERROR_INTERNAL,
                  "onnx runtime error %d: %s", (int)code,
                  ifd_ort->GetErrorMessage(status));
  ifd_ort->ReleaseStatus(status);
  return e;
}

void ifd_ort_log(TRITONSERVER_LogLevel level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ifd_be_vlog(level, "onnxruntime", fmt, ap);
  va_end(ap);
}

/* One row per type both sides have. Triton's own ORT backend leaves BF16
 * out; ONNX Runtime has it, so it is served here too. */
static const struct {
  ONNXTensorElementDataType onnx;
  TRITONSERVER_DataType triton;
  const char *config; /* model configuration name */
  const char *onnx_name;
} types[] = {
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL, TRITONSERVER_TYPE_BOOL, "TYPE_BOOL",
     "BOOL"},
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8, TRITONSERVER_TYPE_UINT8, "TYPE_UINT8",
     "UINT8"},
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16, TRITONSERVER_TYPE_UINT16,
     "TYPE_UINT16", "UINT16"},
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32, TRITONSERVER_TYPE_UINT32,
     "TYPE_UINT32", "UINT32"},
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64, TRITONSERVER_TYPE_UINT64,
     "TYPE_UINT64", "UINT64"},
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8, TRITONSERVER_TYPE_INT8, "TYPE_INT8",
     "INT8"},
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16, TRITONSERVER_TYPE_INT16, "TYPE_INT16",
     "INT16"},
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32, TRITONSERVER_TYPE_INT32, "TYPE_INT32",
     "INT32"},
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, TRITONSERVER_TYPE_INT64, "TYPE_INT64",
     "INT64"},
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16, TRITONSERVER_TYPE_FP16, "TYPE_FP16",
     "FLOAT16"},
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, TRITONSERVER_TYPE_FP32, "TYPE_FP32",
     "FLOAT"},
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE, TRITONSERVER_TYPE_FP64, "TYPE_FP64",
     "DOUBLE"},
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING, TRITONSERVER_TYPE_BYTES,
     "TYPE_STRING", "STRING"},
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16, TRITONSERVER_TYPE_BF16,
     "TYPE_BF16", "BFLOAT16"},
};
#define N_TYPES (sizeof(types) / sizeof(types[0]))

TRITONSERVER_DataType ifd_ort_to_triton(ONNXTensorElementDataType t) {
  for (size_t i = 0; i < N_TYPES; i++)
    if (types[i].onnx == t) return types[i].triton;
  return TRITONSERVER_TYPE_INVALID;
}

ONNXTensorElementDataType ifd_ort_from_triton(TRITONSERVER_DataType t) {
  for (size_t i = 0; i < N_TYPES; i++)
    if (types[i].triton == t) return types[i].onnx;
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
}

ONNXTensorElementDataType ifd_ort_from_config(const char *s) {
  for (size_t i = 0; s != NULL && i < N_TYPES; i++)
    if (strcmp(types[i].config, s) == 0) return types[i].onnx;
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
}

const char *ifd_ort_config_name(ONNXTensorElementDataType t) {
  for (size_t i = 0; i < N_TYPES; i++)
    if (types[i].onnx == t) return types[i].config;
  return "TYPE_INVALID";
}

const char *ifd_ort_onnx_name(ONNXTensorElementDataType t) {
  for (size_t i = 0; i < N_TYPES; i++)
    if (types[i].onnx == t) return types[i].onnx_name;
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64:
      return "COMPLEX64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128:
      return "COMPLEX128";
    default:
      return "UNDEFINED";
  }
}

char *ifd_ort_shape_str(const int64_t *dims, size_t n, char *buf, size_t cap) {
  size_t len = 0;
  if (cap == 0) return buf;
  buf[0] = '\0';
  len += (size_t)snprintf(buf, cap, "[");
  for (size_t i = 0; i < n && len < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? "," : "",
                            (long long)dims[i]);
  if (len < cap) snprintf(buf + len, cap - len, "]");
  return buf;
}

void ifd_ort_io_free(ort_io_list_t *l) {
  for (size_t i = 0; i < l->n; i++) {
    free(l->v[i].name);
    free(l->v[i].dims);
  }
  free(l->v);
  l->v = NULL;
  l->n = 0;
}

const ort_io_t *ifd_ort_io_find(const ort_io_list_t *l, const char *name) {
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->v[i].name, name) == 0) return &l->v[i];
  return NULL;
}

static const char *onnx_type_name(ONNXType t) {
  switch (t) {
    case ONNX_TYPE_TENSOR:
      return "ONNX_TYPE_TENSOR";
    case ONNX_TYPE_SEQUENCE:
      return "ONNX_TYPE_SEQUENCE";
    case ONNX_TYPE_MAP:
      return "ONNX_TYPE_MAP";
    case ONNX_TYPE_OPAQUE:
      return "ONNX_TYPE_OPAQUE";
    case ONNX_TYPE_SPARSETENSOR:
      return "ONNX_TYPE_SPARSETENSOR";
    default:
      return "ONNX_TYPE_UNKNOWN";
  }
}

/* Fills io from the type information of one session tensor. */
static TRITONSERVER_Error *read_type(OrtTypeInfo *ti, ort_io_t *io) {
  const OrtTensorTypeAndShapeInfo *tsi = NULL;
  ONNXType kind = ONNX_TYPE_UNKNOWN;
  size_t n = 0;
  TRITONSERVER_Error *e =
      ifd_ort_err(ifd_ort->GetOnnxTypeFromTypeInfo(ti, &kind));
  if (e != NULL) return e;
  if (kind != ONNX_TYPE_TENSOR)
    return ifd_be_errf(TRITONSERVER_ERROR_UNSUPPORTED,
                       "Unsupported ONNX Type '%s' for I/O '%s', expected "
                       "'ONNX_TYPE_TENSOR'.",
                       onnx_type_name(kind), io->name);
  e = ifd_ort_err(ifd_ort->CastTypeInfoToTensorInfo(ti, &tsi));
  if (e == NULL)
    e = ifd_ort_err(ifd_ort->GetTensorElementType(tsi, &io->otype));
  if (e == NULL) e = ifd_ort_err(ifd_ort->GetDimensionsCount(tsi, &n));
  if (e != NULL) return e;
  io->dims = calloc(n > 0 ? n : 1, sizeof(int64_t));
  if (io->dims == NULL)
    return ifd_be_errf(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  io->n_dims = n;
  return ifd_ort_err(ifd_ort->GetDimensions(tsi, io->dims, n));
}

/* which: 0 inputs, 1 outputs, 2 overridable initializers. Appends. */
static TRITONSERVER_Error *read_kind(OrtSession *s, OrtAllocator *alloc,
                                     int which, ort_io_list_t *l) {
  size_t n = 0;
  TRITONSERVER_Error *e;
  ort_io_t *grown;
  e = ifd_ort_err(which == 0 ? ifd_ort->SessionGetInputCount(s, &n)
                  : which == 1
                      ? ifd_ort->SessionGetOutputCount(s, &n)
                      : ifd_ort->SessionGetOverridableInitializerCount(s, &n));
  if (e != NULL || n == 0) return e;
  grown = realloc(l->v, (l->n + n) * sizeof(*grown));
  if (grown == NULL)
    return ifd_be_errf(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  l->v = grown;
  for (size_t i = 0; i < n; i++) {
    ort_io_t *io = &l->v[l->n];
    char *name = NULL;
    OrtTypeInfo *ti = NULL;
    memset(io, 0, sizeof(*io));
    e = ifd_ort_err(
        which == 0   ? ifd_ort->SessionGetInputName(s, i, alloc, &name)
        : which == 1 ? ifd_ort->SessionGetOutputName(s, i, alloc, &name)
                     : ifd_ort->SessionGetOverridableInitializerName(
                           s, i, alloc, &name));
    if (e != NULL) return e;
    io->name = strdup(name);
    TRITONSERVER_ErrorDelete(ifd_ort_err(ifd_ort->AllocatorFree(alloc, name)));
    if (io->name == NULL)
      return ifd_be_errf(TRITONSERVER_ERROR_INTERNAL, "out of memory");
    l->n++;
    e = ifd_ort_err(
        which == 0 ? ifd_ort->SessionGetInputTypeInfo(s, i, &ti)
        : which == 1
            ? ifd_ort->SessionGetOutputTypeInfo(s, i, &ti)
            : ifd_ort->SessionGetOverridableInitializerTypeInfo(s, i, &ti));
    if (e != NULL) return e;
    e = read_type(ti, io);
    ifd_ort->ReleaseTypeInfo(ti);
    if (e != NULL) return e;
  }
  return NULL;
}

TRITONSERVER_Error *ifd_ort_read_ios(OrtSession *s, OrtAllocator *alloc,
                                     int outputs, ort_io_list_t *out) {
  TRITONSERVER_Error *e;
  out->v = NULL;
  out->n = 0;
  out->n_graph = 0;
  if (outputs) {
    e = read_kind(s, alloc, 1, out);
    out->n_graph = out->n;
  } else {
    e = read_kind(s, alloc, 0, out);
    out->n_graph = out->n;
    if (e == NULL) e = read_kind(s, alloc, 2, out);
  }
  if (e != NULL) ifd_ort_io_free(out);
  return e;
}

/* ---- configuration JSON ---------------------------------------------------
 */

/* A JSON integer, or a string holding one (int64 fields may be either). */
int ifd_ort_json_int(const json_t *v, long long *out) {
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

long long ifd_ort_member_int(const json_t *o, const char *key, long long dflt) {
  long long v;
  return ifd_ort_json_int(json_object_get(o, key), &v) ? v : dflt;
}

const char *ifd_ort_member_str(const json_t *o, const char *key) {
  const json_t *v = json_object_get(o, key);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

int ifd_ort_member_bool(const json_t *o, const char *key) {
  return json_is_true(json_object_get(o, key));
}

/* The shape of a configuration tensor: reshape.shape when given (that is
 * what the model sees), else dims. *n = 0 and NULL for an empty shape. */
TRITONSERVER_Error *ifd_ort_config_shape(const json_t *io, int64_t **dims,
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
  if (*dims == NULL) return ifd_be_errf(ERR_INTERNAL, "out of memory");
  for (i = 0; i < *n; i++) {
    long long d;
    if (!ifd_ort_json_int(json_array_get(arr, i), &d)) {
      free(*dims);
      *dims = NULL;
      return ifd_be_errf(ERR_ARG, "dims of '%s' are not integers",
                         ifd_ort_member_str(io, "name"));
    }
    (*dims)[i] = d;
  }
  return NULL;
}

/* parameters { key: K value { string_value: V } } -> V, or NULL. */
const char *ifd_ort_param(const json_t *config, const char *key) {
  const json_t *p = json_object_get(json_object_get(config, "parameters"), key);
  return ifd_ort_member_str(p, "string_value");
}

TRITONSERVER_Error *ifd_ort_param_int(const json_t *config, const char *key,
                                      int dflt, int *out) {
  const char *s = ifd_ort_param(config, key);
  char *end;
  long v;
  *out = dflt;
  if (s == NULL) return NULL;
  errno = 0;
  v = strtol(s, &end, 10);
  if (end == s || errno != 0 || v < -2147483647L || v > 2147483647L)
    return ifd_be_errf(ERR_ARG, "failed to convert '%s' to integral number", s);
  *out = (int)v;
  return NULL;
}

/* Triton's boolean words: true/on/1 and false/off/0, any case. */
TRITONSERVER_Error *ifd_ort_parse_bool(const char *s, int *out) {
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
  return ifd_be_errf(ERR_ARG, "failed to convert '%s' to boolean", s);
}

TRITONSERVER_Error *ifd_ort_param_bool(const json_t *config, const char *key,
                                       int *out) {
  const char *s = ifd_ort_param(config, key);
  *out = -1;
  return s == NULL ? NULL : ifd_ort_parse_bool(s, out);
}

size_t ifd_ort_array_size(const json_t *o, const char *key) {
  const json_t *a = json_object_get(o, key);
  return json_is_array(a) ? json_array_size(a) : 0;
}

/* The first string of array `key` of o, or NULL. */
const char *ifd_ort_first_str(const json_t *o, const char *key) {
  const json_t *a = json_object_get(o, key);
  const json_t *v = json_is_array(a) ? json_array_get(a, 0) : NULL;
  return json_is_string(v) ? json_string_value(v) : NULL;
}
