"""The best heuristic's outputs: its text table, CSV and JSON (atomically written).

JSON layout (``--best-heuristic --json``; NaN written as ``null``)::

    {"rule": "<selection rule>", "selection_source": "SET:SPLIT ...",
     "evaluation_source": "SET:SPLIT ..." ("" when only the selection split ran),
     "seeds": [0, ...], "winner": "srsf/pal+backfill",
     "winner_without_backfill": "srsf/pal" (or null),
     "rows": [{"label": "fifo/pal", "queue_order": "fifo", "placement": "pal",
               "backfill": "none",
               "selection_geomean_avg_jct_s": 8437.1, "evaluation_geomean_avg_jct_s": 25781.9,
               "selection_unfinished": 0, "evaluation_unfinished": 0,
               "chosen": "best" | "best without backfill" | "",
               "selection_episodes": [{"trace": "sia-philly-gen-3", "seed": 0,
                                       "episode_hash": "...", "avg_jct_s": 8437.1,
                                       "num_jobs": 160, "num_completed": 160,
                                       "truncated": false}, ...],
               "evaluation_episodes": [...]}, ...]}

Each row's ``*_geomean_avg_jct_s`` is ``exp(mean(log(avg_jct_s)))`` over its
``*_episodes`` (one per trace and seed, trace-major; ``avg_jct_s`` is censored when
``truncated``), and ``winner`` is the row of least ``selection_geomean_avg_jct_s``, ties to
the label: both can be recomputed from the file alone. Episodes with equal positions have
equal ``episode_hash`` in every row.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from agents.evaluation.best import BestHeuristic
from palgym.io.atomic import atomic_write_text

CSV_COLUMNS: tuple[str, ...] = (
    "label", "queue_order", "placement", "backfill", "selection_geomean_avg_jct_s",
    "evaluation_geomean_avg_jct_s", "selection_unfinished", "evaluation_unfinished",
    "chosen",
)
"""Columns of the per-combination CSV (the per-episode figures are in the JSON)."""


def format_best(report: BestHeuristic) -> str:
    """The field table (hours) and the chosen combination with its rule."""
    measured = bool(report.evaluation_source)
    where = f", measured on {report.evaluation_source}" if measured else ""
    width = max([36, *(len(r.label) for r in report.rows)])  # guard names are long
    lines = [f"heuristic field: chosen on {report.selection_source}{where} "
             f"(seeds {list(report.seeds)})",
             f"{'combination':<{width}} {'select (h)':>11} {'eval (h)':>10} {'unfinished':>10}"]
    for r in sorted(report.rows, key=lambda r: (r.selection_geomean_avg_jct_s, r.label)):
        evaluation = f"{r.evaluation_geomean_avg_jct_s / 3600:>10.3f}" if measured else (
            f"{'-':>10}")
        lines.append(f"{r.label:<{width}} {r.selection_geomean_avg_jct_s / 3600:>11.3f} "
                     f"{evaluation} "
                     f"{r.selection_unfinished:>4}/{r.evaluation_unfinished:<5} {r.chosen}")
    lines.append(f"selection rule: {report.rule}")
    best = report.row(report.winner)
    if not measured:
        lines.append(f"best heuristic: {best.label} (chosen on {report.selection_source})")
        return "\n".join(lines)
    lines.append(f"best heuristic: {best.label}: {best.evaluation_geomean_avg_jct_s / 3600:.3f} h "
                 f"geomean avg JCT on {report.evaluation_source}")
    if report.winner_without_backfill is not None:
        plain = report.row(report.winner_without_backfill)
        ratio = best.evaluation_geomean_avg_jct_s / plain.evaluation_geomean_avg_jct_s
        lines.append(f"best without backfill: {plain.label}: "
                     f"{plain.evaluation_geomean_avg_jct_s / 3600:.3f} h (best / it = "
                     f"{ratio:.3f})")
    return "\n".join(lines)


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_nan_to_none(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def best_json_data(report: BestHeuristic) -> dict[str, Any]:
    """The JSON content (the module docstring's layout) as plain data."""
    data: dict[str, Any] = _nan_to_none(asdict(report))
    return data


def write_best_json(report: BestHeuristic, path: str | Path) -> Path:
    """Everything as JSON (the module docstring's layout; atomically)."""
    return atomic_write_text(path, json.dumps(best_json_data(report), indent=2,
                                              allow_nan=False) + "\n")


def write_best_csv(report: BestHeuristic, path: str | Path) -> Path:
    """One row per combination, then the rule as a comment line (atomically)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
    writer.writeheader()
    for row in report.rows:
        writer.writerow({key: getattr(row, key) for key in CSV_COLUMNS})
    buffer.write(f"# chosen: {report.winner} on {report.selection_source}; rule: "
                 f"{report.rule}\n")
    return atomic_write_text(path, buffer.getvalue())
