"""A large JSON infer body must not stall the loop (issue 8, defect 4).

Decoding a 64 MB JSON request or encoding a 64 MB JSON response takes
hundreds of milliseconds of CPU. Done on the loop thread, that time is a stall
for every other connection: a /v2/health/live probe waits for it. From
--http-json-offload-bytes up the work runs on the libuv thread pool, so the
loop keeps answering.

Each test probes /v2/health/live on a keep-alive connection every few
milliseconds while one big request runs on another, and looks at the probes
in flight between the moment the big request starts to go out and the first
byte of its response: the time in which the server reads and decodes the
body, runs the model and encodes the response. (Writing the response and
freeing its buffers come after.)
- The median probe is answered within 20 ms.
- No probe waits longer than MAX_STALL_S or STALL_SHARE of that time,
  whichever is larger. Before the offload one probe waited for the whole
  decode (or encode): 0.75 to 2.8 s, 40 to 60% of the time, on a busy 2-core
  machine. After it the loop only reads and answers probes, so any wait is
  the machine's scheduling (up to ~150 ms seen with eight compilers running);
  the bounds leave room for that, and scale with a machine slowed down.
"""

import json
import os
import signal
import socket
import statistics
import threading
import time

import numpy as np
import requests

import e2e_helpers as h

# 16 Mi elements: "0.5," is 4 bytes of JSON each, so a 64 MiB text.
N_ELEMENTS = 16 << 20
MEDIAN_BOUND_S = 0.020
# Generous for a loaded 2-core machine: the stall they catch is the whole
# JSON pass over 64 MB, several times longer.
MAX_STALL_S = 0.200
STALL_SHARE = 0.15
# Under ASan every large allocation, copy and page fault on the loop (the body
# still arrives there) costs several times more, and a loaded machine adds to
# it: the stall caught (40 to 60% of the window) still fails a 30% share.
if "asan" in os.environ.get("INFERD_BUILD", ""):
    STALL_SHARE = 0.30
PROBE_INTERVAL_S = 0.005
INFER_PATH = "/v2/models/big_identity/infer"

MODEL_CONFIG = """name: "big_identity"
backend: "identity"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
"""


def make_repo(tmp_path):
    repo = tmp_path / "repo"
    (repo / "big_identity" / "1").mkdir(parents=True)
    (repo / "big_identity" / "config.pbtxt").write_text(MODEL_CONFIG)
    return repo


class Prober(threading.Thread):
    """GET /v2/health/live back to back on one keep-alive connection."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=h.HTTP_TIMEOUT_S)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.stop = threading.Event()
        self.samples = []  # (start, latency) in seconds
        self.error = None

    def probe(self):
        req = b"GET /v2/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        t0 = time.monotonic()
        self.sock.sendall(req)
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("the server closed the probe connection")
            buf += chunk
        head, _, rest = buf.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head
        # The live answer is an empty body: Content-Length: 0.
        assert rest == b"", rest
        return t0, time.monotonic() - t0

    def run(self):
        try:
            # Paced, so that the prober neither holds the GIL from the
            # thread that sends the big request nor keeps a core busy.
            while not self.stop.wait(PROBE_INTERVAL_S):
                self.samples.append(self.probe())
        except Exception as e:  # reported by the test
            self.error = e
        finally:
            self.sock.close()


def post_raw(port, path, body, headers=()):
    """POSTs `body` on a fresh connection. Returns (status, header fields,
    response body, when the body began to go out, when the first response
    byte arrived)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=h.HTTP_TIMEOUT_S)
    try:
        head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}",
                "Connection: close", *headers]
        t_sent = time.monotonic()
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        sock.sendall(body)
        buf = sock.recv(1 << 16)
        t_first = time.monotonic()
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(1 << 16)
            assert chunk, buf
            buf += chunk
        head, _, rest = buf.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        status = int(lines[0].split()[1])
        fields = dict(l.lower().split(": ", 1) for l in lines[1:])
        want = int(fields["content-length"])
        parts, got = [rest], len(rest)
        while got < want:
            chunk = sock.recv(1 << 20)
            assert chunk, f"response cut at {got} of {want} bytes"
            parts.append(chunk)
            got += len(chunk)
        return status, fields, b"".join(parts), t_sent, t_first
    finally:
        sock.close()


def probe_during(port, fn):
    """Runs fn() (a post_raw) while probing. Returns fn's result and the
    latencies of the probes in flight at some time between the big request
    going out and the first byte of its response: the time the server reads
    and decodes the body, runs the model and encodes the response."""
    prober = Prober(port)
    prober.probe()  # connected and warm
    prober.start()
    try:
        result = fn()
    finally:
        prober.stop.set()
        prober.join(h.HTTP_TIMEOUT_S)
    assert prober.error is None, f"probe failed: {prober.error!r}"
    t_sent, t_first = result[3], result[4]
    lat = [l for (s, l) in prober.samples if s <= t_first and s + l >= t_sent]
    return result, lat, t_first - t_sent


def check_probes(lat, window):
    assert len(lat) >= 5, f"only {len(lat)} probes in a {window:.3f} s window"
    med = statistics.median(lat)
    worst = max(lat)
    msg = (f"{len(lat)} probes while the server worked for {window:.3f} s: "
           f"median {med * 1e3:.1f} ms, worst {worst * 1e3:.1f} ms")
    print(msg)
    assert med < MEDIAN_BOUND_S, msg
    assert worst < max(MAX_STALL_S, STALL_SHARE * window), msg


def start(private_server, tmp_path, extra=()):
    return private_server(repos=[make_repo(tmp_path)], wait_models=("big_identity",),
                          extra=["--http-max-input-size=268435456", *extra])


def test_big_json_request_does_not_block_health(private_server, tmp_path):
    """Decode: a 64 MiB JSON input; the output comes back binary (no encode)."""
    srv = start(private_server, tmp_path)
    data = ",".join(["0.5"] * N_ELEMENTS)
    body = ('{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[%d],"data":[%s]}],'
            '"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}]}'
            % (N_ELEMENTS, data)).encode()
    del data
    assert len(body) > 64 << 20

    (status, fields, resp, _, _), lat, window = probe_during(
        srv.port, lambda: post_raw(srv.port, INFER_PATH, body))
    assert status == 200, resp[:500]
    hlen = int(fields["inference-header-content-length"])
    out = np.frombuffer(resp[hlen:], dtype=np.float32)
    assert out.size == N_ELEMENTS and out[0] == 0.5 and out[-1] == 0.5
    check_probes(lat, window)


def test_big_json_response_does_not_block_health(private_server, tmp_path):
    """Encode: a binary input (no decode) echoed as a 64 MiB JSON output."""
    srv = start(private_server, tmp_path)
    body, hlen = h.build_binary_request(
        [("INPUT0", "FP32", [N_ELEMENTS], np.full(N_ELEMENTS, 0.5, dtype=np.float32))],
        outputs=[{"name": "OUTPUT0", "parameters": {"binary_data": False}}])

    (status, _, resp, _, _), lat, window = probe_during(
        srv.port, lambda: post_raw(srv.port, INFER_PATH, body,
                                   [f"Inference-Header-Content-Length: {hlen}"]))
    assert status == 200, resp[:500]
    assert len(resp) > 64 << 20
    # The data is the tail of the text: check its ends without parsing 64 MB.
    assert resp.endswith(b"0.5,0.5]}]}"), resp[-100:]
    head = json.loads(resp[:resp.index(b'"data":[')] + b'"data":[]}]}')
    assert head["outputs"][0]["shape"] == [N_ELEMENTS]
    check_probes(lat, window)


# ---- the offload path itself, on every request --------------------------

SMALL_MODELS = ["identity_fp32", "identity_bytes", "identity_int64", "identity_multi"]


def small_exchanges():
    """(path, body, headers): successes and failures of every kind the
    exchange has (decode error, submit refused, model error, binary in/out)."""
    fp32 = [float(i) / 3 for i in range(16)]
    out = []

    def js(model, obj):
        out.append((f"/v2/models/{model}/infer", json.dumps(obj).encode(), []))

    js("identity_fp32", {"id": "a", "inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [1, 16], "data": fp32}]})
    js("identity_fp32", {"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [2, 16], "data": [fp32, fp32]}],
        "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]})
    js("identity_fp32", {"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [1, 16], "data": fp32}],
        "parameters": {"binary_data_output": True, "x": "y"}})
    js("identity_bytes", {"inputs": [
        {"name": "INPUT0", "datatype": "BYTES", "shape": [3], "data": ["a", "\u00e9\\n", ""]}]})
    js("identity_int64", {"inputs": [
        {"name": "INPUT0", "datatype": "INT64", "shape": [1, 4], "data": [1, -2, 3, 2**62]}]})
    # Decode errors.
    out.append(("/v2/models/identity_fp32/infer", b'{"inputs": [', []))
    js("identity_fp32", {"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [1, 16], "data": fp32[:5]}]})
    js("identity_fp32", {"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [1, 16], "data": ["x"] * 16}]})
    # Refused at submit: unknown model, wrong shape for the config.
    js("no_such_model", {"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [1, 16], "data": fp32}]})
    js("identity_fp32", {"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [1, 4], "data": fp32[:4]}]})
    # Binary input, JSON output (encode only).
    body, hlen = h.build_binary_request(
        [("INPUT0", "FP32", [1, 16], np.arange(16, dtype=np.float32))])
    out.append(("/v2/models/identity_fp32/infer", body,
                [f"Inference-Header-Content-Length: {hlen}"]))
    return out


def exchange_all(port):
    """Sends every small exchange pipelined on one connection; returns the
    responses in order (status, body)."""
    ex = small_exchanges()
    with h.RawConn(port) as c:
        data = b""
        for path, body, hdrs in ex:
            head = [f"POST {path} HTTP/1.1", "Host: x", f"Content-Length: {len(body)}", *hdrs]
            data += ("\r\n".join(head) + "\r\n\r\n").encode() + body
        c.send(data)
        return [(r.status, r.body) for r in (c.read_response() for _ in ex)]


def test_offloaded_exchanges_answer_as_inline_ones(private_server):
    """Every request through the thread pool (--http-json-offload-bytes=1)
    gets the answer the inline path gives, in request order."""
    inline = private_server(models=SMALL_MODELS)
    pooled = private_server(models=SMALL_MODELS, extra=["--http-json-offload-bytes=1"])
    want = exchange_all(inline.port)
    got = exchange_all(pooled.port)
    assert [s for s, _ in want] == [200] * 5 + [400] * 3 + [404, 400, 200], want
    assert got == want


def test_client_gone_while_job_runs(private_server, tmp_path):
    """Connections that close while their body is decoded or their response
    encoded on the pool: the results are dropped, the server keeps serving
    (under ASan: nothing touches a freed connection)."""
    srv = start(private_server, tmp_path, extra=["--http-json-offload-bytes=1024"])
    n = 1 << 20
    dec = ('{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[%d],"data":[%s]}]}'
           % (n, ",".join(["0.5"] * n))).encode()
    enc, hlen = h.build_binary_request(
        [("INPUT0", "FP32", [n], np.full(n, 0.5, dtype=np.float32))])
    for body, hdrs in [(dec, [])] * 3 + [(enc, [f"Inference-Header-Content-Length: {hlen}"])] * 3:
        with h.RawConn(srv.port) as c:
            head = [f"POST {INFER_PATH} HTTP/1.1", "Host: x", f"Content-Length: {len(body)}", *hdrs]
            c.send(("\r\n".join(head) + "\r\n\r\n").encode() + body)
    r = requests.get(srv.url("/v2/health/live"), timeout=h.HTTP_TIMEOUT_S)
    assert r.status_code == 200
    status, _, resp, _, _ = post_raw(srv.port, INFER_PATH, dec)
    assert status == 200 and json.loads(resp)["outputs"][0]["shape"] == [n]


def test_shutdown_with_jobs_queued(private_server, tmp_path):
    """SIGTERM while more big bodies are being decoded than the pool has
    threads: every client gets an answer or a clean close, and the server
    exits 0 in time."""
    srv = start(private_server, tmp_path, extra=["--http-json-offload-bytes=1024"])
    n = 1 << 20
    body = ('{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[%d],"data":[%s]}],'
            '"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}]}'
            % (n, ",".join(["0.5"] * n))).encode()
    conns = [h.RawConn(srv.port) for _ in range(8)]
    try:
        for c in conns:
            head = [f"POST {INFER_PATH} HTTP/1.1", "Host: x", f"Content-Length: {len(body)}"]
            c.send(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        # Read what comes (a 200 for a request submitted before the server
        # stopped taking them, an error after), so no write waits on us.
        for c in conns:
            try:
                r = c.read_response()
                assert r.status in (200, 400, 503), r
            except (EOFError, ConnectionError):
                pass
        # Waited for here: a second SIGTERM (srv.stop) could land after the
        # server has put back the default handler on its way out.
        rc = srv.proc.wait(timeout=h.STOP_TIMEOUT_S)
        assert rc == 0, srv.log_tail()
        assert time.monotonic() - t0 < h.STOP_TIMEOUT_S
    finally:
        for c in conns:
            c.close()
