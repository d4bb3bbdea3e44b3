"""The compiled PM-First and PAL rules against the numpy rules (the reference) on random free
masks, factor tables and locality penalties, on clusters of several shapes; and whole episodes
on both paths."""

from __future__ import annotations

import numpy as np
import pytest

from palgym._numba import AVAILABLE
from palgym.policies.compiled_rules import ClassTables
from palgym.policies.pal import matrix_entries, pal_allocation
from palgym.policies.pm_first import pm_first_allocation
from palgym.policies.slowdown import SlowdownFactors
from palgym.sim.cluster import ClusterSpec
from palgym.sim.types import NUM_PERF_CLASSES

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="numba is not installed")


def random_factors(rng: np.random.Generator, num_gpus: int) -> SlowdownFactors:
    """Per class 1-5 labels; centres drawn from a few values so that two labels may share a
    factor (ties in the factor order, groups still told apart by label)."""
    sf = np.empty((NUM_PERF_CLASSES, num_gpus))
    labels = np.empty((NUM_PERF_CLASSES, num_gpus), dtype=np.int64)
    for c in range(NUM_PERF_CLASSES):
        count = int(rng.integers(1, 6))
        centres = rng.choice([0.9, 1.0, 1.0, 1.1, 1.35, 2.0], size=count)
        labels[c] = rng.integers(count, size=num_gpus)
        sf[c] = centres[labels[c]]
    return SlowdownFactors(sf=sf, labels=labels, tiers=tuple(np.unique(row) for row in sf))


@pytest.mark.parametrize("shape", ["16x4", "8x8", "4x2", "64x4", "5x3", "1x4"])
def test_compiled_rules_equal_numpy_rules(shape: str) -> None:
    from palgym.policies.pal_kernel import pal_pick, pm_first_pick

    rng = np.random.default_rng(11)
    spec = ClusterSpec.parse(shape)
    per_node, total = spec.gpus_per_node, spec.num_gpus
    node_of_gpu = spec.node_of_gpu()
    wanted = {1, 2, 3, per_node, per_node + 1, 2 * per_node, total}
    sizes = sorted(n for n in wanted if n <= total)
    checked = 0
    for _ in range(30):
        factors = random_factors(rng, total)
        penalties = rng.choice([1.0, 1.05, 1.5, 3.0], size=NUM_PERF_CLASSES)
        entries = tuple(matrix_entries(factors.sf[c], float(penalties[c]))
                        for c in range(NUM_PERF_CLASSES))
        tables = ClassTables.build(factors, entries)
        for _ in range(8):
            free = rng.random(total) < rng.uniform(0.05, 1.0)
            for c in range(NUM_PERF_CLASSES):
                sf, labels = factors.sf[c], factors.labels[c]
                for n in sizes:
                    out = np.full(n, -1, dtype=np.int64)
                    worst = pm_first_pick(free, n, tables.rank[c], labels,
                                          tables.num_labels[c], per_node, out)
                    ref = pm_first_allocation(free, n, sf, labels, node_of_gpu)
                    assert (worst >= 0) == (ref is not None)
                    if ref is not None:
                        np.testing.assert_array_equal(out, ref)
                        assert worst == tables.rank[c][ref].max()
                    out = np.full(n, -1, dtype=np.int64)
                    found = pal_pick(free, n, sf, tables.rank[c], labels, tables.num_labels[c],
                                     per_node, tables.num_tiers[c], tables.entry_rank[c],
                                     tables.entry_within[c],
                                     out)
                    ref = pal_allocation(free, n, sf, labels, node_of_gpu, per_node,
                                         entries[c], "ascending")
                    assert found == (ref is not None)
                    if ref is not None:
                        np.testing.assert_array_equal(out, ref)
                        checked += 1
    assert checked > 500


@pytest.mark.parametrize("policy", ["pal", "pm-first"])
def test_episode_equal_on_compiled_and_numpy_rules(policy: str, monkeypatch: pytest.MonkeyPatch
                                                   ) -> None:
    from palgym.policies import compiled_rules
    from palgym.simulate import make_episode, run_episode
    from palgym.testing.generators import random_trace

    spec = ClusterSpec(8, 4)
    trace = random_trace(np.random.default_rng(5), 120, spec, max_submit_s=20000.0)
    episode = make_episode(trace, cluster=spec, seed=2)
    compiled = run_episode(episode, policy, "fifo")
    monkeypatch.setattr(compiled_rules, "compiled_rule", lambda *args, **kwargs: None)
    from palgym.policies import placement

    monkeypatch.setattr(placement, "compiled_rule", lambda *args, **kwargs: None)
    numpy_rules = run_episode(episode, policy, "fifo")
    assert compiled.records.completion_time_s.tobytes() == (
        numpy_rules.records.completion_time_s.tobytes())
    assert np.array_equal(compiled.records.num_preemptions, numpy_rules.records.num_preemptions)
    assert compiled.num_rounds == numpy_rules.num_rounds


@pytest.mark.parametrize("shape", ["16x4", "8x8", "5x3", "1x4"])
def test_within_node_pick_equals_its_numpy_home(shape: str) -> None:
    # The one compiled WITHIN step (used by pal_pick and by the env's candidate kernels)
    # against palgym.policies.pal.within_node_allocation, at every tier of random states.
    from palgym.policies.pal import within_node_allocation
    from palgym.policies.pal_kernel import node_tables, within_node_pick

    rng = np.random.default_rng(23)
    spec = ClusterSpec.parse(shape)
    per_node, total = spec.gpus_per_node, spec.num_gpus
    checked = feasible = 0
    for _ in range(40):
        factors = random_factors(rng, total)
        tables = ClassTables.build(factors)
        free = rng.random(total) < rng.uniform(0.1, 1.0)
        for c in range(NUM_PERF_CLASSES):
            tiers = np.unique(factors.sf[c])
            node_sorted = np.empty((spec.num_nodes, per_node))
            node_le = np.empty((tiers.size, spec.num_nodes), dtype=np.int64)
            node_tables(free, factors.sf[c], tables.rank[c], tiers.size, per_node,
                        node_sorted, node_le)
            for t, value in enumerate(tiers.tolist()):
                candidates = free & (factors.sf[c] <= value)
                # node_le counts the candidates of each node at tier t
                np.testing.assert_array_equal(
                    node_le[t], np.bincount(spec.node_of_gpu()[candidates],
                                            minlength=spec.num_nodes))
                for n in range(1, per_node + 1):
                    out = np.full(n, -1, dtype=np.int64)
                    found = within_node_pick(free, n, factors.sf[c], node_le[t], node_sorted,
                                             per_node, out)
                    ref = within_node_allocation(candidates, n, factors.sf[c],
                                                 spec.node_of_gpu(), "ascending")
                    assert found == (ref is not None)
                    if ref is not None:
                        np.testing.assert_array_equal(out, ref)
                        feasible += 1
                    checked += 1
    assert checked > 1000 and feasible > 300
