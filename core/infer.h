/*
 * core/infer.h - inference requests and responses.
 *
 * One request type serves every protocol: net/ builds an ifd_request_t whose
 * input tensors point into the bytes it received, submits it, and gets each
 * response through a callback on the loop thread. The backend ABI hands the
 * same objects to backends as TRITONBACKEND_Request / TRITONBACKEND_Response.
 *
 * Life of a request (loop thread unless said otherwise):
 *   ifd_request_new -> fill fields (net) -> ifd_request_submit: validated
 *   against the model config, queued by the model's scheduler -> executed on
 *   an instance thread -> the backend creates responses and releases the
 *   request (any thread: both only push events) -> the loop calls
 *   req->on_response for each response -> the protocol writes it and calls
 *   ifd_response_free when its write completes -> the protocol calls
 *   ifd_request_unref once it needs the request no more. The request is freed
 *   when the protocol's reference is gone and the backend has released it.
 */
#ifndef IFD_CORE_INFER_H
#define IFD_CORE_INFER_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/dtype.h"
#include "base/error.h"
#include "base/event.h"
#include "base/pool.h"
#include "core/seqstate.h"
#include "core/shm.h"

typedef struct ifd_server ifd_server_t;
typedef struct ifd_model ifd_model_t;
typedef struct ifd_request ifd_request_t;
typedef struct ifd_response ifd_response_t;

/* Request flags, same values as TRITONSERVER_RequestFlag. */
#define IFD_REQUEST_FLAG_SEQUENCE_START 1u
#define IFD_REQUEST_FLAG_SEQUENCE_END 2u

/* Release flags, same values as TRITONSERVER_RequestReleaseFlag. */
#define IFD_RELEASE_ALL 1u
#define IFD_RELEASE_RESCHEDULE 2u

typedef enum ifd_param_type {
  IFD_PARAM_STRING = 0, /* same values as TRITONSERVER_ParameterType */
  IFD_PARAM_INT = 1,
  IFD_PARAM_BOOL = 2,
  IFD_PARAM_DOUBLE = 3,
} ifd_param_type_t;

/** A request or response parameter. */
typedef struct ifd_param {
  const char *key; /* borrowed: pool of the request or response */
  ifd_param_type_t type;
  union {
    const char *s; /* borrowed: same pool as key */
    int64_t i;
    _Bool b; /* a C bool: backends read it through a `const bool *` */
    double d;
  } v;
} ifd_param_t;

/** An input tensor of a request. */
typedef struct ifd_input {
  const char *name; /* borrowed: request pool */
  ifd_dtype_t dtype;
  int64_t *shape; /* borrowed: request pool; full shape incl. batch dim */
  uint32_t ndims;
  const void *data;   /* borrowed: request body or pool, or a shared-memory
                         region the request holds; NULL until set */
  uint64_t byte_size; /* bytes at data */
  int32_t mem_type;   /* IFD_MEM_* (core/shm.h) of data: CPU (0) unless it
                         is in a CUDA shared-memory region */
  int64_t mem_id;     /* device of data when mem_type is IFD_MEM_GPU */
} ifd_input_t;

/** An output the client asked for. */
typedef struct ifd_output_req {
  const char *name;     /* borrowed: request pool */
  uint32_t class_count; /* classification extension: top-N, 0 = tensor */
  uint32_t
      proto_flags; /* protocol-private (e.g. HTTP binary_data), core ignores */
  /* Where the client wants it written: shm.ptr NULL for the response, else
   * a shared-memory region the request holds (ifd_shm_use). The backend's
   * output buffer is then the region; the response carries no data. */
  ifd_shm_ref_t shm;
} ifd_output_req_t;

typedef void (*ifd_response_cb)(ifd_response_t *resp, void *arg);

/**
 * Output buffers the requester gives (the in-process API's response
 * allocator, backend_api/capi/capi_infer.c), embedded first in the requester's
 * object, which outlives every response of its requests.
 */
typedef struct ifd_out_alloc {
  /* Any thread (a backend's, in TRITONBACKEND_OutputBuffer). `req_arg` is
   * the request's out_alloc_arg. On entry *mem_type and *mem_id hold the
   * backend's preference; on success they hold what *buf is. Returns 0
   * with *buf (NULL only for 0 bytes) and *userp, or a negative IFD_E*
   * code with `msg` filled (the backend then gets the error). */
  int (*alloc)(struct ifd_out_alloc *a, void *req_arg, const char *name,
               uint64_t size, int32_t *mem_type, int64_t *mem_id, void **buf,
               void **userp, char *msg, size_t msg_len);
  /* Any thread: hands a buffer alloc gave back, once, when its response is
   * freed. */
  void (*release)(struct ifd_out_alloc *a, void *buf, void *userp,
                  uint64_t size, int32_t mem_type, int64_t mem_id);
  /* Any thread, may be NULL: called once per response, before the first
   * alloc for it (TRITONSERVER_ResponseAllocatorStartFn_t). */
  void (*start)(struct ifd_out_alloc *a, void *req_arg);
  /* Any thread, may be NULL: the memory type the requester would give for
   * `name` (TRITONBACKEND_RequestOutputBufferProperties). */
  void (*query)(struct ifd_out_alloc *a, void *req_arg, const char *name,
                uint64_t *size, int32_t *mem_type, int64_t *mem_id);
} ifd_out_alloc_t;

/**
 * The life of a request, Triton's request state machine. Only the loop
 * thread changes it, and only through ifd_request_set_state, which asserts
 * that each change is one of these:
 *
 *   INIT -> QUEUED              ifd_request_submit hands it to the scheduler
 *   QUEUED -> EXECUTING         the scheduler puts it on the run queue
 *   QUEUED -> FAILED_ENQUEUE    the scheduler refused it at once (the caller
 *                               got the error; no response follows)
 *   QUEUED -> RELEASED          the scheduler answered it with an error
 *   EXECUTING -> RELEASED       its release event reached the loop, or it was
 *                               taken back off the run queue and answered
 *
 * RELEASED and FAILED_ENQUEUE are final.
 */
typedef enum ifd_request_state {
  IFD_REQ_INIT = 0,       /* being filled by the protocol */
  IFD_REQ_QUEUED,         /* with the scheduler */
  IFD_REQ_EXECUTING,      /* on the run queue or an instance thread; back to
                             QUEUED when its backend releases it with
                             RESCHEDULE (an iterative sequence's request) */
  IFD_REQ_RELEASED,       /* released by the backend, or never ran */
  IFD_REQ_FAILED_ENQUEUE, /* refused by the scheduler at submit */
} ifd_request_state_t;

/** An output tensor of a response. */
typedef struct ifd_output {
  const char *name; /* borrowed: response's storage */
  ifd_dtype_t dtype;
  int64_t *shape; /* borrowed: response's storage; ndims entries */
  uint32_t ndims;
  void *buffer; /* owned: malloc'd by TRITONBACKEND_OutputBuffer (or, for a
                   GPU output copied to the host, in the pinned pool: freed
                   with ifd_cuda_host_free), or in the response's pool when
                   buffer_in_pool */
  uint64_t byte_size;
  int buffer_in_pool;     /* buffer is in the response's pool: not free()d */
  int buffer_in_bufpool;  /* buffer is from the shared buffer pool
                             (base/bufpool.h): given back, not free()d */
  int buffer_external;    /* buffer is the client's shared memory (the
                             request's output shm placement): not free()d */
  ifd_out_alloc_t *alloc; /* borrowed: when set, buffer came from the
                             request's out_alloc and goes back through its
                             release (not free()d) */
  void *alloc_userp;      /* the allocator's word for buffer */
  int32_t mem_type;       /* IFD_MEM_* of buffer (CPU unless said) */
  int64_t mem_id;         /* device of buffer when mem_type is IFD_MEM_GPU */
  ifd_response_t *resp;   /* borrowed: the response that holds it */
} ifd_output_t;

struct ifd_response {
  ifd_request_t *req;    /* borrowed: valid until the protocol's unref; the
                            protocol reads it before it unrefs the request */
  int error;             /* 0, or a negative IFD_E* code */
  char *error_msg;       /* owned (in `pool` for a spare): NULL when no error */
  ifd_output_t *outputs; /* borrowed: array in `pool` */
  uint32_t n_outputs, cap_outputs;
  ifd_param_t *params; /* owned array; keys/strings owned by `pool` */
  uint32_t n_params, cap_params;
  uint32_t flags;       /* TRITONSERVER_ResponseCompleteFlag: 1 = FINAL */
  ifd_pool_t pool;      /* owned: names and strings of the response */
  ifd_event_t ready_ev; /* pushed by TRITONBACKEND_ResponseSend */
  int counted;          /* still counted in req->open_responses */
  int discard;          /* deleted unsent by the backend: free on the loop */
  int empty;            /* flags only (ResponseFactorySendFlags): no payload */
  /* Set by a scheduler that builds the response on the loop from buffers
   * it does not own (an ensemble's response points into its steps'
   * responses): then the output buffers and the params array belong to
   * keep's owner, and ifd_response_free leaves them and calls
   * keep->drop(keep) first. NULL otherwise. */
  struct ifd_req_attach *keep; /* borrowed: outlives the response */
  void *api_error; /* in `pool`: the in-process API's TRITONSERVER_Error for
                      error (backend_api/capi/capi_infer.c); NULL until asked */
  int spare;       /* the request's embedded spare: not malloc'd */
  int embedded;    /* the request's resp_slot: not malloc'd */
  ifd_response_t *next; /* list link of whoever holds the response: the
                           scheduler while it holds it back, then the
                           protocol (e.g. a write queue) */
};

/**
 * Something the backend ABI attached to a request that must go with it (the
 * TRITONBACKEND_State objects of backend_api/state/tb_state.c: the ABI has no
 * StateDelete). Embedded first in the attached object; request_free calls
 * `drop` on each, on the loop thread, after the backend released the
 * request.
 */
typedef struct ifd_req_attach {
  struct ifd_req_attach *next;            /* owned: the rest of the list */
  void (*drop)(struct ifd_req_attach *a); /* frees the object holding a */
} ifd_req_attach_t;

/**
 * Where a request the server makes for itself, off the loop, ends (model
 * warmup: backend_api/model/warmup.c). A request whose `sink` is set never
 * reaches the loop: what its backend does with it calls the sink on the
 * backend's thread instead of pushing events, and it is counted in no
 * statistics. Such a request is made with ifd_request_new(NULL) on any
 * thread, holds no model reference (req->model is borrowed), and is freed
 * by its maker with ifd_request_unref once the sink saw it released and
 * none of its responses or response factories is open.
 */
typedef struct ifd_req_sink {
  /* A response the backend sent, or deleted unsent (resp->discard). The
   * sink owns it and ends it with ifd_sink_response_done. */
  void (*response)(struct ifd_req_sink *s, ifd_response_t *resp);
  /* The backend released the request (TRITONBACKEND_RequestRelease). */
  void (*release)(struct ifd_req_sink *s, ifd_request_t *req, uint32_t flags);
  /* A response factory of the request was deleted: the sink closes it
   * (decrements req->open_responses). */
  void (*unheld)(struct ifd_req_sink *s, ifd_request_t *req);
} ifd_req_sink_t;

/* ifd_request_t.cache_state: where the response cache (core/cache.c)
 * stands with the request. */
enum {
  IFD_CACHE_NONE = 0, /* not cached */
  IFD_CACHE_PENDING,  /* a plugin lookup is in flight */
  IFD_CACHE_MISS,     /* ran; its FINAL response is inserted */
  IFD_CACHE_HIT,      /* answered from the cache */
  IFD_CACHE_DONE,     /* a miss whose response was handled */
};

/* Bytes of the request's core-private part (core/request_internal.h
 * checks that ifd_request_core_t fits). */
#define IFD_REQUEST_CORE_BYTES 1424

/* Words of scheduler-private storage in every request. */
#define IFD_REQUEST_SCHED_WORDS 8

struct ifd_request {
  ifd_pool_t pool;         /* owned: every per-request allocation */
  ifd_server_t *server;    /* borrowed: outlives every request */
  ifd_model_t *model;      /* counted reference, set by submit */
  const char *model_name;  /* borrowed: pool */
  int64_t model_version;   /* requested version, -1: the policy's latest */
  const char *id;          /* borrowed: pool; "" when none */
  uint64_t correlation_id; /* 0 when none or when a string id is used */
  const char *correlation_id_str; /* borrowed: pool; NULL when numeric/none */
  uint32_t flags;                 /* IFD_REQUEST_FLAG_* */
  uint32_t priority;              /* 0: the model's default */
  uint64_t timeout_us;            /* 0: none */
  /* Set once by ifd_request_cancel (loop thread), read by any thread
   * (TRITONBACKEND_RequestIsCancelled): the client went away or gave up. */
  atomic_int cancelled;

  ifd_input_t *inputs; /* borrowed: pool */
  uint32_t n_inputs;
  uint32_t cap_inputs; /* room at inputs, for ifd_request_add_input_borrowed;
                          0 when a protocol sized the array exactly */
  ifd_output_req_t *outputs; /* borrowed: pool; n_outputs == 0: all outputs */
  uint32_t n_outputs;
  ifd_param_t *params; /* borrowed: pool */
  uint32_t n_params;

  void *body;          /* owned (malloc'd, or from the shared buffer pool when
                          body_in_bufpool): bytes that inputs point into */
  int body_in_bufpool; /* body goes back with ifd_bufpool_put */

  /* Where outputs go (the in-process API): NULL for buffers of the
   * server's own. out_alloc_arg is passed to its alloc and query. */
  ifd_out_alloc_t *out_alloc; /* borrowed: outlives the request's responses */
  void *out_alloc_arg;
  /* The models whose execute sent this request through the in-process API
   * (BLS), each name followed by a NUL; NULL for a client's request.
   * Borrowed: pool. Read by the instance thread that runs it (a nested
   * call extends it). */
  const char *caller_chain;
  uint32_t caller_chain_len; /* bytes at caller_chain */

  /* Filled by ifd_request_submit. */
  uint64_t batch_size; /* 1st dim when the model batches, else 0 */

  /* Sequence batching: set by the sequence batcher when it dispatches the
   * request (loop thread), read by backend_api on the instance thread. */
  ifd_seq_state_t *seq_state; /* counted reference: the sequence's implicit
                                 state; NULL when the model has none (or for
                                 a null request) */
  ifd_blob_t **blobs;         /* borrowed array in pool; each entry a counted
                                 reference (state inputs point into them), dropped
                                 when the request is freed */
  uint32_t n_blobs;
  int null_req; /* a null request filling an empty batch slot: its responses
                   are dropped and it is not counted in statistics */
  /* Objects the backend attached while it ran the request (any thread
   * pushes, lock-free; dropped by request_free). */
  _Atomic(ifd_req_attach_t *) attached;

  ifd_response_cb on_response; /* loop thread; once per response */
  void *cb_arg;
  /* Loop thread, may be NULL: called once the backend released the request
   * (or a scheduler failed it after queueing), after its FINAL response was
   * delivered and its statistics counted; `success` as counted. The
   * request's timestamps are final then. Not called for a request refused
   * by ifd_request_submit. Triton's request release callback. */
  void (*on_release)(ifd_request_t *req, int success, void *arg);
  /* The scheduler counts this request in statistics itself (an ensemble:
   * its compute times are its steps'); core's release does not. */
  int sched_counts;
  /* An ensemble step: --max-inflight-requests counts its parent only. */
  int ensemble_step;
  /* Set for a request the server runs for itself (see ifd_req_sink_t);
   * NULL for every other request. */
  ifd_req_sink_t *sink; /* borrowed: outlives the request */

  /* Timestamps, ns on CLOCK_MONOTONIC (statistics). The exec/compute ones
   * come from the backend's ReportStatistics when it calls it. */
  uint64_t t_received, t_queued, t_exec_start, t_exec_end;
  uint64_t t_compute_start, t_compute_end;
  int stat_reported; /* the backend called ReportStatistics */
  int stat_success;  /* ...and said the request succeeded */
  int final_error;   /* loop thread: error of the FINAL response */

  /* An ensemble step's: the repository whose model of model_name it means
   * first (--model-namespacing); NULL: the name alone (borrowed: the
   * ensemble's model, which the step's parent request holds). */
  const char *model_namespace;

  /* Scheduler-private: the model's scheduler lays its own per-request
   * state over these words (queue links, deadlines, ...); core never reads
   * them; they are zero when the request is created. Loop thread only. */
  union {
    void *p[IFD_REQUEST_SCHED_WORDS];
    uint64_t u[IFD_REQUEST_SCHED_WORDS];
  } sched_area;
  /* The run queue (the scheduler's hand-off to backend_api): ->next links
   * a batch's requests and, on a batch's first, job_next/job_n link the
   * batches. Read by the instance thread that takes the batch. */
  ifd_request_t *next;
  ifd_request_t *job_next; /* run queue: next batch (on a batch's first) */
  uint32_t job_n;          /* run queue: requests in this batch */

  /* The request's trace (core/trace.h), NULL when it is not traced (almost
   * always). Owned; loop thread. */
  struct ifd_trace *trace;
  /* The front end that received the request (ifd_trace_proto_t), set
   * before the submit; names a trace's receive and send timestamps. */
  int trace_proto;

  /* Core-private: the request's state, references, response accounting,
   * response-cache state and its two embedded responses, laid over these
   * bytes by core/request_internal.h (ifd_request_core_t), which only core/
   * and the library's sched/ and backend_api/ include. Front ends never
   * read them. Last: ifd_request_new zeroes only their first part. */
  _Alignas(8) unsigned char core_area[IFD_REQUEST_CORE_BYTES];
};

#define IFD_RESPONSE_FINAL 1u

/** Allocates a request bound to `server`. NULL on ENOMEM. The caller holds
 *  the protocol's reference. Loop thread. */
ifd_request_t *ifd_request_new(ifd_server_t *server);

/** Adds an input (name copied into the pool, shape copied); returns it or
 *  NULL on ENOMEM. Data is set by the caller afterwards. */
ifd_input_t *ifd_request_add_input(ifd_request_t *req, const char *name,
                                   size_t name_len, ifd_dtype_t dtype,
                                   const int64_t *shape, uint32_t ndims);

/** Makes room for `extra` more inputs (one copy of the array into the
 *  pool at most). 0 or IFD_ENOMEM. */
int ifd_request_reserve_inputs(ifd_request_t *req, uint32_t extra);

/**
 * Adds an input whose name and shape are borrowed, not copied: both must
 * outlive the request and are never written (the schedulers' control and
 * state inputs, named by the model's config, which the request's model
 * reference keeps alive). NULL on ENOMEM.
 */
ifd_input_t *ifd_request_add_input_borrowed(ifd_request_t *req,
                                            const char *name, ifd_dtype_t dtype,
                                            const int64_t *shape,
                                            uint32_t ndims);

/** Adds a requested output; NULL on ENOMEM. */
ifd_output_req_t *ifd_request_add_output(ifd_request_t *req, const char *name,
                                         size_t name_len);

/** Adds a parameter (key/string copied into the pool); NULL on ENOMEM. */
ifd_param_t *ifd_request_add_param(ifd_request_t *req, const char *key,
                                   size_t key_len);

/**
 * Validates the request (state INIT) against its model and queues it. The
 * model is looked up by req->model_name / req->model_version.
 *
 * The contract on ownership, as Triton's scheduler states it for Enqueue:
 * - If 0 is returned, the request is QUEUED and a second reference on it,
 *   the backend's, is transferred to the server: every later outcome, error
 *   or success, arrives as responses through req->on_response (the last one
 *   carries IFD_RESPONSE_FINAL), then on_release; the server drops that
 *   reference itself.
 * - If a negative code is returned (with `err` filled: IFD_ENOTFOUND unknown
 *   model, IFD_EUNAVAIL model/version not ready or shutting down,
 *   IFD_EINVAL bad input, IFD_EOVERLOADED shed, ...), nothing was
 *   transferred: no response and no on_release follow, and the request is
 *   INIT (refused before its scheduler) or FAILED_ENQUEUE (refused by it,
 *   final: a second submit is refused).
 * Either way the caller still holds its own reference and drops it with
 * ifd_request_unref.
 */
int ifd_request_submit(ifd_request_t *req, ifd_errmsg_t *err);

/** Drops the protocol's reference. Loop thread. */
void ifd_request_unref(ifd_request_t *req);

/** Frees req->body as it was allocated (malloc, or the shared buffer pool
 *  when body_in_bufpool) and sets it NULL. Any thread. */
void ifd_request_body_free(ifd_request_t *req);

/** Frees an output's buffer of the server's own: the shared buffer pool's,
 *  or malloc'd or pinned (ifd_cuda_host_free); not one in the response's
 *  pool, the client's shared memory or an allocator's (the caller checks
 *  buffer_in_pool, buffer_external and alloc). */
void ifd_output_buffer_free(ifd_output_t *o);

/** Frees a response delivered by on_response. Loop thread. */
void ifd_response_free(ifd_response_t *resp);

/**
 * Creates an empty response for `req` (any thread: backends call this through
 * TRITONBACKEND_ResponseNew). NULL on ENOMEM.
 */
ifd_response_t *ifd_response_new(ifd_request_t *req);

/**
 * Queues `resp` for delivery to req->on_response on the loop thread (any
 * thread). `error`/`msg` (copied; may be NULL) make it an error response.
 * Ownership of resp passes to the loop.
 */
void ifd_response_send(ifd_response_t *resp, uint32_t flags, int error,
                       const char *msg);

/**
 * Like ifd_response_send, for a response built on the loop thread (an
 * ensemble's): hands it on at once (to the model's hold or on_response)
 * instead of through the completion queue. Loop thread only; not from
 * inside the request's own ifd_request_submit.
 */
void ifd_response_send_now(ifd_response_t *resp, uint32_t flags, int error,
                           const char *msg);

/** Frees an unsent response on the loop thread (TRITONBACKEND_ResponseDelete;
 *  any thread). */
void ifd_response_discard(ifd_response_t *resp);

/**
 * Delivers an error response to a request that will never reach a backend,
 * or whose backend failed it (loop thread): a FINAL response carrying
 * `error` and `msg` (copied; cut at 400 bytes) goes to on_response at once,
 * or to the model's response hold first (see ifd_model_t.hold_response).
 * Never allocates: the response is the request's embedded spare, so the
 * request is answered even with memory exhausted. A request fails at most
 * once (its FINAL response ends it).
 */
void ifd_request_fail(ifd_request_t *req, int error, const char *msg);

/**
 * Moves `req` to state `to` (loop thread only). Asserts that the change is
 * one the state machine allows (see ifd_request_state_t).
 */
void ifd_request_set_state(ifd_request_t *req, ifd_request_state_t to);

/**
 * Delivers a response that the model's response hold kept back (loop
 * thread): on to req->on_response as if it had just arrived. Ownership of
 * `resp` passes on; the reference the hold had on its request is dropped.
 */
void ifd_response_deliver(ifd_response_t *resp);

/** Counts a response factory as an open response (any thread), so a release
 *  waits for it; ifd_request_unhold (loop thread) drops it. */
void ifd_request_hold(ifd_request_t *req);
void ifd_request_unhold(ifd_request_t *req);

/**
 * Fails a queued request that never reached a backend (loop thread, used by
 * schedulers): delivers a FINAL error response and drops the backend's
 * reference in place of a release.
 */
void ifd_request_abort(ifd_request_t *req, int error, const char *msg);

/**
 * Marks the request released by its backend (any thread: pushes an event).
 * If no FINAL response was delivered by then, the loop delivers an error
 * response so that no client waits forever. With
 * TRITONSERVER_REQUEST_RELEASE_RESCHEDULE (2) in `flags` the request is not
 * done: the loop counts the execution the backend reported, and hands the
 * request back to its model's scheduler (ifd_model_ops_t.reschedule) to run
 * again, keeping the backend's reference; a scheduler that refuses answers
 * it with its reason. Its response factories stay valid meanwhile.
 */
void ifd_request_release(ifd_request_t *req, uint32_t flags);

/**
 * ifd_request_release for a request whose "backend" runs on the loop (an
 * ensemble): the release completes at once, or when the request's last open
 * response is delivered. Loop thread only.
 */
void ifd_request_release_now(ifd_request_t *req, uint32_t flags);

/**
 * Cancels `req` (loop thread): the client closed its connection or stream,
 * reset its call, or its deadline passed, or the server is stopping. Sets
 * req->cancelled, which the backend reads through
 * TRITONBACKEND_RequestIsCancelled, and asks the model's scheduler
 * (ifd_model_ops_t.cancel) to drop the request if no instance has taken it
 * yet: a dropped request is answered once with a FINAL IFD_ECANCELLED error
 * (through on_response, possibly before this returns) and counted as a
 * failure. A request already executing runs on until its backend notices
 * or finishes. Idempotent; a request that is not with a scheduler (not yet
 * submitted, or released) only gets the flag. The caller keeps its
 * reference.
 */
void ifd_request_cancel(ifd_request_t *req);

/** Whether `req` was cancelled (any thread). */
static inline int ifd_request_is_cancelled(const ifd_request_t *req) {
  return atomic_load_explicit(&((ifd_request_t *)req)->cancelled,
                              memory_order_relaxed) != 0;
}

/** Ends a response a sink got (any thread): frees it and closes it on its
 *  request (decrements req->open_responses; ifd_req_sink_t). */
void ifd_sink_response_done(ifd_response_t *resp);

/** Finds the output of a response by name; NULL when absent. */
const ifd_output_t *ifd_response_output(const ifd_response_t *resp,
                                        const char *name);

#endif
