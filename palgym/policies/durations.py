"""What the scheduler knows about job durations: the one place policies and the env read a
job's remaining time from.

Three levels of knowledge (:class:`DurationKnowledge`):

- ``clairvoyant`` (default): the trace's true work, ``total_iterations``;
- ``noisy``: a user estimate of the total iterations, ``N_hat_j = N_j x e_j``, with one
  multiplicative error per job ``e_j = exp(sigma x z_j)``, ``z_j ~ N(0, 1)`` (lognormal, median
  1), drawn once per job in job-index order (trace rows, then background copies in arrival
  order) from child 2 of the episode's ``numpy.random.SeedSequence(seed)`` (children 0 and 1
  are the variability and placement streams of :func:`palgym.simulate.make_episode`, 3 and 4
  the dynamic truth and the profiling run of :func:`palgym.simulate.run_episode`). The
  draws depend on the seed alone, never on the policy;
- ``unknown``: no duration information; asking for a remaining time raises
  :class:`~palgym.errors.ConfigError` (SRTF is unavailable; FIFO, LAS and Tiresias never ask).

The scheduler's knowledge is a property of the policy, not of the engine: the engine always
runs every job for its true ``total_iterations``, and the episode (and its hash) is the same
under every level, so heuristics under different knowledge compare on identical episodes.

Source: user runtime estimates are inaccurate multiplicative over- and under-estimates:
Mu'alem & Feitelson, "Utilization, predictability, workloads, and user runtime estimates in
scheduling the IBM SP2 with backfilling", IEEE TPDS 12(6), 2001; Tsafrir, Etsion & Feitelson,
"Modeling user runtime estimates", JSSPP 2005. The lognormal error with median 1 is palgym's
simplification (docs/PAL_MODEL.md, "Duration knowledge").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from enum import Enum

import numpy as np

from palgym.errors import ConfigError
from palgym.sim.config import RemainingTime
from palgym.sim.jobs import JobTable
from palgym.sim.types import FloatArray, IntArray
from palgym.sim.views import SimView

ESTIMATE_STREAM: int = 2
"""Spawn key of the estimates' child of the episode's SeedSequence."""
DEFAULT_ESTIMATE_SIGMA: float = 1.0
"""Default sigma of the log of the estimate error (a factor e within [1/e, e] for 68% of jobs)."""
EASY_INSTEAD: str = "use backfill none or first-fit (NAME or NAME+backfill)"
"""What works without durations where EASY backfilling was asked for (error messages)."""
_BLOCK = 1024  # errors are drawn in blocks of this many jobs (the stream is sequential)


class DurationKnowledge(str, Enum):
    """What the scheduler knows about job durations (see the module docstring)."""

    CLAIRVOYANT = "clairvoyant"
    NOISY = "noisy"
    UNKNOWN = "unknown"


DURATION_KNOWLEDGE_NAMES: tuple[str, ...] = tuple(k.value for k in DurationKnowledge)
"""``clairvoyant``, ``noisy``, ``unknown``."""


def parse_knowledge(value: str | DurationKnowledge) -> DurationKnowledge:
    """The knowledge level named ``value``.

    Raises:
        ConfigError: for an unknown name (naming ``duration_knowledge`` and the known ones).
    """
    try:
        return DurationKnowledge(value)
    except ValueError:
        raise ConfigError(f"duration_knowledge must be one of {list(DURATION_KNOWLEDGE_NAMES)}, "
                          f"got {value!r}") from None


@dataclass
class _Cache:
    """Draws and estimates computed so far (a per-episode memo; never compared or hashed)."""

    errors: FloatArray = field(default_factory=lambda: np.empty(0))
    column: FloatArray | None = None  # the job table's total_iterations the estimate is of
    size: int = -1
    estimate: FloatArray = field(default_factory=lambda: np.empty(0))


@dataclass(frozen=True)
class Durations:
    """The scheduler's view of job durations in one episode.

    Attributes:
        knowledge: the level (a name is converted).
        sigma: standard deviation of ``log e_j`` under ``noisy`` (finite, >= 0; 0 gives exact
            estimates drawn through the noisy path).
        seed: the episode seed (see :meth:`for_seed`).

    Raises:
        ConfigError: for an unknown level or a sigma that is not a finite number >= 0.
    """

    knowledge: DurationKnowledge = DurationKnowledge.CLAIRVOYANT
    sigma: float = DEFAULT_ESTIMATE_SIGMA
    seed: int = 0
    _cache: _Cache = field(default_factory=_Cache, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "knowledge", parse_knowledge(self.knowledge))
        sigma = self.sigma
        if (isinstance(sigma, bool) or not isinstance(sigma, int | float)
                or not math.isfinite(sigma) or sigma < 0):
            raise ConfigError(f"estimate_sigma must be a finite number >= 0, got {sigma!r}")

    @property
    def known(self) -> bool:
        """False under ``unknown``."""
        return self.knowledge is not DurationKnowledge.UNKNOWN

    def for_seed(self, seed: int) -> Durations:
        """The same knowledge in the episode of seed ``seed`` (fresh error draws)."""
        return replace(self, seed=int(seed))

    def require_known(self, what: str, instead: str = "use fifo, las or tiresias") -> None:
        """Raise ConfigError saying that ``what`` needs durations, unless they are known
        (``instead``: what works without them, named in the message)."""
        if not self.known:
            raise ConfigError(f"{what} needs job durations, which duration_knowledge='unknown' "
                              f"withholds: {instead}, or duration_knowledge="
                              "'clairvoyant' / 'noisy'")

    def errors(self, count: int) -> FloatArray:
        """float64 (count,): the multiplicative errors ``e_j`` of jobs 0..count-1 (noisy)."""
        cache = self._cache
        if cache.errors.size < count:
            sequence = np.random.SeedSequence(self.seed, spawn_key=(ESTIMATE_STREAM,))
            generator = np.random.default_rng(sequence)
            blocks = [generator.standard_normal(_BLOCK) for _ in range(-(-count // _BLOCK))]
            cache.errors = np.exp(self.sigma * np.concatenate(blocks))
        return cache.errors[:count]

    def total_iterations(self, jobs: JobTable) -> FloatArray:
        """float64 (>= jobs.size,): the scheduler's total iterations of every job: the true
        column (the same array) when clairvoyant, ``N_j x e_j`` when noisy.

        Raises:
            ConfigError: under ``unknown``.
        """
        return self.estimated(jobs.total_iterations, jobs.size)

    def estimated(self, column: FloatArray, size: int) -> FloatArray:
        """:meth:`total_iterations` of the true column ``column`` (float64 (>= size,)) whose
        first ``size`` rows are in use.

        Raises:
            ConfigError: under ``unknown``.
        """
        self.require_known("a remaining time")
        if self.knowledge is DurationKnowledge.CLAIRVOYANT:
            return column
        cache = self._cache
        if cache.column is not column or cache.size != size:  # new or grown
            cache.estimate = column[:size] * self.errors(size)
            cache.column, cache.size = column, size
        return cache.estimate


CLAIRVOYANT = Durations()
"""The default view: the trace's true durations."""


def remaining_run_time_s(
    sim: SimView, jobs: IntArray, durations: Durations = CLAIRVOYANT
) -> FloatArray:
    """float64 (n,): the scheduler's remaining run time (s) of ``jobs`` at their current pace.

    ``max(N_hat - iterations_done, 0) x T_it x variability_penalty x locality_penalty``, the
    penalties of the job's current (or last) GPU set (1.0 x 1.0 before its first start), with
    ``N_hat`` the scheduler's total iterations (:meth:`Durations.total_iterations`). EASY
    backfilling's reservations read it (:mod:`palgym.policies.backfill`).

    Args:
        sim: the simulation's view.
        jobs: int64 (n,) job indices.
        durations: what the scheduler knows (default clairvoyant).

    Raises:
        ConfigError: under ``unknown`` (naming ``duration_knowledge``).

    Source: PAL_MODEL section 3 (T_eff = penalties x T_it).
    """
    durations.require_known("EASY backfilling", EASY_INSTEAD)
    table = sim.jobs
    total = durations.estimated(table.total_iterations, sim.num_jobs)
    left = np.maximum(total[jobs] - table.iterations_done[jobs], 0.0)
    pace = table.variability_penalty[jobs] * table.locality_penalty[jobs]
    result: FloatArray = left * table.iteration_time_s[jobs] * pace
    return result


def remaining_run_time_one_s(sim: SimView, job: int, durations: Durations = CLAIRVOYANT
                             ) -> float:
    """:func:`remaining_run_time_s` of one job (s), the same float bit for bit, without the
    array calls (EASY backfilling asks it for one job at a time).

    Raises:
        ConfigError: under ``unknown`` (naming ``duration_knowledge``).
    """
    durations.require_known("EASY backfilling", EASY_INSTEAD)
    table = sim.jobs
    total = durations.estimated(table.total_iterations, sim.num_jobs)
    left = total[job] - table.iterations_done[job]
    if left < 0.0:  # np.maximum(left, 0.0)
        left = 0.0
    pace = table.variability_penalty[job] * table.locality_penalty[job]
    return float(left * table.iteration_time_s[job] * pace)


def remaining_time_s(
    sim: SimView,
    jobs: IntArray,
    durations: Durations = CLAIRVOYANT,
    rule: RemainingTime = RemainingTime.IDEAL,
) -> FloatArray:
    """float64 (len(jobs),): the scheduler's remaining time (s) of ``jobs``.

    ``ideal``: ``T_it x max(N_hat - iterations_done, 0)``; ``nominal`` (artifact):
    ``T_it x N_hat - attained_service_s`` (unclipped, as in the artifact), with ``N_hat`` the
    scheduler's total iterations (:meth:`Durations.total_iterations`; the true ``N`` when
    clairvoyant, where both are exactly the formulas of the trace's true work).

    Args:
        sim: the simulation's view.
        jobs: int64 (A,) job indices.
        durations: what the scheduler knows (default clairvoyant).
        rule: ideal (default) or nominal (SRTF's ``remaining``).

    Raises:
        ConfigError: under ``unknown`` (naming ``duration_knowledge``).

    Source: Blox ``schedulers/srtf.py`` (nominal, as run by the PAL artifact).
    """
    table = sim.jobs
    total = durations.estimated(table.total_iterations, sim.num_jobs)[jobs]
    if rule is RemainingTime.NOMINAL:
        nominal: FloatArray = table.iteration_time_s[jobs] * total - table.attained_service_s[jobs]
        return nominal
    ideal: FloatArray = table.iteration_time_s[jobs] * np.maximum(
        total - table.iterations_done[jobs], 0.0)
    return ideal
