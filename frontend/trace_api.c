/*
 * frontend/trace_api.c - the trace extension's settings API: GET/POST
 * /v2[/models/<m>]/trace/setting and the TraceSetting RPC, answering as
 * tritonserver 2.47 does (server/src/http_server.cc and grpc_server.cc,
 * HandleTrace / TraceSetting). The settings live in core/trace.h.
 *
 * Values are strings ("trace_level" a list of them). A model setting
 * starts as a copy of the global one; a key posted as null over HTTP, or
 * with an empty list over gRPC, gives that field back to the global
 * setting. Errors, with tritonserver's texts:
 *  - a model that is not ready: 400 / INVALID_ARGUMENT "Request for
 *    unknown model : <m>";
 *  - trace_file given: 501 / UNIMPLEMENTED "trace file location can not be
 *    updated through network protocol";
 *  - "OFF" with other levels: "Expect only one trace level 'OFF' is
 *    specified"; a number that does not parse: "Unable to parse
 *    'trace_rate', got: <v>" (trace_count also "Expecting value >= -1");
 *    over gRPC more than one value: "expect only 1 value for '<key>'";
 *  - a setting that would trace but cannot: "Attempting to set invalid
 *    trace setting :<why>" (core/trace.c).
 * Unknown keys and unknown level names are ignored, as tritonserver does.
 */
#include "frontend/trace_api.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/server.h"
#include "core/trace.h"
#include "proto/grpc_service.pb-c.h"

static const char no_file[] =
    "trace file location can not be updated through network protocol";

/* A level list; `n` names. Returns 0 or IFD_EINVAL with `text`. */
static int parse_levels(const char *const *names, size_t n,
                        ifd_trace_update_t *u, char *text, size_t tn) {
  size_t i;
  int level = 0, any = 0;
  for (i = 0; i < n; i++) {
    if (strcmp(names[i], "OFF") == 0) {
      if (n != 1) {
        snprintf(text, tn, "Expect only one trace level 'OFF' is specified");
        return IFD_EINVAL;
      }
      any = 1;
    } else if (strcmp(names[i], "TIMESTAMPS") == 0) {
      level |= IFD_TRACE_TIMESTAMPS;
      any = 1;
    } else if (strcmp(names[i], "TENSORS") == 0) {
      level |= IFD_TRACE_TENSORS;
      any = 1;
    }
  }
  if (any) {
    u->has_level = 1;
    u->level = level;
  }
  return 0;
}

/* std::stoi's reading: leading blanks, a sign, digits; the rest ignored.
 * Returns 0, -1 (no number) or -2 (out of int's range). */
static int stoi_like(const char *v, long long *out) {
  char *end;
  long long n;
  errno = 0;
  n = strtoll(v, &end, 10);
  if (end == v) return -1;
  if (errno == ERANGE || n < INT32_MIN || n > INT32_MAX) return -2;
  *out = n;
  return 0;
}

/* One numeric setting `key` = `v`. Returns 0 or IFD_EINVAL with `text`. */
static int parse_number(const char *key, const char *v, ifd_trace_update_t *u,
                        char *text, size_t tn) {
  long long n = 0;
  int rc = stoi_like(v, &n);
  int is_count = strcmp(key, "trace_count") == 0;
  if (rc == -1) {
    snprintf(text, tn, "Unable to parse '%s', got: %.200s", key, v);
    return IFD_EINVAL;
  }
  if (rc == -2) {
    if (is_count)
      snprintf(text, tn,
               "Unable to parse '%s', value is out of range [ -1, %d ], got: "
               "%.200s",
               key, INT32_MAX, v);
    else
      snprintf(text, tn,
               "Unable to parse '%s', value is out of range [ 0, %u ], got: "
               "%.200s",
               key, UINT32_MAX, v);
    return IFD_EINVAL;
  }
  if (is_count) {
    if (n < -1) {
      snprintf(text, tn,
               "Unable to parse 'trace_count'. Expecting value >= -1, "
               "got:%.200s",
               v);
      return IFD_EINVAL;
    }
    u->has_count = 1;
    u->count = (int32_t)n;
  } else if (strcmp(key, "trace_rate") == 0) {
    u->has_rate = 1;
    u->rate = (uint32_t)n; /* a negative one wraps, as in tritonserver */
  } else {
    u->has_log_frequency = 1;
    u->log_frequency = (uint32_t)n;
  }
  return 0;
}

/* Marks `key` cleared (given back to the global setting). */
static void clear_key(const char *key, ifd_trace_update_t *u) {
  if (strcmp(key, "trace_level") == 0) u->clear_level = 1;
  if (strcmp(key, "trace_rate") == 0) u->clear_rate = 1;
  if (strcmp(key, "trace_count") == 0) u->clear_count = 1;
  if (strcmp(key, "log_frequency") == 0) u->clear_log_frequency = 1;
}

static int is_number_key(const char *key) {
  return strcmp(key, "trace_rate") == 0 || strcmp(key, "trace_count") == 0 ||
         strcmp(key, "log_frequency") == 0;
}

/* Is `model` (NUL-terminated) ready? Else fills `text`. */
static int check_model(ifd_server_t *srv, const char *model, char *text,
                       size_t tn) {
  if (model == NULL || model[0] == '\0') return 0;
  if (ifd_server_model_ready(srv, model, strlen(model), -1)) return 0;
  snprintf(text, tn, "Request for unknown model : %.200s", model);
  return IFD_EINVAL;
}

/* The values of setting `v`, as strings into `buf` (for both protocols). */
typedef struct values {
  char level[3][16];
  const char *levels[3];
  size_t n_levels;
  char rate[16], count[16], logf[16];
  const char *file;
} values_t;

static void get_values(ifd_server_t *srv, const char *model, values_t *o) {
  ifd_trace_view_t v;
  ifd_trace_get(srv, model, &v);
  o->n_levels = 0;
  if (v.level == 0) snprintf(o->level[o->n_levels++], 16, "OFF");
  if (v.level & IFD_TRACE_TIMESTAMPS)
    snprintf(o->level[o->n_levels++], 16, "TIMESTAMPS");
  if (v.level & IFD_TRACE_TENSORS)
    snprintf(o->level[o->n_levels++], 16, "TENSORS");
  for (size_t i = 0; i < o->n_levels; i++) o->levels[i] = o->level[i];
  snprintf(o->rate, sizeof(o->rate), "%" PRIu32, v.rate);
  snprintf(o->count, sizeof(o->count), "%" PRId32, v.count);
  snprintf(o->logf, sizeof(o->logf), "%" PRIu32, v.log_frequency);
  o->file = v.file;
}

/* ---- HTTP ----------------------------------------------------------------
 */

static void reply_settings(ifd_server_t *srv, ifd_http_slot_t *s,
                           const char *model) {
  values_t v;
  ifd_hbuf_t b;
  size_t i;
  get_values(srv, model, &v);
  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd_hbuf_puts(&b, "{\"trace_level\":[");
  for (i = 0; i < v.n_levels; i++)
    ifd_hbuf_printf(&b, "%s\"%s\"", i ? "," : "", v.levels[i]);
  ifd_hbuf_printf(&b,
                  "],\"trace_rate\":\"%s\",\"trace_count\":\"%s\","
                  "\"log_frequency\":\"%s\",\"trace_file\":",
                  v.rate, v.count, v.logf);
  ifd_json_text(&b, v.file, strlen(v.file));
  ifd_hbuf_puts(&b, ",\"trace_mode\":\"triton\"}");
  ifd__http_slot_finish(s, 200, "application/json", &b, NULL, 0, -1);
}

/* Reads a POST body into `u`. Returns 0, or an HTTP status after filling
 * `text`. */
static int http_update(json_t *root, ifd_trace_update_t *u, char *text,
                       size_t tn) {
  static const char *const keys[] = {"trace_rate", "trace_count",
                                     "log_frequency"};
  json_t *v;
  size_t i;

  if (json_object_get(root, "trace_file") != NULL) {
    snprintf(text, tn, "%s", no_file);
    return 501;
  }
  v = json_object_get(root, "trace_level");
  if (v != NULL) {
    if (json_is_null(v)) {
      u->clear_level = 1;
    } else {
      const char *names[8];
      size_t n = json_is_array(v) ? json_array_size(v) : 0;
      if (!json_is_array(v)) {
        snprintf(text, tn, "attempt to access JSON non-array as array");
        return 500;
      }
      for (i = 0; i < n; i++) {
        json_t *e = json_array_get(v, i);
        if (!json_is_string(e)) {
          snprintf(text, tn, "attempt to access JSON non-string as string");
          return 500;
        }
      }
      /* Only OFF, TIMESTAMPS and TENSORS mean anything: look at 8. */
      for (i = 0; i < n && i < 8; i++)
        names[i] = json_string_value(json_array_get(v, i));
      /* A list longer than 8 is checked as tritonserver would by its OFF
       * rule: OFF with anything else is refused. */
      if (n > 8) {
        for (i = 0; i < n; i++)
          if (strcmp(json_string_value(json_array_get(v, i)), "OFF") == 0) {
            snprintf(text, tn,
                     "Expect only one trace level 'OFF' is specified");
            return 400;
          }
      }
      if (parse_levels(names, n < 8 ? n : 8, u, text, tn) != 0) return 400;
    }
  }
  for (i = 0; i < 3; i++) {
    v = json_object_get(root, keys[i]);
    if (v == NULL) continue;
    if (json_is_null(v)) {
      clear_key(keys[i], u);
      continue;
    }
    if (!json_is_string(v)) {
      snprintf(text, tn, "attempt to access JSON non-string as string");
      return 500;
    }
    if (parse_number(keys[i], json_string_value(v), u, text, tn) != 0)
      return 400;
  }
  return 0;
}

void ifd__http_trace(ifd_server_t *srv, ifd_http_slot_t *s,
                     const ifd_route_match_t *m, const ifd_http_msg_t *msg) {
  char model[512], text[400];
  ifd_trace_update_t u;
  ifd_errmsg_t err;
  json_t *root;
  int status;

  model[0] = '\0';
  if (m->model != NULL) {
    if (m->model_len >= sizeof(model)) {
      ifd__http_slot_error(s, 400, "Request for unknown model");
      return;
    }
    memcpy(model, m->model, m->model_len);
    model[m->model_len] = '\0';
  }
  if (check_model(srv, model, text, sizeof(text)) != 0) {
    ifd__http_slot_error(s, 400, text);
    return;
  }
  if (msg->method != IFD_HTTP_POST) {
    reply_settings(srv, s, model);
    return;
  }
  if ((root = ifd__http_json_object(s, msg)) == NULL) return;
  memset(&u, 0, sizeof(u));
  status = http_update(root, &u, text, sizeof(text));
  json_decref(root);
  if (status != 0) {
    ifd__http_slot_error(s, status, text);
    return;
  }
  ifd_errclear(&err);
  if (ifd_trace_update(srv, model, &u, &err) != 0) {
    ifd__http_slot_error(s, err.code == IFD_ENOMEM ? 500 : 400, err.text);
    return;
  }
  reply_settings(srv, s, model);
}

/* ---- gRPC ----------------------------------------------------------------
 */

typedef Inference__TraceSettingResponse__SettingValue resp_value_t;
typedef Inference__TraceSettingResponse__SettingsEntry resp_entry_t;

/* Reads the request's settings into `u`. Returns 0 or a negative code with
 * `text`. */
static int grpc_update(const Inference__TraceSettingRequest *q,
                       ifd_trace_update_t *u, char *text, size_t tn) {
  size_t i;
  for (i = 0; i < q->n_settings; i++) {
    const char *key = q->settings[i]->key;
    const Inference__TraceSettingRequest__SettingValue *v =
        q->settings[i]->value;
    size_t n = v != NULL ? v->n_value : 0;
    int rc;
    if (strcmp(key, "trace_file") == 0) {
      snprintf(text, tn, "%s", no_file);
      return IFD_EUNSUPPORTED;
    }
    if (strcmp(key, "trace_level") == 0) {
      if (n == 0) {
        u->clear_level = 1;
        continue;
      }
      rc = parse_levels((const char *const *)v->value, n, u, text, tn);
      if (rc != 0) return rc;
      continue;
    }
    if (!is_number_key(key)) continue;
    if (n == 0) {
      clear_key(key, u);
      continue;
    }
    if (n > 1) {
      snprintf(text, tn, "expect only 1 value for '%s'", key);
      return IFD_EINVAL;
    }
    rc = parse_number(key, v->value[0], u, text, tn);
    if (rc != 0) return rc;
  }
  return 0;
}

void ifd__grpc_trace_setting(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  ifd_server_t *srv = ifd_gstream_server(st);
  Inference__TraceSettingRequest *q = ifd__grpc_unpack(
      st, &inference__trace_setting_request__descriptor, msg, len);
  Inference__TraceSettingResponse r = INFERENCE__TRACE_SETTING_RESPONSE__INIT;
  static const char *const keys[6] = {"trace_level", "trace_rate",
                                      "trace_count", "log_frequency",
                                      "trace_file",  "trace_mode"};
  resp_value_t vals[6];
  resp_entry_t entries[6];
  resp_entry_t *ptrs[6];
  char *one[5];
  char model[512], text[400];
  const char *mode = "triton";
  ifd_trace_update_t u;
  ifd_errmsg_t err;
  values_t v;
  size_t i;
  int rc;

  if (q == NULL) return;
  snprintf(model, sizeof(model), "%s", q->model_name);
  rc = check_model(srv, model, text, sizeof(text));
  memset(&u, 0, sizeof(u));
  if (rc == 0) rc = grpc_update(q, &u, text, sizeof(text));
  protobuf_c_message_free_unpacked(&q->base, NULL);
  if (rc == 0 && (u.has_level || u.clear_level || u.has_rate || u.clear_rate ||
                  u.has_count || u.clear_count || u.has_log_frequency ||
                  u.clear_log_frequency)) {
    ifd_errclear(&err);
    rc = ifd_trace_update(srv, model, &u, &err);
    if (rc != 0) snprintf(text, sizeof(text), "%.380s", err.text);
  }
  if (rc != 0) {
    ifd__grpc_finish_code(st, rc, text);
    return;
  }
  get_values(srv, model, &v);
  one[0] = v.rate;
  one[1] = v.count;
  one[2] = v.logf;
  one[3] = (char *)v.file;
  one[4] = (char *)mode;
  for (i = 0; i < 6; i++) {
    resp_value_t iv = INFERENCE__TRACE_SETTING_RESPONSE__SETTING_VALUE__INIT;
    resp_entry_t ie = INFERENCE__TRACE_SETTING_RESPONSE__SETTINGS_ENTRY__INIT;
    vals[i] = iv;
    entries[i] = ie;
    entries[i].key = (char *)keys[i];
    entries[i].value = &vals[i];
    ptrs[i] = &entries[i];
    if (i == 0) {
      vals[i].n_value = v.n_levels;
      vals[i].value = (char **)v.levels;
    } else {
      vals[i].n_value = 1;
      vals[i].value = &one[i - 1];
    }
  }
  r.n_settings = 6;
  r.settings = ptrs;
  ifd__grpc_reply(st, &r.base);
}
