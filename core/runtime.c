/*
 * core/runtime.c - the accessors of core/server.h that only read the
 * server's runtime context (core/runtime.h): its loop, completion queue,
 * options, request cache, shared memory, response cache, rate limiter,
 * readiness and load-shedding counters.
 *
 * They live here, below every module of the request path, so that infer.c,
 * cache.c, shm.c, metrics.c and trace.c read the server without depending on
 * server.c, which creates and frees what they read.
 */
#include "core/runtime.h"

#include "core/cache.h"

uv_loop_t *ifd_server_loop(ifd_server_t *s) {
  return ifd_runtime(s)->loop;
}

ifd_evq_t *ifd_server_evq(ifd_server_t *s) {
  return &ifd_runtime(s)->evq;
}

struct ifd_shm *ifd_server_shm(ifd_server_t *s) {
  return ifd_runtime(s)->shm;
}

ifd_objcache_t *ifd_server_req_cache(ifd_server_t *s) {
  return &ifd_runtime(s)->req_cache;
}

const ifd_server_opts_t *ifd_server_opts(const ifd_server_t *s) {
  return &ifd_runtime_c(s)->opts;
}

ifd_cache_t *ifd_server_cache(const ifd_server_t *s) {
  return ifd_runtime_c(s)->cache;
}

uint64_t ifd_server_shed_count(const ifd_server_t *s, ifd_shed_reason_t why) {
  return why < IFD_SHED_N ? ifd_runtime_c(s)->shed[why] : 0;
}

uint64_t ifd_server_inflight(const ifd_server_t *s) {
  return ifd_runtime_c(s)->inflight;
}

ifd_rl_t *ifd_server_ratelimit(const ifd_server_t *s) {
  return ifd_runtime_c(s)->rl;
}

int ifd_server_on_loop(const ifd_server_t *s) {
  uv_thread_t self = uv_thread_self();
  return uv_thread_equal(&self, &ifd_runtime_c(s)->loop_thread);
}

void ifd_server_set_host(ifd_server_t *s, void *host) {
  ifd_runtime(s)->host = host;
}

void *ifd_server_host(const ifd_server_t *s) {
  return ifd_runtime_c(s)->host;
}

int ifd_server_live(const ifd_server_t *s) {
  return !ifd_runtime_c(s)->shutting_down;
}

int ifd_server_ready(const ifd_server_t *s) {
  const ifd_runtime_t *rt = ifd_runtime_c(s);
  if (rt->shutting_down || !rt->loading_done) return 0;
  return rt->opts.strict_readiness ? rt->failed == 0 : 1;
}
