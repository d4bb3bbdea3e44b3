"""Placement policies: Packed / Random (sticky and non-sticky), PM-First and PAL.

Every policy walks the ordered queue and stops at the first job it cannot place (head-of-line
blocking, no backfilling), as in the PAL artifact.

- Non-sticky: all GPUs are re-placed from an empty cluster each round (free migration).
- Sticky: running jobs keep their GPUs; a job that does not fit stops running jobs from the
  lowest priority upward, one at a time, retrying after each; if it still fails, placement stops
  (the victims stay stopped when ``SimConfig.sticky_keep_victims_stopped``, as in the artifact).
- Class-reordered (PM-First, PAL): the longest prefix of the order whose total demand fits the
  cluster is stably sorted by perf class (A, B, C, D), the rest follows in order.

Source: PAL, SC24, Sections IV-B, IV-C; artifact ``placement/*.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from palgym.policies.allocation import packed_allocation, random_allocation
from palgym.policies.base import Sampler
from palgym.policies.compiled_rules import ClassTables, compiled_rule
from palgym.policies.pal import MatrixEntry, matrix_entries, pal_allocation
from palgym.policies.pm_first import pm_first_allocation
from palgym.policies.slowdown import SlowdownFactors
from palgym.policies.walk_memo import WalkMemo, place_from_empty_memo
from palgym.sim.engine import Simulator
from palgym.sim.types import FREE, BoolArray, IntArray, PerfClass

Allocate = Callable[[Simulator, int, BoolArray, Sampler], "IntArray | None"]


def place_from_empty(
    sim: Simulator, order: IntArray, allocate: Allocate, sampler: Sampler
) -> IntArray:
    """Non-sticky walk: place ``order`` from an empty cluster, stop at the first failure.

    Returns:
        int64 (G,) target allocation.
    """
    target = np.full(sim.cluster.num_gpus, FREE, dtype=np.int64)
    free = np.ones(sim.cluster.num_gpus, dtype=bool)
    for job in order.tolist():
        gpus = allocate(sim, job, free, sampler)
        if gpus is None:
            break
        target[gpus] = job
        free[gpus] = False
    return target


def place_sticky(
    sim: Simulator, order: IntArray, allocate: Allocate, sampler: Sampler
) -> IntArray:
    """Sticky walk with lowest-priority-first victim preemption (see module docstring).

    Returns:
        int64 (G,) target allocation.
    """
    target = sim.job_of_gpu.copy()
    free = target == FREE
    running = np.zeros(sim.jobs.size, dtype=bool)
    running[target[~free]] = True
    jobs = order.tolist()
    for position, job in enumerate(jobs):
        if running[job]:
            continue
        gpus = allocate(sim, job, free, sampler)
        stopped: list[tuple[int, IntArray]] = []
        for victim in reversed(jobs[position + 1 :]):
            if gpus is not None:
                break
            if running[victim]:
                held = np.flatnonzero(target == victim)
                target[held] = FREE
                free[held] = True
                running[victim] = False
                stopped.append((victim, held))
                gpus = allocate(sim, job, free, sampler)
        if gpus is None:
            if not sim.config.sticky_keep_victims_stopped:
                for victim, held in stopped:
                    target[held] = victim
                    free[held] = False
            break
        target[gpus] = job
        free[gpus] = False
        running[job] = True
    return target


def fitting_prefix(sim: Simulator, order: IntArray) -> int:
    """Length of the longest prefix of ``order`` (int64 (A,) job indices) whose total demand
    fits the cluster: the jobs every PAL-artifact policy places in a round."""
    demand = sim.jobs.num_gpus[order].cumsum()
    return int(demand.searchsorted(sim.cluster.num_gpus, side="right"))


def class_reordered(sim: Simulator, order: IntArray, cut: int | None = None) -> IntArray:
    """The longest prefix of ``order`` whose demand fits the cluster, stably sorted by class,
    followed by the rest of ``order`` unchanged (PM-First and PAL). ``cut``: that prefix's
    length if already known (:func:`fitting_prefix`)."""
    if cut is None:
        cut = fitting_prefix(sim, order)
    prefix = order[:cut]
    prefix = prefix[np.argsort(sim.jobs.perf_class[prefix], kind="stable")]
    return np.concatenate([prefix, order[cut:]])


def _packed(strict_total: bool) -> Allocate:
    def allocate(sim: Simulator, job: int, free: BoolArray, sampler: Sampler) -> IntArray | None:
        del sampler
        return packed_allocation(
            free, int(sim.jobs.num_gpus[job]), sim.cluster.gpus_per_node, strict_total
        )

    return allocate


def _random(sim: Simulator, job: int, free: BoolArray, sampler: Sampler) -> IntArray | None:
    return random_allocation(free, int(sim.jobs.num_gpus[job]), sampler)


@dataclass(frozen=True)
class Packed:
    """Packed-Sticky / Packed-Non-Sticky (variability-blind consolidation)."""

    sticky: bool
    deterministic: bool = True
    memo: WalkMemo = field(default_factory=WalkMemo, init=False, repr=False, compare=False)

    @property
    def name(self) -> str:
        return "packed-sticky" if self.sticky else "packed-non-sticky"

    def place(self, sim: Simulator, order: IntArray, sampler: Sampler) -> IntArray:
        """Target allocation (see module docstring)."""
        if self.sticky:
            strict = sim.config.packed_sticky_strict_total
            return place_sticky(sim, order, _packed(strict), sampler)
        return place_from_empty_memo(sim, order, _packed(False), sampler, self.memo, "packed")


@dataclass(frozen=True)
class RandomPlacement:
    """Random-Sticky / Random-Non-Sticky (uniform over free GPUs)."""

    sticky: bool
    deterministic: bool = False

    @property
    def name(self) -> str:
        return "random-sticky" if self.sticky else "random-non-sticky"

    def place(self, sim: Simulator, order: IntArray, sampler: Sampler) -> IntArray:
        """Target allocation (see module docstring)."""
        if self.sticky:
            return place_sticky(sim, order, _random, sampler)
        return place_from_empty(sim, order, _random, sampler)


@dataclass(frozen=True)
class PMFirst:
    """PM-First: class-reordered, non-sticky, best slowdown factor first."""

    factors: SlowdownFactors
    name: str = "pm-first"
    sticky: bool = False
    deterministic: bool = True
    memo: WalkMemo = field(default_factory=WalkMemo, init=False, repr=False, compare=False)
    tables: ClassTables = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tables", ClassTables.build(self.factors))

    def place(self, sim: Simulator, order: IntArray, sampler: Sampler) -> IntArray:
        """Target allocation (see module docstring)."""
        factors = self.factors

        def allocate(sim: Simulator, job: int, free: BoolArray, _: Sampler) -> IntArray | None:
            perf_class = int(sim.jobs.perf_class[job])
            return pm_first_allocation(
                free, int(sim.jobs.num_gpus[job]), factors.sf[perf_class],
                factors.labels[perf_class], sim.node_of_gpu,
            )

        if not self.tables.matches(factors):  # factors changed in place: start afresh
            object.__setattr__(self, "tables", ClassTables.build(factors))
            object.__setattr__(self, "memo", WalkMemo())
        rule = compiled_rule(sim, self.tables, pal=False) or allocate
        return place_from_empty_memo(sim, class_reordered(sim, order), rule, sampler,
                                     self.memo, "pm-first")


@dataclass(frozen=True)
class PAL:
    """PAL: class-reordered, non-sticky, locality x variability matrix."""

    factors: SlowdownFactors
    locality_penalty_by_class: tuple[float, float, float, float]
    name: str = "pal"
    sticky: bool = False
    deterministic: bool = True
    entries: tuple[tuple[MatrixEntry, ...], ...] = field(init=False)
    memo: WalkMemo = field(default_factory=WalkMemo, init=False, repr=False, compare=False)
    tables: ClassTables = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        entries = tuple(
            matrix_entries(self.factors.sf[c], self.locality_penalty_by_class[c])
            for c in PerfClass
        )
        object.__setattr__(self, "entries", entries)
        object.__setattr__(self, "tables", ClassTables.build(self.factors, entries))

    def place(self, sim: Simulator, order: IntArray, sampler: Sampler) -> IntArray:
        """Target allocation (see module docstring)."""
        factors = self.factors
        node_order = sim.config.pal_node_order

        def allocate(sim: Simulator, job: int, free: BoolArray, _: Sampler) -> IntArray | None:
            perf_class = int(sim.jobs.perf_class[job])
            return pal_allocation(
                free, int(sim.jobs.num_gpus[job]), factors.sf[perf_class],
                factors.labels[perf_class], sim.node_of_gpu, sim.cluster.gpus_per_node,
                self.entries[perf_class], node_order,
            )

        if not self.tables.matches(factors):  # factors changed in place: start afresh
            object.__setattr__(self, "tables", ClassTables.build(factors, self.entries))
            object.__setattr__(self, "memo", WalkMemo())
        rule = compiled_rule(sim, self.tables, pal=True) or allocate
        return place_from_empty_memo(sim, class_reordered(sim, order), rule, sampler,
                                     self.memo, ("pal", node_order))
