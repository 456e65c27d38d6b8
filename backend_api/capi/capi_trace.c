/*
 * backend_api/capi/capi_trace.c - the in-process API's trace objects
 * (TRITONSERVER_InferenceTrace*): an application creates a trace, hands it
 * to TRITONSERVER_ServerInferAsync, and gets the request's activities
 * through its callbacks, then the trace back through its release callback.
 *
 * The trace is a core trace sink (core/trace.h): the request records its
 * timestamps as any traced request does, and when it is done (on the
 * server's loop thread) the sink reports them to activity_fn in the order
 * they happened (level TIMESTAMPS), the input tensors to tensor_activity_fn
 * (level TENSORS; outputs are reported as each response arrives), then calls
 * release_fn, which takes the trace back. Triton calls activity_fn as each
 * activity happens, from the thread where it happens; inferd reports them
 * all at the end, from the loop thread, with the same timestamps. An
 * ensemble's steps report to child traces (parent_id set), each released
 * the same way. TRITONBACKEND_RequestTrace gives a backend the trace of a
 * request sent with one.
 */
#include <stdlib.h>
#include <string.h>

#include "backend_api/internal.h"
#include "core/infer.h"
#include "core/model.h"
#include "core/trace.h"

struct TRITONSERVER_InferenceTrace {
  ifd_trace_sink_t sink; /* first: core reaches the trace through it */
  uint64_t id, parent_id;
  TRITONSERVER_InferenceTraceLevel level;
  TRITONSERVER_InferenceTraceActivityFn_t activity_fn;
  TRITONSERVER_InferenceTraceTensorActivityFn_t tensor_fn; /* may be NULL */
  TRITONSERVER_InferenceTraceReleaseFn_t release_fn;
  void *userp;      /* borrowed: the application's */
  char *model_name; /* owned: set when the request is done; "" before */
  int64_t model_version;
  char *request_id; /* owned: as model_name */
  char *context;    /* owned: SetContext's copy; NULL */
};

static const ifd_trace_sink_ops_t sink_ops;

static TRITONSERVER_InferenceTrace *of(ifd_trace_sink_t *s) {
  return (TRITONSERVER_InferenceTrace *)s;
}

static void report_tensor(TRITONSERVER_InferenceTrace *t,
                          TRITONSERVER_InferenceTraceActivity act,
                          const char *name, ifd_dtype_t dt, const void *data,
                          uint64_t byte_size, const int64_t *shape,
                          uint32_t ndims, int32_t mem_type, int64_t mem_id) {
  if (t->tensor_fn == NULL) return;
  t->tensor_fn(t, act, name, (TRITONSERVER_DataType)dt, data, (size_t)byte_size,
               shape, ndims, (TRITONSERVER_MemoryType)mem_type, mem_id,
               t->userp);
}

static void sink_output(ifd_trace_sink_t *s, const ifd_output_t *o) {
  report_tensor(of(s), TRITONSERVER_TRACE_TENSOR_BACKEND_OUTPUT, o->name,
                o->dtype, o->buffer, o->byte_size, o->shape, o->ndims,
                o->mem_type, o->mem_id);
}

static char *dup_or_empty(const char *s) {
  return strdup(s != NULL ? s : "");
}

static void sink_done(ifd_trace_sink_t *s, const ifd_request_t *req,
                      const ifd_trace_t *ct) {
  /* Triton's activities, in core's trace points. */
  static const struct {
    ifd_trace_point_t point;
    TRITONSERVER_InferenceTraceActivity act;
  } acts[] = {
      {IFD_TP_REQUEST_START, TRITONSERVER_TRACE_REQUEST_START},
      {IFD_TP_QUEUE_START, TRITONSERVER_TRACE_QUEUE_START},
      {IFD_TP_COMPUTE_START, TRITONSERVER_TRACE_COMPUTE_START},
      {IFD_TP_COMPUTE_INPUT_END, TRITONSERVER_TRACE_COMPUTE_INPUT_END},
      {IFD_TP_COMPUTE_OUTPUT_START, TRITONSERVER_TRACE_COMPUTE_OUTPUT_START},
      {IFD_TP_COMPUTE_END, TRITONSERVER_TRACE_COMPUTE_END},
      {IFD_TP_REQUEST_END, TRITONSERVER_TRACE_REQUEST_END},
  };
  TRITONSERVER_InferenceTrace *t = of(s);
  size_t n = sizeof(acts) / sizeof(acts[0]), i, k, order[8], m = 0;
  uint32_t j;

  free(t->model_name);
  free(t->request_id);
  t->model_name =
      dup_or_empty(req->model != NULL ? req->model->name : req->model_name);
  t->model_version =
      req->model != NULL ? req->model->version : req->model_version;
  t->request_id = dup_or_empty(ifd_trace_request_id(req, ct));
  if (ct != NULL && (t->level & TRITONSERVER_TRACE_LEVEL_TIMESTAMPS)) {
    for (i = 0; i < n; i++) {
      uint64_t ns = ct->ts[acts[i].point];
      if (ns == 0) continue;
      for (k = m; k > 0 && ct->ts[acts[order[k - 1]].point] > ns; k--)
        order[k] = order[k - 1];
      order[k] = i;
      m++;
    }
    for (i = 0; i < m; i++)
      t->activity_fn(t, acts[order[i]].act, ct->ts[acts[order[i]].point],
                     t->userp);
  }
  if (ct != NULL && (t->level & TRITONSERVER_TRACE_LEVEL_TENSORS)) {
    for (j = 0; j < req->n_inputs; j++) {
      const ifd_input_t *in = &req->inputs[j];
      report_tensor(t, TRITONSERVER_TRACE_TENSOR_QUEUE_INPUT, in->name,
                    in->dtype, in->data, in->byte_size, in->shape, in->ndims,
                    in->mem_type, in->mem_id);
      report_tensor(t, TRITONSERVER_TRACE_TENSOR_BACKEND_INPUT, in->name,
                    in->dtype, in->data, in->byte_size, in->shape, in->ndims,
                    in->mem_type, in->mem_id);
    }
  }
  t->release_fn(t, t->userp); /* the application owns it again */
}

static TRITONSERVER_InferenceTrace *make(
    TRITONSERVER_InferenceTraceLevel level, uint64_t parent_id,
    TRITONSERVER_InferenceTraceActivityFn_t activity_fn,
    TRITONSERVER_InferenceTraceTensorActivityFn_t tensor_fn,
    TRITONSERVER_InferenceTraceReleaseFn_t release_fn, void *userp) {
  TRITONSERVER_InferenceTrace *t = calloc(1, sizeof(*t));
  if (t == NULL) return NULL;
  t->sink.ops = &sink_ops;
  t->id = ifd_trace_new_id();
  t->parent_id = parent_id;
  t->level = level;
  t->activity_fn = activity_fn;
  t->tensor_fn = tensor_fn;
  t->release_fn = release_fn;
  t->userp = userp;
  t->model_name = strdup("");
  t->request_id = strdup("");
  if (t->model_name == NULL || t->request_id == NULL) {
    free(t->model_name);
    free(t->request_id);
    free(t);
    return NULL;
  }
  return t;
}

static ifd_trace_sink_t *sink_spawn(ifd_trace_sink_t *s) {
  TRITONSERVER_InferenceTrace *p = of(s);
  TRITONSERVER_InferenceTrace *c = make(p->level, p->id, p->activity_fn,
                                        p->tensor_fn, p->release_fn, p->userp);
  return c != NULL ? &c->sink : NULL;
}

static uint64_t sink_id(ifd_trace_sink_t *s) {
  return of(s)->id;
}

static const ifd_trace_sink_ops_t sink_ops = {sink_output, sink_done,
                                              sink_spawn, sink_id};

int ifd__capi_trace_attach(ifd_request_t *req,
                           TRITONSERVER_InferenceTrace *trace) {
  int level = 0;
  if (trace->level & TRITONSERVER_TRACE_LEVEL_TIMESTAMPS)
    level |= IFD_TRACE_TIMESTAMPS;
  if (trace->level & TRITONSERVER_TRACE_LEVEL_TENSORS)
    level |= IFD_TRACE_TENSORS;
  /* MIN and MAX are the older names of TIMESTAMPS. */
  if (trace->level &
      (TRITONSERVER_TRACE_LEVEL_MIN | TRITONSERVER_TRACE_LEVEL_MAX))
    level |= IFD_TRACE_TIMESTAMPS;
  return ifd_trace_attach(req, &trace->sink, level, trace->parent_id);
}

void ifd__capi_trace_refused(TRITONSERVER_InferenceTrace *trace) {
  trace->release_fn(trace, trace->userp);
}

TRITONSERVER_InferenceTrace *ifd__capi_trace_of(const ifd_request_t *req) {
  if (req->trace == NULL || req->trace->sink == NULL ||
      req->trace->sink->ops != &sink_ops)
    return NULL;
  return of(req->trace->sink);
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceNew(
    TRITONSERVER_InferenceTrace **trace, TRITONSERVER_InferenceTraceLevel level,
    uint64_t parent_id, TRITONSERVER_InferenceTraceActivityFn_t activity_fn,
    TRITONSERVER_InferenceTraceReleaseFn_t release_fn, void *trace_userp) {
  return TRITONSERVER_InferenceTraceTensorNew(
      trace, level, parent_id, activity_fn, NULL, release_fn, trace_userp);
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceTensorNew(
    TRITONSERVER_InferenceTrace **trace, TRITONSERVER_InferenceTraceLevel level,
    uint64_t parent_id, TRITONSERVER_InferenceTraceActivityFn_t activity_fn,
    TRITONSERVER_InferenceTraceTensorActivityFn_t tensor_activity_fn,
    TRITONSERVER_InferenceTraceReleaseFn_t release_fn, void *trace_userp) {
  ARG_CHECK(trace != NULL && activity_fn != NULL && release_fn != NULL);
  *trace = make(level, parent_id, activity_fn, tensor_activity_fn, release_fn,
                trace_userp);
  if (*trace == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceReportActivity(
    TRITONSERVER_InferenceTrace *trace, uint64_t timestamp,
    const char *activity_name) {
  ARG_CHECK(trace != NULL && activity_name != NULL);
  if (trace->level &
      (TRITONSERVER_TRACE_LEVEL_TIMESTAMPS | TRITONSERVER_TRACE_LEVEL_MIN |
       TRITONSERVER_TRACE_LEVEL_MAX))
    trace->activity_fn(trace, TRITONSERVER_TRACE_CUSTOM_ACTIVITY, timestamp,
                       trace->userp);
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceDelete(
    TRITONSERVER_InferenceTrace *trace) {
  if (trace == NULL) return NULL;
  free(trace->model_name);
  free(trace->request_id);
  free(trace->context);
  free(trace);
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceId(
    TRITONSERVER_InferenceTrace *trace, uint64_t *id) {
  ARG_CHECK(trace != NULL && id != NULL);
  *id = trace->id;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceParentId(
    TRITONSERVER_InferenceTrace *trace, uint64_t *parent_id) {
  ARG_CHECK(trace != NULL && parent_id != NULL);
  *parent_id = trace->parent_id;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceModelName(
    TRITONSERVER_InferenceTrace *trace, const char **model_name) {
  ARG_CHECK(trace != NULL && model_name != NULL);
  *model_name = trace->model_name;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceModelVersion(
    TRITONSERVER_InferenceTrace *trace, int64_t *model_version) {
  ARG_CHECK(trace != NULL && model_version != NULL);
  *model_version = trace->model_version;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceRequestId(
    TRITONSERVER_InferenceTrace *trace, const char **request_id) {
  ARG_CHECK(trace != NULL && request_id != NULL);
  *request_id = trace->request_id;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceSpawnChildTrace(
    TRITONSERVER_InferenceTrace *trace,
    TRITONSERVER_InferenceTrace **child_trace) {
  ifd_trace_sink_t *c;
  ARG_CHECK(trace != NULL && child_trace != NULL);
  c = sink_spawn(&trace->sink);
  if (c == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  *child_trace = of(c);
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceSetContext(
    TRITONSERVER_InferenceTrace *trace, const char *trace_context) {
  char *c;
  ARG_CHECK(trace != NULL);
  c = trace_context != NULL ? strdup(trace_context) : NULL;
  if (trace_context != NULL && c == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  free(trace->context);
  trace->context = c;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceTraceContext(
    TRITONSERVER_InferenceTrace *trace, const char **trace_context) {
  ARG_CHECK(trace != NULL && trace_context != NULL);
  *trace_context = trace->context;
  return NULL;
}
