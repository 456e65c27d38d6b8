/*
 * net/main.c - the inferd executable: tritonserver's command line, the loop,
 * start-up and graceful shutdown.
 *
 * Flags are spelled as tritonserver spells them and take `--flag=value` or
 * `--flag value`. Flags for endpoints that this build does not serve yet are
 * refused with a clear message rather than silently ignored, except the
 * port/allow flags that every tritonserver command line carries, which are
 * accepted with a warning so that existing command lines keep working.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/log.h"
#include "core/metrics.h"
#include "core/server.h"
#include "cuda/cuda_mem.h"
#include "cuda/gpu.h"
#include "net/grpc.h"
#include "net/http.h"
#include "net/restrict.h"
#include "sched/sched.h"

#define MAX_REPOS 64
#define MAX_LOAD_MODELS 1024
#define MAX_BACKEND_CONFIG 256
/* tritonserver's default --repository-poll-secs. */
#define DEFAULT_POLL_SECS 15
/* --loop-spin-us: see core/event.h, "Expected events". */
#define DEFAULT_LOOP_SPIN_US 30

typedef struct options {
  const char *repos[MAX_REPOS];
  size_t n_repos;
  const char *backend_dir;
  /* --backend-config settings; strings in backend_cfg_text. */
  ifd_backend_setting_t backend_cfg[MAX_BACKEND_CONFIG];
  size_t n_backend_cfg;
  char *backend_cfg_text[MAX_BACKEND_CONFIG]; /* owned: split copies */
  char backend_dir_default[PATH_MAX];
  const char *http_address;
  int http_port;
  int allow_http;
  uint64_t http_max_input_size;
  uint64_t http_json_offload_bytes;
  /* Connection limits and timeouts (README, "HTTP/1.1" section). */
  int http_max_header_bytes;
  int http_max_headers;
  int http_max_pipeline;
  int http_header_timeout_secs;
  int http_body_timeout_secs;
  int http_idle_timeout_secs;
  int max_connections;
  int loop_spin_us;
  const char *grpc_address;
  int grpc_port;
  int allow_grpc;
  uint64_t grpc_max_message_size;
  uint64_t grpc_stream_buffer_bytes;
  ifd_grpc_opts_t grpc_lim;     /* HTTP/2 limits and keepalive (grpc.h) */
  ifd_restrict_t http_restrict; /* owned: --http-restricted-api */
  ifd_restrict_t grpc_restrict; /* owned: --grpc-restricted-protocol */
  int grpc_use_ssl, grpc_use_ssl_mutual; /* mutual: -1 when not given */
  const char *grpc_server_cert, *grpc_server_key, *grpc_root_cert;
  const char *http_ssl_cert, *http_ssl_key;
  const char *metrics_address;
  int metrics_port;
  int allow_metrics;
  int metrics_interval_ms;
  int strict_config;
  int exit_on_error;
  int strict_readiness;
  int histogram_latencies;  /* --metrics-config histogram_latencies */
  int no_counter_latencies; /* --metrics-config counter_latencies=false */
  int exit_timeout_secs;
  ifd_control_mode_t control_mode;
  const char *load_models[MAX_LOAD_MODELS];
  size_t n_load_models;
  int load_all; /* --load-model=* was given */
  int poll_secs;
  int log_verbose;
  int log_info, log_warning, log_error;
  const char *log_file;   /* --log-file: NULL for stderr */
  const char *log_format; /* --log-format: NULL for "default" */
  /* GPUs (README, "GPUs"): memory pools and GPU metrics. */
  ifd_cuda_mem_opts_t cuda_mem;
  int allow_gpu_metrics;
} options_t;

typedef struct app {
  uv_loop_t loop;
  options_t opt;
  ifd_server_t *server;     /* owned */
  ifd_http_t *http;         /* owned until ifd_http_stop's done */
  ifd_grpc_t *grpc;         /* owned until ifd_grpc_stop's done */
  ifd_http_t *metrics_http; /* owned until ifd_http_stop's done */
  ifd_metrics_t *metrics;   /* owned until ifd_metrics_stop's done */
  ifd_tls_ctx_t *http_tls;  /* owned: freed once the loop has ended */
  ifd_tls_ctx_t *grpc_tls;  /* owned: freed once the loop has ended */
  int fronts_stopping;      /* front ends still stopping */
  uv_signal_t sigint;       /* embedded */
  uv_signal_t sigterm;      /* embedded */
  uv_timer_t backstop;      /* embedded: ends the process past the deadline */
  int stopping;
  int drained; /* the core has nothing left in flight */
  int exit_code;
} app_t;

/* How long after the exit deadline unloading may still take before the
 * process exits without waiting for it (a backend stuck in execute or
 * finalize): the process always ends within --exit-timeout-secs + 2 s. */
#define BACKSTOP_GRACE_MS 1500

static void usage(FILE *f) {
  fprintf(
      f,
      "Usage: inferd [options]\n"
      "  --model-repository=DIR     model repository path (repeatable; "
      "also --model-store)\n"
      "  --backend-config=[B,]S=V   setting S=V for backend B (every backend\n"
      "                             without B), in "
      "TRITONBACKEND_BackendConfig\n"
      "  --backend-directory=DIR    where <backend>/libtriton_<backend>.so "
      "are found\n"
      "                             (default: <inferd dir>/backends)\n"
      "  --http-port=PORT           HTTP/REST port (default 8000)\n"
      "  --http-address=ADDR        HTTP bind address (default 0.0.0.0)\n"
      "  --allow-http=BOOL          serve HTTP (default true)\n"
      "  --http-max-input-size=N    largest HTTP request body in bytes "
      "(default 67108864)\n"
      "  --http-json-offload-bytes=N  JSON infer bodies of N bytes or "
      "more are decoded\n"
      "                             and encoded on the thread pool "
      "(default 262144)\n"
      "  --http-thread-count=N      accepted for compatibility: HTTP is "
      "served by one event loop\n"
      "  --http-max-header-bytes=N  largest request line plus headers; "
      "beyond: 431, close\n"
      "                             (default 65536)\n"
      "  --http-max-headers=N       most header fields per request; "
      "beyond: 431, close\n"
      "                             (default 100)\n"
      "  --http-header-timeout-secs=N  time from a request's first byte to "
      "its last header;\n"
      "                             beyond: 408, close (default 30; 0: "
      "none)\n"
      "  --http-body-timeout-secs=N  time allowed for a request body, the "
      "clock restarting\n"
      "                             each MiB received; beyond: 408, close "
      "(default 60; 0: none)\n"
      "  --http-idle-timeout-secs=N  idle keep-alive connections close "
      "after N s\n"
      "                             (default 300; 0: none)\n"
      "  --http-max-pipeline=N      pipelined requests queued per "
      "connection before it\n"
      "                             stops reading (default 32)\n"
      "  --max-connections=N        open connections per listener (HTTP, "
      "gRPC, metrics);\n"
      "                             beyond: accepted and closed at once "
      "(default 65536)\n"
      "  --loop-spin-us=N           longest the loop waits, instead of "
      "sleeping, for a cheap\n"
      "                             model's result; 0 turns it off "
      "(default 30)\n"
      "  --grpc-port=PORT           gRPC port (default 8001)\n"
      "  --grpc-address=ADDR        gRPC bind address (default 0.0.0.0)\n"
      "  --allow-grpc=BOOL          serve gRPC (default true)\n"
      "  --grpc-max-message-size=N  largest gRPC message in bytes "
      "(default 2147483647)\n"
      "  --grpc-stream-buffer-bytes=N  response bytes one gRPC call may "
      "have queued for a\n"
      "                             slow reader before it ends with "
      "RESOURCE_EXHAUSTED\n"
      "                             (default 67108864)\n"
      "  --grpc-max-concurrent-streams=N  calls open at once on one gRPC "
      "connection;\n"
      "                             more are refused with REFUSED_STREAM "
      "(default 1024)\n"
      "  --grpc-max-header-list-size=N  largest request header list in "
      "bytes (default\n"
      "                             16384; a call past it gets "
      "RESOURCE_EXHAUSTED)\n"
      "  --grpc-idle-timeout-secs=N  GOAWAY to a gRPC connection without a "
      "call for N s\n"
      "                             (default 300; 0: never)\n"
      "  --grpc-max-resets-per-second=N  client RST_STREAMs per second "
      "before\n"
      "                             GOAWAY(ENHANCE_YOUR_CALM) (rapid reset; "
      "default 200;\n"
      "                             0: no limit)\n"
      "  --grpc-max-connection-buffer-bytes=N  request and response bytes "
      "one gRPC\n"
      "                             connection may hold for its calls "
      "(default 1073741824)\n"
      "  --grpc-keepalive-time=MS   server PING after MS of client silence "
      "(default 7200000)\n"
      "  --grpc-keepalive-timeout=MS  close when the PING ACK takes longer "
      "(default 20000;\n"
      "                             0: never)\n"
      "  --grpc-keepalive-permit-without-calls=BOOL  PINGs also without "
      "calls (default false)\n"
      "  --grpc-http2-max-pings-without-data=N  server PINGs until data is "
      "sent (default 2;\n"
      "                             0: no limit)\n"
      "  --grpc-http2-min-recv-ping-interval-without-data=MS  client PINGs "
      "closer are\n"
      "                             strikes (default 300000)\n"
      "  --grpc-http2-max-ping-strikes=N  strikes before "
      "GOAWAY(ENHANCE_YOUR_CALM) (default 2;\n"
      "                             0: no limit)\n"
      "  --http-restricted-api=<api-list>:<key>=<value>  serve the APIs "
      "of the list (health,\n"
      "                             metadata, inference, shared-memory, "
      "model-config,\n"
      "                             model-repository, statistics, trace, "
      "logging) only to\n"
      "                             requests with header <key>: <value>; "
      "others get 403\n"
      "                             (repeatable; a group in one rule only)\n"
      "  --grpc-restricted-protocol=<api-list>:<key>=<value>  the same for "
      "gRPC, with the\n"
      "                             metadata triton-grpc-protocol-<key>; "
      "others get UNAVAILABLE\n"
      "  --grpc-use-ssl=BOOL        serve gRPC over TLS (ALPN h2) with "
      "--grpc-server-cert\n"
      "                             and --grpc-server-key (default false)\n"
      "  --grpc-use-ssl-mutual=BOOL also require a client certificate "
      "signed by\n"
      "                             --grpc-root-cert; like tritonserver, "
      "giving it at all\n"
      "                             turns --grpc-use-ssl on (default false)\n"
      "  --grpc-server-cert=FILE    PEM server certificate (chain) for gRPC "
      "TLS\n"
      "  --grpc-server-key=FILE     PEM private key of --grpc-server-cert\n"
      "  --grpc-root-cert=FILE      PEM root certificate(s) for client "
      "certificates\n"
      "                             (used with --grpc-use-ssl-mutual)\n"
      "  --http-ssl-cert=FILE       serve HTTPS on the HTTP port with this "
      "PEM certificate\n"
      "                             (chain); needs --http-ssl-key "
      "(inferd's own flags)\n"
      "  --http-ssl-key=FILE        PEM private key of --http-ssl-cert\n"
      "  --metrics-port=PORT        Prometheus metrics port (default 8002)\n"
      "  --metrics-address=ADDR     metrics bind address (default: the "
      "HTTP address)\n"
      "  --allow-metrics=BOOL       serve metrics (default true)\n"
      "  --metrics-interval-ms=N    how often CPU and memory gauges are "
      "sampled (default 2000)\n"
      "  --metrics-config=K=V       counter_latencies=BOOL (default true): "
      "the\n"
      "                             latency counters; "
      "histogram_latencies=BOOL\n"
      "                             (default false): first-response "
      "histograms\n"
      "                             of decoupled models (repeatable)\n"
      "  --allow-gpu-metrics=BOOL   GPU gauges through NVML when present "
      "(default true)\n"
      "  --pinned-memory-pool-byte-size=N  pinned host memory pool "
      "(default 268435456;\n"
      "                             0: none; needs a GPU)\n"
      "  --cuda-memory-pool-byte-size=DEV:N  GPU memory pool of device DEV "
      "(default\n"
      "                             67108864 per GPU; repeatable)\n"
      "  --model-control-mode=MODE  none (default): load every model at "
      "start, no changes;\n"
      "                             explicit: load only --load-model at "
      "start, then by the\n"
      "                             load/unload API; poll: load every "
      "model, then apply\n"
      "                             the repository's changes every "
      "--repository-poll-secs\n"
      "  --load-model=NAME          model to load at start in explicit "
      "mode (repeatable;\n"
      "                             '*' alone loads every model); ignored "
      "in other modes\n"
      "  --repository-poll-secs=N   seconds between repository polls in "
      "poll mode\n"
      "                             (default 15, must be > 0)\n"
      "  --strict-model-config=BOOL no config auto-completion (default "
      "false)\n"
      "  --strict-readiness=BOOL    ready only when every model is ready "
      "(default true)\n"
      "  --exit-on-error=BOOL       exit when a model fails to load "
      "(default true)\n"
      "  --exit-timeout-secs=N      wait for in-flight requests on "
      "shutdown (default 30);\n"
      "                             the process exits within N + 2 s "
      "(status 1 when\n"
      "                             a model was still unloading then)\n"
      "  --log-verbose=N            verbose log level (default 0)\n"
      "  --log-info=BOOL, --log-warning=BOOL, --log-error=BOOL\n"
      "  --log-file=PATH            append log lines to PATH instead of "
      "stderr\n"
      "  --log-format=F             default or ISO8601 (default: default)\n"
      "  --help                     this text\n");
}

static int parse_bool(const char *v, int *out) {
  static const char *yes[] = {"true", "1", "yes", "on"};
  static const char *no[] = {"false", "0", "no", "off"};
  size_t i;
  for (i = 0; i < 4; i++) {
    if (strcasecmp(v, yes[i]) == 0) return *out = 1, 0;
    if (strcasecmp(v, no[i]) == 0) return *out = 0, 0;
  }
  return -1;
}

static int parse_int(const char *v, long long lo, long long hi,
                     long long *out) {
  char *end;
  long long n;
  errno = 0;
  n = strtoll(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || n < lo || n > hi) return -1;
  *out = n;
  return 0;
}

enum kind {
  K_REPO,
  K_STR,
  K_PORT,
  K_BOOL,
  K_INT,
  K_POS,
  K_U64,
  K_MODE,
  K_LOAD,
  K_METRICS_CONFIG,
  K_NOTYET,
  K_BACKEND_CONFIG, /* --backend-config [<backend>,]<setting>=<value> */
  K_UINT,           /* unsigned, 0 allowed */
  K_U64Z,           /* uint64_t, 0 allowed */
  K_SECS_MS,        /* seconds into a uint64_t of ms, 0 allowed */
  K_RESTRICT,       /* ifd_restrict_t rule (HTTP or gRPC by the name) */
  K_CUDA_POOL,      /* --cuda-memory-pool-byte-size <device>:<bytes> */
};

typedef struct flag {
  const char *name;
  enum kind kind;
  size_t off; /* offset in options_t; unused for K_REPO/K_MODE/K_LOAD/
                 K_METRICS_CONFIG/K_NOTYET */
} flag_t;

#define OFF(f) offsetof(options_t, f)
static const flag_t flags[] = {
    {"model-repository", K_REPO, 0},
    {"model-store", K_REPO, 0},
    {"backend-directory", K_STR, OFF(backend_dir)},
    {"backend-config", K_BACKEND_CONFIG, 0},
    {"http-address", K_STR, OFF(http_address)},
    {"http-port", K_PORT, OFF(http_port)},
    {"allow-http", K_BOOL, OFF(allow_http)},
    {"http-max-input-size", K_U64, OFF(http_max_input_size)},
    {"http-json-offload-bytes", K_U64, OFF(http_json_offload_bytes)},
    {"http-thread-count", K_NOTYET, 0},
    {"http-max-header-bytes", K_POS, OFF(http_max_header_bytes)},
    {"http-max-headers", K_POS, OFF(http_max_headers)},
    {"http-max-pipeline", K_POS, OFF(http_max_pipeline)},
    {"http-header-timeout-secs", K_INT, OFF(http_header_timeout_secs)},
    {"http-body-timeout-secs", K_INT, OFF(http_body_timeout_secs)},
    {"http-idle-timeout-secs", K_INT, OFF(http_idle_timeout_secs)},
    {"max-connections", K_POS, OFF(max_connections)},
    {"loop-spin-us", K_INT, OFF(loop_spin_us)},
    {"grpc-port", K_PORT, OFF(grpc_port)},
    {"grpc-address", K_STR, OFF(grpc_address)},
    {"allow-grpc", K_BOOL, OFF(allow_grpc)},
    {"grpc-max-message-size", K_U64, OFF(grpc_max_message_size)},
    {"grpc-stream-buffer-bytes", K_U64, OFF(grpc_stream_buffer_bytes)},
    {"grpc-max-concurrent-streams", K_UINT,
     OFF(grpc_lim.max_concurrent_streams)},
    {"grpc-max-header-list-size", K_UINT, OFF(grpc_lim.max_header_list_size)},
    {"grpc-idle-timeout-secs", K_SECS_MS, OFF(grpc_lim.idle_timeout_ms)},
    {"grpc-max-resets-per-second", K_UINT, OFF(grpc_lim.max_resets_per_second)},
    {"grpc-max-connection-buffer-bytes", K_U64,
     OFF(grpc_lim.max_connection_buffer)},
    {"grpc-keepalive-time", K_U64Z, OFF(grpc_lim.keepalive_time_ms)},
    {"grpc-keepalive-timeout", K_U64Z, OFF(grpc_lim.keepalive_timeout_ms)},
    {"grpc-keepalive-permit-without-calls", K_BOOL,
     OFF(grpc_lim.keepalive_permit_without_calls)},
    {"grpc-http2-max-pings-without-data", K_UINT,
     OFF(grpc_lim.max_pings_without_data)},
    {"grpc-http2-min-recv-ping-interval-without-data", K_U64Z,
     OFF(grpc_lim.min_recv_ping_interval_ms)},
    {"grpc-http2-max-ping-strikes", K_UINT, OFF(grpc_lim.max_ping_strikes)},
    {"http-restricted-api", K_RESTRICT, OFF(http_restrict)},
    {"grpc-restricted-protocol", K_RESTRICT, OFF(grpc_restrict)},
    {"grpc-use-ssl", K_BOOL, OFF(grpc_use_ssl)},
    {"grpc-use-ssl-mutual", K_BOOL, OFF(grpc_use_ssl_mutual)},
    {"grpc-server-cert", K_STR, OFF(grpc_server_cert)},
    {"grpc-server-key", K_STR, OFF(grpc_server_key)},
    {"grpc-root-cert", K_STR, OFF(grpc_root_cert)},
    {"http-ssl-cert", K_STR, OFF(http_ssl_cert)},
    {"http-ssl-key", K_STR, OFF(http_ssl_key)},
    {"metrics-port", K_PORT, OFF(metrics_port)},
    {"metrics-address", K_STR, OFF(metrics_address)},
    {"allow-metrics", K_BOOL, OFF(allow_metrics)},
    {"metrics-interval-ms", K_INT, OFF(metrics_interval_ms)},
    {"metrics-config", K_METRICS_CONFIG, 0},
    {"allow-gpu-metrics", K_BOOL, OFF(allow_gpu_metrics)},
    {"pinned-memory-pool-byte-size", K_U64Z, OFF(cuda_mem.pinned_bytes)},
    {"cuda-memory-pool-byte-size", K_CUDA_POOL, 0},
    {"model-control-mode", K_MODE, 0},
    {"load-model", K_LOAD, 0},
    {"repository-poll-secs", K_INT, OFF(poll_secs)},
    {"strict-model-config", K_BOOL, OFF(strict_config)},
    {"strict-readiness", K_BOOL, OFF(strict_readiness)},
    {"exit-on-error", K_BOOL, OFF(exit_on_error)},
    {"exit-timeout-secs", K_INT, OFF(exit_timeout_secs)},
    {"log-verbose", K_INT, OFF(log_verbose)},
    {"log-info", K_BOOL, OFF(log_info)},
    {"log-warning", K_BOOL, OFF(log_warning)},
    {"log-error", K_BOOL, OFF(log_error)},
    {"log-file", K_STR, OFF(log_file)},
    {"log-format", K_STR, OFF(log_format)},
};

static int bad(const char *name, const char *value, const char *why) {
  fprintf(stderr, "inferd: invalid value '%s' for --%s: %s\n", value, name,
          why);
  usage(stderr);
  return -1;
}

/* --backend-config=[<backend>,]<setting>=<value> (tritonserver's form; no
 * backend: every backend). The value may hold '=' and ','. 0 or -1. */
static int parse_backend_config(const char *value, options_t *o) {
  char *t, *eq, *comma;
  ifd_backend_setting_t *b;
  if (o->n_backend_cfg == MAX_BACKEND_CONFIG) return -1;
  t = strdup(value);
  if (t == NULL) return -1;
  eq = strchr(t, '=');
  if (eq == NULL || eq == t) goto out_bad;
  *eq = '\0';
  b = &o->backend_cfg[o->n_backend_cfg];
  comma = strchr(t, ',');
  if (comma != NULL) {
    *comma = '\0';
    b->backend = t;
    b->setting = comma + 1;
    if (t[0] == '\0' || b->setting[0] == '\0') goto out_bad;
  } else {
    b->backend = "";
    b->setting = t;
  }
  b->value = eq + 1;
  o->backend_cfg_text[o->n_backend_cfg++] = t;
  return 0;
out_bad:
  free(t);
  return -1;
}

/* One --metrics-config <setting>=<value>, as tritonserver reads them:
 * counter_latencies (default true) and histogram_latencies (default false);
 * summaries are not built, so asking for them is refused rather than
 * ignored. Other settings are ignored with a warning (tritonserver keeps
 * unknown ones without effect). Returns 0, or -1 after printing why. */
static int parse_metrics_config(const char *value, options_t *o) {
  const char *eq = strchr(value, '=');
  size_t klen = eq != NULL ? (size_t)(eq - value) : 0;
  int b;
  if (eq == NULL || klen == 0) {
    fprintf(stderr, "inferd: --metrics-config expects <setting>=<value>\n");
    return -1;
  }
#define KEY_IS(k) (klen == strlen(k) && strncmp(value, k, klen) == 0)
  if (KEY_IS("counter_latencies") || KEY_IS("histogram_latencies") ||
      KEY_IS("summary_latencies")) {
    if (parse_bool(eq + 1, &b) < 0) {
      fprintf(stderr, "inferd: --metrics-config %.*s expects true or false\n",
              (int)klen, value);
      return -1;
    }
    if (KEY_IS("counter_latencies")) o->no_counter_latencies = !b;
    if (KEY_IS("histogram_latencies")) o->histogram_latencies = b;
    if (KEY_IS("summary_latencies") && b) {
      fprintf(stderr,
              "inferd: --metrics-config summary_latencies=true: latency "
              "summaries are not supported (counters and the first-response "
              "histogram are)\n");
      return -1;
    }
  } else if (KEY_IS("summary_quantiles")) {
    fprintf(stderr,
            "inferd: --metrics-config summary_quantiles: latency summaries "
            "are not supported\n");
    return -1;
  } else {
    IFD_WARN("--metrics-config %s: unknown setting, ignored", value);
  }
#undef KEY_IS
  return 0;
}

/* The model control flags together, as tritonserver takes them: '*' must
 * be the only --load-model; --load-model only matters in explicit mode
 * (tritonserver ignores it otherwise: so do we, with a warning); polling
 * needs a positive interval. Returns 0 or -1 after printing why. */
static int check_control(options_t *o) {
  if (o->load_all && o->n_load_models > 0) {
    fprintf(stderr,
            "inferd: --load-model=* must be the only --load-model (it "
            "loads every model)\n");
    return -1;
  }
  if (o->load_all) {
    o->load_models[0] = "*";
    o->n_load_models = 1;
  }
  if (o->n_load_models > 0 && o->control_mode != IFD_CONTROL_EXPLICIT) {
    IFD_WARN("--load-model is ignored unless --model-control-mode=explicit");
    o->n_load_models = 0;
  }
  if (o->control_mode == IFD_CONTROL_POLL && o->poll_secs <= 0) {
    fprintf(stderr,
            "inferd: invalid value '%d' for --repository-poll-secs: must be "
            "greater than 0 with --model-control-mode=poll\n",
            o->poll_secs);
    return -1;
  }
  return 0;
}

/* The TLS flags: builds each listener's context now (the files are read
 * here, before the loop runs). tritonserver turns gRPC TLS on whenever
 * --grpc-use-ssl-mutual is given; the HTTPS pair goes together. Returns 0
 * or -1 after printing why. */
static int build_tls(app_t *a) {
  options_t *o = &a->opt;
  ifd_tls_opts_t t;
  ifd_errmsg_t err;

  ifd_errclear(&err);
  if (o->grpc_use_ssl_mutual != -1) o->grpc_use_ssl = 1;
  if (o->grpc_use_ssl && o->allow_grpc) {
    memset(&t, 0, sizeof(t));
    t.cert_file = o->grpc_server_cert;
    t.key_file = o->grpc_server_key;
    t.ca_file = o->grpc_root_cert;
    t.verify_client = o->grpc_use_ssl_mutual == 1;
    t.alpn = IFD_TLS_ALPN_H2;
    t.cert_flag = "--grpc-server-cert";
    t.key_flag = "--grpc-server-key";
    t.ca_flag = "--grpc-root-cert";
    if (ifd_tls_ctx_new(&t, &a->grpc_tls, &err) != 0) {
      fprintf(stderr, "inferd: gRPC TLS (--grpc-use-ssl): %s\n", err.text);
      return -1;
    }
  }
  if ((o->http_ssl_cert != NULL) != (o->http_ssl_key != NULL)) {
    fprintf(stderr,
            "inferd: HTTPS needs both --http-ssl-cert and --http-ssl-key\n");
    return -1;
  }
  if (o->http_ssl_cert != NULL && o->allow_http) {
    memset(&t, 0, sizeof(t));
    t.cert_file = o->http_ssl_cert;
    t.key_file = o->http_ssl_key;
    t.alpn = IFD_TLS_ALPN_HTTP1;
    t.cert_flag = "--http-ssl-cert";
    t.key_flag = "--http-ssl-key";
    if (ifd_tls_ctx_new(&t, &a->http_tls, &err) != 0) {
      fprintf(stderr, "inferd: HTTPS: %s\n", err.text);
      return -1;
    }
  }
  return 0;
}

/* Parses argv into o. Returns 0, 1 for --help, or -1 after printing why. */
static int parse_args(int argc, char **argv, options_t *o) {
  int i;
  for (i = 1; i < argc; i++) {
    const char *arg = argv[i], *eq, *value;
    size_t nlen, k;
    const flag_t *f = NULL;
    long long n;

    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) return 1;
    if (strncmp(arg, "--", 2) != 0) {
      fprintf(stderr, "inferd: unexpected argument '%s'\n", arg);
      usage(stderr);
      return -1;
    }
    arg += 2;
    eq = strchr(arg, '=');
    nlen = eq ? (size_t)(eq - arg) : strlen(arg);
    for (k = 0; k < sizeof(flags) / sizeof(flags[0]); k++)
      if (strlen(flags[k].name) == nlen &&
          strncmp(flags[k].name, arg, nlen) == 0)
        f = &flags[k];
    if (f == NULL) {
      fprintf(stderr, "inferd: unknown option '--%.*s'\n", (int)nlen, arg);
      usage(stderr);
      return -1;
    }
    if (eq != NULL) {
      value = eq + 1;
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      fprintf(stderr, "inferd: option '--%s' needs a value\n", f->name);
      usage(stderr);
      return -1;
    }
    switch (f->kind) {
      case K_REPO:
        if (o->n_repos == MAX_REPOS)
          return bad(f->name, value, "too many repositories");
        if (value[0] == '\0') return bad(f->name, value, "empty path");
        o->repos[o->n_repos++] = value;
        break;
      case K_STR:
        *(const char **)((char *)o + f->off) = value;
        break;
      case K_PORT:
        if (parse_int(value, 0, 65535, &n) < 0)
          return bad(f->name, value, "expected a port number 0-65535");
        *(int *)((char *)o + f->off) = (int)n;
        break;
      case K_BOOL:
        if (parse_bool(value, (int *)((char *)o + f->off)) < 0)
          return bad(f->name, value, "expected true or false");
        break;
      case K_INT:
        if (parse_int(value, 0, INT_MAX, &n) < 0)
          return bad(f->name, value, "expected a non-negative integer");
        *(int *)((char *)o + f->off) = (int)n;
        break;
      case K_POS:
        if (parse_int(value, 1, INT_MAX, &n) < 0)
          return bad(f->name, value, "expected a positive integer");
        *(int *)((char *)o + f->off) = (int)n;
        break;
      case K_U64:
        if (parse_int(value, 1, LLONG_MAX, &n) < 0)
          return bad(f->name, value, "expected a positive integer");
        *(uint64_t *)((char *)o + f->off) = (uint64_t)n;
        break;
      case K_MODE:
        /* Case-insensitive, as tritonserver reads it. */
        if (strcasecmp(value, "none") == 0)
          o->control_mode = IFD_CONTROL_NONE;
        else if (strcasecmp(value, "explicit") == 0)
          o->control_mode = IFD_CONTROL_EXPLICIT;
        else if (strcasecmp(value, "poll") == 0)
          o->control_mode = IFD_CONTROL_POLL;
        else
          return bad(f->name, value, "expected none, explicit or poll");
        break;
      case K_LOAD:
        if (value[0] == '\0') return bad(f->name, value, "empty model name");
        if (strcmp(value, "*") == 0) {
          o->load_all = 1;
          break;
        }
        if (o->n_load_models == MAX_LOAD_MODELS)
          return bad(f->name, value, "too many models");
        o->load_models[o->n_load_models++] = value;
        break;
      case K_BACKEND_CONFIG:
        if (parse_backend_config(value, o) < 0)
          return bad(f->name, value, "expected [<backend>,]<setting>=<value>");
        break;
      case K_METRICS_CONFIG:
        if (parse_metrics_config(value, o) < 0) {
          usage(stderr);
          return -1;
        }
        break;
      case K_UINT:
        if (parse_int(value, 0, UINT_MAX, &n) < 0)
          return bad(f->name, value, "expected a non-negative integer");
        *(unsigned *)((char *)o + f->off) = (unsigned)n;
        break;
      case K_U64Z:
        if (parse_int(value, 0, LLONG_MAX, &n) < 0)
          return bad(f->name, value, "expected a non-negative integer");
        *(uint64_t *)((char *)o + f->off) = (uint64_t)n;
        break;
      case K_SECS_MS:
        if (parse_int(value, 0, LLONG_MAX / 1000, &n) < 0)
          return bad(f->name, value, "expected a non-negative integer");
        *(uint64_t *)((char *)o + f->off) = (uint64_t)n * 1000u;
        break;
      case K_RESTRICT: {
        int grpc = strncmp(f->name, "grpc", 4) == 0;
        ifd_errmsg_t e;
        ifd_errclear(&e);
        if (ifd_restrict_add((ifd_restrict_t *)((char *)o + f->off), value,
                             grpc ? "triton-grpc-protocol-" : "",
                             grpc ? "protocol" : "API", &e) != 0)
          return bad(f->name, value, e.text);
        break;
      }
      case K_CUDA_POOL: {
        ifd_errmsg_t e;
        ifd_errclear(&e);
        if (ifd_cuda_mem_parse_pool(&o->cuda_mem, value, &e) < 0)
          return bad(f->name, value, e.text);
        break;
      }
      case K_NOTYET:
        IFD_WARN("--%s=%s accepted but not used: %s", f->name, value,
                 strcmp(f->name, "http-thread-count") == 0
                     ? "inferd serves HTTP from one event loop"
                     : "this endpoint is not served by this build yet");
        break;
    }
  }
  if (o->n_repos == 0) {
    fprintf(stderr, "inferd: --model-repository must be specified\n");
    usage(stderr);
    return -1;
  }
  return check_control(o);
}

/* ---- lifecycle
 * ---------------------------------------------------------------
 *
 * Shutdown (signal, a failed start, --exit-on-error) has ONE deadline,
 * --exit-timeout-secs from its start:
 *   1. every front end stops accepting and drains (no new HTTP request on a
 *      connection, GOAWAY on gRPC), and the server is marked not ready;
 *   2. once the core has nothing in flight (or at the deadline), open gRPC
 *      calls are answered UNAVAILABLE and connections close after their
 *      last bytes; at the deadline every connection left is closed;
 *   3. with every front end closed and the core drained, the models are
 *      unloaded; then the server is freed and the loop ends.
 * A backstop timer exits the process BACKSTOP_GRACE_MS after the deadline
 * should an unload still hang then. */

static void on_handle_closed(uv_handle_t *h) {
  (void)h;
}

static void on_unloaded(ifd_server_t *s, void *arg) {
  app_t *a = arg;
  (void)s;
  ifd_server_free(a->server);
  a->server = NULL;
  uv_close((uv_handle_t *)&a->sigint, on_handle_closed);
  uv_close((uv_handle_t *)&a->sigterm, on_handle_closed);
  uv_close((uv_handle_t *)&a->backstop, on_handle_closed);
}

static void maybe_unload(app_t *a) {
  if (a->fronts_stopping > 0 || !a->drained) return;
  a->drained = 0; /* run once */
  ifd_server_unload_all(a->server, on_unloaded, a);
}

static void front_stopped(app_t *a) {
  --a->fronts_stopping;
  maybe_unload(a);
}

static void on_http_stopped(void *arg) {
  app_t *a = arg;
  a->http = NULL;
  front_stopped(a);
}

static void on_grpc_stopped(void *arg) {
  app_t *a = arg;
  a->grpc = NULL;
  front_stopped(a);
}

static void on_metrics_http_stopped(void *arg) {
  app_t *a = arg;
  a->metrics_http = NULL;
  front_stopped(a);
}

static void on_metrics_stopped(void *arg) {
  app_t *a = arg;
  a->metrics = NULL;
  front_stopped(a);
}

static void on_drained(ifd_server_t *s, uint64_t left, void *arg) {
  app_t *a = arg;
  (void)s;
  (void)left;
  a->drained = 1;
  if (a->http != NULL) ifd_http_drained(a->http);
  if (a->grpc != NULL) ifd_grpc_drained(a->grpc);
  if (a->metrics_http != NULL) ifd_http_drained(a->metrics_http);
  maybe_unload(a);
}

static void on_backstop(uv_timer_t *t) {
  (void)t;
  IFD_ERROR(
      "exit timeout expired and models are still unloading: exiting "
      "without waiting for them");
  fflush(stdout);
  fflush(stderr);
  _exit(1);
}

static void begin_shutdown(app_t *a, int code) {
  uint64_t now, deadline;

  if (a->stopping) return;
  a->stopping = 1;
  a->exit_code = code;
  IFD_INFO("shutting down");
  uv_update_time(&a->loop);
  now = uv_now(&a->loop);
  deadline = now + (uint64_t)a->opt.exit_timeout_secs * 1000;
  a->fronts_stopping = 1; /* held until every stop below has been issued */
  if (a->http != NULL) {
    a->fronts_stopping++;
    ifd_http_stop(a->http, deadline, on_http_stopped, a);
  }
  if (a->grpc != NULL) {
    a->fronts_stopping++;
    ifd_grpc_stop(a->grpc, deadline, on_grpc_stopped, a);
  }
  if (a->metrics_http != NULL) {
    a->fronts_stopping++;
    ifd_http_stop(a->metrics_http, deadline, on_metrics_http_stopped, a);
  }
  if (a->metrics != NULL) {
    a->fronts_stopping++;
    ifd_metrics_stop(a->metrics, on_metrics_stopped, a);
  }
  uv_timer_start(&a->backstop, on_backstop, deadline - now + BACKSTOP_GRACE_MS,
                 0);
  ifd_server_drain(a->server, deadline, on_drained, a);
  front_stopped(a);
}

static void on_signal(uv_signal_t *h, int signum) {
  app_t *a = h->data;
  IFD_INFO("received signal %d", signum);
  begin_shutdown(a, a->exit_code);
}

static void on_loaded(ifd_server_t *s, int failed, void *arg) {
  app_t *a = arg;
  (void)s;
  if (failed > 0 && a->opt.exit_on_error) {
    IFD_ERROR("%d model(s) failed to load and --exit-on-error is true", failed);
    begin_shutdown(a, 1);
    return;
  }
  IFD_INFO("inferd %s ready (%s build)", IFD_SERVER_VERSION, ifd_gpu_build());
}

/* Raises the soft limit on open files to the hard limit: every connection
 * is a descriptor, and the default soft limit (1024) is far below what one
 * loop serves. */
static void raise_nofile(void) {
  struct rlimit rl;

  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  if (rl.rlim_cur < rl.rlim_max) {
    rlim_t want = rl.rlim_max;
    rl.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
      IFD_WARN("cannot raise the open file limit to %llu: %s",
               (unsigned long long)want, strerror(errno));
      getrlimit(RLIMIT_NOFILE, &rl);
    }
  }
  IFD_VERBOSE("open file limit: %llu (hard %llu)",
              (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
}

/* The HTTP options both HTTP listeners share. */
static void http_limits(const options_t *o, ifd_http_opts_t *ho) {
  ho->max_header_bytes = (uint32_t)o->http_max_header_bytes;
  ho->max_headers = (uint32_t)o->http_max_headers;
  ho->max_pipeline = (unsigned)o->http_max_pipeline;
  ho->header_timeout_ms = (uint64_t)o->http_header_timeout_secs * 1000;
  ho->body_timeout_ms = (uint64_t)o->http_body_timeout_secs * 1000;
  ho->idle_timeout_ms = (uint64_t)o->http_idle_timeout_secs * 1000;
  ho->max_connections = (unsigned)o->max_connections;
}

static void default_backend_dir(options_t *o, const char *argv0) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  char *slash;
  (void)argv0;
  if (n <= 0) return;
  exe[n] = '\0';
  slash = strrchr(exe, '/');
  if (slash == NULL) return;
  *slash = '\0';
  if (strlen(exe) + sizeof("/backends") > sizeof(o->backend_dir_default))
    return;
  memcpy(o->backend_dir_default, exe, strlen(exe));
  memcpy(o->backend_dir_default + strlen(exe), "/backends",
         sizeof("/backends"));
  o->backend_dir = o->backend_dir_default;
}

int main(int argc, char **argv) {
  static app_t app;
  app_t *a = &app;
  ifd_server_opts_t so;
  ifd_errmsg_t err;
  int rc;

  a->opt.http_port = 8000;
  a->opt.allow_http = 1;
  a->opt.http_address = "0.0.0.0";
  a->opt.http_max_input_size = IFD_HTTP_DEFAULT_MAX_INPUT_SIZE;
  a->opt.http_json_offload_bytes = IFD_HTTP_DEFAULT_JSON_OFFLOAD_BYTES;
  a->opt.http_max_header_bytes = IFD_HTTP_DEFAULT_MAX_HEADER_BYTES;
  a->opt.http_max_headers = IFD_HTTP_DEFAULT_MAX_HEADERS;
  a->opt.http_max_pipeline = IFD_HTTP_DEFAULT_MAX_PIPELINE;
  a->opt.http_header_timeout_secs = IFD_HTTP_DEFAULT_HEADER_TIMEOUT_SECS;
  a->opt.http_body_timeout_secs = IFD_HTTP_DEFAULT_BODY_TIMEOUT_SECS;
  a->opt.http_idle_timeout_secs = IFD_HTTP_DEFAULT_IDLE_TIMEOUT_SECS;
  a->opt.max_connections = (int)IFD_HTTP_DEFAULT_MAX_CONNECTIONS;
  a->opt.loop_spin_us = DEFAULT_LOOP_SPIN_US;
  a->opt.grpc_port = 8001;
  a->opt.allow_grpc = 1;
  a->opt.grpc_address = "0.0.0.0";
  a->opt.grpc_max_message_size = IFD_GRPC_DEFAULT_MAX_MESSAGE_SIZE;
  a->opt.grpc_stream_buffer_bytes = IFD_GRPC_DEFAULT_STREAM_BUFFER_BYTES;
  ifd_grpc_opts_defaults(&a->opt.grpc_lim);
  a->opt.grpc_use_ssl_mutual = -1;
  a->opt.metrics_port = 8002;
  a->opt.allow_metrics = 1;
  a->opt.metrics_interval_ms = 2000;
  a->opt.allow_gpu_metrics = 1;
  ifd_cuda_mem_opts_default(&a->opt.cuda_mem);
  a->opt.exit_on_error = 1;
  a->opt.strict_readiness = 1;
  a->opt.exit_timeout_secs = 30;
  a->opt.poll_secs = DEFAULT_POLL_SECS;
  a->opt.log_info = a->opt.log_warning = a->opt.log_error = 1;
  default_backend_dir(&a->opt, argv[0]);

  rc = parse_args(argc, argv, &a->opt);
  if (rc != 0) {
    if (rc > 0) usage(stdout);
    return rc > 0 ? 0 : 1;
  }
  if (a->opt.log_format != NULL) {
    ifd_log_format_t f;
    if (ifd_log_parse_format(a->opt.log_format, &f) != 0) {
      bad("log-format", a->opt.log_format, "expected default or ISO8601");
      return 1;
    }
    ifd_log_set_format(f);
  }
  if (a->opt.log_file != NULL && a->opt.log_file[0] != '\0') {
    int e = ifd_log_open_file(a->opt.log_file);
    if (e < 0) {
      fprintf(stderr, "inferd: cannot open --log-file '%s': %s\n",
              a->opt.log_file, strerror(-e));
      return 1;
    }
  }
  ifd_log_set_verbose(a->opt.log_verbose);
  ifd_log_set_enabled(IFD_LOG_INFO, a->opt.log_info);
  ifd_log_set_enabled(IFD_LOG_WARN, a->opt.log_warning);
  ifd_log_set_enabled(IFD_LOG_ERROR, a->opt.log_error);
  signal(SIGPIPE, SIG_IGN);
  if (build_tls(a) != 0) {
    ifd_tls_ctx_free(a->http_tls);
    ifd_tls_ctx_free(a->grpc_tls);
    return 1;
  }
  raise_nofile();

  if (uv_loop_init(&a->loop) != 0) {
    fprintf(stderr, "inferd: cannot create the event loop\n");
    return 1;
  }
  memset(&so, 0, sizeof(so));
  so.repos = a->opt.repos;
  so.n_repos = a->opt.n_repos;
  so.control_mode = a->opt.control_mode;
  so.load_models = a->opt.load_models;
  so.n_load_models = a->opt.n_load_models;
  so.poll_secs = a->opt.poll_secs;
  so.backend_dir = a->opt.backend_dir;
  so.backend_config = a->opt.backend_cfg;
  so.n_backend_config = a->opt.n_backend_cfg;
  so.strict_config = a->opt.strict_config;
  so.exit_on_error = a->opt.exit_on_error;
  so.strict_readiness = a->opt.strict_readiness;
  so.histogram_latencies = a->opt.histogram_latencies;
  so.no_counter_latencies = a->opt.no_counter_latencies;
  so.exit_timeout_secs = a->opt.exit_timeout_secs;
  so.gpu_count = ifd_gpu_count();
  /* Before any model loads; without a GPU there is nothing to set up. */
  ifd_cuda_mem_init(&a->opt.cuda_mem, so.gpu_count);
  so.ops = ifd_sched_model_ops();
  ifd_errclear(&err);
  if (ifd_server_new(&a->loop, &so, &a->server, &err) < 0) {
    fprintf(stderr, "inferd: %s\n", err.text);
    return 1;
  }
  ifd_evq_set_spin(ifd_server_evq(a->server),
                   (uint64_t)a->opt.loop_spin_us * 1000u);
  uv_signal_init(&a->loop, &a->sigint);
  uv_signal_init(&a->loop, &a->sigterm);
  uv_timer_init(&a->loop, &a->backstop);
  a->sigint.data = a->sigterm.data = a;
  uv_signal_start(&a->sigint, on_signal, SIGINT);
  uv_signal_start(&a->sigterm, on_signal, SIGTERM);

  if (a->opt.allow_http) {
    ifd_http_opts_t ho;
    memset(&ho, 0, sizeof(ho));
    ho.host = a->opt.http_address;
    ho.port = a->opt.http_port;
    ho.max_input_size = a->opt.http_max_input_size;
    ho.json_offload_bytes = a->opt.http_json_offload_bytes;
    ho.restrict_api = &a->opt.http_restrict;
    ho.tls = a->http_tls;
    http_limits(&a->opt, &ho);
    if (ifd_http_start(&a->loop, a->server, &ho, &a->http, &err) < 0) {
      IFD_ERROR("failed to start the HTTP service: %s", err.text);
      a->http = NULL;
      a->exit_code = 1;
    } else {
      IFD_INFO("started HTTPService at %s:%d%s", a->opt.http_address,
               ifd_http_port(a->http), a->http_tls != NULL ? " (HTTPS)" : "");
    }
  }
  if (a->opt.allow_grpc && a->exit_code == 0) {
    ifd_grpc_opts_t go = a->opt.grpc_lim;
    go.restrict_api = &a->opt.grpc_restrict;
    go.host = a->opt.grpc_address;
    go.port = a->opt.grpc_port;
    go.max_message_size = a->opt.grpc_max_message_size;
    go.stream_buffer_bytes = a->opt.grpc_stream_buffer_bytes;
    go.tls = a->grpc_tls;
    go.max_connections = (unsigned)a->opt.max_connections;
    if (ifd_grpc_start(&a->loop, a->server, &go, &a->grpc, &err) < 0) {
      IFD_ERROR("failed to start the GRPC service: %s", err.text);
      a->grpc = NULL;
      a->exit_code = 1;
    } else {
      IFD_INFO("started GRPCInferenceService at %s:%d%s", a->opt.grpc_address,
               ifd_grpc_port(a->grpc),
               a->grpc_tls == NULL               ? ""
               : a->opt.grpc_use_ssl_mutual == 1 ? " (TLS, mutual)"
                                                 : " (TLS)");
    }
  }
  if (a->opt.allow_metrics && a->exit_code == 0) {
    ifd_http_opts_t mo;
    if (ifd_metrics_start(a->server,
                          (uint64_t)(a->opt.metrics_interval_ms > 0
                                         ? a->opt.metrics_interval_ms
                                         : 2000),
                          &a->metrics) < 0) {
      IFD_ERROR("failed to start metrics: out of memory");
      a->exit_code = 1;
    } else {
      ifd_metrics_allow_gpu(a->metrics, a->opt.allow_gpu_metrics);
    }
    memset(&mo, 0, sizeof(mo));
    http_limits(&a->opt, &mo);
    mo.host = a->opt.metrics_address != NULL ? a->opt.metrics_address
                                             : a->opt.http_address;
    mo.port = a->opt.metrics_port;
    mo.max_input_size = 64 << 10;
    mo.metrics_only = 1;
    mo.metrics = a->metrics;
    if (a->exit_code == 0 &&
        ifd_http_start(&a->loop, a->server, &mo, &a->metrics_http, &err) < 0) {
      IFD_ERROR("failed to start the metrics service: %s", err.text);
      a->metrics_http = NULL;
      a->exit_code = 1;
    } else if (a->exit_code == 0) {
      IFD_INFO("started Metrics Service at %s:%d", mo.host,
               ifd_http_port(a->metrics_http));
    }
  }
  /* A front end failed to start: close the others and exit non-zero. */
  if (a->exit_code != 0) begin_shutdown(a, a->exit_code);

  if (!a->stopping) ifd_server_start(a->server, on_loaded, a);
  uv_run(&a->loop, UV_RUN_DEFAULT);
  rc = uv_loop_close(&a->loop);
  if (rc != 0)
    IFD_WARN("event loop closed with handles open: %s", uv_strerror(rc));
  ifd_restrict_free(&a->opt.http_restrict);
  ifd_restrict_free(&a->opt.grpc_restrict);
  /* Every connection is closed: nothing uses the TLS contexts any more. */
  ifd_tls_ctx_free(a->http_tls);
  ifd_tls_ctx_free(a->grpc_tls);
  ifd_cuda_mem_fini();
  for (size_t k = 0; k < a->opt.n_backend_cfg; k++)
    free(a->opt.backend_cfg_text[k]);
  IFD_INFO("exiting with status %d", a->exit_code);
  return a->exit_code;
}
