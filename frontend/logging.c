/*
 * frontend/logging.c - the logging extension: GET/POST /v2/logging and the
 * LogSettings RPC, with tritonserver 2.47's answers
 * (conformance/triton-2.47/features, section 6).
 *
 * The settings: log_file (read only: the --log-file path or ""), log_info,
 * log_warning, log_error (booleans), log_verbose_level (unsigned) and
 * log_format ("default" or "ISO8601"). A change is checked whole before any
 * of it applies, so a refused request changes nothing. Unknown names are
 * ignored, as tritonserver does. Errors, as tritonserver answers them:
 *  - log_file given: UNSUPPORTED (HTTP 501, gRPC UNIMPLEMENTED), "log file
 *    location can not be updated through network protocol";
 *  - a log_format other than the two: UNAVAILABLE (503), "invalid argument
 *    for --log_format, got: <v>";
 *  - a value of the wrong type: HTTP 500 with the JSON library's text that
 *    tritonserver answers ("attempt to access JSON non-boolean as boolean"),
 *    gRPC INVALID_ARGUMENT "expect int32 for 'log_verbose_level'" (that text
 *    is tritonserver's; "expect boolean for" / "expect string for" follow it
 *    for the other types);
 *  - an HTTP body that is not a JSON object: 500, "failed to parse the
 *    request JSON buffer: <why> at <offset>".
 */
#include "frontend/logging.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"
#include "proto/grpc_service.pb-c.h"

/* A checked change; has_* says which settings it sets. */
typedef struct change {
  int has_info, info, has_warning, warning, has_error, error;
  int has_verbose, has_format;
  unsigned verbose;
  ifd_log_format_t format;
} change_t;

static void apply(const change_t *c) {
  if (c->has_info) ifd_log_set_enabled(IFD_LOG_INFO, c->info);
  if (c->has_warning) ifd_log_set_enabled(IFD_LOG_WARN, c->warning);
  if (c->has_error) ifd_log_set_enabled(IFD_LOG_ERROR, c->error);
  if (c->has_verbose) ifd_log_set_verbose((int)c->verbose);
  if (c->has_format) ifd_log_set_format(c->format);
}

/* Checks a log_format value; returns 0 or IFD_EUNAVAIL with the text. */
static int check_format(const char *v, change_t *c, char *text, size_t n) {
  if (ifd_log_parse_format(v, &c->format) != 0) {
    snprintf(text, n, "invalid argument for --log_format, got: %.200s", v);
    return IFD_EUNAVAIL;
  }
  c->has_format = 1;
  return 0;
}

static const char no_file[] =
    "log file location can not be updated through network protocol";

/* ---- HTTP ------------------------------------------------------------------
 */

static void reply_settings(ifd_http_slot_t *s) {
  ifd_hbuf_t b;
  const char *file = ifd_log_file();
  ifd_hbuf_init(&b, IFD_HTTP_HEADROOM);
  ifd_hbuf_puts(&b, "{\"log_file\":");
  ifd_json_text(&b, file, strlen(file));
  ifd_hbuf_printf(&b,
                  ",\"log_info\":%s,\"log_warning\":%s,\"log_error\":%s,"
                  "\"log_verbose_level\":%d,\"log_format\":\"%s\"}",
                  ifd_log_enabled(IFD_LOG_INFO) ? "true" : "false",
                  ifd_log_enabled(IFD_LOG_WARN) ? "true" : "false",
                  ifd_log_enabled(IFD_LOG_ERROR) ? "true" : "false",
                  ifd_log_verbose(), ifd_log_format_name(ifd_log_format()));
  ifd__http_slot_finish(s, 200, "application/json", &b, NULL, 0, -1);
}

/* One boolean member; returns 0 (absent or set), or -1 after answering. */
static int http_bool(ifd_http_slot_t *s, json_t *o, const char *key, int *has,
                     int *out) {
  json_t *v = json_object_get(o, key);
  if (v == NULL) return 0;
  if (!json_is_boolean(v)) {
    ifd__http_slot_error(s, 500,
                         "attempt to access JSON non-boolean as boolean");
    return -1;
  }
  *has = 1;
  *out = json_is_true(v);
  return 0;
}

json_t *ifd__http_json_object(ifd_http_slot_t *slot,
                              const ifd_http_msg_t *msg) {
  json_error_t jerr;
  char text[320];
  json_t *root =
      json_loadb(msg->body != NULL ? msg->body : "", msg->body_len, 0, &jerr);

  if (root != NULL && json_is_object(root)) return root;
  if (root == NULL)
    snprintf(text, sizeof(text),
             "failed to parse the request JSON buffer: %.200s at %d", jerr.text,
             jerr.position);
  else
    snprintf(text, sizeof(text),
             "failed to parse the request JSON buffer: expected an object");
  json_decref(root);
  ifd__http_slot_error(slot, 500, text);
  return NULL;
}

void ifd__http_logging(ifd_http_slot_t *s, const ifd_http_msg_t *msg) {
  change_t c;
  json_t *root, *v;
  char text[320];
  int rc;

  if (msg->method != IFD_HTTP_POST) {
    reply_settings(s);
    return;
  }
  if ((root = ifd__http_json_object(s, msg)) == NULL) return;
  memset(&c, 0, sizeof(c));
  if (json_object_get(root, "log_file") != NULL) {
    ifd__http_slot_error(s, 501, no_file);
    goto out;
  }
  if (http_bool(s, root, "log_info", &c.has_info, &c.info) != 0 ||
      http_bool(s, root, "log_warning", &c.has_warning, &c.warning) != 0 ||
      http_bool(s, root, "log_error", &c.has_error, &c.error) != 0)
    goto out;
  v = json_object_get(root, "log_verbose_level");
  if (v != NULL) {
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > (json_int_t)INT32_MAX) {
      ifd__http_slot_error(s, 500,
                           "attempt to access JSON non-unsigned-integer as "
                           "unsigned-integer");
      goto out;
    }
    c.has_verbose = 1;
    c.verbose = (unsigned)json_integer_value(v);
  }
  v = json_object_get(root, "log_format");
  if (v != NULL) {
    if (!json_is_string(v)) {
      ifd__http_slot_error(s, 500,
                           "attempt to access JSON non-string as "
                           "string");
      goto out;
    }
    rc = check_format(json_string_value(v), &c, text, sizeof(text));
    if (rc != 0) {
      ifd__http_slot_error(s, 503, text);
      goto out;
    }
  }
  apply(&c);
  reply_settings(s);
out:
  json_decref(root);
}

/* ---- gRPC ------------------------------------------------------------------
 */

typedef Inference__LogSettingsRequest__SettingValue req_value_t;
typedef Inference__LogSettingsResponse__SettingValue resp_value_t;
typedef Inference__LogSettingsResponse__SettingsEntry resp_entry_t;

#define REQ_CASE(x) INFERENCE__LOG_SETTINGS_REQUEST__SETTING_VALUE__##x
#define RESP_CASE(x) INFERENCE__LOG_SETTINGS_RESPONSE__SETTING_VALUE__##x

/* Checks one entry into `c`; returns 0 or a negative code with `text`. */
static int grpc_entry(const char *key, const req_value_t *v, change_t *c,
                      char *text, size_t n) {
  int is_bool = v != NULL && v->parameter_choice_case ==
                                 REQ_CASE(PARAMETER_CHOICE_BOOL_PARAM);
  int *has = NULL, *out = NULL;

  if (strcmp(key, "log_file") == 0) {
    snprintf(text, n, "%s", no_file);
    return IFD_EUNSUPPORTED;
  }
  if (strcmp(key, "log_info") == 0) {
    has = &c->has_info;
    out = &c->info;
  } else if (strcmp(key, "log_warning") == 0) {
    has = &c->has_warning;
    out = &c->warning;
  } else if (strcmp(key, "log_error") == 0) {
    has = &c->has_error;
    out = &c->error;
  }
  if (has != NULL) {
    if (!is_bool) {
      snprintf(text, n, "expect boolean for '%s'", key);
      return IFD_EINVAL;
    }
    *has = 1;
    *out = v->bool_param != 0;
    return 0;
  }
  if (strcmp(key, "log_verbose_level") == 0) {
    if (v == NULL ||
        v->parameter_choice_case != REQ_CASE(PARAMETER_CHOICE_UINT32_PARAM)) {
      snprintf(text, n, "expect int32 for '%s'", key);
      return IFD_EINVAL;
    }
    c->has_verbose = 1;
    c->verbose = v->uint32_param > (uint32_t)INT32_MAX ? (unsigned)INT32_MAX
                                                       : v->uint32_param;
    return 0;
  }
  if (strcmp(key, "log_format") == 0) {
    if (v == NULL ||
        v->parameter_choice_case != REQ_CASE(PARAMETER_CHOICE_STRING_PARAM)) {
      snprintf(text, n, "expect string for '%s'", key);
      return IFD_EINVAL;
    }
    return check_format(v->string_param, c, text, n);
  }
  return 0; /* unknown: ignored */
}

void ifd__grpc_log_settings(ifd_gstream_t *st, uint8_t *msg, size_t len) {
  Inference__LogSettingsRequest *q = ifd__grpc_unpack(
      st, &inference__log_settings_request__descriptor, msg, len);
  Inference__LogSettingsResponse r = INFERENCE__LOG_SETTINGS_RESPONSE__INIT;
  resp_value_t vals[6];
  resp_entry_t entries[6];
  resp_entry_t *ptrs[6];
  static const char *const keys[6] = {"log_file",          "log_info",
                                      "log_warning",       "log_error",
                                      "log_verbose_level", "log_format"};
  change_t c;
  char text[320];
  size_t i;
  int rc = 0;

  if (q == NULL) return;
  memset(&c, 0, sizeof(c));
  for (i = 0; rc == 0 && i < q->n_settings; i++)
    rc = grpc_entry(q->settings[i]->key, q->settings[i]->value, &c, text,
                    sizeof(text));
  protobuf_c_message_free_unpacked(&q->base, NULL);
  if (rc != 0) {
    ifd__grpc_finish_code(st, rc, text);
    return;
  }
  apply(&c);
  for (i = 0; i < 6; i++) {
    resp_value_t iv = INFERENCE__LOG_SETTINGS_RESPONSE__SETTING_VALUE__INIT;
    resp_entry_t ie = INFERENCE__LOG_SETTINGS_RESPONSE__SETTINGS_ENTRY__INIT;
    vals[i] = iv;
    entries[i] = ie;
    entries[i].key = (char *)keys[i];
    entries[i].value = &vals[i];
    ptrs[i] = &entries[i];
  }
  vals[0].parameter_choice_case = RESP_CASE(PARAMETER_CHOICE_STRING_PARAM);
  vals[0].string_param = (char *)ifd_log_file();
  vals[1].parameter_choice_case = RESP_CASE(PARAMETER_CHOICE_BOOL_PARAM);
  vals[1].bool_param = ifd_log_enabled(IFD_LOG_INFO) != 0;
  vals[2].parameter_choice_case = RESP_CASE(PARAMETER_CHOICE_BOOL_PARAM);
  vals[2].bool_param = ifd_log_enabled(IFD_LOG_WARN) != 0;
  vals[3].parameter_choice_case = RESP_CASE(PARAMETER_CHOICE_BOOL_PARAM);
  vals[3].bool_param = ifd_log_enabled(IFD_LOG_ERROR) != 0;
  vals[4].parameter_choice_case = RESP_CASE(PARAMETER_CHOICE_UINT32_PARAM);
  vals[4].uint32_param = (uint32_t)ifd_log_verbose();
  vals[5].parameter_choice_case = RESP_CASE(PARAMETER_CHOICE_STRING_PARAM);
  vals[5].string_param = (char *)ifd_log_format_name(ifd_log_format());
  r.n_settings = 6;
  r.settings = ptrs;
  ifd__grpc_reply(st, &r.base);
}
