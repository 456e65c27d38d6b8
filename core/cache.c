/*
 * core/cache.c - the response cache: the built-in local LRU cache, the
 * server's cache (the local one or a plugin), and its stages of the request
 * path (lookup before the scheduler, insert when a miss's FINAL response
 * arrives). The entry format is in core/cache_entry.c.
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
#include "core/request_internal.h"

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

int ifd_cache_open_plugin(ifd_cache_t *c, ifd_cache_plugin_open_fn open,
                          ifd_errmsg_t *err) {
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
    ifd_response_send_now(&ifd__req(req)->resp_slot, IFD_RESPONSE_FINAL, 0,
                          NULL);
    ifd_request_release_now(req, 1 /* TRITONSERVER_REQUEST_RELEASE_ALL */);
  }
}

/* A lookup ended: counts it and returns the response of a hit (built in
 * the request's slot), or NULL for a miss. Takes over `b`. */
static ifd_response_t *lookup_done(ifd_cache_t *c, ifd_request_t *req,
                                   ifd_cache_blob_t *b) {
  ifd_response_t *resp;
  c->lookup_ns += ifd__req(req)->t_cache_end - ifd__req(req)->t_cache_start;
  if (b != NULL && !ifd_cache_blob_matches(b, req)) {
    ifd_cache_blob_unref(b);
    b = NULL;
  }
  if (b != NULL) {
    resp = ifd_response_new(req);
    if (resp != NULL && ifd_cache_blob_respond(b, resp) == 0) {
      c->hits++;
      ifd__req(req)->cache_state = IFD_CACHE_HIT;
      return resp;
    }
    if (resp == NULL) ifd_cache_blob_unref(b);
    /* The response is given back: the request runs instead. */
    if (resp != NULL) {
      resp->discard = 1;
      ifd_response_free(resp);
      atomic_fetch_sub(&ifd__req(req)->open_responses, 1);
    }
  }
  c->misses++;
  ifd__req(req)->cache_state = IFD_CACHE_MISS;
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
  ifd__req(j->req)->t_cache_start = uv_hrtime();
  j->rc = j->c->impl.lookup(j->c->impl.self, j->hash, j->key, &j->blob);
  ifd__req(j->req)->t_cache_end = uv_hrtime();
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
 * scheduler should get it now (a miss: ifd__req(req)->cache_state says whether
 * its response is to be inserted). */
static int cache_intercept(ifd_request_t *req) {
  ifd_cache_t *c = ifd_server_cache(req->server);
  ifd_cache_blob_t *b = NULL;
  ifd_response_t *resp;

  IFD_ASSERT(ifd__req(req)->state == IFD_REQ_QUEUED);
  if (!ifd_cache_model_on(req->model) || !cacheable(req)) return 0;
  ifd__req(req)->t_cache_start = uv_hrtime();
  ifd__req(req)->cache_hash = ifd_cache_key_hash(req);
  if (c->impl.blocking) {
    cjob_t *j = calloc(1, sizeof(*j));
    if (j == NULL) return 0; /* runs uncached */
    j->c = c;
    j->req = req;
    j->hash = ifd__req(req)->cache_hash;
    snprintf(j->key, sizeof(j->key), "%" PRIu64, j->hash);
    if (uv_queue_work(ifd_server_loop(req->server), &j->work, lookup_work,
                      lookup_after) < 0) {
      free(j);
      return 0;
    }
    c->jobs++;
    c->lookups++;
    ifd__req(req)->cache_state = IFD_CACHE_PENDING;
    return 1;
  }
  if (c->impl.lookup(c->impl.self, ifd__req(req)->cache_hash, NULL, &b) < 0)
    b = NULL;
  ifd__req(req)->t_cache_end = uv_hrtime();
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

  ifd__req(req)->cache_state = IFD_CACHE_DONE;
  if (resp->error == 0 && !resp->spare && !resp->empty &&
      (b = ifd_cache_blob_build(req, resp)) != NULL) {
    b->hash = ifd__req(req)->cache_hash;
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
      rc = c->impl.insert(c->impl.self, ifd__req(req)->cache_hash, NULL, b);
      ifd_cache_blob_unref(b);
      if (rc < 0 && rc != IFD_EEXISTS)
        IFD_ERROR("Failed to insert key [%" PRIu64 "] into response cache: %s",
                  ifd__req(req)->cache_hash,
                  rc == IFD_ETOOBIG ? "the entry is larger than the cache"
                                    : ifd_strerror(rc));
      ins = uv_hrtime() - t0;
      c->insert_ns += ins;
    }
  }
  if (req->model != NULL && !req->null_req) {
    req->model->stats.cache_miss.count++;
    req->model->stats.cache_miss.ns +=
        (ifd__req(req)->t_cache_end - ifd__req(req)->t_cache_start) + ins;
  }
}

void ifd_cache_register_hooks(ifd_req_hooks_t *hooks) {
  hooks->intercept = cache_intercept;
  hooks->final_response = cache_finish;
}
