"""py_repeat: a decoupled model in the manner of Triton's repeat example.

For each request, one response per element of IN (OUT = IN[i], IDX = i),
sent from a thread of its own after execute has returned, DELAY[i]
milliseconds before each (DELAY is optional), then a flags-only FINAL. A
negative element is answered with an error response (INVALID_ARG) in its
place and the stream goes on. The thread checks sender.is_cancelled() while
it waits and stops early (logged, then the FINAL) when the client is gone.
After the FINAL, the thread tries one more send and logs what it raised, so
the tests can check Triton's text.
"""

import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.workers = []
        self.lock = threading.Lock()

    def execute(self, requests):
        for request in requests:
            values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().reshape(-1).copy()
            delay_t = pb_utils.get_input_tensor_by_name(request, "DELAY")
            delays = (delay_t.as_numpy().reshape(-1).copy() if delay_t is not None
                      else np.zeros(len(values), dtype=np.uint32))
            sender = request.get_response_sender()
            t = threading.Thread(target=self.produce, args=(sender, request.request_id(), values, delays),
                                 daemon=True)
            with self.lock:
                self.workers.append(t)
            t.start()
        # Decoupled: responses go through the senders, execute returns None.
        return None

    def produce(self, sender, rid, values, delays):
        for i, v in enumerate(values):
            if i < len(delays) and delays[i]:
                # Sleep in small steps, watching for the client going away.
                end = time.monotonic() + int(delays[i]) / 1000.0
                while time.monotonic() < end and not sender.is_cancelled():
                    time.sleep(0.01)
            if sender.is_cancelled():
                pb_utils.Logger.log_info(f"py_repeat: request '{rid}' cancelled before response {i}")
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                return
            if v < 0:
                err = pb_utils.TritonError(f"py_repeat: negative value {int(v)} at {i}",
                                           pb_utils.TritonError.INVALID_ARG)
                sender.send(pb_utils.InferenceResponse(error=err))
                continue
            out = pb_utils.Tensor("OUT", np.array([v], dtype=np.int32))
            idx = pb_utils.Tensor("IDX", np.array([i], dtype=np.uint32))
            sender.send(pb_utils.InferenceResponse(output_tensors=[out, idx]))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        try:
            sender.send(pb_utils.InferenceResponse(output_tensors=[]),
                        flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        except Exception as e:  # noqa: BLE001 - Triton raises its own exception type
            pb_utils.Logger.log_info(f"py_repeat: request '{rid}' send after final raised: {e}")

    def finalize(self):
        with self.lock:
            workers = list(self.workers)
        for t in workers:
            t.join(timeout=10)
