"""The stall detector: stops a heuristic episode whose unfinished measured jobs can never
complete (PAL_MODEL section 6, "Unfinished episodes"); :func:`palgym.simulate.run_episode`
uses it (re-exported there).
"""

from __future__ import annotations

import math

import numpy as np

from palgym.errors import ConfigError
from palgym.sim.blocking import PrefixBlocking
from palgym.sim.config import AttainedService, SimConfig
from palgym.sim.engine import Simulator
from palgym.sim.jobs import JobTable
from palgym.sim.state import MEASURED_LEFT, ROUND_INDEX
from palgym.sim.types import FloatArray, JobStatus

DEFAULT_STALL_FACTOR = 3.0
"""Slack F of :class:`StallDetector` (PAL_MODEL section 6, "Unfinished episodes")."""
DEFAULT_ROUND_CAP = 200_000
"""Rounds after which :class:`StallDetector` stops any unfinished episode (PAL_MODEL 6)."""
NEVER_ROUND = 2**62
"""A round index no episode reaches (:meth:`StallDetector.quiet_until`: nothing to wait for)."""
PROOF_EVERY_ROUNDS = 100
"""Rounds between two tries of :class:`StallDetector`'s blocking proof (each costs a pass
over the active jobs and the background arrivals up to the cap)."""


class StallDetector:
    """Stops an episode whose unfinished measured jobs can never complete: under LAS (and the
    artifact's Tiresias, which is LAS) behind a background stream that overloads the cluster
    below their service need, once no measured job has completed for a long time; or, for a
    sticky placement, once each of them is proved never to be placed again before the round
    cap.

    The overload test (non-sticky placements; PAL_MODEL section 6, "Unfinished episodes",
    case 1) needs both conditions:

    1. Overload: for every unfinished measured job j, ``rho(need_j) >= 1``, where ``rho(x)``
       is the GPU work per second, over the cluster's G GPUs, that background copies bring
       before their attained service reaches x: ``rho(x) = lambda / 3600 / J x sum over the J
       trace rows r of N_r x min(s_r, x) / G`` (wall-clock attained service; with GPU-time
       service ``min(N_r x s_r, x)`` and ``need_j = N_j x s_j``), ``lambda`` the background
       jobs per hour, ``s_r`` a lower bound of row r's run time (iterations x T_it x the class's
       smallest perfvar x the smallest locality penalty if it needs more GPUs than a node, else
       1). Copies below j's level then take the whole cluster, so LAS never brings j its need.
    2. Horizon: at the start and at each measured completion (time a) W = sum over unfinished
       measured jobs of remaining iterations x T_it x the class's largest perfvar x the largest
       locality penalty; it fires at the first boundary ``t > max(a, last measured
       submission) + F x W + n x R`` (n unfinished jobs, R the round length).

    The blocking proof (case 2; :mod:`palgym.sim.blocking`) serves a sticky placement that
    runs a prefix of the LAS order (``sticky_keep_victims_stopped``, no backfilling: the walk
    stops at the first job it cannot place, after stopping every running job behind it). A job
    j then runs only if the jobs ahead of it fit beside it; the jobs with less service than
    j's level a carry a deficit (the service they still need to reach a, or to complete, x
    their GPUs) that a round lowers by at most G x R GPU-seconds and arrivals raise, and that
    needs more than ``G - N_j`` GPUs once it exceeds ``(G - N_j) x a``. Every
    ``PROOF_EVERY_ROUNDS`` rounds it bounds that deficit from below at every placement up to
    the round cap (the seeded background arrivals, and under the starvation option the
    promotions of jobs frozen behind a promoted j: an unpromoted j is never claimed); if the
    bound exceeds ``(G - N_j) x a`` throughout, for every unfinished measured job, none of
    them can be placed again before the cap, so the episode ends unfinished with no further
    measured completion whether it stops now or at the cap, and it stops now. It is a proof,
    not an estimate: it never fires on an episode that would finish.

    Other queue orders, sticky placements that restore their victims or backfill, and
    episodes with a dynamic truth are never stopped by these tests. Apart from them, the
    detector stops any episode still unfinished after ``round_cap`` rounds. It only reads the
    simulator.

    Args:
        sim: a fresh engine.
        factor: F (> 0; ``math.inf`` disables the detector, the round cap included).
        queue_order: the episode's queue order name for the overload test (None, e.g. for a
            sticky placement: no overload test).
        round_cap: rounds after which an unfinished episode stops (>= 1).
        prefix_order: the queue order name of a sticky placement that runs a prefix of it
            (``sticky_keep_victims_stopped``, no backfilling): LAS-like orders get the blocking
            proof (None: no proof).
        proof_every: rounds between two tries of the proof (>= 1).

    Raises:
        ConfigError: if ``factor`` is not > 0 or ``round_cap`` < 1.
    """

    def __init__(self, sim: Simulator, factor: float = DEFAULT_STALL_FACTOR,
                 queue_order: str | None = None, round_cap: int = DEFAULT_ROUND_CAP,
                 prefix_order: str | None = None,
                 proof_every: int = PROOF_EVERY_ROUNDS) -> None:
        if not factor > 0 or round_cap < 1:
            raise ConfigError(f"stall factor must be > 0 and round cap >= 1, got {factor} "
                              f"and {round_cap}")
        self.factor = float(factor)
        self.round_cap = int(round_cap)
        jobs: JobTable = sim.jobs
        measured = slice(0, jobs.num_measured)
        config = sim.config
        penalties = (config.locality_penalty, *(config.locality_penalty_by_class or ()))
        klass, base = jobs.perf_class[measured], jobs.iteration_time_s[measured]
        self._worst_s_per_iteration: FloatArray = (
            base * sim.perfvar.max(axis=1)[klass] * max(*penalties, 1.0))
        self._last_submit_s = float(jobs.submit_time_s[measured].max(initial=0.0))
        self.overload: FloatArray = _background_overload(sim, min(penalties), queue_order)
        self._may_overload = bool(np.any(self.overload >= 1.0))  # else the test never fires
        self._blocking = (PrefixBlocking(sim, config.las_service,
                                         min(self.round_cap, config.max_rounds))
                          if sim.truth is None and _las_like(prefix_order, config) else None)
        self._next_proof, self._proof_every = 0, max(int(proof_every), 1)
        self._completed = -1
        self._all_overloaded = False
        self.work_s = math.inf
        self.deadline_s = math.inf
        self.check(sim)

    def check(self, sim: Simulator) -> str:
        """Re-anchor after a measured completion; the reason text if the episode stalled,
        else ``""``.

        Per round it reads counters only (the engine's count of measured jobs left and the
        clock); the job columns are read when a measured job has completed since the last
        call, once the deadline has passed (if some job is overloaded), and at each try of the
        blocking proof.
        """
        if math.isinf(self.factor):
            return ""
        jobs = sim.jobs
        ints = sim.state.counters.ints
        completed = jobs.num_measured - int(ints[MEASURED_LEFT])
        if completed != self._completed:
            self._anchor(sim, completed)
        if completed == jobs.num_measured:
            return ""
        if int(ints[ROUND_INDEX]) >= self.round_cap:
            return (f"round cap ({self.round_cap}) reached with {jobs.num_measured - completed} "
                    f"of {jobs.num_measured} measured jobs unfinished")
        if self._blocking is not None and (reason := self._blocked(sim)):
            return reason
        if not self._may_overload or sim.now_s <= self.deadline_s:
            return ""
        left = jobs.status[: jobs.num_measured] != _COMPLETED
        if not np.all(self.overload[left] >= 1.0):
            return ""
        return (f"stalled: {jobs.num_measured - completed} of {jobs.num_measured} measured jobs "
                f"can never complete (background work below their service need: "
                f"{float(self.overload[left].min()):.2f} x the cluster or more); none completed "
                f"for {self.factor:g} x {self.work_s / 3600:.1f} h (their time alone on the "
                f"slowest GPUs), stopped at t={sim.now_s / 3600:.1f} h")

    def quiet_until(self, sim: Simulator) -> tuple[int, float]:
        """Where :meth:`check` can next stop the episode, for a driver that runs rounds
        without calling it (:mod:`palgym.driver`): call it after :meth:`check` at the current
        boundary.

        Returns:
            (round index, time in s): until a measured job completes, :meth:`check` returns
            ``""`` and changes nothing at every boundary whose round index is below the first
            and whose time is at most the second (``2**62`` and inf when nothing can fire).
        """
        if math.isinf(self.factor):
            return NEVER_ROUND, math.inf
        round_index = self.round_cap
        if self._blocking is not None:
            round_index = min(round_index, self._next_proof)
        if not self._all_overloaded:  # the jobs left change only at completions
            return round_index, math.inf
        return round_index, self.deadline_s

    def _blocked(self, sim: Simulator) -> str:
        """The blocking proof's reason text if it holds now (tried every ``proof_every``
        rounds), else ``""``."""
        round_index = int(sim.state.counters.ints[ROUND_INDEX])
        if self._blocking is None or round_index < self._next_proof:
            return ""
        self._next_proof = round_index + self._proof_every
        jobs = sim.jobs
        left = np.flatnonzero(jobs.status[: jobs.num_measured] != _COMPLETED)
        if not self._blocking.blocked(left):
            return ""
        cap = min(self.round_cap, sim.config.max_rounds)
        return (f"blocked: {left.size} of {jobs.num_measured} measured jobs can never complete "
                f"(none can be placed again before the round cap ({cap}): the jobs ahead of "
                f"each in the LAS order need more GPUs than are left beside it at every round "
                f"up to then), stopped at t={sim.now_s / 3600:.1f} h")

    def _anchor(self, sim: Simulator, completed: int) -> None:
        """The remaining work W and the deadline from now (``completed`` measured jobs)."""
        jobs = sim.jobs
        self._completed = completed
        measured = jobs.num_measured
        left = jobs.status[:measured] != _COMPLETED
        remaining = np.maximum(jobs.total_iterations[:measured][left]
                               - jobs.iterations_done[:measured][left], 0.0)
        self.work_s = float(np.sum(remaining * self._worst_s_per_iteration[left]))
        self.deadline_s = (max(sim.now_s, self._last_submit_s) + self.factor * self.work_s
                           + int(np.count_nonzero(left)) * sim.config.round_duration_s)
        self._all_overloaded = self._may_overload and bool(np.all(self.overload[left] >= 1.0))


def _background_overload(sim: Simulator, min_penalty: float, queue_order: str | None
                         ) -> FloatArray:
    """float64 (M,): ``rho(need_j)`` of :class:`StallDetector` per measured job (zeros when
    the order is not LAS-like or there is no background stream)."""
    jobs, config, cluster = sim.jobs, sim.config, sim.cluster
    count = jobs.num_measured
    if not _las_like(queue_order, config) or config.background_jobs_per_hour <= 0 or count == 0:
        return np.zeros(count)
    gpus = jobs.num_gpus[:count].astype(np.float64)
    run_s = (jobs.total_iterations[:count] * jobs.iteration_time_s[:count]
             * sim.perfvar.min(axis=1)[jobs.perf_class[:count]]
             * np.where(gpus > cluster.gpus_per_node, min_penalty, 1.0))
    wall = config.las_service is AttainedService.WALL_CLOCK
    need = run_s if wall else gpus * run_s
    below = (gpus * np.minimum(run_s[None, :], need[:, None]) if wall
             else np.minimum((gpus * run_s)[None, :], need[:, None]))  # (job, row)
    rate: FloatArray = config.background_jobs_per_hour / 3600.0 * below.mean(axis=1)
    return rate / cluster.num_gpus


def _las_like(queue_order: str | None, config: SimConfig) -> bool:
    """LAS, or Tiresias with wall-clock service (the artifact's, which is LAS)."""
    return queue_order == "las" or (
        queue_order == "tiresias" and config.las_service is AttainedService.WALL_CLOCK)


_COMPLETED = np.int8(JobStatus.COMPLETED)
