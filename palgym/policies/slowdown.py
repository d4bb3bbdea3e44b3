"""Slowdown factors: the schedulers' binned view of GPU variability.

PM-First and PAL do not see ``perfvar``; once per run they cluster each class's values with
k-means and replace every GPU's value by its cluster centre divided by the median of the centres.
The simulated truth stays the raw ``perfvar``; the policies decide on the binned factors.

The clustering of a class is scikit-learn's k-means (:attr:`KMeansSolver.SKLEARN`, the
artifact's; the profile's fit) or the exact one-dimensional optimum
(:attr:`KMeansSolver.EXACT`, :mod:`palgym.policies.kmeans1d`; the refits of a changing belief,
:class:`palgym.policies.belief.BeliefOptions`).

Source: PAL, SC24, Section IV-B ("PM-First" binning); artifact ``blox/cluster_state.py``
(``KMeans(n_clusters=K, random_state=1)`` with K = 2 + number of 3-sigma outliers).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from palgym.sim.config import Choice
from palgym.sim.config import ClusterCountRule as ClusterCountRule  # re-exported
from palgym.sim.types import NUM_PERF_CLASSES, FloatArray, IntArray

MAX_SILHOUETTE_CLUSTERS = 6
"""The largest K the silhouette rule tries (:attr:`ClusterCountRule.SILHOUETTE`)."""


class KMeansSolver(Choice):
    """How the k-means clustering of one class's values is computed."""

    SKLEARN = "sklearn"
    """scikit-learn's ``KMeans`` (k-means++, Lloyd, ``random_state``): candidates K of the
    silhouette rule with one start each, the chosen K with ``n_init=10`` (the artifact's; the
    profile's fit, so every static result)."""
    EXACT = "exact"
    """The optimal clustering (:func:`palgym.policies.kmeans1d.optimal_partitions`, one DP for
    every candidate K) scored by the exact 1-D silhouette
    (:func:`palgym.policies.kmeans1d.silhouette_1d`); no random state; the belief refits'
    default."""


@dataclass(frozen=True, eq=False)
class SlowdownFactors:
    """Binned slowdown factors of every GPU for every class.

    Attributes:
        sf: float64 (C, G), centre(label(g)) / median(centres) per class.
        labels: int64 (C, G), the k-means cluster of each GPU per class.
        tiers: per class, float64 (T_c,) ascending distinct sf values.
    """

    sf: FloatArray
    labels: IntArray
    tiers: tuple[FloatArray, ...]

    @classmethod
    def fit(
        cls,
        perfvar: FloatArray,
        rule: ClusterCountRule = ClusterCountRule.SILHOUETTE,
        random_state: int = 1,
        solver: KMeansSolver = KMeansSolver.SKLEARN,
        reuse: tuple[FloatArray, SlowdownFactors] | None = None,
    ) -> SlowdownFactors:
        """Cluster each class's per-GPU values (by default k-means++, Lloyd, n_init=10).

        Args:
            perfvar: float64 (C, G) variability values.
            rule: how K is chosen (see :class:`ClusterCountRule`).
            random_state: k-means seed of the ``sklearn`` solver (the artifact uses 1).
            solver: how each class is clustered (:class:`KMeansSolver`).
            reuse: ``(values, factors)`` of an earlier fit with the same rule, seed and solver:
                a class whose values equal its row of ``values`` keeps its factors and labels
                (a class's fit depends on its own values only).

        Returns:
            The factors. A class whose values are all equal gets sf = 1.0 everywhere.

        Source: PAL_MODEL section 1 "Slowdown factors"; artifact ``blox/cluster_state.py``.
        """
        sf = np.ones_like(perfvar, dtype=np.float64)
        labels = np.zeros(perfvar.shape, dtype=np.int64)
        changed = [c for c in range(NUM_PERF_CLASSES)
                   if reuse is None or not np.array_equal(reuse[0][c], perfvar[c])]
        if reuse is not None:
            kept = [c for c in range(NUM_PERF_CLASSES) if c not in changed]
            sf[kept], labels[kept] = reuse[1].sf[kept], reuse[1].labels[kept]
        if KMeansSolver(solver) is KMeansSolver.EXACT:
            for perf_class in changed:
                sf[perf_class], labels[perf_class] = _bin_class_exact(
                    np.asarray(perfvar[perf_class], dtype=np.float64), rule)
        else:
            from threadpoolctl import threadpool_limits

            # One thread: a few thousand values need no more, and an OpenMP pool started here
            # would deadlock fork-started workers (e.g. AsyncVectorEnv) that fit k-means again.
            with threadpool_limits(limits=1):
                for perf_class in changed:
                    sf[perf_class], labels[perf_class] = _bin_class(
                        np.asarray(perfvar[perf_class], dtype=np.float64), rule, random_state
                    )
        tiers = tuple(np.unique(sf[c]) for c in range(NUM_PERF_CLASSES))
        return cls(sf=sf, labels=labels, tiers=tiers)


def _bin_class(
    values: FloatArray, rule: ClusterCountRule, random_state: int
) -> tuple[FloatArray, IntArray]:
    distinct = np.unique(values).shape[0]
    if distinct < 2:
        return np.ones_like(values), np.zeros(values.shape, dtype=np.int64)
    if rule is ClusterCountRule.OUTLIERS:
        centres, labels = _kmeans(values, _outlier_clusters(values, distinct), random_state)
    else:
        centres, labels = _best_silhouette(values, distinct, random_state)
    median_centre = float(np.median(centres))
    return centres[labels] / median_centre, labels


def _outlier_clusters(values: FloatArray, distinct: int) -> int:
    """K of the outliers rule: 2 + count(x > mean + 3 std), at most ``distinct``."""
    outliers = int(np.count_nonzero(values > values.mean() + 3.0 * values.std(ddof=1)))
    return min(2 + outliers, distinct)


def _silhouette_candidates(values: FloatArray, distinct: int) -> range:
    """The K the silhouette rule scores: 2 .. min(6, distinct values, n - 1) (empty for two
    values: K = 2 without a score)."""
    return range(2, min(MAX_SILHOUETTE_CLUSTERS, distinct, values.shape[0] - 1) + 1)


def _bin_class_exact(values: FloatArray, rule: ClusterCountRule) -> tuple[FloatArray, IntArray]:
    """:func:`_bin_class` with the exact solver: the optimal clustering of every candidate K
    from one DP; the silhouette rule keeps the first K of the largest exact silhouette."""
    from palgym.policies.kmeans1d import best_silhouette_partition, cluster_means, kmeans_1d

    distinct = np.unique(values).shape[0]
    if distinct < 2:
        return np.ones_like(values), np.zeros(values.shape, dtype=np.int64)
    candidates = _silhouette_candidates(values, distinct)
    if rule is ClusterCountRule.SILHOUETTE and candidates:
        labels, num_clusters, _ = best_silhouette_partition(values, candidates.start,
                                                            candidates.stop - 1)
        centres = cluster_means(values, labels, num_clusters)
    else:  # the outliers rule, or two values (K = 2 without a score)
        num_clusters = 2 if rule is ClusterCountRule.SILHOUETTE else _outlier_clusters(
            values, distinct)
        centres, labels = kmeans_1d(values, num_clusters)
    median_centre = float(np.median(centres))
    return centres[labels] / median_centre, labels


def _kmeans(
    values: FloatArray, num_clusters: int, random_state: int, n_init: int = 10
) -> tuple[FloatArray, IntArray]:
    from sklearn.cluster import KMeans

    model = KMeans(
        n_clusters=num_clusters, init="k-means++", n_init=n_init, random_state=random_state
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(values.reshape(-1, 1))
    return model.cluster_centers_.ravel().astype(np.float64), model.labels_.astype(np.int64)


def _best_silhouette(
    values: FloatArray, distinct: int, random_state: int
) -> tuple[FloatArray, IntArray]:
    best_score, best_k = -np.inf, 2
    for num_clusters in _silhouette_candidates(values, distinct):
        _, labels = _kmeans(values, num_clusters, random_state, n_init=1)
        score = silhouette(values, labels)
        if score > best_score:
            best_score, best_k = score, num_clusters
    return _kmeans(values, best_k, random_state)


SILHOUETTE_WORKING_MEMORY_MB = 16
"""Memory (MiB) for one block of the silhouette's distance rows (sklearn's default is 1024)."""


def silhouette(values: FloatArray, labels: IntArray) -> float:
    """sklearn's ``silhouette_score`` of 1-D ``values`` (float64 (G,)) clustered as ``labels``
    (int64 (G,)), its distance matrix computed in blocks of rows of at most
    :data:`SILHOUETTE_WORKING_MEMORY_MB` (at least one row): memory O(G) beyond that bound
    instead of G x G x 8 bytes. Every distance and every per-row sum is computed as in one
    block (one feature: each distance is one product, no summation order to change), so the
    score is the unblocked one bit for bit.
    """
    import sklearn
    from sklearn.metrics import silhouette_score

    with sklearn.config_context(working_memory=SILHOUETTE_WORKING_MEMORY_MB):
        return float(silhouette_score(values.reshape(-1, 1), labels))
