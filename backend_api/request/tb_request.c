/*
 * backend_api/request/tb_request.c - TRITONBACKEND_Request*, _Input*,
 * _Response*, _Output* and statistics reporting.
 *
 * A TRITONBACKEND_Request is an ifd_request_t, an input an ifd_input_t and a
 * response an ifd_response_t: the backend reads the very objects the
 * protocol built, so input bytes reach the backend where they arrived.
 * Everything here may run on any thread; calls that hand something back to
 * the loop (send, release) only push an event.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "backend_api/internal.h"
#include "base/log.h"
#include "core/model.h"
#include "core/server.h"
#include "core/stats.h"
#include "base/bufpool.h"
#include "base/util.h"
#include "core/request_internal.h"

#define REQ(r) ((ifd_request_t *)(r))
#define RESP(r) ((ifd_response_t *)(r))

/* Output buffers up to this size come from the response's pool (see
 * TRITONBACKEND_OutputBuffer); larger ones are malloc'd on their own, and
 * from IFD_BUFPOOL_MIN on taken from the shared buffer pool. */
#define SMALL_OUTPUT_MAX 1024

/* ---- requests ---------------------------------------------------------------
 */

TRITONSERVER_Error *TRITONBACKEND_RequestId(TRITONBACKEND_Request *request,
                                            const char **id) {
  ARG_CHECK(request != NULL && id != NULL);
  *id = REQ(request)->id;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_RequestIsCancelled(
    TRITONBACKEND_Request *request, bool *is_cancelled) {
  ARG_CHECK(request != NULL && is_cancelled != NULL);
  /* The loop sets the flag when the client goes away (ifd_request_cancel);
   * any thread may read it. */
  *is_cancelled = ifd_request_is_cancelled(REQ(request));
  return NULL;
}

/* Triton's errors about a request start with "[request id: <id>] ". */
static TRITONSERVER_Error *request_error(const ifd_request_t *req,
                                         const char *msg) {
  char buf[512];
  snprintf(buf, sizeof(buf), "[request id: %s] %s",
           req->id[0] != '\0' ? req->id : "<id_unknown>", msg);
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, buf);
}

TRITONSERVER_Error *TRITONBACKEND_RequestCorrelationId(
    TRITONBACKEND_Request *request, uint64_t *id) {
  ARG_CHECK(request != NULL && id != NULL);
  if (REQ(request)->correlation_id_str != NULL)
    return request_error(REQ(request),
                         "correlation ID in request is not an unsigned int");
  *id = REQ(request)->correlation_id;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_RequestCorrelationIdString(
    TRITONBACKEND_Request *request, const char **id) {
  ARG_CHECK(request != NULL && id != NULL);
  if (REQ(request)->correlation_id_str == NULL)
    return request_error(REQ(request),
                         "correlation ID in request is not a string");
  *id = REQ(request)->correlation_id_str;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_InferenceRequestTimeoutMicroseconds(
    TRITONBACKEND_Request *request, uint64_t *timeout) {
  ARG_CHECK(request != NULL && timeout != NULL);
  *timeout = REQ(request)->timeout_us;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_RequestFlags(TRITONBACKEND_Request *request,
                                               uint32_t *flags) {
  ARG_CHECK(request != NULL && flags != NULL);
  *flags = REQ(request)->flags;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_RequestParameterCount(
    TRITONBACKEND_Request *request, uint32_t *count) {
  ARG_CHECK(request != NULL && count != NULL);
  *count = REQ(request)->n_params;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_RequestParameter(
    TRITONBACKEND_Request *request, const uint32_t index, const char **key,
    TRITONSERVER_ParameterType *type, const void **vvalue) {
  ifd_param_t *p;
  ARG_CHECK(request != NULL && key != NULL && type != NULL && vvalue != NULL);
  if (index >= REQ(request)->n_params)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "parameter index out of range");
  p = &REQ(request)->params[index];
  *key = p->key;
  *type = (TRITONSERVER_ParameterType)p->type;
  /* Triton points at the value itself: a C string for STRING, else the
   * int64_t / bool / double. */
  switch (p->type) {
    case IFD_PARAM_STRING:
      *vvalue = p->v.s;
      break;
    case IFD_PARAM_INT:
      *vvalue = &p->v.i;
      break;
    case IFD_PARAM_BOOL:
      *vvalue = &p->v.b;
      break;
    default:
      *vvalue = &p->v.d;
      break;
  }
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_RequestInputCount(
    TRITONBACKEND_Request *request, uint32_t *count) {
  ARG_CHECK(request != NULL && count != NULL);
  *count = REQ(request)->n_inputs;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_RequestInputName(
    TRITONBACKEND_Request *request, const uint32_t index,
    const char **input_name) {
  ARG_CHECK(request != NULL && input_name != NULL);
  if (index >= REQ(request)->n_inputs)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "input index out of range");
  *input_name = REQ(request)->inputs[index].name;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_RequestInput(TRITONBACKEND_Request *request,
                                               const char *name,
                                               TRITONBACKEND_Input **input) {
  ifd_request_t *req = REQ(request);
  uint32_t i;
  ARG_CHECK(request != NULL && name != NULL && input != NULL);
  for (i = 0; i < req->n_inputs; i++)
    if (strcmp(req->inputs[i].name, name) == 0) {
      *input = (TRITONBACKEND_Input *)&req->inputs[i];
      return NULL;
    }
  *input = NULL;
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                               "unknown request input name");
}

TRITONSERVER_Error *TRITONBACKEND_RequestInputByIndex(
    TRITONBACKEND_Request *request, const uint32_t index,
    TRITONBACKEND_Input **input) {
  ARG_CHECK(request != NULL && input != NULL);
  if (index >= REQ(request)->n_inputs)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "input index out of range");
  *input = (TRITONBACKEND_Input *)&REQ(request)->inputs[index];
  return NULL;
}

/* The requested outputs: those the client named, or every output of the
 * model when it named none. */
TRITONSERVER_Error *TRITONBACKEND_RequestOutputCount(
    TRITONBACKEND_Request *request, uint32_t *count) {
  ifd_request_t *req = REQ(request);
  ARG_CHECK(request != NULL && count != NULL);
  *count = req->n_outputs > 0 ? req->n_outputs
                              : (uint32_t)req->model->config->n_output;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_RequestOutputName(
    TRITONBACKEND_Request *request, const uint32_t index,
    const char **output_name) {
  ifd_request_t *req = REQ(request);
  ARG_CHECK(request != NULL && output_name != NULL);
  if (req->n_outputs > 0) {
    if (index >= req->n_outputs) goto out_range;
    *output_name = req->outputs[index].name;
    return NULL;
  }
  if (index >= req->model->config->n_output) goto out_range;
  *output_name = req->model->config->output[index]->name;
  return NULL;
out_range:
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                               "output index out of range");
}

TRITONSERVER_Error *TRITONBACKEND_RequestOutputBufferProperties(
    TRITONBACKEND_Request *request, const char *name, size_t *byte_size,
    TRITONSERVER_MemoryType *memory_type, int64_t *memory_type_id) {
  const ifd_request_t *req = REQ(request);
  uint32_t i;
  ARG_CHECK(request != NULL && name != NULL);
  /* An output the client placed in shared memory goes there; any other
   * goes to CPU memory the server allocates, whose size is unknown until
   * the backend asks for the buffer. */
  for (i = 0; i < req->n_outputs; i++) {
    const ifd_output_req_t *o = &req->outputs[i];
    if (o->shm.ptr == NULL || strcmp(o->name, name) != 0) continue;
    if (byte_size != NULL) *byte_size = o->shm.byte_size;
    if (memory_type != NULL)
      *memory_type = (TRITONSERVER_MemoryType)o->shm.mem_type;
    if (memory_type_id != NULL) *memory_type_id = o->shm.mem_id;
    return NULL;
  }
  /* An in-process request's allocator may say where it would put it. */
  if (req->out_alloc != NULL && req->out_alloc->query != NULL) {
    uint64_t size = 0;
    int32_t mt = IFD_MEM_CPU;
    int64_t id = 0;
    req->out_alloc->query(req->out_alloc, req->out_alloc_arg, name, &size, &mt,
                          &id);
    if (byte_size != NULL) *byte_size = (size_t)size;
    if (memory_type != NULL) *memory_type = (TRITONSERVER_MemoryType)mt;
    if (memory_type_id != NULL) *memory_type_id = id;
    return NULL;
  }
  if (byte_size != NULL) *byte_size = 0;
  if (memory_type != NULL) *memory_type = TRITONSERVER_MEMORY_CPU;
  if (memory_type_id != NULL) *memory_type_id = 0;
  return NULL;
}

/* Whether `req` may be released with RESCHEDULE: Triton lets only the
 * sequence batcher of an iterative_sequence model take it back. The config
 * does not change while the model is loaded, so any thread may read it.
 * Requests the server runs for itself (a sink: warmup, ensemble steps) and
 * null requests are never rescheduled. */
static int reschedulable(const ifd_request_t *req) {
  const Inference__ModelSequenceBatching *sb;
  if (req->model == NULL || req->sink != NULL || req->null_req) return 0;
  sb = ifd_config_sequence(req->model->config);
  return sb != NULL && sb->iterative_sequence;
}

TRITONSERVER_Error *TRITONBACKEND_RequestRelease(TRITONBACKEND_Request *request,
                                                 uint32_t release_flags) {
  ARG_CHECK(request != NULL);
  if ((release_flags & TRITONSERVER_REQUEST_RELEASE_RESCHEDULE) &&
      !reschedulable(REQ(request)))
    return TRITONSERVER_ErrorNew(
        TRITONSERVER_ERROR_INVALID_ARG,
        "Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, "
        "while the model is not configured to handle such a flag.");
  /* The backend is done with the inputs for now: their device copies go,
   * on its thread (cudaFree may synchronize; the loop must not). A
   * rescheduled request's next execute copies them again. */
  ifd__gpu_inputs_release(REQ(request));
  ifd_request_release(REQ(request), release_flags);
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_RequestTrace(
    TRITONBACKEND_Request *request, TRITONSERVER_InferenceTrace **trace) {
  ARG_CHECK(request != NULL && trace != NULL);
  /* The application's trace object of a request sent with one through
   * the in-process API; the server's own traces have no such object. */
  *trace = ifd__capi_trace_of(REQ(request));
  return NULL;
}

/* ---- inputs
 * ------------------------------------------------------------------ */

TRITONSERVER_Error *TRITONBACKEND_InputProperties(
    TRITONBACKEND_Input *input, const char **name,
    TRITONSERVER_DataType *datatype, const int64_t **shape,
    uint32_t *dims_count, uint64_t *byte_size, uint32_t *buffer_count) {
  const ifd_input_t *in = (const ifd_input_t *)input;
  ARG_CHECK(input != NULL);
  if (name != NULL) *name = in->name;
  if (datatype != NULL) *datatype = (TRITONSERVER_DataType)in->dtype;
  if (shape != NULL) *shape = in->shape;
  if (dims_count != NULL) *dims_count = in->ndims;
  if (byte_size != NULL) *byte_size = in->byte_size;
  if (buffer_count != NULL) *buffer_count = 1;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_InputPropertiesForHostPolicy(
    TRITONBACKEND_Input *input, const char *host_policy_name, const char **name,
    TRITONSERVER_DataType *datatype, const int64_t **shape,
    uint32_t *dims_count, uint64_t *byte_size, uint32_t *buffer_count) {
  (void)host_policy_name; /* one copy of the data serves every policy */
  return TRITONBACKEND_InputProperties(input, name, datatype, shape, dims_count,
                                       byte_size, buffer_count);
}

TRITONSERVER_Error *TRITONBACKEND_InputBuffer(
    TRITONBACKEND_Input *input, const uint32_t index, const void **buffer,
    uint64_t *buffer_byte_size, TRITONSERVER_MemoryType *memory_type,
    int64_t *memory_type_id) {
  const ifd_input_t *in = (const ifd_input_t *)input;
  ARG_CHECK(input != NULL && buffer != NULL && buffer_byte_size != NULL &&
            memory_type != NULL && memory_type_id != NULL);
  if (index != 0)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "input buffer index out of range");
  /* On entry *memory_type is the caller's preference. A host input asked
   * for on a GPU that exists is copied there once per request (on the
   * instance's stream) and handed out from device memory; otherwise the
   * input comes as it is, and its actual type says where. */
  ifd_request_t *owner = *memory_type == TRITONSERVER_MEMORY_GPU
                             ? ifd__instance_request_of(in)
                             : NULL;
  if (owner != NULL) {
    const void *dev = NULL;
    ifd_errmsg_t err;
    int rc;
    ifd_errclear(&err);
    rc = ifd__gpu_input_copy(owner, in, *memory_type_id, &dev, &err);
    if (rc < 0) return ifd__error_from(rc, err.text);
    if (rc > 0) {
      *buffer = dev;
      *buffer_byte_size = in->byte_size;
      *memory_type = TRITONSERVER_MEMORY_GPU;
      return NULL;
    }
  }
  *buffer = in->data;
  *buffer_byte_size = in->byte_size;
  *memory_type = (TRITONSERVER_MemoryType)in->mem_type;
  *memory_type_id = in->mem_id;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_InputBufferForHostPolicy(
    TRITONBACKEND_Input *input, const char *host_policy_name,
    const uint32_t index, const void **buffer, uint64_t *buffer_byte_size,
    TRITONSERVER_MemoryType *memory_type, int64_t *memory_type_id) {
  (void)host_policy_name;
  return TRITONBACKEND_InputBuffer(input, index, buffer, buffer_byte_size,
                                   memory_type, memory_type_id);
}

/* ---- responses
 * --------------------------------------------------------------- */

static TRITONSERVER_Error *response_new(ifd_request_t *req,
                                        TRITONBACKEND_Response **response) {
  ifd_response_t *resp = ifd_response_new(req);
  size_t cap = req->model->config->n_output;
  if (resp == NULL) goto out_nomem;
  /* Outputs never move once created (backends keep TRITONBACKEND_Output
   * pointers), so the array is sized once for every output the model has. */
  resp->cap_outputs = (uint32_t)(cap > 0 ? cap : 1);
  resp->outputs =
      ifd_pool_calloc(&resp->pool, resp->cap_outputs, sizeof(*resp->outputs));
  if (resp->outputs == NULL) goto out_nomem;
  *response = (TRITONBACKEND_Response *)resp;
  return NULL;
out_nomem:
  if (resp != NULL) ifd_response_discard(resp);
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
}

TRITONSERVER_Error *TRITONBACKEND_ResponseNew(TRITONBACKEND_Response **response,
                                              TRITONBACKEND_Request *request) {
  ARG_CHECK(response != NULL && request != NULL);
  return response_new(REQ(request), response);
}

typedef struct factory {
  ifd_request_t *req; /* borrowed: held open by ifd_request_hold */
  ifd_event_t ev;     /* deletion reaches the loop through this */
} factory_t;

TRITONSERVER_Error *TRITONBACKEND_ResponseFactoryNew(
    TRITONBACKEND_ResponseFactory **factory, TRITONBACKEND_Request *request) {
  factory_t *f;
  ARG_CHECK(factory != NULL && request != NULL);
  f = calloc(1, sizeof(*f));
  if (f == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  f->req = REQ(request);
  ifd_request_hold(f->req);
  *factory = (TRITONBACKEND_ResponseFactory *)f;
  return NULL;
}

static void on_factory_deleted(ifd_event_t *ev) {
  factory_t *f = (factory_t *)((char *)ev - offsetof(factory_t, ev));
  ifd_request_t *req = f->req;
  free(f);
  ifd_request_unhold(req);
}

TRITONSERVER_Error *TRITONBACKEND_ResponseFactoryDelete(
    TRITONBACKEND_ResponseFactory *factory) {
  factory_t *f = (factory_t *)factory;
  ARG_CHECK(factory != NULL);
  if (f->req->sink != NULL) {
    /* A warmup request (core/infer.h ifd_req_sink_t): no loop involved. */
    ifd_req_sink_t *sink = f->req->sink;
    ifd_request_t *req = f->req;
    free(f);
    sink->unheld(sink, req);
    return NULL;
  }
  f->ev.fn = on_factory_deleted;
  ifd_evq_push(ifd_server_evq(f->req->server), &f->ev);
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ResponseFactoryIsCancelled(
    TRITONBACKEND_ResponseFactory *factory, bool *is_cancelled) {
  ARG_CHECK(factory != NULL && is_cancelled != NULL);
  *is_cancelled = ifd_request_is_cancelled(((factory_t *)factory)->req);
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ResponseNewFromFactory(
    TRITONBACKEND_Response **response, TRITONBACKEND_ResponseFactory *factory) {
  ARG_CHECK(response != NULL && factory != NULL);
  return response_new(((factory_t *)factory)->req, response);
}

TRITONSERVER_Error *TRITONBACKEND_ResponseFactorySendFlags(
    TRITONBACKEND_ResponseFactory *factory, const uint32_t send_flags) {
  TRITONBACKEND_Response *r;
  TRITONSERVER_Error *e;
  ARG_CHECK(factory != NULL);
  e = TRITONBACKEND_ResponseNewFromFactory(&r, factory);
  if (e != NULL) return e;
  RESP(r)->empty = 1;
  ifd_response_send(RESP(r), send_flags, 0, NULL);
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ResponseDelete(
    TRITONBACKEND_Response *response) {
  ARG_CHECK(response != NULL);
  ifd__gpu_outputs_free(RESP(response));
  ifd_response_discard(RESP(response));
  return NULL;
}

static TRITONSERVER_Error *add_param(ifd_response_t *resp, const char *name,
                                     ifd_param_t **out) {
  ifd_param_t *p;
  if (resp->n_params == resp->cap_params) {
    uint32_t ncap = resp->cap_params ? resp->cap_params * 2 : 4;
    ifd_param_t *np = realloc(resp->params, ncap * sizeof(*np));
    if (np == NULL) goto out_nomem;
    resp->params = np;
    resp->cap_params = ncap;
  }
  p = &resp->params[resp->n_params];
  memset(p, 0, sizeof(*p));
  p->key = ifd_pool_strndup(&resp->pool, name, strlen(name));
  if (p->key == NULL) goto out_nomem;
  resp->n_params++;
  *out = p;
  return NULL;
out_nomem:
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
}

TRITONSERVER_Error *TRITONBACKEND_ResponseSetStringParameter(
    TRITONBACKEND_Response *response, const char *name, const char *value) {
  ifd_param_t *p;
  TRITONSERVER_Error *e;
  ARG_CHECK(response != NULL && name != NULL && value != NULL);
  e = add_param(RESP(response), name, &p);
  if (e != NULL) return e;
  p->type = IFD_PARAM_STRING;
  p->v.s = ifd_pool_strndup(&RESP(response)->pool, value, strlen(value));
  if (p->v.s == NULL) {
    RESP(response)->n_params--;
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  }
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ResponseSetIntParameter(
    TRITONBACKEND_Response *response, const char *name, const int64_t value) {
  ifd_param_t *p;
  TRITONSERVER_Error *e;
  ARG_CHECK(response != NULL && name != NULL);
  e = add_param(RESP(response), name, &p);
  if (e != NULL) return e;
  p->type = IFD_PARAM_INT;
  p->v.i = value;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ResponseSetBoolParameter(
    TRITONBACKEND_Response *response, const char *name, const bool value) {
  ifd_param_t *p;
  TRITONSERVER_Error *e;
  ARG_CHECK(response != NULL && name != NULL);
  e = add_param(RESP(response), name, &p);
  if (e != NULL) return e;
  p->type = IFD_PARAM_BOOL;
  p->v.b = value;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ResponseSetDoubleParameter(
    TRITONBACKEND_Response *response, const char *name, const double value) {
  ifd_param_t *p;
  TRITONSERVER_Error *e;
  ARG_CHECK(response != NULL && name != NULL);
  e = add_param(RESP(response), name, &p);
  if (e != NULL) return e;
  p->type = IFD_PARAM_DOUBLE;
  p->v.d = value;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ResponseOutput(
    TRITONBACKEND_Response *response, TRITONBACKEND_Output **output,
    const char *name, const TRITONSERVER_DataType datatype,
    const int64_t *shape, const uint32_t dims_count) {
  ifd_response_t *resp = RESP(response);
  ifd_output_t *o;
  uint32_t i;
  ARG_CHECK(response != NULL && output != NULL && name != NULL &&
            (shape != NULL || dims_count == 0));
  if (dims_count > IFD_MAX_DIMS)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "output has too many dimensions");
  for (i = 0; i < resp->n_outputs; i++)
    if (strcmp(resp->outputs[i].name, name) == 0)
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_ALREADY_EXISTS,
                                   "output already exists in the response");
  if (resp->n_outputs == resp->cap_outputs)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "more outputs than the model configuration "
                                 "declares");
  o = &resp->outputs[resp->n_outputs];
  memset(o, 0, sizeof(*o));
  o->name = ifd_pool_strndup(&resp->pool, name, strlen(name));
  o->shape = ifd_pool_alloc(
      &resp->pool, (dims_count > 0 ? dims_count : 1) * sizeof(int64_t));
  if (o->name == NULL || o->shape == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  o->dtype = (ifd_dtype_t)datatype;
  o->resp = resp;
  if (dims_count > 0) memcpy(o->shape, shape, dims_count * sizeof(int64_t));
  o->ndims = dims_count;
  resp->n_outputs++;
  *output = (TRITONBACKEND_Output *)o;
  return NULL;
}

/* The request's shared-memory placement of output `o`, or NULL. */
static const ifd_output_req_t *output_placement(const ifd_output_t *o) {
  const ifd_request_t *req = o->resp->req;
  uint32_t i;
  for (i = 0; i < req->n_outputs; i++)
    if (req->outputs[i].shm.ptr != NULL &&
        strcmp(req->outputs[i].name, o->name) == 0)
      return &req->outputs[i];
  return NULL;
}

static TRITONSERVER_Error *alloc_output_buffer(
    ifd_output_t *o, uint64_t byte_size, void **buffer,
    TRITONSERVER_MemoryType *memory_type, int64_t *memory_type_id) {
  ifd_request_t *req = o->resp->req;
  ifd_out_alloc_t *a = req->out_alloc;
  char msg[256];
  int32_t mt = (int32_t)*memory_type;
  int64_t id = *memory_type_id;
  void *buf = NULL, *userp = NULL;
  uint32_t i;
  int rc, first = 1;
  /* The allocator hears of each response before its first buffer. */
  for (i = 0; i < o->resp->n_outputs && first; i++)
    if (o->resp->outputs[i].alloc != NULL) first = 0;
  if (first && a->start != NULL) a->start(a, req->out_alloc_arg);
  rc = a->alloc(a, req->out_alloc_arg, o->name, byte_size, &mt, &id, &buf,
                &userp, msg, sizeof(msg));
  if (rc < 0) return ifd__error_from(rc, msg);
  if (buf == NULL && byte_size > 0) {
    a->release(a, buf, userp, byte_size, mt, id);
    snprintf(msg, sizeof(msg),
             "the response allocator gave no buffer for output '%s' "
             "(%" PRIu64 " bytes)",
             o->name, byte_size);
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, msg);
  }
  o->buffer = buf;
  o->alloc = a;
  o->alloc_userp = userp;
  o->byte_size = byte_size;
  o->mem_type = mt;
  o->mem_id = id;
  *buffer = buf;
  *memory_type = (TRITONSERVER_MemoryType)mt;
  *memory_type_id = id;
  return NULL;
}

static TRITONSERVER_Error *shm_output_buffer(
    ifd_output_t *o, const ifd_output_req_t *want, uint64_t byte_size,
    void **buffer, TRITONSERVER_MemoryType *memory_type,
    int64_t *memory_type_id) {
  char msg[256];
  if (byte_size > want->shm.byte_size) {
    /* Triton's text and class (INTERNAL: HTTP 500). */
    snprintf(msg, sizeof(msg),
             "shared memory size specified with the request for output '%s' "
             "(%" PRIu64 " bytes) should be at least %" PRIu64
             " bytes to hold the results",
             o->name, want->shm.byte_size, byte_size);
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, msg);
  }
  o->buffer = want->shm.ptr;
  o->buffer_external = 1;
  o->byte_size = byte_size;
  o->mem_type = want->shm.mem_type;
  o->mem_id = want->shm.mem_id;
  *buffer = o->buffer;
  *memory_type = (TRITONSERVER_MemoryType)o->mem_type;
  *memory_type_id = o->mem_id;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_OutputBuffer(
    TRITONBACKEND_Output *output, void **buffer,
    const uint64_t buffer_byte_size, TRITONSERVER_MemoryType *memory_type,
    int64_t *memory_type_id) {
  ifd_output_t *o = (ifd_output_t *)output;
  ARG_CHECK(output != NULL && buffer != NULL && memory_type != NULL &&
            memory_type_id != NULL);
  if (o->buffer != NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_ALREADY_EXISTS,
                                 "output buffer already allocated");
  if (buffer_byte_size > ((uint64_t)1 << 40))
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "output buffer too large");
  {
    /* The client placed this output in shared memory: the buffer is the
     * region, written in place (Triton's allocator does the same). */
    const ifd_output_req_t *want = output_placement(o);
    if (want != NULL)
      return shm_output_buffer(o, want, buffer_byte_size, buffer, memory_type,
                               memory_type_id);
  }
  /* An in-process request's outputs go where its response allocator puts
   * them, written in place (TRITONSERVER_ResponseAllocatorAllocFn_t). */
  if (o->resp->req->out_alloc != NULL)
    return alloc_output_buffer(o, buffer_byte_size, buffer, memory_type,
                               memory_type_id);
  /* A backend that prefers GPU memory gets it when that GPU exists (the
   * device pool, else cudaMalloc); ResponseSend copies it to host memory
   * before the response leaves this thread (backend_api/memory/tb_gpu.c). */
  if (*memory_type == TRITONSERVER_MEMORY_GPU &&
      ifd__gpu_output_buffer(o, buffer_byte_size, *memory_type_id)) {
    *buffer = o->buffer;
    *memory_type = TRITONSERVER_MEMORY_GPU;
    *memory_type_id = o->mem_id;
    return NULL;
  }
  /* Any other preference gets CPU memory: Triton's contract lets the
   * allocator choose, and reports the choice back. A small buffer comes
   * from the response's pool (this thread fills the response, so the pool
   * is this thread's until the send): it goes with the response. */
  if (buffer_byte_size <= SMALL_OUTPUT_MAX) {
    o->buffer = ifd_pool_alloc(&o->resp->pool,
                               buffer_byte_size > 0 ? buffer_byte_size : 1);
    o->buffer_in_pool = o->buffer != NULL;
  } else if (buffer_byte_size >= IFD_BUFPOOL_MIN) {
    /* A big one from the shared pool: its pages stay mapped between
     * requests, so the backend's write faults none in. */
    o->buffer = ifd_bufpool_get(ifd_bufpool_shared(), buffer_byte_size);
    o->buffer_in_bufpool = o->buffer != NULL;
  } else {
    o->buffer = malloc(buffer_byte_size);
  }
  if (o->buffer == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 "out of memory allocating an output buffer");
  o->byte_size = buffer_byte_size;
  *buffer = o->buffer;
  *memory_type = TRITONSERVER_MEMORY_CPU;
  *memory_type_id = 0;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ResponseSend(TRITONBACKEND_Response *response,
                                               const uint32_t send_flags,
                                               TRITONSERVER_Error *error) {
  char msg[512];
  ARG_CHECK(response != NULL);
  /* Outputs the backend wrote in GPU memory reach the loop in host memory:
   * copied here, on the backend's thread, so the loop never waits on a
   * device. An error response carries no outputs. */
  if (error != NULL)
    ifd__gpu_outputs_free(RESP(response));
  else if (ifd__gpu_outputs_to_host(RESP(response), msg, sizeof(msg)) < 0) {
    ifd_response_send(RESP(response), send_flags, IFD_EINTERNAL, msg);
    return NULL;
  }
  if (error != NULL)
    ifd_response_send(RESP(response), send_flags,
                      ifd__code_from_class(TRITONSERVER_ErrorCode(error)),
                      TRITONSERVER_ErrorMessage(error));
  else
    ifd_response_send(RESP(response), send_flags, 0, NULL);
  /* Triton's contract: the caller keeps ownership of `error`. */
  return NULL;
}

/* ---- statistics
 * ----------------------------------------------------------------- */

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportStatistics(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request *request,
    const bool success, const uint64_t exec_start_ns,
    const uint64_t compute_start_ns, const uint64_t compute_end_ns,
    const uint64_t exec_end_ns) {
  ifd_request_t *req = REQ(request);
  ARG_CHECK(instance != NULL && request != NULL);
  /* The backend still owns the request: these fields are read by the loop
   * only after the release event, which orders them. */
  req->t_exec_start = exec_start_ns;
  req->t_compute_start = compute_start_ns;
  req->t_compute_end = compute_end_ns;
  req->t_exec_end = exec_end_ns;
  req->stat_success = success;
  req->stat_reported = 1;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportBatchStatistics(
    TRITONBACKEND_ModelInstance *instance, const uint64_t batch_size,
    const uint64_t exec_start_ns, const uint64_t compute_start_ns,
    const uint64_t compute_end_ns, const uint64_t exec_end_ns) {
  ifd__batch_report_t r = {batch_size, exec_start_ns, compute_start_ns,
                           compute_end_ns, exec_end_ns};
  ARG_CHECK(instance != NULL);
  if (ifd__instance_report_batch(instance, &r) < 0)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 "out of memory recording batch statistics");
  return NULL;
}

/* ---- decoupled response statistics ----------------------------------------
 */

struct TRITONBACKEND_ModelInstanceResponseStatistics {
  TRITONBACKEND_ModelInstance *instance; /* borrowed */
  factory_t *factory;                    /* borrowed */
  uint64_t response_start, compute_output_start, response_end;
  TRITONSERVER_Error *error; /* borrowed: the caller's */
};

/* One report on its way to the loop, which owns the statistics. It holds
 * the request open (and so its model) until the loop has counted it. */
typedef struct response_report {
  ifd_event_t ev; /* embedded: first */
  ifd_request_t *req;
  uint64_t index;
  ifd_response_stats_t delta;
} response_report_t;

static void on_response_report(ifd_event_t *ev) {
  response_report_t *r = ifd_container_of(ev, response_report_t, ev);
  ifd_request_t *req = r->req;
  if (ifd_stats_response(&req->model->stats, r->index, &r->delta) < 0)
    IFD_WARN("model '%s': response %" PRIu64 " not counted in response_stats",
             req->model->name, r->index);
  free(r);
  ifd_request_unhold(req);
}

#define RSTATS(p) ((TRITONBACKEND_ModelInstanceResponseStatistics *)(p))

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceResponseStatisticsNew(
    TRITONBACKEND_ModelInstanceResponseStatistics **response_statistics) {
  ARG_CHECK(response_statistics != NULL);
  *response_statistics = calloc(1, sizeof(**response_statistics));
  if (*response_statistics == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceResponseStatisticsDelete(
    TRITONBACKEND_ModelInstanceResponseStatistics *response_statistics) {
  ARG_CHECK(response_statistics != NULL);
  free(response_statistics);
  return NULL;
}

TRITONSERVER_Error *
TRITONBACKEND_ModelInstanceResponseStatisticsSetModelInstance(
    TRITONBACKEND_ModelInstanceResponseStatistics *response_statistics,
    TRITONBACKEND_ModelInstance *model_instance) {
  ARG_CHECK(response_statistics != NULL);
  response_statistics->instance = model_instance;
  return NULL;
}

TRITONSERVER_Error *
TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseFactory(
    TRITONBACKEND_ModelInstanceResponseStatistics *response_statistics,
    TRITONBACKEND_ResponseFactory *response_factory) {
  ARG_CHECK(response_statistics != NULL);
  response_statistics->factory = (factory_t *)response_factory;
  return NULL;
}

TRITONSERVER_Error *
TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseStart(
    TRITONBACKEND_ModelInstanceResponseStatistics *response_statistics,
    uint64_t response_start) {
  ARG_CHECK(response_statistics != NULL);
  response_statistics->response_start = response_start;
  return NULL;
}

TRITONSERVER_Error *
TRITONBACKEND_ModelInstanceResponseStatisticsSetComputeOutputStart(
    TRITONBACKEND_ModelInstanceResponseStatistics *response_statistics,
    uint64_t compute_output_start) {
  ARG_CHECK(response_statistics != NULL);
  response_statistics->compute_output_start = compute_output_start;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseEnd(
    TRITONBACKEND_ModelInstanceResponseStatistics *response_statistics,
    uint64_t response_end) {
  ARG_CHECK(response_statistics != NULL);
  response_statistics->response_end = response_end;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceResponseStatisticsSetError(
    TRITONBACKEND_ModelInstanceResponseStatistics *response_statistics,
    TRITONSERVER_Error *error) {
  ARG_CHECK(response_statistics != NULL);
  response_statistics->error = error;
  return NULL;
}

/* As Triton's: the key is the count of earlier reports through the
 * request's factories, taken now; the timestamps are checked here, so the
 * backend hears of bad ones; the counting itself happens on the loop. */
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportResponseStatistics(
    TRITONBACKEND_ModelInstanceResponseStatistics *response_statistics) {
  const TRITONBACKEND_ModelInstanceResponseStatistics *rs = response_statistics;
  response_report_t *r;
  ifd_request_t *req;
  const char *msg = NULL;
  ifd_response_stats_t delta;
  int failed, rc;

  ARG_CHECK(rs != NULL);
  if (rs->instance == NULL || rs->factory == NULL)
    return TRITONSERVER_ErrorNew(
        TRITONSERVER_ERROR_INVALID_ARG,
        "Model instance and response factory cannot be null");
  failed = rs->error != NULL;
  rc = ifd_stats_response_classify(
      rs->response_start, rs->compute_output_start, rs->response_end, failed,
      failed &&
          TRITONSERVER_ErrorCode(rs->error) == TRITONSERVER_ERROR_CANCELLED,
      &delta, &msg);
  if (rc < 0) return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, msg);
  req = rs->factory->req;
  /* A warmup request has no loop to count on (nor a client to read it). */
  if (req->sink != NULL) return NULL;
  r = malloc(sizeof(*r));
  if (r == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 "out of memory recording response statistics");
  r->req = req;
  r->index = atomic_fetch_add_explicit(&ifd__req(req)->resp_stat_next, 1,
                                       memory_order_relaxed);
  r->delta = delta;
  r->ev.fn = on_response_report;
  ifd_request_hold(req);
  ifd_evq_push(ifd_server_evq(req->server), &r->ev);
  return NULL;
}
