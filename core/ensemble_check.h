/*
 * core/ensemble_check.h - checks of an ensemble against its composing
 * models (placeholder until helper VAL's module lands).
 */
#ifndef IFD_CORE_ENSEMBLE_CHECK_H
#define IFD_CORE_ENSEMBLE_CHECK_H

#include <stdint.h>

#include "core/config.h"
#include "core/error.h"

typedef enum {
  IFD_ENS_READY = 0,
  IFD_ENS_MISSING,
  IFD_ENS_NO_VERSION
} ifd_ens_status_t;
typedef ifd_ens_status_t (*ifd_ens_lookup_fn)(void *arg, const char *name,
                                              int64_t version,
                                              const ifd_model_config_t **cfg);
int ifd_ensemble_check(const ifd_model_config_t *ens, ifd_ens_lookup_fn lookup,
                       void *arg, ifd_errmsg_t *err);
typedef const ifd_model_config_t *(*ifd_ens_config_fn)(void *arg,
                                                       const char *name);
int ifd_ensemble_find_cycle(const ifd_model_config_t *ens,
                            ifd_ens_config_fn config_of, void *arg,
                            ifd_errmsg_t *err);

#endif
