/*
 * core/config.c - model configuration: load, defaults, validation, JSON.
 *
 * The steps follow the order tritonserver applies to a model it loads:
 *
 *   1. read <model>/config.pbtxt (or start from an empty config when the file
 *      is missing and auto-completion is allowed) and check the name;
 *   2. fill the backend fields that follow from the platform, the default
 *      model file name and the files of the first version folder;
 *   3. normalize: version policy, batcher defaults, pinned memory, instance
 *      groups;
 *   4. validate, with Triton's rules and, as far as practical, its messages,
 *      so that a user moving from tritonserver sees the same complaints.
 *
 * The config itself is the protoc-c message; every change made here keeps the
 * layout protobuf_c_message_free_unpacked() expects (malloc'd strings unless
 * they are the shared empty default, malloc'd arrays and sub-messages).
 */
#include "core/config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/dtype.h"
#include "proto/pbtext.h"

/* The largest config.pbtxt we read; real ones are a few KiB. */
#define MAX_CONFIG_BYTES (64u << 20)

/* Triton's default for sequence_batching.max_sequence_idle_microseconds. */
#define SEQUENCE_IDLE_DEFAULT_US 1000000u

/* Triton prints its default minimum compute capability in one message. */
#define MIN_COMPUTE_CAPABILITY "6.000000"

/* Platform, backend and default file names Triton knows. */
#define TF_GRAPHDEF_PLATFORM "tensorflow_graphdef"
#define TF_SAVEDMODEL_PLATFORM "tensorflow_savedmodel"
#define TF_GRAPHDEF_FILE "model.graphdef"
#define TF_SAVEDMODEL_FILE "model.savedmodel"
#define TF_BACKEND "tensorflow"
#define TRT_PLATFORM "tensorrt_plan"
#define TRT_FILE "model.plan"
#define TRT_BACKEND "tensorrt"
#define ORT_PLATFORM "onnxruntime_onnx"
#define ORT_FILE "model.onnx"
#define ORT_BACKEND "onnxruntime"
#define OV_FILE "model.xml"
#define OV_BACKEND "openvino"
#define PT_PLATFORM "pytorch_libtorch"
#define PT_FILE "model.pt"
#define PT_BACKEND "pytorch"
#define PY_FILE "model.py"
#define PY_BACKEND "python"
#define ENSEMBLE_PLATFORM "ensemble"

typedef Inference__ModelInstanceGroup group_t;

/* ---- small helpers ---- */

static int streq(const char *a, const char *b) {
  return strcmp(a, b) == 0;
}

static int empty(const char *s) {
  return s == NULL || s[0] == '\0';
}

/* Replaces the string in *slot with a copy of `val`, freeing the old one
 * unless it is the shared empty default. */
static int set_str(char **slot, const char *val) {
  char *copy = strdup(val);
  if (copy == NULL) return IFD_ENOMEM;
  if (*slot != NULL && *slot != protobuf_c_empty_string) free(*slot);
  *slot = copy;
  return 0;
}

static void *new_msg(const ProtobufCMessageDescriptor *desc) {
  void *m = malloc(desc->sizeof_message);
  if (m != NULL) protobuf_c_message_init(desc, m);
  return m;
}

static const char *enum_name(const ProtobufCEnumDescriptor *desc, int v) {
  const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(desc, v);
  return ev != NULL ? ev->name : "<unknown>";
}

/* Backend families, for Triton's platform/backend pair check. */
enum family { FAM_UNKNOWN, FAM_TF, FAM_TRT, FAM_ORT, FAM_PT };

static enum family family_of_platform(const char *p) {
  if (streq(p, TF_GRAPHDEF_PLATFORM) || streq(p, TF_SAVEDMODEL_PLATFORM))
    return FAM_TF;
  if (streq(p, TRT_PLATFORM)) return FAM_TRT;
  if (streq(p, ORT_PLATFORM)) return FAM_ORT;
  if (streq(p, PT_PLATFORM)) return FAM_PT;
  return FAM_UNKNOWN;
}

static enum family family_of_backend(const char *b) {
  if (streq(b, TF_BACKEND)) return FAM_TF;
  if (streq(b, TRT_BACKEND)) return FAM_TRT;
  if (streq(b, ORT_BACKEND)) return FAM_ORT;
  if (streq(b, PT_BACKEND)) return FAM_PT;
  return FAM_UNKNOWN;
}

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

  if (model_name != NULL) {
    if (empty(cfg->name)) {
      rc = set_str(&cfg->name, model_name);
      if (rc < 0) {
        ifd_errf(err, rc, "out of memory parsing the config of '%s'",
                 model_name);
        goto out_free_cfg;
      }
    } else if (!streq(cfg->name, model_name)) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "unexpected directory name '%s' for model '%s', "
                    "directory name must equal model name",
                    model_name, cfg->name);
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
static int autofill_backend(ifd_model_config_t *cfg, const char *model_name,
                            const char *model_dir, ifd_errmsg_t *err) {
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
    if ((rc = set_str(&cfg->backend, dot + 1)) < 0 ||
        (rc = set_str(&cfg->default_model_filename, file)) < 0)
      return ifd_errf(err, rc, "out of memory");
  }
  return 0;

apply:
  /* Only empty fields are filled; `fill_*` may point into cfg itself, so
   * compare before replacing. */
  if (fill_platform != NULL && empty(cfg->platform) &&
      (rc = set_str(&cfg->platform, fill_platform)) < 0)
    return ifd_errf(err, rc, "out of memory");
  if (fill_backend != NULL && empty(cfg->backend) &&
      (rc = set_str(&cfg->backend, fill_backend)) < 0)
    return ifd_errf(err, rc, "out of memory");
  if (fill_file != NULL && empty(cfg->default_model_filename) &&
      (rc = set_str(&cfg->default_model_filename, fill_file)) < 0)
    return ifd_errf(err, rc, "out of memory");
  return 0;
}

int ifd_config_load(const char *model_dir, const char *model_name,
                    const ifd_config_opts_t *opts, ifd_model_config_t **out,
                    ifd_errmsg_t *err) {
  char path[4096];
  char *text = NULL;
  size_t len = 0;
  ifd_model_config_t *cfg = NULL;
  int rc;

  *out = NULL;
  if ((size_t)snprintf(path, sizeof(path), "%s/config.pbtxt", model_dir) >=
      sizeof(path))
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

  rc = autofill_backend(cfg, model_name, model_dir, err);
  if (rc < 0) goto out_free_cfg;
  *out = cfg;
  return 0;

out_free_cfg:
  ifd_config_free(cfg);
  return rc;
}

void ifd_config_free(ifd_model_config_t *cfg) {
  if (cfg != NULL) protobuf_c_message_free_unpacked(&cfg->base, NULL);
}

const char *ifd_config_backend_name(const ifd_model_config_t *cfg) {
  const char *p = cfg->platform;
  if (!empty(cfg->backend)) return cfg->backend;
  if (empty(p)) return NULL;
  switch (family_of_platform(p)) {
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

/* ---- normalize ---- */

/* Appends `v` to a repeated int32 field. */
static int push_i32(int32_t **arr, size_t *n, int32_t v) {
  int32_t *a = realloc(*arr, (*n + 1) * sizeof(**arr));
  if (a == NULL) return IFD_ENOMEM;
  a[(*n)++] = v;
  *arr = a;
  return 0;
}

static int pinned_default(
    Inference__ModelOptimizationPolicy__PinnedMemoryBuffer **slot) {
  if (*slot != NULL) return 0;
  *slot = new_msg(
      &inference__model_optimization_policy__pinned_memory_buffer__descriptor);
  if (*slot == NULL) return IFD_ENOMEM;
  (*slot)->enable = 1;
  return 0;
}

static int normalize_groups(ifd_model_config_t *cfg,
                            const ifd_config_opts_t *opts) {
  int rc;

  if (cfg->n_instance_group == 0) {
    group_t **arr = malloc(sizeof(*arr));
    group_t *g = new_msg(&inference__model_instance_group__descriptor);
    if (arr == NULL || g == NULL) {
      free(arr);
      free(g);
      return IFD_ENOMEM;
    }
    arr[0] = g;
    free(cfg->instance_group); /* an empty array may still be allocated */
    cfg->instance_group = arr;
    cfg->n_instance_group = 1;
    if ((rc = set_str(&g->name, cfg->name)) < 0) return rc;
  }

  for (size_t i = 0; i < cfg->n_instance_group; i++) {
    group_t *g = cfg->instance_group[i];

    if (empty(g->name)) {
      char name[1024];
      snprintf(name, sizeof(name), "%s_%zu", cfg->name, i);
      if ((rc = set_str(&g->name, name)) < 0) return rc;
    }

    /* KIND_AUTO runs on GPU only when GPUs exist and every listed one does. */
    if (g->kind == INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_AUTO) {
      int gpu = opts->gpu_count > 0;
      for (size_t k = 0; gpu && k < g->n_gpus; k++)
        if (g->gpus[k] < 0 || g->gpus[k] >= opts->gpu_count) gpu = 0;
      g->kind = gpu ? INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_GPU
                    : INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_CPU;
    }

    /* Triton starts two CPU instances for TensorFlow and ONNX Runtime. */
    if (g->count < 1) {
      g->count = 1;
      if (g->kind == INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_CPU &&
          (streq(cfg->backend, TF_BACKEND) || streq(cfg->backend, ORT_BACKEND)))
        g->count = 2;
    }

    if (g->kind == INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_GPU &&
        g->n_gpus == 0) {
      for (int d = 0; d < opts->gpu_count; d++)
        if ((rc = push_i32(&g->gpus, &g->n_gpus, d)) < 0) return rc;
    }
  }
  return 0;
}

int ifd_config_normalize(ifd_model_config_t *cfg, const ifd_config_opts_t *opts,
                         ifd_errmsg_t *err) {
  int rc;

  rc = autofill_backend(cfg, cfg->name, NULL, err);
  if (rc < 0) return rc;

  if (cfg->version_policy == NULL) {
    Inference__ModelVersionPolicy *vp =
        new_msg(&inference__model_version_policy__descriptor);
    Inference__ModelVersionPolicy__Latest *latest =
        new_msg(&inference__model_version_policy__latest__descriptor);
    if (vp == NULL || latest == NULL) {
      free(vp);
      free(latest);
      goto out_nomem;
    }
    latest->num_versions = 1;
    vp->policy_choice_case =
        INFERENCE__MODEL_VERSION_POLICY__POLICY_CHOICE_LATEST;
    vp->latest = latest;
    cfg->version_policy = vp;
  }

  /* A batcher without preferred sizes prefers the largest batch. */
  if (cfg->scheduling_choice_case ==
          INFERENCE__MODEL_CONFIG__SCHEDULING_CHOICE_DYNAMIC_BATCHING &&
      cfg->dynamic_batching->n_preferred_batch_size == 0 &&
      cfg->max_batch_size > 0) {
    Inference__ModelDynamicBatching *db = cfg->dynamic_batching;
    if (push_i32(&db->preferred_batch_size, &db->n_preferred_batch_size,
                 cfg->max_batch_size) < 0)
      goto out_nomem;
  }

  if (cfg->scheduling_choice_case ==
      INFERENCE__MODEL_CONFIG__SCHEDULING_CHOICE_SEQUENCE_BATCHING) {
    Inference__ModelSequenceBatching *sb = cfg->sequence_batching;
    if (sb->max_sequence_idle_microseconds == 0)
      sb->max_sequence_idle_microseconds = SEQUENCE_IDLE_DEFAULT_US;
    if (sb->strategy_choice_case ==
            INFERENCE__MODEL_SEQUENCE_BATCHING__STRATEGY_CHOICE_OLDEST &&
        sb->oldest->n_preferred_batch_size == 0 && cfg->max_batch_size > 0 &&
        push_i32(&sb->oldest->preferred_batch_size,
                 &sb->oldest->n_preferred_batch_size, cfg->max_batch_size) < 0)
      goto out_nomem;
  }

  /* Ensembles run no instances of their own: no optimization, no groups. */
  if (cfg->scheduling_choice_case !=
      INFERENCE__MODEL_CONFIG__SCHEDULING_CHOICE_ENSEMBLE_SCHEDULING) {
    if (cfg->optimization == NULL) {
      cfg->optimization =
          new_msg(&inference__model_optimization_policy__descriptor);
      if (cfg->optimization == NULL) goto out_nomem;
    }
    if (pinned_default(&cfg->optimization->input_pinned_memory) < 0 ||
        pinned_default(&cfg->optimization->output_pinned_memory) < 0)
      goto out_nomem;
    if (normalize_groups(cfg, opts) < 0) goto out_nomem;
  }
  return 0;

out_nomem:
  return ifd_errf(err, IFD_ENOMEM,
                  "out of memory normalizing the config of "
                  "'%s'",
                  cfg->name);
}

/* ---- validate: inputs and outputs ---- */

/* Triton's element count of a dims list: -1 when any dim is variable, 0 for
 * an empty list, else the product (saturated to INT64_MAX on overflow, which
 * only ever makes two counts differ). */
static int64_t dims_count(const int64_t *d, size_t n) {
  int64_t c = 0;
  for (size_t i = 0; i < n; i++) {
    if (d[i] == -1) return -1;
  }
  for (size_t i = 0; i < n; i++) {
    if (i == 0)
      c = d[i];
    else if (d[i] != 0 && c > INT64_MAX / d[i])
      c = INT64_MAX;
    else
      c *= d[i];
  }
  return c;
}

/* Splits a dims list at its -1s and writes the element count of each run of
 * fixed dims; returns how many runs (at most `max`, then stops). */
static size_t dims_runs(const int64_t *d, size_t n, int64_t *runs, size_t max) {
  size_t k = 0;
  int64_t cur = 1;
  for (size_t i = 0; i < n; i++) {
    if (d[i] != -1) {
      cur = (cur > INT64_MAX / (d[i] > 0 ? d[i] : 1)) ? INT64_MAX : cur * d[i];
    } else {
      if (k < max) runs[k] = cur;
      k++;
      cur = 1;
    }
  }
  if (k < max) runs[k] = cur;
  return k + 1;
}

/* The checks Triton applies to one input or output. `what` is "input" or
 * "output". */
static int check_io_shape(const ifd_model_config_t *cfg, const char *what,
                          const char *name, int data_type, const int64_t *dims,
                          size_t n_dims,
                          const Inference__ModelTensorReshape *reshape,
                          ifd_errmsg_t *err) {
  const char *m = cfg->name;

  if (empty(name))
    return ifd_errf(err, IFD_EINVAL, "model %s must specify 'name' for %s",
                    what, m);
  if (data_type == INFERENCE__DATA_TYPE__TYPE_INVALID)
    return ifd_errf(err, IFD_EINVAL,
                    "model %s '%s' must specify 'data_type' for %s", what, name,
                    m);
  if (n_dims == 0)
    return ifd_errf(err, IFD_EINVAL, "model %s '%s' must specify 'dims' for %s",
                    what, name, m);
  if (reshape != NULL && reshape->n_shape == 0 && cfg->max_batch_size == 0)
    return ifd_errf(err, IFD_EINVAL,
                    "model %s '%s' cannot have empty reshape for non-batching "
                    "model as scalar tensors are not supported for %s",
                    what, name, m);
  for (size_t i = 0; i < n_dims; i++) {
    if (dims[i] < 1 && dims[i] != -1)
      return ifd_errf(err, IFD_EINVAL,
                      "model %s '%s' dimension must be integer >= 1, or -1 "
                      "to indicate a variable-size dimension for %s",
                      what, name, m);
  }
  if (reshape == NULL) return 0;

  for (size_t i = 0; i < reshape->n_shape; i++) {
    if (reshape->shape[i] < 1 && reshape->shape[i] != -1)
      return ifd_errf(err, IFD_EINVAL,
                      "model %s '%s' reshape dimensions must be integer >= 1, "
                      "or -1 to indicate a variable-size dimension for %s",
                      what, name, m);
  }
  int64_t dc = dims_count(dims, n_dims);
  int64_t rc = dims_count(reshape->shape, reshape->n_shape);
  /* An empty reshape (a scalar) goes with dims whose count is 1. */
  if (dc != rc && (rc != 0 || dc != 1))
    return ifd_errf(err, IFD_EINVAL,
                    "model %s '%s' has different size for dims and reshape "
                    "for %s",
                    what, name, m);
  if (dc == -1) {
    /* Each run of fixed dims between -1s must hold as many elements. */
    int64_t a[IFD_MAX_DIMS + 1], b[IFD_MAX_DIMS + 1];
    size_t na = dims_runs(dims, n_dims, a, IFD_MAX_DIMS + 1);
    size_t nb =
        dims_runs(reshape->shape, reshape->n_shape, b, IFD_MAX_DIMS + 1);
    if (na != nb)
      return ifd_errf(err, IFD_EINVAL,
                      "model %s '%s' has different number of variable-size "
                      "dimensions for dims and reshape for %s",
                      what, name, m);
    for (size_t i = 0; i < na && i < IFD_MAX_DIMS + 1; i++) {
      if (a[i] != b[i])
        return ifd_errf(err, IFD_EINVAL,
                        "model %s '%s' has different size for dims and "
                        "reshape for %s",
                        what, name, m);
    }
  }
  return 0;
}

static int check_io_common(const ifd_model_config_t *cfg, const char *what,
                           int is_shape_tensor, int non_linear, size_t n_dims,
                           ifd_errmsg_t *err) {
  int trt = streq(cfg->platform, TRT_PLATFORM);
  if (!trt && is_shape_tensor)
    return ifd_errf(err, IFD_EINVAL,
                    "shape tensors are only supported for TensorRT platform "
                    "for %s",
                    cfg->name);
  if (non_linear && !trt)
    return ifd_errf(err, IFD_EINVAL,
                    "Non-linear IO format is only supported for the TensorRT "
                    "platform for %s",
                    cfg->name);
  if (non_linear && n_dims != 3)
    return ifd_errf(err, IFD_EINVAL,
                    "Non-linear IO format %s requires 3 dims for %s", what,
                    cfg->name);
  return 0;
}

static int validate_io(const ifd_model_config_t *cfg, ifd_errmsg_t *err) {
  int rc;

  for (size_t i = 0; i < cfg->n_input; i++) {
    const Inference__ModelInput *io = cfg->input[i];
    rc = check_io_shape(cfg, "input", io->name, io->data_type, io->dims,
                        io->n_dims, io->reshape, err);
    if (rc < 0) return rc;
    if ((io->format == INFERENCE__MODEL_INPUT__FORMAT__FORMAT_NHWC ||
         io->format == INFERENCE__MODEL_INPUT__FORMAT__FORMAT_NCHW) &&
        io->n_dims != 3)
      return ifd_errf(err, IFD_EINVAL,
                      "model input NHWC/NCHW require 3 dims for %s", cfg->name);
    rc = check_io_common(cfg, "input", io->is_shape_tensor,
                         io->is_non_linear_format_io, io->n_dims, err);
    if (rc < 0) return rc;
    /* Not a Triton rule: a repeated name would make tensor lookup by name
     * ambiguous, so inferd refuses it. */
    for (size_t j = 0; j < i; j++) {
      if (streq(cfg->input[j]->name, io->name))
        return ifd_errf(err, IFD_EINVAL,
                        "model input '%s' is specified more than once for %s",
                        io->name, cfg->name);
    }
  }
  for (size_t i = 0; i < cfg->n_output; i++) {
    const Inference__ModelOutput *io = cfg->output[i];
    rc = check_io_shape(cfg, "output", io->name, io->data_type, io->dims,
                        io->n_dims, io->reshape, err);
    if (rc < 0) return rc;
    rc = check_io_common(cfg, "output", io->is_shape_tensor,
                         io->is_non_linear_format_io, io->n_dims, err);
    if (rc < 0) return rc;
    for (size_t j = 0; j < i; j++) {
      if (streq(cfg->output[j]->name, io->name))
        return ifd_errf(err, IFD_EINVAL,
                        "model output '%s' is specified more than once for %s",
                        io->name, cfg->name);
    }
  }
  return 0;
}

static int has_input(const ifd_model_config_t *cfg, const char *name) {
  for (size_t i = 0; i < cfg->n_input; i++)
    if (streq(cfg->input[i]->name, name)) return 1;
  return 0;
}

static int has_output(const ifd_model_config_t *cfg, const char *name) {
  for (size_t i = 0; i < cfg->n_output; i++)
    if (streq(cfg->output[i]->name, name)) return 1;
  return 0;
}

static int validate_batch_io(const ifd_model_config_t *cfg, ifd_errmsg_t *err) {
  const char *m = cfg->name;

  for (size_t i = 0; i < cfg->n_batch_input; i++) {
    const Inference__BatchInput *bi = cfg->batch_input[i];
    const char *kind =
        enum_name(&inference__batch_input__kind__descriptor, bi->kind);
    if ((unsigned)bi->kind >
        INFERENCE__BATCH_INPUT__KIND__BATCH_ITEM_SHAPE_FLATTEN)
      return ifd_errf(err, IFD_EINVAL, "unknown batch input kind '%s' for %s",
                      kind, m);
    if (bi->n_source_input != 1)
      return ifd_errf(err, IFD_EINVAL,
                      "batch input kind '%s' expects 1 source input, got %zu "
                      "for %s",
                      kind, bi->n_source_input, m);
    if (bi->data_type != INFERENCE__DATA_TYPE__TYPE_INT32 &&
        bi->data_type != INFERENCE__DATA_TYPE__TYPE_FP32)
      return ifd_errf(err, IFD_EINVAL,
                      "batch input data type must be TYPE_INT32 or TYPE_FP32 "
                      "for %s",
                      m);
    for (size_t k = 0; k < bi->n_source_input; k++) {
      if (!has_input(cfg, bi->source_input[k]))
        return ifd_errf(err, IFD_EINVAL,
                        "unknown source input name '%s' for %s",
                        bi->source_input[k], m);
    }
  }
  for (size_t i = 0; i < cfg->n_batch_output; i++) {
    const Inference__BatchOutput *bo = cfg->batch_output[i];
    const char *kind =
        enum_name(&inference__batch_output__kind__descriptor, bo->kind);
    if (bo->kind !=
        INFERENCE__BATCH_OUTPUT__KIND__BATCH_SCATTER_WITH_INPUT_SHAPE)
      return ifd_errf(err, IFD_EINVAL, "unknown batch output kind '%s' for %s",
                      kind, m);
    if (bo->n_source_input != 1)
      return ifd_errf(err, IFD_EINVAL,
                      "batch output kind '%s' expects 1 source input, got %zu "
                      "for %s",
                      kind, bo->n_source_input, m);
    for (size_t k = 0; k < bo->n_source_input; k++) {
      if (!has_input(cfg, bo->source_input[k]))
        return ifd_errf(err, IFD_EINVAL,
                        "unknown source input name '%s' for %s",
                        bo->source_input[k], m);
    }
    for (size_t k = 0; k < bo->n_target_name; k++) {
      if (!has_output(cfg, bo->target_name[k]))
        return ifd_errf(err, IFD_EINVAL,
                        "unknown target output name '%s' for %s",
                        bo->target_name[k], m);
      for (size_t j = 0; j < k; j++) {
        if (streq(bo->target_name[j], bo->target_name[k]))
          return ifd_errf(err, IFD_EINVAL,
                          "target output name '%s' can only be specified once "
                          "for %s",
                          bo->target_name[k], m);
      }
    }
  }
  return 0;
}

/* ---- validate: batchers ---- */

static int validate_dynamic_batching(const ifd_model_config_t *cfg,
                                     ifd_errmsg_t *err) {
  const Inference__ModelDynamicBatching *db = cfg->dynamic_batching;
  const char *m = cfg->name;
  uint64_t levels = db->priority_levels;

  for (size_t i = 0; i < db->n_preferred_batch_size; i++) {
    int32_t s = db->preferred_batch_size[i];
    if (s <= 0)
      return ifd_errf(err, IFD_EINVAL,
                      "dynamic batching preferred size must be positive for %s",
                      m);
    if (s > cfg->max_batch_size)
      return ifd_errf(err, IFD_EINVAL,
                      "dynamic batching preferred size must be <= max batch "
                      "size for %s",
                      m);
  }
  if (levels != 0) {
    if (db->default_priority_level == 0 || db->default_priority_level > levels)
      return ifd_errf(err, IFD_EINVAL,
                      "default priority level must be in range [1, %llu] for "
                      "%s",
                      (unsigned long long)levels, m);
    for (size_t i = 0; i < db->n_priority_queue_policy; i++) {
      uint64_t k = db->priority_queue_policy[i]->key;
      if (k == 0 || k > levels)
        return ifd_errf(err, IFD_EINVAL,
                        "priority queue policy must have priority level in "
                        "range [1, %llu] for %s",
                        (unsigned long long)levels, m);
    }
  }
  if (db->preserve_ordering) {
    if (levels > 1)
      return ifd_errf(err, IFD_EINVAL,
                      "Only one priority level is allowed when "
                      "'preserve_ordering' is true for %s",
                      m);
    const Inference__ModelQueuePolicy *p = db->default_queue_policy;
    int bad = p != NULL && p->default_timeout_microseconds != 0 &&
              p->timeout_action ==
                  INFERENCE__MODEL_QUEUE_POLICY__TIMEOUT_ACTION__DELAY;
    for (size_t i = 0; !bad && i < db->n_priority_queue_policy; i++) {
      p = db->priority_queue_policy[i]->value;
      bad = p != NULL && p->default_timeout_microseconds != 0 &&
            p->timeout_action ==
                INFERENCE__MODEL_QUEUE_POLICY__TIMEOUT_ACTION__DELAY;
    }
    if (bad)
      return ifd_errf(err, IFD_EINVAL,
                      "Queue policy can not have DELAY as timeout action when "
                      "'preserve_ordering' is true for %s",
                      m);
  }
  return 0;
}

/*
 * Checks the control inputs of the sequence batcher for one control kind.
 * Boolean kinds (START, END, READY) need exactly one of the *_false_true
 * lists with 2 entries; CORRID (typed) needs none and a data_type. Sets
 * *dtype to the CORRID type when that control is present, else leaves it.
 */
static int check_seq_control(const ifd_model_config_t *cfg, int kind, int typed,
                             int *found, int *dtype, ifd_errmsg_t *err) {
  const Inference__ModelSequenceBatching *sb = cfg->sequence_batching;
  const char *m = cfg->name;
  const char *kn = enum_name(
      &inference__model_sequence_batching__control__kind__descriptor, kind);

  *found = 0;
  for (size_t i = 0; i < sb->n_control_input; i++) {
    const Inference__ModelSequenceBatching__ControlInput *ci =
        sb->control_input[i];
    if (empty(ci->name))
      return ifd_errf(err, IFD_EINVAL,
                      "sequence batching control tensor must have a name for "
                      "%s",
                      m);
    for (size_t j = 0; j < i; j++) {
      if (streq(sb->control_input[j]->name, ci->name))
        return ifd_errf(err, IFD_EINVAL,
                        "sequence batching control tensor '%s' is specified "
                        "for multiple control kinds for %s",
                        ci->name, m);
    }
    for (size_t k = 0; k < ci->n_control; k++) {
      const Inference__ModelSequenceBatching__Control *c = ci->control[k];
      size_t ni = c->n_int32_false_true, nf = c->n_fp32_false_true,
             nb = c->n_bool_false_true;
      if ((int)c->kind != kind) continue;
      if (*found)
        return ifd_errf(err, IFD_EINVAL,
                        "sequence batching specifies multiple %s tensors for "
                        "%s",
                        kn, m);
      *found = 1;
      if (typed) {
        if (ni || nf || nb)
          return ifd_errf(err, IFD_EINVAL,
                          "sequence batching must not specify either "
                          "'int32_false_true', 'fp32_false_true' or "
                          "'bool_false_true' for %s for %s",
                          kn, m);
        *dtype = c->data_type;
        continue;
      }
      if (!ni && !nf && !nb)
        return ifd_errf(err, IFD_EINVAL,
                        "sequence batching must specify either "
                        "'int32_false_true', 'fp32_false_true' or "
                        "'bool_false_true' for %s for %s",
                        kn, m);
      if ((ni && nf) || (ni && nb) || (nf && nb))
        return ifd_errf(err, IFD_EINVAL,
                        "sequence batching specifies more than one from "
                        "'int32_false_true', 'fp32_false_true' and "
                        "'bool_false_true' for %s for %s",
                        kn, m);
      const char *list = ni   ? "int32_false_true"
                         : nf ? "fp32_false_true"
                              : "bool_false_true";
      if ((ni ? ni : nf ? nf : nb) != 2)
        return ifd_errf(err, IFD_EINVAL,
                        "sequence batching control '%s' must have exactly 2 "
                        "entries for %s for %s",
                        list, kn, m);
    }
  }
  return 0;
}

static int validate_sequence_batching(const ifd_model_config_t *cfg,
                                      ifd_errmsg_t *err) {
  const Inference__ModelSequenceBatching *sb = cfg->sequence_batching;
  const char *m = cfg->name;
  static const int bool_kinds[] = {
      INFERENCE__MODEL_SEQUENCE_BATCHING__CONTROL__KIND__CONTROL_SEQUENCE_START,
      INFERENCE__MODEL_SEQUENCE_BATCHING__CONTROL__KIND__CONTROL_SEQUENCE_END,
      INFERENCE__MODEL_SEQUENCE_BATCHING__CONTROL__KIND__CONTROL_SEQUENCE_READY,
  };
  int found, dtype = INFERENCE__DATA_TYPE__TYPE_INVALID, rc;

  if (cfg->response_cache != NULL && cfg->response_cache->enable)
    return ifd_errf(err, IFD_EINVAL,
                    "Response Cache does not currently support model %s with "
                    "sequence batching scheduler. Please disable the response "
                    "cache.",
                    m);
  for (size_t i = 0; i < sizeof(bool_kinds) / sizeof(bool_kinds[0]); i++) {
    rc = check_seq_control(cfg, bool_kinds[i], 0, &found, &dtype, err);
    if (rc < 0) return rc;
  }
  rc = check_seq_control(
      cfg,
      INFERENCE__MODEL_SEQUENCE_BATCHING__CONTROL__KIND__CONTROL_SEQUENCE_CORRID,
      1, &found, &dtype, err);
  if (rc < 0) return rc;
  if (found && dtype != INFERENCE__DATA_TYPE__TYPE_UINT64 &&
      dtype != INFERENCE__DATA_TYPE__TYPE_INT64 &&
      dtype != INFERENCE__DATA_TYPE__TYPE_UINT32 &&
      dtype != INFERENCE__DATA_TYPE__TYPE_INT32 &&
      dtype != INFERENCE__DATA_TYPE__TYPE_STRING)
    return ifd_errf(err, IFD_EINVAL,
                    "unexpected data type for control CONTROL_SEQUENCE_CORRID "
                    "for %s. Allowed data types are TYPE_UINT64, TYPE_INT64, "
                    "TYPE_UINT32, TYPE_INT32 and TYPE_STRING",
                    m);
  if (sb->strategy_choice_case ==
      INFERENCE__MODEL_SEQUENCE_BATCHING__STRATEGY_CHOICE_OLDEST) {
    for (size_t i = 0; i < sb->oldest->n_preferred_batch_size; i++) {
      int32_t s = sb->oldest->preferred_batch_size[i];
      if (s <= 0)
        return ifd_errf(err, IFD_EINVAL,
                        "sequence batching preferred batch size must be "
                        "positive for %s",
                        m);
      if (s > cfg->max_batch_size)
        return ifd_errf(err, IFD_EINVAL,
                        "sequence batching preferred batch size must be <= "
                        "max batch size for %s",
                        m);
    }
  }
  if (sb->strategy_choice_case ==
      INFERENCE__MODEL_SEQUENCE_BATCHING__STRATEGY_CHOICE_DIRECT) {
    float u = sb->direct->minimum_slot_utilization;
    if (!(u >= 0.0f && u <= 1.0f))
      return ifd_errf(err, IFD_EINVAL,
                      "sequence batching minimum slot utilization must be in "
                      "range (0.0, 1.0] for %s",
                      m);
  }
  return 0;
}

/* ---- validate: ensembles ---- */

/* One ensemble tensor in the data-flow check. */
typedef struct ens_tensor {
  const char *name; /* borrowed from the config */
  int is_output;    /* written by some step */
  int ready;        /* computable from the ensemble inputs */
  int consumed;     /* read by some step */
} ens_tensor_t;

static ens_tensor_t *ens_find(ens_tensor_t *t, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (streq(t[i].name, name)) return &t[i];
  return NULL;
}

static int validate_ensemble(const ifd_model_config_t *cfg, ifd_errmsg_t *err) {
  const Inference__ModelEnsembling *es = cfg->ensemble_scheduling;
  const char *m = cfg->name;
  ens_tensor_t *t = NULL;
  size_t nt = 0, cap = 0;
  int rc = 0;

  if (!streq(cfg->platform, ENSEMBLE_PLATFORM))
    return ifd_errf(err, IFD_EINVAL,
                    "ensemble scheduling cannot be set for model '%s' whose "
                    "platform is not ensemble",
                    m);
  if (cfg->n_instance_group != 0)
    return ifd_errf(err, IFD_EINVAL,
                    "instance group should not be specified for ensemble '%s'",
                    m);
  if (cfg->optimization != NULL)
    return ifd_errf(err, IFD_EINVAL,
                    "optimization should not be specified for ensemble '%s'",
                    m);
  if (cfg->n_model_warmup != 0)
    return ifd_errf(err, IFD_EINVAL,
                    "model_warmup can not be specified for ensemble '%s'", m);
  if (es->n_step == 0)
    return ifd_errf(err, IFD_EINVAL, "must specify 'step' for ensemble '%s'",
                    m);

  for (size_t s = 0; s < es->n_step; s++) {
    cap += es->step[s]->n_input_map + es->step[s]->n_output_map;
  }
  t = calloc(cap + 1, sizeof(*t));
  if (t == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");

  /* Collect tensors: each may be written by at most one step. */
  for (size_t s = 0; s < es->n_step; s++) {
    const Inference__ModelEnsembling__Step *st = es->step[s];
    if (empty(st->model_name)) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "must specify 'model_name' in step %zu of ensemble '%s'", s,
                    m);
      goto out_free_t;
    }
    if (st->n_input_map == 0) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "must specify 'input_map' in step %zu of ensemble '%s'", s,
                    m);
      goto out_free_t;
    }
    if (st->n_output_map == 0) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "must specify 'output_map' in step %zu of ensemble '%s'", s,
                    m);
      goto out_free_t;
    }
    for (size_t k = 0; k < st->n_output_map; k++) {
      const char *name = st->output_map[k]->value;
      ens_tensor_t *e = ens_find(t, nt, name);
      if (e != NULL && e->is_output) {
        rc = ifd_errf(err, IFD_EINVAL,
                      "ensemble tensor '%s' can appear in an output map only "
                      "once for ensemble '%s' step %zu",
                      name, m, s);
        goto out_free_t;
      }
      if (e == NULL) e = &t[nt++], e->name = name;
      e->is_output = 1;
    }
    for (size_t k = 0; k < st->n_input_map; k++) {
      const char *key = st->input_map[k]->key, *name = st->input_map[k]->value;
      for (size_t j = 0; j < k; j++) {
        if (streq(st->input_map[j]->key, key)) {
          rc = ifd_errf(err, IFD_EINVAL,
                        "input '%s' in model '%s' is mapped to multiple "
                        "ensemble tensors for ensemble '%s' step %zu",
                        key, st->model_name, m, s);
          goto out_free_t;
        }
      }
      ens_tensor_t *e = ens_find(t, nt, name);
      if (e == NULL) e = &t[nt++], e->name = name;
      e->consumed = 1;
    }
  }

  for (size_t i = 0; i < cfg->n_input; i++) {
    ens_tensor_t *e = ens_find(t, nt, cfg->input[i]->name);
    if (e == NULL) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "ensemble input '%s' for ensemble %s' is not used",
                    cfg->input[i]->name, m);
      goto out_free_t;
    }
    e->ready = 1;
  }
  /* Propagate readiness: a step's outputs are ready once all its inputs are
   * (and it has at least one). Repeat until nothing changes. */
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t s = 0; s < es->n_step; s++) {
      const Inference__ModelEnsembling__Step *st = es->step[s];
      int all = 1;
      for (size_t k = 0; all && k < st->n_input_map; k++)
        all = ens_find(t, nt, st->input_map[k]->value)->ready;
      if (!all) continue;
      for (size_t k = 0; k < st->n_output_map; k++) {
        ens_tensor_t *e = ens_find(t, nt, st->output_map[k]->value);
        if (!e->ready) e->ready = changed = 1;
      }
    }
  }
  for (size_t i = 0; i < cfg->n_output; i++) {
    ens_tensor_t *e = ens_find(t, nt, cfg->output[i]->name);
    if (e == NULL) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "ensemble output '%s' for ensemble %s' is not used",
                    cfg->output[i]->name, m);
      goto out_free_t;
    }
    if (!e->ready) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "output '%s' for ensemble '%s' is not written",
                    cfg->output[i]->name, m);
      goto out_free_t;
    }
  }
  for (size_t i = 0; i < nt; i++) {
    if (has_output(cfg, t[i].name)) continue;
    if (!t[i].ready || !t[i].consumed) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "ensemble tensor '%s' is unused in ensemble '%s'",
                    t[i].name, m);
      goto out_free_t;
    }
  }

out_free_t:
  free(t);
  return rc;
}

/* ---- validate: instance groups ---- */

static int validate_groups(const ifd_model_config_t *cfg,
                           const ifd_config_opts_t *opts, ifd_errmsg_t *err) {
  const char *m = cfg->name;

  if (cfg->n_instance_group == 0)
    return ifd_errf(err, IFD_EINVAL,
                    "must specify one or more 'instance group's for %s", m);
  for (size_t i = 0; i < cfg->n_instance_group; i++) {
    const group_t *g = cfg->instance_group[i];
    switch (g->kind) {
      case INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_MODEL:
      case INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_CPU:
        if (g->n_gpus > 0)
          return ifd_errf(
              err, IFD_EINVAL,
              "instance group %s of model %s has kind %s but "
              "specifies one or more GPUs",
              g->name, m,
              enum_name(&inference__model_instance_group__kind__descriptor,
                        g->kind));
        break;
      case INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_GPU:
        if (g->n_gpus == 0)
          return ifd_errf(err, IFD_EINVAL,
                          "instance group %s of model %s has kind KIND_GPU but "
                          "%s",
                          g->name, m,
                          opts->gpu_count == 0 ? "no GPUs are available"
                                               : "specifies no GPUs");
        for (size_t k = 0; k < g->n_gpus; k++) {
          if (g->gpus[k] < 0 || g->gpus[k] >= opts->gpu_count) {
            char list[512] = "";
            size_t len = 0;
            for (int d = 0; d < opts->gpu_count && len < sizeof(list); d++)
              len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d",
                                      d > 0 ? ", " : "", d);
            return ifd_errf(err, IFD_EINVAL,
                            "instance group %s of model %s specifies invalid "
                            "or unsupported gpu id %d. GPUs with at least the "
                            "minimum required CUDA compute compatibility "
                            "of " MIN_COMPUTE_CAPABILITY " are: %s",
                            g->name, m, g->gpus[k], list);
          }
        }
        break;
      default:
        return ifd_errf(err, IFD_EINTERNAL,
                        "instance group %s of model %s has unexpected kind "
                        "KIND_AUTO",
                        g->name, m);
    }
    if (g->count < 1)
      return ifd_errf(err, IFD_EINVAL,
                      "instance group %s of model %s must have a count >= 1",
                      g->name, m);
    if (g->n_profile > 0 && !streq(cfg->platform, TRT_PLATFORM))
      return ifd_errf(err, IFD_EINVAL,
                      "instance group %s of model %s and platform %s "
                      "specifies profile field which is only supported for "
                      "TensorRT models",
                      g->name, m, cfg->platform);
    for (size_t k = 0; k < g->n_profile; k++) {
      const char *p = g->profile[k];
      char *end;
      long v;
      if (empty(p))
        return ifd_errf(err, IFD_EINVAL, "profile name must not be empty");
      errno = 0;
      v = strtol(p, &end, 10);
      if (end == p || errno != 0)
        return ifd_errf(err, IFD_EINVAL, "unable to parse '%s': stoi", p);
      if (v < 0)
        return ifd_errf(err, IFD_EINVAL,
                        "instance group %s of model %s and platform %s "
                        "specifies invalid profile %s. The field should "
                        "contain the string representation of a non-negative "
                        "integer.",
                        g->name, m, cfg->platform, p);
    }
  }
  return 0;
}

static int validate_metrics(const Inference__ModelMetrics *mm,
                            ifd_errmsg_t *err) {
  for (size_t i = 0; i < mm->n_metric_control; i++) {
    const Inference__ModelMetrics__MetricControl *c = mm->metric_control[i];
    if (c->metric_identifier == NULL)
      return ifd_errf(err, IFD_EINVAL,
                      "metric control must specify 'metric_identifier'");
    if (empty(c->metric_identifier->family))
      return ifd_errf(err, IFD_EINVAL,
                      "metric identifier must specify non-empty 'family'");
    if (c->metric_options_case !=
        INFERENCE__MODEL_METRICS__METRIC_CONTROL__METRIC_OPTIONS_HISTOGRAM_OPTIONS)
      return ifd_errf(err, IFD_EINVAL,
                      "metric control must specify 'histogram_options'");
    if (c->histogram_options->n_buckets == 0)
      return ifd_errf(err, IFD_EINVAL,
                      "histogram options must specify non-empty 'buckets'");
  }
  return 0;
}

/* ---- validate ---- */

int ifd_config_validate(const ifd_model_config_t *cfg,
                        const ifd_config_opts_t *opts, ifd_errmsg_t *err) {
  const char *m = cfg->name;
  int ensemble_platform = streq(cfg->platform, ENSEMBLE_PLATFORM);
  int rc;

  if (empty(m))
    return ifd_errf(err, IFD_EINVAL, "model configuration must specify 'name'");
  if (empty(cfg->backend) && !ensemble_platform)
    return ifd_errf(err, IFD_EINVAL, "unexpected platform type '%s' for %s",
                    cfg->platform, m);
  if (!empty(cfg->backend) && ensemble_platform)
    return ifd_errf(err, IFD_EINVAL,
                    "Ensemble model '%s' must have platform type '%s' and "
                    "empty backend type",
                    m, cfg->platform);
  enum family fam = family_of_backend(cfg->backend);
  if (fam != FAM_UNKNOWN && fam != family_of_platform(cfg->platform))
    return ifd_errf(err, IFD_EINVAL,
                    "unexpected 'platform' and 'backend' pair, got:%s, %s",
                    cfg->platform, cfg->backend);
  if (cfg->max_batch_size < 0)
    return ifd_errf(err, IFD_EINVAL,
                    "'max_batch_size' must be non-negative value for %s", m);
  if (cfg->version_policy == NULL)
    return ifd_errf(err, IFD_EINVAL, "must specify 'version policy' for %s", m);

  switch (cfg->scheduling_choice_case) {
    case INFERENCE__MODEL_CONFIG__SCHEDULING_CHOICE_DYNAMIC_BATCHING:
      rc = validate_dynamic_batching(cfg, err);
      break;
    case INFERENCE__MODEL_CONFIG__SCHEDULING_CHOICE_SEQUENCE_BATCHING:
      rc = validate_sequence_batching(cfg, err);
      break;
    case INFERENCE__MODEL_CONFIG__SCHEDULING_CHOICE_ENSEMBLE_SCHEDULING:
      rc = validate_ensemble(cfg, err);
      break;
    default:
      rc = ensemble_platform
               ? ifd_errf(err, IFD_EINVAL,
                          "ensemble scheduling must be set for ensemble %s "
                          "whose platform is ensemble",
                          m)
               : 0;
      break;
  }
  if (rc < 0) return rc;

  if (cfg->model_transaction_policy != NULL &&
      cfg->model_transaction_policy->decoupled && cfg->response_cache != NULL &&
      cfg->response_cache->enable)
    return ifd_errf(err, IFD_EINVAL,
                    "Response Cache does not currently support model %s with "
                    "'decoupled' transaction policy. Please disable the "
                    "response cache.",
                    m);
  if (cfg->model_metrics != NULL &&
      (rc = validate_metrics(cfg->model_metrics, err)) < 0)
    return rc;

  if (cfg->scheduling_choice_case !=
          INFERENCE__MODEL_CONFIG__SCHEDULING_CHOICE_ENSEMBLE_SCHEDULING &&
      (rc = validate_groups(cfg, opts, err)) < 0)
    return rc;

  if ((rc = validate_io(cfg, err)) < 0) return rc;
  return validate_batch_io(cfg, err);
}

/* ---- JSON ---- */

/*
 * Field order. protobuf-c descriptors list fields by number, so the JSON
 * comes out in that order; tritonserver prints them in declaration order.
 * JSON objects are unordered, but clients diffing bodies are not, so the few
 * messages whose declaration order differs from number order are rearranged.
 */
static const char *const config_order[] = {"name",
                                           "platform",
                                           "backend",
                                           "runtime",
                                           "version_policy",
                                           "max_batch_size",
                                           "input",
                                           "output",
                                           "batch_input",
                                           "batch_output",
                                           "optimization",
                                           "dynamic_batching",
                                           "sequence_batching",
                                           "ensemble_scheduling",
                                           "instance_group",
                                           "default_model_filename",
                                           "cc_model_filenames",
                                           "metric_tags",
                                           "parameters",
                                           "model_warmup",
                                           "model_operations",
                                           "model_transaction_policy",
                                           "model_repository_agents",
                                           "response_cache",
                                           "model_metrics",
                                           NULL};
static const char *const group_order[] = {"name",        "kind",
                                          "count",       "rate_limiter",
                                          "gpus",        "secondary_devices",
                                          "profile",     "passive",
                                          "host_policy", NULL};
static const char *const output_order[] = {"name",
                                           "data_type",
                                           "dims",
                                           "reshape",
                                           "label_filename",
                                           "is_shape_tensor",
                                           "is_non_linear_format_io",
                                           NULL};
static const char *const sequence_order[] = {"direct",
                                             "oldest",
                                             "max_sequence_idle_microseconds",
                                             "control_input",
                                             "state",
                                             "iterative_sequence",
                                             NULL};
static const char *const control_order[] = {"kind",
                                            "int32_false_true",
                                            "fp32_false_true",
                                            "bool_false_true",
                                            "data_type",
                                            NULL};

/* Rebuilds `obj` with the keys of `order` first, in that order, then any
 * others as they were. Returns 0 or IFD_ENOMEM (obj then unchanged). */
static int reorder(json_t *obj, const char *const *order) {
  json_t *sorted, *v;
  const char *key;
  int rc = IFD_ENOMEM;

  if (!json_is_object(obj)) return 0;
  sorted = json_object();
  if (sorted == NULL) return IFD_ENOMEM;
  for (const char *const *k = order; *k != NULL; k++) {
    v = json_object_get(obj, *k);
    if (v != NULL && json_object_set(sorted, *k, v) < 0) goto out_put_sorted;
  }
  json_object_foreach(obj, key, v) {
    if (json_object_get(sorted, key) == NULL &&
        json_object_set(sorted, key, v) < 0)
      goto out_put_sorted;
  }
  json_object_clear(obj);
  rc = json_object_update(obj, sorted) < 0 ? IFD_ENOMEM : 0;

out_put_sorted:
  json_decref(sorted);
  return rc;
}

static int reorder_each(json_t *arr, const char *const *order) {
  size_t i;
  json_t *e;
  json_array_foreach(arr, i, e) {
    if (reorder(e, order) < 0) return IFD_ENOMEM;
  }
  return 0;
}

/* Drops `key` from `obj` when it holds the JSON value `dflt`. */
static void drop_default(json_t *obj, const char *key, const json_t *dflt) {
  json_t *v = json_object_get(obj, key);
  if (v != NULL && json_equal(v, (json_t *)dflt)) json_object_del(obj, key);
}

static void drop_default_each(json_t *root, const char *array, const char *key,
                              const json_t *dflt) {
  json_t *arr = json_object_get(root, array);
  size_t i;
  json_t *e;
  json_array_foreach(arr, i, e) drop_default(e, key, dflt);
}

json_t *ifd_config_to_json(const ifd_model_config_t *cfg) {
  json_t *root, *zero, *seq, *ci, *e;
  size_t i;

  root = ifd_pbjson_from_message(&cfg->base);
  zero = json_integer(0);
  if (root == NULL || zero == NULL) goto out_put_root;

  /* Fields newer than tritonserver 2.47 are printed only when set, so the
   * body matches what 2.47 returns for the same config. */
  drop_default_each(root, "input", "is_non_linear_format_io", json_false());
  drop_default_each(root, "output", "is_non_linear_format_io", json_false());
  drop_default(json_object_get(root, "ensemble_scheduling"),
               "max_inflight_responses", zero);

  seq = json_object_get(root, "sequence_batching");
  ci = json_object_get(seq, "control_input");
  if (reorder(root, config_order) < 0 ||
      reorder_each(json_object_get(root, "instance_group"), group_order) < 0 ||
      reorder_each(json_object_get(root, "output"), output_order) < 0 ||
      reorder(seq, sequence_order) < 0)
    goto out_put_root;
  json_array_foreach(ci, i, e) {
    if (reorder_each(json_object_get(e, "control"), control_order) < 0)
      goto out_put_root;
  }
  json_decref(zero);
  return root;

out_put_root:
  json_decref(zero);
  json_decref(root);
  return NULL;
}

int ifd_config_from_json(const json_t *json, ifd_model_config_t **out,
                         ifd_errmsg_t *err) {
  ProtobufCMessage *msg = NULL;
  int rc;

  *out = NULL;
  rc = ifd_pbjson_to_message(&inference__model_config__descriptor, json, &msg,
                             err);
  if (rc == IFD_EPARSE) {
    /* A config that does not match the schema is an invalid argument. */
    if (err != NULL) err->code = IFD_EINVAL;
    return IFD_EINVAL;
  }
  if (rc < 0) return rc;
  *out = (ifd_model_config_t *)msg;
  return 0;
}

const char *ifd_config_param(const ifd_model_config_t *cfg, const char *key) {
  for (size_t i = 0; i < cfg->n_parameters; i++) {
    const Inference__ModelConfig__ParametersEntry *e = cfg->parameters[i];
    if (e->key != NULL && streq(e->key, key))
      return e->value != NULL ? e->value->string_value : "";
  }
  return NULL;
}
