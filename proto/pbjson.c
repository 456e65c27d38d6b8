/*
 * proto/pbjson.c - jansson JSON to protobuf-c messages (the reverse of
 * proto/pbjson_print.c).
 *
 * It accepts what protobuf's JSON parser accepts for the same messages and
 * reports errors with a JSON path ("$.input[0].dims[1]").
 * Field storage goes through the ifd__proto_* helpers of proto/field.c so
 * that both parsers build messages the same way.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/internal.h"
#include "proto/pbtext.h"

/* ---- JSON -> message
 * --------------------------------------------------------- */

typedef struct jctx {
  ifd_errmsg_t *err; /* borrowed, may be NULL */
  size_t len;        /* of `path` */
  char path[512];    /* the JSON path of the value being converted */
} jctx_t;

/* Appends to the path; returns the old length for path_pop(). */
static size_t path_push(jctx_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static size_t path_push(jctx_t *c, const char *fmt, ...) {
  size_t old = c->len;
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(c->path + c->len, sizeof(c->path) - c->len, fmt, ap);
  va_end(ap);
  if (n > 0) c->len += (size_t)n;
  if (c->len >= sizeof(c->path)) c->len = sizeof(c->path) - 1;
  return old;
}

static void path_pop(jctx_t *c, size_t old) {
  c->len = old;
  c->path[old] = '\0';
}

static int jerr(jctx_t *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Fills the error with "PATH: message" and returns `code`. */
static int jerr(jctx_t *c, int code, const char *fmt, ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  return ifd_errf(c->err, code, "%s: %s", c->path, text);
}

static const char *jtype(const json_t *j) {
  switch (json_typeof(j)) {
    case JSON_OBJECT:
      return "object";
    case JSON_ARRAY:
      return "array";
    case JSON_STRING:
      return "string";
    case JSON_INTEGER:
      return "integer";
    case JSON_REAL:
      return "number";
    case JSON_TRUE:
      return "true";
    case JSON_FALSE:
      return "false";
    case JSON_NULL:
      return "null";
  }
  return "value";
}

/*
 * Parses an optionally negative decimal integer that fills all of `s`
 * (n bytes) into sign and magnitude. Returns 0, -1 on bad syntax, -2 when it
 * does not fit in 64 bits.
 */
static int parse_decimal(const char *s, size_t n, int *neg, uint64_t *mag) {
  uint64_t v = 0;
  size_t i = 0;
  int overflow = 0;

  *neg = 0;
  if (n > 0 && s[0] == '-') {
    *neg = 1;
    i = 1;
  }
  if (i >= n) return -1;
  for (; i < n; i++) {
    unsigned d = (unsigned char)s[i] - '0';
    if (d > 9) return -1;
    if (v > (UINT64_MAX - d) / 10) overflow = 1;
    v = v * 10 + d;
  }
  if (overflow) return -2;
  *mag = v;
  return 0;
}

static int int_from_json(jctx_t *c, const ProtobufCFieldDescriptor *f,
                         const json_t *j, ifd__proto_value_t *v) {
  uint64_t mag = 0;
  int neg = 0;

  if (json_is_integer(j)) {
    json_int_t x = json_integer_value(j);
    neg = x < 0;
    mag = neg ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
  } else if (json_is_real(j)) {
    double d = json_real_value(j);
    if (!isfinite(d) || d != floor(d))
      return jerr(c, IFD_EPARSE, "expected integer for field '%s', got %.17g",
                  f->name, d);
    if (fabs(d) >= 18446744073709551616.0) goto out_of_range;
    neg = d < 0;
    mag = (uint64_t)fabs(d);
  } else if (json_is_string(j)) {
    int rc =
        parse_decimal(json_string_value(j), json_string_length(j), &neg, &mag);
    if (rc == -2) goto out_of_range;
    if (rc != 0)
      return jerr(c, IFD_EPARSE, "expected integer for field '%s', got \"%s\"",
                  f->name, json_string_value(j));
  } else {
    return jerr(c, IFD_EPARSE, "expected integer for field '%s', got %s",
                f->name, jtype(j));
  }
  if (ifd__proto_int_from_mag(f->type, neg, mag, v) == 0) return 0;
out_of_range:
  return jerr(c, IFD_EPARSE, "value out of range for %s field '%s'",
              ifd__proto_type_name(f->type), f->name);
}

static int float_from_json(jctx_t *c, const ProtobufCFieldDescriptor *f,
                           const json_t *j, ifd__proto_value_t *v) {
  double d;

  if (json_is_number(j)) {
    d = json_number_value(j);
  } else if (json_is_string(j)) {
    const char *s = json_string_value(j);
    size_t n = json_string_length(j), i;
    char *end;
    if (strcmp(s, "NaN") == 0) {
      d = NAN;
    } else if (strcmp(s, "Infinity") == 0) {
      d = INFINITY;
    } else if (strcmp(s, "-Infinity") == 0) {
      d = -INFINITY;
    } else {
      /* Numbers as strings are allowed, but only in decimal notation. */
      for (i = 0; i < n; i++)
        if (strchr("0123456789.eE+-", s[i]) == NULL || s[i] == '\0') break;
      d = n > 0 && i == n ? strtod(s, &end) : 0;
      if (n == 0 || i != n || end != s + n)
        return jerr(c, IFD_EPARSE, "expected number for field '%s', got \"%s\"",
                    f->name, s);
    }
  } else {
    return jerr(c, IFD_EPARSE, "expected number for field '%s', got %s",
                f->name, jtype(j));
  }
  if (f->type == PROTOBUF_C_TYPE_DOUBLE) {
    v->d = d;
  } else if (isfinite(d) && (d > FLT_MAX || d < -FLT_MAX)) {
    return jerr(c, IFD_EPARSE, "value out of range for float field '%s'",
                f->name);
  } else {
    v->f = (float)d;
  }
  return 0;
}

static int b64_value(int ch) {
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
  if (ch >= '0' && ch <= '9') return ch - '0' + 52;
  if (ch == '+' || ch == '-') return 62;
  if (ch == '/' || ch == '_') return 63;
  return -1;
}

/* Decodes standard or URL-safe base64, padded or not. */
static int bytes_from_json(jctx_t *c, const ProtobufCFieldDescriptor *f,
                           const json_t *j, ifd__proto_value_t *v) {
  const char *s;
  size_t n, i, o = 0;
  uint32_t acc = 0;
  int bits = 0;
  uint8_t *buf;

  if (!json_is_string(j))
    return jerr(c, IFD_EPARSE, "expected base64 string for field '%s', got %s",
                f->name, jtype(j));
  s = json_string_value(j);
  n = json_string_length(j);
  if (n > 0 && s[n - 1] == '=') n--;
  if (n > 0 && s[n - 1] == '=') n--;
  if (n % 4 == 1 ||
      (n != json_string_length(j) && json_string_length(j) % 4 != 0))
    goto out_bad;
  v->bd.len = 0;
  v->bd.data = NULL;
  if (n == 0) return 0;
  buf = malloc(n / 4 * 3 + 3);
  if (buf == NULL) return jerr(c, IFD_ENOMEM, "out of memory");
  for (i = 0; i < n; i++) {
    int b = b64_value((unsigned char)s[i]);
    if (b < 0) {
      free(buf);
      goto out_bad;
    }
    acc = acc << 6 | (uint32_t)b;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      buf[o++] = (uint8_t)(acc >> bits);
    }
  }
  v->bd.len = o;
  v->bd.data = buf;
  return 0;

out_bad:
  return jerr(c, IFD_EPARSE, "invalid base64 for field '%s'", f->name);
}

static int enum_from_json(jctx_t *c, const ProtobufCFieldDescriptor *f,
                          const json_t *j, ifd__proto_value_t *v) {
  const ProtobufCEnumValue *ev;
  if (json_is_integer(j) || json_is_real(j)) return int_from_json(c, f, j, v);
  if (!json_is_string(j))
    return jerr(c, IFD_EPARSE, "expected enum name for field '%s', got %s",
                f->name, jtype(j));
  ev = protobuf_c_enum_descriptor_get_value_by_name(f->descriptor,
                                                    json_string_value(j));
  if (ev == NULL || strlen(json_string_value(j)) != json_string_length(j))
    return jerr(c, IFD_EPARSE, "unknown enum value '%s' for field '%s'",
                json_string_value(j), f->name);
  v->i32 = ev->value;
  return 0;
}

/* Converts a JSON scalar to a value of the non-message field `f`. */
static int value_from_json(jctx_t *c, const ProtobufCFieldDescriptor *f,
                           const json_t *j, ifd__proto_value_t *v) {
  memset(v, 0, sizeof(*v));
  switch (f->type) {
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE:
      return float_from_json(c, f, j, v);
    case PROTOBUF_C_TYPE_BOOL:
      if (!json_is_boolean(j))
        return jerr(c, IFD_EPARSE,
                    "expected true or false for field '%s', got %s", f->name,
                    jtype(j));
      v->b = json_is_true(j);
      return 0;
    case PROTOBUF_C_TYPE_ENUM:
      return enum_from_json(c, f, j, v);
    case PROTOBUF_C_TYPE_STRING: {
      size_t n;
      if (!json_is_string(j))
        return jerr(c, IFD_EPARSE, "expected string for field '%s', got %s",
                    f->name, jtype(j));
      n = json_string_length(j);
      if (memchr(json_string_value(j), '\0', n) != NULL)
        return jerr(c, IFD_EPARSE, "string field '%s' contains a NUL character",
                    f->name);
      v->s = strndup(json_string_value(j), n);
      if (v->s == NULL) return jerr(c, IFD_ENOMEM, "out of memory");
      return 0;
    }
    case PROTOBUF_C_TYPE_BYTES:
      return bytes_from_json(c, f, j, v);
    case PROTOBUF_C_TYPE_MESSAGE:
      return jerr(c, IFD_EINTERNAL, "message field '%s' taken as scalar",
                  f->name);
    default:
      return int_from_json(c, f, j, v);
  }
}

/* Converts a JSON object key to a value of the map key field `kf`. */
static int key_from_json(jctx_t *c, const ProtobufCFieldDescriptor *kf,
                         const char *key, size_t klen, ifd__proto_value_t *v) {
  memset(v, 0, sizeof(*v));
  if (kf->type == PROTOBUF_C_TYPE_STRING) {
    if (memchr(key, '\0', klen) != NULL)
      return jerr(c, IFD_EPARSE, "map key contains a NUL character");
    v->s = strndup(key, klen);
    return v->s != NULL ? 0 : jerr(c, IFD_ENOMEM, "out of memory");
  }
  if (kf->type == PROTOBUF_C_TYPE_BOOL) {
    if (klen == 4 && memcmp(key, "true", 4) == 0) {
      v->b = 1;
      return 0;
    }
    if (klen == 5 && memcmp(key, "false", 5) == 0) return 0;
    return jerr(c, IFD_EPARSE, "expected true or false as map key");
  } else {
    uint64_t mag = 0;
    int neg, rc = parse_decimal(key, klen, &neg, &mag);
    if (rc == -1)
      return jerr(c, IFD_EPARSE, "expected integer as map key, got \"%s\"",
                  key);
    if (rc != 0 || ifd__proto_int_from_mag(kf->type, neg, mag, v) != 0)
      return jerr(c, IFD_EPARSE, "map key out of range for %s",
                  ifd__proto_type_name(kf->type));
    return 0;
  }
}

static int obj_to_msg(jctx_t *c, const json_t *j, ProtobufCMessage *msg,
                      int depth);

/* Stores or appends the JSON scalar `j` to field `f` of `msg`. */
static int store_scalar(jctx_t *c, ProtobufCMessage *msg,
                        const ProtobufCFieldDescriptor *f, const json_t *j) {
  ifd__proto_value_t v;
  int rc = value_from_json(c, f, j, &v);
  if (rc != 0) return rc;
  if (f->label != PROTOBUF_C_LABEL_REPEATED) {
    ifd__proto_set(msg, f, &v);
    return 0;
  }
  if (ifd__proto_append(msg, f, &v) != 0) {
    ifd__proto_value_free(f->type, &v);
    return jerr(c, IFD_ENOMEM, "out of memory");
  }
  return 0;
}

/* Converts the JSON value `j` to the (non-repeated view of) field `f`. */
static int store_value(jctx_t *c, ProtobufCMessage *msg,
                       const ProtobufCFieldDescriptor *f, const json_t *j,
                       int depth) {
  ProtobufCMessage *sub;
  if (f->type != PROTOBUF_C_TYPE_MESSAGE) return store_scalar(c, msg, f, j);
  if (!json_is_object(j))
    return jerr(c, IFD_EPARSE, "expected object for field '%s', got %s",
                f->name, jtype(j));
  if (ifd__proto_submsg(msg, f, &sub) != 0)
    return jerr(c, IFD_ENOMEM, "out of memory");
  return obj_to_msg(c, j, sub, depth + 1);
}

static int map_from_json(jctx_t *c, ProtobufCMessage *msg,
                         const ProtobufCFieldDescriptor *f, const json_t *j,
                         int depth) {
  const ProtobufCMessageDescriptor *ed = f->descriptor;
  const ProtobufCFieldDescriptor *kf = &ed->fields[0], *vf = &ed->fields[1];
  void *it;

  if (!json_is_object(j))
    return jerr(c, IFD_EPARSE, "expected object for map field '%s', got %s",
                f->name, jtype(j));
  for (it = json_object_iter((json_t *)j); it != NULL;
       it = json_object_iter_next((json_t *)j, it)) {
    const char *key = json_object_iter_key(it);
    size_t klen = json_object_iter_key_len(it);
    const json_t *val = json_object_iter_value(it);
    size_t mark = path_push(c, "[\"%s\"]", key);
    ProtobufCMessage *entry;
    ifd__proto_value_t kv;
    int rc;

    if (json_is_null(val))
      return jerr(c, IFD_EPARSE, "null is not a valid map value");
    if (ifd__proto_submsg(msg, f, &entry) != 0)
      return jerr(c, IFD_ENOMEM, "out of memory");
    if ((rc = key_from_json(c, kf, key, klen, &kv)) != 0) return rc;
    ifd__proto_set(entry, kf, &kv);
    if ((rc = store_value(c, entry, vf, val, depth)) != 0) return rc;
    path_pop(c, mark);
  }
  return 0;
}

static int field_from_json(jctx_t *c, ProtobufCMessage *msg,
                           const ProtobufCFieldDescriptor *f, const json_t *j,
                           int depth) {
  size_t i;

  if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
    uint32_t cur =
        *(const uint32_t *)((const char *)msg + f->quantifier_offset);
    if (cur != 0 && cur != f->id) {
      const ProtobufCFieldDescriptor *other =
          protobuf_c_message_descriptor_get_field(msg->descriptor, cur);
      return jerr(c, IFD_EPARSE, "field '%s' and field '%s' are in one oneof",
                  f->name, other != NULL ? other->name : "?");
    }
  }
  if (f->label != PROTOBUF_C_LABEL_REPEATED)
    return store_value(c, msg, f, j, depth);
  if (ifd__proto_is_map(msg->descriptor, f))
    return map_from_json(c, msg, f, j, depth);
  if (!json_is_array(j))
    return jerr(c, IFD_EPARSE, "expected array for repeated field '%s', got %s",
                f->name, jtype(j));
  for (i = 0; i < json_array_size(j); i++) {
    size_t mark = path_push(c, "[%zu]", i);
    const json_t *el = json_array_get(j, i);
    int rc;
    if (json_is_null(el))
      return jerr(c, IFD_EPARSE, "null is not allowed in repeated field '%s'",
                  f->name);
    if ((rc = store_value(c, msg, f, el, depth)) != 0) return rc;
    path_pop(c, mark);
  }
  return 0;
}

/* Returns whether `key` is the lowerCamelCase JSON name of field `name`. */
static int json_name_eq(const char *name, const char *key) {
  int upper = 0;
  for (; *name != '\0'; name++) {
    char ch = *name;
    if (ch == '_') {
      upper = 1;
      continue;
    }
    if (upper && ch >= 'a' && ch <= 'z') ch = (char)(ch - 'a' + 'A');
    upper = 0;
    if (*key++ != ch) return 0;
  }
  return *key == '\0';
}

static const ProtobufCFieldDescriptor *find_field(
    const ProtobufCMessageDescriptor *d, const char *key, size_t klen) {
  const ProtobufCFieldDescriptor *f;
  unsigned i;

  if (strlen(key) != klen) return NULL;
  f = protobuf_c_message_descriptor_get_field_by_name(d, key);
  if (f != NULL) return f;
  for (i = 0; i < d->n_fields; i++)
    if (json_name_eq(d->fields[i].name, key)) return &d->fields[i];
  return NULL;
}

/* Fills `msg` (fresh, of its descriptor's type) from the JSON object `j`. */
static int obj_to_msg(jctx_t *c, const json_t *j, ProtobufCMessage *msg,
                      int depth) {
  const ProtobufCMessageDescriptor *d = msg->descriptor;
  unsigned char *seen;
  int rc = 0;
  void *it;

  if (!json_is_object(j))
    return jerr(c, IFD_EPARSE, "expected object for message %s, got %s",
                d->name, jtype(j));
  if (depth > IFD__PROTO_MAX_DEPTH)
    return jerr(c, IFD_EPARSE, "messages nested deeper than %d levels",
                IFD__PROTO_MAX_DEPTH);
  seen = calloc(d->n_fields + 1, 1);
  if (seen == NULL) return jerr(c, IFD_ENOMEM, "out of memory");
  for (it = json_object_iter((json_t *)j); it != NULL;
       it = json_object_iter_next((json_t *)j, it)) {
    const char *key = json_object_iter_key(it);
    const json_t *val = json_object_iter_value(it);
    size_t mark = path_push(c, ".%s", key);
    const ProtobufCFieldDescriptor *f =
        find_field(d, key, json_object_iter_key_len(it));
    size_t idx;

    if (f == NULL) {
      rc =
          jerr(c, IFD_EPARSE, "unknown field '%s' in message %s", key, d->name);
      goto out_free_seen;
    }
    idx = (size_t)(f - d->fields);
    if (seen[idx]) {
      rc = jerr(c, IFD_EPARSE, "field '%s' is given more than once", f->name);
      goto out_free_seen;
    }
    seen[idx] = 1;
    if (!json_is_null(val)) {
      rc = field_from_json(c, msg, f, val, depth);
      if (rc != 0) goto out_free_seen;
    }
    path_pop(c, mark);
  }

out_free_seen:
  free(seen);
  return rc;
}

int ifd_pbjson_to_message(const ProtobufCMessageDescriptor *desc,
                          const json_t *json, ProtobufCMessage **out,
                          ifd_errmsg_t *err) {
  const ProtobufCMessageDescriptor *where = NULL;
  const ProtobufCFieldDescriptor *missing;
  ProtobufCMessage *msg;
  jctx_t c;
  int rc;

  *out = NULL;
  c.err = err;
  c.len = 1;
  strcpy(c.path, "$");
  if (json == NULL) return jerr(&c, IFD_EPARSE, "no JSON value");
  msg = ifd__proto_new(desc);
  if (msg == NULL) return jerr(&c, IFD_ENOMEM, "out of memory");
  rc = obj_to_msg(&c, json, msg, 0);
  if (rc != 0) goto out_free_msg;
  missing = ifd__proto_missing_required(msg, &where);
  if (missing != NULL) {
    rc = jerr(&c, IFD_EPARSE, "missing required field '%s' in message %s",
              missing->name, where->name);
    goto out_free_msg;
  }
  *out = msg;
  return 0;

out_free_msg:
  protobuf_c_message_free_unpacked(msg, NULL);
  return rc;
}
