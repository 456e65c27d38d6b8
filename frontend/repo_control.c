/*
 * frontend/repo_control.c - load and unload parameters from HTTP bodies and
 * gRPC messages (see frontend/repo_control.h).
 *
 * The checks follow tritonserver's front ends: over HTTP every load
 * parameter must be a JSON string, "config" is kept as is (core parses it)
 * and "file:<path>" is base64; over gRPC "config" is a string_param and
 * "file:<path>" a bytes_param. Parameters are taken in the order they come.
 */
#include "frontend/repo_control.h"

#include <stdlib.h>
#include <string.h>

#define FILE_PREFIX "file:"
#define FILE_PREFIX_LEN 5

/* ---- base64 ----------------------------------------------------------------
 */

static int b64_digit(unsigned char ch) {
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
  if (ch >= '0' && ch <= '9') return ch - '0' + 52;
  if (ch == '+') return 62;
  if (ch == '/') return 63;
  return -1;
}

long ifd__base64_decode(const char *s, size_t n, uint8_t *out) {
  size_t i, o = 0, body = n;
  uint32_t acc = 0;
  int bits = 0;

  /* Up to two '=' close a padded text, whose length is then a multiple of
   * four; an unpadded one may stop after 2 or 3 digits of its last group. */
  if (body > 0 && s[body - 1] == '=') body--;
  if (body > 0 && s[body - 1] == '=') body--;
  if (body != n && n % 4 != 0) return -1;
  if (body % 4 == 1) return -1;
  for (i = 0; i < body; i++) {
    int d = b64_digit((unsigned char)s[i]);
    if (d < 0) return -1;
    acc = (acc << 6 | (uint32_t)d) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (uint8_t)(acc >> bits);
    }
  }
  return (long)o;
}

/* ---- load ------------------------------------------------------------------
 */

void ifd__load_req_free(ifd_load_req_t *r) {
  size_t i;

  if (r->bufs != NULL)
    for (i = 0; i < r->params.n_files; i++) free(r->bufs[i]);
  free(r->bufs);
  free(r->files);
  json_decref(r->json);
  memset(r, 0, sizeof(*r));
}

static int is_file_key(const char *key, size_t len) {
  return len >= FILE_PREFIX_LEN &&
         memcmp(key, FILE_PREFIX, FILE_PREFIX_LEN) == 0;
}

int ifd__load_req_from_json(const char *body, size_t len, ifd_load_req_t *out,
                            ifd_errmsg_t *err) {
  json_error_t jerr;
  json_t *params, *v;
  const char *key;
  size_t n_members;
  int rc;

  memset(out, 0, sizeof(*out));
  if (len == 0) return 0;
  out->json = json_loadb(body, len, 0, &jerr);
  if (out->json == NULL)
    return ifd_errf(err, IFD_EINVAL,
                    "failed to parse the request JSON buffer: %s at %d",
                    jerr.text, jerr.position);
  if (!json_is_object(out->json)) {
    rc = ifd_errf(err, IFD_EINVAL,
                  "failed to parse the request JSON buffer: expected an "
                  "object");
    goto out_fail;
  }
  params = json_object_get(out->json, "parameters");
  if (params == NULL) return 0;
  if (!json_is_object(params)) {
    rc = ifd_errf(err, IFD_EINVAL,
                  "Unable to parse 'parameters': expected an object");
    goto out_fail;
  }
  n_members = json_object_size(params);
  if (n_members == 0) return 0;
  out->files = calloc(n_members, sizeof(*out->files));
  out->bufs = calloc(n_members, sizeof(*out->bufs));
  if (out->files == NULL || out->bufs == NULL) {
    rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
    goto out_fail;
  }
  json_object_foreach(params, key, v) {
    size_t klen = strlen(key), slen;
    const char *s;

    if (!json_is_string(v)) {
      rc = ifd_errf(err, IFD_EINVAL,
                    "attempt to access JSON non-string as string");
      goto out_fail;
    }
    s = json_string_value(v);
    slen = json_string_length(v);
    if (strcmp(key, "config") == 0) {
      out->params.config = s;
      out->params.config_len = slen;
    } else if (is_file_key(key, klen)) {
      ifd_load_file_t *f = &out->files[out->params.n_files];
      uint8_t *buf = malloc(slen / 4 * 3 + 3);
      long n;

      if (buf == NULL) {
        rc = ifd_errf(err, IFD_ENOMEM, "out of memory");
        goto out_fail;
      }
      out->bufs[out->params.n_files++] = buf; /* freed with the request */
      n = ifd__base64_decode(s, slen, buf);
      if (n < 0) {
        rc = ifd_errf(err, IFD_EINVAL, "invalid base64 in load parameter '%s'",
                      key);
        goto out_fail;
      }
      f->path = key + FILE_PREFIX_LEN;
      f->path_len = klen - FILE_PREFIX_LEN;
      f->data = buf;
      f->len = (size_t)n;
    } else {
      /* tritonserver's words (it answers 500); its gRPC front end says
       * "unrecognized load parameter" instead. */
      rc = ifd_errf(err, IFD_EINVAL,
                    "unexpected error on creating Triton parameter");
      goto out_fail;
    }
  }
  out->params.files = out->files;
  return 0;

out_fail:
  ifd__load_req_free(out);
  return rc;
}

int ifd__load_req_from_grpc(const Inference__RepositoryModelLoadRequest *q,
                            ifd_load_req_t *out, ifd_errmsg_t *err) {
  size_t i;
  int rc;

  memset(out, 0, sizeof(*out));
  if (q->repository_name != NULL && q->repository_name[0] != '\0')
    return ifd_errf(err, IFD_EUNSUPPORTED,
                    "'repository_name' specification is not supported");
  if (q->n_parameters == 0) return 0;
  out->files = calloc(q->n_parameters, sizeof(*out->files));
  if (out->files == NULL) return ifd_errf(err, IFD_ENOMEM, "out of memory");
  for (i = 0; i < q->n_parameters; i++) {
    const char *key = q->parameters[i]->key;
    const Inference__ModelRepositoryParameter *v = q->parameters[i]->value;
    size_t klen = strlen(key);
    int have = v != NULL ? (int)v->parameter_choice_case : 0;

    if (strcmp(key, "config") == 0) {
      if (have !=
          INFERENCE__MODEL_REPOSITORY_PARAMETER__PARAMETER_CHOICE_STRING_PARAM) {
        rc = ifd_errf(err, IFD_EINVAL,
                      "invalid value type for load parameter '%s', expected "
                      "string_param.",
                      key);
        goto out_fail;
      }
      out->params.config = v->string_param;
      out->params.config_len = strlen(v->string_param);
    } else if (is_file_key(key, klen)) {
      ifd_load_file_t *f = &out->files[out->params.n_files];

      if (have !=
          INFERENCE__MODEL_REPOSITORY_PARAMETER__PARAMETER_CHOICE_BYTES_PARAM) {
        rc = ifd_errf(err, IFD_EINVAL,
                      "invalid value type for load parameter '%s', expected "
                      "bytes_param.",
                      key);
        goto out_fail;
      }
      f->path = key + FILE_PREFIX_LEN;
      f->path_len = klen - FILE_PREFIX_LEN;
      f->data = v->bytes_param.data;
      f->len = v->bytes_param.len;
      out->params.n_files++;
    } else {
      rc = ifd_errf(err, IFD_EINVAL, "unrecognized load parameter '%s'.", key);
      goto out_fail;
    }
  }
  out->params.files = out->files;
  return 0;

out_fail:
  ifd__load_req_free(out);
  return rc;
}

/* ---- unload ----------------------------------------------------------------
 */

int ifd__unload_req_from_json(const char *body, size_t len, int *dependents,
                              ifd_errmsg_t *err) {
  json_error_t jerr;
  json_t *root, *params;

  *dependents = 0;
  if (len == 0) return 0;
  root = json_loadb(body, len, 0, &jerr);
  if (root == NULL)
    return ifd_errf(err, IFD_EINVAL,
                    "failed to parse the request JSON buffer: %s at %d",
                    jerr.text, jerr.position);
  if (!json_is_object(root)) {
    json_decref(root);
    return ifd_errf(err, IFD_EINVAL,
                    "failed to parse the request JSON buffer: expected an "
                    "object");
  }
  params = json_object_get(root, "parameters");
  *dependents = json_is_true(json_object_get(params, "unload_dependents"));
  json_decref(root);
  return 0;
}

int ifd__unload_req_from_grpc(const Inference__RepositoryModelUnloadRequest *q,
                              int *dependents, ifd_errmsg_t *err) {
  size_t i;

  *dependents = 0;
  if (q->repository_name != NULL && q->repository_name[0] != '\0')
    return ifd_errf(err, IFD_EUNSUPPORTED,
                    "'repository_name' specification is not supported");
  for (i = 0; i < q->n_parameters; i++) {
    const Inference__ModelRepositoryParameter *v = q->parameters[i]->value;

    if (strcmp(q->parameters[i]->key, "unload_dependents") != 0) continue;
    if (v == NULL ||
        v->parameter_choice_case !=
            INFERENCE__MODEL_REPOSITORY_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM)
      return ifd_errf(err, IFD_EINVAL,
                      "invalid value type for 'unload_dependents' parameter, "
                      "expected bool_param.");
    *dependents = v->bool_param != 0;
    break;
  }
  return 0;
}
