"""Issue 12's tables for bench/lib/report.py (sections idle, conns, slowloris).

issue12(p, get, res, idle_inferd, perf_summary, fmt, fmt_int, verdict) prints
the "Issue 12 targets" table and the notes under it with `p`; `get(sc, key)`
reads a scenario's figure (slowloris scenarios); the other figures are read
from RES/raw/conns/ and RES/raw/slowloris/ here.
"""
import json
import os

# Issue 12's targets: resident memory per idle keep-alive HTTP connection;
# health p99 with as many connections open as the file limit allows; a
# normal client's p99 with 5,000 slowloris connections / without, same run.
TARGETS12 = {"idle_kib": 2.0, "health_p99_ms": 10.0, "slowloris_p99_ratio": 1.2}


def read_kv(path):
    """KEY VALUE... lines -> {key: int, or a string when not one integer}."""
    d = {}
    if not os.path.exists(path):
        return d
    with open(path) as f:
        for line in f:
            k, _, v = line.strip().partition(" ")
            try:
                d[k] = int(v)
            except ValueError:
                d[k] = v
    return d


def per_conn(d, prefix, n):
    a, b = d.get(prefix + "_vmrss_before_kib"), d.get(prefix + "_vmrss_with_kib")
    if not isinstance(a, int) or not isinstance(b, int) or not n:
        return None
    return (b - a) / n


def issue12(p, get, res, idle_inferd, perf_summary, fmt, fmt_int, verdict):
    conns = read_kv(os.path.join(res, "raw", "conns", "conns.txt"))
    slow_dir = os.path.join(res, "raw", "slowloris")
    if not conns and not idle_inferd and not os.path.isdir(slow_dir):
        return
    p("## Issue 12 targets")
    p("")
    p("| figure | inferd | baseline | ratio | target | verdict |")
    p("| --- | ---: | ---: | ---: | ---: | --- |")
    if idle_inferd:
        ik = idle_inferd["kib_per_conn"]
        p("| %s idle HTTP keep-alive connections (section idle), KiB VmRSS per connection | %s "
          "| - | - | <= %.0f | %s |" % (fmt_int(idle_inferd["reached"]), fmt(ik, 3),
                                        TARGETS12["idle_kib"], verdict(ik, TARGETS12["idle_kib"])))
    g_n = h_n = None
    if conns:
        g_n = conns.get("grpc_fds_with", 0) - conns.get("grpc_fds_before", 0)
        gk = per_conn(conns, "grpc", g_n)
        p("| %s idle gRPC connections (one ServerLive each), KiB VmRSS per connection | %s | - "
          "| - | reported | - |" % (fmt_int(g_n), fmt(gk, 2)))
        h_n = conns.get("http_fds_with", 0) - conns.get("http_fds_before", 0)
        hk = per_conn(conns, "http", h_n)
        p("| %s idle HTTP keep-alive connections on one loop (%s asked; file limit %s), KiB "
          "VmRSS per connection | %s | - | - | reported | - |" % (
              fmt_int(h_n), fmt_int(conns.get("http_target")), fmt_int(conns.get("nofile")),
              fmt(hk, 3)))
        hb = hh = None
        for name in ("health_base", "health_held"):
            path = os.path.join(res, "raw", "conns", name + ".json")
            try:
                v = perf_summary(path)["p99_us"]
            except (OSError, ValueError, KeyError, IndexError):
                v = None
            if name == "health_base":
                hb = v
            else:
                hh = v
        hr = hh / hb if hh is not None and hb else None
        hms = hh / 1000 if hh is not None else None
        p("| GET /v2/health/ready p99 (concurrency 1) with those %s connections open | %s ms | "
          "%s ms (none open) | %s | < %.0f ms | %s |" % (
              fmt_int(h_n), fmt(hms, 3), fmt(hb / 1000 if hb is not None else None, 3),
              fmt(hr, 2), TARGETS12["health_p99_ms"],
              "not measured" if hms is None else
              ("**met**" if hms < TARGETS12["health_p99_ms"] else "**missed**")))
    for c in (1, 16):
        v, b = get("slowloris_c%d" % c, "p99_us"), get("slowloris-base_c%d" % c, "p99_us")
        if v is None and b is None:
            continue
        r = v / b if v is not None and b else None
        p("| identity_fp32 HTTP binary, concurrency %d, p99 latency with the slowloris crowd | %s "
          "us | %s us (same client, none) | %s | <= %.1fx | %s |" % (
              c, fmt(v, 0), fmt(b, 0), fmt(r, 2), TARGETS12["slowloris_p99_ratio"],
              verdict(r, TARGETS12["slowloris_p99_ratio"])))
    p("")
    if conns and h_n:
        hk = per_conn(conns, "http", h_n)
        tcp = conns.get("with_tcp_mem_pages", 0) - conns.get("before_tcp_mem_pages", 0)
        slab = conns.get("with_slab_kib", 0) - conns.get("before_slab_kib", 0)
        slab_pc = slab / h_n
        p("Connections: %s HTTP held by inferd-perf --idle-connections, opened in %s ms; the "
          "server's open descriptors after the health window: %s. Kernel, machine-wide, both "
          "ends of each loopback connection (approximate: other processes run too): TCP buffer "
          "pages %+d, Slab %+d KiB (%s KiB per connection pair)." % (
              fmt_int(h_n), fmt_int(conns.get("http_open_ms")),
              fmt_int(conns.get("http_fds_after_health")), tcp, slab, fmt(slab_pc, 2)))
        p("")
        if hk is not None:
            user_mib = hk * 100000 / 1024
            kern_mib = slab_pc / 2 * 100000 / 1024
            p("100,000 connections, from these costs: about %.0f MiB of inferd's resident memory "
              "(%s KiB each) and about %.0f MiB of kernel slab for the server's sockets (half "
              "the pair's), plus socket buffers only while data is queued; a descriptor limit "
              "above 100,000 (this machine's hard limit is %s and cannot be raised here); and, "
              "from one client address, more than one source address or server port (the "
              "ephemeral port range %s gives about %s connections per address pair)." % (
                  user_mib, fmt(hk, 3), kern_mib, fmt_int(conns.get("nofile")),
                  conns.get("port_range", "?"), _port_span(conns.get("port_range"))))
            p("")
    st_path = os.path.join(slow_dir, "status.json")
    if os.path.exists(st_path):
        with open(st_path) as f:
            st = json.load(f)
        p("Slowloris crowd (lib/connhold.py slowloris, one header byte per connection every %s "
          "s, never ending the header): %s asked, %s open at the end, %s opened in all, %s "
          "closed by the server%s, held %s s; connect errors %s%s." % (
              st.get("interval_s"), fmt_int(st.get("target")), fmt_int(st.get("open")),
              fmt_int(st.get("opened")), fmt_int(st.get("closed_by_server")),
              (" (answers: %s)" % ", ".join("%s x%d" % kv for kv in st["answers"].items()))
              if st.get("answers") else "",
              st.get("held_s"), st.get("connect_errors"),
              ("; first error: %s" % st["first_error"]) if st.get("first_error") else ""))
        p("")


def _port_span(text):
    try:
        lo, hi = (int(x) for x in str(text).split())
        return "{:,}".format(hi - lo + 1)
    except ValueError:
        return "?"
