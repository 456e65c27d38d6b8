/*
 * net/http_infer.c - KServe v2 infer bodies: JSON (and the binary tensor
 * extension) into an ifd_request_t, and an ifd_response_t back into text.
 *
 * Decoding parses the JSON header once with jansson. Binary inputs point
 * straight into the body that the request owns (req->body): no copy. JSON
 * `data` is walked twice, once to count and measure it (so a shape that
 * claims a trillion elements allocates nothing) and once to convert it into
 * one buffer from the request pool. Nothing here touches the network or the
 * server, so the unit tests drive it with hand-made requests.
 */
#include <inttypes.h>
#include <string.h>

#include "core/dtype.h"
#include "core/infer.h"
#include "net/internal.h"

/* ---- decoding ---------------------------------------------------------- */

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
        uint16_t h = w->dtype == IFD_TYPE_FP16 ? ifd__f32_to_f16((float)d)
                                               : ifd__f32_to_bf16((float)d);
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

/* One element of `inputs`. `bin`/`left`/`off`: the binary section. */
static int decode_input(ifd_request_t *req, ifd_input_t *in, const json_t *j,
                        size_t idx, const char *bin, size_t bin_len,
                        size_t *off, ifd_errmsg_t *err) {
  const json_t *name, *dt, *params, *bds = NULL, *data;
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
    if (json_object_get(params, "shared_memory_region") != NULL)
      return ifd_errf(err, IFD_EUNSUPPORTED,
                      "input '%s': shared memory is not supported", in->name);
    bds = json_object_get(params, "binary_data_size");
  }
  data = json_object_get(j, "data");
  if (bds != NULL) {
    json_int_t s = json_is_integer(bds) ? json_integer_value(bds) : -1;
    if (s < 0)
      return ifd_errf(err, IFD_EINVAL,
                      "Unable to parse 'binary_data_size' of input '%s': "
                      "expected a non-negative integer",
                      in->name);
    if (data != NULL)
      return ifd_errf(err, IFD_EINVAL,
                      "input '%s' has both 'data' and 'binary_data_size'",
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
  if (data == NULL)
    return ifd_errf(err, IFD_EINVAL,
                    "input '%s' has neither 'data' nor 'binary_data_size'",
                    in->name);
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
                          int binary_all, ifd_errmsg_t *err) {
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
    int binary = binary_all;

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
      if (json_object_get(params, "shared_memory_region") != NULL)
        return ifd_errf(err, IFD_EUNSUPPORTED,
                        "output '%s': shared memory is not supported",
                        out->name);
      v = json_object_get(params, "binary_data");
      if (v != NULL && !json_is_boolean(v))
        return ifd_errf(
            err, IFD_EINVAL,
            "Unable to parse 'binary_data' of output '%s': expected a boolean",
            out->name);
      if (v != NULL) binary = json_is_true(v);
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

int ifd__http_infer_decode(ifd_request_t *req, const char *body,
                           size_t body_len, size_t json_len,
                           ifd_http_infer_info_t *info, ifd_errmsg_t *err) {
  json_error_t jerr;
  json_t *root;
  const json_t *v;
  size_t i, n, off = 0;
  int rc;

  info->binary_all = 0;
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
                      body + json_len, body_len - json_len, &off, err);
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
  if (v != NULL && (rc = decode_outputs(req, v, info->binary_all, err)) != 0)
    goto out_decref;
  rc = 0;

out_decref:
  json_decref(root);
  return rc;
}

/* ---- serializing ------------------------------------------------------- */

static void put_i64(ifd_hbuf_t *b, int64_t v) {
  char tmp[24], *p = tmp + sizeof(tmp);
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

  do {
    *--p = (char)('0' + u % 10);
    u /= 10;
  } while (u != 0);
  if (v < 0) *--p = '-';
  ifd__hbuf_put(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

static void put_u64(ifd_hbuf_t *b, uint64_t u) {
  char tmp[24], *p = tmp + sizeof(tmp);

  do {
    *--p = (char)('0' + u % 10);
    u /= 10;
  } while (u != 0);
  ifd__hbuf_put(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

static void put_shape(ifd_hbuf_t *b, const int64_t *shape, uint32_t n) {
  uint32_t i;

  ifd__hbuf_put(b, "[", 1);
  for (i = 0; i < n; i++) {
    if (i != 0) ifd__hbuf_put(b, ",", 1);
    put_i64(b, shape[i]);
  }
  ifd__hbuf_put(b, "]", 1);
}

static void put_elem_json(ifd_hbuf_t *b, ifd_dtype_t t,
                          const unsigned char *p) {
  union {
    int8_t i8;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    float f;
    double d;
  } v;

  memcpy(&v, p, ifd_dtype_size(t));
  switch (t) {
    case IFD_TYPE_BOOL:
      ifd__hbuf_puts(b, p[0] ? "true" : "false");
      break;
    case IFD_TYPE_UINT8:
      put_u64(b, p[0]);
      break;
    case IFD_TYPE_UINT16:
      put_u64(b, v.u16);
      break;
    case IFD_TYPE_UINT32:
      put_u64(b, v.u32);
      break;
    case IFD_TYPE_UINT64:
      put_u64(b, v.u64);
      break;
    case IFD_TYPE_INT8:
      put_i64(b, v.i8);
      break;
    case IFD_TYPE_INT16:
      put_i64(b, v.i16);
      break;
    case IFD_TYPE_INT32:
      put_i64(b, v.i32);
      break;
    case IFD_TYPE_INT64:
      put_i64(b, v.i64);
      break;
    case IFD_TYPE_FP16:
      ifd__json_f32(b, ifd__f16_to_f32(v.u16));
      break;
    case IFD_TYPE_BF16:
      ifd__json_f32(b, ifd__bf16_to_f32(v.u16));
      break;
    case IFD_TYPE_FP32:
      ifd__json_f32(b, v.f);
      break;
    case IFD_TYPE_FP64:
      ifd__json_f64(b, v.d);
      break;
    default:
      ifd__hbuf_puts(b, "null");
      break;
  }
}

static int put_data(ifd_hbuf_t *b, const ifd_output_t *o, int64_t count,
                    ifd_errmsg_t *err) {
  const unsigned char *p = o->buffer;
  size_t esize = ifd_dtype_size(o->dtype);
  int64_t i;

  ifd__hbuf_put(b, "[", 1);
  if (o->dtype == IFD_TYPE_BYTES) {
    uint64_t off = 0;
    for (i = 0; i < count; i++) {
      uint32_t len;
      if (o->byte_size - off < 4) goto out_malformed;
      memcpy(&len, p + off, 4);
      off += 4;
      if (o->byte_size - off < len) goto out_malformed;
      if (i != 0) ifd__hbuf_put(b, ",", 1);
      ifd__json_str(b, (const char *)p + off, len);
      off += len;
    }
    if (off != o->byte_size) goto out_malformed;
  } else {
    for (i = 0; i < count; i++) {
      if (i != 0) ifd__hbuf_put(b, ",", 1);
      put_elem_json(b, o->dtype, p + (size_t)i * esize);
    }
  }
  ifd__hbuf_put(b, "]", 1);
  return 0;

out_malformed:
  return ifd_errf(err, IFD_EINTERNAL,
                  "output '%s' holds malformed BYTES data for %" PRId64
                  " elements",
                  o->name, count);
}

static int put_output(ifd_hbuf_t *b, const ifd_output_t *o, int binary,
                      uv_buf_t *bin, unsigned *nbin, ifd_errmsg_t *err) {
  int64_t count;
  size_t esize = ifd_dtype_size(o->dtype);
  int rc;

  if (ifd_shape_count(o->shape, o->ndims, &count) != 0 ||
      (esize == 0 && o->dtype != IFD_TYPE_BYTES) ||
      (esize != 0 && (uint64_t)count > UINT64_MAX / esize) ||
      (esize != 0 && o->byte_size != (uint64_t)count * esize)) {
    return ifd_errf(err, IFD_EINTERNAL,
                    "output '%s' holds %" PRIu64
                    " bytes, which do not match its datatype and shape",
                    o->name, o->byte_size);
  }
  ifd__hbuf_puts(b, "{\"name\":");
  ifd__json_str(b, o->name, strlen(o->name));
  ifd__hbuf_puts(b, ",\"datatype\":\"");
  ifd__hbuf_puts(b, ifd_dtype_name(o->dtype));
  ifd__hbuf_puts(b, "\",\"shape\":");
  put_shape(b, o->shape, o->ndims);
  if (binary) {
    ifd__hbuf_puts(b, ",\"parameters\":{\"binary_data_size\":");
    put_u64(b, o->byte_size);
    ifd__hbuf_puts(b, "}}");
    /* uv_buf_t lengths are 32-bit: larger outputs cannot go out as one. */
    if (o->byte_size > UINT32_MAX)
      return ifd_errf(err, IFD_EINTERNAL,
                      "output '%s' is too large to send over HTTP", o->name);
    bin[*nbin] = uv_buf_init(o->buffer, (unsigned)o->byte_size);
    ++*nbin;
    return 0;
  }
  ifd__hbuf_puts(b, ",\"data\":");
  rc = put_data(b, o, count, err);
  if (rc != 0) return rc;
  ifd__hbuf_put(b, "}", 1);
  return 0;
}

static const ifd_output_t *find_output(const ifd_response_t *resp,
                                       const char *name) {
  uint32_t i;

  /* Responses hold a handful of outputs: a scan beats any index. */
  for (i = 0; i < resp->n_outputs; i++)
    if (strcmp(resp->outputs[i].name, name) == 0) return &resp->outputs[i];
  return NULL;
}

static void put_params(ifd_hbuf_t *b, const ifd_param_t *params, uint32_t n) {
  uint32_t i;

  ifd__hbuf_puts(b, ",\"parameters\":{");
  for (i = 0; i < n; i++) {
    const ifd_param_t *p = &params[i];
    if (i != 0) ifd__hbuf_put(b, ",", 1);
    ifd__json_str(b, p->key, strlen(p->key));
    ifd__hbuf_put(b, ":", 1);
    switch (p->type) {
      case IFD_PARAM_STRING:
        ifd__json_str(b, p->v.s, strlen(p->v.s));
        break;
      case IFD_PARAM_INT:
        put_i64(b, p->v.i);
        break;
      case IFD_PARAM_BOOL:
        ifd__hbuf_puts(b, p->v.b ? "true" : "false");
        break;
      case IFD_PARAM_DOUBLE:
        ifd__json_f64(b, p->v.d);
        break;
    }
  }
  ifd__hbuf_put(b, "}", 1);
}

int ifd__http_infer_serialize(const ifd_request_t *req,
                              const ifd_response_t *resp, int64_t model_version,
                              int binary_all, ifd_hbuf_t *out, uv_buf_t *bin,
                              unsigned *nbin, ifd_errmsg_t *err) {
  const char *name = req->model_name != NULL ? req->model_name : "";
  uint32_t i;
  int rc, first = 1;

  *nbin = 0;
  ifd__hbuf_put(out, "{", 1);
  if (req->id != NULL && req->id[0] != '\0') {
    ifd__hbuf_puts(out, "\"id\":");
    ifd__json_str(out, req->id, strlen(req->id));
    ifd__hbuf_put(out, ",", 1);
  }
  ifd__hbuf_puts(out, "\"model_name\":");
  ifd__json_str(out, name, strlen(name));
  ifd__hbuf_puts(out, ",\"model_version\":\"");
  if (model_version >= 0) put_i64(out, model_version);
  ifd__hbuf_put(out, "\"", 1);
  if (resp->n_params != 0) put_params(out, resp->params, resp->n_params);
  ifd__hbuf_puts(out, ",\"outputs\":[");
  if (req->n_outputs != 0) {
    /* The client named its outputs: answer in its order. */
    for (i = 0; i < req->n_outputs; i++) {
      const ifd_output_t *o = find_output(resp, req->outputs[i].name);
      if (o == NULL) continue;
      if (!first) ifd__hbuf_put(out, ",", 1);
      first = 0;
      rc = put_output(out, o,
                      (req->outputs[i].proto_flags & IFD_HTTP_OUT_BINARY) != 0,
                      bin, nbin, err);
      if (rc != 0) return rc;
    }
  } else {
    for (i = 0; i < resp->n_outputs; i++) {
      if (i != 0) ifd__hbuf_put(out, ",", 1);
      rc = put_output(out, &resp->outputs[i], binary_all, bin, nbin, err);
      if (rc != 0) return rc;
    }
  }
  ifd__hbuf_puts(out, "]}");
  if (out->oom) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  return 0;
}
