"""Backend-defined metrics (the TRITONSERVER_Metric* API) on /metrics.

The idmetrics test backend (test/models/backends/idmetrics) does what Triton's
current identity backend does with metrics: a counter family
"input_byte_size_counter" created in TRITONBACKEND_Initialize, one metric per
model labelled model/version, incremented by each copied input's byte size on
execute; plus a histogram of input bytes per request and a gauge of requests
per execute. Models ma and mb share the library from the backend directory;
mc loads its own copy from its folder, a second library that creates the same
families (Triton's registry shares a family by name).

Before the metrics API existed, TRITONSERVER_MetricFamilyNew answered
UNSUPPORTED, TRITONBACKEND_Initialize failed and none of these models loaded.
"""

import shutil
import threading

import pytest

import e2e_helpers as h
from test_metrics import _promtool_check, _promtool_parse_ok, fetch_metrics, parse_metrics

METRICS_REPO = h.REPO_ROOT / "test" / "models" / "metrics_repo"
MODELS = ("ma", "mb", "mc")
COUNTER = "input_byte_size_counter"
HIST = "idmetrics_request_input_bytes"
GAUGE = "idmetrics_last_execute_requests"
BUCKETS = (16, 64, 256)
# The gauge's note label as the exposition escapes it (backslash, quote, newline).
NOTE_ESCAPED = 'q\\"uote back\\\\slash new\\nline'


def idmetrics_so():
    return h.build_dir() / "test" / "backends" / "idmetrics" / "libtriton_idmetrics.so"


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    h.require_binary()
    so = idmetrics_so()
    assert so.is_file(), f"{so} is not built (make all builds test/models/backends/*)"
    tmp = tmp_path_factory.mktemp("custom-metrics")
    repo = tmp / "repo"
    shutil.copytree(METRICS_REPO, repo)
    shutil.copy2(so, repo / "mc" / so.name)
    bdir = tmp / "backends" / "idmetrics"
    bdir.mkdir(parents=True)
    shutil.copy2(so, bdir / so.name)
    s = h.start_server(tmp, [repo], extra=[f"--backend-directory={tmp / 'backends'}"], wait_models=MODELS)
    try:
        yield s
    finally:
        s.stop(check=True)


def infer(srv, model, n):
    """One request of n FP32 values (4n input bytes); checks the echo."""
    vals = [float(i) + 0.5 for i in range(n)]
    r = h.infer_json(srv, model, [("INPUT0", "FP32", [n], vals)])
    assert r.status_code == 200, f"{model}: HTTP {r.status_code} {r.text[:300]}"
    out = {o["name"]: o for o in r.json()["outputs"]}
    assert out["OUTPUT0"]["data"] == vals
    return 4 * n


def samples(fams, name, model):
    assert name in fams, f"family {name} missing"
    return [(lab, v) for lab, v in fams[name]["samples"] if lab.get("model") == model]


def value(fams, name, model, **labels):
    """The one sample of `name` for `model` whose labels include `labels`; 0 when absent."""
    if name not in fams:
        return 0.0
    vals = [v for lab, v in samples(fams, name, model) if all(lab.get(k) == x for k, x in labels.items())]
    assert len(vals) <= 1, (name, model, labels, vals)
    return vals[0] if vals else 0.0


@pytest.fixture(scope="module")
def known(srv):
    """A known load; returns the input bytes of each request sent per model and
    the pages before and after it (values are compared as differences)."""
    before = fetch_metrics(srv).text
    sizes = {"ma": [], "mb": [], "mc": []}
    for model, n in (("ma", 2), ("ma", 5), ("ma", 20), ("mb", 100), ("mc", 1)):
        sizes[model].append(infer(srv, model, n))
    # Concurrent requests on ma: both instances update the same metrics.
    errors, lock = [], threading.Lock()

    def worker():
        try:
            got = [infer(srv, "ma", 4) for _ in range(10)]
        except Exception as e:  # noqa: BLE001 - reported below
            with lock:
                errors.append(repr(e))
            return
        with lock:
            sizes["ma"].extend(got)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(h.HTTP_TIMEOUT_S)
    assert not errors, errors
    return {"sizes": sizes, "before": parse_metrics(before), "text": fetch_metrics(srv).text}


def test_models_of_the_metrics_backend_load_and_infer(srv):
    for m in MODELS:
        assert srv.get(f"/v2/models/{m}/ready").status_code == 200, m
        infer(srv, m, 3)


def test_counter_family_per_model(known):
    fams, before = parse_metrics(known["text"]), known["before"]
    f = fams[COUNTER]
    assert f["type"] == "counter"
    assert f["help"] == "Cumulative input_byte_size across all identity model requests"
    for model in MODELS:
        s = samples(fams, COUNTER, model)
        assert len(s) == 1, s
        assert s[0][0] == {"model": model, "version": "1"}, s[0][0]
        grown = s[0][1] - value(before, COUNTER, model)
        assert grown == sum(known["sizes"][model]), (model, grown)
    assert sum(known["sizes"]["ma"]) == 4 * (2 + 5 + 20) + 40 * 16


def test_histogram_buckets_sum_count(known):
    fams, before = parse_metrics(known["text"]), known["before"]
    assert fams[HIST]["type"] == "histogram"
    for model in MODELS:
        sizes = known["sizes"][model]
        les = [labels["le"] for labels, _ in samples(fams, HIST + "_bucket", model)]
        assert les == [str(b) for b in BUCKETS] + ["+Inf"], les
        for labels, _ in samples(fams, HIST + "_bucket", model):
            assert set(labels) == {"model", "version", "le"}, labels
        for le in les:
            bound = float(le)
            grown = value(fams, HIST + "_bucket", model, le=le) - value(before, HIST + "_bucket", model, le=le)
            assert grown == sum(1 for s in sizes if s <= bound), (model, le, grown)
        assert value(fams, HIST + "_count", model) - value(before, HIST + "_count", model) == len(sizes)
        assert value(fams, HIST + "_sum", model) - value(before, HIST + "_sum", model) == sum(sizes)
        assert value(fams, HIST + "_count", model) == value(fams, HIST + "_bucket", model, le="+Inf")


def test_gauge_with_escaped_label(known):
    fams = parse_metrics(known["text"])
    assert fams[GAUGE]["type"] == "gauge"
    for model in MODELS:
        s = samples(fams, GAUGE, model)
        assert len(s) == 1, s
        labels, value = s[0]
        assert labels == {"model": model, "version": "1", "note": NOTE_ESCAPED}, labels
        assert value >= 1


def test_server_families_still_there(known):
    fams = parse_metrics(known["text"])
    for model in MODELS:
        s = [v for lab, v in fams["nv_inference_request_success"]["samples"] if lab.get("model") == model]
        assert s and s[0] >= 1, (model, s)


def test_promtool_parses_custom_families(known):
    rc, out = _promtool_check(known["text"])
    assert _promtool_parse_ok(rc, out), f"promtool check metrics failed (rc {rc}):\n{out}\n" \
                                        f"--- metrics ---\n{known['text'][-3000:]}"


def test_values_grow_with_more_requests(srv, known):
    before = parse_metrics(fetch_metrics(srv).text)
    infer(srv, "mb", 7)
    after = parse_metrics(fetch_metrics(srv).text)
    assert samples(after, COUNTER, "mb")[0][1] == samples(before, COUNTER, "mb")[0][1] + 28
    assert samples(after, HIST + "_count", "mb")[0][1] == samples(before, HIST + "_count", "mb")[0][1] + 1
    assert samples(after, GAUGE, "mb")[0][1] == 1
