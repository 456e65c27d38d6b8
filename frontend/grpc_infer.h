/*
 * frontend/grpc_infer.h - what the gRPC service handlers
 * (frontend/grpc_service.c) share with the inference message codec
 * (frontend/grpc_infer.c).
 *
 * The codec is pure: it turns the bytes of a ModelInferRequest into an
 * ifd_request_t and an ifd_response_t into the pieces of a ModelInferResponse
 * (or ModelStreamInferResponse), and never touches a stream, so the unit
 * tests link it without the HTTP/2 transport.
 *
 * Zero copy both ways: raw_input_contents stay in the message buffer that the
 * request owns (req->body), and every raw_output_contents entry is an iovec
 * piece that points at the response's output buffer.
 */
#ifndef IFD_FRONTEND_GRPC_INFER_H
#define IFD_FRONTEND_GRPC_INFER_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "base/error.h"
#include "core/infer.h"
#include "frontend/grpc_app.h"
#include "net/grpc_internal.h"

/**
 * Decodes a ModelInferRequest of `len` bytes at `msg` into `req` (fresh from
 * ifd_request_new): model name and version, id, parameters (sequence_id,
 * sequence_start, sequence_end, priority and timeout go to their request
 * fields, binary_data_output is ignored, any other is copied to
 * req->params), inputs and requested outputs.
 *
 * Inputs sent in raw_input_contents point into `msg`: the caller keeps `msg`
 * alive as long as the request (normally by making it req->body). Typed
 * `contents` are converted once into a buffer from the request pool.
 *
 * Tensors whose parameters name a shared-memory region (shared_memory_region,
 * _offset, _byte_size) are resolved in the server's region table, which
 * the request then holds (frontend/grpc_shm.h): such an input points into its
 * region and takes no raw_input_contents entry; such an output is written
 * into its region by the backend.
 *
 * Returns 0, or a negative code with a message in `err`: IFD_EINVAL for
 * malformed protobuf ("failed to parse ModelInferRequest") or an invalid
 * request (names the tensor; shared-memory parameters and bounds),
 * IFD_ENOTFOUND (an unknown region), IFD_ENOMEM.
 * On error `req` may be half filled: the caller just unrefs it.
 */
int ifd__grpc_infer_decode(ifd_request_t *req, const uint8_t *msg, size_t len,
                           ifd_errmsg_t *err);

/**
 * Parses a model version string ("" is -1: the policy's choice). Returns 0,
 * or IFD_EINVAL with Triton's message in `err`.
 */
int ifd__grpc_parse_version(const char *s, size_t n, int64_t *out,
                            ifd_errmsg_t *err);

/**
 * A message ready for ifd_gstream_send, in one allocation: `msg.iov` points
 * at pieces inside the reply (the packed protobuf head, the tag and length
 * of each raw output) and at the output buffers of `resp`.
 */
typedef struct ifd_grpc_reply {
  ifd_gmsg_t msg;       /* msg.free_fn = ifd__grpc_reply_free, arg = reply */
  ifd_response_t *resp; /* owned or NULL: holds the output bytes; freed with
                           the reply. The encoder leaves it NULL. */
  ifd_request_t *req;   /* owned reference or NULL: dropped with the reply */
  size_t size;          /* bytes of the message (sum of the iov pieces) */
} ifd_grpc_reply_t;

/** Frees a reply (ifd_gmsg_t free_fn): the response, the request reference,
 *  the block. NULL is fine. Loop thread. */
void ifd__grpc_reply_free(void *reply);

/** Options of ifd__grpc_infer_encode. */
enum {
  IFD_GRPC_ENC_STREAM = 1u,      /* wrap in ModelStreamInferResponse */
  IFD_GRPC_ENC_FINAL_PARAM = 2u, /* add parameter triton_final_response */
  IFD_GRPC_ENC_FINAL = 4u,       /* ... and make it true */
};

/**
 * Serializes a successful response: ModelInferResponse {model_name,
 * model_version (`model_version` < 0 gives ""), id, parameters, outputs,
 * raw_output_contents}, or, with IFD_GRPC_ENC_STREAM, the same bytes as the
 * infer_response of a ModelStreamInferResponse. When the request named its
 * outputs, they are answered in its order (outputs it did not name are
 * left out); else every output of the response in its order.
 *
 * The outputs are not copied: the caller hands `resp` to the reply
 * (reply->resp = resp) or keeps it alive until the reply is freed.
 * Returns 0 and *out (owned: ifd__grpc_reply_free), or IFD_ENOMEM, or
 * IFD_EINTERNAL when an output's byte size does not match its datatype and
 * shape. An output the request placed in shared memory gets an empty
 * raw_output_contents entry (its bytes are in the region).
 */
int ifd__grpc_infer_encode(const ifd_request_t *req, const ifd_response_t *resp,
                           int64_t model_version, unsigned flags,
                           ifd_grpc_reply_t **out, ifd_errmsg_t *err);

/**
 * A ModelStreamInferResponse that carries an error, as tritonserver sends
 * it: error_message = `msg`, and infer_response {id} of `req` when it is not
 * NULL (no model name or version), so a client can tell which request
 * failed. Returns 0 and *out, or IFD_ENOMEM.
 */
int ifd__grpc_stream_error(const ifd_request_t *req, const char *msg,
                           ifd_grpc_reply_t **out);

/** Packs any protobuf-c message into a reply. Returns 0 and *out, or
 *  IFD_ENOMEM. */
int ifd__grpc_reply_pack(const ProtobufCMessage *m, ifd_grpc_reply_t **out);

/* Answering unary calls (frontend/grpc_service.c; the services' files share
 * them). */
typedef struct ifd_gstream ifd_gstream_t;
/** Finishes the call with the gRPC status of IFD_E* `code` and `msg` (or
 *  the code's text when `msg` is empty). */
void ifd__grpc_finish_code(ifd_gstream_t *st, int code, const char *msg);
/** Answers with one message `m` and OK. */
void ifd__grpc_reply(ifd_gstream_t *st, const ProtobufCMessage *m);
/** Unpacks a request message and frees `msg`; NULL after finishing the
 *  call with INVALID_ARGUMENT. Free the result with
 *  protobuf_c_message_free_unpacked. */
void *ifd__grpc_unpack(ifd_gstream_t *st, const ProtobufCMessageDescriptor *d,
                       uint8_t *msg, size_t len);

/** Appends `v` as a protobuf varint at `p`; returns the bytes written
 *  (1..10). */
size_t ifd__pb_put_varint(uint8_t *p, uint64_t v);

/**
 * Reads a protobuf varint from [p, end). Returns the bytes consumed (1..10),
 * or -1 when it is truncated or longer than 64 bits.
 */
int ifd__pb_get_varint(const uint8_t *p, const uint8_t *end, uint64_t *out);

/* ---- the inference methods (frontend/grpc_model_infer.c) ------------- */

/** ModelInfer: one request, answered with its FINAL response. */
void ifd__grpc_model_infer(ifd_gstream_t *st, uint8_t *msg, size_t len);
void ifd__grpc_model_infer_cancel(ifd_gstream_t *st);
/** ModelStreamInfer: each message a request, each response a message. */
void ifd__grpc_stream_infer(ifd_gstream_t *st, uint8_t *msg, size_t len);
void ifd__grpc_stream_infer_end(ifd_gstream_t *st);
void ifd__grpc_stream_infer_cancel(ifd_gstream_t *st);

#endif
