"""A lower bound of the average JCT that no schedule of an episode can beat.

Two relaxations of the simulator's world (docs/PAL_MODEL.md sections 3 and 6), each valid for
every placement, queue order and preemption pattern; the bound is the larger of the two:

1. **Each job alone on its fastest GPU set.** Job j (class c, N GPUs, W iterations of T_it s)
   is admitted at the first round boundary ``a_j`` at or after its submit time and runs at
   most at the pace of the fastest set the cluster holds: the N-th smallest ``perfvar[c]``
   within one node (no locality penalty), or the N-th smallest over all GPUs times the locality
   penalty where such a set pays it (:mod:`palgym.sim.locality`). With that effective
   iteration time ``T_min = (v x lp) x T_it`` a round adds at most ``R / T_min`` iterations, so
   the job needs at least ``k_j`` rounds, the first k at which k such additions, accumulated
   as the engine accumulates them, reach W; it completes at the earliest at boundary
   ``a_j + k_j``. (Floating-point addition is monotone, so any slower set, restart cost or
   idle round only delays the crossing.)
2. **Capacity.** Job j holds N GPUs for at least ``k_j`` whole rounds: ``p_j = N x k_j``
   GPU-rounds. A round offers G GPU-rounds. Lay each round's G GPU-rounds one after the other
   on a single machine: every schedule of the cluster becomes a preemptive single-machine
   schedule in which job j, released at ``G x a_j``, completes by ``G x C_j``. Shortest
   remaining processing time first is optimal for that problem (1 | r_j, pmtn | sum C_j;
   Baker, "Introduction to Sequencing and Scheduling", 1974; Schrage, Operations Research 16,
   1968), so ``sum_j C_j >= ceil(sum_j c_j / G)`` with ``c_j`` its completions.

Only the measured (trace) jobs count; background copies only take capacity, and a restart
cost only slows jobs, so the bound holds with both.

A dynamic truth (``config.dynamics``, :mod:`palgym.sim.dynamics`) multiplies each GPU's
character (the episode's profile) by a factor that changes during the episode; the bound then
takes every GPU at its fastest possible factor
(:attr:`~palgym.sim.dynamics.VariabilityDynamics.fastest_factor`: a run factor's draw is
floored at :data:`~palgym.sim.dynamics.RUN_Z_FLOOR`, a throttle factor is >= 1), times
``1 - FLOOR_MARGIN`` against the last-bit rounding of ``exp``, and relaxation 1 reads
``perfvar = character x that factor``. Every schedule's truth is at least that, so both
relaxations hold; the bound is looser than a static world's by about that factor (0.79 at the
default run sigma). Drift has no floor (its log is a sum of normals): the bound refuses it.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from palgym.errors import ConfigError
from palgym.sim.config import LocalityRule
from palgym.sim.types import FloatArray, IntArray
from palgym.simulate import Episode

FLOOR_MARGIN = 1e-9
"""The relative margin below a dynamic truth's fastest factor (module docstring)."""


@dataclass(frozen=True)
class LowerBound:
    """A lower bound of an episode's average JCT (:func:`lower_bound`).

    Attributes:
        avg_jct_s: the bound of the average JCT over the measured jobs (s).
        job_bound_s: relaxation 1 alone, as an average JCT (s).
        capacity_bound_s: relaxation 2 alone, as an average JCT (s).
        admit_round: int64 (J,), each job's first boundary index ``a_j``.
        min_rounds: int64 (J,), each job's fewest rounds of running ``k_j``.
    """

    avg_jct_s: float
    job_bound_s: float
    capacity_bound_s: float
    admit_round: IntArray
    min_rounds: IntArray

    @property
    def binding(self) -> str:
        """Which relaxation sets the bound: ``"job"`` or ``"capacity"``."""
        return "capacity" if self.capacity_bound_s > self.job_bound_s else "job"


def admit_rounds(submit_time_s: FloatArray, round_duration_s: float) -> IntArray:
    """int64 (J,): the first boundary index k with ``k x R >= submit`` (the engine admits a job
    at the first boundary at or after its arrival, :mod:`palgym.sim.admission`)."""
    rounds = np.ceil(np.asarray(submit_time_s, np.float64) / round_duration_s).astype(np.int64)
    rounds = np.maximum(rounds, 0)
    low = rounds * round_duration_s < submit_time_s
    rounds[low] += 1
    high = (rounds > 0) & ((rounds - 1) * round_duration_s >= submit_time_s)
    rounds[high] -= 1
    return rounds


def fastest_perfvar(episode: Episode) -> FloatArray:
    """float64 (C, G): the smallest values the episode's truth can take: the profile of a
    static world, ``character x fastest factor x (1 - FLOOR_MARGIN)`` of a dynamic one
    (module docstring).

    Raises:
        ConfigError: for a dynamic truth with drift (no floor).
    """
    perfvar: FloatArray = np.asarray(episode.profile.perfvar, np.float64)
    dynamics = episode.config.dynamics
    if dynamics is None or not dynamics.active:
        return perfvar
    fastest = dynamics.fastest_factor
    if fastest is None:
        raise ConfigError("lower bound: a dynamic truth with drift (config.dynamics.drift) has "
                          "no fastest speed (the drift's log is a sum of normals); the bound "
                          "covers static worlds and dynamic ones without drift")
    floored: FloatArray = perfvar * (fastest * (1.0 - FLOOR_MARGIN))
    return floored


def fastest_iteration_time_s(episode: Episode) -> FloatArray:
    """float64 (J,): each trace job's smallest possible effective iteration time
    ``(v x lp) x T_it`` over every GPU set of its size (relaxation 1 of the module docstring),
    on :func:`fastest_perfvar`.

    Raises:
        ConfigError: as :func:`fastest_perfvar`.
    """
    trace, cluster, config = episode.trace, episode.cluster, episode.config
    perfvar = fastest_perfvar(episode)
    per_node = cluster.gpus_per_node
    by_node = np.sort(perfvar.reshape(perfvar.shape[0], cluster.num_nodes, per_node), axis=2)
    overall = np.sort(perfvar, axis=1)
    penalties = config.locality_penalties
    larger_rule = config.locality_rule is LocalityRule.LARGER_THAN_NODE
    best = np.empty(trace.num_jobs, np.float64)
    for j in range(trace.num_jobs):
        c, n = int(trace.perf_class[j]), int(trace.num_gpus[j])
        lf = penalties[c]
        options = []
        if n <= per_node:
            options.append(float(by_node[c, :, n - 1].min()) * 1.0)
            options.append(float(overall[c, n - 1]) * (1.0 if larger_rule else lf))
        else:
            options.append(float(overall[c, n - 1]) * lf)
        best[j] = min(options) * float(trace.iteration_time_s[j])
    return best


def min_rounds(total_iterations: FloatArray, iteration_time_s: FloatArray,
               round_duration_s: float) -> IntArray:
    """int64 (J,): the fewest rounds at effective iteration times ``iteration_time_s`` after
    which the engine's accumulation ``done = R / T + done`` reaches ``total_iterations``."""
    out = np.empty(len(total_iterations), np.int64)
    for j, (work, t_eff) in enumerate(zip(total_iterations, iteration_time_s, strict=True)):
        step = round_duration_s / float(t_eff)
        guess = max(1, math.ceil(float(work) / step))
        while True:
            sums = np.cumsum(np.full(guess + 2, step))  # sequential, as the engine adds
            k = int(np.searchsorted(sums, work, side="left"))
            if k < sums.size:
                out[j] = k + 1
                break
            guess *= 2
    return out


def srpt_completions(release: IntArray, work: IntArray) -> IntArray:
    """int64 (J,): completion times of preemptive shortest-remaining-processing-time on one
    machine of unit speed (integer release times and work; ties by job index), the optimal
    schedule of 1 | r_j, pmtn | sum C_j."""
    order = np.argsort(release, kind="stable")
    done = np.zeros(len(release), np.int64)
    heap: list[tuple[int, int]] = []
    now, i, n = 0, 0, len(order)
    while i < n or heap:
        if not heap:
            now = max(now, int(release[order[i]]))
        while i < n and release[order[i]] <= now:
            j = int(order[i])
            heapq.heappush(heap, (int(work[j]), j))
            i += 1
        left, j = heapq.heappop(heap)
        until = int(release[order[i]]) if i < n else now + left
        run = min(left, until - now)
        now += run
        if run == left:
            done[j] = now
        else:
            heapq.heappush(heap, (left - run, j))
    return done


def lower_bound(episode: Episode) -> LowerBound:
    """The lower bound of the episode's average JCT (module docstring).

    Args:
        episode: from :func:`palgym.make_episode` (a static world, or a dynamic one without
            drift).

    Returns:
        The bound with both relaxations' values and each job's admission round and fewest
        rounds.

    Raises:
        ConfigError: for an episode whose dynamic truth has drift (``config.dynamics``).
    """
    config, trace = episode.config, episode.trace
    r = float(config.round_duration_s)
    admit = admit_rounds(trace.submit_time_s, r)
    rounds = min_rounds(trace.total_iterations, fastest_iteration_time_s(episode), r)
    submit_total = float(np.sum(trace.submit_time_s))
    jobs = trace.num_jobs
    job_sum = int(np.sum(admit + rounds))
    g = episode.cluster.num_gpus
    completions = srpt_completions(admit * g, trace.num_gpus * rounds)
    capacity_sum = -(-int(completions.sum()) // g)
    job_bound = (job_sum * r - submit_total) / jobs
    capacity_bound = (capacity_sum * r - submit_total) / jobs
    return LowerBound(max(job_bound, capacity_bound), job_bound, capacity_bound, admit, rounds)
