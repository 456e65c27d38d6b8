/*
 * base/error.c - error code names and formatted error messages.
 */
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>

static const struct {
  int cls;
  const char *text;
} errtab[] = {
#define IFD__ERR_TAB(name, cls, text) {cls, text},
    IFD_ERRNO_MAP(IFD__ERR_TAB)
#undef IFD__ERR_TAB
};

_Static_assert(sizeof(errtab) / sizeof(errtab[0]) == IFD__ERR_COUNT,
               "error table out of step with the map");
_Static_assert(-IFD_EOVERLOADED == IFD__ERR_COUNT,
               "IFD_E* constants out of step with the map");

const char *ifd_strerror(int code) {
  if (code == 0) return "success";
  if (code > 0 || -code > IFD__ERR_COUNT) return "unknown error";
  return errtab[-code - 1].text;
}

int ifd_error_class(int code) {
  if (code >= 0 || -code > IFD__ERR_COUNT) return 0;
  return errtab[-code - 1].cls;
}

int ifd_errf(ifd_errmsg_t *err, int code, const char *fmt, ...) {
  if (err != NULL) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->text, sizeof(err->text), fmt, ap);
    va_end(ap);
    err->code = code;
  }
  return code;
}
