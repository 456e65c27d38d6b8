/*
 * net/restrict.h - Triton's restricted APIs: `--http-restricted-api` and
 * `--grpc-restricted-protocol`, each `<api-list>:<key>=<value>` and
 * repeatable. A request to an endpoint of a restricted group is served only
 * when it carries the header `key` (HTTP; the name compared without regard
 * to case) or the metadata `triton-grpc-protocol-<key>` (gRPC) with exactly
 * `value`; otherwise HTTP answers 403 and gRPC UNAVAILABLE, with Triton's
 * texts. A group may appear in one rule only.
 *
 * The HTTP/1.1 parser hands header names and values over in pieces, so the
 * check is a small streaming matcher (ifd_restrict_scan_t, a few bytes per
 * connection) rather than a copy of the header.
 */
#ifndef IFD_NET_RESTRICT_H
#define IFD_NET_RESTRICT_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/** Triton's API groups ("categories"), in Triton's order. */
typedef enum ifd_api_group {
  IFD_API_HEALTH = 0,
  IFD_API_METADATA,
  IFD_API_INFERENCE,
  IFD_API_SHARED_MEMORY,
  IFD_API_MODEL_CONFIG,
  IFD_API_MODEL_REPOSITORY,
  IFD_API_STATISTICS,
  IFD_API_TRACE,
  IFD_API_LOGGING,
  IFD_API_COUNT,
  IFD_API_NONE = IFD_API_COUNT, /* an endpoint of no group (never restricted) */
} ifd_api_group_t;

/** One `<api-list>:<key>=<value>`. */
typedef struct ifd_restrict_rule {
  char *header; /* owned: the header name expected (prefix + key) */
  size_t header_len;
  char *value; /* owned */
  size_t value_len;
  uint16_t groups; /* bit g: the rule covers group g */
} ifd_restrict_rule_t;

/** The rules of one front end. Zero-initialized: nothing is restricted. */
typedef struct ifd_restrict {
  ifd_restrict_rule_t rules[IFD_API_COUNT];
  unsigned n_rules;
  uint16_t restricted;            /* bit g: group g is restricted */
  uint8_t rule_of[IFD_API_COUNT]; /* group -> index in rules */
} ifd_restrict_t;

/**
 * Adds the rule `arg` ("<api-list>:<key>=<value>"; the list is comma
 * separated). The expected header is `prefix` followed by the key
 * (`prefix` "" for HTTP, "triton-grpc-protocol-" for gRPC); `what` names
 * the flag's kind in messages ("API", "protocol"). Returns 0, or IFD_EINVAL
 * with Triton's message (malformed, unknown group, group already in another
 * rule), or IFD_ENOMEM. On failure `r` is unchanged.
 */
int ifd_restrict_add(ifd_restrict_t *r, const char *arg, const char *prefix,
                     const char *what, ifd_errmsg_t *err);

/** Frees the rules' strings; `r` is empty again. */
void ifd_restrict_free(ifd_restrict_t *r);

/** Group of a name ("model-repository"), or IFD_API_NONE. */
ifd_api_group_t ifd_restrict_group(const char *name, size_t len);

/** Non-zero when `g` is restricted in `r` (`r` may be NULL). */
static inline int ifd_restrict_on(const ifd_restrict_t *r, ifd_api_group_t g) {
  return r != NULL && g < IFD_API_COUNT && ((r->restricted >> g) & 1u);
}

/** The header a request to `g` needs (restricted groups only). */
static inline const char *ifd_restrict_header(const ifd_restrict_t *r,
                                              ifd_api_group_t g) {
  return r->rules[r->rule_of[g]].header;
}

/**
 * A whole header field (gRPC metadata): returns the groups whose rule it
 * satisfies (bit g), 0 for none. The name is compared without regard to
 * case, the value exactly.
 */
uint16_t ifd_restrict_match(const ifd_restrict_t *r, const uint8_t *name,
                            size_t name_len, const uint8_t *value,
                            size_t value_len);

/** A header field arriving in pieces (HTTP/1.1). Zeroed: ready. */
typedef struct ifd_restrict_scan {
  uint16_t ok;   /* groups satisfied so far in this message */
  uint16_t cand; /* rules still matching the field being read */
  uint32_t off;  /* bytes of the name or value compared so far */
  uint8_t phase; /* 0: between fields, 1: in a name, 2: in a value */
} ifd_restrict_scan_t;

/** A new message begins: forgets what the last one satisfied. */
static inline void ifd_restrict_scan_reset(ifd_restrict_scan_t *s) {
  s->ok = 0;
  s->cand = 0;
  s->off = 0;
  s->phase = 0;
}
/** Another piece of a header name. */
void ifd_restrict_scan_name(const ifd_restrict_t *r, ifd_restrict_scan_t *s,
                            const char *at, size_t n);
/** Another piece of a header value. */
void ifd_restrict_scan_value(const ifd_restrict_t *r, ifd_restrict_scan_t *s,
                             const char *at, size_t n);
/** The field is complete: a rule whose name and value both matched counts. */
void ifd_restrict_scan_done(const ifd_restrict_t *r, ifd_restrict_scan_t *s);

#endif
