/*
 * net/http_infer.c - one KServe v2 infer exchange over HTTP/1.1: the body
 * decoded into the request (net/http_infer_decode.c), the request submitted,
 * and its first response encoded into the slot (net/http_infer_encode.c).
 *
 * The route (net/http_routes.c) resolves the URL and hands over a request
 * that owns the body; from there this file owns the exchange until the slot
 * is finished. HTTP/1.1 answers once: later responses of a decoupled model
 * are dropped as they come.
 */
#include <stdlib.h>

#include "core/infer.h"
#include "core/model.h"
#include "net/internal.h"
#include "net/status.h"

static void reply_code(ifd_http_slot_t *s, int code, const char *msg) {
  ifd__http_slot_error(s, ifd_http_status(code),
                       msg[0] != '\0' ? msg : ifd_strerror(code));
}

/* After the first response, the rest of a decoupled stream has nowhere to go
 * over HTTP/1.1: they are freed as they come. */
static void drop_response(ifd_response_t *resp, void *arg) {
  (void)arg;
  ifd_response_free(resp);
}

static void answer_infer(ifd_http_slot_t *s, ifd_response_t *resp) {
  ifd_request_t *req = s->req;
  uv_buf_t stack[8], *bin = stack;
  unsigned nbin = 0;
  ifd_errmsg_t err;
  ifd_hbuf_t b;
  int64_t version =
      req->model != NULL ? req->model->version : req->model_version;
  int rc;

  if (resp->error != 0) {
    ifd__http_slot_error(
        s, ifd_http_status(resp->error),
        resp->error_msg != NULL ? resp->error_msg : ifd_strerror(resp->error));
    return;
  }
  if (resp->n_outputs > sizeof(stack) / sizeof(stack[0])) {
    bin = malloc(resp->n_outputs * sizeof(uv_buf_t));
    if (bin == NULL) {
      ifd__http_slot_error(s, 500, "out of memory");
      return;
    }
  }
  ifd_errclear(&err);
  ifd__hbuf_init(&b, IFD_HTTP_HEADROOM);
  rc = ifd__http_infer_serialize(req, resp, version, s->binary_all, &b, bin,
                                 &nbin, &err);
  if (rc != 0) {
    ifd__hbuf_free(&b);
    reply_code(s, rc, err.text);
  } else if (nbin != 0) {
    ifd__http_slot_finish(s, 200, "application/octet-stream", &b, bin, nbin,
                          (int64_t)ifd__hbuf_size(&b));
  } else {
    ifd__http_slot_finish(s, 200, "application/json", &b, NULL, 0, -1);
  }
  if (bin != stack) free(bin);
}

static void on_infer_response(ifd_response_t *resp, void *arg) {
  ifd_http_slot_t *s = arg;

  /* HTTP answers once: later responses of this request are dropped. */
  s->req->on_response = drop_response;
  s->req->cb_arg = NULL;
  s->answered = 1;
  s->resp = resp; /* the slot frees it after the write (or now, below) */
  if (s->conn == NULL) {
    ifd__http_slot_free(s); /* the client went away meanwhile */
    return;
  }
  answer_infer(s, resp);
}

void ifd__http_infer_start(ifd_http_slot_t *s, ifd_request_t *req,
                           size_t body_len, size_t json_len) {
  ifd_http_infer_info_t info;
  ifd_errmsg_t err;
  int rc;

  ifd_errclear(&err);
  rc = ifd__http_infer_decode(req, req->body, body_len, json_len, &info, &err);
  if (rc != 0) goto out_fail;
  s->binary_all = info.binary_all != 0;
  s->req = req;
  req->on_response = on_infer_response;
  req->cb_arg = s;
  rc = ifd_request_submit(req, &err);
  if (rc != 0) {
    s->req = NULL; /* refused up front: no callback follows */
    goto out_fail;
  }
  return;

out_fail:
  reply_code(s, rc, err.text);
  ifd_request_unref(req);
}
