"""bytes_echo: each element of the BYTES input, reversed, as a numpy object
array of bytes (Triton's form for TYPE_STRING)."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            items = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            out = np.array([bytes(x)[::-1] for x in items.reshape(-1)], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor("OUTPUT0", out.reshape(items.shape))]))
        return responses
