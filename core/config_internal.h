/*
 * core/config_internal.h - what the files of the model-config module share.
 *
 * The module is core/config.c (read, parse, the preparing chain),
 * core/config_autofill.c (backend auto-completion), core/config_defaults.c
 * (ifd_config_normalize), core/config_validate.c (ifd_config_validate),
 * core/config_ensemble.c (an ensemble's steps and data flow),
 * core/config_json.c (the /config rendering and the JSON a backend sets) and
 * core/config_util.c (the helpers below that all of them share). The files
 * depend on each other one way: config.c on defaults, validate, autofill and
 * json; defaults on validate and autofill; validate on ensemble; all of them
 * on util, which calls none of them. Nothing outside those files includes
 * this header. It is
 * named after the module rather than core/internal.h because the other
 * modules of core/ have nothing to share with it.
 */
#ifndef IFD_CORE_CONFIG_INTERNAL_H
#define IFD_CORE_CONFIG_INTERNAL_H

#include <string.h>

#include "core/config.h"

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

static inline int streq(const char *a, const char *b) {
  return strcmp(a, b) == 0;
}

static inline int empty(const char *s) {
  return s == NULL || s[0] == '\0';
}

/** Replaces the string in *slot with a copy of `val`, freeing the old one
 * unless it is the shared empty default. Returns 0 or IFD_ENOMEM (*slot then
 * unchanged). */
int ifd__config_set_str(char **slot, const char *val);

/** Backend families, for Triton's platform/backend pair check. */
enum ifd__config_family { FAM_UNKNOWN, FAM_TF, FAM_TRT, FAM_ORT, FAM_PT };

enum ifd__config_family ifd__config_family_of_platform(const char *p);
enum ifd__config_family ifd__config_family_of_backend(const char *b);

/** Fills platform / backend / default_model_filename as Triton's
 * server-side auto-completion does (see ifd_config_load). `model_dir` may be
 * NULL: then only what follows from the config itself is derived, and a
 * config naming no backend at all is left for validation to reject. Returns 0,
 * IFD_EINVAL or IFD_ENOMEM with a message. Blocking when model_dir is set. */
int ifd__config_autofill_backend(ifd_model_config_t *cfg,
                                 const char *model_name, const char *model_dir,
                                 ifd_errmsg_t *err);

/** Triton's ValidateModelConfig: everything ifd_config_validate checks except
 * the inputs, outputs, batch inputs and batch outputs. Same returns. */
int ifd__config_validate_model(const ifd_model_config_t *cfg,
                               const ifd_config_opts_t *opts,
                               ifd_errmsg_t *err);

/** Triton's ValidateModelIOConfig: inputs, outputs, batch inputs and batch
 * outputs. Same returns as ifd_config_validate. */
int ifd__config_validate_io(const ifd_model_config_t *cfg, ifd_errmsg_t *err);

/** Holds iff the config has an output called `name`. */
int ifd__config_has_output(const ifd_model_config_t *cfg, const char *name);

/** Validates ensemble_scheduling (Triton's ValidateEnsembleSchedulingConfig):
 * platform, no instance groups / optimization / warmup, and the steps' data
 * flow. Returns 0 or IFD_EINVAL / IFD_ENOMEM with Triton's message. */
int ifd__config_validate_ensemble(const ifd_model_config_t *cfg,
                                  ifd_errmsg_t *err);

#endif
