/*
 * cuda/mem.c - the pinned and per-device memory pools, allocation with
 * fallbacks, CUDA IPC and copies (cuda/cuda_mem.h).
 *
 * A CUDA build calls the runtime; a CPU-only build (no IFD_HAVE_CUDA)
 * compiles the same functions without it: no pools, GPU memory and copies
 * refused with "GPUs not supported", pinned memory served as CPU memory.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "cuda/cuda_mem.h"
#include "cuda/gpu.h"
#include "cuda/internal.h"

#ifdef IFD_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* The process's pools: set up once by ifd_cuda_mem_init before any other
 * thread allocates, read-only afterwards except inside each pool. */
static struct {
  int ready;
  ifd__mempool_t pinned; /* over pinned_base; segs NULL: no pool */
  void *pinned_base;     /* owned: cudaHostAlloc */
  ifd__mempool_t gpu[IFD_CUDA_MAX_DEVICES];
  void *gpu_base[IFD_CUDA_MAX_DEVICES]; /* owned: cudaMalloc on device i */
  int n_gpu;                            /* devices present at init */
} pools;

void ifd_cuda_mem_opts_default(ifd_cuda_mem_opts_t *o) {
  int i;
  o->pinned_bytes = IFD_CUDA_PINNED_POOL_DEFAULT;
  for (i = 0; i < IFD_CUDA_MAX_DEVICES; i++)
    o->cuda_bytes[i] = IFD_CUDA_POOL_DEFAULT;
}

/* A non-negative decimal integer filling [s, end). */
static int parse_u64(const char *s, const char *end, uint64_t *v) {
  uint64_t x = 0;
  if (s == end) return -1;
  for (; s < end; s++) {
    if (*s < '0' || *s > '9') return -1;
    if (x > (UINT64_MAX - 9) / 10) return -1;
    x = x * 10 + (uint64_t)(*s - '0');
  }
  *v = x;
  return 0;
}

int ifd_cuda_mem_parse_pool(ifd_cuda_mem_opts_t *o, const char *arg,
                            ifd_errmsg_t *err) {
  const char *colon = strchr(arg, ':');
  uint64_t dev, bytes;
  if (colon == NULL || parse_u64(arg, colon, &dev) < 0 ||
      parse_u64(colon + 1, colon + strlen(colon), &bytes) < 0)
    return ifd_errf(err, IFD_EINVAL,
                    "--cuda-memory-pool-byte-size expects "
                    "<integer>:<integer> (device:bytes), got '%s'",
                    arg);
  if (dev >= IFD_CUDA_MAX_DEVICES)
    return ifd_errf(err, IFD_EINVAL,
                    "--cuda-memory-pool-byte-size: device %" PRIu64
                    " is past the last one inferd knows (%d)",
                    dev, IFD_CUDA_MAX_DEVICES - 1);
  o->cuda_bytes[dev] = bytes;
  return 0;
}

size_t ifd_cuda_pools(ifd_cuda_pool_info_t *out, size_t max) {
  size_t n = 0;
  int d;
  if (!pools.ready) return 0;
  if (pools.pinned.segs != NULL) {
    if (n < max)
      out[n] =
          (ifd_cuda_pool_info_t){IFD_CUDA_MEM_CPU_PINNED, 0, pools.pinned.size,
                                 ifd__mempool_used(&pools.pinned)};
    n++;
  }
  for (d = 0; d < pools.n_gpu; d++) {
    if (pools.gpu[d].segs == NULL) continue;
    if (n < max)
      out[n] = (ifd_cuda_pool_info_t){IFD_CUDA_MEM_GPU, d, pools.gpu[d].size,
                                      ifd__mempool_used(&pools.gpu[d])};
    n++;
  }
  return n;
}

void ifd_cuda_host_free(void *ptr) {
  if (ptr == NULL) return;
  if (ifd__mempool_owns(&pools.pinned, ptr) &&
      ifd__mempool_free(&pools.pinned, ptr) == 0)
    return;
  free(ptr);
}

int ifd_cuda_free_is_cheap(const void *ptr, int32_t mem_type, int64_t mem_id) {
  if (mem_type == IFD_CUDA_MEM_CPU) return 1;
  if (mem_type == IFD_CUDA_MEM_CPU_PINNED)
    return ifd__mempool_owns(&pools.pinned, ptr);
  return mem_id >= 0 && mem_id < pools.n_gpu &&
         ifd__mempool_owns(&pools.gpu[mem_id], ptr);
}

#ifdef IFD_HAVE_CUDA

static int cuda_fail(ifd_errmsg_t *err, const char *what, cudaError_t e) {
  return ifd_errf(err, IFD_EINTERNAL, "%s: %s", what, cudaGetErrorString(e));
}

void ifd_cuda_mem_init(const ifd_cuda_mem_opts_t *o, int gpu_count) {
  cudaError_t e;
  int d;
  if (pools.ready) return;
  pools.ready = 1;
  if (gpu_count > IFD_CUDA_MAX_DEVICES) gpu_count = IFD_CUDA_MAX_DEVICES;
  if (gpu_count > 0 && o->pinned_bytes > 0) {
    e = cudaHostAlloc(&pools.pinned_base, o->pinned_bytes,
                      cudaHostAllocPortable);
    if (e != cudaSuccess) {
      /* Triton's words. */
      IFD_WARN(
          "Unable to allocate pinned system memory, pinned memory pool will "
          "not be available: %s",
          cudaGetErrorString(e));
      pools.pinned_base = NULL;
    } else if (ifd__mempool_init(&pools.pinned, pools.pinned_base,
                                 o->pinned_bytes) < 0) {
      cudaFreeHost(pools.pinned_base);
      pools.pinned_base = NULL;
    } else {
      IFD_INFO("Pinned memory pool is created at '%p' with size %" PRIu64,
               pools.pinned_base, o->pinned_bytes);
    }
  }
  pools.n_gpu = gpu_count;
  for (d = 0; d < gpu_count; d++) {
    uint64_t n = o->cuda_bytes[d];
    if (n == 0) continue;
    if ((e = cudaSetDevice(d)) != cudaSuccess ||
        (e = cudaMalloc(&pools.gpu_base[d], n)) != cudaSuccess) {
      IFD_WARN("Failed to allocate CUDA memory with byte size %" PRIu64
               " on GPU %d: %s; no CUDA memory pool on it",
               n, d, cudaGetErrorString(e));
      pools.gpu_base[d] = NULL;
      continue;
    }
    if (ifd__mempool_init(&pools.gpu[d], pools.gpu_base[d], n) < 0) {
      cudaFree(pools.gpu_base[d]);
      pools.gpu_base[d] = NULL;
      continue;
    }
    IFD_INFO("CUDA memory pool is created on device %d with size %" PRIu64, d,
             n);
  }
  if (gpu_count > 0) cudaSetDevice(0);
}

void ifd_cuda_mem_fini(void) {
  int d;
  if (!pools.ready) return;
  for (d = 0; d < pools.n_gpu; d++) {
    if (pools.gpu_base[d] == NULL) continue;
    ifd__mempool_fini(&pools.gpu[d]);
    if (cudaSetDevice(d) == cudaSuccess) cudaFree(pools.gpu_base[d]);
    pools.gpu_base[d] = NULL;
  }
  if (pools.pinned_base != NULL) {
    ifd__mempool_fini(&pools.pinned);
    cudaFreeHost(pools.pinned_base);
    pools.pinned_base = NULL;
  }
  pools.n_gpu = 0;
  pools.ready = 0;
}

/* Runs with the calling thread's current device set to `dev`, restoring it
 * afterwards: an instance thread stays bound to its own device. */
static int device_enter(int dev, int *saved, ifd_errmsg_t *err) {
  cudaError_t e = cudaGetDevice(saved);
  if (e != cudaSuccess) *saved = -1;
  if (*saved == dev) return 0;
  e = cudaSetDevice(dev);
  if (e != cudaSuccess) return cuda_fail(err, "failed to set CUDA device", e);
  return 0;
}

static void device_leave(int dev, int saved) {
  if (saved >= 0 && saved != dev) cudaSetDevice(saved);
}

int ifd_cuda_alloc(int32_t *mem_type, int64_t *mem_id, uint64_t n, void **ptr,
                   ifd_errmsg_t *err) {
  *ptr = NULL;
  if (n == 0) n = 1;
  if (*mem_type == IFD_CUDA_MEM_GPU) {
    int64_t d = *mem_id;
    int saved, rc;
    cudaError_t e;
    if (ifd_gpu_count() == 0)
      return ifd_errf(err, IFD_EUNSUPPORTED, "GPUs not supported");
    if (d < 0 || d >= ifd_gpu_count())
      return ifd_errf(err, IFD_EINVAL, "no GPU with id %" PRId64, d);
    if (d < pools.n_gpu && pools.gpu[d].segs != NULL &&
        (*ptr = ifd__mempool_alloc(&pools.gpu[d], n)) != NULL)
      return 0;
    if ((rc = device_enter((int)d, &saved, err)) < 0) return rc;
    e = cudaMalloc(ptr, n);
    device_leave((int)d, saved);
    if (e != cudaSuccess) {
      *ptr = NULL;
      return cuda_fail(err, "failed to allocate GPU memory", e);
    }
    return 0;
  }
  if (*mem_type == IFD_CUDA_MEM_CPU_PINNED) {
    if (pools.pinned.segs != NULL &&
        (*ptr = ifd__mempool_alloc(&pools.pinned, n)) != NULL) {
      *mem_id = 0;
      return 0;
    }
  }
  *mem_type = IFD_CUDA_MEM_CPU;
  *mem_id = 0;
  *ptr = malloc(n);
  if (*ptr == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  return 0;
}

void ifd_cuda_free(void *ptr, int32_t mem_type, int64_t mem_id) {
  if (ptr == NULL) return;
  if (mem_type == IFD_CUDA_MEM_GPU) {
    int saved;
    ifd_errmsg_t err;
    if (mem_id >= 0 && mem_id < pools.n_gpu &&
        ifd__mempool_free(&pools.gpu[mem_id], ptr) == 0)
      return;
    if (device_enter((int)mem_id, &saved, &err) < 0) return;
    cudaFree(ptr);
    device_leave((int)mem_id, saved);
    return;
  }
  if (mem_type == IFD_CUDA_MEM_CPU_PINNED &&
      ifd__mempool_free(&pools.pinned, ptr) == 0)
    return;
  free(ptr);
}

int ifd_cuda_ipc_open(const void *handle, size_t handle_len, int64_t device,
                      void **ptr, ifd_errmsg_t *err) {
  cudaIpcMemHandle_t h;
  cudaError_t e;
  int saved, rc;
  *ptr = NULL;
  if (ifd_gpu_count() == 0)
    return ifd_errf(err, IFD_EUNSUPPORTED, "GPUs not supported");
  if (handle_len != sizeof(h))
    return ifd_errf(err, IFD_EINVAL, "a CUDA IPC handle has %zu bytes, not %zu",
                    sizeof(h), handle_len);
  memcpy(&h, handle, sizeof(h));
  if ((rc = device_enter((int)device, &saved, err)) < 0) return rc;
  e = cudaIpcOpenMemHandle(ptr, h, cudaIpcMemLazyEnablePeerAccess);
  device_leave((int)device, saved);
  if (e != cudaSuccess) {
    *ptr = NULL;
    return cuda_fail(err, "failed to open CUDA IPC handle", e);
  }
  return 0;
}

void ifd_cuda_ipc_close(void *ptr, int64_t device) {
  int saved;
  ifd_errmsg_t err;
  if (ptr == NULL) return;
  if (device_enter((int)device, &saved, &err) < 0) return;
  cudaIpcCloseMemHandle(ptr);
  device_leave((int)device, saved);
}

int ifd_cuda_copy(void *dst, int32_t dst_type, int64_t dst_id, const void *src,
                  int32_t src_type, int64_t src_id, size_t n,
                  ifd_errmsg_t *err) {
  cudaStream_t stream = (cudaStream_t)ifd_gpu_thread_stream();
  cudaError_t e;
  int dev = dst_type == IFD_CUDA_MEM_GPU   ? (int)dst_id
            : src_type == IFD_CUDA_MEM_GPU ? (int)src_id
                                           : -1;
  int saved = -1, rc;
  if (n == 0) return 0;
  if (dev < 0) {
    /* Host to host. */
    memmove(dst, src, n);
    return 0;
  }
  if (ifd_gpu_count() == 0)
    return ifd_errf(err, IFD_EUNSUPPORTED, "GPUs not supported");
  if ((rc = device_enter(dev, &saved, err)) < 0) return rc;
  /* The bound thread's stream belongs to its own device. */
  if (stream != NULL && dev == ifd_gpu_thread_device()) {
    e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  } else {
    e = cudaMemcpy(dst, src, n, cudaMemcpyDefault);
  }
  device_leave(dev, saved);
  if (e != cudaSuccess) return cuda_fail(err, "CUDA copy failed", e);
  return 0;
}

#else /* CPU-only build */

void ifd_cuda_mem_init(const ifd_cuda_mem_opts_t *o, int gpu_count) {
  (void)o;
  (void)gpu_count;
  pools.ready = 1;
}

void ifd_cuda_mem_fini(void) {
  pools.ready = 0;
}

int ifd_cuda_alloc(int32_t *mem_type, int64_t *mem_id, uint64_t n, void **ptr,
                   ifd_errmsg_t *err) {
  *ptr = NULL;
  if (*mem_type == IFD_CUDA_MEM_GPU)
    return ifd_errf(err, IFD_EUNSUPPORTED, "GPUs not supported");
  *mem_type = IFD_CUDA_MEM_CPU;
  *mem_id = 0;
  *ptr = malloc(n > 0 ? n : 1);
  if (*ptr == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  return 0;
}

void ifd_cuda_free(void *ptr, int32_t mem_type, int64_t mem_id) {
  (void)mem_id;
  if (mem_type != IFD_CUDA_MEM_GPU) free(ptr);
}

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
  (void)dst_id;
  (void)src_id;
  if (dst_type == IFD_CUDA_MEM_GPU || src_type == IFD_CUDA_MEM_GPU)
    return ifd_errf(err, IFD_EUNSUPPORTED, "GPUs not supported");
  if (n > 0) memmove(dst, src, n);
  return 0;
}

#endif
