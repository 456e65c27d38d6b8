"""PyTorch backend, implicit state (Triton's "Implicit State Management"):
the config's sequence_batching.state names a state input and output; the
state input is one more forward() argument, the state output one more
result, both bound by their <name>__<index> names as Triton's PyTorch
backend requires; the output of request i of a sequence is the state input
of request i+1. The client gets the state output only where the config's
outputs list it. States with names Triton's backend refuses fail the load
with its texts.
"""

import numpy as np
import pytest

import pt_fixtures as pf
import torch_models as tm
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

WIDTH = 3


def _cfg(name, inp="INPUT__0", out="OUTPUT__0", state_in="STATE__1", state_out="STATE__1",
         debug=False, direct=""):
    outs = [f'{{ name: "{out}" data_type: TYPE_INT32 dims: [ {WIDTH} ] }}']
    if debug:
        outs.append(f'{{ name: "{state_out}" data_type: TYPE_INT32 dims: [ {WIDTH} ] }}')
    return f"""name: "{name}"
backend: "pytorch"
max_batch_size: 2
sequence_batching {{
  max_sequence_idle_microseconds: 10000000
  {direct}
  state [ {{
    input_name: "{state_in}"
    output_name: "{state_out}"
    data_type: TYPE_INT32
    dims: [ {WIDTH} ]
    initial_state: {{ data_type: TYPE_INT32 dims: [ {WIDTH} ] zero_data: true name: "zero" }}
  }} ]
}}
input [ {{ name: "{inp}" data_type: TYPE_INT32 dims: [ {WIDTH} ] }} ]
output [ {", ".join(outs)} ]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
"""


PAIR = "direct { max_queue_delay_microseconds: 3000000 minimum_slot_utilization: 1.0 }"

BAD = {
    # The inputs follow forward()'s argument names, not <name>__<index>.
    "state_args": (dict(inp="x"), "is using sequence batching with state but not all inputs and "
                                  "outputs follow the <name>__<index> naming convention."),
    # The state's own name is no <name>__<index>.
    "state_badname": (dict(state_in="STATE", state_out="STATE"),
                      "is using sequence batching with state but state 'STATE' does not follow "
                      "the <name>__<index> naming convention."),
}


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pt-state")
    repo = tmp / "repo"
    module = tm.scripted(tm.StateAdd())
    tm.write(repo, "acc", module, _cfg("acc"))
    tm.write(repo, "acc_debug", module, _cfg("acc_debug", debug=True))
    # Both slots must hold a request before a batch runs (up to 3 s).
    tm.write(repo, "acc_pair", module, _cfg("acc_pair", direct=PAIR))
    for name, (kw, _) in BAD.items():
        tm.write(repo, name, module, _cfg(name, **kw))
    s = pf.start(tmp / "srv", repo, wait_models=("acc", "acc_debug", "acc_pair"),
                 extra=["--model-control-mode=explicit", "--load-model=acc", "--load-model=acc_debug",
                        "--load-model=acc_pair"])
    yield s
    s.stop(check=True)


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = pf.grpc_client(srv, grpc_stubs)
    yield c
    c.close()


def _step(srv, gc, proto, model, seq, value, start=False, end=False, outputs=None):
    x = np.asarray(value, dtype=np.int32).reshape(1, WIDTH)
    params = {"sequence_id": seq}
    if start:
        params["sequence_start"] = True
    if end:
        params["sequence_end"] = True
    return pf.infer(proto, srv, model, [("INPUT__0", "INT32", [1, WIDTH], x)], outputs=outputs,
                    gc=gc, parameters=params)


@pytest.mark.parametrize("proto", pf.PROTOCOLS)
def test_state_accumulates_over_a_sequence(srv, gc, proto):
    seq = {"json": 101, "binary": 102, "grpc": 103}[proto]
    total = np.zeros(WIDTH, dtype=np.int32)
    steps = [[1, 2, 3], [10, 20, 30], [-4, 0, 4], [7, 7, 7]]
    for i, v in enumerate(steps):
        out = _step(srv, gc, proto, "acc", seq, v, start=i == 0, end=i == len(steps) - 1)
        total = total + np.asarray(v, dtype=np.int32)
        assert list(out) == ["OUTPUT__0"], out
        np.testing.assert_array_equal(out["OUTPUT__0"].reshape(WIDTH), total, err_msg=f"step {i}")


def test_a_new_sequence_starts_from_the_initial_state(srv, gc):
    for run in range(2):
        out = _step(srv, gc, "binary", "acc", 201, [5, 6, 7], start=True)
        np.testing.assert_array_equal(out["OUTPUT__0"].reshape(WIDTH), [5, 6, 7], err_msg=f"run {run}")
        out = _step(srv, gc, "grpc", "acc", 201, [1, 1, 1], end=True)
        np.testing.assert_array_equal(out["OUTPUT__0"].reshape(WIDTH), [6, 7, 8], err_msg=f"run {run}")


def test_concurrent_sequences_keep_their_own_state(srv, gc):
    """Two batch slots (max_batch_size 2, one instance) that must both hold
    a request before a batch runs: two sequences sent at the same time run
    batched together, each with its own state row. (A third would wait in
    the backlog until one of them ends.)"""
    ids = [301, 302]
    before = pf.model_stats(srv, "acc_pair")
    totals = {s: np.zeros(WIDTH, dtype=np.int32) for s in ids}
    for step in range(4):
        def req(k, s):
            v = np.array([step + 1, (k + 1) * 10, -k], dtype=np.int32)
            totals[s] = totals[s] + v
            want = totals[s].copy()
            proto = pf.PROTOCOLS[(step + k) % 3]
            return lambda: (_step(srv, gc, proto, "acc_pair", s, v, start=step == 0, end=step == 3),
                            want, s)
        for out, want, s in pf.concurrently([req(k, s) for k, s in enumerate(ids)]):
            np.testing.assert_array_equal(out["OUTPUT__0"].reshape(WIDTH), want,
                                          err_msg=f"seq {s} step {step}")
    after = pf.model_stats(srv, "acc_pair")
    assert after["inference_count"] - before["inference_count"] == 8, after
    assert after["execution_count"] - before["execution_count"] == 4, after


def test_state_output_returned_when_listed(srv, gc):
    out = _step(srv, gc, "binary", "acc_debug", 401, [2, 3, 4], start=True)
    assert set(out) == {"OUTPUT__0", "STATE__1"}, out
    np.testing.assert_array_equal(out["STATE__1"].reshape(WIDTH), [2, 3, 4])
    out = _step(srv, gc, "json", "acc_debug", 401, [1, 1, 1], end=True, outputs=["STATE__1"])
    assert list(out) == ["STATE__1"], out
    np.testing.assert_array_equal(out["STATE__1"].reshape(WIDTH), [3, 4, 5])


def test_state_output_not_listed_is_no_output(srv, gc):
    with pytest.raises(pf.Failed) as e:
        _step(srv, gc, "binary", "acc", 402, [1, 1, 1], start=True, end=True, outputs=["STATE__1"])
    assert e.value.code == 400 and "STATE__1" in e.value.message, e.value


@pytest.mark.parametrize("name", sorted(BAD))
def test_state_naming_errors_fail_the_load(srv, name):
    msg = pf.load_error(srv, name)
    assert BAD[name][1] in msg, msg
