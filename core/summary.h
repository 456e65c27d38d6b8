/*
 * core/summary.h - Prometheus summaries of request latencies, as
 * tritonserver's --metrics-config summary_latencies=true publishes them:
 * a cumulative count and sum, and quantiles over a sliding window of the
 * last 60 s (five 12 s slots, the window prometheus-cpp's summaries keep by
 * default).
 *
 * Each slot keeps up to IFD_SUMMARY_SLOT_CAP observations: all of them
 * while traffic is below that many per slot (the quantiles are then
 * exact), a uniform sample of them beyond (reservoir sampling; each kept
 * value then stands for seen / kept observations, so busy and quiet slots
 * weigh what they saw). The error targets of summary_quantiles are checked
 * and kept, not needed by this exact-or-sampled computation. Loop thread
 * only, like the statistics they sit beside.
 */
#ifndef IFD_CORE_SUMMARY_H
#define IFD_CORE_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#define IFD_SUMMARY_MAX_QUANTILES 16
#define IFD_SUMMARY_SLOTS 5
#define IFD_SUMMARY_SLOT_MS 12000u
#define IFD_SUMMARY_SLOT_CAP 1024u

/** The quantiles published, with their error targets. */
typedef struct ifd_quantiles {
  size_t n;
  double q[IFD_SUMMARY_MAX_QUANTILES];
  double err[IFD_SUMMARY_MAX_QUANTILES];
} ifd_quantiles_t;

/** tritonserver's defaults: 0.5:0.05, 0.9:0.01, 0.95:0.001, 0.99:0.001,
 *  0.999:0.001. */
void ifd_quantiles_default(ifd_quantiles_t *out);

/**
 * Parses summary_quantiles' value "<q>:<error>,..." (each in [0, 1], at
 * most IFD_SUMMARY_MAX_QUANTILES). Returns 0, or -1 with `why` saying what
 * is wrong.
 */
int ifd_quantiles_parse(const char *text, ifd_quantiles_t *out, char *why,
                        size_t why_len);

typedef struct ifd_summary_slot {
  uint64_t epoch; /* now_ms / IFD_SUMMARY_SLOT_MS of its observations */
  uint32_t n;     /* values kept */
  uint64_t seen;  /* observations in the slot */
  uint32_t *vals; /* owned: IFD_SUMMARY_SLOT_CAP, allocated on first use */
} ifd_summary_slot_t;

/** One summary (one model version, one latency). */
typedef struct ifd_summary {
  uint64_t count; /* every observation since the start */
  uint64_t sum;   /* of their values */
  uint64_t rng;   /* reservoir sampling's xorshift state */
  ifd_summary_slot_t slots[IFD_SUMMARY_SLOTS];
} ifd_summary_t;

/** Adds `v` (microseconds) observed at `now_ms` (a monotonic clock). */
void ifd_summary_observe(ifd_summary_t *s, uint64_t v, uint64_t now_ms);

/**
 * The `n` quantiles `q` over the window ending at `now_ms`, into `out`.
 * Returns 0, 1 when the window is empty (every out[i] is then NaN, as an
 * empty Prometheus summary reports), or IFD_ENOMEM.
 */
int ifd_summary_quantiles(const ifd_summary_t *s, uint64_t now_ms,
                          const double *q, size_t n, double *out);

void ifd_summary_free(ifd_summary_t *s);

#endif
