"""The leaderboard page (Markdown) and its performance-profile plots (SVG), rendered from
:class:`palgym.bench.leaderboard_tables.SuiteBoard`.

Everything rendered is a function of the boards alone (no date, no path given on the command
line, no library version), so equal results give byte-identical files. matplotlib (the ``viz``
extra) is imported lazily; the SVG is made deterministic with a fixed ``svg.hashsalt`` and no
``Date`` or ``Creator`` metadata, and its title carries the sha256 of the plotted data (what a
check can compare whatever matplotlib draws).
"""

from __future__ import annotations

import hashlib
import io
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from palgym.bench import profiles, stats
from palgym.bench.leaderboard_entries import Entry
from palgym.bench.leaderboard_tables import Row, SuiteBoard, TaskBoard
from palgym.plots import require_matplotlib

if TYPE_CHECKING:
    from matplotlib.axes import Axes

REGENERATE = ("python -m palgym.bench leaderboard benchmarks/leaderboard "
              "--output docs/LEADERBOARD.md --plots docs/leaderboard")
"""The command that regenerates the committed page (printed in its header)."""

WARNING = "\u26a0"
"""The mark of a failure: unfinished jobs or invalid (fallback) actions."""

SVG_HASH_SALT = "palgym-bench"
"""matplotlib's ``svg.hashsalt`` (fixed ids: byte-identical SVGs)."""

PROFILE_POINTS = 201
"""Thresholds tau of a profile plot."""

HOW_TO_READ = """\
How to read a table (the method: `palgym/bench/leaderboard.py`, `palgym/bench/stats.py`):

- **ratio**: an entry's average JCT divided by that of the reference on the same episode
  (task, trace, seed; test split). Lower is better; below 1 the entry is faster. **/ best**:
  the task's heuristic chosen on the validation split; **/ PAL**: PAL.
- **geomean** and **IQM** (interquartile mean: the mean of the middle 50% of the ratios, the
  scores at the 25th and 75th percentiles weighted by the fraction inside) of the ratios,
  with a 95% bootstrap percentile interval in brackets (Agarwal et al., NeurIPS 2021):
  the task's traces are resampled with replacement, each with all its seeds ({resamples}
  resamples, seed 0), so the interval speaks of other traces like these. No interval is
  shown for a task of one trace. A zero-width interval (`1.000 [1.000, 1.000]`) means that
  every resample gives the same value: the entry's episodes match the best's (or PAL's) on
  every trace, not that the estimate is exact.
- **rank**: by geomean / best, then by name; entries whose geomean / best is equal as shown
  (3 decimals) share a rank (1, 1, 3).
- **P(< best)**: probability of improvement over the best (rliable's): per trace, the chance
  that a seed of the entry has a lower average JCT than a seed of the best (ties count one
  half), averaged over the traces.
- {warning} marks unfinished jobs (counted with the episodes they occur in) and invalid
  actions (the env took a fallback action); a result never hides them.
- **ms / decision**: wall-clock decision time per decision; it depends on the hardware and is
  the one figure that is not reproducible.
- An entry with an episode in which no job completed (no average JCT; its ratio counts as
  +inf in P(< best) and the profile) has no geomean or IQM and is not ranked.
- A **planner** row (kind `planner`, `agents/planning/planner.py`) is a reference, not a contender,
  and is never ranked: it is shown after the ranked rows, with its ratios, intervals and
  P(< best). At each decision the planner tries actions on a copy of the simulator, which
  holds the true job durations, the episode's random streams and the true slowdowns. On a
  task that hides durations (`duration_knowledge: unknown`) or slowdowns (`belief` other
  than `oracle`), it therefore sees what the task hides from every contender.
- The **best-known** and **lower bound** rows (palgym-bench-v2 on;
  `palgym/bench/reference_entry.py`, docs/HEADROOM.md) are references, never ranked: the
  best schedule found per episode by the field's members and a hindsight search that sees
  the whole trace (on a task that fixes the queue order, placement only: the same FIFO order
  with PAL and PM-First deciding on the true speeds), and a bound no schedule beats. Between
  them lies the optimum: the room.
  **gap closed** (shown where a task has a best-known row that beats the best) = (best −
  entry) / (best − best-known) on the geomean ratios to the best: 1 takes all the room found
  so far, 0 none, below 0 is worse than the best, above 1 beats the best-known schedule
  (best-known is then a weak reference on that task).
- The **oracle** row takes, for each episode, the field member with the lowest average JCT in
  hindsight (test split). It bounds the per-episode choice among the field's members only
  (a planner, or any other entry, can beat it); it is not a contender and is never ranked.
"""


def profile_file(suite: str) -> str:
    """File name of a suite's profile plot."""
    return f"{suite}-profile.svg"


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell (pipes escaped, one line)."""
    return " ".join(text.replace("|", "\\|").split())


def interval_text(interval: stats.Interval) -> str:
    """``0.950 [0.930, 0.970]``, or ``0.950 (no interval)``."""
    point, low, high = interval.scalar()
    if not interval.has_interval:
        return f"{point:.3f} (no interval)"
    return f"{point:.3f} [{low:.3f}, {high:.3f}]"


def failures_text(count: int, suffix: str = "") -> str:
    """A count, marked when it is not zero."""
    return f"{WARNING} {count}{suffix}" if count else "0"



def gap_text(value: float | None) -> str:
    """A gap-closed cell: two decimals, "–" for none; a value that rounds to zero is "0.00",
    never "-0.00"."""
    if value is None:
        return "–"
    text = f"{value:.2f}"
    return "0.00" if text == "-0.00" else text

def row_line(rank: str, row: Row, room: bool = False) -> str:
    """One Markdown table line (``room``: with the gap-closed cell after the ratios)."""
    name = f"*{cell(row.entry)}*" if row.oracle else f"`{cell(row.entry)}`"
    unfinished = failures_text(row.unfinished_jobs, f" ({row.episodes_unfinished} ep.)"
                               if row.unfinished_jobs else "")
    timing = "–" if row.decision_time_ms is None else f"{row.decision_time_ms:.3g}"
    summary = row.summary
    ratios = [f"{WARNING} none: {row.episodes_without_jct} episodes without an average JCT"] + \
        ["–"] * 3 if summary is None else [
        interval_text(summary.to_best_geomean), interval_text(summary.to_best_iqm),
        interval_text(summary.to_pal_geomean), interval_text(summary.to_pal_iqm)]
    gap = [gap_text(row.gap_closed)] if room else []
    cells = [rank, name, cell(row.kind), *ratios, *gap, f"{row.improvement:.2f}", unfinished,
             failures_text(row.invalid_actions), timing]
    return "| " + " | ".join(cells) + " |"


def ranks_of(rows: Sequence[Row]) -> list[str]:
    """Each ranked row's rank, 1-based in the table's order; rows whose geomean ratio to the
    best (the ranking key) is equal at the shown precision (3 decimals) share the rank of the
    first of them (standard competition ranking: 1, 2, 2, 4); ``–`` for a row without a
    summary."""
    ranks: list[str] = []
    previous: str | None = None
    for index, row in enumerate(rows, start=1):
        if row.summary is None:
            ranks.append("–")
            continue
        key = f"{row.summary.to_best_geomean.scalar()[0]:.3f}"
        ranks.append(ranks[-1] if key == previous else str(index))
        previous = key
    return ranks


def shown_rows(task: TaskBoard) -> tuple[Row, ...]:
    """Every row of a task in the table's order: the ranked rows (then those without a
    summary), the references (planners), the oracle."""
    return (*task.rows, *task.references, *([task.oracle] if task.oracle else []))


def warnings_of(task: TaskBoard) -> list[str]:
    """One bullet per row with unfinished jobs or invalid actions."""
    lines = []
    for row in shown_rows(task):
        parts = []
        if row.unfinished_jobs:
            parts.append(f"{row.unfinished_jobs} unfinished jobs in {row.episodes_unfinished} "
                         f"of {row.num_episodes} episodes")
        if row.episodes_without_jct:
            parts.append(f"no job completed in {row.episodes_without_jct} episodes (ratio "
                         f"+inf there; no geomean or IQM, not ranked)")
        if row.invalid_actions:
            parts.append(f"{row.invalid_actions} invalid actions (fallback actions taken)")
        if parts:
            lines.append(f"- {WARNING} `{cell(row.entry)}`: " + "; ".join(parts) + ".")
    return lines


def task_section(task: TaskBoard) -> list[str]:
    """The Markdown of one task: its line of facts, table and warnings."""
    seeds = ", ".join(str(s) for s in task.seeds)
    room = any(row.gap_closed is not None for row in shown_rows(task))
    lines = [f"### Task `{task.task}`", "",
             f"Best heuristic (chosen on the validation split): `{task.best_member}`. Test "
             f"split: {task.rows[0].num_episodes} episodes per entry, {len(task.traces)} "
             f"trace{'s' if len(task.traces) != 1 else ''} x seeds {seeds}"
             f"{' (one trace: no interval)' if len(task.traces) == 1 else ''}.", "",
             "| rank | entry | kind | geomean / best | IQM / best | geomean / PAL | IQM / PAL "
             f"|{' gap closed |' if room else ''} P(< best) | unfinished jobs | invalid actions "
             "| ms / decision |",
             f"|---:|---|---|---|---|---|---|{'---:|' if room else ''}---:|---:|---:|---:|"]
    lines += [row_line(rank, row, room) for rank, row in zip(ranks_of(task.rows), task.rows,
                                                             strict=True)]
    lines += [row_line("–", row, room) for row in (*task.references,
                                                   *([task.oracle] if task.oracle else []))]
    warnings = warnings_of(task)
    return lines + ([""] + warnings if warnings else []) + [""]


def entry_line(entry: Entry) -> str:
    """One line of a suite's entries table (what its ``submission`` object states, or
    "not stated")."""
    env = training = deterministic = "not stated"
    stated = entry.submission
    if stated is not None:
        env = f"modified: {stated['env_modifications']}" if stated["env_modified"] else "stock"
        training = "none" if not stated["training_env_steps"] else (
            f"{stated['training_env_steps']:,} env steps, "
            f"{stated['training_wall_time_s'] / 3600.0:.1f} h")
        deterministic = "yes" if stated["deterministic"] else "no"
    cells = [f"`{cell(entry.name)}`", cell(entry.kind), f"`{cell(entry.spec)}`",
             cell(entry.palgym_version), f"`{cell(entry.commit)}`", cell(env), training,
             deterministic, cell(entry.description)]
    return "| " + " | ".join(cells) + " |"


def suite_section(board: SuiteBoard, plot_link: str | None) -> list[str]:
    """The Markdown of one suite: its hash, entries, profile plot and task sections."""
    lines = [f"## Suite `{board.suite}`", "", f"Suite file sha256: `{board.suite_sha256}`.", "",
             "| entry | kind | spec | palgym | commit | env | training | deterministic "
             "| description |", "|---|---|---|---|---|---|---|---|---|"]
    lines += [entry_line(entry) for entry in board.entries]
    lines.append("")
    if plot_link is not None:
        lines += [f"![Performance profiles of {board.suite}: the fraction of episodes whose "
                  f"ratio to the best is at most tau]({plot_link})", ""]
    for task in board.tasks:
        lines += task_section(task)
    return lines


def render_page(boards: list[SuiteBoard], output: Path, plots_dir: Path | None,
                num_resamples: int = stats.DEFAULT_RESAMPLES) -> str:
    """The page's Markdown (ends with one newline).

    Args:
        boards: the suites, in order.
        output: where the page goes (the plots are linked relative to its folder).
        plots_dir: the folder of the profile plots, or None (no plot linked).
        num_resamples: the bootstrap resamples of the intervals (stated on the page).
    """
    lines = ["<!-- Generated by palgym.bench.leaderboard: do not edit. -->", "", "# Leaderboard",
             "", "**Generated: do not edit.** Regenerate it from the committed results files "
             "(a test fails when this page differs from what the command writes):", "",
             "```bash", REGENERATE, "```", "",
             "To add an entry, see [Submitting a leaderboard entry](SUBMITTING.md).", "",
             HOW_TO_READ.format(resamples=f"{num_resamples:,}", warning=WARNING)]
    if not boards:
        lines += ["No results files yet.", ""]
    for board in boards:
        link = None
        if plots_dir is not None:
            link = Path(os.path.relpath(plots_dir / profile_file(board.suite),
                                        output.parent)).as_posix()
        lines += suite_section(board, link)
    return "\n".join(lines).rstrip("\n") + "\n"


def profile_fingerprint(board: SuiteBoard) -> str:
    """sha256 of what a suite's profile plot shows: per task, each curve's name and ratios."""
    digest = hashlib.sha256(board.suite.encode("utf-8"))
    for task in board.tasks:
        for row in shown_rows(task):
            digest.update(f"\n{task.task}\n{row.entry}\n".encode())
            digest.update(np.ascontiguousarray(row.ratios_to_best, dtype="<f8").tobytes())
    return digest.hexdigest()


def draw_task(axes: Axes, task: TaskBoard) -> None:
    """One panel: every row's profile (fraction of episodes with ratio to best <= tau) with
    its bootstrap band (whole traces resampled); the references (planners) dotted, the oracle
    dashed."""
    curves = list(shown_rows(task))
    ratios = np.concatenate([row.ratios_to_best for row in curves])
    ratios = ratios[np.isfinite(ratios)]
    low, high = min(float(ratios.min(initial=1.0)), 1.0), max(float(ratios.max(initial=1.0)), 1.0)
    pad = 0.05 * (high - low) if high > low else 0.05
    taus = np.linspace(low - pad, high + pad, PROFILE_POINTS)
    bands = profiles.profile_bands(np.vstack([row.ratios_to_best for row in curves]),
                                   task.rows[0].traces, taus)
    for index, (row, band) in enumerate(zip(curves, bands, strict=True)):
        color = "black" if row.oracle else f"C{index % 10}"
        style = "--" if row.oracle else ":" if row.reference else "-"
        label = f"{row.entry} (reference)" if row.reference else row.entry
        axes.plot(taus, band.point, drawstyle="steps-post", color=color, linestyle=style,
                  label=label)
        if band.has_interval:
            axes.fill_between(taus, band.low, band.high, step="post", color=color, alpha=0.15,
                              linewidth=0)
    axes.axvline(1.0, color="grey", linewidth=0.8)
    axes.set_title(task.task, fontsize=10)
    axes.set_xlabel("ratio of average JCT to the best (lower is better)", fontsize=8)
    axes.set_ylabel("fraction of episodes with ratio \u2264 \u03c4", fontsize=8)
    axes.set_ylim(-0.02, 1.02)
    axes.legend(fontsize=7, loc="best")


def profile_svg(board: SuiteBoard) -> bytes:
    """The suite's performance profiles, one panel per task, as deterministic SVG bytes.

    Raises:
        PlotDependencyError: if matplotlib (the ``viz`` extra) is not installed.
    """
    require_matplotlib()
    import matplotlib
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    from matplotlib.figure import Figure

    columns = max(1, min(3, len(board.tasks)))
    rows = max(1, math.ceil(len(board.tasks) / columns))
    with matplotlib.rc_context({"svg.hashsalt": SVG_HASH_SALT, "svg.fonttype": "path"}):
        figure = Figure(figsize=(4.6 * columns, 3.6 * rows), layout="constrained")
        FigureCanvasSVG(figure)
        for index, task in enumerate(board.tasks):
            draw_task(figure.add_subplot(rows, columns, index + 1), task)
        figure.suptitle(f"{board.suite}: performance profiles (test split)", fontsize=11)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="svg", metadata={
            "Date": None, "Creator": None,
            "Title": f"{board.suite} profiles, data sha256 {profile_fingerprint(board)}"})
    return buffer.getvalue()
