"""Contract tests of the Gymnasium env (docs/ENV.md; docs/TESTING.md "Env contract")."""

from __future__ import annotations

import copy
import pickle
import random
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import palgym  # noqa: F401  (registers the ids)
from palgym import PLACEMENT_NAMES, InvalidActionError, PalgymError, run_episode
from palgym.envs import ClusterEnv
from palgym.errors import ConfigError
from palgym.policies.registry import placement_entry

ENV_IDS = ("palgym/PALPlacement-v0", "palgym/PALScheduling-v0", "palgym/PALPlacement-v1",
           "palgym/PALScheduling-v1")


def heuristic_env(policy: str, **kwargs: object) -> ClusterEnv:
    entry = placement_entry(policy)  # the env the placement's traits ask for
    return ClusterEnv(sticky=entry.sticky, class_reorder=entry.class_reorder, **kwargs)


def run_heuristic(env: ClusterEnv, policy: str, seed: int = 0) -> tuple[float, dict, int]:
    env.reset(seed=seed)
    total, steps = 0.0, 0
    while True:
        _, reward, terminated, truncated, info = env.step(env.heuristic_action(policy))
        total += reward
        steps += 1
        if terminated or truncated:
            return total, info, steps


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_gymnasium_env_checker_has_no_warnings(env_id: str) -> None:
    env = gym.make(env_id, window=40)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)


@pytest.mark.parametrize("queue_order", ["fifo", "srtf"])
@pytest.mark.parametrize("policy", PLACEMENT_NAMES)
def test_heuristic_parity_with_run_episode(policy: str, queue_order: str) -> None:
    """Every heuristic through the env gives the same per-job completions as run_episode."""
    env = heuristic_env(policy, trace="sia-philly-gen-2", window=80, queue_order=queue_order)
    _, info, _ = run_heuristic(env, policy, seed=3)
    direct = run_episode(env.episode, policy, queue_order)
    through_env = env.simulator.records()
    assert np.array_equal(direct.records.completion_time_s, through_env.completion_time_s)
    assert info["episode_metrics"]["avg_jct_s"] == direct.metrics.avg_jct_s
    assert info["num_invalid_actions"] == 0


@pytest.mark.parametrize("policy", ["pal", "packed-non-sticky"])
def test_heuristic_parity_in_the_scheduling_task(policy: str) -> None:
    """In the scheduling task a heuristic ends (defers) the round when its head job does not
    fit; each deferred round is rebuilt from the same state, so run_episode is reproduced."""
    env = heuristic_env(policy, trace="sia-philly-gen-2", window=80, task="scheduling")
    run_heuristic(env, policy, seed=3)
    direct = run_episode(env.episode, policy, "fifo")
    assert np.array_equal(direct.records.completion_time_s,
                          env.simulator.records().completion_time_s)


def test_jct_return_equals_minus_sum_jct() -> None:
    env = heuristic_env("pal", trace="sia-philly-gen-0", window=60)
    episode_return, _, _ = run_heuristic(env, "pal")
    total_jct = float(np.sum(env.simulator.records().jct_s))
    assert episode_return * env.reward_scale == pytest.approx(-total_jct, rel=1e-9)


def test_relative_return_equals_jct_difference() -> None:
    """The baseline side here shares run_episode with the env; the hand-worked toy in
    tests/test_env_rewards.py (test_toy_returns_by_hand, "relative") is the independent one."""
    env = heuristic_env("pal", trace="sia-philly-gen-0", window=60, reward="relative",
                        baseline_policy="packed-sticky")
    episode_return, _, _ = run_heuristic(env, "pal")
    ours = float(np.sum(env.simulator.records().jct_s))
    base = float(np.sum(run_episode(env.episode, "packed-sticky").records.jct_s))
    assert episode_return * env.reward_scale == pytest.approx(base - ours, rel=1e-9, abs=1e-6)


def test_step_after_end_raises_and_terminates_once() -> None:
    env = heuristic_env("pal", trace="sia-philly-gen-0", window=20)
    _, info, _ = run_heuristic(env, "pal")
    assert info["episode_metrics"]["num_completed"] == 20
    with pytest.raises(PalgymError, match="reset"):
        env.step(0)


def test_masks_never_empty_and_random_masked_actions_are_valid() -> None:
    """Uniform masked actions are always accepted (0 invalid) and the mask is never empty."""
    for env_id in ENV_IDS:
        env = gym.make(env_id, window=50).unwrapped
        rng = np.random.default_rng(0)
        env.reset(seed=1)
        for _ in range(3000):
            mask = env.action_masks()
            assert mask.any()
            action = int(rng.choice(np.flatnonzero(mask)))
            obs, _, terminated, truncated, info = env.step(action)
            assert not info["invalid_action"]
            assert env.observation_space.contains(obs)
            if terminated or truncated:
                env.reset()


def test_invalid_action_falls_back_or_raises_in_strict_mode() -> None:
    env = ClusterEnv("sia-philly-gen-0", window=30)
    env.reset(seed=0)
    invalid = int(np.flatnonzero(~env.action_masks())[0])
    _, _, _, _, info = env.step(invalid)
    assert info["invalid_action"] and info["num_invalid_actions"] == 1
    strict = ClusterEnv("sia-philly-gen-0", window=30, strict=True)
    strict.reset(seed=0)
    with pytest.raises(InvalidActionError):
        strict.step(invalid)


def _rollout(env: ClusterEnv, steps: int, seed: int) -> list[tuple]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        action = int(rng.choice(np.flatnonzero(env.action_masks())))
        obs, reward, terminated, truncated, _ = env.step(action)
        out.append((action, reward, terminated, truncated,
                    *(obs[k].tobytes() for k in sorted(obs))))
        if terminated or truncated:
            env.reset()
    return out


def test_determinism_two_instances_and_reset_sequence() -> None:
    a = ClusterEnv("bundled", window=40)
    b = ClusterEnv("bundled", window=40)
    infos_a = [a.reset(seed=7)[1]] + [a.reset()[1] for _ in range(3)]
    infos_b = [b.reset(seed=7)[1]] + [b.reset()[1] for _ in range(3)]
    assert [i["episode_hash"] for i in infos_a] == [i["episode_hash"] for i in infos_b]
    a.reset(seed=11)
    b.reset(seed=11)
    assert _rollout(a, 500, 5) == _rollout(b, 500, 5)


def test_observations_are_fresh_arrays() -> None:
    env = ClusterEnv("sia-philly-gen-0", window=30)
    obs, _ = env.reset(seed=0)
    kept = {k: v.copy() for k, v in obs.items()}
    env.step(int(np.flatnonzero(env.action_masks())[0]))
    for key in obs:
        assert np.array_equal(obs[key], kept[key]), "a returned observation was mutated"


def test_deepcopy_and_pickle_mid_episode_continue_identically() -> None:
    env = ClusterEnv("sia-philly-gen-1", window=40)
    env.reset(seed=2)
    _rollout(env, 25, 0)
    clones = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    reference = _rollout(env, 200, 9)
    for clone in clones:
        assert _rollout(clone, 200, 9) == reference


def test_global_rng_state_untouched() -> None:
    py_state, np_state = random.getstate(), np.random.get_state()
    env = gym.make("palgym/PALPlacement-v0", window=30, preset="pal-artifact").unwrapped
    env.reset(seed=0)
    _rollout(env, 100, 0)
    assert random.getstate() == py_state
    after = np.random.get_state()  # the whole state: a small draw moves only the position word
    assert after[0] == np_state[0] and np.array_equal(after[1], np_state[1])
    assert after[2:] == np_state[2:]


def test_heuristic_must_match_env_stickiness() -> None:
    env = ClusterEnv("sia-philly-gen-0", window=20, sticky=False)
    env.reset(seed=0)
    with pytest.raises(ConfigError, match="sticky"):
        env.heuristic_action("packed-sticky")


def test_unknown_option_names_itself() -> None:
    with pytest.raises(TypeError, match="bogus_option"):
        gym.make("palgym/PALPlacement-v0", bogus_option=1)
    with pytest.raises(ConfigError, match="reward"):
        ClusterEnv("sia-philly-gen-0", reward="nope")


def test_observation_bounds_with_huge_job_and_big_cluster(tmp_path) -> None:
    """A 30-day job on a 1,024-GPU cluster keeps every observation inside the space."""
    path = tmp_path / "huge.csv"
    path.write_text(
        "job_id,num_gpus,submit_time,duration,model\n"
        "0,64,0,864000,GPT2\n1,1,10,2592000,vgg19\n2,8,20,1000,resnet50\n"
    )
    env = ClusterEnv(str(path), cluster="256x4", round_duration_s=86400.0)
    obs, _ = env.reset(seed=0)
    while True:
        assert env.observation_space.contains(obs)
        obs, _, terminated, truncated, _ = env.step(env.heuristic_action("pal"))
        if terminated or truncated:
            assert env.observation_space.contains(obs)
            break


def test_renders() -> None:
    env = ClusterEnv("sia-philly-gen-0", window=20, render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert isinstance(text, str) and text.count("node") == 16
    env = ClusterEnv("sia-philly-gen-0", window=20, render_mode="rgb_array")
    env.reset(seed=0)
    for _ in range(5):
        env.step(env.heuristic_action("pal"))
    image = env.render()
    assert isinstance(image, np.ndarray) and image.dtype == np.uint8 and image.shape[2] == 3


@pytest.mark.parametrize("policy", PLACEMENT_NAMES)
def test_parity_on_public_workload_1_with_the_artifact_preset(data_dir, policy: str) -> None:
    """On a public Sia-Philly trace with the pal-artifact preset (background jobs, starvation
    promotion, the artifact's RNG streams), the env reproduces run_episode per job."""
    env = heuristic_env(
        policy, trace=str(data_dir / "traces" / "sia_philly_pal" / "workload-1.csv"),
        preset="pal-artifact", variability_data=data_dir / "variability" / "longhorn_pal",
    )
    run_heuristic(env, policy)
    direct = run_episode(env.episode, policy, "fifo")
    assert np.array_equal(direct.records.completion_time_s,
                          env.simulator.records().completion_time_s)


def test_deferring_ends_one_round_only() -> None:
    """Scheduling task: "end round" at once defers that round only. Nothing runs (the first
    decision of the episode), so the next decision comes one round later with the same
    waiting jobs, not after skipping to the next event (or to max_rounds)."""
    env = ClusterEnv(task="scheduling", trace="sia-philly-gen-0", window=1)
    env.reset(seed=0)
    sim = env.simulator
    start, waiting = sim.round_index, sim.active_jobs().tolist()
    assert not sim.running_jobs().size and env.action_masks()[:-1].any()
    for step in range(1, 4):
        _, _, terminated, truncated, _ = env.step(env.end_round_action)
        assert not (terminated or truncated)
        assert sim.round_index == start + step
        assert sim.active_jobs().tolist() == waiting
    env.step(env.heuristic_action("pal"))  # placed in the fourth round
    assert sim.jobs.first_start_time_s[waiting[0]] == (start + 3) * env.config.round_duration_s
