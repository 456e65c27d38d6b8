/*
 * backend_api/state/tb_state.c - TRITONBACKEND_State*: the implicit state of a
 * sequence model, as the backend sees it.
 *
 * The model config lists the states (sequence_batching.state); a backend
 * names one by its output_name. While it runs a request it may create a
 * state object (StateNew: data type and shape of the next value), get a
 * buffer for the value (StateBuffer: a fresh ifd_blob_t, CPU memory) and
 * publish it (StateUpdate: the blob passes to the sequence's
 * ifd_seq_state_t, which the sequence batcher folds into the next request of
 * the sequence). A state that is never updated leaves the sequence's value
 * as it was.
 *
 * The ABI has no StateDelete: a state object lives as long as its request.
 * Each is malloc'd and attached to the request (req->attached, a lock-free
 * list, as a backend may run a batch's requests on several threads), and
 * request_free drops it on the loop thread after the release. A blob that
 * StateBuffer handed out and StateUpdate never published goes with it.
 *
 * A request without req->seq_state but of a model with states is a null
 * request filling an empty batch slot (or the state of its sequence is gone):
 * its states are created and updated as any other, and the value is dropped.
 * This mirrors Triton, which gives null requests a throw-away copy.
 *
 * Departures from Triton 2.47, which checks less: a data type other than the
 * config's is refused by StateNew (Triton would feed the next request that
 * type), and StateUpdate refuses a buffer whose size does not fit the shape
 * (or, for BYTES, that does not hold the shape's element count in Triton's
 * length-prefixed format), so the next request never gets an input whose
 * bytes disagree with its shape; updating without a buffer is refused too
 * unless the shape holds no bytes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_api/internal.h"
#include "core/config.h"
#include "core/infer.h"
#include "core/model.h"
#include "core/seqstate.h"

struct TRITONBACKEND_State {
  ifd_req_attach_t link; /* first: the request's list of attached objects */
  ifd_request_t *req;    /* borrowed: owns this object */
  uint32_t index;        /* position of the state in sequence_batching.state */
  const char *name;      /* borrowed: the config's output_name */
  ifd_dtype_t dtype;
  uint32_t ndims;
  int64_t shape[IFD_MAX_DIMS];
  ifd_blob_t *blob;   /* owned: StateBuffer's buffer, until StateUpdate
                         passes it on; NULL before StateBuffer and after */
  uint64_t byte_size; /* of the last buffer handed out (0: none) */
  int updated;        /* StateUpdate succeeded: the object is spent */
};

_Static_assert(_Alignof(struct TRITONBACKEND_State) >= 4,
               "buffer attribute views need two free low bits");

/* Runs in request_free (loop thread): an unpublished buffer goes too. */
static void state_drop(ifd_req_attach_t *a) {
  TRITONBACKEND_State *st = (TRITONBACKEND_State *)a;
  ifd_blob_unref(st->blob);
  free(st);
}

uint64_t ifd__state_buffer_size(const TRITONBACKEND_State *state) {
  return state->byte_size;
}

/* The state of `req`'s model whose output_name is `name`: its index, or -1
 * with *err set (no state section, or no such state). */
static int64_t find_state(const ifd_request_t *req, const char *name,
                          TRITONSERVER_Error **err /* OUT */) {
  const Inference__ModelSequenceBatching *sb =
      req->model != NULL ? ifd_config_sequence(req->model->config) : NULL;
  const char *model = req->model != NULL ? req->model->name : "";
  size_t i;

  if (sb == NULL || sb->n_state == 0) {
    *err =
        ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                    "unable to add state '%s'. State configuration is missing "
                    "for model '%s'.",
                    name, model);
    return -1;
  }
  for (i = 0; i < sb->n_state; i++)
    if (strcmp(sb->state[i]->output_name, name) == 0) return (int64_t)i;
  *err = ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                     "state '%s' is not a valid state name.", name);
  return -1;
}

/* A state object already made for this request and state: Triton hands out
 * one object per state name and request. Entries are never removed while the
 * request runs, so reading the list beside a concurrent push is safe. */
static TRITONBACKEND_State *find_object(ifd_request_t *req, uint32_t index) {
  ifd_req_attach_t *a;
  for (a = atomic_load_explicit(&req->attached, memory_order_acquire);
       a != NULL; a = a->next) {
    TRITONBACKEND_State *st = (TRITONBACKEND_State *)a;
    if (a->drop == state_drop && st->index == index) return st;
  }
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_StateNew(TRITONBACKEND_State **state,
                                           TRITONBACKEND_Request *request,
                                           const char *name,
                                           const TRITONSERVER_DataType datatype,
                                           const int64_t *shape,
                                           const uint32_t dims_count) {
  ifd_request_t *req = (ifd_request_t *)request;
  const Inference__ModelSequenceBatching__State *cfg;
  TRITONSERVER_Error *err = NULL;
  TRITONBACKEND_State *st;
  int64_t index;
  uint32_t i;

  ARG_CHECK(state != NULL);
  *state = NULL;
  ARG_CHECK(request != NULL && name != NULL);
  ARG_CHECK(shape != NULL || dims_count == 0);
  index = find_state(req, name, &err);
  if (index < 0) return err;
  cfg = ifd_config_sequence(req->model->config)->state[index];
  if ((int)datatype != (int)cfg->data_type)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "unexpected datatype %s for state '%s' of model '%s': "
                       "the model configuration says %s",
                       ifd_dtype_name((ifd_dtype_t)datatype), name,
                       req->model->name,
                       ifd_dtype_config_name((ifd_dtype_t)cfg->data_type));
  if (dims_count > IFD_MAX_DIMS)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "state '%s' has %u dimensions, at most %d are supported",
                       name, dims_count, IFD_MAX_DIMS);
  for (i = 0; i < dims_count; i++)
    if (shape[i] < 0)
      return ifd__errorf(
          TRITONSERVER_ERROR_INVALID_ARG,
          "state '%s': dimension %u of its shape is %lld, a shape "
          "must be fully specified",
          name, i, (long long)shape[i]);
  if (req->seq_state != NULL && (uint32_t)index >= req->seq_state->n)
    return ifd__errorf(TRITONSERVER_ERROR_INTERNAL,
                       "state '%s' has no entry in the sequence's state", name);

  st = find_object(req, (uint32_t)index);
  if (st != NULL) {
    /* Asked again: the same object with the new type and shape, and the
     * buffer it has (Triton keeps it too); spent by an update, it starts
     * afresh. */
    if (st->updated) {
      st->byte_size = 0;
      st->updated = 0;
    }
  } else {
    ifd_req_attach_t *head;
    st = calloc(1, sizeof(*st));
    if (st == NULL)
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                   "out of memory");
    st->link.drop = state_drop;
    st->req = req;
    st->index = (uint32_t)index;
    st->name = cfg->output_name;
    head = atomic_load_explicit(&req->attached, memory_order_relaxed);
    do {
      st->link.next = head;
    } while (!atomic_compare_exchange_weak_explicit(
        &req->attached, &head, &st->link, memory_order_release,
        memory_order_relaxed));
  }
  st->dtype = (ifd_dtype_t)datatype;
  st->ndims = dims_count;
  if (dims_count > 0) memcpy(st->shape, shape, dims_count * sizeof(*shape));
  *state = st;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_StateBuffer(
    TRITONBACKEND_State *state, void **buffer, const uint64_t buffer_byte_size,
    TRITONSERVER_MemoryType *memory_type, int64_t *memory_type_id) {
  ARG_CHECK(buffer != NULL);
  *buffer = NULL;
  ARG_CHECK(state != NULL && memory_type != NULL && memory_type_id != NULL);
  if (state->updated)
    return ifd__errorf(
        TRITONSERVER_ERROR_INVALID_ARG,
        "state '%s' was already updated: its buffer can no longer "
        "be used",
        state->name);
  /* The same size again reuses the buffer, as in Triton. */
  if (state->blob == NULL || state->blob->size != buffer_byte_size) {
    ifd_blob_t *b = ifd_blob_new(buffer_byte_size, 0);
    if (b == NULL)
      return ifd__errorf(TRITONSERVER_ERROR_INTERNAL,
                         "unable to allocate %llu bytes for state '%s'",
                         (unsigned long long)buffer_byte_size, state->name);
    ifd_blob_unref(state->blob);
    state->blob = b;
  }
  state->byte_size = buffer_byte_size;
  /* Only CPU memory: a caller that asked for another kind is told what it
   * got, which the ABI allows. */
  *memory_type = TRITONSERVER_MEMORY_CPU;
  *memory_type_id = 0;
  *buffer = state->blob->data;
  return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_StateUpdate(TRITONBACKEND_State *state) {
  ifd_request_t *req;
  ifd_blob_t *b;
  int64_t count = 0;
  char dims[128];

  ARG_CHECK(state != NULL);
  req = state->req;
  if (state->updated)
    return ifd__errorf(TRITONSERVER_ERROR_INVALID_ARG,
                       "state '%s' was already updated", state->name);
  if (ifd_shape_count(state->shape, state->ndims, &count) < 0)
    return ifd__errorf(
        TRITONSERVER_ERROR_INVALID_ARG, "state '%s': its shape %s is too large",
        state->name,
        ifd_shape_format(state->shape, state->ndims, dims, sizeof(dims)));
  if (state->blob == NULL) {
    /* Nothing to hold is fine without a buffer; otherwise the value would
     * be undefined. */
    if (count != 0)
      return ifd__errorf(
          TRITONSERVER_ERROR_INVALID_ARG,
          "state '%s' has no buffer: call TRITONBACKEND_StateBuffer "
          "before TRITONBACKEND_StateUpdate",
          state->name);
    state->blob = ifd_blob_new(0, 0);
    if (state->blob == NULL)
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                   "out of memory");
  }
  b = state->blob;
  if (state->dtype == IFD_TYPE_BYTES) {
    if (ifd_bytes_validate(b->data, (size_t)b->size, count) < 0)
      return ifd__errorf(
          TRITONSERVER_ERROR_INVALID_ARG,
          "state '%s': its %llu-byte buffer does not hold the %lld "
          "BYTES elements of shape %s",
          state->name, (unsigned long long)b->size, (long long)count,
          ifd_shape_format(state->shape, state->ndims, dims, sizeof(dims)));
  } else {
    int64_t want = 0;
    if (ifd_shape_byte_size(state->dtype, state->shape, state->ndims, &want) <
            0 ||
        (uint64_t)want != b->size)
      return ifd__errorf(
          TRITONSERVER_ERROR_INVALID_ARG,
          "state '%s': its buffer holds %llu bytes, shape %s of %s "
          "needs %lld",
          state->name, (unsigned long long)b->size,
          ifd_shape_format(state->shape, state->ndims, dims, sizeof(dims)),
          ifd_dtype_name(state->dtype), (long long)want);
  }
  b->dtype = state->dtype;
  b->ndims = state->ndims;
  if (state->ndims > 0)
    memcpy(b->shape, state->shape, state->ndims * sizeof(*state->shape));
  state->blob = NULL;
  state->updated = 1;
  if (req->seq_state != NULL)
    ifd_seq_state_publish(req->seq_state, state->index, b); /* ref passes */
  else
    ifd_blob_unref(b); /* a null request: the value goes nowhere */
  return NULL;
}

/* The attributes are a read-only view of the state (see
 * TRITONSERVER_BufferAttributes in memory/tb_memory.c): CPU memory of id 0,
 * the size of the last buffer StateBuffer handed out. */
TRITONSERVER_Error *TRITONBACKEND_StateBufferAttributes(
    TRITONBACKEND_State *state,
    TRITONSERVER_BufferAttributes **buffer_attributes) {
  ARG_CHECK(state != NULL && buffer_attributes != NULL);
  *buffer_attributes = ifd__state_buffer_attributes(state);
  return NULL;
}
