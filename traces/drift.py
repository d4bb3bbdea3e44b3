"""Profile drift: per-round variation of a static profile, as a stand-alone series.

The simulator's own dynamic truth is :mod:`palgym.sim.dynamics` (``SimConfig.dynamics``, preset
``dynamic``), which this module shares its throttling model with
(:func:`palgym.sim.dynamics.throttle_step`). Differences: here the noise is drawn per *round*
(one lognormal factor per GPU and round) and the default throttling parameters are the run
outlier statistics below read per round; the engine draws the noise and the outliers per *run*
(where they were measured: each job start on a GPU) and gives throttling its own parameters.

Round r's values are ``perfvar_r[c, g] = perfvar[c, g] x exp(noise_sigma x z[r, g]) x
(throttle_factor if GPU g is throttled in round r else 1)``:

- **noise**: one standard normal z per GPU and round, shared by the four classes (a GPU that is
  slower this round is slower for every job), independent across rounds;
- **throttling episodes**: a GPU that is not throttled starts an episode with probability
  ``throttle_start_prob`` per round; an episode lasts ``throttle_rounds`` rounds, starting with
  the round it is drawn in.

Draws per round: G normals then G uniforms from one ``numpy.random.Generator``, so a run is
reproducible bit for bit from its seed and round count.

Source of the defaults: the TACC Longhorn ResNet-50 repeated runs shipped with PAL
(``resnet-longhorn-agg.csv``; Sinha et al., SC'22): each run's ratio to its GPU's median run has
a robust log standard deviation (1.4826 x MAD) of 0.0294; 2.14 % of runs are more than 1.2x
their GPU's median, with a median ratio of 2.49 among them (computed once with pandas).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from palgym.errors import ConfigError
from palgym.sim.dynamics import throttle_step
from palgym.sim.types import FloatArray
from palgym.sim.variability import VariabilityProfile


@dataclass(frozen=True)
class DriftParams:
    """Parameters of the drift process.

    Attributes:
        noise_sigma: log-standard deviation of the per-round multiplicative noise (>= 0).
        throttle_start_prob: per GPU and round, probability that an episode starts, in [0, 1].
        throttle_factor: slowdown multiplier while throttled (>= 1).
        throttle_rounds: rounds per episode (>= 1).
    """

    noise_sigma: float = 0.0294
    throttle_start_prob: float = 0.0214
    throttle_factor: float = 2.49
    throttle_rounds: int = 1

    def __post_init__(self) -> None:
        if not (self.noise_sigma >= 0 and 0 <= self.throttle_start_prob <= 1
                and self.throttle_factor >= 1 and self.throttle_rounds >= 1):
            raise ConfigError(f"invalid drift parameters {self}")


class ProfileDrift:
    """The drift process around a base profile, advanced one round at a time.

    Args:
        base: the static profile (perfvar (4, G)).
        params: the drift parameters.
        seed: ``numpy.random.default_rng(seed)`` (>= 0).

    Raises:
        ConfigError: for a negative seed.
    """

    def __init__(self, base: VariabilityProfile, params: DriftParams = DriftParams(),
                 seed: int = 0) -> None:
        if seed < 0:
            raise ConfigError(f"seed must be >= 0, got {seed}")
        self.base = base
        self.params = params
        self._rng = np.random.default_rng(seed)
        self._throttle_left = np.zeros(base.num_gpus, dtype=np.int64)

    def next_round(self) -> FloatArray:
        """The next round's values.

        Returns:
            float64 (4, G) fresh array, all > 0.
        """
        num_gpus = self.base.num_gpus
        noise = np.exp(self.params.noise_sigma * self._rng.standard_normal(num_gpus))
        throttled = throttle_step(self._throttle_left, self._rng.random(num_gpus),
                                  self.params.throttle_start_prob, self.params.throttle_rounds)
        factor = np.where(throttled, self.params.throttle_factor, 1.0) * noise
        values: FloatArray = self.base.perfvar * factor[np.newaxis, :]
        return values


def drift_rounds(base: VariabilityProfile, num_rounds: int, params: DriftParams = DriftParams(),
                 seed: int = 0) -> FloatArray:
    """``num_rounds`` rounds of :class:`ProfileDrift` stacked.

    Returns:
        float64 (R, 4, G).

    Raises:
        ConfigError: for ``num_rounds`` < 1 or a negative seed.
    """
    if num_rounds < 1:
        raise ConfigError(f"num_rounds must be >= 1, got {num_rounds}")
    drift = ProfileDrift(base, params, seed)
    return np.stack([drift.next_round() for _ in range(num_rounds)])
