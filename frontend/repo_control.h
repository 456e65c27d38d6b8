/*
 * frontend/repo_control.h - the parameters of the model repository extension's
 * load and unload calls, read from an HTTP JSON body or a gRPC message into
 * core's ifd_load_params_t (core/server.h).
 *
 * Pure functions: no loop, no I/O, no server; both front ends and the unit
 * tests call them. Every refusal is a client mistake: IFD_EINVAL with
 * Triton's words where Triton has some (HTTP 400, gRPC INVALID_ARGUMENT; Triton
 * itself answers 500 / INTERNAL to several of them).
 */
#ifndef IFD_FRONTEND_REPO_CONTROL_H
#define IFD_FRONTEND_REPO_CONTROL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "core/server.h"
#include "proto/grpc_service.pb-c.h"

/** A load call's parameters and the memory they point into. */
typedef struct ifd_load_req {
  ifd_load_params_t params; /* points into `json`, `bufs` or the gRPC
                               message the request was read from */
  ifd_load_file_t *files;   /* owned: params.files (n_files entries) */
  uint8_t **bufs;           /* owned: HTTP only, the decoded contents of
                               each file (entries owned; NULL for gRPC) */
  json_t *json;             /* counted: HTTP only, the parsed body that
                               params.config and the paths point into */
} ifd_load_req_t;

/**
 * Reads an HTTP load body (`len` 0: no parameters) into *out:
 * {"parameters": {"config": "<model config JSON>", "file:<v>/<name>":
 * "<base64>"}}. Every parameter must be a string ("attempt to access JSON
 * non-string as string"); another key is refused ("unexpected error on
 * creating Triton parameter", Triton's words); file contents must be
 * base64. Returns 0 (release *out with ifd__load_req_free), IFD_EINVAL
 * with `err` filled, or IFD_ENOMEM; *out holds nothing to free on error.
 */
int ifd__load_req_from_json(const char *body, size_t len, ifd_load_req_t *out,
                            ifd_errmsg_t *err);

/**
 * Reads a RepositoryModelLoad request's parameters into *out: "config" a
 * string_param, "file:..." a bytes_param (no base64: the bytes as they
 * are); other keys are refused. *out points into `q`, which must outlive
 * it. Returns 0, IFD_EINVAL with Triton's message, IFD_EUNSUPPORTED for a
 * repository_name, or IFD_ENOMEM.
 */
int ifd__load_req_from_grpc(const Inference__RepositoryModelLoadRequest *q,
                            ifd_load_req_t *out, ifd_errmsg_t *err);

/** Frees what a load request read owns (not the struct). */
void ifd__load_req_free(ifd_load_req_t *r);

/**
 * Reads an HTTP unload body ({"parameters": {"unload_dependents": true}}):
 * *dependents 1 only for a JSON true. As tritonserver, a value of another
 * type unloads without the dependents (Triton answers 200 to it). A body
 * that is not a JSON object is refused: IFD_EINVAL.
 */
int ifd__unload_req_from_json(const char *body, size_t len, int *dependents,
                              ifd_errmsg_t *err);

/**
 * Reads a RepositoryModelUnload request: *dependents from the
 * "unload_dependents" bool_param. Returns 0, IFD_EINVAL ("invalid value type
 * for 'unload_dependents' parameter, expected bool_param.") or
 * IFD_EUNSUPPORTED for a repository_name.
 */
int ifd__unload_req_from_grpc(const Inference__RepositoryModelUnloadRequest *q,
                              int *dependents, ifd_errmsg_t *err);

/**
 * Decodes standard base64 (`n` bytes of `s`; "=" padding optional, no
 * whitespace) into `out` (room for n / 4 * 3 + 2 bytes). Returns the
 * decoded length, or -1 for a character outside the alphabet, padding not
 * at the end, or a length no encoding has.
 */
long ifd__base64_decode(const char *s, size_t n, uint8_t *out);

#endif
