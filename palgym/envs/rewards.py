"""Reward functions of the cluster env. Each returns named terms; the reward is their sum.

Every reward is a difference of a cumulative episode quantity between two decision steps, so an
episode's return telescopes to a closed form:

- ``jct``: -(time in system of measured jobs) / reward_scale; return = -sum(JCT) / reward_scale.
- ``slowdown``: the same with each job weighted by 1 / its ideal duration and divided by J;
  return = -mean(JCT / ideal duration) / reward_scale x 3600.
- ``makespan``: -(elapsed time since the first measured submission while measured jobs remain)
  / reward_scale; return = -makespan / reward_scale.
- ``utilization``: + effective GPU-rounds / G / rounds scale: the return is the effective
  utilization x counted rounds / reward_scale x R.
- ``relative``: ``jct`` minus the same quantity of a baseline policy run on the identical
  episode; return = (sum JCT(baseline) - sum JCT(agent)) / reward_scale.

Source: docs/ENV.md "Reward"; JCT and utilization as in PAL, SC24, Section V-A.
"""

from __future__ import annotations

import numpy as np

from palgym._numba import AVAILABLE, njit
from palgym.errors import ConfigError
from palgym.sim.engine import Simulator
from palgym.sim.summation import pairwise_sum
from palgym.sim.types import FloatArray
from palgym.simulate import final_metrics

REWARD_NAMES: tuple[str, ...] = ("jct", "slowdown", "makespan", "utilization", "relative")


def system_time_s(
    submit_s: FloatArray, completion_s: FloatArray, now_s: float, weights: FloatArray | None = None
) -> float:
    """Sum over jobs of time spent in the system up to ``now_s`` (s), optionally weighted.

    A job counts from its submit time to its completion (or ``now_s`` while not completed).
    Computed by one compiled call with numba (bit-identical to :func:`system_time_reference`,
    numpy's pairwise summation included), else by the reference.

    Args:
        submit_s: float64 (J,), contiguous.
        completion_s: float64 (J,), contiguous, NaN while not completed.
        now_s: the time up to which to count.
        weights: optional float64 (J,), contiguous.
    """
    if not AVAILABLE:
        return system_time_reference(submit_s, completion_s, now_s, weights)
    weighted = weights is not None
    return float(_system_time(submit_s, completion_s, float(now_s),
                              weights if weighted else submit_s, weighted))


@njit(cache=True, nogil=True)
def _system_time(submit_s, completion_s, now_s, weights, weighted):  # type: ignore[no-untyped-def]
    size = submit_s.size
    spans = np.empty(size)
    for i in range(size):
        completion = completion_s[i]
        end = now_s if np.isnan(completion) else min(completion, now_s)
        span = max(end - submit_s[i], 0.0)
        spans[i] = span * weights[i] if weighted else span
    return 0.0 + pairwise_sum(spans, size)


def system_time_reference(
    submit_s: FloatArray, completion_s: FloatArray, now_s: float, weights: FloatArray | None = None
) -> float:
    """:func:`system_time_s` in numpy."""
    end = np.where(np.isnan(completion_s), now_s, np.minimum(completion_s, now_s))
    spans = np.maximum(end - submit_s, 0.0)
    if weights is not None:
        spans = spans * weights
    return float(spans.sum())


class RewardTracker:
    """Turns engine progress into per-step rewards (see module docstring).

    Args:
        name: one of :data:`REWARD_NAMES`.
        reward_scale: divisor of every term (s, or s-weighted).
        baseline_completion_s: float64 (J,), completions of the baseline (``relative`` only).

    Raises:
        ConfigError: ``name`` is not one of :data:`REWARD_NAMES`, or ``relative`` without
            ``baseline_completion_s``.
    """

    def __init__(
        self, name: str, reward_scale: float, baseline_completion_s: FloatArray | None = None
    ) -> None:
        if name not in REWARD_NAMES:
            raise ConfigError(f"reward must be one of {list(REWARD_NAMES)}, got {name!r}")
        if name == "relative" and baseline_completion_s is None:
            raise ConfigError("reward 'relative' needs the baseline's completion times")
        self.name = name
        self.scale = reward_scale
        self.baseline = baseline_completion_s
        self._last: dict[str, float] = {}

    def reset(self, sim: Simulator) -> None:
        """Start an episode at the engine's current state."""
        self._last = self._cumulative(sim)

    def step(self, sim: Simulator) -> dict[str, float]:
        """Named reward terms since the previous call."""
        current = self._cumulative(sim)
        terms = {k: (current[k] - self._last[k]) / self.scale for k in current}
        self._last = current
        return terms

    def add_step(self, sim: Simulator, totals: dict[str, float]) -> None:
        """Add the terms since the previous call to ``totals`` (by name)."""
        for name, value in self.step(sim).items():
            totals[name] = totals.get(name, 0.0) + value

    def _cumulative(self, sim: Simulator) -> dict[str, float]:
        jobs = sim.jobs
        measured = slice(0, jobs.num_measured)
        submit = jobs.submit_time_s[measured]
        completion = jobs.completion_time_s[measured]
        now = sim.now_s
        if self.name == "jct":
            return {"jct": -system_time_s(submit, completion, now)}
        if self.name == "slowdown":
            ideal = jobs.total_iterations[measured] * jobs.iteration_time_s[measured]
            weights = 3600.0 / (ideal * jobs.num_measured)
            return {"slowdown": -system_time_s(submit, completion, now, weights)}
        if self.name == "makespan":
            first = float(submit.min())
            end = now if np.isnan(completion).any() else float(np.nanmax(completion))
            return {"makespan": -max(end - first, 0.0)}
        if self.name == "utilization":
            usage = sim.usage_gpu_rounds()
            return {"utilization": usage[1] / sim.cluster.num_gpus * sim.config.round_duration_s}
        assert self.baseline is not None
        # At the end, the baseline's remaining time is credited at once (it may finish later).
        baseline_now = float("inf") if sim.done else now
        return {
            "jct": -system_time_s(submit, completion, now),
            "baseline_jct": system_time_s(submit, self.baseline, baseline_now),
        }


def episode_metrics(sim: Simulator, num_invalid_actions: int) -> dict[str, float | int | str]:
    """The final ``info["episode_metrics"]`` of an episode (times in s, utilizations as
    fractions; see :class:`palgym.sim.metrics.EpisodeMetrics`).

    JCT statistics (``avg_jct_s``, ``p50_jct_s``, ``p99_jct_s``) and ``makespan_s`` cover the
    ``num_completed`` of ``num_jobs`` measured jobs that completed (NaN when none did);
    ``censored_avg_jct_s`` averages over all measured jobs, an unfinished job counted from its
    submission to ``end_time_s`` (a lower bound of its JCT; equal to ``avg_jct_s`` when every
    job completed); ``truncated`` and ``truncation_reason`` say whether and why it stopped
    early (PAL_MODEL section 6, "Unfinished episodes").
    """
    metrics = final_metrics(sim)
    return {
        "avg_jct_s": metrics.avg_jct_s, "p50_jct_s": metrics.p50_jct_s,
        "p99_jct_s": metrics.p99_jct_s, "makespan_s": metrics.makespan_s,
        "utilization_allocated": metrics.utilization_allocated,
        "utilization_effective": metrics.utilization_effective,
        "num_jobs": metrics.num_jobs, "num_completed": metrics.num_completed,
        "num_unfinished": metrics.num_jobs - metrics.num_completed,
        "truncated": metrics.truncated, "truncation_reason": metrics.truncation_reason,
        "censored_avg_jct_s": metrics.censored_avg_jct_s, "end_time_s": metrics.end_time_s,
        "num_rounds": int(sim.round_index),
        "num_invalid_actions": num_invalid_actions,
    }


def episode_note(metrics: dict[str, float | int | str]) -> str:
    """One sentence on what the final metrics cover (``info["episode_note"]``)."""
    done, total = int(metrics["num_completed"]), int(metrics["num_jobs"])
    if done == total:
        return f"all {total} measured jobs completed"
    cover = "are NaN (no job completed)" if done == 0 else f"cover the {done} completed jobs only"
    return (
        f"truncated after {metrics['num_rounds']} rounds with {total - done} of {total} "
        f"measured jobs unfinished: avg/p50/p99_jct_s and makespan_s {cover}; "
        "censored_avg_jct_s counts unfinished jobs up to the end of the episode"
    )
