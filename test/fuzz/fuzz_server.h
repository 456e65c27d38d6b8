/*
 * test/fuzz/fuzz_server.h - the fixture the transport fuzz targets share: a
 * real server on test/models/repo whose models run on fake operations (an
 * identity "backend" answered through the completion queue on the loop, so
 * no thread runs a model and every input is handled the same way), and a
 * driver that serves one connection per input over a socketpair.
 *
 * The driver adopts one end of the pair as an accepted connection
 * (ifd__conn_set_adopt, the seam in net/conn.c), opens the other end as a
 * libuv pipe, writes the input there, runs the loop until the answers stop
 * coming, then shuts down the write side (also after the server's EOF: a
 * server that closed first lingers until the client's FIN) and runs the
 * loop until the server has closed the connection. It reads every answer (so a
 * large one never stalls the server), keeping the first bytes, or all of them
 * when fz_capture is set. A connection that stays open after the client's EOF
 * hangs the target, which libFuzzer reports as a timeout (a unit test sets
 * fz_guard_ms instead).
 *
 * Included by the transport fuzz targets and test/unit/test_oom.c
 * (everything is static). The repository path is $IFD_FUZZ_REPO, or
 * test/models/repo from the repository root (where `make fuzz` and the
 * unit tests run).
 */
#ifndef IFD_TEST_FUZZ_SERVER_H
#define IFD_TEST_FUZZ_SERVER_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "core/infer.h"
#include "base/log.h"
#include "core/model.h"
#include "core/server.h"
#include "net/conn.h"
#include "triton/core/tritonserver.h"

/* ---- fake model operations: identity ----------------------------------- */

static inline int fz_load(ifd_model_t *m, ifd_errmsg_t *err) {
  if (strncmp(m->name, "broken", 6) == 0)
    return ifd_errf(err, IFD_EINVAL, "backend refused '%s'", m->name);
  return 0;
}
static inline void fz_unload(ifd_model_t *m) {
  (void)m;
}
static inline void fz_stop(ifd_model_t *m) {
  (void)m;
}
static inline uint64_t fz_pending(const ifd_model_t *m) {
  (void)m;
  return 0;
}

/* Answers output k of the config with a copy of input k (dtype, shape and
 * bytes), through the completion queue as a backend would. */
static inline int fz_submit(ifd_model_t *m, ifd_request_t *req,
                            ifd_errmsg_t *err) {
  const ifd_model_config_t *cfg = m->config;
  ifd_response_t *resp;
  uint32_t i, n;

  (void)err;
  ifd_request_set_state(req, IFD_REQ_EXECUTING);
  resp = ifd_response_new(req);
  if (resp == NULL) {
    ifd_request_release(req, TRITONSERVER_REQUEST_RELEASE_ALL);
    return 0;
  }
  n = req->n_inputs < cfg->n_output ? req->n_inputs : (uint32_t)cfg->n_output;
  if (n != 0) {
    resp->outputs = ifd_pool_calloc(&resp->pool, n, sizeof(ifd_output_t));
    if (resp->outputs == NULL) n = 0;
    resp->cap_outputs = n;
  }
  for (i = 0; i < n; i++) {
    const ifd_input_t *in = &req->inputs[i];
    ifd_output_t *o = &resp->outputs[i];
    const char *name = cfg->output[i]->name;

    o->name = ifd_pool_strndup(&resp->pool, name, strlen(name));
    o->shape = ifd_pool_calloc(&resp->pool, in->ndims + 1, sizeof(int64_t));
    o->buffer = ifd_pool_alloc(&resp->pool, in->byte_size + 1);
    if (o->name == NULL || o->shape == NULL || o->buffer == NULL) break;
    o->dtype = in->dtype;
    o->ndims = in->ndims;
    memcpy(o->shape, in->shape, in->ndims * sizeof(int64_t));
    if (in->byte_size != 0) memcpy(o->buffer, in->data, in->byte_size);
    o->byte_size = in->byte_size;
    o->buffer_in_pool = 1;
    o->resp = resp;
    resp->n_outputs = i + 1;
  }
  ifd_response_send(resp, IFD_RESPONSE_FINAL, 0, NULL);
  ifd_request_release(req, TRITONSERVER_REQUEST_RELEASE_ALL);
  return 0;
}

static const ifd_model_ops_t fz_ops = {
    fz_load, fz_unload, fz_submit, fz_stop, fz_pending, fz_pending,
    NULL,    NULL,      NULL,      NULL,    NULL,       NULL};

/* ---- the server -------------------------------------------------------- */

static uv_loop_t fz_loop;
static int fz_echo;
static ifd_server_t *fz_server;
static int fz_loaded;

static inline void fz_on_loaded(ifd_server_t *s, int failed, void *arg) {
  (void)s;
  (void)failed;
  (void)arg;
  fz_loaded = 1;
}

/* Creates the loop and the server and loads the repository; once per
 * process (the server lives until exit, so libFuzzer's leak check, which
 * runs per input, never sees it). */
static inline void fz_server_init(void) {
  static const char *repos[1];
  ifd_server_opts_t o;
  ifd_errmsg_t err;

  if (fz_server != NULL) return;
  fz_echo = getenv("IFD_FUZZ_ECHO") != NULL;
  /* A line per refused input would slow fuzzing down and bury its output;
   * IFD_FUZZ_ECHO shows them. */
  if (!fz_echo) {
    ifd_log_set_enabled(IFD_LOG_ERROR, 0);
    ifd_log_set_enabled(IFD_LOG_WARN, 0);
    ifd_log_set_enabled(IFD_LOG_INFO, 0);
  }
  repos[0] = getenv("IFD_FUZZ_REPO");
  if (repos[0] == NULL) repos[0] = "test/models/repo";
  memset(&o, 0, sizeof(o));
  o.repos = repos;
  o.n_repos = 1;
  o.ops = &fz_ops;
  if (uv_loop_init(&fz_loop) != 0 ||
      ifd_server_new(&fz_loop, &o, &fz_server, &err) != 0) {
    fprintf(stderr, "fuzz: no server\n");
    abort();
  }
  ifd_server_start(fz_server, fz_on_loaded, NULL);
  while (!fz_loaded) uv_run(&fz_loop, UV_RUN_ONCE);
}

/* For tests that must end leak-free (test/unit/test_oom.c): after the
 * caller stopped its front end with fz_on_front_done as the `done`
 * callback (ifd_http_stop, ifd_grpc_stop), shuts the server down, frees it
 * and closes the loop. Returns uv_loop_close's result. */
static int fz_done;
static inline void fz_on_front_done(void *arg) {
  (void)arg;
  fz_done |= 1;
}
static inline void fz_on_server_done(ifd_server_t *s, void *arg) {
  (void)arg;
  ifd_server_free(s);
  fz_done |= 2;
}
static inline int fz_server_fini(void) {
  ifd_server_shutdown(fz_server, fz_on_server_done, NULL);
  while (fz_done != 3) uv_run(&fz_loop, UV_RUN_ONCE);
  uv_run(&fz_loop, UV_RUN_DEFAULT);
  fz_server = NULL;
  fz_loaded = fz_done = 0;
  return uv_loop_close(&fz_loop);
}

/* ---- one connection per input ------------------------------------------ */

typedef struct fz_client {
  uv_pipe_t pipe; /* embedded: the client's end of the socketpair */
  uv_write_t wreq;
  uv_shutdown_t sreq;
  uv_timer_t guard; /* embedded: fz_guard_ms */
  int eof, closed, written, expired;
  size_t n_read;
  char head[64]; /* the first bytes the server sent */
  char *all;     /* owned: everything it sent, when fz_capture */
  size_t all_cap;
  char buf[65536];
} fz_client_t;

/* The last connection's client side (read its head and n_read). */
static fz_client_t fz_last;
/* Keep everything the server sends in fz_last.all (up to 16 MiB; the
 * client allocates, so not under allocation-failure injection). */
static int fz_capture;
/* Unit tests: give up on a connection after this many ms (0: never). */
static uint64_t fz_guard_ms;

static inline void fz_alloc(uv_handle_t *h, size_t sugg, uv_buf_t *b) {
  fz_client_t *cl = h->data;
  (void)sugg;
  *b = uv_buf_init(cl->buf, sizeof(cl->buf));
}

static inline void fz_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
  fz_client_t *cl = s->data;
  if (n > 0) {
    if (cl->n_read < sizeof(cl->head)) {
      size_t k = sizeof(cl->head) - 1 - cl->n_read;
      if (k > (size_t)n) k = (size_t)n;
      memcpy(cl->head + cl->n_read, b->base, k);
    }
    if (fz_capture && cl->n_read + (size_t)n <= ((size_t)16 << 20)) {
      if (cl->n_read + (size_t)n > cl->all_cap) {
        size_t cap = cl->all_cap != 0 ? cl->all_cap : 65536;
        while (cap < cl->n_read + (size_t)n) cap *= 2;
        cl->all = realloc(cl->all, cap);
        if (cl->all == NULL) abort();
        cl->all_cap = cap;
      }
      memcpy(cl->all + cl->n_read, b->base, (size_t)n);
    }
    cl->n_read += (size_t)n;
    /* IFD_FUZZ_ECHO=1: show the answers (to check a seed by hand). */
    if (fz_echo) fwrite(b->base, 1, (size_t)n, stderr);
  }
  if (n < 0) {
    cl->eof = 1;
    uv_read_stop(s);
  }
}

static inline void fz_written(uv_write_t *w, int status) {
  (void)status;
  ((fz_client_t *)w->handle->data)->written = 1;
}

static inline void fz_shut(uv_shutdown_t *r, int status) {
  (void)r;
  (void)status;
}

static inline void fz_closed(uv_handle_t *h) {
  ((fz_client_t *)h->data)->closed++;
}

static inline void fz_expired(uv_timer_t *t) {
  ((fz_client_t *)t->data)->expired = 1;
}

/*
 * Serves `data` on one new connection of `set` and returns once the server
 * has closed it and every handle of it is gone. `prefix` (may be NULL) is
 * sent first (the HTTP/2 client preface for gRPC). Returns 0; IFD_ENOMEM
 * when the connection could not be created; -1 when fz_guard_ms passed
 * first (the server never closed it).
 */
static inline int fz_serve(ifd_conn_set_t *set, const char *prefix,
                           const uint8_t *data, size_t size) {
  fz_client_t *cl = &fz_last;
  uv_buf_t bufs[2];
  unsigned nb = 0;
  int sv[2], idle, turns, rc;

  free(cl->all);
  memset(cl, 0, sizeof(*cl));
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) abort();
  rc = ifd__conn_set_adopt(set, sv[0]);
  if (rc != 0) {
    close(sv[0]);
    close(sv[1]);
    return rc;
  }
  if (uv_pipe_init(&fz_loop, &cl->pipe, 0) != 0 ||
      uv_pipe_open(&cl->pipe, sv[1]) != 0)
    abort();
  cl->pipe.data = cl;
  cl->guard.data = cl;
  uv_timer_init(&fz_loop, &cl->guard);
  if (fz_guard_ms != 0) uv_timer_start(&cl->guard, fz_expired, fz_guard_ms, 0);
  if (prefix != NULL) bufs[nb++] = uv_buf_init((char *)prefix, strlen(prefix));
  if (size != 0) bufs[nb++] = uv_buf_init((char *)data, (unsigned)size);
  if (nb == 0 ||
      uv_write(&cl->wreq, (uv_stream_t *)&cl->pipe, bufs, nb, fz_written) != 0)
    cl->written = 1;
  uv_read_start((uv_stream_t *)&cl->pipe, fz_alloc, fz_read);
  /* The server closes a connection at the client's EOF and drops the
   * answers still owed (net/http1.c, net/grpc_transport.c), so the EOF
   * waits until the answers stop coming: a few loop turns in which the
   * client read nothing new (an answer from the fake model takes two). */
  for (idle = 0, turns = 0; idle < 4 && turns < 256 && !cl->eof; turns++) {
    size_t before = cl->n_read;
    uv_run(&fz_loop, UV_RUN_NOWAIT);
    idle = cl->n_read == before && cl->written ? idle + 1 : 0;
  }
  /* Always: a server that closed first lingers until the client's FIN
   * (net/conn.c, "lingering close"). */
  uv_shutdown(&cl->sreq, (uv_stream_t *)&cl->pipe, fz_shut);
  while ((!cl->eof || set->n_conns != 0) && !cl->expired)
    uv_run(&fz_loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&cl->pipe, fz_closed);
  uv_close((uv_handle_t *)&cl->guard, fz_closed);
  while (cl->closed != 2) uv_run(&fz_loop, UV_RUN_ONCE);
  return cl->expired ? -1 : 0;
}

#endif
