/*
 * core/repoagent.h - what the registry asks of repository agents
 * (model_repository_agents in a model's config; Triton's TRITONREPOAGENT_*
 * API). The agents themselves live at the ABI edge
 * (backend_api/repoagent/repoagent.c), which hands the server this table
 * (ifd_server_opts_t.repoagent_ops); core only sees an opaque chain: the agent
 * models of one load of one model, in the config's order.
 *
 * Every function here may block (dlopen, the agents' own code, file copies):
 * thread pool only, never the loop.
 */
#ifndef IFD_CORE_REPOAGENT_H
#define IFD_CORE_REPOAGENT_H

#include "core/config.h"
#include "base/error.h"

typedef struct ifd_repoagent_ops {
  /**
   * Runs TRITONREPOAGENT_ACTION_LOAD of every agent `cfg` names, in order,
   * for model `name` whose files are at `location`; the agent libraries are
   * `<agent_dir>/<agent>/libtritonrepoagent_<agent>.so`, loaded the first
   * time one is needed. Each agent sees the location the one before left.
   * Returns 0, *chain (owned by the caller: end it with release) and
   * *final_location (where the model loads from; owned by the chain, valid
   * until release). On failure (an unknown agent, an agent's error) every
   * agent model made so far has heard LOAD_FAIL and ended, nothing is
   * returned, and `err` holds the agent's message.
   */
  int (*load)(const char *agent_dir, const char *name,
              const ifd_model_config_t *cfg, const ifd_config_opts_t *copts,
              const char *location, void **chain, const char **final_location,
              ifd_errmsg_t *err);
  /** LOAD_COMPLETE (ok) or LOAD_FAIL (!ok) to every agent of the chain. */
  void (*loaded)(void *chain, int ok);
  /** UNLOAD to every agent, once: later calls (one per version that
   *  unloads, from any pool thread) wait for the first and do nothing. */
  void (*unloading)(void *chain);
  /** Ends the chain: what its agents still have to hear (UNLOAD_COMPLETE,
   *  or LOAD_FAIL if the load never completed), ModelFinalize, the folders
   *  they acquired removed; an agent no model uses any more is finalized
   *  and closed. Frees `chain`. */
  void (*release)(void *chain);
} ifd_repoagent_ops_t;

#endif
