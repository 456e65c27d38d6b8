/*
 * core/dtype.c - tensor data types and shape arithmetic.
 *
 * Names in both spellings (KServe "FP32", model config "TYPE_FP32"), element
 * sizes, overflow-checked element and byte counts, the shape match and print
 * used by request validation, and the check of Triton's length-prefixed BYTES
 * wire format. Nothing here allocates.
 */
#include "core/dtype.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"

/* Indexed by ifd_dtype_t; size 0 marks variable-size or invalid. */
static const struct {
  const char *name;
  const char *config_name;
  size_t size;
  size_t name_len; /* strlen(name), for from_name */
} dtypes[] = {
    [IFD_TYPE_INVALID] = {"INVALID", "TYPE_INVALID", 0, 7},
    [IFD_TYPE_BOOL] = {"BOOL", "TYPE_BOOL", 1, 4},
    [IFD_TYPE_UINT8] = {"UINT8", "TYPE_UINT8", 1, 5},
    [IFD_TYPE_UINT16] = {"UINT16", "TYPE_UINT16", 2, 6},
    [IFD_TYPE_UINT32] = {"UINT32", "TYPE_UINT32", 4, 6},
    [IFD_TYPE_UINT64] = {"UINT64", "TYPE_UINT64", 8, 6},
    [IFD_TYPE_INT8] = {"INT8", "TYPE_INT8", 1, 4},
    [IFD_TYPE_INT16] = {"INT16", "TYPE_INT16", 2, 5},
    [IFD_TYPE_INT32] = {"INT32", "TYPE_INT32", 4, 5},
    [IFD_TYPE_INT64] = {"INT64", "TYPE_INT64", 8, 5},
    [IFD_TYPE_FP16] = {"FP16", "TYPE_FP16", 2, 4},
    [IFD_TYPE_FP32] = {"FP32", "TYPE_FP32", 4, 4},
    [IFD_TYPE_FP64] = {"FP64", "TYPE_FP64", 8, 4},
    [IFD_TYPE_BYTES] = {"BYTES", "TYPE_STRING", 0, 5},
    [IFD_TYPE_BF16] = {"BF16", "TYPE_BF16", 2, 4},
};

#define N_DTYPES (sizeof(dtypes) / sizeof(dtypes[0]))

static int valid(ifd_dtype_t t) {
  return (unsigned)t > IFD_TYPE_INVALID && (unsigned)t < N_DTYPES;
}

const char *ifd_dtype_name(ifd_dtype_t t) {
  return valid(t) ? dtypes[t].name : dtypes[IFD_TYPE_INVALID].name;
}

const char *ifd_dtype_config_name(ifd_dtype_t t) {
  return valid(t) ? dtypes[t].config_name
                  : dtypes[IFD_TYPE_INVALID].config_name;
}

ifd_dtype_t ifd_dtype_from_name(const char *name, size_t n) {
  /* Every request names its tensors' types: lengths and first bytes decide
   * most entries without a call. */
  if (name == NULL || n == 0) return IFD_TYPE_INVALID;
  for (size_t t = IFD_TYPE_BOOL; t < N_DTYPES; t++) {
    if (dtypes[t].name_len == n && dtypes[t].name[0] == name[0] &&
        memcmp(dtypes[t].name, name, n) == 0)
      return (ifd_dtype_t)t;
  }
  return IFD_TYPE_INVALID;
}

size_t ifd_dtype_size(ifd_dtype_t t) {
  return valid(t) ? dtypes[t].size : 0;
}

int ifd_shape_count(const int64_t *shape, size_t ndims, int64_t *out) {
  int64_t n = 1;
  /* Check every dim for a negative before trusting the product: a shape with
   * a 0 and a -1 is still invalid. */
  for (size_t i = 0; i < ndims; i++)
    if (shape[i] < 0) return IFD_EINVAL;
  for (size_t i = 0; i < ndims; i++) {
    if (shape[i] == 0) {
      n = 0;
      break;
    }
    if (n > INT64_MAX / shape[i]) return IFD_ETOOBIG;
    n *= shape[i];
  }
  *out = n;
  return 0;
}

int ifd_shape_byte_size(ifd_dtype_t t, const int64_t *shape, size_t ndims,
                        int64_t *out) {
  size_t size = ifd_dtype_size(t);
  int64_t n;
  int rc;

  if (size == 0) return IFD_EINVAL;
  rc = ifd_shape_count(shape, ndims, &n);
  if (rc < 0) return rc;
  if (n > INT64_MAX / (int64_t)size) return IFD_ETOOBIG;
  *out = n * (int64_t)size;
  return 0;
}

int ifd_shape_matches(const int64_t *config_dims, size_t n_config,
                      const int64_t *shape, size_t ndims) {
  if (n_config != ndims) return 0;
  for (size_t i = 0; i < ndims; i++) {
    if (config_dims[i] != -1 && config_dims[i] != shape[i]) return 0;
  }
  return 1;
}

char *ifd_shape_format(const int64_t *shape, size_t ndims, char *buf,
                       size_t size) {
  static const char ellipsis[] = "...";
  size_t len = 0;

  if (size == 0) return buf;
  /* Build in place; on the first piece that does not fit, back up far enough
   * to end the string with "..." (or as much of it as fits). */
  for (size_t i = 0; i <= ndims + 1; i++) {
    char piece[32];
    int n;
    if (i == 0)
      n = snprintf(piece, sizeof(piece), "[");
    else if (i == ndims + 1)
      n = snprintf(piece, sizeof(piece), "]");
    else
      n = snprintf(piece, sizeof(piece), "%s%lld", i > 1 ? "," : "",
                   (long long)shape[i - 1]);
    if (len + (size_t)n + 1 > size) {
      size_t keep = size - 1 >= sizeof(ellipsis) - 1
                        ? size - 1 - (sizeof(ellipsis) - 1)
                        : 0;
      if (keep > len) keep = len;
      size_t room = size - 1 - keep;
      if (room > sizeof(ellipsis) - 1) room = sizeof(ellipsis) - 1;
      memcpy(buf + keep, ellipsis, room);
      buf[keep + room] = '\0';
      return buf;
    }
    memcpy(buf + len, piece, (size_t)n);
    len += (size_t)n;
  }
  buf[len] = '\0';
  return buf;
}

int ifd_bytes_validate(const void *data, size_t size, int64_t count) {
  const unsigned char *p = data;
  size_t off = 0;

  if (count < 0 || (size > 0 && data == NULL)) return IFD_EINVAL;
  for (int64_t i = 0; i < count; i++) {
    uint32_t len;
    if (size - off < 4) return IFD_EINVAL;
    len = (uint32_t)p[off] | (uint32_t)p[off + 1] << 8 |
          (uint32_t)p[off + 2] << 16 | (uint32_t)p[off + 3] << 24;
    off += 4;
    if (size - off < len) return IFD_EINVAL;
    off += len;
  }
  return off == size ? 0 : IFD_EINVAL;
}
