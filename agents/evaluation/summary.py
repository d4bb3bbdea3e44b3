"""Side-by-side results of contenders on identical episodes: per-episode pairs and per-policy
summaries (:class:`Comparison`); :mod:`agents.evaluation.report` renders them.

Per policy P: the geomean over episodes of ``avgJCT(P) / avgJCT(R)`` for R = the reference
(PAL by default) and R = the baseline (``packed-sticky`` by default), each with a percentile
bootstrap interval (:mod:`palgym.bench.stats`), the total number of invalid actions (0 for
masked agents; ``ppo`` / ``dqn`` rely on the env's fallback) and the mean episode return.
Nothing here depends on wall-clock time.

Unfinished (truncated) episodes are shown, never hidden: means use the censored average JCT
(unfinished jobs counted up to the truncation time, a lower bound; equal to the average JCT of
a finished episode; PAL_MODEL section 6), and ratios of a pair with an unfinished run censor
both at the pair's earlier end time. With a single resampling unit (one episode, or one trace
under ``bootstrap_unit="trace"``) there is no interval (NaN).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.evaluation.contenders import Contender
from agents.evaluation.defaults import (
    BOOTSTRAP_UNITS,
    DEFAULT_BASELINE,
    DEFAULT_BOOTSTRAP_SEED,
    DEFAULT_CONFIDENCE,
    DEFAULT_REFERENCE,
    DEFAULT_RESAMPLES,
)
from agents.rollout import EpisodeOutcome
from palgym.bench.stats import RatioSummary, bootstrap_geomean, paired_ratios
from palgym.errors import ConfigError
from palgym.sim.metrics import censored_mean_at

EPISODE_COLUMNS: tuple[str, ...] = (
    "trace", "seed", "episode_seed", "episode_hash", "policy", "kind", "num_jobs",
    "num_completed", "truncated", "censored_avg_jct_s", "avg_jct_s", "p50_jct_s", "p99_jct_s",
    "makespan_s", "utilization_allocated", "utilization_effective", "num_invalid_actions",
    "episode_return", "num_steps", "ratio_vs_reference", "ratio_vs_baseline", "truncation_reason",
)
"""Columns of the per-episode CSV (times in s, utilizations as fractions; ``avg_jct_s`` ..
``makespan_s`` over completed jobs; ratios of censored averages)."""
SUMMARY_COLUMNS: tuple[str, ...] = (
    "policy", "kind", "algo", "num_episodes", "num_unfinished", "mean_avg_jct_s", "reference",
    "geomean_ratio_vs_reference", "ci_low_vs_reference", "ci_high_vs_reference", "baseline",
    "geomean_ratio_vs_baseline", "ci_low_vs_baseline", "ci_high_vs_baseline",
    "num_invalid_actions", "mean_episode_return", "model_size_bytes",
)
"""Columns of the summary CSV (one row per policy; ``mean_avg_jct_s``: mean censored average)."""
_MISSING: dict[str, Any] = {"num_jobs": None, "num_completed": None}
_METRICS = ("num_jobs", "num_completed", "avg_jct_s", "p50_jct_s", "p99_jct_s", "makespan_s",
            "utilization_allocated", "utilization_effective", "num_invalid_actions")


@dataclass(frozen=True)
class PolicySummary:
    """One policy over every episode (see the module docstring)."""

    label: str
    kind: str
    algo: str | None
    num_episodes: int
    num_unfinished: int
    mean_avg_jct_s: float
    vs_reference: RatioSummary
    vs_baseline: RatioSummary
    num_invalid_actions: int
    mean_episode_return: float
    model_size_bytes: int | None


@dataclass(frozen=True)
class Comparison:
    """Everything an evaluation produced.

    Attributes:
        env_id: the env.
        contenders: the policies, in table order.
        outcomes: label -> outcomes, in episode order (trace-major, then seed).
        traces: ``{name: content hash}`` of the evaluation traces, in order.
        trace_source: where the traces came from (e.g. ``bundled:test`` or file paths).
        seeds: reset seeds.
        reference: policy of the ``vs reference`` ratios (PAL).
        baseline: policy of the ``vs baseline`` ratios.
        bootstrap: ``{"confidence", "resamples", "seed", "method"}``.
        summaries: label -> summary.
        best_heuristic: the :class:`~agents.evaluation.best.BestHeuristic` choice behind a
            ``best`` contender (chosen on the selection split only), or None.
    """

    env_id: str
    contenders: tuple[Contender, ...]
    outcomes: Mapping[str, Sequence[EpisodeOutcome]]
    traces: Mapping[str, str]
    trace_source: str
    seeds: tuple[int, ...]
    reference: str
    baseline: str
    bootstrap: Mapping[str, Any]
    summaries: Mapping[str, PolicySummary]
    best_heuristic: Any = None

    def source_trace(self, position: int) -> str:
        """The evaluation trace episode ``position`` comes from (episodes are trace-major;
        an episode's own ``trace`` names its job window when there is one)."""
        return list(self.traces)[position // len(self.seeds)]

    def avg_jct(self, label: str) -> np.ndarray:
        """float64 (E,): the policy's censored avg JCT (s) per episode (:func:`avg_jct_s`)."""
        return np.array([avg_jct_s(o) for o in self.outcomes[label]], dtype=np.float64)

    def unfinished(self) -> list[tuple[str, int, EpisodeOutcome]]:
        """``(label, seed, outcome)`` of every episode that did not finish, in table order."""
        return [(c.label, self.seeds[i % len(self.seeds)], o) for c in self.contenders
                for i, o in enumerate(self.outcomes[c.label]) if is_unfinished(o)]


def avg_jct_s(outcome: EpisodeOutcome) -> float:
    """The outcome's censored average JCT (s): its average JCT if it finished, else every job
    counted, an unfinished one up to the truncation time (a lower bound)."""
    return float(outcome.metrics.get("censored_avg_jct_s", outcome.metrics["avg_jct_s"]))


def comparable(a: EpisodeOutcome, b: EpisodeOutcome) -> tuple[float, float]:
    """Average JCTs of two outcomes of one episode, comparable: plain if both finished, else
    both censored at the earlier end time (see :func:`palgym.report.comparable_avg_jct_s`)."""
    if not (is_unfinished(a) or is_unfinished(b)) or not (a.submit_time_s and b.submit_time_s):
        return avg_jct_s(a), avg_jct_s(b)
    horizon = min(float(a.metrics["end_time_s"]), float(b.metrics["end_time_s"]))
    return tuple(censored_mean_at(np.asarray(o.submit_time_s),  # type: ignore[return-value]
                                  np.asarray(o.submit_time_s) + np.asarray(o.jct_s), horizon)
                 for o in (a, b))


def is_unfinished(outcome: EpisodeOutcome) -> bool:
    """True if some measured job did not complete in the episode."""
    metrics = outcome.metrics
    if "truncated" in metrics:
        return bool(metrics["truncated"])
    return bool(metrics.get("num_completed", 0) < metrics.get("num_jobs", 0))


def completed_text(outcome: EpisodeOutcome) -> str:
    """``completed/total`` measured jobs of the outcome."""
    return f"{outcome.metrics.get('num_completed', '?')}/{outcome.metrics.get('num_jobs', '?')}"


def summarise(
    env_id: str,
    contenders: Sequence[Contender],
    outcomes: Mapping[str, Sequence[EpisodeOutcome]],
    traces: Mapping[str, str],
    trace_source: str,
    seeds: Sequence[int],
    *,
    reference: str = DEFAULT_REFERENCE,
    baseline: str = DEFAULT_BASELINE,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    bootstrap_seed: int = DEFAULT_BOOTSTRAP_SEED,
    bootstrap_unit: str = BOOTSTRAP_UNITS[0],
) -> Comparison:
    """Pair every policy with the reference and the baseline on the same episodes.

    ``bootstrap_unit`` ``"episode"`` resamples episodes; ``"trace"`` resamples traces with all
    their seeds (cluster bootstrap, :func:`palgym.bench.stats.bootstrap_geomean` ``groups``).

    Raises:
        KeyError: if ``reference`` or ``baseline`` is not among the outcomes.
        ConfigError: for a non-positive avg JCT (an episode without completed jobs) or an
            unknown ``bootstrap_unit``.
    """
    if bootstrap_unit not in BOOTSTRAP_UNITS:
        raise ConfigError(f"bootstrap unit must be one of {list(BOOTSTRAP_UNITS)}")

    def ratio(label: str, other: str) -> RatioSummary:
        pairs = [comparable(a, b) for a, b in zip(outcomes[label], outcomes[other], strict=True)]
        values, base = [a for a, _ in pairs], [b for _, b in pairs]
        groups = [o.trace for o in outcomes[label]] if bootstrap_unit == "trace" else None
        return bootstrap_geomean(paired_ratios(np.array(values), np.array(base)),
                                 confidence=confidence, num_resamples=resamples,
                                 seed=bootstrap_seed, groups=groups)

    summaries = {}
    for c in contenders:
        runs = outcomes[c.label]
        summaries[c.label] = PolicySummary(
            label=c.label, kind=c.kind, algo=c.algo, num_episodes=len(runs),
            num_unfinished=sum(is_unfinished(o) for o in runs),
            mean_avg_jct_s=float(np.mean([avg_jct_s(o) for o in runs])),
            vs_reference=ratio(c.label, reference), vs_baseline=ratio(c.label, baseline),
            num_invalid_actions=int(sum(int(o.metrics["num_invalid_actions"]) for o in runs)),
            mean_episode_return=float(np.mean([o.episode_return for o in runs])),
            model_size_bytes=c.model_size_bytes,
        )
    bootstrap = {"confidence": confidence, "resamples": resamples, "seed": bootstrap_seed,
                 "unit": bootstrap_unit,
                 "method": "percentile (Efron & Tibshirani 1993, ch. 13), paired by episode"}
    return Comparison(env_id, tuple(contenders), outcomes, dict(traces), trace_source,
                      tuple(int(s) for s in seeds), reference, baseline, bootstrap, summaries)


def episode_rows(comparison: Comparison) -> list[dict[str, Any]]:
    """One dict per (trace, seed, policy) with :data:`EPISODE_COLUMNS`."""
    rows = []
    num_seeds = len(comparison.seeds)
    for c in comparison.contenders:
        for position, o in enumerate(comparison.outcomes[c.label]):
            avg = avg_jct_s(o)
            vs_reference = comparable(o, comparison.outcomes[comparison.reference][position])
            vs_baseline = comparable(o, comparison.outcomes[comparison.baseline][position])
            rows.append({
                "trace": o.trace, "seed": comparison.seeds[position % num_seeds],
                "episode_seed": o.seed, "episode_hash": o.episode_hash, "policy": c.label,
                "kind": c.kind, **{k: o.metrics.get(k, _MISSING.get(k)) for k in _METRICS},
                "truncated": is_unfinished(o), "censored_avg_jct_s": avg,
                "episode_return": o.episode_return, "num_steps": o.num_steps,
                "ratio_vs_reference": vs_reference[0] / vs_reference[1],
                "ratio_vs_baseline": vs_baseline[0] / vs_baseline[1],
                "truncation_reason": str(o.metrics.get("truncation_reason", "")),
            })
    return rows


def summary_rows(comparison: Comparison) -> list[dict[str, Any]]:
    """One dict per policy with :data:`SUMMARY_COLUMNS`."""
    rows = []
    for s in comparison.summaries.values():
        rows.append({
            "policy": s.label, "kind": s.kind, "algo": s.algo or "",
            "num_episodes": s.num_episodes, "num_unfinished": s.num_unfinished,
            "mean_avg_jct_s": s.mean_avg_jct_s,
            "reference": comparison.reference, "geomean_ratio_vs_reference": s.vs_reference.geomean,
            "ci_low_vs_reference": s.vs_reference.ci_low,
            "ci_high_vs_reference": s.vs_reference.ci_high, "baseline": comparison.baseline,
            "geomean_ratio_vs_baseline": s.vs_baseline.geomean,
            "ci_low_vs_baseline": s.vs_baseline.ci_low,
            "ci_high_vs_baseline": s.vs_baseline.ci_high,
            "num_invalid_actions": s.num_invalid_actions,
            "mean_episode_return": s.mean_episode_return,
            "model_size_bytes": "" if s.model_size_bytes is None else s.model_size_bytes,
        })
    return rows
