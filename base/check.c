/*
 * base/check.c - what a broken invariant does (see check.h).
 */
#include "base/check.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"

_Noreturn void ifd_check_failed(const char *what, const char *file, int line) {
  /* Into the --log-file when there is one; stderr always gets it. */
  if (ifd_log_file()[0] != '\0')
    ifd_log_write(IFD_LOG_ERROR, file, line, "invariant failed: %s", what);
  fprintf(stderr, "inferd: invariant failed: %s (%s:%d)\n", what, file, line);
  fflush(NULL);
  abort();
}
