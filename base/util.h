/*
 * base/util.h - small macros every module uses.
 */
#ifndef IFD_BASE_UTIL_H
#define IFD_BASE_UTIL_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/** The struct of type `type` that embeds `ptr` as its member `member`. */
#define ifd_container_of(ptr, type, member) \
  ((type *)((char *)(ptr)-offsetof(type, member)))

#define IFD_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/** strdup that passes NULL through (NULL also on ENOMEM). */
static inline char *ifd_strdup_null(const char *s) {
  return s != NULL ? strdup(s) : NULL;
}

#endif
