/*
 * core/classify.h - Triton's classification extension: an output asked for
 * with a class count N comes back as a BYTES tensor of its top-N elements,
 * each "<value>:<index>[:<label>]", with the labels of the output's
 * label_filename (one per line, in the model's folder).
 *
 * Triton computes it in its HTTP and gRPC front ends when it serializes the
 * response; inferd does it on the loop when the response is delivered
 * (core/infer.c), so both protocols get the same tensor. The in-process API
 * cannot ask for it (TRITONSERVER_InferenceRequestAddRequestedOutput has no
 * class count), as in Triton.
 */
#ifndef IFD_CORE_CLASSIFY_H
#define IFD_CORE_CLASSIFY_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "base/error.h"
#include "base/pool.h"

/** The labels of one output: line i names class i. */
typedef struct ifd_labels {
  char *text;        /* owned: the file's bytes, each line NUL-terminated */
  const char **line; /* owned: n pointers into text */
  size_t n;
} ifd_labels_t;

/**
 * Reads `path` into *l: one label per line ('\n' ends a line, as
 * std::getline splits; a last line without one counts, an empty file has
 * none). Returns 0, or IFD_ENOTFOUND / IFD_EINTERNAL with Triton's "failed
 * to open text file for read <path>: <reason>" in `err`, IFD_ENOMEM.
 * Blocking: the thread pool's.
 */
int ifd_labels_load(ifd_labels_t *l, const char *path, ifd_errmsg_t *err);

/** Frees what ifd_labels_load made (l may be zeroed). */
void ifd_labels_free(ifd_labels_t *l);

/** The classification tensor of one output. */
typedef struct ifd_class_result {
  void *data;         /* in the pool given: BYTES elements (4-byte length,
                         then the text) */
  uint64_t byte_size; /* bytes at data */
  int64_t shape[2];   /* [batch, classes] when batched, else [classes] */
  uint32_t ndims;
} ifd_class_result_t;

/**
 * The top `k` classes of an output tensor (`data`, `byte_size` bytes of
 * `dtype` elements, shape `shape`/`ndims`), per batch entry when `batched`
 * (the model batches: the first dim is the batch). Elements compare by
 * value, highest first, ties by lower index; a value prints as C++'s
 * std::to_string prints it ("%f" for FP32/FP64, the integer otherwise).
 * The class dim is min(k, elements per batch entry). `labels` may be NULL.
 *
 * Returns 0 with *out (its data in `pool`), or IFD_EINVAL with Triton's
 * "class result not available for output due to unsupported type '<T>'"
 * (BOOL, FP16, BF16, BYTES), IFD_ENOMEM.
 */
int ifd_classify(const void *data, uint64_t byte_size, ifd_dtype_t dtype,
                 const int64_t *shape, uint32_t ndims, int batched, uint32_t k,
                 const ifd_labels_t *labels, ifd_pool_t *pool,
                 ifd_class_result_t *out, ifd_errmsg_t *err);

#endif
