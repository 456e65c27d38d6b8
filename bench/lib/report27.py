"""Issue 27's table for bench/lib/report.py (section digits: the digits ensemble).

issue27(p, get, res, fmt) prints the "Issue 27 target" table with `p`, from
bench/run.sh's section digits (one run, one server, HTTP/1.1 binary,
concurrency 1):

* raw/digits/chain.json (bench/lib/digits_chain.py, one Python client):
  mean, p50 and p99 latency of the `digits` ensemble, of the ensemble asked
  for `label` only, and of the client chaining digits_preprocess and
  digits_onnx itself, in turns over the same window;
* scenarios digits_<model>_http-binary_c1 (inferd-perf, C): the average
  latency of the ensemble and of each of the two models the chain calls
  (`get(sc, "avg_us")`), whose sum is the least a C client chaining them pays.

The target: the ensemble's mean latency lower than the chain's (ratio < 1),
both measured by the same client in the same run.
"""
import json
import os

MODELS = ("digits", "digits_preprocess", "digits_onnx")


def scenario_name(model):
    return "digits_%s_http-binary_c1" % model


def issue27(p, get, res, fmt):
    d = os.path.join(res, "raw", "digits")
    if not os.path.isdir(d):
        return
    p("## Issue 27 target (the digits ensemble)")
    p("")
    skipped = os.path.join(d, "skipped")
    if os.path.exists(skipped):
        with open(skipped) as f:
            p("Section digits skipped: %s." % f.read().strip())
        p("")
        return
    try:
        with open(os.path.join(d, "chain.json")) as f:
            ways = json.load(f)["ways"]
    except (OSError, ValueError, KeyError):
        ways = {}

    def verdict(v):
        if v is None:
            return "not measured"
        return "**met**" if v < 1 else "**missed**"

    p("| concurrency 1, HTTP/1.1 binary, same server | requests | mean us | p50 us | p99 us |")
    p("| --- | ---: | ---: | ---: | ---: |")
    labels = {
        "ensemble": "Python client: `digits` (preprocess, onnx, postprocess in the server)",
        "ensemble_label": "Python client: `digits` asked for `label` only (preprocess, onnx)",
        "chain": "Python client: digits_preprocess, then digits_onnx (two requests)",
    }
    for w, label in labels.items():
        v = ways.get(w)
        if v:
            p("| %s | %d | %s | %s | %s |" % (label, v["requests"], fmt(v["mean_us"], 0),
                                             fmt(v["p50_us"], 0), fmt(v["p99_us"], 0)))
    ens = ways.get("ensemble", {}).get("mean_us")
    chain = ways.get("chain", {}).get("mean_us")
    r = ens / chain if ens is not None and chain else None
    p("| **ensemble / chain, mean latency** (target < 1) | | %s %s | | |" % (fmt(r, 2), verdict(r)))
    c = {m: get(scenario_name(m), "avg_us") for m in MODELS}
    p("| inferd-perf (C): `digits` | | %s | | %s |" % (
        fmt(c["digits"], 0), fmt(get(scenario_name("digits"), "p99_us"), 0)))
    p("| inferd-perf (C): digits_preprocess alone | | %s | | |" % fmt(c["digits_preprocess"], 0))
    p("| inferd-perf (C): digits_onnx alone | | %s | | |" % fmt(c["digits_onnx"], 0))
    s = c["digits_preprocess"] + c["digits_onnx"] \
        if c["digits_preprocess"] is not None and c["digits_onnx"] is not None else None
    rc = c["digits"] / s if c["digits"] is not None and s else None
    p("| inferd-perf (C): preprocess + onnx, the least a C client chaining them pays | | %s | | |"
      % fmt(s, 0))
    p("| inferd-perf (C): ensemble / that sum | | %s | | |" % fmt(rc, 2))
    p("")
