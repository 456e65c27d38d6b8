/*
 * bench/perf/grpc.c - inferd-perf's gRPC transport (h2c, nghttp2 client).
 *
 * A few client sessions (--grpc-connections) carry every slot: a unary slot
 * opens one ModelInfer stream per request; a streaming slot puts its
 * requests on a ModelStreamInfer stream (its own in the closed loop, one per
 * connection shared in order by every slot in the open loop) and matches
 * responses to requests in order (a decoupled model's request ends with
 * the response flagged triton_final_response, see dec.c). Each request's DATA
 * is copied from the slot's request (slot->req): run->payload, the
 * 5-byte-prefixed ModelInferRequest packed once, or the slot's sequence copy
 * (seq.c).
 *
 * nghttp2 is used sans-I/O: reads go to nghttp2_session_mem_recv() from one
 * shared buffer; a uv_prepare handle, which runs once per loop iteration
 * just before the loop polls, drains nghttp2_session_mem_send() of every
 * connection into one write, so that all the frames an iteration produced
 * leave in one syscall. Windows are large (16 MiB per stream, 1 GiB per
 * connection) so that flow control never throttles the load.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "bench/perf/perf.h"

enum { K_UNARY = 1, K_STREAM, K_CONTROL };
enum { GC_CONNECTING, GC_OPEN, GC_DEAD };

typedef struct gconn {
  union {
    uv_tcp_t tcp; /* the stream, TCP or not (see ifd_perf_sock_t) */
    ifd_perf_sock_t sock;
  };
  uv_connect_t creq;
  uv_write_t wreq;
  nghttp2_session *ngh; /* owned: NULL until connected */
  ifd_perf_run_t *run;  /* borrowed: outlives the connection */
  ifd_perf_buf_t wbuf;  /* owned: the write in flight */
  int state;
  int writing;
  int tcp_live; /* tcp initialized, not yet closed */
} gconn_t;

typedef struct gstream gstream_t;

/* A unary call, reused for every request of its slot; or a control call. */
typedef struct gcall {
  int kind; /* first: the stream user data's tag */
  ifd_perf_slot_t slot;
  gconn_t *conn;      /* borrowed */
  gstream_t *stream;  /* borrowed: streaming slots only */
  const uint8_t *msg; /* borrowed: run->payload or ctl */
  size_t msg_len, off;
  int http_status, grpc_status, have_grpc_status;
  char err[IFD_PERF_ERR_MAX];
  ifd_perf_buf_t body; /* control: the response (owned) */
  int done;
  struct gcall *next_all; /* the transport's list (owned through it) */
} gcall_t;

/* A ModelStreamInfer stream: requests queued for sending, and the slots
 * whose responses are due, oldest first. */
struct gstream {
  int kind; /* first: K_STREAM */
  gconn_t *conn;
  int32_t id;
  ifd_perf_slot_t **fifo; /* owned ring */
  size_t head, count, cap;
  size_t to_send, off; /* messages not yet copied out; offset in the first */
  int deferred, closed;
  uint8_t hdr[5]; /* the response framing */
  size_t hdr_got, msg_left;
  uint8_t first[IFD_PERF_ERR_MAX]; /* a response's first bytes */
  size_t first_len;
  gstream_t *next_all;
};

struct ifd_perf_grpc {
  gconn_t *conns; /* owned array */
  int nconn;
  int next_conn; /* round robin for new slots */
  int connected, closed;
  gcall_t *calls;     /* owned list */
  gstream_t *streams; /* owned list */
  gstream_t **shared; /* open loop + streaming: one per connection */
  uv_prepare_t prep;
  nghttp2_nv nv_infer[6], nv_stream[6];
  char path_infer[64], path_stream[64];
};

static uint8_t read_buf[256 * 1024];

#define NV(n, v)                                                          \
  ((nghttp2_nv){(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), \
                NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE})

static void make_nv(ifd_perf_run_t *run, nghttp2_nv *nv, const char *path) {
  nv[0] = NV(":method", "POST");
  nv[1] = NV(":scheme", "http");
  nv[2] = NV(":path", path);
  nv[3] = NV(":authority", run->authority);
  nv[4] = NV("content-type", "application/grpc");
  nv[5] = NV("te", "trailers");
}

static void conn_fail(gconn_t *c, int code, const char *msg) {
  if (c->state == GC_DEAD) return;
  c->state = GC_DEAD;
  ifd__perf_run_fail(c->run, code, "gRPC connection to %s: %s",
                     c->run->authority, msg);
  if (c->tcp_live) uv_read_stop((uv_stream_t *)&c->tcp);
}

/* ---- sending ---- */

static void on_write(uv_write_t *w, int status) {
  gconn_t *c = container_of(w, gconn_t, wreq);
  c->writing = 0;
  if (status < 0) conn_fail(c, status, uv_strerror(status));
}

/* Copies everything nghttp2 wants to send into one write. */
static void conn_flush(gconn_t *c) {
  while (c->state == GC_OPEN && !c->writing &&
         nghttp2_session_want_write(c->ngh)) {
    uv_buf_t b;
    int w;
    c->wbuf.len = 0;
    for (;;) {
      const uint8_t *d;
      ssize_t n = nghttp2_session_mem_send(c->ngh, &d);
      if (n < 0) {
        conn_fail(c, UV_EPROTO, nghttp2_strerror((int)n));
        return;
      }
      if (n == 0) break;
      if (ifd__perf_buf_append(&c->wbuf, d, (size_t)n) < 0) {
        conn_fail(c, UV_ENOMEM, "out of memory");
        return;
      }
      if (c->wbuf.len >= (1u << 20)) break;
    }
    if (c->wbuf.len == 0) return;
    b = uv_buf_init(c->wbuf.data, (unsigned)c->wbuf.len);
    w = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (w == (int)c->wbuf.len) continue;
    if (w == UV_EAGAIN) w = 0;
    if (w < 0) {
      conn_fail(c, w, uv_strerror(w));
      return;
    }
    b.base += w;
    b.len -= w;
    c->writing = 1;
    w = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_write);
    if (w < 0) {
      c->writing = 0;
      conn_fail(c, w, uv_strerror(w));
    }
  }
}

static void on_prepare(uv_prepare_t *p) {
  ifd_perf_grpc_t *g = container_of(p, ifd_perf_grpc_t, prep);
  int i;
  for (i = 0; i < g->nconn; i++) conn_flush(&g->conns[i]);
}

static ssize_t data_read(nghttp2_session *s, int32_t id, uint8_t *buf,
                         size_t len, uint32_t *flags, nghttp2_data_source *src,
                         void *ud) {
  int kind = *(int *)src->ptr;
  (void)s;
  (void)id;
  (void)ud;
  if (kind == K_STREAM) {
    gstream_t *st = src->ptr;
    size_t n = 0;
    if (st->to_send == 0) {
      st->deferred = 1;
      return NGHTTP2_ERR_DEFERRED;
    }
    while (st->to_send && n < len) {
      /* The messages not yet sent are the last to_send of the FIFO; each
       * slot's own (sequence models rewrite theirs per request). */
      const ifd_perf_slot_t *sl =
          st->fifo[(st->head + st->count - st->to_send) % st->cap];
      size_t k = sl->req_len - st->off;
      if (k > len - n) k = len - n;
      memcpy(buf + n, sl->req + st->off, k);
      n += k;
      st->off += k;
      if (st->off == sl->req_len) {
        st->off = 0;
        st->to_send--;
      }
    }
    return (ssize_t)n;
  } else {
    gcall_t *c = src->ptr;
    size_t n = c->msg_len - c->off;
    if (n > len) n = len;
    memcpy(buf, c->msg + c->off, n);
    c->off += n;
    if (c->off == c->msg_len) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
  }
}

/* ---- receiving ---- */

static int parse_status(const uint8_t *v, size_t n) {
  int x = 0;
  size_t i;
  for (i = 0; i < n && i < 9; i++) {
    if (v[i] < '0' || v[i] > '9') return -1;
    x = x * 10 + (v[i] - '0');
  }
  return n ? x : -1;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f,
                     const uint8_t *name, size_t namelen, const uint8_t *value,
                     size_t valuelen, uint8_t flags, void *ud) {
  void *p = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
  (void)flags;
  (void)ud;
  if (!p || *(int *)p == K_STREAM) {
    gstream_t *st = p;
    /* A stream's headers only matter when it ends: on_stream_close. */
    if (st && namelen == 12 && !memcmp(name, "grpc-message", 12)) {
      size_t k =
          valuelen < sizeof st->first - 1 ? valuelen : sizeof st->first - 1;
      memcpy(st->first, value, k);
      st->first_len = k;
    }
    return 0;
  }
  gcall_t *c = p;
  if (namelen == 7 && !memcmp(name, ":status", 7)) {
    c->http_status = parse_status(value, valuelen);
  } else if (namelen == 11 && !memcmp(name, "grpc-status", 11)) {
    c->grpc_status = parse_status(value, valuelen);
    c->have_grpc_status = 1;
  } else if (namelen == 12 && !memcmp(name, "grpc-message", 12)) {
    snprintf(c->err, sizeof c->err, "%.*s", (int)valuelen, value);
  }
  return 0;
}

/* One ModelStreamInferResponse is in: its first field, error_message, is
 * absent on success (proto3 leaves "" out), so a message that starts with
 * tag 1 / length-delimited and a non-zero length is an error. */
static void stream_message(gstream_t *st) {
  ifd_perf_slot_t *slot;
  int ok = !(st->first_len >= 2 && st->first[0] == 0x0a && st->first[1]);
  if (st->count == 0) return; /* a response to nothing: ignore it */
  slot = st->fifo[st->head];
  if (ok && st->conn->run->decoupled) {
    /* Every response of the request, up to the final flag, is counted;
     * a flags-only final message is not a response. */
    int final, has_output;
    ifd__perf_dec_parse(st->first, st->first_len, &final, &has_output);
    if (!final || has_output) ifd__perf_run_response(slot);
    if (!final) return;
  }
  st->head = (st->head + 1) % st->cap;
  st->count--;
  if (ok) {
    ifd__perf_run_done(slot, 1, NULL, 0);
  } else {
    /* Skip the varint length: the message follows it. */
    size_t i = 1;
    while (i < st->first_len && (st->first[i] & 0x80)) i++;
    i++;
    if (i > st->first_len) i = st->first_len;
    ifd__perf_run_done(slot, 0, (const char *)st->first + i, st->first_len - i);
  }
}

static void stream_data(gstream_t *st, const uint8_t *d, size_t len) {
  while (len) {
    if (st->hdr_got < 5) {
      size_t k = 5 - st->hdr_got;
      if (k > len) k = len;
      memcpy(st->hdr + st->hdr_got, d, k);
      st->hdr_got += k;
      d += k;
      len -= k;
      if (st->hdr_got < 5) return;
      st->msg_left = (size_t)st->hdr[1] << 24 | (size_t)st->hdr[2] << 16 |
                     (size_t)st->hdr[3] << 8 | st->hdr[4];
      st->first_len = 0;
      if (st->msg_left == 0) {
        st->hdr_got = 0;
        stream_message(st);
      }
      continue;
    }
    size_t k = st->msg_left < len ? st->msg_left : len;
    if (st->first_len < sizeof st->first) {
      size_t c = sizeof st->first - st->first_len;
      if (c > k) c = k;
      memcpy(st->first + st->first_len, d, c);
      st->first_len += c;
    }
    d += k;
    len -= k;
    st->msg_left -= k;
    if (st->msg_left == 0) {
      st->hdr_got = 0;
      stream_message(st);
    }
  }
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id,
                   const uint8_t *data, size_t len, void *ud) {
  void *p = nghttp2_session_get_stream_user_data(s, id);
  (void)flags;
  (void)ud;
  if (!p) return 0;
  if (*(int *)p == K_STREAM) {
    stream_data(p, data, len);
  } else if (*(int *)p == K_CONTROL) {
    gcall_t *c = p;
    if (ifd__perf_buf_append(&c->body, data, len) < 0)
      return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  return 0; /* unary load: the verdict is in the trailers */
}

static int on_close(nghttp2_session *s, int32_t id, uint32_t code, void *ud) {
  void *p = nghttp2_session_get_stream_user_data(s, id);
  (void)ud;
  if (!p) return 0;
  if (*(int *)p == K_STREAM) {
    gstream_t *st = p;
    char m[IFD_PERF_ERR_MAX];
    snprintf(m, sizeof m, "ModelStreamInfer stream ended: %.*s",
             (int)st->first_len, st->first);
    st->closed = 1;
    if (st->count) ifd__perf_run_fail(st->conn->run, UV_EPROTO, "%s", m);
    while (st->count) {
      ifd_perf_slot_t *slot = st->fifo[st->head];
      st->head = (st->head + 1) % st->cap;
      st->count--;
      ifd__perf_run_done(slot, 0, m, strlen(m));
    }
    return 0;
  }
  gcall_t *c = p;
  if (c->kind == K_CONTROL) {
    if (code && !c->err[0])
      snprintf(c->err, sizeof c->err, "stream reset: %s",
               nghttp2_http2_strerror(code));
    c->done = 1;
    return 0;
  }
  if (!code && c->http_status == 200 && c->have_grpc_status &&
      c->grpc_status == 0) {
    ifd__perf_run_done(&c->slot, 1, NULL, 0);
  } else {
    char m[IFD_PERF_ERR_MAX];
    int n;
    if (code)
      n = snprintf(m, sizeof m, "stream reset: %s",
                   nghttp2_http2_strerror(code));
    else
      n = snprintf(m, sizeof m, "HTTP %d, gRPC status %d: %s", c->http_status,
                   c->have_grpc_status ? c->grpc_status : -1, c->err);
    ifd__perf_run_done(&c->slot, 0, m, n < 0 ? 0 : (size_t)n);
  }
  return 0;
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  (void)h;
  (void)hint;
  buf->base = (char *)read_buf;
  buf->len = sizeof read_buf;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  gconn_t *c = container_of(s, gconn_t, tcp);
  ssize_t n;
  if (nread == 0) return;
  if (nread < 0) {
    conn_fail(
        c, (int)nread,
        nread == UV_EOF ? "closed by the server" : uv_strerror((int)nread));
    return;
  }
  n = nghttp2_session_mem_recv(c->ngh, (const uint8_t *)buf->base,
                               (size_t)nread);
  if (n < 0) conn_fail(c, UV_EPROTO, nghttp2_strerror((int)n));
}

static int session_new(gconn_t *c) {
  nghttp2_session_callbacks *cb;
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 16 << 20},
      {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, 1 << 20},
  };
  int rc;

  if (nghttp2_session_callbacks_new(&cb)) return UV_ENOMEM;
  nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
  rc = nghttp2_session_client_new(&c->ngh, cb, c);
  nghttp2_session_callbacks_del(cb);
  if (rc) return UV_ENOMEM;
  rc = nghttp2_submit_settings(c->ngh, NGHTTP2_FLAG_NONE, iv,
                               sizeof iv / sizeof iv[0]);
  if (!rc)
    rc = nghttp2_session_set_local_window_size(c->ngh, NGHTTP2_FLAG_NONE, 0,
                                               1 << 30);
  return rc ? UV_EPROTO : 0;
}

static void on_connect(uv_connect_t *req, int status) {
  gconn_t *c = container_of(req, gconn_t, creq);
  ifd_perf_grpc_t *g = c->run->grpc;
  int rc = status;

  if (rc == 0) rc = session_new(c);
  if (rc == 0) rc = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
  if (rc < 0) {
    conn_fail(c, rc, uv_strerror(rc));
  } else {
    c->state = GC_OPEN;
  }
  g->connected++;
}

/* ---- setup ---- */

int ifd__perf_grpc_init(ifd_perf_run_t *run, int nconn, char *err,
                        size_t errlen) {
  ifd_perf_grpc_t *g = calloc(1, sizeof *g);
  int i, rc, all = 0;

  if (!g) return UV_ENOMEM;
  run->grpc = g;
  uv_prepare_init(run->loop, &g->prep);
  uv_prepare_start(&g->prep, on_prepare);
  g->conns = calloc((size_t)nconn, sizeof *g->conns);
  g->shared = calloc((size_t)nconn, sizeof *g->shared);
  if (!g->conns || !g->shared) return UV_ENOMEM;
  snprintf(g->path_infer, sizeof g->path_infer,
           "/inference.GRPCInferenceService/ModelInfer");
  snprintf(g->path_stream, sizeof g->path_stream,
           "/inference.GRPCInferenceService/ModelStreamInfer");
  make_nv(run, g->nv_infer, g->path_infer);
  make_nv(run, g->nv_stream, g->path_stream);
  g->nconn = nconn;
  for (i = 0; i < nconn; i++) {
    gconn_t *c = &g->conns[i];
    c->run = run;
    c->state = GC_CONNECTING;
    rc = ifd__perf_sock_init(run, &c->sock);
    if (rc < 0) goto out_err;
    c->tcp_live = 1;
    rc = ifd__perf_sock_connect(run, &c->sock, &c->creq, on_connect);
    if (rc < 0) goto out_err;
  }
  while (g->connected < nconn) {
    if (uv_run(run->loop, UV_RUN_ONCE) == 0) break;
  }
  for (i = 0; i < nconn; i++) all += g->conns[i].state == GC_OPEN;
  if (all == nconn) return 0;
  rc = run->fatal ? run->fatal : UV_ECONNREFUSED;
  snprintf(err, errlen, "%s", run->fatal_msg);
  return rc;

out_err:
  snprintf(err, errlen, "gRPC connection to %s: %s", run->authority,
           uv_strerror(rc));
  return rc;
}

/* ---- slots ---- */

static int unary_send(ifd_perf_slot_t *s) {
  gcall_t *c = container_of(s, gcall_t, slot);
  ifd_perf_grpc_t *g = s->run->grpc;
  nghttp2_data_provider dp;
  int32_t id;

  if (c->conn->state != GC_OPEN) return UV_ECONNRESET;
  c->msg = (const uint8_t *)s->req;
  c->msg_len = s->req_len;
  c->off = 0;
  c->http_status = 0;
  c->grpc_status = 0;
  c->have_grpc_status = 0;
  c->err[0] = 0;
  dp.source.ptr = c;
  dp.read_callback = data_read;
  id = nghttp2_submit_request(c->conn->ngh, NULL, g->nv_infer, 6, &dp, c);
  return id < 0 ? UV_EPROTO : 0;
}

static int stream_send(ifd_perf_slot_t *s) {
  gcall_t *c = container_of(s, gcall_t, slot);
  gstream_t *st = c->stream;

  if (st->closed || st->conn->state != GC_OPEN) return UV_ECONNRESET;
  if (st->count == st->cap) {
    size_t ncap = st->cap ? st->cap * 2 : 16, i;
    ifd_perf_slot_t **f = malloc(ncap * sizeof *f);
    if (!f) return UV_ENOMEM;
    for (i = 0; i < st->count; i++) f[i] = st->fifo[(st->head + i) % st->cap];
    free(st->fifo);
    st->fifo = f;
    st->head = 0;
    st->cap = ncap;
  }
  st->fifo[(st->head + st->count) % st->cap] = s;
  st->count++;
  st->to_send++;
  if (st->deferred) {
    st->deferred = 0;
    if (nghttp2_session_resume_data(st->conn->ngh, st->id)) return UV_EPROTO;
  }
  return 0;
}

static const ifd_perf_slot_vt_t unary_vt = {unary_send};
static const ifd_perf_slot_vt_t stream_vt = {stream_send};

static gstream_t *stream_open(ifd_perf_grpc_t *g, gconn_t *conn) {
  gstream_t *st = calloc(1, sizeof *st);
  nghttp2_data_provider dp;

  if (!st) return NULL;
  st->kind = K_STREAM;
  st->conn = conn;
  dp.source.ptr = st;
  dp.read_callback = data_read;
  st->id = nghttp2_submit_request(conn->ngh, NULL, g->nv_stream, 6, &dp, st);
  if (st->id < 0) {
    free(st);
    return NULL;
  }
  st->next_all = g->streams;
  g->streams = st;
  return st;
}

int ifd__perf_grpc_slot_new(ifd_perf_run_t *run, ifd_perf_slot_t **out) {
  ifd_perf_grpc_t *g = run->grpc;
  int ci = g->next_conn;
  gcall_t *c = calloc(1, sizeof *c);

  if (!c) return UV_ENOMEM;
  g->next_conn = (ci + 1) % g->nconn;
  c->kind = K_UNARY;
  c->conn = &g->conns[ci];
  c->slot.run = run;
  c->slot.vt = &unary_vt;
  if (run->opts->streaming) {
    c->slot.vt = &stream_vt;
    if (c->conn->state != GC_OPEN) {
      free(c);
      return UV_ECONNRESET;
    }
    if (run->opts->open_loop) {
      if (!g->shared[ci]) g->shared[ci] = stream_open(g, c->conn);
      c->stream = g->shared[ci];
    } else {
      c->stream = stream_open(g, c->conn);
    }
    if (!c->stream) {
      free(c);
      return UV_ENOMEM;
    }
  }
  c->next_all = g->calls;
  g->calls = c;
  *out = &c->slot;
  return 0;
}

/* ---- control calls ---- */

int ifd__perf_grpc_unary(ifd_perf_run_t *run, const char *method,
                         const uint8_t *msg, size_t len, int *grpc_status,
                         ifd_perf_buf_t *body, char *err, size_t errlen) {
  ifd_perf_grpc_t *g = run->grpc;
  gcall_t *c = calloc(1, sizeof *c);
  ifd_perf_buf_t req = {0};
  char path[128];
  nghttp2_nv nv[6];
  nghttp2_data_provider dp;
  uint8_t prefix[5] = {0, (uint8_t)(len >> 24), (uint8_t)(len >> 16),
                       (uint8_t)(len >> 8), (uint8_t)len};
  int rc;

  err[0] = 0;
  if (!c) return UV_ENOMEM;
  c->kind = K_CONTROL;
  c->conn = &g->conns[0];
  rc = ifd__perf_buf_append(&req, prefix, 5);
  if (!rc && len) rc = ifd__perf_buf_append(&req, msg, len);
  if (rc < 0) goto out_free;
  if (c->conn->state != GC_OPEN) {
    rc = UV_ECONNRESET;
    snprintf(err, errlen, "%s: gRPC connection is down", method);
    goto out_free;
  }
  snprintf(path, sizeof path, "/inference.GRPCInferenceService/%s", method);
  make_nv(run, nv, path);
  c->msg = (const uint8_t *)req.data;
  c->msg_len = req.len;
  dp.source.ptr = c;
  dp.read_callback = data_read;
  /* path lives on this stack: let nghttp2 copy the header values. */
  for (int i = 0; i < 6; i++) nv[i].flags = NGHTTP2_NV_FLAG_NONE;
  if (nghttp2_submit_request(c->conn->ngh, NULL, nv, 6, &dp, c) < 0) {
    rc = UV_EPROTO;
    snprintf(err, errlen, "%s: cannot submit the request", method);
    goto out_free;
  }
  rc = ifd__perf_run_until(run, &c->done, 30000);
  if (rc < 0 || run->fatal) {
    snprintf(err, errlen, "%s: %s", method,
             rc < 0 ? "no answer within 30 s" : run->fatal_msg);
    if (!rc) rc = run->fatal;
    /* The stream may still answer: leave the call to the session. */
    c->next_all = g->calls;
    g->calls = c;
    c = NULL;
    goto out_free;
  }
  *grpc_status = c->have_grpc_status ? c->grpc_status : 2;
  if (c->err[0]) snprintf(err, errlen, "%s", c->err);
  if (c->body.len >= 5) {
    rc = ifd__perf_buf_append(body, c->body.data + 5, c->body.len - 5);
  }

out_free:
  if (c) {
    ifd__perf_buf_free(&c->body);
    free(c);
  }
  ifd__perf_buf_free(&req);
  return rc;
}

/* ---- shutdown ---- */

static void on_tcp_close(uv_handle_t *h) {
  gconn_t *c = container_of(h, gconn_t, tcp);
  c->run->grpc->closed++;
}

void ifd__perf_grpc_shutdown(ifd_perf_run_t *run) {
  ifd_perf_grpc_t *g = run->grpc;
  int i, live = 0;

  if (!g) return;
  g->closed = 0;
  for (i = 0; g->conns && i < g->nconn; i++) {
    gconn_t *c = &g->conns[i];
    if (c->tcp_live) {
      live++;
      uv_close((uv_handle_t *)&c->tcp, on_tcp_close);
    }
  }
  uv_close((uv_handle_t *)&g->prep, NULL);
  while (g->closed < live) uv_run(run->loop, UV_RUN_ONCE);
  uv_run(run->loop, UV_RUN_NOWAIT);
  for (i = 0; g->conns && i < g->nconn; i++) {
    nghttp2_session_del(g->conns[i].ngh);
    ifd__perf_buf_free(&g->conns[i].wbuf);
  }
  while (g->calls) {
    gcall_t *c = g->calls;
    g->calls = c->next_all;
    ifd__perf_buf_free(&c->body);
    ifd__perf_seq_slot_free(&c->slot);
    free(c);
  }
  while (g->streams) {
    gstream_t *st = g->streams;
    g->streams = st->next_all;
    free(st->fifo);
    free(st);
  }
  free(g->shared);
  free(g->conns);
  free(g);
  run->grpc = NULL;
}
