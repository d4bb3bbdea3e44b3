"""The relative reward against a backfilling baseline (``baseline_policy="pal+backfill"``)."""

from __future__ import annotations

import numpy as np
import pytest

from palgym.envs.cluster_env import ClusterEnv
from palgym.errors import ConfigError
from palgym.sim.variability import VariabilityProfile
from palgym.sim.workload import Trace

R = 100.0


def _env(baseline: str) -> ClusterEnv:
    """2 nodes x 1 GPU, uniform GPUs, no locality penalty, R = 100 s, FIFO, scheduling task.

    Jobs at t = 0 (GPUs, seconds): (1, 1000), (2, 100), (1, 100).
    """
    trace = Trace.from_columns(
        "toy", job_id=[0, 1, 2], num_gpus=[1, 2, 1], submit_time_s=[0.0] * 3,
        total_iterations=[1000.0, 100.0, 100.0], iteration_time_s=[1.0] * 3,
        model=["toy-model"] * 3, perf_class=[0] * 3)
    return ClusterEnv(trace, task="scheduling", cluster="2x1",
                      profile=VariabilityProfile("toy", np.ones((4, 2))), locality_penalty=1.0,
                      round_duration_s=R, reward="relative", baseline_policy=baseline,
                      reward_scale=R)


def _return(env: ClusterEnv, policy: str) -> float:
    env.reset(seed=0)
    total, done = 0.0, False
    while not done:
        _, reward, terminated, truncated, _ = env.step(env.heuristic_action(policy))
        total += float(reward)
        done = terminated or truncated
    return total


def test_relative_return_against_pal_backfill_by_hand() -> None:
    # PAL + FIFO: job 0 runs alone (job 1 does not fit beside it, PAL stops there) to 1000 s,
    # then job 1 to 1100 s, job 2 to 1200 s: sum JCT 3300 s.
    # PAL + first-fit backfill: job 2 runs beside job 0 in round 0 (done at 100 s), job 0 at
    # 1000 s, job 1 at 1100 s: sum JCT 2200 s. Return = (2200 - 3300) / 100 s = -11.
    env = _env("pal+backfill")
    assert _return(env, "pal") == pytest.approx(-11.0, rel=1e-12)
    assert _return(env, "pal+backfill") == pytest.approx(0.0, abs=1e-12)
    assert _return(_env("pal"), "pal+backfill") == pytest.approx(11.0, rel=1e-12)


def test_unknown_baseline_is_named() -> None:
    with pytest.raises(ConfigError, match="pal\\+bogus"):
        _env("pal+bogus")
