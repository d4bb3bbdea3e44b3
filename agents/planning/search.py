"""Rollout evaluation of one action on a copy of a palgym env (the planner's search).

The value of action ``a`` in state ``x`` is the total time in system (s) of the episode's
measured jobs when ``a`` is taken in a copy of the env and the base heuristic decides every
later decision: the copy's open round is finished through the env, then the copy's engine
runs the base heuristic directly (:func:`palgym.simulate.drive`, which continues an engine
mid-episode exactly as the env would: the env's heuristics reproduce it bit for bit), either
to the episode's end (exact) or up to a horizon round, after which every unfinished job adds
a cheap estimate of the rest.

Cost of a state (s): ``sum over completed measured jobs of JCT + sum over unfinished ones of
max(now - submit, 0) + estimate``, with ``estimate`` 0 at the episode's end and, at a horizon,
either ``queue`` (default: the unfinished jobs list-scheduled on the cluster's GPU count in the
queue's order, :func:`queue_estimate`, which charges a job that keeps waiting for its wait) or
``ideal`` (each unfinished job's remaining ideal run time, no queueing: myopic, it lets a
search starve long jobs past the horizon).
At the episode's end the cost is the env's objective: ``-return x reward_scale`` (the return
of ``reward="jct"`` is ``-sum(JCT) / reward_scale``; censored JCTs for a truncated episode).

Source: D. P. Bertsekas, J. N. Tsitsiklis and C. Wu, "Rollout algorithms for combinatorial
optimization", Journal of Heuristics 3, 1997 (rollout of a base heuristic; with exact values
the rollout policy is never worse than its base, the policy improvement property).
"""

from __future__ import annotations

import copy
import heapq
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from palgym.errors import ConfigError
from palgym.policies import make_placement
from palgym.policies.base import PlacementPolicy
from palgym.sim.engine import Simulator
from palgym.sim.types import JobStatus
from palgym.simulate import drive

ESTIMATES = ("queue", "ideal")
"""Estimates of the rest of an episode after a rollout's horizon (see :func:`state_cost`)."""

_SHARED_ENV_ATTRIBUTES = ("traces", "memo", "spec", "observation_space", "action_space",
                          "_final", "codec", "config", "cluster", "profile")
"""Env attributes an env copy shares with its original (never written during an episode)."""


@dataclass
class SearchCounters:
    """What the search simulated (summed over decisions).

    Attributes:
        rollouts: actions evaluated by a rollout.
        env_steps: env steps taken on env copies.
        sim_rounds: rounds simulated directly on the copies' engines.
    """

    rollouts: int = 0
    env_steps: int = 0
    sim_rounds: int = 0


def clone_env(env: Any) -> Any:
    """A deep copy of an unwrapped palgym env mid-episode that continues identically.

    The traces, episode memo, spaces, config and the episode's trace, profile and slowdown
    factors are shared (read only during an episode); the engine, the open round, the RNG
    streams and the decision buffers are copied.
    """
    shared: dict[int, Any] = {}
    for name in _SHARED_ENV_ATTRIBUTES:
        if hasattr(env, name):
            value = getattr(env, name)
            shared[id(value)] = value
    context = getattr(env, "episode_context", None)
    if context is not None:
        for value in (context.episode, context.factors, context.pal_orders):
            shared[id(value)] = value
    return copy.deepcopy(env, shared)


class _Horizon:
    """Stops :func:`palgym.simulate.drive` at round ``end_round`` (its ``stall`` argument)."""

    def __init__(self, end_round: int) -> None:
        self.end_round = end_round

    def check(self, sim: Simulator) -> str:
        return "horizon" if sim.round_index >= self.end_round else ""

    def quiet_until(self, sim: Simulator) -> tuple[int, float]:
        """(round index, time in s) before which :meth:`check` returns ``""``: the horizon's
        round, at any time (the compiled loop of :mod:`palgym.driver` runs up to it)."""
        return self.end_round, math.inf


def state_cost(sim: Simulator, estimate: str | None, srtf: bool = True,
               jobs: int | None = None) -> float:
    """Total time in system (s) of the measured jobs so far, plus the rest's estimate.

    Args:
        sim: the engine.
        estimate: None (the episode's end: nothing to add), ``"ideal"`` (each unfinished
            job's remaining ideal run time) or ``"queue"`` (:func:`queue_estimate`).
        srtf: the queue estimate's order is shortest remaining time first (else FIFO).
        jobs: None (every measured job), or n: the measured jobs ``0..n-1`` only (those
            known at a decision; not with ``"queue"``, which schedules all of them).

    Returns:
        The cost in seconds (float64 sums in job order).

    Raises:
        ConfigError: ``estimate`` is not None or one of :data:`ESTIMATES`.
    """
    if jobs is not None and estimate == "queue":
        raise ConfigError("state_cost: the queue estimate covers every measured job")
    count = sim.jobs.num_measured if jobs is None else min(jobs, sim.jobs.num_measured)
    return _time_in_system(sim, count, estimate, srtf)


def _time_in_system(sim: Simulator, count: int, estimate: str | None, srtf: bool) -> float:
    """:func:`state_cost` of the measured jobs ``0..count-1``."""
    jobs = sim.jobs
    measured = slice(0, count)
    submit = jobs.submit_time_s[measured]
    completion = jobs.completion_time_s[measured]
    finished = ~np.isnan(completion)
    cost = float(np.sum(completion[finished] - submit[finished]))
    unfinished = ~finished
    cost += float(np.sum(np.maximum(sim.now_s - submit[unfinished], 0.0)))
    if estimate == "ideal":
        left = (jobs.total_iterations[measured] - jobs.iterations_done[measured])[unfinished]
        cost += float(np.sum(np.maximum(left, 0.0) * jobs.iteration_time_s[measured][unfinished]))
    elif estimate == "queue":
        cost += queue_estimate(sim, srtf)
    elif estimate is not None:
        raise ConfigError(f"estimate must be one of {list(ESTIMATES)} or None, got {estimate!r}")
    return cost


def queue_estimate(sim: Simulator, srtf: bool) -> float:
    """Estimated time (s) the unfinished measured jobs still spend in the system, by list
    scheduling the rest on the cluster's GPU count (no rounds, nodes or variability).

    Running jobs keep their GPUs for ``left iterations x`` their current effective iteration
    time; queued jobs and future measured arrivals (at their submit time) start, strictly in
    queue order (SRTF: remaining ideal run time ascending, else submit time; ties by job
    index), when the head's GPU count is free, and run their remaining ideal run time
    ``left iterations x T_it``. A job's share is ``completion - max(now, submit)``.

    Returns:
        Sum over the unfinished measured jobs (s).
    """
    jobs = sim.jobs
    size, now = jobs.size, sim.now_s
    status = jobs.status[:size]
    left = np.maximum(jobs.total_iterations[:size] - jobs.iterations_done[:size], 0.0)
    ideal = left * jobs.iteration_time_s[:size]
    gpus = jobs.num_gpus[:size]
    running = status == JobStatus.RUNNING
    finishing = [(now + float(left[j] * jobs.iteration_time_effective_s[j]), int(j))
                 for j in np.flatnonzero(running)]
    heapq.heapify(finishing)
    free = int(sim.job_of_gpu.size - gpus[running].sum())
    waiting = (status == JobStatus.QUEUED) | (
        (status == JobStatus.PENDING) & (np.arange(size) < jobs.num_measured))
    arrivals = sorted((max(float(jobs.submit_time_s[j]), now), int(j))
                      for j in np.flatnonzero(waiting))
    queue: list[tuple[float, int]] = []
    completion: dict[int, float] = {int(j): t for t, j in finishing}
    clock, next_arrival = now, 0
    while next_arrival < len(arrivals) or queue or finishing:
        while next_arrival < len(arrivals) and arrivals[next_arrival][0] <= clock:
            job = arrivals[next_arrival][1]
            heapq.heappush(queue, (float(ideal[job]) if srtf else arrivals[next_arrival][0],
                                   job))
            next_arrival += 1
        while queue and gpus[queue[0][1]] <= free:
            _, job = heapq.heappop(queue)
            free -= int(gpus[job])
            completion[job] = clock + float(ideal[job])
            heapq.heappush(finishing, (completion[job], job))
        times = [finishing[0][0]] if finishing else []
        times += [arrivals[next_arrival][0]] if next_arrival < len(arrivals) else []
        if not times:
            break  # the head can never fit (more GPUs than the cluster): left unfinished
        clock = min(times)
        while finishing and finishing[0][0] <= clock:
            free += int(gpus[heapq.heappop(finishing)[1]])
    submit = jobs.submit_time_s
    return float(sum(completion.get(j, clock) - max(now, float(submit[j]))
                     for j in range(jobs.num_measured) if status[j] != JobStatus.COMPLETED))


class BaseRollout:
    """Evaluates actions by rollouts of a base placement heuristic in an env's episode.

    Args:
        base: placement name of the base heuristic (its queue order is the env's).
        horizon: rounds simulated after the decision's round (None: to the episode's end).
        counters: where the simulated work is counted.
        estimate: the rest's estimate after the horizon (:data:`ESTIMATES`).

    Raises:
        ConfigError: ``estimate`` is not one of :data:`ESTIMATES`.
    """

    def __init__(self, base: str, horizon: int | None, counters: SearchCounters,
                 estimate: str = "queue") -> None:
        if estimate not in ESTIMATES:
            raise ConfigError(f"estimate must be one of {list(ESTIMATES)}, got {estimate!r}")
        self.base = base
        self.horizon = horizon
        self.estimate = estimate
        self.counters = counters
        self._placement: PlacementPolicy | None = None
        self._episode: object = None

    def placement(self, env: Any) -> PlacementPolicy:
        """The base placement for the env's episode (made once per episode)."""
        if self._episode is not env.episode:
            self._placement = make_placement(self.base, env.episode_context.factors, env.config)
            self._episode = env.episode
        assert self._placement is not None
        return self._placement

    def end_round(self, env: Any) -> int | None:
        """The horizon's round for a decision taken now in ``env`` (None: no horizon)."""
        if self.horizon is None:
            return None
        return int(env.simulator.round_index) + self.horizon

    def step(self, env: Any, action: int) -> bool:
        """Step an env copy; True when its episode ended."""
        _, _, terminated, truncated, _ = env.step(action)
        self.counters.env_steps += 1
        return bool(terminated or truncated)

    def finish(self, env: Any, end_round: int | None) -> float:
        """Finish the copy ``env`` with the base heuristic (to ``end_round``); its cost."""
        ended = bool(env.rounds.over)
        while not ended and env.rounds.round.acted:  # the open round, through the env
            ended = self.step(env, env.heuristic_action(self.base, check=False))
        sim = env.rounds.sim
        if not ended and (end_round is None or sim.round_index < end_round):
            start = sim.round_index
            drive(sim, env.order, self.placement(env), env.episode_context.sampler,
                  stall=None if end_round is None else _Horizon(end_round))  # type: ignore[arg-type]
            self.counters.sim_rounds += sim.round_index - start
        return state_cost(sim, None if sim.ended else self.estimate,
                          srtf=env.order.name in ("srtf", "srsf"))

    def value(self, env: Any, action: int, end_round: int | None) -> float:
        """Cost (s) of taking ``action`` now in ``env`` and following the base afterwards."""
        self.counters.rollouts += 1
        clone = clone_env(env)
        if self.step(clone, action):
            return state_cost(clone.simulator, None)
        return self.finish(clone, end_round)
