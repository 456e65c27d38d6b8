/*
 * frontend/trace_api.h - the trace extension's settings API over HTTP (GET/POST
 * /v2[/models/<m>]/trace/setting) and gRPC (TraceSetting), over the
 * settings of core/trace.h. Loop thread.
 */
#ifndef IFD_FRONTEND_TRACE_API_H
#define IFD_FRONTEND_TRACE_API_H

#include <stddef.h>
#include <stdint.h>

#include "frontend/grpc_infer.h"
#include "frontend/internal.h"

/** Answers GET (the setting of m->model, or the global one) or POST
 *  (changes, then the setting). The body stays the caller's. */
void ifd__http_trace(ifd_server_t *srv, ifd_http_slot_t *s,
                     const ifd_route_match_t *m, const ifd_http_msg_t *msg);

/** The TraceSetting RPC (takes `msg`). */
void ifd__grpc_trace_setting(ifd_gstream_t *st, uint8_t *msg, size_t len);

#endif
