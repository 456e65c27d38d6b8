/*
 * core/ratelimit.h - the rate limiter (--rate-limit=execution_count): model
 * instances that name resources in their instance group's `rate_limiter`
 * execute only while they hold them.
 *
 * One limiter per server, shared by every model's instances. Instance
 * threads call it (never the loop): ifd_rl_request then, when not granted
 * at once, ifd_rl_wait, and ifd_rl_release after the execute. Model loads
 * and unloads (thread pool) register and unregister instances. How grants
 * are ordered and why nothing deadlocks: the comment atop core/ratelimit.c.
 */
#ifndef IFD_CORE_RATELIMIT_H
#define IFD_CORE_RATELIMIT_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* A --rate-limit-resource=<name>:<count>[:<device>] setting. */
typedef struct ifd_rl_resource {
  const char *name; /* borrowed */
  uint32_t count;
  int device; /* IFD_RL_ANY_DEVICE when not given: every device */
} ifd_rl_resource_t;

#define IFD_RL_ANY_DEVICE (-1)

/* One resource an instance needs (its config's rate_limiter.resources). */
typedef struct ifd_rl_need {
  const char *name; /* borrowed for the call */
  int global;       /* one copy for the whole server, not one per device */
  uint32_t count;
} ifd_rl_need_t;

typedef struct ifd_rl ifd_rl_t;
typedef struct ifd_rl_user ifd_rl_user_t;

/**
 * A limiter whose resource counts are the largest any registered instance
 * needs, or, when n_explicit > 0, what `explicit_res` gives (copied; every
 * resource an instance names must then be among them, as in tritonserver).
 * Returns 0 and *out, or IFD_ENOMEM.
 */
int ifd_rl_new(const ifd_rl_resource_t *explicit_res, size_t n_explicit,
               ifd_rl_t **out);

/** Frees the limiter; every user must be unregistered. NULL is ignored. */
void ifd_rl_free(ifd_rl_t *rl);

/**
 * Registers an instance on `device` (its GPU; CPU instances count as device
 * 0, as in tritonserver) that needs `needs` (n > 0) and has `priority`
 * (0 counts as 1). Fails with IFD_EINVAL and tritonserver's message when a
 * --rate-limit-resource count is below what it needs or a resource would be
 * both global and per-device; nothing changes then. Any thread but the
 * loop (it takes the limiter's lock). Returns 0 and *out (owned by the
 * limiter until ifd_rl_unregister).
 */
int ifd_rl_register(ifd_rl_t *rl, const ifd_rl_need_t *needs, size_t n,
                    uint32_t priority, int device, ifd_rl_user_t **out,
                    ifd_errmsg_t *err);

/**
 * Forgets `u` (NULL is ignored): what it holds is given back, its wait is
 * withdrawn, the counts are recomputed without it, and waiters that now fit
 * are granted. Its thread must no longer use it.
 */
void ifd_rl_unregister(ifd_rl_t *rl, ifd_rl_user_t *u);

/**
 * Asks for u's resources (u's own thread). Returns 1 when granted at once
 * (the caller holds them until ifd_rl_release), 0 when `u` now waits in
 * line: call ifd_rl_wait. Never blocks beyond the limiter's short lock.
 */
int ifd_rl_request(ifd_rl_t *rl, ifd_rl_user_t *u);

/** Blocks until u's wait ends: 1 granted (held until ifd_rl_release), 0
 *  withdrawn (ifd_rl_withdraw: nothing held). */
int ifd_rl_wait(ifd_rl_t *rl, ifd_rl_user_t *u);

/** Gives u's resources back and grants waiters that now fit. `executed`:
 *  the grant ran an execute (it counts for priorities). */
void ifd_rl_release(ifd_rl_t *rl, ifd_rl_user_t *u, int executed);

/** Ends u's wait without a grant, if it waits (any thread): its
 *  ifd_rl_wait returns 0. Returns 1 when it did. */
int ifd_rl_withdraw(ifd_rl_t *rl, ifd_rl_user_t *u);

/** The count of resource `name` on `device` (IFD_RL_ANY_DEVICE for a
 *  global one) the limiter now enforces, 0 when none; and what is held of
 *  it into *held (may be NULL). For tests and logs. */
uint32_t ifd_rl_count(ifd_rl_t *rl, const char *name, int device,
                      uint32_t *held);

#endif
