/*
 * sched/ensemble_internal.h - what sched/ensemble.c (the scheduler kind) and
 * sched/ensemble_exec.c (one request's execution) share. Loop thread only.
 *
 * An execution has frames. The root frame is the request's own: the
 * ensemble inputs and every step that runs once. A streaming ensemble (one
 * with a decoupled composing model: its config says decoupled) gets a new
 * frame for every response with outputs that a decoupled step sends: the
 * frame holds that response's outputs, and a value it does not hold is
 * looked up in its parent frame, then the parent's parent, up to the root.
 * A step runs in a frame when it reads a tensor that frame holds and every
 * tensor it reads is known there; each frame whose ensemble outputs all
 * become known is answered with a response of its own. An ensemble that does
 * not stream never has a frame but the root.
 */
#ifndef IFD_SCHED_ENSEMBLE_INTERNAL_H
#define IFD_SCHED_ENSEMBLE_INTERNAL_H

#include <stdint.h>

#include "core/infer.h"
#include "sched/ensemble.h"
#include "sched/internal.h"

/* What a child request carries of a sequence: the ensemble request's, or
 * what a step's response overrode (Triton lets a composing model's
 * "sequence_id" / "sequence_start" / "sequence_end" response parameters flow
 * to the steps after it and to the ensemble's response). */
typedef struct ens_seq {
  uint64_t id;
  const char *str; /* borrowed: the ensemble request's or a held response's */
  uint32_t flags;
} ens_seq_t;

typedef struct ens_exec ens_exec_t;
typedef struct ens_run ens_run_t;
typedef struct ens_frame ens_frame_t;

typedef struct ens_val {
  const int64_t *shape; /* borrowed: the request's input or a held output */
  const void *data;     /* borrowed: same */
  uint64_t byte_size;
  uint32_t ndims;
  ifd_dtype_t dtype;
  int32_t mem_type; /* IFD_MEM_* of data (a CUDA shared-memory input) */
  int64_t mem_id;
  uint8_t state;  /* VAL_*; PENDING in a frame: look in its parent */
  ens_run_t *src; /* borrowed: the run whose response holds it; NULL: the
                     request */
  uint64_t batch; /* batch size of the request it came from; 0: that
                     model (or the ensemble) does not batch */
} ens_val_t;

enum { VAL_PENDING = 0, VAL_SET, VAL_ABSENT };

/* Makes `v` a known tensor (borrowing shape and data, in memory of type
 * `mem_type` on device `mem_id`). */
static inline void ifd__ens_val_set(ens_val_t *v, ifd_dtype_t dtype,
                                    const int64_t *shape, uint32_t ndims,
                                    const void *data, uint64_t byte_size,
                                    int32_t mem_type, int64_t mem_id) {
  v->state = VAL_SET;
  v->mem_type = mem_type;
  v->mem_id = mem_id;
  v->dtype = dtype;
  v->shape = shape;
  v->ndims = ndims;
  v->data = data;
  v->byte_size = byte_size;
}

struct ens_run {
  ens_exec_t *x;        /* borrowed: its execution */
  ens_frame_t *f;       /* borrowed: the frame it runs in */
  ifd_request_t *child; /* borrowed: its request, from submit to release
                           (cancelled with the ensemble's); NULL else */
  ifd_response_t *resp; /* owned: the response holding the outputs (a step
                           that is not decoupled) */
  uint32_t idx;
  uint32_t missing; /* root frame: inputs not known yet */
  uint8_t needed, started, done;
  uint8_t decoupled; /* its model streams, in a streaming ensemble: each
                        response with outputs makes a frame */
  ens_seq_t seq;     /* what its request carried, then its response's
                        override */
  uint64_t batch;    /* its request's batch size (0: the model does not
                        batch) */
};

struct ens_frame {
  ens_frame_t *parent;   /* borrowed: NULL for the root */
  ens_frame_t *child;    /* borrowed: its first child frame */
  ens_frame_t *sibling;  /* borrowed: the parent's next child */
  ens_frame_t *next;     /* owned (by the execution's list): frames but the
                            root, newest first */
  ifd_response_t *src;   /* owned: the decoupled step's response whose
                            outputs it holds; NULL for the root */
  ens_run_t *runs;       /* borrowed: in this block (the root's: in the
                            execution's), n_steps entries */
  ens_val_t *vals;       /* borrowed: same, n_tensors entries */
  ifd_output_t *outs;    /* borrowed: same, n_outputs entries: its answer's */
  ifd_param_t params[3]; /* its answer's parameters */
  ifd_req_attach_t keep; /* its answer's keep (see ifd_response_t) */
  ens_exec_t *x;         /* borrowed: its execution */
  uint8_t answered;      /* it sent its response */
};

typedef struct ens ens_t;

struct ens_exec {
  ens_t *e;              /* borrowed: the scheduler outlives it */
  ifd_request_t *parent; /* the ensemble request; its backend reference is
                            ours until maybe_release */
  ifd_model_t *model;    /* counted reference: the ensemble, which owns the
                            scheduler, outlives the execution */
  ens_exec_t *next_free; /* free list link */
  int refs;         /* the run (until answered) + children not released + the
                       responses while they are out */
  uint32_t live;    /* children submitted, not yet released */
  uint32_t running; /* children started, FINAL not yet seen */
  uint32_t left;    /* needed steps not done (root; not streaming) */
  int answered, released, failed, in_submit, deferred;
  uint64_t t_start;       /* the scheduler got the request */
  uint64_t ci, infer, co; /* sums of the children's compute durations */
  ifd_event_t answer_ev;  /* an answer deferred out of submit */
  int defer_code;
  ens_frame_t root;    /* runs, vals and outs: in this block */
  ens_frame_t *frames; /* owned: the other frames, newest first */
  char defer_msg[400]; /* last: written only when used, never zeroed */
};

/* Executions kept for reuse: enough for the requests in flight at a
 * moderate concurrency; the rest are freed. */
#define IFD__ENS_FREE_MAX 64

struct ens {
  ifd__sched_t *s;       /* borrowed: owns this */
  ens_graph_t g;         /* owned */
  size_t exec_size;      /* bytes of one execution block */
  size_t frame_size;     /* bytes of one frame block */
  int streaming;         /* the ensemble is decoupled */
  ens_exec_t *free_list; /* owned: IFD__ENS_FREE_MAX at most */
  uint32_t n_free;
  uint32_t alive;        /* executions not ended (s->executing counts those
                            whose request is not released) */
  int dying;             /* unloaded: free with the last execution */
  ifd_event_t unload_ev; /* pushed by the unload (thread pool) */
  void (*freed)(void *arg);
  void *freed_arg;
};

/* sched/ensemble.c */

/** Puts `x` on the free list, or frees it (frames are gone by then). */
void ifd__ens_exec_recycle(ens_t *e, ens_exec_t *x);
/** Frees the scheduler `s` (an ensemble's) and its graph. */
void ifd__ens_free(ifd__sched_t *s);

/* sched/ensemble_exec.c */

/** Starts the steps of a new execution (set up by ens_submit: runs marked
 *  needed, missing counted, the request's inputs in the root's values).
 *  Takes over the run's reference; the caller keeps its own. */
void ifd__ens_exec_begin(ens_exec_t *x);
/** Drops a reference; the last one ends the execution. */
void ifd__ens_exec_put(ens_exec_t *x);
/** Cancels every child request in flight. */
void ifd__ens_exec_cancel(ens_exec_t *x);

#endif
