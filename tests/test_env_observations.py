"""Observation feature values against hand-worked states (ENV.md "Observation"; the feature
definitions of palgym/envs/observations.py's module and ClusterEnv's docstring).

Toy: 2 nodes x 2 GPUs (G = 4), every perfvar 1.0 (so one slowdown tier, sf = 1), R = 360 s,
K = 16 slots, T = 4 tiers (M = 10 candidates), lf = 1.7. Jobs (T_it = 1 s):
  job 0: 2 GPUs, class B, 1,000 iterations, submitted at 0;
  job 1: 1 GPU,  class A,   500 iterations, submitted at 100 s (admitted at the 360 s boundary).
Decision 1 (t = 0): only job 0 waits. We give it candidate 0 (within-node, tier 0): GPUs 0-1.
Decision 2 (t = 360 s): job 0 has run one round (360 iterations), job 1 has waited 260 s. The
placement task is non-sticky with PAL's class order, so the window is job 1 (class A) then job 0.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import palgym  # noqa: F401  (registers the ids)
from palgym import Trace, VariabilityProfile

YEAR_S = 365 * 24 * 3600.0
K, T, M = 16, 4, 10


def log_time(seconds: float) -> float:
    """The features' log scale: log(1 + s) / log(1 + one year), in [0, 1]."""
    return math.log1p(seconds) / math.log1p(YEAR_S)


def job_row(num_gpus: int, perf_class: int, remaining_s: float, waiting_s: float,
            attained_s: float, was_running: bool, slot: int) -> list[float]:
    one_hot = [1.0 if c == perf_class else 0.0 for c in range(4)]
    return [1.0, 1.0, num_gpus / 4, *one_hot, log_time(remaining_s), log_time(waiting_s),
            log_time(attained_s), float(was_running), slot / K]


def cluster_row(free_gpus: int, nodes_free: tuple[int, int], pending: int, queued: int,
                now_s: float) -> list[float]:
    tiers = []
    for _ in range(4):  # classes A..D: every free GPU is in tier 0 (sf = 1)
        tiers += [free_gpus / 4, 0.0, 0.0, 0.0]
    histogram = [sum(1 for n in nodes_free if n == count) / 2 for count in range(3)]
    return [*tiers, *histogram, free_gpus / 4, pending / K, queued / (4 * K), log_time(now_s)]


def toy_env() -> gym.Env:
    trace = Trace.from_columns(
        "toy", job_id=[0, 1], num_gpus=[2, 1], submit_time_s=[0.0, 100.0],
        total_iterations=[1000.0, 500.0], iteration_time_s=[1.0, 1.0], model=["toy", "toy"],
        perf_class=[1, 0],
    )
    return gym.make(
        "palgym/PALPlacement-v0", trace=trace, cluster="2x2",
        profile=VariabilityProfile("flat", np.ones((4, 4))), round_duration_s=360.0,
        num_slots=K, max_tiers=T,
    ).unwrapped


def shaped(env: gym.Env, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {key: obs[key].reshape(shape) for key, shape in env.observation_shapes.items()}


# Candidate rows (feasible, max sf / 4, spans nodes, (lf - 1) / 3, 0.5 / (sf x lf),
# fraction on the best tier, keeps the GPUs) of a set inside one node on sf-1 GPUs:
WITHIN_NODE = [1.0, 0.25, 0.0, 0.0, 0.5, 1.0, 0.0]
ABSENT = [0.0] * 7
RANDOM_FEASIBLE = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]


def test_feature_names_follow_the_documented_layout() -> None:
    env = toy_env()
    names = env.feature_names
    assert env.observation_shapes == {"jobs": (K, 12), "candidates": (K, M, 7),
                                      "cluster": (4 * T + 3 + 4,)}
    assert names["jobs"][:12] == tuple(f"slot0.{n}" for n in (
        "present", "selectable", "num_gpus_frac", "class_A", "class_B", "class_C", "class_D",
        "log_remaining_ideal_time", "log_waiting_time", "log_attained_service", "was_running",
        "queue_position"))
    assert names["cluster"][-7:] == ("nodes_with_0_free", "nodes_with_1_free",
                                     "nodes_with_2_free", "free_frac", "pending_frac",
                                     "queued_frac", "log_time")


def test_first_decision_by_hand() -> None:
    env = toy_env()
    obs = shaped(env, env.reset(seed=0)[0])
    expected_jobs = np.zeros((K, 12))
    expected_jobs[0] = job_row(2, 1, 1000.0, 0.0, 0.0, False, 0)
    np.testing.assert_allclose(obs["jobs"], expected_jobs, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(obs["cluster"], cluster_row(4, (2, 2), 1, 1, 0.0),
                               rtol=1e-6, atol=1e-7)
    # job 0's candidates: within-node tier 0 = GPUs 0-1; tiers 1-3 absent; best-factor tier 0
    # (PM-First on sf <= 1) = GPUs 0-1; Packed = node 0; Random feasible
    expected = [WITHIN_NODE, ABSENT, ABSENT, ABSENT, WITHIN_NODE, ABSENT, ABSENT, ABSENT,
                WITHIN_NODE, RANDOM_FEASIBLE]
    np.testing.assert_allclose(obs["candidates"][0], expected, rtol=1e-6, atol=1e-7)
    assert not obs["candidates"][1:].any()
    mask = env.action_masks()
    assert np.flatnonzero(mask).tolist() == [0, 4, 8, 9]  # slot 0's feasible candidates


def test_second_decision_by_hand() -> None:
    env = toy_env()
    env.reset(seed=0)
    obs, reward, terminated, truncated, _ = env.step(0)  # job 0 on GPUs 0-1 for [0, 360)
    obs = shaped(env, obs)
    assert not (terminated or truncated) and env.simulator.now_s == 360.0
    assert reward == pytest.approx(-(360.0 + 260.0) / env.reward_scale)  # both jobs in system
    expected_jobs = np.zeros((K, 12))
    expected_jobs[0] = job_row(1, 0, 500.0, 260.0, 0.0, False, 0)
    expected_jobs[1] = job_row(2, 1, 1000.0 - 360.0, 360.0, 360.0, True, 1)
    np.testing.assert_allclose(obs["jobs"], expected_jobs, rtol=1e-6, atol=1e-7)
    # non-sticky: the whole cluster is free again for the round's decisions
    np.testing.assert_allclose(obs["cluster"], cluster_row(4, (2, 2), 2, 2, 360.0),
                               rtol=1e-6, atol=1e-7)
    # job 1 (1 GPU): every set is one GPU inside a node; job 0's within-node set is GPUs 0-1
    # again, which it holds: keeps_gpus = 1 on its three such candidates
    keeps = [*WITHIN_NODE[:6], 1.0]
    np.testing.assert_allclose(
        obs["candidates"][1],
        [keeps, ABSENT, ABSENT, ABSENT, keeps, ABSENT, ABSENT, ABSENT, keeps, RANDOM_FEASIBLE],
        rtol=1e-6, atol=1e-7)
    assert obs["candidates"][0][:, 0].tolist() == [1, 0, 0, 0, 1, 0, 0, 0, 1, 1]
