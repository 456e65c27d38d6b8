/*
 * cuda/gpu.c - GPU discovery; without CUDA at build time, there is none.
 */
#include "cuda/gpu.h"

#ifdef IFD_HAVE_CUDA
#include <cuda_runtime_api.h>

int ifd_gpu_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

const char *ifd_gpu_build(void) {
  return "cuda";
}

/* ---- cuda_mem.h ---- */
#include <string.h>

#include "cuda/cuda_mem.h"

static int cuda_fail(ifd_errmsg_t *err, const char *what, cudaError_t e) {
  return ifd_errf(err, IFD_EINTERNAL, "%s: %s", what, cudaGetErrorString(e));
}

int ifd_cuda_ipc_open(const void *handle, size_t handle_len, int64_t device,
                      void **ptr, ifd_errmsg_t *err) {
  cudaIpcMemHandle_t h;
  cudaError_t e;
  *ptr = NULL;
  if (handle_len != sizeof(h))
    return ifd_errf(err, IFD_EINVAL, "a CUDA IPC handle has %zu bytes, not %zu",
                    sizeof(h), handle_len);
  memcpy(&h, handle, sizeof(h));
  e = cudaSetDevice((int)device);
  if (e != cudaSuccess) return cuda_fail(err, "failed to set CUDA device", e);
  e = cudaIpcOpenMemHandle(ptr, h, cudaIpcMemLazyEnablePeerAccess);
  if (e != cudaSuccess)
    return cuda_fail(err, "failed to open CUDA IPC handle", e);
  return 0;
}

void ifd_cuda_ipc_close(void *ptr, int64_t device) {
  if (ptr == NULL) return;
  if (cudaSetDevice((int)device) == cudaSuccess) cudaIpcCloseMemHandle(ptr);
}

int ifd_cuda_copy(void *dst, int32_t dst_type, int64_t dst_id, const void *src,
                  int32_t src_type, int64_t src_id, size_t n,
                  ifd_errmsg_t *err) {
  cudaError_t e;
  int dev = dst_type == 2 ? (int)dst_id : src_type == 2 ? (int)src_id : -1;
  if (dev >= 0 && (e = cudaSetDevice(dev)) != cudaSuccess)
    return cuda_fail(err, "failed to set CUDA device", e);
  e = cudaMemcpy(dst, src, n, cudaMemcpyDefault);
  if (e != cudaSuccess) return cuda_fail(err, "CUDA copy failed", e);
  return 0;
}
#else
int ifd_gpu_count(void) {
  return 0;
}

const char *ifd_gpu_build(void) {
  return "cpu-only";
}
#endif

/* ---- cuda_mem.h: CPU-only build ---- */
#ifndef IFD_HAVE_CUDA
#include "cuda/cuda_mem.h"

int ifd_cuda_ipc_open(const void *handle, size_t handle_len, int64_t device,
                      void **ptr, ifd_errmsg_t *err) {
  (void)handle;
  (void)handle_len;
  (void)device;
  *ptr = NULL;
  return ifd_errf(err, IFD_EUNSUPPORTED, "GPUs not supported");
}

void ifd_cuda_ipc_close(void *ptr, int64_t device) {
  (void)ptr;
  (void)device;
}

int ifd_cuda_copy(void *dst, int32_t dst_type, int64_t dst_id, const void *src,
                  int32_t src_type, int64_t src_id, size_t n,
                  ifd_errmsg_t *err) {
  (void)dst;
  (void)dst_type;
  (void)dst_id;
  (void)src;
  (void)src_type;
  (void)src_id;
  (void)n;
  return ifd_errf(err, IFD_EUNSUPPORTED, "GPUs not supported");
}
#endif
