/*
 * core/server.h - the server object: options, model registry, readiness,
 * metadata.
 *
 * The server and its registry belong to the loop thread. Loading and
 * unloading run on libuv's thread pool through the model operations that the
 * caller supplies (sched/ provides them), so core/ depends on no module above
 * it: net -> core <- sched -> backend_api -> core.
 */
#ifndef IFD_CORE_SERVER_H
#define IFD_CORE_SERVER_H

#include <stdint.h>
#include <uv.h>

#include "core/config.h"
#include "core/dtype.h"
#include "base/error.h"
#include "base/event.h"
#include "core/infer.h"
#include "core/ratelimit.h"
#include "core/stats.h"
#include "core/trace.h"

#define IFD_SERVER_NAME \
  "triton" /* tritonserver's default --id: clients check it */
#define IFD_SERVER_VERSION "0.1.0"

/**
 * What the server needs from the layers above core to run a model version.
 * load and unload run on a thread-pool thread and may block; submit runs on
 * the loop thread and must not.
 */
typedef struct ifd_model_ops {
  /** Loads backend, model and instances for `m` (config already normalized
   *  and validated). Returns 0, or a negative code with `err` filled. */
  int (*load)(ifd_model_t *m, ifd_errmsg_t *err);
  /** Finalizes instances and model, releases the backend. Never fails. */
  void (*unload)(ifd_model_t *m);
  /** Queues a validated request (state QUEUED, holding the backend's
   *  reference). If 0 is returned, ownership of that reference is
   *  transferred to the scheduler: it answers the request and ends it
   *  through a release or ifd_request_abort. If a negative code is returned
   *  (with `err` filled), the scheduler kept nothing of the request, sent no
   *  response and changed nothing of its state: the caller still owns it
   *  (ifd_request_submit then moves it to FAILED_ENQUEUE). */
  int (*submit)(ifd_model_t *m, ifd_request_t *req, ifd_errmsg_t *err);
  /** Refuses every request still queued for `m` (loop thread), just before
   *  its unload starts. */
  void (*stop)(ifd_model_t *m);
  /** Requests queued or executing for `m` (for a graceful shutdown). */
  uint64_t (*pending)(const ifd_model_t *m);
  /** Requests waiting in the scheduler, not yet executing (metrics). */
  uint64_t (*queued)(const ifd_model_t *m);
  /** A sequence model's live sequences: holding a slot (*active) and
   *  waiting for one (*backlog). Returns 0, or -1 when `m` has no sequence
   *  batcher. May be NULL. Loop thread (metrics). */
  int (*sequences)(const ifd_model_t *m, uint64_t *active, uint64_t *backlog);
  /** Does `m`'s sequence batcher hold a live sequence with req's
   *  correlation ID? May be NULL. Loop thread (a reload keeps sequences
   *  that began on the old version there until they end). */
  int (*holds_sequence)(const ifd_model_t *m, const ifd_request_t *req);
  /** `req` (of `m`, state QUEUED or EXECUTING) was just cancelled: drop it
   *  if it still waits for an instance, answering it with
   *  ifd_request_abort(IFD_ECANCELLED); leave it if it runs. May be NULL.
   *  Loop thread (ifd_request_cancel). */
  void (*cancel)(ifd_model_t *m, ifd_request_t *req);
  /** Would `m` never serve `req`, a request sent from inside a model's
   *  execute (req->caller_chain set: in-process BLS), because the chain
   *  leads back to `m` and every instance of `m` waits on calls it sent?
   *  May be NULL. Loop thread (ifd_request_submit refuses it then). */
  int (*deadlocks)(const ifd_model_t *m, const ifd_request_t *req);
  /** Its backend released `req` (of `m`, QUEUED again) with
   *  TRITONSERVER_REQUEST_RELEASE_RESCHEDULE: queue it to execute again.
   *  Returns 0, or a negative code with `err` filled (the caller answers
   *  `req` with it). May be NULL (nothing reschedules). Loop thread. */
  int (*reschedule)(ifd_model_t *m, ifd_request_t *req, ifd_errmsg_t *err);
  /** Its backend released `req` (of `m`) for good; called before the
   *  request is answered or freed. May be NULL. Loop thread. */
  void (*released)(ifd_model_t *m, ifd_request_t *req);
} ifd_model_ops_t;

/** --model-control-mode. */
typedef enum ifd_control_mode {
  IFD_CONTROL_NONE = 0, /* load everything at start; load/unload refused */
  IFD_CONTROL_EXPLICIT, /* load only --load-model at start; load/unload API */
  IFD_CONTROL_POLL,     /* load everything, then rescan every poll_secs */
} ifd_control_mode_t;

/** One --backend-config setting (TRITONSERVER_ServerOptionsSetBackendConfig),
 *  passed to backends in TRITONBACKEND_BackendConfig's "cmdline" object. */
typedef struct ifd_backend_setting {
  const char *backend; /* borrowed: "" applies to every backend */
  const char *setting; /* borrowed */
  const char *value;   /* borrowed */
} ifd_backend_setting_t;

struct ifd_cache_impl; /* core/cache.h */

typedef struct ifd_server_opts {
  const char *const *repos; /* borrowed: --model-repository paths */
  size_t n_repos;
  ifd_control_mode_t control_mode; /* --model-control-mode */
  const char *const *load_models;  /* borrowed: --load-model names ("*":
                                      every model); explicit mode only */
  size_t n_load_models;
  int poll_secs;           /* --repository-poll-secs (poll mode; > 0) */
  const char *backend_dir; /* borrowed: --backend-directory */
  const ifd_backend_setting_t *backend_config; /* borrowed: --backend-config
                                                  settings, in order */
  size_t n_backend_config;
  int strict_config;     /* --strict-model-config */
  int exit_on_error;     /* --exit-on-error */
  int strict_readiness;  /* --strict-readiness */
  int exit_timeout_secs; /* --exit-timeout-secs */
  /* --metrics-config histogram_latencies=true: first-response histograms
   * of decoupled models. */
  int histogram_latencies;
  /* --metrics-config summary_latencies=true: latency summaries with
   * `quantiles` (summary_quantiles, else tritonserver's defaults when
   * n is 0). */
  int summary_latencies;
  ifd_quantiles_t quantiles;
  /* --metrics-config counter_latencies=false: no latency counters. */
  int no_counter_latencies;
  int gpu_count; /* GPUs found at start */
  /* Of them, those below --min-supported-compute-capability (bit d: GPU
   * d), ignored as tritonserver ignores them (cuda/gpu.h). */
  uint64_t gpu_skip;
  const ifd_model_ops_t *ops; /* borrowed: static table (sched/'s, set by
                                 the runtime, app/runtime.c) */
  /* --id: the server metadata's name (NULL or "": IFD_SERVER_NAME). */
  const char *server_id; /* borrowed */
  /* --model-config-name: <model>/configs/<name>.pbtxt is read instead of
   * config.pbtxt where it exists (NULL or "": config.pbtxt only). */
  const char *model_config_name; /* borrowed */
  /* --min-supported-compute-capability, passed to backends as
   * "min-compute-capability" (0: tritonserver's default, 6.0). */
  double min_compute_capability;
  /* --model-load-gpu-limit <device>:<fraction>: bit d of gpu_limit_set
   * says GPU d has one, gpu_limit[d] is the fraction of its memory in use
   * past which an instance on it is not created (backend_api/model/instance.c).
   */
  uint64_t gpu_limit_set;
  double gpu_limit[64];
  /* --model-load-retry-count: a failed load is tried again this many
   * times (tritonserver's default 0). */
  unsigned model_load_retry_count;
  /* --max-inflight-requests: requests from clients (not ensemble steps, not
   * BLS requests) submitted and not yet released; one more is refused with
   * IFD_EOVERLOADED. 0: no cap. */
  unsigned max_inflight_requests;
  /* --host-policy <name>,<setting>=<value> settings (borrowed; `backend`
   * holds the policy name). Instances of policy "cpu", "gpu_<device>" or
   * their group's host_policy run on the CPUs that cpu-cores or numa-node
   * give (backend_api/model/loader.c). */
  const ifd_backend_setting_t *host_policy;
  size_t n_host_policy;
  /* Repository agents (model_repository_agents in a config): the folder of
   * their libraries, --repoagent-directory (borrowed; NULL or "": Triton's
   * /opt/tritonserver/repoagents), and the table that runs them (borrowed:
   * static, core/repoagent.h; the runtime sets backend_api's, app/runtime.c;
   * NULL: a config naming agents fails to load). */
  const char *repoagent_dir;
  const struct ifd_repoagent_ops *repoagent_ops;
  /* --model-namespacing: a model name may appear in several repositories,
   * each model in its repository's namespace. */
  int model_namespacing;
  /* --cache-config <name>,<key>=<value> (or --response-cache-byte-size:
   * "local", size=<n>): the response cache (core/cache.h). cache_name NULL:
   * none. Each setting's `backend` holds the cache name (borrowed). */
  const char *cache_name; /* borrowed */
  const ifd_backend_setting_t *cache_config;
  size_t n_cache_config;
  const char *cache_dir; /* borrowed: --cache-directory (NULL: Triton's
                            /opt/tritonserver/caches) */
  /* Opens a cache plugin (core/cache.h's ifd_cache_plugin_open_fn; the
   * runtime sets backend_api's, app/runtime.c). NULL: a cache other than
   * "local" fails the start ("cache plugins cannot be loaded by this
   * program"). */
  int (*cache_open)(const char *dir, const char *name, const char *config_json,
                    struct ifd_cache_impl *out, ifd_errmsg_t *err);
  /* --rate-limit=execution_count: instances whose group names
   * rate_limiter resources execute only while they hold them
   * (core/ratelimit.h); --rate-limit-resource counts (borrowed: copied by
   * ifd_server_new). */
  int rate_limit;
  const ifd_rl_resource_t *rate_limit_resources;
  size_t n_rate_limit_resources;
  /* --trace-config / --trace-*: the start-up trace setting (core/trace.h;
   * file borrowed). Zeroed opts mean tracing OFF. */
  ifd_trace_config_t trace;
} ifd_server_opts_t;

/**
 * Creates a server on `loop`. Copies the options' strings. Returns 0 and
 * *out, or IFD_ENOMEM.
 */
int ifd_server_new(uv_loop_t *loop, const ifd_server_opts_t *opts,
                   ifd_server_t **out, ifd_errmsg_t *err);

/**
 * Scans the repositories and loads every model version the policies select,
 * all on the thread pool. `done` runs on the loop once every load has ended;
 * `failed` counts the models that failed to load, or is -1 when the server
 * could not start at all (its response-cache plugin failed to open, which
 * fails tritonserver's start whatever --exit-on-error says).
 */
void ifd_server_start(ifd_server_t *s,
                      void (*done)(ifd_server_t *s, int failed, void *arg),
                      void *arg);

/**
 * First half of the shutdown: marks the server not ready and waits until no
 * request is queued or executing (and no model load is in flight), or until
 * `deadline_ms` (uv_now() time; 0: exit_timeout_secs from now). Then
 * `drained(s, left, arg)` runs on the loop, `left` counting the requests
 * still in flight (0 unless the deadline passed); it may run before this
 * returns. Requests submitted meanwhile are still served. Call once.
 */
void ifd_server_drain(ifd_server_t *s, uint64_t deadline_ms,
                      void (*drained)(ifd_server_t *s, uint64_t left,
                                      void *arg),
                      void *arg);

/**
 * Second half: unloads every model version on the thread pool, one at a
 * time in reverse order of load completion, refusing what is still queued
 * for it (loads still in flight finish first). The loop never waits on a
 * backend. `done` runs on the loop once every unload has ended and every
 * event the unloads pushed has run; then ifd_server_free may be called.
 */
void ifd_server_unload_all(ifd_server_t *s,
                           void (*done)(ifd_server_t *s, void *arg), void *arg);

/**
 * ifd_server_drain (deadline exit_timeout_secs from now), then
 * ifd_server_unload_all with `done`.
 */
void ifd_server_shutdown(ifd_server_t *s,
                         void (*done)(ifd_server_t *s, void *arg), void *arg);

/** Frees the server. Every model must be unloaded (after unload's done);
 *  events still queued run first. */
void ifd_server_free(ifd_server_t *s);

uv_loop_t *ifd_server_loop(ifd_server_t *s);
/** The completion queue every instance thread and backend pushes to. */
ifd_evq_t *ifd_server_evq(ifd_server_t *s);
/** The loop's cache of free request objects (core/infer.c; loop thread). */
struct ifd_objcache *ifd_server_req_cache(ifd_server_t *s);
/** The server's shared-memory region table (core/shm.h). Loop thread. */
struct ifd_shm *ifd_server_shm(ifd_server_t *s);

/**
 * Runs ev->fn once at the end of this loop iteration, after every I/O
 * callback and right before the loop blocks (loop thread). Used to wake
 * instance threads once for all the requests an iteration queued. `ev`
 * must not be pending already (callers keep a flag).
 */
void ifd_server_at_iteration_end(ifd_server_t *s, ifd_event_t *ev);
const ifd_server_opts_t *ifd_server_opts(const ifd_server_t *s);

/** Why a request was shed (refused with IFD_EOVERLOADED). */
typedef enum ifd_shed_reason {
  IFD_SHED_QUEUE_FULL,   /* its model's queue held max_queue_size */
  IFD_SHED_INFLIGHT_CAP, /* --max-inflight-requests were in flight */
  IFD_SHED_N
} ifd_shed_reason_t;

/** Requests shed since start, by reason (loop thread). */
uint64_t ifd_server_shed_count(const ifd_server_t *s, ifd_shed_reason_t why);

/** Client requests in flight now (what --max-inflight-requests caps). */
uint64_t ifd_server_inflight(const ifd_server_t *s);

/** The server's rate limiter (borrowed: lives as long as the server), or
 *  NULL when --rate-limit is off. Any thread. */
ifd_rl_t *ifd_server_ratelimit(const ifd_server_t *s);

/** Is the calling thread the server's loop thread (the one that called
 *  ifd_server_new)? Any thread. */
int ifd_server_on_loop(const ifd_server_t *s);

/** The object of whoever hosts the server when it is not inferd's
 *  executable: the in-process API's embedded server (backend_api/). NULL
 *  by default. Set once before the server is shared; read by any thread. */
void ifd_server_set_host(ifd_server_t *s, void *host);
void *ifd_server_host(const ifd_server_t *s);

int ifd_server_live(const ifd_server_t *s);
int ifd_server_ready(const ifd_server_t *s);

/* ---- metadata, statistics and the repository index -------------------------
 *
 * Core answers these as plain structs and renders no wire format: net/ writes
 * them as JSON (HTTP) or fills protobuf messages (gRPC) from the same data,
 * so both protocols say the same thing. The model configuration needs no
 * struct of its own: it is the inference.ModelConfig message itself
 * (ifd_model_t.config), which gRPC sends as is and HTTP renders as JSON.
 *
 * Strings and arrays marked "borrowed: registry" point into the model
 * registry: they stay valid while the caller runs on the loop thread and
 * until the loop next completes a load or an unload. Render them before
 * returning to the loop; keep nothing.
 */

/** Server metadata (GET /v2, ServerMetadata). */
typedef struct ifd_server_info {
  const char *name;              /* static */
  const char *version;           /* static */
  const char *const *extensions; /* static: n_extensions names */
  size_t n_extensions;
} ifd_server_info_t;

/** The server's metadata: static storage, or storage the server owns (its
 *  name is --id) that lives as long as `s` (never NULL; `s` may be NULL). */
const ifd_server_info_t *ifd_server_metadata(const ifd_server_t *s);

/**
 * Finds a READY model version. `version` -1 picks the highest ready version.
 * Returns 0 and a borrowed pointer valid until the loop next runs model
 * unloading (take ifd_model_ref to keep it longer), or: IFD_ENOTFOUND
 * ("Request for unknown model: 'm' is not found", or "... version v is not
 * found", or "... has no available versions": nothing READY), IFD_EUNAVAIL
 * (that version known but not ready).
 */
int ifd_server_find_model(ifd_server_t *s, const char *name, size_t name_len,
                          int64_t version, ifd_model_t **out,
                          ifd_errmsg_t *err);

/**
 * ifd_server_find_model for a name an ensemble of repository `repo` uses:
 * with --model-namespacing the model of that name in `repo` when there is
 * one, else the name's only model (several: IFD_EINVAL with Triton's "There
 * are N identifiers of model ..." message). `repo` NULL, or no namespacing:
 * ifd_server_find_model. Loop thread.
 */
int ifd_server_find_model_in(ifd_server_t *s, const char *repo,
                             const char *name, size_t name_len, int64_t version,
                             ifd_model_t **out, ifd_errmsg_t *err);

/**
 * Removes the model `name` from the registry (loop thread): it leaves
 * lookups, readiness and the repository index at once; its versions are
 * freed with their last reference (requests may still hold some). Only a
 * model with nothing in flight can go: no load or config work, and every
 * version UNAVAILABLE (never loaded, failed, or unloaded). Returns 0,
 * IFD_ENOTFOUND (no such model), or IFD_EUNAVAIL (still loading, loaded or
 * unloading), with `err` filled.
 */
int ifd_server_remove_model(ifd_server_t *s, const char *name, size_t name_len,
                            ifd_errmsg_t *err);

/* ---- model control (the model repository extension) ------------------------
 *
 * Loop thread. In explicit mode a model is loaded or reloaded by name; in
 * none and poll mode both calls are refused with Triton's error. A reload
 * builds the new version set beside the serving one; it takes traffic only
 * once every version of it is ready, requests the old one accepted finish
 * there, then the old one unloads. A reload that fails leaves the old set
 * serving. Calls on one model run in arrival order.
 */

/** A file given with a load request (Triton's "file:<version>/<name>"
 *  parameter), already decoded from base64. */
typedef struct ifd_load_file {
  const char *path; /* borrowed: "<version>/<name>", relative to the model
                       folder; no "..", not absolute (checked by the call) */
  size_t path_len;
  const void *data; /* borrowed: the file's contents */
  size_t len;
} ifd_load_file_t;

/** Parameters of a load request. Everything is copied by the call. */
typedef struct ifd_load_params {
  const char *config; /* borrowed: the "config" parameter, a whole model
                         config as JSON replacing config.pbtxt; NULL: none */
  size_t config_len;
  const ifd_load_file_t *files; /* borrowed: n_files entries; with files
                                   the model is loaded from a temporary
                                   folder holding them (removed at unload) */
  size_t n_files;
} ifd_load_params_t;

/** A load in flight, as its caller sees it (opaque). */
typedef struct ifd_load_call ifd_load_call_t;

/**
 * The end of a load (loop thread): rc 0 (loaded, or nothing to do), or a
 * negative code and Triton's message: IFD_EINVAL "load failed for model
 * '<m>': version 1 is at UNAVAILABLE state: <reason>;\n" or "failed to load
 * '<m>', failed to poll from model repository" (unknown model, config
 * override that is not JSON). `msg` is valid during the call only.
 */
typedef void (*ifd_load_cb)(int rc, const char *msg, void *arg);

/**
 * Loads model `name` (and, for an ensemble, the composing models it needs),
 * or reloads it when it is loaded and something changed (its files, or an
 * override is given). Returns 0 when started: `done(arg)` runs later on the
 * loop, never from inside this call; *call (may be NULL) lets the caller
 * cancel that callback with ifd_load_call_forget. Returns a negative code
 * with `err` filled when refused at once: IFD_EUNAVAIL with
 * IFD_MODEL_CONTROL_REFUSED_TEXT in none and poll mode, or while shutting
 * down; IFD_EINVAL for a bad file path; IFD_ENOMEM.
 */
int ifd_server_load_model(ifd_server_t *s, const char *name, size_t name_len,
                          const ifd_load_params_t *params, ifd_load_cb done,
                          void *arg, ifd_load_call_t **call, ifd_errmsg_t *err);

/**
 * Rescans the repositories now (poll mode;
 * TRITONSERVER_ServerPollModelRepository): models added or changed load, models
 * removed unload. Returns 0 when started: `done(arg)` runs on the loop once the
 * scan and every load and unload it caused have ended (never from inside this
 * call). Refused with IFD_EUNAVAIL "polling is disabled" outside poll mode, and
 * while starting, stopping or another such poll is in progress.
 */
int ifd_server_poll(ifd_server_t *s, void (*done)(void *arg), void *arg,
                    ifd_errmsg_t *err);

/**
 * Adds a model repository (explicit mode; TRITONSERVER_ServerRegister-
 * ModelRepository): later loads by name look there too, after the ones
 * given before. The caller checked that it is a directory (no file I/O on
 * the loop). Returns 0, or IFD_EUNSUPPORTED outside explicit mode,
 * IFD_EEXISTS "model repository '<p>' has already been registered",
 * IFD_ENOMEM. Loop thread.
 */
int ifd_server_register_repository(ifd_server_t *s, const char *path,
                                   ifd_errmsg_t *err);

/** A folder of a repository served under another name (Triton's name
 *  mapping). */
typedef struct ifd_repo_mapping {
  const char *subdir; /* borrowed: the folder's name in the repository */
  const char *name;   /* borrowed: the model name it is served under */
} ifd_repo_mapping_t;

/**
 * ifd_server_register_repository with name mappings: a load of maps[i].name
 * reads "<path>/<maps[i].subdir>" (its config's name becomes that name),
 * whatever other repository holds a folder of that name; unregistering the
 * repository drops them. Also IFD_EEXISTS "failed to register '<name>',
 * there is a conflicting mapping for '<name>'" when a registered
 * repository maps that name already, IFD_EINVAL "failed to register
 * '<path>', there is a conflicting mapping for '<name>'" when `maps` names
 * it twice, and IFD_EINVAL for an empty name or subdir. Loop thread.
 */
int ifd_server_register_repository_mapped(ifd_server_t *s, const char *path,
                                          const ifd_repo_mapping_t *maps,
                                          size_t n_maps, ifd_errmsg_t *err);

/**
 * Runs work(arg) on the thread pool (file-system work a loop-side caller
 * needs), then done(0, "", arg) on the loop, or drop(arg) instead when the
 * caller forgot the call (*call, may be NULL; ifd_load_call_forget; drop
 * NULL: nothing). Returns 0, or
 * IFD_EUNAVAIL while shutting down, IFD_ENOMEM (neither then runs).
 */
int ifd_server_offload(ifd_server_t *s, void (*work)(void *arg),
                       ifd_load_cb done, void (*drop)(void *arg), void *arg,
                       ifd_load_call_t **call, ifd_errmsg_t *err);

/**
 * Removes a repository added at start or by ifd_server_register_repository:
 * later loads by name no longer look there; loaded models stay loaded.
 * Returns 0, or IFD_EUNSUPPORTED outside explicit mode, IFD_EINVAL "failed
 * to unregister '<p>', repository not found". Loop thread.
 */
int ifd_server_unregister_repository(ifd_server_t *s, const char *path,
                                     ifd_errmsg_t *err);

/** The caller of a load went away (its connection closed): its `done` will
 *  not run. The load itself goes on. Loop thread. */
void ifd_load_call_forget(ifd_load_call_t *call);

/**
 * A call a front end answers itself, later (several steps of its own, such
 * as SageMaker's multi-model load): the waiting client holds it and may
 * forget it (ifd_load_call_forget) like a load's. NULL when out of memory.
 * Loop thread.
 */
ifd_load_call_t *ifd_load_call_new(ifd_load_cb done, void *arg);

/** Ends a call of ifd_load_call_new: done(rc, msg, arg) unless forgotten,
 *  then frees it. Loop thread. */
void ifd_load_call_end(ifd_load_call_t *call, int rc, const char *msg);

/**
 * Unloads model `name` (explicit mode): queued requests fail with "the
 * model is being unloaded", executing ones finish, then its versions
 * unload (thread pool). Returns 0 once the unload has begun, as Triton
 * answers (an unknown or unloaded model is not an error).
 * `unload_dependents`: also unload the composing models of an ensemble
 * that were loaded for it only (not loaded by name). Returns IFD_EUNAVAIL
 * with IFD_MODEL_CONTROL_REFUSED_TEXT in none and poll mode.
 */
int ifd_server_unload_model(ifd_server_t *s, const char *name, size_t name_len,
                            int unload_dependents, ifd_errmsg_t *err);

/* Triton's refusal of load/unload when --model-control-mode is not explicit
 * (HTTP 503, gRPC UNAVAILABLE). */
#define IFD_MODEL_CONTROL_REFUSED_TEXT \
  "explicit model load / unload is not allowed if polling is enabled"

/** Is the model (version -1: any version) ready? */
int ifd_server_model_ready(ifd_server_t *s, const char *name, size_t name_len,
                           int64_t version);

/** One input or output in the model metadata. */
typedef struct ifd_tensor_info {
  const char *name; /* borrowed: registry (the model's config) */
  ifd_dtype_t dtype;
  const int64_t *shape; /* owned by the ifd_model_info_t: the config's dims,
                           with -1 first when the model batches */
  size_t n_shape;
} ifd_tensor_info_t;

/** Model metadata (GET /v2/models/m[/versions/v], ModelMetadata). */
typedef struct ifd_model_info {
  const char *name;        /* borrowed: registry */
  const char *platform;    /* borrowed: registry; the config's platform, else
                              its backend, else "" (never NULL) */
  const int64_t *versions; /* in `mem`: the model's READY versions,
                              ascending */
  size_t n_versions;
  const ifd_tensor_info_t *inputs; /* in `mem`: config order */
  size_t n_inputs;
  const ifd_tensor_info_t *outputs; /* in `mem`: config order */
  size_t n_outputs;
  void *mem; /* owned: the one block behind the arrays above */
} ifd_model_info_t;

/**
 * Fills *out with the metadata of `m` (a model ifd_server_find_model
 * returned, loop thread). Returns 0, or IFD_ENOMEM (*out then holds
 * nothing to free). On success release it with ifd_model_info_free.
 */
int ifd_server_model_metadata(ifd_server_t *s, const ifd_model_t *m,
                              ifd_model_info_t *out);

/** Frees what ifd_server_model_metadata allocated (out->mem); the struct
 *  itself is the caller's. */
void ifd_model_info_free(ifd_model_info_t *info);

/** The statistics of one model version (statistics extension). */
typedef struct ifd_stats_entry {
  const char *name; /* borrowed: registry */
  int64_t version;
  const ifd_model_stats_t *stats; /* borrowed: registry (the model's
                                     loop-owned counters) */
} ifd_stats_entry_t;

/**
 * Statistics of every READY model version (name NULL), or of one model's
 * READY versions (version -1: all of them), in name then version order.
 * Returns 0 with *out (owned by the caller, free() it; NULL when *n_out is 0)
 * and *n_out, or: IFD_EINVAL "requested model 'm' is not available" /
 * "requested model version v is not available for model 'm'" (Triton
 * answers 400), IFD_ENOMEM.
 */
int ifd_server_stats(ifd_server_t *s, const char *name, size_t name_len,
                     int64_t version, ifd_stats_entry_t **out, size_t *n_out,
                     ifd_errmsg_t *err);

/** Calls fn for every ready model version (loop thread), in name then
 *  version order. */
void ifd_server_foreach_ready(ifd_server_t *s,
                              void (*fn)(ifd_model_t *m, void *arg), void *arg);

/** One row of the repository index. */
typedef struct ifd_index_entry {
  const char *name;   /* borrowed: registry */
  int64_t version;    /* -1: a row for the model as a whole (its config failed,
                         or is still being read): no version to list */
  const char *state;  /* static: "LOADING", "READY", "UNLOADING" or
                         "UNAVAILABLE" (Triton's state names); NULL for a
                         model of the repository never loaded (explicit
                         mode): the row then holds only the name */
  const char *reason; /* borrowed: registry; NULL when there is none */
} ifd_index_entry_t;

/**
 * The repository index: every model version the registry knows (only READY
 * ones when `ready_only`), sorted by name then version. Returns 0 with *out
 * (owned by the caller, free() it; NULL when *n_out is 0) and *n_out, or
 * IFD_ENOMEM.
 */
int ifd_server_repository_index(ifd_server_t *s, int ready_only,
                                ifd_index_entry_t **out, size_t *n_out);

/**
 * Parses a version string from a URL or request ("", "3"): -1 for empty,
 * else a non-negative int64. Returns 0 or IFD_EINVAL.
 */
int ifd_parse_version(const char *s, size_t n, int64_t *out);

#endif
