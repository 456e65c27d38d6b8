/*
 * core/config_defaults.c - the defaults Triton fills into a model config.
 *
 * ifd_config_normalize: the version policy, the batchers' preferred sizes and
 * idle time, pinned memory, and the instance groups (names, kind, count,
 * GPUs), as tritonserver's NormalizeModelConfig and NormalizeInstanceGroup
 * complete them; an ensemble's transaction policy, as Triton's ensemble
 * validation sets it.
 */
#include <stdlib.h>
#include <string.h>

#include "core/config_internal.h"

/* Triton's default for sequence_batching.max_sequence_idle_microseconds. */
#define SEQUENCE_IDLE_DEFAULT_US 1000000u

static void *new_msg(const ProtobufCMessageDescriptor *desc) {
  void *m = malloc(desc->sizeof_message);
  if (m != NULL) protobuf_c_message_init(desc, m);
  return m;
}

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

/* Triton's default instance count (SetDefaultInstanceCount): two CPU
 * instances for TensorFlow and ONNX Runtime, one otherwise. */
static int32_t default_count(const ifd_model_config_t *cfg, const group_t *g) {
  if (g->kind == INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_CPU &&
      (streq(cfg->backend, TF_BACKEND) || streq(cfg->backend, ORT_BACKEND)))
    return 2;
  return 1;
}

/* KIND_AUTO runs on GPU only when GPUs exist and every listed one does. */
static void resolve_auto(group_t *g, const ifd_config_opts_t *opts) {
  if (g->kind != INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_AUTO) return;
  int gpu = ifd_config_gpus_usable(opts) > 0;
  for (size_t k = 0; gpu && k < g->n_gpus; k++)
    if (!ifd_config_gpu_ok(opts, g->gpus[k])) gpu = 0;
  g->kind = gpu ? INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_GPU
                : INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_CPU;
}

static int normalize_groups(ifd_model_config_t *cfg,
                            const ifd_config_opts_t *opts) {
  ifd_group_defaults_t *d = opts->defaults_out;
  int rc;

  if (d != NULL) memset(d, 0, sizeof(*d));
  if (cfg->n_instance_group == 0) {
    if (d != NULL) d->added = 1;
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
    if ((rc = ifd__config_set_str(&g->name, cfg->name)) < 0) return rc;
  }

  for (size_t i = 0; i < cfg->n_instance_group; i++) {
    group_t *g = cfg->instance_group[i];

    if (empty(g->name)) {
      char name[1024];
      snprintf(name, sizeof(name), "%s_%zu", cfg->name, i);
      if ((rc = ifd__config_set_str(&g->name, name)) < 0) return rc;
    }

    resolve_auto(g, opts);

    /* Triton starts two CPU instances for TensorFlow and ONNX Runtime. */
    if (g->count < 1) {
      if (d != NULL && i < 64) d->count_unset |= (uint64_t)1 << i;
      g->count = default_count(cfg, g);
    }

    if (g->kind == INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_GPU &&
        g->n_gpus == 0) {
      if (d != NULL && i < 64) d->gpus_unset |= (uint64_t)1 << i;
      for (int d = 0; d < opts->gpu_count; d++)
        if (ifd_config_gpu_ok(opts, d) &&
            (rc = push_i32(&g->gpus, &g->n_gpus, d)) < 0)
          return rc;
    }
  }
  return 0;
}

/* Adds to `g` the GPUs of `pg` that a model may run on. */
static int add_usable_gpus(group_t *g, const ifd_pref_group_t *pg,
                           const ifd_config_opts_t *opts) {
  for (size_t k = 0; k < pg->n_gpus; k++)
    if (ifd_config_gpu_ok(opts, pg->gpus[k]) &&
        push_i32(&g->gpus, &g->n_gpus, pg->gpus[k]) < 0)
      return IFD_ENOMEM;
  return 0;
}

int ifd_config_prefer_groups(ifd_model_config_t *cfg,
                             const ifd_config_opts_t *opts,
                             const ifd_group_defaults_t *d,
                             const ifd_pref_group_t *pg, size_t n,
                             ifd_errmsg_t *err) {
  const int usable = ifd_config_gpus_usable(opts) > 0;

  if (n == 0 ||
      cfg->scheduling_choice_case ==
          INFERENCE__MODEL_CONFIG__SCHEDULING_CHOICE_ENSEMBLE_SCHEDULING)
    return 0;
  /* Undo what the defaults filled in, then redo it in Triton's order with
   * the backend's preferences first. */
  for (size_t i = 0; i < cfg->n_instance_group && i < 64; i++) {
    group_t *g = cfg->instance_group[i];
    int added = d->added && i == 0;
    if (added || ((d->count_unset >> i) & 1)) g->count = 0;
    if (added || ((d->gpus_unset >> i) & 1)) {
      free(g->gpus);
      g->gpus = NULL;
      g->n_gpus = 0;
    }
    if (added) g->kind = INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_AUTO;
  }
  if (d->added && cfg->n_instance_group > 0) {
    /* The most preferred group this machine can run (Triton skips a
     * KIND_GPU one without GPUs, keeping its kind and count meanwhile). */
    group_t *g = cfg->instance_group[0];
    for (size_t p = 0; p < n; p++) {
      g->kind = pg[p].kind;
      g->count = pg[p].count;
      if (pg[p].kind == INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_GPU) {
        if (!usable) continue;
        if (add_usable_gpus(g, &pg[p], opts) < 0) goto out_nomem;
      } else if (pg[p].kind ==
                 INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_AUTO) {
        for (size_t k = 0; k < pg[p].n_gpus; k++)
          if (push_i32(&g->gpus, &g->n_gpus, pg[p].gpus[k]) < 0) goto out_nomem;
      }
      break;
    }
  }
  for (size_t i = 0; i < cfg->n_instance_group; i++) {
    group_t *g = cfg->instance_group[i];
    resolve_auto(g, opts);
    for (size_t p = 0; p < n; p++) {
      if (g->kind != pg[p].kind) continue;
      if (g->kind == INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_GPU &&
          g->n_gpus == 0 && pg[p].n_gpus > 0) {
        if (add_usable_gpus(g, &pg[p], opts) < 0) goto out_nomem;
        if (g->n_gpus == 0) continue;
      }
      if (g->count < 1 && pg[p].count > 0) g->count = pg[p].count;
    }
    if (g->count < 1) g->count = default_count(cfg, g);
    if (g->kind == INFERENCE__MODEL_INSTANCE_GROUP__KIND__KIND_GPU &&
        g->n_gpus == 0)
      for (int dv = 0; dv < opts->gpu_count; dv++)
        if (ifd_config_gpu_ok(opts, dv) &&
            push_i32(&g->gpus, &g->n_gpus, dv) < 0)
          goto out_nomem;
  }
  return ifd_config_validate(cfg, opts, err);
out_nomem:
  return ifd_errf(err, IFD_ENOMEM, "out of memory");
}

int ifd_config_normalize(ifd_model_config_t *cfg, const ifd_config_opts_t *opts,
                         ifd_errmsg_t *err) {
  int rc;

  rc = ifd__config_autofill_backend(cfg, cfg->name, NULL, err);
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
    /* No strategy is the direct one, and Triton's config says so. */
    if (sb->strategy_choice_case ==
        INFERENCE__MODEL_SEQUENCE_BATCHING__STRATEGY_CHOICE__NOT_SET) {
      sb->direct = new_msg(
          &inference__model_sequence_batching__strategy_direct__descriptor);
      if (sb->direct == NULL) goto out_nomem;
      sb->strategy_choice_case =
          INFERENCE__MODEL_SEQUENCE_BATCHING__STRATEGY_CHOICE_DIRECT;
    }
    if (sb->strategy_choice_case ==
            INFERENCE__MODEL_SEQUENCE_BATCHING__STRATEGY_CHOICE_OLDEST &&
        sb->oldest->n_preferred_batch_size == 0 && cfg->max_batch_size > 0 &&
        push_i32(&sb->oldest->preferred_batch_size,
                 &sb->oldest->n_preferred_batch_size, cfg->max_batch_size) < 0)
      goto out_nomem;
  }

  /* Ensembles run no instances of their own: no optimization, no groups.
   * Triton gives them a transaction policy (decoupled when a composing model
   * is: ifd_ensemble_decoupled, once those are loaded). */
  if (cfg->scheduling_choice_case ==
      INFERENCE__MODEL_CONFIG__SCHEDULING_CHOICE_ENSEMBLE_SCHEDULING) {
    if (cfg->model_transaction_policy == NULL) {
      cfg->model_transaction_policy =
          new_msg(&inference__model_transaction_policy__descriptor);
      if (cfg->model_transaction_policy == NULL) goto out_nomem;
    }
  } else {
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
