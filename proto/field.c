/*
 * proto/field.c - the field-access helpers both parsers build messages with
 * (pbtext.c for text format, pbjson.c for JSON).
 *
 * Storing a scalar, appending to a repeated field, finding or creating a
 * sub-message, range-checking integers, recognising map fields, finding a
 * missing required field. Each store leaves the message exactly as
 * protobuf_c_message_unpack() would have built it, so a parser that fails
 * half-way frees the partial message with protobuf_c_message_free_unpacked().
 * The contracts are in proto/internal.h.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/internal.h"

/* Returns the size one value of `type` takes in a message or array. */
size_t ifd__proto_value_size(ProtobufCType type) {
  switch (type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_ENUM:
      return 4;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
      return 8;
    case PROTOBUF_C_TYPE_FLOAT:
      return sizeof(float);
    case PROTOBUF_C_TYPE_DOUBLE:
      return sizeof(double);
    case PROTOBUF_C_TYPE_BOOL:
      return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
      return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES:
      return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE:
      return sizeof(ProtobufCMessage *);
  }
  return 0;
}

/* Returns the .proto spelling of `type`, for error messages. */
const char *ifd__proto_type_name(ProtobufCType type) {
  switch (type) {
    case PROTOBUF_C_TYPE_INT32:
      return "int32";
    case PROTOBUF_C_TYPE_SINT32:
      return "sint32";
    case PROTOBUF_C_TYPE_SFIXED32:
      return "sfixed32";
    case PROTOBUF_C_TYPE_INT64:
      return "int64";
    case PROTOBUF_C_TYPE_SINT64:
      return "sint64";
    case PROTOBUF_C_TYPE_SFIXED64:
      return "sfixed64";
    case PROTOBUF_C_TYPE_UINT32:
      return "uint32";
    case PROTOBUF_C_TYPE_FIXED32:
      return "fixed32";
    case PROTOBUF_C_TYPE_UINT64:
      return "uint64";
    case PROTOBUF_C_TYPE_FIXED64:
      return "fixed64";
    case PROTOBUF_C_TYPE_FLOAT:
      return "float";
    case PROTOBUF_C_TYPE_DOUBLE:
      return "double";
    case PROTOBUF_C_TYPE_BOOL:
      return "bool";
    case PROTOBUF_C_TYPE_ENUM:
      return "enum";
    case PROTOBUF_C_TYPE_STRING:
      return "string";
    case PROTOBUF_C_TYPE_BYTES:
      return "bytes";
    case PROTOBUF_C_TYPE_MESSAGE:
      return "message";
  }
  return "unknown";
}

/* Returns a new message of type `desc` holding its defaults, or NULL. */
ProtobufCMessage *ifd__proto_new(const ProtobufCMessageDescriptor *desc) {
  ProtobufCMessage *msg = malloc(desc->sizeof_message);
  if (msg == NULL) return NULL;
  protobuf_c_message_init(desc, msg);
  return msg;
}

/* Frees what a value of `type` at `val` owns (string, bytes, sub-message). */
void ifd__proto_value_free(ProtobufCType type, void *val) {
  switch (type) {
    case PROTOBUF_C_TYPE_STRING: {
      char *s;
      memcpy(&s, val, sizeof(s));
      if (s != protobuf_c_empty_string) free(s);
      break;
    }
    case PROTOBUF_C_TYPE_BYTES: {
      ProtobufCBinaryData bd;
      memcpy(&bd, val, sizeof(bd));
      free(bd.data);
      break;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
      ProtobufCMessage *m;
      memcpy(&m, val, sizeof(m));
      protobuf_c_message_free_unpacked(m, NULL);
      break;
    }
    default:
      break;
  }
}

/*
 * Frees what the singular field `f` owns and zeroes it. Strings and bytes
 * that still point at their descriptor default (or at protobuf_c_empty_string)
 * are static and left alone, exactly as protobuf_c_message_free_unpacked()
 * would leave them.
 */
static void clear_singular(ProtobufCMessage *msg,
                           const ProtobufCFieldDescriptor *f) {
  void *p = ifd__proto_field_at(msg, f->offset);
  switch (f->type) {
    case PROTOBUF_C_TYPE_STRING: {
      char *s;
      memcpy(&s, p, sizeof(s));
      if (s != NULL && s != protobuf_c_empty_string &&
          s != (const char *)f->default_value)
        free(s);
      break;
    }
    case PROTOBUF_C_TYPE_BYTES: {
      ProtobufCBinaryData bd;
      const ProtobufCBinaryData *def = f->default_value;
      memcpy(&bd, p, sizeof(bd));
      if (bd.data != NULL && (def == NULL || def->data != bd.data))
        free(bd.data);
      break;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
      ProtobufCMessage *m;
      memcpy(&m, p, sizeof(m));
      protobuf_c_message_free_unpacked(m, NULL);
      break;
    }
    default:
      break;
  }
  memset(p, 0, ifd__proto_value_size(f->type));
}

/*
 * Stores the value at `val` into the singular field `f`, taking ownership of
 * any string, bytes or message inside it. The old value is freed; a has_ flag
 * is raised; for a oneof member the previously selected member is freed and
 * the case is switched to `f`.
 */
void ifd__proto_set(ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f,
                    const void *val) {
  if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
    uint32_t *oneof_case = ifd__proto_field_at(msg, f->quantifier_offset);
    if (*oneof_case != 0) {
      const ProtobufCFieldDescriptor *old =
          protobuf_c_message_descriptor_get_field(msg->descriptor, *oneof_case);
      if (old != NULL) clear_singular(msg, old);
    }
    *oneof_case = f->id;
  } else {
    clear_singular(msg, f);
    if (f->label == PROTOBUF_C_LABEL_OPTIONAL &&
        f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE)
      *(protobuf_c_boolean *)ifd__proto_field_at(msg, f->quantifier_offset) = 1;
  }
  memcpy(ifd__proto_field_at(msg, f->offset), val,
         ifd__proto_value_size(f->type));
}

/*
 * Arrays are grown geometrically. Their capacity is never stored: it is a pure
 * function of the count, which works because every array these parsers touch
 * was created by them.
 */
static size_t capacity_for(size_t n) {
  size_t cap = 4;
  if (n == 0) return 0;
  while (cap < n) cap *= 2;
  return cap;
}

/*
 * Appends the value at `val` to the repeated field `f`. Returns 0, taking
 * ownership of what the value holds, or IFD_ENOMEM, leaving it to the caller.
 */
int ifd__proto_append(ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f,
                      const void *val) {
  size_t *n = ifd__proto_field_at(msg, f->quantifier_offset);
  char **arr = ifd__proto_field_at(msg, f->offset);
  size_t size = ifd__proto_value_size(f->type);

  if (*n == capacity_for(*n)) {
    size_t cap = *n == 0 ? 4 : *n * 2;
    char *grown;
    if (cap < *n || cap > SIZE_MAX / size) return IFD_ENOMEM;
    grown = realloc(*arr, cap * size);
    if (grown == NULL) return IFD_ENOMEM;
    *arr = grown;
  }
  memcpy(*arr + *n * size, val, size);
  (*n)++;
  return 0;
}

/*
 * Sets *out to the message that a value of message field `f` fills: for a
 * repeated field a new element appended to it; for a singular field the
 * existing sub-message (values merge into it, as text format does), or a new
 * one. Returns 0 or IFD_ENOMEM.
 */
int ifd__proto_submsg(ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f,
                      ProtobufCMessage **out) {
  ProtobufCMessage *sub;

  if (f->label != PROTOBUF_C_LABEL_REPEATED) {
    int selected =
        !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) ||
        *(uint32_t *)ifd__proto_field_at(msg, f->quantifier_offset) == f->id;
    ProtobufCMessage *cur;
    memcpy(&cur, ifd__proto_field_at(msg, f->offset), sizeof(cur));
    if (selected && cur != NULL) {
      *out = cur;
      return 0;
    }
  }
  sub = ifd__proto_new(f->descriptor);
  if (sub == NULL) return IFD_ENOMEM;
  if (f->label == PROTOBUF_C_LABEL_REPEATED) {
    if (ifd__proto_append(msg, f, &sub) != 0) {
      protobuf_c_message_free_unpacked(sub, NULL);
      return IFD_ENOMEM;
    }
  } else {
    ifd__proto_set(msg, f, &sub);
  }
  *out = sub;
  return 0;
}

/*
 * Returns whether `f` (a field of `parent`) is a map field. protobuf-c keeps
 * no map_entry option, so this recognises what protoc generates for
 * map<K, V> name: a repeated message nested in `parent`, called NameEntry,
 * whose only fields are key = 1 and value = 2.
 */
int ifd__proto_is_map(const ProtobufCMessageDescriptor *parent,
                      const ProtobufCFieldDescriptor *f) {
  const ProtobufCMessageDescriptor *e = f->descriptor;
  size_t plen, elen;

  if (f->label != PROTOBUF_C_LABEL_REPEATED ||
      f->type != PROTOBUF_C_TYPE_MESSAGE || e == NULL || e->n_fields != 2)
    return 0;
  if (e->fields[0].id != 1 || strcmp(e->fields[0].name, "key") != 0 ||
      e->fields[1].id != 2 || strcmp(e->fields[1].name, "value") != 0)
    return 0;
  plen = strlen(parent->name);
  elen = strlen(e->name);
  return elen > plen + 6 && strncmp(e->name, parent->name, plen) == 0 &&
         e->name[plen] == '.' && strcmp(e->name + elen - 5, "Entry") == 0;
}

/*
 * Converts the integer (-1)^neg * mag to a value of integer-like `type`
 * (the int, uint, sint, fixed, sfixed widths, enum as int32, bool as 0/1) and
 * stores it at `out`. Returns 0, or -1 when it is out of range for the type.
 */
int ifd__proto_int_from_mag(ProtobufCType type, int neg, uint64_t mag,
                            void *out) {
  if (mag == 0) neg = 0;
  switch (type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_ENUM: {
      int32_t v;
      if (neg ? mag > (uint64_t)INT32_MAX + 1 : mag > INT32_MAX) return -1;
      v = neg ? (int32_t)(-(int64_t)mag) : (int32_t)mag;
      memcpy(out, &v, sizeof(v));
      return 0;
    }
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: {
      uint32_t v;
      if (neg || mag > UINT32_MAX) return -1;
      v = (uint32_t)mag;
      memcpy(out, &v, sizeof(v));
      return 0;
    }
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: {
      int64_t v;
      if (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > INT64_MAX) return -1;
      if (!neg)
        v = (int64_t)mag;
      else if (mag == (uint64_t)INT64_MAX + 1)
        v = INT64_MIN;
      else
        v = -(int64_t)mag;
      memcpy(out, &v, sizeof(v));
      return 0;
    }
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
      if (neg) return -1;
      memcpy(out, &mag, sizeof(mag));
      return 0;
    case PROTOBUF_C_TYPE_BOOL: {
      protobuf_c_boolean v = mag != 0;
      if (neg || mag > 1) return -1;
      memcpy(out, &v, sizeof(v));
      return 0;
    }
    default:
      return -1;
  }
}

/*
 * Returns the first required sub-message or string that is missing in `msg`
 * or below it, with *where set to the message type that declares it, or NULL
 * when none is. (Required scalars always hold a value in protobuf-c, so their
 * absence cannot be seen here.)
 */
const ProtobufCFieldDescriptor *ifd__proto_missing_required(
    const ProtobufCMessage *msg, const ProtobufCMessageDescriptor **where) {
  const ProtobufCMessageDescriptor *d = msg->descriptor;
  const char *base = (const char *)msg;
  unsigned i;

  for (i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    const ProtobufCFieldDescriptor *missing;
    if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
        *(const uint32_t *)(base + f->quantifier_offset) != f->id)
      continue;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t n, j;
      ProtobufCMessage *const *subs;
      if (f->type != PROTOBUF_C_TYPE_MESSAGE) continue;
      memcpy(&n, base + f->quantifier_offset, sizeof(n));
      memcpy(&subs, base + f->offset, sizeof(subs));
      for (j = 0; j < n; j++) {
        if (subs[j] == NULL) continue;
        missing = ifd__proto_missing_required(subs[j], where);
        if (missing != NULL) return missing;
      }
    } else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
      const ProtobufCMessage *sub;
      memcpy(&sub, base + f->offset, sizeof(sub));
      if (sub != NULL) {
        missing = ifd__proto_missing_required(sub, where);
        if (missing != NULL) return missing;
      } else if (f->label == PROTOBUF_C_LABEL_REQUIRED) {
        *where = d;
        return f;
      }
    } else if (f->type == PROTOBUF_C_TYPE_STRING &&
               f->label == PROTOBUF_C_LABEL_REQUIRED) {
      const char *s;
      memcpy(&s, base + f->offset, sizeof(s));
      if (s == NULL) {
        *where = d;
        return f;
      }
    }
  }
  return NULL;
}

/*
 * Parses the digits of an unsigned integer literal: 0x/0X hex, octal after a
 * leading 0, else decimal. Returns 0 with *out set, -1 when the text is not an
 * integer literal, -2 when it does not fit in 64 bits.
 */
int ifd__proto_parse_uint(const char *p, size_t n, uint64_t *out) {
  unsigned base = 10;
  int overflow = 0;
  uint64_t v = 0;
  size_t i = 0;

  if (n >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
    base = 16;
    i = 2;
  } else if (n >= 2 && p[0] == '0') {
    base = 8;
    i = 1;
  }
  if (i >= n) return -1;
  for (; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    unsigned d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return -1;
    if (d >= base) return -1;
    if (v > (UINT64_MAX - d) / base) overflow = 1;
    v = v * base + d;
  }
  if (overflow) return -2;
  *out = v;
  return 0;
}
