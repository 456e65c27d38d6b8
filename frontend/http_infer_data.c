/*
 * frontend/http_infer_data.c - the JSON `data` of one input of a KServe v2
 * infer request, converted straight from the validated text into one
 * buffer from the request pool (frontend/http_infer_decode.c decodes the
 * rest of the body).
 *
 * A walk over the (possibly nested) array counts its elements first, so a
 * shape that claims more elements than the text holds allocates nothing;
 * BYTES data is measured before it is copied; then a second walk converts
 * each element into the buffer; nested arrays are flattened without
 * recursion.
 */
#include <inttypes.h>
#include <string.h>

#include "base/check.h"
#include "base/half.h"
#include "core/dtype.h"
#include "core/infer.h"
#include "frontend/internal.h"

/* What a walk over `data` does at each element. */
enum { WALK_COUNT, WALK_MEASURE, WALK_FILL };

/* State of a walk over an input's (possibly nested) `data`. */
typedef struct walk {
  const char *name; /* borrowed: the input's name, for messages */
  ifd_dtype_t dtype;
  const char *end;    /* borrowed: end of the JSON text */
  int64_t count;      /* elements seen */
  size_t bytes;       /* BYTES: string bytes seen */
  unsigned char *out; /* borrowed: request pool; write position */
  ifd_errmsg_t *err;  /* borrowed */
} walk_t;

static int elem_error(walk_t *w, const char *want) {
  return ifd_errf(w->err, IFD_EINVAL,
                  "Unable to parse 'data' of input '%s': element %" PRId64
                  " is not %s",
                  w->name, w->count, want);
}

static int put_int(walk_t *w, const char **pp, int64_t lo, int64_t hi,
                   size_t size) {
  ifd_jnum_t n;
  int64_t x;

  if (!ifd__json_is_num(*pp, w->end)) return elem_error(w, "an integer");
  *pp = ifd__json_number(*pp, w->end, &n);
  if (n.is_uint && !n.is_int) {
    /* Above INT64_MAX: only UINT64 holds it. */
    if (w->dtype == IFD_TYPE_UINT64) {
      memcpy(w->out, &n.u, 8);
      w->out += 8;
      return 0;
    }
    return ifd_errf(w->err, IFD_EINVAL,
                    "Unable to parse 'data' of input '%s': element %" PRId64
                    " (%" PRIu64 ") is out of range for %s",
                    w->name, w->count, n.u, ifd_dtype_name(w->dtype));
  }
  if (!n.is_int) return elem_error(w, "an integer");
  x = n.i;
  if (x < lo || x > hi) {
    return ifd_errf(w->err, IFD_EINVAL,
                    "Unable to parse 'data' of input '%s': element %" PRId64
                    " (%lld) is out of range for %s",
                    w->name, w->count, (long long)x, ifd_dtype_name(w->dtype));
  }
  /* Little-endian hosts only (as Triton): the low bytes are the value. */
  memcpy(w->out, &x, size);
  w->out += size;
  return 0;
}

/* Converts the element at *pp into w->out and moves *pp past it. */
static int put_elem(walk_t *w, const char **pp) {
  const char *p = *pp;
  ifd_jnum_t n;
  double d;

  switch (w->dtype) {
    case IFD_TYPE_BOOL:
      if (!ifd__json_is_bool(p, w->end)) return elem_error(w, "a boolean");
      *w->out++ = *p == 't' ? 1 : 0;
      *pp = p + (*p == 't' ? 4 : 5);
      return 0;
    case IFD_TYPE_UINT8:
      return put_int(w, pp, 0, UINT8_MAX, 1);
    case IFD_TYPE_UINT16:
      return put_int(w, pp, 0, UINT16_MAX, 2);
    case IFD_TYPE_UINT32:
      return put_int(w, pp, 0, UINT32_MAX, 4);
    /* Up to INT64_MAX here; put_int takes the larger ones itself. */
    case IFD_TYPE_UINT64:
      return put_int(w, pp, 0, INT64_MAX, 8);
    case IFD_TYPE_INT8:
      return put_int(w, pp, INT8_MIN, INT8_MAX, 1);
    case IFD_TYPE_INT16:
      return put_int(w, pp, INT16_MIN, INT16_MAX, 2);
    case IFD_TYPE_INT32:
      return put_int(w, pp, INT32_MIN, INT32_MAX, 4);
    case IFD_TYPE_INT64:
      return put_int(w, pp, INT64_MIN, INT64_MAX, 8);
    case IFD_TYPE_FP32: {
      float f;
      if (!ifd__json_is_num(p, w->end)) return elem_error(w, "a number");
      *pp = ifd__json_number_f32(p, w->end, &f);
      memcpy(w->out, &f, 4);
      w->out += 4;
      return 0;
    }
    case IFD_TYPE_FP16:
    case IFD_TYPE_BF16:
    case IFD_TYPE_FP64:
      if (!ifd__json_is_num(p, w->end)) return elem_error(w, "a number");
      *pp = ifd__json_number(p, w->end, &n);
      d = n.d;
      /* FP32 rounds through the double, as (float)json_number_value() did
       * (and as Triton's GetDouble() does). */
      if (w->dtype == IFD_TYPE_FP64) {
        memcpy(w->out, &d, 8);
        w->out += 8;
      } else if (w->dtype == IFD_TYPE_FP32) {
        memcpy(w->out, &(float){(float)d}, 4);
        w->out += 4;
      } else {
        uint16_t h = w->dtype == IFD_TYPE_FP16 ? ifd_f32_to_f16((float)d)
                                               : ifd_f32_to_bf16((float)d);
        memcpy(w->out, &h, 2);
        w->out += 2;
      }
      return 0;
    case IFD_TYPE_BYTES: {
      int esc;
      size_t len = ifd_json_strlen(p, w->end, &esc);
      uint32_t len32 = (uint32_t)len;
      memcpy(w->out, &len32, 4);
      *pp = ifd_json_strcpy(p, w->end, (char *)w->out + 4);
      w->out += 4 + len;
      return 0;
    }
    default:
      return elem_error(w, "of a known type");
  }
}

/* Visits every element of `data` at p, nested arrays flattened, without
 * recursion. WALK_COUNT counts; WALK_MEASURE also checks and measures BYTES
 * strings; WALK_FILL converts the first `cap` elements and counts the rest. */
static int walk(walk_t *w, const char *p, int mode, int64_t cap) {
  const char *end = w->end;
  long depth = 0;
  int rc;

  for (;;) {
    p = ifd__json_ws(p, end);
    if (p >= end) break;
    if (*p == '[') {
      depth++;
      p = ifd__json_ws(p + 1, end);
      if (p < end && *p != ']') continue;
    } else {
      if (mode == WALK_FILL && w->count < cap) {
        rc = put_elem(w, &p);
        if (rc != 0) return rc;
      } else if (mode == WALK_MEASURE) {
        int esc;
        size_t n;
        if (!ifd__json_is_str(p, end)) return elem_error(w, "a string");
        n = ifd_json_strlen(p, end, &esc);
        if (n > UINT32_MAX) return elem_error(w, "short enough");
        w->bytes += 4 + n;
        p = ifd__json_skip(p, end);
      } else {
        p = ifd__json_skip(p, end);
      }
      w->count++;
      p = ifd__json_ws(p, end);
    }
    for (;;) {
      if (depth == 0) return 0;
      if (NEVER(p >= end)) goto out_broken; /* validated text ends arrays */
      if (*p == ',') {
        p++;
        break;
      }
      p = ifd__json_ws(p + 1, end); /* past ']' */
      depth--;
    }
  }
out_broken:
  return ifd_errf(w->err, IFD_EINVAL, "Unable to parse 'data' of input '%s'",
                  w->name);
}

static int shape_mismatch(const ifd_input_t *in, int64_t count, int64_t seen,
                          ifd_errmsg_t *err) {
  char shape[128];
  return ifd_errf(err, IFD_EINVAL,
                  "Unable to parse 'data': shape does not match true shape "
                  "of 'data' field: input '%s' has shape %s (%" PRId64
                  " elements) but 'data' holds %" PRId64,
                  in->name,
                  ifd_shape_format(in->shape, in->ndims, shape, sizeof(shape)),
                  count, seen);
}

/* Converts `data` ([data, data_end) of the text that ends at end) into one
 * buffer from the request pool. */
int ifd__http_infer_data(ifd_request_t *req, ifd_input_t *in, const char *data,
                         const char *data_end, const char *end, int64_t count,
                         ifd_errmsg_t *err) {
  walk_t w = {.name = in->name, .dtype = in->dtype, .end = end, .err = err};
  size_t size;
  int rc;

  if (in->dtype == IFD_TYPE_BYTES) {
    /* Measure first: the buffer holds the decoded strings. */
    rc = walk(&w, data, WALK_MEASURE, 0);
    if (rc != 0) return rc;
    if (w.count != count) return shape_mismatch(in, count, w.count, err);
    size = w.bytes;
  } else {
    /* Every element takes a byte of text at least: a shape that claims more
     * elements than that (a trillion, say) fails before any allocation. */
    if (count > data_end - data) {
      rc = walk(&w, data, WALK_COUNT, 0);
      if (rc != 0) return rc;
      return shape_mismatch(in, count, w.count, err);
    }
    size = (size_t)count * ifd_dtype_size(in->dtype);
  }
  w.out = ifd_pool_alloc(&req->pool, size != 0 ? size : 1);
  if (w.out == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  in->data = w.out;
  in->byte_size = size;
  w.count = 0;
  rc = walk(&w, data, WALK_FILL, count);
  if (rc == 0 && w.count == count) return 0;
  /* A shape mismatch wins over a bad element (counting came first when the
   * data was walked twice). */
  if (rc != 0) {
    w.count = 0;
    if (walk(&w, data, WALK_COUNT, 0) != 0 || w.count == count) return rc;
  }
  return shape_mismatch(in, count, w.count, err);
}
