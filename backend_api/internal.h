/*
 * backend_api/internal.h - declarations shared only inside backend_api/.
 *
 * Include this first in every .c file of backend_api: it asks the Triton
 * headers to mark the TRITONSERVER_* and TRITONBACKEND_* functions with
 * default visibility, as they are exported from libtritonserver.so.
 *
 * The files live in one folder per ABI family: server/ (errors and their
 * converters, messages, data types and parameters, logging), request/
 * (requests, inputs, responses, outputs), memory/ (buffer attributes, the
 * memory manager, GPU buffers), metrics/, state/, cache/ (TRITONCACHE),
 * repoagent/ (TRITONREPOAGENT), model/ (the loader, backend and model
 * queries, instance threads, warmup, the BLS gate) and capi/ (the
 * in-process API; capi_server.c still sits at the top).
 */
#ifndef IFD_BACKEND_API_INTERNAL_H
#define IFD_BACKEND_API_INTERNAL_H

#ifndef _COMPILING_TRITONSERVER
#define _COMPILING_TRITONSERVER 1
#endif
#ifndef _COMPILING_TRITONBACKEND
#define _COMPILING_TRITONBACKEND 1
#endif

#include <stddef.h>
#include <stdint.h>

#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

#include "base/error.h"

/* ---- server/tsrv_error.c ----------------------------------------------- */

/* An error is one allocation: the code followed by the NUL-terminated text. */
struct TRITONSERVER_Error {
  TRITONSERVER_Error_Code code;
  char msg[]; /* owned: part of the same allocation */
};

/** A TRITONSERVER_Error with a printf-formatted message (cut at 511
 *  bytes). */
TRITONSERVER_Error *ifd__errorf(TRITONSERVER_Error_Code code, const char *fmt,
                                ...) __attribute__((format(printf, 2, 3)));

/* The converters between TRITONSERVER_Error and IFD codes
 * (server/tsrv_errconv.c). */
/** The IFD code for a TRITONSERVER_Error_Code class. */
int ifd__code_from_class(int cls);
/** Converts a backend's error into an ifd code and its message, Triton's
 *  text unchanged; `what` (the entry point that failed) only goes to the
 *  verbose log. Frees e. */
int ifd__take_error(TRITONSERVER_Error *e, const char *what, ifd_errmsg_t *err);
/** Makes a TRITONSERVER_Error from a negative IFD code and message. */
TRITONSERVER_Error *ifd__error_from(int code, const char *msg);

/* Refuses a NULL or invalid argument as Triton's API functions do. */
#define ARG_CHECK(cond)                                            \
  do {                                                             \
    if (!(cond))                                                   \
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, \
                                   "invalid argument: " #cond);    \
  } while (0)

/* ---- server/tsrv_message.c --------------------------------------------- */

struct TRITONSERVER_Message {
  char *json; /* owned: NUL-terminated, len bytes before the NUL */
  size_t len;
};

/**
 * Wraps a malloc'd JSON string in a message without copying it. On success
 * the message owns `json` (freed by TRITONSERVER_MessageDelete); on failure
 * (NULL, out of memory) `json` is freed here, so the caller never frees it.
 * json[len] must be a NUL byte.
 */
TRITONSERVER_Message *ifd__message_new_owned(char *json, size_t len);

/* ---- server/tsrv_types.c ----------------------------------------------- */

struct TRITONSERVER_Parameter {
  char *name; /* owned */
  TRITONSERVER_ParameterType type;
  union {
    char *s; /* owned (STRING) */
    int64_t i;
    bool b;
    double d;
    struct {
      const void *base; /* borrowed: must outlive the parameter (BYTES) */
      uint64_t size;
    } bytes;
  } v;
};

/* ---- state/tb_state.c, memory/tb_memory.c: sequence state -------------- */

/** Bytes of the buffer StateBuffer last handed out for `state` (0: none). */
uint64_t ifd__state_buffer_size(const TRITONBACKEND_State *state);

/** The read-only buffer attributes of `state`: a view that reads through to
 *  it (CPU memory of id 0, ifd__state_buffer_size bytes), owned by the state
 *  and refused by TRITONSERVER_BufferAttributesDelete. */
TRITONSERVER_BufferAttributes *ifd__state_buffer_attributes(
    const TRITONBACKEND_State *state);

/* ---- backends, models, instances (model/loader.c, model/instance.c) ---- */

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "backend_api/backend_api.h"
#include "core/config.h"
#include "base/event.h"
#include "core/model.h"
#include "core/ratelimit.h"

typedef TRITONSERVER_Error *(*ifd_tb_backend_fn)(TRITONBACKEND_Backend *);
typedef TRITONSERVER_Error *(*ifd_tb_model_fn)(TRITONBACKEND_Model *);
typedef TRITONSERVER_Error *(*ifd_tb_instance_fn)(
    TRITONBACKEND_ModelInstance *);
typedef TRITONSERVER_Error *(*ifd_tb_execute_fn)(TRITONBACKEND_ModelInstance *,
                                                 TRITONBACKEND_Request **,
                                                 const uint32_t);

/* A loaded backend shared library. Created and destroyed under the loader's
 * registry lock; its fields are immutable after TRITONBACKEND_Initialize
 * except state, which belongs to the backend. */
struct TRITONBACKEND_Backend {
  char *name; /* owned: "identity" */
  char *path; /* owned: resolved path of the .so */
  char *dir;  /* owned: folder of the .so (artifacts) */
  void *dl;   /* owned: dlopen handle */
  int refs;   /* guarded by the loader's registry lock */
  ifd_tb_backend_fn init, fini;
  ifd_tb_model_fn model_init, model_fini;
  ifd_tb_instance_fn inst_init, inst_fini;
  ifd_tb_execute_fn execute;
  void *state; /* the backend's, through BackendSetState */
  TRITONBACKEND_ExecutionPolicy policy;
  TRITONSERVER_Message *config; /* owned: {"cmdline":{...}} */
  TRITONBACKEND_Backend *next;  /* registry list, under the lock */
  /* TRITONBACKEND_GetBackendAttribute's answer, asked once right after
   * TRITONBACKEND_Initialize (immutable afterwards): its preferred
   * instance groups, most preferred first, and whether instances of a
   * model may initialize concurrently (else one after the other). */
  ifd_pref_group_t *pref_groups; /* owned, each gpus owned */
  size_t n_pref_groups;
  int parallel_instances;
};

/* What a backend fills in TRITONBACKEND_GetBackendAttribute: taken over by
 * its TRITONBACKEND_Backend when the call succeeds. */
struct TRITONBACKEND_BackendAttribute {
  ifd_pref_group_t *groups; /* owned, each gpus owned */
  size_t n_groups;
  int parallel;
};

/** Frees a list of preferred groups (their gpus too). */
void ifd__pref_groups_free(ifd_pref_group_t *g, size_t n);

/* A queue of batches: the first request of each batch, linked by job_next.
 * Guarded by the model's feed mutex. */
typedef struct ifd__runq {
  ifd_request_t *head, *tail;
  uint64_t n_reqs;  /* requests in the queue */
  uint64_t n_jobs;  /* batches in the queue */
  unsigned waiting; /* instance threads sleeping on cv */
  pthread_cond_t cv;
} ifd__runq_t;

/* A model's run queues: batches handed over by the scheduler. Most models
 * have one queue that whichever instance thread is free takes from (as
 * Triton's instances share their model's queue); a targeted model (the
 * sequence batcher: a batch belongs to the instance that holds its
 * sequences' slots) gives every instance its own queue instead. The only
 * state shared by the loop and instance threads. */
typedef struct ifd__feed {
  pthread_mutex_t mu;
  ifd__runq_t q; /* guarded by mu: the shared queue */
  int stop;      /* guarded by mu: instance threads exit when it is empty */
} ifd__feed_t;

/* How many of a model's instances wait on in-process requests they sent
 * (BLS), for the deadlock rule of capi_infer.c (model/bls_gate.c). Counted: the
 * model holds one reference and every request one of its instances sent holds
 * one until its release, so a request that outlives the model that sent it (an
 * asynchronous call) still finds its counters. */
typedef struct ifd__bls_gate {
  atomic_int refs;
  atomic_uint waiting;  /* instances with at least one call out */
  uint32_t n_instances; /* fixed */
  atomic_uint out[];    /* per instance: calls out */
} ifd__bls_gate_t;

/** A gate for `n` instances with one reference, or NULL (ENOMEM). */
ifd__bls_gate_t *ifd__bls_gate_new(uint32_t n);
/** Drops a reference (any thread); the last frees it. NULL is ignored. */
void ifd__bls_gate_unref(ifd__bls_gate_t *g);
/** Instance i sent a request (any thread): takes a reference, counts the
 *  call out. */
void ifd__bls_gate_enter(ifd__bls_gate_t *g, uint32_t i);
/** The request instance i sent was released: counts it back, drops the
 *  reference ifd__bls_gate_enter took. */
void ifd__bls_gate_leave(ifd__bls_gate_t *g, uint32_t i);

struct TRITONBACKEND_Model {
  ifd_model_t *model;    /* borrowed: owns this object */
  ifd__bls_gate_t *gate; /* counted: BLS calls out of its instances */
  ifd__feed_t feed;      /* embedded */
  ifd_event_t wake_ev;   /* loop: wakes a sleeping instance once per
                            loop iteration that queued work */
  int wake_pending;      /* loop thread: wake_ev is scheduled */
  int coalesce;          /* instance threads may defer wake-ups */
  int targeted; /* every instance takes from its own queue (in->q) only;
                   fixed before the instances start */
  _Atomic uint64_t exec_ns;       /* instance threads: recent execute cost,
                                     a moving average (a hint for the loop) */
  TRITONBACKEND_Backend *backend; /* counted reference */
  void *state;                    /* the backend's, through ModelSetState */
  int strict;                     /* no auto-complete */
  TRITONBACKEND_ModelInstance *instances; /* owned array */
  uint32_t n_instances;
  ifd_instance_idle_cb idle; /* loop thread */
  void *idle_arg;
  atomic_int unloading; /* set (pool thread) before instances stop; the
                           loop reads it in idle events */
  ifd_event_t free_ev;  /* frees this object on the loop */
  void (*freed)(void *);
  void *freed_arg;
  /* model_warmup: the samples every instance runs before it reports its
   * initialization (warmup.c); built and freed by ifd__instances_start. */
  struct ifd__warmup *warmup; /* owned; NULL: none */
  /* TRITONBACKEND_ModelReportMemoryUsage's latest report, by statistics
   * slot (core/stats.h); guarded by tb_model.c's memory lock. */
  uint64_t mem_reported[IFD_STATS_MEM_SLOTS];
  /* --rate-limit=execution_count: the server's limiter (borrowed: outlives
   * the model), NULL when off. Instances with in->rl take the run queue's
   * batches only once it grants their resources (instance.c). */
  ifd_rl_t *rl;
};

/* One ReportBatchStatistics call, carried to the loop by the idle event. */
typedef struct ifd__batch_report {
  uint64_t batch_size, exec_start, compute_start, compute_end, exec_end;
} ifd__batch_report_t;

/* NUMA nodes a --host-policy numa-node may name: 0 .. this - 1. */
#define IFD_MAX_NUMA_NODES 1024

struct TRITONBACKEND_ModelInstance {
  TRITONBACKEND_Model *model; /* borrowed: owns the instance */
  uint32_t index;
  char *name; /* owned */
  TRITONSERVER_InstanceGroupKind kind;
  int32_t device_id;
  int passive;
  TRITONSERVER_Message *host_policy; /* owned: JSON {"<policy>":{settings}} */
  /* --host-policy cpu-cores / numa-node of its policy: the thread runs on
   * `cpus` when `pin` (set before it starts). */
  cpu_set_t cpus;
  int pin;
  /* --host-policy numa-node: the thread's memory is bound to node
   * numa_bind - 1 (set_mempolicy MPOL_BIND, as Triton's numa-node); 0 for
   * none. */
  int numa_bind;
  void *state; /* the backend's */
  pthread_t thread;
  int started;        /* thread created */
  int inline_run;     /* no thread: ifd__instance_step() runs it (tests) */
  pthread_mutex_t mu; /* init handshake and batch reports */
  pthread_cond_t cv;
  ifd__runq_t q;       /* guarded by model->feed.mu: this instance's own
                          queue (targeted models only) */
  ifd_request_t **job; /* owned by the thread: the batch being run */
  uint32_t cap_job;
  int init_state;               /* 0 running init, 1 ok, -1 failed */
  TRITONSERVER_Error *init_err; /* owned until the loader takes it */
  /* Finished work, reported to the loop by idle_ev: pushed only when not
   * already queued, so a thread that finishes several jobs before the loop
   * runs reports them with one event. */
  ifd_event_t idle_ev;
  atomic_int idle_queued;
  atomic_uint_fast64_t done_jobs, done_reqs;
  ifd__batch_report_t *reports; /* guarded by mu: batch statistics */
  uint32_t n_reports, cap_reports;
  atomic_int not_ready; /* any thread: INFERD_ModelInstanceSetReady(false) */
  /* TRITONBACKEND_ModelInstanceReportMemoryUsage's latest report, by
   * statistics slot; guarded by tb_model.c's memory lock. */
  uint64_t mem_reported[IFD_STATS_MEM_SLOTS];
  /* Model warmup (warmup.c). */
  int warmup_failed; /* init_err is warmup's: reported without prefix */
  struct ifd__warm_sink *warm; /* owned: the sink of its warmup requests */
  /* The rate limiter's record of this instance: registered while the model
   * is loaded (owned by the limiter; loader.c registers and unregisters
   * it), NULL when not rate limited: the instance then runs as without a
   * limiter. */
  ifd_rl_user_t *rl;
  const Inference__ModelRateLimiter *rl_config; /* borrowed: its group's
                                                   rate_limiter, or NULL */
};

/** Acquires (opening and initializing on first use) the backend library at
 *  `path`. Blocking. Returns 0 and *out (counted reference). */
int ifd__backend_acquire(const char *name, const char *path,
                         const ifd_server_opts_t *o,
                         TRITONBACKEND_Backend **out, ifd_errmsg_t *err);
/** Drops a reference; the last one finalizes and closes the library. */
void ifd__backend_release(TRITONBACKEND_Backend *b);

/** Starts instance threads and waits for their initialization. */
int ifd__instances_start(TRITONBACKEND_Model *bm, ifd_errmsg_t *err);
/** Stops and joins every started instance thread (finalizing each). */
void ifd__instances_stop(TRITONBACKEND_Model *bm);

/**
 * The worker seam for tests, as SQLite runs its workers inline: when set
 * before ifd__instances_start(), instances get no thread. Their initialize
 * runs on the caller, ifd__instance_step() runs their jobs on the caller,
 * and ifd__instances_stop() finalizes them there, so a test drives the run
 * queue deterministically. Never set in the server.
 */
extern int ifd__instances_inline;

/**
 * Runs the head batch of the instance's queue (targeted models) or the
 * model's shared queue on the calling thread as instance `in`
 * (an inline instance), then pays any wake-up of the loop it left owed.
 * Returns 1 when a batch ran, 0 when the queue was empty, IFD_ENOMEM when
 * the batch could not be taken (it stays queued).
 */
int ifd__instance_step(TRITONBACKEND_ModelInstance *in);

/** Executes `reqs` (n) on instance `in` from its own thread, as a batch of
 *  the run queue is (an execute error answers and releases them). */
void ifd__instance_execute(TRITONBACKEND_ModelInstance *in,
                           ifd_request_t **reqs, uint32_t n);

/* ---- model/warmup.c: model warmup -------------------------------------- */

typedef struct ifd__warmup ifd__warmup_t;

/**
 * Builds the model's warmup samples from its config's model_warmup into
 * bm->warmup (NULL when there is none to run). Blocking (reads the files
 * under <model>/warmup/): the loading thread. Returns 0, or a negative code
 * with `err` holding Triton's text (a variable-size dim, no data type set,
 * a missing or short data file).
 */
int ifd__warmup_prepare(TRITONBACKEND_Model *bm, ifd_errmsg_t *err);

/**
 * Runs every warmup sample on instance `in` (from its own thread, after its
 * initialization): each sample `count` times, its batch_size requests
 * executed together; responses are discarded, statistics recorded for
 * ifd__warmup_count.
 * Returns NULL, or the error that fails the model's load ("failed to run
 * warmup sample '<name>': <errors>"), owned by the caller.
 */
TRITONSERVER_Error *ifd__warmup_run(TRITONBACKEND_ModelInstance *in);

/** Frees samples built by ifd__warmup_prepare (NULL is ignored). */
void ifd__warmup_free(ifd__warmup_t *w);

/**
 * Counts the statistics the backend reported for the instance's warmup
 * requests and executions in its model's statistics, as Triton does. The
 * loading thread, once every instance warmed up and before the version is
 * published (nothing else reads its statistics yet).
 */
void ifd__warmup_count(TRITONBACKEND_ModelInstance *in);

/** Frees the instance's warmup sink (with the instance). */
void ifd__warmup_instance_free(TRITONBACKEND_ModelInstance *in);

/* ---- memory/tb_gpu.c: GPU buffers (any backend thread, never the loop) - */

/** Gives output `o` a buffer of `n` bytes on GPU `device` (its pool, else
 *  cudaMalloc). Returns 1 when it did, 0 when it cannot (no GPU, no such
 *  device, no memory): the caller then hands out CPU memory. */
int ifd__gpu_output_buffer(ifd_output_t *o, uint64_t n, int64_t device);

/** Copies every GPU output buffer of `resp` to host memory (on the calling
 *  thread's stream when bound) and frees the device buffers. Returns 0, or
 *  IFD_EINTERNAL with `msg` filled (every GPU buffer freed then). */
int ifd__gpu_outputs_to_host(ifd_response_t *resp, char *msg, size_t msg_len);

/** Frees the GPU output buffers of a response that will not be sent. */
void ifd__gpu_outputs_free(ifd_response_t *resp);

/**
 * A copy of host input `in` of `req` on GPU `device`, made once per request
 * and input (later calls return the same copy) and kept until the backend
 * releases the request. Returns 1 with *out set, 0 when no copy applies
 * (no GPU, no such device, the input already on a GPU: *out NULL, the
 * caller returns the input as it is), or a negative code with `err`.
 */
int ifd__gpu_input_copy(ifd_request_t *req, const ifd_input_t *in,
                        int64_t device, const void **out, ifd_errmsg_t *err);

/** The instance whose execute the calling thread is in (NULL: none), and
 *  the batch it runs (*reqs, *n; may be NULL). */
TRITONBACKEND_ModelInstance *ifd__instance_current(ifd_request_t ***reqs,
                                                   uint32_t *n);

/** The request of the batch the calling instance thread is executing that
 *  holds `input`, or NULL (another thread, or not a request's input). */
ifd_request_t *ifd__instance_request_of(const ifd_input_t *input);

/** Frees the request's device input copies (TRITONBACKEND_RequestRelease,
 *  on the backend's thread). */
void ifd__gpu_inputs_release(ifd_request_t *req);

/** Records a batch report for the loop (any thread). 0 or IFD_ENOMEM. */
int ifd__instance_report_batch(TRITONBACKEND_ModelInstance *in,
                               const ifd__batch_report_t *r);
/** Moves pending batch reports into the model's statistics (loop). */
void ifd__instance_flush_reports(TRITONBACKEND_ModelInstance *in);

/* ---- the in-process API (capi/capi_loop.c, capi/capi_infer.c; app/embed.c) */

#include "core/server.h"

/* A TRITONSERVER_Server is the core's server itself (ifd_server_t): either
 * the one inferd's executable created, which TRITONBACKEND_ModelServer hands
 * to backends (BLS), or one TRITONSERVER_ServerNew created on a loop thread
 * of its own (app/embed.c; ifd_server_host() is then its ifd__capi_host_t).
 * Every function that touches loop-owned state runs there through
 * ifd__capi_run or ifd__capi_post. */
#define SRV(server) ((ifd_server_t *)(server))

/* What the embedded entry (app/embed.c) keeps for a server it created,
 * first in its own object (ifd_server_host() points at it). */
typedef struct ifd__capi_host {
  atomic_int closed;  /* set once TRITONSERVER_ServerStop began: no more
                         calls are posted to the loop */
  atomic_int posting; /* posts between their check of `closed` and their
                         push: Stop waits for none before its own event, so
                         nothing is pushed after the server is freed */
  struct ifd_metrics *metrics; /* owned by app/embed.c, loop thread only,
                                  until its metrics stop; NULL: no gauges
                                  sampled */
  int metrics_on;              /* the options turned metrics on */
} ifd__capi_host_t;

/* A call from any thread that runs on the server's loop. Zero it, set fn
 * and arg, then ifd__capi_run. */
typedef struct ifd__capi_call ifd__capi_call_t;
struct ifd__capi_call {
  ifd_event_t ev; /* embedded: posted to the loop */
  /* Loop thread: does the work, then calls ifd__capi_call_done once, now
   * or later (from another loop callback: a model load). When on_loop is
   * set the caller runs on the loop itself (a response callback) and
   * cannot wait: fn must finish inline, or fail at once. */
  void (*fn)(ifd__capi_call_t *c);
  ifd_server_t *server;    /* borrowed: set by ifd__capi_run */
  void *arg;               /* borrowed: the caller's */
  int on_loop;             /* set by ifd__capi_run */
  TRITONSERVER_Error *err; /* the result: handed to the caller */
  pthread_mutex_t mu;      /* guards done (initialized by ifd__capi_run) */
  pthread_cond_t cv;
  int done;
};

/**
 * Runs c->fn on the loop of `server` and waits until it calls
 * ifd__capi_call_done. On the loop thread itself c->fn runs inline
 * (c->on_loop set). Returns the error fn gave (the caller owns it), or an
 * UNAVAILABLE error when the server takes no more calls (stopped).
 */
TRITONSERVER_Error *ifd__capi_run(TRITONSERVER_Server *server,
                                  ifd__capi_call_t *c);

/** Ends a call (loop thread): `err` (may be NULL) becomes its result and
 *  the caller wakes. `c` must not be touched afterwards. */
void ifd__capi_call_done(ifd__capi_call_t *c, TRITONSERVER_Error *err);

/** Posts `ev` to the loop of `server` (any thread; never blocks). Returns
 *  NULL, or an UNAVAILABLE error when the server takes no more calls. */
TRITONSERVER_Error *ifd__capi_post(TRITONSERVER_Server *server,
                                   ifd_event_t *ev);

/** Does `server` take calls (not stopped)? Any thread. */
int ifd__capi_open(TRITONSERVER_Server *server);

/* ---- capi/capi_options.c: TRITONSERVER_ServerOptions ------------------- */

#include "cuda/cuda_mem.h"

/* A (group, setting, value) triple: --backend-config and --host-policy. */
typedef struct ifd__capi_setting {
  char *group;   /* owned: backend or policy name */
  char *setting; /* owned */
  char *value;   /* owned */
} ifd__capi_setting_t;

/* What an application sets before TRITONSERVER_ServerNew; its defaults are
 * Triton's (TRITONSERVER_ServerOptionsNew). Not thread-safe, as in Triton. */
struct TRITONSERVER_ServerOptions {
  char **repos; /* owned: n_repos paths, each owned */
  size_t n_repos;
  ifd_control_mode_t control_mode;
  char **startup_models; /* owned: n_startup_models names, each owned */
  size_t n_startup_models;
  int strict_config;
  int exit_on_error;
  int strict_readiness;
  unsigned exit_timeout_secs;
  char *backend_dir; /* owned; NULL: the library's own backends/ folder */
  int log_info, log_warn, log_error, log_verbose;
  int log_format;          /* ifd_log_format_t */
  char *log_file;          /* owned: "" or NULL for stderr */
  char *server_id;         /* owned: the metadata's name; NULL for "inferd" */
  char *model_config_name; /* owned: configs/<name>.pbtxt; NULL: none */
  double min_compute_capability; /* 0: 6.0 */
  unsigned model_load_retry_count;
  int metrics;     /* ServerMetrics answers; gauges sampled */
  int gpu_metrics; /* the GPU gauges among them */
  uint64_t metrics_interval_ms;
  int histogram_latencies;   /* metrics config histogram_latencies */
  int summary_latencies;     /* metrics config summary_latencies */
  uint64_t gpu_limit_set;    /* SetModelLoadDeviceLimit: bit d for GPU d */
  double gpu_limit[64];      /* its fraction, by device */
  ifd_quantiles_t quantiles; /* metrics config summary_quantiles (n 0:
                                tritonserver's defaults) */
  int no_counter_latencies;  /* metrics config counter_latencies=false */
  ifd_cuda_mem_opts_t cuda_mem;
  ifd__capi_setting_t *backend_config; /* owned: n_backend_config entries */
  size_t n_backend_config;
  ifd__capi_setting_t *host_policy; /* owned: n_host_policy entries */
  size_t n_host_policy;
  char *repoagent_dir; /* owned; NULL: /opt/tritonserver/repoagents */
  int model_namespacing;
  /* The response cache: SetCacheConfig's settings (each group the cache
   * name), or SetResponseCacheByteSize's local,size=<n>. */
  ifd__capi_setting_t *cache_config; /* owned: n_cache_config entries */
  size_t n_cache_config;
  char *cache_name;          /* owned; NULL: no cache */
  char *cache_dir;           /* owned; NULL: /opt/tritonserver/caches */
  int rate_limit;            /* TRITONSERVER_RATE_LIMIT_EXEC_COUNT */
  ifd_rl_resource_t *rl_res; /* owned: n_rl_res entries, names owned */
  size_t n_rl_res;
};

/** The metrics of `s` (loop thread): NULL when no gauges are sampled (the
 *  executable's server, whose gauges its metrics service holds); *enabled
 *  is 0 when the options turned metrics off (capi_loop.c reads the
 *  ifd__capi_host_t). */
struct ifd_metrics *ifd__capi_metrics(ifd_server_t *s, int *enabled);

/** The default backend directory: `backends` beside the folder of
 *  libtritonserver.so (build/lib -> build/backends), or beside the library
 *  itself. Writes into out (n bytes); returns 0, or -1 when unknown. */
int ifd__capi_default_backend_dir(char *out, size_t n);

/* ---- in-process requests (capi/capi_request.c, capi/capi_infer.c) ------ */

/* One buffer an application appended to an input. */
typedef struct ifd__capi_buf {
  const void *base; /* borrowed: the application's, until the release
                       callback */
  size_t size;
  int32_t mem_type; /* IFD_MEM_* */
  int64_t mem_id;
} ifd__capi_buf_t;

typedef struct ifd__capi_input {
  char *name; /* owned */
  TRITONSERVER_DataType dtype;
  int64_t *shape; /* owned: ndims entries */
  uint32_t ndims;
  int raw;               /* AddRawInput: type and shape from the config */
  ifd__capi_buf_t *bufs; /* owned array */
  uint32_t n_bufs, cap_bufs;
} ifd__capi_input_t;

typedef struct ifd__capi_param {
  char *key; /* owned */
  TRITONSERVER_ParameterType type;
  union {
    char *s; /* owned */
    int64_t i;
    bool b;
    double d;
  } v;
} ifd__capi_param_t;

/* An application's request. The application owns it and changes it only
 * while it is not in flight (between TRITONSERVER_ServerInferAsync and the
 * release callback the server reads it, on the loop). */
struct TRITONSERVER_InferenceRequest {
  ifd_server_t *server; /* borrowed: outlives the request */
  char *model;          /* owned */
  int64_t version;
  char *id;          /* owned: "" when unset */
  uint32_t flags;    /* TRITONSERVER_RequestFlag */
  uint64_t corr_id;  /* numeric correlation ID */
  char *corr_id_str; /* owned: string correlation ID, or NULL */
  uint64_t priority;
  uint64_t timeout_us;
  ifd__capi_input_t *inputs; /* owned array */
  uint32_t n_inputs, cap_inputs;
  char **outputs; /* owned array of owned names */
  uint32_t n_outputs, cap_outputs;
  ifd__capi_param_t *params; /* owned array */
  uint32_t n_params, cap_params;
  TRITONSERVER_InferenceRequestReleaseFn_t release_fn;
  void *release_userp;
  TRITONSERVER_ResponseAllocator *allocator; /* borrowed: the app's */
  void *alloc_userp;
  TRITONSERVER_InferenceResponseCompleteFn_t response_fn;
  void *response_userp;
  /* Sent from an instance thread (BLS): the models of the call chain
   * (NUL-separated names; owned), and the sender's gate and instance. */
  char *chain;
  uint32_t chain_len;
  ifd__bls_gate_t *gate; /* counted while in flight; NULL: not BLS */
  uint32_t gate_index;
  atomic_int inflight;   /* between InferAsync and the release callback */
  atomic_int cancelled;  /* TRITONSERVER_InferenceRequestCancel was called */
  ifd_event_t submit_ev; /* embedded: ServerInferAsync's post */
  ifd_request_t *live;   /* loop thread: the core request in flight */
  /* ServerInferAsync's trace until submit hands it to the core request
   * (borrowed: the application's; NULL when none). */
  TRITONSERVER_InferenceTrace *trace;
};

/* ---- capi/capi_trace.c ---- */

/** Traces `req` into the application's `trace` (loop thread, before the
 *  submit). 0, or IFD_ENOMEM (the trace is then still the caller's). */
int ifd__capi_trace_attach(ifd_request_t *req,
                           TRITONSERVER_InferenceTrace *trace);
/** Hands `trace` back to the application through its release callback. */
void ifd__capi_trace_refused(TRITONSERVER_InferenceTrace *trace);
/** The application's trace of `req`, or NULL (any thread; the request
 *  must be alive). */
TRITONSERVER_InferenceTrace *ifd__capi_trace_of(const ifd_request_t *req);

/* An application's response allocator. `base` first: core calls it. */
struct TRITONSERVER_ResponseAllocator {
  ifd_out_alloc_t base;
  TRITONSERVER_ResponseAllocatorAllocFn_t alloc_fn;
  TRITONSERVER_ResponseAllocatorReleaseFn_t release_fn;
  TRITONSERVER_ResponseAllocatorStartFn_t start_fn;           /* may be NULL */
  TRITONSERVER_ResponseAllocatorQueryFn_t query_fn;           /* may be NULL */
  TRITONSERVER_ResponseAllocatorBufferAttributesFn_t attr_fn; /* may be NULL */
};

/** Frees everything a request owns but the object (RequestDelete). */
void ifd__capi_request_clear(TRITONSERVER_InferenceRequest *r);

#endif
