/*
 * sched/internal.h - what the schedulers of sched/ share: the instance
 * bookkeeping (which instances are idle, how many requests each runs) and
 * the table through which each scheduler kind plugs into the model ops.
 */
#ifndef IFD_SCHED_INTERNAL_H
#define IFD_SCHED_INTERNAL_H

#include <stdint.h>

#include "core/infer.h"
#include "core/model.h"

typedef struct ifd__sched ifd__sched_t;

/** One scheduler kind. Every function runs on the loop thread. */
typedef struct ifd__sched_kind {
  /** Queues (or dispatches) a validated request; 0 or a negative code. */
  int (*submit)(ifd__sched_t *s, ifd_request_t *req, ifd_errmsg_t *err);
  /** An instance became idle (it is on the idle stack already). */
  void (*idle)(ifd__sched_t *s);
  /** Refuses every queued request (the model is about to unload). */
  void (*stop)(ifd__sched_t *s);
  /** Frees the kind's state, then calls ifd__sched_free_base(s). */
  void (*destroy)(ifd__sched_t *s);
} ifd__sched_kind_t;

struct ifd__sched {
  ifd_model_t *model;            /* borrowed: owns the scheduler */
  const ifd__sched_kind_t *kind; /* static table */
  void *impl;                    /* owned by the kind */
  uint32_t n_instances;
  uint32_t *idle; /* owned: stack of idle instance indexes */
  uint32_t n_idle;
  uint32_t *running;  /* owned: requests executing per instance */
  uint64_t executing; /* requests handed to instances, not back */
  uint64_t queued;    /* requests waiting in the kind's queues */
};

/**
 * Hands `n` requests as one batch to an idle instance (there must be one).
 * Returns 0, or a negative code with the instance put back and nothing
 * handed over.
 */
int ifd__sched_dispatch(ifd__sched_t *s, ifd_request_t **reqs, uint32_t n);

/** Frees the shared part (the kind's destroy calls it last). */
void ifd__sched_free_base(ifd__sched_t *s);

/** Creates the dynamic batcher's state in s->impl. Thread pool (load). */
int ifd__dynamic_init(ifd__sched_t *s, ifd_errmsg_t *err);
extern const ifd__sched_kind_t ifd__dynamic_kind;

#endif
