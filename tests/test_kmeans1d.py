"""Exact 1-D k-means and silhouette (palgym.policies.kmeans1d) and the exact solver of the
slowdown factors: the DP's clustering is the optimum of an enumeration of every contiguous
partition (small inputs) and never worse than scikit-learn's k-means++ (n_init=10); the fast
silhouette is sklearn's ``silhouette_score``; equal inputs give equal bits."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from palgym.errors import ConfigError
from palgym.policies.belief import BeliefOptions
from palgym.policies.kmeans1d import (
    best_silhouette_partition,
    kmeans_1d,
    optimal_partitions,
    silhouette_1d,
)
from palgym.policies.slowdown import ClusterCountRule, KMeansSolver, SlowdownFactors

EXACT = KMeansSolver.EXACT


def wcss(values: np.ndarray, labels: np.ndarray) -> float:
    """Within-cluster sum of squares, two-pass (mean first), cluster by cluster."""
    total = 0.0
    for label in np.unique(labels):
        members = values[labels == label]
        total += float(((members - members.mean()) ** 2).sum())
    return total


def enumerated_optimum(values: np.ndarray, num_clusters: int) -> float:
    """The least WCSS over every partition of the sorted values into K contiguous runs (equal
    values may be split): C(n - 1, K - 1) partitions."""
    ordered = np.sort(values)
    n = ordered.size
    best = np.inf
    for cuts in itertools.combinations(range(1, n), num_clusters - 1):
        bounds = (0, *cuts, n)
        best = min(best, sum(float(((run - run.mean()) ** 2).sum())
                             for run in (ordered[a:b] for a, b in itertools.pairwise(bounds))))
    return best


def test_hand_example() -> None:
    # 1, 2, 3 | 10, 11, 12: each run has WCSS 1 + 0 + 1 = 2; any other cut mixes the groups.
    values = np.array([11.0, 1.0, 12.0, 3.0, 2.0, 10.0])
    centres, labels = kmeans_1d(values, 2)
    assert labels.tolist() == [1, 0, 1, 0, 0, 1]
    assert centres.tolist() == [2.0, 11.0]
    assert wcss(values, labels) == 4.0


@pytest.mark.parametrize("seed", range(6))
def test_dp_is_the_enumerated_optimum_on_small_inputs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for trial in range(40):
        size = int(rng.integers(2, 11))
        # half the trials with many equal values (integers 0..4), half continuous
        values = (rng.integers(0, 5, size).astype(np.float64) if trial % 2
                  else rng.lognormal(0.0, 0.4, size))
        distinct = np.unique(values).size
        partitions = optimal_partitions(values, min(4, distinct))
        for k, labels in enumerate(partitions, start=1):
            assert np.unique(labels).size == k
            assert wcss(values, labels) == pytest.approx(enumerated_optimum(values, k),
                                                         rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_dp_is_never_worse_than_sklearn(seed: int) -> None:
    from sklearn.cluster import KMeans

    rng = np.random.default_rng(100 + seed)
    for trial in range(5):
        size = int(rng.integers(20, 300))
        values = rng.lognormal(0.0, 0.3, size)
        if trial % 2:  # a few 2.5x outliers and duplicate values, as in the dynamic world
            values[rng.random(size) < 0.05] *= 2.5
            values = np.round(values, 2)
        for k in range(2, min(6, np.unique(values).size) + 1):
            model = KMeans(n_clusters=k, init="k-means++", n_init=10, random_state=seed)
            sklearn_labels = model.fit(values.reshape(-1, 1)).labels_
            exact = wcss(values, optimal_partitions(values, k)[-1])
            assert exact <= wcss(values, sklearn_labels) * (1 + 1e-12) + 1e-15


def test_silhouette_hand_example() -> None:
    # 0, 1 | 10, 11. a = 1 for every point; b = mean distance to the other pair:
    # x = 0: (10 + 11) / 2 = 10.5; x = 1: 9.5; x = 10: 9.5; x = 11: 10.5.
    # s = (b - a) / b: 9.5 / 10.5 twice and 8.5 / 9.5 twice.
    got = silhouette_1d(np.array([0.0, 1.0, 10.0, 11.0]), np.array([3, 3, 7, 7]))
    assert got == pytest.approx((9.5 / 10.5 + 8.5 / 9.5) / 2, rel=1e-15)
    # a point alone in its label scores 0: x = 5 alone, {0, 1}: s(0) = (5 - 1) / 5 = 0.8,
    # s(1) = (4 - 1) / 4 = 0.75, s(5) = 0 -> mean 1.55 / 3
    assert silhouette_1d(np.array([0.0, 1.0, 5.0]), np.array([0, 0, 1])) == pytest.approx(
        1.55 / 3, rel=1e-15)


@pytest.mark.parametrize("seed", range(5))
def test_silhouette_equals_sklearn(seed: int) -> None:
    from sklearn.metrics import silhouette_score

    rng = np.random.default_rng(seed)
    for trial in range(30):
        size = int(rng.integers(3, 250))
        values = rng.lognormal(0.0, 0.3, size)
        if trial % 3 == 1:  # ties and duplicate values
            values = np.round(values, int(rng.integers(0, 3)))
        if trial % 3 == 2:  # contiguous labels, as k-means gives
            labels = np.searchsorted(np.sort(rng.choice(values, 3)), values)
        else:  # any labels, as sklearn accepts
            labels = rng.integers(0, int(rng.integers(2, 7)), size) * 5 - 3
        if not 2 <= np.unique(labels).size <= size - 1:
            continue
        expected = silhouette_score(values.reshape(-1, 1), labels)
        assert abs(silhouette_1d(values, labels) - expected) <= 1e-12


@pytest.mark.parametrize("seed", range(3))
def test_partition_silhouettes_equal_sklearn(seed: int) -> None:
    # the O(n) silhouettes of the DP's contiguous partitions, against sklearn's on the same
    # labels; the chosen K is the first maximum
    from sklearn.metrics import silhouette_score

    rng = np.random.default_rng(50 + seed)
    for trial in range(8):
        size = int(rng.integers(8, 300))
        values = rng.lognormal(0.0, 0.2, size)
        values[rng.random(size) < 0.03] *= 2.5
        if trial % 2:
            values = np.round(values, 2)  # duplicates
        top = min(6, np.unique(values).size, size - 1)
        labels, chosen, scores = best_silhouette_partition(values, 2, top)
        partitions = optimal_partitions(values, top)
        expected = [silhouette_score(values.reshape(-1, 1), partitions[k - 1])
                    for k in range(2, top + 1)]
        assert np.abs(scores - expected).max() <= 1e-12
        assert chosen == 2 + int(np.argmax(scores)) and np.array_equal(
            labels, partitions[chosen - 1])


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError, match="max_clusters must be in 1..2"):
        optimal_partitions(np.array([1.0, 1.0, 2.0]), 3)
    with pytest.raises(ValueError, match="finite"):
        optimal_partitions(np.array([1.0, np.nan]), 1)
    with pytest.raises(ValueError, match="2 <= number of labels <= n - 1"):
        silhouette_1d(np.array([1.0, 2.0, 3.0]), np.array([0, 0, 0]))
    with pytest.raises(ValueError, match="one length"):
        silhouette_1d(np.array([1.0, 2.0, 3.0]), np.array([0, 1]))
    with pytest.raises(ValueError, match="silhouette cluster counts"):
        best_silhouette_partition(np.array([1.0, 2.0, 3.0]), 2, 3)
    with pytest.raises(ConfigError, match="belief solver must be one of"):
        BeliefOptions("online", solver="kmeans++")


values_strategy = st.lists(st.sampled_from([0.5, 0.9, 1.0, 1.05, 1.3, 2.5])
                           | st.floats(0.5, 3.0), min_size=2, max_size=60)


@settings(max_examples=60, deadline=None)
@given(values_strategy, st.integers(1, 6), st.randoms(use_true_random=False))
def test_partitions_are_ordered_runs_whatever_the_input_order(
        values: list[float], max_clusters: int, shuffle: object) -> None:
    array = np.array(values)
    max_clusters = min(max_clusters, np.unique(array).size)
    permutation = np.arange(array.size)
    shuffle.shuffle(permutation)  # type: ignore[attr-defined]
    for labels, shuffled in zip(optimal_partitions(array, max_clusters),
                                optimal_partitions(array[permutation], max_clusters),
                                strict=True):
        # equal inputs, equal bits: the labels follow the values, not their order
        assert np.array_equal(labels[permutation], shuffled)
        ordered = labels[np.argsort(array, kind="stable")]
        assert np.all(np.diff(ordered) >= 0)  # runs of the sorted values, numbered upwards
        for value in np.unique(array):  # equal values share a cluster
            assert np.unique(labels[array == value]).size == 1


def perfvar_of(rows: list[list[float]]) -> np.ndarray:
    return np.array(rows + [[1.0] * len(rows[0])] * (4 - len(rows)))


@pytest.mark.parametrize(("values", "rule", "expected_sf"), [
    # the hand examples of tests/test_policies_unit.py: the same factors from the exact solver
    ([1, 1, 1, 1, 2, 2, 2, 2], ClusterCountRule.OUTLIERS, [2 / 3] * 4 + [4 / 3] * 4),
    ([1, 1, 1, 1, 2, 2, 2, 2], ClusterCountRule.SILHOUETTE, [2 / 3] * 4 + [4 / 3] * 4),
    ([1.0] * 10 + [1.1] * 5 + [3.0], ClusterCountRule.OUTLIERS,
     [1 / 1.1] * 10 + [1.0] * 5 + [3 / 1.1]),
    ([0.9] * 4 + [1.0] * 4 + [2.0] * 4, ClusterCountRule.SILHOUETTE,
     [0.9] * 4 + [1.0] * 4 + [2.0] * 4),
    ([1.0, 3.0], ClusterCountRule.SILHOUETTE, [0.5, 1.5]),
])
def test_exact_solver_on_the_hand_examples(values: list[float], rule: ClusterCountRule,
                                           expected_sf: list[float]) -> None:
    factors = SlowdownFactors.fit(perfvar_of([list(map(float, values))]), rule, solver=EXACT)
    np.testing.assert_allclose(factors.sf[0], expected_sf, rtol=1e-12)
    assert factors.sf[1:].tolist() == [[1.0] * len(values)] * 3


def test_exact_solver_picks_k_by_the_exact_silhouette() -> None:
    # Three tight groups around 1, 2 and 4 (spread 0.01): K = 3 separates them with a
    # silhouette near 1; K = 2 merges two groups, K >= 4 splits one (both score lower).
    rng = np.random.default_rng(3)
    values = np.concatenate([c + 0.01 * rng.standard_normal(20) for c in (1.0, 2.0, 4.0)])
    factors = SlowdownFactors.fit(perfvar_of([values.tolist()]), solver=EXACT)
    assert factors.tiers[0].size == 3
    assert np.unique(factors.labels[0][:20]).size == 1


def test_reuse_keeps_unchanged_classes_bit_for_bit() -> None:
    rng = np.random.default_rng(7)
    before = rng.lognormal(0.0, 0.2, (4, 64))
    after = before.copy()
    after[2] *= rng.lognormal(0.0, 0.1, 64)  # only class C moved
    first = SlowdownFactors.fit(before, solver=EXACT)
    reused = SlowdownFactors.fit(after, solver=EXACT, reuse=(before, first))
    fresh = SlowdownFactors.fit(after, solver=EXACT)
    for got, want in ((reused.sf, fresh.sf), (reused.labels, fresh.labels)):
        assert got.tobytes() == want.tobytes()
    assert all(a.tobytes() == b.tobytes() for a, b in zip(reused.tiers, fresh.tiers, strict=True))
    # a stale "previous fit" shows which rows were reused: class C alone is refitted
    marker = SlowdownFactors(sf=np.full((4, 64), 7.0), labels=first.labels, tiers=first.tiers)
    mixed = SlowdownFactors.fit(after, solver=EXACT, reuse=(before, marker))
    assert [bool((mixed.sf[c] == 7.0).all()) for c in range(4)] == [True, True, False, True]


SCRIPT = """
import numpy as np
from palgym.policies.slowdown import SlowdownFactors
values = np.random.default_rng(11).lognormal(0.0, 0.3, (4, 256))
factors = SlowdownFactors.fit(values, solver="exact")
print(factors.sf.tobytes().hex()[:4000], factors.labels.sum())
"""


def test_exact_fit_is_the_same_in_another_process() -> None:
    here = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          check=True).stdout
    values = np.random.default_rng(11).lognormal(0.0, 0.3, (4, 256))
    factors = SlowdownFactors.fit(values, solver=EXACT)
    assert here.split() == [factors.sf.tobytes().hex()[:4000], str(factors.labels.sum())]
