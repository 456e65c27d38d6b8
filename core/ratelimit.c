/*
 * core/ratelimit.c - the rate limiter: which waiting instance may execute
 * next, given the resources each one names.
 *
 * How it works. A resource is a (name, device) slot, or (name, global); its
 * count is the largest any registered instance needs, or the
 * --rate-limit-resource count (recomputed whenever an instance registers or
 * leaves, so loads, unloads and reloads keep it right). An instance thread
 * with work asks for all its resources at once (ifd_rl_request): it gets
 * them all, or none and joins the line of waiters, then sleeps on a
 * condition variable of its own (ifd_rl_wait). Whenever resources come back
 * (a release, an instance leaving) or a waiter joins, one pass walks the
 * line in order and grants every waiter whose whole need fits. The line is
 * ordered by tritonserver's score, executions so far times the priority
 * (0 counts as 1), lowest first, arrival breaking ties: an instance of
 * priority 2 is granted half as often as one of priority 1 when both keep
 * asking. A waiter that does not fit reserves what it needs for the rest of
 * the pass: a later waiter may take only what leaves its need intact, so
 * small requests cannot starve a large one, while waiters on other
 * resources go on (no head-of-line blocking across unrelated resources).
 *
 * Why it cannot deadlock. No instance ever holds part of its need while it
 * waits for the rest: a grant takes every resource of the instance in one
 * step under the limiter's lock, and a waiter holds nothing. So an instance
 * needing A and B never holds A while another holds B and waits for A: the
 * wait-for graph has no holder that waits, hence no cycle. Every holder is
 * executing, which ends, and each count is at least any registered need,
 * so the first waiter of the line is granted once the holders of its
 * resources release (later ones cannot take them: they are reserved), and
 * a waiter's score is fixed while the scores of those that execute grow,
 * so every waiter becomes first in time.
 *
 * Requests never wait here: the instance asks before it takes a batch off
 * its model's run queue (backend_api/model/instance.c), so a batch stays where
 * any instance of its model that gets its resources may take it. The loop
 * never calls in. One mutex guards everything; it is held for a pass over
 * the line, never across an execute or a wait.
 */
#include "core/ratelimit.h"

#include "base/log.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The device key of a global resource's slot. */
#define GLOBAL_KEY INT_MIN

typedef struct slot {
  char *name; /* owned */
  int device; /* GLOBAL_KEY, or a device id */
  uint32_t limit;
  int64_t held;     /* may exceed limit for a while after counts shrink */
  int64_t reserved; /* scratch of one grant pass */
} slot_t;

typedef struct need {
  uint32_t slot; /* index into rl->slots */
  uint32_t count;
} need_t;

enum { U_IDLE, U_WAITING, U_GRANTED };

struct ifd_rl_user {
  need_t *needs; /* owned */
  size_t n_needs;
  uint64_t score_step;      /* the priority, at least 1 */
  uint64_t executed;        /* grants that ran an execute */
  uint64_t seq;             /* arrival in line, for ties */
  int state;                /* U_*, guarded by rl->mu */
  pthread_cond_t cv;        /* signalled when state leaves U_WAITING */
  ifd_rl_user_t *next_user; /* every registered user */
  ifd_rl_user_t *next_wait; /* the line, when U_WAITING */
};

struct ifd_rl {
  pthread_mutex_t mu;
  slot_t *slots; /* owned: n_slots entries, never removed (indices stay) */
  size_t n_slots, cap_slots;
  ifd_rl_resource_t *explicit_res; /* owned copies (names too) */
  size_t n_explicit;
  ifd_rl_user_t *users; /* owned: registered users */
  ifd_rl_user_t *line;  /* borrowed from users: waiters, in order */
  uint64_t seq;
};

int ifd_rl_new(const ifd_rl_resource_t *explicit_res, size_t n_explicit,
               ifd_rl_t **out) {
  ifd_rl_t *rl = calloc(1, sizeof(*rl));
  size_t i;
  if (rl == NULL) return IFD_ENOMEM;
  pthread_mutex_init(&rl->mu, NULL);
  if (n_explicit > 0) {
    rl->explicit_res = calloc(n_explicit, sizeof(*rl->explicit_res));
    if (rl->explicit_res == NULL) goto out_nomem;
    for (i = 0; i < n_explicit; i++) {
      char *name = strdup(explicit_res[i].name);
      if (name == NULL) goto out_nomem;
      rl->explicit_res[i] = explicit_res[i];
      rl->explicit_res[i].name = name;
      rl->n_explicit++;
    }
  }
  *out = rl;
  return 0;

out_nomem:
  ifd_rl_free(rl);
  return IFD_ENOMEM;
}

void ifd_rl_free(ifd_rl_t *rl) {
  size_t i;
  if (rl == NULL) return;
  while (rl->users != NULL) ifd_rl_unregister(rl, rl->users);
  for (i = 0; i < rl->n_slots; i++) free(rl->slots[i].name);
  free(rl->slots);
  for (i = 0; i < rl->n_explicit; i++) free((char *)rl->explicit_res[i].name);
  free(rl->explicit_res);
  pthread_mutex_destroy(&rl->mu);
  free(rl);
}

/* The index of slot (name, device), added when missing; -1 on ENOMEM. */
static long slot_of(ifd_rl_t *rl, const char *name, int device) {
  size_t i;
  for (i = 0; i < rl->n_slots; i++)
    if (rl->slots[i].device == device && strcmp(rl->slots[i].name, name) == 0)
      return (long)i;
  if (rl->n_slots == rl->cap_slots) {
    size_t ncap = rl->cap_slots ? rl->cap_slots * 2 : 8;
    slot_t *ns = realloc(rl->slots, ncap * sizeof(*ns));
    if (ns == NULL) return -1;
    rl->slots = ns;
    rl->cap_slots = ncap;
  }
  memset(&rl->slots[rl->n_slots], 0, sizeof(slot_t));
  rl->slots[rl->n_slots].name = strdup(name);
  if (rl->slots[rl->n_slots].name == NULL) return -1;
  rl->slots[rl->n_slots].device = device;
  return (long)rl->n_slots++;
}

/* What `u` needs of slot `s` (0: nothing). */
static uint32_t need_in(const ifd_rl_user_t *u, size_t s) {
  size_t k;
  for (k = 0; k < u->n_needs; k++)
    if (u->needs[k].slot == s) return u->needs[k].count;
  return 0;
}

/* The largest need of slot `s` among registered users and `extra` (may be
 * NULL). */
static uint32_t need_of(const ifd_rl_t *rl, size_t s,
                        const ifd_rl_user_t *extra) {
  const ifd_rl_user_t *u;
  uint32_t max = extra != NULL ? need_in(extra, s) : 0;
  for (u = rl->users; u != NULL; u = u->next_user)
    if (need_in(u, s) > max) max = need_in(u, s);
  return max;
}

/* The count --rate-limit-resource gives slot `s` (tritonserver's rules: a
 * global resource takes the largest count given for its name on any
 * device; a per-device one the largest given for its device or for every
 * device; 0 when none is given). */
static uint32_t explicit_count(const ifd_rl_t *rl, const slot_t *s) {
  uint32_t c = 0;
  size_t i;
  for (i = 0; i < rl->n_explicit; i++) {
    const ifd_rl_resource_t *e = &rl->explicit_res[i];
    if (strcmp(e->name, s->name) != 0) continue;
    if (s->device != GLOBAL_KEY && e->device != IFD_RL_ANY_DEVICE &&
        e->device != s->device)
      continue;
    if (e->count > c) c = e->count;
  }
  return c;
}

/* Computes every slot's count with `extra` registered too (NULL: as
 * registered). When commit is 0 it only checks: IFD_EINVAL with
 * tritonserver's message when a count cannot serve a need. */
static int recount(ifd_rl_t *rl, const ifd_rl_user_t *extra, int commit,
                   ifd_errmsg_t *err) {
  size_t i, j;
  for (i = 0; i < rl->n_slots; i++) {
    slot_t *s = &rl->slots[i];
    uint32_t need = need_of(rl, i, extra), limit = need;
    if (need > 0 && s->device == GLOBAL_KEY)
      for (j = 0; j < rl->n_slots; j++)
        if (rl->slots[j].device != GLOBAL_KEY &&
            strcmp(rl->slots[j].name, s->name) == 0 &&
            need_of(rl, j, extra) > 0)
          return ifd_errf(err, IFD_EINVAL,
                          "Resource \"%s\" is present as both global and "
                          "device-specific resource in the model "
                          "configuration.",
                          s->name);
    if (need > 0 && rl->n_explicit > 0) {
      limit = explicit_count(rl, s);
      if (limit < need)
        return ifd_errf(err, IFD_EINVAL,
                        "Resource count for \"%s\" is limited to %u which "
                        "will prevent scheduling of one or more model "
                        "instances, the minimum required count is %u",
                        s->name, limit, need);
    }
    if (commit && s->limit != limit) {
      /* As tritonserver's resource map at verbose level 1. */
      if (s->device == GLOBAL_KEY)
        IFD_VERBOSE("rate limiter: resource '%s' (global) count %u", s->name,
                    limit);
      else
        IFD_VERBOSE("rate limiter: resource '%s' on device %d count %u",
                    s->name, s->device, limit);
      s->limit = limit;
    }
  }
  return 0;
}

/* Does u's whole need fit beside what is held and reserved? */
static int fits(const ifd_rl_t *rl, const ifd_rl_user_t *u) {
  size_t k;
  for (k = 0; k < u->n_needs; k++) {
    const slot_t *s = &rl->slots[u->needs[k].slot];
    if (s->held + s->reserved + u->needs[k].count > (int64_t)s->limit) return 0;
  }
  return 1;
}

static void take(ifd_rl_t *rl, ifd_rl_user_t *u) {
  size_t k;
  for (k = 0; k < u->n_needs; k++)
    rl->slots[u->needs[k].slot].held += u->needs[k].count;
  u->state = U_GRANTED;
}

/* One pass over the line (mu held): grants every waiter that fits, in
 * order; one that does not reserves its need for the rest of the pass. */
static void grant_pass(ifd_rl_t *rl) {
  ifd_rl_user_t **pp = &rl->line;
  size_t i, k;
  for (i = 0; i < rl->n_slots; i++) rl->slots[i].reserved = 0;
  while (*pp != NULL) {
    ifd_rl_user_t *u = *pp;
    if (fits(rl, u)) {
      *pp = u->next_wait;
      u->next_wait = NULL;
      take(rl, u);
      pthread_cond_signal(&u->cv);
      continue;
    }
    for (k = 0; k < u->n_needs; k++)
      rl->slots[u->needs[k].slot].reserved += u->needs[k].count;
    pp = &u->next_wait;
  }
}

static uint64_t score(const ifd_rl_user_t *u) {
  return u->executed * u->score_step;
}

/* Puts u in line by score, after those of the same score (mu held). */
static void enqueue(ifd_rl_t *rl, ifd_rl_user_t *u) {
  ifd_rl_user_t **pp = &rl->line;
  uint64_t sc = score(u);
  u->seq = rl->seq++;
  while (*pp != NULL && score(*pp) <= sc) pp = &(*pp)->next_wait;
  u->next_wait = *pp;
  *pp = u;
  u->state = U_WAITING;
}

/* Takes u out of the line if it is there (mu held). */
static void dequeue(ifd_rl_t *rl, ifd_rl_user_t *u) {
  ifd_rl_user_t **pp;
  for (pp = &rl->line; *pp != NULL; pp = &(*pp)->next_wait)
    if (*pp == u) {
      *pp = u->next_wait;
      u->next_wait = NULL;
      return;
    }
}

int ifd_rl_register(ifd_rl_t *rl, const ifd_rl_need_t *needs, size_t n,
                    uint32_t priority, int device, ifd_rl_user_t **out,
                    ifd_errmsg_t *err) {
  ifd_rl_user_t *u = calloc(1, sizeof(*u));
  size_t k;
  int rc;
  if (u == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  u->needs = calloc(n ? n : 1, sizeof(*u->needs));
  if (u->needs == NULL) {
    free(u);
    return ifd_errf(err, IFD_ENOMEM, "out of memory");
  }
  u->score_step = priority > 0 ? priority : 1;
  pthread_cond_init(&u->cv, NULL);
  pthread_mutex_lock(&rl->mu);
  for (k = 0; k < n; k++) {
    long s = slot_of(rl, needs[k].name,
                     needs[k].global ? GLOBAL_KEY : (device < 0 ? 0 : device));
    size_t j;
    if (s < 0) {
      rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
      goto out_unlock;
    }
    /* A resource named twice: the larger count (tritonserver keeps one). */
    for (j = 0; j < u->n_needs; j++)
      if (u->needs[j].slot == (uint32_t)s) break;
    if (j == u->n_needs) {
      u->needs[j].slot = (uint32_t)s;
      u->n_needs++;
    }
    if (needs[k].count > u->needs[j].count) u->needs[j].count = needs[k].count;
  }
  rc = recount(rl, u, 0, err);
  if (rc < 0) goto out_unlock;
  u->next_user = rl->users;
  rl->users = u;
  recount(rl, NULL, 1, NULL);
  /* Larger counts may let waiters in. */
  grant_pass(rl);
  pthread_mutex_unlock(&rl->mu);
  *out = u;
  return 0;

out_unlock:
  pthread_mutex_unlock(&rl->mu);
  pthread_cond_destroy(&u->cv);
  free(u->needs);
  free(u);
  return rc;
}

void ifd_rl_unregister(ifd_rl_t *rl, ifd_rl_user_t *u) {
  ifd_rl_user_t **pp;
  size_t k;
  if (u == NULL) return;
  pthread_mutex_lock(&rl->mu);
  if (u->state == U_WAITING) dequeue(rl, u);
  if (u->state == U_GRANTED)
    for (k = 0; k < u->n_needs; k++)
      rl->slots[u->needs[k].slot].held -= u->needs[k].count;
  u->state = U_IDLE;
  for (pp = &rl->users; *pp != NULL; pp = &(*pp)->next_user)
    if (*pp == u) {
      *pp = u->next_user;
      break;
    }
  /* Removing a need never makes a count too small: this cannot fail. */
  recount(rl, NULL, 1, NULL);
  grant_pass(rl);
  pthread_mutex_unlock(&rl->mu);
  pthread_cond_destroy(&u->cv);
  free(u->needs);
  free(u);
}

int ifd_rl_request(ifd_rl_t *rl, ifd_rl_user_t *u) {
  int granted;
  pthread_mutex_lock(&rl->mu);
  if (u->state == U_IDLE) {
    enqueue(rl, u);
    grant_pass(rl);
  }
  granted = u->state == U_GRANTED;
  pthread_mutex_unlock(&rl->mu);
  return granted;
}

int ifd_rl_wait(ifd_rl_t *rl, ifd_rl_user_t *u) {
  int granted;
  pthread_mutex_lock(&rl->mu);
  while (u->state == U_WAITING) pthread_cond_wait(&u->cv, &rl->mu);
  granted = u->state == U_GRANTED;
  pthread_mutex_unlock(&rl->mu);
  return granted;
}

void ifd_rl_release(ifd_rl_t *rl, ifd_rl_user_t *u, int executed) {
  size_t k;
  pthread_mutex_lock(&rl->mu);
  if (u->state == U_GRANTED) {
    for (k = 0; k < u->n_needs; k++)
      rl->slots[u->needs[k].slot].held -= u->needs[k].count;
    u->state = U_IDLE;
    if (executed) u->executed++;
    grant_pass(rl);
  }
  pthread_mutex_unlock(&rl->mu);
}

int ifd_rl_withdraw(ifd_rl_t *rl, ifd_rl_user_t *u) {
  int did = 0;
  pthread_mutex_lock(&rl->mu);
  if (u->state == U_WAITING) {
    dequeue(rl, u);
    u->state = U_IDLE;
    pthread_cond_signal(&u->cv);
    /* What it reserved is free for the others again. */
    grant_pass(rl);
    did = 1;
  }
  pthread_mutex_unlock(&rl->mu);
  return did;
}

uint32_t ifd_rl_count(ifd_rl_t *rl, const char *name, int device,
                      uint32_t *held) {
  int key = device == IFD_RL_ANY_DEVICE ? GLOBAL_KEY : device;
  uint32_t c = 0, h = 0;
  size_t i;
  pthread_mutex_lock(&rl->mu);
  for (i = 0; i < rl->n_slots; i++)
    if (rl->slots[i].device == key && strcmp(rl->slots[i].name, name) == 0) {
      c = rl->slots[i].limit;
      h = rl->slots[i].held > 0 ? (uint32_t)rl->slots[i].held : 0;
    }
  pthread_mutex_unlock(&rl->mu);
  if (held != NULL) *held = h;
  return c;
}
