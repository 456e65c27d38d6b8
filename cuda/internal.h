/*
 * cuda/internal.h - declarations shared only inside cuda/.
 *
 * The pool allocator carves one block of memory that someone else obtained
 * (device memory from cudaMalloc, pinned host memory from cudaHostAlloc, or
 * plain malloc'd memory in tests) into buffers. It never touches the bytes
 * it manages, so it works the same on device and host memory, and it is
 * plain C: its tests need no GPU.
 */
#ifndef IFD_CUDA_INTERNAL_H
#define IFD_CUDA_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Every buffer a pool hands out starts on this boundary (cudaMalloc's own
 * alignment, which CUDA kernels expect). */
#define IFD__MEMPOOL_ALIGN 256u

/* One run of bytes of the pool, used or free. */
typedef struct ifd__memseg {
  uint64_t off, len;
  int used;
} ifd__memseg_t;

typedef struct ifd__mempool {
  pthread_mutex_t mu;
  char *base;          /* borrowed: the memory carved, owned by the caller */
  uint64_t size;       /* bytes at base */
  uint64_t used;       /* guarded by mu: bytes handed out (rounded up) */
  ifd__memseg_t *segs; /* owned, guarded by mu: sorted by off, covering
                          [0, size) without gaps; no two free ones adjacent */
  size_t n_segs, cap_segs;
} ifd__mempool_t;

/** Sets up `p` over `size` bytes at `base` (aligned to IFD__MEMPOOL_ALIGN
 *  by the caller). 0 or IFD_ENOMEM. */
int ifd__mempool_init(ifd__mempool_t *p, void *base, uint64_t size);

/** Frees the pool's bookkeeping (not the memory at base). */
void ifd__mempool_fini(ifd__mempool_t *p);

/** A buffer of `n` bytes (n > 0) from the pool, first fit; NULL when no free
 *  run is long enough or bookkeeping cannot grow. Any thread. */
void *ifd__mempool_alloc(ifd__mempool_t *p, uint64_t n);

/** Whether `ptr` lies in the pool's memory (any thread, no lock). */
int ifd__mempool_owns(const ifd__mempool_t *p, const void *ptr);

/** Returns a buffer that ifd__mempool_alloc handed out. Returns 0, or
 *  IFD_EINVAL for a pointer the pool did not hand out (left alone). */
int ifd__mempool_free(ifd__mempool_t *p, void *ptr);

/** Bytes handed out now. Any thread. */
uint64_t ifd__mempool_used(ifd__mempool_t *p);

#endif
