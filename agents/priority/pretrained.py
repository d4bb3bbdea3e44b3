"""Priority orders with a ``MODULE:CLASS`` queue-order name that every palgym command accepts,
e.g. ``python -m palgym.bench run --agent agents.priority.pretrained:ResponseRatio/pal+backfill``:
the hand rule of the family (:class:`ResponseRatio`, not learned).
"""

from __future__ import annotations

from typing import ClassVar

from agents.priority.order import LinearPriorityOrder
from palgym.policies.durations import CLAIRVOYANT, Durations
from palgym.sim.config import PolicyOptions, RemainingTime
from palgym.sim.types import IntArray
from palgym.sim.views import SimView


class ResponseRatio:
    """The hand rule of the family: weights (1, 0, -A, 0, 0), i.e. jobs by
    (1 + remaining GPU-h) / (1 + hours queued)^A, lowest first, with A = :attr:`A` chosen on
    the validation episodes of ``python -m agents.priority grid`` (not learned)."""

    name = "response-ratio"
    static = False
    A: ClassVar[float] = 2.0

    def __init__(self, durations: Durations = CLAIRVOYANT,
                 options: PolicyOptions | None = None) -> None:
        remaining = RemainingTime.IDEAL if options is None else options.srtf_remaining
        self._order = LinearPriorityOrder((1.0, 0.0, -self.A, 0.0, 0.0), durations, remaining,
                                          name=self.name)

    def order(self, sim: SimView) -> IntArray:
        """Active job indices by (priority, key)."""
        return self._order.order(sim)
