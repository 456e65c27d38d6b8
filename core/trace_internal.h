/*
 * core/trace_internal.h - what the trace module's two files share: the
 * growing JSON text that trace.c (settings, records, the writer thread) and
 * trace_text.c (escaping, tensor records) write into. Loop thread, like the
 * traces it holds.
 */
#ifndef IFD_CORE_TRACE_INTERNAL_H
#define IFD_CORE_TRACE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

/* A growing NUL-terminated text. Zeroed: empty. */
typedef struct ifd_trace_text {
  char *p; /* owned */
  size_t len, cap;
  int oom; /* an append failed: the text is incomplete, dropped */
} ifd_trace_text_t;

/** Makes room for `more` bytes and the NUL (sets oom when it cannot). */
void ifd__trace_text_reserve(ifd_trace_text_t *t, size_t more);
/** Appends n bytes of s / a C string / a printf'd string. */
void ifd__trace_text_add(ifd_trace_text_t *t, const char *s, size_t n);
void ifd__trace_text_puts(ifd_trace_text_t *t, const char *s);
void ifd__trace_text_printf(ifd_trace_text_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/** Appends a JSON string's content: quotes, backslashes, control and
 *  non-ASCII bytes escaped, so any bytes give valid JSON. */
void ifd__trace_text_escaped(ifd_trace_text_t *t, const char *s, size_t n);

/**
 * Appends a TENSOR_* record (`activity`: "TENSOR_QUEUE_INPUT", ...) of
 * trace `id`, preceded by a comma unless `t` is empty. Data in device
 * memory (mem_type IFD_MEM_GPU), FP16 and BF16 give empty data, as
 * Triton's does for the latter two.
 */
void ifd__trace_tensor_record(ifd_trace_text_t *t, uint64_t id,
                              const char *activity, const char *name,
                              ifd_dtype_t dt, const int64_t *shape,
                              uint32_t ndims, const void *data,
                              uint64_t byte_size, int32_t mem_type);

#endif
