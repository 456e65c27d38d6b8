/*
 * core/seqstate.h - the implicit state of a sequence (sequence_batching
 * `state [...]`), shared by the sequence batcher (sched/, loop thread) and
 * the state ABI (backend_api/, instance threads).
 *
 * A state value is an ifd_blob_t: one allocation holding a reference count,
 * the tensor's shape and its bytes. Blobs are immutable once published and
 * are freed with their last reference, on any thread.
 *
 * Each live sequence of a model with states has an ifd_seq_state_t with one
 * entry per configured state. The loop reads `cur[i]` into the next request
 * of the sequence as the input `input_name` (the request takes a reference on
 * the blob); a backend that calls TRITONBACKEND_StateUpdate publishes a new
 * blob into `next[i]` (any thread, one atomic exchange); the loop folds
 * `next[i]` into `cur[i]` when it forms the sequence's next batch, which is
 * after the previous one finished. START resets `cur[i]` to the model's
 * initial value.
 */
#ifndef IFD_CORE_SEQSTATE_H
#define IFD_CORE_SEQSTATE_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/dtype.h"

/** A reference-counted tensor value. */
typedef struct ifd_blob {
  atomic_uint refs;
  ifd_dtype_t dtype;
  uint32_t ndims;
  int64_t shape[IFD_MAX_DIMS]; /* full shape, batch dim included if any */
  uint64_t size;               /* bytes at data */
  _Alignas(64) unsigned char data[];
} ifd_blob_t;

/** A blob of `size` bytes (zeroed when `zero`), one reference, or NULL on
 *  ENOMEM. Any thread. */
ifd_blob_t *ifd_blob_new(uint64_t size, int zero);
/** Takes a reference; returns b. NULL is fine. Any thread. */
ifd_blob_t *ifd_blob_ref(ifd_blob_t *b);
/** Drops one; the last frees it. NULL is fine. Any thread. */
void ifd_blob_unref(ifd_blob_t *b);

/** The implicit state of one sequence: n entries, in config order. */
typedef struct ifd_seq_state {
  atomic_uint refs; /* the sequence's, plus one per request holding it */
  uint32_t n;
  ifd_blob_t **cur;            /* loop thread: owned references */
  _Atomic(ifd_blob_t *) *next; /* published by StateUpdate: owned refs */
} ifd_seq_state_t;

/** A state for `n` entries (cur and next all NULL), one reference, or NULL
 *  on ENOMEM. */
ifd_seq_state_t *ifd_seq_state_new(uint32_t n);
ifd_seq_state_t *ifd_seq_state_ref(ifd_seq_state_t *s);
/** Drops one; the last unrefs every blob and frees it. NULL is fine. */
void ifd_seq_state_unref(ifd_seq_state_t *s);

/** Publishes `b` (its reference passes) as entry i's next value, dropping
 *  a value published before it and not yet taken. Any thread. */
void ifd_seq_state_publish(ifd_seq_state_t *s, uint32_t i, ifd_blob_t *b);

/** Loop thread: folds a published value of entry i into cur[i] (dropping
 *  the old one) and returns cur[i] (borrowed; may be NULL). */
ifd_blob_t *ifd_seq_state_take(ifd_seq_state_t *s, uint32_t i);

/** Loop thread: sets cur[i] to `init` (a new reference is taken) and drops
 *  any published value (START of a sequence). */
void ifd_seq_state_reset(ifd_seq_state_t *s, uint32_t i, ifd_blob_t *init);

#endif
