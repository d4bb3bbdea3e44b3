"""Render an :class:`~palgym.report.Evaluation`: aligned text tables, CSV and JSON (written
atomically). Nothing here prints.

Unfinished (truncated) episodes are never shown as finished ones: every table has a
``done`` column (completed / total measured jobs), their JCT and makespan figures are the
censored ones (unfinished jobs counted up to the truncation time, PAL_MODEL section 6) marked
``>=`` as lower bounds, and :func:`format_unfinished` lists each with its reason. CSV and JSON
carry ``num_completed``, ``truncated``, ``truncation_reason`` and the censored columns.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from palgym.io import atomic_write_text
from palgym.report import SECONDS_PER_HOUR, Evaluation
from palgym.sim.metrics import EpisodeMetrics

CSV_COLUMNS: tuple[str, ...] = (
    "trace", "policy", "queue_order", "num_jobs", "num_completed", "truncated", "avg_jct_s",
    "p50_jct_s", "p99_jct_s", "makespan_s", "utilization_allocated", "utilization_effective",
    "num_preemptions", "improvement_vs_baseline", "baseline", "episode_hash",
    "censored_avg_jct_s", "censored_p99_jct_s", "censored_makespan_s", "end_time_s",
    "truncation_reason", "belief",
)
"""Columns of the results CSV, in order (times in seconds, utilizations and improvements as
fractions; ``avg_jct_s`` .. ``makespan_s`` over completed jobs, the ``censored_`` ones over
every measured job; improvements use the censored average; ``belief``: what PAL / PM-First
read, ``none`` for the other policies)."""

_FLOAT_COLUMNS = frozenset({
    "avg_jct_s", "p50_jct_s", "p99_jct_s", "makespan_s", "utilization_allocated",
    "utilization_effective", "improvement_vs_baseline", "censored_avg_jct_s",
    "censored_p99_jct_s", "censored_makespan_s", "end_time_s",
})


# --------------------------------------------------------------------------- text tables
def format_columns(
    header: Sequence[str], rows: Sequence[Sequence[str]], num_text_columns: int = 1
) -> list[str]:
    """Align a table with a dashed rule under the header.

    Args:
        header: column titles.
        rows: cells, one list per row, as long as ``header``.
        num_text_columns: how many leading columns are left-aligned (the rest, numbers, are
            right-aligned).

    Returns:
        The lines of the table.
    """
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        parts = [
            cell.ljust(width) if column < num_text_columns else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return [line(header), rule, *(line(row) for row in rows)]


def hours(seconds: float, lower_bound: bool = False) -> str:
    """Seconds as hours with three decimals; ``>=`` before a lower bound."""
    return (">=" if lower_bound else "") + f"{seconds / SECONDS_PER_HOUR:.3f}"


def without_negative_zero(value: float) -> float:
    """``value`` as a float, with ``-0.0`` turned into ``0.0`` (other values, NaN included,
    unchanged)."""
    value = float(value)
    return 0.0 if value == 0.0 else value


def format_percent(fraction: float, signed: bool = False) -> str:
    """A fraction as a percentage with one decimal (``signed``: a ``+`` before positive values).

    A value that rounds to zero prints as ``0.0``, never ``-0.0`` or ``+0.0``; NaN as ``nan``.
    """
    if math.isnan(fraction):
        return "nan"
    text = f"{100.0 * fraction:+.1f}" if signed else f"{100.0 * fraction:.1f}"
    return "0.0" if float(text) == 0.0 else text


def censored_makespan_s(metrics: EpisodeMetrics, first_submit_s: float) -> float:
    """The makespan, or for an unfinished episode ``end_time_s - first measured submission``
    (a lower bound)."""
    return metrics.end_time_s - first_submit_s if metrics.truncated else metrics.makespan_s


def format_results_table(evaluation: Evaluation) -> str:
    """One row per (trace, queue order, policy): completed jobs, JCT, makespan, utilization,
    improvement (censored figures, marked ``>=``, for unfinished episodes)."""
    header = [
        "trace", "policy", "order", "done", "avg JCT (h)", "p99 JCT (h)", "makespan (h)",
        "util alloc (%)", "util eff (%)", "preemptions", f"vs {evaluation.baseline} (%)",
    ]
    rows = []
    for result in evaluation.results:
        metrics = result.metrics
        cut = metrics.truncated
        first = float(result.records.submit_time_s.min(initial=0.0))
        rows.append([
            result.trace, result.policy, result.queue_order, metrics.completed_text,
            hours(metrics.censored_avg_jct_s, cut), hours(metrics.censored_p99_jct_s, cut),
            hours(censored_makespan_s(metrics, first), cut),
            format_percent(metrics.utilization_allocated),
            format_percent(metrics.utilization_effective), str(metrics.num_preemptions),
            format_percent(evaluation.improvement(result), signed=True),
        ])
    return "\n".join(format_columns(header, rows, num_text_columns=3))


def format_geomean_table(evaluation: Evaluation) -> str:
    """Per (queue order, policy): 1 - geomean over traces of avgJCT(P) / avgJCT(baseline)."""
    baselines = evaluation.baselines()
    header = ["policy", "order", *(f"vs {b} (%)" for b in baselines)]
    rows = [
        [policy, order, *(
            format_percent(evaluation.geomean_improvement(policy, order, b), signed=True)
            for b in baselines
        )]
        for order in evaluation.queue_orders
        for policy in evaluation.policies
    ]
    title = (
        f"geomean avg-JCT improvement over {len(evaluation.traces)} trace(s), "
        "1 - geomean(avgJCT(P) / avgJCT(B)):"
    )
    return "\n".join([title, *format_columns(header, rows, num_text_columns=2)])


def format_unfinished(evaluation: Evaluation) -> str:
    """A warning naming every unfinished episode (``""`` when every episode finished)."""
    unfinished = evaluation.unfinished()
    if not unfinished:
        return ""
    lines = [
        f"WARNING: {len(unfinished)} of {len(evaluation.results)} episodes did not finish. "
        "Their JCT and makespan figures (marked >=) count each unfinished job up to the "
        "truncation time (censored, lower bounds); improvements and geomeans compare each "
        "pair with an unfinished run censored at the pair's earlier end time:",
    ]
    lines += [
        f"  {r.trace} {r.policy} {r.queue_order}: {r.metrics.completed_text} jobs completed; "
        f"{r.metrics.truncation_reason}" for r in unfinished
    ]
    return "\n".join(lines)


def format_report(evaluation: Evaluation) -> str:
    """The results table, the geomean improvements, each trace's episode hash and, if any
    episode did not finish, the warning of :func:`format_unfinished`."""
    hashes = [f"  {trace}: {evaluation.episode_hashes[trace]}" for trace in evaluation.traces]
    beliefs = sorted({r.belief for r in evaluation.results} - {"none", "oracle"})
    if beliefs:
        hashes.append(f"PAL / PM-First decided on the {', '.join(beliefs)} belief (not the truth; "
                      "without dynamics, e.g. the default and pal-artifact presets, every belief "
                      "is the truth)")
    parts = [
        format_results_table(evaluation),
        format_geomean_table(evaluation),
        "\n".join(["episode hashes:", *hashes]),
    ]
    warning = format_unfinished(evaluation)
    return "\n\n".join([*parts, warning] if warning else parts)


# --------------------------------------------------------------------------- CSV and JSON
def result_rows(evaluation: Evaluation) -> list[dict[str, Any]]:
    """One dict per run with :data:`CSV_COLUMNS` (plain Python values)."""
    rows = []
    for result in evaluation.results:
        m = result.metrics
        first = float(result.records.submit_time_s.min(initial=0.0))
        rows.append({
            "trace": result.trace, "policy": result.policy, "queue_order": result.queue_order,
            "num_jobs": m.num_jobs, "num_completed": m.num_completed, "truncated": m.truncated,
            "avg_jct_s": m.avg_jct_s, "p50_jct_s": m.p50_jct_s, "p99_jct_s": m.p99_jct_s,
            "makespan_s": m.makespan_s, "utilization_allocated": m.utilization_allocated,
            "utilization_effective": m.utilization_effective,
            "num_preemptions": m.num_preemptions,
            "improvement_vs_baseline": evaluation.improvement(result),
            "baseline": evaluation.baseline, "episode_hash": result.episode_hash,
            "censored_avg_jct_s": m.censored_avg_jct_s,
            "censored_p99_jct_s": m.censored_p99_jct_s,
            "censored_makespan_s": censored_makespan_s(m, first), "end_time_s": m.end_time_s,
            "truncation_reason": m.truncation_reason, "belief": result.belief,
        })
    return rows


def results_csv(evaluation: Evaluation) -> str:
    """The results as CSV text with :data:`CSV_COLUMNS` (floats at full ``repr`` precision,
    ``-0.0`` written as ``0.0``)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in result_rows(evaluation):
        writer.writerow([repr(without_negative_zero(row[c])) if c in _FLOAT_COLUMNS else row[c]
                         for c in CSV_COLUMNS])
    return buffer.getvalue()


def results_json(evaluation: Evaluation) -> str:
    """The results as JSON text: the runs (:data:`CSV_COLUMNS` each; NaN as ``null``), the
    unfinished count and each trace's episode hash."""
    rows = [{k: (None if isinstance(v, float) and math.isnan(v)
                 else without_negative_zero(v) if isinstance(v, float) else v)
             for k, v in row.items()} for row in result_rows(evaluation)]
    content = {
        "baseline": evaluation.baseline, "traces": list(evaluation.traces),
        "policies": list(evaluation.policies), "queue_orders": list(evaluation.queue_orders),
        "num_runs": len(rows), "num_unfinished": len(evaluation.unfinished()),
        "episode_hashes": dict(evaluation.episode_hashes), "results": rows,
    }
    return json.dumps(content, indent=1) + "\n"


def write_results_csv(evaluation: Evaluation, path: str | Path) -> Path:
    """Write :func:`results_csv` atomically (a failure leaves any previous file untouched)."""
    return atomic_write_text(path, results_csv(evaluation))


def write_results_json(evaluation: Evaluation, path: str | Path) -> Path:
    """Write :func:`results_json` atomically."""
    return atomic_write_text(path, results_json(evaluation))
