"""raise_execute: execute raises; every request of the batch gets the error."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        raise pb_utils.TritonModelException("raise_execute: deliberate failure in execute")
