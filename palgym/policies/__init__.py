"""Queue orders and placement policies, by the names used in CLIs and result tables.

Placement: ``pal``, ``pm-first``, ``packed-sticky``, ``packed-non-sticky``, ``random-sticky``,
``random-non-sticky``. Queue orders: ``fifo``, ``las``, ``srtf``, ``tiresias``.
"""

from __future__ import annotations

from palgym.errors import ConfigError
from palgym.policies.base import NumpySampler, PlacementPolicy, QueueOrder, Sampler, make_sampler
from palgym.policies.durations import CLAIRVOYANT, Durations
from palgym.policies.ordering import FIFO, LAS, SRTF, Tiresias
from palgym.policies.placement import PAL, Packed, PMFirst, RandomPlacement
from palgym.policies.slowdown import ClusterCountRule, SlowdownFactors
from palgym.sim.config import SimConfig

PLACEMENT_NAMES: tuple[str, ...] = (
    "pal", "pm-first", "packed-sticky", "packed-non-sticky", "random-sticky", "random-non-sticky",
)
QUEUE_ORDER_NAMES: tuple[str, ...] = ("fifo", "las", "srtf", "tiresias")


def make_queue_order(name: str, durations: Durations = CLAIRVOYANT) -> QueueOrder:
    """The queue order called ``name``, knowing job durations as ``durations`` does.

    Raises:
        ConfigError: for an unknown name (listing the known ones), or ``srtf`` when
            ``durations`` withholds durations.
    """
    if name not in QUEUE_ORDER_NAMES:
        raise ConfigError(f"unknown queue order {name!r}; known: {', '.join(QUEUE_ORDER_NAMES)}")
    orders: dict[str, type[QueueOrder]] = {"fifo": FIFO, "las": LAS, "tiresias": Tiresias}
    return SRTF(durations=durations) if name == "srtf" else orders[name]()


def make_placement(name: str, factors: SlowdownFactors, config: SimConfig) -> PlacementPolicy:
    """The placement policy called ``name``.

    Args:
        name: one of :data:`PLACEMENT_NAMES`.
        factors: slowdown factors (used by ``pal`` and ``pm-first``).
        config: simulation options (PAL reads the locality penalty).

    Raises:
        ConfigError: for an unknown name (listing the known ones).
    """
    if name == "pal":
        return PAL(factors, config.locality_penalties)
    if name == "pm-first":
        return PMFirst(factors)
    simple: dict[str, PlacementPolicy] = {
        "packed-sticky": Packed(sticky=True),
        "packed-non-sticky": Packed(sticky=False),
        "random-sticky": RandomPlacement(sticky=True),
        "random-non-sticky": RandomPlacement(sticky=False),
    }
    if name not in simple:
        raise ConfigError(f"unknown placement {name!r}; known: {', '.join(PLACEMENT_NAMES)}")
    return simple[name]


__all__ = [
    "CLAIRVOYANT", "FIFO", "LAS", "PAL", "PLACEMENT_NAMES", "QUEUE_ORDER_NAMES", "SRTF",
    "ClusterCountRule", "Durations",
    "NumpySampler", "PMFirst", "Packed", "PlacementPolicy", "QueueOrder", "RandomPlacement",
    "Sampler", "SlowdownFactors", "Tiresias", "make_placement", "make_queue_order", "make_sampler",
]
