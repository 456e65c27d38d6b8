/*
 * bench/perf/measure.c - one measurement step of inferd-perf, and
 * perf_analyzer's report of the steps.
 *
 * A step (one concurrency or one request rate) runs like this:
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
 * time from the window's start to its last completion. The report prints
 * each step as perf_analyzer does, and writes its CSV (-f) and our JSON
 * summary (--json-summary).
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench/perf/perf.h"

/* ---- one step ---- */

/* This process's CPU time (user + system, every thread), usec. */
static double cpu_self_us(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru)) return -1;
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* Process pid's CPU time (utime + stime of /proc/pid/stat), usec; -1 when
 * it cannot be read. */
static double cpu_pid_us(int pid) {
  char path[64], buf[1024], *p;
  unsigned long long ut, st;
  FILE *f;
  size_t n;

  if (pid <= 0) return -1;
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  f = fopen(path, "r");
  if (!f) return -1;
  n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  p = strrchr(buf, ')'); /* the command name may hold spaces */
  if (!p ||
      sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
             &ut, &st) != 2)
    return -1;
  return (double)(ut + st) * 1e6 / (double)sysconf(_SC_CLK_TCK);
}

/* Appends pid's children (every thread's /proc/pid/task/T/children) to
 * set[*n], up to max. */
static void add_children(int pid, int *set, int *n, int max) {
  char path[96];
  DIR *d;
  struct dirent *e;

  snprintf(path, sizeof path, "/proc/%d/task", pid);
  d = opendir(path);
  if (!d) return;
  while ((e = readdir(d)) != NULL) {
    FILE *f;
    int child;
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "/proc/%d/task/%.32s/children", pid, e->d_name);
    f = fopen(path, "r");
    if (!f) continue;
    while (*n < max && fscanf(f, "%d", &child) == 1) set[(*n)++] = child;
    fclose(f);
  }
  closedir(d);
}

/* The processes whose CPU time a window sums: --cpu-pid's, then (with
 * --cpu-children) their children at this moment. Returns how many. */
static int cpu_set(const ifd_perf_opts_t *o, int *set) {
  int n = 0, i;
  for (i = 0; i < o->n_cpu_pids; i++) set[n++] = o->cpu_pids[i];
  if (o->cpu_children)
    for (i = 0; i < o->n_cpu_pids; i++)
      add_children(o->cpu_pids[i], set, &n, IFD_PERF_CPU_SET_MAX);
  return n;
}

/* The summed CPU time of set[0..n), usec; -1 when one cannot be read. */
static double cpu_set_us(const int *set, int n) {
  double sum = 0;
  int i;
  for (i = 0; i < n; i++) {
    double us = cpu_pid_us(set[i]);
    if (us < 0) return -1;
    sum += us;
  }
  return sum;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static double pct_ns(const uint64_t *v, size_t n, double p) {
  size_t idx;
  if (!n) return 0;
  idx = (size_t)ceil(p / 100.0 * (double)n);
  if (idx < 1) idx = 1;
  if (idx > n) idx = n;
  return (double)v[idx - 1];
}

static double pct(const uint64_t *v, size_t n, double p) {
  return floor(pct_ns(v, n, p) / 1000);
}

static void stats_delta(const ifd_perf_stats_t *a, const ifd_perf_stats_t *b,
                        ifd_perf_stats_t *d) {
  const uint64_t *pa = (const uint64_t *)a, *pb = (const uint64_t *)b;
  uint64_t *pd = (uint64_t *)d;
  size_t i;
  for (i = 0; i < sizeof *d / sizeof(uint64_t); i++) pd[i] = pb[i] - pa[i];
}

int ifd__perf_measure_step(ifd_perf_run_t *run, const ifd_perf_model_t *m,
                           double value, ifd_perf_step_t *r, char *err,
                           size_t errlen) {
  const ifd_perf_opts_t *o = run->opts;
  ifd_perf_stats_t before, after;
  uint64_t t0, t1, sum = 0;
  double var = 0, mean, cpu0, cpu1, pid0 = -1, pid1 = -1;
  int set[IFD_PERF_CPU_SET_MAX], nset;
  size_t i;
  int rc;

  memset(r, 0, sizeof *r);
  r->value = value;
  run->concurrency = (int)value;
  run->rate = value;
  run->have_err = 0;
  if (o->warmup_ms) {
    run->recording = 0;
    rc = ifd__perf_sched_start(run);
    if (rc == 0) ifd__perf_run_until(run, NULL, o->warmup_ms);
    if (rc == 0) rc = ifd__perf_sched_drain(run);
    if (rc < 0 && !run->fatal)
      ifd__perf_run_fail(run, rc, "warm-up: %s", uv_strerror(rc));
  }
  if (run->fatal) goto out_fatal;
  if (m) {
    rc = ifd__perf_stats_read(run, m, &before, err, errlen);
    if (rc < 0) return rc;
  }
  run->nlat = 0;
  run->nlat_first = 0;
  run->responses = 0;
  run->errors = 0;
  run->delayed = 0;
  run->have_err = 0;
  run->recording = 1;
  nset = cpu_set(o, set);
  if (nset) pid0 = cpu_set_us(set, nset);
  cpu0 = cpu_self_us();
  t0 = uv_hrtime();
  rc = ifd__perf_sched_start(run);
  if (rc == 0) ifd__perf_run_until(run, NULL, o->measure_ms);
  /* A sequence model's last requests, sent while draining, end the open
   * sequences: they are counted, as the server counts them. */
  if (!run->sequence) run->recording = 0;
  if (rc == 0) rc = ifd__perf_sched_drain(run);
  run->recording = 0;
  t1 = uv_hrtime();
  cpu1 = cpu_self_us();
  if (nset) pid1 = cpu_set_us(set, nset);
  r->cpu_self_us = cpu0 >= 0 && cpu1 >= 0 ? cpu1 - cpu0 : -1;
  r->cpu_pid_us = pid0 >= 0 && pid1 >= 0 ? pid1 - pid0 : -1;
  r->n_cpu_set = nset;
  if (rc < 0 && !run->fatal)
    ifd__perf_run_fail(run, rc, "requests did not finish: %s", uv_strerror(rc));
  if (run->fatal) goto out_fatal;
  if (m) {
    int tries;
    /* The server counts a request when its release is processed, which
     * may come a moment after its response reached us: read again, briefly,
     * until the server has counted what we were answered. */
    for (tries = 0;; tries++) {
      rc = ifd__perf_stats_read(run, m, &after, err, errlen);
      if (rc < 0) return rc;
      stats_delta(&before, &after, &r->d);
      if (r->d.success_count + r->d.fail_count >= run->nlat || tries >= 50)
        break;
      ifd__perf_run_until(run, NULL, 2);
    }
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
  r->avg_ns = mean;
  r->std_us = run->nlat ? floor(sqrt(var / (double)run->nlat) / 1000) : 0;
  qsort(run->lat, run->nlat, sizeof *run->lat, cmp_u64);
  r->p50 = pct(run->lat, run->nlat, 50);
  r->p90 = pct(run->lat, run->nlat, 90);
  r->p95 = pct(run->lat, run->nlat, 95);
  r->p99 = pct(run->lat, run->nlat, 99);
  r->p50_ns = pct_ns(run->lat, run->nlat, 50);
  r->p99_ns = pct_ns(run->lat, run->nlat, 99);
  if (o->percentile > 0) r->pn = pct(run->lat, run->nlat, o->percentile);
  if (run->decoupled) {
    r->decoupled = 1;
    r->responses = run->responses;
    r->first_count = run->nlat_first;
    r->resp_throughput = (double)r->responses / r->secs;
    sum = 0;
    for (i = 0; i < run->nlat_first; i++) sum += run->lat_first[i];
    r->f_avg = run->nlat_first
                   ? floor((double)sum / (double)run->nlat_first / 1000)
                   : 0;
    qsort(run->lat_first, run->nlat_first, sizeof *run->lat_first, cmp_u64);
    r->f_p50 = pct(run->lat_first, run->nlat_first, 50);
    r->f_p90 = pct(run->lat_first, run->nlat_first, 90);
    r->f_p95 = pct(run->lat_first, run->nlat_first, 95);
    r->f_p99 = pct(run->lat_first, run->nlat_first, 99);
    if (o->percentile > 0)
      r->f_pn = pct(run->lat_first, run->nlat_first, o->percentile);
  }
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

double ifd__perf_measure_latency(const ifd_perf_opts_t *o,
                                 const ifd_perf_step_t *r) {
  return o->percentile > 0 ? r->pn : r->avg_us;
}

void ifd__perf_measure_print(const ifd_perf_opts_t *o,
                             const ifd_perf_step_t *r) {
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
  if (r->decoupled) {
    printf(
        "    (latencies above: request complete, up to its final response)"
        "\n");
    printf("    Response count: %llu\n", (unsigned long long)r->responses);
    printf("    Response throughput: %g responses/sec\n", r->resp_throughput);
    printf("    First response count: %llu\n",
           (unsigned long long)r->first_count);
    printf("    First response avg latency: %.0f usec\n", r->f_avg);
    printf("    First response p50 latency: %.0f usec\n", r->f_p50);
    printf("    First response p90 latency: %.0f usec\n", r->f_p90);
    printf("    First response p95 latency: %.0f usec\n", r->f_p95);
    printf("    First response p99 latency: %.0f usec\n", r->f_p99);
    if (o->percentile > 0 && o->percentile != 50 && o->percentile != 90 &&
        o->percentile != 95 && o->percentile != 99)
      printf("    First response p%d latency: %.0f usec\n", o->percentile,
             r->f_pn);
  }
  if (r->count && r->cpu_self_us >= 0)
    printf("    CPU of this process%s: %.2f usec per request\n",
           o->capi ? " (the embedded server included)" : "",
           r->cpu_self_us / (double)r->count);
  if (r->count && r->cpu_pid_us >= 0) {
    if (r->n_cpu_set == 1)
      printf("    CPU of process %d: %.2f usec per request\n", o->cpu_pids[0],
             r->cpu_pid_us / (double)r->count);
    else
      printf("    CPU of processes %s%s (%d): %.2f usec per request\n",
             o->cpu_pids_arg, o->cpu_children ? " and children" : "",
             r->n_cpu_set, r->cpu_pid_us / (double)r->count);
  }
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

int ifd__perf_measure_write_csv(const ifd_perf_opts_t *o,
                                const ifd_perf_step_t *st, int n) {
  FILE *f = fopen(o->csv, "w");
  int i;
  if (!f) return -errno;
  fprintf(f,
          "%s,Inferences/Second,Client Send,Network+Server Send/Recv,"
          "Server Queue,Server Compute Input,Server Compute Infer,"
          "Server Compute Output,Client Recv,p50 latency,p90 latency,"
          "p95 latency,p99 latency%s\n",
          o->open_loop ? "Request Rate" : "Concurrency",
          n > 0 && st[0].decoupled
              ? ",Responses/Second,First Response p50 latency,First Response "
                "p90 latency,First Response p95 latency,First Response p99 "
                "latency"
              : "");
  for (i = 0; i < n; i++) {
    const ifd_perf_step_t *r = &st[i];
    double server = r->s_queue + r->s_cin + r->s_cinfer + r->s_cout;
    double net = r->avg_us - server;
    fprintf(f, "%g,%.1f,0,%.0f,%.0f,%.0f,%.0f,%.0f,0,%.0f,%.0f,%.0f,%.0f",
            r->value, r->throughput, net > 0 ? net : 0, r->s_queue, r->s_cin,
            r->s_cinfer, r->s_cout, r->p50, r->p90, r->p95, r->p99);
    if (r->decoupled)
      fprintf(f, ",%.1f,%.0f,%.0f,%.0f,%.0f", r->resp_throughput, r->f_p50,
              r->f_p90, r->f_p95, r->f_p99);
    fprintf(f, "\n");
  }
  return fclose(f) ? -errno : 0;
}

/* Percentiles the JSON summary always carries under their own keys. */
static int fixed_percentile(int p) {
  return p == 50 || p == 90 || p == 95 || p == 99;
}

int ifd__perf_measure_write_json(const ifd_perf_opts_t *o,
                                 const ifd_perf_step_t *st, int n) {
  FILE *f = fopen(o->json_summary, "w");
  int i;
  if (!f) return -errno;
  fprintf(f,
          "{\"tool\":\"inferd-perf\",\"mode\":\"%s\",\"protocol\":\"%s\","
          "\"batch\":%d,\"steps\":[",
          o->open_loop ? "request_rate" : "concurrency",
          o->raw_get ? "raw-get"
          : o->capi  ? "triton_c_api"
          : o->grpc  ? (o->streaming ? "grpc-stream" : "grpc")
                     : (o->http_json ? "http-json" : "http-binary"),
          o->batch);
  for (i = 0; i < n; i++) {
    const ifd_perf_step_t *r = &st[i];
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
    /* The fixed keys hold p50/p90/p95/p99 already: a duplicate key would
     * make the JSON ambiguous. */
    if (o->percentile > 0 && !fixed_percentile(o->percentile))
      fprintf(f, ",\"p%d_latency_us\":%.0f", o->percentile, r->pn);
    fprintf(f,
            ",\"avg_latency_ns\":%.0f,\"p50_latency_ns\":%.0f,"
            "\"p99_latency_ns\":%.0f",
            r->avg_ns, r->p50_ns, r->p99_ns);
    if (r->cpu_self_us >= 0)
      fprintf(f, ",\"cpu_self_us\":%.0f,\"cpu_self_us_per_request\":%.3f",
              r->cpu_self_us,
              r->count ? r->cpu_self_us / (double)r->count : 0.0);
    if (r->cpu_pid_us >= 0)
      fprintf(f,
              ",\"cpu_pid\":%d,\"cpu_pids\":%d,\"cpu_pid_us\":%.0f,"
              "\"cpu_pid_us_per_request\":%.3f",
              o->cpu_pids[0], r->n_cpu_set, r->cpu_pid_us,
              r->count ? r->cpu_pid_us / (double)r->count : 0.0);
    if (r->decoupled) {
      fprintf(f,
              ",\"responses\":%llu,\"response_throughput\":%.3f,"
              "\"first_response\":{\"count\":%llu,\"avg_latency_us\":%.0f,"
              "\"p50_latency_us\":%.0f,\"p90_latency_us\":%.0f,"
              "\"p95_latency_us\":%.0f,\"p99_latency_us\":%.0f",
              (unsigned long long)r->responses, r->resp_throughput,
              (unsigned long long)r->first_count, r->f_avg, r->f_p50, r->f_p90,
              r->f_p95, r->f_p99);
      if (o->percentile > 0 && !fixed_percentile(o->percentile))
        fprintf(f, ",\"p%d_latency_us\":%.0f", o->percentile, r->f_pn);
      fprintf(f, "}");
    }
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
