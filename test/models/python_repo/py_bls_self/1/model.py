"""py_bls_self: calls itself with BLS (N - 1) while N > 0, on its only
instance. Triton's README lists this as a limitation (the call can never
be served and blocks forever); inferd refuses such a call with an error
response instead. ERR: the callee's error message ("" at N = 0)."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            n = pb_utils.get_input_tensor_by_name(request, "N").as_numpy()
            err = ""
            if int(n.reshape(-1)[0]) > 0:
                resp = pb_utils.InferenceRequest(
                    model_name="py_bls_self", requested_output_names=["ERR"],
                    inputs=[pb_utils.Tensor("N", n - 1)]).exec()
                err = resp.error().message() if resp.has_error() else "no error"
            responses.append(pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor("ERR", np.array([err.encode()], dtype=np.object_))]))
        return responses
