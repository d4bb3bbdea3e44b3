"""The env's action codec: one ``Discrete(K * M + 1)`` index <-> (window slot, candidate).

Action ``slot * M + candidate`` gives the job in window slot ``slot`` (0 <= slot < K) its
placement candidate ``candidate`` (0 <= candidate < M); action ``K * M`` ends the round; a
work-conserving scheduling env (``work_conserving=True``, :mod:`palgym.envs.conserving`) has
one more, ``K * M + 1``, RESERVE (``Discrete(K * M + 2)``). The
candidates of a job, in order (M = 2T + 2, T = ``max_tiers``): T within-node tiers, T
best-factor tiers, Packed, Random (:mod:`palgym.envs.candidates`).

The codec is the one place that knows this arithmetic: the env, both decision backends and the
heuristics take their indices from it (a numba kernel takes :attr:`ActionCodec.num_candidates`
as a plain int).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from palgym.errors import ConfigError, InvalidActionError

_INTEGERS = (int, np.integer)
MAX_SLOTS = 1024
"""The most job slots (``num_slots``) an env takes (the default is 16)."""
MAX_TIERS = 1024
"""The most slowdown tiers (``max_tiers``) an env takes (the default is 4; a cluster of G GPUs
has at most G distinct factors)."""
MAX_SLOT_ACTIONS = 1 << 15
"""The most slot actions K * (2T + 2) an env takes: the masks, candidates and observation grow
with it (K = 1024 slots of T = 15 tiers builds an env in 150 MB; K = T = 256, 131,584 actions,
took 275 MB), so a results file or run configuration cannot make palgym build a huge env."""


@dataclass(frozen=True)
class ActionCodec:
    """Encode and decode the actions of an env with K slots and T tiers.

    Args:
        num_slots: K, job slots of the window (>= 1).
        max_tiers: T, slowdown tiers per class the candidates have room for (>= 1).
        reserve: the RESERVE action exists (a work-conserving env, :mod:`palgym.envs.conserving`).

    Attributes:
        num_candidates: M = 2T + 2, candidates per slot.
        n: K * M + 1, the number of actions (K * M + 2 with ``reserve``).
        END_ROUND: K * M, the action that ends the round.
        RESERVE: K * M + 1, the action that makes the round's EASY reservation for its blocked
            head job (with ``reserve``; -1, no action, without).
        PACKED: 2T, the candidate index of the Packed candidate.
        RANDOM: 2T + 1, the candidate index of the Random candidate.

    Raises:
        ConfigError: ``num_slots`` or ``max_tiers`` is not an int in [1, :data:`MAX_SLOTS`] /
            [1, :data:`MAX_TIERS`], or K * (2T + 2) passes :data:`MAX_SLOT_ACTIONS` (naming it
            and its value).
    """

    num_slots: int
    max_tiers: int
    reserve: bool = False
    num_candidates: int = field(init=False)
    n: int = field(init=False)
    END_ROUND: int = field(init=False)  # noqa: N815 - a constant of the codec
    RESERVE: int = field(init=False)  # noqa: N815
    PACKED: int = field(init=False)  # noqa: N815
    RANDOM: int = field(init=False)  # noqa: N815

    def __post_init__(self) -> None:
        for name, most in (("num_slots", MAX_SLOTS), ("max_tiers", MAX_TIERS)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, _INTEGERS) or value < 1:
                raise ConfigError(f"{name} must be an int >= 1, got {value!r}")
            if value > most:
                raise ConfigError(f"{name} must be at most {most}, got {value!r}")
        candidates = 2 * int(self.max_tiers) + 2
        if int(self.num_slots) * candidates > MAX_SLOT_ACTIONS:
            raise ConfigError(f"num_slots x (2 max_tiers + 2) must be at most "
                              f"{MAX_SLOT_ACTIONS}, got {self.num_slots} x {candidates}")
        object.__setattr__(self, "num_candidates", candidates)
        object.__setattr__(self, "END_ROUND", int(self.num_slots) * candidates)
        if not isinstance(self.reserve, bool):
            raise ConfigError(f"reserve must be a bool, got {self.reserve!r}")
        end = int(self.num_slots) * candidates
        object.__setattr__(self, "n", end + 1 + int(self.reserve))
        object.__setattr__(self, "RESERVE", end + 1 if self.reserve else -1)
        object.__setattr__(self, "PACKED", 2 * int(self.max_tiers))
        object.__setattr__(self, "RANDOM", 2 * int(self.max_tiers) + 1)

    def within(self, tier: int) -> int:
        """Candidate index of the within-node candidate at tier ``tier`` (0 <= tier < T)."""
        return tier

    def best(self, tier: int) -> int:
        """Candidate index of the best-factor (PM-First) candidate at tier ``tier``."""
        return self.max_tiers + tier

    def candidate_kinds(self) -> tuple[str, ...]:
        """The kind of each candidate index 0 .. M-1, read back from :meth:`within`,
        :meth:`best`, :attr:`PACKED` and :attr:`RANDOM`: ``within_tier{t}``,
        ``best_tier{t}``, ``packed``, ``random`` (part of the env's layout,
        :mod:`palgym.envs.layouts`).

        Raises:
            ValueError: two kinds share an index or an index has none (a codec bug).
        """
        kinds: dict[int, str] = {}
        named = [*((self.within(t), f"within_tier{t}") for t in range(self.max_tiers)),
                 *((self.best(t), f"best_tier{t}") for t in range(self.max_tiers)),
                 (self.PACKED, "packed"), (self.RANDOM, "random")]
        for index, kind in named:
            if index in kinds:
                raise ValueError(f"candidates {kinds[index]} and {kind} share index {index}")
            kinds[index] = kind
        if sorted(kinds) != list(range(self.num_candidates)):
            raise ValueError(f"candidate kinds cover indices {sorted(kinds)}, "
                             f"not 0 .. {self.num_candidates - 1}")
        return tuple(kinds[m] for m in range(self.num_candidates))

    def encode(self, slot: int, candidate: int) -> int:
        """The action giving the job of window slot ``slot`` its candidate ``candidate``.

        Raises:
            ValueError: ``slot`` not in [0, K) or ``candidate`` not in [0, M).
        """
        if not (0 <= slot < self.num_slots and 0 <= candidate < self.num_candidates):
            raise ValueError(
                f"(slot {slot}, candidate {candidate}) is outside [0, {self.num_slots}) x "
                f"[0, {self.num_candidates})"
            )
        return slot * self.num_candidates + candidate

    def decode(self, action: int) -> tuple[int, int]:
        """(slot, candidate) of a placement action (not :attr:`END_ROUND` or :attr:`RESERVE`).

        Raises:
            ValueError: ``action`` is not in [0, K * M).
        """
        if not 0 <= action < self.END_ROUND:
            raise ValueError(f"action {action} is not a placement action [0, {self.END_ROUND})")
        return divmod(action, self.num_candidates)

    def check(self, action: Any) -> int:
        """``action`` as an int, if it belongs to ``Discrete(n)`` (an int or an integer numpy
        scalar / 0-d array in [0, n)), as ``gymnasium.spaces.Discrete.contains`` decides.

        Raises:
            InvalidActionError: naming the action and the space otherwise.
        """
        if type(action) is int:  # the common case first: no conversion
            value = action
        elif isinstance(action, _INTEGERS):
            value = int(action)
        elif isinstance(action, np.ndarray) and action.shape == () and action.dtype.kind in "iu":
            value = int(action)
        else:
            raise InvalidActionError(
                f"action {action!r} (type {type(action).__name__}) is not in the action space "
                f"Discrete({self.n}): an integer in [0, {self.n}) is expected"
            )
        if not 0 <= value < self.n:
            reserve = f", {self.RESERVE} reserves" if self.reserve else ""
            raise InvalidActionError(
                f"action {value} is outside the action space Discrete({self.n}) "
                f"(valid actions are 0 .. {self.n - 1}; {self.END_ROUND} ends the round"
                f"{reserve})"
            )
        return value
