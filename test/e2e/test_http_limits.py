"""HTTP/1.1 edge limits and connection limits, over raw sockets.

Request line and header size (431, close), header count (431), the header
timeout (408, close: slowloris), the keep-alive idle timeout (quiet close),
the body timeout (slow POST: 408, close), --max-connections (accepted and
closed at once, counted), the pipelining depth (1,000 requests sent without
reading: every answer, in order, with the server's memory bounded) and the
file descriptor limit (accepting pauses, is logged and counted, and serving
goes on once connections close).

Timeouts are set to 1-2 s here; assertions only check that an answer comes
(within generous limits) and that none comes before the timeout could have
passed, never how late it is.
"""

import re
import resource
import socket
import subprocess
import threading
import time

import pytest
import requests

import e2e_helpers as h

LIMIT_FLAGS = [
    "--http-max-header-bytes=8192",
    "--http-max-headers=20",
    "--http-header-timeout-secs=1",
    "--http-body-timeout-secs=1",
    "--http-idle-timeout-secs=2",
]


@pytest.fixture(scope="module")
def limited(tmp_path_factory):
    h.require_binary()
    tmp = tmp_path_factory.mktemp("inferd-limits")
    repo = h.copy_repo(tmp / "repo", models=["identity_fp32"])
    srv = h.start_server(tmp, [repo], extra=LIMIT_FLAGS)
    try:
        yield srv
    finally:
        srv.stop(check=True)


def metric(srv, name, **labels):
    """The value of one sample of the metrics endpoint (0 when absent)."""
    text = requests.get(f"http://127.0.0.1:{srv.metrics_port}/metrics", timeout=h.HTTP_TIMEOUT_S).text
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        if line.startswith(f"{name}{{{want}}} "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def fresh_get(srv, path):
    """GET on a new connection: a pooled one may meet the short idle timeout."""
    return requests.get(srv.url(path), timeout=h.HTTP_TIMEOUT_S)


def closed_by_server(conn, timeout=15.0):
    got = conn.wait_closed(timeout)
    assert got is True, f"expected the server to close the connection, got {got!r}"


def test_oversize_header_431_and_close(limited):
    before = metric(limited, "inferd_connections_closed_total", protocol="http", reason="header_too_large")
    with h.RawConn(limited.port) as c:
        c.send(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n")
        r = c.read_response()
        assert r.status == 431, r
        assert "error" in r.json() and "--http-max-header-bytes" in r.json()["error"]
        assert r.headers.get("connection") == "close"
        closed_by_server(c)
    # Many small headers add up too.
    with h.RawConn(limited.port) as c:
        c.send(b"GET /v2/health/live HTTP/1.1\r\n" + b"".join(b"X-%d: %s\r\n" % (i, b"v" * 800) for i in range(15)) + b"\r\n")
        r = c.read_response()
        assert r.status == 431, r
        closed_by_server(c)
    # And whitespace, which no parser callback reports.
    with h.RawConn(limited.port) as c:
        c.send(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Pad:" + b" " * 200000)
        r = c.read_response()
        assert r.status == 431, r
        closed_by_server(c)
    # So does an endless request line.
    with h.RawConn(limited.port) as c:
        c.send(b"GET /" + b"a" * 8000 + b"?" + b"b" * 2000)
        r = c.read_response()
        assert r.status in (400, 431), r  # the URL limit (8 KiB) may answer first
        closed_by_server(c)
    after = metric(limited, "inferd_connections_closed_total", protocol="http", reason="header_too_large")
    assert after >= before + 3
    assert fresh_get(limited, "/v2/health/live").status_code == 200


def test_431_reaches_a_client_that_sends_on(limited):
    # The client writes all of its 2 MB header before reading: the server
    # answers, sends its FIN and reads on (discarding), so the write
    # completes and the answer is there rather than a reset.
    with h.RawConn(limited.port) as c:
        c.send(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (2 << 20) + b"\r\n\r\n")
        r = c.read_response()
        assert r.status == 431, r
        closed_by_server(c)


def test_header_just_under_the_limit_is_served(limited):
    with h.RawConn(limited.port) as c:
        c.send(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 7000 + b"\r\n\r\n")
        assert c.read_response().status == 200


def test_too_many_headers_431(limited):
    with h.RawConn(limited.port) as c:
        c.send(b"GET /v2/health/live HTTP/1.1\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(21)) + b"\r\n")
        r = c.read_response()
        assert r.status == 431, r
        assert "--http-max-headers" in r.json()["error"]
        closed_by_server(c)
    with h.RawConn(limited.port) as c:
        c.send(b"GET /v2/health/live HTTP/1.1\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(20)) + b"\r\n")
        assert c.read_response().status == 200


def test_slowloris_header_timeout_408(limited):
    before = metric(limited, "inferd_connections_closed_total", protocol="http", reason="header_timeout")
    with h.RawConn(limited.port) as c:
        t0 = time.monotonic()
        c.send(b"GET /v2/health/li")
        time.sleep(0.3)
        c.send(b"ve HTTP/1.1\r\nHo")  # trickling bytes does not restart the clock
        r = c.read_response()
        waited = time.monotonic() - t0
        assert r.status == 408, r
        assert "--http-header-timeout-secs" in r.json()["error"]
        assert waited >= 0.5, waited  # the header timeout is 1 s
        closed_by_server(c)
    assert metric(limited, "inferd_connections_closed_total", protocol="http", reason="header_timeout") >= before + 1


def test_slowloris_many_connections(limited):
    # 300 connections each with half a request line: every one gets its 408
    # and is closed; a normal client is served meanwhile.
    conns = [h.RawConn(limited.port) for _ in range(300)]
    try:
        for c in conns:
            c.send(b"GET /v2/hea")
        assert fresh_get(limited, "/v2/health/live").status_code == 200
        for c in conns:
            r = c.read_response()
            assert r.status == 408, r
            closed_by_server(c)
    finally:
        for c in conns:
            c.close()
    assert fresh_get(limited, "/v2/health/live").status_code == 200


def test_idle_keepalive_closes_quietly(limited):
    with h.RawConn(limited.port) as c:
        c.send(h.http_request("GET", "/v2/health/live"))
        assert c.read_response().status == 200
        t0 = time.monotonic()
        closed_by_server(c, timeout=20)  # no bytes: a quiet close
        assert time.monotonic() - t0 >= 1.0  # the idle timeout is 2 s
    # A connection that never sends a byte is idle too.
    with h.RawConn(limited.port) as c:
        closed_by_server(c, timeout=20)


def test_keepalive_in_use_is_not_closed(limited):
    # Requests every 0.25 s keep a connection with a 2 s idle timeout open
    # for longer than the timeout.
    with h.RawConn(limited.port) as c:
        for _ in range(12):
            c.send(h.http_request("GET", "/v2/health/live"))
            assert c.read_response().status == 200
            time.sleep(0.25)


def test_slow_body_408(limited):
    before = metric(limited, "inferd_connections_closed_total", protocol="http", reason="body_timeout")
    with h.RawConn(limited.port) as c:
        c.send(b"POST /v2/models/identity_fp32/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"in")
        r = c.read_response()
        assert r.status == 408, r
        assert "--http-body-timeout-secs" in r.json()["error"]
        closed_by_server(c)
    assert metric(limited, "inferd_connections_closed_total", protocol="http", reason="body_timeout") >= before + 1


def send_body_in_pieces(srv, pieces=4):
    """A JSON inference whose body arrives in `pieces` sends: 200, its data back."""
    body = h.json_infer_body([("INPUT0", "FP32", [1, 16], [float(i) for i in range(16)])])
    body = body[:-1] + b" " * 3000 + body[-1:]  # ~3 KB: above a 1 KiB bound
    head = b"POST /v2/models/identity_fp32/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
    with h.RawConn(srv.port) as c:
        c.send(head)
        step = (len(body) + pieces - 1) // pieces
        for i in range(0, len(body), step):
            time.sleep(0.05)
            c.send(body[i:i + step])
        r = c.read_response()
        assert r.status == 200, r
        assert r.json()["outputs"][0]["data"] == [float(i) for i in range(16)]


def test_body_sized_from_content_length(limited):
    # Within --http-body-prealloc-size (default 32 MiB): allocated whole, read into place.
    send_body_in_pieces(limited)


def test_body_beyond_prealloc_bound_grows(private_server):
    srv = private_server(models=["identity_fp32"], extra=["--http-body-prealloc-size=1024"])
    send_body_in_pieces(srv)
    srv0 = private_server(models=["identity_fp32"], extra=["--http-body-prealloc-size=0"])
    send_body_in_pieces(srv0)


def test_limits_flags_rejected_when_invalid(tmp_path):
    for flag in ("--http-max-header-bytes=0", "--http-max-headers=-1", "--http-idle-timeout-secs=x",
                 "--max-connections=0", "--http-max-pipeline=0", "--http-body-prealloc-size=x"):
        args = h.server_args([tmp_path], 0, 0, 0, extra=[flag])
        p = subprocess.run(args, capture_output=True, timeout=h.START_TIMEOUT_S)
        assert p.returncode != 0, flag
        assert flag.split("=")[0][2:] in p.stderr.decode(), p.stderr


def test_help_documents_limits():
    p = subprocess.run([str(h.require_binary()), "--help"], capture_output=True, timeout=h.START_TIMEOUT_S)
    out = p.stdout.decode()
    for flag in ("--http-max-header-bytes", "--http-max-headers", "--http-header-timeout-secs",
                 "--http-body-timeout-secs", "--http-idle-timeout-secs", "--http-max-pipeline",
                 "--max-connections", "--http-body-prealloc-size"):
        assert flag in out, flag


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_pipelining_depth_bounded_and_in_order(private_server):
    srv = private_server(models=["identity_fp32"], extra=["--http-max-pipeline=8"])
    n = 1000
    # Distinct answers (each names its model) to check the order.
    reqs = b"".join(b"GET /v2/models/m%d HTTP/1.1\r\nHost: x\r\n\r\n" % i for i in range(n))
    rss0 = rss_kib(srv.proc.pid)
    with h.RawConn(srv.port) as c:
        sent = threading.Event()

        def send():
            c.send(reqs)
            sent.set()

        t = threading.Thread(target=send, daemon=True)
        t.start()
        time.sleep(1.0)  # the client reads nothing meanwhile
        grown = rss_kib(srv.proc.pid) - rss0
        for i in range(n):
            r = c.read_response()
            assert r.status == 404, r
            assert f"'m{i}'" in r.json()["error"], (i, r)
        t.join(timeout=h.HTTP_TIMEOUT_S)
        assert sent.is_set()
        c.send(h.http_request("GET", "/v2/health/live"))
        assert c.read_response().status == 200
    # A handful of queued requests and one read buffer, not 1,000 answers.
    assert grown < 8 * 1024, f"server RSS grew by {grown} KiB"


def test_pipelined_infers_with_bodies_in_order(private_server):
    # Bodies cross the pipeline pauses (depth 2): every answer, in order.
    srv = private_server(models=["identity_fp32"], extra=["--http-max-pipeline=2"])
    n = 300
    reqs = []
    for i in range(n):
        body = h.json_infer_body([("INPUT0", "FP32", [1, 16], [float(i)] * 16)])
        reqs.append(h.http_request("POST", "/v2/models/identity_fp32/infer", body,
                                   headers={"Content-Type": "application/json"}))
    t0 = time.monotonic()
    with h.RawConn(srv.port) as c:
        t = threading.Thread(target=c.send, args=(b"".join(reqs),), daemon=True)
        t.start()
        for i in range(n):
            r = c.read_response()
            assert r.status == 200, (i, r)
            assert r.json()["outputs"][0]["data"] == [float(i)] * 16, i
        t.join(timeout=h.HTTP_TIMEOUT_S)
    # Far from a bound on speed (this takes well under a second): requests
    # parsed when reading resumes once stalled until the loop's next wake-up
    # (the 2 s metrics timer), 300 s in all.
    assert time.monotonic() - t0 < 60


def test_max_connections_accept_and_close(private_server):
    srv = private_server(models=["identity_fp32"], extra=["--max-connections=4"])
    before = metric(srv, "inferd_connections_rejected_total", protocol="http", reason="max_connections")
    conns = [h.RawConn(srv.port) for _ in range(4)]
    try:
        for c in conns:  # all four admitted and served
            c.send(h.http_request("GET", "/v2/health/live"))
            assert c.read_response().status == 200
        extra = h.RawConn(srv.port)
        closed_by_server(extra)  # the fifth: closed at once, nothing said
        extra.close()
        assert metric(srv, "inferd_connections_rejected_total", protocol="http",
                      reason="max_connections") >= before + 1
        assert metric(srv, "inferd_connections_open", protocol="http") == 4
        # One closes: a new client is served again.
        conns.pop().close()
        deadline = time.monotonic() + h.HTTP_TIMEOUT_S
        while True:
            c = h.RawConn(srv.port)
            try:
                c.send(h.http_request("GET", "/v2/health/live"))
                assert c.read_response().status == 200
                break
            except (EOFError, ConnectionError):
                assert time.monotonic() < deadline, "never served after a connection closed"
                time.sleep(0.05)
            finally:
                c.close()
    finally:
        for c in conns:
            c.close()


def start_with_nofile(tmp_path, soft, hard, extra=()):
    """inferd started with RLIMIT_NOFILE (soft, hard); waits for identity_fp32."""
    h.require_binary()
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32"])
    http_port, grpc_port, metrics_port = h.free_ports(3)
    args = h.server_args([repo], http_port, grpc_port, metrics_port, extra=list(extra))
    log_path = tmp_path / "inferd.log"

    def set_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    with open(log_path, "wb") as logf:
        proc = subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                preexec_fn=set_limit, cwd=str(h.REPO_ROOT))
    srv = h.Server(proc, http_port, grpc_port, metrics_port, log_path, [repo], args)
    deadline = time.monotonic() + h.START_TIMEOUT_S
    try:
        while True:
            assert proc.poll() is None, srv.log_tail()
            try:
                if requests.get(srv.url("/v2/models/identity_fp32/ready"), timeout=2).status_code == 200:
                    return srv
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, srv.log_tail()
            time.sleep(0.05)
    except BaseException:
        srv.stop(check=False)
        raise


def test_nofile_soft_limit_raised_to_hard(tmp_path):
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard <= 256:
        pytest.skip(f"hard RLIMIT_NOFILE is {hard}")
    srv = start_with_nofile(tmp_path, 256, hard, extra=["--log-verbose=1"])
    try:
        with open(f"/proc/{srv.proc.pid}/limits") as f:
            line = next(ln for ln in f if ln.startswith("Max open files"))
        assert line.split()[3] == str(hard), line
        assert f"open file limit: {hard} (hard {hard})" in srv.log_tail(1 << 20)
    finally:
        srv.stop(check=True)


def test_fd_exhaustion_pauses_accepting(tmp_path):
    """With a low descriptor limit, more clients than descriptors: accepting
    pauses (logged, counted); the waiting clients are served once others
    close."""
    limit = 128  # room for what start-up opens (a GPU build opens device files)
    srv = start_with_nofile(tmp_path, limit, limit, extra=["--allow-grpc=false"])
    proc, http_port = srv.proc, srv.http_port
    try:
        n = limit + 40  # more clients than the server has descriptors
        conns = [socket.create_connection(("127.0.0.1", http_port), timeout=h.HTTP_TIMEOUT_S) for _ in range(n)]
        req = h.http_request("GET", "/v2/health/live")
        for s in conns:
            s.sendall(req)
        # Wait until the server has run out and paused at least once.
        deadline = time.monotonic() + h.HTTP_TIMEOUT_S
        while "pausing accepting" not in srv.log_tail(1 << 20):
            assert time.monotonic() < deadline, srv.log_tail()
            time.sleep(0.1)
        assert proc.poll() is None
        # Clients close one by one as they are answered (reading in order:
        # the first ones were admitted), so the waiting ones get admitted.
        for i, s in enumerate(conns):
            rc = h.RawConn.__new__(h.RawConn)
            rc.sock, rc.buf = s, b""
            r = rc.read_response()
            assert r.status == 200, (i, r)
            s.close()
        log = srv.log_tail(1 << 20)
        # Warnings are rate-limited (one a second at most), pauses counted.
        warnings = len(re.findall(r"pausing accepting", log))
        assert warnings >= 1
        assert metric(srv, "inferd_accept_paused_total", protocol="http") >= warnings
        assert fresh_get(srv, "/v2/health/live").status_code == 200
    finally:
        srv.stop(check=True)
