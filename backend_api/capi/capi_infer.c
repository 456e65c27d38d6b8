/*
 * backend_api/capi/capi_infer.c - in-process inference: response allocators,
 * TRITONSERVER_ServerInferAsync, responses, cancellation, and the deadlock
 * rule of business logic scripting (BLS).
 *
 * One request path. An application's request (capi_request.c) is posted to
 * the loop, which turns it into the same core request that HTTP and gRPC
 * build (inputs point at the application's buffers: no copy) and submits
 * it. Outputs are written in place into the buffers the application's
 * allocator gives (core's ifd_out_alloc_t, called by
 * TRITONBACKEND_OutputBuffer on the backend's thread). Responses and the
 * release reach the loop as for any request; there the application's
 * callbacks run. A response is the core's ifd_response_t, handed to the
 * application, which deletes it from any thread: the free runs on the loop.
 *
 * What ServerInferAsync checks on the caller's thread fails the call; what
 * the server checks (model, shapes, types) comes back as a FINAL error
 * response followed by the release callback, so both callbacks always run
 * once the call succeeded.
 *
 * BLS deadlock rule. A request sent from inside an execute (an instance
 * thread) carries the chain of models whose execute sent it. Each model
 * counts its instances that wait on requests they sent (its gate). A
 * request whose target is on its own chain (a model calling itself, or a
 * cycle) while every instance of the target waits on calls it sent can
 * never be served: it is refused at once (UNAVAILABLE, "... deadlock ...")
 * instead of waiting forever. Any other request queues as usual: callers
 * whose instances all wait on another model are served by that model's
 * own instances. An instance counts as waiting from the moment it sends
 * until the call's release, even when it does not wait for it (an
 * asynchronous call): the rule may refuse then, never hang.
 */
#include "backend_api/internal.h"
#include "base/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/classify.h"
#include "core/infer.h"
#include "base/log.h"
#include "core/model.h"
#include "core/shm.h"
#include "cuda/cuda_mem.h"

/* Longest call chain (models) a BLS request may carry. */
#define CHAIN_MAX_MODELS 32
#define CHAIN_MAX_BYTES 4096
/* How soon an application's next request is expected after an answer. */
#define EXPECT_NEXT_NS 20000

static TRITONSERVER_Error *nomem(void) {
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
}

/* Adds `name` to a chain being built in buf (NUL-separated), once. */
static int chain_add(char *buf, uint32_t *len, uint32_t *n, const char *name) {
  uint32_t off = 0;
  size_t l = strlen(name);
  while (off < *len) {
    if (strcmp(buf + off, name) == 0) return 0;
    off += (uint32_t)strlen(buf + off) + 1;
  }
  if (*n >= CHAIN_MAX_MODELS || *len + l + 1 > CHAIN_MAX_BYTES) return -1;
  memcpy(buf + *len, name, l + 1);
  *len += (uint32_t)l + 1;
  (*n)++;
  return 0;
}

static int chain_has(const char *chain, uint32_t len, const char *name) {
  uint32_t off = 0;
  while (off < len) {
    if (strcmp(chain + off, name) == 0) return 1;
    off += (uint32_t)strlen(chain + off) + 1;
  }
  return 0;
}

/* On an instance thread: records the call chain of the batch it executes
 * plus its own model in r, and counts the instance as waiting. */
static TRITONSERVER_Error *bls_enter(TRITONSERVER_InferenceRequest *r) {
  ifd_request_t **reqs;
  uint32_t n, i, len = 0, models = 0;
  TRITONBACKEND_ModelInstance *in = ifd__instance_current(&reqs, &n);
  char *buf;
  if (in == NULL) return NULL;
  buf = malloc(CHAIN_MAX_BYTES);
  if (buf == NULL) return nomem();
  if (chain_add(buf, &len, &models, in->model->model->name) < 0) goto too_deep;
  for (i = 0; i < n; i++) {
    const char *c = reqs[i]->caller_chain;
    uint32_t off = 0;
    while (c != NULL && off < reqs[i]->caller_chain_len) {
      if (chain_add(buf, &len, &models, c + off) < 0) goto too_deep;
      off += (uint32_t)strlen(c + off) + 1;
    }
  }
  free(r->chain);
  r->chain = buf;
  r->chain_len = len;
  r->gate = in->model->gate;
  r->gate_index = in->index;
  ifd__bls_gate_enter(r->gate, r->gate_index);
  return NULL;
too_deep:
  free(buf);
  return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                     "in-process call chain too long: more than %d models, "
                     "or %d bytes of names",
                     CHAIN_MAX_MODELS, CHAIN_MAX_BYTES);
}

static void bls_leave(TRITONSERVER_InferenceRequest *r) {
  if (r->gate == NULL) return;
  ifd__bls_gate_leave(r->gate, r->gate_index);
  r->gate = NULL;
}

int ifd_backend_bls_deadlocks(const ifd_model_t *m, const ifd_request_t *req) {
  const TRITONBACKEND_Model *bm = m->backend_model;
  if (req->caller_chain == NULL ||
      !chain_has(req->caller_chain, req->caller_chain_len, m->name))
    return 0;
  if (bm == NULL || bm->gate == NULL) return 0; /* an ensemble */
  return atomic_load(&bm->gate->waiting) >= bm->gate->n_instances;
}

/* ---- response allocators ----------------------------------------------------
 */

static int alloc_cb(ifd_out_alloc_t *a, void *req_arg, const char *name,
                    uint64_t size, int32_t *mem_type, int64_t *mem_id,
                    void **buf, void **userp, char *msg, size_t msg_len) {
  TRITONSERVER_ResponseAllocator *al = (TRITONSERVER_ResponseAllocator *)a;
  TRITONSERVER_MemoryType amt = (TRITONSERVER_MemoryType)*mem_type;
  int64_t aid = *mem_id;
  TRITONSERVER_Error *e =
      al->alloc_fn(al, name, (size_t)size, (TRITONSERVER_MemoryType)*mem_type,
                   *mem_id, req_arg, buf, userp, &amt, &aid);
  if (e != NULL) {
    /* The allocator's class and text reach the backend as they are. */
    int code = ifd__code_from_class(TRITONSERVER_ErrorCode(e));
    snprintf(msg, msg_len, "%s", TRITONSERVER_ErrorMessage(e));
    TRITONSERVER_ErrorDelete(e);
    return code < 0 ? code : IFD_EINTERNAL;
  }
  *mem_type = (int32_t)amt;
  *mem_id = aid;
  return 0;
}

static void release_cb(ifd_out_alloc_t *a, void *buf, void *userp,
                       uint64_t size, int32_t mem_type, int64_t mem_id) {
  TRITONSERVER_ResponseAllocator *al = (TRITONSERVER_ResponseAllocator *)a;
  TRITONSERVER_Error *e = al->release_fn(
      al, buf, userp, (size_t)size, (TRITONSERVER_MemoryType)mem_type, mem_id);
  if (e != NULL) {
    IFD_ERROR("response allocator release failed: %s",
              TRITONSERVER_ErrorMessage(e));
    TRITONSERVER_ErrorDelete(e);
  }
}

static void start_cb(ifd_out_alloc_t *a, void *req_arg) {
  TRITONSERVER_ResponseAllocator *al = (TRITONSERVER_ResponseAllocator *)a;
  TRITONSERVER_Error *e = al->start_fn(al, req_arg);
  if (e != NULL) {
    IFD_WARN("response allocator start failed: %s",
             TRITONSERVER_ErrorMessage(e));
    TRITONSERVER_ErrorDelete(e);
  }
}

static void query_cb(ifd_out_alloc_t *a, void *req_arg, const char *name,
                     uint64_t *size, int32_t *mem_type, int64_t *mem_id) {
  TRITONSERVER_ResponseAllocator *al = (TRITONSERVER_ResponseAllocator *)a;
  TRITONSERVER_MemoryType mt = (TRITONSERVER_MemoryType)*mem_type;
  int64_t id = *mem_id;
  size_t bs = 0;
  TRITONSERVER_Error *e = al->query_fn(al, req_arg, name, &bs, &mt, &id);
  if (e != NULL) {
    TRITONSERVER_ErrorDelete(e); /* no preference, then */
    return;
  }
  *size = bs;
  *mem_type = (int32_t)mt;
  *mem_id = id;
}

TRITONSERVER_Error *TRITONSERVER_ResponseAllocatorNew(
    TRITONSERVER_ResponseAllocator **allocator,
    TRITONSERVER_ResponseAllocatorAllocFn_t alloc_fn,
    TRITONSERVER_ResponseAllocatorReleaseFn_t release_fn,
    TRITONSERVER_ResponseAllocatorStartFn_t start_fn) {
  TRITONSERVER_ResponseAllocator *a;
  ARG_CHECK(allocator != NULL && alloc_fn != NULL && release_fn != NULL);
  a = calloc(1, sizeof(*a));
  if (a == NULL) return nomem();
  a->base.alloc = alloc_cb;
  a->base.release = release_cb;
  a->alloc_fn = alloc_fn;
  a->release_fn = release_fn;
  a->start_fn = start_fn;
  a->base.start = start_fn != NULL ? start_cb : NULL;
  *allocator = a;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ResponseAllocatorSetBufferAttributesFunction(
    TRITONSERVER_ResponseAllocator *allocator,
    TRITONSERVER_ResponseAllocatorBufferAttributesFn_t buffer_attributes_fn) {
  ARG_CHECK(allocator != NULL);
  allocator->attr_fn = buffer_attributes_fn;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ResponseAllocatorSetQueryFunction(
    TRITONSERVER_ResponseAllocator *allocator,
    TRITONSERVER_ResponseAllocatorQueryFn_t query_fn) {
  ARG_CHECK(allocator != NULL);
  allocator->query_fn = query_fn;
  allocator->base.query = query_fn != NULL ? query_cb : NULL;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_ResponseAllocatorDelete(
    TRITONSERVER_ResponseAllocator *allocator) {
  free(allocator);
  return NULL;
}

/* ---- on the loop: a request in flight
 * ---------------------------------------- */

/* What the loop keeps for one application request in flight: in the core
 * request's pool, so it goes with it. */
typedef struct call {
  TRITONSERVER_InferenceRequest *r; /* borrowed: until the release */
  ifd_request_t *req;               /* the protocol reference */
  unsigned open_resps;              /* delivered, not yet deleted */
  int released;                     /* the release callback ran */
} call_t;

static void call_put(call_t *c) {
  if (c->released && c->open_resps == 0) ifd_request_unref(c->req);
}

/* The application's response callback, for a response core delivered. */
static void on_response(ifd_response_t *resp, void *arg) {
  call_t *c = arg;
  TRITONSERVER_InferenceRequest *r = c->r;
  uint32_t flags = resp->flags & IFD_RESPONSE_FINAL
                       ? TRITONSERVER_RESPONSE_COMPLETE_FINAL
                       : 0;
  ifd_out_alloc_t *a = c->req->out_alloc;
  uint32_t i;
  int started = 0;
  if (resp->empty) {
    /* Only flags (a decoupled model's last word): no response object. */
    ifd_response_free(resp);
    r->response_fn(NULL, flags, r->response_userp);
    return;
  }
  /* Outputs a scheduler built on the loop (an ensemble's) did not go
   * through the allocator: they are copied into buffers it gives now, so
   * the application gets its own memory, as from a backend. */
  for (i = 0; a != NULL && resp->error == 0 && i < resp->n_outputs; i++) {
    ifd_output_t *o = &resp->outputs[i];
    int32_t mt = IFD_MEM_CPU;
    int64_t id = 0;
    void *buf = NULL, *userp = NULL;
    char msg[256];
    if (o->alloc != NULL || o->buffer_external) continue;
    if (!started && a->start != NULL) a->start(a, c->req->out_alloc_arg);
    started = 1;
    if (a->alloc(a, c->req->out_alloc_arg, o->name, o->byte_size, &mt, &id,
                 &buf, &userp, msg, sizeof(msg)) < 0) {
      IFD_WARN("response allocator failed for output '%s': %s", o->name, msg);
      continue; /* the output stays where it is */
    }
    if (mt == IFD_MEM_GPU || (buf == NULL && o->byte_size > 0)) {
      /* A device copy would block the loop: keep the server's buffer. */
      a->release(a, buf, userp, o->byte_size, mt, id);
      continue;
    }
    if (o->byte_size > 0) memcpy(buf, o->buffer, o->byte_size);
    /* The server's buffer goes as ifd_response_free would free it (a GPU
     * output staged in the pinned pool included). */
    if (resp->keep == NULL && !o->buffer_in_pool) ifd_output_buffer_free(o);
    o->buffer = buf;
    o->buffer_in_pool = 0;
    o->buffer_in_bufpool = 0;
    o->alloc = a;
    o->alloc_userp = userp;
    o->mem_type = mt;
    o->mem_id = id;
  }
  c->open_resps++;
  r->response_fn((TRITONSERVER_InferenceResponse *)resp, flags,
                 r->response_userp);
  /* An application that waits for its answer sends its next request right
   * away: the loop waits for it briefly instead of sleeping. */
  if (flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    ifd_evq_expect(ifd_server_evq(c->req->server), EXPECT_NEXT_NS);
}

/* The release: the application may reuse or delete its request after. */
static void release(call_t *c) {
  TRITONSERVER_InferenceRequest *r = c->r;
  TRITONSERVER_InferenceRequestReleaseFn_t fn = r->release_fn;
  void *userp = r->release_userp;
  bls_leave(r);
  r->live = NULL;
  c->r = NULL;
  c->released = 1;
  atomic_store(&r->inflight, 0);
  if (fn != NULL) fn(r, TRITONSERVER_REQUEST_RELEASE_ALL, userp);
  call_put(c);
}

static void on_release(ifd_request_t *req, int success, void *arg) {
  (void)req;
  (void)success;
  release(arg);
}

/* A request the server refused before queueing it: answered here with a
 * FINAL error response, then released, as core would have. */
static void refuse(call_t *c, int code, const char *msg) {
  ifd_response_t *resp = ifd_response_new(c->req);
  if (resp == NULL) {
    IFD_ERROR("out of memory answering an in-process request: %s", msg);
  } else {
    resp->flags = IFD_RESPONSE_FINAL;
    resp->error = code;
    resp->error_msg = strdup(msg);
    resp->counted = 0;
    c->open_resps++;
    c->r->response_fn((TRITONSERVER_InferenceResponse *)resp,
                      TRITONSERVER_RESPONSE_COMPLETE_FINAL,
                      c->r->response_userp);
  }
  release(c);
}

/* A raw input takes the type and shape of the model's only input. */
static int raw_input(const ifd__capi_input_t *in, const ifd_model_t *m,
                     size_t bytes, ifd_dtype_t *dtype, int64_t *shape,
                     uint32_t *ndims, ifd_errmsg_t *err) {
  const ifd_model_config_t *cfg = m->config;
  const Inference__ModelInput *ci;
  size_t k, es;
  uint32_t nd = 0;
  if (cfg->n_input != 1)
    return ifd_errf(err, IFD_EINVAL,
                    "raw input '%s' needs a model with exactly one input; "
                    "'%s' has %zu",
                    in->name, m->name, cfg->n_input);
  ci = cfg->input[0];
  *dtype = (ifd_dtype_t)ci->data_type;
  es = ifd_dtype_size(*dtype);
  if (cfg->max_batch_size > 0) shape[nd++] = 1;
  for (k = 0; k < ci->n_dims && nd < IFD_MAX_DIMS; k++) {
    int64_t d = ci->dims[k];
    if (d < 0) {
      if (es == 0 || ci->n_dims != 1)
        return ifd_errf(err, IFD_EINVAL,
                        "raw input '%s': the shape of input '%s' cannot be "
                        "told from its byte size",
                        in->name, ci->name);
      d = (int64_t)(bytes / es);
    }
    shape[nd++] = d;
  }
  *ndims = nd;
  return 0;
}

/* Turns the application's request into a core request and submits it. */
static void submit(ifd_event_t *ev) {
  TRITONSERVER_InferenceRequest *r =
      (TRITONSERVER_InferenceRequest *)((char *)ev -
                                        offsetof(TRITONSERVER_InferenceRequest,
                                                 submit_ev));
  ifd_request_t *req = ifd_request_new(r->server);
  ifd_model_t *m = NULL;
  ifd_errmsg_t err;
  call_t *c;
  uint32_t i, k;

  ifd_errclear(&err);
  if (req == NULL) goto out_nomem_early;
  if (r->trace != NULL) {
    /* The application's trace goes with the request from here: released
     * through its callback when the request is done, refused or not. */
    TRITONSERVER_InferenceTrace *t = r->trace;
    r->trace = NULL;
    if (ifd__capi_trace_attach(req, t) != 0) ifd__capi_trace_refused(t);
  }
  c = ifd_pool_alloc(&req->pool, sizeof(*c));
  if (c == NULL) {
    ifd_request_unref(req);
    goto out_nomem_early;
  }
  memset(c, 0, sizeof(*c));
  c->r = r;
  c->req = req;
  r->live = req;
  req->on_response = on_response;
  req->on_release = on_release;
  req->cb_arg = c;
  if (r->allocator != NULL) {
    req->out_alloc = &r->allocator->base;
    req->out_alloc_arg = r->alloc_userp;
  }
  req->model_name = ifd_pool_strndup(&req->pool, r->model, strlen(r->model));
  req->model_version = r->version;
  req->id = ifd_pool_strndup(&req->pool, r->id, strlen(r->id));
  req->correlation_id = r->corr_id;
  if (r->corr_id_str != NULL)
    req->correlation_id_str =
        ifd_pool_strndup(&req->pool, r->corr_id_str, strlen(r->corr_id_str));
  req->flags = r->flags;
  req->priority = r->priority > UINT32_MAX ? UINT32_MAX : (uint32_t)r->priority;
  req->timeout_us = r->timeout_us;
  req->t_received = ifd_now_ns();
  if (req->model_name == NULL || req->id == NULL ||
      (r->corr_id_str != NULL && req->correlation_id_str == NULL))
    goto out_nomem;
  if (r->chain != NULL) {
    char *ch = ifd_pool_alloc(&req->pool, r->chain_len);
    if (ch == NULL) goto out_nomem;
    memcpy(ch, r->chain, r->chain_len);
    req->caller_chain = ch;
    req->caller_chain_len = r->chain_len;
  }

  /* The model is needed for raw inputs; submit looks it up again (same
   * loop turn: the same answer) and applies the deadlock rule. */
  if (ifd_server_find_model(r->server, r->model, strlen(r->model), r->version,
                            &m, &err) < 0) {
    refuse(c, err.code, err.text);
    return;
  }
  if (ifd_request_reserve_inputs(req, r->n_inputs) < 0) goto out_nomem;
  for (i = 0; i < r->n_inputs; i++) {
    const ifd__capi_input_t *ci = &r->inputs[i];
    ifd_dtype_t dtype = (ifd_dtype_t)ci->dtype;
    int64_t rshape[IFD_MAX_DIMS];
    const int64_t *shape = ci->shape;
    uint32_t ndims = ci->ndims;
    uint64_t total = 0;
    ifd_input_t *in;
    for (k = 0; k < ci->n_bufs; k++) total += ci->bufs[k].size;
    if (ci->raw) {
      if (raw_input(ci, m, total, &dtype, rshape, &ndims, &err) < 0) {
        refuse(c, err.code, err.text);
        return;
      }
      shape = rshape;
    }
    in = ifd_request_add_input(req, ci->name, strlen(ci->name), dtype, shape,
                               ndims);
    if (in == NULL) goto out_nomem;
    in->byte_size = total;
    if (ci->n_bufs == 1) {
      in->data = ci->bufs[0].base;
      in->mem_type =
          ci->bufs[0].mem_type == IFD_MEM_GPU ? IFD_MEM_GPU : IFD_MEM_CPU;
      in->mem_id = ci->bufs[0].mem_id;
    } else {
      /* Several buffers: one contiguous copy (host memory only). */
      char *p = ifd_pool_alloc(&req->pool, total ? total : 1);
      uint64_t off = 0;
      if (p == NULL) goto out_nomem;
      for (k = 0; k < ci->n_bufs; k++) {
        if (ci->bufs[k].mem_type == IFD_MEM_GPU) {
          ifd_errf(&err, IFD_EINVAL,
                   "input '%s': several buffers in GPU memory are not "
                   "supported; append one",
                   ci->name);
          refuse(c, err.code, err.text);
          return;
        }
        if (ci->bufs[k].size > 0)
          memcpy(p + off, ci->bufs[k].base, ci->bufs[k].size);
        off += ci->bufs[k].size;
      }
      in->data = p;
    }
  }
  for (i = 0; i < r->n_outputs; i++)
    if (ifd_request_add_output(req, r->outputs[i], strlen(r->outputs[i])) ==
        NULL)
      goto out_nomem;
  for (i = 0; i < r->n_params; i++) {
    const ifd__capi_param_t *cp = &r->params[i];
    ifd_param_t *p = ifd_request_add_param(req, cp->key, strlen(cp->key));
    if (p == NULL) goto out_nomem;
    p->type = (ifd_param_type_t)cp->type;
    switch (cp->type) {
      case TRITONSERVER_PARAMETER_STRING:
        p->v.s = ifd_pool_strndup(&req->pool, cp->v.s, strlen(cp->v.s));
        if (p->v.s == NULL) goto out_nomem;
        break;
      case TRITONSERVER_PARAMETER_INT:
        p->v.i = cp->v.i;
        break;
      case TRITONSERVER_PARAMETER_BOOL:
        p->v.b = cp->v.b;
        break;
      default:
        p->v.d = cp->v.d;
        break;
    }
  }
  if (ifd_request_submit(req, &err) < 0) {
    refuse(c, err.code, err.text);
    return;
  }
  if (atomic_load(&r->cancelled)) ifd_request_cancel(req);
  return;

out_nomem:
  refuse(c, IFD_ENOMEM, "out of memory");
  return;
out_nomem_early:
  /* Not even a core request: release the application's at once. */
  IFD_ERROR("out of memory submitting an in-process request for '%s'",
            r->model);
  {
    TRITONSERVER_InferenceRequestReleaseFn_t fn = r->release_fn;
    bls_leave(r);
    atomic_store(&r->inflight, 0);
    if (fn != NULL) fn(r, TRITONSERVER_REQUEST_RELEASE_ALL, r->release_userp);
  }
}

TRITONSERVER_Error *TRITONSERVER_ServerInferAsync(
    TRITONSERVER_Server *server,
    TRITONSERVER_InferenceRequest *inference_request,
    TRITONSERVER_InferenceTrace *trace) {
  TRITONSERVER_InferenceRequest *r = inference_request;
  TRITONSERVER_Error *e;
  uint32_t i;
  ARG_CHECK(server != NULL && r != NULL);
  if (SRV(server) != r->server)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "the inference request belongs to another "
                                 "server");
  if (r->response_fn == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "inference request has no response callback: "
                                 "call "
                                 "TRITONSERVER_InferenceRequestSetResponseCallb"
                                 "ack");
  for (i = 0; i < r->n_inputs; i++)
    if (r->inputs[i].n_bufs == 0)
      return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                         "input '%s' has no data", r->inputs[i].name);
  if (atomic_exchange(&r->inflight, 1) != 0)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE,
                                 "the inference request is already in flight");
  atomic_store(&r->cancelled, 0);
  r->trace = trace; /* taken by submit, on the loop */
  e = bls_enter(r);
  if (e == NULL) {
    r->submit_ev.fn = submit;
    e = ifd__capi_post(server, &r->submit_ev);
  }
  if (e != NULL) {
    bls_leave(r);
    r->trace = NULL; /* still the caller's */
    atomic_store(&r->inflight, 0);
  }
  return e;
}

/* ---- cancellation
 * ------------------------------------------------------------- */

static void cancel_on_loop(ifd__capi_call_t *c) {
  TRITONSERVER_InferenceRequest *r = c->arg;
  if (r->live != NULL) ifd_request_cancel(r->live);
  ifd__capi_call_done(c, NULL);
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestCancel(
    TRITONSERVER_InferenceRequest *inference_request) {
  ifd__capi_call_t c;
  ARG_CHECK(inference_request != NULL);
  atomic_store(&inference_request->cancelled, 1);
  if (!atomic_load(&inference_request->inflight)) return NULL;
  /* Waits for the loop, so the request cannot be released and reused (or
   * deleted) under the cancel. */
  memset(&c, 0, sizeof(c));
  c.fn = cancel_on_loop;
  c.arg = inference_request;
  return ifd__capi_run((TRITONSERVER_Server *)inference_request->server, &c);
}

TRITONSERVER_Error *TRITONSERVER_InferenceRequestIsCancelled(
    TRITONSERVER_InferenceRequest *inference_request, bool *is_cancelled) {
  ARG_CHECK(inference_request != NULL && is_cancelled != NULL);
  *is_cancelled = atomic_load(&inference_request->cancelled) != 0;
  return NULL;
}

/* ---- responses
 * ------------------------------------------------------------------ */

#define RESP(r) ((ifd_response_t *)(r))

static void response_delete(ifd_response_t *resp) {
  call_t *c = resp->req->cb_arg;
  c->open_resps--;
  ifd_response_free(resp);
  call_put(c);
}

static void on_response_delete(ifd_event_t *ev) {
  response_delete(
      (ifd_response_t *)((char *)ev - offsetof(ifd_response_t, ready_ev)));
}

TRITONSERVER_Error *TRITONSERVER_InferenceResponseDelete(
    TRITONSERVER_InferenceResponse *inference_response) {
  ifd_response_t *resp = RESP(inference_response);
  uint32_t i;
  if (resp == NULL) return NULL;
  /* The allocator's buffers go back now, on the caller's thread, as in
   * Triton: once this returns the application may delete its allocator,
   * which the loop's free below (maybe later) must not reach. */
  for (i = 0; i < resp->n_outputs; i++) {
    ifd_output_t *o = &resp->outputs[i];
    if (o->alloc == NULL) continue;
    o->alloc->release(o->alloc, o->buffer, o->alloc_userp, o->byte_size,
                      o->mem_type, o->mem_id);
    o->alloc = NULL;
    o->buffer = NULL;
    o->buffer_external = 1; /* nothing left for ifd_response_free */
  }
  if (ifd_server_on_loop(resp->req->server)) {
    response_delete(resp);
    return NULL;
  }
  /* The response's own event is free once it was delivered. Pushed even
   * while the server stops: the loop runs until every event has. */
  resp->ready_ev.fn = on_response_delete;
  ifd_evq_push(ifd_server_evq(resp->req->server), &resp->ready_ev);
  return NULL;
}

/* The response owns the error it returns (Triton's contract): made once,
 * in the response's pool. */
TRITONSERVER_Error *TRITONSERVER_InferenceResponseError(
    TRITONSERVER_InferenceResponse *inference_response) {
  ifd_response_t *resp = RESP(inference_response);
  const char *msg;
  size_t n;
  struct TRITONSERVER_Error *e;
  if (resp == NULL || resp->error == 0) return NULL;
  if (resp->api_error != NULL) return resp->api_error;
  msg = resp->error_msg != NULL ? resp->error_msg : ifd_strerror(resp->error);
  n = strlen(msg);
  e = ifd_pool_alloc(&resp->pool, sizeof(*e) + n + 1);
  if (e == NULL) {
    /* Still an error: a static one, never deleted by the caller. */
    static struct {
      TRITONSERVER_Error_Code code;
      char msg[32];
    } oom = {TRITONSERVER_ERROR_INTERNAL, "out of memory"};
    return (TRITONSERVER_Error *)&oom;
  }
  e->code = (TRITONSERVER_Error_Code)ifd_error_class(resp->error);
  memcpy(e->msg, msg, n + 1);
  resp->api_error = e;
  return e;
}

TRITONSERVER_Error *TRITONSERVER_InferenceResponseModel(
    TRITONSERVER_InferenceResponse *inference_response, const char **model_name,
    int64_t *model_version) {
  const ifd_request_t *req;
  ARG_CHECK(inference_response != NULL && model_name != NULL &&
            model_version != NULL);
  req = RESP(inference_response)->req;
  *model_name = req->model != NULL ? req->model->name : req->model_name;
  *model_version =
      req->model != NULL ? req->model->version : req->model_version;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceResponseId(
    TRITONSERVER_InferenceResponse *inference_response,
    const char **request_id) {
  ARG_CHECK(inference_response != NULL && request_id != NULL);
  *request_id = RESP(inference_response)->req->id;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceResponseParameterCount(
    TRITONSERVER_InferenceResponse *inference_response, uint32_t *count) {
  ARG_CHECK(inference_response != NULL && count != NULL);
  *count = RESP(inference_response)->n_params;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceResponseParameter(
    TRITONSERVER_InferenceResponse *inference_response, const uint32_t index,
    const char **name, TRITONSERVER_ParameterType *type, const void **vvalue) {
  const ifd_response_t *resp = RESP(inference_response);
  const ifd_param_t *p;
  ARG_CHECK(inference_response != NULL && name != NULL && type != NULL &&
            vvalue != NULL);
  if (index >= resp->n_params)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "out of bounds index %u: response has %u parameters",
                       index, resp->n_params);
  p = &resp->params[index];
  *name = p->key;
  *type = (TRITONSERVER_ParameterType)p->type;
  /* A string's value is the string itself; the others point at it. */
  *vvalue =
      p->type == IFD_PARAM_STRING ? (const void *)p->v.s : (const void *)&p->v;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceResponseOutputCount(
    TRITONSERVER_InferenceResponse *inference_response, uint32_t *count) {
  ARG_CHECK(inference_response != NULL && count != NULL);
  *count = RESP(inference_response)->n_outputs;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_InferenceResponseOutput(
    TRITONSERVER_InferenceResponse *inference_response, const uint32_t index,
    const char **name, TRITONSERVER_DataType *datatype, const int64_t **shape,
    uint64_t *dim_count, const void **base, size_t *byte_size,
    TRITONSERVER_MemoryType *memory_type, int64_t *memory_type_id,
    void **userp) {
  const ifd_response_t *resp = RESP(inference_response);
  const ifd_output_t *o;
  ARG_CHECK(inference_response != NULL && name != NULL && datatype != NULL &&
            shape != NULL && dim_count != NULL && base != NULL &&
            byte_size != NULL && memory_type != NULL &&
            memory_type_id != NULL && userp != NULL);
  if (index >= resp->n_outputs)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "out of bounds index %u: response has %u outputs", index,
                       resp->n_outputs);
  o = &resp->outputs[index];
  *name = o->name;
  *datatype = (TRITONSERVER_DataType)o->dtype;
  *shape = o->shape;
  *dim_count = o->ndims;
  *base = o->buffer;
  *byte_size = (size_t)o->byte_size;
  *memory_type = (TRITONSERVER_MemoryType)o->mem_type;
  *memory_type_id = o->mem_id;
  *userp = o->alloc != NULL ? o->alloc_userp : NULL;
  return NULL;
}

/* The label of class `class_index` of output `index`: line class_index of
 * the output's label_filename, as Triton's label provider gives it; NULL
 * when the output has none, the line is past the file's end or empty. */
TRITONSERVER_Error *TRITONSERVER_InferenceResponseOutputClassificationLabel(
    TRITONSERVER_InferenceResponse *inference_response, const uint32_t index,
    const size_t class_index, const char **label) {
  const ifd_response_t *resp = RESP(inference_response);
  const ifd_model_t *m;
  size_t k;
  ARG_CHECK(inference_response != NULL && label != NULL);
  *label = NULL;
  if (index >= resp->n_outputs)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "out of bounds index %u: response has %u outputs", index,
                       resp->n_outputs);
  m = resp->req != NULL ? resp->req->model : NULL;
  if (m == NULL || m->labels == NULL) return NULL;
  for (k = 0; k < m->config->n_output; k++) {
    const ifd_labels_t *l = &m->labels[k];
    if (strcmp(m->config->output[k]->name, resp->outputs[index].name) != 0)
      continue;
    if (class_index < l->n && l->line[class_index][0] != '\0')
      *label = l->line[class_index];
    break;
  }
  return NULL;
}
