/*
 * core/config_util.c - the small helpers every file of the model-config
 * module shares (declared in core/config_internal.h): replacing a string
 * field, the backend family of a platform or backend name, and the output
 * lookup. They call nothing else of the module, so each config file can use
 * them without a circle between the files.
 */
#include <stdlib.h>
#include <string.h>

#include "core/config_internal.h"

int ifd__config_set_str(char **slot, const char *val) {
  char *copy = strdup(val);
  if (copy == NULL) return IFD_ENOMEM;
  if (*slot != NULL && *slot != protobuf_c_empty_string) free(*slot);
  *slot = copy;
  return 0;
}

enum ifd__config_family ifd__config_family_of_platform(const char *p) {
  if (streq(p, TF_GRAPHDEF_PLATFORM) || streq(p, TF_SAVEDMODEL_PLATFORM))
    return FAM_TF;
  if (streq(p, TRT_PLATFORM)) return FAM_TRT;
  if (streq(p, ORT_PLATFORM)) return FAM_ORT;
  if (streq(p, PT_PLATFORM)) return FAM_PT;
  return FAM_UNKNOWN;
}

enum ifd__config_family ifd__config_family_of_backend(const char *b) {
  if (streq(b, TF_BACKEND)) return FAM_TF;
  if (streq(b, TRT_BACKEND)) return FAM_TRT;
  if (streq(b, ORT_BACKEND)) return FAM_ORT;
  if (streq(b, PT_BACKEND)) return FAM_PT;
  return FAM_UNKNOWN;
}

int ifd__config_has_output(const ifd_model_config_t *cfg, const char *name) {
  for (size_t i = 0; i < cfg->n_output; i++)
    if (streq(cfg->output[i]->name, name)) return 1;
  return 0;
}
