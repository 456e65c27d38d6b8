/*
 * net/options.c - tritonserver's command line: one table of flags, each
 * with a kind that says how its value is read, and the usage text.
 *
 * Flags are spelled as tritonserver spells them and take `--flag=value` or
 * `--flag value`. Flags for endpoints that this build does not serve yet are
 * refused with a clear message rather than silently ignored, except the
 * port/allow flags that every tritonserver command line carries, which are
 * accepted with a warning so that existing command lines keep working.
 */
#include "net/options.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/log.h"
#include "net/http.h"

/* tritonserver's default --repository-poll-secs. */
#define DEFAULT_POLL_SECS 15
/* --loop-spin-us: see core/event.h, "Expected events". */
#define DEFAULT_LOOP_SPIN_US 30

void ifd__net_options_usage(FILE *f) {
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
  size_t off; /* offset in ifd_net_options_t; unused for K_REPO/K_MODE/K_LOAD/
                 K_METRICS_CONFIG/K_NOTYET */
} flag_t;

#define OFF(f) offsetof(ifd_net_options_t, f)
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

int ifd__net_options_bad(const char *name, const char *value, const char *why) {
  fprintf(stderr, "inferd: invalid value '%s' for --%s: %s\n", value, name,
          why);
  ifd__net_options_usage(stderr);
  return -1;
}

/* --backend-config=[<backend>,]<setting>=<value> (tritonserver's form; no
 * backend: every backend). The value may hold '=' and ','. 0 or -1. */
static int parse_backend_config(const char *value, ifd_net_options_t *o) {
  char *t, *eq, *comma;
  ifd_backend_setting_t *b;
  if (o->n_backend_cfg == IFD_MAX_BACKEND_CONFIG) return -1;
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
static int parse_metrics_config(const char *value, ifd_net_options_t *o) {
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
static int check_control(ifd_net_options_t *o) {
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

/* Parses argv into o. Returns 0, 1 for --help, or -1 after printing why. */
int ifd__net_options_parse(int argc, char **argv, ifd_net_options_t *o) {
  int i;
  for (i = 1; i < argc; i++) {
    const char *arg = argv[i], *eq, *value;
    size_t nlen, k;
    const flag_t *f = NULL;
    long long n;

    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) return 1;
    if (strncmp(arg, "--", 2) != 0) {
      fprintf(stderr, "inferd: unexpected argument '%s'\n", arg);
      ifd__net_options_usage(stderr);
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
      ifd__net_options_usage(stderr);
      return -1;
    }
    if (eq != NULL) {
      value = eq + 1;
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      fprintf(stderr, "inferd: option '--%s' needs a value\n", f->name);
      ifd__net_options_usage(stderr);
      return -1;
    }
    switch (f->kind) {
      case K_REPO:
        if (o->n_repos == IFD_MAX_REPOS)
          return ifd__net_options_bad(f->name, value, "too many repositories");
        if (value[0] == '\0')
          return ifd__net_options_bad(f->name, value, "empty path");
        o->repos[o->n_repos++] = value;
        break;
      case K_STR:
        *(const char **)((char *)o + f->off) = value;
        break;
      case K_PORT:
        if (parse_int(value, 0, 65535, &n) < 0)
          return ifd__net_options_bad(f->name, value,
                                      "expected a port number 0-65535");
        *(int *)((char *)o + f->off) = (int)n;
        break;
      case K_BOOL:
        if (parse_bool(value, (int *)((char *)o + f->off)) < 0)
          return ifd__net_options_bad(f->name, value, "expected true or false");
        break;
      case K_INT:
        if (parse_int(value, 0, INT_MAX, &n) < 0)
          return ifd__net_options_bad(f->name, value,
                                      "expected a non-negative integer");
        *(int *)((char *)o + f->off) = (int)n;
        break;
      case K_POS:
        if (parse_int(value, 1, INT_MAX, &n) < 0)
          return ifd__net_options_bad(f->name, value,
                                      "expected a positive integer");
        *(int *)((char *)o + f->off) = (int)n;
        break;
      case K_U64:
        if (parse_int(value, 1, LLONG_MAX, &n) < 0)
          return ifd__net_options_bad(f->name, value,
                                      "expected a positive integer");
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
          return ifd__net_options_bad(f->name, value,
                                      "expected none, explicit or poll");
        break;
      case K_LOAD:
        if (value[0] == '\0')
          return ifd__net_options_bad(f->name, value, "empty model name");
        if (strcmp(value, "*") == 0) {
          o->load_all = 1;
          break;
        }
        if (o->n_load_models == IFD_MAX_LOAD_MODELS)
          return ifd__net_options_bad(f->name, value, "too many models");
        o->load_models[o->n_load_models++] = value;
        break;
      case K_BACKEND_CONFIG:
        if (parse_backend_config(value, o) < 0)
          return ifd__net_options_bad(f->name, value,
                                      "expected [<backend>,]<setting>=<value>");
        break;
      case K_METRICS_CONFIG:
        if (parse_metrics_config(value, o) < 0) {
          ifd__net_options_usage(stderr);
          return -1;
        }
        break;
      case K_UINT:
        if (parse_int(value, 0, UINT_MAX, &n) < 0)
          return ifd__net_options_bad(f->name, value,
                                      "expected a non-negative integer");
        *(unsigned *)((char *)o + f->off) = (unsigned)n;
        break;
      case K_U64Z:
        if (parse_int(value, 0, LLONG_MAX, &n) < 0)
          return ifd__net_options_bad(f->name, value,
                                      "expected a non-negative integer");
        *(uint64_t *)((char *)o + f->off) = (uint64_t)n;
        break;
      case K_SECS_MS:
        if (parse_int(value, 0, LLONG_MAX / 1000, &n) < 0)
          return ifd__net_options_bad(f->name, value,
                                      "expected a non-negative integer");
        *(uint64_t *)((char *)o + f->off) = (uint64_t)n * 1000u;
        break;
      case K_RESTRICT: {
        int grpc = strncmp(f->name, "grpc", 4) == 0;
        ifd_errmsg_t e;
        ifd_errclear(&e);
        if (ifd_restrict_add((ifd_restrict_t *)((char *)o + f->off), value,
                             grpc ? "triton-grpc-protocol-" : "",
                             grpc ? "protocol" : "API", &e) != 0)
          return ifd__net_options_bad(f->name, value, e.text);
        break;
      }
      case K_CUDA_POOL: {
        ifd_errmsg_t e;
        ifd_errclear(&e);
        if (ifd_cuda_mem_parse_pool(&o->cuda_mem, value, &e) < 0)
          return ifd__net_options_bad(f->name, value, e.text);
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
    ifd__net_options_usage(stderr);
    return -1;
  }
  return check_control(o);
}

static void default_backend_dir(ifd_net_options_t *o) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  char *slash;
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

void ifd__net_options_init(ifd_net_options_t *o) {
  memset(o, 0, sizeof(*o));
  o->http_port = 8000;
  o->allow_http = 1;
  o->http_address = "0.0.0.0";
  o->http_max_input_size = IFD_HTTP_DEFAULT_MAX_INPUT_SIZE;
  o->http_json_offload_bytes = IFD_HTTP_DEFAULT_JSON_OFFLOAD_BYTES;
  o->http_max_header_bytes = IFD_HTTP_DEFAULT_MAX_HEADER_BYTES;
  o->http_max_headers = IFD_HTTP_DEFAULT_MAX_HEADERS;
  o->http_max_pipeline = IFD_HTTP_DEFAULT_MAX_PIPELINE;
  o->http_header_timeout_secs = IFD_HTTP_DEFAULT_HEADER_TIMEOUT_SECS;
  o->http_body_timeout_secs = IFD_HTTP_DEFAULT_BODY_TIMEOUT_SECS;
  o->http_idle_timeout_secs = IFD_HTTP_DEFAULT_IDLE_TIMEOUT_SECS;
  o->max_connections = (int)IFD_HTTP_DEFAULT_MAX_CONNECTIONS;
  o->loop_spin_us = DEFAULT_LOOP_SPIN_US;
  o->grpc_port = 8001;
  o->allow_grpc = 1;
  o->grpc_address = "0.0.0.0";
  o->grpc_max_message_size = IFD_GRPC_DEFAULT_MAX_MESSAGE_SIZE;
  o->grpc_stream_buffer_bytes = IFD_GRPC_DEFAULT_STREAM_BUFFER_BYTES;
  ifd_grpc_opts_defaults(&o->grpc_lim);
  o->grpc_use_ssl_mutual = -1;
  o->metrics_port = 8002;
  o->allow_metrics = 1;
  o->metrics_interval_ms = 2000;
  o->allow_gpu_metrics = 1;
  ifd_cuda_mem_opts_default(&o->cuda_mem);
  o->exit_on_error = 1;
  o->strict_readiness = 1;
  o->exit_timeout_secs = 30;
  o->poll_secs = DEFAULT_POLL_SECS;
  o->log_info = o->log_warning = o->log_error = 1;
  default_backend_dir(o);
}

void ifd__net_options_free(ifd_net_options_t *o) {
  ifd_restrict_free(&o->http_restrict);
  ifd_restrict_free(&o->grpc_restrict);
  for (size_t k = 0; k < o->n_backend_cfg; k++) free(o->backend_cfg_text[k]);
}
