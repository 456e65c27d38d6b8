/*
 * backend_api/cache/tc_cache.c - Triton cache plugins (TRITONCACHE_*): the
 * server side of the ABI (entries, TRITONCACHE_Copy) and the loader that
 * wraps a libtritoncache_<name>.so as a core cache implementation
 * (ifd_cache_impl_t, core/cache.h).
 *
 * core/cache.c stores one entry as one buffer: on insert the entry holds
 * that buffer (the server's bytes) and TRITONCACHE_Copy copies it into the
 * buffer the plugin set; on lookup the plugin adds its buffers and
 * TRITONCACHE_Copy gathers them into a new counted blob. Every call here
 * runs on a thread-pool thread (the plugin may block); nothing is shared
 * between calls but the plugin's own object.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_api/backend_api.h"
#include "core/cache.h"
#include "base/log.h"
#include "triton/core/tritoncache.h"

typedef struct tc_buf {
  void *base; /* borrowed: the server's or the plugin's bytes */
  size_t size;
} tc_buf_t;

/* TRITONCACHE_CacheEntry. */
typedef struct tc_entry {
  tc_buf_t *bufs; /* owned array */
  size_t n, cap;
} tc_entry_t;

/* TRITONCACHE_Allocator: what TRITONCACHE_Copy does for this call. */
typedef struct tc_alloc {
  int lookup;                  /* 1: gather into *out; 0: copy src in */
  const ifd_cache_blob_t *src; /* insert: borrowed */
  ifd_cache_blob_t **out;      /* lookup: receives a counted blob */
} tc_alloc_t;

static TRITONSERVER_Error *invalid(const char *msg) {
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, msg);
}

TRITONSERVER_Error *TRITONCACHE_ApiVersion(uint32_t *major, uint32_t *minor) {
  if (major == NULL || minor == NULL) return invalid("major or minor is NULL");
  *major = TRITONCACHE_API_VERSION_MAJOR;
  *minor = TRITONCACHE_API_VERSION_MINOR;
  return NULL;
}

TRITONSERVER_Error *TRITONCACHE_CacheEntryBufferCount(
    TRITONCACHE_CacheEntry *entry, size_t *count) {
  if (entry == NULL || count == NULL) return invalid("entry was nullptr");
  *count = ((tc_entry_t *)entry)->n;
  return NULL;
}

static TRITONSERVER_Error *attrs_cpu_size(TRITONSERVER_BufferAttributes *a,
                                          size_t *size) {
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  TRITONSERVER_Error *e = TRITONSERVER_BufferAttributesByteSize(a, size);
  if (e == NULL) e = TRITONSERVER_BufferAttributesMemoryType(a, &mt);
  if (e != NULL) return e;
  if (mt != TRITONSERVER_MEMORY_CPU && mt != TRITONSERVER_MEMORY_CPU_PINNED)
    return invalid("Only buffers in CPU memory are allowed in cache currently");
  return NULL;
}

TRITONSERVER_Error *TRITONCACHE_CacheEntryAddBuffer(
    TRITONCACHE_CacheEntry *entry, void *base,
    TRITONSERVER_BufferAttributes *buffer_attributes) {
  tc_entry_t *e = (tc_entry_t *)entry;
  TRITONSERVER_Error *err;
  size_t size = 0;
  if (e == NULL || base == NULL || buffer_attributes == NULL)
    return invalid("entry, base, or attrs was nullptr");
  if ((err = attrs_cpu_size(buffer_attributes, &size)) != NULL) return err;
  if (size == 0) return invalid("Buffer byte size was zero");
  if (e->n == e->cap) {
    size_t ncap = e->cap ? e->cap * 2 : 4;
    tc_buf_t *nb = realloc(e->bufs, ncap * sizeof(*nb));
    if (nb == NULL)
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                   "out of memory");
    e->bufs = nb;
    e->cap = ncap;
  }
  e->bufs[e->n++] = (tc_buf_t){base, size};
  return NULL;
}

TRITONSERVER_Error *TRITONCACHE_CacheEntryGetBuffer(
    TRITONCACHE_CacheEntry *entry, size_t index, void **base,
    TRITONSERVER_BufferAttributes *buffer_attributes) {
  tc_entry_t *e = (tc_entry_t *)entry;
  TRITONSERVER_Error *err;
  if (e == NULL || base == NULL || buffer_attributes == NULL)
    return invalid("entry, base, or attrs was nullptr");
  if (index >= e->n) return invalid("index was greater than count");
  *base = e->bufs[index].base;
  err = TRITONSERVER_BufferAttributesSetByteSize(buffer_attributes,
                                                 e->bufs[index].size);
  if (err == NULL)
    err = TRITONSERVER_BufferAttributesSetMemoryType(buffer_attributes,
                                                     TRITONSERVER_MEMORY_CPU);
  if (err == NULL)
    err = TRITONSERVER_BufferAttributesSetMemoryTypeId(buffer_attributes, 0);
  return err;
}

TRITONSERVER_Error *TRITONCACHE_CacheEntrySetBuffer(
    TRITONCACHE_CacheEntry *entry, size_t index, void *new_base,
    TRITONSERVER_BufferAttributes *buffer_attributes) {
  tc_entry_t *e = (tc_entry_t *)entry;
  TRITONSERVER_Error *err;
  size_t size;
  if (e == NULL) return invalid("entry was nullptr");
  if (index >= e->n) return invalid("index was greater than count");
  e->bufs[index].base = new_base;
  if (buffer_attributes != NULL) {
    if ((err = attrs_cpu_size(buffer_attributes, &size)) != NULL) return err;
    e->bufs[index].size = size;
  }
  return NULL;
}

TRITONSERVER_Error *TRITONCACHE_Copy(TRITONCACHE_Allocator *allocator,
                                     TRITONCACHE_CacheEntry *entry) {
  tc_alloc_t *a = (tc_alloc_t *)allocator;
  tc_entry_t *e = (tc_entry_t *)entry;
  size_t i, total = 0, at = 0;
  ifd_cache_blob_t *b;
  if (a == NULL || e == NULL) return invalid("allocator or entry was nullptr");
  if (!a->lookup) {
    /* Insert: one buffer, the entry's bytes, into the plugin's buffer. */
    if (e->n != 1 || e->bufs[0].size != a->src->size)
      return TRITONSERVER_ErrorNew(
          TRITONSERVER_ERROR_INTERNAL,
          "Expected size of buffer in cache does not match");
    if (e->bufs[0].base == NULL) return invalid("buffer base was nullptr");
    if (e->bufs[0].base != (void *)a->src->data)
      memcpy(e->bufs[0].base, a->src->data, a->src->size);
    return NULL;
  }
  for (i = 0; i < e->n; i++) total += e->bufs[i].size;
  b = ifd_cache_blob_new(total);
  if (b == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  for (i = 0; i < e->n; at += e->bufs[i].size, i++)
    memcpy(b->data + at, e->bufs[i].base, e->bufs[i].size);
  ifd_cache_blob_unref(*a->out);
  *a->out = b;
  return NULL;
}

/* ---- the loader -------------------------------------------------------- */

typedef TRITONSERVER_Error *(*init_fn)(TRITONCACHE_Cache **, const char *);
typedef TRITONSERVER_Error *(*fini_fn)(TRITONCACHE_Cache *);
typedef TRITONSERVER_Error *(*call_fn)(TRITONCACHE_Cache *, const char *,
                                       TRITONCACHE_CacheEntry *,
                                       TRITONCACHE_Allocator *);

typedef struct plugin {
  char name[64];
  void *dl;                 /* owned: dlopen handle */
  TRITONCACHE_Cache *cache; /* owned by the plugin: Finalize frees it */
  fini_fn fini;
  call_fn lookup, insert;
} plugin_t;

/* Takes the error: its code as IFD_E*, its message logged. */
static int take_error(const plugin_t *p, const char *what,
                      TRITONSERVER_Error *e) {
  TRITONSERVER_Error_Code code = TRITONSERVER_ErrorCode(e);
  int rc = code == TRITONSERVER_ERROR_NOT_FOUND        ? IFD_ENOTFOUND
           : code == TRITONSERVER_ERROR_ALREADY_EXISTS ? IFD_EEXISTS
                                                       : IFD_EINTERNAL;
  if (rc == IFD_EINTERNAL)
    IFD_ERROR("cache '%s': %s failed: %s", p->name, what,
              TRITONSERVER_ErrorMessage(e));
  TRITONSERVER_ErrorDelete(e);
  return rc;
}

static int plugin_lookup(void *self, uint64_t hash, const char *key,
                         ifd_cache_blob_t **out) {
  plugin_t *p = self;
  tc_entry_t e = {NULL, 0, 0};
  tc_alloc_t a = {1, NULL, out};
  TRITONSERVER_Error *err;
  (void)hash;
  *out = NULL;
  err = p->lookup(p->cache, key, (TRITONCACHE_CacheEntry *)&e,
                  (TRITONCACHE_Allocator *)&a);
  /* A plugin that filled the entry without copying: gather it now. */
  if (err == NULL && *out == NULL && e.n > 0)
    err = TRITONCACHE_Copy((TRITONCACHE_Allocator *)&a,
                           (TRITONCACHE_CacheEntry *)&e);
  free(e.bufs);
  if (err != NULL) {
    ifd_cache_blob_unref(*out);
    *out = NULL;
    return take_error(p, "TRITONCACHE_CacheLookup", err);
  }
  return *out != NULL ? 0 : IFD_ENOTFOUND;
}

static int plugin_insert(void *self, uint64_t hash, const char *key,
                         ifd_cache_blob_t *blob) {
  plugin_t *p = self;
  tc_buf_t buf = {blob->data, blob->size};
  tc_entry_t e = {&buf, 1, 1};
  tc_alloc_t a = {0, blob, NULL};
  TRITONSERVER_Error *err;
  (void)hash;
  err = p->insert(p->cache, key, (TRITONCACHE_CacheEntry *)&e,
                  (TRITONCACHE_Allocator *)&a);
  return err != NULL ? take_error(p, "TRITONCACHE_CacheInsert", err) : 0;
}

static void plugin_destroy(void *self) {
  plugin_t *p = self;
  TRITONSERVER_Error *err = p->fini(p->cache);
  if (err != NULL) (void)take_error(p, "TRITONCACHE_CacheFinalize", err);
  dlclose(p->dl);
  free(p);
}

int ifd_tc_cache_open(const char *dir, const char *name,
                      const char *config_json, ifd_cache_impl_t *out,
                      ifd_errmsg_t *err) {
  static const char *const fns[] = {
      "TRITONCACHE_CacheInitialize", "TRITONCACHE_CacheFinalize",
      "TRITONCACHE_CacheLookup", "TRITONCACHE_CacheInsert"};
  void *sym[4];
  char path[4096];
  plugin_t *p;
  TRITONSERVER_Error *e;
  int rc, i;

  if (snprintf(path, sizeof(path), "%s/%s/libtritoncache_%s.so", dir, name,
               name) >= (int)sizeof(path) ||
      access(path, F_OK) != 0)
    return ifd_errf(err, IFD_EINVAL,
                    "unable to find 'libtritoncache_%s.so' for cache. "
                    "Searched: %s",
                    name, dir);
  p = calloc(1, sizeof(*p));
  if (p == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  snprintf(p->name, sizeof(p->name), "%s", name);
  IFD_INFO(
      "Creating TritonCache with name: '%s', libpath: '%s', "
      "cache_config: '%s'",
      name, path, config_json);
  p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (p->dl == NULL) {
    rc = ifd_errf(err, IFD_EINVAL, "unable to load cache library: %s",
                  dlerror());
    goto out_free;
  }
  for (i = 0; i < 4; i++) {
    sym[i] = dlsym(p->dl, fns[i]);
    if (sym[i] == NULL) {
      rc = ifd_errf(err, IFD_ENOTFOUND,
                    "unable to find required entrypoint '%s' in cache "
                    "library '%s'",
                    fns[i], path);
      goto out_close;
    }
  }
  p->fini = (fini_fn)sym[1];
  p->lookup = (call_fn)sym[2];
  p->insert = (call_fn)sym[3];
  e = ((init_fn)sym[0])(&p->cache, config_json);
  if (e != NULL) {
    rc = ifd_errf(err, IFD_EINVAL, "Failed to initialize cache '%s': %s", name,
                  TRITONSERVER_ErrorMessage(e));
    TRITONSERVER_ErrorDelete(e);
    goto out_close;
  }
  if (p->cache == NULL) {
    rc = ifd_errf(err, IFD_EINTERNAL,
                  "Failed to initialize cache implementation");
    goto out_close;
  }
  *out = (ifd_cache_impl_t){p->name,       1, p, plugin_lookup, plugin_insert,
                            plugin_destroy};
  return 0;

out_close:
  dlclose(p->dl);
out_free:
  free(p);
  return rc;
}
