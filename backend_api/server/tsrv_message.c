/*
 * backend_api/server/tsrv_message.c - TRITONSERVER_Message: an owned JSON
 * string.
 *
 * The text is stored NUL-terminated so callers that treat it as a C string
 * (several backends print it with "%s") stay safe.
 */
#include "backend_api/internal.h"

#include <stdlib.h>
#include <string.h>

TRITONSERVER_Message *ifd__message_new_owned(char *json, size_t len) {
  if (json == NULL) return NULL;
  TRITONSERVER_Message *m = malloc(sizeof(*m));
  if (m == NULL) {
    free(json);
    return NULL;
  }
  m->json = json;
  m->len = len;
  return m;
}

TRITONSERVER_Error *TRITONSERVER_MessageNewFromSerializedJson(
    TRITONSERVER_Message **message, const char *base, size_t byte_size) {
  if (message == NULL || (base == NULL && byte_size > 0))
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "message and base must not be NULL");
  char *copy = malloc(byte_size + 1);
  if (copy == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 "out of memory copying message");
  if (byte_size > 0) memcpy(copy, base, byte_size);
  copy[byte_size] = '\0';
  *message = ifd__message_new_owned(copy, byte_size);
  if (*message == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 "out of memory creating message");
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_MessageDelete(TRITONSERVER_Message *message) {
  if (message != NULL) {
    free(message->json);
    free(message);
  }
  return NULL;
}

TRITONSERVER_Error *TRITONSERVER_MessageSerializeToJson(
    TRITONSERVER_Message *message, const char **base, size_t *byte_size) {
  if (message == NULL || base == NULL || byte_size == NULL)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "message, base and byte_size are required");
  *base = message->json;
  *byte_size = message->len;
  return NULL;
}
