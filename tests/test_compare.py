"""Paired comparison statistics (palgym.bench.stats): geomean ratios and the percentile
bootstrap, checked against cases worked out independently."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from palgym.bench.stats import bootstrap_geomean, paired_ratios
from palgym.errors import ConfigError
from palgym.sim.metrics import geomean


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
    low, high = np.quantile(exact, [0.025, 0.975], method="inverted_cdf")
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
    np.random.seed(3)
    np.random.random(7)  # a mid-stream position, so a touched position word would show
    state = np.random.get_state()
    bootstrap_geomean(ratios, num_resamples=300, seed=9)
    after = np.random.get_state()  # the global RNG is not touched: its whole state
    assert after[0] == state[0] and after[2:] == state[2:]
    np.testing.assert_array_equal(after[1], state[1])
    for kwargs, message in (({"confidence": 1.0}, "confidence"),
                            ({"num_resamples": 0}, "num_resamples")):
        with pytest.raises(ConfigError, match=message):
            bootstrap_geomean(ratios, **kwargs)
    with pytest.raises(ConfigError, match="non-empty"):
        bootstrap_geomean(np.array([]))
    with pytest.raises(ConfigError, match="finite and > 0"):
        bootstrap_geomean(np.array([1.0, -1.0]))


def test_cluster_bootstrap_resamples_whole_groups() -> None:
    """Two traces, three seeds each, constant within a trace: resampling traces gives the
    atoms a, sqrt(ab), b (p = 1/4, 1/2, 1/4), so the interval is [a, b]."""
    ratios = np.array([0.8, 0.8, 0.8, 1.25, 1.25, 1.25])
    groups = ["w4", "w4", "w4", "w5", "w5", "w5"]
    summary = bootstrap_geomean(ratios, groups=groups, num_resamples=4000, seed=0)
    assert summary.geomean == pytest.approx(1.0, rel=1e-15)
    assert summary.ci_low == pytest.approx(0.8, rel=1e-14)
    assert summary.ci_high == pytest.approx(1.25, rel=1e-14)
    assert summary.num_episodes == 6
    assert summary.num_units == 2 and summary.has_interval
    one = bootstrap_geomean(np.array([0.5, 0.9]), groups=["w", "w"], num_resamples=50)
    assert one.geomean == pytest.approx(math.sqrt(0.45), rel=1e-14)
    assert math.isnan(one.ci_low) and math.isnan(one.ci_high)  # one trace: no interval
    assert one.num_units == 1 and not one.has_interval
    single = bootstrap_geomean(np.array([0.7]))
    assert single.geomean == pytest.approx(0.7, rel=1e-15) and not single.has_interval
    assert math.isnan(single.ci_low) and math.isnan(single.ci_high)
    with pytest.raises(ConfigError, match="2 labels for 3 ratios"):
        bootstrap_geomean(np.array([1.0, 1.0, 1.0]), groups=["a", "b"])


def test_cluster_bootstrap_matches_exact_enumeration() -> None:
    """Three groups of sizes 1, 2, 3: all 27 group resamples enumerated; the statistic of a
    resample is exp(sum of its log ratios / its number of episodes)."""
    members = {"a": [0.7], "b": [0.9, 1.1], "c": [1.3, 1.2, 0.95]}
    ratios = np.array([r for rs in members.values() for r in rs])
    groups = [g for g, rs in members.items() for _ in rs]
    exact = []
    for pick in itertools.product(members, repeat=3):
        values = [r for g in pick for r in members[g]]
        exact.append(math.exp(sum(math.log(v) for v in values) / len(values)))
    # the distribution's 5% and 95% quantiles: atoms 2 and 26 of 27 (CDF 2/27 >= 0.05 > 1/27,
    # 26/27 >= 0.95 > 25/27); the Monte Carlo quantiles fall well inside those atoms
    low, high = np.quantile(np.array(exact), [0.05, 0.95], method="inverted_cdf")
    assert (low, high) == (sorted(exact)[1], sorted(exact)[25])
    summary = bootstrap_geomean(ratios, groups=groups, confidence=0.9, num_resamples=40_000,
                                seed=4)
    assert summary.ci_low == pytest.approx(low, rel=1e-12)
    assert summary.ci_high == pytest.approx(high, rel=1e-12)


def test_summaries_resample_traces_when_asked() -> None:
    """P / PAL = 0.8 on every seed of trace w4 and 1.25 on every seed of w5 (three seeds):
    resampling traces gives [0.8, 1.25]; resampling the six episodes cannot reach 0.8 at the
    2.5% quantile (all six from w4 has probability 1/64 < 2.5%)."""
    from agents.base import HeuristicAgent
    from agents.evaluation.contenders import Contender
    from agents.evaluation.report import summary_csv
    from agents.evaluation.summary import summarise
    from agents.rollout import EpisodeOutcome

    def outcome(policy: str, trace: str, seed: int, avg: float) -> EpisodeOutcome:
        return EpisodeOutcome(policy, trace, 0, "p", seed, f"{trace}-{seed}", -1.0, 1,
                              {"avg_jct_s": avg, "num_invalid_actions": 0})

    runs = {
        "P": [outcome("P", t, s, 100.0 * r) for t, r in (("w4", 0.8), ("w5", 1.25))
              for s in range(3)],
        "pal": [outcome("pal", t, s, 100.0) for t in ("w4", "w5") for s in range(3)],
    }
    contenders = [Contender(n, "heuristic", HeuristicAgent("pal")) for n in ("P", "pal")]
    by_trace = summarise("env", contenders, runs, {"w4": "h4", "w5": "h5"}, "test", [0, 1, 2],
                         baseline="pal", resamples=4000, bootstrap_unit="trace")
    summary = by_trace.summaries["P"].vs_reference
    assert (summary.ci_low, summary.ci_high) == (pytest.approx(0.8), pytest.approx(1.25))
    by_episode = summarise("env", contenders, runs, {"w4": "h4", "w5": "h5"}, "test",
                           [0, 1, 2], baseline="pal", resamples=4000)
    assert by_episode.summaries["P"].vs_reference.ci_low > 0.8 + 1e-6
    # mean avg JCT (3 x 80 + 3 x 125) / 6 = 102.5 s; geomean sqrt(0.8 x 1.25) = 1
    assert summary_csv(by_trace).splitlines()[1].startswith("P,heuristic,,6,0,102.5,pal,1.0,0.8,")
    with pytest.raises(ConfigError, match="bootstrap unit"):
        summarise("env", contenders, runs, {}, "test", [0], baseline="pal",
                  bootstrap_unit="seed")


def test_csv_and_json_never_write_negative_zero() -> None:
    """An episode return of -0.0 (a sum of zero penalties) is written as 0.0; a tiny negative
    return keeps its full precision."""
    import json

    from agents.base import HeuristicAgent
    from agents.evaluation.contenders import Contender
    from agents.evaluation.report import comparison_json, episodes_csv, summary_csv
    from agents.evaluation.summary import summarise
    from agents.rollout import EpisodeOutcome

    def outcome(policy: str, episode_return: float) -> EpisodeOutcome:
        metrics = {"num_jobs": 2, "num_completed": 2, "avg_jct_s": 100.0, "p50_jct_s": 90.0,
                   "p99_jct_s": 110.0, "makespan_s": 300.0, "utilization_allocated": 0.5,
                   "utilization_effective": 0.4, "num_invalid_actions": 0}
        return EpisodeOutcome(policy, "w", 0, "p", 7, "h", episode_return, 0, metrics)

    runs = {"P": [outcome("P", -0.0)], "pal": [outcome("pal", -1e-18)]}
    contenders = [Contender(n, "heuristic", HeuristicAgent("pal")) for n in ("P", "pal")]
    comparison = summarise("env", contenders, runs, {"w": "hw"}, "test", [0], baseline="pal",
                           resamples=10)
    text = comparison_json(comparison)
    assert "-0.0" not in text
    content = json.loads(text)
    returns = {r["policy"]: r["episode_return"] for r in content["results"]}
    assert math.copysign(1.0, returns["P"]) == 1.0 and returns["P"] == 0.0
    assert returns["pal"] == -1e-18
    means = {r["policy"]: r["mean_episode_return"] for r in content["summary"]}
    assert math.copysign(1.0, means["P"]) == 1.0 and means["pal"] == -1e-18
    for csv_text in (episodes_csv(comparison), summary_csv(comparison)):
        cells = [cell for line in csv_text.splitlines() for cell in line.split(",")]
        assert "-0.0" not in cells and "0.0" in cells and "-1e-18" in cells
