"""py_restart: initialize takes a second (so that the model stays visibly
not ready while a killed stub is restarted); execute answers the stub's pid."""

import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        time.sleep(1.0)

    def execute(self, requests):
        pid = pb_utils.Tensor("PID", np.array([os.getpid()], dtype=np.int64))
        return [pb_utils.InferenceResponse(output_tensors=[pid]) for _ in requests]
