"""Heuristics on a comparison's episodes, simulated directly (the fast path of a comparison).

:func:`run_heuristics` is the one simulator path: every heuristic contender on every
:class:`SimEpisode`, through a :data:`palgym.sweep.Runner`. The episodes come from one of two
sources: :func:`env_episodes` (drawn by the env, for a side-by-side comparison) or
:func:`seed_episodes` (one per trace at the episode seed, without the env: the heuristic
table, the comparison with no learned contender).

A heuristic acting through the env reproduces :func:`palgym.run_episode` bit for bit
(``tests/test_agents.py``, parity), so a comparison may run heuristics on the simulator alone:
the env only draws each episode (``reset(seed=s, options={"trace": i})``), the episode is
rebuilt with :func:`palgym.make_episode` from the env's cluster, config, profile and the drawn
episode seed, its hash is checked against the env's ``info["episode_hash"]``, and every
heuristic runs on it. Non-sticky heuristics take thousands of env decisions per 160-job
episode, so this is many times faster. The outcome matches the env's: same metrics,
``num_invalid_actions`` 0, and, for the ``jct`` reward, the return ``-sum(JCT) /
reward_scale`` (the env's reward identity, equal to the env's summed return up to floating-point
summation order; an unfinished job counts up to the truncation time); ``num_steps`` is 0 (no
env decisions were taken). An unfinished episode stops at the simulator's stall detector
(:class:`palgym.simulate.StallDetector`), the env's at its ``max_rounds``: both are reported
as truncated, with completed / total jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np

from agents.evaluation.contenders import Contender
from agents.ids import gym_id
from agents.rollout import TRUNCATION_KEYS, EpisodeOutcome
from palgym.envs.episodes import job_window
from palgym.errors import ConfigError
from palgym.policies.durations import Durations
from palgym.policies.slowdown import SlowdownFactors
from palgym.report import EvaluationSetup
from palgym.sim.metrics import censored_jct_s
from palgym.sim.workload import Trace
from palgym.simulate import Episode, EpisodeResult, make_episode, slowdown_factors
from palgym.sweep import EpisodeRun, Runner, serial_runner

ENV_METRICS: tuple[str, ...] = (
    "avg_jct_s", "p50_jct_s", "p99_jct_s", "makespan_s", "utilization_allocated",
    "utilization_effective", "num_jobs", "num_completed",
)
"""``info["episode_metrics"]`` keys the env reports (plus ``num_invalid_actions``)."""
OUTCOME_METRICS: tuple[str, ...] = tuple(dict.fromkeys((*ENV_METRICS, *TRUNCATION_KEYS)))
"""The metrics of a direct outcome: the env's, then the truncation keys of every outcome."""


def can_run_direct(env_kwargs: Mapping[str, Any]) -> bool:
    """True when the direct path gives the env's outcome exactly (the ``jct`` reward)."""
    return str(env_kwargs.get("reward", "jct")) == "jct"


def outcome_of(name: str, info: Mapping[str, Any], result: EpisodeResult, reward_scale: float,
               window_start: int) -> EpisodeOutcome:
    """The outcome of a simulator run ``result`` of the env's episode (reset ``info``,
    ``window_start``): the env's metrics, no env step, the ``jct`` reward's return."""
    metrics = result.metrics
    values: dict[str, Any] = {key: getattr(metrics, key) for key in OUTCOME_METRICS}
    values["num_unfinished"] = metrics.num_jobs - metrics.num_completed
    values["num_rounds"] = result.num_rounds
    values["num_invalid_actions"] = 0
    jct = result.records.jct_s
    return EpisodeOutcome(
        policy=name, trace=str(info["trace"]), window_start=window_start,
        profile=str(info["profile"]), seed=int(info["seed"]),
        episode_hash=str(info["episode_hash"]),
        episode_return=-float(np.sum(censored_jct_s(result.records, metrics.end_time_s)))
        / reward_scale, num_steps=0,
        metrics=values, jct_s=tuple(float(v) for v in jct),
        submit_time_s=tuple(float(v) for v in result.records.submit_time_s),
    )


class SimEpisode(NamedTuple):
    """One episode of a comparison, ready for the simulator.

    Attributes:
        episode: from :func:`palgym.simulate.make_episode`.
        factors: its slowdown factors (:func:`palgym.simulate.slowdown_factors`).
        durations: what the queue orders and EASY backfilling know of job durations.
        queue_order: the env's queue order (env-drawn episodes); None: every contender runs
            its own (``heuristic_contender(queue_order=...)``).
        info: the env's reset info (env-drawn episodes; empty otherwise).
        window_start: first job of the episode's window in its trace.
        reward_scale: the env's reward scale (divides the ``jct`` return).
    """

    episode: Episode
    factors: SlowdownFactors
    durations: Durations
    queue_order: str | None = None
    info: Mapping[str, Any] = {}
    window_start: int = 0
    reward_scale: float = 1.0


def seed_episodes(traces: Sequence[Trace], setup: EvaluationSetup) -> list[SimEpisode]:
    """One episode per trace at ``setup.seed``, built without the env (the heuristic table's).

    The slowdown factors are fitted once per trace; every contender sees the same episode.

    Raises:
        PalgymError: for an unusable profile or measurement folder.
    """
    episodes = []
    for trace in traces:
        episode = make_episode(
            trace, cluster=setup.cluster, config=setup.config, profile=setup.profile,
            variability_data=setup.variability_data, seed=setup.seed, belief=setup.belief,
        )
        episodes.append(SimEpisode(episode, slowdown_factors(episode), setup.durations))
    return episodes


def run_heuristics(
    episodes: Sequence[SimEpisode],
    contenders: Sequence[Contender],
    runner: Runner | None = None,
    on_result: Callable[[EpisodeResult], None] | None = None,
) -> Iterator[tuple[SimEpisode, Contender, EpisodeResult]]:
    """Every heuristic contender on every episode, on the simulator, episode-major.

    The one simulator path of a comparison: each (episode, contender) is one
    :class:`palgym.sweep.EpisodeRun` of the contender's placement under the episode's queue
    order (env-drawn episodes) or the contender's own.

    Args:
        episodes: the episodes (:func:`seed_episodes`, or drawn by the env).
        contenders: heuristic contenders.
        runner: runs the episodes (default: here, one after the other;
            :mod:`agents.evaluation.parallel`: a process pool or Ray, equal results).
        on_result: called after each run, in run order.

    Yields:
        ``(episode, contender, result)`` in run order.

    Raises:
        ConfigError: for a contender that is not a heuristic, or one without a queue order
            on an episode without one.
        PalgymError: as :func:`palgym.simulate.run_episode`.
    """
    pairs = [(episode, contender) for episode in episodes for contender in contenders]
    runs = [EpisodeRun(e.episode, e.factors, _placement(c), _queue_order(e, c), e.durations)
            for e, c in pairs]
    for (episode, contender), result in zip(pairs, (runner or serial_runner())(runs),
                                            strict=True):
        if on_result is not None:
            on_result(result)
        yield episode, contender, result


def _placement(contender: Contender) -> str:
    if contender.kind != "heuristic":
        raise ConfigError(f"{contender.label!r} is a {contender.kind} contender: only "
                          "heuristics run on the simulator")
    return str(contender.agent.name)


def _queue_order(episode: SimEpisode, contender: Contender) -> str:
    order = episode.queue_order or contender.env_kwargs.get("queue_order")
    if order is None:
        raise ConfigError(f"{contender.label!r} has no queue order and the episode gives none")
    return str(order)


def run_heuristics_direct(
    env_id: str,
    env_kwargs: Mapping[str, Any],
    contenders: Sequence[Contender],
    traces: Sequence[Trace],
    seeds: Sequence[int],
    on_episode: Callable[[EpisodeOutcome], None] | None = None,
    runner: Runner | None = None,
) -> dict[str, list[EpisodeOutcome]]:
    """Every heuristic on every (trace, seed) episode of the env, trace-major.

    The env draws every episode first (here); then :func:`run_heuristics` simulates the runs.

    Args:
        env_id: Gymnasium id.
        env_kwargs: the episode kwargs (without ``trace``; with ``window``, each episode is
            the window the env draws; ``sticky`` / ``class_reorder`` do not matter: they do
            not change the episode).
        contenders: heuristic contenders.
        traces: evaluation traces, run whole.
        seeds: reset seeds.
        on_episode: called after each run, in run order.
        runner: runs the episodes (default: here, one after the other;
            :mod:`agents.evaluation.parallel`: a process pool or Ray, equal outcomes).

    Returns:
        ``{label: outcomes}`` in the order (trace, seed).

    Raises:
        ConfigError: if the rebuilt episode's hash differs from the env's (a bug, never
            silently ignored), or the env's reward is not ``jct``.
    """
    if not can_run_direct(env_kwargs):
        raise ConfigError("heuristics run directly only under the 'jct' reward")
    drawn = env_episodes(env_id, env_kwargs, traces, seeds)
    results: dict[str, list[EpisodeOutcome]] = {c.label: [] for c in contenders}
    for episode, contender, result in run_heuristics(drawn, contenders, runner):
        outcome = outcome_of(contender.agent.name, episode.info, result, episode.reward_scale,
                           episode.window_start)
        results[contender.label].append(outcome)
        if on_episode is not None:
            on_episode(outcome)
    return results


def env_episodes(env_id: str, env_kwargs: Mapping[str, Any], traces: Sequence[Trace],
                 seeds: Sequence[int]) -> list[SimEpisode]:
    """Every (trace, seed) episode as the env draws it, trace-major, rebuilt for the simulator.

    Raises:
        ConfigError: if a rebuilt episode's hash differs from the env's.
    """
    env = gym.make(gym_id(env_id), **dict(env_kwargs), trace=list(traces))
    unwrapped: Any = env.unwrapped
    drawn: list[SimEpisode] = []
    try:
        for index, trace in enumerate(traces):
            for seed in seeds:
                _, info = env.reset(seed=int(seed), options={"trace": index})
                start, window = int(info["window_start"]), unwrapped.window
                part = (trace if window is None or window >= trace.num_jobs
                        else job_window(trace, start, window))
                episode = make_episode(
                    part, cluster=unwrapped.cluster, config=unwrapped.config,
                    profile=unwrapped.profile,
                    variability_data=(None if unwrapped.profile is not None
                                      else unwrapped.variability_data),
                    seed=int(info["seed"]), belief=unwrapped.belief)
                if episode.episode_hash() != info["episode_hash"]:
                    raise ConfigError(f"{trace.name} seed {seed}: the rebuilt episode differs "
                                      "from the env's (hash mismatch)")
                drawn.append(SimEpisode(episode, slowdown_factors(episode), unwrapped.durations,
                                        unwrapped.order.name, dict(info), start,
                                        float(unwrapped.reward_scale)))
    finally:
        env.close()
    return drawn
