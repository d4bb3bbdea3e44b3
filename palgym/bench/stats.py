"""Aggregate statistics for a handful of runs: the method of Agarwal et al. (rliable).

Every score here is **lower-is-better** unless told otherwise: a per-episode ratio of average
JCTs (an entry's over a reference's on the same episode; < 1: the entry is faster).

- :func:`geometric_mean` of positive scores, ``exp(mean(log x))``.
- :func:`interquartile_mean` (IQM): the mean of the middle 50% of the scores, **with
  fractional weighting at the edges**: the sorted scores are read as the empirical quantile
  function and IQM is its mean over the probability range [0.25, 0.75], so a score straddling
  the 25th or 75th percentile counts for the fraction of it that lies inside. For n divisible
  by 4 this trims n/4 whole scores from each end and equals ``scipy.stats.trim_mean(x, 0.25)``,
  which rliable's ``metrics.aggregate_iqm`` calls; for other n, scipy trims
  ``floor(0.25 n)`` whole scores from each end (the mean of more than the middle half), we do
  not. Example (n = 6): weights 0.5, 1, 1, 0.5 on the 2nd to 5th smallest, divided by 3.
- :func:`stratified_bootstrap`: percentile confidence intervals of any of these statistics,
  resampling **within each stratum** with replacement (rliable ``StratifiedBootstrap``: runs
  are resampled within each task, never across tasks).
- :func:`probability_of_improvement`: per stratum (task), over every pair (run of X, run of
  Y), P(X better than Y) + 0.5 P(X = Y), averaged over the strata (rliable
  ``metrics.probability_of_improvement``, which computes the Mann-Whitney U statistic over
  ``n_x n_y``). Here better means **lower** (``better="lower"``, the default); rliable's
  scores are higher-is-better (``better="higher"``).
- performance profiles: :mod:`palgym.bench.profiles`.

Source: R. Agarwal, M. Schwarzer, P. S. Castro, A. Courville, M. G. Bellemare, "Deep
Reinforcement Learning at the Edge of the Statistical Precipice", NeurIPS 2021, sections 4.1-4.3
(stratified bootstrap CIs, performance profiles, IQM, probability of improvement), and its
library rliable (github.com/google-research/rliable, ``library.py``, ``metrics.py``);
E. D. Dolan, J. J. More, "Benchmarking optimization software with performance profiles",
Mathematical Programming 91, 2002; B. Efron, R. J. Tibshirani, *An Introduction to the
Bootstrap*, 1993, ch. 13 (the percentile interval). Quantiles: numpy's default (linear).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

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


def positive_scores(values: ArrayLike, what: str = "scores") -> np.ndarray:
    """``values`` as a float64 (n,) array of finite positive numbers, n >= 1.

    Raises:
        ConfigError: naming ``what``, for another shape, no value, or a value that is not
            finite and > 0 (with its position).
    """
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise ConfigError(f"{what}: need a non-empty 1-D array, got shape {array.shape}")
    bad = np.flatnonzero(~(np.isfinite(array) & (array > 0)))
    if bad.size:
        raise ConfigError(f"{what}: every value must be finite and > 0; position {bad[0]} "
                          f"is {float(array[bad[0]])!r}")
    return array


def geometric_mean_rows(samples: np.ndarray) -> np.ndarray:
    """Geometric mean of each row: float64 (B, n) positive -> float64 (B,), exp(mean(log x))."""
    result: np.ndarray = np.exp(np.log(samples).mean(axis=1))
    return result


def geometric_mean(values: ArrayLike) -> float:
    """exp(mean(log x)) of finite positive scores (float64 (n,), n >= 1).

    Raises:
        ConfigError: see :func:`positive_scores`.
    """
    return float(geometric_mean_rows(positive_scores(values)[None, :])[0])


def iqm_weights(n: int) -> np.ndarray:
    """Integer weights ``w`` (int64 (n,), sum 2n) of the sorted scores in the IQM.

    The i-th smallest score (i = 1..n) covers the probability range [(i-1)/n, i/n]; its weight
    is the length of that range inside [1/4, 3/4], in units of 1/(4n):
    ``w_i = max(0, min(4i, 3n) - max(4(i-1), n))``, so IQM = sum(w_i x_(i)) / (2n). Integers
    keep the weights exact. Example: n = 6 gives [0, 2, 4, 4, 2, 0].

    Raises:
        ConfigError: for n < 1.
    """
    if n < 1:
        raise ConfigError(f"the IQM needs at least one score, got n={n}")
    upper = 4 * np.arange(1, n + 1, dtype=np.int64)
    weights: np.ndarray = np.maximum(0, np.minimum(upper, 3 * n) - np.maximum(upper - 4, n))
    return weights


def interquartile_mean_rows(samples: np.ndarray) -> np.ndarray:
    """IQM of each row (fractional edges, module docstring): float64 (B, n) -> float64 (B,)."""
    n = samples.shape[1]
    weights = iqm_weights(n).astype(np.float64)
    result: np.ndarray = (np.sort(samples, axis=1) * weights).sum(axis=1) / (2.0 * n)
    return result


def interquartile_mean(values: ArrayLike) -> float:
    """Interquartile mean of finite scores (float64 (n,), n >= 1), fractional edges.

    Raises:
        ConfigError: for another shape, no score or a score that is not finite.

    Source: Agarwal et al. (2021), section 4.3; the fractional weighting is the mean of the
    empirical quantile function over [0.25, 0.75] (see :func:`iqm_weights`).
    """
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size == 0 or not np.all(np.isfinite(array)):
        raise ConfigError(f"interquartile mean: need a non-empty 1-D array of finite scores, "
                          f"got shape {array.shape}")
    return float(interquartile_mean_rows(array[None, :])[0])


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
    data = np.asarray(vectors, dtype=np.float64)
    if data.ndim != 2 or data.size == 0 or np.isnan(data).any():
        raise ConfigError(f"bootstrap: need a non-empty (m, n) array of scores (no NaN), got "
                          f"shape {data.shape}")
    size = data.shape[1]
    if len(strata) != size:
        raise ConfigError(f"bootstrap: {len(strata)} strata labels for {size} scores")
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be in (0, 1), got {confidence}")
    if num_resamples < 1:
        raise ConfigError(f"num_resamples must be >= 1, got {num_resamples}")
    points = [np.atleast_1d(statistic(row[None, :])[0]).astype(np.float64) for row in data]
    groups = strata_positions(strata)
    if max(group.size for group in groups) < 2:
        return [Interval(p, np.full_like(p, math.nan), np.full_like(p, math.nan), confidence,
                         num_resamples) for p in points]
    rng = np.random.default_rng(seed)
    chunk = max(1, CHUNK_VALUES // size)
    resampled = [np.empty((num_resamples, p.size), dtype=np.float64) for p in points]
    for start in range(0, num_resamples, chunk):
        stop = min(start + chunk, num_resamples)
        indices = stratified_indices(groups, size, stop - start, rng)
        for row, out in zip(data, resampled, strict=True):
            out[start:stop] = statistic(row[indices]).reshape(stop - start, out.shape[1])
    tail = (1.0 - confidence) / 2.0
    intervals = []
    for point, out in zip(points, resampled, strict=True):
        low, high = np.quantile(out, [tail, 1.0 - tail], axis=0)
        intervals.append(Interval(point, low, high, confidence, num_resamples))
    return intervals


def task_improvement(x: ArrayLike, y: ArrayLike, *,
                     better: Literal["lower", "higher"] = "lower") -> float:
    """P(X better than Y) + 0.5 P(X = Y) over every pair of a run of X and a run of Y.

    Args:
        x: float64 (n_x,) scores of X on one task (stratum); no NaN (an infinite score, e.g.
            +inf for a failed run when lower is better, compares as usual).
        y: float64 (n_y,) scores of Y on the same task.
        better: "lower" (X better when its score is lower, e.g. a JCT ratio) or "higher".

    Returns:
        A probability in [0, 1]; 0.5 when X and Y hold the same scores.

    Raises:
        ConfigError: for an empty input, a NaN, or another ``better``.

    Source: Agarwal et al. (2021), section 4.3 (the Mann-Whitney U statistic over n_x n_y).
    """
    a = np.asarray(x, dtype=np.float64).ravel()
    b = np.asarray(y, dtype=np.float64).ravel()
    if a.size == 0 or b.size == 0 or np.isnan(a).any() or np.isnan(b).any():
        raise ConfigError("probability of improvement: need non-empty scores (no NaN) for X "
                          "and Y")
    if better not in ("lower", "higher"):
        raise ConfigError(f"better must be 'lower' or 'higher', got {better!r}")
    wins = a[:, None] < b[None, :] if better == "lower" else a[:, None] > b[None, :]
    ties = a[:, None] == b[None, :]
    return float((wins.sum() + 0.5 * ties.sum()) / (a.size * b.size))


def probability_of_improvement(x: ArrayLike, y: ArrayLike, *,
                               better: Literal["lower", "higher"] = "lower") -> float:
    """Average over tasks of :func:`task_improvement` (rliable's layout: runs x tasks).

    Args:
        x: float64 (n_x, T) scores of X, one column per task.
        y: float64 (n_y, T) scores of Y, same tasks.
        better: "lower" (default: lower scores are better) or "higher" (rliable's scores).

    Raises:
        ConfigError: for arrays that are not 2-D with the same number of tasks (>= 1).
    """
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1] or a.shape[1] == 0:
        raise ConfigError(f"probability of improvement: need (runs, tasks) arrays with the "
                          f"same tasks, got shapes {a.shape} and {b.shape}")
    per_task = [task_improvement(a[:, t], b[:, t], better=better) for t in range(a.shape[1])]
    return float(np.mean(per_task))
