/*
 * core/dtype.h - tensor data types and shape arithmetic.
 *
 * ifd_dtype_t uses the numbering shared by TRITONSERVER_DataType and the
 * model config's DataType enum (TYPE_BOOL == TRITONSERVER_TYPE_BOOL == 1, ...,
 * BYTES/TYPE_STRING == 13, BF16 == 14), so converting between the three is a
 * cast.
 */
#ifndef IFD_CORE_DTYPE_H
#define IFD_CORE_DTYPE_H

#include <stddef.h>
#include <stdint.h>

typedef enum ifd_dtype {
  IFD_TYPE_INVALID = 0,
  IFD_TYPE_BOOL = 1,
  IFD_TYPE_UINT8 = 2,
  IFD_TYPE_UINT16 = 3,
  IFD_TYPE_UINT32 = 4,
  IFD_TYPE_UINT64 = 5,
  IFD_TYPE_INT8 = 6,
  IFD_TYPE_INT16 = 7,
  IFD_TYPE_INT32 = 8,
  IFD_TYPE_INT64 = 9,
  IFD_TYPE_FP16 = 10,
  IFD_TYPE_FP32 = 11,
  IFD_TYPE_FP64 = 12,
  IFD_TYPE_BYTES = 13,
  IFD_TYPE_BF16 = 14,
} ifd_dtype_t;

/* Most dimensions a tensor may have (Triton has no fixed limit; 64 is far
 * beyond any real model and keeps shapes in fixed arrays). */
#define IFD_MAX_DIMS 64

/** KServe name ("FP32", "BYTES"); "INVALID" for anything else. Static string.
 */
const char *ifd_dtype_name(ifd_dtype_t t);
/** Parses a KServe name ("FP32"); IFD_TYPE_INVALID when unknown. `n` bytes. */
ifd_dtype_t ifd_dtype_from_name(const char *name, size_t n);
/** Model config name ("TYPE_FP32", "TYPE_STRING"); "TYPE_INVALID" otherwise. */
const char *ifd_dtype_config_name(ifd_dtype_t t);
/** Bytes per element; 0 for BYTES (variable size) and INVALID. */
size_t ifd_dtype_size(ifd_dtype_t t);

/**
 * Number of elements of `shape` (`ndims` dims, each >= 0); 1 for a scalar.
 * Returns 0 and sets *out, or IFD_EINVAL when a dim is negative, or
 * IFD_ETOOBIG when the product overflows int64.
 */
int ifd_shape_count(const int64_t *shape, size_t ndims, int64_t *out);

/**
 * Byte size of a fixed-size-type tensor of `shape`: IFD_EINVAL for BYTES,
 * INVALID or negative dims, IFD_ETOOBIG on overflow.
 */
int ifd_shape_byte_size(ifd_dtype_t t, const int64_t *shape, size_t ndims,
                        int64_t *out);

/**
 * Does a request shape match a config shape? Config dims of -1 match any size.
 * Returns 1 when `ndims` equal and every fixed dim matches, else 0.
 */
int ifd_shape_matches(const int64_t *config_dims, size_t n_config,
                      const int64_t *shape, size_t ndims);

/**
 * Formats a shape as Triton prints it, "[-1,16]", into buf (always
 * NUL-terminated, truncated with "..." when too small). Returns buf.
 */
char *ifd_shape_format(const int64_t *shape, size_t ndims, char *buf,
                       size_t size);

/**
 * Checks a BYTES tensor buffer in Triton's wire format (each element a 4-byte
 * little-endian length then that many bytes): returns 0 when `size` bytes hold
 * exactly `count` elements, IFD_EINVAL otherwise.
 */
int ifd_bytes_validate(const void *data, size_t size, int64_t count);

#endif
