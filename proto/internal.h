/*
 * proto/internal.h - what the files of proto/ share and nothing outside it
 * uses: the field-access helpers of proto/field.c, through which both parsers
 * (pbtext.c, pbjson.c) store values so they build messages the same way, the
 * union one field value is held in, and the nesting limit.
 */
#ifndef IFD_PROTO_INTERNAL_H
#define IFD_PROTO_INTERNAL_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* The deepest nesting of sub-messages either parser accepts. */
#define IFD__PROTO_MAX_DEPTH 64

/* One field value, as it is stored in a message or array. */
typedef union ifd__proto_value {
  int32_t i32;
  uint32_t u32;
  int64_t i64;
  uint64_t u64;
  float f;
  double d;
  protobuf_c_boolean b;
  char *s; /* owned by whoever holds the value */
  ProtobufCBinaryData bd;
  ProtobufCMessage *m; /* owned by whoever holds the value */
} ifd__proto_value_t;

/** The storage of the field at byte `offset` of `msg`. */
static inline void *ifd__proto_field_at(ProtobufCMessage *msg,
                                        unsigned offset) {
  return (char *)msg + offset;
}

/** The size one value of `type` takes in a message or array. */
size_t ifd__proto_value_size(ProtobufCType type);

/** The .proto spelling of `type`, for error messages. */
const char *ifd__proto_type_name(ProtobufCType type);

/** A new message of type `desc` holding its defaults (caller owns), or NULL. */
ProtobufCMessage *ifd__proto_new(const ProtobufCMessageDescriptor *desc);

/** Frees what a value of `type` at `val` owns (string, bytes, sub-message). */
void ifd__proto_value_free(ProtobufCType type, void *val);

/**
 * Stores the value at `val` into the singular field `f`, taking ownership of
 * any string, bytes or message inside it. The old value is freed; a has_ flag
 * is raised; for a oneof member the previously selected member is freed and
 * the case is switched to `f`.
 */
void ifd__proto_set(ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f,
                    const void *val);

/**
 * Appends the value at `val` to the repeated field `f`. Returns 0, taking
 * ownership of what the value holds, or IFD_ENOMEM, leaving it to the caller.
 */
int ifd__proto_append(ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f,
                      const void *val);

/**
 * Sets *out to the message that a value of message field `f` fills (owned by
 * `msg`): for a repeated field a new element appended to it; for a singular
 * field the existing sub-message (values merge into it), or a new one.
 * Returns 0 or IFD_ENOMEM.
 */
int ifd__proto_submsg(ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f,
                      ProtobufCMessage **out);

/** Whether `f` (a field of `parent`) is a map field (a repeated NameEntry
 *  message with key = 1 and value = 2, as protoc generates for map<K, V>). */
int ifd__proto_is_map(const ProtobufCMessageDescriptor *parent,
                      const ProtobufCFieldDescriptor *f);

/**
 * Converts (-1)^neg * mag to a value of integer-like `type` (enum as int32,
 * bool as 0/1) at `out`. Returns 0, or -1 when it is out of range.
 */
int ifd__proto_int_from_mag(ProtobufCType type, int neg, uint64_t mag,
                            void *out);

/**
 * The first required sub-message or string missing in `msg` or below it,
 * with *where (OUT) the message type that declares it, or NULL when none is.
 */
const ProtobufCFieldDescriptor *ifd__proto_missing_required(
    const ProtobufCMessage *msg, const ProtobufCMessageDescriptor **where);

/**
 * Parses the digits of an unsigned integer literal: 0x/0X hex, octal after a
 * leading 0, else decimal. Returns 0 with *out set, -1 when the text is not an
 * integer literal, -2 when it does not fit in 64 bits.
 */
int ifd__proto_parse_uint(const char *p, size_t n, uint64_t *out);

#endif
