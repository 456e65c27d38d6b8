/*
 * core/stats.c - aggregation of model statistics (net/ renders them).
 */
#include "core/stats.h"

#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "base/clock.h"
#include "base/error.h"

static uint64_t span(uint64_t from, uint64_t to) {
  return from != 0 && to > from ? to - from : 0;
}

static void add(ifd_duration_t *d, uint64_t ns) {
  d->count++;
  d->ns += ns;
}

static uint64_t wall_ms(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

void ifd_stats_request_ns(ifd_model_stats_t *st, int success, uint64_t total_ns,
                          uint64_t queue_ns, uint64_t compute_input_ns,
                          uint64_t compute_infer_ns, uint64_t compute_output_ns,
                          uint64_t batch_elems) {
  st->last_inference_ms = wall_ms();
  if (!success) {
    add(&st->fail, total_ns);
    return;
  }
  add(&st->success, total_ns);
  add(&st->queue, queue_ns);
  add(&st->compute_input, compute_input_ns);
  add(&st->compute_infer, compute_infer_ns);
  add(&st->compute_output, compute_output_ns);
  st->inference_count += batch_elems;
  if (st->summary != NULL) {
    ifd_latency_summaries_t *s = st->summary;
    uint64_t now = ifd_now_ms_coarse();
    ifd_summary_observe(&s->request, total_ns / 1000, now);
    ifd_summary_observe(&s->queue, queue_ns / 1000, now);
    ifd_summary_observe(&s->compute_input, compute_input_ns / 1000, now);
    ifd_summary_observe(&s->compute_infer, compute_infer_ns / 1000, now);
    ifd_summary_observe(&s->compute_output, compute_output_ns / 1000, now);
  }
}

void ifd_stats_request(ifd_model_stats_t *st, const ifd_request_times_t *t,
                       int success, uint64_t batch_elems, uint64_t now) {
  uint64_t end = t->exec_end != 0 ? t->exec_end : now;
  /* Triton's split: queue until the backend starts, then the backend's
   * own input / infer / output phases. */
  ifd_stats_request_ns(st, success, span(t->received, end),
                       span(t->queued, t->exec_start),
                       span(t->exec_start, t->compute_start),
                       span(t->compute_start, t->compute_end),
                       span(t->compute_end, t->exec_end), batch_elems);
}

void ifd_stats_cache_hit(ifd_model_stats_t *st, const ifd_request_times_t *t,
                         uint64_t lookup_start, uint64_t lookup_end,
                         uint64_t now) {
  st->last_inference_ms = wall_ms();
  add(&st->success, span(t->received, now));
  add(&st->queue, span(t->queued, lookup_start));
  add(&st->cache_hit, span(lookup_start, lookup_end));
}

int ifd_stats_batch_ns(ifd_model_stats_t *st, uint64_t batch_size,
                       uint64_t compute_input_ns, uint64_t compute_infer_ns,
                       uint64_t compute_output_ns) {
  ifd_batch_stats_t *b = NULL;
  size_t lo = 0, hi = st->n_batches;

  st->execution_count++;
  /* Binary search: sizes are few, but this runs once per execution. */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (st->batches[mid].batch_size < batch_size)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < st->n_batches && st->batches[lo].batch_size == batch_size) {
    b = &st->batches[lo];
  } else {
    if (st->n_batches == st->cap_batches) {
      size_t ncap = st->cap_batches ? st->cap_batches * 2 : 8;
      ifd_batch_stats_t *nb = realloc(st->batches, ncap * sizeof(*nb));
      if (nb == NULL) return IFD_ENOMEM;
      st->batches = nb;
      st->cap_batches = ncap;
    }
    memmove(&st->batches[lo + 1], &st->batches[lo],
            (st->n_batches - lo) * sizeof(*b));
    st->n_batches++;
    b = &st->batches[lo];
    memset(b, 0, sizeof(*b));
    b->batch_size = batch_size;
  }
  add(&b->compute_input, compute_input_ns);
  add(&b->compute_infer, compute_infer_ns);
  add(&b->compute_output, compute_output_ns);
  return 0;
}

int ifd_stats_batch(ifd_model_stats_t *st, uint64_t batch_size,
                    uint64_t exec_start, uint64_t compute_start,
                    uint64_t compute_end, uint64_t exec_end) {
  return ifd_stats_batch_ns(st, batch_size, span(exec_start, compute_start),
                            span(compute_start, compute_end),
                            span(compute_end, exec_end));
}

int ifd_histogram_observe(ifd_histogram_t *h, const double *bounds, size_t n,
                          double v) {
  size_t i = 0;
  if (h->counts == NULL) {
    h->counts = calloc(n + 1, sizeof(*h->counts));
    if (h->counts == NULL) return IFD_ENOMEM;
  }
  /* Few bounds (4 by default): a linear scan is the cheapest search. */
  while (i < n && v > bounds[i]) i++;
  h->counts[i]++;
  h->count++;
  h->sum += v;
  return 0;
}

/* The slot of (type, id), or -1. */
static int mem_slot(int32_t type, int64_t id) {
  switch (type) {
    case 0: /* CPU */
      return 0;
    case 1: /* CPU_PINNED */
      return 1;
    case 2: /* GPU */
      return id >= 0 && id < IFD_STATS_MEM_GPUS ? 2 + (int)id : -1;
    default:
      return -1;
  }
}

void ifd_stats_memory_add(ifd_model_stats_t *st, int32_t type, int64_t id,
                          uint64_t bytes) {
  int k = mem_slot(type, id);
  if (k >= 0) __atomic_fetch_add(&st->memory_usage[k], bytes, __ATOMIC_RELAXED);
}

int ifd_stats_memory_slot(int32_t type, int64_t id) {
  return mem_slot(type, id);
}

void ifd_stats_memory_replace(ifd_model_stats_t *st,
                              uint64_t old[IFD_STATS_MEM_SLOTS],
                              const uint64_t now[IFD_STATS_MEM_SLOTS]) {
  for (int k = 0; k < IFD_STATS_MEM_SLOTS; k++) {
    /* Unsigned arithmetic: adding now - old modulo 2^64 subtracts when the
     * usage shrank. */
    if (now[k] != old[k])
      __atomic_fetch_add(&st->memory_usage[k], now[k] - old[k],
                         __ATOMIC_RELAXED);
    old[k] = now[k];
  }
}

size_t ifd_stats_memory_usage(const ifd_model_stats_t *st, ifd_mem_usage_t *out,
                              size_t max) {
  size_t n = 0;
  int k;
  for (k = 0; k < IFD_STATS_MEM_SLOTS; k++) {
    uint64_t b = __atomic_load_n(&st->memory_usage[k], __ATOMIC_RELAXED);
    if (b == 0) continue;
    if (n < max)
      out[n] = (ifd_mem_usage_t){k == 0   ? "CPU"
                                 : k == 1 ? "CPU_PINNED"
                                          : "GPU",
                                 k >= 2 ? k - 2 : 0, b};
    n++;
  }
  return n;
}

int ifd_stats_response(ifd_model_stats_t *st, uint64_t index,
                       const ifd_response_stats_t *delta) {
  ifd_response_stats_t *r;
  ifd_duration_t *to;
  const ifd_duration_t *from;
  size_t k;

  if (index >= IFD_STATS_MAX_RESPONSES) return IFD_EINVAL;
  if (index >= st->cap_responses) {
    size_t n = st->cap_responses ? st->cap_responses : 4;
    while (n <= index) n *= 2;
    if (n > IFD_STATS_MAX_RESPONSES) n = IFD_STATS_MAX_RESPONSES;
    r = realloc(st->responses, n * sizeof(*r));
    if (r == NULL) return IFD_ENOMEM;
    memset(r + st->cap_responses, 0, (n - st->cap_responses) * sizeof(*r));
    st->responses = r;
    st->cap_responses = n;
  }
  /* Every index below a reported one was reported before it (a request's
   * reports count up from 0), so the first n_responses are the keys. */
  if (index >= st->n_responses) st->n_responses = index + 1;
  /* The struct is six durations in a row: add them pairwise. */
  to = &st->responses[index].compute_infer;
  from = &delta->compute_infer;
  for (k = 0; k < sizeof(*delta) / sizeof(*from); k++) {
    to[k].count += from[k].count;
    to[k].ns += from[k].ns;
  }
  return 0;
}

int ifd_stats_response_classify(uint64_t start, uint64_t compute_output_start,
                                uint64_t end, int failed, int cancelled,
                                ifd_response_stats_t *out, const char **msg) {
  memset(out, 0, sizeof(*out));
  if (failed && cancelled) {
    if (start > end) goto out_start_end;
    add(&out->cancel, end - start);
    return 0;
  }
  if (compute_output_start > 0) {
    if (start > compute_output_start) {
      *msg = "Response start cannot happen after compute output start";
      return IFD_EINVAL;
    }
    if (compute_output_start > end) {
      *msg = "Compute output start cannot happen after response end";
      return IFD_EINVAL;
    }
    add(&out->compute_infer, compute_output_start - start);
    if (!failed || end > compute_output_start)
      add(&out->compute_output, end - compute_output_start);
    add(failed ? &out->fail : &out->success, end - start);
    return 0;
  }
  if (start > end) goto out_start_end;
  add(&out->compute_infer, end - start);
  add(failed ? &out->fail : &out->empty_response, end - start);
  return 0;
out_start_end:
  *msg = "Response start cannot happen after response end";
  return IFD_EINVAL;
}

void ifd_stats_free(ifd_model_stats_t *st) {
  free(st->first_response.counts);
  free(st->batches);
  free(st->responses);
  if (st->summary != NULL) {
    ifd_summary_free(&st->summary->request);
    ifd_summary_free(&st->summary->queue);
    ifd_summary_free(&st->summary->compute_input);
    ifd_summary_free(&st->summary->compute_infer);
    ifd_summary_free(&st->summary->compute_output);
    free(st->summary);
  }
  memset(st, 0, sizeof(*st));
}
