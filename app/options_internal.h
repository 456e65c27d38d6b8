/*
 * app/options_internal.h - what app/options.c (the flag table and the parse
 * loop) and app/options_settings.c (the setting flags' values) share.
 * Each parser returns 0, or -1 after printing why to stderr.
 */
#ifndef IFD_APP_OPTIONS_INTERNAL_H
#define IFD_APP_OPTIONS_INTERNAL_H

#include <stddef.h>

#include "app/options.h"

/** true/1/yes/on or false/0/no/off (any case) into *out. */
int ifd__opt_parse_bool(const char *v, int *out);

/** A decimal integer in [lo, hi] into *out. */
int ifd__opt_parse_int(const char *v, long long lo, long long hi,
                       long long *out);

/** --backend-config=[<backend>,]<setting>=<value>. */
int ifd__opt_parse_backend_config(const char *value, ifd_app_options_t *o);

/** One --metrics-config <setting>=<value>. */
int ifd__opt_parse_metrics_config(const char *value, ifd_app_options_t *o);

/** A trace level as tritonserver reads it: 0 OFF, 1 TIMESTAMPS, 2 TENSORS,
 *  -1 invalid. */
int ifd__opt_trace_level(const char *v);

/** Adds `level` (ifd__opt_trace_level's) to the levels given so far. */
void ifd__opt_add_trace_level(ifd_app_options_t *o, int level);

/** One trace setting (`key` of `klen` bytes, `val`) of mode triton or a
 *  global one, into `o`; `flag` and `v` name it in messages. */
int ifd__opt_trace_setting(const char *flag, const char *v, const char *key,
                           size_t klen, const char *val, ifd_app_options_t *o);

/** --trace-config [<mode>,]<setting>=<value>. */
int ifd__opt_parse_trace_config(const char *v, ifd_app_options_t *o);

/** --cache-config <cache>,<setting>=<value>: its form, then the setting
 *  added to `o` (one cache name only). */
int ifd__opt_check_cache_config(const char *v);
int ifd__opt_add_cache_config(const char *v, ifd_app_options_t *o);

#endif
