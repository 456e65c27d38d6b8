/*
 * core/server_internal.h - what the server's files share: the server object
 * (server.c: creation, start-up, shutdown; its runtime context first, see
 * core/runtime.h), the model registry and its state machine (registry*.c:
 * start-up, load, reload, unload, poll; it reports to server.c through
 * s->owner) and the read-only queries (server_query.c: lookup, metadata,
 * statistics, the repository index). Everything here belongs to the loop
 * thread.
 */
#ifndef IFD_CORE_SERVER_INTERNAL_H
#define IFD_CORE_SERVER_INTERNAL_H

#include <stdint.h>
#include <uv.h>

#include "core/model.h"
#include "base/objcache.h"
#include "core/repo.h"
#include "core/runtime.h"
#include "core/shm.h"
#include "core/server.h"
#include "base/strmap.h"

typedef struct reg_op reg_op_t;

/* A temporary model folder (a load with file overrides): shared by the
 * versions loaded from it, removed from disk when the last one is freed. */
typedef struct ifd_model_src {
  int refs;  /* loop thread */
  char *dir; /* owned: the model folder inside the temporary folder */
} ifd_model_src_t;

/* One model name of the registry and everything about it. */
typedef struct model_entry {
  char *name;              /* owned */
  char *path;              /* owned: "<repo>/<name>"; NULL until found */
  char *repo;              /* owned: the repository path; NULL with path */
  ifd_model_t *versions;   /* owned list, ascending version: the serving set,
                              or what its last load or unload left (rows of
                              the index) */
  ifd_model_t *retired;    /* owned list: versions a reload replaced (or a
                              failed reload loaded), still finishing their
                              requests, then unloading */
  char *reason;            /* owned: model-level failure (config, folder), or
                              NULL */
  char *reload_reason;     /* owned: why the last reload failed while the
                              serving set stayed; NULL */
  ifd_model_config_t *cfg; /* owned: the config last read for this model
                              (dependency and cycle checks); NULL */
  uint64_t fp;             /* fingerprint of the files of the last load
                              attempt (0: none) */
  int listed;              /* found by the last repository scan */
  int by_name;             /* loaded by name, not only for an ensemble */
  int override;            /* the serving set came from an override */
  reg_op_t *ops;           /* owned queue: the head runs, the rest wait */
  /* The next entry of the same name (--model-namespacing: the model of
   * that name in another repository); NULL. by_name maps a name to the
   * first; without namespacing a name has one entry. */
  struct model_entry *next_same; /* borrowed: registry */
} model_entry_t;

struct ifd_server {
  ifd_runtime_t rt;  /* first: what the request path reads (core/runtime.h);
                        its opts' strings are the copies below */
  char **repos;      /* owned copies behind opts.repos */
  char *backend_dir; /* owned copy behind opts.backend_dir */
  ifd_backend_setting_t *backend_cfg; /* owned copies behind
                                         opts.backend_config (strings too) */
  char **load_models;                 /* owned copies behind opts.load_models */
  char *server_id;                    /* owned copy behind opts.server_id */
  ifd_backend_setting_t *host_cfg;    /* owned copies behind opts.host_policy
                                         (strings too) */
  char *model_config_name; /* owned copy behind opts.model_config_name */
  ifd_server_info_t info;  /* server metadata; name: server_id */
  ifd_strmap_t by_name;    /* name -> model_entry_t* */
  model_entry_t **entries; /* owned array, sorted by name */
  size_t n_entries;
  int started;          /* ifd_server_start was called */
  unsigned startup_ops; /* start-up scan and loads not ended yet */
  unsigned ops_live;    /* registry operations not ended */
  unsigned jobs;        /* registry thread-pool jobs in flight */
  uint64_t load_seq;
  void (*start_done)(ifd_server_t *, int, void *);
  void *start_arg;
  /* model control */
  uv_timer_t poll_timer; /* embedded: --repository-poll-secs */
  int polling;           /* a poll scan is in flight */
  /* ifd_server_poll's caller: runs once the scan and what it queued end. */
  void (*poll_done)(void *arg);
  void *poll_arg;          /* borrowed: the caller's */
  uv_timer_t retire_timer; /* embedded: checks retired versions */
  unsigned n_retired;      /* READY versions in retired lists */
  /* shutdown */
  uv_timer_t drain_timer;  /* embedded */
  uv_prepare_t iter_end;   /* embedded: runs the at_iteration_end list */
  ifd_event_t *iter_head;  /* loop thread: callbacks for this iteration */
  uint64_t drain_deadline; /* uv_now() ms */
  void (*drained)(ifd_server_t *, uint64_t, void *);
  void *drained_arg;       /* borrowed: the caller's */
  uv_work_t unload_work;   /* embedded: the one shutdown unload in flight */
  ifd_model_t *unloading;  /* borrowed: registry; the model it unloads */
  ifd_event_t unloaded_ev; /* embedded: queued after the last unload */
  int unload_wanted;       /* ifd_server_unload_all waits for the registry */
  void (*stop_done)(ifd_server_t *, void *);
  void *stop_arg; /* borrowed: the caller's */
  int closing_handles;
  int freeing; /* ifd_server_free runs: no more thread-pool jobs */
  /* Owned copy behind opts.repoagent_dir. */
  char *repoagent_dir;
  uv_work_t cache_work;   /* embedded: opens a cache plugin at start */
  ifd_errmsg_t cache_err; /* the plugin's open error */
  /* Name mappings of registered repositories (TRITONSERVER_Server-
   * RegisterModelRepository's, SageMaker's multi-model loads): a load of
   * maps[i].name reads maps[i].path; they go with their repository. */
  struct ifd_repo_map *maps; /* owned array */
  size_t n_maps;
  /* The registry's owner (set by ifd_server_new to server.c's functions):
   * the registry files report to it through these, so they never call up
   * into server.c. */
  const struct ifd_reg_owner *owner; /* borrowed: static */
};

/* What the registry tells the server it belongs to (loop thread). */
typedef struct ifd_reg_owner {
  /* The registry went idle (an operation or job ended): a waiting shutdown
   * may go on. */
  void (*registry_idle)(ifd_server_t *s);
  /* Start-up loading ended. */
  void (*loading_done)(ifd_server_t *s);
} ifd_reg_owner_t;

/* One name mapping: every string owned. */
typedef struct ifd_repo_map {
  char *name; /* the name the folder is served under */
  char *repo; /* the registered repository holding it */
  char *path; /* "<repo>/<subdir>" */
} ifd_repo_map_t;

/** The mapping of `name` (NUL-terminated), or NULL. Loop thread. */
const ifd_repo_map_t *ifd__repo_map_find(const ifd_server_t *s,
                                         const char *name);

/** Drops every mapping (ifd_server_free). */
void ifd__repo_maps_free(ifd_server_t *s);

/* ---- registry.c ---- */

/** The first entry named `name` (with --model-namespacing there may be
 *  more: e->next_same); NULL when none. O(1). */
model_entry_t *ifd__entry_find(ifd_server_t *s, const char *name, size_t len);
/** The entry of `name` in repository `repo` (an entry whose repository is
 *  not known yet matches repo NULL or ""); NULL when none. */
model_entry_t *ifd__entry_find_in(ifd_server_t *s, const char *repo,
                                  const char *name, size_t len);
/** Has the entry left its repository: the last scan did not find its
 *  folder, and nothing of it serves or is queued? Such an entry stays for
 *  its index rows, but names resolve past it (Triton forgets a removed
 *  model's identifier). */
int ifd__entry_gone(const model_entry_t *e);
/** The entry a name means from repository `repo` (an ensemble's, or NULL):
 *  with --model-namespacing the one in `repo` if there is one (and it has
 *  not gone), else the only one of that name that has not gone; *n (may be
 *  NULL) gets how many entries have the name (not gone, when any). NULL
 *  when none, or when the name is ambiguous. */
model_entry_t *ifd__entry_resolve(ifd_server_t *s, const char *repo,
                                  const char *name, size_t len, size_t *n);
/** The entry that holds model version `m`. */
model_entry_t *ifd__entry_of(ifd_server_t *s, const ifd_model_t *m);
/** Frees an entry that has left the registry (its versions' references). */
void ifd__entry_free(model_entry_t *e);
/** Does the entry serve: some version in e->versions is READY? */
int ifd__entry_serves(const model_entry_t *e);
/** Begins the start-up scan (ifd_server_start). */
int ifd__registry_start(ifd_server_t *s);
/** No registry operation or thread-pool job is in flight. */
int ifd__registry_idle(const ifd_server_t *s);
/** Stops the poll timer (shutdown). */
void ifd__registry_stop_polling(ifd_server_t *s);
/** Closes the registry's handles; each close calls `cb`. Returns how many. */
int ifd__registry_close(ifd_server_t *s, uv_close_cb cb);
/** Unloads `m` through ops->unload, its repository agents (if any) told
 *  UNLOAD first and, after the last version of their load, UNLOAD_COMPLETE.
 *  Thread pool only. */
void ifd__reg_agents_unload(ifd_server_t *s, ifd_model_t *m);
/** Initializes the registry's handles (ifd_server_new). */
void ifd__registry_init(ifd_server_t *s);
/** Fills s->info, the server metadata (name: --id when given). */
void ifd__server_info_init(ifd_server_t *s);

/* ---- the registry's owner (server.c, through s->owner) ---- */

/** The registry went idle: tells the server. */
static inline void ifd__server_registry_idle(ifd_server_t *s) {
  s->owner->registry_idle(s);
}
/** Start-up loading ended: tells the server. */
static inline void ifd__server_loading_done(ifd_server_t *s) {
  s->owner->loading_done(s);
}

#endif
