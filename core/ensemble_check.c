/*
 * core/ensemble_check.c - an ensemble checked against its composing models.
 *
 * The checks of Triton's dependency graph (missing models, required
 * versions, cycles) and of its ValidateEnsembleConfig, in that order and with
 * Triton's messages. Every ensemble tensor gets one record, made by the first
 * model that names it (the ensemble itself for its inputs and outputs, else
 * the first step, in step order, that maps it); every later mention must agree
 * with that record in data type and shape, and the messages name the model
 * each side was inferred from, as Triton's do. A data-flow pass then gives
 * each tensor the decoupled model it descends from, if any, and refuses a step
 * whose inputs descend from different ones.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "core/ensemble_check.h"

/* One ensemble tensor. */
typedef struct tnode {
  const char *name;    /* borrowed: from the ensemble's config */
  const char *model;   /* borrowed: the model its type and shape come from */
  int type;            /* Inference__DataType */
  const int64_t *dims; /* borrowed: from `model`'s config, n_dims long */
  size_t n_dims;
  int batching; /* `model` batches: a batch dimension goes first */
  int visited;  /* data flow: reached from the ensemble inputs */
  size_t label; /* data flow: decoupled ancestor (0: none) */
} tnode_t;

/* The tensors of one check. */
typedef struct tset {
  tnode_t *t; /* owned */
  size_t n, cap;
} tset_t;

static int streq(const char *a, const char *b) {
  return strcmp(a, b) == 0;
}

/* The config's ensemble_scheduling, or NULL: the scheduling choice is a
 * oneof, whose members share one pointer. */
static const Inference__ModelEnsembling *steps_of(
    const ifd_model_config_t *cfg) {
  return cfg->scheduling_choice_case ==
                 INFERENCE__MODEL_CONFIG__SCHEDULING_CHOICE_ENSEMBLE_SCHEDULING
             ? cfg->ensemble_scheduling
             : NULL;
}

static int has_output(const ifd_model_config_t *mc, const char *name) {
  for (size_t o = 0; o < mc->n_output; o++)
    if (streq(mc->output[o]->name, name)) return 1;
  return 0;
}

static tnode_t *find(tset_t *s, const char *name) {
  for (size_t i = 0; i < s->n; i++)
    if (streq(s->t[i].name, name)) return &s->t[i];
  return NULL;
}

/* Adds a record; the caller sized the set for every mention. */
static tnode_t *add(tset_t *s, const char *name, const char *model, int type,
                    const int64_t *dims, size_t n_dims, int batching) {
  tnode_t *t = &s->t[s->n++];
  memset(t, 0, sizeof(*t));
  t->name = name;
  t->model = model;
  t->type = type;
  t->dims = dims;
  t->n_dims = n_dims;
  t->batching = batching;
  return t;
}

static const char *type_name(int type) {
  const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
      &inference__data_type__descriptor, type);
  return v != NULL ? v->name : "TYPE_INVALID";
}

/* Holds iff a and b (with an optional -1 put before each) have the same rank
 * and agree wherever neither is -1. */
static int dims_match(const int64_t *a, size_t na, int ba, const int64_t *b,
                      size_t nb, int bb) {
  if (na + (ba != 0) != nb + (bb != 0)) return 0;
  for (size_t i = 0; i < na + (ba != 0); i++) {
    int64_t x = ba ? (i == 0 ? -1 : a[i - 1]) : a[i];
    int64_t y = bb ? (i == 0 ? -1 : b[i - 1]) : b[i];
    if (x != -1 && y != -1 && x != y) return 0;
  }
  return 1;
}

/* Writes "[d0,d1,...]", with the batch dimension first when t->batching. */
static void dims_str(char *buf, size_t len, const tnode_t *t) {
  size_t pos = 0;
  pos += (size_t)snprintf(buf + pos, len - pos, "[");
  if (t->batching && pos < len)
    pos += (size_t)snprintf(buf + pos, len - pos, "-1%s",
                            t->n_dims > 0 ? "," : "");
  for (size_t i = 0; i < t->n_dims && pos < len; i++)
    pos += (size_t)snprintf(buf + pos, len - pos, "%" PRId64 "%s", t->dims[i],
                            i + 1 < t->n_dims ? "," : "");
  if (pos < len) snprintf(buf + pos, len - pos, "]");
}

/* Triton's ValidateTensorConsistency: `have` is the record, the other side
 * what model `model` declares for the same tensor. */
static int consistent(const char *ens, const tnode_t *have, const char *model,
                      int type, const int64_t *dims, size_t n_dims,
                      int batching, ifd_errmsg_t *err) {
  if (have->type != type)
    return ifd_errf(err, IFD_EINVAL,
                    "in ensemble %s, ensemble tensor %s: inconsistent data "
                    "type: %s is inferred from model %s while %s is inferred "
                    "from model %s",
                    ens, have->name, type_name(have->type), have->model,
                    type_name(type), model);
  if (!dims_match(have->dims, have->n_dims, 0, dims, n_dims, 0) &&
      !dims_match(have->dims, have->n_dims, have->batching, dims, n_dims,
                  batching)) {
    tnode_t other = {.dims = dims, .n_dims = n_dims, .batching = batching};
    char a[256], b[256];
    dims_str(a, sizeof(a), have);
    dims_str(b, sizeof(b), &other);
    return ifd_errf(err, IFD_EINVAL,
                    "in ensemble %s, ensemble tensor %s: inconsistent shape: "
                    "%s is inferred from model %s while %s is inferred from "
                    "model %s",
                    ens, have->name, a, have->model, b, model);
  }
  return 0;
}

/* Records model `m`'s view of tensor `name`, or checks it against the
 * record. */
static int mention(tset_t *s, const char *ens, const char *name, const char *m,
                   int type, const int64_t *dims, size_t n_dims, int batching,
                   ifd_errmsg_t *err) {
  tnode_t *t = find(s, name);
  if (t == NULL) {
    add(s, name, m, type, dims, n_dims, batching);
    return 0;
  }
  return consistent(ens, t, m, type, dims, n_dims, batching, err);
}

/* Triton's ValidateTensorMapping for one step whose model has config `mc`. */
static int map_step(tset_t *s, const char *ens,
                    const Inference__ModelEnsembling__Step *st,
                    const ifd_model_config_t *mc, ifd_errmsg_t *err) {
  const char *m = st->model_name;
  const int batching = mc->max_batch_size > 0;
  int rc;

  for (size_t k = 0; k < st->n_input_map; k++) {
    size_t i = 0;
    while (i < mc->n_input && !streq(mc->input[i]->name, st->input_map[k]->key))
      i++;
    if (i == mc->n_input)
      return ifd_errf(err, IFD_EINVAL,
                      "in ensemble %s, ensemble tensor %s is mapping to "
                      "non-existing input %s in model %s",
                      ens, st->input_map[k]->value, st->input_map[k]->key, m);
  }
  for (size_t i = 0; i < mc->n_input; i++) {
    const Inference__ModelInput *in = mc->input[i];
    size_t mapped = 0;
    for (size_t k = 0; k < st->n_input_map; k++) {
      if (!streq(in->name, st->input_map[k]->key)) continue;
      rc = mention(s, ens, st->input_map[k]->value, m, in->data_type, in->dims,
                   in->n_dims, batching, err);
      if (rc < 0) return rc;
      mapped++;
    }
    if (mapped == 0 && !in->optional)
      return ifd_errf(err, IFD_EINVAL,
                      "in ensemble %s, input %s in model %s is not mapped to "
                      "any ensemble tensors",
                      ens, in->name, m);
    if (mapped > 1)
      return ifd_errf(err, IFD_EINVAL,
                      "in ensemble %s, input %s in model %s is mapped to "
                      "multiple ensemble tensors",
                      ens, in->name, m);
  }

  for (size_t k = 0; k < st->n_output_map; k++) {
    if (!has_output(mc, st->output_map[k]->key))
      return ifd_errf(err, IFD_EINVAL,
                      "in ensemble %s, ensemble tensor %s is mapped from "
                      "non-existing output %s in model %s",
                      ens, st->output_map[k]->value, st->output_map[k]->key, m);
  }
  for (size_t k = 0; k < st->n_output_map; k++) {
    size_t mapped = 0;
    for (size_t o = 0; o < mc->n_output; o++) {
      const Inference__ModelOutput *out = mc->output[o];
      if (!streq(out->name, st->output_map[k]->key)) continue;
      rc = mention(s, ens, st->output_map[k]->value, m, out->data_type,
                   out->dims, out->n_dims, batching, err);
      if (rc < 0) return rc;
      mapped++;
    }
    if (mapped > 1)
      return ifd_errf(err, IFD_EINVAL,
                      "in ensemble %s, multiple outputs in model %s are "
                      "mapped to the same ensemble tensor %s",
                      ens, m, st->output_map[k]->value);
  }
  return 0;
}

/*
 * The data flow from the ensemble inputs: a step runs once all its inputs are
 * reached; its outputs take a new label when its model is decoupled, else the
 * label its inputs share (inputs with different labels are Triton's error,
 * and so are ensemble outputs with different labels). Sets *decoupled when
 * some reached step is decoupled.
 */
static int flow(tset_t *s, const ifd_model_config_t *ens,
                const ifd_model_config_t *const *mc, int *decoupled,
                ifd_errmsg_t *err) {
  const Inference__ModelEnsembling *es = steps_of(ens);
  char *done = calloc(es->n_step + 1, 1);
  size_t labels = 0;
  int rc = 0;

  if (done == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  for (size_t i = 0; i < ens->n_input; i++)
    find(s, ens->input[i]->name)->visited = 1;
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t k = 0; k < es->n_step; k++) {
      const Inference__ModelEnsembling__Step *st = es->step[k];
      const tnode_t *first = NULL;
      int ready = 1;
      if (done[k]) continue;
      for (size_t j = 0; ready && j < st->n_input_map; j++)
        ready = find(s, st->input_map[j]->value)->visited;
      if (!ready) continue;
      done[k] = 1;
      changed = 1;
      /* config_ensemble.c refuses a step without maps. */
      if (NEVER(st->n_input_map == 0 || st->n_output_map == 0)) continue;
      first = find(s, st->input_map[0]->value);
      for (size_t j = 1; j < st->n_input_map; j++) {
        if (find(s, st->input_map[j]->value)->label == first->label) continue;
        rc = ifd_errf(err, IFD_EINVAL,
                      "in ensemble %s, step of model '%s' receives inputs "
                      "originated from different decoupled models",
                      ens->name, find(s, st->output_map[0]->value)->model);
        goto out_free_done;
      }
      size_t label = first->label;
      if (mc[k]->model_transaction_policy != NULL &&
          mc[k]->model_transaction_policy->decoupled)
        label = ++labels;
      for (size_t j = 0; j < st->n_output_map; j++) {
        tnode_t *t = find(s, st->output_map[j]->value);
        if (t->visited) continue;
        t->visited = 1;
        t->label = label;
      }
    }
  }
  for (size_t i = 1; i < ens->n_output; i++) {
    const tnode_t *a = find(s, ens->output[0]->name);
    const tnode_t *b = find(s, ens->output[i]->name);
    if (a->visited && b->visited && a->label != b->label) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "in ensemble %s, step of model '%s' receives inputs "
                    "originated from different decoupled models",
                    ens->name, ens->name);
      goto out_free_done;
    }
  }
  *decoupled = labels != 0;

out_free_done:
  free(done);
  return rc;
}

/* The whole check; *decoupled is set on success. */
static int check(const ifd_model_config_t *ens, ifd_ens_lookup_fn lookup,
                 void *arg, int *decoupled, ifd_errmsg_t *err) {
  const Inference__ModelEnsembling *es = steps_of(ens);
  const ifd_model_config_t **mc = NULL;
  ifd_ens_status_t *st = NULL;
  tset_t s = {0};
  int rc = 0;

  *decoupled = 0;
  if (es == NULL) return 0;
  mc = calloc(es->n_step + 1, sizeof(*mc));
  st = calloc(es->n_step + 1, sizeof(*st));
  s.cap = ens->n_input + ens->n_output;
  for (size_t k = 0; k < es->n_step; k++)
    s.cap += es->step[k]->n_input_map + es->step[k]->n_output_map;
  s.t = calloc(s.cap + 1, sizeof(*s.t));
  if (mc == NULL || st == NULL || s.t == NULL) {
    rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
    goto out_free;
  }

  /* Triton first connects the dependency graph (an unknown model fails the
   * ensemble, naming the first one), then looks at the versions. */
  for (size_t k = 0; k < es->n_step; k++) {
    st[k] = lookup(arg, es->step[k]->model_name, es->step[k]->model_version,
                   &mc[k]);
    if (st[k] == IFD_ENS_READY && mc[k] == NULL) st[k] = IFD_ENS_MISSING;
    if (st[k] == IFD_ENS_MISSING) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "ensemble %s contains models that are not available or "
                    "ambiguous: %s",
                    ens->name, es->step[k]->model_name);
      goto out_free;
    }
  }
  for (size_t k = 0; k < es->n_step; k++) {
    if (st[k] == IFD_ENS_NO_VERSION) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "ensemble '%s' depends on '%s' whose required version "
                    "%" PRId64 " is not loaded.",
                    ens->name, es->step[k]->model_name,
                    es->step[k]->model_version);
      goto out_free;
    }
  }

  for (size_t i = 0; i < ens->n_input; i++) {
    const Inference__ModelInput *in = ens->input[i];
    const Inference__ModelTensorReshape *r = in->reshape;
    if (find(&s, in->name) != NULL) continue;
    add(&s, in->name, ens->name, in->data_type, r ? r->shape : in->dims,
        r ? r->n_shape : in->n_dims, ens->max_batch_size > 0);
  }
  for (size_t i = 0; i < ens->n_output; i++) {
    const Inference__ModelOutput *out = ens->output[i];
    const Inference__ModelTensorReshape *r = out->reshape;
    if (find(&s, out->name) != NULL) continue;
    add(&s, out->name, ens->name, out->data_type, r ? r->shape : out->dims,
        r ? r->n_shape : out->n_dims, ens->max_batch_size > 0);
  }

  for (size_t k = 0; k < es->n_step; k++) {
    /* A batching ensemble may hold non-batching models: their shapes are
     * compared with the batch dimension added. */
    if (mc[k]->max_batch_size != 0 &&
        mc[k]->max_batch_size < ens->max_batch_size) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "ensemble %s allows maximum batch size %d, but it contains "
                    "model %s which only allows maximum batch size to be %d",
                    ens->name, ens->max_batch_size, es->step[k]->model_name,
                    mc[k]->max_batch_size);
      goto out_free;
    }
    rc = map_step(&s, ens->name, es->step[k], mc[k], err);
    if (rc < 0) goto out_free;
  }
  rc = flow(&s, ens, mc, decoupled, err);

out_free:
  free(s.t);
  free(st);
  free(mc);
  return rc;
}

int ifd_ensemble_check(const ifd_model_config_t *ens, ifd_ens_lookup_fn lookup,
                       void *arg, ifd_errmsg_t *err) {
  int decoupled;
  return check(ens, lookup, arg, &decoupled, err);
}

int ifd_ensemble_decoupled(const ifd_model_config_t *ens,
                           ifd_ens_lookup_fn lookup, void *arg) {
  ifd_errmsg_t err;
  int decoupled = 0;
  ifd_errclear(&err);
  return check(ens, lookup, arg, &decoupled, &err) == 0 && decoupled;
}

/* ---- cycles ---- */

/* The ensembles already walked, by name. */
typedef struct seen {
  const char **name; /* owned array; names borrowed from the configs */
  size_t n, cap;
} seen_t;

static int seen_add(seen_t *s, const char *name) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 8;
    const char **a = realloc(s->name, cap * sizeof(*a));
    if (a == NULL) return IFD_ENOMEM;
    s->name = a;
    s->cap = cap;
  }
  s->name[s->n++] = name;
  return 0;
}

static int seen_has(const seen_t *s, const char *name) {
  for (size_t i = 0; i < s->n; i++)
    if (streq(s->name[i], name)) return 1;
  return 0;
}

/* Triton's CircularDependencyCheck: from ensemble `cur`, towards the models
 * it depends on, looking for `start`. */
static int walk(const ifd_model_config_t *cur, const ifd_model_config_t *start,
                ifd_ens_config_fn config_of, void *arg, seen_t *seen,
                ifd_errmsg_t *err) {
  const Inference__ModelEnsembling *es = steps_of(cur);
  int rc;

  if (es == NULL) return 0;
  for (size_t k = 0; k < es->n_step; k++) {
    const char *m = es->step[k]->model_name;
    if (streq(m, start->name))
      return ifd_errf(err, IFD_EINVAL,
                      "circular dependency between ensembles: %s -> ... -> %s "
                      "-> %s",
                      start->name, cur->name, start->name);
    if (seen_has(seen, m)) continue;
    const ifd_model_config_t *up = config_of(arg, m);
    if (up == NULL || steps_of(up) == NULL) continue;
    if ((rc = seen_add(seen, m)) < 0) return ifd_errf(err, rc, "out of memory");
    if ((rc = walk(up, start, config_of, arg, seen, err)) < 0) return rc;
  }
  return 0;
}

int ifd_ensemble_find_cycle(const ifd_model_config_t *ens,
                            ifd_ens_config_fn config_of, void *arg,
                            ifd_errmsg_t *err) {
  seen_t seen = {0};
  int rc = seen_add(&seen, ens->name);
  if (rc < 0) return ifd_errf(err, rc, "out of memory");
  rc = walk(ens, ens, config_of, arg, &seen, err);
  free(seen.name);
  return rc;
}
