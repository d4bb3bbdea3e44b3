"""The PM-First and PAL per-job rules on the compiled kernels (:mod:`palgym.policies.pal_kernel`),
as the placement walks call them, with the per-class tables the kernels read.

A policy uses them only where they are exact twins of the numpy rules: numba installed, GPU g
on node g // G_n, and (PAL) the ascending node order; :func:`compiled_rule` returns None
otherwise and the policy keeps its numpy rule.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from palgym.policies.base import Sampler
from palgym.policies.pal import MatrixEntry
from palgym.policies.slowdown import SlowdownFactors
from palgym.sim.config import PalNodeOrder
from palgym.sim.types import BoolArray, IntArray, Locality
from palgym.sim.views import SimView

Allocate = Callable[[SimView, int, BoolArray, Sampler], "IntArray | None"]


@dataclass(frozen=True, eq=False)
class ClassTables:
    """What the kernels read of a class, for every class.

    Attributes:
        sf: float64 (C, G) slowdown factors; labels: int64 (C, G) k-means labels.
        rank: int64 (C, G), each factor's rank among the class's distinct factors.
        num_labels: int64 (C,), labels per class.
        num_tiers: int64 (C,), distinct factors per class.
        entry_value: per class, float64 (E_c,) PAL matrix entries' tier values, cost order.
        entry_rank: per class, int64 (E_c,) the tier (rank) of each entry's value.
        entry_within: per class, bool (E_c,) True for WITHIN entries.
    """

    sf: np.ndarray
    labels: IntArray
    rank: IntArray
    num_labels: IntArray
    num_tiers: IntArray
    entry_value: tuple[np.ndarray, ...]
    entry_rank: tuple[IntArray, ...]
    entry_within: tuple[BoolArray, ...]

    @classmethod
    def build(cls, factors: SlowdownFactors,
              entries: tuple[tuple[MatrixEntry, ...], ...] = ()) -> ClassTables:
        """Tables of ``factors`` (and of PAL's matrix ``entries`` per class, if given)."""
        sf = np.array(factors.sf, dtype=np.float64)  # copies: a snapshot (see matches)
        labels = np.array(factors.labels, dtype=np.int64)
        rank = np.stack([np.unique(row, return_inverse=True)[1].reshape(-1) for row in sf])
        values = tuple(np.array([e.value for e in row], dtype=np.float64) for row in entries)
        return cls(
            sf=sf, labels=labels, rank=rank.astype(np.int64),
            num_labels=labels.max(axis=1, initial=0) + 1,
            num_tiers=rank.max(axis=1, initial=0).astype(np.int64) + 1,
            entry_value=values,
            entry_rank=tuple(np.searchsorted(np.unique(sf[c]), row).astype(np.int64)
                             for c, row in enumerate(values)),
            entry_within=tuple(np.array([e.locality is Locality.WITHIN for e in row],
                                        dtype=np.bool_) for row in entries),
        )


    def matches(self, factors: SlowdownFactors) -> bool:
        """True if ``factors`` still hold the values these tables were built from (False
        after an in-place change: rebuild the tables and forget walks made with them)."""
        return bool(np.array_equal(self.sf, factors.sf)
                    and np.array_equal(self.labels, factors.labels))


def contiguous(sim: SimView) -> bool:
    """True if GPU g is on node g // G_n (the layout the kernels assume)."""
    layout = sim.node_of_gpu
    if layout.ndim != 1:
        return False
    return layout.tobytes() == _contiguous_bytes(layout.size, sim.cluster.gpus_per_node,
                                                 layout.dtype.str)


@functools.lru_cache(maxsize=32)
def _contiguous_bytes(size: int, gpus_per_node: int, dtype: str) -> bytes:
    """The bytes of the contiguous layout ``arange(size) // gpus_per_node`` as ``dtype``."""
    return (np.arange(size) // gpus_per_node).astype(dtype).tobytes()


def compiled_rule(sim: SimView, tables: ClassTables, pal: bool,
                  node_order: PalNodeOrder = PalNodeOrder.ASCENDING) -> Allocate | None:
    """The compiled PM-First (``pal`` False) or PAL rule for ``sim``, or None where it does
    not apply (see module docstring; PAL also needs ``node_order`` ascending)."""
    from palgym._numba import AVAILABLE

    if not AVAILABLE or not contiguous(sim):
        return None
    if pal and node_order is not PalNodeOrder.ASCENDING:
        return None
    from palgym.policies.pal_kernel import pal_pick, pm_first_pick

    per_node = sim.cluster.gpus_per_node
    jobs = sim.jobs
    sf, rank, labels, num_labels = tables.sf, tables.rank, tables.labels, tables.num_labels
    num_tiers = tables.num_tiers

    def pm_first(sim: SimView, job: int, free: BoolArray, _: Sampler) -> IntArray | None:
        c, n = int(jobs.perf_class[job]), int(jobs.num_gpus[job])
        out = np.empty(n, dtype=np.int64)
        found = pm_first_pick(free, n, rank[c], labels[c], num_labels[c], per_node, out)
        return out if found >= 0 else None

    def pal_rule(sim: SimView, job: int, free: BoolArray, _: Sampler) -> IntArray | None:
        c, n = int(jobs.perf_class[job]), int(jobs.num_gpus[job])
        out = np.empty(n, dtype=np.int64)
        found = pal_pick(free, n, sf[c], rank[c], labels[c], num_labels[c], per_node,
                         num_tiers[c], tables.entry_rank[c], tables.entry_within[c], out)
        return out if found else None

    return pal_rule if pal else pm_first
