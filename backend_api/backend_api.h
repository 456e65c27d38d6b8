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

#include "core/error.h"
#include "core/infer.h"
#include "core/model.h"

/** Called on the loop thread when instance `index` of `m` has finished an
 *  execute and can take the next batch. */
typedef void (*ifd_instance_idle_cb)(ifd_model_t *m, uint32_t index, void *arg);

/**
 * Loads `m` (config normalized and validated) on its backend: finds and
 * opens libtriton_<backend>.so (model version folder, model folder, then
 * <backend-dir>/<backend>/), runs TRITONBACKEND_Initialize the first time that
 * library is used, TRITONBACKEND_ModelInitialize, then starts one thread per
 * instance, each running TRITONBACKEND_ModelInstanceInitialize on itself.
 * `idle` is called for each instance after each execute.
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

/** Number of instances of a loaded model. */
uint32_t ifd_backend_instance_count(const ifd_model_t *m);

/**
 * Hands `n` requests (one batch) to idle instance `index` (loop thread). The
 * array is copied; the requests belong to the backend from here on and come
 * back through responses and the release event.
 * Returns 0, or IFD_ENOMEM (nothing was handed over).
 */
int ifd_backend_execute(ifd_model_t *m, uint32_t index, ifd_request_t **reqs,
                        uint32_t n);

/** Monotonic clock in ns, the clock of every TRITONBACKEND_* timestamp. */
uint64_t ifd_now_ns(void);

#endif
