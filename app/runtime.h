/*
 * app/runtime.h - the one wiring point: the server as both entries build
 * it, inferd's executable (app/main.c) and the embedded library's
 * TRITONSERVER_ServerNew (app/embed.c).
 *
 * Core runs models, opens cache plugins and runs repository agents through
 * tables it is given in its options and never includes the layers that
 * provide them. The runtime fills them in, here and nowhere else: the
 * scheduler's model operations (sched/), the cache-plugin opener and the
 * repository agents (backend_api/). Nothing is installed process-wide: two
 * servers in one process are wired alike and independently.
 */
#ifndef IFD_APP_RUNTIME_H
#define IFD_APP_RUNTIME_H

#include <uv.h>

#include "base/error.h"
#include "core/server.h"

/**
 * Creates a server on `loop` (the loop thread calls it) from `opts` with
 * the layers above core wired in: opts->ops, opts->cache_open and
 * opts->repoagent_ops are replaced by sched/'s and backend_api's. `opts` is
 * read only during the call (ifd_server_new copies what it keeps). Returns
 * 0 and *out (owned by the caller, who frees it with ifd_runtime_free), or
 * a negative code with `err` filled.
 */
int ifd_runtime_new(uv_loop_t *loop, const ifd_server_opts_t *opts,
                    ifd_server_t **out, ifd_errmsg_t *err);

/** Frees a server made by ifd_runtime_new, on its loop thread, once every
 *  model is unloaded (ifd_server_unload_all's done): ifd_server_free's
 *  contract. NULL is ignored. */
void ifd_runtime_free(ifd_server_t *s);

#endif
