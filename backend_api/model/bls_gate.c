/*
 * backend_api/model/bls_gate.c - a model's BLS gate: how many of its
 * instances wait on in-process requests they sent.
 *
 * The loader makes one per model (loader.c) and the in-process API counts
 * every request an instance sends through it, from the send to the release
 * (capi_infer.c, whose deadlock rule reads it). The gate is reference
 * counted because a request may outlive the model that sent it; every
 * counter is atomic, as sends and releases happen on any thread.
 */
#include "backend_api/internal.h"
#include "base/check.h"

#include <stdlib.h>

ifd__bls_gate_t *ifd__bls_gate_new(uint32_t n) {
  ifd__bls_gate_t *g = calloc(1, sizeof(*g) + (n ? n : 1) * sizeof(g->out[0]));
  uint32_t i;
  if (g == NULL) return NULL;
  atomic_init(&g->refs, 1);
  atomic_init(&g->waiting, 0);
  g->n_instances = n;
  for (i = 0; i < n; i++) atomic_init(&g->out[i], 0);
  return g;
}

void ifd__bls_gate_unref(ifd__bls_gate_t *g) {
  if (g != NULL && atomic_fetch_sub(&g->refs, 1) == 1) free(g);
}

void ifd__bls_gate_enter(ifd__bls_gate_t *g, uint32_t i) {
  IFD_ASSERT(i < g->n_instances);
  atomic_fetch_add(&g->refs, 1);
  if (atomic_fetch_add(&g->out[i], 1) == 0) atomic_fetch_add(&g->waiting, 1);
}

void ifd__bls_gate_leave(ifd__bls_gate_t *g, uint32_t i) {
  /* Only a request counted in by ifd__bls_gate_enter leaves. */
  IFD_ASSERT(i < g->n_instances && atomic_load(&g->out[i]) > 0);
  if (atomic_fetch_sub(&g->out[i], 1) == 1) atomic_fetch_sub(&g->waiting, 1);
  ifd__bls_gate_unref(g);
}
