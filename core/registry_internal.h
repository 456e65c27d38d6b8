/*
 * core/registry_internal.h - what the registry's files share: an operation
 * on a model entry (load or unload), a job on the thread pool, the helpers
 * registry_scan.c (start-up, polling, repository registration) calls in
 * registry.c (operations), the queries registry.c asks of registry_entry.c
 * and registry_scan.c, and the jobs' work functions (registry_work.c, on
 * the thread pool). Loop thread only, like the registry, but for those.
 */
#ifndef IFD_CORE_REGISTRY_INTERNAL_H
#define IFD_CORE_REGISTRY_INTERNAL_H

#include <stdatomic.h>

#include "core/ensemble_check.h"
#include "core/repoagent.h"
#include "core/server_internal.h"

typedef enum op_kind { OP_LOAD, OP_UNLOAD } op_kind_t;

struct ifd_load_call {
  ifd_load_cb done; /* NULL once forgotten */
  void *arg;        /* borrowed: the caller's */
};

struct reg_op {
  reg_op_t *next;       /* the entry's queue */
  ifd_server_t *server; /* borrowed */
  model_entry_t *entry; /* borrowed: registry */
  op_kind_t kind;
  int started;
  int by_name;           /* named by a request (not only a dependency) */
  int dep_only;          /* a dependency: nothing to do if it serves */
  int unload_dependents; /* OP_UNLOAD */
  int startup;           /* counts toward the start-up loading */
  char *config;          /* owned: the config override (JSON), or NULL */
  size_t config_len;
  ifd_repo_file_t *files; /* owned: one block with the paths and bytes */
  size_t n_files;
  ifd_load_call_t *call; /* owned: the caller's callback, or NULL */
  reg_op_t **waiters;    /* owned array: borrowed ops waiting for this one */
  size_t n_waiters;
  unsigned deps; /* dependency loads this op waits for */
  /* What prepare found (owned until handed on). */
  ifd_model_config_t *cfg;
  ifd_group_defaults_t group_defaults; /* what normalizing cfg filled in */
  int64_t *versions;
  size_t n_versions;
  ifd_model_src_t *src; /* counted: the temporary folder, or NULL */
  uint64_t fp;
  ifd_model_t *staged; /* owned list: versions being loaded */
  unsigned loading;    /* of them, loads in flight (or unloads) */
  /* Repository agents (model_repository_agents): the chain prepare ran
   * (owned until settle hands it to the versions), and where it left the
   * model's files (borrowed: the chain's; NULL: where they were). */
  void *agents;
  const char *agent_loc;
  struct ifd_model_agents *ma; /* borrowed: the chain once shared */
  int end_rc;    /* settle's answer, kept while the agents hear it */
  char *end_msg; /* owned: its message, or NULL */
};

/* A job on the thread pool for an op or a model. */
typedef struct reg_job {
  uv_work_t work;       /* embedded */
  ifd_server_t *server; /* borrowed */
  reg_op_t *op;         /* borrowed: the op it works for, or NULL */
  ifd_model_t *model;   /* borrowed: registry; load/unload target */
  char *name;           /* owned copy: prepare */
  char *path;           /* owned: prepare in and out */
  char *repo;           /* owned: prepare out */
  char **repos;         /* owned: prepare's copy of the repository list
                           (the loop may change it meanwhile) */
  size_t n_repos;
  uint64_t same_fp; /* prepare: the serving set's fingerprint when a load
                       of the same files would change nothing (its agents
                       are not run then); 0 otherwise */
  void *agents;     /* owned: a chain of repository agents to end, or NULL */
  struct ifd_model_agents *ma; /* borrowed: settle's shared agents */
  int agents_ok;               /* settle: the load completed */
  int mapped;     /* prepare: the folder is served under a mapped name (its
                     config's name becomes the model's) */
  ifd_event_t ev; /* embedded: unload completion, after its events */
  int rc;
  ifd_errmsg_t err;
} reg_job_t;

/* The repository agents of one load, shared by the versions it loaded. */
typedef struct ifd_model_agents {
  atomic_uint live; /* READY versions not unloaded yet, plus settle's
                       hold while the agents hear how the load went; the
                       last to drop it ends the chain (any pool thread) */
  void *chain;      /* owned: core/repoagent.h */
  const ifd_repoagent_ops_t *ops; /* borrowed: static */
} ifd_model_agents_t;

/** Drops one `live` count of `ma`; the last ends the chain and frees `ma`.
 *  Thread pool only (the agents run). */
void ifd__reg_agents_unref(ifd_model_agents_t *ma);

/* The longest message a load answers with. */
#define MSG_MAX 2048

/** Copies `val` into *slot (freeing what was there; NULL clears it). */
void ifd__reg_set_str(char **slot, const char *val);

/** Adds an entry for `name` (path and repo may be NULL: not found yet);
 * NULL when out of memory. */
model_entry_t *ifd__reg_entry_add(ifd_server_t *s, const char *name,
                                  const char *path, const char *repo);

/** Copies the server's repository list (for a pool job). 0 or IFD_ENOMEM. */
int ifd__reg_repos_copy(const ifd_server_t *s, char ***out, size_t *n);
void ifd__reg_repos_free(char **a, size_t n);

/** A new operation of `kind` on `e`, not queued yet; NULL when out of
 * memory. */
reg_op_t *ifd__reg_op_new(ifd_server_t *s, model_entry_t *e, op_kind_t kind);

/** Queues `op` on its entry; it starts when it reaches the head. */
void ifd__reg_op_enqueue(reg_op_t *op);

/** Frees an operation that was never queued, or has ended. */
void ifd__reg_op_free(reg_op_t *op);

/** Takes `e` out of the registry and frees it. */
void ifd__reg_entry_remove(ifd_server_t *s, model_entry_t *e);

/** Drops the registry's reference on every model of a version list. */
void ifd__reg_unref_list(ifd_model_t *m);

/* ---- registry_entry.c: queries of an operation ---- */

/** Is `c` (may be NULL) an ensemble's config? */
int ifd__reg_is_ensemble(const ifd_model_config_t *c);
/** Is the set that serves `e` the one `op` found on disk (same versions,
 *  all ready, same files, no override either way)? */
int ifd__reg_unchanged(const model_entry_t *e, const reg_op_t *op);
/** The fingerprint a load of `e` by `op` would find unchanged (the serving
 *  set, every version READY, no override either way), else 0. */
uint64_t ifd__reg_unchanged_fp(const model_entry_t *e, const reg_op_t *op);

/* Whom an ensemble's checks ask (core/ensemble_check.h's callbacks): the
 * server, and the ensemble's repository (its composing models are looked
 * for there first). */
typedef struct ifd_reg_ens_ctx {
  ifd_server_t *s;  /* borrowed */
  const char *repo; /* borrowed: the ensemble entry's */
} ifd_reg_ens_ctx_t;
/** The config of the ensemble `name` means (arg: an ifd_reg_ens_ctx_t),
 *  or NULL. */
const ifd_model_config_t *ifd__reg_ens_config_of(void *arg, const char *name);
/** The READY version of `name` an ensemble step asks for (version -1: the
 *  highest), for ifd_ensemble_check (arg: an ifd_reg_ens_ctx_t). */
ifd_ens_status_t ifd__reg_ens_lookup(void *arg, const char *name,
                                     int64_t version,
                                     const ifd_model_config_t **cfg);

/* ---- registry_scan.c: where a load reads ---- */

/** Explicit mode: where a load of `e` reads its folder now. A name mapping
 *  decides (*mapped set); else a folder found in a repository no longer
 *  registered is looked for again. 0, or IFD_ENOMEM. */
int ifd__reg_locate(ifd_server_t *s, model_entry_t *e, int *mapped);

/* ---- registry_work.c: the jobs' work functions (thread pool) ---- */

/** A LOAD's first step: finds the folder (j->path NULL), writes override
 *  files to a temporary folder, reads and validates the config into
 *  op->cfg, runs the repository agents, picks op->versions; j->rc, j->err. */
void ifd__reg_prepare_work(uv_work_t *w);
/** Loads version j->model (its label files, then ops->load, retried
 *  --model-load-retry-count times); j->rc, j->err. */
void ifd__reg_load_work(uv_work_t *w);
/** Unloads version j->model, its repository agents told around it. */
void ifd__reg_unload_work(uv_work_t *w);
/** Tells j->ma's agents how the load went (LOAD_COMPLETE or LOAD_FAIL). */
void ifd__reg_agents_loaded_work(uv_work_t *w);
/** Ends j->agents, a chain of repository agents no version took. */
void ifd__reg_agents_end_work(uv_work_t *w);
/** Removes the temporary folder j->path. */
void ifd__reg_rm_work(uv_work_t *w);

#endif
