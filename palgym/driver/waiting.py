"""Lazy waiting times for the compiled loop: the starvation account of
:func:`palgym.sim.step_active.account_waiting` at a cost that grows with the jobs a commit
touches, not with the active jobs.

The eager account adds the round length R to the waiting time of every queued job at each
commit (except a job the commit stopped: its count restarts at 0) and promotes a job once its
waiting time reaches the threshold T. Here each queued job j keeps instead ``start[j]``, the
commit count at which its count was 0, so that after commit c its waiting time is
``(c - start[j]) x R``; a job's promotion commit is known when its count restarts, and the jobs
due at a commit are found in a ring of buckets (one per commit, doubly linked lists through the
jobs). The waiting times are written back to the job table at the end of a kernel call
(:func:`write_back`).

Bit for bit: with R an integer number of seconds, the eager sums ``w + R + ... + R`` and the
product ``(c - start) x R`` are the same integers, exactly represented while below 2**53
(:func:`applies` checks R, the round cap and the waiting times read; otherwise the loop keeps
the eager account). The promotion test ``k x R >= T`` is evaluated on the same floats.
Importing this module imports numba (see :mod:`palgym._numba`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from palgym._numba import njit
from palgym.sim.state import ADMITTED
from palgym.sim.types import IntArray, JobStatus

QUEUED = int(JobStatus.QUEUED)
RUNNING = int(JobStatus.RUNNING)
NONE = -1
MAX_BUCKETS = 1 << 20
"""The most commits a promotion may lie ahead for the lazy account to apply (its bucket ring
has one entry per commit)."""
EXACT = float(1 << 52)
"""Waiting times and their sums stay below this (exact integers in float64)."""
COMMITS, SYNCED, DUE_AFTER, ON = range(4)
"""Positions in :attr:`LazyWaiting.counts`."""


class LazyWaiting(NamedTuple):
    """The lazy account of one kernel call (capacity J rows, B buckets).

    Attributes:
        start: int64 (J,), per queued job the commit count at which its waiting count was 0.
        due: int64 (J,), the commit at which it is promoted (:data:`NONE` if not scheduled).
        next, prev: int64 (J,), the links of the bucket lists (:data:`NONE` ends a list).
        head: int64 (B,), per bucket (commit modulo B) its first job or :data:`NONE`.
        counts: int64 (4,): the commits counted in this call; the job-table rows accounted;
            the rounds ``k`` with ``k x R >= T`` from the least (:func:`promotion_rounds`);
            1 if the lazy account is on for this call.
    """

    start: IntArray
    due: IntArray
    next: IntArray
    prev: IntArray
    head: IntArray
    counts: IntArray


def new_lazy_waiting(capacity: int, num_buckets: int) -> LazyWaiting:
    """An account for ``capacity`` job rows and ``num_buckets`` buckets (>= 1)."""
    return LazyWaiting(np.zeros(capacity, np.int64), np.full(capacity, NONE, np.int64),
                       np.full(capacity, NONE, np.int64), np.full(capacity, NONE, np.int64),
                       np.full(max(num_buckets, 1), NONE, np.int64), np.zeros(4, np.int64))


def grown_lazy_waiting(lazy: LazyWaiting, capacity: int) -> LazyWaiting:
    """``lazy`` with room for ``capacity`` job rows (it is rebuilt at each call's start)."""
    if lazy.start.size >= capacity:
        return lazy
    grown = new_lazy_waiting(capacity, lazy.head.size)
    grown.counts[:] = lazy.counts
    return grown


def promotion_rounds(round_s: float, threshold_s: float) -> int:
    """The least k >= 1 with ``k x round_s >= threshold_s`` (float64 products, as the eager
    account compares sums that equal them), or 0 if it exceeds :data:`MAX_BUCKETS` - 1 (or
    ``round_s`` is not a positive whole number of seconds): the lazy account does not apply."""
    if not (round_s > 0 and round_s == np.floor(round_s) and round_s < EXACT):
        return 0
    if not threshold_s <= round_s * (MAX_BUCKETS - 1):  # also inf and NaN
        return 0
    k = max(int(np.ceil(threshold_s / round_s)), 1)
    while k > 1 and (k - 1) * round_s >= threshold_s:
        k -= 1
    while k * round_s < threshold_s:
        k += 1
    return k if k < MAX_BUCKETS else 0


@njit(cache=True, nogil=True, inline="always")
def _unlink(lazy, j):  # type: ignore[no-untyped-def]
    """Take job ``j`` off its bucket list, if on one."""
    due = lazy.due[j]
    if due == NONE:
        return
    before, after = lazy.prev[j], lazy.next[j]
    if before == NONE:
        lazy.head[due % lazy.head.size] = after
    else:
        lazy.next[before] = after
    if after != NONE:
        lazy.prev[after] = before
    lazy.due[j] = NONE


@njit(cache=True, nogil=True, inline="always")
def _schedule(lazy, j, commit):  # type: ignore[no-untyped-def]
    """Put job ``j`` (its ``start`` set) on the list of its promotion commit, the first after
    ``commit`` at which its count reaches :data:`DUE_AFTER` rounds."""
    _unlink(lazy, j)
    due = lazy.start[j] + lazy.counts[DUE_AFTER]
    if due <= commit:
        due = commit + 1
    bucket = due % lazy.head.size
    first = lazy.head[bucket]
    lazy.next[j], lazy.prev[j], lazy.due[j] = first, NONE, due
    if first != NONE:
        lazy.prev[first] = j
    lazy.head[bucket] = j


@njit(cache=True, nogil=True, error_model="numpy")
def applies(jobs, params, counters, listed, lazy):  # type: ignore[no-untyped-def]
    """Start the account of a kernel call from the job table's waiting times: True (and
    ``counts[ON]`` set) if it applies bit for bit (see the module docstring), else False and
    the eager account is to be used."""
    counts = lazy.counts
    counts[ON], counts[COMMITS] = 0, 0
    round_s = params.round_duration_s
    if (not params.starvation or counts[DUE_AFTER] <= 0
            or round_s * (params.max_rounds + 2) >= EXACT):
        return False
    status, waiting_s, priority = jobs.status, jobs.waiting_s, jobs.priority
    for j in listed:  # check first: nothing written if the eager account is to be used
        w = waiting_s[j]
        if status[j] == QUEUED:
            if not (0.0 <= w < EXACT) or w / round_s != np.floor(w / round_s):
                return False
        elif w != 0.0:
            return False
    lazy.head[:] = NONE
    for j in listed:
        lazy.due[j] = NONE
        if status[j] == QUEUED:
            lazy.start[j] = -np.int64(waiting_s[j] / round_s)
            if priority[j] != params.promoted_priority:
                _schedule(lazy, j, 0)
    counts[SYNCED], counts[ON] = counters.ints[ADMITTED], 1
    return True


@njit(cache=True, nogil=True, error_model="numpy")
def account(jobs, params, counters, lazy, touched):  # type: ignore[no-untyped-def]
    """The lazy :func:`palgym.sim.step_active.account_waiting` of one commit (``touched``:
    the jobs whose GPU set it changed, ascending; their new status set). Returns whether a job
    was promoted."""
    counts = lazy.counts
    before = counts[COMMITS]
    commit = before + 1
    counts[COMMITS] = commit
    status, waiting_s, priority = jobs.status, jobs.waiting_s, jobs.priority
    round_s = params.round_duration_s
    for j in range(counts[SYNCED], counters.ints[ADMITTED]):  # admitted since: queued
        if not (0.0 <= waiting_s[j] < EXACT):
            waiting_s[j] = 0.0  # never happens: admissions start at 0
        lazy.due[j] = NONE
        lazy.start[j] = before - np.int64(waiting_s[j] / round_s)
        if priority[j] != params.promoted_priority:
            _schedule(lazy, j, before)
    counts[SYNCED] = max(counts[SYNCED], counters.ints[ADMITTED])
    for j in touched:
        if status[j] == RUNNING:  # started or moved: its count is 0
            waiting_s[j] = 0.0
            _unlink(lazy, j)
        else:  # stopped by this commit: 0 now, counting from the next commit
            lazy.start[j] = commit
            if priority[j] != params.promoted_priority:
                _schedule(lazy, j, commit)
            else:
                _unlink(lazy, j)
    promoted = False
    bucket = commit % lazy.head.size
    j = lazy.head[bucket]
    while j != NONE:
        after = lazy.next[j]
        if lazy.due[j] == commit:
            _unlink(lazy, j)
            if status[j] == QUEUED and priority[j] != params.promoted_priority:
                priority[j] = params.promoted_priority
                promoted = True
        j = after
    return promoted


@njit(cache=True, nogil=True, error_model="numpy")
def write_back(jobs, params, listed, lazy):  # type: ignore[no-untyped-def]
    """Write the waiting time of every queued job of ``listed`` to the job table (end of a
    kernel call)."""
    if not lazy.counts[ON]:
        return
    commits, round_s = lazy.counts[COMMITS], params.round_duration_s
    status, waiting_s = jobs.status, jobs.waiting_s
    synced = lazy.counts[SYNCED]
    for j in listed:
        if j >= synced:  # admitted after the last commit: its count is the table's
            break
        if status[j] == QUEUED:
            waiting_s[j] = np.float64(commits - lazy.start[j]) * round_s
    lazy.counts[ON] = 0
