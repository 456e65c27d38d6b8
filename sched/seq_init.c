/*
 * sched/seq_init.c - placeholder until the state helper's branch lands:
 * zero initial values only.
 */
#include <stdlib.h>
#include <string.h>

#include "core/model.h"
#include "sched/internal.h"

int ifd__seq_initial_states(const ifd_model_t *m, ifd_blob_t ***out,
                            ifd_errmsg_t *err) {
  const Inference__ModelSequenceBatching *sb = ifd_config_sequence(m->config);
  size_t i, j;
  *out = NULL;
  if (sb == NULL || sb->n_state == 0) return 0;
  *out = calloc(sb->n_state, sizeof(**out));
  if (*out == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  for (i = 0; i < sb->n_state; i++) {
    const Inference__ModelSequenceBatching__State *st = sb->state[i];
    int64_t shape[IFD_MAX_DIMS];
    uint32_t nd = 0;
    uint64_t bytes = ifd_dtype_size((ifd_dtype_t)st->data_type);
    ifd_blob_t *b;
    if (m->config->max_batch_size > 0) shape[nd++] = 1;
    for (j = 0; j < st->n_dims && nd < IFD_MAX_DIMS; j++) {
      int64_t d = st->dims[j] < 0 ? 1 : st->dims[j];
      shape[nd++] = d;
      bytes *= (uint64_t)d;
    }
    b = ifd_blob_new(bytes, 1);
    if (b == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
    b->dtype = (ifd_dtype_t)st->data_type;
    b->ndims = nd;
    memcpy(b->shape, shape, nd * sizeof(int64_t));
    (*out)[i] = b;
  }
  return 0;
}
