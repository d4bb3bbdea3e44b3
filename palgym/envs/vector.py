"""The batched vector env: N palgym episodes stepped by one call into preallocated arrays.

:class:`ClusterVectorEnv` is Gymnasium's ``VectorEnv`` for both tasks, registered as the
``vector_entry_point`` of ``palgym/PALPlacement-v0`` and ``palgym/PALScheduling-v0``, so
``gymnasium.make_vec(env_id, num_envs=N, **env_kwargs)`` builds it. It holds N unwrapped
:class:`~palgym.envs.cluster_env.ClusterEnv` s built once from one set of arguments and
sharing what their episodes share (the loaded traces and profile, the :class:`EpisodeMemo`'s
profile fits and reference episodes), steps them in one call and writes each env's
observation, action mask, reward and flags into arrays allocated once (N rows each), so a
step allocates no per-env batch. Every env, preset, belief, duration knowledge and
``observed_rates`` setting of the single env is supported, because each row *is* a single
env: the batched env adds no semantics of its own, and episode i of row i is the episode a
single env reset with the same seed plays (``tests/test_vector_env.py`` checks observations,
rewards, flags and masks step for step against a list of single envs).

Seeding (Gymnasium's rule): ``reset(seed=s)`` resets row i with seed ``s + i`` (a list gives
each row its own seed); later episodes of a row continue its own RNG.

Autoreset (``autoreset_mode``, Gymnasium's two modes; ``metadata["autoreset_mode"]``):

- ``NEXT_STEP`` (the default, as Gymnasium's own vector envs): the step that ends row i's
  episode returns its last observation and ``terminations[i]`` / ``truncations[i]``; the next
  ``step`` ignores ``actions[i]``, resets row i and returns the new episode's first
  observation with reward 0 and both flags False (and the reset's info keys for that row).
- ``SAME_STEP`` (what stable-baselines3 expects): the step that ends the episode resets row
  i at once and returns the new episode's first observation; the ended episode's last
  observation and info are ``infos["final_obs"][i]`` and ``infos["final_info"][i]``.

``infos`` follows Gymnasium's vector convention (a key's value is an array over rows, with
a boolean ``"_" + key`` array naming the rows that have it). Every step carries
``invalid_action`` (bool (N,)) and ``num_invalid_actions`` (int64 (N,)); a row whose
episode ended carries ``episode_metrics`` and ``episode_note`` (the single env's final
``info``); a row that was reset carries the single env's reset info (``trace``,
``window_start``, ``episode_hash``, ...). The single env's per-step ``reward_terms`` are not
batched (ask a single env for them). :meth:`action_masks` gives bool (N, K*M+1), the valid
actions of every row now.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from palgym.envs.cluster_env import ClusterEnv
from palgym.errors import ConfigError

VECTOR_ENTRY_POINT = "palgym.envs.vector:make_vector_env"
"""The ``vector_entry_point`` of palgym's registered ids."""
AUTORESET_MODES: tuple[AutoresetMode, ...] = (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)
"""The autoreset modes :class:`ClusterVectorEnv` supports."""


def _autoreset_mode(mode: str | AutoresetMode) -> AutoresetMode:
    try:
        parsed = AutoresetMode(mode)
    except ValueError:
        parsed = None
    if parsed not in AUTORESET_MODES:
        raise ConfigError(f"autoreset_mode must be one of {[m.value for m in AUTORESET_MODES]},"
                          f" got {mode!r}")
    return parsed


class ClusterVectorEnv(VectorEnv[dict[str, np.ndarray], np.ndarray, np.ndarray]):
    """N palgym episodes stepped by one call (see the module docstring).

    Args:
        num_envs: N >= 1 rows.
        autoreset_mode: ``AutoresetMode.NEXT_STEP`` (default) or ``SAME_STEP`` (or their
            values, ``"NextStep"`` / ``"SameStep"``).
        copy: return copies of the observation buffers (True, the default, as Gymnasium's
            vector envs); False returns the buffers themselves, valid until the next call.
        **env_kwargs: the single env's arguments (:class:`ClusterEnv`), the same for every row.

    Raises:
        ConfigError: for ``num_envs < 1``, an unknown autoreset mode or bad env arguments
            (the single env's errors).
    """

    def __init__(self, num_envs: int, *,
                 autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
                 copy: bool = True, **env_kwargs: Any) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) \
                or num_envs < 1:
            raise ConfigError(f"num_envs must be an integer >= 1, got {num_envs!r}")
        self.num_envs = int(num_envs)
        self.autoreset_mode = _autoreset_mode(autoreset_mode)
        self.copy = copy
        first = ClusterEnv(**env_kwargs)
        # the other rows reuse the first row's loaded traces and profile and its memo
        shared = dict(env_kwargs, trace=list(first.traces))
        if first.profile is not None:
            shared["profile"] = first.profile
        self.envs: list[ClusterEnv] = [first]
        for _ in range(1, self.num_envs):
            env = ClusterEnv(**shared)
            env.memo = first.memo
            self.envs.append(env)
        self.metadata = dict(first.metadata, autoreset_mode=self.autoreset_mode)
        self.render_mode = first.render_mode
        self.spec = None
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.codec = first.codec
        n = self.num_envs
        spaces = first.observation_space
        assert isinstance(spaces, gym.spaces.Dict)
        self._obs: dict[str, np.ndarray] = {key: np.zeros((n, *space.shape), dtype=space.dtype)
                     for key, space in spaces.spaces.items()}
        self._masks: np.ndarray = np.zeros((n, first.codec.n), dtype=np.bool_)
        self._rewards: np.ndarray = np.zeros(n, dtype=np.float64)
        self._terminations: np.ndarray = np.zeros(n, dtype=np.bool_)
        self._truncations: np.ndarray = np.zeros(n, dtype=np.bool_)
        self._invalid: np.ndarray = np.zeros(n, dtype=np.bool_)
        self._num_invalid: np.ndarray = np.zeros(n, dtype=np.int64)
        self._autoreset: np.ndarray = np.zeros(n, dtype=np.bool_)

    # ------------------------------------------------------------------ API
    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: dict[str, Any] | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset every row (or the rows of ``options["reset_mask"]``, bool (N,)).

        Args:
            seed: None (fresh entropy), an int s (row i gets s + i) or N seeds.
            options: the single env's reset options, given to every row reset.

        Returns:
            The batched observation (each key (N, ...) float32) and the rows' reset infos.

        Raises:
            ValueError: a seed list or reset mask of the wrong length or dtype.
        """
        n = self.num_envs
        if seed is None:
            seeds: list[int | None] = [None] * n
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            seeds = [int(seed) + i for i in range(n)]
        elif isinstance(seed, Sequence):
            seeds = list(seed)
            if len(seeds) != n:
                raise ValueError(f"seed: give one seed per env ({n}), got {len(seeds)}")
        else:
            raise TypeError(f"seed must be None, an int or {n} seeds, got {seed!r}")
        options = dict(options) if options is not None else None
        mask = np.ones(n, dtype=np.bool_)
        if options is not None and "reset_mask" in options:
            mask = options.pop("reset_mask")
            if not isinstance(mask, np.ndarray) or mask.shape != (n,) or mask.dtype != np.bool_:
                raise ValueError(f"options['reset_mask'] must be a bool array of shape ({n},)")
        infos: dict[str, Any] = {}
        for i in map(int, np.flatnonzero(mask)):
            env = self.envs[i]
            obs, info = env.reset(seed=seeds[i], options=options)
            self._write(i, obs, env)
            self._terminations[i] = self._truncations[i] = self._autoreset[i] = False
            self._num_invalid[i] = 0
            infos = self._add_info(infos, info, i)
        return self._observations(), infos

    def step(self, actions: np.ndarray | Sequence[int]
             ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray,
                        dict[str, Any]]:
        """Step every row with its action (int (N,); see the module docstring for the rows
        being reset).

        Returns:
            observations (each key (N, ...) float32), rewards float64 (N,), terminations and
            truncations bool (N,), infos (Gymnasium's vector convention).

        Raises:
            InvalidActionError: a row's action is outside the action space, or the mask
                forbids it and the env is ``strict`` (the single env's errors).
            ValueError: ``actions`` does not have N entries.
        """
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), got {actions.shape}")
        infos: dict[str, Any] = {}
        same_step = self.autoreset_mode is AutoresetMode.SAME_STEP
        for i, env in enumerate(self.envs):
            if self._autoreset[i]:  # NEXT_STEP: this step resets the row
                obs, info = env.reset()
                self._rewards[i] = 0.0
                self._terminations[i] = self._truncations[i] = self._autoreset[i] = False
                self._invalid[i] = False
                self._num_invalid[i] = 0
                self._write(i, obs, env)
                infos = self._add_info(infos, info, i)
                continue
            obs, reward, terminated, truncated, info = env.step(actions[i])
            self._rewards[i] = reward
            self._terminations[i] = terminated
            self._truncations[i] = truncated
            self._invalid[i] = info["invalid_action"]
            self._num_invalid[i] = info["num_invalid_actions"]
            if terminated or truncated:
                if same_step:  # the row's info is the new episode's, as Gymnasium's
                    infos = self._add_info(infos, {"final_obs": obs, "final_info": info}, i)
                    obs, row_info = env.reset()
                else:
                    self._autoreset[i] = True
                    row_info = {key: info[key] for key in ("episode_metrics", "episode_note")}
                infos = self._add_info(infos, row_info, i)
            self._write(i, obs, env)
        infos["invalid_action"] = self._invalid.copy()
        infos["_invalid_action"] = np.ones(self.num_envs, dtype=np.bool_)
        infos["num_invalid_actions"] = self._num_invalid.copy()
        infos["_num_invalid_actions"] = np.ones(self.num_envs, dtype=np.bool_)
        return (self._observations(), self._rewards.copy(), self._terminations.copy(),
                self._truncations.copy(), infos)

    def action_masks(self) -> np.ndarray:
        """bool (N, K*M+1): each row's valid actions now (a copy); no row is all False."""
        return self._masks.copy()

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Each row's attribute ``name``, called with the arguments if it is callable."""
        results = []
        for env in self.envs:
            attr = env.get_wrapper_attr(name)
            results.append(attr(*args, **kwargs) if callable(attr) else attr)
        return tuple(results)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Each row's attribute ``name``."""
        return tuple(env.get_wrapper_attr(name) for env in self.envs)

    def set_attr(self, name: str, values: Any | Sequence[Any]) -> None:
        """Set attribute ``name`` of every row (one value for all, or a list of N values)."""
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(f"set_attr: give one value per env ({self.num_envs}), "
                             f"got {len(values)}")
        for env, value in zip(self.envs, values, strict=True):
            env.set_wrapper_attr(name, value)

    def render(self) -> tuple[Any, ...] | None:
        """Each row's frame (the single env's ``render``), or None without a render mode."""
        if self.render_mode is None:
            return None
        return tuple(env.render() for env in self.envs)

    def close_extras(self, **kwargs: Any) -> None:
        """Close every row."""
        for env in self.envs:
            env.close()

    # ------------------------------------------------------------------ internals
    def _write(self, i: int, obs: dict[str, np.ndarray], env: ClusterEnv) -> None:
        for key, buffer in self._obs.items():
            buffer[i] = obs[key]
        self._masks[i] = env.action_masks()

    def _observations(self) -> dict[str, np.ndarray]:
        if self.copy:
            return {key: buffer.copy() for key, buffer in self._obs.items()}
        return self._obs


def make_vector_env(num_envs: int, **kwargs: Any) -> gym.vector.VectorEnv[Any, Any, Any]:
    """``vector_entry_point`` of the registered ids: :class:`ClusterVectorEnv`.

    Gymnasium's ``make_vec`` passes ``max_episode_steps`` when the spec has one; palgym's ids
    have none (episodes end by ``max_rounds``), so an explicit one is refused.
    """
    if kwargs.pop("max_episode_steps", None) is not None:
        raise ConfigError("palgym envs end episodes by max_rounds, not max_episode_steps")
    return ClusterVectorEnv(num_envs, **kwargs)
