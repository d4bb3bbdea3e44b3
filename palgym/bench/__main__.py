"""``python -m palgym.bench list|prepare|run|validate|leaderboard`` (docs/BENCH.md): the
``bench`` command of the command table (:mod:`palgym.cli`), whose body is
:mod:`agents.bench.cli` (it builds contenders with ``agents`` and writes generated files with
``traces``, so it lives above both; see docs/ARCHITECTURE.md)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from palgym.cli import run_command
from palgym.io.pipes import run_cli


def main(argv: Sequence[str] | None = None) -> int:
    """``palgym bench ARGS``: the bench command's own exit code."""
    return run_command("bench", argv)


if __name__ == "__main__":
    sys.exit(run_cli(main))
