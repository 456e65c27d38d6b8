/*
 * core/trace_text.c - the trace's JSON text: a growing buffer that drops
 * its text when an append runs out of memory, JSON string escaping, and the
 * TENSOR_* records of a traced request's tensors, as Triton's trace file
 * writes them (core/trace_internal.h).
 */
#include "core/trace_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/shm.h"

/* ---- growing text ------------------------------------------------------ */

void ifd__trace_text_reserve(ifd_trace_text_t *t, size_t more) {
  size_t cap;
  char *np;
  if (t->oom || t->len + more + 1 <= t->cap) return;
  cap = t->cap ? t->cap : 256;
  while (cap < t->len + more + 1) cap *= 2;
  np = realloc(t->p, cap);
  if (np == NULL) {
    t->oom = 1;
    return;
  }
  t->p = np;
  t->cap = cap;
}

void ifd__trace_text_add(ifd_trace_text_t *t, const char *s, size_t n) {
  ifd__trace_text_reserve(t, n);
  if (t->oom) return;
  memcpy(t->p + t->len, s, n);
  t->len += n;
  t->p[t->len] = '\0';
}

void ifd__trace_text_puts(ifd_trace_text_t *t, const char *s) {
  ifd__trace_text_add(t, s, strlen(s));
}

void ifd__trace_text_printf(ifd_trace_text_t *t, const char *fmt, ...) {
  char small[128];
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(small, sizeof(small), fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof(small)) {
    ifd__trace_text_add(t, small, (size_t)n);
    return;
  }
  ifd__trace_text_reserve(t, (size_t)n);
  if (t->oom) return;
  va_start(ap, fmt);
  vsnprintf(t->p + t->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  t->len += (size_t)n;
}

/* A JSON string's content: quotes, backslashes, control and non-ASCII
 * bytes escaped, so any bytes give valid JSON. */
void ifd__trace_text_escaped(ifd_trace_text_t *t, const char *s, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', (char)c};
      ifd__trace_text_add(t, e, 2);
    } else if (c < 0x20 || c >= 0x7f) {
      ifd__trace_text_printf(t, "\\u%04x", c);
    } else {
      ifd__trace_text_add(t, (const char *)&s[i], 1);
    }
  }
}

/* One element of a tensor as Triton's trace writes it. */
static void element(ifd_trace_text_t *t, ifd_dtype_t dt,
                    const unsigned char *p) {
  union {
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    int8_t i8;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    float f;
    double d;
  } v;
  switch (dt) {
    case IFD_TYPE_BOOL:
      ifd__trace_text_puts(t, p[0] ? "1" : "0");
      break;
    case IFD_TYPE_UINT8:
      ifd__trace_text_printf(t, "%u", (unsigned)p[0]);
      break;
    case IFD_TYPE_UINT16:
      memcpy(&v.u16, p, 2);
      ifd__trace_text_printf(t, "%u", (unsigned)v.u16);
      break;
    case IFD_TYPE_UINT32:
      memcpy(&v.u32, p, 4);
      ifd__trace_text_printf(t, "%" PRIu32, v.u32);
      break;
    case IFD_TYPE_UINT64:
      memcpy(&v.u64, p, 8);
      ifd__trace_text_printf(t, "%" PRIu64, v.u64);
      break;
    case IFD_TYPE_INT8:
      memcpy(&v.i8, p, 1);
      ifd__trace_text_printf(t, "%d", (int)v.i8);
      break;
    case IFD_TYPE_INT16:
      memcpy(&v.i16, p, 2);
      ifd__trace_text_printf(t, "%d", (int)v.i16);
      break;
    case IFD_TYPE_INT32:
      memcpy(&v.i32, p, 4);
      ifd__trace_text_printf(t, "%" PRId32, v.i32);
      break;
    case IFD_TYPE_INT64:
      memcpy(&v.i64, p, 8);
      ifd__trace_text_printf(t, "%" PRId64, v.i64);
      break;
    case IFD_TYPE_FP32:
      memcpy(&v.f, p, 4);
      ifd__trace_text_printf(t, "%g", (double)v.f);
      break;
    case IFD_TYPE_FP64:
      memcpy(&v.d, p, 8);
      ifd__trace_text_printf(t, "%g", v.d);
      break;
    default:
      break;
  }
}

static size_t dtype_size(ifd_dtype_t dt) {
  switch (dt) {
    case IFD_TYPE_BOOL:
    case IFD_TYPE_UINT8:
    case IFD_TYPE_INT8:
      return 1;
    case IFD_TYPE_UINT16:
    case IFD_TYPE_INT16:
    case IFD_TYPE_FP16:
    case IFD_TYPE_BF16:
      return 2;
    case IFD_TYPE_UINT32:
    case IFD_TYPE_INT32:
    case IFD_TYPE_FP32:
      return 4;
    case IFD_TYPE_UINT64:
    case IFD_TYPE_INT64:
    case IFD_TYPE_FP64:
      return 8;
    default:
      return 0;
  }
}

/* A TENSOR_* record. Data in device memory, FP16 and BF16 give empty data,
 * as Triton's does for the latter two. */
void ifd__trace_tensor_record(ifd_trace_text_t *t, uint64_t id,
                              const char *activity, const char *name,
                              ifd_dtype_t dt, const int64_t *shape,
                              uint32_t ndims, const void *data,
                              uint64_t byte_size, int32_t mem_type) {
  const unsigned char *p = data;
  uint64_t count = 1, e, off = 0;
  size_t es = dtype_size(dt);
  uint32_t i;

  if (t->len != 0) ifd__trace_text_puts(t, ",");
  ifd__trace_text_printf(
      t, "{\"id\":%" PRIu64 ",\"activity\":\"%s\",\"tensor\":{", id, activity);
  ifd__trace_text_puts(t, "\"name\":\"");
  ifd__trace_text_escaped(t, name, strlen(name));
  ifd__trace_text_puts(t, "\",\"data\":\"");
  for (i = 0; i < ndims; i++) count *= shape[i] > 0 ? (uint64_t)shape[i] : 0;
  if (p != NULL && mem_type != IFD_MEM_GPU) {
    for (e = 0; e < count; e++) {
      if (dt == IFD_TYPE_BYTES) {
        uint32_t len;
        if (off + 4 > byte_size) break;
        memcpy(&len, p + off, 4);
        off += 4;
        if (off + len > byte_size) break;
        ifd__trace_text_puts(t, "\\\"");
        ifd__trace_text_escaped(t, (const char *)p + off, len);
        ifd__trace_text_puts(t, "\\\"");
        off += len;
      } else {
        if (es == 0 || dt == IFD_TYPE_FP16 || dt == IFD_TYPE_BF16 ||
            (e + 1) * es > byte_size)
          break;
        element(t, dt, p + e * es);
      }
      if (e + 1 < count) ifd__trace_text_puts(t, ",");
    }
  }
  ifd__trace_text_puts(t, "\",\"shape\":\"");
  for (i = 0; i < ndims; i++)
    ifd__trace_text_printf(t, "%s%" PRId64, i ? "," : "", shape[i]);
  ifd__trace_text_printf(t, "\",\"dtype\":\"%s\"}}", ifd_dtype_name(dt));
}
