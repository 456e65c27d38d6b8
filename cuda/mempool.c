/*
 * cuda/mempool.c - a first-fit allocator over a block of memory it never
 * touches (see cuda/internal.h).
 *
 * The pool is a sorted array of segments covering the block. Pools hold a
 * few dozen live buffers at most (one per output or input copy in flight),
 * so a linear scan under a mutex held for a few hundred nanoseconds beats
 * anything cleverer; no call here blocks on anything but that mutex, so the
 * loop thread may free into a pool.
 */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "cuda/internal.h"

int ifd__mempool_init(ifd__mempool_t *p, void *base, uint64_t size) {
  memset(p, 0, sizeof(*p));
  p->segs = malloc(8 * sizeof(*p->segs));
  if (p->segs == NULL) return IFD_ENOMEM;
  pthread_mutex_init(&p->mu, NULL);
  p->base = base;
  p->size = size;
  p->cap_segs = 8;
  p->n_segs = 1;
  p->segs[0] = (ifd__memseg_t){0, size, 0};
  return 0;
}

void ifd__mempool_fini(ifd__mempool_t *p) {
  if (p->segs == NULL) return;
  free(p->segs);
  p->segs = NULL;
  pthread_mutex_destroy(&p->mu);
}

/* Makes room for one more segment; mu is held. */
static int grow(ifd__mempool_t *p) {
  ifd__memseg_t *ns;
  size_t ncap;
  if (p->n_segs < p->cap_segs) return 0;
  ncap = p->cap_segs * 2;
  ns = realloc(p->segs, ncap * sizeof(*ns));
  if (ns == NULL) return IFD_ENOMEM;
  p->segs = ns;
  p->cap_segs = ncap;
  return 0;
}

void *ifd__mempool_alloc(ifd__mempool_t *p, uint64_t n) {
  void *ptr = NULL;
  size_t i;
  if (n == 0 || n > p->size) return NULL;
  n = (n + IFD__MEMPOOL_ALIGN - 1) & ~(uint64_t)(IFD__MEMPOOL_ALIGN - 1);
  pthread_mutex_lock(&p->mu);
  for (i = 0; i < p->n_segs; i++) {
    ifd__memseg_t *s = &p->segs[i];
    if (s->used || s->len < n) continue;
    if (s->len > n) {
      /* Split: the tail stays free. */
      if (grow(p) < 0) break;
      s = &p->segs[i];
      memmove(&p->segs[i + 2], &p->segs[i + 1],
              (p->n_segs - i - 1) * sizeof(*s));
      p->segs[i + 1] = (ifd__memseg_t){s->off + n, s->len - n, 0};
      p->n_segs++;
      s->len = n;
    }
    s->used = 1;
    p->used += n;
    ptr = p->base + s->off;
    break;
  }
  pthread_mutex_unlock(&p->mu);
  return ptr;
}

int ifd__mempool_owns(const ifd__mempool_t *p, const void *ptr) {
  const char *c = ptr;
  return p->segs != NULL && c >= p->base && c < p->base + p->size;
}

/* Removes segment i (merged into a neighbour); mu is held. */
static void drop_seg(ifd__mempool_t *p, size_t i) {
  memmove(&p->segs[i], &p->segs[i + 1], (p->n_segs - i - 1) * sizeof(*p->segs));
  p->n_segs--;
}

int ifd__mempool_free(ifd__mempool_t *p, void *ptr) {
  uint64_t off;
  size_t lo = 0, hi, i;
  int rc = IFD_EINVAL;
  if (!ifd__mempool_owns(p, ptr)) return IFD_EINVAL;
  off = (uint64_t)((char *)ptr - p->base);
  pthread_mutex_lock(&p->mu);
  /* Binary search for the segment that starts at off. */
  hi = p->n_segs;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (p->segs[mid].off < off)
      lo = mid + 1;
    else
      hi = mid;
  }
  i = lo;
  if (i < p->n_segs && p->segs[i].off == off && p->segs[i].used) {
    p->segs[i].used = 0;
    p->used -= p->segs[i].len;
    /* Merge with a free successor, then with a free predecessor. */
    if (i + 1 < p->n_segs && !p->segs[i + 1].used) {
      p->segs[i].len += p->segs[i + 1].len;
      drop_seg(p, i + 1);
    }
    if (i > 0 && !p->segs[i - 1].used) {
      p->segs[i - 1].len += p->segs[i].len;
      drop_seg(p, i);
    }
    rc = 0;
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

uint64_t ifd__mempool_used(ifd__mempool_t *p) {
  uint64_t u;
  pthread_mutex_lock(&p->mu);
  u = p->used;
  pthread_mutex_unlock(&p->mu);
  return u;
}
