"""Raw CSV tables with physical line numbers, and vectorised cell parsing that names bad cells.

Every loader reads its file through :func:`read_table` (the stdlib ``csv`` reader: strict field
counts, ``#`` comment lines and blank lines skipped, physical 1-based line numbers kept) and then
parses whole columns at once with :func:`parse_numbers` / :func:`parse_times` (pandas
``to_numeric`` / ``to_datetime`` with ``errors="coerce"``). A bad cell never surfaces as a pandas
exception: the first bad cell of a column is reported as a :class:`~palgym.errors.TraceFormatError`
(or the error type given) naming the file, the line and the field.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np
import pandas as pd

from palgym.errors import TraceFormatError, _FileError
from palgym.io.csvutil import plain_number
from palgym.sim.types import BoolArray, FloatArray, IntArray

MAX_EXACT_INT: int = 2**53
"""Largest integer magnitude accepted in an integer field (exact in float64, fits int64)."""


@dataclass(frozen=True, eq=False)
class RawTable:
    """A CSV file's data rows as strings.

    Attributes:
        path: the file read.
        header: the column names (stripped), in file order.
        cells: per column, object (R,) array of stripped cell strings ("" = empty).
        lines: int64 (R,), the physical 1-based line of each row (header line < all of them).
        comments: the ``#`` lines before the header, without the leading ``#`` and one space.
    """

    path: Path
    header: tuple[str, ...]
    cells: dict[str, np.ndarray]
    lines: IntArray
    comments: tuple[str, ...]

    @property
    def num_rows(self) -> int:
        """R, the number of data rows."""
        return int(self.lines.shape[0])

    def error(self, message: str, row: int | None = None, field: str | None = None,
              kind: type[_FileError] = TraceFormatError) -> _FileError:
        """An error naming this file, the line of data row ``row`` (0-based) and ``field``."""
        line = None if row is None else int(self.lines[row])
        return kind(message, path=self.path, line=line, field=field)


def read_table(
    path: str | Path,
    required: tuple[str, ...],
    error: type[_FileError] = TraceFormatError,
) -> RawTable:
    """Read a CSV file into string columns.

    Args:
        path: the CSV file (UTF-8, optional BOM).
        required: columns that must be in the header.
        error: the error type raised.

    Returns:
        The table; extra columns are kept, duplicate header names are an error.

    Raises:
        error: naming file and line, for an unreadable, empty or binary file, a missing or
            duplicate column, or a row with the wrong number of fields.
    """
    file = Path(path)
    try:
        handle = file.open(newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise error(f"cannot read file: {exc.strerror or exc}", path=file) from exc
    comments: list[str] = []
    rows: list[list[str]] = []
    lines: list[int] = []
    header: list[str] | None = None
    header_line = 1
    with handle:
        reader = csv.reader(_uncommented(handle, comments))
        try:
            for row in reader:
                if not row or (not row[0].strip() and not any(c.strip() for c in row)):
                    continue
                if header is None:
                    header, header_line = [c.strip() for c in row], reader.line_num
                    _check_header(header, required, file, header_line, error)
                    continue
                if len(row) != len(header):
                    raise error(f"expected {len(header)} fields, got {len(row)}", path=file,
                                line=reader.line_num)
                rows.append(row)
                lines.append(reader.line_num)
        except (csv.Error, UnicodeDecodeError) as exc:
            raise error(f"unreadable CSV: {exc}", path=file, line=max(reader.line_num, 1)) from exc
    if header is None:
        raise error("empty file (no header)", path=file, line=1)
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(header)
    cells = {
        name: np.char.strip(np.asarray(values, dtype=str)).astype(object)
        for name, values in zip(header, columns, strict=True)
    }
    return RawTable(file, tuple(header), cells, np.asarray(lines, dtype=np.int64),
                    tuple(comments))


def _uncommented(handle: TextIO, comments: list[str]) -> Iterator[str]:
    """Lines with ``#`` lines blanked (kept in ``comments``), so line numbers stay physical."""
    for raw in handle:
        if raw.startswith("#"):
            comments.append(raw[1:].strip("\r\n").removeprefix(" "))
            yield "\n"
        else:
            yield raw


def _check_header(header: list[str], required: tuple[str, ...], file: Path, line: int,
                  error: type[_FileError]) -> None:
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise error("duplicate column", path=file, line=line, field=name)
        seen.add(name)
    for name in required:
        if name not in seen:
            raise error(f"missing column (header has {', '.join(header)})", path=file,
                        line=line, field=name)


def empty_mask(table: RawTable, field: str) -> BoolArray:
    """bool (R,): True where the cell of ``field`` is empty."""
    return np.asarray(table.cells[field] == "", dtype=bool)


def parse_numbers(
    table: RawTable,
    field: str,
    *,
    integer: bool = False,
    allow_empty: bool = False,
    error: type[_FileError] = TraceFormatError,
) -> FloatArray:
    """Parse a numeric column.

    Args:
        table: the raw table.
        field: column name.
        integer: require whole numbers (``"12.0"`` is accepted) of magnitude <= 2**53.
        allow_empty: empty cells become NaN instead of an error.
        error: the error type raised.

    Returns:
        float64 (R,) values (NaN only for allowed empty cells). Range checks (>= 0, > 0, ...) are
        the caller's, so that it can choose between an error and a reported drop.

    Raises:
        error: naming file, line and field of the first empty (unless allowed), non-numeric,
            non-finite, fractional (integer) or too large (integer) cell.
    """
    raw = table.cells[field]
    values: FloatArray = pd.to_numeric(pd.Series(raw, dtype=object), errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan, copy=True
    )
    empty = empty_mask(table, field)
    for row in np.flatnonzero(np.isnan(values) & ~empty).tolist():
        values[row] = _python_float(raw[row])  # what float() accepts but "1_000", as palgym
    checks: list[tuple[BoolArray, str]] = [
        (np.isnan(values) & ~empty, "not a number"),
        (np.isinf(values), "not a finite number"),
    ]
    if not allow_empty:
        checks.insert(0, (empty, "empty value"))
    if integer:
        finite = np.where(np.isfinite(values), values, 0.0)
        checks.append((np.abs(finite) > MAX_EXACT_INT, "integer too large (> 2**53)"))
        checks.append((finite != np.floor(finite), "not an integer"))
    for bad, reason in checks:
        _raise_first(table, field, bad, reason, error)
    return values


def _python_float(text: str) -> float:
    try:
        return float(plain_number(text))
    except ValueError:
        return float("nan")


def parse_times(
    table: RawTable, field: str, *, allow_empty: bool = False,
    error: type[_FileError] = TraceFormatError,
) -> FloatArray:
    """Parse a time column: numbers (seconds) or date-times (``YYYY-MM-DD HH:MM:SS`` etc.).

    A column whose non-empty cells are all numeric is read as seconds; otherwise every non-empty
    cell must be a date-time, converted to seconds since 1970-01-01 (naive times are taken as
    UTC; only differences matter to the loaders).

    Args:
        table: the raw table.
        field: column name.
        allow_empty: empty cells become NaN instead of an error.
        error: the error type raised.

    Returns:
        float64 (R,) seconds.

    Raises:
        error: naming file, line and field of the first unparseable (or empty) cell.
    """
    raw = pd.Series(table.cells[field], dtype=object)
    empty = empty_mask(table, field)
    numeric = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    if not np.isnan(numeric[~empty]).any():
        return parse_numbers(table, field, allow_empty=allow_empty, error=error)
    seconds = _datetime_seconds(raw.where(~empty, None))
    bad = np.isnan(seconds)
    if not allow_empty:
        _raise_first(table, field, empty, "empty value", error)
    _raise_first(table, field, bad & ~empty, "not a date-time or number", error)
    return seconds


_UNIT_SECONDS: dict[str, float] = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def _datetime_seconds(raw: pd.Series) -> FloatArray:
    """float64 (R,) seconds since 1970 of ISO 8601 cells (NaN where unparseable or None)."""
    try:
        stamps = pd.to_datetime(raw, errors="coerce", format="ISO8601", utc=True)
    except (ValueError, OverflowError):  # e.g. out-of-bounds years: cell by cell instead
        return np.array([_one_datetime(value) for value in raw.tolist()], dtype=np.float64)
    ticks: FloatArray = stamps.array.asi8.astype(np.float64) * _UNIT_SECONDS[stamps.dt.unit]
    ticks[stamps.isna().to_numpy()] = np.nan
    return ticks


def _one_datetime(value: object) -> float:
    if value is None:
        return float("nan")
    try:
        stamp = pd.Timestamp(str(value))
    except (ValueError, OverflowError):
        return float("nan")
    if stamp is pd.NaT:
        return float("nan")
    if stamp.tzinfo is None:
        stamp = stamp.tz_localize("UTC")
    return float(stamp.value) / 1e9


def _raise_first(table: RawTable, field: str, bad: BoolArray, reason: str,
                 error: type[_FileError]) -> None:
    hits = np.flatnonzero(bad)
    if hits.size:
        row = int(hits[0])
        more = f" ({hits.size - 1} more rows like it)" if hits.size > 1 else ""
        raise table.error(f"{reason}: {table.cells[field][row]!r}{more}", row, field, error)


def require(
    table: RawTable, field: str, ok: BoolArray, expected: str,
    error: type[_FileError] = TraceFormatError,
) -> None:
    """Raise on the first row where ``ok`` is False.

    Raises:
        error: ``"must be {expected}, got {cell!r}"`` naming file, line and field.
    """
    _raise_first(table, field, ~ok, f"must be {expected}, got", error)
