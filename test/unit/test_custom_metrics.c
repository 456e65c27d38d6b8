/*
 * test/unit/test_custom_metrics.c - the backend metrics API of
 * backend_api/metrics/tsrv_metrics.c (included to reach its renderer): every
 * function with its errors, Triton's sharing rules for family names and label
 * sets, the exposition text, exact totals from concurrent updates, and
 * creation and deletion racing a renderer.
 *
 * The registry is process-wide, so every test deletes what it creates and
 * checks that nothing is left to render.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_api/metrics/tsrv_metrics.c"

/* Asserts success, freeing the error otherwise. */
#define OK(x)                                                      \
  do {                                                             \
    TRITONSERVER_Error *e__ = (x);                                 \
    if (e__ != NULL) {                                             \
      print_error("%s: %s\n", #x, TRITONSERVER_ErrorMessage(e__)); \
      TRITONSERVER_ErrorDelete(e__);                               \
      fail();                                                      \
    }                                                              \
  } while (0)

/* In a worker thread: success or abort (cmocka's fail() belongs to the
 * main thread). */
#define WORKER_OK(x)                                                   \
  do {                                                                 \
    TRITONSERVER_Error *e__ = (x);                                     \
    if (e__ != NULL) {                                                 \
      fprintf(stderr, "%s: %s\n", #x, TRITONSERVER_ErrorMessage(e__)); \
      abort();                                                         \
    }                                                                  \
  } while (0)

/* Asserts an error of `code` (a TRITONSERVER_Error_Code), and frees it. */
static void expect_code(TRITONSERVER_Error *e, TRITONSERVER_Error_Code code) {
  assert_non_null(e);
  if (TRITONSERVER_ErrorCode(e) != code)
    print_error("unexpected code %d: %s\n", (int)TRITONSERVER_ErrorCode(e),
                TRITONSERVER_ErrorMessage(e));
  assert_int_equal(TRITONSERVER_ErrorCode(e), code);
  TRITONSERVER_ErrorDelete(e);
}

/* The extension's text, "" when it has nothing; caller frees. */
static char *page(void) {
  char *text = NULL;
  size_t len = 99;
  assert_int_equal(render(&text, &len), 0);
  if (text == NULL) {
    assert_int_equal(len, 0);
    text = strdup("");
    assert_non_null(text);
  } else {
    assert_int_equal(strlen(text), len);
  }
  return text;
}

static void assert_page(const char *want) {
  char *got = page();
  if (strcmp(got, want) != 0)
    print_error("page:\n%s\n--- wanted:\n%s\n", got, want);
  assert_string_equal(got, want);
  free(got);
}

static void assert_page_has(const char *needle, int present) {
  char *got = page();
  if ((strstr(got, needle) != NULL) != present)
    print_error("page:\n%s\n--- %s: %s\n", got,
                present ? "missing" : "unexpected", needle);
  assert_int_equal(strstr(got, needle) != NULL, present);
  free(got);
}

static const TRITONSERVER_Parameter *str_label(const char *name,
                                               const char *value) {
  TRITONSERVER_Parameter *p =
      TRITONSERVER_ParameterNew(name, TRITONSERVER_PARAMETER_STRING, value);
  assert_non_null(p);
  return p;
}

static void free_labels(const TRITONSERVER_Parameter **l, size_t n) {
  for (size_t i = 0; i < n; i++)
    TRITONSERVER_ParameterDelete((TRITONSERVER_Parameter *)l[i]);
}

static double value_of(TRITONSERVER_Metric *m) {
  double v = -12345;
  OK(TRITONSERVER_MetricValue(m, &v));
  return v;
}

/* ---- counters and gauges --------------------------------------------------
 */

static void test_counter(void **state) {
  TRITONSERVER_MetricFamily *f = NULL;
  TRITONSERVER_Metric *m = NULL;
  TRITONSERVER_MetricKind kind;
  const TRITONSERVER_Parameter *l[2];
  (void)state;

  OK(TRITONSERVER_MetricFamilyNew(&f, TRITONSERVER_METRIC_KIND_COUNTER,
                                  "input_byte_size_counter",
                                  "Cumulative input_byte_size"));
  OK(TRITONSERVER_GetMetricFamilyKind(f, &kind));
  assert_int_equal(kind, TRITONSERVER_METRIC_KIND_COUNTER);
  /* A family without metrics is not rendered. */
  assert_page("");

  l[0] = str_label("version", "1");
  l[1] = str_label("model", "m");
  OK(TRITONSERVER_MetricNew(&m, f, l, 2));
  free_labels(l, 2); /* the metric keeps copies */
  OK(TRITONSERVER_GetMetricKind(m, &kind));
  assert_int_equal(kind, TRITONSERVER_METRIC_KIND_COUNTER);
  assert_true(value_of(m) == 0.0);
  OK(TRITONSERVER_MetricIncrement(m, 10));
  OK(TRITONSERVER_MetricIncrement(m, 0.5));
  OK(TRITONSERVER_MetricIncrement(m, 0));
  assert_true(value_of(m) == 10.5);

  expect_code(TRITONSERVER_MetricIncrement(m, -1),
              TRITONSERVER_ERROR_INVALID_ARG);
  expect_code(TRITONSERVER_MetricSet(m, 3), TRITONSERVER_ERROR_UNSUPPORTED);
  expect_code(TRITONSERVER_MetricObserve(m, 3), TRITONSERVER_ERROR_UNSUPPORTED);
  assert_true(value_of(m) == 10.5);

  /* Labels sorted by name. */
  assert_page(
      "# HELP input_byte_size_counter Cumulative input_byte_size\n"
      "# TYPE input_byte_size_counter counter\n"
      "input_byte_size_counter{model=\"m\",version=\"1\"} 10.5\n");

  /* The family outlives its metrics, not the other way round. */
  expect_code(TRITONSERVER_MetricFamilyDelete(f), TRITONSERVER_ERROR_INTERNAL);
  OK(TRITONSERVER_MetricDelete(m));
  assert_page("");
  OK(TRITONSERVER_MetricFamilyDelete(f));
}

static void test_gauge(void **state) {
  TRITONSERVER_MetricFamily *f = NULL;
  TRITONSERVER_Metric *m = NULL;
  TRITONSERVER_MetricKind kind;
  (void)state;

  OK(TRITONSERVER_MetricFamilyNew(&f, TRITONSERVER_METRIC_KIND_GAUGE, "g",
                                  "a gauge"));
  OK(TRITONSERVER_MetricNew(&m, f, NULL, 0));
  OK(TRITONSERVER_GetMetricKind(m, &kind));
  assert_int_equal(kind, TRITONSERVER_METRIC_KIND_GAUGE);
  OK(TRITONSERVER_MetricIncrement(m, 10));
  OK(TRITONSERVER_MetricIncrement(m, -12.5)); /* gauges go down */
  assert_true(value_of(m) == -2.5);
  OK(TRITONSERVER_MetricSet(m, 42));
  assert_true(value_of(m) == 42);
  expect_code(TRITONSERVER_MetricObserve(m, 1), TRITONSERVER_ERROR_UNSUPPORTED);
  assert_page("# HELP g a gauge\n# TYPE g gauge\ng 42\n");

  OK(TRITONSERVER_MetricSet(m, 0.1));
  assert_page("# HELP g a gauge\n# TYPE g gauge\ng 0.1\n");
  OK(TRITONSERVER_MetricSet(m, 1.0 / 3.0));
  assert_page("# HELP g a gauge\n# TYPE g gauge\ng 0.33333333333333331\n");
  OK(TRITONSERVER_MetricSet(m, INFINITY));
  assert_page("# HELP g a gauge\n# TYPE g gauge\ng +Inf\n");
  OK(TRITONSERVER_MetricSet(m, -INFINITY));
  assert_page("# HELP g a gauge\n# TYPE g gauge\ng -Inf\n");
  OK(TRITONSERVER_MetricSet(m, NAN));
  assert_page("# HELP g a gauge\n# TYPE g gauge\ng NaN\n");
  OK(TRITONSERVER_MetricSet(m, 1e300));
  assert_page("# HELP g a gauge\n# TYPE g gauge\ng 1e+300\n");

  OK(TRITONSERVER_MetricDelete(m));
  OK(TRITONSERVER_MetricFamilyDelete(f));
  assert_page("");
}

/* ---- histograms -----------------------------------------------------------
 */

static void test_histogram(void **state) {
  TRITONSERVER_MetricFamily *f = NULL;
  TRITONSERVER_Metric *m = NULL, *m2 = NULL;
  TRITONSERVER_MetricArgs *args = NULL, *plain = NULL;
  TRITONSERVER_MetricKind kind;
  const TRITONSERVER_Parameter *l[1];
  const double buckets[] = {1, 2.5, 10};
  double v;
  (void)state;

  OK(TRITONSERVER_MetricFamilyNew(&f, TRITONSERVER_METRIC_KIND_HISTOGRAM,
                                  "latency_ms", "Request latency"));
  l[0] = str_label("model", "m");
  /* A histogram needs histogram arguments. */
  expect_code(TRITONSERVER_MetricNew(&m, f, l, 1),
              TRITONSERVER_ERROR_INVALID_ARG);
  assert_null(m);
  OK(TRITONSERVER_MetricArgsNew(&plain));
  expect_code(TRITONSERVER_MetricNewWithArgs(&m, f, l, 1, plain),
              TRITONSERVER_ERROR_INVALID_ARG);
  OK(TRITONSERVER_MetricArgsDelete(plain));

  OK(TRITONSERVER_MetricArgsNew(&args));
  expect_code(TRITONSERVER_MetricArgsSetHistogram(args, NULL, 2),
              TRITONSERVER_ERROR_INVALID_ARG);
  OK(TRITONSERVER_MetricArgsSetHistogram(args, buckets, 3));
  OK(TRITONSERVER_MetricNewWithArgs(&m, f, l, 1, args));
  OK(TRITONSERVER_GetMetricKind(m, &kind));
  assert_int_equal(kind, TRITONSERVER_METRIC_KIND_HISTOGRAM);

  OK(TRITONSERVER_MetricObserve(m, 0.5));
  OK(TRITONSERVER_MetricObserve(m, 1)); /* le is inclusive */
  OK(TRITONSERVER_MetricObserve(m, 2));
  OK(TRITONSERVER_MetricObserve(m, 10));
  OK(TRITONSERVER_MetricObserve(m, 11));
  OK(TRITONSERVER_MetricObserve(m, 100));
  expect_code(TRITONSERVER_MetricValue(m, &v), TRITONSERVER_ERROR_UNSUPPORTED);
  expect_code(TRITONSERVER_MetricIncrement(m, 1),
              TRITONSERVER_ERROR_UNSUPPORTED);
  expect_code(TRITONSERVER_MetricSet(m, 1), TRITONSERVER_ERROR_UNSUPPORTED);
  assert_page(
      "# HELP latency_ms Request latency\n"
      "# TYPE latency_ms histogram\n"
      "latency_ms_bucket{model=\"m\",le=\"1\"} 2\n"
      "latency_ms_bucket{model=\"m\",le=\"2.5\"} 3\n"
      "latency_ms_bucket{model=\"m\",le=\"10\"} 4\n"
      "latency_ms_bucket{model=\"m\",le=\"+Inf\"} 6\n"
      "latency_ms_sum{model=\"m\"} 124.5\n"
      "latency_ms_count{model=\"m\"} 6\n");

  /* The same label set shares the series and keeps its buckets. */
  {
    const double other[] = {5};
    TRITONSERVER_MetricArgs *a2 = NULL;
    OK(TRITONSERVER_MetricArgsNew(&a2));
    OK(TRITONSERVER_MetricArgsSetHistogram(a2, other, 1));
    OK(TRITONSERVER_MetricNewWithArgs(&m2, f, l, 1, a2));
    OK(TRITONSERVER_MetricArgsDelete(a2));
    OK(TRITONSERVER_MetricObserve(m2, 3));
    assert_page_has("latency_ms_count{model=\"m\"} 7\n", 1);
    assert_page_has("le=\"5\"", 0);
    OK(TRITONSERVER_MetricDelete(m2));
  }
  free_labels(l, 1);
  OK(TRITONSERVER_MetricDelete(m));

  /* "le" is the bucket label; no labels at all; an explicit last +Inf is
   * the implicit bucket; no buckets leaves +Inf alone. */
  l[0] = str_label("le", "x");
  expect_code(TRITONSERVER_MetricNewWithArgs(&m, f, l, 1, args),
              TRITONSERVER_ERROR_INVALID_ARG);
  free_labels(l, 1);
  {
    const double inf_last[] = {1, INFINITY};
    OK(TRITONSERVER_MetricArgsSetHistogram(args, inf_last, 2));
    OK(TRITONSERVER_MetricNewWithArgs(&m, f, NULL, 0, args));
    OK(TRITONSERVER_MetricObserve(m, 2));
    assert_page(
        "# HELP latency_ms Request latency\n"
        "# TYPE latency_ms histogram\n"
        "latency_ms_bucket{le=\"1\"} 0\n"
        "latency_ms_bucket{le=\"+Inf\"} 1\n"
        "latency_ms_sum 2\n"
        "latency_ms_count 1\n");
    OK(TRITONSERVER_MetricDelete(m));
    OK(TRITONSERVER_MetricArgsSetHistogram(args, NULL, 0));
    OK(TRITONSERVER_MetricNewWithArgs(&m, f, NULL, 0, args));
    OK(TRITONSERVER_MetricObserve(m, -3));
    assert_page_has("latency_ms_bucket{le=\"+Inf\"} 1\nlatency_ms_sum -3\n", 1);
    OK(TRITONSERVER_MetricDelete(m));
  }
  /* Buckets must increase strictly and be numbers. */
  {
    const double unsorted[] = {1, 3, 2};
    const double equal[] = {1, 1};
    const double nan[] = {NAN};
    const double inf_mid[] = {INFINITY, 5};
    OK(TRITONSERVER_MetricArgsSetHistogram(args, unsorted, 3));
    expect_code(TRITONSERVER_MetricNewWithArgs(&m, f, NULL, 0, args),
                TRITONSERVER_ERROR_INVALID_ARG);
    OK(TRITONSERVER_MetricArgsSetHistogram(args, equal, 2));
    expect_code(TRITONSERVER_MetricNewWithArgs(&m, f, NULL, 0, args),
                TRITONSERVER_ERROR_INVALID_ARG);
    OK(TRITONSERVER_MetricArgsSetHistogram(args, nan, 1));
    expect_code(TRITONSERVER_MetricNewWithArgs(&m, f, NULL, 0, args),
                TRITONSERVER_ERROR_INVALID_ARG);
    OK(TRITONSERVER_MetricArgsSetHistogram(args, inf_mid, 2));
    expect_code(TRITONSERVER_MetricNewWithArgs(&m, f, NULL, 0, args),
                TRITONSERVER_ERROR_INVALID_ARG);
  }
  OK(TRITONSERVER_MetricArgsDelete(args));
  OK(TRITONSERVER_MetricArgsDelete(NULL));
  OK(TRITONSERVER_MetricFamilyDelete(f));
  assert_page("");
}

static void test_args_only_for_histograms(void **state) {
  TRITONSERVER_MetricFamily *c = NULL, *g = NULL;
  TRITONSERVER_MetricArgs *args = NULL;
  TRITONSERVER_Metric *m = NULL;
  const double b[] = {1};
  (void)state;
  OK(TRITONSERVER_MetricFamilyNew(&c, TRITONSERVER_METRIC_KIND_COUNTER, "c1",
                                  "c"));
  OK(TRITONSERVER_MetricFamilyNew(&g, TRITONSERVER_METRIC_KIND_GAUGE, "g1",
                                  "g"));
  OK(TRITONSERVER_MetricArgsNew(&args));
  OK(TRITONSERVER_MetricArgsSetHistogram(args, b, 1));
  expect_code(TRITONSERVER_MetricNewWithArgs(&m, c, NULL, 0, args),
              TRITONSERVER_ERROR_INVALID_ARG);
  expect_code(TRITONSERVER_MetricNewWithArgs(&m, g, NULL, 0, args),
              TRITONSERVER_ERROR_INVALID_ARG);
  assert_null(m);
  OK(TRITONSERVER_MetricNewWithArgs(&m, g, NULL, 0, NULL));
  OK(TRITONSERVER_MetricDelete(m));
  OK(TRITONSERVER_MetricArgsDelete(args));
  OK(TRITONSERVER_MetricFamilyDelete(c));
  OK(TRITONSERVER_MetricFamilyDelete(g));
  assert_page("");
}

/* ---- families -------------------------------------------------------------
 */

static void test_family_errors(void **state) {
  TRITONSERVER_MetricFamily *f = NULL;
  TRITONSERVER_MetricKind kind;
  (void)state;
  expect_code(TRITONSERVER_MetricFamilyNew(&f, (TRITONSERVER_MetricKind)7, "x",
                                           "bad kind"),
              TRITONSERVER_ERROR_INVALID_ARG);
  expect_code(TRITONSERVER_MetricFamilyNew(NULL, TRITONSERVER_METRIC_KIND_GAUGE,
                                           "x", "d"),
              TRITONSERVER_ERROR_INVALID_ARG);
  expect_code(TRITONSERVER_MetricFamilyNew(&f, TRITONSERVER_METRIC_KIND_GAUGE,
                                           NULL, "d"),
              TRITONSERVER_ERROR_INVALID_ARG);
  expect_code(TRITONSERVER_MetricFamilyNew(&f, TRITONSERVER_METRIC_KIND_GAUGE,
                                           "x", NULL),
              TRITONSERVER_ERROR_INVALID_ARG);
  static const char *const bad_names[] = {"",    "1abc", "a-b", "a b",
                                          "__x", "a\"b", "é",   "a{b}"};
  for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++)
    expect_code(TRITONSERVER_MetricFamilyNew(&f, TRITONSERVER_METRIC_KIND_GAUGE,
                                             bad_names[i], "d"),
                TRITONSERVER_ERROR_INVALID_ARG);
  /* The server's own families would render twice. */
  expect_code(TRITONSERVER_MetricFamilyNew(&f, TRITONSERVER_METRIC_KIND_COUNTER,
                                           "nv_inference_count", "d"),
              TRITONSERVER_ERROR_INVALID_ARG);
  expect_code(TRITONSERVER_MetricFamilyNew(&f, TRITONSERVER_METRIC_KIND_GAUGE,
                                           "nv_cpu_utilization", "d"),
              TRITONSERVER_ERROR_INVALID_ARG);
  assert_null(f);
  OK(TRITONSERVER_MetricFamilyNew(&f, TRITONSERVER_METRIC_KIND_GAUGE,
                                  "ns:sub_name9", "colons are allowed"));
  expect_code(TRITONSERVER_GetMetricFamilyKind(f, NULL),
              TRITONSERVER_ERROR_INVALID_ARG);
  expect_code(TRITONSERVER_GetMetricFamilyKind(NULL, &kind),
              TRITONSERVER_ERROR_INVALID_ARG);
  OK(TRITONSERVER_MetricFamilyDelete(f));
  OK(TRITONSERVER_MetricFamilyDelete(NULL));
  OK(TRITONSERVER_MetricDelete(NULL));
}

/* Triton's registry merges by name: the same kind shares the family (the
 * first description stays), another kind is refused while it exists. */
static void test_family_sharing(void **state) {
  TRITONSERVER_MetricFamily *f1 = NULL, *f2 = NULL, *f3 = NULL;
  TRITONSERVER_Metric *m1 = NULL, *m2 = NULL;
  const TRITONSERVER_Parameter *la[1], *lb[1];
  (void)state;

  OK(TRITONSERVER_MetricFamilyNew(&f1, TRITONSERVER_METRIC_KIND_COUNTER,
                                  "shared", "first description"));
  OK(TRITONSERVER_MetricFamilyNew(&f2, TRITONSERVER_METRIC_KIND_COUNTER,
                                  "shared", "second description"));
  expect_code(TRITONSERVER_MetricFamilyNew(&f3, TRITONSERVER_METRIC_KIND_GAUGE,
                                           "shared", "other kind"),
              TRITONSERVER_ERROR_INVALID_ARG);
  assert_null(f3);
  la[0] = str_label("backend", "a");
  lb[0] = str_label("backend", "b");
  OK(TRITONSERVER_MetricNew(&m1, f1, la, 1));
  OK(TRITONSERVER_MetricNew(&m2, f2, lb, 1));
  OK(TRITONSERVER_MetricIncrement(m1, 1));
  OK(TRITONSERVER_MetricIncrement(m2, 2));
  assert_page(
      "# HELP shared first description\n"
      "# TYPE shared counter\n"
      "shared{backend=\"a\"} 1\n"
      "shared{backend=\"b\"} 2\n");

  /* Each handle counts its own metrics. */
  expect_code(TRITONSERVER_MetricFamilyDelete(f1), TRITONSERVER_ERROR_INTERNAL);
  OK(TRITONSERVER_MetricDelete(m1));
  OK(TRITONSERVER_MetricFamilyDelete(f1));
  assert_page(
      "# HELP shared first description\n"
      "# TYPE shared counter\n"
      "shared{backend=\"b\"} 2\n");
  OK(TRITONSERVER_MetricDelete(m2));
  OK(TRITONSERVER_MetricFamilyDelete(f2));
  assert_page("");

  /* Once every handle is gone the name is free, for any kind. */
  OK(TRITONSERVER_MetricFamilyNew(&f3, TRITONSERVER_METRIC_KIND_GAUGE, "shared",
                                  "now a gauge"));
  OK(TRITONSERVER_MetricNew(&m1, f3, la, 1));
  assert_page(
      "# HELP shared now a gauge\n"
      "# TYPE shared gauge\n"
      "shared{backend=\"a\"} 0\n");
  OK(TRITONSERVER_MetricDelete(m1));
  OK(TRITONSERVER_MetricFamilyDelete(f3));
  free_labels(la, 1);
  free_labels(lb, 1);
  assert_page("");
}

/* ---- labels ---------------------------------------------------------------
 */

static void test_labels(void **state) {
  TRITONSERVER_MetricFamily *f = NULL;
  TRITONSERVER_Metric *m1 = NULL, *m2 = NULL, *m3 = NULL;
  const TRITONSERVER_Parameter *l[3], *bad[1];
  int64_t one = 1;
  (void)state;

  OK(TRITONSERVER_MetricFamilyNew(&f, TRITONSERVER_METRIC_KIND_COUNTER, "lab",
                                  "help with \\ and\nnewline"));
  /* Only string parameters are labels. */
  bad[0] = TRITONSERVER_ParameterNew("n", TRITONSERVER_PARAMETER_INT, &one);
  expect_code(TRITONSERVER_MetricNew(&m1, f, bad, 1),
              TRITONSERVER_ERROR_INVALID_ARG);
  free_labels(bad, 1);
  static const char *const bad_names[] = {"", "1a", "a:b", "__name", "a-b"};
  for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
    bad[0] = str_label(bad_names[i], "v");
    expect_code(TRITONSERVER_MetricNew(&m1, f, bad, 1),
                TRITONSERVER_ERROR_INVALID_ARG);
    free_labels(bad, 1);
  }
  expect_code(TRITONSERVER_MetricNew(&m1, f, NULL, 2),
              TRITONSERVER_ERROR_INVALID_ARG);
  expect_code(TRITONSERVER_MetricNew(NULL, f, NULL, 0),
              TRITONSERVER_ERROR_INVALID_ARG);
  expect_code(TRITONSERVER_MetricNew(&m1, NULL, NULL, 0),
              TRITONSERVER_ERROR_INVALID_ARG);
  assert_null(m1);

  /* Values escaped; a name given twice keeps its last value; order of the
   * caller's array does not matter for identity. */
  l[0] = str_label("z", "q\"uote \\ back\nnew");
  l[1] = str_label("a", "first");
  l[2] = str_label("a", "last");
  OK(TRITONSERVER_MetricNew(&m1, f, l, 3));
  {
    const TRITONSERVER_Parameter *r[2] = {l[2], l[0]};
    OK(TRITONSERVER_MetricNew(&m2, f, r, 2));
  }
  {
    const TRITONSERVER_Parameter *r[1] = {l[1]};
    OK(TRITONSERVER_MetricNew(&m3, f, r, 1));
  }
  free_labels(l, 3);
  OK(TRITONSERVER_MetricIncrement(m1, 7.5));
  assert_true(value_of(m2) == 7.5); /* the same series */
  assert_true(value_of(m3) == 0);   /* another one */
  OK(TRITONSERVER_MetricIncrement(m3, 1));
  assert_page(
      "# HELP lab help with \\\\ and\\nnewline\n"
      "# TYPE lab counter\n"
      "lab{a=\"last\",z=\"q\\\"uote \\\\ back\\nnew\"} 7.5\n"
      "lab{a=\"first\"} 1\n");
  /* The shared series stays until its last handle goes. */
  OK(TRITONSERVER_MetricDelete(m1));
  assert_page_has("lab{a=\"last\"", 1);
  OK(TRITONSERVER_MetricDelete(m2));
  assert_page_has("lab{a=\"last\"", 0);
  OK(TRITONSERVER_MetricDelete(m3));
  OK(TRITONSERVER_MetricFamilyDelete(f));
  assert_page("");
}

static void test_null_arguments(void **state) {
  TRITONSERVER_MetricFamily *f = NULL;
  TRITONSERVER_Metric *m = NULL;
  TRITONSERVER_MetricKind kind;
  (void)state;
  expect_code(TRITONSERVER_MetricValue(NULL, NULL),
              TRITONSERVER_ERROR_INVALID_ARG);
  expect_code(TRITONSERVER_MetricIncrement(NULL, 1),
              TRITONSERVER_ERROR_INVALID_ARG);
  expect_code(TRITONSERVER_MetricSet(NULL, 1), TRITONSERVER_ERROR_INVALID_ARG);
  expect_code(TRITONSERVER_MetricObserve(NULL, 1),
              TRITONSERVER_ERROR_INVALID_ARG);
  expect_code(TRITONSERVER_GetMetricKind(NULL, &kind),
              TRITONSERVER_ERROR_INVALID_ARG);
  expect_code(TRITONSERVER_MetricArgsNew(NULL), TRITONSERVER_ERROR_INVALID_ARG);
  expect_code(TRITONSERVER_MetricArgsSetHistogram(NULL, NULL, 0),
              TRITONSERVER_ERROR_INVALID_ARG);
  OK(TRITONSERVER_MetricFamilyNew(&f, TRITONSERVER_METRIC_KIND_GAUGE, "nn",
                                  "d"));
  OK(TRITONSERVER_MetricNew(&m, f, NULL, 0));
  expect_code(TRITONSERVER_MetricValue(m, NULL),
              TRITONSERVER_ERROR_INVALID_ARG);
  expect_code(TRITONSERVER_GetMetricKind(m, NULL),
              TRITONSERVER_ERROR_INVALID_ARG);
  OK(TRITONSERVER_MetricDelete(m));
  OK(TRITONSERVER_MetricFamilyDelete(f));
}

/* ---- threads --------------------------------------------------------------
 */

enum { THREADS = 4, ROUNDS = 100000 };

typedef struct worker {
  TRITONSERVER_Metric *counter, *gauge, *hist; /* borrowed */
  int id;
} worker_t;

static void *update_worker(void *arg) {
  worker_t *w = arg;
  for (int i = 0; i < ROUNDS; i++) {
    TRITONSERVER_ErrorDelete(TRITONSERVER_MetricIncrement(w->counter, 1));
    TRITONSERVER_ErrorDelete(TRITONSERVER_MetricIncrement(w->gauge, 2));
    TRITONSERVER_ErrorDelete(TRITONSERVER_MetricIncrement(w->gauge, -1));
    TRITONSERVER_ErrorDelete(TRITONSERVER_MetricObserve(w->hist, i % 4));
  }
  return NULL;
}

/* Every update from every thread counts: no lost CAS, no lost bucket. Each
 * thread uses its own handles onto the shared series. */
static void test_concurrent_updates(void **state) {
  TRITONSERVER_MetricFamily *fc = NULL, *fg = NULL, *fh = NULL;
  TRITONSERVER_MetricArgs *args = NULL;
  worker_t w[THREADS];
  pthread_t t[THREADS];
  const double b[] = {0, 1, 2};
  char want[1024];
  (void)state;

  OK(TRITONSERVER_MetricFamilyNew(&fc, TRITONSERVER_METRIC_KIND_COUNTER, "cc",
                                  "c"));
  OK(TRITONSERVER_MetricFamilyNew(&fg, TRITONSERVER_METRIC_KIND_GAUGE, "cg",
                                  "g"));
  OK(TRITONSERVER_MetricFamilyNew(&fh, TRITONSERVER_METRIC_KIND_HISTOGRAM, "ch",
                                  "h"));
  OK(TRITONSERVER_MetricArgsNew(&args));
  OK(TRITONSERVER_MetricArgsSetHistogram(args, b, 3));
  for (int i = 0; i < THREADS; i++) {
    w[i].id = i;
    OK(TRITONSERVER_MetricNew(&w[i].counter, fc, NULL, 0));
    OK(TRITONSERVER_MetricNew(&w[i].gauge, fg, NULL, 0));
    OK(TRITONSERVER_MetricNewWithArgs(&w[i].hist, fh, NULL, 0, args));
  }
  for (int i = 0; i < THREADS; i++)
    assert_int_equal(pthread_create(&t[i], NULL, update_worker, &w[i]), 0);
  /* Scrapes meanwhile see partial, well-formed totals. */
  for (int k = 0; k < 50; k++) {
    char *p = page();
    assert_non_null(strstr(p, "# TYPE ch histogram\n"));
    free(p);
  }
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);

  assert_true(value_of(w[0].counter) == (double)THREADS * ROUNDS);
  assert_true(value_of(w[1].gauge) == (double)THREADS * ROUNDS);
  /* i % 4 puts a quarter of the observations in each of 0, 1, 2, +Inf;
   * their sum is (0+1+2+3) per four. */
  snprintf(want, sizeof(want),
           "# HELP cc c\n# TYPE cc counter\ncc %d\n"
           "# HELP cg g\n# TYPE cg gauge\ncg %d\n"
           "# HELP ch h\n# TYPE ch histogram\n"
           "ch_bucket{le=\"0\"} %d\nch_bucket{le=\"1\"} %d\n"
           "ch_bucket{le=\"2\"} %d\nch_bucket{le=\"+Inf\"} %d\n"
           "ch_sum %d\nch_count %d\n",
           THREADS * ROUNDS, THREADS * ROUNDS, THREADS * ROUNDS / 4,
           THREADS * ROUNDS / 2, THREADS * ROUNDS * 3 / 4, THREADS * ROUNDS,
           THREADS * ROUNDS / 4 * 6, THREADS * ROUNDS);
  assert_page(want);

  for (int i = 0; i < THREADS; i++) {
    OK(TRITONSERVER_MetricDelete(w[i].counter));
    OK(TRITONSERVER_MetricDelete(w[i].gauge));
    OK(TRITONSERVER_MetricDelete(w[i].hist));
  }
  OK(TRITONSERVER_MetricArgsDelete(args));
  OK(TRITONSERVER_MetricFamilyDelete(fc));
  OK(TRITONSERVER_MetricFamilyDelete(fg));
  OK(TRITONSERVER_MetricFamilyDelete(fh));
  assert_page("");
}

static TRITONSERVER_MetricFamily *hook_family; /* deleted by the hook */
static TRITONSERVER_Metric *hook_metric;       /* deleted by the hook */

static void delete_pinned(void) {
  OK(TRITONSERVER_MetricDelete(hook_metric));
  OK(TRITONSERVER_MetricFamilyDelete(hook_family));
  hook_metric = NULL;
  hook_family = NULL;
}

/* A metric and its family deleted after a scrape pinned them: the scrape
 * renders them as they were (ASan builds check the reads of the freed-late
 * memory), and the next scrape no longer shows them. */
static void test_delete_between_pin_and_format(void **state) {
  const TRITONSERVER_Parameter *l[1];
  (void)state;
  OK(TRITONSERVER_MetricFamilyNew(&hook_family,
                                  TRITONSERVER_METRIC_KIND_COUNTER, "pinned",
                                  "deleted mid-scrape"));
  l[0] = str_label("model", "m");
  OK(TRITONSERVER_MetricNew(&hook_metric, hook_family, l, 1));
  free_labels(l, 1);
  OK(TRITONSERVER_MetricIncrement(hook_metric, 3));
  render_pinned_hook = delete_pinned;
  assert_page(
      "# HELP pinned deleted mid-scrape\n# TYPE pinned counter\n"
      "pinned{model=\"m\"} 3\n");
  render_pinned_hook = NULL;
  assert_null(hook_metric);
  assert_page("");
}

static _Atomic int churn_stop;

/* Creates families and metrics, updates and deletes them, over and over,
 * while the main thread renders: deletion never frees what a scrape pinned
 * (ASan builds check the reads). */
static void *churn_worker(void *arg) {
  int id = *(int *)arg, n = 0;
  char name[32], val[32];
  snprintf(name, sizeof(name), "churn_%d", id % 2); /* shared by 2 threads */
  while (!atomic_load(&churn_stop) || n < 200) {
    TRITONSERVER_MetricFamily *f = NULL;
    TRITONSERVER_Metric *m = NULL;
    const TRITONSERVER_Parameter *l[1];
    snprintf(val, sizeof(val), "%d", n % 3);
    l[0] = TRITONSERVER_ParameterNew("k", TRITONSERVER_PARAMETER_STRING, val);
    if (l[0] == NULL) abort();
    WORKER_OK(TRITONSERVER_MetricFamilyNew(&f, TRITONSERVER_METRIC_KIND_GAUGE,
                                           name, "churn"));
    WORKER_OK(TRITONSERVER_MetricNew(&m, f, l, 1));
    free_labels(l, 1);
    WORKER_OK(TRITONSERVER_MetricSet(m, n));
    WORKER_OK(TRITONSERVER_MetricDelete(m));
    WORKER_OK(TRITONSERVER_MetricFamilyDelete(f));
    n++;
  }
  return NULL;
}

static void test_delete_while_rendering(void **state) {
  pthread_t t[THREADS];
  int ids[THREADS];
  (void)state;
  atomic_store(&churn_stop, 0);
  for (int i = 0; i < THREADS; i++) {
    ids[i] = i;
    assert_int_equal(pthread_create(&t[i], NULL, churn_worker, &ids[i]), 0);
  }
  for (int k = 0; k < 2000; k++) {
    char *p = page();
    /* Whatever is on the page is whole: a family header before samples. */
    assert_true(p[0] == '\0' || strncmp(p, "# HELP churn_", 13) == 0);
    free(p);
  }
  atomic_store(&churn_stop, 1);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  assert_page("");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_counter),
      cmocka_unit_test(test_gauge),
      cmocka_unit_test(test_histogram),
      cmocka_unit_test(test_args_only_for_histograms),
      cmocka_unit_test(test_family_errors),
      cmocka_unit_test(test_family_sharing),
      cmocka_unit_test(test_labels),
      cmocka_unit_test(test_null_arguments),
      cmocka_unit_test(test_concurrent_updates),
      cmocka_unit_test(test_delete_between_pin_and_format),
      cmocka_unit_test(test_delete_while_rendering),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
