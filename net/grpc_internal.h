/*
 * net/grpc_internal.h - the contract between the gRPC transport
 * (net/grpc_transport.c: HTTP/2, framing, deadlines, flow control) and the
 * applications over it (the KServe v2 service: frontend/grpc_service.c,
 * frontend/grpc_infer.c).
 *
 * The transport knows nothing of Triton's messages: it routes a call by its
 * :path to a method, hands each complete gRPC message to the method, and
 * sends what the method gives back. Everything runs on the loop thread.
 *
 * Stream lifetime: a call is an ifd_gstream_t, counted. The transport holds
 * one reference until the HTTP/2 stream closes; a method that answers later
 * (after inference) takes its own with ifd_gstream_ref and drops it with
 * ifd_gstream_unref. Sending on a stream that has closed (client cancel,
 * RST_STREAM, deadline, connection lost) is harmless: the message is freed
 * and IFD_ECANCELLED returned.
 */
#ifndef IFD_NET_GRPC_INTERNAL_H
#define IFD_NET_GRPC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "base/error.h"

typedef struct ifd_gstream ifd_gstream_t;

/* gRPC status codes used here. */
enum {
  IFD_GRPC_OK = 0,
  IFD_GRPC_CANCELLED = 1,
  IFD_GRPC_UNKNOWN = 2,
  IFD_GRPC_INVALID_ARGUMENT = 3,
  IFD_GRPC_DEADLINE_EXCEEDED = 4,
  IFD_GRPC_NOT_FOUND = 5,
  IFD_GRPC_RESOURCE_EXHAUSTED = 8,
  IFD_GRPC_UNIMPLEMENTED = 12,
  IFD_GRPC_INTERNAL = 13,
  IFD_GRPC_UNAVAILABLE = 14,
};

/**
 * An outgoing gRPC message: the transport writes the 5-byte prefix, then
 * `iov[0..n)` in order, with no copy (nghttp2 data frames point at the
 * pieces), then calls free_fn(free_arg) when every byte has been written or
 * the stream is gone. `iov` must stay valid until then (typically it lives
 * inside free_arg's object).
 */
typedef struct ifd_gmsg {
  const uv_buf_t *iov; /* borrowed: valid until free_fn */
  unsigned n_iov;
  void (*free_fn)(void *arg); /* may be NULL */
  void *free_arg;
} ifd_gmsg_t;

/** A method of a service. */
typedef struct ifd_grpc_method {
  const char *path; /* "/inference.GRPCInferenceService/ModelInfer" */
  int streaming;    /* 1: bidirectional streaming; 0: unary */
  /**
   * A complete request message arrived. `msg` (len bytes, from the shared
   * buffer pool, base/bufpool.h) is owned by the method from here on (give
   * it back with ifd_bufpool_put, or keep it: e.g. as the inference
   * request's body that raw inputs point into, body_in_bufpool set). For a
   * unary method this is called once, after the client's END_STREAM; a unary
   * call with zero or two messages is answered by the transport with
   * UNIMPLEMENTED/INTERNAL as gRPC requires, without calling the method.
   */
  void (*on_message)(ifd_gstream_t *st, uint8_t *msg, size_t len);
  /** Streaming only: the client half-closed (no more messages). */
  void (*on_end)(ifd_gstream_t *st);
  /** The call ended without the method finishing it (RST_STREAM, deadline,
   *  connection closed, server stop). May be NULL. */
  void (*on_cancel)(ifd_gstream_t *st);
  /** Triton's API group (ifd_api_group_t, net/restrict.h) for
   *  --grpc-restricted-protocol; 0 is "health". */
  int group;
} ifd_grpc_method_t;

/**
 * Compresses the call's response messages from now on, as gRPC core does
 * for a server's compression level (Triton's
 * --grpc-infer-response-compression-level, ifd_grpc_opts_t's
 * infer_compression_level): 0 none, 1 low, 2 medium, 3 high picks among
 * the algorithms the client accepts
 * (grpc-accept-encoding), ranked gzip then deflate, the first (low), the
 * middle (medium) or the last (high). Only before the first message is
 * sent; a message that would not shrink goes uncompressed.
 */
void ifd_gstream_compress(ifd_gstream_t *st);

/** The application object of the call's transport (ifd_grpc_opts_t.app). */
void *ifd_gstream_app(const ifd_gstream_t *st);
/** The call's metadata that --grpc-header-forward-pattern matched, as
 *  net/forward.h's pairs (borrowed: valid while the call is). */
void ifd_gstream_forwarded(const ifd_gstream_t *st, const char **data,
                           size_t *len, uint32_t *n);
/** Per-call storage for the method (NULL initially). */
void *ifd_gstream_data(const ifd_gstream_t *st);
void ifd_gstream_set_data(ifd_gstream_t *st, void *data);
/** Remaining deadline from grpc-timeout, in ns; 0 when none. */
uint64_t ifd_gstream_timeout_ns(const ifd_gstream_t *st);
/** The negotiated maximum message size (for building responses). */
uint64_t ifd_gstream_max_message(const ifd_gstream_t *st);
/** Non-zero once the stream is closed or finished. */
int ifd_gstream_closed(const ifd_gstream_t *st);

void ifd_gstream_ref(ifd_gstream_t *st);
void ifd_gstream_unref(ifd_gstream_t *st);

/**
 * Queues one response message (response headers go first, automatically).
 * Returns 0, IFD_ECANCELLED (stream gone: msg already freed), IFD_ETOOBIG
 * (over the maximum message size: msg freed, the call is finished with
 * RESOURCE_EXHAUSTED) or IFD_ENOMEM (msg freed).
 */
int ifd_gstream_send(ifd_gstream_t *st, const ifd_gmsg_t *msg);

/**
 * Ends the call: trailers with grpc-status and grpc-message (percent-encoded
 * by the transport; NULL or "" for none) after every queued message. A call
 * with no message sent gets a Trailers-Only response. Further sends fail.
 */
void ifd_gstream_finish(ifd_gstream_t *st, int grpc_status, const char *msg);

#endif
