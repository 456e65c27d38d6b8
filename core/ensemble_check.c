/*
 * core/ensemble_check.c - placeholder until helper VAL's module lands:
 * refuses an ensemble whose composing model is not ready.
 */
#include "core/ensemble_check.h"

int ifd_ensemble_check(const ifd_model_config_t *ens, ifd_ens_lookup_fn lookup,
                       void *arg, ifd_errmsg_t *err) {
  const Inference__ModelEnsembling *es = ens->ensemble_scheduling;
  for (size_t i = 0; i < es->n_step; i++) {
    const ifd_model_config_t *c;
    if (lookup(arg, es->step[i]->model_name, es->step[i]->model_version, &c) !=
        IFD_ENS_READY)
      return ifd_errf(err, IFD_EINVAL,
                      "ensemble %s contains models that are not available or "
                      "ambiguous: %s",
                      ens->name, es->step[i]->model_name);
  }
  return 0;
}

int ifd_ensemble_find_cycle(const ifd_model_config_t *ens,
                            ifd_ens_config_fn config_of, void *arg,
                            ifd_errmsg_t *err) {
  (void)ens;
  (void)config_of;
  (void)arg;
  (void)err;
  return 0;
}
