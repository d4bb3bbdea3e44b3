"""A read-only view of a simulation, for policies, observation builders and agents.

:meth:`palgym.sim.engine.Simulator.view` returns a :class:`SimView`: frozen, its arrays
non-writeable views of the engine's live arrays (so a view shows the state as it is now, and
writing through it raises ``ValueError``). Take a fresh view for every decision: a view's scalars
(``now_s``, ``round_index``, ``num_admitted``) are those of the moment it was taken, and its job
columns are those of the job table at that moment (background copies grow the table).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from palgym.sim.cluster import ClusterSpec
from palgym.sim.state import ADMITTED, NOW_S, ROUND_INDEX, JobColumns, SimState
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
        now_s: the round boundary t (s).
        round_index: rounds advanced so far.
        num_admitted: job-table rows admitted (``0..num_admitted-1``).
        cluster: the cluster shape.
        jobs: the job columns (see :class:`~palgym.sim.state.JobColumns`), non-writeable.
        job_of_gpu: int64 (G,), job index per GPU or FREE (-1), non-writeable.
        node_of_gpu: int64 (G,), node index per GPU, non-writeable.
        perfvar: float64 (C, G), variability value per perf class and GPU, non-writeable.
    """

    now_s: float
    round_index: int
    num_admitted: int
    cluster: ClusterSpec
    jobs: JobColumns
    job_of_gpu: IntArray
    node_of_gpu: IntArray
    perfvar: FloatArray

    def active(self) -> IntArray:
        """int64 (A,): indices of admitted, uncompleted jobs, in admission order."""
        status = self.jobs.status[: self.num_admitted]
        active: IntArray = ((status == _QUEUED) | (status == _RUNNING)).nonzero()[0]
        return active

    def running(self) -> IntArray:
        """int64 (R,): indices of running jobs, in admission order."""
        running: IntArray = (self.jobs.status[: self.num_admitted] == _RUNNING).nonzero()[0]
        return running


def view_of(state: SimState, cluster: ClusterSpec) -> SimView:
    """A :class:`SimView` of ``state`` on ``cluster`` (non-writeable views, nothing copied)."""
    counters, alloc = state.counters, state.alloc
    return SimView(
        now_s=float(counters.floats[NOW_S]),
        round_index=int(counters.ints[ROUND_INDEX]),
        num_admitted=int(counters.ints[ADMITTED]),
        cluster=cluster,
        jobs=JobColumns(*(_read_only(column) for column in state.jobs)),
        job_of_gpu=_read_only(alloc.job_of_gpu),
        node_of_gpu=_read_only(alloc.node_of_gpu),
        perfvar=_read_only(alloc.perfvar),
    )
