"""The placement walks every policy shares: non-sticky (from an empty cluster) and sticky
(with lowest-priority-first victim preemption), each with its backfilling
(:mod:`palgym.policies.backfill`). The rules they call pick one job's GPUs; the policies are in
:mod:`palgym.policies.placement` (which describes the walks) and
:mod:`palgym.policies.random_placement`.

Source: PAL, SC24, Sections IV-B, IV-C; artifact ``placement/*.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from palgym.policies.backfill import NO_BACKFILL, Backfill, Reservation, reserve
from palgym.policies.base import Sampler
from palgym.sim.types import FREE, BoolArray, IntArray
from palgym.sim.views import SimView

Allocate = Callable[[SimView, int, BoolArray, Sampler], "IntArray | None"]


class _Walk:
    """The backfilling part of one walk: the skip count and the head's reservation."""

    def __init__(self, backfill: Backfill) -> None:
        self.backfill = backfill
        self.skipped = 0
        self.reservation: Reservation | None = None

    def refused(self, sim: SimView, job: int) -> bool:
        """EASY refuses ``job`` (checked before allocating: no RNG draw for a refused job)."""
        return self.reservation is not None and not self.reservation.allows(sim, job)

    def skip(self, sim: SimView, job: int, target: IntArray) -> bool:
        """``job`` is not placed; True if the walk stops here."""
        if self.backfill.mode == "easy" and self.reservation is None:
            self.reservation = reserve(sim, job, target, self.backfill.durations)
        self.skipped += 1
        return self.skipped >= self.backfill.depth

    def placed(self, sim: SimView, job: int) -> None:
        """``job`` starts (consumes extra GPUs of the reservation if it outlasts it)."""
        if self.reservation is not None:
            self.reservation.charge(sim, job)


def place_from_empty(
    sim: SimView, order: IntArray, allocate: Allocate, sampler: Sampler,
    backfill: Backfill = NO_BACKFILL,
) -> IntArray:
    """Non-sticky walk: place ``order`` from an empty cluster, stop at the first failure
    (with backfilling: go on, see the module docstring).

    Returns:
        int64 (G,) target allocation.
    """
    target = np.full(sim.cluster.num_gpus, FREE, dtype=np.int64)
    free = np.ones(sim.cluster.num_gpus, dtype=bool)
    if backfill.mode != "none":
        return _backfill_walk(sim, order.tolist(), allocate, sampler, backfill, target, free)
    for job in order.tolist():
        gpus = allocate(sim, job, free, sampler)
        if gpus is None:
            break
        target[gpus] = job
        free[gpus] = False
    return target


def _backfill_walk(
    sim: SimView, jobs: list[int], allocate: Allocate, sampler: Sampler, backfill: Backfill,
    target: IntArray, free: BoolArray, walk: _Walk | None = None,
) -> IntArray:
    """Place ``jobs`` on ``free`` GPUs only (updating ``target`` / ``free``), skipping those
    that do not fit or that EASY refuses, until ``backfill.depth`` are skipped."""
    walk = walk or _Walk(backfill)
    num_gpus = sim.jobs.num_gpus
    num_free = int(np.count_nonzero(free))
    for job in jobs:
        if num_free == 0:
            break
        gpus = None
        if int(num_gpus[job]) <= num_free and not walk.refused(sim, job):
            gpus = allocate(sim, job, free, sampler)
        if gpus is None:
            if walk.skip(sim, job, target):
                break
            continue
        walk.placed(sim, job)
        target[gpus] = job
        free[gpus] = False
        num_free -= int(gpus.size)
    return target


def _backfill_behind(
    sim: SimView, head: int, later: list[int], allocate: Allocate, sampler: Sampler,
    backfill: Backfill, target: IntArray, free: BoolArray,
) -> None:
    """Sticky backfilling: ``head`` could not be placed; ``later`` (not running) may still
    start on the free GPUs, without preempting."""
    walk = _Walk(backfill)
    if not walk.skip(sim, head, target):
        _backfill_walk(sim, later, allocate, sampler, backfill, target, free, walk)


def place_sticky(
    sim: SimView, order: IntArray, allocate: Allocate, sampler: Sampler,
    backfill: Backfill = NO_BACKFILL, keep_victims_stopped: bool = False,
) -> IntArray:
    """Sticky walk with lowest-priority-first victim preemption (see module docstring);
    ``keep_victims_stopped``: victims of a failed attempt stay stopped (the artifact).

    Returns:
        int64 (G,) target allocation.
    """
    target = sim.job_of_gpu.copy()
    free = target == FREE
    running = np.zeros(sim.num_jobs, dtype=bool)
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
            if not keep_victims_stopped:
                for victim, held in stopped:
                    target[held] = victim
                    free[held] = False
                    running[victim] = True
            if backfill.mode != "none":
                later = [j for j in jobs[position + 1 :] if not running[j]]
                _backfill_behind(sim, job, later, allocate, sampler, backfill, target, free)
            break
        target[gpus] = job
        free[gpus] = False
        running[job] = True
    return target
