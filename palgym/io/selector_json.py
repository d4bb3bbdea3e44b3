"""The strict read of a rule selector's JSON file (``palgym-rule-selector/1`` or ``/2``, written
by ``agents.selection.selector.LinearSelector.save``): at most :data:`MAX_SELECTOR_BYTES`, strict
JSON (:mod:`palgym.io.strict_json`), ``rules`` and ``features`` lists of strings, ``weights`` a
list of rows of JSON numbers (``"1.0"`` and ``true`` are refused) of magnitude at most
:data:`MAX_SELECTOR_WEIGHT`, ``floor`` null or ``{"hours": number, "rule": string}``. Each
refusal names the file, the line and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from palgym.io.strict_json import StrictJsonError, number, read_json, text

MAX_SELECTOR_BYTES = 1 << 20
"""The largest selector file read (a selector of six rules is about 2 kB)."""
MAX_SELECTOR_WEIGHT = 1e12
"""The largest weight magnitude: the state features are at most ln(1 + hours) or fractions
(``palgym.rule_selection.STATE_FEATURES``), so a score of eight such terms stays far inside
float64 (1.8e308), while a weight of 1e308 would overflow to infinity and tie every rule."""


def read_selector_json(path: str | Path) -> dict[str, Any]:
    """The selector file's object, checked (module docstring); ``weights`` as lists of floats.

    Raises:
        StrictJsonError: naming the file, the line and the field.
        OSError: if the file cannot be read.
    """
    return selector_document(read_selector_file(path), path)


def read_selector_file(path: str | Path) -> Any:
    """The file's strict JSON value, unchecked beyond that (at most
    :data:`MAX_SELECTOR_BYTES`): e.g. to tell a file's format before checking it.

    Raises:
        StrictJsonError: naming the file and the line.
        OSError: if the file cannot be read.
    """
    return read_json(path, max_bytes=MAX_SELECTOR_BYTES, what="a selector file")


def selector_document(data: Any, path: str | Path, prefix: str = "") -> dict[str, Any]:
    """``data`` checked as a selector document (module docstring); ``weights`` as lists of
    floats. ``prefix`` starts each field name in the errors (``"base."``: a selector nested
    in another document's ``base``).

    Raises:
        StrictJsonError: naming the file and the field.
    """
    if not isinstance(data, dict):
        raise StrictJsonError("must be a JSON object (a selector file)", path,
                              None if prefix else 1, prefix.rstrip(".") or None)
    _check_names(data, path, prefix)
    weights = data.get("weights")
    if not isinstance(weights, list):
        raise StrictJsonError("must be a list of rows of numbers (rules x features + bias)",
                              path, None, f"{prefix}weights")
    rows = []
    for row_index, row in enumerate(weights):
        if not isinstance(row, list):
            raise StrictJsonError("must be a list of numbers", path, None,
                                  f"{prefix}weights[{row_index}]")
        rows.append([number(value, path, f"{prefix}weights[{row_index}][{index}]",
                            bound=MAX_SELECTOR_WEIGHT) for index, value in enumerate(row)])
    _check_floor(data.get("floor"), path, prefix)
    return {**data, "weights": rows}


def _check_names(data: dict[str, Any], path: str | Path, prefix: str) -> None:
    """``rules`` and ``features``, when present, are lists of strings."""
    for key in ("rules", "features"):
        if key in data:
            values = data[key]
            if not isinstance(values, list):
                raise StrictJsonError("must be a list of strings", path, None, prefix + key)
            for index, value in enumerate(values):
                text(value, path, f"{prefix}{key}[{index}]")


def _check_floor(floor: Any, path: str | Path, prefix: str) -> None:
    """``floor`` is null or an object whose ``hours`` is a number and ``rule`` a string."""
    if floor is None:
        return
    if not isinstance(floor, dict):
        raise StrictJsonError('must be null or {"hours": number, "rule": string}', path,
                              None, f"{prefix}floor")
    if "hours" in floor:
        number(floor["hours"], path, f"{prefix}floor.hours")
    if "rule" in floor:
        text(floor["rule"], path, f"{prefix}floor.rule")


__all__ = ["MAX_SELECTOR_BYTES", "MAX_SELECTOR_WEIGHT", "read_selector_file",
           "read_selector_json", "selector_document"]
