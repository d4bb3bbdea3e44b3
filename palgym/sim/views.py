"""A read-only view of a simulation, for policies, observation builders and agents.

:meth:`palgym.sim.engine.Simulator.view` returns a :class:`SimView`: frozen, its arrays
non-writeable views of the engine's live arrays (writing through it raises ``ValueError``), and
its clock and counters read from the engine's live counters. So a view always shows the
simulation as it is now, and taking one is free: the engine hands out the same view until its
job table is reallocated (background copies beyond its capacity) or its GPU layout replaced.
Ask the engine for the view at every decision rather than holding one across rounds.

This is what a custom policy reads; see :mod:`palgym.policies.base` for the interfaces.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from palgym.sim import state as slot
from palgym.sim.cluster import ClusterSpec
from palgym.sim.jobs import JobColumns
from palgym.sim.state import Counters, SimState
from palgym.sim.types import FloatArray, IntArray, JobStatus

_RUNNING = np.int8(JobStatus.RUNNING)
_QUEUED = np.int8(JobStatus.QUEUED)


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


@dataclass(frozen=True)
class SimView:
    """The simulation at a round boundary, read-only.

    Attributes:
        cluster: the cluster shape (G GPUs, G_n per node).
        jobs: the job columns (see :class:`~palgym.sim.jobs.JobColumns`; every column of
            shape (>= J,), rows ``0..num_jobs-1`` in use), non-writeable.
        job_of_gpu: int64 (G,), job index per GPU or FREE (-1), non-writeable.
        node_of_gpu: int64 (G,), node index per GPU, non-writeable.
        perfvar: float64 (C, G), variability value per perf class and GPU (the engine's truth),
            non-writeable.
        counters: the clock and counters (:class:`~palgym.sim.state.Counters`), non-writeable;
            read them through the properties below.
        job_rows: int64 (1,), the job-table rows in use J (trace jobs, then background copies
            so far), non-writeable; read it as :attr:`num_jobs`.
        round_duration_s: round length R (s).
    """

    cluster: ClusterSpec
    jobs: JobColumns
    job_of_gpu: IntArray
    node_of_gpu: IntArray
    perfvar: FloatArray
    counters: Counters
    job_rows: IntArray
    round_duration_s: float

    @property
    def num_jobs(self) -> int:
        """Job-table rows in use J (trace jobs, then background copies so far)."""
        return self.job_rows.item(0)

    @property
    def now_s(self) -> float:
        """The current round boundary t (s)."""
        return self.counters.floats.item(slot.NOW_S)

    @property
    def round_index(self) -> int:
        """Rounds advanced so far."""
        return self.counters.ints.item(slot.ROUND_INDEX)

    @property
    def num_admitted(self) -> int:
        """Job-table rows admitted (``0..num_admitted-1``)."""
        return self.counters.ints.item(slot.ADMITTED)

    @property
    def events_since_commit(self) -> bool:
        """A completion, admission or starvation promotion happened since the last commit."""
        return self.counters.ints.item(slot.EVENTS_SINCE_COMMIT) != 0

    def active(self) -> IntArray:
        """int64 (A,): indices of admitted, uncompleted jobs, in admission order."""
        status = self.jobs.status[: self.counters.ints[slot.ADMITTED]]
        active: IntArray = ((status == _QUEUED) | (status == _RUNNING)).nonzero()[0]
        return active

    def running(self) -> IntArray:
        """int64 (R,): indices of running jobs, in admission order."""
        status = self.jobs.status[: self.counters.ints[slot.ADMITTED]]
        running: IntArray = (status == _RUNNING).nonzero()[0]
        return running


def view_of(state: SimState, cluster: ClusterSpec, job_rows: IntArray,
            round_duration_s: float) -> SimView:
    """A :class:`SimView` of ``state`` on ``cluster`` (non-writeable views, nothing copied).

    Args:
        state: the engine's state.
        cluster: its cluster shape.
        job_rows: int64 (1,), the engine's count of job-table rows in use (kept up to date).
        round_duration_s: round length R (s).
    """
    counters, alloc = state.counters, state.alloc
    return SimView(
        cluster=cluster,
        jobs=JobColumns(*(_read_only(column) for column in state.jobs)),
        job_of_gpu=_read_only(alloc.job_of_gpu),
        node_of_gpu=_read_only(alloc.node_of_gpu),
        perfvar=_read_only(alloc.perfvar),
        counters=Counters(_read_only(counters.floats), _read_only(counters.ints)),
        job_rows=_read_only(job_rows),
        round_duration_s=round_duration_s,
    )
