/*
 * test/unit/test_json_scan.c - the JSON validator and cursor helpers of
 * frontend/json_scan.c, and the infer request decoder built on them.
 *
 * The validator must accept exactly what jansson's json_loadb() with
 * JSON_ALLOW_NUL accepts, so it is checked against jansson on hand-made
 * cases, on every prefix of valid bodies and on thousands of random
 * mutations of them. Numbers must read back bit for bit as strtod() reads
 * them. The decoder is checked the same way against the jansson decoder it
 * replaced, kept below verbatim as the reference: the same result code, the
 * same message (for syntax errors: the same class), and on success the same
 * request, field by field.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "base/error.h"
#include "core/infer.h"
#include "frontend/internal.h"

/* ---- the reference: the jansson decoder, as it was ---------------------- */

/* State of a walk over an input's (possibly nested) `data`. */
typedef struct walk {
  const char *name; /* borrowed: the input's name, for messages */
  ifd_dtype_t dtype;
  int fill;           /* 0: count and measure; 1: convert into out */
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

static int put_int(walk_t *w, const json_t *v, int64_t lo, int64_t hi,
                   size_t size) {
  json_int_t x;

  if (!json_is_integer(v)) return elem_error(w, "an integer");
  x = json_integer_value(v);
  if (x < lo || x > hi) {
    return ifd_errf(w->err, IFD_EINVAL,
                    "Unable to parse 'data' of input '%s': element %" PRId64
                    " (%lld) is out of range for %s",
                    w->name, w->count, (long long)x, ifd_dtype_name(w->dtype));
  }
  /* Little-endian hosts only (as Triton): the low bytes are the value. */
  memcpy(w->out, &(int64_t){x}, size);
  w->out += size;
  return 0;
}

static int put_elem(walk_t *w, const json_t *v) {
  double d;

  switch (w->dtype) {
    case IFD_TYPE_BOOL:
      if (!json_is_boolean(v)) return elem_error(w, "a boolean");
      *w->out++ = json_is_true(v) ? 1 : 0;
      return 0;
    case IFD_TYPE_UINT8:
      return put_int(w, v, 0, UINT8_MAX, 1);
    case IFD_TYPE_UINT16:
      return put_int(w, v, 0, UINT16_MAX, 2);
    case IFD_TYPE_UINT32:
      return put_int(w, v, 0, UINT32_MAX, 4);
    /* jansson reads integers as long long: UINT64 above INT64_MAX cannot be
     * sent as JSON (binary data can). */
    case IFD_TYPE_UINT64:
      return put_int(w, v, 0, INT64_MAX, 8);
    case IFD_TYPE_INT8:
      return put_int(w, v, INT8_MIN, INT8_MAX, 1);
    case IFD_TYPE_INT16:
      return put_int(w, v, INT16_MIN, INT16_MAX, 2);
    case IFD_TYPE_INT32:
      return put_int(w, v, INT32_MIN, INT32_MAX, 4);
    case IFD_TYPE_INT64:
      return put_int(w, v, INT64_MIN, INT64_MAX, 8);
    case IFD_TYPE_FP16:
    case IFD_TYPE_BF16:
    case IFD_TYPE_FP32:
    case IFD_TYPE_FP64:
      if (!json_is_number(v)) return elem_error(w, "a number");
      d = json_number_value(v);
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
      size_t n = json_string_length(v);
      uint32_t len = (uint32_t)n;
      memcpy(w->out, &len, 4);
      memcpy(w->out + 4, json_string_value(v), n);
      w->out += 4 + n;
      return 0;
    }
    default:
      return elem_error(w, "of a known type");
  }
}

static int walk(walk_t *w, const json_t *v) {
  size_t i;
  int rc;

  if (json_is_array(v)) {
    for (i = 0; i < json_array_size(v); i++) {
      rc = walk(w, json_array_get(v, i));
      if (rc != 0) return rc;
    }
    return 0;
  }
  if (!w->fill) {
    if (w->dtype == IFD_TYPE_BYTES) {
      if (!json_is_string(v)) return elem_error(w, "a string");
      if (json_string_length(v) > UINT32_MAX)
        return elem_error(w, "short enough");
      w->bytes += 4 + json_string_length(v);
    }
  } else {
    rc = put_elem(w, v);
    if (rc != 0) return rc;
  }
  w->count++;
  return 0;
}

static int decode_data(ifd_request_t *req, ifd_input_t *in, const json_t *data,
                       int64_t count, ifd_errmsg_t *err) {
  walk_t w = {.name = in->name, .dtype = in->dtype, .err = err};
  size_t size;
  int rc;
  char shape[128];

  rc = walk(&w, data);
  if (rc != 0) return rc;
  if (w.count != count) {
    return ifd_errf(
        err, IFD_EINVAL,
        "Unable to parse 'data': shape does not match true shape "
        "of 'data' field: input '%s' has shape %s (%" PRId64
        " elements) but 'data' holds %" PRId64,
        in->name, ifd_shape_format(in->shape, in->ndims, shape, sizeof(shape)),
        count, w.count);
  }
  size = in->dtype == IFD_TYPE_BYTES
             ? w.bytes
             : (size_t)count * ifd_dtype_size(in->dtype);
  w.out = ifd_pool_alloc(&req->pool, size != 0 ? size : 1);
  if (w.out == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  in->data = w.out;
  in->byte_size = size;
  w.fill = 1;
  w.count = 0;
  return walk(&w, data);
}

static const char *pool_str(ifd_request_t *req, const json_t *s) {
  return ifd_pool_strndup(&req->pool, json_string_value(s),
                          json_string_length(s));
}

static int decode_shape(ifd_request_t *req, ifd_input_t *in, const json_t *js,
                        ifd_errmsg_t *err) {
  size_t i, n;

  if (!json_is_array(js) || json_array_size(js) > IFD_MAX_DIMS) {
    return ifd_errf(err, IFD_EINVAL,
                    "Unable to parse 'shape' of input '%s': expected an array "
                    "of at most %d dims",
                    in->name, IFD_MAX_DIMS);
  }
  n = json_array_size(js);
  in->shape = ifd_pool_calloc(&req->pool, n != 0 ? n : 1, sizeof(int64_t));
  if (in->shape == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  for (i = 0; i < n; i++) {
    const json_t *d = json_array_get(js, i);
    if (!json_is_integer(d) || json_integer_value(d) < 0) {
      return ifd_errf(err, IFD_EINVAL,
                      "Unable to parse 'shape' of input '%s': dim %zu is not "
                      "a non-negative integer",
                      in->name, i);
    }
    in->shape[i] = json_integer_value(d);
  }
  in->ndims = (uint32_t)n;
  return 0;
}

/* Shared-memory placements (added with issue 13, in the decoder's
 * terms): the region, then offset and byte size, into info->shm. */
static int ref_shm(ifd_request_t *req, const char *what, const char *name,
                   uint32_t index, const json_t *params,
                   ifd_http_infer_info_t *info, ifd_errmsg_t *err) {
  const json_t *r = json_object_get(params, "shared_memory_region");
  const json_t *o = json_object_get(params, "shared_memory_offset");
  const json_t *n = json_object_get(params, "shared_memory_byte_size");
  ifd_http_shm_place_t *pl;

  if (!json_is_string(r))
    return ifd_errf(err, IFD_EINVAL,
                    "Unable to parse 'shared_memory_region' of %s '%s': "
                    "expected a string",
                    what, name);
  if (o != NULL && (!json_is_integer(o) || json_integer_value(o) < 0))
    return ifd_errf(err, IFD_EINVAL,
                    "Unable to parse 'shared_memory_offset' of %s '%s': "
                    "expected a non-negative integer",
                    what, name);
  if (n != NULL && (!json_is_integer(n) || json_integer_value(n) < 0))
    return ifd_errf(err, IFD_EINVAL,
                    "Unable to parse 'shared_memory_byte_size' of %s '%s': "
                    "expected a non-negative integer",
                    what, name);
  if (info->n_shm == info->cap_shm) {
    uint32_t cap = info->cap_shm != 0 ? 2 * info->cap_shm : 4;
    pl = ifd_pool_alloc(&req->pool, cap * sizeof(*pl));
    if (pl == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
    if (info->n_shm != 0) memcpy(pl, info->shm, info->n_shm * sizeof(*pl));
    info->shm = pl;
    info->cap_shm = cap;
  }
  pl = &info->shm[info->n_shm++];
  pl->region = pool_str(req, r);
  if (pl->region == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  pl->region_len = json_string_length(r);
  pl->offset = o != NULL ? (uint64_t)json_integer_value(o) : 0;
  pl->byte_size = n != NULL ? (uint64_t)json_integer_value(n) : 0;
  pl->index = index;
  pl->output = what[0] == 'o';
  return 0;
}

static int ref_content_error(int data, int bin, int shm, ifd_errmsg_t *err) {
  if (!data && !bin && !shm)
    return ifd_errf(err, IFD_EINVAL,
                    "Input must set only one of the following fields: "
                    "'data', 'binary_data_size' in 'parameters', "
                    "'shared_memory_region' in 'parameters'. But no field "
                    "is set");
  return ifd_errf(err, IFD_EINVAL,
                  "Input must set only one of the following fields: 'data', "
                  "'binary_data_size' in 'parameters', "
                  "'shared_memory_region' in 'parameters'. But set%s%s%s",
                  data ? " 'data'" : "", bin ? " 'binary_data_size'" : "",
                  shm ? " 'shared_memory_region'" : "");
}

/* One element of `inputs`. `bin`/`left`/`off`: the binary section. */
static int decode_input(ifd_request_t *req, ifd_input_t *in, const json_t *j,
                        size_t idx, const char *bin, size_t bin_len,
                        size_t *off, ifd_http_infer_info_t *info,
                        ifd_errmsg_t *err) {
  const json_t *name, *dt, *params, *bds = NULL, *shm = NULL, *data;
  int64_t count;
  int rc;

  if (!json_is_object(j))
    return ifd_errf(err, IFD_EINVAL,
                    "Unable to parse 'inputs': element %zu is not an object",
                    idx);
  name = json_object_get(j, "name");
  if (!json_is_string(name))
    return ifd_errf(err, IFD_EINVAL,
                    "Unable to parse 'name' of input %zu: expected a string",
                    idx);
  in->name = pool_str(req, name);
  if (in->name == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  dt = json_object_get(j, "datatype");
  if (!json_is_string(dt))
    return ifd_errf(
        err, IFD_EINVAL,
        "Unable to parse 'datatype' of input '%s': expected a string",
        in->name);
  in->dtype =
      ifd_dtype_from_name(json_string_value(dt), json_string_length(dt));
  if (in->dtype == IFD_TYPE_INVALID)
    return ifd_errf(err, IFD_EINVAL, "invalid datatype '%s' of input '%s'",
                    json_string_value(dt), in->name);
  rc = decode_shape(req, in, json_object_get(j, "shape"), err);
  if (rc != 0) return rc;
  rc = ifd_shape_count(in->shape, in->ndims, &count);
  if (rc != 0)
    return ifd_errf(err, IFD_EINVAL,
                    "shape of input '%s' has too many elements", in->name);

  params = json_object_get(j, "parameters");
  if (params != NULL && !json_is_object(params))
    return ifd_errf(
        err, IFD_EINVAL,
        "Unable to parse 'parameters' of input '%s': expected an object",
        in->name);
  if (params != NULL) {
    bds = json_object_get(params, "binary_data_size");
    shm = json_object_get(params, "shared_memory_region");
  }
  data = json_object_get(j, "data");
  if ((data != NULL) + (bds != NULL) + (shm != NULL) != 1)
    return ref_content_error(data != NULL, bds != NULL, shm != NULL, err);
  if (shm != NULL)
    return ref_shm(req, "input", in->name, (uint32_t)idx, params, info, err);
  if (bds != NULL) {
    json_int_t s = json_is_integer(bds) ? json_integer_value(bds) : -1;
    if (s < 0)
      return ifd_errf(err, IFD_EINVAL,
                      "Unable to parse 'binary_data_size' of input '%s': "
                      "expected a non-negative integer",
                      in->name);
    if ((uint64_t)s > bin_len - *off) {
      return ifd_errf(
          err, IFD_EINVAL,
          "unexpected size for input '%s': binary_data_size is %lld "
          "but only %zu bytes of binary data are left in the body",
          in->name, (long long)s, bin_len - *off);
    }
    in->data = bin + *off;
    in->byte_size = (uint64_t)s;
    *off += (size_t)s;
    return 0;
  }
  return decode_data(req, in, data, count, err);
}

static int decode_params(ifd_request_t *req, const json_t *params,
                         ifd_http_infer_info_t *info, ifd_errmsg_t *err) {
  const char *key;
  const json_t *v;

  if (!json_is_object(params))
    return ifd_errf(err, IFD_EINVAL,
                    "Unable to parse 'parameters': expected an object");
  req->params = ifd_pool_calloc(&req->pool, json_object_size(params) + 1,
                                sizeof(ifd_param_t));
  if (req->params == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  json_object_foreach((json_t *)params, key, v) {
    ifd_param_t *p;
    if (strcmp(key, "sequence_id") == 0) {
      if (json_is_integer(v) && json_integer_value(v) >= 0) {
        req->correlation_id = (uint64_t)json_integer_value(v);
        req->correlation_id_str = NULL;
      } else if (json_is_string(v)) {
        req->correlation_id = 0;
        req->correlation_id_str = pool_str(req, v);
        if (req->correlation_id_str == NULL)
          return ifd_errf(err, IFD_ENOMEM, "out of memory");
      } else {
        return ifd_errf(err, IFD_EINVAL,
                        "Unable to parse 'sequence_id': expected a "
                        "non-negative integer or a string");
      }
      continue;
    }
    if (strcmp(key, "sequence_start") == 0 ||
        strcmp(key, "sequence_end") == 0 ||
        strcmp(key, "binary_data_output") == 0) {
      uint32_t flag = key[9] == 's' ? IFD_REQUEST_FLAG_SEQUENCE_START
                                    : IFD_REQUEST_FLAG_SEQUENCE_END;
      if (!json_is_boolean(v))
        return ifd_errf(err, IFD_EINVAL,
                        "Unable to parse '%s': expected a boolean", key);
      if (key[0] == 'b')
        info->binary_all = json_is_true(v);
      else if (json_is_true(v))
        req->flags |= flag;
      else
        req->flags &= ~flag;
      continue;
    }
    if (strcmp(key, "priority") == 0 || strcmp(key, "timeout") == 0) {
      json_int_t x = json_is_integer(v) ? json_integer_value(v) : -1;
      if (x < 0 || (key[0] == 'p' && x > UINT32_MAX))
        return ifd_errf(err, IFD_EINVAL,
                        "Unable to parse '%s': expected a non-negative integer",
                        key);
      if (key[0] == 'p')
        req->priority = (uint32_t)x;
      else
        req->timeout_us = (uint64_t)x;
      continue;
    }
    p = &req->params[req->n_params];
    p->key = ifd_pool_strndup(&req->pool, key, strlen(key));
    if (p->key == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
    if (json_is_string(v)) {
      p->type = IFD_PARAM_STRING;
      p->v.s = pool_str(req, v);
      if (p->v.s == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
    } else if (json_is_integer(v)) {
      p->type = IFD_PARAM_INT;
      p->v.i = json_integer_value(v);
    } else if (json_is_boolean(v)) {
      p->type = IFD_PARAM_BOOL;
      p->v.b = json_is_true(v);
    } else if (json_is_real(v)) {
      p->type = IFD_PARAM_DOUBLE;
      p->v.d = json_real_value(v);
    } else {
      return ifd_errf(
          err, IFD_EINVAL,
          "parameter '%s' must be a string, an integer, a boolean or a number",
          key);
    }
    req->n_params++;
  }
  return 0;
}

static int decode_outputs(ifd_request_t *req, const json_t *outs,
                          ifd_http_infer_info_t *info, ifd_errmsg_t *err) {
  size_t i, n;

  if (!json_is_array(outs))
    return ifd_errf(err, IFD_EINVAL,
                    "Unable to parse 'outputs': expected an array");
  n = json_array_size(outs);
  if (n == 0) return 0;
  req->outputs = ifd_pool_calloc(&req->pool, n, sizeof(ifd_output_req_t));
  if (req->outputs == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  for (i = 0; i < n; i++) {
    const json_t *o = json_array_get(outs, i), *name, *params, *v;
    ifd_output_req_t *out = &req->outputs[i];
    int binary = info->binary_all;

    if (!json_is_object(o))
      return ifd_errf(err, IFD_EINVAL,
                      "Unable to parse 'outputs': element %zu is not an object",
                      i);
    name = json_object_get(o, "name");
    if (!json_is_string(name))
      return ifd_errf(err, IFD_EINVAL,
                      "Unable to parse 'name' of output %zu: expected a string",
                      i);
    out->name = pool_str(req, name);
    if (out->name == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
    params = json_object_get(o, "parameters");
    if (params != NULL && !json_is_object(params))
      return ifd_errf(
          err, IFD_EINVAL,
          "Unable to parse 'parameters' of output '%s': expected an object",
          out->name);
    if (params != NULL) {
      v = json_object_get(params, "binary_data");
      if (v != NULL && !json_is_boolean(v))
        return ifd_errf(
            err, IFD_EINVAL,
            "Unable to parse 'binary_data' of output '%s': expected a boolean",
            out->name);
      if (v != NULL) binary = json_is_true(v);
      if (json_object_get(params, "shared_memory_region") != NULL) {
        int rc;
        if (json_object_get(params, "classification") != NULL)
          return ifd_errf(err, IFD_EINVAL,
                          "Output can't set both 'shared_memory_region' and "
                          "'classification'");
        if (json_is_true(v))
          return ifd_errf(err, IFD_EINVAL,
                          "Output can't set both 'shared_memory_region' and "
                          "'binary_data'");
        rc = ref_shm(req, "output", out->name, (uint32_t)i, params, info, err);
        if (rc != 0) return rc;
        binary = 0;
      }
      v = json_object_get(params, "classification");
      if (v != NULL) {
        json_int_t c = json_is_integer(v) ? json_integer_value(v) : -1;
        if (c < 0 || c > UINT32_MAX)
          return ifd_errf(err, IFD_EINVAL,
                          "Unable to parse 'classification' of output '%s': "
                          "expected a non-negative integer",
                          out->name);
        out->class_count = (uint32_t)c;
      }
    }
    out->proto_flags = binary ? IFD_HTTP_OUT_BINARY : 0;
  }
  req->n_outputs = (uint32_t)n;
  return 0;
}

static int ref_decode(ifd_request_t *req, const char *body, size_t body_len,
                      size_t json_len, ifd_http_infer_info_t *info,
                      ifd_errmsg_t *err) {
  json_error_t jerr;
  json_t *root;
  const json_t *v;
  size_t i, n, off = 0;
  int rc;

  info->binary_all = 0;
  info->shm = NULL;
  info->n_shm = 0;
  info->cap_shm = 0;
  if (json_len > body_len) {
    return ifd_errf(err, IFD_EINVAL,
                    "Inference-Header-Content-Length (%zu) exceeds the body "
                    "size (%zu)",
                    json_len, body_len);
  }
  root = json_loadb(body, json_len, JSON_ALLOW_NUL, &jerr);
  if (root == NULL) {
    return ifd_errf(err, IFD_EINVAL,
                    "failed to parse the request JSON buffer: %s at %d",
                    jerr.text, jerr.position);
  }
  if (!json_is_object(root)) {
    rc = ifd_errf(err, IFD_EINVAL, "the request JSON must be an object");
    goto out_decref;
  }
  req->id = "";
  v = json_object_get(root, "id");
  if (v != NULL) {
    if (!json_is_string(v)) {
      rc = ifd_errf(err, IFD_EINVAL, "Unable to parse 'id': expected a string");
      goto out_decref;
    }
    req->id = pool_str(req, v);
    if (req->id == NULL) {
      rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
      goto out_decref;
    }
  }
  v = json_object_get(root, "parameters");
  if (v != NULL && (rc = decode_params(req, v, info, err)) != 0)
    goto out_decref;

  v = json_object_get(root, "inputs");
  if (!json_is_array(v)) {
    rc = ifd_errf(err, IFD_EINVAL,
                  "Unable to parse 'inputs': expected an array");
    goto out_decref;
  }
  n = json_array_size(v);
  if (n != 0) {
    req->inputs = ifd_pool_calloc(&req->pool, n, sizeof(ifd_input_t));
    if (req->inputs == NULL) {
      rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
      goto out_decref;
    }
  }
  for (i = 0; i < n; i++) {
    rc = decode_input(req, &req->inputs[i], json_array_get(v, i), i,
                      body + json_len, body_len - json_len, &off, info, err);
    if (rc != 0) goto out_decref;
    req->n_inputs = (uint32_t)(i + 1);
  }
  if (off != body_len - json_len) {
    rc = ifd_errf(err, IFD_EINVAL,
                  "the body holds %zu bytes of binary data beyond those the "
                  "inputs declare",
                  body_len - json_len - off);
    goto out_decref;
  }
  v = json_object_get(root, "outputs");
  if (v != NULL && (rc = decode_outputs(req, v, info, err)) != 0)
    goto out_decref;
  rc = 0;

out_decref:
  json_decref(root);
  return rc;
}

/* ---- helpers ------------------------------------------------------------- */

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* Rewrites, in s, each non-negative integer literal outside strings that
 * lies above INT64_MAX and within UINT64_MAX as "0" and spaces (the
 * validator takes these, jansson does not: the oracle is jansson on the
 * rewritten text). Returns how many it rewrote. */
static size_t hide_big_uints(char *s, size_t n) {
  size_t i = 0, hits = 0;
  int in_str = 0;

  while (i < n) {
    char c = s[i];
    if (in_str) {
      if (c == '\\')
        i++;
      else if (c == '"')
        in_str = 0;
      i++;
      continue;
    }
    if (c == '"') {
      in_str = 1;
      i++;
      continue;
    }
    if (c >= '0' && c <= '9') {
      size_t j = i, len;
      char prev = i > 0 ? s[i - 1] : ' ';
      while (j < n && s[j] >= '0' && s[j] <= '9') j++;
      len = j - i;
      if (prev != '-' && prev != '.' && prev != 'e' && prev != 'E' &&
          prev != '+' &&
          !(j < n && (s[j] == '.' || s[j] == 'e' || s[j] == 'E')) &&
          s[i] != '0' &&
          (len == 20
               ? memcmp(s + i, "18446744073709551615", 20) <= 0
               : len == 19 && memcmp(s + i, "9223372036854775807", 19) > 0)) {
        s[i] = '0';
        memset(s + i + 1, ' ', len - 1);
        hits++;
      }
      i = j;
      continue;
    }
    i++;
  }
  return hits;
}

static int jansson_ok(const char *s, size_t n) {
  json_error_t e;
  char *copy = malloc(n + 1);
  json_t *j;

  assert_non_null(copy);
  memcpy(copy, s, n);
  hide_big_uints(copy, n);
  j = json_loadb(copy, n, JSON_ALLOW_NUL, &e);
  free(copy);
  json_decref(j);
  return j != NULL;
}

/* Whether s holds an integer that only the uint64 range holds. */
static int has_big_uint(const char *s, size_t n) {
  char *copy = malloc(n + 1);
  size_t hits;

  assert_non_null(copy);
  memcpy(copy, s, n);
  hits = hide_big_uints(copy, n);
  free(copy);
  return hits != 0;
}

static int scan_ok(const char *s, size_t n) {
  ifd_jerr_t e;
  int rc = ifd__json_validate(s, n, &e);
  if (rc != 0) assert_true(e.pos <= n);
  return rc == 0;
}

/* The validator and jansson agree on s. */
static void check_valid(const char *s, size_t n) {
  int want = jansson_ok(s, n), got = scan_ok(s, n);
  if (want != got)
    fail_msg("jansson %s but the validator %s: '%.*s'",
             want ? "accepts" : "rejects", got ? "accepts" : "rejects", (int)n,
             s);
}

static void check_valid_str(const char *s) {
  check_valid(s, strlen(s));
}

static ifd_request_t *req_new(void) {
  ifd_request_t *req = calloc(1, sizeof(*req));
  assert_non_null(req);
  ifd_pool_init(&req->pool);
  req->model_version = -1;
  return req;
}

static void req_free(ifd_request_t *req) {
  ifd_pool_destroy(&req->pool);
  free(req);
}

static int str_eq(const char *a, const char *b) {
  if (a == NULL || b == NULL) return a == b;
  return strcmp(a, b) == 0;
}

/* Whether two decoded requests hold the same thing; what differs in *why. */
static int same_request(const ifd_request_t *a, const ifd_request_t *b,
                        const char **why) {
  uint32_t i, d;

#define DIFF(cond, what) \
  do {                   \
    if (cond) {          \
      *why = what;       \
      return 0;          \
    }                    \
  } while (0)
  DIFF(!str_eq(a->id, b->id), "id");
  DIFF(a->correlation_id != b->correlation_id, "correlation_id");
  DIFF(!str_eq(a->correlation_id_str, b->correlation_id_str),
       "correlation_id_str");
  DIFF(a->flags != b->flags, "flags");
  DIFF(a->priority != b->priority, "priority");
  DIFF(a->timeout_us != b->timeout_us, "timeout");
  DIFF(a->n_params != b->n_params, "n_params");
  for (i = 0; i < a->n_params; i++) {
    const ifd_param_t *p = &a->params[i], *q = &b->params[i];
    DIFF(!str_eq(p->key, q->key) || p->type != q->type, "param key/type");
    if (p->type == IFD_PARAM_STRING) DIFF(!str_eq(p->v.s, q->v.s), "param s");
    if (p->type == IFD_PARAM_INT) DIFF(p->v.i != q->v.i, "param i");
    if (p->type == IFD_PARAM_BOOL) DIFF(p->v.b != q->v.b, "param b");
    if (p->type == IFD_PARAM_DOUBLE)
      DIFF(memcmp(&p->v.d, &q->v.d, 8) != 0, "param d");
  }
  DIFF(a->n_inputs != b->n_inputs, "n_inputs");
  for (i = 0; i < a->n_inputs; i++) {
    const ifd_input_t *p = &a->inputs[i], *q = &b->inputs[i];
    DIFF(!str_eq(p->name, q->name), "input name");
    DIFF(p->dtype != q->dtype || p->ndims != q->ndims, "input dtype/ndims");
    for (d = 0; d < p->ndims; d++) DIFF(p->shape[d] != q->shape[d], "shape");
    DIFF(p->byte_size != q->byte_size, "byte_size");
    DIFF(p->byte_size != 0 && memcmp(p->data, q->data, p->byte_size) != 0,
         "data");
  }
  DIFF(a->n_outputs != b->n_outputs, "n_outputs");
  for (i = 0; i < a->n_outputs; i++) {
    const ifd_output_req_t *p = &a->outputs[i], *q = &b->outputs[i];
    DIFF(!str_eq(p->name, q->name), "output name");
    DIFF(p->proto_flags != q->proto_flags, "output flags");
    DIFF(p->class_count != q->class_count, "class_count");
  }
#undef DIFF
  return 1;
}

/* Whether two decodes placed the same tensors in shared memory. */
static int same_places(const ifd_http_infer_info_t *a,
                       const ifd_http_infer_info_t *b, const char **why) {
  uint32_t i;

  *why = "shared-memory placements";
  if (a->n_shm != b->n_shm) return 0;
  for (i = 0; i < a->n_shm; i++) {
    const ifd_http_shm_place_t *p = &a->shm[i], *q = &b->shm[i];
    if (p->region_len != q->region_len ||
        memcmp(p->region, q->region, p->region_len) != 0 ||
        p->offset != q->offset || p->byte_size != q->byte_size ||
        p->index != q->index || p->output != q->output)
      return 0;
  }
  return 1;
}

static const char parse_err[] = "failed to parse the request JSON buffer";

/* Decodes body with both decoders and fails unless they agree. */
static void check_decode(const char *body, size_t body_len, size_t json_len) {
  ifd_request_t *a = req_new(), *b = req_new();
  ifd_http_infer_info_t ia = {0}, ib = {0};
  ifd_errmsg_t ea, eb;
  const char *why = "";
  int ra, rb;

  /* The jansson reference cannot hold integers above INT64_MAX:
   * test_decode_uint64 checks those. */
  if (has_big_uint(body, json_len)) {
    req_free(a);
    req_free(b);
    return;
  }
  ifd_errclear(&ea);
  ifd_errclear(&eb);
  ra = ifd__http_infer_decode(a, body, body_len, json_len, &ia, &ea);
  rb = ref_decode(b, body, body_len, json_len, &ib, &eb);
  if (ra != rb) {
    fail_msg("code %d ('%s') != reference %d ('%s') for '%.*s'", ra, ea.text,
             rb, eb.text, (int)json_len, body);
  }
  if (ra != 0) {
    int pa = strncmp(ea.text, parse_err, sizeof(parse_err) - 1) == 0;
    int pb = strncmp(eb.text, parse_err, sizeof(parse_err) - 1) == 0;
    if (pa != pb || (!pa && strcmp(ea.text, eb.text) != 0))
      fail_msg("'%s' != reference '%s' for '%.*s'", ea.text, eb.text,
               (int)json_len, body);
  } else if (!same_request(a, b, &why) || ia.binary_all != ib.binary_all ||
             !same_places(&ia, &ib, &why)) {
    fail_msg("decoded %s differs for '%.*s'", why, (int)json_len, body);
  }
  req_free(a);
  req_free(b);
}

static void check_decode_str(const char *s) {
  check_decode(s, strlen(s), strlen(s));
}

/* Valid bodies that between them use every field the decoder reads. */
static const char *const seeds[] = {
    "{\"inputs\":[{\"name\":\"A\",\"datatype\":\"INT32\",\"shape\":[4],"
    "\"parameters\":{\"shared_memory_region\":\"r\\u0031\","
    "\"shared_memory_offset\":16,\"shared_memory_byte_size\":16}},"
    "{\"name\":\"B\",\"datatype\":\"INT32\",\"shape\":[1],\"data\":[2]}],"
    "\"outputs\":[{\"name\":\"O\",\"parameters\":{\"binary_data\":false,"
    "\"shared_memory_region\":\"out\",\"shared_memory_byte_size\":64}}]}",
    "{\"id\":\"r1\",\"inputs\":[{\"name\":\"IN\",\"shape\":[1,4],"
    "\"datatype\":\"FP32\",\"data\":[0.5,1,-2.25,3e2]}]}",
    "{\"inputs\":[{\"name\":\"A\",\"datatype\":\"INT32\",\"shape\":[2,3],"
    "\"data\":[[1,2,3],[-4,5,2147483647]]},"
    "{\"name\":\"B\",\"datatype\":\"INT64\",\"shape\":[2,1,2],"
    "\"data\":[[[1,-9223372036854775808]],[[3,4]]]}]}",
    "{\"inputs\":[{\"name\":\"B\",\"datatype\":\"BOOL\",\"shape\":[3],"
    "\"data\":[true,false,true]},{\"name\":\"U8\",\"datatype\":\"UINT8\","
    "\"shape\":[2],\"data\":[0,255]},{\"name\":\"H\",\"datatype\":\"FP16\","
    "\"shape\":[4],\"data\":[1.0,0.5,65504,1e6]},{\"name\":\"BF\","
    "\"datatype\":\"BF16\",\"shape\":[2],\"data\":[1.0,-2]},{\"name\":\"D\","
    "\"datatype\":\"FP64\",\"shape\":[1],\"data\":[0.1]},{\"name\":\"U64\","
    "\"datatype\":\"UINT64\",\"shape\":[1],\"data\":[9223372036854775807]},"
    "{\"name\":\"I8\",\"datatype\":\"INT8\",\"shape\":[2],\"data\":[-128,127]}"
    ",{\"name\":\"U16\",\"datatype\":\"UINT16\",\"shape\":[1],\"data\":"
    "[65535]},{\"name\":\"U32\",\"datatype\":\"UINT32\",\"shape\":[1],"
    "\"data\":[4294967295]},{\"name\":\"I16\",\"datatype\":\"INT16\","
    "\"shape\":[1],\"data\":[-32768]},{\"name\":\"S\",\"datatype\":\"FP32\","
    "\"shape\":[],\"data\":7}]}",
    "{\"inputs\":[{\"name\":\"S\",\"datatype\":\"BYTES\",\"shape\":[2,2],"
    "\"data\":[[\"one\",\"\"],[\"a\\u0000b\\\"c\\/\\b\\f\\n\\r\\t\","
    "\"\\u00e9\\u20ac\\ud83d\\ude00 \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"]]}"
    "]}",
    "{\"parameters\":{\"sequence_id\":42,\"sequence_start\":true,"
    "\"sequence_end\":false,\"priority\":3,\"timeout\":5000,"
    "\"binary_data_output\":true,\"s\":\"v\",\"i\":-7,\"b\":true,"
    "\"d\":2.5,\"s\":\"w\",\"e\\u0078\":1e-3},"
    "\"inputs\":[],\"extra\":{\"k\":[1,{\"x\":null}]},"
    "\"outputs\":[{\"name\":\"O1\"},{\"name\":\"O2\",\"parameters\":"
    "{\"binary_data\":false,\"classification\":3}}]}",
    "{\"parameters\":{\"sequence_id\":\"corr\",\"sequence_end\":true},"
    "\"id\":\"x\",\"id\":\"y\",\"inputs\":[{\"name\":\"A\",\"datatype\":"
    "\"FP32\",\"shape\":[2],\"data\":[1,2],\"data\":[3.5,4.25]}],"
    "\"outputs\":[{\"na\\u006de\":\"O\",\"parameters\":{\"binary_data\":"
    "true,\"binary_data\":false}}]}",
    " \t\r\n{ \"inputs\" : [ { \"name\" : \"X\" , \"datatype\" : \"UINT32\" ,"
    " \"shape\" : [ 2 , 1 ] , \"data\" : [ [ 7 ] , [ [ ] , 8 ] ] } ] } \n",
    "{\"inputs\":[{\"name\":\"F\",\"datatype\":\"FP64\",\"shape\":[6],"
    "\"data\":[0.30000001192092896,1.7976931348623157e308,"
    "4.9e-324,-0.0,-0,123456789012345678901234567890.0]}]}",
};

/* ---- the validator ------------------------------------------------------- */

static void test_validate_cases(void **state) {
  static const char *const cases[] = {
      "",
      " ",
      "{}",
      "[]",
      "{",
      "}",
      "[",
      "]",
      "5",
      "\"x\"",
      "true",
      "null",
      "{} x",
      "{}\n\t ",
      "{},",
      "[1,]",
      "[,1]",
      "[1 2]",
      "{\"a\"}",
      "{\"a\":}",
      "{\"a\" 1}",
      "{\"a\":1,}",
      "{,\"a\":1}",
      "{1:2}",
      "{'a':1}",
      "[01]",
      "[-01]",
      "[-]",
      "[1.]",
      "[.5]",
      "[1e]",
      "[1e+]",
      "[1E5]",
      "[1e-5]",
      "[-0]",
      "[-0.0e-0]",
      "[+1]",
      "[0x10]",
      "[1.5.3]",
      "[9223372036854775807]",
      "[9223372036854775808]",
      "[-9223372036854775808]",
      "[-9223372036854775809]",
      "[00000000000000000001]",
      "[12345678901234567890]",
      "[1e308]",
      "[1.7976931348623157e308]",
      "[1.7976931348623159e308]",
      "[1e309]",
      "[17976931348623157e292]",
      "[17976931348623159e292]",
      "[0e999999]",
      "[0.0000e400]",
      "[1e-999999]",
      "[-1e400]",
      "[123e-400]",
      "[1e99999999999999999999]",
      "[10000e305]",
      "[0.00001e314]",
      "[tru]",
      "[true]",
      "[truex]",
      "[nul]",
      "[nulll]",
      "[false,true,null]",
      "[True]",
      "[\"\\u0000\"]",
      "{\"\\u0000\":1}",
      "{\"a\\u0000b\":1}",
      "[\"\\ud800\"]",
      "[\"\\udc00\"]",
      "[\"\\ud800\\udc00\"]",
      "[\"\\ud800\\u0041\"]",
      "[\"\\ud800x\"]",
      "[\"\\uD83D\\uDE00\"]",
      "[\"\\u12\"]",
      "[\"\\u12g4\"]",
      "[\"\\x\"]",
      "[\"\\'\"]",
      "[\"\\/\"]",
      "[\"\t\"]",
      "[\"\x7f\"]",
      "[\"\x01\"]",
      "[\"abc]",
      "[\"abc\\\"]",
      "[\"\xc3\xa9\"]",
      "[\"\xc3\"]",
      "[\"\xc3(\"]",
      "[\"\xc0\x80\"]",
      "[\"\xe0\x80\x80\"]",
      "[\"\xed\xa0\x80\"]",
      "[\"\xf4\x90\x80\x80\"]",
      "[\"\xf0\x9f\x98\x80\"]",
      "[\"\xf5\x80\x80\x80\"]",
      "[\"\xff\"]",
      "[\xc3\xa9]",
      "[\xff]",
      "\xef\xbb\xbf{}",
      "{\"a\":1}\x00",
      "[\"a\"]\"",
      "[[[]]]",
      "[[[]]",
      "{\"a\":{\"b\":{}}}",
      "{\"a\":[{\"b\":[]}],\"c\":\"d\"}",
      "[\v]",
      "[\f1]",
      "[1]\f",
  };
  size_t i;
  (void)state;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    check_valid_str(cases[i]);
  /* Raw NUL bytes, inside and outside strings. */
  check_valid("[\"a\0b\"]", 7);
  check_valid("[1,\0]", 5);
  check_valid("{}\0", 3);
}

/* Nesting up to jansson's limit is fine, one more level is not; neither
 * depth recurses. */
static void test_validate_depth(void **state) {
  static char buf[3 * IFD_JSON_MAX_DEPTH + 16];
  int depth, extra;
  (void)state;

  for (depth = IFD_JSON_MAX_DEPTH - 2; depth <= IFD_JSON_MAX_DEPTH + 2;
       depth++) {
    for (extra = 0; extra < 3; extra++) {
      size_t n = 0;
      int i;
      for (i = 0; i < depth; i++) buf[n++] = i % 2 && extra == 2 ? '[' : '[';
      if (extra == 1) buf[n++] = '1';
      if (extra == 2) {
        memcpy(buf + n, "{\"a\":1}", 7);
        n += 7;
      }
      for (i = 0; i < depth; i++) buf[n++] = ']';
      check_valid(buf, n);
    }
  }
  /* Far deeper than any stack would allow with recursion. */
  {
    size_t n = 1000000, i;
    char *big = malloc(2 * n);
    assert_non_null(big);
    for (i = 0; i < n; i++) {
      big[i] = '[';
      big[2 * n - 1 - i] = ']';
    }
    assert_false(scan_ok(big, 2 * n));
    free(big);
  }
}

/* Mutates s (n bytes) into out once; returns the new length. */
static size_t mutate(const char *s, size_t n, char *out, size_t cap) {
  static const char alphabet[] = "{}[],:\"\\ 0123456789-+.eEtrufalsn/ub\t\n";
  static const char *const chunks[] = {
      "\\u0000",
      "\\ud800",
      "\\udc00",
      "\\u00e9",
      "\xc3\xa9",
      "\xff",
      "\xc3",
      "1e999",
      "-0",
      "[[",
      "]]",
      "null",
      "{}",
      "\"\"",
      "9223372036854775808",
      "\"data\":[1]",
      "\"shape\":[1]",
      ",",
  };
  size_t pos = n ? next_rand() % (n + 1) : 0, len, k;
  uint64_t op = next_rand() % 6;

  if (n > cap - 32) n = cap - 32;
  memcpy(out, s, n);
  len = n;
  switch (op) {
    case 0: /* replace a byte */
      if (pos < len) out[pos] = alphabet[next_rand() % (sizeof(alphabet) - 1)];
      break;
    case 1: /* any byte */
      if (pos < len) out[pos] = (char)next_rand();
      break;
    case 2: /* delete a run */
      k = next_rand() % 4 + 1;
      if (pos + k > len) k = len - pos;
      memmove(out + pos, out + pos + k, len - pos - k);
      len -= k;
      break;
    case 3: /* insert a byte */
      memmove(out + pos + 1, out + pos, len - pos);
      out[pos] = alphabet[next_rand() % (sizeof(alphabet) - 1)];
      len++;
      break;
    default: { /* insert a chunk */
      const char *c = chunks[next_rand() % (sizeof(chunks) / sizeof(*chunks))];
      k = strlen(c);
      memmove(out + pos + k, out + pos, len - pos);
      memcpy(out + pos, c, k);
      len += k;
      break;
    }
  }
  return len;
}

static void test_validate_fuzz(void **state) {
  char buf[2048], buf2[2048];
  size_t i, n, k;
  int round;
  (void)state;

  for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
    n = strlen(seeds[i]);
    assert_true(scan_ok(seeds[i], n));
    for (k = 0; k <= n; k++) check_valid(seeds[i], k);
    for (round = 0; round < 5000; round++) {
      size_t len = mutate(seeds[i], n, buf, sizeof(buf));
      check_valid(buf, len);
      len = mutate(buf, len, buf2, sizeof(buf2));
      check_valid(buf2, len);
    }
  }
}

/* ---- strings and numbers ----------------------------------------------- */

static void check_string(const char *json, const char *want, size_t want_n) {
  char out[64];
  const char *end = json + strlen(json), *after;
  int esc;

  assert_true(scan_ok(json, strlen(json)));
  assert_int_equal(ifd_json_strlen(json + 1, end, &esc), want_n);
  after = ifd_json_strcpy(json + 1, end, out);
  assert_memory_equal(out, want, want_n);
  assert_ptr_equal(after, end - 1);
  assert_ptr_equal(ifd__json_skip(json + 1, end), end - 1);
}

static void test_strings(void **state) {
  (void)state;
  check_string("[\"plain\"]", "plain", 5);
  check_string("[\"\"]", "", 0);
  check_string("[\"a\\\"b\\\\c\\/d\"]", "a\"b\\c/d", 7);
  check_string("[\"\\b\\f\\n\\r\\t\"]", "\b\f\n\r\t", 5);
  check_string("[\"\\u0000\\u0041\\u00E9\\u20ac\"]", "\0A\xc3\xa9\xe2\x82\xac",
               7);
  check_string("[\"\\ud83d\\ude00x\"]", "\xf0\x9f\x98\x80x", 5);
  check_string("[\"\\uDBFF\\uDFFF\"]", "\xf4\x8f\xbf\xbf", 4);
  check_string("[\"\xf0\x9f\x98\x80\"]", "\xf0\x9f\x98\x80", 4);
}

/* Parses text as a JSON number and checks it against strtod(). */
static void check_number(const char *text) {
  char json[128];
  ifd_jnum_t num;
  double want = strtod(text, NULL);
  const char *end;
  int n = snprintf(json, sizeof(json), "[%s]", text);

  if (!scan_ok(json, (size_t)n)) return; /* overflow: jansson refuses too */
  end = ifd__json_number(json + 1, json + n, &num);
  assert_ptr_equal(end, json + n - 1);
  if (num.is_int) want = (double)strtoll(text, NULL, 10);
  if (memcmp(&num.d, &want, 8) != 0)
    fail_msg("%s: got %.17g, want %.17g", text, num.d, want);
}

static void test_numbers(void **state) {
  static const char *const cases[] = {
      "0",
      "-0",
      "0.0",
      "-0.0",
      "1",
      "-1",
      "0.1",
      "0.5",
      "1e22",
      "1e23",
      "9007199254740993",
      "9007199254740993.0",
      "9223372036854775807",
      "-9223372036854775808",
      "1.7976931348623157e308",
      "4.9e-324",
      "2.4703282292062327e-324",
      "2.4703282292062328e-324",
      "2.2250738585072011e-308",
      "1e-400",
      "123456789012345678901234567890",
      "0.30000001192092896",
      "3.4028234663852886e38",
      "1.401298464324817e-45",
      "0.000000000000000000000000000001",
      "1234567890123456789e-10",
      "8.98846567431158e307",
      "4503599627370497.5",
      "1e-22",
      "1e-23",
      "7.2057594037927933e16",
      "1.00000000000000011102230246251565404236316680908203125",
  };
  size_t i;
  int k;
  (void)state;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) check_number(cases[i]);
  for (k = 0; k < 200000; k++) {
    char text[64];
    uint64_t bits = next_rand();
    double d;
    float f;
    memcpy(&d, &bits, 8);
    memcpy(&f, &bits, 4);
    if (isfinite(d)) {
      snprintf(text, sizeof(text), "%.17g", d);
      check_number(text);
      snprintf(text, sizeof(text), "%.*e", (int)(next_rand() % 17), d);
      check_number(text);
    }
    if (isfinite(f)) {
      snprintf(text, sizeof(text), "%.9g", (double)f);
      check_number(text);
      snprintf(text, sizeof(text), "%.17g", (double)f);
      check_number(text);
    }
    /* Short decimals, the common case, with and without exponents. */
    snprintf(text, sizeof(text), "%s%" PRIu64 ".%" PRIu64 "e%d",
             bits & 1 ? "-" : "", next_rand() % 100000, next_rand() % 1000000,
             (int)(next_rand() % 60) - 30);
    check_number(text);
    snprintf(text, sizeof(text), "%" PRIu64 ".%03" PRIu64, next_rand() % 1000,
             next_rand() % 1000);
    check_number(text);
  }
}

/* ---- the decoder against the reference --------------------------------- */

static void test_decode_cases(void **state) {
  static const char *const cases[] = {
      "{}",
      "[]",
      "{\"inputs\":[]}",
      "{\"inputs\":null}",
      "{\"id\":null,"
      "\"inputs\":[]}",
      "{\"parameters\":null,\"inputs\":[]}",
      "{\"inputs\":[],\"outputs\":null}",
      "{\"inputs\":[],\"outputs\":[]}",
      "{\"inputs\":[],\"outputs\":[5]}",
      "{\"inputs\":[],\"outputs\":[{}]}",
      "{\"inputs\":[],\"outputs\":[{\"name\":\"o\",\"parameters\":{"
      "\"classification\":-1}}]}",
      "{\"inputs\":[],\"outputs\":[{\"name\":\"o\",\"parameters\":{"
      "\"classification\":4294967296}}]}",
      "{\"inputs\":[],\"outputs\":[{\"name\":\"o\",\"parameters\":{"
      "\"shared_memory_region\":null}}]}",
      "{\"inputs\":[],\"outputs\":[{\"name\":\"o\",\"parameters\":5}]}",
      /* Parameters: duplicates keep the first place and the last value. */
      "{\"parameters\":{\"a\":1,\"b\":2,\"a\":\"x\"},\"inputs\":[]}",
      "{\"parameters\":{\"priority\":\"x\",\"priority\":3},\"inputs\":[]}",
      "{\"parameters\":{\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,"
      "\"k6\":6,\"k7\":7,\"k8\":8,\"k9\":9,\"k2\":[],\"k2\":true,\"k10\":1.5,"
      "\"k1\":null,\"k1\":\"s\"},\"inputs\":[]}",
      "{\"parameters\":{\"x\":null},\"inputs\":[]}",
      "{\"parameters\":{\"x\":[]},\"inputs\":[]}",
      "{\"parameters\":{\"sequence_id\":-1},\"inputs\":[]}",
      "{\"parameters\":{\"sequence_id\":1.5},\"inputs\":[]}",
      "{\"parameters\":{\"sequence_id\":\"a\",\"sequence_id\":7},"
      "\"inputs\":[]}",
      "{\"parameters\":{\"priority\":4294967296},\"inputs\":[]}",
      "{\"parameters\":{\"priority\":4294967295,\"timeout\":"
      "9223372036854775807},\"inputs\":[]}",
      "{\"parameters\":{\"timeout\":1.0},\"inputs\":[]}",
      "{\"parameters\":{\"binary_data_output\":null},\"inputs\":[]}",
      "{\"parameters\":{\"sequence_end\":true,\"sequence_end\":false},"
      "\"inputs\":[]}",
      "{\"parameters\":{\"\\u0073equence_start\":true},\"inputs\":[]}",
      "{\"parameters\":{},\"inputs\":[]}",
      /* Inputs. */
      "{\"inputs\":[{\"name\":5}]}",
      "{\"inputs\":[{\"name\":\"a\"}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":null}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\\u0000x\","
      "\"shape\":[1],\"data\":[1]}]}",
      "{\"inputs\":[{\"name\":\"a\\u0000b\",\"datatype\":\"FP32\","
      "\"shape\":[1],\"data\":[1]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"fp32\",\"shape\":[1],"
      "\"data\":[1]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\",\"shape\":{}}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\",\"shape\":[1.0],"
      "\"data\":[1]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\",\"shape\":[1,"
      "\"x\"],\"data\":[1]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\",\"shape\":[1,1,1,"
      "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
      "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],\"data\":[1]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\",\"shape\":[1,1,1,"
      "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
      "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],\"data\":[1]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\",\"shape\":["
      "4294967296,4294967296],\"data\":[1]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\",\"shape\":[0],"
      "\"data\":[]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\",\"shape\":[0],"
      "\"data\":[[],[[]]]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\",\"shape\":[1],"
      "\"data\":null}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"BYTES\",\"shape\":[1],"
      "\"data\":null}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"BYTES\",\"shape\":[2],"
      "\"data\":[\"x\"]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"BYTES\",\"shape\":[1],"
      "\"data\":\"x\"}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"BYTES\",\"shape\":[2],"
      "\"data\":[\"x\",5,\"y\"]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"INT8\",\"shape\":[2],"
      "\"data\":[1,{\"a\":[1,2]}]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"INT8\",\"shape\":[3],"
      "\"data\":[1,{\"a\":[1,2]}]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"INT8\",\"shape\":[3],"
      "\"data\":[1,1.5,1000]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"INT8\",\"shape\":[2],"
      "\"data\":[1,1.5,1000]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"UINT64\",\"shape\":[1],"
      "\"data\":[-1]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"BOOL\",\"shape\":[2],"
      "\"data\":[true,null]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP16\",\"shape\":[3],"
      "\"data\":[70000,-1e-8,5.960464477539063e-8]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"BF16\",\"shape\":[2],"
      "\"data\":[3.4e38,1e-40]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\",\"shape\":[3],"
      "\"data\":[3.4028235677973366e38,1e-46,1e300]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\",\"shape\":[1],"
      "\"data\":[1],\"parameters\":{\"binary_data_size\":0}}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\",\"shape\":[1],"
      "\"parameters\":{\"binary_data_size\":null}}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\",\"shape\":[1],"
      "\"parameters\":{\"binary_data_size\":0,\"shared_memory_region\":1}}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\",\"shape\":[0],"
      "\"parameters\":{\"binary_data_size\":0}}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\",\"shape\":[1],"
      "\"parameters\":[]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\",\"shape\":[1],"
      "\"data\":[1]},7],\"outputs\":5}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\",\"shape\":[1],"
      "\"data\":[1]}],\"outputs\":5,\"inputs\":[]}",
  };
  size_t i;
  (void)state;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    check_decode_str(cases[i]);
  for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
    check_decode_str(seeds[i]);
}

/* Binary sections: sizes that fit, fall short and run over. */
static void test_decode_binary(void **state) {
  static const char json[] =
      "{\"inputs\":[{\"name\":\"A\",\"datatype\":\"FP32\",\"shape\":[2],"
      "\"parameters\":{\"binary_data_size\":8}},"
      "{\"name\":\"J\",\"datatype\":\"INT32\",\"shape\":[1],\"data\":[7]},"
      "{\"name\":\"B\",\"datatype\":\"UINT8\",\"shape\":[3],"
      "\"parameters\":{\"binary_data_size\":3}}]}";
  char body[sizeof(json) + 16];
  size_t jl = sizeof(json) - 1, extra;
  (void)state;

  memcpy(body, json, jl);
  memset(body + jl, 0x5a, sizeof(body) - jl);
  for (extra = 0; extra < 16; extra++) check_decode(body, jl + extra, jl);
  check_decode(body, 10, 20);
}

static void test_decode_fuzz(void **state) {
  char buf[2048], buf2[2048];
  size_t i, n, k;
  int round;
  (void)state;

  for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
    n = strlen(seeds[i]);
    for (k = 0; k <= n; k++) check_decode(seeds[i], n, k);
    for (round = 0; round < 5000; round++) {
      size_t len = mutate(seeds[i], n, buf, sizeof(buf));
      check_decode(buf, len, len);
      len = mutate(buf, len, buf2, sizeof(buf2));
      check_decode(buf2, len, len);
    }
  }
}

/* Integers above INT64_MAX, up to UINT64_MAX (Triton reads UINT64 data and
 * unsigned fields as uint64): jansson cannot be the reference here. */
static void test_decode_uint64(void **state) {
  static const char u64[] =
      "{\"inputs\":[{\"name\":\"U\",\"datatype\":\"UINT64\",\"shape\":[4],"
      "\"data\":[18446744073709551615,9223372036854775808,0,"
      "9223372036854775807]}]}";
  static const char *const refused[][2] = {
      {"{\"inputs\":[{\"name\":\"I\",\"datatype\":\"INT64\",\"shape\":[1],"
       "\"data\":[9223372036854775808]}]}",
       "Unable to parse 'data' of input 'I': element 0 (9223372036854775808) "
       "is out of range for INT64"},
      {"{\"inputs\":[{\"name\":\"U\",\"datatype\":\"UINT64\",\"shape\":[1],"
       "\"data\":[18446744073709551616]}]}",
       "failed to parse the request JSON buffer"},
      {"{\"inputs\":[{\"name\":\"U\",\"datatype\":\"UINT64\",\"shape\":[1],"
       "\"data\":[-9223372036854775809]}]}",
       "failed to parse the request JSON buffer"},
  };
  static const char shm[] =
      "{\"parameters\":{\"sequence_id\":18446744073709551615,\"timeout\":"
      "18446744073709551615},\"inputs\":[{\"name\":\"U\",\"datatype\":"
      "\"UINT64\",\"shape\":[1],\"parameters\":{\"shared_memory_region\":"
      "\"r\",\"shared_memory_offset\":18446744073709551615,"
      "\"shared_memory_byte_size\":18446744073709551614}}]}";
  const uint64_t want[4] = {UINT64_MAX, 1ull << 63, 0, INT64_MAX};
  ifd_http_infer_info_t info = {0};
  ifd_request_t *req = req_new();
  ifd_errmsg_t err;
  size_t i;
  (void)state;

  ifd_errclear(&err);
  assert_int_equal(ifd__http_infer_decode(req, u64, sizeof(u64) - 1,
                                          sizeof(u64) - 1, &info, &err),
                   0);
  assert_int_equal(req->n_inputs, 1);
  assert_int_equal(req->inputs[0].byte_size, sizeof(want));
  assert_memory_equal(req->inputs[0].data, want, sizeof(want));
  req_free(req);

  for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
    memset(&info, 0, sizeof(info));
    req = req_new();
    ifd_errclear(&err);
    assert_int_equal(
        ifd__http_infer_decode(req, refused[i][0], strlen(refused[i][0]),
                               strlen(refused[i][0]), &info, &err),
        IFD_EINVAL);
    if (strncmp(err.text, refused[i][1], strlen(refused[i][1])) != 0)
      fail_msg("'%s' does not start with '%s'", err.text, refused[i][1]);
    req_free(req);
  }

  memset(&info, 0, sizeof(info));
  req = req_new();
  ifd_errclear(&err);
  assert_int_equal(ifd__http_infer_decode(req, shm, sizeof(shm) - 1,
                                          sizeof(shm) - 1, &info, &err),
                   0);
  assert_true(req->correlation_id == UINT64_MAX);
  assert_true(req->timeout_us == UINT64_MAX);
  assert_int_equal(info.n_shm, 1);
  assert_true(info.shm[0].offset == UINT64_MAX);
  assert_true(info.shm[0].byte_size == UINT64_MAX - 1);
  req_free(req);

  /* The validator's bounds, both signs. */
  check_valid_str("[18446744073709551615]");
  assert_true(scan_ok("[18446744073709551615]", 22));
  assert_false(scan_ok("[18446744073709551616]", 22));
  assert_false(scan_ok("[99999999999999999999]", 22));
  assert_false(scan_ok("[-9223372036854775809]", 22));
}

/* Large bodies: many elements, many parameters (the hash table path). */
static void test_decode_large(void **state) {
  size_t cap = 1 << 20, n = 0;
  char *s = malloc(cap);
  int i;
  (void)state;

  assert_non_null(s);
  n += (size_t)snprintf(s + n, cap - n, "{\"parameters\":{");
  for (i = 0; i < 3000; i++)
    n += (size_t)snprintf(s + n, cap - n, "%s\"p%d\":%d", i ? "," : "",
                          i % 2000, i);
  n += (size_t)snprintf(s + n, cap - n,
                        "},\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\","
                        "\"shape\":[100,100],\"data\":[");
  for (i = 0; i < 10000; i++)
    n += (size_t)snprintf(s + n, cap - n, "%s[%.9g]", i ? "," : "",
                          (double)(float)(i * 0.37 - 1000));
  n += (size_t)snprintf(s + n, cap - n, "]}]}");
  check_decode(s, n, n);
  free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_validate_cases),
      cmocka_unit_test(test_validate_depth),
      cmocka_unit_test(test_validate_fuzz),
      cmocka_unit_test(test_strings),
      cmocka_unit_test(test_numbers),
      cmocka_unit_test(test_decode_cases),
      cmocka_unit_test(test_decode_binary),
      cmocka_unit_test(test_decode_fuzz),
      cmocka_unit_test(test_decode_uint64),
      cmocka_unit_test(test_decode_large),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
