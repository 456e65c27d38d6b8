"""The `digits` ensemble of the example repository, and the TorchScript export.

One server for the module serves examples/model_repository (the ONNX Runtime
and Python backends from build/backends/). `digits` takes the raw pixel
values of sklearn's load_digits (UINT8, 0..16) and runs digits_preprocess
(Python, / 16), digits_onnx and digits_postprocess (ONNX, the probability
of the label). Every sample of the held-back split (heldback.json's indices)
is sent to it:

* over HTTP with JSON tensors, one sample per request;
* over HTTP with binary tensors, in batches of several rows;
* over gRPC with raw contents, one per request, and typed contents in batches
  of the ensemble's max_batch_size;
* from 16 threads at once.

Each time the labels must equal heldback.json's and those digits_onnx itself
answers (asked over HTTP with the pixels already divided by 16), and the
probability the largest of digits_onnx's probabilities for that sample. Also:
metadata, asking for `label` alone (the postprocess step does not run), the
README's example, a request with the wrong datatype, and the TorchScript
export's own check (examples/digits/export_torchscript.py --check: torch
against the ONNX graph in numpy), skipped only without python3-torch.
"""

import importlib.util
import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import requests
from sklearn.datasets import load_digits

import e2e_helpers as h
import grpc_helpers as gh
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

DIGITS_DIR = h.REPO_ROOT / "examples" / "digits"
EXAMPLES_REPO = h.REPO_ROOT / "examples" / "model_repository"
ENSEMBLE = "digits"
ONNX = "digits_onnx"
STEPS = ("digits_preprocess", ONNX, "digits_postprocess")
MAX_BATCH = 16
PIXEL_SCALE = 16.0
# digits_onnx run on one row and on a batch may round the last bit
# differently (ONNX Runtime's kernels depend on the batch size).
PROB_ATOL = 1e-6
EXPORT_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def heldback():
    """(raw UINT8 [n,64], y [n], record): the held-back samples by index."""
    record = json.loads((DIGITS_DIR / "heldback.json").read_text())
    digits = load_digits()
    idx = np.asarray(record["indices"])
    raw = digits.data[idx]
    assert raw.min() >= 0 and raw.max() <= 16 and np.array_equal(raw, np.round(raw))
    assert len(idx) == record["samples"] == len(record["predicted"])
    return raw.astype(np.uint8), digits.target[idx].astype(np.int64), record


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    h.require_binary()
    for so in (h.backend_dir() / "onnxruntime" / "libtriton_onnxruntime.so",
               h.backend_dir() / "python" / "triton_python_backend_stub"):
        assert so.is_file(), f"{so} not built; run `make all` first"
    tmp = tmp_path_factory.mktemp("digits_ensemble")
    s = h.start_server(tmp, [EXAMPLES_REPO], wait_models=(ENSEMBLE,) + STEPS, timeout=60)
    try:
        yield s
    finally:
        s.stop(check=True)


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = gh.connect(srv, grpc_stubs)
    yield c
    c.close()


@pytest.fixture(scope="module")
def onnx_answers(srv, heldback):
    """(labels [n], top probability [n]) of digits_onnx itself, one sample a
    request, the pixels divided by 16 in the test."""
    raw, _, record = heldback
    labels, top = [], []
    for row in raw:
        x = (row.astype(np.float32) / np.float32(PIXEL_SCALE)).reshape(1, 64)
        r = h.infer_binary(srv, ONNX, [("pixels", "FP32", [1, 64], x)],
                           parameters={"binary_data_output": True})
        assert r.status_code == 200, r.text
        _, values = h.parse_infer_response(r)
        labels.append(int(values["label"][0, 0]))
        top.append(float(values["probabilities"][0].max()))
    assert labels == record["predicted"], "digits_onnx and heldback.json disagree"
    return np.asarray(labels), np.asarray(top, dtype=np.float32)


def check_answers(got_labels, got_probs, heldback, onnx_answers, how):
    _, y, record = heldback
    got_labels = np.asarray(got_labels, dtype=np.int64).reshape(-1)
    got_probs = np.asarray(got_probs, dtype=np.float32).reshape(-1)
    assert len(got_labels) == len(got_probs) == len(y), how
    wrong = [(i, int(got_labels[i]), record["predicted"][i])
             for i in range(len(y)) if got_labels[i] != record["predicted"][i]]
    assert not wrong, f"{how}: (sample, served, expected) differ: {wrong[:10]}"
    assert np.array_equal(got_labels, onnx_answers[0]), f"{how}: labels differ from digits_onnx's"
    accuracy = int((got_labels == y).sum()) / len(y)
    assert accuracy == record["accuracy"], f"{how}: accuracy {accuracy} != {record['accuracy']}"
    diff = float(np.abs(got_probs - onnx_answers[1]).max())
    assert diff <= PROB_ATOL, f"{how}: probability differs from digits_onnx's largest by {diff}"


def batches(n, size):
    return [(i, min(i + size, n)) for i in range(0, n, size)]


def stats(srv, model):
    r = srv.get(f"/v2/models/{model}/stats")
    assert r.status_code == 200, r.text
    return r.json()["model_stats"][0]


# ------------------------------------------------------------ metadata ---

def test_metadata_and_config(srv):
    r = srv.get(f"/v2/models/{ENSEMBLE}")
    assert r.status_code == 200, r.text
    md = r.json()
    assert md["platform"] == "ensemble"
    assert md["inputs"] == [{"name": "pixels", "datatype": "UINT8", "shape": [-1, 64]}]
    assert sorted(md["outputs"], key=lambda o: o["name"]) == [
        {"name": "label", "datatype": "INT64", "shape": [-1, 1]},
        {"name": "probability", "datatype": "FP32", "shape": [-1, 1]},
    ]
    cfg = srv.get(f"/v2/models/{ENSEMBLE}/config").json()
    assert cfg["max_batch_size"] == MAX_BATCH
    assert [s["model_name"] for s in cfg["ensemble_scheduling"]["step"]] == list(STEPS)
    for m, backend in (("digits_preprocess", "python"), ("digits_postprocess", "onnxruntime")):
        c = srv.get(f"/v2/models/{m}/config").json()
        assert c["backend"] == backend and c["max_batch_size"] == MAX_BATCH
        assert "dynamic_batching" in c


# ------------------------------------------------------ the held-back set ---

def test_http_json_one_per_request(srv, heldback, onnx_answers):
    raw, _, _ = heldback
    labels, probs = [], []
    for row in raw:
        r = h.infer_json(srv, ENSEMBLE, [("pixels", "UINT8", [1, 64], [int(v) for v in row])])
        assert r.status_code == 200, r.text
        outs = {o["name"]: o for o in r.json()["outputs"]}
        assert sorted(outs) == ["label", "probability"]
        assert outs["label"]["datatype"] == "INT64" and outs["label"]["shape"] == [1, 1]
        assert outs["probability"]["datatype"] == "FP32" and outs["probability"]["shape"] == [1, 1]
        labels += outs["label"]["data"]
        probs += outs["probability"]["data"]
    check_answers(labels, probs, heldback, onnx_answers, "HTTP JSON")


@pytest.mark.parametrize("rows", [5, MAX_BATCH])
def test_http_binary_batches(srv, heldback, onnx_answers, rows):
    raw, _, _ = heldback
    labels, probs = [], []
    for a, b in batches(len(raw), rows):
        r = h.infer_binary(srv, ENSEMBLE, [("pixels", "UINT8", [b - a, 64], raw[a:b])],
                           parameters={"binary_data_output": True})
        assert r.status_code == 200, r.text
        _, values = h.parse_infer_response(r)
        assert values["label"].shape == (b - a, 1) and values["label"].dtype == np.int64
        assert values["probability"].shape == (b - a, 1)
        assert values["probability"].dtype == np.float32
        labels.append(values["label"])
        probs.append(values["probability"])
    check_answers(np.concatenate(labels), np.concatenate(probs), heldback, onnx_answers,
                  f"HTTP binary, {rows} rows a request")


def test_grpc_raw_one_per_request(gc, heldback, onnx_answers):
    raw, _, _ = heldback
    labels, probs = [], []
    for row in raw:
        req = gh.infer_request(gc.pb, ENSEMBLE, [("pixels", "UINT8", [1, 64], row.reshape(1, 64))])
        outs = gh.outputs_of(gc.model_infer(req))
        labels.append(outs["label"])
        probs.append(outs["probability"])
    check_answers(np.concatenate(labels), np.concatenate(probs), heldback, onnx_answers,
                  "gRPC raw contents")


def test_grpc_typed_batches(gc, heldback, onnx_answers):
    raw, _, _ = heldback
    labels, probs = [], []
    for a, b in batches(len(raw), MAX_BATCH):
        req = gh.infer_request(gc.pb, ENSEMBLE, [("pixels", "UINT8", [b - a, 64], raw[a:b])],
                               typed=True, outputs=["label", "probability"])
        outs = gh.outputs_of(gc.model_infer(req), require_raw=False)
        assert outs["label"].shape == (b - a, 1) and outs["probability"].shape == (b - a, 1)
        labels.append(outs["label"])
        probs.append(outs["probability"])
    check_answers(np.concatenate(labels), np.concatenate(probs), heldback, onnx_answers,
                  f"gRPC typed contents, {MAX_BATCH} rows a request")


def test_concurrent_clients_get_their_own_rows(srv, heldback, onnx_answers):
    """16 clients at once, 1 to 3 rows each: every step's dynamic batcher may
    join different clients' rows (how many it joins depends on timing, so it
    is not asserted); every client gets back the answers for its own rows."""
    raw, _, _ = heldback
    spans, i = [], 0
    while i < len(raw):
        n = 1 + len(spans) % 3
        spans.append((i, min(i + n, len(raw))))
        i += n

    def one(span):
        a, b = span
        with requests.Session() as s:
            body, hlen = h.build_binary_request([("pixels", "UINT8", [b - a, 64], raw[a:b])],
                                                parameters={"binary_data_output": True})
            r = s.post(srv.url(f"/v2/models/{ENSEMBLE}/infer"), data=body,
                       timeout=h.HTTP_TIMEOUT_S,
                       headers={"Inference-Header-Content-Length": str(hlen)})
            assert r.status_code == 200, r.text
            _, values = h.parse_infer_response(r)
            return values["label"], values["probability"]

    before = {m: stats(srv, m) for m in (ENSEMBLE,) + STEPS}
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(one, spans))
    after = {m: stats(srv, m) for m in (ENSEMBLE,) + STEPS}
    check_answers(np.concatenate([r[0] for r in results]), np.concatenate([r[1] for r in results]),
                  heldback, onnx_answers, "16 concurrent HTTP clients")
    for m in (ENSEMBLE,) + STEPS:
        done = after[m]["inference_count"] - before[m]["inference_count"]
        assert done == len(raw), (m, before[m], after[m])
    for m in STEPS:
        assert after[m]["execution_count"] - before[m]["execution_count"] <= len(spans)


def test_label_alone_skips_postprocess(srv, heldback):
    """Asking for `label` only runs digits_preprocess and digits_onnx."""
    raw, _, record = heldback
    before = stats(srv, "digits_postprocess")["inference_count"]
    r = h.infer_binary(srv, ENSEMBLE, [("pixels", "UINT8", [MAX_BATCH, 64], raw[:MAX_BATCH])],
                       outputs=[{"name": "label", "parameters": {"binary_data": True}}])
    assert r.status_code == 200, r.text
    _, values = h.parse_infer_response(r)
    assert sorted(values) == ["label"]
    assert values["label"][:, 0].tolist() == record["predicted"][:MAX_BATCH]
    assert stats(srv, "digits_postprocess")["inference_count"] == before


# ------------------------------------------------------------ the README ---

@pytest.mark.parametrize("readme", ["README.md", "examples/digits/README.md"])
def test_readme_example(srv, readme):
    """The README's curl request to `digits` answers the label and
    probability it shows."""
    text = (h.REPO_ROOT / readme).read_text()
    m = re.search(r"curl -s -X POST localhost:8000/v2/models/digits/infer -d '(\{.*?\})'\n",
                  text, re.S)
    assert m, f"no curl example for digits in {readme}"
    r = srv.post(f"/v2/models/{ENSEMBLE}/infer", json=json.loads(m.group(1)))
    assert r.status_code == 200, r.text
    outs = {o["name"]: o["data"] for o in r.json()["outputs"]}
    shown = re.search(r'"name":"label","datatype":"INT64","shape":\[1,1\],"data":\[(\d)\]\}?,\s*'
                      r'\{"name":"probability","datatype":"FP32","shape":\[1,1\],"data":\[([0-9.]+)\]',
                      text)
    assert shown, f"{readme} does not show the label and probability of its answer"
    assert outs["label"] == [int(shown.group(1))]
    assert outs["probability"] == [pytest.approx(float(shown.group(2)), abs=PROB_ATOL)]


# ------------------------------------------------------------ bad input ---

def test_wrong_datatype_fails_and_ensemble_keeps_serving(srv, heldback):
    raw, _, record = heldback
    r = h.infer_json(srv, ENSEMBLE, [("pixels", "FP32", [1, 64], [0.0] * 64)])
    assert r.status_code == 400, r.text
    assert "pixels" in h.error_of(r)
    r = h.infer_json(srv, ENSEMBLE, [("pixels", "UINT8", [1, 64], [int(v) for v in raw[0]])])
    assert r.status_code == 200, r.text
    assert {o["name"]: o["data"] for o in r.json()["outputs"]}["label"] == [record["predicted"][0]]


# ------------------------------------------------------- the TorchScript twin ---

def test_postprocess_model_is_what_its_script_writes():
    """examples/digits/make_postprocess.py --check: the committed
    digits_postprocess model.onnx is the script's graph, byte for byte."""
    p = subprocess.run([sys.executable, str(DIGITS_DIR / "make_postprocess.py"), "--check"],
                       capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S)
    assert p.returncode == 0, p.stdout + p.stderr


def test_torchscript_export_agrees_with_onnx():
    """examples/digits/export_torchscript.py --check: the committed model.pt,
    run by torch on every held-back sample, gives the ONNX graph's classes and
    probabilities (numpy)."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("python3-torch is not installed (apt-get install python3-torch)")
    p = subprocess.run([sys.executable, str(DIGITS_DIR / "export_torchscript.py"), "--check"],
                       capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "agrees with model.onnx on all 450 held-back samples" in p.stdout, p.stdout
