/*
 * net/grpc_limits.c - the gRPC connection's one timer and the HTTP/2 limits
 * enforced on it: call deadlines (a binary min-heap of grpc-timeout
 * deadlines), the idle timeout, Triton's keepalive (server PINGs, the
 * client's PING rate), rapid-reset protection (client RST_STREAMs per
 * second), and the GOAWAY that ends a connection for any of them.
 *
 * One timer. Each connection uses the uv_timer_t of net/conn.c, armed for
 * the earliest of its events. Activity only updates timestamps (last read,
 * last call ended); the timer is re-armed when an earlier event appears and
 * otherwise fires, finds what is due, and arms for the next. So a busy
 * connection costs no timer operations per frame, and at most one early
 * wake-up per keepalive period.
 *
 * Keepalive follows gRPC core's server, whose channel arguments Triton's
 * flags set. The server PINGs after --grpc-keepalive-time of silence from
 * the client (only while calls are open unless
 * --grpc-keepalive-permit-without-calls), at most
 * --grpc-http2-max-pings-without-data times until it sends data again, and
 * closes the connection when an ACK takes longer than
 * --grpc-keepalive-timeout. A client PING sooner than
 * --grpc-http2-min-recv-ping-interval-without-data after the previous one
 * (two hours while no call is open, unless permitted without calls) is a
 * strike; more than --grpc-http2-max-ping-strikes strikes get
 * GOAWAY(ENHANCE_YOUR_CALM, "too_many_pings"), which gRPC clients answer by
 * pinging less. Sending HEADERS or DATA clears the strikes.
 *
 * --grpc-max-connection-age (gRPC core's MAX_CONNECTION_AGE, without its
 * 10% jitter): an older connection drains as at shutdown, GOAWAY(2^31-1)
 * then the final GOAWAY once its calls are done; past
 * --grpc-max-connection-age-grace the calls still open get UNAVAILABLE and
 * it closes.
 */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/util.h"
#include "net/grpc_conn.h"

/* While no call is open and PINGs without calls are not permitted, gRPC
 * core accepts one client PING per two hours. */
#define NO_CALL_PING_INTERVAL_MS ((uint64_t)7200000)
/* After our GOAWAY, the longest the connection may take to write it (a
 * client that does not read): then it is closed anyway. */
#define GOAWAY_LINGER_MS 5000u

static uint64_t min_u64(uint64_t a, uint64_t b) {
  return a < b ? a : b;
}

/* ---- the deadline heap --------------------------------------------------- */

static void heap_set(gconn_t *c, unsigned i, ifd_gstream_t *st) {
  c->heap[i] = st;
  st->heap_idx = i;
}

static void heap_up(gconn_t *c, unsigned i) {
  ifd_gstream_t *st = c->heap[i];

  while (i > 0) {
    unsigned p = (i - 1) / 2;
    if (c->heap[p]->deadline <= st->deadline) break;
    heap_set(c, i, c->heap[p]);
    i = p;
  }
  heap_set(c, i, st);
}

static void heap_down(gconn_t *c, unsigned i) {
  ifd_gstream_t *st = c->heap[i];

  for (;;) {
    unsigned l = 2 * i + 1, m = i;
    uint64_t best = st->deadline;
    if (l < c->heap_n && c->heap[l]->deadline < best) {
      m = l;
      best = c->heap[l]->deadline;
    }
    if (l + 1 < c->heap_n && c->heap[l + 1]->deadline < best) m = l + 1;
    if (m == i) break;
    heap_set(c, i, c->heap[m]);
    i = m;
  }
  heap_set(c, i, st);
}

int ifd__gheap_add(gconn_t *c, ifd_gstream_t *st) {
  if (c->heap_n == c->heap_cap) {
    unsigned cap = c->heap_cap != 0 ? c->heap_cap * 2 : 16;
    ifd_gstream_t **h = realloc(c->heap, cap * sizeof(*h));
    if (h == NULL) return IFD_ENOMEM;
    c->heap = h;
    c->heap_cap = cap;
  }
  c->heap[c->heap_n] = st;
  heap_up(c, c->heap_n++);
  if (st->heap_idx == 0) ifd__gconn_arm(c);
  return 0;
}

void ifd__gheap_del(gconn_t *c, ifd_gstream_t *st) {
  unsigned i = st->heap_idx;
  ifd_gstream_t *last;

  if (i == NO_HEAP) return;
  st->heap_idx = NO_HEAP;
  last = c->heap[--c->heap_n];
  if (last != st) {
    heap_set(c, i, last);
    heap_up(c, i);
    heap_down(c, last->heap_idx);
  }
  if (c->heap_n == 0) {
    /* The timer may still fire for this deadline: it finds nothing due. */
    free(c->heap); /* idle connections keep no buffers */
    c->heap = NULL;
    c->heap_cap = 0;
  }
}

/* ---- the timer ----------------------------------------------------------- */

/* Whether a keepalive PING may go out now (none is waiting for its ACK). */
static int keepalive_wanted(const gconn_t *c) {
  const ifd_grpc_opts_t *l = &c->g->lim;

  return l->keepalive_time_ms != 0 && !c->ping_out &&
         (c->n_streams != 0 || l->keepalive_permit_without_calls) &&
         (l->max_pings_without_data == 0 ||
          c->pings_unanswered_data < l->max_pings_without_data);
}

static uint64_t keepalive_due(const gconn_t *c) {
  uint64_t since = c->last_read > c->ping_sent ? c->last_read : c->ping_sent;

  return since + c->g->lim.keepalive_time_ms;
}

/* When the connection reaches its age, or its grace after that ends (0:
 * neither is due). */
static uint64_t age_due(const gconn_t *c) {
  const ifd_grpc_opts_t *l = &c->g->lim;
  if (l->max_connection_age_ms == 0 || c->terminated || c->age_ended) return 0;
  if (!c->aged) return c->opened + l->max_connection_age_ms;
  if (l->max_connection_age_grace_ms == 0) return 0;
  return c->opened + l->max_connection_age_ms + l->max_connection_age_grace_ms;
}

/* The age or its grace has passed: drain, or end what is left. */
static void age_out(gconn_t *c) {
  if (!c->aged) {
    c->aged = 1;
    IFD_VERBOSE("gRPC connection: GOAWAY: --grpc-max-connection-age");
    if (!c->stopping) {
      c->stopping = 1;
      nghttp2_submit_shutdown_notice(c->session);
    }
  } else {
    IFD_VERBOSE("gRPC connection: --grpc-max-connection-age-grace ended");
    c->age_ended = 1;
    ifd__gconn_end_calls(c);
  }
  if (c->n_streams == 0 && !c->terminated) {
    c->terminated = 1;
    nghttp2_session_terminate_session(c->session, NGHTTP2_NO_ERROR);
  }
  ifd__conn_mark_dirty(&c->base);
}

static int idle_wanted(const gconn_t *c) {
  return c->n_streams == 0 && c->g->lim.idle_timeout_ms != 0 && !c->stopping;
}

void ifd__gconn_arm(gconn_t *c) {
  const ifd_grpc_opts_t *l = &c->g->lim;
  uint64_t now, due = UINT64_MAX;

  if (c->base.closing || c->goaway_close) return;
  now = uv_now(c->g->loop);
  if (c->heap_n > 0) {
    uint64_t t = uv_hrtime(), d = c->heap[0]->deadline;
    due = now + (d > t ? (d - t + 999999) / 1000000 : 0);
  }
  if (idle_wanted(c)) due = min_u64(due, c->idle_since + l->idle_timeout_ms);
  if (age_due(c) != 0) due = min_u64(due, age_due(c));
  if (c->ping_out) {
    if (l->keepalive_timeout_ms != 0)
      due = min_u64(due, c->ping_sent + l->keepalive_timeout_ms);
  } else if (keepalive_wanted(c)) {
    due = min_u64(due, keepalive_due(c));
  }
  if (due == UINT64_MAX) return;
  if (c->timer_due != 0 && c->timer_due <= due) return;
  c->timer_due = due;
  ifd__conn_timer_start(&c->base, due > now ? due - now : 0);
}

void ifd__gconn_on_timer(gconn_t *c) {
  const ifd_grpc_opts_t *l = &c->g->lim;
  uint64_t now;

  c->timer_due = 0;
  if (c->goaway_close) {
    ifd__conn_close(&c->base, 0); /* the GOAWAY could not be written */
    return;
  }
  ifd__gconn_on_deadline(c);
  if (c->base.closing || c->goaway_close) return;
  now = uv_now(c->g->loop);
  if (c->ping_out && l->keepalive_timeout_ms != 0 &&
      now >= c->ping_sent + l->keepalive_timeout_ms) {
    IFD_VERBOSE(
        "gRPC connection closed: keepalive PING not acknowledged "
        "within %llu ms",
        (unsigned long long)l->keepalive_timeout_ms);
    ifd__conn_close(&c->base, 0);
    return;
  }
  if (idle_wanted(c) && now >= c->idle_since + l->idle_timeout_ms) {
    ifd__gconn_goaway(c, NGHTTP2_NO_ERROR, NULL, "idle timeout");
    return;
  }
  if (age_due(c) != 0 && now >= age_due(c)) {
    age_out(c);
    if (c->base.closing || c->terminated) return;
  }
  if (keepalive_wanted(c) && now >= keepalive_due(c)) {
    static const uint8_t opaque[8] = {'i', 'n', 'f', 'e', 'r', 'd', 'k', 'a'};
    if (nghttp2_submit_ping(c->session, NGHTTP2_FLAG_NONE, opaque) == 0) {
      c->ping_out = 1;
      c->ping_sent = now;
      c->pings_unanswered_data++;
      ifd__conn_mark_dirty(&c->base);
    }
  }
  ifd__gconn_arm(c);
}

/* ---- events -------------------------------------------------------------- */

void ifd__gconn_on_idle(gconn_t *c) {
  if (c->base.closing) return;
  c->idle_since = uv_now(c->g->loop);
  ifd__gconn_arm(c);
}

void ifd__gconn_on_data_sent(gconn_t *c) {
  c->ping_strikes = 0;
  c->ping_recv = 0;
  c->pings_unanswered_data = 0;
}

static void on_client_ping(gconn_t *c) {
  const ifd_grpc_opts_t *l = &c->g->lim;
  uint64_t now = uv_now(c->g->loop);
  uint64_t interval = c->n_streams == 0 && !l->keepalive_permit_without_calls
                          ? NO_CALL_PING_INTERVAL_MS
                          : l->min_recv_ping_interval_ms;

  if (c->ping_recv != 0 && now < c->ping_recv + interval &&
      ++c->ping_strikes > l->max_ping_strikes && l->max_ping_strikes != 0)
    ifd__gconn_goaway(c, NGHTTP2_ENHANCE_YOUR_CALM, "too_many_pings",
                      "too many PINGs from the client");
  c->ping_recv = now;
}

static void on_client_reset(gconn_t *c) {
  const ifd_grpc_opts_t *l = &c->g->lim;
  uint64_t now = uv_now(c->g->loop);

  if (l->max_resets_per_second == 0) return;
  if (now - c->rst_window >= 1000) {
    c->rst_window = now;
    c->rst_count = 0;
  }
  if (++c->rst_count > l->max_resets_per_second)
    ifd__gconn_goaway(c, NGHTTP2_ENHANCE_YOUR_CALM, NULL,
                      "too many RST_STREAM frames from the client (rapid "
                      "reset)");
}

void ifd__gconn_on_control(gconn_t *c, const nghttp2_frame *frame) {
  if (frame->hd.type == NGHTTP2_PING) {
    if (frame->hd.flags & NGHTTP2_FLAG_ACK)
      c->ping_out = 0;
    else
      on_client_ping(c);
  } else if (frame->hd.type == NGHTTP2_RST_STREAM) {
    on_client_reset(c);
  }
}

void ifd__gconn_goaway(gconn_t *c, uint32_t code, const char *debug,
                       const char *why) {
  if (c->base.closing || c->goaway_close) return;
  if (code == NGHTTP2_NO_ERROR)
    IFD_VERBOSE("gRPC connection: GOAWAY: %s", why);
  else
    IFD_WARN("gRPC connection: GOAWAY(ENHANCE_YOUR_CALM): %s", why);
  c->goaway_close = 1;
  c->terminated = 1;
  if (nghttp2_submit_goaway(c->session, NGHTTP2_FLAG_NONE,
                            nghttp2_session_get_last_proc_stream_id(c->session),
                            code, (const uint8_t *)debug,
                            debug != NULL ? strlen(debug) : 0) != 0) {
    ifd__conn_close(&c->base, 0);
    return;
  }
  ifd__conn_timer_start(&c->base, GOAWAY_LINGER_MS);
  ifd__conn_mark_dirty(&c->base);
}
