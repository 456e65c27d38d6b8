"""py_restart_fail: the first initialize succeeds and leaves a marker file
in the model's folder; any later one (a restarted stub) raises, so the
restart after a crash fails. execute answers the stub's pid."""

import os

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        marker = os.path.join(args["model_repository"], "initialized-once")
        if os.path.exists(marker):
            raise pb_utils.TritonModelException("py_restart_fail: refusing a second initialize")
        with open(marker, "w") as f:
            f.write(str(os.getpid()))

    def execute(self, requests):
        pid = pb_utils.Tensor("PID", np.array([os.getpid()], dtype=np.int64))
        return [pb_utils.InferenceResponse(output_tensors=[pid]) for _ in requests]
