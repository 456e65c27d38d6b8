/*
 * base/strmap.c - linear-probing hash map keyed by byte strings (FNV-1a).
 * Removal shifts the entries that follow back (no tombstones), so a lookup
 * stops at the first empty slot whatever was removed before.
 */
#include "base/strmap.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"

static uint64_t fnv1a(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  size_t i;
  for (i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ull;
  }
  return h;
}

void ifd_strmap_init(ifd_strmap_t *m) {
  m->slots = NULL;
  m->cap = 0;
  m->count = 0;
}

void ifd_strmap_free(ifd_strmap_t *m) {
  free(m->slots);
  ifd_strmap_init(m);
}

static ifd_strmap_slot_t *find(const ifd_strmap_t *m, const char *key,
                               size_t len, uint64_t h) {
  size_t i = (size_t)h & (m->cap - 1);
  for (;;) {
    ifd_strmap_slot_t *s = &m->slots[i];
    if (s->key == NULL ||
        (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0))
      return s;
    i = (i + 1) & (m->cap - 1);
  }
}

static int grow(ifd_strmap_t *m) {
  size_t ncap = m->cap ? m->cap * 2 : 16, i;
  ifd_strmap_t n = {calloc(ncap, sizeof(ifd_strmap_slot_t)), ncap, 0};
  if (n.slots == NULL) return IFD_ENOMEM;
  for (i = 0; i < m->cap; i++)
    if (m->slots[i].key != NULL)
      *find(&n, m->slots[i].key, m->slots[i].len, m->slots[i].hash) =
          m->slots[i];
  n.count = m->count;
  free(m->slots);
  *m = n;
  return 0;
}

int ifd_strmap_put(ifd_strmap_t *m, const char *key, size_t len, void *value) {
  uint64_t h = fnv1a(key, len);
  ifd_strmap_slot_t *s;
  /* Keep the load factor under 1/2 so probes stay short. */
  if ((m->count + 1) * 2 > m->cap && grow(m) < 0) return IFD_ENOMEM;
  s = find(m, key, len, h);
  if (s->key == NULL) {
    s->key = key;
    s->len = len;
    s->hash = h;
    m->count++;
  }
  s->value = value;
  return 0;
}

void *ifd_strmap_get(const ifd_strmap_t *m, const char *key, size_t len) {
  if (m->cap == 0) return NULL;
  return find(m, key, len, fnv1a(key, len))->value;
}

void *ifd_strmap_del(ifd_strmap_t *m, const char *key, size_t len) {
  ifd_strmap_slot_t *hole;
  size_t i, j, mask = m->cap - 1;
  void *value;

  if (m->cap == 0) return NULL;
  hole = find(m, key, len, fnv1a(key, len));
  if (hole->key == NULL) return NULL;
  value = hole->value;
  m->count--;
  /* Move back every entry of the probe run that follows the hole and
   * whose home slot does not lie cyclically in (hole, its slot]: such an
   * entry would be cut off from its home by the empty slot. */
  i = (size_t)(hole - m->slots);
  for (j = (i + 1) & mask; m->slots[j].key != NULL; j = (j + 1) & mask) {
    size_t home = (size_t)m->slots[j].hash & mask;
    if (((j - home) & mask) < ((j - i) & mask)) continue;
    m->slots[i] = m->slots[j];
    i = j;
  }
  memset(&m->slots[i], 0, sizeof(m->slots[i]));
  return value;
}
