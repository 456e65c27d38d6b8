/*
 * sched/sched.h - schedulers: which request runs on which model instance.
 *
 * Schedulers live on the loop thread: queues, timers and instance
 * availability need no lock. They hand batches to instance threads through
 * backend_api/ and learn about idle instances through its idle callback.
 */
#ifndef IFD_SCHED_SCHED_H
#define IFD_SCHED_SCHED_H

#include "core/server.h"

/** The model operations the server runs models with: load/unload through
 *  backend_api and submit through the model's scheduler. Static table; no
 *  side effect (the runtime, app/runtime.c, puts it in the server's
 *  options). */
const ifd_model_ops_t *ifd_sched_model_ops(void);

#endif
