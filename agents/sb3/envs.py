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

from agents.ids import canonical_env_id, gym_id
from palgym.envs.layouts import is_selector
from palgym.errors import ConfigError

INFO_KEYWORDS: tuple[str, ...] = ("num_invalid_actions",)
"""``info`` keys the Monitor copies into each finished episode's record (``ep_info_buffer``)."""
VEC_ENV_KINDS: tuple[str, ...] = ("auto", "native", "dummy", "subproc")
DEFAULT_REFERENCES: tuple[str, ...] = ("pal", "packed-non-sticky")
"""The heuristics a training run on a ClusterEnv id compares with when it names none."""


def make_env(env_id: str, env_kwargs: Mapping[str, Any], curriculum: float | None = None
             ) -> gym.Env[Any, Any]:
    """One Monitor-wrapped env (picklable entry point for vector-env workers).

    Args:
        env_id: Gymnasium id, e.g. ``palgym/PALPlacement-v0``.
        env_kwargs: keyword arguments of the env (trace, window, preset, reward, ...).
        curriculum: the floor of :class:`agents.sb3.curriculum.CurriculumWrapper` (None: the
            env's own uniform draw of windows).

    Returns:
        ``Monitor(gym.make("palgym:" + env_id, **env_kwargs))`` recording
        :data:`INFO_KEYWORDS` per episode (the curriculum wrapper inside the Monitor).
    """
    env = gym.make(gym_id(env_id), **dict(env_kwargs))
    if curriculum is not None:
        from agents.sb3.curriculum import CurriculumWrapper

        env = CurriculumWrapper(env, curriculum)
    return Monitor(env, info_keywords=INFO_KEYWORDS)


def has_batched_env(env_id: str) -> bool:
    """Whether ``env_id`` (a ``module:`` prefix allowed) has palgym's batched vector env
    (:class:`palgym.envs.vector.ClusterVectorEnv`) as its vector entry point."""
    import palgym  # noqa: F401 - registers the ids
    from palgym.envs.vector import VECTOR_ENTRY_POINT

    return gym.spec(canonical_env_id(env_id)).vector_entry_point == VECTOR_ENTRY_POINT


def default_references(env_id: str, env_kwargs: Mapping[str, Any]) -> tuple[str, ...]:
    """The references of a training run that names none: :data:`DEFAULT_REFERENCES`, or for
    the selector env the rules of its field (each the constant selector,
    :meth:`palgym.envs.selector.SelectorEnv.heuristic_action`)."""
    if not is_selector(gym_id(env_id)):
        return DEFAULT_REFERENCES
    from palgym.envs.selector import DEFAULT_RULES, parse_rules

    return parse_rules(env_kwargs.get("rules", DEFAULT_RULES))


def start_method() -> str:
    """``forkserver`` where available, else ``spawn`` (never ``fork``: torch threads)."""
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def vec_env_kind(env_id: str, n_envs: int, vec_env: str = "auto",
                 curriculum: float | None = None) -> str:
    """The vector env ``make_vec_env`` builds: ``vec_env``, or for ``auto``: ``native`` when
    ``env_id`` has palgym's batched env, there are several envs and no curriculum; else
    ``dummy`` (one env, the selector env, or a curriculum: it wraps each single env, which the
    batched env does not have, and stepping the N envs in this process costs less than N
    worker processes exchanging observations on a few cores).

    Raises:
        ConfigError: for an unknown ``vec_env``.
    """
    if vec_env not in VEC_ENV_KINDS:
        raise ConfigError(f"vec_env must be one of {list(VEC_ENV_KINDS)}, got {vec_env!r}")
    if vec_env != "auto":
        return vec_env
    native = n_envs > 1 and curriculum is None and has_batched_env(env_id)
    return "native" if native else "dummy"


def make_vec_env(
    env_id: str,
    n_envs: int,
    seed: int,
    env_kwargs: Mapping[str, Any],
    vec_env: str = "auto",
    curriculum: float | None = None,
) -> VecEnv:
    """``n_envs`` seeded copies of the env: batched in-process, one by one, or in workers.

    Args:
        env_id: Gymnasium id.
        n_envs: number of envs (>= 1).
        seed: env ``i`` gets ``seed + i`` at its first reset.
        env_kwargs: keyword arguments of every env.
        vec_env: ``native`` (:class:`agents.sb3.native_vec_env.NativeVecEnv`: the N episodes
            stepped by one call in this process, the fastest on a few cores), ``dummy``
            (SB3's ``DummyVecEnv`` of :func:`make_env` envs), ``subproc`` (one worker process
            per env) or ``auto`` (:func:`vec_env_kind`): ``native`` for several envs of an
            id with palgym's batched env, else ``dummy`` (one env, what the input-driven
            baselines step directly; the selector env; a curriculum, a wrapper of each
            single env).
            ``native`` and ``dummy`` give identical episodes, observations, rewards and
            Monitor records for the same seeds (``tests/test_vector_env.py``).
        curriculum: the curriculum floor of every env (:func:`make_env`; not with
            ``native``).

    Returns:
        The vector env (close it when done).

    Raises:
        ConfigError: for ``n_envs < 1``, an unknown ``vec_env``, ``native`` with a
            curriculum, or bad env kwargs (checked in this process before any worker starts).
    """
    if n_envs < 1:
        raise ConfigError(f"n_envs must be >= 1, got {n_envs}")
    vec_env = vec_env_kind(env_id, n_envs, vec_env, curriculum)
    if vec_env == "native":
        if curriculum is not None:
            raise ConfigError("the curriculum wraps each single env: use vec_env dummy or "
                              "subproc with it, not native")
        from agents.sb3.native_vec_env import NativeVecEnv

        venv: VecEnv = NativeVecEnv(env_id, n_envs, env_kwargs)
        venv.seed(seed)
        return venv
    thunks: list[Callable[[], gym.Env[Any, Any]]] = [
        functools.partial(make_env, env_id, dict(env_kwargs), curriculum) for _ in range(n_envs)
    ]
    if vec_env == "subproc":
        make_env(env_id, env_kwargs, curriculum).close()  # bad kwargs raise here, not in a worker
        venv = SubprocVecEnv(thunks, start_method=start_method())
    else:
        venv = DummyVecEnv(thunks)
    venv.seed(seed)
    return venv
