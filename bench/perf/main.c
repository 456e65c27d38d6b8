/*
 * bench/perf/main.c - inferd-perf: command line, measurement steps, report.
 *
 * A perf_analyzer-style load generator on one libuv loop (see
 * bench/perf/README.md for the options). Each step of the concurrency range
 * (closed loop: every slot sends again as soon as its response is in) or of
 * the request-rate range (open loop: requests leave on a fixed schedule
 * whatever the completions) runs like this:
 *
 *   warm up for --warmup ms; stop issuing; wait for every request to finish;
 *   read the server's statistics ("before");
 *   measure for --measurement-interval ms, recording only requests sent in
 *   the window; stop issuing; wait for them all; read the statistics
 *   ("after").
 *
 * Because no request is in flight while the statistics are read, the
 * client's completed count equals the server's success-count delta exactly
 * (given no other client). Throughput is completed requests x batch over the
 * time from the window's start to its last completion.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench/perf/perf.h"

/* ---- buffers ---- */

int ifd__perf_buf_append(ifd_perf_buf_t *b, const void *p, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    char *d;
    while (cap < b->len + n + 1) cap *= 2;
    d = realloc(b->data, cap);
    if (!d) return UV_ENOMEM;
    b->data = d;
    b->cap = cap;
  }
  if (n && p) memcpy(b->data + b->len, p, n); /* p NULL: room only */
  b->len += n;
  b->data[b->len] = 0; /* text stays a C string */
  return 0;
}

int ifd__perf_buf_printf(ifd_perf_buf_t *b, const char *fmt, ...) {
  char tmp[1024];
  va_list ap;
  int n;

  va_start(ap, fmt);
  n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return UV_EINVAL;
  if ((size_t)n < sizeof tmp) return ifd__perf_buf_append(b, tmp, (size_t)n);
  /* Long text: format again straight into the buffer. */
  if (ifd__perf_buf_append(b, NULL, (size_t)n) < 0) return UV_ENOMEM;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len - n, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return 0;
}

void ifd__perf_buf_free(ifd_perf_buf_t *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}

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
  rc = run->grpc ? ifd__perf_grpc_slot_new(run, &s)
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
     * measure_step); --idle-sequences does its own. */
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

static int start_issue(ifd_perf_run_t *run) {
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

static int stop_and_drain(ifd_perf_run_t *run) {
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

/* --idle-sequences N: STARTs sequences start..start+N-1 (one request each,
 * at most 64 in flight), prints "idle sequences: N started", holds them
 * idle for --idle-seconds, then ENDs each with one more request. Returns 0,
 * or 1 when a request failed or did not finish (message printed). */
static int idle_sequences(ifd_perf_run_t *run) {
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

/* ---- one step ---- */

typedef struct step {
  double value; /* concurrency or request rate */
  uint64_t count, errors, delayed;
  double secs, throughput;
  double avg_us, std_us;
  double p50, p90, p95, p99, pn; /* usec */
  int have_server;
  ifd_perf_stats_t d;                                     /* server deltas */
  double s_req, s_over, s_queue, s_cin, s_cinfer, s_cout; /* usec */
  char first_err[IFD_PERF_ERR_MAX];
} step_t;

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static double pct(const uint64_t *v, size_t n, double p) {
  size_t idx;
  if (!n) return 0;
  idx = (size_t)ceil(p / 100.0 * (double)n);
  if (idx < 1) idx = 1;
  if (idx > n) idx = n;
  return (double)(v[idx - 1] / 1000);
}

static void stats_delta(const ifd_perf_stats_t *a, const ifd_perf_stats_t *b,
                        ifd_perf_stats_t *d) {
  const uint64_t *pa = (const uint64_t *)a, *pb = (const uint64_t *)b;
  uint64_t *pd = (uint64_t *)d;
  size_t i;
  for (i = 0; i < sizeof *d / sizeof(uint64_t); i++) pd[i] = pb[i] - pa[i];
}

static int measure_step(ifd_perf_run_t *run, const ifd_perf_model_t *m,
                        double value, step_t *r, char *err, size_t errlen) {
  const ifd_perf_opts_t *o = run->opts;
  ifd_perf_stats_t before, after;
  uint64_t t0, t1, sum = 0;
  double var = 0, mean;
  size_t i;
  int rc;

  memset(r, 0, sizeof *r);
  r->value = value;
  run->concurrency = (int)value;
  run->rate = value;
  run->have_err = 0;
  if (o->warmup_ms) {
    run->recording = 0;
    rc = start_issue(run);
    if (rc == 0) loop_until(run, NULL, NULL, o->warmup_ms);
    if (rc == 0) rc = stop_and_drain(run);
    if (rc < 0 && !run->fatal)
      ifd__perf_run_fail(run, rc, "warm-up: %s", uv_strerror(rc));
  }
  if (run->fatal) goto out_fatal;
  if (m) {
    rc = ifd__perf_stats_read(run, m, &before, err, errlen);
    if (rc < 0) return rc;
  }
  run->nlat = 0;
  run->errors = 0;
  run->delayed = 0;
  run->have_err = 0;
  run->recording = 1;
  t0 = uv_hrtime();
  rc = start_issue(run);
  if (rc == 0) loop_until(run, NULL, NULL, o->measure_ms);
  /* A sequence model's last requests, sent while draining, end the open
   * sequences: they are counted, as the server counts them. */
  if (!run->sequence) run->recording = 0;
  if (rc == 0) rc = stop_and_drain(run);
  run->recording = 0;
  t1 = uv_hrtime();
  if (rc < 0 && !run->fatal)
    ifd__perf_run_fail(run, rc, "requests did not finish: %s", uv_strerror(rc));
  if (run->fatal) goto out_fatal;
  if (m) {
    rc = ifd__perf_stats_read(run, m, &after, err, errlen);
    if (rc < 0) return rc;
    stats_delta(&before, &after, &r->d);
    r->have_server = 1;
  }

  r->count = run->nlat;
  r->errors = run->errors;
  r->delayed = run->delayed;
  if (run->have_err)
    snprintf(r->first_err, sizeof r->first_err, "%s", run->first_err);
  r->secs = (double)(t1 - t0) / 1e9;
  r->throughput = (double)r->count * (m ? o->batch : 1) / r->secs;
  for (i = 0; i < run->nlat; i++) sum += run->lat[i];
  mean = run->nlat ? (double)sum / (double)run->nlat : 0;
  for (i = 0; i < run->nlat; i++) {
    double dv = (double)run->lat[i] - mean;
    var += dv * dv;
  }
  r->avg_us = floor(mean / 1000);
  r->std_us = run->nlat ? floor(sqrt(var / (double)run->nlat) / 1000) : 0;
  qsort(run->lat, run->nlat, sizeof *run->lat, cmp_u64);
  r->p50 = pct(run->lat, run->nlat, 50);
  r->p90 = pct(run->lat, run->nlat, 90);
  r->p95 = pct(run->lat, run->nlat, 95);
  r->p99 = pct(run->lat, run->nlat, 99);
  if (o->percentile > 0) r->pn = pct(run->lat, run->nlat, o->percentile);
  if (r->have_server && r->d.success_count) {
    double n = (double)r->d.success_count;
    r->s_req = floor((double)r->d.success_ns / n / 1000);
    r->s_queue = floor((double)r->d.queue_ns / n / 1000);
    r->s_cin = floor((double)r->d.cin_ns / n / 1000);
    r->s_cinfer = floor((double)r->d.cinfer_ns / n / 1000);
    r->s_cout = floor((double)r->d.cout_ns / n / 1000);
    r->s_over = r->s_req - r->s_queue - r->s_cin - r->s_cinfer - r->s_cout;
    if (r->s_over < 0) r->s_over = 0;
  }
  return 0;

out_fatal:
  snprintf(err, errlen, "%s", run->fatal_msg);
  return run->fatal;
}

/* ---- report ---- */

static double step_latency(const ifd_perf_opts_t *o, const step_t *r) {
  return o->percentile > 0 ? r->pn : r->avg_us;
}

static void print_step(const ifd_perf_opts_t *o, const step_t *r) {
  if (o->open_loop)
    printf("Request Rate: %g inference requests per seconds\n", r->value);
  else
    printf("Request concurrency: %g\n", r->value);
  printf("  Client: \n");
  printf("    Request count: %llu\n", (unsigned long long)r->count);
  printf("    Throughput: %g infer/sec\n", r->throughput);
  if (o->percentile <= 0)
    printf("    Avg latency: %.0f usec (standard deviation %.0f usec)\n",
           r->avg_us, r->std_us);
  printf("    p50 latency: %.0f usec\n", r->p50);
  printf("    p90 latency: %.0f usec\n", r->p90);
  printf("    p95 latency: %.0f usec\n", r->p95);
  printf("    p99 latency: %.0f usec\n", r->p99);
  if (o->percentile > 0 && o->percentile != 50 && o->percentile != 90 &&
      o->percentile != 95 && o->percentile != 99)
    printf("    p%d latency: %.0f usec\n", o->percentile, r->pn);
  if (r->delayed)
    printf("    Delayed request count: %llu\n", (unsigned long long)r->delayed);
  if (r->errors || r->first_err[0]) {
    printf("    Error count: %llu\n", (unsigned long long)r->errors);
    printf("    First error: %s\n", r->first_err);
  }
  if (r->have_server) {
    printf("  Server: \n");
    printf("    Inference count: %llu\n",
           (unsigned long long)r->d.inference_count);
    printf("    Execution count: %llu\n",
           (unsigned long long)r->d.execution_count);
    printf("    Successful request count: %llu\n",
           (unsigned long long)r->d.success_count);
    printf(
        "    Avg request latency: %.0f usec (overhead %.0f usec + queue "
        "%.0f usec + compute input %.0f usec + compute infer %.0f usec + "
        "compute output %.0f usec)\n",
        r->s_req, r->s_over, r->s_queue, r->s_cin, r->s_cinfer, r->s_cout);
  }
  printf("\n");
}

static int write_csv(const ifd_perf_opts_t *o, const step_t *st, int n) {
  FILE *f = fopen(o->csv, "w");
  int i;
  if (!f) return -errno;
  fprintf(f,
          "%s,Inferences/Second,Client Send,Network+Server Send/Recv,"
          "Server Queue,Server Compute Input,Server Compute Infer,"
          "Server Compute Output,Client Recv,p50 latency,p90 latency,"
          "p95 latency,p99 latency\n",
          o->open_loop ? "Request Rate" : "Concurrency");
  for (i = 0; i < n; i++) {
    const step_t *r = &st[i];
    double server = r->s_queue + r->s_cin + r->s_cinfer + r->s_cout;
    double net = r->avg_us - server;
    fprintf(f, "%g,%.1f,0,%.0f,%.0f,%.0f,%.0f,%.0f,0,%.0f,%.0f,%.0f,%.0f\n",
            r->value, r->throughput, net > 0 ? net : 0, r->s_queue, r->s_cin,
            r->s_cinfer, r->s_cout, r->p50, r->p90, r->p95, r->p99);
  }
  return fclose(f) ? -errno : 0;
}

static int write_json(const ifd_perf_opts_t *o, const step_t *st, int n) {
  FILE *f = fopen(o->json_summary, "w");
  int i;
  if (!f) return -errno;
  fprintf(f,
          "{\"tool\":\"inferd-perf\",\"mode\":\"%s\",\"protocol\":\"%s\","
          "\"batch\":%d,\"steps\":[",
          o->open_loop ? "request_rate" : "concurrency",
          o->raw_get ? "raw-get"
          : o->grpc  ? (o->streaming ? "grpc-stream" : "grpc")
                     : (o->http_json ? "http-json" : "http-binary"),
          o->batch);
  for (i = 0; i < n; i++) {
    const step_t *r = &st[i];
    fprintf(f,
            "%s\n{\"%s\":%g,\"request_count\":%llu,\"errors\":%llu,"
            "\"window_s\":%.6f,\"throughput\":%.3f,\"avg_latency_us\":%.0f,"
            "\"std_latency_us\":%.0f,\"p50_latency_us\":%.0f,"
            "\"p90_latency_us\":%.0f,\"p95_latency_us\":%.0f,"
            "\"p99_latency_us\":%.0f,\"delayed\":%llu",
            i ? "," : "", o->open_loop ? "request_rate" : "concurrency",
            r->value, (unsigned long long)r->count,
            (unsigned long long)r->errors, r->secs, r->throughput, r->avg_us,
            r->std_us, r->p50, r->p90, r->p95, r->p99,
            (unsigned long long)r->delayed);
    if (o->percentile > 0)
      fprintf(f, ",\"p%d_latency_us\":%.0f", o->percentile, r->pn);
    if (r->have_server)
      fprintf(f,
              ",\"server\":{\"inference_count\":%llu,\"execution_count\":"
              "%llu,\"success_count\":%llu,\"avg_request_us\":%.0f,"
              "\"overhead_us\":%.0f,\"queue_us\":%.0f,\"compute_input_us\":"
              "%.0f,\"compute_infer_us\":%.0f,\"compute_output_us\":%.0f}",
              (unsigned long long)r->d.inference_count,
              (unsigned long long)r->d.execution_count,
              (unsigned long long)r->d.success_count, r->s_req, r->s_over,
              r->s_queue, r->s_cin, r->s_cinfer, r->s_cout);
    fprintf(f, "}");
  }
  fprintf(f, "\n]}\n");
  return fclose(f) ? -errno : 0;
}

/* ---- command line ---- */

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: inferd-perf -m MODEL [options]\n"
      "       inferd-perf --raw-get PATH [options]\n"
      "       inferd-perf --idle-connections N --idle-seconds S [-u H:P]\n"
      "  -m MODEL                 model name\n"
      "  -x VERSION               model version (default: the server's "
      "choice)\n"
      "  -b BATCH                 batch size (default 1)\n"
      "  -u HOST:PORT             server (default localhost:8000 http, "
      ":8001 grpc)\n"
      "  -i http|grpc             protocol (default http)\n"
      "  --concurrency-range S:E:STEP   closed loop (default 1:1:1)\n"
      "  --request-rate-range S:E:STEP  open loop, requests per second\n"
      "  --max-connections N      open loop: connections/streams cap "
      "(default 1024)\n"
      "  --grpc-connections N     gRPC sessions (default min(concurrency, "
      "4))\n"
      "  --shape NAME:D1,D2,...   dimensions of an input (without the batch "
      "one)\n"
      "  --measurement-interval MS, -p MS  window per step (default 5000)\n"
      "  --warmup MS              warm-up per step, not measured (default "
      "1000)\n"
      "  --percentile N           latency used in the summary (default: "
      "average)\n"
      "  --streaming              gRPC ModelStreamInfer\n"
      "  --input-data zero|random input contents (default random)\n"
      "  --http-format binary|json  tensor encoding over HTTP (default "
      "binary)\n"
      "  -f FILE                  perf_analyzer CSV\n"
      "  --json-summary FILE      machine-readable summary\n"
      "  --raw-get PATH           baseline: plain GET PATH, no model\n"
      "  --idle-connections N, --idle-seconds S  hold N idle keep-alive "
      "connections\n"
      "sequence models (config with sequence_batching):\n"
      "  --sequence-length N      base length of a sequence (default 20)\n"
      "  --sequence-length-variation P  +/- P%% of it (default 20)\n"
      "  --sequence-id-range S[:E]  ids from S up to E excluded (default 1, "
      "unbounded)\n"
      "  --num-of-sequences N     open loop: concurrent sequences (default "
      "4)\n"
      "  --serial-sequences       accepted: a sequence never has two "
      "requests in flight\n"
      "  --idle-sequences N --idle-seconds S  START N sequences, hold them, "
      "END them\n"
      "  --quiet                  only the final table\n");
}

static int parse_range(const char *s, double *a, double *b, double *c) {
  char *end;
  *a = strtod(s, &end);
  *b = *a;
  *c = 1;
  if (end == s || *a <= 0) return -1;
  if (*end == ':') {
    s = end + 1;
    *b = strtod(s, &end);
    if (end == s) return -1;
    if (*end == ':') {
      s = end + 1;
      *c = strtod(s, &end);
      if (end == s) return -1;
    }
  }
  if (*end) return -1;
  if (*b < *a) *b = *a;
  if (*c <= 0) *c = 1;
  return 0;
}

static int parse_shape(const char *s, ifd_perf_shape_t *sh) {
  const char *colon = strrchr(s, ':'), *p;
  char *end;
  if (!colon || colon == s || (size_t)(colon - s) >= sizeof sh->name) return -1;
  memcpy(sh->name, s, (size_t)(colon - s));
  sh->name[colon - s] = 0;
  sh->rank = 0;
  for (p = colon + 1; *p;) {
    long long d = strtoll(p, &end, 10);
    if (end == p || d < 0 || sh->rank == IFD_PERF_MAX_RANK) return -1;
    sh->dims[sh->rank++] = d;
    p = end;
    if (*p == ',')
      p++;
    else if (*p)
      return -1;
  }
  return 0;
}

static int parse_url(const char *u, ifd_perf_opts_t *o) {
  const char *p, *colon;
  size_t hl;
  if (!strncmp(u, "http://", 7)) u += 7;
  if (u[0] == '[') {
    p = strchr(u, ']');
    if (!p) return -1;
    hl = (size_t)(p - u - 1);
    u++;
    colon = p[1] == ':' ? p + 1 : NULL;
  } else {
    colon = strrchr(u, ':');
    hl = colon ? (size_t)(colon - u) : strlen(u);
  }
  if (hl == 0 || hl >= sizeof o->host) return -1;
  memcpy(o->host, u, hl);
  o->host[hl] = 0;
  if (colon) {
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (port <= 0 || port > 65535 || (*end && *end != '/')) return -1;
    o->port = (int)port;
  }
  return 0;
}

enum {
  O_CONC = 256,
  O_RATE,
  O_SHAPE,
  O_INTERVAL,
  O_PCT,
  O_STREAM,
  O_INPUT,
  O_FORMAT,
  O_WARMUP,
  O_RAW,
  O_IDLE_N,
  O_IDLE_S,
  O_QUIET,
  O_JSON,
  O_MAXC,
  O_GRPCC,
  O_SEQ_LEN,
  O_SEQ_VAR,
  O_SEQ_IDS,
  O_NUM_SEQ,
  O_SERIAL,
  O_IDLE_SEQ
};

/* "S" or "S:E" for --sequence-id-range: ids >= 1, E > S. */
static int parse_ids(const char *s, uint64_t *a, uint64_t *b) {
  char *end;
  if (*s < '0' || *s > '9') return -1;
  *a = strtoull(s, &end, 10);
  *b = 0;
  if (*end == ':' && end[1]) {
    s = end + 1;
    if (*s < '0' || *s > '9') return -1;
    *b = strtoull(s, &end, 10);
    if (*b <= *a) return -1;
  } else if (*end == ':') {
    end++;
  }
  return *end || *a == 0 ? -1 : 0;
}

static int parse_args(int argc, char **argv, ifd_perf_opts_t *o) {
  static const struct option lo[] = {
      {"concurrency-range", 1, 0, O_CONC},
      {"request-rate-range", 1, 0, O_RATE},
      {"shape", 1, 0, O_SHAPE},
      {"measurement-interval", 1, 0, O_INTERVAL},
      {"percentile", 1, 0, O_PCT},
      {"streaming", 0, 0, O_STREAM},
      {"input-data", 1, 0, O_INPUT},
      {"http-format", 1, 0, O_FORMAT},
      {"warmup", 1, 0, O_WARMUP},
      {"raw-get", 1, 0, O_RAW},
      {"idle-connections", 1, 0, O_IDLE_N},
      {"idle-seconds", 1, 0, O_IDLE_S},
      {"quiet", 0, 0, O_QUIET},
      {"json-summary", 1, 0, O_JSON},
      {"max-connections", 1, 0, O_MAXC},
      {"grpc-connections", 1, 0, O_GRPCC},
      {"sequence-length", 1, 0, O_SEQ_LEN},
      {"sequence-length-variation", 1, 0, O_SEQ_VAR},
      {"sequence-id-range", 1, 0, O_SEQ_IDS},
      {"num-of-sequences", 1, 0, O_NUM_SEQ},
      {"serial-sequences", 0, 0, O_SERIAL},
      {"idle-sequences", 1, 0, O_IDLE_SEQ},
      {"help", 0, 0, 'h'},
      {0, 0, 0, 0}};
  const char *url = NULL;
  int c, have_conc = 0;

  o->version = "";
  o->batch = 1;
  o->range_start = o->range_end = o->range_step = 1;
  o->max_connections = 1024;
  o->measure_ms = 5000;
  o->warmup_ms = 1000;
  o->percentile = -1;
  o->seq_length = 20;
  o->seq_variation = 20;
  o->seq_id_start = 1;
  o->num_sequences = 4;
  snprintf(o->host, sizeof o->host, "localhost");
  while ((c = getopt_long(argc, argv, "m:x:b:u:i:f:p:h", lo, NULL)) != -1) {
    switch (c) {
      case 'm':
        o->model = optarg;
        break;
      case 'x':
        o->version = optarg;
        break;
      case 'b':
        o->batch = atoi(optarg);
        break;
      case 'u':
        url = optarg;
        break;
      case 'i':
        if (!strcmp(optarg, "grpc"))
          o->grpc = 1;
        else if (strcmp(optarg, "http"))
          goto bad;
        break;
      case 'f':
        o->csv = optarg;
        break;
      case 'p':
      case O_INTERVAL:
        o->measure_ms = strtoull(optarg, NULL, 10);
        break;
      case O_CONC:
      case O_RATE:
        if (parse_range(optarg, &o->range_start, &o->range_end, &o->range_step))
          goto bad;
        if (c == O_RATE)
          o->open_loop = 1;
        else
          have_conc = 1;
        break;
      case O_SHAPE:
        if (o->nshapes == IFD_PERF_MAX_SHAPES ||
            parse_shape(optarg, &o->shapes[o->nshapes++]))
          goto bad;
        break;
      case O_PCT:
        o->percentile = atoi(optarg);
        break;
      case O_STREAM:
        o->streaming = 1;
        break;
      case O_INPUT:
        if (!strcmp(optarg, "zero"))
          o->zero_data = 1;
        else if (strcmp(optarg, "random"))
          goto bad;
        break;
      case O_FORMAT:
        if (!strcmp(optarg, "json"))
          o->http_json = 1;
        else if (strcmp(optarg, "binary"))
          goto bad;
        break;
      case O_WARMUP:
        o->warmup_ms = strtoull(optarg, NULL, 10);
        break;
      case O_RAW:
        o->raw_get = optarg;
        break;
      case O_IDLE_N:
        o->idle_connections = atoi(optarg);
        break;
      case O_IDLE_S:
        o->idle_seconds = atof(optarg);
        break;
      case O_QUIET:
        o->quiet = 1;
        break;
      case O_JSON:
        o->json_summary = optarg;
        break;
      case O_MAXC:
        o->max_connections = atoi(optarg);
        break;
      case O_GRPCC:
        o->grpc_connections = atoi(optarg);
        break;
      case O_SEQ_LEN: {
        char *end;
        o->seq_length = strtoull(optarg, &end, 10);
        if (*end || end == optarg || o->seq_length == 0) goto bad;
        break;
      }
      case O_SEQ_VAR: {
        char *end;
        o->seq_variation = strtod(optarg, &end);
        if (*end || end == optarg || o->seq_variation < 0) goto bad;
        break;
      }
      case O_SEQ_IDS:
        if (parse_ids(optarg, &o->seq_id_start, &o->seq_id_end)) goto bad;
        break;
      case O_NUM_SEQ:
        o->num_sequences = atoi(optarg);
        if (o->num_sequences < 1) goto bad;
        break;
      case O_SERIAL:
        break; /* always so: one slot per sequence */
      case O_IDLE_SEQ:
        o->idle_sequences = atoi(optarg);
        if (o->idle_sequences < 1) goto bad;
        break;
      case 'h':
        usage(stdout);
        exit(0);
      default:
        usage(stderr);
        return -1;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "error: unexpected argument '%s'\n", argv[optind]);
    return -1;
  }
  o->port = o->grpc ? 8001 : 8000;
  if (url && parse_url(url, o)) {
    fprintf(stderr, "error: bad -u '%s' (want HOST:PORT)\n", url);
    return -1;
  }
  if (have_conc && o->open_loop) {
    fprintf(stderr,
            "error: --concurrency-range and --request-rate-range "
            "exclude each other\n");
    return -1;
  }
  if ((o->raw_get || o->idle_connections) && o->grpc) {
    fprintf(stderr, "error: --raw-get and --idle-connections are HTTP only\n");
    return -1;
  }
  if (o->streaming && !o->grpc) {
    fprintf(stderr, "error: --streaming needs -i grpc\n");
    return -1;
  }
  if (!o->model && !o->raw_get && !o->idle_connections) {
    fprintf(stderr, "error: -m MODEL is required (or --raw-get PATH)\n");
    return -1;
  }
  if (o->batch < 1 || o->max_connections < 1 || o->measure_ms == 0 ||
      o->percentile == 0 || o->percentile > 99 || o->grpc_connections < 0 ||
      (o->raw_get && o->raw_get[0] != '/')) {
    fprintf(stderr, "error: an option is out of range (see --help)\n");
    return -1;
  }
  if (!o->open_loop && o->range_end > 100000) {
    fprintf(stderr, "error: concurrency above 100000\n");
    return -1;
  }
  return 0;

bad:
  fprintf(stderr, "error: bad value '%s' for an option\n", optarg);
  return -1;
}

static int resolve(ifd_perf_run_t *run) {
  const ifd_perf_opts_t *o = run->opts;
  struct addrinfo hints = {0}, *res = NULL;
  char port[16];
  int rc;

  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  snprintf(port, sizeof port, "%d", o->port);
  rc = getaddrinfo(o->host, port, &hints, &res);
  if (rc) {
    fprintf(stderr, "error: cannot resolve %s: %s\n", o->host,
            gai_strerror(rc));
    return -1;
  }
  memcpy(&run->addr, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  snprintf(run->authority, sizeof run->authority,
           strchr(o->host, ':') ? "[%s]:%d" : "%s:%d", o->host, o->port);
  return 0;
}

static void raise_nofile(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

int main(int argc, char **argv) {
  static ifd_perf_opts_t opts;
  ifd_perf_run_t run = {0};
  ifd_perf_model_t model = {0};
  uv_loop_t loop;
  step_t *steps = NULL;
  char err[IFD_PERF_ERR_MAX] = "";
  double v, maxv;
  int nsteps = 0, cap = 0, rc = 1, any_err = 0, i;

  if (parse_args(argc, argv, &opts)) return 2;
  raise_nofile();
  signal(SIGPIPE, SIG_IGN);
  if (uv_loop_init(&loop)) return 1;
  run.loop = &loop;
  run.opts = &opts;
  uv_timer_init(&loop, &run.rate_timer);
  run.caplat = 1 << 20;
  run.lat = malloc(run.caplat * sizeof *run.lat);
  if (!run.lat || resolve(&run)) goto out_loop;

  if (opts.idle_connections > 0) {
    if (ifd__perf_http_init(&run)) goto out_loop;
    rc = ifd__perf_http_idle(&run, opts.idle_connections, opts.idle_seconds)
             ? 1
             : 0;
    goto out_transport;
  }

  if (opts.grpc) {
    maxv = opts.open_loop ? 4 : opts.range_end;
    int n = opts.grpc_connections ? opts.grpc_connections
                                  : (int)(maxv < 4 ? maxv : 4);
    if (ifd__perf_grpc_init(&run, n < 1 ? 1 : n, err, sizeof err) < 0) {
      fprintf(stderr, "error: %s\n", err);
      goto out_transport;
    }
  } else if (ifd__perf_http_init(&run)) {
    goto out_transport;
  }

  if (opts.raw_get) {
    if (ifd__perf_buf_printf(&run.payload,
                             "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n",
                             opts.raw_get, run.authority))
      goto out_transport;
  } else {
    if (ifd__perf_model_load(&run, &model, err, sizeof err) < 0 ||
        ifd__perf_model_payload(&run, &model, err, sizeof err) < 0) {
      fprintf(stderr, "error: %s\n", err);
      goto out_model;
    }
    run.sequence = model.sequence;
    if (run.sequence && !opts.grpc && ifd__perf_seq_locate(&run) < 0) {
      fprintf(stderr, "error: no sequence parameters in the request\n");
      goto out_model;
    }
    if (opts.idle_sequences && !run.sequence) {
      fprintf(stderr,
              "error: --idle-sequences needs a sequence model ('%s' has no "
              "sequence_batching)\n",
              opts.model);
      goto out_model;
    }
    if (run.sequence && opts.seq_id_end) {
      /* As perf_analyzer: refuse a range that cannot give every live
       * sequence its own id. */
      uint64_t live = opts.idle_sequences ? (uint64_t)opts.idle_sequences
                      : opts.open_loop    ? (uint64_t)opts.num_sequences
                                          : (uint64_t)opts.range_end;
      if (opts.seq_id_end - opts.seq_id_start < live) {
        fprintf(stderr,
                "error: --sequence-id-range %llu:%llu has fewer ids than the "
                "%llu sequences that may be live at once\n",
                (unsigned long long)opts.seq_id_start,
                (unsigned long long)opts.seq_id_end, (unsigned long long)live);
        rc = 2;
        goto out_model;
      }
    }
    if (opts.idle_sequences) {
      rc = idle_sequences(&run);
      goto out_model;
    }
  }

  if (!opts.quiet) {
    printf("*** Measurement Settings ***\n");
    printf("  Batch size: %d\n", opts.raw_get ? 1 : opts.batch);
    printf("  Service Kind: %s\n",
           opts.raw_get ? "raw HTTP GET" : "Triton (inferd-perf)");
    printf("  Protocol: %s\n",
           opts.grpc ? (opts.streaming ? "gRPC streaming" : "gRPC")
                     : (opts.raw_get     ? "HTTP/1.1"
                        : opts.http_json ? "HTTP/1.1 JSON"
                                         : "HTTP/1.1 binary tensors"));
    printf("  Using \"time_windows\" mode for stabilization\n");
    printf("  Measurement window: %llu msec\n",
           (unsigned long long)opts.measure_ms);
    printf("  Warm-up: %llu msec\n", (unsigned long long)opts.warmup_ms);
    if (opts.open_loop)
      printf("  Using uniform distribution on request generation\n");
    else
      printf("  Using synchronous calls for inference\n");
    if (run.sequence) {
      printf("  Sequence model: length %llu +/- %g%%, ids from %llu",
             (unsigned long long)opts.seq_length, opts.seq_variation,
             (unsigned long long)opts.seq_id_start);
      if (opts.seq_id_end)
        printf(" to %llu (excluded)", (unsigned long long)opts.seq_id_end);
      if (opts.open_loop)
        printf(", %d concurrent sequences", opts.num_sequences);
      else
        printf(", one sequence per concurrent request");
      printf("\n");
    }
    printf("\n");
    fflush(stdout);
  }

  for (v = opts.range_start; v <= opts.range_end + 1e-9; v += opts.range_step) {
    if (nsteps == cap) {
      void *p;
      cap = cap ? cap * 2 : 8;
      p = realloc(steps, (size_t)cap * sizeof *steps);
      if (!p) goto out_model;
      steps = p;
    }
    if (measure_step(&run, opts.raw_get ? NULL : &model, v, &steps[nsteps], err,
                     sizeof err) < 0) {
      fprintf(stderr, "error: %s\n", err);
      goto out_model;
    }
    if (steps[nsteps].errors || steps[nsteps].first_err[0]) any_err = 1;
    if (!opts.quiet) print_step(&opts, &steps[nsteps]);
    fflush(stdout);
    nsteps++;
    if (opts.json_summary && write_json(&opts, steps, nsteps) < 0)
      fprintf(stderr, "warning: cannot write %s\n", opts.json_summary);
  }

  if (opts.percentile > 0)
    printf("Inferences/Second vs. Client p%d Batch Latency\n", opts.percentile);
  else
    printf("Inferences/Second vs. Client Average Batch Latency\n");
  for (i = 0; i < nsteps; i++)
    printf("%s: %g, throughput: %g infer/sec, latency %.0f usec\n",
           opts.open_loop ? "Request Rate" : "Concurrency", steps[i].value,
           steps[i].throughput, step_latency(&opts, &steps[i]));
  if (opts.csv && write_csv(&opts, steps, nsteps) < 0)
    fprintf(stderr, "warning: cannot write %s\n", opts.csv);
  if (any_err) {
    fprintf(stderr, "error: some requests failed (see \"First error\")\n");
    rc = 1;
  } else {
    rc = 0;
  }

out_model:
  ifd__perf_model_free(&model);
out_transport:
  ifd__perf_grpc_shutdown(&run);
  ifd__perf_http_shutdown(&run);
out_loop:
  uv_close((uv_handle_t *)&run.rate_timer, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  if (uv_loop_close(&loop)) fprintf(stderr, "warning: handles left open\n");
  ifd__perf_buf_free(&run.payload);
  free(run.slots);
  free(run.lat);
  free(steps);
  return rc;
}
