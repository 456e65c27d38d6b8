/*
 * frontend/grpc_shm.h - Triton's shared-memory extensions over gRPC: what the
 * method table (frontend/grpc_service.c) and the inference codec
 * (frontend/grpc_infer.c) use of frontend/grpc_shm.c.
 *
 * The RPCs are SystemSharedMemory{Status,Register,Unregister} and
 * CudaSharedMemory{Status,Register,Unregister}; they drive the server's
 * region table (core/shm.h), whose register and unregister complete later,
 * off the loop. A tensor of ModelInferRequest names a region through its
 * parameters shared_memory_region, shared_memory_offset and
 * shared_memory_byte_size: ifd__grpc_shm_tensor reads them with Triton's
 * rules and texts and makes the request hold the region.
 *
 * Loop thread only.
 */
#ifndef IFD_FRONTEND_GRPC_SHM_H
#define IFD_FRONTEND_GRPC_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "core/infer.h"
#include "net/grpc_internal.h"
#include "proto/grpc_service.pb-c.h"

/* The RPC handlers (ifd_grpc_method_t.on_message). Status answers at once;
 * register and unregister answer when the table's operation completes. */
void ifd__grpc_shm_system_status(ifd_gstream_t *st, uint8_t *msg, size_t len);
void ifd__grpc_shm_system_register(ifd_gstream_t *st, uint8_t *msg, size_t len);
void ifd__grpc_shm_system_unregister(ifd_gstream_t *st, uint8_t *msg,
                                     size_t len);
void ifd__grpc_shm_cuda_status(ifd_gstream_t *st, uint8_t *msg, size_t len);
void ifd__grpc_shm_cuda_register(ifd_gstream_t *st, uint8_t *msg, size_t len);
void ifd__grpc_shm_cuda_unregister(ifd_gstream_t *st, uint8_t *msg, size_t len);

/** ifd_grpc_method_t.on_cancel of register and unregister: the call ended
 *  before the table's operation completed; that operation goes on, and its
 *  answer is dropped. */
void ifd__grpc_shm_cancel(ifd_gstream_t *st);

/** A tensor's shared-memory parameters, as found among its parameters
 *  (NULL: absent). Borrowed from the unpacked tensor message. */
typedef struct ifd_grpc_shm_params {
  const Inference__InferParameter *region;    /* shared_memory_region */
  const Inference__InferParameter *offset;    /* shared_memory_offset */
  const Inference__InferParameter *byte_size; /* shared_memory_byte_size */
} ifd_grpc_shm_params_t;

/**
 * Notes `value` in `p` when `key` is one of the three shared-memory
 * parameters. Returns 1 when it was one of them, else 0.
 */
int ifd__grpc_shm_param(ifd_grpc_shm_params_t *p, const char *key,
                        const Inference__InferParameter *value);

/**
 * Checks the shared-memory parameters of tensor `tensor` (Triton's rules:
 * the region is a string_param, offset and byte size int64_param, neither
 * without the region, the byte size required with it) and, when a region is
 * named, resolves it for `req` with ifd_shm_use (bounds checked, the request
 * holds the region until it is freed).
 *
 * Returns 0 with ref->ptr NULL when the tensor names no region, 0 with
 * `ref` filled when it does, or a negative code with `err`: IFD_EINVAL
 * (parameters, bounds), IFD_ENOTFOUND (no such region), IFD_ENOMEM.
 */
int ifd__grpc_shm_tensor(ifd_request_t *req, const char *tensor,
                         const ifd_grpc_shm_params_t *p, ifd_shm_ref_t *ref,
                         ifd_errmsg_t *err);

#endif
