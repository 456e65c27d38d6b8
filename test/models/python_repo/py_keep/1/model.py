"""py_keep: keeps each request's input array (a view of shared memory, no
copy) past execute and answers the previous request's input as OUT (the
first request gets its own). Triton's docs warn against keeping input
tensors; inferd keeps a request's shared-memory block alive while Python
holds a view of it, and this model checks that: a block reused too early
would show as a corrupted OUT. PID: the stub's pid (the test reads the
size of its shared-memory segment)."""

import os

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.kept = None

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            prev = self.kept if self.kept is not None else x
            self.kept = x
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("OUT", prev),
                pb_utils.Tensor("PID", np.array([os.getpid()], dtype=np.int64)),
            ]))
        return responses
