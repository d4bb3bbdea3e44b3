"""Simulation configuration: frozen dataclasses and the presets.

``pal-artifact`` reproduces the PAL artifact (hal-uw/blox-pal, branch ``artifact``) including its
quirks; ``default`` fixes them. Every quirk is its own option (PAL_MODEL section 8). ``dynamic``
is ``default`` with a dynamic truth: run-to-run variation and throttling episodes
(:mod:`palgym.sim.dynamics`; PAL_MODEL, "Dynamic variability").
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from enum import Enum, StrEnum
from typing import Any

from palgym.errors import ConfigError, coerce_enum
from palgym.sim.dynamics import VariabilityDynamics


class LocalityRule(str, Enum):
    """When a job pays the locality penalty."""

    SPANS_NODES = "spans-nodes"
    """The job's GPU set spans more than one node (PAL, SC24, Section IV-C)."""
    LARGER_THAN_NODE = "larger-than-node"
    """The job needs more GPUs than a node has, wherever it is placed."""


class AttainedService(str, Enum):
    """What LAS / Tiresias count as attained service."""

    WALL_CLOCK = "wall-clock"
    """Seconds run so far (artifact)."""
    GPU_TIME = "gpu-time"
    """GPU-seconds run so far (Tiresias 2D-LAS, NSDI'19)."""


class Choice(StrEnum):
    """A closed choice that is also its name: equal to, hashed, formatted and written (JSON,
    CSV) as the string, and its ``repr`` is the string's, so ``repr(SimConfig(...))`` (and
    with it every episode hash and result file) reads as when the choice was a plain string."""

    def __repr__(self) -> str:
        return repr(self.value)


class PalNodeOrder(Choice):
    """How PAL's within-node step visits nodes with equally many candidate GPUs."""

    ASCENDING = "ascending"
    """Ascending node id (palgym default)."""
    PANDAS_1_1 = "pandas-1.1"
    """The artifact's ``value_counts`` order under its pinned pandas 1.1
    (:func:`palgym.policies.pal.pandas11_value_counts_order`)."""


class ProfileSampling(Choice):
    """How a variability profile is built from measurements."""

    GPU_MEDIAN = "gpu-median"
    """Each simulated GPU is a measured GPU's median run."""
    SINGLE_RUN = "single-run"
    """Artifact: one run per GPU and class, drawn with ``random.Random(profile_seed)``."""


class ClusterCountRule(Choice):
    """How the number of k-means clusters K of the slowdown factors is chosen per class
    (:class:`palgym.policies.slowdown.SlowdownFactors`)."""

    OUTLIERS = "outliers"
    """Artifact: K = 2 + count(x > mean + 3 std) (its silhouette search returns at once)."""
    SILHOUETTE = "silhouette"
    """palgym default: K in 2..6 maximising the silhouette score (ties: smaller K); candidates
    are scored with one k-means++ start each, the chosen K is refitted with n_init=10."""


class RemainingTime(str, Enum):
    """What SRTF sorts on."""

    NOMINAL = "nominal"
    """T_it x total_iterations - attained_service_s (artifact)."""
    IDEAL = "ideal"
    """T_it x remaining iterations: the true remaining work at median speed."""


@dataclass(frozen=True)
class PolicyOptions:
    """The per-policy options of a :class:`SimConfig` (see its attributes of that name): what
    the policy factories turn into each policy's own fields.

    Raises:
        ConfigError: for an unknown choice name.
    """

    sticky_keep_victims_stopped: bool = False
    las_service: AttainedService = AttainedService.GPU_TIME
    srtf_remaining: RemainingTime = RemainingTime.IDEAL
    tiresias_thresholds_gpu_s: tuple[float, ...] = (3600.0 * 4,)
    packed_sticky_strict_total: bool = False
    pal_node_order: PalNodeOrder = PalNodeOrder.ASCENDING

    def __post_init__(self) -> None:
        for name, enum in (("las_service", AttainedService), ("srtf_remaining", RemainingTime),
                           ("pal_node_order", PalNodeOrder)):
            object.__setattr__(self, name, coerce_enum(enum, getattr(self, name), name))


POLICY_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(PolicyOptions))
"""The :class:`SimConfig` fields that are policy options (:class:`PolicyOptions`)."""
EPISODE_FIELDS: tuple[str, ...] = ("profile_sampling", "profile_seed", "slowdown_clusters")
"""The :class:`SimConfig` fields read where an episode's profile and factors are built."""


@dataclass(frozen=True)
class SimConfig:
    """Simulator options (units in the names; see PAL_MODEL sections 2-5 and 8), in three
    concerns (:data:`ENGINE_FIELDS`, :data:`POLICY_FIELDS`, :data:`EPISODE_FIELDS`). The fields
    keep one flat order, the order of ``repr`` (and so of episode hashes); the policy options
    are also one value, :attr:`policy_options`, from which the policy factories
    (:func:`palgym.policies.make_placement`, :func:`palgym.policies.make_queue_order`) give
    each policy its own fields: a policy never reads the configuration.

    Engine dynamics (what :class:`~palgym.sim.engine.Simulator` reads):

    Attributes:
        round_duration_s: round length R (360 s for Sia-Philly, 300 s for Synergy).
        locality_penalty: slowdown lf of a job that pays the locality penalty (1.7 in PAL).
        locality_penalty_by_class: optional per-class lf (A, B, C, D) replacing
            ``locality_penalty`` (the artifact carries unused factors 1.16, 1.0, 1.0, 1.10).
            PAL's cost matrix uses the same penalties (:attr:`locality_penalties`).
        locality_rule: when a job pays it (see :class:`LocalityRule`).
        restart_cost_s: seconds of no progress after every (re)start of a job (0 in the artifact).
        background_jobs_per_hour: Poisson rate of unmeasured copies of trace jobs admitted after
            the last trace arrival (artifact: 2.0; 0 disables).
        starvation_threshold_s: a job that has waited this long without running in a row is
            promoted, for good, ahead of every unpromoted job in every queue order (artifact
            ``blox_manager.exec_jobs``: 3.6e6 s); None disables it.
        background_seed: seed of the ``random.Random`` stream of background inter-arrival times
            (artifact: 1).
        max_rounds: hard cap on simulated rounds (episodes stop, truncated, after it).
        dynamics: the dynamic truth (:class:`~palgym.sim.dynamics.VariabilityDynamics`); None
            (or every part off): the profile is the truth for the whole episode. Left out of
            ``repr`` (so a static configuration's text is as before the option existed);
            :meth:`palgym.simulate.Episode.episode_hash` adds it when set.

    Policy options (:class:`PolicyOptions`; read by the factories, never by the engine):

    Attributes:
        sticky_keep_victims_stopped: sticky placement: jobs preempted in a failed attempt stay
            stopped for the round (artifact) instead of being restored.
        las_service: attained-service definition for LAS / Tiresias.
        srtf_remaining: remaining-time definition for SRTF.
        tiresias_thresholds_gpu_s: 2D-LAS queue thresholds (GPU-seconds) of the discretised
            Tiresias order.
        packed_sticky_strict_total: Packed-Sticky spreads a job over several nodes only when
            strictly more than ``num_gpus`` GPUs are free (artifact ``packing_sticky.py``).
        pal_node_order: order in which PAL's within-node step visits nodes with equally many
            candidate GPUs (:class:`PalNodeOrder`).

    Episode construction (read where the profile and slowdown factors are built,
    :func:`palgym.simulate.make_episode`):

    Attributes:
        profile_sampling: how a profile is built from measurements (:class:`ProfileSampling`).
        profile_seed: seed of the profile draw (artifact: 42, a ``random.Random`` seed).
        slowdown_clusters: k-means cluster count rule of the slowdown factors
            (:class:`ClusterCountRule`).

    Closed choices are enums; their names (``"pandas-1.1"``, ...) are accepted and converted.
    """

    round_duration_s: float = 360.0
    locality_penalty: float = 1.7
    locality_penalty_by_class: tuple[float, float, float, float] | None = None
    locality_rule: LocalityRule = LocalityRule.SPANS_NODES
    restart_cost_s: float = 0.0
    background_jobs_per_hour: float = 0.0
    sticky_keep_victims_stopped: bool = False
    las_service: AttainedService = AttainedService.GPU_TIME
    srtf_remaining: RemainingTime = RemainingTime.IDEAL
    tiresias_thresholds_gpu_s: tuple[float, ...] = (3600.0 * 4,)
    starvation_threshold_s: float | None = None
    packed_sticky_strict_total: bool = False
    pal_node_order: PalNodeOrder = PalNodeOrder.ASCENDING
    background_seed: int = 1
    profile_sampling: ProfileSampling = ProfileSampling.GPU_MEDIAN
    profile_seed: int = 0
    slowdown_clusters: ClusterCountRule = ClusterCountRule.SILHOUETTE
    max_rounds: int = 1_000_000
    dynamics: VariabilityDynamics | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        _check_dynamics(self.dynamics)
        if not self.round_duration_s > 0:
            raise ConfigError(f"round_duration_s must be > 0, got {self.round_duration_s}")
        penalties = (self.locality_penalty, *(self.locality_penalty_by_class or ()))
        if any(not p >= 1.0 for p in penalties):
            shown = ", ".join(f"{p:g}" for p in penalties)
            raise ConfigError(f"locality penalty must be >= 1, got {shown}")
        if self.locality_penalty_by_class is not None and len(self.locality_penalty_by_class) != 4:
            raise ConfigError("locality_penalty_by_class needs 4 values (classes A..D)")
        if self.restart_cost_s < 0 or self.background_jobs_per_hour < 0:
            raise ConfigError("restart_cost_s and background_jobs_per_hour must be >= 0")
        if self.max_rounds < 1:
            raise ConfigError(f"max_rounds must be >= 1, got {self.max_rounds}")
        for name, enum in (
            ("locality_rule", LocalityRule),
            ("las_service", AttainedService),
            ("srtf_remaining", RemainingTime),
            ("pal_node_order", PalNodeOrder),
            ("profile_sampling", ProfileSampling),
            ("slowdown_clusters", ClusterCountRule),
        ):
            object.__setattr__(self, name, coerce_enum(enum, getattr(self, name), name))

    @property
    def locality_penalties(self) -> tuple[float, float, float, float]:
        """The locality penalty of each perf class (A, B, C, D): ``locality_penalty_by_class``
        if given, else ``locality_penalty`` for every class. The one home of this fallback."""
        by_class = self.locality_penalty_by_class
        if by_class is None:
            return (self.locality_penalty,) * 4
        return (by_class[0], by_class[1], by_class[2], by_class[3])

    @property
    def policy_options(self) -> PolicyOptions:
        """The policy options (:data:`POLICY_FIELDS`) as one value."""
        return PolicyOptions(**{name: getattr(self, name) for name in POLICY_FIELDS})

    def with_options(self, **options: Any) -> SimConfig:
        """A copy with some options changed.

        Raises:
            ConfigError: naming an unknown option.
        """
        known = {f.name for f in fields(self)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ConfigError(f"unknown option(s) {unknown}; known: {sorted(known)}")
        return replace(self, **options)


def _check_dynamics(dynamics: object) -> None:
    if dynamics is not None and not isinstance(dynamics, VariabilityDynamics):
        raise ConfigError(f"dynamics must be a VariabilityDynamics or None, got {dynamics!r}")


ENGINE_FIELDS: tuple[str, ...] = tuple(
    f.name for f in fields(SimConfig) if f.name not in POLICY_FIELDS + EPISODE_FIELDS)
"""The :class:`SimConfig` fields the engine reads (its dynamics)."""


PRESETS: dict[str, SimConfig] = {
    "default": SimConfig(),
    "pal-artifact": SimConfig(
        locality_rule=LocalityRule.SPANS_NODES,
        background_jobs_per_hour=2.0,
        sticky_keep_victims_stopped=True,
        las_service=AttainedService.WALL_CLOCK,
        srtf_remaining=RemainingTime.NOMINAL,
        starvation_threshold_s=3.6e6,
        profile_sampling=ProfileSampling.SINGLE_RUN,
        profile_seed=42,
        slowdown_clusters=ClusterCountRule.OUTLIERS,
    ),
    "dynamic": SimConfig(dynamics=VariabilityDynamics(run_variation=True, throttle=True)),
}
"""Named configurations (each sets engine, policy and episode fields at once)."""


def preset(name: str, **options: Any) -> SimConfig:
    """The named preset, with ``options`` overriding its fields.

    Raises:
        ConfigError: for an unknown preset or option.
    """
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; known: {sorted(PRESETS)}")
    return PRESETS[name].with_options(**options)
