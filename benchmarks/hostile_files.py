"""Peak memory and seconds of rejecting each hostile file of docs/BENCH.md "Limits".

Builds each file in a temporary folder, runs the command line that reads it in a child
process, and prints the child's exit status, its peak resident memory (``ru_maxrss`` from
``os.wait4``) and its wall seconds, beside the bound the limits promise (300 MiB, 10 s). The
figures include the interpreter and palgym's imports (about 100-200 MiB before any file is
read). Run from the repository root::

    python benchmarks/hostile_files.py            # every bomb
    python benchmarks/hostile_files.py --only results-actions
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMMITTED = REPO / "benchmarks" / "leaderboard" / "palgym-bench-v1-lite" / "pal.jsonl"
MIB = 1 << 20


def _zlib_zeros(size: int) -> bytes:
    compressor = zlib.compressobj(9)
    chunk = bytes(MIB)
    return b"".join(compressor.compress(chunk) for _ in range(size // MIB)) + compressor.flush()


def _lines() -> list[dict[str, object]]:
    return [json.loads(line) for line in COMMITTED.read_text(encoding="utf-8").splitlines()]


def results_actions(folder: Path) -> list[str]:
    """A results file of about 1.1 MB whose one row's ``actions`` inflate to 800 MiB."""
    lines = _lines()
    actions = base64.b64encode(_zlib_zeros(800 * MIB)).decode("ascii")
    path = folder / "actions-bomb.jsonl"
    path.write_text(json.dumps(lines[0]) + "\n" + json.dumps({**lines[1], "actions": actions})
                    + "\n", encoding="utf-8")
    return [sys.executable, "-m", "palgym.bench", "validate", str(path)]


def results_repeated(folder: Path) -> list[str]:
    """A 200 MB results file: the header, then one row repeated."""
    lines = _lines()
    row = (json.dumps(lines[1]) + "\n").encode()
    path = folder / "repeated.jsonl"
    with path.open("wb") as handle:
        handle.write((json.dumps(lines[0]) + "\n").encode())
        block = row * max(1, MIB // len(row))
        while handle.tell() < 200 * 10**6:
            handle.write(block)
    return [sys.executable, "-m", "palgym.bench", "validate", str(path)]


def results_distinct(folder: Path) -> list[str]:
    """A results file just under the 16 MiB limit: the header, then distinct rows (another
    trace name each), every one read and checked."""
    lines = _lines()
    path = folder / "distinct.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        handle.write(json.dumps(lines[0]) + "\n")
        index = 0
        while handle.tell() < 16 * MIB - 4096:
            handle.write(json.dumps({**lines[1], "trace": f"t{index}"}) + "\n")
            index += 1
    return [sys.executable, "-m", "palgym.bench", "validate", str(path)]


def model_data(folder: Path) -> list[str]:
    """A model zip of about 1 MB whose ``data`` entry holds 1 GiB."""
    path = folder / "model-bomb.zip"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("data", "w", force_zip64=True) as entry:
            chunk = b" " * MIB
            for _ in range(1024):
                entry.write(chunk)
        archive.writestr("policy.pth", b"")
    path.write_bytes(buffer.getvalue())
    return [sys.executable, "evaluate.py", "--agent", str(path), "--trace", "sia-philly-gen-0",
            "--window", "10"]


def model_empty(folder: Path) -> list[str]:
    """The baseline of ``model-data``: an empty zip, refused after the same imports (torch and
    stable-baselines3 are most of the peak)."""
    path = folder / "empty.zip"
    zipfile.ZipFile(path, "w").close()
    return [sys.executable, "evaluate.py", "--agent", str(path), "--trace", "sia-philly-gen-0",
            "--window", "10"]


def deep_submission(folder: Path) -> list[str]:
    """A ``--submission`` file nested 250,000 arrays deep (0.5 MB, under the size limit)."""
    path = folder / "deep.json"
    path.write_text('{"parameters": ' + "[" * 250_000 + "]" * 250_000 + "}", encoding="utf-8")
    return [sys.executable, "-m", "palgym.bench", "run", "--suite", "palgym-bench-v1-lite",
            "--agent", "pal", "--output", str(folder / "never.jsonl"), "--submission", str(path)]


BOMBS: dict[str, Callable[[Path], list[str]]] = {
    "results-actions": results_actions, "results-repeated": results_repeated,
    "results-distinct": results_distinct,
    "model-data": model_data, "model-empty": model_empty, "deep-submission": deep_submission}


def measure(command: list[str]) -> tuple[int, float, float, str]:
    """``(exit status, peak RSS in MiB, wall seconds, last line of stderr or stdout)``."""
    started = time.perf_counter()
    child = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    out, err = child.stdout.read(), child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    text = (err or out).decode(errors="replace").strip().splitlines()
    return child.returncode, usage.ru_maxrss / 1024, seconds, (text or [""])[-1][:160]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=list(BOMBS), nargs="+", default=list(BOMBS))
    args = parser.parse_args(argv)
    print(f"{'file':18} {'size':>10} {'exit':>4} {'peak MiB':>9} {'seconds':>8}  message")
    worst = 0.0, 0.0
    with tempfile.TemporaryDirectory() as name:
        for bomb in args.only:
            command = BOMBS[bomb](Path(name))
            size = max([Path(a).stat().st_size for a in command if Path(a).is_file()
                        and a != sys.executable and not a.endswith(".py")] or [0])
            status, peak, seconds, message = measure(command)
            worst = max(worst[0], peak), max(worst[1], seconds)
            print(f"{bomb:18} {size / 1e6:8.2f}MB {status:>4} {peak:9.1f} {seconds:8.2f}  "
                  f"{message}")
    print(f"worst: {worst[0]:.1f} MiB, {worst[1]:.2f} s (bounds: 300 MiB, 10 s)")
    return 0 if worst[0] < 300 and worst[1] < 10 else 1


if __name__ == "__main__":
    sys.exit(main())
