/*
 * cuda/gpu.c - GPU discovery and the binding of worker threads to a device
 * and a stream; without CUDA at build time, there is no GPU.
 */
#include "cuda/gpu.h"

#include <pthread.h>

#include "base/log.h"

#ifdef IFD_HAVE_CUDA
#include <cuda_runtime_api.h>

static pthread_once_t count_once = PTHREAD_ONCE_INIT;
static int count_cached;

static void count_devices(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
  count_cached = n;
}

int ifd_gpu_count(void) {
  pthread_once(&count_once, count_devices);
  return count_cached;
}

const char *ifd_gpu_build(void) {
  return "cuda";
}

/* The calling thread's binding (an instance thread of a GPU instance). */
static _Thread_local cudaStream_t thread_stream;
static _Thread_local int thread_device = -1;

int ifd_gpu_thread_bind(int device, ifd_errmsg_t *err) {
  cudaError_t e;
  if (ifd_gpu_count() == 0)
    return ifd_errf(err, IFD_EUNSUPPORTED, "GPUs not supported");
  if (device < 0 || device >= ifd_gpu_count())
    return ifd_errf(err, IFD_EINVAL, "no GPU with id %d", device);
  ifd_gpu_thread_unbind();
  e = cudaSetDevice(device);
  if (e == cudaSuccess)
    e = cudaStreamCreateWithFlags(&thread_stream, cudaStreamNonBlocking);
  if (e != cudaSuccess)
    return ifd_errf(err, IFD_EINTERNAL,
                    "failed to bind the thread to GPU %d: %s", device,
                    cudaGetErrorString(e));
  thread_device = device;
  return 0;
}

void ifd_gpu_thread_unbind(void) {
  if (thread_device < 0) return;
  if (thread_stream != NULL) {
    cudaStreamSynchronize(thread_stream);
    cudaStreamDestroy(thread_stream);
  }
  thread_stream = NULL;
  thread_device = -1;
}

void *ifd_gpu_thread_stream(void) {
  return (void *)thread_stream;
}

int ifd_gpu_thread_device(void) {
  return thread_device;
}

uint64_t ifd_gpu_unsupported(double min_cc) {
  uint64_t skip = 0;
  if (min_cc <= 0) min_cc = 6.0;
  for (int d = 0; d < ifd_gpu_count() && d < 64; d++) {
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) !=
            cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d) !=
            cudaSuccess) {
      IFD_WARN("GPU %d: cannot read its compute capability: ignored", d);
      skip |= 1ull << d;
      continue;
    }
    /* 7.5 is major 7, minor 5: compare as major + minor / 10. */
    if (major + minor / 10.0 < min_cc - 1e-9) {
      IFD_INFO(
          "GPU %d has compute capability %d.%d, below the minimum "
          "supported %.1f (--min-supported-compute-capability): ignored",
          d, major, minor, min_cc);
      skip |= 1ull << d;
    }
  }
  return skip;
}

int ifd_gpu_mem_info(uint64_t *free_bytes, uint64_t *total_bytes,
                     ifd_errmsg_t *err) {
  size_t f = 0, t = 0;
  cudaError_t e;
  if (thread_device < 0)
    return ifd_errf(err, IFD_EUNSUPPORTED, "the thread has no GPU");
  e = cudaMemGetInfo(&f, &t);
  if (e != cudaSuccess)
    return ifd_errf(err, IFD_EINTERNAL, "cudaMemGetInfo on GPU %d: %s",
                    thread_device, cudaGetErrorString(e));
  *free_bytes = f;
  *total_bytes = t;
  return 0;
}

#else /* CPU-only build */

int ifd_gpu_mem_info(uint64_t *free_bytes, uint64_t *total_bytes,
                     ifd_errmsg_t *err) {
  (void)free_bytes;
  (void)total_bytes;
  return ifd_errf(err, IFD_EUNSUPPORTED, "GPUs not supported");
}

uint64_t ifd_gpu_unsupported(double min_cc) {
  (void)min_cc;
  return 0;
}

int ifd_gpu_count(void) {
  return 0;
}

const char *ifd_gpu_build(void) {
  return "cpu-only";
}

int ifd_gpu_thread_bind(int device, ifd_errmsg_t *err) {
  (void)device;
  return ifd_errf(err, IFD_EUNSUPPORTED, "GPUs not supported");
}

void ifd_gpu_thread_unbind(void) {}

void *ifd_gpu_thread_stream(void) {
  return NULL;
}

int ifd_gpu_thread_device(void) {
  return -1;
}

#endif
