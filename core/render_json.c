/*
 * core/render_json.c - the JSON text of metadata, configuration, statistics
 * and the repository index (see render_json.h).
 *
 * Written as text into one growable buffer rather than built as a jansson
 * tree: a statistics answer for hundreds of models stays one allocation
 * sequence, and the number spelling is under our control. An allocation
 * failure sets `oom` and later appends do nothing, so each renderer checks
 * once at the end.
 */
#include "core/render_json.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/dtype.h"
#include "core/model.h"
#include "core/stats.h"
#include "base/utf8.h"

typedef struct jbuf {
  char *data; /* owned (malloc'd); handed to the caller by finish() */
  size_t len;
  size_t cap;
  int oom;
} jbuf_t;

static int reserve(jbuf_t *b, size_t n) {
  size_t cap;
  char *p;

  if (b->oom) return -1;
  /* One more byte for the NUL that finish() writes. */
  if (n > SIZE_MAX - b->len - 1) goto out_oom;
  if (b->len + n + 1 <= b->cap) return 0;
  cap = b->cap != 0 ? b->cap : 512;
  while (cap < b->len + n + 1) {
    if (cap > SIZE_MAX / 2) {
      cap = b->len + n + 1;
      break;
    }
    cap *= 2;
  }
  p = realloc(b->data, cap);
  if (p == NULL) goto out_oom;
  b->data = p;
  b->cap = cap;
  return 0;

out_oom:
  b->oom = 1;
  return -1;
}

static void put(jbuf_t *b, const char *p, size_t n) {
  if (n == 0 || reserve(b, n) != 0) return;
  memcpy(b->data + b->len, p, n);
  b->len += n;
}

static void puts_(jbuf_t *b, const char *s) {
  put(b, s, strlen(s));
}

static void printf_(jbuf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void printf_(jbuf_t *b, const char *fmt, ...) {
  char tmp[160];
  va_list ap;
  int n;

  va_start(ap, fmt);
  n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
  va_end(ap);
  /* Every format here prints a few numbers: it always fits. */
  if (n < 0 || (size_t)n >= sizeof(tmp)) {
    b->oom = 1;
    return;
  }
  put(b, tmp, (size_t)n);
}

/* `s` (n bytes, well-formed UTF-8) as a quoted JSON string. */
static void put_escaped(jbuf_t *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  size_t i, run = 0;

  put(b, "\"", 1);
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    char esc[6] = {'\\', 0, '0', '0', 0, 0};
    size_t elen = 2;
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    put(b, s + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
      case '\\':
        esc[1] = (char)c;
        break;
      case '\n':
        esc[1] = 'n';
        break;
      case '\r':
        esc[1] = 'r';
        break;
      case '\t':
        esc[1] = 't';
        break;
      case '\b':
        esc[1] = 'b';
        break;
      case '\f':
        esc[1] = 'f';
        break;
      default:
        esc[1] = 'u';
        esc[4] = hex[c >> 4];
        esc[5] = hex[c & 15];
        elen = 6;
    }
    put(b, esc, elen);
  }
  put(b, s + run, n - run);
  put(b, "\"", 1);
}

/* Text (a name, a state, a reason) as a JSON string that is always
 * well-formed UTF-8: each byte of an ill-formed sequence becomes U+FFFD. */
static void put_text(jbuf_t *b, const char *s) {
  size_t n = strlen(s);
  char *tmp;

  if (ifd_utf8_valid(s, n)) {
    put_escaped(b, s, n);
    return;
  }
  /* Ill-formed: rare, so a repaired copy is fine. */
  if (n > SIZE_MAX / 3 || (tmp = malloc(n * 3)) == NULL) {
    b->oom = 1;
    return;
  }
  put_escaped(b, tmp, ifd_utf8_repair(s, n, tmp));
  free(tmp);
}

/* A version as Triton spells it in metadata: a string. */
static void put_version(jbuf_t *b, int64_t v) {
  printf_(b, "\"%" PRId64 "\"", v);
}

/* Hands the text to the caller, or frees it when an append failed. */
static char *finish(jbuf_t *b, size_t *len) {
  if (b->data == NULL && !b->oom) reserve(b, 0);
  if (b->oom) {
    free(b->data);
    *len = 0;
    return NULL;
  }
  b->data[b->len] = '\0';
  *len = b->len;
  return b->data;
}

char *ifd_render_server_info(const ifd_server_info_t *info, size_t *len) {
  jbuf_t b = {0};
  size_t i;

  puts_(&b, "{\"name\":");
  put_text(&b, info->name);
  puts_(&b, ",\"version\":");
  put_text(&b, info->version);
  puts_(&b, ",\"extensions\":[");
  for (i = 0; i < info->n_extensions; i++) {
    if (i > 0) put(&b, ",", 1);
    put_text(&b, info->extensions[i]);
  }
  puts_(&b, "]}");
  return finish(&b, len);
}

static void put_tensors(jbuf_t *b, const ifd_tensor_info_t *t, size_t n) {
  size_t i, k;

  put(b, "[", 1);
  for (i = 0; i < n; i++) {
    if (i > 0) put(b, ",", 1);
    puts_(b, "{\"name\":");
    put_text(b, t[i].name);
    puts_(b, ",\"datatype\":");
    put_text(b, ifd_dtype_name(t[i].dtype));
    puts_(b, ",\"shape\":[");
    for (k = 0; k < t[i].n_shape; k++)
      printf_(b, k > 0 ? ",%" PRId64 : "%" PRId64, t[i].shape[k]);
    puts_(b, "]}");
  }
  put(b, "]", 1);
}

char *ifd_render_model_info(const ifd_model_info_t *info, size_t *len) {
  jbuf_t b = {0};
  size_t i;

  puts_(&b, "{\"name\":");
  put_text(&b, info->name);
  puts_(&b, ",\"versions\":[");
  for (i = 0; i < info->n_versions; i++) {
    if (i > 0) put(&b, ",", 1);
    put_version(&b, info->versions[i]);
  }
  puts_(&b, "],\"platform\":");
  put_text(&b, info->platform);
  puts_(&b, ",\"inputs\":");
  put_tensors(&b, info->inputs, info->n_inputs);
  puts_(&b, ",\"outputs\":");
  put_tensors(&b, info->outputs, info->n_outputs);
  put(&b, "}", 1);
  return finish(&b, len);
}

/* "key":{"count":c,"ns":n} */
static void put_duration(jbuf_t *b, const char *key, const ifd_duration_t *d) {
  printf_(b, "\"%s\":{\"count\":%" PRIu64 ",\"ns\":%" PRIu64 "}", key, d->count,
          d->ns);
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
static void put_response_stats(jbuf_t *b, const ifd_model_stats_t *st) {
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
    printf_(b, "%s\"%zu\":{", i > 0 ? "," : "", order[i]);
    put_duration(b, "compute_infer", &r->compute_infer);
    put(b, ",", 1);
    put_duration(b, "compute_output", &r->compute_output);
    put(b, ",", 1);
    put_duration(b, "success", &r->success);
    put(b, ",", 1);
    put_duration(b, "fail", &r->fail);
    put(b, ",", 1);
    put_duration(b, "empty_response", &r->empty_response);
    put(b, ",", 1);
    put_duration(b, "cancel", &r->cancel);
    put(b, "}", 1);
  }
  free(order);
}

static void put_model_stats(jbuf_t *b, const ifd_stats_entry_t *e) {
  const ifd_model_stats_t *st = e->stats;
  ifd_mem_usage_t mu[IFD_STATS_MEM_SLOTS];
  size_t i, nmu;

  puts_(b, "{\"name\":");
  put_text(b, e->name);
  puts_(b, ",\"version\":");
  put_version(b, e->version);
  printf_(b,
          ",\"last_inference\":%" PRIu64 ",\"inference_count\":%" PRIu64
          ",\"execution_count\":%" PRIu64 ",\"inference_stats\":{",
          st->last_inference_ms, st->inference_count, st->execution_count);
  put_duration(b, "success", &st->success);
  put(b, ",", 1);
  put_duration(b, "fail", &st->fail);
  put(b, ",", 1);
  put_duration(b, "queue", &st->queue);
  put(b, ",", 1);
  put_duration(b, "compute_input", &st->compute_input);
  put(b, ",", 1);
  put_duration(b, "compute_infer", &st->compute_infer);
  put(b, ",", 1);
  put_duration(b, "compute_output", &st->compute_output);
  put(b, ",", 1);
  put_duration(b, "cache_hit", &st->cache_hit);
  put(b, ",", 1);
  put_duration(b, "cache_miss", &st->cache_miss);
  puts_(b, "},\"response_stats\":{");
  put_response_stats(b, st);
  puts_(b, "},\"batch_stats\":[");
  for (i = 0; i < st->n_batches; i++) {
    const ifd_batch_stats_t *bs = &st->batches[i];
    printf_(b, "%s{\"batch_size\":%" PRIu64 ",", i > 0 ? "," : "",
            bs->batch_size);
    put_duration(b, "compute_input", &bs->compute_input);
    put(b, ",", 1);
    put_duration(b, "compute_infer", &bs->compute_infer);
    put(b, ",", 1);
    put_duration(b, "compute_output", &bs->compute_output);
    put(b, "}", 1);
  }
  puts_(b, "],\"memory_usage\":[");
  /* What the backend reported its model and instances hold. */
  nmu = ifd_stats_memory_usage(st, mu, IFD_STATS_MEM_SLOTS);
  for (i = 0; i < nmu; i++)
    printf_(b,
            "%s{\"type\":\"%s\",\"id\":%" PRId64 ",\"byte_size\":%" PRIu64 "}",
            i > 0 ? "," : "", mu[i].type, mu[i].id, mu[i].byte_size);
  puts_(b, "]}");
}

char *ifd_render_stats(const ifd_stats_entry_t *e, size_t n, size_t *len) {
  jbuf_t b = {0};
  size_t i;

  puts_(&b, "{\"model_stats\":[");
  for (i = 0; i < n; i++) {
    if (i > 0) put(&b, ",", 1);
    put_model_stats(&b, &e[i]);
  }
  puts_(&b, "]}");
  return finish(&b, len);
}

char *ifd_render_repo_index(const ifd_index_entry_t *e, size_t n, size_t *len) {
  jbuf_t b = {0};
  size_t i;

  put(&b, "[", 1);
  for (i = 0; i < n; i++) {
    if (i > 0) put(&b, ",", 1);
    puts_(&b, "{\"name\":");
    put_text(&b, e[i].name);
    if (e[i].version >= 0) {
      puts_(&b, ",\"version\":");
      put_version(&b, e[i].version);
    }
    /* A model never loaded (explicit mode) is listed by name only. */
    if (e[i].state != NULL) {
      puts_(&b, ",\"state\":");
      put_text(&b, e[i].state);
    }
    if (e[i].reason != NULL) {
      puts_(&b, ",\"reason\":");
      put_text(&b, e[i].reason);
    }
    put(&b, "}", 1);
  }
  put(&b, "]", 1);
  return finish(&b, len);
}

char *ifd_render_model_config(const ifd_model_t *m, size_t *len) {
  const size_t flags = JSON_COMPACT | JSON_ENCODE_ANY;
  json_t *j = ifd_config_to_json(m->config);
  jbuf_t b = {0};
  size_t n;

  if (j == NULL) return NULL;
  n = json_dumpb(j, NULL, 0, flags);
  if (n == 0 || reserve(&b, n) != 0) {
    json_decref(j);
    b.oom = 1;
    return finish(&b, len);
  }
  b.len = json_dumpb(j, b.data, n, flags);
  json_decref(j);
  return finish(&b, len);
}
