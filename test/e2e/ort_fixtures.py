"""Shared pieces of the ONNX Runtime backend's e2e tests (test_onnxruntime*.py).

* Servers: inferd over a repository of generated ONNX models
  (onnx_models.py), once build/backends/onnxruntime/libtriton_onnxruntime.so
  exists.
* One inference over HTTP JSON, HTTP binary (the binary tensor data
  extension) or gRPC (raw_input_contents), every Triton data type ONNX has
  included (BF16 travels as its raw 16-bit patterns): `infer(...)` returns
  {output name: numpy array, or list of bytes for BYTES} or raises `Failed`
  with the status and the server's message.
* The model repository extension: load/unload in explicit mode, and each
  model's state and reason from the repository index.

Everything talks to 127.0.0.1 only.
"""

import json
import threading
import time

import grpc
import numpy as np
import requests

import e2e_helpers as h
import grpc_helpers as gh
import onnx_models as om

PROTOCOLS = ("json", "binary", "grpc")

# Generous limits, only there so that nothing can hang; never asserted on.
LOAD_TIMEOUT_S = 120
RPC_TIMEOUT_S = 60


def backend_so():
    return h.backend_dir() / "onnxruntime" / "libtriton_onnxruntime.so"


def require_backend():
    h.require_binary()
    so = backend_so()
    assert so.is_file(), (f"ONNX Runtime backend not built at {so}: run third_party/install-onnxruntime.sh "
                          f"and `make` first")


def start(tmp, repo, wait_models=(), extra=()):
    """inferd over `repo` (a folder of generated models), waiting until
    every model of `wait_models` is ready and the start-up loading ended."""
    require_backend()
    srv = h.start_server(tmp, [repo], extra=list(extra), wait_models=tuple(wait_models),
                         timeout=LOAD_TIMEOUT_S)
    srv.wait_loading_finished(timeout=LOAD_TIMEOUT_S)
    return srv


# ------------------------------------------------------------ requests ---

class Failed(Exception):
    """An inference refused: `code` is the HTTP status (int) or the gRPC
    status name, `message` the server's text."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code, self.message = code, message


def _raw(datatype, value):
    if datatype == "BYTES":
        return h.encode_bytes_tensor(list(value))
    return np.ascontiguousarray(np.asarray(value, dtype=om.np_dtype(datatype))).tobytes()


def _from_raw(datatype, raw, shape):
    if datatype == "BYTES":
        return h.decode_bytes_tensor(raw)
    return np.frombuffer(raw, dtype=om.np_dtype(datatype)).reshape(shape)


def _json_data(datatype, value):
    arr = np.asarray(value, dtype=object if datatype == "BYTES" else om.np_dtype(datatype)).flatten()
    if datatype == "BYTES":
        return [v.decode() if isinstance(v, bytes) else str(v) for v in arr]
    if datatype == "BOOL":
        return [bool(v) for v in arr]
    if datatype in ("FP16", "FP32", "FP64"):
        return [float(v) for v in arr]
    return [int(v) for v in arr]


def _from_json(out):
    dt = out["datatype"]
    data = out.get("data")
    assert data is not None, f"output {out['name']}: no 'data' in a JSON response: {out}"
    if dt == "BYTES":
        return [v.encode() if isinstance(v, str) else bytes(v) for v in data]
    return np.asarray(data, dtype=om.np_dtype(dt)).reshape(out["shape"])


def infer(proto, srv, model, inputs, outputs=None, gc=None, parameters=None, timeout=RPC_TIMEOUT_S):
    """One request. inputs: [(name, datatype, shape, value)], value a numpy
    array (uint16 bit patterns for BF16) or a list of bytes/str for BYTES;
    outputs: names to ask for (all when None). Returns {name: value}; the
    response's datatype and shape of each output are in `infer.last`."""
    if proto == "json":
        body = {"inputs": [{"name": n, "datatype": d, "shape": list(s), "data": _json_data(d, v)}
                           for n, d, s, v in inputs]}
        if outputs is not None:
            body["outputs"] = [{"name": o} for o in outputs]
        if parameters:
            body["parameters"] = parameters
        r = requests.post(srv.url(f"/v2/models/{model}/infer"), json=body, timeout=timeout)
        if r.status_code != 200:
            raise Failed(r.status_code, h.error_of(r))
        outs = r.json()["outputs"]
        infer.last = {o["name"]: (o["datatype"], o["shape"]) for o in outs}
        return {o["name"]: _from_json(o) for o in outs}
    if proto == "binary":
        header = {"inputs": []}
        blobs = []
        for n, d, s, v in inputs:
            raw = _raw(d, v)
            header["inputs"].append({"name": n, "datatype": d, "shape": list(s),
                                     "parameters": {"binary_data_size": len(raw)}})
            blobs.append(raw)
        header["parameters"] = dict(parameters or {}, binary_data_output=True)
        if outputs is not None:
            header["outputs"] = [{"name": o, "parameters": {"binary_data": True}} for o in outputs]
        hdr = json.dumps(header).encode()
        r = requests.post(srv.url(f"/v2/models/{model}/infer"), data=hdr + b"".join(blobs), timeout=timeout,
                          headers={"Inference-Header-Content-Length": str(len(hdr)),
                                   "Content-Type": "application/octet-stream"})
        if r.status_code != 200:
            raise Failed(r.status_code, h.error_of(r))
        return _binary_outputs(r)
    assert proto == "grpc", proto
    assert gc is not None, "gRPC needs a client"
    req = gc.pb.ModelInferRequest(model_name=model)
    for n, d, s, v in inputs:
        req.inputs.add(name=n, datatype=d, shape=list(s))
        req.raw_input_contents.append(_raw(d, v))
    for o in outputs or ():
        req.outputs.add(name=o)
    for k, v in (parameters or {}).items():
        p = req.parameters[k]
        if isinstance(v, bool):
            p.bool_param = v
        elif isinstance(v, int):
            p.int64_param = v
        else:
            p.string_param = str(v)
    try:
        resp = gc.model_infer(req, timeout=timeout)
    except grpc.RpcError as e:
        raise Failed(e.code().name, e.details())
    raw = list(resp.raw_output_contents)
    assert len(raw) == len(resp.outputs), f"{len(raw)} raw_output_contents for {len(resp.outputs)} outputs"
    infer.last = {o.name: (o.datatype, list(o.shape)) for o in resp.outputs}
    return {o.name: _from_raw(o.datatype, raw[i], list(o.shape)) for i, o in enumerate(resp.outputs)}


infer.last = {}


def _binary_outputs(r):
    body = r.content
    hlen = int(r.headers["Inference-Header-Content-Length"])
    header = json.loads(body[:hlen])
    rest, off, values = body[hlen:], 0, {}
    infer.last = {}
    for out in header["outputs"]:
        size = out["parameters"]["binary_data_size"]
        values[out["name"]] = _from_raw(out["datatype"], rest[off:off + size], out["shape"])
        infer.last[out["name"]] = (out["datatype"], out["shape"])
        off += size
    assert off == len(rest), f"{len(rest) - off} trailing bytes after the binary outputs"
    return values


def model_stats(srv, name):
    """The model's one entry of /v2/models/<name>/stats."""
    r = srv.get(f"/v2/models/{name}/stats")
    assert r.status_code == 200, r.text
    (st,) = r.json()["model_stats"]
    return st


def grpc_client(srv, stubs):
    return gh.connect(srv, stubs)


# ---------------------------------------------------- model repository ---

def load(srv, name, body=None):
    """Explicit-mode load; returns the HTTP response (200, or 400 with the
    load error)."""
    return srv.post(f"/v2/repository/models/{name}/load", json={} if body is None else body,
                    timeout=LOAD_TIMEOUT_S)


def unload(srv, name):
    return srv.post(f"/v2/repository/models/{name}/unload", json={}, timeout=LOAD_TIMEOUT_S)


def load_error(srv, name):
    """Loads `name` expecting a refusal; returns the error text."""
    r = load(srv, name)
    assert r.status_code == 400, f"loading {name}: expected 400, got {r.status_code}: {r.text[:2000]}"
    return h.error_of(r)


def index(srv):
    """name -> (state, reason) from POST /v2/repository/index (the version
    entries of one model are joined: READY wins, reasons are concatenated)."""
    r = srv.post("/v2/repository/index", json={})
    assert r.status_code == 200, r.text
    out = {}
    for e in r.json():
        state, reasons = out.get(e["name"], (None, []))
        if state != "READY":
            state = e.get("state")
        if e.get("reason"):
            reasons = reasons + [e["reason"]]
        out[e["name"]] = (state, reasons)
    return {k: (v[0], "\n".join(v[1])) for k, v in out.items()}


def wait_not_loading(srv, names, timeout=LOAD_TIMEOUT_S):
    """Waits until no model of `names` is LOADING in the index (bounded, for
    hangs only); returns the index."""
    deadline = time.monotonic() + timeout
    while True:
        idx = index(srv)
        if all(idx.get(n, (None, ""))[0] not in (None, "LOADING") for n in names):
            return idx
        assert time.monotonic() < deadline and srv.alive(), f"still loading: {idx}\n{srv.log_tail()}"
        time.sleep(0.05)


def model_config(srv, name):
    r = srv.get(f"/v2/models/{name}/config")
    assert r.status_code == 200, r.text
    return r.json()


def ready(srv, name):
    return srv.get(f"/v2/models/{name}/ready").status_code == 200


def concurrently(fns):
    """Runs each fn in its own thread, all released at once; returns their
    results in order, or fails naming the first request that raised."""
    results = [None] * len(fns)
    errors = []
    barrier = threading.Barrier(len(fns))

    def run(i, fn):
        try:
            barrier.wait(timeout=30)
            results[i] = fn()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append((i, e))

    threads = [threading.Thread(target=run, args=(i, fn)) for i, fn in enumerate(fns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a request did not finish"
    if errors:
        i, e = errors[0]
        raise AssertionError(f"request {i} failed: {e}") from e
    return results
