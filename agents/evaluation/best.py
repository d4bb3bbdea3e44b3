"""The best heuristic combination (queue order x placement x backfill), chosen on one split and
measured on another.

Every combination of the field is a heuristic contender with its own queue order
(:func:`agents.evaluation.contenders.heuristic_contender`), run by the one comparison on the
env's identical episodes of both splits (:func:`agents.evaluation.comparison.run_contenders`:
the simulator path, identical to stepping the env by parity; serially or through a runner).
The winner is the combination with the lowest geomean over the **selection** episodes
(default: the trace sets' ``validation`` split) of the average JCT, ties broken by label; its
figures on the **evaluation** split (default ``test``) are then reported, never used to
choose. The best combination without backfilling is chosen the same way, so the table shows
what backfilling adds. An episode with unfinished jobs counts with its censored average JCT (a
lower bound, PAL_MODEL section 6) and is counted in the ``unfinished`` columns.

Labels: ``ORDER/PLACEMENT`` with the placement's backfill suffix, e.g. ``srtf/pal+easy``.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.evaluation.comparison import run_contenders
from agents.evaluation.contenders import heuristic_contender
from agents.evaluation.stats import geomean
from agents.rollout import EpisodeOutcome
from palgym.errors import ConfigError
from palgym.io.atomic import atomic_write_text
from palgym.policies.backfill import check_mode, split_name, with_backfill
from palgym.sim.workload import Trace
from palgym.sweep import Runner

SELECTION_RULE = ("lowest geomean over the selection split's episodes of the average JCT "
                  "(censored for unfinished episodes); ties: the label, alphabetically")
"""The rule printed beside the winner and written to every output."""
CSV_COLUMNS: tuple[str, ...] = (
    "label", "queue_order", "placement", "backfill", "selection_geomean_avg_jct_s",
    "evaluation_geomean_avg_jct_s", "selection_unfinished", "evaluation_unfinished",
    "chosen",
)


@dataclass(frozen=True)
class Combination:
    """One heuristic of the field: a queue order and a placement name (with its suffix)."""

    queue_order: str
    placement: str

    @property
    def label(self) -> str:
        """``ORDER/PLACEMENT``."""
        return f"{self.queue_order}/{self.placement}"

    @property
    def backfill(self) -> str:
        """The placement's backfill mode."""
        return split_name(self.placement)[1]


def field_of(orders: Sequence[str], placements: Sequence[str], backfills: Sequence[str]
             ) -> list[Combination]:
    """Every order x placement x backfill (orders outermost; duplicates dropped).

    Raises:
        ConfigError: for an unknown backfill mode or an empty dimension.
    """
    for mode in backfills:
        check_mode(mode)
    if not (orders and placements and backfills):
        raise ConfigError("the heuristic field needs at least one queue order, placement and "
                          "backfill mode")
    names = [with_backfill(p, b) for b in dict.fromkeys(backfills)
             for p in dict.fromkeys(placements)]
    return [Combination(o, n) for o in dict.fromkeys(orders) for n in names]


def run_field(
    env_id: str, episode_kwargs: Mapping[str, Any], field: Sequence[Combination],
    traces: Sequence[Trace], seeds: Sequence[int],
    on_episode: Callable[[EpisodeOutcome], None] | None = None,
    runner: Runner | None = None,
) -> dict[str, list[EpisodeOutcome]]:
    """Every combination on every (trace, seed) episode of the env, keyed by label.

    Raises:
        ConfigError: for an unknown placement, or episodes that are not identical.
    """
    contenders = [heuristic_contender(c.placement, episode_kwargs, queue_order=c.queue_order)
                  for c in field]
    return run_contenders(env_id, contenders, traces, seeds, on_episode=on_episode,
                          runner=runner)


def avg_jct_s(outcome: EpisodeOutcome) -> float:
    """The episode's average JCT (s), censored when jobs are unfinished."""
    metrics = outcome.metrics
    key = "censored_avg_jct_s" if metrics.get("truncated") else "avg_jct_s"
    return float(metrics[key])


def geomean_avg_jct_s(outcomes: Sequence[EpisodeOutcome]) -> float:
    """Geomean over episodes of :func:`avg_jct_s` (NaN for no episode)."""
    if not outcomes:
        return math.nan
    return geomean(np.array([avg_jct_s(o) for o in outcomes]))


def select_best(scores: Mapping[str, float]) -> str:
    """The label with the lowest score, ties by label (:data:`SELECTION_RULE`).

    Raises:
        ConfigError: if no score is finite.
    """
    finite = [(score, label) for label, score in scores.items() if math.isfinite(score)]
    if not finite:
        raise ConfigError("no combination has a finite selection score")
    return min(finite)[1]


@dataclass(frozen=True)
class FieldRow:
    """One combination's figures on both splits."""

    label: str
    queue_order: str
    placement: str
    backfill: str
    selection_geomean_avg_jct_s: float
    evaluation_geomean_avg_jct_s: float
    selection_unfinished: int
    evaluation_unfinished: int
    chosen: str


@dataclass(frozen=True)
class BestHeuristic:
    """The field's result: rows in field order, the winner and the winner without backfill."""

    rule: str
    selection_source: str
    evaluation_source: str
    seeds: tuple[int, ...]
    winner: str
    winner_without_backfill: str | None
    rows: tuple[FieldRow, ...]

    def row(self, label: str) -> FieldRow:
        """The row of ``label``."""
        return next(r for r in self.rows if r.label == label)


def _unfinished(outcomes: Sequence[EpisodeOutcome]) -> int:
    return sum(1 for o in outcomes if o.metrics.get("truncated"))


def summarise_field(
    field: Sequence[Combination], selection: Mapping[str, Sequence[EpisodeOutcome]],
    evaluation: Mapping[str, Sequence[EpisodeOutcome]], selection_source: str,
    evaluation_source: str, seeds: Sequence[int],
) -> BestHeuristic:
    """Choose on ``selection`` alone, then attach the ``evaluation`` figures."""
    scores = {c.label: geomean_avg_jct_s(selection[c.label]) for c in field}
    winner = select_best(scores)
    plain = {c.label: scores[c.label] for c in field if c.backfill == "none"}
    plain_winner = select_best(plain) if plain else None
    rows = tuple(
        FieldRow(c.label, c.queue_order, split_name(c.placement)[0], c.backfill,
                 scores[c.label], geomean_avg_jct_s(evaluation[c.label]),
                 _unfinished(selection[c.label]), _unfinished(evaluation[c.label]),
                 "best" if c.label == winner else
                 "best without backfill" if c.label == plain_winner else "")
        for c in field)
    return BestHeuristic(SELECTION_RULE, selection_source, evaluation_source, tuple(seeds),
                         winner, plain_winner, rows)


def format_best(report: BestHeuristic) -> str:
    """The field table (hours) and the chosen combination with its rule."""
    lines = [f"heuristic field: chosen on {report.selection_source}, measured on "
             f"{report.evaluation_source} (seeds {list(report.seeds)})",
             f"{'combination':<36} {'select (h)':>11} {'eval (h)':>10} {'unfinished':>10}"]
    for r in sorted(report.rows, key=lambda r: (r.selection_geomean_avg_jct_s, r.label)):
        lines.append(f"{r.label:<36} {r.selection_geomean_avg_jct_s / 3600:>11.3f} "
                     f"{r.evaluation_geomean_avg_jct_s / 3600:>10.3f} "
                     f"{r.selection_unfinished:>4}/{r.evaluation_unfinished:<5} {r.chosen}")
    lines.append(f"selection rule: {report.rule}")
    best = report.row(report.winner)
    lines.append(f"best heuristic: {best.label}: {best.evaluation_geomean_avg_jct_s / 3600:.3f} h "
                 f"geomean avg JCT on {report.evaluation_source}")
    if report.winner_without_backfill is not None:
        plain = report.row(report.winner_without_backfill)
        ratio = best.evaluation_geomean_avg_jct_s / plain.evaluation_geomean_avg_jct_s
        lines.append(f"best without backfill: {plain.label}: "
                     f"{plain.evaluation_geomean_avg_jct_s / 3600:.3f} h (best / it = "
                     f"{ratio:.3f})")
    return "\n".join(lines)


def write_best_json(report: BestHeuristic, path: str | Path) -> Path:
    """Everything as JSON (atomically)."""
    return atomic_write_text(path, json.dumps(asdict(report), indent=2, allow_nan=True) + "\n")


def write_best_csv(report: BestHeuristic, path: str | Path) -> Path:
    """One row per combination, then the rule as a comment line (atomically)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
    writer.writeheader()
    for row in report.rows:
        writer.writerow(asdict(row))
    buffer.write(f"# chosen: {report.winner} on {report.selection_source}; rule: "
                 f"{report.rule}\n")
    return atomic_write_text(path, buffer.getvalue())


def run_best(
    env_id: str, episode_kwargs: Mapping[str, Any], field: Sequence[Combination],
    splits: Mapping[str, Sequence[Trace]], sources: Mapping[str, str], seeds: Sequence[int],
    on_episode: Callable[[EpisodeOutcome], None] | None = None,
    runner: Runner | None = None,
) -> BestHeuristic:
    """Run ``field`` on the ``"selection"`` and ``"evaluation"`` traces and choose.

    Raises:
        ConfigError: if the two splits share a trace (the choice would see evaluation data).
    """
    shared = sorted({t.name for t in splits["selection"]} & {t.name for t in splits["evaluation"]})
    if shared:
        raise ConfigError(f"the selection and evaluation splits share traces {shared}")
    selection = run_field(env_id, episode_kwargs, field, splits["selection"], seeds, on_episode,
                          runner)
    evaluation = run_field(env_id, episode_kwargs, field, splits["evaluation"], seeds,
                           on_episode, runner)
    return summarise_field(field, selection, evaluation, sources["selection"],
                           sources["evaluation"], seeds)
