/*
 * backend_api/backends/pytorch/pt_names.h - Triton's pytorch_libtorch naming
 * rules: which argument of forward() each input takes and which result each
 * output is, decided from names alone.
 *
 * Pure C11 logic over plain arrays, no libtorch: pt_model.cc reads
 * forward()'s schema and hands the names here; test/unit/test_pt_names.c
 * checks every rule and text. The rules (docs/backends.md, "PyTorch
 * backend"):
 *   - inputs, decided from the configuration's inputs only: named after
 *     forward()'s arguments (FORWARD_ARGUMENT), else all <name>__<index>
 *     (NAMED_INDEX), else the configuration's order (STRICT, warned);
 *   - control inputs and states are always bound by their index;
 *   - batch inputs' targets follow the inputs' convention;
 *   - outputs are <name>__<index> or in the configuration's order (warned),
 *     and read by name, with no convention, when forward() returns a Dict;
 *   - with states, inputs and outputs must all be <name>__<index>.
 */
#ifndef IFD_BACKENDS_PYTORCH_PT_NAMES_H
#define IFD_BACKENDS_PYTORCH_PT_NAMES_H

#include <stddef.h>

#include "triton/core/tritonserver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where an input of forward() comes from, or what an output is. */
typedef enum pt_kind_t {
  PT_IO_INPUT,       /* inputs: the configuration's `input` */
  PT_IO_CONTROL,     /* inputs: a sequence batcher control input */
  PT_IO_STATE,       /* inputs: a state's input_name; outputs: a state's
                        output_name that is no configuration output */
  PT_IO_BATCH_INPUT, /* inputs: a target of a `batch_input` */
  PT_IO_OUTPUT       /* outputs: the configuration's `output` */
} pt_kind_t;

/* One name to bind. */
typedef struct pt_name_t {
  const char *name; /* borrowed: outlives the call */
  pt_kind_t kind;
} pt_name_t;

/**
 * The index of a <name>__<index> name: one whose text after its first "__"
 * is one or more digits. Returns the index (saturated at INT_MAX, which no
 * forward() reaches), or -1 when `name` is no such name. Triton also takes
 * "x__" (nothing after the "__") as index 0; inferd refuses it.
 */
long ifd_pt_named_index(const char *name);

/**
 * Binds the n inputs `ins` of model `model` to forward()'s n_args arguments
 * named `args` (self excluded, in order): ins holds the configuration's
 * inputs in order, then the control inputs, the states' input_names and the
 * batch inputs' targets (kinds PT_IO_INPUT..PT_IO_BATCH_INPUT).
 * `batch_input_entries` is the number of `batch_input` entries (not targets),
 * which is what Triton counts. Logs Triton's warning when the configuration's
 * order is used.
 *
 * Returns NULL with arg_index[i] the argument ins[i] takes (OUT: n entries,
 * all distinct), or the error (the caller's), arg_index then undefined:
 * INVALID_ARG for a count of arguments other than inputs + batch_input
 * entries + controls + states, for states without <name>__<index> names
 * everywhere, for a batch input target the convention cannot place, an
 * index beyond forward()'s arguments or two inputs on one argument;
 * INTERNAL for a control input that is no <name>__<index>.
 */
TRITONSERVER_Error *ifd_pt_bind_input_names(
    const char *model, const pt_name_t *ins, size_t n, const char *const *args,
    size_t n_args, size_t batch_input_entries, size_t *arg_index);

/**
 * Binds the n outputs `outs` of model `model` to forward()'s results: outs
 * holds the configuration's outputs in order (PT_IO_OUTPUT), then the
 * states' output_names that are no configuration output (PT_IO_STATE).
 * `returns_dict`: forward() is declared to return a Dict, whose values are
 * looked up by output name. `has_states`: the configuration has
 * sequence_batching.state (which may name configuration outputs only).
 * Logs Triton's warning when the configuration's order is used.
 *
 * Returns NULL with out_index[i] the position of outs[i] in a tuple or list
 * result, or -1 for every output of a Dict result (OUT: n entries); or the
 * INVALID_ARG error (the caller's) when states meet names that are no
 * <name>__<index>, out_index then undefined. Positions are not checked
 * against the result here: execute does, with Triton's text.
 */
TRITONSERVER_Error *ifd_pt_bind_output_names(const char *model,
                                             const pt_name_t *outs, size_t n,
                                             int returns_dict, int has_states,
                                             int *out_index);

#ifdef __cplusplus
}
#endif

#endif
