/*
 * test/fuzz/fuzz_config.c - libFuzzer target: config.pbtxt. The input is
 * the file's text: the protobuf text-format parser (proto/pbtext.c), then,
 * when it parses, core's normalization and validation
 * (core/config_defaults.c, core/config_validate.c) and the JSON rendering
 * the config route serves (core/config_json.c).
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ifd_model_config_t *cfg = NULL;
  ifd_config_opts_t o = {0, 0};
  ifd_errmsg_t err;
  char *text;
  int rc;

  /* Exactly `size` bytes: the parser must not need a terminator. */
  text = malloc(size != 0 ? size : 1);
  if (text == NULL) return 0;
  if (size != 0) memcpy(text, data, size);
  ifd_errclear(&err);
  rc = ifd_config_parse(text, size, "config.pbtxt", "m", &cfg, &err);
  if (rc == 0) rc = ifd_config_normalize(cfg, &o, &err);
  if (rc == 0) rc = ifd_config_validate(cfg, &o, &err);
  if (rc == 0) {
    json_t *j = ifd_config_to_json(cfg);
    if (j != NULL) free(json_dumps(j, JSON_COMPACT));
    json_decref(j);
  } else if (err.text[0] == '\0') {
    abort();
  }
  ifd_config_free(cfg);
  free(text);
  return 0;
}
