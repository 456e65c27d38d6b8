/*
 * net/http_meta.c - the JSON bodies of the metadata, statistics and
 * repository index routes, written from core's plain structs.
 *
 * Core hands out data (core/server.h); how it looks on the wire is decided
 * here, once, in the field order and number spelling tritonserver uses:
 * counters and durations are JSON numbers, versions are strings. The gRPC
 * service fills its protobuf messages from the same structs.
 */
#include <inttypes.h>
#include <string.h>

#include "net/internal.h"

static void put_text(ifd_hbuf_t *b, const char *s) {
  ifd__json_text(b, s, strlen(s));
}

/* A version as Triton spells it in metadata: a string. */
static void put_version(ifd_hbuf_t *b, int64_t v) {
  ifd__hbuf_printf(b, "\"%" PRId64 "\"", v);
}

void ifd__json_server_info(ifd_hbuf_t *b, const ifd_server_info_t *info) {
  size_t i;

  ifd__hbuf_puts(b, "{\"name\":");
  put_text(b, info->name);
  ifd__hbuf_puts(b, ",\"version\":");
  put_text(b, info->version);
  ifd__hbuf_puts(b, ",\"extensions\":[");
  for (i = 0; i < info->n_extensions; i++) {
    if (i > 0) ifd__hbuf_put(b, ",", 1);
    put_text(b, info->extensions[i]);
  }
  ifd__hbuf_puts(b, "]}");
}

static void put_tensors(ifd_hbuf_t *b, const ifd_tensor_info_t *t, size_t n) {
  size_t i, k;

  ifd__hbuf_put(b, "[", 1);
  for (i = 0; i < n; i++) {
    if (i > 0) ifd__hbuf_put(b, ",", 1);
    ifd__hbuf_puts(b, "{\"name\":");
    put_text(b, t[i].name);
    ifd__hbuf_puts(b, ",\"datatype\":");
    put_text(b, ifd_dtype_name(t[i].dtype));
    ifd__hbuf_puts(b, ",\"shape\":[");
    for (k = 0; k < t[i].n_shape; k++)
      ifd__hbuf_printf(b, k > 0 ? ",%" PRId64 : "%" PRId64, t[i].shape[k]);
    ifd__hbuf_puts(b, "]}");
  }
  ifd__hbuf_put(b, "]", 1);
}

void ifd__json_model_info(ifd_hbuf_t *b, const ifd_model_info_t *info) {
  size_t i;

  ifd__hbuf_puts(b, "{\"name\":");
  put_text(b, info->name);
  ifd__hbuf_puts(b, ",\"versions\":[");
  for (i = 0; i < info->n_versions; i++) {
    if (i > 0) ifd__hbuf_put(b, ",", 1);
    put_version(b, info->versions[i]);
  }
  ifd__hbuf_puts(b, "],\"platform\":");
  put_text(b, info->platform);
  ifd__hbuf_puts(b, ",\"inputs\":");
  put_tensors(b, info->inputs, info->n_inputs);
  ifd__hbuf_puts(b, ",\"outputs\":");
  put_tensors(b, info->outputs, info->n_outputs);
  ifd__hbuf_put(b, "}", 1);
}

/* "key":{"count":c,"ns":n} */
static void put_duration(ifd_hbuf_t *b, const char *key,
                         const ifd_duration_t *d) {
  ifd__hbuf_printf(b, "\"%s\":{\"count\":%" PRIu64 ",\"ns\":%" PRIu64 "}", key,
                   d->count, d->ns);
}

static void put_model_stats(ifd_hbuf_t *b, const ifd_stats_entry_t *e) {
  const ifd_model_stats_t *st = e->stats;
  size_t i;

  ifd__hbuf_puts(b, "{\"name\":");
  put_text(b, e->name);
  ifd__hbuf_puts(b, ",\"version\":");
  put_version(b, e->version);
  ifd__hbuf_printf(
      b,
      ",\"last_inference\":%" PRIu64 ",\"inference_count\":%" PRIu64
      ",\"execution_count\":%" PRIu64 ",\"inference_stats\":{",
      st->last_inference_ms, st->inference_count, st->execution_count);
  put_duration(b, "success", &st->success);
  ifd__hbuf_put(b, ",", 1);
  put_duration(b, "fail", &st->fail);
  ifd__hbuf_put(b, ",", 1);
  put_duration(b, "queue", &st->queue);
  ifd__hbuf_put(b, ",", 1);
  put_duration(b, "compute_input", &st->compute_input);
  ifd__hbuf_put(b, ",", 1);
  put_duration(b, "compute_infer", &st->compute_infer);
  ifd__hbuf_put(b, ",", 1);
  put_duration(b, "compute_output", &st->compute_output);
  ifd__hbuf_put(b, ",", 1);
  put_duration(b, "cache_hit", &st->cache_hit);
  ifd__hbuf_put(b, ",", 1);
  put_duration(b, "cache_miss", &st->cache_miss);
  /* Decoupled response statistics and memory usage are not collected yet:
   * present and empty, as tritonserver writes them for such models. */
  ifd__hbuf_puts(b, "},\"response_stats\":{},\"batch_stats\":[");
  for (i = 0; i < st->n_batches; i++) {
    const ifd_batch_stats_t *bs = &st->batches[i];
    ifd__hbuf_printf(b,
                     i > 0 ? ",{\"batch_size\":%" PRIu64 ","
                           : "{\"batch_size\":%" PRIu64 ",",
                     bs->batch_size);
    put_duration(b, "compute_input", &bs->compute_input);
    ifd__hbuf_put(b, ",", 1);
    put_duration(b, "compute_infer", &bs->compute_infer);
    ifd__hbuf_put(b, ",", 1);
    put_duration(b, "compute_output", &bs->compute_output);
    ifd__hbuf_put(b, "}", 1);
  }
  ifd__hbuf_puts(b, "],\"memory_usage\":[");
  {
    /* What the backend reported its model and instances hold. */
    ifd_mem_usage_t mu[IFD_STATS_MEM_SLOTS];
    size_t k, nmu = ifd_stats_memory_usage(st, mu, IFD_STATS_MEM_SLOTS);
    for (k = 0; k < nmu; k++)
      ifd__hbuf_printf(
          b, "%s{\"type\":\"%s\",\"id\":%" PRId64 ",\"byte_size\":%" PRIu64 "}",
          k > 0 ? "," : "", mu[k].type, mu[k].id, mu[k].byte_size);
  }
  ifd__hbuf_puts(b, "]}");
}

void ifd__json_stats(ifd_hbuf_t *b, const ifd_stats_entry_t *e, size_t n) {
  size_t i;

  ifd__hbuf_puts(b, "{\"model_stats\":[");
  for (i = 0; i < n; i++) {
    if (i > 0) ifd__hbuf_put(b, ",", 1);
    put_model_stats(b, &e[i]);
  }
  ifd__hbuf_puts(b, "]}");
}

void ifd__json_repo_index(ifd_hbuf_t *b, const ifd_index_entry_t *e, size_t n) {
  size_t i;

  ifd__hbuf_put(b, "[", 1);
  for (i = 0; i < n; i++) {
    if (i > 0) ifd__hbuf_put(b, ",", 1);
    ifd__hbuf_puts(b, "{\"name\":");
    put_text(b, e[i].name);
    if (e[i].version >= 0) {
      ifd__hbuf_puts(b, ",\"version\":");
      put_version(b, e[i].version);
    }
    /* A model never loaded (explicit mode) is listed by name only. */
    if (e[i].state != NULL) {
      ifd__hbuf_puts(b, ",\"state\":");
      put_text(b, e[i].state);
    }
    if (e[i].reason != NULL) {
      ifd__hbuf_puts(b, ",\"reason\":");
      put_text(b, e[i].reason);
    }
    ifd__hbuf_put(b, "}", 1);
  }
  ifd__hbuf_put(b, "]", 1);
}
