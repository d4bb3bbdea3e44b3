"""Vectorised use of the env: Gymnasium vector envs and SB3 / sb3-contrib (training extra)."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

import palgym  # noqa: F401  (registers the ids)

ENV_IDS = ("palgym/PALPlacement-v0", "palgym/PALScheduling-v0")


def _make(env_id: str = "palgym/PALPlacement-v0", window: int = 30):
    def thunk() -> gym.Env:
        # "module:id": a spawned worker imports palgym (which registers the ids) itself.
        return gym.make(f"palgym:{env_id}", window=window)

    return thunk


def _masked_rollout(vec: gym.vector.VectorEnv, steps: int, seed: int) -> list[tuple]:
    rng = np.random.default_rng(seed)
    obs, _ = vec.reset(seed=[0, 1, 2, 3])
    out = []
    for _ in range(steps):
        masks = vec.call("action_masks")
        actions = np.array([int(rng.choice(np.flatnonzero(m))) for m in masks])
        obs, rewards, terminated, truncated, _ = vec.step(actions)
        out.append((actions.tobytes(), rewards.tobytes(), terminated.tobytes(),
                    truncated.tobytes(), *(obs[k].tobytes() for k in sorted(obs))))
    return out


def test_async_vector_env_matches_serial() -> None:
    serial = gym.vector.SyncVectorEnv([_make() for _ in range(4)])
    parallel = gym.vector.AsyncVectorEnv([_make() for _ in range(4)])
    try:
        assert _masked_rollout(parallel, 60, 3) == _masked_rollout(serial, 60, 3)
    finally:
        parallel.close()
        serial.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_sb3_env_checker_has_no_warnings(env_id: str) -> None:
    checker = pytest.importorskip("stable_baselines3.common.env_checker")
    env = gym.make(env_id, window=30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checker.check_env(env.unwrapped)


@pytest.mark.parametrize("vec_kind", ["dummy", "subproc"])
def test_maskable_ppo_trains_on_vectorised_envs(vec_kind: str) -> None:
    """MaskablePPO runs a tiny training on 4 envs without any wrapper (masks come from the
    env's own ``action_masks``, also through SubprocVecEnv)."""
    contrib = pytest.importorskip("sb3_contrib")
    vec_env = pytest.importorskip("stable_baselines3.common.vec_env")
    cls = vec_env.DummyVecEnv if vec_kind == "dummy" else vec_env.SubprocVecEnv
    venv = cls([_make(window=20) for _ in range(4)])
    try:
        model = contrib.MaskablePPO(
            "MultiInputPolicy", venv, n_steps=32, batch_size=64, n_epochs=1, seed=0,
            device="cpu",
        )
        model.learn(total_timesteps=256)
        assert model.num_timesteps >= 256
        masks = np.stack(venv.env_method("action_masks"))
        actions, _ = model.predict(venv.reset(), action_masks=masks, deterministic=True)
        assert all(masks[i, a] for i, a in enumerate(actions))
    finally:
        venv.close()
