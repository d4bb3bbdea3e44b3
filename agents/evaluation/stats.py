"""Paired comparison statistics: per-episode ratios, their geometric mean and a percentile
bootstrap confidence interval.

Every policy runs on the same episodes, so policy P and reference R are compared episode by
episode: ``ratio_i = avgJCT(P, episode i) / avgJCT(R, episode i)`` (< 1: P is faster). The
summary is the geometric mean of the ratios (PAL, SC24, Figure 10 reports
``1 - geomean``), with a percentile bootstrap interval over episodes: resample the n episodes
with replacement B times, take the geomean of each resample, and report the
``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of those B geomeans.
Resampling whole episodes keeps the pairing.

Episodes of one trace under different seeds are not independent (for a deterministic policy
on a fixed profile they may even be replicas), so ``groups`` (e.g. the trace of each episode)
switches to the cluster bootstrap: resample whole groups with replacement and take the geomean
over all episodes of the resampled groups. With a single resampling unit (one episode, or one
group) there is no interval: every resample is the data itself, so its zero width would say
nothing about variation; ``ci_low`` and ``ci_high`` are NaN then.

Source: B. Efron and R. J. Tibshirani, *An Introduction to the Bootstrap*, Chapman & Hall,
1993, chapter 13 (the percentile interval); A. C. Davison and D. V. Hinkley, *Bootstrap
Methods and their Application*, Cambridge University Press, 1997, section 3.8 (resampling
clusters of hierarchical data). Quantiles with numpy's default (linear) interpolation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agents.evaluation.defaults import (
    DEFAULT_BOOTSTRAP_SEED,
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
)
from palgym.errors import ConfigError

_CHUNK_VALUES = 1 << 20
"""Resamples are drawn in chunks of about this many indices (bounded memory)."""


@dataclass(frozen=True)
class RatioSummary:
    """Geomean of paired ratios with its bootstrap interval.

    Attributes:
        geomean: exp(mean(log ratio)) over the episodes.
        ci_low: lower bound of the percentile bootstrap interval.
        ci_high: upper bound.
        confidence: the interval's nominal coverage (e.g. 0.95).
        num_episodes: n, the number of paired episodes.
        num_units: resampling units (episodes, or groups); below 2 the interval is NaN.
    """

    geomean: float
    ci_low: float
    ci_high: float
    confidence: float
    num_episodes: int
    num_units: int = 0

    @property
    def has_interval(self) -> bool:
        """True when the interval exists (at least 2 resampling units)."""
        return self.num_units >= 2


def paired_ratios(values: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """``values / reference`` episode by episode.

    Args:
        values: float64 (n,), e.g. avg JCT (s) of a policy per episode.
        reference: float64 (n,), the reference policy's on the same episodes.

    Returns:
        float64 (n,) ratios.

    Raises:
        ConfigError: for different lengths, no episode, or a value that is not finite and > 0.
    """
    values = np.asarray(values, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    if values.shape != reference.shape or values.ndim != 1 or values.size == 0:
        raise ConfigError(f"paired ratios need two equal-length 1-D arrays, got shapes "
                          f"{values.shape} and {reference.shape}")
    for name, array in (("values", values), ("reference", reference)):
        if not np.all(np.isfinite(array) & (array > 0)):
            raise ConfigError(f"paired ratios: every {name} entry must be finite and > 0")
    ratios: np.ndarray = values / reference
    return ratios


def bootstrap_geomean(
    ratios: np.ndarray,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    num_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_BOOTSTRAP_SEED,
    groups: Sequence[str] | None = None,
) -> RatioSummary:
    """Geomean of ``ratios`` with a percentile bootstrap interval (see module docstring).

    Args:
        ratios: float64 (n,), positive finite paired ratios.
        groups: n group labels (e.g. trace names): resample whole groups (cluster bootstrap);
            None resamples episodes.
        confidence: nominal coverage in (0, 1).
        num_resamples: B >= 1 bootstrap resamples.
        seed: seed of the resampling generator (``np.random.default_rng``); equal seeds give
            equal intervals bit for bit.

    Returns:
        The summary. Constant ratios give ``ci_low == ci_high == geomean``; a single episode
        or group gives ``ci_low`` and ``ci_high`` NaN (no interval).

    Raises:
        ConfigError: for no ratio, a non-positive or non-finite ratio, ``confidence`` outside
            (0, 1), ``num_resamples < 1`` or ``groups`` of another length.

    Source: Efron & Tibshirani (1993), ch. 13, percentile interval; Davison & Hinkley (1997),
    section 3.8, cluster resampling.
    """
    logs = _log_ratios(ratios)
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be in (0, 1), got {confidence}")
    if num_resamples < 1:
        raise ConfigError(f"num_resamples must be >= 1, got {num_resamples}")
    sums, counts = _group_sums(logs, groups)
    if sums.size < 2:
        return RatioSummary(geomean=float(np.exp(logs.mean())), ci_low=math.nan,
                            ci_high=math.nan, confidence=confidence, num_episodes=logs.size,
                            num_units=int(sums.size))
    rng = np.random.default_rng(seed)
    size = sums.size
    chunk = max(1, _CHUNK_VALUES // size)
    means = np.empty(num_resamples, dtype=np.float64)
    for start in range(0, num_resamples, chunk):
        stop = min(start + chunk, num_resamples)
        indices = rng.integers(0, size, size=(stop - start, size))
        means[start:stop] = sums[indices].sum(axis=1) / counts[indices].sum(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.exp(np.quantile(means, [tail, 1.0 - tail]))
    return RatioSummary(geomean=float(np.exp(logs.mean())), ci_low=float(low),
                        ci_high=float(high), confidence=confidence, num_episodes=logs.size,
                        num_units=int(size))


def _group_sums(logs: np.ndarray, groups: Sequence[str] | None) -> tuple[np.ndarray, np.ndarray]:
    """Per resampling unit: the sum of its log ratios and its episode count (float64 (U,))."""
    if groups is None:
        return logs, np.ones_like(logs)
    if len(groups) != logs.size:
        raise ConfigError(f"groups has {len(groups)} labels for {logs.size} ratios")
    labels = list(dict.fromkeys(groups))
    index = np.array([labels.index(g) for g in groups])
    sums = np.bincount(index, weights=logs, minlength=len(labels))
    counts = np.bincount(index, minlength=len(labels)).astype(np.float64)
    return sums, counts


def _log_ratios(ratios: np.ndarray) -> np.ndarray:
    values = np.asarray(ratios, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ConfigError(f"need a non-empty 1-D array of ratios, got shape {values.shape}")
    if not np.all(np.isfinite(values) & (values > 0)):
        raise ConfigError("every ratio must be finite and > 0")
    return np.log(values)
