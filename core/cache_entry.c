/*
 * core/cache_entry.c - the response cache's entry format: blobs, the key
 * hash and compare, and a hit's response read in place (core/cache.h).
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

#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "core/model.h"

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
