"""py_logmetrics: Triton's Logger and custom metrics API.

initialize creates a counter family, a gauge family and a histogram family
(each with one metric labelled by model and version). Each request
increments the counter by 1, sets the gauge to IN's element count, observes
that count in the histogram, and logs one line at each level (the tests find
the file and line of each call). COUNT and GAUGE answer the metrics'
values as Metric.value() reads them back.
"""

import numpy as np
import triton_python_backend_utils as pb_utils

BUCKETS = [1.0, 4.0, 16.0]


class TritonPythonModel:
    def initialize(self, args):
        logger = pb_utils.Logger
        logger.log_info("py_logmetrics: initialize info")
        labels = {"model": args["model_name"], "version": args["model_version"]}
        self.requests_family = pb_utils.MetricFamily(
            name="py_logmetrics_requests_total",
            description="Requests executed by py_logmetrics",
            kind=pb_utils.MetricFamily.COUNTER)
        self.requests = self.requests_family.Metric(labels=labels)
        self.size_family = pb_utils.MetricFamily(
            name="py_logmetrics_last_size",
            description="Element count of the last request",
            kind=pb_utils.MetricFamily.GAUGE)
        self.size = self.size_family.Metric(labels=labels)
        self.hist_family = pb_utils.MetricFamily(
            name="py_logmetrics_size",
            description="Element counts of requests",
            kind=pb_utils.MetricFamily.HISTOGRAM)
        self.hist = self.hist_family.Metric(labels=labels, buckets=BUCKETS)

    def execute(self, requests):
        logger = pb_utils.Logger
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            self.requests.increment(1)
            self.size.set(float(x.size))
            self.hist.observe(float(x.size))
            logger.log_info("py_logmetrics: execute info")
            logger.log_warn("py_logmetrics: execute warn")
            logger.log_error("py_logmetrics: execute error")
            logger.log_verbose("py_logmetrics: execute verbose")
            logger.log("py_logmetrics: execute log default")
            logger.log("py_logmetrics: execute log warning", logger.WARNING)
            count = pb_utils.Tensor("COUNT", np.array([self.requests.value()], dtype=np.float64))
            gauge = pb_utils.Tensor("GAUGE", np.array([self.size.value()], dtype=np.float64))
            responses.append(pb_utils.InferenceResponse(output_tensors=[count, gauge]))
        return responses

    def finalize(self):
        pb_utils.Logger.log_info("py_logmetrics: finalize info")
