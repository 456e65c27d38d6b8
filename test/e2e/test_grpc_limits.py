"""HTTP/2 limits of the gRPC front end, on raw HTTP/2 connections and with
grpcio: SETTINGS_MAX_CONCURRENT_STREAMS (REFUSED_STREAM past it, the
connection lives on), the header list size (RESOURCE_EXHAUSTED; far past it
GOAWAY), CONTINUATION floods, the idle timeout (GOAWAY), Triton's keepalive
flags (server PINGs, closing a client that stops answering them, the
client's PING rate), rapid reset (CVE-2023-44487) and the per-connection
buffer cap. After each test the server still serves a fresh client.

No assertion depends on the server being fast: every wait for something to
happen has a generous timeout, and the short waits only check that something
did NOT happen (a slow server cannot make those fail)."""

import socket
import struct
import time

import grpc
import numpy as np
import pytest

import grpc_helpers as g
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)
from grpc_helpers import (CONTINUATION, FLAG_ACK, FLAG_END_HEADERS, FLAG_END_STREAM, GOAWAY, HEADERS,
                          PING, RST_STREAM, SETTINGS, WINDOW_UPDATE, frame)

SC = grpc.StatusCode
INFER_PATH = f"/{g.SERVICE}/ModelInfer"
LIVE_PATH = f"/{g.SERVICE}/ServerLive"
NO_ERROR, PROTOCOL_ERROR, CANCEL, REFUSED_STREAM, ENHANCE_YOUR_CALM = 0, 1, 8, 7, 11


def _request(pb, seed=0, request_id=None):
    x = np.arange(16, dtype=np.float32).reshape(1, 16) + seed
    return g.infer_request(pb, "identity_fp32", [("INPUT0", "FP32", [1, 16], x)],
                           request_id=request_id), x


def _serving(srv, stubs, seed=3):
    """A fresh grpcio client gets a correct answer."""
    assert srv.alive(), srv.log_tail()
    with g.Client(stubs, g.grpc_target(srv)) as c:
        req, x = _request(c.pb, seed)
        resp = c.model_infer(req, timeout=20)
        np.testing.assert_array_equal(g.outputs_of(resp)["OUTPUT0"], x)


def _h2(srv):
    c = g.H2Conn(srv.grpc_port)
    c.start()
    return c


def _h2_acked(srv):
    """A raw connection whose client has acknowledged the server's SETTINGS
    (so the server's 16 MiB windows apply)."""
    c = _h2(srv)
    c.sock.settimeout(20)
    while True:
        ftype, flags, _, _ = c.read_frame()
        if ftype == SETTINGS and not flags & FLAG_ACK:
            c.send(frame(SETTINGS, FLAG_ACK, 0))
            return c


def _status(res):
    v = res.header("grpc-status")
    return None if v is None else int(v)


def _read_until_closed(c, timeout=20.0, ack_pings=True):
    """Frames until the server closes: (frames as (type, flags, sid, payload),
    closed?)."""
    frames = []
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return frames, False
        c.sock.settimeout(left)
        try:
            f = c.read_frame()
        except EOFError:
            return frames, True
        except (socket.timeout, TimeoutError):
            return frames, False
        except OSError:
            return frames, True
        frames.append(f)
        ftype, flags, _, payload = f
        if ftype == SETTINGS and not flags & FLAG_ACK:
            c._ack(frame(SETTINGS, FLAG_ACK, 0))
        elif ftype == PING and not flags & FLAG_ACK and ack_pings:
            c._ack(frame(PING, FLAG_ACK, 0, payload))


def _goaways(frames):
    out = []
    for ftype, _, _, payload in frames:
        if ftype == GOAWAY:
            last, code = struct.unpack(">II", payload[:8])
            out.append((last & 0x7FFFFFFF, code, payload[8:]))
    return out


# ------------------------------------------------- concurrent streams ---

def test_max_concurrent_streams(private_server, grpc_stubs):
    srv = private_server(models=["identity_fp32"], extra=["--grpc-max-concurrent-streams=3"])
    with g.Client(grpc_stubs, g.grpc_target(srv)) as gc:
        pb = gc.pb
    with _h2(srv) as c:
        # Three calls open (headers only: each waits for its message).
        for sid in (1, 3, 5):
            c.send_headers(sid, INFER_PATH)
        # The fourth is refused; the connection stays.
        c.send_headers(7, INFER_PATH)
        res = c.collect(7)
        assert res.rst == REFUSED_STREAM, res
        assert c.goaway is None, c.goaway
        # The open calls complete normally, and a new one is served.
        req, x = _request(pb, 1)
        c.send_data(1, g.grpc_message(req.SerializeToString()), end_stream=True)
        res = c.collect(1)
        assert res.ended and res.rst is None, res
        np.testing.assert_array_equal(
            g.outputs_of(pb.ModelInferResponse.FromString(res.grpc_messages()[0]))["OUTPUT0"], x)
        c.send_headers(9, INFER_PATH)
        c.send_data(9, g.grpc_message(req.SerializeToString()), end_stream=True)
        res = c.collect(9)
        assert res.ended and res.rst is None and len(res.grpc_messages()) == 1, res
    # grpcio keeps to the limit by itself: 12 calls at once on one channel
    # all succeed (queued by the client).
    with g.Client(grpc_stubs, g.grpc_target(srv)) as gc:
        futs = [gc.model_infer_future(_request(gc.pb, i)[0]) for i in range(12)]
        for i, f in enumerate(futs):
            np.testing.assert_array_equal(g.outputs_of(f.result(timeout=30))["OUTPUT0"],
                                          _request(gc.pb, i)[1])
    _serving(srv, grpc_stubs)


# ------------------------------------------------ header list size ---

@pytest.fixture
def small_headers(private_server):
    return private_server(models=["identity_fp32"], extra=["--grpc-max-header-list-size=4096"])


def test_header_list_too_big_refuses_the_call(small_headers, grpc_stubs):
    srv = small_headers
    with g.Client(grpc_stubs, g.grpc_target(srv)) as gc:
        req, x = _request(gc.pb)
        # Under the limit: served.
        resp = gc.model_infer(req, metadata=[("x-small", "v" * 1000)])
        np.testing.assert_array_equal(g.outputs_of(resp)["OUTPUT0"], x)
        # Over it: the call fails (grpcio may refuse it itself, having read
        # our SETTINGS; either way no answer comes from the model).
        e = g.rpc_error(gc.model_infer, req, metadata=[("x-big", "v" * 6000)])
        assert e.code() in (SC.RESOURCE_EXHAUSTED, SC.INTERNAL, SC.UNAVAILABLE), g.describe(e)
        # The channel still works.
        resp = gc.model_infer(req)
        np.testing.assert_array_equal(g.outputs_of(resp)["OUTPUT0"], x)
    with _h2(srv) as c:
        # A raw client ignoring our SETTINGS: the call is answered
        # RESOURCE_EXHAUSTED, the connection lives on.
        c.send_headers(1, LIVE_PATH, extra=[("x-big", "v" * 6000)])
        c.send_data(1, g.grpc_message(b""), end_stream=True)
        res = c.collect(1)
        assert res.ended and res.rst is None, res
        if res.headers() is not None:
            assert _status(res) == 8, res
            assert "header list" in (res.header("grpc-message") or ""), res
        c.send_headers(3, LIVE_PATH)
        c.send_data(3, g.grpc_message(b""), end_stream=True)
        res = c.collect(3)
        assert res.ended and res.rst is None and len(res.grpc_messages()) == 1, res
        assert c.goaway is None
    _serving(srv, grpc_stubs)


def test_header_block_far_past_the_limit_ends_the_connection(small_headers, grpc_stubs):
    """Over 64 KiB of headers (4x the limit, at least 64 KiB) in one block,
    spread over HEADERS and CONTINUATION frames: GOAWAY(ENHANCE_YOUR_CALM)."""
    srv = small_headers
    with _h2(srv) as c:
        block = g.grpc_request_headers(LIVE_PATH) + b"".join(
            g.hpack_literal(f"x-pad-{i}", "v" * 14000) for i in range(6))
        chunks = [block[i:i + 16000] for i in range(0, len(block), 16000)]
        out = frame(HEADERS, 0, 1, chunks[0])
        for i, ch in enumerate(chunks[1:], 1):
            out += frame(CONTINUATION, FLAG_END_HEADERS if i == len(chunks) - 1 else 0, 1, ch)
        c.send(out)
        frames, closed = _read_until_closed(c)
        assert closed, frames
        gs = _goaways(frames)
        assert gs and gs[-1][1] == ENHANCE_YOUR_CALM, frames
    assert "header block far beyond" in srv.log_tail()
    _serving(srv, grpc_stubs)


def test_hpack_bomb_ends_the_connection(small_headers, grpc_stubs):
    """One small HEADERS frame that decodes to far more than the limit
    (an entry of the dynamic table referenced over and over): counted as
    decoded, so GOAWAY(ENHANCE_YOUR_CALM)."""
    srv = small_headers
    with _h2(srv) as c:
        # Literal with incremental indexing (new name): enters the dynamic
        # table at index 62; then 200 one-byte references to it.
        name, value = b"x-bomb", b"v" * 3000
        block = g.grpc_request_headers(LIVE_PATH)
        block += b"\x40" + g._hpack_int(len(name), 7) + name + g._hpack_int(len(value), 7) + value
        block += g._hpack_int(62, 7, 0x80) * 200
        assert len(block) < 16384
        c.send(frame(HEADERS, FLAG_END_HEADERS | FLAG_END_STREAM, 1, block))
        frames, closed = _read_until_closed(c)
        assert closed, frames
        gs = _goaways(frames)
        assert gs and gs[-1][1] == ENHANCE_YOUR_CALM, frames
    _serving(srv, grpc_stubs)


def test_continuation_flood_is_cut(private_server, grpc_stubs):
    """HEADERS without END_HEADERS followed by endless empty CONTINUATION
    frames (CVE-2024-28182): the connection ends long before the flood."""
    srv = private_server(models=["identity_fp32"])
    with _h2(srv) as c:
        c.send(frame(HEADERS, 0, 1, g.grpc_request_headers(LIVE_PATH)))
        sent = 0
        try:
            for _ in range(200):
                c.send(frame(CONTINUATION, 0, 1, b"") * 50)
                sent += 50
        except (BrokenPipeError, ConnectionResetError):
            pass
        frames, closed = _read_until_closed(c)
        assert closed, (sent, frames)
        assert not any(f[0] == HEADERS for f in frames), frames
    _serving(srv, grpc_stubs)


# ------------------------------------------------------------- idle ---

def test_idle_connection_gets_goaway(private_server, grpc_stubs):
    srv = private_server(models=["identity_fp32"], extra=["--grpc-idle-timeout-secs=1"])
    with _h2(srv) as c:
        c.send_headers(1, LIVE_PATH)
        c.send_data(1, g.grpc_message(b""), end_stream=True)
        res = c.collect(1)
        assert res.ended, res
        frames, closed = _read_until_closed(c)
        assert closed, frames
        gs = _goaways(frames)
        assert gs == [(1, NO_ERROR, b"")], frames
    # A connection with a call open is not idle: still open after 2.5 s.
    with _h2(srv) as c:
        c.send_headers(1, INFER_PATH)
        frames, closed = _read_until_closed(c, timeout=2.5)
        assert not closed and not _goaways(frames), frames
        with g.Client(grpc_stubs, g.grpc_target(srv)) as gc:
            req, x = _request(gc.pb)
        c.send_data(1, g.grpc_message(req.SerializeToString()), end_stream=True)
        res = c.collect(1)
        assert res.ended and res.rst is None and len(res.grpc_messages()) == 1, res
    # grpcio reconnects by itself after the GOAWAY.
    with g.Client(grpc_stubs, g.grpc_target(srv)) as gc:
        assert gc.server_live().live
        time.sleep(1.5)
        assert gc.server_live().live
    _serving(srv, grpc_stubs)


def test_idle_timeout_zero_keeps_connections(private_server, grpc_stubs):
    srv = private_server(models=["identity_fp32"], extra=["--grpc-idle-timeout-secs=0",
                                                          "--grpc-keepalive-time=0"])
    with _h2(srv) as c:
        frames, closed = _read_until_closed(c, timeout=2.0)
        assert not closed and not _goaways(frames), frames


# -------------------------------------------------------- keepalive ---

KEEPALIVE = ["--grpc-keepalive-time=300", "--grpc-keepalive-timeout=500",
             "--grpc-keepalive-permit-without-calls=true"]


def _pings(frames):
    return [f for f in frames if f[0] == PING and not f[1] & FLAG_ACK]


def test_keepalive_closes_a_client_that_stops_answering(private_server, grpc_stubs):
    srv = private_server(models=["identity_fp32"], extra=KEEPALIVE)
    with _h2(srv) as c:
        frames, closed = _read_until_closed(c, ack_pings=False)
        assert closed, frames
        assert _pings(frames), frames
    _serving(srv, grpc_stubs)


def test_keepalive_pings_stop_without_data(private_server, grpc_stubs):
    """A client that answers keeps the connection; without data from the
    server, PINGs stop after --grpc-http2-max-pings-without-data (2)."""
    srv = private_server(models=["identity_fp32"], extra=KEEPALIVE)
    with _h2(srv) as c:
        seen = []
        deadline = time.monotonic() + 20
        while len(_pings(seen)) < 2 and time.monotonic() < deadline:
            frames, closed = _read_until_closed(c, timeout=0.5)
            assert not closed, seen + frames
            seen += frames
        assert len(_pings(seen)) == 2, seen
        frames, closed = _read_until_closed(c, timeout=1.5)
        assert not closed and not _pings(frames), frames
        # Data from the server re-enables them.
        c.send_headers(1, LIVE_PATH)
        c.send_data(1, g.grpc_message(b""), end_stream=True)
        deadline = time.monotonic() + 20
        more = []
        while not _pings(more) and time.monotonic() < deadline:
            frames, closed = _read_until_closed(c, timeout=0.5)
            assert not closed, more + frames
            more += frames
        assert _pings(more), more
    _serving(srv, grpc_stubs)


def test_keepalive_not_without_calls_by_default(private_server):
    srv = private_server(models=["identity_fp32"], extra=["--grpc-keepalive-time=200"])
    with _h2(srv) as c:
        frames, closed = _read_until_closed(c, timeout=1.5)
        assert not closed and not _pings(frames), frames
        # With a call open, the server pings.
        c.send_headers(1, INFER_PATH)
        seen = []
        deadline = time.monotonic() + 20
        while not _pings(seen) and time.monotonic() < deadline:
            frames, closed = _read_until_closed(c, timeout=0.5)
            assert not closed, seen + frames
            seen += frames
        assert _pings(seen), seen


def test_too_many_client_pings_get_goaway(private_server, grpc_stubs):
    """Without calls, gRPC core accepts one client PING per two hours; more
    than --grpc-http2-max-ping-strikes (2) early ones: GOAWAY
    (ENHANCE_YOUR_CALM, "too_many_pings")."""
    srv = private_server(models=["identity_fp32"])
    with _h2(srv) as c:
        for i in range(3):
            c.send(frame(PING, 0, 0, struct.pack(">Q", i)))
        frames, closed = _read_until_closed(c, timeout=1.5)
        assert not closed and not _goaways(frames), frames
        c.send(frame(PING, 0, 0, struct.pack(">Q", 9)))
        frames, closed = _read_until_closed(c)
        assert closed, frames
        gs = _goaways(frames)
        assert gs and gs[-1][1] == ENHANCE_YOUR_CALM and gs[-1][2] == b"too_many_pings", frames
    # Pings are fine when the server sends data in between (strikes reset).
    with _h2(srv) as c:
        for i in range(6):
            sid = 2 * i + 1
            c.send(frame(PING, 0, 0, struct.pack(">Q", i)))
            c.send_headers(sid, LIVE_PATH)
            c.send_data(sid, g.grpc_message(b""), end_stream=True)
            res = c.collect(sid)
            assert res.ended and res.goaway is None, res
    _serving(srv, grpc_stubs)


def test_grpcio_keepalive_client_is_not_refused(private_server, grpc_stubs):
    """A grpcio client with its own keepalive within the server's policy."""
    srv = private_server(models=["identity_fp32"], extra=["--grpc-http2-min-recv-ping-interval-without-data=100",
                                                          "--grpc-keepalive-permit-without-calls=true"])
    opts = list(g.CHANNEL_OPTIONS) + [("grpc.keepalive_time_ms", 200), ("grpc.keepalive_timeout_ms", 5000),
                                      ("grpc.keepalive_permit_without_calls", 1),
                                      ("grpc.http2.max_pings_without_data", 0)]
    with g.Client(grpc_stubs, g.grpc_target(srv), options=opts) as gc:
        for i in range(5):
            req, x = _request(gc.pb, i)
            np.testing.assert_array_equal(g.outputs_of(gc.model_infer(req))["OUTPUT0"], x)
            time.sleep(0.3)
    assert "too many PINGs" not in srv.log_tail()


# ------------------------------------------------------ rapid reset ---

def test_rapid_reset_gets_goaway(private_server, grpc_stubs):
    srv = private_server(models=["identity_fp32"], extra=["--grpc-max-resets-per-second=50"])
    with g.Client(grpc_stubs, g.grpc_target(srv)) as other:
        req, x = _request(other.pb)
        with _h2(srv) as c:
            # Under the bound: fine.
            out = b""
            for i in range(20):
                sid = 2 * i + 1
                out += frame(HEADERS, FLAG_END_HEADERS, sid, g.grpc_request_headers(INFER_PATH))
                out += frame(RST_STREAM, 0, sid, struct.pack(">I", CANCEL))
            c.send(out)
            frames, closed = _read_until_closed(c, timeout=1.0)
            assert not closed and not _goaways(frames), frames
            # Past it: GOAWAY(ENHANCE_YOUR_CALM), then the connection closes.
            out = b""
            for i in range(20, 1020):
                sid = 2 * i + 1
                out += frame(HEADERS, FLAG_END_HEADERS, sid, g.grpc_request_headers(INFER_PATH))
                out += frame(RST_STREAM, 0, sid, struct.pack(">I", CANCEL))
            try:
                c.send(out)
            except (BrokenPipeError, ConnectionResetError):
                pass
            frames, closed = _read_until_closed(c)
            assert closed, frames
            gs = _goaways(frames)
            assert gs and gs[-1][1] == ENHANCE_YOUR_CALM, frames
        # The other client was served all along.
        np.testing.assert_array_equal(g.outputs_of(other.model_infer(req))["OUTPUT0"], x)
    assert "rapid reset" in srv.log_tail()
    _serving(srv, grpc_stubs)


# ---------------------------------------------- connection buffer cap ---

def test_connection_buffer_cap(private_server, grpc_stubs):
    """Partial request messages of several calls on one connection add up to
    at most --grpc-max-connection-buffer-bytes: the call that would pass it
    gets RESOURCE_EXHAUSTED; the others go on."""
    srv = private_server(models=["identity_fp32"], extra=["--grpc-max-connection-buffer-bytes=1048576"])
    with g.Client(grpc_stubs, g.grpc_target(srv)) as gc:
        big, x = _request(gc.pb, 2, request_id="r" * 800000)
    msg = g.grpc_message(big.SerializeToString())
    assert len(msg) > 800000
    with _h2_acked(srv) as c:
        c.send_headers(1, INFER_PATH)
        for off in range(0, 592000, 16000):
            c.send_data(1, msg[off:off + 16000])
        c.send_headers(3, INFER_PATH)
        for off in range(0, 592000, 16000):
            c.send_data(3, msg[off:off + 16000])
        res3 = c.collect(3)
        assert res3.ended, res3
        if res3.headers() is not None:
            assert _status(res3) == 8, res3
            assert "buffered on the connection" in res3.header("grpc-message"), res3
        for off in range(592000, len(msg), 16000):
            c.send_data(1, msg[off:off + 16000], end_stream=off + 16000 >= len(msg))
        res1 = c.collect(1)
        assert res1.ended and res1.rst is None, res1
        assert res1.grpc_messages(), (res1, res1.headers())
        resp = grpc_stubs.pb.ModelInferResponse.FromString(res1.grpc_messages()[0])
        np.testing.assert_array_equal(g.outputs_of(resp)["OUTPUT0"], x)
    _serving(srv, grpc_stubs)


def test_connection_buffer_cap_responses(private_server, grpc_stubs):
    """The same for responses queued for a client that does not read (its
    flow-control window stays 0): the call whose response would pass the
    cap gets RESOURCE_EXHAUSTED; once the client reads, the first one's
    response arrives whole."""
    srv = private_server(models=["identity_fp32"], extra=["--grpc-max-connection-buffer-bytes=1048576"])
    with g.Client(grpc_stubs, g.grpc_target(srv)) as gc:
        big, x = _request(gc.pb, 4, request_id="q" * 700000)
    msg = g.grpc_message(big.SerializeToString())
    c = g.H2Conn(srv.grpc_port)
    c.start(settings=[(4, 0)])  # SETTINGS_INITIAL_WINDOW_SIZE = 0
    with c:
        c.sock.settimeout(20)
        while True:
            ftype, flags, _, _ = c.read_frame()
            if ftype == SETTINGS and not flags & FLAG_ACK:
                c.send(frame(SETTINGS, FLAG_ACK, 0))
                break
        for sid in (1, 3):
            c.send_headers(sid, INFER_PATH)
            for off in range(0, len(msg), 16000):
                c.send_data(sid, msg[off:off + 16000], end_stream=off + 16000 >= len(msg))
            if sid == 1:
                # Stream 1's response is queued (its HEADERS come, no DATA).
                deadline = time.monotonic() + 20
                while not c._stream(1).header_blocks and time.monotonic() < deadline:
                    c.sock.settimeout(max(0.1, deadline - time.monotonic()))
                    c._handle(*c.read_frame())
        res3 = c.collect(3)
        assert res3.ended and res3.data == b"", res3
        if res3.headers() is not None:
            assert _status(res3) == 8, res3
            assert "queued on the connection" in res3.header("grpc-message"), res3
        c.send(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 1 << 30)) +
               frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", 1 << 30)))
        res1 = c.collect(1)
        assert res1.ended and res1.rst is None and _status(res1) in (None, 0), res1
        resp = grpc_stubs.pb.ModelInferResponse.FromString(res1.grpc_messages()[0])
        assert resp.id == "q" * 700000
        np.testing.assert_array_equal(g.outputs_of(resp)["OUTPUT0"], x)
    _serving(srv, grpc_stubs)
