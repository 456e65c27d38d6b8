"""dynamic_batching { preserve_ordering: true }: responses leave in the order
requests arrived, even when a later request finishes first.

Two models on the `sleep` test backend (each request sleeps for its IN value
in ms), each with two instances and max_batch_size 1, so a long request and a
short one sent just after it run side by side and the short one finishes
first. `ordered` must still answer the long one first; `unordered` (the
control, without preserve_ordering) answers the short one first, which shows
the test can tell the difference.
"""

import shutil
import threading
import time

import pytest
import requests

import e2e_helpers as h

CONFIG = """
name: "{name}"
backend: "sleep"
max_batch_size: 1
input [ {{ name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }} ]
output [ {{ name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }} ]
instance_group [ {{ count: 2 kind: KIND_CPU }} ]
dynamic_batching {{ preserve_ordering: {ordered} }}
"""


@pytest.fixture(scope="module")
def ordering_server(tmp_path_factory):
    h.require_binary()
    tmp = tmp_path_factory.mktemp("ordering")
    repo = tmp / "repo"
    for name, ordered in (("ordered", "true"), ("unordered", "false")):
        (repo / name / "1").mkdir(parents=True)
        (repo / name / "config.pbtxt").write_text(CONFIG.format(name=name, ordered=ordered))
        shutil.copy2(h.sleep_backend_so(), repo / name / "libtriton_sleep.so")
    srv = h.start_server(tmp / "srv", [repo], wait_models=("ordered", "unordered"))
    try:
        yield srv
    finally:
        srv.stop(check=True)


def send(srv, model, ms, done, key):
    body = {"inputs": [{"name": "IN", "datatype": "INT32", "shape": [1, 1], "data": [ms]}]}
    sent = time.monotonic()
    r = requests.post(srv.url(f"/v2/models/{model}/infer"), json=body, timeout=30)
    done[key] = (time.monotonic(), r.status_code, r.json(), sent)


def race(srv, model):
    """A 600 ms request, then 100 ms later a 1 ms one. Returns (slow sent,
    slow done, fast done) on the client's monotonic clock."""
    done = {}
    slow = threading.Thread(target=send, args=(srv, model, 600, done, "slow"))
    slow.start()
    time.sleep(0.1)
    fast = threading.Thread(target=send, args=(srv, model, 1, done, "fast"))
    fast.start()
    slow.join(30)
    fast.join(30)
    for key, ms in (("slow", 600), ("fast", 1)):
        status, body = done[key][1], done[key][2]
        assert status == 200, body
        assert body["outputs"][0]["data"] == [ms]
    return done["slow"][3], done["slow"][0], done["fast"][0]


def test_unordered_control_answers_the_short_request_first(ordering_server):
    _, slow_done, fast_done = race(ordering_server, "unordered")
    assert fast_done < slow_done


def test_preserve_ordering_holds_the_later_response(ordering_server):
    """The slow request cannot finish before 600 ms after it was sent, and the
    fast one may not be answered before it: a lower bound from the design.
    (Both responses leave in one write, so comparing the two clients' receive
    times would race; the bound does not.)"""
    slow_sent, _, fast_done = race(ordering_server, "ordered")
    assert fast_done - slow_sent >= 0.6


def test_ordering_survives_an_error_in_between(ordering_server):
    """A request refused up front (bad shape) takes no place in the order;
    the ones around it are still answered, in order."""
    done = {}
    slow = threading.Thread(target=send, args=(ordering_server, "ordered", 300, done, "slow"))
    slow.start()
    time.sleep(0.05)
    bad = requests.post(ordering_server.url("/v2/models/ordered/infer"),
                        json={"inputs": [{"name": "IN", "datatype": "INT32", "shape": [1, 2],
                                          "data": [1, 2]}]}, timeout=30)
    assert bad.status_code == 400
    send(ordering_server, "ordered", 1, done, "fast")
    slow.join(30)
    assert done["slow"][1] == 200 and done["fast"][1] == 200
    assert done["fast"][0] - done["slow"][3] >= 0.3
