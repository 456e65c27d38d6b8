"""py_bls: Business Logic Scripting with exec(), the way Triton's BLS
example does it. Each request calls py_identity_step (the identity C
backend) with INPUT0 and answers its OUTPUT0 doubled, then calls a model
that does not exist and answers the error's message in ERR."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            bls = pb_utils.InferenceRequest(
                model_name="py_identity_step",
                requested_output_names=["OUTPUT0"],
                inputs=[pb_utils.Tensor("INPUT0", x.as_numpy())],
                request_id="bls-" + request.request_id())
            resp = bls.exec()
            if resp.has_error():
                raise pb_utils.TritonModelException(resp.error().message())
            y = pb_utils.get_output_tensor_by_name(resp, "OUTPUT0").as_numpy()

            missing = pb_utils.InferenceRequest(
                model_name="py_no_such_model",
                requested_output_names=["OUTPUT0"],
                inputs=[pb_utils.Tensor("INPUT0", np.zeros(1, dtype=np.float32))])
            bad = missing.exec()
            err = bad.error().message() if bad.has_error() else "no error"

            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("OUTPUT0", (y * 2).astype(np.float32)),
                pb_utils.Tensor("ERR", np.array([err.encode()], dtype=np.object_)),
            ]))
        return responses
