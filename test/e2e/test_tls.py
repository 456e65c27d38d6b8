"""TLS: gRPC over TLS with tritonserver's flags (--grpc-use-ssl, --grpc-server-cert,
--grpc-server-key, --grpc-root-cert, --grpc-use-ssl-mutual) and HTTPS on the HTTP port
(inferd's --http-ssl-cert / --http-ssl-key), with real clients: grpcio's
ssl_channel_credentials and requests over HTTPS.

Certificates are made in each test module's temporary folder with the openssl CLI
(`openssl req`): a CA, a server certificate for localhost / 127.0.0.1 (subjectAltName),
a client certificate, and a second CA (with its own client certificate) that the server
does not trust.

Cases: server-only and mutual TLS over gRPC (a client without a certificate, or with one
from the other CA, is refused under mutual); health and infer over HTTPS; a handshake
that fails (the client trusts another CA) leaves the server serving the other clients,
including a keep-alive connection opened before; a plaintext client on a TLS port is
closed; 4 MB tensors both ways over both protocols; 50 concurrent TLS connections; bad
flags (missing file, key that does not match the certificate, mutual without a root
certificate, half of the HTTPS pair) end the process at start with a clear message.
"""

import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time

import grpc
import numpy as np
import pytest
import requests

import e2e_helpers as h
import grpc_helpers as g
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

OPENSSL_CNF = """
[req]
distinguished_name = dn
prompt = no
[dn]
CN = inferd-test
[ca_ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost,IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[client_ext]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""

KEY_ARGS = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"]


class Certs:
    pass


def _openssl(*args):
    r = subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"openssl {' '.join(args)} failed:\n{r.stderr}"


def _make_ca(d, cnf, name):
    _openssl("req", "-x509", "-config", cnf, "-extensions", "ca_ext", *KEY_ARGS,
             "-keyout", str(d / f"{name}.key"), "-out", str(d / f"{name}.crt"),
             "-subj", f"/CN=inferd test {name}")


def _make_leaf(d, cnf, ca, name, ext, cn):
    _openssl("req", "-x509", "-config", cnf, "-extensions", ext, *KEY_ARGS,
             "-CA", str(d / f"{ca}.crt"), "-CAkey", str(d / f"{ca}.key"),
             "-keyout", str(d / f"{name}.key"), "-out", str(d / f"{name}.crt"),
             "-subj", f"/CN={cn}")


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.fail("the openssl CLI is missing (Debian package openssl: bash third_party/install-deps.sh)")
    d = tmp_path_factory.mktemp("tls-certs")
    cnf = d / "openssl.cnf"
    cnf.write_text(OPENSSL_CNF)
    cnf = str(cnf)
    _make_ca(d, cnf, "ca")
    _make_leaf(d, cnf, "ca", "server", "server_ext", "localhost")
    _make_leaf(d, cnf, "ca", "client", "client_ext", "inferd-test-client")
    _make_ca(d, cnf, "other_ca")
    _make_leaf(d, cnf, "other_ca", "other_client", "client_ext", "inferd-other-client")
    c = Certs()
    c.dir = d
    for n in ("ca", "server", "client", "other_ca", "other_client"):
        setattr(c, n + "_crt", d / f"{n}.crt")
        setattr(c, n + "_key", d / f"{n}.key")
    return c


def _read(p):
    return p.read_bytes()


# --------------------------------------------------------------- servers ---

class TlsServer(h.Server):
    """h.Server whose requests verify against `ca` (passed per request: requests lets
    REQUESTS_CA_BUNDLE override a session's own verify setting)."""

    ca = None

    def get(self, path, **kw):
        kw.setdefault("verify", self.ca)
        return super().get(path, **kw)

    def post(self, path, **kw):
        kw.setdefault("verify", self.ca)
        return super().post(path, **kw)


def session_for(server):
    s = requests.Session()
    s.verify = server.ca
    s.trust_env = False
    return s

def start_tls_server(tmp_dir, extra, https_ca=None, timeout=h.START_TIMEOUT_S):
    """Start inferd with `extra` flags and wait until it is live and identity_fp32 is ready.
    https_ca: the HTTP port speaks HTTPS, verified against this CA file."""
    tmp_dir.mkdir(parents=True, exist_ok=True)
    repo = h.copy_repo(tmp_dir / "repo", models=["identity_fp32", "identity_int32"])
    http_port, grpc_port, metrics_port = h.free_ports(3)
    args = h.server_args([repo], http_port, grpc_port, metrics_port, extra)
    log_path = tmp_dir / f"inferd-{http_port}.log"
    with open(log_path, "wb") as logf:
        proc = subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=str(h.REPO_ROOT))
    srv = TlsServer(proc, http_port, grpc_port, metrics_port, log_path, [repo], args)
    srv.ca = True
    if https_ca is not None:
        srv.base = f"https://127.0.0.1:{http_port}"
        srv.ca = str(https_ca)
    deadline = time.monotonic() + timeout
    pending = ["/v2/health/live", "/v2/models/identity_fp32/ready", "/v2/models/identity_int32/ready"]
    while pending:
        if proc.poll() is not None:
            raise AssertionError(f"inferd exited during startup with status {proc.returncode}\n"
                                 f"--- log tail ---\n{srv.log_tail()}")
        if time.monotonic() > deadline:
            srv.stop(check=False)
            raise AssertionError(f"inferd not ready within {timeout}s\n--- log tail ---\n{srv.log_tail()}")
        try:
            r = requests.get(srv.url(pending[0]), timeout=2, verify=srv.ca)
            if r.status_code == 200:
                pending.pop(0)
                continue
        except requests.RequestException:
            pass
        time.sleep(0.05)
    return srv


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory, certs):
    """HTTPS on the HTTP port and server-only TLS on the gRPC port."""
    h.require_binary()
    srv = start_tls_server(tmp_path_factory.mktemp("tls-srv"), [
        f"--http-ssl-cert={certs.server_crt}", f"--http-ssl-key={certs.server_key}",
        "--grpc-use-ssl=true", f"--grpc-server-cert={certs.server_crt}",
        f"--grpc-server-key={certs.server_key}",
    ], https_ca=certs.ca_crt)
    try:
        yield srv
    finally:
        srv.stop(check=True)


@pytest.fixture(scope="module")
def mtls_server(tmp_path_factory, certs):
    """gRPC with mutual TLS (client certificates verified against the CA); plain HTTP."""
    h.require_binary()
    srv = start_tls_server(tmp_path_factory.mktemp("mtls-srv"), [
        "--grpc-use-ssl-mutual=true", f"--grpc-server-cert={certs.server_crt}",
        f"--grpc-server-key={certs.server_key}", f"--grpc-root-cert={certs.ca_crt}",
    ])
    try:
        yield srv
    finally:
        srv.stop(check=True)


# --------------------------------------------------------------- clients ---

class TlsClient(g.Client):
    """grpc_helpers.Client over a secure channel."""

    def __init__(self, stubs, target, creds):
        self.stubs = stubs
        self.pb = stubs.pb
        self.target = target
        self.channel = grpc.secure_channel(target, creds, options=list(g.CHANNEL_OPTIONS))
        self._calls = {}


def creds(certs, ca=None, client=None):
    """Channel credentials trusting `ca` (default: the server's CA), with the
    client certificate named `client` ("client", "other_client") or none."""
    ca = ca or certs.ca_crt
    if client is None:
        return grpc.ssl_channel_credentials(root_certificates=_read(ca))
    return grpc.ssl_channel_credentials(root_certificates=_read(ca),
                                        private_key=_read(getattr(certs, client + "_key")),
                                        certificate_chain=_read(getattr(certs, client + "_crt")))


def tls_client(server, stubs, c):
    return TlsClient(stubs, f"127.0.0.1:{server.grpc_port}", c)


def grpc_infer_identity(client, n=16, model="identity_fp32", datatype="FP32", dtype=np.float32):
    data = np.arange(n, dtype=dtype).reshape(1, n)
    req = g.infer_request(client.pb, model, [("INPUT0", datatype, [1, n], data)])
    out = g.outputs_of(client.model_infer(req))["OUTPUT0"]
    np.testing.assert_array_equal(np.asarray(out).reshape(1, n), data)


def https_infer_identity(server, session=None, n=16, model="identity_fp32", datatype="FP32",
                         dtype=np.float32):
    data = np.arange(n, dtype=dtype).reshape(1, n)
    body, hlen = h.build_binary_request([("INPUT0", datatype, [1, n], data)],
                                        outputs=[{"name": "OUTPUT0", "parameters": {"binary_data": True}}])
    s = session or server.session
    r = s.post(server.url(f"/v2/models/{model}/infer"), data=body, timeout=h.HTTP_TIMEOUT_S, verify=server.ca,
               headers={"Inference-Header-Content-Length": str(hlen),
                        "Content-Type": "application/octet-stream"})
    assert r.status_code == 200, r.text[:500]
    _, outs = h.parse_infer_response(r)
    np.testing.assert_array_equal(np.asarray(outs["OUTPUT0"]).reshape(1, n), data)


def refused(fn, *a, **kw):
    """fn must fail with a gRPC error; returns its status code."""
    try:
        fn(*a, **kw)
    except grpc.RpcError as e:
        return e.code()
    raise AssertionError("the call succeeded; it should have been refused")


def raw_exchange(port, payload, timeout=10):
    """Send `payload` in plaintext and read until the server closes; returns what came back."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(payload)
        got = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            got += chunk
        else:
            raise AssertionError(f"the server kept the plaintext connection open for {timeout}s")
        return got


# ------------------------------------------------------------------ gRPC ---

def test_grpc_tls_server_only(tls_server, grpc_stubs, certs):  # noqa: F811
    with tls_client(tls_server, grpc_stubs, creds(certs)) as c:
        assert c.server_live(timeout=10).live is True
        assert c.server_ready().ready is True
        assert c.model_ready("identity_fp32").ready is True
        grpc_infer_identity(c)
        # A client certificate is not asked for, and one sent anyway does no harm.
    with tls_client(tls_server, grpc_stubs, creds(certs, client="client")) as c:
        grpc_infer_identity(c)


def test_grpc_tls_plaintext_client_refused(tls_server, grpc_stubs, certs):  # noqa: F811
    c = g.Client(grpc_stubs, f"127.0.0.1:{tls_server.grpc_port}")
    try:
        assert refused(c.server_live, timeout=5) == grpc.StatusCode.UNAVAILABLE
    finally:
        c.close()
    # The HTTP/2 preface in plaintext: the connection is closed, the server lives on.
    raw_exchange(tls_server.grpc_port, g.PREFACE + g.frame(g.SETTINGS, 0, 0))
    with tls_client(tls_server, grpc_stubs, creds(certs)) as c2:
        grpc_infer_identity(c2)


def test_grpc_wrong_ca_refused_server_serves_on(tls_server, grpc_stubs, certs):  # noqa: F811
    with tls_client(tls_server, grpc_stubs, creds(certs)) as good:
        grpc_infer_identity(good)
        with tls_client(tls_server, grpc_stubs, creds(certs, ca=certs.other_ca_crt)) as bad:
            assert refused(bad.server_live, timeout=5) == grpc.StatusCode.UNAVAILABLE
        # The connection opened before, and new ones, are served.
        grpc_infer_identity(good)
    with tls_client(tls_server, grpc_stubs, creds(certs)) as again:
        grpc_infer_identity(again)
    assert tls_server.alive()


def test_grpc_mutual_tls(mtls_server, grpc_stubs, certs):  # noqa: F811
    with tls_client(mtls_server, grpc_stubs, creds(certs, client="client")) as c:
        assert c.server_live(timeout=10).live is True
        grpc_infer_identity(c)
    # No client certificate, or one from a CA the server does not trust: refused.
    with tls_client(mtls_server, grpc_stubs, creds(certs)) as nocert:
        assert refused(nocert.server_live, timeout=5) == grpc.StatusCode.UNAVAILABLE
    with tls_client(mtls_server, grpc_stubs, creds(certs, client="other_client")) as other:
        assert refused(other.server_live, timeout=5) == grpc.StatusCode.UNAVAILABLE
    with tls_client(mtls_server, grpc_stubs, creds(certs, client="client")) as c:
        grpc_infer_identity(c)
    # HTTP stays plaintext on this server.
    assert requests.get(mtls_server.url("/v2/health/ready"), timeout=h.HTTP_TIMEOUT_S).status_code == 200


def test_grpc_tls_large_tensor(tls_server, grpc_stubs, certs):  # noqa: F811
    n = 1 << 20  # 4 MiB of INT32 each way
    with tls_client(tls_server, grpc_stubs, creds(certs)) as c:
        grpc_infer_identity(c, n=n, model="identity_int32", datatype="INT32", dtype=np.int32)
        grpc_infer_identity(c)


def test_grpc_tls_response_past_high_water(tls_server, grpc_stubs, certs):  # noqa: F811
    """A 20 MB answer: more than the transport lets wait for the socket before it stops
    reading (16 MiB, counted with what TLS still holds); reading resumes once it is out."""
    n = 5 << 20  # 20 MiB of INT32 each way
    with tls_client(tls_server, grpc_stubs, creds(certs)) as c:
        grpc_infer_identity(c, n=n, model="identity_int32", datatype="INT32", dtype=np.int32)
        grpc_infer_identity(c)


def test_grpc_tls_many_connections(tls_server, grpc_stubs, certs):  # noqa: F811
    clients = [tls_client(tls_server, grpc_stubs, creds(certs)) for _ in range(50)]
    errors = []

    def work(c):
        try:
            for _ in range(3):
                grpc_infer_identity(c)
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    try:
        threads = [threading.Thread(target=work, args=(c,)) for c in clients]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads), "a client thread did not finish"
    finally:
        for c in clients:
            c.close()
    assert not errors, errors[:3]


# ----------------------------------------------------------------- HTTPS ---

def test_https_health_and_infer(tls_server):
    assert tls_server.base.startswith("https://")
    for path in ("/v2/health/live", "/v2/health/ready", "/v2/models/identity_fp32/ready"):
        r = tls_server.get(path)
        assert r.status_code == 200, (path, r.status_code)
    r = tls_server.get("/v2")
    assert r.status_code == 200 and "version" in r.json()
    https_infer_identity(tls_server)
    # JSON infer too.
    r = tls_server.post("/v2/models/identity_fp32/infer", json={
        "inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 16], "data": list(range(16))}]})
    assert r.status_code == 200, r.text[:300]
    assert r.json()["outputs"][0]["data"] == list(range(16))


def test_https_curl(tls_server, tmp_path):
    """curl offers h2 and http/1.1 through ALPN (when built with HTTP/2): the server picks
    http/1.1; and an infer with a JSON body."""
    if shutil.which("curl") is None:
        pytest.fail("curl is missing (Debian package curl: bash third_party/install-deps.sh)")
    base = ["curl", "-sS", "--cacert", str(tls_server.ca), "--max-time", "30"]
    r = subprocess.run(base + ["-o", "/dev/null", "-w", "%{http_code} %{http_version}",
                               tls_server.url("/v2/health/ready")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["200", "1.1"], r.stdout
    body = tmp_path / "body.json"
    body.write_text('{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,16],"data":[%s]}]}'
                    % ",".join(str(i) for i in range(16)))
    r = subprocess.run(base + ["--data-binary", f"@{body}", tls_server.url("/v2/models/identity_fp32/infer")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert '"name":"OUTPUT0"' in r.stdout.replace(" ", ""), r.stdout[:300]
    # A client that does not trust the server's CA is refused by curl itself.
    r = subprocess.run(["curl", "-sS", "--max-time", "30", "--cacert", str(tls_server.ca).replace("ca.crt", "other_ca.crt"),
                        tls_server.url("/v2/health/ready")], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0


def test_https_keep_alive_and_pipelined_requests(tls_server):
    """Several requests on one keep-alive TLS connection, then two pipelined in one write."""
    with session_for(tls_server) as s:
        for _ in range(5):
            assert s.get(tls_server.url("/v2/health/live"), timeout=h.HTTP_TIMEOUT_S).status_code == 200
    ctx = ssl.create_default_context(cafile=str(tls_server.ca))
    with socket.create_connection(("127.0.0.1", tls_server.http_port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            req = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"
            s.sendall(req + req[:-2] + b"Connection: close\r\n\r\n")
            got = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
    assert got.count(b"HTTP/1.1 200") == 2, got[:400]


def test_https_deep_pipeline(tls_server):
    """More pipelined requests than a connection parses before it pauses reading: the
    decrypted bytes it has not taken yet wait in the TLS layer and are delivered when
    reading resumes, with no new bytes from the client to wake it."""
    n = 300
    ctx = ssl.create_default_context(cafile=str(tls_server.ca))
    req = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"
    last = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", tls_server.http_port), timeout=30) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(req * (n - 1) + last)
            got = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
    assert got.count(b"HTTP/1.1 200") == n


def test_https_alpn(tls_server):
    ctx = ssl.create_default_context(cafile=str(tls_server.ca))
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    with socket.create_connection(("127.0.0.1", tls_server.http_port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            assert s.selected_alpn_protocol() == "http/1.1"
    # The gRPC port selects h2.
    ctx = ssl.create_default_context(cafile=str(tls_server.ca))
    ctx.set_alpn_protocols(["h2"])
    with socket.create_connection(("127.0.0.1", tls_server.grpc_port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            assert s.selected_alpn_protocol() == "h2"


def test_https_wrong_ca_then_others_served(tls_server, certs):
    with session_for(tls_server) as good:
        assert good.get(tls_server.url("/v2/health/live"), timeout=h.HTTP_TIMEOUT_S).status_code == 200
        with pytest.raises(requests.exceptions.SSLError):
            requests.get(tls_server.url("/v2/health/live"), timeout=h.HTTP_TIMEOUT_S,
                         verify=str(certs.other_ca_crt))
        # The keep-alive connection opened before still works, and new ones too.
        https_infer_identity(tls_server, session=good)
    https_infer_identity(tls_server)
    assert tls_server.alive()


def test_https_plaintext_client_closed(tls_server):
    got = raw_exchange(tls_server.http_port, b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
    assert b"HTTP/1.1 200" not in got
    # Garbage that looks like a TLS record header, then nothing more: a client
    # that stops mid-handshake and leaves.
    with socket.create_connection(("127.0.0.1", tls_server.http_port), timeout=10) as s:
        s.sendall(b"\x16\x03\x01\x00\x05ab")
    assert tls_server.get("/v2/health/live").status_code == 200


def test_https_large_tensor(tls_server):
    n = 1 << 20  # 4 MiB of INT32 each way
    https_infer_identity(tls_server, n=n, model="identity_int32", datatype="INT32", dtype=np.int32)
    https_infer_identity(tls_server)


def test_https_client_leaves_mid_response(tls_server):
    """Clients that send a 4 MB infer and leave without reading the answer: the server
    drops those connections (the TLS write in progress is cancelled) and serves on."""
    n = 1 << 20
    data = np.arange(n, dtype=np.int32).reshape(1, n)
    body, hlen = h.build_binary_request([("INPUT0", "INT32", [1, n], data)],
                                        outputs=[{"name": "OUTPUT0", "parameters": {"binary_data": True}}])
    head = (f"POST /v2/models/identity_int32/infer HTTP/1.1\r\nHost: x\r\n"
            f"Inference-Header-Content-Length: {hlen}\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    ctx = ssl.create_default_context(cafile=str(tls_server.ca))
    for i in range(5):
        with socket.create_connection(("127.0.0.1", tls_server.http_port), timeout=30) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                s.sendall(head + body)
                if i % 2:
                    s.recv(1000)  # the first bytes of the answer, then leave
    https_infer_identity(tls_server, n=n, model="identity_int32", datatype="INT32", dtype=np.int32)
    assert tls_server.get("/v2/health/live").status_code == 200


def test_https_many_connections(tls_server):
    errors = []

    def work():
        try:
            with session_for(tls_server) as s:
                for _ in range(3):
                    https_infer_identity(tls_server, session=s)
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=work) for _ in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a client thread did not finish"
    assert not errors, errors[:3]


def test_metrics_port_stays_plaintext(tls_server):
    r = requests.get(f"http://127.0.0.1:{tls_server.metrics_port}/metrics", timeout=h.HTTP_TIMEOUT_S)
    assert r.status_code == 200


def test_shutdown_with_idle_and_stalled_tls_connections(tmp_path, certs, grpc_stubs):  # noqa: F811
    """SIGTERM with idle TLS connections (after their handshake) and connections whose
    client never finishes (or starts) its handshake: all close and the server exits 0,
    long before --exit-timeout-secs (a stalled handshake does not hold the shutdown)."""
    h.require_binary()
    srv = start_tls_server(tmp_path / "srv", [
        f"--http-ssl-cert={certs.server_crt}", f"--http-ssl-key={certs.server_key}",
        "--grpc-use-ssl=true", f"--grpc-server-cert={certs.server_crt}",
        f"--grpc-server-key={certs.server_key}", "--exit-timeout-secs=120",
    ], https_ca=certs.ca_crt)
    socks, sessions, clients = [], [], []
    try:
        for _ in range(3):
            s = session_for(srv)
            assert s.get(srv.url("/v2/health/live"), timeout=h.HTTP_TIMEOUT_S).status_code == 200
            sessions.append(s)
            c = tls_client(srv, grpc_stubs, creds(certs))
            grpc_infer_identity(c)
            clients.append(c)
        for port in (srv.http_port, srv.grpc_port):
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=10))  # says nothing
            half = socket.create_connection(("127.0.0.1", port), timeout=10)
            half.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # a ClientHello's start
            socks.append(half)
        time.sleep(0.2)  # the server has accepted them (not asserted on)
        srv.proc.send_signal(signal.SIGTERM)
        try:
            rc = srv.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            srv.proc.kill()
            srv.proc.wait()
            raise AssertionError("inferd still running 60 s after SIGTERM (exit timeout 120 s): "
                                 f"a TLS connection held the shutdown\n{srv.log_tail()}")
        assert rc == 0, srv.log_tail()
    finally:
        for s in socks:
            s.close()
        for s in sessions:
            s.close()
        for c in clients:
            c.close()
        srv.stop(check=False)


# ------------------------------------------------------------- bad flags ---

def _base_args(tmp_path):
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32"])
    http_port, grpc_port, metrics_port = h.free_ports(3)
    return h.server_args([repo], http_port, grpc_port, metrics_port)


@pytest.mark.parametrize("case", [
    "grpc-missing-cert", "grpc-missing-key", "grpc-key-mismatch", "grpc-mutual-no-root",
    "grpc-mutual-missing-root", "grpc-cert-not-pem", "http-key-only", "http-key-mismatch",
    "http-missing-cert",
])
def test_bad_tls_flags_fail_at_start(tmp_path, certs, case):
    h.require_binary()
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    missing = tmp_path / "missing.pem"
    c = certs
    extra, expect = {
        "grpc-missing-cert": (["--grpc-use-ssl=true", f"--grpc-server-cert={missing}",
                               f"--grpc-server-key={c.server_key}"], "--grpc-server-cert"),
        "grpc-missing-key": (["--grpc-use-ssl=true", f"--grpc-server-cert={c.server_crt}"],
                             "--grpc-server-key"),
        "grpc-key-mismatch": (["--grpc-use-ssl=true", f"--grpc-server-cert={c.server_crt}",
                               f"--grpc-server-key={c.client_key}"], "does not match"),
        "grpc-mutual-no-root": (["--grpc-use-ssl-mutual=true", f"--grpc-server-cert={c.server_crt}",
                                 f"--grpc-server-key={c.server_key}"], "--grpc-root-cert"),
        "grpc-mutual-missing-root": (["--grpc-use-ssl-mutual=true", f"--grpc-server-cert={c.server_crt}",
                                      f"--grpc-server-key={c.server_key}", f"--grpc-root-cert={missing}"],
                                     "--grpc-root-cert"),
        "grpc-cert-not-pem": (["--grpc-use-ssl=true", f"--grpc-server-cert={junk}",
                               f"--grpc-server-key={c.server_key}"], "--grpc-server-cert"),
        "http-key-only": ([f"--http-ssl-key={c.server_key}"], "--http-ssl-cert"),
        "http-key-mismatch": ([f"--http-ssl-cert={c.server_crt}", f"--http-ssl-key={c.client_key}"],
                              "does not match"),
        "http-missing-cert": ([f"--http-ssl-cert={missing}", f"--http-ssl-key={c.server_key}"],
                              "--http-ssl-cert"),
    }[case]
    rc, out, err = h.run_to_exit(_base_args(tmp_path) + extra)
    assert rc != 0, f"inferd exited 0 with {extra}"
    assert expect in err, f"stderr does not name {expect!r}:\n{err[-2000:]}"


def test_help_lists_tls_flags():
    h.require_binary()
    r = subprocess.run([str(h.require_binary()), "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0
    for flag in ("--grpc-use-ssl=", "--grpc-use-ssl-mutual=", "--grpc-server-cert=", "--grpc-server-key=",
                 "--grpc-root-cert=", "--http-ssl-cert=", "--http-ssl-key="):
        assert flag in r.stdout, flag

