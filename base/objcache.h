/*
 * base/objcache.h - a bounded cache of free fixed-size objects.
 *
 * Objects that the hot path creates and frees once per request (request
 * objects) go back to a cache instead of to malloc, and the next request
 * takes one from it: a pointer pop instead of malloc's bins. The cache is a
 * LIFO list threaded through the free objects themselves, so it costs no
 * memory of its own, and it holds at most `max` objects: memory beyond that
 * goes back to malloc at once, and ifd_objcache_drain returns the rest.
 *
 * Single-threaded: a cache belongs to one thread (the loop's request cache
 * is touched by the loop thread only). Under AddressSanitizer the objects it
 * holds are poisoned, so a use after "free" is still reported.
 */
#ifndef IFD_BASE_OBJCACHE_H
#define IFD_BASE_OBJCACHE_H

#include <stddef.h>

typedef struct ifd_objcache {
  void *head;   /* owned: free objects, linked through their first word */
  size_t size;  /* bytes of one object (at least a pointer) */
  unsigned n;   /* objects held */
  unsigned max; /* most objects held; 0 caches nothing */
} ifd_objcache_t;

/** Sets up an empty cache of objects of `size` bytes holding at most `max`. */
void ifd_objcache_init(ifd_objcache_t *c, size_t size, unsigned max);

/** Returns an object of the cache's size, uninitialised: a cached one, else
 *  a fresh malloc. NULL when malloc fails. Free it with ifd_objcache_put. */
void *ifd_objcache_get(ifd_objcache_t *c);

/** Takes `p` (from ifd_objcache_get, or malloc'd with the cache's size) back:
 *  it is kept while the cache holds fewer than max objects, else freed. */
void ifd_objcache_put(ifd_objcache_t *c, void *p);

/** Frees every cached object; the cache stays usable. */
void ifd_objcache_drain(ifd_objcache_t *c);

#endif
