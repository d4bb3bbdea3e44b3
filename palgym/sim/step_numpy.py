"""The numpy step backend: commit a placement, advance a round, run idle rounds (the reference).

Each function takes the :class:`~palgym.sim.state.SimState` and
:class:`~palgym.sim.state.KernelParams` of an episode and updates the state's arrays in place;
:mod:`palgym.sim.step_numba` has the same functions with the same signatures and leaves the
same bits (``tests/test_engine_kernels.py``). Admission of arrivals is the engine's: after
:func:`advance` and :func:`idle_rounds` it admits the jobs that have arrived by the new boundary.

Progress of a running job per round (PAL artifact ``grpc_client_rm.get_metrics``, operation
order kept for bit-exactness)::

    T_eff = (variability_penalty x locality_penalty) x T_it     # fixed while the set is kept
    iterations_done = (useful_s / T_eff) + iterations_done
    variability_penalty = max perfvar[class, g] over the job's GPUs
    locality_penalty = palgym.sim.locality.locality_penalty(...)
"""

from __future__ import annotations

import numpy as np

from palgym.sim import state as slot
from palgym.sim.jobs import JobColumns
from palgym.sim.locality import locality_penalties
from palgym.sim.state import (
    Allocation,
    CommitOutcome,
    Committed,
    KernelParams,
    Rejection,
    SimState,
)
from palgym.sim.types import FREE, BoolArray, IntArray, JobStatus

_RUNNING = np.int8(JobStatus.RUNNING)
_QUEUED = np.int8(JobStatus.QUEUED)


def commit(state: SimState, params: KernelParams, target: IntArray | None) -> Committed:
    """Make ``target`` the allocation for the round starting at ``now_s``, then account waiting.

    Jobs whose GPU set changes are stopped (a preemption if they were running) and, if they
    hold GPUs in ``target``, started on the new set with penalties recomputed. Jobs keeping
    exactly their set are untouched. With starvation on, a job queued now and not running
    before waits one more round, any other job's waiting time is reset, and a waiting job
    reaching the threshold is promoted (artifact ``blox_manager.exec_jobs``).

    Args:
        state: the state at boundary t (modified in place).
        params: the episode's parameters.
        target: int64 (G,), job index per GPU or FREE (shape checked by the caller); None
            keeps the current allocation.

    Returns:
        Whether the allocation changed, or the target's rejection (nothing modified).
    """
    jobs, counters = state.jobs, state.counters
    admitted = int(counters.ints[slot.ADMITTED])
    was_running = jobs.status[:admitted] == _RUNNING if params.starvation else None
    committed = slot.KEPT
    if target is not None:
        committed = _apply(state, params, target, admitted)
        if committed.rejection is not None:
            return committed
    counters.ints[slot.EVENTS_SINCE_COMMIT] = False
    if was_running is not None:
        _account_waiting(state, params, admitted, was_running)
    return committed


def _apply(state: SimState, params: KernelParams, target: IntArray, admitted: int) -> Committed:
    """Stop and start the jobs whose GPU sets change (vectorised over jobs); checks first."""
    job_of_gpu = state.alloc.job_of_gpu
    differs = job_of_gpu != target
    if not differs.any():
        return slot.KEPT
    bad = target[differs]
    bad = bad[(bad != FREE) & ((bad < 0) | (bad >= admitted))]
    if bad.size:
        return Committed(False, Rejection(CommitOutcome.BAD_INDEX, int(bad.min())))
    # a job-indexed table (last entry for FREE) instead of np.unique / np.isin
    mark = np.zeros(admitted + 1, dtype=bool)
    mark[job_of_gpu[differs]] = True
    mark[target[differs]] = True
    mark[-1] = False
    touched = np.flatnonzero(mark)
    jobs = state.jobs
    # the touched jobs' GPUs in target, grouped by job (ascending), GPUs ascending
    gpus = np.flatnonzero(mark[target])
    owners = target[gpus]
    order = np.argsort(owners, kind="stable")
    gpus, owners = gpus[order], owners[order]
    first = np.flatnonzero(np.concatenate(([owners.size > 0], owners[1:] != owners[:-1])))
    started = owners[first]
    counts = np.diff(np.append(first, owners.size))
    held = np.zeros(touched.size, np.int64)
    held[np.searchsorted(touched, started)] = counts
    status = jobs.status[touched]
    bad_status = (status != _RUNNING) & (status != _QUEUED)
    bad_count = (held != 0) & (held != jobs.num_gpus[touched])
    if (bad_status | bad_count).any():
        i = int(np.argmax(bad_status | bad_count))
        job = int(touched[i])
        if bad_status[i]:
            return Committed(False, Rejection(CommitOutcome.INACTIVE, job, int(status[i])))
        rejection = Rejection(CommitOutcome.BAD_COUNT, job, num_gpus=int(jobs.num_gpus[job]),
                              gpus_given=int(held[i]))
        return Committed(False, rejection)
    jobs.num_preemptions[touched[status == _RUNNING]] += 1
    stopped = touched[held == 0]
    jobs.status[stopped] = _QUEUED
    jobs.iteration_time_effective_s[stopped] = np.inf
    if started.size:
        now_s = float(state.counters.floats[slot.NOW_S])
        _start(jobs, state.alloc, params, now_s, started, gpus, first)
    job_of_gpu[:] = target
    return slot.APPLIED


def _start(
    jobs: JobColumns, alloc: Allocation, params: KernelParams, now_s: float,
    started: IntArray, gpus: IntArray, first: IntArray,
) -> None:
    """Start jobs ``started`` (int64 (S,) ascending) on ``gpus`` (int64 (sum N,), grouped
    by job; group s begins at ``first[s]``): penalties, effective iteration time, status.

    Source: PAL artifact ``simulator.py`` progress model, ``T_eff = (vp * lp) * T_it``.
    """
    perf_class = jobs.perf_class[started]
    owner_class = np.repeat(perf_class, np.diff(np.append(first, gpus.size)))
    variability = np.maximum.reduceat(alloc.perfvar[owner_class, gpus], first)
    nodes = alloc.node_of_gpu[gpus]
    spans = np.maximum.reduceat(nodes, first) != np.minimum.reduceat(nodes, first)
    locality = locality_penalties(params, perf_class, jobs.num_gpus[started], spans)
    jobs.variability_penalty[started] = variability
    jobs.locality_penalty[started] = locality
    jobs.iteration_time_effective_s[started] = (variability * locality) * (
        jobs.iteration_time_s[started]
    )
    jobs.status[started] = _RUNNING
    jobs.restart_left_s[started] = params.restart_cost_s
    never = started[np.isnan(jobs.first_start_time_s[started])]
    jobs.first_start_time_s[never] = now_s


def _account_waiting(
    state: SimState, params: KernelParams, admitted: int, was_running: BoolArray
) -> None:
    jobs = state.jobs
    status = jobs.status[:admitted]
    waiting = (status == _QUEUED) & ~was_running
    waiting_s = jobs.waiting_s[:admitted]
    waiting_s[waiting] += params.round_duration_s
    waiting_s[~waiting] = 0.0
    promote = waiting & (waiting_s >= params.starvation_threshold_s)
    promote &= jobs.priority[:admitted] != params.promoted_priority
    if promote.any():
        jobs.priority[:admitted][promote] = params.promoted_priority
        state.counters.ints[slot.EVENTS_SINCE_COMMIT] = True


def advance(state: SimState, params: KernelParams) -> IntArray:
    """Account the round [t, t+R) and move to t+R: progress, usage, completions.

    Per running job: ``useful = R - min(restart_left_s, R)`` (``R`` without restart cost),
    ``iterations_done = useful / T_eff + iterations_done``, ``attained_service_s += R``,
    ``gpu_service_s += R x num_gpus``; once counting, the allocated and effective
    (``num_gpus / (variability x locality)``) GPU-rounds are added. A running job with
    ``iterations_done >= total_iterations`` completes at t+R and frees its GPUs.

    Args:
        state: the state at boundary t (modified in place).
        params: the episode's parameters.

    Returns:
        int64 (F,): indices of the jobs that completed at the new boundary, ascending.
    """
    jobs, counters = state.jobs, state.counters
    duration = params.round_duration_s
    running = (jobs.status[: counters.ints[slot.ADMITTED]] == _RUNNING).nonzero()[0]
    if running.size:
        _progress(jobs, params, running, duration)
        if counters.ints[slot.COUNTING_USAGE]:
            gpus = jobs.num_gpus[running]
            counters.floats[slot.ALLOCATED_GPU_ROUNDS] += gpus.sum()
            counters.floats[slot.EFFECTIVE_GPU_ROUNDS] += (
                gpus / (jobs.variability_penalty[running] * jobs.locality_penalty[running])
            ).sum()
    if counters.ints[slot.COUNTING_USAGE]:
        counters.ints[slot.USAGE_ROUNDS] += 1
    counters.floats[slot.NOW_S] += duration
    counters.ints[slot.ROUND_INDEX] += 1
    finished: IntArray = running[jobs.iterations_done[running] >= jobs.total_iterations[running]]
    if finished.size:
        _complete(state, params, finished)
    return finished


def _progress(jobs: JobColumns, params: KernelParams, running: IntArray, duration: float) -> None:
    if params.restart_cost_s > 0:
        lost = np.minimum(jobs.restart_left_s[running], duration)
        jobs.restart_left_s[running] -= lost
        useful = duration - lost
    else:
        useful = duration  # type: ignore[assignment]
    jobs.iterations_done[running] = (
        useful / jobs.iteration_time_effective_s[running] + jobs.iterations_done[running]
    )
    jobs.attained_service_s[running] += duration
    jobs.gpu_service_s[running] += duration * jobs.num_gpus[running]


def _complete(state: SimState, params: KernelParams, finished: IntArray) -> None:
    jobs, counters, job_of_gpu = state.jobs, state.counters, state.alloc.job_of_gpu
    jobs.status[finished] = JobStatus.COMPLETED
    jobs.completion_time_s[finished] = counters.floats[slot.NOW_S]
    jobs.iteration_time_effective_s[finished] = np.inf
    done = np.zeros(jobs.status.size + 1, dtype=bool)  # last entry: FREE
    done[finished] = True
    job_of_gpu[done[job_of_gpu]] = FREE
    counters.ints[slot.MEASURED_LEFT] -= np.count_nonzero(finished < params.num_measured)
    counters.ints[slot.EVENTS_SINCE_COMMIT] = True


def idle_rounds(state: SimState, params: KernelParams, next_arrival_s: float) -> int:
    """Repeat ``commit(None)`` + ``advance`` until a round has an event (a completion or a
    starvation promotion), the boundary reaches ``next_arrival_s``, no measured job is left, or
    ``params.max_rounds`` rounds have been simulated in all.

    Args:
        state: the state at a boundary with rounds left (modified in place).
        params: the episode's parameters.
        next_arrival_s: the next arrival time (s; inf if none): no boundary before it admits.

    Returns:
        The number of rounds run.
    """
    counters = state.counters
    rounds = 0
    while counters.ints[slot.ROUND_INDEX] < params.max_rounds:
        commit(state, params, None)
        advance(state, params)
        rounds += 1
        if (counters.ints[slot.EVENTS_SINCE_COMMIT] or counters.floats[slot.NOW_S] >= next_arrival_s
                or counters.ints[slot.MEASURED_LEFT] == 0):
            break
    return rounds


class Bound:
    """:func:`commit`, :func:`advance` and :func:`idle_rounds` bound to one state and its
    parameters (the interface :class:`palgym.sim.backend.StepBackend` binds; see
    :class:`palgym.sim.step_numba.Bound`).

    Args:
        state: the state (referenced, not copied).
        params: its kernel parameters.
    """

    __slots__ = ("_params", "_state")

    def __init__(self, state: SimState, params: KernelParams) -> None:
        self._state = state
        self._params = params

    def commit(self, target: IntArray | None) -> Committed:
        """:func:`commit` of the bound state (``target`` int64 (G,) or None)."""
        return commit(self._state, self._params, target)

    def advance(self) -> IntArray:
        """:func:`advance` of the bound state."""
        return advance(self._state, self._params)

    def idle_rounds(self, next_arrival_s: float) -> int:
        """:func:`idle_rounds` of the bound state (``next_arrival_s`` in s)."""
        return idle_rounds(self._state, self._params, next_arrival_s)

    @property
    def kernel_args(self) -> None:
        """None: this backend has no compiled kernels (see
        :attr:`palgym.sim.step_numba.Bound.kernel_args`)."""
        return None
