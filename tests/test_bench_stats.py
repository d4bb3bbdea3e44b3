"""palgym.bench.stats: IQM, geometric mean, stratified bootstrap, probability of improvement and
performance profiles against values worked out by hand (and scipy where it defines the same
quantity)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from palgym.bench import bootstrap, profiles, stats
from palgym.errors import ConfigError


def test_iqm_of_eight_values_is_the_mean_of_the_middle_four() -> None:
    # sorted: 1 2 | 3 4 5 6 | 7 100 -> (3 + 4 + 5 + 6) / 4
    assert stats.interquartile_mean([100, 7, 6, 5, 4, 3, 2, 1]) == 4.5
    assert stats.iqm_weights(8).tolist() == [0, 0, 4, 4, 4, 4, 0, 0]


def test_iqm_weights_the_edge_scores_fractionally() -> None:
    # n = 6: the middle half is 3 scores' worth: half of the 2nd, the 3rd, the 4th, half of the
    # 5th smallest: (0.5 * 2 + 4 + 6 + 0.5 * 8) / 3 = 5
    assert stats.iqm_weights(6).tolist() == [0, 2, 4, 4, 2, 0]
    assert stats.interquartile_mean([10, 1, 4, 2, 8, 6]) == 5.0
    # n = 5: probability range [0.25, 0.75] covers 3/4 of the 2nd, the 3rd, 3/4 of the 4th:
    # (0.75 * 2 + 3 + 0.75 * 4) / 2.5 = 3; the outlier 100 has no weight
    assert stats.iqm_weights(5).tolist() == [0, 3, 4, 3, 0]
    assert stats.interquartile_mean([100, 4, 3, 2, 1]) == 3.0
    # n = 1, 2: the middle half of one score is that score; of two, their mean
    assert stats.interquartile_mean([7.0]) == 7.0
    assert stats.interquartile_mean([1.0, 3.0]) == 2.0
    for n in range(1, 30):
        assert stats.iqm_weights(n).sum() == 2 * n


def test_iqm_equals_scipy_trim_mean_when_n_is_a_multiple_of_four() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    for n in (4, 8, 12, 40):
        values = rng.lognormal(size=n)
        expected = scipy_stats.trim_mean(values, 0.25)
        assert stats.interquartile_mean(values) == pytest.approx(expected, rel=1e-14)
    # for n = 6 scipy trims one whole score from each end (mean of 4 of 6); we do not
    assert scipy_stats.trim_mean([1, 2, 4, 6, 20, 30], 0.25) == 8.0  # (2 + 4 + 6 + 20) / 4
    assert stats.interquartile_mean([1, 2, 4, 6, 20, 30]) == 7.0  # (1 + 4 + 6 + 10) / 3


def test_geometric_mean_by_hand_and_refusals() -> None:
    assert stats.geometric_mean([1.0, 4.0]) == pytest.approx(2.0, rel=1e-15)
    assert stats.geometric_mean([0.5, 2.0, 1.0]) == pytest.approx(1.0, abs=1e-15)
    with pytest.raises(ConfigError, match="position 1 is 0.0"):
        stats.geometric_mean([1.0, 0.0])
    with pytest.raises(ConfigError, match="non-empty"):
        stats.geometric_mean([])


def test_bootstrap_redone_by_explicit_index_draws() -> None:
    values = np.array([0.9, 1.1, 1.3, 0.7, 1.0])
    strata = ["b", "a", "b", "a", "a"]
    resamples, seed = 6, 11
    got = stats.stratified_bootstrap(values, strata, stats.geometric_mean_rows,
                                     num_resamples=resamples, seed=seed, confidence=0.8)
    # the documented draw order: strata ascending ("a" then "b"), each (B, stratum size)
    rng = np.random.default_rng(seed)
    positions_a, positions_b = np.array([1, 3, 4]), np.array([0, 2])
    draw_a = rng.integers(0, 3, size=(resamples, 3))
    draw_b = rng.integers(0, 2, size=(resamples, 2))
    means = []
    for r in range(resamples):
        picked = [values[positions_a[k]] for k in draw_a[r]] + \
                 [values[positions_b[k]] for k in draw_b[r]]
        means.append(math.exp(sum(math.log(v) for v in picked) / 5))
    low, high = np.quantile(means, [0.1, 0.9])
    assert got.point[0] == stats.geometric_mean(values)
    assert got.low[0] == pytest.approx(low, rel=1e-14)
    assert got.high[0] == pytest.approx(high, rel=1e-14)
    again = stats.stratified_bootstrap(values, strata, stats.geometric_mean_rows,
                                       num_resamples=resamples, seed=seed, confidence=0.8)
    assert again.low[0] == got.low[0] and again.high[0] == got.high[0]


@pytest.mark.parametrize("chunk_values", [stats.CHUNK_VALUES, 7])
def test_bootstrap_interval_of_an_exactly_known_distribution(
        chunk_values: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # stratum a = {1, 3} resampled, stratum b = {10} fixed: the resampled mean is (s + 10) / 3
    # with s = 2 (p 1/4), 4 (p 1/2), 6 (p 1/4); the 2.5% and 97.5% quantiles are 4 and 16/3
    # (also when the resamples are drawn 2 rows at a time).
    monkeypatch.setattr(bootstrap, "CHUNK_VALUES", chunk_values)
    interval = stats.stratified_bootstrap([1.0, 10.0, 3.0], ["a", "b", "a"],
                                          lambda rows: rows.mean(axis=1), num_resamples=4001)
    assert interval.scalar() == (pytest.approx(14 / 3), pytest.approx(4.0), pytest.approx(16 / 3))


def test_bootstrap_never_mixes_strata() -> None:
    # stratum a is all 1, stratum b all 100: every resample has the data's mean
    interval = stats.stratified_bootstrap([1, 100, 1, 100, 1], [0, 1, 0, 1, 0],
                                          lambda rows: rows.mean(axis=1), num_resamples=500)
    assert interval.scalar() == (40.6, 40.6, 40.6)


def test_bootstrap_with_one_score_per_stratum_has_no_interval() -> None:
    interval = stats.stratified_bootstrap([1.0, 2.0, 3.0], ["x", "y", "z"],
                                          stats.interquartile_mean_rows)
    assert not interval.has_interval
    assert interval.point[0] == 2.0 and math.isnan(interval.low[0])


def test_bootstrap_refusals() -> None:
    with pytest.raises(ConfigError, match="2 labels for 3 scores"):
        stats.stratified_bootstrap([1, 2, 3], ["a", "b"], stats.geometric_mean_rows)
    with pytest.raises(ConfigError, match="confidence"):
        stats.stratified_bootstrap([1, 2], ["a", "a"], stats.geometric_mean_rows, confidence=1)
    with pytest.raises(ConfigError, match="num_resamples"):
        stats.stratified_bootstrap([1, 2], ["a", "a"], stats.geometric_mean_rows,
                                   num_resamples=0)



def test_cluster_bootstrap_redone_by_explicit_trace_draws() -> None:
    values = np.array([0.9, 1.1, 1.3, 0.7, 1.0, 1.2])
    traces = ["b", "a", "b", "a", "c", "c"]
    resamples, seed = 7, 5
    (got,) = stats.cluster_bootstraps([values], traces, stats.geometric_mean_rows,
                                      num_resamples=resamples, seed=seed, confidence=0.8)
    # the documented draw: traces ascending (a, b, c), (B, 3) trace indices, each trace whole
    rng = np.random.default_rng(seed)
    members = {0: [1, 3], 1: [0, 2], 2: [4, 5]}
    draws = rng.integers(0, 3, size=(resamples, 3))
    means = [math.exp(sum(math.log(values[i]) for k in row for i in members[k]) / 6)
             for row in draws]
    low, high = np.quantile(means, [0.1, 0.9])
    assert got.point[0] == pytest.approx(stats.geometric_mean(values), rel=1e-15)
    assert got.low[0] == pytest.approx(low, rel=1e-14)
    assert got.high[0] == pytest.approx(high, rel=1e-14)


@pytest.mark.parametrize("chunk_values", [stats.CHUNK_VALUES, 4])
def test_cluster_bootstrap_of_an_exactly_known_distribution(
        chunk_values: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # trace x = {1, 1}, trace y = {3, 3}: a resample holds 0, 1 or 2 copies of y with
    # p 1/4, 1/2, 1/4, so its mean is 1, 2 or 3: the 2.5% and 97.5% quantiles are 1 and 3,
    # and a resample never splits a trace (the mean is never 1.5 or 2.5)
    monkeypatch.setattr(bootstrap, "CHUNK_VALUES", chunk_values)
    (interval,) = stats.cluster_bootstraps([[1.0, 3.0, 1.0, 3.0]], ["x", "y", "x", "y"],
                                           lambda rows: rows.mean(axis=1), num_resamples=4001)
    assert interval.scalar() == (2.0, 1.0, 3.0)
    (median,) = stats.cluster_bootstraps([[1.0, 3.0, 1.0, 3.0]], ["x", "y", "x", "y"],
                                         lambda rows: rows.mean(axis=1), num_resamples=4001,
                                         confidence=0.4)
    assert median.scalar() == (2.0, 2.0, 2.0)


def test_cluster_bootstrap_with_one_trace_has_no_interval_and_refuses_unequal_traces() -> None:
    (single,) = stats.cluster_bootstraps([[1.0, 2.0]], ["t", "t"], stats.geometric_mean_rows)
    assert not single.has_interval
    with pytest.raises(ConfigError, match="unequal sizes"):
        stats.cluster_bootstraps([[1.0, 2.0, 3.0]], ["t", "t", "u"], stats.geometric_mean_rows)


X = [[1, 2, 3], [4, 5, 6]]
Y = [[2, 2, 1], [3, 1, 7]]


def test_probability_of_improvement_by_hand() -> None:
    # lower is better. task 0: x {1,4} vs y {2,3}: 1<2, 1<3 win, 4 loses twice -> 2/4
    # task 1: x {2,5} vs y {2,1}: 2=2 half a win, the rest lose -> 0.5/4
    # task 2: x {3,6} vs y {1,7}: 3<7 and 6<7 win -> 2/4;  mean (0.5 + 0.125 + 0.5) / 3
    assert stats.probability_of_improvement(X, Y) == 0.375
    assert stats.probability_of_improvement(Y, X) == 1 - 0.375
    # higher is better (rliable's scores): 0.5, (0.5 + 3) / 4, 0.5
    assert stats.probability_of_improvement(X, Y, better="higher") == 0.625
    assert stats.probability_of_improvement(X, X) == 0.5


def test_probability_of_improvement_is_mann_whitney_u_over_pairs() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    x, y = np.array(X, dtype=float), np.array(Y, dtype=float)
    expected = np.mean([scipy_stats.mannwhitneyu(x[:, t], y[:, t], alternative="greater")
                        .statistic / 4 for t in range(3)])
    assert stats.probability_of_improvement(x, y, better="higher") == pytest.approx(expected)
    with pytest.raises(ConfigError, match="same tasks"):
        stats.probability_of_improvement(x, y[:, :2])
    with pytest.raises(ConfigError, match="better"):
        stats.task_improvement([1.0], [2.0], better="smaller")  # type: ignore[arg-type]


def test_performance_profile_by_hand() -> None:
    profile = profiles.performance_profile([1.2, 1.0, 0.9, 1.0], [0.8, 0.9, 1.0, 1.1, 1.5])
    assert profile.tolist() == [0.0, 0.25, 0.75, 0.75, 1.0]
    # a failed run (+inf) is never at or below a threshold
    assert profiles.performance_profile([math.inf, 1.0], [1.0, 1e300]).tolist() == [0.5, 0.5]
    with pytest.raises(ConfigError, match="no NaN"):
        profiles.performance_profile([math.nan], [1.0])


def test_a_failed_run_loses_every_comparison() -> None:
    # lower is better: +inf loses to 3 and ties +inf -> (0 + 0.5) / 2
    assert stats.task_improvement([math.inf], [3.0, math.inf]) == 0.25
    with pytest.raises(ConfigError, match="no NaN"):
        stats.task_improvement([math.nan], [1.0])


def test_profile_band_contains_the_profile_and_is_bounded() -> None:
    values = [0.9, 1.0, 1.1, 1.2, 0.95, 1.05]
    taus = np.array([0.85, 1.0, 1.25])
    strata = ["a", "a", "a", "b", "b", "b"]
    band, other = profiles.profile_bands([values, values[::-1]], strata, taus,
                                         num_resamples=300)
    assert band.point.tolist() == [0.0, pytest.approx(3 / 6), 1.0]
    # below every score and above every score the band is exact
    assert band.low[0] == band.high[0] == 0.0 and band.low[2] == band.high[2] == 1.0
    assert band.low[1] <= band.point[1] <= band.high[1] and band.low[1] < band.high[1]
    assert other.point.tolist() == band.point.tolist()


def test_profile_rows_count_like_a_per_row_search() -> None:
    rng = np.random.default_rng(5)
    samples = rng.choice([0.5, 1.0, 1.5, 2.0, math.inf], size=(40, 7))
    taus = np.array([0.4, 0.5, 1.0, 1.2, 2.0, 3.0])
    expected = [[np.sum(row <= tau) / 7 for tau in taus] for row in samples]
    assert profiles.profile_rows(samples, taus).tolist() == expected
    with pytest.raises(ConfigError, match="ascending"):
        profiles.performance_profile([1.0], [2.0, 1.0])


def test_bootstraps_of_several_vectors_equal_separate_bootstraps() -> None:
    rng = np.random.default_rng(2)
    vectors = rng.lognormal(size=(3, 8))
    strata = [0, 0, 1, 1, 1, 2, 2, 2]
    together = stats.stratified_bootstraps(vectors, strata, stats.interquartile_mean_rows,
                                           num_resamples=700, seed=4)
    for vector, interval in zip(vectors, together, strict=True):
        alone = stats.stratified_bootstrap(vector, strata, stats.interquartile_mean_rows,
                                           num_resamples=700, seed=4)
        assert interval.scalar() == alone.scalar()
