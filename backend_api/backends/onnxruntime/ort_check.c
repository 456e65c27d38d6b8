/*
 * backend_api/backends/onnxruntime/ort_check.c - the check of a model's
 * configuration against what its ONNX Runtime session declares, run at
 * instance initialize: input count, names, data types, dims (Triton's
 * CompareDimsSupported), scalar tensors, ragged and optional inputs,
 * sequence controls and states, with the texts of Triton's ORT backend so
 * that a log grep that works on Triton works here.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define ERR_ARG TRITONSERVER_ERROR_INVALID_ARG
#define ERR_INTERNAL TRITONSERVER_ERROR_INTERNAL

/* ---- checking the configuration against the session ------------------------
 */

/* Triton's CompareDimsSupported (backend_common.h). */
static TRITONSERVER_Error *compare_dims(const ort_model_t *m,
                                        const char *tensor, const ort_io_t *io,
                                        const int64_t *dims, size_t n,
                                        int exact) {
  char a[256], b[256];
  int64_t full[65];
  size_t nf = 0, i;
  int ok;
  if (m->max_batch_size > 0) {
    if (io->n_dims == 0 || io->dims[0] != -1)
      return ifd_be_errf(ERR_ARG,
                         "model '%s', tensor '%s': for the model to support "
                         "batching the shape should have at least 1 "
                         "dimension and the first dimension must be -1; but "
                         "shape expected by the model is %s",
                         m->name, tensor,
                         ifd_ort_shape_str(io->dims, io->n_dims, a, sizeof(a)));
    if (n + 1 > sizeof(full) / sizeof(full[0]))
      return ifd_be_errf(ERR_ARG, "model '%s', tensor '%s': too many dims",
                         m->name, tensor);
    full[nf++] = -1;
  }
  for (i = 0; i < n && nf < sizeof(full) / sizeof(full[0]); i++)
    full[nf++] = dims[i];
  ok = io->n_dims == nf;
  for (i = 0; ok && i < nf; i++)
    if (exact || io->dims[i] != -1) ok = io->dims[i] == full[i];
  if (ok) return NULL;
  if (m->max_batch_size > 0)
    return ifd_be_errf(
        ERR_ARG,
        "model '%s', tensor '%s': the model expects %zu dimensions (shape "
        "%s) but the model configuration specifies %zu dimensions (an "
        "initial batch dimension because max_batch_size > 0 followed by the "
        "explicit tensor shape, making complete shape %s)",
        m->name, tensor, io->n_dims,
        ifd_ort_shape_str(io->dims, io->n_dims, a, sizeof(a)), nf,
        ifd_ort_shape_str(full, nf, b, sizeof(b)));
  return ifd_be_errf(ERR_ARG,
                     "model '%s', tensor '%s': the model expects %zu "
                     "dimensions (shape %s) but the model configuration "
                     "specifies %zu dimensions (shape %s)",
                     m->name, tensor, io->n_dims,
                     ifd_ort_shape_str(io->dims, io->n_dims, a, sizeof(a)), n,
                     ifd_ort_shape_str(dims, n, b, sizeof(b)));
}

/* "unexpected inference input 'x', allowed inputs are: a, b" (names
 * sorted, as Triton lists them from a std::set). */
static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static TRITONSERVER_Error *not_allowed(const char *what, const char *name,
                                       const ort_io_list_t *l) {
  const char **names = calloc(l->n + 1, sizeof(char *));
  char list[1024];
  size_t len = 0;
  if (names == NULL) return ifd_be_errf(ERR_INTERNAL, "out of memory");
  for (size_t i = 0; i < l->n; i++) names[i] = l->v[i].name;
  qsort(names, l->n, sizeof(char *), cmp_str);
  list[0] = '\0';
  for (size_t i = 0; i < l->n && len < sizeof(list); i++)
    len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
                            i ? ", " : "", names[i]);
  free(names);
  return ifd_be_errf(ERR_ARG,
                     "unexpected inference %s '%s', allowed %ss are: %s", what,
                     name, what, list);
}

/* The type check of one configuration tensor against the model's. */
static TRITONSERVER_Error *check_type(const ort_model_t *m, const char *what,
                                      const char *name, const char *dtype,
                                      const ort_io_t *io) {
  ONNXTensorElementDataType t = ifd_ort_from_config(dtype);
  if (t == ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED)
    return ifd_be_errf(ERR_INTERNAL,
                       "unsupported datatype %s for %s '%s' for "
                       "model '%s'",
                       dtype != NULL ? dtype : "(none)", what, name, m->name);
  if (t != io->otype)
    return ifd_be_errf(ERR_ARG,
                       "unable to load model '%s', configuration expects "
                       "datatype %s for %s '%s', model provides %s",
                       m->name, dtype, what, name,
                       ifd_ort_config_name(io->otype));
  return NULL;
}

/* A scalar model tensor: every configured dim must be 1. */
static TRITONSERVER_Error *check_scalar(const ort_model_t *m, const char *name,
                                        const int64_t *dims, size_t n) {
  char a[256];
  for (size_t i = 0; i < n; i++)
    if (dims[i] != 1)
      return ifd_be_errf(ERR_ARG,
                         "unable to load model '%s', scalar tensor '%s', "
                         "should only provide 1 in the model configuration "
                         "when the model doesn't support batching. Model "
                         "configuration provided: %s.",
                         m->name, name,
                         ifd_ort_shape_str(dims, n, a, sizeof(a)));
  return NULL;
}

static TRITONSERVER_Error *check_inputs(const ort_instance_t *in,
                                        size_t expected) {
  const ort_model_t *m = in->model;
  const json_t *ios = json_object_get(m->config, "input");
  char a[256];
  if (in->inputs.n_graph != expected)
    return ifd_be_errf(ERR_ARG,
                       "unable to load model '%s', configuration expects %zu "
                       "inputs, model provides %zu",
                       m->name, expected, in->inputs.n_graph);
  for (size_t i = 0; json_is_array(ios) && i < json_array_size(ios); i++) {
    const json_t *io = json_array_get(ios, i);
    const char *name = ifd_ort_member_str(io, "name");
    const ort_io_t *mio;
    int64_t *dims = NULL;
    size_t n = 0;
    TRITONSERVER_Error *e;
    int optional = ifd_ort_member_bool(io, "optional");
    int ragged = ifd_ort_member_bool(io, "allow_ragged_batch");
    if (name == NULL) continue;
    if (optional && m->max_batch_size != 0)
      return ifd_be_errf(ERR_ARG,
                         "unable to load model '%s', optional input '%s' is "
                         "not supported for models that support batching",
                         m->name, name);
    mio = ifd_ort_io_find(&in->inputs, name);
    if (mio == NULL) return not_allowed("input", name, &in->inputs);
    e = check_type(m, "input", name, ifd_ort_member_str(io, "data_type"), mio);
    if (e == NULL) e = ifd_ort_config_shape(io, &dims, &n);
    if (e == NULL && optional && ragged)
      e = ifd_be_errf(ERR_ARG,
                      "unable to load model '%s', configuration expects "
                      "model provides input with shape [-1] for ragged "
                      "input '%s', which is not supported for optional input",
                      m->name, name);
    if (e == NULL && ragged) {
      if (mio->n_dims != 1 || mio->dims[0] != -1)
        e = ifd_be_errf(
            ERR_ARG,
            "unable to load model '%s', configuration expects "
            "model provides input with shape [-1]  for ragged "
            "input '%s', model provides %s",
            m->name, name,
            ifd_ort_shape_str(mio->dims, mio->n_dims, a, sizeof(a)));
    } else if (e == NULL) {
      e = mio->n_dims != 0 ? compare_dims(m, name, mio, dims, n, 0)
                           : check_scalar(m, name, dims, n);
    }
    free(dims);
    if (e != NULL) return e;
  }
  return NULL;
}

static TRITONSERVER_Error *check_outputs(ort_instance_t *in) {
  ort_model_t *m = in->model;
  const json_t *ios = json_object_get(m->config, "output");
  const json_t *states =
      json_object_get(json_object_get(m->config, "sequence_batching"), "state");
  for (size_t i = 0; json_is_array(ios) && i < json_array_size(ios); i++) {
    const json_t *io = json_array_get(ios, i);
    const char *name = ifd_ort_member_str(io, "name");
    const ort_io_t *mio;
    int64_t *dims = NULL;
    size_t n = 0;
    TRITONSERVER_Error *e;
    if (name == NULL) continue;
    mio = ifd_ort_io_find(&in->outputs, name);
    if (mio == NULL) return not_allowed("output", name, &in->outputs);
    e = check_type(m, "output", name, ifd_ort_member_str(io, "data_type"), mio);
    if (e == NULL) e = ifd_ort_config_shape(io, &dims, &n);
    /* A batch output's shape need not match the model's. */
    if (e == NULL && ifd_ort_out_find(m, name)->scatter_source == NULL)
      e = mio->n_dims != 0 ? compare_dims(m, name, mio, dims, n, 1)
                           : check_scalar(m, name, dims, n);
    free(dims);
    if (e != NULL) return e;
  }
  for (size_t i = 0; json_is_array(states) && i < json_array_size(states);
       i++) {
    const json_t *st = json_array_get(states, i);
    const char *name = ifd_ort_member_str(st, "output_name");
    const char *dtype = ifd_ort_member_str(st, "data_type");
    const ort_io_t *mio;
    TRITONSERVER_Error *e;
    if (name == NULL) continue;
    mio = ifd_ort_io_find(&in->outputs, name);
    if (mio == NULL) return not_allowed("output", name, &in->outputs);
    if (ifd_ort_from_config(dtype) == ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED)
      return ifd_be_errf(ERR_INTERNAL,
                         "unsupported datatype %s for output state '%s' for "
                         "model '%s'",
                         dtype != NULL ? dtype : "(none)", name, m->name);
    e = check_type(m, "output state", name, dtype, mio);
    if (e != NULL) return e;
  }
  /* Where each produced output sits among the model's outputs, and which
   * are scalars (their shape then comes from the configuration). */
  in->out_index = calloc(m->n_outs + 1, sizeof(size_t));
  if (in->out_index == NULL) return ifd_be_errf(ERR_INTERNAL, "out of memory");
  for (size_t i = 0; i < m->n_outs; i++) {
    const ort_io_t *mio = ifd_ort_io_find(&in->outputs, m->outs[i].name);
    in->out_index[i] = (size_t)(mio - in->outputs.v);
    m->outs[i].scalar = mio->n_dims == 0;
  }
  return NULL;
}

/* A sequence control: present in the model, dims [1], the control's type.
 * Returns 1 in *have when the configuration names one of `kind`. */
static TRITONSERVER_Error *check_control(const ort_instance_t *in,
                                         const char *kind, int *have) {
  const ort_model_t *m = in->model;
  const json_t *cis = json_object_get(
      json_object_get(m->config, "sequence_batching"), "control_input");
  char a[256];
  *have = 0;
  for (size_t i = 0; json_is_array(cis) && i < json_array_size(cis); i++) {
    const json_t *ci = json_array_get(cis, i);
    const json_t *cs = json_object_get(ci, "control");
    const char *name = ifd_ort_member_str(ci, "name");
    for (size_t j = 0; json_is_array(cs) && j < json_array_size(cs); j++) {
      const json_t *c = json_array_get(cs, j);
      const char *k = ifd_ort_member_str(c, "kind");
      const char *dtype = NULL;
      const ort_io_t *mio;
      size_t skip = m->max_batch_size > 0 ? 1 : 0;
      if (k == NULL || strcmp(k, kind) != 0 || name == NULL) continue;
      *have = 1;
      if (ifd_ort_array_size(c, "int32_false_true") > 0)
        dtype = "TYPE_INT32";
      else if (ifd_ort_array_size(c, "fp32_false_true") > 0)
        dtype = "TYPE_FP32";
      else if (ifd_ort_array_size(c, "bool_false_true") > 0)
        dtype = "TYPE_BOOL";
      else
        dtype = ifd_ort_member_str(c, "data_type");
      mio = ifd_ort_io_find(&in->inputs, name);
      if (mio == NULL)
        return ifd_be_errf(ERR_INTERNAL,
                           "configuration specified sequence control '%s', "
                           "but model does not provide that input",
                           name);
      if (mio->n_dims != skip + 1 || mio->dims[skip] != 1)
        return ifd_be_errf(
            ERR_ARG,
            "unable to load model '%s', sequence control '%s' in model has "
            "dims %s but dims [1] is expected",
            m->name, name,
            ifd_ort_shape_str(mio->dims + (mio->n_dims >= skip ? skip : 0),
                              mio->n_dims >= skip ? mio->n_dims - skip : 0, a,
                              sizeof(a)));
      if (ifd_ort_from_config(dtype) != mio->otype)
        return ifd_be_errf(ERR_ARG,
                           "unable to load model '%s', sequence control '%s', "
                           "the model expects data-type %s but the model "
                           "configuration specifies data-type %s",
                           m->name, name, ifd_ort_onnx_name(mio->otype),
                           dtype != NULL ? dtype : "(none)");
      return NULL;
    }
  }
  return NULL;
}

TRITONSERVER_Error *ifd_ort_check_config(ort_instance_t *in) {
  const ort_model_t *m = in->model;
  const json_t *ios = json_object_get(m->config, "input");
  const json_t *seq = json_object_get(m->config, "sequence_batching");
  static const char *const kinds[] = {
      "CONTROL_SEQUENCE_START", "CONTROL_SEQUENCE_END",
      "CONTROL_SEQUENCE_READY", "CONTROL_SEQUENCE_CORRID"};
  size_t expected = 0;
  TRITONSERVER_Error *e;
  for (size_t i = 0; json_is_array(ios) && i < json_array_size(ios); i++)
    if (!ifd_ort_member_bool(json_array_get(ios, i), "optional")) expected++;
  expected += ifd_ort_array_size(m->config, "batch_input");
  if (seq != NULL) {
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
      int have = 0;
      e = check_control(in, kinds[k], &have);
      if (e != NULL) return e;
      expected += (size_t)have;
    }
    expected += ifd_ort_array_size(seq, "state");
  }
  e = check_inputs(in, expected);
  if (e == NULL) e = check_outputs(in);
  return e;
}
