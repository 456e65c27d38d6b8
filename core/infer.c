/*
 * core/infer.c - inference request and response objects.
 *
 * A request carries two references: the protocol's (from ifd_request_new to
 * ifd_request_unref) and, once submitted, the backend's (until the release
 * event reaches the loop). Both are counted on the loop thread only, so the
 * count needs no atomics. Responses are created and filled on any thread but
 * reach the protocol only through the completion queue.
 *
 * The response cache, tracing and the first-response metric attach to this
 * path through the server's hooks (core/runtime.h): this file calls a stage
 * when its slot is set and names none of those modules.
 */
#include "core/infer.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/bufpool.h"
#include "base/check.h"
#include "base/log.h"
#include "base/objcache.h"
#include "base/util.h"
#include "core/classify.h"
#include "core/model.h"
#include "core/runtime.h"
#include "core/server.h"
#include "cuda/cuda_mem.h"
#include "core/request_internal.h"

/* The hooks of the request's server; none for a request made without one
 * (tests, and the server's own requests, which never reach the loop). */
static const ifd_req_hooks_t no_hooks;
static const ifd_req_hooks_t *hooks_of(const ifd_request_t *req) {
  return req->server != NULL ? &ifd_runtime(req->server)->hooks : &no_hooks;
}

/* Request objects go back to their server's cache (loop thread), so the
 * next request reuses one without malloc; a request made without a server
 * (tests) is plain malloc'd. */
static void request_free(ifd_request_t *req) {
  ifd_req_attach_t *a, *next;
  uint32_t i;
  if (req->trace != NULL && ALWAYS(hooks_of(req)->traced_free != NULL))
    hooks_of(req)->traced_free(req);
  for (a = atomic_load(&req->attached); a != NULL; a = next) {
    next = a->next;
    a->drop(a);
  }
  for (i = 0; i < req->n_blobs; i++) ifd_blob_unref(req->blobs[i]);
  ifd_seq_state_unref(req->seq_state);
  if (req->model != NULL) ifd_model_unref(req->model);
  ifd_request_body_free(req);
  ifd_pool_destroy(&req->pool);
  if (req->server != NULL)
    ifd_objcache_put(ifd_server_req_cache(req->server), req);
  else
    free(req);
}

/* The request goes when its last reference does and its embedded response
 * is no longer out (that response is freed on the loop too, so whichever of
 * the two comes last frees it). */
static void request_put(ifd_request_t *req) {
  IFD_ASSERT(ifd__req(req)->refs > 0);
  if (--ifd__req(req)->refs == 0 &&
      atomic_load_explicit(&ifd__req(req)->resp_slot_busy,
                           memory_order_acquire) == 0)
    request_free(req);
}

ifd_request_t *ifd_request_new(ifd_server_t *server) {
  ifd_request_t *req = server != NULL
                           ? ifd_objcache_get(ifd_server_req_cache(server))
                           : malloc(sizeof(*req));
  if (req == NULL) return NULL;
  /* The pool (first, with its inline chunk) is set up by ifd_pool_init, and
   * the spare and the slot response at the end only when they are used. */
  _Static_assert(offsetof(ifd_request_t, pool) == 0, "pool is first");
  memset((char *)req + sizeof(req->pool), 0,
         offsetof(ifd_request_t, core_area) - sizeof(req->pool));
  memset(ifd__req(req), 0, offsetof(ifd_request_core_t, spare));
  atomic_init(&ifd__req(req)->resp_slot_busy, 0);
  ifd_pool_init(&req->pool);
  req->server = server;
  req->model_version = -1;
  req->id = "";
  ifd__req(req)->refs = 1;
  ifd__req(req)->state = IFD_REQ_INIT;
  return req;
}

/* The transitions ifd_request_state_t lists, one bit per target state,
 * checked by IFD_ASSERT (checking builds only). */
#define TO(st) (1u << (st))
static const unsigned legal_next[] = {
    [IFD_REQ_INIT] = TO(IFD_REQ_QUEUED),
    [IFD_REQ_QUEUED] = TO(IFD_REQ_EXECUTING) | TO(IFD_REQ_RELEASED) |
                       TO(IFD_REQ_FAILED_ENQUEUE),
    [IFD_REQ_EXECUTING] = TO(IFD_REQ_RELEASED) | TO(IFD_REQ_QUEUED),
    [IFD_REQ_RELEASED] = 0,
    [IFD_REQ_FAILED_ENQUEUE] = 0,
};

void ifd_request_set_state(ifd_request_t *req, ifd_request_state_t to) {
  IFD_ASSERT((unsigned)ifd__req(req)->state <
             sizeof(legal_next) / sizeof(legal_next[0]));
  IFD_ASSERT(legal_next[ifd__req(req)->state] & TO(to));
  ifd__req(req)->state = to;
  if (ifd__req(req)->inflight_counted &&
      (to == IFD_REQ_RELEASED || to == IFD_REQ_FAILED_ENQUEUE)) {
    ifd__req(req)->inflight_counted = 0;
    IFD_ASSERT(ifd_runtime(req->server)->inflight > 0);
    ifd_runtime(req->server)->inflight--;
  }
}
#undef TO

/* Grows a pool array by one element; arrays are small, so doubling from 4 in
 * the pool wastes little and avoids a realloc per element. */
static void *grow(ifd_pool_t *pool, void *arr, uint32_t n, size_t elem) {
  void *na;
  if (n != 0 && (n & (n - 1)) == 0 && n >= 4) {
    na = ifd_pool_alloc(pool, (size_t)n * 2 * elem);
    if (na == NULL) return NULL;
    memcpy(na, arr, (size_t)n * elem);
    return na;
  }
  if (n == 0) return ifd_pool_alloc(pool, 4 * elem);
  return arr;
}

ifd_input_t *ifd_request_add_input(ifd_request_t *req, const char *name,
                                   size_t name_len, ifd_dtype_t dtype,
                                   const int64_t *shape, uint32_t ndims) {
  ifd_input_t *in;
  char *n = ifd_pool_strndup(&req->pool, name, name_len);
  int64_t *sh =
      ifd_pool_alloc(&req->pool, sizeof(int64_t) * (ndims ? ndims : 1));
  if (n == NULL || sh == NULL || ndims > IFD_MAX_DIMS) return NULL;
  if (ndims > 0) memcpy(sh, shape, sizeof(int64_t) * ndims);
  in = ifd_request_add_input_borrowed(req, n, dtype, sh, ndims);
  return in;
}

int ifd_request_reserve_inputs(ifd_request_t *req, uint32_t extra) {
  uint32_t ncap = req->n_inputs + extra;
  ifd_input_t *arr;
  if (ncap <= req->cap_inputs) return 0;
  arr = ifd_pool_alloc(&req->pool, ncap * sizeof(*arr));
  if (arr == NULL) return IFD_ENOMEM;
  if (req->n_inputs > 0) memcpy(arr, req->inputs, req->n_inputs * sizeof(*arr));
  req->inputs = arr;
  req->cap_inputs = ncap;
  return 0;
}

ifd_input_t *ifd_request_add_input_borrowed(ifd_request_t *req,
                                            const char *name, ifd_dtype_t dtype,
                                            const int64_t *shape,
                                            uint32_t ndims) {
  ifd_input_t *in;
  /* The protocols size req->inputs exactly (cap_inputs 0): the array is
   * copied into a larger one before it grows. */
  if (req->n_inputs >= req->cap_inputs &&
      ifd_request_reserve_inputs(
          req, req->n_inputs < 4 ? 8 - req->n_inputs : req->n_inputs) < 0)
    return NULL;
  in = &req->inputs[req->n_inputs++];
  memset(in, 0, sizeof(*in));
  in->name = name;
  in->shape = (int64_t *)shape; /* never written through: see the contract */
  in->ndims = ndims;
  in->dtype = dtype;
  return in;
}

ifd_output_req_t *ifd_request_add_output(ifd_request_t *req, const char *name,
                                         size_t name_len) {
  ifd_output_req_t *o;
  ifd_output_req_t *arr =
      grow(&req->pool, req->outputs, req->n_outputs, sizeof(*o));
  if (arr == NULL) return NULL;
  req->outputs = arr;
  o = &arr[req->n_outputs];
  memset(o, 0, sizeof(*o));
  o->name = ifd_pool_strndup(&req->pool, name, name_len);
  if (o->name == NULL) return NULL;
  req->n_outputs++;
  return o;
}

ifd_param_t *ifd_request_add_param(ifd_request_t *req, const char *key,
                                   size_t key_len) {
  ifd_param_t *p;
  ifd_param_t *arr = grow(&req->pool, req->params, req->n_params, sizeof(*p));
  if (arr == NULL) return NULL;
  req->params = arr;
  p = &arr[req->n_params];
  memset(p, 0, sizeof(*p));
  p->key = ifd_pool_strndup(&req->pool, key, key_len);
  if (p->key == NULL) return NULL;
  req->n_params++;
  return p;
}

static const struct ifd_model_ops *ops_of(ifd_request_t *req) {
  return ifd_server_opts(req->server)->ops;
}

int ifd_request_submit(ifd_request_t *req, ifd_errmsg_t *err) {
  ifd_runtime_t *rt = ifd_runtime(req->server);
  ifd_model_t *m;
  int rc, counts;
  unsigned cap;

  if (ifd__req(req)->state != IFD_REQ_INIT)
    return ifd_errf(err, IFD_EINTERNAL, "request submitted twice");
  /* A request sent from inside a running execute (BLS) is part of work
   * accepted before the shutdown, which the drain lets finish. */
  if (!ifd_server_ready(req->server) && !ifd_server_live(req->server) &&
      req->caller_chain == NULL)
    return ifd_errf(err, IFD_EUNAVAIL, "server is shutting down");
  /* The in-flight cap sheds a client's request before any work is spent on
   * it; requests that are part of one already in flight (ensemble steps,
   * BLS) are never refused by it, or that one could not finish. */
  counts = req->caller_chain == NULL && !req->ensemble_step;
  cap = ifd_server_opts(req->server)->max_inflight_requests;
  if (counts && cap != 0 && rt->inflight >= cap) {
    rt->shed[IFD_SHED_INFLIGHT_CAP]++;
    return ifd_errf(err, IFD_EOVERLOADED,
                    "the server has %u requests in flight, its limit "
                    "(--max-inflight-requests)",
                    cap);
  }
  rc = ifd__server_resolve(req->server, req, &m, err);
  if (rc < 0) return rc;
  if (req->caller_chain != NULL && ops_of(req)->deadlocks != NULL &&
      ops_of(req)->deadlocks(m, req))
    return ifd_errf(err, IFD_EUNAVAIL,
                    "request to model '%s' refused: it would deadlock, as "
                    "every instance of '%s' waits on a request it sent and "
                    "the call chain leads back to it",
                    m->name, m->name);
  rc = ifd_model_validate_request(m, req, err);
  if (rc < 0) return rc;
  ifd_model_ref(m);
  req->model = m;
  /* Tracing off costs this one test. */
  if (rt->hooks.sample_on) rt->hooks.sample(req);
  req->t_queued = uv_hrtime();
  if (req->t_received == 0) req->t_received = req->t_queued;
  /* The backend's reference: dropped when the release event arrives, or
   * by the scheduler if it refuses the request below. */
  ifd__req(req)->refs++;
  if (counts) {
    ifd__req(req)->inflight_counted = 1;
    rt->inflight++;
  }
  ifd_request_set_state(req, IFD_REQ_QUEUED);
  if (rt->hooks.intercept != NULL && rt->hooks.intercept(req)) return 0;
  rc = ops_of(req)->submit(m, req, err);
  if (rc < 0) {
    /* The scheduler refused it and kept nothing (ifd_model_ops_t.submit's
     * contract): the backend's reference goes back, and the caller answers
     * from `err`. */
    if (rc == IFD_EOVERLOADED) rt->shed[IFD_SHED_QUEUE_FULL]++;
    IFD_ASSERT(ifd__req(req)->state == IFD_REQ_QUEUED &&
               ifd__req(req)->refs >= 2);
    ifd_request_set_state(req, IFD_REQ_FAILED_ENQUEUE);
    ifd__req(req)->refs--;
    return rc;
  }
  return 0;
}

void ifd_request_unref(ifd_request_t *req) {
  if (req != NULL) request_put(req);
}

/* ---- responses ------------------------------------------------------------
 */

/* Counts a request that reached its model's scheduler. */
static void count(ifd_request_t *req, int success) {
  ifd_request_times_t t = {req->t_received,    req->t_queued,
                           req->t_exec_start,  req->t_compute_start,
                           req->t_compute_end, req->t_exec_end};
  if (req->model == NULL || req->null_req || req->sched_counts) return;
  if (ifd__req(req)->cache_state == IFD_CACHE_HIT) {
    ifd_stats_cache_hit(&req->model->stats, &t, ifd__req(req)->t_cache_start,
                        ifd__req(req)->t_cache_end, uv_hrtime());
    return;
  }
  ifd_stats_request(&req->model->stats, &t, success,
                    req->batch_size > 0 ? req->batch_size : 1, uv_hrtime());
}

/* Whether a released request counts as a success. */
static int succeeded(const ifd_request_t *req) {
  return req->stat_reported
             ? req->stat_success
             : ifd__req_c(req)->final_delivered && req->final_error == 0;
}

static void release_done(ifd_request_t *req) {
  int ok = succeeded(req);
  if (req->model != NULL && !req->null_req && ops_of(req)->released != NULL)
    ops_of(req)->released(req->model, req);
  if (req->trace != NULL && ALWAYS(hooks_of(req)->traced_end != NULL))
    hooks_of(req)->traced_end(req);
  ifd_request_set_state(req, IFD_REQ_RELEASED);
  ifd__req(req)->release_pending = 0;
  count(req, ok);
  if (!ifd__req(req)->final_delivered) {
    if (ifd__req(req)->responses == 0)
      ifd_request_fail(req, IFD_EINTERNAL,
                       "the backend released the request without a response");
    else
      ifd_request_fail(req, IFD_EINTERNAL,
                       "the backend released the request before its final "
                       "response");
    ok = 0;
  }
  if (req->on_release != NULL) req->on_release(req, ok, req->cb_arg);
  request_put(req);
}

static void set_error(ifd_response_t *resp, int error, const char *msg);

/* Outputs the client placed in shared memory that the backend did not
 * write there (an ensemble's response points into its steps' buffers) are
 * copied in now; one that does not fit fails the response, with Triton's
 * text. A memcpy on the loop, bounded by the region the client gave. */
static void place_outputs(ifd_response_t *resp) {
  const ifd_request_t *req = resp->req;
  uint32_t i, k;
  if (resp->error != 0 || resp->spare || req->n_outputs == 0) return;
  for (i = 0; i < resp->n_outputs; i++) {
    const ifd_output_t *o = &resp->outputs[i];
    const ifd_output_req_t *want = NULL;
    ifd_errmsg_t err;
    if (o->buffer_external || o->alloc != NULL) continue;
    for (k = 0; k < req->n_outputs && want == NULL; k++)
      if (req->outputs[k].shm.ptr != NULL &&
          strcmp(req->outputs[k].name, o->name) == 0)
        want = &req->outputs[k];
    if (want == NULL) continue;
    if (o->byte_size > want->shm.byte_size) {
      ifd_errf(&err, IFD_EINTERNAL,
               "shared memory size specified with the request for output "
               "'%s' (%" PRIu64 " bytes) should be at least %" PRIu64
               " bytes to hold the results",
               o->name, want->shm.byte_size, o->byte_size);
    } else if (o->mem_type != IFD_MEM_CPU ||
               want->shm.mem_type != IFD_MEM_CPU) {
      /* A device copy would block the loop. */
      ifd_errf(&err, IFD_EUNSUPPORTED,
               "output '%s' of model '%s' cannot be copied into CUDA shared "
               "memory after the model ran (only a backend writes there)",
               o->name, req->model_name);
    } else {
      if (o->byte_size > 0) memcpy(want->shm.ptr, o->buffer, o->byte_size);
      continue;
    }
    set_error(resp, err.code, err.text);
    return;
  }
}

/* The classification extension: each output the client asked for with a
 * class count is replaced by its top-N BYTES tensor (core/classify.h),
 * built in the response's pool. The original buffer goes back now, as
 * ifd_response_free would give it back; one the keeper owns stays its.
 * An output Triton cannot classify fails the response, with its text. */
static void classify_outputs(ifd_response_t *resp) {
  const ifd_request_t *req = resp->req;
  const ifd_model_t *m = req->model;
  uint32_t i, k;
  if (resp->error != 0 || resp->spare || req->n_outputs == 0 || m == NULL)
    return;
  for (i = 0; i < resp->n_outputs; i++) {
    ifd_output_t *o = &resp->outputs[i];
    const struct ifd_labels *labels = NULL;
    uint32_t count = 0;
    ifd_class_result_t r;
    ifd_errmsg_t err;
    int64_t *shape;
    for (k = 0; k < req->n_outputs && count == 0; k++)
      if (strcmp(req->outputs[k].name, o->name) == 0)
        count = req->outputs[k].class_count;
    if (count == 0) continue;
    if (o->mem_type == IFD_MEM_GPU) {
      set_error(resp, IFD_EUNSUPPORTED,
                "classification of an output in GPU memory is not supported");
      return;
    }
    for (k = 0; m->labels != NULL && k < m->config->n_output; k++)
      if (strcmp(m->config->output[k]->name, o->name) == 0)
        labels = &m->labels[k];
    ifd_errclear(&err);
    if (ifd_classify(o->buffer, o->byte_size, o->dtype, o->shape, o->ndims,
                     m->config->max_batch_size > 0, count, labels, &resp->pool,
                     &r, &err) != 0 ||
        (shape = ifd_pool_alloc(&resp->pool, sizeof(r.shape))) == NULL) {
      set_error(resp, err.code != 0 ? err.code : IFD_ENOMEM,
                err.code != 0 ? err.text : "out of memory");
      return;
    }
    memcpy(shape, r.shape, sizeof(r.shape));
    if (resp->keep == NULL || o->alloc != NULL) {
      if (o->alloc != NULL)
        o->alloc->release(o->alloc, o->buffer, o->alloc_userp, o->byte_size,
                          o->mem_type, o->mem_id);
      else if (!o->buffer_in_pool && !o->buffer_external)
        ifd_output_buffer_free(o);
    }
    o->alloc = NULL;
    o->buffer = r.data;
    o->byte_size = r.byte_size;
    o->buffer_in_pool = 1;
    o->buffer_in_bufpool = 0;
    o->buffer_external = 0;
    o->mem_type = IFD_MEM_CPU;
    o->mem_id = 0;
    o->dtype = IFD_TYPE_BYTES;
    o->shape = shape;
    o->ndims = r.ndims;
  }
}

static void deliver_now(ifd_response_t *resp) {
  ifd_request_t *req = resp->req;
  int counted = resp->counted;

  /* The request may be freed by uncount() once the response is delivered;
   * keep it alive across the callback. */
  ifd__req(req)->refs++;
  resp->counted = 0;
  if (resp->discard) {
    ifd_response_free(resp);
  } else if (ifd__req(req)->final_delivered) {
    /* A backend sent after its final response: the client was answered
     * already, so drop it. */
    IFD_WARN("dropping a response sent after the final one for request '%s'",
             req->id);
    ifd_response_free(resp);
  } else {
    const ifd_req_hooks_t *hooks = hooks_of(req);
    place_outputs(resp);
    if (ifd__req(req)->cache_state == IFD_CACHE_MISS &&
        (resp->flags & IFD_RESPONSE_FINAL) && ALWAYS(hooks->final_response))
      hooks->final_response(req, resp);
    /* After the cache took the plain tensors: a later request may want
     * them. */
    classify_outputs(resp);
    if (resp->flags & IFD_RESPONSE_FINAL) {
      ifd__req(req)->final_delivered = 1;
      req->final_error = resp->error;
    }
    if (ifd__req(req)->responses == 0 && !resp->empty &&
        hooks->first_response != NULL)
      hooks->first_response(req);
    ifd__req(req)->responses++;
    if (req->trace != NULL && ALWAYS(hooks->traced_response != NULL))
      hooks->traced_response(req, resp);
    if (req->on_response != NULL)
      req->on_response(resp, req->cb_arg);
    else
      ifd_response_free(resp);
  }
  IFD_ASSERT(!counted || atomic_load(&ifd__req(req)->open_responses) > 0);
  if (counted && atomic_fetch_sub(&ifd__req(req)->open_responses, 1) == 1 &&
      ifd__req(req)->release_pending)
    release_done(req);
  request_put(req);
}

/* Hands a response on: to the model's hold when it has one (which passes it
 * on later through ifd_response_deliver), else to the protocol now. */
static void deliver(ifd_response_t *resp) {
  ifd_request_t *req = resp->req;
  ifd_model_t *m = req->model;

  /* A cache hit never reached the scheduler that holds responses (it has
   * no place in its order): it goes out at once. */
  if (m == NULL || m->hold_response == NULL || resp->discard ||
      ifd__req(req)->cache_state == IFD_CACHE_HIT) {
    deliver_now(resp);
    return;
  }
  ifd__req(req)
      ->refs++; /* the hold's: the request outlives the response it holds */
  m->hold_response(m, resp);
}

void ifd_response_deliver(ifd_response_t *resp) {
  ifd_request_t *req = resp->req;
  deliver_now(resp);
  request_put(req);
}

static void on_response_ready(ifd_event_t *ev) {
  deliver((ifd_response_t *)((char *)ev - offsetof(ifd_response_t, ready_ev)));
}

ifd_response_t *ifd_response_new(ifd_request_t *req) {
  ifd_response_t *resp;
  int embedded = 0;

  /* The first response of a request (usually its only one) is built in the
   * request's slot. Any thread may get here; the exchange lets exactly one
   * of them have the slot, and ifd_response_free's release store makes the
   * loop's last writes to it visible before it is claimed again. */
  if (atomic_exchange_explicit(&ifd__req(req)->resp_slot_busy, 1,
                               memory_order_acquire) == 0) {
    resp = &ifd__req(req)->resp_slot;
    memset(resp, 0, sizeof(*resp));
    embedded = 1;
  } else {
    resp = calloc(1, sizeof(*resp));
    if (resp == NULL) return NULL;
  }
  resp->embedded = embedded;
  resp->req = req;
  ifd_pool_init(&resp->pool);
  resp->counted = 1;
  atomic_fetch_add(&ifd__req(req)->open_responses, 1);
  return resp;
}

static void set_error(ifd_response_t *resp, int error, const char *msg) {
  resp->error = error;
  free(resp->error_msg);
  resp->error_msg = strdup(msg != NULL ? msg : ifd_strerror(error));
}

void ifd_response_send(ifd_response_t *resp, uint32_t flags, int error,
                       const char *msg) {
  resp->flags |= flags;
  if (error < 0) set_error(resp, error, msg);
  if (resp->req->sink != NULL) {
    resp->req->sink->response(resp->req->sink, resp);
    return;
  }
  resp->ready_ev.fn = on_response_ready;
  ifd_evq_push(ifd_server_evq(resp->req->server), &resp->ready_ev);
}

void ifd_sink_response_done(ifd_response_t *resp) {
  ifd_request_t *req = resp->req;
  /* The response goes first: its maker frees the request once nothing is
   * open on it, which the decrement may tell it. */
  ifd_response_free(resp);
  atomic_fetch_sub(&ifd__req(req)->open_responses, 1);
}

void ifd_response_send_now(ifd_response_t *resp, uint32_t flags, int error,
                           const char *msg) {
  resp->flags |= flags;
  if (error < 0) set_error(resp, error, msg);
  deliver(resp);
}

/* Longest message the spare keeps: it must fit the pool's inline chunk, so
 * that copying it never allocates. */
#define SPARE_MSG_MAX 400

/* Sets up the request's embedded spare as a FINAL error response. No
 * allocation: the message goes into the spare's inline pool chunk. */
static ifd_response_t *spare_take(ifd_request_t *req, int error,
                                  const char *msg) {
  ifd_response_t *resp = &ifd__req(req)->spare;
  size_t n;

  memset(resp, 0, sizeof(*resp));
  ifd_pool_init(&resp->pool);
  resp->req = req;
  resp->spare = 1;
  resp->counted = 1;
  resp->flags = IFD_RESPONSE_FINAL;
  resp->error = error;
  if (msg == NULL) msg = ifd_strerror(error);
  n = strlen(msg);
  resp->error_msg =
      ifd_pool_strndup(&resp->pool, msg, n > SPARE_MSG_MAX ? SPARE_MSG_MAX : n);
  atomic_fetch_add(&ifd__req(req)->open_responses, 1);
  ifd__req(req)->spare_used = 1;
  ifd__req(req)->refs++; /* the spare lives inside the request */
  return resp;
}

void ifd_request_fail(ifd_request_t *req, int error, const char *msg) {
  ifd_response_t *resp;

  if (!ifd__req(req)->spare_used) {
    deliver(spare_take(req, error, msg));
    return;
  }
  /* A second failure: not reached by the paths that exist today (a
   * request's FINAL response ends it), so an ordinary response will do. */
  resp = ifd_response_new(req);
  if (resp == NULL) {
    IFD_ERROR("out of memory answering request '%s' a second time with: %s",
              req->id, msg);
    return;
  }
  resp->flags = IFD_RESPONSE_FINAL;
  set_error(resp, error, msg);
  deliver(resp);
}

void ifd_request_hold(ifd_request_t *req) {
  atomic_fetch_add(&ifd__req(req)->open_responses, 1);
}

void ifd_request_unhold(ifd_request_t *req) {
  if (atomic_fetch_sub(&ifd__req(req)->open_responses, 1) == 1 &&
      ifd__req(req)->release_pending)
    release_done(req);
}

void ifd_request_abort(ifd_request_t *req, int error, const char *msg) {
  if (req->trace != NULL && ALWAYS(hooks_of(req)->traced_end != NULL))
    hooks_of(req)->traced_end(req);
  count(req, 0);
  ifd_request_fail(req, error, msg);
  ifd_request_set_state(req, IFD_REQ_RELEASED);
  if (req->on_release != NULL) req->on_release(req, 0, req->cb_arg);
  request_put(req);
}

/* Released with RESCHEDULE: the execution the backend reported counts as
 * one request, as Triton counts each ReportStatistics (one that reported
 * none counts nothing); the request queues again with its queue time
 * starting now, and keeps the backend's reference. */
static void reschedule(ifd_request_t *req) {
  const struct ifd_model_ops *ops = req->model != NULL ? ops_of(req) : NULL;
  ifd_errmsg_t err;
  int rc;
  if (req->stat_reported) count(req, req->stat_success);
  req->stat_reported = 0;
  ifd__req(req)->release_flags = 0;
  req->t_queued = uv_hrtime();
  ifd_request_set_state(req, IFD_REQ_QUEUED);
  if (ops == NULL || ops->reschedule == NULL) {
    rc = ifd_errf(&err, IFD_EINVAL,
                  "Request is released with "
                  "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model "
                  "is not configured to handle such a flag.");
  } else {
    rc = ops->reschedule(req->model, req, &err);
  }
  if (rc < 0) ifd_request_abort(req, rc, err.text);
}

static void on_released(ifd_event_t *ev) {
  ifd_request_t *req =
      ifd__req_of(ifd_container_of(ev, ifd_request_core_t, release_ev));
  /* Not done: its open responses (factories) stay open across it. */
  if (ifd__req(req)->release_flags & IFD_RELEASE_RESCHEDULE) {
    reschedule(req);
    return;
  }
  /* Responses still being built (a backend may release a request before it
   * sends): the release completes when the last of them arrives. */
  if (atomic_load(&ifd__req(req)->open_responses) > 0) {
    ifd__req(req)->release_pending = 1;
    return;
  }
  release_done(req);
}

void ifd_request_release_now(ifd_request_t *req, uint32_t flags) {
  ifd__req(req)->release_flags = flags;
  on_released(&ifd__req(req)->release_ev);
}

void ifd_request_release(ifd_request_t *req, uint32_t flags) {
  ifd__req(req)->release_flags = flags;
  if (req->sink != NULL) {
    req->sink->release(req->sink, req, flags);
    return;
  }
  ifd__req(req)->release_ev.fn = on_released;
  ifd_evq_push(ifd_server_evq(req->server), &ifd__req(req)->release_ev);
}

void ifd_response_discard(ifd_response_t *resp) {
  resp->discard = 1;
  if (resp->req->sink != NULL) {
    resp->req->sink->response(resp->req->sink, resp);
    return;
  }
  resp->ready_ev.fn = on_response_ready;
  ifd_evq_push(ifd_server_evq(resp->req->server), &resp->ready_ev);
}

void ifd_request_body_free(ifd_request_t *req) {
  if (req->body_in_bufpool)
    ifd_bufpool_put(req->body);
  else
    free(req->body);
  req->body = NULL;
  req->body_in_bufpool = 0;
}

void ifd_output_buffer_free(ifd_output_t *o) {
  if (o->buffer_in_bufpool)
    ifd_bufpool_put(o->buffer);
  else
    ifd_cuda_host_free(o->buffer);
  o->buffer_in_bufpool = 0;
}

void ifd_response_free(ifd_response_t *resp) {
  ifd_request_t *req;
  uint32_t i;
  if (resp == NULL) return;
  if (resp->keep != NULL) {
    /* Buffers and params are the keeper's (see ifd_response_t.keep), but
     * for those the requester's allocator gave at delivery. */
    for (i = 0; i < resp->n_outputs; i++) {
      ifd_output_t *o = &resp->outputs[i];
      if (o->alloc != NULL)
        o->alloc->release(o->alloc, o->buffer, o->alloc_userp, o->byte_size,
                          o->mem_type, o->mem_id);
    }
    resp->keep->drop(resp->keep);
  } else {
    /* A buffer is malloc'd, or staged in the pinned pool (a GPU output
     * copied to the host: backend_api/memory/tb_gpu.c); ifd_cuda_host_free
     * tells them apart without calling the CUDA runtime. */
    for (i = 0; i < resp->n_outputs; i++) {
      ifd_output_t *o = &resp->outputs[i];
      if (o->alloc != NULL)
        o->alloc->release(o->alloc, o->buffer, o->alloc_userp, o->byte_size,
                          o->mem_type, o->mem_id);
      else if (!o->buffer_in_pool && !o->buffer_external)
        ifd_output_buffer_free(o);
    }
    free(resp->params);
  }
  if (resp->spare) {
    /* Embedded in its request: the request goes with its last reference,
     * which may be the spare's own. */
    ifd_pool_destroy(&resp->pool);
    request_put(resp->req);
    return;
  }
  free(resp->error_msg);
  ifd_pool_destroy(&resp->pool);
  if (resp->embedded) {
    /* Hands the slot back; the request waited for it if its references
     * went first. */
    req = resp->req;
    atomic_store_explicit(&ifd__req(req)->resp_slot_busy, 0,
                          memory_order_release);
    if (ifd__req(req)->refs == 0) request_free(req);
    return;
  }
  free(resp);
}

void ifd_request_cancel(ifd_request_t *req) {
  const struct ifd_model_ops *ops;
  if (req == NULL || atomic_exchange(&req->cancelled, 1) != 0) return;
  if (req->model == NULL || req->server == NULL ||
      (ifd__req(req)->state != IFD_REQ_QUEUED &&
       ifd__req(req)->state != IFD_REQ_EXECUTING))
    return;
  /* Not with its scheduler: a plugin lookup in flight (its end sees the
   * flag), or a cache hit about to be answered. */
  if (ifd__req(req)->cache_state == IFD_CACHE_PENDING ||
      ifd__req(req)->cache_state == IFD_CACHE_HIT)
    return;
  ops = ops_of(req);
  if (ops->cancel == NULL) return;
  /* The scheduler may answer the request at once, which may drop the
   * protocol's last reference from inside on_response: keep it alive. */
  ifd__req(req)->refs++;
  ops->cancel(req->model, req);
  request_put(req);
}

const ifd_output_t *ifd_response_output(const ifd_response_t *resp,
                                        const char *name) {
  uint32_t i;
  for (i = 0; i < resp->n_outputs; i++)
    if (strcmp(resp->outputs[i].name, name) == 0) return &resp->outputs[i];
  return NULL;
}
