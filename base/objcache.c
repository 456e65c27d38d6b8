/*
 * base/objcache.c - a bounded LIFO cache of free objects (see objcache.h).
 *
 * LIFO so that the object taken next is the one freed last, whose lines are
 * most likely still in the cache of the core.
 */
#include "base/objcache.h"

#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* The link lives in a free object's first word. */
typedef struct free_obj {
  struct free_obj *next;
} free_obj_t;

void ifd_objcache_init(ifd_objcache_t *c, size_t size, unsigned max) {
  c->head = NULL;
  c->size = size < sizeof(free_obj_t) ? sizeof(free_obj_t) : size;
  c->n = 0;
  c->max = max;
}

void *ifd_objcache_get(ifd_objcache_t *c) {
  free_obj_t *o = c->head;
  if (o == NULL) return malloc(c->size);
  UNPOISON(o, c->size);
  c->head = o->next;
  c->n--;
  return o;
}

void ifd_objcache_put(ifd_objcache_t *c, void *p) {
  free_obj_t *o = p;
  if (p == NULL) return;
  if (c->n >= c->max) {
    free(p);
    return;
  }
  o->next = c->head;
  c->head = o;
  c->n++;
  /* The link stays readable: LeakSanitizer does not follow pointers held in
   * poisoned memory, so a poisoned link made every cached object behind the
   * first look leaked (a leak check while objects are cached: libFuzzer's,
   * or at exit). */
  POISON((char *)o + sizeof(free_obj_t), c->size - sizeof(free_obj_t));
}

void ifd_objcache_drain(ifd_objcache_t *c) {
  while (c->head != NULL) {
    free_obj_t *o = c->head;
    UNPOISON(o, c->size);
    c->head = o->next;
    free(o);
  }
  c->n = 0;
}
