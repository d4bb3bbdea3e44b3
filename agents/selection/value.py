"""A learned value for the rollout search cut at a horizon
(:class:`agents.selection.search.RolloutSearch` with ``rounds``/``H`` and ``estimate=value``):
the time the known jobs still spend in the system, from the engine at a rollout's cut,
linear in features of those jobs and fitted on rollouts played to the end.

Training states (:func:`collect`): on each training episode the base plays; at each ask with
probability ``p`` the cut search's candidates (the field's rules, the base's choice first,
those with the same GPUs now skipped) are rolled out to their cut. There the state's features
(:func:`state_features`) are recorded, and a copy is played by the base to the end of the
known jobs: the *rest* the value must estimate (:class:`Candidate`).

Fit (:func:`fit_value`): ridge least squares on the rests and, weighted ``pair_weight``, on
their differences from the base's candidate at the same ask; the search compares candidates,
so the differences are what it needs right (truncated rollout with a terminal cost
approximation: D. P. Bertsekas, *Rollout, Policy Iteration, and Distributed Reinforcement
Learning*, 2020). :func:`regret` scores an estimate on held-out asks.

``benchmarks/value_search.py`` trains and measures it on palgym-bench-v2 (docs/HEADROOM.md,
"Learned value plus a cut search").
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from palgym.errors import ConfigError, PalgymError
from palgym.policies.base import QueueOrder
from palgym.rule_selection import Selector
from palgym.sim.engine import Simulator

FEATURES = ("ideal_h", "effective_h", "running", "queued", "queued_ideal_h", "queued_wait_h",
            "queued_x_running_work", "queued_wide_wait_h", "age_h", "jobs_x_work_h",
            "jobs_x_free")
"""The state's features (:func:`state_features`), in the value's weights' order."""


def state_features(sim: Simulator, n: int, order: QueueOrder) -> np.ndarray:
    """float64 (len(FEATURES),): the features of the known unfinished jobs (rows ``0..n-1``
    queued or running) of the engine ``sim``, in hours or counts: their remaining ideal run
    time (iterations left x T_it) summed; the same at the running jobs' current speed; how
    many run and how many queue; the queued ones' remaining ideal time; their *wait proxy*,
    the queued GPU-work ahead of each in ``order`` (the base's queue order) over the cluster's
    GPUs, summed; the queued count times the running jobs' GPU-work left over the GPUs; the
    wait proxy weighted by each job's GPU share; their time since submission; the jobs times
    all their GPU-work over the GPUs; the jobs times the free GPUs' share."""
    from palgym.sim.types import JobStatus

    jobs, gpus_total = sim.jobs, float(sim.job_of_gpu.size)
    status = jobs.status[:n]
    idx = np.flatnonzero((status == JobStatus.RUNNING) | (status == JobStatus.QUEUED))
    if idx.size == 0:
        return np.zeros(len(FEATURES))
    left = np.maximum(jobs.total_iterations[idx] - jobs.iterations_done[idx], 0.0)
    ideal = left * jobs.iteration_time_s[idx] / 3600.0
    running = jobs.status[idx] == JobStatus.RUNNING
    effective = np.where(running, left * jobs.iteration_time_effective_s[idx] / 3600.0, ideal)
    share = jobs.num_gpus[idx] / gpus_total
    queued = ~running
    running_work = float(np.sum((effective * share)[running]))
    wait = np.zeros(int(queued.sum()))
    if wait.size:
        rank = np.empty(jobs.size, np.int64)
        active = order.order(sim.view())
        rank[active] = np.arange(active.size)
        by_rank = np.argsort(rank[idx[queued]], kind="stable")
        work = (ideal * share)[queued][by_rank]
        wait[by_rank] = np.cumsum(work) - work
    count = float(idx.size)
    free = float(np.sum(sim.job_of_gpu < 0)) / gpus_total
    age = (sim.now_s - jobs.submit_time_s[idx]) / 3600.0
    return np.array([ideal.sum(), effective.sum(), running.sum(), queued.sum(),
                     ideal[queued].sum(), wait.sum(), queued.sum() * running_work,
                     float(wait @ share[queued]), age.sum(),
                     count * float(np.sum(ideal * share)), count * free])


class Candidate(NamedTuple):
    """One candidate of a sampled ask: its rollout's cost at the horizon so far (s), the
    rest played by the base to the end (s), the features at the horizon (None: the rollout
    ended the known jobs before its horizon, so its cost is exact) and the ``ideal`` estimate
    of the rest there (s)."""

    partial_s: float
    rest_s: float
    features: np.ndarray | None
    ideal_rest_s: float


class Ask(NamedTuple):
    """A sampled ask of a training episode: its candidates, the base's choice first."""

    episode: str
    candidates: list[Candidate]


class _Recorder:
    """The cut search's value while states are collected: records the features, plays a copy
    to the end with the base, returns the exact rest (so the costs it gives are exact)."""

    def __init__(self, base: Selector, order_rule: int) -> None:
        self.base, self.order_rule, self.context = base, order_rule, None
        self.pending: list[tuple[float, Candidate]] = []
        self.rules: tuple[Any, Any] = ((), ())

    def start(self, context: Any) -> None:
        """Bind to an episode: copies of its rules, the real ones undisturbed."""
        self.context, self.rules = context, copy.deepcopy((context.orders, context.placements))

    def __call__(self, sim: Any, n: int) -> float:
        from agents.planning.search import state_cost
        from agents.selection.engine_copies import copy_engine
        from palgym.rule_selection import drive_selector

        context, (orders, placements) = self.context, self.rules
        assert context is not None
        features = state_features(sim, n, orders[self.order_rule])
        partial = state_cost(sim, None, jobs=n)
        ideal = state_cost(sim, "ideal", jobs=n) - partial
        end, sampler = copy_engine(sim, context.sampler)
        drive_selector(end, orders, placements, self.base, sampler,
                       context.durations, _KnownDone())
        rest = state_cost(end, None, jobs=n) - partial
        self.pending.append((partial + rest, Candidate(partial, rest, features, ideal)))
        return rest


class _KnownDone:
    """Stops a copy once every known job has completed."""

    def check(self, sim: Any) -> str:
        return "done" if sim.active_jobs().size == 0 else ""


class _Collector:
    """The base as a selector; at sampled asks it also runs the cut search with a
    :class:`_Recorder` and keeps the candidates (module docstring, "Training states")."""

    def __init__(self, label: str, rules: Sequence[str], base: Selector, order_rule: int,
                 H: int, rounds: int, p: float,  # noqa: N803
                 rng: np.random.Generator, budget: int | None = None) -> None:
        from agents.selection.search import RolloutSearch

        self.recorder = _Recorder(base, order_rule)
        self.search = RolloutSearch(rules, base, H, estimate=self.recorder,
                                    arrivals="known", rounds=rounds, budget=budget)
        self.label, self.p, self.rng = label, p, rng
        self.asks: list[Ask] = []

    def start(self, context: Any) -> None:
        self.recorder.start(context)
        self.search.start(context)

    def __call__(self, features: np.ndarray, view: Any) -> int:
        chosen = self.search.base_choice(features, view)
        if self.rng.random() < self.p:
            self.recorder.pending = []
            self.search(features, view)
            costs = self.search.stats.costs[-1]
            if len(costs) > 1:
                ask = Ask(self.label, [])
                pending = list(self.recorder.pending)
                for _, cost in costs:
                    if pending and pending[0][0] == cost:
                        ask.candidates.append(pending.pop(0)[1])
                    else:  # ended before its horizon: exact
                        ask.candidates.append(Candidate(cost, 0.0, None, 0.0))
                self.asks.append(ask)
        return chosen


def collect(episodes: Sequence[Any], rules: Sequence[str], base: Selector, order_rule: int,
            H: int, rounds: int, p: float, seed: int,  # noqa: N803
            progress: Callable[[int, str, int], None] | None = None,
            budget: int | None = None) -> list[Ask]:
    """The sampled asks of ``episodes`` (module docstring, "Training states").

    Args:
        episodes: each with ``label``, ``episode`` (:class:`palgym.simulate.Episode`) and
            ``durations`` (:func:`agents.selection.runs.split_episodes`' items).
        rules, base: the search's field and base (:class:`RolloutSearch`).
        order_rule: the index in ``rules`` of the rule whose queue order the features use
            (the base's).
        H, rounds, budget: the cut (:class:`RolloutSearch`).
        p: the share of asks sampled, each with probability ``p``.
        seed: the sampling's seed; episode ``i`` draws from ``default_rng([seed, i])``.
        progress: called after each episode with (episodes done, its label, asks so far).

    Returns:
        The sampled asks with more than one candidate, in episode order.
    """
    from palgym.rule_selection import run_selected_episode

    asks: list[Ask] = []
    for index, episode in enumerate(episodes):
        collector = _Collector(episode.label, rules, base, order_rule, H, rounds, p,
                               np.random.default_rng([seed, index]), budget)
        run_selected_episode(episode.episode, rules, collector, episode.durations)
        asks += collector.asks
        if progress is not None:
            progress(index + 1, episode.label, len(asks))
    return asks


def fit_value(asks: list[Ask], pair_weight: float, ridge: float) -> np.ndarray:
    """float64 (len(FEATURES),): the value's weights (s per feature unit), by ridge least
    squares on the recorded rests and, weighted ``pair_weight``, on their differences from
    the base's candidate (module docstring, step 2).

    Raises:
        PalgymError: if no candidate reached its horizon (nothing to fit).

    Source: ridge regression (A. E. Hoerl and R. W. Kennard, Technometrics 12, 1970) on the
    features scaled by their largest magnitude.
    """
    rows, targets = [], []
    for ask in asks:
        cut = [c for c in ask.candidates if c.features is not None]
        rows += [c.features for c in cut]
        targets += [c.rest_s for c in cut]
        first = ask.candidates[0]
        if first.features is not None:
            for other in cut[1:]:
                rows.append(pair_weight * (other.features - first.features))
                targets.append(pair_weight * (other.rest_s - first.rest_s))
    if not rows:
        raise PalgymError("no sampled candidate reached its horizon: sample more asks (p) or "
                          "cut later (rounds, H)")
    x, y = np.asarray(rows), np.asarray(targets)
    scale = np.maximum(np.abs(x).max(axis=0), 1e-9)
    xs = x / scale
    w: np.ndarray = np.linalg.solve(xs.T @ xs + ridge * np.eye(x.shape[1]), xs.T @ y)
    return np.asarray(w / scale, np.float64)


def regret(asks: list[Ask], how: str, weights: np.ndarray | None = None) -> float:
    """Mean over ``asks`` of (true cost of the candidate ``how`` picks) / (least true cost)
    - 1: ``base`` (the base's choice), ``ideal`` or ``value`` (``weights``)."""
    out = []
    for ask in asks:
        true = np.array([c.partial_s + c.rest_s for c in ask.candidates])
        if how == "base":
            pick = 0
        else:
            est = np.array([c.partial_s + (c.rest_s if c.features is None else
                                           c.ideal_rest_s if how == "ideal" else
                                           float(c.features @ weights))
                            for c in ask.candidates])
            pick = int(np.argmin(est))
        out.append(true[pick] / true.min() - 1.0)
    return float(np.mean(out)) if out else math.nan


def check_weights(weights: Any) -> np.ndarray:
    """float64 (len(FEATURES),): ``weights`` as a value's weights.

    Raises:
        ConfigError: for weights of another length or not finite.
    """
    w = np.asarray(weights, np.float64)
    if w.shape != (len(FEATURES),) or not np.all(np.isfinite(w)):
        raise ConfigError(f"value weights: {len(FEATURES)} finite numbers "
                          f"({', '.join(FEATURES)}), got {weights!r}")
    return w


class LinearValue:
    """A learned value (:data:`agents.selection.search.Value`): ``state_features . w`` (s)
    under ``order`` (the base's queue order), at least 0.

    Args:
        weights: float (len(FEATURES),), from :func:`fit_value`.
        order: the queue order the features rank the queued jobs by.

    Raises:
        ConfigError: for weights of another length or not finite.
    """

    def __init__(self, weights: np.ndarray, order: QueueOrder) -> None:
        self.weights, self.order = check_weights(weights), order

    def __call__(self, sim: Simulator, n: int) -> float:
        return max(float(state_features(sim, n, self.order) @ self.weights), 0.0)


__all__ = ["FEATURES", "Ask", "Candidate", "LinearValue", "check_weights", "collect",
           "fit_value", "regret", "state_features"]
