/*
 * frontend/forward.c - the request headers that a transport collected for
 * --http-header-forward-pattern / --grpc-header-forward-pattern
 * (net/forward.h's pairs) become string parameters of an inference request.
 */
#include "frontend/forward.h"

#include <string.h>

#include "base/pool.h"

int ifd__fwd_apply(ifd_request_t *req, const char *data, size_t len, uint32_t n,
                   ifd_errmsg_t *err) {
  ifd_param_t *arr;
  const char *p, *end;
  uint32_t k, cap = 4;
  if (n == 0 || data == NULL) return 0; /* nothing forwarded (no buffer) */
  p = data;
  end = data + len;
  /* A new array (decoders size theirs exactly), with the capacity
   * ifd_request_add_param expects of an array it grows: a power of two,
   * at least 4. */
  while (cap < req->n_params + n) cap *= 2;
  arr = ifd_pool_alloc(&req->pool, (size_t)cap * sizeof(*arr));
  if (arr == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  if (req->n_params != 0)
    memcpy(arr, req->params, req->n_params * sizeof(*arr));
  for (k = 0; k < n && p < end; k++) {
    size_t kl = strlen(p), vl = strlen(p + kl + 1);
    ifd_param_t *q = &arr[req->n_params + k];
    memset(q, 0, sizeof(*q));
    q->type = IFD_PARAM_STRING;
    q->key = ifd_pool_strndup(&req->pool, p, kl);
    q->v.s = ifd_pool_strndup(&req->pool, p + kl + 1, vl);
    if (q->key == NULL || q->v.s == NULL)
      return ifd_errf(err, IFD_ENOMEM, "out of memory");
    p += kl + 1 + vl + 1;
  }
  req->params = arr;
  req->n_params += k;
  return 0;
}
