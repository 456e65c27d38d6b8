/*
 * base/utf8.c - UTF-8 checking and repair of outgoing text (see utf8.h).
 */
#include "base/utf8.h"

#include <stdint.h>
#include <string.h>

size_t ifd_utf8_seq(const unsigned char *s, size_t n) {
  size_t len, i;
  uint32_t cp;

  if (s[0] < 0x80) return 1;
  if (s[0] >= 0xc2 && s[0] <= 0xdf) {
    len = 2;
    cp = s[0] & 0x1fu;
  } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
    len = 3;
    cp = s[0] & 0x0fu;
  } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
    len = 4;
    cp = s[0] & 0x07u;
  } else {
    return 0; /* a continuation byte, 0xc0, 0xc1 (overlong) or past 0xf4 */
  }
  if (n < len) return 0;
  for (i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3fu);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
      (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
    return 0;
  return len;
}

int ifd_utf8_valid(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0, len;

  while (i < n) {
    /* ASCII runs are the common case: skip them without decoding. */
    if (u[i] < 0x80) {
      i++;
      continue;
    }
    if ((len = ifd_utf8_seq(u + i, n - i)) == 0) return 0;
    i += len;
  }
  return 1;
}

size_t ifd_utf8_repair(const char *s, size_t n, char *out) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i, o = 0, len;

  for (i = 0; i < n; i += len) {
    len = ifd_utf8_seq(u + i, n - i);
    if (len == 0) {
      memcpy(out + o, "\xef\xbf\xbd", 3);
      o += 3;
      len = 1;
    } else {
      memcpy(out + o, s + i, len);
      o += len;
    }
  }
  return o;
}
