/*
 * sched/order.c - responses in submission order (preserve_ordering), for
 * the schedulers that offer it: a response whose request is not next waits
 * in a list sorted by request number (responses come nearly in order, so
 * the walk is short); passing on the next request's FINAL response moves
 * the order on and lets out what waited behind it. Loop thread only.
 */
#include "sched/internal.h"

void ifd__order_hold(ifd__order_t *o, ifd_response_t *resp, uint64_t num,
                     uint64_t (*num_of)(const ifd_response_t *r)) {
  ifd_response_t **pp;

  /* Responses sent after their request's FINAL one go on at once (core
   * drops them). */
  if (num < o->head) {
    ifd_response_deliver(resp);
    return;
  }
  if (num != o->head) {
    for (pp = &o->held; *pp != NULL && num_of(*pp) <= num; pp = &(*pp)->next)
      ;
    resp->next = *pp;
    *pp = resp;
    return;
  }
  for (;;) {
    int final = (resp->flags & IFD_RESPONSE_FINAL) != 0;
    ifd_response_deliver(resp);
    if (final) o->head++;
    resp = o->held;
    if (resp == NULL || num_of(resp) != o->head) return;
    o->held = resp->next;
    resp->next = NULL;
  }
}

void ifd__order_release(ifd__order_t *o) {
  while (o->held != NULL) {
    ifd_response_t *r = o->held;
    o->held = r->next;
    r->next = NULL;
    ifd_response_deliver(r);
  }
}
