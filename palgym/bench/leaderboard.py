"""The leaderboard: results files -> per-task tables -> ``docs/LEADERBOARD.md`` (+ profiles).

Per suite and task, every entry is compared with PAL (entry ``pal``) and with the heuristic
chosen on the validation split (entry ``best``) episode by episode: the ratio of its average
JCT to theirs on the same (task, trace, seed), test split; lower is better. The ratios are
summarised by their geometric mean and interquartile mean, each with a 95% bootstrap
percentile interval (:mod:`palgym.bench.stats`).

**Intervals: whole traces are resampled.** Within a task, each trace is a different problem
and each seed a run on it. A bootstrap resample draws the task's traces with replacement, each
with all its seeds (the cluster bootstrap: rliable's ``task_bootstrap`` with the task's traces
as its tasks; Davison & Hinkley 1997, section 3.8), so the interval speaks of other traces
like the suite's, not only of other seeds on the same ones: a trace-level interval, the one
``evaluate.py --bootstrap-unit trace`` gives. Most suite tasks are deterministic per trace (one
seed), where resampling seeds within a trace would give no interval at all. With a handful of
traces the intervals are wide, as they should be; with one trace there is none. Every ratio
vector of a task is resampled with the same draws, so the rows' intervals come from the same
resamples.

The probability of improvement over the best is rliable's, per trace over every pair (seed of
the entry, seed of the best), with a lower average JCT better, averaged over the traces.

Every entry must hold exactly the episodes of ``pal`` (and the same trace files): an entry
with other seeds, missing or extra episodes is refused, naming it and the episodes. The
hindsight oracle row (from the ``field`` entry: per episode, the lowest average JCT over the
field's members on the test split) bounds the per-episode choice among the field's members
only (a planner can beat it); it is not a contender and is never ranked. A ``planner`` entry
is a reference, never ranked either (shown after the ranked rows, with its ratios and
intervals): its rollouts run on a copy of the simulator, which holds the true job durations,
the random streams and the true slowdowns, also on a task that hides them. Unfinished
jobs and invalid (fallback) actions are counted and shown with a warning mark; an episode in
which no job completed (average JCT null) makes its ratio +inf: the row keeps its probability
of improvement and profile but has no geomean or IQM and is not ranked.

Files are read by :func:`palgym.bench.results.read_results` (the schema);
:func:`palgym.bench.leaderboard_entries.entry_of` adds the leaderboard's own checks (metrics,
the ``submission`` object, the ``best`` choices), each naming the file, the line and the field.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from palgym.bench import stats
from palgym.bench.leaderboard_page import profile_file, profile_svg, render_page
from palgym.bench.leaderboard_tables import build_leaderboard
from palgym.bench.results import read_results
from palgym.errors import ConfigError, PalgymError
from palgym.io.atomic import atomic_write_bytes, atomic_write_text, check_destination


def results_files(paths: Sequence[str | Path]) -> list[Path]:
    """The given files, and every ``*.jsonl`` file below each given folder (sorted).

    Raises:
        ConfigError: for a path that does not exist.
    """
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.jsonl") if p.is_file())
        elif path.exists():
            files.append(path)
        else:
            raise ConfigError(f"results {path}: no such file or folder")
    return files


def write_leaderboard(results_paths: Sequence[str | Path], output: str | Path,
                      plots_dir: str | Path | None = None, *,
                      num_resamples: int = stats.DEFAULT_RESAMPLES) -> list[Path]:
    """Read the results files, render the page (and a profile SVG per suite), write them.

    Equal inputs (in any order) give byte-identical files. Files are written atomically.

    Args:
        results_paths: results files (JSON Lines) and folders of them (every ``*.jsonl``
            below a folder), any number, any order.
        output: the page, e.g. ``docs/LEADERBOARD.md``.
        plots_dir: the folder of the ``<suite>-profile.svg`` plots (e.g. ``docs/leaderboard``);
            None writes no plot.
        num_resamples: bootstrap resamples of each interval.

    Returns:
        The files written: the page, then the plots.

    Raises:
        ConfigError: a bad results file or set of entries (see :func:`build_leaderboard`), or
            an unwritable destination.
        OSError: if writing fails.
    """
    output = check_destination(output, "--output")
    plots_dir = None if plots_dir is None else check_destination(plots_dir, "--plots",
                                                                 folder=True)
    boards = build_leaderboard([read_results(path) for path in results_files(results_paths)],
                               num_resamples=num_resamples)
    plots: list[tuple[Path, bytes]] = []
    if plots_dir is not None:
        plots = [(plots_dir / profile_file(board.suite),
                  profile_svg(board)) for board in boards]
    page = render_page(boards, output, plots_dir, num_resamples)
    written = [atomic_write_text(output, page)]
    written += [atomic_write_bytes(path, data) for path, data in plots]
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m palgym.bench.leaderboard RESULTS... --output docs/LEADERBOARD.md
    [--plots docs/leaderboard]`` (RESULTS: files or folders).

    Returns:
        0 on success, 2 (one line on stderr, no traceback) for bad input.
    """
    parser = argparse.ArgumentParser(
        prog="python -m palgym.bench.leaderboard",
        description="Render the leaderboard page from results files.")
    parser.add_argument("results", nargs="*", type=Path,
                        help="results files (.jsonl) or folders of them")
    parser.add_argument("--output", type=Path, required=True, help="the page to write")
    parser.add_argument("--plots", type=Path, default=None,
                        help="folder of the performance-profile SVGs (default: no plots)")
    args = parser.parse_args(argv)
    try:
        written = write_leaderboard(args.results, args.output, args.plots)
    except (PalgymError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
