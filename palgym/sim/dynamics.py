"""Dynamic variability: the truth of each GPU's speed changing during an episode.

A static profile gives every GPU one value per perf class for a whole episode. With a
:class:`VariabilityDynamics` in :attr:`palgym.sim.config.SimConfig.dynamics` the engine's truth
(:attr:`palgym.sim.state.Allocation.perfvar`) becomes, for class c and GPU g::

    truth[c, g] = character[c, g] x ((run[g] x throttle[g]) x drift[g])    # this order

- **character**: the profile given to the simulator (e.g. the GPU-median profile of
  ``default``), fixed;
- **run** (``run_variation``): the factor of g's current run while a job holds g, else the
  factor its next run will have (drawn ahead). A run starts on g when, at a commit, g's job
  changes to a job or g's job is restarted on a new GPU set; then the drawn factor becomes
  current and the next one is drawn. A draw is ``run_outlier_ratio`` with probability
  ``run_outlier_prob``, else ``exp(run_sigma x max(z, RUN_Z_FLOOR))``, z standard normal
  (:data:`RUN_Z_FLOOR` = -8: a run is at most ``exp(8 x run_sigma)`` = 1.27x faster than
  its GPU's character at the default sigma, a floor the truth needs for a lower bound on
  JCT, :mod:`palgym.headroom.bound`; z < -8 has probability 6e-16 per draw);
- **throttle** (``throttle``): episodes of ``throttle_rounds`` rounds at ``throttle_factor``;
  a unit (a GPU, or a node with ``throttle_scope="node"``, its GPUs throttled together) that is
  not throttled starts one with probability ``throttle_start_prob`` at each round, the episode
  including that round (:func:`throttle_step`, also the model of ``traces/drift.py``);
- **drift** (``drift``): ``log drift[g]`` is a mean-reverting AR(1) per round, stationary
  standard deviation ``drift_sigma``, correlation ``drift_correlation`` between rounds:
  ``x_{r+1} = rho x_r + sigma sqrt(1 - rho^2) z``, ``x_0 ~ Normal(0, sigma^2)``.

Each part has its own stream, spawned from one ``numpy.random.SeedSequence`` (run, throttle,
drift, in that order), so turning one part on leaves the others' draws unchanged. Draws: the
run stream gives n uniforms then n normals per draw of n factors (GPUs ascending); the throttle
stream one uniform per unit and round; the drift stream G normals at t = 0 and per round.

Source of the run-to-run defaults: the TACC Longhorn ResNet-50 repeated runs shipped with PAL
(``resnet-longhorn-agg.csv``; Sinha et al., SC'22): each run's ratio to its GPU's median run
has a robust log standard deviation (1.4826 x MAD) of 0.0294; 2.14 % of runs are more than 1.2x
their GPU's median, with a median ratio of 2.49 among them; the fastest run is 0.81x its
GPU's median (log ratio -7.2 sigma), above the floor's exp(-8 sigma) = 0.79. Throttling and
drift defaults are assumptions (no measurement of either is bundled); see docs/PAL_MODEL.md,
"Dynamic variability".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

from palgym.errors import ConfigError
from palgym.sim.types import FREE, BoolArray, FloatArray, IntArray

RUN_Z_FLOOR = -8.0
"""The smallest standard normal a run factor's draw uses (module docstring): the truth's
fastest run factor is ``exp(run_sigma x RUN_Z_FLOOR)``."""


class ThrottleScope(str, Enum):
    """Which GPUs a throttling episode slows."""

    GPU = "gpu"
    """One GPU (independent episodes per GPU)."""
    NODE = "node"
    """Every GPU of a node (a node-level cause: cooling, power capping)."""


@dataclass(frozen=True)
class VariabilityDynamics:
    """Options of the dynamic truth (each part off by default; see the module docstring).

    Attributes:
        run_variation: draw a factor per run.
        run_sigma: log standard deviation of a normal run (>= 0).
        run_outlier_prob: probability that a run is an outlier, in [0, 1].
        run_outlier_ratio: an outlier run's factor (> 0).
        throttle: throttling episodes.
        throttle_start_prob: per unit and round, probability an episode starts, in [0, 1].
        throttle_rounds: rounds per episode (>= 1).
        throttle_factor: slowdown while throttled (>= 1).
        throttle_scope: ``"gpu"`` or ``"node"`` (:class:`ThrottleScope`).
        drift: slow drift.
        drift_sigma: stationary log standard deviation of the drift (>= 0).
        drift_correlation: correlation of the log drift between rounds, in [0, 1].
        seed: the process seed when the simulator is given none (>= 0).

    Raises:
        ConfigError: naming the first invalid field.
    """

    run_variation: bool = False
    run_sigma: float = 0.0294
    run_outlier_prob: float = 0.0214
    run_outlier_ratio: float = 2.49
    throttle: bool = False
    throttle_start_prob: float = 0.002
    throttle_rounds: int = 10
    throttle_factor: float = 1.3
    throttle_scope: ThrottleScope = ThrottleScope.GPU
    drift: bool = False
    drift_sigma: float = 0.05
    drift_correlation: float = 0.99
    seed: int = 0

    def __post_init__(self) -> None:
        checks = (
            ("run_sigma", self.run_sigma >= 0),
            ("run_outlier_prob", 0 <= self.run_outlier_prob <= 1),
            ("run_outlier_ratio", self.run_outlier_ratio > 0),
            ("throttle_start_prob", 0 <= self.throttle_start_prob <= 1),
            ("throttle_rounds", self.throttle_rounds >= 1),
            ("throttle_factor", self.throttle_factor >= 1), ("drift_sigma", self.drift_sigma >= 0),
            ("drift_correlation", 0 <= self.drift_correlation <= 1), ("seed", self.seed >= 0),
        )
        for name, ok in checks:
            if not ok:
                raise ConfigError(f"dynamics option {name} out of range: {getattr(self, name)!r}")
        try:
            object.__setattr__(self, "throttle_scope", ThrottleScope(self.throttle_scope))
        except ValueError:
            raise ConfigError(f"throttle_scope must be 'gpu' or 'node', got "
                              f"{self.throttle_scope!r}") from None

    @property
    def active(self) -> bool:
        """True if any part is on (else the truth is the static profile)."""
        return self.run_variation or self.throttle or self.drift

    @property
    def fastest_factor(self) -> float | None:
        """The smallest factor ``(run x throttle) x drift`` the truth can give a GPU (the
        module docstring's model): ``min(1, exp(run_sigma x RUN_Z_FLOOR), run_outlier_ratio
        if outliers occur)`` with run variation, 1 without (a throttle factor is >= 1);
        None with drift on (a sum of normals has no floor), so no bound exists then.
        """
        if self.drift:
            return None
        fastest = 1.0
        if self.run_variation:
            fastest = min(fastest, math.exp(self.run_sigma * RUN_Z_FLOOR))
            if self.run_outlier_prob > 0:
                fastest = min(fastest, self.run_outlier_ratio)
        return fastest


def throttle_step(left: IntArray, uniforms: FloatArray, start_prob: float, rounds: int
                  ) -> BoolArray:
    """One round of throttling episodes, in place on ``left``.

    A unit with no rounds left starts an episode of ``rounds`` rounds if its uniform is below
    ``start_prob``; the round counts as the episode's first.

    Args:
        left: int64 (U,), rounds of the current episode left per unit (updated in place).
        uniforms: float64 (U,), this round's uniforms in [0, 1).
        start_prob: start probability per unit and round.
        rounds: rounds per episode.

    Returns:
        bool (U,): the units throttled in this round.
    """
    starts = (uniforms < start_prob) & (left == 0)
    left[starts] = rounds
    throttled: BoolArray = left > 0
    left[throttled] -= 1
    return throttled


class VariabilityProcess:
    """The dynamic truth of one episode (see the module docstring for the model and draws).

    Args:
        options: the dynamics options (``options.active``).
        character: float64 (C, G), the persistent per-GPU values (not modified).
        node_of_gpu: int64 (G,), node per GPU (contiguous ids from 0).
        seed: a ``SeedSequence`` or an int (None: ``options.seed``).

    Attributes:
        truth: float64 (C, G), the current truth, updated in place by :meth:`refresh`.
        current, pending: float64 (G,), the current run's and the next run's factor.
        throttle, drift: float64 (G,), the current throttle and drift factors.
    """

    def __init__(self, options: VariabilityDynamics, character: FloatArray,
                 node_of_gpu: IntArray, seed: np.random.SeedSequence | int | None = None
                 ) -> None:
        self.options = options
        self.character = np.array(character, dtype=np.float64)
        sequence = (seed if isinstance(seed, np.random.SeedSequence)
                    else np.random.SeedSequence(options.seed if seed is None else seed))
        run, throttle, drift = sequence.spawn(3)
        self._run_rng = np.random.default_rng(run)
        self._throttle_rng = np.random.default_rng(throttle)
        self._drift_rng = np.random.default_rng(drift)
        num_gpus = self.character.shape[1]
        self._node_of_gpu = np.asarray(node_of_gpu, dtype=np.int64)
        self.current = np.ones(num_gpus)
        self.pending = self.draw_runs(num_gpus, self._run_rng)
        units = (int(self._node_of_gpu.max()) + 1 if options.throttle_scope is ThrottleScope.NODE
                 else num_gpus)
        self._throttle_left = np.zeros(units, dtype=np.int64)
        self.throttle = np.ones(num_gpus)
        self._log_drift: FloatArray = np.zeros(num_gpus)
        if options.drift:
            self._log_drift = np.asarray(
                self._drift_rng.standard_normal(num_gpus) * options.drift_sigma, np.float64)
        self.drift = np.exp(self._log_drift)
        self._step_throttle()
        self.truth = self.character.copy()
        self.refresh(np.full(num_gpus, FREE, dtype=np.int64))

    def draw_runs(self, count: int, rng: np.random.Generator) -> FloatArray:
        """float64 (count,) run factors from ``rng`` (all 1.0 without run variation)."""
        options = self.options
        if not options.run_variation:
            return np.ones(count)
        uniforms = rng.random(count)
        normals = rng.standard_normal(count)
        factors: FloatArray = np.where(
            uniforms < options.run_outlier_prob, options.run_outlier_ratio,
            np.exp(options.run_sigma * np.maximum(normals, RUN_Z_FLOOR)))
        return factors

    def start_runs(self, gpus: IntArray) -> None:
        """Runs start on ``gpus`` (int64, ascending): their drawn factors become current."""
        if gpus.size and self.options.run_variation:
            self.current[gpus] = self.pending[gpus]
            self.pending[gpus] = self.draw_runs(gpus.size, self._run_rng)

    def next_round(self) -> bool:
        """Advance throttling and drift to the next round; True if a factor changed (always
        with drift on)."""
        options = self.options
        if options.drift:
            rho, sigma = options.drift_correlation, options.drift_sigma
            innovation = sigma * math.sqrt(1.0 - rho * rho)
            normals = self._drift_rng.standard_normal(self._log_drift.size)
            self._log_drift = self._log_drift * rho + normals * innovation
            self.drift = np.exp(self._log_drift)
        return self._step_throttle() or options.drift

    def _step_throttle(self) -> bool:
        """Draw the next round's throttling; True if some GPU's throttle factor changed."""
        options = self.options
        if not options.throttle:
            return False
        uniforms = self._throttle_rng.random(self._throttle_left.size)
        throttled = throttle_step(self._throttle_left, uniforms, options.throttle_start_prob,
                                  options.throttle_rounds)
        if options.throttle_scope is ThrottleScope.NODE:
            throttled = throttled[self._node_of_gpu]
        throttle = np.where(throttled, options.throttle_factor, 1.0)
        changed = not np.array_equal(throttle, self.throttle)
        self.throttle = throttle
        return changed

    def gpu_factor(self, run: FloatArray) -> FloatArray:
        """float64 (G,): ``(run x throttle) x drift`` for the run factors ``run``."""
        factor: FloatArray = (run * self.throttle) * self.drift
        return factor

    def refresh(self, job_of_gpu: IntArray) -> None:
        """Recompute :attr:`truth` in place: busy GPUs show their current run, free GPUs the
        next one (``job_of_gpu`` int64 (G,))."""
        run = np.where(job_of_gpu != FREE, self.current, self.pending)
        np.multiply(self.character, self.gpu_factor(run)[np.newaxis, :], out=self.truth)

    def profiling_run(self, rng: np.random.Generator) -> FloatArray:
        """float64 (C, G): one profiling run per GPU now, independent of the episode's runs
        (its run factor drawn from ``rng``): ``character x ((run x throttle) x drift)``."""
        values: FloatArray = self.character * self.gpu_factor(
            self.draw_runs(self.character.shape[1], rng))[np.newaxis, :]
        return values
