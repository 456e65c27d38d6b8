/*
 * core/model.c - model version references and request validation.
 *
 * Validation follows what tritonserver checks before a request reaches a
 * scheduler, with messages of the same substance, so a client sees the same
 * reasons from both servers.
 */
#include "core/model.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "core/classify.h"

void ifd_model_ref(ifd_model_t *m) {
  m->refs++;
}

void ifd_model_unref(ifd_model_t *m) {
  IFD_ASSERT(m->refs > 0);
  if (--m->refs == 0 && ALWAYS(m->free_fn != NULL)) m->free_fn(m);
}

static const char *req_id(const ifd_request_t *req) {
  return (req->id != NULL && req->id[0] != '\0') ? req->id : "<id_unknown>";
}

/* Model inputs and outputs are few (a handful); a linear scan over them beats
 * building an index per model. */
static const Inference__ModelInput *config_input(const ifd_model_config_t *c,
                                                 const char *name) {
  size_t i;
  for (i = 0; i < c->n_input; i++)
    if (strcmp(c->input[i]->name, name) == 0) return c->input[i];
  return NULL;
}

static int config_has_output(const ifd_model_config_t *c, const char *name) {
  size_t i;
  for (i = 0; i < c->n_output; i++)
    if (strcmp(c->output[i]->name, name) == 0) return 1;
  return 0;
}

static int check_missing(const ifd_model_t *m, const ifd_request_t *req,
                         ifd_errmsg_t *err) {
  const ifd_model_config_t *c = m->config;
  char missing[512] = "", got[512] = "";
  size_t i, nm = 0, ng = 0, required = 0;
  uint32_t j;

  for (i = 0; i < c->n_input; i++) {
    int found = 0;
    if (c->input[i]->optional) continue;
    required++;
    for (j = 0; j < req->n_inputs && !found; j++)
      found = strcmp(req->inputs[j].name, c->input[i]->name) == 0;
    if (!found)
      nm += (size_t)snprintf(missing + nm,
                             nm < sizeof(missing) ? sizeof(missing) - nm : 0,
                             "%s'%s'", nm ? "," : "", c->input[i]->name);
  }
  if (nm == 0) return 0;
  for (j = 0; j < req->n_inputs; j++)
    ng += (size_t)snprintf(got + ng, ng < sizeof(got) ? sizeof(got) - ng : 0,
                           "%s'%s'", ng ? "," : "", req->inputs[j].name);
  /* Triton words the count as a range when the model has optional
   * inputs, else as the exact count. */
  if (required != c->n_input)
    return ifd_errf(err, IFD_EINVAL,
                    "[request id: %s] expected number of inputs between %zu "
                    "and %zu but got %u inputs for model '%s'. Got input(s) "
                    "[%s], but missing required input(s) [%s]. Please provide "
                    "all required input(s).",
                    req_id(req), required, c->n_input, req->n_inputs, m->name,
                    got, missing);
  return ifd_errf(err, IFD_EINVAL,
                  "[request id: %s] expected %zu inputs but got %u inputs for "
                  "model '%s'. Got input(s) [%s], but missing required "
                  "input(s) [%s]. Please provide all required input(s).",
                  req_id(req), required, req->n_inputs, m->name, got, missing);
}

static int check_input(const ifd_model_t *m, const ifd_request_t *req,
                       const ifd_input_t *in, const Inference__ModelInput *ci,
                       int64_t *batch, ifd_errmsg_t *err) {
  const ifd_model_config_t *c = m->config;
  const int64_t *shape = in->shape;
  size_t ndims = in->ndims;
  int64_t count, bytes;
  char want[256], have[256];
  int64_t full[IFD_MAX_DIMS + 1];
  size_t nfull = 0, k;

  if ((int)in->dtype != (int)ci->data_type)
    return ifd_errf(err, IFD_EINVAL,
                    "[request id: %s] inference input '%s' data-type is '%s', "
                    "but model '%s' expects '%s'",
                    req_id(req), in->name, ifd_dtype_name(in->dtype), m->name,
                    ifd_dtype_name((ifd_dtype_t)ci->data_type));

  /* The expected shape, as Triton prints it: [-1] + dims when batching. */
  if (c->max_batch_size > 0) full[nfull++] = -1;
  for (k = 0; k < ci->n_dims && nfull < IFD_MAX_DIMS; k++)
    full[nfull++] = ci->dims[k];

  /* The shape first: a wrong rank says more than the batch size it implies. */
  if (!ifd_shape_matches(full, nfull, shape, ndims)) goto bad_shape;
  if (c->max_batch_size > 0) {
    if (ndims == 0 || shape[0] < 1) goto bad_shape;
    if (*batch < 0) {
      *batch = shape[0];
    } else if (*batch != shape[0]) {
      return ifd_errf(err, IFD_EINVAL,
                      "[request id: %s] input '%s' batch size does not match "
                      "other inputs for '%s'",
                      req_id(req), in->name, m->name);
    }
    if (shape[0] > c->max_batch_size)
      return ifd_errf(err, IFD_EINVAL,
                      "[request id: %s] inference request batch-size must be "
                      "<= %d for '%s'",
                      req_id(req), c->max_batch_size, m->name);
  }
  for (k = 0; k < ndims; k++)
    if (shape[k] < 0) goto bad_shape;

  if (ifd_shape_count(shape, ndims, &count) < 0)
    return ifd_errf(err, IFD_EINVAL,
                    "[request id: %s] shape of input '%s' for model '%s' is "
                    "too large",
                    req_id(req), in->name, m->name);
  if (in->dtype == IFD_TYPE_BYTES) {
    /* Device memory (CUDA shared memory) cannot be read here: the backend
     * that reads it checks it, as in Triton. */
    if (in->mem_type == IFD_MEM_GPU) return 0;
    if (ifd_bytes_validate(in->data, in->byte_size, count) < 0)
      return ifd_errf(
          err, IFD_EINVAL,
          "[request id: %s] input '%s' for model '%s' holds %" PRIu64
          " bytes that are not %" PRId64 " length-prefixed BYTES elements",
          req_id(req), in->name, m->name, in->byte_size, count);
    return 0;
  }
  if (ifd_shape_byte_size(in->dtype, shape, ndims, &bytes) < 0 ||
      (uint64_t)bytes != in->byte_size)
    return ifd_errf(err, IFD_EINVAL,
                    "[request id: %s] input byte size mismatch for input '%s' "
                    "for model '%s'. Expected %" PRId64 ", got %" PRIu64,
                    req_id(req), in->name, m->name, bytes, in->byte_size);
  return 0;

bad_shape:
  ifd_shape_format(full, nfull, want, sizeof(want));
  ifd_shape_format(shape, ndims, have, sizeof(have));
  return ifd_errf(
      err, IFD_EINVAL,
      "[request id: %s] unexpected shape for input '%s' for model '%s'. "
      "Expected %s, got %s.%s",
      req_id(req), in->name, m->name, want, have,
      c->max_batch_size > 0
          ? " NOTE: Setting a non-zero max_batch_size in the model config "
            "requires a batch dimension to be prepended to each input shape. "
            "If you want to specify the full shape including the batch dim "
            "in your input dims config, try setting max_batch_size to zero. "
            "See the model configuration docs for more info on max_batch_size."
          : "");
}

int ifd_model_validate_request(const ifd_model_t *m, ifd_request_t *req,
                               ifd_errmsg_t *err) {
  const ifd_model_config_t *c = m->config;
  int64_t batch = -1;
  uint32_t i, j;
  int rc;

  for (i = 0; i < req->n_inputs; i++) {
    const ifd_input_t *in = &req->inputs[i];
    const Inference__ModelInput *ci = config_input(c, in->name);
    if (ci == NULL) /* Triton words these two without the request id. */
      return ifd_errf(err, IFD_EINVAL,
                      "unexpected inference input '%s' for model '%s'",
                      in->name, m->name);
    for (j = 0; j < i; j++)
      if (strcmp(req->inputs[j].name, in->name) == 0)
        return ifd_errf(err, IFD_EINVAL,
                        "[request id: %s] input '%s' appears more than once "
                        "in the request for model '%s'",
                        req_id(req), in->name, m->name);
    if (in->data == NULL && in->byte_size > 0)
      return ifd_errf(err, IFD_EINVAL,
                      "[request id: %s] input '%s' for model '%s' has no data",
                      req_id(req), in->name, m->name);
    rc = check_input(m, req, in, ci, &batch, err);
    if (rc < 0) return rc;
  }
  rc = check_missing(m, req, err);
  if (rc < 0) return rc;
  for (i = 0; i < req->n_outputs; i++) {
    if (!config_has_output(c, req->outputs[i].name))
      return ifd_errf(err, IFD_EINVAL,
                      "unexpected inference output '%s' for model '%s'",
                      req->outputs[i].name, m->name);
    for (j = 0; j < i; j++)
      if (strcmp(req->outputs[j].name, req->outputs[i].name) == 0)
        return ifd_errf(err, IFD_EINVAL,
                        "[request id: %s] output '%s' requested more than once "
                        "for model '%s'",
                        req_id(req), req->outputs[i].name, m->name);
  }
  req->batch_size = c->max_batch_size > 0 && batch > 0 ? (uint64_t)batch : 0;
  return 0;
}

/* ---- classification labels ------------------------------------------------
 */

int ifd__model_load_labels(ifd_model_t *m, ifd_errmsg_t *err) {
  const ifd_model_config_t *c = m->config;
  size_t i;
  int rc;

  for (i = 0; i < c->n_output; i++) {
    const char *f = c->output[i]->label_filename;
    char *path;
    if (f == NULL || f[0] == '\0') continue;
    if (m->labels == NULL &&
        (m->labels = calloc(c->n_output, sizeof(*m->labels))) == NULL)
      return ifd_errf(err, IFD_ENOMEM, "out of memory");
    path = malloc(strlen(m->path) + strlen(f) + 2);
    if (path == NULL) {
      ifd__model_free_labels(m);
      return ifd_errf(err, IFD_ENOMEM, "out of memory");
    }
    sprintf(path, "%s/%s", m->path, f);
    rc = ifd_labels_load(&m->labels[i], path, err);
    free(path);
    if (rc != 0) {
      ifd__model_free_labels(m);
      return rc;
    }
  }
  return 0;
}

void ifd__model_free_labels(ifd_model_t *m) {
  size_t i;

  if (m->labels == NULL) return;
  for (i = 0; m->config != NULL && i < m->config->n_output; i++)
    ifd_labels_free(&m->labels[i]);
  free(m->labels);
  m->labels = NULL;
}
