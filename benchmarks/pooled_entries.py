"""Several entries pooled against a palgym-bench suite's validation-chosen best, on several
tasks at once: e.g. a learned entry's three training seeds on the test traces of
``scheduling-clairvoyant`` and ``scheduling-regimes`` together.

For each task, and for the tasks together: the pooled entries' geomean ratio of average JCT to
``best``, episode by episode (over (entry, episode), each ratio the leaderboard's,
:mod:`palgym.bench.leaderboard_tables`), with a 95% percentile bootstrap interval that resamples
whole traces (a trace's episodes of every pooled entry move together; 10,000 resamples, seed 0:
:func:`palgym.bench.stats.bootstrap_geomean`); ``best-known`` / best on the same episodes; the
gap closed, (1 - g) / (1 - k) of the two geomeans (above 1: better than best-known); the
unfinished jobs of the pooled entries. Every other ``--entry`` gets its own row.

    python benchmarks/pooled_entries.py benchmarks/leaderboard/palgym-bench-v2 \\
        --pool NAME [NAME ...] [--entry NAME ...] --tasks TASK [TASK ...]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence

import numpy as np

from palgym.bench.leaderboard import results_files
from palgym.bench.leaderboard_page import gap_text
from palgym.bench.leaderboard_tables import Row, build_leaderboard, gap_closed
from palgym.bench.results import read_results
from palgym.bench.stats import bootstrap_geomean
from palgym.errors import PalgymError

KNOWN = "best-known"


def pooled(rows: Sequence[Row], tasks: Sequence[str]) -> tuple[float, float, float, int]:
    """(geomean, 95% low, 95% high, episodes) of the rows' ratios to best, traces resampled
    (a trace is ``TASK/TRACE``)."""
    ratios = np.concatenate([r.ratios_to_best for r in rows])
    groups = [f"{task}/{trace}" for r, task in zip(rows, tasks, strict=True)
              for trace in r.traces]
    summary = bootstrap_geomean(ratios, groups=groups)
    return summary.geomean, summary.ci_low, summary.ci_high, int(ratios.size)


def table(folder: Sequence[str], pool: Sequence[str], entries: Sequence[str],
          tasks: Sequence[str]) -> list[list[str]]:
    """The table's rows (cells as printed), one per (entry or pool, task or ``all``).

    Raises:
        PalgymError: for a task or entry that the folder's suite does not hold.
    """
    boards = build_leaderboard([read_results(p) for p in results_files(list(folder))])
    if len(boards) != 1:
        raise PalgymError(f"give the results of one suite, got {[b.suite for b in boards]}")
    board = boards[0]
    boards = {t.task: t for t in board.tasks}
    missing = [t for t in tasks if t not in boards]
    if missing:
        raise PalgymError(f"no task {missing} in {list(boards)}")

    def rows_of(names: Sequence[str], task: str) -> list[Row]:
        found = {r.entry: r for r in (*boards[task].rows, *boards[task].references)}
        absent = [n for n in names if n not in found]
        if absent:
            raise PalgymError(f"task {task}: no entry {absent}")
        return [found[n] for n in names]

    out = []
    groups = ([("pooled: " + ", ".join(pool), list(pool))] if pool else []) + [
        (e, [e]) for e in entries]
    for label, names in groups:
        for scope in [*tasks, "all"]:
            chosen = list(tasks) if scope == "all" else [scope]
            rows = [r for t in chosen for r in rows_of(names, t)]
            owners = [t for t in chosen for _ in names]
            known = [r for t in chosen for r in rows_of([KNOWN], t)]
            g, low, high, n = pooled(rows, owners)
            k = pooled(known, chosen)[0]
            gap = gap_closed(g, k)
            ratio = (f"{g:.3f} (no interval)" if math.isnan(low)
                     else f"{g:.3f} [{low:.3f}, {high:.3f}]")  # one trace: nothing to resample
            out.append([label, scope, str(n), ratio, f"{k:.3f}",
                        "–" if gap is None else gap_text(gap),
                        str(sum(r.unfinished_jobs for r in rows))])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", help="results files or folders (one suite)")
    parser.add_argument("--pool", nargs="*", default=[], metavar="NAME")
    parser.add_argument("--entry", nargs="*", default=[], metavar="NAME")
    parser.add_argument("--tasks", nargs="+", required=True, metavar="TASK")
    args = parser.parse_args(argv)
    try:
        rows = table(args.results, args.pool, args.entry, args.tasks)
    except (PalgymError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print("| entry | task | episodes | ratio / best [95%] | best-known / best | gap closed "
          "| unfinished jobs |")
    print("|---|---|---:|---|---:|---:|---:|")
    for cells in rows:
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
