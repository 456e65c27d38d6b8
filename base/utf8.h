/*
 * base/utf8.h - well-formed UTF-8 for the text the server sends out.
 *
 * Names and messages that core hands out may hold any bytes (a model folder
 * name is whatever the file system allows), but a JSON string and a proto3
 * string field must be UTF-8: clients refuse the whole body otherwise. The
 * front ends pass such text through here; each byte of an ill-formed
 * sequence becomes U+FFFD.
 */
#ifndef IFD_BASE_UTF8_H
#define IFD_BASE_UTF8_H

#include <stddef.h>

/**
 * Length of the well-formed UTF-8 sequence at `s` (n > 0 bytes), or 0 when
 * it is ill-formed: a stray continuation byte, a truncated sequence, an
 * overlong form, a surrogate or a code point past U+10FFFF.
 */
size_t ifd_utf8_seq(const unsigned char *s, size_t n);

/** Non-zero when all `n` bytes of `s` are well-formed UTF-8. */
int ifd_utf8_valid(const char *s, size_t n);

/**
 * Writes `s` (n bytes) into `out` (room for 3 * n bytes) with each byte of
 * an ill-formed sequence replaced by U+FFFD. Returns the bytes written.
 */
size_t ifd_utf8_repair(const char *s, size_t n, char *out);

#endif
