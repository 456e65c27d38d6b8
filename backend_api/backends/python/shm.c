/*
 * backend_api/backends/python/shm.c - the DOWN segment's allocator.
 *
 * One block per request (its inputs), first fit over a free list sorted by
 * offset and coalesced on free. The memfd grows with ftruncate when no free
 * range fits, doubling (at least 1 MiB, at most the limit), so a steady
 * load settles on a segment of its working size. The stub frees blocks
 * with FREE; a block's generation lets every block of a dead stub go at
 * once. Which blocks are in use is kept here, never in the segment, which
 * the stub can write. Used by the instance thread (alloc) and the reader
 * (free), hence the mutex.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define GROW_MIN ((uint64_t)1 << 20)

void ifd__py_down_init(ifd__py_down_t *d, int fd, uint64_t limit) {
  memset(d, 0, sizeof(*d));
  pthread_mutex_init(&d->mu, NULL);
  d->fd = fd;
  d->limit = limit;
}

void ifd__py_down_destroy(ifd__py_down_t *d) {
  free(d->free_r);
  free(d->used);
  pthread_mutex_destroy(&d->mu);
  d->free_r = d->used = NULL;
  d->n_free = d->n_used = 0;
}

static int reserve(ifd__py_range_t **a, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap * 2 : 16;
  while (c < need) c *= 2;
  ifd__py_range_t *p = realloc(*a, c * sizeof(**a));
  if (p == NULL) return -ENOMEM;
  *a = p;
  *cap = c;
  return 0;
}

/* Returns [off, off+size) to the free list, merging with its neighbours. */
static int give_back(ifd__py_down_t *d, uint64_t off, uint64_t size) {
  size_t i = 0;
  while (i < d->n_free && d->free_r[i].off < off) i++;
  bool left = i > 0 && d->free_r[i - 1].off + d->free_r[i - 1].size == off;
  bool right = i < d->n_free && off + size == d->free_r[i].off;
  if (left && right) {
    d->free_r[i - 1].size += size + d->free_r[i].size;
    memmove(&d->free_r[i], &d->free_r[i + 1],
            (d->n_free - i - 1) * sizeof(d->free_r[0]));
    d->n_free--;
  } else if (left) {
    d->free_r[i - 1].size += size;
  } else if (right) {
    d->free_r[i].off = off;
    d->free_r[i].size += size;
  } else {
    if (reserve(&d->free_r, &d->cap_free, d->n_free + 1) != 0) return -ENOMEM;
    memmove(&d->free_r[i + 1], &d->free_r[i],
            (d->n_free - i) * sizeof(d->free_r[0]));
    d->free_r[i].off = off;
    d->free_r[i].size = size;
    d->free_r[i].gen = 0;
    d->n_free++;
  }
  return 0;
}

/* Grows the file so that a block of `size` fits at its end. */
static int grow(ifd__py_down_t *d, uint64_t size) {
  /* The free range touching the end (if any) is part of the new block. */
  uint64_t tail = 0;
  if (d->n_free > 0) {
    ifd__py_range_t *last = &d->free_r[d->n_free - 1];
    if (last->off + last->size == d->size) tail = last->size;
  }
  uint64_t need = d->size - tail + size;
  if (need > d->limit || need < size) return -ENOSPC;
  uint64_t n = d->size * 2 > need ? d->size * 2 : need;
  if (n < GROW_MIN) n = GROW_MIN;
  n = (n + GROW_MIN - 1) & ~(GROW_MIN - 1);
  if (n > d->limit) n = d->limit;
  if (ftruncate(d->fd, (off_t)n) != 0) return -errno;
  int rc = give_back(d, d->size, n - d->size);
  if (rc != 0) return rc; /* the bytes stay unused: harmless */
  d->size = n;
  return 0;
}

int ifd__py_down_alloc(ifd__py_down_t *d, uint64_t size, uint32_t gen,
                       uint64_t *off) {
  int rc = 0;
  if (size > d->limit) return -ENOSPC;
  size = (size + IFD_PY_DOWN_ALIGN - 1) & ~(uint64_t)(IFD_PY_DOWN_ALIGN - 1);
  if (size == 0) size = IFD_PY_DOWN_ALIGN;
  pthread_mutex_lock(&d->mu);
  if (reserve(&d->used, &d->cap_used, d->n_used + 1) != 0) {
    rc = -ENOMEM;
    goto out;
  }
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < d->n_free; i++) {
      ifd__py_range_t *f = &d->free_r[i];
      if (f->size < size) continue;
      *off = f->off;
      f->off += size;
      f->size -= size;
      if (f->size == 0) {
        memmove(f, f + 1, (d->n_free - i - 1) * sizeof(*f));
        d->n_free--;
      }
      d->used[d->n_used].off = *off;
      d->used[d->n_used].size = size;
      d->used[d->n_used].gen = gen;
      d->n_used++;
      goto out;
    }
    if (pass == 0 && (rc = grow(d, size)) != 0) goto out;
  }
  rc = -ENOSPC; /* not reached: growth makes room */
out:
  pthread_mutex_unlock(&d->mu);
  return rc;
}

int ifd__py_down_free(ifd__py_down_t *d, uint64_t off) {
  int rc = -ENOENT;
  pthread_mutex_lock(&d->mu);
  for (size_t i = 0; i < d->n_used; i++) {
    if (d->used[i].off != off) continue;
    rc = give_back(d, off, d->used[i].size);
    if (rc == 0) d->used[i] = d->used[--d->n_used];
    break;
  }
  pthread_mutex_unlock(&d->mu);
  return rc;
}

void ifd__py_down_free_gen(ifd__py_down_t *d, uint32_t gen) {
  pthread_mutex_lock(&d->mu);
  for (size_t i = 0; i < d->n_used;) {
    if (d->used[i].gen == gen &&
        give_back(d, d->used[i].off, d->used[i].size) == 0)
      d->used[i] = d->used[--d->n_used];
    else
      i++;
  }
  pthread_mutex_unlock(&d->mu);
}
