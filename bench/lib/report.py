#!/usr/bin/python3
"""Turns the raw files of one bench/run.sh run into Markdown tables.

    report.py RESULTS_DIR            print the full report (Markdown)
    report.py RESULTS_DIR --partial  the same, tolerating missing scenarios
    report.py RESULTS_DIR --over SCENARIO US
                                     exit 0 when SCENARIO's server CPU per
                                     request exceeds US microseconds, else 1

Every figure is computed from two snapshots taken by the suite inside the
load tool's steady state (raw/<scenario>/a.snap and b.snap):
  * server CPU = delta of utime+stime of the server's processes (all threads),
  * requests   = delta of the server's own count: inferd's model statistics
                 (inference_stats.success.count) or nginx's stub_status
                 (minus the status request itself),
so numerator and denominator cover the same window. The load tool's own
figures (throughput, average and p99 latency) come from its output.
Also writes RESULTS_DIR/scenarios.csv and RESULTS_DIR/idle.csv.
"""
import csv
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report12  # noqa: E402  (issue 12's tables)
import report13  # noqa: E402  (issue 13's table)
import report14  # noqa: E402  (issue 14's table)
import report15  # noqa: E402  (issue 15's table)
import report26  # noqa: E402  (issue 26's tables)
import report29  # noqa: E402  (issue 29's table)
import report30  # noqa: E402  (the A/B table)
import report31  # noqa: E402  (issue 31's table)
import report27  # noqa: E402  (issue 27's table)
import report27pt  # noqa: E402  (issue 27's PyTorch table)

# Issue 8's targets: latency at concurrency 1 as a ratio to nginx (same
# client), and server CPU per request at 64 connections (wrk / h2load).
TARGETS8 = {
    "c1_latency_ratio": 1.2,  # inferd HTTP JSON avg latency / nginx raw GET, conc 1
    "wrk_json_c64_us": 11.5,  # wrk -c64 POST JSON identity, server CPU us/req
    "h2load_grpc_c64_us": 14.0,  # h2load -c64 -m1 gRPC unary, server CPU us/req
}
# Issue 9's target: server CPU per request of a sequence model (2 controls,
# direct, 1 instance, 4 batch slots, 64 live sequences) / identity's, same run.
# And 10,000 idle sequences add less than 1% of a core to the idle server.
TARGETS9 = {"seq_cpu_ratio": 1.25, "idle_seq_added_pct": 1.0}
# Issue 10's targets: server CPU per request of a 2-step identity ensemble /
# one identity request's; p99 of model A while model B reloads in a loop /
# its p99 without, same run.
TARGETS10 = {"ensemble_cpu_ratio": 1.3, "reload_p99_ratio": 1.2}
# Issue 11's targets: server CPU per response of a decoupled model sending
# 100 responses per request / one unary identity request's; latency to the
# first response at concurrency 1 / a unary identity request's latency.
TARGETS11 = {"dec_cpu_ratio": 1.5, "dec_first_ratio": 1.2}
TARGETS = {
    "http_json_us": 12.0,  # inferd HTTP/1.1 JSON, server CPU us per request
    "grpc_us": 16.0,  # inferd gRPC unary
    "idle_kib": 2.0,  # resident memory per idle keep-alive connection
}
HEADLINE_C = 16  # the concurrency the headline figures use


def read_snap(path):
    snap = {"stat": [], "ctxt": 0, "vctxt": 0, "sched_ns": None}
    with open(path) as f:
        for line in f:
            key, _, rest = line.rstrip("\n").partition(" ")
            if key == "stat":
                # Fields after "pid (comm) ": state is [0]; utime [11]; stime [12].
                fields = rest[rest.rindex(")") + 2 :].split()
                snap["stat"].append(int(fields[11]) + int(fields[12]))
            elif key == "ctxt":
                snap["ctxt"] += sum(int(v) for v in rest.split())
                snap["vctxt"] += int(rest.split()[0])
            elif key == "core":
                vals = [int(v) for v in rest.split()[1:]]
                snap["core_total"] = sum(vals[:8])
                snap["core_idle"] = vals[3] + vals[4]
            elif key == "sched_ns":
                snap["sched_ns"] = (snap["sched_ns"] or 0) + int(rest)
            elif key == "t_ns":
                snap["t_ns"] = int(rest)
            elif key == "clk_tck":
                snap["clk_tck"] = int(rest)
    return snap


def inferd_counts(path):
    with open(path) as f:
        st = json.load(f)["model_stats"][0]
    return {
        "success": st["inference_stats"]["success"]["count"],
        "fail": st["inference_stats"]["fail"]["count"],
        "inference_count": st["inference_count"],
        "execution_count": st["execution_count"],
    }


def nginx_requests(path):
    with open(path) as f:
        text = f.read()
    m = re.search(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s*$", text, re.M)
    return int(m.group(3))


def num(text, pattern, cast=float):
    m = re.search(pattern, text, re.M)
    return cast(m.group(1)) if m else None


def to_us(value, unit):
    return value * {"us": 1, "ms": 1e3, "s": 1e6, "": 1}[unit]


def tool_figures(sdir):
    """The load tool's view: throughput (req/s), avg and p99 latency (us)."""
    out = {"tool_rps": None, "avg_us": None, "p99_us": None}
    summ = os.path.join(sdir, "summary.json")
    if os.path.exists(summ) and os.path.getsize(summ) > 0:
        try:
            out.update(perf_summary(summ))
            return out
        except (ValueError, KeyError, TypeError, IndexError):
            pass
    text = ""
    for name in ("tool.out", "tool.err"):
        p = os.path.join(sdir, name)
        if os.path.exists(p):
            with open(p, errors="replace") as f:
                text += f.read()
    if "Requests/sec:" in text:  # wrk
        out["tool_rps"] = num(text, r"^Requests/sec:\s+([\d.]+)")
        m = re.search(r"^\s+Latency\s+([\d.]+)(us|ms|s)\s", text, re.M)
        if m:
            out["avg_us"] = to_us(float(m.group(1)), m.group(2))
        m = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)", text, re.M)
        if m:
            out["p99_us"] = to_us(float(m.group(1)), m.group(2))
    elif "finished in" in text:  # h2load
        out["tool_rps"] = num(text, r"finished in [\d.]+\w+, ([\d.]+) req/s")
        m = re.search(r"^time for request:\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)", text, re.M)
        if m:
            out["avg_us"] = to_us(float(m.group(1)), m.group(2))
    else:  # perf_analyzer-style text
        out["tool_rps"] = num(text, r"Throughput:\s*([\d.]+)\s*infer/sec")
        out["avg_us"] = num(text, r"Avg latency:\s*([\d.]+)\s*usec")
        out["p99_us"] = num(text, r"p99 latency:\s*([\d.]+)\s*usec")
    return out


def perf_summary(path):
    """inferd-perf --json-summary: the last step's throughput and latencies."""
    with open(path) as f:
        doc = json.load(f)
    steps = doc.get("steps") if isinstance(doc, dict) else doc
    if isinstance(steps, dict):
        steps = [steps]
    step = steps[-1]

    def pick(d, *names):
        for n in names:
            if n in d and d[n] is not None:
                return d[n]
        return None

    lat = step.get("latency_us") or step.get("latency") or {}
    rps = pick(step, "throughput", "throughput_infer_per_sec", "infer_per_sec", "rps")
    avg = pick(step, "avg_latency_us", "avg_us") or pick(lat, "avg", "mean")
    p99 = pick(step, "p99_latency_us", "p99_us") or pick(lat, "p99", "99")
    first = step.get("first_response") or {}
    return {
        "responses": step.get("responses"),
        "first_avg_us": first.get("avg_latency_us"),
        "first_p99_us": first.get("p99_latency_us"),
        "tool_rps": float(rps) if rps is not None else None,
        "avg_us": float(avg) if avg is not None else None,
        "p99_us": float(p99) if p99 is not None else None,
    }


def scenario(res, sc):
    sdir = os.path.join(res, "raw", sc)
    with open(os.path.join(sdir, "kind")) as f:
        kind = f.read().strip()
    a = read_snap(os.path.join(sdir, "a.snap"))
    b = read_snap(os.path.join(sdir, "b.snap"))
    dt = (b["t_ns"] - a["t_ns"]) / 1e9
    cpu_s = (sum(b["stat"]) - sum(a["stat"])) / a["clk_tck"]
    core_busy = 1 - (b["core_idle"] - a["core_idle"]) / max(1, b["core_total"] - a["core_total"])
    row = {"scenario": sc, "window_s": dt, "cpu_s": cpu_s, "core_busy": core_busy}
    if kind.startswith("inferd:"):
        ca = inferd_counts(os.path.join(sdir, "a.json"))
        cb = inferd_counts(os.path.join(sdir, "b.json"))
        req = cb["success"] - ca["success"]
        row["fail"] = cb["fail"] - ca["fail"]
        ex = cb["execution_count"] - ca["execution_count"]
        row["avg_batch"] = (cb["inference_count"] - ca["inference_count"]) / ex if ex else None
    else:
        req = nginx_requests(os.path.join(sdir, "b.status")) - nginx_requests(
            os.path.join(sdir, "a.status")
        ) - 1
        row["fail"] = None
        row["avg_batch"] = None
    row["requests"] = req
    row["rps"] = req / dt if dt > 0 else None
    row["us_per_req"] = cpu_s * 1e6 / req if req > 0 else None
    row["cs_per_req"] = (b["ctxt"] - a["ctxt"]) / req if req > 0 else None
    row.update(tool_figures(sdir))
    m = re.search(r"_c(\d+)$", sc)
    row["conc"] = int(m.group(1)) if m else None
    row["warning"] = ""
    w = os.path.join(sdir, "warning")
    if os.path.exists(w):
        with open(w) as f:
            row["warning"] = f.read().strip()
    with open(os.path.join(sdir, "cmd")) as f:
        row["cmd"] = f.read().strip()
    return row


def idle(res, name):
    p = os.path.join(res, "raw", "idle_" + name, "idle.txt")
    if not os.path.exists(p):
        return None
    d = {}
    with open(p) as f:
        for line in f:
            k, v = line.split()
            d[k] = int(v)
    d["reached"] = d["fds_with"] - d["fds_before"]
    n = d["reached"]
    d["kib_per_conn"] = (d["vmrss_with_kib"] - d["vmrss_before_kib"]) / n if n > 0 else None
    d["anon_kib_per_conn"] = (d["rssanon_with_kib"] - d["rssanon_before_kib"]) / n if n > 0 else None
    with open(os.path.join(res, "raw", "idle_" + name, "cmd")) as f:
        d["cmd"] = f.read().strip()
    return d


def idle_seq(res):
    """Issue 9: the server over an idle window with no sequence (base) and
    with N idle sequences (live): CPU ms per second (from every thread's
    schedstat, in ns; utime+stime's 10 ms ticks when absent) and voluntary
    context switches (wake-ups) per second, all threads."""
    d = os.path.join(res, "raw", "idle_seq")
    if not os.path.isdir(d):
        return None
    out = {}
    for name in ("base", "live"):
        try:
            a = read_snap(os.path.join(d, name + "_a.snap"))
            b = read_snap(os.path.join(d, name + "_b.snap"))
        except OSError:
            out[name] = None
            continue
        dt = (b["t_ns"] - a["t_ns"]) / 1e9
        if a["sched_ns"] is not None and b["sched_ns"] is not None:
            cpu = (b["sched_ns"] - a["sched_ns"]) / 1e9  # ns resolution
        else:
            cpu = (sum(b["stat"]) - sum(a["stat"])) / a["clk_tck"]
        out[name] = {"window_s": dt, "cpu_ms_per_s": cpu * 1e3 / dt,
                     "wakeups_per_s": (b["vctxt"] - a["vctxt"]) / dt}
    out["target"] = None
    out["active"] = None
    try:
        with open(os.path.join(d, "target")) as f:
            out["target"] = int(f.read())
        with open(os.path.join(d, "gauges.txt")) as f:
            for line in f:
                if line.startswith("inferd_sequence_active{") and 'model="seq_idle"' in line:
                    out["active"] = int(float(line.split()[-1]))
    except (OSError, ValueError):
        pass
    try:
        with open(os.path.join(d, "tool.out")) as f:
            out["tool"] = " / ".join(l.strip() for l in f if l.startswith("idle sequences"))
    except OSError:
        out["tool"] = ""
    return out


def reload_loop(res, sc):
    """Issue 10: what bench/lib/reload_loop.py did during scenario `sc`."""
    try:
        with open(os.path.join(res, "raw", sc, "reload.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fmt(v, nd=1):
    if v is None:
        return "-"
    if isinstance(v, float):
        return "%.*f" % (nd, v)
    return str(v)


def fmt_int(v):
    return "-" if v is None else "{:,.0f}".format(v)


def ratio(a, b, nd=2):
    if a is None or b is None or b == 0:
        return "-"
    return "%.*f" % (nd, a / b)


def verdict(value, target):
    if value is None:
        return "not measured"
    return "**met**" if value <= target else "**missed**"


def issue10(p, get, res):
    p("## Issue 10 targets")
    p("")
    p("| figure | inferd | baseline | ratio | target | verdict |")
    p("| --- | ---: | ---: | ---: | ---: | --- |")
    for proto, label in (("http-binary", "HTTP binary"), ("grpc", "gRPC unary")):
        ev = get("ens_ensemble2_%s_c16" % proto, "us_per_req")
        iv = get("ens_identity_%s_c16" % proto, "us_per_req")
        er = ev / iv if ev is not None and iv else None
        p("| 2-step identity ensemble (ensemble_identity2), %s, concurrency 16, server CPU "
          "us/req | %s | %s (one identity_fp32 request, same client and server) | %s "
          "(two requests: %s) | <= %.1fx | %s |" % (
              label, fmt(ev, 2), fmt(iv, 2), fmt(er, 2), fmt(iv and 2 * iv, 2),
              TARGETS10["ensemble_cpu_ratio"], verdict(er, TARGETS10["ensemble_cpu_ratio"])))
    for name, label in (("loop", "back to back"), ("paced", "pausing %s ms after each unload")):
        lv = get("reload_%s_c16" % name, "p99_us")
        bv = get("reload_%s-base_c16" % name, "p99_us")
        lr = lv / bv if lv is not None and bv else None
        rl = reload_loop(res, "reload_%s_c16" % name) or {}
        cyc = rl.get("cycles")
        secs = rl.get("seconds")
        try:
            with open(os.path.join(res, "raw", "reload_%s_c16" % name, "pause_ms")) as f:
                label = label % f.read().strip() if "%s" in label else label
        except OSError:
            label = label.replace("%s", "?")
        p("| p99 latency of identity_fp32 (HTTP binary, concurrency 16) while reload_b loads "
          "and unloads in a loop, %s (%s cycles, %s/s, load call %s ms avg, %s failed calls) "
          "| %s us | %s us (no reloads, just before) | %s | <= %.1fx | %s |" % (
              label, fmt_int(cyc), fmt(cyc / secs if cyc and secs else None, 1),
              fmt(rl.get("load_ms_avg"), 1),
              fmt_int((rl.get("load_fail") or 0) + (rl.get("unload_fail") or 0)) if rl else "-",
              fmt(lv, 0), fmt(bv, 0), fmt(lr, 2), TARGETS10["reload_p99_ratio"],
              verdict(lr, TARGETS10["reload_p99_ratio"])))
    p("")
    errs = [(sc, rl["first_error"]) for sc, rl in (
        (sc, reload_loop(res, sc)) for sc in ("reload_loop_c16", "reload_paced_c16"))
        if rl and rl.get("first_error")]
    for sc, e in errs:
        p("%s: first failed reload call: %s" % (sc, e))
        p("")


def issue11(p, get, res):
    try:
        with open(os.path.join(res, "decoupled_responses")) as f:
            n = int(f.read().strip())
    except (OSError, ValueError):
        n = 100
    dec = "dec_repeat%d_grpc-stream" % n
    p("## Issue 11 targets")
    p("")
    p("| figure | inferd | baseline | ratio | target | verdict |")
    p("| --- | ---: | ---: | ---: | ---: | --- |")
    dv = get(dec + "_c16", "us_per_req")
    iv = get("dec_identity_grpc_c16", "us_per_req")
    per = dv / n if dv is not None else None
    cr = per / iv if per is not None and iv else None
    p("| repeat_int32, %d responses per request (gRPC stream), concurrency 16, server CPU us "
      "per response | %s (%s per request) | %s (one identity_fp32 request, gRPC unary) | %s "
      "| <= %.1fx | %s |" % (n, fmt(per, 3), fmt(dv, 1), fmt(iv, 2), fmt(cr, 2),
                             TARGETS11["dec_cpu_ratio"], verdict(cr, TARGETS11["dec_cpu_ratio"])))
    for key, label in (("first_avg_us", "avg"), ("first_p99_us", "p99")):
        fv = get(dec + "_c1", key)
        bv = get("dec_identity_grpc_c1", "avg_us" if label == "avg" else "p99_us")
        fr = fv / bv if fv is not None and bv else None
        p("| repeat_int32, concurrency 1, %s latency to the first response | %s us (complete: %s "
          "us) | %s us (identity_fp32 request, gRPC unary) | %s | <= %.1fx | %s |" % (
              label, fmt(fv, 0),
              fmt(get(dec + "_c1", "avg_us" if label == "avg" else "p99_us"), 0),
              fmt(bv, 0), fmt(fr, 2), TARGETS11["dec_first_ratio"],
              verdict(fr, TARGETS11["dec_first_ratio"])))
    p("")
    for c in (1, 16):
        r = get(dec + "_c%d" % c, "responses")
        q = get(dec + "_c%d" % c, "requests")
        if r is not None:
            p("%s_c%d: inferd-perf counted %s responses in its window; the server %s requests "
              "in its own." % (dec, c, fmt_int(r), fmt_int(q)))
    p("")


def main():
    res = sys.argv[1]
    partial = "--partial" in sys.argv
    raw = os.path.join(res, "raw")
    rows = {}
    for sc in sorted(os.listdir(raw)) if os.path.isdir(raw) else []:
        if sc.startswith("idle_") or not os.path.exists(os.path.join(raw, sc, "kind")):
            continue  # not a measure() scenario (idle, conns, slowloris: own tables)
        try:
            rows[sc] = scenario(res, sc)
        except (OSError, ValueError, KeyError, IndexError, json.JSONDecodeError) as e:
            if not partial and "--over" not in sys.argv:
                print("warning: %s: %s" % (sc, e), file=sys.stderr)
    if "--over" in sys.argv:
        i = sys.argv.index("--over")
        sc, limit = sys.argv[i + 1], float(sys.argv[i + 2])
        v = rows.get(sc, {}).get("us_per_req")
        sys.exit(0 if v is not None and v > limit else 1)

    machine = {}
    mp = os.path.join(res, "machine.txt")
    if os.path.exists(mp):
        with open(mp) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition(": ")
                machine[k] = v

    cols = [
        "scenario", "conc", "window_s", "requests", "rps", "cpu_s", "us_per_req", "cs_per_req",
        "core_busy",
        "avg_batch", "fail", "tool_rps", "avg_us", "p99_us", "warning", "cmd",
    ]
    with open(os.path.join(res, "scenarios.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows.values():
            w.writerow(r)
    idles = {n: idle(res, n) for n in ("inferd", "nginx")}
    with open(os.path.join(res, "idle.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["server", "target", "reached", "vmrss_before_kib", "vmrss_with_kib",
                    "kib_per_conn", "anon_kib_per_conn"])
        for n, d in idles.items():
            if d:
                w.writerow([n, d["target"], d["reached"], d["vmrss_before_kib"],
                            d["vmrss_with_kib"], fmt(d["kib_per_conn"], 3),
                            fmt(d["anon_kib_per_conn"], 3)])

    def get(sc, key):
        return rows.get(sc, {}).get(key)

    out = []
    p = out.append
    p("# inferd benchmark: %s" % os.path.basename(os.path.normpath(res)))
    p("")
    p("Machine: %s cores, %s, %s, %s. Server pinned to core %s, load to core %s; "
      "window %s s after %s s warm-up." % (
          machine.get("nproc", "?"), machine.get("cpu", "?"), machine.get("kernel", "?"),
          machine.get("date", "?"), machine.get("server_core", "?"),
          machine.get("load_core", "?"), machine.get("window_s", "?"),
          machine.get("warmup_s", "?")))
    p("")
    p("## Targets (concurrency %d, ratios to nginx from this run)" % HEADLINE_C)
    p("")
    p("nginx A: nginx driven by the same client as inferd (inferd-perf --raw-get); "
      "nginx B: nginx driven by wrk. Ratios are inferd / nginx.")
    p("")
    p("| figure | inferd | nginx A | ratio A | nginx B | ratio B | target | verdict |")
    p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    na = get("nginx_raw-get_c%d" % HEADLINE_C, "us_per_req")
    nb = get("nginx_wrk_c%d" % HEADLINE_C, "us_per_req")
    for label, sc, key in (
            ("HTTP/1.1 JSON identity, server CPU us/req", "inferd_http-json_c%d", "http_json_us"),
            ("gRPC unary identity, server CPU us/req", "inferd_grpc_c%d", "grpc_us")):
        v = get(sc % HEADLINE_C, "us_per_req")
        p("| %s | %s | %s | %s | %s | %s | <= %.0f | %s |" % (
            label, fmt(v, 2), fmt(na, 2), ratio(v, na), fmt(nb, 2), ratio(v, nb),
            TARGETS[key], verdict(v, TARGETS[key])))
    ii, ni = idles.get("inferd"), idles.get("nginx")
    ik = ii and ii["kib_per_conn"]
    nk = ni and ni["kib_per_conn"]
    p("| idle keep-alive connection, KiB VmRSS | %s (%s conns) | %s | %s | - | - | <= %.0f | %s |" % (
        fmt(ik, 3), fmt_int(ii and ii["reached"]), fmt(nk, 3), ratio(ik, nk),
        TARGETS["idle_kib"], verdict(ik, TARGETS["idle_kib"])))
    p("")

    p("## Issue 8 targets")
    p("")
    p("| figure | inferd | baseline | ratio | target | verdict |")
    p("| --- | ---: | ---: | ---: | ---: | --- |")
    li = get("inferd_http-json_c1", "avg_us")
    ln = get("nginx_raw-get_c1", "avg_us")
    lr = li / ln if li is not None and ln else None
    p("| concurrency 1, HTTP/1.1 JSON identity, mean latency (inferd-perf) | %s us | %s us "
      "(nginx) | %s | <= %.1fx | %s |" % (
          fmt(li, 1), fmt(ln, 1), fmt(lr, 2), TARGETS8["c1_latency_ratio"],
          verdict(lr, TARGETS8["c1_latency_ratio"])))
    for label, sc, base, key in (
            ("64 connections, HTTP/1.1 JSON identity (wrk -c64), server CPU us/req",
             "wrk_http-json_c64", "nginx_wrk_c64", "wrk_json_c64_us"),
            ("64 connections, gRPC unary identity (h2load -c64 -m1), server CPU us/req",
             "h2load_grpc_c64", "nginx_wrk_c64", "h2load_grpc_c64_us")):
        v = get(sc, "us_per_req")
        bv = get(base, "us_per_req")
        p("| %s | %s | %s (nginx, wrk -c64) | %s | <= %.1f us | %s |" % (
            label, fmt(v, 2), fmt(bv, 2), ratio(v, bv), TARGETS8[key],
            verdict(v, TARGETS8[key])))
    p("")

    p("## Issue 9 targets")
    p("")
    p("| figure | inferd | baseline | ratio | target | verdict |")
    p("| --- | ---: | ---: | ---: | ---: | --- |")
    sv = get("inferd_seq_c64", "us_per_req")
    iv = get("inferd_identity_c64", "us_per_req")
    sr = sv / iv if sv is not None and iv else None
    p("| 64 live sequences, seq_identity (direct, 1 instance, 4 batch slots, START + READY; "
      "inferd-perf HTTP binary, sequences of 20 +/- 20%%), server CPU us/req | %s | %s "
      "(identity_fp32, same client and concurrency) | %s | <= %.2fx | %s |" % (
          fmt(sv, 2), fmt(iv, 2), fmt(sr, 2), TARGETS9["seq_cpu_ratio"],
          verdict(sr, TARGETS9["seq_cpu_ratio"])))
    sv4 = get("inferd_seq_c4", "us_per_req")
    iv4 = get("inferd_identity_c4", "us_per_req")
    sr4 = sv4 / iv4 if sv4 and iv4 else None
    p("| 4 live sequences (each in a slot: 4 requests in flight, as above), seq_identity, "
      "server CPU us/req | %s | %s (identity_fp32 at concurrency 4) | %s | reported | - |" % (
          fmt(sv4, 2), fmt(iv4, 2), fmt(sr4, 2)))
    isq = idle_seq(res)
    if isq:
        base, live = isq.get("base"), isq.get("live")
        n = isq.get("target")
        for label, key, nd in (("server CPU, ms per second", "cpu_ms_per_s", 3),
                               ("wake-ups per second (voluntary context switches, all threads)",
                                "wakeups_per_s", 1)):
            lv = live and live[key]
            bv = base and base[key]
            p("| %s idle sequences (seq_idle, oldest), %s | %s | %s (same server, no "
              "sequence) | %s | reported | - |" % (
                  fmt_int(n), label, fmt(lv, nd), fmt(bv, nd), ratio(lv, bv)))
        added = (live["cpu_ms_per_s"] - base["cpu_ms_per_s"]) / 10.0 if live and base else None
        p("| %s idle sequences, CPU added at idle, %% of one core | %s | - | - | < %.0f%% | %s |" % (
            fmt_int(n), fmt(added, 3), TARGETS9["idle_seq_added_pct"],
            "not measured" if added is None else
            ("**met**" if added < TARGETS9["idle_seq_added_pct"] else "**missed**")))
    p("")
    if isq:
        p("inferd-perf: %s; inferd_sequence_active{model=\"seq_idle\"} during the window: "
          "%s. Windows: %s s each." % (
              isq.get("tool") or "-", fmt(isq.get("active")),
              fmt(isq["live"] and isq["live"]["window_s"], 1)))
        p("")

    if any(sc.startswith(("ens_", "reload_")) for sc in rows):
        issue10(p, get, res)

    if any(sc.startswith("dec_") for sc in rows):
        issue11(p, get, res)

    report12.issue12(p, get, res, idles.get("inferd"), perf_summary, fmt, fmt_int, verdict)

    report13.issue13(p, get, res, fmt)

    report14.issue14(p, res, fmt)

    report15.issue15(p, get, res, fmt)

    report26.issue26(p, get, res, fmt)

    report27.issue27(p, get, res, fmt)

    report27pt.issue27pt(p, get, res, fmt)

    report29.issue29(p, res, fmt)

    report31.issue31(p, get, res, fmt)

    report30.abtable(p, res, fmt)

    p("## Server CPU per request and throughput, every scenario")
    p("")
    p("Server-side figures (requests, req/s, CPU us/req, core busy) are from the server's "
      "own counters and /proc over the window; tool figures from the load generator.")
    p("")
    p("| scenario | conc | req/s (server) | CPU us/req | ctx switches/req | core %s busy | "
      "avg batch | tool req/s | avg lat us | p99 lat us |" % machine.get("server_core", "0"))
    p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for sc, r in rows.items():
        p("| %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            sc, " (!)" if r["warning"] else "", fmt(r["conc"]), fmt_int(r["rps"]),
            fmt(r["us_per_req"], 2), fmt(r["cs_per_req"], 2), "%.0f%%" % (100 * r["core_busy"]),
            fmt(r["avg_batch"], 2), fmt_int(r["tool_rps"]), fmt(r["avg_us"], 0),
            fmt(r["p99_us"], 0)))
    p("")

    p("## Ratios to the baselines, per concurrency")
    p("")
    p("CPU ratio (in parentheses): inferd's server CPU per request / nginx's with the same "
      "client (inferd-perf --raw-get; h2load's row too). Throughput "
      "ratio: inferd's req/s / nginx's req/s with the same client (inferd-perf "
      "--raw-get), and inferd-perf gRPC / h2load gRPC on the same inferd.")
    p("")
    p("| concurrency | nginx us/req (inferd-perf) | nginx us/req (wrk) | HTTP binary | HTTP JSON | gRPC | gRPC stream | "
      "h2load gRPC | thr. HTTP bin / nginx | thr. HTTP JSON / nginx | thr. gRPC / h2load |")
    p("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    concs = sorted({r["conc"] for sc, r in rows.items()
                    if r["conc"] is not None and r["conc"] != 64 and not sc.startswith("shm_")})
    for c in concs:
        n = get("nginx_raw-get_c%d" % c, "us_per_req")
        nw = get("nginx_wrk_c%d" % c, "us_per_req")
        nr = get("nginx_raw-get_c%d" % c, "rps")

        def cell(sc):
            v = get(sc, "us_per_req")
            return "%s (%s)" % (fmt(v, 2), ratio(v, n)) if v is not None else "-"

        p("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            c, fmt(n, 2), fmt(nw, 2), cell("inferd_http-binary_c%d" % c), cell("inferd_http-json_c%d" % c),
            cell("inferd_grpc_c%d" % c), cell("inferd_grpc-stream_c%d" % c),
            cell("h2load_grpc_c%d" % c),
            ratio(get("inferd_http-binary_c%d" % c, "rps"), nr),
            ratio(get("inferd_http-json_c%d" % c, "rps"), nr),
            ratio(get("inferd_grpc_c%d" % c, "rps"), get("h2load_grpc_c%d" % c, "rps"))))
    p("")
    b = rows.get("inferd_batched_c64")
    if b:
        p("## Dynamic batcher (batched: 2 ms per execute, max_batch_size 8, concurrency 64)")
        p("")
        p("%s inferences/s (server count; tool %s), average batch size %s "
          "(inference count / execution count), %s us of server CPU per inference; "
          "ceiling with full batches: 8 / 2 ms = 4,000/s." % (
              fmt_int(b["rps"]), fmt_int(b["tool_rps"]), fmt(b["avg_batch"], 2),
              fmt(b["us_per_req"], 2)))
        p("")
    def trace_rounds(v):
        return [r["us_per_req"] for sc, r in sorted(rows.items())
                if sc.startswith("trace_%s_r" % v) and r.get("us_per_req") is not None]

    if trace_rounds("none"):
        t0 = min(trace_rounds("none"))
        p("## Tracing (identity_fp32, HTTP binary, concurrency 16)")
        p("")
        p("Servers run in turn, %d rounds; CPU us/req is each one's least over the rounds "
          "(all rounds listed)." % len(trace_rounds("none")))
        p("")
        p("| server | CPU us/req | vs no tracing | rounds | target |")
        p("| --- | ---: | ---: | --- | --- |")
        for v, label, target in (("none", "no trace flags", ""),
                                 ("off", "--trace-config level=OFF (file set)", "within 2%"),
                                 ("ts1000", "level=TIMESTAMPS, rate=1000", "within 15%")):
            us = trace_rounds(v)
            u = min(us) if us else None
            d = "%+.1f%%" % (100.0 * (u - t0) / t0) if u is not None and v != "none" else "-"
            p("| %s | %s | %s | %s | %s |" % (label, fmt(u, 2), d,
                                              ", ".join(fmt(x, 2) for x in us), target))
        p("")
    p("## Idle keep-alive connections")
    p("")
    p("| server | connections reached / asked | VmRSS before KiB | with KiB | KiB per connection "
      "| RssAnon KiB per connection |")
    p("| --- | ---: | ---: | ---: | ---: | ---: |")
    for n, d in idles.items():
        if d:
            p("| %s | %s / %s | %s | %s | %s | %s |" % (
                n, fmt_int(d["reached"]), fmt_int(d["target"]), fmt_int(d["vmrss_before_kib"]),
                fmt_int(d["vmrss_with_kib"]), fmt(d["kib_per_conn"], 3),
                fmt(d["anon_kib_per_conn"], 3)))
    p("")
    warn = [sc for sc, r in rows.items() if r["warning"]]
    if warn:
        p("(!) " + "; ".join("%s: %s" % (sc, rows[sc]["warning"]) for sc in warn))
        p("")
    fails = [sc for sc, r in rows.items() if r["fail"]]
    if fails:
        p("Failed inferences in the window: " + ", ".join(
            "%s %d" % (sc, rows[sc]["fail"]) for sc in fails))
        p("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
