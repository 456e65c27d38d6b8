/*
 * test/unit/test_stats.c - statistics aggregation, and the Prometheus label
 * escaping of core/metrics.c (included to reach it). The statistics' JSON
 * layout is frontend/'s: test_http_meta.c checks it.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <string.h>

#include "core/metrics.c"
#include "core/stats.h"

static void test_request_split(void **state) {
  ifd_model_stats_t st;
  ifd_request_times_t t = {1000, 1100, 1500, 1600, 2600, 2700};
  (void)state;
  memset(&st, 0, sizeof(st));
  ifd_stats_request(&st, &t, 1, 3, 9999);
  assert_int_equal(st.success.count, 1);
  assert_int_equal(st.success.ns, 1700); /* received -> exec end */
  assert_int_equal(st.queue.ns, 400);    /* queued -> exec start */
  assert_int_equal(st.compute_input.ns, 100);
  assert_int_equal(st.compute_infer.ns, 1000);
  assert_int_equal(st.compute_output.ns, 100);
  assert_int_equal(st.inference_count, 3);
  assert_true(st.last_inference_ms > 0);
  /* A failure counts its duration (to `now` without a backend report) and
   * no inferences. */
  {
    ifd_request_times_t f = {5000, 5100, 0, 0, 0, 0};
    ifd_stats_request(&st, &f, 0, 8, 6000);
  }
  assert_int_equal(st.fail.count, 1);
  assert_int_equal(st.fail.ns, 1000);
  assert_int_equal(st.inference_count, 3);
  assert_int_equal(st.success.count, 1);
  ifd_stats_free(&st);
}

static void test_batches_sorted(void **state) {
  ifd_model_stats_t st;
  uint64_t sizes[] = {4, 1, 8, 4, 2, 1, 4};
  size_t i;
  (void)state;
  memset(&st, 0, sizeof(st));
  for (i = 0; i < 7; i++)
    assert_int_equal(ifd_stats_batch(&st, sizes[i], 10, 20, 50, 60), 0);
  assert_int_equal(st.execution_count, 7);
  assert_int_equal(st.n_batches, 4);
  assert_int_equal(st.batches[0].batch_size, 1);
  assert_int_equal(st.batches[0].compute_infer.count, 2);
  assert_int_equal(st.batches[1].batch_size, 2);
  assert_int_equal(st.batches[2].batch_size, 4);
  assert_int_equal(st.batches[2].compute_input.count, 3);
  assert_int_equal(st.batches[2].compute_input.ns, 30);
  assert_int_equal(st.batches[2].compute_infer.ns, 90);
  assert_int_equal(st.batches[3].batch_size, 8);
  ifd_stats_free(&st);
}

/* Bounds are inclusive upper limits (Prometheus `le`); above the last one
 * goes to +Inf; bounds may be negative or zero (a config override). */
static void test_histogram(void **state) {
  static const double b[] = {-1, 0, 1, 2.5};
  ifd_histogram_t h = {NULL, 0, 0};
  double v[] = {-3, -1, 0, 0.5, 1, 2.5, 2.6, 1000};
  uint64_t want[] = {2, 1, 2, 1, 2};
  size_t i;
  (void)state;
  for (i = 0; i < IFD_ARRAY_SIZE(v); i++)
    assert_int_equal(ifd_histogram_observe(&h, b, 4, v[i]), 0);
  assert_non_null(h.counts);
  for (i = 0; i < 5; i++) assert_int_equal(h.counts[i], want[i]);
  assert_int_equal(h.count, 8);
  assert_true(h.sum > 1002.59 && h.sum < 1002.61);
  free(h.counts);
}

static void test_label_escaping(void **state) {
  out_t o = {NULL, 0, 0, 0};
  (void)state;
  put_label(&o, "a\"b\\c\nd");
  assert_non_null(o.buf);
  assert_int_equal(o.len, strlen("a\\\"b\\\\c\\nd"));
  assert_memory_equal(o.buf, "a\\\"b\\\\c\\nd", o.len);
  /* Growth past the first buffer keeps every byte. */
  for (int i = 0; i < 2000; i++) put(&o, "%04d", i);
  assert_int_equal(o.len, strlen("a\\\"b\\\\c\\nd") + 8000);
  assert_memory_equal(o.buf + o.len - 4, "1999", 4);
  free(o.buf);
}

/* Triton's classification of a reported decoupled response, and the
 * accumulation by response index. */
static void test_response_stats(void **state) {
  ifd_model_stats_t st;
  ifd_response_stats_t d;
  const char *msg = NULL;
  (void)state;
  memset(&st, 0, sizeof(st));
  /* A success: infer until the outputs, output after. */
  assert_int_equal(ifd_stats_response_classify(100, 400, 500, 0, 0, &d, &msg),
                   0);
  assert_int_equal(d.compute_infer.count, 1);
  assert_int_equal(d.compute_infer.ns, 300);
  assert_int_equal(d.compute_output.ns, 100);
  assert_int_equal(d.success.count, 1);
  assert_int_equal(d.success.ns, 400);
  assert_int_equal(d.fail.count + d.empty_response.count + d.cancel.count, 0);
  assert_int_equal(ifd_stats_response(&st, 0, &d), 0);
  /* Empty: no outputs, the whole span is compute_infer. */
  assert_int_equal(ifd_stats_response_classify(100, 0, 300, 0, 0, &d, &msg), 0);
  assert_int_equal(d.compute_infer.ns, 200);
  assert_int_equal(d.compute_output.count, 0);
  assert_int_equal(d.empty_response.count, 1);
  assert_int_equal(ifd_stats_response(&st, 1, &d), 0);
  /* A failure without outputs, and one whose outputs took no time (no
   * compute_output then, as Triton). */
  assert_int_equal(ifd_stats_response_classify(100, 0, 300, 1, 0, &d, &msg), 0);
  assert_int_equal(d.fail.count, 1);
  assert_int_equal(d.compute_infer.ns, 200);
  assert_int_equal(ifd_stats_response_classify(100, 300, 300, 1, 0, &d, &msg),
                   0);
  assert_int_equal(d.compute_output.count, 0);
  assert_int_equal(ifd_stats_response(&st, 0, &d), 0);
  /* A cancellation counts only its span. */
  assert_int_equal(ifd_stats_response_classify(100, 0, 150, 1, 1, &d, &msg), 0);
  assert_int_equal(d.cancel.count, 1);
  assert_int_equal(d.cancel.ns, 50);
  assert_int_equal(d.compute_infer.count, 0);
  /* Out of order: Triton's texts. */
  assert_int_equal(ifd_stats_response_classify(500, 400, 600, 0, 0, &d, &msg),
                   IFD_EINVAL);
  assert_string_equal(
      msg, "Response start cannot happen after compute output start");
  assert_int_equal(ifd_stats_response_classify(100, 400, 300, 0, 0, &d, &msg),
                   IFD_EINVAL);
  assert_string_equal(msg,
                      "Compute output start cannot happen after response end");
  assert_int_equal(ifd_stats_response_classify(300, 0, 100, 0, 0, &d, &msg),
                   IFD_EINVAL);
  assert_string_equal(msg, "Response start cannot happen after response end");
  /* Index 0 holds a success and a failure, index 1 the empty one. */
  assert_int_equal(st.n_responses, 2);
  assert_int_equal(st.responses[0].success.count, 1);
  assert_int_equal(st.responses[0].fail.count, 1);
  assert_int_equal(st.responses[0].compute_infer.count, 2);
  assert_int_equal(st.responses[1].empty_response.count, 1);
  /* A far index grows the table; past the cap it is refused. */
  assert_int_equal(ifd_stats_response(&st, 100, &d), 0);
  assert_int_equal(st.n_responses, 101);
  assert_int_equal(st.responses[50].cancel.count, 0);
  assert_int_equal(ifd_stats_response(&st, IFD_STATS_MAX_RESPONSES, &d),
                   IFD_EINVAL);
  ifd_stats_free(&st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_request_split),
      cmocka_unit_test(test_batches_sorted),
      cmocka_unit_test(test_histogram),
      cmocka_unit_test(test_response_stats),
      cmocka_unit_test(test_label_escaping),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
