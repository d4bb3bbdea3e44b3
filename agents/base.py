"""The agent protocol shared by heuristics and learned models, and the heuristic agents.

Every agent answers SB3's ``predict(observation, state, episode_start, deterministic)`` with
``(action, state)``, plus sb3-contrib's ``action_masks`` keyword, so one evaluation loop drives
PAL and a MaskablePPO model alike (:func:`agents.rollout.rollout`).

**How a heuristic sees the env.** A heuristic decides from the simulator, not from the
observation, so it must be *bound* to the env it acts in before each episode:
``agent.bind(env)`` (returns the agent). Every agent has ``bind``; for learned agents it does
nothing. Binding (rather than a ``predict(..., env=env)`` keyword) keeps ``predict`` exactly
SB3's signature, so any code written for SB3 policies calls a bound heuristic unchanged.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np

from palgym.errors import ConfigError, PalgymError
from palgym.policies import PLACEMENT_NAMES, is_placement_name, placement_name
from palgym.policies.backfill import split_name
from palgym.policies.guards import is_guard, parse_guard
from palgym.policies.registry import placement_entry

State = tuple[np.ndarray, ...] | None


@runtime_checkable
class Agent(Protocol):
    """What the evaluation loop needs from an agent.

    Attributes:
        name: label used in result tables (a policy name or the model's path).
        uses_masks: True if ``predict`` honours ``action_masks`` (MaskablePPO, heuristics).
    """

    name: str
    uses_masks: bool

    def bind(self, env: gym.Env[Any, Any]) -> Agent:
        """Attach the env the next episodes run in; returns the agent."""
        ...

    def predict(
        self,
        observation: Any,
        state: State = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, State]:
        """The action for ``observation`` (SB3 semantics) and the next recurrent state."""
        ...


def heuristic_env_kwargs(name: str) -> dict[str, bool]:
    """Env kwargs a heuristic needs (``sticky``, ``class_reorder``) to act as its policy: the
    placement's traits in the registry (:mod:`palgym.policies.registry`).

    The episode itself (trace, window, profile, seed) does not depend on them, so every policy
    still runs on the identical episode.

    Raises:
        ConfigError: for an unknown placement name.
    """
    if is_guard(name):  # an aging guard: its base placement's traits (palgym.policies.guards)
        name = parse_guard(name, "placement").base_placement
    name = placement_name(name) if ":" in name else name  # MODULE:CLASS: imported, registered
    if not is_placement_name(name):
        raise ConfigError(f"unknown placement {name!r}: one of {list(PLACEMENT_NAMES)}, each "
                          "also as NAME+backfill or NAME+easy (scheduling task, non-sticky)")
    entry = placement_entry(split_name(name)[0])
    return {"sticky": entry.sticky, "class_reorder": entry.class_reorder}


class HeuristicAgent:
    """A placement heuristic (PAL, PM-First, Packed, Random; with backfilling, e.g.
    ``pal+easy``, in the scheduling task; any registered placement) as an agent of the env.

    Acts through ``env.unwrapped.heuristic_action(name)``, which reproduces
    :func:`palgym.run_episode` bit for bit when the env is made with
    :func:`heuristic_env_kwargs` (the env checks this and raises otherwise).

    Args:
        name: placement name (:data:`palgym.PLACEMENT_NAMES`, or one of
            :data:`palgym.policies.BACKFILL_PLACEMENT_NAMES`, or ``MODULE:CLASS``).

    Raises:
        ConfigError: for an unknown name.
    """

    uses_masks = True

    def __init__(self, name: str) -> None:
        self.env_kwargs = heuristic_env_kwargs(name)
        self.name = placement_name(name) if ":" in name and not is_guard(name) else name
        self._env: Any = None

    def __repr__(self) -> str:
        return f"HeuristicAgent({self.name!r})"

    def bind(self, env: gym.Env[Any, Any]) -> HeuristicAgent:
        """Act in ``env`` (any wrapper of a palgym ClusterEnv) from now on; returns self."""
        self._env = env.unwrapped
        return self

    def predict(
        self,
        observation: Any,
        state: State = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, State]:
        """The heuristic's action in the bound env (the observation is not used).

        Args:
            observation: ignored (the heuristic reads the simulator's views).
            state: ignored; returned as is.
            episode_start: ignored.
            deterministic: ignored (Random placement draws from the episode's seeded stream).
            action_masks: ignored (the heuristic's action is always valid).

        Returns:
            ``(action, state)`` with ``action`` an int64 array of shape ().

        Raises:
            PalgymError: if the agent was never bound to an env.
        """
        if self._env is None:
            raise PalgymError(f"{self!r} is not bound: call agent.bind(env) before predict()")
        return np.asarray(self._env.heuristic_action(self.name), dtype=np.int64), state
