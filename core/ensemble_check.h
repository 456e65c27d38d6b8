/*
 * core/ensemble_check.h - an ensemble checked against its composing models.
 *
 * core/config_ensemble.c checks what an ensemble's own config can tell (every
 * tensor written once, used, reachable). What needs the composing models'
 * configs is here, as Triton checks it when it connects its dependency graph
 * and before it loads an ensemble (model_repository_manager.cc,
 * ensemble_utils.cc): the composing models exist and have the versions the
 * steps ask for, no ensemble depends on itself, the maps name tensors the
 * step models have and cover their inputs, each ensemble tensor has one data
 * type and a consistent shape, and no composing model batches less than the
 * ensemble. The module is pure: the registry answers the questions through
 * callbacks, on the loop thread, and nothing here blocks or keeps state.
 */
#ifndef IFD_CORE_ENSEMBLE_CHECK_H
#define IFD_CORE_ENSEMBLE_CHECK_H

#include <stdint.h>

#include "core/config.h"
#include "base/error.h"

/* What the registry knows of a composing model, for step `name` at `version`
 * (-1: the highest READY version). Returns IFD_ENS_READY and sets *cfg to that
 * version's config (borrowed), IFD_ENS_MISSING (no such model, or none of its
 * versions READY), or IFD_ENS_NO_VERSION (the model has READY versions but not
 * `version`). */
typedef enum {
  IFD_ENS_READY = 0,
  IFD_ENS_MISSING,
  IFD_ENS_NO_VERSION
} ifd_ens_status_t;
typedef ifd_ens_status_t (*ifd_ens_lookup_fn)(void *arg, const char *name,
                                              int64_t version,
                                              const ifd_model_config_t **cfg);

/**
 * Checks ensemble `ens` (normalized and validated by ifd_config_validate)
 * against its composing models' configs, as Triton's ValidateEnsembleConfig /
 * ensemble_utils do. A config without ensemble_scheduling passes. In Triton's
 * order:
 *  - every step's model is known (the first that is not: "ensemble E contains
 *    models that are not available or ambiguous: M");
 *  - every step's version other than -1 is loaded ("ensemble 'E' depends on
 *    'M' whose required version V is not loaded.");
 *  - then step by step: a composing model that batches (max_batch_size > 0)
 *    batches at least as much as the ensemble; every input_map key is an input
 *    of the step model and every non-optional input is mapped; every
 *    output_map key is an output; each ensemble tensor gets one data type, and
 *    shapes that agree with -1 as a wildcard, either as declared or with the
 *    batch dimension of a batching model prepended (so a batching model's
 *    [16] meets a non-batching [-1,16]); an ensemble input or output uses its
 *    reshape when it has one;
 *  - no step receives inputs that come from different decoupled models.
 * `lookup` is called with each step's model_name and model_version; the
 * configs it returns are borrowed for the call. Returns 0, or IFD_EINVAL with
 * Triton's message in `err` (IFD_ENOMEM when out of memory). Never blocks.
 */
int ifd_ensemble_check(const ifd_model_config_t *ens, ifd_ens_lookup_fn lookup,
                       void *arg, ifd_errmsg_t *err);

/**
 * Whether ensemble `ens` streams: some composing model reachable from its
 * inputs is decoupled (model_transaction_policy.decoupled), which Triton
 * writes into the ensemble's own model_transaction_policy after the check.
 * Call after ifd_ensemble_check returned 0, with the same lookup. Returns 1 or
 * 0 (0 too when a step's model cannot be looked up, or out of memory).
 */
int ifd_ensemble_decoupled(const ifd_model_config_t *ens,
                           ifd_ens_lookup_fn lookup, void *arg);

/* config_of(arg, name): the config of model `name` if it is an ensemble (any
 * state), else NULL. */
typedef const ifd_model_config_t *(*ifd_ens_config_fn)(void *arg,
                                                       const char *name);

/**
 * Finds a dependency cycle through ensembles starting at `ens`: walks the
 * steps depth first (each ensemble once), through the configs `config_of`
 * returns for the step models that are ensembles. Returns 0 when no path
 * leads back to `ens` (a cycle elsewhere is reported when the ensembles on
 * it are checked), or IFD_EINVAL "circular dependency between ensembles:
 * A -> ... -> B -> A" as Triton words it, A being `ens` and B the ensemble
 * with a step naming A. IFD_ENOMEM when out of memory. Never blocks.
 */
int ifd_ensemble_find_cycle(const ifd_model_config_t *ens,
                            ifd_ens_config_fn config_of, void *arg,
                            ifd_errmsg_t *err);

#endif
