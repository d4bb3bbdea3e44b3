"""Compiled (numba) twins of the Random walks without backfilling, on either random stream.

:func:`random_from_empty` is :func:`palgym.policies.placement.place_from_empty` and
:func:`sticky_random_walk` is :func:`palgym.policies.placement.place_sticky`, both with the
Random rule (:func:`palgym.policies.allocation.random_allocation`): the same jobs tried in the
same order, the same victims, and for every allocation the same draws from the stream (none
when too few GPUs are free), so the GPU sets and the stream's state afterwards are the Python
walk's. ``stream`` is a ``numpy.random.Generator`` (:class:`~palgym.policies.base.NumpySampler`)
or ``(mt, index, setsizes)``, the MT19937 state of a ``random.Random`` and
:func:`~palgym.policies.random_streams.cpython_setsizes` (:mod:`palgym.policies.random_streams`
draws from both). ``tests/test_random_kernel.py`` checks them against the Python walks.

Source: PAL artifact ``placement/random_{sticky,nonsticky}.py::_random_placement``.
Importing this module imports numba (it needs it: :data:`palgym._numba.AVAILABLE`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from palgym._numba import njit, overload, types
from palgym.policies.packed_kernel import last_running_at
from palgym.policies.random_streams import cpython_sample, numpy_sample

_FREE = -1


def _draw(stream: Any, n: Any, k: Any, out: Any, scratch: Any, marks: Any) -> None:  # noqa: ARG001
    """k distinct indices of range(n) into ``out[:k]`` from ``stream`` (compiled only)."""
    raise NotImplementedError("only callable from compiled code")


@overload(_draw)
def _draw_overload(stream, n, k, out, scratch, marks):  # type: ignore[no-untyped-def]
    """Dispatch on the stream's type: a Generator, or the MT19937 tuple."""
    if isinstance(stream, types.NumPyRandomGeneratorType):
        def numpy_draw(stream, n, k, out, scratch, marks):  # type: ignore[no-untyped-def]
            numpy_sample(stream, n, k, out, scratch, marks)

        return numpy_draw
    if isinstance(stream, types.BaseTuple):
        def cpython_draw(stream, n, k, out, scratch, marks):  # type: ignore[no-untyped-def]
            mt, index, setsizes = stream
            cpython_sample(mt, index, setsizes[k], n, k, out, scratch, marks)

        return cpython_draw
    return None


@njit(cache=True, nogil=True)
def random_from_empty(order, num_gpus, total_gpus, stream):  # type: ignore[no-untyped-def]
    """The non-sticky walk with the Random rule: place ``order`` from an empty cluster, each
    job on a uniform sample of the free GPUs (ascending ids), until one does not fit.

    The free GPUs are a Fenwick tree of 0/1 counts, so the i-th free GPU (ascending) is found
    and taken in O(log G) instead of relisting all free GPUs for every job.

    Args:
        order: int64 (A,) job indices, the placement order.
        num_gpus: int64 (J,) GPUs each job needs.
        total_gpus: G.
        stream: the random stream (see the module docstring; advanced in place).

    Returns:
        int64 (G,): the target allocation (job index or -1).
    """
    target = np.full(total_gpus, _FREE, np.int64)
    tree = np.empty(total_gpus + 1, np.int64)  # tree[i]: free GPUs in (i - lowbit(i), i]
    for i in range(total_gpus + 1):
        tree[i] = i & -i
    top = 1
    while top * 2 <= total_gpus:
        top *= 2
    num_free = total_gpus
    out = np.empty(total_gpus, np.int64)
    scratch = np.empty(total_gpus, np.int64)
    marks = np.zeros(total_gpus, np.bool_)
    for job in order:
        need = num_gpus[job]
        if need > num_free:
            break
        _draw(stream, num_free, need, out, scratch, marks)
        for i in range(need):  # ranks among the free GPUs before this job takes any
            out[i] = _kth_free(tree, out[i], top, total_gpus)
        for i in range(need):
            target[out[i]] = job
            _take(tree, out[i], total_gpus)
        num_free -= need
    return target


@njit(cache=True, nogil=True)
def _kth_free(tree, rank, top, total_gpus):  # type: ignore[no-untyped-def]
    """The GPU id of the free GPU of 0-based ``rank`` in ascending id order (Fenwick
    descent: the largest prefix holding at most ``rank`` free GPUs)."""
    position = 0
    remaining = rank + 1
    step = top
    while step > 0:
        probe = position + step
        if probe <= total_gpus and tree[probe] < remaining:
            position = probe
            remaining -= tree[probe]
        step //= 2
    return position


@njit(cache=True, nogil=True)
def _take(tree, gpu, total_gpus):  # type: ignore[no-untyped-def]
    """Mark ``gpu`` taken in the Fenwick tree."""
    i = gpu + 1
    while i <= total_gpus:
        tree[i] -= 1
        i += i & -i


@njit(cache=True, nogil=True)
def _random_pick(free, need, stream, pool, out, scratch, marks):  # type: ignore[no-untyped-def]
    """The Random rule on the free mask: True and the GPU ids in ``out[:need]`` if enough are
    free (drawing from ``stream``), else False without a draw."""
    num_free = 0
    for g in range(free.size):
        if free[g]:
            pool[num_free] = g
            num_free += 1
    if num_free < need:
        return False
    _draw(stream, num_free, need, out, scratch, marks)
    for i in range(need):
        out[i] = pool[out[i]]
    return True


@njit(cache=True, nogil=True)
def sticky_random_walk(order, job_of_gpu, num_gpus, num_jobs, keep_victims_stopped,  # type: ignore[no-untyped-def]  # noqa: PLR0913
                       stream):
    """The sticky walk with the Random rule and no backfilling.

    Running jobs keep their GPUs; a job of ``order`` that is not running and does not fit stops
    the running jobs after it in ``order``, from the last one, retrying after each; if it still
    does not fit, the victims get their GPUs back (unless ``keep_victims_stopped``) and the walk
    stops.

    Args:
        order: int64 (A,) job indices, the queue order.
        job_of_gpu: int64 (G,) the current allocation (job index or -1); not modified.
        num_gpus: int64 (J,) GPUs each job needs.
        num_jobs: J, the size of the job table.
        keep_victims_stopped: victims of a job that still does not fit stay stopped.
        stream: the random stream (see the module docstring; advanced in place).

    Returns:
        int64 (G,): the target allocation.
    """
    target = job_of_gpu.copy()
    free = target == _FREE
    running = np.zeros(num_jobs, np.bool_)
    last = last_running_at(order, target, running)
    size = free.size
    pool, out = np.empty(size, np.int64), np.empty(size, np.int64)
    scratch = np.empty(size, np.int64)
    marks = np.zeros(size, np.bool_)
    stopped = np.empty(order.size, np.int64)
    walk = (order, last, target, free, running, stopped)
    draw = (stream, pool, out, scratch, marks)
    for position in range(order.size):
        job = order[position]
        if running[job]:
            continue
        found, num_stopped = _fit_with_victims(walk, position, num_gpus[job], draw)
        if not found:
            if not keep_victims_stopped:
                for victim in stopped[:num_stopped]:
                    _set_gpus((target, free), job_of_gpu, victim, victim, False)
                    running[victim] = True
            break
        for i in range(num_gpus[job]):
            target[out[i]] = job
            free[out[i]] = False
        running[job] = True
    return target


@njit(cache=True, nogil=True)
def _fit_with_victims(walk, position, need, draw):  # type: ignore[no-untyped-def]
    """Random for the job at ``position`` (``need`` GPUs), stopping running jobs after it (the
    last first, none after ``last``, :func:`palgym.policies.packed_kernel.last_running_at`)
    until it fits; returns (found, victims stopped, listed in ``stopped``).

    ``walk`` is the sticky walk's (order, last, target, free, running, stopped) and ``draw``
    the stream and buffers of :func:`_random_pick`: (stream, pool, out, scratch, marks)."""
    order, last, target, free, running, stopped = walk
    stream, pool, out, scratch, marks = draw
    found = _random_pick(free, need, stream, pool, out, scratch, marks)
    num_stopped = 0
    victim_at = last
    while not found and victim_at > position:
        victim = order[victim_at]
        victim_at -= 1
        if not running[victim]:
            continue
        _set_gpus((target, free), target, victim, _FREE, True)
        running[victim] = False
        stopped[num_stopped] = victim
        num_stopped += 1
        found = _random_pick(free, need, stream, pool, out, scratch, marks)
    return found, num_stopped


@njit(cache=True, nogil=True)
def _set_gpus(walked, held_in, job, value, is_free):  # type: ignore[no-untyped-def]
    """``target[g] = value`` and ``free[g] = is_free`` for every GPU g where ``held_in[g]`` is
    ``job``; ``walked`` is the walk's (target, free)."""
    target, free = walked
    for g in range(target.size):
        if held_in[g] == job:
            target[g] = value
            free[g] = is_free
