"""The digits example (examples/digits/) served from examples/model_repository.

One server for the module serves the shipped example repository, with the
ONNX Runtime backend from build/backends/onnxruntime/. Every sample of the
held-back split (rebuilt at test time with sklearn, as train_digits.py builds
it) is sent to `digits_onnx`:

* over HTTP with JSON tensors, one sample per request;
* over HTTP with binary tensors, in batches of several rows;
* over gRPC with raw contents, one per request, and with typed contents in
  batches of the model's max_batch_size;
* from 16 threads at once (the dynamic batcher puts different clients' rows
  into one execution; each must get its own rows back).

Each time the predicted labels must equal heldback.json's, the accuracy the
training script's, and the probabilities those of the exported graph evaluated
in numpy (train_digits.run_graph_numpy). Also checked: the model's metadata and
configuration, the README's example request and answer, and a request with a
wrong shape, which fails while the model keeps serving.
"""

import json
import re
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnx
import pytest
import requests

import e2e_helpers as h
import grpc_helpers as gh
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

DIGITS_DIR = h.REPO_ROOT / "examples" / "digits"
EXAMPLES_REPO = h.REPO_ROOT / "examples" / "model_repository"
MODEL = "digits_onnx"
MODEL_FILE = EXAMPLES_REPO / MODEL / "1" / "model.onnx"
MAX_BATCH = 16
PROB_ATOL = 1e-5

sys.path.insert(0, str(DIGITS_DIR))
import train_digits  # noqa: E402  (the script's split and numpy evaluation)


@pytest.fixture(scope="module")
def heldback():
    """(X [n,64] float32, y [n], record): the split rebuilt with sklearn,
    checked against the committed record sample by sample."""
    record = json.loads((DIGITS_DIR / "heldback.json").read_text())
    _, X_te, _, y_te, idx_te = train_digits.load_split()
    assert record["split"]["test_size"] == train_digits.SPLIT["test_size"]
    assert record["split"]["random_state"] == train_digits.SPLIT["random_state"]
    assert [int(i) for i in idx_te] == record["indices"], \
        "sklearn's split differs from the one heldback.json was made with"
    assert len(record["predicted"]) == len(y_te) == record["samples"]
    return X_te, y_te, record


@pytest.fixture(scope="module")
def expected_probs(heldback):
    X, _, record = heldback
    probs, labels, _ = train_digits.run_graph_numpy(onnx.load(str(MODEL_FILE)), X)
    assert labels[:, 0].tolist() == record["predicted"], "model.onnx and heldback.json disagree"
    return probs


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    h.require_binary()
    so = h.backend_dir() / "onnxruntime" / "libtriton_onnxruntime.so"
    assert so.is_file(), f"ONNX Runtime backend not built at {so}; run `make` first"
    tmp = tmp_path_factory.mktemp("digits")
    s = h.start_server(tmp, [EXAMPLES_REPO], wait_models=(MODEL, "digits_torchscript"), timeout=60)
    try:
        yield s
    finally:
        s.stop(check=True)


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = gh.connect(srv, grpc_stubs)
    yield c
    c.close()


def check_answers(got_labels, got_probs, heldback, expected_probs, how):
    """Labels equal heldback.json's, accuracy the script's, probabilities the
    numpy graph's."""
    _, y, record = heldback
    got_labels = np.asarray(got_labels, dtype=np.int64).reshape(-1)
    got_probs = np.asarray(got_probs, dtype=np.float32).reshape(-1, 10)
    wrong = [(i, int(got_labels[i]), record["predicted"][i])
             for i in range(len(y)) if got_labels[i] != record["predicted"][i]]
    assert not wrong, f"{how}: (sample, served, expected) differ: {wrong[:10]}"
    accuracy = int((got_labels == y).sum()) / len(y)
    assert accuracy == record["accuracy"], f"{how}: accuracy {accuracy} != {record['accuracy']}"
    diff = float(np.abs(got_probs - expected_probs).max())
    assert diff <= PROB_ATOL, f"{how}: probabilities differ from the numpy graph by {diff}"


def batches(n, size):
    return [(i, min(i + size, n)) for i in range(0, n, size)]


# ------------------------------------------------------------ metadata ---

def test_metadata_and_config(srv):
    r = srv.get(f"/v2/models/{MODEL}")
    assert r.status_code == 200, r.text
    md = r.json()
    assert md["platform"] == "onnxruntime_onnx"
    assert md["inputs"] == [{"name": "pixels", "datatype": "FP32", "shape": [-1, 64]}]
    assert sorted(md["outputs"], key=lambda o: o["name"]) == [
        {"name": "label", "datatype": "INT64", "shape": [-1, 1]},
        {"name": "probabilities", "datatype": "FP32", "shape": [-1, 10]},
    ]
    r = srv.get(f"/v2/models/{MODEL}/config")
    assert r.status_code == 200, r.text
    cfg = r.json()
    assert cfg["max_batch_size"] == MAX_BATCH
    assert cfg["backend"] == "onnxruntime"
    assert "dynamic_batching" in cfg


# ------------------------------------------------------ the held-back set ---

def test_http_json_one_per_request(srv, heldback, expected_probs):
    X, _, _ = heldback
    labels, probs = [], []
    for row in X:
        r = h.infer_json(srv, MODEL, [("pixels", "FP32", [1, 64], [float(v) for v in row])])
        assert r.status_code == 200, r.text
        outs = {o["name"]: o for o in r.json()["outputs"]}
        assert outs["label"]["datatype"] == "INT64" and outs["label"]["shape"] == [1, 1]
        assert outs["probabilities"]["datatype"] == "FP32" and outs["probabilities"]["shape"] == [1, 10]
        labels += outs["label"]["data"]
        probs.append(outs["probabilities"]["data"])
    check_answers(labels, probs, heldback, expected_probs, "HTTP JSON")


@pytest.mark.parametrize("rows", [5, MAX_BATCH])
def test_http_binary_batches(srv, heldback, expected_probs, rows):
    X, _, _ = heldback
    labels, probs = [], []
    for a, b in batches(len(X), rows):
        r = h.infer_binary(srv, MODEL, [("pixels", "FP32", [b - a, 64], X[a:b])],
                           parameters={"binary_data_output": True})
        assert r.status_code == 200, r.text
        _, values = h.parse_infer_response(r)
        assert values["label"].shape == (b - a, 1) and values["label"].dtype == np.int64
        assert values["probabilities"].shape == (b - a, 10)
        labels.append(values["label"])
        probs.append(values["probabilities"])
    check_answers(np.concatenate(labels), np.concatenate(probs), heldback, expected_probs,
                  f"HTTP binary, {rows} rows a request")


def test_grpc_raw_one_per_request(gc, heldback, expected_probs):
    X, _, _ = heldback
    labels, probs = [], []
    for row in X:
        req = gh.infer_request(gc.pb, MODEL, [("pixels", "FP32", [1, 64], row.reshape(1, 64))])
        outs = gh.outputs_of(gc.model_infer(req))
        labels.append(outs["label"])
        probs.append(outs["probabilities"])
    check_answers(np.concatenate(labels), np.concatenate(probs), heldback, expected_probs,
                  "gRPC raw contents")


def test_grpc_typed_batches(gc, heldback, expected_probs):
    X, _, _ = heldback
    labels, probs = [], []
    for a, b in batches(len(X), MAX_BATCH):
        req = gh.infer_request(gc.pb, MODEL, [("pixels", "FP32", [b - a, 64], X[a:b])], typed=True,
                               outputs=["label", "probabilities"])
        outs = gh.outputs_of(gc.model_infer(req), require_raw=False)
        assert outs["label"].shape == (b - a, 1)
        labels.append(outs["label"])
        probs.append(outs["probabilities"])
    check_answers(np.concatenate(labels), np.concatenate(probs), heldback, expected_probs,
                  f"gRPC typed contents, {MAX_BATCH} rows a request")


def test_concurrent_clients_get_their_own_rows(srv, heldback, expected_probs):
    """16 clients at once, 1 to 3 rows each: the dynamic batcher may run
    several clients' rows in one execution (how many it joins depends on
    timing, so it is not asserted), and every client gets back the answers
    for its own rows."""
    X, _, _ = heldback
    spans, i = [], 0
    while i < len(X):
        n = 1 + len(spans) % 3
        spans.append((i, min(i + n, len(X))))
        i += n

    def one(span):
        a, b = span
        with requests.Session() as s:
            body, hlen = h.build_binary_request([("pixels", "FP32", [b - a, 64], X[a:b])],
                                                parameters={"binary_data_output": True})
            r = s.post(srv.url(f"/v2/models/{MODEL}/infer"), data=body, timeout=h.HTTP_TIMEOUT_S,
                       headers={"Inference-Header-Content-Length": str(hlen)})
            assert r.status_code == 200, r.text
            _, values = h.parse_infer_response(r)
            return values["label"], values["probabilities"]

    before = srv.get(f"/v2/models/{MODEL}/stats").json()["model_stats"][0]
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(one, spans))
    after = srv.get(f"/v2/models/{MODEL}/stats").json()["model_stats"][0]
    check_answers(np.concatenate([r[0] for r in results]), np.concatenate([r[1] for r in results]),
                  heldback, expected_probs, "16 concurrent HTTP clients")
    inferences = after["inference_count"] - before["inference_count"]
    assert inferences == len(X), (before, after)
    assert after["execution_count"] - before["execution_count"] <= len(spans)


# ------------------------------------------------------------ the README ---

def test_readme_example(srv):
    """The curl request of examples/digits/README.md answers what it shows."""
    text = (DIGITS_DIR / "README.md").read_text()
    m = re.search(r"curl -s -X POST localhost:8000/v2/models/digits_onnx/infer -d '(\{.*?\})'\n",
                  text, re.S)
    assert m, "no curl example in examples/digits/README.md"
    body = json.loads(m.group(1))
    r = srv.post(f"/v2/models/{MODEL}/infer", json=body)
    assert r.status_code == 200, r.text
    outs = {o["name"]: o["data"] for o in r.json()["outputs"]}
    shown = re.search(r'"name":"label","datatype":"INT64","shape":\[1,1\],"data":\[(\d)\]', text)
    assert shown, "the README does not show the label of its answer"
    assert outs["label"] == [int(shown.group(1))]


# ------------------------------------------------------------ bad input ---

def test_wrong_shape_fails_and_model_keeps_serving(srv, heldback):
    X, _, record = heldback
    r = h.infer_json(srv, MODEL, [("pixels", "FP32", [1, 63], [0.0] * 63)])
    assert r.status_code == 400, r.text
    assert "pixels" in h.error_of(r)
    r = h.infer_json(srv, MODEL, [("pixels", "FP32", [1, 64], [float(v) for v in X[0]])])
    assert r.status_code == 200, r.text
    label = {o["name"]: o["data"] for o in r.json()["outputs"]}["label"]
    assert label == [record["predicted"][0]]


# ------------------------------------------------------- TorchScript ---

TS_MODEL = "digits_torchscript"


@pytest.mark.parametrize("rows", [1, MAX_BATCH])
def test_torchscript_twin_agrees_on_every_sample(srv, heldback, expected_probs, rows):
    """digits_torchscript (the PyTorch backend, INPUT__0 -> OUTPUT__0
    probabilities, OUTPUT__1 class) gives digits_onnx's class on every
    held-back sample, and its probabilities within PROB_ATOL."""
    so = h.backend_dir() / "pytorch" / "libtriton_pytorch.so"
    assert so.is_file(), f"PyTorch backend not built at {so}; run `make` first"
    X, _, _ = heldback
    assert srv.get(f"/v2/models/{TS_MODEL}/ready").status_code == 200
    labels, probs = [], []
    for a, b in batches(len(X), rows):
        r = h.infer_binary(srv, TS_MODEL, [("INPUT__0", "FP32", [b - a, 64], X[a:b])],
                           parameters={"binary_data_output": True})
        assert r.status_code == 200, r.text
        _, values = h.parse_infer_response(r)
        assert values["OUTPUT__1"].shape == (b - a, 1) and values["OUTPUT__1"].dtype == np.int64
        labels.append(values["OUTPUT__1"])
        probs.append(values["OUTPUT__0"])
    check_answers(np.concatenate(labels), np.concatenate(probs), heldback, expected_probs,
                  f"TorchScript, {rows} rows a request")
