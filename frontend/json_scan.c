/*
 * frontend/json_scan.c - a JSON validator and cursor helpers for the infer
 * request decoder, with no tree and no allocation.
 *
 * ifd__json_validate() accepts what jansson's json_loadb() with
 * JSON_ALLOW_NUL accepted before it replaced it: a top-level object or
 * array, strict number grammar, reals that do not overflow a double, strict
 * UTF-8, strings without raw control characters,
 * paired \u surrogates, no NUL in object keys, values nested at most
 * IFD_JSON_MAX_DEPTH deep (counting scalars, as jansson does), and nothing
 * but whitespace after the top-level value. It is iterative, so no input can
 * exhaust the stack. One difference: integers may be any int64_t or, when
 * not negative, any uint64_t (jansson stops at INT64_MAX; Triton's reader
 * takes unsigned fields and UINT64 data up to 2^64-1).
 *
 * Every other function here walks text that ifd__json_validate() accepted:
 * it trusts the grammar (a string is closed, a '[' is matched) but still
 * never reads past `end`, so a caller's mistake costs a wrong answer, never
 * memory safety.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/internal.h"

/* ---- validation --------------------------------------------------------- */

static int fail(ifd_jerr_t *e, const char *s, const unsigned char *p,
                const char *text) {
  e->pos = (size_t)((const char *)p - s);
  snprintf(e->text, sizeof(e->text), "%s", text);
  return -1;
}

static const unsigned char *ws(const unsigned char *p,
                               const unsigned char *end) {
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
  return p;
}

static int hexval(unsigned c) {
  if (c - '0' < 10) return (int)(c - '0');
  c |= 0x20;
  if (c - 'a' < 6) return (int)(c - 'a' + 10);
  return -1;
}

/* Four hex digits at p (p + 4 <= end checked by the caller), or -1. */
static long hex4(const unsigned char *p) {
  int a = hexval(p[0]), b = hexval(p[1]), c = hexval(p[2]), d = hexval(p[3]);
  if ((a | b | c | d) < 0) return -1;
  return (long)a << 12 | b << 8 | c << 4 | d;
}

/* Length of the UTF-8 sequence starting with byte c (jansson's
 * utf8_check_first), 0 when c cannot start one. */
static int utf8_first(unsigned c) {
  if (c < 0x80) return 1;
  if (c < 0xC2) return 0;
  if (c < 0xE0) return 2;
  if (c < 0xF0) return 3;
  if (c < 0xF5) return 4;
  return 0;
}

/* Checks one multi-byte sequence of n bytes at p (no overlong forms, no
 * surrogates, nothing above U+10FFFF). */
static int utf8_ok(const unsigned char *p, int n) {
  uint32_t v = n == 2 ? p[0] & 0x1Fu : n == 3 ? p[0] & 0x0Fu : p[0] & 0x07u;
  int i;
  for (i = 1; i < n; i++) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    v = v << 6 | (p[i] & 0x3Fu);
  }
  if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  if ((n == 2 && v < 0x80) || (n == 3 && v < 0x800) || (n == 4 && v < 0x10000))
    return 0;
  return 1;
}

/* p at the opening quote. Returns the byte after the closing quote, or NULL
 * with *e set. `key`: a NUL (from \u0000) is an error. */
static const unsigned char *vstring(const char *s, const unsigned char *p,
                                    const unsigned char *end, int key,
                                    ifd_jerr_t *e) {
  char msg[48];
  p++;
  for (;;) {
    unsigned c;
    while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\') p++;
    if (p >= end) {
      fail(e, s, p, "premature end of input");
      return NULL;
    }
    c = *p;
    if (c == '"') return p + 1;
    if (c < 0x20) {
      snprintf(msg, sizeof(msg), "control character 0x%x", c);
      fail(e, s, p, msg);
      return NULL;
    }
    if (c >= 0x80) {
      int n = utf8_first(c);
      if (n == 0 || end - p < n || !utf8_ok(p, n)) {
        snprintf(msg, sizeof(msg), "unable to decode byte 0x%x", c);
        fail(e, s, p, msg);
        return NULL;
      }
      p += n;
      continue;
    }
    /* A backslash. */
    if (end - p < 2) {
      fail(e, s, p, "premature end of input");
      return NULL;
    }
    c = p[1];
    if (c == 'u') {
      long u, u2;
      if (end - p < 6 || (u = hex4(p + 2)) < 0) {
        fail(e, s, p, "invalid escape");
        return NULL;
      }
      p += 6;
      if (u >= 0xD800 && u <= 0xDBFF) {
        if (end - p < 6 || p[0] != '\\' || p[1] != 'u' ||
            (u2 = hex4(p + 2)) < 0 || u2 < 0xDC00 || u2 > 0xDFFF) {
          snprintf(msg, sizeof(msg), "invalid Unicode '\\u%04lX'", u);
          fail(e, s, p, msg);
          return NULL;
        }
        p += 6;
      } else if (u >= 0xDC00 && u <= 0xDFFF) {
        snprintf(msg, sizeof(msg), "invalid Unicode '\\u%04lX'", u);
        fail(e, s, p, msg);
        return NULL;
      } else if (u == 0 && key) {
        fail(e, s, p, "NUL byte in object key not supported");
        return NULL;
      }
      continue;
    }
    if (c != '"' && c != '\\' && c != '/' && c != 'b' && c != 'f' && c != 'n' &&
        c != 'r' && c != 't') {
      fail(e, s, p, "invalid escape");
      return NULL;
    }
    p += 2;
  }
}

static int is_digit(const unsigned char *p, const unsigned char *end) {
  return p < end && *p - (unsigned)'0' < 10;
}

/* Whether the real number text [p, end) overflows a double, as strtod()
 * would report it: decided from its decimal exponent, with strtod() only
 * for the one decade where that is not enough. */
static int real_overflows(const unsigned char *p, const unsigned char *end) {
  const unsigned char *start = p;
  long e10 = 0, ex = 0;
  int nonzero = 0, eneg = 0;

  if (*p == '-') p++;
  /* Integer digits: each one after the first nonzero adds a decade. */
  for (; is_digit(p, end); p++) {
    if (*p != '0') nonzero = 1;
    if (nonzero && e10 < 100000) e10++;
  }
  if (p < end && *p == '.') {
    for (p++; is_digit(p, end); p++) {
      if (*p != '0') nonzero = 1;
      if (!nonzero && e10 > -100000) e10--;
    }
  }
  if (!nonzero) return 0;
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < end && (*p == '+' || *p == '-')) eneg = *p++ == '-';
    for (; is_digit(p, end); p++)
      if (ex < 1000000) ex = ex * 10 + (*p - '0');
    e10 += eneg ? -ex : ex;
  }
  /* The value lies in [10^(e10-1), 10^e10). */
  if (e10 <= 308) return 0;
  if (e10 >= 310) return 1;
  {
    char buf[64], *copy = buf;
    size_t n = (size_t)(end - start);
    double d;
    int over;
    if (n >= sizeof(buf) && (copy = malloc(n + 1)) == NULL) return 1;
    memcpy(copy, start, n);
    copy[n] = '\0';
    errno = 0;
    d = strtod(copy, NULL);
    over = (d == HUGE_VAL || d == -HUGE_VAL) && errno == ERANGE;
    if (copy != buf) free(copy);
    return over;
  }
}

/* p at '-' or a digit. Returns the byte after the number, or NULL. */
static const unsigned char *vnumber(const char *s, const unsigned char *p,
                                    const unsigned char *end, ifd_jerr_t *e) {
  const unsigned char *start = p, *ip;
  int neg = 0, real = 0;
  size_t nint;

  if (*p == '-') {
    neg = 1;
    p++;
  }
  ip = p;
  if (!is_digit(p, end)) goto invalid;
  if (*p == '0') {
    p++;
    if (is_digit(p, end)) goto invalid;
  } else {
    while (is_digit(p, end)) p++;
  }
  nint = (size_t)(p - ip);
  if (p < end && *p == '.') {
    real = 1;
    p++;
    if (!is_digit(p, end)) goto invalid;
    while (is_digit(p, end)) p++;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    real = 1;
    p++;
    if (p < end && (*p == '+' || *p == '-')) p++;
    if (!is_digit(p, end)) goto invalid;
    while (is_digit(p, end)) p++;
  }
  if (!real) {
    /* Negative integers fit int64_t, others uint64_t (Triton reads
     * unsigned fields and UINT64 data with rapidjson's GetUint64). */
    size_t max = neg ? 19 : 20;
    if (nint > max ||
        (nint == max &&
         memcmp(ip, neg ? "9223372036854775808" : "18446744073709551615", max) >
             0)) {
      fail(e, s, start, neg ? "too big negative integer" : "too big integer");
      return NULL;
    }
  } else if (real_overflows(start, p)) {
    fail(e, s, start, "real number overflow");
    return NULL;
  }
  return p;

invalid:
  fail(e, s, start, "invalid token");
  return NULL;
}

int ifd__json_validate(const char *s, size_t n, ifd_jerr_t *e) {
  const unsigned char *p = (const unsigned char *)s, *end = p + n, *q;
  char stack[IFD_JSON_MAX_DEPTH]; /* '{' or '[' per open container */
  int depth = 0;

  p = ws(p, end);
  if (p == end || (*p != '{' && *p != '['))
    return fail(e, s, p, "'[' or '{' expected");

value: /* p at a value, after whitespace; depth containers are open */
  if (p >= end) return fail(e, s, p, "premature end of input");
  if (depth + 1 > IFD_JSON_MAX_DEPTH)
    return fail(e, s, p, "maximum parsing depth reached");
  switch (*p) {
    case '{':
      stack[depth++] = '{';
      p = ws(p + 1, end);
      if (p < end && *p == '}') {
        p++;
        depth--;
        goto after;
      }
      goto key;
    case '[':
      stack[depth++] = '[';
      p = ws(p + 1, end);
      if (p < end && *p == ']') {
        p++;
        depth--;
        goto after;
      }
      goto value;
    case '"':
      if ((p = vstring(s, p, end, 0, e)) == NULL) return -1;
      goto after;
    case 't':
    case 'f':
    case 'n': {
      const char *lit = *p == 't' ? "true" : *p == 'f' ? "false" : "null";
      size_t len = strlen(lit);
      if ((size_t)(end - p) < len || memcmp(p, lit, len) != 0 ||
          (end - p > (ptrdiff_t)len && ((p[len] | 0x20) - (unsigned)'a' < 26)))
        return fail(e, s, p, "invalid token");
      p += len;
      goto after;
    }
    default:
      if (*p == '-' || *p - (unsigned)'0' < 10) {
        if ((p = vnumber(s, p, end, e)) == NULL) return -1;
        goto after;
      }
      if (*p >= 0x80) {
        int k = utf8_first(*p);
        if (k == 0 || end - p < k || !utf8_ok(p, k)) {
          char msg[40];
          snprintf(msg, sizeof(msg), "unable to decode byte 0x%x", *p);
          return fail(e, s, p, msg);
        }
      }
      return fail(e, s, p, "unexpected token");
  }

key: /* p after '{' or ',' and whitespace */
  if (p >= end || *p != '"') return fail(e, s, p, "string or '}' expected");
  if ((p = vstring(s, p, end, 1, e)) == NULL) return -1;
  p = ws(p, end);
  if (p >= end || *p != ':') return fail(e, s, p, "':' expected");
  p = ws(p + 1, end);
  goto value;

after: /* p after a complete value */
  if (depth == 0) {
    q = ws(p, end);
    if (q != end) return fail(e, s, q, "end of file expected");
    return 0;
  }
  p = ws(p, end);
  if (p >= end) return fail(e, s, p, "premature end of input");
  if (*p == ',') {
    p = ws(p + 1, end);
    if (stack[depth - 1] == '{') goto key;
    goto value;
  }
  if (*p == (stack[depth - 1] == '{' ? '}' : ']')) {
    p++;
    depth--;
    goto after;
  }
  return fail(e, s, p,
              stack[depth - 1] == '{' ? "'}' expected" : "']' expected");
}

/* ---- walking validated text --------------------------------------------- */

const char *ifd__json_ws(const char *p, const char *end) {
  return (const char *)ws((const unsigned char *)p, (const unsigned char *)end);
}

/* p after an opening quote: the closing quote's address (or end). */
static const char *str_close(const char *p, const char *end, int *esc) {
  for (;;) {
    while (p < end && *p != '"' && *p != '\\') p++;
    if (p >= end || *p == '"') return p;
    *esc = 1;
    p += 2;
    if (p > end) return end;
  }
}

const char *ifd__json_skip(const char *p, const char *end) {
  int depth = 0, esc = 0;

  if (p >= end) return end;
  if (*p == '"') {
    p = str_close(p + 1, end, &esc);
    return p < end ? p + 1 : end;
  }
  if (*p != '[' && *p != '{') {
    while (p < end && *p != ',' && *p != ']' && *p != '}' && *p != ' ' &&
           *p != '\n' && *p != '\r' && *p != '\t' && *p != ':')
      p++;
    return p;
  }
  while (p < end) {
    char c = *p++;
    if (c == '"') {
      p = str_close(p, end, &esc);
      if (p < end) p++;
    } else if (c == '[' || c == '{') {
      depth++;
    } else if (c == ']' || c == '}') {
      if (--depth == 0) return p;
    }
  }
  return end;
}

size_t ifd_json_strlen(const char *p, const char *end, int *esc) {
  const char *q;
  size_t n = 0;

  *esc = 0;
  q = str_close(p + 1, end, esc);
  if (!*esc) return (size_t)(q - p - 1);
  /* Escapes shrink the text: count what they decode to. */
  p++;
  while (p < q) {
    if (*p != '\\') {
      p++;
      n++;
      continue;
    }
    if (q - p >= 6 && p[1] == 'u') {
      long u = hex4((const unsigned char *)p + 2);
      p += 6;
      if (u < 0x80)
        n += 1;
      else if (u < 0x800)
        n += 2;
      else if (u >= 0xD800 && u <= 0xDBFF && q - p >= 6) {
        p += 6;
        n += 4;
      } else
        n += 3;
    } else {
      p += 2;
      n++;
    }
  }
  return n;
}

static char *put_utf8(char *o, uint32_t u) {
  if (u < 0x80) {
    *o++ = (char)u;
  } else if (u < 0x800) {
    *o++ = (char)(0xC0 | u >> 6);
    *o++ = (char)(0x80 | (u & 0x3F));
  } else if (u < 0x10000) {
    *o++ = (char)(0xE0 | u >> 12);
    *o++ = (char)(0x80 | (u >> 6 & 0x3F));
    *o++ = (char)(0x80 | (u & 0x3F));
  } else {
    *o++ = (char)(0xF0 | u >> 18);
    *o++ = (char)(0x80 | (u >> 12 & 0x3F));
    *o++ = (char)(0x80 | (u >> 6 & 0x3F));
    *o++ = (char)(0x80 | (u & 0x3F));
  }
  return o;
}

const char *ifd_json_strcpy(const char *p, const char *end, char *out) {
  p++;
  while (p < end && *p != '"') {
    const char *q = p;
    size_t n;
    while (q < end && *q != '"' && *q != '\\') q++;
    n = (size_t)(q - p);
    memcpy(out, p, n);
    out += n;
    p = q;
    if (p >= end || *p == '"') break;
    if (end - p < 2) return end;
    switch (p[1]) {
      case 'b':
        *out++ = '\b';
        break;
      case 'f':
        *out++ = '\f';
        break;
      case 'n':
        *out++ = '\n';
        break;
      case 'r':
        *out++ = '\r';
        break;
      case 't':
        *out++ = '\t';
        break;
      case 'u': {
        long u;
        if (end - p < 6 || (u = hex4((const unsigned char *)p + 2)) < 0)
          return end;
        p += 4;
        if (u >= 0xD800 && u <= 0xDBFF && end - p >= 8 && p[2] == '\\' &&
            p[3] == 'u') {
          long lo = hex4((const unsigned char *)p + 4);
          if (lo >= 0xDC00 && lo <= 0xDFFF) {
            u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            p += 6;
          }
        }
        out = put_utf8(out, (uint32_t)u);
        break;
      }
      default: /* '"', '\\', '/' */
        *out++ = p[1];
        break;
    }
    p += 2;
  }
  return p < end ? p + 1 : end;
}

/* ---- numbers ------------------------------------------------------------ */

/* Powers of ten that a double holds exactly. */
static const double exact_p10[] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Converts the validated real number text [start, end) exactly as strtod()
 * does. When the digits fit 53 bits and the power of ten is exact, one IEEE
 * multiplication or division rounds correctly (Clinger's fast path);
 * everything else goes to strtod() on a NUL-terminated copy. */
static double real_value(const char *start, const char *end) {
  const char *p = start;
  uint64_t m = 0;
  int nd = 0, neg = 0, eneg = 0, many = 0;
  long e10 = 0, ex = 0;

  if (*p == '-') {
    neg = 1;
    p++;
  }
  for (; p < end && *p - (unsigned)'0' < 10; p++) {
    if (nd < 19) {
      m = m * 10 + (uint64_t)(*p - '0');
      if (m != 0) nd++;
    } else {
      many = 1;
    }
  }
  if (p < end && *p == '.') {
    for (p++; p < end && *p - (unsigned)'0' < 10; p++) {
      if (nd < 19) {
        m = m * 10 + (uint64_t)(*p - '0');
        if (m != 0) nd++;
        e10--;
      } else {
        many = 1;
      }
    }
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < end && (*p == '+' || *p == '-')) eneg = *p++ == '-';
    for (; p < end && *p - (unsigned)'0' < 10; p++)
      if (ex < 100000) ex = ex * 10 + (*p - '0');
  }
  e10 += eneg ? -ex : ex;
#if FLT_EVAL_METHOD == 0
  if (!many) {
    if (m == 0) return neg ? -0.0 : 0.0;
    if (m <= (1ull << 53) && e10 >= -22 && e10 <= 22) {
      double d = (double)m;
      d = e10 < 0 ? d / exact_p10[-e10] : d * exact_p10[e10];
      return neg ? -d : d;
    }
  }
#else
  (void)many;
  (void)m;
  (void)exact_p10;
#endif
  {
    char buf[64], *copy = buf;
    size_t n = (size_t)(end - start);
    double d;
    if (n >= sizeof(buf) && (copy = malloc(n + 1)) == NULL) return 0.0;
    memcpy(copy, start, n);
    copy[n] = '\0';
    d = strtod(copy, NULL);
    if (copy != buf) free(copy);
    return d;
  }
}

/*
 * (float)strtod() of a number with up to 19 significant digits and a power
 * of ten a double holds exactly, without strtod(): m * 10^e10 computed in
 * double is within ~1 ulp of the exact value (two roundings), and strtod()'s
 * double within half an ulp, so both round to the same float unless they
 * straddle a point halfway between two floats. Such near-ties (and anything
 * outside 1e-30..1e30, away from subnormals and overflow) return 0 for the
 * exact path. Typical clients send FP32 data as 17-digit doubles
 * (0.10000000149011612), which Clinger's exact fast path cannot take.
 */
static int fast_f32(uint64_t m, long e10, int neg, float *out) {
  double d, fd, ulp_d, half, dist;
  float f;
  if (e10 < -22 || e10 > 22) return 0;
  d = (double)m;
  d = e10 < 0 ? d / exact_p10[-e10] : d * exact_p10[e10];
  if (!(d >= 1e-30 && d <= 1e30)) return 0;
  f = (float)d;
  fd = (double)f;
  ulp_d = nextafter(d, INFINITY) - d;
  /* Half the float spacing on d's side of f. */
  half = d >= fd ? ((double)nextafterf(f, INFINITY) - fd) / 2
                 : (fd - (double)nextafterf(f, 0.0f)) / 2;
  dist = half - fabs(d - fd);
  if (dist <= 4 * ulp_d) return 0;
  *out = neg ? -f : f;
  return 1;
}

const char *ifd__json_number_f32(const char *p, const char *end, float *out) {
  const char *start = p;
  uint64_t m = 0;
  long e10 = 0, ex = 0;
  int neg = 0, nd = 0, many = 0, eneg = 0;

  if (p < end && *p == '-') {
    neg = 1;
    p++;
  }
  for (; p < end && *p - (unsigned)'0' < 10; p++) {
    if (nd < 19) {
      m = m * 10 + (uint64_t)(*p - '0');
      if (m != 0) nd++;
    } else {
      many = 1;
      e10++;
    }
  }
  if (p < end && *p == '.') {
    for (p++; p < end && *p - (unsigned)'0' < 10; p++) {
      if (nd < 19) {
        m = m * 10 + (uint64_t)(*p - '0');
        if (m != 0) nd++;
        e10--;
      } else {
        many = 1;
      }
    }
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < end && (*p == '+' || *p == '-')) eneg = *p++ == '-';
    for (; p < end && *p - (unsigned)'0' < 10; p++)
      if (ex < 100000) ex = ex * 10 + (*p - '0');
  }
  e10 += eneg ? -ex : ex;
  if (m == 0 && !many) {
    *out = neg ? -0.0f : 0.0f;
    return p;
  }
  if (!many && fast_f32(m, e10, neg, out)) return p;
  {
    ifd_jnum_t n;
    ifd__json_number(start, end, &n);
    *out = (float)n.d;
  }
  return p;
}

const char *ifd__json_number(const char *p, const char *end, ifd_jnum_t *num) {
  const char *start = p;
  uint64_t u = 0;
  int neg = 0;

  if (p < end && *p == '-') {
    neg = 1;
    p++;
  }
  /* Validated integers fit int64_t (negative) or uint64_t: u does not
   * overflow. */
  for (; p < end && *p - (unsigned)'0' < 10; p++)
    u = u * 10 + (uint64_t)(*p - '0');
  if (p < end && (*p == '.' || *p == 'e' || *p == 'E')) {
    while (p < end && (*p - (unsigned)'0' < 10 || *p == '.' || *p == 'e' ||
                       *p == 'E' || *p == '+' || *p == '-'))
      p++;
    num->is_int = num->is_uint = 0;
    num->i = 0;
    num->u = 0;
    num->d = real_value(start, p);
    return p;
  }
  num->is_uint = !neg;
  num->u = neg ? 0 : u;
  num->is_int = neg || u <= (uint64_t)INT64_MAX;
  num->i = !num->is_int ? 0 : neg ? (int64_t)(0 - u) : (int64_t)u;
  num->d = num->is_int ? (double)num->i : (double)u;
  return p;
}

const char *ifd__json_find(const char *p, const char *end, const char *key) {
  size_t n = strlen(key);

  p = ifd__json_ws(p, end);
  if (p >= end || *p != '{') return NULL;
  for (p++;;) {
    const char *k;
    int esc, match = 0;
    p = ifd__json_ws(p, end);
    if (p >= end || *p != '"') return NULL; /* the closing '}' */
    k = p;
    if (ifd_json_strlen(k, end, &esc) == n) {
      if (!esc) {
        match = memcmp(k + 1, key, n) == 0;
      } else {
        char buf[64];
        if (n <= sizeof(buf)) {
          ifd_json_strcpy(k, end, buf);
          match = memcmp(buf, key, n) == 0;
        }
      }
    }
    p = ifd__json_ws(ifd__json_skip(k, end), end); /* at ':' */
    p = p < end ? ifd__json_ws(p + 1, end) : end;
    if (match) return p;
    p = ifd__json_ws(ifd__json_skip(p, end), end);
    if (p < end && *p == ',') p++;
  }
}

/* ---- cursor helpers over validated text ---------------------------- */

/* A scalar's first byte tells its type in validated text. */
int ifd__json_is_num(const char *v, const char *end) {
  return v != NULL && v < end && (*v == '-' || (*v >= '0' && *v <= '9'));
}
int ifd__json_is_str(const char *v, const char *end) {
  return v != NULL && v < end && *v == '"';
}
int ifd__json_is_bool(const char *v, const char *end) {
  return v != NULL && v < end && (*v == 't' || *v == 'f');
}
int ifd__json_is_obj(const char *v, const char *end) {
  return v != NULL && v < end && *v == '{';
}
int ifd__json_is_arr(const char *v, const char *end) {
  return v != NULL && v < end && *v == '[';
}

/* Whether v is an integer (no '.', 'e', 'E') that fits int64_t; its value
 * in *x. */
int ifd__json_get_int(const char *v, const char *end, int64_t *x) {
  ifd_jnum_t n;
  if (!ifd__json_is_num(v, end)) return 0;
  ifd__json_number(v, end, &n);
  *x = n.i;
  return n.is_int;
}

/* Whether v is a non-negative integer (up to UINT64_MAX, as Triton's
 * AsUInt reads unsigned fields); its value in *x. */
int ifd__json_get_uint(const char *v, const char *end, uint64_t *x) {
  ifd_jnum_t n;
  if (!ifd__json_is_num(v, end)) return 0;
  ifd__json_number(v, end, &n);
  *x = n.u;
  return n.is_uint;
}

/* Steps through an object's members. *pp is at the '{' or after the previous
 * member's value (the caller skips it). Returns 1 with the key and *val at
 * the value's first byte, or 0 after the closing '}'. */
int ifd__json_member(const char **pp, const char *end, ifd_jkey_t *k,
                     const char **val) {
  const char *p = ifd__json_ws(*pp, end), *q;

  if (p < end && (*p == '{' || *p == ',')) p = ifd__json_ws(p + 1, end);
  if (p >= end || *p != '"') {
    *pp = p < end ? p + 1 : end;
    return 0;
  }
  k->q = p;
  k->esc = 0;
  for (q = p + 1; q < end && *q != '"'; q++) {
    if (*q == '\\' && q + 1 < end) {
      k->esc = 1;
      q++;
    }
  }
  k->n = (size_t)(q - p - 1);
  p = q < end ? ifd__json_ws(q + 1, end) : end; /* at ':' */
  p = p < end ? ifd__json_ws(p + 1, end) : end;
  *val = p;
  *pp = p;
  return 1;
}

/* Steps through an array's elements like ifd__json_member(). */
int ifd__json_element(const char **pp, const char *end, const char **val) {
  const char *p = ifd__json_ws(*pp, end);

  if (p < end && (*p == '[' || *p == ',')) p = ifd__json_ws(p + 1, end);
  if (p >= end || *p == ']') {
    *pp = p < end ? p + 1 : end;
    return 0;
  }
  *val = p;
  return 1;
}

/* Whether the key decodes to `lit` (a field name of at most 20 bytes). */
int ifd__json_key_is(const ifd_jkey_t *k, const char *end, const char *lit) {
  size_t n = strlen(lit);
  char buf[128];
  int esc;

  if (!k->esc) return k->n == n && memcmp(k->q + 1, lit, n) == 0;
  /* An escape takes at most 6 bytes per decoded byte, so a longer raw key
   * cannot decode to a field name; a shorter one fits buf. */
  if (k->n > sizeof(buf)) return 0;
  if (ifd_json_strlen(k->q, end, &esc) != n) return 0;
  ifd_json_strcpy(k->q, end, buf);
  return memcmp(buf, lit, n) == 0;
}
