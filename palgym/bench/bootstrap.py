"""Bootstrap percentile intervals for a handful of runs: stratified and cluster resampling.

- :func:`stratified_bootstrap` / :func:`stratified_bootstraps`: resampling **within each
  stratum** with replacement (rliable ``StratifiedBootstrap``: runs are resampled within each
  task, never across tasks).
- :func:`cluster_bootstraps`: resampling **whole clusters** (a trace with all its seeds), the
  interval the leaderboard shows: it speaks of other traces like the suite's.

Source: R. Agarwal et al., "Deep Reinforcement Learning at the Edge of the Statistical
Precipice", NeurIPS 2021, section 4.1, and rliable (``library.py``); B. Efron, R. J.
Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 13 (the percentile interval);
A. C. Davison, D. V. Hinkley, *Bootstrap Methods and their Application*, 1997, section 3.8
(resampling clusters). Quantiles: numpy's default (linear).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from palgym.errors import ConfigError

DEFAULT_CONFIDENCE = 0.95
"""Nominal coverage of the intervals."""

DEFAULT_RESAMPLES = 10_000
"""Bootstrap resamples of an interval (as ``evaluate.py``'s; rliable's
``get_interval_estimates`` defaults to 50,000: pass ``num_resamples`` for more)."""

DEFAULT_SEED = 0
"""Seed of the resampling generator (``numpy.random.default_rng``)."""

CHUNK_VALUES = 1 << 20
"""Resamples are drawn in chunks of ``max(1, CHUNK_VALUES // n)`` rows (bounded memory)."""

Statistic = Callable[[np.ndarray], np.ndarray]
"""A statistic of many samples at once: float64 (B, n) -> float64 (B,) or (B, k)."""


@dataclass(frozen=True)
class Interval:
    """A statistic with its stratified bootstrap percentile interval.

    Attributes:
        point: float64 (k,) the statistic of the data (k = 1 for a scalar statistic).
        low: float64 (k,) lower bounds; NaN when no stratum has two scores (no interval).
        high: float64 (k,) upper bounds; NaN likewise.
        confidence: nominal coverage, e.g. 0.95.
        num_resamples: B.
    """

    point: np.ndarray
    low: np.ndarray
    high: np.ndarray
    confidence: float
    num_resamples: int

    @property
    def has_interval(self) -> bool:
        """False when every stratum holds one score: every resample is the data itself."""
        return not bool(np.isnan(self.low).all())

    def scalar(self) -> tuple[float, float, float]:
        """(point, low, high) of a scalar statistic."""
        return float(self.point[0]), float(self.low[0]), float(self.high[0])


def strata_positions(strata: Sequence[object] | np.ndarray) -> list[np.ndarray]:
    """Positions (int64 arrays) of each stratum, strata in ascending order of their label."""
    labels = np.asarray(strata)
    if labels.ndim != 1:
        raise ConfigError(f"strata: need one label per score, got shape {labels.shape}")
    _, codes = np.unique(labels, return_inverse=True)
    return [np.flatnonzero(codes == code) for code in range(int(codes.max(initial=-1)) + 1)]


def stratified_indices(groups: list[np.ndarray], n: int, num_resamples: int,
                       rng: np.random.Generator) -> np.ndarray:
    """One chunk of resampled positions: int64 (num_resamples, n).

    Column j of a resample holds a position drawn uniformly with replacement from j's stratum:
    for each stratum in ``groups`` order with positions ``p`` (size m), the draw is
    ``p[rng.integers(0, m, size=(num_resamples, m))]`` into columns ``p``.
    """
    indices = np.empty((num_resamples, n), dtype=np.int64)
    for positions in groups:
        indices[:, positions] = positions[rng.integers(0, positions.size,
                                                       size=(num_resamples, positions.size))]
    return indices


def stratified_bootstrap(
    values: ArrayLike,
    strata: Sequence[object] | np.ndarray,
    statistic: Statistic,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    num_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Interval:
    """Percentile interval of ``statistic`` by the stratified bootstrap.

    Each resample replaces every score by one drawn with replacement from its own stratum
    (the stratum sizes are kept). ``rng = numpy.random.default_rng(seed)``; the resamples are
    drawn in chunks of ``max(1, CHUNK_VALUES // n)`` rows, each chunk by
    :func:`stratified_indices` with the strata in ascending label order. The bounds are the
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles (numpy linear) of the B
    resampled statistics.

    Args:
        values: float64 (n,) scores, no NaN (+inf, a failed run, only with a statistic that
            stays finite on it, e.g. a profile).
        strata: n labels (e.g. the trace of each episode).
        statistic: float64 (B, n) -> (B,) or (B, k), e.g. :func:`geometric_mean_rows`; it
            must not depend on the order of the n scores.
        confidence: nominal coverage in (0, 1).
        num_resamples: B >= 1.
        seed: equal seeds give equal intervals bit for bit.

    Returns:
        The interval; ``low`` and ``high`` NaN when every stratum has a single score.

    Raises:
        ConfigError: for no value, a NaN, strata of another length, confidence outside (0, 1)
            or ``num_resamples < 1``.

    Source: Agarwal et al. (2021), section 4.1; rliable ``library.StratifiedBootstrap`` and
    ``get_interval_estimates(method="percentile")``; Efron & Tibshirani (1993), ch. 13.
    """
    data = np.asarray(values, dtype=np.float64)
    if data.ndim != 1:
        raise ConfigError(f"bootstrap: need a 1-D array of scores, got shape {data.shape}")
    return stratified_bootstraps(data[None, :], strata, statistic, confidence=confidence,
                                 num_resamples=num_resamples, seed=seed)[0]


def stratified_bootstraps(
    vectors: ArrayLike,
    strata: Sequence[object] | np.ndarray,
    statistic: Statistic,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    num_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> list[Interval]:
    """:func:`stratified_bootstrap` of m score vectors on the same n episodes, every vector
    resampled with the same positions (drawn once): vector j's interval equals
    ``stratified_bootstrap(vectors[j], strata, statistic, ...)`` bit for bit.

    Args:
        vectors: float64 (m, n) scores, m >= 1, n >= 1, no NaN.
        strata, statistic, confidence, num_resamples, seed: as :func:`stratified_bootstrap`.

    Returns:
        m intervals, in the order of ``vectors``.

    Raises:
        ConfigError: as :func:`stratified_bootstrap`.
    """
    data = checked_scores(vectors, strata, confidence, num_resamples)
    groups = strata_positions(strata)
    if max(group.size for group in groups) < 2:
        return no_intervals(data, statistic, confidence, num_resamples)
    return percentile_intervals(
        data, statistic, lambda rng, rows: stratified_indices(groups, data.shape[1], rows, rng),
        confidence, num_resamples, seed)


def cluster_bootstraps(
    vectors: ArrayLike,
    clusters: Sequence[object] | np.ndarray,
    statistic: Statistic,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    num_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> list[Interval]:
    """Percentile intervals by resampling whole clusters (e.g. traces, each with all its seeds).

    Each resample draws C clusters with replacement out of the C clusters (labels in ascending
    order) and takes every score of each drawn cluster, so it holds n scores again; every
    vector is resampled with the same draws. ``rng = numpy.random.default_rng(seed)``; chunk i
    of ``max(1, CHUNK_VALUES // n)`` resamples draws ``rng.integers(0, C, size=(rows, C))``.
    This is the cluster (block) bootstrap (Davison & Hinkley 1997, section 3.8; rliable's
    ``task_bootstrap=True`` with one stratum): the interval speaks of other clusters like
    these, not only of other seeds on the same ones.

    Args:
        vectors: float64 (m, n) scores, no NaN.
        clusters: n labels; every cluster must hold the same number of scores (a suite runs
            every trace with the same seeds).
        statistic, confidence, num_resamples, seed: as :func:`stratified_bootstrap`.

    Returns:
        m intervals; ``low`` and ``high`` NaN when there is a single cluster.

    Raises:
        ConfigError: as :func:`stratified_bootstraps`, and for clusters of unequal sizes.
    """
    data = checked_scores(vectors, clusters, confidence, num_resamples)
    groups = strata_positions(clusters)
    if len({group.size for group in groups}) != 1:
        raise ConfigError(f"bootstrap: clusters of unequal sizes "
                          f"{sorted({group.size for group in groups})}")
    if len(groups) < 2:
        return no_intervals(data, statistic, confidence, num_resamples)
    table = np.vstack(groups)

    def draw(rng: np.random.Generator, rows: int) -> np.ndarray:
        picked: np.ndarray = table[rng.integers(0, len(groups), size=(rows, len(groups)))]
        return picked.reshape(rows, data.shape[1])

    return percentile_intervals(data, statistic, draw, confidence, num_resamples, seed)


def checked_scores(vectors: ArrayLike, labels: Sequence[object] | np.ndarray,
                   confidence: float, num_resamples: int) -> np.ndarray:
    """``vectors`` as float64 (m, n), checked as the bootstraps require.

    Raises:
        ConfigError: for an empty or non-2-D array, a NaN, ``labels`` of another length than n,
            ``confidence`` outside (0, 1) or ``num_resamples < 1``.
    """
    data = np.asarray(vectors, dtype=np.float64)
    if data.ndim != 2 or data.size == 0 or np.isnan(data).any():
        raise ConfigError(f"bootstrap: need a non-empty (m, n) array of scores (no NaN), got "
                          f"shape {data.shape}")
    if len(labels) != data.shape[1]:
        raise ConfigError(f"bootstrap: {len(labels)} labels for {data.shape[1]} scores")
    check_settings(confidence, num_resamples)
    return data


def check_settings(confidence: float, num_resamples: int) -> None:
    """Refuse a ``confidence`` outside (0, 1) or ``num_resamples < 1`` (ConfigError)."""
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be in (0, 1), got {confidence}")
    if num_resamples < 1:
        raise ConfigError(f"num_resamples must be >= 1, got {num_resamples}")


def no_intervals(data: np.ndarray, statistic: Statistic, confidence: float,
                 num_resamples: int) -> list[Interval]:
    """The statistic of each row with NaN bounds (nothing to resample)."""
    points = [np.atleast_1d(statistic(row[None, :])[0]).astype(np.float64) for row in data]
    return [Interval(p, np.full_like(p, math.nan), np.full_like(p, math.nan), confidence,
                     num_resamples) for p in points]


def percentile_intervals(
    data: np.ndarray, statistic: Statistic,
    draw: Callable[[np.random.Generator, int], np.ndarray],
    confidence: float, num_resamples: int, seed: int,
) -> list[Interval]:
    """Percentile intervals of each row of ``data`` (m, n) over ``num_resamples`` resamples.

    ``draw(rng, rows)`` gives int64 (rows, n) positions; every row of ``data`` is resampled
    with the same positions (:func:`resampled_statistics`). The bounds are those of
    :func:`percentile_bounds`.
    """
    points = [np.atleast_1d(statistic(row[None, :])[0]).astype(np.float64) for row in data]
    resampled = resampled_statistics(
        [_of_row(statistic, row) for row in data],
        [p.size for p in points], data.shape[1], draw, num_resamples, seed)
    return [Interval(point, *percentile_bounds(out, confidence), confidence, num_resamples)
            for point, out in zip(points, resampled, strict=True)]


def _of_row(statistic: Statistic, row: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """``statistic`` of ``row`` resampled at given positions."""
    return lambda indices: statistic(row[indices])


def resampled_statistics(
    statistics: Sequence[Callable[[np.ndarray], np.ndarray]], widths: Sequence[int], n: int,
    draw: Callable[[np.random.Generator, int], np.ndarray], num_resamples: int, seed: int,
) -> list[np.ndarray]:
    """Each statistic of ``num_resamples`` resamples, all drawn with the same positions.

    The resamples are drawn in chunks of ``max(1, CHUNK_VALUES // n)`` rows from
    ``numpy.random.default_rng(seed)``: ``draw(rng, rows)`` gives int64 (rows, n) positions,
    and ``statistics[j]`` maps them to float64 (rows,) or (rows, widths[j]).

    Returns:
        float64 (num_resamples, widths[j]) per statistic.
    """
    rng = np.random.default_rng(seed)
    chunk = max(1, CHUNK_VALUES // n)
    resampled = [np.empty((num_resamples, width), dtype=np.float64) for width in widths]
    for start in range(0, num_resamples, chunk):
        stop = min(start + chunk, num_resamples)
        indices = draw(rng, stop - start)
        for statistic, out in zip(statistics, resampled, strict=True):
            out[start:stop] = statistic(indices).reshape(stop - start, out.shape[1])
    return resampled


def percentile_bounds(resampled: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles (numpy linear) of
    resampled statistics, float64 (B, k) -> two float64 (k,) (Efron & Tibshirani 1993, ch. 13:
    the percentile interval)."""
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(resampled, [tail, 1.0 - tail], axis=0)
    return low, high
