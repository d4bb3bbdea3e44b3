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

from abc import ABC, abstractmethod
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np

from palgym.errors import ConfigError, PalgymError
from palgym.policies import PLACEMENT_NAMES, is_placement_name, placement_name
from palgym.policies.backfill import split_name
from palgym.policies.guards import is_guard, parse_guard
from palgym.policies.registry import placement_entry

State = tuple[np.ndarray, ...] | None


class Query(NamedTuple):
    """The arguments of one ``predict`` call (SB3's, with sb3-contrib's ``action_masks``)."""

    observation: Any
    state: State
    episode_start: np.ndarray | None
    deterministic: bool
    action_masks: np.ndarray | None


class Agent(ABC):
    """What the evaluation loop needs from an agent.

    Any object whose class has ``bind`` and ``predict`` counts as an agent
    (``isinstance(x, Agent)``), subclass or not. The agents of this package subclass it and
    answer each ``predict`` in :meth:`answer`.

    Attributes:
        name: label used in result tables (a policy name or the model's path).
        uses_masks: True if ``predict`` honours ``action_masks`` (MaskablePPO, heuristics).
    """

    name: str
    uses_masks: bool = True

    @classmethod
    def __subclasshook__(cls, other: type) -> bool:
        if cls is Agent:
            return all(callable(getattr(other, member, None)) for member in ("bind", "predict"))
        return NotImplemented  # type: ignore[no-any-return]

    def bind(self, env: gym.Env[Any, Any]) -> Agent:
        """Attach the env the next episodes run in; returns the agent (this default attaches
        nothing)."""
        return self

    def predict(
        self,
        observation: Any,
        state: State = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, State]:
        """The action for ``observation`` (SB3 semantics) and the next recurrent state:
        :meth:`answer` of the call's :class:`Query`."""
        return self.answer(Query(observation, state, episode_start, deterministic, action_masks))

    @abstractmethod
    def answer(self, query: Query) -> tuple[np.ndarray, State]:
        """``(action, state)`` for one ``predict`` call."""


class EnvAgent(Agent):
    """An agent that decides from the simulator of the env it is bound to, not from the
    observation (``agent.bind(env)`` before each episode); it answers with :meth:`act`."""

    _env: Any = None

    def bind(self, env: gym.Env[Any, Any]) -> EnvAgent:
        """Act in ``env`` (a palgym env or any wrapper of one) from now on; returns self."""
        self._env = env.unwrapped
        return self

    def answer(self, query: Query) -> tuple[np.ndarray, State]:
        """``(action, state)``: :meth:`act` in the bound env as an int64 array of shape (),
        the state returned as is.

        Raises:
            PalgymError: if the agent was never bound to an env.
        """
        if self._env is None:
            raise PalgymError(f"agent {self.name!r} is not bound: call agent.bind(env) before "
                              "predict()")
        return np.asarray(self.act(self._env, query), dtype=np.int64), query.state

    @abstractmethod
    def act(self, env: Any, query: Query) -> int:
        """The action in the unwrapped env ``env`` for ``query``."""


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


class HeuristicAgent(EnvAgent):
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

    def __init__(self, name: str) -> None:
        self.env_kwargs = heuristic_env_kwargs(name)
        self.name = placement_name(name) if ":" in name and not is_guard(name) else name

    def __repr__(self) -> str:
        return f"HeuristicAgent({self.name!r})"

    def act(self, env: Any, query: Query) -> int:
        """The heuristic's action in ``env``; the observation, masks and ``deterministic``
        are not used (Random placement draws from the episode's seeded stream; the heuristic's
        action is always valid)."""
        return int(env.heuristic_action(self.name))
