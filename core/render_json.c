/*
 * core/render_json.c - the JSON text of metadata, configuration, statistics
 * and the repository index (see render_json.h).
 *
 * Written as text with base/jsonw.h's writers into one growable buffer (an
 * ifd_hbuf_t without head room) rather than built as a jansson tree: a
 * statistics answer for hundreds of models stays one allocation sequence,
 * and the number spelling is under our control (counters and durations are
 * printed as integers). An allocation failure sets `oom` and later appends
 * do nothing, so each renderer checks once at the end.
 */
#include "core/render_json.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"
#include "core/config.h"
#include "core/dtype.h"
#include "core/model.h"
#include "core/stats.h"

/* Text (a name, a state, a reason) as a JSON string that is always
 * well-formed UTF-8: each byte of an ill-formed sequence becomes U+FFFD. */
static void put_text(ifd_hbuf_t *b, const char *s) {
  ifd_json_text(b, s, strlen(s));
}

/* A version as Triton spells it in metadata: a string. */
static void put_version(ifd_hbuf_t *b, int64_t v) {
  ifd_hbuf_printf(b, "\"%" PRId64 "\"", v);
}

/* Hands the text to the caller NUL-terminated, or frees it when an append
 * failed. The buffer has no head room, so its data is the text. */
static char *finish(ifd_hbuf_t *b, size_t *len) {
  if (ifd_hbuf_reserve(b, 1) != 0) {
    ifd_hbuf_free(b);
    *len = 0;
    return NULL;
  }
  b->data[b->len] = '\0';
  *len = ifd_hbuf_size(b);
  return b->data;
}

char *ifd_render_server_info(const ifd_server_info_t *info, size_t *len) {
  ifd_hbuf_t b;
  size_t i;

  ifd_hbuf_init(&b, 0);
  ifd_hbuf_puts(&b, "{\"name\":");
  put_text(&b, info->name);
  ifd_hbuf_puts(&b, ",\"version\":");
  put_text(&b, info->version);
  ifd_hbuf_puts(&b, ",\"extensions\":[");
  for (i = 0; i < info->n_extensions; i++) {
    if (i > 0) ifd_hbuf_put(&b, ",", 1);
    put_text(&b, info->extensions[i]);
  }
  ifd_hbuf_puts(&b, "]}");
  return finish(&b, len);
}

static void put_tensors(ifd_hbuf_t *b, const ifd_tensor_info_t *t, size_t n) {
  size_t i, k;

  ifd_hbuf_put(b, "[", 1);
  for (i = 0; i < n; i++) {
    if (i > 0) ifd_hbuf_put(b, ",", 1);
    ifd_hbuf_puts(b, "{\"name\":");
    put_text(b, t[i].name);
    ifd_hbuf_puts(b, ",\"datatype\":");
    put_text(b, ifd_dtype_name(t[i].dtype));
    ifd_hbuf_puts(b, ",\"shape\":[");
    for (k = 0; k < t[i].n_shape; k++)
      ifd_hbuf_printf(b, k > 0 ? ",%" PRId64 : "%" PRId64, t[i].shape[k]);
    ifd_hbuf_puts(b, "]}");
  }
  ifd_hbuf_put(b, "]", 1);
}

char *ifd_render_model_info(const ifd_model_info_t *info, size_t *len) {
  ifd_hbuf_t b;
  size_t i;

  ifd_hbuf_init(&b, 0);
  ifd_hbuf_puts(&b, "{\"name\":");
  put_text(&b, info->name);
  ifd_hbuf_puts(&b, ",\"versions\":[");
  for (i = 0; i < info->n_versions; i++) {
    if (i > 0) ifd_hbuf_put(&b, ",", 1);
    put_version(&b, info->versions[i]);
  }
  ifd_hbuf_puts(&b, "],\"platform\":");
  put_text(&b, info->platform);
  ifd_hbuf_puts(&b, ",\"inputs\":");
  put_tensors(&b, info->inputs, info->n_inputs);
  ifd_hbuf_puts(&b, ",\"outputs\":");
  put_tensors(&b, info->outputs, info->n_outputs);
  ifd_hbuf_put(&b, "}", 1);
  return finish(&b, len);
}

/* "key":{"count":c,"ns":n} */
static void put_duration(ifd_hbuf_t *b, const char *key,
                         const ifd_duration_t *d) {
  ifd_hbuf_printf(b, "\"%s\":{\"count\":%" PRIu64 ",\"ns\":%" PRIu64 "}", key,
                  d->count, d->ns);
}

/* Orders response indexes as their keys are ordered in Triton's map of
 * strings: "0", "1", "10", "11", ..., "2". */
static int key_order(const void *pa, const void *pb) {
  char a[24], b[24];
  snprintf(a, sizeof(a), "%zu", *(const size_t *)pa);
  snprintf(b, sizeof(b), "%zu", *(const size_t *)pb);
  return strcmp(a, b);
}

/* "<index>":{"compute_infer":..,"compute_output":..,"success":..,"fail":..,
 * "empty_response":..,"cancel":..} for each response index reported. */
static void put_response_stats(ifd_hbuf_t *b, const ifd_model_stats_t *st) {
  size_t i, n = st->n_responses, *order;
  if (n == 0) return;
  order = malloc(n * sizeof(*order));
  if (order == NULL) {
    b->oom = 1;
    return;
  }
  for (i = 0; i < n; i++) order[i] = i;
  qsort(order, n, sizeof(*order), key_order);
  for (i = 0; i < n; i++) {
    const ifd_response_stats_t *r = &st->responses[order[i]];
    ifd_hbuf_printf(b, "%s\"%zu\":{", i > 0 ? "," : "", order[i]);
    put_duration(b, "compute_infer", &r->compute_infer);
    ifd_hbuf_put(b, ",", 1);
    put_duration(b, "compute_output", &r->compute_output);
    ifd_hbuf_put(b, ",", 1);
    put_duration(b, "success", &r->success);
    ifd_hbuf_put(b, ",", 1);
    put_duration(b, "fail", &r->fail);
    ifd_hbuf_put(b, ",", 1);
    put_duration(b, "empty_response", &r->empty_response);
    ifd_hbuf_put(b, ",", 1);
    put_duration(b, "cancel", &r->cancel);
    ifd_hbuf_put(b, "}", 1);
  }
  free(order);
}

static void put_model_stats(ifd_hbuf_t *b, const ifd_stats_entry_t *e) {
  const ifd_model_stats_t *st = e->stats;
  ifd_mem_usage_t mu[IFD_STATS_MEM_SLOTS];
  size_t i, nmu;

  ifd_hbuf_puts(b, "{\"name\":");
  put_text(b, e->name);
  ifd_hbuf_puts(b, ",\"version\":");
  put_version(b, e->version);
  ifd_hbuf_printf(b,
                  ",\"last_inference\":%" PRIu64 ",\"inference_count\":%" PRIu64
                  ",\"execution_count\":%" PRIu64 ",\"inference_stats\":{",
                  st->last_inference_ms, st->inference_count,
                  st->execution_count);
  put_duration(b, "success", &st->success);
  ifd_hbuf_put(b, ",", 1);
  put_duration(b, "fail", &st->fail);
  ifd_hbuf_put(b, ",", 1);
  put_duration(b, "queue", &st->queue);
  ifd_hbuf_put(b, ",", 1);
  put_duration(b, "compute_input", &st->compute_input);
  ifd_hbuf_put(b, ",", 1);
  put_duration(b, "compute_infer", &st->compute_infer);
  ifd_hbuf_put(b, ",", 1);
  put_duration(b, "compute_output", &st->compute_output);
  ifd_hbuf_put(b, ",", 1);
  put_duration(b, "cache_hit", &st->cache_hit);
  ifd_hbuf_put(b, ",", 1);
  put_duration(b, "cache_miss", &st->cache_miss);
  ifd_hbuf_puts(b, "},\"response_stats\":{");
  put_response_stats(b, st);
  ifd_hbuf_puts(b, "},\"batch_stats\":[");
  for (i = 0; i < st->n_batches; i++) {
    const ifd_batch_stats_t *bs = &st->batches[i];
    ifd_hbuf_printf(b, "%s{\"batch_size\":%" PRIu64 ",", i > 0 ? "," : "",
                    bs->batch_size);
    put_duration(b, "compute_input", &bs->compute_input);
    ifd_hbuf_put(b, ",", 1);
    put_duration(b, "compute_infer", &bs->compute_infer);
    ifd_hbuf_put(b, ",", 1);
    put_duration(b, "compute_output", &bs->compute_output);
    ifd_hbuf_put(b, "}", 1);
  }
  ifd_hbuf_puts(b, "],\"memory_usage\":[");
  /* What the backend reported its model and instances hold. */
  nmu = ifd_stats_memory_usage(st, mu, IFD_STATS_MEM_SLOTS);
  for (i = 0; i < nmu; i++)
    ifd_hbuf_printf(
        b, "%s{\"type\":\"%s\",\"id\":%" PRId64 ",\"byte_size\":%" PRIu64 "}",
        i > 0 ? "," : "", mu[i].type, mu[i].id, mu[i].byte_size);
  ifd_hbuf_puts(b, "]}");
}

char *ifd_render_stats(const ifd_stats_entry_t *e, size_t n, size_t *len) {
  ifd_hbuf_t b;
  size_t i;

  ifd_hbuf_init(&b, 0);
  ifd_hbuf_puts(&b, "{\"model_stats\":[");
  for (i = 0; i < n; i++) {
    if (i > 0) ifd_hbuf_put(&b, ",", 1);
    put_model_stats(&b, &e[i]);
  }
  ifd_hbuf_puts(&b, "]}");
  return finish(&b, len);
}

char *ifd_render_repo_index(const ifd_index_entry_t *e, size_t n, size_t *len) {
  ifd_hbuf_t b;
  size_t i;

  ifd_hbuf_init(&b, 0);
  ifd_hbuf_put(&b, "[", 1);
  for (i = 0; i < n; i++) {
    if (i > 0) ifd_hbuf_put(&b, ",", 1);
    ifd_hbuf_puts(&b, "{\"name\":");
    put_text(&b, e[i].name);
    if (e[i].version >= 0) {
      ifd_hbuf_puts(&b, ",\"version\":");
      put_version(&b, e[i].version);
    }
    /* A model never loaded (explicit mode) is listed by name only. */
    if (e[i].state != NULL) {
      ifd_hbuf_puts(&b, ",\"state\":");
      put_text(&b, e[i].state);
    }
    if (e[i].reason != NULL) {
      ifd_hbuf_puts(&b, ",\"reason\":");
      put_text(&b, e[i].reason);
    }
    ifd_hbuf_put(&b, "}", 1);
  }
  ifd_hbuf_put(&b, "]", 1);
  return finish(&b, len);
}

char *ifd_render_model_config(const ifd_model_t *m, size_t *len) {
  const size_t flags = JSON_COMPACT | JSON_ENCODE_ANY;
  json_t *j = ifd_config_to_json(m->config);
  ifd_hbuf_t b;
  size_t n;

  if (j == NULL) return NULL;
  ifd_hbuf_init(&b, 0);
  n = json_dumpb(j, NULL, 0, flags);
  if (n == 0 || ifd_hbuf_reserve(&b, n) != 0) {
    json_decref(j);
    b.oom = 1;
    return finish(&b, len);
  }
  b.len += json_dumpb(j, b.data + b.len, n, flags);
  json_decref(j);
  return finish(&b, len);
}
