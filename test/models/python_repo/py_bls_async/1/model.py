"""py_bls_async: `async def execute` with async_exec(), as Triton's BLS
example does. Per request, three calls in flight together: py_identity_step
with INPUT0 and with 3 * INPUT0 (OUTPUT0 = the sum of both answers, so
4 * INPUT0), and the decoupled py_repeat with IN = [1, 2, 3] through
async_exec(decoupled=True) (NREP = its responses that carry tensors)."""

import asyncio

import numpy as np
import triton_python_backend_utils as pb_utils


def identity_call(x):
    return pb_utils.InferenceRequest(
        model_name="py_identity_step",
        requested_output_names=["OUTPUT0"],
        inputs=[pb_utils.Tensor("INPUT0", x.astype(np.float32))])


class TritonPythonModel:
    async def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            rep = pb_utils.InferenceRequest(
                model_name="py_repeat",
                requested_output_names=["OUT"],
                inputs=[pb_utils.Tensor("IN", np.array([1, 2, 3], dtype=np.int32))])
            a, b, stream = await asyncio.gather(
                identity_call(x).async_exec(),
                identity_call(x * 3).async_exec(),
                rep.async_exec(decoupled=True))
            for r in (a, b):
                if r.has_error():
                    raise pb_utils.TritonModelException(r.error().message())
            total = (pb_utils.get_output_tensor_by_name(a, "OUTPUT0").as_numpy()
                     + pb_utils.get_output_tensor_by_name(b, "OUTPUT0").as_numpy())
            nrep = sum(1 for r in stream if not r.has_error() and len(r.output_tensors()) > 0)
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("OUTPUT0", total.astype(np.float32)),
                pb_utils.Tensor("NREP", np.array([nrep], dtype=np.int32)),
            ]))
        return responses
