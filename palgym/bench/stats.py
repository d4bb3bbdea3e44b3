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
- bootstrap intervals of any of these statistics: :mod:`palgym.bench.bootstrap`.
- :func:`paired_ratios` and :func:`bootstrap_geomean`: ``evaluate.py``'s summary of per-episode
  ratios, their geometric mean with a percentile bootstrap interval over episodes or over
  groups of episodes (below).
- :func:`probability_of_improvement`: per stratum (task), over every pair (run of X, run of
  Y), P(X better than Y) + 0.5 P(X = Y), averaged over the strata (rliable
  ``metrics.probability_of_improvement``, which computes the Mann-Whitney U statistic over
  ``n_x n_y``). Here better means **lower** (``better="lower"``, the default); rliable's
  scores are higher-is-better (``better="higher"``).
- performance profiles: :mod:`palgym.bench.profiles`.

**Paired ratios** (``evaluate.py``). Every policy runs on the same episodes, so policy P and
reference R are compared episode by episode: ``ratio_i = avgJCT(P, episode i) / avgJCT(R,
episode i)`` (< 1: P is faster). The summary is the geometric mean of the ratios (PAL, SC24,
Figure 10 reports ``1 - geomean``) with a percentile bootstrap interval: resample the n
episodes with replacement B times, take the geomean of each resample, and report the
``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of those B geomeans (resampling
whole episodes keeps the pairing). Episodes of one trace under different seeds are not
independent (for a deterministic policy on a fixed profile they may even be replicas), so
``groups`` (e.g. the trace of each episode) switches to the cluster bootstrap: resample whole
groups with replacement and take the geomean over all episodes of the resampled groups (the
groups may differ in size). With a single resampling unit there is no interval (every resample
is the data itself, so its zero width would say nothing about variation): ``ci_low`` and
``ci_high`` are NaN then.

Source: R. Agarwal, M. Schwarzer, P. S. Castro, A. Courville, M. G. Bellemare, "Deep
Reinforcement Learning at the Edge of the Statistical Precipice", NeurIPS 2021, sections 4.1-4.3
(stratified bootstrap CIs, performance profiles, IQM, probability of improvement), and its
library rliable (github.com/google-research/rliable, ``library.py``, ``metrics.py``);
E. D. Dolan, J. J. More, "Benchmarking optimization software with performance profiles",
Mathematical Programming 91, 2002; B. Efron, R. J. Tibshirani, *An Introduction to the
Bootstrap*, 1993, ch. 13 (the percentile interval); A. C. Davison, D. V. Hinkley, *Bootstrap
Methods and their Application*, 1997, section 3.8 (resampling clusters). Quantiles: numpy's
default (linear).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from palgym.bench.bootstrap import (
    CHUNK_VALUES,
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Interval,
    Statistic,
    check_settings,
    cluster_bootstraps,
    percentile_bounds,
    resampled_statistics,
    stratified_bootstrap,
    stratified_bootstraps,
)
from palgym.errors import ConfigError

__all__ = ["CHUNK_VALUES", "DEFAULT_CONFIDENCE", "DEFAULT_RESAMPLES", "DEFAULT_SEED", "Interval",
           "RatioSummary", "Statistic", "bootstrap_geomean", "cluster_bootstraps",
           "geometric_mean", "geometric_mean_rows", "interquartile_mean",
           "interquartile_mean_rows", "iqm_weights", "paired_ratios", "positive_scores",
           "probability_of_improvement", "stratified_bootstrap", "stratified_bootstraps",
           "task_improvement"]

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
    seed: int = DEFAULT_SEED,
    groups: Sequence[str] | None = None,
) -> RatioSummary:
    """Geomean of ``ratios`` with a percentile bootstrap interval (module docstring).

    Each resample draws U units (episodes, or groups in order of first appearance) with
    replacement: ``rng.integers(0, U, size=(rows, U))`` in the chunks of
    :func:`palgym.bench.bootstrap.resampled_statistics`; its statistic is the sum of the drawn
    units' log ratios over their episode count. The bounds are ``exp`` of the percentile bounds
    of those mean logs.

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
    check_settings(confidence, num_resamples)
    sums, counts = _group_sums(logs, groups)
    size = sums.size
    if size < 2:
        return RatioSummary(geomean=float(np.exp(logs.mean())), ci_low=math.nan,
                            ci_high=math.nan, confidence=confidence, num_episodes=logs.size,
                            num_units=int(size))
    means = resampled_statistics(
        [lambda indices: sums[indices].sum(axis=1) / counts[indices].sum(axis=1)], [1], size,
        lambda rng, rows: rng.integers(0, size, size=(rows, size)), num_resamples, seed)[0]
    low, high = np.exp(percentile_bounds(means, confidence))
    return RatioSummary(geomean=float(np.exp(logs.mean())), ci_low=float(low[0]),
                        ci_high=float(high[0]), confidence=confidence, num_episodes=logs.size,
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
