"""Episode returns of every env reward against their closed forms (palgym/envs/rewards.py's
docstring) and against a hand-worked toy; truncation at ``max_rounds``.

Toy: one class-A job of 1 GPU, 1,000 s of work (T_it = 1 s), submitted at 0, on a homogeneous
2 x 2 cluster (every perfvar 1.0), R = 360 s, reward_scale S. Placed at once it runs 3 rounds
(1,000 / 360 = 2.78) and completes at 1,080 s: JCT 1,080 s, makespan 1,080 s, slowdown
1,080 / 1,000 = 1.08, effective GPU-rounds 3 x 1 GPU, over G = 4 GPUs. Deferred d rounds first
(scheduling task), it completes at 1,080 + 360 d.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import palgym  # noqa: F401  (registers the ids)
from palgym import PalgymError, Trace, VariabilityProfile

R = 360.0
SCALE = 1000.0


def toy_env(reward: str, **kwargs: object) -> gym.Env:
    trace = Trace.from_columns(
        "toy", job_id=[0], num_gpus=[1], submit_time_s=[0.0], total_iterations=[1000.0],
        iteration_time_s=[1.0], model=["toy"], perf_class=[0],
    )
    return gym.make(
        "palgym/PALScheduling-v0", trace=trace, cluster="2x2",
        profile=VariabilityProfile("flat", np.ones((4, 4))), reward=reward, reward_scale=SCALE,
        round_duration_s=R, **kwargs,
    ).unwrapped


def play(env: gym.Env, deferrals: int = 0, policy: str = "pal",
         seed: int = 0) -> tuple[float, bool, bool, dict, int]:
    """Return, terminated, truncated, last info and steps: ``deferrals`` "end round" actions,
    then ``policy``'s actions until the end."""
    env.reset(seed=seed)
    total, steps = 0.0, 0
    while True:
        action = env.end_round_action if steps < deferrals else env.heuristic_action(policy)
        _, reward, terminated, truncated, info = env.step(action)
        total, steps = total + reward, steps + 1
        if terminated or truncated:
            return total, terminated, truncated, info, steps


@pytest.mark.parametrize(("reward", "deferrals", "expected"), [
    ("jct", 0, -1080.0 / SCALE),
    ("jct", 2, -1800.0 / SCALE),
    ("slowdown", 0, -1.08 * 3600.0 / SCALE),
    ("slowdown", 2, -1.8 * 3600.0 / SCALE),
    ("makespan", 0, -1080.0 / SCALE),
    ("makespan", 2, -1800.0 / SCALE),
    # effective GPU-rounds / G x R / S: 3 rounds x 1 GPU / 4 GPUs x 360 s
    ("utilization", 0, 3 * 1 / 4 * R / SCALE),
    ("utilization", 2, 3 * 1 / 4 * R / SCALE),
    # vs Packed-Sticky, which places the job at once (JCT 1,080 s)
    ("relative", 0, 0.0),
    ("relative", 2, (1080.0 - 1800.0) / SCALE),
])
def test_toy_returns_by_hand(reward: str, deferrals: int, expected: float) -> None:
    env = toy_env(reward, baseline_policy="packed-sticky")
    total, terminated, truncated, info, _ = play(env, deferrals)
    assert terminated and not truncated
    assert env.simulator.records().completion_time_s.tolist() == [1080.0 + R * deferrals]
    assert total == pytest.approx(expected, rel=1e-12, abs=1e-12)
    names = {"jct", "baseline_jct"} if reward == "relative" else {reward}
    assert set(info["reward_terms"]) == names


def bundled_env(reward: str, **kwargs: object) -> gym.Env:
    return gym.make("palgym/PALPlacement-v0", trace="sia-philly-gen-1", window=50,
                    reward=reward, **kwargs).unwrapped


def test_slowdown_return_is_minus_mean_slowdown() -> None:
    env = bundled_env("slowdown")
    total, terminated, _, _, _ = play(env, seed=4)
    sim = env.simulator
    records = sim.records()
    ideal_s = sim.trace.total_iterations * sim.trace.iteration_time_s
    assert terminated and records.jct_s.size == 50 and np.isfinite(records.jct_s).all()
    expected = -float(np.mean(records.jct_s / ideal_s)) * 3600.0 / env.reward_scale
    assert total == pytest.approx(expected, rel=1e-9)


def test_makespan_return_is_minus_makespan() -> None:
    env = bundled_env("makespan")
    total, terminated, _, info, _ = play(env, seed=4)
    records = env.simulator.records()
    makespan = float(records.completion_time_s.max() - records.submit_time_s.min())
    assert terminated and makespan > 0
    assert makespan == info["episode_metrics"]["makespan_s"]
    assert total == pytest.approx(-makespan / env.reward_scale, rel=1e-9)


def test_utilization_return_is_effective_utilization_times_rounds() -> None:
    env = bundled_env("utilization")
    total, terminated, _, info, _ = play(env, seed=4)
    sim = env.simulator
    # usage counts from the boundary at which the first measured job is admitted
    first_round = math.ceil(float(sim.records().submit_time_s.min()) / R)
    counted_rounds = sim.round_index - first_round
    utilization = info["episode_metrics"]["utilization_effective"]
    assert terminated and 0.0 < utilization <= 1.0 and counted_rounds > 0
    expected = utilization * counted_rounds * R / env.reward_scale
    assert total == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("env_id", ["palgym/PALPlacement-v0", "palgym/PALScheduling-v0"])
def test_truncation_at_max_rounds(env_id: str) -> None:
    """After ``max_rounds`` rounds: truncated (not terminated), a final observation inside the
    space, the unfinished jobs counted, the jct return up to that time, then no more steps."""
    max_rounds = 12
    env = gym.make(env_id, trace="sia-philly-gen-0", window=40, max_rounds=max_rounds).unwrapped
    env.reset(seed=0)
    total, steps = 0.0, 0
    while True:
        obs, reward, terminated, truncated, info = env.step(env.heuristic_action("pal"))
        total, steps = total + reward, steps + 1
        if terminated or truncated:
            break
    sim = env.simulator
    assert truncated and not terminated and steps > 1
    assert sim.round_index == max_rounds and sim.now_s == max_rounds * R
    assert env.observation_space.contains(obs)
    records = sim.records()
    completed = np.isfinite(records.completion_time_s)
    metrics = info["episode_metrics"]
    assert metrics["num_jobs"] == 40 and metrics["num_completed"] == int(completed.sum()) < 40
    # every measured job counts from its submission to its completion or to the cut
    end = np.where(completed, records.completion_time_s, sim.now_s)
    in_system = np.maximum(end - records.submit_time_s, 0.0).sum()
    assert total * env.reward_scale == pytest.approx(-in_system, rel=1e-9)
    with pytest.raises(PalgymError, match="reset"):
        env.step(env.end_round_action)


@pytest.mark.parametrize("env_id", ["palgym/PALPlacement-v0", "palgym/PALScheduling-v0"])
def test_rounds_before_the_first_decision_count_in_the_return(env_id: str) -> None:
    """The toy job submitted at 1,000 s: reset runs rounds 0-2 (0-1,080 s) with no decision,
    the job waits 80 s of them, is placed at 1,080 s and runs 3 rounds to 2,160 s: JCT
    1,160 s, so the return is -1,160 / S (the 80 s accrued inside reset() included)."""
    trace = Trace.from_columns(
        "late", job_id=[0], num_gpus=[1], submit_time_s=[1000.0], total_iterations=[1000.0],
        iteration_time_s=[1.0], model=["toy"], perf_class=[0],
    )
    env = gym.make(env_id, trace=trace, cluster="2x2",
                   profile=VariabilityProfile("flat", np.ones((4, 4))), reward_scale=SCALE,
                   round_duration_s=R).unwrapped
    total, terminated, _, info, _ = play(env)
    assert terminated and info["episode_metrics"]["avg_jct_s"] == 1160.0
    assert total == pytest.approx(-1160.0 / SCALE, rel=1e-12)
