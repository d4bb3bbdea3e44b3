"""The compiled forms of palgym's own policies: what the compiled heuristic loop
(:mod:`palgym.driver.kernel`) needs of a placement or a queue order, or why it cannot serve it.

A form is registered with its policy (:mod:`palgym.policies.catalog`,
:attr:`palgym.policies.registry.PlacementEntry.compiled`); :func:`palgym.driver.compiled_plan`
asks it once per episode. A placement's form gives its rule code and options for
:func:`palgym.policies.place_kernel.place`, a queue order's its key code for
:mod:`palgym.policies.order_kernel`. ``tests/test_driver.py`` runs every policy with a form on
both loops and requires the same episode bit for bit.
"""

from __future__ import annotations

from palgym.policies.backfill import BackfillMode
from palgym.policies.compiled_rules import contiguous
from palgym.policies.durations import DurationKnowledge
from palgym.policies.ordering import FIFO, LAS, SRSF, SRTF, Tiresias
from palgym.policies.placement import PAL, Packed, PMFirst
from palgym.policies.random_placement import RandomPlacement
from palgym.policies.registry import CompiledRule
from palgym.sim.config import AttainedService, PalNodeOrder, RemainingTime
from palgym.sim.views import SimView


def _backfills(placement: PAL | PMFirst | Packed | RandomPlacement) -> str | None:
    """Why a backfilling placement has no compiled form (None: it does not backfill)."""
    if placement.backfill.mode != BackfillMode.NONE:
        return f"placement {placement.name!r} backfills"
    return None


def random_form(view: SimView, placement: RandomPlacement) -> CompiledRule | str:
    """Random-Sticky / Random-Non-Sticky without backfilling (any layout)."""
    from palgym.policies import place_kernel as codes

    del view
    return _backfills(placement) or CompiledRule(
        (codes.RANDOM_RULE, int(placement.sticky), 0, int(placement.keep_victims_stopped)),
        None)


def packed_form(view: SimView, placement: Packed) -> CompiledRule | str:
    """Packed-Sticky / Packed-Non-Sticky without backfilling, on the contiguous layout."""
    from palgym.policies import place_kernel as codes

    reason = _backfills(placement) or _layout(view)
    return reason or CompiledRule(
        (codes.PACKED_RULE, int(placement.sticky), int(placement.strict_total),
         int(placement.keep_victims_stopped)), None)


def ranked_form(view: SimView, placement: PAL | PMFirst) -> CompiledRule | str:
    """PM-First and PAL (ascending node order) without backfilling, on the contiguous layout,
    with the factors their tables were built from."""
    from palgym.policies import place_kernel as codes

    reason = _backfills(placement) or _layout(view)
    if reason:
        return reason
    if isinstance(placement, PAL) and placement.node_order is not PalNodeOrder.ASCENDING:
        return f"PAL's node order {placement.node_order.value!r}"
    if not placement.tables.matches(placement.factors):
        return "slowdown factors changed since the placement was made"
    code = codes.PAL_RULE if isinstance(placement, PAL) else codes.PM_FIRST_RULE
    return CompiledRule((code, 0, 0, 0), placement.tables)


def _layout(view: SimView) -> str | None:
    """Why the deterministic rules cannot run on ``view``'s layout (None: they can)."""
    return None if contiguous(view) else "a GPU layout other than the contiguous one"


def order_form(order: FIFO | LAS | SRTF | Tiresias) -> int | str:
    """The key code of FIFO, LAS, SRTF, SRSF or Tiresias (SRTF and SRSF with clairvoyant
    durations), or why it has none."""
    from palgym.policies import order_kernel as codes

    if isinstance(order, FIFO):
        return codes.FIFO_KEY
    if isinstance(order, LAS | Tiresias) and (
            isinstance(order, LAS) or order.service is AttainedService.WALL_CLOCK):
        wall = order.service is AttainedService.WALL_CLOCK
        return codes.LAS_WALL_KEY if wall else codes.LAS_GPU_KEY
    if isinstance(order, Tiresias):
        return codes.TIRESIAS_2D_KEY
    if order.durations.knowledge is not DurationKnowledge.CLAIRVOYANT:
        return f"queue order {order.name} with {order.durations.knowledge.value} durations"
    nominal = order.remaining is RemainingTime.NOMINAL
    if isinstance(order, SRSF):
        return codes.SRSF_NOMINAL_KEY if nominal else codes.SRSF_IDEAL_KEY
    return codes.SRTF_NOMINAL_KEY if nominal else codes.SRTF_IDEAL_KEY
