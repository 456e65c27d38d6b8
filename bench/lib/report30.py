"""The A/B table for bench/lib/report.py (section ab: this build against a
baseline build, issue 30 and every change after it).

abtable(p, res, fmt) prints "A/B: this build against the baseline" from the
inferd-perf --json-summary files of bench/run.sh's section ab:
identity_fp32 FP32[1,16] over HTTP/1.1 binary and JSON, gRPC unary and
streaming, at concurrency 1 and 16, on the baseline (raw/ab_base_<proto>_c<C>_r<N>)
and on this build (raw/ab_new_...), rounds interleaved. For each figure the
ratio this build / baseline of the best rounds, and of the medians: the
rounds differ by what else ran on the machine, not by the builds.
Server CPU: --cpu-pid over the tool's window.
"""
import os
import re

from summaries import cpu_per_req, load_steps, median

PROTOS = (("http-binary", "HTTP/1.1 binary"), ("http-json", "HTTP/1.1 JSON"),
          ("grpc", "gRPC unary"), ("grpc-stream", "gRPC streaming"))


def steps(res, side, proto, conc):
    return load_steps(res, r"ab_%s_%s_c%d_r\d+" % (side, re.escape(proto), conc))


def values(ss, fn):
    return sorted(v for v in (fn(s) for s in ss) if v is not None)


def cpu(s):
    return cpu_per_req(s)


def p50(s):
    return s["p50_latency_ns"] / 1e3 if s.get("p50_latency_ns") is not None else None


def rps(s):
    return s.get("throughput")


def ratio(a, b):
    return a / b if a is not None and b else None


def abtable(p, res, fmt):
    rows = []
    for proto, label in PROTOS:
        for conc in (1, 16):
            base, new = steps(res, "base", proto, conc), steps(res, "new", proto, conc)
            if not base or not new:
                continue
            for name, fn, low in (("server CPU us/req", cpu, True), ("p50 latency us", p50, True),
                                  ("req/s", rps, False)):
                b, n = values(base, fn), values(new, fn)
                if not b or not n:
                    continue
                bb, nb = (b[0], n[0]) if low else (b[-1], n[-1])
                rows.append((label, conc, name, bb, nb, ratio(nb, bb),
                             ratio(median(n), median(b)), len(b), len(n)))
    if not rows:
        return
    base_rev = ""
    try:
        with open(os.path.join(res, "ab_base.txt")) as f:
            base_rev = " (%s)" % f.read().strip()
    except OSError:
        pass
    p("## A/B: this build against the baseline%s" % base_rev)
    p("")
    p("identity_fp32 FP32[1,16]; two servers side by side on the server core, scenarios "
      "interleaved. Best round of each side (least CPU and latency, most req/s) and the "
      "ratio this build / baseline of the bests and of the medians.")
    p("")
    p("| protocol | conc | figure | baseline best | this build best | ratio best | "
      "ratio median | rounds |")
    p("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for label, conc, name, b, n, rb, rm, nb, nn in rows:
        p("| %s | %d | %s | %s | %s | %s | %s | %d / %d |" % (
            label, conc, name, fmt(b, 2), fmt(n, 2), fmt(rb, 3), fmt(rm, 3), nb, nn))
    p("")
