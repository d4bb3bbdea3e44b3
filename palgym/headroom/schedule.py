"""Playing a dense allocation (one row per round, e.g. a solver's solution) on the engine and
recording it as a :class:`~palgym.schedule_record.ScheduleRecord`, the one replayable form of
a schedule in palgym (:mod:`palgym.schedule_record`: bench entries of a user's placement,
best-known schedules and exact optima alike).
"""

from __future__ import annotations

import numpy as np

from palgym.policies.base import Sampler
from palgym.schedule_record import RecordedEpisode, record_episode
from palgym.sim.types import FREE, IntArray, JobStatus
from palgym.sim.views import SimView
from palgym.simulate import Episode


class DensePlacement:
    """A placement that plays ``allocations`` (int64 (R, G): the job index per GPU or FREE
    during round r; every GPU free from round R on), with the GPUs of jobs that have completed
    freed (a job may complete earlier than its recorder expected). The
    :class:`~palgym.policies.PlacementPolicy` protocol; ``deterministic`` is False: the target
    changes from round to round without an event."""

    name = "schedule"
    sticky = False
    deterministic = False

    def __init__(self, allocations: IntArray) -> None:
        self.allocations = np.asarray(allocations, dtype=np.int64)

    def place(self, view: SimView, order: IntArray, sampler: Sampler) -> IntArray:
        """int64 (G,): the allocation of round ``view.round_index`` (``order`` and ``sampler``
        are not read)."""
        r = view.round_index
        if r >= self.allocations.shape[0]:
            return np.full(view.cluster.num_gpus, FREE, dtype=np.int64)
        target: IntArray = self.allocations[r].copy()
        held = np.flatnonzero(target != FREE)
        jobs = target[held]
        known = jobs < view.num_jobs
        done = np.zeros(jobs.size, dtype=bool)
        done[known] = view.jobs.status[jobs[known]] == JobStatus.COMPLETED
        target[held[done]] = FREE
        return target


def record_allocations(episode: Episode, allocations: IntArray) -> RecordedEpisode:
    """Play ``allocations`` (int64 (R, G), :class:`DensePlacement`) on ``episode`` and record
    the commits.

    Raises:
        InvalidActionError: for an allocation the engine refuses (a job not admitted, a GPU
            count other than the job's).
        PalgymError: if the allocations leave queued jobs on an idle cluster with no arrivals
            left (e.g. they end before every job completed).
    """
    return record_episode(episode, DensePlacement(allocations), "fifo", driver="python")
