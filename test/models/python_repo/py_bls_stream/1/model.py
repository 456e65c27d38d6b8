"""py_bls_stream: a decoupled model that calls another model with BLS
inside execute (the common shape of a Python pipeline): for each request,
IN's length n, it calls py_identity_step (the identity C backend) n times
with IN * k (k = 1..n) and sends each answer as one response, then the
FINAL, all before execute returns None."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            sender = request.get_response_sender()
            for k in range(1, len(x) + 1):
                call = pb_utils.InferenceRequest(
                    model_name="py_identity_step",
                    requested_output_names=["OUTPUT0"],
                    inputs=[pb_utils.Tensor("INPUT0", (x * k).astype(np.float32))])
                resp = call.exec()
                if resp.has_error():
                    sender.send(pb_utils.InferenceResponse(error=resp.error()))
                    continue
                y = pb_utils.get_output_tensor_by_name(resp, "OUTPUT0").as_numpy()
                sender.send(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUT", y)]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
