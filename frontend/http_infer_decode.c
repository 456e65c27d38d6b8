/*
 * frontend/http_infer_decode.c - a KServe v2 infer request body (JSON header
 * and the binary tensor extension) into an ifd_request_t.
 *
 * Decoding validates the JSON header in one pass (frontend/json_scan.c: the
 * syntax jansson accepted, no tree, no allocation), then walks the text:
 * fields are found by scanning objects (the last duplicate key wins, as with
 * jansson), and JSON `data` is converted straight from the text into one
 * buffer from the request pool. A shape that claims more elements than the
 * text could hold allocates nothing; BYTES data is measured before it is
 * copied. Binary inputs point straight into the body that the request owns
 * (req->body): no copy. A tensor in shared memory (parameters
 * shared_memory_region / _offset / _byte_size) is only listed in the info
 * for the loop to resolve against the region table (frontend/http_infer.c),
 * with Triton's checks of which fields may go together. Nothing here touches
 * the network, the server or the loop, so the unit tests drive it with
 * hand-made requests and a worker thread may run it (frontend/http_infer.c).
 */
#include <inttypes.h>
#include <string.h>

#include "base/check.h"
#include "core/config.h"
#include "core/dtype.h"
#include "core/infer.h"
#include "frontend/internal.h"

/* The decoded string at v as a NUL-terminated copy in the request pool. */
static char *pool_str(ifd_request_t *req, const char *v, const char *end,
                      size_t *len) {
  int esc;
  size_t n = ifd_json_strlen(v, end, &esc);
  char *s;

  if (len != NULL) *len = n;
  if (!esc) return ifd_pool_strndup(&req->pool, v + 1, n);
  s = ifd_pool_alloc(&req->pool, n + 1);
  if (s == NULL) return NULL;
  ifd_json_strcpy(v, end, s);
  s[n] = '\0';
  return s;
}

static int decode_shape(ifd_request_t *req, ifd_input_t *in, const char *js,
                        const char *end, ifd_errmsg_t *err) {
  const char *it = js, *v;
  size_t i, n = 0;

  if (ifd__json_is_arr(js, end)) {
    while (n <= IFD_MAX_DIMS && ifd__json_element(&it, end, &v)) {
      n++;
      it = ifd__json_skip(v, end);
    }
  }
  if (!ifd__json_is_arr(js, end) || n > IFD_MAX_DIMS) {
    return ifd_errf(err, IFD_EINVAL,
                    "Unable to parse 'shape' of input '%s': expected an array "
                    "of at most %d dims",
                    in->name, IFD_MAX_DIMS);
  }
  in->shape = ifd_pool_calloc(&req->pool, n != 0 ? n : 1, sizeof(int64_t));
  if (in->shape == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  it = js;
  for (i = 0; i < n && ifd__json_element(&it, end, &v); i++) {
    int64_t d;
    if (!ifd__json_get_int(v, end, &d) || d < 0) {
      return ifd_errf(err, IFD_EINVAL,
                      "Unable to parse 'shape' of input '%s': dim %zu is not "
                      "a non-negative integer",
                      in->name, i);
    }
    in->shape[i] = d;
    it = ifd__json_skip(v, end);
  }
  in->ndims = (uint32_t)n;
  return 0;
}

/* Appends a shared-memory placement to info->shm (request pool). */
static ifd_http_shm_place_t *add_place(ifd_request_t *req,
                                       ifd_http_infer_info_t *info,
                                       ifd_errmsg_t *err) {
  if (info->n_shm == info->cap_shm) {
    uint32_t cap = info->cap_shm != 0 ? 2 * info->cap_shm : 4;
    ifd_http_shm_place_t *p = ifd_pool_alloc(&req->pool, cap * sizeof(*p));
    if (p == NULL) {
      ifd_errf(err, IFD_ENOMEM, "out of memory");
      return NULL;
    }
    if (info->n_shm != 0) memcpy(p, info->shm, info->n_shm * sizeof(*p));
    info->shm = p;
    info->cap_shm = cap;
  }
  return &info->shm[info->n_shm++];
}

/* The shared-memory parameters of a tensor (`what` "input" or "output",
 * named `name`): region `shm` (present), optional offset and byte size.
 * Records the placement of tensor `index` in info->shm. */
static int decode_shm(ifd_request_t *req, const char *what, const char *name,
                      uint32_t index, const char *shm, const char *off,
                      const char *size, const char *end,
                      ifd_http_infer_info_t *info, ifd_errmsg_t *err) {
  ifd_http_shm_place_t *pl;
  uint64_t o = 0, n = 0;

  if (!ifd__json_is_str(shm, end))
    return ifd_errf(err, IFD_EINVAL,
                    "Unable to parse 'shared_memory_region' of %s '%s': "
                    "expected a string",
                    what, name);
  if (off != NULL && !ifd__json_get_uint(off, end, &o))
    return ifd_errf(err, IFD_EINVAL,
                    "Unable to parse 'shared_memory_offset' of %s '%s': "
                    "expected a non-negative integer",
                    what, name);
  if (size != NULL && !ifd__json_get_uint(size, end, &n))
    return ifd_errf(err, IFD_EINVAL,
                    "Unable to parse 'shared_memory_byte_size' of %s '%s': "
                    "expected a non-negative integer",
                    what, name);
  pl = add_place(req, info, err);
  if (pl == NULL) return IFD_ENOMEM;
  pl->region = pool_str(req, shm, end, &pl->region_len);
  if (pl->region == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  pl->offset = o;
  pl->byte_size = n;
  pl->index = index;
  pl->output = what[0] == 'o';
  return 0;
}

/* Triton's answer when an input does not hold exactly one of JSON data,
 * binary data and a shared-memory region. */
static int content_error(int data, int bin, int shm, ifd_errmsg_t *err) {
  if (!data && !bin && !shm)
    return ifd_errf(err, IFD_EINVAL,
                    "Input must set only one of the following fields: "
                    "'data', 'binary_data_size' in 'parameters', "
                    "'shared_memory_region' in 'parameters'. But no field "
                    "is set");
  return ifd_errf(err, IFD_EINVAL,
                  "Input must set only one of the following fields: 'data', "
                  "'binary_data_size' in 'parameters', "
                  "'shared_memory_region' in 'parameters'. But set%s%s%s",
                  data ? " 'data'" : "", bin ? " 'binary_data_size'" : "",
                  shm ? " 'shared_memory_region'" : "");
}

/* One element of `inputs` at j. `bin`/`bin_len`/`off`: the binary section. */
static int decode_input(ifd_request_t *req, ifd_input_t *in, const char *j,
                        const char *end, size_t idx, const char *bin,
                        size_t bin_len, size_t *off,
                        ifd_http_infer_info_t *info, ifd_errmsg_t *err) {
  const char *name = NULL, *dt = NULL, *shape = NULL, *params = NULL;
  const char *bds = NULL, *shm = NULL, *data = NULL, *data_end = NULL;
  const char *shm_off = NULL, *shm_size = NULL;
  const char *it, *v;
  char dtbuf[32], *dtname = dtbuf;
  size_t dtlen;
  ifd_jkey_t k;
  int64_t count;
  int rc;

  if (!ifd__json_is_obj(j, end))
    return ifd_errf(err, IFD_EINVAL,
                    "Unable to parse 'inputs': element %zu is not an object",
                    idx);
  /* The last of duplicate keys wins, as in jansson. */
  for (it = j; ifd__json_member(&it, end, &k, &v);) {
    it = ifd__json_skip(v, end);
    if (ifd__json_key_is(&k, end, "name"))
      name = v;
    else if (ifd__json_key_is(&k, end, "datatype"))
      dt = v;
    else if (ifd__json_key_is(&k, end, "shape"))
      shape = v;
    else if (ifd__json_key_is(&k, end, "parameters"))
      params = v;
    else if (ifd__json_key_is(&k, end, "data")) {
      data = v;
      data_end = it;
    }
  }
  if (!ifd__json_is_str(name, end))
    return ifd_errf(err, IFD_EINVAL,
                    "Unable to parse 'name' of input %zu: expected a string",
                    idx);
  in->name = pool_str(req, name, end, NULL);
  if (in->name == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  if (!ifd__json_is_str(dt, end))
    return ifd_errf(
        err, IFD_EINVAL,
        "Unable to parse 'datatype' of input '%s': expected a string",
        in->name);
  {
    int esc;
    dtlen = ifd_json_strlen(dt, end, &esc);
    if (dtlen >= sizeof(dtbuf)) {
      dtname = ifd_pool_alloc(&req->pool, dtlen + 1);
      if (dtname == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
    }
    ifd_json_strcpy(dt, end, dtname);
    dtname[dtlen] = '\0';
  }
  in->dtype = ifd_dtype_from_name(dtname, dtlen);
  if (in->dtype == IFD_TYPE_INVALID)
    return ifd_errf(err, IFD_EINVAL, "invalid datatype '%s' of input '%s'",
                    dtname, in->name);
  rc = decode_shape(req, in, shape, end, err);
  if (rc != 0) return rc;
  rc = ifd_shape_count(in->shape, in->ndims, &count);
  if (rc != 0)
    return ifd_errf(err, IFD_EINVAL,
                    "shape of input '%s' has too many elements", in->name);

  if (params != NULL && !ifd__json_is_obj(params, end))
    return ifd_errf(
        err, IFD_EINVAL,
        "Unable to parse 'parameters' of input '%s': expected an object",
        in->name);
  if (params != NULL) {
    for (it = params; ifd__json_member(&it, end, &k, &v);) {
      it = ifd__json_skip(v, end);
      if (ifd__json_key_is(&k, end, "shared_memory_region"))
        shm = v;
      else if (ifd__json_key_is(&k, end, "shared_memory_offset"))
        shm_off = v;
      else if (ifd__json_key_is(&k, end, "shared_memory_byte_size"))
        shm_size = v;
      else if (ifd__json_key_is(&k, end, "binary_data_size"))
        bds = v;
    }
  }
  if ((data != NULL) + (bds != NULL) + (shm != NULL) != 1)
    return content_error(data != NULL, bds != NULL, shm != NULL, err);
  if (shm != NULL) {
    /* Read in place once the region is resolved on the loop. */
    in->data = NULL;
    in->byte_size = 0;
    return decode_shm(req, "input", in->name, (uint32_t)idx, shm, shm_off,
                      shm_size, end, info, err);
  }
  if (bds != NULL) {
    uint64_t s;
    if (!ifd__json_get_uint(bds, end, &s))
      return ifd_errf(err, IFD_EINVAL,
                      "Unable to parse 'binary_data_size' of input '%s': "
                      "expected a non-negative integer",
                      in->name);
    if (s > bin_len - *off) {
      return ifd_errf(err, IFD_EINVAL,
                      "unexpected size for input '%s': binary_data_size is "
                      "%" PRIu64
                      " but only %zu bytes of binary data are left in the body",
                      in->name, s, bin_len - *off);
    }
    in->data = bin + *off;
    in->byte_size = s;
    *off += (size_t)s;
    return 0;
  }
  return ifd__http_infer_data(req, in, data, data_end, end, count, err);
}

/* One member of the request's `parameters`. */
typedef struct pmember {
  char *key;     /* request pool */
  const char *v; /* the value (of the last duplicate) */
  int dup;       /* a repeat of an earlier key */
} pmember_t;

static uint32_t key_hash(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s != '\0'; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

/* Marks repeated keys: the first keeps its place and takes the last value,
 * as jansson's object did. A hash table keeps this linear in the count. */
static int dedupe(ifd_request_t *req, pmember_t *m, size_t n) {
  size_t i, j, size = 16;
  uint32_t *slot; /* index + 1 of the first holder of a key; 0: free */

  if (n <= 8) {
    for (i = 1; i < n; i++) {
      for (j = 0; j < i; j++) {
        if (!m[j].dup && strcmp(m[j].key, m[i].key) == 0) {
          m[j].v = m[i].v;
          m[i].dup = 1;
          break;
        }
      }
    }
    return 0;
  }
  while (size < 2 * n) size *= 2;
  slot = ifd_pool_calloc(&req->pool, size, sizeof(*slot));
  if (slot == NULL) return IFD_ENOMEM;
  for (i = 0; i < n; i++) {
    for (j = key_hash(m[i].key) & (size - 1); slot[j] != 0;
         j = (j + 1) & (size - 1)) {
      if (strcmp(m[slot[j] - 1].key, m[i].key) == 0) break;
    }
    if (slot[j] == 0) {
      slot[j] = (uint32_t)(i + 1);
    } else {
      m[slot[j] - 1].v = m[i].v;
      m[i].dup = 1;
    }
  }
  return 0;
}

static int decode_params(ifd_request_t *req, const char *params,
                         const char *end, ifd_http_infer_info_t *info,
                         ifd_errmsg_t *err) {
  pmember_t *m = NULL;
  const char *it, *v;
  size_t i, n = 0, uniq;
  ifd_jkey_t k;

  if (!ifd__json_is_obj(params, end))
    return ifd_errf(err, IFD_EINVAL,
                    "Unable to parse 'parameters': expected an object");
  for (it = params; ifd__json_member(&it, end, &k, &v);) {
    it = ifd__json_skip(v, end);
    n++;
  }
  if (n != 0) {
    m = ifd_pool_calloc(&req->pool, n, sizeof(*m));
    if (m == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  }
  for (i = 0, it = params; i < n && ifd__json_member(&it, end, &k, &v); i++) {
    it = ifd__json_skip(v, end);
    m[i].key = pool_str(req, k.q, end, NULL);
    if (m[i].key == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
    m[i].v = v;
  }
  if (dedupe(req, m, n) != 0) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  for (i = 0, uniq = 0; i < n; i++) uniq += !m[i].dup;
  req->params = ifd_pool_calloc(&req->pool, uniq + 1, sizeof(ifd_param_t));
  if (req->params == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  for (i = 0; i < n; i++) {
    const char *key = m[i].key;
    ifd_param_t *p;
    v = m[i].v;
    if (m[i].dup) continue;
    if (strcmp(key, "sequence_id") == 0) {
      uint64_t id;
      if (ifd__json_get_uint(v, end, &id)) {
        req->correlation_id = id;
        req->correlation_id_str = NULL;
      } else if (ifd__json_is_str(v, end)) {
        req->correlation_id = 0;
        req->correlation_id_str = pool_str(req, v, end, NULL);
        if (req->correlation_id_str == NULL)
          return ifd_errf(err, IFD_ENOMEM, "out of memory");
      } else {
        return ifd_errf(err, IFD_EINVAL,
                        "Unable to parse 'sequence_id': expected a "
                        "non-negative integer or a string");
      }
      continue;
    }
    if (strcmp(key, "sequence_start") == 0 ||
        strcmp(key, "sequence_end") == 0 ||
        strcmp(key, "binary_data_output") == 0) {
      uint32_t flag = key[9] == 's' ? IFD_REQUEST_FLAG_SEQUENCE_START
                                    : IFD_REQUEST_FLAG_SEQUENCE_END;
      if (!ifd__json_is_bool(v, end))
        return ifd_errf(err, IFD_EINVAL,
                        "Unable to parse '%s': expected a boolean", key);
      if (key[0] == 'b')
        info->binary_all = *v == 't';
      else if (*v == 't')
        req->flags |= flag;
      else
        req->flags &= ~flag;
      continue;
    }
    if (strcmp(key, "priority") == 0 || strcmp(key, "timeout") == 0) {
      uint64_t u;
      if (!ifd__json_get_uint(v, end, &u) || (key[0] == 'p' && u > UINT32_MAX))
        return ifd_errf(err, IFD_EINVAL,
                        "Unable to parse '%s': expected a non-negative integer",
                        key);
      if (key[0] == 'p')
        req->priority = (uint32_t)u;
      else
        req->timeout_us = u;
      continue;
    }
    p = &req->params[req->n_params];
    p->key = key;
    if (ifd__json_is_str(v, end)) {
      p->type = IFD_PARAM_STRING;
      p->v.s = pool_str(req, v, end, NULL);
      if (p->v.s == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
    } else if (ifd__json_is_num(v, end)) {
      ifd_jnum_t num;
      ifd__json_number(v, end, &num);
      if (num.is_int) {
        p->type = IFD_PARAM_INT;
        p->v.i = num.i;
      } else {
        p->type = IFD_PARAM_DOUBLE;
        p->v.d = num.d;
      }
    } else if (ifd__json_is_bool(v, end)) {
      p->type = IFD_PARAM_BOOL;
      p->v.b = *v == 't';
    } else {
      return ifd_errf(
          err, IFD_EINVAL,
          "parameter '%s' must be a string, an integer, a boolean or a number",
          key);
    }
    req->n_params++;
  }
  return 0;
}

static int decode_outputs(ifd_request_t *req, const char *outs, const char *end,
                          ifd_http_infer_info_t *info, ifd_errmsg_t *err) {
  const char *it, *o;
  size_t i, n = 0;

  if (!ifd__json_is_arr(outs, end))
    return ifd_errf(err, IFD_EINVAL,
                    "Unable to parse 'outputs': expected an array");
  for (it = outs; ifd__json_element(&it, end, &o);) {
    it = ifd__json_skip(o, end);
    n++;
  }
  if (n == 0) return 0;
  req->outputs = ifd_pool_calloc(&req->pool, n, sizeof(ifd_output_req_t));
  if (req->outputs == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  for (i = 0, it = outs; i < n && ifd__json_element(&it, end, &o); i++) {
    const char *name = NULL, *params = NULL, *shm = NULL, *bin = NULL;
    const char *cls = NULL, *shm_off = NULL, *shm_size = NULL, *mit, *v;
    ifd_output_req_t *out = &req->outputs[i];
    int binary = info->binary_all;
    ifd_jkey_t k;

    it = ifd__json_skip(o, end);
    if (!ifd__json_is_obj(o, end))
      return ifd_errf(err, IFD_EINVAL,
                      "Unable to parse 'outputs': element %zu is not an object",
                      i);
    for (mit = o; ifd__json_member(&mit, end, &k, &v);) {
      mit = ifd__json_skip(v, end);
      if (ifd__json_key_is(&k, end, "name"))
        name = v;
      else if (ifd__json_key_is(&k, end, "parameters"))
        params = v;
    }
    if (!ifd__json_is_str(name, end))
      return ifd_errf(err, IFD_EINVAL,
                      "Unable to parse 'name' of output %zu: expected a string",
                      i);
    out->name = pool_str(req, name, end, NULL);
    if (out->name == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
    if (params != NULL && !ifd__json_is_obj(params, end))
      return ifd_errf(
          err, IFD_EINVAL,
          "Unable to parse 'parameters' of output '%s': expected an object",
          out->name);
    if (params != NULL) {
      for (mit = params; ifd__json_member(&mit, end, &k, &v);) {
        mit = ifd__json_skip(v, end);
        if (ifd__json_key_is(&k, end, "shared_memory_region"))
          shm = v;
        else if (ifd__json_key_is(&k, end, "shared_memory_offset"))
          shm_off = v;
        else if (ifd__json_key_is(&k, end, "shared_memory_byte_size"))
          shm_size = v;
        else if (ifd__json_key_is(&k, end, "binary_data"))
          bin = v;
        else if (ifd__json_key_is(&k, end, "classification"))
          cls = v;
      }
      if (bin != NULL && !ifd__json_is_bool(bin, end))
        return ifd_errf(
            err, IFD_EINVAL,
            "Unable to parse 'binary_data' of output '%s': expected a boolean",
            out->name);
      if (bin != NULL) binary = *bin == 't';
      if (shm != NULL) {
        /* Triton's checks: classification results are not written to
         * shared memory, and a placed output carries no data at all. */
        int rc;
        if (cls != NULL)
          return ifd_errf(err, IFD_EINVAL,
                          "Output can't set both 'shared_memory_region' and "
                          "'classification'");
        if (bin != NULL && *bin == 't')
          return ifd_errf(err, IFD_EINVAL,
                          "Output can't set both 'shared_memory_region' and "
                          "'binary_data'");
        rc = decode_shm(req, "output", out->name, (uint32_t)i, shm, shm_off,
                        shm_size, end, info, err);
        if (rc != 0) return rc;
        binary = 0;
      }
      if (cls != NULL) {
        uint64_t c;
        if (!ifd__json_get_uint(cls, end, &c) || c > UINT32_MAX)
          return ifd_errf(err, IFD_EINVAL,
                          "Unable to parse 'classification' of output '%s': "
                          "expected a non-negative integer",
                          out->name);
        out->class_count = (uint32_t)c;
      }
    }
    out->proto_flags = binary ? IFD_HTTP_OUT_BINARY : 0;
  }
  req->n_outputs = (uint32_t)n;
  return 0;
}

int ifd__http_infer_decode(ifd_request_t *req, const char *body,
                           size_t body_len, size_t json_len,
                           ifd_http_infer_info_t *info, ifd_errmsg_t *err) {
  const char *end, *it, *v;
  const char *id = NULL, *params = NULL, *inputs = NULL, *outputs = NULL;
  ifd_jerr_t jerr;
  ifd_jkey_t k;
  size_t i, n = 0, off = 0;
  int rc;

  info->binary_all = 0;
  info->shm = NULL;
  info->n_shm = 0;
  info->cap_shm = 0;
  /* A request without a body has none at all (NULL): no arithmetic on it. */
  if (body == NULL) body = "";
  end = body + json_len;
  if (json_len > body_len) {
    return ifd_errf(err, IFD_EINVAL,
                    "Inference-Header-Content-Length (%zu) exceeds the body "
                    "size (%zu)",
                    json_len, body_len);
  }
  /* Syntax first, so that a malformed body reports that and nothing else. */
  if (ifd__json_validate(body, json_len, &jerr) != 0) {
    return ifd_errf(err, IFD_EINVAL,
                    "failed to parse the request JSON buffer: %s at %zu",
                    jerr.text, jerr.pos);
  }
  it = ifd__json_ws(body, end);
  if (!ifd__json_is_obj(it, end))
    return ifd_errf(err, IFD_EINVAL, "the request JSON must be an object");
  /* Unknown keys are skipped; the last of duplicate keys wins. */
  while (ifd__json_member(&it, end, &k, &v)) {
    it = ifd__json_skip(v, end);
    if (ifd__json_key_is(&k, end, "id"))
      id = v;
    else if (ifd__json_key_is(&k, end, "parameters"))
      params = v;
    else if (ifd__json_key_is(&k, end, "inputs"))
      inputs = v;
    else if (ifd__json_key_is(&k, end, "outputs"))
      outputs = v;
  }
  req->id = "";
  if (id != NULL) {
    if (!ifd__json_is_str(id, end))
      return ifd_errf(err, IFD_EINVAL,
                      "Unable to parse 'id': expected a string");
    req->id = pool_str(req, id, end, NULL);
    if (req->id == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  }
  if (params != NULL && (rc = decode_params(req, params, end, info, err)) != 0)
    return rc;

  if (!ifd__json_is_arr(inputs, end))
    return ifd_errf(err, IFD_EINVAL,
                    "Unable to parse 'inputs': expected an array");
  for (it = inputs; ifd__json_element(&it, end, &v);) {
    it = ifd__json_skip(v, end);
    n++;
  }
  if (n != 0) {
    req->inputs = ifd_pool_calloc(&req->pool, n, sizeof(ifd_input_t));
    if (req->inputs == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  }
  for (i = 0, it = inputs; i < n && ifd__json_element(&it, end, &v); i++) {
    it = ifd__json_skip(v, end);
    rc = decode_input(req, &req->inputs[i], v, end, i, body + json_len,
                      body_len - json_len, &off, info, err);
    if (rc != 0) return rc;
    req->n_inputs = (uint32_t)(i + 1);
  }
  if (off != body_len - json_len) {
    return ifd_errf(err, IFD_EINVAL,
                    "the body holds %zu bytes of binary data beyond those the "
                    "inputs declare",
                    body_len - json_len - off);
  }
  if (outputs != NULL &&
      (rc = decode_outputs(req, outputs, end, info, err)) != 0)
    return rc;
  return 0;
}

int ifd__http_infer_raw(ifd_request_t *req, const ifd_model_config_t *c,
                        const char *model_name, const char *body,
                        size_t body_len, ifd_http_infer_info_t *info,
                        ifd_errmsg_t *err) {
  const Inference__ModelInput *ci;
  ifd_input_t *in;
  int64_t elems = 1;
  size_t k, nd, wild = SIZE_MAX;

  memset(info, 0, sizeof(*info));
  info->binary_all = 1; /* Triton answers raw requests in binary */
  req->id = "";
  if (c->n_input != 1)
    return ifd_errf(err, IFD_EINVAL,
                    "[request id: <id_unknown>] Raw request must only have 1 "
                    "input (found 1) to be deduced but got %zu inputs in '%s' "
                    "model configuration",
                    c->n_input, model_name);
  ci = c->input[0];
  nd = ci->n_dims + (c->max_batch_size != 0 ? 1 : 0);
  req->inputs = ifd_pool_calloc(&req->pool, 1, sizeof(ifd_input_t));
  in = req->inputs;
  if (in == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  in->shape = ifd_pool_calloc(&req->pool, nd != 0 ? nd : 1, sizeof(int64_t));
  if (in->shape == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  in->ndims = 0;
  if (c->max_batch_size != 0) in->shape[in->ndims++] = 1;
  for (k = 0; k < ci->n_dims; k++) {
    if (ci->dims[k] == -1) {
      if (wild != SIZE_MAX)
        return ifd_errf(err, IFD_EINVAL,
                        "[request id: <id_unknown>] The shape of the raw input "
                        "'%s' can not be deduced because there are more than "
                        "one variable-sized dimension",
                        ci->name);
      wild = in->ndims;
    } else {
      elems *= ci->dims[k];
    }
    in->shape[in->ndims++] = ci->dims[k];
  }
  in->name = ifd_pool_strndup(&req->pool, ci->name, strlen(ci->name));
  if (in->name == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  in->dtype = (ifd_dtype_t)ci->data_type;
  if (in->dtype == IFD_TYPE_BYTES) {
    unsigned char *d;
    uint32_t len = (uint32_t)body_len;
    if (wild != SIZE_MAX || elems != 1 || body_len > UINT32_MAX)
      return ifd_errf(err, IFD_EINVAL,
                      "[request id: <id_unknown>] For BYTE datatype raw input "
                      "'%s', the model must have input shape [1]",
                      ci->name);
    /* Triton's convention for one BYTES element: its length first. */
    d = ifd_pool_alloc(&req->pool, body_len + 4);
    if (d == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
    memcpy(d, &len, 4);
    if (body_len != 0) memcpy(d + 4, body, body_len);
    in->data = d;
    in->byte_size = body_len + 4;
  } else {
    size_t esize = ifd_dtype_size(in->dtype);
    if (wild != SIZE_MAX)
      in->shape[wild] = elems > 0 && esize > 0
                            ? (int64_t)(body_len / (uint64_t)elems / esize)
                            : 0;
    in->data = body_len != 0 ? body : "";
    in->byte_size = body_len;
  }
  req->n_inputs = 1;
  return 0;
}
