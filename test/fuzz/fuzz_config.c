/*
 * test/fuzz/fuzz_config.c - libFuzzer target: config.pbtxt. The input is
 * the file's text: the protobuf text-format parser (proto/pbtext.c), then,
 * when it parses, core's normalization and validation
 * (core/config_defaults.c, core/config_validate.c) and the JSON rendering
 * the config route serves (core/config_json.c), which must read back
 * (ifd_config_from_json, as a load request's "config" would) into the same
 * config. The input's size picks the options (--strict-model-config, GPUs
 * present), so every seed runs under each over time.
 *
 * An input that starts with '{' is a config in JSON instead (a load
 * request's "config" parameter, TRITONBACKEND_ModelSetConfig): jansson,
 * then the protobuf JSON reader (proto/pbjson.c), then the same steps.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ifd_model_config_t *cfg = NULL;
  ifd_config_opts_t o = {
      (int)(size & 1), (int)(size >> 1 & 1) * 2, NULL, 0, 0, 0, NULL};
  ifd_errmsg_t err;
  char *text;
  int rc;

  /* Exactly `size` bytes: the parser must not need a terminator. */
  text = malloc(size != 0 ? size : 1);
  if (text == NULL) return 0;
  if (size != 0) memcpy(text, data, size);
  ifd_errclear(&err);
  if (size != 0 && text[0] == '{') {
    json_error_t jerr;
    json_t *in = json_loadb(text, size, 0, &jerr);
    if (in == NULL) {
      free(text);
      return 0; /* jansson's to refuse, not ours */
    }
    rc = ifd_config_from_json(in, &cfg, &err);
    json_decref(in);
  } else {
    rc = ifd_config_parse(text, size, "config.pbtxt", "m", &cfg, &err);
  }
  if (rc == 0) rc = ifd_config_normalize(cfg, &o, &err);
  if (rc == 0) rc = ifd_config_validate(cfg, &o, &err);
  if (rc == 0) {
    json_t *j = ifd_config_to_json(cfg), *j2 = NULL;
    ifd_model_config_t *back = NULL;

    if (j == NULL) abort();
    free(json_dumps(j, JSON_COMPACT));
    if (ifd_config_from_json(j, &back, &err) != 0) {
      fprintf(stderr,
              "fuzz_config: the JSON rendering does not read back: %s\n",
              err.text);
      abort();
    }
    j2 = ifd_config_to_json(back);
    if (j2 == NULL || !json_equal(j, j2)) {
      char *a = json_dumps(j, JSON_SORT_KEYS | JSON_INDENT(1));
      char *b =
          j2 != NULL ? json_dumps(j2, JSON_SORT_KEYS | JSON_INDENT(1)) : NULL;
      fprintf(stderr,
              "fuzz_config: the JSON read back renders otherwise\n%s\n--\n"
              "%s\n",
              a, b != NULL ? b : "(none)");
      abort();
    }
    json_decref(j2);
    json_decref(j);
    ifd_config_free(back);
  } else if (err.text[0] == '\0') {
    abort();
  }
  ifd_config_free(cfg);
  free(text);
  return 0;
}
