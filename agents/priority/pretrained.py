"""The committed trained priority orders, each a ``MODULE:CLASS`` queue-order name that every
palgym command accepts, and the hand rule of the same family they are compared with
(:class:`ResponseRatio`, not learned). They were trained, and are run, under a 48 h
starvation floor, as the base order of an aging guard, e.g. ``python -m palgym.bench run --agent
agents.priority.pretrained:AgingPrioritySeed0/pal+backfill+age=48h:fifo/pal+easy`` (its
header's ``entry_kind`` is ``learned``: the class declares ``learned = True``).

The files are in ``agents/pretrained/priority/`` (how they were trained:
``agents/pretrained/README.md``, "A learned priority order").
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from agents.priority.order import LinearPriorityOrder, PretrainedPriorityOrder
from palgym.policies.durations import CLAIRVOYANT, Durations
from palgym.sim.config import PolicyOptions, RemainingTime
from palgym.sim.types import IntArray
from palgym.sim.views import SimView

FOLDER = Path(__file__).resolve().parent.parent / "pretrained" / "priority"
"""Where the trained orders' files are."""


class AgingPrioritySeed0(PretrainedPriorityOrder):
    """The order trained with seed 0."""

    name = "aging-priority-seed0"
    path = FOLDER / "aging-priority-seed0.json"
    learned = True


class AgingPrioritySeed1(PretrainedPriorityOrder):
    """The order trained with seed 1."""

    name = "aging-priority-seed1"
    path = FOLDER / "aging-priority-seed1.json"
    learned = True


class AgingPrioritySeed2(PretrainedPriorityOrder):
    """The order trained with seed 2."""

    name = "aging-priority-seed2"
    path = FOLDER / "aging-priority-seed2.json"
    learned = True


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


class ResponseRatioA1(ResponseRatio):
    """The family's rule with exponent 1 (the hindsight family of ``best-known``'s
    candidates, docs/HEADROOM.md; not learned)."""

    name = "response-ratio-a1"
    A = 1.0


class ResponseRatioA1_5(ResponseRatio):  # noqa: N801 (the exponent 1.5 in the name)
    """The family's rule with exponent 1.5 (as :class:`ResponseRatioA1`)."""

    name = "response-ratio-a1.5"
    A = 1.5


class ResponseRatioA2_5(ResponseRatio):  # noqa: N801
    """The family's rule with exponent 2.5 (as :class:`ResponseRatioA1`)."""

    name = "response-ratio-a2.5"
    A = 2.5


class ResponseRatioA3(ResponseRatio):
    """The family's rule with exponent 3 (as :class:`ResponseRatioA1`)."""

    name = "response-ratio-a3"
    A = 3.0
