"""The compiled heuristic episode loop: :func:`palgym.simulate.drive`'s rounds in one numba call.

:func:`run_rounds` repeats what the Python loop does each round, with the compiled twins of
each step: the queue order (:func:`palgym.policies.order_kernel.sorted_order`), the placement
(:func:`palgym.policies.place_kernel.place`), the commit and the advance
(:func:`palgym.sim.step_numba.commit_step`, :func:`~palgym.sim.step_numba.advance_step`), and
the loop's memo of a deterministic placement under a static order (a round without events
after an unchanged commit: the commit-nothing rounds up to the next event,
:func:`palgym.sim.step_numba.idle_steps`). It returns to Python where Python must act, after
the round (or the stretch of idle rounds) at which:

- the episode ended (every measured job completed, or ``max_rounds``): :data:`ENDED`;
- an arrival is due that the loop does not admit itself (trace jobs, or background copies
  beyond those drawn ahead or beyond the job table's rows; the engine admits them):
  :data:`ARRIVAL`;
- a measured job completed, the round index reached ``stop_round`` or the clock passed
  ``stop_after_s`` (the stall detector, the progress bar; :meth:`palgym.sim.stall.StallDetector.
  quiet_until`): :data:`CHECK`;

or right after a commit that left the cluster idle with queued jobs and no arrival left
(:data:`IDLE_CLUSTER`; the episode could never end), or a target the engine rejects
(:data:`REJECTED`). Importing this module imports numba (see :mod:`palgym._numba`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from palgym._numba import njit
from palgym.driver.waiting import LazyWaiting, account, applies, write_back
from palgym.policies.order_kernel import FAST, OrderMemo, note_round, sorted_order
from palgym.policies.place_kernel import RuleTables, WalkState, place
from palgym.sim.admit_kernel import admit_copies
from palgym.sim.state import (
    ADMITTED,
    EVENTS_SINCE_COMMIT,
    MEASURED_LEFT,
    NOW_S,
    ROUND_INDEX,
    CommitOutcome,
)
from palgym.sim.step_active import holders_run, running_of
from palgym.sim.step_active import listed as listed_active
from palgym.sim.step_numba import (
    advance_over,
    advance_step,
    apply_target,
    bundles_of,
    commit_step,
    idle_steps,
)
from palgym.sim.types import JobStatus

ENDED, ARRIVAL, CHECK, IDLE_CLUSTER, REJECTED = range(5)
"""Why :func:`run_rounds` returned (see the module docstring)."""
ORDER_CODE, MEMO_ROUNDS = 0, 1
"""Positions in the driver spec: the order's key code, 1 if the loop's memo applies
(deterministic placement, static order); the placement's spec follows from
:data:`PLACE_SPEC`."""
PLACE_SPEC = 2
FIRST_AHEAD, COPY_NUMBER, FIRST_ID, NUM_TRACE_JOBS, TRACE_ADMITTED = range(5)
"""Positions in the background state (:func:`run_rounds`)."""
CHANGED = int(CommitOutcome.CHANGED)
RUNNING = int(JobStatus.RUNNING)


@njit(cache=True, nogil=True, error_model="numpy")
def _any_running(status, listed):  # type: ignore[no-untyped-def]
    for j in listed:
        if status[j] == RUNNING:
            return True
    return False


class Scratch(NamedTuple):
    """What :func:`run_rounds` keeps between rounds beside the memos.

    Attributes:
        lazy: the lazy waiting account (:class:`palgym.driver.waiting.LazyWaiting`).
        marks: bool (>= J,), all False between calls; held: int64 (G,) (the running jobs,
            :func:`palgym.sim.step_active.running_of`).
        modes: int64 (2,): 1 at [0] while the rounds read the running jobs only (the jobs
            holding GPUs are the running ones), at [1] while the lazy account is on.
    """

    lazy: LazyWaiting
    marks: np.ndarray
    held: np.ndarray
    modes: np.ndarray


class Decider(NamedTuple):
    """What decides a round in :func:`run_rounds`: the policy's spec and the memos it keeps.

    Attributes:
        spec: int64: the order's key code, the loop's memo flag, then the placement's spec
            (:func:`palgym.policies.place_kernel.place`).
        thresholds: float64 (T,) Tiresias' 2D-LAS thresholds.
        order_memo, tables, walk: the :class:`OrderMemo`, :class:`RuleTables` and
            :class:`WalkState` (the memos updated).
        stream: the placement's random stream.
        memo_valid: int64 (1,), the loop's memo (the last commit kept the allocation).
    """

    spec: np.ndarray
    thresholds: np.ndarray
    order_memo: OrderMemo
    tables: RuleTables
    walk: WalkState
    stream: np.ndarray
    memo_valid: np.ndarray


@njit(cache=True, nogil=True, error_model="numpy")
def _commit_and_advance(sim, target, apply, scratch):  # type: ignore[no-untyped-def]
    """Commit ``target`` (if ``apply``, else keep the allocation) on the :class:`Bundles`
    ``sim`` and, if the commit was not rejected, account waiting; (code, job, value 1,
    value 2) as :func:`palgym.sim.step_numba.commit_step`."""
    if not scratch.modes[1]:
        return commit_step(sim, target, apply)
    jobs, alloc, counters, params, _ = sim
    touched = np.empty(0, np.int64)
    code, job, value_1, value_2 = np.int64(0), np.int64(-1), np.int64(0), np.int64(0)
    if apply:
        code, job, value_1, value_2, touched = apply_target(jobs, alloc, counters, params,
                                                            target)
        if code < 0:
            return code, job, value_1, value_2
    counters.ints[EVENTS_SINCE_COMMIT] = account(jobs, params, counters, scratch.lazy,
                                                 touched)
    return code, job, value_1, value_2


@njit(cache=True, nogil=True, error_model="numpy")
def _advance(sim, scratch):  # type: ignore[no-untyped-def]
    """:func:`palgym.sim.step_numba.advance_step`, reading the running jobs only when
    ``scratch.modes[0]``."""
    if scratch.modes[0]:
        advance_over(sim, running_of(sim.alloc.job_of_gpu, scratch.marks, scratch.held))
    else:
        advance_step(sim)


@njit(cache=True, nogil=True, error_model="numpy")
def _idle(sim, next_arrival_s, scratch):  # type: ignore[no-untyped-def]
    """:func:`palgym.sim.step_numba.idle_steps` with the round's account and advance of
    :func:`_commit_and_advance` and :func:`_advance`."""
    if not scratch.modes[0] and not scratch.modes[1]:
        idle_steps(sim, next_arrival_s)
        return
    counters = sim.counters
    while counters.ints[ROUND_INDEX] < sim.params.max_rounds:
        _commit_and_advance(sim, sim.alloc.job_of_gpu, False, scratch)
        _advance(sim, scratch)
        if (counters.ints[EVENTS_SINCE_COMMIT] or counters.floats[NOW_S] >= next_arrival_s
                or counters.ints[MEASURED_LEFT] == 0):
            break


@njit(cache=True, nogil=True, error_model="numpy")
def _decided_round(sim, next_arrival_s, decider, scratch):  # type: ignore[no-untyped-def]
    """Order, place, commit and advance one round: (outcome or -1 to go on, job, value 1,
    value 2), as :func:`run_rounds` returns."""
    jobs, alloc, counters, params, active = sim
    spec, order_memo = decider.spec, decider.order_memo
    listed = listed_active(active, counters.ints[ADMITTED])
    order = sorted_order((spec[ORDER_CODE], decider.thresholds), jobs, listed,
                         counters.ints[ADMITTED], order_memo)
    num_jobs = max(params.num_measured, counters.ints[ADMITTED])
    target = place(spec[PLACE_SPEC:], order, jobs, (alloc.job_of_gpu, num_jobs),
                   (decider.tables, decider.walk, decider.stream))
    code, job, value_1, value_2 = _commit_and_advance(sim, target, True, scratch)
    if code < 0:
        return (np.int64(REJECTED), np.int64(code), np.int64(job), np.int64(value_1),
                np.int64(value_2))
    decider.memo_valid[0] = code != CHANGED
    note_round(order_memo, alloc.job_of_gpu, counters.ints[EVENTS_SINCE_COMMIT] != 0)
    if next_arrival_s == np.inf:
        listed = listed_active(active, counters.ints[ADMITTED])
        if listed.size and not _any_running(jobs.status, listed):
            return np.int64(IDLE_CLUSTER), np.int64(0), np.int64(0), np.int64(0), np.int64(0)
    _advance(sim, scratch)
    return np.int64(-1), np.int64(0), np.int64(0), np.int64(0), np.int64(0)


@njit(cache=True, nogil=True, error_model="numpy")
def _admitted_all(jobs, counters, times, background):  # type: ignore[no-untyped-def]
    """Admit the background copies due now if every trace job is admitted: the next arrival
    time (s) if all due ones were admitted and it is known, else -1 (Python admits)."""
    if not background[TRACE_ADMITTED]:
        return -1.0
    first = background[FIRST_AHEAD]
    k = admit_copies(jobs, counters, times, first, background[COPY_NUMBER],
                     background[FIRST_ID], background[NUM_TRACE_JOBS])
    background[FIRST_AHEAD], background[COPY_NUMBER] = k, background[COPY_NUMBER] + k - first
    if k < times.size and times[k] > counters.floats[NOW_S]:
        return times[k]
    return -1.0


@njit(cache=True, nogil=True, error_model="numpy")
def run_rounds(state, next_arrival_s, stop_round, stop_after_s, spec, thresholds, order_t,  # type: ignore[no-untyped-def]  # noqa: PLR0913
               tables_t, walk_t, stream, memo_valid, times, background, scratch_t):
    """Run rounds until Python must act (see the module docstring).

    The one entry from Python takes its arrays one by one: numba types an array argument at
    a call far faster than an array inside a tuple, and this entry is called about once per
    arrival. Inside, they travel as records (:class:`Decider`, the clock, the arrivals).

    Args:
        state: the bound state (:attr:`palgym.sim.step_numba.Bound.kernel_args`; updated).
        next_arrival_s: the next arrival (s; inf if none is left).
        stop_round, stop_after_s: stop at a round index reaching the first or a clock beyond
            the second.
        spec, thresholds, order_t, tables_t, walk_t, stream, memo_valid: the fields of the
            :class:`Decider`, its :class:`OrderMemo`, :class:`RuleTables` and
            :class:`WalkState` as plain tuples (the memos updated).
        times: float64 (B,), the next background arrival times (s), drawn ahead.
        background: int64 (5,), at :data:`FIRST_AHEAD` ... :data:`TRACE_ADMITTED`: the first
            of ``times`` not admitted, the copies admitted so far, the first copy's job id,
            J, 1 once every trace job is admitted (the first two updated as copies are
            admitted here, :func:`palgym.sim.admit_kernel.admit_copies`).
        scratch_t: the :class:`Scratch` as a plain tuple, its lazy account a plain tuple too
            (its waiting times are written back to the job table before returning).

    Returns:
        (outcome, code, job, value 1, value 2): the outcome (module constants) and, for
        :data:`REJECTED`, the commit's rejection (see :func:`palgym.sim.step_numba.rejected`).
    """
    sim = bundles_of(*state)
    decider = Decider(spec, thresholds, OrderMemo(*order_t), RuleTables(*tables_t),
                      WalkState(*walk_t), stream, memo_valid)
    lazy_t, marks, held, modes = scratch_t
    scratch = Scratch(LazyWaiting(*lazy_t), marks, held, modes)
    jobs, alloc, counters, params, active = sim
    listed = listed_active(active, counters.ints[ADMITTED])
    modes[0] = holders_run(jobs.status, listed, alloc.job_of_gpu, marks, held)
    modes[1] = applies(jobs, params, counters, listed, scratch.lazy)
    result = _rounds(sim, (next_arrival_s, stop_round, stop_after_s), decider,
                     (times, background), scratch)
    write_back(jobs, params, listed_active(active, counters.ints[ADMITTED]), scratch.lazy)
    return result


@njit(cache=True, nogil=True, error_model="numpy")
def _rounds(sim, clock, decider, arrivals, scratch):  # type: ignore[no-untyped-def]
    """The loop of :func:`run_rounds` on the rebuilt bundles."""
    next_arrival_s, stop_round, stop_after_s = clock
    times, background = arrivals
    ints, floats = sim.counters.ints, sim.counters.floats
    measured_left = ints[MEASURED_LEFT]
    while True:
        if decider.spec[MEMO_ROUNDS] and decider.memo_valid[0] and not ints[EVENTS_SINCE_COMMIT]:
            _idle(sim, next_arrival_s, scratch)
            decider.order_memo.counts[FAST] = 0  # a promotion may have ended the stretch
        else:
            result = _decided_round(sim, next_arrival_s, decider, scratch)
            if result[0] >= 0:
                return result
        outcome = -1
        if ints[MEASURED_LEFT] == 0 or ints[ROUND_INDEX] >= sim.params.max_rounds:
            outcome = ENDED
        elif floats[NOW_S] >= next_arrival_s:
            next_arrival_s = _admitted_all(sim.jobs, sim.counters, times, background)
            if next_arrival_s < 0.0:
                outcome = ARRIVAL
        if outcome < 0 and (ints[MEASURED_LEFT] != measured_left
                            or ints[ROUND_INDEX] >= stop_round or floats[NOW_S] > stop_after_s):
            outcome = CHECK
        if outcome >= 0:
            return np.int64(outcome), np.int64(0), np.int64(0), np.int64(0), np.int64(0)
