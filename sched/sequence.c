/*
 * sched/sequence.c - the sequence batcher (being written: refuses to load).
 */
#include "sched/internal.h"

int ifd__sequence_init(ifd__sched_t *s, ifd_errmsg_t *err) {
  (void)s;
  return ifd_errf(err, IFD_EUNSUPPORTED,
                  "sequence batching is not supported yet");
}

static int seq_submit(ifd__sched_t *s, ifd_request_t *req, ifd_errmsg_t *err) {
  (void)s;
  (void)req;
  return ifd_errf(err, IFD_EUNSUPPORTED, "sequence batching");
}
static void seq_idle(ifd__sched_t *s, uint32_t instance) {
  (void)s;
  (void)instance;
}
static void seq_stop(ifd__sched_t *s) {
  ifd__sched_refuse_queued(s);
}
static void seq_destroy(ifd__sched_t *s) {
  ifd__sched_free_base(s);
}
const ifd__sched_kind_t ifd__sequence_kind = {seq_submit, seq_idle, seq_stop,
                                              seq_destroy};
