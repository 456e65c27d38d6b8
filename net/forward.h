/*
 * net/forward.h - tritonserver's --http-header-forward-pattern and
 * --grpc-header-forward-pattern: request headers whose name matches a
 * regular expression become string parameters of the inference request
 * (key: the header name as received, value: its value).
 *
 * A front end collects the matching headers of one request into an
 * ifd_fwd_buf_t while it parses them, then appends them to the request
 * after its own parameters are decoded (ifd__fwd_apply).
 */
#ifndef IFD_NET_FORWARD_H
#define IFD_NET_FORWARD_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/infer.h"

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
 * Compiles `pattern` (POSIX extended, case-insensitive: header names are) into
 * *re. Returns 0, or IFD_EINVAL with regerror's text in `err` (*re is then
 * not to be freed).
 */
int ifd__fwd_compile(regex_t *re, const char *pattern, ifd_errmsg_t *err);

/** Whether the NUL-terminated `name` matches anywhere in it (RE2's
 *  PartialMatch, as tritonserver matches). */
int ifd__fwd_match(const regex_t *re, const char *name);

/** Adds one complete header when its name matches. 0 or IFD_ENOMEM. */
int ifd__fwd_add(ifd_fwd_buf_t *b, const regex_t *re, const char *name,
                 size_t name_len, const char *value, size_t value_len);

/** HTTP/1.1's pieces: part of a name, part of a value, and the header's end
 *  (which matches the name and keeps or drops the pair). 0 or IFD_ENOMEM. */
int ifd__fwd_name(ifd_fwd_buf_t *b, const char *at, size_t n);
int ifd__fwd_value(ifd_fwd_buf_t *b, const char *at, size_t n);
int ifd__fwd_end(ifd_fwd_buf_t *b, const regex_t *re);

/** Forgets every pair (keeps the memory for the next request). */
void ifd__fwd_reset(ifd_fwd_buf_t *b);
/** Frees the buffer. */
void ifd__fwd_free(ifd_fwd_buf_t *b);

/**
 * Appends the `n` pairs of `data` (`len` bytes, as in ifd_fwd_buf_t) to
 * req's parameters as strings copied into req's pool. Returns 0 or
 * IFD_ENOMEM (with `err` set).
 */
int ifd__fwd_apply(ifd_request_t *req, const char *data, size_t len, uint32_t n,
                   ifd_errmsg_t *err);

#endif
