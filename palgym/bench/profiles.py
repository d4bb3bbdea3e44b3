"""Performance profiles of lower-is-better scores: the fraction of scores ``<= tau`` for each
threshold tau of a grid, with bootstrap bands over whole traces
(:func:`palgym.bench.stats.cluster_bootstraps`).

This is a score distribution in the words of Agarwal et al. (rliable
``create_performance_profile``, there the fraction ``> tau`` of higher-is-better scores); for
ratios to the best it is the performance profile of Dolan and More. A failed run scores +inf
and is never at or below a threshold.

Source: R. Agarwal et al., "Deep Reinforcement Learning at the Edge of the Statistical
Precipice", NeurIPS 2021, section 4.2; E. D. Dolan, J. J. More, "Benchmarking optimization
software with performance profiles", Mathematical Programming 91, 2002.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from palgym.bench import stats
from palgym.errors import ConfigError

DEFAULT_PROFILE_RESAMPLES = 2_000
"""Bootstrap resamples of a profile's band (rliable's default for profiles)."""


def profile_rows(samples: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """Fraction of each row's scores ``<= tau``: float64 (B, n), (T,) ascending -> (B, T).

    Each score's first threshold at or above it, ``searchsorted(taus, x, "left")``, is
    counted in a per-row histogram whose running sum is the count at each tau (no per-row
    loop; +inf lands past the last tau).
    """
    rows, size = samples.shape
    slots = taus.size + 1
    first = np.searchsorted(taus, samples, side="left")
    flat = (first + slots * np.arange(rows)[:, None]).ravel()
    counts = np.bincount(flat, minlength=rows * slots).reshape(rows, slots)
    result: np.ndarray = np.cumsum(counts, axis=1)[:, :-1] / size
    return result


def checked_grid(taus: ArrayLike) -> np.ndarray:
    """float64 (T,) finite, non-decreasing thresholds, T >= 1.

    Raises:
        ConfigError: otherwise.
    """
    grid = np.asarray(taus, dtype=np.float64)
    if grid.ndim != 1 or grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(
            np.diff(grid) < 0):
        raise ConfigError("performance profile: need a non-empty ascending 1-D grid of finite "
                          "thresholds")
    return grid


def performance_profile(values: ArrayLike, taus: ArrayLike) -> np.ndarray:
    """Fraction of the scores ``<= tau`` for each tau (lower-is-better scores).

    Args:
        values: float64 (n,) scores, e.g. every episode's ratio to the best; no NaN (+inf, a
            failed run, is never at or below a threshold).
        taus: float64 (T,) finite thresholds in ascending order.

    Returns:
        float64 (T,) fractions in [0, 1], non-decreasing in tau.

    Raises:
        ConfigError: for no score, a NaN score, or thresholds that are not finite and
            ascending.
    """
    data = np.asarray(values, dtype=np.float64)
    grid = checked_grid(taus)
    if data.ndim != 1 or data.size == 0 or np.isnan(data).any():
        raise ConfigError("performance profile: need non-empty 1-D scores (no NaN)")
    result: np.ndarray = profile_rows(data[None, :], grid)[0]
    return result


def profile_bands(vectors: ArrayLike, strata: Sequence[object] | np.ndarray, taus: ArrayLike, *,
                  confidence: float = stats.DEFAULT_CONFIDENCE,
                  num_resamples: int = DEFAULT_PROFILE_RESAMPLES,
                  seed: int = stats.DEFAULT_SEED) -> list[stats.Interval]:
    """:func:`performance_profile` of m score vectors on the same episodes, each with a
    bootstrap band at every tau (k = T) that resamples whole clusters (traces, each with all
    its seeds), the vectors resampled alike (:func:`palgym.bench.stats.cluster_bootstraps`).

    Args:
        vectors: float64 (m, n) scores, no NaN.
        strata: n cluster labels (the trace of each episode; equal cluster sizes).
        taus: float64 (T,) finite thresholds in ascending order.
        confidence, num_resamples, seed: as :func:`palgym.bench.stats.cluster_bootstraps`.

    Raises:
        ConfigError: see :func:`performance_profile` and
            :func:`palgym.bench.stats.cluster_bootstraps`.
    """
    grid = checked_grid(taus)
    return stats.cluster_bootstraps(vectors, strata, lambda rows: profile_rows(rows, grid),
                                    confidence=confidence, num_resamples=num_resamples,
                                    seed=seed)
