"""Malformed gRPC traffic: hand-written HTTP/2 frames on raw sockets, bad
paths, undecodable messages, clients that vanish. After every test a normal
ModelInfer must still succeed (autouse fixture below)."""

import struct
import time

import grpc
import numpy as np
import pytest

import grpc_helpers as g
from grpc_helpers import grpc_client, grpc_stubs  # noqa: F401  (fixtures)

SC = grpc.StatusCode
INFER_PATH = f"/{g.SERVICE}/ModelInfer"
STREAM_PATH = f"/{g.SERVICE}/ModelStreamInfer"


def _fp32_request(pb, seed=0):
    x = np.arange(16, dtype=np.float32).reshape(1, 16) + seed
    return g.infer_request(pb, "identity_fp32", [("INPUT0", "FP32", [1, 16], x)]), x


def _check_serving(client, seed):
    req, x = _fp32_request(client.pb, seed)
    resp = client.model_infer(req, timeout=10)
    np.testing.assert_array_equal(g.outputs_of(resp)["OUTPUT0"], x)


@pytest.fixture(autouse=True)
def still_serving(server, grpc_client):
    yield
    assert server.alive(), f"inferd died\n--- log tail ---\n{server.log_tail()}"
    # A fresh channel (a new connection) and the shared one both work.
    with g.Client(grpc_client.stubs, g.grpc_target(server)) as c:
        _check_serving(c, 11)
    _check_serving(grpc_client, 12)


def _h2(server):
    c = g.H2Conn(server.grpc_port)
    c.start()
    return c


def _grpc_status(res):
    """grpc-status of a finished raw stream, or None when the header block
    could not be decoded (no libnghttp2)."""
    hs = res.headers()
    if hs is None:
        return None
    v = res.header("grpc-status")
    assert v is not None, f"stream ended without grpc-status: {res!r}"
    return int(v)


# ----------------------------------------------------- raw HTTP/2 ---

def test_raw_control_valid_call(server, grpc_client):
    """Control for the raw client: a well-formed ModelInfer by hand gets
    :status 200, application/grpc, one response message and grpc-status 0."""
    req, x = _fp32_request(grpc_client.pb, 5)
    with _h2(server) as c:
        c.send_headers(1, INFER_PATH)
        c.send_data(1, g.grpc_message(req.SerializeToString()), end_stream=True)
        res = c.collect(1)
    assert res.ended and res.rst is None, res
    msgs = res.grpc_messages()
    assert len(msgs) == 1, res
    resp = grpc_client.pb.ModelInferResponse.FromString(msgs[0])
    np.testing.assert_array_equal(g.outputs_of(resp)["OUTPUT0"], x)
    if res.headers() is not None:
        assert res.header(":status") == "200", res
        assert (res.header("content-type") or "").startswith("application/grpc"), res
        assert _grpc_status(res) == 0, res


@pytest.mark.parametrize("value", [b"v ", b"v\t", b" v", b"a b "])
def test_raw_metadata_value_with_surrounding_whitespace(server, grpc_client, value):
    """A metadata value with leading or trailing whitespace is served, as
    tritonserver's gRPC stack serves it (nghttp2 resets such a stream with
    PROTOCOL_ERROR unless told not to check RFC 9113's rule)."""
    req, x = _fp32_request(grpc_client.pb, 6)
    with _h2(server) as c:
        c.send_headers(1, INFER_PATH, extra=[(b"x-custom", value)])
        c.send_data(1, g.grpc_message(req.SerializeToString()), end_stream=True)
        res = c.collect(1)
    assert res.ended and res.rst is None, res
    msgs = res.grpc_messages()
    assert len(msgs) == 1, res
    resp = grpc_client.pb.ModelInferResponse.FromString(msgs[0])
    np.testing.assert_array_equal(g.outputs_of(resp)["OUTPUT0"], x)


def test_raw_message_split_across_frames(server, grpc_client):
    """One gRPC message cut into 1-byte and odd-sized DATA frames is reassembled."""
    req, x = _fp32_request(grpc_client.pb, 6)
    msg = g.grpc_message(req.SerializeToString())
    with _h2(server) as c:
        c.send_headers(1, INFER_PATH)
        pieces = [msg[:1], msg[1:3], msg[3:5], msg[5:40], msg[40:]]
        for p in pieces[:-1]:
            c.send_data(1, p)
            time.sleep(0.01)
        c.send_data(1, pieces[-1], end_stream=True)
        res = c.collect(1)
    msgs = res.grpc_messages()
    assert len(msgs) == 1, res
    resp = grpc_client.pb.ModelInferResponse.FromString(msgs[0])
    np.testing.assert_array_equal(g.outputs_of(resp)["OUTPUT0"], x)


def test_raw_bad_length_prefix(server):
    """The 5-byte prefix claims 100 bytes; 10 come, then END_STREAM: the call
    fails (non-zero grpc-status or RST_STREAM) and carries no response message."""
    with _h2(server) as c:
        c.send_headers(1, INFER_PATH)
        c.send_data(1, struct.pack(">BI", 0, 100) + b"\x0a\x08identity", end_stream=True)
        res = c.collect(1)
    assert res.ended or res.rst is not None, f"the stream did not end properly: {res!r}"
    assert res.data == b"", f"a response message for a truncated request: {res!r}"
    if res.rst is None:
        st = _grpc_status(res)
        assert st is None or st != 0, res


def test_raw_compressed_flag_without_encoding(server, grpc_client):
    """Compressed-flag 1 with no grpc-encoding. The gRPC spec wants INTERNAL;
    grpc-core itself reads the message as uncompressed. Either is accepted:
    a failed call with no response message, or the right answer."""
    req, x = _fp32_request(grpc_client.pb, 4)
    with _h2(server) as c:
        c.send_headers(1, INFER_PATH)
        c.send_data(1, g.grpc_message(req.SerializeToString(), compressed=True), end_stream=True)
        res = c.collect(1)
    assert res.ended or res.rst is not None, res
    st = _grpc_status(res) if res.rst is None else None
    if res.data:
        msgs = res.grpc_messages()
        assert len(msgs) == 1 and st in (None, 0), res
        np.testing.assert_array_equal(g.outputs_of(grpc_client.pb.ModelInferResponse.FromString(msgs[0]))["OUTPUT0"], x)
    else:
        assert st is None or st != 0, res


def test_raw_unknown_path(server):
    with _h2(server) as c:
        c.send_headers(1, f"/{g.SERVICE}/NoSuchMethod")
        c.send_data(1, g.grpc_message(b""), end_stream=True)
        res = c.collect(1)
    assert res.ended or res.rst is not None, res
    assert res.data == b"", res
    if res.rst is None:
        st = _grpc_status(res)
        assert st is None or st == 12, res


def test_raw_two_messages_on_unary(server, grpc_client):
    """Two request messages on a unary method: the call fails (gRPC requires it)."""
    req, _ = _fp32_request(grpc_client.pb)
    m = g.grpc_message(req.SerializeToString())
    with _h2(server) as c:
        c.send_headers(1, INFER_PATH)
        c.send_data(1, m + m, end_stream=True)
        res = c.collect(1)
    assert res.ended or res.rst is not None, res
    if res.rst is None:
        st = _grpc_status(res)
        assert st is None or st != 0, res


def test_raw_many_streams_one_connection(server, grpc_client):
    """Ten calls interleaved on one connection (odd stream ids 1..19)."""
    pb = grpc_client.pb
    with _h2(server) as c:
        want = {}
        for k in range(10):
            sid = 2 * k + 1
            want[sid] = _fp32_request(pb, 100 + k)[1]
            c.send_headers(sid, INFER_PATH)
        for sid in want:
            req = g.infer_request(pb, "identity_fp32", [("INPUT0", "FP32", [1, 16], want[sid])])
            c.send_data(sid, g.grpc_message(req.SerializeToString()), end_stream=True)
        for sid, x in want.items():
            res = c.collect(sid)
            msgs = res.grpc_messages()
            assert len(msgs) == 1, (sid, res)
            np.testing.assert_array_equal(g.outputs_of(pb.ModelInferResponse.FromString(msgs[0]))["OUTPUT0"], x)


def test_client_vanishes_mid_message(server):
    """Preface, HEADERS, then half of a DATA frame (and half a gRPC message),
    then the socket closes."""
    with _h2(server) as c:
        c.send_headers(1, INFER_PATH)
        payload = struct.pack(">BI", 0, 200) + b"\x0a\x0didentity_fp32"
        hdr = struct.pack(">BHBBI", 0, 300, g.DATA, 0, 1)   # claims 300 bytes
        c.send(hdr + payload)
    time.sleep(0.1)


def test_client_vanishes_mid_stream(server, grpc_client):
    """A ModelStreamInfer with one full request, then half a frame, then gone."""
    req, _ = _fp32_request(grpc_client.pb)
    m = g.grpc_message(req.SerializeToString())
    with _h2(server) as c:
        c.send_headers(1, STREAM_PATH)
        c.send_data(1, m)
        c.send(struct.pack(">BHBBI", 0, len(m), g.DATA, 0, 1) + m[: len(m) // 2])
    time.sleep(0.1)


def test_client_vanishes_with_call_in_flight(server, grpc_client):
    """A complete call to identity_delay (200 ms), and the client closes before
    the answer: the server must not trip over the dead connection."""
    pb = grpc_client.pb
    req = g.infer_request(pb, "identity_delay", [("INPUT0", "INT32", [1], np.array([1], np.int32))])
    with _h2(server) as c:
        c.send_headers(1, INFER_PATH)
        c.send_data(1, g.grpc_message(req.SerializeToString()), end_stream=True)
    time.sleep(0.3)


def test_client_rst_stream_in_flight(server, grpc_client):
    """RST_STREAM(CANCEL) on a call in flight; then the same connection carries a new call."""
    pb = grpc_client.pb
    req = g.infer_request(pb, "identity_delay", [("INPUT0", "INT32", [1], np.array([1], np.int32))])
    ok, x = _fp32_request(pb, 9)
    with _h2(server) as c:
        c.send_headers(1, INFER_PATH)
        c.send_data(1, g.grpc_message(req.SerializeToString()), end_stream=True)
        time.sleep(0.05)
        c.send(g.frame(g.RST_STREAM, 0, 1, struct.pack(">I", 8)))   # CANCEL
        c.send_headers(3, INFER_PATH)
        c.send_data(3, g.grpc_message(ok.SerializeToString()), end_stream=True)
        res = c.collect(3)
        msgs = res.grpc_messages()
        assert len(msgs) == 1, res
        np.testing.assert_array_equal(g.outputs_of(pb.ModelInferResponse.FromString(msgs[0]))["OUTPUT0"], x)
        time.sleep(0.25)   # let the cancelled execution finish with the connection still open


@pytest.mark.parametrize("garbage", [
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"\x00" * 64,
    b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n" + b"\xff" * 32,
], ids=["http1", "zeros", "bad-preface-tail"])
def test_garbage_instead_of_preface(server, garbage):
    c = g.H2Conn(server.grpc_port)   # no preface sent
    try:
        try:
            c.send(garbage)
        except (BrokenPipeError, ConnectionResetError):
            return   # closed already
        assert c.wait_closed(10), "the server kept a connection open after a bad preface"
    finally:
        c.close()


def test_garbage_frames_after_preface(server, grpc_client):
    """A valid preface, then a DATA frame on stream 0 (a connection error in
    RFC 9113; grpc-core ignores it), then a valid call on that connection: the
    server either ends the connection (close or GOAWAY with an error code) or
    still answers the call correctly; it must not leave it hanging."""
    req, x = _fp32_request(grpc_client.pb, 8)
    with _h2(server) as c:
        c.send(g.frame(g.DATA, 0, 0, b"xxxx"))
        try:
            c.send_headers(1, INFER_PATH)
            c.send_data(1, g.grpc_message(req.SerializeToString()), end_stream=True)
        except (BrokenPipeError, ConnectionResetError):
            return
        res = c.collect(1)
        if res.eof or (c.goaway is not None and c.goaway[1] != 0):
            return
        msgs = res.grpc_messages()
        assert len(msgs) == 1, res
        np.testing.assert_array_equal(g.outputs_of(grpc_client.pb.ModelInferResponse.FromString(msgs[0]))["OUTPUT0"], x)


def test_headers_then_close_without_data(server):
    with _h2(server) as c:
        c.send_headers(1, INFER_PATH)
    time.sleep(0.05)


# ------------------------------------------------- via grpcio ---

def test_unknown_method_unimplemented(grpc_client):
    e = g.rpc_error(grpc_client.raw_unary, f"/{g.SERVICE}/NoSuchMethod", b"")
    assert e.code() == SC.UNIMPLEMENTED, g.describe(e)
    e = g.rpc_error(grpc_client.raw_unary, "/no.such.Service/Call", b"")
    assert e.code() == SC.UNIMPLEMENTED, g.describe(e)


@pytest.mark.parametrize("payload", [
    b"\xff\xff\xff",                      # truncated varint tag
    b"\x0a\x64identity",                  # field 1 claims 100 bytes, 8 there
    b"\x0b\x00",                          # start group on field 1, then tag 0
    b"\x2a\x05\x0a\x08abc",               # inputs[0] holds a name claiming 8 bytes, 3 there
], ids=["varint", "truncated-len", "group", "nested-truncated"])
def test_garbage_protobuf_invalid_argument(grpc_client, payload):
    e = g.rpc_error(grpc_client.raw_unary, INFER_PATH, payload)
    assert e.code() == SC.INVALID_ARGUMENT, g.describe(e)


def test_garbage_protobuf_on_stream(grpc_client):
    """An undecodable message on ModelStreamInfer: an error (in-stream
    error_message or the call's status), never a crash."""
    c = grpc_client.channel.stream_stream(STREAM_PATH, request_serializer=lambda b: b,
                                          response_deserializer=grpc_client.pb.ModelStreamInferResponse.FromString)
    call = c(iter([b"\xff\xff\xff"]), timeout=10)
    try:
        resps = list(call)
    except grpc.RpcError as e:
        assert e.code() == SC.INVALID_ARGUMENT, g.describe(e)
        return
    assert len(resps) == 1 and resps[0].error_message, resps


def test_empty_message_is_a_valid_request(grpc_client):
    """Zero bytes decode to an empty ModelInferRequest (no model name): an
    argument error, not a transport one."""
    e = g.rpc_error(grpc_client.raw_unary, INFER_PATH, b"")
    assert e.code() in (SC.INVALID_ARGUMENT, SC.NOT_FOUND), g.describe(e)
