/*
 * backend_api/include/inferd/inferd_backend.h - inferd's extensions to the
 * backend API (not in Triton's ABI).
 *
 * A backend that wants to run on Triton as well looks these up with
 * dlsym(RTLD_DEFAULT, "INFERD_...") and does without them when absent, so
 * that it never fails to load. inferd's Python backend uses them.
 */
#ifndef INFERD_BACKEND_H
#define INFERD_BACKEND_H

#include <stdbool.h>

#include "triton/core/tritonbackend.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Marks one instance of a model able (ready true) or unable (false) to serve,
 * from any thread; e.g. the Python backend while it restarts a stub process
 * that died. The model version reports not ready (v2/models/m[/versions/v]/
 * ready, gRPC ModelReady) while any of its instances is marked unable.
 * Requests are still accepted and queued meanwhile. Marking an instance twice
 * the same way changes nothing. Every instance starts ready.
 */
TRITONBACKEND_DECLSPEC TRITONSERVER_Error *INFERD_ModelInstanceSetReady(
    TRITONBACKEND_ModelInstance *instance, bool ready);

/** The signature, for dlsym(). */
typedef TRITONSERVER_Error *(*INFERD_ModelInstanceSetReadyFn_t)(
    TRITONBACKEND_ModelInstance *instance, bool ready);

#ifdef __cplusplus
}
#endif

#endif
