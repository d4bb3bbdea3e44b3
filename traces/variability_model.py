"""A generative per-class variability model (core + heavy tail), so any cluster size gets a
realistic profile without resampling the same few hundred measured GPUs.

Per perf class, the log-slowdown ``x = log(perfvar)`` of a GPU is drawn from a two-part mixture:

- **core** (probability ``1 - tail_prob``): Normal(``mu``, ``sigma``) truncated above at the
  threshold ``t = mu + 3 sigma`` (inverse-CDF sampling of the truncated normal);
- **tail** (probability ``tail_prob``): ``t + Exponential(mean = tail_mean)``.

Fit (:func:`fit_class_model`, on the per-GPU medians of a runs table): ``mu`` = median(x),
``sigma`` = 1.4826 x MAD(x) (robust, so the tail does not inflate the core); ``tail_prob`` = share
of GPUs with x > t; ``tail_mean`` = mean of ``x - t`` over them (the exponential's maximum
likelihood estimate; 0 if there are none).

Source: fitted on the TACC Longhorn V100 per-GPU medians (Sinha et al., SC'22) as shipped with
PAL (hal-uw/blox-pal@8a590708 ``aggregated_data/sim``; class A = resnet, B = C = bert,
D = pagerank). Robust location / scale: Rousseeuw & Croux, JASA 1993 (MAD x 1.4826); threshold
excesses: the peaks-over-threshold method with an exponential (GPD shape 0) excess.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

from palgym.errors import ConfigError, ProfileError
from palgym.sim.types import NUM_PERF_CLASSES, FloatArray
from palgym.sim.variability import VariabilityProfile

CORE_SIGMAS: float = 3.0
"""Threshold between core and tail, in robust standard deviations above the median."""
MAD_TO_SIGMA: float = 1.4826
"""MAD -> standard deviation of a normal (1 / Phi^-1(3/4)). Source: Rousseeuw & Croux 1993."""


@dataclass(frozen=True)
class ClassVariabilityModel:
    """Fitted parameters of one perf class (all in log-slowdown units).

    Attributes:
        mu: core location (median of log perfvar).
        sigma: core scale (>= 0).
        tail_prob: probability of a tail GPU, in [0, 1).
        tail_mean: mean excess of a tail GPU above the threshold (>= 0).
        num_gpus: measured GPUs the fit used (documentation).
    """

    mu: float
    sigma: float
    tail_prob: float
    tail_mean: float
    num_gpus: int

    def __post_init__(self) -> None:
        if not (np.isfinite(self.mu) and self.sigma >= 0 and 0 <= self.tail_prob < 1
                and self.tail_mean >= 0):
            raise ConfigError(f"invalid class variability model {self}")

    @property
    def threshold(self) -> float:
        """``t = mu + 3 sigma``: log-slowdown above which a GPU is in the tail."""
        return self.mu + CORE_SIGMAS * self.sigma

    def sample(self, rng: np.random.Generator, num_gpus: int) -> FloatArray:
        """Draw G slowdowns.

        Three uniforms per GPU (tail choice, core position, tail excess), drawn as a (G, 3)
        array, so the first G GPUs of a larger draw with the same generator state are the same.

        Args:
            rng: the variability stream.
            num_gpus: G.

        Returns:
            float64 (G,) slowdowns ``exp(x)`` > 0.
        """
        uniforms = rng.random(size=(num_gpus, 3))
        tail = uniforms[:, 0] < self.tail_prob
        if self.sigma > 0:
            top = ndtr(CORE_SIGMAS)  # truncated normal: u in (0, Phi(3))
            core = self.mu + self.sigma * ndtri(np.clip(uniforms[:, 1] * top, 1e-300, None))
        else:
            core = np.full(num_gpus, self.mu)
        excess = -self.tail_mean * np.log1p(-uniforms[:, 2])
        log_slowdown = np.where(tail, self.threshold + excess, core)
        return np.exp(log_slowdown)


def fit_class_model(gpu_medians: Sequence[float] | FloatArray) -> ClassVariabilityModel:
    """Fit one class on measured per-GPU slowdowns (see the module docstring).

    Args:
        gpu_medians: float64 (U,) per-GPU median normalised runs, > 0, U >= 1.

    Returns:
        The fitted model.

    Raises:
        ProfileError: for no values or a non-positive / non-finite one.
    """
    values = np.asarray(gpu_medians, dtype=np.float64)
    if values.size == 0 or not (np.isfinite(values) & (values > 0)).all():
        raise ProfileError("need at least one finite, positive per-GPU value")
    x = np.log(values)
    mu = float(np.median(x))
    sigma = MAD_TO_SIGMA * float(np.median(np.abs(x - mu)))
    threshold = mu + CORE_SIGMAS * sigma
    excess = x[x > threshold] - threshold
    tail_prob = excess.size / x.size
    return ClassVariabilityModel(mu, sigma, min(tail_prob, 0.5),
                                 float(excess.mean()) if excess.size else 0.0, int(x.size))


LONGHORN_MODEL: tuple[ClassVariabilityModel, ...] = (
    ClassVariabilityModel(0.00241989700533337, 0.02241727656714046,
                          0.044642857142857144, 0.02314983806649571, 336),
    ClassVariabilityModel(-0.00011191561700322475, 0.005452392950195667,
                          0.029411764705882353, 0.018619658723460313, 136),
    ClassVariabilityModel(-0.00011191561700322475, 0.005452392950195667,
                          0.029411764705882353, 0.018619658723460313, 136),
    ClassVariabilityModel(-3.7149010935716884e-05, 0.0008919739481501383,
                          0.023255813953488372, 0.00046036868966207317, 172),
)
"""Classes A..D fitted with :func:`fit_class_model` on the per-GPU medians of resnet (336 GPUs:
15 tail GPUs, threshold slowdown 1.072), bert (136 GPUs, B and C: 4 tail GPUs, threshold 1.016)
and pagerank (172 GPUs: 4 tail GPUs, threshold 1.0026). Source: Longhorn files of the PAL
artifact (``variability/longhorn_pal``), computed once; ``tests/test_traces_variability.py``
re-fits them when the data is available."""


def sample_model_profile(
    num_gpus: int, seed: int = 0,
    model: Sequence[ClassVariabilityModel] = LONGHORN_MODEL, name: str | None = None,
) -> VariabilityProfile:
    """A G-GPU profile drawn from the per-class model, classes independent.

    ``numpy.random.SeedSequence(seed).spawn(4)`` gives one stream per class A..D. B and C are
    drawn independently even though both come from the BERT fit (as PAL draws them).

    Args:
        num_gpus: G >= 1.
        seed: >= 0.
        model: 4 class models (default :data:`LONGHORN_MODEL`).
        name: profile id (default ``model-{G}-seed{seed}``).

    Returns:
        The profile, perfvar float64 (4, G).

    Raises:
        ConfigError: for G < 1, a negative seed or not 4 class models.
    """
    if num_gpus < 1 or seed < 0 or len(model) != NUM_PERF_CLASSES:
        raise ConfigError(f"need num_gpus >= 1, seed >= 0 and {NUM_PERF_CLASSES} class models")
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4)]
    perfvar = np.stack([m.sample(rng, num_gpus) for m, rng in zip(model, streams, strict=True)])
    return VariabilityProfile(name or f"model-{num_gpus}-seed{seed}", perfvar)
