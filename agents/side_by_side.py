"""One call from command-line choices to a :class:`~agents.evaluation_report.Comparison`:
resolve the traces (files or trace-set splits), build the contenders (learned agents, then
heuristics with the reference and baseline added), run them on identical episodes and pair
them (the logic of ``evaluate.py --agent`` / ``--trace-set`` / ``--seeds``)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.evaluation import (
    Contender,
    base_episode_kwargs,
    heuristic_contender,
    learned_contender,
    run_contenders,
    training_overlap,
)
from agents.evaluation_report import Comparison, summarise
from agents.rollout import EpisodeOutcome
from palgym.errors import ConfigError
from palgym.report import policies_to_run
from palgym.sim.workload import Trace
from palgym.sweep import Runner
from palgym.tracesets import load_trace_set

logger = logging.getLogger(__name__)

DEFAULT_ENV_ID = "palgym/PALPlacement-v0"
DEFAULT_REFERENCE = "pal"
DEFAULT_BASELINE = "packed-sticky"


@dataclass(frozen=True)
class SideBySide:
    """What to compare, on what.

    Attributes:
        env_id: the env all contenders act in.
        agents: model specs (zip, run folder or ``pretrained[:NAME]``), in table order.
        heuristics: placement names (the reference and baselines are added if missing).
        traces: evaluation traces (unique names).
        trace_source: where they came from (for the report).
        seeds: reset seeds; every (trace, seed) is one episode.
        overrides: episode env kwargs from the command line (preset, cluster, ...).
        reference / baseline: the two policies every policy is paired with.
        confidence / resamples / bootstrap_seed / bootstrap_unit: the bootstrap interval's
            settings (unit ``episode`` or ``trace``).
        device: torch device of learned agents.
        heuristics_via: ``simulator`` (default, fast) or ``env`` (heuristics step the env).
        planners: rollout planner specs (:mod:`agents.planner`), after the learned agents.
    """

    env_id: str
    agents: tuple[str, ...]
    heuristics: tuple[str, ...]
    traces: tuple[Trace, ...]
    trace_source: str
    seeds: tuple[int, ...]
    overrides: dict[str, Any] = field(default_factory=dict)
    reference: str = DEFAULT_REFERENCE
    baseline: str = DEFAULT_BASELINE
    confidence: float = 0.95
    resamples: int = 10_000
    bootstrap_seed: int = 0
    bootstrap_unit: str = "episode"
    device: str = "cpu"
    heuristics_via: str = "simulator"
    planners: tuple[str, ...] = ()


def set_split_traces(set_specs: Sequence[str], split: str, duration_unit: str = "iterations"
                     ) -> list[Trace]:
    """The union of ``split`` over the trace sets (sets where it is empty contribute nothing).

    Raises:
        TraceSetError: for an unloadable set or changed member, or a split empty everywhere.
    """
    traces: list[Trace] = []
    for spec in set_specs:
        trace_set = load_trace_set(spec, duration_unit)
        if trace_set.splits.get(split):
            traces.extend(trace_set.traces(split))
    if not traces:
        raise ConfigError(f"split {split!r} is empty in every trace set {list(set_specs)}")
    return traces


def contenders_of(request: SideBySide) -> list[Contender]:
    """Learned agents first, then planners, then the heuristics (plus reference and baselines).

    Raises:
        ConfigError: for an unknown heuristic, or a model that cannot be loaded.
    """
    learned = [learned_contender(spec, request.env_id, request.overrides, request.device)
               for spec in request.agents]
    base = base_episode_kwargs(learned, request.overrides)
    names = list(policies_to_run(request.heuristics, request.baseline))
    if request.reference not in names:
        names.insert(0, request.reference)
    from agents.planner import planner_contender

    planners = [planner_contender(spec, base) for spec in dict.fromkeys(request.planners)]
    return [*learned, *planners, *(heuristic_contender(name, base) for name in names)]


def run_side_by_side(
    request: SideBySide, on_episode: Callable[[EpisodeOutcome], None] | None = None,
    runner: Runner | None = None,
) -> Comparison:
    """Run every contender on every (trace, seed) and pair them (see :mod:`agents.evaluation`).

    Raises:
        ConfigError: for bad names, models or env kwargs, or non-identical episodes.
    """
    contenders = contenders_of(request)
    for warning in training_overlap(contenders, request.traces):
        logger.warning(warning)
    outcomes = run_contenders(request.env_id, contenders, request.traces, request.seeds,
                              on_episode=on_episode, heuristics_via=request.heuristics_via,
                              runner=runner)
    return summarise(
        request.env_id, contenders, outcomes, {t.name: t.content_hash() for t in request.traces},
        request.trace_source, request.seeds, reference=request.reference,
        baseline=request.baseline, confidence=request.confidence, resamples=request.resamples,
        bootstrap_seed=request.bootstrap_seed, bootstrap_unit=request.bootstrap_unit,
    )
