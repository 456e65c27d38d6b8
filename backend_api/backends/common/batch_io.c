/*
 * backend_api/backends/common/batch_io.c - Triton's ragged batching for
 * backends; see batch_io.h.
 */
#include "batch_io.h"

#include "be_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t ifd_batch_elements(const int64_t *shape, size_t nd) {
  int64_t n = 1;
  for (size_t i = 0; i < nd; i++) n *= shape[i];
  return n;
}

static const char *const kind_names[] = {
    "BATCH_ELEMENT_COUNT",
    "BATCH_ACCUMULATED_ELEMENT_COUNT",
    "BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO",
    "BATCH_MAX_ELEMENT_COUNT_AS_SHAPE",
    "BATCH_ITEM_SHAPE",
    "BATCH_ITEM_SHAPE_FLATTEN"};
#define N_KINDS (sizeof(kind_names) / sizeof(kind_names[0]))

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d != NULL) memcpy(d, s, n);
  return d;
}

void ifd_batch_inputs_free(ifd_batch_input_t *b, size_t n) {
  for (size_t i = 0; b != NULL && i < n; i++) {
    free(b[i].source);
    for (size_t t = 0; b[i].targets != NULL && t < b[i].n_targets; t++)
      free(b[i].targets[t]);
    free(b[i].targets);
  }
  free(b);
}

static TRITONSERVER_Error *read_one(const json_t *bi, const char *model,
                                    size_t i, ifd_batch_input_t *b) {
  const json_t *kind = json_object_get(bi, "kind");
  const json_t *dtype = json_object_get(bi, "data_type");
  const json_t *sources = json_object_get(bi, "source_input");
  const json_t *source = json_array_get(sources, 0);
  const json_t *targets = json_object_get(bi, "target_name");
  const char *k = json_is_string(kind) ? json_string_value(kind) : "";
  size_t n;
  for (n = 0; n < N_KINDS; n++)
    if (strcmp(k, kind_names[n]) == 0) break;
  if (n == N_KINDS)
    return ifd_be_errf(TRITONSERVER_ERROR_INVALID_ARG,
                       "unexpected batch input kind '%s'", k);
  if (!json_is_string(source))
    return ifd_be_errf(TRITONSERVER_ERROR_INVALID_ARG,
                       "batch input %zu of model '%s' names no source_input", i,
                       model);
  b->kind = (ifd_batch_kind_t)n;
  b->dtype = json_is_string(dtype) &&
                     strcmp(json_string_value(dtype), "TYPE_FP32") == 0
                 ? TRITONSERVER_TYPE_FP32
                 : TRITONSERVER_TYPE_INT32;
  b->source = dup_str(json_string_value(source));
  b->n_targets = json_is_array(targets) ? json_array_size(targets) : 0;
  b->targets = calloc(b->n_targets + 1, sizeof(char *));
  if (b->source == NULL || b->targets == NULL)
    return ifd_be_errf(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  for (size_t t = 0; t < b->n_targets; t++) {
    const json_t *v = json_array_get(targets, t);
    b->targets[t] = dup_str(json_is_string(v) ? json_string_value(v) : "");
    if (b->targets[t] == NULL)
      return ifd_be_errf(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  }
  return NULL;
}

TRITONSERVER_Error *ifd_batch_inputs_read(const json_t *config,
                                          const char *model,
                                          ifd_batch_input_t **out, size_t *n) {
  const json_t *bis = json_object_get(config, "batch_input");
  size_t count = json_is_array(bis) ? json_array_size(bis) : 0;
  ifd_batch_input_t *b = NULL;
  *out = NULL;
  *n = 0;
  if (count == 0) return NULL;
  b = calloc(count, sizeof(*b));
  if (b == NULL)
    return ifd_be_errf(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  for (size_t i = 0; i < count; i++) {
    TRITONSERVER_Error *e = read_one(json_array_get(bis, i), model, i, &b[i]);
    if (e != NULL) {
      ifd_batch_inputs_free(b, i + 1);
      return e;
    }
  }
  *out = b;
  *n = count;
  return NULL;
}

size_t ifd_batch_input_shape(ifd_batch_kind_t kind, const ifd_shape_ref_t *src,
                             size_t n, int64_t shape[2]) {
  size_t nd = 1;
  shape[0] = shape[1] = 0;
  for (size_t r = 0; r < n; r++) {
    const int64_t *s = src[r].dims;
    uint32_t snd = src[r].nd;
    int64_t items = snd > 0 ? s[0] : 0;
    switch (kind) {
      case IFD_BATCH_ELEMENT_COUNT:
      case IFD_BATCH_ACCUMULATED_ELEMENT_COUNT:
        shape[0] = (int64_t)n;
        break;
      case IFD_BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO:
        shape[0] = (int64_t)n + 1;
        break;
      case IFD_BATCH_MAX_ELEMENT_COUNT_AS_SHAPE:
        if (ifd_batch_elements(s, snd) > shape[0])
          shape[0] = ifd_batch_elements(s, snd);
        break;
      case IFD_BATCH_ITEM_SHAPE:
        nd = 2;
        shape[0] += items;
        shape[1] = snd > 0 ? (int64_t)snd - 1 : 0;
        break;
      case IFD_BATCH_ITEM_SHAPE_FLATTEN:
        shape[0] += snd > 0 ? items * ((int64_t)snd - 1) : 0;
        break;
    }
  }
  if (n == 0 && kind == IFD_BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO)
    shape[0] = 1;
  return nd;
}

/* Stores v as element *at of buf (FP32 or INT32), within count. */
static void put(void *buf, int fp32, int64_t count, int64_t *at, int64_t v) {
  if (*at < count) {
    if (fp32)
      ((float *)buf)[*at] = (float)v;
    else
      ((int32_t *)buf)[*at] = (int32_t)v;
  }
  (*at)++;
}

void ifd_batch_input_fill(ifd_batch_kind_t kind, TRITONSERVER_DataType dtype,
                          const ifd_shape_ref_t *src, size_t n, void *buf,
                          int64_t count) {
  const int fp32 = dtype == TRITONSERVER_TYPE_FP32;
  int64_t at = 0, acc = 0;
  if (kind == IFD_BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO)
    put(buf, fp32, count, &at, 0);
  for (size_t r = 0; r < n; r++) {
    const int64_t *s = src[r].dims;
    uint32_t snd = src[r].nd;
    switch (kind) {
      case IFD_BATCH_ELEMENT_COUNT:
        put(buf, fp32, count, &at, ifd_batch_elements(s, snd));
        break;
      case IFD_BATCH_ACCUMULATED_ELEMENT_COUNT:
      case IFD_BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO:
        acc += ifd_batch_elements(s, snd);
        put(buf, fp32, count, &at, acc);
        break;
      case IFD_BATCH_ITEM_SHAPE:
      case IFD_BATCH_ITEM_SHAPE_FLATTEN:
        for (int64_t item = 0; snd > 0 && item < s[0]; item++)
          for (uint32_t d = 1; d < snd; d++) put(buf, fp32, count, &at, s[d]);
        break;
      case IFD_BATCH_MAX_ELEMENT_COUNT_AS_SHAPE:
        break; /* its shape says it all */
    }
  }
  /* What no request filled (BATCH_MAX_ELEMENT_COUNT_AS_SHAPE) is zero. */
  while (at < count) put(buf, fp32, count, &at, 0);
}

size_t ifd_batch_scatter_shape(int batching, const int64_t *dims, size_t n_dims,
                               const ifd_shape_ref_t *src, int64_t *shape,
                               size_t cap) {
  size_t nd = 0;
  if (batching && nd < cap) shape[nd++] = -1;
  for (size_t d = 0; d < n_dims && nd < cap; d++) shape[nd++] = dims[d];
  for (size_t d = 0; d < nd; d++)
    if (shape[d] == -1) shape[d] = d < src->nd ? src->dims[d] : 0;
  return nd;
}
