/*
 * backend_api/backends/python/env.c - custom execution environments
 * (Triton's EXECUTION_ENV_PATH model parameter).
 *
 * The parameter names a conda-pack style archive (.tar.gz, or any tar GNU
 * tar reads) or a folder holding an unpacked environment;
 * "$$TRITON_MODEL_DIRECTORY" in it stands for the model's folder. An
 * archive is extracted once per backend into a folder of its own under a
 * cache made with mkdtemp ($TMPDIR or /tmp, "inferd_python_env_XXXXXX"),
 * again when the archive's modification time changes, and the cache goes
 * when the backend finalizes, as Triton's python backend does. Extraction
 * runs `tar` (GNU tar refuses members that would land outside the folder)
 * on the model's load thread.
 *
 * As in Triton, the environment must hold bin/activate: the stub starts
 * through bash, which sources it, with <env>/lib first in LD_LIBRARY_PATH
 * (a libpython there is the one the stub loads); the stub (stub.c) takes
 * that entry out again, and takes the environment's Python from
 * INFERD_PYTHON_EXECUTION_ENV: its whole interpreter when it holds the
 * stub's Python version's standard library, else its site-packages ahead
 * of the system's.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

extern char **environ;

#define MODEL_DIR_VAR "$$TRITON_MODEL_DIRECTORY"

/* One archive extracted into the cache. */
typedef struct env_entry {
  char *archive; /* owned: its canonical path */
  time_t mtime;  /* the archive's, when extracted */
  char *dir;     /* owned: where it was extracted */
} env_entry_t;

static pthread_mutex_t env_mu = PTHREAD_MUTEX_INITIALIZER;
static char *cache_dir;      /* owned, guarded by env_mu: NULL until used */
static env_entry_t *entries; /* owned, guarded by env_mu */
static size_t n_entries, cap_entries, n_made;

/* The parameter's value with $$TRITON_MODEL_DIRECTORY replaced; NULL when
 * the configuration has none. */
static char *env_param(const char *config, size_t len, const char *model_dir) {
  json_t *j = json_loadb(config, len, 0, NULL);
  json_t *p =
      json_object_get(json_object_get(j, "parameters"), "EXECUTION_ENV_PATH");
  const char *v = json_string_value(json_object_get(p, "string_value"));
  char *out = NULL;
  if (v != NULL && v[0] != '\0') {
    const char *at = strstr(v, MODEL_DIR_VAR);
    if (at == NULL) {
      out = strdup(v);
    } else if (asprintf(&out, "%.*s%s%s", (int)(at - v), v, model_dir,
                        at + strlen(MODEL_DIR_VAR)) < 0) {
      out = NULL;
    }
  }
  json_decref(j);
  return out;
}

static int rm_one(const char *path, const struct stat *sb, int flag,
                  struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

static void rm_tree(const char *dir) {
  nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Runs tar to extract `archive` into `dir` (which exists). */
static TRITONSERVER_Error *untar(const char *archive, const char *dir) {
  char *argv[] = {"tar", "-xf",       (char *)archive,
                  "-C",  (char *)dir, "--no-same-owner",
                  NULL};
  pid_t pid;
  int st = 0, rc = posix_spawnp(&pid, "tar", NULL, NULL, argv, environ);
  if (rc != 0)
    return ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL,
                          "cannot run tar to extract the execution "
                          "environment '%s': %s",
                          archive, strerror(rc));
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    return ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL,
                          "failed to extract the execution environment '%s' "
                          "(tar exit status %d)",
                          archive, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  return NULL;
}

/* The folder `archive` (canonical) is extracted in, extracting it when it
 * is not yet or changed since. env_mu held. */
static TRITONSERVER_Error *extracted(const char *archive, time_t mtime,
                                     char **dir) {
  env_entry_t *e = NULL;
  for (size_t i = 0; i < n_entries; i++)
    if (strcmp(entries[i].archive, archive) == 0) e = &entries[i];
  if (e != NULL && e->mtime == mtime) {
    *dir = strdup(e->dir);
    return *dir != NULL ? NULL
                        : TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                                "out of memory");
  }
  if (cache_dir == NULL) {
    const char *tmp = getenv("TMPDIR");
    char *tmpl = NULL;
    if (asprintf(&tmpl, "%s/inferd_python_env_XXXXXX",
                 tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp") < 0)
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                   "out of memory");
    if (mkdtemp(tmpl) == NULL) {
      TRITONSERVER_Error *err = ifd__py_errorf(
          TRITONSERVER_ERROR_INTERNAL,
          "Failed to create temporary directory for Python environments "
          "(%s: %s).",
          tmpl, strerror(errno));
      free(tmpl);
      return err;
    }
    cache_dir = tmpl;
  }
  if (e == NULL && n_entries == cap_entries) {
    size_t cap = cap_entries ? cap_entries * 2 : 4;
    env_entry_t *a = realloc(entries, cap * sizeof(*a));
    if (a == NULL)
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                   "out of memory");
    entries = a;
    cap_entries = cap;
  }
  char *d = NULL;
  if (e != NULL) {
    /* The archive changed: extract it afresh into the same folder. */
    rm_tree(e->dir);
    d = e->dir;
    e->dir = NULL;
  } else if (asprintf(&d, "%s/%zu", cache_dir, n_made++) < 0) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  }
  TRITONSERVER_Error *err = NULL;
  if (mkdir(d, 0755) != 0)
    err = ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL,
                         "Failed to create environment directory for '%s': "
                         "%s",
                         d, strerror(errno));
  if (err == NULL) err = untar(archive, d);
  if (err == NULL && (*dir = strdup(d)) == NULL)
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  if (err != NULL) {
    rm_tree(d);
    free(d);
    if (e != NULL) { /* forget it: the next load tries again */
      free(e->archive);
      *e = entries[--n_entries];
    }
    return err;
  }
  if (e == NULL) {
    e = &entries[n_entries];
    e->archive = strdup(archive);
    if (e->archive == NULL) {
      free(*dir);
      *dir = NULL;
      rm_tree(d);
      free(d);
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                   "out of memory");
    }
    n_entries++;
  }
  e->dir = d;
  e->mtime = mtime;
  IFD_PY_LOG(TRITONSERVER_LOG_VERBOSE,
             "python backend: extracted execution environment '%s' into '%s'",
             archive, d);
  return NULL;
}

TRITONSERVER_Error *ifd__py_env_prepare(const char *config, size_t len,
                                        const char *model_dir, char **env_dir) {
  char canon[PATH_MAX], activate[PATH_MAX + 16];
  struct stat sb;
  TRITONSERVER_Error *err = NULL;
  *env_dir = NULL;
  char *path = env_param(config, len, model_dir);
  if (path == NULL) return NULL;
  if (realpath(path, canon) == NULL || stat(canon, &sb) != 0) {
    err = ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL,
                         "Failed to get the canonical path for %s.", path);
    goto out;
  }
  if (S_ISDIR(sb.st_mode)) {
    *env_dir = strdup(canon);
    if (*env_dir == NULL)
      err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  } else {
    pthread_mutex_lock(&env_mu);
    err = extracted(canon, sb.st_mtime, env_dir);
    pthread_mutex_unlock(&env_mu);
  }
  if (err != NULL) goto out;
  snprintf(activate, sizeof(activate), "%s/bin/activate", *env_dir);
  if (access(activate, R_OK) != 0) {
    err = ifd__py_errorf(TRITONSERVER_ERROR_INTERNAL,
                         "Path %s does not exist. The Python environment "
                         "should contain an 'activate' script.",
                         activate);
    free(*env_dir);
    *env_dir = NULL;
  }
out:
  free(path);
  return err;
}

void ifd__py_env_cleanup(void) {
  pthread_mutex_lock(&env_mu);
  for (size_t i = 0; i < n_entries; i++) {
    free(entries[i].archive);
    free(entries[i].dir);
  }
  free(entries);
  entries = NULL;
  n_entries = cap_entries = 0;
  if (cache_dir != NULL) rm_tree(cache_dir);
  free(cache_dir);
  cache_dir = NULL;
  pthread_mutex_unlock(&env_mu);
}
