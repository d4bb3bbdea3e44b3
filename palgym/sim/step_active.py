"""The active-job list of the compiled step backend (:mod:`palgym.sim.step_numba`), and the
waiting account that reads it.

A round's kernels read the active (admitted, uncompleted) jobs only, not every job ever
admitted: behind an endless background stream the admitted jobs grow with simulated time
while the active ones stay few. The list lives beside the state (in the backend's
:class:`~palgym.sim.step_numba.Bound`), built from the job statuses and kept up by the kernels.
Importing this module imports numba (see :mod:`palgym._numba`).
"""

from __future__ import annotations

import numpy as np

from palgym._numba import njit
from palgym.sim.types import IntArray, JobStatus

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
