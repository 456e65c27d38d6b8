"""Writes the two ONNX Identity models of bench/run.sh's section onnx
(issue 26, outputs written in place against copied once):

  ort_id_fixed    FP32 [-1, N] -> [-1, N]; config dims [N]: the output's size
                  is known before the run, so the backend binds the response's
                  own buffer and ONNX Runtime writes the result there;
  ort_id_dynamic  FP32 [-1, -1] -> [-1, -1]; config dims [-1]: the output's
                  size is known only after the run, so ONNX Runtime writes
                  into its own buffer and the backend copies it into the
                  response (what Triton's ORT backend does for every output).

Usage: make_ort_identity.py REPO N   (Debian's python3-onnx)
"""
import os
import sys

import onnx
from onnx import TensorProto, helper

CONFIG = """name: "{name}"
backend: "onnxruntime"
max_batch_size: 8
input [ {{ name: "INPUT0" data_type: TYPE_FP32 dims: [ {dims} ] }} ]
output [ {{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ {dims} ] }} ]
instance_group [ {{ count: 1, kind: KIND_CPU }} ]
parameters {{ key: "intra_op_thread_count" value: {{ string_value: "1" }} }}
"""


def write(repo, name, model_dims, config_dims):
    graph = helper.make_graph(
        [helper.make_node("Identity", ["INPUT0"], ["OUTPUT0"])], name,
        [helper.make_tensor_value_info("INPUT0", TensorProto.FLOAT, model_dims)],
        [helper.make_tensor_value_info("OUTPUT0", TensorProto.FLOAT, model_dims)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    os.makedirs(os.path.join(repo, name, "1"), exist_ok=True)
    onnx.save(model, os.path.join(repo, name, "1", "model.onnx"))
    with open(os.path.join(repo, name, "config.pbtxt"), "w") as f:
        f.write(CONFIG.format(name=name, dims=config_dims))


def main():
    repo, n = sys.argv[1], int(sys.argv[2])
    write(repo, "ort_id_fixed", ["batch", n], str(n))
    write(repo, "ort_id_dynamic", ["batch", "n"], "-1")


if __name__ == "__main__":
    main()
