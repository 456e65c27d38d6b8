/*
 * backend_api/capi/capi_request.c - the application's side of an in-process
 * request: TRITONSERVER_InferenceRequest and its setters and getters.
 *
 * A request is a plain record the application fills on its own thread; the
 * server reads it only while it is in flight (capi_infer.c turns it into a
 * core request on the loop). Changing one that is in flight is refused, so
 * the loop never reads a record that another thread writes.
 */
#include "backend_api/internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/shm.h"

#define NOT_IN_FLIGHT(r)                                                     \
  do {                                                                       \
    if (atomic_load(&(r)->inflight))                                         \
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE,           \
                                   "the inference request is in flight: "    \
                                   "it cannot change until it is released"); \
  } while (0)

static TRITONSERVER_Error *nomem(void) {
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
}

/* Grows an array of `size`-byte items to hold one more. 0 or -1. */
static int grow(void **arr, uint32_t n, uint32_t *cap, size_t size) {
  void *p;
  uint32_t c;
  if (n < *cap) return 0;
  c = *cap ? *cap * 2 : 4;
  p = realloc(*arr, (size_t)c * size);
  if (p == NULL) return -1;
  *arr = p;
  *cap = c;
  return 0;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestNew(
    TRITONSERVER_InferenceRequest **inference_request,
    TRITONSERVER_Server *server, const char *model_name,
    const int64_t model_version) {
  TRITONSERVER_InferenceRequest *r;
  ARG_CHECK(inference_request != NULL && server != NULL && model_name != NULL);
  r = calloc(1, sizeof(*r));
  if (r == NULL) return nomem();
  r->server = SRV(server);
  r->model = strdup(model_name);
  r->id = strdup("");
  if (r->model == NULL || r->id == NULL) {
    free(r->model);
    free(r->id);
    free(r);
    return nomem();
  }
  r->version = model_version;
  atomic_init(&r->inflight, 0);
  atomic_init(&r->cancelled, 0);
  *inference_request = r;
  return NULL;
}

static void input_clear(ifd__capi_input_t *in) {
  free(in->name);
  free(in->shape);
  free(in->bufs);
}

void ifd__capi_request_clear(TRITONSERVER_InferenceRequest *r) {
  uint32_t i;
  for (i = 0; i < r->n_inputs; i++) input_clear(&r->inputs[i]);
  free(r->inputs);
  for (i = 0; i < r->n_outputs; i++) free(r->outputs[i]);
  free(r->outputs);
  for (i = 0; i < r->n_params; i++) {
    free(r->params[i].key);
    if (r->params[i].type == TRITONSERVER_PARAMETER_STRING)
      free(r->params[i].v.s);
  }
  free(r->params);
  free(r->chain);
  free(r->model);
  free(r->id);
  free(r->corr_id_str);
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestDelete(
    TRITONSERVER_InferenceRequest *inference_request) {
  TRITONSERVER_InferenceRequest *r = inference_request;
  ARG_CHECK(r != NULL);
  NOT_IN_FLIGHT(r);
  ifd__capi_request_clear(r);
  free(r);
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestId(
    TRITONSERVER_InferenceRequest *inference_request, const char **id) {
  ARG_CHECK(inference_request != NULL && id != NULL);
  *id = inference_request->id;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestSetId(
    TRITONSERVER_InferenceRequest *inference_request, const char *id) {
  char *s;
  ARG_CHECK(inference_request != NULL && id != NULL);
  NOT_IN_FLIGHT(inference_request);
  s = strdup(id);
  if (s == NULL) return nomem();
  free(inference_request->id);
  inference_request->id = s;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestFlags(
    TRITONSERVER_InferenceRequest *inference_request, uint32_t *flags) {
  ARG_CHECK(inference_request != NULL && flags != NULL);
  *flags = inference_request->flags;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestSetFlags(
    TRITONSERVER_InferenceRequest *inference_request, uint32_t flags) {
  ARG_CHECK(inference_request != NULL);
  NOT_IN_FLIGHT(inference_request);
  inference_request->flags = flags;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestCorrelationId(
    TRITONSERVER_InferenceRequest *inference_request,
    uint64_t *correlation_id) {
  ARG_CHECK(inference_request != NULL && correlation_id != NULL);
  /* Triton's text when the ID is a string. */
  if (inference_request->corr_id_str != NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "given request's correlation id is not an "
                                 "unsigned int");
  *correlation_id = inference_request->corr_id;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestCorrelationIdString(
    TRITONSERVER_InferenceRequest *inference_request,
    const char **correlation_id) {
  ARG_CHECK(inference_request != NULL && correlation_id != NULL);
  if (inference_request->corr_id_str == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "given request's correlation id is not a "
                                 "string");
  *correlation_id = inference_request->corr_id_str;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestSetCorrelationId(
    TRITONSERVER_InferenceRequest *inference_request, uint64_t correlation_id) {
  ARG_CHECK(inference_request != NULL);
  NOT_IN_FLIGHT(inference_request);
  free(inference_request->corr_id_str);
  inference_request->corr_id_str = NULL;
  inference_request->corr_id = correlation_id;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestSetCorrelationIdString(
    TRITONSERVER_InferenceRequest *inference_request,
    const char *correlation_id) {
  char *s;
  ARG_CHECK(inference_request != NULL && correlation_id != NULL);
  NOT_IN_FLIGHT(inference_request);
  s = strdup(correlation_id);
  if (s == NULL) return nomem();
  free(inference_request->corr_id_str);
  inference_request->corr_id_str = s;
  inference_request->corr_id = 0;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestPriority(
    TRITONSERVER_InferenceRequest *inference_request, uint32_t *priority) {
  ARG_CHECK(inference_request != NULL && priority != NULL);
  *priority = inference_request->priority > UINT32_MAX
                  ? UINT32_MAX
                  : (uint32_t)inference_request->priority;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestPriorityUInt64(
    TRITONSERVER_InferenceRequest *inference_request, uint64_t *priority) {
  ARG_CHECK(inference_request != NULL && priority != NULL);
  *priority = inference_request->priority;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestSetPriority(
    TRITONSERVER_InferenceRequest *inference_request, uint32_t priority) {
  ARG_CHECK(inference_request != NULL);
  NOT_IN_FLIGHT(inference_request);
  inference_request->priority = priority;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestSetPriorityUInt64(
    TRITONSERVER_InferenceRequest *inference_request, uint64_t priority) {
  ARG_CHECK(inference_request != NULL);
  NOT_IN_FLIGHT(inference_request);
  inference_request->priority = priority;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestTimeoutMicroseconds(
    TRITONSERVER_InferenceRequest *inference_request, uint64_t *timeout_us) {
  ARG_CHECK(inference_request != NULL && timeout_us != NULL);
  *timeout_us = inference_request->timeout_us;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestSetTimeoutMicroseconds(
    TRITONSERVER_InferenceRequest *inference_request, uint64_t timeout_us) {
  ARG_CHECK(inference_request != NULL);
  NOT_IN_FLIGHT(inference_request);
  inference_request->timeout_us = timeout_us;
  return NULL;
}

/* ---- inputs ----------------------------------------------------------------
 */

static ifd__capi_input_t *input_find(TRITONSERVER_InferenceRequest *r,
                                     const char *name) {
  uint32_t i;
  for (i = 0; i < r->n_inputs; i++)
    if (strcmp(r->inputs[i].name, name) == 0) return &r->inputs[i];
  return NULL;
}

static TRITONSERVER_Error *input_add(TRITONSERVER_InferenceRequest *r,
                                     const char *name,
                                     TRITONSERVER_DataType dtype,
                                     const int64_t *shape, uint64_t ndims,
                                     int raw) {
  ifd__capi_input_t *in;
  if (input_find(r, name) != NULL)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "input '%s' already exists in request", name);
  if (ndims > IFD_MAX_DIMS)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "input '%s' has %llu dimensions, at most %d are allowed",
                       name, (unsigned long long)ndims, IFD_MAX_DIMS);
  if (grow((void **)&r->inputs, r->n_inputs, &r->cap_inputs,
           sizeof(*r->inputs)) < 0)
    return nomem();
  in = &r->inputs[r->n_inputs];
  memset(in, 0, sizeof(*in));
  in->name = strdup(name);
  in->shape = malloc((ndims ? ndims : 1) * sizeof(int64_t));
  if (in->name == NULL || in->shape == NULL) {
    input_clear(in);
    return nomem();
  }
  if (ndims > 0) memcpy(in->shape, shape, ndims * sizeof(int64_t));
  in->ndims = (uint32_t)ndims;
  in->dtype = dtype;
  in->raw = raw;
  r->n_inputs++;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestAddInput(
    TRITONSERVER_InferenceRequest *inference_request, const char *name,
    const TRITONSERVER_DataType datatype, const int64_t *shape,
    uint64_t dim_count) {
  ARG_CHECK(inference_request != NULL && name != NULL &&
            (shape != NULL || dim_count == 0));
  NOT_IN_FLIGHT(inference_request);
  return input_add(inference_request, name, datatype, shape, dim_count, 0);
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestAddRawInput(
    TRITONSERVER_InferenceRequest *inference_request, const char *name) {
  ARG_CHECK(inference_request != NULL && name != NULL);
  NOT_IN_FLIGHT(inference_request);
  return input_add(inference_request, name, TRITONSERVER_TYPE_INVALID, NULL, 0,
                   1);
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestRemoveInput(
    TRITONSERVER_InferenceRequest *inference_request, const char *name) {
  TRITONSERVER_InferenceRequest *r = inference_request;
  ifd__capi_input_t *in;
  ARG_CHECK(r != NULL && name != NULL);
  NOT_IN_FLIGHT(r);
  in = input_find(r, name);
  if (in == NULL)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "input '%s' does not exist in request", name);
  input_clear(in);
  memmove(in, in + 1,
          (size_t)(r->inputs + r->n_inputs - (in + 1)) * sizeof(*in));
  r->n_inputs--;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestRemoveAllInputs(
    TRITONSERVER_InferenceRequest *inference_request) {
  uint32_t i;
  ARG_CHECK(inference_request != NULL);
  NOT_IN_FLIGHT(inference_request);
  for (i = 0; i < inference_request->n_inputs; i++)
    input_clear(&inference_request->inputs[i]);
  inference_request->n_inputs = 0;
  return NULL;
}

static TRITONSERVER_Error *append_data(TRITONSERVER_InferenceRequest *r,
                                       const char *name, const void *base,
                                       size_t byte_size,
                                       TRITONSERVER_MemoryType mt, int64_t id) {
  ifd__capi_input_t *in = input_find(r, name);
  ifd__capi_buf_t *b;
  if (in == NULL)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "input '%s' does not exist in request", name);
  if (base == NULL && byte_size > 0)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "input '%s': NULL data of %zu bytes", name, byte_size);
  if (mt != TRITONSERVER_MEMORY_CPU && mt != TRITONSERVER_MEMORY_CPU_PINNED &&
      mt != TRITONSERVER_MEMORY_GPU)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "input '%s': unknown memory type %d", name, (int)mt);
  if (grow((void **)&in->bufs, in->n_bufs, &in->cap_bufs, sizeof(*in->bufs)) <
      0)
    return nomem();
  b = &in->bufs[in->n_bufs++];
  b->base = base;
  b->size = byte_size;
  b->mem_type = (int32_t)mt;
  b->mem_id = id;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestAppendInputData(
    TRITONSERVER_InferenceRequest *inference_request, const char *name,
    const void *base, size_t byte_size, TRITONSERVER_MemoryType memory_type,
    int64_t memory_type_id) {
  ARG_CHECK(inference_request != NULL && name != NULL);
  NOT_IN_FLIGHT(inference_request);
  return append_data(inference_request, name, base, byte_size, memory_type,
                     memory_type_id);
}

/* inferd has one host policy per instance kind and reads every input from
 * where it is, so the policy name changes nothing: the data is appended as
 * for every policy. */
TRITONSERVER_Error *TRITONSERVER_InferenceRequestAppendInputDataWithHostPolicy(
    TRITONSERVER_InferenceRequest *inference_request, const char *name,
    const void *base, size_t byte_size, TRITONSERVER_MemoryType memory_type,
    int64_t memory_type_id, const char *host_policy_name) {
  ARG_CHECK(inference_request != NULL && name != NULL &&
            host_policy_name != NULL);
  NOT_IN_FLIGHT(inference_request);
  return append_data(inference_request, name, base, byte_size, memory_type,
                     memory_type_id);
}

TRITONSERVER_Error *
TRITONSERVER_InferenceRequestAppendInputDataWithBufferAttributes(
    TRITONSERVER_InferenceRequest *inference_request, const char *name,
    const void *base, TRITONSERVER_BufferAttributes *buffer_attributes) {
  size_t size;
  TRITONSERVER_MemoryType mt;
  int64_t id;
  TRITONSERVER_Error *e;
  ARG_CHECK(inference_request != NULL && name != NULL &&
            buffer_attributes != NULL);
  NOT_IN_FLIGHT(inference_request);
  e = TRITONSERVER_BufferAttributesByteSize(buffer_attributes, &size);
  if (e == NULL)
    e = TRITONSERVER_BufferAttributesMemoryType(buffer_attributes, &mt);
  if (e == NULL)
    e = TRITONSERVER_BufferAttributesMemoryTypeId(buffer_attributes, &id);
  if (e != NULL) return e;
  return append_data(inference_request, name, base, size, mt, id);
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestRemoveAllInputData(
    TRITONSERVER_InferenceRequest *inference_request, const char *name) {
  ifd__capi_input_t *in;
  ARG_CHECK(inference_request != NULL && name != NULL);
  NOT_IN_FLIGHT(inference_request);
  in = input_find(inference_request, name);
  if (in == NULL)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "input '%s' does not exist in request", name);
  in->n_bufs = 0;
  return NULL;
}

/* ---- requested outputs ------------------------------------------------------
 */

TRITONSERVER_Error *TRITONSERVER_InferenceRequestAddRequestedOutput(
    TRITONSERVER_InferenceRequest *inference_request, const char *name) {
  TRITONSERVER_InferenceRequest *r = inference_request;
  uint32_t i;
  char *s;
  ARG_CHECK(r != NULL && name != NULL);
  NOT_IN_FLIGHT(r);
  for (i = 0; i < r->n_outputs; i++)
    if (strcmp(r->outputs[i], name) == 0)
      return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                         "output '%s' already requested", name);
  if (grow((void **)&r->outputs, r->n_outputs, &r->cap_outputs,
           sizeof(*r->outputs)) < 0)
    return nomem();
  s = strdup(name);
  if (s == NULL) return nomem();
  r->outputs[r->n_outputs++] = s;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestRemoveRequestedOutput(
    TRITONSERVER_InferenceRequest *inference_request, const char *name) {
  TRITONSERVER_InferenceRequest *r = inference_request;
  uint32_t i;
  ARG_CHECK(r != NULL && name != NULL);
  NOT_IN_FLIGHT(r);
  for (i = 0; i < r->n_outputs; i++) {
    if (strcmp(r->outputs[i], name) != 0) continue;
    free(r->outputs[i]);
    memmove(&r->outputs[i], &r->outputs[i + 1],
            (r->n_outputs - i - 1) * sizeof(*r->outputs));
    r->n_outputs--;
    return NULL;
  }
  return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                     "output '%s' does not exist in request", name);
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestRemoveAllRequestedOutputs(
    TRITONSERVER_InferenceRequest *inference_request) {
  uint32_t i;
  ARG_CHECK(inference_request != NULL);
  NOT_IN_FLIGHT(inference_request);
  for (i = 0; i < inference_request->n_outputs; i++)
    free(inference_request->outputs[i]);
  inference_request->n_outputs = 0;
  return NULL;
}

/* ---- callbacks
 * ---------------------------------------------------------------- */

TRITONSERVER_Error *TRITONSERVER_InferenceRequestSetReleaseCallback(
    TRITONSERVER_InferenceRequest *inference_request,
    TRITONSERVER_InferenceRequestReleaseFn_t request_release_fn,
    void *request_release_userp) {
  ARG_CHECK(inference_request != NULL);
  NOT_IN_FLIGHT(inference_request);
  inference_request->release_fn = request_release_fn;
  inference_request->release_userp = request_release_userp;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestSetResponseCallback(
    TRITONSERVER_InferenceRequest *inference_request,
    TRITONSERVER_ResponseAllocator *response_allocator,
    void *response_allocator_userp,
    TRITONSERVER_InferenceResponseCompleteFn_t response_fn,
    void *response_userp) {
  ARG_CHECK(inference_request != NULL);
  NOT_IN_FLIGHT(inference_request);
  inference_request->allocator = response_allocator;
  inference_request->alloc_userp = response_allocator_userp;
  inference_request->response_fn = response_fn;
  inference_request->response_userp = response_userp;
  return NULL;
}

/* ---- parameters -------------------------------------------------------------
 */

/* Sets (or replaces) parameter `key`; `s` is the STRING value. */
static TRITONSERVER_Error *param_set(TRITONSERVER_InferenceRequest *r,
                                     const char *key,
                                     TRITONSERVER_ParameterType type,
                                     const char *s, int64_t i, bool b,
                                     double d) {
  ifd__capi_param_t *p = NULL;
  uint32_t k;
  char *sv = NULL;
  NOT_IN_FLIGHT(r);
  if (type == TRITONSERVER_PARAMETER_STRING && (sv = strdup(s)) == NULL)
    return nomem();
  for (k = 0; k < r->n_params && p == NULL; k++)
    if (strcmp(r->params[k].key, key) == 0) p = &r->params[k];
  if (p != NULL) {
    if (p->type == TRITONSERVER_PARAMETER_STRING) free(p->v.s);
  } else {
    char *kc;
    if (grow((void **)&r->params, r->n_params, &r->cap_params,
             sizeof(*r->params)) < 0 ||
        (kc = strdup(key)) == NULL) {
      free(sv);
      return nomem();
    }
    p = &r->params[r->n_params++];
    p->key = kc;
  }
  p->type = type;
  switch (type) {
    case TRITONSERVER_PARAMETER_STRING:
      p->v.s = sv;
      break;
    case TRITONSERVER_PARAMETER_INT:
      p->v.i = i;
      break;
    case TRITONSERVER_PARAMETER_BOOL:
      p->v.b = b;
      break;
    default:
      p->v.d = d;
      break;
  }
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestSetStringParameter(
    TRITONSERVER_InferenceRequest *request, const char *key,
    const char *value) {
  ARG_CHECK(request != NULL && key != NULL && value != NULL);
  return param_set(request, key, TRITONSERVER_PARAMETER_STRING, value, 0, 0, 0);
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestSetIntParameter(
    TRITONSERVER_InferenceRequest *request, const char *key,
    const int64_t value) {
  ARG_CHECK(request != NULL && key != NULL);
  return param_set(request, key, TRITONSERVER_PARAMETER_INT, NULL, value, 0, 0);
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestSetBoolParameter(
    TRITONSERVER_InferenceRequest *request, const char *key, const bool value) {
  ARG_CHECK(request != NULL && key != NULL);
  return param_set(request, key, TRITONSERVER_PARAMETER_BOOL, NULL, 0, value,
                   0);
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestSetDoubleParameter(
    TRITONSERVER_InferenceRequest *request, const char *key,
    const double value) {
  ARG_CHECK(request != NULL && key != NULL);
  return param_set(request, key, TRITONSERVER_PARAMETER_DOUBLE, NULL, 0, 0,
                   value);
}
