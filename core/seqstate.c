/*
 * core/seqstate.c - reference-counted state values and the per-sequence
 * state table (see core/seqstate.h).
 */
#include "core/seqstate.h"

#include <stdlib.h>
#include <string.h>

ifd_blob_t *ifd_blob_new(uint64_t size, int zero) {
  ifd_blob_t *b;
  size_t total;
  if (size > SIZE_MAX - sizeof(*b) - 64) return NULL;
  total = (sizeof(*b) + (size_t)size + 63) & ~(size_t)63;
  b = aligned_alloc(64, total);
  if (b == NULL) return NULL;
  atomic_init(&b->refs, 1);
  b->dtype = IFD_TYPE_INVALID;
  b->ndims = 0;
  b->size = size;
  if (zero) memset(b->data, 0, (size_t)size);
  return b;
}

ifd_blob_t *ifd_blob_ref(ifd_blob_t *b) {
  if (b != NULL) atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
  return b;
}

void ifd_blob_unref(ifd_blob_t *b) {
  if (b != NULL &&
      atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1)
    free(b);
}

ifd_seq_state_t *ifd_seq_state_new(uint32_t n) {
  ifd_seq_state_t *s = calloc(1, sizeof(*s));
  uint32_t i;
  if (s == NULL) return NULL;
  s->cur = calloc(n ? n : 1, sizeof(*s->cur));
  s->next = calloc(n ? n : 1, sizeof(*s->next));
  if (s->cur == NULL || s->next == NULL) {
    free(s->cur);
    free(s->next);
    free(s);
    return NULL;
  }
  for (i = 0; i < n; i++) atomic_init(&s->next[i], NULL);
  atomic_init(&s->refs, 1);
  s->n = n;
  return s;
}

ifd_seq_state_t *ifd_seq_state_ref(ifd_seq_state_t *s) {
  if (s != NULL) atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
  return s;
}

void ifd_seq_state_unref(ifd_seq_state_t *s) {
  uint32_t i;
  if (s == NULL ||
      atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
    return;
  for (i = 0; i < s->n; i++) {
    ifd_blob_unref(s->cur[i]);
    ifd_blob_unref(atomic_load(&s->next[i]));
  }
  free(s->cur);
  free((void *)s->next);
  free(s);
}

void ifd_seq_state_publish(ifd_seq_state_t *s, uint32_t i, ifd_blob_t *b) {
  ifd_blob_unref(
      atomic_exchange_explicit(&s->next[i], b, memory_order_acq_rel));
}

ifd_blob_t *ifd_seq_state_take(ifd_seq_state_t *s, uint32_t i) {
  ifd_blob_t *b =
      atomic_exchange_explicit(&s->next[i], NULL, memory_order_acq_rel);
  if (b != NULL) {
    ifd_blob_unref(s->cur[i]);
    s->cur[i] = b;
  }
  return s->cur[i];
}

void ifd_seq_state_reset(ifd_seq_state_t *s, uint32_t i, ifd_blob_t *init) {
  ifd_blob_unref(
      atomic_exchange_explicit(&s->next[i], NULL, memory_order_acq_rel));
  ifd_blob_unref(s->cur[i]);
  s->cur[i] = ifd_blob_ref(init);
}
