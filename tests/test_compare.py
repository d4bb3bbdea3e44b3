"""Paired comparison statistics (agents.compare): geomean ratios and the percentile bootstrap,
checked against cases worked out independently."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from agents.compare import bootstrap_geomean, geomean, paired_ratios
from palgym.errors import ConfigError


def test_paired_ratios_and_geomean_by_hand() -> None:
    ratios = paired_ratios(np.array([2.0, 9.0, 4.0]), np.array([1.0, 3.0, 8.0]))
    assert ratios.tolist() == [2.0, 3.0, 0.5]
    assert geomean(ratios) == pytest.approx(3.0 ** (1 / 3), rel=1e-15)  # (2 * 3 * 0.5)^(1/3)
    with pytest.raises(ConfigError, match="equal-length"):
        paired_ratios(np.array([1.0]), np.array([1.0, 2.0]))
    with pytest.raises(ConfigError, match="finite and > 0"):
        paired_ratios(np.array([1.0, 0.0]), np.array([1.0, 2.0]))


def test_constant_ratios_give_a_zero_width_interval_at_that_ratio() -> None:
    summary = bootstrap_geomean(np.full(7, 0.8), num_resamples=500, seed=3)
    assert summary.ci_low == summary.ci_high == summary.geomean
    assert summary.geomean == pytest.approx(0.8, rel=1e-14)
    assert summary.num_episodes == 7 and summary.confidence == 0.95


def test_two_episodes_interval_spans_the_two_ratios() -> None:
    """n = 2: a resample is {a, a} (p = 1/4), {a, b} (1/2) or {b, b} (1/4), so the bootstrap
    geomeans are a, sqrt(ab), b; the 2.5% and 97.5% quantiles fall inside the a and b atoms."""
    summary = bootstrap_geomean(np.array([0.5, 2.0]), num_resamples=4000, seed=0)
    assert summary.geomean == pytest.approx(1.0, rel=1e-15)
    assert summary.ci_low == pytest.approx(0.5, rel=1e-14)
    assert summary.ci_high == pytest.approx(2.0, rel=1e-14)


def test_interval_matches_the_exact_bootstrap_distribution() -> None:
    """n = 5: all 5^5 equally likely resamples enumerated (the ideal bootstrap); the Monte
    Carlo percentile interval with B = 40000 agrees to 1%."""
    ratios = np.array([0.7, 0.9, 1.0, 1.3, 0.6])
    logs = np.log(ratios)
    exact = np.array([math.exp(logs[list(idx)].mean())
                      for idx in itertools.product(range(5), repeat=5)])
    low, high = np.quantile(exact, [0.025, 0.975])
    summary = bootstrap_geomean(ratios, num_resamples=40_000, seed=1)
    assert summary.ci_low == pytest.approx(low, rel=0.01)
    assert summary.ci_high == pytest.approx(high, rel=0.01)
    assert summary.ci_low < summary.geomean < summary.ci_high


def test_interval_agrees_with_scipy_percentile_bootstrap() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(11)
    ratios = np.exp(rng.normal(-0.1, 0.2, size=12))
    reference = stats.bootstrap(
        (ratios,), lambda x, axis: np.exp(np.mean(np.log(x), axis=axis)), n_resamples=40_000,
        method="percentile", confidence_level=0.9, random_state=np.random.default_rng(5),
    ).confidence_interval
    summary = bootstrap_geomean(ratios, confidence=0.9, num_resamples=40_000, seed=2)
    assert summary.ci_low == pytest.approx(reference.low, rel=0.01)
    assert summary.ci_high == pytest.approx(reference.high, rel=0.01)


def test_same_seed_same_interval_and_bad_arguments() -> None:
    ratios = np.array([0.8, 1.1, 0.95, 0.7])
    first = bootstrap_geomean(ratios, num_resamples=300, seed=9)
    assert bootstrap_geomean(ratios, num_resamples=300, seed=9) == first
    state = np.random.get_state()[1].copy()
    bootstrap_geomean(ratios, num_resamples=300, seed=9)
    assert np.array_equal(np.random.get_state()[1], state)  # the global RNG is not touched
    for kwargs, message in (({"confidence": 1.0}, "confidence"),
                            ({"num_resamples": 0}, "num_resamples")):
        with pytest.raises(ConfigError, match=message):
            bootstrap_geomean(ratios, **kwargs)
    with pytest.raises(ConfigError, match="non-empty"):
        bootstrap_geomean(np.array([]))
    with pytest.raises(ConfigError, match="finite and > 0"):
        bootstrap_geomean(np.array([1.0, -1.0]))
