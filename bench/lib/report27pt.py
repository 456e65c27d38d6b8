"""Issue 27's PyTorch table for bench/lib/report.py (section pytorch: the PyTorch backend).

issue27pt(p, get, res, fmt) prints the "Issue 27 target (the PyTorch backend)"
table and the notes under it with `p`, from bench/run.sh's section pytorch
(one run):

* scenarios pytorch_<model>_http-binary_c<N>: digits_torchscript (the digits
  MLP of examples/model_repository as TorchScript, PyTorch backend, dynamic
  batching) and identity_fp32 (the identity C backend), one server, HTTP/1.1
  binary at concurrency 1 and 16. Server CPU per request =
  `get(sc, "us_per_req")`, from the suite's /proc/<pid>/stat snapshots and
  the server's own count.
* raw/pytorch/floor_b<B>.json: bench/torch_floor.cc, the same model.pt run
  in a C++ loop straight on libtorch (torch::jit::load, forward() under
  c10::InferenceMode, libtorch's defaults, pinned to the server core, no
  server running), batch B: CPU per run (every thread).
* raw/pytorch/floor_bare.json and mem_server_*.txt: VmHWM/VmRSS in KiB.

The target, as issue 26's: overhead = digits_torchscript server CPU/req -
libtorch floor CPU/run (batch 1), and overhead / identity server CPU/req
<= 1.2, at each concurrency. At 16 the dynamic batcher runs several requests
per forward(), so libtorch's own cost per inference there is below the
batch-1 floor; the table also gives the floor at the server's average batch
(interpolated between the measured batches) and the overhead against it.
"""
import os

from report26 import _json, _kv, floor_at

TARGET = 1.2  # overhead / identity's whole server cost, at most
CONCS = (1, 16)
MODEL = "digits_torchscript"
IDENTITY = "identity_fp32"
FLOOR_BATCHES = (1, 2, 4, 8, 16)


def scenario_name(model, c):
    return "pytorch_%s_http-binary_c%d" % (model, c)


def issue27pt(p, get, res, fmt):
    d = os.path.join(res, "raw", "pytorch")
    if not os.path.isdir(d):
        return
    p("## Issue 27 target (the PyTorch backend)")
    p("")
    skipped = os.path.join(d, "skipped")
    if os.path.exists(skipped):
        with open(skipped) as f:
            p("Section pytorch skipped: %s." % f.read().strip())
        p("")
        return

    def verdict(v):
        if v is None:
            return "not measured"
        return "**met**" if v <= TARGET else "**missed**"

    floors = {b: _json(os.path.join(d, "floor_b%d.json" % b)) for b in FLOOR_BATCHES}
    f1 = floors.get(1) and floors[1]["cpu_us_per_run"]
    dig = {c: get(scenario_name(MODEL, c), "us_per_req") for c in CONCS}
    idn = {c: get(scenario_name(IDENTITY, c), "us_per_req") for c in CONCS}
    batch = {c: get(scenario_name(MODEL, c), "avg_batch") for c in CONCS}
    over = {c: dig[c] - f1 if dig[c] is not None and f1 is not None else None for c in CONCS}
    ratio = {c: over[c] / idn[c] if over[c] is not None and idn[c] else None for c in CONCS}
    fb = {c: floor_at(floors, batch[c]) for c in CONCS}
    overb = {c: dig[c] - fb[c] if dig[c] is not None and fb[c] is not None else None for c in CONCS}
    ratiob = {c: overb[c] / idn[c] if overb[c] is not None and idn[c] else None for c in CONCS}

    def row(label, vals, nd=2):
        p("| %s | %s | %s |" % (label, fmt(vals[1], nd), fmt(vals[16], nd)))

    p("| figure | conc 1 | conc 16 |")
    p("| --- | ---: | ---: |")
    row("digits_torchscript: server CPU us/req (HTTP binary)", dig)
    row("digits_torchscript: average batch (inference count / execution count)", batch)
    row("libtorch floor: CPU us per batch-1 run (torch_floor, same model.pt)", {1: f1, 16: f1})
    row("overhead = digits_torchscript - floor, us/req", over)
    row("identity_fp32: server CPU us/req (same server, protocol, concurrency)", idn)
    p("| **overhead / identity** (target <= %.1f) | %s %s | %s %s |" % (
        TARGET, fmt(ratio[1], 2), verdict(ratio[1]), fmt(ratio[16], 2), verdict(ratio[16])))
    row("libtorch floor at the server's average batch, CPU us per inference", fb)
    row("overhead against that floor, us/req", overb)
    row("overhead against that floor / identity", ratiob)
    p("")
    p("libtorch floor by batch (CPU us per run, per inference; wall us per run): " + "; ".join(
        "%d: %s, %s; %s" % (b, fmt(f["cpu_us_per_run"], 2), fmt(f["cpu_us_per_run"] / b, 2),
                            fmt(f["wall_us_per_run"], 2))
        for b, f in sorted(floors.items()) if f) +
      (" (libtorch %s, %s intra-op thread(s), %s threads in the floor process)" % (
          floors[1].get("torch_version"), floors[1].get("intra_op_threads"),
          floors[1].get("threads")) if floors.get(1) else "") + ".")
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
        p("| server serving identity_fp32 + digits_torchscript, just ready | %s | %s |" % (
            sdg["hwm"], sdg["rss"]))
    if sda:
        p("| the same after the four load scenarios (peak) | %s | %s |" % (sda["hwm"], sda["rss"]))
    if bare:
        p("| torch_floor --bare (the program, libtorch mapped, no module) | %s | %s |" % (
            bare["vm_hwm_kib"], bare["vm_rss_kib"]))
    if floors.get(1):
        p("| torch_floor, one digits module after its batch-1 loop | %s | %s |" % (
            floors[1]["vm_hwm_kib"], floors[1]["vm_rss_kib"]))
    p("")
    p("The module's own footprint in the floor (floor - bare VmHWM): %s KiB; what loading "
      "digits_torchscript (the backend, libtorch and the module) adds to the server's VmHWM: "
      "%s KiB%s." % (fmt(foot), fmt(added),
                     "; server peak after the load: %s KiB" % sda["hwm"] if sda else ""))
    p("")
