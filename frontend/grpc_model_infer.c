/*
 * frontend/grpc_model_infer.c - ModelInfer and ModelStreamInfer: each
 * builds an inference request with frontend/grpc_infer.c (the codec),
 * submits it, and answers from its on_response callback.
 *
 * Who holds what while inference runs:
 *  - ModelInfer: the request's callback holds a stream reference until the
 *    FINAL response; the protocol's request reference goes to the reply of
 *    that response (dropped once its bytes are written) or is dropped then.
 *  - ModelStreamInfer: a stream_call_t (the stream's method data) counts the
 *    requests still waiting for their FINAL response and holds a stream
 *    reference; it is freed when none is pending and the call has ended
 *    (finished by us, half-closed then finished, or cancelled).
 * A response for a call that was cancelled meanwhile is freed unsent.
 */
#include <stdlib.h>
#include <string.h>

#include "base/bufpool.h"
#include "core/infer.h"
#include "core/model.h"
#include "core/server.h"
#include "core/trace.h"
#include "frontend/grpc_infer.h"
#include "proto/grpc_service.pb-c.h"

static int64_t version_of(const ifd_request_t *req) {
  if (req == NULL) return -1;
  return req->model != NULL ? req->model->version : req->model_version;
}

/* ---- inference: common --------------------------------------------------- */

/* Builds a request from a ModelInferRequest message (taken: it becomes the
 * request's body). Returns 0 and *out, or a code with `err` filled and
 * *out NULL or a request for the caller to unref. */
static int build_request(ifd_gstream_t *st, uint8_t *msg, size_t len,
                         ifd_request_t **out, ifd_errmsg_t *err) {
  ifd_request_t *req = ifd_request_new(ifd_gstream_server(st));
  int rc;

  *out = req;
  if (req == NULL) {
    ifd_bufpool_put(msg);
    return ifd_errf(err, IFD_ENOMEM, "out of memory");
  }
  req->body = msg;          /* owned by the request: raw inputs point into it */
  req->body_in_bufpool = 1; /* the transport's (net/grpc.h) */
  req->t_received = uv_hrtime();
  req->trace_proto = IFD_TRACE_PROTO_GRPC;
  /* --grpc-infer-response-compression-level applies to inference calls. */
  ifd_gstream_compress(st);
  rc = ifd__grpc_infer_decode(req, msg, len, err);
  if (rc == 0) rc = ifd__gstream_forward(st, req, err);
  return rc;
}

/* Sends `resp` as an inference response. Takes `resp`, and `own_req` (NULL,
 * or a request reference to drop once the bytes are written). Returns the
 * ifd_gstream_send result, or an encoding error with `err` filled. */
static int send_infer(ifd_gstream_t *st, ifd_response_t *resp,
                      ifd_request_t *own_req, unsigned flags, int no_version,
                      ifd_errmsg_t *err) {
  ifd_grpc_reply_t *r;
  int rc;

  rc = ifd__grpc_infer_encode(
      resp->req, resp, no_version ? -1 : version_of(resp->req), flags, &r, err);
  if (rc != 0) {
    ifd_response_free(resp);
    ifd_request_unref(own_req);
    return rc;
  }
  r->resp = resp;
  r->req = own_req;
  rc = ifd_gstream_send(st, &r->msg);
  if (rc == IFD_ENOMEM) ifd_errf(err, rc, "out of memory");
  return rc;
}

/* Request parameters named triton_* are tritonserver's: over gRPC only
 * triton_enable_empty_final_response (a bool) is accepted, with its texts. */
static int check_triton_params(const ifd_request_t *req, ifd_errmsg_t *err) {
  uint32_t i;

  for (i = 0; i < req->n_params; i++) {
    const char *k = req->params[i].key;
    if (strncmp(k, "triton_", 7) != 0) continue;
    if (strcmp(k, "triton_enable_empty_final_response") != 0)
      return ifd_errf(err, IFD_EINVAL,
                      "parameter keys starting with 'triton_' are reserved "
                      "for Triton usage. Only the following keys starting "
                      "with 'triton_' are allowed: "
                      "triton_enable_empty_final_response");
    if (req->params[i].type != IFD_PARAM_BOOL)
      return ifd_errf(err, IFD_EINVAL,
                      "invalid value type for "
                      "'triton_enable_empty_final_response' parameter, "
                      "expected bool_param.");
  }
  return 0;
}

/* ---- ModelInfer ---------------------------------------------------------- */

static void on_unary_response(ifd_response_t *resp, void *arg) {
  ifd_gstream_t *st = arg; /* counted reference, held until FINAL */
  ifd_request_t *req = resp->req;
  int final = (resp->flags & IFD_RESPONSE_FINAL) != 0;
  ifd_request_t *own = final ? req : NULL; /* the protocol's reference */
  ifd_errmsg_t err;
  int rc;

  if (ifd_gstream_closed(st) || (resp->empty && !final)) {
    /* Cancelled (or answered) meanwhile, or flags without payload. */
    ifd_response_free(resp);
    ifd_request_unref(own);
  } else if (resp->error != 0) {
    ifd__grpc_finish_code(st, resp->error, resp->error_msg);
    ifd_response_free(resp);
    ifd_request_unref(own);
  } else if (resp->empty) {
    ifd_response_free(resp);
    ifd_request_unref(own);
    ifd_gstream_finish(st, IFD_GRPC_INTERNAL,
                       "the model completed the request without a response");
  } else {
    ifd_errclear(&err);
    if (req->trace != NULL) ifd_trace_stamp(req->trace, IFD_TP_SEND_START);
    rc = send_infer(st, resp, own, 0, 0, &err);
    if (rc == 0)
      ifd_gstream_finish(st, IFD_GRPC_OK, NULL);
    else if (rc != IFD_ECANCELLED && rc != IFD_ETOOBIG)
      ifd__grpc_finish_code(st, rc, err.text);
  }
  if (final) {
    ifd_gstream_set_data(
        st, NULL); /* ifd__grpc_model_infer_cancel has nothing to do */
    ifd_gstream_unref(st);
  }
}

/* The call ended first (RST_STREAM, deadline, connection lost): its request
 * is cancelled; a queued one is dropped, and its answer freed unsent. */
void ifd__grpc_model_infer_cancel(ifd_gstream_t *st) {
  ifd_request_t *req = ifd_gstream_data(st);
  if (req != NULL) ifd_request_cancel(req);
}

/* tritonserver refuses decoupled models on the unary RPC: their responses
 * need a stream. */
static int check_unary_model(ifd_request_t *req, ifd_errmsg_t *err) {
  ifd_model_t *m;

  if (ifd_server_find_model(req->server, req->model_name,
                            strlen(req->model_name), req->model_version, &m,
                            NULL) == 0 &&
      m->config->model_transaction_policy != NULL &&
      m->config->model_transaction_policy->decoupled)
    return ifd_errf(err, IFD_EUNSUPPORTED,
                    "ModelInfer RPC doesn't support models with decoupled "
                    "transaction policy");
  return 0; /* an unknown model is reported by submit */
}

void ifd__grpc_model_infer(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  ifd_request_t *req;
  ifd_errmsg_t err;
  int rc;

  ifd_errclear(&err);
  rc = build_request(st, msg, len, &req, &err);
  if (rc == 0) rc = check_triton_params(req, &err);
  if (rc == 0) rc = check_unary_model(req, &err);
  if (rc != 0) goto out_fail;
  req->on_response = on_unary_response;
  req->cb_arg = st;
  ifd_gstream_ref(st); /* the callback's, dropped with the FINAL response */
  /* Borrowed until the FINAL response: ifd__grpc_model_infer_cancel cancels it.
   */
  ifd_gstream_set_data(st, req);
  rc = ifd_request_submit(req, &err);
  if (rc != 0) {
    ifd_gstream_set_data(st, NULL);
    ifd_gstream_unref(st); /* refused up front: no callback follows */
    goto out_fail;
  }
  return;

out_fail:
  ifd__grpc_finish_code(st, rc, err.text);
  ifd_request_unref(req);
}

/* ---- ModelStreamInfer ---------------------------------------------------- */

/* A request of a stream call waiting for its FINAL response: in the
 * request's pool, linked in its call's `live` ring (the response callback's
 * argument), so that a call that ends early cancels what it still has. */
typedef struct stream_req {
  struct stream_call *c;          /* borrowed: alive while this is linked */
  ifd_request_t *req;             /* borrowed: holds this in its pool */
  struct stream_req *prev, *next; /* the ring; never NULL once linked */
} stream_req_t;

static void sreq_link(stream_req_t *head, stream_req_t *n) {
  n->prev = head->prev;
  n->next = head;
  head->prev->next = n;
  head->prev = n;
}

static void sreq_unlink(stream_req_t *n) {
  n->prev->next = n->next;
  n->next->prev = n->prev;
  n->prev = n->next = n;
}

typedef struct stream_call {
  ifd_gstream_t *st;  /* counted reference, dropped when the call is freed */
  stream_req_t live;  /* ring head: requests whose FINAL has not arrived */
  unsigned pending;   /* requests submitted whose FINAL has not arrived */
  unsigned ended : 1; /* the client half-closed */
  unsigned cancelled : 1; /* on_cancel ran: nothing more is sent */
} stream_call_t;

/* The call state, created with the first message. NULL on ENOMEM. */
static stream_call_t *stream_call(ifd_gstream_t *st) {
  stream_call_t *c = ifd_gstream_data(st);

  if (c != NULL) return c;
  c = calloc(1, sizeof(*c));
  if (c == NULL) return NULL;
  c->st = st;
  c->live.prev = c->live.next = &c->live;
  ifd_gstream_ref(st);
  ifd_gstream_set_data(st, c);
  return c;
}

/* Finishes the call once the client is done and every response is out, and
 * frees the state once nothing can reach it any more. */
static void stream_settle(stream_call_t *c) {
  ifd_gstream_t *st = c->st;

  if (c->pending != 0) return;
  if (c->ended && !c->cancelled && !ifd_gstream_closed(st))
    ifd_gstream_finish(st, IFD_GRPC_OK, NULL);
  if (c->ended || c->cancelled || ifd_gstream_closed(st)) {
    ifd_gstream_set_data(st, NULL);
    free(c);
    ifd_gstream_unref(st);
  }
}

/* Sends an error message on the stream, which stays open. */
static void stream_error(stream_call_t *c, const ifd_request_t *req, int code,
                         const char *msg) {
  ifd_grpc_reply_t *r;

  if (msg == NULL || msg[0] == '\0') msg = ifd_strerror(code);
  if (ifd__grpc_stream_error(req, msg, &r) != 0 ||
      ifd_gstream_send(c->st, &r->msg) == IFD_ENOMEM)
    ifd__grpc_finish_code(c->st, IFD_ENOMEM, "out of memory");
}

/* Did the request ask for an empty final response (a Triton parameter)? */
static int wants_final_flag(const ifd_request_t *req) {
  uint32_t i;

  for (i = 0; i < req->n_params; i++)
    if (req->params[i].type == IFD_PARAM_BOOL &&
        strcmp(req->params[i].key, "triton_enable_empty_final_response") == 0)
      return req->params[i].v.b;
  return 0;
}

/* Every message carries triton_final_response (true only on the response
 * that has the FINAL flag), as tritonserver's stream does. A FINAL without
 * payload becomes a message (no outputs, no model_version) only when the
 * request set triton_enable_empty_final_response; other flags-only
 * responses are not messages. */
static void on_stream_response(ifd_response_t *resp, void *arg) {
  stream_req_t *sr = arg;
  stream_call_t *c = sr->c; /* alive while c->pending counts this request */
  ifd_request_t *req = resp->req;
  int final = (resp->flags & IFD_RESPONSE_FINAL) != 0;
  ifd_request_t *own = final ? req : NULL; /* the protocol's reference */
  unsigned flags = IFD_GRPC_ENC_STREAM | IFD_GRPC_ENC_FINAL_PARAM |
                   (final ? IFD_GRPC_ENC_FINAL : 0);
  ifd_errmsg_t err;
  int rc;

  if (c->cancelled || ifd_gstream_closed(c->st) ||
      (resp->error == 0 && resp->empty && !(final && wants_final_flag(req)))) {
    /* Dropped, or flags only: not a message. */
    ifd_response_free(resp);
    ifd_request_unref(own);
  } else if (resp->error != 0) {
    stream_error(c, req, resp->error, resp->error_msg);
    ifd_response_free(resp);
    ifd_request_unref(own);
  } else {
    ifd_errclear(&err);
    if (final && req->trace != NULL)
      ifd_trace_stamp(req->trace, IFD_TP_SEND_START);
    rc = send_infer(c->st, resp, own, flags, resp->empty, &err);
    if (rc != 0 && rc != IFD_ECANCELLED && rc != IFD_ETOOBIG)
      stream_error(c, NULL, rc, err.text);
  }
  if (final) {
    sreq_unlink(sr);
    c->pending--;
    stream_settle(c);
  }
}

void ifd__grpc_stream_infer(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  stream_call_t *c;
  stream_req_t *sr;
  ifd_request_t *req;
  ifd_errmsg_t err;
  int rc;

  if (ifd_gstream_closed(st)) {
    ifd_bufpool_put(msg); /* the call is over: late messages are dropped */
    return;
  }
  c = stream_call(st);
  if (c == NULL) {
    ifd_bufpool_put(msg);
    ifd__grpc_finish_code(st, IFD_ENOMEM, "out of memory");
    return;
  }
  ifd_errclear(&err);
  rc = build_request(st, msg, len, &req, &err);
  if (rc == 0) rc = check_triton_params(req, &err);
  if (rc != 0) goto out_fail;
  sr = ifd_pool_alloc(&req->pool, sizeof(*sr));
  if (sr == NULL) {
    rc = ifd_errf(&err, IFD_ENOMEM, "out of memory");
    goto out_fail;
  }
  sr->c = c;
  sr->req = req;
  req->on_response = on_stream_response;
  req->cb_arg = sr;
  sreq_link(&c->live, sr);
  c->pending++; /* before submit: a response may come at once */
  rc = ifd_request_submit(req, &err);
  if (rc != 0) {
    sreq_unlink(sr);
    c->pending--; /* refused up front: no callback follows */
    goto out_fail;
  }
  return;

out_fail:
  /* A bad request answers that request only; the stream goes on. */
  stream_error(c, req, rc, err.text);
  ifd_request_unref(req);
}

void ifd__grpc_stream_infer_end(ifd_gstream_t *st) {
  stream_call_t *c = ifd_gstream_data(st);

  if (c == NULL) {
    if (!ifd_gstream_closed(st)) ifd_gstream_finish(st, IFD_GRPC_OK, NULL);
    return;
  }
  c->ended = 1;
  stream_settle(c);
}

void ifd__grpc_stream_infer_cancel(ifd_gstream_t *st) {
  stream_call_t *c = ifd_gstream_data(st);
  stream_req_t todo, *sr;

  if (c == NULL) return;
  c->cancelled = 1; /* outstanding responses are dropped as they come */
  /* The client went away: its requests are cancelled. Cancelling one may
   * answer it (and others held behind it) at once, which unlinks them from
   * whichever ring they are in; so the ring moves to `todo` first, and each
   * request goes back to c->live just before its cancel. The extra pending
   * count keeps `c` alive meanwhile. */
  c->pending++;
  todo.prev = todo.next = &todo;
  if (c->live.next != &c->live) {
    todo.next = c->live.next;
    todo.prev = c->live.prev;
    todo.next->prev = &todo;
    todo.prev->next = &todo;
    c->live.prev = c->live.next = &c->live;
  }
  while (todo.next != &todo) {
    sr = todo.next;
    sreq_unlink(sr);
    sreq_link(&c->live, sr);
    ifd_request_cancel(sr->req);
  }
  c->pending--;
  stream_settle(c);
}
