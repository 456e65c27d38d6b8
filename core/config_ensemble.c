/*
 * core/config_ensemble.c - the rules for an ensemble's config.
 *
 * An ensemble runs no instances of its own: its config lists steps, each a
 * model with an input_map (model input -> ensemble tensor) and an output_map
 * (model output -> ensemble tensor). The checks here are those of Triton's
 * ValidateEnsembleSchedulingConfig that need only the ensemble's own config:
 * every tensor written once, used, and reachable from the ensemble inputs.
 * Nothing here looks at the configs of the step models.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config_internal.h"

/* ---- validate: ensembles ---- */

/* One ensemble tensor in the data-flow check. */
typedef struct ens_tensor {
  const char *name; /* borrowed from the config */
  int is_output;    /* written by some step */
  size_t producer;  /* the step that writes it, when is_output */
  int ready;        /* computable from the ensemble inputs */
  int consumed;     /* read by some step */
  int seen;         /* visited by unconnected() */
} ens_tensor_t;

static ens_tensor_t *ens_find(ens_tensor_t *t, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (streq(t[i].name, name)) return &t[i];
  return NULL;
}

/*
 * For an ensemble output `out` that is not ready: walks back from it, each
 * time to the first input of the writing step that is not ready and not yet
 * visited, as Triton does, and returns the last tensor reached when that is
 * not `out` itself (a tensor nothing writes, typically), else NULL (the walk
 * found only a cycle back to `out`).
 */
static const ens_tensor_t *unconnected(const Inference__ModelEnsembling *es,
                                       ens_tensor_t *t, size_t nt,
                                       ens_tensor_t *out) {
  ens_tensor_t *last = out;
  while (last->is_output) {
    const Inference__ModelEnsembling__Step *st = es->step[last->producer];
    ens_tensor_t *next = NULL;
    for (size_t k = 0; next == NULL && k < st->n_input_map; k++) {
      ens_tensor_t *e = ens_find(t, nt, st->input_map[k]->value);
      if (!e->ready && !e->seen) next = e;
    }
    if (next == NULL) break;
    next->seen = 1;
    last = next;
  }
  return last != out ? last : NULL;
}

int ifd__config_validate_ensemble(const ifd_model_config_t *cfg,
                                  ifd_errmsg_t *err) {
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
      e->producer = s;
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
      const ens_tensor_t *src = unconnected(es, t, nt, e);
      if (src != NULL)
        rc = ifd_errf(err, IFD_EINVAL,
                      "output '%s' for ensemble '%s' is not written: at least "
                      "one of its depending tensors, '%s', is not connected",
                      cfg->output[i]->name, m, src->name);
      else
        rc = ifd_errf(err, IFD_EINVAL,
                      "output '%s' for ensemble '%s' is not written",
                      cfg->output[i]->name, m);
      goto out_free_t;
    }
  }
  for (size_t i = 0; i < nt; i++) {
    if (ifd__config_has_output(cfg, t[i].name)) continue;
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
