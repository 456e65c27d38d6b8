"""digits_postprocess: the last step of the `digits` ensemble.

Takes digits_onnx's outputs for each row, `probabilities` (FP32, one per
class 0..9) and `label` (INT64, the most probable class), and returns
`probability` (FP32 [1]): the probability of that label. The dynamic batcher
may hand execute() several requests at once; each gets its own rows back.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            probs = pb_utils.get_input_tensor_by_name(request, "probabilities").as_numpy()
            label = pb_utils.get_input_tensor_by_name(request, "label").as_numpy()
            prob = np.take_along_axis(probs, label, axis=1).astype(np.float32)
            responses.append(pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor("probability", prob)]))
        return responses
