"""The active-job list of the compiled step backend (:mod:`palgym.sim.step_numba`), the
waiting account that reads it, the running jobs as the allocation lists them
(:func:`running_of`, what the compiled loop's advance reads) and the completion of jobs.

A round's kernels read the active (admitted, uncompleted) jobs only, not every job ever
admitted: behind an endless background stream the admitted jobs grow with simulated time
while the active ones stay few. The list lives beside the state (in the backend's
:class:`~palgym.sim.step_numba.Bound`), built from the job statuses and kept up by the kernels.
Importing this module imports numba (see :mod:`palgym._numba`).
"""

from __future__ import annotations

import numpy as np

from palgym._numba import njit
from palgym.sim.types import FREE, IntArray, JobStatus

COMPLETED = int(JobStatus.COMPLETED)
QUEUED = int(JobStatus.QUEUED)
RUNNING = int(JobStatus.RUNNING)


def active_list(status: np.ndarray, admitted: int) -> IntArray:
    """int64 (capacity + 2,): the active (admitted, uncompleted) jobs, ascending, then at
    [-2] their count and at [-1] the admitted count they were listed up to. The kernels append
    jobs admitted since (every admitted job arrives queued, after every listed one) and drop
    completed ones, so a round reads the active jobs only, not every job ever admitted."""
    listed = np.flatnonzero(status[:admitted] != COMPLETED)
    active = np.empty(status.size + 2, np.int64)
    active[: listed.size] = listed
    active[-2], active[-1] = listed.size, admitted
    return active


@njit(cache=True, nogil=True, error_model="numpy")
def listed(active, admitted):  # type: ignore[no-untyped-def]
    """The active list with the jobs admitted since it was last read appended: int64 (A,)."""
    count = active[-2]
    for j in range(active[-1], admitted):
        active[count] = j
        count += 1
    active[-2], active[-1] = count, admitted
    return active[:count]


@njit(cache=True, nogil=True, error_model="numpy")
def drop_completed(status, active):  # type: ignore[no-untyped-def]
    """Remove the completed jobs from the active list (order kept)."""
    count = 0
    for i in range(active[-2]):
        j = active[i]
        if status[j] != COMPLETED:
            active[count] = j
            count += 1
    active[-2] = count


@njit(cache=True, nogil=True, error_model="numpy")
def account_waiting(jobs, params, listed, touched, before):  # type: ignore[no-untyped-def]
    """A job queued now and not running before waits one more round, any other job's count is
    reset; a waiting job reaching the threshold is promoted. Returns whether one was.

    Only the ``listed`` (active) jobs are read: a completed job's count is 0 already (it ran in
    the round it completed, and a running job's count is reset)."""
    status, waiting_s, priority = jobs.status, jobs.waiting_s, jobs.priority
    promoted = False
    k = 0
    for j in listed:
        was_running = status[j] == RUNNING
        while k < touched.size and touched[k] < j:  # touched jobs are all active
            k += 1
        if k < touched.size and touched[k] == j:
            was_running = before[k] == RUNNING
            k += 1
        if status[j] == QUEUED and not was_running:
            waiting_s[j] += params.round_duration_s
            if (waiting_s[j] >= params.starvation_threshold_s
                    and priority[j] != params.promoted_priority):
                priority[j] = params.promoted_priority
                promoted = True
        else:
            waiting_s[j] = 0.0
    return promoted


@njit(cache=True, nogil=True, error_model="numpy")
def running_of(job_of_gpu, marks, out):  # type: ignore[no-untyped-def]
    """The distinct jobs holding GPUs, ascending: int64 (R,), a view of ``out`` (int64 (>= G,)
    scratch). ``marks``: bool (>= J,) scratch, all False (left so). These are the running jobs
    (a job runs exactly while it holds its GPUs), found without reading the active list."""
    count = 0
    for g in range(job_of_gpu.size):
        j = job_of_gpu[g]
        if j >= 0 and not marks[j]:
            marks[j] = True
            k = count
            while k > 0 and out[k - 1] > j:  # insertion sort: a few jobs
                out[k] = out[k - 1]
                k -= 1
            out[k] = j
            count += 1
    for i in range(count):
        marks[out[i]] = False
    return out[:count]


@njit(cache=True, nogil=True, error_model="numpy")
def holders_run(status, listed, job_of_gpu, marks, out):  # type: ignore[no-untyped-def]
    """Whether the jobs holding GPUs (:func:`running_of`) are exactly the running jobs of
    ``listed`` (what lets a round read those only)."""
    holders = running_of(job_of_gpu, marks, out)
    for j in holders:
        if status[j] != RUNNING:
            return False
    running = 0
    for j in listed:
        running += status[j] == RUNNING
    return running == holders.size


@njit(cache=True, nogil=True, error_model="numpy")
def complete_jobs(jobs, alloc, finished, now_s, num_measured):  # type: ignore[no-untyped-def]
    """Complete the jobs ``finished`` (int64 (F,), ascending) at ``now_s`` and free their GPUs;
    returns how many of them are measured."""
    measured = 0
    for j in finished:
        jobs.status[j] = COMPLETED
        jobs.completion_time_s[j] = now_s
        jobs.iteration_time_effective_s[j] = np.inf
        if j < num_measured:
            measured += 1
    job_of_gpu = alloc.job_of_gpu
    for g in range(job_of_gpu.size):
        j = job_of_gpu[g]
        if j != FREE and jobs.status[j] == COMPLETED:
            k = np.searchsorted(finished, j)
            if k < finished.size and finished[k] == j:
                job_of_gpu[g] = FREE
    return measured
