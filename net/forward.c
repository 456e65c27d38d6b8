/*
 * net/forward.c - request headers forwarded as inference request
 * parameters (--http-header-forward-pattern, --grpc-header-forward-pattern).
 */
#include "net/forward.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

/* Bounds on one match: header names are short, so a pattern that needs more
 * than this is pathological (RE2 would answer in linear time). */
#define MATCH_LIMIT 100000u
#define DEPTH_LIMIT 10000u

int ifd__fwd_compile(ifd_fwd_re_t *re, const char *pattern, ifd_errmsg_t *err) {
  /* RE2's defaults: UTF-8 text (invalid bytes simply do not match), `$`
   * only at the end; and tritonserver's "(?i)". */
  const uint32_t opts = PCRE2_CASELESS | PCRE2_UTF | PCRE2_MATCH_INVALID_UTF |
                        PCRE2_DOLLAR_ENDONLY | PCRE2_NEVER_BACKSLASH_C |
                        PCRE2_NO_AUTO_CAPTURE;
  PCRE2_UCHAR why[160];
  PCRE2_SIZE off = 0;
  int code = 0;

  memset(re, 0, sizeof(*re));
  re->code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, opts,
                           &code, &off, NULL);
  if (re->code == NULL) {
    if (pcre2_get_error_message(code, why, sizeof(why)) < 0)
      strcpy((char *)why, "invalid pattern");
    return ifd_errf(err, IFD_EINVAL, "%s at offset %zu", (const char *)why,
                    (size_t)off);
  }
  re->mctx = pcre2_match_context_create(NULL);
  re->match = pcre2_match_data_create_from_pattern(re->code, NULL);
  if (re->mctx == NULL || re->match == NULL) {
    ifd__fwd_re_free(re);
    return ifd_errf(err, IFD_ENOMEM, "out of memory");
  }
  pcre2_set_match_limit(re->mctx, MATCH_LIMIT);
  pcre2_set_depth_limit(re->mctx, DEPTH_LIMIT);
  return 0;
}

void ifd__fwd_re_free(ifd_fwd_re_t *re) {
  pcre2_match_data_free(re->match);
  pcre2_match_context_free(re->mctx);
  pcre2_code_free(re->code);
  memset(re, 0, sizeof(*re));
}

int ifd__fwd_match(const ifd_fwd_re_t *re, const char *name) {
  return pcre2_match(re->code, (PCRE2_SPTR)name, PCRE2_ZERO_TERMINATED, 0, 0,
                     re->match, re->mctx) >= 0;
}

/* Makes room for `n` more bytes after len + pend. 0 or IFD_ENOMEM. */
static int reserve(ifd_fwd_buf_t *b, size_t n) {
  size_t need = b->len + b->pend + n, cap = b->cap ? b->cap : 256;
  char *d;
  if (need <= b->cap) return 0;
  while (cap < need) cap *= 2;
  d = realloc(b->data, cap);
  if (d == NULL) return IFD_ENOMEM;
  b->data = d;
  b->cap = cap;
  return 0;
}

static int append(ifd_fwd_buf_t *b, const char *at, size_t n) {
  if (n == 0) return 0; /* b->data may still be NULL */
  if (reserve(b, n) != 0) return IFD_ENOMEM;
  memcpy(b->data + b->len + b->pend, at, n);
  b->pend += n;
  return 0;
}

int ifd__fwd_add(ifd_fwd_buf_t *b, const ifd_fwd_re_t *re, const char *name,
                 size_t name_len, const char *value, size_t value_len) {
  b->pend = 0;
  if (append(b, name, name_len) != 0 || append(b, "", 1) != 0)
    return IFD_ENOMEM;
  if (!ifd__fwd_match(re, b->data + b->len)) {
    b->pend = 0;
    return 0;
  }
  if (append(b, value, value_len) != 0 || append(b, "", 1) != 0)
    return IFD_ENOMEM;
  b->len += b->pend;
  b->pend = 0;
  b->n++;
  return 0;
}

int ifd__fwd_name(ifd_fwd_buf_t *b, const char *at, size_t n) {
  if (b->in_value) { /* a header without its end: start over */
    b->pend = 0;
    b->in_value = 0;
  }
  return append(b, at, n);
}

int ifd__fwd_value(ifd_fwd_buf_t *b, const char *at, size_t n) {
  if (!b->in_value) {
    if (append(b, "", 1) != 0) return IFD_ENOMEM;
    b->in_value = 1;
  }
  return append(b, at, n);
}

int ifd__fwd_end(ifd_fwd_buf_t *b, const ifd_fwd_re_t *re) {
  int rc = 0;
  if (!b->in_value) rc = append(b, "", 1); /* an empty value */
  if (rc == 0) rc = append(b, "", 1);
  if (rc == 0 && ifd__fwd_match(re, b->data + b->len)) {
    b->len += b->pend;
    b->n++;
  }
  b->pend = 0;
  b->in_value = 0;
  return rc;
}

void ifd__fwd_reset(ifd_fwd_buf_t *b) {
  b->len = b->pend = 0;
  b->n = 0;
  b->in_value = 0;
}

void ifd__fwd_free(ifd_fwd_buf_t *b) {
  free(b->data);
  memset(b, 0, sizeof(*b));
}
