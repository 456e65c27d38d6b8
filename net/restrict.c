/*
 * net/restrict.c - Triton's restricted APIs: parsing the flags and matching
 * request headers against the rules (see net/restrict.h). Which endpoint
 * belongs to which group is decided where the endpoints are: the HTTP
 * routes (frontend/http_routes.c) and the gRPC method table
 * (frontend/grpc_service.c).
 */
#include "base/check.h"
#include "net/restrict.h"

#include <stdlib.h>
#include <string.h>

static const char *const group_names[IFD_API_COUNT] = {
    "health",        "metadata",     "inference",
    "shared-memory", "model-config", "model-repository",
    "statistics",    "trace",        "logging",
};

ifd_api_group_t ifd_restrict_group(const char *name, size_t len) {
  unsigned g;

  for (g = 0; g < IFD_API_COUNT; g++)
    if (strlen(group_names[g]) == len && memcmp(group_names[g], name, len) == 0)
      return (ifd_api_group_t)g;
  return IFD_API_NONE;
}

static char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
}

static char *dup_n(const char *a, size_t na, const char *b, size_t nb) {
  char *p = malloc(na + nb + 1);

  if (p == NULL) return NULL;
  memcpy(p, a, na);
  memcpy(p + na, b, nb);
  p[na + nb] = '\0';
  return p;
}

int ifd_restrict_add(ifd_restrict_t *r, const char *arg, const char *prefix,
                     const char *what, ifd_errmsg_t *err) {
  const char *colon = strchr(arg, ':'), *eq, *p, *key;
  uint16_t groups = 0;
  ifd_restrict_rule_t *rule;
  size_t i;

  if (colon == NULL || (eq = strchr(colon + 1, '=')) == NULL)
    return ifd_errf(err, IFD_EINVAL,
                    "'%s' is not <api-list>:<key>=<value> (e.g. "
                    "model-repository:admin-key=secret)",
                    arg);
  key = colon + 1;
  if (eq == key || eq[1] == '\0' || colon == arg)
    return ifd_errf(err, IFD_EINVAL,
                    "'%s': the api list, the key and the value must not be "
                    "empty",
                    arg);
  for (p = key; p < eq; p++)
    if (*p <= ' ' || *p >= 0x7f || *p == ':')
      return ifd_errf(err, IFD_EINVAL, "'%s': invalid header name '%.*s'", arg,
                      (int)(eq - key), key);
  for (p = arg;; p++) {
    const char *end = memchr(p, ',', (size_t)(colon - p));
    ifd_api_group_t g;
    if (end == NULL) end = colon;
    g = ifd_restrict_group(p, (size_t)(end - p));
    if (g == IFD_API_NONE)
      return ifd_errf(err, IFD_EINVAL, "unknown restricted %s '%.*s'", what,
                      (int)(end - p), p);
    if (((r->restricted | groups) >> g) & 1u)
      return ifd_errf(err, IFD_EINVAL,
                      "restricted %s '%s' can not be specified in multiple "
                      "config groups",
                      what, group_names[g]);
    groups |= (uint16_t)(1u << g);
    p = end;
    if (p == colon) break;
  }
  if (NEVER(r->n_rules == IFD_API_COUNT)) /* every rule has a new group */
    return ifd_errf(err, IFD_EINVAL, "too many restricted %s rules", what);
  rule = &r->rules[r->n_rules];
  rule->header = dup_n(prefix, strlen(prefix), key, (size_t)(eq - key));
  rule->value = dup_n("", 0, eq + 1, strlen(eq + 1));
  if (rule->header == NULL || rule->value == NULL) {
    free(rule->header);
    free(rule->value);
    rule->header = rule->value = NULL;
    return ifd_errf(err, IFD_ENOMEM, "out of memory");
  }
  rule->header_len = strlen(rule->header);
  rule->value_len = strlen(rule->value);
  rule->groups = groups;
  for (i = 0; i < IFD_API_COUNT; i++)
    if ((groups >> i) & 1u) r->rule_of[i] = (uint8_t)r->n_rules;
  r->restricted |= groups;
  r->n_rules++;
  return 0;
}

void ifd_restrict_free(ifd_restrict_t *r) {
  unsigned i;

  for (i = 0; i < r->n_rules; i++) {
    free(r->rules[i].header);
    free(r->rules[i].value);
  }
  memset(r, 0, sizeof(*r));
}

static int name_eq(const char *want, const uint8_t *name, size_t n) {
  size_t i;

  for (i = 0; i < n; i++)
    if (lower(want[i]) != lower((char)name[i])) return 0;
  return 1;
}

uint16_t ifd_restrict_match(const ifd_restrict_t *r, const uint8_t *name,
                            size_t name_len, const uint8_t *value,
                            size_t value_len) {
  uint16_t ok = 0;
  unsigned i;

  for (i = 0; i < r->n_rules; i++) {
    const ifd_restrict_rule_t *rule = &r->rules[i];
    if (rule->header_len == name_len && rule->value_len == value_len &&
        name_eq(rule->header, name, name_len) &&
        memcmp(rule->value, value, value_len) == 0)
      ok |= rule->groups;
  }
  return ok;
}

/* ---- the streaming matcher ---------------------------------------------- */

void ifd_restrict_scan_name(const ifd_restrict_t *r, ifd_restrict_scan_t *s,
                            const char *at, size_t n) {
  unsigned i;

  if (s->phase != 1) {
    s->phase = 1;
    s->off = 0;
    s->cand = (uint16_t)((1u << r->n_rules) - 1);
  }
  for (i = 0; i < r->n_rules; i++) {
    const ifd_restrict_rule_t *rule = &r->rules[i];
    if (!((s->cand >> i) & 1u)) continue;
    if (n > rule->header_len - s->off ||
        !name_eq(rule->header + s->off, (const uint8_t *)at, n))
      s->cand &= (uint16_t) ~(1u << i);
  }
  s->off += (uint32_t)n;
}

/* The name is complete: only rules of exactly that length stay. */
static void end_name(const ifd_restrict_t *r, ifd_restrict_scan_t *s) {
  unsigned i;

  for (i = 0; i < r->n_rules; i++)
    if (r->rules[i].header_len != s->off) s->cand &= (uint16_t) ~(1u << i);
  s->phase = 2;
  s->off = 0;
}

void ifd_restrict_scan_value(const ifd_restrict_t *r, ifd_restrict_scan_t *s,
                             const char *at, size_t n) {
  unsigned i;

  if (s->phase == 1) end_name(r, s);
  if (s->phase != 2) return;
  for (i = 0; i < r->n_rules; i++) {
    const ifd_restrict_rule_t *rule = &r->rules[i];
    if (!((s->cand >> i) & 1u)) continue;
    if (n > rule->value_len - s->off ||
        memcmp(rule->value + s->off, at, n) != 0)
      s->cand &= (uint16_t) ~(1u << i);
  }
  s->off += (uint32_t)n;
}

void ifd_restrict_scan_done(const ifd_restrict_t *r, ifd_restrict_scan_t *s) {
  unsigned i;

  if (s->phase == 1) end_name(r, s); /* an empty value */
  if (s->phase == 2)
    for (i = 0; i < r->n_rules; i++)
      if (((s->cand >> i) & 1u) && r->rules[i].value_len == s->off)
        s->ok |= r->rules[i].groups;
  s->phase = 0;
  s->cand = 0;
  s->off = 0;
}
