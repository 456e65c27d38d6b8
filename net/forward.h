/*
 * net/forward.h - tritonserver's --http-header-forward-pattern and
 * --grpc-header-forward-pattern: request headers whose name matches a
 * regular expression become string parameters of the inference request
 * (key: the header name as received, value: its value).
 *
 * A transport collects the matching headers of one request into an
 * ifd_fwd_buf_t while it parses them; the application appends them to the
 * request after its own parameters are decoded (frontend/forward.h's
 * ifd__fwd_apply).
 */
#ifndef IFD_NET_FORWARD_H
#define IFD_NET_FORWARD_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/**
 * A compiled header-name pattern: tritonserver's RE2 syntax, as Debian's
 * PCRE2 takes it (RE2's syntax is, but for a few Perl-only extras PCRE2
 * also accepts, a subset of PCRE2's), with RE2's meaning where they differ:
 * case-insensitive unless the pattern says "(?-i)" (tritonserver puts
 * "(?i)" before it), UTF-8, `$` only at the very end, and bounded
 * backtracking (RE2 never backtracks).
 */
typedef struct ifd_fwd_re {
  void *code;  /* owned: pcre2_code */
  void *mctx;  /* owned: pcre2_match_context (the backtracking bounds) */
  void *match; /* owned: pcre2_match_data, reused (loop thread only) */
} ifd_fwd_re_t;

/** Matching headers of one request: "name\0value\0" pairs in `data`. */
typedef struct ifd_fwd_buf {
  char *data; /* owned (malloc'd), or NULL before the first header */
  size_t len; /* bytes of complete pairs */
  size_t cap;
  uint32_t n; /* complete pairs */
  /* A header being received in pieces (HTTP/1.1): its name, then (once
   * in_value) '\0' and its value, after `len`. */
  size_t pend;
  unsigned in_value : 1;
} ifd_fwd_buf_t;

/**
 * Compiles `pattern` into *re (see ifd_fwd_re_t). Returns 0, or IFD_EINVAL
 * with PCRE2's reason and the offset in `err` (*re is then not to be
 * freed), IFD_ENOMEM.
 */
int ifd__fwd_compile(ifd_fwd_re_t *re, const char *pattern, ifd_errmsg_t *err);

/** Frees what ifd__fwd_compile made. */
void ifd__fwd_re_free(ifd_fwd_re_t *re);

/** Whether the NUL-terminated `name` matches anywhere in it (RE2's
 *  PartialMatch, as tritonserver matches). A name that would take the
 *  matcher past its backtracking bounds does not match. Loop thread. */
int ifd__fwd_match(const ifd_fwd_re_t *re, const char *name);

/** Adds one complete header when its name matches. 0 or IFD_ENOMEM. */
int ifd__fwd_add(ifd_fwd_buf_t *b, const ifd_fwd_re_t *re, const char *name,
                 size_t name_len, const char *value, size_t value_len);

/** HTTP/1.1's pieces: part of a name, part of a value, and the header's end
 *  (which matches the name and keeps or drops the pair). 0 or IFD_ENOMEM. */
int ifd__fwd_name(ifd_fwd_buf_t *b, const char *at, size_t n);
int ifd__fwd_value(ifd_fwd_buf_t *b, const char *at, size_t n);
int ifd__fwd_end(ifd_fwd_buf_t *b, const ifd_fwd_re_t *re);

/** Forgets every pair (keeps the memory for the next request). */
void ifd__fwd_reset(ifd_fwd_buf_t *b);
/** Frees the buffer. */
void ifd__fwd_free(ifd_fwd_buf_t *b);

#endif
