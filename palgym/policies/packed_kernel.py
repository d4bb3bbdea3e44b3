"""Compiled (numba) twins of the Packed rule and of the sticky walk with Packed, for GPU g on
node g // G_n (the layout :func:`palgym.policies.allocation.packed_allocation` reads).

:func:`packed_pick` is :func:`~palgym.policies.allocation.packed_allocation` and
:func:`sticky_packed_walk` is :func:`palgym.policies.placement.place_sticky` with that rule and
no backfilling: the same steps, the same ties (first node on equal counts, as ``np.argmin`` /
``np.argmax``), the same victims in the same order (``tests/test_packed_kernel.py`` checks
them against the numpy rule and walk on random states). Integers only: no float is computed.

Source: PAL artifact ``placement/packing_{sticky,nonsticky}.py::_consolidated_placement``.
Importing this module imports numba (see :mod:`palgym._numba`).
"""

from __future__ import annotations

import numpy as np

from palgym._numba import njit

_FREE = -1


@njit(cache=True, nogil=True)
def _take_first_free(free, node, count, gpus_per_node, out, k):  # type: ignore[no-untyped-def]
    """Append the first ``count`` free GPUs of ``node`` to ``out[k:]``; returns the new k."""
    start = node * gpus_per_node
    taken = 0
    for g in range(start, start + gpus_per_node):
        if taken == count:
            break
        if free[g]:
            out[k] = g
            k += 1
            taken += 1
    return k


@njit(cache=True, nogil=True)
def _node_counts(free, num_gpus, gpus_per_node, counts):  # type: ignore[no-untyped-def]
    """Free GPUs per node into ``counts``; returns (total free, first node with exactly N free
    or -1, first node with the fewest free among those with >= N or -1)."""
    total = 0
    exact = -1
    best = -1
    for node in range(counts.size):
        count = 0
        for g in range(node * gpus_per_node, (node + 1) * gpus_per_node):
            count += free[g]
        counts[node] = count
        total += count
        if count == num_gpus and exact == -1:
            exact = node
        if count >= num_gpus and (best == -1 or count < counts[best]):
            best = node
    return total, exact, best


@njit(cache=True, nogil=True)
def _spread(free, num_gpus, gpus_per_node, counts, out):  # type: ignore[no-untyped-def]
    """Take from the node with the most free GPUs left (first on ties) until N are taken."""
    k = 0
    remaining = num_gpus
    while remaining > 0:
        node = 0
        for other in range(1, counts.size):
            if counts[other] > counts[node]:
                node = other
        take = min(counts[node], remaining)
        k = _take_first_free(free, node, take, gpus_per_node, out, k)
        counts[node] -= take
        remaining -= take
    out[:num_gpus].sort()


@njit(cache=True, nogil=True)
def packed_pick(free, num_gpus, gpus_per_node, strict_total, counts, out):  # type: ignore[no-untyped-def]
    """The Packed rule on the free GPUs.

    Args:
        free: bool (G,), True where the GPU is free.
        num_gpus: N.
        gpus_per_node: G_n (G a multiple of it).
        strict_total: require more than N free GPUs in all before spreading over nodes.
        counts: int64 (G / G_n,) scratch.
        out: int64 (>= N,) out: the N chosen GPU ids, ascending.

    Returns:
        True if N GPUs were chosen.
    """
    total, exact, best = _node_counts(free, num_gpus, gpus_per_node, counts)
    node = exact if exact != -1 else best
    if node != -1:
        _take_first_free(free, node, num_gpus, gpus_per_node, out, 0)
        return True
    if total < num_gpus or (strict_total and total == num_gpus):
        return False
    _spread(free, num_gpus, gpus_per_node, counts, out)
    return True


@njit(cache=True, nogil=True)
def sticky_packed_walk(order, job_of_gpu, num_gpus, num_jobs, gpus_per_node,  # type: ignore[no-untyped-def]  # noqa: PLR0913
                       strict_total, keep_victims_stopped):
    """The sticky walk with the Packed rule and no backfilling.

    Running jobs keep their GPUs; a job of ``order`` that is not running and does not fit stops
    the running jobs after it in ``order``, from the last one, retrying after each; if it still
    does not fit, the victims get their GPUs back (unless ``keep_victims_stopped``) and the walk
    stops.

    Args:
        order: int64 (A,) job indices, the queue order.
        job_of_gpu: int64 (G,) the current allocation (job index or -1); not modified.
        num_gpus: int64 (J,) GPUs each job needs.
        num_jobs: J, the size of the job table.
        gpus_per_node, strict_total: as :func:`packed_pick`.
        keep_victims_stopped: victims of a job that still does not fit stay stopped.

    Returns:
        int64 (G,): the target allocation.
    """
    target = job_of_gpu.copy()
    free = target == _FREE
    running = np.zeros(num_jobs, np.bool_)
    last = last_running_at(order, target, running)
    counts = np.empty(free.size // gpus_per_node, np.int64)
    out = np.empty(free.size, np.int64)
    stopped = np.empty(order.size, np.int64)
    walk = (order, last, target, free, running, stopped)
    pick = (gpus_per_node, strict_total, counts, out)
    for position in range(order.size):
        job = order[position]
        if running[job]:
            continue
        need = num_gpus[job]
        found, num_stopped = _fit_with_victims(walk, position, need, pick)
        if not found:
            if not keep_victims_stopped:
                _restore(job_of_gpu, target, free, running, stopped[:num_stopped])
            break
        for i in range(need):
            target[out[i]] = job
            free[out[i]] = False
        running[job] = True
    return target


@njit(cache=True, nogil=True)
def last_running_at(order, job_of_gpu, running):  # type: ignore[no-untyped-def]
    """Mark the jobs holding GPUs in ``running`` (bool (J,), all False) and return the last
    position of ``order`` holding one of them (-1 if none): a sticky walk's victims (running
    jobs after a position, from the last) are all at or before it, as the walk only starts
    jobs at or before the position it is at. The scan stops at the last of them, so it reads
    the front of the order when the running jobs lead it."""
    left = 0
    for g in range(job_of_gpu.size):
        j = job_of_gpu[g]
        if j != _FREE and not running[j]:
            running[j] = True
            left += 1
    last = -1
    for position in range(order.size):
        if left == 0:
            break
        if running[order[position]]:
            left -= 1
            last = position
    return last


@njit(cache=True, nogil=True)
def _fit_with_victims(walk, position, need, pick):  # type: ignore[no-untyped-def]
    """Packed for the job at ``position`` (``need`` GPUs), stopping running jobs after it (the
    last first, none after ``last``) until it fits; returns (found, victims stopped, listed in
    ``stopped``).

    ``walk`` is the sticky walk's (order, last, target, free, running, stopped) and ``pick``
    the arguments of :func:`packed_pick` after the need: (gpus_per_node, strict_total, counts,
    out)."""
    order, last, target, free, running, stopped = walk
    gpus_per_node, strict_total, counts, out = pick
    found = packed_pick(free, need, gpus_per_node, strict_total, counts, out)
    num_stopped = 0
    victim_at = last
    while not found and victim_at > position:
        victim = order[victim_at]
        victim_at -= 1
        if not running[victim]:
            continue
        for g in range(target.size):
            if target[g] == victim:
                target[g] = _FREE
                free[g] = True
        running[victim] = False
        stopped[num_stopped] = victim
        num_stopped += 1
        found = packed_pick(free, need, gpus_per_node, strict_total, counts, out)
    return found, num_stopped


@njit(cache=True, nogil=True)
def _restore(job_of_gpu, target, free, running, victims):  # type: ignore[no-untyped-def]
    """Give the stopped ``victims`` back the GPUs they held in ``job_of_gpu``."""
    for victim in victims:
        for g in range(target.size):
            if job_of_gpu[g] == victim:
                target[g] = victim
                free[g] = False
        running[victim] = True
