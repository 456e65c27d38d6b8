/*
 * core/config.c - model configuration: read, parse, and the chain of steps
 * that prepares a config for loading.
 *
 * The module's files follow the order tritonserver applies to a model it
 * loads:
 *
 *   1. read <model>/config.pbtxt (or start from an empty config when the file
 *      is missing and auto-completion is allowed) and check the name;
 *   2. fill the backend fields that follow from the platform, the default
 *      model file name and the files of the first version folder
 *      (config_autofill.c);
 *   3. normalize: version policy, batcher defaults, pinned memory, instance
 *      groups (config_defaults.c);
 *   4. validate (config_validate.c, config_ensemble.c), with Triton's rules
 * and, as far as practical, its messages, so that a user moving from
 * tritonserver sees the same complaints.
 *
 * config_json.c renders the config for GET /v2/models/<m>/config, and
 * config_util.c holds the helpers they all share. The config
 * itself is the protoc-c message; every change made here keeps the
 * layout protobuf_c_message_free_unpacked() expects (malloc'd strings unless
 * they are the shared empty default, malloc'd arrays and sub-messages).
 */
#include "core/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "core/config_internal.h"
#include "proto/pbtext.h"

/* The largest config.pbtxt we read; real ones are a few KiB. */
#define MAX_CONFIG_BYTES (64u << 20)

/* ---- parse and load ---- */

int ifd_config_parse(const char *text, size_t len, const char *filename,
                     const char *model_name, ifd_model_config_t **out,
                     ifd_errmsg_t *err) {
  ProtobufCMessage *msg = NULL;
  ifd_model_config_t *cfg;
  int rc;

  *out = NULL;
  rc =
      ifd_pbtext_parse(&inference__model_config__descriptor, text, len,
                       filename != NULL ? filename : "config.pbtxt", &msg, err);
  if (rc < 0) return rc;
  cfg = (ifd_model_config_t *)msg;

  if (model_name != NULL && empty(cfg->name)) {
    rc = ifd__config_set_str(&cfg->name, model_name);
    if (rc < 0) {
      ifd_errf(err, rc, "out of memory parsing the config of '%s'", model_name);
      goto out_free_cfg;
    }
  }
  *out = cfg;
  return 0;

out_free_cfg:
  ifd_config_free(cfg);
  return rc;
}

/* Reads a whole file into a NUL-terminated malloc'd buffer. Returns 0,
 * -ENOENT (as IFD_ENOTFOUND), IFD_EIO, IFD_ETOOBIG or IFD_ENOMEM. */
static int read_file(const char *path, char **out, size_t *len,
                     ifd_errmsg_t *err) {
  FILE *f;
  char *buf = NULL;
  size_t cap = 0, n = 0;
  int rc;

  f = fopen(path, "rb");
  if (f == NULL) {
    if (errno == ENOENT)
      return ifd_errf(err, IFD_ENOTFOUND, "%s: not found", path);
    return ifd_errf(err, IFD_EIO, "%s: %s", path, strerror(errno));
  }
  for (;;) {
    if (n + 1 >= cap) {
      size_t ncap = cap == 0 ? 4096 : cap * 2;
      char *nbuf;
      if (ncap > MAX_CONFIG_BYTES + 1) {
        rc = ifd_errf(err, IFD_ETOOBIG, "%s: larger than %u bytes", path,
                      MAX_CONFIG_BYTES);
        goto out_free_buf;
      }
      nbuf = realloc(buf, ncap);
      if (nbuf == NULL) {
        rc = ifd_errf(err, IFD_ENOMEM, "%s: out of memory", path);
        goto out_free_buf;
      }
      buf = nbuf;
      cap = ncap;
    }
    size_t got = fread(buf + n, 1, cap - 1 - n, f);
    n += got;
    if (got == 0) {
      if (ferror(f)) {
        rc = ifd_errf(err, IFD_EIO, "%s: read error", path);
        goto out_free_buf;
      }
      break;
    }
  }
  fclose(f);
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return 0;

out_free_buf:
  free(buf);
  fclose(f);
  return rc;
}

int ifd_config_load(const char *model_dir, const char *model_name,
                    const ifd_config_opts_t *opts, ifd_model_config_t **out,
                    ifd_errmsg_t *err) {
  char path[4096];
  char *text = NULL;
  size_t len = 0;
  ifd_model_config_t *cfg = NULL;
  int rc, custom = 0;

  *out = NULL;
  /* --model-config-name as tritonserver reads it: configs/<name>.pbtxt when
   * that file exists, else config.pbtxt. */
  if (opts->config_name != NULL && opts->config_name[0] != '\0') {
    if ((size_t)snprintf(path, sizeof(path), "%s/configs/%s.pbtxt", model_dir,
                         opts->config_name) >= sizeof(path))
      return ifd_errf(err, IFD_EINVAL, "model path too long: %s", model_dir);
    custom = access(path, F_OK) == 0;
  }
  if (!custom && (size_t)snprintf(path, sizeof(path), "%s/config.pbtxt",
                                  model_dir) >= sizeof(path))
    return ifd_errf(err, IFD_EINVAL, "model path too long: %s", model_dir);

  rc = read_file(path, &text, &len, err);
  if (rc == IFD_ENOTFOUND && !opts->strict) {
    /* Auto-completion may build the whole config: start from nothing. */
    rc = ifd_config_parse("", 0, path, model_name, &cfg, err);
  } else if (rc == IFD_ENOTFOUND) {
    return ifd_errf(err, IFD_ENOTFOUND,
                    "failed to load model '%s': %s not found and "
                    "--strict-model-config is set",
                    model_name, path);
  } else if (rc < 0) {
    return rc;
  } else {
    rc = ifd_config_parse(text, len, path, model_name, &cfg, err);
    free(text);
  }
  if (rc < 0) return rc;

  rc = ifd__config_autofill_backend(cfg, model_name, model_dir, err);
  if (rc < 0) goto out_free_cfg;
  *out = cfg;
  return 0;

out_free_cfg:
  ifd_config_free(cfg);
  return rc;
}

int ifd_config_check_name(const ifd_model_config_t *cfg, const char *dir_name,
                          ifd_errmsg_t *err) {
  if (streq(cfg->name, dir_name)) return 0;
  return ifd_errf(err, IFD_EINVAL,
                  "unexpected directory name '%s' for model '%s', directory "
                  "name must equal model name",
                  dir_name, cfg->name);
}

/* The chain after the config is read, in Triton's order: its repository
 * manager normalizes and validates, the inputs and outputs too when
 * auto-completion is off, and only then compares the name with the
 * folder's, so a config that is both wrong and misnamed is refused for what
 * is wrong. With auto-completion on, Triton checks inputs and outputs when
 * the model loads; here that is right after the name. Frees cfg on failure. */
static int prepare_chain(ifd_model_config_t *cfg, const char *model_name,
                         const ifd_config_opts_t *opts,
                         ifd_model_config_t **out, ifd_errmsg_t *err) {
  int rc;
  if (opts->rename && !streq(cfg->name, model_name) &&
      (rc = ifd__config_set_str(&cfg->name, model_name)) < 0) {
    ifd_config_free(cfg);
    return ifd_errf(err, rc, "out of memory");
  }
  if ((rc = ifd_config_normalize(cfg, opts, err)) < 0 ||
      (rc = ifd__config_validate_model(cfg, opts, err)) < 0 ||
      (opts->strict && (rc = ifd__config_validate_io(cfg, err)) < 0) ||
      (rc = ifd_config_check_name(cfg, model_name, err)) < 0 ||
      (!opts->strict && (rc = ifd__config_validate_io(cfg, err)) < 0)) {
    ifd_config_free(cfg);
    return rc;
  }
  *out = cfg;
  return 0;
}

int ifd_config_prepare(const char *model_dir, const char *model_name,
                       const ifd_config_opts_t *opts, ifd_model_config_t **out,
                       ifd_errmsg_t *err) {
  ifd_model_config_t *cfg = NULL;
  int rc;

  *out = NULL;
  rc = ifd_config_load(model_dir, model_name, opts, &cfg, err);
  if (rc < 0) return rc;
  return prepare_chain(cfg, model_name, opts, out, err);
}

int ifd_config_prepare_json(const char *json, size_t len, const char *model_dir,
                            const char *model_name,
                            const ifd_config_opts_t *opts,
                            ifd_model_config_t **out, ifd_errmsg_t *err) {
  ifd_model_config_t *cfg = NULL;
  json_error_t jerr;
  json_t *doc;
  int rc;

  *out = NULL;
  doc = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
  if (doc == NULL || !json_is_object(doc)) {
    json_decref(doc);
    return ifd_errf(err, IFD_EPARSE,
                    "the config override of model '%s' is not a JSON "
                    "object: %s",
                    model_name, doc == NULL ? jerr.text : "not an object");
  }
  rc = ifd_config_from_json(doc, &cfg, err);
  json_decref(doc);
  if (rc < 0) return rc;
  if (empty(cfg->name) &&
      (rc = ifd__config_set_str(&cfg->name, model_name)) < 0) {
    ifd_config_free(cfg);
    return ifd_errf(err, rc, "out of memory");
  }
  rc = ifd__config_autofill_backend(cfg, model_name, model_dir, err);
  if (rc < 0) {
    ifd_config_free(cfg);
    return rc;
  }
  return prepare_chain(cfg, model_name, opts, out, err);
}

void ifd_config_free(ifd_model_config_t *cfg) {
  if (cfg != NULL) protobuf_c_message_free_unpacked(&cfg->base, NULL);
}

const char *ifd_config_backend_name(const ifd_model_config_t *cfg) {
  const char *p = cfg->platform;
  if (!empty(cfg->backend)) return cfg->backend;
  if (empty(p)) return NULL;
  switch (ifd__config_family_of_platform(p)) {
    case FAM_TF:
      return TF_BACKEND;
    case FAM_TRT:
      return TRT_BACKEND;
    case FAM_ORT:
      return ORT_BACKEND;
    case FAM_PT:
      return PT_BACKEND;
    case FAM_UNKNOWN:
      break;
  }
  if (streq(p, ENSEMBLE_PLATFORM)) return "";
  return NULL;
}

const char *ifd_config_param(const ifd_model_config_t *cfg, const char *key) {
  for (size_t i = 0; i < cfg->n_parameters; i++) {
    const Inference__ModelConfig__ParametersEntry *e = cfg->parameters[i];
    if (e->key != NULL && streq(e->key, key))
      return e->value != NULL ? e->value->string_value : "";
  }
  return NULL;
}
