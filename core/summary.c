/*
 * core/summary.c - sliding-window latency summaries (see core/summary.h).
 */
#include "core/summary.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"

void ifd_quantiles_default(ifd_quantiles_t *out) {
  static const double q[] = {0.5, 0.9, 0.95, 0.99, 0.999};
  static const double e[] = {0.05, 0.01, 0.001, 0.001, 0.001};
  out->n = sizeof(q) / sizeof(q[0]);
  memcpy(out->q, q, sizeof(q));
  memcpy(out->err, e, sizeof(e));
}

/* A number in [0, 1] at *p, up to `stop` (or the end); advances *p. */
static int unit_number(const char **p, char stop, double *v) {
  char *end;
  const char *s = *p;
  if (*s == '\0' || *s == stop || *s == ' ') return -1;
  *v = strtod(s, &end);
  if (end == s || (*end != '\0' && *end != stop && *end != ',') ||
      !(*v >= 0 && *v <= 1))
    return -1;
  *p = end;
  return 0;
}

int ifd_quantiles_parse(const char *text, ifd_quantiles_t *out, char *why,
                        size_t why_len) {
  const char *p = text;
  out->n = 0;
  if (*p == '\0') {
    snprintf(why, why_len, "expects <quantile>:<error>[,...]");
    return -1;
  }
  while (*p != '\0') {
    double q, e;
    if (out->n == IFD_SUMMARY_MAX_QUANTILES) {
      snprintf(why, why_len, "at most %d quantiles", IFD_SUMMARY_MAX_QUANTILES);
      return -1;
    }
    if (unit_number(&p, ':', &q) != 0 || *p != ':') {
      snprintf(why, why_len,
               "expects <quantile>:<error>[,...] with each number in [0, 1]");
      return -1;
    }
    p++;
    if (unit_number(&p, ',', &e) != 0 || (*p != '\0' && *p != ',')) {
      snprintf(why, why_len,
               "expects <quantile>:<error>[,...] with each number in [0, 1]");
      return -1;
    }
    out->q[out->n] = q;
    out->err[out->n++] = e;
    if (*p == ',') {
      p++;
      if (*p == '\0') {
        snprintf(why, why_len, "a quantile is missing after the last ','");
        return -1;
      }
    }
  }
  return 0;
}

static uint64_t next_rand(uint64_t *state) {
  uint64_t x = *state != 0 ? *state : 0x9e3779b97f4a7c15ull;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *state = x;
  return x;
}

void ifd_summary_observe(ifd_summary_t *s, uint64_t v, uint64_t now_ms) {
  uint64_t epoch = now_ms / IFD_SUMMARY_SLOT_MS;
  ifd_summary_slot_t *sl = &s->slots[epoch % IFD_SUMMARY_SLOTS];
  uint32_t kept = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;

  s->count++;
  s->sum += v;
  if (sl->epoch != epoch) {
    sl->epoch = epoch;
    sl->n = 0;
    sl->seen = 0;
  }
  if (sl->vals == NULL) {
    sl->vals = malloc(IFD_SUMMARY_SLOT_CAP * sizeof(*sl->vals));
    if (sl->vals == NULL) return; /* counted, not in the quantiles */
  }
  sl->seen++;
  if (sl->n < IFD_SUMMARY_SLOT_CAP) {
    sl->vals[sl->n++] = kept;
  } else {
    uint64_t j = next_rand(&s->rng) % sl->seen;
    if (j < IFD_SUMMARY_SLOT_CAP) sl->vals[j] = kept;
  }
}

typedef struct wval {
  uint32_t v;
  double w; /* observations it stands for */
} wval_t;

static int by_value(const void *a, const void *b) {
  uint32_t x = ((const wval_t *)a)->v, y = ((const wval_t *)b)->v;
  return x < y ? -1 : x > y;
}

int ifd_summary_quantiles(const ifd_summary_t *s, uint64_t now_ms,
                          const double *q, size_t n, double *out) {
  uint64_t epoch = now_ms / IFD_SUMMARY_SLOT_MS;
  size_t total = 0, k = 0, i, j;
  double weight = 0, acc;
  wval_t *all;

  for (i = 0; i < n; i++) out[i] = NAN;
  for (i = 0; i < IFD_SUMMARY_SLOTS; i++) {
    const ifd_summary_slot_t *sl = &s->slots[i];
    if (sl->n > 0 && sl->epoch + IFD_SUMMARY_SLOTS > epoch) total += sl->n;
  }
  if (total == 0) return 1;
  all = malloc(total * sizeof(*all));
  if (all == NULL) return IFD_ENOMEM;
  for (i = 0; i < IFD_SUMMARY_SLOTS; i++) {
    const ifd_summary_slot_t *sl = &s->slots[i];
    if (sl->n == 0 || sl->epoch + IFD_SUMMARY_SLOTS <= epoch) continue;
    for (j = 0; j < sl->n; j++) {
      all[k].v = sl->vals[j];
      all[k++].w = (double)sl->seen / (double)sl->n;
    }
    weight += (double)sl->seen;
  }
  qsort(all, total, sizeof(*all), by_value);
  /* The value whose cumulative weight first reaches q of the total: the
   * rank ceil(q * n) of n observations when none was sampled away. */
  for (i = 0; i < n; i++) {
    double target = q[i] * weight;
    acc = 0;
    for (j = 0; j < total; j++) {
      acc += all[j].w;
      if (acc >= target - 1e-9) break;
    }
    out[i] = all[j < total ? j : total - 1].v;
  }
  free(all);
  return 0;
}

void ifd_summary_free(ifd_summary_t *s) {
  for (size_t i = 0; i < IFD_SUMMARY_SLOTS; i++) {
    free(s->slots[i].vals);
    s->slots[i].vals = NULL;
  }
}
