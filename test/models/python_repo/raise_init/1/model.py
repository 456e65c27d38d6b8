"""raise_init: initialize raises, so the model never becomes ready."""


class TritonPythonModel:
    def initialize(self, args):
        raise ValueError("raise_init: deliberate failure in initialize")

    def execute(self, requests):
        return []
