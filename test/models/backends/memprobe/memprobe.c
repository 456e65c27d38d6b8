/*
 * test/models/backends/memprobe/memprobe.c - the "memprobe" test backend: a
 * GPU-minded backend for servers without a GPU.
 *
 * README: built as libtriton_memprobe.so; public Triton ABI only, no CUDA.
 * Input "IN" (INT32, any shape); outputs "OUT" (IN + 1) and "MEM" (INT32
 * [2]: the memory type the server handed IN in, and that of OUT's buffer).
 * It asks for IN and OUT in GPU memory on device 0, as a GPU backend does,
 * and so shows what the server gives it instead: on a machine without a GPU
 * both must come back as CPU memory (MEM = [0, 0]). Handed GPU memory, it
 * fails the request (it cannot touch device memory).
 *
 * It reports memory usage, for the statistics extension's memory_usage:
 * 4096 bytes of CPU memory for the model (ModelInitialize) and 1024 bytes of
 * pinned memory per instance (ModelInstanceInitialize). Each is reported
 * twice, twice as much first: the latest report of a model or instance
 * replaces its earlier one, as in Triton, so the statistics show 4096 and
 * 1024 per instance.
 */
#include <stdlib.h>
#include <string.h>

#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

#define TESTBE_NAME "memprobe"
#include "../common/testbe.h"

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
  (void)backend;
  return testbe_check_api();
}

/* One BufferAttributes describing `bytes` of `type` on device 0. */
static TRITONSERVER_Error *usage_of(TRITONSERVER_MemoryType type, size_t bytes,
                                    TRITONSERVER_BufferAttributes **ba) {
  TRITONSERVER_Error *err = TRITONSERVER_BufferAttributesNew(ba);
  if (err == NULL) err = TRITONSERVER_BufferAttributesSetMemoryType(*ba, type);
  if (err == NULL) err = TRITONSERVER_BufferAttributesSetMemoryTypeId(*ba, 0);
  if (err == NULL) err = TRITONSERVER_BufferAttributesSetByteSize(*ba, bytes);
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
  TRITONSERVER_Error *err = NULL;
  for (size_t bytes = 8192; err == NULL && bytes >= 4096; bytes /= 2) {
    TRITONSERVER_BufferAttributes *ba = NULL;
    err = usage_of(TRITONSERVER_MEMORY_CPU, bytes, &ba);
    if (err == NULL) err = TRITONBACKEND_ModelReportMemoryUsage(model, &ba, 1);
    if (ba != NULL)
      TRITONSERVER_ErrorDelete(TRITONSERVER_BufferAttributesDelete(ba));
  }
  return err;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(
    TRITONBACKEND_ModelInstance *instance) {
  TRITONSERVER_Error *err = NULL;
  for (size_t bytes = 2048; err == NULL && bytes >= 1024; bytes /= 2) {
    TRITONSERVER_BufferAttributes *ba = NULL;
    err = usage_of(TRITONSERVER_MEMORY_CPU_PINNED, bytes, &ba);
    if (err == NULL)
      err = TRITONBACKEND_ModelInstanceReportMemoryUsage(instance, &ba, 1);
    if (ba != NULL)
      TRITONSERVER_ErrorDelete(TRITONSERVER_BufferAttributesDelete(ba));
  }
  return err;
}

static TRITONSERVER_Error *process(TRITONBACKEND_Request *request,
                                   TRITONBACKEND_Response *response) {
  TRITONBACKEND_Input *input = NULL;
  TRITONBACKEND_Output *out = NULL, *mem = NULL;
  TRITONSERVER_DataType dtype;
  const int64_t *shape = NULL;
  uint32_t dims = 0, nbuf = 0;
  uint64_t size = 0;
  const void *src = NULL;
  void *dst = NULL, *mdst = NULL;
  TRITONSERVER_MemoryType in_mt = TRITONSERVER_MEMORY_GPU,
                          out_mt = TRITONSERVER_MEMORY_GPU,
                          m_mt = TRITONSERVER_MEMORY_CPU;
  int64_t in_id = 0, out_id = 0, m_id = 0, mem_shape[1] = {2};
  TRITONSERVER_Error *err = TRITONBACKEND_RequestInput(request, "IN", &input);
  if (err == NULL)
    err = TRITONBACKEND_InputProperties(input, NULL, &dtype, &shape, &dims,
                                        &size, &nbuf);
  if (err != NULL) return err;
  if (dtype != TRITONSERVER_TYPE_INT32 || nbuf != 1)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "memprobe: IN must be one INT32 buffer");
  err = TRITONBACKEND_InputBuffer(input, 0, &src, &size, &in_mt, &in_id);
  if (err == NULL)
    err =
        TRITONBACKEND_ResponseOutput(response, &out, "OUT", dtype, shape, dims);
  if (err == NULL)
    err = TRITONBACKEND_OutputBuffer(out, &dst, size, &out_mt, &out_id);
  if (err != NULL) return err;
  if (in_mt == TRITONSERVER_MEMORY_GPU || out_mt == TRITONSERVER_MEMORY_GPU)
    return TRITONSERVER_ErrorNew(
        TRITONSERVER_ERROR_UNSUPPORTED,
        "memprobe: handed GPU memory; it runs on servers without a GPU");
  for (uint64_t i = 0; i < size / sizeof(int32_t); i++) {
    int32_t v;
    memcpy(&v, (const char *)src + i * sizeof(v), sizeof(v));
    v += 1;
    memcpy((char *)dst + i * sizeof(v), &v, sizeof(v));
  }
  err = TRITONBACKEND_ResponseOutput(response, &mem, "MEM",
                                     TRITONSERVER_TYPE_INT32, mem_shape, 1);
  if (err == NULL)
    err = TRITONBACKEND_OutputBuffer(mem, &mdst, 2 * sizeof(int32_t), &m_mt,
                                     &m_id);
  if (err == NULL) {
    int32_t v[2] = {(int32_t)in_mt, (int32_t)out_mt};
    memcpy(mdst, v, sizeof(v));
  }
  return err;
}

static TRITONSERVER_Error *process_one(TRITONBACKEND_Request *request,
                                       TRITONBACKEND_Response *response,
                                       void *arg) {
  (void)arg;
  return process(request, response);
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request **requests,
    const uint32_t request_count) {
  testbe_execute_each(instance, requests, request_count, process_one, NULL);
  return NULL;
}
