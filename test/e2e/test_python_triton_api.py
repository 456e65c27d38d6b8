"""The Python backend against Triton's own python_backend examples and the
rest of its pb_utils API (issue 28).

The models are written here, at test time, the way Triton's examples
(python_backend/examples: decoupled `square` and `repeat`, `bls`,
`bls_decoupled`) write them: the same config, the same pb_utils calls, the
same behaviour; not copies of their text.

  * square_int32: Triton's decoupled square example: initialize checks
    pb_utils.using_decoupled_model_transaction_policy(model_config); for IN
    = [n] a thread sends n responses OUT = [n], then a flags-only FINAL;
  * repeat_int32: Triton's decoupled repeat example (IN, DELAY, WAIT ->
    one response per element of IN, OUT and IDX);
  * add_sub / sub_add: Triton's add_sub example and its mirror;
  * bls_sync: Triton's BLS example: the callee's name comes from a BYTES
    input (`as_numpy()[0]`, a Python bytes object); NAME_KIND makes it a
    str, bytes, numpy.bytes_ or numpy.str_ instead (Triton's pybind11
    string argument takes all of them);
  * bls_decoupled_sync: Triton's bls_decoupled example: the sum of the
    responses of square_int32 through exec(decoupled=True);
  * square_nested: a decoupled model that streams back each response of a
    decoupled BLS call to square_int32 (issue 28: it stalled).

Every wait is bounded; the one time bound (the nested stream) is generous:
a stall takes minutes, a working server well under a second.
"""

import json
import sys
import tarfile
import time
from pathlib import Path

import numpy as np
import pytest

import e2e_helpers as h
import grpc_helpers as gh
import python_fixtures as pf
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

# ---------------------------------------------------------------- models ---

SQUARE_CONFIG = """
name: "square_int32"
backend: "python"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
"""

SQUARE_MODEL = '''
import json
import threading

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = model_config = json.loads(args["model_config"])
        if not pb_utils.using_decoupled_model_transaction_policy(model_config):
            raise pb_utils.TritonModelException(
                "the model `{}` can generate any number of responses per "
                "request, enable decoupled transaction policy in model "
                "configuration to serve this model".format(args["model_name"]))
        in_config = pb_utils.get_input_config_by_name(model_config, "IN")
        if in_config["dims"] != [1] or in_config["data_type"] != "TYPE_INT32":
            raise pb_utils.TritonModelException("IN must be INT32 [1]")
        out_config = pb_utils.get_output_config_by_name(model_config, "OUT")
        if out_config["dims"] != [1] or out_config["data_type"] != "TYPE_INT32":
            raise pb_utils.TritonModelException("OUT must be INT32 [1]")
        self.inflight = 0
        self.lock = threading.Lock()

    def execute(self, requests):
        for request in requests:
            thread = threading.Thread(
                target=self.response_thread,
                args=(request.get_response_sender(),
                      pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()),
                daemon=True)
            with self.lock:
                self.inflight += 1
            thread.start()
        return None

    def response_thread(self, sender, in_input):
        for _ in range(in_input[0]):
            out = pb_utils.Tensor("OUT", np.array([in_input[0]], np.int32))
            sender.send(pb_utils.InferenceResponse(output_tensors=[out]))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        with self.lock:
            self.inflight -= 1
'''

REPEAT_CONFIG = """
name: "repeat_int32"
backend: "python"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [
  { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] },
  { name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] },
  { name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] }
]
output [
  { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] }
]
instance_group [ { count: 1 kind: KIND_CPU } ]
"""

REPEAT_MODEL = '''
import json
import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = model_config = json.loads(args["model_config"])
        if not pb_utils.using_decoupled_model_transaction_policy(model_config):
            raise pb_utils.TritonModelException("repeat_int32 must be decoupled")
        self.out_dtype = pb_utils.triton_string_to_numpy(
            pb_utils.get_output_config_by_name(model_config, "OUT")["data_type"])
        self.idx_dtype = pb_utils.triton_string_to_numpy(
            pb_utils.get_output_config_by_name(model_config, "IDX")["data_type"])

    def execute(self, requests):
        for request in requests:
            threading.Thread(target=self.response_thread, daemon=True, args=(
                request.get_response_sender(),
                pb_utils.get_input_tensor_by_name(request, "IN").as_numpy(),
                pb_utils.get_input_tensor_by_name(request, "DELAY").as_numpy(),
                pb_utils.get_input_tensor_by_name(request, "WAIT").as_numpy())).start()
        return None

    def response_thread(self, sender, in_input, delay_input, wait_input):
        for idx in range(in_input.size):
            time.sleep(delay_input[idx] / 1000)
            sender.send(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("OUT", np.array([in_input[idx]], self.out_dtype)),
                pb_utils.Tensor("IDX", np.array([idx], self.idx_dtype))]))
        time.sleep(wait_input[0] / 1000)
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
'''

ADD_SUB_CONFIG = """
name: "{name}"
backend: "python"
max_batch_size: 0
input [
  {{ name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] }},
  {{ name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] }}
]
output [
  {{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] }},
  {{ name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 4 ] }}
]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
"""

ADD_SUB_MODEL = '''
import json

import triton_python_backend_utils as pb_utils

SIGN = {sign}


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        # The server's JSON configuration carries the policy of a default
        # model too (Triton's: {{"decoupled": false}}).
        if pb_utils.using_decoupled_model_transaction_policy(config) is not False:
            raise pb_utils.TritonModelException("add_sub is not decoupled")
        self.dtype0 = pb_utils.triton_string_to_numpy(
            pb_utils.get_output_config_by_name(config, "OUTPUT0")["data_type"])
        self.dtype1 = pb_utils.triton_string_to_numpy(
            pb_utils.get_output_config_by_name(config, "OUTPUT1")["data_type"])

    def execute(self, requests):
        responses = []
        for request in requests:
            in_0 = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            in_1 = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            out_0 = pb_utils.Tensor("OUTPUT0", (in_0 + SIGN * in_1).astype(self.dtype0))
            out_1 = pb_utils.Tensor("OUTPUT1", (in_0 - SIGN * in_1).astype(self.dtype1))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out_0, out_1]))
        return responses
'''

BLS_SYNC_CONFIG = """
name: "bls_sync"
backend: "python"
max_batch_size: 0
input [
  { name: "MODEL_NAME" data_type: TYPE_STRING dims: [ 1 ] },
  { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "NAME_KIND" data_type: TYPE_STRING dims: [ 1 ] optional: true }
]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 4 ] }
]
instance_group [ { count: 1 kind: KIND_CPU } ]
"""

BLS_SYNC_MODEL = '''
import json

import numpy as np
import triton_python_backend_utils as pb_utils


def as_kind(name, kind):
    """The model name as Triton's examples may hold it."""
    if kind == b"str":
        return name.decode()
    if kind == b"bytes_":
        return np.array([name], dtype=np.bytes_)[0]
    if kind == b"str_":
        return np.array([name.decode()], dtype=np.str_)[0]
    return name  # as_numpy()[0] of a BYTES tensor: bytes


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = json.loads(args["model_config"])

    def execute(self, requests):
        responses = []
        for request in requests:
            in_0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            in_1 = pb_utils.get_input_tensor_by_name(request, "INPUT1")
            model_name = pb_utils.get_input_tensor_by_name(request, "MODEL_NAME")
            model_name_string = model_name.as_numpy()[0]
            kind = pb_utils.get_input_tensor_by_name(request, "NAME_KIND")
            if kind is not None:
                model_name_string = as_kind(model_name_string, kind.as_numpy()[0])
            infer_request = pb_utils.InferenceRequest(
                model_name=model_name_string,
                requested_output_names=["OUTPUT0", "OUTPUT1"],
                inputs=[in_0, in_1])
            infer_response = infer_request.exec()
            if infer_response.has_error():
                raise pb_utils.TritonModelException(infer_response.error().message())
            responses.append(pb_utils.InferenceResponse(
                output_tensors=infer_response.output_tensors()))
        return responses
'''

BLS_DECOUPLED_SYNC_CONFIG = """
name: "bls_decoupled_sync"
backend: "python"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "SUM" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
"""

BLS_DECOUPLED_SYNC_MODEL = '''
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = json.loads(args["model_config"])

    def execute(self, requests):
        if len(requests) != 1:
            raise pb_utils.TritonModelException("unsupported batch size " + str(len(requests)))
        response_num = pb_utils.get_input_tensor_by_name(requests[0], "IN")
        infer_request = pb_utils.InferenceRequest(
            model_name="square_int32", inputs=[response_num],
            requested_output_names=["OUT"])
        response_sum = np.array([0], dtype=np.int32)
        for infer_response in infer_request.exec(decoupled=True):
            if infer_response.has_error():
                raise pb_utils.TritonModelException(infer_response.error().message())
            if len(infer_response.output_tensors()) == 0:
                continue  # the empty final response
            response_sum += pb_utils.get_output_tensor_by_name(infer_response, "OUT").as_numpy()
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("SUM", response_sum)])]
'''

NESTED_CONFIG = """
name: "square_nested"
backend: "python"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
"""

NESTED_MODEL = '''
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            bls = pb_utils.InferenceRequest(
                model_name="square_int32",
                inputs=[pb_utils.get_input_tensor_by_name(request, "IN")],
                requested_output_names=["OUT"])
            for resp in bls.exec(decoupled=True):
                if resp.has_error():
                    sender.send(resp)
                    continue
                if len(resp.output_tensors()) == 0:
                    continue  # the empty final response
                sender.send(pb_utils.InferenceResponse(output_tensors=resp.output_tensors()))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
'''


API_CONFIG = """
name: "py_api"
backend: "python"
max_batch_size: 0
input [
  { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] }
]
output [ { name: "REPORT" data_type: TYPE_STRING dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
"""

API_MODEL = '''
import json

import c_python_backend_utils as c_utils
import numpy as np
import triton_python_backend_utils as pb_utils

# Every name of Triton's pb_utils (its module and what its stub adds).
TRITON_NAMES = [
    "TritonError", "TritonModelException", "Tensor", "InferenceRequest",
    "InferenceResponse", "Logger", "PreferredMemory", "TRITONSERVER_MEMORY_GPU",
    "TRITONSERVER_MEMORY_CPU", "MetricFamily", "load_model", "unload_model",
    "is_model_ready", "get_model_dir", "serialize_byte_tensor",
    "deserialize_bytes_tensor", "get_input_tensor_by_name",
    "get_output_tensor_by_name", "get_input_config_by_name",
    "get_output_config_by_name", "using_decoupled_model_transaction_policy",
    "triton_to_numpy_type", "numpy_to_triton_type", "triton_string_to_numpy",
    "ModelConfig", "TRITON_STRING_TO_NUMPY",
    "TRITONSERVER_REQUEST_FLAG_SEQUENCE_START",
    "TRITONSERVER_REQUEST_FLAG_SEQUENCE_END",
    "TRITONSERVER_RESPONSE_COMPLETE_FINAL", "TRITONSERVER_REQUEST_RELEASE_ALL",
    "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE"]
REQUEST_METHODS = [
    "inputs", "request_id", "correlation_id", "flags", "set_flags", "timeout",
    "parameters", "trace", "exec", "async_exec", "requested_output_names",
    "get_response_sender", "is_cancelled", "set_release_flags"]


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            rep = {}
            rep["missing"] = [n for n in TRITON_NAMES if not hasattr(pb_utils, n)]
            rep["missing_request"] = [n for n in REQUEST_METHODS if not hasattr(request, n)]
            rep["model_dir"] = pb_utils.get_model_dir()
            rep["context"] = request.trace().get_context()
            rep["free"] = c_utils.shared_memory.free_memory()
            bls = pb_utils.InferenceRequest(
                model_name="add_sub", requested_output_names=["OUTPUT0"],
                inputs=request.inputs(), trace=request.trace(),
                preferred_memory=pb_utils.PreferredMemory(pb_utils.TRITONSERVER_MEMORY_GPU, 0))
            bls.set_flags(0)
            rep["flags"] = bls.flags()
            r = bls.exec()
            out = pb_utils.get_output_tensor_by_name(r, "OUTPUT0")
            rep["bls"] = [out.as_numpy().tolist(), out.is_cpu()]
            cpu = pb_utils.PreferredMemory(pb_utils.TRITONSERVER_MEMORY_CPU)
            r = pb_utils.InferenceRequest(model_name="add_sub", requested_output_names=["OUTPUT1"],
                                          inputs=request.inputs(), preferred_memory=cpu).exec()
            rep["bls_cpu"] = pb_utils.get_output_tensor_by_name(r, "OUTPUT1").as_numpy().tolist()
            try:
                pb_utils.InferenceRequest(model_name="add_sub", inputs=[],
                                          requested_output_names=[], correlation_id=1.5)
                rep["bad_corr"] = "accepted"
            except pb_utils.TritonModelException as e:
                rep["bad_corr"] = e.message()
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("REPORT", np.array([json.dumps(rep).encode()], dtype=np.object_))]))
        return responses
'''


RESCHED_CONFIG = """
name: "{name}"
backend: "python"
max_batch_size: 0
{policy}
input [ {{ name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }} ]
output [ {{ name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }} ]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
"""

# Triton's rescheduling examples (python_backend README): IN = [0]
# reschedules and returns None (default) / sends nothing (decoupled); IN =
# [1] reschedules and wrongly returns a response; anything else answers.
RESCHED_MODEL = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        import json
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(
            json.loads(args["model_config"]))

    def execute(self, requests):
        responses = []
        for request in requests:
            v = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            out = pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("OUT", np.array([v], np.int32))])
            if v in (0, 1):
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
            if self.decoupled:
                if v != 0:
                    request.get_response_sender().send(
                        out, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                continue
            responses.append(None if v == 0 else out)
        return None if self.decoupled else responses
'''


# Triton's iterative-sequence examples (python_backend README, "Request
# Rescheduling"): IN = [n] runs the request n times; each execution but the
# last reschedules it. Decoupled: a response per execution, OUT = executions
# left (n-1 ... 0), the last one FINAL. Default: None while rescheduling,
# then one response, OUT = the executions it took.
ITER_CONFIG = RESCHED_CONFIG + """
sequence_batching {{ iterative_sequence: true }}
"""

ITER_MODEL = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        import json
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(
            json.loads(args["model_config"]))
        self.runs = {}

    def execute(self, requests):
        responses = []
        for request in requests:
            cid = request.correlation_id()
            n = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            runs = self.runs.get(cid, 0) + 1
            last = runs >= n
            if last:
                self.runs.pop(cid, None)
            else:
                self.runs[cid] = runs
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
            out = pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor(
                "OUT", np.array([n - runs if self.decoupled else runs], np.int32))])
            if self.decoupled:
                sender = request.get_response_sender()
                if last:
                    sender.send(out, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                else:
                    sender.send(out)
                continue
            responses.append(out if last else None)
        return None if self.decoupled else responses
'''


ASYNC_NESTED_CONFIG = """
name: "repeat_async_nested"
backend: "python"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [
  { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] },
  { name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] }
]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
"""

ASYNC_NESTED_MODEL = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    async def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            bls = pb_utils.InferenceRequest(
                model_name="repeat_int32", requested_output_names=["OUT"],
                inputs=[pb_utils.get_input_tensor_by_name(request, "IN"),
                        pb_utils.get_input_tensor_by_name(request, "DELAY"),
                        pb_utils.Tensor("WAIT", np.array([0], np.uint32))])
            for resp in await bls.async_exec(decoupled=True):
                if resp.has_error() or len(resp.output_tensors()) > 0:
                    sender.send(resp)
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
'''


def write_model(repo, name, config, model):
    d = repo / name
    (d / "1").mkdir(parents=True)
    (d / "config.pbtxt").write_text(config)
    (d / "1" / "model.py").write_text(model)


def write_repo(repo):
    write_model(repo, "square_int32", SQUARE_CONFIG, SQUARE_MODEL)
    write_model(repo, "repeat_int32", REPEAT_CONFIG, REPEAT_MODEL)
    write_model(repo, "add_sub", ADD_SUB_CONFIG.format(name="add_sub"), ADD_SUB_MODEL.format(sign=1))
    write_model(repo, "sub_add", ADD_SUB_CONFIG.format(name="sub_add"), ADD_SUB_MODEL.format(sign=-1))
    write_model(repo, "bls_sync", BLS_SYNC_CONFIG, BLS_SYNC_MODEL)
    write_model(repo, "bls_decoupled_sync", BLS_DECOUPLED_SYNC_CONFIG, BLS_DECOUPLED_SYNC_MODEL)
    write_model(repo, "square_nested", NESTED_CONFIG, NESTED_MODEL)
    write_model(repo, "py_api", API_CONFIG, API_MODEL)
    write_model(repo, "repeat_async_nested", ASYNC_NESTED_CONFIG, ASYNC_NESTED_MODEL)
    write_model(repo, "resched", RESCHED_CONFIG.format(name="resched", policy=""), RESCHED_MODEL)
    write_model(repo, "resched_decoupled", RESCHED_CONFIG.format(
        name="resched_decoupled", policy="model_transaction_policy { decoupled: true }"), RESCHED_MODEL)
    write_model(repo, "iter", ITER_CONFIG.format(name="iter", policy=""), ITER_MODEL)
    write_model(repo, "iter_decoupled", ITER_CONFIG.format(
        name="iter_decoupled", policy="model_transaction_policy { decoupled: true }"), ITER_MODEL)


MODELS = ("square_int32", "repeat_int32", "add_sub", "sub_add", "bls_sync", "bls_decoupled_sync",
          "square_nested", "py_api", "resched", "resched_decoupled", "repeat_async_nested",
          "iter", "iter_decoupled")


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    h.require_binary()
    tmp = tmp_path_factory.mktemp("pyapi")
    repo = tmp / "repo"
    write_repo(repo)
    s = h.start_server(tmp / "srv", [repo], wait_models=MODELS, timeout=120)
    try:
        yield s
    finally:
        s.stop(check=True)


@pytest.fixture(scope="module")
def gc(srv, grpc_stubs):  # noqa: F811
    c = gh.connect(srv, grpc_stubs)
    yield c
    c.close()


def stream(gc, reqs, timeout=pf.HANG_S):
    """Sends reqs on one stream, half-closes; returns (messages, code)."""
    call = gc.model_stream_infer(iter(list(reqs)), timeout=timeout)
    out = list(call)
    return out, call.code()


def stream_outputs(msgs):
    outs = []
    for m in msgs:
        assert m.error_message == "", m.error_message
        outs.append(gh.outputs_of(m.infer_response))
    return outs


# ------------------------------------------- 1. Triton's decoupled examples ---

def test_square_example_loads_and_streams(srv, gc):
    """Triton's square example calls using_decoupled_model_transaction_policy
    in initialize; it was missing, so the model failed to load."""
    req = gh.infer_request(gc.pb, "square_int32", [("IN", "INT32", [1], np.array([4], np.int32))])
    msgs, code = stream(gc, [req])
    assert code.name == "OK", code
    outs = stream_outputs(msgs)
    assert [o["OUT"].tolist() for o in outs] == [[4]] * 4, outs


def test_square_example_zero_responses(srv, gc):
    req = gh.infer_request(gc.pb, "square_int32", [("IN", "INT32", [1], np.array([0], np.int32))])
    msgs, code = stream(gc, [req])
    assert code.name == "OK" and msgs == [], (code, msgs)


def test_repeat_example(srv, gc):
    req = gh.infer_request(gc.pb, "repeat_int32", [
        ("IN", "INT32", [3], np.array([4, 2, 0], np.int32)),
        ("DELAY", "UINT32", [3], np.array([1, 2, 3], np.uint32)),
        ("WAIT", "UINT32", [1], np.array([5], np.uint32))])
    msgs, code = stream(gc, [req])
    assert code.name == "OK", code
    outs = stream_outputs(msgs)
    assert [(o["OUT"].tolist(), o["IDX"].tolist()) for o in outs] == \
        [([4], [0]), ([2], [1]), ([0], [2])], outs


def test_using_decoupled_model_transaction_policy_values(srv):
    """The function itself, as Triton defines it: the policy's `decoupled`,
    False without a policy."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "pbu_for_test", h.backend_dir() / "python" / "triton_python_backend_utils.py")
    pbu = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pbu)
    f = pbu.using_decoupled_model_transaction_policy
    assert f({"model_transaction_policy": {"decoupled": True}}) is True
    assert f({"model_transaction_policy": {"decoupled": False}}) is False
    assert f({"name": "m"}) is False


def test_bls_decoupled_example(srv):
    """Triton's bls_decoupled example: a default model summing the responses
    of square_int32 (n responses of n: n * n)."""
    out = pf.infer("http", srv, None, "bls_decoupled_sync", [("IN", "INT32", [1], [5])])
    assert out["SUM"].tolist() == [25], out


# ----------------------------------------- 2. BLS model_name from a tensor ---

IN0 = np.array([1, 2, 3, 4], np.float32)
IN1 = np.array([10, 20, 30, 40], np.float32)


@pytest.mark.parametrize("kind", [None, "bytes", "str", "bytes_", "str_"])
@pytest.mark.parametrize("callee", ["add_sub", "sub_add"])
def test_bls_example_model_name_kinds(srv, callee, kind):
    """Triton's BLS example passes model_name=as_numpy()[0] of a BYTES input
    (bytes); str, numpy.bytes_ and numpy.str_ work too."""
    inputs = [("MODEL_NAME", "BYTES", [1], [callee.encode()]),
              ("INPUT0", "FP32", [4], IN0), ("INPUT1", "FP32", [4], IN1)]
    if kind is not None:
        inputs.append(("NAME_KIND", "BYTES", [1], [kind.encode()]))
    outs = pf.infer("http", srv, None, "bls_sync", inputs)
    sign = 1 if callee == "add_sub" else -1
    assert outs["OUTPUT0"].tolist() == (IN0 + sign * IN1).tolist(), outs
    assert outs["OUTPUT1"].tolist() == (IN0 - sign * IN1).tolist(), outs


# ------------------------------------------ 3. the rest of pb_utils' names ---

def test_pb_utils_surface(srv):
    """Triton's pb_utils names all exist; PreferredMemory and InferenceTrace
    go into a BLS request (outputs arrive in CPU memory, inferd's only
    kind); set_flags; get_model_dir; c_python_backend_utils.shared_memory.
    free_memory(); a correlation id that is neither int nor str is refused
    with Triton's text."""
    out = pf.infer("http", srv, None, "py_api", [("INPUT0", "FP32", [4], IN0), ("INPUT1", "FP32", [4], IN1)])
    rep = json.loads(out["REPORT"][0])
    assert rep["missing"] == [] and rep["missing_request"] == [], rep
    assert rep["model_dir"].endswith("/py_api/1"), rep
    assert rep["context"] is None, rep
    seg_max = 16 << 30
    assert isinstance(rep["free"], int) and 0 < rep["free"] <= seg_max - 32, rep
    assert rep["flags"] == 0, rep
    assert rep["bls"] == [(IN0 + IN1).tolist(), True], rep
    assert rep["bls_cpu"] == (IN0 - IN1).tolist(), rep
    assert rep["bad_corr"] == "Correlation ID must be integer or string", rep


# --------------------------------------------- 3. request rescheduling ---

# What Triton's core answers a release with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE
# for a model whose sequence batcher is not iterative (or that has none):
# TRITONBACKEND_RequestRelease fails with it, and the Python backend answers
# the request with it.
NO_RESCHEDULE = ("Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, "
                 "while the model is not configured to handle such a flag.")


def test_reschedule_needs_an_iterative_sequence(srv, gc):
    """set_release_flags(RESCHEDULE) with None in execute's list (Triton's
    README example) on a model without sequence_batching.iterative_sequence:
    the core refuses the flag with Triton's words."""
    with pytest.raises(pf.Failed) as e:
        pf.infer("http", srv, None, "resched", [("IN", "INT32", [1], [0])])
    assert NO_RESCHEDULE in e.value.message, e.value.message
    assert pf.infer("http", srv, None, "resched", [("IN", "INT32", [1], [5])])["OUT"].tolist() == [5]
    req = gh.infer_request(gc.pb, "resched_decoupled", [("IN", "INT32", [1], np.array([0], np.int32))])
    msgs, code = stream(gc, [req])
    assert code.name == "OK" and len(msgs) == 1, (code, msgs)
    assert NO_RESCHEDULE in msgs[0].error_message, msgs[0]


def test_iterative_decoupled_counts_down(srv, gc):
    """Triton's decoupled rescheduling example: one request without a
    sequence ID runs n times, a response per execution (n-1 ... 0), the
    FINAL one last; the next request starts a sequence of its own in the
    slot the first one freed."""
    for n in (3, 1, 4):
        req = gh.infer_request(gc.pb, "iter_decoupled", [("IN", "INT32", [1], np.array([n], np.int32))])
        msgs, code = stream(gc, [req])
        assert code.name == "OK", (code, msgs)
        outs = stream_outputs(msgs)
        assert [o["OUT"].tolist() for o in outs] == [[k] for k in range(n - 1, -1, -1)], outs


def test_iterative_default_model(srv):
    """Triton's default-model rescheduling example: None in execute's list
    while the request is rescheduled, then its one response."""
    for n in (1, 3):
        out = pf.infer("http", srv, None, "iter", [("IN", "INT32", [1], [n])])
        assert out["OUT"].tolist() == [n], out


def test_reschedule_with_a_response_is_refused(srv):
    """Triton: a rescheduled request's place in the list must be None."""
    with pytest.raises(pf.Failed) as e:
        pf.infer("http", srv, None, "resched", [("IN", "INT32", [1], [1])])
    assert ("Expected a None object in the execute function return list for reschduled request, "
            "found type 'InferenceResponse'.") in e.value.message, e.value.message


# ------------------------------------- 4. nested decoupled BLS, streaming ---

def test_nested_decoupled_bls_streams_without_stalls(srv, gc):
    """square_nested streams back each of square_int32's 200 responses as it
    arrives. Each response crosses two stubs and the server twice; a stall
    per response (a wake-up that waits for a timer) takes minutes. The bound
    is 30 s; a working server needs well under one."""
    n = 200
    req = gh.infer_request(gc.pb, "square_nested", [("IN", "INT32", [1], np.array([n], np.int32))])
    t0 = time.monotonic()
    msgs, code = stream(gc, [req], timeout=120)
    took = time.monotonic() - t0
    assert code.name == "OK", code
    outs = stream_outputs(msgs)
    assert [o["OUT"].tolist() for o in outs] == [[n]] * n, len(outs)
    print(f"nested: {n} responses in {took:.3f} s")
    assert took < 30, f"{n} nested responses took {took:.1f} s"


# ------------------------------------------ 3. pb_utils model control (BLS) ---

CONTROL_CONFIG = """
name: "{name}"
backend: "python"
max_batch_size: 0
input [
  {{ name: "OP" data_type: TYPE_STRING dims: [ 1 ] }},
  {{ name: "NAME" data_type: TYPE_STRING dims: [ 1 ] }},
  {{ name: "ARG" data_type: TYPE_STRING dims: [ 1 ] optional: true }}
]
output [ {{ name: "RESULT" data_type: TYPE_STRING dims: [ 1 ] }} ]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
"""

CONTROL_MODEL = '''
import json

import numpy as np
import triton_python_backend_utils as pb_utils


def run(op, name, arg):
    if op == "ready":
        return str(pb_utils.is_model_ready(name, arg or ""))
    if op == "ready_version":
        return str(pb_utils.is_model_ready(model_name=name, model_version=arg))
    if op == "load":
        pb_utils.load_model(model_name=name)
        return "ok"
    if op == "load_files":
        spec = json.loads(arg)
        files = {k: v.encode() for k, v in spec["files"].items()}
        pb_utils.load_model(name, config=json.dumps(spec["config"]), files=files)
        return "ok"
    if op == "load_bad_files":
        pb_utils.load_model(name, files=["not", "a", "dict"])
        return "ok"
    if op == "unload":
        pb_utils.unload_model(name)
        return "ok"
    if op == "unload_dependents":
        pb_utils.unload_model(name, unload_dependents=True)
        return "ok"
    return "unknown op " + op


class TritonPythonModel:
    def initialize(self, args):
        # Triton's BLS model loading: a model may load others in initialize.
        if args["model_name"] == "control_init":
            pb_utils.load_model("add_sub_init")
            assert pb_utils.is_model_ready("add_sub_init")

    def execute(self, requests):
        responses = []
        for request in requests:
            op = pb_utils.get_input_tensor_by_name(request, "OP").as_numpy()[0].decode()
            name = pb_utils.get_input_tensor_by_name(request, "NAME").as_numpy()[0]
            arg = pb_utils.get_input_tensor_by_name(request, "ARG")
            arg = arg.as_numpy()[0].decode() if arg is not None else None
            try:
                result = run(op, name, arg)
            except pb_utils.TritonModelException as e:
                result = "TritonModelException: " + e.message()
            except Exception as e:  # noqa: BLE001
                result = type(e).__name__ + ": " + str(e)
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("RESULT", np.array([result.encode()], dtype=np.object_))]))
        return responses
'''


@pytest.fixture(scope="module")
def ctl(tmp_path_factory):
    h.require_binary()
    tmp = tmp_path_factory.mktemp("pyctl")
    repo = tmp / "repo"
    for name in ("add_sub", "add_sub_lazy", "add_sub_init", "add_sub_over"):
        write_model(repo, name, ADD_SUB_CONFIG.format(name=name), ADD_SUB_MODEL.format(sign=1))
    for name in ("control", "control_init"):
        write_model(repo, name, CONTROL_CONFIG.format(name=name), CONTROL_MODEL)
    s = h.start_server(tmp / "srv", [repo], wait_models=("control", "add_sub", "control_init"),
                       timeout=120, extra=["--model-control-mode=explicit", "--load-model=control",
                                           "--load-model=add_sub", "--load-model=control_init"])
    try:
        yield s
    finally:
        s.stop(check=True)


def control(srv, op, name, arg=None):
    inputs = [("OP", "BYTES", [1], [op.encode()]), ("NAME", "BYTES", [1], [name.encode()])]
    if arg is not None:
        inputs.append(("ARG", "BYTES", [1], [arg.encode()]))
    return pf.infer("http", srv, None, "control", inputs)["RESULT"][0].decode()


def add_sub_works(srv, name):
    out = pf.infer("http", srv, None, name, [("INPUT0", "FP32", [4], IN0), ("INPUT1", "FP32", [4], IN1)])
    return out["OUTPUT0"].tolist() == (IN0 + IN1).tolist()


def test_is_model_ready(ctl):
    assert control(ctl, "ready", "add_sub") == "True"
    assert control(ctl, "ready", "add_sub_lazy") == "False"
    assert control(ctl, "ready", "no_such_model") == "False"
    assert control(ctl, "ready_version", "add_sub", "1") == "True"
    assert control(ctl, "ready_version", "add_sub", "7") == "False"


def test_is_model_ready_bad_version(ctl):
    r = control(ctl, "ready_version", "add_sub", "one")
    assert r.startswith("TritonModelException: Failed to check model readiness: "), r
    assert "failed to get model version from specified version string 'one'" in r, r


def test_load_and_unload_model(ctl):
    assert ctl.get("/v2/models/add_sub_lazy/ready").status_code != 200
    assert control(ctl, "load", "add_sub_lazy") == "ok"
    assert ctl.get("/v2/models/add_sub_lazy/ready").status_code == 200
    assert control(ctl, "ready", "add_sub_lazy") == "True"
    assert add_sub_works(ctl, "add_sub_lazy")
    assert control(ctl, "unload", "add_sub_lazy") == "ok"
    deadline = time.monotonic() + pf.HANG_S
    while control(ctl, "ready", "add_sub_lazy") != "False":
        assert time.monotonic() < deadline, "add_sub_lazy still ready after unload_model"
        time.sleep(0.05)


def test_load_model_from_config_and_files(ctl):
    """load_model(name, config=JSON, files={"file:1/model.py": bytes}): the
    model loads from those files (here a model.py that subtracts where the
    repository's adds), as the repository API's load with files does."""
    config = {"name": "add_sub_over", "backend": "python", "max_batch_size": 0,
              "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4]},
                        {"name": "INPUT1", "data_type": "TYPE_FP32", "dims": [4]}],
              "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4]},
                         {"name": "OUTPUT1", "data_type": "TYPE_FP32", "dims": [4]}]}
    spec = {"config": config, "files": {"file:1/model.py": ADD_SUB_MODEL.format(sign=-1)}}
    assert control(ctl, "load_files", "add_sub_over", json.dumps(spec)) == "ok"
    out = pf.infer("http", ctl, None, "add_sub_over", [("INPUT0", "FP32", [4], IN0), ("INPUT1", "FP32", [4], IN1)])
    assert out["OUTPUT0"].tolist() == (IN0 - IN1).tolist(), out
    assert control(ctl, "unload", "add_sub_over") == "ok"


def test_load_model_errors(ctl):
    r = control(ctl, "load", "no_such_model")
    assert r.startswith("TritonModelException: Failed to load model: "), r
    assert "no_such_model" in r, r
    r = control(ctl, "load_bad_files", "add_sub_lazy")
    assert r == ("TritonModelException: failed to load model 'add_sub_lazy', files should be a "
                 "dictionary of file paths and file contents"), r


def test_load_model_in_initialize(ctl):
    """control_init loads add_sub_init from its initialize."""
    assert ctl.get("/v2/models/add_sub_init/ready").status_code == 200
    assert add_sub_works(ctl, "add_sub_init")


# --------------------------------------- 3. EXECUTION_ENV_PATH (conda-pack) ---

PYLIB = f"lib/python{sys.version_info.major}.{sys.version_info.minor}"

ENV_CONFIG = """
name: "{name}"
backend: "python"
max_batch_size: 0
input [ {{ name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }} ]
output [ {{ name: "REPORT" data_type: TYPE_STRING dims: [ 1 ] }} ]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
parameters: {{ key: "EXECUTION_ENV_PATH" value: {{ string_value: "{env}" }} }}
"""

ENV_MODEL = '''
import json
import os
import sys

import numpy as np
import triton_python_backend_utils as pb_utils

import inferd_env_probe
import inferd_env_extra


class TritonPythonModel:
    def execute(self, requests):
        rep = {"value": inferd_env_probe.VALUE, "extra": inferd_env_extra.VALUE,
               "probe_file": inferd_env_probe.__file__,
               "activated": os.environ.get("INFERD_ENV_ACTIVATED"),
               "ld_library_path": os.environ.get("LD_LIBRARY_PATH"),
               "exec_env_var": os.environ.get("INFERD_PYTHON_EXECUTION_ENV")}
        out = pb_utils.Tensor("REPORT", np.array([json.dumps(rep).encode()], dtype=np.object_))
        return [pb_utils.InferenceResponse(output_tensors=[out]) for _ in requests]
'''


def make_env(root, activate=True, pylib=PYLIB, value=42):
    """A conda-pack style environment: bin/activate (sourced by the stub's
    launch) and a site-packages holding a module and a .pth file."""
    sp = root / pylib / "site-packages"
    (sp / "extra_dir").mkdir(parents=True)
    (sp / "inferd_env_probe.py").write_text(f"VALUE = {value}\n")
    (sp / "extra.pth").write_text("extra_dir\n")
    (sp / "extra_dir" / "inferd_env_extra.py").write_text("VALUE = 'from .pth'\n")
    if activate:
        (root / "bin").mkdir()
        (root / "bin" / "activate").write_text("export INFERD_ENV_ACTIVATED=yes\n")


def pack(src, dst):
    with tarfile.open(dst, "w:gz") as t:
        for p in sorted(src.iterdir()):
            t.add(p, arcname=p.name)


def test_execution_env_path(tmp_path):
    h.require_binary()
    repo = tmp_path / "repo"
    # A packed environment inside the model's folder ($$TRITON_MODEL_DIRECTORY).
    write_model(repo, "env_packed", ENV_CONFIG.format(name="env_packed",
                                                      env="$$TRITON_MODEL_DIRECTORY/env.tar.gz"), ENV_MODEL)
    make_env(tmp_path / "packed_src")
    pack(tmp_path / "packed_src", repo / "env_packed" / "env.tar.gz")
    # An unpacked one, named by its absolute path.
    make_env(tmp_path / "unpacked", value=7)
    write_model(repo, "env_dir", ENV_CONFIG.format(name="env_dir", env=tmp_path / "unpacked"), ENV_MODEL)
    # No bin/activate; another Python version's packages: both fail to load.
    make_env(tmp_path / "noact_src", activate=False)
    write_model(repo, "env_noact", ENV_CONFIG.format(name="env_noact",
                                                     env="$$TRITON_MODEL_DIRECTORY/env.tar.gz"), ENV_MODEL)
    pack(tmp_path / "noact_src", repo / "env_noact" / "env.tar.gz")
    make_env(tmp_path / "oldpy", pylib="lib/python3.2")
    write_model(repo, "env_oldpy", ENV_CONFIG.format(name="env_oldpy", env=tmp_path / "oldpy"), ENV_MODEL)

    srv = h.start_server(tmp_path / "srv", [repo], wait_models=("env_packed", "env_dir"), timeout=120)
    try:
        srv.wait_loading_finished()
        rep = json.loads(pf.infer("http", srv, None, "env_packed", [("IN", "INT32", [1], [1])])["REPORT"][0])
        assert rep["value"] == 42 and rep["extra"] == "from .pth", rep
        assert rep["activated"] == "yes", rep
        assert rep["exec_env_var"] is None, rep
        probe = Path(rep["probe_file"])
        # Extracted into the backend's cache, not next to the archive.
        assert repo not in probe.parents and probe.is_file(), rep
        env_root = probe.parents[3]
        assert not (rep["ld_library_path"] or "").startswith(str(env_root / "lib")), rep

        rep = json.loads(pf.infer("http", srv, None, "env_dir", [("IN", "INT32", [1], [1])])["REPORT"][0])
        assert rep["value"] == 7 and rep["activated"] == "yes", rep
        assert Path(rep["probe_file"]).parents[3] == tmp_path / "unpacked", rep

        r = srv.get("/v2/models/env_noact/ready")
        assert r.status_code == 400, r.text
        log = srv.log_path.read_text(errors="replace")
        assert "/bin/activate does not exist. The Python environment should contain an 'activate' script." \
            in log, srv.log_tail()
        assert srv.get("/v2/models/env_oldpy/ready").status_code == 400
        assert "holds Python 3.2" in log, srv.log_tail()
    finally:
        srv.stop(check=True)
    # The backend removes what it extracted when it ends.
    assert not probe.exists(), probe


def test_async_exec_decoupled_streams(srv, gc):
    """async_exec(decoupled=True) hands back its iterator once the first
    response came, as Triton's does: the callee's first response reaches
    the client while the callee still works on the second (1.5 s later).
    It used to wait for the callee's end."""
    req = gh.infer_request(gc.pb, "repeat_async_nested", [
        ("IN", "INT32", [2], np.array([3, 4], np.int32)),
        ("DELAY", "UINT32", [2], np.array([0, 1500], np.uint32))])
    call = gc.model_stream_infer(iter([req]), timeout=pf.HANG_S)
    t0 = time.monotonic()
    arrivals = []
    for m in call:
        assert m.error_message == "", m.error_message
        arrivals.append((time.monotonic() - t0, gh.outputs_of(m.infer_response)["OUT"].tolist()))
    assert [a[1] for a in arrivals] == [[3], [4]], arrivals
    assert arrivals[1][0] - arrivals[0][0] > 0.5, arrivals
