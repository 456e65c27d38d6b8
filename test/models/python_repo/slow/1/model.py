"""slow: sleeps DELAY_MS, then answers the pid of its stub process (the
e2e test kills that process while a request is in flight)."""

import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            delay = pb_utils.get_input_tensor_by_name(request, "DELAY_MS").as_numpy()
            time.sleep(int(delay.reshape(-1)[0]) / 1000.0)
            pid = pb_utils.Tensor("PID", np.array([os.getpid()], dtype=np.int64))
            responses.append(pb_utils.InferenceResponse(output_tensors=[pid]))
        return responses
