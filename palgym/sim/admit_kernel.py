"""Background copies admitted inside a compiled driver's loop (:mod:`palgym.driver.kernel`).

:func:`admit_copies` is :meth:`palgym.sim.admission.Admission.admit` once every trace job has
been admitted, for copies whose arrival times were drawn ahead
(:meth:`~palgym.sim.admission.Admission.background_ahead`): the k-th copy is trace row
``k mod J`` with job id ``first id + k``, appended as
:meth:`palgym.sim.jobs.JobTable.append_copy` appends it (the table's rows beyond its size
hold the columns' initial values), queued, raising ``admitted`` and
``events_since_commit``. The driver then reports how many it admitted
(:meth:`~palgym.sim.admission.Admission.admitted_copies`). Importing this module imports
numba (see :mod:`palgym._numba`).
"""

from __future__ import annotations

from palgym._numba import njit
from palgym.sim.state import ADMITTED, EVENTS_SINCE_COMMIT, NOW_S
from palgym.sim.types import JobStatus

QUEUED = int(JobStatus.QUEUED)


@njit(cache=True, nogil=True)
def admit_copies(jobs, counters, times, first, copy_number, first_id, num_trace_jobs):  # type: ignore[no-untyped-def]  # noqa: PLR0913
    """Admit the copies of ``times[first:]`` (s, ascending) that have arrived by the clock,
    while the table has room.

    Args:
        jobs: the job columns (rows from ``admitted`` on are written).
        counters: the clock and counters (``admitted``, ``events_since_commit`` set).
        times: float64 (B,) the next copies' arrival times.
        first: the first of ``times`` not admitted yet.
        copy_number: the number of the copy at ``times[first]`` (copies admitted so far).
        first_id: the job id of copy 0.
        num_trace_jobs: J (rows ``0..J-1`` are the trace jobs).

    Returns:
        The first of ``times`` still not admitted.
    """
    now_s = counters.floats[NOW_S]
    index = counters.ints[ADMITTED]
    capacity = jobs.status.size
    k = first
    while k < times.size and times[k] <= now_s and index < capacity:
        row = copy_number % num_trace_jobs
        jobs.job_id[index] = first_id + copy_number
        jobs.submit_time_s[index] = times[k]
        jobs.num_gpus[index] = jobs.num_gpus[row]
        jobs.total_iterations[index] = jobs.total_iterations[row]
        jobs.iteration_time_s[index] = jobs.iteration_time_s[row]
        jobs.perf_class[index] = jobs.perf_class[row]
        jobs.status[index] = QUEUED
        index += 1
        copy_number += 1
        k += 1
        counters.ints[ADMITTED] = index
        counters.ints[EVENTS_SINCE_COMMIT] = True
    return k
