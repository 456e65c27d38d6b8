"""Issue 29's table for bench/lib/report.py (section uds: Unix domain sockets
against loopback TCP).

issue29(p, res, fmt) prints "Issue 29: UDS against loopback TCP" from the
inferd-perf --json-summary files of bench/run.sh's section uds: identity_fp32
FP32[1,16] at concurrency 1 (synchronous), HTTP/1.1 binary and gRPC unary,
to an inferd on 127.0.0.1 TCP (raw/uds_tcp_<proto>_c1_r<N>) and to one on
unix: sockets (raw/uds_unix_<proto>_c1_r<N>), rounds interleaved. Each
figure is the best round's (least CPU, least latency, independently): the
rounds differ by what else ran on the machine, not by the transport.
Server CPU: --cpu-pid over the tool's window; client CPU: the tool's own.
"""
import json
import os
import re


def steps(res, kind, proto):
    out = []
    raw = os.path.join(res, "raw")
    if not os.path.isdir(raw):
        return out
    for d in sorted(os.listdir(raw)):
        if not re.fullmatch(r"uds_%s_%s_c1_r\d+" % (kind, proto), d):
            continue
        try:
            with open(os.path.join(raw, d, "summary.json")) as f:
                out.append(json.load(f)["steps"][0])
        except (OSError, ValueError, KeyError, IndexError):
            pass
    return out


def best(ss, fn):
    vals = [v for v in (fn(s) for s in ss) if v is not None]
    return min(vals) if vals else None


def per_req(key):
    def f(s):
        n = s.get("request_count")
        return s[key] / n if n and s.get(key) is not None else None
    return f


def lat(key):
    def f(s):
        return s[key] / 1e3 if s.get(key) is not None else None
    return f


def issue29(p, res, fmt):
    rows = []
    for proto, label in (("http", "HTTP/1.1 binary"), ("grpc", "gRPC unary")):
        tcp, uds = steps(res, "tcp", proto), steps(res, "unix", proto)
        if not tcp and not uds:
            continue
        for name, fn in (("server CPU us/req", per_req("cpu_pid_us")),
                         ("client CPU us/req", per_req("cpu_self_us")),
                         ("latency p50 us", lat("p50_latency_ns")),
                         ("latency avg us", lat("avg_latency_ns")),
                         ("latency p99 us", lat("p99_latency_ns"))):
            t, u = best(tcp, fn), best(uds, fn)
            rows.append((label, name, t, u, len(tcp), len(uds)))
        t = best(tcp, lambda s: -s["throughput"] if s.get("throughput") else None)
        u = best(uds, lambda s: -s["throughput"] if s.get("throughput") else None)
        rows.append((label, "req/s", -t if t is not None else None,
                     -u if u is not None else None, len(tcp), len(uds)))
    if not rows:
        return
    p("## Issue 29: UDS against loopback TCP (identity FP32[1,16], concurrency 1)")
    p("")
    p("Best of the interleaved rounds for each figure; two servers side by side on the "
      "server core, one on 127.0.0.1, one on unix: sockets.")
    p("")
    p("| protocol | figure | loopback TCP | UDS | UDS / TCP | rounds |")
    p("| --- | --- | ---: | ---: | ---: | ---: |")
    for label, name, t, u, nt, nu in rows:
        r = u / t if t and u is not None else None
        p("| %s | %s | %s | %s | %s | %d / %d |" % (
            label, name, fmt(t, 2), fmt(u, 2), fmt(r, 3), nt, nu))
    p("")
