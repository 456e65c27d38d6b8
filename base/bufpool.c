/*
 * base/bufpool.c - size-classed pools of big buffers that stay mapped (see
 * bufpool.h).
 *
 * Layout. Every buffer has a 64-byte header just in front of it, so a give
 * finds its pool and class from the pointer alone. A pooled buffer is one
 * anonymous mapping of HEAD_BYTES + its class size; the header sits at the
 * end of the first page, so the buffer itself is page-aligned (the kernel
 * copies a socket read into it a page at a time). A small buffer is malloc'd
 * with the header at its start and freed at its give.
 *
 * Free lists. One LIFO list per class, linked through the headers, under one
 * mutex: the most recently used buffer goes out first, its pages the most
 * likely to be resident and in cache. A give that would take the pool past
 * its cap, or a class past per_class, unmaps instead.
 */
#include "base/bufpool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/check.h"

#define MAGIC 0x6966646275667031ull /* "ifdbufp1" */
#define HDR 64                      /* header bytes in front of a buffer */
#define HEAD_BYTES 4096             /* a mapping's first page: the header */
#define MIN_SHIFT 16                /* IFD_BUFPOOL_MIN = 1 << MIN_SHIFT */
#define MAX_SHIFT 40                /* nothing larger than 1 TiB */
#define NCLASS (2 * (MAX_SHIFT - MIN_SHIFT) + 1)

typedef struct hdr {
  uint64_t magic;
  ifd_bufpool_t *pool; /* borrowed: outlives the buffer */
  size_t size;         /* usable bytes */
  struct hdr *next;    /* guarded by pool->mu: the free list */
  int cls;             /* class index, or -1: malloc'd, never kept */
} hdr_t;

_Static_assert(sizeof(hdr_t) <= HDR, "the header fits in front");

struct ifd_bufpool {
  pthread_mutex_t mu;
  hdr_t *free[NCLASS];    /* guarded by mu: owned free buffers per class */
  unsigned n[NCLASS];     /* guarded by mu */
  size_t cap;             /* guarded by mu */
  unsigned per_class;     /* guarded by mu */
  ifd_bufpool_stats_t st; /* guarded by mu */
};

/* The class of `n` bytes (n >= IFD_BUFPOOL_MIN) and its size in *size:
 * classes go 64K, 96K, 128K, 192K, 256K, ... (2^k and 3 * 2^(k-1)). -1 when
 * n is beyond the largest class. */
static int class_of(size_t n, size_t *size) {
  unsigned k = MIN_SHIFT;
  while (k <= MAX_SHIFT && ((size_t)1 << k) < n) k++;
  if (k > MAX_SHIFT) return -1;
  if (k > MIN_SHIFT && n <= ((size_t)3 << (k - 2))) {
    *size = (size_t)3 << (k - 2);
    return (int)(2 * (k - MIN_SHIFT) - 1);
  }
  *size = (size_t)1 << k;
  return (int)(2 * (k - MIN_SHIFT));
}

static hdr_t *hdr_of(const void *buf) {
  hdr_t *h = (hdr_t *)((char *)buf - HDR);
  IFD_ASSERT(h->magic == MAGIC);
  return h;
}

static void *buf_of(hdr_t *h) {
  return (char *)h + HDR;
}

static void unmap(hdr_t *h) {
  h->magic = 0;
  munmap((char *)h + HDR - HEAD_BYTES, HEAD_BYTES + h->size);
}

ifd_bufpool_t *ifd_bufpool_new(size_t cap, unsigned per_class) {
  ifd_bufpool_t *p = calloc(1, sizeof(*p));
  if (p == NULL) return NULL;
  if (pthread_mutex_init(&p->mu, NULL) != 0) {
    free(p);
    return NULL;
  }
  p->cap = cap;
  p->per_class = per_class;
  return p;
}

/* Unmaps free buffers until the bounds hold. Called with mu held. */
static void trim_locked(ifd_bufpool_t *p) {
  int c;
  for (c = NCLASS - 1; c >= 0; c--) {
    while (p->free[c] != NULL &&
           (p->st.cached_bytes > p->cap || p->n[c] > p->per_class)) {
      hdr_t *h = p->free[c];
      p->free[c] = h->next;
      p->n[c]--;
      p->st.cached--;
      p->st.cached_bytes -= h->size;
      unmap(h);
    }
  }
}

void ifd_bufpool_free(ifd_bufpool_t *p) {
  if (p == NULL) return;
  pthread_mutex_lock(&p->mu);
  p->cap = 0;
  p->per_class = 0;
  trim_locked(p);
  pthread_mutex_unlock(&p->mu);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

/* Static, so that it exists even when memory ran out at its first use. */
static ifd_bufpool_t shared = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .cap = IFD_BUFPOOL_DEFAULT_CAP,
    .per_class = IFD_BUFPOOL_DEFAULT_PER_CLASS,
};

ifd_bufpool_t *ifd_bufpool_shared(void) {
  return &shared;
}

void ifd_bufpool_set_cap(ifd_bufpool_t *p, size_t cap, unsigned per_class) {
  pthread_mutex_lock(&p->mu);
  p->cap = cap;
  p->per_class = per_class;
  trim_locked(p);
  pthread_mutex_unlock(&p->mu);
}

void *ifd_bufpool_get(ifd_bufpool_t *p, size_t n) {
  size_t size;
  int c;
  hdr_t *h;
  char *m;

  if (n < IFD_BUFPOOL_MIN) {
    h = malloc(HDR + (n != 0 ? n : 1));
    if (h == NULL) return NULL;
    h->magic = MAGIC;
    h->pool = p;
    h->size = n;
    h->next = NULL;
    h->cls = -1;
    return buf_of(h);
  }
  c = class_of(n, &size);
  if (c < 0) return NULL;
  pthread_mutex_lock(&p->mu);
  h = p->free[c];
  if (h != NULL) {
    p->free[c] = h->next;
    p->n[c]--;
    p->st.cached--;
    p->st.cached_bytes -= h->size;
    p->st.hits++;
  } else {
    p->st.misses++;
  }
  pthread_mutex_unlock(&p->mu);
  if (h != NULL) {
    h->next = NULL;
    return buf_of(h);
  }
  m = mmap(NULL, HEAD_BYTES + size, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  h = (hdr_t *)(m + HEAD_BYTES - HDR);
  h->magic = MAGIC;
  h->pool = p;
  h->size = size;
  h->next = NULL;
  h->cls = c;
  return buf_of(h);
}

void ifd_bufpool_put(void *buf) {
  hdr_t *h;
  ifd_bufpool_t *p;

  if (buf == NULL) return;
  h = hdr_of(buf);
  if (h->cls < 0) {
    h->magic = 0;
    free(h);
    return;
  }
  p = h->pool;
  pthread_mutex_lock(&p->mu);
  if (p->n[h->cls] < p->per_class && p->st.cached_bytes + h->size <= p->cap) {
    h->next = p->free[h->cls];
    p->free[h->cls] = h;
    p->n[h->cls]++;
    p->st.cached++;
    p->st.cached_bytes += h->size;
    h = NULL;
  } else {
    p->st.unmapped++;
  }
  pthread_mutex_unlock(&p->mu);
  if (h != NULL) unmap(h); /* outside the lock: munmap takes a while */
}

size_t ifd_bufpool_size(const void *buf) {
  return hdr_of(buf)->size;
}

void *ifd_bufpool_grow(ifd_bufpool_t *p, void *buf, size_t used, size_t n) {
  void *nb;
  if (buf != NULL && ifd_bufpool_size(buf) >= n) return buf;
  nb = ifd_bufpool_get(p, n);
  if (nb == NULL) return NULL;
  if (buf != NULL) {
    if (used > 0) memcpy(nb, buf, used);
    ifd_bufpool_put(buf);
  }
  return nb;
}

void ifd_bufpool_get_stats(ifd_bufpool_t *p, ifd_bufpool_stats_t *out) {
  pthread_mutex_lock(&p->mu);
  *out = p->st;
  pthread_mutex_unlock(&p->mu);
}
