/*
 * app/options_check.c - what inferd's command line is checked against once
 * every flag is read (app/options.c's parse loop ends here): model control,
 * the flags whose feature inferd lacks, Unix socket paths and port
 * collisions as tritonserver checks them; and the flags accepted without
 * effect, recorded while parsing and reported once logging is set up.
 */
#include <stdio.h>
#include <string.h>

#include "app/options_internal.h"
#include "base/log.h"

/* Notes a flag accepted without effect, once per name. */
void ifd__opt_no_effect(ifd_app_options_t *o, const char *name,
                        const char *why) {
  size_t k;
  for (k = 0; k < o->n_no_effect; k++)
    if (strcmp(o->no_effect[k], name) == 0) return;
  if (o->n_no_effect == IFD_MAX_NO_EFFECT) return;
  o->no_effect[o->n_no_effect] = name;
  o->no_effect_why[o->n_no_effect++] = why;
}

/* Prints "--<name> is not supported by inferd yet: <why>" and returns -1. */
static int refuse(const char *name, const char *why) {
  fprintf(stderr, "inferd: --%s is not supported by inferd yet: %s\n", name,
          why);
  return -1;
}

/* The model control flags together, as tritonserver takes them: '*' must
 * be the only --load-model; --load-model only matters in explicit mode
 * (tritonserver ignores it otherwise: so do we, with a warning); polling
 * needs a positive interval. Returns 0 or -1 after printing why. */
static int check_control(ifd_app_options_t *o) {
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

/* The unix: addresses: two services on one socket path collide (tritonserver's
 * port collision, for paths); the metrics service, which defaults to the
 * HTTP address, stays on TCP 0.0.0.0 when HTTP listens on a socket; the
 * socket file flags of a service on TCP have no effect (one info line).
 * Returns 0 or -1 after printing why. */
static int check_unix(ifd_app_options_t *o) {
  struct {
    const char *name, *flag, *addr;
    int on;
    const ifd_unix_perm_t *perm;
  } s[3];
  int i, j;

  if (o->metrics_address == NULL && ifd__net_is_unix(o->http_address))
    o->metrics_address = "0.0.0.0";
  s[0].name = "HTTP", s[0].flag = "http-unix-socket-*";
  s[0].addr = o->http_address, s[0].on = o->allow_http;
  s[0].perm = &o->http_unix;
  s[1].name = "GRPC", s[1].flag = "grpc-unix-socket-*";
  s[1].addr = o->grpc_address, s[1].on = o->allow_grpc;
  s[1].perm = &o->grpc_unix;
  s[2].name = "metrics", s[2].flag = "metrics-unix-socket-*";
  s[2].addr = o->metrics_address != NULL ? o->metrics_address : "";
  s[2].on = o->allow_metrics, s[2].perm = &o->metrics_unix;
  for (i = 0; i < 3; i++) {
    int given =
        s[i].perm->mode >= 0 || s[i].perm->uid >= 0 || s[i].perm->gid >= 0;
    if (!ifd__net_is_unix(s[i].addr)) {
      if (given)
        ifd__opt_no_effect(o, s[i].flag,
                           "its service does not listen on a unix: address");
      continue;
    }
    for (j = i + 1; j < 3; j++)
      if (s[i].on && s[j].on && ifd__net_is_unix(s[j].addr) &&
          strcmp(ifd__net_unix_path(s[i].addr),
                 ifd__net_unix_path(s[j].addr)) == 0) {
        fprintf(stderr,
                "inferd: The server cannot listen to %s requests and %s "
                "requests on the same socket %s\n",
                s[i].name, s[j].name, s[i].addr);
        return -1;
      }
  }
  return 0;
}

/* tritonserver's CheckPortCollision: two enabled services on one address
 * and port are refused (with --reuse-*-port they would otherwise share the
 * listener's connections). Port 0 (a free port each) never collides.
 * Returns 0 or -1 after printing why. */
static int check_ports(const ifd_app_options_t *o) {
  struct {
    const char *name, *addr;
    int port, on, range, lo, hi;
  } s[5] = {
      {"HTTP", o->http_address, o->http_port, o->allow_http, 0, 0, 0},
      {"GRPC", o->grpc_address, o->grpc_port, o->allow_grpc, 0, 0, 0},
      {"metrics",
       o->metrics_address != NULL ? o->metrics_address : o->http_address,
       o->metrics_port, o->allow_metrics, 0, 0, 0},
      /* tritonserver binds both cloud endpoints to 0.0.0.0. */
      {"SageMaker", "0.0.0.0", o->sagemaker_port, o->allow_sagemaker,
       o->sagemaker_range_set, o->sagemaker_range_lo, o->sagemaker_range_hi},
      {"Vertex AI", "0.0.0.0", o->vertex_ai_port, o->allow_vertex_ai, 0, 0, 0},
  };
  int i, j;
  for (i = 0; i < 5; i++) {
    if (!s[i].on) continue;
    /* A service with an allowed port range checks every other one. */
    for (j = s[i].range ? 0 : i + 1; j < 5; j++) {
      if (j == i || !s[j].on || strcmp(s[i].addr, s[j].addr) != 0) continue;
      /* Sockets collide by path only (check_unix). */
      if (ifd__net_is_unix(s[i].addr)) continue;
      if (s[i].range && (s[j].port < s[i].lo || s[j].port > s[i].hi)) {
        fprintf(stderr,
                "inferd: The server cannot listen to %s requests at port "
                "%d, allowed port range is [%d, %d]\n",
                s[j].name, s[j].port, s[i].lo, s[i].hi);
        return -1;
      }
      if (s[i].port != 0 && s[i].port == s[j].port) {
        fprintf(stderr,
                "inferd: The server cannot listen to %s requests and %s "
                "requests at the same address and port %s:%d\n",
                s[i].name, s[j].name, s[i].addr, s[i].port);
        return -1;
      }
    }
  }
  return 0;
}

/* The flags whose feature inferd lacks, refused once every flag is read
 * (tritonserver's own cross-flag checks first). Also applies
 * --disable-auto-complete-config. Returns 0 or -1 after printing why. */
static int check_features(ifd_app_options_t *o) {
  if (o->cache_config && o->cache_byte_size) {
    fprintf(stderr,
            "inferd: Error: Incompatible flags --response-cache-byte-size "
            "and --cache-config both provided. Please provide one or the "
            "other.\n");
    return -1;
  }
  if (o->cache_byte_size) {
    o->cache_name = "local";
    o->cache_cfg[0] =
        (ifd_backend_setting_t){"local", "size", o->cache_size_text};
    o->n_cache_cfg = 1;
  }
  if (o->disable_auto_complete) o->strict_config = 1;
  /* tritonserver takes the resources and ignores them when off. */
  if (!o->rate_limit_on && o->n_rl_res > 0)
    ifd__opt_no_effect(
        o, "rate-limit-resource",
        "--rate-limit is off: instances run as soon as they are free");
  if (o->trace_otel)
    return refuse("trace-config",
                  "trace mode opentelemetry is not supported by inferd yet; "
                  "use mode triton (the default)");
  if (o->refused != NULL) return refuse(o->refused, o->refused_why);
  return 0;
}

int ifd__opt_check_all(ifd_app_options_t *o) {
  if (check_features(o) < 0 || check_unix(o) < 0 || check_ports(o) < 0)
    return -1;
  if (o->exit_timeout_secs < 0) o->exit_timeout_secs = 0;
  return check_control(o);
}

void ifd__app_options_report(const ifd_app_options_t *o) {
  size_t k;
  for (k = 0; k < o->n_no_effect; k++)
    IFD_INFO("--%s has no effect in inferd: %s", o->no_effect[k],
             o->no_effect_why[k]);
}
