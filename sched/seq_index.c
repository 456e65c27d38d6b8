/*
 * sched/seq_index.c - the sequence batcher's live sequences by correlation
 * ID (a chained hash table that doubles when full) and their idle deadlines
 * (a binary min-heap; each sequence knows its position, so it leaves in
 * O(log n)). See sched/seq_internal.h.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/seq_internal.h"

/* ---- sequences by ID ------------------------------------------------------
 */

static uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

uint64_t ifd__seq_hash(uint64_t id, const char *sid) {
  uint64_t h = 0xcbf29ce484222325ull;
  if (sid == NULL) return mix64(id);
  for (; *sid != '\0'; sid++) h = (h ^ (unsigned char)*sid) * 0x100000001b3ull;
  return mix64(h);
}

static int same_id(const seq_t *q, uint64_t id, const char *sid) {
  if (sid == NULL) return q->sid == NULL && q->id == id;
  return q->sid != NULL && strcmp(q->sid, sid) == 0;
}

seq_t *ifd__seq_find(sb_t *b, uint64_t id, const char *sid, uint64_t hash) {
  seq_t *q;
  for (q = b->table[hash & b->table_mask]; q != NULL; q = q->hnext)
    if (q->hash == hash && same_id(q, id, sid)) return q;
  return NULL;
}

/* Doubles the buckets when the table is full; on ENOMEM it stays as it is
 * (chains grow longer, nothing breaks). */
static void table_grow(sb_t *b) {
  uint64_t n = (b->table_mask + 1) * 2, i;
  seq_t **t = calloc(n, sizeof(*t));
  if (t == NULL) return;
  for (i = 0; i <= b->table_mask; i++) {
    seq_t *q = b->table[i], *next;
    for (; q != NULL; q = next) {
      next = q->hnext;
      q->hnext = t[q->hash & (n - 1)];
      t[q->hash & (n - 1)] = q;
    }
  }
  free(b->table);
  b->table = t;
  b->table_mask = n - 1;
}

void ifd__seq_table_add(sb_t *b, seq_t *q) {
  if (b->n_table > b->table_mask) table_grow(b);
  q->hnext = b->table[q->hash & b->table_mask];
  b->table[q->hash & b->table_mask] = q;
  q->in_table = 1;
  b->n_table++;
}

void ifd__seq_table_del(sb_t *b, seq_t *q) {
  seq_t **pp = &b->table[q->hash & b->table_mask];
  if (!q->in_table) return;
  while (*pp != q) pp = &(*pp)->hnext;
  *pp = q->hnext;
  q->hnext = NULL;
  q->in_table = 0;
  b->n_table--;
}

/* ---- the idle heap ---------------------------------------------------------
 */

static void heap_set(sb_t *b, uint32_t i, seq_t *q) {
  b->heap[i] = q;
  q->heap_ix = i + 1;
}

static void heap_up(sb_t *b, uint32_t i) {
  seq_t *q = b->heap[i];
  while (i > 0) {
    uint32_t p = (i - 1) / 2;
    if (b->heap[p]->deadline <= q->deadline) break;
    heap_set(b, i, b->heap[p]);
    i = p;
  }
  heap_set(b, i, q);
}

static void heap_down(sb_t *b, uint32_t i) {
  seq_t *q = b->heap[i];
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= b->heap_n) break;
    if (c + 1 < b->heap_n && b->heap[c + 1]->deadline < b->heap[c]->deadline)
      c++;
    if (q->deadline <= b->heap[c]->deadline) break;
    heap_set(b, i, b->heap[c]);
    i = c;
  }
  heap_set(b, i, q);
}

int ifd__seq_heap_push(sb_t *b, seq_t *q) {
  if (b->heap_n == b->heap_cap) {
    uint32_t ncap = b->heap_cap ? b->heap_cap * 2 : 64;
    seq_t **nh = realloc(b->heap, ncap * sizeof(*nh));
    if (nh == NULL) return IFD_ENOMEM;
    b->heap = nh;
    b->heap_cap = ncap;
  }
  b->heap[b->heap_n++] = q;
  heap_up(b, b->heap_n - 1);
  return 0;
}

void ifd__seq_heap_remove(sb_t *b, seq_t *q) {
  uint32_t i = q->heap_ix - 1;
  seq_t *last;
  if (q->heap_ix == 0) return;
  q->heap_ix = 0;
  last = b->heap[--b->heap_n];
  if (i == b->heap_n) return;
  b->heap[i] = last;
  last->heap_ix = i + 1;
  heap_up(b, i);
  heap_down(b, last->heap_ix - 1);
}

void ifd__seq_heap_head_moved(sb_t *b) {
  if (b->heap_n > 0) heap_down(b, 0);
}
