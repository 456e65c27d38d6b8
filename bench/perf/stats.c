/*
 * bench/perf/stats.c - the server's statistics of the model under test.
 *
 * perf_analyzer reads them before and after each measurement window and
 * prints the deltas: inference/execution/success counts and the average
 * queue and compute times per request. Read over the protocol under test:
 * GET .../stats (JSON) or the ModelStatistics RPC, or in C API mode
 * TRITONSERVER_ServerModelStatistics (the same JSON). Without -x every version
 * of the model is summed.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "bench/perf/perf.h"
#include "proto/grpc_service.pb-c.h"

static uint64_t jget(json_t *o, const char *a, const char *b) {
  json_t *x = json_object_get(json_object_get(o, a), b);
  return (uint64_t)json_integer_value(x);
}

int ifd__perf_stats_json(const void *root_, ifd_perf_stats_t *s) {
  json_t *arr = json_object_get((const json_t *)root_, "model_stats"), *e;
  size_t i;

  if (!json_is_array(arr)) return UV_EINVAL;
  json_array_foreach(arr, i, e) {
    json_t *is = json_object_get(e, "inference_stats");
    s->inference_count +=
        (uint64_t)json_integer_value(json_object_get(e, "inference_count"));
    s->execution_count +=
        (uint64_t)json_integer_value(json_object_get(e, "execution_count"));
    s->success_count += jget(is, "success", "count");
    s->success_ns += jget(is, "success", "ns");
    s->fail_count += jget(is, "fail", "count");
    s->queue_count += jget(is, "queue", "count");
    s->queue_ns += jget(is, "queue", "ns");
    s->cin_count += jget(is, "compute_input", "count");
    s->cin_ns += jget(is, "compute_input", "ns");
    s->cinfer_count += jget(is, "compute_infer", "count");
    s->cinfer_ns += jget(is, "compute_infer", "ns");
    s->cout_count += jget(is, "compute_output", "count");
    s->cout_ns += jget(is, "compute_output", "ns");
  }
  return 0;
}

static int http_stats(ifd_perf_run_t *run, const ifd_perf_model_t *m,
                      ifd_perf_stats_t *s, char *err, size_t errlen) {
  char path[512];
  ifd_perf_buf_t body = {0};
  json_t *root = NULL;
  json_error_t je;
  int status = 0, rc;

  if (m->version[0])
    snprintf(path, sizeof path, "/v2/models/%s/versions/%s/stats", m->name,
             m->version);
  else
    snprintf(path, sizeof path, "/v2/models/%s/stats", m->name);
  rc = ifd__perf_http_get(run, path, &status, &body, err, errlen);
  if (rc < 0) return rc;
  if (status != 200) {
    snprintf(err, errlen, "GET %s: HTTP %d: %.*s", path, status,
             (int)(body.len > 300 ? 300 : body.len),
             body.data ? body.data : "");
    rc = UV_EIO;
    goto out_free;
  }
  root = json_loadb(body.data, body.len, 0, &je);
  rc = ifd__perf_stats_json(root, s);
  if (rc < 0)
    snprintf(err, errlen, "GET %s: no model_stats in the answer", path);

out_free:
  json_decref(root);
  ifd__perf_buf_free(&body);
  return rc;
}

#define DUR(d, f) ((d) ? (d)->f : 0)

static int grpc_stats(ifd_perf_run_t *run, const ifd_perf_model_t *m,
                      ifd_perf_stats_t *s, char *err, size_t errlen) {
  Inference__ModelStatisticsRequest req =
      INFERENCE__MODEL_STATISTICS_REQUEST__INIT;
  Inference__ModelStatisticsResponse *resp = NULL;
  ifd_perf_buf_t body = {0};
  uint8_t msg[1024];
  char gerr[IFD_PERF_ERR_MAX];
  size_t n, i;
  int status = 0, rc;

  req.name = m->name;
  req.version = m->version;
  n = inference__model_statistics_request__get_packed_size(&req);
  if (n > sizeof msg) return UV_EINVAL;
  inference__model_statistics_request__pack(&req, msg);
  rc = ifd__perf_grpc_unary(run, "ModelStatistics", msg, n, &status, &body,
                            gerr, sizeof gerr);
  if (rc < 0) {
    snprintf(err, errlen, "%s", gerr);
    goto out_free;
  }
  if (status != 0) {
    snprintf(err, errlen, "ModelStatistics: gRPC status %d: %s", status, gerr);
    rc = UV_EIO;
    goto out_free;
  }
  resp = inference__model_statistics_response__unpack(
      NULL, body.len, (const uint8_t *)body.data);
  if (!resp) {
    snprintf(err, errlen, "ModelStatistics: cannot decode the response");
    rc = UV_EINVAL;
    goto out_free;
  }
  for (i = 0; i < resp->n_model_stats; i++) {
    const Inference__ModelStatistics *e = resp->model_stats[i];
    const Inference__InferStatistics *is = e->inference_stats;
    s->inference_count += e->inference_count;
    s->execution_count += e->execution_count;
    if (!is) continue;
    s->success_count += DUR(is->success, count);
    s->success_ns += DUR(is->success, ns);
    s->fail_count += DUR(is->fail, count);
    s->queue_count += DUR(is->queue, count);
    s->queue_ns += DUR(is->queue, ns);
    s->cin_count += DUR(is->compute_input, count);
    s->cin_ns += DUR(is->compute_input, ns);
    s->cinfer_count += DUR(is->compute_infer, count);
    s->cinfer_ns += DUR(is->compute_infer, ns);
    s->cout_count += DUR(is->compute_output, count);
    s->cout_ns += DUR(is->compute_output, ns);
  }

out_free:
  if (resp) inference__model_statistics_response__free_unpacked(resp, NULL);
  ifd__perf_buf_free(&body);
  return rc;
}

int ifd__perf_stats_read(ifd_perf_run_t *run, const ifd_perf_model_t *m,
                         ifd_perf_stats_t *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  err[0] = 0;
  if (run->capi) return ifd__perf_capi_stats(run, m, out, err, errlen);
  return run->opts->grpc ? grpc_stats(run, m, out, err, errlen)
                         : http_stats(run, m, out, err, errlen);
}
