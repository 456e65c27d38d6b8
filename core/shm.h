/*
 * core/shm.h - shared-memory regions: Triton's system and CUDA shared-memory
 * extensions.
 *
 * A client registers a region by name: a slice of a POSIX shared-memory
 * object (shm_open key, offset, byte size) or of a CUDA allocation of another
 * process (IPC handle, device, byte size). Requests then name a region, an
 * offset in it and a byte size for an input (read in place: the input's data
 * points into the mapping) or an output (the backend writes into the region:
 * the output buffer TRITONBACKEND_OutputBuffer hands out is the region).
 *
 * Threads: the table belongs to the loop thread. shm_open/mmap/munmap and
 * cudaIpcOpenMemHandle run on libuv's thread pool, never on the loop, so
 * register and unregister complete through a callback. A region is counted:
 * the table holds one reference and every request that uses it one more, so
 * a region unregistered while requests use it stays mapped until the last of
 * them is freed.
 *
 * Errors and their codes are Triton 2.47's (see the conformance data,
 * features.md section 5): a name registered twice IFD_EEXISTS ("shared memory
 * region '<n>' already in manager"), a key that does not open IFD_EINTERNAL,
 * bounds IFD_EINVAL, an unknown region in a request IFD_ENOTFOUND.
 */
#ifndef IFD_CORE_SHM_H
#define IFD_CORE_SHM_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "base/error.h"

typedef struct ifd_request ifd_request_t;
typedef struct ifd_shm ifd_shm_t;
typedef struct ifd_shm_region ifd_shm_region_t;

typedef enum ifd_shm_kind {
  IFD_SHM_SYSTEM = 0,
  IFD_SHM_CUDA = 1,
} ifd_shm_kind_t;

/* Memory types, same values as TRITONSERVER_MemoryType. */
#define IFD_MEM_CPU 0
#define IFD_MEM_CPU_PINNED 1
#define IFD_MEM_GPU 2

/* CUDA IPC handles are this long (cudaIpcMemHandle_t). */
#define IFD_CUDA_IPC_HANDLE_BYTES 64

/** What a status query reports of one region (loop thread; valid during
 *  the callback only). */
typedef struct ifd_shm_info {
  ifd_shm_kind_t kind;
  const char *name;
  const char *key;    /* system: the shm_open key; CUDA: NULL */
  uint64_t offset;    /* system: offset in the object; CUDA: 0 */
  uint64_t byte_size; /* bytes of the region */
  int64_t device_id;  /* CUDA: the device; system: 0 */
} ifd_shm_info_t;

/** Completion of register / unregister (loop thread). `rc` 0 or a
 *  negative IFD_E* code with `msg` (Triton's text; valid during the call). */
typedef void (*ifd_shm_done_cb)(int rc, const char *msg, void *arg);

/** A register or unregister in flight: its callback runs once, later (never
 *  before the call that started it returns), unless forgotten. */
typedef struct ifd_shm_call ifd_shm_call_t;

/** The caller goes away (its connection closed): the operation completes
 *  but `cb` is not called. Loop thread; only before `cb` ran. */
void ifd_shm_call_forget(ifd_shm_call_t *call);

/** A new, empty table on `loop`, for a machine with `gpu_count` GPUs
 *  (counted once at start: the loop never asks the CUDA runtime). NULL on
 *  ENOMEM. */
ifd_shm_t *ifd_shm_new(uv_loop_t *loop, int gpu_count);

/**
 * Frees the table: unmaps every region no request holds any more,
 * synchronously (shutdown, after the loop has run out of work). Regions
 * still held by requests are unmapped when those requests go.
 */
void ifd_shm_free(ifd_shm_t *t);

/**
 * Registers a system shared-memory region: maps `byte_size` bytes at
 * `offset` (page-aligned, as mmap requires) of the POSIX object `key`, off
 * the loop. The name is taken at once: a second register of it before the
 * first completes fails with IFD_EEXISTS. Returns 0 (then `cb` runs later,
 * exactly once, unless forgotten through *call, which may be NULL) or a
 * negative code with `err` filled (then `cb` never runs).
 */
int ifd_shm_register_system(ifd_shm_t *t, const char *name, const char *key,
                            uint64_t offset, uint64_t byte_size,
                            ifd_shm_done_cb cb, void *arg,
                            ifd_shm_call_t **call, ifd_errmsg_t *err);

/**
 * Registers a CUDA shared-memory region from a raw cudaIpcMemHandle_t
 * (`handle_len` must be IFD_CUDA_IPC_HANDLE_BYTES) on `device_id`, opened
 * off the loop. Without a GPU (or a CUDA build) it fails at once with
 * IFD_EINVAL and Triton's text "failed to register CUDA shared memory
 * region: '<name>', GPUs not supported". Same contract as the system one.
 */
int ifd_shm_register_cuda(ifd_shm_t *t, const char *name, const void *handle,
                          size_t handle_len, int64_t device_id,
                          uint64_t byte_size, ifd_shm_done_cb cb, void *arg,
                          ifd_shm_call_t **call, ifd_errmsg_t *err);

/**
 * Unregisters the region `name` of `kind`, or every region of `kind` when
 * `name` is NULL or "". An unknown name is not an error (Triton answers
 * OK). The names are free at once; `cb` runs once the mappings that no
 * request holds are unmapped (off the loop; those requests hold keep theirs
 * until they are freed). Returns 0, or IFD_ENOMEM with `cb` not called.
 */
int ifd_shm_unregister(ifd_shm_t *t, ifd_shm_kind_t kind, const char *name,
                       ifd_shm_done_cb cb, void *arg, ifd_shm_call_t **call);

/**
 * Calls `fn` for each registered region of `kind` in name order, or for
 * the one named `name` (non-NULL, non-empty). IFD_ENOTFOUND with Triton's
 * text ("Unable to find system shared memory region: '<n>'"; "system" also
 * for CUDA, as Triton says) when `name` is not registered as `kind`;
 * otherwise 0 or what `fn` returned (a non-zero return stops the walk).
 */
int ifd_shm_foreach(ifd_shm_t *t, ifd_shm_kind_t kind, const char *name,
                    int (*fn)(const ifd_shm_info_t *info, void *arg), void *arg,
                    ifd_errmsg_t *err);

/** Regions registered now (both kinds); for tests and logs. */
size_t ifd_shm_count(const ifd_shm_t *t);

/**
 * Where a tensor of a request lives in shared memory: resolved by
 * ifd_shm_use from (region name, offset, byte size).
 */
typedef struct ifd_shm_ref {
  void *ptr;          /* region base + offset: host address or device pointer */
  uint64_t byte_size; /* bytes at ptr the request may use */
  int32_t mem_type;   /* IFD_MEM_CPU for system, IFD_MEM_GPU for CUDA */
  int64_t mem_id;     /* device for CUDA, 0 */
} ifd_shm_ref_t;

/**
 * Loop thread, while a protocol builds `req`: looks up the region named
 * `name` (`name_len` bytes, not NUL-terminated necessarily) in the server's
 * table, checks that offset lies in it (else IFD_EINVAL "Invalid offset
 * for shared memory region: '<n>'") and [offset, offset + byte_size) too,
 * with byte_size > 0 (else IFD_EINVAL "Invalid offset + byte size for
 * shared memory region: '<n>'"), and makes the request hold a reference to the
 * region until it is freed. IFD_ENOTFOUND "Unable to find shared memory
 * region: '<n>'" when no region has that name.
 */
int ifd_shm_use(ifd_request_t *req, const char *name, size_t name_len,
                uint64_t offset, uint64_t byte_size, ifd_shm_ref_t *ref,
                ifd_errmsg_t *err);

/**
 * Copies `n` bytes from host memory `src` to `dst` of a shared-memory
 * placement (a memcpy for system memory, a copy to the device for CUDA).
 * For outputs the backend did not write in place (an ensemble's response
 * points into its steps' buffers). 0 or a negative code with `err`.
 */
int ifd_shm_write(const ifd_shm_ref_t *dst, const void *src, uint64_t n,
                  ifd_errmsg_t *err);

#endif
