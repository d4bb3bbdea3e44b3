"""Run one heuristic (queue order x placement) on one trace to the end.

``run_episode`` drives the same :class:`~palgym.sim.engine.Simulator` the Gymnasium env uses.
RNG discipline: one ``numpy.random.SeedSequence(seed)`` spawns the variability and policy
streams; the pal-artifact preset instead replays the artifact's ``random.Random`` streams
(profile seed 42, shared with Random placement; background arrivals seed 1).

An episode that cannot finish (LAS starving long jobs behind the artifact's endless,
overloading background stream) stops early, reported as truncated with its reason, when the
:class:`StallDetector` fires, or after ``config.max_rounds`` (PAL_MODEL section 6,
"Unfinished episodes"). Stopping never changes a finished episode's result.
"""

from __future__ import annotations

import copy
import hashlib
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from palgym.bundled import LONGHORN_RUN_COUNTS, bundled_profile
from palgym.errors import ConfigError, PalgymError
from palgym.io.measurements import read_measurements
from palgym.policies import make_placement, make_queue_order, make_sampler
from palgym.policies.base import PlacementPolicy, QueueOrder, Sampler
from palgym.policies.slowdown import ClusterCountRule, SlowdownFactors
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import AttainedService, SimConfig, preset
from palgym.sim.engine import Simulator
from palgym.sim.jobs import JobTable
from palgym.sim.metrics import EpisodeMetrics, JobRecords, with_end
from palgym.sim.types import FloatArray, JobStatus
from palgym.sim.variability import VariabilityProfile, sample_gpu_medians, sample_single_runs
from palgym.sim.workload import Trace


@dataclass(frozen=True)
class EpisodeResult:
    """Outcome of one episode.

    Attributes:
        trace: trace id.
        policy: placement name.
        queue_order: queue order name.
        metrics: summary metrics (``metrics.truncated``, ``metrics.num_completed`` of
            ``metrics.num_jobs`` and ``metrics.truncation_reason`` for an unfinished episode).
        records: per-job records of the measured jobs.
        num_rounds: rounds simulated.
        episode_hash: hash of (trace, profile, cluster, config, seed): equal for every policy run
            on the identical episode.
    """

    trace: str
    policy: str
    queue_order: str
    metrics: EpisodeMetrics
    records: JobRecords
    num_rounds: int
    episode_hash: str


@dataclass(frozen=True)
class Episode:
    """Everything that defines an episode apart from the policy."""

    trace: Trace
    profile: VariabilityProfile
    cluster: ClusterSpec
    config: SimConfig
    seed: int
    placement_rng: np.random.Generator | random.Random

    def episode_hash(self) -> str:
        """SHA-256 (first 16 hex chars) of trace, profile, cluster, config and seed."""
        text = "|".join((
            self.trace.content_hash(), self.profile.content_hash(), str(self.cluster),
            repr(self.config), str(self.seed),
        ))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def make_episode(
    trace: Trace,
    *,
    cluster: ClusterSpec | None = None,
    config: SimConfig | None = None,
    profile: VariabilityProfile | None = None,
    variability_data: str | Path | None = None,
    seed: int = 0,
) -> Episode:
    """Resolve the profile and RNG streams of an episode.

    Args:
        trace: the measured jobs.
        cluster: cluster shape (default 16 x 4).
        config: options (default: the ``default`` preset).
        profile: explicit profile; else built from ``variability_data`` (a Longhorn-style folder)
            with ``config.profile_sampling``; else the bundled profile of that sampling.
        variability_data: measurement folder (see :func:`palgym.io.read_measurements`).
        seed: episode seed (numpy streams; the artifact's streams are fixed by its own seeds).

    Raises:
        ProfileError: for unreadable measurements or a profile smaller than the cluster.
    """
    cluster = cluster or ClusterSpec()
    config = config or preset("default")
    streams = np.random.SeedSequence(seed).spawn(2)
    variability_rng = np.random.default_rng(streams[0])
    placement_rng: np.random.Generator | random.Random = np.random.default_rng(streams[1])
    artifact_rng = random.Random(config.profile_seed)
    if profile is None and variability_data is not None:
        data = read_measurements(variability_data)
        if config.profile_sampling == "single-run":
            profile = sample_single_runs(data.norm_runs, cluster.num_gpus, artifact_rng,
                                         name=f"{Path(variability_data).name}-single-run")
        else:
            profile = sample_gpu_medians(data.gpu_medians, cluster.num_gpus, variability_rng,
                                         name=f"{Path(variability_data).name}-gpu-median")
    elif profile is None:
        profile = bundled_profile(config.profile_sampling, cluster.num_gpus)
        if config.profile_sampling == "single-run":
            _replay_single_run_draws(artifact_rng, LONGHORN_RUN_COUNTS, cluster.num_gpus)
    elif config.profile_sampling == "single-run":
        _replay_single_run_draws(artifact_rng, LONGHORN_RUN_COUNTS, cluster.num_gpus)
    if config.profile_sampling == "single-run":
        placement_rng = artifact_rng
    return Episode(trace, profile.take(cluster.num_gpus), cluster, config, seed, placement_rng)


def _replay_single_run_draws(rng: random.Random, run_counts: tuple[int, ...], gpus: int) -> None:
    """Advance ``rng`` exactly as :func:`sample_single_runs` would (G x 4 ``choice`` calls)."""
    for _ in range(gpus):
        for count in run_counts:
            rng.choice(range(count))


def slowdown_factors(episode: Episode) -> SlowdownFactors:
    """Slowdown factors of the episode's profile with the configured cluster count rule."""
    return SlowdownFactors.fit(
        episode.profile.perfvar, ClusterCountRule(episode.config.slowdown_clusters)
    )


def run_episode(
    episode: Episode,
    policy: str = "pal",
    queue_order: str = "fifo",
    factors: SlowdownFactors | None = None,
    stall_factor: float | None = None,
    progress: Callable[[Simulator], int] | None = None,
) -> EpisodeResult:
    """Simulate ``episode`` under one heuristic until every measured job completes, or until
    it is truncated (the :class:`StallDetector` fires, or ``config.max_rounds``).

    Args:
        episode: from :func:`make_episode`.
        policy: placement name (see :data:`palgym.policies.PLACEMENT_NAMES`).
        queue_order: queue order name (see :data:`palgym.policies.QUEUE_ORDER_NAMES`).
        factors: precomputed slowdown factors (computed from the profile if None).
        stall_factor: the stall detector's slack F (default :data:`DEFAULT_STALL_FACTOR`);
            ``math.inf`` disables it (only ``max_rounds`` then stops an unfinished episode).
        progress: see :func:`drive` (e.g. a :class:`palgym.progress.EpisodeProgress`).

    Returns:
        The episode result (metrics over the measured jobs; ``metrics.truncated`` with
        ``metrics.num_completed`` of ``metrics.num_jobs`` and the reason if it did not finish).

    Raises:
        ConfigError: for unknown policy or order names, or ``stall_factor`` <= 0.
        PalgymError: if the policy leaves queued jobs unplaced on an idle cluster with no
            arrivals left (the episode could never end).
    """
    factors = factors or slowdown_factors(episode)
    placement = make_placement(policy, factors, episode.config)
    _reject_unplaceable(episode, placement)
    order = make_queue_order(queue_order)
    rng = copy.deepcopy(episode.placement_rng)  # every policy sees the same stream
    sim = Simulator(episode.trace, episode.profile, episode.cluster, episode.config)
    stall = StallDetector(sim, DEFAULT_STALL_FACTOR if stall_factor is None else stall_factor,
                          None if placement.sticky else queue_order)
    reason = drive(sim, order, placement, make_sampler(rng), stall=stall, progress=progress)
    return EpisodeResult(
        trace=episode.trace.name, policy=policy, queue_order=queue_order,
        metrics=final_metrics(sim, reason), records=sim.records(), num_rounds=sim.round_index,
        episode_hash=episode.episode_hash(),
    )


def final_metrics(sim: Simulator, truncation_reason: str = "") -> EpisodeMetrics:
    """The episode's metrics with its end time (censored JCTs of unfinished jobs, PAL_MODEL
    section 6) and, if unfinished, ``truncation_reason`` (default: ``max_rounds`` if reached,
    else ``unfinished``)."""
    if not truncation_reason and sim.truncated:
        truncation_reason = f"max_rounds ({sim.config.max_rounds}) reached"
    return with_end(sim.metrics(), sim.records(), sim.now_s, truncation_reason)


DEFAULT_STALL_FACTOR = 3.0
"""Slack F of :class:`StallDetector` (PAL_MODEL section 6, "Unfinished episodes")."""
DEFAULT_ROUND_CAP = 200_000
"""Rounds after which :class:`StallDetector` stops any unfinished episode (PAL_MODEL 6)."""


class StallDetector:
    """Stops an episode whose unfinished measured jobs can never complete: under LAS (and the
    artifact's Tiresias, which is LAS) behind a background stream that overloads the cluster
    below their service need, once no measured job has completed for a long time.

    Both conditions must hold (PAL_MODEL section 6, "Unfinished episodes"):

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

    Other queue orders, sticky placements (a running job keeps its GPUs while the head of
    the queue is blocked, so LAS does not decide alone who runs) and episodes without a
    background stream are never stopped by this test. Apart from
    it, the detector stops any episode still unfinished after ``round_cap`` rounds. It only
    reads the simulator.

    Args:
        sim: a fresh engine.
        factor: F (> 0; ``math.inf`` disables the detector, the round cap included).
        queue_order: the episode's queue order name (None, e.g. for a sticky placement: no
            overload test).
        round_cap: rounds after which an unfinished episode stops (>= 1).

    Raises:
        ConfigError: if ``factor`` is not > 0 or ``round_cap`` < 1.
    """

    def __init__(self, sim: Simulator, factor: float = DEFAULT_STALL_FACTOR,
                 queue_order: str | None = None, round_cap: int = DEFAULT_ROUND_CAP) -> None:
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
        self._completed = -1
        self.work_s = math.inf
        self.deadline_s = math.inf
        self.check(sim)

    def check(self, sim: Simulator) -> str:
        """Re-anchor after a measured completion; the reason text if the episode stalled,
        else ``""``."""
        if math.isinf(self.factor):
            return ""
        jobs = sim.jobs
        left = jobs.status[: jobs.num_measured] != _COMPLETED
        completed = int(left.size - np.count_nonzero(left))
        if completed != self._completed:
            self._completed = completed
            remaining = np.maximum(jobs.total_iterations[: jobs.num_measured][left]
                                   - jobs.iterations_done[: jobs.num_measured][left], 0.0)
            self.work_s = float(np.sum(remaining * self._worst_s_per_iteration[left]))
            self.deadline_s = (max(sim.now_s, self._last_submit_s) + self.factor * self.work_s
                               + int(np.count_nonzero(left)) * sim.config.round_duration_s)
        if not sim.done and sim.round_index >= self.round_cap:
            return (f"round cap ({self.round_cap}) reached with {jobs.num_measured - completed} "
                    f"of {jobs.num_measured} measured jobs unfinished")
        if sim.done or sim.now_s <= self.deadline_s or not np.all(self.overload[left] >= 1.0):
            return ""
        return (f"stalled: {jobs.num_measured - completed} of {jobs.num_measured} measured jobs "
                f"can never complete (background work below their service need: "
                f"{float(self.overload[left].min()):.2f} x the cluster or more); none completed "
                f"for {self.factor:g} x {self.work_s / 3600:.1f} h (their time alone on the "
                f"slowest GPUs), stopped at t={sim.now_s / 3600:.1f} h")


def _background_overload(sim: Simulator, min_penalty: float, queue_order: str | None
                         ) -> FloatArray:
    """float64 (M,): ``rho(need_j)`` of :class:`StallDetector` per measured job (zeros when
    the order is not LAS-like or there is no background stream)."""
    jobs, config, cluster = sim.jobs, sim.config, sim.cluster
    count = jobs.num_measured
    las_like = queue_order == "las" or (
        queue_order == "tiresias" and config.las_service is AttainedService.WALL_CLOCK)
    if not las_like or config.background_jobs_per_hour <= 0 or count == 0:
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


_COMPLETED = np.int8(JobStatus.COMPLETED)


def _reject_unplaceable(episode: Episode, placement: PlacementPolicy) -> None:
    """Fail fast on jobs a policy can never place even on an empty cluster.

    Only the artifact's strict Packed-Sticky rule has such jobs: one of exactly G GPUs spread
    over several nodes needs more than G free GPUs. (Background arrivals would otherwise keep
    the run going until ``max_rounds``.)
    """
    cluster, config = episode.cluster, episode.config
    if placement.name != "packed-sticky" or not config.packed_sticky_strict_total:
        return
    sizes = episode.trace.num_gpus
    never = np.flatnonzero((sizes == cluster.num_gpus) & (sizes > cluster.gpus_per_node))
    if never.size:
        job = int(episode.trace.job_id[never[0]])
        raise PalgymError(
            f"packed-sticky with packed_sticky_strict_total can never place job {job} "
            f"({cluster.num_gpus} GPUs over several nodes): the episode could never end"
        )


def drive(
    sim: Simulator,
    order: QueueOrder,
    placement: PlacementPolicy,
    sampler: Sampler,
    on_event: Callable[[Simulator], None] | None = None,
    stall: StallDetector | None = None,
    progress: Callable[[Simulator], int] | None = None,
) -> str:
    """The heuristic loop: place, commit, advance, until every measured job completes, or the
    episode is truncated (``sim.truncated``: ``max_rounds``; or ``stall`` fires).

    A memo skips the placement when a deterministic policy under a static order made no
    change last round and nothing happened since (it would make the same, empty, change); the
    rounds up to the next event then run in one call
    (:meth:`palgym.sim.engine.Simulator.idle_rounds`) unless ``on_event`` watches every round.

    Args:
        sim: the engine, fresh or mid-episode.
        order, placement, sampler: the heuristic and its random stream.
        on_event: called with ``sim`` after every commit and every advance (e.g. invariant
            checks, :mod:`palgym.testing`).
        stall: checked after every advance (None: only ``max_rounds`` truncates).
        progress: reads ``sim`` (a progress bar), returns the round index to call it next at.

    Returns:
        ``""`` if every measured job completed, else why the episode stopped.

    Raises:
        PalgymError: if the policy leaves queued jobs unplaced on an idle cluster with no
            arrivals left (the episode could never end).
    """
    memo_valid, next_progress = False, 0
    while not sim.done and not sim.truncated:
        if progress is not None and sim.round_index >= next_progress:
            next_progress = progress(sim)
        if placement.deterministic and order.static and memo_valid and not sim.events_since_commit:
            if on_event is None:  # the memo holds until the next event: those rounds at once
                sim.idle_rounds()
                if stall is not None and (reason := stall.check(sim)):
                    return reason
                continue
            sim.commit(None)
        else:
            target = placement.place(sim, order.order(sim), sampler)
            memo_valid = not sim.commit(target)
            if (not sim.running_jobs().size and sim.active_jobs().size
                    and not sim.has_future_arrivals()):
                raise PalgymError(
                    f"{placement.name} placed no job on an idle cluster at t={sim.now_s:g} s "
                    "with no arrivals left: the episode could never end"
                )
        if on_event is not None:
            on_event(sim)
        sim.advance()
        if on_event is not None:
            on_event(sim)
        if stall is not None and (reason := stall.check(sim)):
            return reason
    return f"max_rounds ({sim.config.max_rounds}) reached" if sim.truncated else ""
