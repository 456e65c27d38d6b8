"""py_bls_decoupled: a BLS call to the decoupled py_repeat with
exec(decoupled=True), iterating its responses. IN sent to py_repeat is
[0, 10, ..., 10 (N-1)] with -1 appended when N is negative (|N| values
then; py_repeat answers -1 with an error response). OUT and IDX gather the
responses' tensors in order; ERRORS their error messages. Empty responses
(the FINAL may come without tensors) are skipped."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            n = int(pb_utils.get_input_tensor_by_name(request, "N").as_numpy().reshape(-1)[0])
            values = [10 * i for i in range(abs(n))] + ([-1] if n < 0 else [])
            bls = pb_utils.InferenceRequest(
                model_name="py_repeat",
                requested_output_names=["OUT", "IDX"],
                inputs=[pb_utils.Tensor("IN", np.array(values, dtype=np.int32))])
            outs, idxs, errors = [], [], []
            for resp in bls.exec(decoupled=True):
                if resp.has_error():
                    errors.append(resp.error().message().encode())
                    continue
                if len(resp.output_tensors()) == 0:
                    continue
                outs.append(int(pb_utils.get_output_tensor_by_name(resp, "OUT").as_numpy().reshape(-1)[0]))
                idxs.append(int(pb_utils.get_output_tensor_by_name(resp, "IDX").as_numpy().reshape(-1)[0]))
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("OUT", np.array(outs, dtype=np.int32)),
                pb_utils.Tensor("IDX", np.array(idxs, dtype=np.uint32)),
                pb_utils.Tensor("ERRORS", np.array(errors, dtype=np.object_)),
            ]))
        return responses
