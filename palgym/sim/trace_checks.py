"""Checks of trace columns that need more than a per-value range: whole numbers in integer
columns (:func:`integer_column`), and the error locating a row (:func:`row_error`).

Every error is a :class:`~palgym.errors.TraceFormatError` naming the trace's source, the job's
file line (when known, else its 0-based row) and the field.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from palgym.errors import TraceFormatError
from palgym.sim.types import IntArray


def integer_column(values: Sequence[int] | Sequence[float] | IntArray, field: str, where: str,
                   lines: IntArray | None = None) -> IntArray:
    """``values`` as int64 (J,), refusing what a cast would change (1.5 -> 1, NaN, 1e30).

    Args:
        values: a sequence or array of whole numbers (ints, or floats with no fraction).
        field: the column's name, for the error.
        where: the trace's source (file path) or name, for the error.
        lines: int64 (J,), file line of every row (None: name the 0-based position).

    Returns:
        int64 (J,) array (the same values).

    Raises:
        TraceFormatError: naming ``where``, the row and ``field``, for a value that is not a
            whole number in int64's range (or not a number at all).
    """
    array = np.asarray(values)
    if array.dtype.kind in "iu":
        return array.astype(np.int64)
    try:
        floats = array.astype(np.float64)
    except (TypeError, ValueError):
        floats = np.array([_as_float(v) for v in array.ravel()]).reshape(array.shape)
    ok = np.isfinite(floats) & (floats == np.floor(floats)) & (np.abs(floats) < 2.0 ** 63)
    if ok.all():
        return floats.astype(np.int64)
    row = int(np.flatnonzero(~ok.ravel())[0])
    value = array.ravel()[row]
    shown = value.item() if isinstance(value, np.generic) else value
    raise row_error(f"value {shown!r} is not a whole number", where, field, row, lines)


def _as_float(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def row_error(message: str, where: str, field: str, row: int, lines: IntArray | None,
              job_id: int | None = None) -> TraceFormatError:
    """A :class:`TraceFormatError` at ``row`` (0-based position): its file line when ``lines``
    knows it (> 0), else ``"row {row}, 0-based"`` in the message."""
    line = None if lines is None or row >= lines.shape[0] else int(lines[row])
    job = "" if job_id is None else f"job {job_id} "
    if line is not None and line > 0:
        return TraceFormatError(f"{job}{message}", path=where, line=line, field=field)
    return TraceFormatError(f"{job}(row {row}, 0-based): {message}", path=where, field=field)
