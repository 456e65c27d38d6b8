/*
 * app/options_settings.c - the values of tritonserver's setting flags,
 * each a small language of its own: --backend-config, --metrics-config,
 * --trace-config and the deprecated --trace-* flags, --cache-config. The
 * flag table and the parse loop that call them are app/options.c's.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"
#include "app/options_internal.h"

/* --backend-config=[<backend>,]<setting>=<value> (tritonserver's form; no
 * backend: every backend). The value may hold '=' and ','. 0 or -1. */
int ifd__opt_parse_backend_config(const char *value, ifd_app_options_t *o) {
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
 * counter_latencies (default true), histogram_latencies and
 * summary_latencies (default false), summary_quantiles (core/summary.h).
 * Other settings are ignored with a warning (tritonserver keeps
 * unknown ones without effect). Returns 0, or -1 after printing why. */
int ifd__opt_parse_metrics_config(const char *value, ifd_app_options_t *o) {
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
    if (ifd__opt_parse_bool(eq + 1, &b) < 0) {
      fprintf(stderr, "inferd: --metrics-config %.*s expects true or false\n",
              (int)klen, value);
      return -1;
    }
    if (KEY_IS("counter_latencies")) o->no_counter_latencies = !b;
    if (KEY_IS("histogram_latencies")) o->histogram_latencies = b;
    if (KEY_IS("summary_latencies")) o->summary_latencies = b;
  } else if (KEY_IS("summary_quantiles")) {
    char why[128];
    if (ifd_quantiles_parse(eq + 1, &o->quantiles, why, sizeof(why)) != 0) {
      fprintf(stderr, "inferd: --metrics-config summary_quantiles=%s: %s\n",
              eq + 1, why);
      return -1;
    }
  } else {
    IFD_WARN("--metrics-config %s: unknown setting, ignored", value);
  }
#undef KEY_IS
  return 0;
}

/* A trace level as tritonserver reads it: 0 OFF, 1 TIMESTAMPS, 2 TENSORS,
 * -1 invalid. */
int ifd__opt_trace_level(const char *v) {
  static const char *const off[] = {"false", "off"};
  static const char *const ts[] = {"true", "on", "min", "max", "timestamps"};
  size_t i;
  for (i = 0; i < 2; i++)
    if (strcasecmp(v, off[i]) == 0) return 0;
  for (i = 0; i < 5; i++)
    if (strcasecmp(v, ts[i]) == 0) return 1;
  return strcasecmp(v, "tensors") == 0 ? 2 : -1;
}

void ifd__opt_add_trace_level(ifd_app_options_t *o, int level) {
  if (level == 0)
    o->trace_level_off = 1;
  else
    o->trace_level |= level;
}

/* One trace setting (`key`, `val`) of mode triton or a global one, into
 * `o`. Returns 0 or -1 after printing why (`flag`, `v` name it). */
int ifd__opt_trace_setting(const char *flag, const char *v, const char *key,
                           size_t klen, const char *val, ifd_app_options_t *o) {
  long long n;
#define KEY_IS(k) (klen == strlen(k) && strncmp(key, k, klen) == 0)
  if (KEY_IS("file")) {
    o->trace_file = val;
    return 0;
  }
  if (KEY_IS("rate") || KEY_IS("count") || KEY_IS("log-frequency") ||
      KEY_IS("log_frequency")) {
    if (ifd__opt_parse_int(val, INT_MIN, INT_MAX, &n) < 0)
      return ifd__app_options_bad(flag, v, "expected an integer");
    if (KEY_IS("count")) {
      if (n < -1)
        return ifd__app_options_bad(flag, v, "trace count must be -1 or more");
      o->trace_count = (int)n;
      o->trace_count_set = 1;
    } else if (n < 0) {
      return ifd__app_options_bad(flag, v, "expected a non-negative integer");
    } else if (KEY_IS("rate")) {
      o->trace_rate = (unsigned)n;
      o->trace_rate_set = 1;
    } else {
      o->trace_log_frequency = (unsigned)n;
    }
  }
#undef KEY_IS
  return 0;
}

/* --trace-config [<mode>,]<setting>=<value>, as tritonserver reads it:
 * mode triton or opentelemetry; level, rate, count, file and log-frequency
 * take effect; settings of mode opentelemetry are accepted (that mode is
 * refused after every flag is read). Returns 0 or -1 after printing why. */
int ifd__opt_parse_trace_config(const char *v, ifd_app_options_t *o) {
  const char *comma = strchr(v, ','), *eq, *set = v;
  const char *fmt =
      "--trace-config option format is '<trace mode>,"
      "<setting>=<value>'";
  size_t klen;
  int otel = 0;
  if (comma == v)
    return ifd__app_options_bad("trace-config", v,
                                "No trace mode specified. --trace-config "
                                "option format is <trace mode>,<setting>="
                                "<value> or <setting>=<value>");
  eq = strchr(comma != NULL ? comma + 1 : v, '=');
  if (comma != NULL && eq != NULL && comma > eq) comma = NULL;
  if (comma != NULL) {
    char mode[32];
    size_t mlen = (size_t)(comma - v);
    if (mlen >= sizeof(mode) || (memcpy(mode, v, mlen), mode[mlen] = '\0',
                                 strcasecmp(mode, "triton") != 0 &&
                                     strcasecmp(mode, "opentelemetry") != 0))
      return ifd__app_options_bad("trace-config", v,
                                  "invalid value for trace mode option. "
                                  "Available options are \"triton\" and "
                                  "\"opentelemetry\"");
    otel = strcasecmp(mode, "opentelemetry") == 0;
    set = comma + 1;
  }
  if (eq == NULL || eq == set || eq[1] == '\0')
    return ifd__app_options_bad("trace-config", v, fmt);
  klen = (size_t)(eq - set);
#define KEY_IS(k) (klen == strlen(k) && strncmp(set, k, klen) == 0)
  if (KEY_IS("level")) {
    int l = ifd__opt_trace_level(eq + 1);
    if (l < 0)
      return ifd__app_options_bad("trace-config", v,
                                  "invalid value for trace level option");
    ifd__opt_add_trace_level(o, l);
    return 0;
  }
  if (KEY_IS("mode")) {
    if (strcasecmp(eq + 1, "triton") != 0 &&
        strcasecmp(eq + 1, "opentelemetry") != 0)
      return ifd__app_options_bad("trace-config", v,
                                  "invalid value for trace mode option. "
                                  "Available options are \"triton\" and "
                                  "\"opentelemetry\"");
    o->trace_otel = strcasecmp(eq + 1, "opentelemetry") == 0;
    return 0;
  }
#undef KEY_IS
  if (otel) return 0; /* opentelemetry's own settings: that mode is refused */
  return ifd__opt_trace_setting("trace-config", v, set, klen, eq + 1, o);
}

/* Keeps a checked --cache-config value: settings accumulate; one cache
 * only (tritonserver's cache manager holds one). 0 or -1. */
int ifd__opt_add_cache_config(const char *v, ifd_app_options_t *o) {
  char *t, *comma, *eq;
  ifd_backend_setting_t *b;
  if (o->n_cache_cfg == IFD_MAX_BACKEND_CONFIG) {
    fprintf(stderr, "inferd: too many --cache-config settings\n");
    return -1;
  }
  t = strdup(v);
  if (t == NULL) return -1;
  comma = strchr(t, ',');
  eq = strchr(comma + 1, '=');
  *comma = *eq = '\0';
  if (o->cache_name != NULL && strcmp(o->cache_name, t) != 0) {
    fprintf(stderr,
            "inferd: Error: only one cache can be configured: "
            "--cache-config names both '%s' and '%s'\n",
            o->cache_name, t);
    free(t);
    return -1;
  }
  b = &o->cache_cfg[o->n_cache_cfg];
  b->backend = t;
  b->setting = comma + 1;
  b->value = eq + 1;
  o->cache_text[o->n_cache_cfg++] = t;
  o->cache_name = t;
  return 0;
}

/* --cache-config <cache>,<setting>=<value> as tritonserver checks it. */
int ifd__opt_check_cache_config(const char *v) {
  const char *comma = strchr(v, ','), *eq;
  if (comma == NULL || comma == v)
    return ifd__app_options_bad("cache-config", v,
                                "No cache specified. --cache-config option "
                                "format is <cache name>,<setting>=<value>");
  eq = strchr(comma + 1, '=');
  if (eq == NULL || eq == comma + 1 || eq[1] == '\0')
    return ifd__app_options_bad("cache-config", v,
                                "--cache-config option format is '<cache "
                                "name>,<setting>=<value>'");
  return 0;
}
