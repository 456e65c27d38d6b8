/*
 * bench/perf/options.c - inferd-perf's command line: the options (named as
 * perf_analyzer's where it has them), their defaults, the --help text, and
 * the checks run before anything connects.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/perf/perf.h"

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: inferd-perf -m MODEL [options]\n"
      "       inferd-perf --raw-get PATH [options]\n"
      "       inferd-perf --idle-connections N --idle-seconds S [-u H:P]\n"
      "  -m MODEL                 model name\n"
      "  -x VERSION               model version (default: the server's "
      "choice)\n"
      "  -b BATCH                 batch size (default 1)\n"
      "  -u HOST:PORT             server (default localhost:8000 http, "
      ":8001 grpc);\n"
      "     unix:PATH             or a Unix domain socket\n"
      "  -i http|grpc             protocol (default http)\n"
      "  --concurrency-range S:E:STEP   closed loop (default 1:1:1)\n"
      "  --request-rate-range S:E:STEP  open loop, requests per second\n"
      "  --max-connections N      open loop: connections/streams cap "
      "(default 1024)\n"
      "  --grpc-connections N     gRPC sessions (default min(concurrency, "
      "4))\n"
      "  --shape NAME:D1,D2,...   dimensions of an input (without the batch "
      "one)\n"
      "  --measurement-interval MS, -p MS  window per step (default 5000)\n"
      "  --warmup MS              warm-up per step, not measured (default "
      "1000)\n"
      "  --percentile N           latency used in the summary (default: "
      "average)\n"
      "  --streaming              gRPC ModelStreamInfer\n"
      "  --input-data zero|random input contents (default random)\n"
      "  --http-format binary|json  tensor encoding over HTTP (default "
      "binary)\n"
      "  --shared-memory none|system|cuda  inputs and outputs in shared "
      "memory regions\n"
      "                           that inferd-perf creates and registers "
      "(default none)\n"
      "  --output-shared-memory-size N  bytes per output region when the "
      "output's size\n"
      "                           is not fixed (BYTES, -1 dimensions), times "
      "-b (default 102400)\n"
      "  -f FILE                  perf_analyzer CSV\n"
      "  --json-summary FILE      machine-readable summary\n"
      "  --raw-get PATH           baseline: plain GET PATH, no model\n"
      "  --idle-connections N, --idle-seconds S  hold N idle keep-alive "
      "connections\n"
      "sequence models (config with sequence_batching):\n"
      "  --sequence-length N      base length of a sequence (default 20)\n"
      "  --sequence-length-variation P  +/- P%% of it (default 20)\n"
      "  --sequence-id-range S[:E]  ids from S up to E excluded (default 1, "
      "unbounded)\n"
      "  --num-of-sequences N     open loop: concurrent sequences (default "
      "4)\n"
      "  --serial-sequences       accepted: a sequence never has two "
      "requests in flight\n"
      "  --idle-sequences N --idle-seconds S  START N sequences, hold them, "
      "END them\n"
      "  --cpu-pid PID[,PID...]   also report those processes' CPU time per "
      "request\n"
      "  --cpu-children           with --cpu-pid: their child processes' "
      "too\n"
      "in-process (perf_analyzer's C API mode):\n"
      "  --service-kind triton|triton_c_api  triton_c_api: embed the server "
      "(default triton)\n"
      "  --triton-server-directory DIR  where lib/libtritonserver.so is "
      "(or DIR/libtritonserver.so;\n"
      "                           default /opt/tritonserver)\n"
      "  --model-repository DIR   the embedded server's repository (the "
      "model is loaded\n"
      "                           explicitly)\n"
      "  --backend-directory DIR  its backends (default DIR/backends of "
      "--triton-server-directory)\n"
      "  --spin-us N              poll for completions N us before sleeping "
      "(default 0)\n"
      "  --quiet                  only the final table\n");
}

static int parse_range(const char *s, double *a, double *b, double *c) {
  char *end;
  *a = strtod(s, &end);
  *b = *a;
  *c = 1;
  if (end == s || *a <= 0) return -1;
  if (*end == ':') {
    s = end + 1;
    *b = strtod(s, &end);
    if (end == s) return -1;
    if (*end == ':') {
      s = end + 1;
      *c = strtod(s, &end);
      if (end == s) return -1;
    }
  }
  if (*end) return -1;
  if (*b < *a) *b = *a;
  if (*c <= 0) *c = 1;
  return 0;
}

static int parse_shape(const char *s, ifd_perf_shape_t *sh) {
  const char *colon = strrchr(s, ':'), *p;
  char *end;
  if (!colon || colon == s || (size_t)(colon - s) >= sizeof sh->name) return -1;
  memcpy(sh->name, s, (size_t)(colon - s));
  sh->name[colon - s] = 0;
  sh->rank = 0;
  for (p = colon + 1; *p;) {
    long long d = strtoll(p, &end, 10);
    if (end == p || d < 0 || sh->rank == IFD_PERF_MAX_RANK) return -1;
    sh->dims[sh->rank++] = d;
    p = end;
    if (*p == ',')
      p++;
    else if (*p)
      return -1;
  }
  return 0;
}

static int parse_url(const char *u, ifd_perf_opts_t *o) {
  const char *p, *colon;
  size_t hl;

  if (!strncmp(u, "unix:", 5)) {
    u += 5;
    if (u[0] == '/' && u[1] == '/') u += 2; /* gRPC's unix:///abs */
    if (!u[0] || strlen(u) >= sizeof o->unix_path) return -1;
    memcpy(o->unix_path, u, strlen(u) + 1);
    return 0;
  }
  if (!strncmp(u, "http://", 7)) u += 7;
  if (u[0] == '[') {
    p = strchr(u, ']');
    if (!p) return -1;
    hl = (size_t)(p - u - 1);
    u++;
    colon = p[1] == ':' ? p + 1 : NULL;
  } else {
    colon = strrchr(u, ':');
    hl = colon ? (size_t)(colon - u) : strlen(u);
  }
  if (hl == 0 || hl >= sizeof o->host) return -1;
  memcpy(o->host, u, hl);
  o->host[hl] = 0;
  if (colon) {
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (port <= 0 || port > 65535 || (*end && *end != '/')) return -1;
    o->port = (int)port;
  }
  return 0;
}

enum {
  O_CONC = 256,
  O_RATE,
  O_SHAPE,
  O_INTERVAL,
  O_PCT,
  O_STREAM,
  O_INPUT,
  O_FORMAT,
  O_WARMUP,
  O_RAW,
  O_IDLE_N,
  O_IDLE_S,
  O_QUIET,
  O_JSON,
  O_MAXC,
  O_GRPCC,
  O_SEQ_LEN,
  O_SEQ_VAR,
  O_SEQ_IDS,
  O_NUM_SEQ,
  O_SERIAL,
  O_IDLE_SEQ,
  O_SHM,
  O_SHM_OUT,
  O_KIND,
  O_SRVDIR,
  O_REPO,
  O_BACKDIR,
  O_CPU_PID,
  O_CPU_CHILDREN,
  O_SPIN
};

/* "S" or "S:E" for --sequence-id-range: ids >= 1, E > S. */
static int parse_ids(const char *s, uint64_t *a, uint64_t *b) {
  char *end;
  if (*s < '0' || *s > '9') return -1;
  *a = strtoull(s, &end, 10);
  *b = 0;
  if (*end == ':' && end[1]) {
    s = end + 1;
    if (*s < '0' || *s > '9') return -1;
    *b = strtoull(s, &end, 10);
    if (*b <= *a) return -1;
  } else if (*end == ':') {
    end++;
  }
  return *end || *a == 0 ? -1 : 0;
}

int ifd__perf_options_parse(int argc, char **argv, ifd_perf_opts_t *o) {
  static const struct option lo[] = {
      {"concurrency-range", 1, 0, O_CONC},
      {"request-rate-range", 1, 0, O_RATE},
      {"shape", 1, 0, O_SHAPE},
      {"measurement-interval", 1, 0, O_INTERVAL},
      {"percentile", 1, 0, O_PCT},
      {"streaming", 0, 0, O_STREAM},
      {"input-data", 1, 0, O_INPUT},
      {"http-format", 1, 0, O_FORMAT},
      {"warmup", 1, 0, O_WARMUP},
      {"raw-get", 1, 0, O_RAW},
      {"idle-connections", 1, 0, O_IDLE_N},
      {"idle-seconds", 1, 0, O_IDLE_S},
      {"quiet", 0, 0, O_QUIET},
      {"json-summary", 1, 0, O_JSON},
      {"max-connections", 1, 0, O_MAXC},
      {"grpc-connections", 1, 0, O_GRPCC},
      {"sequence-length", 1, 0, O_SEQ_LEN},
      {"sequence-length-variation", 1, 0, O_SEQ_VAR},
      {"sequence-id-range", 1, 0, O_SEQ_IDS},
      {"num-of-sequences", 1, 0, O_NUM_SEQ},
      {"serial-sequences", 0, 0, O_SERIAL},
      {"idle-sequences", 1, 0, O_IDLE_SEQ},
      {"shared-memory", 1, 0, O_SHM},
      {"output-shared-memory-size", 1, 0, O_SHM_OUT},
      {"service-kind", 1, 0, O_KIND},
      {"triton-server-directory", 1, 0, O_SRVDIR},
      {"model-repository", 1, 0, O_REPO},
      {"backend-directory", 1, 0, O_BACKDIR},
      {"cpu-pid", 1, 0, O_CPU_PID},
      {"cpu-children", 0, 0, O_CPU_CHILDREN},
      {"spin-us", 1, 0, O_SPIN},
      {"help", 0, 0, 'h'},
      {0, 0, 0, 0}};
  const char *url = NULL;
  int c, have_conc = 0;

  o->version = "";
  o->batch = 1;
  o->range_start = o->range_end = o->range_step = 1;
  o->max_connections = 1024;
  o->measure_ms = 5000;
  o->warmup_ms = 1000;
  o->percentile = -1;
  o->seq_length = 20;
  o->seq_variation = 20;
  o->seq_id_start = 1;
  o->num_sequences = 4;
  o->output_shm_size = 102400; /* perf_analyzer's default */
  snprintf(o->host, sizeof o->host, "localhost");
  while ((c = getopt_long(argc, argv, "m:x:b:u:i:f:p:h", lo, NULL)) != -1) {
    switch (c) {
      case 'm':
        o->model = optarg;
        break;
      case 'x':
        o->version = optarg;
        break;
      case 'b':
        o->batch = atoi(optarg);
        break;
      case 'u':
        url = optarg;
        break;
      case 'i':
        if (!strcmp(optarg, "grpc"))
          o->grpc = 1;
        else if (strcmp(optarg, "http"))
          goto bad;
        break;
      case 'f':
        o->csv = optarg;
        break;
      case 'p':
      case O_INTERVAL:
        o->measure_ms = strtoull(optarg, NULL, 10);
        break;
      case O_CONC:
      case O_RATE:
        if (parse_range(optarg, &o->range_start, &o->range_end, &o->range_step))
          goto bad;
        if (c == O_RATE)
          o->open_loop = 1;
        else
          have_conc = 1;
        break;
      case O_SHAPE:
        if (o->nshapes == IFD_PERF_MAX_SHAPES ||
            parse_shape(optarg, &o->shapes[o->nshapes++]))
          goto bad;
        break;
      case O_PCT:
        o->percentile = atoi(optarg);
        break;
      case O_STREAM:
        o->streaming = 1;
        break;
      case O_INPUT:
        if (!strcmp(optarg, "zero"))
          o->zero_data = 1;
        else if (strcmp(optarg, "random"))
          goto bad;
        break;
      case O_FORMAT:
        if (!strcmp(optarg, "json"))
          o->http_json = 1;
        else if (strcmp(optarg, "binary"))
          goto bad;
        break;
      case O_WARMUP:
        o->warmup_ms = strtoull(optarg, NULL, 10);
        break;
      case O_RAW:
        o->raw_get = optarg;
        break;
      case O_IDLE_N:
        o->idle_connections = atoi(optarg);
        break;
      case O_IDLE_S:
        o->idle_seconds = atof(optarg);
        break;
      case O_QUIET:
        o->quiet = 1;
        break;
      case O_JSON:
        o->json_summary = optarg;
        break;
      case O_MAXC:
        o->max_connections = atoi(optarg);
        break;
      case O_GRPCC:
        o->grpc_connections = atoi(optarg);
        break;
      case O_SEQ_LEN: {
        char *end;
        o->seq_length = strtoull(optarg, &end, 10);
        if (*end || end == optarg || o->seq_length == 0) goto bad;
        break;
      }
      case O_SEQ_VAR: {
        char *end;
        o->seq_variation = strtod(optarg, &end);
        if (*end || end == optarg || o->seq_variation < 0) goto bad;
        break;
      }
      case O_SEQ_IDS:
        if (parse_ids(optarg, &o->seq_id_start, &o->seq_id_end)) goto bad;
        break;
      case O_NUM_SEQ:
        o->num_sequences = atoi(optarg);
        if (o->num_sequences < 1) goto bad;
        break;
      case O_SERIAL:
        break; /* always so: one slot per sequence */
      case O_IDLE_SEQ:
        o->idle_sequences = atoi(optarg);
        if (o->idle_sequences < 1) goto bad;
        break;
      case O_SHM:
        if (!strcmp(optarg, "none"))
          o->shm = IFD_PERF_SHM_NONE;
        else if (!strcmp(optarg, "system"))
          o->shm = IFD_PERF_SHM_SYSTEM;
        else if (!strcmp(optarg, "cuda"))
          o->shm = IFD_PERF_SHM_CUDA;
        else {
          fprintf(stderr,
                  "error: --shared-memory '%s': the choices are none, system "
                  "and cuda\n",
                  optarg);
          return -1;
        }
        break;
      case O_SHM_OUT: {
        char *end;
        o->output_shm_size = strtoull(optarg, &end, 10);
        if (*end || end == optarg || optarg[0] == '-') goto bad;
        break;
      }
      case O_KIND:
        if (!strcmp(optarg, "triton_c_api"))
          o->capi = 1;
        else if (!strcmp(optarg, "triton"))
          o->capi = 0;
        else {
          fprintf(stderr,
                  "error: --service-kind '%s': the choices are triton and "
                  "triton_c_api\n",
                  optarg);
          return -1;
        }
        break;
      case O_SRVDIR:
        o->server_dir = optarg;
        break;
      case O_REPO:
        o->repository = optarg;
        break;
      case O_BACKDIR:
        o->backend_dir = optarg;
        break;
      case O_SPIN: {
        char *end;
        o->spin_us = strtoull(optarg, &end, 10);
        if (*end || end == optarg || optarg[0] == '-' || o->spin_us > 1000000)
          goto bad;
        break;
      }
      case O_CPU_PID: {
        const char *p = optarg;
        o->n_cpu_pids = 0;
        o->cpu_pids_arg = optarg;
        for (;;) {
          char *end;
          long pid = strtol(p, &end, 10);
          if (end == p || pid <= 0 || pid > 0x7fffffff ||
              o->n_cpu_pids == IFD_PERF_CPU_PIDS_MAX || (*end && *end != ','))
            goto bad;
          o->cpu_pids[o->n_cpu_pids++] = (int)pid;
          if (!*end) break;
          p = end + 1;
        }
        break;
      }
      case O_CPU_CHILDREN:
        o->cpu_children = 1;
        break;
      case 'h':
        usage(stdout);
        exit(0);
      default:
        usage(stderr);
        return -1;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "error: unexpected argument '%s'\n", argv[optind]);
    return -1;
  }
  o->port = o->grpc ? 8001 : 8000;
  if (url && parse_url(url, o)) {
    fprintf(stderr, "error: bad -u '%s' (want HOST:PORT or unix:PATH)\n", url);
    return -1;
  }
  if (have_conc && o->open_loop) {
    fprintf(stderr,
            "error: --concurrency-range and --request-rate-range "
            "exclude each other\n");
    return -1;
  }
  if ((o->raw_get || o->idle_connections) && o->grpc) {
    fprintf(stderr, "error: --raw-get and --idle-connections are HTTP only\n");
    return -1;
  }
  if (o->shm && (o->raw_get || o->idle_connections)) {
    fprintf(stderr,
            "error: --shared-memory needs a model (-m), not --raw-get or "
            "--idle-connections\n");
    return -1;
  }
  if (o->capi) {
    if (!o->repository) {
      fprintf(stderr,
              "error: --service-kind=triton_c_api needs --model-repository\n");
      return -1;
    }
    if (!o->server_dir) o->server_dir = "/opt/tritonserver"; /* as PA */
    if (o->grpc || url || o->shm || o->http_json || o->raw_get ||
        o->idle_connections || o->idle_sequences) {
      fprintf(stderr,
              "error: --service-kind=triton_c_api runs the server in this "
              "process: -i, -u, --http-format, --shared-memory, --raw-get, "
              "--idle-connections and --idle-sequences do not apply\n");
      return -1;
    }
  } else if (o->server_dir || o->repository || o->backend_dir || o->spin_us) {
    fprintf(stderr,
            "error: --triton-server-directory, --model-repository, "
            "--backend-directory and --spin-us need "
            "--service-kind=triton_c_api\n");
    return -1;
  }
  if (o->streaming && !o->grpc) {
    fprintf(stderr, "error: --streaming needs -i grpc\n");
    return -1;
  }
  if (!o->model && !o->raw_get && !o->idle_connections) {
    fprintf(stderr, "error: -m MODEL is required (or --raw-get PATH)\n");
    return -1;
  }
  if (o->batch < 1 || o->max_connections < 1 || o->measure_ms == 0 ||
      o->percentile == 0 || o->percentile > 99 || o->grpc_connections < 0 ||
      (o->raw_get && o->raw_get[0] != '/')) {
    fprintf(stderr, "error: an option is out of range (see --help)\n");
    return -1;
  }
  if (!o->open_loop && o->range_end > 100000) {
    fprintf(stderr, "error: concurrency above 100000\n");
    return -1;
  }
  return 0;

bad:
  fprintf(stderr, "error: bad value '%s' for an option\n", optarg);
  return -1;
}
