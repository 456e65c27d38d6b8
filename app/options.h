/*
 * app/options.h - tritonserver's command line as inferd reads it: the
 * options every front end and the core start from, their defaults, parsing
 * (one table of flags) and the usage text. Used by app/main.c.
 */
#ifndef IFD_APP_OPTIONS_H
#define IFD_APP_OPTIONS_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "core/server.h"
#include "cuda/cuda_mem.h"
#include "net/forward.h"
#include "net/grpc.h"
#include "net/listen.h"
#include "net/restrict.h"

#define IFD_MAX_REPOS 64
#define IFD_MAX_LOAD_MODELS 1024
#define IFD_MAX_BACKEND_CONFIG 256
#define IFD_MAX_NO_EFFECT 64
#define IFD_MAX_HOST_POLICY 64
#define IFD_MAX_RL_RESOURCES 256

typedef struct ifd_app_options {
  const char *repos[IFD_MAX_REPOS];
  size_t n_repos;
  const char *backend_dir;
  /* --backend-config settings; strings in backend_cfg_text. */
  ifd_backend_setting_t backend_cfg[IFD_MAX_BACKEND_CONFIG];
  size_t n_backend_cfg;
  char *backend_cfg_text[IFD_MAX_BACKEND_CONFIG]; /* owned: split copies */
  char backend_dir_default[PATH_MAX];
  const char *http_address;
  int http_port;
  int allow_http;
  uint64_t http_max_input_size;
  uint64_t http_body_prealloc; /* --http-body-prealloc-size */
  uint64_t buffer_pool_bytes;  /* --buffer-pool-byte-size */
  uint64_t http_json_offload_bytes;
  /* Connection limits and timeouts (docs/connections.md). */
  int http_max_header_bytes;
  int http_max_headers;
  int http_max_pipeline;
  int http_header_timeout_secs;
  int http_body_timeout_secs;
  int http_idle_timeout_secs;
  int max_connections;
  int loop_spin_us;
  /* Load shedding (docs/connections.md, "Load shedding"): --overload-status
   * (503, as Triton, or 429), --overload-retry-after-secs,
   * --max-inflight-requests (0: no cap). */
  int overload_status;
  int retry_after_secs;
  unsigned max_inflight_requests;
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
  /* --{http,grpc,metrics}-unix-socket-{mode,owner,group}: the socket file
   * of a "unix:" address (docs/unix_sockets.md). */
  ifd_unix_perm_t http_unix, grpc_unix, metrics_unix;
  int allow_metrics;
  int metrics_interval_ms;
  int strict_config;
  int exit_on_error;
  int strict_readiness;
  int histogram_latencies;   /* --metrics-config histogram_latencies */
  int summary_latencies;     /* --metrics-config summary_latencies */
  ifd_quantiles_t quantiles; /* --metrics-config summary_quantiles (n 0:
                                tritonserver's defaults) */
  int no_counter_latencies;  /* --metrics-config counter_latencies=false */
  int exit_timeout_secs;
  ifd_control_mode_t control_mode;
  const char *load_models[IFD_MAX_LOAD_MODELS];
  size_t n_load_models;
  int load_all; /* --load-model=* was given */
  int poll_secs;
  int log_verbose;
  int log_info, log_warning, log_error;
  const char *log_file;   /* --log-file: NULL for stderr */
  const char *log_format; /* --log-format: NULL for "default" */
  /* GPUs (docs/gpus.md): memory pools and GPU metrics. */
  ifd_cuda_mem_opts_t cuda_mem;
  int allow_gpu_metrics;
  /* --host-policy settings (`backend`: the policy name); strings in
   * host_cfg_text. */
  ifd_backend_setting_t host_cfg[IFD_MAX_HOST_POLICY];
  size_t n_host_cfg;
  char *host_cfg_text[IFD_MAX_HOST_POLICY]; /* owned: split copies */
  /* tritonserver's flags that take effect (docs/flags.md). */
  const char *server_id;         /* --id: NULL for "inferd" */
  const char *model_config_name; /* --model-config-name: NULL for none */
  int disable_auto_complete;     /* --disable-auto-complete-config */
  int model_load_threads;        /* --model-load-thread-count (default 4) */
  int reuse_http_port, reuse_grpc_port; /* --reuse-{http,grpc}-port */
  int allow_cpu_metrics;                /* --allow-cpu-metrics */
  double min_compute_capability;        /* --min-supported-compute-capability */
  uint64_t gpu_limit_set; /* --model-load-gpu-limit: bit d for GPU d */
  double gpu_limit[64];   /* its fraction, by device */
  /* --http-header-forward-pattern, --grpc-header-forward-pattern: compiled
   * when `set` (owned: freed by ifd__app_options_free). */
  struct ifd_app_fwd_pattern {
    ifd_fwd_re_t re;
    int set;
  } http_fwd, grpc_fwd;
  /* Flags checked once every flag is read (refused when their feature
   * would be needed). */
  int model_namespacing;
  int model_load_retry_count;
  int allow_sagemaker, allow_vertex_ai; /* vertex: -1 until parsed */
  int rate_limit_on;                    /* --rate-limit=execution_count */
  int trace_level;     /* OR of the trace levels asked (1 timestamps, 2
                          tensors) */
  int trace_level_off; /* a level OFF was given: it wins, as in Triton */
  /* The rest of the trace settings (--trace-config, --trace-*). */
  const char *trace_file; /* borrowed: argv; NULL: none */
  unsigned trace_rate, trace_log_frequency;
  int trace_count;
  int trace_rate_set, trace_count_set; /* else tritonserver's defaults */
  int trace_otel;                      /* mode=opentelemetry (refused) */
  int cache_config;                    /* --cache-config given */
  int cache_byte_size;                 /* --response-cache-byte-size given */
  /* The response cache: --cache-config settings (each `backend` the cache
   * name; strings in cache_text), or --response-cache-byte-size as
   * local,size=<n>; --cache-directory (borrowed: argv). */
  const char *cache_name; /* borrowed: cache_cfg[0].backend */
  ifd_backend_setting_t cache_cfg[IFD_MAX_BACKEND_CONFIG];
  size_t n_cache_cfg;
  char *cache_text[IFD_MAX_BACKEND_CONFIG]; /* owned: split copies */
  char cache_size_text[32];
  const char *cache_dir;
  const char *refused;     /* borrowed: first flag whose feature is missing */
  const char *refused_why; /* borrowed: static text */
  /* Flags accepted without effect, in the order first given: one info
   * line each at start (ifd__app_options_report). */
  const char *no_effect[IFD_MAX_NO_EFFECT];     /* borrowed: flag names */
  const char *no_effect_why[IFD_MAX_NO_EFFECT]; /* borrowed: static text */
  size_t n_no_effect;
  /* --repoagent-directory (borrowed: argv; NULL: Triton's default). */
  const char *repoagent_dir;
  /* Cloud endpoints (docs/cloud_endpoints.md): --sagemaker-port (8080),
   * --sagemaker-safe-port-range, --vertex-ai-port (AIP_HTTP_PORT, else
   * 8080), --vertex-ai-default-model (borrowed: argv; NULL: the only
   * model). */
  int sagemaker_port;
  int sagemaker_range_set, sagemaker_range_lo, sagemaker_range_hi;
  int vertex_ai_port;
  const char *vertex_ai_default_model;
  /* --rate-limit-resource settings; names in rl_res_text. */
  ifd_rl_resource_t rl_res[IFD_MAX_RL_RESOURCES];
  size_t n_rl_res;
  char *rl_res_text[IFD_MAX_RL_RESOURCES]; /* owned: split copies */
} ifd_app_options_t;

/** Fills `o` with tritonserver's defaults (and inferd's for its own flags);
 *  the backend directory defaults to <directory of the executable>/backends. */
void ifd__app_options_init(ifd_app_options_t *o);

/**
 * Parses argv into `o` (initialized by ifd__app_options_init). Strings in
 * `o` point into argv (borrowed: argv outlives `o`) or into copies `o` owns
 * (free them with ifd__app_options_free). Returns 0, 1 when --help was
 * asked, or -1 after printing why to stderr.
 */
int ifd__app_options_parse(int argc, char **argv, ifd_app_options_t *o);

/** Logs one info line per flag given that has no effect in inferd:
 *  "--X has no effect in inferd: <why>". Call once logging is set up. */
void ifd__app_options_report(const ifd_app_options_t *o);

/** Prints the usage text (--help) to `f` (app/options_usage.c). */
void ifd__app_options_usage(FILE *f);

/** Frees what ifd__app_options_parse allocated; `o` is not used after. */
void ifd__app_options_free(ifd_app_options_t *o);

/** Prints "invalid value" for --`name` to stderr, then the usage; -1. */
int ifd__app_options_bad(const char *name, const char *value, const char *why);

#endif
