"""Inverse-CDF maps from uniforms to the generators' values.

A generator draws its uniforms from its own streams (:mod:`traces.generate`,
:mod:`traces.synthetic`, :mod:`traces.wide_groups`) and maps them here, so every sampler of a
value uses the same rule: a weighted categorical, a piecewise log-linear quantile function, and
the Sia-Philly-like model and duration of a job given its GPU count.
"""

from __future__ import annotations

import numpy as np

from palgym.sim.types import FloatArray, IntArray
from traces.sia_philly_fit import SiaPhillyParams


def categorical(uniforms: FloatArray, weights: FloatArray) -> IntArray:
    """Indices i with cdf[i-1] <= u < cdf[i] (inverse CDF of a weighted categorical).

    Args:
        uniforms: float64 (J,) values in [0, 1).
        weights: float64 (K,) weights >= 0, positive sum.

    Returns:
        int64 (J,) indices in [0, K).
    """
    cdf = np.cumsum(weights) / weights.sum()
    picks = np.searchsorted(cdf, uniforms, side="right")
    clipped: IntArray = np.minimum(picks, weights.shape[0] - 1).astype(np.int64)
    return clipped


def quantile_function(
    uniforms: FloatArray, quantiles: tuple[tuple[float, float], ...]
) -> FloatArray:
    """A piecewise log-linear quantile function, rounded to whole iterations.

    ``log Q(u)`` is linear in ``u`` between consecutive knots; values are rounded to whole
    iterations and clipped to [first knot, last knot] (the public minimum and maximum).

    Args:
        uniforms: float64 (J,) values in [0, 1].
        quantiles: (probability, iterations) knots from 0.0 to 1.0.

    Returns:
        float64 (J,) whole iteration counts.
    """
    probs = np.array([p for p, _ in quantiles], dtype=np.float64)
    log_values = np.log(np.array([v for _, v in quantiles], dtype=np.float64))
    durations = np.rint(np.exp(np.interp(uniforms, probs, log_values)))
    low = max(1.0, float(np.ceil(quantiles[0][1])))
    clipped: FloatArray = np.clip(durations, low, float(np.floor(quantiles[-1][1])))
    return clipped


def models_at(uniforms: FloatArray, num_gpus: IntArray, params: SiaPhillyParams
              ) -> tuple[str, ...]:
    """Model names at ``uniforms``, given each job's GPU count (or from the model marginal).

    Args:
        uniforms: float64 (J,) values in [0, 1), one per job.
        num_gpus: int64 (J,) GPU counts of the jobs (each in ``params.model_gpu_counts`` when
            ``params.model_given_gpus``).
        params: gives ``model_gpu_counts`` and ``model_given_gpus``.

    Returns:
        J model names.

    Source: model x GPU-count table of PAL artifact workload-1..5.csv
    (:data:`traces.sia_philly_fit.SIA_PHILLY_MODEL_GPU_COUNTS`).
    """
    num_jobs = int(num_gpus.shape[0])
    names = list(dict.fromkeys(m for m, _, _ in params.model_gpu_counts))
    if not params.model_given_gpus:
        weights = np.array(
            [sum(w for m, _, w in params.model_gpu_counts if m == name) for name in names],
            dtype=np.float64,
        )
        return tuple(names[i] for i in categorical(uniforms, weights).tolist())
    chosen = np.empty(num_jobs, dtype=np.int64)
    for gpus in np.unique(num_gpus).tolist():
        rows = [(names.index(m), w) for m, g, w in params.model_gpu_counts if g == gpus]
        here = num_gpus == gpus
        picks = categorical(uniforms[here], np.array([w for _, w in rows], dtype=np.float64))
        chosen[here] = np.array([i for i, _ in rows], dtype=np.int64)[picks]
    return tuple(names[i] for i in chosen.tolist())


def durations_at(
    uniforms: FloatArray, model: tuple[str, ...], num_gpus: IntArray, params: SiaPhillyParams,
) -> FloatArray:
    """Durations ``Q(u)`` of each job's duration group (or of the pooled quantile function).

    A job of model ``m`` with ``g`` GPUs uses the fit of ``m`` with the largest ``min_gpus``
    <= ``g`` (:class:`traces.sia_philly_fit.DurationFit`); with
    ``params.duration_given_model`` False, every job uses ``params.duration_quantiles``.

    Args:
        uniforms: float64 (J,) quantile levels in [0, 1], one per job.
        model: J model names (each with a ``min_gpus`` 1 fit).
        num_gpus: int64 (J,) GPU counts.
        params: gives ``model_durations``, ``duration_quantiles`` and ``duration_given_model``.

    Returns:
        float64 (J,) whole iteration counts, each within its quantile function's [min, max].
    """
    if not params.duration_given_model:
        return quantile_function(uniforms, params.duration_quantiles)
    durations = np.empty_like(uniforms)
    group = np.full(uniforms.shape, -1, dtype=np.int64)
    models = np.array(model, dtype=object)
    for index, fit in sorted(
        enumerate(params.model_durations), key=lambda item: item[1].min_gpus
    ):
        # Ascending min_gpus: a later (larger) threshold overrides an earlier one.
        group[(models == fit.model) & (num_gpus >= fit.min_gpus)] = index
    for index in np.unique(group).tolist():
        here = group == index
        durations[here] = quantile_function(
            uniforms[here], params.model_durations[index].quantiles
        )
    return durations
