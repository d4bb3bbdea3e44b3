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
from collections.abc import Collection
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
  ``"bundled:validation"``); one per key of ``parameters_tried``; never the test split, nor,
  where the suite is known, a test trace of the suite named as a whole token.
- ``training_traces``: the traces trained on (``[]`` for an untrained entry).
- ``training_env_steps``, ``training_wall_time_s``: the training budget (0 when untrained).
- ``deterministic``: whether the same seed gives the same actions.
- ``hardware``: the machines of the training and of the run (decision times depend on it).
- ``model``: where the trained model (or the code of the entry) is, with its sha256.
"""

TEST_SPLIT = re.compile(r"(^|[^a-z0-9])test($|[^a-z0-9])", re.IGNORECASE)
"""A selection naming the test split (``test``, ``bundled:test``, ``set/test``...)."""
TOKEN_SEPARATORS = re.compile(r"[^A-Za-z0-9_-]+")
"""What separates the tokens of a ``selection_data`` value (a trace id is a whole token:
``traces/sia-philly-gen-4.csv`` names ``sia-philly-gen-4``)."""
MISSING = "missing"
"""The found value of a :class:`SubmissionError` for a key the object lacks."""


class SubmissionError(ConfigError):
    """A ``submission`` object that breaks docs/SUBMITTING.md.

    The message is ``"{where}, field '{field}': {why}"``.

    Attributes:
        field: the key at fault, e.g. ``submission.selection_data.learning_rate``.
        rule: what the key must be (the expected value of a replay problem).
        found: the offending value (:data:`MISSING` for a missing key).
    """

    def __init__(self, where: str, field: str, why: str, rule: str, found: Any) -> None:
        self.field, self.rule, self.found = field, rule, found
        super().__init__(f"{where}, field '{field}': {why}")


def check_submission(submission: object, where: str, test_traces: Collection[str] = ()
                     ) -> None:
    """Refuse a ``submission`` object that lacks a key, has one of the wrong type or an unknown
    one, modifies the env without saying how, or picks a parameter on the test split (a
    ``selection_data`` value naming ``test``, or one of ``test_traces`` as a whole token).

    Args:
        submission: the header's ``submission`` value.
        where: the file and line, for the error (e.g. ``"agent.jsonl, line 1"``).
        test_traces: the trace ids of the suite's test splits, when the suite is known
            (:func:`palgym.bench.suites.suite_test_traces`); compared case-insensitively.

    Raises:
        SubmissionError: ``"{where}, field 'submission.KEY': ..."``.
    """
    if not isinstance(submission, dict):
        raise SubmissionError(where, "submission", f"must be an object, got {submission!r}",
                              "a JSON object", submission)
    for key, kind in SUBMISSION_FIELDS.items():
        field = f"submission.{key}"
        if key not in submission:
            raise SubmissionError(where, field, MISSING, "a value (every key is required)",
                                  MISSING)
        value = submission[key]
        is_bool = isinstance(value, bool)
        if (kind is bool) != is_bool or not isinstance(value, kind):
            raise SubmissionError(where, field, f"must be a JSON {json_type(kind)}, got "
                                  f"{value!r}", f"a JSON {json_type(kind)}", value)
    unknown = sorted(set(submission) - set(SUBMISSION_FIELDS))
    if unknown:
        raise SubmissionError(where, "submission", f"unknown keys {unknown} (accepted: "
                              f"{list(SUBMISSION_FIELDS)})",
                              f"only the keys {list(SUBMISSION_FIELDS)}", unknown)
    check_values(submission, where)
    check_selection(submission["selection_data"], where, test_traces)


def json_type(kind: type | tuple[type, ...]) -> str:
    """The JSON name of a Python type."""
    names = {str: "string", bool: "boolean", dict: "object", list: "array", int: "integer"}
    return names.get(kind, "number") if isinstance(kind, type) else "number"


def check_values(submission: dict[str, Any], where: str) -> None:
    """The rules between the keys of a well-typed ``submission`` (see :func:`check_submission`)."""
    modified, how = submission["env_modified"], submission["env_modifications"]
    if modified != bool(how.strip()):
        raise SubmissionError(where, "submission.env_modifications", "say how the env was "
                              "modified exactly when env_modified is true",
                              "how the env was modified (env_modified is true)" if modified
                              else "'' (env_modified is false)", how)
    tried, selection = submission["parameters_tried"], submission["selection_data"]
    if set(tried) != set(selection):
        raise SubmissionError(where, "submission.selection_data", f"name the data each tried "
                              f"parameter was picked on: keys {sorted(selection)} != "
                              f"parameters_tried keys {sorted(tried)}",
                              f"the keys of parameters_tried {sorted(tried)}", sorted(selection))
    for key in ("training_env_steps", "training_wall_time_s"):
        if not submission[key] >= 0:
            raise SubmissionError(where, f"submission.{key}",
                                  f"must be >= 0, got {submission[key]!r}", ">= 0",
                                  submission[key])


def check_selection(selection: dict[str, Any], where: str, test_traces: Collection[str]
                    ) -> None:
    """Refuse a ``selection_data`` value that is no string, names the test split, or names a
    trace of ``test_traces`` as a whole token (:data:`TOKEN_SEPARATORS`).

    Raises:
        SubmissionError: naming the key and, for a test trace, the trace.
    """
    rule = "data other than the test split (parameters are never picked on it)"
    tests = {trace.casefold() for trace in test_traces}
    for name, data in sorted(selection.items()):
        field = f"submission.selection_data.{name}"
        if not isinstance(data, str):
            raise SubmissionError(where, field, f"must be a JSON string naming the data, got "
                                  f"{data!r}", "a JSON string naming the data", data)
        if TEST_SPLIT.search(data):
            raise SubmissionError(where, field, f"parameters are never picked on the test "
                                  f"split, got {data!r}", rule, data)
        named = [token for token in TOKEN_SEPARATORS.split(data) if token.casefold() in tests]
        if named:
            raise SubmissionError(where, field, f"parameters are never picked on the test "
                                  f"split: {named[0]!r} is a test trace of the suite, got "
                                  f"{data!r}", f"{rule}; {named[0]!r} is a test trace", data)
