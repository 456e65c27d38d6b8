/*
 * core/metrics.c - the Prometheus exposition and the sampled gauges.
 */
#include "core/metrics.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "base/util.h"
#include "core/cache.h"
#include "core/model.h"
#include "core/runtime.h"
#include "cuda/cuda_mem.h"
#include "cuda/gpu.h"

/* GPUs whose gauges are sampled (NVML numbers them from 0). */
#define MAX_GPUS 16

/* What a sample reads from /proc, on the thread pool. */
typedef struct sample {
  uint64_t cpu_busy, cpu_total;  /* /proc/stat jiffies, all CPUs */
  uint64_t mem_total, mem_avail; /* /proc/meminfo, bytes */
  uint64_t proc_cpu_ticks;       /* /proc/self/stat utime + stime */
  uint64_t proc_rss;             /* bytes */
  int ok;
  ifd_gpu_sample_t gpus[MAX_GPUS]; /* NVML's gauges, when it is there */
  size_t n_gpus;
} sample_t;

struct ifd_metrics {
  ifd_server_t *server; /* borrowed */
  uv_timer_t timer;     /* embedded */
  uv_work_t work;       /* embedded: one sample at a time */
  int sampling, stopping;
  sample_t next;   /* written by the worker, read after-work */
  sample_t last;   /* loop thread */
  double cpu_util; /* 0..1 over the last interval */
  /* GPU gauges (--allow-gpu-metrics): NVML is opened by the first sample,
   * on the thread pool, and closed there when sampling stops. */
  int allow_gpu;
  int no_cpu;       /* --allow-cpu-metrics=false; loop thread */
  int nvml_tried;   /* worker: the open was attempted */
  ifd_nvml_t *nvml; /* owned, used by the worker only: NULL when absent */
  uint64_t energy_base_mj[MAX_GPUS]; /* loop: first energy reading per GPU */
  int have_energy_base[MAX_GPUS];
  void (*done)(void *);
  void *done_arg;
  /* The response cache's gauges, copied every interval (loop thread). */
  ifd_cache_stats_t cache_snap;
  int have_cache;
};

/* ---- sampling (thread pool) --------------------------------------------- */

static void read_sample(sample_t *s) {
  FILE *f;
  char line[512];
  long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
  memset(s, 0, sizeof(*s));
  f = fopen("/proc/stat", "r");
  if (f != NULL) {
    unsigned long long v[8] = {0};
    if (fgets(line, sizeof(line), f) != NULL &&
        sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
               &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) >= 4) {
      int i;
      for (i = 0; i < 8; i++) s->cpu_total += v[i];
      s->cpu_busy = s->cpu_total - v[3] - v[4]; /* minus idle and iowait */
    }
    fclose(f);
  }
  f = fopen("/proc/meminfo", "r");
  if (f != NULL) {
    while (fgets(line, sizeof(line), f) != NULL) {
      unsigned long long kb;
      if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) s->mem_total = kb * 1024;
      if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
        s->mem_avail = kb * 1024;
    }
    fclose(f);
  }
  f = fopen("/proc/self/stat", "r");
  if (f != NULL) {
    char buf[1024];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    char *p;
    buf[n] = '\0';
    /* Fields after the command name, which may hold spaces: skip past ')'. */
    p = strrchr(buf, ')');
    if (p != NULL) {
      unsigned long long ut = 0, st = 0, rss = 0;
      if (sscanf(p + 2,
                 "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu "
                 "%*d %*d %*d %*d %*d %*d %*u %*u %llu",
                 &ut, &st, &rss) == 3) {
        s->proc_cpu_ticks = ut + st;
        s->proc_rss = rss * (uint64_t)page;
      }
    }
    fclose(f);
  }
  (void)tick;
  s->ok = s->cpu_total > 0;
}

static void sample_work(uv_work_t *w) {
  ifd_metrics_t *m = ifd_container_of(w, ifd_metrics_t, work);
  read_sample(&m->next);
  /* allow_gpu is fixed before the first tick; only one sample runs at a
   * time, so nvml and nvml_tried belong to whichever worker runs it. */
  if (m->allow_gpu && !m->nvml_tried) {
    m->nvml_tried = 1;
    if (ifd_nvml_open(NULL, &m->nvml) < 0) m->nvml = NULL;
  }
  m->next.n_gpus = ifd_nvml_sample(m->nvml, m->next.gpus, MAX_GPUS);
}

static void finish_stop(ifd_metrics_t *m);

static void sample_after(uv_work_t *w, int status) {
  ifd_metrics_t *m = ifd_container_of(w, ifd_metrics_t, work);
  (void)status;
  m->sampling = 0;
  if (m->next.ok) {
    if (m->last.ok && m->next.cpu_total > m->last.cpu_total)
      m->cpu_util = (double)(m->next.cpu_busy - m->last.cpu_busy) /
                    (double)(m->next.cpu_total - m->last.cpu_total);
    m->last = m->next;
  }
  for (size_t i = 0; i < m->next.n_gpus; i++)
    if (m->next.gpus[i].has_energy && !m->have_energy_base[i]) {
      m->energy_base_mj[i] = m->next.gpus[i].energy_mj;
      m->have_energy_base[i] = 1;
    }
  if (m->stopping) finish_stop(m);
}

static void on_tick(uv_timer_t *t) {
  ifd_metrics_t *m = ifd_container_of(t, ifd_metrics_t, timer);
  ifd_cache_t *c = ifd_server_cache(m->server);
  if (c != NULL) {
    ifd_cache_stats(c, &m->cache_snap);
    m->have_cache = 1;
  }
  if (m->sampling || m->stopping) return;
  m->sampling = 1;
  if (uv_queue_work(t->loop, &m->work, sample_work, sample_after) < 0)
    m->sampling = 0;
}

int ifd_metrics_start(ifd_server_t *s, uint64_t interval_ms,
                      ifd_metrics_t **out) {
  ifd_metrics_t *m = calloc(1, sizeof(*m));
  if (m == NULL) return IFD_ENOMEM;
  m->server = s;
  uv_timer_init(ifd_server_loop(s), &m->timer);
  uv_timer_start(&m->timer, on_tick, 0, interval_ms > 0 ? interval_ms : 1);
  *out = m;
  return 0;
}

static void on_timer_closed(uv_handle_t *h) {
  ifd_metrics_t *m = ifd_container_of((uv_timer_t *)h, ifd_metrics_t, timer);
  void (*done)(void *) = m->done;
  void *arg = m->done_arg;
  free(m);
  if (done != NULL) done(arg);
}

static void close_nvml_work(uv_work_t *w) {
  ifd_metrics_t *m = ifd_container_of(w, ifd_metrics_t, work);
  ifd_nvml_close(m->nvml);
  m->nvml = NULL;
}

static void close_nvml_after(uv_work_t *w, int status) {
  ifd_metrics_t *m = ifd_container_of(w, ifd_metrics_t, work);
  (void)status;
  uv_close((uv_handle_t *)&m->timer, on_timer_closed);
}

/* NVML is closed on the thread pool (nvmlShutdown and dlclose block), then
 * the timer. */
static void finish_stop(ifd_metrics_t *m) {
  if (m->nvml != NULL && uv_queue_work(m->timer.loop, &m->work, close_nvml_work,
                                       close_nvml_after) == 0)
    return;
  uv_close((uv_handle_t *)&m->timer, on_timer_closed);
}

void ifd_metrics_allow_gpu(ifd_metrics_t *m, int allow) {
  m->allow_gpu = allow;
}

void ifd_metrics_allow_cpu(ifd_metrics_t *m, int allow) {
  m->no_cpu = !allow;
}

void ifd_metrics_stop(ifd_metrics_t *m, void (*done)(void *arg), void *arg) {
  m->stopping = 1;
  m->done = done;
  m->done_arg = arg;
  uv_timer_stop(&m->timer);
  /* A sample in flight finishes first; its after-work closes the timer. */
  if (!m->sampling) finish_stop(m);
}

/* ---- exposition ------------------------------------------------------------
 */

typedef struct out {
  char *buf;
  size_t len, cap;
  int failed;
} out_t;

/* Makes room for at least n more bytes; on failure marks the output failed
 * and returns -1. */
static int grow(out_t *o, size_t n) {
  size_t ncap = (o->cap ? o->cap * 2 : 4096) + n;
  char *nb = realloc(o->buf, ncap);
  if (nb == NULL) {
    o->failed = 1;
    return -1;
  }
  o->buf = nb;
  o->cap = ncap;
  return 0;
}

static void put(out_t *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void put(out_t *o, const char *fmt, ...) {
  va_list ap;
  int n;
  if (o->failed) return;
  for (;;) {
    size_t room = o->cap - o->len;
    va_start(ap, fmt);
    n = vsnprintf(o->buf ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n < 0) {
      o->failed = 1;
      return;
    }
    if ((size_t)n < room) {
      o->len += (size_t)n;
      return;
    }
    if (grow(o, (size_t)n) != 0) return;
  }
}

/* Appends n bytes as they are. */
static void put_raw(out_t *o, const char *s, size_t n) {
  if (o->failed || n == 0) return;
  if (o->cap - o->len < n && grow(o, n) != 0) return;
  memcpy(o->buf + o->len, s, n);
  o->len += n;
}

/* Prometheus label values escape backslash, double quote and newline. */
static void put_label(out_t *o, const char *v) {
  for (; *v != '\0'; v++) {
    if (*v == '\\')
      put(o, "\\\\");
    else if (*v == '"')
      put(o, "\\\"");
    else if (*v == '\n')
      put(o, "\\n");
    else
      put(o, "%c", *v);
  }
}

/* family_t.flags */
#define F_SEQ 1   /* only models with a sequence batcher have a sample */
#define F_LAT 2   /* a latency counter: left out with counter_latencies=false */
#define F_CACHE 4 /* only models with the response cache on have a sample */

typedef struct family {
  const char *name, *help, *type;
  uint64_t (*get)(const ifd_model_t *m);
  int flags; /* F_* */
} family_t;

static uint64_t g_success(const ifd_model_t *m) {
  return m->stats.success.count;
}
static uint64_t g_failure(const ifd_model_t *m) {
  return m->stats.fail.count;
}
static uint64_t g_count(const ifd_model_t *m) {
  return m->stats.inference_count;
}
static uint64_t g_exec(const ifd_model_t *m) {
  return m->stats.execution_count;
}
static uint64_t g_req_us(const ifd_model_t *m) {
  return m->stats.success.ns / 1000;
}
static uint64_t g_queue_us(const ifd_model_t *m) {
  return m->stats.queue.ns / 1000;
}
static uint64_t g_in_us(const ifd_model_t *m) {
  return m->stats.compute_input.ns / 1000;
}
static uint64_t g_infer_us(const ifd_model_t *m) {
  return m->stats.compute_infer.ns / 1000;
}
static uint64_t g_out_us(const ifd_model_t *m) {
  return m->stats.compute_output.ns / 1000;
}
static uint64_t g_cache_hits(const ifd_model_t *m) {
  return m->stats.cache_hit.count;
}
static uint64_t g_cache_hit_us(const ifd_model_t *m) {
  return m->stats.cache_hit.ns / 1000;
}
static uint64_t g_cache_misses(const ifd_model_t *m) {
  return m->stats.cache_miss.count;
}
static uint64_t g_cache_miss_us(const ifd_model_t *m) {
  return m->stats.cache_miss.ns / 1000;
}
static uint64_t g_pending(const ifd_model_t *m) {
  return ifd_server_opts(m->server)->ops->queued(m);
}

/* The sequence batcher's gauges (no Triton release has them). */
static int seq_counts(const ifd_model_t *m, uint64_t *active,
                      uint64_t *backlog) {
  const ifd_model_ops_t *ops = ifd_server_opts(m->server)->ops;
  return ops->sequences != NULL ? ops->sequences(m, active, backlog) : -1;
}
static uint64_t g_seq_active(const ifd_model_t *m) {
  uint64_t a = 0, b = 0;
  seq_counts(m, &a, &b);
  return a;
}
static uint64_t g_seq_backlog(const ifd_model_t *m) {
  uint64_t a = 0, b = 0;
  seq_counts(m, &a, &b);
  return b;
}

/* Names, help texts and types as tritonserver prints them, then inferd's. */
static const family_t families[] = {
    {"nv_inference_request_success",
     "Number of successful inference requests, all batch sizes", "counter",
     g_success, 0},
    {"nv_inference_request_failure",
     "Number of failed inference requests, all batch sizes", "counter",
     g_failure, 0},
    {"nv_inference_count",
     "Number of inferences performed (does not include cached requests)",
     "counter", g_count, 0},
    {"nv_inference_exec_count",
     "Number of model executions performed (does not include cached "
     "requests)",
     "counter", g_exec, 0},
    {"nv_inference_request_duration_us",
     "Cumulative inference request duration in microseconds (includes cached "
     "requests)",
     "counter", g_req_us, F_LAT},
    {"nv_inference_queue_duration_us",
     "Cumulative inference queuing duration in microseconds (includes cached "
     "requests)",
     "counter", g_queue_us, F_LAT},
    {"nv_inference_compute_input_duration_us",
     "Cumulative compute input duration in microseconds (does not include "
     "cached requests)",
     "counter", g_in_us, F_LAT},
    {"nv_inference_compute_infer_duration_us",
     "Cumulative compute inference duration in microseconds (does not include "
     "cached requests)",
     "counter", g_infer_us, F_LAT},
    {"nv_inference_compute_output_duration_us",
     "Cumulative inference compute output duration in microseconds (does not "
     "include cached requests)",
     "counter", g_out_us, F_LAT},
    {"nv_cache_num_hits_per_model", "Number of cache hits per model", "counter",
     g_cache_hits, F_CACHE},
    {"nv_cache_hit_duration_per_model",
     "Total cache hit duration per model, in microseconds", "counter",
     g_cache_hit_us, F_CACHE | F_LAT},
    {"nv_cache_num_misses_per_model", "Number of cache misses per model",
     "counter", g_cache_misses, F_CACHE},
    {"nv_cache_miss_duration_per_model",
     "Total cache miss (insert+lookup) duration per model, in microseconds",
     "counter", g_cache_miss_us, F_CACHE | F_LAT},
    {"nv_inference_pending_request_count",
     "Instantaneous number of pending requests awaiting execution per-model.",
     "gauge", g_pending, 0},
    {"inferd_sequence_active",
     "Instantaneous number of sequences holding a sequence batcher slot "
     "per-model.",
     "gauge", g_seq_active, F_SEQ},
    {"inferd_sequence_backlog",
     "Instantaneous number of sequences waiting for a sequence batcher slot "
     "per-model.",
     "gauge", g_seq_backlog, F_SEQ},
};

typedef struct fam_ctx {
  out_t *o;
  const family_t *f;
} fam_ctx_t;

static void any_seq(ifd_model_t *m, void *arg) {
  uint64_t a, b;
  if (seq_counts(m, &a, &b) == 0) *(int *)arg = 1;
}

static void any_cache(ifd_model_t *m, void *arg) {
  if (ifd_cache_model_on(m)) *(int *)arg = 1;
}

static void put_model(ifd_model_t *m, void *arg) {
  fam_ctx_t *c = arg;
  uint64_t a, b;
  if ((c->f->flags & F_SEQ) && seq_counts(m, &a, &b) < 0) return;
  if ((c->f->flags & F_CACHE) && !ifd_cache_model_on(m)) return;
  put(c->o, "%s{model=\"", c->f->name);
  put_label(c->o, m->name);
  put(c->o, "\",version=\"%" PRId64 "\"} %" PRIu64 "\n", m->version,
      c->f->get(m));
}

static const double first_response_default[] = {100, 500, 2000, 5000};

int ifd_metrics_decoupled(const ifd_model_t *m) {
  return m->config != NULL && m->config->model_transaction_policy != NULL &&
         m->config->model_transaction_policy->decoupled;
}

const double *ifd_metrics_histogram_bounds(const ifd_model_t *m,
                                           const char *family, size_t *n) {
  const Inference__ModelMetrics *mm =
      m->config != NULL ? m->config->model_metrics : NULL;
  for (size_t i = 0; mm != NULL && i < mm->n_metric_control; i++) {
    const Inference__ModelMetrics__MetricControl *c = mm->metric_control[i];
    if (c->metric_identifier != NULL &&
        strcmp(c->metric_identifier->family, family) == 0 &&
        c->metric_options_case ==
            INFERENCE__MODEL_METRICS__METRIC_CONTROL__METRIC_OPTIONS_HISTOGRAM_OPTIONS &&
        c->histogram_options->n_buckets > 0) {
      *n = c->histogram_options->n_buckets;
      return c->histogram_options->buckets;
    }
  }
  *n = IFD_ARRAY_SIZE(first_response_default);
  return first_response_default;
}

/* The first_response stage (core/runtime.h): a request's first response
 * (not a flags-only FINAL) reached the loop. Triton's first-response
 * histogram counts it for decoupled models, in whole milliseconds since the
 * request arrived. */
static void first_response(ifd_request_t *req) {
  ifd_model_t *m = req->model;
  const double *bounds;
  size_t n;
  if (m == NULL || req->null_req || req->t_received == 0 ||
      !ifd_metrics_decoupled(m))
    return;
  bounds = ifd_metrics_histogram_bounds(m, IFD_METRIC_FIRST_RESPONSE, &n);
  if (ifd_histogram_observe(
          &m->stats.first_response, bounds, n,
          (double)((uv_hrtime() - req->t_received) / 1000000u)) != 0)
    IFD_WARN("out of memory: model '%s' first-response histogram skipped",
             m->name);
}

void ifd_metrics_register_hooks(ifd_req_hooks_t *hooks,
                                const ifd_server_opts_t *opts) {
  if (opts->histogram_latencies) hooks->first_response = first_response;
}

/* A bucket bound as Prometheus clients print it: the shortest decimal that
 * reads back as the same double ("100", "2.5", "-1"). */
static void put_bound(out_t *o, double v) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.15g", v);
  if (strtod(buf, NULL) != v) snprintf(buf, sizeof(buf), "%.17g", v);
  put(o, "%s", buf);
}

/* One model's first-response histogram, in the order Triton's client
 * library prints it: _count, _sum, then the cumulative buckets. */
static void put_first_response(ifd_model_t *m, void *arg) {
  out_t *o = arg;
  const ifd_histogram_t *h = &m->stats.first_response;
  size_t n, i;
  const double *b;
  uint64_t cum = 0;
  if (!ifd_metrics_decoupled(m)) return;
  b = ifd_metrics_histogram_bounds(m, IFD_METRIC_FIRST_RESPONSE, &n);
  put(o, "%s_count{model=\"", IFD_METRIC_FIRST_RESPONSE);
  put_label(o, m->name);
  put(o, "\",version=\"%" PRId64 "\"} %" PRIu64 "\n", m->version, h->count);
  put(o, "%s_sum{model=\"", IFD_METRIC_FIRST_RESPONSE);
  put_label(o, m->name);
  put(o, "\",version=\"%" PRId64 "\"} %.17g\n", m->version, h->sum);
  for (i = 0; i <= n; i++) {
    if (h->counts != NULL) cum += h->counts[i];
    put(o, "%s_bucket{model=\"", IFD_METRIC_FIRST_RESPONSE);
    put_label(o, m->name);
    put(o, "\",version=\"%" PRId64 "\",le=\"", m->version);
    if (i < n)
      put_bound(o, b[i]);
    else
      put(o, "+Inf");
    put(o, "\"} %" PRIu64 "\n", cum);
  }
}

/* The families the sampled gauges add (see ifd_metrics_text). */
static const char *const gauge_names[] = {
    "nv_cpu_utilization",
    "nv_cpu_memory_total_bytes",
    "nv_cpu_memory_used_bytes",
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "nv_pinned_memory_pool_total_bytes",
    "nv_pinned_memory_pool_used_bytes",
    "nv_gpu_utilization",
    "nv_gpu_memory_total_bytes",
    "nv_gpu_memory_used_bytes",
    "nv_gpu_power_usage",
    "nv_gpu_power_limit",
    "nv_energy_consumption",
};

/* Set from any thread, read by the renderer: an atomic function pointer. */
/* ---- latency summaries (--metrics-config summary_latencies=true) ------ */

/* Names and help texts as tritonserver prints them (its compute ones say
 * "Cumulative", sic). */
static const struct {
  const char *name, *help;
  size_t off; /* of the summary in ifd_latency_summaries_t */
} summaries[] = {
    {"nv_inference_request_summary_us",
     "Summary of inference request duration in microseconds (includes cached "
     "requests)",
     offsetof(ifd_latency_summaries_t, request)},
    {"nv_inference_queue_summary_us",
     "Summary of inference queuing duration in microseconds (includes cached "
     "requests)",
     offsetof(ifd_latency_summaries_t, queue)},
    {"nv_inference_compute_input_summary_us",
     "Cumulative compute input duration in microseconds (does not include "
     "cached requests)",
     offsetof(ifd_latency_summaries_t, compute_input)},
    {"nv_inference_compute_infer_summary_us",
     "Cumulative compute inference duration in microseconds (does not include "
     "cached requests)",
     offsetof(ifd_latency_summaries_t, compute_infer)},
    {"nv_inference_compute_output_summary_us",
     "Cumulative inference compute output duration in microseconds (does not "
     "include cached requests)",
     offsetof(ifd_latency_summaries_t, compute_output)},
};

typedef struct sum_ctx {
  out_t *o;
  size_t which; /* index in summaries[] */
  const ifd_quantiles_t *q;
  uint64_t now_ms;
} sum_ctx_t;

/* One model's samples of one summary: _count, _sum, then a sample per
 * quantile (NaN while its window is empty). */
static void put_summary(ifd_model_t *m, void *arg) {
  sum_ctx_t *c = arg;
  const char *name = summaries[c->which].name;
  const ifd_summary_t *s;
  double v[IFD_SUMMARY_MAX_QUANTILES];
  int i, rc;

  if (m->stats.summary == NULL) return;
  s = (const ifd_summary_t *)((const char *)m->stats.summary +
                              summaries[c->which].off);
  rc = ifd_summary_quantiles(s, c->now_ms, c->q->q, c->q->n, v);
  if (rc < 0) {
    c->o->failed = 1;
    return;
  }
  for (i = 0; i < 2; i++) {
    put(c->o, "%s_%s{model=\"", name, i == 0 ? "count" : "sum");
    put_label(c->o, m->name);
    put(c->o, "\",version=\"%" PRId64 "\"} %" PRIu64 "\n", m->version,
        i == 0 ? s->count : s->sum);
  }
  for (i = 0; i < (int)c->q->n; i++) {
    put(c->o, "%s{model=\"", name);
    put_label(c->o, m->name);
    put(c->o, "\",version=\"%" PRId64 "\",quantile=\"%g\"} ", m->version,
        c->q->q[i]);
    if (isnan(v[i]))
      put(c->o, "NaN\n");
    else
      put(c->o, "%.17g\n", v[i]);
  }
}

static void put_summaries(out_t *o, ifd_server_t *s,
                          const ifd_server_opts_t *opts) {
  ifd_quantiles_t def;
  sum_ctx_t c = {o, 0, &opts->quantiles, ifd_now_ms_coarse()};
  if (opts->quantiles.n == 0) {
    ifd_quantiles_default(&def);
    c.q = &def;
  }
  for (c.which = 0; c.which < IFD_ARRAY_SIZE(summaries); c.which++) {
    put(o, "# HELP %s %s\n# TYPE %s summary\n", summaries[c.which].name,
        summaries[c.which].help, summaries[c.which].name);
    ifd_server_foreach_ready(s, put_summary, &c);
  }
}

static _Atomic(ifd_metrics_ext_fn) extension;

void ifd_metrics_set_extension(ifd_metrics_ext_fn fn) {
  atomic_store(&extension, fn);
}

int ifd_metrics_reserved_name(const char *name) {
  size_t i;
  for (i = 0; i < IFD_ARRAY_SIZE(families); i++)
    if (strcmp(name, families[i].name) == 0) return 1;
  for (i = 0; i < IFD_ARRAY_SIZE(gauge_names); i++)
    if (strcmp(name, gauge_names[i]) == 0) return 1;
  if (strcmp(name, IFD_METRIC_FIRST_RESPONSE) == 0) return 1;
  return 0;
}

/* One GPU family: a sample line per GPU that has the value. */
typedef struct gpu_family {
  const char *name, *help, *type;
} gpu_family_t;

static void put_gpu_family(out_t *o, const ifd_metrics_t *m,
                           const gpu_family_t *f, int which) {
  size_t i;
  int any = 0;
  for (i = 0; i < m->last.n_gpus; i++) {
    const ifd_gpu_sample_t *g = &m->last.gpus[i];
    int has = which == 0   ? g->has_util
              : which <= 2 ? g->has_mem
              : which == 3 ? g->has_power
              : which == 4 ? g->has_limit
                           : g->has_energy && m->have_energy_base[i];
    if (!has) continue;
    if (!any)
      put(o, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name,
          f->type);
    any = 1;
    put(o, "%s{gpu_uuid=\"", f->name);
    put_label(o, g->uuid);
    switch (which) {
      case 0:
        put(o, "\"} %g\n", g->utilization);
        break;
      case 1:
        put(o, "\"} %" PRIu64 "\n", g->mem_total);
        break;
      case 2:
        put(o, "\"} %" PRIu64 "\n", g->mem_used);
        break;
      case 3:
        put(o, "\"} %g\n", g->power_w);
        break;
      case 4:
        put(o, "\"} %g\n", g->power_limit_w);
        break;
      default:
        put(o, "\"} %g\n",
            (double)(g->energy_mj - m->energy_base_mj[i]) / 1000.0);
        break;
    }
  }
}

/* The pinned memory pool (--pinned-memory-pool-byte-size), read live from
 * the pool (a short lock, no I/O); 0 and 0 when there is none, as Triton
 * reports on a machine without a GPU. */
static void put_pinned(out_t *o) {
  ifd_cuda_pool_info_t pools[1 + IFD_CUDA_MAX_DEVICES];
  size_t i, n = ifd_cuda_pools(pools, IFD_ARRAY_SIZE(pools));
  uint64_t total = 0, used = 0;
  for (i = 0; i < n && i < IFD_ARRAY_SIZE(pools); i++)
    if (pools[i].mem_type == IFD_CUDA_MEM_CPU_PINNED) {
      total = pools[i].byte_size;
      used = pools[i].used;
    }
  put(o,
      "# HELP nv_pinned_memory_pool_total_bytes Pinned memory pool total "
      "memory size, in bytes\n"
      "# TYPE nv_pinned_memory_pool_total_bytes gauge\n"
      "nv_pinned_memory_pool_total_bytes %" PRIu64
      "\n"
      "# HELP nv_pinned_memory_pool_used_bytes Pinned memory pool used "
      "memory size, in bytes\n"
      "# TYPE nv_pinned_memory_pool_used_bytes gauge\n"
      "nv_pinned_memory_pool_used_bytes %" PRIu64 "\n",
      total, used);
}

/* The GPU families, in Triton's names, help texts and gpu_uuid label. */
static void put_gpus(out_t *o, const ifd_metrics_t *m) {
  static const gpu_family_t fams[] = {
      {"nv_gpu_utilization", "GPU utilization rate [0.0 - 1.0)", "gauge"},
      {"nv_gpu_memory_total_bytes", "GPU total memory, in bytes", "gauge"},
      {"nv_gpu_memory_used_bytes", "GPU used memory, in bytes", "gauge"},
      {"nv_gpu_power_usage", "GPU power usage in watts", "gauge"},
      {"nv_gpu_power_limit", "GPU power management limit in watts", "gauge"},
      {"nv_energy_consumption",
       "GPU energy consumption in joules since the Triton Server started",
       "counter"},
  };
  int i;
  for (i = 0; i < (int)IFD_ARRAY_SIZE(fams); i++)
    put_gpu_family(o, m, &fams[i], i);
}

/* The local cache's gauges, as tritonserver's local cache reports them:
 * the numbers of the last metrics interval (live without a metrics
 * timer). */
static void put_cache(out_t *o, ifd_server_t *s, const ifd_metrics_t *m) {
  ifd_cache_stats_t live;
  const ifd_cache_stats_t *st = &live;
  ifd_cache_t *c = ifd_server_cache(s);
  if (c == NULL) return;
  if (m != NULL && m->have_cache)
    st = &m->cache_snap;
  else
    ifd_cache_stats(c, &live);
  if (!st->local) return;
  put(o,
      "# HELP nv_cache_util Cache utilization [0.0 - 1.0]\n"
      "# TYPE nv_cache_util gauge\nnv_cache_util %.15g\n",
      st->capacity > 0 ? (double)st->bytes / (double)st->capacity : 0.0);
  put(o,
      "# HELP nv_cache_num_entries Number of responses stored in response "
      "cache\n# TYPE nv_cache_num_entries gauge\nnv_cache_num_entries "
      "%" PRIu64 "\n",
      st->entries);
  put(o,
      "# HELP nv_cache_num_hits Number of cache hits in response cache\n"
      "# TYPE nv_cache_num_hits gauge\nnv_cache_num_hits %" PRIu64 "\n",
      st->hits);
  put(o,
      "# HELP nv_cache_num_misses Number of cache misses in response cache\n"
      "# TYPE nv_cache_num_misses gauge\nnv_cache_num_misses %" PRIu64 "\n",
      st->misses);
  put(o,
      "# HELP nv_cache_num_lookups Number of cache lookups in response "
      "cache\n# TYPE nv_cache_num_lookups gauge\nnv_cache_num_lookups "
      "%" PRIu64 "\n",
      st->lookups);
  put(o,
      "# HELP nv_cache_num_evictions Number of cache evictions in response "
      "cache\n# TYPE nv_cache_num_evictions gauge\n"
      "nv_cache_num_evictions %" PRIu64 "\n",
      st->evictions);
  put(o,
      "# HELP nv_cache_lookup_duration Total cache lookup duration (hit and "
      "miss), in microseconds\n# TYPE nv_cache_lookup_duration gauge\n"
      "nv_cache_lookup_duration %" PRIu64 "\n",
      st->lookup_ns / 1000);
  put(o,
      "# HELP nv_cache_insertion_duration Total cache insertion duration, in "
      "microseconds\n# TYPE nv_cache_insertion_duration gauge\n"
      "nv_cache_insertion_duration %" PRIu64 "\n",
      st->insert_ns / 1000);
}

char *ifd_metrics_text(ifd_server_t *s, const ifd_metrics_t *m, size_t *len) {
  const ifd_server_opts_t *opts = ifd_server_opts(s);
  out_t o = {NULL, 0, 0, 0};
  ifd_metrics_ext_fn ext = atomic_load(&extension);
  size_t i;

  int have_seq = 0, have_cache = 0;

  ifd_server_foreach_ready(s, any_seq, &have_seq);
  ifd_server_foreach_ready(s, any_cache, &have_cache);
  for (i = 0; i < IFD_ARRAY_SIZE(families); i++) {
    fam_ctx_t c = {&o, &families[i]};
    if ((families[i].flags & F_SEQ) && !have_seq) continue;
    if ((families[i].flags & F_CACHE) && !have_cache) continue;
    if ((families[i].flags & F_LAT) && opts->no_counter_latencies) continue;
    put(&o, "# HELP %s %s\n# TYPE %s %s\n", families[i].name, families[i].help,
        families[i].name, families[i].type);
    ifd_server_foreach_ready(s, put_model, &c);
  }
  if (opts->histogram_latencies) {
    put(&o, "# HELP %s %s\n# TYPE %s histogram\n", IFD_METRIC_FIRST_RESPONSE,
        "Duration from request to first response in milliseconds",
        IFD_METRIC_FIRST_RESPONSE);
    ifd_server_foreach_ready(s, put_first_response, &o);
  }
  if (opts->summary_latencies) put_summaries(&o, s, opts);
  put_cache(&o, s, m);
  put(&o,
      "# HELP inferd_requests_shed_total Requests refused for load: "
      "reason queue_full (a model's max_queue_size), inflight_cap "
      "(--max-inflight-requests).\n"
      "# TYPE inferd_requests_shed_total counter\n"
      "inferd_requests_shed_total{reason=\"queue_full\"} %" PRIu64
      "\n"
      "inferd_requests_shed_total{reason=\"inflight_cap\"} %" PRIu64 "\n",
      ifd_server_shed_count(s, IFD_SHED_QUEUE_FULL),
      ifd_server_shed_count(s, IFD_SHED_INFLIGHT_CAP));
  if (m != NULL) put_pinned(&o);
  if (m != NULL && m->last.ok && !m->no_cpu) {
    put(&o,
        "# HELP nv_cpu_utilization CPU utilization rate [0.0 - 1.0]\n"
        "# TYPE nv_cpu_utilization gauge\nnv_cpu_utilization %g\n",
        m->cpu_util);
    put(&o,
        "# HELP nv_cpu_memory_total_bytes CPU total memory (RAM), in bytes\n"
        "# TYPE nv_cpu_memory_total_bytes gauge\n"
        "nv_cpu_memory_total_bytes %" PRIu64 "\n",
        m->last.mem_total);
    put(&o,
        "# HELP nv_cpu_memory_used_bytes CPU used memory (RAM), in bytes\n"
        "# TYPE nv_cpu_memory_used_bytes gauge\n"
        "nv_cpu_memory_used_bytes %" PRIu64 "\n",
        m->last.mem_total - m->last.mem_avail);
  }
  if (m != NULL && m->last.ok) {
    long tick = sysconf(_SC_CLK_TCK);
    put(&o,
        "# HELP process_cpu_seconds_total Total user and system CPU time "
        "spent by inferd in seconds.\n"
        "# TYPE process_cpu_seconds_total counter\n"
        "process_cpu_seconds_total %g\n",
        tick > 0 ? (double)m->last.proc_cpu_ticks / (double)tick : 0.0);
    put(&o,
        "# HELP process_resident_memory_bytes Resident memory size of inferd "
        "in bytes.\n"
        "# TYPE process_resident_memory_bytes gauge\n"
        "process_resident_memory_bytes %" PRIu64 "\n",
        m->last.proc_rss);
  }
  if (m != NULL && m->last.ok && m->last.n_gpus > 0) put_gpus(&o, m);
  if (ext != NULL) {
    char *text = NULL;
    size_t n = 0;
    if (ext(&text, &n) != 0) o.failed = 1;
    put_raw(&o, text, n);
    free(text);
  }
  if (o.failed || o.buf == NULL) {
    free(o.buf);
    return NULL;
  }
  *len = o.len;
  return o.buf;
}
