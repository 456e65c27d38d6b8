/*
 * frontend/http_infer.c - one KServe v2 infer exchange over HTTP/1.1: the body
 * decoded into the request (frontend/http_infer_decode.c), the request
 * submitted, and its first response encoded into the slot
 * (frontend/http_infer_encode.c).
 *
 * The route (frontend/http_routes.c) resolves the URL and hands over a request
 * that owns the body; from there this file owns the exchange until the slot
 * is finished. HTTP/1.1 answers once: a decoupled model is refused up front
 * as tritonserver refuses it (501, its JSON error under a text/plain type),
 * and later responses of any other request are dropped as they come.
 *
 * Large JSON. Decoding or encoding tens of megabytes of JSON takes hundreds
 * of milliseconds, a stall for every other connection on the loop. A JSON
 * header of at least the front end's --http-json-offload-bytes, or a
 * response whose JSON outputs hold that many tensor bytes, is decoded or
 * encoded by a job on the libuv thread pool instead; smaller bodies keep the
 * inline path (no hop, no allocation). The request stays loop-owned: while
 * a job runs, the worker alone touches what it fills (the request's pool and
 * tensors when decoding; its own text buffer when encoding, reading the
 * response and the request's id, name and requested outputs, which the loop
 * no longer writes) and the loop touches none of it. The after-work
 * callback continues on the loop: submit (or answer the error), or finish
 * the slot with the text. Requests pipelined on one connection are answered
 * in order (the connection's FIFO) but a small one may be submitted before
 * a large one ahead of it that is still being decoded.
 *
 * A job keeps its slot alive through the connection layer's orphan rule:
 * the slot holds the request (slot->req) and is not `answered` while the job
 * runs, so a connection that closes meanwhile leaves the slot behind with
 * slot->conn = NULL instead of freeing it (and cancels the job if it has not
 * started). The after-work callback then frees the slot and drops the
 * result quietly. The loop keeps running until every queued job has come
 * back (uv_queue_work requests keep it alive), so shutdown with jobs in
 * flight frees everything; an orphan's request has not been submitted, or
 * has been answered, so freeing it touches nothing of the server.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "core/infer.h"
#include "core/model.h"
#include "core/server.h"
#include "frontend/forward.h"
#include "frontend/internal.h"
#include "frontend/status.h"

/* A JSON decode or encode running on the thread pool for one slot. */
struct ifd_http_job {
  uv_work_t work;        /* embedded; the job is freed in its after-work */
  ifd_http_slot_t *slot; /* borrowed: kept alive by the job (see above) */
  ifd_request_t *req;    /* borrowed: the slot's reference (slot->req) */
  int encode;            /* 1: encode slot->resp; 0: decode req->body */
  int rc;                /* the worker's result: 0 or IFD_E* with err */
  ifd_errmsg_t err;

  /* Decoding. */
  size_t body_len, json_len;
  ifd_http_infer_info_t info; /* filled by the worker */

  /* Encoding. */
  const ifd_response_t *resp; /* borrowed: slot->resp */
  int64_t version;            /* the executed version, read on the loop */
  int binary_all;             /* slot->binary_all, read on the loop */
  ifd_hbuf_t text;            /* owned until the slot takes it */
  uv_buf_t *bin;              /* owned: resp->n_outputs entries */
  unsigned nbin;
};

typedef struct ifd_http_job job_t;

static void reply_code(ifd_http_slot_t *s, int code, const char *msg) {
  ifd__http_slot_error(s, ifd__http_slot_status(s, code),
                       msg[0] != '\0' ? msg : ifd_strerror(code));
}

/* After the first response, the rest of a decoupled stream has nowhere to go
 * over HTTP/1.1: they are freed as they come. */
static void drop_response(ifd_response_t *resp, void *arg) {
  (void)arg;
  ifd_response_free(resp);
}

/* Finishes the slot with an encoded body (the slot takes `text`). */
static void finish_encoded(ifd_http_slot_t *s, int rc, const ifd_errmsg_t *err,
                           ifd_hbuf_t *text, const uv_buf_t *bin,
                           unsigned nbin) {
  if (rc != 0) {
    ifd_hbuf_free(text);
    reply_code(s, rc, err->text);
  } else if (nbin != 0 && s->sagemaker) {
    /* SageMaker says the JSON size in the media type, not in a header. */
    char ctype[96];
    snprintf(ctype, sizeof(ctype),
             "application/vnd.sagemaker-triton.binary+json;json-header-size="
             "%zu",
             ifd_hbuf_size(text));
    ifd__http_slot_finish(s, 200, ctype, text, bin, nbin, -1);
  } else if (nbin != 0) {
    ifd__http_slot_finish(s, 200, "application/octet-stream", text, bin, nbin,
                          (int64_t)ifd_hbuf_size(text));
  } else {
    ifd__http_slot_finish(s, 200, "application/json", text, NULL, 0, -1);
  }
}

static int64_t executed_version(const ifd_request_t *req) {
  return req->model != NULL ? req->model->version : req->model_version;
}

static void answer_inline(ifd_http_slot_t *s, ifd_response_t *resp) {
  uv_buf_t stack[8], *bin = stack;
  unsigned nbin = 0;
  ifd_errmsg_t err;
  ifd_hbuf_t b;
  int rc;

  if (resp->n_outputs > sizeof(stack) / sizeof(stack[0])) {
    bin = malloc(resp->n_outputs * sizeof(uv_buf_t));
    if (bin == NULL) {
      ifd__http_slot_error(s, 500, "out of memory");
      return;
    }
  }
  ifd_errclear(&err);
  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  rc = ifd__http_infer_serialize(s->req, resp, executed_version(s->req),
                                 s->binary_all, &b, bin, &nbin, &err);
  finish_encoded(s, rc, &err, &b, bin, nbin);
  if (bin != stack) free(bin);
}

/* ---- jobs ------------------------------------------------------------- */

/* Whether an input's data lies in the request's body (`len` bytes): binary
 * data, or an empty tensor at its end. */
static int body_in_use(const ifd_request_t *req, size_t len) {
  uintptr_t body = (uintptr_t)req->body;
  uint32_t i;

  for (i = 0; i < req->n_inputs; i++) {
    uintptr_t d = (uintptr_t)req->inputs[i].data;
    if (d >= body && d - body <= len) return 1;
  }
  return 0;
}

static void job_work(uv_work_t *w) {
  job_t *j = (job_t *)w;

  /* Worker thread: only the job, the request's pool and tensors (decode) or
   * the job's own buffers (encode) are written here; the slot is not read. */
  if (j->encode) {
    ifd_hbuf_init(&j->text, IFD_HTTP_HEADROOM);
    j->rc =
        ifd__http_infer_serialize(j->req, j->resp, j->version, j->binary_all,
                                  &j->text, j->bin, &j->nbin, &j->err);
  } else {
    j->rc = ifd__http_infer_decode(j->req, j->req->body, j->body_len,
                                   j->json_len, &j->info, &j->err);
    /* The JSON text is dead once decoded: unless a binary input points into
     * the body, it goes now, off the loop, rather than with the request. */
    if (j->rc == 0 && !body_in_use(j->req, j->body_len)) {
      ifd_request_body_free(j->req);
    }
  }
}

static void job_free(job_t *j) {
  if (j->encode) ifd_hbuf_free(&j->text);
  free(j->bin);
  free(j);
}

static void submit(ifd_http_slot_t *s, ifd_request_t *req, int rc,
                   ifd_errmsg_t *err, const ifd_http_infer_info_t *info);

static void job_done(uv_work_t *w, int status) {
  job_t *j = (job_t *)w;
  ifd_http_slot_t *s = j->slot;

  s->job = NULL;
  if (s->t.conn == NULL) {
    /* The connection closed meanwhile (the job may have been cancelled):
     * the orphaned slot is ours to free, with its request and response. */
    ifd__http_slot_free(s);
    job_free(j);
    return;
  }
  if (NEVER(status != 0)) /* only an orphan's job is cancelled */
    j->rc = ifd_errf(&j->err, IFD_EINTERNAL, "%s", uv_strerror(status));
  if (j->encode) {
    s->answered = 1;
    finish_encoded(s, j->rc, &j->err, &j->text, j->bin, j->nbin);
    j->encode = 0; /* the slot took the text */
  } else {
    submit(s, j->req, j->rc, &j->err, &j->info);
  }
  job_free(j);
}

/* Queues `j` (slot, req and the mode's fields set). Returns 0, or a libuv
 * error with nothing queued. */
static int job_queue(uv_loop_t *loop, job_t *j) {
  int rc = uv_queue_work(loop, &j->work, job_work, job_done);

  if (rc == 0) j->slot->job = j;
  return rc;
}

void ifd__http_infer_cancel(ifd_http_slot_t *slot) {
  /* A job already running finishes; its after-work frees the orphan. */
  if (slot->job != NULL) uv_cancel((uv_req_t *)&slot->job->work);
}

/* ---- the exchange ----------------------------------------------------- */

/* Encodes `resp` on the thread pool. Returns 0 when queued (the job answers
 * the slot), or an error with nothing queued. */
static int answer_offload(ifd_http_slot_t *s, ifd_response_t *resp) {
  job_t *j = calloc(1, sizeof(*j));

  if (j == NULL) return IFD_ENOMEM;
  j->bin =
      malloc((resp->n_outputs != 0 ? resp->n_outputs : 1) * sizeof(uv_buf_t));
  if (j->bin == NULL) goto out_free_job;
  j->slot = s;
  j->req = s->req;
  j->encode = 1;
  j->resp = resp;
  j->version = executed_version(s->req);
  j->binary_all = s->binary_all;
  ifd_errclear(&j->err);
  if (job_queue(ifd_server_loop(s->req->server), j) != 0) goto out_free_bin;
  return 0;

out_free_bin:
  free(j->bin);
out_free_job:
  free(j);
  return IFD_ENOMEM;
}

static void on_infer_response(ifd_response_t *resp, void *arg) {
  ifd_http_slot_t *s = arg;

  /* HTTP answers once: later responses of this request are dropped. */
  s->req->on_response = drop_response;
  s->req->cb_arg = NULL;
  s->resp = resp; /* the slot frees it after the write (or now, below) */
  if (resp->req->trace != NULL)
    ifd_trace_stamp(resp->req->trace, IFD_TP_SEND_START);
  if (s->t.conn == NULL) {
    s->answered = 1;
    ifd__http_slot_free(s); /* the client went away meanwhile */
    return;
  }
  if (resp->error != 0) {
    /* An error that came in the response: text/plain, as tritonserver
     * answers from its response callback (features.md, "Read first" 1). */
    s->answered = 1;
    ifd__http_slot_error_as(
        s, ifd__http_slot_status(s, resp->error), "text/plain",
        resp->error_msg != NULL ? resp->error_msg : ifd_strerror(resp->error));
    return;
  }
  /* While a job encodes, `answered` stays 0: the slot is then an orphan, not
   * freed, if the connection closes (see the top of the file). */
  if (ifd__http_infer_json_bytes(s->req, resp, s->binary_all) >=
          s->json_offload &&
      answer_offload(s, resp) == 0)
    return;
  s->answered = 1;
  answer_inline(s, resp);
}

/* tritonserver's HTTP front end refuses every request parameter named
 * triton_* (its gRPC one accepts triton_enable_empty_final_response). */
static int check_triton_params(const ifd_request_t *req, ifd_errmsg_t *err) {
  uint32_t i;

  for (i = 0; i < req->n_params; i++)
    if (strncmp(req->params[i].key, "triton_", 7) == 0)
      return ifd_errf(err, IFD_EINVAL,
                      "parameter keys starting with 'triton_' are reserved "
                      "for Triton usage and should not be specified.");
  return 0;
}

int ifd__http_infer_resolve_shm(ifd_request_t *req,
                                const ifd_http_infer_info_t *info,
                                ifd_errmsg_t *err) {
  uint32_t i;

  for (i = 0; i < info->n_shm; i++) {
    const ifd_http_shm_place_t *pl = &info->shm[i];
    ifd_shm_ref_t ref;
    int rc = ifd_shm_use(req, pl->region, pl->region_len, pl->offset,
                         pl->byte_size, &ref, err);
    if (rc != 0) return rc;
    if (pl->output) {
      req->outputs[pl->index].shm = ref;
    } else {
      ifd_input_t *in = &req->inputs[pl->index];
      in->data = ref.ptr;
      in->byte_size = ref.byte_size;
      in->mem_type = ref.mem_type;
      in->mem_id = ref.mem_id;
    }
  }
  return 0;
}

/* Continues after decoding: submits `req`, or answers the slot with the
 * decode error `rc`. Takes the slot's reference to req (s->req). */
static void submit(ifd_http_slot_t *s, ifd_request_t *req, int rc,
                   ifd_errmsg_t *err, const ifd_http_infer_info_t *info) {
  if (rc == 0) rc = check_triton_params(req, err);
  if (rc == 0 && s->fwd_n != 0)
    rc = ifd__fwd_apply(req, s->fwd, s->fwd_len, s->fwd_n, err);
  /* Shared memory is resolved here, on the loop, whichever thread decoded:
   * the region table is the loop's. */
  if (rc == 0 && info->n_shm != 0)
    rc = ifd__http_infer_resolve_shm(req, info, err);
  if (rc != 0) goto out_fail;
  s->binary_all = info->binary_all != 0;
  s->req = req;
  req->on_response = on_infer_response;
  req->cb_arg = s;
  req->trace_proto = IFD_TRACE_PROTO_HTTP;
  rc = ifd_request_submit(req, err);
  if (rc == IFD_ENOTFOUND) {
    /* No such model (version): tritonserver's 404 comes as text/plain. */
    s->req = NULL;
    ifd__http_slot_error_as(s, 404, "text/plain", err->text);
    ifd_request_unref(req);
    return;
  }
  if (rc != 0) goto out_fail;
  return;

out_fail:
  s->req = NULL; /* refused up front: no callback follows */
  reply_code(s, rc, err->text);
  ifd_request_unref(req);
}

/* tritonserver answers infer on a decoupled model with 501 before it reads
 * the body: a JSON error body under Content-Type text/plain. Returns 1 when
 * it answered (and dropped req). An unknown model is left to submit. */
static int refuse_decoupled(ifd_http_slot_t *s, ifd_request_t *req) {
  ifd_model_t *m;
  ifd_hbuf_t b;

  if (ifd_server_find_model(req->server, req->model_name,
                            strlen(req->model_name), req->model_version, &m,
                            NULL) != 0 ||
      m->config->model_transaction_policy == NULL ||
      !m->config->model_transaction_policy->decoupled)
    return 0;
  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd_hbuf_puts(&b,
                "{\"error\":\"HTTP end point doesn't support models with "
                "decoupled transaction policy\"}");
  ifd__http_slot_finish(s, 501, "text/plain", &b, NULL, 0, -1);
  ifd_request_unref(req);
  return 1;
}

void ifd__http_infer_start(ifd_http_slot_t *s, ifd_request_t *req,
                           size_t body_len, size_t json_len) {
  ifd_http_infer_info_t info;
  ifd_errmsg_t err;
  job_t *j;
  int rc;

  if (refuse_decoupled(s, req)) return;
  ifd_errclear(&err);
  if (json_len == 0) {
    /* Triton's raw binary request: no JSON (Inference-Header-Content-Length
     * 0, or an empty body without it), the body is the only input's data.
     * An unknown model is left to submit, which answers it. */
    ifd_model_t *m;
    if (ifd_server_find_model(req->server, req->model_name,
                              strlen(req->model_name), req->model_version, &m,
                              NULL) != 0) {
      memset(&info, 0, sizeof(info));
      rc = 0;
    } else {
      rc = ifd__http_infer_raw(req, m->config, m->name, req->body, body_len,
                               &info, &err);
    }
    submit(s, req, rc, &err, &info);
    return;
  }
  if (json_len >= s->json_offload && json_len <= body_len &&
      (j = calloc(1, sizeof(*j))) != NULL) {
    j->slot = s;
    j->req = req;
    j->body_len = body_len;
    j->json_len = json_len;
    ifd_errclear(&j->err);
    /* The slot holds the request while the job runs (see the top). */
    s->req = req;
    if (job_queue(ifd_server_loop(req->server), j) == 0) return;
    s->req = NULL;
    free(j);
  }
  rc = ifd__http_infer_decode(req, req->body, body_len, json_len, &info, &err);
  submit(s, req, rc, &err, &info);
}
