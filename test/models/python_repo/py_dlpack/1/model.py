"""py_dlpack: Triton's DLPack interop with numpy (CPU).

TIMES3: Tensor.from_dlpack("TIMES3", array) with a numpy array (an object
implementing __dlpack__). ROUND: Tensor.from_dlpack("ROUND",
input.to_dlpack()) (a capsule). VIA_PROTOCOL: np.from_dlpack(input), which
works because Triton's Tensor implements __dlpack__ and __dlpack_device__;
when it raises, VIA_PROTOCOL is empty and MSG holds the exception."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "IN")
            times3 = pb_utils.Tensor.from_dlpack("TIMES3", x.as_numpy() * 3)
            rt = pb_utils.Tensor.from_dlpack("ROUND", x.to_dlpack())
            msg = ""
            try:
                via = np.from_dlpack(x).copy()
            except Exception as e:  # noqa: BLE001
                via = np.zeros(0, dtype=np.float32)
                msg = f"{type(e).__name__}: {e}"
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("TIMES3", times3.as_numpy()),
                pb_utils.Tensor("ROUND", rt.as_numpy()),
                pb_utils.Tensor("VIA_PROTOCOL", via),
                pb_utils.Tensor("MSG", np.array([msg.encode()], dtype=np.object_)),
            ]))
        return responses
