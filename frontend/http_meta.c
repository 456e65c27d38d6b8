/*
 * frontend/http_meta.c - the JSON bodies of the metadata, configuration,
 * statistics and repository index routes.
 *
 * The layouts live in core (core/render_json.c), which the in-process API
 * renders through as well, so an HTTP client and an embedding application
 * read the same text. Here the text only lands in the response buffer. The
 * gRPC service fills its protobuf messages from the same structs.
 */
#include <stdlib.h>

#include "core/render_json.h"
#include "frontend/internal.h"

/* Appends a rendered text and frees it; NULL (out of memory) marks `b`. */
static void put_owned(ifd_hbuf_t *b, char *text, size_t len) {
  if (text == NULL) {
    b->oom = 1;
    return;
  }
  ifd_hbuf_put(b, text, len);
  free(text);
}

void ifd__json_server_info(ifd_hbuf_t *b, const ifd_server_info_t *info) {
  size_t len;
  char *text = ifd_render_server_info(info, &len);
  put_owned(b, text, len);
}

void ifd__json_model_info(ifd_hbuf_t *b, const ifd_model_info_t *info) {
  size_t len;
  char *text = ifd_render_model_info(info, &len);
  put_owned(b, text, len);
}

void ifd__json_model_config(ifd_hbuf_t *b, const ifd_model_t *m) {
  size_t len;
  char *text = ifd_render_model_config(m, &len);
  put_owned(b, text, len);
}

void ifd__json_stats(ifd_hbuf_t *b, const ifd_stats_entry_t *e, size_t n) {
  size_t len;
  char *text = ifd_render_stats(e, n, &len);
  put_owned(b, text, len);
}

void ifd__json_repo_index(ifd_hbuf_t *b, const ifd_index_entry_t *e, size_t n) {
  size_t len;
  char *text = ifd_render_repo_index(e, n, &len);
  put_owned(b, text, len);
}
