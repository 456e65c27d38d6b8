/*
 * cuda/cuda_mem.h - the CUDA calls core needs for shared memory and copies.
 *
 * On a CPU-only build (no toolkit) every call fails with IFD_EUNSUPPORTED;
 * on a CUDA build they call the runtime. None of them may run on the loop
 * thread: they can block (IPC open, synchronous copies).
 */
#ifndef IFD_CUDA_CUDA_MEM_H
#define IFD_CUDA_CUDA_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

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
 * given (CPU, pinned CPU, or GPU on device `*_id`). Worker threads only.
 */
int ifd_cuda_copy(void *dst, int32_t dst_type, int64_t dst_id, const void *src,
                  int32_t src_type, int64_t src_id, size_t n,
                  ifd_errmsg_t *err);

#endif
