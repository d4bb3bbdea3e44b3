"""One evaluation loop for every agent: run episodes through the env, collect outcomes.

Episode sequences follow SB3's seeded vector envs: the first episode is ``reset(seed=seed)``,
the following ones plain ``reset()`` (the env's RNG continues). So
``rollout_sequence(agent, env, seed, n)`` visits exactly the episodes a one-env ``DummyVecEnv``
seeded with ``seed`` visits, e.g. in :class:`agents.sb3.callbacks.SeededEvalCallback`; every
policy compared this way runs on the identical episodes (same ``episode_hash``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from agents.base import Agent, HeuristicAgent
from agents.ids import gym_id
from palgym.simulate import final_metrics

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EpisodeOutcome:
    """What one episode of one agent produced.

    Attributes:
        policy: the agent's name.
        trace: trace id (with the job window, e.g. ``sia-philly-gen-0[12:52]``).
        window_start: first job of the window.
        profile: variability profile id.
        seed: the episode's own seed (``info["seed"]``): with the trace window, profile,
            cluster and config it rebuilds the episode (:func:`palgym.make_episode`).
        episode_hash: hash of (trace, profile, cluster, config, seed): equal across policies.
        episode_return: sum of rewards.
        num_steps: decisions taken.
        metrics: the env's final ``info["episode_metrics"]`` (avg_jct_s, p99_jct_s,
            makespan_s, utilizations, num_invalid_actions, ...), completed with
            :data:`TRUNCATION_KEYS` from the env's simulator where the env does not report
            them (``num_completed`` of ``num_jobs``, ``truncated``, ``truncation_reason``,
            ``censored_avg_jct_s``, ``end_time_s``; PAL_MODEL section 6).
        jct_s: per measured job (trace order), its JCT in seconds (NaN if not completed).
        submit_time_s: per measured job, its submit time in seconds.
        actions: the env actions the agent chose, in step order (``num_steps`` of them; each
            the ``int`` given to ``env.step``: replaying them from ``reset`` with the same seed
            and options gives the same episode, :mod:`palgym.bench.replay`); empty when no
            env step was taken (the direct simulator path).
        decision_time_s: wall seconds spent in the agent's ``predict`` over the episode (the
            one measured, non-deterministic figure).
    """

    policy: str
    trace: str
    window_start: int
    profile: str
    seed: int
    episode_hash: str
    episode_return: float
    num_steps: int
    metrics: dict[str, Any]
    jct_s: tuple[float, ...] = field(default=(), compare=False, repr=False)
    submit_time_s: tuple[float, ...] = field(default=(), compare=False, repr=False)
    actions: tuple[int, ...] = field(default=(), compare=False, repr=False)
    decision_time_s: float = field(default=0.0, compare=False, repr=False)


def rollout(
    agent: Agent,
    env: gym.Env[Any, Any],
    *,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
    deterministic: bool = True,
) -> EpisodeOutcome:
    """Run one episode of ``agent`` in ``env`` (binding the agent to it first).

    Args:
        agent: any :class:`agents.base.Agent`.
        env: a palgym env (wrappers allowed).
        seed: ``reset`` seed (None continues the env's RNG).
        options: ``reset`` options (trace, window_start, profile).
        deterministic: greedy actions for learned agents.

    Returns:
        The episode's outcome, with the actions taken (:attr:`EpisodeOutcome.actions`).
    """
    agent.bind(env)
    observation, info = env.reset(seed=seed, options=options)
    masks = env.unwrapped.action_masks if agent.uses_masks else None  # type: ignore[attr-defined]
    state = None
    episode_start = np.ones((1,), dtype=bool)
    total, deciding_s = 0.0, 0.0
    actions: list[int] = []
    while True:
        started = time.perf_counter()
        action, state = agent.predict(
            observation, state=state, episode_start=episode_start, deterministic=deterministic,
            action_masks=masks() if masks is not None else None,
        )
        deciding_s += time.perf_counter() - started
        actions.append(int(action))
        observation, reward, terminated, truncated, step_info = env.step(actions[-1])
        episode_start = np.zeros((1,), dtype=bool)
        total += float(reward)
        if terminated or truncated:
            return EpisodeOutcome(
                policy=agent.name, trace=str(info["trace"]),
                window_start=int(info["window_start"]), profile=str(info["profile"]),
                seed=int(info["seed"]), episode_hash=str(info["episode_hash"]),
                episode_return=total, num_steps=len(actions),
                metrics=_with_truncation(dict(step_info.get("episode_metrics", {})), env),
                jct_s=_jct_s(env), submit_time_s=_submit_s(env), actions=tuple(actions),
                decision_time_s=deciding_s,
            )


TRUNCATION_KEYS: tuple[str, ...] = (
    "num_jobs", "num_completed", "truncated", "truncation_reason", "censored_avg_jct_s",
    "end_time_s",
)
"""Episode-metrics keys every outcome carries (see :class:`EpisodeOutcome`)."""


def _with_truncation(metrics: dict[str, Any], env: gym.Env[Any, Any]) -> dict[str, Any]:
    """``metrics`` plus the :data:`TRUNCATION_KEYS` it lacks, from the env's simulator."""
    simulator: Any = env.unwrapped.simulator  # type: ignore[attr-defined]
    final = final_metrics(simulator)
    for key in TRUNCATION_KEYS:
        metrics.setdefault(key, getattr(final, key))
    return metrics


def _submit_s(env: gym.Env[Any, Any]) -> tuple[float, ...]:
    simulator: Any = env.unwrapped.simulator  # type: ignore[attr-defined]
    return tuple(float(v) for v in simulator.records().submit_time_s)


def _jct_s(env: gym.Env[Any, Any]) -> tuple[float, ...]:
    """Per measured job, its JCT (s) in the env's finished episode (NaN: not completed)."""
    simulator: Any = env.unwrapped.simulator  # type: ignore[attr-defined]
    return tuple(float(v) for v in simulator.records().jct_s)


def rollout_sequence(
    agent: Agent,
    env: gym.Env[Any, Any],
    seed: int,
    num_episodes: int,
    deterministic: bool = True,
) -> list[EpisodeOutcome]:
    """``num_episodes`` episodes: ``reset(seed=seed)`` first, then plain resets."""
    return [
        rollout(agent, env, seed=seed if i == 0 else None, deterministic=deterministic)
        for i in range(num_episodes)
    ]


def heuristic_outcomes(
    env_id: str,
    env_kwargs: Mapping[str, Any],
    seed: int,
    num_episodes: int,
    policies: Sequence[str],
) -> dict[str, list[EpisodeOutcome]]:
    """Heuristic placements on the episode sequence of a one-env vector env seeded ``seed``.

    Each policy gets its own env made with ``env_kwargs`` plus the ``sticky`` /
    ``class_reorder`` it needs (the episodes do not depend on those).

    Args:
        env_id: Gymnasium id.
        env_kwargs: the env's keyword arguments (e.g. the evaluation env's).
        seed: seed of the first episode.
        num_episodes: episodes per policy.
        policies: placement names.

    Returns:
        ``{policy: outcomes}``.

    Raises:
        ConfigError: for an unknown policy, or one the env configuration cannot run.
    """
    results: dict[str, list[EpisodeOutcome]] = {}
    for name in policies:
        agent = HeuristicAgent(name)
        env = gym.make(gym_id(env_id), **{**dict(env_kwargs), **agent.env_kwargs})
        try:
            results[name] = rollout_sequence(agent, env, seed, num_episodes)
        finally:
            env.close()
        mean = float(np.mean([o.episode_return for o in results[name]]))
        logger.info("reference %s: mean return %.6g over %d episodes", name, mean, num_episodes)
    return results
