"""Compiled (numba) twins of the placements without backfilling, as one call per round.

:func:`place` is ``placement.place(view, order, sampler)`` of :mod:`palgym.policies.placement`
and :mod:`palgym.policies.random_placement` for Packed, Random (sticky and non-sticky),
PM-First and PAL (ascending node order), on the contiguous layout (GPU g on node g // G_n),
without backfilling. It calls the per-job rules and walks that those policies already run
compiled (:mod:`palgym.policies.packed_kernel`, :mod:`palgym.policies.pal_kernel`,
:mod:`palgym.policies.random_kernel`), and walks the deterministic non-sticky rules as
:func:`palgym.policies.walk_memo.place_from_empty_memo` does, reusing the last walk's GPU
sets where the sequence starts with the same (GPU count, class) keys (the module docstring of
:mod:`palgym.policies.walk_memo` shows why that is the plain walk bit for bit). PM-First and PAL
walk :func:`palgym.policies.placement.class_reordered` of the order.
``tests/test_driver.py`` checks whole episodes against the policies.
Importing this module imports numba (see :mod:`palgym._numba`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from palgym._numba import njit
from palgym.policies.compiled_rules import ClassTables
from palgym.policies.packed_kernel import packed_pick, sticky_packed_walk
from palgym.policies.pal_kernel import pal_pick, pm_first_pick
from palgym.policies.random_kernel import random_from_empty, sticky_random_walk
from palgym.sim.types import FREE, NUM_PERF_CLASSES, BoolArray, FloatArray, IntArray

PAL_RULE, PM_FIRST_RULE, PACKED_RULE, RANDOM_RULE = range(4)
UNHELD = np.iinfo(np.int64).max


class RuleTables(NamedTuple):
    """What the PM-First and PAL rules read of each class (:class:`ClassTables`, PAL's matrix
    entries padded to one width). Shapes: C classes, G GPUs, E the most entries of a class.

    Attributes:
        sf: float64 (C, G); rank, labels: int64 (C, G); num_labels, num_tiers: int64 (C,).
        entry_rank: int64 (C, E); entry_within: bool (C, E); entry_count: int64 (C,), the
            entries of each class (the rest of its row is padding).
    """

    sf: FloatArray
    rank: IntArray
    labels: IntArray
    num_labels: IntArray
    num_tiers: IntArray
    entry_rank: IntArray
    entry_within: BoolArray
    entry_count: IntArray


def rule_tables(tables: ClassTables | None, num_gpus: int) -> RuleTables:
    """The :class:`RuleTables` of ``tables`` (None, for Packed and Random: zeros of the same
    types, never read)."""
    if tables is None:
        zeros = np.zeros((NUM_PERF_CLASSES, num_gpus), np.int64)
        count = np.zeros(NUM_PERF_CLASSES, np.int64)
        return RuleTables(np.zeros((NUM_PERF_CLASSES, num_gpus)), zeros, zeros, count, count,
                          np.zeros((NUM_PERF_CLASSES, 1), np.int64),
                          np.zeros((NUM_PERF_CLASSES, 1), np.bool_), count)
    counts = np.array([row.size for row in tables.entry_rank], np.int64)
    if counts.size == 0:  # PM-First: no matrix
        counts = np.zeros(tables.sf.shape[0], np.int64)
    width = max(int(counts.max(initial=0)), 1)
    entry_rank = np.zeros((counts.size, width), np.int64)
    entry_within = np.zeros((counts.size, width), np.bool_)
    for c, (ranks, within) in enumerate(zip(tables.entry_rank, tables.entry_within,
                                            strict=True)):
        entry_rank[c, : ranks.size], entry_within[c, : within.size] = ranks, within
    return RuleTables(np.ascontiguousarray(tables.sf), np.ascontiguousarray(tables.rank),
                      np.ascontiguousarray(tables.labels), tables.num_labels.astype(np.int64),
                      tables.num_tiers.astype(np.int64), entry_rank, entry_within, counts)


class WalkState(NamedTuple):
    """The last non-sticky walk (:class:`palgym.policies.walk_memo.WalkMemo`) and scratch.

    Attributes:
        keys: int64 (G + 1,), ``num_gpus x C + perf_class`` of the walked positions.
        counts: int64 (3,): keys in use, positions placed, 1 if the walk ended on a failure.
        position: int64 (G,), the position holding each GPU (:data:`UNHELD` if free).
        sequence: int64 (>= A,) scratch (the class-reordered order).
        out, node_counts: int64 (G,), (G / G_n,) scratch; free: bool (G,) scratch.
    """

    keys: IntArray
    counts: IntArray
    position: IntArray
    sequence: IntArray
    out: IntArray
    node_counts: IntArray
    free: BoolArray


def new_walk_state(num_gpus: int, gpus_per_node: int, capacity: int) -> WalkState:
    """An empty walk state for G = ``num_gpus`` and up to ``capacity`` active jobs."""
    return WalkState(np.empty(num_gpus + 1, np.int64), np.zeros(3, np.int64),
                     np.full(num_gpus, UNHELD, np.int64), np.empty(capacity, np.int64),
                     np.empty(num_gpus, np.int64), np.empty(num_gpus // gpus_per_node, np.int64),
                     np.ones(num_gpus, np.bool_))


def grown_walk_state(walk: WalkState, capacity: int) -> WalkState:
    """``walk`` with room for ``capacity`` active jobs."""
    if walk.sequence.size >= capacity:
        return walk
    return walk._replace(sequence=np.empty(capacity, np.int64))


class Walker(NamedTuple):
    """A deterministic rule as its walks read it: the rule (module constants), strict total
    (Packed), G_n, the :class:`RuleTables` (PM-First, PAL) and the :class:`WalkState` (the
    memo of the last walk; updated)."""

    rule: int
    strict_total: bool
    per_node: int
    tables: RuleTables
    walk: WalkState


@njit(cache=True, nogil=True, inline="always")
def _pick(walker, free, need, c):  # type: ignore[no-untyped-def]
    """One job's ``need`` GPUs of class ``c`` by the :class:`Walker`'s rule into
    ``walker.walk.out[:need]``; found."""
    rule, strict_total, per_node, tables, walk = walker
    if rule == PACKED_RULE:
        return packed_pick(free, need, per_node, strict_total, walk.node_counts, walk.out)
    if rule == PM_FIRST_RULE:
        return pm_first_pick(free, need, tables.rank[c], tables.labels[c],
                             tables.num_labels[c], per_node, walk.out) >= 0
    e = tables.entry_count[c]
    return pal_pick(free, need, tables.sf[c], tables.rank[c], tables.labels[c],
                    tables.num_labels[c], per_node, tables.num_tiers[c],
                    tables.entry_rank[c, :e], tables.entry_within[c, :e], walk.out)


@njit(cache=True, nogil=True)
def class_reordered(order, jobs, total_gpus, num_classes, out):  # type: ignore[no-untyped-def]
    """:func:`palgym.policies.placement.class_reordered` into ``out[:A]``: the longest prefix
    of ``order`` whose demand fits ``total_gpus``, stably by class, then the rest (the job
    columns ``num_gpus``, ``perf_class`` read)."""
    num_gpus, perf_class = jobs.num_gpus, jobs.perf_class
    cut = 0
    demand = 0
    while cut < order.size and demand + num_gpus[order[cut]] <= total_gpus:
        demand += num_gpus[order[cut]]
        cut += 1
    k = 0
    for c in range(num_classes):
        for i in range(cut):
            if perf_class[order[i]] == c:
                out[k] = order[i]
                k += 1
    out[cut : order.size] = order[cut:]
    return out[: order.size]


@njit(cache=True, nogil=True)
def walk_from_empty(walker, sequence, jobs):  # type: ignore[no-untyped-def]
    """The non-sticky walk of the :class:`Walker`'s rule over ``sequence`` from an empty
    cluster, reusing the last walk as :func:`palgym.policies.walk_memo.place_from_empty_memo`
    does: int64 (G,) (the job columns ``num_gpus``, ``perf_class`` read)."""
    walk = walker.walk
    num_gpus, perf_class = jobs.num_gpus, jobs.perf_class
    position, free, keys = walk.position, walk.free, walk.keys
    num_keys, placed, failed = walk.counts[0], walk.counts[1], walk.counts[2]
    span = min(sequence.size, num_keys)
    common = 0
    while common < span and (num_gpus[sequence[common]] * NUM_PERF_CLASSES
                             + perf_class[sequence[common]]) == keys[common]:
        common += 1
    reused = min(common, placed)
    target = np.full(position.size, FREE, np.int64)
    for g in range(position.size):
        held = position[g] < reused
        if held:
            target[g] = sequence[position[g]]
        else:
            position[g] = UNHELD
        free[g] = not held
    if failed and common > placed:  # the same key fails on the same free GPUs
        return target
    k = reused
    stopped = False
    for index in range(reused, sequence.size):
        job = sequence[index]
        need = num_gpus[job]
        keys[k] = need * NUM_PERF_CLASSES + perf_class[job]
        k += 1
        if not _pick(walker, free, need, perf_class[job]):
            stopped = True
            break
        for i in range(need):
            g = walk.out[i]
            target[g] = job
            free[g] = False
            position[g] = index
    walk.counts[0], walk.counts[1], walk.counts[2] = k, k - stopped, stopped
    return target


@njit(cache=True, nogil=True)
def place(spec, order, jobs, current, memos):  # type: ignore[no-untyped-def]
    """The round's target allocation, int64 (G,).

    Args:
        spec: int64 (>= 5,): the rule (module constants), sticky, strict total (Packed),
            keep victims stopped (sticky), G_n.
        order: int64 (A,) the queue order.
        jobs: the job columns (``num_gpus``, ``perf_class`` read).
        current: (job_of_gpu, num_jobs): int64 (G,) the current allocation (sticky walks);
            the job-table rows in use.
        memos: (tables, walk, stream): :class:`RuleTables` (PM-First, PAL);
            :class:`WalkState` (deterministic non-sticky walks; updated); the random stream of
            Random (see :mod:`palgym.policies.random_kernel`).
    """
    job_of_gpu, num_jobs = current
    tables, walk, stream = memos
    rule, sticky, strict_total, keep_stopped, per_node = spec[0], spec[1], spec[2], spec[3], spec[4]
    num_gpus = jobs.num_gpus
    total_gpus = job_of_gpu.size
    if rule == RANDOM_RULE:
        if sticky:
            return sticky_random_walk(order, job_of_gpu, num_gpus, num_jobs, keep_stopped != 0,
                                      stream)
        return random_from_empty(order, num_gpus, total_gpus, stream)
    if rule == PACKED_RULE:
        if sticky:
            return sticky_packed_walk(order, job_of_gpu, num_gpus, num_jobs, per_node,
                                      strict_total != 0, keep_stopped != 0)
        return walk_from_empty(Walker(rule, False, per_node, tables, walk), order, jobs)
    sequence = class_reordered(order, jobs, total_gpus, tables.sf.shape[0], walk.sequence)
    return walk_from_empty(Walker(rule, False, per_node, tables, walk), sequence, jobs)
