/*
 * backend_api/metrics/tsrv_metrics.c - the backend metrics API: families and
 * metrics (counter, gauge, histogram) that backends create with
 * TRITONSERVER_Metric* calls, rendered on /metrics after the server's own
 * families.
 *
 * Semantics are Triton's (core src/metric_family.cc and tritonserver.cc, whose
 * families live in one prometheus-cpp registry that merges by name):
 * - A family name is shared. Creating a family whose name exists with the
 *   same kind returns a new handle onto the same family (the first
 *   description is kept); with another kind it is INVALID_ARG.
 * - Metrics created with the same label set in one family share one value.
 * - A family is rendered only while it has metrics.
 * - Deleting a family handle fails (INTERNAL) while metrics created through it
 *   exist; deleting the last metric of a family takes its series off the page.
 * - Counters take non-negative increments only; Set is for gauges; Observe is
 *   for histograms, which have no single Value. A wrong call answers
 *   UNSUPPORTED (INVALID_ARG for a negative counter increment).
 * - Names of families and labels follow Prometheus' rules (a family that the
 *   server exports itself cannot be created: it would render twice).
 *
 * Threads. Any thread may call any function here. The update path (Increment,
 * Set, Observe, Value) takes no lock: a value is a double kept as its bits in
 * an _Atomic uint64_t and changed by compare-and-swap, histogram buckets are
 * atomic counters. Creating and deleting take `mu` for a few list operations.
 * The renderer (ifd_metrics_text on the loop, through the extension point of
 * core/metrics.h) holds `mu` only to pin the visible series, one reference
 * each, and again to unpin them; it formats without the lock. A series
 * deleted meanwhile leaves its family's list at once but is freed by whoever
 * drops its last reference, so a scrape never reads freed memory and sees
 * every series as it was when the scrape began.
 */
#include "backend_api/internal.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/metrics.h"

typedef struct fam fam_t;
typedef struct series series_t;

/* One family name, shared by every handle created with that name. */
struct fam {
  fam_t *next; /* guarded by mu: the registry list, while handles > 0 */
  char *name;  /* owned */
  char *help;  /* owned: escaped for a HELP line */
  TRITONSERVER_MetricKind kind;
  series_t *series; /* guarded by mu: the visible series, oldest first */
  size_t handles;   /* guarded by mu: family handles */
  size_t refs;      /* guarded by mu: handles + series objects pointing here */
};

/* One label set of a family: the value all its metric handles share. */
struct series {
  series_t *next; /* guarded by mu: in fam->series while handles > 0 */
  fam_t *fam;     /* counted reference (fam->refs) */
  char *labels;   /* owned: `a="x",b="y"` sorted by name, escaped; "" if none */
  double *bounds; /* owned: histogram upper bounds, strictly increasing */
  size_t nbounds;
  _Atomic uint64_t value;   /* counter/gauge value or histogram sum: bits */
  _Atomic uint64_t *counts; /* owned: histogram, per bucket, nbounds + 1 */
  size_t handles;           /* guarded by mu: metric handles */
  size_t refs;              /* guarded by mu: handles + scrapes pinning it */
};

struct TRITONSERVER_MetricFamily {
  fam_t *fam;     /* counted reference (fam->refs, fam->handles) */
  size_t metrics; /* guarded by mu: live metrics created through this handle */
};

struct TRITONSERVER_Metric {
  series_t *series; /* counted reference (series->refs, ->handles) */
  TRITONSERVER_MetricFamily *family; /* borrowed: outlives the metric, as
                                        MetricFamilyDelete enforces */
  TRITONSERVER_MetricKind kind;
};

struct TRITONSERVER_MetricArgs {
  int histogram;   /* TRITONSERVER_MetricArgsSetHistogram was called */
  double *buckets; /* owned: as given, checked when a metric is created */
  uint64_t nbuckets;
};

/* The update path relies on 64-bit atomics that take no hidden lock. */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free");

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static fam_t *fams; /* guarded by mu: oldest first */

/* Tests only (they include this file): runs between pinning and formatting,
 * to delete what a scrape has pinned, deterministically. */
static void (*render_pinned_hook)(void);

/* ---- helpers --------------------------------------------------------------
 */

static TRITONSERVER_Error *oom(void) {
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "out of memory");
}

static uint64_t to_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof(u));
  return u;
}

static double from_bits(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof(d));
  return d;
}

/* Adds d to the double whose bits *p holds, lock-free. */
static void add_double(_Atomic uint64_t *p, double d) {
  uint64_t old = atomic_load_explicit(p, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(
      p, &old, to_bits(from_bits(old) + d), memory_order_relaxed,
      memory_order_relaxed)) {
  }
}

static const char *kind_name(TRITONSERVER_MetricKind kind) {
  switch (kind) {
    case TRITONSERVER_METRIC_KIND_COUNTER:
      return "counter";
    case TRITONSERVER_METRIC_KIND_GAUGE:
      return "gauge";
    case TRITONSERVER_METRIC_KIND_HISTOGRAM:
      return "histogram";
  }
  return NULL;
}

/* Prometheus metric names: [a-zA-Z_:][a-zA-Z0-9_:]*, and names that start
 * with "__" are reserved. Label names: the same without ':'. */
static int valid_name(const char *s, int colon) {
  size_t i;
  if (s[0] == '\0' || (s[0] == '_' && s[1] == '_')) return 0;
  for (i = 0; s[i] != '\0'; i++) {
    char c = s[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
             (colon && c == ':') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return 0;
  }
  return 1;
}

/* Copies s with backslash and newline escaped, and double quote too when
 * `quote` (label values escape all three, HELP texts the first two). */
static char *escape(const char *s, int quote) {
  size_t n = 0, i;
  char *d, *p;
  for (i = 0; s[i] != '\0'; i++)
    n += (s[i] == '\\' || s[i] == '\n' || (quote && s[i] == '"')) ? 2 : 1;
  d = malloc(n + 1);
  if (d == NULL) return NULL;
  for (p = d, i = 0; s[i] != '\0'; i++) {
    if (s[i] == '\\' || (quote && s[i] == '"')) {
      *p++ = '\\';
      *p++ = s[i];
    } else if (s[i] == '\n') {
      *p++ = '\\';
      *p++ = 'n';
    } else {
      *p++ = s[i];
    }
  }
  *p = '\0';
  return d;
}

/* Writes v as the exposition format spells a float: the shortest of %.15g
 * and %.17g that reads back exactly, or NaN, +Inf, -Inf. */
static void fmt_double(char buf[32], double v) {
  if (isnan(v)) {
    strcpy(buf, "NaN");
  } else if (isinf(v)) {
    strcpy(buf, v > 0 ? "+Inf" : "-Inf");
  } else {
    snprintf(buf, 32, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, 32, "%.17g", v);
  }
}

/* ---- families ---------------------------------------------------------------
 */

static void fam_free(fam_t *f) {
  free(f->name);
  free(f->help);
  free(f);
}

/* Drops one reference; frees the family with its last. Caller holds mu. */
static void fam_unref_locked(fam_t *f) {
  if (--f->refs == 0) fam_free(f);
}

static void series_free(series_t *s) {
  free(s->labels);
  free(s->bounds);
  free((void *)s->counts);
  free(s);
}

/* Drops one reference; frees the series (and maybe its family) with its
 * last. Caller holds mu. */
static void series_unref_locked(series_t *s) {
  if (--s->refs == 0) {
    fam_t *f = s->fam;
    series_free(s);
    fam_unref_locked(f);
  }
}

static int render(char **text, size_t *len);

TRITONSERVER_Error *TRITONSERVER_MetricFamilyNew(
    TRITONSERVER_MetricFamily **family, const TRITONSERVER_MetricKind kind,
    const char *name, const char *description) {
  TRITONSERVER_MetricFamily *h;
  fam_t *f, *nf = NULL, **tail;
  TRITONSERVER_Error *err = NULL;

  if (family == NULL || name == NULL || description == NULL)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "family, name and description are required");
  *family = NULL;
  if (kind_name(kind) == NULL)
    return ifd__errorf(
        TRITONSERVER_ERROR_INVALID_ARG,
        "Unsupported kind %d passed to MetricFamily constructor.", (int)kind);
  if (!valid_name(name, 1))
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "invalid metric family name '%s': it must match "
                       "[a-zA-Z_:][a-zA-Z0-9_:]* and not start with \"__\"",
                       name);
  if (ifd_metrics_reserved_name(name))
    return ifd__errorf(
        TRITONSERVER_ERROR_INVALID_ARG,
        "metric family name '%s' is one the server exports itself", name);

  h = calloc(1, sizeof(*h));
  nf = calloc(1, sizeof(*nf));
  if (h == NULL || nf == NULL) goto out_oom;
  nf->name = strdup(name);
  nf->help = escape(description, 0);
  if (nf->name == NULL || nf->help == NULL) goto out_oom;
  nf->kind = kind;

  pthread_mutex_lock(&mu);
  for (tail = &fams; (f = *tail) != NULL; tail = &f->next)
    if (strcmp(f->name, name) == 0) break;
  if (f != NULL && f->kind != kind) {
    err = ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                      "metric family '%s' already exists with kind %s, not %s",
                      name, kind_name(f->kind), kind_name(kind));
  } else {
    if (f == NULL) {
      f = nf; /* appended at the tail, where the search ended */
      nf = NULL;
      *tail = f;
    }
    f->handles++;
    f->refs++;
    h->fam = f;
  }
  pthread_mutex_unlock(&mu);

  if (nf != NULL) fam_free(nf);
  if (err != NULL) {
    free(h);
    return err;
  }
  /* Idempotent: the renderer is installed once anything can be rendered. */
  ifd_metrics_set_extension(render);
  *family = h;
  return NULL;

out_oom:
  if (nf != NULL) fam_free(nf);
  free(h);
  return oom();
}

TRITONSERVER_Error *TRITONSERVER_MetricFamilyDelete(
    TRITONSERVER_MetricFamily *family) {
  fam_t *f, **pp;
  if (family == NULL) return NULL; /* like free(NULL) */
  f = family->fam;
  pthread_mutex_lock(&mu);
  if (family->metrics > 0) {
    size_t n = family->metrics;
    pthread_mutex_unlock(&mu);
    return ifd__errorf(TRITONSERVER_ERROR_INTERNAL,
                       "Must call MetricDelete on all dependent metrics before "
                       "calling MetricFamilyDelete (family '%s' has %zu)",
                       f->name, n);
  }
  if (--f->handles == 0) {
    /* No handle left, so no metric either: the name is free again. */
    for (pp = &fams; *pp != f; pp = &(*pp)->next) {
    }
    *pp = f->next;
    f->next = NULL;
  }
  fam_unref_locked(f);
  pthread_mutex_unlock(&mu);
  free(family);
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_GetMetricFamilyKind(
    TRITONSERVER_MetricFamily *family, TRITONSERVER_MetricKind *kind) {
  if (family == NULL || kind == NULL)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "family and kind are required");
  *kind = family->fam->kind; /* immutable */
  return NULL;
}

/* ---- arguments --------------------------------------------------------------
 */

TRITONSERVER_Error *TRITONSERVER_MetricArgsNew(TRITONSERVER_MetricArgs **args) {
  if (args == NULL)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG, "args is required");
  *args = calloc(1, sizeof(**args));
  return *args != NULL ? NULL : oom();
}

TRITONSERVER_Error *TRITONSERVER_MetricArgsSetHistogram(
    TRITONSERVER_MetricArgs *args, const double *buckets,
    const uint64_t buckets_count) {
  double *copy = NULL;
  if (args == NULL || (buckets == NULL && buckets_count > 0))
    return ifd__errorf(
        TRITONSERVER_ERROR_INVALID_ARG,
        "args and buckets (when buckets_count > 0) are required");
  if (buckets_count > SIZE_MAX / sizeof(double) - 1)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG, "too many buckets");
  if (buckets_count > 0) {
    copy = malloc(buckets_count * sizeof(double));
    if (copy == NULL) return oom();
    memcpy(copy, buckets, buckets_count * sizeof(double));
  }
  free(args->buckets);
  args->buckets = copy;
  args->nbuckets = buckets_count;
  args->histogram = 1;
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_MetricArgsDelete(
    TRITONSERVER_MetricArgs *args) {
  if (args != NULL) free(args->buckets);
  free(args);
  return NULL;
}

/* ---- metrics ----------------------------------------------------------------
 */

typedef struct label {
  const char *name, *value; /* borrowed: from the caller's parameters */
  uint64_t order;           /* position in the caller's array */
} label_t;

static int label_cmp(const void *a, const void *b) {
  const label_t *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  if (c != 0) return c;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* Builds the canonical text of a label set: sorted by name, a name given
 * twice keeps its last value (as Triton's std::map does), values escaped. */
static TRITONSERVER_Error *build_labels(const TRITONSERVER_Parameter **labels,
                                        uint64_t count, int histogram,
                                        char **out /* OUT: malloc'd */) {
  label_t *l = NULL;
  char **esc = NULL;
  size_t n = 0, i, total = 1;
  char *text = NULL, *p;
  TRITONSERVER_Error *err = NULL;

  if (count > SIZE_MAX / sizeof(label_t))
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG, "too many labels");
  if (count > 0) {
    l = malloc((size_t)count * sizeof(*l));
    if (l == NULL) return oom();
  }
  for (i = 0; i < count; i++) {
    const TRITONSERVER_Parameter *pm = labels[i];
    if (pm == NULL) {
      err = ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG, "label %zu is NULL", i);
      goto out_free_l;
    }
    if (pm->type != TRITONSERVER_PARAMETER_STRING) {
      err = ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                        "Parameter [%s] must have a type of "
                        "TRITONSERVER_PARAMETER_STRING to be added as a label.",
                        pm->name);
      goto out_free_l;
    }
    if (!valid_name(pm->name, 0) ||
        (histogram && strcmp(pm->name, "le") == 0)) {
      err = ifd__errorf(
          TRITONSERVER_ERROR_INVALID_ARG,
          "invalid label name '%s': it must match "
          "[a-zA-Z_][a-zA-Z0-9_]*, not start with \"__\" and not be "
          "\"le\" in a histogram",
          pm->name);
      goto out_free_l;
    }
    l[i].name = pm->name;
    l[i].value = pm->v.s;
    l[i].order = i;
  }
  if (count > 1) qsort(l, (size_t)count, sizeof(*l), label_cmp);
  /* Keep the last of each run of equal names. */
  for (i = 0; i < count; i++) {
    if (i + 1 < count && strcmp(l[i].name, l[i + 1].name) == 0) continue;
    l[n++] = l[i];
  }
  if (n > 0) {
    esc = calloc(n, sizeof(*esc));
    if (esc == NULL) goto out_oom;
  }
  for (i = 0; i < n; i++) {
    esc[i] = escape(l[i].value, 1);
    if (esc[i] == NULL) goto out_oom;
    total += strlen(l[i].name) + strlen(esc[i]) + 4; /* ="", */
  }
  text = malloc(total);
  if (text == NULL) goto out_oom;
  for (p = text, i = 0; i < n; i++)
    p += sprintf(p, "%s%s=\"%s\"", i > 0 ? "," : "", l[i].name, esc[i]);
  *p = '\0';
  *out = text;
  goto out_free_esc;

out_oom:
  err = oom();
out_free_esc:
  for (i = 0; esc != NULL && i < n; i++) free(esc[i]);
  free(esc);
out_free_l:
  free(l);
  return err;
}

/* Checks the histogram arguments and sets the series' bounds and counters.
 * A last bound of +Inf is the implicit bucket, so it is dropped. */
static TRITONSERVER_Error *set_buckets(series_t *s,
                                       const TRITONSERVER_MetricArgs *args) {
  uint64_t n = args->nbuckets, i;
  if (n > 0 && isinf(args->buckets[n - 1]) && args->buckets[n - 1] > 0) n--;
  for (i = 0; i < n; i++) {
    if (isnan(args->buckets[i]) ||
        (isinf(args->buckets[i]) && args->buckets[i] > 0))
      return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                         "histogram bucket %" PRIu64
                         " is not a number or +Inf "
                         "before the last",
                         i);
    if (i > 0 && !(args->buckets[i - 1] < args->buckets[i]))
      return ifd__errorf(
          TRITONSERVER_ERROR_INVALID_ARG,
          "Bucket Boundaries must be strictly sorted (bucket %" PRIu64
          " is not above bucket %" PRIu64 ")",
          i, i - 1);
  }
  if (n > 0) {
    s->bounds = malloc((size_t)n * sizeof(double));
    if (s->bounds == NULL) return oom();
    memcpy(s->bounds, args->buckets, (size_t)n * sizeof(double));
  }
  s->nbounds = (size_t)n;
  s->counts = calloc((size_t)n + 1, sizeof(*s->counts));
  return s->counts != NULL ? NULL : oom();
}

TRITONSERVER_Error *TRITONSERVER_MetricNewWithArgs(
    TRITONSERVER_Metric **metric, TRITONSERVER_MetricFamily *family,
    const TRITONSERVER_Parameter **labels, const uint64_t label_count,
    const TRITONSERVER_MetricArgs *args) {
  TRITONSERVER_Metric *m;
  series_t *ns, *s, **tail;
  fam_t *f;
  TRITONSERVER_Error *err;

  if (metric == NULL || family == NULL || (labels == NULL && label_count > 0))
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "metric, family and labels (when label_count > 0) are "
                       "required");
  *metric = NULL;
  f = family->fam;
  if (f->kind != TRITONSERVER_METRIC_KIND_HISTOGRAM && args != NULL)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "Unexpected args found in %s Metric constructor.",
                       kind_name(f->kind));
  if (f->kind == TRITONSERVER_METRIC_KIND_HISTOGRAM && args == NULL)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "Bucket boundaries not found in Metric args.");
  if (args != NULL && !args->histogram)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "Metric args not set to histogram kind.");

  m = calloc(1, sizeof(*m));
  ns = calloc(1, sizeof(*ns));
  if (m == NULL || ns == NULL) {
    err = oom();
    goto out_free;
  }
  err =
      build_labels(labels, label_count,
                   f->kind == TRITONSERVER_METRIC_KIND_HISTOGRAM, &ns->labels);
  if (err == NULL && args != NULL) err = set_buckets(ns, args);
  if (err != NULL) goto out_free;
  atomic_init(&ns->value, to_bits(0.0));

  pthread_mutex_lock(&mu);
  for (tail = &f->series; (s = *tail) != NULL; tail = &s->next)
    if (strcmp(s->labels, ns->labels) == 0) break;
  if (s == NULL) {
    /* A new label set; an existing one is shared (and its buckets kept). */
    s = ns;
    ns = NULL;
    s->fam = f;
    f->refs++;
    *tail = s;
  }
  s->handles++;
  s->refs++;
  family->metrics++;
  pthread_mutex_unlock(&mu);

  m->series = s;
  m->family = family;
  m->kind = f->kind;
  *metric = m;
  m = NULL;
  err = NULL;

out_free:
  if (ns != NULL) series_free(ns);
  free(m);
  return err;
}

TRITONSERVER_Error *TRITONSERVER_MetricNew(
    TRITONSERVER_Metric **metric, TRITONSERVER_MetricFamily *family,
    const TRITONSERVER_Parameter **labels, const uint64_t label_count) {
  return TRITONSERVER_MetricNewWithArgs(metric, family, labels, label_count,
                                        NULL);
}

TRITONSERVER_Error *TRITONSERVER_MetricDelete(TRITONSERVER_Metric *metric) {
  series_t *s, **pp;
  if (metric == NULL) return NULL; /* like free(NULL) */
  s = metric->series;
  pthread_mutex_lock(&mu);
  if (--s->handles == 0) {
    /* Off the page now; a scrape that pinned it still reads it. */
    for (pp = &s->fam->series; *pp != s; pp = &(*pp)->next) {
    }
    *pp = s->next;
    s->next = NULL;
  }
  metric->family->metrics--;
  series_unref_locked(s);
  pthread_mutex_unlock(&mu);
  free(metric);
  return NULL;
}

static TRITONSERVER_Error *wrong_kind(const TRITONSERVER_Metric *m,
                                      const char *op) {
  return ifd__errorf(TRITONSERVER_ERROR_UNSUPPORTED,
                     "TRITONSERVER_METRIC_KIND_%s does not support %s",
                     m->kind == TRITONSERVER_METRIC_KIND_COUNTER ? "COUNTER"
                     : m->kind == TRITONSERVER_METRIC_KIND_GAUGE ? "GAUGE"
                                                                 : "HISTOGRAM",
                     op);
}

TRITONSERVER_Error *TRITONSERVER_MetricValue(TRITONSERVER_Metric *metric,
                                             double *value) {
  if (metric == NULL || value == NULL)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "metric and value are required");
  if (metric->kind == TRITONSERVER_METRIC_KIND_HISTOGRAM)
    return wrong_kind(metric, "Value");
  *value = from_bits(
      atomic_load_explicit(&metric->series->value, memory_order_relaxed));
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_MetricIncrement(TRITONSERVER_Metric *metric,
                                                 double value) {
  if (metric == NULL)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG, "metric is required");
  if (metric->kind == TRITONSERVER_METRIC_KIND_HISTOGRAM)
    return wrong_kind(metric, "Increment");
  if (metric->kind == TRITONSERVER_METRIC_KIND_COUNTER && value < 0.0)
    return ifd__errorf(
        TRITONSERVER_ERROR_INVALID_ARG,
        "TRITONSERVER_METRIC_KIND_COUNTER can only be incremented "
        "monotonically by non-negative values.");
  add_double(&metric->series->value, value);
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_MetricSet(TRITONSERVER_Metric *metric,
                                           double value) {
  if (metric == NULL)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG, "metric is required");
  if (metric->kind != TRITONSERVER_METRIC_KIND_GAUGE)
    return wrong_kind(metric, "Set");
  atomic_store_explicit(&metric->series->value, to_bits(value),
                        memory_order_relaxed);
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_MetricObserve(TRITONSERVER_Metric *metric,
                                               double value) {
  series_t *s;
  size_t lo = 0, hi;
  if (metric == NULL)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG, "metric is required");
  if (metric->kind != TRITONSERVER_METRIC_KIND_HISTOGRAM)
    return wrong_kind(metric, "Observe");
  s = metric->series;
  /* The first bucket whose upper bound is >= value ("le" is inclusive);
   * nbounds is the +Inf bucket, where NaN lands too. */
  hi = s->nbounds;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->bounds[mid] >= value)
      hi = mid;
    else
      lo = mid + 1;
  }
  atomic_fetch_add_explicit(&s->counts[lo], 1, memory_order_relaxed);
  add_double(&s->value, value);
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_GetMetricKind(TRITONSERVER_Metric *metric,
                                               TRITONSERVER_MetricKind *kind) {
  if (metric == NULL || kind == NULL)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "metric and kind are required");
  *kind = metric->kind;
  return NULL;
}

/* ---- rendering --------------------------------------------------------------
 */

typedef struct buf {
  char *p;
  size_t len, cap;
  int failed;
} buf_t;

static void put(buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void put(buf_t *b, const char *fmt, ...) {
  va_list ap;
  int n;
  while (!b->failed) {
    va_start(ap, fmt);
    n = vsnprintf(b->p != NULL ? b->p + b->len : NULL, b->cap - b->len, fmt,
                  ap);
    va_end(ap);
    if (n < 0) {
      b->failed = 1;
    } else if ((size_t)n < b->cap - b->len) {
      b->len += (size_t)n;
      return;
    } else {
      size_t ncap = (b->cap ? b->cap * 2 : 4096) + (size_t)n;
      char *np = realloc(b->p, ncap);
      if (np == NULL)
        b->failed = 1;
      else {
        b->p = np;
        b->cap = ncap;
      }
    }
  }
}

/* Renders one pinned series. Values are read once each: a histogram's +Inf
 * bucket and _count are the sum of the bucket counts read, so they agree
 * with the buckets even while observations land. */
static void render_series(buf_t *b, const fam_t *f, series_t *s) {
  char v[32];
  const char *sep = s->labels[0] != '\0' ? "," : "";
  if (f->kind != TRITONSERVER_METRIC_KIND_HISTOGRAM) {
    fmt_double(
        v, from_bits(atomic_load_explicit(&s->value, memory_order_relaxed)));
    if (s->labels[0] != '\0')
      put(b, "%s{%s} %s\n", f->name, s->labels, v);
    else
      put(b, "%s %s\n", f->name, v);
    return;
  }
  uint64_t total = 0;
  size_t i;
  for (i = 0; i <= s->nbounds; i++) {
    total += atomic_load_explicit(&s->counts[i], memory_order_relaxed);
    if (i < s->nbounds)
      fmt_double(v, s->bounds[i]);
    else
      strcpy(v, "+Inf");
    put(b, "%s_bucket{%s%sle=\"%s\"} %" PRIu64 "\n", f->name, s->labels, sep, v,
        total);
  }
  fmt_double(v,
             from_bits(atomic_load_explicit(&s->value, memory_order_relaxed)));
  if (s->labels[0] != '\0') {
    put(b, "%s_sum{%s} %s\n", f->name, s->labels, v);
    put(b, "%s_count{%s} %" PRIu64 "\n", f->name, s->labels, total);
  } else {
    put(b, "%s_sum %s\n", f->name, v);
    put(b, "%s_count %" PRIu64 "\n", f->name, total);
  }
}

/* The extension of core/metrics.h: every family with metrics, in creation
 * order, each series as of the moment it was pinned. */
static int render(char **text, size_t *len) {
  series_t **pin = NULL, *s;
  fam_t *f;
  size_t n = 0, i;
  buf_t b = {NULL, 0, 0, 0};

  *text = NULL;
  *len = 0;
  pthread_mutex_lock(&mu);
  for (f = fams; f != NULL; f = f->next)
    for (s = f->series; s != NULL; s = s->next) n++;
  if (n > 0) pin = malloc(n * sizeof(*pin));
  if (pin == NULL) {
    pthread_mutex_unlock(&mu);
    return n > 0 ? IFD_ENOMEM : 0;
  }
  n = 0;
  for (f = fams; f != NULL; f = f->next)
    for (s = f->series; s != NULL; s = s->next) {
      s->refs++;
      pin[n++] = s;
    }
  pthread_mutex_unlock(&mu);
  if (render_pinned_hook != NULL) render_pinned_hook();

  /* Unlocked: a pinned series and its family stay allocated, and their
   * names, labels and bounds never change. */
  for (i = 0; i < n; i++) {
    f = pin[i]->fam;
    if (i == 0 || pin[i - 1]->fam != f)
      put(&b, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name,
          kind_name(f->kind));
    render_series(&b, f, pin[i]);
  }

  pthread_mutex_lock(&mu);
  for (i = 0; i < n; i++) series_unref_locked(pin[i]);
  pthread_mutex_unlock(&mu);
  free(pin);
  if (b.failed) {
    free(b.p);
    return IFD_ENOMEM;
  }
  *text = b.p;
  *len = b.len;
  return 0;
}
