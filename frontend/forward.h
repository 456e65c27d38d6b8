/*
 * frontend/forward.h - forwarded headers into an inference request: the
 * pairs a transport collected (net/forward.h) become request parameters.
 */
#ifndef IFD_FRONTEND_FORWARD_H
#define IFD_FRONTEND_FORWARD_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "core/infer.h"

/**
 * Appends the `n` pairs of `data` (`len` bytes, as in net/forward.h's
 * ifd_fwd_buf_t) to req's parameters as strings copied into req's pool.
 * Returns 0 or IFD_ENOMEM (with `err` set).
 */
int ifd__fwd_apply(ifd_request_t *req, const char *data, size_t len, uint32_t n,
                   ifd_errmsg_t *err);

#endif
