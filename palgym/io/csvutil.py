"""Small CSV helpers that turn every bad cell into an error naming file, line and field."""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO, TypeVar

from palgym.errors import _FileError

E = TypeVar("E", bound=_FileError)


def read_header(path: Path, error: type[E]) -> list[str]:
    """The header names of a CSV file (first non-blank, non-``#`` line), stripped.

    Raises:
        error: if the file is unreadable or empty.
    """
    with _open(path, error) as handle:
        return _header(csv.reader(_uncommented(handle)), path, error)[0]


def read_rows(
    path: Path, required: tuple[str, ...], error: type[E]
) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(line_number, row)`` for each data row (1-based physical line numbers).

    Lines starting with ``#`` and blank lines are skipped; the first other line is the header.

    Yields:
        ``(line, row)`` with ``row`` mapping header names to stripped cells.

    Raises:
        error: if the file is unreadable, empty, lacks a required column, or a row has the wrong
            number of fields.
    """
    with _open(path, error) as handle:
        reader = csv.reader(_uncommented(handle))
        names, header_line = _header(reader, path, error)
        for column in required:
            if column not in names:
                raise error(
                    f"missing column (header has {', '.join(names)})", path=path,
                    line=header_line, field=column,
                )
        try:
            for row in reader:
                if not any(cell.strip() for cell in row):
                    continue
                if len(row) != len(names):
                    raise error(
                        f"expected {len(names)} fields, got {len(row)}", path=path,
                        line=reader.line_num,
                    )
                yield reader.line_num, dict(zip(names, (c.strip() for c in row), strict=True))
        except (csv.Error, UnicodeDecodeError) as exc:
            raise error(
                f"unreadable CSV: {exc}", path=path, line=max(reader.line_num, 1)
            ) from exc


def _open(path: Path, error: type[E]) -> TextIO:
    try:
        return path.open(newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise error(f"cannot read file: {exc.strerror or exc}", path=path) from exc


def _uncommented(handle: TextIO) -> Iterator[str]:
    # A comment line becomes an empty line, so the reader's line numbers stay physical.
    return ("\n" if raw.startswith("#") else raw for raw in handle)


def _header(reader: Any, path: Path, error: type[E]) -> tuple[list[str], int]:
    try:
        header: list[str] = []
        while not any(cell.strip() for cell in header):
            header = next(reader)
    except StopIteration:
        raise error("empty file (no header)", path=path, line=1) from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise error(f"unreadable CSV: {exc}", path=path, line=max(reader.line_num, 1)) from exc
    return [name.strip() for name in header], int(reader.line_num)


T = TypeVar("T", int, float)


def plain_number(text: str) -> str:
    """``text`` when it is written as a number in a CSV file is: ASCII, without the ``_``
    digit separators Python's ``int()`` and ``float()`` accept (``"1_000"`` is refused, not read
    as 1000).

    Raises:
        ValueError: for such text.
    """
    if "_" in text or not text.isascii():
        raise ValueError(f"not a plain number: {text!r}")
    return text


def parse_number(
    text: str,
    kind: Callable[[float], T],
    *,
    path: Path,
    line: int,
    field: str,
    error: type[_FileError],
    minimum: float | None = None,
    strictly_positive: bool = False,
) -> T:
    """Parse one numeric cell; integers also accept ``"12.0"``.

    Raises:
        error: for an empty, non-numeric (``1_000`` included: :func:`plain_number`),
            non-finite, fractional (int), negative or zero cell.
    """
    if text == "":
        raise error("empty value", path=path, line=line, field=field)
    try:
        number = float(plain_number(text))
    except ValueError:
        raise error(f"not a number: {text!r}", path=path, line=line, field=field) from None
    if not math.isfinite(number):
        raise error(f"not a finite number: {text!r}", path=path, line=line, field=field)
    if kind is int and not number.is_integer():
        raise error(f"not an integer: {text!r}", path=path, line=line, field=field)
    if kind is int and abs(number) > 2**53:
        raise error(f"integer too large (> 2**53): {text!r}", path=path, line=line, field=field)
    if minimum is not None and number < minimum:
        raise error(f"must be >= {minimum:g}, got {text!r}", path=path, line=line, field=field)
    if strictly_positive and number <= 0:
        raise error(f"must be > 0, got {text!r}", path=path, line=line, field=field)
    return kind(number)
