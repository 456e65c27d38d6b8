"""batch_stats of a batching Python model (issue 28): an execution's batch
size is the sum of its requests' batch dimensions, as Triton's Python
backend reports it (TRITONBACKEND_ModelInstanceReportBatchStatistics with
the first input's first dims), not the number of requests.

Model: `batched` of test/models/python_repo (max_batch_size 8, a dynamic
batcher waiting 200 ms; NREQ tells how many requests its execute got).
"""

import concurrent.futures as cf

import pytest
import requests

import python_fixtures as pf


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = pf.start_python_server(tmp_path_factory.mktemp("pybatch"), ("batched",), ("batched",))
    try:
        yield s
    finally:
        s.stop(check=True)


def infer2(srv, i):
    body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [2, 4], "data": [float(i)] * 8}]}
    r = requests.post(srv.url("/v2/models/batched/infer"), json=body, timeout=pf.HANG_S)
    assert r.status_code == 200, r.text
    nreq = [o for o in r.json()["outputs"] if o["name"] == "NREQ"][0]["data"]
    return nreq[0]


def test_batch_size_is_the_sum_of_batch_dims(srv):
    with cf.ThreadPoolExecutor(4) as ex:
        nreqs = list(ex.map(lambda i: infer2(srv, i), range(4)))
    st = requests.get(srv.url("/v2/models/batched/stats"), timeout=10).json()["model_stats"][0]
    sizes = {b["batch_size"]: b["compute_infer"]["count"] for b in st["batch_stats"]}
    # Four requests of batch 2: eight inferences over the executions.
    assert sum(k * v for k, v in sizes.items()) == 8, st["batch_stats"]
    assert st["inference_count"] == 8, st
    # An execute that got n requests ran a batch of 2n.
    assert set(sizes) == {2 * n for n in nreqs}, (sizes, nreqs)
