/*
 * backend_api/request/tb_response_read.c - reading a response back:
 * TRITONBACKEND_InferenceResponseOutput and _OutputByName.
 *
 * A backend may list the outputs of a response it built (custom batchers and
 * the Python backend do). A TRITONBACKEND_Response is an ifd_response_t, so
 * these are read straight from it. Triton's header marks
 * InferenceResponseOutputByName as backend-implemented (ISPEC), but Triton's
 * server defines it and backends call it, so it is defined here too.
 */
#include "backend_api/internal.h"

#include <string.h>

#include "core/infer.h"

TRITONSERVER_Error *TRITONBACKEND_InferenceResponseOutput(
    TRITONBACKEND_Response *response, const uint32_t index, const char **name,
    TRITONSERVER_DataType *datatype, const int64_t **shape,
    uint64_t *dim_count) {
  const ifd_response_t *resp = (const ifd_response_t *)response;
  const ifd_output_t *o;
  ARG_CHECK(response != NULL && name != NULL && datatype != NULL &&
            shape != NULL && dim_count != NULL);
  if (index >= resp->n_outputs)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "response output index out of range");
  o = &resp->outputs[index];
  *name = o->name;
  *datatype = (TRITONSERVER_DataType)o->dtype;
  *shape = o->shape;
  *dim_count = o->ndims;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_InferenceResponseOutputByName(
    TRITONBACKEND_Response *response, const char *name,
    TRITONSERVER_DataType *datatype, const int64_t **shape,
    uint64_t *dim_count) {
  const ifd_response_t *resp = (const ifd_response_t *)response;
  uint32_t i;
  ARG_CHECK(response != NULL && name != NULL && datatype != NULL &&
            shape != NULL && dim_count != NULL);
  for (i = 0; i < resp->n_outputs; i++) {
    const ifd_output_t *o = &resp->outputs[i];
    if (strcmp(o->name, name) != 0) continue;
    *datatype = (TRITONSERVER_DataType)o->dtype;
    *shape = o->shape;
    *dim_count = o->ndims;
    return NULL;
  }
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_NOT_FOUND,
                               "response has no output of that name");
}
