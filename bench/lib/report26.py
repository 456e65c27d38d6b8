"""Issue 26's table for bench/lib/report.py (section onnx: the ONNX Runtime backend).

issue26(p, get, res, fmt) prints the "Issue 26 targets" table and the notes
under it with `p`, from bench/run.sh's section onnx (one run):

* scenarios onnx_<model>_http-binary_c<N>: digits_onnx (the digits MLP of
  examples/model_repository, ONNX Runtime backend, dynamic batching) and
  identity_fp32 (the identity C backend), one server, HTTP/1.1 binary at
  concurrency 1 and 16. Server CPU per request = `get(sc, "us_per_req")`,
  from the suite's /proc/<pid>/stat snapshots and the server's own count.
* raw/onnx/floor_b<B>.json: bench/ort_floor.c, the same model.onnx run in a
  C loop straight on ONNX Runtime (default session options, pinned to the
  server core, no server running), batch B: CPU per run (every thread).
* raw/onnx/floor_bare.json and mem_server_*.txt: VmHWM/VmRSS in KiB.

The target: overhead = digits server CPU/req - ORT floor CPU/run (batch 1),
and overhead / identity server CPU/req <= 1.2, at each concurrency. At 16 the
dynamic batcher runs several requests per ORT run, so ORT's own cost per
inference there is below the batch-1 floor; the table also gives the floor
at the server's average batch (interpolated between the measured batches),
and the overhead against it.
"""
import json
import os

TARGET26 = 1.2  # overhead / identity's whole server cost, at most
CONCS = (1, 16)
DIGITS = "digits_onnx"
IDENTITY = "identity_fp32"
FLOOR_BATCHES = (1, 2, 4, 8, 16)


def scenario_name(model, c):
    return "onnx_%s_http-binary_c%d" % (model, c)


def _json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _kv(path):
    out = {}
    try:
        with open(path) as f:
            for line in f:
                k, _, v = line.partition(" ")
                if v.strip():
                    out[k] = int(v)
    except (OSError, ValueError):
        return None
    return out


def floor_at(floors, batch):
    """ORT CPU per inference at `batch` rows per run: per-run CPU / rows,
    interpolated linearly in per-run CPU between the measured batches."""
    pts = sorted((b, f["cpu_us_per_run"]) for b, f in floors.items() if f)
    if not pts or batch is None:
        return None
    if batch <= pts[0][0]:
        return pts[0][1] / pts[0][0]
    for (b0, c0), (b1, c1) in zip(pts, pts[1:]):
        if b0 <= batch <= b1:
            run = c0 + (c1 - c0) * (batch - b0) / (b1 - b0)
            return run / batch
    return pts[-1][1] / pts[-1][0]


def issue26(p, get, res, fmt):
    d = os.path.join(res, "raw", "onnx")
    if not os.path.isdir(d):
        return
    p("## Issue 26 targets")
    p("")
    skipped = os.path.join(d, "skipped")
    if os.path.exists(skipped):
        with open(skipped) as f:
            p("Section onnx skipped: %s." % f.read().strip())
        p("")
        return

    def verdict(v):
        if v is None:
            return "not measured"
        return "**met**" if v <= TARGET26 else "**missed**"

    floors = {b: _json(os.path.join(d, "floor_b%d.json" % b)) for b in FLOOR_BATCHES}
    f1 = floors.get(1) and floors[1]["cpu_us_per_run"]
    p("| figure | conc 1 | conc 16 |")
    p("| --- | ---: | ---: |")
    dig = {c: get(scenario_name(DIGITS, c), "us_per_req") for c in CONCS}
    idn = {c: get(scenario_name(IDENTITY, c), "us_per_req") for c in CONCS}
    batch = {c: get(scenario_name(DIGITS, c), "avg_batch") for c in CONCS}
    over = {c: dig[c] - f1 if dig[c] is not None and f1 is not None else None for c in CONCS}
    ratio = {c: over[c] / idn[c] if over[c] is not None and idn[c] else None for c in CONCS}
    fb = {c: floor_at(floors, batch[c]) for c in CONCS}
    overb = {c: dig[c] - fb[c] if dig[c] is not None and fb[c] is not None else None for c in CONCS}
    ratiob = {c: overb[c] / idn[c] if overb[c] is not None and idn[c] else None for c in CONCS}

    def row(label, vals, nd=2):
        p("| %s | %s | %s |" % (label, fmt(vals[1], nd), fmt(vals[16], nd)))

    row("digits_onnx: server CPU us/req (HTTP binary)", dig)
    row("digits_onnx: average batch (inference count / execution count)", batch)
    row("ORT floor: CPU us per batch-1 run (ort_floor, same model.onnx)", {1: f1, 16: f1})
    row("overhead = digits - floor, us/req", over)
    row("identity_fp32: server CPU us/req (same server, protocol, concurrency)", idn)
    p("| **overhead / identity** (target <= %.1f) | %s %s | %s %s |" % (
        TARGET26, fmt(ratio[1], 2), verdict(ratio[1]), fmt(ratio[16], 2), verdict(ratio[16])))
    row("ORT floor at the server's average batch, CPU us per inference", fb)
    row("overhead against that floor, us/req", overb)
    row("overhead against that floor / identity", ratiob)
    p("")
    p("ORT floor by batch (CPU us per run, per inference): " + "; ".join(
        "%d: %s, %s" % (b, fmt(f["cpu_us_per_run"], 2), fmt(f["cpu_us_per_run"] / b, 2))
        for b, f in sorted(floors.items()) if f) +
      (" (ORT %s, %s threads in the floor process)" % (
          floors[1].get("ort_version"), floors[1].get("threads")) if floors.get(1) else "") + ".")
    p("")

    bare = _json(os.path.join(d, "floor_bare.json"))
    sid = _kv(os.path.join(d, "mem_server_identity.txt"))
    sdg = _kv(os.path.join(d, "mem_server_digits.txt"))
    sda = _kv(os.path.join(d, "mem_server_digits_after.txt"))
    foot = floors[1]["vm_hwm_kib"] - bare["vm_hwm_kib"] if floors.get(1) and bare else None
    added = sdg["hwm"] - sid["hwm"] if sdg and sid else None
    p("| memory (KiB, from /proc/<pid>/status) | VmHWM | VmRSS |")
    p("| --- | ---: | ---: |")
    if sid:
        p("| server serving identity_fp32 only, just ready | %s | %s |" % (sid["hwm"], sid["rss"]))
    if sdg:
        p("| server serving identity_fp32 + digits_onnx, just ready | %s | %s |" % (
            sdg["hwm"], sdg["rss"]))
    if sda:
        p("| the same after the four load scenarios (peak) | %s | %s |" % (sda["hwm"], sda["rss"]))
    if bare:
        p("| ort_floor --bare (the program without the library) | %s | %s |" % (
            bare["vm_hwm_kib"], bare["vm_rss_kib"]))
    if floors.get(1):
        p("| ort_floor, one digits session after its batch-1 loop | %s | %s |" % (
            floors[1]["vm_hwm_kib"], floors[1]["vm_rss_kib"]))
    p("")
    p("ORT's own footprint for one session (floor - bare VmHWM): %s KiB; what loading digits_onnx "
      "adds to the server's VmHWM: %s KiB (%s x ORT's own)%s." % (
          fmt(foot), fmt(added), fmt(added / foot if added is not None and foot else None, 2),
          "; server peak after the load: %s KiB" % sda["hwm"] if sda else ""))
    p("")

    # Outputs written in place (fixed output size) against copied once
    # (dynamic output size, Triton's ORT backend's way for every output).
    fixed = {c: get(scenario_name("ort_id_fixed", c), "us_per_req") for c in (1, 8)}
    dyn = {c: get(scenario_name("ort_id_dynamic", c), "us_per_req") for c in (1, 8)}
    if any(v is not None for v in list(fixed.values()) + list(dyn.values())):
        p("| ONNX Identity, FP32[1,262144] (1 MiB), HTTP binary | conc 1 | conc 8 |")
        p("| --- | ---: | ---: |")
        p("| output written by ONNX Runtime into the response (dims fixed): server CPU us/req "
          "| %s | %s |" % (fmt(fixed[1], 2), fmt(fixed[8], 2)))
        p("| output copied from ONNX Runtime's buffer (dims dynamic): server CPU us/req "
          "| %s | %s |" % (fmt(dyn[1], 2), fmt(dyn[8], 2)))
        p("| saved by writing in place, us/req | %s | %s |" % tuple(
            fmt(dyn[c] - fixed[c] if dyn[c] is not None and fixed[c] is not None else None, 2)
            for c in (1, 8)))
        p("")
