"""HTTP and gRPC on Unix domain sockets (--http-address=unix:PATH,
--grpc-address=unix:PATH, --metrics-address=unix:PATH) with the socket
file's mode and owner (--*-unix-socket-mode/-owner/-group).

Clients: Python's http.client over an AF_UNIX socket (a connection class
whose connect() opens the socket; requests has no UDS adapter in Debian),
and grpcio with a `unix:PATH` target. Cases: health, JSON and binary infer
and keep-alive over HTTP; unary calls and a bidirectional stream over gRPC;
HTTPS on a socket; the mode and owner applied before any client connects;
a stale socket (a file nobody listens on) removed at start, a live one or a
regular file refused; the files removed at exit; two services on one path
refused; the port flags not used (said in the log).
"""

import http.client
import json
import os
import socket
import ssl
import stat
import subprocess
import time

import numpy as np
import pytest

import e2e_helpers as h
import grpc_helpers as g
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)
from test_tls import certs  # noqa: F401  (fixture)


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over a Unix domain socket: only connect() differs."""

    def __init__(self, path, timeout=h.HTTP_TIMEOUT_S):
        super().__init__("localhost", timeout=timeout)
        self.path = str(path)

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.path)
        self.sock = s


class UnixHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS over a Unix domain socket (the certificate names localhost)."""

    def __init__(self, path, context, timeout=h.HTTP_TIMEOUT_S):
        super().__init__("localhost", timeout=timeout, context=context)
        self.path = str(path)

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.path)
        self.sock = self._context.wrap_socket(s, server_hostname="localhost")


def request(conn, method, path, body=None, headers=None):
    conn.request(method, path, body=body, headers=headers or {})
    r = conn.getresponse()
    return r.status, dict(r.getheaders()), r.read()


def start_uds_server(tmp_path, repo, extra, wait_socket, timeout=h.START_TIMEOUT_S):
    """Starts inferd with `extra` flags (after the TCP ones, so they win) and
    waits until /v2/models/identity_fp32/ready answers 200 on HTTP socket
    `wait_socket`. Returns the h.Server (its TCP ports may be unused)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    http_port, grpc_port, metrics_port = h.free_ports(3)
    args = h.server_args([repo], http_port, grpc_port, metrics_port, extra)
    log_path = tmp_path / "inferd.log"
    with open(log_path, "wb") as logf:
        proc = subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=str(h.REPO_ROOT))
    srv = h.Server(proc, http_port, grpc_port, metrics_port, log_path, [repo], args)
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, f"inferd exited: {proc.returncode}\n{srv.log_tail()}"
        assert time.monotonic() < deadline, f"not ready in {timeout}s\n{srv.log_tail()}"
        try:
            c = UnixHTTPConnection(wait_socket, timeout=2)
            st, _, _ = request(c, "GET", "/v2/models/identity_fp32/ready")
            c.close()
            if st == 200:
                return srv
        except OSError:
            pass
        time.sleep(0.05)


@pytest.fixture(scope="module")
def uds(tmp_path_factory):
    """One server with HTTP, gRPC and metrics each on a socket; the HTTP
    socket 0660 owned by uid/gid 65534 (root may give it away: the tests run
    as root in CI; otherwise the owner flags name the current user)."""
    h.require_binary()
    d = tmp_path_factory.mktemp("uds")
    repo = h.copy_repo(d / "repo", models=["identity_fp32", "sleep"])
    sock = d / "s"
    sock.mkdir()
    owner = "65534" if os.geteuid() == 0 else str(os.geteuid())
    group = "65534" if os.geteuid() == 0 else str(os.getegid())
    extra = [f"--http-address=unix:{sock}/http.sock",
             f"--grpc-address=unix://{sock}/grpc.sock",
             f"--metrics-address=unix:{sock}/metrics.sock",
             "--http-unix-socket-mode=0660",
             f"--http-unix-socket-owner={owner}",
             f"--http-unix-socket-group={group}",
             "--grpc-unix-socket-mode=0600"]
    srv = start_uds_server(d / "srv", repo, extra, sock / "http.sock")
    srv.sock_dir = sock
    srv.owner, srv.group = int(owner), int(group)
    try:
        yield srv
    finally:
        srv.stop(check=True)


def infer_body(n=16):
    return json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, n],
                                   "data": list(range(n))}]})


def test_http_over_unix_socket_keep_alive(uds):
    c = UnixHTTPConnection(uds.sock_dir / "http.sock")
    st, _, _ = request(c, "GET", "/v2/health/live")
    assert st == 200
    first = c.sock
    for _ in range(3):  # the same connection each time: keep-alive
        st, hdrs, body = request(c, "POST", "/v2/models/identity_fp32/infer", infer_body(),
                                 {"Content-Type": "application/json"})
        assert st == 200, body
        out = json.loads(body)["outputs"][0]
        assert out["name"] == "OUTPUT0" and out["data"] == list(range(16))
    assert c.sock is first
    # Binary tensor extension over the same socket.
    payload, hdr = h.build_binary_request([("INPUT0", "FP32", [1, 16], np.arange(16, dtype=np.float32))])
    st, hdrs, body = request(c, "POST", "/v2/models/identity_fp32/infer", payload,
                             {"Inference-Header-Content-Length": str(hdr)})
    assert st == 200, body
    assert c.sock is first
    c.close()


def test_grpc_over_unix_socket(uds, grpc_stubs):  # noqa: F811
    target = f"unix:{uds.sock_dir}/grpc.sock"
    with g.Client(grpc_stubs, target) as cl:
        assert cl.server_live().live
        assert cl.model_ready("identity_fp32").ready
        x = np.arange(16, dtype=np.float32).reshape(1, 16)
        req = g.infer_request(grpc_stubs.pb, "identity_fp32", [("INPUT0", "FP32", [1, 16], x)])
        out = g.outputs_of(cl.model_infer(req))
        np.testing.assert_array_equal(out["OUTPUT0"], x)
        # A bidirectional stream: five requests, five responses in order.
        reqs = [g.infer_request(grpc_stubs.pb, "identity_fp32", [("INPUT0", "FP32", [1, 16], x + i)],
                                request_id=str(i)) for i in range(5)]
        got = list(cl.model_stream_infer(iter(reqs)))
        assert [r.infer_response.id for r in got] == [str(i) for i in range(5)]
        assert all(r.error_message == "" for r in got)
    # gRPC's unix:///abs spelling reaches the same socket.
    with g.Client(grpc_stubs, f"unix://{uds.sock_dir}/grpc.sock") as cl:
        assert cl.server_live().live


def test_metrics_over_unix_socket(uds):
    c = UnixHTTPConnection(uds.sock_dir / "metrics.sock")
    st, _, body = request(c, "GET", "/metrics")
    c.close()
    assert st == 200 and b"nv_inference_request_success" in body


def test_socket_mode_and_owner(uds):
    st = os.lstat(uds.sock_dir / "http.sock")
    assert stat.S_ISSOCK(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o660
    assert (st.st_uid, st.st_gid) == (uds.owner, uds.group)
    st = os.lstat(uds.sock_dir / "grpc.sock")
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert (st.st_uid, st.st_gid) == (os.geteuid(), os.getegid())


def test_log_says_port_unused(uds):
    log = uds.log_path.read_text(errors="replace")
    assert f"started HTTPService at unix:{uds.sock_dir}/http.sock" in log
    assert "--http-port is not used" in log
    assert "--grpc-port is not used" in log


def test_socket_files_removed_at_exit(tmp_path):
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32"])
    hs, gs = tmp_path / "h.sock", tmp_path / "g.sock"
    srv = start_uds_server(tmp_path / "srv", repo,
                           [f"--http-address=unix:{hs}", f"--grpc-address=unix:{gs}",
                            "--allow-metrics=false"], hs)
    assert hs.is_socket() and gs.is_socket()
    srv.stop(check=True)
    assert not hs.exists() and not gs.exists()


def test_stale_socket_removed(tmp_path):
    """A socket file nobody listens on (its server died) is removed at start."""
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32"])
    hs = tmp_path / "h.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(hs))
    s.close()  # the file stays; connecting to it is refused
    assert hs.is_socket()
    srv = start_uds_server(tmp_path / "srv", repo,
                           [f"--http-address=unix:{hs}", "--allow-grpc=false",
                            "--allow-metrics=false"], hs)
    try:
        assert "removed the stale socket" in srv.log_tail(20000)
    finally:
        srv.stop(check=True)
    assert not hs.exists()


def test_live_socket_refused(tmp_path):
    """A socket another process listens on is left alone: inferd exits 1."""
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32"])
    hs = tmp_path / "h.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(hs))
    s.listen(1)
    try:
        ports = h.free_ports(3)
        rc, out, err = h.run_to_exit(h.server_args([repo], *ports, [f"--http-address=unix:{hs}"]))
        assert rc == 1
        assert "another process is listening on that socket" in out + err
        assert hs.is_socket()
    finally:
        s.close()


def test_regular_file_refused(tmp_path):
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32"])
    f = tmp_path / "not-a-socket"
    f.write_text("keep me")
    ports = h.free_ports(3)
    rc, out, err = h.run_to_exit(h.server_args([repo], *ports, [f"--grpc-address=unix:{f}"]))
    assert rc == 1
    assert "exists and is not a socket" in out + err
    assert f.read_text() == "keep me"


def test_same_path_refused(tmp_path):
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32"])
    p = tmp_path / "one.sock"
    ports = h.free_ports(3)
    rc, out, err = h.run_to_exit(h.server_args(
        [repo], *ports, [f"--http-address=unix:{p}", f"--grpc-address=unix://{p}"]))
    assert rc == 1
    assert "on the same socket" in err
    assert not p.exists()


def test_bad_socket_flags(tmp_path):
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32"])
    ports = h.free_ports(3)
    for flag, why in (("--http-unix-socket-mode=0999", "octal"),
                      ("--grpc-unix-socket-owner=no-such-user-inferd", "no such user"),
                      ("--metrics-unix-socket-group=no-such-group-inferd", "no such group")):
        rc, out, err = h.run_to_exit(h.server_args([repo], *ports, [flag]))
        assert rc == 1 and why in err, (flag, err)


def test_https_over_unix_socket(tmp_path, certs):  # noqa: F811
    """TLS is allowed on a socket: the bytes are the same as over TCP."""
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32"])
    hs = tmp_path / "h.sock"
    http_port, grpc_port, metrics_port = h.free_ports(3)
    args = h.server_args([repo], http_port, grpc_port, metrics_port,
                         [f"--http-address=unix:{hs}", f"--http-ssl-cert={certs.server_crt}",
                          f"--http-ssl-key={certs.server_key}", "--allow-grpc=false",
                          "--allow-metrics=false"])
    log_path = tmp_path / "inferd.log"
    with open(log_path, "wb") as logf:
        proc = subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=str(h.REPO_ROOT))
    srv = h.Server(proc, http_port, grpc_port, metrics_port, log_path, [repo], args)
    ctx = ssl.create_default_context(cafile=str(certs.ca_crt))
    try:
        deadline = time.monotonic() + h.START_TIMEOUT_S
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, srv.log_tail()
            try:
                c = UnixHTTPSConnection(hs, ctx, timeout=2)
                st, _, _ = request(c, "GET", "/v2/models/identity_fp32/ready")
                if st == 200:
                    break
            except (OSError, ssl.SSLError):
                pass
            time.sleep(0.05)
        st, _, body = request(c, "POST", "/v2/models/identity_fp32/infer", infer_body(),
                              {"Content-Type": "application/json"})
        assert st == 200, body
        c.close()
    finally:
        srv.stop(check=True)
    assert not hs.exists()
