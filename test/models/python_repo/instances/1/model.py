"""instances: sleeps DELAY_MS, then answers the pid of its stub process and
its instance name (args["model_instance_name"]): several instances, each
its own process."""

import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.instance_name = args["model_instance_name"]

    def execute(self, requests):
        responses = []
        for request in requests:
            delay = pb_utils.get_input_tensor_by_name(request, "DELAY_MS").as_numpy()
            time.sleep(int(delay.reshape(-1)[0]) / 1000.0)
            pid = pb_utils.Tensor("PID", np.array([os.getpid()], dtype=np.int64))
            name = pb_utils.Tensor("INSTANCE", np.array([self.instance_name.encode()], dtype=np.object_))
            responses.append(pb_utils.InferenceResponse(output_tensors=[pid, name]))
        return responses
