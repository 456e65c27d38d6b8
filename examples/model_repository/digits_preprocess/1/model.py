"""digits_preprocess: the first step of the `digits` ensemble.

Takes the 64 raw pixel values of one 8x8 digit per row (UINT8, 0..16, as
sklearn's load_digits gives them) and returns them as digits_onnx takes them:
FP32, each divided by 16 (so 0..1). The dynamic batcher may hand execute()
several requests at once; each gets its own rows back.
"""

import numpy as np
import triton_python_backend_utils as pb_utils

# load_digits pixels are integers 0..16 (examples/digits/train_digits.py).
PIXEL_SCALE = np.float32(16.0)


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            raw = pb_utils.get_input_tensor_by_name(request, "pixels").as_numpy()
            pixels = raw.astype(np.float32) / PIXEL_SCALE
            responses.append(pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor("pixels", pixels)]))
        return responses
