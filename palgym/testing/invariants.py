"""Invariants of the simulator state, checked after every event (docs/TESTING.md).

Every check raises :class:`AssertionError` with a message naming the broken invariant, the round
boundary and the job or GPU concerned (explicit raises: they work under ``python -O``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from palgym.sim.engine import Simulator
from palgym.sim.metrics import JobRecords
from palgym.sim.types import FREE, FloatArray, IntArray, JobStatus

_PENDING = int(JobStatus.PENDING)
_QUEUED = int(JobStatus.QUEUED)
_RUNNING = int(JobStatus.RUNNING)
_COMPLETED = int(JobStatus.COMPLETED)

_REL_TOL = 1e-9


def _where(sim: Simulator) -> str:
    return f"at t={sim.now_s:g} s (round {sim.round_index})"


def check_sim_invariants(sim: Simulator, *, metrics: bool = True) -> None:
    """Check the instantaneous invariants of a simulator state.

    Checked: the allocation array has shape (G,) and holds FREE or admitted job indices; no GPU
    holds a job that is not RUNNING; every RUNNING job holds exactly ``num_gpus`` GPUs (so no GPU
    is double-booked and completed or queued jobs hold none); a running job's penalties are the
    ones its GPU set implies; every measured job submitted by ``now_s`` has been admitted and
    none submitted later has; completed jobs did all their iterations and completed at a past
    boundary no earlier than their submission; attained service never exceeds the time since
    submission; ``done`` agrees with the statuses; the utilizations are in [0, 1].

    Args:
        sim: the simulator, at any point between calls of ``commit`` and ``advance``.
        metrics: also compute ``sim.metrics()`` and check the utilizations (the costliest
            check).

    Raises:
        AssertionError: naming the first invariant found broken.
    """
    _check_allocation(sim)
    _check_running_penalties(sim)
    _check_admission(sim)
    _check_completed(sim)
    _check_service(sim)
    if metrics:
        _check_utilization(sim)


def _check_allocation(sim: Simulator) -> None:
    jobs = sim.jobs
    alloc = sim.job_of_gpu
    where = _where(sim)
    if alloc.shape != (sim.cluster.num_gpus,):
        raise AssertionError(
            f"{where}: job_of_gpu has shape {alloc.shape}, expected ({sim.cluster.num_gpus},)"
        )
    bad = np.flatnonzero((alloc != FREE) & ((alloc < 0) | (alloc >= jobs.size)))
    if bad.size:
        raise AssertionError(f"{where}: GPU {int(bad[0])} holds unknown job index {alloc[bad[0]]}")
    held = alloc[alloc != FREE]
    status = jobs.status[: jobs.size].astype(np.int64)
    not_running = held[status[held] != _RUNNING]
    if not_running.size:
        job = int(not_running[0])
        gpus = np.flatnonzero(alloc == job).tolist()
        raise AssertionError(
            f"{where}: GPUs {gpus} hold job index {job} (id {int(jobs.job_id[job])}) whose "
            f"status is {JobStatus(int(status[job])).name}, not RUNNING"
        )
    count = np.bincount(held, minlength=jobs.size)[: jobs.size]
    running = status == _RUNNING
    wrong = np.flatnonzero(running & (count != jobs.num_gpus[: jobs.size]))
    if wrong.size:
        job = int(wrong[0])
        raise AssertionError(
            f"{where}: running job index {job} (id {int(jobs.job_id[job])}) holds "
            f"{int(count[job])} GPUs, needs exactly {int(jobs.num_gpus[job])}"
        )


def _check_running_penalties(sim: Simulator) -> None:
    jobs = sim.jobs
    where = _where(sim)
    status = jobs.status[: jobs.size]
    for job in np.flatnonzero(status == _RUNNING).tolist():
        gpus = np.flatnonzero(sim.job_of_gpu == job)
        perf_class = int(jobs.perf_class[job])
        variability = float(sim.perfvar[perf_class, gpus].max())
        locality = sim.locality_penalty_of(perf_class, int(jobs.num_gpus[job]), gpus)
        if jobs.variability_penalty[job] != variability:
            raise AssertionError(
                f"{where}: job index {job} has variability penalty "
                f"{jobs.variability_penalty[job]}, its GPUs {gpus.tolist()} give {variability}"
            )
        if jobs.locality_penalty[job] != locality:
            raise AssertionError(
                f"{where}: job index {job} has locality penalty {jobs.locality_penalty[job]}, "
                f"its GPUs {gpus.tolist()} give {locality}"
            )
        effective = (variability * locality) * jobs.iteration_time_s[job]
        if jobs.iteration_time_effective_s[job] != effective:
            raise AssertionError(
                f"{where}: job index {job} has effective iteration time "
                f"{jobs.iteration_time_effective_s[job]}, expected {effective}"
            )
    idle = np.flatnonzero(
        (status != _RUNNING) & np.isfinite(jobs.iteration_time_effective_s[: jobs.size])
    )
    if idle.size:
        raise AssertionError(
            f"{where}: job index {int(idle[0])} is not running but has a finite effective "
            "iteration time (it would make progress)"
        )


def _check_admission(sim: Simulator) -> None:
    jobs = sim.jobs
    where = _where(sim)
    measured = jobs.num_measured
    pending = jobs.status[:measured] == _PENDING
    arrived = jobs.submit_time_s[:measured] <= sim.now_s
    late = np.flatnonzero(pending & arrived)
    if late.size:
        raise AssertionError(
            f"{where}: job id {int(jobs.job_id[late[0]])} was submitted at "
            f"{jobs.submit_time_s[late[0]]:g} s but is not admitted"
        )
    early = np.flatnonzero(~pending & ~arrived)
    if early.size:
        raise AssertionError(
            f"{where}: job id {int(jobs.job_id[early[0]])} is admitted before its submission at "
            f"{jobs.submit_time_s[early[0]]:g} s"
        )


def _check_completed(sim: Simulator) -> None:
    jobs = sim.jobs
    where = _where(sim)
    size = jobs.size
    completed = jobs.status[:size] == _COMPLETED
    short = np.flatnonzero(
        completed & (jobs.iterations_done[:size] < jobs.total_iterations[:size])
    )
    if short.size:
        raise AssertionError(
            f"{where}: job index {int(short[0])} is completed after only "
            f"{jobs.iterations_done[short[0]]} of {jobs.total_iterations[short[0]]} iterations"
        )
    times = jobs.completion_time_s[:size]
    bad_time = np.flatnonzero(
        completed
        & ~(
            np.isfinite(times)
            & (times <= sim.now_s)
            & (times > jobs.submit_time_s[:size])
        )
    )
    if bad_time.size:
        raise AssertionError(
            f"{where}: job index {int(bad_time[0])} has completion time {times[bad_time[0]]} "
            f"(submitted at {jobs.submit_time_s[bad_time[0]]:g} s)"
        )
    stray = np.flatnonzero(~completed & ~np.isnan(times))
    if stray.size:
        raise AssertionError(
            f"{where}: job index {int(stray[0])} is not completed but has a completion time"
        )
    measured_left = int(np.count_nonzero(jobs.status[: jobs.num_measured] != _COMPLETED))
    if sim.done != (measured_left == 0):
        raise AssertionError(
            f"{where}: sim.done is {sim.done} but {measured_left} measured jobs are not completed"
        )


def _check_service(sim: Simulator) -> None:
    jobs = sim.jobs
    where = _where(sim)
    size = jobs.size
    attained = jobs.attained_service_s[:size]
    if (jobs.iterations_done[:size] < 0).any():
        raise AssertionError(f"{where}: negative iterations_done")
    if (attained < 0).any():
        raise AssertionError(f"{where}: negative attained service")
    since_submit = np.maximum(sim.now_s - jobs.submit_time_s[:size], 0.0)
    over = np.flatnonzero(attained > since_submit * (1 + _REL_TOL) + _REL_TOL)
    if over.size:
        raise AssertionError(
            f"{where}: job index {int(over[0])} attained {attained[over[0]]:g} s of service but "
            f"was submitted only {since_submit[over[0]]:g} s ago"
        )
    expected_gpu_s = attained * jobs.num_gpus[:size]
    gpu_s = jobs.gpu_service_s[:size]
    off = np.flatnonzero(np.abs(gpu_s - expected_gpu_s) > _REL_TOL * (1.0 + expected_gpu_s))
    if off.size:
        raise AssertionError(
            f"{where}: job index {int(off[0])} has {gpu_s[off[0]]:g} GPU-s of service, expected "
            f"attained service x num_gpus = {expected_gpu_s[off[0]]:g}"
        )


def _check_utilization(sim: Simulator) -> None:
    where = _where(sim)
    metrics = sim.metrics()
    allocated = metrics.utilization_allocated
    effective = metrics.utilization_effective
    if not (0.0 <= allocated <= 1.0 + _REL_TOL):
        raise AssertionError(f"{where}: allocated utilization {allocated}")
    if effective < 0.0:
        raise AssertionError(f"{where}: effective utilization {effective}")
    # Effective utilization weights each GPU by 1 / penalty; it can exceed the allocated one only
    # when some variability value is below 1 (a GPU faster than the median).
    fastest = float(sim.perfvar.min())
    bound = allocated / min(fastest, 1.0)
    if not (effective <= bound * (1 + _REL_TOL) + _REL_TOL):
        raise AssertionError(
            f"{where}: effective utilization {effective} exceeds allocated {allocated} / "
            f"fastest variability value {fastest}"
        )


@dataclass(frozen=True)
class _Snapshot:
    now_s: float
    round_index: int
    size: int
    status: np.ndarray
    iterations_done: FloatArray
    attained_service_s: FloatArray
    completion_time_s: FloatArray
    num_preemptions: IntArray


class InvariantChecker:
    """Checks a simulator after every event, including invariants across successive states.

    On top of :func:`check_sim_invariants`, :meth:`check` compares the state with the previous
    one it saw: time and the round index never go back; no job disappears; iterations done
    (so remaining work) and attained service never decrease; a completed job stays completed
    with the same completion time; an admitted job never becomes pending again; preemption
    counts never decrease.

    Args:
        metrics_every: check the utilizations (``sim.metrics()``, the costliest check) on every
            n-th call only; 0 never (:func:`check_episode_outcome` checks them at the end).

    Attributes:
        num_checks: how many states have been checked.
    """

    def __init__(self, metrics_every: int = 1) -> None:
        self._previous: _Snapshot | None = None
        self.metrics_every = metrics_every
        self.num_checks = 0

    def check(self, sim: Simulator) -> None:
        """Check ``sim`` now and against the previous state seen.

        Args:
            sim: the simulator (the same instance on every call).

        Raises:
            AssertionError: naming the first invariant found broken.
        """
        every = self.metrics_every
        check_sim_invariants(sim, metrics=every > 0 and self.num_checks % every == 0)
        if self._previous is not None:
            self._check_transition(self._previous, sim)
        self._previous = _snapshot(sim)
        self.num_checks += 1

    @staticmethod
    def _check_transition(before: _Snapshot, sim: Simulator) -> None:
        jobs = sim.jobs
        where = _where(sim)
        if sim.now_s < before.now_s:
            raise AssertionError(f"{where}: time went back from {before.now_s:g} s")
        if sim.round_index < before.round_index:
            raise AssertionError(f"{where}: round index went back")
        if jobs.size < before.size:
            raise AssertionError(f"{where}: jobs were lost ({before.size} -> {jobs.size})")
        keep = slice(0, before.size)
        for name, now, then in (
            ("iterations_done", jobs.iterations_done[keep], before.iterations_done),
            ("attained_service_s", jobs.attained_service_s[keep], before.attained_service_s),
            ("num_preemptions", jobs.num_preemptions[keep], before.num_preemptions),
        ):
            down = np.flatnonzero(now < then)
            if down.size:
                raise AssertionError(
                    f"{where}: {name} of job index {int(down[0])} decreased from "
                    f"{then[down[0]]} to {now[down[0]]}"
                )
        status = jobs.status[keep]
        reverted = np.flatnonzero((before.status == _COMPLETED) & (status != _COMPLETED))
        if reverted.size:
            raise AssertionError(f"{where}: completed job index {int(reverted[0])} reverted")
        unadmitted = np.flatnonzero((before.status != _PENDING) & (status == _PENDING))
        if unadmitted.size:
            raise AssertionError(f"{where}: job index {int(unadmitted[0])} became pending")
        was_done = before.status == _COMPLETED
        changed = jobs.completion_time_s[keep] != before.completion_time_s
        moved = np.flatnonzero(was_done & changed)
        if moved.size:
            raise AssertionError(f"{where}: completion time of job index {int(moved[0])} changed")


def _snapshot(sim: Simulator) -> _Snapshot:
    jobs = sim.jobs
    size = jobs.size
    return _Snapshot(
        now_s=sim.now_s,
        round_index=sim.round_index,
        size=size,
        status=jobs.status[:size].copy(),
        iterations_done=jobs.iterations_done[:size].copy(),
        attained_service_s=jobs.attained_service_s[:size].copy(),
        completion_time_s=jobs.completion_time_s[:size].copy(),
        num_preemptions=jobs.num_preemptions[:size].copy(),
    )


def check_episode_outcome(sim: Simulator) -> None:
    """Check the end of an episode: every measured job completed, unless the run was truncated.

    Also checks the state invariants (utilizations included) and that completions lie on round
    boundaries (multiples of the round length from t = 0), after the job's submission and first
    start.

    Args:
        sim: the simulator after its driving loop ended.

    Raises:
        AssertionError: if the loop ended early, a job was lost or a record is inconsistent.
    """
    where = _where(sim)
    if not (sim.done or sim.truncated):
        raise AssertionError(f"{where}: the episode stopped neither done nor truncated")
    check_sim_invariants(sim)
    records = sim.records()
    if not sim.truncated:
        lost = np.flatnonzero(~np.isfinite(records.completion_time_s))
        if lost.size:
            raise AssertionError(f"{where}: job id {int(records.job_id[lost[0]])} never completed")
    check_records(records, sim.config.round_duration_s)


def check_records(records: JobRecords, round_duration_s: float) -> None:
    """Check per-job records: completions on round boundaries, after submission and start.

    Args:
        records: per-job records (completed jobs have a finite completion time).
        round_duration_s: the round length R used by the run.

    Raises:
        AssertionError: naming the first inconsistent job.
    """
    done = np.isfinite(records.completion_time_s)
    for index in np.flatnonzero(done).tolist():
        job = int(records.job_id[index])
        completion = float(records.completion_time_s[index])
        submit = float(records.submit_time_s[index])
        start = float(records.first_start_time_s[index])
        rounds = completion / round_duration_s
        if not math.isclose(rounds, round(rounds), rel_tol=_REL_TOL, abs_tol=1e-6):
            raise AssertionError(
                f"job id {job}: completion {completion:g} s is not a round boundary"
            )
        if not (math.isfinite(start) and submit <= start):
            raise AssertionError(
                f"job id {job}: first start {start:g} s before submission {submit:g} s"
            )
        if not (start + round_duration_s <= completion * (1 + _REL_TOL)):
            raise AssertionError(
                f"job id {job}: completed at {completion:g} s less than a round after its first "
                f"start at {start:g} s"
            )
    if (records.num_preemptions < 0).any():
        raise AssertionError("negative preemption count")


