/*
 * bench/perf/seq.c - inferd-perf's sequence models: which sequence each
 * request belongs to, and its sequence_id / sequence_start / sequence_end
 * parameters.
 *
 * perf_analyzer's rules (its SequenceManager): every load slot drives one
 * sequence at a time. The first request of a sequence takes the next id,
 * start + (counter++ % range) (an id still used by another live sequence is
 * skipped by reusing the slot's previous id), and a length of
 * --sequence-length varied uniformly by +/- --sequence-length-variation
 * percent (at least 1); it carries sequence_start. The last request carries
 * sequence_end; then the slot starts a new sequence. A one-request sequence
 * carries both. Ids are integers (perf_analyzer has no string-id option).
 *
 * Each slot of a sequence model owns a copy of the load request and
 * rewrites it before each send, with no allocation after the first:
 *  - HTTP: the JSON header starts with a "parameters" object whose values
 *    have fixed widths (the id padded with spaces to 20 characters, the
 *    flags "true " / "false"), so that Content-Length never changes and the
 *    values are overwritten in place;
 *  - gRPC: the three map entries of ModelInferRequest.parameters (field 4)
 *    are appended after the packed request (protobuf merges repeated map
 *    entries in any order) and the 5-byte length prefix is rewritten.
 * Loop thread only, like the rest of the tool.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/perf/perf.h"

#define ID_WIDTH 20 /* UINT64_MAX has 20 digits */

static const char *const http_keys[3] = {
    "\"sequence_id\":", "\"sequence_start\":", "\"sequence_end\":"};

int ifd__perf_seq_locate(ifd_perf_run_t *run) {
  const char *p = run->payload.data, *body;
  int i;

  body = p ? strstr(p, "\r\n\r\n") : NULL;
  if (!body) return UV_EINVAL;
  for (i = 0; i < 3; i++) {
    const char *k = strstr(body, http_keys[i]);
    if (!k) return UV_EINVAL;
    run->seq_off[i] = (size_t)(k - p) + strlen(http_keys[i]);
  }
  return 0;
}

int ifd__perf_seq_slot_init(ifd_perf_run_t *run, ifd_perf_slot_t *s) {
  s->req = run->payload.data;
  s->req_len = run->payload.len;
  if (run->decoupled) return ifd__perf_dec_slot_init(run, s);
  if (!run->sequence) return 0;
  /* Room for the gRPC parameters: 3 entries of at most 32 bytes. */
  if (ifd__perf_buf_append(&s->seq_req, run->payload.data, run->payload.len) <
          0 ||
      ifd__perf_buf_append(&s->seq_req, NULL, 128) < 0)
    return UV_ENOMEM;
  s->seq_req.len = run->payload.len;
  s->req = s->seq_req.data;
  s->req_len = s->seq_req.len;
  return 0;
}

void ifd__perf_seq_slot_free(ifd_perf_slot_t *s) {
  ifd__perf_buf_free(&s->seq_req);
}

/* perf_analyzer's GetNextSeqId. */
static uint64_t next_id(ifd_perf_run_t *run, ifd_perf_slot_t *s) {
  const ifd_perf_opts_t *o = run->opts;
  uint64_t id;
  int i;

  if (!o->seq_id_end) return o->seq_id_start + run->seq_next++;
  id = o->seq_id_start + run->seq_next++ % (o->seq_id_end - o->seq_id_start);
  for (i = 0; i < run->nslots; i++)
    if (run->slots[i] != s && run->slots[i]->seq_id == id) return s->seq_id;
  return id;
}

/* perf_analyzer's GetRandomSequenceLength (its own random source). */
static uint64_t next_length(const ifd_perf_opts_t *o) {
  static uint64_t x = 0x2545f4914f6cdd1dull;
  double r, off;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  r = (double)(x >> 11) / (double)(1ull << 53) * 2.0 - 1.0; /* [-1, 1) */
  off = r * o->seq_variation / 100.0 * (double)o->seq_length;
  if ((double)o->seq_length + off < 1) return 1;
  return (uint64_t)((double)o->seq_length + (double)(long long)off);
}

static size_t put_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (uint8_t)v;
  return n;
}

/* One map<string, InferParameter> entry of field 4; value is bool_param (1)
 * or int64_param (2), both varints. Returns its length. */
static size_t put_param(uint8_t *p, const char *key, int field, uint64_t v) {
  uint8_t val[16];
  size_t klen = strlen(key), vlen, n = 0, entry;

  val[0] = (uint8_t)(field << 3); /* varint wire type */
  vlen = 1 + put_varint(val + 1, v);
  entry = 2 + klen + 2 + vlen;
  p[n++] = 4 << 3 | 2;
  n += put_varint(p + n, entry);
  p[n++] = 1 << 3 | 2;
  p[n++] = (uint8_t)klen;
  memcpy(p + n, key, klen);
  n += klen;
  p[n++] = 2 << 3 | 2;
  p[n++] = (uint8_t)vlen;
  memcpy(p + n, val, vlen);
  return n + vlen;
}

static void write_request(ifd_perf_run_t *run, ifd_perf_slot_t *s, uint64_t id,
                          int start, int end) {
  if (run->grpc) {
    uint8_t *p = (uint8_t *)s->seq_req.data;
    size_t n = run->payload.len, len;
    n += put_param(p + n, "sequence_id", 2, id);
    n += put_param(p + n, "sequence_start", 1, (uint64_t)start);
    n += put_param(p + n, "sequence_end", 1, (uint64_t)end);
    len = n - 5;
    p[1] = (uint8_t)(len >> 24);
    p[2] = (uint8_t)(len >> 16);
    p[3] = (uint8_t)(len >> 8);
    p[4] = (uint8_t)len;
    s->seq_req.len = n;
  } else {
    char *p = s->seq_req.data, num[ID_WIDTH + 1];
    int k = snprintf(num, sizeof num, "%llu", (unsigned long long)id);
    memset(p + run->seq_off[0], ' ', ID_WIDTH);
    memcpy(p + run->seq_off[0], num, (size_t)k);
    memcpy(p + run->seq_off[1], start ? "true " : "false", 5);
    memcpy(p + run->seq_off[2], end ? "true " : "false", 5);
  }
  s->req = s->seq_req.data;
  s->req_len = s->seq_req.len;
}

void ifd__perf_seq_next(ifd_perf_run_t *run, ifd_perf_slot_t *s) {
  const ifd_perf_opts_t *o = run->opts;
  int start, end;

  if (run->seq_idle_phase) {
    /* --idle-sequences: ids start, start+1, ... once per phase. */
    uint64_t id = o->seq_id_start + run->seq_next++;
    if (run->seq_idle_phase == 1) run->seq_starts++;
    write_request(run, s, id, run->seq_idle_phase == 1,
                  run->seq_idle_phase == 2);
    return;
  }
  start = s->seq_left == 0;
  if (start) {
    s->seq_id = next_id(run, s);
    s->seq_left = next_length(o);
    run->seq_starts++;
  }
  end = s->seq_left == 1;
  s->seq_left--;
  write_request(run, s, s->seq_id, start, end);
}
