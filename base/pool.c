/*
 * base/pool.c - bump allocation over a list of chunks.
 */
#include "base/pool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct ifd_pool_chunk {
  ifd_pool_chunk_t *next;
  size_t size;
  _Alignas(16) char data[];
};

#define POOL_ALIGN 16
#define POOL_CHUNK 4096

void ifd_pool_init(ifd_pool_t *p) {
  uintptr_t a = (uintptr_t)p->first;
  uintptr_t aligned = (a + POOL_ALIGN - 1) & ~(uintptr_t)(POOL_ALIGN - 1);
  p->chunks = NULL;
  p->cur = p->first + (aligned - a);
  p->left = sizeof(p->first) - (aligned - a);
}

void ifd_pool_destroy(ifd_pool_t *p) {
  ifd_pool_chunk_t *c = p->chunks;
  while (c != NULL) {
    ifd_pool_chunk_t *next = c->next;
    free(c);
    c = next;
  }
  p->chunks = NULL;
  p->left = 0;
  p->cur = NULL;
}

void *ifd_pool_alloc(ifd_pool_t *p, size_t n) {
  size_t need = (n + POOL_ALIGN - 1) & ~(size_t)(POOL_ALIGN - 1);
  ifd_pool_chunk_t *c;
  void *r;

  if (need < n) return NULL; /* overflow */
  if (need <= p->left) {
    r = p->cur;
    p->cur += need;
    p->left -= need;
    return r;
  }
  /* Large allocations get a chunk of their own so the current chunk's
   * remainder stays usable for the small ones that follow. */
  if (need >= POOL_CHUNK / 2) {
    if (need > SIZE_MAX - sizeof(*c)) return NULL;
    c = malloc(sizeof(*c) + need);
    if (c == NULL) return NULL;
    c->size = need;
    c->next = p->chunks;
    p->chunks = c;
    return c->data;
  }
  c = malloc(sizeof(*c) + POOL_CHUNK);
  if (c == NULL) return NULL;
  c->size = POOL_CHUNK;
  c->next = p->chunks;
  p->chunks = c;
  p->cur = c->data + need;
  p->left = POOL_CHUNK - need;
  return c->data;
}

void *ifd_pool_calloc(ifd_pool_t *p, size_t n, size_t size) {
  void *r;
  if (size != 0 && n > SIZE_MAX / size) return NULL;
  r = ifd_pool_alloc(p, n * size);
  if (r != NULL) memset(r, 0, n * size);
  return r;
}

char *ifd_pool_strndup(ifd_pool_t *p, const char *s, size_t n) {
  char *r;
  if (n == SIZE_MAX) return NULL;
  r = ifd_pool_alloc(p, n + 1);
  if (r == NULL) return NULL;
  memcpy(r, s, n);
  r[n] = '\0';
  return r;
}
