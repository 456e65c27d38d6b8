/*
 * base/jsonw.c - a growable text buffer and the JSON text writers (see
 * jsonw.h).
 *
 * Responses are written as JSON text directly rather than built as jansson
 * trees: an output tensor of a million floats would otherwise become a
 * million json_t objects. Numbers are printed in their shortest form that
 * reads back to the same value, so a float round-trips exactly.
 */
#include "base/jsonw.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/utf8.h"

void ifd_hbuf_init(ifd_hbuf_t *b, size_t headroom) {
  b->data = NULL;
  b->start = headroom;
  b->len = headroom;
  b->cap = 0;
  b->oom = 0;
}

void ifd_hbuf_free(ifd_hbuf_t *b) {
  free(b->data);
  b->data = NULL;
  b->cap = 0;
  b->len = b->start;
}

int ifd_hbuf_reserve(ifd_hbuf_t *b, size_t n) {
  size_t want, cap;
  char *p;

  if (b->oom) return IFD_ENOMEM;
  if (n > SIZE_MAX - b->len) goto out_oom;
  want = b->len + n;
  if (want <= b->cap) return 0;
  cap = b->cap != 0 ? b->cap : 1024;
  while (cap < want) {
    if (cap > SIZE_MAX / 2) {
      cap = want;
      break;
    }
    cap *= 2;
  }
  p = realloc(b->data, cap);
  if (p == NULL) goto out_oom;
  b->data = p;
  b->cap = cap;
  return 0;

out_oom:
  b->oom = 1;
  return IFD_ENOMEM;
}

void ifd_hbuf_put(ifd_hbuf_t *b, const void *p, size_t n) {
  /* The common case, room already there, without the call (len exceeds cap
   * while the buffer has no memory yet: head room only). */
  if (b->oom || b->len > b->cap || n > b->cap - b->len) {
    if (n == 0 || ifd_hbuf_reserve(b, n) != 0) return;
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
}

void ifd_hbuf_puts(ifd_hbuf_t *b, const char *s) {
  ifd_hbuf_put(b, s, strlen(s));
}

void ifd_hbuf_printf(ifd_hbuf_t *b, const char *fmt, ...) {
  va_list ap;
  int n;

  /* Most callers print short numbers: try the room already there first. */
  if (ifd_hbuf_reserve(b, 64) != 0) return;
  va_start(ap, fmt);
  n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->oom = 1;
    return;
  }
  if ((size_t)n >= b->cap - b->len) {
    if (ifd_hbuf_reserve(b, (size_t)n + 1) != 0) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
  }
  b->len += (size_t)n;
}

int ifd_hbuf_prepend(ifd_hbuf_t *b, const char *p, size_t n) {
  /* An empty body has no memory yet: the head room must exist first. */
  if (b->data == NULL && ifd_hbuf_reserve(b, 1) != 0) return IFD_ENOMEM;
  if (b->oom || n > b->start) return IFD_ENOMEM;
  b->start -= n;
  memcpy(b->data + b->start, p, n);
  return 0;
}

void ifd_json_str(ifd_hbuf_t *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  size_t i, run = 0;

  /* Worst case every byte becomes \u00XX: reserve once, then copy. */
  if (n > (SIZE_MAX - 2) / 6) {
    b->oom = 1;
    return;
  }
  if (ifd_hbuf_reserve(b, n * 6 + 2) != 0) return;
  b->data[b->len++] = '"';
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    char *o;
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    memcpy(b->data + b->len, s + run, i - run);
    b->len += i - run;
    run = i + 1;
    o = b->data + b->len;
    o[0] = '\\';
    switch (c) {
      case '"':
        o[1] = '"';
        b->len += 2;
        break;
      case '\\':
        o[1] = '\\';
        b->len += 2;
        break;
      case '\n':
        o[1] = 'n';
        b->len += 2;
        break;
      case '\r':
        o[1] = 'r';
        b->len += 2;
        break;
      case '\t':
        o[1] = 't';
        b->len += 2;
        break;
      case '\b':
        o[1] = 'b';
        b->len += 2;
        break;
      case '\f':
        o[1] = 'f';
        b->len += 2;
        break;
      default:
        o[1] = 'u';
        o[2] = '0';
        o[3] = '0';
        o[4] = hex[c >> 4];
        o[5] = hex[c & 15];
        b->len += 6;
    }
  }
  memcpy(b->data + b->len, s + run, n - run);
  b->len += n - run;
  b->data[b->len++] = '"';
}

void ifd_json_text(ifd_hbuf_t *b, const char *s, size_t n) {
  char *tmp;

  if (ifd_utf8_valid(s, n)) {
    ifd_json_str(b, s, n);
    return;
  }
  /* Ill-formed: rare, so a repaired copy is fine. */
  if (n > SIZE_MAX / 3 || (tmp = malloc(n * 3)) == NULL) {
    b->oom = 1;
    return;
  }
  ifd_json_str(b, tmp, ifd_utf8_repair(s, n, tmp));
  free(tmp);
}

/* Makes "1" read "1.0" so that a float stays a float to the client. */
static void put_number(ifd_hbuf_t *b, const char *tmp, int n) {
  ifd_hbuf_put(b, tmp, (size_t)n);
  if (strpbrk(tmp, ".eEn") == NULL) ifd_hbuf_put(b, ".0", 2);
}

static int put_nonfinite(ifd_hbuf_t *b, double v) {
  /* JSON has no spelling for these; Python's json module reads these. */
  if (isnan(v)) {
    ifd_hbuf_puts(b, "NaN");
    return 1;
  }
  if (isinf(v)) {
    ifd_hbuf_puts(b, v < 0 ? "-Infinity" : "Infinity");
    return 1;
  }
  return 0;
}

/* Exact powers of ten: every one up to 1e22 is a double. */
static const double pow10_tab[23] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Half the gap from a positive normal float `f` to the next float up, i.e.
 * (nextafterf(f, INFINITY) - f) / 2 = 2^(E - 24) for f = 1.x * 2^E: built
 * from the exponent bits rather than through a libm call. */
static double half_ulp(float f) {
  uint32_t fb;
  uint64_t db;
  double h;

  memcpy(&fb, &f, sizeof(fb));
  /* Biased exponent of f is E + 127; that of 2^(E - 24) as a double is
   * E - 24 + 1023. */
  db = (uint64_t)((fb >> 23 & 0xff) - 127 - 24 + 1023) << 52;
  memcpy(&h, &db, sizeof(h));
  return h;
}

/*
 * The shortest decimal (6 to 9 significant digits) that reads back as `v`,
 * for 1e-5 <= |v| < 1e7, without printf: a candidate m * 10^-p is checked by
 * converting it back through double (m < 1e9 and 10^p are exact doubles, so
 * that is one correctly rounded operation, then the rounding to float). The
 * one way this can disagree with a correctly rounded strtof is a double that
 * lands (almost) on a midpoint between two floats: such candidates are left
 * to the printf path. Writes into out (room for 32) and returns the length,
 * or -1 for the printf path. JSON output of FP32 tensors is dominated by
 * this, and snprintf + strtof cost several times more.
 */
static int fast_f32(float v, char *out) {
  double ad = fabs((double)v);
  char digits[24];
  int e = 0, k, n = 0, len, point;

  if (!(ad >= 1e-5 && ad < 1e7)) return -1;
  while (e < 6 && ad >= pow10_tab[e + 1]) e++;
  while (e > -5 && ad < (e >= 0 ? pow10_tab[e] : 1.0 / pow10_tab[-e])) e--;
  for (k = 6; k <= 9; k++) {
    int p = k - 1 - e; /* decimal places: m = round(ad * 10^p) */
    double m, back, fd, half;
    float f;
    uint64_t mi;
    if (p > 22 || p < -22) return -1;
    m = nearbyint(p >= 0 ? ad * pow10_tab[p] : ad / pow10_tab[-p]);
    back = p >= 0 ? m / pow10_tab[p] : m * pow10_tab[-p];
    f = (float)back;
    if (f != (float)ad) continue;
    fd = (double)f;
    half = half_ulp(f);
    if (fabs(fabs(back - fd) - half) < half * 0x1p-20) return -1;
    /* Digits of m, then the decimal point p places from the right. */
    mi = (uint64_t)m;
    len = 0;
    do {
      digits[len++] = (char)('0' + mi % 10);
      mi /= 10;
    } while (mi > 0);
    if (v < 0) out[n++] = '-';
    if (p <= 0) {
      while (len > 0) out[n++] = digits[--len];
      for (; p < 0; p++) out[n++] = '0';
      out[n++] = '.';
      out[n++] = '0';
      return n;
    }
    point = len - p; /* digits before the decimal point */
    if (point <= 0) {
      out[n++] = '0';
      out[n++] = '.';
      for (; point < 0; point++) out[n++] = '0';
    } else {
      while (point-- > 0) out[n++] = digits[--len];
      out[n++] = '.';
    }
    while (len > 0) out[n++] = digits[--len];
    /* Trailing zeros of the fraction go, one digit stays. */
    while (out[n - 1] == '0' && out[n - 2] != '.') n--;
    return n;
  }
  return -1;
}

void ifd_json_f32(ifd_hbuf_t *b, float v) {
  char tmp[32];
  int p, n = 0;

  if (put_nonfinite(b, v)) return;
  if (v == 0) {
    ifd_hbuf_puts(b, signbit(v) ? "-0.0" : "0.0");
    return;
  }
  /* Whole numbers below 1e7 (all exact floats): the shortest round trip is
   * the integer itself, with ".0" so that it stays a float; this is what
   * fast_f32 writes for them, without its search. */
  if (fabsf(v) < 1e7f && v == (float)(int32_t)v) {
    uint32_t u = (uint32_t)(int32_t)fabsf(v), t;
    char *o;

    /* Straight into the buffer: sign, digits, ".0" (at most 10 bytes). */
    if (ifd_hbuf_reserve(b, 16) != 0) return;
    n = (v < 0) + 3;
    for (t = u; t >= 10; t /= 10) n++;
    o = b->data + b->len + n;
    *--o = '0';
    *--o = '.';
    do {
      *--o = (char)('0' + u % 10);
      u /= 10;
    } while (u > 0);
    if (v < 0) *--o = '-';
    b->len += (size_t)n;
    return;
  }
  n = fast_f32(v, tmp);
  if (n > 0) {
    ifd_hbuf_put(b, tmp, (size_t)n);
    return;
  }
  for (p = 1; p <= 9; p++) {
    n = snprintf(tmp, sizeof(tmp), "%.*g", p, (double)v);
    if (strtof(tmp, NULL) == v) break;
  }
  put_number(b, tmp, n);
}

void ifd_json_f64(ifd_hbuf_t *b, double v) {
  char tmp[40];
  int p, n = 0;

  if (put_nonfinite(b, v)) return;
  for (p = 15; p <= 17; p++) {
    n = snprintf(tmp, sizeof(tmp), "%.*g", p, v);
    if (strtod(tmp, NULL) == v) break;
  }
  put_number(b, tmp, n);
}

void ifd_json_dump(ifd_hbuf_t *b, const json_t *j) {
  size_t flags = JSON_COMPACT | JSON_ENCODE_ANY;
  size_t n = json_dumpb(j, NULL, 0, flags);

  if (n == 0) {
    b->oom = 1;
    return;
  }
  if (ifd_hbuf_reserve(b, n) != 0) return;
  b->len += json_dumpb(j, b->data + b->len, n, flags);
}
