/*
 * cuda/cuda_mem.h - the CUDA memory inferd manages: device and pinned host
 * memory pools, allocation with fallbacks, CUDA IPC handles and copies.
 *
 * Pools are process-wide, as CUDA devices are (and as Triton's pinned and
 * CUDA memory managers are): ifd_cuda_mem_init sets them up once at start,
 * before any model loads; allocations and frees may come from any thread
 * afterwards and hold a pool's mutex for a short scan only.
 *
 * On a CPU-only build (no toolkit) or machine (no GPU) there are no pools:
 * GPU allocations, IPC and device copies fail with IFD_EUNSUPPORTED "GPUs not
 * supported", pinned allocations fall back to plain CPU memory. Calls that
 * reach the CUDA runtime (IPC open, copies, cudaMalloc/cudaFree) may block
 * and never run on the loop thread; freeing into a pool may.
 */
#ifndef IFD_CUDA_CUDA_MEM_H
#define IFD_CUDA_CUDA_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* Memory types: TRITONSERVER_MemoryType's values (core/shm.h's IFD_MEM_*). */
#define IFD_CUDA_MEM_CPU 0
#define IFD_CUDA_MEM_CPU_PINNED 1
#define IFD_CUDA_MEM_GPU 2

/* Triton's defaults: 256 MiB of pinned memory, 64 MiB per GPU. */
#define IFD_CUDA_PINNED_POOL_DEFAULT ((uint64_t)268435456)
#define IFD_CUDA_POOL_DEFAULT ((uint64_t)67108864)
/* Devices a --cuda-memory-pool-byte-size may name. */
#define IFD_CUDA_MAX_DEVICES 64

/** The pools' sizes (--pinned-memory-pool-byte-size,
 *  --cuda-memory-pool-byte-size). 0 bytes: no pool. */
typedef struct ifd_cuda_mem_opts {
  uint64_t pinned_bytes;
  uint64_t cuda_bytes[IFD_CUDA_MAX_DEVICES]; /* by device id */
} ifd_cuda_mem_opts_t;

/** Fills `o` with Triton's defaults. */
void ifd_cuda_mem_opts_default(ifd_cuda_mem_opts_t *o);

/**
 * Parses one --cuda-memory-pool-byte-size value, "<device>:<bytes>", into
 * `o`. Returns 0, or IFD_EINVAL with `err` naming what is wrong (not two
 * integers, a negative one, a device past IFD_CUDA_MAX_DEVICES - 1).
 */
int ifd_cuda_mem_parse_pool(ifd_cuda_mem_opts_t *o, const char *arg,
                            ifd_errmsg_t *err);

/**
 * Allocates the pools (pinned host memory, then each device's pool for the
 * `gpu_count` devices present) at start, on the main thread before the loop
 * runs. A pool that cannot be had is logged as a warning and left out, as
 * Triton does; so this never fails. Call once; ifd_cuda_mem_fini undoes it.
 */
void ifd_cuda_mem_init(const ifd_cuda_mem_opts_t *o, int gpu_count);

/** Releases the pools (at exit, after every model unloaded). */
void ifd_cuda_mem_fini(void);

/**
 * Allocates `n` bytes (n > 0) of memory type *mem_type on device *mem_id
 * (GPU) and sets *ptr. GPU memory comes from the device's pool, else from
 * cudaMalloc; pinned memory from the pinned pool, else plain CPU memory
 * (then *mem_type becomes IFD_CUDA_MEM_CPU and *mem_id 0); CPU memory from
 * malloc. Returns 0, or IFD_EUNSUPPORTED ("GPUs not supported") for GPU
 * memory without a GPU, IFD_EINVAL for a device that does not exist,
 * IFD_ENOMEM. Worker threads (cudaMalloc may block).
 */
int ifd_cuda_alloc(int32_t *mem_type, int64_t *mem_id, uint64_t n, void **ptr,
                   ifd_errmsg_t *err);

/** Frees what ifd_cuda_alloc handed out with the type and id it reported.
 *  Pool memory may be freed on any thread, the loop included; GPU memory
 *  outside the pool only off the loop (cudaFree may synchronize). */
void ifd_cuda_free(void *ptr, int32_t mem_type, int64_t mem_id);

/** Frees host memory that came from malloc or from the pinned pool
 *  (ifd_cuda_alloc of CPU or CPU_PINNED memory): a pool buffer goes back
 *  to the pool, anything else to free(). Never calls the CUDA runtime, so
 *  any thread may, the loop included. NULL is fine. */
void ifd_cuda_host_free(void *ptr);

/** Whether ifd_cuda_free of this buffer stays clear of the CUDA runtime
 *  (CPU memory, or a pool's): then the loop may free it. */
int ifd_cuda_free_is_cheap(const void *ptr, int32_t mem_type, int64_t mem_id);

/** One pool, for statistics and logs. */
typedef struct ifd_cuda_pool_info {
  int32_t mem_type; /* IFD_CUDA_MEM_CPU_PINNED or IFD_CUDA_MEM_GPU */
  int64_t mem_id;   /* device for GPU, 0 */
  uint64_t byte_size, used;
} ifd_cuda_pool_info_t;

/** Writes up to `max` pools that exist into `out`; returns how many exist. */
size_t ifd_cuda_pools(ifd_cuda_pool_info_t *out, size_t max);

/**
 * Opens a CUDA IPC memory handle (cudaIpcMemHandle_t, `handle_len` bytes)
 * of another process on `device`: *ptr is the device pointer. Thread pool.
 */
int ifd_cuda_ipc_open(const void *handle, size_t handle_len, int64_t device,
                      void **ptr, ifd_errmsg_t *err);

/** Closes what ifd_cuda_ipc_open opened. Thread pool or shutdown. */
void ifd_cuda_ipc_close(void *ptr, int64_t device);

/**
 * Synchronous copy of `n` bytes between memories of the IFD_MEM_* types
 * given (CPU, pinned CPU, or GPU on device `*_id`). On a thread bound to a
 * device (ifd_gpu_thread_bind: an instance thread of a GPU instance) the
 * copy runs on that thread's stream, which it then waits for; elsewhere on
 * the default stream. The thread's current device is left as it was.
 * Worker threads only.
 */
int ifd_cuda_copy(void *dst, int32_t dst_type, int64_t dst_id, const void *src,
                  int32_t src_type, int64_t src_id, size_t n,
                  ifd_errmsg_t *err);

#endif
