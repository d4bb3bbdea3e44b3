"""stable-baselines3's ``VecEnv`` over palgym's batched vector env.

:class:`NativeVecEnv` steps N palgym episodes in this process with one call to
:class:`palgym.envs.vector.ClusterVectorEnv` (autoreset ``SAME_STEP``, SB3's rule), and gives
SB3 exactly what a ``DummyVecEnv`` of ``Monitor``-wrapped single envs (:func:`agents.sb3.envs.
make_env`) gives for the same seeds and actions: float32 observations and rewards, ``dones``,
``infos[i]["terminal_observation"]`` and ``"TimeLimit.truncated"``, and at each episode's end
the Monitor record ``infos[i]["episode"]`` (``r``: the return rounded to 6 decimals, ``l``:
its steps, ``t``: seconds since the env was made, and :data:`agents.sb3.envs.INFO_KEYWORDS`), so
``env_is_wrapped(Monitor)`` answers True. ``env_method("action_masks")`` (what MaskablePPO
calls every step) reads the batched masks, bool (N, K*M+1), without a call per env.

Seeding (SB3's rule): ``seed(s)`` gives row i the seed ``s + i`` at the next ``reset()``;
later episodes continue each row's own RNG. The rows' ``infos`` carry ``invalid_action``,
``num_invalid_actions`` and, at an episode's end, ``episode_metrics`` and ``episode_note``
(the single env's per-step ``reward_terms`` are not batched).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvStepReturn

from agents.ids import canonical_env_id
from palgym.envs.vector import VECTOR_ENTRY_POINT, ClusterVectorEnv
from palgym.errors import ConfigError

MONITOR_KEYWORDS: tuple[str, ...] = ("num_invalid_actions",)
"""Integer ``info`` keys copied into each episode's Monitor record (the
:data:`agents.sb3.envs.INFO_KEYWORDS` of a Monitor-wrapped single env)."""


class NativeVecEnv(VecEnv):
    """N palgym episodes as one SB3 ``VecEnv`` (see the module docstring).

    Args:
        env_id: a palgym id (``palgym/PALPlacement-v0``; a ``palgym:`` prefix is allowed),
            built with ``gymnasium.make_vec`` through its vector entry point.
        num_envs: N >= 1.
        env_kwargs: the single env's arguments (:class:`palgym.envs.cluster_env.ClusterEnv`).

    Raises:
        ConfigError: for ``num_envs < 1``, an id without palgym's batched env, or bad env
            arguments.
    """

    def __init__(self, env_id: str, num_envs: int, env_kwargs: Mapping[str, Any]) -> None:
        import palgym  # noqa: F401 - registers the ids

        spec = gym.spec(canonical_env_id(env_id))
        if spec.vector_entry_point != VECTOR_ENTRY_POINT:
            raise ConfigError(f"{env_id} has no palgym batched env: use vec_env dummy or "
                              "subproc")
        venv = gym.make_vec(spec.id, num_envs=num_envs, vectorization_mode="vector_entry_point",
                            autoreset_mode=AutoresetMode.SAME_STEP, copy=False,
                            **dict(env_kwargs))
        assert isinstance(venv, ClusterVectorEnv)
        self.venv = venv
        super().__init__(self.venv.num_envs, self.venv.single_observation_space,
                         self.venv.single_action_space)
        self._actions = np.zeros(self.num_envs, dtype=np.int64)
        self._returns: list[list[float]] = [[] for _ in range(self.num_envs)]
        self._t_start = time.time()

    # ------------------------------------------------------------------ VecEnv
    def reset(self) -> dict[str, np.ndarray]:
        seeds = list(self._seeds)
        if any(self._options):
            for i in range(self.num_envs):  # rows with their own options
                mask = np.zeros(self.num_envs, dtype=np.bool_)
                mask[i] = True
                options = dict(self._options[i] or {}, reset_mask=mask)
                obs, infos = self.venv.reset(seed=seeds, options=options)
                self.reset_infos[i] = _row(infos, i)
        else:
            obs, infos = self.venv.reset(seed=seeds)
            self.reset_infos = [_row(infos, i) for i in range(self.num_envs)]
        self._returns = [[] for _ in range(self.num_envs)]
        self._reset_seeds()
        self._reset_options()
        return _copy(obs)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions).reshape(self.num_envs)

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, terminated, truncated, infos = self.venv.step(self._actions)
        dones = terminated | truncated
        final = infos.get("_final_obs")
        invalid, num_invalid = infos["invalid_action"], infos["num_invalid_actions"]
        rows: list[dict[str, Any]] = []
        for i in range(self.num_envs):
            self._returns[i].append(float(rewards[i]))
            info: dict[str, Any] = {
                "invalid_action": bool(invalid[i]), "num_invalid_actions": int(num_invalid[i]),
                "TimeLimit.truncated": bool(truncated[i] and not terminated[i]),
            }
            if dones[i]:
                assert final is not None and final[i]
                last = _row(infos["final_info"], i)
                info["terminal_observation"] = {k: np.array(v) for k, v in
                                                infos["final_obs"][i].items()}
                info["episode_metrics"] = last["episode_metrics"]
                info["episode_note"] = last["episode_note"]
                record = {"r": round(sum(self._returns[i]), 6), "l": len(self._returns[i]),
                          "t": round(time.time() - self._t_start, 6)}
                record.update({key: int(last[key]) for key in MONITOR_KEYWORDS})
                info["episode"] = record
                self._returns[i] = []
                self.reset_infos[i] = _row(infos, i)
            rows.append(info)
        return _copy(obs), rewards.astype(np.float32), dones, rows

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        envs = self._rows(indices)
        return [env.get_wrapper_attr(attr_name) for env in envs]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        for env in self._rows(indices):
            env.set_wrapper_attr(attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        if method_name == "action_masks" and not method_args and not method_kwargs:
            masks = self.venv.action_masks()
            return [masks[i] for i in self._get_indices(indices)]
        return [env.get_wrapper_attr(method_name)(*method_args, **method_kwargs)
                for env in self._rows(indices)]

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper[Any, Any, Any, Any]],
                       indices: VecEnvIndices = None) -> list[bool]:
        recorded = issubclass(Monitor, wrapper_class)
        return [recorded for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [env.render() for env in self.venv.envs]

    def action_masks(self) -> np.ndarray:
        """bool (N, K*M+1): every row's valid actions now."""
        return self.venv.action_masks()

    # ------------------------------------------------------------------ internals
    def _rows(self, indices: VecEnvIndices) -> list[Any]:
        return [self.venv.envs[i] for i in self._get_indices(indices)]



def _row(infos: dict[str, Any], i: int) -> dict[str, Any]:
    """Row i's entries of a Gymnasium vector info dict (keys whose ``_key`` mask is set)."""
    row = {}
    for key, value in infos.items():
        if key.startswith("_"):
            continue
        mask = infos.get("_" + key)
        if mask is not None and mask[i]:
            row[key] = _row(value, i) if isinstance(value, dict) else value[i]
    return row


def _copy(obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {key: value.copy() for key, value in obs.items()}
