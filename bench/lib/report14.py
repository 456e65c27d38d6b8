"""Issue 14's table for bench/lib/report.py (section capi: the in-process C API).

issue14(p, res, fmt) prints the "Issue 14 targets" table and the notes
under it with `p`, from two inferd-perf --json-summary files of the same
run (bench/run.sh, section capi), both identity_fp32 FP32[1,16] at
concurrency 1, synchronous:

  raw/capi_http-binary_c1/summary.json  HTTP/1.1 binary tensors to an inferd
      on its own core; the tool's own CPU time (cpu_self_us) and, with
      --cpu-pid, the server's (cpu_pid_us), over the tool's window;
  raw/capi/c-api_c1/summary.json  --service-kind=triton_c_api: the server in
      the tool's process; cpu_self_us is the whole process's (client thread,
      the server's loop and instance threads).

CPU per inference: HTTP = (server + client) / requests, C API = process /
requests. Latency: the client's, send to completion.
"""
import json
import os

# Issue 14's targets: CPU per in-process inference / the same inference over
# HTTP/1.1 binary (server + client), same run; latency at concurrency 1.
TARGETS14 = {"cpu_ratio": 1.0 / 3.0, "latency_us": 10.0}


def step(res, *parts):
    """The first step of a --json-summary, or None."""
    try:
        with open(os.path.join(res, "raw", *parts, "summary.json")) as f:
            return json.load(f)["steps"][0]
    except (OSError, ValueError, KeyError, IndexError):
        return None


def per_req(s, key):
    if not s or s.get(key) is None or not s.get("request_count"):
        return None
    return s[key] / s["request_count"]


def issue14(p, res, fmt):
    http = step(res, "capi_http-binary_c1")
    capi = step(res, "capi", "c-api_c1")
    if http is None and capi is None:
        return
    h_srv, h_cli = per_req(http, "cpu_pid_us"), per_req(http, "cpu_self_us")
    h_cpu = h_srv + h_cli if h_srv is not None and h_cli is not None else None
    c_cpu = per_req(capi, "cpu_self_us")
    ratio = c_cpu / h_cpu if c_cpu is not None and h_cpu else None

    def verdict(v, ok):
        return "not measured" if v is None else ("**met**" if ok else "**missed**")

    def lat(s, key):
        return s[key] / 1e3 if s and s.get(key) is not None else None

    p("## Issue 14 targets")
    p("")
    p("| figure | C API | HTTP/1.1 binary | ratio | target | verdict |")
    p("| --- | ---: | ---: | ---: | ---: | --- |")
    p("| identity FP32[1,16], conc 1, sync: CPU us per inference (C API: whole process; "
      "HTTP: server + client) | %s | %s | %s | <= %.3f | %s |" % (
          fmt(c_cpu, 2), fmt(h_cpu, 2), fmt(ratio, 3), TARGETS14["cpu_ratio"],
          verdict(ratio, ratio is not None and ratio <= TARGETS14["cpu_ratio"])))
    for name, key in (("p50", "p50_latency_ns"), ("p99", "p99_latency_ns"),
                      ("average", "avg_latency_ns")):
        c, h = lat(capi, key), lat(http, key)
        p("| latency at conc 1, %s, us | %s | %s | %s | < %.0f us | %s |" % (
            name, fmt(c, 2), fmt(h, 2), fmt(c / h if c is not None and h else None, 3),
            TARGETS14["latency_us"],
            verdict(c, c is not None and c < TARGETS14["latency_us"])))
    spin = step(res, "capi", "c-api_c1_spin30")
    if spin is not None:
        s_cpu = per_req(spin, "cpu_self_us")
        p("| C API with the client polling 30 us (--spin-us 30): CPU us per inference / "
          "p50 / p99 latency us | %s / %s / %s | %s | %s | reported | - |" % (
              fmt(s_cpu, 2), fmt(lat(spin, "p50_latency_ns"), 2),
              fmt(lat(spin, "p99_latency_ns"), 2), fmt(h_cpu, 2),
              fmt(s_cpu / h_cpu if s_cpu is not None and h_cpu else None, 3)))
    p("")
    p("HTTP: server %s + client %s CPU us per request (the tool's window, server via "
      "--cpu-pid), %s req/s. C API: %s req/s, %s requests. The C API process may use both "
      "cores; over HTTP the server has one and the client the other." % (
          fmt(h_srv, 2), fmt(h_cli, 2), fmt(http and http.get("throughput"), 0),
          fmt(capi and capi.get("throughput"), 0), fmt(capi and capi.get("request_count"), 0)))
    p("")
