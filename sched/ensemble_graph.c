/*
 * sched/ensemble_graph.c - an ensemble's config as a step graph (built once
 * at load, on the thread pool; read by sched/ensemble.c on the loop).
 */
#include <stdlib.h>
#include <string.h>

#include "sched/ensemble.h"
#include "sched/internal.h"

/* The scheduling choice is a oneof: its case tells, not the pointer. */
static const Inference__ModelEnsembling *ensembling(
    const ifd_model_config_t *cfg) {
  return cfg->scheduling_choice_case ==
                 INFERENCE__MODEL_CONFIG__SCHEDULING_CHOICE_ENSEMBLE_SCHEDULING
             ? cfg->ensemble_scheduling
             : NULL;
}

void ifd__ens_graph_free(ens_graph_t *g) {
  uint32_t i;
  for (i = 0; i < g->n_tensors; i++) free(g->tensors[i].readers);
  for (i = 0; i < g->n_steps; i++) {
    free(g->steps[i].in);
    free(g->steps[i].out);
    free(g->steps[i].req_outs);
  }
  free(g->tensors);
  free(g->steps);
  free(g->outputs);
  free(g->out_dims);
  free(g->out_ndims);
  free(g->needs);
  memset(g, 0, sizeof(*g));
}

int64_t ifd__ens_find_tensor(const ens_graph_t *g, const char *name) {
  uint32_t i;
  for (i = 0; i < g->n_tensors; i++)
    if (strcmp(g->tensors[i].name, name) == 0) return i;
  return -1;
}

/* The tensor `name`, added when new (`cap` is large enough: every name of
 * the config fits). */
static uint32_t tensor_of(ens_graph_t *g, const char *name) {
  int64_t t = ifd__ens_find_tensor(g, name);
  if (t >= 0) return (uint32_t)t;
  g->tensors[g->n_tensors].name = name;
  g->tensors[g->n_tensors].producer = -1;
  return g->n_tensors++;
}

/* Marks in `need` every step output `t` depends on; `need` doubles as the
 * visited set, so a cycle the config checks missed cannot loop. */
static void mark_needs(const ens_graph_t *g, uint32_t t, uint8_t *need) {
  int32_t p = g->tensors[t].producer;
  uint32_t k;
  if (p < 0 || need[p]) return;
  need[p] = 1;
  for (k = 0; k < g->steps[p].n_in; k++)
    mark_needs(g, g->steps[p].in[k].tensor, need);
}

int ifd__ens_graph_build(const ifd_model_config_t *cfg, ens_graph_t *g,
                         ifd_errmsg_t *err) {
  const Inference__ModelEnsembling *es = ensembling(cfg);
  size_t cap = cfg->n_input + cfg->n_output, i, k;
  uint32_t *nread = NULL;
  int rc;

  memset(g, 0, sizeof(*g));
  if (es == NULL || es->n_step == 0)
    return ifd_errf(err, IFD_EINVAL,
                    "ensemble '%s' must have at least one step", cfg->name);
  for (i = 0; i < es->n_step; i++)
    cap += es->step[i]->n_input_map + es->step[i]->n_output_map;
  g->tensors = calloc(cap ? cap : 1, sizeof(*g->tensors));
  g->steps = calloc(es->n_step, sizeof(*g->steps));
  g->outputs = calloc(cfg->n_output ? cfg->n_output : 1, sizeof(*g->outputs));
  g->out_dims = calloc(cfg->n_output ? cfg->n_output : 1, sizeof(*g->out_dims));
  g->out_ndims =
      calloc(cfg->n_output ? cfg->n_output : 1, sizeof(*g->out_ndims));
  if (g->tensors == NULL || g->steps == NULL || g->outputs == NULL ||
      g->out_dims == NULL || g->out_ndims == NULL)
    goto out_nomem;
  g->batching = cfg->max_batch_size > 0;
  for (i = 0; i < cfg->n_input; i++) tensor_of(g, cfg->input[i]->name);
  g->n_inputs = g->n_tensors;
  g->n_steps = (uint32_t)es->n_step;

  for (i = 0; i < es->n_step; i++) {
    const Inference__ModelEnsembling__Step *cs = es->step[i];
    ens_step_t *st = &g->steps[i];
    if (cs->model_name == NULL || cs->model_name[0] == '\0') {
      rc = ifd_errf(err, IFD_EINVAL, "step %zu of ensemble '%s' names no model",
                    i, cfg->name);
      goto out_free;
    }
    st->model = cs->model_name;
    st->version = cs->model_version;
    st->in = calloc(cs->n_input_map ? cs->n_input_map : 1, sizeof(*st->in));
    st->out = calloc(cs->n_output_map ? cs->n_output_map : 1, sizeof(*st->out));
    st->req_outs =
        calloc(cs->n_output_map ? cs->n_output_map : 1, sizeof(*st->req_outs));
    if (st->in == NULL || st->out == NULL || st->req_outs == NULL)
      goto out_nomem;
    for (k = 0; k < cs->n_input_map; k++) {
      st->in[k].name = cs->input_map[k]->key;
      st->in[k].tensor = tensor_of(g, cs->input_map[k]->value);
    }
    st->n_in = (uint32_t)cs->n_input_map;
    for (k = 0; k < cs->n_output_map; k++) {
      uint32_t t = tensor_of(g, cs->output_map[k]->value);
      if (g->tensors[t].producer >= 0 || t < g->n_inputs) {
        rc = ifd_errf(err, IFD_EINVAL,
                      "ensemble tensor '%s' of ensemble '%s' is written more "
                      "than once",
                      g->tensors[t].name, cfg->name);
        goto out_free;
      }
      g->tensors[t].producer = (int32_t)i;
      st->out[k].name = cs->output_map[k]->key;
      st->out[k].tensor = t;
      st->req_outs[k].name = cs->output_map[k]->key;
    }
    st->n_out = (uint32_t)cs->n_output_map;
  }

  /* Who reads each tensor: one entry per input binding. */
  nread = calloc(g->n_tensors ? g->n_tensors : 1, sizeof(*nread));
  if (nread == NULL) goto out_nomem;
  for (i = 0; i < g->n_steps; i++)
    for (k = 0; k < g->steps[i].n_in; k++) nread[g->steps[i].in[k].tensor]++;
  for (i = 0; i < g->n_tensors; i++) {
    g->tensors[i].readers =
        calloc(nread[i] ? nread[i] : 1, sizeof(*g->tensors[i].readers));
    if (g->tensors[i].readers == NULL) goto out_nomem;
  }
  for (i = 0; i < g->n_steps; i++)
    for (k = 0; k < g->steps[i].n_in; k++) {
      ens_tensor_t *t = &g->tensors[g->steps[i].in[k].tensor];
      t->readers[t->n_readers++] = (uint32_t)i;
    }
  free(nread);
  nread = NULL;

  for (i = 0; i < cfg->n_output; i++) {
    int64_t t = ifd__ens_find_tensor(g, cfg->output[i]->name);
    if (t < 0 || g->tensors[t].producer < 0) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "ensemble output '%s' of ensemble '%s' is written by no "
                    "step",
                    cfg->output[i]->name, cfg->name);
      goto out_free;
    }
    g->outputs[i] = (uint32_t)t;
    if (cfg->output[i]->reshape != NULL) {
      g->out_dims[i] = cfg->output[i]->reshape->shape;
      g->out_ndims[i] = (uint32_t)cfg->output[i]->reshape->n_shape;
    } else {
      g->out_dims[i] = cfg->output[i]->dims;
      g->out_ndims[i] = (uint32_t)cfg->output[i]->n_dims;
    }
  }
  g->n_outputs = (uint32_t)cfg->n_output;
  g->needs = calloc((size_t)g->n_outputs * g->n_steps + 1, 1);
  if (g->needs == NULL) goto out_nomem;
  for (i = 0; i < g->n_outputs; i++)
    mark_needs(g, g->outputs[i], &g->needs[i * g->n_steps]);
  return 0;

out_nomem:
  rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
out_free:
  free(nread);
  ifd__ens_graph_free(g);
  return rc;
}

int ifd__ensemble_is(const ifd_model_config_t *cfg) {
  return ensembling(cfg) != NULL ||
         (cfg->platform != NULL && strcmp(cfg->platform, "ensemble") == 0);
}
