"""batched: dynamic batching; OUTPUT0 = 2 * INPUT0 for each request, and
NREQ = how many requests this execute call got (the batch's size in
requests), so a test can see requests batched together."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        n = len(requests)
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            rows = x.shape[0]
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("OUTPUT0", (x * 2).astype(np.float32)),
                pb_utils.Tensor("NREQ", np.full((rows, 1), n, dtype=np.int32)),
            ]))
        return responses
