#!/usr/bin/python3
"""Loads and unloads one model in a loop over HTTP (issue 10's reload figure).

    reload_loop.py HOST:PORT MODEL SUMMARY.json [MAX_SECONDS] [PAUSE_MS]

Sends POST /v2/repository/models/MODEL/load, then .../unload, again and
again on one keep-alive connection, until SIGTERM / SIGINT or MAX_SECONDS
(default 120, so that nothing runs unbounded), pausing PAUSE_MS (default 0)
after each unload. Writes SUMMARY.json when it stops: the cycles completed,
the answers that were not 200 (and the first one's body; a refused call is
followed by a 50 ms pause), and the load and unload call times in
milliseconds. Prints "reload loop: started" once the
first load has answered, so a caller can wait for the loop to be running.
"""
import http.client
import json
import signal
import sys
import time

stop = False


def on_signal(signum, frame):
    global stop
    stop = True


def main(argv):
    host, _, port = argv[1].rpartition(":")
    model, out = argv[2], argv[3]
    max_s = float(argv[4]) if len(argv) > 4 else 120.0
    pause = float(argv[5]) / 1000 if len(argv) > 5 else 0.0
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    hdrs = {"Content-Type": "application/json"}
    times = {"load": [], "unload": []}
    s = {"cycles": 0, "load_fail": 0, "unload_fail": 0, "first_error": ""}
    t_end = time.monotonic() + max_s
    t_start = time.monotonic()

    def call(verb):
        nonlocal conn
        t0 = time.monotonic()
        try:
            conn.request("POST", "/v2/repository/models/%s/%s" % (model, verb), b"{}", hdrs)
            r = conn.getresponse()
            body = r.read()
            status = r.status
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            conn = http.client.HTTPConnection(host, int(port), timeout=60)
            status, body = None, str(e).encode()
        times[verb].append((time.monotonic() - t0) * 1e3)
        if status != 200:
            s[verb + "_fail"] += 1
            if not s["first_error"]:
                s["first_error"] = "%s %s: %s" % (verb, status, body[:300].decode(errors="replace"))
            time.sleep(0.05)  # a refusal is answered at once: do not spin on it
        return status == 200

    started = False
    while not stop and time.monotonic() < t_end:
        call("load")
        if not started:
            print("reload loop: started", flush=True)
            started = True
        if stop:
            break
        call("unload")
        s["cycles"] += 1
        if pause > 0:
            time.sleep(pause)

    s["seconds"] = time.monotonic() - t_start
    for verb, ts in times.items():
        ts.sort()
        s[verb + "_calls"] = len(ts)
        s[verb + "_ms_avg"] = sum(ts) / len(ts) if ts else None
        s[verb + "_ms_p50"] = ts[len(ts) // 2] if ts else None
        s[verb + "_ms_max"] = ts[-1] if ts else None
    with open(out, "w") as f:
        json.dump(s, f, indent=1)
    print("reload loop: %d cycles in %.1f s, %d load / %d unload failures" % (
        s["cycles"], s["seconds"], s["load_fail"], s["unload_fail"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
