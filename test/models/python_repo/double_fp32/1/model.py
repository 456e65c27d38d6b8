"""double_fp32: OUTPUT0 = 2 * INPUT0 (the ensemble's Python step)."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor(
                "OUTPUT0", (pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy() * 2).astype(np.float32))])
            for r in requests
        ]
