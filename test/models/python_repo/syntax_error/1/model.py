"""syntax_error: model.py does not compile; the model must fail to load."""

class TritonPythonModel:
    def execute(self, requests)
        return []
