/*
 * base/bufpool.h - size-classed pools of big buffers that stay mapped.
 *
 * A request of a big tensor needs a multi-megabyte buffer for its body and
 * another for its output; with malloc each one is a fresh mmap, page faults
 * and zeroing on first touch and a munmap at its free. A pool keeps freed
 * buffers mapped, by size class, and the next request of that size takes
 * one back with its pages already resident.
 *
 * Classes: every buffer of IFD_BUFPOOL_MIN bytes or more is rounded up to
 * the next class, 2^k or 3 * 2^(k-1) bytes (so at most a third is unused),
 * mapped on its own (page-aligned, one page of header in front). Smaller
 * buffers are plain malloc with a header, never kept. A pool keeps at most
 * `per_class` free buffers of one class and at most `cap` bytes of free
 * buffers (counted by class size) in all: a buffer that would go beyond
 * either is unmapped at once. So the memory a pool holds beyond the
 * buffers in use is bounded by `cap`.
 *
 * Thread-safe: a buffer may be taken on one thread (the loop reading a
 * body, an instance thread asking for an output) and given back on
 * another; one mutex guards the free lists. A buffer remembers its pool, so
 * ifd_bufpool_put needs no pool argument.
 */
#ifndef IFD_BASE_BUFPOOL_H
#define IFD_BASE_BUFPOOL_H

#include <stddef.h>
#include <stdint.h>

/* The smallest size that is pooled (smaller buffers are plain malloc). */
#define IFD_BUFPOOL_MIN ((size_t)64 << 10)
/* The shared pool's default cap on free bytes kept. */
#define IFD_BUFPOOL_DEFAULT_CAP ((size_t)256 << 20)
/* The shared pool's default bound on free buffers kept per class. */
#define IFD_BUFPOOL_DEFAULT_PER_CLASS 8u

typedef struct ifd_bufpool ifd_bufpool_t;

typedef struct ifd_bufpool_stats {
  uint64_t hits;       /* takes served from a free list */
  uint64_t misses;     /* takes that mapped (or malloc'd) a new buffer */
  uint64_t unmapped;   /* gives that unmapped a buffer: the pool was full */
  size_t cached_bytes; /* free bytes kept now, by class size */
  unsigned cached;     /* free buffers kept now */
} ifd_bufpool_stats_t;

/** A pool keeping at most `cap` bytes and `per_class` buffers per class of
 *  free buffers (0 and 0: a pool that keeps nothing). NULL when out of
 *  memory. Free it with ifd_bufpool_free once no buffer of it is in use. */
ifd_bufpool_t *ifd_bufpool_new(size_t cap, unsigned per_class);

/** Unmaps every free buffer and frees `p` (NULL: nothing). Every buffer
 *  taken from it must have been given back. */
void ifd_bufpool_free(ifd_bufpool_t *p);

/** The process's shared pool (static, with the defaults above; never
 *  freed, never NULL). */
ifd_bufpool_t *ifd_bufpool_shared(void);

/** Sets `p`'s bounds (a smaller cap unmaps free buffers beyond it). */
void ifd_bufpool_set_cap(ifd_bufpool_t *p, size_t cap, unsigned per_class);

/** Returns a buffer of at least `n` bytes (uninitialised; page-aligned when
 *  pooled, malloc's alignment below IFD_BUFPOOL_MIN), or NULL when out of
 * memory. Give it back with ifd_bufpool_put, never free(). Any thread. */
void *ifd_bufpool_get(ifd_bufpool_t *p, size_t n);

/** Gives `buf` (from ifd_bufpool_get or _grow; NULL: nothing) back to its
 *  pool: kept for the next take of its class while the bounds allow, else
 *  unmapped (or freed) now. Any thread. */
void ifd_bufpool_put(void *buf);

/** The usable size of `buf` (at least what was asked for). */
size_t ifd_bufpool_size(const void *buf);

/** realloc for pool buffers: a buffer of at least `n` bytes holding the
 *  first `used` bytes of `buf` (NULL: a new buffer); `buf` itself when it
 *  is big enough. NULL when out of memory: `buf` is left as it was. */
void *ifd_bufpool_grow(ifd_bufpool_t *p, void *buf, size_t used, size_t n);

/** Fills *out with `p`'s counters. */
void ifd_bufpool_get_stats(ifd_bufpool_t *p, ifd_bufpool_stats_t *out);

#endif /* IFD_BASE_BUFPOOL_H */
