/*
 * app/runtime.c - the one wiring point (app/runtime.h): fills a server's
 * options with the tables of the layers above core, then creates it.
 */
#include "app/runtime.h"

#include "backend_api/backend_api.h"
#include "sched/sched.h"

int ifd_runtime_new(uv_loop_t *loop, const ifd_server_opts_t *opts,
                    ifd_server_t **out, ifd_errmsg_t *err) {
  ifd_server_opts_t so = *opts;

  /* Models load, run and unload through the schedulers (which dispatch to
   * backend_api's instances); cache plugins and repository agents are
   * Triton libraries that backend_api loads. */
  so.ops = ifd_sched_model_ops();
  so.cache_open = ifd_tc_cache_open;
  so.repoagent_ops = ifd_repoagent_ops();
  return ifd_server_new(loop, &so, out, err);
}

void ifd_runtime_free(ifd_server_t *s) {
  ifd_server_free(s); /* nothing of the wiring outlives the server */
}
