"""Strict JSON for the files outsiders hand to palgym: results files, ``--submission`` files,
rule-selector files and (as a loaded structure) suites.

Python's ``json`` accepts more than JSON and fails in ways a reader cannot act on: it reads
``NaN`` and ``Infinity``, turns ``1e999`` into infinity, raises ``ValueError`` on an integer of
more than 4300 digits, raises ``RecursionError`` on deep nesting and reads a file of any size.
The reader here (:func:`loads`, :func:`read_json`, :func:`json_lines`) refuses, with a
:class:`StrictJsonError` naming the file, the line and the field:

- a number that is not finite (``NaN``, ``Infinity``, ``-Infinity``), a float literal that
  overflows float64 (``1e999``) and an integer literal that float64 cannot hold (magnitude
  >= 2**1024, e.g. a 400-digit integer; :data:`MAX_INT_DIGITS`);
- nesting deeper than ``max_depth`` (default :data:`MAX_DEPTH`), checked on the text before it
  is parsed, by a scan of its brackets that does not recurse (:func:`check_depth`);
- a file larger than its ``max_bytes`` (the file is never read past the limit), and a path
  that is not a regular file (a FIFO, ``/dev/zero``, a folder);
- text that is not UTF-8 or not JSON.

The typed getters (:func:`number`, :func:`integer`, :func:`boolean`, :func:`text`, from
:mod:`palgym.io.json_fields`, with :class:`StrictJsonError`) keep numbers numbers and booleans
booleans: a field that must be a number refuses ``"1.0"`` and ``true``. :func:`check_tree`
applies the same value rules, a depth limit and a node budget (YAML aliases can make a small
file stand for a huge tree) to an already loaded structure, e.g. a YAML suite.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from palgym.io.json_fields import StrictJsonError, boolean, integer, number, text

MAX_DEPTH = 32
"""Default nesting limit of arrays and objects (palgym's own files nest at most 6 deep)."""
MAX_INT_DIGITS = 308
"""The longest integer literal read: an integer of more digits overflows float64 (10**308 is
the largest power of ten below its maximum, 1.797e308)."""
MAX_NODES = 1_000_000
"""Default budget of values :func:`check_tree` visits (a YAML alias counts each time it is
reached)."""
MIB = 1 << 20


class _Refused:
    """What the parse hooks return for a number that is refused: kept in place, so that the
    error names the field it stands in (:func:`_first_refused`)."""

    __slots__ = ("token", "why")

    def __init__(self, why: str, token: str) -> None:
        self.why, self.token = why, token


def _constant(constant: str) -> _Refused:
    return _Refused(f"{constant} is not a JSON number (a value that is not finite is null)",
                    constant)


def _float(token: str) -> float | _Refused:
    value = float(token)
    if not math.isfinite(value):
        return _Refused(f"{token} is not a finite float64 (a value that is not finite is null)",
                        token)
    return value


def _int(token: str) -> int | _Refused:
    digits = len(token.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        return _Refused(f"an integer of {digits} digits overflows float64 (at most "
                        f"{MAX_INT_DIGITS} digits)", token[:20] + "...")
    value = int(token)
    if abs(value) >= 2 ** 1024:
        return _Refused(f"the integer {token} overflows float64", token)
    return value


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def check_depth(text: str, max_depth: int, path: str | Path, line: int | None = None) -> None:
    """Refuse nesting of arrays and objects deeper than ``max_depth`` (brackets inside strings
    do not count); no recursion, so any depth is refused cleanly.

    Raises:
        StrictJsonError: naming the line where the limit is passed.
    """
    if text.count("[") + text.count("{") <= max_depth:
        return
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > max_depth:
                where = line if line is not None else text.count("\n", 0, match.start()) + 1
                raise StrictJsonError(f"nested deeper than {max_depth} arrays/objects", path,
                                      where)
        elif token in "]}":
            depth -= 1


def _first_refused(value: Any) -> tuple[str, _Refused] | None:
    """The first refused number in document order, with its field; iterative (the depth was
    checked, but no recursion is needed either)."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        field, item = stack.pop()
        if isinstance(item, _Refused):
            return field, item
        if isinstance(item, dict):
            children = [(f"{field}.{k}" if field else str(k), v) for k, v in item.items()]
        elif isinstance(item, list):
            children = [(f"{field}[{i}]", v) for i, v in enumerate(item)]
        else:
            continue
        stack.extend(reversed(children))
    return None


def loads(text: str, path: str | Path, *, line: int | None = None,
          max_depth: int = MAX_DEPTH) -> Any:
    """Parse one JSON document strictly (module docstring).

    Args:
        text: the document.
        path: the file it came from (for errors).
        line: the document's line in the file (JSON Lines); None: a whole-file document, whose
            errors name the line found in ``text``.
        max_depth: the nesting limit.

    Raises:
        StrictJsonError: naming the file, the line and the field.
    """
    check_depth(text, max_depth, path, line)
    try:
        value = json.loads(text, parse_float=_float, parse_int=_int, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise StrictJsonError(f"not JSON ({exc.msg}, column {exc.colno})", path,
                              line if line is not None else exc.lineno) from None
    except RecursionError:  # unreachable after check_depth; kept as a clean error
        raise StrictJsonError(f"nested deeper than {max_depth} arrays/objects", path,
                              line) from None
    bad = _first_refused(value)
    if bad is not None:
        field, refused = bad
        where = line
        if where is None:
            where = text.count("\n", 0, max(text.find(refused.token.rstrip(".")), 0)) + 1
        raise StrictJsonError(refused.why, path, where, field or None)
    return value


def read_bounded(path: str | Path, max_bytes: int, what: str, option: str = "") -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (never reading further; a FIFO, a
    device or a folder is refused).

    Args:
        path: the file.
        max_bytes: the limit.
        what: what the file is, for the error (``"a results file"``).
        option: how to lift the limit, for the error (``"--allow-large"``); "" when none.

    Raises:
        StrictJsonError: naming the file and the limit, for a larger file.
        OSError: if it cannot be read.
    """
    _check_regular(path, what)
    with open(path, "rb") as handle:
        _check_size(handle, max_bytes, path, what, option)
        data = _read_at_most(handle, max_bytes + 1)
    if len(data) > max_bytes:
        raise StrictJsonError(too_large(what, max_bytes, option), path)
    return data


def _check_regular(path: str | Path, what: str) -> None:
    """Refuse a path that is not a regular file (a folder, a FIFO that would block the read, a
    device) before opening it.

    Raises:
        StrictJsonError: naming the file.
        OSError: for a path that does not exist.
    """
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise StrictJsonError(f"not a regular file (a folder, a FIFO or a device), expected "
                              f"{what}", path)


def _check_size(handle: BinaryIO, max_bytes: int, path: str | Path, what: str,
                option: str) -> None:
    """Refuse a regular file larger than ``max_bytes`` before reading any of it."""
    if os.fstat(handle.fileno()).st_size > max_bytes:
        raise StrictJsonError(too_large(what, max_bytes, option), path)


def _read_at_most(handle: BinaryIO, size: int) -> bytes:
    chunks, left = [], size
    while left > 0:
        chunk = handle.read(min(left, MIB))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def too_large(what: str, max_bytes: int, option: str = "") -> str:
    """The message of a refused size: ``"larger than the limit of 1 MiB for a selector file
    (...)"``."""
    lift = f"; {option} lifts the limit" if option else ""
    return f"larger than the limit of {format_bytes(max_bytes)} for {what}{lift}"


def format_bytes(size: int) -> str:
    """``1 MiB``, ``64 KiB``, ``300 B``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} B"


def decode_utf8(data: bytes, path: str | Path) -> str:
    """``data`` as UTF-8 text (a leading BOM dropped).

    Raises:
        StrictJsonError: naming the line of the first byte that is not UTF-8.
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise StrictJsonError(f"not UTF-8 ({exc.reason} at byte {exc.start})", path,
                              line) from None


def read_json(path: str | Path, *, max_bytes: int, what: str, option: str = "",
              max_depth: int = MAX_DEPTH) -> Any:
    """Read one JSON document from a file, strictly and bounded (module docstring).

    Raises:
        StrictJsonError: naming the file, the line and the field (or the size limit).
        OSError: if the file cannot be read.
    """
    text = decode_utf8(read_bounded(path, max_bytes, what, option), path)
    return loads(text, path, max_depth=max_depth)


def json_lines(path: str | Path, *, max_bytes: int, what: str, option: str = "",
               max_depth: int = MAX_DEPTH, max_line_bytes: int | None = None
               ) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each line of a JSON Lines file (a blank line is no JSON),
    read strictly and bounded (module docstring); the file is read and parsed line by line, and
    no line may pass ``max_line_bytes`` (default: ``max_bytes``).

    Raises:
        StrictJsonError: naming the file, the line and the field (or the size limit).
        OSError: if the file cannot be read.
    """
    read, line = 0, 0
    longest = max_bytes if max_line_bytes is None else min(max_line_bytes, max_bytes)
    _check_regular(path, what)
    with open(path, "rb") as handle:
        _check_size(handle, max_bytes, path, what, option)
        while raw := handle.readline(min(max_bytes - read, longest) + 1):
            read, line = read + len(raw), line + 1
            if read > max_bytes:
                raise StrictJsonError(too_large(what, max_bytes, option), path)
            if len(raw) > longest:
                raise StrictJsonError(f"a line longer than the limit of "
                                      f"{format_bytes(longest)} for {what}"
                                      + (f"; {option} lifts the limit" if option else ""),
                                      path, line)
            yield line, loads(decode_utf8(raw, path), path, line=line, max_depth=max_depth)


def check_tree(value: Any, path: str | Path, *, max_depth: int = MAX_DEPTH,
               max_nodes: int = MAX_NODES) -> None:
    """Apply the strict reader's rules to a loaded structure (e.g. a YAML document): every float
    finite, nesting at most ``max_depth``, at most ``max_nodes`` values visited (an alias counts
    each time it is reached), every key a string; iterative.

    Raises:
        StrictJsonError: naming the file and the field.
    """
    stack: list[tuple[str, Any, int]] = [("", value, 0)]
    visited = 0
    while stack:
        field, item, depth = stack.pop()
        visited += 1
        if visited > max_nodes:
            raise StrictJsonError(f"more than {max_nodes} values (aliases count each time they "
                                  "are used)", path)
        if isinstance(item, float) and not math.isfinite(item):
            raise StrictJsonError(f"{item} is not a finite number", path, None, field or None)
        if isinstance(item, int) and not isinstance(item, bool) and abs(item) >= 2 ** 1024:
            raise StrictJsonError("the integer overflows float64", path, None, field or None)
        if isinstance(item, dict | list):
            if depth + 1 > max_depth:
                raise StrictJsonError(f"nested deeper than {max_depth} mappings/lists", path,
                                      None, field or None)
            if isinstance(item, dict):
                for key in item:
                    if not isinstance(key, str):
                        raise StrictJsonError(f"key {key!r} is not a string", path, None,
                                              field or None)
                children = [(f"{field}.{k}" if field else k, v) for k, v in item.items()]
            else:
                children = [(f"{field}[{i}]", v) for i, v in enumerate(item)]
            stack.extend((name, child, depth + 1) for name, child in reversed(children))


__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "MAX_NODES", "MIB", "StrictJsonError", "boolean",
           "check_depth", "check_tree", "decode_utf8", "format_bytes", "integer",
           "json_lines", "loads", "number", "read_bounded", "read_json", "text", "too_large"]
