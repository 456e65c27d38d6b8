# backend_api/backends/python/_pb_model_config.py - pb_utils.ModelConfig:
# the model's configuration as auto_complete_config sees and edits it, with
# Triton's methods and validation messages.
#
# A module of its own beside triton_python_backend_utils.py, which takes
# ModelConfig as its own name (pb_utils.ModelConfig, unchanged). It imports
# neither that module nor the stub's.

import json


class ModelConfig:
    """The model's configuration as auto_complete_config sees and edits it
    (Triton's methods and validation messages)."""

    def __init__(self, model_config):
        if isinstance(model_config, str):
            model_config = json.loads(model_config)
        self._model_config = model_config
        self._model_config.setdefault("max_batch_size", 0)
        self._model_config.setdefault("input", [])
        self._model_config.setdefault("output", [])

    def as_dict(self):
        return self._model_config

    def _name(self):
        return self._model_config.get("name", "")

    def set_max_batch_size(self, max_batch_size):
        current = self._model_config["max_batch_size"]
        if current > max_batch_size:
            raise ValueError(
                "configuration specified max_batch_size " + str(current)
                + ", but in auto-complete-config function for model '"
                + self._name() + "' specified max_batch_size "
                + str(max_batch_size))
        self._model_config["max_batch_size"] = max_batch_size

    def set_dynamic_batching(self):
        for other in ("sequence_batching", "ensemble_scheduling"):
            if other in self._model_config:
                raise ValueError(
                    "Configuration specified scheduling_choice as '" + other
                    + "', but auto-complete-config function for model '"
                    + self._name()
                    + "' tries to set scheduling_choice as 'dynamic_batching'")
        self._model_config.setdefault("dynamic_batching", {})

    def _add_tensor(self, kind, t, valid):
        if not isinstance(t, dict):
            raise ValueError(kind + " in auto-complete-config function for "
                             "model '" + self._name() + "' must be a dict.")
        for p in t:
            if p not in valid:
                raise ValueError(
                    kind + " '" + str(t.get("name")) + "' in auto-complete-"
                    "config function for model '" + self._name()
                    + "' contains property other than "
                    + ", ".join("'" + v + "'" for v in valid[:-1])
                    + " and '" + valid[-1] + "'.")
        if "name" not in t:
            raise ValueError(
                kind + " in auto-complete-config function for model '"
                + self._name() + "' is missing 'name' property.")
        for p in ("data_type", "dims"):
            if p not in t:
                raise ValueError(
                    kind + " '" + t["name"] + "' in auto-complete-config "
                    "function for model '" + self._name() + "' is missing '"
                    + p + "' property.")
        for cur in self._model_config[kind]:
            if cur.get("name") != t["name"]:
                continue
            cur_type = cur.get("data_type", "TYPE_INVALID")
            if cur_type != "TYPE_INVALID" and cur_type != t["data_type"]:
                raise ValueError(
                    "unable to load model '" + self._name()
                    + "', configuration expects datatype " + cur_type
                    + " for " + kind + " '" + t["name"] + "', model provides "
                    + t["data_type"])
            if cur.get("dims") and list(cur["dims"]) != list(t["dims"]):
                raise ValueError(
                    "model '" + self._name() + "', tensor '" + t["name"]
                    + "': the model expects dims " + str(t["dims"])
                    + " but the model configuration specifies dims "
                    + str(cur["dims"]))
            if "optional" in cur and "optional" in t \
                    and cur["optional"] != t["optional"]:
                raise ValueError(
                    "model '" + self._name() + "', tensor '" + t["name"]
                    + "': the model expects optional " + str(t["optional"])
                    + " but the model configuration specifies optional "
                    + str(cur["optional"]))
            cur.update(t)
            return
        self._model_config[kind].append(dict(t))

    def add_input(self, input):
        self._add_tensor("input", input,
                         ["name", "data_type", "dims", "optional"])

    def add_output(self, output):
        self._add_tensor("output", output, ["name", "data_type", "dims"])

    def set_model_transaction_policy(self, transaction_policy_dict):
        for p in transaction_policy_dict:
            if p != "decoupled":
                raise ValueError(
                    "model transaction property in auto-complete-config "
                    "function for model '" + self._name()
                    + "' contains property other than 'decoupled'.")
        policy = self._model_config.setdefault("model_transaction_policy", {})
        if "decoupled" in transaction_policy_dict:
            want = transaction_policy_dict["decoupled"]
            if "decoupled" in policy and policy["decoupled"] != want:
                raise ValueError(
                    "trying to change decoupled property in auto-complete-"
                    "config for model '" + self._name()
                    + "', which is already set to '" + str(policy["decoupled"])
                    + "'.")
            policy["decoupled"] = want

    def add_model_warmup(self, model_warmup):
        if not isinstance(model_warmup, dict) or "name" not in model_warmup:
            raise ValueError(
                "model warmup in auto-complete-config function for model '"
                + self._name() + "' must be a dict with a 'name' property.")
        warmups = self._model_config.setdefault("model_warmup", [])
        for w in warmups:
            if w.get("name") == model_warmup["name"]:
                raise ValueError(
                    "model warmup '" + model_warmup["name"] + "' in auto-"
                    "complete-config function for model '" + self._name()
                    + "' is already set.")
        warmups.append(dict(model_warmup))
