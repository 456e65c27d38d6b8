/*
 * test/models/backends/idmetrics/idmetrics.c - the "idmetrics" test backend:
 * an identity backend that uses the backend metrics API the way Triton's
 * current identity backend (triton-inference-server/identity_backend, main)
 * does, plus a gauge and a histogram.
 *
 * README: built as libtriton_idmetrics.so; public Triton headers only.
 * - TRITONBACKEND_Initialize creates the families: the counter
 *   "input_byte_size_counter" (identity's name and description), the
 *   histogram "idmetrics_request_input_bytes" and the gauge
 *   "idmetrics_last_execute_requests".
 * - TRITONBACKEND_ModelInitialize creates one metric of each per model,
 *   labelled model and version (the gauge also carries a label whose value
 *   needs escaping: note="q\"uote back\\slash new\nline").
 * - Execute copies every requested OUTPUTn from INPUTn (any data type and
 *   shape), adds each copied input's byte size to the counter (as identity
 *   does), observes each request's total input bytes in the histogram and
 *   sets the gauge to the number of requests in the execute.
 * - Finalizers delete the metrics, then the families.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

#define TESTBE_NAME "idmetrics"
#include "../common/testbe.h"

#define GAUGE_NOTE "q\"uote back\\slash new\nline"

typedef struct backend_state {
  TRITONSERVER_MetricFamily *bytes; /* owned: counter */
  TRITONSERVER_MetricFamily *hist;  /* owned: histogram */
  TRITONSERVER_MetricFamily *last;  /* owned: gauge */
} backend_state_t;

typedef struct model_state {
  TRITONSERVER_Metric *bytes; /* owned */
  TRITONSERVER_Metric *hist;  /* owned */
  TRITONSERVER_Metric *last;  /* owned */
} model_state_t;

static void backend_state_free(backend_state_t *st) {
  log_if_error(TRITONSERVER_MetricFamilyDelete(st->bytes), "delete family");
  log_if_error(TRITONSERVER_MetricFamilyDelete(st->hist), "delete family");
  log_if_error(TRITONSERVER_MetricFamilyDelete(st->last), "delete family");
  free(st);
}

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
  uint32_t major = 0, minor = 0;
  backend_state_t *st;
  TRITONSERVER_Error *err = TRITONBACKEND_ApiVersion(&major, &minor);
  if (err != NULL) return err;
  if (major != TRITONBACKEND_API_VERSION_MAJOR ||
      minor < TRITONBACKEND_API_VERSION_MINOR)
    return TRITONSERVER_ErrorNew(
        TRITONSERVER_ERROR_UNSUPPORTED,
        "triton backend API version does not support this backend");
  st = calloc(1, sizeof(*st));
  if (st == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  err = TRITONSERVER_MetricFamilyNew(
      &st->bytes, TRITONSERVER_METRIC_KIND_COUNTER, "input_byte_size_counter",
      "Cumulative input_byte_size across all identity model requests");
  if (err == NULL)
    err = TRITONSERVER_MetricFamilyNew(
        &st->hist, TRITONSERVER_METRIC_KIND_HISTOGRAM,
        "idmetrics_request_input_bytes",
        "Input bytes per request, all inputs together");
  if (err == NULL)
    err =
        TRITONSERVER_MetricFamilyNew(&st->last, TRITONSERVER_METRIC_KIND_GAUGE,
                                     "idmetrics_last_execute_requests",
                                     "Requests in the model's last execute");
  if (err == NULL) err = TRITONBACKEND_BackendSetState(backend, st);
  if (err != NULL) backend_state_free(st);
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_Finalize(TRITONBACKEND_Backend *backend) {
  void *vst = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_BackendState(backend, &vst);
  if (err != NULL) return err;
  if (vst != NULL) backend_state_free(vst);
  return NULL;
}

static void model_state_free(model_state_t *ms) {
  log_if_error(TRITONSERVER_MetricDelete(ms->bytes), "delete metric");
  log_if_error(TRITONSERVER_MetricDelete(ms->hist), "delete metric");
  log_if_error(TRITONSERVER_MetricDelete(ms->last), "delete metric");
  free(ms);
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
  const char *name = NULL;
  uint64_t version = 0;
  char vtext[32];
  TRITONBACKEND_Backend *backend = NULL;
  void *vst = NULL;
  backend_state_t *st;
  model_state_t *ms;
  TRITONSERVER_Parameter *labels[3] = {NULL, NULL, NULL};
  TRITONSERVER_MetricArgs *args = NULL;
  static const double buckets[] = {16, 64, 256};
  TRITONSERVER_Error *err;

  err = TRITONBACKEND_ModelName(model, &name);
  if (err == NULL) err = TRITONBACKEND_ModelVersion(model, &version);
  if (err == NULL) err = TRITONBACKEND_ModelBackend(model, &backend);
  if (err == NULL) err = TRITONBACKEND_BackendState(backend, &vst);
  if (err != NULL) return err;
  st = vst;
  ms = calloc(1, sizeof(*ms));
  if (ms == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");

  /* Labels for the model/version pair, as identity makes them. */
  snprintf(vtext, sizeof(vtext), "%llu", (unsigned long long)version);
  labels[0] =
      TRITONSERVER_ParameterNew("model", TRITONSERVER_PARAMETER_STRING, name);
  labels[1] = TRITONSERVER_ParameterNew("version",
                                        TRITONSERVER_PARAMETER_STRING, vtext);
  labels[2] = TRITONSERVER_ParameterNew("note", TRITONSERVER_PARAMETER_STRING,
                                        GAUGE_NOTE);
  if (labels[0] == NULL || labels[1] == NULL || labels[2] == NULL) {
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
    goto out;
  }
  err = TRITONSERVER_MetricNew(&ms->bytes, st->bytes,
                               (const TRITONSERVER_Parameter **)labels, 2);
  if (err == NULL) err = TRITONSERVER_MetricArgsNew(&args);
  if (err == NULL)
    err = TRITONSERVER_MetricArgsSetHistogram(
        args, buckets, sizeof(buckets) / sizeof(buckets[0]));
  if (err == NULL)
    err = TRITONSERVER_MetricNewWithArgs(
        &ms->hist, st->hist, (const TRITONSERVER_Parameter **)labels, 2, args);
  if (err == NULL)
    err = TRITONSERVER_MetricNew(&ms->last, st->last,
                                 (const TRITONSERVER_Parameter **)labels, 3);
  if (err == NULL) err = TRITONBACKEND_ModelSetState(model, ms);
out:
  /* The metrics keep their own copies of the labels and buckets. */
  for (int i = 0; i < 3; i++) TRITONSERVER_ParameterDelete(labels[i]);
  log_if_error(TRITONSERVER_MetricArgsDelete(args), "delete args");
  if (err != NULL) model_state_free(ms);
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model) {
  void *vms = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelState(model, &vms);
  if (err != NULL) return err;
  if (vms != NULL) model_state_free(vms);
  return NULL;
}

/* Copies one requested output from its input; adds the input's bytes to
 * *bytes and to the model's counter. */
static TRITONSERVER_Error *copy_output(model_state_t *ms,
                                       TRITONBACKEND_Request *request,
                                       TRITONBACKEND_Response *response,
                                       const char *output_name,
                                       uint64_t *bytes) {
  char input_name[256];
  TRITONBACKEND_Input *input = NULL;
  TRITONBACKEND_Output *output = NULL;
  TRITONSERVER_DataType dtype;
  const int64_t *shape = NULL;
  uint32_t dims = 0, nbuf = 0;
  uint64_t size = 0, off = 0;
  void *dst = NULL;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mt_id = 0;
  TRITONSERVER_Error *err;

  if (strncmp(output_name, "OUTPUT", 6) != 0)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "outputs are named OUTPUT<n>");
  snprintf(input_name, sizeof(input_name), "INPUT%s", output_name + 6);
  err = TRITONBACKEND_RequestInput(request, input_name, &input);
  if (err == NULL)
    err = TRITONBACKEND_InputProperties(input, NULL, &dtype, &shape, &dims,
                                        &size, &nbuf);
  if (err != NULL) return err;
  err = TRITONSERVER_MetricIncrement(ms->bytes, (double)size);
  if (err != NULL) return err;
  *bytes += size;
  err = TRITONBACKEND_ResponseOutput(response, &output, output_name, dtype,
                                     shape, dims);
  if (err == NULL)
    err = TRITONBACKEND_OutputBuffer(output, &dst, size, &mt, &mt_id);
  if (err == NULL && mt == TRITONSERVER_MEMORY_GPU && size > 0)
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                "idmetrics needs a CPU output buffer");
  for (uint32_t b = 0; err == NULL && b < nbuf; b++) {
    const void *src = NULL;
    uint64_t n = 0;
    err = TRITONBACKEND_InputBuffer(input, b, &src, &n, &mt, &mt_id);
    if (err == NULL && (n > size - off || (mt == TRITONSERVER_MEMORY_GPU && n)))
      err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                  "bad input buffer");
    if (err == NULL && n > 0) memcpy((char *)dst + off, src, n);
    off += n;
  }
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request **requests,
    const uint32_t request_count) {
  TRITONBACKEND_Model *model = NULL;
  void *vms = NULL;
  model_state_t *ms;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceModel(instance, &model);
  if (err == NULL) err = TRITONBACKEND_ModelState(model, &vms);
  if (err != NULL) return err;
  ms = vms;
  log_if_error(TRITONSERVER_MetricSet(ms->last, (double)request_count),
               "set gauge");

  for (uint32_t r = 0; r < request_count; r++) {
    TRITONBACKEND_Response *response = NULL;
    uint32_t outputs = 0;
    uint64_t bytes = 0;
    err = TRITONBACKEND_ResponseNew(&response, requests[r]);
    if (err != NULL) {
      log_if_error(err, "cannot create response");
    } else {
      err = TRITONBACKEND_RequestOutputCount(requests[r], &outputs);
      for (uint32_t o = 0; err == NULL && o < outputs; o++) {
        const char *name = NULL;
        err = TRITONBACKEND_RequestOutputName(requests[r], o, &name);
        if (err == NULL)
          err = copy_output(ms, requests[r], response, name, &bytes);
      }
      if (err == NULL)
        err = TRITONSERVER_MetricObserve(ms->hist, (double)bytes);
      log_if_error(TRITONBACKEND_ResponseSend(
                       response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, err),
                   "cannot send response");
      TRITONSERVER_ErrorDelete(err);
    }
    log_if_error(TRITONBACKEND_RequestRelease(requests[r],
                                              TRITONSERVER_REQUEST_RELEASE_ALL),
                 "cannot release request");
  }
  return NULL;
}
