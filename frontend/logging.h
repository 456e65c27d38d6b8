/*
 * frontend/logging.h - Triton's logging extension over HTTP (GET/POST
 * /v2/logging) and gRPC (LogSettings): read and change the log settings of
 * base/log.h at run time. Loop thread.
 */
#ifndef IFD_FRONTEND_LOGGING_H
#define IFD_FRONTEND_LOGGING_H

#include <stddef.h>
#include <stdint.h>

#include "frontend/grpc_infer.h"
#include "frontend/internal.h"

/** Answers GET (the settings) or POST (changes, then the settings) on
 *  /v2/logging. The body stays the caller's. */
void ifd__http_logging(ifd_http_slot_t *s, const ifd_http_msg_t *msg);

/** The LogSettings RPC (takes `msg`). */
void ifd__grpc_log_settings(ifd_gstream_t *st, uint8_t *msg, size_t len);

#endif
