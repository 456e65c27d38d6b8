/*
 * core/runtime.h - the server's runtime context: what the request path and
 * the modules beside it (response cache, tracing, metrics, shared memory)
 * read from the server, and the hooks they attach to the request path.
 *
 * The context is embedded first in the server object (core/server_internal.h
 * keeps the rest: the registry, the options' owned copies, the shutdown), so
 * that ifd_runtime(s) is a cast, and the accessors of core/server.h that only
 * read it (ifd_server_loop, ifd_server_evq, ifd_server_opts, readiness, ...)
 * live in core/runtime.c, below every module that uses them. server.c sits
 * on top: it creates the cache, shared memory, tracing and the rate limiter,
 * stores them here, and has each module register its hooks.
 *
 * Everything here belongs to the loop thread unless said otherwise.
 */
#ifndef IFD_CORE_RUNTIME_H
#define IFD_CORE_RUNTIME_H

#include <stdint.h>
#include <uv.h>

#include "base/event.h"
#include "base/objcache.h"
#include "core/infer.h"
#include "core/server.h"

/**
 * The stages of a request's path where modules above core/infer.c attach:
 * each slot is NULL until a module registers a function there while the
 * server is built (ifd_server_new), and infer.c tests a slot before it calls
 * it (one predicted branch per stage), so infer.c names none of them. Loop
 * thread.
 */
typedef struct ifd_req_hooks {
  /* Submit, once the request holds its model and before it is QUEUED: may
   * start the request's trace (core/trace.c). Called only while
   * `sample_on` is set, which the trace module keeps (some setting can
   * sample): tracing off costs that one test. */
  void (*sample)(ifd_request_t *req);
  int sample_on;
  /* Submit, state QUEUED, before the scheduler: returns 1 when the hook
   * took the request (a response-cache hit answered later, or a lookup in
   * flight that queues or answers it when it ends), 0 when the scheduler
   * gets it now (core/cache.c). */
  int (*intercept)(ifd_request_t *req);
  /* A FINAL response of a request `intercept` passed with cache_state
   * IFD_CACHE_MISS reached the loop, before classification rewrites it:
   * the cache inserts it. */
  void (*final_response)(ifd_request_t *req, ifd_response_t *resp);
  /* A request's first response with a payload reached the loop (the
   * first-response histogram, core/metrics.c). */
  void (*first_response)(ifd_request_t *req);
  /* A traced request (req->trace set): a response reached the loop, the
   * request ended (released or aborted), the request is being freed
   * (core/trace.c). */
  void (*traced_response)(ifd_request_t *req, const ifd_response_t *resp);
  void (*traced_end)(ifd_request_t *req);
  void (*traced_free)(ifd_request_t *req);
} ifd_req_hooks_t;

typedef struct ifd_runtime {
  uv_loop_t *loop;         /* borrowed: outlives the server */
  ifd_server_opts_t opts;  /* strings owned by the server (copied) */
  ifd_evq_t evq;           /* embedded: the completion queue */
  uv_thread_t loop_thread; /* the thread that created the server and runs
                              its loop */
  /* Free request objects for reuse (core/infer.c). */
  ifd_objcache_t req_cache;
  void *host; /* borrowed: the in-process API's object for a server it
                 created (app/embed.c); NULL otherwise */
  /* Readiness. */
  int loading_done;  /* start-up loading ended */
  int shutting_down; /* a drain or unload began */
  int failed;        /* models that failed to load at start-up; -1: the
                        start failed as a whole */
  /* Load shedding: client requests submitted and not yet released (what
   * --max-inflight-requests caps), and requests refused with
   * IFD_EOVERLOADED, by ifd_shed_reason_t. */
  uint64_t inflight;
  uint64_t shed[IFD_SHED_N];
  /* The modules the server made (each owned by the server: server.c
   * creates and frees them; NULL when off). */
  struct ifd_shm *shm;         /* shared-memory regions (core/shm.c) */
  struct ifd_cache *cache;     /* the response cache (core/cache.c) */
  ifd_rl_t *rl;                /* the rate limiter (--rate-limit) */
  struct ifd_trace_mgr *trace; /* tracing (counted: see core/trace.c) */
  ifd_req_hooks_t hooks;       /* the request path's hooks */
} ifd_runtime_t;

/** The runtime context of `s` (embedded first in the server). */
static inline ifd_runtime_t *ifd_runtime(ifd_server_t *s) {
  return (ifd_runtime_t *)(void *)s;
}
static inline const ifd_runtime_t *ifd_runtime_c(const ifd_server_t *s) {
  return (const ifd_runtime_t *)(const void *)s;
}

/**
 * The model version `req` goes to (core/server_query.c): ifd_server_find_-
 * model_in by its namespace, name and version; for a request of a sequence
 * then the retired version of that model that holds its sequence, if one
 * does (a reload keeps a sequence where it began). Returns 0 and a borrowed
 * *out, or the errors of ifd_server_find_model_in. Loop thread.
 */
int ifd__server_resolve(ifd_server_t *s, const ifd_request_t *req,
                        ifd_model_t **out, ifd_errmsg_t *err);

#endif
