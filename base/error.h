/*
 * base/error.h - inferd's error codes.
 *
 * Every function that can fail returns 0 or a negative IFD_E* code. The codes
 * come from one X-macro so that the enum, ifd_strerror() and the mapping to the
 * Triton error classes cannot drift apart. Tables from these codes to HTTP and
 * gRPC status live in frontend/ only. A detailed, human-readable message
 * travels beside the code in an ifd_errmsg_t filled by the function that
 * failed.
 */
#ifndef IFD_BASE_ERROR_H
#define IFD_BASE_ERROR_H

#include <stddef.h>

/* X(name, Triton error class, text). The Triton class is the
 * TRITONSERVER_Error_Code value that the ABI edge reports for this code. */
#define IFD_ERRNO_MAP(X)             \
  X(UNKNOWN, 0, "unknown error")     \
  X(INTERNAL, 1, "internal error")   \
  X(NOTFOUND, 2, "not found")        \
  X(INVAL, 3, "invalid argument")    \
  X(UNAVAIL, 4, "unavailable")       \
  X(UNSUPPORTED, 5, "unsupported")   \
  X(EXISTS, 6, "already exists")     \
  X(CANCELLED, 7, "cancelled")       \
  X(NOMEM, 1, "out of memory")       \
  X(IO, 1, "i/o error")              \
  X(PARSE, 3, "parse error")         \
  X(TOOBIG, 3, "too large")          \
  X(TIMEOUT, 4, "deadline exceeded") \
  X(OVERLOADED, 4, "overloaded")

enum {
#define IFD__ERR_ENUM(name, cls, text) IFD__E_##name,
  IFD_ERRNO_MAP(IFD__ERR_ENUM) IFD__ERR_COUNT
#undef IFD__ERR_ENUM
};

#define IFD_OK 0

/* IFD_EINVAL etc. are negative: -(position in the map + 1). */
#define IFD_EUNKNOWN (-1)
#define IFD_EINTERNAL (-2)
#define IFD_ENOTFOUND (-3)
#define IFD_EINVAL (-4)
#define IFD_EUNAVAIL (-5)
#define IFD_EUNSUPPORTED (-6)
#define IFD_EEXISTS (-7)
#define IFD_ECANCELLED (-8)
#define IFD_ENOMEM (-9)
#define IFD_EIO (-10)
#define IFD_EPARSE (-11)
#define IFD_ETOOBIG (-12)
#define IFD_ETIMEOUT (-13)
/* Refused for load, not for a fault: a model's queue is full, or the
 * server's in-flight cap is reached. Triton's UNAVAILABLE by default; frontend/
 * may answer it 429 / RESOURCE_EXHAUSTED (--overload-status). */
#define IFD_EOVERLOADED (-14)

/** Returns a static string describing `code` (0 or a negative IFD_E* code). */
const char *ifd_strerror(int code);

/** Returns the TRITONSERVER_Error_Code class (0..7) of a negative IFD_E* code.
 */
int ifd_error_class(int code);

/** A detailed error message, filled by the function that failed. */
typedef struct ifd_errmsg {
  int code;        /* the negative IFD_E* code, 0 when no error was set */
  char text[1024]; /* NUL-terminated message; empty when no error was set */
} ifd_errmsg_t;

/**
 * Formats a message into `err` (which may be NULL) and returns `code`, so a
 * failing function can `return ifd_errf(err, IFD_EINVAL, "...", ...)`.
 */
int ifd_errf(ifd_errmsg_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** Resets `err` to "no error". */
static inline void ifd_errclear(ifd_errmsg_t *err) {
  err->code = 0;
  err->text[0] = '\0';
}

#endif
