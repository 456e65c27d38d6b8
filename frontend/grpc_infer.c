/*
 * frontend/grpc_infer.c - ModelInferRequest bytes into an ifd_request_t
 * (the decoding half of the inference message codec).
 *
 * Decoding walks the top level of the message by hand (tags and lengths
 * only) so that every raw_input_contents entry stays where it is: the input
 * points into the message buffer, which the request owns. The small nested
 * messages (inputs, requested outputs, parameter entries) are unpacked with
 * protobuf-c from their slices and freed as soon as they are read.
 *
 * Encoding (a response into ModelInferResponse pieces) is
 * frontend/grpc_infer_encode.c's.
 *
 * Shared memory (frontend/grpc_shm.c): an input that names a region points into
 * it and takes no raw_input_contents entry (the entries go, in order, to the
 * other inputs); an output placed in a region is written there by the
 * backend and answered with an empty raw_output_contents entry, as Triton
 * does.
 *
 * Nothing here touches a stream: see frontend/grpc_service.c. Only the
 * shared-memory lookup reads the server (its region table).
 */
#include "frontend/grpc_infer.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "core/dtype.h"
#include "core/infer.h"
#include "core/server.h"
#include "frontend/grpc_shm.h"
#include "proto/grpc_service.pb-c.h"

/* Protobuf wire types. */
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/* Top-level fields of ModelInferRequest (proto/grpc_service.proto); all of
 * them are length-delimited. */
enum {
  F_MODEL_NAME = 1,
  F_MODEL_VERSION = 2,
  F_ID = 3,
  F_PARAMETERS = 4,
  F_INPUTS = 5,
  F_OUTPUTS = 6,
  F_RAW_INPUT = 7,
};

typedef struct slice {
  const uint8_t *p; /* borrowed: the message buffer */
  size_t n;
} slice_t;

typedef struct field {
  uint32_t num;
  int wt;
  slice_t s; /* WT_LEN only */
} field_t;

/* ---- wire format --------------------------------------------------------- */

size_t ifd__pb_put_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;

  while (v >= 0x80) {
    p[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (uint8_t)v;
  return n;
}

int ifd__pb_get_varint(const uint8_t *p, const uint8_t *end, uint64_t *out) {
  uint64_t v = 0;
  int i;

  for (i = 0; i < 10 && p + i < end; i++) {
    uint8_t b = p[i];
    if (i == 9 && b > 1) return -1; /* more than 64 bits */
    v |= (uint64_t)(b & 0x7f) << (7 * i);
    if (b < 0x80) {
      *out = v;
      return i + 1;
    }
  }
  return -1;
}

/* Reads one field at p. Returns the bytes it takes, or -1 when malformed
 * (truncated, field number 0, or a group, which proto3 never sends). */
static ssize_t next_field(const uint8_t *p, const uint8_t *end, field_t *f) {
  const uint8_t *q = p;
  uint64_t tag, v;
  int n;

  n = ifd__pb_get_varint(q, end, &tag);
  if (n < 0 || tag > UINT32_MAX || (tag >> 3) == 0) return -1;
  q += n;
  f->num = (uint32_t)(tag >> 3);
  f->wt = (int)(tag & 7);
  switch (f->wt) {
    case WT_VARINT:
      n = ifd__pb_get_varint(q, end, &v);
      if (n < 0) return -1;
      q += n;
      break;
    case WT_I64:
      if (end - q < 8) return -1;
      q += 8;
      break;
    case WT_I32:
      if (end - q < 4) return -1;
      q += 4;
      break;
    case WT_LEN:
      n = ifd__pb_get_varint(q, end, &v);
      if (n < 0) return -1;
      q += n;
      if (v > (uint64_t)(end - q)) return -1;
      f->s.p = q;
      f->s.n = (size_t)v;
      q += v;
      break;
    default:
      return -1;
  }
  return q - p;
}

/* ---- decoding: parameters ------------------------------------------------ */

/* protoc-c generates unpack functions for top-level messages only; nested
 * ones go through their descriptor. NULL when malformed (or ENOMEM). */
static ProtobufCMessage *unpack(const ProtobufCMessageDescriptor *d,
                                slice_t s) {
  return protobuf_c_message_unpack(d, NULL, s.n, s.p);
}

static int parse_failed(ifd_errmsg_t *err) {
  return ifd_errf(err, IFD_EINVAL, "failed to parse ModelInferRequest");
}

static int no_mem(ifd_errmsg_t *err) {
  return ifd_errf(err, IFD_ENOMEM, "out of memory");
}

/* An integer parameter in [0, max] sent as int64_param or uint64_param. */
static int param_uint(const Inference__InferParameter *v, uint64_t max,
                      uint64_t *out) {
  if (v->parameter_choice_case ==
          INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM &&
      v->int64_param >= 0 && (uint64_t)v->int64_param <= max) {
    *out = (uint64_t)v->int64_param;
    return 0;
  }
  if (v->parameter_choice_case ==
          INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_UINT64_PARAM &&
      v->uint64_param <= max) {
    *out = v->uint64_param;
    return 0;
  }
  return -1;
}

static int is_bool(const Inference__InferParameter *v) {
  return v->parameter_choice_case ==
         INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM;
}

/* Applies one request parameter: the ones Triton gives a meaning to go to
 * request fields, the others are passed on to the backend. */
static int apply_param(ifd_request_t *req, const char *key,
                       const Inference__InferParameter *v, ifd_errmsg_t *err) {
  static const Inference__InferParameter unset =
      INFERENCE__INFER_PARAMETER__INIT;
  ifd_param_t *p;
  uint64_t u;

  if (v == NULL) v = &unset;
  if (strcmp(key, "sequence_id") == 0) {
    if (v->parameter_choice_case ==
        INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM) {
      req->correlation_id = 0;
      req->correlation_id_str = ifd_pool_strndup(&req->pool, v->string_param,
                                                 strlen(v->string_param));
      return req->correlation_id_str != NULL ? 0 : no_mem(err);
    }
    /* Triton takes int64_param or string_param only. */
    if (v->parameter_choice_case !=
        INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM)
      return ifd_errf(err, IFD_EINVAL,
                      "invalid value type for 'sequence_id' parameter, "
                      "expected int64_param or string_param.");
    if (v->int64_param < 0)
      return ifd_errf(err, IFD_EINVAL,
                      "invalid value for 'sequence_id' parameter: a "
                      "correlation ID is not negative");
    u = (uint64_t)v->int64_param;
    req->correlation_id = u;
    req->correlation_id_str = NULL;
    return 0;
  }
  if (strcmp(key, "sequence_start") == 0 || strcmp(key, "sequence_end") == 0) {
    uint32_t flag = key[9] == 's' ? IFD_REQUEST_FLAG_SEQUENCE_START
                                  : IFD_REQUEST_FLAG_SEQUENCE_END;
    if (!is_bool(v))
      return ifd_errf(err, IFD_EINVAL,
                      "invalid value type for '%s' parameter, expected "
                      "bool_param.",
                      key);
    if (v->bool_param)
      req->flags |= flag;
    else
      req->flags &= ~flag;
    return 0;
  }
  if (strcmp(key, "priority") == 0 || strcmp(key, "timeout") == 0) {
    if (param_uint(v, key[0] == 'p' ? UINT32_MAX : UINT64_MAX, &u) != 0)
      return ifd_errf(err, IFD_EINVAL,
                      "Unable to parse '%s': expected a non-negative integer",
                      key);
    if (key[0] == 'p')
      req->priority = (uint32_t)u;
    else
      req->timeout_us = u;
    return 0;
  }
  if (strcmp(key, "binary_data_output") == 0) return 0; /* HTTP only */

  p = &req->params[req->n_params];
  p->key = ifd_pool_strndup(&req->pool, key, strlen(key));
  if (p->key == NULL) return no_mem(err);
  switch (v->parameter_choice_case) {
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM:
      p->type = IFD_PARAM_BOOL;
      p->v.b = v->bool_param != 0;
      break;
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM:
      p->type = IFD_PARAM_INT;
      p->v.i = v->int64_param;
      break;
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM:
      p->type = IFD_PARAM_STRING;
      p->v.s = ifd_pool_strndup(&req->pool, v->string_param,
                                strlen(v->string_param));
      if (p->v.s == NULL) return no_mem(err);
      break;
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_DOUBLE_PARAM:
      p->type = IFD_PARAM_DOUBLE;
      p->v.d = v->double_param;
      break;
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_UINT64_PARAM:
      /* Backends see int64 parameters only: pass what fits. */
      if (v->uint64_param > INT64_MAX)
        return ifd_errf(err, IFD_EINVAL,
                        "parameter '%s': uint64 value %" PRIu64
                        " does not fit an int64 parameter",
                        key, v->uint64_param);
      p->type = IFD_PARAM_INT;
      p->v.i = (int64_t)v->uint64_param;
      break;
    default:
      return ifd_errf(err, IFD_EINVAL, "parameter '%s' has no value", key);
  }
  req->n_params++;
  return 0;
}

static int decode_param(ifd_request_t *req, slice_t s, ifd_errmsg_t *err) {
  Inference__ModelInferRequest__ParametersEntry *e;
  int rc;

  e = (void *)unpack(
      &inference__model_infer_request__parameters_entry__descriptor, s);
  if (e == NULL) return parse_failed(err);
  rc = apply_param(req, e->key, e->value, err);
  protobuf_c_message_free_unpacked(&e->base, NULL);
  return rc;
}

/* ---- decoding: tensors --------------------------------------------------- */

/* Where the elements of a datatype travel in InferTensorContents: *src and
 * *n, each element `*width` bytes. Returns the field's name, or NULL for a
 * datatype without a typed form (FP16, BF16). */
static const char *typed_field(ifd_dtype_t t,
                               const Inference__InferTensorContents *c,
                               const void **src, size_t *n, size_t *width) {
  *width = 4;
  switch (t) {
    case IFD_TYPE_BOOL:
      *src = c->bool_contents, *n = c->n_bool_contents;
      *width = sizeof(protobuf_c_boolean);
      return "bool_contents";
    case IFD_TYPE_UINT8:
    case IFD_TYPE_UINT16:
    case IFD_TYPE_UINT32:
      *src = c->uint_contents, *n = c->n_uint_contents;
      return "uint_contents";
    case IFD_TYPE_INT8:
    case IFD_TYPE_INT16:
    case IFD_TYPE_INT32:
      *src = c->int_contents, *n = c->n_int_contents;
      return "int_contents";
    case IFD_TYPE_UINT64:
      *src = c->uint64_contents, *n = c->n_uint64_contents, *width = 8;
      return "uint64_contents";
    case IFD_TYPE_INT64:
      *src = c->int64_contents, *n = c->n_int64_contents, *width = 8;
      return "int64_contents";
    case IFD_TYPE_FP32:
      *src = c->fp32_contents, *n = c->n_fp32_contents;
      return "fp32_contents";
    case IFD_TYPE_FP64:
      *src = c->fp64_contents, *n = c->n_fp64_contents, *width = 8;
      return "fp64_contents";
    case IFD_TYPE_BYTES:
      *src = c->bytes_contents, *n = c->n_bytes_contents;
      *width = sizeof(ProtobufCBinaryData);
      return "bytes_contents";
    default:
      return NULL;
  }
}

/* Narrows int_contents / uint_contents / bool_contents elements into
 * 1- or 2-byte elements, checking each fits. */
static int narrow(const ifd_input_t *in, const void *src, size_t n,
                  uint8_t *out, ifd_errmsg_t *err) {
  size_t i, esize = ifd_dtype_size(in->dtype);
  int64_t lo = 0, hi = 1, v;

  if (in->dtype == IFD_TYPE_INT8) lo = INT8_MIN, hi = INT8_MAX;
  if (in->dtype == IFD_TYPE_INT16) lo = INT16_MIN, hi = INT16_MAX;
  if (in->dtype == IFD_TYPE_UINT8) hi = UINT8_MAX;
  if (in->dtype == IFD_TYPE_UINT16) hi = UINT16_MAX;
  for (i = 0; i < n; i++) {
    if (in->dtype == IFD_TYPE_BOOL)
      v = ((const protobuf_c_boolean *)src)[i] != 0;
    else if (in->dtype == IFD_TYPE_INT8 || in->dtype == IFD_TYPE_INT16)
      v = ((const int32_t *)src)[i];
    else
      v = ((const uint32_t *)src)[i];
    if (v < lo || v > hi) {
      return ifd_errf(err, IFD_EINVAL,
                      "element %zu of input '%s' (%" PRId64
                      ") is out of range for %s",
                      i, in->name, v, ifd_dtype_name(in->dtype));
    }
    /* Little-endian hosts only (as Triton): the low bytes hold the value. */
    memcpy(out + i * esize, &v, esize);
  }
  return 0;
}

/* Converts typed contents into one pool buffer of the input's datatype.
 * `count` is the element count of the input's shape. */
static int decode_contents(ifd_request_t *req, ifd_input_t *in,
                           const Inference__InferTensorContents *c,
                           int64_t count, ifd_errmsg_t *err) {
  static const Inference__InferTensorContents none =
      INFERENCE__INFER_TENSOR_CONTENTS__INIT;
  size_t got, width, size, i, esize = ifd_dtype_size(in->dtype);
  const ProtobufCBinaryData *b;
  const char *field;
  const void *src;
  uint8_t *out;
  char shape[128];

  field = typed_field(in->dtype, c != NULL ? c : &none, &src, &got, &width);
  if (field == NULL) {
    return ifd_errf(err, IFD_EINVAL,
                    "input '%s' has datatype %s, which has no typed "
                    "'contents' representation: send it in "
                    "raw_input_contents",
                    in->name, ifd_dtype_name(in->dtype));
  }
  if ((uint64_t)count != got) {
    return ifd_errf(
        err, IFD_EINVAL,
        "unexpected number of elements in '%s' of input '%s': shape %s "
        "holds %" PRId64 " elements but %zu were given",
        field, in->name,
        ifd_shape_format(in->shape, in->ndims, shape, sizeof(shape)), count,
        got);
  }
  b = src;
  size = got * esize; /* the elements came in the message: no overflow */
  if (in->dtype == IFD_TYPE_BYTES) {
    for (i = 0, size = 0; i < got; i++) {
      if (b[i].len > UINT32_MAX)
        return ifd_errf(err, IFD_EINVAL,
                        "element %zu of input '%s' is longer than 4 GiB", i,
                        in->name);
      size += 4 + b[i].len;
    }
  }
  out = ifd_pool_alloc(&req->pool, size != 0 ? size : 1);
  if (out == NULL) return no_mem(err);
  in->data = out;
  in->byte_size = size;
  if (in->dtype == IFD_TYPE_BYTES) {
    /* Triton's wire format: a 4-byte little-endian length, then bytes. */
    for (i = 0; i < got; i++) {
      uint32_t len = (uint32_t)b[i].len;
      memcpy(out, &len, 4);
      if (len != 0) memcpy(out + 4, b[i].data, len);
      out += 4 + len;
    }
    return 0;
  }
  if (width == esize) { /* same representation: one copy */
    if (size != 0) memcpy(out, src, size);
    return 0;
  }
  return narrow(in, src, got, out, err);
}

/* The raw_input_contents entries of a request, taken in order by the
 * inputs that are not in shared memory (as Triton reads them). */
typedef struct raw_list {
  const slice_t *v; /* borrowed: n entries */
  size_t n;
  size_t next; /* entries taken (or wanted: may pass n) */
} raw_list_t;

/* One InferInputTensor. An input in shared memory points into its region;
 * any other takes the next raw_input_contents entry when the request sends
 * some, else its typed contents. */
static int decode_input(ifd_request_t *req, ifd_input_t *in, slice_t s,
                        raw_list_t *raws, ifd_errmsg_t *err) {
  Inference__ModelInferRequest__InferInputTensor *t;
  ifd_grpc_shm_params_t sp = {NULL, NULL, NULL};
  ifd_shm_ref_t ref;
  int64_t count;
  size_t i;
  int rc;

  t = (void *)unpack(
      &inference__model_infer_request__infer_input_tensor__descriptor, s);
  if (t == NULL) return parse_failed(err);
  in->name = ifd_pool_strndup(&req->pool, t->name, strlen(t->name));
  if (in->name == NULL) {
    rc = no_mem(err);
    goto out_free;
  }
  in->dtype = ifd_dtype_from_name(t->datatype, strlen(t->datatype));
  if (in->dtype == IFD_TYPE_INVALID) {
    rc = ifd_errf(err, IFD_EINVAL, "invalid datatype '%s' of input '%s'",
                  t->datatype, in->name);
    goto out_free;
  }
  if (t->n_shape > IFD_MAX_DIMS) {
    rc = ifd_errf(err, IFD_EINVAL,
                  "input '%s' has %zu dims, more than the %d supported",
                  in->name, t->n_shape, IFD_MAX_DIMS);
    goto out_free;
  }
  in->shape =
      ifd_pool_calloc(&req->pool, t->n_shape ? t->n_shape : 1, sizeof(int64_t));
  if (in->shape == NULL) {
    rc = no_mem(err);
    goto out_free;
  }
  for (i = 0; i < t->n_shape; i++) {
    if (t->shape[i] < 0) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "dim %zu of input '%s' is negative (%" PRId64 ")", i,
                    in->name, t->shape[i]);
      goto out_free;
    }
    in->shape[i] = t->shape[i];
  }
  in->ndims = (uint32_t)t->n_shape;
  for (i = 0; i < t->n_parameters; i++)
    ifd__grpc_shm_param(&sp, t->parameters[i]->key, t->parameters[i]->value);
  if (sp.region != NULL && t->contents != NULL) {
    rc = ifd_errf(err, IFD_EINVAL,
                  "unexpected 'content' provided when using shared memory "
                  "for input tensor '%s' for model '%s'",
                  in->name, req->model_name);
    goto out_free;
  }
  rc = ifd__grpc_shm_tensor(req, in->name, &sp, &ref, err);
  if (rc != 0) goto out_free;
  if (ref.ptr != NULL) {
    in->data = ref.ptr; /* the request holds the region */
    in->byte_size = ref.byte_size;
    in->mem_type = ref.mem_type;
    in->mem_id = ref.mem_id;
    goto out_free;
  }
  if (raws->n != 0) {
    if (t->contents != NULL) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "contents field must not be specified when using "
                    "raw_input_contents for '%s' for model '%s'",
                    in->name, req->model_name);
      goto out_free;
    }
    /* Past the last entry: counted, and refused once every input is read. */
    if (raws->next < raws->n) {
      in->data = raws->v[raws->next].p;
      in->byte_size = raws->v[raws->next].n;
    }
    raws->next++;
    rc = 0;
    goto out_free;
  }
  if (ifd_shape_count(in->shape, in->ndims, &count) != 0) {
    rc = ifd_errf(err, IFD_EINVAL, "shape of input '%s' has too many elements",
                  in->name);
    goto out_free;
  }
  rc = decode_contents(req, in, t->contents, count, err);

out_free:
  protobuf_c_message_free_unpacked(&t->base, NULL);
  return rc;
}

static int decode_output(ifd_request_t *req, ifd_output_req_t *o, slice_t s,
                         ifd_errmsg_t *err) {
  Inference__ModelInferRequest__InferRequestedOutputTensor *t;
  ifd_grpc_shm_params_t sp = {NULL, NULL, NULL};
  int classification = 0;
  size_t i;
  int rc = 0;

  t = (void *)unpack(
      &inference__model_infer_request__infer_requested_output_tensor__descriptor,
      s);
  if (t == NULL) return parse_failed(err);
  o->name = ifd_pool_strndup(&req->pool, t->name, strlen(t->name));
  if (o->name == NULL) {
    rc = no_mem(err);
    goto out_free;
  }
  for (i = 0; i < t->n_parameters; i++) {
    const char *key = t->parameters[i]->key;
    const Inference__InferParameter *v = t->parameters[i]->value;
    uint64_t u;

    if (ifd__grpc_shm_param(&sp, key, v)) continue;
    if (strcmp(key, "classification") == 0) {
      if (v == NULL || param_uint(v, UINT32_MAX, &u) != 0) {
        rc = ifd_errf(err, IFD_EINVAL,
                      "Unable to parse 'classification' of output '%s': "
                      "expected a non-negative integer",
                      o->name);
        goto out_free;
      }
      o->class_count = (uint32_t)u;
      classification = 1;
    }
  }
  if (sp.region != NULL && classification) {
    rc = ifd_errf(err, IFD_EINVAL,
                  "output can't set both 'shared_memory_region' and "
                  "'classification'");
    goto out_free;
  }
  /* In shared memory: the backend's output buffer will be the region. */
  rc = ifd__grpc_shm_tensor(req, o->name, &sp, &o->shm, err);

out_free:
  protobuf_c_message_free_unpacked(&t->base, NULL);
  return rc;
}

/* ---- decoding: the message ----------------------------------------------- */

int ifd__grpc_parse_version(const char *s, size_t n, int64_t *out,
                            ifd_errmsg_t *err) {
  if (ifd_parse_version(s, n, out) == 0) return 0;
  return ifd_errf(err, IFD_EINVAL,
                  "failed to get model version from specified version string "
                  "'%.*s': version should be an integral value greater than -1",
                  (int)(n < 64 ? n : 64), s);
}

int ifd__grpc_infer_decode(ifd_request_t *req, const uint8_t *msg, size_t len,
                           ifd_errmsg_t *err) {
  const uint8_t *p, *end = msg + len;
  size_t n_par = 0, n_in = 0, n_out = 0, n_raw = 0;
  size_t i_in = 0, i_out = 0, i_raw = 0, i;
  slice_t *ins = NULL, *outs = NULL, *raws = NULL;
  raw_list_t rl;
  field_t f;
  ssize_t n;
  int rc;

  /* Pass 1: check the framing and count the repeated fields. */
  for (p = msg; p < end; p += n) {
    n = next_field(p, end, &f);
    if (n < 0) return parse_failed(err);
    if (f.num > F_RAW_INPUT) continue; /* unknown field: skipped */
    if (f.wt != WT_LEN) return parse_failed(err);
    n_par += f.num == F_PARAMETERS;
    n_in += f.num == F_INPUTS;
    n_out += f.num == F_OUTPUTS;
    n_raw += f.num == F_RAW_INPUT;
  }
  if (n_in + n_out + n_raw != 0) {
    ins = ifd_pool_calloc(&req->pool, n_in + n_out + n_raw, sizeof(slice_t));
    if (ins == NULL) return no_mem(err);
    outs = ins + n_in;
    raws = outs + n_out;
  }
  if (n_par != 0) {
    req->params = ifd_pool_calloc(&req->pool, n_par, sizeof(ifd_param_t));
    if (req->params == NULL) return no_mem(err);
  }
  req->model_name = "";

  /* Pass 2: scalars and parameters now, tensors by slice for later. */
  for (p = msg; p < end; p += n) {
    n = next_field(p, end, &f);
    switch (f.num) {
      case F_MODEL_NAME:
        req->model_name =
            ifd_pool_strndup(&req->pool, (const char *)f.s.p, f.s.n);
        if (req->model_name == NULL) return no_mem(err);
        break;
      case F_MODEL_VERSION:
        rc = ifd__grpc_parse_version((const char *)f.s.p, f.s.n,
                                     &req->model_version, err);
        if (rc != 0) return rc;
        break;
      case F_ID:
        req->id = ifd_pool_strndup(&req->pool, (const char *)f.s.p, f.s.n);
        if (req->id == NULL) return no_mem(err);
        break;
      case F_PARAMETERS:
        rc = decode_param(req, f.s, err);
        if (rc != 0) return rc;
        break;
      case F_INPUTS:
        ins[i_in++] = f.s;
        break;
      case F_OUTPUTS:
        outs[i_out++] = f.s;
        break;
      case F_RAW_INPUT:
        raws[i_raw++] = f.s;
        break;
      default:
        break;
    }
  }

  if (n_in != 0) {
    req->inputs = ifd_pool_calloc(&req->pool, n_in, sizeof(ifd_input_t));
    if (req->inputs == NULL) return no_mem(err);
  }
  rl.v = raws;
  rl.n = n_raw;
  rl.next = 0;
  for (i = 0; i < n_in; i++) {
    rc = decode_input(req, &req->inputs[i], ins[i], &rl, err);
    if (rc != 0) return rc;
    req->n_inputs = (uint32_t)(i + 1);
  }
  if (rl.next != n_raw) {
    return ifd_errf(err, IFD_EINVAL,
                    "expected %zu raw_input_contents entries (one per input "
                    "not in shared memory) for model '%s', got %zu",
                    rl.next, req->model_name, n_raw);
  }
  if (n_out != 0) {
    req->outputs = ifd_pool_calloc(&req->pool, n_out, sizeof(ifd_output_req_t));
    if (req->outputs == NULL) return no_mem(err);
  }
  for (i = 0; i < n_out; i++) {
    rc = decode_output(req, &req->outputs[i], outs[i], err);
    if (rc != 0) return rc;
    req->n_outputs = (uint32_t)(i + 1);
  }
  return 0;
}
