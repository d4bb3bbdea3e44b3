"""Training a :class:`~agents.priority.order.LinearPriorityOrder` by the cross-entropy method on
whole training episodes, the iterate kept being the one best on the validation episodes.

Objective of weights w (lower is better): the mean over episodes of ln(avg JCT under w /
avg JCT under the reference rule), each average over the episode's completed jobs, plus
:data:`UNFINISHED_PENALTY` for an episode that leaves a measured job unfinished; a run whose
jobs' time in the system reaches :data:`STOP_RATIO` times the reference's total JCT is stopped
there and scored ln STOP_RATIO plus the penalty. The
cross-entropy method (Rubinstein & Kroese, *The Cross-Entropy Method*, 2004; for policies:
Szita & Lorincz, Neural Computation 18, 2006) samples ``population`` weight vectors from a
diagonal Gaussian (seeded ``numpy`` generator), keeps the ``elite`` of least objective and
refits the Gaussian to them, its standard deviations kept above ``noise_floor``. The first
mean is ``start`` (default SRSF's weights, :data:`~agents.priority.order.SRSF_WEIGHTS`; the
committed orders start at the validation-chosen hand rule of the family,
:class:`agents.priority.pretrained.ResponseRatio`, so that what training adds is measured
against it). After every iteration
the new mean is scored on the validation episodes; the mean of best validation objective
(iteration 0: the start) is the result, so the validation split chooses, never the test split.
"""

from __future__ import annotations

import math
import multiprocessing
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agents.priority.order import FEATURES, SRSF_WEIGHTS, LinearPriorityOrder
from agents.selection.runs import LabelledEpisode
from palgym.policies.durations import CLAIRVOYANT, Durations
from palgym.sim.config import PolicyOptions, RemainingTime
from palgym.sim.types import IntArray
from palgym.sim.views import SimView
from palgym.simulate import run_episode

FLOOR_RULE = "fifo/pal+easy"
"""The rule a starvation floor switches to (the aging guards' and the selectors' floor)."""
UNFINISHED_PENALTY = 1.0
"""Added to an episode's log ratio when it leaves a measured job unfinished."""
STOP_RATIO = 1.5
"""A training run stops once its jobs' time in the system reaches this multiple of the
reference's total JCT on the episode; its log ratio is then ln STOP_RATIO plus
:data:`UNFINISHED_PENALTY` (it can only be worse than the reference by that much or more; a
run that starves jobs would otherwise take most of the training's time)."""
CHECK_ROUNDS = 20
"""Rounds between two checks of a training run's time in the system."""
DEFAULT_STD: tuple[float, ...] = (0.3, 0.3, 0.5, 0.3, 0.5)
"""The first Gaussian's standard deviations, per feature (:data:`FEATURES`)."""

_EPISODES: list[LabelledEpisode] = []
_PLACEMENT = ""


class _StoppedError(Exception):
    """A run's jobs have already spent more time in the system than its limit."""


class CandidateOrder:
    """The order a training run plays under a starvation floor (an aging guard runs on named
    rules: :mod:`palgym.guards`): a registered queue order whose weights are the class's
    :attr:`weights`, set before each run (runs are sequential within a process)."""

    name = "linear-priority-candidate"
    static = False
    weights: tuple[float, ...] = SRSF_WEIGHTS

    def __init__(self, durations: Durations = CLAIRVOYANT,
                 options: PolicyOptions | None = None) -> None:
        remaining = RemainingTime.IDEAL if options is None else options.srtf_remaining
        self._order = LinearPriorityOrder(type(self).weights, durations, remaining,
                                          name=self.name)

    def order(self, sim: SimView) -> IntArray:
        """Active job indices by (priority, key)."""
        return self._order.order(sim)


def floor_guard(placement: str, hours: float) -> str:
    """The guard placement of a floor: ``PLACEMENT+age=Hh:fifo/pal+easy`` (FIFO with EASY
    backfilling once a job has queued ``hours``: :class:`agents.selection.selector.
    StarvationFloor`'s rule)."""
    return f"{placement}+age={hours:g}h:{FLOOR_RULE}"


def run_weights(episode: LabelledEpisode, placement: str, weights: Sequence[float],
                limit_s: float = math.inf, floor_hours: float | None = None
                ) -> tuple[float, int]:
    """(avg JCT in s over the completed jobs, unfinished measured jobs) of ``episode`` under
    ``placement`` with the order of ``weights`` (its remaining-time rule the episode's).

    ``limit_s``: the run stops once its measured jobs' time in the system so far
    (:func:`agents.planning.search.state_cost`, a lower bound of their total JCT) reaches it,
    checked every :data:`CHECK_ROUNDS` rounds, and returns ``(nan, -1)``: its average JCT is
    then at least ``limit_s`` / the number of jobs. ``floor_hours``: the order runs under
    that starvation floor (:func:`floor_guard`; no limit then: the floor bounds a job's wait).
    """
    from agents.planning.search import state_cost

    if floor_hours is not None:
        from palgym.policies.loader import queue_order_name

        CandidateOrder.weights = tuple(float(w) for w in weights)
        name = queue_order_name(f"{__name__}:CandidateOrder")
        metrics = run_episode(episode.episode, floor_guard(placement, floor_hours), name,
                              durations=episode.durations).metrics
        return metrics.avg_jct_s, metrics.num_jobs - metrics.num_completed

    def check(sim: Any) -> int:
        if state_cost(sim, None) >= limit_s:
            raise _StoppedError
        return int(sim.round_index) + CHECK_ROUNDS

    order = LinearPriorityOrder(tuple(float(w) for w in weights), episode.durations,
                                episode.episode.config.srtf_remaining)
    try:
        metrics = run_episode(episode.episode, placement, order, durations=episode.durations,
                              progress=None if math.isinf(limit_s) else check).metrics
    except _StoppedError:
        return math.nan, -1
    return metrics.avg_jct_s, metrics.num_jobs - metrics.num_completed


def _run(job: tuple[int, tuple[float, ...], float, float | None]) -> tuple[float, int]:
    index, weights, limit_s, floor_hours = job
    return run_weights(_EPISODES[index], _PLACEMENT, weights, limit_s, floor_hours)


def score(episodes: Sequence[LabelledEpisode], placement: str,
          candidates: Sequence[Sequence[float]], reference_avg_jct_s: np.ndarray,
          workers: int = 1, floor_hours: float | None = None) -> np.ndarray:
    """float64 (len(candidates),): each candidate's objective (module docstring) on
    ``episodes`` (``reference_avg_jct_s``: float64 (len(episodes),), the reference rule's avg
    JCT per episode, s), on ``workers`` forked processes, under the starvation floor of
    ``floor_hours`` if given (:func:`run_weights`)."""
    global _EPISODES, _PLACEMENT
    _EPISODES, _PLACEMENT = list(episodes), placement
    limits = [STOP_RATIO * r * e.episode.trace.num_jobs
              for r, e in zip(reference_avg_jct_s, episodes, strict=True)]
    jobs = [(i, tuple(map(float, c)), limits[i], floor_hours) for c in candidates
            for i in range(len(episodes))]
    if workers > 1:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            rows = pool.map(_run, jobs, chunksize=1)
    else:
        rows = [_run(job) for job in jobs]
    out = np.array([r[0] for r in rows], dtype=np.float64).reshape(len(candidates), -1)
    unfinished = np.array([r[1] != 0 for r in rows]).reshape(len(candidates), -1)
    stopped = np.array([r[1] < 0 for r in rows]).reshape(len(candidates), -1)
    logs = np.where(stopped, math.log(STOP_RATIO), np.log(out / reference_avg_jct_s))
    logs = logs + UNFINISHED_PENALTY * unfinished
    return np.asarray(logs.mean(axis=1), dtype=np.float64)


@dataclass
class TrainingLog:
    """Per iteration (0: the start): the mean's weights, the train objective of the best
    sample, the validation objective of the mean; and the iteration kept."""

    means: list[list[float]] = field(default_factory=list)
    train_best: list[float] = field(default_factory=list)
    validation: list[float] = field(default_factory=list)
    kept: int = 0
    wall_s: float = 0.0


def train_cem(score_train: Callable[[np.ndarray], np.ndarray],
              score_validation: Callable[[np.ndarray], np.ndarray], *, iterations: int,
              population: int, elite: int, seed: int,
              start: Sequence[float] = SRSF_WEIGHTS, std: Sequence[float] = DEFAULT_STD,
              noise_floor: float = 0.05,
              progress: Callable[[str], None] | None = None) -> tuple[np.ndarray, TrainingLog]:
    """The cross-entropy method (module docstring). ``score_train`` / ``score_validation``
    map float64 (n, len(FEATURES)) weights to float64 (n,) objectives.

    Returns:
        (float64 (len(FEATURES),) the kept weights, the log).

    Raises:
        ValueError: for ``elite`` not in [1, population] or non-positive counts.
    """
    if iterations < 1 or population < 1 or not 1 <= elite <= population:
        raise ValueError("iterations >= 1, population >= 1 and 1 <= elite <= population")
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    mean = np.array(start, dtype=np.float64)
    sd = np.array(std, dtype=np.float64)
    log = TrainingLog()
    best = mean.copy()
    log.means.append(mean.tolist())
    log.train_best.append(math.nan)
    log.validation.append(float(score_validation(mean[None, :])[0]))
    for it in range(1, iterations + 1):
        samples = mean + sd * rng.standard_normal((population, len(FEATURES)))
        values = score_train(samples)
        chosen = samples[np.argsort(values, kind="stable")[:elite]]
        mean = chosen.mean(axis=0)
        sd = np.maximum(chosen.std(axis=0), noise_floor)
        log.means.append(mean.tolist())
        log.train_best.append(float(values.min()))
        log.validation.append(float(score_validation(mean[None, :])[0]))
        if log.validation[-1] < log.validation[log.kept]:
            log.kept, best = it, mean.copy()
        if progress is not None:
            progress(f"iteration {it}: train best {values.min():+.4f}, validation of the mean "
                     f"{log.validation[-1]:+.4f} (kept: iteration {log.kept})")
    log.wall_s = time.perf_counter() - started
    return best, log
