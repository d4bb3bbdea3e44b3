"""Compiled (numba) twins of the queue orders (:mod:`palgym.policies.ordering`), kept sorted
from one round to the next.

Every order of :mod:`palgym.policies.ordering` sorts the active jobs by (priority, key 1,
key 2) with ``np.lexsort``, stably, so ties keep admission order: the result is the one
ordering of the jobs by (priority, key 1, key 2, job index). :func:`keys_of` computes the keys
exactly as the numpy orders do (the same operations in the same order); :func:`sorted_order`
returns that ordering, NaN keys last as numpy sorts them. It starts from the last round's
ordering: the jobs whose keys are unchanged since then stay in that relative order, the few
others (running jobs whose service grew, new arrivals, promoted jobs) are sorted and merged in,
so a round costs a pass over the active jobs, not a sort of them (the comparison, sort, merge
and binary insertion: :mod:`palgym.policies.key_sort`).
``tests/test_driver_kernels.py`` checks it against the numpy orders.

Key codes (:data:`ORDER_CODES`, by order name and option): FIFO (submit time); LAS by wall
clock or GPU time (the artifact's Tiresias is wall-clock LAS); SRTF and SRSF, nominal or ideal,
with clairvoyant durations (the true ``total_iterations``); Tiresias' 2D-LAS (queue of the
attained GPU-seconds, then submit time).
Importing this module imports numba (see :mod:`palgym._numba`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from palgym._numba import njit
from palgym.policies.key_sort import (
    insert_by_keys,
    merge_by_keys,
    same_key,
    sort_by_keys,
    upper_bound,
)
from palgym.sim.types import IntArray, JobStatus

COMPLETED = int(JobStatus.COMPLETED)
FIFO_KEY, LAS_WALL_KEY, LAS_GPU_KEY, SRTF_NOMINAL_KEY, SRTF_IDEAL_KEY = range(5)
SRSF_NOMINAL_KEY, SRSF_IDEAL_KEY, TIRESIAS_2D_KEY = range(5, 8)


LENGTH, NUM_DIRTY, FAST, ADMITTED_AT_SORT = range(4)
"""Positions in :attr:`OrderMemo.counts`."""
PROMOTED = 2
"""``counts[FAST]`` after a round that promoted jobs (their priorities are read too)."""


class OrderMemo(NamedTuple):
    """The last ordering and the keys it was sorted on (per job, by job index).

    Attributes:
        order: int64 (>= A,), the last ordering in its first ``counts[LENGTH]`` entries.
        counts: int64 (4,): the ordering's length; the jobs in ``dirty``; 1 if only those and
            the jobs admitted since may have changed keys, :data:`PROMOTED` if priorities may
            have changed too, 0 if anything may have (:func:`note_round`); the admitted count
            at the last sort.
        priority: int64 (>= J,), each sorted job's priority at that sort.
        key_1, key_2: float64 (>= J,), its keys at that sort.
        sorted_once: bool (>= J,), True once the job has been sorted.
        dirty: int64 (G,), the jobs that ran in the round after the last sort.
        scratch: int64 (>= 2 A,) scratch.
        fresh_1, fresh_2: float64 (>= A,) scratch (this round's keys).
    """

    order: IntArray
    counts: IntArray
    priority: IntArray
    key_1: np.ndarray
    key_2: np.ndarray
    sorted_once: np.ndarray
    dirty: IntArray
    scratch: IntArray
    fresh_1: np.ndarray
    fresh_2: np.ndarray


def new_order_memo(capacity: int, num_gpus: int) -> OrderMemo:
    """An empty memo for a job table of ``capacity`` rows on ``num_gpus`` GPUs."""
    return OrderMemo(np.empty(capacity, np.int64), np.zeros(4, np.int64),
                     np.empty(capacity, np.int64), np.empty(capacity), np.empty(capacity),
                     np.zeros(capacity, np.bool_), np.empty(num_gpus, np.int64),
                     np.empty(2 * capacity + 2, np.int64), np.empty(capacity), np.empty(capacity))


def grown_order_memo(memo: OrderMemo, capacity: int) -> OrderMemo:
    """``memo`` for a job table grown to ``capacity`` rows (its content kept)."""
    if memo.sorted_once.size >= capacity:
        return memo
    grown = new_order_memo(capacity, memo.dirty.size)
    for old, new in zip(memo, grown, strict=True):
        size = min(old.size, new.size)
        new[:size] = old[:size]
    return grown


@njit(cache=True, nogil=True)
def note_round(memo, job_of_gpu, promoted):  # type: ignore[no-untyped-def]
    """After a commit: the jobs holding GPUs run the round (their keys change); other keys
    stay, and priorities too unless the commit promoted a job (``promoted``: the next sort
    reads every job's priority)."""
    count = 0
    dirty, marks = memo.dirty, memo.sorted_once
    for g in range(job_of_gpu.size):
        j = job_of_gpu[g]
        if j >= 0 and marks[j]:
            marks[j] = False  # listed once; restored below
            dirty[count] = j
            count += 1
    for i in range(count):
        marks[dirty[i]] = True
    memo.counts[NUM_DIRTY] = count
    memo.counts[FAST] = PROMOTED if promoted else 1


@njit(cache=True, nogil=True, error_model="numpy")
def keys_of(rule, jobs, listed, fresh):  # type: ignore[no-untyped-def]
    """The keys of the jobs ``listed`` under the order ``rule`` (its key code and Tiresias'
    thresholds, :func:`sorted_order`) into ``fresh`` = (``key_1[:A]``, ``key_2[:A]``)
    (float64; key 2 is 0 where the order has one key), as :mod:`palgym.policies.ordering` and
    :func:`palgym.policies.durations.remaining_time_s` compute them (clairvoyant)."""
    code, thresholds = rule
    key_1, key_2 = fresh
    submit, attained, gpu_service = jobs.submit_time_s, jobs.attained_service_s, jobs.gpu_service_s
    for i in range(listed.size):
        j = listed[i]
        second = 0.0
        if code == FIFO_KEY:
            first = submit[j]
        elif code == LAS_WALL_KEY:
            first = attained[j]
        elif code == LAS_GPU_KEY:
            first = gpu_service[j]
        elif code == TIRESIAS_2D_KEY:
            service = gpu_service[j]
            first = 0.0  # np.searchsorted(thresholds, service, side="right"), as a float
            for t in range(thresholds.size):
                if thresholds[t] <= service or service != service:  # NaN after every one
                    first += 1.0
            second = submit[j]
        else:
            first = _remaining(code, jobs, j)
        key_1[i], key_2[i] = first, second


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _remaining(code, jobs, j):  # type: ignore[no-untyped-def]
    """SRTF's (or SRSF's, x its GPU count) key of job ``j``, nominal or ideal."""
    iteration_s, total = jobs.iteration_time_s[j], jobs.total_iterations[j]
    done, attained, num_gpus = jobs.iterations_done[j], jobs.attained_service_s[j], jobs.num_gpus[j]
    if code == SRTF_NOMINAL_KEY or code == SRSF_NOMINAL_KEY:
        left = iteration_s * total - attained
    else:
        undone = total - done
        if undone < 0.0:  # np.maximum(undone, 0.0), NaN kept
            undone = 0.0
        left = iteration_s * undone
    if code == SRSF_NOMINAL_KEY or code == SRSF_IDEAL_KEY:
        return left * num_gpus
    return left


@njit(cache=True, nogil=True, error_model="numpy")
def sorted_order(rule, jobs, listed, admitted, memo):  # type: ignore[no-untyped-def]
    """The active jobs ``listed`` (int64 (A,), ascending) in queue order ``code``: int64 (A,),
    a view of ``memo.order`` (valid until the next call).

    After :func:`note_round` without a promotion, only the jobs that ran since the last sort
    and the ones admitted since are sorted again and merged in; otherwise every job's keys are
    read (those unchanged keep their relative order).

    Args:
        rule: (code, thresholds): the order's key code (module constants) and, float64
            (T,), Tiresias' 2D-LAS thresholds (GPU-s, ascending).
        jobs: the job columns.
        listed: int64 (A,) the active jobs, ascending index.
        admitted: the job-table rows admitted (``listed`` holds every active one of them).
        memo: the :class:`OrderMemo` of the episode (updated).
    """
    counts = memo.counts
    if counts[FAST]:
        merged = _resorted(rule, jobs, listed, memo)
    else:
        merged = _sorted_afresh(rule, jobs, listed, memo)
    counts[LENGTH], counts[FAST], counts[ADMITTED_AT_SORT] = merged.size, 0, admitted
    return merged


@njit(cache=True, nogil=True, error_model="numpy")
def _resorted(rule, jobs, listed, memo):  # type: ignore[no-untyped-def]
    """The fast path of :func:`sorted_order`: the dirty jobs, the promoted and the new ones
    re-keyed, sorted and merged into the last ordering (the others keep their keys and
    places).

    Without a promotion the jobs taken out are the dirty ones only (every job that completed
    ran, so it is dirty), found from the front of the ordering, and the others move only up to
    the place of the last re-sorted job (and by the count difference behind it): the cost
    grows with how far into the ordering the changes reach, not with its length."""
    order, keep = memo.order, memo.sorted_once
    priority, key_1, key_2 = memo.priority, memo.key_1, memo.key_2
    keys = (priority, key_1, key_2)
    length, to_find = memo.counts[LENGTH], memo.counts[NUM_DIRTY]
    promoted = memo.counts[FAST] == PROMOTED
    m = _moved(jobs, listed, memo)
    kept = 0
    scanned = 0
    for i in range(length):  # drop the moved (and the completed) jobs
        if not promoted and to_find == 0:
            break
        j = order[i]
        scanned = i + 1
        if keep[j] and jobs.status[j] != COMPLETED:
            order[kept] = j
            kept += 1
        elif not keep[j]:
            to_find -= 1
    moved = memo.scratch[:m]
    fresh_1, fresh_2 = memo.fresh_1[:m], memo.fresh_2[:m]
    keys_of(rule, jobs, moved, (fresh_1, fresh_2))
    for i in range(m):
        j = moved[i]
        priority[j], key_1[j], key_2[j] = jobs.priority[j], fresh_1[i], fresh_2[i]
        keep[j] = True
    sort_by_keys(keys, moved, memo.scratch[m : 2 * m])
    reach = scanned  # order[scanned:length] is sorted; the moved jobs go before order[reach]
    if m:
        reach = upper_bound(keys, moved[m - 1], order, scanned, length)
    front = kept + reach - scanned
    _move(order, scanned, reach, kept)  # close the gap left by the dropped jobs
    _move(order, reach, length, front + m)  # the rest, behind the moved jobs' room
    insert_by_keys(keys, moved, order, front)
    return order[: front + m + length - reach]


@njit(cache=True, nogil=True, inline="always")
def _move(order, start, end, to):  # type: ignore[no-untyped-def]
    """``order[to : to + end - start] = order[start:end]`` (overlap allowed)."""
    if to < start:
        for i in range(end - start):
            order[to + i] = order[start + i]
    elif to > start:
        for i in range(end - start - 1, -1, -1):
            order[to + i] = order[start + i]


@njit(cache=True, nogil=True, error_model="numpy")
def _moved(jobs, listed, memo):  # type: ignore[no-untyped-def]
    """Collect into ``memo.scratch`` the jobs :func:`_resorted` moves (marked unsorted in
    ``memo.sorted_once``): the dirty ones not completed, the promoted ones (after a
    :data:`PROMOTED` round) and the ones admitted since the last sort; returns how many."""
    counts, keep, moved = memo.counts, memo.sorted_once, memo.scratch
    m = 0
    for i in range(counts[NUM_DIRTY]):
        j = memo.dirty[i]
        keep[j] = False
        if jobs.status[j] != COMPLETED:
            moved[m] = j
            m += 1
    first_new = listed.size
    while first_new > 0 and listed[first_new - 1] >= counts[ADMITTED_AT_SORT]:
        first_new -= 1
    if counts[FAST] == PROMOTED:  # the jobs whose priority changed: promoted ones
        job_priority, priority = jobs.priority, memo.priority
        for i in range(first_new):
            j = listed[i]
            if keep[j] and job_priority[j] != priority[j]:
                keep[j] = False
                moved[m] = j
                m += 1
    for i in range(first_new, listed.size):
        moved[m] = listed[i]
        m += 1
    return m


@njit(cache=True, nogil=True, error_model="numpy")
def _sorted_afresh(rule, jobs, listed, memo):  # type: ignore[no-untyped-def]
    """The full path of :func:`sorted_order`: every listed job's keys read; the unchanged
    ones keep their relative order, the others are sorted and merged in."""
    size = listed.size
    count = memo.counts[LENGTH]
    fresh_1, fresh_2 = memo.fresh_1[:size], memo.fresh_2[:size]
    keys_of(rule, jobs, listed, (fresh_1, fresh_2))
    priority, key_1, key_2 = memo.priority, memo.key_1, memo.key_2
    keys = (priority, key_1, key_2)
    keep, status, job_priority = memo.sorted_once, jobs.status, jobs.priority
    changed = memo.scratch[:size]
    num_changed = 0
    for i in range(size):  # keep[j]: j sorted before and its keys unchanged since
        j = listed[i]
        if (keep[j] and priority[j] == job_priority[j] and same_key(key_1[j], fresh_1[i])
                and same_key(key_2[j], fresh_2[i])):
            continue
        priority[j], key_1[j], key_2[j] = job_priority[j], fresh_1[i], fresh_2[i]
        keep[j] = False  # changed (or new): not taken from the old ordering
        changed[num_changed] = j
        num_changed += 1
    stayed = memo.scratch[size : size + count]
    num_stayed = 0
    order = memo.order
    for i in range(count):  # the old ordering, without completed and changed jobs
        j = order[i]
        if keep[j] and status[j] != COMPLETED:
            stayed[num_stayed] = j
            num_stayed += 1
    moved = changed[:num_changed]
    sort_by_keys(keys, moved, order[:num_changed])
    for j in moved:
        keep[j] = True
    merged = order[: num_stayed + num_changed]
    merge_by_keys(keys, stayed[:num_stayed], moved, merged)
    return merged
