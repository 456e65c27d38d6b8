/*
 * core/classify.c - Triton's classification extension (see classify.h):
 * label files and the top-N tensor.
 */
#include "core/classify.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"

/* ---- labels -------------------------------------------------------------- */

int ifd_labels_load(ifd_labels_t *l, const char *path, ifd_errmsg_t *err) {
  FILE *f = fopen(path, "rb");
  size_t cap = 0, len = 0, n = 0, i;
  char *text = NULL, *p;
  const char **line;

  memset(l, 0, sizeof(*l));
  if (f == NULL)
    return ifd_errf(err, errno == ENOENT ? IFD_ENOTFOUND : IFD_EINTERNAL,
                    "failed to open text file for read %s: %s", path,
                    strerror(errno));
  for (;;) {
    size_t got;
    if (len + 1 >= cap) {
      char *t;
      cap = cap != 0 ? 2 * cap : 4096;
      t = realloc(text, cap);
      if (t == NULL) {
        fclose(f);
        free(text);
        return ifd_errf(err, IFD_ENOMEM, "out of memory");
      }
      text = t;
    }
    got = fread(text + len, 1, cap - len - 1, f);
    len += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    fclose(f);
    free(text);
    return ifd_errf(err, IFD_EINTERNAL,
                    "failed to read text file %s: read error", path);
  }
  fclose(f);
  text[len] = '\0';
  /* std::getline: every '\n' ends a line; text after the last one is a
   * line too. */
  for (i = 0; i < len; i++)
    if (text[i] == '\n') n++;
  if (len > 0 && text[len - 1] != '\n') n++;
  line = malloc((n != 0 ? n : 1) * sizeof(*line));
  if (line == NULL) {
    free(text);
    return ifd_errf(err, IFD_ENOMEM, "out of memory");
  }
  for (p = text, i = 0; i < n; i++) {
    char *nl = memchr(p, '\n', (size_t)(text + len - p));
    line[i] = p;
    if (nl == NULL) break;
    *nl = '\0';
    p = nl + 1;
  }
  l->text = text;
  l->line = line;
  l->n = n;
  return 0;
}

void ifd_labels_free(ifd_labels_t *l) {
  if (l == NULL) return;
  free(l->text);
  free((void *)l->line);
  memset(l, 0, sizeof(*l));
}

/* ---- top-N --------------------------------------------------------------- */

/* One element: its value as the widest type of its kind, and its index. */
typedef struct elem {
  union {
    int64_t i;
    uint64_t u;
    double d;
  } v;
  size_t idx;
} elem_t;

/* Highest first; equal values keep index order (qsort is not stable). */
static int by_int(const void *a, const void *b) {
  const elem_t *x = a, *y = b;
  if (x->v.i != y->v.i) return x->v.i > y->v.i ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}
static int by_uint(const void *a, const void *b) {
  const elem_t *x = a, *y = b;
  if (x->v.u != y->v.u) return x->v.u > y->v.u ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}
/* NaN sorts after every number (Triton's comparison leaves it undefined). */
static int by_real(const void *a, const void *b) {
  const elem_t *x = a, *y = b;
  int xn = isnan(x->v.d), yn = isnan(y->v.d);
  if (xn != yn) return xn ? 1 : -1;
  if (!xn && x->v.d != y->v.d) return x->v.d > y->v.d ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

typedef enum { KIND_INT, KIND_UINT, KIND_REAL } kind_t;

/* Reads element i of `base` (dtype t) into e. */
static void load(const unsigned char *base, ifd_dtype_t t, size_t i,
                 elem_t *e) {
  e->idx = i;
  switch (t) {
    case IFD_TYPE_UINT8:
      e->v.u = base[i];
      break;
    case IFD_TYPE_UINT16: {
      uint16_t v;
      memcpy(&v, base + 2 * i, 2);
      e->v.u = v;
      break;
    }
    case IFD_TYPE_UINT32: {
      uint32_t v;
      memcpy(&v, base + 4 * i, 4);
      e->v.u = v;
      break;
    }
    case IFD_TYPE_UINT64:
      memcpy(&e->v.u, base + 8 * i, 8);
      break;
    case IFD_TYPE_INT8:
      e->v.i = (int8_t)base[i];
      break;
    case IFD_TYPE_INT16: {
      int16_t v;
      memcpy(&v, base + 2 * i, 2);
      e->v.i = v;
      break;
    }
    case IFD_TYPE_INT32: {
      int32_t v;
      memcpy(&v, base + 4 * i, 4);
      e->v.i = v;
      break;
    }
    case IFD_TYPE_INT64:
      memcpy(&e->v.i, base + 8 * i, 8);
      break;
    case IFD_TYPE_FP32: {
      float v;
      memcpy(&v, base + 4 * i, 4);
      e->v.d = v;
      break;
    }
    case IFD_TYPE_FP64:
      memcpy(&e->v.d, base + 8 * i, 8);
      break;
    default:
      IFD_ASSERT(!"a type ifd_classify refuses reached the reader");
      e->v.u = 0;
      break;
  }
}

/* "<value>:<index>" as std::to_string prints the value; returns the length
 * snprintf gives (buf may be too short: then it is cut). */
static int format(char *buf, size_t cap, kind_t kind, const elem_t *e) {
  switch (kind) {
    case KIND_INT:
      return snprintf(buf, cap, "%" PRId64 ":%zu", e->v.i, e->idx);
    case KIND_UINT:
      return snprintf(buf, cap, "%" PRIu64 ":%zu", e->v.u, e->idx);
    case KIND_REAL:
      break;
  }
  return snprintf(buf, cap, "%f:%zu", e->v.d, e->idx);
}

int ifd_classify(const void *data, uint64_t byte_size, ifd_dtype_t dtype,
                 const int64_t *shape, uint32_t ndims, int batched, uint32_t k,
                 const ifd_labels_t *labels, ifd_pool_t *pool,
                 ifd_class_result_t *out, ifd_errmsg_t *err) {
  size_t esize = ifd_dtype_size(dtype), per = 1, classes, nbatch, b, i, total;
  int (*cmp)(const void *, const void *);
  int64_t batch = 0;
  elem_t *el = NULL;
  unsigned char *w;
  kind_t kind;
  uint32_t d;
  int pass;

  switch (dtype) {
    case IFD_TYPE_UINT8:
    case IFD_TYPE_UINT16:
    case IFD_TYPE_UINT32:
    case IFD_TYPE_UINT64:
      kind = KIND_UINT;
      cmp = by_uint;
      break;
    case IFD_TYPE_INT8:
    case IFD_TYPE_INT16:
    case IFD_TYPE_INT32:
    case IFD_TYPE_INT64:
      kind = KIND_INT;
      cmp = by_int;
      break;
    case IFD_TYPE_FP32:
    case IFD_TYPE_FP64:
      kind = KIND_REAL;
      cmp = by_real;
      break;
    default:
      return ifd_errf(err, IFD_EINVAL,
                      "class result not available for output due to "
                      "unsupported type '%s'",
                      ifd_dtype_name(dtype));
  }
  if (batched && ndims > 0) batch = shape[0];
  for (d = batch > 0 ? 1 : 0; d < ndims; d++)
    per *= shape[d] > 0 ? (size_t)shape[d] : 0;
  classes = per < k ? per : k;
  nbatch = batch > 0 ? (size_t)batch : 1;
  out->ndims = 0;
  if (batch > 0) out->shape[out->ndims++] = batch;
  out->shape[out->ndims++] = (int64_t)classes;
  out->data = NULL;
  out->byte_size = 0;
  if (per > 0) {
    el = malloc(per * sizeof(*el));
    if (el == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  }
  /* Two passes over the sorted entries: the size, then the bytes. */
  for (pass = 0, total = 0, w = NULL; pass < 2; pass++) {
    for (b = 0; b < nbatch; b++) {
      /* An entry the buffer does not hold has no elements (as Triton). */
      size_t n = (b + 1) * per * esize <= byte_size ? per : 0, top;
      const unsigned char *base = (const unsigned char *)data + b * per * esize;
      for (i = 0; i < n; i++) load(base, dtype, i, &el[i]);
      if (n > 1) qsort(el, n, sizeof(*el), cmp);
      top = n < k ? n : k;
      for (i = 0; i < top; i++) {
        char head[400];
        const char *label = labels != NULL && el[i].idx < labels->n
                                ? labels->line[el[i].idx]
                                : NULL;
        int hl = format(head, sizeof(head), kind, &el[i]);
        size_t ll = label != NULL && label[0] != '\0' ? strlen(label) : 0;
        uint32_t len;
        if (hl < 0 || (size_t)hl >= sizeof(head)) hl = (int)strlen(head);
        len = (uint32_t)((size_t)hl + (ll != 0 ? ll + 1 : 0));
        if (pass == 0) {
          total += 4 + (size_t)len;
          continue;
        }
        memcpy(w, &len, 4);
        memcpy(w + 4, head, (size_t)hl);
        if (ll != 0) {
          w[4 + hl] = ':';
          memcpy(w + 5 + hl, label, ll);
        }
        w += 4 + len;
      }
    }
    if (pass == 0) {
      w = ifd_pool_alloc(pool, total != 0 ? total : 1);
      if (w == NULL) {
        free(el);
        return ifd_errf(err, IFD_ENOMEM, "out of memory");
      }
      out->data = w;
      out->byte_size = total;
    }
  }
  free(el);
  return 0;
}
