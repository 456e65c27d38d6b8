/*
 * bench/perf/sched.c - inferd-perf's scheduler: when each load slot sends.
 *
 * The unit of load is a slot, one request in flight at a time. In the
 * closed loop slots [0, concurrency) send again as soon as their response
 * is in; in the open loop a timer issues requests on the rate schedule,
 * taking a free slot, opening a new one up to the cap, or counting the
 * request as delayed until a slot frees up. Stopping drains every request
 * in flight (a sequence model first ends each open sequence). Also here:
 * the loop helpers every file uses, and the --idle-sequences mode.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/perf/perf.h"

/* ---- the loop ---- */

static void on_wait_timer(uv_timer_t *t) {
  *(int *)t->data = 1;
}

/* Runs the loop until *flag, or (counter != NULL) until *counter == 0, or
 * until timeout_ms, or until the run fails. */
static int loop_until(ifd_perf_run_t *run, const int *flag,
                      const uint64_t *counter, uint64_t timeout_ms) {
  uv_timer_t timer;
  int expired = 0, rc = 0;

  uv_timer_init(run->loop, &timer);
  timer.data = &expired;
  uv_timer_start(&timer, on_wait_timer, timeout_ms, 0);
  for (;;) {
    if (flag && *flag) break;
    if (counter && *counter == 0) break;
    if (run->fatal && counter) break;
    if (expired) {
      rc = (flag || counter) ? UV_ETIMEDOUT : 0;
      break;
    }
    if (run->capi)
      ifd__perf_capi_wait(run); /* completions come from another thread */
    else
      uv_run(run->loop, UV_RUN_ONCE);
  }
  uv_close((uv_handle_t *)&timer, NULL);
  uv_run(run->loop, UV_RUN_NOWAIT); /* the timer lives on this stack */
  return rc;
}

int ifd__perf_run_until(ifd_perf_run_t *run, const int *flag,
                        uint64_t timeout_ms) {
  return loop_until(run, flag, NULL, timeout_ms);
}

void ifd__perf_run_fail(ifd_perf_run_t *run, int code, const char *fmt, ...) {
  va_list ap;
  if (run->fatal) return;
  run->fatal = code < 0 ? code : UV_EIO;
  run->issuing = 0;
  va_start(ap, fmt);
  vsnprintf(run->fatal_msg, sizeof run->fatal_msg, fmt, ap);
  va_end(ap);
}

/* ---- scheduler ---- */

static int slot_new(ifd_perf_run_t *run, ifd_perf_slot_t **out) {
  ifd_perf_slot_t *s;
  int rc;

  if (run->nslots == run->capslots) {
    int cap = run->capslots ? run->capslots * 2 : 64;
    void *p = realloc(run->slots, (size_t)cap * sizeof *run->slots);
    if (!p) return UV_ENOMEM;
    run->slots = p;
    run->capslots = cap;
  }
  rc = run->capi   ? ifd__perf_capi_slot_new(run, &s)
       : run->grpc ? ifd__perf_grpc_slot_new(run, &s)
                   : ifd__perf_http_slot_new(run, &s);
  if (rc < 0) return rc;
  rc = ifd__perf_seq_slot_init(run, s); /* freed with the slot */
  if (rc < 0) return rc;
  s->index = run->nslots;
  run->slots[run->nslots++] = s;
  *out = s;
  return 0;
}

static void idle_push(ifd_perf_run_t *run, ifd_perf_slot_t *s) {
  s->next_idle = run->idle;
  run->idle = s;
}

static void issue(ifd_perf_run_t *run, ifd_perf_slot_t *s, uint64_t now) {
  int rc;
  s->t_send = now;
  s->measured = run->recording;
  s->busy = 1;
  run->inflight++;
  if (run->sequence) ifd__perf_seq_next(run, s);
  if (run->decoupled) ifd__perf_dec_next(run, s);
  if (run->seq_idle_phase) run->seq_idle_left--;
  rc = s->vt->send(s);
  if (rc < 0) {
    s->busy = 0;
    s->measured = 0;
    run->inflight--;
    ifd__perf_run_fail(run, rc, "cannot send a request: %s", uv_strerror(rc));
    if (run->opts->open_loop) idle_push(run, s);
  }
}

static void lat_push(ifd_perf_run_t *run, uint64_t ns) {
  if (run->nlat == run->caplat) {
    size_t cap = run->caplat * 2;
    void *p = realloc(run->lat, cap * sizeof *run->lat);
    if (!p) return; /* the sample is lost, the count is not */
    run->lat = p;
    run->caplat = cap;
  }
  run->lat[run->nlat++] = ns;
}

void ifd__perf_run_response(ifd_perf_slot_t *s) {
  ifd_perf_run_t *run = s->run;
  int first = !s->got_first;

  s->got_first = 1;
  if (!s->measured) return;
  run->responses++;
  if (!first) return;
  if (run->nlat_first == run->caplat_first) {
    size_t cap = run->caplat_first ? run->caplat_first * 2 : 1 << 16;
    void *p = realloc(run->lat_first, cap * sizeof *run->lat_first);
    if (!p) return; /* the sample is lost, the count is not */
    run->lat_first = p;
    run->caplat_first = cap;
  }
  run->lat_first[run->nlat_first++] = uv_hrtime() - s->t_send;
}

void ifd__perf_run_done(ifd_perf_slot_t *s, int ok, const char *err,
                        size_t errlen) {
  ifd_perf_run_t *run = s->run;
  uint64_t now = uv_hrtime();

  s->busy = 0;
  run->inflight--;
  if (s->measured) {
    if (ok)
      lat_push(run, now - s->t_send);
    else
      run->errors++;
  }
  if (!ok && !run->have_err) {
    if (errlen >= sizeof run->first_err) errlen = sizeof run->first_err - 1;
    memcpy(run->first_err, err, errlen);
    run->first_err[errlen] = 0;
    run->have_err = 1;
  }
  s->measured = 0;
  if (!run->issuing) {
    /* Stopping finishes each sequence with one last request (see
     * ifd__perf_measure_step); --idle-sequences does its own. */
    if (run->sequence && s->seq_left && !run->seq_idle_phase && !run->fatal) {
      s->seq_left = 1;
      issue(run, s, now);
    } else if (run->opts->open_loop) {
      idle_push(run, s);
    }
  } else if (!run->opts->open_loop) {
    if (s->index < run->concurrency &&
        (!run->seq_idle_phase || run->seq_idle_left))
      issue(run, s, now);
  } else if (run->backlog) {
    run->backlog--;
    issue(run, s, now);
  } else {
    idle_push(run, s);
  }
}

/* Open loop: issues every request whose time has come, then sleeps until
 * the next one (at least 1 ms: libuv timers have that resolution, so above
 * 1000/s requests leave in bursts each millisecond, on schedule on average). */
static void on_rate_tick(uv_timer_t *t) {
  ifd_perf_run_t *run = container_of(t, ifd_perf_run_t, rate_timer);
  uint64_t now = uv_hrtime(), due, next_ns, wait_ms;

  if (!run->issuing) return;
  due = (uint64_t)((double)(now - run->rate_t0) * run->rate / 1e9) + 1;
  while (run->rate_issued < due && run->issuing) {
    ifd_perf_slot_t *s = run->idle;
    run->rate_issued++;
    if (s) {
      run->idle = s->next_idle;
      issue(run, s, now);
    } else if (run->nslots < (run->sequence ? run->opts->num_sequences
                                            : run->opts->max_connections)) {
      /* A sequence model has one slot per sequence: at most
       * --num-of-sequences, each with one request in flight at a time. */
      int rc = slot_new(run, &s);
      if (rc < 0) {
        ifd__perf_run_fail(run, rc, "cannot open a connection: %s",
                           uv_strerror(rc));
        return;
      }
      issue(run, s, now);
    } else {
      run->backlog++; /* sent by the next slot to free up */
      run->delayed++;
    }
  }
  next_ns =
      run->rate_t0 + (uint64_t)((double)run->rate_issued * 1e9 / run->rate);
  wait_ms = next_ns > now ? (next_ns - now + 999999) / 1000000 : 1;
  uv_timer_start(&run->rate_timer, on_rate_tick, wait_ms ? wait_ms : 1, 0);
}

int ifd__perf_sched_start(ifd_perf_run_t *run) {
  uint64_t now = uv_hrtime();
  int i, rc;

  run->issuing = 1;
  if (run->opts->open_loop) {
    run->rate_t0 = now;
    run->rate_issued = 0;
    run->backlog = 0;
    uv_timer_start(&run->rate_timer, on_rate_tick, 0, 0);
    return 0;
  }
  while (run->nslots < run->concurrency) {
    ifd_perf_slot_t *s;
    rc = slot_new(run, &s);
    if (rc < 0) return rc;
  }
  for (i = 0; i < run->concurrency && run->issuing; i++)
    if (!run->slots[i]->busy) issue(run, run->slots[i], now);
  return 0;
}

int ifd__perf_sched_drain(ifd_perf_run_t *run) {
  uint64_t now = uv_hrtime();
  int i, rc;

  run->issuing = 0;
  run->backlog = 0;
  uv_timer_stop(&run->rate_timer);
  /* A sequence model ends every open sequence: a slot in flight does so
   * when its response is in (ifd__perf_run_done), a free one now. */
  for (i = 0; run->sequence && !run->seq_idle_phase && i < run->nslots; i++) {
    ifd_perf_slot_t *s = run->slots[i];
    if (s->busy || !s->seq_left || run->fatal) continue;
    s->seq_left = 1;
    issue(run, s, now);
  }
  rc = loop_until(run, NULL, &run->inflight, 60000);
  if (run->opts->open_loop && rc == 0) {
    /* Every slot is free again: rebuild the free list in one go. */
    run->idle = NULL;
    for (i = run->nslots - 1; i >= 0; i--) idle_push(run, run->slots[i]);
  }
  return rc;
}

/* ---- sequences ---- */

int ifd__perf_sched_idle_sequences(ifd_perf_run_t *run) {
  const ifd_perf_opts_t *o = run->opts;
  uint64_t n = (uint64_t)o->idle_sequences;
  int conc = n < 64 ? (int)n : 64, phase, i, rc = 0;

  run->concurrency = conc;
  while (run->nslots < conc) {
    ifd_perf_slot_t *s;
    if (slot_new(run, &s) < 0) {
      fprintf(stderr, "error: out of memory\n");
      return 1;
    }
  }
  for (phase = 1; phase <= 2; phase++) {
    uint64_t now = uv_hrtime();
    run->seq_idle_phase = phase;
    run->seq_idle_left = n;
    run->seq_next = 0;
    run->nlat = 0;
    run->errors = 0;
    run->have_err = 0;
    run->recording = 1;
    run->issuing = 1;
    for (i = 0; i < conc && run->issuing; i++) issue(run, run->slots[i], now);
    rc = loop_until(run, NULL, &run->inflight, 120000);
    run->issuing = 0;
    printf("idle sequences: %llu %s, %llu failed\n",
           (unsigned long long)run->nlat, phase == 1 ? "started" : "ended",
           (unsigned long long)run->errors);
    if (run->have_err) printf("  first error: %s\n", run->first_err);
    fflush(stdout);
    if (rc < 0 || run->fatal) {
      fprintf(stderr, "error: %s\n",
              run->fatal ? run->fatal_msg
                         : "requests unanswered after 120 s (does the model "
                           "have a slot for every sequence?)");
      return 1;
    }
    if (phase == 1)
      loop_until(run, NULL, NULL, (uint64_t)(o->idle_seconds * 1000));
  }
  run->seq_idle_phase = 0;
  return run->have_err ? 1 : 0;
}
