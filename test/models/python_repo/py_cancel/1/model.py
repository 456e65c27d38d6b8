"""py_cancel: waits up to MS milliseconds, checking request.is_cancelled()
every 10 ms (Triton's documented pattern). A cancelled request is answered
with TritonError(..., CANCELLED) at once; otherwise OUT = MS. Both cases are
logged with the request id, so the tests can follow them."""

import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            ms = int(pb_utils.get_input_tensor_by_name(request, "MS").as_numpy().reshape(-1)[0])
            rid = request.request_id()
            pb_utils.Logger.log_info(f"py_cancel: request '{rid}' waiting {ms} ms")
            start = time.monotonic()
            cancelled = False
            while (time.monotonic() - start) * 1000 < ms:
                if request.is_cancelled():
                    cancelled = True
                    break
                time.sleep(0.01)
            if cancelled:
                waited = int((time.monotonic() - start) * 1000)
                pb_utils.Logger.log_info(f"py_cancel: request '{rid}' cancelled after {waited} ms")
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(
                    "py_cancel: request cancelled", pb_utils.TritonError.CANCELLED)))
            else:
                pb_utils.Logger.log_info(f"py_cancel: request '{rid}' not cancelled")
                responses.append(pb_utils.InferenceResponse(
                    output_tensors=[pb_utils.Tensor("OUT", np.array([ms], dtype=np.int32))]))
        return responses
