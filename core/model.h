/*
 * core/model.h - one loaded model version, as the layers above core see it.
 *
 * A model version is created by the server's registry, loaded on the thread
 * pool through ifd_model_ops_t, and then read by any thread: its config and
 * names never change once loaded. Its counters and queues belong to the loop.
 */
#ifndef IFD_CORE_MODEL_H
#define IFD_CORE_MODEL_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/config.h"
#include "core/infer.h"
#include "core/server.h"
#include "core/stats.h"

typedef enum ifd_model_state {
  IFD_MODEL_LOADING = 0,
  IFD_MODEL_READY,
  IFD_MODEL_UNLOADING,
  IFD_MODEL_UNAVAILABLE, /* failed to load, or unloaded */
} ifd_model_state_t;

struct ifd_model {
  ifd_server_t *server; /* borrowed: outlives the model */
  char *name;           /* owned */
  int64_t version;
  char *path;                 /* owned: "<repo>/<name>" */
  char *repo;                 /* owned: the repository path */
  ifd_model_config_t *config; /* owned; immutable once loaded */
  /* The instance-group fields its config left to the defaults: a backend's
   * preferred groups apply there when the version loads. */
  ifd_group_defaults_t group_defaults;
  ifd_model_state_t state; /* loop thread only */
  char *reason;            /* owned: why UNAVAILABLE; NULL otherwise */
  int refs;                /* loop thread only */
  /* Frees the version when its last reference goes (ifd_model_unref); set
   * by its creator, the registry (core/registry.c), so this module never
   * calls up into it. */
  void (*free_fn)(ifd_model_t *m);

  /* Owned by the layers above core (set by ops->load, freed by ops->unload). */
  void *backend_model; /* backend_api: its model object */
  void *sched;         /* sched: the scheduler instance */

  ifd_model_stats_t stats; /* loop thread only */

  /* Instances their backend marked unable to serve (any thread; inferd's
   * INFERD_ModelInstanceSetReady): the version reports not ready while
   * this is above 0, and still queues requests. */
  atomic_int unready_instances;

  /* Set by the scheduler (by ops->load, cleared before it is freed) when
   * it must see this model's responses before the clients do, e.g. to pass
   * them on in submission order (preserve_ordering); NULL: every response
   * goes to its request's on_response as it arrives. The loop hands each
   * response of the model to it, with a reference on its request, and the
   * hold passes it on later with ifd_response_deliver. Loop thread only. */
  void (*hold_response)(ifd_model_t *m, ifd_response_t *resp);

  struct ifd_model_src *src; /* counted: the temporary folder its files
                                came from (a load with file overrides),
                                removed with the last version; NULL */
  uint64_t load_seq;         /* order of load completion (unload reverses) */
  /* Shared by the versions of one load: the repository agents that load
   * ran (core/registry_agents.c), told UNLOAD around this version's
   * unload; NULL when its config names none. */
  struct ifd_model_agents *agents;
  ifd_model_t *next_version; /* registry link, loop thread only */
  /* The classification labels of each config output (config->n_output
   * entries, zeroed for an output without a label_filename); NULL when no
   * output has one. Read on the thread pool before the load, then
   * immutable. */
  struct ifd_labels *labels; /* owned */
};

/**
 * Thread pool, before the backend loads `m`: reads the label_filename of
 * each output of its config (a path in the model's folder) into m->labels.
 * Returns 0, or the error of a file that cannot be read (Triton fails the
 * load too).
 */
int ifd__model_load_labels(ifd_model_t *m, ifd_errmsg_t *err);
/** Frees m->labels. */
void ifd__model_free_labels(ifd_model_t *m);

/** Takes a reference (loop thread). */
void ifd_model_ref(ifd_model_t *m);
/** Drops one (loop thread); an unloaded model is freed with the last one. */
void ifd_model_unref(ifd_model_t *m);

/**
 * Validates a request against the model config as Triton does and computes
 * req->batch_size: known input names, every non-optional input present, data
 * types, shapes (batch dim 1..max_batch_size when batching, -1 dims wildcard),
 * byte sizes (fixed types exact; BYTES well-formed for the element count),
 * requested outputs known. Returns 0 or IFD_EINVAL with Triton's message in
 * substance (names the tensor, the model, expected and got).
 */
int ifd_model_validate_request(const ifd_model_t *m, ifd_request_t *req,
                               ifd_errmsg_t *err);

#endif
