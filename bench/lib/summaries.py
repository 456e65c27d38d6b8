"""Reading inferd-perf's --json-summary files of a bench run, for the
report modules (report29: UDS rounds, report30: the A/B rounds).

load_steps(res, pattern) returns the first step of raw/<dir>/summary.json
for every scenario folder under res/raw whose name matches the regular
expression `pattern` in full, in name order; unreadable ones are skipped.
median(vals) is the median of a list of numbers (None when empty).
cpu_per_req(step, key) is a step's CPU time `key` (default the server's,
cpu_pid_us) per request, or None.
"""
import json
import os
import re


def load_steps(res, pattern):
    out = []
    raw = os.path.join(res, "raw")
    if not os.path.isdir(raw):
        return out
    for d in sorted(os.listdir(raw)):
        if not re.fullmatch(pattern, d):
            continue
        try:
            with open(os.path.join(raw, d, "summary.json")) as f:
                out.append(json.load(f)["steps"][0])
        except (OSError, ValueError, KeyError, IndexError):
            pass
    return out


def median(vals):
    vals = sorted(vals)
    if not vals:
        return None
    n = len(vals)
    return vals[n // 2] if n % 2 else (vals[n // 2 - 1] + vals[n // 2]) / 2


def cpu_per_req(step, key="cpu_pid_us"):
    n = step.get("request_count")
    return step[key] / n if n and step.get(key) is not None else None
