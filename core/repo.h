/*
 * core/repo.h - model repository layout: model folders and version policies.
 *
 * A repository is a folder of model folders `<repo>/<model>/`, each holding
 * config.pbtxt and numeric version folders `<repo>/<model>/<version>/`. These
 * functions read the file system and block: thread pool only.
 */
#ifndef IFD_CORE_REPO_H
#define IFD_CORE_REPO_H

#include <stdint.h>

#include "core/config.h"
#include "base/error.h"

/** One model folder found in a repository scan. */
typedef struct ifd_repo_entry {
  char *name; /* owned: the folder name, i.e. the model name */
  char *path; /* owned: "<repo>/<name>" */
} ifd_repo_entry_t;

typedef struct ifd_repo_scan {
  ifd_repo_entry_t *entries; /* owned; sorted by name */
  size_t count;
  /* owned: names that appear in more than one repository. Triton refuses to
   * load such a model; the caller reports each as failed. */
  char **duplicates;
  size_t n_duplicates;
} ifd_repo_scan_t;

/**
 * Lists the model folders of every repository in `repos` (`n` paths). A folder
 * is a model folder when it is a directory whose name does not start with '.'.
 * A repository path that cannot be read is an IFD_EIO error naming it.
 * Returns 0 and fills *out (free with ifd_repo_scan_free).
 */
int ifd_repo_scan(const char *const *repos, size_t n, ifd_repo_scan_t *out,
                  ifd_errmsg_t *err);

/** ifd_repo_scan; with `namespacing` (--model-namespacing) a name found in
 *  several repositories is one entry per repository (sorted by name, then
 *  path), and no name is a duplicate. */
int ifd_repo_scan_ns(const char *const *repos, size_t n, int namespacing,
                     ifd_repo_scan_t *out, ifd_errmsg_t *err);

void ifd_repo_scan_free(ifd_repo_scan_t *scan);

/**
 * Lists the numeric version folders of `model_path` (names made only of
 * digits that fit int64 and are > 0... Triton accepts 0 too: accept >= 0),
 * applies the config's version_policy (latest{num_versions} - the N largest;
 * all; specific{versions} - those listed that exist) and returns the versions
 * to load in ascending order. *out is malloc'd (caller frees), *n its length;
 * an empty result is not an error (the caller reports "no version to load").
 */
int ifd_repo_versions(const char *model_path, const ifd_model_config_t *cfg,
                      int64_t **out, size_t *n, ifd_errmsg_t *err);

/**
 * Finds the folder of model `name` in the repositories: 0 with *path
 * ("<repo>/<name>") and *repo (a copy of the repository path), both malloc'd;
 * IFD_ENOTFOUND when no repository holds it; IFD_EEXISTS when more than one
 * does (Triton loads none of them). Blocking.
 */
int ifd_repo_find(const char *const *repos, size_t n, const char *name,
                  char **path, char **repo, ifd_errmsg_t *err);

/**
 * A fingerprint of everything under `model_path` (names, sizes and
 * modification times of every file and folder, up to 8 levels and 100000
 * entries): it changes when a file of the model is added, removed or
 * rewritten. 0 when the folder cannot be read. Blocking.
 */
uint64_t ifd_repo_fingerprint(const char *model_path);

/** One file to write into a temporary model folder. */
typedef struct ifd_repo_file {
  const char *path; /* "<version>/<name>" or "<name>", relative */
  size_t path_len;
  const void *data;
  size_t len;
} ifd_repo_file_t;

/**
 * Checks a relative file path given by a client: not empty, not absolute,
 * no "." or ".." component, no empty component, no NUL, at most 1024 bytes.
 * Returns 0 or IFD_EINVAL with a message naming it.
 */
int ifd_repo_check_relpath(const char *path, size_t len, ifd_errmsg_t *err);

/**
 * Creates a temporary model folder "<tmp>/inferd-model-XXXXXX/<name>" (tmp:
 * $TMPDIR, else /tmp) holding `files` (sub-folders created as needed).
 * Returns 0 and *dir (the model folder, malloc'd), or a negative code with
 * nothing left on disk. Blocking.
 */
int ifd_repo_write_temp(const char *name, const ifd_repo_file_t *files,
                        size_t n, char **dir, ifd_errmsg_t *err);

/**
 * Creates an empty temporary folder "<tmp>/inferd-agent-XXXXXX" (tmp:
 * $TMPDIR, else /tmp) for a repository agent. Returns 0 and *dir (malloc'd)
 * or IFD_EIO / IFD_ENOMEM. Blocking.
 */
int ifd_repo_agent_temp(char **dir, ifd_errmsg_t *err);

/** Removes a folder made by ifd_repo_agent_temp with everything in it (any
 *  other path is left alone). Blocking. */
void ifd_repo_agent_temp_remove(const char *dir);

/** Removes a folder made by ifd_repo_write_temp (the model folder and its
 *  "inferd-model-XXXXXX" parent) with everything in it. Blocking. */
void ifd_repo_remove_temp(const char *dir);

#endif
