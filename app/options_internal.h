/*
 * app/options_internal.h - what the files of inferd's command line share:
 * app/options.c (the flag table and the parse loop) calls the others;
 * app/options_settings.c (the setting flags' values) and
 * app/options_check.c (the checks once every flag is read) read values
 * through app/options_values.c, which calls none of them back. Each parser
 * returns 0, or -1 after printing why to stderr (the checkers of a value's
 * form print nothing).
 */
#ifndef IFD_APP_OPTIONS_INTERNAL_H
#define IFD_APP_OPTIONS_INTERNAL_H

#include <stddef.h>

#include "app/options.h"

/* app/options_values.c */

/** true/1/yes/on or false/0/no/off (any case) into *out. */
int ifd__opt_parse_bool(const char *v, int *out);

/** A decimal integer in [lo, hi] into *out. */
int ifd__opt_parse_int(const char *v, long long lo, long long hi,
                       long long *out);

/** A double as std::stod reads it (the whole text) into *out. */
int ifd__opt_parse_double(const char *v, double *out);

/** <int><sep><int-or-float> (tritonserver's ParsePairOption); prints
 *  nothing. */
int ifd__opt_check_pair(const char *v, const char *sep, int second_float);

/** <name><d1><setting><d2><value>, all three non-empty (tritonserver's
 *  ParseGenericConfigOption); prints nothing. */
int ifd__opt_check_generic(const char *v, char d1, char d2);

/** <name>:<count>[:<device>] (tritonserver's
 *  ParseRateLimiterResourceOption); prints nothing. */
int ifd__opt_check_resource(const char *v);

/* app/options_check.c */

/** Notes a flag accepted without effect, once per name (reported by
 *  ifd__app_options_report). `name` and `why` are borrowed: static. */
void ifd__opt_no_effect(ifd_app_options_t *o, const char *name,
                        const char *why);

/** The checks once every flag is read, in tritonserver's order: refused
 *  features, Unix socket paths, port collisions, then model control; also
 *  settles what they imply (the local cache of --response-cache-byte-size,
 *  --disable-auto-complete-config, a negative exit timeout as 0). */
int ifd__opt_check_all(ifd_app_options_t *o);

/* app/options_settings.c */

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
