/*
 * base/strmap.h - an open-addressing hash map from byte strings to pointers.
 *
 * Used for every by-name lookup on the hot path (models by name). Keys are
 * borrowed: each must outlive its entry (typically it lives in the value).
 * Not thread-safe; the loop thread owns every map.
 */
#ifndef IFD_BASE_STRMAP_H
#define IFD_BASE_STRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct ifd_strmap_slot {
  const char *key; /* borrowed; NULL: empty slot */
  size_t len;
  uint64_t hash;
  void *value; /* borrowed */
} ifd_strmap_slot_t;

typedef struct ifd_strmap {
  ifd_strmap_slot_t *slots; /* owned; capacity is a power of two */
  size_t cap;
  size_t count;
} ifd_strmap_t;

void ifd_strmap_init(ifd_strmap_t *m);
void ifd_strmap_free(ifd_strmap_t *m);
/** Inserts or replaces. Returns 0 or IFD_ENOMEM. */
int ifd_strmap_put(ifd_strmap_t *m, const char *key, size_t len, void *value);
/** Returns the value or NULL. */
void *ifd_strmap_get(const ifd_strmap_t *m, const char *key, size_t len);
/** Removes `key`; returns the value it had, or NULL when absent. Never
 *  allocates; the map's capacity stays. */
void *ifd_strmap_del(ifd_strmap_t *m, const char *key, size_t len);

#endif
