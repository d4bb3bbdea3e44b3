"""Admission: the trace's arrivals and the background copies, admitted at round boundaries.

A job is admitted at the first boundary t with ``submit_time_s <= t``: trace jobs in trace
order, then background copies (:mod:`palgym.sim.background`), which are unmeasured copies of
trace jobs (row ``k mod J`` for the k-th copy) arriving after the last trace arrival. Admission
sets the job's status to QUEUED and raises the state's ``admitted``, ``counting_usage`` and
``events_since_commit`` counters; the engine (:mod:`palgym.sim.engine`) calls it after every
round whose end reaches :attr:`Admission.next_arrival_s`.
"""

from __future__ import annotations

import itertools
import math
from collections import deque

import numpy as np

from palgym.sim.background import BackgroundArrivals
from palgym.sim.config import SimConfig
from palgym.sim.jobs import JobTable
from palgym.sim.state import ADMITTED, COUNTING_USAGE, EVENTS_SINCE_COMMIT, NOW_S, Counters
from palgym.sim.types import FloatArray, JobStatus
from palgym.sim.workload import Trace

_QUEUED = np.int8(JobStatus.QUEUED)


class Admission:
    """The arrival cursor of one episode.

    Args:
        trace: the measured jobs (``submit_time_s`` non-decreasing).
        config: ``background_jobs_per_hour`` (0: no copies) and ``background_seed``.

    Attributes:
        next_arrival: index of the next trace job to admit (J once all are admitted).
        next_arrival_s: the next arrival of either kind (s; inf when none is left).
        next_background_s: the next background copy's arrival (s; inf without copies).
        background_count: background copies admitted so far.
    """

    def __init__(self, trace: Trace, config: SimConfig) -> None:
        self.trace = trace
        self.next_arrival = 0
        self.next_arrival_s = 0.0
        self._background = BackgroundArrivals(config.background_jobs_per_hour,
                                              config.background_seed)
        self.next_background_s = math.inf
        self.background_count = 0
        self._ahead: deque[float] = deque()  # drawn ahead, the arrivals after the next one
        if config.background_jobs_per_hour > 0:
            self.next_background_s = self._background.next_after(float(trace.submit_time_s[-1]))

    def has_future_arrivals(self) -> bool:
        """True if trace jobs (or background copies) are still to arrive."""
        return self.next_arrival < self.trace.num_jobs or math.isfinite(self.next_background_s)

    def admit(self, jobs: JobTable, counters: Counters) -> bool:
        """Admit the trace jobs and background copies that have arrived by the state's clock.

        Args:
            jobs: the job table (background copies are appended to it).
            counters: the state's counters (``now_s`` read; ``admitted``, ``counting_usage``
                and ``events_since_commit`` set when a job is admitted).

        Returns:
            True if background copies were appended (the table's row count changed, and its
            arrays are new if it was reallocated).
        """
        now_s = counters.floats[NOW_S]
        num_trace_jobs = self.trace.num_jobs
        start = arrival = self.next_arrival
        while arrival < num_trace_jobs and jobs.submit_time_s[arrival] <= now_s:
            arrival += 1
        if arrival > start:
            jobs.status[start:arrival] = _QUEUED
            self.next_arrival = arrival
            counters.ints[ADMITTED] = arrival
            counters.ints[COUNTING_USAGE] = True
            counters.ints[EVENTS_SINCE_COMMIT] = True
        copies = bool(self.next_background_s <= now_s)
        while self.next_background_s <= now_s:
            self._add_background_job(jobs, counters)
        next_trace_s = (float(jobs.submit_time_s[arrival]) if arrival < num_trace_jobs
                        else math.inf)
        self.next_arrival_s = min(next_trace_s, self.next_background_s)
        return copies

    def _add_background_job(self, jobs: JobTable, counters: Counters) -> None:
        number = self.background_count
        row = number % self.trace.num_jobs
        index = jobs.append_copy(
            row, int(self.trace.job_id.max()) + 1 + number, self.next_background_s
        )
        jobs.status[index] = _QUEUED
        counters.ints[ADMITTED] = index + 1
        counters.ints[EVENTS_SINCE_COMMIT] = True
        self.background_count += 1
        self.next_background_s = self._following()

    def _following(self) -> float:
        """The background arrival after ``next_background_s`` (s)."""
        if self._ahead:
            return self._ahead.popleft()
        return self._background.next_after(self.next_background_s)

    def close(self) -> None:
        """Admit nothing more: every later trace job and background copy is dropped (what a
        copy of the engine that plans on the jobs known now plays; never the episode's own
        engine)."""
        self.next_arrival = self.trace.num_jobs
        self.next_background_s = math.inf
        self._ahead.clear()
        self.next_arrival_s = math.inf

    @property
    def trace_admitted(self) -> bool:
        """Every trace job has been admitted (only background copies arrive from now on)."""
        return self.next_arrival == self.trace.num_jobs

    @property
    def first_copy_id(self) -> int:
        """The job id of the first background copy (the next one's is this plus
        :attr:`background_count`)."""
        return int(self.trace.job_id.max()) + 1

    def background_ahead(self, count: int) -> FloatArray:
        """float64 (count,): the next ``count`` background arrival times (s), from
        ``next_background_s`` on (inf without copies). Drawn ahead from the stream, in its
        order: the copies arrive exactly as without it."""
        if not math.isfinite(self.next_background_s):
            return np.full(count, math.inf)
        last = self._ahead[-1] if self._ahead else self.next_background_s
        while len(self._ahead) < count - 1:
            last = self._background.next_after(last)
            self._ahead.append(last)
        return np.array([self.next_background_s, *itertools.islice(self._ahead, count - 1)])

    def admitted_copies(self, jobs: JobTable, copies: int) -> None:
        """Account ``copies`` background copies that a compiled driver admitted
        (:func:`palgym.sim.admit_kernel.admit_copies`: the next rows of ``jobs``, arriving at
        the next :meth:`background_ahead` times): the table's size and this cursor move on as
        :meth:`admit` moves them."""
        for _ in range(copies):
            self.background_count += 1
            self.next_background_s = self._following()
        jobs.size += copies
        next_trace_s = (math.inf if self.trace_admitted
                        else float(jobs.submit_time_s[self.next_arrival]))
        self.next_arrival_s = min(next_trace_s, self.next_background_s)
