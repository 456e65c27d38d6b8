/*
 * base/jsonw.h - a growable text buffer with head room, and the JSON text
 * writers every JSON answer is written with (the HTTP front end's bodies,
 * core's metadata and statistics renderers).
 *
 * Text is written directly rather than built as a jansson tree: an output
 * tensor of a million floats would otherwise become a million json_t
 * objects. Numbers are printed in their shortest form that reads back to the
 * same value, so a float round-trips exactly.
 */
#ifndef IFD_BASE_JSONW_H
#define IFD_BASE_JSONW_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes kept free in front of a response body for its status line and
 * headers, so head and JSON go out as one contiguous block. */
#define IFD_HTTP_HEADROOM 256

/**
 * A growable byte buffer. Appends never fail one by one: an allocation
 * failure sets `oom` and later appends do nothing, so a writer checks once at
 * the end. `start` moves back into the head room when a header is prepended.
 */
typedef struct ifd_hbuf {
  char *data;   /* owned (malloc'd) */
  size_t start; /* first byte of content */
  size_t len;   /* end of content (offset from data) */
  size_t cap;
  int oom;
} ifd_hbuf_t;

void ifd_hbuf_init(ifd_hbuf_t *b, size_t headroom);
void ifd_hbuf_free(ifd_hbuf_t *b);
/** Makes room for `n` more bytes; returns 0 or IFD_ENOMEM (sets oom). */
int ifd_hbuf_reserve(ifd_hbuf_t *b, size_t n);
void ifd_hbuf_put(ifd_hbuf_t *b, const void *p, size_t n);
void ifd_hbuf_puts(ifd_hbuf_t *b, const char *s);
void ifd_hbuf_printf(ifd_hbuf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/** Prepends `n` bytes into the head room; IFD_ENOMEM when it is too small. */
int ifd_hbuf_prepend(ifd_hbuf_t *b, const char *p, size_t n);
/** Content length (without the unused head room). */
static inline size_t ifd_hbuf_size(const ifd_hbuf_t *b) {
  return b->len - b->start;
}

/** Appends `s` (n bytes) as a quoted, escaped JSON string. Bytes >= 0x80
 *  pass through untouched (tensor strings are the client's bytes). */
void ifd_json_str(ifd_hbuf_t *b, const char *s, size_t n);
/** Appends text `s` (n bytes) as a quoted, escaped JSON string that is
 *  always well-formed UTF-8: each byte of an ill-formed sequence becomes
 *  U+FFFD. For names and messages (tensor strings use ifd_json_str). */
void ifd_json_text(ifd_hbuf_t *b, const char *s, size_t n);
/** Appends a float so that it reads back as the same float ("1.0", "0.1"). */
void ifd_json_f32(ifd_hbuf_t *b, float v);
/** Appends a double so that it reads back as the same double. */
void ifd_json_f64(ifd_hbuf_t *b, double v);
/** Appends a jansson value as compact JSON (insertion order kept). */
void ifd_json_dump(ifd_hbuf_t *b, const json_t *j);

#endif
