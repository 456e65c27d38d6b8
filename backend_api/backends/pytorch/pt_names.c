/*
 * backend_api/backends/pytorch/pt_names.c - Triton's pytorch_libtorch naming
 * rules (pt_names.h): conventions, bindings and their errors and warnings,
 * with Triton's texts where Triton has one and inferd's own where inferd
 * refuses what Triton lets through (a batch input target the convention
 * cannot place, an index beyond forward()'s arguments, two inputs on one
 * argument).
 */
#include "pt_names.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../common/be_util.h"

/* How the configuration's inputs (or outputs) find their place. */
typedef enum convention {
  FORWARD_ARGUMENT, /* inputs only: by forward()'s argument names */
  NAMED_INDEX,      /* by the index of <name>__<index> */
  STRICT_ORDER      /* by position in the configuration */
} convention_t;

/* A warning line, as pt_util.cc's ifd_pt_log writes it. */
static void warnf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warnf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ifd_be_vlog(TRITONSERVER_LOG_WARN, "pytorch", fmt, ap);
  va_end(ap);
}

long ifd_pt_named_index(const char *name) {
  const char *at = strstr(name, "__");
  long v = 0;
  /* Triton's reading of the text after the first "__" accepts an empty
   * one as index 0 ("x__"); a name with no index is not <name>__<index>,
   * so inferd refuses it. */
  if (at == NULL || at[2] == '\0') return -1;
  for (const char *p = at + 2; *p != '\0'; p++) {
    if (*p < '0' || *p > '9') return -1;
    if (v < INT_MAX) v = v * 10 + (*p - '0');
    if (v > INT_MAX) v = INT_MAX;
  }
  return v;
}

/* Position of `name` among forward()'s arguments, or -1. */
static long arg_position(const char *name, const char *const *args,
                         size_t n_args) {
  for (size_t i = 0; i < n_args; i++)
    if (strcmp(args[i], name) == 0) return (long)i;
  return -1;
}

/* The inputs' convention, decided from the configuration's inputs only;
 * logs Triton's warning when it falls back to the configuration's order. */
static convention_t input_convention(const char *model, const pt_name_t *ins,
                                     size_t n, const char *const *args,
                                     size_t n_args) {
  size_t i;
  for (i = 0; i < n; i++)
    if (ins[i].kind == PT_IO_INPUT &&
        arg_position(ins[i].name, args, n_args) < 0)
      break;
  if (i == n) return FORWARD_ARGUMENT;
  for (i = 0; i < n; i++)
    if (ins[i].kind == PT_IO_INPUT && ifd_pt_named_index(ins[i].name) < 0) {
      warnf(
          "input '%s' or previous input(s) are neither an input argument "
          "to the model '%s' nor do they follow the <name>__<index> naming "
          "convention. Falling back to enforcing strict ordering from model "
          "configuration.",
          ins[i].name, model);
      return STRICT_ORDER;
    }
  return NAMED_INDEX;
}

/* Triton's two errors for states whose names are not all <name>__<index>:
 * `conv` is the inputs' or outputs' convention, `kind` the kind of the
 * state names to check in ios. */
static TRITONSERVER_Error *check_states(const char *model, convention_t conv,
                                        const pt_name_t *ios, size_t n,
                                        pt_kind_t kind) {
  if (conv != NAMED_INDEX)
    return ifd_be_errf(
        TRITONSERVER_ERROR_INVALID_ARG,
        "PyTorch model '%s' is using sequence batching with state but "
        "not all inputs and outputs follow the <name>__<index> naming "
        "convention. ",
        model);
  for (size_t i = 0; i < n; i++)
    if (ios[i].kind == kind && ifd_pt_named_index(ios[i].name) < 0)
      return ifd_be_errf(
          TRITONSERVER_ERROR_INVALID_ARG,
          "PyTorch model '%s' is using sequence batching with state "
          "but state '%s' does not follow the <name>__<index> naming "
          "convention. ",
          model, ios[i].name);
  return NULL;
}

/* Where batch input target `name` goes under `conv`; `k` is its position
 * among the targets, `n_config` the number of configuration inputs. Triton
 * maps a target that is no argument name to argument 0 and reads a target
 * that is no <name>__<index> as some index; inferd refuses both. */
static TRITONSERVER_Error *place_target(const char *model, const char *name,
                                        convention_t conv,
                                        const char *const *args, size_t n_args,
                                        size_t n_config, size_t k, long *idx) {
  switch (conv) {
    case FORWARD_ARGUMENT:
      *idx = arg_position(name, args, n_args);
      if (*idx < 0)
        return ifd_be_errf(
            TRITONSERVER_ERROR_INVALID_ARG,
            "batch input '%s' of model '%s' is not an argument of "
            "forward(), as the configuration's inputs, named after "
            "its arguments, require",
            name, model);
      return NULL;
    case NAMED_INDEX:
      *idx = ifd_pt_named_index(name);
      if (*idx < 0)
        return ifd_be_errf(TRITONSERVER_ERROR_INVALID_ARG,
                           "batch input '%s' of model '%s' does not follow the "
                           "<name>__<index> naming convention, which the "
                           "configuration's inputs follow",
                           name, model);
      return NULL;
    case STRICT_ORDER:
      *idx = (long)(n_config + k);
      return NULL;
  }
  return NULL;
}

TRITONSERVER_Error *ifd_pt_bind_input_names(
    const char *model, const pt_name_t *ins, size_t n, const char *const *args,
    size_t n_args, size_t batch_input_entries, size_t *arg_index) {
  size_t n_config = 0, n_control = 0, n_state = 0, config_pos = 0, k = 0;
  convention_t conv;
  TRITONSERVER_Error *e;
  for (size_t i = 0; i < n; i++) {
    n_config += ins[i].kind == PT_IO_INPUT;
    n_control += ins[i].kind == PT_IO_CONTROL;
    n_state += ins[i].kind == PT_IO_STATE;
  }
  /* Triton counts batch_input entries, not their targets: an entry with
   * two targets then fails below on the argument it lacks. */
  if (n_config + batch_input_entries + n_control + n_state != n_args)
    return ifd_be_errf(
        TRITONSERVER_ERROR_INVALID_ARG,
        "unable to load model '%s', configuration expects %zu inputs, "
        "model provides %zu",
        model, n_config + batch_input_entries + n_control + n_state, n_args);
  for (size_t i = 0; i < n; i++)
    if (ins[i].kind == PT_IO_CONTROL && ifd_pt_named_index(ins[i].name) < 0)
      return ifd_be_errf(TRITONSERVER_ERROR_INTERNAL,
                         "input '%s' does not follow <name>__<index> naming "
                         "convention.",
                         ins[i].name);
  conv = input_convention(model, ins, n, args, n_args);
  if (n_state > 0) {
    e = check_states(model, conv, ins, n, PT_IO_STATE);
    if (e != NULL) return e;
  }
  for (size_t i = 0; i < n; i++) {
    long idx = -1;
    switch (ins[i].kind) {
      case PT_IO_INPUT:
        idx = conv == FORWARD_ARGUMENT ? arg_position(ins[i].name, args, n_args)
              : conv == NAMED_INDEX    ? ifd_pt_named_index(ins[i].name)
                                       : (long)config_pos;
        config_pos++;
        break;
      case PT_IO_BATCH_INPUT:
        e = place_target(model, ins[i].name, conv, args, n_args, n_config, k++,
                         &idx);
        if (e != NULL) return e;
        break;
      default: /* controls and states, checked above */
        idx = ifd_pt_named_index(ins[i].name);
        break;
    }
    if (idx < 0 || (size_t)idx >= n_args)
      return ifd_be_errf(TRITONSERVER_ERROR_INVALID_ARG,
                         "input '%s' of model '%s' refers to argument %ld of "
                         "forward(), which takes %zu",
                         ins[i].name, model, idx, n_args);
    for (size_t j = 0; j < i; j++)
      if (arg_index[j] == (size_t)idx)
        return ifd_be_errf(TRITONSERVER_ERROR_INVALID_ARG,
                           "input '%s' of model '%s' refers to argument %ld of "
                           "forward(), which another input already takes",
                           ins[i].name, model, idx);
    arg_index[i] = (size_t)idx;
  }
  return NULL;
}

TRITONSERVER_Error *ifd_pt_bind_output_names(const char *model,
                                             const pt_name_t *outs, size_t n,
                                             int returns_dict, int has_states,
                                             int *out_index) {
  convention_t conv = NAMED_INDEX;
  int config_pos = 0;
  /* A Dict result is read by output name, states included: no convention
   * applies (Triton's backend refuses such results, so there is no Triton
   * behaviour to keep, its warning included). */
  if (returns_dict) {
    for (size_t i = 0; i < n; i++) out_index[i] = -1;
    return NULL;
  }
  for (size_t i = 0; i < n; i++)
    if (outs[i].kind == PT_IO_OUTPUT && ifd_pt_named_index(outs[i].name) < 0) {
      warnf(
          "output '%s' or previous output(s) of the model '%s' do not "
          "follow the <name>__<index> naming convention. Falling back to "
          "enforcing strict ordering from model configuration.",
          outs[i].name, model);
      conv = STRICT_ORDER;
      break;
    }
  if (has_states) {
    TRITONSERVER_Error *e = check_states(model, conv, outs, n, PT_IO_STATE);
    if (e != NULL) return e;
  }
  for (size_t i = 0; i < n; i++) {
    if (outs[i].kind == PT_IO_OUTPUT && conv == STRICT_ORDER)
      out_index[i] = config_pos;
    else
      out_index[i] = (int)ifd_pt_named_index(outs[i].name);
    config_pos += outs[i].kind == PT_IO_OUTPUT;
  }
  return NULL;
}
