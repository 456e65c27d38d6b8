/*
 * core/registry_agents.c - the registry's side of repository agents
 * (model_repository_agents in a config; the agents themselves are
 * backend_api/repoagent/repoagent.c's, reached through
 * ifd_server_opts_t.repoagent_ops).
 *
 * A load runs its agents' LOAD in prepare (thread pool), before the version
 * list is read, so an agent that moves the model's files moves what loads.
 * Settle tells them LOAD_COMPLETE or LOAD_FAIL before the caller hears the
 * answer. The versions that loaded share the chain (ifd_model_agents_t): the
 * first to unload tells UNLOAD, the last ends it (UNLOAD_COMPLETE,
 * ModelFinalize). Everything here runs on the thread pool.
 */
#include <stdlib.h>

#include "base/log.h"
#include "core/registry_internal.h"

void ifd__reg_agents_unref(ifd_model_agents_t *ma) {
  if (atomic_fetch_sub(&ma->live, 1) != 1) return;
  ma->ops->release(ma->chain);
  free(ma);
}

void ifd__reg_agents_unload(ifd_server_t *s, ifd_model_t *m) {
  ifd_model_agents_t *ma = m->agents;
  if (ma != NULL) ma->ops->unloading(ma->chain);
  s->rt.opts.ops->unload(m);
  if (ma == NULL) return;
  m->agents = NULL;
  ifd__reg_agents_unref(ma);
}
