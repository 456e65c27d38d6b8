/*
 * app/options_values.c - single flag values as tritonserver reads them
 * (booleans, integers, doubles, the pair and generic forms its ignored and
 * refused flags are checked against) and the "invalid value" message. The
 * flag table and parse loop (app/options.c) and the setting languages
 * (app/options_settings.c) both read values through these; they call
 * neither back.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "app/options_internal.h"

int ifd__opt_parse_bool(const char *v, int *out) {
  static const char *yes[] = {"true", "1", "yes", "on"};
  static const char *no[] = {"false", "0", "no", "off"};
  size_t i;
  for (i = 0; i < 4; i++) {
    if (strcasecmp(v, yes[i]) == 0) return *out = 1, 0;
    if (strcasecmp(v, no[i]) == 0) return *out = 0, 0;
  }
  return -1;
}

int ifd__opt_parse_int(const char *v, long long lo, long long hi,
                       long long *out) {
  char *end;
  long long n;
  errno = 0;
  n = strtoll(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || n < lo || n > hi) return -1;
  *out = n;
  return 0;
}

/* A double as std::stod reads it (the whole text). 0 or -1. */
int ifd__opt_parse_double(const char *v, double *out) {
  char *end;
  errno = 0;
  *out = strtod(v, &end);
  return errno != 0 || end == v || *end != '\0' ? -1 : 0;
}

/* <int><sep><int-or-float> (tritonserver's ParsePairOption). 0 or -1. */
int ifd__opt_check_pair(const char *v, const char *sep, int second_float) {
  const char *d = strstr(v, sep);
  char first[32];
  long long n;
  double f;
  size_t len;
  if (d == NULL) return -1;
  len = (size_t)(d - v);
  if (len == 0 || len >= sizeof(first)) return -1;
  memcpy(first, v, len);
  first[len] = '\0';
  if (ifd__opt_parse_int(first, INT_MIN, INT_MAX, &n) < 0) return -1;
  d += strlen(sep);
  if (second_float) return ifd__opt_parse_double(d, &f);
  return ifd__opt_parse_int(d, LLONG_MIN, LLONG_MAX, &n);
}

/* <name><d1><setting><d2><value>, all three non-empty (tritonserver's
 * ParseGenericConfigOption). 0 or -1. */
int ifd__opt_check_generic(const char *v, char d1, char d2) {
  const char *a = strchr(v, d1), *b;
  if (a == NULL || a == v) return -1;
  b = strchr(a + 1, d2);
  return b == NULL || b == a + 1 || b[1] == '\0' ? -1 : 0;
}

/* <name>:<count>[:<device>] (tritonserver's ParseRateLimiterResourceOption).
 * 0 or -1. */
int ifd__opt_check_resource(const char *v) {
  const char *a = strchr(v, ':'), *b;
  char num[32];
  long long n;
  size_t len;
  if (a == NULL) return -1;
  b = strchr(a + 1, ':');
  if (b == NULL) return ifd__opt_parse_int(a + 1, INT_MIN, INT_MAX, &n);
  if (strchr(b + 1, ':') != NULL) return -1;
  len = (size_t)(b - a - 1);
  if (len == 0 || len >= sizeof(num)) return -1;
  memcpy(num, a + 1, len);
  num[len] = '\0';
  if (ifd__opt_parse_int(num, INT_MIN, INT_MAX, &n) < 0) return -1;
  return ifd__opt_parse_int(b + 1, INT_MIN, INT_MAX, &n);
}

int ifd__app_options_bad(const char *name, const char *value, const char *why) {
  fprintf(stderr, "inferd: invalid value '%s' for --%s: %s\n", value, name,
          why);
  ifd__app_options_usage(stderr);
  return -1;
}
