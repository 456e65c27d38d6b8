/*
 * test/unit/test_options.c - app/options.c: tritonserver's command line as
 * inferd reads it. Both spellings, getopt_long's unique prefixes, the
 * no-value switch, tritonserver's booleans and checks, the cross-flag
 * rules (trace level OFF wins, trace settings, cache flags, port collisions,
 * refused features) and the once-per-flag no-effect notes.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/options.h"
#include "base/bufpool.h"
#include "net/http1.h"

/* stderr of the last parse (messages are checked, not shown). */
static char errtext[1 << 16];

/* Parses "inferd --model-repository=/r <args...>" (NULL-terminated) into
 * *o; returns what ifd__app_options_parse returns. */
static int parse_into(ifd_app_options_t *o, const char *first, ...) {
  char *argv[64];
  int argc = 0, rc, saved, fd;
  char path[] = "/tmp/test_options_XXXXXX";
  va_list ap;
  const char *a;
  ssize_t n;

  argv[argc++] = (char *)"inferd";
  argv[argc++] = (char *)"--model-repository=/r";
  va_start(ap, first);
  for (a = first; a != NULL && argc < 63; a = va_arg(ap, const char *))
    argv[argc++] = (char *)a;
  va_end(ap);
  argv[argc] = NULL;
  ifd__app_options_init(o);
  fd = mkstemp(path);
  assert_true(fd >= 0);
  unlink(path);
  fflush(stderr);
  saved = dup(2);
  dup2(fd, 2);
  rc = ifd__app_options_parse(argc, argv, o);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  lseek(fd, 0, SEEK_SET);
  n = read(fd, errtext, sizeof(errtext) - 1);
  errtext[n > 0 ? n : 0] = '\0';
  close(fd);
  return rc;
}

#define PARSE(o, ...) parse_into(o, __VA_ARGS__, (const char *)NULL)
#define ERR_HAS(s) assert_non_null(strstr(errtext, s))

static void test_spellings(void **state) {
  ifd_app_options_t o;
  (void)state;
  assert_int_equal(PARSE(&o, "--id=a", "--exit-timeout-secs", "7"), 0);
  assert_string_equal(o.server_id, "a");
  assert_int_equal(o.exit_timeout_secs, 7);
  ifd__app_options_free(&o);
  /* A unique prefix, as getopt_long; an ambiguous one is refused. */
  assert_int_equal(PARSE(&o, "--model-config-n=h100"), 0);
  assert_string_equal(o.model_config_name, "h100");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--grpc-keepalive-t=5"), -1);
  ERR_HAS("ambiguous option '--grpc-keepalive-t'");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--no-such"), -1);
  ERR_HAS("unknown option '--no-such'");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--id"), -1);
  ERR_HAS("option '--id' requires an argument");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "stray"), -1);
  ERR_HAS("Unexpected argument: stray");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--help"), 1);
  ifd__app_options_free(&o);
}

static void test_switch_and_booleans(void **state) {
  ifd_app_options_t o;
  (void)state;
  assert_int_equal(PARSE(&o, "--strict-model-config=false",
                         "--disable-auto-complete-config"),
                   0);
  assert_int_equal(o.strict_config, 1); /* the switch wins */
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--disable-auto-complete-config=1"), -1);
  ERR_HAS("doesn't allow an argument");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--reuse-http-port=ON", "--allow-cpu-metrics=0",
                         "--log-verbose=true"),
                   0);
  assert_int_equal(o.reuse_http_port, 1);
  assert_int_equal(o.allow_cpu_metrics, 0);
  assert_int_equal(o.log_verbose, 1);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--reuse-grpc-port=maybe"), -1);
  ERR_HAS("--reuse-grpc-port");
  ERR_HAS("invalid value for bool option");
  ifd__app_options_free(&o);
}

static void test_values(void **state) {
  ifd_app_options_t o;
  (void)state;
  assert_int_equal(PARSE(&o, "--metrics-interval-ms=250.6",
                         "--min-supported-compute-capability=7.5",
                         "--model-load-thread-count=9"),
                   0);
  assert_int_equal(o.metrics_interval_ms, 251);
  assert_true(o.min_compute_capability == 7.5);
  assert_int_equal(o.model_load_threads, 9);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--metrics-interval-ms=0.2"), 0);
  assert_int_equal(o.metrics_interval_ms, 1);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--model-config-name="), -1);
  ERR_HAS("--model-config-name");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--cuda-virtual-address-size=0:x"), -1);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--sagemaker-safe-port-range=1-2"), 0);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--rate-limit-resource=R:1:2:3"), -1);
  ERR_HAS("--rate-limit-resource option format");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--host-policy=p,numa-node="), -1);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--grpc-infer-response-compression-level=Low"), 0);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--http-header-forward-pattern=^x-",
                         "--grpc-header-forward-pattern=("),
                   -1);
  ERR_HAS("--grpc-header-forward-pattern");
  ifd__app_options_free(&o);
}

static void test_trace(void **state) {
  ifd_app_options_t o;
  (void)state;
  /* OFF anywhere wins, as in tritonserver. */
  assert_int_equal(PARSE(&o, "--trace-config", "level=TIMESTAMPS",
                         "--trace-level=off", "--trace-config",
                         "triton,file=/tmp/t", "--trace-config", "count=-1"),
                   0);
  assert_int_equal(o.trace_level_off, 1);
  assert_string_equal(o.trace_file, "/tmp/t");
  assert_int_equal(o.trace_count, -1);
  ifd__app_options_free(&o);
  /* Tracing takes effect: levels accumulate; the deprecated flags set the
   * same settings. */
  assert_int_equal(
      PARSE(&o, "--trace-level=TENSORS", "--trace-config", "level=TIMESTAMPS",
            "--trace-rate=7", "--trace-count=3", "--trace-log-frequency=2",
            "--trace-file=/tmp/u"),
      0);
  assert_int_equal(o.trace_level, 3);
  assert_int_equal(o.trace_level_off, 0);
  assert_int_equal(o.trace_rate, 7);
  assert_int_equal(o.trace_rate_set, 1);
  assert_int_equal(o.trace_count, 3);
  assert_int_equal(o.trace_log_frequency, 2);
  assert_string_equal(o.trace_file, "/tmp/u");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--trace-config=triton,log_frequency=5",
                         "--trace-config=triton,file=/tmp/v"),
                   0);
  assert_int_equal(o.trace_log_frequency, 5);
  assert_string_equal(o.trace_file, "/tmp/v");
  ifd__app_options_free(&o);
  /* OpenTelemetry mode is refused, its own settings are read. */
  assert_int_equal(PARSE(&o, "--trace-config=mode=opentelemetry",
                         "--trace-config=opentelemetry,url=localhost:4318"),
                   -1);
  ERR_HAS("opentelemetry is not supported by inferd yet");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--trace-count=-2"), -1);
  ERR_HAS("--trace-count");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--trace-rate=-1"), -1);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--trace-config=jaeger,rate=1"), -1);
  ERR_HAS("trace mode");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--trace-config=rate=x"), -1);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--trace-config=level"), -1);
  ERR_HAS("--trace-config option format");
  ifd__app_options_free(&o);
}

static void test_refused(void **state) {
  ifd_app_options_t o;
  (void)state;
  /* No flag is refused for a missing feature any more but tracing's
   * levels; these are tritonserver's own refusals. */
  assert_int_equal(
      PARSE(&o, "--cache-config=local,size=1", "--response-cache-byte-size=1"),
      -1);
  ERR_HAS("Incompatible flags");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--cache-config=local"), -1);
  ERR_HAS("--cache-config option format");
  ifd__app_options_free(&o);
}

static void test_rate_limit(void **state) {
  ifd_app_options_t o;
  (void)state;
  assert_int_equal(
      PARSE(&o, "--rate-limit=EXECUTION_COUNT", "--rate-limit-resource=R1:4:0",
            "--rate-limit-resource=R2:2"),
      0);
  assert_int_equal(o.rate_limit_on, 1);
  assert_int_equal(o.n_rl_res, 2);
  assert_string_equal(o.rl_res[0].name, "R1");
  assert_int_equal(o.rl_res[0].count, 4);
  assert_int_equal(o.rl_res[0].device, 0);
  assert_string_equal(o.rl_res[1].name, "R2");
  assert_int_equal(o.rl_res[1].count, 2);
  assert_int_equal(o.rl_res[1].device, IFD_RL_ANY_DEVICE);
  assert_int_equal(o.n_no_effect, 0);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--rate-limit-resource=R:-1"), -1);
  ERR_HAS("must not be negative");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--rate-limit-resource=R:1:-2"), -1);
  ERR_HAS("--rate-limit-resource");
  ifd__app_options_free(&o);
}

static void test_gpu_limit(void **state) {
  ifd_app_options_t o;
  (void)state;
  assert_int_equal(
      PARSE(&o, "--model-load-gpu-limit=0:0.5", "--model-load-gpu-limit", "3:1",
            "--model-load-gpu-limit=0:0.25"),
      0);
  assert_int_equal(o.gpu_limit_set, (1u << 0) | (1u << 3));
  assert_true(o.gpu_limit[0] == 0.25 && o.gpu_limit[3] == 1.0);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--model-load-gpu-limit=-1:0.6"), -1);
  ERR_HAS("expects device ID >= 0, got -1");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--model-load-gpu-limit=64:0.6"), -1);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--model-load-gpu-limit=0:-0.4"), -1);
  ERR_HAS("expects limit fraction to be in range [0.0, 1.0], got -0.4");
  ifd__app_options_free(&o);
}

/* --cache-config settings accumulate (one cache); the deprecated
 * --response-cache-byte-size is local,size=<n>. */
static void test_cache(void **state) {
  ifd_app_options_t o;
  (void)state;
  assert_int_equal(PARSE(&o, "--cache-config=local,size=1024", "--cache-config",
                         "local,other=a=b", "--cache-directory=/caches"),
                   0);
  assert_string_equal(o.cache_name, "local");
  assert_int_equal(o.n_cache_cfg, 2);
  assert_string_equal(o.cache_cfg[0].setting, "size");
  assert_string_equal(o.cache_cfg[0].value, "1024");
  assert_string_equal(o.cache_cfg[1].setting, "other");
  assert_string_equal(o.cache_cfg[1].value, "a=b");
  assert_string_equal(o.cache_dir, "/caches");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--response-cache-byte-size=4096"), 0);
  assert_string_equal(o.cache_name, "local");
  assert_int_equal(o.n_cache_cfg, 1);
  assert_string_equal(o.cache_cfg[0].value, "4096");
  ifd__app_options_free(&o);
  assert_int_equal(
      PARSE(&o, "--cache-config=local,size=1", "--cache-config=redis,host=x"),
      -1);
  ERR_HAS("only one cache");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--response-cache-byte-size=x"), -1);
  ifd__app_options_free(&o);
}

static void test_ports(void **state) {
  ifd_app_options_t o;
  (void)state;
  assert_int_equal(PARSE(&o, "--http-port=9000", "--metrics-port=9000"), -1);
  ERR_HAS("cannot listen to HTTP requests and metrics requests");
  ifd__app_options_free(&o);
  /* Other addresses, a service off, or port 0: no collision. */
  assert_int_equal(PARSE(&o, "--http-port=9000", "--metrics-port=9000",
                         "--metrics-address=127.0.0.1"),
                   0);
  ifd__app_options_free(&o);
  assert_int_equal(
      PARSE(&o, "--grpc-port=9000", "--http-port=9000", "--allow-grpc=false"),
      0);
  ifd__app_options_free(&o);
  assert_int_equal(
      PARSE(&o, "--grpc-port=0", "--http-port=0", "--metrics-port=0"), 0);
  ifd__app_options_free(&o);
}

/* unix: addresses: the socket file flags, the same path twice refused,
 * ports never collide on sockets, metrics off the HTTP socket. */
static void test_unix(void **state) {
  ifd_app_options_t o;
  (void)state;
  assert_int_equal(
      PARSE(&o, "--http-address=unix:/tmp/h.sock",
            "--grpc-address=unix:///tmp/g.sock", "--http-unix-socket-mode=0660",
            "--http-unix-socket-owner=0", "--grpc-unix-socket-group=root",
            "--http-port=1", "--grpc-port=1"),
      0);
  assert_int_equal(o.http_unix.mode, 0660);
  assert_int_equal(o.http_unix.uid, 0);
  assert_int_equal(o.http_unix.gid, -1);
  assert_int_equal(o.grpc_unix.mode, -1);
  assert_int_equal(o.grpc_unix.gid, 0);
  assert_string_equal(o.metrics_address, "0.0.0.0");
  assert_int_equal(o.n_no_effect, 0);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--http-address=unix:/tmp/x.sock",
                         "--grpc-address=unix:///tmp/x.sock"),
                   -1);
  ERR_HAS("on the same socket unix:/tmp/x.sock");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--http-unix-socket-mode=888"), -1);
  ERR_HAS("expected octal permission bits");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--grpc-unix-socket-owner=no-such-user-x"), -1);
  ERR_HAS("no such user");
  ifd__app_options_free(&o);
  /* On TCP, the socket file flags are noted as having no effect. */
  assert_int_equal(PARSE(&o, "--metrics-unix-socket-mode=0600"), 0);
  assert_int_equal(o.n_no_effect, 1);
  assert_string_equal(o.no_effect[0], "metrics-unix-socket-*");
  ifd__app_options_free(&o);
}

/* Load shedding: Triton's 503 by default, 429 on request. */
static void test_overload(void **state) {
  ifd_app_options_t o;
  (void)state;
  assert_int_equal(PARSE(&o, "--id=x"), 0);
  assert_int_equal(o.overload_status, 503);
  assert_int_equal(o.retry_after_secs, 1);
  assert_int_equal(o.max_inflight_requests, 0);
  ifd__app_options_free(&o);
  assert_int_equal(
      PARSE(&o, "--overload-status=429", "--overload-retry-after-secs=0",
            "--max-inflight-requests=64"),
      0);
  assert_int_equal(o.overload_status, 429);
  assert_int_equal(o.retry_after_secs, 0);
  assert_int_equal(o.max_inflight_requests, 64);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--overload-status=500"), -1);
  ERR_HAS("expected 503");
  ifd__app_options_free(&o);
}

static void test_http_body_prealloc(void **state) {
  ifd_app_options_t o;
  (void)state;
  assert_int_equal(PARSE(&o, "--id=x"), 0);
  assert_true(o.http_body_prealloc == IFD_HTTP_DEFAULT_BODY_PREALLOC);
  assert_true(o.http_body_prealloc == (uint64_t)32 << 20);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--http-body-prealloc-size=1048576"), 0);
  assert_true(o.http_body_prealloc == 1048576);
  ifd__app_options_free(&o);
  /* 0: every body grows as its bytes arrive. */
  assert_int_equal(PARSE(&o, "--http-body-prealloc-size", "0"), 0);
  assert_true(o.http_body_prealloc == 0);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--http-body-prealloc-size=-1"), -1);
  ERR_HAS("--http-body-prealloc-size");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--http-body-prealloc-size=x"), -1);
  ifd__app_options_free(&o);
}

static void test_buffer_pool(void **state) {
  ifd_app_options_t o;
  (void)state;
  assert_int_equal(PARSE(&o, "--id=x"), 0);
  assert_true(o.buffer_pool_bytes == IFD_BUFPOOL_DEFAULT_CAP);
  assert_true(o.buffer_pool_bytes == (uint64_t)256 << 20);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--buffer-pool-byte-size=0"), 0);
  assert_true(o.buffer_pool_bytes == 0);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--buffer-pool-byte-size", "1073741824"), 0);
  assert_true(o.buffer_pool_bytes == 1073741824);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--buffer-pool-byte-size=-5"), -1);
  ERR_HAS("--buffer-pool-byte-size");
  ifd__app_options_free(&o);
}

static void test_no_effect_notes(void **state) {
  ifd_app_options_t o;
  (void)state;
  assert_int_equal(
      PARSE(&o, "--http-thread-count=2", "--http-thread-count=3",
            "--host-policy=p,cpu-cores=0-3", "--host-policy=p,other=1",
            "--rate-limit=off", "--rate-limit-resource=R:1"),
      0);
  assert_int_equal(o.n_no_effect, 3);
  assert_int_equal(o.n_host_cfg, 2);
  assert_string_equal(o.host_cfg[0].backend, "p");
  assert_string_equal(o.host_cfg[0].setting, "cpu-cores");
  assert_string_equal(o.host_cfg[0].value, "0-3");
  assert_string_equal(o.no_effect[0], "http-thread-count");
  assert_string_equal(o.no_effect[1], "host-policy");
  assert_string_equal(o.no_effect[2], "rate-limit-resource");
  ifd__app_options_free(&o);
}

/* The cloud endpoints: their ports, the SageMaker safe port range, and
 * tritonserver's defaults under AIP_MODE=PREDICTION. */
static void test_cloud(void **state) {
  ifd_app_options_t o;
  (void)state;
  assert_int_equal(PARSE(&o, "--allow-sagemaker=true", "--sagemaker-port=9100",
                         "--vertex-ai-port=9101", "--allow-vertex-ai=true"),
                   0);
  assert_int_equal(o.allow_sagemaker, 1);
  assert_int_equal(o.sagemaker_port, 9100);
  assert_int_equal(o.allow_vertex_ai, 1);
  assert_int_equal(o.vertex_ai_port, 9101);
  assert_int_equal(o.allow_http, 1);
  ifd__app_options_free(&o);
  /* Both default to 8080. */
  assert_int_equal(
      PARSE(&o, "--allow-sagemaker=true", "--allow-vertex-ai=true"), -1);
  ERR_HAS(
      "SageMaker requests and Vertex AI requests at the same address "
      "and port 0.0.0.0:8080");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--allow-sagemaker=true", "--http-port=8080"), -1);
  ERR_HAS("HTTP requests and SageMaker requests");
  ifd__app_options_free(&o);
  /* Off: its port collides with nothing. */
  assert_int_equal(PARSE(&o, "--sagemaker-port=8000"), 0);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--allow-sagemaker=true",
                         "--sagemaker-safe-port-range=8000-8002"),
                   0);
  assert_int_equal(o.sagemaker_range_lo, 8000);
  assert_int_equal(o.sagemaker_range_hi, 8002);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--allow-sagemaker=true",
                         "--sagemaker-safe-port-range=8000-8001"),
                   -1);
  ERR_HAS(
      "cannot listen to metrics requests at port 8002, allowed port "
      "range is [8000, 8001]");
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--sagemaker-safe-port-range=8000"), -1);
  ifd__app_options_free(&o);
  /* AIP_MODE=PREDICTION: Vertex AI on, HTTP and gRPC off unless asked. */
  setenv("AIP_MODE", "PREDICTION", 1);
  setenv("AIP_HTTP_PORT", "9200", 1);
  assert_int_equal(PARSE(&o, "--allow-grpc=true"), 0);
  assert_int_equal(o.allow_vertex_ai, 1);
  assert_int_equal(o.vertex_ai_port, 9200);
  assert_int_equal(o.allow_http, 0);
  assert_int_equal(o.allow_grpc, 1);
  ifd__app_options_free(&o);
  assert_int_equal(PARSE(&o, "--allow-vertex-ai=false"), 0);
  assert_int_equal(o.allow_vertex_ai, 0);
  ifd__app_options_free(&o);
  setenv("AIP_HTTP_PORT", "x", 1);
  assert_int_equal(PARSE(&o, "--allow-vertex-ai=false"), -1);
  ERR_HAS("AIP_HTTP_PORT");
  ifd__app_options_free(&o);
  unsetenv("AIP_MODE");
  unsetenv("AIP_HTTP_PORT");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_spellings),
      cmocka_unit_test(test_switch_and_booleans),
      cmocka_unit_test(test_values),
      cmocka_unit_test(test_trace),
      cmocka_unit_test(test_refused),
      cmocka_unit_test(test_rate_limit),
      cmocka_unit_test(test_gpu_limit),
      cmocka_unit_test(test_cache),
      cmocka_unit_test(test_ports),
      cmocka_unit_test(test_unix),
      cmocka_unit_test(test_overload),
      cmocka_unit_test(test_http_body_prealloc),
      cmocka_unit_test(test_buffer_pool),
      cmocka_unit_test(test_no_effect_notes),
      cmocka_unit_test(test_cloud),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
