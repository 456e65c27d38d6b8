#!/usr/bin/python3
"""bench/run.sh section digits: the digits ensemble against the client chaining
its models itself, end-to-end latency at concurrency 1, one client.

Usage: digits_chain.py HOST:PORT SECONDS OUT.json

One keep-alive HTTP/1.1 connection (http.client), the binary tensor
extension both ways, one request in flight. Three ways of getting the class
and its probability for one digit (64 random UINT8 pixels 0..16, the same
rows for every way), each request timed from before the first byte is sent
to after the last answer is decoded:

* ensemble: one request to `digits` (digits_preprocess, digits_onnx,
  digits_postprocess in the server), outputs label and probability;
* ensemble_label: one request to `digits` asking for `label` only (the
  server runs the first two steps: the same work as the chain below);
* chain: a request to digits_preprocess (UINT8 -> FP32 / 16), its output
  decoded and sent in a second request to digits_onnx, the probability of
  the class taken from its answer in the client.

The ways take turns in ROUNDS rounds of SECONDS / ROUNDS / 3 each, so a
drift of the machine falls on all three alike. Writes, per way: requests,
mean, p50 and p99 latency in us. Bounded: each turn stops at its time or at
MAX_PER_TURN requests; every socket operation has a timeout.
"""
import http.client
import json
import struct
import sys
import time

import numpy as np

ROUNDS = 5
MAX_PER_TURN = 200000
TIMEOUT_S = 10


def body(inputs, outputs):
    """The binary extension's request: JSON header, then the tensors' bytes."""
    hdr = {"inputs": [{"name": n, "datatype": dt, "shape": list(a.shape),
                       "parameters": {"binary_data_size": a.nbytes}} for n, dt, a in inputs],
           "outputs": [{"name": o, "parameters": {"binary_data": True}} for o in outputs]}
    h = json.dumps(hdr).encode()
    return h + b"".join(a.tobytes() for _, _, a in inputs), len(h)


DTYPES = {"FP32": np.float32, "INT64": np.int64, "UINT8": np.uint8}


def post(conn, model, payload, hlen):
    conn.request("POST", "/v2/models/%s/infer" % model, body=payload,
                 headers={"Inference-Header-Content-Length": str(hlen),
                          "Content-Type": "application/octet-stream"})
    r = conn.getresponse()
    data = r.read()
    if r.status != 200:
        raise RuntimeError("%s: HTTP %d %s" % (model, r.status, data[:200]))
    n = int(r.getheader("Inference-Header-Content-Length"))
    hdr = json.loads(data[:n])
    out, off = {}, n
    for o in hdr["outputs"]:
        size = o["parameters"]["binary_data_size"]
        out[o["name"]] = np.frombuffer(data[off:off + size],
                                       dtype=DTYPES[o["datatype"]]).reshape(o["shape"])
        off += size
    return out


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    seconds = float(sys.argv[2])
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 17, size=(64, 1, 64), dtype=np.uint8)
    conn = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT_S)

    ens = [body([("pixels", "UINT8", r)], ["label", "probability"]) for r in rows]
    ens_label = [body([("pixels", "UINT8", r)], ["label"]) for r in rows]
    pre = [body([("pixels", "UINT8", r)], ["pixels"]) for r in rows]

    def way_ensemble(i):
        o = post(conn, "digits", *ens[i])
        return int(o["label"][0, 0]), float(o["probability"][0, 0])

    def way_ensemble_label(i):
        return int(post(conn, "digits", *ens_label[i])["label"][0, 0]), None

    def way_chain(i):
        x = post(conn, "digits_preprocess", *pre[i])["pixels"]
        o = post(conn, "digits_onnx", *body([("pixels", "FP32", x)], ["probabilities", "label"]))
        label = int(o["label"][0, 0])
        return label, float(o["probabilities"][0, label])

    ways = {"ensemble": way_ensemble, "ensemble_label": way_ensemble_label, "chain": way_chain}
    # The ways must agree before they are timed.
    for i in range(len(rows)):
        a, b, c = (f(i) for f in ways.values())
        assert a[0] == b[0] == c[0] and abs(a[1] - c[1]) <= 1e-6, (i, a, b, c)
    lat = {w: [] for w in ways}
    turn = seconds / ROUNDS / len(ways)
    for _ in range(ROUNDS):
        for w, f in ways.items():
            end = time.perf_counter() + turn
            n = 0
            while n < MAX_PER_TURN:
                t0 = time.perf_counter()
                f(n % len(rows))
                t1 = time.perf_counter()
                lat[w].append((t1 - t0) * 1e6)
                n += 1
                if t1 >= end:
                    break
    conn.close()
    res = {}
    for w, v in lat.items():
        a = np.asarray(v)
        res[w] = {"requests": len(a), "mean_us": float(a.mean()),
                  "p50_us": float(np.percentile(a, 50)), "p99_us": float(np.percentile(a, 99))}
    with open(sys.argv[3], "w") as f:
        json.dump({"seconds": seconds, "rounds": ROUNDS, "ways": res}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
