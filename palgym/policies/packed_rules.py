"""The Packed rule and the sticky Packed walk on the compiled kernels
(:mod:`palgym.policies.packed_kernel`), as the placement walks call them.

Used only where they are exact twins of the numpy rule and walk: numba installed and GPU g on
node g // G_n (:func:`palgym.policies.compiled_rules.contiguous`); the functions return None
otherwise and the policy keeps its numpy path.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from palgym.policies.base import Sampler
from palgym.policies.compiled_rules import contiguous
from palgym.sim.types import BoolArray, IntArray
from palgym.sim.views import SimView

Allocate = Callable[[SimView, int, BoolArray, Sampler], "IntArray | None"]


def _usable(sim: SimView) -> bool:
    from palgym._numba import AVAILABLE

    return AVAILABLE and contiguous(sim)


def compiled_packed_rule(sim: SimView, strict_total: bool) -> Allocate | None:
    """The compiled :func:`~palgym.policies.allocation.packed_allocation` for ``sim`` (None
    where it does not apply)."""
    if not _usable(sim):
        return None
    from palgym.policies.packed_kernel import packed_pick

    per_node = sim.cluster.gpus_per_node
    counts = np.empty(sim.cluster.num_gpus // per_node, dtype=np.int64)
    num_gpus = sim.jobs.num_gpus

    def packed(sim: SimView, job: int, free: BoolArray, _: Sampler) -> IntArray | None:
        n = int(num_gpus[job])
        out = np.empty(n, dtype=np.int64)
        return out if packed_pick(free, n, per_node, strict_total, counts, out) else None

    return packed


def compiled_sticky_packed(sim: SimView, order: IntArray, strict_total: bool,
                           keep_victims_stopped: bool) -> IntArray | None:
    """:func:`~palgym.policies.placement.place_sticky` with the Packed rule and no
    backfilling, in one compiled call: int64 (G,) target allocation (None where it does not
    apply)."""
    if not _usable(sim):
        return None
    from palgym.policies.packed_kernel import sticky_packed_walk

    target: IntArray = sticky_packed_walk(
        np.ascontiguousarray(order, dtype=np.int64), sim.job_of_gpu, sim.jobs.num_gpus,
        sim.num_jobs, sim.cluster.gpus_per_node, strict_total, keep_victims_stopped)
    return target
