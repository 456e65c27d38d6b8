/*
 * net/grpc_zip.c - gRPC message compression, both ways, with zlib: gzip
 * (RFC 1952) and gRPC's "deflate" (a zlib stream, RFC 1950), the two
 * algorithms gRPC core offers besides identity.
 *
 * Responses: --grpc-infer-response-compression-level picks an algorithm
 * among those the client accepts (net/grpc_send.c); a message that would
 * not shrink goes out as it is. Requests: a message whose compressed flag
 * is set is inflated as its call's grpc-encoding says, into a buffer of at
 * most the maximum message size (the limit applies to what the message
 * decompresses to, so a small "zip bomb" is refused, not expanded). Runs
 * on the loop: zlib inflates hundreds of MB/s, and a message is bounded by
 * --grpc-max-message-size.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/bufpool.h"
#include "base/error.h"
#include "net/grpc_conn.h"

/* First output buffer for an inflate, grown by doubling. */
#define INFLATE_FIRST ((size_t)64 << 10)

uint8_t ifd__gzip_accepted(const char *v, size_t n) {
  uint8_t bits = 0;
  size_t i = 0;
  while (i < n) {
    size_t b, e;
    while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ',')) i++;
    b = i;
    while (i < n && v[i] != ',') i++;
    e = i;
    while (e > b && (v[e - 1] == ' ' || v[e - 1] == '\t')) e--;
    if (e - b == 4 && memcmp(v + b, "gzip", 4) == 0) bits |= 1u << ZIP_GZIP;
    if (e - b == 7 && memcmp(v + b, "deflate", 7) == 0)
      bits |= 1u << ZIP_DEFLATE;
  }
  return bits;
}

int ifd__gzip_algo(const char *v) {
  if (strcmp(v, "gzip") == 0) return ZIP_GZIP;
  if (strcmp(v, "deflate") == 0) return ZIP_DEFLATE;
  return ZIP_NONE;
}

/* zlib's window bits for `zip`: 15, plus 16 for the gzip wrapper. */
static int window_bits(int zip) {
  return 15 + (zip == ZIP_GZIP ? 16 : 0);
}

ifd__gzip_msg_t *ifd__gzip_compress(const uv_buf_t *iov, unsigned n,
                                    uint64_t total, int zip) {
  z_stream zs;
  ifd__gzip_msg_t *z;
  uLong bound;
  unsigned i;
  int rc = Z_OK;

  memset(&zs, 0, sizeof(zs));
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, window_bits(zip), 8,
                   Z_DEFAULT_STRATEGY) != Z_OK)
    return NULL;
  bound = deflateBound(&zs, (uLong)total) + 32; /* + the gzip trailer */
  z = malloc(sizeof(*z) + bound);
  if (z == NULL) {
    deflateEnd(&zs);
    return NULL;
  }
  zs.next_out = z->data;
  zs.avail_out = (uInt)bound;
  for (i = 0; i < n && rc == Z_OK; i++) {
    zs.next_in = (Bytef *)iov[i].base;
    zs.avail_in = (uInt)iov[i].len;
    rc = deflate(&zs, Z_NO_FLUSH);
  }
  if (rc == Z_OK) rc = deflate(&zs, Z_FINISH);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END || zs.total_out >= total) {
    free(z);
    return NULL;
  }
  z->iov = uv_buf_init((char *)z->data, (unsigned)zs.total_out);
  return z;
}

int ifd__gzip_inflate(const uint8_t *in, size_t len, int zip, uint64_t max,
                      uint8_t **out, size_t *out_len) {
  z_stream zs;
  uint8_t *buf = NULL, *grown;
  size_t cap = 0;
  int rc = Z_OK, ret = IFD_EINVAL;

  memset(&zs, 0, sizeof(zs));
  if (inflateInit2(&zs, window_bits(zip)) != Z_OK) return IFD_ENOMEM;
  zs.next_in = (Bytef *)in;
  zs.avail_in = (uInt)len;
  while (rc == Z_OK) {
    if (zs.avail_out == 0) {
      size_t next = cap == 0 ? INFLATE_FIRST : cap * 2;
      if (cap >= max + 1) {
        ret = IFD_ETOOBIG;
        goto fail;
      }
      /* One byte past the maximum tells a message that is too big. */
      if (next > max + 1) next = (size_t)max + 1;
      grown = ifd_bufpool_grow(ifd_bufpool_shared(), buf, cap, next);
      if (grown == NULL) {
        ret = IFD_ENOMEM;
        goto fail;
      }
      buf = grown;
      zs.next_out = buf + cap;
      zs.avail_out = (uInt)(next - cap);
      cap = next;
    }
    rc = inflate(&zs, Z_NO_FLUSH);
  }
  /* A whole stream, and nothing after it. */
  if (rc != Z_STREAM_END || zs.avail_in != 0) {
    ret = rc == Z_MEM_ERROR ? IFD_ENOMEM : IFD_EINVAL;
    goto fail;
  }
  if (zs.total_out > max) {
    ret = IFD_ETOOBIG;
    goto fail;
  }
  *out_len = zs.total_out;
  if (buf == NULL) buf = ifd_bufpool_get(ifd_bufpool_shared(), 1);
  if (buf == NULL) {
    ret = IFD_ENOMEM;
    goto fail;
  }
  *out = buf;
  inflateEnd(&zs);
  return 0;

fail:
  inflateEnd(&zs);
  ifd_bufpool_put(buf);
  return ret;
}
