"""py_bls_fields: what a BLS request carries besides tensors. It calls
introspect (a Python model that answers what it saw) with a request id, a
correlation id, parameters and one requested output, and answers its INFO;
and it sends TEXT (BYTES) to bytes_echo and answers the echo as ECHO."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            text = pb_utils.get_input_tensor_by_name(request, "TEXT").as_numpy()
            seen = pb_utils.InferenceRequest(
                model_name="introspect",
                requested_output_names=["INFO"],
                inputs=[pb_utils.Tensor("INPUT0", np.array([1.0], dtype=np.float32))],
                request_id="bls-rid",
                correlation_id=42,
                parameters={"s": "v", "n": 5, "b": True}).exec()
            if seen.has_error():
                raise pb_utils.TritonModelException(seen.error().message())
            names = [t.name() for t in seen.output_tensors()]
            info = pb_utils.get_output_tensor_by_name(seen, "INFO").as_numpy()
            if names != ["INFO"]:
                info = np.array([("outputs: %s" % names).encode()], dtype=np.object_)
            echo = pb_utils.InferenceRequest(
                model_name="bytes_echo",
                requested_output_names=["OUTPUT0"],
                inputs=[pb_utils.Tensor("INPUT0", text)]).exec()
            if echo.has_error():
                raise pb_utils.TritonModelException(echo.error().message())
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("INFO", info),
                pb_utils.Tensor("ECHO", pb_utils.get_output_tensor_by_name(echo, "OUTPUT0").as_numpy()),
            ]))
        return responses
