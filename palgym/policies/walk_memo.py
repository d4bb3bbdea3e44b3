"""Non-sticky walks that start where the previous round's walk still holds.

A deterministic non-sticky walk (Packed-Non-Sticky, PM-First, PAL) places its sequence from an
empty cluster and stops at the first job it cannot place. Each job's GPUs are a function of the
free GPUs and of the job's (GPU count, perf class) alone, so the GPU set given at position i
depends only on the keys ``num_gpus x C + perf_class`` of positions 0..i. Where this round's
sequence starts with the same keys as the last walk, the last walk's GPU sets hold position by
position (only the job indices change); only the rest is walked. The result is the
reference walk's (:func:`palgym.policies.placement.place_from_empty`) bit for bit; the memo
is checked against the cluster layout and the policy's options before it is used.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import numpy as np

from palgym.policies.base import Sampler
from palgym.sim.types import FREE, NUM_PERF_CLASSES, BoolArray, IntArray
from palgym.sim.views import SimView

Allocate = Callable[[SimView, int, BoolArray, Sampler], "IntArray | None"]
_UNHELD = np.iinfo(np.int64).max


@dataclass
class WalkMemo:
    """The last walk of one policy.

    Attributes:
        keys: int64 (P,), ``num_gpus x C + perf_class`` of the walked positions: the placed
            ones, then the one that failed (if ``failed``).
        placed: positions placed.
        failed: the walk stopped at a job it could not place (else the sequence ran out).
        position_of_gpu: int64 (G,), the position holding each GPU (``_UNHELD`` if free).
        layout: int64 (G,) ``node_of_gpu`` the walk ran on (None: no walk yet).
        context: the policy options the walk depended on.
    """

    keys: IntArray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    placed: int = 0
    failed: bool = False
    position_of_gpu: IntArray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    layout: IntArray | None = None
    context: Hashable = None
    layout_bytes: bytes = b""
    """The bytes of ``layout`` (compared instead of its values: the same test for int64)."""
    job_keys: IntArray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    """int64 (J,), ``num_gpus x C + perf_class`` of every job of the table, by job index."""
    job_columns: tuple[object, object] = (None, None)
    """The (num_gpus, perf_class) arrays ``job_keys`` was computed from (a job's GPU count
    and class never change; rows appended in place show as a new table size)."""


def _job_keys(sim: SimView, memo: WalkMemo) -> IntArray:
    """The walk key of every job (recomputed when the table's columns are new arrays)."""
    jobs = sim.jobs
    num_gpus, perf_class = jobs.num_gpus, jobs.perf_class
    cached = memo.job_columns
    if (cached[0] is not num_gpus or cached[1] is not perf_class
            or memo.job_keys.size != sim.num_jobs):  # new arrays, or rows appended in place
        size = sim.num_jobs
        memo.job_keys = num_gpus[:size] * NUM_PERF_CLASSES + perf_class[:size]
        memo.job_columns = (num_gpus, perf_class)
    return memo.job_keys


def _reusable(sim: SimView, sequence: IntArray, memo: WalkMemo, context: Hashable) -> int:
    """Positions of ``sequence`` whose keys equal the memo's (0 if the memo does not apply)."""
    if memo.layout is None or memo.context != context:
        return 0
    if sim.node_of_gpu.tobytes() != memo.layout_bytes:
        return 0
    span = min(sequence.size, memo.keys.size)
    keys = _job_keys(sim, memo)[sequence[:span]]
    mismatch = np.flatnonzero(keys != memo.keys[:span])
    return int(mismatch[0]) if mismatch.size else span


def place_from_empty_memo(
    sim: SimView,
    sequence: IntArray,
    allocate: Allocate,
    sampler: Sampler,
    memo: WalkMemo,
    context: Hashable = None,
) -> IntArray:
    """:func:`~palgym.policies.placement.place_from_empty` for a deterministic ``allocate``
    (a function of the free GPUs and the job's GPU count and class), reusing ``memo``.

    Args:
        sim: the simulation's view (read: job columns, ``node_of_gpu``).
        sequence: int64 (A,) job indices in walk order.
        allocate: the policy's per-job rule.
        sampler: passed through to ``allocate``.
        memo: the policy's memo, updated in place.
        context: everything else ``allocate`` depends on (compared with ``==``).

    Returns:
        int64 (G,) target allocation.
    """
    common = _reusable(sim, sequence, memo, context)
    num_gpus = sim.cluster.num_gpus
    if memo.position_of_gpu.shape != (num_gpus,) or common == 0:
        memo.position_of_gpu = np.full(num_gpus, _UNHELD, dtype=np.int64)
    reused = min(common, memo.placed)
    position = memo.position_of_gpu
    target = np.full(num_gpus, FREE, dtype=np.int64)
    if reused:
        held = position < reused
        target[held] = sequence[position[held]]
        if memo.failed and common > memo.placed:  # the same key fails on the same free GPUs
            return target
        position[~held] = _UNHELD
        free = ~held
    else:  # nothing held: every position is _UNHELD already (a fresh or reset memo) or reset
        position[:] = _UNHELD
        free = np.ones(num_gpus, dtype=bool)
        if memo.failed and common > memo.placed:  # the first key failed on an empty cluster
            return target
    walked, failed = _walk(sim, sequence, reused, allocate, sampler, target, free, position)
    memo.keys = np.concatenate([memo.keys[:reused], _job_keys(sim, memo)[walked]])
    memo.placed = memo.keys.size - failed
    memo.failed = failed
    if memo.layout is None or sim.node_of_gpu.tobytes() != memo.layout_bytes:
        memo.layout = sim.node_of_gpu.copy()
        memo.layout_bytes = memo.layout.tobytes()
    memo.context = context
    return target


def _walk(sim: SimView, sequence: IntArray, start: int, allocate: Allocate, sampler: Sampler,
          target: IntArray, free: BoolArray, position: IntArray) -> tuple[IntArray, bool]:
    """Place ``sequence[start:]`` on ``free`` until a job does not fit (updating ``target``,
    ``free`` and ``position``); returns the walked jobs (int64) and whether one failed."""
    for index in range(start, sequence.size):  # the walk stops early: no tolist of the rest
        job = int(sequence[index])
        gpus = allocate(sim, job, free, sampler)
        if gpus is None:
            return sequence[start : index + 1], True
        target[gpus] = job
        free[gpus] = False
        position[gpus] = index
    return sequence[start:], False
