/*
 * core/metrics.h - Prometheus metrics in tritonserver's names and labels.
 *
 * Per-model counters come straight from the statistics (core/stats.h) at
 * scrape time. Machine and process gauges are sampled every
 * --metrics-interval-ms on the thread pool (they read /proc), so a scrape
 * never touches a file on the loop thread. One extension point appends the
 * families that backends create through the TRITONSERVER_Metric* API
 * (backend_api/metrics/tsrv_metrics.c), which core cannot include.
 */
#ifndef IFD_CORE_METRICS_H
#define IFD_CORE_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "core/server.h"

typedef struct ifd_metrics ifd_metrics_t;

/** Triton's first-response histogram family (decoupled models). */
#define IFD_METRIC_FIRST_RESPONSE "nv_inference_first_response_histogram_ms"

/** Whether `m` is decoupled (model_transaction_policy.decoupled). */
int ifd_metrics_decoupled(const ifd_model_t *m);

/** The bucket bounds of histogram `family` for `m`: its config's
 *  model_metrics override, else Triton's default (100, 500, 2000, 5000).
 *  Borrowed from the config or static; *n bounds, ascending. Any thread. */
const double *ifd_metrics_histogram_bounds(const ifd_model_t *m,
                                           const char *family, size_t *n);

struct ifd_req_hooks;

/**
 * Attaches the first-response histogram to the request path
 * (core/runtime.h) when --metrics-config histogram_latencies=true asks for
 * it: each request's first response of a decoupled model is observed when it
 * reaches the loop. Called by ifd_server_new.
 */
void ifd_metrics_register_hooks(struct ifd_req_hooks *hooks,
                                const ifd_server_opts_t *opts);

/** Starts sampling gauges every `interval_ms` (>= 1). Returns 0 or
 *  IFD_ENOMEM. Loop thread. */
int ifd_metrics_start(ifd_server_t *s, uint64_t interval_ms,
                      ifd_metrics_t **out);

/** Whether the samples include the GPU gauges (NVML, opened on the thread
 *  pool by the first sample; absent without error when there is no NVML or
 *  no GPU). Call right after ifd_metrics_start. Loop thread. */
void ifd_metrics_allow_gpu(ifd_metrics_t *m, int allow);

/** Whether /metrics shows the CPU gauges (nv_cpu_utilization,
 *  nv_cpu_memory_*: --allow-cpu-metrics; shown by default). Loop thread. */
void ifd_metrics_allow_cpu(ifd_metrics_t *m, int allow);

/** Stops sampling; `done` runs once the timer is closed and no sample is in
 *  flight (m is freed by then). */
void ifd_metrics_stop(ifd_metrics_t *m, void (*done)(void *arg), void *arg);

/**
 * Renders the Prometheus text exposition (version 0.0.4) of every ready
 * model and of the sampled gauges (`m` may be NULL: gauges are left out).
 * Returns a malloc'd NUL-terminated string and its length, or NULL.
 */
char *ifd_metrics_text(ifd_server_t *s, const ifd_metrics_t *m, size_t *len);

/**
 * An extension renders more families after the server's own, on whichever
 * thread renders (the loop), without blocking. It sets *text to a malloc'd
 * exposition text of *len bytes that the caller frees, or to NULL when it has
 * nothing to add, and returns 0; it returns IFD_ENOMEM when out of memory,
 * which fails the whole scrape.
 */
typedef int (*ifd_metrics_ext_fn)(char **text, size_t *len);

/** Installs `fn` (NULL removes it) for every later ifd_metrics_text. Any
 *  thread; the last call wins. */
void ifd_metrics_set_extension(ifd_metrics_ext_fn fn);

/** Returns 1 when `name` is a family the server renders itself (an extension
 *  must not render a second family of that name), 0 otherwise. */
int ifd_metrics_reserved_name(const char *name);

#endif
