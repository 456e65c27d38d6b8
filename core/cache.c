/*
 * core/cache.c - the response cache: entry format, key hash and compare,
 * the built-in local LRU cache, and the request path (lookup before the
 * scheduler, insert when a miss's FINAL response arrives).
 *
 * An entry (ifd_cache_blob_t) is one buffer, so that a plugin stores it as
 * one TRITONCACHE buffer and gives it back unchanged:
 *
 *   key section:      model name, version; the inputs sorted by name (name,
 *                     datatype, shape, bytes); the parameters sorted by key
 *                     (key, type, value); the requested outputs' names
 *                     sorted
 *   response section: the outputs (name, datatype, shape, bytes), each
 *                     tensor 16-byte aligned so a hit's response reads it in
 *                     place
 *
 * Strings are a u32 length, the bytes and a NUL; every field is 8-byte
 * aligned. One emitter writes the key, measures it, hashes it and compares
 * it against a stored entry, so the four can never disagree.
 */
#include "core/cache.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/check.h"
#include "base/log.h"
#include "core/model.h"
#include "core/runtime.h"
#include "core/server.h"
#include "base/util.h"

/* ---- blobs ------------------------------------------------------------- */

static void blob_drop(ifd_req_attach_t *a) {
  ifd_cache_blob_unref(ifd_container_of(a, ifd_cache_blob_t, keep));
}

ifd_cache_blob_t *ifd_cache_blob_new(uint64_t size) {
  ifd_cache_blob_t *b;
  if (size > SIZE_MAX - sizeof(*b)) return NULL;
  b = aligned_alloc(16, (sizeof(*b) + size + 15) & ~(size_t)15);
  if (b == NULL) return NULL;
  memset(b, 0, sizeof(*b));
  atomic_init(&b->refs, 1);
  b->size = size;
  b->keep.drop = blob_drop;
  return b;
}

void ifd_cache_blob_ref(ifd_cache_blob_t *b) {
  atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
}

void ifd_cache_blob_unref(ifd_cache_blob_t *b) {
  if (b != NULL &&
      atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1)
    free(b);
}

/* ---- the emitter ------------------------------------------------------- */

enum { E_MEASURE, E_WRITE, E_CMP, E_HASH };

typedef struct emit {
  int mode;
  unsigned char *out;       /* E_WRITE: borrowed destination */
  const unsigned char *cmp; /* E_CMP: borrowed entry bytes */
  uint64_t pos, lim;        /* lim: bytes at cmp */
  uint64_t h;               /* E_HASH */
  int differs;              /* E_CMP: a byte differed or ran past lim */
} emit_t;

#define HASH_MUL 0x9E3779B97F4A7C15ull

static uint64_t mix(uint64_t h, uint64_t w) {
  h ^= w;
  h *= HASH_MUL;
  return h ^ (h >> 29);
}

static uint64_t hash_bytes(uint64_t h, const unsigned char *p, uint64_t n) {
  uint64_t w, len = n;
  for (; n >= 8; p += 8, n -= 8) {
    memcpy(&w, p, 8);
    h = mix(h, w);
  }
  if (n > 0) {
    w = 0;
    memcpy(&w, p, n);
    h = mix(h, w);
  }
  return mix(h, len);
}

static void put(emit_t *e, const void *p, uint64_t n) {
  switch (e->mode) {
    case E_WRITE:
      if (n > 0) memcpy(e->out + e->pos, p, n);
      break;
    case E_CMP:
      if (e->differs || e->pos + n > e->lim ||
          (n > 0 && memcmp(e->cmp + e->pos, p, n) != 0))
        e->differs = 1;
      break;
    case E_HASH:
      e->h = hash_bytes(e->h, p, n);
      break;
  }
  e->pos += n;
}

static void pad(emit_t *e, uint64_t align) {
  static const unsigned char zeros[16];
  uint64_t n = (align - (e->pos & (align - 1))) & (align - 1);
  if (e->mode == E_HASH)
    e->pos += n; /* no information in padding */
  else
    put(e, zeros, n);
}

static void put_u32(emit_t *e, uint32_t v) {
  put(e, &v, 4);
}
static void put_u64(emit_t *e, uint64_t v) {
  pad(e, 8);
  put(e, &v, 8);
}
static void put_str(emit_t *e, const char *s) {
  uint32_t n = (uint32_t)strlen(s);
  pad(e, 8);
  put_u32(e, n);
  put(e, s, (uint64_t)n + 1);
}

/* The entry after `prev` in name order (NULL: the first); the arrays are
 * small, so a selection per step beats sorting a copy. */
#define NEXT_BY_NAME(arr, n, field, prev, out)                               \
  do {                                                                       \
    uint32_t i_;                                                             \
    (out) = NULL;                                                            \
    for (i_ = 0; i_ < (n); i_++) {                                           \
      const char *k_ = (arr)[i_].field;                                      \
      if ((prev) != NULL && strcmp(k_, (prev)->field) <= 0) continue;        \
      if ((out) == NULL || strcmp(k_, (out)->field) < 0) (out) = &(arr)[i_]; \
    }                                                                        \
  } while (0)

static void emit_key(emit_t *e, const ifd_request_t *req) {
  const ifd_input_t *in = NULL, *in_prev = NULL;
  const ifd_param_t *p = NULL, *p_prev = NULL;
  const ifd_output_req_t *o = NULL, *o_prev = NULL;
  uint32_t i, k;

  put_str(e, req->model->name);
  put_u64(e, (uint64_t)req->model->version);
  put_u64(e, req->n_inputs);
  for (i = 0; i < req->n_inputs; i++) {
    NEXT_BY_NAME(req->inputs, req->n_inputs, name, in_prev, in);
    in_prev = in;
    put_str(e, in->name);
    put_u64(e, ((uint64_t)in->dtype << 32) | in->ndims);
    for (k = 0; k < in->ndims; k++) put_u64(e, (uint64_t)in->shape[k]);
    put_u64(e, in->byte_size);
    if (in->byte_size > 0) put(e, in->data, in->byte_size);
  }
  put_u64(e, req->n_params);
  for (i = 0; i < req->n_params; i++) {
    NEXT_BY_NAME(req->params, req->n_params, key, p_prev, p);
    p_prev = p;
    put_str(e, p->key);
    put_u64(e, (uint64_t)p->type);
    switch (p->type) {
      case IFD_PARAM_STRING:
        put_str(e, p->v.s);
        break;
      case IFD_PARAM_INT:
        put_u64(e, (uint64_t)p->v.i);
        break;
      case IFD_PARAM_BOOL:
        put_u64(e, p->v.b ? 1 : 0);
        break;
      case IFD_PARAM_DOUBLE: {
        uint64_t w;
        memcpy(&w, &p->v.d, 8);
        put_u64(e, w);
        break;
      }
    }
  }
  put_u64(e, req->n_outputs);
  for (i = 0; i < req->n_outputs; i++) {
    NEXT_BY_NAME(req->outputs, req->n_outputs, name, o_prev, o);
    o_prev = o;
    put_str(e, o->name);
  }
  pad(e, 16);
}

static void emit_response(emit_t *e, const ifd_response_t *resp) {
  uint32_t i, k;
  put_u64(e, resp->n_outputs);
  for (i = 0; i < resp->n_outputs; i++) {
    const ifd_output_t *o = &resp->outputs[i];
    put_str(e, o->name);
    put_u64(e, ((uint64_t)o->dtype << 32) | o->ndims);
    for (k = 0; k < o->ndims; k++) put_u64(e, (uint64_t)o->shape[k]);
    put_u64(e, o->byte_size);
    pad(e, 16);
    if (o->byte_size > 0) put(e, o->buffer, o->byte_size);
  }
  pad(e, 16);
}

#define BLOB_MAGIC 0x3165686361636669ull /* "ifcache1" */

uint64_t ifd_cache_key_hash(const ifd_request_t *req) {
  emit_t e = {.mode = E_HASH, .h = BLOB_MAGIC};
  emit_key(&e, req);
  return e.h;
}

ifd_cache_blob_t *ifd_cache_blob_build(const ifd_request_t *req,
                                       const ifd_response_t *resp) {
  emit_t e = {.mode = E_MEASURE};
  ifd_cache_blob_t *b;
  uint64_t key_end;
  uint32_t i;

  for (i = 0; i < resp->n_outputs; i++)
    if (resp->outputs[i].mem_type != IFD_MEM_CPU &&
        resp->outputs[i].mem_type != IFD_MEM_CPU_PINNED)
      return NULL;
  put_u64(&e, BLOB_MAGIC);
  put_u64(&e, 0);
  emit_key(&e, req);
  key_end = e.pos;
  emit_response(&e, resp);
  b = ifd_cache_blob_new(e.pos);
  if (b == NULL) return NULL;
  e = (emit_t){.mode = E_WRITE, .out = b->data};
  put_u64(&e, BLOB_MAGIC);
  put_u64(&e, key_end);
  emit_key(&e, req);
  emit_response(&e, resp);
  b->key_end = key_end;
  return b;
}

/* The offset of the response section, as the entry records it (an entry a
 * plugin gave back is bytes only); 0 when it is out of bounds. */
static uint64_t stored_key_end(const ifd_cache_blob_t *b) {
  uint64_t v;
  if (b->size < 16) return 0;
  memcpy(&v, b->data + 8, 8);
  return v >= 16 && v <= b->size ? v : 0;
}

int ifd_cache_blob_matches(const ifd_cache_blob_t *b,
                           const ifd_request_t *req) {
  emit_t e = {.mode = E_CMP, .cmp = b->data, .lim = b->size};
  uint64_t key_end = stored_key_end(b);
  if (key_end == 0) return 0;
  put_u64(&e, BLOB_MAGIC);
  e.pos += 8;
  emit_key(&e, req);
  return !e.differs && e.pos == key_end;
}

/* Reads of the response section, bounds-checked: an entry from a plugin is
 * whatever the plugin gave back. */
typedef struct rd {
  const unsigned char *p;
  uint64_t pos, lim;
  int bad;
} rd_t;

static void rd_align(rd_t *r, uint64_t a) {
  r->pos = (r->pos + a - 1) & ~(a - 1);
  if (r->pos > r->lim) r->bad = 1;
}
static const void *rd_take(rd_t *r, uint64_t n) {
  const void *at;
  if (r->bad || n > r->lim - r->pos) {
    r->bad = 1;
    return NULL;
  }
  at = r->p + r->pos;
  r->pos += n;
  return at;
}
static uint64_t rd_u64(rd_t *r) {
  uint64_t v = 0;
  const void *at;
  rd_align(r, 8);
  at = rd_take(r, 8);
  if (at != NULL) memcpy(&v, at, 8);
  return v;
}
static const char *rd_str(rd_t *r) {
  uint32_t n = 0;
  const void *at;
  const char *s;
  rd_align(r, 8);
  at = rd_take(r, 4);
  if (at != NULL) memcpy(&n, at, 4);
  s = rd_take(r, (uint64_t)n + 1);
  if (s == NULL || s[n] != '\0') {
    r->bad = 1;
    return NULL;
  }
  return s;
}

int ifd_cache_blob_respond(ifd_cache_blob_t *b, ifd_response_t *resp) {
  rd_t r = {b->data, stored_key_end(b), b->size, 0};
  uint64_t n, i;
  ifd_output_t *outs;

  if (r.pos == 0) goto out_bad;
  n = rd_u64(&r);
  if (r.bad || n > b->size / 16) goto out_bad;
  outs = n > 0 ? ifd_pool_alloc(&resp->pool, n * sizeof(*outs)) : NULL;
  if (n > 0 && outs == NULL) {
    ifd_cache_blob_unref(b);
    return IFD_ENOMEM;
  }
  for (i = 0; i < n; i++) {
    ifd_output_t *o = &outs[i];
    uint64_t dn;
    memset(o, 0, sizeof(*o));
    o->name = rd_str(&r);
    dn = rd_u64(&r);
    o->dtype = (ifd_dtype_t)(dn >> 32);
    o->ndims = (uint32_t)dn;
    if (r.bad || o->ndims > IFD_MAX_DIMS) goto out_bad;
    rd_align(&r, 8);
    o->shape = (int64_t *)(uintptr_t)rd_take(&r, (uint64_t)o->ndims * 8);
    o->byte_size = rd_u64(&r);
    rd_align(&r, 16);
    o->buffer = (void *)(uintptr_t)rd_take(&r, o->byte_size);
    if (r.bad) goto out_bad;
    o->mem_type = IFD_MEM_CPU;
    o->resp = resp;
  }
  resp->outputs = outs;
  resp->n_outputs = resp->cap_outputs = (uint32_t)n;
  resp->keep = &b->keep; /* the caller's reference */
  return 0;

out_bad:
  ifd_cache_blob_unref(b);
  return IFD_EPARSE;
}

/* ---- the local cache --------------------------------------------------- */

typedef struct local {
  uint64_t capacity, bytes, entries, evictions;
  ifd_cache_blob_t **buckets; /* owned: chains of the hash table */
  size_t n_buckets;           /* a power of two */
  ifd_cache_blob_t *head;     /* most recently used; borrowed links */
  ifd_cache_blob_t *tail;     /* least recently used */
} local_t;

static ifd_cache_blob_t **chain_of(local_t *l, uint64_t hash) {
  return &l->buckets[(hash ^ (hash >> 32)) & (l->n_buckets - 1)];
}

static void lru_unlink(local_t *l, ifd_cache_blob_t *b) {
  if (b->lru_prev != NULL)
    b->lru_prev->lru_next = b->lru_next;
  else
    l->head = b->lru_next;
  if (b->lru_next != NULL)
    b->lru_next->lru_prev = b->lru_prev;
  else
    l->tail = b->lru_prev;
  b->lru_prev = b->lru_next = NULL;
}

static void lru_push_head(local_t *l, ifd_cache_blob_t *b) {
  b->lru_prev = NULL;
  b->lru_next = l->head;
  if (l->head != NULL) l->head->lru_prev = b;
  l->head = b;
  if (l->tail == NULL) l->tail = b;
}

/* Takes `b` out of the table and the list and drops the cache's
 * reference (a hit's response may still hold the bytes). */
static void local_remove(local_t *l, ifd_cache_blob_t *b) {
  ifd_cache_blob_t **pp = chain_of(l, b->hash);
  while (*pp != b) pp = &(*pp)->hnext;
  *pp = b->hnext;
  lru_unlink(l, b);
  l->bytes -= b->size;
  l->entries--;
  ifd_cache_blob_unref(b);
}

static int local_lookup(void *self, uint64_t hash, const char *key,
                        ifd_cache_blob_t **out) {
  local_t *l = self;
  ifd_cache_blob_t *b;
  (void)key;
  for (b = *chain_of(l, hash); b != NULL; b = b->hnext)
    if (b->hash == hash) break;
  if (b == NULL) return IFD_ENOTFOUND;
  lru_unlink(l, b);
  lru_push_head(l, b);
  ifd_cache_blob_ref(b);
  *out = b;
  return 0;
}

static void local_grow(local_t *l) {
  size_t nn = l->n_buckets * 2, i;
  ifd_cache_blob_t **nb = calloc(nn, sizeof(*nb));
  if (nb == NULL) return; /* longer chains, still correct */
  for (i = 0; i < l->n_buckets; i++) {
    ifd_cache_blob_t *b = l->buckets[i], *next;
    for (; b != NULL; b = next) {
      ifd_cache_blob_t **pp = &nb[(b->hash ^ (b->hash >> 32)) & (nn - 1)];
      next = b->hnext;
      b->hnext = *pp;
      *pp = b;
    }
  }
  free(l->buckets);
  l->buckets = nb;
  l->n_buckets = nn;
}

static int local_insert(void *self, uint64_t hash, const char *key,
                        ifd_cache_blob_t *blob) {
  local_t *l = self;
  ifd_cache_blob_t *b, **pp;
  (void)key;
  if (blob->size > l->capacity) return IFD_ETOOBIG;
  /* One entry per hash: a request whose key collides with a stored one
   * replaces it (the older one could never be told apart by hash). */
  for (b = *chain_of(l, hash); b != NULL; b = b->hnext)
    if (b->hash == hash) break;
  if (b != NULL) local_remove(l, b);
  while (l->bytes + blob->size > l->capacity && l->tail != NULL) {
    local_remove(l, l->tail);
    l->evictions++;
  }
  if (l->entries >= l->n_buckets) local_grow(l);
  blob->hash = hash;
  ifd_cache_blob_ref(blob);
  pp = chain_of(l, hash);
  blob->hnext = *pp;
  *pp = blob;
  lru_push_head(l, blob);
  l->bytes += blob->size;
  l->entries++;
  return 0;
}

static void local_destroy(void *self) {
  local_t *l = self;
  while (l->head != NULL) local_remove(l, l->head);
  free(l->buckets);
  free(l);
}

int ifd_cache_local_impl(uint64_t capacity, ifd_cache_impl_t *out) {
  local_t *l = calloc(1, sizeof(*l));
  if (l == NULL) return IFD_ENOMEM;
  l->n_buckets = 64;
  l->buckets = calloc(l->n_buckets, sizeof(*l->buckets));
  if (l->buckets == NULL) {
    free(l);
    return IFD_ENOMEM;
  }
  l->capacity = capacity;
  *out = (ifd_cache_impl_t){"local",      0, l, local_lookup, local_insert,
                            local_destroy};
  return 0;
}

/* ---- the server's cache ------------------------------------------------ */

struct ifd_cache {
  ifd_cache_impl_t impl; /* self owned; lookup NULL until a plugin opens */
  char *name;            /* owned */
  char *dir;             /* owned: --cache-directory */
  char *config_json;     /* owned: the settings as a JSON object */
  local_t *local;        /* borrowed: impl.self when it is the local cache */
  uint64_t hits, misses, lookup_ns, insert_ns;
  /* Hits answered in the loop's next idle phase, before it polls (not
   * from inside ifd_request_submit; the protocols' write flush then runs
   * in the same iteration's prepare phase): linked through
   * ifd_request_t.next. */
  ifd_request_t *hits_head; /* borrowed: each holds its backend reference */
  ifd_request_t *hits_tail; /* borrowed: the last (answers go in order) */
  uv_idle_t flush_idle;     /* embedded; initialized by the first hit */
  int idle_inited;
  unsigned jobs;    /* plugin calls on the pool */
  unsigned lookups; /* of which lookups (requests waiting) */
  int freeing;      /* free when the last job ends */
};

static _Atomic(ifd_cache_plugin_open_fn) plugin_opener;

void ifd_cache_set_plugin_opener(ifd_cache_plugin_open_fn fn) {
  atomic_store(&plugin_opener, fn);
}

/* Appends `s` JSON-escaped (control bytes as \u00XX). */
static size_t json_str(char *out, const char *s) {
  size_t n = 0;
  if (out) out[n] = '"';
  n++;
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') {
      if (out) out[n] = '\\', out[n + 1] = (char)ch;
      n += 2;
    } else if (ch < 0x20) {
      if (out) sprintf(out + n, "\\u%04x", ch);
      n += 6;
    } else {
      if (out) out[n] = (char)ch;
      n++;
    }
  }
  if (out) out[n] = '"';
  return n + 1;
}

static char *settings_json(const char *const *keys, const char *const *values,
                           size_t n) {
  size_t len = 3, i, at = 0;
  char *out;
  for (i = 0; i < n; i++)
    len += json_str(NULL, keys[i]) + json_str(NULL, values[i]) + 2;
  out = malloc(len);
  if (out == NULL) return NULL;
  out[at++] = '{';
  for (i = 0; i < n; i++) {
    if (i > 0) out[at++] = ',';
    at += json_str(out + at, keys[i]);
    out[at++] = ':';
    at += json_str(out + at, values[i]);
  }
  out[at++] = '}';
  out[at] = '\0';
  return out;
}

int ifd_cache_new(const char *name, const char *const *keys,
                  const char *const *values, size_t n, const char *dir,
                  ifd_cache_t **out, ifd_errmsg_t *err) {
  ifd_cache_t *c = calloc(1, sizeof(*c));
  size_t i;
  int rc;

  if (c == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  c->name = strdup(name);
  c->dir = strdup(dir != NULL ? dir : "/opt/tritonserver/caches");
  c->config_json = settings_json(keys, values, n);
  if (c->name == NULL || c->dir == NULL || c->config_json == NULL) {
    rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
    goto out_free;
  }
  if (strcmp(name, "local") == 0) {
    const char *size = NULL;
    char *end;
    unsigned long long v;
    for (i = 0; i < n; i++)
      if (strcmp(keys[i], "size") == 0) size = values[i];
    if (size == NULL) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "the local cache needs a size: "
                    "--cache-config=local,size=<bytes>");
      goto out_free;
    }
    errno = 0;
    v = strtoull(size, &end, 10);
    if (*size == '\0' || *size == '-' || *end != '\0' || errno != 0) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "failed to parse the local cache size '%s': expected a "
                    "number of bytes",
                    size);
      goto out_free;
    }
    rc = ifd_cache_local_impl(v, &c->impl);
    if (rc < 0) {
      ifd_errf(err, rc, "out of memory");
      goto out_free;
    }
    c->local = c->impl.self;
  }
  *out = c;
  return 0;

out_free:
  free(c->name);
  free(c->dir);
  free(c->config_json);
  free(c);
  return rc;
}

int ifd_cache_needs_open(const ifd_cache_t *c) {
  return c != NULL && c->impl.lookup == NULL;
}

int ifd_cache_open_plugin(ifd_cache_t *c, ifd_errmsg_t *err) {
  ifd_cache_plugin_open_fn open = atomic_load(&plugin_opener);
  if (open == NULL)
    return ifd_errf(err, IFD_EUNSUPPORTED,
                    "cache plugins cannot be loaded by this program");
  return open(c->dir, c->name, c->config_json, &c->impl, err);
}

static void cache_destroy(ifd_cache_t *c) {
  if (c->impl.destroy != NULL) c->impl.destroy(c->impl.self);
  free(c->name);
  free(c->dir);
  free(c->config_json);
  free(c);
}

static void on_idle_closed(uv_handle_t *h) {
  ifd_cache_t *c = ifd_container_of((uv_idle_t *)h, ifd_cache_t, flush_idle);
  if (c->jobs > 0) {
    c->freeing = 1;
    return;
  }
  cache_destroy(c);
}

void ifd_cache_free(ifd_cache_t *c) {
  if (c == NULL) return;
  if (c->idle_inited) {
    uv_close((uv_handle_t *)&c->flush_idle, on_idle_closed);
    return;
  }
  if (c->jobs > 0) {
    c->freeing = 1;
    return;
  }
  cache_destroy(c);
}

uint64_t ifd_cache_in_flight(const ifd_cache_t *c) {
  return c != NULL ? c->lookups : 0;
}

void ifd_cache_stats(const ifd_cache_t *c, ifd_cache_stats_t *out) {
  memset(out, 0, sizeof(*out));
  out->hits = c->hits;
  out->misses = c->misses;
  out->lookups = c->hits + c->misses;
  out->lookup_ns = c->lookup_ns;
  out->insert_ns = c->insert_ns;
  if (c->local != NULL) {
    out->local = 1;
    out->entries = c->local->entries;
    out->bytes = c->local->bytes;
    out->capacity = c->local->capacity;
    out->evictions = c->local->evictions;
  }
}

int ifd_cache_model_on(const ifd_model_t *m) {
  const ifd_model_config_t *cfg = m->config;
  const ifd_cache_t *c = ifd_server_cache(m->server);
  return c != NULL && cfg != NULL && cfg->response_cache != NULL &&
         cfg->response_cache->enable && !ifd_cache_needs_open(c);
}

/* ---- the request path -------------------------------------------------- */

/* Answers the hits queued since the last pass: outside
 * ifd_request_submit, as a scheduler would, so that no protocol sees its
 * response before submit returned. */
static void flush_hits(uv_idle_t *h) {
  ifd_cache_t *c = ifd_container_of(h, ifd_cache_t, flush_idle);
  ifd_request_t *req = c->hits_head, *next;
  c->hits_head = c->hits_tail = NULL;
  uv_idle_stop(h);
  for (; req != NULL; req = next) {
    next = req->next;
    req->next = NULL;
    ifd_response_send_now(&req->resp_slot, IFD_RESPONSE_FINAL, 0, NULL);
    ifd_request_release_now(req, 1 /* TRITONSERVER_REQUEST_RELEASE_ALL */);
  }
}

/* A lookup ended: counts it and returns the response of a hit (built in
 * the request's slot), or NULL for a miss. Takes over `b`. */
static ifd_response_t *lookup_done(ifd_cache_t *c, ifd_request_t *req,
                                   ifd_cache_blob_t *b) {
  ifd_response_t *resp;
  c->lookup_ns += req->t_cache_end - req->t_cache_start;
  if (b != NULL && !ifd_cache_blob_matches(b, req)) {
    ifd_cache_blob_unref(b);
    b = NULL;
  }
  if (b != NULL) {
    resp = ifd_response_new(req);
    if (resp != NULL && ifd_cache_blob_respond(b, resp) == 0) {
      c->hits++;
      req->cache_state = IFD_CACHE_HIT;
      return resp;
    }
    if (resp == NULL) ifd_cache_blob_unref(b);
    /* The response is given back: the request runs instead. */
    if (resp != NULL) {
      resp->discard = 1;
      ifd_response_free(resp);
      atomic_fetch_sub(&req->open_responses, 1);
    }
  }
  c->misses++;
  req->cache_state = IFD_CACHE_MISS;
  return NULL;
}

/* Plugin calls on the thread pool. */
typedef struct cjob {
  uv_work_t work;         /* embedded */
  ifd_cache_t *c;         /* borrowed: outlives the job (see freeing) */
  ifd_request_t *req;     /* borrowed: lookups; holds its backend ref */
  ifd_cache_blob_t *blob; /* counted: the result, or what to insert */
  uint64_t hash, ns;
  int rc;
  char key[24];
} cjob_t;

static void job_ended(ifd_cache_t *c) {
  if (--c->jobs == 0 && c->freeing) cache_destroy(c);
}

static void lookup_work(uv_work_t *w) {
  cjob_t *j = ifd_container_of(w, cjob_t, work);
  j->req->t_cache_start = uv_hrtime();
  j->rc = j->c->impl.lookup(j->c->impl.self, j->hash, j->key, &j->blob);
  j->req->t_cache_end = uv_hrtime();
  if (j->rc < 0) j->blob = NULL; /* the plugin's errors are logged */
}

static void lookup_after(uv_work_t *w, int status) {
  cjob_t *j = ifd_container_of(w, cjob_t, work);
  ifd_request_t *req = j->req;
  ifd_cache_t *c = j->c;
  ifd_response_t *resp;
  ifd_errmsg_t err;
  int rc;
  (void)status;
  resp = lookup_done(c, req, j->blob);
  free(j);
  c->lookups--;
  job_ended(c);
  if (resp != NULL) {
    ifd_response_send_now(resp, IFD_RESPONSE_FINAL, 0, NULL);
    ifd_request_release_now(req, 1);
    return;
  }
  if (ifd_request_is_cancelled(req)) {
    ifd_request_abort(req, IFD_ECANCELLED, "Request was cancelled");
    return;
  }
  rc = ifd_server_opts(req->server)->ops->submit(req->model, req, &err);
  if (rc < 0) ifd_request_abort(req, rc, err.text);
}

static void insert_work(uv_work_t *w) {
  cjob_t *j = ifd_container_of(w, cjob_t, work);
  uint64_t t0 = uv_hrtime();
  j->rc = j->c->impl.insert(j->c->impl.self, j->hash, j->key, j->blob);
  j->ns = uv_hrtime() - t0;
}

static void insert_after(uv_work_t *w, int status) {
  cjob_t *j = ifd_container_of(w, cjob_t, work);
  ifd_cache_t *c = j->c;
  (void)status;
  c->insert_ns += j->ns;
  if (j->rc < 0 && j->rc != IFD_EEXISTS)
    IFD_ERROR("Failed to insert key [%s] into response cache: %s", j->key,
              ifd_strerror(j->rc));
  ifd_cache_blob_unref(j->blob);
  free(j);
  job_ended(c);
}

static int cacheable(const ifd_request_t *req) {
  uint32_t i;
  if (req->null_req) return 0;
  /* Triton hashes CPU inputs only; a hit copies into CPU regions only. */
  for (i = 0; i < req->n_inputs; i++)
    if (req->inputs[i].mem_type != IFD_MEM_CPU &&
        req->inputs[i].mem_type != IFD_MEM_CPU_PINNED)
      return 0;
  for (i = 0; i < req->n_outputs; i++)
    if (req->outputs[i].shm.ptr != NULL &&
        req->outputs[i].shm.mem_type != IFD_MEM_CPU)
      return 0;
  return 1;
}

/* The submit stage (ifd_req_hooks_t.intercept), for a request in state
 * QUEUED. Returns 1 when the cache took the request (a hit, answered at
 * the end of this loop iteration, or a plugin lookup in flight, after
 * which the request goes on to ops->submit or is answered); 0 when the
 * scheduler should get it now (a miss: req->cache_state says whether its
 * response is to be inserted). */
static int cache_intercept(ifd_request_t *req) {
  ifd_cache_t *c = ifd_server_cache(req->server);
  ifd_cache_blob_t *b = NULL;
  ifd_response_t *resp;

  IFD_ASSERT(req->state == IFD_REQ_QUEUED);
  if (!ifd_cache_model_on(req->model) || !cacheable(req)) return 0;
  req->t_cache_start = uv_hrtime();
  req->cache_hash = ifd_cache_key_hash(req);
  if (c->impl.blocking) {
    cjob_t *j = calloc(1, sizeof(*j));
    if (j == NULL) return 0; /* runs uncached */
    j->c = c;
    j->req = req;
    j->hash = req->cache_hash;
    snprintf(j->key, sizeof(j->key), "%" PRIu64, j->hash);
    if (uv_queue_work(ifd_server_loop(req->server), &j->work, lookup_work,
                      lookup_after) < 0) {
      free(j);
      return 0;
    }
    c->jobs++;
    c->lookups++;
    req->cache_state = IFD_CACHE_PENDING;
    return 1;
  }
  if (c->impl.lookup(c->impl.self, req->cache_hash, NULL, &b) < 0) b = NULL;
  req->t_cache_end = uv_hrtime();
  resp = lookup_done(c, req, b);
  if (resp == NULL) return 0;
  if (!c->idle_inited) {
    uv_idle_init(ifd_server_loop(req->server), &c->flush_idle);
    c->idle_inited = 1;
  }
  req->next = NULL;
  if (c->hits_head == NULL) {
    uv_idle_start(&c->flush_idle, flush_hits);
    c->hits_head = req;
  } else {
    c->hits_tail->next = req;
  }
  c->hits_tail = req;
  return 1;
}

/* The final_response stage: a FINAL response of a MISS request reached
 * the loop; inserts it when it succeeded and counts the miss. */
static void cache_finish(ifd_request_t *req, ifd_response_t *resp) {
  ifd_cache_t *c = ifd_server_cache(req->server);
  ifd_cache_blob_t *b;
  uint64_t t0 = uv_hrtime(), ins = 0;
  int rc;

  req->cache_state = IFD_CACHE_DONE;
  if (resp->error == 0 && !resp->spare && !resp->empty &&
      (b = ifd_cache_blob_build(req, resp)) != NULL) {
    b->hash = req->cache_hash;
    if (c->impl.blocking) {
      cjob_t *j = calloc(1, sizeof(*j));
      if (j != NULL) {
        j->c = c;
        j->blob = b;
        j->hash = b->hash;
        snprintf(j->key, sizeof(j->key), "%" PRIu64, j->hash);
        if (uv_queue_work(ifd_server_loop(req->server), &j->work, insert_work,
                          insert_after) == 0) {
          c->jobs++;
          b = NULL;
        } else {
          free(j);
        }
      }
      ifd_cache_blob_unref(b);
    } else {
      rc = c->impl.insert(c->impl.self, req->cache_hash, NULL, b);
      ifd_cache_blob_unref(b);
      if (rc < 0 && rc != IFD_EEXISTS)
        IFD_ERROR("Failed to insert key [%" PRIu64 "] into response cache: %s",
                  req->cache_hash,
                  rc == IFD_ETOOBIG ? "the entry is larger than the cache"
                                    : ifd_strerror(rc));
      ins = uv_hrtime() - t0;
      c->insert_ns += ins;
    }
  }
  if (req->model != NULL && !req->null_req) {
    req->model->stats.cache_miss.count++;
    req->model->stats.cache_miss.ns +=
        (req->t_cache_end - req->t_cache_start) + ins;
  }
}

void ifd_cache_register_hooks(ifd_req_hooks_t *hooks) {
  hooks->intercept = cache_intercept;
  hooks->final_response = cache_finish;
}
