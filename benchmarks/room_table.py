"""The room per task of a palgym-bench suite (docs/RESULTS.md, "Where the room is"): a
Markdown table, one row per task that has a best-known row, from the committed results files.

Per task: the validation-chosen best (guards included in v2's fields); best-known / best and
lower bound / best, each the geomean of the per-episode ratios with its 95% trace-level
bootstrap interval (the leaderboard's: :mod:`palgym.bench.leaderboard`); the best learned
entry (lowest geomean ratio among the ``learned`` entries), its ratio and its *gap closed*,
(best - entry) / (best - best-known); and the unfinished jobs of that entry.

    python benchmarks/room_table.py benchmarks/leaderboard/palgym-bench-v2
"""

from __future__ import annotations

import argparse
import sys

from palgym.bench.leaderboard import results_files
from palgym.bench.leaderboard_page import interval_text
from palgym.bench.leaderboard_tables import Row, build_leaderboard
from palgym.bench.results import read_results


def _row(rows: list[Row], kind_prefix: str) -> Row | None:
    return next((r for r in rows if r.kind.startswith(kind_prefix)), None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", help="results files or folders (one suite)")
    args = parser.parse_args(argv)
    boards = build_leaderboard([read_results(p) for p in results_files(args.results)])
    print("| suite | task | validation-chosen best | best-known / best | lower bound / best "
          "| best learned entry | its ratio / best | gap closed | unfinished jobs |")
    print("|---|---|---|---|---|---|---|---:|---:|")
    for board in boards:
        for task in board.tasks:
            every = [*task.rows, *task.references]
            known, bound = _row(every, "best-known"), _row(every, "lower bound")
            if known is None or known.summary is None:
                continue
            learned = [r for r in task.rows if r.kind == "learned" and r.summary is not None]
            best = min(learned, default=None,
                       key=lambda r: r.summary.to_best_geomean.point[0] if r.summary else 0.0)
            bound_text = ("–" if bound is None or bound.summary is None
                          else interval_text(bound.summary.to_best_geomean))
            cells = [board.suite, f"`{task.task}`", f"`{task.best_member}`",
                     interval_text(known.summary.to_best_geomean), bound_text]
            if best is None or best.summary is None:
                cells += ["–", "–", "–", "–"]
            else:
                gap = "–" if best.gap_closed is None else f"{best.gap_closed:.2f}"
                cells += [f"`{best.entry}`", interval_text(best.summary.to_best_geomean), gap,
                          str(best.unfinished_jobs)]
            print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
