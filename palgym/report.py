"""Evaluation reports: heuristics over traces, compared with a baseline.

The heuristic table of ``evaluate.py`` (the comparison without learned contenders, on one
episode per trace built at the episode seed; run by
``agents.evaluation.comparison.heuristic_table``): :class:`EvaluationSetup` is what its runs
share, :class:`Evaluation` its results, each policy compared with a baseline on the same trace
and queue order; :mod:`palgym.report_output` renders it as text tables, CSV and JSON,
:mod:`palgym.plots` as PNG figures. Nothing here reads traces or prints.

A pair of runs with an unfinished (truncated) one is compared through censored average JCTs
(every job counted up to the earlier of the two end times, lower bounds at one horizon;
PAL_MODEL section 6); two finished runs through their average JCTs.

Improvement of policy P over baseline B on one trace = 1 - avgJCT(P) / avgJCT(B); across
traces, 1 - geomean of the ratios. Source: PAL, SC24, Figure 10; PAL_MODEL sections 6-7 (the
default baseline is the truly sticky packed policy; the non-sticky one is reported too).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from palgym.errors import ConfigError
from palgym.policies import CLAIRVOYANT, PLACEMENT_NAMES, Durations, is_placement_name
from palgym.policies.backfill import split_name
from palgym.policies.guards import is_guard, parse_guard
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import SimConfig
from palgym.sim.metrics import censored_mean_at, geomean_improvement, improvement, jct_ratio
from palgym.sim.variability import VariabilityProfile
from palgym.simulate import EpisodeResult

DEFAULT_BASELINE = "packed-sticky"
"""Baseline of the improvement column (PAL_MODEL section 7: the truly sticky packed policy)."""

SECOND_BASELINE = "packed-non-sticky"
"""The other conventional baseline, also reported when the baseline is ``packed-sticky``."""

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class EvaluationSetup:
    """Everything an evaluation shares across traces and policies.

    Attributes:
        cluster: cluster shape.
        config: simulator options (a preset, possibly with overrides).
        profile: explicit variability profile (takes precedence over ``variability_data``).
        variability_data: Longhorn-style measurement folder to build the profile from.
        seed: episode seed (see :func:`palgym.simulate.make_episode`).
        durations: what the queue orders know of job durations (default clairvoyant).
        belief: what PAL and PM-First read (``oracle``, ``stale``, ``online``;
            :mod:`palgym.policies.belief`).
    """

    cluster: ClusterSpec
    config: SimConfig
    profile: VariabilityProfile | None = None
    variability_data: Path | None = None
    seed: int = 0
    durations: Durations = CLAIRVOYANT
    belief: str = "oracle"


@dataclass(frozen=True)
class Evaluation:
    """Results of every (trace, queue order, policy) run of an evaluation.

    Attributes:
        results: one result per run, trace-major, then queue order, then policy.
        traces: trace ids, in run order.
        policies: placement names run (the requested ones, then any added baseline).
        queue_orders: queue order names run.
        baseline: placement the improvement column is relative to.
        episode_hashes: trace id -> episode hash (equal for every policy on that trace).
    """

    results: tuple[EpisodeResult, ...]
    traces: tuple[str, ...]
    policies: tuple[str, ...]
    queue_orders: tuple[str, ...]
    baseline: str
    episode_hashes: dict[str, str]

    @cached_property
    def _by_key(self) -> dict[tuple[str, str, str], EpisodeResult]:
        return {(r.trace, r.queue_order, r.policy): r for r in self.results}

    def result(self, trace: str, queue_order: str, policy: str) -> EpisodeResult:
        """The result of one run.

        Raises:
            KeyError: if that combination was not run.
        """
        return self._by_key[(trace, queue_order, policy)]

    def baselines(self) -> tuple[str, ...]:
        """The baselines reported: the baseline, plus ``packed-non-sticky`` after
        ``packed-sticky``."""
        return reference_baselines(self.baseline)

    def improvement(self, result: EpisodeResult, baseline: str | None = None) -> float:
        """1 - avgJCT(result) / avgJCT(baseline) on the same trace and queue order (censored
        averages: equal to the plain ones for finished episodes)."""
        reference = self.result(result.trace, result.queue_order, baseline or self.baseline)
        return improvement(*comparable_avg_jct_s(result, reference))

    def geomean_improvement(self, policy: str, queue_order: str, baseline: str | None = None
                            ) -> float:
        """1 - geomean over traces of avgJCT(policy) / avgJCT(baseline) (PAL Figure 10 style;
        censored averages, see :meth:`improvement`)."""
        pairs = [comparable_avg_jct_s(self.result(trace, queue_order, policy),
                                      self.result(trace, queue_order, baseline or self.baseline))
                 for trace in self.traces]
        ratios = [jct_ratio(a, b) for a, b in pairs]
        return geomean_improvement(np.asarray(ratios, dtype=np.float64))

    def unfinished(self) -> tuple[EpisodeResult, ...]:
        """The runs that stopped before every measured job completed."""
        return tuple(r for r in self.results if r.metrics.truncated)


def comparable_avg_jct_s(a: EpisodeResult, b: EpisodeResult) -> tuple[float, float]:
    """The average JCTs of two runs of one episode, comparable: the plain ones if both
    finished, else both censored at the earlier of their end times (lower bounds at one
    horizon; PAL_MODEL section 6)."""
    if not (a.metrics.truncated or b.metrics.truncated):
        return a.metrics.avg_jct_s, b.metrics.avg_jct_s
    horizon = min(a.metrics.end_time_s, b.metrics.end_time_s)
    return tuple(censored_mean_at(r.records.submit_time_s, r.records.completion_time_s, horizon)
                 for r in (a, b))  # type: ignore[return-value]


# --------------------------------------------------------------------------- baselines
def reference_baselines(baseline: str) -> tuple[str, ...]:
    """Baselines to report: ``baseline``, plus ``packed-non-sticky`` if it is ``packed-sticky``."""
    return (baseline, SECOND_BASELINE) if baseline == DEFAULT_BASELINE else (baseline,)


def policies_to_run(policies: Iterable[str], baseline: str = DEFAULT_BASELINE) -> tuple[str, ...]:
    """The requested placements (duplicates dropped), then each reported baseline not among them.
    An aging guard (:mod:`palgym.policies.guards`) counts as a placement.

    Raises:
        ConfigError: for an unknown placement name, or a backfill suffix on a placement that
            takes none.
    """
    wanted = list(dict.fromkeys(policies))
    for extra in reference_baselines(baseline):
        if extra not in wanted:
            wanted.append(extra)
    for name in wanted:
        if is_guard(name):
            parse_guard(name, "policy")  # a malformed guard is named with its part at fault
    unknown = [name for name in wanted if not (is_placement_name(name) or is_guard(name))]
    unsuffixed = [name for name in unknown if split_name(name)[0] in PLACEMENT_NAMES]
    if unsuffixed:
        raise ConfigError(f"placement {split_name(unsuffixed[0])[0]!r} takes no backfill mode "
                          f"({unsuffixed[0]!r} asked)")
    if unknown:
        raise ConfigError(f"unknown placement(s) {unknown}; known: {', '.join(PLACEMENT_NAMES)}")
    return tuple(wanted)
