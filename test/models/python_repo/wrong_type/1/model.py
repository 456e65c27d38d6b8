"""wrong_type: execute returns something that is not a list of
InferenceResponse objects."""


class TritonPythonModel:
    def execute(self, requests):
        return "not a list of responses"
