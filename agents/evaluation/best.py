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

Labels: ``ORDER/PLACEMENT`` with the placement's backfill suffix, e.g. ``srtf/pal+easy``
(:mod:`agents.evaluation.names`). :func:`choose_best` runs the selection split alone (the
``best`` contender of a side-by-side run); every row keeps each episode's average JCT, so a
reader can recompute every geomean and the choice (the JSON layout:
:mod:`agents.evaluation.best_output`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.evaluation.comparison import run_contenders
from agents.evaluation.contenders import heuristic_contender
from agents.evaluation.names import format_label, parse_heuristic
from agents.rollout import EpisodeOutcome
from palgym.errors import ConfigError
from palgym.policies import PLACEMENT_NAMES
from palgym.policies.backfill import check_mode, split_name, with_backfill
from palgym.policies.registry import BACKFILLING_PLACEMENT_NAMES
from palgym.sim.metrics import geomean
from palgym.sim.workload import Trace
from palgym.sweep import Runner

SELECTION_RULE = ("lowest geomean over the selection split's episodes of the average JCT "
                  "(censored for unfinished episodes); ties: the label, alphabetically")
"""The rule printed beside the winner and written to every output."""


@dataclass(frozen=True)
class Combination:
    """One heuristic of the field: a queue order and a placement name (with its suffix)."""

    queue_order: str
    placement: str

    @property
    def label(self) -> str:
        """``ORDER/PLACEMENT`` (:func:`agents.evaluation.names.format_label`)."""
        return format_label(self.queue_order, self.placement)

    @property
    def backfill(self) -> str:
        """The placement's backfill mode."""
        return split_name(self.placement)[1]


def field_of(orders: Sequence[str], placements: Sequence[str], backfills: Sequence[str]
             ) -> list[Combination]:
    """Every order x placement x backfill (orders outermost; duplicates dropped; a placement
    that takes no backfill mode, e.g. a user's class without a ``backfill`` parameter, only
    without backfilling).

    Raises:
        ConfigError: for an unknown backfill mode or an empty dimension.
    """
    for mode in backfills:
        check_mode(mode)
    if not (orders and placements and backfills):
        raise ConfigError("the heuristic field needs at least one queue order, placement and "
                          "backfill mode")
    names = [with_backfill(p, b) for b in dict.fromkeys(backfills)
             for p in dict.fromkeys(placements)
             if b == "none" or p in BACKFILLING_PLACEMENT_NAMES or p not in PLACEMENT_NAMES]
    field = [Combination(o, n) for o in dict.fromkeys(orders) for n in names]
    for combination in field:
        parse_heuristic(combination.label, "heuristic field")
    return field


def field_of_names(names: Sequence[str], argument: str) -> list[Combination]:
    """The field of explicit ``ORDER/PLACEMENT[+SUFFIX]`` names (duplicates dropped).

    Raises:
        ConfigError: naming ``argument`` and the name, for a bad name or one without a queue
            order.
    """
    field = []
    for text in dict.fromkeys(names):
        name = parse_heuristic(text, argument)
        if name.queue_order is None:
            raise ConfigError(f"{argument} {text!r}: a combination of the field names its queue "
                              f"order, e.g. 'srsf/{text}'")
        field.append(Combination(name.queue_order, name.placement_name))
    if not field:
        raise ConfigError(f"{argument}: the heuristic field is empty")
    return field


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
class EpisodeFigure:
    """One episode of one combination: what its split's geomean is computed from.

    Attributes:
        trace: the trace id (with the job window, if any, e.g. ``workload-4[0:30]``).
        seed: the reset seed.
        episode_hash: the episode's hash (equal for every combination).
        avg_jct_s: the average JCT (s) the geomean uses (:func:`avg_jct_s`: censored when
            jobs are unfinished).
        num_jobs: measured jobs (None if the env did not report them).
        num_completed: of those, completed.
        truncated: True if the episode ended with jobs unfinished.
    """

    trace: str
    seed: int
    episode_hash: str
    avg_jct_s: float
    num_jobs: int | None
    num_completed: int | None
    truncated: bool


def episode_figures(outcomes: Sequence[EpisodeOutcome], seeds: Sequence[int]
                    ) -> tuple[EpisodeFigure, ...]:
    """The :class:`EpisodeFigure` of each outcome (outcomes trace-major, then ``seeds``)."""
    def count(value: Any) -> int | None:
        return None if value is None else int(value)

    return tuple(
        EpisodeFigure(o.trace, int(seeds[i % len(seeds)]), o.episode_hash, avg_jct_s(o),
                      count(o.metrics.get("num_jobs")), count(o.metrics.get("num_completed")),
                      bool(o.metrics.get("truncated")))
        for i, o in enumerate(outcomes))


@dataclass(frozen=True)
class FieldRow:
    """One combination's figures on both splits (``*_episodes``: every episode the geomean
    is taken over, in order)."""

    label: str
    queue_order: str
    placement: str
    backfill: str
    selection_geomean_avg_jct_s: float
    evaluation_geomean_avg_jct_s: float
    selection_unfinished: int
    evaluation_unfinished: int
    chosen: str
    selection_episodes: tuple[EpisodeFigure, ...] = ()
    evaluation_episodes: tuple[EpisodeFigure, ...] = ()


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
    evaluation: Mapping[str, Sequence[EpisodeOutcome]] | None, selection_source: str,
    evaluation_source: str, seeds: Sequence[int],
) -> BestHeuristic:
    """Choose on ``selection`` alone, then attach the ``evaluation`` figures (None: the
    evaluation split was not run; its geomeans are NaN, its episodes empty)."""
    evaluation = evaluation if evaluation is not None else {c.label: [] for c in field}
    scores = {c.label: geomean_avg_jct_s(selection[c.label]) for c in field}
    winner = select_best(scores)
    plain = {c.label: scores[c.label] for c in field if c.backfill == "none"}
    plain_winner = select_best(plain) if plain else None
    rows = tuple(
        FieldRow(c.label, c.queue_order, split_name(c.placement)[0], c.backfill,
                 scores[c.label], geomean_avg_jct_s(evaluation[c.label]),
                 _unfinished(selection[c.label]), _unfinished(evaluation[c.label]),
                 "best" if c.label == winner else
                 "best without backfill" if c.label == plain_winner else "",
                 episode_figures(selection[c.label], seeds),
                 episode_figures(evaluation[c.label], seeds))
        for c in field)
    return BestHeuristic(SELECTION_RULE, selection_source, evaluation_source, tuple(seeds),
                         winner, plain_winner, rows)


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


def choose_best(
    env_id: str, episode_kwargs: Mapping[str, Any], field: Sequence[Combination],
    selection: Sequence[Trace], source: str, seeds: Sequence[int],
    evaluation: Sequence[Trace] = (), runner: Runner | None = None,
) -> BestHeuristic:
    """Run ``field`` on the ``selection`` traces alone and choose (no evaluation figures).

    Args:
        evaluation: the traces the choice will be measured on: none may be a selection trace.

    Raises:
        ConfigError: if a selection trace is also an evaluation trace, or for a bad field.
    """
    shared = sorted({t.name for t in selection} & {t.name for t in evaluation})
    if shared:
        raise ConfigError(f"the selection and evaluation splits share traces {shared}")
    outcomes = run_field(env_id, episode_kwargs, field, selection, seeds, runner=runner)
    return summarise_field(field, outcomes, None, source, "", seeds)
