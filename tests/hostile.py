"""What the hostile-file tests (tests/test_hostile_files_*.py) share: a committed results file to
spoil (:data:`PAL_LITE`), its lines read and written, a zlib bomb, a module that marks its
import, and the check that an error is one ``error:`` line. Each case there ends in a clear
error (exit 2 and one ``error:`` line, no traceback; ``validate``: a REJECTED line naming the
file, line and field, exit 1, as docs/BENCH.md documents), or in the documented behaviour. The
bombs are small versions of those of ``benchmarks/hostile_files.py`` (which prints their peak
memory and seconds).
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
PAL_LITE = REPO / "benchmarks" / "leaderboard" / "palgym-bench-v1-lite" / "pal.jsonl"


def lines_of(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON Lines file, one per line."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write_lines(path: Path, lines: list[dict[str, Any]]) -> Path:
    """Write ``lines`` to ``path`` as JSON Lines; returns ``path``."""
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def zlib_zeros(size: int) -> bytes:
    """zlib of ``size`` zero bytes, compressed in 1 MiB pieces (never held whole)."""
    compressor = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    parts = [compressor.compress(chunk) for _ in range(size >> 20)]
    return b"".join(parts) + compressor.flush()


def one_error(err: str, *parts: str) -> None:
    """``err`` is one ``error: ...`` line holding every part (no traceback)."""
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    for part in parts:
        assert part in lines[0], err


def trap_module(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A module ``trapmod`` on the path that leaves ``imported`` in ``folder`` when imported."""
    marker = folder / "imported"
    (folder / "trapmod.py").write_text(f"open({str(marker)!r}, 'w').close()\n"
                                       "class X:\n    pass\n")
    monkeypatch.syspath_prepend(str(folder))
    return marker
