"""Issue 31's table for bench/lib/report.py (section big: big tensors against
the copy floor).

issue31(p, get, res, fmt) prints "Issue 31: big tensors" with `p`; `get(sc,
key)` reads a scenario's figure from the snapshots (us_per_req, rps); the
tool's own figures (--cpu-pid over its window) from raw/<sc>/summary.json;
the floor from raw/big_memcpy/{before,after}_{1m,16m}.json; the RSS series
from raw/big_rss.txt (lines "LABEL REQUESTS VMRSS_KIB": at ready, then after
each scenario).

Scenarios (bench/run.sh): identity_fp32_1m and identity_fp32_16m, one FP32
tensor in and out, inferd-perf at 8 connections over HTTP/1.1 with the
binary tensor extension (big_<size>_http_c8) and gRPC unary with raw
contents (big_<size>_grpc_c8). The floor is three copies of the tensor on
the server core (socket in, the backend's copy, socket out): 3 x the best
slice's time per copy of bench/lib/memcpy_limit.py, of the runs before and
after the scenarios.
"""
import json
import os
import re

from summaries import cpu_per_req, load_steps

# Issue 31's goal 1: server CPU per request at most 3x the copy floor.
TARGET31 = 3.0
SIZES = (("1m", "1 MiB"), ("16m", "16 MiB"))
PROTOS = (("http", "HTTP/1.1 binary"), ("grpc", "gRPC unary"))


def floor_us(res, size):
    """3 x the best time per copy of either memcpy run, or None."""
    best = None
    for when in ("before", "after"):
        try:
            with open(os.path.join(res, "raw", "big_memcpy", "%s_%s.json" % (when, size))) as f:
                us = json.load(f)["us_per_copy"]
        except (OSError, ValueError, KeyError):
            continue
        best = us if best is None or us < best else best
    return 3 * best if best is not None else None


def tool_cpu_us(res, sc):
    steps = load_steps(res, re.escape(sc))
    return cpu_per_req(steps[0]) if steps else None


def rss_series(res):
    rows = []
    try:
        with open(os.path.join(res, "raw", "big_rss.txt")) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3:
                    rows.append((parts[0], int(parts[1]), int(parts[2])))
    except (OSError, ValueError):
        return []
    return rows


def issue31(p, get, res, fmt):
    scs = ["big_%s_%s_c8" % (s, q) for s, _ in SIZES for q, _ in PROTOS]
    if all(get(sc, "rps") is None and tool_cpu_us(res, sc) is None for sc in scs):
        return
    p("## Issue 31: big tensors against the copy floor (identity, 8 connections)")
    p("")
    p("Floor: three copies of the tensor on the server core (bench/lib/memcpy_limit.py, "
      "best slice of the runs before and after). Server CPU per request: the tool's "
      "(--cpu-pid over its window) and the snapshots' (the suite's window). Target: "
      "at most %.0fx the floor." % TARGET31)
    p("")
    p("| tensor | protocol | floor us | server CPU us/req (tool) | (snapshots) | ratio | "
      "target | req/s | verdict |")
    p("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for size, slabel in SIZES:
        fl = floor_us(res, size)
        for proto, plabel in PROTOS:
            sc = "big_%s_%s_c8" % (size, proto)
            tool = tool_cpu_us(res, sc)
            snap = get(sc, "us_per_req")
            cpu = tool if tool is not None else snap
            ratio = cpu / fl if cpu is not None and fl else None
            verdict = "" if ratio is None else ("met" if ratio <= TARGET31 else "missed")
            p("| %s | %s | %s | %s | %s | %s | %.0fx | %s | %s |" % (
                slabel, plabel, fmt(fl, 1), fmt(tool, 1), fmt(snap, 1), fmt(ratio, 2),
                TARGET31, fmt(get(sc, "rps"), 0), verdict))
    p("")
    rows = rss_series(res)
    if len(rows) >= 2:
        p("RSS of the server (VmRSS) after each scenario, with the requests it completed "
          "on both models since it was ready. Flat: the last line's against the one after "
          "the four scenarios above (every one-time allocation done by then).")
        p("")
        p("| after | requests | VmRSS MiB |")
        p("| --- | ---: | ---: |")
        for label, n, kib in rows:
            p("| %s | %d | %.1f |" % (label, n, kib / 1024))
        base = [r for r in rows if r[0] == "big_16m_grpc_c8"]
        if base and rows[-1] is not base[0]:
            n = rows[-1][1] - base[0][1]
            d = (rows[-1][2] - base[0][2]) / 1024
            p("")
            p("After the four scenarios to the end: %d requests, VmRSS %+.1f MiB%s." % (
                n, d, "" if n >= 10000 else " (fewer than 10,000 requests: a short run)"))
        p("")
