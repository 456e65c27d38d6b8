/*
 * core/config_json.c - a model config as JSON, and back.
 *
 * ifd_config_to_json renders the config as tritonserver 2.47 prints it for
 * GET /v2/models/<m>/config (field order, fields newer than 2.47 left out
 * while they hold their default); ifd_config_from_json reads the JSON a
 * backend hands to TRITONBACKEND_ModelSetConfig.
 */
#include <jansson.h>

#include "core/config_internal.h"
#include "proto/pbtext.h"

/*
 * Field order. protobuf-c descriptors list fields by number, so the JSON
 * comes out in that order; tritonserver prints them in declaration order.
 * JSON objects are unordered, but clients diffing bodies are not, so the few
 * messages whose declaration order differs from number order are rearranged.
 */
static const char *const config_order[] = {"name",
                                           "platform",
                                           "backend",
                                           "runtime",
                                           "version_policy",
                                           "max_batch_size",
                                           "input",
                                           "output",
                                           "batch_input",
                                           "batch_output",
                                           "optimization",
                                           "dynamic_batching",
                                           "sequence_batching",
                                           "ensemble_scheduling",
                                           "instance_group",
                                           "default_model_filename",
                                           "cc_model_filenames",
                                           "metric_tags",
                                           "parameters",
                                           "model_warmup",
                                           "model_operations",
                                           "model_transaction_policy",
                                           "model_repository_agents",
                                           "response_cache",
                                           "model_metrics",
                                           NULL};
static const char *const group_order[] = {"name",        "kind",
                                          "count",       "rate_limiter",
                                          "gpus",        "secondary_devices",
                                          "profile",     "passive",
                                          "host_policy", NULL};
static const char *const output_order[] = {"name",
                                           "data_type",
                                           "dims",
                                           "reshape",
                                           "label_filename",
                                           "is_shape_tensor",
                                           "is_non_linear_format_io",
                                           NULL};
static const char *const sequence_order[] = {"direct",
                                             "oldest",
                                             "max_sequence_idle_microseconds",
                                             "control_input",
                                             "state",
                                             "iterative_sequence",
                                             NULL};
static const char *const control_order[] = {"kind",
                                            "int32_false_true",
                                            "fp32_false_true",
                                            "bool_false_true",
                                            "data_type",
                                            NULL};

/* Rebuilds `obj` with the keys of `order` first, in that order, then any
 * others as they were. Returns 0 or IFD_ENOMEM (obj then unchanged). */
static int reorder(json_t *obj, const char *const *order) {
  json_t *sorted, *v;
  const char *key;
  int rc = IFD_ENOMEM;

  if (!json_is_object(obj)) return 0;
  sorted = json_object();
  if (sorted == NULL) return IFD_ENOMEM;
  for (const char *const *k = order; *k != NULL; k++) {
    v = json_object_get(obj, *k);
    if (v != NULL && json_object_set(sorted, *k, v) < 0) goto out_put_sorted;
  }
  json_object_foreach(obj, key, v) {
    if (json_object_get(sorted, key) == NULL &&
        json_object_set(sorted, key, v) < 0)
      goto out_put_sorted;
  }
  json_object_clear(obj);
  rc = json_object_update(obj, sorted) < 0 ? IFD_ENOMEM : 0;

out_put_sorted:
  json_decref(sorted);
  return rc;
}

static int reorder_each(json_t *arr, const char *const *order) {
  size_t i;
  json_t *e;
  json_array_foreach(arr, i, e) {
    if (reorder(e, order) < 0) return IFD_ENOMEM;
  }
  return 0;
}

/* Drops `key` from `obj` when it holds the JSON value `dflt`. */
static void drop_default(json_t *obj, const char *key, const json_t *dflt) {
  json_t *v = json_object_get(obj, key);
  if (v != NULL && json_equal(v, (json_t *)dflt)) json_object_del(obj, key);
}

static void drop_default_each(json_t *root, const char *array, const char *key,
                              const json_t *dflt) {
  json_t *arr = json_object_get(root, array);
  size_t i;
  json_t *e;
  json_array_foreach(arr, i, e) drop_default(e, key, dflt);
}

json_t *ifd_config_to_json(const ifd_model_config_t *cfg) {
  json_t *root, *zero, *seq, *ci, *e;
  size_t i;

  root = ifd_pbjson_from_message(&cfg->base);
  zero = json_integer(0);
  if (root == NULL || zero == NULL) goto out_put_root;

  /* Fields newer than tritonserver 2.47 are printed only when set, so the
   * body matches what 2.47 returns for the same config. */
  drop_default_each(root, "input", "is_non_linear_format_io", json_false());
  drop_default_each(root, "output", "is_non_linear_format_io", json_false());
  drop_default(json_object_get(root, "ensemble_scheduling"),
               "max_inflight_responses", zero);

  seq = json_object_get(root, "sequence_batching");
  ci = json_object_get(seq, "control_input");
  if (reorder(root, config_order) < 0 ||
      reorder_each(json_object_get(root, "instance_group"), group_order) < 0 ||
      reorder_each(json_object_get(root, "output"), output_order) < 0 ||
      reorder(seq, sequence_order) < 0)
    goto out_put_root;
  json_array_foreach(ci, i, e) {
    if (reorder_each(json_object_get(e, "control"), control_order) < 0)
      goto out_put_root;
  }
  json_decref(zero);
  return root;

out_put_root:
  json_decref(zero);
  json_decref(root);
  return NULL;
}

int ifd_config_from_json(const json_t *json, ifd_model_config_t **out,
                         ifd_errmsg_t *err) {
  ProtobufCMessage *msg = NULL;
  int rc;

  *out = NULL;
  rc = ifd_pbjson_to_message(&inference__model_config__descriptor, json, &msg,
                             err);
  if (rc == IFD_EPARSE) {
    /* A config that does not match the schema is an invalid argument. */
    if (err != NULL) err->code = IFD_EINVAL;
    return IFD_EINVAL;
  }
  if (rc < 0) return rc;
  *out = (ifd_model_config_t *)msg;
  return 0;
}
