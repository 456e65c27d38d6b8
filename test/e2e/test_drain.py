"""Graceful drain under continuous load (issue 12).

Six HTTP/1.1 keep-alive clients and four gRPC clients (grpcio channels) send
infer requests back to back to a `sleep` model (20-26 ms each). Before the
signal, three more connections are set up: an idle keep-alive HTTP
connection, an HTTP request and a raw HTTP/2 ModelInfer call to a second
`sleep` model that sleeps LONG_MS (poll_cancel: the backend logs when each
starts sleeping, so the test knows they are executing, and would log a
cancellation). Then SIGTERM, and:

* the idle keep-alive connection is closed, and a new connection to either
  port is refused (the listeners are closed), while the long calls still run;
* on the raw HTTP/2 connection the first GOAWAY carries 2^31-1 (no new
  calls, but those on the wire are still taken); a ServerReady call opened
  after it is answered ready=false (readiness went false at once); the
  final GOAWAY, after the long call's answer, carries the last stream id
  processed (the ServerReady's) and NO_ERROR, then the connection closes;
* the long HTTP request is answered in full with `Connection: close`, then
  the connection closes;
* every load request ends one of three ways: a complete and correct answer
  (its id and its output), or a clean refusal after the signal: connection
  refused, the connection closed with no byte of an answer (HTTP: a request
  the server never read), UNAVAILABLE (gRPC). Nothing is cut mid-answer,
  wrong, or failed before the signal. The counts are printed;
* the server unloads the models and exits 0, well before the exit timeout.
"""

import json
import shutil
import signal
import socket
import struct
import threading
import time

import grpc
import numpy as np
import pytest

import e2e_helpers as h
import grpc_helpers as gh
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

N_HTTP = 6
N_GRPC = 4
LOAD_MS = 20
LONG_MS = 5000
EXIT_TIMEOUT_S = 60  # far beyond the drain: the drain must not need it
WAIT_S = 30          # bound on every wait below (never reached when all is well)
INFER_PATH = "/inference.GRPCInferenceService/ModelInfer"
READY_PATH = "/inference.GRPCInferenceService/ServerReady"


def config(name, count, extra=""):
    return (f'name: "{name}"\nbackend: "sleep"\nmax_batch_size: 0\n'
            'input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\n'
            'output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n'
            f'instance_group [ {{ count: {count} kind: KIND_CPU }} ]\n' + extra)


def make_srv(private_server, tmp_path):
    so = h.sleep_backend_so()
    if not so.is_file():
        pytest.skip(f"{so} not built")
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32"])
    for name, count, extra in (
            ("sleep_load", 4, ""),
            ("sleep_long", 2, 'parameters { key: "poll_cancel" value: { string_value: "1" } }\n')):
        d = repo / name
        (d / "1").mkdir(parents=True)
        (d / "config.pbtxt").write_text(config(name, count, extra))
        shutil.copy2(so, d / so.name)
    return private_server(repos=[repo], extra=[f"--exit-timeout-secs={EXIT_TIMEOUT_S}"],
                          wait_models=("sleep_load", "sleep_long"))


def http_infer(model, ms, rid):
    body = json.dumps({"id": rid, "inputs": [
        {"name": "IN", "datatype": "INT32", "shape": [1], "data": [ms]}]}).encode()
    return h.http_request("POST", f"/v2/models/{model}/infer", body,
                          headers={"Content-Type": "application/json"})


def wait_log(srv, text, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    while text not in srv.log_path.read_text(errors="replace"):
        assert srv.alive(), srv.log_tail()
        assert time.monotonic() < deadline, f"no {text!r} in the log\n{srv.log_tail()}"
        time.sleep(0.05)


class Outcomes:
    """Outcomes of one client's requests: (kind, monotonic time, detail)."""

    def __init__(self, name):
        self.name = name
        self.items = []
        self.lock = threading.Lock()

    def add(self, kind, detail=""):
        with self.lock:
            self.items.append((kind, time.monotonic(), detail))

    def count(self, kind):
        with self.lock:
            return sum(1 for k, _, _ in self.items if k == kind)


# ---------------------------------------------------------------- HTTP ---

def read_http_response(sock):
    """(status, headers, body) of a complete response; ("eof", n) when the
    connection ended after n bytes of it (0: no answer at all)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            chunk = b""
        if not chunk:
            return "eof", len(buf)
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        headers[k.strip().lower()] = v.strip()
    n = int(headers.get("content-length", "0"))
    while len(rest) < n:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            chunk = b""
        if not chunk:
            return "eof", len(head) + 4 + len(rest)
        rest += chunk
    return status, headers, rest


def closed_quietly(sock):
    """True when the peer closed (EOF or reset) without sending anything."""
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


def http_load(port, idx, out, stop):
    sock, seq = None, 0
    try:
        while not stop.is_set():
            if sock is None:
                try:
                    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
                except ConnectionRefusedError:
                    out.add("refused")
                    return
            seq += 1
            rid, ms = f"h{idx}-{seq}", LOAD_MS + seq % 7
            try:
                sock.sendall(http_infer("sleep_load", ms, rid))
                r = read_http_response(sock)
            except socket.timeout:
                out.add("timeout", rid)
                return
            except (ConnectionResetError, BrokenPipeError):
                r = ("eof", 0)
            if r[0] == "eof":
                out.add("unprocessed" if r[1] == 0 else "cut", f"{rid}: {r[1]} bytes")
                sock.close()
                sock = None
                continue
            status, headers, body = r
            try:
                doc = json.loads(body)
                good = status == 200 and doc["id"] == rid and doc["outputs"][0]["data"] == [ms]
            except (ValueError, KeyError, IndexError):
                good = False
            if not good:
                out.add("wrong", f"{rid}: {status} {body[:200]!r}")
                continue
            if headers.get("connection", "").lower() == "close":
                out.add("ok_close")
                if not closed_quietly(sock):
                    out.add("wrong", f"{rid}: bytes after Connection: close")
                sock.close()
                sock = None
            else:
                out.add("ok")
    finally:
        if sock is not None:
            sock.close()


# ---------------------------------------------------------------- gRPC ---

def grpc_load(srv, stubs, idx, out, stop):
    client = gh.Client(stubs, gh.grpc_target(srv))
    seq = 0
    try:
        while not stop.is_set():
            seq += 1
            rid, ms = f"g{idx}-{seq}", LOAD_MS + seq % 7
            req = gh.infer_request(stubs.pb, "sleep_load",
                                   [("IN", "INT32", [1], np.array([ms], dtype=np.int32))],
                                   request_id=rid)
            try:
                resp = client.call("ModelInfer", req, timeout=WAIT_S)
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.UNAVAILABLE:
                    out.add("unavailable", gh.describe(e))
                    return
                out.add("wrong", f"{rid}: {gh.describe(e)}")
                return
            got = np.frombuffer(resp.raw_output_contents[0], dtype=np.int32).tolist() \
                if resp.raw_output_contents else None
            if resp.id == rid and got == [ms]:
                out.add("ok")
            else:
                out.add("wrong", f"{rid}: {resp!r}"[:300])
    finally:
        client.close()


class DrainH2(gh.H2Conn):
    """H2Conn that keeps every GOAWAY (last stream id, code) in order."""

    def __init__(self, port):
        super().__init__(port, timeout=WAIT_S)
        self.goaways = []

    def _handle(self, ftype, flags, sid, payload):
        if ftype == gh.GOAWAY:
            last, code = struct.unpack(">II", payload[:8])
            self.goaways.append((last & 0x7FFFFFFF, code))
        super()._handle(ftype, flags, sid, payload)

    def read_until(self, pred, timeout=WAIT_S):
        deadline = time.monotonic() + timeout
        while not pred():
            left = deadline - time.monotonic()
            assert left > 0, f"timed out; GOAWAYs {self.goaways}, streams {self.streams}"
            self.sock.settimeout(left)
            try:
                self._handle(*self.read_frame())
            except EOFError:
                return False
        return True


def refused(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    except ConnectionResetError:
        # A connection that reached the backlog as the listener closed is
        # reset: not an answer yet, the caller asks again.
        return False
    return False


# ---------------------------------------------------------------- test ---

def test_drain_under_load(private_server, tmp_path, grpc_stubs):  # noqa: F811
    srv = make_srv(private_server, tmp_path)
    pb = grpc_stubs.pb
    stop = threading.Event()
    outs, threads = [], []
    for i in range(N_HTTP):
        o = Outcomes(f"http{i}")
        outs.append(o)
        threads.append(threading.Thread(target=http_load, args=(srv.http_port, i, o, stop), daemon=True))
    for i in range(N_GRPC):
        o = Outcomes(f"grpc{i}")
        outs.append(o)
        threads.append(threading.Thread(target=grpc_load, args=(srv, grpc_stubs, i, o, stop), daemon=True))
    idle = long_http = h2 = None
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + WAIT_S * 2
        while not all(o.count("ok") >= 3 for o in outs):
            assert time.monotonic() < deadline, [(o.name, o.items[-3:]) for o in outs]
            assert not any(o.count("wrong") for o in outs), [o.items for o in outs]
            time.sleep(0.05)

        idle = h.RawConn(srv.http_port)
        idle.send(h.http_request("GET", "/v2/health/ready"))
        assert idle.read_response().status == 200
        long_http = h.RawConn(srv.http_port, timeout=WAIT_S)
        long_http.send(http_infer("sleep_long", LONG_MS, "long-http"))
        h2 = DrainH2(srv.grpc_port)
        h2.start()
        req = gh.infer_request(pb, "sleep_long", [("IN", "INT32", [1], np.array([LONG_MS], dtype=np.int32))],
                               request_id="long-grpc")
        h2.send_headers(1, INFER_PATH)
        h2.send_data(1, gh.grpc_message(req.SerializeToString()), end_stream=True)
        wait_log(srv, "sleep: request 'long-http' sleeping")
        wait_log(srv, "sleep: request 'long-grpc' sleeping")

        t_sig = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)

        # Idle keep-alive closed; both listeners closed; the long calls still run.
        assert idle.wait_closed(timeout=WAIT_S) is True, "the idle keep-alive connection stayed open"
        deadline = time.monotonic() + WAIT_S
        while not (refused(srv.http_port) and refused(srv.grpc_port)):
            assert time.monotonic() < deadline, "the listeners still accept after SIGTERM"
            time.sleep(0.02)
        assert srv.alive(), "exited before the long requests were answered"

        # GOAWAY(2^31-1) first; a call opened after it is still served: not ready.
        assert h2.read_until(lambda: h2.goaways), "connection closed without a GOAWAY"
        assert h2.goaways[0] == (0x7FFFFFFF, 0), h2.goaways
        h2.send_headers(3, READY_PATH)
        h2.send_data(3, gh.grpc_message(pb.ServerReadyRequest().SerializeToString()), end_stream=True)
        r3 = h2.collect(3, timeout=WAIT_S)
        assert r3.ended and r3.header("grpc-status") == "0", r3
        assert pb.ServerReadyResponse.FromString(r3.grpc_messages()[0]).ready is False, r3
        assert len(h2.goaways) == 1, f"final GOAWAY before the long call ended: {h2.goaways}"
        assert srv.alive()

        # The long HTTP request: complete, Connection: close, then the close.
        r = long_http.read_response()
        assert r.status == 200, r
        assert r.headers.get("connection", "").lower() == "close", r.headers
        assert r.json()["id"] == "long-http" and r.json()["outputs"][0]["data"] == [LONG_MS], r
        assert long_http.wait_closed(timeout=WAIT_S) is True

        # The long gRPC call: complete; then GOAWAY(last stream id 3), the close.
        r1 = h2.collect(1, timeout=WAIT_S)
        assert r1.ended and r1.header("grpc-status") == "0", r1
        resp = pb.ModelInferResponse.FromString(r1.grpc_messages()[0])
        assert resp.id == "long-grpc", resp
        assert np.frombuffer(resp.raw_output_contents[0], dtype=np.int32).tolist() == [LONG_MS]
        assert h2.read_until(lambda: False) is False  # reads up to the close
        assert h2.goaways[1:] == [(3, 0)], h2.goaways

        rc = srv.proc.wait(timeout=WAIT_S)
        t_exit = time.monotonic()
        assert rc == 0, srv.log_tail()
        assert t_exit - t_sig < EXIT_TIMEOUT_S / 2, "the drain waited for the exit timeout"
    finally:
        stop.set()
        for c in (idle, long_http, h2):
            if c is not None:
                c.close()
        for t in threads:
            t.join(WAIT_S)

    log = srv.log_path.read_text(errors="replace")
    for m in ("sleep_load", "sleep_long"):
        assert f"successfully unloaded '{m}'" in log, log[-4000:]
    assert "cancelled after" not in log, log[-4000:]
    assert "exit timeout reached" not in log, log[-4000:]

    # Every request: a correct answer, or a clean refusal after the signal.
    refusals = {"refused", "unprocessed", "unavailable"}
    bad, counts = [], {}
    for o in outs:
        for kind, t, detail in o.items:
            counts[(o.name[:4], kind)] = counts.get((o.name[:4], kind), 0) + 1
            if kind in ("ok", "ok_close"):
                continue
            if kind in refusals and t >= t_sig:
                continue
            bad.append((o.name, kind, round(t - t_sig, 3), detail))
        assert o.items and o.items[-1][0] in refusals, (o.name, o.items[-3:])
    print("drain outcomes:", sorted(counts.items()))
    assert not bad, bad
    assert sum(v for (p, k), v in counts.items() if p == "http" and k.startswith("ok")) > 0
    assert sum(v for (p, k), v in counts.items() if p == "grpc" and k == "ok") > 0


def test_request_behind_last_response(private_server):
    """A client sends another request on a connection the drain has stopped
    reading, before it has read the big response in flight (pipelining): the
    server reads and drops that request after its FIN (a lingering close)
    instead of closing with it unread, which makes the kernel answer RST and
    throw away the response bytes still queued. The response arrives whole;
    the second request gets no answer, only the close."""
    srv = private_server(models=["identity_int32"], extra=[f"--exit-timeout-secs={WAIT_S}"],
                         wait_models=("identity_int32",))
    n = 4 << 20  # 16 MiB back: more than the socket buffers hold
    data = np.arange(n, dtype=np.int32)
    body, hdr_len = h.build_binary_request(
        [("INPUT0", "INT32", [1, n], data)],
        outputs=[{"name": "OUTPUT0", "parameters": {"binary_data": True}}])
    with h.RawConn(srv.http_port, timeout=WAIT_S) as c:
        c.send((f"POST /v2/models/identity_int32/infer HTTP/1.1\r\nHost: x\r\n"
                f"Content-Type: application/octet-stream\r\n"
                f"Inference-Header-Content-Length: {hdr_len}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
        assert c.sock.recv(1, socket.MSG_PEEK) == b"H"  # the answer has begun
        srv.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + WAIT_S
        while not refused(srv.http_port):  # the drain has begun
            assert time.monotonic() < deadline, "the listener still accepts after SIGTERM"
            time.sleep(0.02)
        c.send(h.http_request("GET", "/v2/health/live"))
        time.sleep(0.3)  # let the server finish writing with that request unread
        r = c.read_response()
        assert r.status == 200, r
        hdr = int(r.headers["inference-header-content-length"])
        assert np.array_equal(np.frombuffer(r.body[hdr:], dtype=np.int32), data)
        assert c.wait_closed(timeout=WAIT_S) is True
    assert srv.proc.wait(timeout=WAIT_S) == 0, srv.log_tail()
