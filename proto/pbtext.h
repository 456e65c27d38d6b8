/*
 * proto/pbtext.h - protobuf text format (config.pbtxt) and JSON over protobuf-c
 * descriptors.
 *
 * Both directions are generic: they walk ProtobufCMessageDescriptor tables, so
 * any message compiled by protoc-c works, ModelConfig included. Messages built
 * here are laid out exactly as protobuf_c_message_unpack() would build them
 * (malloc'd strings, repeated arrays and sub-messages, n_* counts, has_* flags,
 * oneof cases), so the caller frees them with
 * protobuf_c_message_free_unpacked(msg, NULL).
 */
#ifndef IFD_PROTO_PBTEXT_H
#define IFD_PROTO_PBTEXT_H

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

#include "base/error.h"

/**
 * Parses protobuf text format `text` (`len` bytes, need not be NUL-terminated)
 * into a new message of type `desc`.
 *
 * Accepts what protobuf's TextFormat parser accepts in config.pbtxt files:
 * `field: value` and `field { ... }` / `field: { ... }` / `field < ... >`,
 * repeated fields as repeated entries and as `[a, b]` lists (also lists of
 * messages), enums by name (or number), map fields as repeated
 * `{ key: .. value: .. }` entries, `#` comments, single- and double-quoted
 * strings with C escapes (adjacent strings concatenate), optional `,` or `;`
 * separators, signed/hex/64-bit integers, floats incl.
 * `inf`/`nan`/`1e5`/`1.5f`, booleans true/false/True/False/t/f/1/0.
 *
 * A non-repeated message field given twice merges into one sub-message; any
 * other non-repeated field given twice keeps the last value; a oneof member
 * replaces the member set before it. Messages nest at most 64 deep. Strings
 * must be UTF-8 without NUL (bytes fields take anything). Floats too large for
 * a float become infinite. Required sub-messages and strings (proto2) must be
 * present; required scalars cannot be checked, as protobuf-c has no presence
 * bit for them.
 *
 * `filename` is used only in error messages, which name file, line and column
 * (1-based, columns counted in bytes): "FILE:LINE:COL: message".
 *
 * Returns 0 and sets *out (owned by the caller), or IFD_EPARSE / IFD_ENOMEM
 * with *out = NULL and the message in `err`.
 */
int ifd_pbtext_parse(const ProtobufCMessageDescriptor *desc, const char *text,
                     size_t len, const char *filename, ProtobufCMessage **out,
                     ifd_errmsg_t *err);

/**
 * Converts a message to JSON the way tritonserver prints a model config:
 * proto field names (not camelCase), enums as their names, every scalar,
 * string and repeated field printed even when default/empty, sub-messages
 * printed only when set (non-NULL), oneof members only when selected, map
 * fields as JSON objects, 64-bit integers as JSON numbers, bytes as base64.
 * Fields with explicit presence (a has_ flag) print only when present. Fields
 * print in declaration order, except that oneof members come last (protoc-c
 * keeps no other trace of declaration order). uint64 values above INT64_MAX,
 * which no json_int_t holds, print as decimal strings; NaN and infinities as
 * "NaN", "Infinity", "-Infinity"; ill-formed UTF-8 in strings as U+FFFD.
 *
 * Returns a new reference, or NULL on allocation failure.
 */
json_t *ifd_pbjson_from_message(const ProtobufCMessage *msg);

/**
 * Builds a new message of type `desc` from JSON (the inverse of
 * ifd_pbjson_from_message): accepts proto field names and lowerCamelCase JSON
 * names, enums by name or number, 64-bit integers as numbers or strings,
 * maps as objects, `null` as "not set". Unknown fields are an error, and so
 * are a field given twice (by both names), two members of one oneof, floats
 * out of float range and booleans other than true/false. Floats also accept
 * "NaN", "Infinity", "-Infinity" and decimal strings; bytes accept standard
 * or URL-safe base64, padded or not.
 *
 * Returns 0 and sets *out (owned by the caller; free with
 * protobuf_c_message_free_unpacked), or IFD_EPARSE / IFD_ENOMEM with a message
 * naming the JSON path of the offending field.
 */
int ifd_pbjson_to_message(const ProtobufCMessageDescriptor *desc,
                          const json_t *json, ProtobufCMessage **out,
                          ifd_errmsg_t *err);

#endif
