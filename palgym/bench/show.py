"""``python -m palgym.bench show FILE [FILE...] [--csv OUT]``: a results file's per-task table,
with the leaderboard's columns.

The leaderboard compares each entry with ``pal`` and ``best`` episode by episode
(:mod:`palgym.bench.leaderboard`), so a table of ratios needs their results. The given files
are ranked among themselves and the committed results of their suite
(``benchmarks/leaderboard/<suite>/`` of the checkout, or ``references``), those of the same
suite bytes (``suite_sha256``) and of other entry names; only the given files' rows are shown
(a ``field`` file's row is the hindsight oracle). The rank is the row's place on the
leaderboard those files make (:func:`palgym.bench.leaderboard_page.ranks_of`: ties share a
rank).

Without ``pal`` and ``best`` results of the suite (a suite of one's own, a folder without
them, another suite version), or when the leaderboard refuses the set (other episodes than
``pal``'s), the table shows each entry's geomean average JCT and counts only, and says why.
Every row also gives the geomean of the average JCT over the entry's test episodes of the
task (seconds; none when an episode has no average JCT).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from palgym.bench import stats
from palgym.bench.leaderboard import results_files
from palgym.bench.leaderboard_page import ranks_of, row_line
from palgym.bench.leaderboard_tables import Row, build_leaderboard
from palgym.bench.results import ResultsFile, read_results
from palgym.errors import PalgymError

HEADER = ("| rank | entry | kind | geomean / best | IQM / best | geomean / PAL | IQM / PAL "
          "| P(< best) | unfinished jobs | invalid actions | ms / decision |")
RULE = "|---:|---|---|---|---|---|---|---:|---:|---:|---:|"
CSV_COLUMNS: tuple[str, ...] = (
    "suite", "task", "rank", "entry", "kind", "episodes", "geomean_avg_jct_s",
    "geomean_to_best", "geomean_to_best_low", "geomean_to_best_high",
    "iqm_to_best", "iqm_to_best_low", "iqm_to_best_high",
    "geomean_to_pal", "geomean_to_pal_low", "geomean_to_pal_high",
    "iqm_to_pal", "iqm_to_pal_low", "iqm_to_pal_high",
    "p_improvement_over_best", "unfinished_jobs", "episodes_unfinished", "invalid_actions",
    "ms_per_decision")
"""The columns of ``--csv`` (ratios: lower is better; empty without ``pal`` and ``best``
results; low / high: the 95% bootstrap interval, empty when there is none)."""


def committed_results() -> Path:
    """``benchmarks/leaderboard`` of the checkout palgym runs from (it may not exist)."""
    return Path(__file__).resolve().parents[2] / "benchmarks" / "leaderboard"


@dataclass(frozen=True)
class ShownRow:
    """One row of a shown table: the leaderboard's (``row``, None without references) and
    the entry's own counts."""

    rank: str
    entry: str
    kind: str
    episodes: int
    geomean_avg_jct_s: float | None
    unfinished_jobs: int
    episodes_unfinished: int
    invalid_actions: int
    decision_time_ms: float | None
    row: Row | None = None


@dataclass(frozen=True)
class ShownTask:
    """A task's shown rows, with what they were ranked among (``note``)."""

    suite: str
    task: str
    note: str
    rows: list[ShownRow] = field(default_factory=list)


def _geomean(values: Sequence[float | None]) -> float | None:
    if not values or any(v is None or not v > 0 for v in values):
        return None
    return math.exp(sum(math.log(float(v)) for v in values if v is not None) / len(values))


def _own_rows(results: ResultsFile) -> dict[tuple[str, str], ShownRow]:
    """(task, member) -> the member's counts over its test episodes (no ratio)."""
    groups: dict[tuple[str, str], list[Any]] = {}
    for _, row in results.episodes:
        if row.split == "test":
            name = results.header.entry if results.header.entry_kind != "field" else row.member
            groups.setdefault((row.task, name), []).append(row)
    shown = {}
    for (task, name), rows in groups.items():
        decisions = sum(r.decisions for r in rows)
        seconds = sum(r.decision_time_s for r in rows)
        shown[(task, name)] = ShownRow(
            "–", name, results.header.entry_kind, len(rows),
            _geomean([r.avg_jct_s for r in rows]), sum(r.unfinished_jobs for r in rows),
            sum(1 for r in rows if r.unfinished_jobs), sum(r.invalid_actions for r in rows),
            1000.0 * seconds / decisions if decisions else None)
    return shown


def _references(suite: str, digest: str, folder: Path, names: set[str]) -> list[ResultsFile]:
    """The readable results files of ``folder/suite`` with suite bytes ``digest`` and entry
    names other than ``names``."""
    found: list[ResultsFile] = []
    if not (folder / suite).is_dir():
        return found
    for path in results_files([folder / suite]):
        try:
            results = read_results(path)
        except PalgymError:
            continue
        if results.header.suite_sha256 == digest and results.header.entry not in names:
            found.append(results)
    return found


def show_tasks(paths: Sequence[str | Path], references: Path | None = None,
               num_resamples: int = stats.DEFAULT_RESAMPLES) -> list[ShownTask]:
    """The shown tables of the given results files (module docstring), by suite then task.

    Raises:
        ResultsError: for a file that is not a valid results file (naming it).
        ConfigError: for a path that does not exist.
    """
    folder = committed_results() if references is None else references
    given = [read_results(p) for p in results_files(paths)]
    suites: dict[tuple[str, str], list[ResultsFile]] = {}
    for results in given:
        suites.setdefault((results.header.suite, results.header.suite_sha256), []).append(
            results)
    shown = []
    for (suite, digest), files in sorted(suites.items()):
        names = {f.header.entry for f in files}
        own: dict[tuple[str, str], ShownRow] = {}
        for results in files:
            own.update(_own_rows(results))
        extra = _references(suite, digest, folder, names)
        try:
            boards = build_leaderboard([*files, *extra], num_resamples=num_resamples)
        except PalgymError as exc:
            note = (f"no ratios: {exc} (ratios to pal and best need their results of this "
                    f"suite: run --agent pal and --agent best and give their files too)")
            for name in sorted({t for t, _ in own}):
                shown.append(ShownTask(suite, name, note, [
                    r for (t, _), r in sorted(own.items()) if t == name]))
            continue
        among = (f"ranked among {len(boards[0].entries)} entries: the given files and "
                 f"{len(extra)} committed in {folder / suite}")
        fields = any(f.header.entry_kind == "field" for f in files)
        for task in boards[0].tasks:
            rows = [*task.rows, *task.references, *([task.oracle] if task.oracle else [])]
            ranks = ranks_of(task.rows) + ["–"] * (len(rows) - len(task.rows))
            picked = []
            for rank, row in zip(ranks, rows, strict=True):
                if row.entry in names or (row.oracle and fields):
                    counts = own.get((task.task, row.entry))
                    picked.append(ShownRow(
                        rank, row.entry, row.kind, row.num_episodes,
                        counts.geomean_avg_jct_s if counts else None, row.unfinished_jobs,
                        row.episodes_unfinished, row.invalid_actions, row.decision_time_ms,
                        row))
            if picked:
                shown.append(ShownTask(suite, task.task,
                                       f"best heuristic {task.best_member}; {among}", picked))
    return shown


def _plain_line(row: ShownRow) -> str:
    """A table line without ratios."""
    jct = "–" if row.geomean_avg_jct_s is None else f"{row.geomean_avg_jct_s:.1f} s"
    timing = "–" if row.decision_time_ms is None else f"{row.decision_time_ms:.3g}"
    return (f"| – | `{row.entry}` | {row.kind} | {row.episodes} | {jct} | "
            f"{row.unfinished_jobs} ({row.episodes_unfinished} ep.) | {row.invalid_actions} | "
            f"{timing} |")


def render_text(tasks: Sequence[ShownTask]) -> list[str]:
    """The tables as Markdown lines (ratios: lower is better)."""
    lines: list[str] = []
    for task in tasks:
        lines += ["", f"suite {task.suite}, task {task.task} ({task.note})"]
        if task.rows and task.rows[0].row is not None:
            lines += [HEADER, RULE]
            lines += [row_line(r.rank, r.row) for r in task.rows if r.row is not None]
        else:
            lines += ["| rank | entry | kind | episodes | geomean avg JCT | unfinished jobs "
                      "| invalid actions | ms / decision |",
                      "|---:|---|---|---:|---:|---:|---:|---:|"]
            lines += [_plain_line(r) for r in task.rows]
    if any(t.rows and t.rows[0].row is not None for t in tasks):
        lines += ["", "Ratios of average JCT to best / PAL, episode by episode: lower is "
                      "better; [low, high]: 95% bootstrap interval over traces."]
    return lines


def _interval(interval: stats.Interval | None) -> list[str]:
    if interval is None:
        return ["", "", ""]
    point, low, high = interval.scalar()
    if not interval.has_interval:
        return [repr(point), "", ""]
    return [repr(point), repr(low), repr(high)]


def render_csv(tasks: Sequence[ShownTask]) -> str:
    """The tables as CSV (:data:`CSV_COLUMNS`, one line per shown row)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for task in tasks:
        for r in task.rows:
            summary = r.row.summary if r.row is not None else None
            intervals: list[str] = []
            for name in ("to_best_geomean", "to_best_iqm", "to_pal_geomean", "to_pal_iqm"):
                intervals += _interval(None if summary is None else getattr(summary, name))
            improvement = "" if r.row is None else repr(r.row.improvement)
            writer.writerow([
                task.suite, task.task, r.rank, r.entry, r.kind, r.episodes,
                "" if r.geomean_avg_jct_s is None else repr(r.geomean_avg_jct_s),
                *intervals, improvement, r.unfinished_jobs, r.episodes_unfinished,
                r.invalid_actions, "" if r.decision_time_ms is None else repr(r.decision_time_ms)])
    return out.getvalue()


__all__ = ["CSV_COLUMNS", "ShownRow", "ShownTask", "committed_results", "render_csv",
           "render_text", "show_tasks"]
