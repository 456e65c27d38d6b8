/*
 * app/main.c - the inferd executable: start-up from the command line
 * (app/options.c reads it), the server as the runtime builds it
 * (app/runtime.c), the front ends, the loop, and graceful shutdown.
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

#include "app/options.h"
#include "app/runtime.h"
#include "base/bufpool.h"
#include "base/log.h"
#include "core/metrics.h"
#include "core/server.h"
#include "cuda/cuda_mem.h"
#include "cuda/gpu.h"
#include "net/grpc.h"
#include "frontend/frontend.h"
#include "net/listen.h"
#include "net/restrict.h"

typedef struct app {
  uv_loop_t loop;
  ifd_app_options_t opt;
  ifd_server_t *server;     /* owned: ifd_runtime_new's */
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
  /* Cloud endpoints (frontend/http_cloud.c); Vertex AI starts once the models
   * have loaded, as tritonserver starts it (its default model is one of
   * them). */
  ifd_http_t *sagemaker;     /* owned until ifd_http_stop's done */
  ifd_http_t *vertex;        /* owned until ifd_http_stop's done */
  ifd_http_cloud_t sm_cloud; /* embedded: the SageMaker listener's */
  ifd_http_cloud_t vx_cloud; /* embedded: the Vertex AI listener's */
  char *vertex_model;        /* owned: vx_cloud.model */
} app_t;

/* How long after the exit deadline unloading may still take before the
 * process exits without waiting for it (a backend stuck in execute or
 * finalize): the process always ends within --exit-timeout-secs + 2 s. */
#define BACKSTOP_GRACE_MS 1500

/* The TLS flags: builds each listener's context now (the files are read
 * here, before the loop runs). tritonserver turns gRPC TLS on whenever
 * --grpc-use-ssl-mutual is given; the HTTPS pair goes together. Returns 0
 * or -1 after printing why. */
static int build_tls(app_t *a) {
  ifd_app_options_t *o = &a->opt;
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
  ifd_runtime_free(a->server);
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

static void on_sagemaker_stopped(void *arg) {
  app_t *a = arg;
  a->sagemaker = NULL;
  front_stopped(a);
}

static void on_vertex_stopped(void *arg) {
  app_t *a = arg;
  a->vertex = NULL;
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
  if (a->sagemaker != NULL) ifd_http_drained(a->sagemaker);
  if (a->vertex != NULL) ifd_http_drained(a->vertex);
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
  if (a->sagemaker != NULL) {
    a->fronts_stopping++;
    ifd_http_stop(a->sagemaker, deadline, on_sagemaker_stopped, a);
  }
  if (a->vertex != NULL) {
    a->fronts_stopping++;
    ifd_http_stop(a->vertex, deadline, on_vertex_stopped, a);
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

/* The HTTP options both HTTP listeners share. */
static void http_limits(const ifd_app_options_t *o, ifd_http_opts_t *ho);

/* "started <what> at <address>:<port><extra>"; for a unix: address, the
 * socket, and that `port_flag` is not used. */
static void log_started(const char *what, const char *addr, int port,
                        const char *extra, const char *port_flag) {
  if (ifd__net_is_unix(addr))
    IFD_INFO("started %s at unix:%s%s (a Unix domain socket: %s is not used)",
             what, ifd__net_unix_path(addr), extra, port_flag);
  else
    IFD_INFO("started %s at %s:%d%s", what, addr, port, extra);
}

/* A cloud endpoint's listener on 0.0.0.0:`port`, as tritonserver binds
 * them. Returns 0 or -1 after logging why. */
static int start_cloud(app_t *a, const ifd_http_cloud_t *cloud, int port,
                       const char *what, ifd_http_t **out) {
  ifd_http_opts_t ho;
  ifd_errmsg_t err;

  ifd_errclear(&err);
  memset(&ho, 0, sizeof(ho));
  http_limits(&a->opt, &ho);
  ho.host = "0.0.0.0";
  ho.port = port;
  ho.max_input_size = a->opt.http_max_input_size;
  ho.body_prealloc_max = a->opt.http_body_prealloc;
  ho.json_offload_bytes = a->opt.http_json_offload_bytes;
  ho.metrics = a->metrics; /* Vertex AI's redirect to /metrics */
  /* As tritonserver's, the handlers the endpoints reach check the
   * --http-restricted-api groups of their routes. */
  ho.restrict_api = &a->opt.http_restrict;
  ho.cloud = cloud;
  ho.overload_429 = a->opt.overload_status == 429;
  ho.retry_after_secs = (unsigned)a->opt.retry_after_secs;
  if (ifd_http_start(&a->loop, a->server, &ho, out, &err) < 0) {
    IFD_ERROR("failed to start %s service: %s", what, err.text);
    *out = NULL;
    return -1;
  }
  IFD_INFO("Started %s HTTPService at 0.0.0.0:%d", what, ifd_http_port(*out));
  return 0;
}

/* Vertex AI's default model, chosen once the models have loaded as
 * tritonserver chooses it: --vertex-ai-default-model when it is ready,
 * else the only ready model (one row of the ready index). Returns 0 with
 * a->vertex_model set, or -1 after logging why. */
static int vertex_default_model(app_t *a) {
  const char *want = a->opt.vertex_ai_default_model;
  ifd_index_entry_t *rows;
  size_t n, i;
  const char *name = NULL;

  if (ifd_server_repository_index(a->server, 1, &rows, &n) != 0) {
    IFD_ERROR("failed to start Vertex AI service: out of memory");
    return -1;
  }
  if (want == NULL || want[0] == '\0') {
    if (n == 1) name = rows[0].name;
  } else {
    for (i = 0; i < n && name == NULL; i++)
      if (strcmp(rows[i].name, want) == 0) name = rows[i].name;
  }
  if (name != NULL) a->vertex_model = strdup(name);
  free(rows);
  if (name == NULL && (want == NULL || want[0] == '\0')) {
    IFD_ERROR(
        "failed to start Vertex AI service: Expect the model repository "
        "contains only a single model if default model is not specified");
    return -1;
  }
  if (name == NULL) {
    IFD_ERROR(
        "failed to start Vertex AI service: Expect the default model "
        "'%s' is loaded",
        want);
    return -1;
  }
  if (a->vertex_model == NULL) {
    IFD_ERROR("failed to start Vertex AI service: out of memory");
    return -1;
  }
  a->vx_cloud.model = a->vertex_model;
  return 0;
}

static void on_loaded(ifd_server_t *s, int failed, void *arg) {
  app_t *a = arg;
  (void)s;
  if (failed < 0) {
    IFD_ERROR("error: creating server: the response cache failed to open");
    begin_shutdown(a, 1);
    return;
  }
  if (failed > 0 && a->opt.exit_on_error) {
    IFD_ERROR("%d model(s) failed to load and --exit-on-error is true", failed);
    begin_shutdown(a, 1);
    return;
  }
  if (a->opt.allow_vertex_ai && !a->stopping) {
    if (vertex_default_model(a) != 0 ||
        start_cloud(a, &a->vx_cloud, a->opt.vertex_ai_port, "Vertex AI",
                    &a->vertex) != 0) {
      begin_shutdown(a, 1);
      return;
    }
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
static void http_limits(const ifd_app_options_t *o, ifd_http_opts_t *ho) {
  ho->max_header_bytes = (uint32_t)o->http_max_header_bytes;
  ho->max_headers = (uint32_t)o->http_max_headers;
  ho->max_pipeline = (unsigned)o->http_max_pipeline;
  ho->header_timeout_ms = (uint64_t)o->http_header_timeout_secs * 1000;
  ho->body_timeout_ms = (uint64_t)o->http_body_timeout_secs * 1000;
  ho->idle_timeout_ms = (uint64_t)o->http_idle_timeout_secs * 1000;
  ho->max_connections = (unsigned)o->max_connections;
}

int main(int argc, char **argv) {
  static app_t app;
  app_t *a = &app;
  ifd_server_opts_t so;
  ifd_errmsg_t err;
  int rc;

  ifd__app_options_init(&a->opt);
  rc = ifd__app_options_parse(argc, argv, &a->opt);
  if (rc != 0) {
    if (rc > 0) ifd__app_options_usage(stdout);
    return rc > 0 ? 0 : 1;
  }
  /* --buffer-pool-byte-size: the free buffers the shared pool keeps. */
  ifd_bufpool_set_cap(
      ifd_bufpool_shared(), (size_t)a->opt.buffer_pool_bytes,
      a->opt.buffer_pool_bytes != 0 ? IFD_BUFPOOL_DEFAULT_PER_CLASS : 0);
  /* --model-load-thread-count: models load on libuv's thread pool, sized
   * once, at its first use (after this); at least libuv's 4 threads, which
   * also serve other blocking work. An explicit UV_THREADPOOL_SIZE wins. */
  if (a->opt.model_load_threads > 4 && getenv("UV_THREADPOOL_SIZE") == NULL) {
    char n[16];
    snprintf(n, sizeof(n), "%d", a->opt.model_load_threads);
    setenv("UV_THREADPOOL_SIZE", n, 0);
  }
  if (a->opt.log_format != NULL) {
    ifd_log_format_t f;
    if (ifd_log_parse_format(a->opt.log_format, &f) != 0) {
      ifd__app_options_bad("log-format", a->opt.log_format,
                           "expected default or ISO8601");
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
  ifd__app_options_report(&a->opt);
  signal(SIGPIPE, SIG_IGN);
  if (a->opt.allow_vertex_ai) {
    const char *pr = getenv("AIP_PREDICT_ROUTE");
    const char *hr = getenv("AIP_HEALTH_ROUTE");
    if (pr == NULL || pr[0] == '\0' || hr == NULL || hr[0] == '\0') {
      /* tritonserver's text, its misspelling of AIP_PREDICT_ROUTE kept. */
      fprintf(stderr, "inferd: failed to start Vertex AI service: %s\n",
              pr == NULL || pr[0] == '\0'
                  ? "API_PREDICT_ROUTE is not defined for Vertex AI endpoint"
                  : "AIP_HEALTH_ROUTE is not defined for Vertex AI endpoint");
      return 1;
    }
    a->vx_cloud.kind = IFD_HTTP_CLOUD_VERTEX_AI;
    a->vx_cloud.predict_route = pr;
    a->vx_cloud.health_route = hr;
  }
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
  so.summary_latencies = a->opt.summary_latencies;
  so.quantiles = a->opt.quantiles;
  so.no_counter_latencies = a->opt.no_counter_latencies;
  so.exit_timeout_secs = a->opt.exit_timeout_secs;
  so.server_id = a->opt.server_id;
  so.host_policy = a->opt.host_cfg;
  so.n_host_policy = a->opt.n_host_cfg;
  so.repoagent_dir = a->opt.repoagent_dir;
  so.model_namespacing = a->opt.model_namespacing;
  so.cache_name = a->opt.cache_name;
  so.cache_config = a->opt.cache_cfg;
  so.n_cache_config = a->opt.n_cache_cfg;
  so.cache_dir = a->opt.cache_dir;
  so.rate_limit = a->opt.rate_limit_on;
  so.rate_limit_resources = a->opt.rl_res;
  so.n_rate_limit_resources = a->opt.n_rl_res;
  so.model_config_name = a->opt.model_config_name;
  so.min_compute_capability = a->opt.min_compute_capability;
  so.gpu_limit_set = a->opt.gpu_limit_set;
  memcpy(so.gpu_limit, a->opt.gpu_limit, sizeof(so.gpu_limit));
  so.max_inflight_requests = a->opt.max_inflight_requests;
  so.model_load_retry_count = a->opt.model_load_retry_count > 0
                                  ? (unsigned)a->opt.model_load_retry_count
                                  : 0;
  /* The start-up trace setting: tritonserver's defaults where not given;
   * a level OFF given anywhere wins. */
  ifd_trace_config_default(&so.trace);
  so.trace.level = a->opt.trace_level_off
                       ? 0
                       : ((a->opt.trace_level & 1) ? IFD_TRACE_TIMESTAMPS : 0) |
                             ((a->opt.trace_level & 2) ? IFD_TRACE_TENSORS : 0);
  if (a->opt.trace_rate_set) so.trace.rate = a->opt.trace_rate;
  if (a->opt.trace_count_set) so.trace.count = a->opt.trace_count;
  so.trace.log_frequency = a->opt.trace_log_frequency;
  so.trace.file = a->opt.trace_file;
  so.gpu_count = ifd_gpu_count();
  so.gpu_skip = ifd_gpu_unsupported(so.min_compute_capability);
  /* Before any model loads; without a GPU there is nothing to set up. */
  ifd_cuda_mem_init(&a->opt.cuda_mem, so.gpu_count);
  ifd_errclear(&err);
  if (ifd_runtime_new(&a->loop, &so, &a->server, &err) < 0) {
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
    ho.unix_perm = &a->opt.http_unix;
    ho.max_input_size = a->opt.http_max_input_size;
    ho.body_prealloc_max = a->opt.http_body_prealloc;
    ho.json_offload_bytes = a->opt.http_json_offload_bytes;
    ho.restrict_api = &a->opt.http_restrict;
    ho.tls = a->http_tls;
    ho.reuse_port = a->opt.reuse_http_port;
    ho.overload_429 = a->opt.overload_status == 429;
    ho.retry_after_secs = (unsigned)a->opt.retry_after_secs;
    ho.forward_headers = a->opt.http_fwd.set ? &a->opt.http_fwd.re : NULL;
    http_limits(&a->opt, &ho);
    if (ifd_http_start(&a->loop, a->server, &ho, &a->http, &err) < 0) {
      IFD_ERROR("failed to start the HTTP service: %s", err.text);
      a->http = NULL;
      a->exit_code = 1;
    } else {
      log_started("HTTPService", a->opt.http_address, ifd_http_port(a->http),
                  a->http_tls != NULL ? " (HTTPS)" : "", "--http-port");
    }
  }
  if (a->opt.allow_grpc && a->exit_code == 0) {
    ifd_grpc_opts_t go = a->opt.grpc_lim;
    go.restrict_api = &a->opt.grpc_restrict;
    go.host = a->opt.grpc_address;
    go.port = a->opt.grpc_port;
    go.unix_perm = &a->opt.grpc_unix;
    go.max_message_size = a->opt.grpc_max_message_size;
    go.stream_buffer_bytes = a->opt.grpc_stream_buffer_bytes;
    go.tls = a->grpc_tls;
    go.reuse_port = a->opt.reuse_grpc_port;
    go.overload_429 = a->opt.overload_status == 429;
    go.forward_headers = a->opt.grpc_fwd.set ? &a->opt.grpc_fwd.re : NULL;
    go.max_connections = (unsigned)a->opt.max_connections;
    if (ifd_grpc_start(&a->loop, a->server, &go, &a->grpc, &err) < 0) {
      IFD_ERROR("failed to start the GRPC service: %s", err.text);
      a->grpc = NULL;
      a->exit_code = 1;
    } else {
      log_started("GRPCInferenceService", a->opt.grpc_address,
                  ifd_grpc_port(a->grpc),
                  a->grpc_tls == NULL               ? ""
                  : a->opt.grpc_use_ssl_mutual == 1 ? " (TLS, mutual)"
                                                    : " (TLS)",
                  "--grpc-port");
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
      ifd_metrics_allow_cpu(a->metrics, a->opt.allow_cpu_metrics);
    }
    memset(&mo, 0, sizeof(mo));
    http_limits(&a->opt, &mo);
    mo.host = a->opt.metrics_address != NULL ? a->opt.metrics_address
                                             : a->opt.http_address;
    mo.port = a->opt.metrics_port;
    mo.unix_perm = &a->opt.metrics_unix;
    mo.max_input_size = 64 << 10;
    mo.metrics_only = 1;
    mo.metrics = a->metrics;
    if (a->exit_code == 0 &&
        ifd_http_start(&a->loop, a->server, &mo, &a->metrics_http, &err) < 0) {
      IFD_ERROR("failed to start the metrics service: %s", err.text);
      a->metrics_http = NULL;
      a->exit_code = 1;
    } else if (a->exit_code == 0) {
      log_started("Metrics Service", mo.host, ifd_http_port(a->metrics_http),
                  "", "--metrics-port");
    }
  }
  if (a->opt.allow_sagemaker && a->exit_code == 0) {
    const char *mode = getenv("SAGEMAKER_TRITON_PING_MODE");
    const char *model = getenv("SAGEMAKER_TRITON_DEFAULT_MODEL_NAME");
    a->sm_cloud.kind = IFD_HTTP_CLOUD_SAGEMAKER;
    a->sm_cloud.model = model != NULL
                            ? model
                            : "unspecified_SAGEMAKER_TRITON_DEFAULT_MODEL_NAME";
    a->sm_cloud.ping_live = mode != NULL && strcmp(mode, "live") == 0;
    if (start_cloud(a, &a->sm_cloud, a->opt.sagemaker_port, "Sagemaker",
                    &a->sagemaker) != 0)
      a->exit_code = 1;
  }
  /* A front end failed to start: close the others and exit non-zero. */
  if (a->exit_code != 0) begin_shutdown(a, a->exit_code);

  if (!a->stopping) ifd_server_start(a->server, on_loaded, a);
  uv_run(&a->loop, UV_RUN_DEFAULT);
  rc = uv_loop_close(&a->loop);
  if (rc != 0)
    IFD_WARN("event loop closed with handles open: %s", uv_strerror(rc));
  /* Every connection is closed: nothing uses the TLS contexts any more. */
  ifd_tls_ctx_free(a->http_tls);
  ifd_tls_ctx_free(a->grpc_tls);
  free(a->vertex_model);
  ifd_cuda_mem_fini();
  ifd__app_options_free(&a->opt);
  IFD_INFO("exiting with status %d", a->exit_code);
  return a->exit_code;
}
