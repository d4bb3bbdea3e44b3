"""Exact k-means and silhouette of one-dimensional values (the beliefs' slowdown-factor fits).

:func:`optimal_partitions` solves 1-D k-means exactly: an optimal clustering of values on a
line is a partition of the sorted values into K contiguous runs, found by dynamic programming
over the sorted values. ``D[k][i]``, the least within-cluster sum of squares of the first
``i + 1`` values in ``k + 1`` clusters, is ``min_j D[k - 1][j - 1] + ssq(j, i)``. The
optimal ``j`` is non-decreasing in ``i``, so each row is computed by divide and conquer
(the middle ``i`` first, searched over the range its neighbours allow): O(K n log n) instead of
the plain recurrence's O(K n^2). Equal values are kept together: the DP runs over the distinct
values weighted by their counts (an optimal partition never needs to split equal values when
K <= the number of distinct values), and ``ssq(j, i)`` is read from weighted prefix sums of the
values shifted by their middle value (O(1) per cluster).

:func:`silhouette_1d` is scikit-learn's ``silhouette_score`` of 1-D values in
O(n L log n) for L labels instead of O(n^2): within each label's sorted values, the summed
distance from ``x`` is ``count_below x - sum_below + sum_above - count_above x`` (prefix sums,
one binary search). The per-sample scores and their mean follow sklearn's definition
(a sample alone in its label scores 0; 0 / 0 scores 0).

Source: H. Wang and M. Song, "Ckmeans.1d.dp: Optimal k-means clustering in one dimension by
dynamic programming", The R Journal 3(2), 2011, doi:10.32614/RJ-2011-015 (the recurrence,
O(K n^2)); M. Song and H. Zhong, "Efficient weighted univariate clustering maps outstanding
transcriptionally active regions in the human genome", Bioinformatics 36(18), 2020,
doi:10.1093/bioinformatics/btaa613 (weights; the monotone split filled by divide and conquer,
Ckmeans.1d.dp's "loglinear" method, O(K n log n)); P. J. Rousseeuw, "Silhouettes", J. Comput.
Appl. Math. 20, 1987, and scikit-learn's ``silhouette_samples`` (the score). Importing this
module imports numba (see :mod:`palgym._numba`).
"""

from __future__ import annotations

import numpy as np

from palgym._numba import njit
from palgym.sim.types import FloatArray, IntArray


def optimal_partitions(values: FloatArray, max_clusters: int) -> list[IntArray]:
    """Optimal k-means labels of ``values`` for every K in 1..``max_clusters`` (one DP).

    Args:
        values: float64 (n,), finite, n >= 1, in any order.
        max_clusters: the largest K, 1 <= K <= the number of distinct values.

    Returns:
        ``labels[K - 1]``: int64 (n,), the cluster of each value in 0..K-1, numbered in
        ascending value order (cluster 0 holds the smallest values); equal values share a
        cluster. Each labelling minimises the within-cluster sum of squares over all
        partitions into K clusters (up to rounding of the prefix sums).

    Raises:
        ValueError: for an empty or non-finite ``values`` or ``max_clusters`` out of range.
    """
    runs = _Runs(values, max_clusters)
    return [runs.labels(k) for k in range(1, max_clusters + 1)]


def best_silhouette_partition(values: FloatArray, min_clusters: int, max_clusters: int
                              ) -> tuple[IntArray, int, FloatArray]:
    """Among the optimal partitions of ``values`` into K = ``min_clusters`` .. ``max_clusters``
    clusters (:func:`optimal_partitions`, one DP), the one of the largest silhouette (the
    smallest such K on ties). The silhouettes of these contiguous partitions are computed in
    O(n) each (for a value in cluster c, every other cluster lies wholly below or above it, so
    its mean distance is ``|x - mean|`` and the nearest is c - 1 or c + 1), equal to
    :func:`silhouette_1d` up to rounding.

    Args:
        values: float64 (n,), finite.
        min_clusters, max_clusters: 2 <= min <= max <= min(distinct values, n - 1).

    Returns:
        ``(labels, K, scores)``: int64 (n,) labels as :func:`optimal_partitions` numbers them,
        the chosen K, float64 (max - min + 1,) the silhouette of each K.

    Raises:
        ValueError: for bad ``values`` or cluster counts out of range.
    """
    runs = _Runs(values, max_clusters)
    if not 2 <= min_clusters <= max_clusters <= values.size - 1:
        raise ValueError(f"silhouette cluster counts must satisfy 2 <= {min_clusters} <= "
                         f"{max_clusters} <= n - 1 = {values.size - 1}")
    scores = _run_silhouettes(runs.shifted, runs.weights, runs.split, min_clusters,
                              max_clusters)
    best = min_clusters + int(np.argmax(scores))  # the first maximum
    return runs.labels(best), best, scores


class _Runs:
    """The DP over the distinct values of ``values`` (weighted by their counts)."""

    def __init__(self, values: FloatArray, max_clusters: int) -> None:
        values = np.ascontiguousarray(values, dtype=np.float64)
        if values.ndim != 1 or values.size == 0 or not np.isfinite(values).all():
            raise ValueError("k-means values must be a non-empty 1-D array of finite numbers")
        distinct, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
        if not 1 <= max_clusters <= distinct.size:
            raise ValueError(f"max_clusters must be in 1..{distinct.size} (distinct values), "
                             f"got {max_clusters}")
        self.inverse = inverse.ravel()
        self.weights = counts.astype(np.float64)
        self.shifted = distinct - distinct[distinct.size // 2]
        self.split = _split_table(self.shifted, self.weights, int(max_clusters))

    def labels(self, num_clusters: int) -> IntArray:
        """int64 (n,): the labels of the optimal partition into ``num_clusters``."""
        run_label: IntArray = _backtrack(self.split, num_clusters, self.shifted.size)
        return run_label[self.inverse]


def kmeans_1d(values: FloatArray, num_clusters: int) -> tuple[FloatArray, IntArray]:
    """The optimal k-means clustering of ``values`` into ``num_clusters`` clusters.

    Args:
        values: float64 (n,), finite.
        num_clusters: K, 1 <= K <= the number of distinct values.

    Returns:
        ``(centres, labels)``: float64 (K,) ascending cluster means and int64 (n,) labels
        (:func:`optimal_partitions`).

    Raises:
        ValueError: as :func:`optimal_partitions`.
    """
    labels = _Runs(values, num_clusters).labels(num_clusters)
    return cluster_means(values, labels, num_clusters), labels


def cluster_means(values: FloatArray, labels: IntArray, num_clusters: int) -> FloatArray:
    """float64 (K,): the mean of each label's values (labels in 0..K-1, each non-empty)."""
    sums = np.bincount(labels, weights=values, minlength=num_clusters)
    return sums / np.bincount(labels, minlength=num_clusters)


def silhouette_1d(values: FloatArray, labels: IntArray) -> float:
    """scikit-learn's ``silhouette_score(values.reshape(-1, 1), labels)`` (Euclidean), exactly
    in one dimension and in O(n L log n) (see the module docstring).

    Args:
        values: float64 (n,), finite.
        labels: integer (n,), any label values, 2 <= distinct labels <= n - 1.

    Returns:
        The mean silhouette, in [-1, 1].

    Raises:
        ValueError: for arrays of different lengths or a label count outside 2..n-1 (as
            sklearn).
    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    labels = np.asarray(labels)
    if values.ndim != 1 or labels.shape != values.shape:
        raise ValueError(f"silhouette: values {values.shape} and labels {labels.shape} must be "
                         "1-D arrays of one length")
    _, codes = np.unique(labels, return_inverse=True)
    num_labels = int(codes.max(initial=-1)) + 1
    if not 2 <= num_labels <= values.size - 1:
        raise ValueError(f"silhouette needs 2 <= number of labels <= n - 1, got {num_labels} "
                         f"labels for {values.size} values")
    codes = codes.ravel().astype(np.int64)
    order = np.lexsort((values, codes))
    sorted_values = values[order]
    starts = np.searchsorted(codes[order], np.arange(num_labels + 1)).astype(np.int64)
    samples = _silhouette_samples(values, codes, sorted_values, starts)
    return float(np.mean(samples))


@njit(cache=True, nogil=True)
def _split_table(x, w, max_clusters):  # type: ignore[no-untyped-def]
    """int64 (K, n): the first value of the last cluster of an optimal partition of values
    0..i into k + 1 clusters (``x`` ascending distinct, ``w`` their weights)."""
    n = x.size
    cw = np.zeros(n + 1)
    c1 = np.zeros(n + 1)
    c2 = np.zeros(n + 1)
    for t in range(n):
        cw[t + 1] = cw[t] + w[t]
        c1[t + 1] = c1[t] + w[t] * x[t]
        c2[t + 1] = c2[t] + w[t] * x[t] * x[t]
    cost = np.empty((max_clusters, n))
    split = np.zeros((max_clusters, n), np.int64)
    for i in range(n):
        cost[0, i] = _ssq(cw, c1, c2, 0, i)
    stack = np.empty((4 * (n + 1), 4), np.int64)  # (lo, hi, j_lo, j_hi) ranges to fill
    for k in range(1, max_clusters):
        top = 0
        stack[0, 0], stack[0, 1], stack[0, 2], stack[0, 3] = k, n - 1, k, n - 1
        while top >= 0:
            lo, hi, j_lo, j_hi = stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3]
            top -= 1
            if lo > hi:
                continue
            mid = (lo + hi) // 2
            best, best_j = np.inf, max(j_lo, k)
            for j in range(max(j_lo, k), min(mid, j_hi) + 1):
                candidate = cost[k - 1, j - 1] + _ssq(cw, c1, c2, j, mid)
                if candidate < best:
                    best, best_j = candidate, j
            cost[k, mid] = best
            split[k, mid] = best_j
            top += 1
            stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3] = lo, mid - 1, j_lo, best_j
            top += 1
            stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3] = mid + 1, hi, best_j, j_hi
    return split


@njit(cache=True, nogil=True)
def _ssq(cw, c1, c2, j, i):  # type: ignore[no-untyped-def]
    """Weighted sum of squares of values j..i about their mean (>= 0)."""
    weight = cw[i + 1] - cw[j]
    total = c1[i + 1] - c1[j]
    return max(c2[i + 1] - c2[j] - total * total / weight, 0.0)


@njit(cache=True, nogil=True)
def _backtrack(split, clusters, n):  # type: ignore[no-untyped-def]
    """int64 (n,): the cluster (0..clusters-1, ascending) of each distinct value."""
    labels = np.empty(n, np.int64)
    end = n - 1
    for k in range(clusters - 1, -1, -1):
        start = split[k, end] if k > 0 else 0
        labels[start:end + 1] = k
        end = start - 1
    return labels


@njit(cache=True, nogil=True)
def _run_silhouettes(x, w, split, min_clusters, max_clusters):  # type: ignore[no-untyped-def]
    """float64 (max - min + 1,): the silhouette of the optimal partition into each K, in the
    weighted distinct values ``x`` (ascending, shifted), ``w``."""
    n = x.size
    total = 0.0
    for t in range(n):
        total += w[t]
    scores = np.empty(max_clusters - min_clusters + 1)
    means = np.empty(max_clusters)
    for clusters in range(min_clusters, max_clusters + 1):
        labels = _backtrack(split, clusters, n)
        starts = np.searchsorted(labels, np.arange(clusters + 1))
        for c in range(clusters):
            weight, moment = 0.0, 0.0
            for t in range(starts[c], starts[c + 1]):
                weight += w[t]
                moment += w[t] * x[t]
            means[c] = moment / weight
        score = 0.0
        for c in range(clusters):
            score += _run_score(x, w, starts[c], starts[c + 1], means, c, clusters)
        scores[clusters - min_clusters] = score / total
    return scores


@njit(cache=True, nogil=True)
def _run_score(x, w, start, end, means, c, clusters):  # type: ignore[no-untyped-def]
    """The summed silhouette of the values of run ``c`` (``x[start:end]``, weights ``w``)."""
    ref = x[start]
    members, spread = 0.0, 0.0  # weight and summed (x - ref) of the run
    for t in range(start, end):
        members += w[t]
        spread += w[t] * (x[t] - ref)
    if members <= 1.0:
        return 0.0  # a sample alone in its cluster scores 0
    out = 0.0
    below_w, below_s = 0.0, 0.0
    for t in range(start, end):
        offset = x[t] - ref
        above_w = members - below_w - w[t]
        above_s = spread - below_s - w[t] * offset
        intra = (below_w * offset - below_s + above_s - above_w * offset) / (members - 1.0)
        inter = np.inf
        if c > 0:
            inter = x[t] - means[c - 1]
        if c < clusters - 1:
            inter = min(inter, means[c + 1] - x[t])
        denominator = max(intra, inter)
        if denominator > 0:
            out += w[t] * (inter - intra) / denominator
        below_w += w[t]
        below_s += w[t] * offset
    return out


@njit(cache=True, nogil=True)
def _silhouette_samples(values, codes, sorted_values, starts):  # type: ignore[no-untyped-def]
    """float64 (n,): each sample's silhouette (sklearn's ``silhouette_samples``)."""
    num_labels = starts.size - 1
    size = sorted_values.size
    ref = np.empty(num_labels)
    prefix = np.zeros(size + num_labels)  # per label: 0, then running sums of (v - ref)
    for c in range(num_labels):
        ref[c] = sorted_values[starts[c]]
        base = starts[c] + c
        for t in range(starts[c], starts[c + 1]):
            prefix[base + t - starts[c] + 1] = (prefix[base + t - starts[c]]
                                                + (sorted_values[t] - ref[c]))
    out = np.empty(values.size)
    for s in range(values.size):
        x, own = values[s], codes[s]
        intra, inter = 0.0, np.inf
        for c in range(num_labels):
            lo, hi = starts[c], starts[c + 1]
            count = hi - lo
            below = np.searchsorted(sorted_values[lo:hi], x)  # values < x
            sums = prefix[lo + c:hi + c + 1]
            offset = x - ref[c]
            total = (below * offset - sums[below]) + ((sums[count] - sums[below])
                                                      - (count - below) * offset)
            if c == own:
                intra = total / (count - 1) if count > 1 else 0.0
            else:
                inter = min(inter, total / count)
        if starts[own + 1] - starts[own] == 1:
            out[s] = 0.0
            continue
        denominator = max(intra, inter)
        out[s] = (inter - intra) / denominator if denominator > 0 else 0.0
    return out
