"""palgym's envs in RLlib's masked-action convention (RLlib's new API stack).

RLlib's action-masking RLModule (``ActionMaskingTorchRLModule``, ray
``rllib/examples/rl_modules/classes/action_masking_rlm.py``) expects a gymnasium ``Dict``
observation with two keys: ``"observations"`` (what the policy and value networks see) and
``"action_mask"`` (``Box(0.0, 1.0, (n,))``, 1.0 = allowed). It adds ``log(mask)`` (clamped to
``FLOAT_MIN``) to the action logits, so masked actions are never sampled.
:class:`RLlibActionMaskEnv` turns a palgym env into that form; ray is not needed to use it.

The env's own observation is a ``Dict`` of float32 ``Box`` es, which RLlib's default encoders
do not take; by default it is therefore flattened with ``gymnasium.spaces.flatten`` (keys in
the space's sorted order: ``candidates``, ``cluster``, ``jobs``). ``flatten=False`` keeps it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

import palgym  # noqa: F401 - registers the env ids (also in RLlib's worker processes)

OBSERVATIONS_KEY = "observations"
"""Key of the env's (flattened) observation, as RLlib's action-masking RLModule reads it."""
ACTION_MASK_KEY = "action_mask"
"""Key of the action mask, as RLlib's action-masking RLModule reads it."""
PLACEMENT_ENV_ID = "palgym/PALPlacement-v0"


class RLlibActionMaskEnv(gym.ObservationWrapper[dict[str, Any], np.int64, dict[str, Any]]):
    """A palgym env whose observation carries the action mask, in RLlib's layout.

    Observation: ``{"observations": obs, "action_mask": mask}``, ``obs`` float32 (D,) (the
    flattened env observation; the env's own ``Dict`` when ``flatten=False``), ``mask`` float32
    (n,) with 1.0 where ``env.action_masks()`` is True and 0.0 elsewhere. Actions, rewards,
    termination and infos are the env's, unchanged (``info["num_invalid_actions"]`` counts
    actions outside the mask).

    Args:
        env: a palgym env (``gymnasium.make("palgym/PALPlacement-v0", ...)`` or
            ``palgym/PALScheduling-v0``) with a ``Discrete`` action space.
        flatten: flatten the env's observation into one float32 vector.

    Raises:
        TypeError: if the action space is not ``Discrete`` or the env has no ``action_masks``.
    """

    def __init__(self, env: gym.Env[Any, Any], flatten: bool = True) -> None:
        super().__init__(env)
        if not isinstance(env.action_space, spaces.Discrete):
            raise TypeError(f"action masking needs a Discrete action space, got {env.action_space}")
        if not callable(getattr(env.unwrapped, "action_masks", None)):
            raise TypeError(f"{env.unwrapped!r} has no action_masks() method")
        self.flatten = flatten
        self._inner_space = env.observation_space
        inner = spaces.flatten_space(env.observation_space) if flatten else env.observation_space
        n = int(env.action_space.n)
        self.observation_space = spaces.Dict({
            OBSERVATIONS_KEY: inner,
            ACTION_MASK_KEY: spaces.Box(0.0, 1.0, shape=(n,), dtype=np.float32),
        })

    def action_masks(self) -> np.ndarray:
        """bool (n,): the env's valid actions now (also for sb3-contrib's MaskablePPO)."""
        return np.asarray(self.env.unwrapped.action_masks(), dtype=bool)  # type: ignore[attr-defined]

    def observation(self, observation: Any) -> dict[str, Any]:
        """The env's observation and the current mask, in RLlib's layout."""
        inner = spaces.flatten(self._inner_space, observation) if self.flatten else observation
        return {OBSERVATIONS_KEY: inner, ACTION_MASK_KEY: self.action_masks().astype(np.float32)}


def make_rllib_env(env_config: Mapping[str, Any] | None = None) -> RLlibActionMaskEnv:
    """RLlib env creator: ``gymnasium.make(env_id, **kwargs)`` wrapped in RLlib's layout.

    Args:
        env_config: the env's keyword arguments (see ``palgym.envs.ClusterEnv``), plus
            optional ``env_id`` (default ``palgym/PALPlacement-v0``) and ``flatten`` (default
            True). RLlib passes its ``EnvContext`` here.

    Returns:
        The wrapped env.
    """
    kwargs = dict(env_config or {})
    env_id = str(kwargs.pop("env_id", PLACEMENT_ENV_ID))
    flatten = bool(kwargs.pop("flatten", True))
    return RLlibActionMaskEnv(gym.make(env_id, **kwargs), flatten=flatten)
