/*
 * base/pool.h - a per-request memory pool (bump allocator over chunks).
 *
 * Everything a request needs for its own life (names, shapes, parameters,
 * decoded JSON tensors) comes from its pool and is released in one call.
 * Single-threaded: a pool is touched by one thread at a time.
 */
#ifndef IFD_BASE_POOL_H
#define IFD_BASE_POOL_H

#include <stddef.h>

typedef struct ifd_pool_chunk ifd_pool_chunk_t;

typedef struct ifd_pool {
  ifd_pool_chunk_t *chunks; /* owned: singly linked, newest first */
  char *cur;                /* borrowed: next free byte in chunks */
  size_t left;              /* bytes free at cur */
  char first[512]; /* inline first chunk: small requests never malloc */
} ifd_pool_t;

void ifd_pool_init(ifd_pool_t *p);
/** Frees every chunk; the pool may be reused after ifd_pool_init. */
void ifd_pool_destroy(ifd_pool_t *p);
/** Returns `n` bytes aligned to 16, or NULL when malloc fails (sizes a
 *  client controls must be checked by the caller: this never aborts). */
void *ifd_pool_alloc(ifd_pool_t *p, size_t n);
/** Returns zeroed memory, or NULL. Checks n * size for overflow. */
void *ifd_pool_calloc(ifd_pool_t *p, size_t n, size_t size);
/** Copies `n` bytes of `s` and a NUL; NULL on failure. */
char *ifd_pool_strndup(ifd_pool_t *p, const char *s, size_t n);

#endif
