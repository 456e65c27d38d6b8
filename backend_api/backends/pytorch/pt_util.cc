/*
 * backend_api/backends/pytorch/pt_util.cc - the PyTorch backend's small
 * helpers: errors and log lines, exception texts, the table between Triton's
 * data types and libtorch's, and Triton's parameter parsing.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void ifd_pt_log(TRITONSERVER_LogLevel level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ifd_be_vlog(level, "pytorch", fmt, ap);
  va_end(ap);
}

void ifd_pt_log_err(TRITONSERVER_Error *e, const char *what) {
  if (e == nullptr) return;
  ifd_pt_log(TRITONSERVER_LOG_ERROR, "%s: %s", what,
             TRITONSERVER_ErrorMessage(e));
  TRITONSERVER_ErrorDelete(e);
}

std::string ifd_pt_what(const std::exception &ex) {
  /* c10::Error's what() appends the C++ frames that raised it, which say
   * nothing to a client; the TorchScript traceback is in the message. */
  const c10::Error *ce = dynamic_cast<const c10::Error *>(&ex);
  std::string s = ce != nullptr ? ce->what_without_backtrace() : ex.what();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

/* One row per type both sides have: libtorch 1.13 has no unsigned type
 * wider than 8 bits, and BYTES (a list of strings) is not served yet. */
static const struct {
  const char *config;
  TRITONSERVER_DataType dt;
  c10::ScalarType st;
} types[] = {
    {"TYPE_BOOL", TRITONSERVER_TYPE_BOOL, c10::ScalarType::Bool},
    {"TYPE_UINT8", TRITONSERVER_TYPE_UINT8, c10::ScalarType::Byte},
    {"TYPE_INT8", TRITONSERVER_TYPE_INT8, c10::ScalarType::Char},
    {"TYPE_INT16", TRITONSERVER_TYPE_INT16, c10::ScalarType::Short},
    {"TYPE_INT32", TRITONSERVER_TYPE_INT32, c10::ScalarType::Int},
    {"TYPE_INT64", TRITONSERVER_TYPE_INT64, c10::ScalarType::Long},
    {"TYPE_FP16", TRITONSERVER_TYPE_FP16, c10::ScalarType::Half},
    {"TYPE_FP32", TRITONSERVER_TYPE_FP32, c10::ScalarType::Float},
    {"TYPE_FP64", TRITONSERVER_TYPE_FP64, c10::ScalarType::Double},
    {"TYPE_BF16", TRITONSERVER_TYPE_BF16, c10::ScalarType::BFloat16},
};

bool ifd_pt_config_type(const char *config_name, TRITONSERVER_DataType *dt,
                        c10::ScalarType *st) {
  for (const auto &t : types)
    if (config_name != nullptr && strcmp(t.config, config_name) == 0) {
      *dt = t.dt;
      *st = t.st;
      return true;
    }
  return false;
}

TRITONSERVER_DataType ifd_pt_triton_type(c10::ScalarType st) {
  for (const auto &t : types)
    if (t.st == st) return t.dt;
  return TRITONSERVER_TYPE_INVALID;
}

const char *ifd_pt_param(const json_t *config, const char *key) {
  const json_t *p = json_object_get(json_object_get(config, "parameters"), key);
  const json_t *v = json_object_get(p, "string_value");
  return json_is_string(v) ? json_string_value(v) : nullptr;
}

/* Triton's boolean words: true/on/1 and false/off/0, any case. */
TRITONSERVER_Error *ifd_pt_param_bool(const json_t *config, const char *key,
                                      bool *set, bool *out) {
  const char *s = ifd_pt_param(config, key);
  char low[8];
  size_t i;
  if (s == nullptr) return nullptr;
  for (i = 0; s[i] != '\0' && i + 1 < sizeof(low); i++)
    low[i] = (char)tolower((unsigned char)s[i]);
  low[i] = '\0';
  if (s[i] == '\0') {
    if (!strcmp(low, "true") || !strcmp(low, "on") || !strcmp(low, "1")) {
      *out = true;
      if (set != nullptr) *set = true;
      return nullptr;
    }
    if (!strcmp(low, "false") || !strcmp(low, "off") || !strcmp(low, "0")) {
      *out = false;
      if (set != nullptr) *set = true;
      return nullptr;
    }
  }
  return ifd_be_errf(PT_ERR_ARG, "failed to convert '%s' to boolean", s);
}

TRITONSERVER_Error *ifd_pt_param_int(const json_t *config, const char *key,
                                     bool *set, int *out) {
  const char *s = ifd_pt_param(config, key);
  char *end;
  long v;
  if (s == nullptr) return nullptr;
  errno = 0;
  v = strtol(s, &end, 10);
  if (end == s || *end != '\0' || errno != 0 || v < -2147483647L ||
      v > 2147483647L)
    return ifd_be_errf(PT_ERR_ARG, "failed to convert '%s' to integral number",
                       s);
  *out = (int)v;
  if (set != nullptr) *set = true;
  return nullptr;
}
