/*
 * core/config_validate.c - Triton's rules for a model config.
 *
 * ifd_config_validate checks a normalized config as tritonserver's
 * ValidateModelConfig, ValidateInstanceGroup and ValidateModelIOConfig do,
 * with their messages (users grep their logs for them): inputs and outputs,
 * batch inputs and outputs, the dynamic and sequence batchers, instance
 * groups and model metrics. The ensemble rules are in config_ensemble.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config_internal.h"
#include "core/dtype.h"

/* Triton prints its default minimum compute capability in one message. */

static const char *enum_name(const ProtobufCEnumDescriptor *desc, int v) {
  const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(desc, v);
  return ev != NULL ? ev->name : "<unknown>";
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
      if (!ifd__config_has_output(cfg, bo->target_name[k]))
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
                          ifd_config_gpus_usable(opts) == 0
                              ? "no GPUs are available"
                              : "specifies no GPUs");
        for (size_t k = 0; k < g->n_gpus; k++) {
          if (!ifd_config_gpu_ok(opts, g->gpus[k])) {
            char list[512] = "";
            size_t len = 0;
            for (int d = 0; d < opts->gpu_count && len < sizeof(list); d++)
              if (ifd_config_gpu_ok(opts, d))
                len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d",
                                        len > 0 ? ", " : "", d);
            return ifd_errf(err, IFD_EINVAL,
                            "instance group %s of model %s specifies invalid "
                            "or unsupported gpu id %d. GPUs with at least the "
                            "minimum required CUDA compute compatibility "
                            "of %f are: %s",
                            g->name, m, g->gpus[k],
                            opts->min_cc > 0 ? opts->min_cc : 6.0, list);
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
    /* Prometheus needs strictly increasing bucket bounds (Triton's client
     * library throws on others). */
    for (size_t b = 1; b < c->histogram_options->n_buckets; b++)
      if (!(c->histogram_options->buckets[b] >
            c->histogram_options->buckets[b - 1]))
        return ifd_errf(err, IFD_EINVAL,
                        "histogram options of metric family '%s' must "
                        "specify 'buckets' in strictly increasing order",
                        c->metric_identifier->family);
  }
  return 0;
}

/* ---- validate ---- */

int ifd__config_validate_model(const ifd_model_config_t *cfg,
                               const ifd_config_opts_t *opts,
                               ifd_errmsg_t *err) {
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
  enum ifd__config_family fam = ifd__config_family_of_backend(cfg->backend);
  if (fam != FAM_UNKNOWN &&
      fam != ifd__config_family_of_platform(cfg->platform))
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
      rc = ifd__config_validate_ensemble(cfg, err);
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
  return 0;
}

int ifd__config_validate_io(const ifd_model_config_t *cfg, ifd_errmsg_t *err) {
  int rc = validate_io(cfg, err);
  return rc < 0 ? rc : validate_batch_io(cfg, err);
}

int ifd_config_validate(const ifd_model_config_t *cfg,
                        const ifd_config_opts_t *opts, ifd_errmsg_t *err) {
  int rc = ifd__config_validate_model(cfg, opts, err);
  return rc < 0 ? rc : ifd__config_validate_io(cfg, err);
}
