/*
 * core/cache.h - Triton's response cache (--cache-config, per-model
 * response_cache { enable: true }).
 *
 * A request of a model with the cache on is looked up before it reaches
 * its scheduler: a hit is answered from the cache without queueing or
 * executing (its response points at the cached bytes, counted, no copy);
 * a miss runs as usual and its successful FINAL response is inserted when
 * it reaches the loop. The key is a 64-bit hash of the model name and
 * version, every input (name, datatype, shape, bytes), the request's
 * parameters and the names of the outputs it asked for; an entry also keeps
 * those key bytes, so a hit is compared in full and a hash collision is a
 * miss, never a wrong answer.
 *
 * Behind one interface (ifd_cache_impl_t) sit the built-in local cache (an
 * LRU within a byte budget, called inline on the loop: it never blocks) and
 * a Triton cache plugin (libtritoncache_<name>.so through TRITONCACHE_*,
 * backend_api/cache/tc_cache.c), whose calls may block and so run on the thread
 * pool while the request waits.
 *
 * Everything here belongs to the loop thread unless said otherwise.
 */
#ifndef IFD_CORE_CACHE_H
#define IFD_CORE_CACHE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "core/infer.h"

typedef struct ifd_cache ifd_cache_t;

/**
 * An entry's bytes: the key section (what the request was) then the
 * response section (its outputs). Reference-counted (any thread); a hit's
 * response holds one through `keep` (ifd_response_t.keep), so the response
 * reads the bytes in place.
 */
typedef struct ifd_cache_blob {
  ifd_req_attach_t keep; /* a hit response's keep: drop unrefs */
  atomic_uint refs;
  uint64_t size;    /* bytes at data */
  uint64_t hash;    /* the key's hash */
  uint64_t key_end; /* offset of the response section in data */
  /* The local cache's links (loop thread; unused elsewhere). */
  struct ifd_cache_blob *lru_prev, *lru_next; /* borrowed: the LRU list */
  struct ifd_cache_blob *hnext;               /* borrowed: hash chain */
  _Alignas(16) unsigned char data[];
} ifd_cache_blob_t;

/** A new blob of `size` bytes (uninitialized) with one reference; NULL on
 *  ENOMEM. Any thread. */
ifd_cache_blob_t *ifd_cache_blob_new(uint64_t size);
void ifd_cache_blob_ref(ifd_cache_blob_t *b);
/** Drops a reference (any thread); the last frees it. NULL is ignored. */
void ifd_cache_blob_unref(ifd_cache_blob_t *b);

/**
 * A cache implementation. `blocking` ones are called on the thread pool
 * (one call at a time per job; the implementation locks what it shares),
 * the others inline on the loop.
 */
typedef struct ifd_cache_impl {
  const char *name; /* static or owned by self */
  int blocking;
  void *self; /* owned: freed by destroy */
  /** Looks up `key` (the hash in decimal; `hash` itself too). 0 and *out
   *  (a counted reference) on a hit, IFD_ENOTFOUND on a miss, another
   *  negative code on an error (a miss for the request). */
  int (*lookup)(void *self, uint64_t hash, const char *key,
                ifd_cache_blob_t **out);
  /** Inserts `blob` (borrowed: the cache takes its own reference or copies
   *  the bytes). 0, IFD_EEXISTS (the key is there), IFD_ETOOBIG (larger than
   *  the whole cache: not inserted) or another negative code. */
  int (*insert)(void *self, uint64_t hash, const char *key,
                ifd_cache_blob_t *blob);
  /** Frees self (the server is being freed; may block briefly). */
  void (*destroy)(void *self);
} ifd_cache_impl_t;

/** The numbers behind the nv_cache_* gauges. Durations in ns. */
typedef struct ifd_cache_stats {
  uint64_t entries, bytes, capacity; /* capacity 0: unknown (a plugin) */
  uint64_t hits, misses, lookups, evictions;
  uint64_t lookup_ns, insert_ns;
  int local; /* the built-in cache: the global gauges are reported */
} ifd_cache_stats_t;

/**
 * Opens a Triton cache plugin: `<dir>/<name>/libtritoncache_<name>.so`,
 * TRITONCACHE_CacheInitialize(config_json). Runs on a thread-pool thread
 * (dlopen). backend_api provides it; it reaches the server through its
 * options (ifd_server_opts_t.cache_open, set by app/runtime.c). Returns 0
 * and *out, or a negative code with `err` filled.
 */
typedef int (*ifd_cache_plugin_open_fn)(const char *dir, const char *name,
                                        const char *config_json,
                                        ifd_cache_impl_t *out,
                                        ifd_errmsg_t *err);

/** The built-in local cache of `capacity` bytes. */
int ifd_cache_local_impl(uint64_t capacity, ifd_cache_impl_t *out);

/**
 * Creates the server's cache from its --cache-config settings: `name`
 * "local" (its "size" setting: the byte budget) is made at once; another
 * name is a plugin, opened later by ifd_cache_open_plugin on the pool.
 * `settings` are "key=value"-like pairs: keys[i] / values[i]. Returns 0
 * and *out, or a negative code with `err` filled (a bad size).
 */
int ifd_cache_new(const char *name, const char *const *keys,
                  const char *const *values, size_t n, const char *dir,
                  ifd_cache_t **out, ifd_errmsg_t *err);
void ifd_cache_free(ifd_cache_t *c);

/** Does `c` still need its plugin opened (ifd_cache_open_plugin)? */
int ifd_cache_needs_open(const ifd_cache_t *c);
/** Opens the plugin with `open` (the server's opts.cache_open; NULL: this
 *  program cannot load plugins, IFD_EUNSUPPORTED). Thread-pool thread. 0,
 *  or a negative code with err. */
int ifd_cache_open_plugin(ifd_cache_t *c, ifd_cache_plugin_open_fn open,
                          ifd_errmsg_t *err);

/** The server's cache, NULL when none is configured (core/runtime.c). */
ifd_cache_t *ifd_server_cache(const ifd_server_t *s);

/** Requests waiting for a plugin lookup (a drain waits for them); 0 for
 *  NULL. */
uint64_t ifd_cache_in_flight(const ifd_cache_t *c);

/** Copies the cache's counters. */
void ifd_cache_stats(const ifd_cache_t *c, ifd_cache_stats_t *out);

/* ---- the request path ------------------------------------------------- */

struct ifd_req_hooks;

/**
 * Attaches the cache to the request path (core/runtime.h): the submit stage
 * looks a request of a model with response_cache on up before its
 * scheduler, and the FINAL response of a miss is inserted when it reaches
 * the loop. Called by ifd_server_new once the server has a cache.
 */
void ifd_cache_register_hooks(struct ifd_req_hooks *hooks);

/** Whether `m` caches: its config enables response_cache and the server
 *  has a cache. */
int ifd_cache_model_on(const ifd_model_t *m);

/* ---- the entry format (also for tests) -------------------------------- */

/** The key hash of `req` (its model must be set). */
uint64_t ifd_cache_key_hash(const ifd_request_t *req);
/** Serializes `req`'s key and `resp`'s outputs into a new blob; NULL on
 *  ENOMEM or when an output is not in CPU memory. */
ifd_cache_blob_t *ifd_cache_blob_build(const ifd_request_t *req,
                                       const ifd_response_t *resp);
/** Does `b` hold exactly `req`'s key (and a well-formed response)? */
int ifd_cache_blob_matches(const ifd_cache_blob_t *b, const ifd_request_t *req);
/** Fills `resp` (no outputs yet) with b's outputs pointing into b; takes
 *  over the caller's reference on b. 0 or IFD_ENOMEM / IFD_PARSE. */
int ifd_cache_blob_respond(ifd_cache_blob_t *b, ifd_response_t *resp);

#endif
