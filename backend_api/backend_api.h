/*
 * backend_api/backend_api.h - running models on Triton backends.
 *
 * Loads a model version onto its backend (shared library search, backend and
 * model lifecycles), runs one thread per model instance, and hands batches of
 * requests to TRITONBACKEND_ModelInstanceExecute. The scheduler (sched/) is
 * the only caller: it decides which requests go to which idle instance.
 */
#ifndef IFD_BACKEND_API_BACKEND_API_H
#define IFD_BACKEND_API_BACKEND_API_H

#include <stdint.h>

#include "base/error.h"
#include "core/infer.h"
#include "core/model.h"

/** Called on the loop thread when instance `instance` of `m` has finished
 *  `jobs` executes holding `reqs` requests in all (possibly several at
 *  once). */
typedef void (*ifd_instance_idle_cb)(ifd_model_t *m, uint32_t instance,
                                     uint64_t jobs, uint64_t reqs, void *arg);

/**
 * Loads `m` (config normalized and validated) on its backend: finds and
 * opens libtriton_<backend>.so (model version folder, model folder, then
 * <backend-dir>/<backend>/), runs TRITONBACKEND_Initialize the first time that
 * library is used, TRITONBACKEND_ModelInitialize, then starts one thread per
 * instance, each running TRITONBACKEND_ModelInstanceInitialize on itself.
 * `idle` reports finished executes on the loop (several may come in one
 * call).
 *
 * Blocking: thread pool only. Returns 0 with m->backend_model set, or a
 * negative code with `err` naming what failed; nothing is left loaded then.
 */
int ifd_backend_model_load(ifd_model_t *m, ifd_instance_idle_cb idle,
                           void *idle_arg, ifd_errmsg_t *err);

/**
 * Stops every instance thread (each finishes its current execute, then runs
 * TRITONBACKEND_ModelInstanceFinalize), runs TRITONBACKEND_ModelFinalize and
 * releases the backend (TRITONBACKEND_Finalize and dlclose with its last
 * model). Memory the loop may still reach is freed later, on the loop, after
 * every event the instances pushed; `freed` is called there (may be NULL).
 * Blocking: thread pool only.
 */
void ifd_backend_model_unload(ifd_model_t *m, void (*freed)(void *arg),
                              void *arg);

/**
 * The deadlock rule of in-process calls from inside an execute (BLS,
 * backend_api/capi/capi_infer.c): 1 when `req` carries a call chain that names
 * `m` and every instance of `m` waits on calls it sent, so that `req`
 * could never run; else 0 (also for a model without instances of its own,
 * an ensemble). Loop thread.
 */
int ifd_backend_bls_deadlocks(const ifd_model_t *m, const ifd_request_t *req);

/** Number of instances of a loaded model. */
uint32_t ifd_backend_instance_count(const ifd_model_t *m);

/**
 * Queues `n` requests as one batch on the model's run queue (loop thread);
 * the first free instance thread executes it. The requests belong to the
 * backend side from here on and come back through responses and the release
 * event. Never fails (the requests are linked through their own fields).
 */
void ifd_backend_enqueue(ifd_model_t *m, ifd_request_t **reqs, uint32_t n);

/**
 * Queues `n` requests as one batch for instance `instance` (0-based, in
 * instance order) of a model with sequence_batching, whose instances each
 * take only their own batches (loop thread). Other models, or an instance
 * out of range: same as ifd_backend_enqueue.
 */
void ifd_backend_enqueue_to(ifd_model_t *m, uint32_t instance,
                            ifd_request_t **reqs, uint32_t n);

/** Requests queued on the run queues, not yet taken by an instance. */
uint64_t ifd_backend_queued(const ifd_model_t *m);

/**
 * Takes every queued batch back (loop thread): their requests are returned
 * linked by ->next (NULL when none), for the scheduler to refuse; *jobs is
 * set to the number of batches they formed.
 */
ifd_request_t *ifd_backend_take_queued(ifd_model_t *m, uint64_t *jobs);

/**
 * Takes request `req` back off the shared run queue if no instance has taken
 * its batch yet (loop thread; a cancelled request). Its batch goes on
 * without it; *job_gone is set when it was the batch's only request (the
 * batch is gone). Returns 1 when taken, 0 when not queued there (running,
 * done, or on a targeted model's per-instance queue, whose batches are a
 * sequence slot's and stay whole).
 */
int ifd_backend_take_request(ifd_model_t *m, ifd_request_t *req, int *job_gone);

/* ---- repository agents (repoagent.c) ---------------------------------- */

/* tritonserver's --repoagent-directory default. */
#define IFD_REPOAGENT_DIR_DEFAULT "/opt/tritonserver/repoagents"

struct ifd_repoagent_ops;
/** The repository agents' table for ifd_server_opts_t.repoagent_ops (static;
 *  core/repoagent.h says what each function does). */
const struct ifd_repoagent_ops *ifd_repoagent_ops(void);
/**
 * Opens the Triton cache plugin `<dir>/<name>/libtritoncache_<name>.so` and
 * initializes it with `config_json` (backend_api/cache/tc_cache.c): the opener
 * core's response cache uses (ifd_server_opts_t.cache_open). Thread pool
 * only (dlopen, the plugin's TRITONCACHE_CacheInitialize). Returns 0 and
 * *out (calls that may block), or a negative code with `err` filled.
 */
struct ifd_cache_impl;
int ifd_tc_cache_open(const char *dir, const char *name,
                      const char *config_json, struct ifd_cache_impl *out,
                      ifd_errmsg_t *err);

#endif
