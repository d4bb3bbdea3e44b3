"""Placement policies: Packed / Random (sticky and non-sticky), PM-First and PAL.

Every policy walks the ordered queue. Without backfilling (``backfill="none"``, the PAL
artifact) it stops at the first job it cannot place (head-of-line blocking); with
``"first-fit"`` or ``"easy"`` the walk goes on past it (:mod:`palgym.policies.backfill`).

- Non-sticky: all GPUs are re-placed from an empty cluster each round (free migration).
- Sticky: running jobs keep their GPUs; a job that does not fit stops running jobs from the
  lowest priority upward, one at a time, retrying after each; if it still fails, placement stops
  (the victims stay stopped with ``keep_victims_stopped``, as in the artifact).
  With backfilling the walk goes on instead, and every later job starts only on GPUs free at
  that point: a backfilled job never preempts (victims left stopped may themselves backfill).
- Class-reordered (PM-First, PAL): the longest prefix of the order whose total demand fits the
  cluster is stably sorted by perf class (A, B, C, D), the rest follows in order.

Every policy reads the simulation through its :class:`~palgym.sim.views.SimView`; its options
are its own fields (:func:`palgym.policies.make_placement` fills them from a configuration's
policy options).

Source: PAL, SC24, Sections IV-B, IV-C; artifact ``placement/*.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from palgym.errors import coerce_enum
from palgym.policies.allocation import packed_allocation
from palgym.policies.backfill import NO_BACKFILL, Backfill, with_backfill
from palgym.policies.base import Sampler
from palgym.policies.compiled_rules import ClassTables, compiled_rule
from palgym.policies.packed_rules import compiled_packed_rule, compiled_sticky_packed
from palgym.policies.pal import MatrixEntry, matrix_entries, pal_allocation
from palgym.policies.pm_first import pm_first_allocation
from palgym.policies.random_placement import RandomPlacement as RandomPlacement
from palgym.policies.slowdown import SlowdownFactors
from palgym.policies.walk_memo import WalkMemo, place_from_empty_memo
from palgym.policies.walks import Allocate as Allocate
from palgym.policies.walks import place_from_empty as place_from_empty
from palgym.policies.walks import place_sticky as place_sticky
from palgym.sim.config import PalNodeOrder
from palgym.sim.types import BoolArray, IntArray, PerfClass
from palgym.sim.views import SimView


def fitting_prefix(sim: SimView, order: IntArray) -> int:
    """Length of the longest prefix of ``order`` (int64 (A,) job indices) whose total demand
    fits the cluster: the jobs every PAL-artifact policy places in a round."""
    demand = sim.jobs.num_gpus[order].cumsum()
    return int(demand.searchsorted(sim.cluster.num_gpus, side="right"))


def class_reordered(sim: SimView, order: IntArray, cut: int | None = None) -> IntArray:
    """The longest prefix of ``order`` whose demand fits the cluster, stably sorted by class,
    followed by the rest of ``order`` unchanged (PM-First and PAL). ``cut``: that prefix's
    length if already known (:func:`fitting_prefix`)."""
    if cut is None:
        cut = fitting_prefix(sim, order)
    prefix = order[:cut]
    prefix = prefix[np.argsort(sim.jobs.perf_class[prefix], kind="stable")]
    return np.concatenate([prefix, order[cut:]])


def _packed(strict_total: bool) -> Allocate:
    def allocate(sim: SimView, job: int, free: BoolArray, sampler: Sampler) -> IntArray | None:
        del sampler
        return packed_allocation(
            free, int(sim.jobs.num_gpus[job]), sim.cluster.gpus_per_node, strict_total
        )

    return allocate


def _memo_safe(backfill: Backfill) -> bool:
    """EASY's plan reads remaining times, which change every round even without an event, so
    it reports ``deterministic=False`` (the heuristic loop then re-plans every round)."""
    return backfill.mode != "easy"


def _non_sticky(sim: SimView, sequence: IntArray, allocate: Allocate, sampler: Sampler,
                backfill: Backfill, memo: WalkMemo, context: object) -> IntArray:
    """The non-sticky walk of a deterministic rule: reusing the last walk's GPU sets
    (:func:`palgym.policies.walk_memo.place_from_empty_memo`) without backfilling, the plain
    walk with it (a backfilled job's GPUs depend on the jobs skipped before it)."""
    if backfill.mode == "none":
        return place_from_empty_memo(sim, sequence, allocate, sampler, memo, context)
    return place_from_empty(sim, sequence, allocate, sampler, backfill)


@dataclass(frozen=True)
class Packed:
    """Packed-Sticky / Packed-Non-Sticky (variability-blind consolidation).

    Attributes:
        sticky: running jobs keep their GPUs.
        backfill: the walk's backfilling.
        strict_total: Packed-Sticky spreads a job over nodes only when strictly more GPUs than
            it needs are free (``SimConfig.packed_sticky_strict_total``).
        keep_victims_stopped: sticky victims of a failed attempt stay stopped
            (``SimConfig.sticky_keep_victims_stopped``).
    """

    sticky: bool
    backfill: Backfill = NO_BACKFILL
    strict_total: bool = False
    keep_victims_stopped: bool = False
    memo: WalkMemo = field(default_factory=WalkMemo, init=False, repr=False, compare=False)

    @property
    def name(self) -> str:
        """Table name (with its backfill suffix)."""
        base = "packed-sticky" if self.sticky else "packed-non-sticky"
        return with_backfill(base, self.backfill.mode)

    @property
    def deterministic(self) -> bool:
        """No RNG draws (False for EASY: its plan may change without an event)."""
        return _memo_safe(self.backfill)

    def place(self, sim: SimView, order: IntArray, sampler: Sampler) -> IntArray:
        """Target allocation (see module docstring)."""
        if self.sticky:
            strict = self.strict_total
            if self.backfill.mode == "none":
                target = compiled_sticky_packed(sim, order, strict, self.keep_victims_stopped)
                if target is not None:
                    return target
            rule = compiled_packed_rule(sim, strict) or _packed(strict)
            return place_sticky(sim, order, rule, sampler, self.backfill,
                                self.keep_victims_stopped)
        rule = compiled_packed_rule(sim, False) or _packed(False)
        return _non_sticky(sim, order, rule, sampler, self.backfill, self.memo, "packed")


@dataclass(frozen=True)
class PMFirst:
    """PM-First: class-reordered, non-sticky, best slowdown factor first."""

    factors: SlowdownFactors
    backfill: Backfill = NO_BACKFILL
    sticky: bool = False
    memo: WalkMemo = field(default_factory=WalkMemo, init=False, repr=False, compare=False)
    tables: ClassTables = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tables", ClassTables.build(self.factors))

    @property
    def name(self) -> str:
        """Table name (with its backfill suffix)."""
        return with_backfill("pm-first", self.backfill.mode)

    @property
    def deterministic(self) -> bool:
        """No RNG draws (False for EASY: its plan may change without an event)."""
        return _memo_safe(self.backfill)

    def place(self, sim: SimView, order: IntArray, sampler: Sampler) -> IntArray:
        """Target allocation (see module docstring)."""
        factors = self.factors

        def allocate(sim: SimView, job: int, free: BoolArray, _: Sampler) -> IntArray | None:
            perf_class = int(sim.jobs.perf_class[job])
            return pm_first_allocation(
                free, int(sim.jobs.num_gpus[job]), factors.sf[perf_class],
                factors.labels[perf_class], sim.node_of_gpu,
            )

        if not self.tables.matches(factors):  # factors changed in place: start afresh
            object.__setattr__(self, "tables", ClassTables.build(factors))
            object.__setattr__(self, "memo", WalkMemo())
        rule = compiled_rule(sim, self.tables, pal=False) or allocate
        return _non_sticky(sim, class_reordered(sim, order), rule, sampler, self.backfill,
                           self.memo, "pm-first")


@dataclass(frozen=True)
class PAL:
    """PAL: class-reordered, non-sticky, locality x variability matrix.

    Attributes:
        factors: the slowdown factors it decides on.
        locality_penalty_by_class: lf of each class (A..D) in its cost matrix.
        backfill: the walk's backfilling.
        sticky: always False.
        node_order: how the within-node step visits nodes with equal candidate counts
            (``SimConfig.pal_node_order``).
    """

    factors: SlowdownFactors
    locality_penalty_by_class: tuple[float, float, float, float]
    backfill: Backfill = NO_BACKFILL
    sticky: bool = False
    node_order: PalNodeOrder = PalNodeOrder.ASCENDING
    entries: tuple[tuple[MatrixEntry, ...], ...] = field(init=False)
    memo: WalkMemo = field(default_factory=WalkMemo, init=False, repr=False, compare=False)
    tables: ClassTables = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "node_order",
                           coerce_enum(PalNodeOrder, self.node_order, "node_order"))
        entries = tuple(
            matrix_entries(self.factors.sf[c], self.locality_penalty_by_class[c])
            for c in PerfClass
        )
        object.__setattr__(self, "entries", entries)
        object.__setattr__(self, "tables", ClassTables.build(self.factors, entries))

    @property
    def name(self) -> str:
        """Table name (with its backfill suffix)."""
        return with_backfill("pal", self.backfill.mode)

    @property
    def deterministic(self) -> bool:
        """No RNG draws (False for EASY: its plan may change without an event)."""
        return _memo_safe(self.backfill)

    def place(self, sim: SimView, order: IntArray, sampler: Sampler) -> IntArray:
        """Target allocation (see module docstring)."""
        factors, node_order = self.factors, self.node_order

        def allocate(sim: SimView, job: int, free: BoolArray, _: Sampler) -> IntArray | None:
            perf_class = int(sim.jobs.perf_class[job])
            return pal_allocation(
                free, int(sim.jobs.num_gpus[job]), factors.sf[perf_class],
                factors.labels[perf_class], sim.node_of_gpu, sim.cluster.gpus_per_node,
                self.entries[perf_class], node_order,
            )

        if not self.tables.matches(factors):  # factors changed in place: start afresh
            object.__setattr__(self, "tables", ClassTables.build(factors, self.entries))
            object.__setattr__(self, "memo", WalkMemo())
        rule = compiled_rule(sim, self.tables, pal=True, node_order=node_order) or allocate
        return _non_sticky(sim, class_reordered(sim, order), rule, sampler, self.backfill,
                           self.memo, ("pal", node_order))
