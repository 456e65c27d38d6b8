/*
 * frontend/http_infer_encode.c - an ifd_response_t into the KServe v2 infer
 * response body: the JSON header, with each output either as JSON `data`
 * (base/jsonw.c writes the numbers without printf) or as a binary section
 * whose buffer goes out as its own iovec, uncopied, or, for an output the
 * request placed in shared memory, as its name, datatype and shape alone
 * (the backend wrote the bytes into the client's region).
 *
 * Nothing here touches the network, the server or the loop: it reads the
 * request and the response and appends to a text buffer, so the unit tests
 * drive it directly and a worker thread may run it (frontend/http_infer.c).
 */
#include <inttypes.h>
#include <string.h>

#include "core/dtype.h"
#include "core/infer.h"
#include "frontend/internal.h"

static void put_i64(ifd_hbuf_t *b, int64_t v) {
  char tmp[24], *p = tmp + sizeof(tmp);
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

  do {
    *--p = (char)('0' + u % 10);
    u /= 10;
  } while (u != 0);
  if (v < 0) *--p = '-';
  ifd_hbuf_put(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

static void put_u64(ifd_hbuf_t *b, uint64_t u) {
  char tmp[24], *p = tmp + sizeof(tmp);

  do {
    *--p = (char)('0' + u % 10);
    u /= 10;
  } while (u != 0);
  ifd_hbuf_put(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

static void put_shape(ifd_hbuf_t *b, const int64_t *shape, uint32_t n) {
  uint32_t i;

  ifd_hbuf_put(b, "[", 1);
  for (i = 0; i < n; i++) {
    if (i != 0) ifd_hbuf_put(b, ",", 1);
    put_i64(b, shape[i]);
  }
  ifd_hbuf_put(b, "]", 1);
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
      ifd_hbuf_puts(b, p[0] ? "true" : "false");
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
      ifd_json_f32(b, ifd_f16_to_f32(v.u16));
      break;
    case IFD_TYPE_BF16:
      ifd_json_f32(b, ifd_bf16_to_f32(v.u16));
      break;
    case IFD_TYPE_FP32:
      ifd_json_f32(b, v.f);
      break;
    case IFD_TYPE_FP64:
      ifd_json_f64(b, v.d);
      break;
    default:
      ifd_hbuf_puts(b, "null");
      break;
  }
}

static int put_data(ifd_hbuf_t *b, const ifd_output_t *o, int64_t count,
                    ifd_errmsg_t *err) {
  const unsigned char *p = o->buffer;
  size_t esize = ifd_dtype_size(o->dtype);
  int64_t i;

  ifd_hbuf_put(b, "[", 1);
  if (o->dtype == IFD_TYPE_BYTES) {
    uint64_t off = 0;
    for (i = 0; i < count; i++) {
      uint32_t len;
      if (o->byte_size - off < 4) goto out_malformed;
      memcpy(&len, p + off, 4);
      off += 4;
      if (o->byte_size - off < len) goto out_malformed;
      if (i != 0) ifd_hbuf_put(b, ",", 1);
      ifd_json_str(b, (const char *)p + off, len);
      off += len;
    }
    if (off != o->byte_size) goto out_malformed;
  } else {
    for (i = 0; i < count; i++) {
      if (i != 0) ifd_hbuf_put(b, ",", 1);
      put_elem_json(b, o->dtype, p + (size_t)i * esize);
    }
  }
  ifd_hbuf_put(b, "]", 1);
  return 0;

out_malformed:
  return ifd_errf(err, IFD_EINTERNAL,
                  "output '%s' holds malformed BYTES data for %" PRId64
                  " elements",
                  o->name, count);
}

/* The element count of `o`, once its bytes are checked against its datatype
 * and shape. Returns 0 or IFD_EINTERNAL. */
static int output_count(const ifd_output_t *o, int64_t *count,
                        ifd_errmsg_t *err) {
  size_t esize = ifd_dtype_size(o->dtype);

  if (ifd_shape_count(o->shape, o->ndims, count) != 0 ||
      (esize == 0 && o->dtype != IFD_TYPE_BYTES) ||
      (esize != 0 && (uint64_t)*count > UINT64_MAX / esize) ||
      (esize != 0 && o->byte_size != (uint64_t)*count * esize)) {
    return ifd_errf(err, IFD_EINTERNAL,
                    "output '%s' holds %" PRIu64
                    " bytes, which do not match its datatype and shape",
                    o->name, o->byte_size);
  }
  return 0;
}

int ifd__http_json_output_data(ifd_hbuf_t *b, const ifd_output_t *o,
                               ifd_errmsg_t *err) {
  int64_t count;
  size_t start;
  int rc = output_count(o, &count, err);

  if (rc != 0) return rc;
  start = b->len;
  rc = put_data(b, o, count, err);
  if (rc != 0 || count != 1 || b->oom) return rc;
  /* One element: the value alone, without its brackets. */
  memmove(b->data + start, b->data + start + 1, b->len - start - 2);
  b->len -= 2;
  return 0;
}

/* How one output goes out. */
enum { OUT_JSON, OUT_BINARY, OUT_SHM };

static int put_output(ifd_hbuf_t *b, const ifd_output_t *o, int how,
                      uv_buf_t *bin, unsigned *nbin, ifd_errmsg_t *err) {
  int64_t count;
  int rc;

  ifd_hbuf_puts(b, "{\"name\":");
  ifd_json_str(b, o->name, strlen(o->name));
  ifd_hbuf_puts(b, ",\"datatype\":\"");
  ifd_hbuf_puts(b, ifd_dtype_name(o->dtype));
  ifd_hbuf_puts(b, "\",\"shape\":");
  put_shape(b, o->shape, o->ndims);
  if (how == OUT_SHM) {
    /* The bytes are in the client's region already (they may be device
     * memory: never read here); the entry names the tensor only, as
     * Triton's does. */
    ifd_hbuf_put(b, "}", 1);
    return 0;
  }
  rc = output_count(o, &count, err);
  if (rc != 0) return rc;
  if (how == OUT_BINARY) {
    ifd_hbuf_puts(b, ",\"parameters\":{\"binary_data_size\":");
    put_u64(b, o->byte_size);
    ifd_hbuf_puts(b, "}}");
    /* uv_buf_t lengths are 32-bit: larger outputs cannot go out as one. */
    if (o->byte_size > UINT32_MAX)
      return ifd_errf(err, IFD_EINTERNAL,
                      "output '%s' is too large to send over HTTP", o->name);
    bin[*nbin] = uv_buf_init(o->buffer, (unsigned)o->byte_size);
    ++*nbin;
    return 0;
  }
  ifd_hbuf_puts(b, ",\"data\":");
  rc = put_data(b, o, count, err);
  if (rc != 0) return rc;
  ifd_hbuf_put(b, "}", 1);
  return 0;
}

void ifd__http_json_param_value(ifd_hbuf_t *b, const ifd_param_t *p) {
  switch (p->type) {
    case IFD_PARAM_STRING:
      ifd_json_str(b, p->v.s, strlen(p->v.s));
      break;
    case IFD_PARAM_INT:
      put_i64(b, p->v.i);
      break;
    case IFD_PARAM_BOOL:
      ifd_hbuf_puts(b, p->v.b ? "true" : "false");
      break;
    case IFD_PARAM_DOUBLE:
      ifd_json_f64(b, p->v.d);
      break;
  }
}

static void put_params(ifd_hbuf_t *b, const ifd_param_t *params, uint32_t n) {
  uint32_t i;

  ifd_hbuf_puts(b, ",\"parameters\":{");
  for (i = 0; i < n; i++) {
    const ifd_param_t *p = &params[i];
    if (i != 0) ifd_hbuf_put(b, ",", 1);
    ifd_json_str(b, p->key, strlen(p->key));
    ifd_hbuf_put(b, ":", 1);
    ifd__http_json_param_value(b, p);
  }
  ifd_hbuf_put(b, "}", 1);
}

static int output_how(const ifd_output_req_t *r) {
  if (r->shm.ptr != NULL) return OUT_SHM;
  return (r->proto_flags & IFD_HTTP_OUT_BINARY) != 0 ? OUT_BINARY : OUT_JSON;
}

int ifd__http_infer_serialize(const ifd_request_t *req,
                              const ifd_response_t *resp, int64_t model_version,
                              int binary_all, ifd_hbuf_t *out, uv_buf_t *bin,
                              unsigned *nbin, ifd_errmsg_t *err) {
  const char *name = req->model_name != NULL ? req->model_name : "";
  uint32_t i;
  int rc, first = 1;

  *nbin = 0;
  ifd_hbuf_put(out, "{", 1);
  if (req->id != NULL && req->id[0] != '\0') {
    ifd_hbuf_puts(out, "\"id\":");
    ifd_json_str(out, req->id, strlen(req->id));
    ifd_hbuf_put(out, ",", 1);
  }
  ifd_hbuf_puts(out, "\"model_name\":");
  ifd_json_str(out, name, strlen(name));
  ifd_hbuf_puts(out, ",\"model_version\":\"");
  if (model_version >= 0) put_i64(out, model_version);
  ifd_hbuf_put(out, "\"", 1);
  if (resp->n_params != 0) put_params(out, resp->params, resp->n_params);
  ifd_hbuf_puts(out, ",\"outputs\":[");
  if (req->n_outputs != 0) {
    /* The client named its outputs: answer in its order. */
    for (i = 0; i < req->n_outputs; i++) {
      const ifd_output_t *o = ifd_response_output(resp, req->outputs[i].name);
      if (o == NULL) continue;
      if (!first) ifd_hbuf_put(out, ",", 1);
      first = 0;
      rc = put_output(out, o, output_how(&req->outputs[i]), bin, nbin, err);
      if (rc != 0) return rc;
    }
  } else {
    for (i = 0; i < resp->n_outputs; i++) {
      if (i != 0) ifd_hbuf_put(out, ",", 1);
      rc = put_output(out, &resp->outputs[i],
                      binary_all ? OUT_BINARY : OUT_JSON, bin, nbin, err);
      if (rc != 0) return rc;
    }
  }
  ifd_hbuf_puts(out, "]}");
  if (out->oom) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  return 0;
}

uint64_t ifd__http_infer_json_bytes(const ifd_request_t *req,
                                    const ifd_response_t *resp,
                                    int binary_all) {
  uint64_t n = 0;
  uint32_t i;

  if (req->n_outputs != 0) {
    for (i = 0; i < req->n_outputs; i++) {
      const ifd_output_t *o = ifd_response_output(resp, req->outputs[i].name);
      if (o != NULL && output_how(&req->outputs[i]) == OUT_JSON)
        n += o->byte_size;
    }
  } else if (!binary_all) {
    for (i = 0; i < resp->n_outputs; i++) n += resp->outputs[i].byte_size;
  }
  return n;
}
