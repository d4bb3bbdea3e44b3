"""Deprecated: :meth:`palgym.sim.engine.Simulator.idle_rounds` replaces :func:`idle_rounds`.

Kept so that callers written against the earlier interface keep working; it only forwards.
"""

from __future__ import annotations

from palgym.sim.engine import Simulator


def idle_rounds(sim: Simulator) -> int:
    """``sim.idle_rounds()`` (see :meth:`palgym.sim.engine.Simulator.idle_rounds`)."""
    return sim.idle_rounds()
