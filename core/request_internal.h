/*
 * core/request_internal.h - the core-private part of a request: its state,
 * its two references, the accounting of its responses, the response
 * cache's state and the two responses embedded in it. It lies over the
 * request's core_area bytes (core/infer.h), so a front end, which includes
 * only core/infer.h, cannot read it; core/ and, inside the library, sched/
 * and backend_api/ reach it through ifd__req(req).
 */
#ifndef IFD_CORE_REQUEST_INTERNAL_H
#define IFD_CORE_REQUEST_INTERNAL_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/event.h"
#include "core/infer.h"

typedef struct ifd_request_core {
  ifd_request_state_t state; /* loop thread; see ifd_request_set_state */
  int inflight_counted;      /* loop thread: in the runtime's inflight */
  int refs;                  /* loop thread only: protocol ref + backend ref */
  uint32_t release_flags; /* TRITONSERVER_RequestReleaseFlag from the backend */
  int final_delivered; /* loop thread: a FINAL response reached on_response */
  unsigned responses;  /* loop thread: responses delivered so far */
  /* Responses (and response factories) created but not yet delivered or
   * deleted: a request released while some are open is not failed. */
  atomic_int open_responses;
  int release_pending; /* loop thread: released while responses open */
  /* The next response index of TRITONBACKEND_ModelInstanceReport-
   * ResponseStatistics through any of the request's factories (any
   * thread). */
  atomic_uint resp_stat_next;
  int spare_used;         /* loop thread: `spare` was handed out */
  ifd_event_t release_ev; /* pushed by TRITONBACKEND_RequestRelease */
  /* The response cache (core/cache.c): IFD_CACHE_* state, the key's hash
   * and the lookup's span (ns, CLOCK_MONOTONIC; a plugin's lookup writes
   * them on the pool while the request waits). */
  int cache_state;
  uint64_t cache_hash;
  uint64_t t_cache_start, t_cache_end;
  /* Last, and not even zeroed until it is used: the error response
   * ifd_request_fail delivers without allocating, so that a request whose
   * failure comes with memory exhausted is still answered. While it is out
   * it holds a reference on the request (ifd_response_free drops it). */
  ifd_response_t spare;
  /* The first response of a request needs no allocation either: the
   * thread that claims resp_slot_busy (0 -> 1, any thread) builds it in
   * resp_slot; ifd_response_free (loop) hands it back. A request whose
   * references are gone waits for its slot's response to be freed. Not
   * zeroed until it is claimed. */
  atomic_int resp_slot_busy;
  ifd_response_t resp_slot;
} ifd_request_core_t;

_Static_assert(sizeof(ifd_request_core_t) <= IFD_REQUEST_CORE_BYTES,
               "IFD_REQUEST_CORE_BYTES (core/infer.h) is too small");
_Static_assert(alignof(ifd_request_core_t) <= 8,
               "core_area is aligned to 8 bytes");

/** The core-private part of `req`. */
static inline ifd_request_core_t *ifd__req(ifd_request_t *req) {
  return (ifd_request_core_t *)(void *)req->core_area;
}
static inline const ifd_request_core_t *ifd__req_c(const ifd_request_t *req) {
  return (const ifd_request_core_t *)(const void *)req->core_area;
}
/** The request whose core-private part `c` is. */
static inline ifd_request_t *ifd__req_of(ifd_request_core_t *c) {
  return (ifd_request_t *)(void *)((char *)c -
                                   offsetof(ifd_request_t, core_area));
}

#endif
