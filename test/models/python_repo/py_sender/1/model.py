"""py_sender: a default (non-decoupled) model that answers through the
response sender instead of execute's return value, as Triton allows: exactly
one response and the FINAL flag, execute returning None. OUT = IN * 2.

MODE 0: send(response, FINAL) inside execute.
MODE 1: send(response, FINAL) from a thread, 50 ms after execute returned.
MODE 2: first send(None, FINAL) (Triton refuses it before any response);
        the refusal's text is the answer's MSG.
MODE 3: send(response), then a second send(response) (refused: one
        response only; logged), then send(None, FINAL).
MODE 4: send(response, FINAL), then send(None, FINAL) (refused: the sender
        is closed; logged).
"""

import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


def answer(x, msg=""):
    return pb_utils.InferenceResponse(output_tensors=[
        pb_utils.Tensor("OUT", (x * 2).astype(np.float32)),
        pb_utils.Tensor("MSG", np.array([msg.encode()], dtype=np.object_)),
    ])


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().copy()
            mode = int(pb_utils.get_input_tensor_by_name(request, "MODE").as_numpy().reshape(-1)[0])
            rid = request.request_id()
            sender = request.get_response_sender()
            if mode == 0:
                sender.send(answer(x), flags=FINAL)
            elif mode == 1:
                threading.Thread(target=self.later, args=(sender, x), daemon=True).start()
            elif mode == 2:
                try:
                    sender.send(flags=FINAL)
                    msg = "no exception"
                except Exception as e:  # noqa: BLE001
                    msg = str(e)
                sender.send(answer(x, msg), flags=FINAL)
            elif mode == 3:
                sender.send(answer(x))
                try:
                    sender.send(answer(x))
                except Exception as e:  # noqa: BLE001
                    pb_utils.Logger.log_info(f"py_sender: request '{rid}' second send raised: {e}")
                sender.send(flags=FINAL)
            else:
                sender.send(answer(x), flags=FINAL)
                try:
                    sender.send(flags=FINAL)
                except Exception as e:  # noqa: BLE001
                    pb_utils.Logger.log_info(f"py_sender: request '{rid}' send after final raised: {e}")
        return None

    @staticmethod
    def later(sender, x):
        time.sleep(0.05)
        sender.send(answer(x), flags=FINAL)
