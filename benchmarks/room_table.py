"""The room per task of a palgym-bench suite (docs/RESULTS.md, "Where the room is"): a
Markdown table, one row per task that has a best-known or a lower-bound row (every task of
v2 and v2-lite: the scheduling tasks, the placement tasks and ``dynamic-online``), from the
committed results files.

Per task: the validation-chosen best (guards included in v2's fields); best-known / best and
lower bound / best, each the geomean of the per-episode ratios with its 95% trace-level
bootstrap interval (the leaderboard's: :mod:`palgym.bench.leaderboard`); the best learned
entries, each with its ratio and its *gap closed*, (best - entry) / (best - best-known), and
its unfinished jobs (every learned entry is listed: choosing one by its test figures would tune
on the test split).

    python benchmarks/room_table.py benchmarks/leaderboard/palgym-bench-v2

A missing path or a bad results file exits 2, naming it.
"""

from __future__ import annotations

import argparse
import sys

from palgym.bench.leaderboard import results_files
from palgym.bench.leaderboard_page import gap_text, interval_text
from palgym.bench.leaderboard_tables import Row, build_leaderboard
from palgym.bench.results import read_results
from palgym.errors import ConfigError


def _row(rows: list[Row], kind_prefix: str) -> Row | None:
    return next((r for r in rows if r.kind.startswith(kind_prefix)), None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", help="results files or folders (one suite)")
    args = parser.parse_args(argv)
    try:
        boards = build_leaderboard([read_results(p) for p in results_files(args.results)])
    except ConfigError as error:  # a missing path or a bad results file: named, no traceback
        print(f"error: {error}", file=sys.stderr)
        return 2
    print("| suite | task | validation-chosen best | best-known / best | lower bound / best "
          "| learned entry | its ratio / best | gap closed | unfinished jobs |")
    print("|---|---|---|---|---|---|---|---:|---:|")
    for board in boards:
        for task in board.tasks:
            every = [*task.rows, *task.references]
            known, bound = _row(every, "best-known"), _row(every, "lower bound")
            if not any(r is not None and r.summary is not None for r in (known, bound)):
                continue
            learned = [r for r in task.rows if r.kind == "learned"] or [None]
            known_text, bound_text = (
                "–" if r is None or r.summary is None else interval_text(r.summary.to_best_geomean)
                for r in (known, bound))
            for entry in learned:
                cells = [board.suite, f"`{task.task}`", f"`{task.best_member}`", known_text,
                         bound_text]
                if entry is None or entry.summary is None:
                    cells += ["–" if entry is None else f"`{entry.entry}`", "–", "–",
                              "–" if entry is None else str(entry.unfinished_jobs)]
                else:
                    gap = gap_text(entry.gap_closed)
                    cells += [f"`{entry.entry}`", interval_text(entry.summary.to_best_geomean),
                              gap, str(entry.unfinished_jobs)]
                print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
