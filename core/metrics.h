/*
 * core/metrics.h - Prometheus metrics in tritonserver's names and labels.
 *
 * Per-model counters come straight from the statistics (core/stats.h) at
 * scrape time. Machine and process gauges are sampled every
 * --metrics-interval-ms on the thread pool (they read /proc), so a scrape
 * never touches a file on the loop thread.
 */
#ifndef IFD_CORE_METRICS_H
#define IFD_CORE_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "core/server.h"

typedef struct ifd_metrics ifd_metrics_t;

/** Starts sampling gauges every `interval_ms` (>= 1). Returns 0 or
 *  IFD_ENOMEM. Loop thread. */
int ifd_metrics_start(ifd_server_t *s, uint64_t interval_ms,
                      ifd_metrics_t **out);

/** Stops sampling; `done` runs once the timer is closed and no sample is in
 *  flight (m is freed by then). */
void ifd_metrics_stop(ifd_metrics_t *m, void (*done)(void *arg), void *arg);

/**
 * Renders the Prometheus text exposition (version 0.0.4) of every ready
 * model and of the sampled gauges (`m` may be NULL: gauges are left out).
 * Returns a malloc'd NUL-terminated string and its length, or NULL.
 */
char *ifd_metrics_text(ifd_server_t *s, const ifd_metrics_t *m, size_t *len);

#endif
