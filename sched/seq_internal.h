/*
 * sched/seq_internal.h - what the sequence batcher's files share: its state
 * (sched/sequence.c: scheduling; sched/seq_batch.c: forming batches;
 * sched/seq_index.c: sequences by ID and the idle heap; sched/seq_inputs.c:
 * control, state and null requests). Loop thread only, like the batcher.
 */
#ifndef IFD_SCHED_SEQ_INTERNAL_H
#define IFD_SCHED_SEQ_INTERNAL_H

#include <stdint.h>
#include <uv.h>

#include "core/seqstate.h"
#include "sched/internal.h"

typedef struct seq seq_t;

/* The batcher's per-request state, laid over ifd_request_t.sched_area. */
typedef struct sreq {
  ifd_request_t *next; /* borrowed: its sequence's queue */
  seq_t *seq;          /* borrowed: the sequence it belongs to */
  uint64_t arrival;    /* ns, when the batcher queued it */
  uint32_t added;      /* inputs the batcher added (controls, states) */
  uint32_t inst;       /* oldest preserve_ordering: the instance it ran on */
  uint64_t order;      /* ...and its number in that instance's order */
  int ordered;         /* `inst` and `order` are set */
} sreq_t;

_Static_assert(sizeof(sreq_t) <= sizeof(((ifd_request_t *)0)->sched_area),
               "the batcher's per-request state must fit the request's area");

static inline sreq_t *sr(ifd_request_t *r) {
  return (sreq_t *)(void *)&r->sched_area;
}

struct seq {
  uint64_t id;   /* the integer correlation ID, 0 for a string one */
  char *sid;     /* owned: the string correlation ID, NULL for integers */
  uint64_t hash; /* of the ID */
  seq_t *hnext;  /* borrowed: hash chain, while in the table */
  int in_table;  /* found by its ID (not after its END was queued) */
  ifd_request_t *head, *tail; /* borrowed: queued, linked by sreq next */
  int32_t inst;               /* the instance holding it, -1: in the backlog */
  int32_t slot;       /* its slot (direct) or candidate index (oldest) */
  seq_t *bl_next;     /* borrowed: backlog FIFO */
  int running;        /* one of its requests is in its instance's batch */
  int done;           /* its END request was dispatched (slot given up) */
  int expired;        /* released by the idle timeout */
  uint64_t last_ns;   /* arrival of its last request, or end of its last run */
  uint64_t deadline;  /* ns: its key in the idle heap */
  uint32_t heap_ix;   /* position in the idle heap + 1; 0: not in it */
  uint64_t bl_expire; /* ns: while in the backlog, when its requests'
                         timeouts expire it (the earliest); 0: never */
  ifd_seq_state_t *state; /* owned reference; NULL without states */
};

/* A START/END/READY control: its input, and the bytes of false and true. */
typedef struct ctl {
  const char *name; /* borrowed: config; NULL when the model has none */
  ifd_dtype_t dtype;
  unsigned char val[2][4]; /* [false, true] in dtype */
} ctl_t;

/* Batches an instance may have out at once: the next one waits on its
 * queue while one executes, so the instance thread goes on without sleeping
 * and being woken again. A sequence has one request out at most: a batch
 * never holds a sequence that the batch before it holds. */
#define PIPE 2
_Static_assert(PIPE == 2, "ifd__sequence_init allocates two running lists");

typedef struct inst {
  seq_t **slots;         /* owned array of nslots: borrowed sequences */
  seq_t **running[PIPE]; /* owned arrays of nslots: the sequences of each
                            batch out, oldest first from `first` */
  uint32_t n_running[PIPE];
  uint32_t first, out; /* ring of running[]: oldest batch, batches out */
  uint64_t wait_until; /* ns: a delayed batch goes then; 0: none */
  int dirty;           /* has work to look at at the iteration's end */
  /* oldest preserve_ordering: responses go out in the order the requests
   * were batched on this instance. */
  ifd__order_t order;
} inst_t;

typedef struct sb {
  ifd__sched_t *s;                             /* borrowed: owns this */
  const Inference__ModelSequenceBatching *cfg; /* borrowed: model config */
  int oldest;
  int preserve_ordering; /* oldest { preserve_ordering: true } */
  int iterative;         /* iterative_sequence: true */
  uint64_t next_auto;    /* iterative: the ID the next request without one
                            gets (from 1, as Triton counts) */
  int batching;          /* max_batch_size > 0 */
  uint32_t nslots;       /* per instance */
  uint32_t max_batch;    /* oldest: requests per batch */
  uint32_t target;       /* a batch this big goes at once (delay) */
  uint64_t delay_ns;     /* max_queue_delay, 0: none */
  uint64_t idle_ns;      /* max_sequence_idle */
  ctl_t start, end, ready;
  uint32_t n_added;        /* inputs the batcher adds to a request */
  const char *corrid_name; /* borrowed: config; NULL: no CORRID control */
  ifd_dtype_t corrid_dtype;
  int64_t ctl_shape[2]; /* {1, 1}: control inputs are [1] per request */
  const char **eq_in;   /* owned array, borrowed names: inputs whose shapes
                           must agree within a batch (variable dims, no
                           allow_ragged_batch; batching models only) */
  uint32_t n_eq;
  /* Implicit state. */
  uint32_t n_state;
  ifd_blob_t **init;     /* owned: initial value per state */
  const char **state_in; /* borrowed: config input_name per state */
  /* Instances and sequences. */
  inst_t *inst;  /* owned, n_instances entries */
  seq_t **table; /* owned: hash buckets */
  uint64_t table_mask, n_table;
  seq_t *bl_head, *bl_tail; /* borrowed: the backlog */
  uint64_t n_active, n_backlog;
  seq_t **heap; /* owned: idle deadlines, min-heap */
  uint32_t heap_n, heap_cap;
  ifd_request_t **batch; /* owned scratch: nslots entries */
  seq_t **cand;          /* owned scratch (oldest): nslots entries */
  uv_timer_t idle_timer, wait_timer; /* embedded */
  int timers_init, closing;
  ifd_event_t kick_ev; /* end of iteration: form batches */
  int kick_pending;
  int stopped;
} sb_t;

/** The batcher's clock (ns): arrival times, deadlines, queue delays. */
static inline uint64_t ifd__seq_now_ns(void) {
  return uv_hrtime();
}

/* ---- sequence.c: sequences and timers ------------------------------------ */

/** Frees `q` (no longer in the table, the heap or a slot) and its state. */
void ifd__seq_free(seq_t *q);
/** Releases a sequence that holds no request any more: its slot goes to the
 *  backlog, and it is freed unless a batch still runs one of its requests
 *  (then the instance's idle report frees it). */
void ifd__seq_release(sb_t *b, seq_t *q);
/** Holds instance `in`'s next batch until `until` (ns), when the wait timer
 *  forms it. */
void ifd__seq_wait(sb_t *b, inst_t *in, uint64_t until);

/* ---- seq_batch.c: forming batches ---------------------------------------- */

/** Takes the head request off `q`'s queue; the caller owns what it does
 *  with it (q->head must be set). */
ifd_request_t *ifd__seq_pop(sb_t *b, seq_t *q);
/** The sequences of instance `in`'s running list `j` are out no more (their
 *  batch finished, or it was never sent); `now` is their last use. */
void ifd__seq_finish_running(sb_t *b, inst_t *in, uint32_t j, uint64_t now);
/** Forms and dispatches instance k's next batch, direct strategy: one
 *  request per busy slot at its slot's position, null requests between. */
void ifd__seq_form_direct(sb_t *b, uint32_t k);
/** Forms and dispatches instance k's next batch, oldest strategy: the oldest
 *  ready requests, one per sequence. */
void ifd__seq_form_oldest(sb_t *b, uint32_t k);

/* ---- seq_index.c: sequences by ID, idle deadlines ------------------------ */

/** The hash of a correlation ID (integer `id`, or string `sid`). */
uint64_t ifd__seq_hash(uint64_t id, const char *sid);
/** The live sequence with that ID, or NULL. */
seq_t *ifd__seq_find(sb_t *b, uint64_t id, const char *sid, uint64_t hash);
/** Adds `q` (q->hash set) to the table; never fails (chains grow when the
 *  table cannot). */
void ifd__seq_table_add(sb_t *b, seq_t *q);
/** Takes `q` out of the table; nothing when it is not in it. */
void ifd__seq_table_del(sb_t *b, seq_t *q);
/** Adds `q` (q->deadline set) to the idle heap; 0 or IFD_ENOMEM. */
int ifd__seq_heap_push(sb_t *b, seq_t *q);
/** Takes `q` out of the idle heap; nothing when it is not in it. */
void ifd__seq_heap_remove(sb_t *b, seq_t *q);
/** Restores the heap after the head's deadline grew. */
void ifd__seq_heap_head_moved(sb_t *b);

/* ---- seq_inputs.c: control and state inputs, null requests --------------- */

/** Reads the START/END/READY/CORRID controls of the config into b. 0 or
 *  IFD_EINVAL. */
int ifd__seq_read_controls(sb_t *b, ifd_errmsg_t *err);
/** Adds a real request's control and state inputs (the state after START
 *  is the initial one). 0 or IFD_ENOMEM. */
int ifd__seq_prepare(sb_t *b, ifd_request_t *r, seq_t *q);
/** A null request shaped like `like` (a real request of the batch, already
 *  prepared): READY false, zero data, responses dropped. It holds the
 *  protocol's and the backend's references and is QUEUED. NULL on ENOMEM. */
ifd_request_t *ifd__seq_null_request(sb_t *b, const ifd_request_t *like);

#endif
