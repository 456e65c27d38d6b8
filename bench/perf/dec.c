/*
 * bench/perf/dec.c - inferd-perf's decoupled models: the request each
 * slot sends, and what a stream response says.
 *
 * A decoupled model answers a request with any number of responses on the
 * ModelStreamInfer stream. Each slot (closed loop, its own stream, one
 * request in flight) owns a copy of the packed ModelInferRequest with two
 * fields appended, as seq.c does for sequences (protobuf merges a repeated
 * map entry, and the last value of a scalar field wins):
 *  - parameters["triton_enable_empty_final_response"] = true, so that the
 *    request always ends with a message flagged triton_final_response;
 *  - id (field 3), 20 decimal digits rewritten in place before each send,
 *    so that every request has a unique id and the length never changes.
 * The response side reads the first bytes of each ModelStreamInferResponse
 * (the parameters come before the outputs in field order) for the final
 * flag and for outputs. Loop thread only.
 */
#include <stdio.h>
#include <string.h>

#include "bench/perf/perf.h"

#define ID_WIDTH 20
#define FINAL_KEY "triton_final_response"

static const char enable_key[] = "triton_enable_empty_final_response";

int ifd__perf_dec_slot_init(ifd_perf_run_t *run, ifd_perf_slot_t *s) {
  size_t klen = sizeof enable_key - 1;
  uint8_t tail[96];
  size_t n = 0;

  /* parameters (4): entry {key (1), value (2): InferParameter {bool (1)}} */
  tail[n++] = 4 << 3 | 2;
  tail[n++] = (uint8_t)(2 + klen + 2 + 2);
  tail[n++] = 1 << 3 | 2;
  tail[n++] = (uint8_t)klen;
  memcpy(tail + n, enable_key, klen);
  n += klen;
  tail[n++] = 2 << 3 | 2;
  tail[n++] = 2;
  tail[n++] = 1 << 3 | 0;
  tail[n++] = 1;
  /* id (3): ID_WIDTH digits, written by ifd__perf_dec_next(). */
  tail[n++] = 3 << 3 | 2;
  tail[n++] = ID_WIDTH;
  memset(tail + n, '0', ID_WIDTH);
  n += ID_WIDTH;
  if (ifd__perf_buf_append(&s->seq_req, run->payload.data, run->payload.len) <
          0 ||
      ifd__perf_buf_append(&s->seq_req, tail, n) < 0)
    return UV_ENOMEM;
  {
    uint8_t *p = (uint8_t *)s->seq_req.data;
    size_t len = s->seq_req.len - 5;
    p[1] = (uint8_t)(len >> 24);
    p[2] = (uint8_t)(len >> 16);
    p[3] = (uint8_t)(len >> 8);
    p[4] = (uint8_t)len;
  }
  s->req = s->seq_req.data;
  s->req_len = s->seq_req.len;
  return 0;
}

void ifd__perf_dec_next(ifd_perf_run_t *run, ifd_perf_slot_t *s) {
  char num[ID_WIDTH + 1];
  snprintf(num, sizeof num, "%0*llu", ID_WIDTH,
           (unsigned long long)++run->dec_next);
  memcpy(s->seq_req.data + s->seq_req.len - ID_WIDTH, num, ID_WIDTH);
  s->got_first = 0;
}

/* Reads a varint at *i (< len). Returns 0, or -1 when truncated. */
static int get_varint(const uint8_t *p, size_t len, size_t *i, uint64_t *v) {
  int shift = 0;
  *v = 0;
  while (*i < len && shift < 64) {
    uint8_t b = p[(*i)++];
    *v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return 0;
    shift += 7;
  }
  return -1;
}

/* A parameters map entry: is it triton_final_response = true? */
static int final_entry(const uint8_t *p, size_t len) {
  size_t i = 0;
  int key = 0, val = 0;
  while (i < len) {
    uint64_t tag, n;
    if (get_varint(p, len, &i, &tag) < 0) break;
    if ((tag & 7) != 2 || get_varint(p, len, &i, &n) < 0 || n > len - i) break;
    if (tag >> 3 == 1) {
      key = n == sizeof FINAL_KEY - 1 && !memcmp(p + i, FINAL_KEY, n);
    } else if (tag >> 3 == 2) {
      /* InferParameter: bool_param is field 1, a varint. */
      size_t j = i;
      uint64_t t, b;
      if (get_varint(p, i + n, &j, &t) == 0 && t == (1 << 3 | 0) &&
          get_varint(p, i + n, &j, &b) == 0)
        val = b != 0;
    }
    i += n;
  }
  return key && val;
}

void ifd__perf_dec_parse(const uint8_t *p, size_t len, int *final,
                         int *has_output) {
  size_t i = 0, end = len;
  uint64_t tag, n;
  int inner = 0;

  *final = 0;
  *has_output = 0;
  while (i < end) {
    if (get_varint(p, end, &i, &tag) < 0) return;
    switch (tag & 7) {
      case 0:
        if (get_varint(p, end, &i, &n) < 0) return;
        continue;
      case 1:
        i += 8;
        continue;
      case 5:
        i += 4;
        continue;
      case 2:
        break;
      default:
        return;
    }
    if (get_varint(p, end, &i, &n) < 0) return;
    if (!inner) {
      /* ModelStreamInferResponse: infer_response is field 2. */
      if (tag >> 3 == 2) {
        inner = 1;
        if (n < end - i) end = i + (size_t)n;
        continue;
      }
      if (n >= end - i) return;
      i += (size_t)n;
      continue;
    }
    /* ModelInferResponse: parameters 4, outputs 5, raw_output_contents 6. */
    if (tag >> 3 == 5 || tag >> 3 == 6) *has_output = 1;
    if (tag >> 3 == 4) {
      size_t k = n < end - i ? (size_t)n : end - i;
      if (final_entry(p + i, k)) *final = 1;
    }
    if (n >= end - i) return;
    i += (size_t)n;
  }
}
