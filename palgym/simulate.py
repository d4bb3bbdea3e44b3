"""Run one heuristic (queue order x placement) on one trace to the end.

``run_episode`` drives the same :class:`~palgym.sim.engine.Simulator` the Gymnasium env uses.
RNG discipline: one ``numpy.random.SeedSequence(seed)`` spawns the variability, policy,
duration-estimate (:mod:`palgym.policies.durations`), dynamic-truth and profiling-run streams
(children 0 to 4); the pal-artifact preset instead replays
the artifact's ``random.Random`` streams (profile seed 42, shared with Random placement;
background arrivals seed 1). PAL and PM-First decide on a belief (oracle, stale or online:
:mod:`palgym.policies.belief`), chosen per run.

An episode that cannot finish (LAS starving long jobs behind the artifact's endless,
overloading background stream) stops early, reported as truncated with its reason, when the
:class:`StallDetector` fires, or after ``config.max_rounds`` (PAL_MODEL section 6,
"Unfinished episodes"). Stopping never changes a finished episode's result.
"""

from __future__ import annotations

import copy
import hashlib
import numbers
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from palgym.bundled import LONGHORN_RUN_COUNTS, bundled_profile
from palgym.driver import Driver
from palgym.driver import drive as drive  # re-exported: the loop run_episode runs
from palgym.errors import ConfigError, PalgymError
from palgym.io.measurements import read_measurements
from palgym.policies import (
    CLAIRVOYANT,
    Durations,
    make_placement,
    make_queue_order,
    make_sampler,
    placement_name,
)
from palgym.policies.backfill import split_name
from palgym.policies.base import (
    CheckedPlacement,
    PlacementPolicy,
    QueueOrder,
    Sampler,
    check_placement,
    check_queue_order,
    is_own_policy,
)
from palgym.policies.belief import (
    Belief,
    BeliefMode,
    BeliefOptions,
    BeliefPlacement,
    belief_options,
)
from palgym.policies.guards import is_guard
from palgym.policies.registry import placement_entry
from palgym.policies.slowdown import SlowdownFactors
from palgym.sim.backend import BackendName
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import ProfileSampling, SimConfig, preset
from palgym.sim.engine import Simulator
from palgym.sim.metrics import EpisodeMetrics, JobRecords, with_end
from palgym.sim.stall import DEFAULT_ROUND_CAP as DEFAULT_ROUND_CAP
from palgym.sim.stall import DEFAULT_STALL_FACTOR, StallDetector
from palgym.sim.trace_fit import check_trace_fits
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
        belief: the belief PAL / PM-First decided on (``oracle``, ``stale``, ``online``;
            ``none`` for a policy reading no profile).
        refits: slowdown-factor fits after the first (belief changes beyond the tolerance).
        migrations: stragglers migrated (``BeliefOptions.straggler_ratio``; 0 without).
    """

    trace: str
    policy: str
    queue_order: str
    metrics: EpisodeMetrics
    records: JobRecords
    num_rounds: int
    episode_hash: str
    belief: str = BeliefMode.ORACLE.value
    refits: int = 0
    migrations: int = 0


@dataclass(frozen=True)
class Episode:
    """Everything that defines an episode apart from the policy (``belief``: the default belief
    of its runs, not part of the episode's hash)."""

    trace: Trace
    profile: VariabilityProfile
    cluster: ClusterSpec
    config: SimConfig
    seed: int
    placement_rng: np.random.Generator | random.Random
    belief: BeliefOptions = BeliefOptions()

    def episode_hash(self) -> str:
        """SHA-256 (first 16 hex chars) of trace, profile, cluster, config and seed."""
        text = "|".join((
            self.trace.content_hash(), self.profile.content_hash(), str(self.cluster),
            repr(self.config), str(self.seed),
            *(() if self.config.dynamics is None else (repr(self.config.dynamics),)),
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
    belief: str | BeliefMode | BeliefOptions = BeliefMode.ORACLE,
) -> Episode:
    """Resolve the profile and RNG streams of an episode.

    Args:
        trace: the measured jobs.
        cluster: cluster shape (default 16 x 4).
        config: options (default: the ``default`` preset).
        profile: explicit profile; else built from ``variability_data`` (a PAL-style folder)
            with ``config.profile_sampling``; else the bundled profile of that sampling.
        variability_data: measurement folder or class-mapping ``.json`` (see
            :func:`palgym.io.read_measurements`).
        seed: episode seed (numpy streams; the artifact's streams are fixed by its own seeds).
        belief: the default belief of the episode's runs (:mod:`palgym.policies.belief`).

    Raises:
        ProfileError: for unreadable measurements or a profile smaller than the cluster.
        ConfigError: for a ``seed`` that is not an integer >= 0.
        TraceFormatError: for a trace the episode could not simulate (a job larger than the
            cluster, a time the clock cannot resolve, a first arrival after the round cap:
            :func:`palgym.sim.trace_fit.check_trace_fits`).
    """
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ConfigError(f"seed must be an integer >= 0, got {seed!r}")
    cluster = cluster or ClusterSpec()
    config = config or preset("default")
    check_trace_fits(trace, cluster, config)
    streams = np.random.SeedSequence(seed).spawn(2)
    variability_rng = np.random.default_rng(streams[0])
    placement_rng: np.random.Generator | random.Random = np.random.default_rng(streams[1])
    artifact_rng = random.Random(config.profile_seed)
    if profile is None and variability_data is not None:
        data = read_measurements(variability_data)
        if config.profile_sampling is ProfileSampling.SINGLE_RUN:
            profile = sample_single_runs(data.norm_runs, cluster.num_gpus, artifact_rng,
                                         name=f"{data.label}-single-run")
        else:
            profile = sample_gpu_medians(data.gpu_medians, cluster.num_gpus, variability_rng,
                                         name=f"{data.label}-gpu-median")
    elif profile is None:
        profile = bundled_profile(config.profile_sampling, cluster.num_gpus)
        if config.profile_sampling is ProfileSampling.SINGLE_RUN:
            _replay_single_run_draws(artifact_rng, LONGHORN_RUN_COUNTS, cluster.num_gpus)
    elif config.profile_sampling is ProfileSampling.SINGLE_RUN:
        _replay_single_run_draws(artifact_rng, LONGHORN_RUN_COUNTS, cluster.num_gpus)
    if config.profile_sampling is ProfileSampling.SINGLE_RUN:
        placement_rng = artifact_rng
    return Episode(trace, profile.take(cluster.num_gpus), cluster, config, seed, placement_rng,
                   belief_options(belief))


def _replay_single_run_draws(rng: random.Random, run_counts: tuple[int, ...], gpus: int) -> None:
    """Advance ``rng`` exactly as :func:`sample_single_runs` would (G x 4 ``choice`` calls)."""
    for _ in range(gpus):
        for count in run_counts:
            rng.choice(range(count))


def slowdown_factors(episode: Episode) -> SlowdownFactors:
    """Slowdown factors of the episode's profile with the configured cluster count rule."""
    return SlowdownFactors.fit(episode.profile.perfvar, episode.config.slowdown_clusters)


def make_simulator(episode: Episode, backend: BackendName | None = None) -> Simulator:
    """The engine of ``episode`` at t = 0, as :func:`run_episode` builds it (the dynamic truth,
    if ``config.dynamics``, seeded from child 3 of the episode seed's ``SeedSequence``).

    Args:
        episode: from :func:`make_episode`.
        backend: the step backend (:class:`~palgym.sim.engine.Simulator`; None: numba if
            installed); both give bit-identical results.
    """
    truth_seed = np.random.SeedSequence(episode.seed).spawn(5)[3]
    return Simulator(episode.trace, episode.profile, episode.cluster, episode.config,
                     backend=backend, dynamics_seed=truth_seed)


def episode_sampler(episode: Episode) -> Sampler:
    """A fresh random stream of the episode's placements: a copy of ``episode.placement_rng``,
    so every run of the episode (and every policy) draws the same numbers."""
    return make_sampler(copy.deepcopy(episode.placement_rng))


_GUARD_RUNNER: list[Callable[..., EpisodeResult]] = []
"""The runner of guard names (:func:`palgym.guards.run_guard`), handed over by
:mod:`palgym.guards` at import (it sits above this module: the engine's rule selection)."""


def set_guard_runner(runner: Callable[..., EpisodeResult]) -> None:
    """Hand :func:`run_episode` the runner of aging-guard names (:mod:`palgym.guards`)."""
    _GUARD_RUNNER[:] = [runner]


def run_episode(
    episode: Episode,
    policy: str | PlacementPolicy = "pal",
    queue_order: str | QueueOrder = "fifo",
    factors: SlowdownFactors | None = None,
    stall_factor: float | None = None,
    durations: Durations = CLAIRVOYANT,
    belief: str | BeliefMode | BeliefOptions | None = None,
    progress: Callable[[Simulator], int] | None = None,
    driver: str | Driver = Driver.AUTO,
    wrap_placement: Callable[[PlacementPolicy], PlacementPolicy] | None = None,
) -> EpisodeResult:
    """Simulate ``episode`` under one heuristic until every measured job completes, or until
    it is truncated (the :class:`StallDetector` fires, or ``config.max_rounds``).

    Args:
        episode: from :func:`make_episode`.
        policy: placement name (see :data:`palgym.policies.PLACEMENT_NAMES`; a registered
            class of yours too, or ``MODULE:CLASS``), or a
            :class:`~palgym.policies.PlacementPolicy` object (e.g. your own; it decides on
            what it holds: ``factors``, ``durations`` and ``belief`` do not reach it, and the
            compiled driver serves only placements registered with a compiled form). An
            aging guard ``BASE+age=Hh:ALT_ORDER/ALT`` (:mod:`palgym.policies.guards`, its base
            order ``queue_order``) runs on the engine's rule selection (:mod:`palgym.guards`).
        queue_order: queue order name (see :data:`palgym.policies.QUEUE_ORDER_NAMES`, or
            ``MODULE:CLASS``), or a
            :class:`~palgym.policies.QueueOrder` object (e.g. a
            :class:`~palgym.policies.gittins.GittinsOrder`; ``durations`` does not reach it).
        factors: precomputed slowdown factors (computed from the profile if None).
        stall_factor: the stall detector's slack F (default :data:`DEFAULT_STALL_FACTOR`);
            ``math.inf`` disables it (only ``max_rounds`` then stops an unfinished episode).
        durations: what the queue order and EASY backfilling know of job durations (its
            errors: the episode seed's).
        belief: what PAL / PM-First decide on (None: ``episode.belief``); ``factors`` is
            used if the initial belief equals the profile, else the belief is fitted.
        progress: see :func:`drive` (e.g. a :class:`palgym.progress.EpisodeProgress`).
        driver: which loop runs the rounds (see :func:`drive`).
        wrap_placement: called once with the placement the loop would run, returns the one it
            runs (e.g. :class:`palgym.schedule_record.RecordingPlacement`; a wrapper is not
            served by the compiled loop, which gives the same result bit for bit).

    Returns:
        The episode result (metrics over the measured jobs; ``metrics.truncated`` with
        ``metrics.num_completed`` of ``metrics.num_jobs`` and the reason if it did not finish).

    Raises:
        ConfigError: for unknown policy, order or belief names, ``stall_factor`` <= 0, a
            ``belief`` given with a placement object, or ``driver="compiled"`` for an episode
            the compiled loop does not serve (e.g. a custom policy), naming why.
        TypeError: for a policy or order object lacking a member of its protocol (named).
        PalgymError: if the policy leaves queued jobs unplaced on an idle cluster with no
            arrivals left (the episode could never end).
    """
    if isinstance(policy, str) and is_guard(policy):
        if not _GUARD_RUNNER:
            raise ConfigError("guard names need palgym.guards (import palgym)")
        return _GUARD_RUNNER[0](episode, policy, queue_order, durations, belief=belief,
                                driver=driver, wrap_placement=wrap_placement)
    known = durations.for_seed(episode.seed)
    name = placement_name(policy) if isinstance(policy, str) else None
    if name is not None:
        factors = factors or slowdown_factors(episode)
        placement = make_placement(name, factors, episode.config, durations=known)
        own = placement_entry(split_name(name)[0]).origin is None
    elif belief is not None:
        raise ConfigError("belief applies to a named policy; a placement object decides on "
                          "what it holds")
    else:
        placement = check_placement(policy)
        own = is_own_policy(placement)
    _reject_unplaceable(episode, placement)
    order = (make_queue_order(queue_order, known, episode.config)
             if isinstance(queue_order, str) else check_queue_order(queue_order))
    # children 0, 1: variability, placement (make_episode); 2: duration estimates; 3: truth
    profiling_seed = np.random.SeedSequence(episode.seed).spawn(5)[4]
    sim = make_simulator(episode)
    stall = StallDetector(sim, DEFAULT_STALL_FACTOR if stall_factor is None else stall_factor,
                          None if placement.sticky or not own else order.name,
                          prefix_order=order.name if own and _runs_prefix(placement) else None)
    options = episode.belief if belief is None else belief_options(belief)
    watched = None if name is None else _with_belief(
        sim, episode, options, name, placement, np.random.default_rng(profiling_seed), known)
    placement = watched or placement
    if not own:  # a user's: its targets checked, no stall test that assumes palgym's rules
        placement = CheckedPlacement(placement)
    if wrap_placement is not None:
        placement = wrap_placement(placement)
    reason = drive(sim, order, placement, episode_sampler(episode), stall=stall,
                   on_event=_belief_events(watched) if watched and watched.belief.changes
                   else None, progress=progress, driver=driver)
    return EpisodeResult(
        trace=episode.trace.name, policy=name or placement.name, queue_order=order.name,
        metrics=final_metrics(sim, reason), records=sim.records(), num_rounds=sim.round_index,
        episode_hash=episode.episode_hash(), belief=options.mode.value if watched else "none",
        refits=watched.refits if watched else 0,
        migrations=watched.migrations if watched else 0,
    )


def _runs_prefix(placement: PlacementPolicy) -> bool:
    """A sticky placement that gives each round a prefix of the queue order: victims stay
    stopped, no backfilling (:mod:`palgym.sim.blocking`, the prefix lemma)."""
    backfill = getattr(placement, "backfill", None)
    return (placement.sticky and bool(getattr(placement, "keep_victims_stopped", False))
            and getattr(backfill, "mode", None) == "none")


def _with_belief(sim: Simulator, episode: Episode, options: BeliefOptions, policy: str,
                 placement: PlacementPolicy, profiling_rng: np.random.Generator,
                 known: Durations = CLAIRVOYANT) -> BeliefPlacement | None:
    """``placement`` deciding on a belief if it reads slowdown factors (PAL, PM-First)."""
    factors = getattr(placement, "factors", None)
    if not isinstance(factors, SlowdownFactors):
        return None
    def remake(fitted: SlowdownFactors) -> PlacementPolicy:
        return make_placement(policy, fitted, episode.config, durations=known)

    process = None if sim.truth is None else sim.truth.process
    return BeliefPlacement(Belief(sim.view(), options, profiling_rng, process), remake,
                           episode.config.slowdown_clusters, factors, episode.profile.perfvar)


def _belief_events(watched: BeliefPlacement) -> Callable[[Simulator], None]:
    """The driver's callback of a changing belief: a refit is an event for the engine."""
    def on_event(sim: Simulator) -> None:
        if watched.on_event(sim.view()):
            sim.mark_event()

    return on_event


def final_metrics(sim: Simulator, truncation_reason: str = "") -> EpisodeMetrics:
    """The episode's metrics with its end time (censored JCTs of unfinished jobs, PAL_MODEL
    section 6) and, if unfinished, ``truncation_reason`` (default: ``max_rounds`` if reached,
    else ``unfinished``)."""
    if not truncation_reason and sim.truncated:
        truncation_reason = f"max_rounds ({sim.config.max_rounds}) reached"
    return with_end(sim.metrics(), sim.records(), sim.now_s, truncation_reason)


def _reject_unplaceable(episode: Episode, placement: PlacementPolicy) -> None:
    """Fail fast on jobs a policy can never place even on an empty cluster.

    Only the artifact's strict Packed-Sticky rule has such jobs: one of exactly G GPUs spread
    over several nodes needs more than G free GPUs. (Background arrivals would otherwise keep
    the run going until ``max_rounds``.)
    """
    cluster, config = episode.cluster, episode.config
    if split_name(placement.name)[0] != "packed-sticky" or not config.packed_sticky_strict_total:
        return
    sizes = episode.trace.num_gpus
    never = np.flatnonzero((sizes == cluster.num_gpus) & (sizes > cluster.gpus_per_node))
    if never.size:
        job = int(episode.trace.job_id[never[0]])
        raise PalgymError(
            f"packed-sticky with packed_sticky_strict_total can never place job {job} "
            f"({cluster.num_gpus} GPUs over several nodes): the episode could never end"
        )
