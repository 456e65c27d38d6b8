/*
 * core/render_json.h - the JSON text of the server's metadata, a model's
 * metadata and configuration, statistics and the repository index.
 *
 * Triton answers these with the same JSON whether a client asks over HTTP
 * (GET /v2, /v2/models/m, /v2/models/m/config, /v2/models/stats, POST
 * /v2/repository/index) or in process (TRITONSERVER_ServerMetadata,
 * ServerModelMetadata, ServerModelConfig, ServerModelStatistics,
 * ServerModelIndex). Both edges render through here, so the layouts exist
 * once: field order and number spelling as tritonserver writes them
 * (counters and durations are JSON numbers, versions are strings), and every
 * name well-formed UTF-8 (base/utf8.h).
 *
 * Each function returns a malloc'd, NUL-terminated string (the caller frees
 * it) and its length in *len, or NULL when out of memory. Call them on the
 * loop thread while the borrowed registry data they read is valid.
 */
#ifndef IFD_CORE_RENDER_JSON_H
#define IFD_CORE_RENDER_JSON_H

#include <stddef.h>

#include "core/server.h"

/** {"name":..,"version":..,"extensions":[..]} */
char *ifd_render_server_info(const ifd_server_info_t *info, size_t *len);

/** {"name":..,"versions":[..],"platform":..,"inputs":[..],"outputs":[..]} */
char *ifd_render_model_info(const ifd_model_info_t *info, size_t *len);

/** {"model_stats":[..]}: `n` entries of ifd_server_stats. */
char *ifd_render_stats(const ifd_stats_entry_t *e, size_t n, size_t *len);

/** [{"name":..,"version":..,"state":..,"reason":..},..]: `n` rows of
 *  ifd_server_repository_index. */
char *ifd_render_repo_index(const ifd_index_entry_t *e, size_t n, size_t *len);

/** The model configuration as protobuf's JSON mapping, in Triton's field
 *  order (ifd_config_to_json), compact. */
char *ifd_render_model_config(const ifd_model_t *m, size_t *len);

#endif
