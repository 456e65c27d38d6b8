"""Issue 13's table for bench/lib/report.py (section shm: shared memory).

issue13(p, get, res, fmt) prints the "Issue 13
targets" table and the notes under it with `p`; `get(sc, key)` reads a
scenario's figure (us_per_req, rps, tool_rps, avg_us, p99_us); the memcpy
limit is read from RES/raw/shm_memcpy/{before,after}.json here.

Scenarios (bench/run.sh): identity_fp32_16m (one 16 MiB FP32 tensor in and
out) driven by inferd-perf at concurrency 1 and 2, over HTTP with the binary
tensor extension (shm_http-binary_c*), gRPC with raw contents (shm_grpc_c*),
and with --shared-memory=system over HTTP (shm_http-system_c*) and gRPC
(shm_grpc-system_c*).
"""
import json
import os

# Issue 13's targets: server CPU per request with system shared memory /
# the same request over HTTP with the binary extension; throughput with
# system shared memory / the memcpy-bound limit measured in the same run.
TARGETS13 = {"cpu_ratio": 0.05, "thr_ratio": 0.90}
THR_C = 2  # the concurrency of the throughput figure (the instance never idles)


def memcpy_limit(res):
    """The best of the runs before and after the scenarios, and each one."""
    runs = {}
    for name in ("before", "after"):
        path = os.path.join(res, "raw", "shm_memcpy", name + ".json")
        try:
            with open(path) as f:
                runs[name] = json.load(f)
        except (OSError, ValueError):
            pass
    best = max(runs.values(), key=lambda d: d["copies_per_s"]) if runs else None
    return best, runs


def compute_infer_us(res, sc):
    """The backend's execute time per request over the scenario's window
    (compute_infer of the statistics snapshots), or None."""
    try:
        st = []
        for name in ("a.json", "b.json"):
            with open(os.path.join(res, "raw", sc, name)) as f:
                st.append(json.load(f)["model_stats"][0]["inference_stats"]["compute_infer"])
    except (OSError, ValueError, KeyError, IndexError):
        return None
    n = st[1]["count"] - st[0]["count"]
    return (st[1]["ns"] - st[0]["ns"]) / n / 1e3 if n > 0 else None


def issue13(p, get, res, fmt):
    best, runs = memcpy_limit(res)
    scs = ["shm_%s_c%d" % (k, c) for c in (1, 2)
           for k in ("http-binary", "http-system", "grpc", "grpc-system")]
    scs.append("shm_http-system-nospin_c%d" % THR_C)
    if best is None and all(get(sc, "rps") is None for sc in scs):
        return
    limit = best["copies_per_s"] if best else None

    def beyond(sc):
        v, ci = get(sc, "us_per_req"), compute_infer_us(res, sc)
        return v - ci if v is not None and ci is not None else None

    p("## Issue 13 targets")
    p("")
    p("| figure | shared memory | baseline | ratio | target | verdict |")
    p("| --- | ---: | ---: | ---: | ---: | --- |")
    for c in (1, 2):
        shm = get("shm_http-system_c%d" % c, "us_per_req")
        base = get("shm_http-binary_c%d" % c, "us_per_req")
        r = shm / base if shm is not None and base else None
        p("| 16 MiB FP32 in and out, concurrency %d: server CPU us/request, HTTP system shm / "
          "HTTP binary | %s | %s | %s | < %.2f | %s |" % (
              c, fmt(shm, 0), fmt(base, 0), fmt(r, 3), TARGETS13["cpu_ratio"],
              "not measured" if r is None else
              ("**met**" if r < TARGETS13["cpu_ratio"] else "**missed**")))
    for c in (1, 2):
        shm, base = beyond("shm_http-system_c%d" % c), beyond("shm_http-binary_c%d" % c)
        r = shm / base if shm is not None and base else None
        p("| concurrency %d: server CPU us/request beyond the backend's execute (its 16 MiB "
          "copy, compute infer), HTTP system shm / HTTP binary | %s | %s | %s | reported | - |" % (
              c, fmt(shm, 0), fmt(base, 0), fmt(r, 3)))
    rps = get("shm_http-system_c%d" % THR_C, "rps")
    r = rps / limit if rps is not None and limit else None
    # The typical rate: the better of the two runs' medians.
    medians = [d.get("median_copies_per_s") for d in runs.values() if d.get("median_copies_per_s")]
    median = max(medians) if medians else None
    p("| throughput, HTTP system shm at concurrency %d: requests/s (server count) / memcpy-bound "
      "limit (16 MiB copies/s on the server core) | %s | %s | %s | >= %.2f | %s |" % (
          THR_C, fmt(rps, 1), fmt(limit, 1), fmt(r, 3), TARGETS13["thr_ratio"],
          "not measured" if r is None else
          ("**met**" if r >= TARGETS13["thr_ratio"] else "**missed**")))
    p("| the same against the typical memcpy rate (the better median of 0.25 s slices) | %s "
      "| %s | %s | reported | - |" % (
          fmt(rps, 1), fmt(median, 1),
          fmt(rps / median if rps is not None and median else None, 3)))
    for sc, what in (("shm_grpc-system_c%d" % THR_C, "the same over gRPC"),
                     ("shm_http-system-nospin_c%d" % THR_C,
                      "the same over HTTP, server started with --loop-spin-us=0")):
        rps = get(sc, "rps")
        p("| %s | %s | %s | %s | reported | - |" % (
            what, fmt(rps, 1), fmt(limit, 1),
            fmt(rps / limit if rps is not None and limit else None, 3)))
    p("")
    p("| scenario | server req/s | server CPU us/req | compute infer us/req | CPU beyond it "
      "us/req | tool avg lat us | tool p99 lat us |")
    p("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for sc in scs:
        if get(sc, "rps") is None:
            continue
        p("| %s | %s | %s | %s | %s | %s | %s |" % (
            sc, fmt(get(sc, "rps"), 1), fmt(get(sc, "us_per_req"), 0),
            fmt(compute_infer_us(res, sc), 0), fmt(beyond(sc), 0),
            fmt(get(sc, "avg_us"), 0), fmt(get(sc, "p99_us"), 0)))
    p("")
    if runs:
        p("memcpy-bound limit (bench/lib/memcpy_limit.py on the server core, server idle, "
          "0.25 s slices): " + "; ".join(
              "%s the scenarios best %.1f copies/s (%.2f GB/s, %.0f us per copy), median %s" % (
                  k, d["copies_per_s"], d["gb_per_s"], d["us_per_copy"],
                  fmt(d.get("median_copies_per_s"), 1)) for k, d in runs.items()) +
          ". The limit is the best slice of either run: work of other processes on the "
          "server core only slows a slice down.")
        p("")
    p("Server CPU is utime+stime of every inferd thread over the window (10 ms ticks) / the "
      "requests the server completed in it. \"Beyond the backend's execute\" subtracts the "
      "statistics' compute infer time per request over the same window: the identity "
      "backend's one 16 MiB copy from input to output, which every path makes and shared "
      "memory cannot remove (wall time on the instance thread, which the server core may "
      "also have spent on the loop meanwhile: approximate). Over HTTP binary and gRPC the "
      "server also receives and sends 16 MiB through loopback TCP per request.")
    p("")
