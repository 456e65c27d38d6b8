/*
 * backend_api/backends/common/batch_io.h - Triton's ragged batching for
 * backends: the `batch_input` tensors a backend makes from the requests of a
 * batch, and the per-request shapes of a BATCH_SCATTER_WITH_INPUT_SHAPE
 * `batch_output`. Pure C over plain arrays, shared by the ONNX Runtime and
 * PyTorch backends (built into each), unit-tested in test_batch_io.
 *
 * The six batch input kinds (Triton's model configuration docs, "Ragged
 * Batching"), for a batch of requests whose source input has shapes s_r:
 *   BATCH_ELEMENT_COUNT                       [n]: elements(s_r)
 *   BATCH_ACCUMULATED_ELEMENT_COUNT           [n]: running sum of those
 *   BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO [n+1]: 0, then the sums
 *   BATCH_MAX_ELEMENT_COUNT_AS_SHAPE          [max elements(s_r)]: the shape
 *                                             is the information; zeros
 *   BATCH_ITEM_SHAPE                          [items, dims-1]: each batch
 *                                             item's shape less the batch dim
 *   BATCH_ITEM_SHAPE_FLATTEN                  [items * (dims-1)]: the same
 * where items is the sum of the requests' batch dims s_r[0].
 */
#ifndef IFD_BACKENDS_COMMON_BATCH_IO_H
#define IFD_BACKENDS_COMMON_BATCH_IO_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "triton/core/tritonserver.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  IFD_BATCH_ELEMENT_COUNT,
  IFD_BATCH_ACCUMULATED_ELEMENT_COUNT,
  IFD_BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO,
  IFD_BATCH_MAX_ELEMENT_COUNT_AS_SHAPE,
  IFD_BATCH_ITEM_SHAPE,
  IFD_BATCH_ITEM_SHAPE_FLATTEN
} ifd_batch_kind_t;

/* One `batch_input` entry of a model configuration. */
typedef struct {
  ifd_batch_kind_t kind;
  TRITONSERVER_DataType dtype; /* TRITONSERVER_TYPE_FP32 or _INT32 */
  char *source;                /* its first source_input */
  char **targets;              /* target_name[], n_targets of them */
  size_t n_targets;
} ifd_batch_input_t;

/* One request's shape of an input (borrowed). */
typedef struct {
  const int64_t *dims;
  uint32_t nd;
} ifd_shape_ref_t;

/* The product of shape[0..nd), 1 for a scalar. */
int64_t ifd_batch_elements(const int64_t *shape, size_t nd);

/* Reads config's `batch_input` array. On success *out (n entries, possibly
 * NULL when there are none) is the caller's: ifd_batch_inputs_free. Errors
 * are Triton's texts ("unexpected batch input kind '...'"). */
TRITONSERVER_Error *ifd_batch_inputs_read(const json_t *config,
                                          const char *model,
                                          ifd_batch_input_t **out, size_t *n);
void ifd_batch_inputs_free(ifd_batch_input_t *b, size_t n);

/* The shape of a batch input of `kind` over the requests' source shapes
 * src[0..n); returns its rank (1 or 2). */
size_t ifd_batch_input_shape(ifd_batch_kind_t kind, const ifd_shape_ref_t *src,
                             size_t n, int64_t shape[2]);

/* Writes its `count` values (the elements of that shape) into buf, as FP32
 * or INT32 per dtype. */
void ifd_batch_input_fill(ifd_batch_kind_t kind, TRITONSERVER_DataType dtype,
                          const ifd_shape_ref_t *src, size_t n, void *buf,
                          int64_t count);

/* BATCH_SCATTER_WITH_INPUT_SHAPE: a request's share of the output is shaped
 * [-1 when batching] + the output's configured dims, each -1 taken from the
 * request's source input at the same position (0 past its rank). Writes at
 * most cap dims into shape; returns the rank. */
size_t ifd_batch_scatter_shape(int batching, const int64_t *dims, size_t n_dims,
                               const ifd_shape_ref_t *src, int64_t *shape,
                               size_t cap);

#ifdef __cplusplus
}
#endif

#endif
