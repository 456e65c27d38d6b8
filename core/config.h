/*
 * core/config.h - model configuration: load, defaults, validation, JSON.
 *
 * A model's configuration is the protoc-c message inference.ModelConfig
 * (proto/model_config.proto, Triton's schema). It is read from
 * <model dir>/config.pbtxt, completed with the defaults Triton fills in, and
 * validated as Triton validates it. Functions that touch files block: call them
 * from the thread pool, never from the loop thread.
 */
#ifndef IFD_CORE_CONFIG_H
#define IFD_CORE_CONFIG_H

#include <jansson.h>
#include <stdint.h>

#include "base/error.h"
#include "proto/model_config.pb-c.h"

typedef Inference__ModelConfig ifd_model_config_t;

/** Options that change how configs are completed. */
typedef struct ifd_config_opts {
  int strict;    /* --strict-model-config: no auto-completion */
  int gpu_count; /* GPUs present; 0 on a CPU-only machine */
  /* --model-config-name (borrowed; NULL or "": none): configs/<name>.pbtxt
   * is read instead of config.pbtxt when it exists. */
  const char *config_name;
  /* GPUs below --min-supported-compute-capability: bit d for GPU d; they
   * are ignored, as if absent (cuda/gpu.h ifd_gpu_unsupported). */
  uint64_t gpu_skip;
  double min_cc; /* --min-supported-compute-capability, for messages (0:
                    6.0) */
  /* The folder is served under a mapped name (a repository registered with
   * name mappings): the config's name becomes the model's, unchecked. */
  int rename;
  /* OUT (optional): what ifd_config_normalize filled into the instance
   * groups, so that a backend's preferred groups can still apply to it
   * (ifd_config_prefer_groups). NULL: not wanted. */
  struct ifd_group_defaults *defaults_out;
} ifd_config_opts_t;

/** The instance-group fields a config left to the defaults. */
typedef struct ifd_group_defaults {
  int added;            /* there was no instance_group: one was added */
  uint64_t count_unset; /* bit i: group i had no count (groups 0..63) */
  uint64_t gpus_unset;  /* bit i: group i, KIND_GPU, listed no gpus */
} ifd_group_defaults_t;

/** A backend's preferred instance group
 *  (TRITONBACKEND_BackendAttributeAddPreferredInstanceGroup) in the
 *  config's terms. */
typedef struct ifd_pref_group {
  Inference__ModelInstanceGroup__Kind kind;
  int32_t count; /* 0: Triton's default */
  int32_t *gpus; /* owned by whoever holds the list; NULL: every GPU */
  size_t n_gpus;
} ifd_pref_group_t;

/** Whether GPU `d` exists and is not below the minimum compute
 *  capability: a GPU a model may run on. */
static inline int ifd_config_gpu_ok(const ifd_config_opts_t *o, int64_t d) {
  return d >= 0 && d < o->gpu_count && (d >= 64 || !((o->gpu_skip >> d) & 1));
}

/** How many GPUs a model may run on (ifd_config_gpu_ok). */
static inline int ifd_config_gpus_usable(const ifd_config_opts_t *o) {
  int n = 0;
  for (int d = 0; d < o->gpu_count; d++) n += ifd_config_gpu_ok(o, d);
  return n;
}

/**
 * Reads and parses `<model_dir>/config.pbtxt`. A missing file gives an empty
 * config (name set, everything else default) when !opts->strict, else an
 * IFD_ENOTFOUND error. An empty config `name` is set to `model_name`; a
 * different name is left for ifd_config_check_name (Triton validates the
 * config before it compares the names).
 *
 * Then fills platform, backend and default_model_filename as Triton's
 * server-side auto-completion does, from each other and from the files of the
 * first sub-folder (model.onnx -> onnxruntime, model.plan -> tensorrt,
 * model.pt -> pytorch, model.py -> python, model.savedmodel/ or
 * model.graphdef -> tensorflow, model.xml -> openvino); a config that names
 * nothing takes its backend from a model name "<name>.<backend>", else is an
 * IFD_EINVAL "Invalid model name" error.
 *
 * Returns 0 and sets *out (owned by the caller: ifd_config_free), or a
 * negative code with a message naming the file (and line/column on a parse
 * error) in `err`. Blocking.
 */
int ifd_config_load(const char *model_dir, const char *model_name,
                    const ifd_config_opts_t *opts, ifd_model_config_t **out,
                    ifd_errmsg_t *err);

/**
 * Reads, completes and validates a model's config in Triton's order:
 * ifd_config_load, ifd_config_normalize, ifd_config_validate without the
 * inputs and outputs, those too when opts->strict, ifd_config_check_name,
 * then the inputs and outputs when !opts->strict (Triton checks them after
 * the backend's auto-completion). Returns 0 and sets *out (owned by the
 * caller: ifd_config_free), or the first failure's code and message. Blocking.
 */
int ifd_config_prepare(const char *model_dir, const char *model_name,
                       const ifd_config_opts_t *opts, ifd_model_config_t **out,
                       ifd_errmsg_t *err);

/**
 * ifd_config_prepare for a config given as JSON text (the "config" parameter
 * of a load request, protobuf JSON names) instead of `model_dir`'s
 * config.pbtxt; the files of `model_dir` still complete it. An empty name
 * becomes `model_name`. Returns 0 and *out, IFD_EPARSE when the text is not
 * a JSON object, or the first failure's code and message. Blocking.
 */
int ifd_config_prepare_json(const char *json, size_t len, const char *model_dir,
                            const char *model_name,
                            const ifd_config_opts_t *opts,
                            ifd_model_config_t **out, ifd_errmsg_t *err);

/**
 * Triton requires a model's config name to equal its folder's name: returns
 * 0, or IFD_EINVAL with Triton's "unexpected directory name" message.
 */
int ifd_config_check_name(const ifd_model_config_t *cfg, const char *dir_name,
                          ifd_errmsg_t *err);

/** Parses config text (used by ifd_config_load and by tests). Same contract:
 * an empty name becomes `model_name` when that is not NULL. */
int ifd_config_parse(const char *text, size_t len, const char *filename,
                     const char *model_name, ifd_model_config_t **out,
                     ifd_errmsg_t *err);

/** Frees a config from ifd_config_load / _parse / _from_json. NULL is fine. */
void ifd_config_free(ifd_model_config_t *cfg);

/**
 * Returns the backend name a config runs on: `backend` when set, else derived
 * from `platform` as Triton does (tensorrt_plan -> tensorrt,
 * tensorflow_graphdef / tensorflow_savedmodel -> tensorflow, onnxruntime_onnx
 * -> onnxruntime, pytorch_libtorch -> pytorch, ensemble -> "" (no backend)), or
 * NULL when neither names one. The result is static or borrowed from cfg.
 */
const char *ifd_config_backend_name(const ifd_model_config_t *cfg);

/**
 * Fills in the defaults Triton applies, in place (idempotent):
 *  - backend / platform / default_model_filename derived from each other as
 *    in ifd_config_load (without looking at files);
 *  - version_policy latest { num_versions: 1 } when unset;
 *  - dynamic_batching without preferred_batch_size prefers max_batch_size
 *    (when > 0); sequence_batching max_sequence_idle_microseconds 0 becomes
 *    1000000, and an oldest strategy without preferred sizes prefers
 *    max_batch_size;
 *  - for ensembles: model_transaction_policy created when unset (decoupled
 *    false until the loader sets what ifd_ensemble_decoupled finds);
 *  - except for ensembles: optimization created when unset, with
 *    input_pinned_memory / output_pinned_memory { enable: true } when unset;
 *    one instance_group { name: <model> } when there is none; each group
 *    named "<model>_<index>" when unnamed, KIND_AUTO resolved to KIND_GPU
 *    when gpu_count > 0 and every listed GPU exists, else KIND_CPU (Triton
 *    does not ask the backend), count < 1 set to 1 (2 for KIND_CPU with the
 *    tensorflow and onnxruntime backends), and KIND_GPU without gpus given
 *    all GPUs 0..gpu_count-1.
 * Returns 0 or IFD_ENOMEM.
 */
int ifd_config_normalize(ifd_model_config_t *cfg, const ifd_config_opts_t *opts,
                         ifd_errmsg_t *err);

/**
 * Applies a backend's preferred instance groups (most preferred first) to a
 * normalized config, as Triton's NormalizeInstanceGroup does when it
 * creates the model: where `d` says the config left them to the defaults,
 * a config without instance_group takes the kind and count of the first
 * preferred group it can use (a KIND_GPU one only when GPUs exist; its gpus
 * those of the listed that exist), and every group takes the count (and,
 * KIND_GPU, the gpus) of a preferred group of its kind, then Triton's
 * defaults. Nothing changes for an ensemble or an empty list. Then
 * validates the config again. Returns 0, IFD_ENOMEM, or the validation's
 * error.
 */
int ifd_config_prefer_groups(ifd_model_config_t *cfg,
                             const ifd_config_opts_t *opts,
                             const ifd_group_defaults_t *d,
                             const ifd_pref_group_t *pg, size_t n,
                             ifd_errmsg_t *err);

/**
 * Validates a normalized config with Triton's rules (ValidateModelConfig,
 * ValidateInstanceGroup, ValidateModelIOConfig) and returns 0, or IFD_EINVAL
 * (IFD_EINTERNAL for an unresolved KIND_AUTO) with Triton's message, which
 * names the model. In order: name present; backend present unless platform
 * is "ensemble", and empty for ensembles; a known backend matches its
 * platform; max_batch_size >= 0; version_policy set; dynamic batching
 * preferred sizes in [1, max_batch_size], priority levels and queue policies
 * consistent, preserve_ordering without priorities or DELAY; sequence
 * batching controls well formed (START/END/READY: one *_false_true list of
 * 2, CORRID: a data_type of (U)INT32/(U)INT64/STRING), oldest preferred
 * sizes in [1, max_batch_size], direct minimum_slot_utilization in [0, 1],
 * no response cache; ensembles: platform "ensemble", steps with model_name,
 * input_map and output_map, every tensor written once, used and reachable
 * from the inputs, no instance groups / optimization / warmup; no response
 * cache for decoupled models; model_metrics complete; instance groups
 * present, KIND_GPU only with existing GPUs, no gpus for KIND_CPU /
 * KIND_MODEL, profiles only for tensorrt_plan; every input and output with
 * a name, a data_type and non-empty dims each >= 1 or -1 (a scalar is
 * dims [ 1 ] with an empty reshape, allowed only when batching), reshape
 * consistent with dims, NHWC/NCHW with 3 dims, shape tensors and non-linear
 * IO only for tensorrt_plan; batch inputs and outputs well formed.
 *
 * Not checked, as Triton does not: that inputs or outputs exist, that
 * dynamic or sequence batching go with max_batch_size > 0, and latest
 * num_versions >= 1 (0 loads no version). Added by inferd: input names are
 * unique, and so are output names.
 */
int ifd_config_validate(const ifd_model_config_t *cfg,
                        const ifd_config_opts_t *opts, ifd_errmsg_t *err);

/**
 * The config as tritonserver 2.47 prints it for GET /v2/models/<m>/config:
 * ifd_pbjson_from_message, less the fields Triton added after 2.47
 * (is_non_linear_format_io, ensemble max_inflight_responses) while they
 * hold their default. New reference, NULL on ENOMEM.
 */
json_t *ifd_config_to_json(const ifd_model_config_t *cfg);

/**
 * Builds a config from JSON (TRITONBACKEND_ModelSetConfig, auto-complete).
 * Returns 0 and *out, or IFD_EINVAL / IFD_ENOMEM with a message.
 */
int ifd_config_from_json(const json_t *json, ifd_model_config_t **out,
                         ifd_errmsg_t *err);

/** The config's sequence_batching, or NULL when it has none (the scheduling
 *  choice is a oneof: check the case, not the pointer). */
static inline const Inference__ModelSequenceBatching *ifd_config_sequence(
    const ifd_model_config_t *cfg) {
  return cfg->scheduling_choice_case ==
                 INFERENCE__MODEL_CONFIG__SCHEDULING_CHOICE_SEQUENCE_BATCHING
             ? cfg->sequence_batching
             : NULL;
}

/** The config's dynamic_batching, or NULL when it has none. */
static inline const Inference__ModelDynamicBatching *ifd_config_dynamic(
    const ifd_model_config_t *cfg) {
  return cfg->scheduling_choice_case ==
                 INFERENCE__MODEL_CONFIG__SCHEDULING_CHOICE_DYNAMIC_BATCHING
             ? cfg->dynamic_batching
             : NULL;
}

/** Looks up a string parameter (`parameters { key: K value { string_value }
 * }`); returns the borrowed value or NULL. */
const char *ifd_config_param(const ifd_model_config_t *cfg, const char *key);

#endif
