"""The ``submission`` object of a results file's header: what an entry states about how it was
made (docs/SUBMITTING.md). Heuristic reference entries (``pal``, ``best``, ``field``) may omit
it; a submitted entry carries it.

Example::

    "submission": {
      "submitter": "Ada Lovelace <ada@example.org>",
      "env_modified": false, "env_modifications": "",
      "parameters": {"learning_rate": 0.0003, "n_steps": 2048},
      "parameters_tried": {"learning_rate": "loguniform(1e-5, 1e-3), 40 trials",
                           "n_steps": [1024, 2048, 4096]},
      "selection_data": {"learning_rate": "bundled:validation", "n_steps": "bundled:validation"},
      "training_traces": ["bundled:train"],
      "training_env_steps": 2000000, "training_wall_time_s": 5400.0,
      "deterministic": true,
      "hardware": "training: 8 cores of an AMD EPYC 7763, no GPU; run: the same",
      "model": "https://example.org/ppo-pal.zip sha256 0123..."
    }
"""

from __future__ import annotations

import re
from typing import Any

from palgym.errors import ConfigError

SUBMISSION_FIELDS: dict[str, type | tuple[type, ...]] = {
    "submitter": str,
    "env_modified": bool,
    "env_modifications": str,
    "parameters": dict,
    "parameters_tried": dict,
    "selection_data": dict,
    "training_traces": list,
    "training_env_steps": int,
    "training_wall_time_s": (int, float),
    "deterministic": bool,
    "hardware": str,
    "model": str,
}
"""Every key of the ``submission`` object, with its JSON type (all required):

- ``submitter``: who submits, and how to reach them.
- ``env_modified``: whether the env differed from the named palgym version's in training or
  in the run (observation, reward, masking, wrappers); ``env_modifications`` says how ("" when
  not modified). The simulator and its metrics are never modified: the replay checks them.
- ``parameters``: the final value of every parameter that was chosen (hyperparameters,
  thresholds, checkpoint), name -> value.
- ``parameters_tried``: name -> the values or the range tried (a list, or text such as
  ``"loguniform(1e-5, 1e-3), 40 trials"``); ``{}`` when nothing was tuned.
- ``selection_data``: name -> the data the value was picked on (a trace set and split such as
  ``"bundled:validation"``); one per key of ``parameters_tried``; never the test split.
- ``training_traces``: the traces trained on (``[]`` for an untrained entry).
- ``training_env_steps``, ``training_wall_time_s``: the training budget (0 when untrained).
- ``deterministic``: whether the same seed gives the same actions.
- ``hardware``: the machines of the training and of the run (decision times depend on it).
- ``model``: where the trained model (or the code of the entry) is, with its sha256.
"""

TEST_SPLIT = re.compile(r"(^|[^a-z0-9])test($|[^a-z0-9])", re.IGNORECASE)
"""A selection naming the test split (``test``, ``bundled:test``, ``set/test``...)."""


def check_submission(submission: object, where: str) -> None:
    """Refuse a ``submission`` object that lacks a key, has one of the wrong type or an unknown
    one, modifies the env without saying how, or picks a parameter on the test split.

    Args:
        submission: the header's ``submission`` value.
        where: the file and line, for the error (e.g. ``"agent.jsonl, line 1"``).

    Raises:
        ConfigError: ``"{where}, field 'submission.KEY': ..."``.
    """
    if not isinstance(submission, dict):
        raise ConfigError(f"{where}, field 'submission': must be an object, got {submission!r}")
    for key, kind in SUBMISSION_FIELDS.items():
        field = f"{where}, field 'submission.{key}'"
        if key not in submission:
            raise ConfigError(f"{field}: missing")
        value = submission[key]
        is_bool = isinstance(value, bool)
        if (kind is bool) != is_bool or not isinstance(value, kind):
            raise ConfigError(f"{field}: must be a JSON {json_type(kind)}, got {value!r}")
    unknown = sorted(set(submission) - set(SUBMISSION_FIELDS))
    if unknown:
        raise ConfigError(f"{where}, field 'submission': unknown keys {unknown} (accepted: "
                          f"{list(SUBMISSION_FIELDS)})")
    check_values(submission, where)


def json_type(kind: type | tuple[type, ...]) -> str:
    """The JSON name of a Python type."""
    names = {str: "string", bool: "boolean", dict: "object", list: "array", int: "integer"}
    return names.get(kind, "number") if isinstance(kind, type) else "number"


def check_values(submission: dict[str, Any], where: str) -> None:
    """The rules between the keys of a well-typed ``submission`` (see :func:`check_submission`)."""
    if submission["env_modified"] != bool(submission["env_modifications"].strip()):
        raise ConfigError(f"{where}, field 'submission.env_modifications': say how the env was "
                          f"modified exactly when env_modified is true")
    tried, selection = submission["parameters_tried"], submission["selection_data"]
    if set(tried) != set(selection):
        raise ConfigError(f"{where}, field 'submission.selection_data': name the data each "
                          f"tried parameter was picked on: keys {sorted(selection)} != "
                          f"parameters_tried keys {sorted(tried)}")
    for name, data in sorted(selection.items()):
        if not isinstance(data, str) or TEST_SPLIT.search(data):
            raise ConfigError(f"{where}, field 'submission.selection_data.{name}': parameters "
                              f"are never picked on the test split, got {data!r}")
    for key in ("training_env_steps", "training_wall_time_s"):
        if not submission[key] >= 0:
            raise ConfigError(f"{where}, field 'submission.{key}': must be >= 0")
