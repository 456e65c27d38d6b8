/*
 * net/grpc_stream.c - the calls of the gRPC transport: nghttp2's session
 * callbacks, request routing by :path through the application's method
 * table, gRPC message framing in, deadlines, and a call's life. The connections
 * they run on (reading, write batches, start and stop) are
 * net/grpc_transport.c's.
 *
 * Reading. DATA payloads are reassembled into one buffer of the shared
 * buffer pool (base/bufpool.h: a big one's pages stay mapped between
 * messages) per gRPC message: allocated whole from the 5-byte prefix when
 * the declared length is at most SIZED_MAX (and within the connection's
 * buffer limit, charged up front), so DATA is copied into place once with
 * no growth; a longer one grows as bytes arrive (from MAX_PREALLOC,
 * doubling up to the declared length), so a peer's declared length alone
 * cannot make us allocate much. Its ownership moves to the method, which
 * gives it back with ifd_bufpool_put.
 *
 * Writing (a call's answer, its framing and its status) is
 * net/grpc_send.c's.
 *
 * Deadlines. Each connection has a binary min-heap of its streams'
 * deadlines (grpc-timeout), O(log n) per stream, and one timer armed for
 * the earliest of them and of the connection's other events (see
 * net/grpc_limits.c).
 *
 * Limits. A header list past --grpc-max-header-list-size refuses its call
 * (RESOURCE_EXHAUSTED); --grpc-max-connection-buffer-bytes bounds what all
 * calls of a connection hold of request and response messages together;
 * --grpc-restricted-protocol calls without their metadata get UNAVAILABLE.
 *
 * Lifetime. A stream (ifd_gstream_t) is counted: the transport's reference
 * is dropped when the HTTP/2 stream closes or the connection goes; a method
 * that answers later holds its own. A detached stream (conn == NULL) only
 * refuses sends.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bufpool.h"
#include "base/check.h"
#include "base/log.h"
#include "base/util.h"
#include "net/grpc_conn.h"

/* A message up to SIZED_MAX is allocated whole from its 5-byte prefix and
 * its DATA copied into place, with no growth; a longer one gets MAX_PREALLOC
 * before its bytes arrive and grows as they do. */
#define SIZED_MAX ((size_t)32 << 20)
#define MAX_PREALLOC ((size_t)64 << 10)
/* Expire deadlines this close to now (timers run in whole ms). */
#define DEADLINE_SLACK_NS 1000000u
/* A header block this many times the header list limit (and at least
 * HARD_HEADER_MIN bytes) ends the connection. */
#define HARD_HEADER_FACTOR 4u
#define HARD_HEADER_MIN ((uint64_t)64 << 10)
/* What --grpc-restricted-protocol's metadata keys begin with. */
#define RESTRICT_PREFIX "triton-grpc-protocol-"
#define RESTRICT_PREFIX_LEN (sizeof(RESTRICT_PREFIX) - 1)

static void mark_dirty(gconn_t *c) {
  ifd__conn_mark_dirty(&c->base);
}

/* ---- method table ------------------------------------------------------ */

static uint64_t hash_path(const char *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  size_t i;

  for (i = 0; i < n; i++) {
    h ^= (uint8_t)p[i];
    h *= 1099511628211ull;
  }
  return h;
}

int ifd__grpc_mtab_build(ifd_grpc_t *g) {
  size_t n = 0, cap = 8, i, j;

  while (g->methods[n].path != NULL) n++;
  while (cap < 2 * n) cap *= 2;
  g->mtab = calloc(cap, sizeof(*g->mtab));
  if (g->mtab == NULL) return IFD_ENOMEM;
  g->mtab_mask = cap - 1;
  for (i = 0; i < n; i++) {
    const ifd_grpc_method_t *m = &g->methods[i];
    uint64_t h = hash_path(m->path, strlen(m->path));
    for (j = h & g->mtab_mask; g->mtab[j].m != NULL; j = (j + 1) & g->mtab_mask)
      if (strcmp(g->mtab[j].m->path, m->path) == 0) break;
    if (g->mtab[j].m != NULL) continue; /* a duplicate: the first wins */
    g->mtab[j].m = m;
    g->mtab[j].hash = h;
  }
  return 0;
}

static const ifd_grpc_method_t *mtab_find(const ifd_grpc_t *g, const char *p,
                                          size_t n) {
  uint64_t h = hash_path(p, n);
  size_t j;

  for (j = h & g->mtab_mask; g->mtab[j].m != NULL; j = (j + 1) & g->mtab_mask) {
    const ifd_grpc_method_t *m = g->mtab[j].m;
    if (g->mtab[j].hash == h && strlen(m->path) == n &&
        memcmp(m->path, p, n) == 0)
      return m;
  }
  return NULL;
}

/* ---- streams --------------------------------------------------------------
 */

void *ifd_gstream_app(const ifd_gstream_t *st) {
  return st->app;
}

void ifd_gstream_forwarded(const ifd_gstream_t *st, const char **data,
                           size_t *len, uint32_t *n) {
  *data = st->fwd.data;
  *len = st->fwd.len;
  *n = st->fwd.n;
}
void *ifd_gstream_data(const ifd_gstream_t *st) {
  return st->data;
}
void ifd_gstream_set_data(ifd_gstream_t *st, void *data) {
  st->data = data;
}
uint64_t ifd_gstream_max_message(const ifd_gstream_t *st) {
  return st->max_message;
}
int ifd_gstream_closed(const ifd_gstream_t *st) {
  return st->finished || st->conn == NULL;
}

uint64_t ifd_gstream_timeout_ns(const ifd_gstream_t *st) {
  uint64_t now;

  if (st->deadline == 0) return 0;
  now = uv_hrtime();
  return now >= st->deadline ? 1 : st->deadline - now;
}

void ifd_gstream_ref(ifd_gstream_t *st) {
  st->refs++;
}

void ifd_gstream_unref(ifd_gstream_t *st) {
  if (--st->refs != 0) return;
  /* The transport's reference goes last at detach, so nothing is queued. */
  ifd_bufpool_put(st->in);
  ifd_bufpool_put(st->unary);
  free(st->path);
  free(st->message);
  ifd__fwd_free(&st->fwd);
  free(st);
}

/* ---- deadlines ---------------------------------------------------------- */

void ifd__gconn_on_deadline(gconn_t *c) {
  uint64_t now = uv_hrtime();

  while (c->heap_n > 0 && c->heap[0]->deadline <= now + DEADLINE_SLACK_NS) {
    ifd_gstream_t *st = c->heap[0];
    ifd__gheap_del(c, st);
    IFD_VERBOSE("gRPC stream %d: deadline exceeded", (int)st->id);
    ifd_gstream_ref(st);
    ifd__gstream_finish_call(st, IFD_GRPC_DEADLINE_EXCEEDED,
                             "deadline exceeded", 0);
    if (!st->cancel_sent) {
      st->cancel_sent = 1;
      if (st->method != NULL && st->method->on_cancel != NULL)
        st->method->on_cancel(st);
    }
    ifd_gstream_unref(st);
  }
}

/* ---- stream life ------------------------------------------------------ */

/* Ends the transport's hold on a stream: the HTTP/2 stream closed or the
 * connection goes. Queued messages are released after the next write (a
 * partly sent one may still be referenced by the write in flight). */
void ifd__gstream_detach(ifd_gstream_t *st) {
  gconn_t *c = st->conn;

  if (c == NULL) return;
  ifd__gheap_del(c, st);
  while (st->out_head != NULL) {
    qmsg_t *q = st->out_head;
    st->out_head = q->next;
    ifd__gbatch_release_later(&c->nb, q);
  }
  st->out_tail = NULL;
  c->out_bytes -= st->out_unsent;
  st->out_unsent = 0;
  c->in_bytes -= st->held;
  st->held = 0;
  ifd__link_del(&st->link);
  if (--c->n_streams == 0) ifd__gconn_on_idle(c);
  st->conn = NULL;
  ifd_bufpool_put(st->in);
  st->in = NULL;
  ifd_bufpool_put(st->unary);
  st->unary = NULL;
  if (!st->method_finished && !st->cancel_sent) {
    st->cancel_sent = 1;
    if (st->method != NULL && st->method->on_cancel != NULL)
      st->method->on_cancel(st);
  }
  st->finished = 1;
  if (c->stopping && c->n_streams == 0 && !c->base.closing && !c->terminated) {
    c->terminated = 1;
    nghttp2_session_terminate_session(c->session, NGHTTP2_NO_ERROR);
  }
  mark_dirty(c);
  ifd_gstream_unref(st);
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t code,
                           void *user) {
  ifd_gstream_t *st = nghttp2_session_get_stream_user_data(s, id);

  (void)user;
  if (st == NULL) return 0;
  IFD_VERBOSE("gRPC stream %d closed (error code %u)", (int)id, code);
  nghttp2_session_set_stream_user_data(s, id, NULL);
  ifd__gstream_detach(st);
  return 0;
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *frame,
                            void *user) {
  gconn_t *c = user;
  ifd_gstream_t *st;

  if (frame->hd.type != NGHTTP2_HEADERS ||
      frame->headers.cat != NGHTTP2_HCAT_REQUEST)
    return 0;
  st = calloc(1, sizeof(*st));
  if (st == NULL) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  st->conn = c;
  st->app = c->g->app;
  st->id = frame->hd.stream_id;
  st->refs = 1;
  st->heap_idx = NO_HEAP;
  st->max_message = c->g->max_message;
  st->out_piece = -1;
  ifd__link_add(&c->streams, &st->link);
  if (c->n_streams++ == 0) ifd__gconn_arm(c); /* keepalive with calls */
  nghttp2_session_set_stream_user_data(s, st->id, st);
  return 0;
}

/* Parses grpc-timeout ("100m": 1 to 8 digits and a unit) into ns. */
static int parse_timeout(const uint8_t *v, size_t n, uint64_t *ns) {
  uint64_t x = 0, mul;
  size_t i;

  if (n < 2 || n > 9) return -1;
  for (i = 0; i + 1 < n; i++) {
    if (v[i] < '0' || v[i] > '9') return -1;
    x = x * 10 + (uint64_t)(v[i] - '0');
  }
  switch (v[n - 1]) {
    case 'H':
      mul = 3600000000000ull;
      break;
    case 'M':
      mul = 60000000000ull;
      break;
    case 'S':
      mul = 1000000000ull;
      break;
    case 'm':
      mul = 1000000ull;
      break;
    case 'u':
      mul = 1000ull;
      break;
    case 'n':
      mul = 1ull;
      break;
    default:
      return -1;
  }
  /* 99999999H overflows: cap far beyond any real deadline (~146 years). */
  *ns = x > (UINT64_MAX / 4) / mul ? UINT64_MAX / 4 : x * mul;
  return 0;
}

static int hdr_is(const uint8_t *name, size_t n, const char *want) {
  return n == strlen(want) && memcmp(name, want, n) == 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *frame,
                     const uint8_t *name, size_t namelen, const uint8_t *value,
                     size_t valuelen, uint8_t flags, void *user) {
  gconn_t *c = user;
  const ifd_restrict_t *rs = c->g->restrict_api;
  ifd_gstream_t *st;
  uint64_t ns, size, limit = c->g->lim.max_header_list_size;

  (void)flags;
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  st = nghttp2_session_get_stream_user_data(s, frame->hd.stream_id);
  if (st == NULL) return 0;
  /* The header list size as SETTINGS_MAX_HEADER_LIST_SIZE counts it
   * (RFC 9113 6.5.2): decoded bytes, so an HPACK block of tiny references
   * to one big table entry counts in full. Past the limit the call is
   * refused; far past it (a peer ignoring our SETTINGS, or an HPACK bomb)
   * the connection ends. */
  size = (uint64_t)st->hdr_bytes + namelen + valuelen + 32;
  st->hdr_bytes = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
  if (size > HARD_HEADER_FACTOR * limit && size > HARD_HEADER_MIN) {
    ifd__gconn_goaway(c, NGHTTP2_ENHANCE_YOUR_CALM, NULL,
                      "a header block far beyond the header list limit");
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
  if (size > limit) st->hdr_over = 1;
  if (st->hdr_over || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  if (rs != NULL && rs->n_rules != 0 && namelen > RESTRICT_PREFIX_LEN &&
      memcmp(name, RESTRICT_PREFIX, RESTRICT_PREFIX_LEN) == 0)
    st->restrict_ok |= ifd_restrict_match(rs, name, namelen, value, valuelen);
  /* --grpc-header-forward-pattern sees the call's metadata as gRPC hands
   * it to tritonserver: no pseudo-headers, nor what the transport itself
   * reads (te, content-type, grpc-*). */
  if (c->g->fwd_re != NULL && namelen > 0 && name[0] != ':' &&
      !hdr_is(name, namelen, "te") && !hdr_is(name, namelen, "content-type") &&
      !(namelen >= 5 && memcmp(name, "grpc-", 5) == 0) &&
      ifd__fwd_add(&st->fwd, c->g->fwd_re, (const char *)name, namelen,
                   (const char *)value, valuelen) != 0)
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  if (hdr_is(name, namelen, ":method")) {
    st->is_post = valuelen == 4 && memcmp(value, "POST", 4) == 0;
  } else if (hdr_is(name, namelen, ":path")) {
    st->method = mtab_find(st->conn->g, (const char *)value, valuelen);
    if (st->method == NULL && st->path == NULL) {
      st->path = malloc(valuelen + 1);
      if (st->path == NULL) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
      memcpy(st->path, value, valuelen);
      st->path[valuelen] = '\0';
    }
  } else if (hdr_is(name, namelen, "content-type")) {
    /* "application/grpc", "application/grpc+proto", "...;charset" */
    st->ct_ok = valuelen >= 16 && memcmp(value, "application/grpc", 16) == 0 &&
                (valuelen == 16 || value[16] == '+' || value[16] == ';');
  } else if (hdr_is(name, namelen, "grpc-encoding")) {
    if (valuelen == 8 && memcmp(value, "identity", 8) == 0) {
      st->enc_state = ENC_IDENTITY;
    } else {
      size_t k =
          valuelen < sizeof(st->enc) - 1 ? valuelen : sizeof(st->enc) - 1;
      st->enc_state = ENC_OTHER;
      memcpy(st->enc, value, k);
      st->enc[k] = '\0';
      st->in_zip = (uint8_t)ifd__gzip_algo(st->enc);
    }
  } else if (hdr_is(name, namelen, "grpc-accept-encoding")) {
    st->accept_zip = ifd__gzip_accepted((const char *)value, valuelen);
  } else if (hdr_is(name, namelen, "grpc-timeout")) {
    if (parse_timeout(value, valuelen, &ns) != 0) {
      st->timeout_bad = 1;
    } else {
      uint64_t now = uv_hrtime();
      st->deadline = now + (ns == 0 ? 1 : ns);
    }
  }
  return 0;
}

/* The request HEADERS are complete: validate and route. */
static void start_call(ifd_gstream_t *st) {
  const ifd_restrict_t *rs = st->conn->g->restrict_api;
  char text[200];

  st->started = 1;
  if (st->hdr_over) {
    snprintf(text, sizeof(text),
             "header list of more than %u bytes (the server's "
             "SETTINGS_MAX_HEADER_LIST_SIZE)",
             st->conn->g->lim.max_header_list_size);
    ifd__gstream_finish_http(st, "200", IFD_GRPC_RESOURCE_EXHAUSTED, text);
    return;
  }
  if (!st->is_post) {
    ifd__gstream_finish_http(st, "405", IFD_GRPC_INTERNAL,
                             "gRPC requires the POST method");
    return;
  }
  if (!st->ct_ok) {
    ifd__gstream_finish_http(st, "415", IFD_GRPC_INTERNAL,
                             "invalid gRPC request content-type");
    return;
  }
  if (st->method == NULL) {
    snprintf(text, sizeof(text), "unknown method %.140s",
             st->path != NULL ? st->path : "");
    IFD_VERBOSE("gRPC stream %d: %s", (int)st->id, text);
    ifd__gstream_finish_call(st, IFD_GRPC_UNIMPLEMENTED, text, 0);
    return;
  }
  IFD_VERBOSE("gRPC stream %d: %s", (int)st->id, st->method->path);
  if (ifd_restrict_on(rs, (ifd_api_group_t)st->method->group) &&
      !((st->restrict_ok >> st->method->group) & 1u)) {
    snprintf(text, sizeof(text),
             "This protocol is restricted, expecting header '%s'",
             ifd_restrict_header(rs, (ifd_api_group_t)st->method->group));
    ifd__gstream_finish_http(st, "200", IFD_GRPC_UNAVAILABLE, text);
    return;
  }
  if (st->timeout_bad) {
    ifd__gstream_fail(st, IFD_GRPC_INTERNAL, "malformed grpc-timeout");
    return;
  }
  if (st->deadline != 0 && ifd__gheap_add(st->conn, st) != 0)
    ifd__gstream_fail(st, IFD_GRPC_RESOURCE_EXHAUSTED, "out of memory");
}

/* Keeps conn->in_bytes equal to what the calls hold of request messages:
 * the one being reassembled and a unary request waiting for END_STREAM. */
static void set_held(ifd_gstream_t *st) {
  gconn_t *c = st->conn;
  uint64_t now = st->in_cap + (st->unary != NULL ? st->unary_len : 0);

  c->in_bytes = c->in_bytes - st->held + now;
  st->held = now;
}

/* Whether this call may hold `want` bytes of request messages without the
 * connection passing --grpc-max-connection-buffer-bytes; fails the call
 * when not. A call alone on its connection always may (its messages are
 * bounded by the maximum message size). Returns 0 or -1. */
static int room_for(ifd_gstream_t *st, uint64_t want) {
  gconn_t *c = st->conn;
  uint64_t others = c->in_bytes - st->held;
  char text[160];

  if (others == 0 || others + want <= c->g->lim.max_connection_buffer) return 0;
  snprintf(text, sizeof(text),
           "more than %llu bytes of request messages buffered on the "
           "connection",
           (unsigned long long)c->g->lim.max_connection_buffer);
  ifd__gstream_fail(st, IFD_GRPC_RESOURCE_EXHAUSTED, text);
  return -1;
}

/* A whole request message: to the method (streaming) or kept until
 * END_STREAM (unary). Takes `msg`. */
static void deliver(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  st->n_in++;
  if (st->method->streaming) {
    ifd_gstream_ref(st);
    st->method->on_message(st, msg, len);
    ifd_gstream_unref(st);
    return;
  }
  if (st->unary != NULL) {
    ifd_bufpool_put(msg);
    ifd__gstream_fail(st, IFD_GRPC_INTERNAL,
                      "unary call with more than one request message");
    return;
  }
  st->unary = msg;
  st->unary_len = len;
  set_held(st);
}

/* Reads the 5-byte prefix just completed and prepares the buffer. Returns
 * 0, or -1 when the call was failed. */
static int begin_message(ifd_gstream_t *st) {
  uint64_t need = ((uint64_t)st->prefix[1] << 24) |
                  ((uint64_t)st->prefix[2] << 16) |
                  ((uint64_t)st->prefix[3] << 8) | st->prefix[4];
  size_t cap;
  char text[160];

  if (st->prefix[0] > 1) {
    ifd__gstream_fail(st, IFD_GRPC_INTERNAL,
                      "invalid gRPC message compressed flag");
    return -1;
  }
  if (st->prefix[0] == 1 && (st->enc_state != ENC_OTHER || !st->in_zip)) {
    if (st->enc_state != ENC_OTHER) {
      ifd__gstream_fail(st, IFD_GRPC_INTERNAL,
                        "compressed message without grpc-encoding");
    } else {
      snprintf(text, sizeof(text),
               "grpc-encoding %s is not supported (gzip and deflate are)",
               st->enc);
      ifd__gstream_fail(st, IFD_GRPC_UNIMPLEMENTED, text);
    }
    return -1;
  }
  st->in_flag = st->prefix[0];
  if (need > st->max_message) {
    snprintf(text, sizeof(text),
             "message of %llu bytes exceeds the maximum of %llu",
             (unsigned long long)need, (unsigned long long)st->max_message);
    ifd__gstream_fail(st, IFD_GRPC_RESOURCE_EXHAUSTED, text);
    return -1;
  }
  cap = need <= SIZED_MAX || need < MAX_PREALLOC ? (size_t)need : MAX_PREALLOC;
  if (room_for(st, cap + (st->unary != NULL ? st->unary_len : 0)) != 0)
    return -1;
  st->in = ifd_bufpool_get(ifd_bufpool_shared(), cap != 0 ? cap : 1);
  if (st->in == NULL) {
    ifd__gstream_fail(st, IFD_GRPC_RESOURCE_EXHAUSTED,
                      "out of memory for the request message");
    return -1;
  }
  st->in_len = 0;
  st->in_cap = cap;
  st->in_need = (size_t)need;
  set_held(st);
  return 0;
}

/* A compressed request message: inflated in place of `*msg`. Returns 0, or
 * -1 when the call was failed (and *msg freed). */
static int inflate_message(ifd_gstream_t *st, uint8_t **msg, size_t *len) {
  uint8_t *out;
  size_t out_len;
  char text[160];
  int rc = ifd__gzip_inflate(*msg, *len, st->in_zip, st->max_message, &out,
                             &out_len);

  ifd_bufpool_put(*msg);
  *msg = NULL;
  if (rc == IFD_ETOOBIG) {
    snprintf(text, sizeof(text),
             "message decompresses to more than the maximum of %llu bytes",
             (unsigned long long)st->max_message);
    ifd__gstream_fail(st, IFD_GRPC_RESOURCE_EXHAUSTED, text);
  } else if (rc == IFD_ENOMEM) {
    ifd__gstream_fail(st, IFD_GRPC_RESOURCE_EXHAUSTED,
                      "out of memory for the request message");
  } else if (rc < 0) {
    snprintf(text, sizeof(text), "message is not valid %s data", st->enc);
    ifd__gstream_fail(st, IFD_GRPC_INTERNAL, text);
  }
  if (rc < 0) return -1;
  /* A unary request is held until END_STREAM: counted as it is now. */
  if (!st->method->streaming &&
      room_for(st, out_len + (st->unary != NULL ? st->unary_len : 0)) != 0) {
    ifd_bufpool_put(out);
    return -1;
  }
  *msg = out;
  *len = out_len;
  return 0;
}

static void message_done(ifd_gstream_t *st) {
  uint8_t *msg = st->in;
  size_t len = st->in_len;

  st->in = NULL;
  st->in_len = st->in_cap = st->in_need = 0;
  st->prefix_len = 0;
  set_held(st);
  if (st->in_flag && inflate_message(st, &msg, &len) != 0) return;
  deliver(st, msg, len);
}

static int on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id,
                         const uint8_t *data, size_t len, void *user) {
  ifd_gstream_t *st = nghttp2_session_get_stream_user_data(s, id);

  (void)flags;
  (void)user;
  if (st == NULL || st->finished || st->conn == NULL || st->method == NULL)
    return 0;
  while (len > 0 && !st->finished) {
    size_t k;
    if (st->prefix_len < 5) {
      k = 5 - st->prefix_len;
      if (k > len) k = len;
      memcpy(st->prefix + st->prefix_len, data, k);
      st->prefix_len += (unsigned)k;
      data += k;
      len -= k;
      if (st->prefix_len < 5) break;
      if (begin_message(st) != 0) break;
      if (st->in_need == 0) message_done(st);
      continue;
    }
    k = st->in_need - st->in_len;
    if (k > len) k = len;
    if (st->in_len + k > st->in_cap) {
      size_t cap = st->in_cap * 2;
      uint8_t *p;
      if (cap < st->in_len + k) cap = st->in_len + k;
      if (cap > st->in_need) cap = st->in_need;
      if (room_for(st, cap + (st->unary != NULL ? st->unary_len : 0)) != 0)
        break;
      p = ifd_bufpool_grow(ifd_bufpool_shared(), st->in, st->in_len, cap);
      if (p == NULL) {
        ifd__gstream_fail(st, IFD_GRPC_RESOURCE_EXHAUSTED,
                          "out of memory for the request message");
        break;
      }
      st->in = p;
      st->in_cap = cap;
      set_held(st);
    }
    memcpy(st->in + st->in_len, data, k);
    st->in_len += k;
    data += k;
    len -= k;
    if (st->in_len == st->in_need) message_done(st);
  }
  return 0;
}

/* The client half-closed. */
static void remote_end(ifd_gstream_t *st) {
  char text[160];
  uint8_t *msg;

  st->remote_closed = 1;
  if (st->finished || st->conn == NULL || st->method == NULL) return;
  if (st->prefix_len != 0) {
    snprintf(text, sizeof(text),
             "incomplete message: %llu of %llu bytes before the end of the "
             "stream",
             (unsigned long long)(st->prefix_len < 5 ? 0 : st->in_len),
             (unsigned long long)(st->prefix_len < 5 ? 0 : st->in_need));
    if (st->prefix_len < 5)
      snprintf(text, sizeof(text), "incomplete message prefix");
    ifd__gstream_fail(st, IFD_GRPC_INTERNAL, text);
    return;
  }
  if (st->method->streaming) {
    if (st->method->on_end != NULL) {
      ifd_gstream_ref(st);
      st->method->on_end(st);
      ifd_gstream_unref(st);
    }
    return;
  }
  if (st->unary == NULL) {
    ifd__gstream_fail(st, IFD_GRPC_INTERNAL,
                      "unary call without a request message");
    return;
  }
  msg = st->unary;
  st->unary = NULL;
  set_held(st);
  ifd_gstream_ref(st);
  st->method->on_message(st, msg, st->unary_len);
  ifd_gstream_unref(st);
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *frame,
                         void *user) {
  ifd_gstream_t *st;

  if (frame->hd.type == NGHTTP2_PING || frame->hd.type == NGHTTP2_RST_STREAM) {
    ifd__gconn_on_control(user, frame);
    return 0;
  }
  if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
    return 0;
  st = nghttp2_session_get_stream_user_data(s, frame->hd.stream_id);
  if (st == NULL) return 0;
  /* Known before start_call answers, so no RST follows a response to a
   * request that is already complete. */
  if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) st->remote_closed = 1;
  if (frame->hd.type == NGHTTP2_HEADERS && !st->started) start_call(st);
  if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) && st->conn != NULL)
    remote_end(st);
  return 0;
}

/* After our END_STREAM, tells a client still sending to stop (as grpc-go
 * does): RST_STREAM(NO_ERROR) follows the final HEADERS. */
static int on_frame_send(nghttp2_session *s, const nghttp2_frame *frame,
                         void *user) {
  ifd_gstream_t *st;

  if (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA)
    ifd__gconn_on_data_sent(user);
  if (frame->hd.type != NGHTTP2_HEADERS ||
      !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
    return 0;
  st = nghttp2_session_get_stream_user_data(s, frame->hd.stream_id);
  if (st != NULL && !st->remote_closed)
    nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_NO_ERROR);
  return 0;
}

int ifd__grpc_callbacks_new(nghttp2_session_callbacks **out) {
  nghttp2_session_callbacks *cb;

  if (nghttp2_session_callbacks_new(&cb) != 0) return IFD_ENOMEM;
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
  nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
  nghttp2_session_callbacks_set_send_data_callback(cb, ifd__grpc_on_send_data);
  *out = cb;
  return 0;
}

/* ---- server stop ------------------------------------------------------ */

void ifd__gconn_end_calls(gconn_t *c) {
  ifd_link_t *l, *next;

  /* ifd__gstream_fail may close a stream (a Trailers-Only response is only
   * submitted here), but detaching waits for on_stream_close, so `next`
   * stays in the list. */
  for (l = c->streams.next; l != &c->streams; l = next) {
    ifd_gstream_t *st = ifd_container_of(l, ifd_gstream_t, link);
    next = l->next;
    ifd_gstream_ref(st);
    ifd__gstream_fail(st, IFD_GRPC_UNAVAILABLE, "the server is shutting down");
    ifd_gstream_unref(st);
  }
}
