/*
 * sched/ensemble.h - what the ensemble scheduler's two files share: the step
 * graph an ensemble's config becomes at load (sched/ensemble_graph.c), which
 * the executor (sched/ensemble.c) reads, never writes, while requests run.
 * Every name in the graph is borrowed from the ensemble's config, which the
 * model keeps unchanged while it is loaded.
 */
#ifndef IFD_SCHED_ENSEMBLE_H
#define IFD_SCHED_ENSEMBLE_H

#include <stdint.h>

#include "core/config.h"
#include "core/infer.h"

typedef struct ens_bind {
  const char *name; /* borrowed: config: the composing model's tensor */
  uint32_t tensor;  /* the ensemble tensor */
} ens_bind_t;

typedef struct ens_step {
  const char *model; /* borrowed: config */
  int64_t version;
  ens_bind_t *in; /* owned: n_in entries, config order */
  uint32_t n_in;
  ens_bind_t *out; /* owned: n_out entries */
  uint32_t n_out;
  ifd_output_req_t *req_outs; /* owned: the outputs a child asks for, one
                                 per `out`, names borrowed from the config */
} ens_step_t;

typedef struct ens_tensor {
  const char *name;  /* borrowed: config */
  int32_t producer;  /* the step that writes it; -1: an ensemble input */
  uint32_t *readers; /* owned: a step index per input binding reading it */
  uint32_t n_readers;
} ens_tensor_t;

typedef struct ens_graph {
  ens_tensor_t *tensors;        /* owned */
  uint32_t n_tensors, n_inputs; /* tensors [0, n_inputs): ensemble inputs */
  ens_step_t *steps;            /* owned */
  uint32_t n_steps;
  uint32_t *outputs; /* owned: the tensor of each config output */
  uint32_t n_outputs;
  const int64_t **out_dims; /* owned array, entries borrowed from the
                               config: each output's dims (its reshape when
                               it has one), without the batch dimension */
  uint32_t *out_ndims;      /* owned */
  int batching;             /* the ensemble's max_batch_size > 0 */
  uint8_t *needs; /* owned: n_outputs x n_steps, 1 where the output needs
                     the step */
} ens_graph_t;

/**
 * Builds the graph of ensemble config `cfg` into *g: tensors (the ensemble
 * inputs first, in config order, then every tensor a step writes), steps,
 * the readers of each tensor, the steps each ensemble output needs. Returns
 * 0 (free *g with ifd__ens_graph_free), or IFD_ENOMEM, or IFD_EINVAL naming
 * the model when the config is not a well-formed ensemble (the config
 * checks refuse those first; these only keep the executor safe); *g then
 * holds nothing. Thread pool (load) or tests.
 */
int ifd__ens_graph_build(const ifd_model_config_t *cfg, ens_graph_t *g,
                         ifd_errmsg_t *err);

/** Frees what ifd__ens_graph_build allocated; *g is zeroed. */
void ifd__ens_graph_free(ens_graph_t *g);

/** The index of tensor `name` in g->tensors, or -1. */
int64_t ifd__ens_find_tensor(const ens_graph_t *g, const char *name);

#endif
