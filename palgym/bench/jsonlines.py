"""Strict JSON Lines reading for results files (:mod:`palgym.bench.results`), on the strict
reader of :mod:`palgym.io.strict_json`: UTF-8, one JSON object per line, no number that is not
a finite float64 or int (``NaN``, ``Infinity``, ``1e999``, an integer that overflows float64),
nesting at most :data:`palgym.io.strict_json.MAX_DEPTH` deep, and a file of at most
:data:`MAX_RESULTS_BYTES` (``--allow-large`` lifts it), each refusal naming the file, the line
and the field (:class:`ResultsError`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from palgym.io.strict_json import MIB, StrictJsonError, json_lines

MAX_RESULTS_BYTES = 16 * MIB
"""The largest results file read (the committed full-suite ``field`` file, 600 episodes, is
1.3 MB; 16 MiB of rows are read and checked in seconds); ``allow_large`` (``--allow-large``)
raises it to :data:`LARGE_RESULTS_BYTES`."""
LARGE_RESULTS_BYTES = 16 * 1024 * MIB
"""The limit under ``allow_large``."""
MAX_LINE_BYTES = 4 * MIB
"""The longest line of a results file (the committed files' longest, an episode of 333,467
decisions, is 47 kB); ``allow_large`` multiplies it by 64."""
ALLOW_LARGE = "--allow-large"
"""The option that lifts the size limits of ``python -m palgym.bench``."""


class ResultsError(StrictJsonError):
    """A malformed results file: the message names the file, the line and the field.

    Attributes:
        path: the file.
        line: 1-based line number (None: the whole file).
        field: the field (None: the whole line).
    """


def results_limit(allow_large: bool) -> int:
    """The size limit of a results file (:data:`MAX_RESULTS_BYTES`, or
    :data:`LARGE_RESULTS_BYTES` under ``allow_large``)."""
    return LARGE_RESULTS_BYTES if allow_large else MAX_RESULTS_BYTES


def json_objects(file: Path, allow_large: bool = False
                 ) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for the file's lines (at least one), read strictly and one
    line at a time (module docstring), so that the caller can refuse a line before the next
    is read.

    Raises:
        ResultsError: naming the file, the line and the field.
        OSError: if the file cannot be read.
    """
    found = False
    try:
        for number, value in json_lines(file, max_bytes=results_limit(allow_large),
                                        what="a results file", option=ALLOW_LARGE,
                                        max_line_bytes=MAX_LINE_BYTES * (
                                            64 if allow_large else 1)):
            if not isinstance(value, dict):
                raise ResultsError("not a JSON object", file, number)
            found = True
            yield number, value
    except ResultsError:
        raise
    except StrictJsonError as exc:
        raise ResultsError(exc.reason, exc.path, exc.line, exc.field) from None
    if not found:
        raise ResultsError("empty file (line 1 must be the header)", file)


__all__ = ["ALLOW_LARGE", "LARGE_RESULTS_BYTES", "MAX_LINE_BYTES", "MAX_RESULTS_BYTES",
           "ResultsError",
           "json_objects", "results_limit"]
