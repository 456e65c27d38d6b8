/*
 * core/config_autofill.c - the backend fields a config leaves out: platform,
 * backend and default_model_filename, filled as Triton's server-side
 * auto-completion fills them, from the config itself, the model's name and
 * the files of its first sub-folder (step 2 of the order in core/config.c).
 * Reading the folder blocks, so it runs where config loading runs: off the
 * loop.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/config_internal.h"

/* Is `dir`/`name` present, and is it a directory? */
static int path_kind(const char *dir, const char *name, int *is_dir) {
  char path[4096];
  struct stat st;
  if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
    return 0;
  if (stat(path, &st) != 0) return 0;
  *is_dir = S_ISDIR(st.st_mode);
  return 1;
}

/* Triton inspects the first (by name) sub-folder of the model folder, version
 * or not, to guess the backend from the files it holds. Writes its path into
 * buf and returns 1, or 0 when there is none. */
static int first_subdir(const char *model_dir, char *buf, size_t size) {
  DIR *d = opendir(model_dir);
  struct dirent *e;
  char best[256] = "";
  int found = 0;

  if (d == NULL) return 0;
  while ((e = readdir(d)) != NULL) {
    int is_dir;
    if (streq(e->d_name, ".") || streq(e->d_name, "..")) continue;
    if (!path_kind(model_dir, e->d_name, &is_dir) || !is_dir) continue;
    if (!found || strcmp(e->d_name, best) < 0) {
      snprintf(best, sizeof(best), "%s", e->d_name);
      found = 1;
    }
  }
  closedir(d);
  if (!found) return 0;
  return (size_t)snprintf(buf, size, "%s/%s", model_dir, best) < size;
}

/* Holds iff the version folder has `file` and its kind matches `want_dir`
 * (-1: either kind). */
static int has_file(const char *vdir, const char *file, int want_dir) {
  int is_dir;
  if (vdir == NULL || !path_kind(vdir, file, &is_dir)) return 0;
  return want_dir < 0 || is_dir == want_dir;
}

/*
 * Fills platform / backend / default_model_filename as Triton's server-side
 * auto-completion does. `model_dir` may be NULL: then only what follows from
 * the config itself is derived, and a config naming no backend at all is left
 * for validation to reject.
 */
int ifd__config_autofill_backend(ifd_model_config_t *cfg,
                                 const char *model_name, const char *model_dir,
                                 ifd_errmsg_t *err) {
  char vbuf[4096];
  const char *vdir = NULL;
  const char *fill_backend = NULL, *fill_platform = NULL, *fill_file = NULL;
  int rc;

  if (model_dir != NULL && first_subdir(model_dir, vbuf, sizeof(vbuf)))
    vdir = vbuf;
  const char *plat = cfg->platform, *be = cfg->backend;
  const char *dmf = cfg->default_model_filename;

  /* TensorFlow needs a platform; guess it from the file name or files. */
  if (empty(plat) && (empty(be) || streq(be, TF_BACKEND))) {
    if (streq(dmf, TF_SAVEDMODEL_FILE))
      plat = TF_SAVEDMODEL_PLATFORM;
    else if (streq(dmf, TF_GRAPHDEF_FILE))
      plat = TF_GRAPHDEF_PLATFORM;
    else if (empty(dmf)) {
      if (has_file(vdir, TF_SAVEDMODEL_FILE, 1)) plat = TF_SAVEDMODEL_PLATFORM;
      if (has_file(vdir, TF_GRAPHDEF_FILE, 0)) plat = TF_GRAPHDEF_PLATFORM;
    }
  }
  if (streq(plat, TF_SAVEDMODEL_PLATFORM) ||
      streq(plat, TF_GRAPHDEF_PLATFORM)) {
    fill_platform = plat;
    fill_backend = TF_BACKEND;
    fill_file = streq(plat, TF_SAVEDMODEL_PLATFORM) ? TF_SAVEDMODEL_FILE
                                                    : TF_GRAPHDEF_FILE;
    goto apply;
  }

  /* TensorRT. */
  if (empty(be)) {
    if (streq(plat, TRT_PLATFORM) || streq(dmf, TRT_FILE))
      be = TRT_BACKEND;
    else if (empty(plat) && empty(dmf) && has_file(vdir, TRT_FILE, 0))
      be = TRT_BACKEND;
  }
  if (streq(be, TRT_BACKEND)) {
    fill_backend = be;
    fill_platform = TRT_PLATFORM;
    fill_file = TRT_FILE;
    goto apply;
  }

  /* ONNX Runtime: the model may be a file or, for large models, a folder. */
  if (empty(be)) {
    if (streq(plat, ORT_PLATFORM) || streq(dmf, ORT_FILE))
      be = ORT_BACKEND;
    else if (empty(plat) && empty(dmf) && has_file(vdir, ORT_FILE, -1))
      be = ORT_BACKEND;
  }
  if (streq(be, ORT_BACKEND)) {
    fill_backend = be;
    fill_platform = ORT_PLATFORM;
    fill_file = ORT_FILE;
    goto apply;
  }

  /* OpenVINO has no platform name. */
  if (empty(be)) {
    if (streq(dmf, OV_FILE))
      be = OV_BACKEND;
    else if (empty(plat) && empty(dmf) && has_file(vdir, OV_FILE, -1))
      be = OV_BACKEND;
  }
  if (streq(be, OV_BACKEND)) {
    fill_backend = be;
    fill_file = OV_FILE;
    goto apply;
  }

  /* PyTorch. */
  if (empty(be)) {
    if (streq(plat, PT_PLATFORM) || streq(dmf, PT_FILE))
      be = PT_BACKEND;
    else if (empty(plat) && empty(dmf) && has_file(vdir, PT_FILE, 0))
      be = PT_BACKEND;
  }
  if (streq(be, PT_BACKEND)) {
    fill_backend = be;
    if (empty(plat)) plat = PT_PLATFORM;
    fill_platform = plat;
    if (streq(plat, PT_PLATFORM)) fill_file = PT_FILE;
    goto apply;
  }

  /* Python. */
  if (empty(be)) {
    if (streq(dmf, PY_FILE))
      be = PY_BACKEND;
    else if (empty(plat) && empty(dmf) && has_file(vdir, PY_FILE, -1))
      be = PY_BACKEND;
  }
  if (streq(be, PY_BACKEND)) {
    fill_backend = be;
    fill_file = PY_FILE;
    goto apply;
  }

  /* A custom backend named by the model name: "model.<backend>". */
  if (empty(be) && empty(plat) && empty(dmf)) {
    const char *dot = model_name != NULL ? strchr(model_name, '.') : NULL;
    char file[512];
    if (dot == NULL) {
      if (model_dir == NULL) return 0;
      return ifd_errf(err, IFD_EINVAL,
                      "Invalid model name: Could not determine backend for "
                      "model '%s' with no backend in model configuration. "
                      "Expected model name of the form 'model.<backend_name>'.",
                      model_name != NULL ? model_name : "");
    }
    snprintf(file, sizeof(file), "model.%s", dot + 1);
    if ((rc = ifd__config_set_str(&cfg->backend, dot + 1)) < 0 ||
        (rc = ifd__config_set_str(&cfg->default_model_filename, file)) < 0)
      return ifd_errf(err, rc, "out of memory");
  }
  return 0;

apply:
  /* Only empty fields are filled; `fill_*` may point into cfg itself, so
   * compare before replacing. */
  if (fill_platform != NULL && empty(cfg->platform) &&
      (rc = ifd__config_set_str(&cfg->platform, fill_platform)) < 0)
    return ifd_errf(err, rc, "out of memory");
  if (fill_backend != NULL && empty(cfg->backend) &&
      (rc = ifd__config_set_str(&cfg->backend, fill_backend)) < 0)
    return ifd_errf(err, rc, "out of memory");
  if (fill_file != NULL && empty(cfg->default_model_filename) &&
      (rc = ifd__config_set_str(&cfg->default_model_filename, fill_file)) < 0)
    return ifd_errf(err, rc, "out of memory");
  return 0;
}
