"""Training and evaluation envs: Monitor-wrapped palgym envs, vectorised and seeded.

Envs are made with ``gym.make("palgym:" + env_id, **env_kwargs)``: the ``module:`` prefix makes
a freshly started worker (``SubprocVecEnv`` with ``forkserver`` / ``spawn``) import palgym,
which registers the ids. Seeding follows SB3: ``venv.seed(seed)`` gives env ``i`` the seed
``seed + i`` at its first reset; later episodes continue each env's own RNG.
"""

from __future__ import annotations

import functools
import multiprocessing
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv

from agents.ids import gym_id
from palgym.errors import ConfigError

INFO_KEYWORDS: tuple[str, ...] = ("num_invalid_actions",)
"""``info`` keys the Monitor copies into each finished episode's record (``ep_info_buffer``)."""
VEC_ENV_KINDS: tuple[str, ...] = ("auto", "dummy", "subproc")


def make_env(env_id: str, env_kwargs: Mapping[str, Any], curriculum: float | None = None
             ) -> gym.Env[Any, Any]:
    """One Monitor-wrapped env (picklable entry point for vector-env workers).

    Args:
        env_id: Gymnasium id, e.g. ``palgym/PALPlacement-v0``.
        env_kwargs: keyword arguments of the env (trace, window, preset, reward, ...).
        curriculum: the floor of :class:`agents.curriculum.CurriculumWrapper` (None: the
            env's own uniform draw of windows).

    Returns:
        ``Monitor(gym.make("palgym:" + env_id, **env_kwargs))`` recording
        :data:`INFO_KEYWORDS` per episode (the curriculum wrapper inside the Monitor).
    """
    env = gym.make(gym_id(env_id), **dict(env_kwargs))
    if curriculum is not None:
        from agents.curriculum import CurriculumWrapper

        env = CurriculumWrapper(env, curriculum)
    return Monitor(env, info_keywords=INFO_KEYWORDS)


def start_method() -> str:
    """``forkserver`` where available, else ``spawn`` (never ``fork``: torch threads)."""
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def make_vec_env(
    env_id: str,
    n_envs: int,
    seed: int,
    env_kwargs: Mapping[str, Any],
    vec_env: str = "auto",
    curriculum: float | None = None,
) -> VecEnv:
    """``n_envs`` seeded copies of the env, in-process or in worker processes.

    Args:
        env_id: Gymnasium id.
        n_envs: number of envs (>= 1).
        seed: env ``i`` gets ``seed + i`` at its first reset.
        env_kwargs: keyword arguments of every env.
        vec_env: ``auto`` (``SubprocVecEnv`` when ``n_envs > 1``), ``dummy`` or ``subproc``.
        curriculum: the curriculum floor of every env (:func:`make_env`).

    Returns:
        The vector env (close it when done).

    Raises:
        ConfigError: for ``n_envs < 1``, an unknown ``vec_env`` or bad env kwargs (checked
            in this process before any worker starts).
    """
    if n_envs < 1:
        raise ConfigError(f"n_envs must be >= 1, got {n_envs}")
    if vec_env not in VEC_ENV_KINDS:
        raise ConfigError(f"vec_env must be one of {list(VEC_ENV_KINDS)}, got {vec_env!r}")
    thunks: list[Callable[[], gym.Env[Any, Any]]] = [
        functools.partial(make_env, env_id, dict(env_kwargs), curriculum) for _ in range(n_envs)
    ]
    subproc = vec_env == "subproc" or (vec_env == "auto" and n_envs > 1)
    venv: VecEnv
    if subproc:
        make_env(env_id, env_kwargs, curriculum).close()  # bad kwargs raise here, not in a worker
        venv = SubprocVecEnv(thunks, start_method=start_method())
    else:
        venv = DummyVecEnv(thunks)
    venv.seed(seed)
    return venv
