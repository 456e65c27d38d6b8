#!/usr/bin/python3
"""Writes the tiny ONNX models test/unit/test_ort_api.c runs on ONNX Runtime.

ort_add_strings.onnx: SUM = A + B for two FP32 [batch, 3] inputs (batch a
symbolic dimension), and S_OUT = Identity(S) for a STRING [batch] input.
The output is committed (a few hundred bytes); rerun this script after
changing it: /usr/bin/python3 test/unit/data/make_ort_models.py
Needs Debian's python3-onnx; opset 13 and IR version 8 so any ORT >= 1.10
loads it.
"""
import os

from onnx import TensorProto, checker, helper


def add_strings_model():
    fp32 = TensorProto.FLOAT
    graph = helper.make_graph(
        [
            helper.make_node("Add", ["A", "B"], ["SUM"], name="add"),
            helper.make_node("Identity", ["S"], ["S_OUT"], name="copy"),
        ],
        "add_strings",
        [
            helper.make_tensor_value_info("A", fp32, ["batch", 3]),
            helper.make_tensor_value_info("B", fp32, ["batch", 3]),
            helper.make_tensor_value_info("S", TensorProto.STRING, ["batch"]),
        ],
        [
            helper.make_tensor_value_info("SUM", fp32, ["batch", 3]),
            helper.make_tensor_value_info("S_OUT", TensorProto.STRING,
                                          ["batch"]),
        ],
    )
    model = helper.make_model(
        graph, producer_name="inferd-test",
        opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    checker.check_model(model)
    return model


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "ort_add_strings.onnx")
    with open(path, "wb") as f:
        f.write(add_strings_model().SerializeToString())
    print(path)


if __name__ == "__main__":
    main()
