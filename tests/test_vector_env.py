"""The batched vector env (palgym.envs.vector) against a list of single envs, step for step.

Each row of :class:`ClusterVectorEnv` must play exactly the episode a single env reset with
the same seed plays: the reference here is Gymnasium's own ``SyncVectorEnv`` over
``gym.make`` single envs (same autoreset rule), and for SB3 a ``DummyVecEnv`` of the
Monitor-wrapped envs :func:`agents.sb3.envs.make_env` builds. Actions are random valid ones drawn
from the reference's masks, so any difference in masks, observations, rewards or flags shows.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import palgym  # noqa: F401  (registers the ids)
from palgym.envs.vector import ClusterVectorEnv
from palgym.errors import ConfigError

CASES = {
    "placement": ("palgym/PALPlacement-v0", {"window": 20}),
    "scheduling": ("palgym/PALScheduling-v0", {"window": 20}),
    "dynamic-online": ("palgym/PALPlacement-v0", {
        "window": 20, "preset": "dynamic", "belief": "online", "observed_rates": True,
        "max_tiers": 6, "reward": "relative", "baseline_policy": "pal",
        "duration_knowledge": "noisy"}),
    "scheduling-work-conserving": ("palgym/PALScheduling-v0", {
        "window": 20, "work_conserving": True}),
    "scheduling-unknown-sticky": ("palgym/PALScheduling-v0", {
        "window": 20, "duration_knowledge": "unknown", "sticky": True,
        "preset": "pal-artifact", "fallback_policy": "pm-first", "class_reorder": False}),
}
N = 3


def _rollout_pair(env_id: str, kwargs: dict, mode: AutoresetMode, steps: int, seed: int):
    batched = gym.make_vec(env_id, num_envs=N, vectorization_mode="vector_entry_point",
                           autoreset_mode=mode, **kwargs)
    single = gym.vector.SyncVectorEnv(
        [lambda: gym.make(env_id, disable_env_checker=True, **kwargs) for _ in range(N)],
        autoreset_mode=mode)
    assert isinstance(batched, ClusterVectorEnv)
    rng = np.random.default_rng(seed)
    obs_b, info_b = batched.reset(seed=seed)
    obs_s, info_s = single.reset(seed=seed)
    assert info_b["episode_hash"].tolist() == info_s["episode_hash"].tolist()
    ended = 0
    for step in range(steps):
        masks = np.stack(single.call("action_masks"))
        np.testing.assert_array_equal(batched.action_masks(), masks, err_msg=f"step {step}")
        for key in obs_s:
            np.testing.assert_array_equal(obs_b[key], obs_s[key], err_msg=f"{key} step {step}")
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs_b, rew_b, term_b, trunc_b, info_b = batched.step(actions)
        obs_s, rew_s, term_s, trunc_s, info_s = single.step(actions)
        np.testing.assert_array_equal(rew_b, rew_s, err_msg=f"rewards step {step}")
        np.testing.assert_array_equal(term_b, term_s)
        np.testing.assert_array_equal(trunc_b, trunc_s)
        np.testing.assert_array_equal(info_b["invalid_action"], np.zeros(N, bool))
        done = term_s | trunc_s
        ended += int(done.sum())
        key = "final_info" if mode is AutoresetMode.SAME_STEP else None
        for i in np.flatnonzero(done):
            metrics_b = (info_b[key] if key else info_b)["episode_metrics"]
            metrics_s = (info_s[key] if key else info_s)["episode_metrics"]
            assert metrics_b["avg_jct_s"][i] == metrics_s["avg_jct_s"][i]
            assert metrics_b["num_completed"][i] == metrics_s["num_completed"][i]
            if key:
                for k in obs_s:
                    np.testing.assert_array_equal(info_b["final_obs"][i][k],
                                                  info_s["final_obs"][i][k])
    batched.close()
    single.close()
    return ended


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_batched_rows_play_the_single_envs_episodes(case: str, mode: AutoresetMode) -> None:
    env_id, kwargs = CASES[case]
    ended = _rollout_pair(env_id, kwargs, mode, steps=400, seed=5)
    assert ended >= 1, "the rollout must cross an autoreset to test it"


def test_default_make_vec_is_the_batched_env_and_seeds_rows_as_gymnasium() -> None:
    """``make_vec`` without a mode uses the vector entry point; ``reset(seed=s)`` gives row i
    the episode of a single env reset with s + i."""
    batched = gym.make_vec("palgym/PALPlacement-v0", num_envs=2, window=20)
    assert isinstance(batched, ClusterVectorEnv)
    _, info = batched.reset(seed=11)
    for i in range(2):
        _, single = gym.make("palgym/PALPlacement-v0", window=20).reset(seed=11 + i)
        assert info["episode_hash"][i] == single["episode_hash"]
    assert batched.action_masks().shape == (2, batched.single_action_space.n)


def test_reset_mask_resets_only_the_named_rows() -> None:
    batched = ClusterVectorEnv(2, window=20)
    obs, _ = batched.reset(seed=0)
    masks = batched.action_masks()
    actions = np.array([np.flatnonzero(m)[0] for m in masks])
    stepped, *_ = batched.step(actions)
    again, info = batched.reset(seed=[0, 1], options={"reset_mask": np.array([True, False])})
    for key in obs:
        np.testing.assert_array_equal(again[key][0], obs[key][0])
        np.testing.assert_array_equal(again[key][1], stepped[key][1])
    assert info["_episode_hash"].tolist() == [True, False]


@pytest.mark.parametrize("bad", [0, -2, 1.5, True])
def test_bad_num_envs_is_refused(bad) -> None:
    with pytest.raises(ConfigError, match="num_envs"):
        ClusterVectorEnv(bad, window=20)


def test_bad_autoreset_mode_and_action_shape_are_refused() -> None:
    with pytest.raises(ConfigError, match="autoreset_mode"):
        ClusterVectorEnv(2, autoreset_mode="Disabled", window=20)
    batched = ClusterVectorEnv(2, window=20)
    batched.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        batched.step(np.array([0, 0, 0]))


def test_sb3_native_vec_env_equals_dummy_vec_env_of_monitored_envs() -> None:
    """The SB3 adapter gives what DummyVecEnv(Monitor(env)) gives: observations, float32
    rewards, dones, terminal observations and Monitor records, for the same seeds."""
    pytest.importorskip("stable_baselines3")
    from agents.sb3.envs import make_vec_env

    env_id, kwargs = CASES["scheduling"]
    native = make_vec_env(env_id, N, 7, kwargs, "native")
    dummy = make_vec_env(env_id, N, 7, kwargs, "dummy")
    assert native.env_is_wrapped(__import__("stable_baselines3").common.monitor.Monitor) \
        == [True] * N
    rng = np.random.default_rng(2)
    obs_n, obs_d = native.reset(), dummy.reset()
    episodes = 0
    for step in range(400):
        masks = np.stack(dummy.env_method("action_masks"))
        np.testing.assert_array_equal(np.stack(native.env_method("action_masks")), masks)
        for key in obs_d:
            np.testing.assert_array_equal(obs_n[key], obs_d[key], err_msg=f"step {step}")
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs_n, rew_n, done_n, info_n = native.step(actions)
        obs_d, rew_d, done_d, info_d = dummy.step(actions)
        assert rew_n.dtype == rew_d.dtype == np.float32
        np.testing.assert_array_equal(rew_n, rew_d)
        np.testing.assert_array_equal(done_n, done_d)
        for i in np.flatnonzero(done_d):
            episodes += 1
            ep_n, ep_d = info_n[i]["episode"], info_d[i]["episode"]
            assert (ep_n["r"], ep_n["l"], ep_n["num_invalid_actions"]) == \
                (ep_d["r"], ep_d["l"], ep_d["num_invalid_actions"])
            assert info_n[i]["TimeLimit.truncated"] == info_d[i]["TimeLimit.truncated"]
            for key in obs_d:
                np.testing.assert_array_equal(info_n[i]["terminal_observation"][key],
                                              info_d[i]["terminal_observation"][key])
    assert episodes >= 1
    native.close()
    dummy.close()


def test_native_vec_env_refuses_a_curriculum() -> None:
    pytest.importorskip("stable_baselines3")
    from agents.sb3.envs import make_vec_env

    with pytest.raises(ConfigError, match="curriculum"):
        make_vec_env("palgym/PALPlacement-v0", 2, 0, {"window": 20, "reward": "relative"},
                     "native", curriculum=0.5)
