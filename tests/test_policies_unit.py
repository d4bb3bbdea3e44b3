"""Unit tests of the policies' building blocks, with hand-derived answers.

Slowdown-factor binning (PAL_MODEL section 1), PAL's matrix order (section 5), the pandas-1.1
``value_counts`` order model, the queue-order keys (section 4) and the policy registry.
"""

from __future__ import annotations

import numpy as np
import pytest

from palgym.errors import ConfigError
from palgym.policies import (
    CLAIRVOYANT,
    PLACEMENT_NAMES,
    QUEUE_ORDER_NAMES,
    ClusterCountRule,
    Durations,
    SlowdownFactors,
    make_placement,
    make_queue_order,
)
from palgym.policies.pal import matrix_entries, pandas11_value_counts_order
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import preset
from palgym.sim.engine import Simulator
from palgym.sim.types import Locality
from palgym.sim.variability import VariabilityProfile
from palgym.sim.workload import Trace

W, X = Locality.WITHIN, Locality.ACROSS
RULES = [ClusterCountRule.OUTLIERS, ClusterCountRule.SILHOUETTE]


def perfvar_with_class_a(values: list[float]) -> np.ndarray:
    """(4, G) with class A = ``values`` and the other classes all 1.0."""
    perfvar = np.ones((4, len(values)))
    perfvar[0] = values
    return perfvar


# --------------------------------------------------------------------------- slowdown factors
@pytest.mark.parametrize("rule", RULES)
def test_two_clear_clusters(rule: ClusterCountRule) -> None:
    # x = [1,1,1,1,2,2,2,2]. Outliers rule: mean 1.5, std (ddof 1) = sqrt(8 x 0.25 / 7) = 0.53,
    # threshold 1.5 + 1.6 = 3.1 -> no outlier -> K = 2. Silhouette rule: only 2 distinct values
    # -> K = 2. Centres 1 and 2, median of the centres 1.5 -> sf 1/1.5 = 0.6667, 2/1.5 = 1.3333.
    factors = SlowdownFactors.fit(perfvar_with_class_a([1, 1, 1, 1, 2, 2, 2, 2]), rule)
    np.testing.assert_allclose(factors.sf[0], [2 / 3] * 4 + [4 / 3] * 4, rtol=1e-12)
    np.testing.assert_allclose(factors.tiers[0], [2 / 3, 4 / 3], rtol=1e-12)
    labels = factors.labels[0]
    assert len(set(labels[:4].tolist())) == 1 and len(set(labels[4:].tolist())) == 1
    assert labels[0] != labels[4]
    # Constant classes: sf = 1 everywhere, one tier.
    for perf_class in (1, 2, 3):
        assert factors.sf[perf_class].tolist() == [1.0] * 8
        assert factors.tiers[perf_class].tolist() == [1.0]


def test_outlier_rule_adds_one_cluster_per_outlier() -> None:
    # x = ten 1.0, five 1.1, one 3.0. mean = 18.5 / 16 = 1.15625; squared deviations
    # 10 x 0.15625^2 + 5 x 0.05625^2 + 1.84375^2 = 3.659375; std = sqrt(3.659375 / 15) = 0.4939;
    # threshold 1.15625 + 3 x 0.4939 = 2.638 -> one outlier (3.0) -> K = 3: centres 1.0, 1.1,
    # 3.0, median 1.1 -> sf 1/1.1 = 0.90909, 1.0, 3/1.1 = 2.72727.
    values = [1.0] * 10 + [1.1] * 5 + [3.0]
    factors = SlowdownFactors.fit(perfvar_with_class_a(values), ClusterCountRule.OUTLIERS)
    np.testing.assert_allclose(factors.tiers[0], [1 / 1.1, 1.0, 3 / 1.1], rtol=1e-12)
    np.testing.assert_allclose(factors.sf[0], [1 / 1.1] * 10 + [1.0] * 5 + [3 / 1.1], rtol=1e-12)


def test_silhouette_rule_finds_three_exact_tiers() -> None:
    # x = four 0.9, four 1.0, four 2.0. K = 3 puts each value in its own cluster: every point's
    # intra-cluster distance is 0 -> silhouette 1, the maximum; K = 2 merges 0.9 and 1.0
    # (silhouette < 1). So K = 3: centres 0.9, 1.0, 2.0, median 1.0 -> sf = the values.
    values = [0.9] * 4 + [1.0] * 4 + [2.0] * 4
    factors = SlowdownFactors.fit(perfvar_with_class_a(values), ClusterCountRule.SILHOUETTE)
    np.testing.assert_allclose(factors.tiers[0], [0.9, 1.0, 2.0], rtol=1e-12)
    np.testing.assert_allclose(factors.sf[0], values, rtol=1e-12)


def test_two_gpus_two_values() -> None:
    # Two GPUs, values 1.0 and 3.0: K = 2 (no silhouette possible with 2 samples); centres 1
    # and 3, median 2 -> sf 0.5, 1.5.
    for rule in RULES:
        factors = SlowdownFactors.fit(perfvar_with_class_a([1.0, 3.0]), rule)
        np.testing.assert_allclose(factors.sf[0], [0.5, 1.5], rtol=1e-12)


# --------------------------------------------------------------------------- PAL matrix
def test_matrix_entries_order_artifact_example() -> None:
    # Tiers 0.913, 1.0, 2.595, lf 1.7. Costs: 0.913 W 0.913, 1.0 W 1.0, 0.913 A 1.552,
    # 1.0 A 1.7, 2.595 W 2.595, 2.595 A 4.4115 -> W, W, A, A, W, A (PAL_MODEL section 5).
    slowdown = np.array([1.0, 0.913, 2.595, 1.0, 0.913])
    entries = matrix_entries(slowdown, 1.7)
    assert [(e.value, e.locality) for e in entries] == [
        (0.913, W), (1.0, W), (0.913, X), (1.0, X), (2.595, W), (2.595, X),
    ]
    np.testing.assert_allclose(
        [e.cost for e in entries], [0.913, 1.0, 1.5521, 1.7, 2.595, 4.4115], rtol=1e-12
    )


def test_matrix_entries_lf_one_keeps_within_before_across() -> None:
    # lf = 1: each tier's WITHIN and ACROSS cost the same; the stable sort keeps WITHIN first.
    entries = matrix_entries(np.array([1.2, 0.9]), 1.0)
    assert [(e.value, e.locality) for e in entries] == [(0.9, W), (0.9, X), (1.2, W), (1.2, X)]


def test_matrix_entries_large_lf_tries_every_within_first() -> None:
    # lf = 3: 0.9 x 3 = 2.7 > 2.0 -> all WITHIN entries (0.9, 1.0, 2.0) before any ACROSS.
    entries = matrix_entries(np.array([0.9, 1.0, 2.0]), 3.0)
    assert [e.locality for e in entries] == [W, W, W, X, X, X]
    assert [e.value for e in entries] == [0.9, 1.0, 2.0, 0.9, 1.0, 2.0]


# --------------------------------------------------------------------------- pandas 1.1 order
def test_value_counts_equal_counts_small_keys_descending() -> None:
    # 9 distinct keys 0..8, once each: table pre-sized to 16 buckets; hash(k) = k ^ (k << 11)
    # has k in its low 4 bits, so key k sits in bucket k: bucket order ascending. Equal counts:
    # the reversed stable ascending argsort gives the reverse -> 8, 7, ..., 0.
    order = pandas11_value_counts_order(np.arange(9))
    assert order == [(k, 1) for k in range(8, -1, -1)]


def test_value_counts_sixteen_nodes_of_four() -> None:
    # The artifact's 16 x 4 cluster with every GPU free: keys = node ids 0..15, 4 each, 64 keys
    # -> 64 buckets, key k in bucket k -> ascending -> equal counts -> 15, 14, ..., 0.
    order = pandas11_value_counts_order(np.repeat(np.arange(16), 4))
    assert order == [(k, 4) for k in range(15, -1, -1)]


def test_value_counts_counts_dominate() -> None:
    # Counts 0: 2, 1: 1, 2: 3 -> descending counts: (2, 3), (0, 2), (1, 1).
    assert pandas11_value_counts_order(np.array([0, 0, 1, 2, 2, 2])) == [(2, 3), (0, 2), (1, 1)]
    # Counts 0: 2, 1: 1, 2: 2. Bucket order 0, 1, 2 (8 buckets); values [2, 1, 2]; stable
    # ascending argsort [1, 0, 2], reversed [2, 0, 1] -> (2, 2), (0, 2), (1, 1).
    assert pandas11_value_counts_order(np.array([0, 0, 1, 2, 2])) == [(2, 2), (0, 2), (1, 1)]


def test_value_counts_collision_depends_on_insertion_order() -> None:
    # 2 keys -> 4 buckets (mask 3). hash(1) = 1 ^ 2048 = 2049 -> bucket 1; hash(5) = 5 ^ 10240
    # = 10245 -> bucket 10245 & 3 = 1: a collision for whichever comes second.
    # Keys [5, 1]: 5 in bucket 1; 1 probes with step ((2049 >> 3) ^ (2049 << 3)) | 1 =
    # (256 ^ 16392) | 1 = 16649, & 3 = 1 -> bucket 2. Bucket order 5, 1; equal counts reversed
    # -> 1, 5 (ascending, unlike the no-collision case).
    assert pandas11_value_counts_order(np.array([5, 1])) == [(1, 1), (5, 1)]
    # Keys [1, 5]: 1 in bucket 1; 5 probes with step ((10245 >> 3) ^ (10245 << 3)) | 1 =
    # (1280 ^ 81960) | 1 = 83241, & 3 = 1 -> bucket 2. Bucket order 1, 5 -> reversed 5, 1.
    assert pandas11_value_counts_order(np.array([1, 5])) == [(5, 1), (1, 1)]
    # Keys [1, 4]: hash(4) & 3 = 0 -> bucket 0, before key 1's bucket 1: order 4, 1 -> 1, 4.
    assert pandas11_value_counts_order(np.array([1, 4])) == [(1, 1), (4, 1)]


def test_value_counts_growth_keeps_small_keys_ascending() -> None:
    # 4 keys -> 4 buckets, grown when 3 (= int(4 x 0.77 + 0.5)) are occupied: the 4th put
    # rebuilds with 8 buckets; keys 0..3 land in buckets 0..3 -> reversed: 3, 2, 1, 0.
    assert pandas11_value_counts_order(np.arange(4)) == [(3, 1), (2, 1), (1, 1), (0, 1)]


# --------------------------------------------------------------------------- queue orders
def two_job_sim(**options: object) -> Simulator:
    """1 node x 2 GPUs, R = 100 s, class A values [2.0, 1.0].
    J0: 1 GPU, 300 s of work (T_it 1); J1: 1 GPU, 220 s; both submitted at 0."""
    trace = Trace.from_columns(
        "orders", job_id=[0, 1], submit_time_s=[0.0, 0.0], num_gpus=[1, 1],
        total_iterations=[300.0, 220.0], iteration_time_s=[1.0, 1.0], model=["m", "m"],
        perf_class=[0, 0],
    )
    perfvar = np.ones((4, 2))
    perfvar[0] = [2.0, 1.0]
    config = preset("default", round_duration_s=100.0, **options)
    return Simulator(trace, VariabilityProfile("p", perfvar), ClusterSpec(1, 2), config)


def test_srtf_nominal_versus_ideal_remaining_time() -> None:
    # J0 runs one round on the 2.0 GPU: 50 iterations, 100 s attained. J1 has not run.
    # Nominal remaining (artifact): J0 300 - 100 = 200 < J1 220 -> J0 first.
    # Ideal remaining: J0 (300 - 50) x 1 = 250 > J1 220 -> J1 first.
    for remaining, expected in (("nominal", [0, 1]), ("ideal", [1, 0])):
        sim = two_job_sim(srtf_remaining=remaining)
        sim.commit(np.array([0, -1]))
        sim.advance()
        order = make_queue_order("srtf", CLAIRVOYANT, sim.config)  # SRTF's option from the config
        assert order.order(sim.view()).tolist() == expected


def test_srsf_weighs_remaining_time_by_gpus() -> None:
    """1 node x 4 GPUs, R = 100 s: J0 1 GPU with 100 s of work, J1 4 GPUs with 30 s (T_it 1).
    SRTF: J1 first (30 < 100 s); SRSF: J0 first (100 x 1 = 100 < 30 x 4 = 120 GPU-s)."""
    trace = Trace.from_columns(
        "srsf", job_id=[0, 1], submit_time_s=[0.0, 0.0], num_gpus=[1, 4],
        total_iterations=[100.0, 30.0], iteration_time_s=[1.0, 1.0], model=["m", "m"],
        perf_class=[0, 0],
    )
    config = preset("default", round_duration_s=100.0)
    sim = Simulator(trace, VariabilityProfile("p", np.ones((4, 4))), ClusterSpec(1, 4), config)
    assert make_queue_order("srtf", CLAIRVOYANT, config).order(sim.view()).tolist() == [1, 0]
    assert make_queue_order("srsf", CLAIRVOYANT, config).order(sim.view()).tolist() == [0, 1]
    with pytest.raises(ConfigError, match="queue order 'srsf'.*duration_knowledge='unknown'"):
        make_queue_order("srsf", Durations("unknown"), config)


def test_las_wall_clock_versus_gpu_time() -> None:
    # J0 (1 GPU) runs one round; then J0 has 100 s / 100 GPU-s and J1 0 -> J1 first either way.
    sim = two_job_sim()
    sim.commit(np.array([0, -1]))
    sim.advance()
    assert make_queue_order("las", CLAIRVOYANT, sim.config).order(sim.view()).tolist() == [1, 0]
    # FIFO ignores service: submit ties keep admission order.
    assert make_queue_order("fifo", CLAIRVOYANT, sim.config).order(sim.view()).tolist() == [0, 1]


# --------------------------------------------------------------------------- registry
def test_registry_names() -> None:
    factors = SlowdownFactors.fit(np.ones((4, 4)))
    config = preset("default")
    for name in PLACEMENT_NAMES:
        assert make_placement(name, factors, config).name == name
    for name in QUEUE_ORDER_NAMES:
        assert make_queue_order(name, CLAIRVOYANT, config).name == name
    with pytest.raises(ConfigError, match="'nope'"):
        make_placement("nope", factors, config)
    with pytest.raises(ConfigError, match="'nope'"):
        make_queue_order("nope", CLAIRVOYANT, config)
