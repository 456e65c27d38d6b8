"""Prometheus metrics (GET http://127.0.0.1:<--metrics-port>/metrics) on a
fresh server for this module, serving test/models/batch_repo.

After a known sequence (plain: 3 successes of batch 1, 2, 3 and 1 backend
failure; batch8: 4 successes) the per-model counters must equal the
statistics extension's numbers: Triton increments both from the same events,
durations in microseconds (each request's ns / 1000, truncated).
The format is Triton 2.47's (/work/shared/conformance/triton-2.47/metrics.txt):
families with HELP and TYPE, series labelled model/version, every loaded
model version listed even with zeros. `promtool check metrics` must parse
it; its lint remarks on Triton's names (no _total suffix...) are expected.
"""

import re
import shutil
import socket
import subprocess
import threading
import time

import pytest
import requests

import batch_fixtures as bf

COUNTERS = (
    "nv_inference_request_success",
    "nv_inference_request_failure",
    "nv_inference_count",
    "nv_inference_exec_count",
    "nv_inference_request_duration_us",
    "nv_inference_queue_duration_us",
    "nv_inference_compute_input_duration_us",
    "nv_inference_compute_infer_duration_us",
    "nv_inference_compute_output_duration_us",
)
MODEL_GAUGES = ("nv_inference_pending_request_count",)
CPU_GAUGES = ("nv_cpu_utilization", "nv_cpu_memory_total_bytes", "nv_cpu_memory_used_bytes")
# counter -> the statistics field whose ns it reports in us
DURATION_OF = {
    "nv_inference_request_duration_us": "success",
    "nv_inference_queue_duration_us": "queue",
    "nv_inference_compute_input_duration_us": "compute_input",
    "nv_inference_compute_infer_duration_us": "compute_infer",
    "nv_inference_compute_output_duration_us": "compute_output",
}

NAME_RE = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SAMPLE_RE = re.compile(r"^(" + NAME_RE + r")(?:\{(.*)\})?[ \t]+(\S+)(?:[ \t]+(-?\d+))?$")
LABEL_RE = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"\s*(?:,|$)')
HELP_RE = re.compile(r"^# HELP (" + NAME_RE + r") (.*)$")
TYPE_RE = re.compile(r"^# TYPE (" + NAME_RE + r") (counter|gauge|histogram|summary|untyped)$")


# ------------------------------------------------------------ parsing ---

def parse_labels(text, line):
    labels, pos = {}, 0
    text = text.strip()
    while pos < len(text):
        m = LABEL_RE.match(text, pos)
        assert m and m.end() > pos, f"bad label set in line {line!r}"
        assert m.group(1) not in labels, f"label {m.group(1)} repeated in line {line!r}"
        labels[m.group(1)] = m.group(2)
        pos = m.end()
    return labels


def parse_metrics(text):
    """Strict parse of the Prometheus text format (0.0.4).
    Returns {family: {"help", "type", "samples": [(labels, value)]}}."""
    assert text.endswith("\n"), "the exposition must end with a newline"
    fams, seen = {}, set()
    for line in text.split("\n")[:-1]:
        if not line.strip():
            continue
        if line.startswith("#"):
            m = HELP_RE.match(line)
            if m:
                f = fams.setdefault(m.group(1), {"help": None, "type": None, "samples": []})
                assert f["help"] is None, f"second HELP for {m.group(1)}"
                assert not f["samples"], f"HELP for {m.group(1)} after its samples"
                f["help"] = m.group(2)
                continue
            m = TYPE_RE.match(line)
            if m:
                f = fams.setdefault(m.group(1), {"help": None, "type": None, "samples": []})
                assert f["type"] is None, f"second TYPE for {m.group(1)}"
                assert not f["samples"], f"TYPE for {m.group(1)} after its samples"
                f["type"] = m.group(2)
                continue
            assert not line.startswith("# HELP") and not line.startswith("# TYPE"), f"malformed {line!r}"
            continue  # a plain comment
        m = SAMPLE_RE.match(line)
        assert m, f"line is not a sample: {line!r}"
        name, labels = m.group(1), parse_labels(m.group(2) or "", line)
        try:
            value = float(m.group(3))
        except ValueError:
            raise AssertionError(f"bad sample value in {line!r}")
        key = (name, tuple(sorted(labels.items())))
        assert key not in seen, f"duplicate series {line!r}"
        seen.add(key)
        f = fams.setdefault(name, {"help": None, "type": None, "samples": []})
        f["samples"].append((labels, value))
    return fams


def fetch_metrics(srv):
    r = requests.get(f"http://127.0.0.1:{srv.metrics_port}/metrics", timeout=bf.HANG_S)
    assert r.status_code == 200, f"GET /metrics: HTTP {r.status_code} {r.text[:300]}"
    return r


def series(fams, name, model, version="1"):
    """Sum of the family's samples for that model/version (Triton may add labels, e.g. a failure reason)."""
    assert name in fams, f"metric family {name} missing"
    vals = [v for lab, v in fams[name]["samples"] if lab.get("model") == model and lab.get("version") == version]
    assert vals, f"no {name} series for model={model} version={version}"
    return sum(vals)


# ----------------------------------------------------------- fixtures ---

@pytest.fixture(scope="module")
def msrv(tmp_path_factory):
    yield from bf.module_batch_server(tmp_path_factory, "metrics")


@pytest.fixture(scope="module")
def known(msrv):
    """The known sequence; returns (statistics by model, metrics text) taken after it."""
    for k in (1, 2, 3):
        vals = bf.values_for(k, k)
        bf.check_echo(msrv.post("/v2/models/plain/infer", json=bf.infer_body(vals)), vals)
    r = msrv.post("/v2/models/plain/infer", json=bf.infer_body(bf.values_for(9), fail=True))
    assert r.status_code == 500, r.text
    r = msrv.post("/v2/models/plain/infer",
                  json={"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 2], "data": [1.0, 2.0]}]})
    assert r.status_code == 400, r.text
    for i in range(4):
        vals = bf.values_for(20 + i)
        bf.check_echo(msrv.post("/v2/models/batch8/infer", json=bf.infer_body(vals)), vals)
    stats = {
        "plain": bf.wait_stats(msrv, "plain", lambda s: bf.requests_counted(s) >= 4, "4 counted requests"),
        "batch8": bf.wait_stats(msrv, "batch8", lambda s: bf.requests_counted(s) >= 4, "4 counted requests"),
    }
    time.sleep(0.2)
    stats = {m: bf.get_stats(msrv, m) for m in stats}
    r = fetch_metrics(msrv)
    return {"stats": stats, "text": r.text, "content_type": r.headers.get("Content-Type", "")}


# -------------------------------------------------------------- tests ---

def test_metrics_text_format(known):
    assert known["content_type"].startswith("text/plain"), known["content_type"]
    fams = parse_metrics(known["text"])
    for name in COUNTERS:
        assert name in fams, f"{name} missing"
        assert fams[name]["type"] == "counter", (name, fams[name]["type"])
        assert fams[name]["help"], f"{name} has no HELP"
    for name in MODEL_GAUGES + CPU_GAUGES:
        assert name in fams, f"{name} missing"
        assert fams[name]["type"] == "gauge", (name, fams[name]["type"])
        assert fams[name]["help"], f"{name} has no HELP"
    for name, f in fams.items():
        if f["samples"]:
            assert f["type"] is not None, f"{name} has samples but no TYPE"


def test_counters_equal_statistics(known):
    fams = parse_metrics(known["text"])
    for model, st in known["stats"].items():
        s = st["inference_stats"]
        assert series(fams, "nv_inference_request_success", model) == s["success"]["count"], model
        assert series(fams, "nv_inference_request_failure", model) == s["fail"]["count"], model
        assert series(fams, "nv_inference_count", model) == st["inference_count"], model
        assert series(fams, "nv_inference_exec_count", model) == st["execution_count"], model


def test_known_sequence_values(known):
    """The absolute numbers of the sequence (as the statistics tests assert them)."""
    fams = parse_metrics(known["text"])
    assert series(fams, "nv_inference_request_success", "plain") == 3
    assert series(fams, "nv_inference_request_failure", "plain") == 1
    assert series(fams, "nv_inference_count", "plain") == 6
    assert series(fams, "nv_inference_exec_count", "plain") == 4
    assert series(fams, "nv_inference_request_success", "batch8") == 4
    assert series(fams, "nv_inference_request_failure", "batch8") == 0


def test_durations_in_us_equal_statistics_ns(known):
    fams = parse_metrics(known["text"])
    for model, st in known["stats"].items():
        s = st["inference_stats"]
        n = s["success"]["count"]
        for name, field in DURATION_OF.items():
            us = series(fams, name, model)
            ns = s[field]["ns"]
            # Per-request truncation loses < 1 us per successful request.
            assert ns // 1000 - n - 1 <= us <= ns // 1000 + 1, \
                f"{name}{{model={model}}} = {us} us but statistics say {field}.ns = {ns} ({n} requests)"
    # 3 executes of 1 ms each on plain, at the least.
    assert series(fams, "nv_inference_compute_infer_duration_us", "plain") >= 3 * 1000 - 3


def test_every_model_version_has_every_series(known):
    fams = parse_metrics(known["text"])
    for name in COUNTERS + MODEL_GAUGES:
        for model in bf.BATCH_MODELS:
            v = series(fams, name, model)
            assert v >= 0, (name, model, v)
    # Unused models show zeros.
    for name in COUNTERS:
        assert series(fams, name, "qsize") == 0, name


def test_pending_gauge_is_zero_when_idle(known):
    fams = parse_metrics(known["text"])
    for model in bf.BATCH_MODELS:
        assert series(fams, "nv_inference_pending_request_count", model) == 0, model


def test_cpu_gauges(known):
    fams = parse_metrics(known["text"])
    vals = {}
    for name in CPU_GAUGES:
        samples = fams[name]["samples"]
        assert len(samples) == 1 and samples[0][0] == {}, f"{name}: expected one unlabelled sample, got {samples}"
        vals[name] = samples[0][1]
    assert 0.0 <= vals["nv_cpu_utilization"] <= 1.0, vals
    total, used = vals["nv_cpu_memory_total_bytes"], vals["nv_cpu_memory_used_bytes"]
    assert total >= 0 and used >= 0, vals
    assert total == 0 or used <= total, vals  # Triton reports 0 until its first sample


def test_pending_gauge_counts_waiting_requests(msrv, known):
    """qsize: one request runs 300 ms, two wait behind it; the gauge, polled
    meanwhile, shows waiting requests (at most the 2 the queue holds), then 0."""
    s = bf.Sender(msrv)
    s.start("qsize", bf.infer_body(bf.values_for(0)))
    time.sleep(0.06)
    s.start("qsize", bf.infer_body(bf.values_for(1)))
    s.start("qsize", bf.infer_body(bf.values_for(2)))
    seen = []
    done = threading.Event()

    def waiter():
        try:
            s.join()
        finally:
            done.set()

    t = threading.Thread(target=waiter, daemon=True)
    t.start()
    while not done.is_set():
        seen.append(series(parse_metrics(fetch_metrics(msrv).text), "nv_inference_pending_request_count", "qsize"))
        time.sleep(0.02)
    t.join(bf.HANG_S)
    for i, res in enumerate(s.results):
        bf.check_echo(res["resp"], bf.values_for(i))
    assert max(seen) >= 1, f"pending count never above 0 while two requests waited: {seen}"
    assert max(seen) <= 2, f"pending count above the 2 requests that could wait: {seen}"
    final = series(parse_metrics(fetch_metrics(msrv).text), "nv_inference_pending_request_count", "qsize")
    assert final == 0, final


def _promtool_check(text):
    exe = shutil.which("promtool")
    if exe is None:
        pytest.skip("promtool not installed (Debian package `prometheus`): promtool check skipped")
    p = subprocess.run([exe, "check", "metrics"], input=text.encode(), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=bf.HANG_S)
    return p.returncode, p.stdout.decode("utf-8", "replace")


def _promtool_parse_ok(rc, out):
    # Exit 0: clean. Lint remarks (Triton's names lack _total, use _us...) make it
    # exit non-zero (3 in promtool 2.42, 1 in others) without any "error"; a
    # parse failure says "error while linting: text format parsing error ...".
    return rc in (0, 1, 3) and "error" not in out.lower()


def test_promtool_detects_a_parse_error():
    """The check below is able to fail: a malformed exposition is caught."""
    rc, out = _promtool_check('# TYPE bad counter\nbad{model="x" 1\n')
    assert not _promtool_parse_ok(rc, out), f"promtool accepted malformed text (rc {rc}): {out}"


def test_promtool_parses_metrics(known):
    rc, out = _promtool_check(known["text"])
    assert _promtool_parse_ok(rc, out), f"promtool check metrics failed (rc {rc}):\n{out}\n--- metrics ---\n" \
                                        f"{known['text'][:3000]}"


def _refused(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return False
    except (ConnectionRefusedError, socket.timeout, OSError):
        return True


def test_allow_metrics_false_closes_the_metrics_port(private_server):
    srv = private_server(extra=["--allow-metrics=false"])
    assert srv.get("/v2/models/identity_fp32/ready").status_code == 200
    assert _refused(srv.metrics_port), f"something listens on metrics port {srv.metrics_port} with --allow-metrics=false"


def test_metrics_served_on_the_metrics_port_by_default(private_server):
    srv = private_server()
    r = fetch_metrics(srv)
    fams = parse_metrics(r.text)
    for name in COUNTERS:
        series(fams, name, "identity_fp32")
    assert srv.alive()
