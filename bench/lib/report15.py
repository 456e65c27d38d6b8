"""Issue 15's table for bench/lib/report.py (section python: the Python backend).

issue15(p, get, res, fmt) prints the "Issue 15 targets" table and the notes
under it with `p`, from the scenarios of bench/run.sh's section python (one
server, one run): python_<model>_http-binary_c<N> for identity_fp32 (the
identity C backend) and add_sub_fp32 (Triton's add_sub example in Python),
both FP32[1,16] over HTTP/1.1 binary at concurrency 1 and 16, and
add_sub_fp32_batched (the same with the dynamic batcher) at 16.

Server CPU per request = (CPU of the server + CPU of its stub processes over
the window) / requests the server counted in it: `get(sc, "us_per_req")`,
from the suite's snapshots, which sum /proc/<pid>/stat of the server and of
each stub. The tool's own window (inferd-perf --cpu-pid PID --cpu-children,
summary.json's cpu_pid_us_per_request) is shown beside it as a cross-check.

Triton publishes no per-request CPU figure for its Python backend (searched:
its README, docs and issues); the issue's second number therefore falls
back to our own C identity as the floor. Published latency figures, for
context only (not CPU, other machines): python_backend PR #163 (repeat_int32,
a decoupled Python model, perf_analyzer gRPC streaming at concurrency 1:
3013 us average latency, 324.9 infer/s) and server issue #7739 (an empty
Python model on 24.04: 11 to 20 ms per request).
"""
import json
import os

# Issue 15's target: server CPU per request of add_sub (server + stubs) at
# most 2x the identity C backend's, same run.
TARGET15 = 2.0
CONCS = (1, 16)
MODELS = ("identity_fp32", "add_sub_fp32")


def scenario_name(model, c):
    return "python_%s_http-binary_c%d" % (model, c)


def tool_step(res, sc):
    try:
        with open(os.path.join(res, "raw", sc, "summary.json")) as f:
            return json.load(f)["steps"][0]
    except (OSError, ValueError, KeyError, IndexError):
        return None


def split(res, sc):
    """(server, stubs) CPU us per request over the window, from the
    snapshots (the server's /proc/<pid>/stat line first, then the stubs'),
    or None."""
    d = os.path.join(res, "raw", sc)

    def snap(name):
        ticks, tck = [], None
        with open(os.path.join(d, name)) as f:
            for line in f:
                if line.startswith("stat "):
                    fields = line.rsplit(")", 1)[1].split()
                    ticks.append(int(fields[11]) + int(fields[12]))
                elif line.startswith("clk_tck "):
                    tck = int(line.split()[1])
        return ticks, tck

    def count(name):
        with open(os.path.join(d, name)) as f:
            return json.load(f)["model_stats"][0]["inference_stats"]["success"]["count"]

    try:
        (a, tck), (b, _) = snap("a.snap"), snap("b.snap")
        n = count("b.json") - count("a.json")
    except (OSError, ValueError, KeyError, IndexError):
        return None
    if not n or not tck or len(a) != len(b) or not a:
        return None
    per = [(y - x) / tck * 1e6 / n for x, y in zip(a, b)]
    return per[0], sum(per[1:])


def issue15(p, get, res, fmt):
    if not any(get(scenario_name(m, c), "us_per_req") is not None or tool_step(res, scenario_name(m, c))
               for m in MODELS for c in CONCS):
        return

    def verdict(v):
        if v is None:
            return "not measured"
        return "**met**" if v <= TARGET15 else "**missed**"

    p("## Issue 15 targets")
    p("")
    p("| figure | add_sub (Python) | identity (C) | ratio | target | verdict |")
    p("| --- | ---: | ---: | ---: | ---: | --- |")
    for c in CONCS:
        a = get(scenario_name("add_sub_fp32", c), "us_per_req")
        i = get(scenario_name("identity_fp32", c), "us_per_req")
        ratio = a / i if a is not None and i else None
        p("| FP32[1,16] HTTP/1.1 binary, conc %d: server CPU us per request (server + stubs) "
          "| %s | %s | %s | <= %.1f | %s |" % (c, fmt(a, 2), fmt(i, 2), fmt(ratio, 2), TARGET15,
                                               verdict(ratio)))
    b = get(scenario_name("add_sub_fp32_batched", 16), "us_per_req")
    if b is not None:
        i = get(scenario_name("identity_fp32", 16), "us_per_req")
        p("| the same, conc 16, add_sub with `dynamic_batching { }` (avg batch %s) | %s | %s | %s "
          "| reported | - |" % (fmt(get(scenario_name("add_sub_fp32_batched", 16), "avg_batch"), 2),
                               fmt(b, 2), fmt(i, 2), fmt(b / i if i else None, 2)))
    p("| Triton's Python backend, published per-request CPU overhead | - | - | - | >= 2x lower "
      "| not published: C identity is the floor |")
    p("")
    rows = []
    for m, c in [(m, c) for c in CONCS for m in MODELS] + [("add_sub_fp32_batched", 16)]:
        sc = scenario_name(m, c)
        t = tool_step(res, sc)
        if t is None and get(sc, "rps") is None:
            continue
        sp = split(res, sc)
        rows.append("%s conc %d: %s req/s (server), p50 %s us, p99 %s us, CPU us/req %s server + "
                    "%s stubs, tool's window %s (server + children)" % (
                        m, c, fmt(get(sc, "rps"), 0),
                        fmt(t and t.get("p50_latency_us"), 0), fmt(t and t.get("p99_latency_us"), 0),
                        fmt(sp and sp[0], 2), fmt(sp and sp[1], 2),
                        fmt(t and t.get("cpu_pid_us_per_request"), 2)))
    p("; ".join(rows) + ".")
    p("")
    p("Server and stubs share the server core (the stubs inherit its affinity); the load tool "
      "has the other. No published Triton figure of CPU per request exists for its Python "
      "backend; for context only (latency, other machines): python_backend PR #163 measured "
      "3013 us average latency for a decoupled Python model at concurrency 1, and server issue "
      "#7739 reports 11-20 ms for an empty Python model on Triton 24.04.")
    p("")
