"""Model configuration validation as Triton's own suite expects it.

reference/config-sanity-cases.json holds the non-ensemble cases of
shared/conformance/config-sanity/cases.json: model repositories from Triton's
qa/L0_model_config suite (v2.47.0) with what tritonserver 2.47 did with each
model, loaded or refused with which message. Every case is replayed here: the
cases that share server flags go into one repository served by one inferd
(two servers in all), and each case is then judged on its own. The ensemble
cases (reference/config-sanity-ensemble-cases.json) share model names, so
each is served by its own inferd. Judging:

- a model Triton loaded must be READY;
- a model Triton refused must not be READY, and its reason must carry one of
  the case's `keys` (the message that identifies the refusal).

Messages are compared as Triton words them, with two allowances: Triton's
status prefix ("Invalid argument: ") is not required, and Triton 2.48 and
later name the tensor in dims/reshape messages ("model input 'x' dimension
..."), so an inferd reason may carry that name.

Run as a script to count agreement over any cases file, ensembles included
(one server per case there, since ensemble cases share model names):

    INFERD_BUILD=build /usr/bin/python3 test/e2e/test_config_sanity.py \
        [../shared/conformance/config-sanity/cases.json]
"""

import json
import re
import sys
import time
from pathlib import Path

import pytest

import e2e_helpers as h

CASES_FILE = Path(__file__).resolve().parent / "reference" / "config-sanity-cases.json"
ENSEMBLE_CASES_FILE = (
    Path(__file__).resolve().parent / "reference" / "config-sanity-ensemble-cases.json"
)

# Triton writes this where a load fails in the model's life cycle (backend
# lookup, initialization) rather than in the repository manager.
STATUS_PREFIX = "Invalid argument: "

# Generous: only there so that nothing hangs; never asserted on as a timing.
LOAD_TIMEOUT_S = 60


def load_cases(path=CASES_FILE):
    with open(path) as f:
        return json.load(f)["cases"]


def is_ensemble_case(case):
    return "/ensemble/" in case["id"]


def build_repo(root, cases):
    """Writes every model of `cases` into one repository at `root`."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for case in cases:
        for name, model in case["models"].items():
            mdir = root / name
            assert not mdir.exists(), f"model {name} appears in two cases"
            mdir.mkdir()
            if model.get("config") is not None:
                (mdir / "config.pbtxt").write_text(model["config"])
            for v in model.get("versions", []):
                (mdir / str(v)).mkdir()
            for rel, text in (model.get("files") or {}).items():
                p = mdir / rel
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(text)
    return root


def wait_loaded(srv, timeout=LOAD_TIMEOUT_S):
    """Waits for the server's 'model loading finished' log line."""
    deadline = time.monotonic() + timeout
    while "model loading finished" not in srv.log_tail(1 << 20):
        if not srv.alive():
            raise AssertionError(f"inferd exited while loading\n{srv.log_tail()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"models still loading after {timeout}s\n{srv.log_tail()}")
        time.sleep(0.05)


def model_results(srv):
    """name -> (loaded, reason) from the repository index."""
    r = srv.post("/v2/repository/index", json={})
    assert r.status_code == 200, r.text
    out = {}
    for e in r.json():
        loaded, reasons = out.get(e["name"], (False, []))
        loaded = loaded or e.get("state") == "READY"
        if e.get("reason"):
            reasons = reasons + [e["reason"]]
        out[e["name"]] = (loaded, reasons)
    return {k: (v[0], "\n".join(v[1])) for k, v in out.items()}


def run_cases(tmp, cases, flags):
    """Serves `cases` (which share `flags`) from one inferd; returns the
    model results."""
    repo = build_repo(Path(tmp) / "repo", cases)
    srv = h.start_server(Path(tmp) / "srv", [repo], extra=list(flags), wait_models=())
    try:
        wait_loaded(srv)
        return model_results(srv)
    finally:
        srv.stop(check=True)


_TENSOR_NAME = re.compile(r"\b(model (?:input|output)) '[^']*'")


def _normalize(text):
    """Drops the tensor name Triton 2.48+ puts after "model input"/"model output"."""
    return _TENSOR_NAME.sub(r"\1", text)


def judge(case, results):
    """Returns the disagreements between inferd's `results` and Triton's
    answer for one case (an empty list when they agree)."""
    problems = []
    for name, want in case["triton"].items():
        got = results.get(name)
        if got is None:
            problems.append(f"{name}: not in inferd's repository index")
            continue
        loaded, reason = got
        if want["loaded"]:
            if not loaded:
                problems.append(f"{name}: Triton loads it, inferd refuses: {reason}")
            continue
        if loaded:
            problems.append(f"{name}: Triton refuses it ({want['reason']}), inferd loads it")
            continue
        keys = case["keys"].get(name) or [want["reason"]]
        keys = [k[len(STATUS_PREFIX):] if k.startswith(STATUS_PREFIX) else k for k in keys]
        if not any(_normalize(k) in _normalize(reason) for k in keys):
            problems.append(f"{name}: reason differs\n    Triton: {keys[0]}\n    inferd: {reason}")
    return problems


# ------------------------------------------------------------------ pytest ---

NON_ENSEMBLE = [c for c in load_cases() if not is_ensemble_case(c)]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Replays every case: one server per distinct set of flags."""
    h.require_binary()
    groups = {}
    for c in NON_ENSEMBLE:
        groups.setdefault(tuple(c["flags"]), []).append(c)
    out = {}
    for i, (flags, cases) in enumerate(sorted(groups.items())):
        out.update(run_cases(tmp_path_factory.mktemp(f"sanity{i}"), cases, flags))
    return out


def test_cases_present():
    # 63 non-ensemble cases of the 97 recorded; guards against a truncated file.
    assert len(NON_ENSEMBLE) == 63


@pytest.mark.parametrize("case", NON_ENSEMBLE, ids=[c["id"] for c in NON_ENSEMBLE])
def test_case(case, results):
    problems = judge(case, results)
    assert not problems, "\n".join(problems)


ENSEMBLE = load_cases(ENSEMBLE_CASES_FILE)


def test_ensemble_cases_present():
    # The other 34 of the 97 recorded.
    assert len(ENSEMBLE) == 34
    assert all(is_ensemble_case(c) for c in ENSEMBLE)


@pytest.mark.parametrize("case", ENSEMBLE, ids=[c["id"] for c in ENSEMBLE])
def test_ensemble_case(case, tmp_path):
    h.require_binary()
    problems = judge(case, run_cases(tmp_path, [case], case["flags"]))
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------ script ---

def main(argv):
    import tempfile

    path = Path(argv[1]) if len(argv) > 1 else CASES_FILE
    cases = load_cases(path)
    agree = {"ensemble": [0, 0], "other": [0, 0]}
    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(cases):
            kind = "ensemble" if is_ensemble_case(case) else "other"
            res = run_cases(Path(tmp) / str(i), [case], case["flags"])
            problems = judge(case, res)
            agree[kind][1] += 1
            if problems:
                print(f"DISAGREE {case['id']}")
                for p in problems:
                    print("  " + p)
            else:
                agree[kind][0] += 1
    ok = agree["other"][0] + agree["ensemble"][0]
    total = agree["other"][1] + agree["ensemble"][1]
    print(f"non-ensemble: {agree['other'][0]}/{agree['other'][1]}  "
          f"ensemble: {agree['ensemble'][0]}/{agree['ensemble'][1]}  overall: {ok}/{total}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
