"""Issue 29's table for bench/lib/report.py (section uds: Unix domain sockets
against loopback TCP).

issue29(p, res, fmt) prints "Issue 29: UDS against loopback TCP" from the
inferd-perf --json-summary files of bench/run.sh's section uds: identity_fp32
FP32[1,16] at concurrency 1 (synchronous), HTTP/1.1 binary and gRPC unary,
to an inferd on 127.0.0.1 TCP (raw/uds_tcp_<proto>_c1_r<N>) and to one on
unix: sockets (raw/uds_unix_<proto>_c1_r<N>), rounds interleaved. Each
figure is the best round's (least CPU, least latency, most req/s,
independently), with the median of the rounds beside it: the rounds differ
by what else ran on the machine, not by the transport.
Server CPU: --cpu-pid over the tool's window; client CPU: the tool's own.
"""
from summaries import cpu_per_req, load_steps
from summaries import median as median_of


def steps(res, kind, proto):
    return load_steps(res, r"uds_%s_%s_c1_r\d+" % (kind, proto))


def best(ss, fn):
    vals = [v for v in (fn(s) for s in ss) if v is not None]
    return min(vals) if vals else None


def median(ss, fn):
    return median_of([v for v in (fn(s) for s in ss) if v is not None])


def per_req(key):
    return lambda s: cpu_per_req(s, key)


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
            rows.append((label, name, best(tcp, fn), best(uds, fn), median(tcp, fn),
                         median(uds, fn), len(tcp), len(uds)))

        def neg_rps(s):
            return -s["throughput"] if s.get("throughput") else None

        def pos(v):
            return -v if v is not None else None

        rows.append((label, "req/s", pos(best(tcp, neg_rps)), pos(best(uds, neg_rps)),
                     pos(median(tcp, neg_rps)), pos(median(uds, neg_rps)), len(tcp), len(uds)))
    if not rows:
        return
    p("## Issue 29: UDS against loopback TCP (identity FP32[1,16], concurrency 1)")
    p("")
    p("Best (and median) of the interleaved rounds for each figure; two servers side by "
      "side on the server core, one on 127.0.0.1, one on unix: sockets.")
    p("")
    p("| protocol | figure | loopback TCP best (median) | UDS best (median) | UDS / TCP best "
      "(median) | rounds |")
    p("| --- | --- | ---: | ---: | ---: | ---: |")

    def ratio(a, b):
        return a / b if b and a is not None else None

    for label, name, t, u, tm, um, nt, nu in rows:
        p("| %s | %s | %s (%s) | %s (%s) | %s (%s) | %d / %d |" % (
            label, name, fmt(t, 2), fmt(tm, 2), fmt(u, 2), fmt(um, 2), fmt(ratio(u, t), 3),
            fmt(ratio(um, tm), 3), nt, nu))
    p("")
