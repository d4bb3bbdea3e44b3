"""The compiled (numba) step backend: :mod:`palgym.sim.step_numpy`'s functions, one kernel each.

Same signatures, same results: ``tests/test_engine_kernels.py`` checks that both backends leave
every job column, the allocation, the clock and the counters bit-for-bit identical and reject
the same targets the same way. Every float is computed with the same operations in the same
order (no fast-math, no fused multiply-add; divisions as numpy's, ``error_model="numpy"``), and
the one float reduction, the effective GPU-rounds of a round, repeats the pairwise summation of
``np.sum`` (:func:`palgym.sim.summation.pairwise_sum`). The locality rule is
:func:`palgym.sim.locality.locality_penalty` itself, compiled. The commit's check and
application of a target is :func:`palgym.sim.step_apply.apply_changes`; the active-job list
and the waiting account, :mod:`palgym.sim.step_active`.

The kernels take the state's bundles as plain tuples, the job table as its three storage arrays
(:class:`~palgym.sim.state.JobBlocks`), and rebuild the NamedTuples inside: numba types a plain
tuple far faster than a NamedTuple when a call is dispatched, and each array passed costs time.
Inside, every array is reached by name. Importing this module imports numba (see
:mod:`palgym._numba`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from palgym._numba import njit
from palgym.sim import state as state_module
from palgym.sim.state import (
    ADMITTED,
    ALLOCATED_GPU_ROUNDS,
    APPLIED,
    COUNTING_USAGE,
    EFFECTIVE_GPU_ROUNDS,
    EVENTS_SINCE_COMMIT,
    KEPT,
    MEASURED_LEFT,
    NOW_S,
    ROUND_INDEX,
    USAGE_ROUNDS,
    Allocation,
    CommitOutcome,
    Committed,
    Counters,
    KernelParams,
    Rejection,
    SimState,
)
from palgym.sim.step_active import account_waiting as _account_waiting
from palgym.sim.step_active import active_list as _active_list
from palgym.sim.step_active import complete_jobs as _complete_jobs
from palgym.sim.step_active import drop_completed as _drop_completed
from palgym.sim.step_active import listed as _listed
from palgym.sim.step_apply import CHANGED, RUNNING, UNCHANGED, apply_changes
from palgym.sim.summation import pairwise_sum
from palgym.sim.types import IntArray

KernelArgs = tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...], tuple[Any, ...], IntArray]
"""(job blocks, allocation, counters, params) as plain tuples, and the active list."""
compiled_columns_of = njit(cache=True, nogil=True, error_model="numpy")(state_module.columns_of)


class Bundles(NamedTuple):
    """The bound state inside the kernels: the bundles rebuilt from :data:`KernelArgs` (the
    job columns of :func:`compiled_columns_of`, :class:`~palgym.sim.state.Allocation`,
    :class:`~palgym.sim.state.Counters`, :class:`~palgym.sim.state.KernelParams`) and the
    active list (int64). The step kernels take and update them together."""

    jobs: Any
    alloc: Allocation
    counters: Counters
    params: KernelParams
    active: IntArray


@njit(cache=True, nogil=True, error_model="numpy")
def bundles_of(jobs_t, alloc_t, counters_t, params_t, active):  # type: ignore[no-untyped-def]
    """The :class:`Bundles` of the plain tuples of :data:`KernelArgs`."""
    return Bundles(compiled_columns_of(*jobs_t), Allocation(*alloc_t), Counters(*counters_t),
                   KernelParams(*params_t), active)


def commit(state: SimState, params: KernelParams, target: IntArray | None) -> Committed:
    """:func:`palgym.sim.step_numpy.commit` in one compiled call (same arguments, results,
    rejections: the same offending job in the same order of checks)."""
    return Bound(state, params).commit(target)


def advance(state: SimState, params: KernelParams) -> IntArray:
    """:func:`palgym.sim.step_numpy.advance` in one compiled call."""
    return Bound(state, params).advance()


def idle_rounds(state: SimState, params: KernelParams, next_arrival_s: float) -> int:
    """:func:`palgym.sim.step_numpy.idle_rounds` in one compiled loop of the same kernels."""
    return Bound(state, params).idle_rounds(next_arrival_s)


class Bound:
    """The three functions bound to one state and its parameters, the kernels' arguments
    packed once: the plain tuples hold the state's arrays, which the kernels update in place
    and never rebind, so they stay valid for as long as the state does (rebind after the
    engine replaces its state). What :func:`commit`, :func:`advance` and :func:`idle_rounds`
    do per call, without building the tuples again.

    Args:
        state: the state (its arrays are referenced, not copied).
        params: its kernel parameters.
    """

    __slots__ = ("_active", "_alloc", "_counters", "_ints", "_job_of_gpu", "_jobs", "_params",
                 "_starvation")

    def __init__(self, state: SimState, params: KernelParams) -> None:
        self._jobs = tuple(state.job_blocks)
        self._alloc = tuple(state.alloc)
        self._counters = tuple(state.counters)
        self._params = tuple(params)
        self._ints = state.counters.ints
        self._job_of_gpu = state.alloc.job_of_gpu
        self._starvation = params.starvation
        self._active = _active_list(state.jobs.status, int(state.counters.ints[ADMITTED]))

    def commit(self, target: IntArray | None) -> Committed:
        """:func:`commit` of the bound state (``target`` int64 (G,) or None)."""
        if target is None:
            if not self._starvation:
                self._ints[EVENTS_SINCE_COMMIT] = False  # nothing else to do
                return KEPT
            code, job, value_1, value_2 = _commit(
                self._jobs, self._alloc, self._counters, self._params, self._active,
                self._job_of_gpu, False)
        else:
            code, job, value_1, value_2 = _commit(
                self._jobs, self._alloc, self._counters, self._params, self._active, target,
                True)
        if code >= 0:
            return APPLIED if code == CHANGED else KEPT
        return rejected(code, job, value_1, value_2)

    def advance(self) -> IntArray:
        """:func:`advance` of the bound state."""
        return _advance(  # type: ignore[no-any-return]
            self._jobs, self._alloc, self._counters, self._params, self._active)

    @property
    def kernel_args(self) -> KernelArgs:
        """The bound state as the kernels take it: (job blocks, allocation, counters, params)
        as plain tuples and the active list (a compiled driver rebuilds the bundles with
        :func:`compiled_columns_of`, ``Allocation(*...)``, ... as the entry points do)."""
        return self._jobs, self._alloc, self._counters, self._params, self._active

    def idle_rounds(self, next_arrival_s: float) -> int:
        """:func:`idle_rounds` of the bound state (``next_arrival_s`` in s)."""
        return int(_idle_rounds(self._jobs, self._alloc, self._counters, self._params,
                                self._active, float(next_arrival_s)))


def rejected(code: int, job: int, value_1: int, value_2: int) -> Committed:
    """The :class:`Committed` of a rejection code returned by :func:`_commit`."""
    outcome = CommitOutcome(code)
    if outcome is CommitOutcome.INACTIVE:
        return Committed(False, Rejection(outcome, int(job), job_status=int(value_1)))
    if outcome is CommitOutcome.BAD_COUNT:
        return Committed(False, Rejection(outcome, int(job), num_gpus=int(value_1),
                                          gpus_given=int(value_2)))
    return Committed(False, Rejection(outcome, int(job)))


# ----------------------------------------------------------------------- kernels: entry points
@njit(cache=True, nogil=True, error_model="numpy")
def _commit(jobs, alloc, counters, params, active, target, apply):  # type: ignore[no-untyped-def]
    return commit_step(bundles_of(jobs, alloc, counters, params, active), target, apply)


@njit(cache=True, nogil=True, error_model="numpy")
def _advance(jobs, alloc, counters, params, active):  # type: ignore[no-untyped-def]
    return advance_step(bundles_of(jobs, alloc, counters, params, active))


@njit(cache=True, nogil=True, error_model="numpy")
def _idle_rounds(jobs_t, alloc_t, counters_t, params_t, active, next_arrival_s):  # type: ignore[no-untyped-def]  # noqa: E501
    return idle_steps(bundles_of(jobs_t, alloc_t, counters_t, params_t, active), next_arrival_s)


@njit(cache=True, nogil=True, error_model="numpy")
def idle_steps(sim, next_arrival_s):  # type: ignore[no-untyped-def]
    """Commit-nothing rounds (:func:`idle_rounds`) on the state's :class:`Bundles`; returns how
    many."""
    alloc, counters, params = sim.alloc, sim.counters, sim.params
    rounds = 0
    while counters.ints[ROUND_INDEX] < params.max_rounds:
        commit_step(sim, alloc.job_of_gpu, False)
        advance_step(sim)
        rounds += 1
        if (counters.ints[EVENTS_SINCE_COMMIT] or counters.floats[NOW_S] >= next_arrival_s
                or counters.ints[MEASURED_LEFT] == 0):
            break
    return rounds


# ----------------------------------------------------------------------- kernels: commit
@njit(cache=True, nogil=True, error_model="numpy")
def commit_step(sim, target, apply):  # type: ignore[no-untyped-def]
    """Apply ``target`` (if ``apply``), then account waiting (if ``params.starvation``), on the
    state's :class:`Bundles` ``sim``.

    Returns:
        (code, job, value_1, value_2): code a :class:`CommitOutcome` value; for a rejection the
        offending job and its status (INACTIVE), or its ``num_gpus`` and the GPUs ``target``
        gives it (BAD_COUNT).
    """
    jobs, alloc, counters, params, active = sim
    touched = np.empty(0, np.int64)  # jobs whose GPU set changed, ascending
    before = np.empty(0, np.int8)  # their status before
    code, job, value_1, value_2 = UNCHANGED, -1, 0, 0
    admitted = counters.ints[ADMITTED]
    if apply:
        code, job, value_1, value_2, touched, before = apply_changes(
            jobs, alloc, params, target, admitted, counters.floats[NOW_S]
        )
        if code < 0:
            return code, job, value_1, value_2
    promoted = False
    if params.starvation:
        promoted = _account_waiting(jobs, params, _listed(active, admitted), touched, before)
    counters.ints[EVENTS_SINCE_COMMIT] = promoted
    return code, job, value_1, value_2


@njit(cache=True, nogil=True, error_model="numpy")
def apply_target(jobs, alloc, counters, params, target):  # type: ignore[no-untyped-def]
    """:func:`commit_step`'s first half, the target applied without the waiting account:
    (code, job, value_1, value_2) as :func:`commit_step`, then the jobs whose GPU set changed
    (int64, ascending; their new status set)."""
    code, job, value_1, value_2, touched, _ = apply_changes(
        jobs, alloc, params, target, counters.ints[ADMITTED], counters.floats[NOW_S])
    return code, job, value_1, value_2, touched


# ----------------------------------------------------------------------- kernels: advance
@njit(cache=True, nogil=True, error_model="numpy")
def advance_step(sim):  # type: ignore[no-untyped-def]
    """Account the round [t, t + R) of the running jobs, move to t + R, complete the finished
    ones (as :func:`palgym.sim.step_numpy.advance`; the usage sum as ``np.sum`` does), on the
    state's :class:`Bundles` ``sim``.

    Returns:
        int64 (F,): the completed jobs, ascending.
    """
    return advance_over(sim, _listed(sim.active, sim.counters.ints[ADMITTED]))


@njit(cache=True, nogil=True, error_model="numpy")
def advance_over(sim, listed):  # type: ignore[no-untyped-def]
    """:func:`advance_step` reading the jobs ``listed`` only (int64, ascending; every running
    job among them, e.g. :func:`palgym.sim.step_active.running_of`)."""
    jobs, alloc, counters, params, active = sim
    _listed(active, counters.ints[ADMITTED])
    round_s, restart_cost_s = params.round_duration_s, params.restart_cost_s
    effective = np.empty(listed.size)
    finished = np.empty(listed.size, np.int64)
    num_running = 0
    num_finished = 0
    allocated = 0
    for j in listed:
        if jobs.status[j] != RUNNING:
            continue
        useful = round_s
        if restart_cost_s > 0:
            left = jobs.restart_left_s[j]
            lost = round_s if round_s < left else left  # np.minimum, NaN kept
            jobs.restart_left_s[j] = left - lost
            useful = round_s - lost
        jobs.iterations_done[j] = useful / jobs.iteration_time_effective_s[j] + (
            jobs.iterations_done[j])
        jobs.attained_service_s[j] += round_s
        jobs.gpu_service_s[j] += round_s * jobs.num_gpus[j]
        allocated += jobs.num_gpus[j]
        effective[num_running] = jobs.num_gpus[j] / (
            jobs.variability_penalty[j] * jobs.locality_penalty[j])
        num_running += 1
        if jobs.iterations_done[j] >= jobs.total_iterations[j]:
            finished[num_finished] = j
            num_finished += 1
    if counters.ints[COUNTING_USAGE]:
        if num_running:
            counters.floats[ALLOCATED_GPU_ROUNDS] += allocated
            counters.floats[EFFECTIVE_GPU_ROUNDS] += 0.0 + pairwise_sum(effective, num_running)
        counters.ints[USAGE_ROUNDS] += 1
    counters.floats[NOW_S] = counters.floats[NOW_S] + round_s
    counters.ints[ROUND_INDEX] += 1
    finished = finished[:num_finished].copy()
    if num_finished:
        counters.ints[MEASURED_LEFT] -= _complete_jobs(
            jobs, alloc, finished, counters.floats[NOW_S], params.num_measured)
        counters.ints[EVENTS_SINCE_COMMIT] = True
        _drop_completed(jobs.status, active)
    return finished
