/*
 * test/models/backends/cuda_add/cuda_add.c - the "cuda_add" test backend:
 * adds one on a GPU, on a stream of its own.
 *
 * README: built as libtriton_cuda_add.so, only when the CUDA toolkit is
 * present (the kernel is kernel.cu, through nvcc); uses the public Triton
 * ABI and the CUDA runtime only. Input "IN" (INT32, any shape) and outputs
 * "OUT" (IN + 1, same shape) and "MEM" (INT32 [3]: the memory type the
 * server handed IN in, the memory type of OUT's buffer, and the device
 * current on the thread that ran the execute).
 *
 * Each instance must be KIND_GPU: its initialize checks that the server made
 * the instance's device current on its thread, and creates the instance's
 * stream there. The execute asks for IN and OUT in GPU memory on that
 * device; whichever memory it gets, it works: a host IN is copied to the
 * device, a host OUT is filled from a device scratch buffer. It waits for
 * its stream before sending, as Triton's contract asks.
 */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

#define TESTBE_NAME "cuda_add"
#include "../common/testbe.h"

int cuda_add_one(const int32_t *in, int32_t *out, size_t n,
                 cudaStream_t stream);

typedef struct instance_state {
  int device;
  cudaStream_t stream; /* owned */
} instance_state_t;

static TRITONSERVER_Error *cuda_error(const char *what, cudaError_t e) {
  char buf[256];
  snprintf(buf, sizeof(buf), "cuda_add: %s: %s", what, cudaGetErrorString(e));
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, buf);
}

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
  (void)backend;
  return testbe_check_api();
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(
    TRITONBACKEND_ModelInstance *instance) {
  TRITONSERVER_InstanceGroupKind kind;
  int32_t device = -1;
  int current = -1;
  instance_state_t *st;
  cudaError_t e;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceKind(instance, &kind);
  if (err == NULL) err = TRITONBACKEND_ModelInstanceDeviceId(instance, &device);
  if (err != NULL) return err;
  if (kind != TRITONSERVER_INSTANCEGROUPKIND_GPU)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "cuda_add: instances must be KIND_GPU");
  /* The server binds a GPU instance's thread to its device. */
  e = cudaGetDevice(&current);
  if (e != cudaSuccess) return cuda_error("cudaGetDevice", e);
  if (current != device)
    return TRITONSERVER_ErrorNew(
        TRITONSERVER_ERROR_INTERNAL,
        "cuda_add: the instance thread is not bound to its device");
  st = calloc(1, sizeof(*st));
  if (st == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  st->device = device;
  e = cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    free(st);
    return cuda_error("cudaStreamCreate", e);
  }
  return TRITONBACKEND_ModelInstanceSetState(instance, st);
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceFinalize(
    TRITONBACKEND_ModelInstance *instance) {
  void *vs = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceState(instance, &vs);
  instance_state_t *st = vs;
  if (err != NULL) return err;
  if (st != NULL) {
    cudaStreamSynchronize(st->stream);
    cudaStreamDestroy(st->stream);
    free(st);
  }
  return NULL;
}

/* One request: IN (wherever it is) + 1 into OUT (wherever the server put
 * it), on the instance's stream, waited for before returning. */
static TRITONSERVER_Error *process(instance_state_t *st,
                                   TRITONBACKEND_Request *request,
                                   TRITONBACKEND_Response *response) {
  TRITONBACKEND_Input *input = NULL;
  TRITONBACKEND_Output *out = NULL, *mem = NULL;
  TRITONSERVER_DataType dtype;
  const int64_t *shape = NULL;
  uint32_t dims = 0, nbuf = 0;
  uint64_t size = 0, n;
  const void *src = NULL;
  void *dst = NULL, *mdst = NULL;
  int32_t *dev_in = NULL, *dev_out = NULL;
  TRITONSERVER_MemoryType in_mt = TRITONSERVER_MEMORY_GPU,
                          out_mt = TRITONSERVER_MEMORY_GPU,
                          m_mt = TRITONSERVER_MEMORY_CPU;
  int64_t in_id = st->device, out_id = st->device, m_id = 0;
  int64_t mem_shape[1] = {3};
  int current = -1;
  cudaError_t e = cudaSuccess;
  TRITONSERVER_Error *err = TRITONBACKEND_RequestInput(request, "IN", &input);
  if (err == NULL)
    err = TRITONBACKEND_InputProperties(input, NULL, &dtype, &shape, &dims,
                                        &size, &nbuf);
  if (err != NULL) return err;
  if (dtype != TRITONSERVER_TYPE_INT32 || nbuf != 1)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "cuda_add: IN must be one INT32 buffer");
  n = size / sizeof(int32_t);
  err = TRITONBACKEND_InputBuffer(input, 0, &src, &size, &in_mt, &in_id);
  if (err == NULL)
    err =
        TRITONBACKEND_ResponseOutput(response, &out, "OUT", dtype, shape, dims);
  if (err == NULL)
    err = TRITONBACKEND_OutputBuffer(out, &dst, size, &out_mt, &out_id);
  if (err != NULL) return err;

  /* Device memory for whatever came on the host. */
  if (in_mt != TRITONSERVER_MEMORY_GPU) {
    e = cudaMalloc((void **)&dev_in, size > 0 ? size : 1);
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(dev_in, src, size, cudaMemcpyHostToDevice,
                          st->stream);
    src = dev_in;
  }
  if (e == cudaSuccess && out_mt != TRITONSERVER_MEMORY_GPU)
    e = cudaMalloc((void **)&dev_out, size > 0 ? size : 1);
  if (e == cudaSuccess)
    e = (cudaError_t)cuda_add_one(
        src, out_mt == TRITONSERVER_MEMORY_GPU ? dst : dev_out, n, st->stream);
  if (e == cudaSuccess && dev_out != NULL)
    e = cudaMemcpyAsync(dst, dev_out, size, cudaMemcpyDeviceToHost, st->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(st->stream);
  if (dev_in != NULL) cudaFree(dev_in);
  if (dev_out != NULL) cudaFree(dev_out);
  if (e != cudaSuccess) return cuda_error("add one", e);

  if (cudaGetDevice(&current) != cudaSuccess) current = -1;
  err = TRITONBACKEND_ResponseOutput(response, &mem, "MEM",
                                     TRITONSERVER_TYPE_INT32, mem_shape, 1);
  if (err == NULL)
    err = TRITONBACKEND_OutputBuffer(mem, &mdst, 3 * sizeof(int32_t), &m_mt,
                                     &m_id);
  if (err == NULL) {
    int32_t v[3] = {(int32_t)in_mt, (int32_t)out_mt, (int32_t)current};
    memcpy(mdst, v, sizeof(v));
  }
  return err;
}

static TRITONSERVER_Error *process_one(TRITONBACKEND_Request *request,
                                       TRITONBACKEND_Response *response,
                                       void *arg) {
  return process((instance_state_t *)arg, request, response);
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request **requests,
    const uint32_t request_count) {
  void *vs = NULL;
  TRITONSERVER_Error *err = TRITONBACKEND_ModelInstanceState(instance, &vs);
  if (err != NULL) return err;
  testbe_execute_each(instance, requests, request_count, process_one, vs);
  return NULL;
}
