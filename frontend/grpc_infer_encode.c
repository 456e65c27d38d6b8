/*
 * frontend/grpc_infer_encode.c - an ifd_response_t into the iovec pieces of
 * a ModelInferResponse (or ModelStreamInferResponse), and the replies the
 * gRPC handlers send (the encoding half of the codec; decoding is
 * frontend/grpc_infer.c's).
 *
 * Encoding packs everything but raw_output_contents with protobuf-c, then
 * appends each output as field 6 (tag, length, then the output buffer by
 * reference): a repeated field may appear anywhere in a message, so this is
 * a valid ModelInferResponse that costs no copy of tensor bytes. The stream
 * variant puts the tag and length of ModelStreamInferResponse.infer_response
 * in front of the same pieces.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/infer.h"
#include "frontend/grpc_infer.h"
#include "proto/grpc_service.pb-c.h"

/* Tags written by the encoder: (field << 3) | WT_LEN. */
#define TAG_RAW_OUTPUT 0x32u     /* ModelInferResponse.raw_output_contents */
#define TAG_INFER_RESPONSE 0x12u /* ModelStreamInferResponse.infer_response */

static size_t varint_len(uint64_t v) {
  size_t n = 1;

  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

static int no_mem(ifd_errmsg_t *err) {
  return ifd_errf(err, IFD_ENOMEM, "out of memory");
}

/* ---- encoding ------------------------------------------------------------ */

void ifd__grpc_reply_free(void *arg) {
  ifd_grpc_reply_t *r = arg;

  if (r == NULL) return;
  ifd_response_free(r->resp);
  ifd_request_unref(r->req);
  free(r);
}

/* Allocates a reply with room for `n_iov` pieces and `bytes` bytes after
 * them; *data receives the byte area. NULL on ENOMEM. */
static ifd_grpc_reply_t *reply_new(unsigned n_iov, size_t bytes,
                                   uint8_t **data) {
  ifd_grpc_reply_t *r;
  uv_buf_t *iov;

  r = malloc(sizeof(*r) + n_iov * sizeof(uv_buf_t) + bytes);
  if (r == NULL) return NULL;
  iov = (uv_buf_t *)(r + 1);
  *data = (uint8_t *)(iov + n_iov);
  r->msg.iov = iov;
  r->msg.n_iov = 0;
  r->msg.free_fn = ifd__grpc_reply_free;
  r->msg.free_arg = r;
  r->resp = NULL;
  r->req = NULL;
  r->size = 0;
  return r;
}

/* Appends one iovec piece to a reply built by reply_new. */
static void add_piece(ifd_grpc_reply_t *r, const void *p, size_t n) {
  uv_buf_t *iov = (uv_buf_t *)r->msg.iov; /* the reply's own array */

  iov[r->msg.n_iov].base = (char *)p;
  iov[r->msg.n_iov].len = n;
  r->msg.n_iov++;
}

int ifd__grpc_reply_pack(const ProtobufCMessage *m, ifd_grpc_reply_t **out) {
  size_t size = protobuf_c_message_get_packed_size(m);
  ifd_grpc_reply_t *r;
  uint8_t *data;

  r = reply_new(1, size, &data);
  if (r == NULL) return IFD_ENOMEM;
  protobuf_c_message_pack(m, data);
  /* An empty message (a ServerLiveResponse that says false) has no piece. */
  if (size != 0) add_piece(r, data, size);
  r->size = size;
  *out = r;
  return 0;
}

static int check_output(const ifd_output_t *o, ifd_errmsg_t *err) {
  size_t esize = ifd_dtype_size(o->dtype);
  int64_t count;

  if (ifd_shape_count(o->shape, o->ndims, &count) != 0 ||
      (esize == 0 && o->dtype != IFD_TYPE_BYTES) ||
      (esize != 0 && (uint64_t)count > UINT64_MAX / esize) ||
      (esize != 0 && o->byte_size != (uint64_t)count * esize) ||
      (o->byte_size != 0 && o->buffer == NULL)) {
    return ifd_errf(err, IFD_EINTERNAL,
                    "output '%s' holds %" PRIu64
                    " bytes, which do not match its datatype and shape",
                    o->name, o->byte_size);
  }
  return 0;
}

static void set_param(Inference__InferParameter *v, const ifd_param_t *p) {
  switch (p->type) {
    case IFD_PARAM_STRING:
      v->parameter_choice_case =
          INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM;
      v->string_param = (char *)p->v.s;
      break;
    case IFD_PARAM_INT:
      v->parameter_choice_case =
          INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM;
      v->int64_param = p->v.i;
      break;
    case IFD_PARAM_BOOL:
      v->parameter_choice_case =
          INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM;
      v->bool_param = p->v.b;
      break;
    case IFD_PARAM_DOUBLE:
      v->parameter_choice_case =
          INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_DOUBLE_PARAM;
      v->double_param = p->v.d;
      break;
  }
}

/* The protobuf-c view of a response without its raw contents: scratch
 * arrays that borrow every string and shape from the response. */
typedef struct view {
  Inference__ModelInferResponse m;
  const ifd_output_t **sel; /* borrowed entries: the outputs to send */
  size_t n_sel;
  void *scratch; /* owned */
  char version[24];
} view_t;

static int view_build(view_t *w, const ifd_request_t *req,
                      const ifd_response_t *resp, int64_t model_version,
                      unsigned flags, ifd_errmsg_t *err) {
  Inference__ModelInferResponse init = INFERENCE__MODEL_INFER_RESPONSE__INIT;
  Inference__ModelInferResponse__InferOutputTensor *ot, **otp;
  Inference__ModelInferResponse__ParametersEntry *pe, **pep;
  Inference__InferParameter *pv;
  size_t n_out = req->n_outputs != 0 ? req->n_outputs : resp->n_outputs;
  size_t n_par = resp->n_params + ((flags & IFD_GRPC_ENC_FINAL_PARAM) != 0);
  size_t i;
  char *s;
  int rc;

  w->m = init;
  w->n_sel = 0;
  /* Structs first, pointer arrays after: every piece stays 8-aligned. */
  w->scratch =
      calloc(1, n_out * (sizeof(*ot) + sizeof(*otp) + sizeof(*w->sel)) +
                    n_par * (sizeof(*pe) + sizeof(*pv) + sizeof(*pep)) + 1);
  if (w->scratch == NULL) return no_mem(err);
  s = w->scratch;
  ot = (void *)s, s += n_out * sizeof(*ot);
  pe = (void *)s, s += n_par * sizeof(*pe);
  pv = (void *)s, s += n_par * sizeof(*pv);
  otp = (void *)s, s += n_out * sizeof(*otp);
  pep = (void *)s, s += n_par * sizeof(*pep);
  w->sel = (void *)s;

  for (i = 0; i < n_out; i++) {
    /* The client named its outputs: answer in its order. */
    const ifd_output_t *o =
        req->n_outputs != 0 ? ifd_response_output(resp, req->outputs[i].name)
                            : &resp->outputs[i];
    Inference__ModelInferResponse__InferOutputTensor t =
        INFERENCE__MODEL_INFER_RESPONSE__INFER_OUTPUT_TENSOR__INIT;
    if (o == NULL) continue;
    rc = check_output(o, err);
    if (rc != 0) return rc;
    t.name = (char *)o->name;
    t.datatype = (char *)ifd_dtype_name(o->dtype);
    t.n_shape = o->ndims;
    t.shape = (int64_t *)o->shape;
    ot[w->n_sel] = t;
    otp[w->n_sel] = &ot[w->n_sel];
    w->sel[w->n_sel++] = o;
  }
  for (i = 0; i < n_par; i++) {
    Inference__ModelInferResponse__ParametersEntry e =
        INFERENCE__MODEL_INFER_RESPONSE__PARAMETERS_ENTRY__INIT;
    Inference__InferParameter v = INFERENCE__INFER_PARAMETER__INIT;
    if (i < resp->n_params) {
      e.key = (char *)resp->params[i].key;
      set_param(&v, &resp->params[i]);
    } else {
      e.key = "triton_final_response";
      v.parameter_choice_case =
          INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM;
      v.bool_param = (flags & IFD_GRPC_ENC_FINAL) != 0;
    }
    pv[i] = v;
    e.value = &pv[i];
    pe[i] = e;
    pep[i] = &pe[i];
  }
  w->version[0] = '\0';
  if (model_version >= 0)
    snprintf(w->version, sizeof(w->version), "%" PRId64, model_version);
  w->m.model_name = (char *)(req->model_name != NULL ? req->model_name : "");
  w->m.model_version = w->version;
  w->m.id = (char *)(req->id != NULL ? req->id : "");
  w->m.n_parameters = n_par;
  w->m.parameters = pep;
  w->m.n_outputs = w->n_sel;
  w->m.outputs = otp;
  return 0;
}

/* Bytes of output `o` that go in its raw_output_contents entry: none when
 * the request placed it in shared memory (the bytes are in the region, and
 * Triton sends an empty entry), else all of them. */
static uint64_t sent_size(const ifd_request_t *req, const ifd_output_t *o) {
  uint32_t i;

  for (i = 0; i < req->n_outputs; i++)
    if (req->outputs[i].shm.ptr != NULL &&
        strcmp(req->outputs[i].name, o->name) == 0)
      return 0;
  return o->byte_size;
}

int ifd__grpc_infer_encode(const ifd_request_t *req, const ifd_response_t *resp,
                           int64_t model_version, unsigned flags,
                           ifd_grpc_reply_t **out, ifd_errmsg_t *err) {
  ifd_grpc_reply_t *r;
  view_t w;
  size_t head, inner, bytes, pos, run, i;
  uint8_t *data;
  int rc;

  rc = view_build(&w, req, resp, model_version, flags, err);
  if (rc != 0) goto out_free_scratch;
  head = protobuf_c_message_get_packed_size(&w.m.base);
  inner = head;
  bytes = head + 11 * w.n_sel + 11; /* + tag and varint per piece */
  for (i = 0; i < w.n_sel; i++) {
    uint64_t n = sent_size(req, w.sel[i]);
    inner += 1 + varint_len(n) + n;
  }

  r = reply_new((unsigned)(1 + 2 * w.n_sel), bytes, &data);
  if (r == NULL) {
    rc = no_mem(err);
    goto out_free_scratch;
  }
  pos = 0;
  if (flags & IFD_GRPC_ENC_STREAM) {
    data[pos++] = TAG_INFER_RESPONSE;
    pos += ifd__pb_put_varint(data + pos, inner);
  }
  r->size = pos + inner;
  pos += protobuf_c_message_pack(&w.m.base, data + pos);
  /* `run` starts the bytes not yet covered by a piece: the head and the
   * prefixes of empty outputs share one. */
  run = 0;
  for (i = 0; i < w.n_sel; i++) {
    const ifd_output_t *o = w.sel[i];
    uint64_t n = sent_size(req, o);
    data[pos++] = TAG_RAW_OUTPUT;
    pos += ifd__pb_put_varint(data + pos, n);
    if (n == 0) continue;
    add_piece(r, data + run, pos - run);
    add_piece(r, o->buffer, (size_t)n);
    run = pos;
  }
  if (pos > run) add_piece(r, data + run, pos - run);
  *out = r;
  rc = 0;

out_free_scratch:
  free(w.scratch);
  return rc;
}

int ifd__grpc_stream_error(const ifd_request_t *req, const char *msg,
                           ifd_grpc_reply_t **out) {
  Inference__ModelStreamInferResponse m =
      INFERENCE__MODEL_STREAM_INFER_RESPONSE__INIT;
  Inference__ModelInferResponse ir = INFERENCE__MODEL_INFER_RESPONSE__INIT;

  m.error_message = (char *)(msg != NULL && msg[0] != '\0' ? msg : "error");
  if (req != NULL) {
    ir.id = (char *)(req->id != NULL ? req->id : "");
    m.infer_response = &ir;
  }
  return ifd__grpc_reply_pack(&m.base, out);
}
