"""Backfilling heuristics as agents of ``PALScheduling-v0`` reproduce the simulator's walk bit
for bit (non-sticky placements; the walk's skip depth equals the env's window K = 16), and the
env refuses the combinations it cannot express."""

from __future__ import annotations

import numpy as np
import pytest

from agents.base import HeuristicAgent, heuristic_env_kwargs
from palgym.envs import ClusterEnv
from palgym.errors import ConfigError
from palgym.simulate import run_episode
from tests.toys import A, ClusterSpec, R, toy_profile, toy_trace

BACKFILLING = ("pal+backfill", "pal+easy", "pm-first+backfill", "pm-first+easy",
               "packed-non-sticky+backfill", "packed-non-sticky+easy",
               "random-non-sticky+backfill", "random-non-sticky+easy")


def _through_env(env: ClusterEnv, name: str) -> np.ndarray:
    agent = HeuristicAgent(name).bind(env)
    observation, _ = env.reset(seed=0)
    while True:
        action, _ = agent.predict(observation)
        observation, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return env.simulator.records().completion_time_s


@pytest.mark.parametrize("order", ["fifo", "srtf", "las"])
@pytest.mark.parametrize("name", BACKFILLING)
def test_env_agent_equals_direct_simulation(name: str, order: str) -> None:
    env = ClusterEnv("sia-philly-gen-3", task="scheduling", window=50, queue_order=order,
                     **heuristic_env_kwargs(name))
    completions = _through_env(env, name)
    direct = run_episode(env.episode, name, order)
    np.testing.assert_array_equal(completions, direct.records.completion_time_s)
    assert not np.isnan(completions).any()


def test_env_window_is_the_walks_skip_depth() -> None:
    # 1x2: J0 (1 GPU, 1000 s) runs; J1..J16 (2 GPUs, 100 s) fill the 16 window slots and do
    # not fit; J17 (1 GPU, 100 s) would fit the free GPU but is 17th in line. The env agent
    # cannot reach it, nor can the walk (it stops at its 16th skip). From 1000 J1..J16 run
    # one round each, so J17 runs [2600, 2700) (with depth 17 it would run [0, 100)).
    jobs = [(1, 0.0, 1000.0, A), *[(2, 0.0, 100.0, A)] * 16, (1, 0.0, 100.0, A)]
    trace = toy_trace(*jobs)
    env = ClusterEnv(trace, task="scheduling", cluster=ClusterSpec(1, 2),
                     profile=toy_profile(2), round_duration_s=R,
                     **heuristic_env_kwargs("packed-non-sticky+backfill"))
    completions = _through_env(env, "packed-non-sticky+backfill")
    direct = run_episode(env.episode, "packed-non-sticky+backfill", "fifo")
    np.testing.assert_array_equal(completions, direct.records.completion_time_s)
    assert direct.records.first_start_time_s[17] == 2600.0
    assert direct.records.completion_time_s[17] == 2700.0


def test_env_refuses_what_it_cannot_express() -> None:
    env = ClusterEnv("sia-philly-gen-3", task="placement", window=20)
    env.reset(seed=0)
    with pytest.raises(ConfigError, match="task='scheduling'"):
        env.unwrapped.heuristic_action("pal+easy")
    sticky = ClusterEnv("sia-philly-gen-3", task="scheduling", window=20, sticky=True,
                        class_reorder=False)
    sticky.reset(seed=0)
    with pytest.raises(ConfigError, match="simulator-only"):
        sticky.heuristic_action("packed-sticky+backfill")
    narrow = ClusterEnv("sia-philly-gen-3", task="scheduling", window=20, num_slots=8)
    narrow.reset(seed=0)
    with pytest.raises(ConfigError, match="num_slots=16"):
        narrow.heuristic_action("pal+backfill")
    assert heuristic_env_kwargs("pm-first+easy") == {"sticky": False, "class_reorder": True}
    with pytest.raises(ConfigError, match="unknown placement"):
        heuristic_env_kwargs("pal+conservative")
