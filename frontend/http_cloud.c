/*
 * frontend/http_cloud.c - the SageMaker and Vertex AI endpoints: tritonserver's
 * two cloud front ends, each one more HTTP/1.1 listener on the loop (made
 * by ifd_http_start with opts.cloud set) whose paths map onto the KServe v2
 * handlers of frontend/http_routes.c. Nothing here parses or infers: a path is
 * matched, the route and its model chosen, and ifd__http_run_route answers.
 *
 * SageMaker (--allow-sagemaker):
 *   GET  /ping         readiness (liveness with SAGEMAKER_TRITON_PING_MODE
 *                      =live): 200, or 400, with an empty body
 *   POST /invocations  infer on SAGEMAKER_TRITON_DEFAULT_MODEL_NAME
 *   /models[...]       the multi-model endpoint (load, list, get, unload:
 *                      frontend/http_mme.c; /models/<name>/invoke here)
 *   anything else      400 with an empty body
 * Vertex AI (--allow-vertex-ai, AIP_MODE=PREDICTION):
 *   GET  <AIP_HEALTH_ROUTE>   readiness, as /ping
 *   POST <AIP_PREDICT_ROUTE>  infer on the default model; with the header
 *        X-Vertex-Ai-Triton-Redirect: <path> the request goes to that
 *        KServe v2 route instead (only POST is taken; the route's own
 *        method is then assumed), or to /metrics
 *   anything else             400 with an empty body
 * On both, a binary infer body gives its JSON size in the media type
 * ("application/vnd.sagemaker-triton.binary+json;json-header-size=N", resp.
 * "vnd.vertex-ai-triton"), which replaces Inference-Header-Content-Length;
 * SageMaker answers a binary body the same way.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bufpool.h"
#include "frontend/internal.h"

static const char sagemaker_binary[] =
    "application/vnd.sagemaker-triton.binary+json;json-header-size=";
static const char vertex_binary[] =
    "application/vnd.vertex-ai-triton.binary+json;json-header-size=";

/* Answers `status` with an empty body, as evhtp_send_reply does. */
static void reply_status(ifd_http_slot_t *s, int status) {
  ifd_hbuf_t b;

  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd__http_slot_finish(s, status, NULL, &b, NULL, 0, -1);
}

static int path_is(const ifd_http_msg_t *msg, const char *p) {
  size_t n = strlen(p);
  return msg->path_len == n && memcmp(msg->path, p, n) == 0;
}

/* Finds `needle` (n bytes) in `hay` (len bytes); -1 when absent. */
static long find_mem(const char *hay, size_t len, const char *needle,
                     size_t n) {
  size_t i;

  for (i = 0; n <= len && i <= len - n; i++)
    if (memcmp(hay + i, needle, n) == 0) return (long)i;
  return -1;
}

/* The JSON size of an infer body, as tritonserver's cloud endpoints read
 * it: the whole body, unless Content-Type carries `mime` (the binary
 * extension's media type, followed by the size). Sets msg->header_len and
 * returns 0, or answers 400 with Triton's text and returns -1. */
static int header_len_of(ifd_http_slot_t *s, ifd_http_msg_t *msg,
                         const char *mime) {
  const ifd_http_cloud_hdrs_t *ch = msg->cloud;
  size_t mlen = strlen(mime);
  char text[IFD_HTTP_CLOUD_HDR_MAX + 256], num[IFD_HTTP_CLOUD_HDR_MAX + 1];
  long pos, long_v = 0;
  const char *p;
  int neg = 0;

  msg->has_header_len = 1;
  msg->header_len = msg->body_len;
  if (ch == NULL || !ch->has_ctype) return 0;
  pos = find_mem(ch->ctype, ch->ctype_len, mime, mlen);
  if (pos < 0) return 0;
  if (pos != 0) {
    snprintf(text, sizeof(text),
             "expect MIME type for binary data starts with '%s', got: %.*s",
             mime, (int)ch->ctype_len, ch->ctype);
    ifd__http_slot_error(s, 400, text);
    return -1;
  }
  /* atoi(): blanks, a sign, digits; anything after them is ignored. */
  memcpy(num, ch->ctype + mlen, ch->ctype_len - mlen);
  num[ch->ctype_len - mlen] = '\0';
  p = num;
  while (isspace((unsigned char)*p)) p++;
  if (*p == '+' || *p == '-') neg = *p++ == '-';
  while (isdigit((unsigned char)*p) && long_v <= (long)msg->body_len)
    long_v = long_v * 10 + (*p++ - '0');
  if (neg) long_v = -long_v;
  if (long_v < 0 || (size_t)long_v > msg->body_len) {
    snprintf(text, sizeof(text),
             "inference header size should be in range (0, %zu), got: %s",
             msg->body_len, num);
    ifd__http_slot_error(s, 400, text);
    return -1;
  }
  msg->header_len = (uint64_t)long_v;
  return 0;
}

/* POST: infer on `model`, the body's JSON size read from `mime`. */
static void infer_on(ifd_http_t *h, ifd_http_slot_t *s, ifd_http_msg_t *msg,
                     const char *model, const char *mime) {
  ifd_route_match_t m;

  memset(&m, 0, sizeof(m));
  m.route = IFD_ROUTE_INFER;
  m.model = model;
  m.model_len = strlen(model);
  if (msg->method != IFD_HTTP_POST) {
    ifd__http_run_route(h, s, msg, IFD_ROUTE_BAD_METHOD, &m);
    return;
  }
  if (header_len_of(s, msg, mime) != 0) {
    ifd_bufpool_put(msg->body);
    msg->body = NULL;
    return;
  }
  ifd__http_run_route(h, s, msg, IFD_ROUTE_INFER, &m);
}

/* GET: server readiness (or liveness); 405 for another method. */
static void health(ifd_http_t *h, ifd_http_slot_t *s, ifd_http_msg_t *msg,
                   int live) {
  ifd_route_match_t m;
  ifd_http_route_t r = live ? IFD_ROUTE_LIVE : IFD_ROUTE_READY;

  memset(&m, 0, sizeof(m));
  m.route = r;
  ifd__http_run_route(
      h, s, msg, msg->method == IFD_HTTP_GET ? r : IFD_ROUTE_BAD_METHOD, &m);
}

/* /models, /models/<name>, /models/<name>/invoke (SageMaker's multi-model
 * endpoint), as tritonserver's pattern "/models(?:/)?([^/]+)?(/invoke)?"
 * matches them: 0 when the path is none of them, else 1 with *named (a
 * model name is there) and *invoke. */
static int is_mme_path(const ifd_http_msg_t *msg, int *named, int *invoke) {
  const char *p = msg->path, *end = msg->path + msg->path_len, *name;

  *named = *invoke = 0;
  if (msg->path_len < 7 || memcmp(p, "/models", 7) != 0) return 0;
  p += 7;
  if (p == end) return 1;
  if (*p == '/') p++;
  name = p;
  while (p < end && *p != '/') p++;
  *named = p > name;
  if (p == end) return 1;
  *invoke = end - p == 7 && memcmp(p, "/invoke", 7) == 0;
  return *invoke;
}

/* POST /models/<name>/invoke: infer on the model loaded as <name> (or on
 * the X-Amzn-SageMaker-Target-Model header's), 404 when none was. */
static void mme_invoke(ifd_http_t *h, ifd_http_slot_t *s, ifd_http_msg_t *msg) {
  const ifd_http_cloud_hdrs_t *ch = msg->cloud;
  const char *name = msg->path + 7, *end = msg->path + msg->path_len;
  char target[IFD_HTTP_CLOUD_HDR_MAX + 1];
  size_t n = 0;

  if (name < end && *name == '/') name++;
  while (name + n < end && name[n] != '/') n++;
  if (!ifd__http_mme_has(h, name, n) || n > IFD_HTTP_CLOUD_HDR_MAX) {
    reply_status(s, 404);
    ifd_bufpool_put(msg->body);
    msg->body = NULL;
    return;
  }
  if (ch != NULL && ch->has_target) {
    memcpy(target, ch->target, ch->target_len);
    target[ch->target_len] = '\0';
  } else {
    memcpy(target, name, n);
    target[n] = '\0';
  }
  s->sagemaker = 1;
  infer_on(h, s, msg, target, sagemaker_binary);
}

static void sagemaker(ifd_http_t *h, const ifd_http_cloud_t *c,
                      ifd_http_slot_t *s, ifd_http_msg_t *msg) {
  int named, invoke;

  if (path_is(msg, "/ping")) {
    health(h, s, msg, c->ping_live);
  } else if (path_is(msg, "/invocations")) {
    s->sagemaker = 1;
    infer_on(h, s, msg, c->model, sagemaker_binary);
    return;
  } else if (is_mme_path(msg, &named, &invoke)) {
    if (msg->method == IFD_HTTP_POST && invoke) {
      mme_invoke(h, s, msg);
      return;
    }
    ifd__http_mme(h, c, s, msg, named, invoke);
  } else {
    reply_status(s, 400);
  }
  ifd_bufpool_put(msg->body);
  msg->body = NULL;
}

/* The routes a redirect may reach, with the method tritonserver assumes
 * for them; 0: not reachable. */
static int redirectable(ifd_http_route_t r) {
  switch (r) {
    case IFD_ROUTE_SERVER_META:
    case IFD_ROUTE_LIVE:
    case IFD_ROUTE_READY:
    case IFD_ROUTE_MODEL_META:
    case IFD_ROUTE_MODEL_READY:
    case IFD_ROUTE_MODEL_CONFIG:
    case IFD_ROUTE_ALL_STATS:
    case IFD_ROUTE_MODEL_STATS:
    case IFD_ROUTE_SHM_STATUS:
    case IFD_ROUTE_INFER:
    case IFD_ROUTE_SHM_REGISTER:
    case IFD_ROUTE_SHM_UNREGISTER:
    case IFD_ROUTE_REPO_INDEX:
    case IFD_ROUTE_REPO_LOAD:
    case IFD_ROUTE_REPO_UNLOAD:
      return 1;
    default:
      return 0;
  }
}

/* X-Vertex-Ai-Triton-Redirect: the request goes to "/<value>". */
static void redirect(ifd_http_t *h, ifd_http_slot_t *s, ifd_http_msg_t *msg) {
  const ifd_http_cloud_hdrs_t *ch = msg->cloud;
  char path[IFD_HTTP_CLOUD_HDR_MAX + 1];
  ifd_route_match_t m;
  ifd_http_route_t r;
  size_t n = ch->redirect_len;

  if (msg->method != IFD_HTTP_POST) {
    reply_status(s, 405);
    goto out_free;
  }
  path[0] = '/';
  memcpy(path + 1, ch->redirect, n);
  path[n + 1] = '\0';
  if (n + 1 == 8 && memcmp(path, "/metrics", 8) == 0) {
    int metrics_only;
    const struct ifd_metrics *mx = ifd__http_metrics(h, &metrics_only);
    if (mx == NULL)
      reply_status(s, 400); /* metrics are off */
    else
      ifd__http_reply_metrics(ifd__http_server(h), s, mx);
    goto out_free;
  }
  r = ifd__http_route(IFD_HTTP_POST, path, n + 1, &m);
  if (r != IFD_ROUTE_NOT_FOUND) r = m.route; /* whatever the method */
  if (r == IFD_ROUTE_NOT_FOUND || !redirectable(r)) {
    reply_status(s, 400);
    goto out_free;
  }
  if (r == IFD_ROUTE_INFER && header_len_of(s, msg, vertex_binary) != 0)
    goto out_free;
  /* Route handlers read the method of a few routes (GET, not POST). */
  msg->method = r == IFD_ROUTE_INFER || r == IFD_ROUTE_SHM_REGISTER ||
                        r == IFD_ROUTE_SHM_UNREGISTER ||
                        r == IFD_ROUTE_REPO_INDEX || r == IFD_ROUTE_REPO_LOAD ||
                        r == IFD_ROUTE_REPO_UNLOAD
                    ? IFD_HTTP_POST
                    : IFD_HTTP_GET;
  msg->path = path;
  msg->path_len = n + 1;
  ifd__http_run_route(h, s, msg, r, &m);
  return;

out_free:
  ifd_bufpool_put(msg->body);
  msg->body = NULL;
}

static void vertex_ai(ifd_http_t *h, const ifd_http_cloud_t *c,
                      ifd_http_slot_t *s, ifd_http_msg_t *msg) {
  if (path_is(msg, c->health_route)) {
    health(h, s, msg, 0);
    ifd_bufpool_put(msg->body);
    msg->body = NULL;
  } else if (path_is(msg, c->predict_route)) {
    if (msg->cloud != NULL && msg->cloud->has_redirect)
      redirect(h, s, msg);
    else
      infer_on(h, s, msg, c->model, vertex_binary);
  } else {
    reply_status(s, 400);
    ifd_bufpool_put(msg->body);
    msg->body = NULL;
  }
}

void ifd__http_cloud_dispatch(ifd_http_t *h, const ifd_http_cloud_t *cloud,
                              ifd_http_slot_t *s, ifd_http_msg_t *msg) {
  if (msg->cloud != NULL && msg->cloud->too_long) {
    char text[96];
    snprintf(text, sizeof(text),
             "a Content-Type or X-Vertex-Ai-Triton-Redirect header longer "
             "than %d bytes",
             IFD_HTTP_CLOUD_HDR_MAX);
    ifd__http_slot_error(s, 400, text);
    ifd_bufpool_put(msg->body);
    msg->body = NULL;
    return;
  }
  if (cloud->kind == IFD_HTTP_CLOUD_SAGEMAKER)
    sagemaker(h, cloud, s, msg);
  else
    vertex_ai(h, cloud, s, msg);
}
