"""The one report path of every evaluation: text, CSV, JSON and figures.

Three results come out of an evaluation, and each is rendered here:

- :class:`palgym.report.Evaluation`, the heuristic table (no learned contender, one episode per
  trace at the episode seed): :mod:`palgym.report_output` (text, CSV, JSON) and
  :func:`palgym.plots.table_figures`;
- :class:`~agents.evaluation.summary.Comparison`, contenders side by side on the env's
  episodes: per-episode and summary tables, CSV and JSON below, figures in
  :mod:`agents.evaluation.plots`;
- :class:`~agents.evaluation.best.BestHeuristic`, the best combination chosen on one split and
  measured on another (:mod:`agents.evaluation.best`).

:func:`format_result` is the text a command prints, :func:`write_result` writes the files an
:class:`Outputs` asks for, atomically. Nothing depends on wall-clock time: equal inputs give
byte-identical files. Unfinished (truncated) episodes are shown, never hidden: tables give the
completed / total jobs and mark censored averages ``>=``, and a warning lists each one.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.env_args import changed_kwargs, format_kwargs
from agents.evaluation.best import BestHeuristic
from agents.evaluation.best_output import (
    best_json_data,
    format_best,
    write_best_csv,
    write_best_json,
)
from agents.evaluation.summary import (
    EPISODE_COLUMNS,
    SUMMARY_COLUMNS,
    Comparison,
    completed_text,
    episode_rows,
    summary_rows,
)
from agents.sb3.runs import plain
from palgym.bench.stats import RatioSummary
from palgym.io import atomic_write_text
from palgym.report import Evaluation
from palgym.report_output import (
    format_columns,
    format_report,
    hours,
    without_negative_zero,
    write_results_csv,
    write_results_json,
)

Result = Evaluation | Comparison | BestHeuristic
"""What an evaluation produces."""


@dataclass(frozen=True)
class Outputs:
    """The files an evaluation writes (None: not written).

    Attributes:
        csv: per-run (heuristic table), per-episode (comparison) or per-combination
            (best heuristic) CSV.
        summary_csv: per-policy summary CSV (comparison only).
        json: everything as JSON.
        plots: folder of the PNG figures (heuristic table and comparison).
    """

    csv: Path | None = None
    summary_csv: Path | None = None
    json: Path | None = None
    plots: Path | None = None


def format_result(result: Result) -> str:
    """The text report of any evaluation result (a planner contender adds its cost table)."""
    if isinstance(result, Evaluation):
        return format_report(result)
    if isinstance(result, BestHeuristic):
        return format_best(result)
    text = format_comparison(result)
    if result.best_heuristic is not None:
        text = "\n\n".join([format_best(result.best_heuristic), text])
    if any(c.kind == "planner" for c in result.contenders):
        from agents.planning.planner import format_planner_costs

        text += "\n" + format_planner_costs(result.contenders, result.outcomes)
    return text


def write_result(result: Result, outputs: Outputs) -> list[Path]:
    """Write, atomically, the files ``outputs`` asks for that ``result`` has; their paths.

    Raises:
        PlotDependencyError: for figures without matplotlib.
        OSError: if a file cannot be written.
    """
    if isinstance(result, BestHeuristic):
        written = [write_best_json(result, outputs.json)] if outputs.json is not None else []
        if outputs.csv is not None:
            written.append(write_best_csv(result, outputs.csv))
        return written
    if isinstance(result, Evaluation):
        written = [] if outputs.csv is None else [write_results_csv(result, outputs.csv)]
        if outputs.json is not None:
            written.append(write_results_json(result, outputs.json))
    else:
        written = write_outputs(result, outputs.csv, outputs.summary_csv, outputs.json)
    if outputs.plots is not None:
        from agents.evaluation.plots import write_plots

        written.extend(write_plots(result, outputs.plots))
    return written


# --------------------------------------------------------------------------- comparison files
def _csv(columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([repr(without_negative_zero(v))
                         if isinstance(v, (float, np.floating)) else v
                         for v in (row[c] for c in columns)])
    return buffer.getvalue()


def _json_ready(value: Any) -> Any:
    """``value`` with every float's ``-0.0`` turned into ``0.0`` (other values unchanged)."""
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_ready(v) for v in value]
    if isinstance(value, float):
        return None if math.isnan(value) else without_negative_zero(value)
    return value


def episodes_csv(comparison: Comparison) -> str:
    """Per-episode CSV text (floats at full ``repr`` precision, ``-0.0`` written as ``0.0``)."""
    return _csv(EPISODE_COLUMNS, episode_rows(comparison))


def summary_csv(comparison: Comparison) -> str:
    """Per-policy summary CSV text."""
    return _csv(SUMMARY_COLUMNS, summary_rows(comparison))


def comparison_json(comparison: Comparison) -> str:
    """Everything as JSON text: setup, episodes, per-episode results, summaries (floats at full
    precision, ``-0.0`` written as ``0.0``)."""
    first = next(iter(comparison.outcomes.values()))
    content = {
        "env_id": comparison.env_id, "trace_source": comparison.trace_source,
        "traces": [{"name": n, "content_hash": h} for n, h in comparison.traces.items()],
        "seeds": list(comparison.seeds), "reference": comparison.reference,
        "baseline": comparison.baseline, "bootstrap": dict(comparison.bootstrap),
        "policies": [{"label": c.label, "kind": c.kind, "algo": c.algo,
                      "model_path": c.model_path, "model_size_bytes": c.model_size_bytes,
                      "env_kwargs": plain(c.env_kwargs)} for c in comparison.contenders],
        "episodes": [{"trace": o.trace, "seed": comparison.seeds[i % len(comparison.seeds)],
                      "episode_seed": o.seed, "profile": o.profile,
                      "episode_hash": o.episode_hash} for i, o in enumerate(first)],
        "results": plain(episode_rows(comparison)),
        "summary": plain(summary_rows(comparison)),
    }
    if comparison.best_heuristic is not None:  # the choice behind the ``best`` contender
        content["best_heuristic"] = best_json_data(comparison.best_heuristic)
    return json.dumps(_json_ready(plain(content)), indent=1) + "\n"


def write_outputs(comparison: Comparison, csv_path: Path | None, summary_path: Path | None,
                  json_path: Path | None) -> list[Path]:
    """Write the requested files atomically; returns the paths written."""
    written = []
    for path, render in ((csv_path, episodes_csv), (summary_path, summary_csv),
                         (json_path, comparison_json)):
        if path is not None:
            written.append(atomic_write_text(path, render(comparison)))
    return written


# --------------------------------------------------------------------------- text
ZERO_WIDTH_MARK = "*"
"""Marks an interval of zero width in the summary (:func:`zero_width`)."""


def zero_width(summary: RatioSummary) -> bool:
    """An interval whose bounds are equal: every episode has the same ratio, so no resample
    moves it (a policy against itself, or episodes that are identical, e.g. the seeds of a
    static world under deterministic policies)."""
    return summary.has_interval and summary.ci_low == summary.ci_high


def _ratio(summary: RatioSummary, itself: bool = False) -> str:
    """``geomean [low, high]`` (marked when of zero width, unless a policy against
    ``itself``)."""
    if not summary.has_interval:
        return f"{summary.geomean:.3f} [no interval]"
    mark = ZERO_WIDTH_MARK if zero_width(summary) and not itself else ""
    return f"{summary.geomean:.3f} [{summary.ci_low:.3f}, {summary.ci_high:.3f}]{mark}"


def format_episodes(comparison: Comparison) -> str:
    """One row per (trace, seed, policy); unfinished episodes' censored figures marked ``>=``."""
    header = ["trace", "seed", "policy", "done", "avg JCT (h)", "p99 JCT (h)", "makespan (h)",
              "invalid", f"/ {comparison.reference}", f"/ {comparison.baseline}"]
    episodes = episode_rows(comparison)
    per_policy = len(episodes) // max(len(comparison.contenders), 1)
    order = sorted(range(len(episodes)), key=lambda i: (i % per_policy, i // per_policy))
    rows = [[str(r["trace"]), str(r["seed"]), str(r["policy"]),
             f"{r['num_completed']}/{r['num_jobs']}",
             hours(r["censored_avg_jct_s"], r["truncated"]),
             hours(r["p99_jct_s"]) if not r["truncated"] else "unfinished",
             hours(r["makespan_s"]) if not r["truncated"] else "unfinished",
             str(r["num_invalid_actions"]),
             f"{r['ratio_vs_reference']:.3f}", f"{r['ratio_vs_baseline']:.3f}"]
            for r in (episodes[i] for i in order)]
    return "\n".join(format_columns(header, rows, num_text_columns=3))


def format_summary(comparison: Comparison) -> str:
    """One row per policy: geomean avg-JCT ratios with their intervals, unfinished episodes,
    invalid actions."""
    level = f"{100 * comparison.bootstrap['confidence']:g}% CI"
    header = ["policy", "kind", "episodes", "unfinished", "mean avg JCT (h)",
              f"/ {comparison.reference} [{level}]", f"/ {comparison.baseline} [{level}]",
              "invalid actions", "model (kB)"]
    rows = [[s.label, s.kind, str(s.num_episodes), str(s.num_unfinished),
             hours(s.mean_avg_jct_s, s.num_unfinished > 0),
             _ratio(s.vs_reference, s.label == comparison.reference),
             _ratio(s.vs_baseline, s.label == comparison.baseline), str(s.num_invalid_actions),
             "" if s.model_size_bytes is None else f"{s.model_size_bytes / 1000:.1f}"]
            for s in comparison.summaries.values()]
    title = ("geomean over episodes of avgJCT(P) / avgJCT(R), paired percentile bootstrap "
             f"over {comparison.bootstrap['unit']}s ({comparison.bootstrap['resamples']} "
             f"resamples, seed {comparison.bootstrap['seed']}); < 1: P faster than R")
    return "\n".join([title, *format_columns(header, rows, num_text_columns=2)])


def format_warnings(comparison: Comparison) -> str:
    """Warnings about unfinished episodes and missing intervals (``""`` if none)."""
    lines = []
    unfinished = comparison.unfinished()
    if unfinished:
        total = sum(len(v) for v in comparison.outcomes.values())
        lines.append(
            f"WARNING: {len(unfinished)} of {total} episodes did not finish. Their avg JCT "
            "(marked >=) counts each unfinished job up to the truncation time (censored, a "
            "lower bound); ratios compare each pair with an unfinished run censored at the "
            "pair's earlier end time:")
        lines += [f"  {o.trace} seed {seed} {label}: {completed_text(o)} jobs completed; "
                  f"{o.metrics.get('truncation_reason', 'unfinished')}"
                  for label, seed, o in unfinished]
    zero = [f"{s.label} / {ref}" for s in comparison.summaries.values()
            for ref, ratio in ((comparison.reference, s.vs_reference),
                               (comparison.baseline, s.vs_baseline))
            if zero_width(ratio) and s.label != ref]
    if zero:
        lines.append(
            f"NOTE: {ZERO_WIDTH_MARK} zero-width interval ({', '.join(zero)}): the ratio is "
            "the same on every episode, so no resample moves it; the episodes do not vary "
            "(e.g. the seeds of a static world give one schedule per trace), it is not a "
            "measured certainty. Vary the episodes: more traces, --window N, or a world "
            "whose seeds differ (--env-kwargs preset:dynamic).")
    first = next(iter(comparison.summaries.values()), None)
    if first is not None and not first.vs_reference.has_interval:
        unit = comparison.bootstrap["unit"]
        lines.append(f"WARNING: a single {unit}: no bootstrap interval (one {unit} says nothing "
                     "about the variation between them); give more seeds or traces.")
    return "\n".join(lines)


def learned_env_lines(comparison: Comparison) -> list[str]:
    """One line per learned contender: the env kwargs it ran with that differ from its env id's
    defaults (sorted keys, as ``--env-kwargs`` items;
    :func:`agents.env_args.changed_kwargs`)."""
    return [f"{c.label} env kwargs (besides {comparison.env_id}'s defaults): "
            f"{format_kwargs(changed_kwargs(comparison.env_id, c.env_kwargs))}"
            for c in comparison.contenders if c.kind == "learned"]


def format_comparison(comparison: Comparison) -> str:
    """The env and traces, each learned contender's env kwargs (:func:`learned_env_lines`),
    the episodes table, summary table, each episode's hash and any warnings."""
    first = next(iter(comparison.outcomes.values()))
    hashes = [f"  {o.trace} reset seed {comparison.seeds[i % len(comparison.seeds)]}: "
              f"{o.episode_hash} (episode seed {o.seed}, profile {o.profile})"
              for i, o in enumerate(first)]
    parts = [
        "\n".join([f"{comparison.env_id} on {comparison.trace_source}",
                   *learned_env_lines(comparison)]),
        format_episodes(comparison), format_summary(comparison),
        "\n".join(["episode hashes (identical for every policy):", *hashes]),
    ]
    warnings = format_warnings(comparison)
    return "\n\n".join([*parts, warnings] if warnings else parts)
