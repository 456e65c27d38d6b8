/*
 * bench/perf/main.c - inferd-perf: the entry point, and the byte buffers
 * every file uses.
 *
 * A perf_analyzer-style load generator on one libuv loop (see
 * bench/perf/README.md for the options). main() parses the command line
 * (options.c), resolves the server, sets up the transport (http.c or
 * grpc.c; capi.c embeds the server instead) and the request (model.c, seq.c),
 * then runs one measurement step (measure.c, driving the scheduler in sched.c)
 * per value of the concurrency range (closed loop: every slot sends again as
 * soon as its response is in) or of the request-rate range (open loop: requests
 * leave on a fixed schedule whatever the completions), and prints the summary.
 */
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench/perf/perf.h"

/* ---- buffers ---- */

int ifd__perf_buf_append(ifd_perf_buf_t *b, const void *p, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    char *d;
    while (cap < b->len + n + 1) cap *= 2;
    d = realloc(b->data, cap);
    if (!d) return UV_ENOMEM;
    b->data = d;
    b->cap = cap;
  }
  if (n && p) memcpy(b->data + b->len, p, n); /* p NULL: room only */
  b->len += n;
  b->data[b->len] = 0; /* text stays a C string */
  return 0;
}

int ifd__perf_buf_printf(ifd_perf_buf_t *b, const char *fmt, ...) {
  char tmp[1024];
  va_list ap;
  int n;

  va_start(ap, fmt);
  n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return UV_EINVAL;
  if ((size_t)n < sizeof tmp) return ifd__perf_buf_append(b, tmp, (size_t)n);
  /* Long text: format again straight into the buffer. */
  if (ifd__perf_buf_append(b, NULL, (size_t)n) < 0) return UV_ENOMEM;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len - n, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return 0;
}

void ifd__perf_buf_free(ifd_perf_buf_t *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}
int ifd__perf_sock_init(ifd_perf_run_t *run, ifd_perf_sock_t *s) {
  int rc;
  if (run->opts->unix_path[0] != '\0')
    return uv_pipe_init(run->loop, &s->pipe, 0);
  rc = uv_tcp_init(run->loop, &s->tcp);
  if (rc == 0) uv_tcp_nodelay(&s->tcp, 1);
  return rc;
}

int ifd__perf_sock_connect(ifd_perf_run_t *run, ifd_perf_sock_t *s,
                           uv_connect_t *req, uv_connect_cb cb) {
  if (run->opts->unix_path[0] != '\0') {
    /* Errors come through cb, as a refused TCP connect's do. */
    uv_pipe_connect(req, &s->pipe, run->opts->unix_path, cb);
    return 0;
  }
  return uv_tcp_connect(req, &s->tcp, (const struct sockaddr *)&run->addr, cb);
}

static int resolve(ifd_perf_run_t *run) {
  const ifd_perf_opts_t *o = run->opts;
  struct addrinfo hints = {0}, *res = NULL;
  char port[16];
  int rc;

  if (o->unix_path[0] != '\0') {
    /* Host and :authority name the server as HTTP clients of a socket do. */
    snprintf(run->authority, sizeof run->authority, "localhost");
    return 0;
  }
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  snprintf(port, sizeof port, "%d", o->port);
  rc = getaddrinfo(o->host, port, &hints, &res);
  if (rc) {
    fprintf(stderr, "error: cannot resolve %s: %s\n", o->host,
            gai_strerror(rc));
    return -1;
  }
  memcpy(&run->addr, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  snprintf(run->authority, sizeof run->authority,
           strchr(o->host, ':') ? "[%s]:%d" : "%s:%d", o->host, o->port);
  return 0;
}

static void raise_nofile(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

int main(int argc, char **argv) {
  static ifd_perf_opts_t opts;
  ifd_perf_run_t run = {0};
  ifd_perf_model_t model = {0};
  uv_loop_t loop;
  ifd_perf_step_t *steps = NULL;
  char err[IFD_PERF_ERR_MAX] = "";
  double v, maxv;
  int nsteps = 0, cap = 0, rc = 1, any_err = 0, i;

  if (ifd__perf_options_parse(argc, argv, &opts)) return 2;
  raise_nofile();
  signal(SIGPIPE, SIG_IGN);
  if (uv_loop_init(&loop)) return 1;
  run.loop = &loop;
  run.opts = &opts;
  uv_timer_init(&loop, &run.rate_timer);
  run.caplat = 1 << 20;
  run.lat = malloc(run.caplat * sizeof *run.lat);
  if (!run.lat) goto out_loop;
  if (opts.capi) {
    if (ifd__perf_capi_init(&run, err, sizeof err) < 0) {
      fprintf(stderr, "error: %s\n", err);
      goto out_transport;
    }
  } else if (resolve(&run)) {
    goto out_loop;
  }

  if (opts.idle_connections > 0) {
    if (ifd__perf_http_init(&run)) goto out_loop;
    rc = ifd__perf_http_idle(&run, opts.idle_connections, opts.idle_seconds)
             ? 1
             : 0;
    goto out_transport;
  }

  if (opts.capi) {
    /* The server is in this process: nothing to connect. */
  } else if (opts.grpc) {
    maxv = opts.open_loop ? 4 : opts.range_end;
    int n = opts.grpc_connections ? opts.grpc_connections
                                  : (int)(maxv < 4 ? maxv : 4);
    if (ifd__perf_grpc_init(&run, n < 1 ? 1 : n, err, sizeof err) < 0) {
      fprintf(stderr, "error: %s\n", err);
      goto out_transport;
    }
  } else if (ifd__perf_http_init(&run)) {
    goto out_transport;
  }

  if (opts.raw_get) {
    if (ifd__perf_buf_printf(&run.payload,
                             "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n",
                             opts.raw_get, run.authority))
      goto out_transport;
  } else {
    if (ifd__perf_model_load(&run, &model, err, sizeof err) < 0 ||
        ifd__perf_shm_setup(&run, &model, err, sizeof err) < 0 ||
        ifd__perf_model_payload(&run, &model, err, sizeof err) < 0) {
      fprintf(stderr, "error: %s\n", err);
      goto out_model;
    }
    run.sequence = model.sequence;
    run.decoupled = model.decoupled;
    if (opts.capi && (run.sequence || run.decoupled)) {
      fprintf(stderr,
              "error: '%s' is a %s model: --service-kind=triton_c_api "
              "measures stateless, non-decoupled models only\n",
              model.name, run.sequence ? "sequence" : "decoupled");
      rc = 2;
      goto out_model;
    }
    if (run.decoupled &&
        (!opts.grpc || !opts.streaming || opts.open_loop || run.sequence)) {
      fprintf(stderr,
              "error: '%s' is decoupled: use -i grpc --streaming with "
              "--concurrency-range (closed loop, no sequence batching)\n",
              model.name);
      rc = 2;
      goto out_model;
    }
    if (run.sequence && !opts.grpc && ifd__perf_seq_locate(&run) < 0) {
      fprintf(stderr, "error: no sequence parameters in the request\n");
      goto out_model;
    }
    if (opts.idle_sequences && !run.sequence) {
      fprintf(stderr,
              "error: --idle-sequences needs a sequence model ('%s' has no "
              "sequence_batching)\n",
              opts.model);
      goto out_model;
    }
    if (run.sequence && opts.seq_id_end) {
      /* As perf_analyzer: refuse a range that cannot give every live
       * sequence its own id. */
      uint64_t live = opts.idle_sequences ? (uint64_t)opts.idle_sequences
                      : opts.open_loop    ? (uint64_t)opts.num_sequences
                                          : (uint64_t)opts.range_end;
      if (opts.seq_id_end - opts.seq_id_start < live) {
        fprintf(stderr,
                "error: --sequence-id-range %llu:%llu has fewer ids than the "
                "%llu sequences that may be live at once\n",
                (unsigned long long)opts.seq_id_start,
                (unsigned long long)opts.seq_id_end, (unsigned long long)live);
        rc = 2;
        goto out_model;
      }
    }
    if (opts.idle_sequences) {
      rc = ifd__perf_sched_idle_sequences(&run);
      goto out_model;
    }
  }

  if (!opts.quiet) {
    printf("*** Measurement Settings ***\n");
    printf("  Batch size: %d\n", opts.raw_get ? 1 : opts.batch);
    printf("  Service Kind: %s\n", opts.raw_get ? "raw HTTP GET"
                                   : opts.capi
                                       ? "Triton C API (server in this process)"
                                       : "Triton (inferd-perf)");
    printf("  Protocol: %s\n",
           opts.capi   ? "none (TRITONSERVER_ServerInferAsync)"
           : opts.grpc ? (opts.streaming ? "gRPC streaming" : "gRPC")
                       : (opts.raw_get     ? "HTTP/1.1"
                          : opts.http_json ? "HTTP/1.1 JSON"
                                           : "HTTP/1.1 binary tensors"));
    if (opts.shm)
      printf("  Shared memory: %s (inputs and outputs in registered regions)\n",
             opts.shm == IFD_PERF_SHM_CUDA ? "cuda" : "system");
    printf("  Using \"time_windows\" mode for stabilization\n");
    printf("  Measurement window: %llu msec\n",
           (unsigned long long)opts.measure_ms);
    printf("  Warm-up: %llu msec\n", (unsigned long long)opts.warmup_ms);
    if (opts.open_loop)
      printf("  Using uniform distribution on request generation\n");
    else
      printf("  Using synchronous calls for inference\n");
    if (run.decoupled)
      printf(
          "  Decoupled model: responses counted up to "
          "triton_final_response\n");
    if (run.sequence) {
      printf("  Sequence model: length %llu +/- %g%%, ids from %llu",
             (unsigned long long)opts.seq_length, opts.seq_variation,
             (unsigned long long)opts.seq_id_start);
      if (opts.seq_id_end)
        printf(" to %llu (excluded)", (unsigned long long)opts.seq_id_end);
      if (opts.open_loop)
        printf(", %d concurrent sequences", opts.num_sequences);
      else
        printf(", one sequence per concurrent request");
      printf("\n");
    }
    printf("\n");
    fflush(stdout);
  }

  for (v = opts.range_start; v <= opts.range_end + 1e-9; v += opts.range_step) {
    if (nsteps == cap) {
      void *p;
      cap = cap ? cap * 2 : 8;
      p = realloc(steps, (size_t)cap * sizeof *steps);
      if (!p) goto out_model;
      steps = p;
    }
    if (ifd__perf_measure_step(&run, opts.raw_get ? NULL : &model, v,
                               &steps[nsteps], err, sizeof err) < 0) {
      fprintf(stderr, "error: %s\n", err);
      goto out_model;
    }
    if (steps[nsteps].errors || steps[nsteps].first_err[0]) any_err = 1;
    if (!opts.quiet) ifd__perf_measure_print(&opts, &steps[nsteps]);
    fflush(stdout);
    nsteps++;
    if (opts.json_summary &&
        ifd__perf_measure_write_json(&opts, steps, nsteps) < 0)
      fprintf(stderr, "warning: cannot write %s\n", opts.json_summary);
  }

  if (opts.percentile > 0)
    printf("Inferences/Second vs. Client p%d Batch Latency\n", opts.percentile);
  else
    printf("Inferences/Second vs. Client Average Batch Latency\n");
  for (i = 0; i < nsteps; i++)
    printf("%s: %g, throughput: %g infer/sec, latency %.0f usec\n",
           opts.open_loop ? "Request Rate" : "Concurrency", steps[i].value,
           steps[i].throughput, ifd__perf_measure_latency(&opts, &steps[i]));
  if (opts.csv && ifd__perf_measure_write_csv(&opts, steps, nsteps) < 0)
    fprintf(stderr, "warning: cannot write %s\n", opts.csv);
  if (any_err) {
    fprintf(stderr, "error: some requests failed (see \"First error\")\n");
    rc = 1;
  } else {
    rc = 0;
  }

out_model:
  ifd__perf_shm_teardown(&run, &model);
  ifd__perf_model_free(&model);
out_transport:
  ifd__perf_capi_shutdown(&run);
  ifd__perf_grpc_shutdown(&run);
  ifd__perf_http_shutdown(&run);
out_loop:
  uv_close((uv_handle_t *)&run.rate_timer, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  if (uv_loop_close(&loop)) fprintf(stderr, "warning: handles left open\n");
  ifd__perf_buf_free(&run.payload);
  free(run.slots);
  free(run.lat);
  free(run.lat_first);
  free(steps);
  return rc;
}
