/*
 * core/stats.h - per model-version inference statistics (Triton's
 * statistics extension and the numbers behind the Prometheus metrics).
 *
 * Counters belong to the loop thread: requests are counted when their
 * backend releases them (or a scheduler fails them), executions when the
 * instance reports back. Durations are in ns, as the extension reports them.
 * The counters are plain data: net/ renders them (JSON for HTTP, protobuf
 * for gRPC) from ifd_server_stats' entries.
 */
#ifndef IFD_CORE_STATS_H
#define IFD_CORE_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "core/summary.h"

typedef struct ifd_duration {
  uint64_t count;
  uint64_t ns;
} ifd_duration_t;

typedef struct ifd_batch_stats {
  uint64_t batch_size;
  ifd_duration_t compute_input, compute_infer, compute_output;
} ifd_batch_stats_t;

/**
 * A Prometheus histogram: counts[i] observations <= bounds[i] (not
 * cumulative; the renderer sums them), counts[n_bounds] those above every
 * bound (+Inf). The bounds belong to whoever observes (the model's config or
 * a static default) and must be the same on every call.
 */
typedef struct ifd_histogram {
  uint64_t *counts; /* owned: n_bounds + 1; NULL before the first observation */
  uint64_t count;
  double sum;
} ifd_histogram_t;

/** The statistics of the n-th response of a decoupled model's requests
 *  (Triton's InferResponseStatistics), or one response's share of them. */
typedef struct ifd_response_stats {
  ifd_duration_t compute_infer, compute_output, success, fail, empty_response,
      cancel;
} ifd_response_stats_t;

/* The most response indexes counted (a response past them is not). */
#define IFD_STATS_MAX_RESPONSES (1u << 20)

/* Slots of memory_usage: CPU, CPU_PINNED, then GPUs 0..IFD_STATS_MEM_GPUS-1
 * (a report about a GPU past them is not counted). */
#define IFD_STATS_MEM_GPUS 16
#define IFD_STATS_MEM_SLOTS (2 + IFD_STATS_MEM_GPUS)

/** One row of a model's memory usage (statistics extension). */
typedef struct ifd_mem_usage {
  const char *type; /* static: "CPU", "CPU_PINNED" or "GPU" */
  int64_t id;
  uint64_t byte_size;
} ifd_mem_usage_t;

/** --metrics-config summary_latencies=true: a model version's latency
 *  summaries (microseconds, successful requests). */
typedef struct ifd_latency_summaries {
  ifd_summary_t request, queue, compute_input, compute_infer, compute_output;
} ifd_latency_summaries_t;

typedef struct ifd_model_stats {
  uint64_t last_inference_ms; /* wall clock, ms since the epoch; 0 never */
  uint64_t inference_count;   /* batch elements of successful requests */
  uint64_t execution_count;   /* executions the backend reported */
  ifd_duration_t success, fail, queue, compute_input, compute_infer,
      compute_output, cache_hit, cache_miss;
  ifd_batch_stats_t *batches; /* owned; ascending batch_size */
  size_t n_batches, cap_batches;
  /* response_stats: by response index, what backends reported through
   * TRITONBACKEND_ModelInstanceReportResponseStatistics. */
  ifd_response_stats_t *responses; /* owned: cap_responses entries, the
                                      first n_responses reported */
  size_t n_responses, cap_responses;
  /* nv_inference_first_response_histogram_ms (decoupled models, with
   * --metrics-config histogram_latencies=true): whole milliseconds from a
   * request's arrival to its first response. */
  ifd_histogram_t first_response;
  /* Memory the backend reported for the model and its instances
   * (TRITONBACKEND_ModelReportMemoryUsage, ..._ModelInstanceReportMemoryUsage)
   * by slot; added by whichever thread reports (ifd_stats_memory_add),
   * read by the loop (ifd_stats_memory_usage). */
  uint64_t memory_usage[IFD_STATS_MEM_SLOTS];
  /* owned: the latency summaries, or NULL when they are off (set when the
   * model is created, before any request). */
  ifd_latency_summaries_t *summary;
} ifd_model_stats_t;

/** Timestamps of one request, ns on CLOCK_MONOTONIC (0: unknown). */
typedef struct ifd_request_times {
  uint64_t received, queued, exec_start, compute_start, compute_end, exec_end;
} ifd_request_times_t;

/**
 * Counts one finished request: success or failure with its duration from
 * `received` to `exec_end` (or `now` when the backend reported nothing);
 * for a success also its queue and compute times and `batch_elems`
 * inferences.
 */
void ifd_stats_request(ifd_model_stats_t *st, const ifd_request_times_t *t,
                       int success, uint64_t batch_elems, uint64_t now);

/**
 * ifd_stats_request from durations rather than timestamps, for a request
 * whose phases are not one span each (an ensemble: its compute durations
 * are the sums of its steps'). `total_ns` is the success or failure
 * duration; the others count only for a success.
 */
void ifd_stats_request_ns(ifd_model_stats_t *st, int success, uint64_t total_ns,
                          uint64_t queue_ns, uint64_t compute_input_ns,
                          uint64_t compute_infer_ns, uint64_t compute_output_ns,
                          uint64_t batch_elems);

/** ifd_stats_batch from durations (an ensemble's execution). Returns 0 or
 *  IFD_ENOMEM (the execution is still counted). */
int ifd_stats_batch_ns(ifd_model_stats_t *st, uint64_t batch_size,
                       uint64_t compute_input_ns, uint64_t compute_infer_ns,
                       uint64_t compute_output_ns);

/**
 * Counts a request answered from the response cache (Triton's
 * UpdateSuccessCacheHit): a success from `received` to `now`, its queue
 * time until the lookup began, and a cache hit of the lookup's span. No
 * inference, execution or compute time.
 */
void ifd_stats_cache_hit(ifd_model_stats_t *st, const ifd_request_times_t *t,
                         uint64_t lookup_start, uint64_t lookup_end,
                         uint64_t now);

/** Counts one execution of `batch_size` elements (ReportBatchStatistics).
 *  Returns 0 or IFD_ENOMEM (the execution is still counted). */
int ifd_stats_batch(ifd_model_stats_t *st, uint64_t batch_size,
                    uint64_t exec_start, uint64_t compute_start,
                    uint64_t compute_end, uint64_t exec_end);

/**
 * Adds `delta` (one reported response) to the statistics of response index
 * `index`. Returns 0, or IFD_ENOMEM / IFD_EINVAL (an index past
 * IFD_STATS_MAX_RESPONSES): nothing is counted then.
 */
int ifd_stats_response(ifd_model_stats_t *st, uint64_t index,
                       const ifd_response_stats_t *delta);

/**
 * Classifies one reported response as Triton's statistics aggregator does
 * and fills `out` with its share: no error and compute_output_start > 0 a
 * success (compute_infer from start to compute_output_start, compute_output
 * from there to end), no error and compute_output_start 0 an empty response
 * (compute_infer from start to end), `cancelled` a cancellation (its span
 * only), any other error a failure (compute_infer, and compute_output when
 * its span is not 0). Returns 0, or IFD_EINVAL with `msg` (static, Triton's
 * text) when the timestamps are out of order.
 */
int ifd_stats_response_classify(uint64_t start, uint64_t compute_output_start,
                                uint64_t end, int failed, int cancelled,
                                ifd_response_stats_t *out, const char **msg);

/** Adds `v` to `h`, whose bounds are the `n` ascending `bounds`. Returns 0,
 *  or IFD_ENOMEM on the first observation (then nothing is counted). */
int ifd_histogram_observe(ifd_histogram_t *h, const double *bounds, size_t n,
                          double v);

/** Adds `bytes` of memory type `type` (TRITONSERVER_MemoryType's values) on
 *  device `id` to the model's memory usage. Any thread. */
void ifd_stats_memory_add(ifd_model_stats_t *st, int32_t type, int64_t id,
                          uint64_t bytes);

/** The memory_usage slot of (type, id), or -1 when it has none. */
int ifd_stats_memory_slot(int32_t type, int64_t id);

/**
 * Replaces one reporter's share of the model's memory usage (a model's or
 * an instance's latest report, as Triton keeps them): `old` (its previous
 * report, by slot) becomes `now`, and the model's slots move by the
 * difference. The caller serializes reports of one reporter. Any thread.
 */
void ifd_stats_memory_replace(ifd_model_stats_t *st,
                              uint64_t old[IFD_STATS_MEM_SLOTS],
                              const uint64_t now[IFD_STATS_MEM_SLOTS]);

/** Writes up to `max` rows of the model's memory usage (slots with bytes,
 *  CPU first, then pinned, then GPUs by id) into `out`; returns how many
 *  rows there are. Any thread. */
size_t ifd_stats_memory_usage(const ifd_model_stats_t *st, ifd_mem_usage_t *out,
                              size_t max);

void ifd_stats_free(ifd_model_stats_t *st);

#endif
