"""py_autocomplete: no inputs, outputs or batching in config.pbtxt;
auto_complete_config adds them (Triton's documented way): two FP32 inputs
of 4 (INPUT1 optional), one output, max_batch_size 8 with the dynamic
batcher. OUTPUT0 = INPUT0 (+ INPUT1 when given)."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        inputs = [
            {"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4]},
            {"name": "INPUT1", "data_type": "TYPE_FP32", "dims": [4], "optional": True},
        ]
        outputs = [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4]}]
        config = auto_complete_model_config.as_dict()
        have_in = {i["name"] for i in config["input"]}
        have_out = {o["name"] for o in config["output"]}
        for i in inputs:
            if i["name"] not in have_in:
                auto_complete_model_config.add_input(i)
        for o in outputs:
            if o["name"] not in have_out:
                auto_complete_model_config.add_output(o)
        auto_complete_model_config.set_max_batch_size(8)
        auto_complete_model_config.set_dynamic_batching()
        return auto_complete_model_config

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            y = pb_utils.get_input_tensor_by_name(request, "INPUT1")
            out = x + y.as_numpy() if y is not None else x
            responses.append(pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor("OUTPUT0", out.astype(np.float32))]))
        return responses
