/*
 * sched/seq_inputs.c - the inputs the sequence batcher adds to a request at
 * dispatch: START/END/READY (pointing at the batcher's constants), CORRID (a
 * few bytes of the request's pool) and each implicit state (the sequence's
 * current value, referenced by the request), and the null requests that
 * fill empty batch slots. See sched/seq_internal.h.
 */
#include <stdlib.h>
#include <string.h>

#include "core/model.h"
#include "sched/seq_internal.h"
#include "core/request_internal.h"

/* ---- control and state inputs ---------------------------------------------
 */

static int ctl_from_config(ctl_t *c, const char *name,
                           const Inference__ModelSequenceBatching__Control *k) {
  int i;
  c->name = name;
  for (i = 0; i < 2; i++) {
    if (k->n_int32_false_true == 2) {
      int32_t v = k->int32_false_true[i];
      c->dtype = IFD_TYPE_INT32;
      memcpy(c->val[i], &v, 4);
    } else if (k->n_fp32_false_true == 2) {
      float v = k->fp32_false_true[i];
      c->dtype = IFD_TYPE_FP32;
      memcpy(c->val[i], &v, 4);
    } else if (k->n_bool_false_true == 2) {
      c->dtype = IFD_TYPE_BOOL;
      c->val[i][0] = k->bool_false_true[i] ? 1 : 0;
    } else {
      return -1;
    }
  }
  return 0;
}

static uint32_t ctl_ndims(const sb_t *b) {
  return b->batching ? 2 : 1;
}

static int add_ctl(sb_t *b, ifd_request_t *r, const ctl_t *c, int on) {
  ifd_input_t *in;
  if (c->name == NULL) return 0;
  in = ifd_request_add_input_borrowed(r, c->name, c->dtype, b->ctl_shape,
                                      ctl_ndims(b));
  if (in == NULL) return IFD_ENOMEM;
  in->data = c->val[on ? 1 : 0];
  in->byte_size = ifd_dtype_size(c->dtype);
  return 0;
}

/* CORRID: the ID in the control's type (integers as their low bytes, a
 * string as one BYTES element); a null request gets 0. */
static int add_corrid(sb_t *b, ifd_request_t *r, const seq_t *q) {
  ifd_input_t *in;
  unsigned char *p;
  size_t n;
  if (b->corrid_name == NULL) return 0;
  in = ifd_request_add_input_borrowed(r, b->corrid_name, b->corrid_dtype,
                                      b->ctl_shape, ctl_ndims(b));
  if (in == NULL) return IFD_ENOMEM;
  if (b->corrid_dtype == IFD_TYPE_BYTES) {
    const char *s = q != NULL && q->sid != NULL ? q->sid : "";
    uint32_t len = (uint32_t)strlen(s);
    n = 4 + len;
    p = ifd_pool_alloc(&r->pool, n);
    if (p == NULL) return IFD_ENOMEM;
    memcpy(p, &len, 4);
    memcpy(p + 4, s, len);
  } else {
    uint64_t v = q != NULL ? q->id : 0;
    n = ifd_dtype_size(b->corrid_dtype);
    p = ifd_pool_alloc(&r->pool, 8);
    if (p == NULL) return IFD_ENOMEM;
    if (n == 4) {
      uint32_t v32 = (uint32_t)v;
      memcpy(p, &v32, 4);
    } else {
      memcpy(p, &v, 8);
    }
  }
  in->data = p;
  in->byte_size = n;
  return 0;
}

/* The state inputs: the sequence's current values (the initial ones after
 * START, and for a null request). The request holds a reference on each. */
static int add_states(sb_t *b, ifd_request_t *r, seq_t *q) {
  uint32_t i;
  if (b->n_state == 0) return 0;
  r->blobs = ifd_pool_alloc(&r->pool, b->n_state * sizeof(*r->blobs));
  if (r->blobs == NULL) return IFD_ENOMEM;
  for (i = 0; i < b->n_state; i++) {
    ifd_blob_t *v;
    ifd_input_t *in;
    if (q != NULL) {
      if (r->flags & IFD_REQUEST_FLAG_SEQUENCE_START)
        ifd_seq_state_reset(q->state, i, b->init[i]);
      v = ifd_seq_state_take(q->state, i);
      if (v == NULL) {
        ifd_seq_state_reset(q->state, i, b->init[i]);
        v = b->init[i];
      }
    } else {
      v = b->init[i];
    }
    r->blobs[r->n_blobs++] = ifd_blob_ref(v);
    in = ifd_request_add_input_borrowed(r, b->state_in[i], v->dtype, v->shape,
                                        v->ndims);
    if (in == NULL) return IFD_ENOMEM;
    in->data = v->data;
    in->byte_size = v->size;
  }
  if (q != NULL) r->seq_state = ifd_seq_state_ref(q->state);
  return 0;
}

/* Adds a real request's controls and states. */
int ifd__seq_prepare(sb_t *b, ifd_request_t *r, seq_t *q) {
  int rc;
  if ((rc = ifd_request_reserve_inputs(r, b->n_added)) < 0 ||
      (rc = add_ctl(b, r, &b->start,
                    (r->flags & IFD_REQUEST_FLAG_SEQUENCE_START) != 0)) < 0 ||
      (rc = add_ctl(b, r, &b->end,
                    (r->flags & IFD_REQUEST_FLAG_SEQUENCE_END) != 0)) < 0 ||
      (rc = add_ctl(b, r, &b->ready, 1)) < 0 ||
      (rc = add_corrid(b, r, q)) < 0 || (rc = add_states(b, r, q)) < 0)
    return rc;
  return 0;
}

/* A null request shaped like `like` (a real request of the batch): its
 * inputs are copies of like's with zero data, READY is false, and its
 * responses are dropped. NULL on ENOMEM. */
ifd_request_t *ifd__seq_null_request(sb_t *b, const ifd_request_t *like) {
  ifd_request_t *r = ifd_request_new(b->s->model->server);
  uint32_t i;
  if (r == NULL) return NULL;
  r->null_req = 1;
  r->model_name = b->s->model->name;
  r->batch_size = like->batch_size;
  for (i = 0; i < like->n_inputs; i++) {
    const ifd_input_t *src = &like->inputs[i];
    ifd_input_t *in;
    void *zero;
    /* Controls and states of `like` were added after its own inputs:
     * copy only the client's. */
    if (i >= like->n_inputs - sr((ifd_request_t *)like)->added) break;
    in = ifd_request_add_input(r, src->name, strlen(src->name), src->dtype,
                               src->shape, src->ndims);
    zero = ifd_pool_calloc(&r->pool, src->byte_size ? src->byte_size : 1, 1);
    if (in == NULL || zero == NULL) goto out_free;
    in->data = zero;
    in->byte_size = src->byte_size;
  }
  if (add_ctl(b, r, &b->start, 0) < 0 || add_ctl(b, r, &b->end, 0) < 0 ||
      add_ctl(b, r, &b->ready, 0) < 0 || add_corrid(b, r, NULL) < 0 ||
      add_states(b, r, NULL) < 0)
    goto out_free;
  ifd_model_ref(b->s->model);
  r->model = b->s->model;
  ifd__req(r)->refs++; /* the backend's */
  ifd_request_set_state(r, IFD_REQ_QUEUED);
  return r;

out_free:
  ifd_request_unref(r);
  return NULL;
}

int ifd__seq_read_controls(sb_t *b, ifd_errmsg_t *err) {
  size_t i, j;
  for (i = 0; i < b->cfg->n_control_input; i++) {
    const Inference__ModelSequenceBatching__ControlInput *ci =
        b->cfg->control_input[i];
    for (j = 0; j < ci->n_control; j++) {
      const Inference__ModelSequenceBatching__Control *c = ci->control[j];
      ctl_t *t = NULL;
      switch (c->kind) {
        case INFERENCE__MODEL_SEQUENCE_BATCHING__CONTROL__KIND__CONTROL_SEQUENCE_START:
          t = &b->start;
          break;
        case INFERENCE__MODEL_SEQUENCE_BATCHING__CONTROL__KIND__CONTROL_SEQUENCE_END:
          t = &b->end;
          break;
        case INFERENCE__MODEL_SEQUENCE_BATCHING__CONTROL__KIND__CONTROL_SEQUENCE_READY:
          t = &b->ready;
          break;
        case INFERENCE__MODEL_SEQUENCE_BATCHING__CONTROL__KIND__CONTROL_SEQUENCE_CORRID:
          b->corrid_name = ci->name;
          b->corrid_dtype = (ifd_dtype_t)c->data_type;
          continue;
        default:
          continue;
      }
      if (ctl_from_config(t, ci->name, c) < 0)
        return ifd_errf(err, IFD_EINVAL,
                        "sequence batching control '%s' of model '%s' has no "
                        "false/true values",
                        ci->name, b->s->model->name);
    }
  }
  return 0;
}
