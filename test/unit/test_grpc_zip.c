/*
 * test/unit/test_grpc_zip.c - net/grpc_zip.c: gRPC message compression.
 * Round trips for gzip and deflate (one buffer and several), a message
 * that would not shrink, inflating at and past the maximum size (one byte
 * over is refused; a highly compressible stream is refused before it is
 * expanded), corrupt, truncated and trailing bytes, and the header values.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <stdlib.h>
#include <string.h>

#include "base/bufpool.h"
#include "base/error.h"
#include "net/grpc_conn.h"

/* A compressible message of `n` bytes. */
static uint8_t *pattern(size_t n) {
  uint8_t *p = malloc(n);
  assert_non_null(p);
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)((i / 64) % 7);
  return p;
}

static void round_trip(int zip, size_t n, unsigned pieces) {
  uint8_t *msg = pattern(n), *out = NULL;
  uv_buf_t iov[4];
  size_t out_len = 0, at = 0;
  ifd__gzip_msg_t *z;

  for (unsigned i = 0; i < pieces; i++) {
    size_t len = i + 1 == pieces ? n - at : n / pieces;
    iov[i] = uv_buf_init((char *)msg + at, (unsigned)len);
    at += len;
  }
  z = ifd__gzip_compress(iov, pieces, n, zip);
  assert_non_null(z);
  assert_true(z->iov.len < n);
  /* gzip's magic; a zlib header's first byte is 0x78 for 32 KiB windows. */
  if (zip == ZIP_GZIP) {
    assert_int_equal(z->data[0], 0x1f);
    assert_int_equal(z->data[1], 0x8b);
  } else {
    assert_int_equal(z->data[0], 0x78);
  }
  assert_int_equal(
      ifd__gzip_inflate(z->data, z->iov.len, zip, n, &out, &out_len), 0);
  assert_int_equal(out_len, n);
  assert_memory_equal(out, msg, n);
  ifd_bufpool_put(out);
  /* One byte less than it inflates to is too big. */
  assert_int_equal(
      ifd__gzip_inflate(z->data, z->iov.len, zip, n - 1, &out, &out_len),
      IFD_ETOOBIG);
  /* The other algorithm's framing is refused. */
  assert_int_equal(ifd__gzip_inflate(z->data, z->iov.len,
                                     zip == ZIP_GZIP ? ZIP_DEFLATE : ZIP_GZIP,
                                     n, &out, &out_len),
                   IFD_EINVAL);
  free(z);
  free(msg);
}

static void test_round_trips(void **state) {
  (void)state;
  round_trip(ZIP_GZIP, 1000, 1);
  round_trip(ZIP_DEFLATE, 1000, 1);
  round_trip(ZIP_GZIP, 300000, 3); /* past the first 64 KiB buffer */
  round_trip(ZIP_DEFLATE, 300000, 4);
}

static void test_incompressible(void **state) {
  uint8_t msg[64];
  uv_buf_t iov;
  (void)state;
  srand(7);
  for (size_t i = 0; i < sizeof(msg); i++) msg[i] = (uint8_t)rand();
  iov = uv_buf_init((char *)msg, sizeof(msg));
  assert_null(ifd__gzip_compress(&iov, 1, sizeof(msg), ZIP_GZIP));
}

static void test_bomb_refused(void **state) {
  size_t n = (size_t)8 << 20;
  uint8_t *zeros = calloc(1, n), *out = NULL;
  uv_buf_t iov = uv_buf_init((char *)zeros, (unsigned)n);
  ifd__gzip_msg_t *z;
  size_t out_len;
  (void)state;
  assert_non_null(zeros);
  z = ifd__gzip_compress(&iov, 1, n, ZIP_GZIP);
  assert_non_null(z);
  assert_true(z->iov.len < 64 << 10);
  assert_int_equal(
      ifd__gzip_inflate(z->data, z->iov.len, ZIP_GZIP, 1 << 20, &out, &out_len),
      IFD_ETOOBIG);
  assert_null(out);
  free(z);
  free(zeros);
}

static void test_corrupt(void **state) {
  uint8_t *msg = pattern(5000), *out = NULL, *junk;
  uv_buf_t iov = uv_buf_init((char *)msg, 5000);
  ifd__gzip_msg_t *z = ifd__gzip_compress(&iov, 1, 5000, ZIP_GZIP);
  size_t out_len;
  (void)state;
  assert_non_null(z);
  assert_int_equal(ifd__gzip_inflate((const uint8_t *)"nope", 4, ZIP_GZIP, 5000,
                                     &out, &out_len),
                   IFD_EINVAL);
  assert_int_equal(
      ifd__gzip_inflate(z->data, 0, ZIP_GZIP, 5000, &out, &out_len),
      IFD_EINVAL);
  assert_int_equal(ifd__gzip_inflate(z->data, z->iov.len / 2, ZIP_GZIP, 5000,
                                     &out, &out_len),
                   IFD_EINVAL);
  junk = malloc(z->iov.len + 3);
  assert_non_null(junk);
  memcpy(junk, z->data, z->iov.len);
  memcpy(junk + z->iov.len, "xyz", 3);
  assert_int_equal(
      ifd__gzip_inflate(junk, z->iov.len + 3, ZIP_GZIP, 5000, &out, &out_len),
      IFD_EINVAL);
  z->data[z->iov.len - 2] ^= 0xff; /* the length in gzip's trailer */
  assert_int_equal(
      ifd__gzip_inflate(z->data, z->iov.len, ZIP_GZIP, 5000, &out, &out_len),
      IFD_EINVAL);
  free(junk);
  free(z);
  free(msg);
}

static void test_empty_message(void **state) {
  /* An empty message compressed is a valid stream of 0 bytes. */
  uint8_t gz[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3,
                  3,    0,    0, 0, 0, 0, 0, 0, 0, 0};
  uint8_t *out = NULL;
  size_t out_len = 9;
  (void)state;
  assert_int_equal(
      ifd__gzip_inflate(gz, sizeof(gz), ZIP_GZIP, 100, &out, &out_len), 0);
  assert_non_null(out);
  assert_int_equal(out_len, 0);
  ifd_bufpool_put(out);
}

static void test_header_values(void **state) {
  (void)state;
  assert_int_equal(ifd__gzip_algo("gzip"), ZIP_GZIP);
  assert_int_equal(ifd__gzip_algo("deflate"), ZIP_DEFLATE);
  assert_int_equal(ifd__gzip_algo("snappy"), ZIP_NONE);
  assert_int_equal(ifd__gzip_algo("identity"), ZIP_NONE);
  assert_int_equal(ifd__gzip_accepted("identity, deflate,gzip", 22),
                   (1u << ZIP_GZIP) | (1u << ZIP_DEFLATE));
  assert_int_equal(ifd__gzip_accepted("gzipx,gzi", 9), 0);
  assert_int_equal(ifd__gzip_accepted(" gzip ", 6), 1u << ZIP_GZIP);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trips),
      cmocka_unit_test(test_incompressible),
      cmocka_unit_test(test_bomb_refused),
      cmocka_unit_test(test_corrupt),
      cmocka_unit_test(test_empty_message),
      cmocka_unit_test(test_header_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
