"""A proof that a job is never placed again before the round cap, for placements that run a
prefix of the LAS order (PAL_MODEL section 6, "Unfinished episodes", case 2).

:class:`StallDetector` (:mod:`palgym.sim.stall`) uses it for sticky placements under LAS: the
overload test there assumes a non-sticky walk; this one reads only what every prefix placement
guarantees, and proves its claim from the state at one round boundary.

The argument (levels in the order's service unit, deficits and work in GPU-seconds; sums
over the active jobs):

- *Prefix lemma.* The placement gives the round exactly a prefix of the queue order (the sticky
  walk with ``sticky_keep_victims_stopped`` and no backfilling: the walk stops at the first job
  it cannot place after stopping every running job behind it; the non-sticky walk from an empty
  cluster). So a job j runs in a round only if the jobs ahead of it and j need at most G GPUs,
  and if j does not run, no job behind it runs.
- *Level.* LAS orders by (priority, attained service): a job c with the same priority and less
  service than j's, ``a_c < a``, is ahead of j. Its *deficit* is ``d_c = w_c x (min(need_c,
  a) - a_c)`` if positive, else 0 (wall-clock service: ``w_c = N_c``, ``need_c = s_c``;
  GPU-time: ``w_c = 1``, ``need_c = N_c x s_c``), ``s_c`` a lower bound of the wall-clock
  service at which c completes (:func:`run_time_lower_bounds`), so its deficit is 0 when it
  leaves. ``d_c <= N_c x a``, so jobs of total deficit D ahead of j need at least D / a GPUs:
  j cannot run while ``D > (G - N_j) x a``.
- *Work.* A round raises the service of the jobs it runs by at most G x R GPU-seconds in all,
  so the deficits fall by at most G x R per round; an arrival adds its deficit.
- *Promotion* (starvation option, threshold T): a promoted job (priority 1, for ever) is ahead
  of every unpromoted one. For a promoted j the jobs ahead of it with deficits are the promoted
  ones below a; while j does not run, no unpromoted job runs (it is behind j), so its waiting
  time grows by R per round and it is promoted after a number of rounds known now (``ceil((T -
  waiting) / R)`` if queued, one more if running now, ``ceil(T / R)`` after an arrival's
  admission; each taken one round later here, as admissions are, for safety against rounding
  of the clock); its deficit then joins the promoted ones. Without the starvation option every
  job below a counts from the start. An unpromoted j under the starvation option is never
  claimed (it may be promoted and then overtake).

Then, with ``D_0`` the deficits counting now and ``S(n)`` those joining by the placement n
rounds from now (background arrivals from their seeded stream, promotions), the jobs ahead of j
at that placement carry at least ``L(n) = D_0 + S(n) - n x G x R``. If ``L(n) > (G - N_j) x a``
for every placement n before the round cap, j is not placed at any of them (induction over n:
j not placed at 0..n-1 keeps j's level at a and every job behind it frozen, so the bound holds
at n). The claim covers every placement before the cap, so an episode in
which it holds for every unfinished measured job ends unfinished, with no further measured
completion, whether it is stopped now or at the cap.
"""

from __future__ import annotations

import math

import numpy as np

from palgym.sim.background import BackgroundArrivals
from palgym.sim.config import AttainedService
from palgym.sim.engine import Simulator
from palgym.sim.jobs import PROMOTED_PRIORITY
from palgym.sim.state import ADMITTED, ROUND_INDEX
from palgym.sim.types import FloatArray, IntArray, JobStatus

_QUEUED, _RUNNING = np.int8(JobStatus.QUEUED), np.int8(JobStatus.RUNNING)
_MARGIN = 1e-9
"""Relative margin of the comparison ``L(n) > (G - N_j) x a`` (covers float rounding)."""
_EXACT = float(2**52)
"""Whole numbers below this and their sums are exact in float64."""


def run_time_lower_bounds(sim: Simulator) -> FloatArray:
    """float64 (J,): per trace row, a lower bound of the attained (wall-clock) service at which
    a job of that row completes (s).

    The job's variability penalty is the largest perfvar of its class over its N GPUs, so at
    least the N-th smallest of that class's row; its locality penalty is at least its class's
    if it must span nodes (or pays by size), else at least min(1, its class's). Its run time
    is then at least ``s = iterations x T_it x that perfvar x that penalty``, and a job's
    service grows by whole rounds, so it completes with at least ``R x ceil(s / R - 1e-6)``
    (the 1e-6 covers the rounding of the summed progress).
    """
    jobs, params = sim.jobs, sim.params
    rows = slice(0, jobs.num_measured)
    klass, gpus = jobs.perf_class[rows], jobs.num_gpus[rows]
    penalty = params.locality_penalty_by_class[klass]
    if params.larger_than_node_rule:
        locality = np.where(gpus > params.gpus_per_node, penalty, 1.0)
    else:
        locality = np.where(gpus > params.gpus_per_node, penalty, np.minimum(penalty, 1.0))
    nth_smallest = np.sort(sim.perfvar, axis=1)[klass, gpus - 1]
    run_s = jobs.total_iterations[rows] * jobs.iteration_time_s[rows] * nth_smallest * locality
    round_s = params.round_duration_s
    bound: FloatArray = round_s * np.ceil(run_s / round_s - 1e-6)
    return bound


def bound_holds(start: float, steps: IntArray, deficit: FloatArray, later: np.ndarray,
                step_s: float, bar: float, rounds_left: int) -> bool:
    """``L(n) > bar`` (with the margin) for every placement n in ``0 .. rounds_left - 1``,
    ``L(n) = start + J(n) - n x step_s``, J(n) the deficits of the jobs joining by n (those
    of ``later``, at their ``steps``).

    When every value is a whole number and every sum stays below 2**52 (deficits, services and
    the work are whole multiples of the round length), the sums are exact in any order,
    ``L(n)`` falls by ``step_s`` at each placement between two joinings and the margin's term
    ``|L(n)| + n x step_s`` does not fall, so a placement that fails the test is followed by
    failing ones up to the next joining: the last placement before each joining and the last
    one decide (the last one first, where most tries fail). Otherwise the deficits are summed
    per placement and every placement tested."""
    weights = deficit[later]
    exact = (1.0 <= step_s == np.floor(step_s) and step_s * rounds_left < _EXACT
             and 0.0 <= bar == np.floor(bar) and 0.0 <= start == np.floor(start)
             and bool(np.all((weights >= 0.0) & (weights == np.floor(weights))))
             and start + float(weights.sum()) + bar < _EXACT / 2)
    if not exact:
        joining = np.cumsum(np.bincount(steps[later], weights=weights, minlength=rounds_left))
        work = np.arange(rounds_left) * step_s
        bound = start + joining - work
        return bool(np.all(bound > bar + _MARGIN * (np.abs(bound) + work + bar)))
    last_work = (rounds_left - 1) * step_s
    last = start + weights.sum() - last_work
    if not last > bar + _MARGIN * (abs(last) + last_work + bar):
        return False
    bins, at = np.unique(steps[later], return_inverse=True)
    ends = np.append(bins - 1, rounds_left - 1)  # steps are >= 1
    joined = np.searchsorted(bins, ends, side="right")  # the bins joined by each end
    base = start + np.concatenate(([0.0], np.cumsum(np.bincount(at, weights=weights,
                                                                 minlength=bins.size))))
    work = ends * step_s
    bound = base[joined] - work
    return bool(np.all(bound > bar + _MARGIN * (np.abs(bound) + work + bar)))


class PrefixBlocking:
    """Proves, from the state at a round boundary, that a job is never placed again before
    the round cap (see the module docstring). Only reads the simulator.

    Args:
        sim: the engine (no dynamic truth: its perfvar may fall below the profile's).
        service: what LAS counts (``SimConfig.las_service``).
        cap_rounds: the round index at which the episode stops unfinished (min of the
            detector's round cap and ``config.max_rounds``).
    """

    def __init__(self, sim: Simulator, service: AttainedService, cap_rounds: int) -> None:
        self._wall = service is AttainedService.WALL_CLOCK
        self._cap = int(cap_rounds)
        params = sim.params
        self._round_s = params.round_duration_s
        self._starvation = params.starvation
        self._threshold_s = params.starvation_threshold_s
        self._num_rows = sim.jobs.num_measured
        self._row_s = run_time_lower_bounds(sim)
        self._row_gpus = sim.jobs.num_gpus[: self._num_rows].astype(np.float64)
        self._arrivals_s: FloatArray | None = None  # every background arrival up to the cap
        self._sim = sim

    def _arrival_times(self) -> FloatArray:
        """float64: every background arrival time (s) up to the cap's time, regenerated from
        the stream's seed exactly as the engine draws it (:mod:`palgym.sim.background`)."""
        if self._arrivals_s is None:
            sim = self._sim
            config = sim.config
            times: list[float] = []
            if config.background_jobs_per_hour > 0:
                stream = BackgroundArrivals(config.background_jobs_per_hour,
                                            config.background_seed)
                end_s = self._cap * self._round_s + self._round_s
                arrival = stream.next_after(float(sim.trace.submit_time_s[-1]))
                while arrival <= end_s:
                    times.append(arrival)
                    arrival = stream.next_after(arrival)
            self._arrivals_s = np.asarray(times, dtype=np.float64)
        return self._arrivals_s

    def _need_and_weight(self, rows: IntArray) -> tuple[FloatArray, FloatArray]:
        """Per job of trace row ``rows``: need (s or GPU-s) and deficit weight (GPUs or 1)."""
        gpus = self._row_gpus[rows]
        if self._wall:
            return self._row_s[rows], gpus
        return gpus * self._row_s[rows], np.ones_like(gpus)

    def blocked(self, jobs_to_prove: IntArray) -> bool:
        """True if none of ``jobs_to_prove`` (unfinished job indices) can be placed at any
        placement from now to the cap (each proved on its own); False if any is not admitted,
        is unpromoted under the starvation option, or its bound fails.

        Args:
            jobs_to_prove: int64 (K,) job indices.
        """
        sim = self._sim
        rounds_left = self._cap - int(sim.state.counters.ints[ROUND_INDEX])
        jobs = sim.jobs
        admitted = int(sim.state.counters.ints[ADMITTED])
        if rounds_left <= 0 or jobs_to_prove.size == 0 or admitted < self._num_rows:
            return False
        status = jobs.status[jobs_to_prove]
        if not np.all((status == _QUEUED) | (status == _RUNNING)):
            return False
        if self._starvation and np.any(jobs.priority[jobs_to_prove] != PROMOTED_PRIORITY):
            return False
        status = jobs.status[:admitted]
        active = np.flatnonzero((status == _QUEUED) | (status == _RUNNING))
        rows = np.where(active < self._num_rows, active, (active - self._num_rows) % self._num_rows)
        promoted = jobs.priority[active] == PROMOTED_PRIORITY
        starts, arrival_rows = self._future_arrivals(sim, admitted)
        steps = np.concatenate((self._promotion_rounds(status[active], jobs.waiting_s[active],
                                                       promoted), starts))
        need, weight = self._need_and_weight(np.concatenate((rows, arrival_rows)))
        level = np.concatenate(((jobs.attained_service_s if self._wall else jobs.gpu_service_s)
                                [active], np.zeros(starts.size)))
        now = steps <= 0
        later = (steps > 0) & (steps < rounds_left)
        step_s = sim.cluster.num_gpus * self._round_s
        own = jobs.attained_service_s if self._wall else jobs.gpu_service_s
        for job in jobs_to_prove.tolist():
            a = float(own[job])
            deficit = weight * np.maximum(np.minimum(need, a) - level, 0.0)
            bar = (sim.cluster.num_gpus - int(jobs.num_gpus[job])) * a
            if not bound_holds(deficit[now].sum(), steps, deficit, later, step_s, bar,
                               rounds_left):
                return False
        return True

    def _promotion_rounds(self, status: np.ndarray, waiting_s: FloatArray,
                          promoted: np.ndarray) -> IntArray:
        """int64 (A,): per active job, the placement (rounds from now) from which it counts
        ahead of a promoted, blocked job: 0 if promoted (or without the starvation option),
        else its promotion's (one round later, for safety)."""
        if not self._starvation:
            return np.zeros(status.size, dtype=np.int64)
        queued = np.ceil((self._threshold_s - waiting_s) / self._round_s) + 1
        running = math.ceil(self._threshold_s / self._round_s) + 2
        rounds = np.where(status == _RUNNING, running, queued)
        return np.where(promoted, 0, rounds).astype(np.int64)

    def _future_arrivals(self, sim: Simulator, admitted: int) -> tuple[IntArray, IntArray]:
        """int64 (F,) each: the placement (rounds from now) from which each background copy not
        yet admitted counts (its admission one round late, for safety, and with the starvation
        option its promotion), and its trace row."""
        first = admitted - self._num_rows  # copies admitted so far
        times = self._arrival_times()[first:]
        start = np.ceil((times - sim.now_s) / self._round_s) + 1
        if self._starvation:
            start += math.ceil(self._threshold_s / self._round_s) + 1
        number = np.arange(first, first + times.size)
        return start.astype(np.int64), number % self._num_rows
