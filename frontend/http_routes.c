/*
 * frontend/http_routes.c - the KServe v2 / Triton REST routes.
 *
 * The matcher walks the path's segments once, without regexes or tables of
 * patterns, so routing costs O(path length). Each handler answers into the
 * message's slot: at once for health, metadata, config, the repository
 * index and unload; from the request's on_response for infer and generate;
 * once the load has ended for a model load; once the region is mapped or
 * unmapped for shared-memory register and unregister (frontend/http_shm.c).
 * Status codes come from frontend/status.c only.
 */
#include <stdio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/bufpool.h"
#include "core/model.h"
#include "core/server.h"
#include "core/metrics.h"
#include "net/conn.h"
#include "frontend/internal.h"
#include "frontend/logging.h"
#include "frontend/trace_api.h"
#include "frontend/repo_control.h"
#include "net/restrict.h"
#include "frontend/status.h"

/* ---- matching ------------------------------------------------------------ */

#define MAX_SEGS 6

static int seg_is(const char *s, size_t n, const char *lit) {
  size_t l = strlen(lit);
  return n == l && memcmp(s, lit, l) == 0;
}

/* Returns `r`, or IFD_ROUTE_BAD_METHOD; m->route keeps `r` either way. */
#define want(got, need, r) want_(m, got, need, r)
static ifd_http_route_t want_(ifd_route_match_t *m, ifd_http_method_t got,
                              ifd_http_method_t need, ifd_http_route_t r) {
  m->route = r;
  return got == need ? r : IFD_ROUTE_BAD_METHOD;
}

/* /v2/{system,cuda}sharedmemory[/region/r]/{status,register,unregister}:
 * `seg` starts after "/v2". Register needs a region; status is GET, the
 * others POST. */
static ifd_http_route_t shm_route(ifd_http_method_t method,
                                  const char *const *seg, const size_t *seglen,
                                  size_t nseg, ifd_route_match_t *m) {
  const char *act;
  size_t n;

  if (nseg == 4 && seg_is(seg[1], seglen[1], "region")) {
    m->region = seg[2];
    m->region_len = seglen[2];
  } else if (nseg != 2) {
    return IFD_ROUTE_NOT_FOUND;
  }
  act = seg[nseg - 1];
  n = seglen[nseg - 1];
  m->shm_cuda = seg[0][0] == 'c';
  if (seg_is(act, n, "status"))
    return want(method, IFD_HTTP_GET, IFD_ROUTE_SHM_STATUS);
  if (seg_is(act, n, "register") && m->region != NULL)
    return want(method, IFD_HTTP_POST, IFD_ROUTE_SHM_REGISTER);
  if (seg_is(act, n, "unregister"))
    return want(method, IFD_HTTP_POST, IFD_ROUTE_SHM_UNREGISTER);
  memset(m, 0, sizeof(*m));
  return IFD_ROUTE_NOT_FOUND;
}

ifd_http_route_t ifd__http_route(ifd_http_method_t method, const char *path,
                                 size_t len, ifd_route_match_t *m) {
  const char *seg[MAX_SEGS];
  size_t seglen[MAX_SEGS];
  size_t nseg = 0, i = 3, at = 2;

  memset(m, 0, sizeof(*m));
  if (len < 3 || memcmp(path, "/v2", 3) != 0) return IFD_ROUTE_NOT_FOUND;
  if (len == 3) return want(method, IFD_HTTP_GET, IFD_ROUTE_SERVER_META);
  /* Split "/a/b/c" after "/v2"; an empty segment ("//", trailing "/")
   * matches nothing. */
  while (i < len) {
    size_t start;
    if (path[i] != '/' || nseg == MAX_SEGS) return IFD_ROUTE_NOT_FOUND;
    start = ++i;
    while (i < len && path[i] != '/') i++;
    if (i == start) return IFD_ROUTE_NOT_FOUND;
    seg[nseg] = path + start;
    seglen[nseg++] = i - start;
  }
  if (seg_is(seg[0], seglen[0], "health")) {
    if (nseg != 2) return IFD_ROUTE_NOT_FOUND;
    if (seg_is(seg[1], seglen[1], "live"))
      return want(method, IFD_HTTP_GET, IFD_ROUTE_LIVE);
    if (seg_is(seg[1], seglen[1], "ready"))
      return want(method, IFD_HTTP_GET, IFD_ROUTE_READY);
    return IFD_ROUTE_NOT_FOUND;
  }
  if (nseg == 2 && seg_is(seg[0], seglen[0], "trace") &&
      seg_is(seg[1], seglen[1], "setting")) {
    m->route = IFD_ROUTE_TRACE;
    return method == IFD_HTTP_GET || method == IFD_HTTP_POST
               ? IFD_ROUTE_TRACE
               : IFD_ROUTE_BAD_METHOD;
  }
  if (nseg == 4 && seg_is(seg[0], seglen[0], "models") &&
      seg_is(seg[2], seglen[2], "trace") &&
      seg_is(seg[3], seglen[3], "setting")) {
    m->route = IFD_ROUTE_TRACE;
    m->model = seg[1];
    m->model_len = seglen[1];
    return method == IFD_HTTP_GET || method == IFD_HTTP_POST
               ? IFD_ROUTE_TRACE
               : IFD_ROUTE_BAD_METHOD;
  }
  if (nseg == 1 && seg_is(seg[0], seglen[0], "logging")) {
    m->route = IFD_ROUTE_LOGGING;
    return method == IFD_HTTP_GET || method == IFD_HTTP_POST
               ? IFD_ROUTE_LOGGING
               : IFD_ROUTE_BAD_METHOD;
  }
  if (seg_is(seg[0], seglen[0], "repository")) {
    if (nseg == 2 && seg_is(seg[1], seglen[1], "index"))
      return want(method, IFD_HTTP_POST, IFD_ROUTE_REPO_INDEX);
    if (nseg == 4 && seg_is(seg[1], seglen[1], "models")) {
      ifd_http_route_t r = IFD_ROUTE_NOT_FOUND;
      if (seg_is(seg[3], seglen[3], "load")) r = IFD_ROUTE_REPO_LOAD;
      if (seg_is(seg[3], seglen[3], "unload")) r = IFD_ROUTE_REPO_UNLOAD;
      if (r == IFD_ROUTE_NOT_FOUND) return r;
      m->model = seg[2];
      m->model_len = seglen[2];
      return want(method, IFD_HTTP_POST, r);
    }
    return IFD_ROUTE_NOT_FOUND;
  }
  if (seg_is(seg[0], seglen[0], "systemsharedmemory") ||
      seg_is(seg[0], seglen[0], "cudasharedmemory"))
    return shm_route(method, seg, seglen, nseg, m);
  if (!seg_is(seg[0], seglen[0], "models") || nseg < 2)
    return IFD_ROUTE_NOT_FOUND;
  /* As in tritonserver, "/v2/models/stats" is the statistics of every
   * model, not the metadata of a model named "stats". */
  if (nseg == 2 && seg_is(seg[1], seglen[1], "stats"))
    return want(method, IFD_HTTP_GET, IFD_ROUTE_ALL_STATS);
  m->model = seg[1];
  m->model_len = seglen[1];
  if (nseg >= 4 && seg_is(seg[2], seglen[2], "versions")) {
    m->version = seg[3];
    m->version_len = seglen[3];
    at = 4;
  }
  if (nseg == at) return want(method, IFD_HTTP_GET, IFD_ROUTE_MODEL_META);
  if (nseg == at + 1) {
    const char *s = seg[at];
    size_t n = seglen[at];
    if (seg_is(s, n, "ready"))
      return want(method, IFD_HTTP_GET, IFD_ROUTE_MODEL_READY);
    if (seg_is(s, n, "config"))
      return want(method, IFD_HTTP_GET, IFD_ROUTE_MODEL_CONFIG);
    if (seg_is(s, n, "infer"))
      return want(method, IFD_HTTP_POST, IFD_ROUTE_INFER);
    if (seg_is(s, n, "generate"))
      return want(method, IFD_HTTP_POST, IFD_ROUTE_GENERATE);
    if (seg_is(s, n, "generate_stream"))
      return want(method, IFD_HTTP_POST, IFD_ROUTE_GENERATE_STREAM);
    if (seg_is(s, n, "stats"))
      return want(method, IFD_HTTP_GET, IFD_ROUTE_MODEL_STATS);
  }
  memset(m, 0, sizeof(*m));
  return IFD_ROUTE_NOT_FOUND;
}

long ifd__http_url_decode(const char *s, size_t n, char *out) {
  size_t i, o = 0;

  for (i = 0; i < n; i++) {
    int hi, lo;
    if (s[i] != '%') {
      out[o++] = s[i];
      continue;
    }
    if (n - i < 3) return -1;
    hi = s[i + 1] <= '9' ? s[i + 1] - '0' : (s[i + 1] | 0x20) - 'a' + 10;
    lo = s[i + 2] <= '9' ? s[i + 2] - '0' : (s[i + 2] | 0x20) - 'a' + 10;
    if (hi < 0 || hi > 15 || lo < 0 || lo > 15) return -1;
    out[o++] = (char)(hi * 16 + lo);
    i += 2;
  }
  return (long)o;
}

/* ---- simple answers ------------------------------------------------------ */

/* Sends `b` (a JSON body) with 200, or 500 when writing it ran out of
 * memory. Takes b's memory. */
static void reply_body(ifd_http_slot_t *s, ifd_hbuf_t *b) {
  if (b->oom) {
    ifd_hbuf_free(b);
    ifd__http_slot_error(s, 500, "out of memory");
    return;
  }
  ifd__http_slot_finish(s, 200, "application/json", b, NULL, 0, -1);
}

/* The model configuration is the inference.ModelConfig message itself; its
 * JSON form (protobuf's JSON mapping with Triton's field order) is the one
 * TRITONBACKEND_ModelConfig hands to backends too (ifd_config_to_json). */
static void reply_config(ifd_http_slot_t *s, const ifd_model_t *m) {
  ifd_hbuf_t b;

  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd__json_model_config(&b, m);
  reply_body(s, &b);
}

static void reply_server_meta(ifd_server_t *srv, ifd_http_slot_t *s) {
  ifd_hbuf_t b;

  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd__json_server_info(&b, ifd_server_metadata(srv));
  reply_body(s, &b);
}

static void reply_model_meta(ifd_server_t *srv, ifd_http_slot_t *s,
                             const ifd_model_t *m) {
  ifd_model_info_t info;
  ifd_hbuf_t b;

  if (ifd_server_model_metadata(srv, m, &info) != 0) {
    ifd__http_slot_error(s, 500, "out of memory");
    return;
  }
  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd__json_model_info(&b, &info);
  ifd_model_info_free(&info);
  reply_body(s, &b);
}

/* Health and readiness answer with an empty body, as tritonserver does. */
static void reply_empty(ifd_http_slot_t *s, int status) {
  ifd_hbuf_t b;

  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd__http_slot_finish(s, status, "text/plain", &b, NULL, 0, -1);
}

static void reply_code(ifd_http_slot_t *s, int code, const char *msg) {
  ifd__http_slot_error(s, ifd__http_slot_status(s, code),
                       msg[0] != '\0' ? msg : ifd_strerror(code));
}

/* Resolves the model of a metadata/config route. Returns 0 and *out, or
 * answers the slot and returns the error. */
static int find_model(ifd_server_t *srv, ifd_http_slot_t *s,
                      const ifd_route_match_t *m, ifd_model_t **out) {
  char name[512];
  long n = m->model_len <= sizeof(name)
               ? ifd__http_url_decode(m->model, m->model_len, name)
               : -1;
  int64_t version = -1;
  ifd_errmsg_t err;
  int rc;

  ifd_errclear(&err);
  if (n < 0) {
    ifd__http_slot_error(s, 400, "malformed model name in the URL");
    return IFD_EINVAL;
  }
  if (m->version != NULL &&
      ifd_parse_version(m->version, m->version_len, &version) != 0) {
    ifd__http_slot_error(s, 400, "malformed model version in the URL");
    return IFD_EINVAL;
  }
  rc = ifd_server_find_model(srv, name, (size_t)n, version, out, &err);
  if (rc != 0) reply_code(s, rc, err.text);
  return rc;
}

static void route_model_ready(ifd_server_t *srv, ifd_http_slot_t *s,
                              const ifd_route_match_t *m) {
  char name[512];
  long n = m->model_len <= sizeof(name)
               ? ifd__http_url_decode(m->model, m->model_len, name)
               : -1;
  int64_t version = -1;

  if (n < 0 || (m->version != NULL &&
                ifd_parse_version(m->version, m->version_len, &version) != 0)) {
    ifd__http_slot_error(s, 400, "malformed model name or version in the URL");
    return;
  }
  if (ifd_server_model_ready(srv, name, (size_t)n, version))
    reply_empty(s, 200);
  else
    ifd__http_slot_error(s, 400, "Model version not ready");
}

static void route_repo_index(ifd_server_t *srv, ifd_http_slot_t *s,
                             const char *body, size_t len) {
  ifd_index_entry_t *rows;
  ifd_hbuf_t b;
  size_t n;
  int ready_only = 0;

  if (len != 0) {
    json_error_t jerr;
    json_t *root = json_loadb(body, len, 0, &jerr), *r;
    if (!json_is_object(root)) {
      json_decref(root);
      ifd__http_slot_error(
          s, 400,
          "failed to parse the request JSON buffer: expected an object");
      return;
    }
    r = json_object_get(root, "ready");
    if (r != NULL && !json_is_boolean(r)) {
      json_decref(root);
      ifd__http_slot_error(s, 400,
                           "Unable to parse 'ready': expected a boolean");
      return;
    }
    ready_only = json_is_true(r);
    json_decref(root);
  }
  if (ifd_server_repository_index(srv, ready_only, &rows, &n) != 0) {
    ifd__http_slot_error(s, 500, "out of memory");
    return;
  }
  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd__json_repo_index(&b, rows, n);
  free(rows);
  reply_body(s, &b);
}

/* ---- model control ---------------------------------------------------------
 *
 * Load answers once the load has ended: the slot waits meanwhile (later
 * slots of the connection wait behind it, in order). Should the connection
 * close first, http1.c forgets the call (ifd_load_call_forget) and frees
 * the slot; the load itself goes on. Unload answers as soon as the unload
 * has begun, as tritonserver does. Both answer 200 with an empty JSON body.
 */

static void reply_done(ifd_http_slot_t *s) {
  ifd_hbuf_t b;

  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd__http_slot_finish(s, 200, "application/json", &b, NULL, 0, -1);
}

/* Decodes the model name of a control route into `name` (room for `cap`
 * bytes, NUL included). Returns its length, or -1 after answering 400. */
static long control_name(ifd_http_slot_t *s, const ifd_route_match_t *m,
                         char *name, size_t cap) {
  long n = m->model_len < cap
               ? ifd__http_url_decode(m->model, m->model_len, name)
               : -1;

  if (n < 0) {
    ifd__http_slot_error(s, 400, "malformed model name in the URL");
    return -1;
  }
  name[n] = '\0';
  return n;
}

static void on_load_done(int rc, const char *msg, void *arg) {
  ifd_http_slot_t *s = arg; /* still in its connection's FIFO */

  s->load = NULL;
  if (rc == 0)
    reply_done(s);
  else
    reply_code(s, rc, msg != NULL ? msg : "");
}

static void route_repo_load(ifd_server_t *srv, ifd_http_slot_t *s,
                            const ifd_route_match_t *m, ifd_http_msg_t *msg) {
  char name[512];
  ifd_load_req_t lr;
  ifd_errmsg_t err;
  long n = control_name(s, m, name, sizeof(name));
  int rc;

  if (n < 0) return;
  ifd_errclear(&err);
  rc = ifd__load_req_from_json(msg->body, msg->body_len, &lr, &err);
  if (rc == 0) {
    /* The call copies the parameters: the body may go right after. */
    rc = ifd_server_load_model(srv, name, (size_t)n, &lr.params, on_load_done,
                               s, &s->load, &err);
    ifd__load_req_free(&lr);
  }
  if (rc != 0) {
    s->load = NULL;
    reply_code(s, rc, err.text);
  }
}

static void route_repo_unload(ifd_server_t *srv, ifd_http_slot_t *s,
                              const ifd_route_match_t *m, ifd_http_msg_t *msg) {
  char name[512];
  ifd_errmsg_t err;
  long n = control_name(s, m, name, sizeof(name));
  int dependents, rc;

  if (n < 0) return;
  ifd_errclear(&err);
  rc = ifd__unload_req_from_json(msg->body, msg->body_len, &dependents, &err);
  if (rc == 0)
    rc = ifd_server_unload_model(srv, name, (size_t)n, dependents, &err);
  if (rc != 0)
    reply_code(s, rc, err.text);
  else
    reply_done(s);
}

/* ---- metrics ----------------------------------------------------------------
 */

/* The connection layer's counters (net/conn.h), by protocol label. */
static void put_conn_metrics(ifd_hbuf_t *b) {
  static const char *const limit_names[IFD_CONN_LIMIT_N] = {
      "header_too_large", "too_many_headers", "header_timeout", "body_timeout",
      "idle_timeout"};
  size_t n, i, k;
  const ifd_conn_stats_t *st = ifd__conn_stats(&n);

  if (n == 0) return;
  ifd_hbuf_puts(b,
                "# HELP inferd_connections_open Connections open now, by "
                "listener.\n# TYPE inferd_connections_open gauge\n");
  for (i = 0; i < n; i++)
    ifd_hbuf_printf(b, "inferd_connections_open{protocol=\"%s\"} %" PRIu64 "\n",
                    st[i].label, st[i].open);
  ifd_hbuf_puts(b,
                "# HELP inferd_connections_accepted_total Connections "
                "accepted and served.\n"
                "# TYPE inferd_connections_accepted_total counter\n");
  for (i = 0; i < n; i++)
    ifd_hbuf_printf(b,
                    "inferd_connections_accepted_total{protocol=\"%s\"} "
                    "%" PRIu64 "\n",
                    st[i].label, st[i].accepted);
  ifd_hbuf_puts(b,
                "# HELP inferd_connections_rejected_total Connections "
                "closed as soon as accepted (--max-connections, out of "
                "memory).\n"
                "# TYPE inferd_connections_rejected_total counter\n");
  for (i = 0; i < n; i++)
    ifd_hbuf_printf(
        b,
        "inferd_connections_rejected_total{protocol=\"%s\",reason=\"max_"
        "connections\"} %" PRIu64
        "\ninferd_connections_rejected_total{protocol=\"%s\",reason=\"out_"
        "of_memory\"} %" PRIu64 "\n",
        st[i].label, st[i].rejected_max, st[i].label, st[i].rejected_nomem);
  ifd_hbuf_puts(b,
                "# HELP inferd_accept_paused_total Times accepting paused "
                "because the process was out of file descriptors.\n"
                "# TYPE inferd_accept_paused_total counter\n");
  for (i = 0; i < n; i++)
    ifd_hbuf_printf(b,
                    "inferd_accept_paused_total{protocol=\"%s\"} %" PRIu64 "\n",
                    st[i].label, st[i].fd_pauses);
  ifd_hbuf_puts(b,
                "# HELP inferd_connections_closed_total Connections closed "
                "on a limit or timeout.\n"
                "# TYPE inferd_connections_closed_total counter\n");
  for (i = 0; i < n; i++)
    for (k = 0; k < IFD_CONN_LIMIT_N; k++)
      ifd_hbuf_printf(b,
                      "inferd_connections_closed_total{protocol=\"%s\","
                      "reason=\"%s\"} %" PRIu64 "\n",
                      st[i].label, limit_names[k], st[i].closed[k]);
}

/* The metrics listener answers GET /metrics only, in Prometheus' text
 * exposition format. */
static void route_metrics(ifd_server_t *srv, ifd_http_slot_t *s,
                          const struct ifd_metrics *mx, ifd_http_msg_t *msg) {
  if (msg->path_len != 8 || memcmp(msg->path, "/metrics", 8) != 0) {
    ifd__http_slot_error(s, 404, "Not Found");
    return;
  }
  if (msg->method != IFD_HTTP_GET) {
    ifd__http_slot_error(s, 405, "Method Not Allowed");
    return;
  }
  ifd__http_reply_metrics(srv, s, mx);
}

void ifd__http_reply_metrics(ifd_server_t *srv, ifd_http_slot_t *s,
                             const struct ifd_metrics *mx) {
  ifd_hbuf_t b;
  size_t len;
  char *text;

  text = ifd_metrics_text(srv, mx, &len);
  if (text == NULL) {
    ifd__http_slot_error(s, 500, "out of memory");
    return;
  }
  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd_hbuf_put(&b, text, len);
  free(text);
  put_conn_metrics(&b);
  ifd__http_slot_finish(s, 200, "text/plain; charset=utf-8; version=0.0.4", &b,
                        NULL, 0, -1);
}

/* ---- statistics -----------------------------------------------------------
 */

static void route_stats(ifd_server_t *srv, ifd_http_slot_t *s,
                        const ifd_route_match_t *m) {
  char name[512];
  int64_t version = -1;
  ifd_stats_entry_t *rows;
  ifd_errmsg_t err;
  ifd_hbuf_t b;
  size_t n_rows;
  long n = 0;
  int rc;

  ifd_errclear(&err);
  if (m->model != NULL) {
    n = m->model_len < sizeof(name)
            ? ifd__http_url_decode(m->model, m->model_len, name)
            : -1;
    if (n < 0) {
      ifd__http_slot_error(s, 400, "malformed model name in the URL");
      return;
    }
    if (m->version != NULL &&
        ifd_parse_version(m->version, m->version_len, &version) != 0) {
      ifd__http_slot_error(s, 400, "malformed model version in the URL");
      return;
    }
  }
  rc = ifd_server_stats(srv, m->model != NULL ? name : NULL, (size_t)n, version,
                        &rows, &n_rows, &err);
  if (rc < 0) {
    reply_code(s, rc, err.text);
    return;
  }
  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd__json_stats(&b, rows, n_rows);
  free(rows);
  reply_body(s, &b);
}

/* ---- infer -----------------------------------------------------------------
 */

/* A request for the model the URL names, owning the message's body; NULL
 * after answering the slot. */
static ifd_request_t *url_request(ifd_server_t *srv, ifd_http_slot_t *s,
                                  const ifd_route_match_t *m,
                                  ifd_http_msg_t *msg) {
  ifd_errmsg_t err;
  ifd_request_t *req;
  char *name;
  long n;
  int rc;

  ifd_errclear(&err);
  req = ifd_request_new(srv);
  if (req == NULL) {
    ifd_bufpool_put(msg->body);
    msg->body = NULL;
    ifd__http_slot_error(s, 500, "out of memory");
    return NULL;
  }
  req->body = msg->body; /* the request owns the bytes its inputs point into */
  req->body_in_bufpool = 1; /* the transport's (net/http1.h) */
  msg->body = NULL;
  req->t_received = msg->t_received;
  name = ifd_pool_alloc(&req->pool, m->model_len + 1);
  n = name != NULL ? ifd__http_url_decode(m->model, m->model_len, name) : -1;
  if (n < 0) {
    rc = ifd_errf(&err, name != NULL ? IFD_EINVAL : IFD_ENOMEM,
                  "malformed model name in the URL");
    goto out_fail;
  }
  name[n] = '\0';
  req->model_name = name;
  req->model_version = -1;
  if (m->version != NULL &&
      ifd_parse_version(m->version, m->version_len, &req->model_version) != 0) {
    rc = ifd_errf(&err, IFD_EINVAL, "malformed model version in the URL");
    goto out_fail;
  }
  return req;

out_fail:
  reply_code(s, rc, err.text);
  ifd_request_unref(req);
  return NULL;
}

static void route_infer(ifd_server_t *srv, ifd_http_slot_t *s,
                        const ifd_route_match_t *m, ifd_http_msg_t *msg) {
  size_t body_len = msg->body_len;
  size_t json_len = msg->has_header_len ? msg->header_len : msg->body_len;
  ifd_request_t *req = url_request(srv, s, m, msg);

  if (req == NULL) return;
  /* Headers to forward: kept in the request's pool until its parameters
   * are decoded (maybe on the thread pool), then appended (submit). */
  if (msg->fwd_n != 0) {
    char *f = ifd_pool_alloc(&req->pool, msg->fwd_len);
    if (f == NULL) {
      reply_code(s, IFD_ENOMEM, "out of memory");
      ifd_request_unref(req);
      return;
    }
    memcpy(f, msg->fwd, msg->fwd_len);
    s->fwd = f;
    s->fwd_len = msg->fwd_len;
    s->fwd_n = msg->fwd_n;
  }
  ifd__http_infer_start(s, req, body_len, json_len);
}

/* The generate extension (frontend/http_generate.c). */
static void route_generate(ifd_server_t *srv, ifd_http_slot_t *s,
                           const ifd_route_match_t *m, ifd_http_msg_t *msg,
                           int stream) {
  size_t body_len = msg->body_len;
  ifd_request_t *req = url_request(srv, s, m, msg);

  if (req != NULL) ifd__http_generate_start(s, req, body_len, stream);
}

/* ---- restricted APIs ---------------------------------------------------- */

/* Triton's API group of each route (--http-restricted-api). */
static ifd_api_group_t route_group(ifd_http_route_t r) {
  switch (r) {
    case IFD_ROUTE_LIVE:
    case IFD_ROUTE_READY:
    case IFD_ROUTE_MODEL_READY:
      return IFD_API_HEALTH;
    case IFD_ROUTE_SERVER_META:
    case IFD_ROUTE_MODEL_META:
      return IFD_API_METADATA;
    case IFD_ROUTE_MODEL_CONFIG:
      return IFD_API_MODEL_CONFIG;
    case IFD_ROUTE_INFER:
    case IFD_ROUTE_GENERATE:
    case IFD_ROUTE_GENERATE_STREAM:
      return IFD_API_INFERENCE;
    case IFD_ROUTE_REPO_INDEX:
    case IFD_ROUTE_REPO_LOAD:
    case IFD_ROUTE_REPO_UNLOAD:
      return IFD_API_MODEL_REPOSITORY;
    case IFD_ROUTE_ALL_STATS:
    case IFD_ROUTE_MODEL_STATS:
      return IFD_API_STATISTICS;
    case IFD_ROUTE_SHM_STATUS:
    case IFD_ROUTE_SHM_REGISTER:
    case IFD_ROUTE_SHM_UNREGISTER:
      return IFD_API_SHARED_MEMORY;
    case IFD_ROUTE_LOGGING:
      return IFD_API_LOGGING;
    case IFD_ROUTE_TRACE:
      return IFD_API_TRACE;
    case IFD_ROUTE_NOT_FOUND:
    case IFD_ROUTE_BAD_METHOD:
      break;
  }
  return IFD_API_NONE;
}

/* Answers 403 when the route's group is restricted and the request lacks
 * its header: Triton's answer, a JSON error sent as text/plain. Returns 1
 * when it answered. As in Triton, this comes before the method check. */
static int refuse_restricted(ifd_http_t *h, ifd_http_slot_t *s,
                             const ifd_http_msg_t *msg,
                             const ifd_route_match_t *m) {
  const ifd_restrict_t *rs = ifd__http_restrict(h);
  ifd_api_group_t g = route_group(m->route);
  char text[300];
  ifd_hbuf_t b;

  if (!ifd_restrict_on(rs, g) || ((msg->restrict_ok >> g) & 1u)) return 0;
  snprintf(text, sizeof(text),
           "This API is restricted, expecting header '%.200s'",
           ifd_restrict_header(rs, g));
  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd_hbuf_puts(&b, "{\"error\":");
  ifd_json_str(&b, text, strlen(text));
  ifd_hbuf_puts(&b, "}");
  ifd__http_slot_finish(s, 403, "text/plain", &b, NULL, 0, -1);
  return 1;
}

int ifd__http_refuse_restricted(ifd_http_t *h, ifd_http_slot_t *s,
                                const ifd_http_msg_t *msg,
                                ifd_http_route_t route) {
  ifd_route_match_t m;

  memset(&m, 0, sizeof(m));
  m.route = route;
  return refuse_restricted(h, s, msg, &m);
}

/* ---- dispatch
 * ---------------------------------------------------------------- */

void ifd__http_dispatch(ifd_http_t *h, ifd_http_slot_t *s,
                        ifd_http_msg_t *msg) {
  const ifd_http_cloud_t *cloud = ifd__http_cloud(h);
  ifd_route_match_t m;
  ifd_http_route_t r;

  {
    int metrics_only;
    const struct ifd_metrics *mx = ifd__http_metrics(h, &metrics_only);
    if (metrics_only) {
      route_metrics(ifd__http_server(h), s, mx, msg);
      ifd_bufpool_put(msg->body);
      msg->body = NULL;
      return;
    }
  }
  if (cloud != NULL) {
    ifd__http_cloud_dispatch(h, cloud, s, msg);
    return;
  }
  r = ifd__http_route(msg->method, msg->path, msg->path_len, &m);
  ifd__http_run_route(h, s, msg, r, &m);
}

void ifd__http_run_route(ifd_http_t *h, ifd_http_slot_t *s, ifd_http_msg_t *msg,
                         ifd_http_route_t r, const ifd_route_match_t *m) {
  ifd_server_t *srv = ifd__http_server(h);
  ifd_model_t *model;

  if (refuse_restricted(h, s, msg, m)) {
    ifd_bufpool_put(msg->body);
    msg->body = NULL;
    return;
  }
  switch (r) {
    case IFD_ROUTE_NOT_FOUND:
      ifd__http_slot_error(s, 404, "Not Found");
      break;
    case IFD_ROUTE_BAD_METHOD:
      ifd__http_slot_error(s, 405, "Method Not Allowed");
      break;
    case IFD_ROUTE_SERVER_META:
      reply_server_meta(srv, s);
      break;
    case IFD_ROUTE_LIVE:
      reply_empty(s, ifd_server_live(srv) ? 200 : 400);
      break;
    case IFD_ROUTE_READY:
      reply_empty(s, ifd_server_ready(srv) ? 200 : 400);
      break;
    case IFD_ROUTE_MODEL_META:
      if (find_model(srv, s, m, &model) == 0) reply_model_meta(srv, s, model);
      break;
    case IFD_ROUTE_MODEL_CONFIG:
      if (find_model(srv, s, m, &model) == 0) reply_config(s, model);
      break;
    case IFD_ROUTE_MODEL_READY:
      route_model_ready(srv, s, m);
      break;
    case IFD_ROUTE_REPO_INDEX:
      route_repo_index(srv, s, msg->body, msg->body_len);
      break;
    case IFD_ROUTE_REPO_LOAD:
      route_repo_load(srv, s, m, msg);
      break;
    case IFD_ROUTE_REPO_UNLOAD:
      route_repo_unload(srv, s, m, msg);
      break;
    case IFD_ROUTE_INFER:
      route_infer(srv, s, m, msg);
      break;
    case IFD_ROUTE_GENERATE:
    case IFD_ROUTE_GENERATE_STREAM:
      route_generate(srv, s, m, msg, r == IFD_ROUTE_GENERATE_STREAM);
      break;
    case IFD_ROUTE_ALL_STATS:
    case IFD_ROUTE_MODEL_STATS:
      route_stats(srv, s, m);
      break;
    case IFD_ROUTE_SHM_STATUS:
    case IFD_ROUTE_SHM_REGISTER:
    case IFD_ROUTE_SHM_UNREGISTER:
      ifd__http_shm_route(srv, s, m, msg);
      break;
    case IFD_ROUTE_LOGGING:
      ifd__http_logging(s, msg);
      break;
    case IFD_ROUTE_TRACE:
      ifd__http_trace(srv, s, m, msg);
      break;
  }
  ifd_bufpool_put(msg->body); /* NULL when a request took it */
  msg->body = NULL;
}
