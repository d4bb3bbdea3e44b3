"""Typed fields of a strictly read JSON document, and the error that names a file, a line and a
field (:mod:`palgym.io.strict_json` reads the documents).

The getters keep numbers numbers and booleans booleans: a field that must be a number refuses
``"1.0"`` and ``true``; one that must be an integer refuses ``1.0``; a boolean refuses 0 and 1.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, TypeVar

from palgym.errors import ConfigError

T = TypeVar("T")


class StrictJsonError(ConfigError):
    """A file refused by the strict reader; the message names the file, the line and the field.

    Attributes:
        path: the file.
        line: 1-based line number (None: the whole file).
        field: the field, e.g. ``weights[2][0]`` or ``submission.parameters.lr`` (None: none).
        reason: the message without the location.
    """

    def __init__(self, message: str, path: str | Path, line: int | None = None,
                 field: str | None = None) -> None:
        self.path, self.line, self.field, self.reason = str(path), line, field, message
        where = [self.path] + ([f"line {line}"] if line is not None else []) + (
            [f"field {field!r}"] if field is not None else [])
        super().__init__(f"{', '.join(where)}: {message}")


def _kind(value: Any) -> str:
    """The JSON kind of a parsed value, for messages."""
    if isinstance(value, bool):
        return f"the boolean {json.dumps(value)}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if value is None:
        return "null"
    if isinstance(value, dict | list):
        return "an object" if isinstance(value, dict) else "an array"
    return f"the number {value!r}"


def number(value: Any, path: str | Path, field: str, *, line: int | None = None,
           bound: float | None = None) -> float:
    """``value`` as a float: a JSON number (not a boolean, not a string), finite, and of
    magnitude at most ``bound`` when given.

    Raises:
        StrictJsonError: naming the file, the line and the field.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise StrictJsonError(f"must be a number, got {_kind(value)}", path, line, field)
    result = float(value)
    if not math.isfinite(result):
        raise StrictJsonError(f"must be a finite number, got {value!r}", path, line, field)
    if bound is not None and abs(result) > bound:
        raise StrictJsonError(f"must be within [-{bound:g}, {bound:g}], got {value!r}", path,
                              line, field)
    return result


def integer(value: Any, path: str | Path, field: str, *, line: int | None = None,
            minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an int: a JSON integer (not a boolean, not ``1.0``), within the bounds.

    Raises:
        StrictJsonError: naming the file, the line and the field.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise StrictJsonError(f"must be an integer, got {_kind(value)}", path, line, field)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise StrictJsonError(f"must be in [{minimum}, {maximum}], got {value}", path, line,
                              field)
    return int(value)


def boolean(value: Any, path: str | Path, field: str, *, line: int | None = None) -> bool:
    """``value``, which must be ``true`` or ``false`` (not 0, 1 or a string).

    Raises:
        StrictJsonError: naming the file, the line and the field.
    """
    return _of_type(value, bool, "true or false", (path, line, field))


def text(value: Any, path: str | Path, field: str, *, line: int | None = None) -> str:
    """``value``, which must be a JSON string.

    Raises:
        StrictJsonError: naming the file, the line and the field.
    """
    return _of_type(value, str, "a string", (path, line, field))


def _of_type(value: Any, kind: type[T], wanted: str,
             where: tuple[str | Path, int | None, str]) -> T:
    """``value`` if it is a ``kind``, else StrictJsonError ``"must be {wanted}, got ..."`` at
    ``where`` (path, line, field)."""
    if not isinstance(value, kind):
        raise StrictJsonError(f"must be {wanted}, got {_kind(value)}", *where)
    return value
