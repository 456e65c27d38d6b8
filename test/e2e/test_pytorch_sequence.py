"""PyTorch backend under the sequence batcher: a stateful TorchScript module
(its state a module attribute) fed the START control as a forward()
argument, bound by its <name>__<index> name as Triton's backend does; a
control not named so fails the load with Triton's text.
"""

import numpy as np
import pytest

import pt_fixtures as pf
import torch_models as tm
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)


def _config(name, control="START__1"):
    return tm.config(name, [("INPUT__0", "INT32", [1])], [("OUTPUT__0", "INT32", [1])], extra=f"""
sequence_batching {{
  max_sequence_idle_microseconds: 60000000
  control_input [
    {{ name: "{control}" control [ {{ kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] }} ] }}
  ]
}}
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
""")


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pt-seq")
    repo = tmp / "repo"
    tm.write(repo, "acc", tm.scripted(tm.Accumulate()), _config("acc"))
    tm.write(repo, "acc_badname", tm.scripted(tm.Accumulate()), _config("acc_badname", control="START"))
    s = pf.start(tmp / "srv", repo, wait_models=("acc",),
                 extra=["--model-control-mode=explicit", "--load-model=acc"])
    yield s
    s.stop(check=True)


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = pf.grpc_client(srv, grpc_stubs)
    yield c
    c.close()


@pytest.mark.parametrize("proto", pf.PROTOCOLS)
def test_state_across_a_sequence(srv, gc, proto):
    seq = {"json": 11, "binary": 12, "grpc": 13}[proto]
    values = [3, 4, -2, 10]
    total = 0
    for i, v in enumerate(values):
        total += v
        params = {"sequence_id": seq, "sequence_start": i == 0, "sequence_end": i == len(values) - 1}
        x = np.array([v], dtype=np.int32)
        out = pf.infer(proto, srv, "acc", [("INPUT__0", "INT32", [1], x)], gc=gc, parameters=params)
        assert out["OUTPUT__0"].tolist() == [total], (i, out)


def test_control_without_index_name_fails_the_load(srv):
    msg = pf.load_error(srv, "acc_badname")
    assert "input 'START' does not follow <name>__<index> naming convention." in msg, msg
