"""The compiled commit's first half (:mod:`palgym.sim.step_numba`): a target allocation checked
and applied to the job columns and the allocation, as :func:`palgym.sim.step_numpy.commit`
applies it (same checks in the same order, same writes, same floats). Importing this module
imports numba (see :mod:`palgym._numba`).
"""

from __future__ import annotations

import numpy as np

from palgym._numba import njit
from palgym.sim import locality
from palgym.sim.state import CommitOutcome
from palgym.sim.types import FREE, JobStatus

QUEUED = int(JobStatus.QUEUED)
RUNNING = int(JobStatus.RUNNING)
UNCHANGED = int(CommitOutcome.UNCHANGED)
CHANGED = int(CommitOutcome.CHANGED)
BAD_INDEX = int(CommitOutcome.BAD_INDEX)
INACTIVE = int(CommitOutcome.INACTIVE)
BAD_COUNT = int(CommitOutcome.BAD_COUNT)

_locality_penalty = njit(cache=True, nogil=True, error_model="numpy")(locality.locality_penalty)


@njit(cache=True, nogil=True, error_model="numpy")
def apply_changes(jobs, alloc, params, target, admitted, now_s):  # type: ignore[no-untyped-def]
    """Stop and start the jobs whose GPU sets change, then copy ``target`` into the allocation:
    (code, job, value_1, value_2) as :func:`palgym.sim.step_numba.commit_step`, then the
    touched jobs (int64, ascending) and their status before (int8). All checks come before any
    write."""
    job_of_gpu = alloc.job_of_gpu
    changed, bad = _scan(target, job_of_gpu, admitted)
    touched = _touched(target, job_of_gpu) if changed and bad == FREE else np.empty(0, np.int64)
    before = np.empty(touched.size, np.int8)
    if not changed:
        return UNCHANGED, -1, 0, 0, touched, before
    if bad != FREE:
        return BAD_INDEX, bad, 0, 0, touched, before
    held, variability, spans = _gather(target, touched, jobs.perf_class, alloc)
    code, job, value_1, value_2 = _first_error(touched, held, jobs.status, jobs.num_gpus)
    if code != CHANGED:
        return code, job, value_1, value_2, touched, before
    for k in range(touched.size):
        j = touched[k]
        before[k] = jobs.status[j]
        if jobs.status[j] == RUNNING:
            jobs.num_preemptions[j] += 1
        if held[k] == 0:
            jobs.status[j] = QUEUED
            jobs.iteration_time_effective_s[j] = np.inf
            continue
        penalty = _locality_penalty(params, jobs.perf_class[j], jobs.num_gpus[j], spans[k])
        jobs.variability_penalty[j] = variability[k]
        jobs.locality_penalty[j] = penalty
        jobs.iteration_time_effective_s[j] = (variability[k] * penalty) * jobs.iteration_time_s[j]
        jobs.status[j] = RUNNING
        jobs.restart_left_s[j] = params.restart_cost_s
        if np.isnan(jobs.first_start_time_s[j]):
            jobs.first_start_time_s[j] = now_s
    for g in range(target.size):
        job_of_gpu[g] = target[g]
    return CHANGED, -1, 0, 0, touched, before


@njit(cache=True, nogil=True, error_model="numpy")
def _scan(target, job_of_gpu, admitted):  # type: ignore[no-untyped-def]
    """(any GPU changes owner, smallest new owner that is neither FREE nor admitted, or FREE)."""
    changed = False
    bad = FREE
    for g in range(target.size):
        new = target[g]
        if new != job_of_gpu[g]:
            changed = True
            if new != FREE and (new < 0 or new >= admitted) and (bad == FREE or new < bad):
                bad = new
    return changed, bad


@njit(cache=True, nogil=True, error_model="numpy")
def _touched(target, job_of_gpu):  # type: ignore[no-untyped-def]
    """int64, ascending: the distinct jobs holding a GPU that changes owner, before or after."""
    jobs = np.empty(2 * target.size, np.int64)
    n = 0
    for g in range(target.size):
        if target[g] != job_of_gpu[g]:
            for j in (job_of_gpu[g], target[g]):
                if j != FREE:
                    jobs[n] = j
                    n += 1
    jobs = np.sort(jobs[:n])
    distinct = 0
    for i in range(n):
        if i == 0 or jobs[i] != jobs[i - 1]:
            jobs[distinct] = jobs[i]
            distinct += 1
    return jobs[:distinct]


@njit(cache=True, nogil=True, error_model="numpy")
def _first_error(touched, held, status, num_gpus):  # type: ignore[no-untyped-def]
    """The first touched job (ascending index) that is not active, or else is given a GPU count
    other than 0 and ``num_gpus``: (code, job, value_1, value_2) as :func:`apply_changes`, or
    (CHANGED, -1, 0, 0) if there is none."""
    for k in range(touched.size):
        j = touched[k]
        if status[j] != RUNNING and status[j] != QUEUED:
            return INACTIVE, j, np.int64(status[j]), np.int64(0)
        if held[k] != 0 and held[k] != num_gpus[j]:
            return BAD_COUNT, j, num_gpus[j], held[k]
    return CHANGED, np.int64(-1), np.int64(0), np.int64(0)


@njit(cache=True, nogil=True, error_model="numpy")
def _gather(target, touched, perf_class, alloc):  # type: ignore[no-untyped-def]
    """Per touched job (int64 ascending), over its GPUs in ``target``: their count (int64), the
    max perfvar of its class (float64; NaN propagates, as ``np.maximum``), whether they span
    nodes (bool)."""
    held = np.zeros(touched.size, np.int64)
    variability = np.full(touched.size, -np.inf)
    spans = np.zeros(touched.size, np.bool_)
    node = np.zeros(touched.size, np.int64)
    for g in range(target.size):
        j = target[g]
        k = np.searchsorted(touched, j)
        if j == FREE or k == touched.size or touched[k] != j:
            continue
        value = alloc.perfvar[perf_class[j], g]
        if value > variability[k] or value != value:
            variability[k] = value
        if held[k] == 0:
            node[k] = alloc.node_of_gpu[g]
        elif alloc.node_of_gpu[g] != node[k]:
            spans[k] = True
        held[k] += 1
    return held, variability, spans
