/*
 * proto/pbtext.c - the protobuf text-format parser (config.pbtxt files).
 *
 * The parser is generic over protobuf-c descriptors: a hand-written lexer
 * turns the input into identifiers, numbers, quoted strings and one-byte
 * symbols, and a recursive-descent parser walks the message descriptor while
 * it fills a message that looks exactly as protobuf_c_message_unpack() would
 * have left it. The message is kept consistent after every single store, so
 * an error anywhere is handled by freeing the partial message with
 * protobuf_c_message_free_unpacked().
 * Values are stored through the field helpers of proto/field.c, which
 * proto/pbjson.c shares (proto/internal.h).
 */
#include "proto/pbtext.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/utf8.h"
#include "proto/internal.h"

/* ---- lexer ------------------------------------------------------------------
 */

typedef enum tok_kind {
  TK_EOF,
  TK_IDENT,
  TK_NUMBER,
  TK_STRING, /* the raw literal, quotes included */
  TK_SYMBOL, /* one of { } < > [ ] : , ; - */
  TK_BAD,    /* one byte that starts no token */
} tok_kind_t;

typedef struct tok {
  tok_kind_t kind;
  const char *p; /* borrowed: points into the input */
  size_t len;
  unsigned line, col;
} tok_t;

typedef struct parser {
  const char *pos; /* borrowed: the input, outlives the parse */
  const char *end;
  unsigned line, col;
  const char *filename; /* borrowed */
  ifd_errmsg_t *err;    /* borrowed, may be NULL */
  tok_t ahead;
  int have_ahead;
} parser_t;

static int is_alpha(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(int c) {
  return c >= '0' && c <= '9';
}

/* Moves the read position `n` bytes on, counting lines and columns. */
static void advance(parser_t *ps, size_t n) {
  while (n-- > 0) {
    if (*ps->pos == '\n') {
      ps->line++;
      ps->col = 1;
    } else {
      ps->col++;
    }
    ps->pos++;
  }
}

static int perr(parser_t *ps, unsigned line, unsigned col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Fills the error with "FILE:LINE:COL: message" and returns IFD_EPARSE. */
static int perr(parser_t *ps, unsigned line, unsigned col, const char *fmt,
                ...) {
  char text[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  return ifd_errf(ps->err, IFD_EPARSE, "%s:%u:%u: %s", ps->filename, line, col,
                  text);
}

static int nomem(parser_t *ps) {
  return ifd_errf(ps->err, IFD_ENOMEM, "%s: out of memory", ps->filename);
}

/* Renders a token for an error message, escaped and cut to a sane length. */
static const char *tok_show(const tok_t *t, char *buf, size_t size) {
  size_t i, o = 0;
  for (i = 0; i < t->len && o + 8 < size; i++) {
    unsigned char c = (unsigned char)t->p[i];
    if (i == 40) {
      o += (size_t)snprintf(buf + o, size - o, "...");
      break;
    }
    if (c >= 0x20 && c < 0x7f && c != '\\')
      buf[o++] = (char)c;
    else
      o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
  }
  buf[o] = '\0';
  return buf;
}

/* Reads the next token. Returns 0, or IFD_EPARSE for an unterminated string. */
static int lex(parser_t *ps, tok_t *t) {
  size_t avail, i;
  unsigned char c;

  for (;;) {
    if (ps->pos == ps->end) break;
    c = (unsigned char)*ps->pos;
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
        c == '\f') {
      advance(ps, 1);
    } else if (c == '#') {
      while (ps->pos < ps->end && *ps->pos != '\n') advance(ps, 1);
    } else {
      break;
    }
  }
  t->p = ps->pos;
  t->line = ps->line;
  t->col = ps->col;
  avail = (size_t)(ps->end - ps->pos);
  if (avail == 0) {
    t->kind = TK_EOF;
    t->len = 0;
    return 0;
  }
  c = (unsigned char)ps->pos[0];
  i = 1;
  if (is_alpha(c)) {
    t->kind = TK_IDENT;
    while (i < avail && (is_alpha(ps->pos[i]) || is_digit(ps->pos[i]))) i++;
  } else if (is_digit(c) || (c == '.' && avail > 1 && is_digit(ps->pos[1]))) {
    /* A loose scan: the value parsers check the exact syntax later, so
     * "12abc" becomes one bad number rather than a number and a name. */
    int hex = avail > 1 && c == '0' && (ps->pos[1] == 'x' || ps->pos[1] == 'X');
    t->kind = TK_NUMBER;
    while (i < avail) {
      char d = ps->pos[i];
      if (is_alpha(d) || is_digit(d) || d == '.') {
        i++;
        if (!hex && (d == 'e' || d == 'E') && i < avail &&
            (ps->pos[i] == '+' || ps->pos[i] == '-'))
          i++;
      } else {
        break;
      }
    }
  } else if (c == '"' || c == '\'') {
    t->kind = TK_STRING;
    for (;;) {
      if (i >= avail || ps->pos[i] == '\n')
        return perr(ps, t->line, t->col, "unterminated string");
      if (ps->pos[i] == '\\') {
        if (i + 1 >= avail || ps->pos[i + 1] == '\n')
          return perr(ps, t->line, t->col, "unterminated string");
        i += 2;
        continue;
      }
      if ((unsigned char)ps->pos[i++] == c) break;
    }
  } else if (c != '\0' && strchr("{}<>[]:,;-", c) != NULL) {
    t->kind = TK_SYMBOL;
  } else {
    t->kind = TK_BAD;
  }
  t->len = i;
  advance(ps, i);
  return 0;
}

static int next(parser_t *ps, tok_t *t) {
  if (ps->have_ahead) {
    *t = ps->ahead;
    ps->have_ahead = 0;
    return 0;
  }
  return lex(ps, t);
}

static int peek(parser_t *ps, const tok_t **t) {
  if (!ps->have_ahead) {
    int rc = lex(ps, &ps->ahead);
    if (rc != 0) return rc;
    ps->have_ahead = 1;
  }
  *t = &ps->ahead;
  return 0;
}

static int is_sym(const tok_t *t, char c) {
  return t->kind == TK_SYMBOL && t->p[0] == c;
}

static int is_word(const tok_t *t, const char *w) {
  return t->kind == TK_IDENT && t->len == strlen(w) &&
         memcmp(t->p, w, t->len) == 0;
}

static int expectedf(parser_t *ps, const tok_t *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Reports that `t` is not what was expected ("expected X, got 'Y'"). */
static int expectedf(parser_t *ps, const tok_t *t, const char *fmt, ...) {
  char what[512], shown[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  if (t->kind == TK_EOF)
    return perr(ps, t->line, t->col, "unexpected end of input, expected %s",
                what);
  return perr(ps, t->line, t->col, "expected %s, got '%s'", what,
              tok_show(t, shown, sizeof(shown)));
}

/* ---- values -----------------------------------------------------------------
 */

/* Parses an integer-like value ('-'? NUMBER) of field `f` into `v`. */
static int parse_int(parser_t *ps, const ProtobufCFieldDescriptor *f,
                     ifd__proto_value_t *v, const char *what) {
  tok_t t;
  unsigned line, col;
  int neg = 0, rc;
  uint64_t mag = 0;

  if ((rc = next(ps, &t)) != 0) return rc;
  line = t.line;
  col = t.col;
  if (is_sym(&t, '-')) {
    neg = 1;
    if ((rc = next(ps, &t)) != 0) return rc;
  }
  if (t.kind != TK_NUMBER)
    return expectedf(ps, &t, "%s for field '%s'", what, f->name);
  rc = ifd__proto_parse_uint(t.p, t.len, &mag);
  if (rc == -1) return expectedf(ps, &t, "%s for field '%s'", what, f->name);
  if (rc == -2 || ifd__proto_int_from_mag(f->type, neg, mag, v) != 0)
    return perr(ps, line, col, "value out of range for %s field '%s'",
                ifd__proto_type_name(f->type), f->name);
  return 0;
}

/* Returns whether `t` spells inf/infinity/nan (any case), setting *d. */
static int special_double(const tok_t *t, double *d) {
  if (t->kind != TK_IDENT) return 0;
  if ((t->len == 3 && strncasecmp(t->p, "inf", 3) == 0) ||
      (t->len == 8 && strncasecmp(t->p, "infinity", 8) == 0)) {
    *d = INFINITY;
    return 1;
  }
  if (t->len == 3 && strncasecmp(t->p, "nan", 3) == 0) {
    *d = NAN;
    return 1;
  }
  return 0;
}

/* Parses a float or double: decimal numbers, 1e5, 1.5f, inf, nan. */
static int parse_float(parser_t *ps, const ProtobufCFieldDescriptor *f,
                       ifd__proto_value_t *v) {
  tok_t t;
  int neg = 0, rc;
  double d;

  if ((rc = next(ps, &t)) != 0) return rc;
  if (is_sym(&t, '-')) {
    neg = 1;
    if ((rc = next(ps, &t)) != 0) return rc;
  }
  if (t.kind == TK_NUMBER) {
    char buf[128], *end;
    size_t n = t.len, i;
    if (n > 1 && (t.p[n - 1] == 'f' || t.p[n - 1] == 'F')) n--;
    if (n >= sizeof(buf))
      return expectedf(ps, &t, "number for field '%s'", f->name);
    for (i = 0; i < n; i++) {
      char c = t.p[i];
      if (!is_digit(c) && c != '.' && c != 'e' && c != 'E' && c != '+' &&
          c != '-')
        return expectedf(ps, &t, "number for field '%s'", f->name);
    }
    memcpy(buf, t.p, n);
    buf[n] = '\0';
    errno = 0;
    d = strtod(buf, &end);
    if (end != buf + n)
      return expectedf(ps, &t, "number for field '%s'", f->name);
  } else if (!special_double(&t, &d)) {
    return expectedf(ps, &t, "number for field '%s'", f->name);
  }
  if (neg) d = -d;
  if (f->type == PROTOBUF_C_TYPE_DOUBLE) {
    v->d = d;
  } else if (d > FLT_MAX) {
    /* As protobuf's text parser does, too large a float becomes infinite. */
    v->f = INFINITY;
  } else if (d < -FLT_MAX) {
    v->f = -INFINITY;
  } else {
    v->f = (float)d;
  }
  return 0;
}

static int parse_bool(parser_t *ps, const ProtobufCFieldDescriptor *f,
                      ifd__proto_value_t *v) {
  tok_t t;
  int rc;
  uint64_t mag;

  if ((rc = next(ps, &t)) != 0) return rc;
  if (is_word(&t, "true") || is_word(&t, "True") || is_word(&t, "t")) {
    v->b = 1;
  } else if (is_word(&t, "false") || is_word(&t, "False") || is_word(&t, "f")) {
    v->b = 0;
  } else if (t.kind == TK_NUMBER &&
             ifd__proto_parse_uint(t.p, t.len, &mag) == 0 && mag <= 1) {
    v->b = mag == 1;
  } else {
    return expectedf(ps, &t, "boolean for field '%s'", f->name);
  }
  return 0;
}

static int parse_enum(parser_t *ps, const ProtobufCFieldDescriptor *f,
                      ifd__proto_value_t *v) {
  const tok_t *pk;
  tok_t t;
  char name[128];
  const ProtobufCEnumValue *ev = NULL;
  int rc;

  if ((rc = peek(ps, &pk)) != 0) return rc;
  if (pk->kind != TK_IDENT)
    return parse_int(ps, f, v, "enum value name or number");
  next(ps, &t);
  if (t.len < sizeof(name)) {
    memcpy(name, t.p, t.len);
    name[t.len] = '\0';
    ev = protobuf_c_enum_descriptor_get_value_by_name(f->descriptor, name);
  }
  if (ev == NULL)
    return perr(ps, t.line, t.col, "unknown enum value '%.*s' for field '%s'",
                (int)(t.len < 100 ? t.len : 100), t.p, f->name);
  v->i32 = ev->value;
  return 0;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Writes code point `cp` as UTF-8 at `o`; returns the bytes written. */
static size_t put_utf8(char *o, uint32_t cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xc0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xe0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  o[0] = (char)(0xf0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
  o[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* Reads exactly `n` hex digits at *s (before `e`) into *cp. */
static int read_hex(const char **s, const char *e, int n, uint32_t *cp) {
  uint32_t v = 0;
  int i;
  for (i = 0; i < n; i++) {
    int h = *s + i < e ? hexval((unsigned char)(*s)[i]) : -1;
    if (h < 0) return -1;
    v = v * 16 + (uint32_t)h;
  }
  *s += n;
  *cp = v;
  return 0;
}

/*
 * Decodes the escapes of string literal `t` into `o`, which has room for at
 * least t->len bytes (no escape decodes longer than it is written), and adds
 * the decoded length to *olen.
 */
static int decode_string(parser_t *ps, const tok_t *t, char *o, size_t *olen) {
  const char *s = t->p + 1, *e = t->p + t->len - 1;
  size_t n = 0;

  while (s < e) {
    unsigned col = t->col + (unsigned)(s - t->p);
    uint32_t cp;
    char c = *s++;
    if (c != '\\') {
      o[n++] = c;
      continue;
    }
    c = *s++; /* the lexer made sure a character follows every backslash */
    switch (c) {
      case 'a':
        o[n++] = '\a';
        break;
      case 'b':
        o[n++] = '\b';
        break;
      case 'f':
        o[n++] = '\f';
        break;
      case 'n':
        o[n++] = '\n';
        break;
      case 'r':
        o[n++] = '\r';
        break;
      case 't':
        o[n++] = '\t';
        break;
      case 'v':
        o[n++] = '\v';
        break;
      case '\\':
      case '\'':
      case '"':
      case '?':
        o[n++] = c;
        break;
      case 'x':
      case 'X': {
        int h = s < e ? hexval((unsigned char)*s) : -1;
        if (h < 0)
          return perr(ps, t->line, col, "invalid \\x escape in string");
        cp = (uint32_t)h;
        s++;
        if (s < e && (h = hexval((unsigned char)*s)) >= 0) {
          cp = cp * 16 + (uint32_t)h;
          s++;
        }
        o[n++] = (char)cp;
        break;
      }
      case 'u':
      case 'U':
        if (read_hex(&s, e, c == 'u' ? 4 : 8, &cp) != 0)
          return perr(ps, t->line, col, "invalid \\%c escape in string", c);
        if (cp >= 0xd800 && cp <= 0xdbff && e - s >= 6 && s[0] == '\\' &&
            s[1] == 'u') {
          const char *lo_s = s + 2;
          uint32_t lo;
          if (read_hex(&lo_s, e, 4, &lo) == 0 && lo >= 0xdc00 && lo <= 0xdfff) {
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            s = lo_s;
          }
        }
        if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
          return perr(ps, t->line, col, "invalid code point in \\%c escape", c);
        n += put_utf8(o + n, cp);
        break;
      default:
        if (c >= '0' && c <= '7') {
          int digits = 1;
          cp = (uint32_t)(c - '0');
          while (digits < 3 && s < e && *s >= '0' && *s <= '7') {
            cp = cp * 8 + (uint32_t)(*s++ - '0');
            digits++;
          }
          o[n++] = (char)(cp & 0xff); /* "\777" wraps, as in protobuf */
          break;
        }
        return perr(
            ps, t->line, col, "invalid escape sequence '\\%c' in string",
            (unsigned char)c >= 0x20 && (unsigned char)c < 0x7f ? c : '?');
    }
  }
  *olen += n;
  return 0;
}

/* Parses one or more adjacent string literals into a string or bytes value. */
static int parse_string(parser_t *ps, const ProtobufCFieldDescriptor *f,
                        ifd__proto_value_t *v) {
  tok_t t, first;
  const tok_t *pk;
  char *buf = NULL;
  size_t len = 0;
  int rc;

  if ((rc = next(ps, &t)) != 0) return rc;
  if (t.kind != TK_STRING)
    return expectedf(ps, &t, "string for field '%s'", f->name);
  first = t;
  for (;;) {
    /* The decoded text is never longer than the literal, so this bound
     * cannot overflow: it is below the input's own size. */
    char *grown = realloc(buf, len + t.len + 1);
    if (grown == NULL) {
      rc = nomem(ps);
      goto out_free_buf;
    }
    buf = grown;
    if ((rc = decode_string(ps, &t, buf + len, &len)) != 0) goto out_free_buf;
    if ((rc = peek(ps, &pk)) != 0) goto out_free_buf;
    if (pk->kind != TK_STRING) break;
    next(ps, &t);
  }
  if (f->type == PROTOBUF_C_TYPE_STRING) {
    if (memchr(buf, '\0', len) != NULL) {
      rc = perr(ps, first.line, first.col,
                "string field '%s' contains a NUL character", f->name);
      goto out_free_buf;
    }
    if (!ifd_utf8_valid(buf, len)) {
      rc = perr(ps, first.line, first.col,
                "string field '%s' is not valid UTF-8 (use a bytes field)",
                f->name);
      goto out_free_buf;
    }
    buf[len] = '\0';
    v->s = buf;
  } else if (len == 0) {
    free(buf);
    v->bd.len = 0;
    v->bd.data = NULL;
  } else {
    v->bd.len = len;
    v->bd.data = (uint8_t *)buf;
  }
  return 0;

out_free_buf:
  free(buf);
  return rc;
}

/* Parses one scalar value of field `f` and stores or appends it. */
static int parse_scalar(parser_t *ps, ProtobufCMessage *msg,
                        const ProtobufCFieldDescriptor *f) {
  ifd__proto_value_t v;
  int rc;

  memset(&v, 0, sizeof(v));
  switch (f->type) {
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE:
      rc = parse_float(ps, f, &v);
      break;
    case PROTOBUF_C_TYPE_BOOL:
      rc = parse_bool(ps, f, &v);
      break;
    case PROTOBUF_C_TYPE_ENUM:
      rc = parse_enum(ps, f, &v);
      break;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
      rc = parse_string(ps, f, &v);
      break;
    default:
      rc = parse_int(ps, f, &v, "integer");
      break;
  }
  if (rc != 0) return rc;
  if (f->label != PROTOBUF_C_LABEL_REPEATED) {
    ifd__proto_set(msg, f, &v);
    return 0;
  }
  if (ifd__proto_append(msg, f, &v) != 0) {
    ifd__proto_value_free(f->type, &v);
    return nomem(ps);
  }
  return 0;
}

static int parse_body(parser_t *ps, ProtobufCMessage *msg, char close,
                      int depth);

/* Holds iff map entries `a` and `b` have equal keys (map keys are integers,
 * bools or strings). */
static int same_key(const ProtobufCMessage *a, const ProtobufCMessage *b) {
  const ProtobufCFieldDescriptor *k = &a->descriptor->fields[0];
  const char *ka = (const char *)a + k->offset,
             *kb = (const char *)b + k->offset;
  if (k->type == PROTOBUF_C_TYPE_STRING) {
    const char *sa, *sb;
    memcpy(&sa, ka, sizeof(sa));
    memcpy(&sb, kb, sizeof(sb));
    return strcmp(sa != NULL ? sa : "", sb != NULL ? sb : "") == 0;
  }
  return memcmp(ka, kb, ifd__proto_value_size(k->type)) == 0;
}

/* A map is a map in text format too: when the entry just appended to map
 * field `f` repeats an earlier key, its value replaces the earlier entry's
 * (the last one wins, as protobuf's own parser does) and the list keeps one
 * entry per key, in the order the keys first appeared. */
static void map_keep_last(ProtobufCMessage *msg,
                          const ProtobufCFieldDescriptor *f) {
  size_t *n = ifd__proto_field_at(msg, f->quantifier_offset);
  ProtobufCMessage **arr;
  memcpy(&arr, ifd__proto_field_at(msg, f->offset), sizeof(arr));
  for (size_t i = 0; i + 1 < *n; i++) {
    if (!same_key(arr[i], arr[*n - 1])) continue;
    protobuf_c_message_free_unpacked(arr[i], NULL);
    arr[i] = arr[*n - 1];
    (*n)--;
    return;
  }
}

/* Parses `{ ... }` or `< ... >` as a value of message field `f`. */
static int parse_message_value(parser_t *ps, ProtobufCMessage *msg,
                               const ProtobufCFieldDescriptor *f, int depth) {
  ProtobufCMessage *sub;
  tok_t t;
  char close;
  int rc;

  if ((rc = next(ps, &t)) != 0) return rc;
  if (is_sym(&t, '{'))
    close = '}';
  else if (is_sym(&t, '<'))
    close = '>';
  else
    return expectedf(ps, &t, "'{' or '<' for message field '%s'", f->name);
  if (depth + 1 > IFD__PROTO_MAX_DEPTH)
    return perr(ps, t.line, t.col, "messages nested deeper than %d levels",
                IFD__PROTO_MAX_DEPTH);
  if (ifd__proto_submsg(msg, f, &sub) != 0) return nomem(ps);
  if ((rc = parse_body(ps, sub, close, depth + 1)) != 0) return rc;
  if (ifd__proto_is_map(msg->descriptor, f)) map_keep_last(msg, f);
  return 0;
}

/* Parses what follows a field name: `: value`, `{...}`, or a `[...]` list. */
static int parse_field(parser_t *ps, ProtobufCMessage *msg,
                       const ProtobufCFieldDescriptor *f, int depth) {
  int is_msg = f->type == PROTOBUF_C_TYPE_MESSAGE;
  const tok_t *pk;
  tok_t t;
  int rc;

  if ((rc = peek(ps, &pk)) != 0) return rc;
  if (is_sym(pk, ':')) {
    next(ps, &t);
    if ((rc = peek(ps, &pk)) != 0) return rc;
  } else if (!is_msg) {
    return expectedf(ps, pk, "':' after field '%s'", f->name);
  }
  if (f->label == PROTOBUF_C_LABEL_REPEATED && is_sym(pk, '[')) {
    next(ps, &t);
    if ((rc = peek(ps, &pk)) != 0) return rc;
    if (is_sym(pk, ']')) {
      next(ps, &t);
      return 0;
    }
    for (;;) {
      rc = is_msg ? parse_message_value(ps, msg, f, depth)
                  : parse_scalar(ps, msg, f);
      if (rc != 0) return rc;
      if ((rc = next(ps, &t)) != 0) return rc;
      if (is_sym(&t, ']')) return 0;
      if (!is_sym(&t, ','))
        return expectedf(ps, &t, "',' or ']' in the list of field '%s'",
                         f->name);
    }
  }
  return is_msg ? parse_message_value(ps, msg, f, depth)
                : parse_scalar(ps, msg, f);
}

/* Parses fields into `msg` until `close` ('}' or '>'), or the end of input
 * when `close` is 0. */
static int parse_body(parser_t *ps, ProtobufCMessage *msg, char close,
                      int depth) {
  const ProtobufCMessageDescriptor *desc = msg->descriptor;

  for (;;) {
    const ProtobufCFieldDescriptor *f = NULL;
    const tok_t *pk;
    char name[128];
    tok_t t;
    int rc;

    if ((rc = next(ps, &t)) != 0) return rc;
    if (t.kind == TK_EOF) {
      if (close == 0) return 0;
      return perr(ps, t.line, t.col, "unexpected end of input, expected '%c'",
                  close);
    }
    if (close != 0 && is_sym(&t, close)) return 0;
    if (t.kind != TK_IDENT) {
      if (close == 0) return expectedf(ps, &t, "field name");
      return expectedf(ps, &t, "field name or '%c'", close);
    }
    if (t.len < sizeof(name)) {
      memcpy(name, t.p, t.len);
      name[t.len] = '\0';
      f = protobuf_c_message_descriptor_get_field_by_name(desc, name);
    }
    if (f == NULL)
      return perr(ps, t.line, t.col, "unknown field '%.*s' in message %s",
                  (int)(t.len < 100 ? t.len : 100), t.p, desc->name);
    if ((rc = parse_field(ps, msg, f, depth)) != 0) return rc;
    if ((rc = peek(ps, &pk)) != 0) return rc;
    if (is_sym(pk, ',') || is_sym(pk, ';')) next(ps, &t);
  }
}

int ifd_pbtext_parse(const ProtobufCMessageDescriptor *desc, const char *text,
                     size_t len, const char *filename, ProtobufCMessage **out,
                     ifd_errmsg_t *err) {
  const ProtobufCMessageDescriptor *where = NULL;
  const ProtobufCFieldDescriptor *missing;
  ProtobufCMessage *msg;
  parser_t ps;
  int rc;

  *out = NULL;
  if (text == NULL) len = 0;
  memset(&ps, 0, sizeof(ps));
  ps.pos = text;
  ps.end = text + len;
  ps.line = 1;
  ps.col = 1;
  ps.filename = filename != NULL ? filename : "<input>";
  ps.err = err;
  if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) ps.pos += 3;

  msg = ifd__proto_new(desc);
  if (msg == NULL) return nomem(&ps);
  rc = parse_body(&ps, msg, 0, 0);
  if (rc != 0) goto out_free_msg;
  missing = ifd__proto_missing_required(msg, &where);
  if (missing != NULL) {
    rc = perr(&ps, ps.line, ps.col, "missing required field '%s' in message %s",
              missing->name, where->name);
    goto out_free_msg;
  }
  *out = msg;
  return 0;

out_free_msg:
  protobuf_c_message_free_unpacked(msg, NULL);
  return rc;
}
