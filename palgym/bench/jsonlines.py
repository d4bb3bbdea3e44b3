"""Strict JSON Lines reading for results files (:mod:`palgym.bench.results`): UTF-8, one JSON
object per line, and no number that is not a finite float64 or int (``NaN``, ``Infinity``,
``1e999``, an integer too long to convert), each refusal naming the file, the line and the
field (:class:`ResultsError`). Python's ``json`` reads such numbers as floats by default; here
they are kept in place as markers so that the refusal can name the field they stand in.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from palgym.errors import ConfigError


class ResultsError(ConfigError):
    """A malformed results file: the message names the file, the line and the field.

    Attributes:
        path: the file.
        line: 1-based line number (None: the whole file).
        field: the field (None: the whole line).
    """

    def __init__(self, message: str, path: str | Path, line: int | None = None,
                 field: str | None = None) -> None:
        self.path, self.line, self.field = str(path), line, field
        where = [self.path] + ([f"line {line}"] if line is not None else []) + (
            [f"field {field!r}"] if field is not None else [])
        super().__init__(f"{', '.join(where)}: {message}")



class _NotFinite:
    """What :func:`json_objects` reads for a number that is no finite float64 or int (``NaN``,
    ``Infinity``, ``1e999``, an integer too long to convert): kept in place, so that the
    refusal names its field (:func:`_first_not_finite`)."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why


def _constant(constant: str) -> _NotFinite:
    """``json.loads``'s ``parse_constant``: ``NaN``, ``Infinity`` and ``-Infinity`` are no
    JSON numbers (a float that is not finite is written as ``null``)."""
    return _NotFinite(f"{constant} is not a JSON number (a value that is not finite is null)")


def _float(text: str) -> float | _NotFinite:
    """``json.loads``'s ``parse_float``: a number too large for a float (``1e999``) is
    refused, not read as infinity."""
    value = float(text)
    if not math.isfinite(value):
        return _NotFinite(f"{text} is not a finite float64 (a value that is not finite is "
                          "null)")
    return value


def _int(text: str) -> int | _NotFinite:
    """``json.loads``'s ``parse_int``: an integer longer than Python converts is refused."""
    try:
        return int(text)
    except ValueError:
        return _NotFinite(f"an integer of {len(text)} digits is too long to convert")


def _first_not_finite(value: Any, field: str = "") -> tuple[str, _NotFinite] | None:
    """The first :class:`_NotFinite` in a parsed line, in document order, with its field
    (``p99_jct_s``, ``validation_geomean_avg_jct_s.pal``, ``seeds[2]``; ``""``: the line)."""
    if isinstance(value, _NotFinite):
        return field, value
    if isinstance(value, dict):
        items = [(f"{field}.{key}" if field else str(key), item) for key, item in value.items()]
    elif isinstance(value, list):
        items = [(f"{field}[{index}]", item) for index, item in enumerate(value)]
    else:
        return None
    for name, item in items:
        found = _first_not_finite(item, name)
        if found is not None:
            return found
    return None


def json_objects(file: Path) -> list[dict[str, Any]]:
    """The file's lines as JSON objects (at least one; ``NaN``, ``Infinity``, a number that
    overflows a float and an integer too long to convert are refused, naming the field)."""
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise ResultsError(f"not UTF-8 ({exc.reason} at byte {exc.start})", file) from None
    if not lines:
        raise ResultsError("empty file (line 1 must be the header)", file)
    objects = []
    for number, text in enumerate(lines, start=1):
        try:
            value = json.loads(text, parse_float=_float, parse_int=_int,
                               parse_constant=_constant)
        except json.JSONDecodeError as exc:
            raise ResultsError(f"not JSON ({exc.msg})", file, number) from None
        bad = _first_not_finite(value)
        if bad is not None:
            raise ResultsError(bad[1].why, file, number, bad[0] or None)
        if not isinstance(value, dict):
            raise ResultsError("not a JSON object", file, number)
        objects.append(value)
    return objects


__all__ = ["ResultsError", "json_objects"]
