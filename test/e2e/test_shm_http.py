"""Triton's shared-memory extensions over HTTP (features.md section 5 and
"Read first" items 9 and 12).

System shared memory: regions registered by name on a POSIX shared-memory
object (Python's multiprocessing.shared_memory), inputs read from them and
outputs written into them, every status code and message of section 5,
tensors in shared memory mixed with JSON and binary ones, a region
unregistered while a request uses it (it stays mapped until the request
ends), 1,000 register/unregister cycles with no mapping left behind, several
regions on one key and a region at a non-zero offset (two Triton defects we
do not copy), an ensemble's input and output in shared memory, and the
restricted-API category "shared-memory". CUDA shared memory on a machine
without a GPU: Triton's refusals.
"""

import base64
import json
import os
import shutil
import socket
import struct
import threading
import time
import uuid
from multiprocessing import shared_memory

import numpy as np
import pytest
import requests

import e2e_helpers as h

ENS_REPO = h.REPO_ROOT / "test" / "models" / "ens_repo"
JSON_CT = "application/json"
TEXT_CT = "text/plain"


# ------------------------------------------------------------ helpers ---

class Shm:
    """A POSIX shared-memory object of this test: key "/<name>"."""

    def __init__(self, size):
        self.name = f"inferd_t_{os.getpid()}_{uuid.uuid4().hex[:10]}"
        self.shm = shared_memory.SharedMemory(name=self.name, create=True, size=size)
        self.key = "/" + self.name

    def write(self, offset, raw):
        self.shm.buf[offset:offset + len(raw)] = raw

    def read(self, offset, n):
        return bytes(self.shm.buf[offset:offset + n])

    def ints(self, offset, n):
        return list(struct.unpack(f"<{n}i", self.read(offset, 4 * n)))

    def close(self):
        self.shm.close()
        try:
            self.shm.unlink()
        except FileNotFoundError:
            pass


@pytest.fixture
def shms():
    made = []

    def make(size=8192):
        s = Shm(size)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


@pytest.fixture
def srv(private_server):
    return private_server(models=["identity_int32", "identity_multi", "sleep"],
                          wait_models=("identity_int32", "identity_multi", "sleep"))


def register(s, name, key, byte_size=None, offset=None, cuda=False):
    body = {"key": key}
    if offset is not None:
        body["offset"] = offset
    if byte_size is not None:
        body["byte_size"] = byte_size
    kind = "cudasharedmemory" if cuda else "systemsharedmemory"
    return s.post(f"/v2/{kind}/region/{name}/register", json=body)


def unregister(s, name=None):
    path = "/v2/systemsharedmemory" + (f"/region/{name}" if name else "") + "/unregister"
    return s.post(path)


def status(s, name=None, kind="systemsharedmemory"):
    return s.get(f"/v2/{kind}" + (f"/region/{name}" if name else "") + "/status")


def ok_empty(r):
    assert r.status_code == 200, (r.status_code, r.text)
    assert r.headers["Content-Type"] == JSON_CT, r.headers
    assert r.content == b"", r.content


def err(r, code, text, ctype=JSON_CT):
    assert r.status_code == code, (r.status_code, r.text)
    assert r.headers["Content-Type"] == ctype, r.headers
    assert h.error_of(r) == text, h.error_of(r)


def shm_params(region, byte_size=None, offset=None):
    p = {"shared_memory_region": region}
    if byte_size is not None:
        p["shared_memory_byte_size"] = byte_size
    if offset is not None:
        p["shared_memory_offset"] = offset
    return p


def shm_input(name, dt, shape, region, byte_size=None, offset=None):
    return {"name": name, "datatype": dt, "shape": shape,
            "parameters": shm_params(region, byte_size, offset)}


def shm_output(name, region, byte_size=None, offset=None):
    return {"name": name, "parameters": shm_params(region, byte_size, offset)}


def infer(s, model, inputs, outputs=None, parameters=None):
    body = {"inputs": inputs}
    if outputs is not None:
        body["outputs"] = outputs
    if parameters is not None:
        body["parameters"] = parameters
    return s.post(f"/v2/models/{model}/infer", json=body)


def maps_lines(pid):
    with open(f"/proc/{pid}/maps") as f:
        return f.read().splitlines()


def wait_for(pred, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def int32s(*v):
    return np.asarray(v, dtype=np.int32).tobytes()


# ------------------------------------------ section 5: registration ---

def test_section5_register_status(srv, shms):
    s = srv
    a, b, c, d, e = shms(), shms(), shms(), shms(), shms()
    assert status(s).json() == []
    assert status(s).headers["Content-Type"] == JSON_CT
    ok_empty(register(s, "input_region", a.key, 64, 0))
    ok_empty(register(s, "output_region", b.key, 64, 0))
    err(s.post("/v2/systemsharedmemory/region/nokey_region/register",
               json={"offset": 0, "byte_size": 64}),
        400, "Shared memory register request has no 'key' field")
    err(s.post("/v2/systemsharedmemory/region/nosize_region/register",
               json={"key": c.key, "offset": 0}),
        400, "Shared memory register request has no 'byte_size' field")
    ok_empty(register(s, "nooffset_region", c.key, 64))
    err(register(s, "input_region", a.key, 64, 0),
        400, "shared memory region 'input_region' already in manager")
    err(register(s, "past_region", d.key, 64, 12288),
        400, "failed to register shared memory region 'past_region': invalid args")
    err(register(s, "over_region", d.key, 8192, 4096),
        400, "failed to register shared memory region 'over_region': invalid args")
    err(register(s, "zero_region", d.key, 0, 0),
        400, "failed to register shared memory region 'zero_region': "
             "unable to process address spaceInvalid argument")
    err(register(s, "odd_region", d.key, 64, 16),
        400, "failed to register shared memory region 'odd_region': "
             "unable to process address spaceInvalid argument")
    ok_empty(register(s, "page_region", e.key, 64, 4096))
    err(register(s, "missing_region", "/inferd_features_nope", 64, 0),
        500, "Unable to open shared memory region: '/inferd_features_nope'")
    # Not JSON: 400 (Triton answers 500 for this client mistake).
    r = s.post("/v2/systemsharedmemory/region/x/register", data=b"{,}")
    assert r.status_code == 400, r.text
    assert h.error_of(r).startswith("failed to parse the request JSON buffer"), r.text
    r = s.post("/v2/systemsharedmemory/region/x/register", json={"key": 5, "byte_size": 64})
    assert r.status_code == 400, r.text
    r = s.post("/v2/systemsharedmemory/region/x/register",
               json={"key": a.key, "byte_size": -1})
    assert r.status_code == 400, r.text

    want = [
        {"name": "input_region", "key": a.key, "offset": 0, "byte_size": 64},
        {"name": "nooffset_region", "key": c.key, "offset": 0, "byte_size": 64},
        {"name": "output_region", "key": b.key, "offset": 0, "byte_size": 64},
        {"name": "page_region", "key": e.key, "offset": 4096, "byte_size": 64},
    ]
    r = status(s)
    assert r.status_code == 200 and r.headers["Content-Type"] == JSON_CT
    assert sorted(r.json(), key=lambda x: x["name"]) == want
    assert status(s, "input_region").json() == [want[0]]
    err(status(s, "nope"), 404, "Unable to find system shared memory region: 'nope'")
    # Region names are percent-decoded like model names.
    ok_empty(register(s, "with%20space", a.key, 64))
    assert status(s, "with%20space").json()[0]["name"] == "with space"

    # Methods.
    assert s.get("/v2/systemsharedmemory/region/a/register").status_code == 405
    assert s.post("/v2/systemsharedmemory/status").status_code == 405
    assert s.get("/v2/systemsharedmemory/unregister").status_code == 405

    ok_empty(unregister(s, "output_region"))
    names = [x["name"] for x in status(s).json()]
    assert "output_region" not in names and "input_region" in names
    ok_empty(unregister(s, "nope"))
    ok_empty(unregister(s))
    assert status(s).json() == []


# ------------------------------------------- section 5: inference ---

def test_section5_inference(srv, shms):
    s = srv
    a, b = shms(), shms()
    ok_empty(register(s, "input_region", a.key, 64, 0))
    ok_empty(register(s, "output_region", b.key, 64, 0))
    a.write(0, int32s(1, 2, 3, 4))

    # Input and output in shared memory: the output carries no data.
    r = infer(s, "identity_int32", [shm_input("INPUT0", "INT32", [1, 4], "input_region", 16)],
              [shm_output("OUTPUT0", "output_region", 64)])
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == JSON_CT
    assert r.json()["outputs"] == [{"name": "OUTPUT0", "datatype": "INT32", "shape": [1, 4]}]
    assert b.ints(0, 4) == [1, 2, 3, 4]

    # Input in shared memory, output as JSON.
    r = infer(s, "identity_int32", [shm_input("INPUT0", "INT32", [1, 4], "input_region", 16)])
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["data"] == [1, 2, 3, 4]

    # At offset 16 of the region.
    r = infer(s, "identity_int32",
              [shm_input("INPUT0", "INT32", [1, 2], "input_region", 8, 8)])
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["data"] == [3, 4]

    x = [shm_input("INPUT0", "INT32", [1, 4], "input_region", 16)]
    err(infer(s, "identity_int32", [shm_input("INPUT0", "INT32", [1, 4], "nope", 16)]),
        404, "Unable to find shared memory region: 'nope'")
    err(infer(s, "identity_int32", x, [shm_output("OUTPUT0", "nope", 16)]),
        404, "Unable to find shared memory region: 'nope'")
    err(infer(s, "identity_int32", [shm_input("INPUT0", "INT32", [1, 4], "input_region", 128)]),
        400, "Invalid offset + byte size for shared memory region: 'input_region'")
    err(infer(s, "identity_int32",
              [shm_input("INPUT0", "INT32", [1, 4], "input_region", 16, 56)]),
        400, "Invalid offset + byte size for shared memory region: 'input_region'")
    r = infer(s, "identity_int32", [shm_input("INPUT0", "INT32", [1, 4], "input_region", 12)])
    assert r.status_code == 400, r.text
    assert "input byte size mismatch for input 'INPUT0' for model 'identity_int32'. " \
           "Expected 16, got 12" in h.error_of(r)
    err(infer(s, "identity_int32", x, [shm_output("OUTPUT0", "output_region", 128)]),
        400, "Invalid offset + byte size for shared memory region: 'output_region'")
    # An error that comes in the response: text/plain, as Triton.
    err(infer(s, "identity_int32", x, [shm_output("OUTPUT0", "output_region", 8)]),
        500, "shared memory size specified with the request for output 'OUTPUT0' "
             "(8 bytes) should be at least 16 bytes to hold the results", TEXT_CT)
    err(infer(s, "identity_int32", [shm_input("INPUT0", "INT32", [1, 4], "input_region")]),
        400, "Invalid offset + byte size for shared memory region: 'input_region'")
    both = shm_input("INPUT0", "INT32", [1, 4], "input_region", 16)
    both["data"] = [1, 2, 3, 4]
    err(infer(s, "identity_int32", [both]),
        400, "Input must set only one of the following fields: 'data', 'binary_data_size' "
             "in 'parameters', 'shared_memory_region' in 'parameters'. But set 'data' "
             "'shared_memory_region'")
    err(infer(s, "identity_int32", x,
              [{"name": "OUTPUT0", "parameters": {"shared_memory_region": "output_region",
                                                  "shared_memory_byte_size": 16,
                                                  "binary_data": True}}]),
        400, "Output can't set both 'shared_memory_region' and 'binary_data'")

    ok_empty(unregister(s))
    err(infer(s, "identity_int32", x),
        404, "Unable to find shared memory region: 'input_region'")
    # The server kept serving throughout.
    r = h.infer_json(s, "identity_int32", [("INPUT0", "INT32", [1, 2], [7, 8])])
    assert r.status_code == 200 and r.json()["outputs"][0]["data"] == [7, 8]


def test_offsets_in_the_uint64_range(srv, shms):
    """Offsets are read as uint64, as Triton reads them (jansson stopped at
    INT64_MAX with "too big integer"): one at or past the region's end gets
    Triton's "Invalid offset" text, checked before the byte size."""
    s = srv
    a, b = shms(), shms()
    ok_empty(register(s, "input_region", a.key, 64, 0))
    ok_empty(register(s, "output_region", b.key, 64, 0))
    a.write(0, int32s(1, 2, 3, 4))
    x = [shm_input("INPUT0", "INT32", [1, 4], "input_region", 16)]
    for off in (64, 2 ** 63, 2 ** 64 - 32, 2 ** 64 - 1):
        err(infer(s, "identity_int32",
                  [shm_input("INPUT0", "INT32", [1, 4], "input_region", 16, off)]),
            400, "Invalid offset for shared memory region: 'input_region'")
        err(infer(s, "identity_int32", x, [shm_output("OUTPUT0", "output_region", 16, off)]),
            400, "Invalid offset for shared memory region: 'output_region'")
    # In range, but the byte size runs past the end: the other text.
    err(infer(s, "identity_int32",
              [shm_input("INPUT0", "INT32", [1, 4], "input_region", 2 ** 64 - 1, 8)]),
        400, "Invalid offset + byte size for shared memory region: 'input_region'")
    # Beyond uint64: still a parse error.
    r = s.post("/v2/models/identity_int32/infer",
               data=json.dumps({"inputs": x}).replace("16}", "18446744073709551616}"))
    assert r.status_code == 400, r.text
    assert h.error_of(r).startswith("failed to parse the request JSON buffer"), r.text
    # Registration reads its integers as uint64 too: the table refuses the
    # offset, the parser does not.
    r = register(s, "huge_region", a.key, 64, 2 ** 64 - 1)
    assert r.status_code == 400, r.text
    assert h.error_of(r).startswith(
        "failed to register shared memory region 'huge_region'"), r.text
    r = register(s, "huge_region", a.key, 2 ** 64 - 1, 0)
    assert r.status_code == 400, r.text
    assert h.error_of(r).startswith(
        "failed to register shared memory region 'huge_region'"), r.text
    # The first of two members of one name counts, as in Triton's reader.
    r = s.post("/v2/systemsharedmemory/region/dup_region/register",
               data=('{"key": "%s", "byte_size": 64, "byte_size": -1}' % a.key))
    ok_empty(r)
    assert status(s, "dup_region").json()[0]["byte_size"] == 64


def test_mixed_json_binary_shm(srv, shms):
    """JSON, binary and shared-memory tensors in one request, answered in the
    binary form (a binary output beside a placed one) and as JSON."""
    s = srv
    a, b = shms(), shms()
    ok_empty(register(s, "in", a.key, 4096))
    ok_empty(register(s, "out", b.key, 4096))
    a.write(0, int32s(10, 20, 30))

    # INPUT0 binary, INPUT1 in shared memory; OUTPUT0 binary, OUTPUT1 placed.
    raw0 = np.asarray([[1.5, -2.0]], dtype=np.float32).tobytes()
    hdr = {
        "inputs": [
            {"name": "INPUT0", "datatype": "FP32", "shape": [1, 2],
             "parameters": {"binary_data_size": len(raw0)}},
            shm_input("INPUT1", "INT32", [1, 3], "in", 12),
        ],
        "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}},
                    shm_output("OUTPUT1", "out", 12, 64)],
    }
    text = json.dumps(hdr).encode()
    r = s.post("/v2/models/identity_multi/infer", data=text + raw0,
               headers={"Inference-Header-Content-Length": str(len(text)),
                        "Content-Type": "application/octet-stream"})
    assert r.status_code == 200, r.text
    header, values = h.parse_infer_response(r)
    outs = {o["name"]: o for o in header["outputs"]}
    assert outs["OUTPUT1"] == {"name": "OUTPUT1", "datatype": "INT32", "shape": [1, 3]}
    assert values["OUTPUT0"].tolist() == [[1.5, -2.0]]
    assert b.ints(64, 3) == [10, 20, 30]

    # INPUT0 as JSON, INPUT1 in shared memory at an offset; OUTPUT0 placed,
    # OUTPUT1 as JSON.
    a.write(128, int32s(-1, -2, -3))
    r = infer(s, "identity_multi",
              [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 2], "data": [0.25, 4]},
               shm_input("INPUT1", "INT32", [1, 3], "in", 12, 128)],
              [shm_output("OUTPUT0", "out", 8), {"name": "OUTPUT1"}])
    assert r.status_code == 200, r.text
    outs = {o["name"]: o for o in r.json()["outputs"]}
    assert "data" not in outs["OUTPUT0"] and outs["OUTPUT1"]["data"] == [-1, -2, -3]
    assert np.frombuffer(b.read(0, 8), dtype=np.float32).tolist() == [0.25, 4.0]

    # binary_data_output for the whole request: the placed output still
    # carries no data, the other one is binary.
    r = infer(s, "identity_multi",
              [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]},
               shm_input("INPUT1", "INT32", [1, 3], "in", 12)],
              [{"name": "OUTPUT0"}, shm_output("OUTPUT1", "out", 12, 256)],
              parameters={"binary_data_output": True})
    assert r.status_code == 200, r.text
    header, values = h.parse_infer_response(r)
    assert values["OUTPUT0"].tolist() == [[1.0, 2.0]]
    assert values["OUTPUT1"] is None
    assert b.ints(256, 3) == [10, 20, 30]
    ok_empty(unregister(s))


def test_several_regions_one_key_and_offset(srv, shms):
    """Two regions on one key (Triton reuses a closed descriptor) and a
    region at offset 4096 whose offset is applied once (Triton adds it twice)."""
    s = srv
    k = shms(3 * 4096)
    ok_empty(register(s, "lo", k.key, 4096, 0))
    ok_empty(register(s, "hi", k.key, 4096, 4096))
    ok_empty(register(s, "top", k.key, 4096, 8192))
    k.write(4096, int32s(5, 6, 7, 8))
    k.write(8192 + 32, int32s(42, 43))
    r = infer(s, "identity_int32", [shm_input("INPUT0", "INT32", [1, 4], "hi", 16)],
              [shm_output("OUTPUT0", "lo", 16, 16)])
    assert r.status_code == 200, r.text
    assert k.ints(16, 4) == [5, 6, 7, 8]
    r = infer(s, "identity_int32", [shm_input("INPUT0", "INT32", [1, 2], "top", 8, 32)])
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["data"] == [42, 43]
    # One region going leaves the others on the key working.
    ok_empty(unregister(s, "lo"))
    r = infer(s, "identity_int32", [shm_input("INPUT0", "INT32", [1, 4], "hi", 16)])
    assert r.status_code == 200 and r.json()["outputs"][0]["data"] == [5, 6, 7, 8]
    ok_empty(unregister(s))


def test_unregister_while_in_use(srv, shms):
    """An infer request and an unregister of its regions pipelined on one
    connection: the infer resolves its regions first, the unregister frees
    the names at once, and the mappings stay until the request ends."""
    s = srv
    a = shms(4096)
    ok_empty(register(s, "busy_in", a.key, 64))
    ok_empty(register(s, "busy_out", a.key, 64, 0))
    a.write(0, int32s(1500))  # the sleep model sleeps IN milliseconds
    body = json.dumps({"inputs": [shm_input("IN", "INT32", [1], "busy_in", 4)],
                       "outputs": [shm_output("OUT", "busy_out", 4, 32)]}).encode()
    req = (b"POST /v2/models/sleep/infer HTTP/1.1\r\nHost: x\r\n"
           b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body +
           b"POST /v2/systemsharedmemory/unregister HTTP/1.1\r\nHost: x\r\n"
           b"Content-Length: 0\r\n\r\n")
    pid = srv.proc.pid
    with h.RawConn(srv.port) as conn:
        conn.send(req)
        # The names are gone at once, while the request sleeps.
        assert wait_for(lambda: status(s).json() == []), status(s).text
        r = infer(s, "identity_int32", [shm_input("INPUT0", "INT32", [1], "busy_in", 4)])
        assert r.status_code == 404, r.text
        # The mapping is still there unless the request already ended (a
        # very slow machine): then there is nothing left to check here.
        conn.sock.setblocking(False)
        try:
            ended = conn.sock.recv(1, socket.MSG_PEEK) != b""
        except BlockingIOError:
            ended = False
        conn.sock.settimeout(h.HTTP_TIMEOUT_S)
        if not ended:
            assert any(a.name in line for line in maps_lines(pid))
        r1 = conn.read_response()
        assert r1.status == 200, r1
        assert r1.json()["outputs"] == [{"name": "OUT", "datatype": "INT32", "shape": [1]}]
        r2 = conn.read_response()
        assert r2.status == 200 and r2.body == b"", r2
    assert a.ints(32, 1) == [1500]
    # Unmapped once the request is gone.
    assert wait_for(lambda: not any(a.name in line for line in maps_lines(pid))), \
        [line for line in maps_lines(pid) if a.name in line]


def test_register_unregister_cycles_leak_nothing(srv, shms):
    s = srv
    k = shms(2 * 4096)
    pid = srv.proc.pid
    for _ in range(20):  # warm up: the thread pool, malloc arenas
        ok_empty(register(s, "cyc", k.key, 4096, 4096))
        ok_empty(unregister(s, "cyc"))
    before = len(maps_lines(pid))
    for i in range(1000):
        r = register(s, "cyc", k.key, 4096, 4096 * (i % 2))
        assert r.status_code == 200, (i, r.text)
        r = unregister(s, "cyc" if i % 3 else None)
        assert r.status_code == 200, (i, r.text)
    lines = maps_lines(pid)
    assert not [line for line in lines if k.name in line]
    # A leak would leave one line per cycle; a few lines may move with the
    # allocator.
    assert len(lines) <= before + 4, (before, len(lines))
    assert status(s).json() == []


def test_ensemble_input_output_in_shm(private_server, tmp_path, shms):
    repo = tmp_path / "ens"
    for m in ("ensemble_identity", "step1_identity", "step2_identity"):
        shutil.copytree(ENS_REPO / m, repo / m)
    s = private_server(repos=[repo], wait_models=("ensemble_identity",))
    a, b = shms(), shms()
    ok_empty(register(s, "ein", a.key, 4096))
    ok_empty(register(s, "eout", b.key, 4096, 4096))
    a.write(0, int32s(9, 8, 7))
    r = infer(s, "ensemble_identity", [shm_input("IN", "INT32", [1, 3], "ein", 12)],
              [shm_output("OUT", "eout", 12, 100)])
    assert r.status_code == 200, r.text
    assert r.json()["outputs"] == [{"name": "OUT", "datatype": "INT32", "shape": [1, 3]}]
    assert b.ints(4096 + 100, 3) == [9, 8, 7]
    # An output region too small for the ensemble's output.
    r = infer(s, "ensemble_identity", [shm_input("IN", "INT32", [1, 3], "ein", 12)],
              [shm_output("OUT", "eout", 8)])
    err(r, 500, "shared memory size specified with the request for output 'OUT' "
                "(8 bytes) should be at least 12 bytes to hold the results", TEXT_CT)
    ok_empty(unregister(s))


# ------------------------------------------------------- restricted ---

def test_restricted_shared_memory(private_server, shms):
    s = private_server(models=["identity_int32"], wait_models=("identity_int32",),
                       extra=["--http-restricted-api=shared-memory:shm-key=k1"])
    a = shms()
    hdr = {"shm-key": "k1"}
    refused = {"error": "This API is restricted, expecting header 'shm-key'"}
    for r in (status(s), status(s, "x"), register(s, "r", a.key, 64), unregister(s),
              unregister(s, "r"), status(s, kind="cudasharedmemory"),
              s.post("/v2/cudasharedmemory/region/c/register", json={}),
              s.post("/v2/cudasharedmemory/unregister")):
        assert r.status_code == 403, r.text
        assert r.headers["Content-Type"] == "text/plain"
        assert r.json() == refused
    ok_empty(s.post("/v2/systemsharedmemory/region/r/register",
                    json={"key": a.key, "byte_size": 64}, headers=hdr))
    assert s.get("/v2/systemsharedmemory/status", headers=hdr).json()[0]["name"] == "r"
    # Inference is another category: open.
    a.write(0, int32s(3))
    r = infer(s, "identity_int32", [shm_input("INPUT0", "INT32", [1, 1], "r", 4)])
    assert r.status_code == 200 and r.json()["outputs"][0]["data"] == [3]
    ok_empty(s.post("/v2/systemsharedmemory/unregister", headers=hdr))


# ------------------------------------------------------------- CUDA ---

def _cuda():
    """The CUDA runtime through ctypes (test_shm_grpc.py's helper)."""
    from test_shm_grpc import cuda
    return cuda()


def _has_gpu():
    return _cuda().devices > 0


@pytest.mark.gpu
def test_cuda_shared_memory_on_gpu(srv):
    """With a GPU: a device allocation's IPC handle (base64) registers,
    shows in the CUDA status only, refuses its name twice, is resolved (and
    bounds-checked) by requests, and unregisters."""
    rt = _cuda()
    if rt.devices == 0:
        pytest.skip("no CUDA device (or no libcudart): CUDA shared memory needs a GPU "
                    "(make test-gpu)")
    s = srv
    d = rt.malloc(64)
    try:
        rt.to_device(d, np.array([5, 6, 7, 8], dtype=np.int32))
        body = {"raw_handle": {"b64": base64.b64encode(rt.ipc_handle(d)).decode()},
                "device_id": 0, "byte_size": 64}
        ok_empty(s.post("/v2/cudasharedmemory/region/gpu_in/register", json=body))
        try:
            assert status(s, kind="cudasharedmemory").json() == [
                {"name": "gpu_in", "device_id": 0, "byte_size": 64}]
            assert status(s, "gpu_in", kind="cudasharedmemory").json()[0]["name"] == "gpu_in"
            assert status(s).json() == []
            err(s.post("/v2/cudasharedmemory/region/gpu_in/register", json=body),
                400, "shared memory region 'gpu_in' already in manager")
            err(infer(s, "identity_int32",
                      [shm_input("INPUT0", "INT32", [1, 4], "gpu_in", 16, 56)]),
                400, "Invalid offset + byte size for shared memory region: 'gpu_in'")
            assert list(rt.from_device(d, np.int32, 4)) == [5, 6, 7, 8]
        finally:
            ok_empty(s.post("/v2/cudasharedmemory/region/gpu_in/unregister"))
        assert status(s, kind="cudasharedmemory").json() == []
    finally:
        rt.free(d)


def test_cuda_shared_memory_without_gpu(srv):
    s = srv
    handle = base64.b64encode(bytes(64)).decode()
    body = {"raw_handle": {"b64": handle}, "device_id": 0, "byte_size": 64}
    assert status(s, kind="cudasharedmemory").json() == []
    err(status(s, "cuda_region", kind="cudasharedmemory"),
        404, "Unable to find system shared memory region: 'cuda_region'")
    ok_empty(s.post("/v2/cudasharedmemory/region/cuda_region/unregister"))
    ok_empty(s.post("/v2/cudasharedmemory/unregister"))
    err(s.post("/v2/cudasharedmemory/region/cuda_region/register", json={"byte_size": 64}),
        400, "Shared memory register request has no 'raw_handle' field")
    err(s.post("/v2/cudasharedmemory/region/cuda_region/register",
               json={"raw_handle": {"b64": "AAAA"}, "device_id": 0, "byte_size": 64}),
        400, "'raw_handle' must be a valid base64 encoded cudaIpcMemHandle_t")
    if _has_gpu():
        pytest.skip("a GPU is present: the CUDA register is tested by make test-gpu")
    err(s.post("/v2/cudasharedmemory/region/cuda_region/register", json=body),
        400, "failed to register CUDA shared memory region: 'cuda_region', GPUs not supported")
    assert status(s, kind="cudasharedmemory").json() == []
    # A system region of the same name is not a CUDA one.
    assert s.get("/v2/health/ready").status_code == 200


# ------------------------------------------------- loop hand-offs ---

def test_offloaded_decode_resolves_on_the_loop(private_server, shms):
    """A JSON header decoded on the thread pool (--http-json-offload-bytes)
    still resolves its regions, on the loop, after the decode."""
    s = private_server(models=["identity_int32"], wait_models=("identity_int32",),
                       extra=["--http-json-offload-bytes=64"])
    a, b = shms(), shms()
    ok_empty(register(s, "in", a.key, 4096))
    ok_empty(register(s, "out", b.key, 4096))
    a.write(0, int32s(*range(100)))
    r = infer(s, "identity_int32", [shm_input("INPUT0", "INT32", [1, 100], "in", 400)],
              [shm_output("OUTPUT0", "out", 400)])
    assert r.status_code == 200, r.text
    assert b.ints(0, 100) == list(range(100))
    err(infer(s, "identity_int32", [shm_input("INPUT0", "INT32", [1, 100], "nope", 400)]),
        404, "Unable to find shared memory region: 'nope'")
    ok_empty(unregister(s))


def test_connection_closed_before_register_answers(srv, shms):
    """A client that goes away while its register maps the region: the
    register completes, its answer is dropped, the server keeps serving."""
    s = srv
    a = shms()
    body = json.dumps({"key": a.key, "byte_size": 4096}).encode()
    for i in range(20):
        with h.RawConn(srv.port) as conn:
            conn.send(b"POST /v2/systemsharedmemory/region/gone%d/register HTTP/1.1\r\n"
                      b"Host: x\r\nContent-Length: %d\r\n\r\n" % (i, len(body)) + body +
                      b"POST /v2/systemsharedmemory/region/gone%d/unregister HTTP/1.1\r\n"
                      b"Host: x\r\nContent-Length: 0\r\n\r\n" % i)
    # Every pair ran to its end (register, then unregister) or the
    # connection closed before the second was read: only registered names
    # can remain, and they unregister cleanly.
    assert wait_for(lambda: s.get("/v2/health/live").status_code == 200)
    for x in status(s).json():
        assert x["name"].startswith("gone"), x
    ok_empty(unregister(s))
    assert status(s).json() == []
    assert wait_for(lambda: not any(a.name in line for line in maps_lines(srv.proc.pid)))


def test_concurrent_infers_and_churn(srv, shms):
    """Requests reading and writing regions while other regions come and go
    on other connections: every request answered once, with its bytes."""
    s = srv
    a, b = shms(), shms(4 * 4096)
    ok_empty(register(s, "stable_in", a.key, 4096))
    for t in range(4):
        ok_empty(register(s, f"out{t}", b.key, 4096, 4096 * t))
    a.write(0, int32s(*range(16)))
    failures = []

    def worker(t):
        with requests.Session() as sess:
            for i in range(50):
                off = 64 * (i % 8)
                r = sess.post(s.url("/v2/models/identity_int32/infer"), json={
                    "inputs": [shm_input("INPUT0", "INT32", [1, 16], "stable_in", 64)],
                    "outputs": [shm_output("OUTPUT0", f"out{t}", 64, off)]},
                    timeout=h.HTTP_TIMEOUT_S)
                if r.status_code != 200 or "data" in r.json()["outputs"][0]:
                    failures.append((t, i, r.status_code, r.text))
                elif b.ints(4096 * t + off, 16) != list(range(16)):
                    failures.append((t, i, "bytes"))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for i in range(100):
        ok_empty(register(s, "churn", b.key, 4096, 4096 * (i % 4)))
        ok_empty(unregister(s, "churn"))
    for th in threads:
        th.join(timeout=120)
        assert not th.is_alive()
    assert not failures, failures[:5]
    ok_empty(unregister(s))
