/*
 * frontend/http_generate_map.c - Triton's generate extension: a generate body
 * (one flat JSON object) into an ifd_request_t, and a response into the
 * flat JSON object that generate and generate_stream answer.
 *
 * A member that names a model input becomes that input. Its shape is the
 * model metadata's with every -1 read as 1 (Triton's rule: generate has no
 * shape field, so only inputs of fixed shape or with one element along each
 * variable dim can be sent), and its value must hold exactly that many
 * elements: a scalar counts one, an array its elements (nested arrays
 * flattened). The other members become request parameters; a member
 * "parameters" holding an object gives its members instead (the form of
 * Triton's generate documentation). Messages are Triton's: its JSON
 * library's ("attempt to access JSON non-signed-integer as signed-integer")
 * and rapidjson's parse errors where ours map onto them.
 *
 * Bodies are small (prompts and sampling knobs), so the body is parsed
 * with jansson into a tree; nothing here touches the network, the server
 * or the loop, so the unit tests drive it with hand-made requests.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/infer.h"
#include "core/server.h"
#include "frontend/internal.h"

/* ---- decoding ------------------------------------------------------------ */

/* rapidjson's text for what our validator found, where one maps. */
static const char *parse_reason(const char *ours, size_t pos, size_t len) {
  if (len == 0 || (pos == 0 && strcmp(ours, "premature end of input") == 0))
    return "The document is empty.";
  if (strcmp(ours, "string or '}' expected") == 0)
    return "Missing a name for object member.";
  if (strcmp(ours, "end of file expected") == 0)
    return "The document root must not be followed by other values.";
  if (strcmp(ours, "invalid token") == 0) return "Invalid value.";
  return ours;
}

static int type_error(ifd_errmsg_t *err, const char *what) {
  return ifd_errf(err, IFD_EINVAL,
                  "Unable to parse 'data': attempt to access JSON %s", what);
}

/* Counts the scalars in `v` (arrays flattened). -1: too deep. */
static int64_t count_elems(const json_t *v, int depth) {
  size_t i;
  int64_t n = 0;

  if (!json_is_array(v)) return 1;
  if (depth > IFD_JSON_MAX_DEPTH) return -1;
  for (i = 0; i < json_array_size(v); i++) {
    int64_t k = count_elems(json_array_get(v, i), depth + 1);
    if (k < 0) return -1;
    n += k;
  }
  return n;
}

/* Where a flattening walk writes. */
typedef struct fill {
  ifd_dtype_t dtype;
  unsigned char *out; /* borrowed: the input's buffer (request pool) */
  size_t bytes;       /* BYTES: bytes the strings take (measure pass) */
  int measure;        /* 1: only check and measure (BYTES) */
  ifd_errmsg_t *err;  /* borrowed */
} fill_t;

static int put_int(fill_t *f, const json_t *v, int64_t lo, int64_t hi,
                   size_t size, int is_signed) {
  int64_t x;

  if (!json_is_integer(v) || (!is_signed && json_integer_value(v) < 0))
    return type_error(f->err, is_signed ? "non-signed-integer as signed-integer"
                                        : "non-unsigned-integer as "
                                          "unsigned-integer");
  x = json_integer_value(v);
  if (x < lo || x > hi)
    return ifd_errf(f->err, IFD_EINVAL,
                    "Unable to parse 'data': %" PRId64
                    " is out of range for %s",
                    x, ifd_dtype_name(f->dtype));
  memcpy(f->out, &x, size); /* little-endian hosts only, as Triton */
  f->out += size;
  return 0;
}

/* Converts the scalar `v` into f->out. */
static int put_elem(fill_t *f, const json_t *v) {
  double d;

  switch (f->dtype) {
    case IFD_TYPE_BOOL:
      if (!json_is_boolean(v))
        return type_error(f->err, "non-boolean as boolean");
      *f->out++ = json_is_true(v) ? 1 : 0;
      return 0;
    case IFD_TYPE_UINT8:
      return put_int(f, v, 0, UINT8_MAX, 1, 0);
    case IFD_TYPE_UINT16:
      return put_int(f, v, 0, UINT16_MAX, 2, 0);
    case IFD_TYPE_UINT32:
      return put_int(f, v, 0, UINT32_MAX, 4, 0);
    case IFD_TYPE_UINT64:
      return put_int(f, v, 0, INT64_MAX, 8, 0);
    case IFD_TYPE_INT8:
      return put_int(f, v, INT8_MIN, INT8_MAX, 1, 1);
    case IFD_TYPE_INT16:
      return put_int(f, v, INT16_MIN, INT16_MAX, 2, 1);
    case IFD_TYPE_INT32:
      return put_int(f, v, INT32_MIN, INT32_MAX, 4, 1);
    case IFD_TYPE_INT64:
      return put_int(f, v, INT64_MIN, INT64_MAX, 8, 1);
    case IFD_TYPE_FP16:
    case IFD_TYPE_BF16:
    case IFD_TYPE_FP32:
    case IFD_TYPE_FP64:
      if (!json_is_number(v)) return type_error(f->err, "non-number as double");
      d = json_number_value(v);
      if (f->dtype == IFD_TYPE_FP64) {
        memcpy(f->out, &d, 8);
        f->out += 8;
      } else if (f->dtype == IFD_TYPE_FP32) {
        memcpy(f->out, &(float){(float)d}, 4);
        f->out += 4;
      } else {
        uint16_t h = f->dtype == IFD_TYPE_FP16 ? ifd_f32_to_f16((float)d)
                                               : ifd_f32_to_bf16((float)d);
        memcpy(f->out, &h, 2);
        f->out += 2;
      }
      return 0;
    case IFD_TYPE_BYTES: {
      size_t n;
      uint32_t n32;
      if (!json_is_string(v)) return type_error(f->err, "non-string as string");
      n = json_string_length(v);
      if (n > UINT32_MAX)
        return ifd_errf(f->err, IFD_EINVAL,
                        "Unable to parse 'data': string too long");
      if (f->measure) {
        f->bytes += 4 + n;
        return 0;
      }
      n32 = (uint32_t)n;
      memcpy(f->out, &n32, 4);
      memcpy(f->out + 4, json_string_value(v), n);
      f->out += 4 + n;
      return 0;
    }
    default:
      return ifd_errf(f->err, IFD_EINVAL,
                      "Unable to parse 'data': datatype %s is not supported",
                      ifd_dtype_name(f->dtype));
  }
}

/* Visits the scalars of `v` in order (count_elems checked the depth). */
static int fill_elems(fill_t *f, const json_t *v) {
  size_t i;
  int rc;

  if (!json_is_array(v)) return put_elem(f, v);
  for (i = 0; i < json_array_size(v); i++) {
    rc = fill_elems(f, json_array_get(v, i));
    if (rc != 0) return rc;
  }
  return 0;
}

static int decode_input(ifd_request_t *req, const ifd_tensor_info_t *info,
                        const json_t *v, ifd_errmsg_t *err) {
  int64_t shape[IFD_MAX_DIMS], count = 1, seen;
  fill_t f = {.dtype = info->dtype, .err = err};
  ifd_input_t *in;
  size_t i, size;
  int rc;

  if (info->n_shape > IFD_MAX_DIMS)
    return ifd_errf(err, IFD_EINVAL, "input '%s' has too many dims",
                    info->name);
  for (i = 0; i < info->n_shape; i++) {
    shape[i] = info->shape[i] < 0 ? 1 : info->shape[i];
    count *= shape[i]; /* config dims are small: validated at load */
  }
  seen = count_elems(v, 1);
  if (seen != count)
    return ifd_errf(err, IFD_EINVAL,
                    "Unable to parse 'data': Shape does not match true shape "
                    "of 'data' field");
  if (info->dtype == IFD_TYPE_BYTES) {
    f.measure = 1;
    rc = fill_elems(&f, v);
    if (rc != 0) return rc;
    f.measure = 0;
    size = f.bytes;
  } else {
    size = (size_t)count * ifd_dtype_size(info->dtype);
  }
  in = ifd_request_add_input(req, info->name, strlen(info->name), info->dtype,
                             shape, (uint32_t)info->n_shape);
  if (in == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  f.out = ifd_pool_alloc(&req->pool, size != 0 ? size : 1);
  if (f.out == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  in->data = f.out;
  in->byte_size = size;
  return fill_elems(&f, v);
}

static int decode_param(ifd_request_t *req, const char *key, const json_t *v,
                        ifd_errmsg_t *err) {
  ifd_param_t *p;

  /* As on the infer route: tritonserver's HTTP front end keeps triton_*
   * parameters for itself. */
  if (strncmp(key, "triton_", 7) == 0)
    return ifd_errf(err, IFD_EINVAL,
                    "parameter keys starting with 'triton_' are reserved for "
                    "Triton usage and should not be specified.");
  if (!json_is_string(v) && !json_is_number(v) && !json_is_boolean(v))
    return ifd_errf(err, IFD_EINVAL,
                    "Unable to parse parameter '%s': expected a string, a "
                    "number or a boolean",
                    key);
  p = ifd_request_add_param(req, key, strlen(key));
  if (p == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  if (json_is_string(v)) {
    p->type = IFD_PARAM_STRING;
    p->v.s = ifd_pool_strndup(&req->pool, json_string_value(v),
                              json_string_length(v));
    if (p->v.s == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  } else if (json_is_integer(v)) {
    p->type = IFD_PARAM_INT;
    p->v.i = json_integer_value(v);
  } else if (json_is_real(v)) {
    p->type = IFD_PARAM_DOUBLE;
    p->v.d = json_real_value(v);
  } else {
    p->type = IFD_PARAM_BOOL;
    p->v.b = json_is_true(v);
  }
  return 0;
}

static const ifd_tensor_info_t *find_input(const ifd_tensor_info_t *inputs,
                                           size_t n, const char *name) {
  size_t i;

  for (i = 0; i < n; i++)
    if (strcmp(inputs[i].name, name) == 0) return &inputs[i];
  return NULL;
}

/* Triton adds each input member to the request as it reads the body, so a
 * second member naming the same input is the core's error; jansson would
 * keep the last one silently. Walks the top-level members of the validated
 * object at p in text order and answers the first input seen twice.
 * Parameters (other keys) may repeat. */
static int check_duplicate_inputs(const char *p, const char *end,
                                  const ifd_tensor_info_t *inputs,
                                  size_t n_inputs, ifd_errmsg_t *err) {
  unsigned char stack[64], *seen = stack;
  int rc = 0;

  if (n_inputs == 0) return 0;
  if (n_inputs > sizeof(stack) && (seen = calloc(n_inputs, 1)) == NULL)
    return ifd_errf(err, IFD_ENOMEM, "out of memory");
  if (seen == stack) memset(stack, 0, sizeof(stack));
  p = ifd__json_ws(p, end) + 1; /* past '{' */
  for (;;) {
    const char *k;
    char *name;
    size_t n, i;
    int esc;
    p = ifd__json_ws(p, end);
    if (p >= end || *p != '"') break; /* the closing '}' */
    k = p;
    n = ifd_json_strlen(k, end, &esc);
    name = malloc(n + 1);
    if (name == NULL) {
      rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
      break;
    }
    ifd_json_strcpy(k, end, name);
    name[n] = '\0';
    for (i = 0; i < n_inputs; i++)
      if (strlen(inputs[i].name) == n && memcmp(inputs[i].name, name, n) == 0)
        break;
    free(name);
    if (i < n_inputs && seen[i]) {
      rc = ifd_errf(err, IFD_EINVAL, "input '%s' already exists in request",
                    inputs[i].name);
      break;
    }
    if (i < n_inputs) seen[i] = 1;
    p = ifd__json_ws(ifd__json_skip(k, end), end) + 1; /* past ':' */
    p = ifd__json_ws(ifd__json_skip(ifd__json_ws(p, end), end), end);
    if (p < end && *p == ',') p++;
  }
  if (seen != stack) free(seen);
  return rc;
}

int ifd__http_generate_decode(ifd_request_t *req, const char *body, size_t len,
                              const ifd_tensor_info_t *inputs, size_t n_inputs,
                              ifd_errmsg_t *err) {
  const ifd_tensor_info_t *info;
  const char *key, *k2;
  json_t *root, *v, *v2;
  json_error_t jerr;
  ifd_jerr_t e;
  int rc = 0;

  /* Syntax first, with the offset our infer route reports too. */
  if (len == 0 || ifd__json_validate(body, len, &e) != 0) {
    if (len == 0) {
      e.pos = 0;
      e.text[0] = '\0';
    }
    return ifd_errf(err, IFD_EINVAL,
                    "failed to parse the request JSON buffer: %s at %zu",
                    parse_reason(e.text, e.pos, len), e.pos);
  }
  root = json_loadb(body, len, JSON_ALLOW_NUL, &jerr);
  if (root == NULL) {
    /* The validator accepted it: an integer above INT64_MAX (the validator
     * takes uint64, jansson does not), or memory ran out. */
    if (strncmp(jerr.text, "too big integer", 15) == 0)
      return ifd_errf(err, IFD_EINVAL,
                      "failed to parse the request JSON buffer: %s at %d",
                      jerr.text, jerr.position);
    return ifd_errf(err, IFD_ENOMEM, "out of memory");
  }
  if (!json_is_object(root)) {
    rc = ifd_errf(err, IFD_EINVAL,
                  "failed to parse the request JSON buffer: the generate "
                  "request must be a JSON object");
    goto out_free;
  }
  rc = check_duplicate_inputs(body, body + len, inputs, n_inputs, err);
  if (rc != 0) goto out_free;
  req->id = "";
  json_object_foreach(root, key, v) {
    info = find_input(inputs, n_inputs, key);
    if (info != NULL) {
      rc = decode_input(req, info, v, err);
    } else if (strcmp(key, "parameters") == 0 && json_is_object(v)) {
      json_object_foreach(v, k2, v2) {
        rc = decode_param(req, k2, v2, err);
        if (rc != 0) break;
      }
    } else {
      rc = decode_param(req, key, v, err);
    }
    if (rc != 0) goto out_free;
  }

out_free:
  json_decref(root);
  return rc;
}

/* ---- encoding ------------------------------------------------------------ */

static int by_name(const void *a, const void *b) {
  const ifd_output_t *x = *(const ifd_output_t *const *)a;
  const ifd_output_t *y = *(const ifd_output_t *const *)b;
  return strcmp(x->name, y->name);
}

int ifd__http_generate_encode(ifd_hbuf_t *b, const ifd_response_t *resp,
                              const char *model_name, int64_t version,
                              ifd_errmsg_t *err) {
  const ifd_output_t *stack[16], **sorted = stack;
  uint32_t i;
  int rc = 0;

  /* Outputs in byte order of their names, as Triton's std::map gives them. */
  if (resp->n_outputs > sizeof(stack) / sizeof(stack[0])) {
    sorted = malloc(resp->n_outputs * sizeof(*sorted));
    if (sorted == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  }
  for (i = 0; i < resp->n_outputs; i++) sorted[i] = &resp->outputs[i];
  qsort(sorted, resp->n_outputs, sizeof(*sorted), by_name);
  ifd_hbuf_put(b, "{", 1);
  for (i = 0; i < resp->n_outputs; i++) {
    ifd_json_str(b, sorted[i]->name, strlen(sorted[i]->name));
    ifd_hbuf_put(b, ":", 1);
    rc = ifd__http_json_output_data(b, sorted[i], err);
    if (rc != 0) goto out_free;
    ifd_hbuf_put(b, ",", 1);
  }
  ifd_hbuf_puts(b, "\"model_name\":");
  ifd_json_str(b, model_name, strlen(model_name));
  ifd_hbuf_puts(b, ",\"model_version\":\"");
  if (version >= 0) ifd_hbuf_printf(b, "%" PRId64, version);
  ifd_hbuf_put(b, "\"", 1);
  for (i = 0; i < resp->n_params; i++) {
    ifd_hbuf_put(b, ",", 1);
    ifd_json_str(b, resp->params[i].key, strlen(resp->params[i].key));
    ifd_hbuf_put(b, ":", 1);
    ifd__http_json_param_value(b, &resp->params[i]);
  }
  ifd_hbuf_put(b, "}", 1);
  if (b->oom) rc = ifd_errf(err, IFD_ENOMEM, "out of memory");

out_free:
  if (sorted != stack) free(sorted);
  return rc;
}
