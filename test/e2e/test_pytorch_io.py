"""PyTorch backend: Triton's pytorch_libtorch input and output naming rules,
tuple / list / dictionary results, a traced module, every data type
libtorch has and BYTES as List[str], over HTTP JSON, HTTP binary and gRPC.

One inferd serves a repository of TorchScript models scripted or traced at
test time (torch_models.py); expected outputs are computed with torch.
"""

import numpy as np
import pytest
import torch

import pt_fixtures as pf
import torch_models as tm
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

W = 4
F32 = [("INPUT__0", "FP32", [W]), ("INPUT__1", "FP32", [W])]
OUT2 = [("OUTPUT__0", "FP32", [W]), ("OUTPUT__1", "FP32", [W])]


def _build_repo(repo):
    tm.write(repo, "addsub", tm.scripted(tm.AddSub()), tm.config("addsub", F32, OUT2, max_batch_size=8))
    tm.write(repo, "addsub_platform", tm.scripted(tm.AddSub()),
             tm.config("addsub_platform", F32, OUT2, max_batch_size=8, platform=True))
    # Named after forward()'s arguments, listed in the other order.
    tm.write(repo, "named", tm.scripted(tm.AddSub()),
             tm.config("named", [("b", "FP32", [W]), ("a", "FP32", [W])], OUT2, max_batch_size=8))
    # Neither argument names nor <name>__<index>: the configuration's order.
    tm.write(repo, "ordered", tm.scripted(tm.AddSub()),
             tm.config("ordered", [("first", "FP32", [W]), ("second", "FP32", [W])],
                       [("plus", "FP32", [W]), ("minus", "FP32", [W])], max_batch_size=8))
    # <name>__<index> binds by index whatever the order in the configuration.
    tm.write(repo, "swapped", tm.scripted(tm.AddSub()),
             tm.config("swapped", [("INPUT__1", "FP32", [W]), ("INPUT__0", "FP32", [W])],
                       [("OUTPUT__1", "FP32", [W]), ("OUTPUT__0", "FP32", [W])], max_batch_size=8))
    tm.write(repo, "dict_out", tm.scripted(tm.AddSubDict()),
             tm.config("dict_out", F32, [("diff", "FP32", [W]), ("sum", "FP32", [W])], max_batch_size=8))
    tm.write(repo, "list_out", tm.scripted(tm.AddSubList()), tm.config("list_out", F32, OUT2, max_batch_size=8))
    tm.write(repo, "dict_in", tm.scripted(tm.DictInput()),
             tm.config("dict_in", [("x", "INT64", [W]), ("y", "INT64", [W])], [("OUTPUT__0", "INT64", [W])],
                       max_batch_size=8))
    tm.write(repo, "linear", tm.linear(),
             tm.config("linear", [("INPUT__0", "FP32", [4])], [("OUTPUT__0", "FP32", [3])], max_batch_size=8))
    tm.write(repo, "nobatch", tm.scripted(tm.AddSub()),
             tm.config("nobatch", [("INPUT__0", "INT32", [2, 3]), ("INPUT__1", "INT32", [2, 3])],
                       [("OUTPUT__0", "INT32", [2, 3]), ("OUTPUT__1", "INT32", [2, 3])]))
    tm.write(repo, "strings", tm.scripted(tm.Strings()),
             tm.config("strings", [("INPUT__0", "BYTES", [-1])],
                       [("OUTPUT__0", "BYTES", [-1]), ("OUTPUT__1", "INT64", [-1])]))
    for t in tm.TORCH_TYPES:
        name = f"id_{t.lower()}"
        tm.write(repo, name, tm.scripted(tm.Identity()),
                 tm.config(name, [("INPUT__0", t, [W])], [("OUTPUT__0", t, [W])], max_batch_size=8))


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pt-io")
    repo = tmp / "repo"
    _build_repo(repo)
    s = pf.start(tmp / "srv", repo, wait_models=("addsub", "id_fp32"))
    yield s
    s.stop(check=True)


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = pf.grpc_client(srv, grpc_stubs)
    yield c
    c.close()


def _ab(rows=2, dtype=np.float32):
    a = np.arange(rows * W, dtype=dtype).reshape(rows, W)
    b = (np.arange(rows * W, dtype=dtype).reshape(rows, W) * 3 + 1)[:, ::-1].copy()
    return a, b


def _expected_addsub(a, b):
    s, d = tm.AddSub()(torch.from_numpy(a), torch.from_numpy(b))
    return s.numpy(), d.numpy()


@pytest.mark.parametrize("proto", pf.PROTOCOLS)
@pytest.mark.parametrize("model", ["addsub", "addsub_platform", "list_out"])
def test_positional_inputs_two_outputs(srv, gc, proto, model):
    a, b = _ab()
    out = pf.infer(proto, srv, model, [("INPUT__0", "FP32", a.shape, a), ("INPUT__1", "FP32", b.shape, b)], gc=gc)
    s, d = _expected_addsub(a, b)
    np.testing.assert_array_equal(out["OUTPUT__0"], s)
    np.testing.assert_array_equal(out["OUTPUT__1"], d)


@pytest.mark.parametrize("proto", pf.PROTOCOLS)
def test_inputs_named_after_forward_arguments(srv, gc, proto):
    a, b = _ab()
    out = pf.infer(proto, srv, "named", [("b", "FP32", b.shape, b), ("a", "FP32", a.shape, a)], gc=gc)
    s, d = _expected_addsub(a, b)
    np.testing.assert_array_equal(out["OUTPUT__0"], s)
    np.testing.assert_array_equal(out["OUTPUT__1"], d)


def test_other_names_follow_the_configuration_order(srv, gc):
    a, b = _ab()
    out = pf.infer("binary", srv, "ordered", [("second", "FP32", b.shape, b), ("first", "FP32", a.shape, a)])
    s, d = _expected_addsub(a, b)
    np.testing.assert_array_equal(out["plus"], s)
    np.testing.assert_array_equal(out["minus"], d)
    assert "Falling back to enforcing strict ordering" in srv.log_tail(1 << 20)


def test_named_index_binds_by_index_not_order(srv, gc):
    a, b = _ab()
    out = pf.infer("grpc", srv, "swapped", [("INPUT__0", "FP32", a.shape, a), ("INPUT__1", "FP32", b.shape, b)],
                   gc=gc)
    s, d = _expected_addsub(a, b)
    np.testing.assert_array_equal(out["OUTPUT__0"], s)
    np.testing.assert_array_equal(out["OUTPUT__1"], d)


@pytest.mark.parametrize("proto", pf.PROTOCOLS)
def test_dictionary_result_by_output_name(srv, gc, proto):
    a, b = _ab(3)
    out = pf.infer(proto, srv, "dict_out", [("INPUT__0", "FP32", a.shape, a), ("INPUT__1", "FP32", b.shape, b)],
                   gc=gc)
    s, d = _expected_addsub(a, b)
    np.testing.assert_array_equal(out["sum"], s)
    np.testing.assert_array_equal(out["diff"], d)


def test_dictionary_result_logs_no_ordering_warning(srv):
    # forward() is declared to return a Dict: outputs are read by name, so
    # Triton's warning for output names that are no <name>__<index> does not
    # apply (the 'ordered' model, with a tuple result, still gets it).
    log = srv.log_tail(1 << 20)
    assert "output 'plus' or previous output(s) of the model 'ordered' do not follow" in log
    assert "of the model 'dict_out' do not follow" not in log


def test_requested_output_only(srv, gc):
    a, b = _ab()
    out = pf.infer("binary", srv, "dict_out", [("INPUT__0", "FP32", a.shape, a), ("INPUT__1", "FP32", b.shape, b)],
                   outputs=["diff"])
    assert list(out) == ["diff"]
    np.testing.assert_array_equal(out["diff"], a - b)


def test_dictionary_input(srv, gc):
    x = np.arange(8, dtype=np.int64).reshape(2, W)
    y = np.full((2, W), 5, dtype=np.int64)
    out = pf.infer("json", srv, "dict_in", [("x", "INT64", x.shape, x), ("y", "INT64", y.shape, y)])
    expect = tm.DictInput()({"x": torch.from_numpy(x), "y": torch.from_numpy(y)}).numpy()
    np.testing.assert_array_equal(out["OUTPUT__0"], expect)


@pytest.mark.parametrize("proto", pf.PROTOCOLS)
def test_traced_module(srv, gc, proto):
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    out = pf.infer(proto, srv, "linear", [("INPUT__0", "FP32", x.shape, x)], gc=gc)
    with torch.no_grad():
        expect = tm.linear()(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(out["OUTPUT__0"], expect, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("proto", pf.PROTOCOLS)
def test_model_without_batching(srv, gc, proto):
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = np.full((2, 3), -4, dtype=np.int32)
    out = pf.infer(proto, srv, "nobatch", [("INPUT__0", "INT32", a.shape, a), ("INPUT__1", "INT32", b.shape, b)],
                   gc=gc)
    np.testing.assert_array_equal(out["OUTPUT__0"], a + b)
    np.testing.assert_array_equal(out["OUTPUT__1"], a - b)


def _values(t, rows=2):
    n = rows * W
    if t == "BOOL":
        return (np.arange(n) % 3 == 0).reshape(rows, W)
    v = np.arange(n).reshape(rows, W) - 3
    if t == "UINT8":
        v = v + 200
    if t in ("FP16", "FP32", "FP64"):
        v = v * 0.5
    return v.astype(tm.om.np_dtype(t))


@pytest.mark.parametrize("proto", pf.PROTOCOLS)
@pytest.mark.parametrize("t", list(tm.TORCH_TYPES))
def test_every_data_type(srv, gc, proto, t):
    v = _values(t)
    out = pf.infer(proto, srv, f"id_{t.lower()}", [("INPUT__0", t, v.shape, v)], gc=gc)
    expect = tm.Identity()(torch.from_numpy(v)).numpy()
    assert pf.infer.last["OUTPUT__0"][0] == t
    np.testing.assert_array_equal(out["OUTPUT__0"], expect)


@pytest.mark.parametrize("proto", pf.PROTOCOLS)
def test_bytes_as_list_of_strings(srv, gc, proto):
    words = ["alpha", "", "Beta gamma", "zz"]
    out = pf.infer(proto, srv, "strings", [("INPUT__0", "BYTES", [len(words)], [w.encode() for w in words])],
                   gc=gc)
    up, lens = tm.Strings()(words)
    assert out["OUTPUT__0"] == [u.encode() for u in up]
    np.testing.assert_array_equal(out["OUTPUT__1"], lens.numpy())
