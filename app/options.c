/*
 * app/options.c - tritonserver's command line: one table of flags, each
 * with a kind that says how its value is read, the parse loop, and the
 * defaults. Single values are read by app/options_values.c, the setting
 * languages by app/options_settings.c, the checks once every flag is read
 * are app/options_check.c's, the usage text app/options_usage.c's.
 *
 * Every flag of tritonserver 2.47 (and the few later ones a newer command
 * line may carry) is accepted, spelled and checked as tritonserver does:
 * `--flag=value` or `--flag value`, a unique prefix of a name (getopt_long),
 * booleans true/on/1 and false/off/0. Each flag then either takes effect,
 * or has no effect by design (one info line at start says why), or needs a
 * feature inferd lacks and whose absence would change results: the server
 * then refuses to start, naming the flag. docs/flags.md lists which is
 * which; inferd's own flags (connection limits) follow tritonserver's.
 */
#include "app/options.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/bufpool.h"
#include "net/forward.h"
#include "app/options_internal.h"
#include "frontend/frontend.h"

/* tritonserver's default --repository-poll-secs. */
#define DEFAULT_POLL_SECS 15
/* --loop-spin-us: see base/event.h, "Expected events". */
#define DEFAULT_LOOP_SPIN_US 30
/* --overload-retry-after-secs: a queue that is full now has usually
 * drained within a second or so at inference speeds. */
#define DEFAULT_RETRY_AFTER_SECS 1

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
  K_BACKEND_CONFIG, /* --backend-config [<backend>,]<setting>=<value> */
  K_UINT,           /* unsigned, 0 allowed */
  K_U64Z,           /* uint64_t, 0 allowed */
  K_SECS_MS,        /* seconds into a uint64_t of ms, 0 allowed */
  K_RESTRICT,       /* ifd_restrict_t rule (HTTP or gRPC by the name) */
  K_CUDA_POOL,      /* --cuda-memory-pool-byte-size <device>:<bytes> */
  K_SWITCH,         /* no value (getopt's no_argument): sets the int to 1 */
  K_NONEMPTY,       /* a string that must not be empty */
  K_LOG_VERBOSE,    /* an integer, or true (1) / false (0) */
  K_MS_FLOAT,       /* milliseconds as a float, into an int (rounded) */
  K_FLOAT,          /* a double, into a double */
  K_ANYINT,         /* an int (negative allowed), into an int */
  K_RATE_LIMIT,     /* off | execution_count */
  K_TRACE_LEVEL,    /* --trace-level OFF|TIMESTAMPS|TENSORS (repeatable) */
  K_TRACE_CONFIG,   /* --trace-config [<mode>,]<setting>=<value> */
  K_TRACE_OLD,      /* --trace-file/-rate/-count/-log-frequency: `why`
                       names the --trace-config setting it sets */
  K_CACHE_CONFIG,   /* --cache-config <cache>,<setting>=<value> */
  K_CACHE_SIZE,     /* --response-cache-byte-size <int64> */
  K_IGNORED,        /* checked as `check` says, then no effect (`why`) */
  K_REFUSED,        /* checked as `check` says, then refused (`why`) */
  K_REGEX,          /* a POSIX ERE compiled into a struct ifd_app_fwd_pattern */
  K_COMPRESSION,    /* none | low | medium | high into an int 0-3 */
  K_HOST_POLICY,    /* --host-policy <policy>,<setting>=<value> */
  K_PORT_RANGE,     /* --sagemaker-safe-port-range <int>-<int> */
  K_GPU_LIMIT,      /* --model-load-gpu-limit <device>:<fraction> */
  K_RL_RESOURCE,    /* --rate-limit-resource <name>:<count>[:<device>] */
  K_OVERLOAD,       /* 503 or 429 into an int */
  K_UNIX_MODE,      /* octal permission bits into an ifd_unix_perm_t */
  K_UNIX_OWNER,     /* a user name or number into an ifd_unix_perm_t */
  K_UNIX_GROUP,     /* a group name or number into an ifd_unix_perm_t */
};

/* How a K_IGNORED / K_REFUSED flag's value is checked, as tritonserver
 * checks it. */
enum check {
  C_STR,
  C_INT,
  C_BOOL,
  C_PAIR_INT,   /* <int>:<int> (cuda-virtual-address-size) */
  C_PAIR_FLOAT, /* <int>:<float> (model-load-gpu-limit) */
  C_RESOURCE,   /* <name>:<count>[:<device>] (rate-limit-resource) */
};

typedef struct flag {
  const char *name;
  enum kind kind;
  size_t off;       /* offset in ifd_app_options_t, for kinds that store */
  enum check check; /* K_IGNORED, K_REFUSED */
  const char *why;  /* K_IGNORED, K_REFUSED: why, for the log line */
} flag_t;

#define OFF(f) offsetof(ifd_app_options_t, f)
/* A flag accepted without effect, and a flag refused. */
#define IGN(n, c, w) \
  { n, K_IGNORED, 0, c, w }
#define REF(n, c, w) \
  { n, K_REFUSED, 0, c, w }

static const char why_threads[] =
    "inferd serves every connection from one event loop";

static const flag_t flags[] = {
    /* Server. */
    {"id", K_STR, OFF(server_id), 0, NULL},
    /* tritonserver takes any int here and uses max(0, N). */
    {"exit-timeout-secs", K_ANYINT, OFF(exit_timeout_secs), 0, NULL},
    /* Model repository. */
    {"model-repository", K_REPO, 0, 0, NULL},
    {"model-store", K_REPO, 0, 0, NULL},
    {"exit-on-error", K_BOOL, OFF(exit_on_error), 0, NULL},
    {"disable-auto-complete-config", K_SWITCH, OFF(disable_auto_complete), 0,
     NULL},
    {"strict-model-config", K_BOOL, OFF(strict_config), 0, NULL},
    {"strict-readiness", K_BOOL, OFF(strict_readiness), 0, NULL},
    {"model-control-mode", K_MODE, 0, 0, NULL},
    {"repository-poll-secs", K_ANYINT, OFF(poll_secs), 0, NULL},
    {"load-model", K_LOAD, 0, 0, NULL},
    {"model-config-name", K_NONEMPTY, OFF(model_config_name), 0, NULL},
    {"model-load-thread-count", K_ANYINT, OFF(model_load_threads), 0, NULL},
    {"model-load-retry-count", K_ANYINT, OFF(model_load_retry_count), 0, NULL},
    {"model-namespacing", K_BOOL, OFF(model_namespacing), 0, NULL},
    IGN("enable-peer-access", C_BOOL,
        "inferd does not enable CUDA peer access between GPUs; tensors "
        "moving between GPUs are staged through host memory"),
    /* HTTP. */
    {"allow-http", K_BOOL, OFF(allow_http), 0, NULL},
    {"http-address", K_STR, OFF(http_address), 0, NULL},
    {"http-port", K_PORT, OFF(http_port), 0, NULL},
    {"reuse-http-port", K_BOOL, OFF(reuse_http_port), 0, NULL},
    {"http-header-forward-pattern", K_REGEX, OFF(http_fwd), 0, NULL},
    IGN("http-thread-count", C_INT, why_threads),
    {"http-restricted-api", K_RESTRICT, OFF(http_restrict), 0, NULL},
    {"http-max-input-size", K_U64, OFF(http_max_input_size), 0, NULL},
    {"http-body-prealloc-size", K_U64Z, OFF(http_body_prealloc), 0, NULL},
    {"http-json-offload-bytes", K_U64, OFF(http_json_offload_bytes), 0, NULL},
    {"http-max-header-bytes", K_POS, OFF(http_max_header_bytes), 0, NULL},
    {"http-max-headers", K_POS, OFF(http_max_headers), 0, NULL},
    {"http-max-pipeline", K_POS, OFF(http_max_pipeline), 0, NULL},
    {"http-header-timeout-secs", K_INT, OFF(http_header_timeout_secs), 0, NULL},
    {"http-body-timeout-secs", K_INT, OFF(http_body_timeout_secs), 0, NULL},
    {"http-idle-timeout-secs", K_INT, OFF(http_idle_timeout_secs), 0, NULL},
    {"http-ssl-cert", K_STR, OFF(http_ssl_cert), 0, NULL},
    {"http-ssl-key", K_STR, OFF(http_ssl_key), 0, NULL},
    {"http-unix-socket-mode", K_UNIX_MODE, OFF(http_unix), 0, NULL},
    {"http-unix-socket-owner", K_UNIX_OWNER, OFF(http_unix), 0, NULL},
    {"http-unix-socket-group", K_UNIX_GROUP, OFF(http_unix), 0, NULL},
    {"max-connections", K_POS, OFF(max_connections), 0, NULL},
    {"loop-spin-us", K_INT, OFF(loop_spin_us), 0, NULL},
    /* Load shedding. */
    {"overload-status", K_OVERLOAD, OFF(overload_status), 0, NULL},
    {"overload-retry-after-secs", K_INT, OFF(retry_after_secs), 0, NULL},
    {"max-inflight-requests", K_UINT, OFF(max_inflight_requests), 0, NULL},
    /* gRPC. */
    {"allow-grpc", K_BOOL, OFF(allow_grpc), 0, NULL},
    {"grpc-address", K_STR, OFF(grpc_address), 0, NULL},
    {"grpc-port", K_PORT, OFF(grpc_port), 0, NULL},
    {"reuse-grpc-port", K_BOOL, OFF(reuse_grpc_port), 0, NULL},
    {"grpc-unix-socket-mode", K_UNIX_MODE, OFF(grpc_unix), 0, NULL},
    {"grpc-unix-socket-owner", K_UNIX_OWNER, OFF(grpc_unix), 0, NULL},
    {"grpc-unix-socket-group", K_UNIX_GROUP, OFF(grpc_unix), 0, NULL},
    {"grpc-header-forward-pattern", K_REGEX, OFF(grpc_fwd), 0, NULL},
    IGN("grpc-infer-allocation-pool-size", C_INT,
        "inferd keeps its own per-loop cache of request objects"),
    IGN("grpc-infer-thread-count", C_INT, why_threads),
    IGN("grpc-max-response-pool-size", C_INT,
        "responses are bounded by --grpc-stream-buffer-bytes instead"),
    {"grpc-use-ssl", K_BOOL, OFF(grpc_use_ssl), 0, NULL},
    {"grpc-use-ssl-mutual", K_BOOL, OFF(grpc_use_ssl_mutual), 0, NULL},
    {"grpc-server-cert", K_STR, OFF(grpc_server_cert), 0, NULL},
    {"grpc-server-key", K_STR, OFF(grpc_server_key), 0, NULL},
    {"grpc-root-cert", K_STR, OFF(grpc_root_cert), 0, NULL},
    {"grpc-infer-response-compression-level", K_COMPRESSION,
     OFF(grpc_lim.infer_compression_level), 0, NULL},
    {"grpc-keepalive-time", K_U64Z, OFF(grpc_lim.keepalive_time_ms), 0, NULL},
    {"grpc-keepalive-timeout", K_U64Z, OFF(grpc_lim.keepalive_timeout_ms), 0,
     NULL},
    {"grpc-keepalive-permit-without-calls", K_BOOL,
     OFF(grpc_lim.keepalive_permit_without_calls), 0, NULL},
    {"grpc-http2-max-pings-without-data", K_UINT,
     OFF(grpc_lim.max_pings_without_data), 0, NULL},
    {"grpc-http2-min-recv-ping-interval-without-data", K_U64Z,
     OFF(grpc_lim.min_recv_ping_interval_ms), 0, NULL},
    {"grpc-http2-max-ping-strikes", K_UINT, OFF(grpc_lim.max_ping_strikes), 0,
     NULL},
    {"grpc-max-connection-age", K_U64Z, OFF(grpc_lim.max_connection_age_ms), 0,
     NULL},
    {"grpc-max-connection-age-grace", K_U64Z,
     OFF(grpc_lim.max_connection_age_grace_ms), 0, NULL},
    {"grpc-restricted-protocol", K_RESTRICT, OFF(grpc_restrict), 0, NULL},
    {"grpc-max-message-size", K_U64, OFF(grpc_max_message_size), 0, NULL},
    {"grpc-stream-buffer-bytes", K_U64, OFF(grpc_stream_buffer_bytes), 0, NULL},
    {"grpc-max-concurrent-streams", K_UINT,
     OFF(grpc_lim.max_concurrent_streams), 0, NULL},
    {"grpc-max-header-list-size", K_UINT, OFF(grpc_lim.max_header_list_size), 0,
     NULL},
    {"grpc-idle-timeout-secs", K_SECS_MS, OFF(grpc_lim.idle_timeout_ms), 0,
     NULL},
    {"grpc-max-resets-per-second", K_UINT, OFF(grpc_lim.max_resets_per_second),
     0, NULL},
    {"grpc-max-connection-buffer-bytes", K_U64,
     OFF(grpc_lim.max_connection_buffer), 0, NULL},
    /* Logging. */
    {"log-verbose", K_LOG_VERBOSE, OFF(log_verbose), 0, NULL},
    {"log-info", K_BOOL, OFF(log_info), 0, NULL},
    {"log-warning", K_BOOL, OFF(log_warning), 0, NULL},
    {"log-error", K_BOOL, OFF(log_error), 0, NULL},
    {"log-file", K_STR, OFF(log_file), 0, NULL},
    {"log-format", K_STR, OFF(log_format), 0, NULL},
    /* SageMaker and Vertex AI (frontend/http_cloud.c). */
    {"allow-sagemaker", K_BOOL, OFF(allow_sagemaker), 0, NULL},
    {"sagemaker-port", K_PORT, OFF(sagemaker_port), 0, NULL},
    {"sagemaker-safe-port-range", K_PORT_RANGE, 0, 0, NULL},
    IGN("sagemaker-thread-count", C_INT, why_threads),
    {"allow-vertex-ai", K_BOOL, OFF(allow_vertex_ai), 0, NULL},
    {"vertex-ai-port", K_PORT, OFF(vertex_ai_port), 0, NULL},
    IGN("vertex-ai-thread-count", C_INT, why_threads),
    {"vertex-ai-default-model", K_STR, OFF(vertex_ai_default_model), 0, NULL},
    /* Metrics. */
    {"allow-metrics", K_BOOL, OFF(allow_metrics), 0, NULL},
    {"allow-gpu-metrics", K_BOOL, OFF(allow_gpu_metrics), 0, NULL},
    {"allow-cpu-metrics", K_BOOL, OFF(allow_cpu_metrics), 0, NULL},
    {"metrics-address", K_STR, OFF(metrics_address), 0, NULL},
    {"metrics-port", K_PORT, OFF(metrics_port), 0, NULL},
    {"metrics-unix-socket-mode", K_UNIX_MODE, OFF(metrics_unix), 0, NULL},
    {"metrics-unix-socket-owner", K_UNIX_OWNER, OFF(metrics_unix), 0, NULL},
    {"metrics-unix-socket-group", K_UNIX_GROUP, OFF(metrics_unix), 0, NULL},
    {"metrics-interval-ms", K_MS_FLOAT, OFF(metrics_interval_ms), 0, NULL},
    {"metrics-config", K_METRICS_CONFIG, 0, 0, NULL},
    /* Tracing (mode triton; core/trace.h). The deprecated flags set the
     * same settings as --trace-config. */
    {"trace-config", K_TRACE_CONFIG, 0, 0, NULL},
    {"trace-level", K_TRACE_LEVEL, 0, 0, NULL},
    {"trace-file", K_TRACE_OLD, 0, 0, "file"},
    {"trace-rate", K_TRACE_OLD, 0, 0, "rate"},
    {"trace-count", K_TRACE_OLD, 0, 0, "count"},
    {"trace-log-frequency", K_TRACE_OLD, 0, 0, "log-frequency"},
    /* Backends and repository agents. */
    {"backend-directory", K_STR, OFF(backend_dir), 0, NULL},
    {"backend-config", K_BACKEND_CONFIG, 0, 0, NULL},
    {"repoagent-directory", K_STR, OFF(repoagent_dir), 0, NULL},
    /* Response cache. */
    {"cache-config", K_CACHE_CONFIG, 0, 0, NULL},
    {"cache-directory", K_STR, OFF(cache_dir), 0, NULL},
    {"response-cache-byte-size", K_CACHE_SIZE, 0, 0, NULL},
    /* Rate limiter. */
    {"rate-limit", K_RATE_LIMIT, 0, 0, NULL},
    {"rate-limit-resource", K_RL_RESOURCE, 0, C_RESOURCE, NULL},
    /* Memory and devices. */
    {"pinned-memory-pool-byte-size", K_U64Z, OFF(cuda_mem.pinned_bytes), 0,
     NULL},
    {"buffer-pool-byte-size", K_U64Z, OFF(buffer_pool_bytes), 0, NULL},
    {"cuda-memory-pool-byte-size", K_CUDA_POOL, 0, 0, NULL},
    IGN("cuda-virtual-address-size", C_PAIR_INT,
        "implicit state buffers are not grown through CUDA virtual memory"),
    {"min-supported-compute-capability", K_FLOAT, OFF(min_compute_capability),
     0, NULL},
    IGN("buffer-manager-thread-count", C_INT,
        "tensor copies run on the instance threads and the loop"),
    {"host-policy", K_HOST_POLICY, 0, 0, NULL},
    {"model-load-gpu-limit", K_GPU_LIMIT, 0, 0, NULL},
};

/* Checks a K_IGNORED / K_REFUSED value; returns 0 or -1 after printing
 * tritonserver's message. */
static int check_value(const flag_t *f, const char *v) {
  long long n;
  int b;
  switch (f->check) {
    case C_STR:
      return 0;
    case C_INT:
      if (ifd__opt_parse_int(v, INT_MIN, INT_MAX, &n) == 0) return 0;
      return ifd__app_options_bad(f->name, v, "expected an integer");
    case C_BOOL:
      if (ifd__opt_parse_bool(v, &b) == 0) return 0;
      return ifd__app_options_bad(f->name, v, "expected true or false");
    case C_PAIR_INT:
      if (ifd__opt_check_pair(v, ":", 0) == 0) return 0;
      return ifd__app_options_bad(f->name, v, "expected <device id>:<integer>");
    case C_PAIR_FLOAT:
      if (ifd__opt_check_pair(v, ":", 1) == 0) return 0;
      return ifd__app_options_bad(f->name, v,
                                  "expected <device id>:<fraction>");
    case C_RESOURCE:
      if (ifd__opt_check_resource(v) == 0) return 0;
      return ifd__app_options_bad(f->name, v,
                                  "--rate-limit-resource option format is "
                                  "'<resource_name>:<count>:<device>' or "
                                  "'<resource_name>:<count>'");
  }
  return 0;
}

/* --*-unix-socket-mode (octal, e.g. 0660), -owner (a user name or
 * number), -group (a group name or number), into `p`. Names are looked up
 * now, at start-up. 0 or -1 after printing why. */
static int parse_unix_perm(const flag_t *f, const char *v, ifd_unix_perm_t *p) {
  char *end;
  long n;

  errno = 0;
  n = strtol(v, &end, f->kind == K_UNIX_MODE ? 8 : 10);
  if (f->kind == K_UNIX_MODE) {
    if (errno != 0 || end == v || *end != '\0' || n < 0 || n > 07777)
      return ifd__app_options_bad(f->name, v,
                                  "expected octal permission bits, e.g. 0660");
    p->mode = (int)n;
    return 0;
  }
  if (errno == 0 && end != v && *end == '\0') {
    if (n < 0 || n > INT_MAX)
      return ifd__app_options_bad(f->name, v, "expected a name or an id >= 0");
  } else if (f->kind == K_UNIX_OWNER) {
    const struct passwd *pw = getpwnam(v);
    if (pw == NULL || v[0] == '\0')
      return ifd__app_options_bad(f->name, v, "no such user");
    n = (long)pw->pw_uid;
  } else {
    const struct group *gr = getgrnam(v);
    if (gr == NULL || v[0] == '\0')
      return ifd__app_options_bad(f->name, v, "no such group");
    n = (long)gr->gr_gid;
  }
  if (f->kind == K_UNIX_OWNER)
    p->uid = n;
  else
    p->gid = n;
  return 0;
}

/* Finds the flag named by the `nlen` bytes of `arg`: an exact name, else
 * a unique prefix of one, as getopt_long takes them. NULL after printing
 * why. */
static const flag_t *find_flag(const char *arg, size_t nlen) {
  const flag_t *f = NULL;
  size_t k, hits = 0;
  for (k = 0; k < sizeof(flags) / sizeof(flags[0]); k++) {
    if (strncmp(flags[k].name, arg, nlen) != 0) continue;
    if (flags[k].name[nlen] == '\0') return &flags[k];
    f = &flags[k];
    hits++;
  }
  if (hits == 1) return f;
  fprintf(stderr, "inferd: %s option '--%.*s'\n",
          hits > 1 ? "ambiguous" : "unknown", (int)nlen, arg);
  ifd__app_options_usage(stderr);
  return NULL;
}

/* tritonserver's defaults from the environment, before any flag: under
 * AIP_MODE=PREDICTION Vertex AI is on and HTTP and gRPC off; the Vertex AI
 * port is AIP_HTTP_PORT, else 8080. Returns 0 or -1 after printing why. */
static int env_defaults(ifd_app_options_t *o) {
  const char *aip = getenv("AIP_MODE"), *port = getenv("AIP_HTTP_PORT");
  long long n;

  if (o->allow_vertex_ai != -1) return 0; /* parsed once already */
  o->allow_vertex_ai = aip != NULL && strcmp(aip, "PREDICTION") == 0;
  if (o->allow_vertex_ai) o->allow_http = o->allow_grpc = 0;
  if (port != NULL) {
    if (ifd__opt_parse_int(port, 0, 65535, &n) < 0) {
      fprintf(stderr,
              "inferd: Bad environment variable AIP_HTTP_PORT='%s': expected "
              "a port number 0-65535\n",
              port);
      return -1;
    }
    o->vertex_ai_port = (int)n;
  }
  return 0;
}

/* --sagemaker-safe-port-range <int>-<int>, split at the first '-' as
 * tritonserver splits it. */
static int parse_range(const char *v, ifd_app_options_t *o) {
  const char *dash = strchr(v, '-');
  char first[32];
  long long lo, hi;

  if (dash == NULL || (size_t)(dash - v) >= sizeof(first))
    return ifd__app_options_bad("sagemaker-safe-port-range", v,
                                "expected <integer>-<integer>");
  memcpy(first, v, (size_t)(dash - v));
  first[dash - v] = '\0';
  if (ifd__opt_parse_int(first, INT_MIN, INT_MAX, &lo) < 0 ||
      ifd__opt_parse_int(dash + 1, INT_MIN, INT_MAX, &hi) < 0)
    return ifd__app_options_bad("sagemaker-safe-port-range", v,
                                "expected <integer>-<integer>");
  o->sagemaker_range_set = 1;
  o->sagemaker_range_lo = (int)lo;
  o->sagemaker_range_hi = (int)hi;
  return 0;
}

int ifd__app_options_parse(int argc, char **argv, ifd_app_options_t *o) {
  int i, rc;
  if (env_defaults(o) < 0) return -1;
  for (i = 1; i < argc; i++) {
    const char *arg = argv[i], *eq, *value;
    size_t nlen;
    const flag_t *f;
    long long n;
    double d;

    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) return 1;
    if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
      fprintf(stderr, "inferd: Unexpected argument: %s\n", arg);
      ifd__app_options_usage(stderr);
      return -1;
    }
    arg += 2;
    eq = strchr(arg, '=');
    nlen = eq ? (size_t)(eq - arg) : strlen(arg);
    f = find_flag(arg, nlen);
    if (f == NULL) return -1;
    if (f->kind == K_SWITCH) {
      if (eq != NULL) {
        fprintf(stderr, "inferd: option '--%s' doesn't allow an argument\n",
                f->name);
        ifd__app_options_usage(stderr);
        return -1;
      }
      *(int *)((char *)o + f->off) = 1;
      continue;
    }
    if (eq != NULL) {
      value = eq + 1;
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      fprintf(stderr, "inferd: option '--%s' requires an argument\n", f->name);
      ifd__app_options_usage(stderr);
      return -1;
    }
    switch (f->kind) {
      case K_REPO:
        if (o->n_repos == IFD_MAX_REPOS)
          return ifd__app_options_bad(f->name, value, "too many repositories");
        if (value[0] == '\0')
          return ifd__app_options_bad(f->name, value, "empty path");
        o->repos[o->n_repos++] = value;
        break;
      case K_STR:
        *(const char **)((char *)o + f->off) = value;
        break;
      case K_NONEMPTY:
        if (value[0] == '\0')
          return ifd__app_options_bad(f->name, value, "empty argument");
        *(const char **)((char *)o + f->off) = value;
        break;
      case K_PORT:
        if (ifd__opt_parse_int(value, 0, 65535, &n) < 0)
          return ifd__app_options_bad(f->name, value,
                                      "expected a port number 0-65535");
        *(int *)((char *)o + f->off) = (int)n;
        break;
      case K_BOOL:
        if (ifd__opt_parse_bool(value, (int *)((char *)o + f->off)) < 0)
          return ifd__app_options_bad(f->name, value,
                                      "invalid value for bool option: "
                                      "expected true or false");
        break;
      case K_INT:
        if (ifd__opt_parse_int(value, 0, INT_MAX, &n) < 0)
          return ifd__app_options_bad(f->name, value,
                                      "expected a non-negative integer");
        *(int *)((char *)o + f->off) = (int)n;
        break;
      case K_ANYINT:
        if (ifd__opt_parse_int(value, INT_MIN, INT_MAX, &n) < 0)
          return ifd__app_options_bad(f->name, value, "expected an integer");
        *(int *)((char *)o + f->off) = (int)n;
        break;
      case K_LOG_VERBOSE:
        /* tritonserver's ParseIntBoolOption. */
        if (strcasecmp(value, "true") == 0)
          n = 1;
        else if (strcasecmp(value, "false") == 0)
          n = 0;
        else if (ifd__opt_parse_int(value, INT_MIN, INT_MAX, &n) < 0)
          return ifd__app_options_bad(f->name, value,
                                      "expected an integer, true or false");
        *(int *)((char *)o + f->off) = n > 0 ? (int)n : 0;
        break;
      case K_MS_FLOAT:
        if (ifd__opt_parse_double(value, &d) < 0 || !(d >= 0) || d > INT_MAX)
          return ifd__app_options_bad(f->name, value,
                                      "expected a non-negative number");
        *(int *)((char *)o + f->off) = d > 0 && d < 1 ? 1 : (int)(d + 0.5);
        break;
      case K_FLOAT:
        if (ifd__opt_parse_double(value, &d) < 0)
          return ifd__app_options_bad(f->name, value, "expected a number");
        *(double *)((char *)o + f->off) = d;
        break;
      case K_POS:
        if (ifd__opt_parse_int(value, 1, INT_MAX, &n) < 0)
          return ifd__app_options_bad(f->name, value,
                                      "expected a positive integer");
        *(int *)((char *)o + f->off) = (int)n;
        break;
      case K_U64:
        if (ifd__opt_parse_int(value, 1, LLONG_MAX, &n) < 0)
          return ifd__app_options_bad(f->name, value,
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
          return ifd__app_options_bad(f->name, value,
                                      "invalid argument for "
                                      "--model-control-mode (none, explicit "
                                      "or poll)");
        break;
      case K_LOAD:
        if (value[0] == '\0')
          return ifd__app_options_bad(f->name, value, "empty model name");
        if (strcmp(value, "*") == 0) {
          o->load_all = 1;
          break;
        }
        if (o->n_load_models == IFD_MAX_LOAD_MODELS)
          return ifd__app_options_bad(f->name, value, "too many models");
        o->load_models[o->n_load_models++] = value;
        break;
      case K_BACKEND_CONFIG:
        if (ifd__opt_parse_backend_config(value, o) < 0)
          return ifd__app_options_bad(f->name, value,
                                      "expected [<backend>,]<setting>=<value>");
        break;
      case K_METRICS_CONFIG:
        if (ifd__opt_parse_metrics_config(value, o) < 0) {
          ifd__app_options_usage(stderr);
          return -1;
        }
        break;
      case K_UINT:
        if (ifd__opt_parse_int(value, 0, UINT_MAX, &n) < 0)
          return ifd__app_options_bad(f->name, value,
                                      "expected a non-negative integer");
        *(unsigned *)((char *)o + f->off) = (unsigned)n;
        break;
      case K_U64Z:
        if (ifd__opt_parse_int(value, 0, LLONG_MAX, &n) < 0)
          return ifd__app_options_bad(f->name, value,
                                      "expected a non-negative integer");
        *(uint64_t *)((char *)o + f->off) = (uint64_t)n;
        break;
      case K_SECS_MS:
        if (ifd__opt_parse_int(value, 0, LLONG_MAX / 1000, &n) < 0)
          return ifd__app_options_bad(f->name, value,
                                      "expected a non-negative integer");
        *(uint64_t *)((char *)o + f->off) = (uint64_t)n * 1000u;
        break;
      case K_RESTRICT: {
        int grpc = strncmp(f->name, "grpc", 4) == 0;
        ifd_errmsg_t e;
        ifd_errclear(&e);
        if (ifd_restrict_add((ifd_restrict_t *)((char *)o + f->off), value,
                             grpc ? "triton-grpc-protocol-" : "",
                             grpc ? "protocol" : "api", &e) != 0)
          return ifd__app_options_bad(f->name, value, e.text);
        break;
      }
      case K_CUDA_POOL: {
        ifd_errmsg_t e;
        ifd_errclear(&e);
        if (ifd_cuda_mem_parse_pool(&o->cuda_mem, value, &e) < 0)
          return ifd__app_options_bad(f->name, value, e.text);
        break;
      }
      case K_RATE_LIMIT:
        if (strcasecmp(value, "off") == 0)
          o->rate_limit_on = 0;
        else if (strcasecmp(value, "execution_count") == 0)
          o->rate_limit_on = 1;
        else
          return ifd__app_options_bad(f->name, value,
                                      "invalid argument for --rate-limit "
                                      "(off or execution_count)");
        break;
      case K_TRACE_LEVEL:
        rc = ifd__opt_trace_level(value);
        if (rc < 0)
          return ifd__app_options_bad(f->name, value,
                                      "invalid value for trace level option");
        ifd__opt_add_trace_level(o, rc);
        break;
      case K_TRACE_CONFIG:
        if (ifd__opt_parse_trace_config(value, o) < 0) return -1;
        break;
      case K_TRACE_OLD:
        if (ifd__opt_trace_setting(f->name, value, f->why, strlen(f->why),
                                   value, o) < 0)
          return -1;
        break;
      case K_CACHE_CONFIG:
        if (ifd__opt_check_cache_config(value) < 0 ||
            ifd__opt_add_cache_config(value, o) < 0)
          return -1;
        o->cache_config = 1;
        break;
      case K_CACHE_SIZE:
        if (ifd__opt_parse_int(value, LLONG_MIN, LLONG_MAX, &n) < 0)
          return ifd__app_options_bad(f->name, value, "expected an integer");
        /* tritonserver: deprecated, the same as local,size=<n>. */
        fprintf(stderr,
                "Warning: '--response-cache-byte-size' has been deprecated! "
                "This will default to the 'local' cache implementation with "
                "the provided byte size for its config. Please use "
                "'--cache-config' instead. The equivalent --cache-config CLI "
                "args would be: '--cache-config=local,size=<byte_size>'\n");
        snprintf(o->cache_size_text, sizeof(o->cache_size_text), "%lld",
                 (long long)n);
        o->cache_byte_size = 1;
        break;
      case K_PORT_RANGE:
        if (parse_range(value, o) < 0) return -1;
        break;
      case K_IGNORED:
        if (check_value(f, value) < 0) return -1;
        ifd__opt_no_effect(o, f->name, f->why);
        break;
      case K_REFUSED:
        if (check_value(f, value) < 0) return -1;
        if (o->refused == NULL) {
          o->refused = f->name;
          o->refused_why = f->why;
        }
        break;
      case K_REGEX: {
        struct ifd_app_fwd_pattern *fp =
            (struct ifd_app_fwd_pattern *)((char *)o + f->off);
        ifd_errmsg_t e;
        ifd_errclear(&e);
        if (fp->set) ifd__fwd_re_free(&fp->re); /* the last one given wins */
        fp->set = 0;
        if (ifd__fwd_compile(&fp->re, value, &e) != 0)
          return ifd__app_options_bad(f->name, value, e.text);
        fp->set = 1;
        break;
      }
      case K_COMPRESSION: {
        static const char *const levels[] = {"none", "low", "medium", "high"};
        int l;
        for (l = 0; l < 4 && strcasecmp(value, levels[l]) != 0; l++) {
        }
        if (l == 4)
          return ifd__app_options_bad(
              f->name, value,
              "invalid argument for --grpc_infer_response_compression_level "
              "(none, low, medium or high)");
        *(int *)((char *)o + f->off) = l;
        break;
      }
      case K_GPU_LIMIT: {
        /* tritonserver's checks and texts (ParsePairOption, then the
         * device and the fraction). */
        char *end;
        long dev;
        double frac;
        if (ifd__opt_check_pair(value, ":", 1) != 0)
          return ifd__app_options_bad(f->name, value,
                                      "expected <device id>:<fraction>");
        dev = strtol(value, &end, 10);
        frac = strtod(end + 1, NULL);
        if (dev < 0) {
          fprintf(stderr,
                  "inferd: --model-load-gpu-limit expects device ID >= 0, "
                  "got %ld\n",
                  dev);
          return -1;
        }
        if (dev >= 64) {
          fprintf(stderr,
                  "inferd: --model-load-gpu-limit: device ID %ld is past the "
                  "64 GPUs inferd addresses\n",
                  dev);
          return -1;
        }
        if (!(frac >= 0.0 && frac <= 1.0)) {
          fprintf(stderr,
                  "inferd: --model-load-gpu-limit expects limit fraction to be "
                  "in range [0.0, 1.0], got %g\n",
                  frac);
          return -1;
        }
        o->gpu_limit_set |= 1ull << dev;
        o->gpu_limit[dev] = frac;
        break;
      }
      case K_HOST_POLICY: {
        char *t, *comma, *eq;
        ifd_backend_setting_t *hp;
        if (ifd__opt_check_generic(value, ',', '=') != 0)
          return ifd__app_options_bad(f->name, value,
                                      "--host-policy option format is "
                                      "'<policy name>,<setting>=<value>'");
        if (o->n_host_cfg == IFD_MAX_HOST_POLICY)
          return ifd__app_options_bad(f->name, value, "too many settings");
        t = strdup(value);
        if (t == NULL) return ifd__app_options_bad(f->name, value, "no memory");
        comma = strchr(t, ',');
        eq = strchr(comma + 1, '=');
        *comma = *eq = '\0';
        hp = &o->host_cfg[o->n_host_cfg];
        hp->backend = t;
        hp->setting = comma + 1;
        hp->value = eq + 1;
        o->host_cfg_text[o->n_host_cfg++] = t;
        if (strcmp(hp->setting, "numa-node") != 0 &&
            strcmp(hp->setting, "cpu-cores") != 0)
          ifd__opt_no_effect(
              o, "host-policy",
              "only its numa-node and cpu-cores settings are used "
              "(they pick the CPUs of the policy's instance threads)");
        break;
      }
      case K_RL_RESOURCE: {
        char *t, *c1, *c2;
        ifd_rl_resource_t *r;
        long long n = 0, dev = IFD_RL_ANY_DEVICE;
        if (check_value(f, value) < 0) return -1;
        if (o->n_rl_res == IFD_MAX_RL_RESOURCES)
          return ifd__app_options_bad(f->name, value, "too many resources");
        t = strdup(value);
        if (t == NULL) return ifd__app_options_bad(f->name, value, "no memory");
        c1 = strchr(t, ':');
        c2 = strchr(c1 + 1, ':');
        *c1 = '\0';
        if (c2 != NULL) {
          *c2 = '\0';
          ifd__opt_parse_int(c2 + 1, INT_MIN, INT_MAX, &dev);
        }
        ifd__opt_parse_int(c1 + 1, INT_MIN, INT_MAX, &n);
        r = &o->rl_res[o->n_rl_res];
        o->rl_res_text[o->n_rl_res++] = t;
        if (n < 0 || dev < IFD_RL_ANY_DEVICE)
          return ifd__app_options_bad(f->name, value,
                                      "the count must not be negative, nor "
                                      "the device below -1 (every device)");
        r->name = t;
        r->count = (uint32_t)n;
        r->device = (int)dev;
        break;
      }
      case K_OVERLOAD:
        if (strcmp(value, "503") != 0 && strcmp(value, "429") != 0)
          return ifd__app_options_bad(f->name, value,
                                      "expected 503 (Triton's UNAVAILABLE) "
                                      "or 429 (RESOURCE_EXHAUSTED on gRPC)");
        *(int *)((char *)o + f->off) = atoi(value);
        break;
      case K_UNIX_MODE:
      case K_UNIX_OWNER:
      case K_UNIX_GROUP:
        if (parse_unix_perm(f, value, (ifd_unix_perm_t *)((char *)o + f->off)) <
            0)
          return -1;
        break;
      case K_SWITCH:
        break; /* handled above */
    }
  }
  /* tritonserver serves AIP_STORAGE_URI when no repository is given. */
  if (o->n_repos == 0 && getenv("AIP_STORAGE_URI") != NULL &&
      getenv("AIP_STORAGE_URI")[0] != '\0')
    o->repos[o->n_repos++] = getenv("AIP_STORAGE_URI");
  if (o->n_repos == 0) {
    fprintf(stderr, "inferd: --model-repository must be specified\n");
    ifd__app_options_usage(stderr);
    return -1;
  }
  return ifd__opt_check_all(o);
}

static void default_backend_dir(ifd_app_options_t *o) {
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

void ifd__app_options_init(ifd_app_options_t *o) {
  memset(o, 0, sizeof(*o));
  o->http_port = 8000;
  o->allow_http = 1;
  o->http_address = "0.0.0.0";
  o->http_max_input_size = IFD_HTTP_DEFAULT_MAX_INPUT_SIZE;
  o->http_body_prealloc = IFD_HTTP_DEFAULT_BODY_PREALLOC;
  o->buffer_pool_bytes = IFD_BUFPOOL_DEFAULT_CAP;
  o->http_json_offload_bytes = IFD_HTTP_DEFAULT_JSON_OFFLOAD_BYTES;
  o->http_max_header_bytes = IFD_HTTP_DEFAULT_MAX_HEADER_BYTES;
  o->http_max_headers = IFD_HTTP_DEFAULT_MAX_HEADERS;
  o->http_max_pipeline = IFD_HTTP_DEFAULT_MAX_PIPELINE;
  o->http_header_timeout_secs = IFD_HTTP_DEFAULT_HEADER_TIMEOUT_SECS;
  o->http_body_timeout_secs = IFD_HTTP_DEFAULT_BODY_TIMEOUT_SECS;
  o->http_idle_timeout_secs = IFD_HTTP_DEFAULT_IDLE_TIMEOUT_SECS;
  o->max_connections = (int)IFD_HTTP_DEFAULT_MAX_CONNECTIONS;
  o->loop_spin_us = DEFAULT_LOOP_SPIN_US;
  o->overload_status = 503;
  o->retry_after_secs = DEFAULT_RETRY_AFTER_SECS;
  o->grpc_port = 8001;
  o->allow_grpc = 1;
  o->grpc_address = "0.0.0.0";
  o->grpc_max_message_size = IFD_GRPC_DEFAULT_MAX_MESSAGE_SIZE;
  o->grpc_stream_buffer_bytes = IFD_GRPC_DEFAULT_STREAM_BUFFER_BYTES;
  ifd_grpc_opts_defaults(&o->grpc_lim);
  o->grpc_use_ssl_mutual = -1;
  o->metrics_port = 8002;
  o->http_unix = o->grpc_unix = o->metrics_unix = IFD_UNIX_PERM_DEFAULT;
  o->allow_metrics = 1;
  o->metrics_interval_ms = 2000;
  o->allow_gpu_metrics = 1;
  o->allow_cpu_metrics = 1;
  o->allow_vertex_ai = -1;
  o->sagemaker_port = 8080;
  o->vertex_ai_port = 8080;
  o->model_load_threads = 4;
  ifd_cuda_mem_opts_default(&o->cuda_mem);
  o->exit_on_error = 1;
  o->strict_readiness = 1;
  o->exit_timeout_secs = 30;
  o->poll_secs = DEFAULT_POLL_SECS;
  o->log_info = o->log_warning = o->log_error = 1;
  default_backend_dir(o);
}

void ifd__app_options_free(ifd_app_options_t *o) {
  if (o->http_fwd.set) ifd__fwd_re_free(&o->http_fwd.re);
  if (o->grpc_fwd.set) ifd__fwd_re_free(&o->grpc_fwd.re);
  ifd_restrict_free(&o->http_restrict);
  ifd_restrict_free(&o->grpc_restrict);
  for (size_t k = 0; k < o->n_backend_cfg; k++) free(o->backend_cfg_text[k]);
  for (size_t k = 0; k < o->n_host_cfg; k++) free(o->host_cfg_text[k]);
  for (size_t k = 0; k < o->n_rl_res; k++) free(o->rl_res_text[k]);
  for (size_t k = 0; k < o->n_cache_cfg; k++) free(o->cache_text[k]);
}
