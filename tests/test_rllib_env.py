"""RLlib's masked-action layout (agents.rllib.env): the wrapper's contract, and a PPO smoke run.

The contract needs no ray: the Dict observation's keys, shapes and dtypes; the mask equals the
env's ``action_masks()``; the flattened observation is the env's arrays concatenated in sorted
key order; the same seed and actions give the same episode as the unwrapped env. The training
run (examples/rllib_ppo.py) skips when ray[rllib] is not installed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import palgym  # noqa: F401 - registers the env ids
from agents.rllib.env import ACTION_MASK_KEY, OBSERVATIONS_KEY, RLlibActionMaskEnv, make_rllib_env

REPO_ROOT = Path(__file__).resolve().parents[1]
ENV_ID = "palgym/PALPlacement-v0"
ENV_KWARGS: dict[str, Any] = {"trace": "bundled", "window": 12}


def concatenated(obs: dict[str, np.ndarray]) -> np.ndarray:
    """The env's observation arrays joined in sorted key order (how Dict spaces flatten)."""
    return np.concatenate([np.asarray(obs[key]).ravel() for key in sorted(obs)])


def test_observation_space_follows_rllibs_layout() -> None:
    inner = gym.make(ENV_ID, **ENV_KWARGS)
    env = RLlibActionMaskEnv(gym.make(ENV_ID, **ENV_KWARGS))
    width = sum(int(np.prod(space.shape)) for space in inner.observation_space.values())
    num_actions = int(inner.action_space.n)
    space = env.observation_space
    assert isinstance(space, gym.spaces.Dict)
    assert set(space.keys()) == {OBSERVATIONS_KEY, ACTION_MASK_KEY}
    assert (OBSERVATIONS_KEY, ACTION_MASK_KEY) == ("observations", "action_mask")
    assert space[OBSERVATIONS_KEY].shape == (width,)
    assert space[OBSERVATIONS_KEY].dtype == np.float32
    assert space[ACTION_MASK_KEY].shape == (num_actions,)
    assert space[ACTION_MASK_KEY].dtype == np.float32
    assert env.action_space == inner.action_space


def run_pair(flatten: bool, seed: int, invalid_every: int = 0) -> int:
    """Step the wrapped and the unwrapped env with the same actions; return the steps taken."""
    plain = gym.make(ENV_ID, **ENV_KWARGS)
    wrapped = RLlibActionMaskEnv(gym.make(ENV_ID, **ENV_KWARGS), flatten=flatten)
    obs, info = plain.reset(seed=seed)
    wobs, winfo = wrapped.reset(seed=seed)
    assert winfo == info
    chooser = np.random.default_rng(seed)
    steps, done = 0, False
    while not done:
        mask = plain.unwrapped.action_masks()
        assert_same_observation(wrapped, wobs, obs, mask, flatten)
        valid, invalid = np.flatnonzero(mask), np.flatnonzero(~mask)
        use_invalid = invalid_every and steps % invalid_every == 0 and invalid.size
        action = int(chooser.choice(invalid if use_invalid else valid))
        obs, reward, terminated, truncated, info = plain.step(action)
        wobs, wreward, wterminated, wtruncated, winfo = wrapped.step(action)
        assert (wreward, wterminated, wtruncated) == (reward, terminated, truncated)
        assert winfo.keys() == info.keys()
        assert winfo["num_invalid_actions"] == info["num_invalid_actions"]
        done, steps = terminated or truncated, steps + 1
    assert wrapped.observation_space.contains(wobs)
    return steps


def assert_same_observation(wrapped: RLlibActionMaskEnv, wobs: dict[str, Any],
                            obs: dict[str, np.ndarray], mask: np.ndarray, flatten: bool) -> None:
    assert wrapped.observation_space.contains(wobs)
    assert wobs[ACTION_MASK_KEY].dtype == np.float32
    assert np.array_equal(wobs[ACTION_MASK_KEY], mask.astype(np.float32))
    assert set(np.unique(wobs[ACTION_MASK_KEY])) <= {0.0, 1.0}
    assert np.array_equal(wrapped.action_masks(), mask)
    if flatten:
        assert wobs[OBSERVATIONS_KEY].dtype == np.float32
        assert np.array_equal(wobs[OBSERVATIONS_KEY], concatenated(obs))
    else:
        assert wobs[OBSERVATIONS_KEY].keys() == obs.keys()
        assert all(np.array_equal(wobs[OBSERVATIONS_KEY][k], obs[k]) for k in obs)


@pytest.mark.parametrize("flatten", [True, False])
def test_episodes_match_the_unwrapped_env(flatten: bool) -> None:
    assert run_pair(flatten, seed=5) > 12  # at least one decision per job of the window


def test_invalid_actions_pass_through_and_are_counted_alike() -> None:
    run_pair(True, seed=2, invalid_every=3)


def test_env_creator_takes_rllibs_env_config() -> None:
    env = make_rllib_env({"env_id": "palgym/PALScheduling-v0", "flatten": False,
                          "trace": "bundled", "window": 8})
    assert env.unwrapped.task == "scheduling"
    assert isinstance(env.observation_space[OBSERVATIONS_KEY], gym.spaces.Dict)
    obs, _ = env.reset(seed=0)
    assert np.array_equal(obs[ACTION_MASK_KEY], env.unwrapped.action_masks().astype(np.float32))


def test_non_discrete_env_is_rejected() -> None:
    env = gym.make("Pendulum-v1")
    with pytest.raises(TypeError, match="Discrete action space"):
        RLlibActionMaskEnv(env)


def test_rllib_ppo_trains_with_no_invalid_action(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("ray.rllib", reason="ray[rllib] is not installed (pip install -e '.[ray]')")
    pytest.importorskip("torch", reason="RLlib's masking RLModule needs torch")
    script = REPO_ROOT / "examples" / "rllib_ppo.py"
    spec = importlib.util.spec_from_file_location("rllib_ppo", script)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    status = example.main(["--iterations", "2", "--batch-size", "128", "--minibatch", "64",
                           "--epochs", "1", "--window", "12"])
    printed = capsys.readouterr().out
    assert "iteration 2: env steps 128," in printed
    assert "invalid actions over 2 iterations: 0" in printed
    # every iteration made a learner update: RLlib reported its policy loss and entropy
    lines = [line for line in printed.splitlines() if line.startswith("iteration ")]
    assert len(lines) == 2 and all("policy loss n/a" not in line for line in lines)
    assert all("entropy n/a" not in line for line in lines)
    assert status == 0
