"""What a variability-aware policy believes about the GPUs: the truth, a stale profile, or an
online estimate from observed progress.

The engine's truth is ``sim.perfvar`` (static, or dynamic with
:attr:`palgym.sim.config.SimConfig.dynamics`). PAL and PM-First decide on slowdown factors
fitted from a **belief** (C, G) of the same units (:class:`BeliefMode`):

- ``oracle``: the truth now (for a free GPU, the speed of its next run);
- ``stale``: one profiling run per GPU at t = 0, as PAL's profiling does: ``character x ((run
  x throttle) x drift)`` with the run factor drawn from its own stream (independent of the
  episode's runs) and the throttle and drift of round 0
  (:meth:`palgym.sim.dynamics.VariabilityProcess.profiling_run`); never updated;
- ``online``: starts as ``stale``; after every round, each job that ran the whole round
  (no restart time left at its start) gives an observed slowdown
  ``o = (R / iterations done in the round) / (T_it x locality_penalty)``. It is attributed to
  the job's GPU with the largest belief for the job's class (the first such GPU): that GPU,
  and every other GPU of the job whose belief for the class is above ``o``, moves toward ``o``
  by an EWMA in log space, ``log b <- (1 - alpha) log b + alpha log o``; the factor it applies
  to b, ``exp(alpha x (log o - log b))``, multiplies every class of that GPU (throttling and
  outlier runs are GPU-level).

Without a dynamic truth, ``stale`` and ``online`` start at the truth, so every mode decides on
the factors fitted from the profile (scikit-learn's k-means, as every static run). Otherwise the
belief's factors are fitted by ``BeliefOptions.solver`` (:meth:`palgym.policies.slowdown.
SlowdownFactors.fit`; by default ``exact``, the optimal 1-D k-means and exact silhouette of
:mod:`palgym.policies.kmeans1d`, ~0.2 ms per class on 64 GPUs, where scikit-learn's
k-means++ fits and silhouettes take ~0.1-0.3 s for the four classes). They are refitted at a
round boundary at least ``refit_interval_rounds`` after the last fit where some belief value
differs from its value at that fit by more than ``refit_tolerance`` (relative); a class whose
values equal those of the last fit keeps its factors. A refit is an event for the driver
(:meth:`palgym.sim.engine.Simulator.mark_event`). Between refits a policy decides on the
factors of the last fit, so ``oracle`` is the truth as of its last fit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

import numpy as np

from palgym.errors import ConfigError, coerce_enum
from palgym.policies.base import PlacementPolicy, Sampler, WrappedPlacement
from palgym.policies.slowdown import ClusterCountRule, KMeansSolver, SlowdownFactors
from palgym.policies.stragglers import flag_stragglers, migrate_stragglers
from palgym.sim.dynamics import VariabilityProcess
from palgym.sim.types import FREE, BoolArray, FloatArray, IntArray
from palgym.sim.views import SimView


class BeliefMode(str, Enum):
    """What a policy's profile is (see the module docstring)."""

    ORACLE = "oracle"
    STALE = "stale"
    ONLINE = "online"


BELIEF_NAMES: tuple[str, ...] = tuple(mode.value for mode in BeliefMode)
"""Names of the belief modes."""


@dataclass(frozen=True)
class BeliefOptions:
    """How a policy's belief is formed.

    Attributes:
        mode: :class:`BeliefMode` (or its name).
        alpha: EWMA weight of an observation (``online``), in (0, 1].
        refit_tolerance: relative change of a belief value since the last fit that refits the
            slowdown factors (>= 0).
        refit_interval_rounds: rounds from one fit to the earliest next one (>= 1).
        solver: how the belief's fits cluster each class (:class:`~palgym.policies.slowdown.
            KMeansSolver`, or its name): ``exact`` (default) or ``sklearn`` (the profile's
            k-means, ~100 times slower). A belief equal to the profile decides on the
            profile's factors whatever the solver.
        straggler_ratio: ``online`` only: after each round, a job observed slower than this
            many times the largest profiled value of its GPUs is a straggler, and the
            factor-reading placements migrate it (:mod:`palgym.policies.stragglers`); None
            (default): no migration.

    Raises:
        ConfigError: for an unknown mode or solver, an out-of-range value, or a
            ``straggler_ratio`` that is not > 1 or is given with another mode than ``online``.
    """

    mode: BeliefMode = BeliefMode.ORACLE
    alpha: float = 0.3
    refit_tolerance: float = 0.1
    refit_interval_rounds: int = 10
    solver: KMeansSolver = KMeansSolver.EXACT
    straggler_ratio: float | None = None

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "mode", BeliefMode(self.mode))
        except ValueError:
            raise ConfigError(f"belief must be one of {list(BELIEF_NAMES)}, got "
                              f"{self.mode!r}") from None
        object.__setattr__(self, "solver", coerce_enum(KMeansSolver, self.solver,
                                                       "belief solver"))
        if not (0 < self.alpha <= 1 and self.refit_tolerance >= 0
                and self.refit_interval_rounds >= 1):
            raise ConfigError(f"belief alpha must be in (0, 1], refit_tolerance >= 0 and "
                              f"refit_interval_rounds >= 1, got {self!r}")
        ratio = self.straggler_ratio
        if ratio is not None and (isinstance(ratio, bool) or not isinstance(ratio, int | float)
                                  or not (math.isfinite(ratio) and ratio > 1)):
            raise ConfigError(f"belief straggler_ratio must be a finite number > 1, got {ratio!r}")
        if ratio is not None and self.mode is not BeliefMode.ONLINE:
            raise ConfigError(f"belief straggler_ratio needs the online belief (its "
                              f"observations), got mode {self.mode.value!r}")


def belief_options(belief: str | BeliefMode | BeliefOptions) -> BeliefOptions:
    """``belief`` as :class:`BeliefOptions` (a name gets the default alpha and tolerance).

    Raises:
        ConfigError: for an unknown name.
    """
    if isinstance(belief, BeliefOptions):
        return belief
    try:
        return BeliefOptions(BeliefMode(belief))
    except ValueError:
        raise ConfigError(f"belief must be one of {list(BELIEF_NAMES)} or a BeliefOptions, "
                          f"got {belief!r}") from None


def progress_snapshot(sim: SimView) -> tuple[IntArray, IntArray, FloatArray, BoolArray]:
    """The running jobs' progress before a round (after its commit): int64 (H,) the GPUs
    held, grouped by job (stable by GPU id), int64 (H,) their jobs, float64 (H,) the jobs'
    iterations done and bool (H,) whether the job has no restart time left (it runs the whole
    round)."""
    job_of_gpu = sim.job_of_gpu
    gpus = np.flatnonzero(job_of_gpu != FREE)
    owners = job_of_gpu[gpus]
    order = np.argsort(owners, kind="stable")
    gpus, owners = gpus[order], owners[order]
    iterations = sim.jobs.iterations_done[owners].copy()
    return gpus, owners, iterations, sim.jobs.restart_left_s[owners] == 0


def observed_slowdowns(sim: SimView, owners: IntArray, iterations: FloatArray,
                       fresh: BoolArray) -> tuple[IntArray, IntArray, FloatArray]:
    """The observed slowdowns of the round just advanced, from its :func:`progress_snapshot`
    (``owners``, ``iterations``, ``fresh``): for every job that ran the whole round and made
    progress, the start and end of its GPUs' positions in the snapshot and
    ``o = (R / iterations done in the round) / (T_it x locality_penalty)`` (float64); empty
    arrays when no job ran."""
    if owners.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
    jobs = sim.jobs
    first = np.flatnonzero(np.concatenate(([True], owners[1:] != owners[:-1])))
    job = owners[first]
    done = jobs.iterations_done[job] - iterations[first]
    observed = (sim.round_duration_s / done) / (
        jobs.iteration_time_s[job] * jobs.locality_penalty[job])
    keep = fresh[first] & (done > 0)
    return first[keep], np.append(first, owners.size)[1:][keep], observed[keep]


class Belief:
    """A policy's belief about ``sim``'s GPUs (see the module docstring).

    Args:
        sim: the view of a fresh simulation.
        options: the belief options.
        profiling_rng: the profiling run's stream (``stale`` and ``online``).
        process: the simulation's dynamic truth process (the engine's ``truth.process``), of
            which ``stale`` and ``online`` start from a profiling run; None: a static truth.

    Attributes:
        values: float64 (C, G); for ``oracle`` the simulator's truth array itself.
        profiled: float64 (C, G), the values at t = 0 (a copy).
        stragglers: int64 (S,), the jobs flagged after the last round (ascending; empty
            without ``options.straggler_ratio``).
        flagged_now: the last :meth:`watch` was an advance that flagged stragglers.
        changes: the values can change during the episode (``online``, or ``oracle`` of a
            dynamic truth).
    """

    def __init__(self, sim: SimView, options: BeliefOptions,
                 profiling_rng: np.random.Generator,
                 process: VariabilityProcess | None = None) -> None:
        self.options = options
        self.values: FloatArray = sim.perfvar
        if options.mode is not BeliefMode.ORACLE:
            self.values = (sim.perfvar.copy() if process is None
                           else process.profiling_run(profiling_rng))
        self.changes = options.mode is BeliefMode.ONLINE or (
            options.mode is BeliefMode.ORACLE and process is not None)
        self.profiled: FloatArray = self.values.copy()
        self.stragglers: IntArray = np.empty(0, np.int64)
        self.flagged_now = False
        self._round = sim.round_index
        self._fresh = np.empty(0, bool)
        self._gpus: IntArray = np.empty(0, np.int64)
        self._owners: IntArray = np.empty(0, np.int64)
        self._iterations: FloatArray = np.empty(0)

    def watch(self, sim: SimView) -> bool:
        """Called after every commit and every advance: snapshot the progress before a round,
        update the values after it (``online``). Returns True after an advance."""
        self.flagged_now = False
        if sim.round_index == self._round:
            if self.options.mode is BeliefMode.ONLINE:
                self._snapshot(sim)
            return False
        self._round = sim.round_index
        self.stragglers = np.empty(0, np.int64)
        if self.options.mode is BeliefMode.ONLINE and self._gpus.size:
            starts, ends, observed = self._observations(sim)
            if self.options.straggler_ratio is not None:
                self.stragglers = flag_stragglers(
                    self._owners[starts], [self._gpus[a:b] for a, b in zip(
                        starts.tolist(), ends.tolist(), strict=True)],
                    sim.jobs.perf_class[self._owners[starts]], observed, self.profiled,
                    self.options.straggler_ratio)
                self.flagged_now = bool(self.stragglers.size)
            self.observe(sim, starts, ends, observed)
        self._gpus = np.empty(0, np.int64)
        return True

    def _snapshot(self, sim: SimView) -> None:
        self._gpus, self._owners, self._iterations, self._fresh = progress_snapshot(sim)

    def _observations(self, sim: SimView) -> tuple[IntArray, IntArray, FloatArray]:
        """(first GPU position of each observed job, its GPUs, the observed slowdowns)."""
        return observed_slowdowns(sim, self._owners, self._iterations, self._fresh)

    def observe(self, sim: SimView, starts: IntArray, ends: IntArray,
                observed: FloatArray) -> None:
        """Apply the observations: job k ran on ``self._gpus[starts[k]:ends[k]]`` at observed
        slowdown ``observed[k]`` (the module docstring's rule)."""
        values, alpha = self.values, self.options.alpha
        classes = sim.jobs.perf_class[self._owners[starts]]
        for start, end, perf_class, seen in zip(starts.tolist(), ends.tolist(),
                                                classes.tolist(), observed.tolist(), strict=True):
            gpus = self._gpus[start:end]
            believed = values[perf_class, gpus]
            pulled = believed > seen
            pulled[int(np.argmax(believed))] = True
            factor = np.exp(alpha * (np.log(seen) - np.log(believed[pulled])))
            values[:, gpus[pulled]] *= factor[np.newaxis, :]


class BeliefFit:
    """The slowdown factors fitted from a :class:`Belief`, refitted when it moves (the module
    docstring's rule); shared by :class:`BeliefPlacement` and the env.

    Args:
        belief: the belief.
        rule: k-means cluster count rule of the fits.
        factors: the factors fitted from the profile (reused if the initial belief equals it).
        profile: float64 (C, G), the profile ``factors`` were fitted from.

    Attributes:
        factors: the factors of the last fit.
        refits: fits after the first.
    """

    def __init__(self, belief: Belief, rule: ClusterCountRule, factors: SlowdownFactors,
                 profile: FloatArray) -> None:
        self.belief = belief
        self._rule = rule
        self.refits = 0
        self._fit_round = 0
        self._fitted = belief.values.copy()
        self._own = False  # factors fitted by the belief's solver (reusable per class)
        self._previous: FloatArray = self._fitted
        self.factors = factors
        if not np.array_equal(self._fitted, profile):
            self._fit()

    def _fit(self) -> None:
        """Fit ``self._fitted`` with the belief's solver, keeping the classes whose values
        equal those of the previous fit by the same solver."""
        reuse = (self._previous, self.factors) if self._own else None
        self.factors = SlowdownFactors.fit(self._fitted, self._rule,
                                           solver=self.belief.options.solver, reuse=reuse)
        self._previous, self._own = self._fitted, True

    def update(self, sim: SimView) -> bool:
        """The per-commit and per-advance callback: update the belief, refit the factors when
        it moved beyond the tolerance. True after a refit: an event for the driver (it then
        calls the engine's ``mark_event``)."""
        options = self.belief.options
        if not self.belief.watch(sim) or (
                sim.round_index - self._fit_round < options.refit_interval_rounds):
            return False
        values = self.belief.values
        moved = np.abs(values / self._fitted - 1.0).max(initial=0.0)
        if moved <= options.refit_tolerance:
            return False
        self._fitted = values.copy()
        self._fit_round = sim.round_index
        self._fit()
        self.refits += 1
        return True


class BeliefPlacement(WrappedPlacement):
    """A factor-reading placement (PAL, PM-First) deciding on a :class:`Belief`'s factors
    (``inner``, remade from them at every refit).

    Args:
        belief: the belief.
        make: builds the placement from slowdown factors.
        rule: k-means cluster count rule of the fits.
        factors: the factors fitted from the profile (reused if the initial belief equals it).
        profile: float64 (C, G), the profile ``factors`` were fitted from.
    """

    def __init__(self, belief: Belief, make: Callable[[SlowdownFactors], PlacementPolicy],
                 rule: ClusterCountRule, factors: SlowdownFactors, profile: FloatArray) -> None:
        self.belief = belief
        self._make = make
        self.fit = BeliefFit(belief, rule, factors, profile)
        self.inner = make(self.fit.factors)
        self.migrations = 0

    @property
    def refits(self) -> int:
        """Fits after the first."""
        return self.fit.refits

    def place(self, view: SimView, order: IntArray, sampler: Sampler) -> IntArray:
        """The inner placement's target, with the belief's stragglers migrated
        (:func:`palgym.policies.stragglers.migrate_stragglers`; counted in ``migrations``)."""
        target = self.inner.place(view, order, sampler)
        if self.belief.stragglers.size:
            target, moved = migrate_stragglers(view, target, self.belief.stragglers,
                                               self.belief.values)
            self.migrations += moved
        return target

    def on_event(self, sim: SimView) -> bool:
        """The driver's per-commit and per-advance callback (:meth:`BeliefFit.update`); a
        refit remakes the placement. True after a refit or a round that flagged stragglers:
        an event for the driver (it then calls the engine's ``mark_event``)."""
        if self.fit.update(sim):
            self.inner = self._make(self.fit.factors)
            return True
        return self.belief.flagged_now
