/*
 * test/unit/test_pt_names.c - the PyTorch backend's naming rules
 * (backend_api/backends/pytorch/pt_names.h): <name>__<index> names, the
 * inputs' three conventions, control inputs, states and batch input
 * targets in each convention, the outputs' two conventions and Dict
 * results, with every error text and Triton's two warnings.
 *
 * pt_names.c is included: it needs no libtorch, and the server's
 * TRITONSERVER_* functions come from the test library, whose log lines go
 * to a temporary file that the tests read back.
 */
/* cmocka.h needs setjmp.h, stdarg.h and stddef.h before it. */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend_api/backends/common/be_util.c"
#include "backend_api/backends/pytorch/pt_names.c"
#include "base/log.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static char log_path[] = "/tmp/test_pt_names.XXXXXX";
static off_t log_mark; /* the log's size when the test began */

static int log_setup(void **state) {
  struct stat st;
  (void)state;
  assert_int_equal(stat(log_path, &st), 0);
  log_mark = st.st_size;
  return 0;
}

/* What was logged since the test began (the caller frees it). */
static char *logged(void) {
  FILE *f = fopen(log_path, "r");
  char *buf;
  size_t len;
  assert_non_null(f);
  assert_int_equal(fseeko(f, 0, SEEK_END), 0);
  len = (size_t)(ftello(f) - log_mark);
  assert_int_equal(fseeko(f, log_mark, SEEK_SET), 0);
  buf = calloc(1, len + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, len, f), len);
  fclose(f);
  return buf;
}

static void expect_logged(const char *want) {
  char *s = logged();
  if (strstr(s, want) == NULL) fail_msg("log '%s' lacks '%s'", s, want);
  free(s);
}

static void expect_no_warning(void) {
  char *s = logged();
  if (strstr(s, "Falling back") != NULL) fail_msg("unexpected warning: %s", s);
  free(s);
}

/* Checks that e is an error whose message is exactly `want`, and frees it. */
static void expect_err(TRITONSERVER_Error *e, TRITONSERVER_Error_Code code,
                       const char *want) {
  assert_non_null(e);
  assert_string_equal(TRITONSERVER_ErrorMessage(e), want);
  assert_int_equal(TRITONSERVER_ErrorCode(e), code);
  TRITONSERVER_ErrorDelete(e);
}

static const char IN_WARN[] =
    "input '%s' or previous input(s) are neither an input argument to the "
    "model 'm' nor do they follow the <name>__<index> naming convention. "
    "Falling back to enforcing strict ordering from model configuration.";
static const char OUT_WARN[] =
    "output '%s' or previous output(s) of the model 'm' do not follow the "
    "<name>__<index> naming convention. Falling back to enforcing strict "
    "ordering from model configuration.";
static const char STATES_ERR[] =
    "PyTorch model 'm' is using sequence batching with state but not all "
    "inputs and outputs follow the <name>__<index> naming convention. ";

static void expect_warning(const char *fmt, const char *name) {
  char want[512];
  snprintf(want, sizeof(want), fmt, name);
  expect_logged(want);
}

/* Binds ins to args with `entries` batch_input entries; asserts success
 * and that the arguments are `want`. */
static void expect_bound(const pt_name_t *ins, size_t n,
                         const char *const *args, size_t n_args, size_t entries,
                         const size_t *want) {
  size_t got[16];
  assert_true(n <= N(got));
  assert_null(ifd_pt_bind_input_names("m", ins, n, args, n_args, entries, got));
  for (size_t i = 0; i < n; i++) assert_int_equal(got[i], want[i]);
}

static void expect_in_err(const pt_name_t *ins, size_t n,
                          const char *const *args, size_t n_args,
                          size_t entries, TRITONSERVER_Error_Code code,
                          const char *want) {
  size_t got[16];
  assert_true(n <= N(got));
  expect_err(ifd_pt_bind_input_names("m", ins, n, args, n_args, entries, got),
             code, want);
}

static void expect_outputs(const pt_name_t *outs, size_t n, int dict,
                           int states, const int *want) {
  int got[16];
  assert_true(n <= N(got));
  assert_null(ifd_pt_bind_output_names("m", outs, n, dict, states, got));
  for (size_t i = 0; i < n; i++) assert_int_equal(got[i], want[i]);
}

/* ---- <name>__<index> ---- */

static void test_named_index(void **state) {
  (void)state;
  assert_int_equal(ifd_pt_named_index("INPUT__0"), 0);
  assert_int_equal(ifd_pt_named_index("x__12"), 12);
  assert_int_equal(ifd_pt_named_index("x__007"), 7);
  assert_int_equal(ifd_pt_named_index("__3"), 3);
  /* Triton reads "x__" as index 0; inferd: no index, no named index. */
  assert_int_equal(ifd_pt_named_index("x__"), -1);
  assert_int_equal(ifd_pt_named_index("x__1a"), -1);
  assert_int_equal(ifd_pt_named_index("x__-1"), -1);
  assert_int_equal(ifd_pt_named_index("x__ 1"), -1);
  assert_int_equal(ifd_pt_named_index("x_1"), -1);
  assert_int_equal(ifd_pt_named_index("x"), -1);
  assert_int_equal(ifd_pt_named_index(""), -1);
  /* The text after the first "__" counts, as in Triton. */
  assert_int_equal(ifd_pt_named_index("a__b__1"), -1);
  assert_int_equal(ifd_pt_named_index("a___1"), -1);
  assert_int_equal(ifd_pt_named_index("x__99999999999999999999999"), INT_MAX);
  assert_int_equal(ifd_pt_named_index("x__2147483647"), INT_MAX);
}

/* ---- inputs ---- */

static void test_forward_argument(void **state) {
  const char *args[] = {"a", "b"};
  /* Named after the arguments, in the other order; "INPUT__0"-style names
   * that are also argument names bind by name, not index. */
  pt_name_t ins[] = {{"b", PT_IO_INPUT}, {"a", PT_IO_INPUT}};
  const char *args2[] = {"INPUT__1", "INPUT__0"};
  pt_name_t ins2[] = {{"INPUT__0", PT_IO_INPUT}, {"INPUT__1", PT_IO_INPUT}};
  (void)state;
  expect_bound(ins, N(ins), args, N(args), 0, (size_t[]){1, 0});
  expect_bound(ins2, N(ins2), args2, N(args2), 0, (size_t[]){1, 0});
  expect_no_warning();
}

static void test_named_index_inputs(void **state) {
  const char *args[] = {"x", "y", "z"};
  pt_name_t ins[] = {{"INPUT__2", PT_IO_INPUT},
                     {"INPUT__0", PT_IO_INPUT},
                     {"other__1", PT_IO_INPUT}};
  (void)state;
  expect_bound(ins, N(ins), args, N(args), 0, (size_t[]){2, 0, 1});
  expect_no_warning();
}

static void test_strict_order(void **state) {
  const char *args[] = {"a", "b", "c"};
  pt_name_t ins[] = {{"first", PT_IO_INPUT}, {"second", PT_IO_INPUT}};
  /* One argument name among named indexes: neither convention holds, and
   * the warning names the first input that is no named index. */
  pt_name_t mixed[] = {
      {"INPUT__1", PT_IO_INPUT}, {"a", PT_IO_INPUT}, {"z", PT_IO_INPUT}};
  pt_name_t bad_index[] = {{"x__1a", PT_IO_INPUT}, {"y__0", PT_IO_INPUT}};
  pt_name_t empty_index[] = {{"y__1", PT_IO_INPUT}, {"x__", PT_IO_INPUT}};
  (void)state;
  expect_bound(ins, N(ins), args, 2, 0, (size_t[]){0, 1});
  expect_warning(IN_WARN, "first");
  expect_bound(mixed, N(mixed), args, N(args), 0, (size_t[]){0, 1, 2});
  expect_warning(IN_WARN, "a");
  expect_bound(bad_index, N(bad_index), args, 2, 0, (size_t[]){0, 1});
  expect_warning(IN_WARN, "x__1a");
  expect_bound(empty_index, N(empty_index), args, 2, 0, (size_t[]){0, 1});
  expect_warning(IN_WARN, "x__");
}

static void test_input_count(void **state) {
  const char *args[] = {"a", "b", "c", "d", "e"};
  pt_name_t ins[] = {{"INPUT__0", PT_IO_INPUT}, {"INPUT__1", PT_IO_INPUT}};
  pt_name_t all[] = {{"INPUT__0", PT_IO_INPUT},
                     {"START__1", PT_IO_CONTROL},
                     {"STATE__2", PT_IO_STATE},
                     {"BI__3", PT_IO_BATCH_INPUT}};
  (void)state;
  expect_in_err(ins, N(ins), args, 3, 0, TRITONSERVER_ERROR_INVALID_ARG,
                "unable to load model 'm', configuration expects 2 inputs, "
                "model provides 3");
  expect_in_err(ins, N(ins), args, 1, 0, TRITONSERVER_ERROR_INVALID_ARG,
                "unable to load model 'm', configuration expects 2 inputs, "
                "model provides 1");
  /* Inputs + batch_input entries + controls + states. */
  expect_bound(all, N(all), args, 4, 1, (size_t[]){0, 1, 2, 3});
  expect_in_err(all, N(all), args, 5, 1, TRITONSERVER_ERROR_INVALID_ARG,
                "unable to load model 'm', configuration expects 4 inputs, "
                "model provides 5");
  /* Entries, not targets, count. */
  expect_in_err(all, N(all), args, 4, 2, TRITONSERVER_ERROR_INVALID_ARG,
                "unable to load model 'm', configuration expects 5 inputs, "
                "model provides 4");
  expect_no_warning();
}

static void test_index_beyond_and_duplicates(void **state) {
  const char *args[] = {"a", "b"};
  pt_name_t beyond[] = {{"INPUT__0", PT_IO_INPUT}, {"INPUT__5", PT_IO_INPUT}};
  pt_name_t huge[] = {{"INPUT__0", PT_IO_INPUT},
                      {"INPUT__99999999999999999999", PT_IO_INPUT}};
  pt_name_t twice[] = {{"INPUT__0", PT_IO_INPUT}, {"OTHER__0", PT_IO_INPUT}};
  pt_name_t ctl_twice[] = {{"INPUT__1", PT_IO_INPUT},
                           {"START__1", PT_IO_CONTROL}};
  (void)state;
  expect_in_err(beyond, N(beyond), args, 2, 0, TRITONSERVER_ERROR_INVALID_ARG,
                "input 'INPUT__5' of model 'm' refers to argument 5 of "
                "forward(), which takes 2");
  expect_in_err(huge, N(huge), args, 2, 0, TRITONSERVER_ERROR_INVALID_ARG,
                "input 'INPUT__99999999999999999999' of model 'm' refers to "
                "argument 2147483647 of forward(), which takes 2");
  expect_in_err(twice, N(twice), args, 2, 0, TRITONSERVER_ERROR_INVALID_ARG,
                "input 'OTHER__0' of model 'm' refers to argument 0 of "
                "forward(), which another input already takes");
  expect_in_err(ctl_twice, N(ctl_twice), args, 2, 0,
                TRITONSERVER_ERROR_INVALID_ARG,
                "input 'START__1' of model 'm' refers to argument 1 of "
                "forward(), which another input already takes");
}

static void test_controls(void **state) {
  const char *args[] = {"x", "start", "end"};
  /* Bound by index in every convention; the convention comes from the
   * configuration's inputs alone. */
  pt_name_t by_arg[] = {{"x", PT_IO_INPUT},
                        {"END__1", PT_IO_CONTROL},
                        {"START__2", PT_IO_CONTROL}};
  pt_name_t by_index[] = {{"INPUT__2", PT_IO_INPUT},
                          {"END__0", PT_IO_CONTROL},
                          {"START__1", PT_IO_CONTROL}};
  pt_name_t strict[] = {{"input", PT_IO_INPUT},
                        {"START__1", PT_IO_CONTROL},
                        {"END__2", PT_IO_CONTROL}};
  pt_name_t unnamed[] = {{"INPUT__0", PT_IO_INPUT}, {"START", PT_IO_CONTROL}};
  pt_name_t empty[] = {{"INPUT__0", PT_IO_INPUT}, {"START__", PT_IO_CONTROL}};
  pt_name_t arg_name[] = {{"x", PT_IO_INPUT}, {"start", PT_IO_CONTROL}};
  (void)state;
  expect_bound(by_arg, N(by_arg), args, N(args), 0, (size_t[]){0, 1, 2});
  expect_bound(by_index, N(by_index), args, N(args), 0, (size_t[]){2, 0, 1});
  expect_no_warning();
  expect_bound(strict, N(strict), args, N(args), 0, (size_t[]){0, 1, 2});
  expect_warning(IN_WARN, "input");
  expect_in_err(unnamed, N(unnamed), args, 2, 0, TRITONSERVER_ERROR_INTERNAL,
                "input 'START' does not follow <name>__<index> naming "
                "convention.");
  expect_in_err(empty, N(empty), args, 2, 0, TRITONSERVER_ERROR_INTERNAL,
                "input 'START__' does not follow <name>__<index> naming "
                "convention.");
  /* Even when it is an argument's name. */
  expect_in_err(arg_name, N(arg_name), args, 2, 0, TRITONSERVER_ERROR_INTERNAL,
                "input 'start' does not follow <name>__<index> naming "
                "convention.");
}

static void test_batch_input_forward_argument(void **state) {
  const char *args[] = {"x", "lengths", "offsets"};
  pt_name_t ok[] = {{"x", PT_IO_INPUT},
                    {"offsets", PT_IO_BATCH_INPUT},
                    {"lengths", PT_IO_BATCH_INPUT}};
  pt_name_t none[] = {{"x", PT_IO_INPUT}, {"BI__1", PT_IO_BATCH_INPUT}};
  (void)state;
  expect_bound(ok, N(ok), args, N(args), 2, (size_t[]){0, 2, 1});
  expect_no_warning();
  /* One entry with two targets: Triton's count passes for 2 arguments,
   * the second target then has no argument of its own. */
  expect_in_err(ok, N(ok), args, 2, 1, TRITONSERVER_ERROR_INVALID_ARG,
                "batch input 'offsets' of model 'm' is not an argument of "
                "forward(), as the configuration's inputs, named after its "
                "arguments, require");
  /* Triton maps it to argument 0 silently; a named index does not help. */
  expect_in_err(none, N(none), args, 2, 1, TRITONSERVER_ERROR_INVALID_ARG,
                "batch input 'BI__1' of model 'm' is not an argument of "
                "forward(), as the configuration's inputs, named after its "
                "arguments, require");
}

static void test_batch_input_named_index(void **state) {
  const char *args[] = {"a", "b", "c"};
  pt_name_t ok[] = {{"INPUT__0", PT_IO_INPUT},
                    {"BI__2", PT_IO_BATCH_INPUT},
                    {"BJ__1", PT_IO_BATCH_INPUT}};
  pt_name_t bad[] = {{"INPUT__0", PT_IO_INPUT}, {"lengths", PT_IO_BATCH_INPUT}};
  pt_name_t empty[] = {{"INPUT__0", PT_IO_INPUT}, {"BI__", PT_IO_BATCH_INPUT}};
  pt_name_t clash[] = {{"INPUT__0", PT_IO_INPUT}, {"BI__0", PT_IO_BATCH_INPUT}};
  pt_name_t two_targets[] = {{"INPUT__0", PT_IO_INPUT},
                             {"BI__1", PT_IO_BATCH_INPUT},
                             {"BJ__2", PT_IO_BATCH_INPUT}};
  (void)state;
  expect_bound(ok, N(ok), args, N(args), 2, (size_t[]){0, 2, 1});
  expect_no_warning();
  expect_in_err(bad, N(bad), args, 2, 1, TRITONSERVER_ERROR_INVALID_ARG,
                "batch input 'lengths' of model 'm' does not follow the "
                "<name>__<index> naming convention, which the configuration's "
                "inputs follow");
  expect_in_err(empty, N(empty), args, 2, 1, TRITONSERVER_ERROR_INVALID_ARG,
                "batch input 'BI__' of model 'm' does not follow the "
                "<name>__<index> naming convention, which the configuration's "
                "inputs follow");
  expect_in_err(clash, N(clash), args, 2, 1, TRITONSERVER_ERROR_INVALID_ARG,
                "input 'BI__0' of model 'm' refers to argument 0 of forward(), "
                "which another input already takes");
  /* One entry, two targets: two arguments by Triton's count. */
  expect_in_err(two_targets, N(two_targets), args, 2, 1,
                TRITONSERVER_ERROR_INVALID_ARG,
                "input 'BJ__2' of model 'm' refers to argument 2 of forward(), "
                "which takes 2");
}

static void test_batch_input_strict(void **state) {
  const char *args[] = {"a", "b", "c", "d"};
  /* Targets follow the configuration's inputs, whatever their names. */
  pt_name_t ok[] = {{"p", PT_IO_INPUT},
                    {"q", PT_IO_INPUT},
                    {"BI__0", PT_IO_BATCH_INPUT},
                    {"a", PT_IO_BATCH_INPUT}};
  pt_name_t with_ctl[] = {{"p", PT_IO_INPUT},
                          {"START__1", PT_IO_CONTROL},
                          {"t", PT_IO_BATCH_INPUT}};
  (void)state;
  expect_bound(ok, N(ok), args, N(args), 2, (size_t[]){0, 1, 2, 3});
  expect_warning(IN_WARN, "p");
  expect_in_err(ok, N(ok), args, 3, 1, TRITONSERVER_ERROR_INVALID_ARG,
                "input 'a' of model 'm' refers to argument 3 of forward(), "
                "which takes 3");
  /* The k-th target goes to n_config + k, where a control may sit. */
  expect_in_err(with_ctl, N(with_ctl), args, 3, 1,
                TRITONSERVER_ERROR_INVALID_ARG,
                "input 't' of model 'm' refers to argument 1 of forward(), "
                "which another input already takes");
}

static void test_states_inputs(void **state) {
  const char *args[] = {"x", "s", "start"};
  pt_name_t ok[] = {{"INPUT__0", PT_IO_INPUT},
                    {"START__2", PT_IO_CONTROL},
                    {"STATE__1", PT_IO_STATE}};
  pt_name_t by_arg[] = {{"x", PT_IO_INPUT}, {"STATE__1", PT_IO_STATE}};
  pt_name_t strict[] = {{"in", PT_IO_INPUT}, {"STATE__1", PT_IO_STATE}};
  pt_name_t bad[] = {{"INPUT__0", PT_IO_INPUT}, {"state", PT_IO_STATE}};
  pt_name_t empty[] = {{"INPUT__0", PT_IO_INPUT}, {"state__", PT_IO_STATE}};
  pt_name_t twice[] = {{"INPUT__0", PT_IO_INPUT}, {"STATE__0", PT_IO_STATE}};
  (void)state;
  expect_bound(ok, N(ok), args, N(args), 0, (size_t[]){0, 2, 1});
  expect_no_warning();
  /* States need NAMED_INDEX inputs: forward()'s names do not do. */
  expect_in_err(by_arg, N(by_arg), args, 2, 0, TRITONSERVER_ERROR_INVALID_ARG,
                STATES_ERR);
  expect_in_err(strict, N(strict), args, 2, 0, TRITONSERVER_ERROR_INVALID_ARG,
                STATES_ERR);
  expect_warning(IN_WARN, "in");
  expect_in_err(bad, N(bad), args, 2, 0, TRITONSERVER_ERROR_INVALID_ARG,
                "PyTorch model 'm' is using sequence batching with state but "
                "state 'state' does not follow the <name>__<index> naming "
                "convention. ");
  expect_in_err(empty, N(empty), args, 2, 0, TRITONSERVER_ERROR_INVALID_ARG,
                "PyTorch model 'm' is using sequence batching with state but "
                "state 'state__' does not follow the <name>__<index> naming "
                "convention. ");
  expect_in_err(twice, N(twice), args, 2, 0, TRITONSERVER_ERROR_INVALID_ARG,
                "input 'STATE__0' of model 'm' refers to argument 0 of "
                "forward(), which another input already takes");
}

/* ---- outputs ---- */

static void test_outputs_named_index(void **state) {
  pt_name_t outs[] = {{"OUTPUT__1", PT_IO_OUTPUT}, {"OUTPUT__0", PT_IO_OUTPUT}};
  /* Duplicated indexes are not refused (as in Triton). */
  pt_name_t twice[] = {{"A__0", PT_IO_OUTPUT}, {"B__0", PT_IO_OUTPUT}};
  (void)state;
  expect_outputs(outs, N(outs), 0, 0, (int[]){1, 0});
  expect_outputs(twice, N(twice), 0, 0, (int[]){0, 0});
  expect_no_warning();
}

static void test_outputs_strict(void **state) {
  pt_name_t outs[] = {{"plus", PT_IO_OUTPUT}, {"minus", PT_IO_OUTPUT}};
  pt_name_t mixed[] = {{"OUTPUT__1", PT_IO_OUTPUT},
                       {"x__1a", PT_IO_OUTPUT},
                       {"OUTPUT__0", PT_IO_OUTPUT}};
  pt_name_t empty[] = {{"y__", PT_IO_OUTPUT}};
  (void)state;
  expect_outputs(outs, N(outs), 0, 0, (int[]){0, 1});
  expect_warning(OUT_WARN, "plus");
  expect_outputs(mixed, N(mixed), 0, 0, (int[]){0, 1, 2});
  expect_warning(OUT_WARN, "x__1a");
  expect_outputs(empty, N(empty), 0, 0, (int[]){0});
  expect_warning(OUT_WARN, "y__");
}

static void test_outputs_dict(void **state) {
  pt_name_t outs[] = {{"diff", PT_IO_OUTPUT}, {"sum", PT_IO_OUTPUT}};
  pt_name_t states[] = {{"out", PT_IO_OUTPUT}, {"s", PT_IO_STATE}};
  (void)state;
  expect_outputs(outs, N(outs), 1, 0, (int[]){-1, -1});
  /* By name, states included: no convention to check them against. */
  expect_outputs(states, N(states), 1, 1, (int[]){-1, -1});
  expect_no_warning();
}

static void test_outputs_states(void **state) {
  pt_name_t ok[] = {{"OUTPUT__0", PT_IO_OUTPUT}, {"STATE__1", PT_IO_STATE}};
  /* A state whose output_name is a configuration output. */
  pt_name_t shared[] = {{"OUTPUT__0", PT_IO_OUTPUT},
                        {"STATE__1", PT_IO_OUTPUT}};
  pt_name_t strict[] = {{"out", PT_IO_OUTPUT}, {"STATE__1", PT_IO_STATE}};
  pt_name_t bad[] = {{"OUTPUT__0", PT_IO_OUTPUT}, {"state", PT_IO_STATE}};
  pt_name_t empty[] = {{"OUTPUT__0", PT_IO_OUTPUT}, {"state__", PT_IO_STATE}};
  int got[2];
  (void)state;
  expect_outputs(ok, N(ok), 0, 1, (int[]){0, 1});
  expect_outputs(shared, N(shared), 0, 1, (int[]){0, 1});
  expect_no_warning();
  expect_err(ifd_pt_bind_output_names("m", strict, N(strict), 0, 1, got),
             TRITONSERVER_ERROR_INVALID_ARG, STATES_ERR);
  expect_warning(OUT_WARN, "out");
  expect_err(ifd_pt_bind_output_names("m", bad, N(bad), 0, 1, got),
             TRITONSERVER_ERROR_INVALID_ARG,
             "PyTorch model 'm' is using sequence batching with state but "
             "state 'state' does not follow the <name>__<index> naming "
             "convention. ");
  expect_err(ifd_pt_bind_output_names("m", empty, N(empty), 0, 1, got),
             TRITONSERVER_ERROR_INVALID_ARG,
             "PyTorch model 'm' is using sequence batching with state but "
             "state 'state__' does not follow the <name>__<index> naming "
             "convention. ");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_named_index, log_setup),
      cmocka_unit_test_setup(test_forward_argument, log_setup),
      cmocka_unit_test_setup(test_named_index_inputs, log_setup),
      cmocka_unit_test_setup(test_strict_order, log_setup),
      cmocka_unit_test_setup(test_input_count, log_setup),
      cmocka_unit_test_setup(test_index_beyond_and_duplicates, log_setup),
      cmocka_unit_test_setup(test_controls, log_setup),
      cmocka_unit_test_setup(test_batch_input_forward_argument, log_setup),
      cmocka_unit_test_setup(test_batch_input_named_index, log_setup),
      cmocka_unit_test_setup(test_batch_input_strict, log_setup),
      cmocka_unit_test_setup(test_states_inputs, log_setup),
      cmocka_unit_test_setup(test_outputs_named_index, log_setup),
      cmocka_unit_test_setup(test_outputs_strict, log_setup),
      cmocka_unit_test_setup(test_outputs_dict, log_setup),
      cmocka_unit_test_setup(test_outputs_states, log_setup),
  };
  int fd = mkstemp(log_path), rc;
  if (fd < 0 || ifd_log_open_file(log_path) != 0) {
    perror(log_path);
    return 1;
  }
  close(fd);
  ifd_log_set_enabled(IFD_LOG_WARN, 1);
  rc = cmocka_run_group_tests_name("pt_names", tests, NULL, NULL);
  unlink(log_path);
  return rc;
}
