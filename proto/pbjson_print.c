/*
 * proto/pbjson_print.c - protobuf-c messages to jansson JSON.
 *
 * The output mirrors what tritonserver returns for /v2/models/<m>/config:
 * protobuf's JSON printer with proto field names, enums as names and every
 * primitive field printed, plus Triton's fix-up that prints 64-bit integers
 * as numbers. Fields come out in declaration order, which protoc-c keeps in
 * the struct layout (see next_field()), except that a oneof's members come
 * after the other fields. The reverse direction is proto/pbjson.c.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "proto/internal.h"
#include "proto/pbtext.h"

/* ---- message -> JSON -------------------------------------------------------
 */

static const char b64_chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static json_t *bytes_to_json(const ProtobufCBinaryData *bd) {
  size_t i, o = 0, n = bd->len;
  json_t *j;
  char *buf;

  if (n > (SIZE_MAX - 1) / 4 * 3 - 3) return NULL;
  buf = malloc((n + 2) / 3 * 4 + 1);
  if (buf == NULL) return NULL;
  for (i = 0; i + 2 < n; i += 3) {
    uint32_t v = (uint32_t)bd->data[i] << 16 | (uint32_t)bd->data[i + 1] << 8 |
                 bd->data[i + 2];
    buf[o++] = b64_chars[v >> 18];
    buf[o++] = b64_chars[(v >> 12) & 63];
    buf[o++] = b64_chars[(v >> 6) & 63];
    buf[o++] = b64_chars[v & 63];
  }
  if (i < n) {
    uint32_t v = (uint32_t)bd->data[i] << 16;
    if (i + 1 < n) v |= (uint32_t)bd->data[i + 1] << 8;
    buf[o++] = b64_chars[v >> 18];
    buf[o++] = b64_chars[(v >> 12) & 63];
    buf[o++] = i + 1 < n ? b64_chars[(v >> 6) & 63] : '=';
    buf[o++] = '=';
  }
  j = json_stringn(buf, o);
  free(buf);
  return j;
}

/*
 * Returns a JSON string for `s`. protobuf-c does not check UTF-8 when it
 * unpacks, but jansson refuses ill-formed strings, so each bad byte becomes
 * U+FFFD instead of failing the whole conversion.
 */
static json_t *string_to_json(const char *s) {
  size_t n = strlen(s), o;
  json_t *j;
  char *buf;

  if (ifd_utf8_valid(s, n)) return json_stringn(s, n);
  if (n > SIZE_MAX / 3) return NULL;
  buf = malloc(n * 3);
  if (buf == NULL) return NULL;
  o = ifd_utf8_repair(s, n, buf);
  j = json_stringn(buf, o);
  free(buf);
  return j;
}

/* Non-finite floats have no JSON number; protobuf's JSON mapping uses these
 * strings. */
static json_t *nonfinite_to_json(double d) {
  if (isnan(d)) return json_string("NaN");
  return json_string(d > 0 ? "Infinity" : "-Infinity");
}

/*
 * A float widened to double prints as 0.10000000149011612. Widen instead the
 * shortest decimal that reads back as the same float, so 0.1f prints as 0.1
 * does, as protobuf prints it.
 */
/* protobuf's JSON printer writes a whole number without a fraction (0, not
 * 0.0), and so does Triton's config JSON: whole values within a double's
 * exact integers become JSON integers. */
static json_t *real_to_json(double d) {
  if (d == floor(d) && fabs(d) < 9007199254740992.0)
    return json_integer((json_int_t)d);
  return json_real(d);
}

static json_t *float_to_json(float f) {
  double d = f;
  char buf[32];
  int prec;

  if (!isfinite(f)) return nonfinite_to_json(d);
  for (prec = 1; prec <= 9; prec++) {
    snprintf(buf, sizeof(buf), "%.*g", prec, d);
    if (strtof(buf, NULL) == f) {
      double shortest = strtod(buf, NULL);
      if ((float)shortest == f) d = shortest;
      break;
    }
  }
  return real_to_json(d);
}

static json_t *msg_to_json(const ProtobufCMessage *msg);

/* Converts the single value of field `f` stored at `p`. */
static json_t *value_to_json(const ProtobufCFieldDescriptor *f, const void *p) {
  switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32: {
      int32_t v;
      memcpy(&v, p, sizeof(v));
      return json_integer(v);
    }
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: {
      uint32_t v;
      memcpy(&v, p, sizeof(v));
      return json_integer(v);
    }
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: {
      int64_t v;
      memcpy(&v, p, sizeof(v));
      return json_integer(v);
    }
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: {
      uint64_t v;
      char buf[24];
      memcpy(&v, p, sizeof(v));
      if (v <= INT64_MAX) return json_integer((json_int_t)v);
      /* A json_int_t cannot hold it, and a real would round it. */
      snprintf(buf, sizeof(buf), "%" PRIu64, v);
      return json_string(buf);
    }
    case PROTOBUF_C_TYPE_FLOAT: {
      float v;
      memcpy(&v, p, sizeof(v));
      return float_to_json(v);
    }
    case PROTOBUF_C_TYPE_DOUBLE: {
      double v;
      memcpy(&v, p, sizeof(v));
      return isfinite(v) ? real_to_json(v) : nonfinite_to_json(v);
    }
    case PROTOBUF_C_TYPE_BOOL: {
      protobuf_c_boolean v;
      memcpy(&v, p, sizeof(v));
      return json_boolean(v);
    }
    case PROTOBUF_C_TYPE_ENUM: {
      const ProtobufCEnumValue *ev;
      int32_t v;
      memcpy(&v, p, sizeof(v));
      ev = protobuf_c_enum_descriptor_get_value(f->descriptor, v);
      return ev != NULL ? json_string(ev->name) : json_integer(v);
    }
    case PROTOBUF_C_TYPE_STRING: {
      const char *s;
      memcpy(&s, p, sizeof(s));
      return string_to_json(s != NULL ? s : "");
    }
    case PROTOBUF_C_TYPE_BYTES:
      return bytes_to_json(p);
    case PROTOBUF_C_TYPE_MESSAGE: {
      const ProtobufCMessage *m;
      memcpy(&m, p, sizeof(m));
      json_t *j;
      ProtobufCMessage *dflt;
      if (m != NULL) return msg_to_json(m);
      /* An unset message value of a map entry (text format `{ key: "k" }`)
       * prints as the default message, every primitive field shown, as a
       * C++ map holds a default-constructed value (and as the entry reads
       * back from JSON: found by fuzzing, test/fuzz/fuzz_config.c). */
      dflt = ifd__proto_new(f->descriptor);
      if (dflt == NULL) return NULL;
      j = msg_to_json(dflt);
      protobuf_c_message_free_unpacked(dflt, NULL);
      return j;
    }
  }
  return NULL;
}

/* Writes the object key for the map key field `kf` stored at `p`. */
static json_t *map_key_text(const ProtobufCFieldDescriptor *kf, const void *p) {
  json_t *k, *s;
  if (kf->type == PROTOBUF_C_TYPE_BOOL) {
    protobuf_c_boolean b;
    memcpy(&b, p, sizeof(b));
    return json_string(b ? "true" : "false");
  }
  k = value_to_json(kf, p);
  if (k == NULL || json_is_string(k)) return k;
  s = json_sprintf("%" JSON_INTEGER_FORMAT, json_integer_value(k));
  json_decref(k);
  return s;
}

static json_t *map_to_json(const ProtobufCFieldDescriptor *f,
                           ProtobufCMessage *const *entries, size_t n) {
  const ProtobufCMessageDescriptor *ed = f->descriptor;
  const ProtobufCFieldDescriptor *kf = &ed->fields[0], *vf = &ed->fields[1];
  json_t *obj = json_object();
  size_t i;

  if (obj == NULL) return NULL;
  for (i = 0; i < n; i++) {
    const char *e = (const char *)entries[i];
    json_t *k, *v;
    if (e == NULL) continue;
    k = map_key_text(kf, e + kf->offset);
    v = k != NULL ? value_to_json(vf, e + vf->offset) : NULL;
    /* A key repeated in the entries keeps its last value, as a map would.
     * json_object_setn_new() takes `v` even when it fails. */
    if (v == NULL || json_object_setn_new(obj, json_string_value(k),
                                          json_string_length(k), v) != 0) {
      json_decref(k);
      json_decref(obj);
      return NULL;
    }
    json_decref(k);
  }
  return obj;
}

static json_t *repeated_to_json(const ProtobufCMessage *msg,
                                const ProtobufCFieldDescriptor *f) {
  const char *base = (const char *)msg;
  size_t n, i, size = ifd__proto_value_size(f->type);
  const char *arr;
  json_t *a;

  memcpy(&n, base + f->quantifier_offset, sizeof(n));
  memcpy(&arr, base + f->offset, sizeof(arr));
  if (arr == NULL) n = 0;
  if (ifd__proto_is_map(msg->descriptor, f))
    return map_to_json(f, (ProtobufCMessage *const *)(const void *)arr, n);
  a = json_array();
  if (a == NULL) return NULL;
  for (i = 0; i < n; i++) {
    if (json_array_append_new(a, value_to_json(f, arr + i * size)) != 0) {
      json_decref(a);
      return NULL;
    }
  }
  return a;
}

/*
 * Returns the index in d->fields of the field that prints after field `prev`
 * (the first one when `prev` is n_fields). protoc-c sorts `fields` by number
 * but lays the C struct out in declaration order (each oneof as one union after
 * the other members), and tritonserver prints in declaration order, so fields
 * print in order of their offset. Offsets tie only within a oneof; the field
 * index breaks the tie. A scan per field is quadratic, but over a few dozen
 * fields and with no allocation.
 */
static unsigned next_field(const ProtobufCMessageDescriptor *d, unsigned prev) {
  const ProtobufCFieldDescriptor *fs = d->fields;
  unsigned i, best = d->n_fields;
  for (i = 0; i < d->n_fields; i++) {
    if (prev < d->n_fields && (fs[i].offset < fs[prev].offset ||
                               (fs[i].offset == fs[prev].offset && i <= prev)))
      continue;
    if (best == d->n_fields || fs[i].offset < fs[best].offset ||
        (fs[i].offset == fs[best].offset && i < best))
      best = i;
  }
  return best;
}

static json_t *msg_to_json(const ProtobufCMessage *msg) {
  const ProtobufCMessageDescriptor *d = msg->descriptor;
  const char *base = (const char *)msg;
  json_t *obj = json_object();
  unsigned rank, i = d->n_fields;

  if (obj == NULL) return NULL;
  for (rank = 0; rank < d->n_fields; rank++) {
    const ProtobufCFieldDescriptor *f;
    i = next_field(d, i);
    f = &d->fields[i];
    int oneof = (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) != 0;
    const void *p = base + f->offset;
    json_t *v;

    if (oneof && *(const uint32_t *)(base + f->quantifier_offset) != f->id)
      continue;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      v = repeated_to_json(msg, f);
    } else {
      /* Fields with presence (has_ flag, pointer) print only when present. */
      if (f->type == PROTOBUF_C_TYPE_MESSAGE ||
          f->type == PROTOBUF_C_TYPE_STRING) {
        const void *ptr;
        memcpy(&ptr, p, sizeof(ptr));
        if (ptr == NULL && !(oneof && f->type == PROTOBUF_C_TYPE_MESSAGE))
          continue;
      } else if (!oneof && f->label == PROTOBUF_C_LABEL_OPTIONAL &&
                 !*(const protobuf_c_boolean *)(base + f->quantifier_offset)) {
        continue;
      }
      v = value_to_json(f, p);
    }
    if (json_object_set_new(obj, f->name, v) != 0) {
      json_decref(obj);
      return NULL;
    }
  }
  return obj;
}

json_t *ifd_pbjson_from_message(const ProtobufCMessage *msg) {
  if (msg == NULL) return NULL;
  return msg_to_json(msg);
}
