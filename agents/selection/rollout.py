"""One rollout of the rollout search (:class:`agents.selection.search.RolloutSearch`): its
selector (the tried rule at its first ask, then the base), its stop rule (the copied stall
detector, the known jobs' end, the horizon in asks or rounds), its state on the engine copies,
and how a decision's round budget is shared among its rollouts.

Shared equally (:func:`equal_share`), each of ``k`` rollouts plays at most ``budget // k``
rounds (at least one, and at most the search's ``rounds``). By successive halving
(:func:`halving_rounds`; K. Jamieson and A. Talwalkar, "Non-stochastic best arm
identification and hyperparameter optimization", AISTATS 2016), where three rules or more
disagree, each of the ``k`` plays ``budget // (2k)`` rounds, then the two of least cost there
play on from where they stopped, sharing what is left (each to at most ``rounds`` in all), and
the least final cost is played. A rollout resumed after its cut goes on with the rule it held
(:class:`RolloutSelector`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents.selection.known_jobs import KNOWN_DONE
from palgym.sim.engine import Simulator
from palgym.sim.stall import StallDetector
from palgym.sim.types import FloatArray, IntArray
from palgym.sim.views import SimView

HORIZON = "horizon"
"""The reason a rollout stopped at its horizon (the estimate is then added)."""
STUCK = "stuck"
"""The reason of a rollout that left queued jobs it could never place (cost inf)."""
TIE_TOLERANCE = 1e-12
"""Relative margin by which a rule must beat the base's choice (and an earlier rule)."""


class RolloutSelector:
    """The selector of one rollout: ``rule`` at its first ask, then ``base``. Asked again
    without an event (a rollout resumed after its cut), it keeps its last choice."""

    def __init__(self, rule: int, base: Callable[[FloatArray, SimView], int]) -> None:
        self.rule, self.base, self.asks, self.last = rule, base, 0, rule

    def __call__(self, features: FloatArray, view: SimView) -> int:
        if self.asks and not view.events_since_commit:
            return self.last
        self.asks += 1
        self.last = self.rule if self.asks == 1 else self.base(features, view)
        return self.last


class RolloutStop:
    """The rollout's stall check: the copied stall detector's, then (``known``) the end of
    the known jobs, then the horizon: the round after which the next ask would be the
    ``horizon + 1``-th after the first, or round ``first + rounds``."""

    def __init__(self, stall: StallDetector | None, selector: RolloutSelector,
                 horizon: int | None, known: bool = False, rounds: int | None = None,
                 first: int = 0) -> None:
        self.stall, self.selector, self.horizon, self.known = stall, selector, horizon, known
        self.last = None if rounds is None else first + rounds

    def check(self, sim: Simulator) -> str:
        if self.stall is not None and (reason := self.stall.check(sim)):
            return reason
        if self.known and sim.active_jobs().size == 0:
            return KNOWN_DONE
        if (self.horizon is not None and self.selector.asks > self.horizon
                and sim.events_since_commit and not sim.ended):
            return HORIZON
        if self.last is not None and sim.round_index >= self.last and not sim.ended:
            return HORIZON
        return ""


@dataclass
class Rollout:
    """A rollout's state on its engine copies, which a later :meth:`RolloutSearch._play`
    resumes.

    Attributes:
        sim, stall, sampler, belief: the copies (:func:`agents.selection.engine_copies.
            copy_context`; belief None when it does not change).
        known: the jobs the cost counts under ``arrivals="known"`` (None: all measured).
        selector: the rollout's :class:`RolloutSelector`.
        first_round: the engine's round when the rollout began.
        reason: why it last stopped (``""``: the episode ended; :data:`HORIZON`;
            :data:`STUCK`; a stall's reason).
    """

    sim: Simulator
    stall: StallDetector | None
    sampler: Any
    belief: Any
    known: int | None
    selector: RolloutSelector
    first_round: int
    reason: str = ""

    def resumable(self, horizon: int | None) -> bool:
        """Stopped by the round bound, so playing on continues it (not by its end, a stall,
        or the ``horizon``-th ask)."""
        return self.reason == HORIZON and (horizon is None or self.selector.asks <= horizon)


def equal_share(budget: int | None, k: int, rounds: int | None) -> int | None:
    """Each of ``k`` rollouts' rounds: ``budget // k`` (at least 1) and at most ``rounds``
    (None: no bound)."""
    if budget is None:
        return rounds
    share = max(budget // k, 1)
    return share if rounds is None else min(rounds, share)


def halving_rounds(budget: int, k: int, rounds: int | None) -> tuple[int, int]:
    """(first, total): successive halving of ``budget`` rounds over ``k`` rollouts; each
    plays ``first = budget // (2k)`` rounds (at least 1), the two finalists on to ``total =
    first + (budget - k first) // 2`` rounds in all; both at most ``rounds``."""
    first = max(budget // (2 * k), 1)
    if rounds is not None:
        first = min(first, rounds)
    total = first + (budget - first * k) // 2
    return first, total if rounds is None else min(total, rounds)


def least(costs: list[float]) -> int:
    """The index of the least cost; ties (within :data:`TIE_TOLERANCE`) go to the earlier."""
    best = 0
    for index, cost in enumerate(costs[1:], start=1):
        if cost < costs[best] - TIE_TOLERANCE * max(abs(costs[best]), 1.0):
            best = index
    return best


def same_target(a: IntArray | None, b: IntArray | None) -> bool:
    """Two targets are the same allocation (None: keep the current one)."""
    import numpy as np

    if a is None or b is None:
        return a is None and b is None
    return bool(np.array_equal(a, b))


__all__ = ["HORIZON", "STUCK", "TIE_TOLERANCE", "Rollout", "RolloutSelector", "RolloutStop",
           "equal_share", "halving_rounds", "least", "same_target"]
