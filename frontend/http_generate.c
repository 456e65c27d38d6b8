/*
 * frontend/http_generate.c - one exchange of Triton's generate extension:
 * POST /v2/models/m[/versions/v]/generate and .../generate_stream.
 *
 * The route (frontend/http_routes.c) hands over a request that owns the body.
 * The model is looked up first: its inputs decide which members of the body
 * are inputs (frontend/http_generate_map.c). A refusal before submission
 * answers with its status and a Content-Length body, as any route. Once
 * the request is submitted the answer is 200 and goes out with chunked
 * transfer coding (Triton sends the status before the responses):
 *
 *   generate         keeps the first response until the request completes
 *                    (its FINAL flag), then sends its flat JSON; a model
 *                    that sent none or more than one answers {"error":
 *                    "generate expects model to produce exactly 1
 *                    response, ..."}, an error response {"error": msg}.
 *   generate_stream  sends each response as it arrives as a Server-Sent
 *                    Event "data: {...}\n\n" (an error response as
 *                    "data: {"error": msg}\n\n"), the status line with the
 *                    first of them; a request that completes with no
 *                    response gets an empty 200 body.
 *
 * Responses reach on_gen_response on the loop, one by one, as the backend
 * sends them (a decoupled model's from its own threads). The stream's
 * pieces queue on the slot (net/http1.c) and go out in the connection's
 * next write, so responses that arrive while a write is in flight leave
 * together; requests pipelined behind a stream wait in the connection's
 * FIFO until it ends. Should the connection close first, the slot becomes
 * an orphan (slot->conn NULL, not yet `answered`): the responses are freed
 * as they come and the FINAL one frees the slot.
 */
#include <stdlib.h>
#include <string.h>

#include "core/infer.h"
#include "core/model.h"
#include "core/server.h"
#include "frontend/internal.h"
#include "frontend/status.h"

/* The state of one exchange, in its request's pool. */
struct ifd_http_gen {
  int stream;     /* 1: generate_stream */
  unsigned count; /* responses with a payload so far */
};

static const char too_many[] =
    "generate expects model to produce exactly 1 response, use generate "
    "stream for model that generates various number of responses";

static void reply_code(ifd_http_slot_t *s, int code, const char *msg) {
  ifd__http_slot_error(s, ifd__http_slot_status(s, code),
                       msg[0] != '\0' ? msg : ifd_strerror(code));
}

static int64_t executed_version(const ifd_request_t *req) {
  return req->model != NULL ? req->model->version : req->model_version;
}

static const char *error_text(const ifd_response_t *resp) {
  return resp->error_msg != NULL ? resp->error_msg : ifd_strerror(resp->error);
}

/* Appends {"error": msg}. */
static void put_error(ifd_hbuf_t *b, const char *msg) {
  ifd_hbuf_puts(b, "{\"error\":");
  ifd_json_text(b, msg, strlen(msg));
  ifd_hbuf_put(b, "}", 1);
}

/* Appends the JSON of `resp`: its outputs, or {"error"} for an error
 * response or one that cannot be encoded. */
static void put_response(ifd_hbuf_t *b, const ifd_request_t *req,
                         const ifd_response_t *resp) {
  size_t mark = b->len;
  ifd_errmsg_t err;

  if (resp->error != 0) {
    put_error(b, error_text(resp));
    return;
  }
  ifd_errclear(&err);
  if (ifd__http_generate_encode(b, resp, req->model_name, executed_version(req),
                                &err) != 0) {
    b->len = mark;
    b->oom = 0;
    put_error(b, err.text);
  }
}

/* A later response of a request whose answer is complete: freed. */
static void drop_response(ifd_response_t *resp, void *arg) {
  (void)arg;
  ifd_response_free(resp);
}

/* generate_stream: one event per response. */
static void stream_response(ifd_http_slot_t *s, ifd_response_t *resp) {
  ifd_hbuf_t b;

  if (s->t.ready) return; /* answered 500 when the stream could not begin */
  if (!s->t.streaming && ifd__http_slot_stream_begin(
                             s, 200, "text/event-stream; charset=utf-8") != 0)
    return;
  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd_hbuf_puts(&b, "data: ");
  put_response(&b, s->req, resp);
  ifd_hbuf_puts(&b, "\n\n");
  ifd__http_slot_stream_put(s, &b);
}

/* generate: the single response, or the error, as the whole body. */
static void generate_answer(ifd_http_slot_t *s, const ifd_http_gen_t *g) {
  ifd_hbuf_t b;

  if (ifd__http_slot_stream_begin(s, 200, "application/json") != 0) return;
  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  if (g->count == 1 && s->resp != NULL)
    put_response(&b, s->req, s->resp);
  else
    put_error(&b, too_many);
  ifd__http_slot_stream_put(s, &b);
}

static void on_gen_response(ifd_response_t *resp, void *arg) {
  ifd_http_slot_t *s = arg;
  ifd_http_gen_t *g = s->gen;
  int final = (resp->flags & IFD_RESPONSE_FINAL) != 0;
  int payload = !resp->empty || resp->error != 0;

  if (final) { /* nothing follows a FINAL response */
    s->req->on_response = drop_response;
    s->req->cb_arg = NULL;
  }
  if (s->t.conn == NULL) { /* the client went away: an orphan */
    ifd_response_free(resp);
    if (final) {
      s->answered = 1;
      ifd__http_slot_free(s);
    }
    return;
  }
  if (payload) g->count++;
  if (g->stream) {
    if (payload) stream_response(s, resp);
    ifd_response_free(resp);
  } else if (payload && g->count == 1) {
    s->resp = resp; /* kept until FINAL; the slot frees it */
  } else {
    ifd_response_free(resp);
  }
  if (!final) return;
  s->answered = 1;
  if (!g->stream)
    generate_answer(s, g);
  else if (!s->t.streaming && !s->t.ready)
    ifd__http_slot_stream_begin(s, 200, "text/event-stream; charset=utf-8");
  if (s->resp != NULL) {
    ifd_response_free(s->resp);
    s->resp = NULL;
  }
  if (s->t.streaming) ifd__http_slot_stream_end(s);
}

/* Maps the body against the model's inputs. Returns 0 or an error code
 * with `err`. */
static int decode(ifd_request_t *req, size_t body_len, ifd_errmsg_t *err) {
  ifd_model_info_t info;
  ifd_model_t *model;
  int rc;

  rc = ifd_server_find_model(req->server, req->model_name,
                             strlen(req->model_name), req->model_version,
                             &model, err);
  if (rc != 0) return rc;
  if (ifd_server_model_metadata(req->server, model, &info) != 0)
    return ifd_errf(err, IFD_ENOMEM, "out of memory");
  rc = ifd__http_generate_decode(req, req->body, body_len, info.inputs,
                                 info.n_inputs, err);
  ifd_model_info_free(&info);
  if (rc == 0) { /* everything was copied: the text may go */
    ifd_request_body_free(req);
  }
  return rc;
}

void ifd__http_generate_start(ifd_http_slot_t *s, ifd_request_t *req,
                              size_t body_len, int stream) {
  ifd_http_gen_t *g;
  ifd_errmsg_t err;
  int rc;

  ifd_errclear(&err);
  rc = decode(req, body_len, &err);
  if (rc != 0) goto out_fail;
  g = ifd_pool_calloc(&req->pool, 1, sizeof(*g));
  if (g == NULL) {
    rc = ifd_errf(&err, IFD_ENOMEM, "out of memory");
    goto out_fail;
  }
  g->stream = stream;
  s->gen = g;
  s->req = req;
  req->on_response = on_gen_response;
  req->cb_arg = s;
  rc = ifd_request_submit(req, &err);
  if (rc != 0) {
    s->req = NULL; /* refused up front: no callback follows */
    s->gen = NULL;
    goto out_fail;
  }
  return;

out_fail:
  reply_code(s, rc, err.text);
  ifd_request_unref(req);
}
