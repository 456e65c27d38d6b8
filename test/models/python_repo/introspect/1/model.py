"""introspect: INFO is a JSON text of what the model saw: initialize's args
(model_config parsed), the request's id, correlation id, parameters and
requested output names. OUTPUT0 = INPUT0, sent only when asked for (or
when no output is named)."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.args = dict(args)
        self.args["model_config"] = json.loads(args["model_config"])

    def execute(self, requests):
        responses = []
        for request in requests:
            asked = request.requested_output_names()
            info = {
                "args": self.args,
                "request_id": request.request_id(),
                "correlation_id": request.correlation_id(),
                "parameters": json.loads(request.parameters()),
                "requested": sorted(asked),
                "inputs": [t.name() for t in request.inputs()],
                "is_cpu": pb_utils.get_input_tensor_by_name(request, "INPUT0").is_cpu(),
            }
            outs = [pb_utils.Tensor("INFO", np.array([json.dumps(info).encode()], dtype=np.object_))]
            if not asked or "OUTPUT0" in asked:
                outs.append(pb_utils.Tensor("OUTPUT0", pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()))
            responses.append(pb_utils.InferenceResponse(output_tensors=outs))
        return responses
