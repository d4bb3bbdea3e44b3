"""The memoised non-sticky walk equals the reference walk (``place_from_empty``) round after
round, as the sequence changes the way queues do (completions, arrivals, reorders)."""

from __future__ import annotations

import numpy as np
import pytest

from palgym.policies.allocation import packed_allocation
from palgym.policies.base import NumpySampler
from palgym.policies.pal import pal_allocation
from palgym.policies.placement import PAL, Packed, PMFirst, class_reordered, place_from_empty
from palgym.policies.pm_first import pm_first_allocation
from palgym.policies.slowdown import ClusterCountRule, SlowdownFactors
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import preset
from palgym.sim.engine import Simulator
from palgym.sim.views import SimView
from palgym.testing.generators import random_profile, random_trace


def reference(sim: SimView, policy: PAL | PMFirst | Packed, order: np.ndarray) -> np.ndarray:
    """The policy's allocation by the plain walk and the per-job rules."""
    jobs = sim.jobs
    if isinstance(policy, Packed):
        def allocate(sim, job, free, _):  # type: ignore[no-untyped-def]
            return packed_allocation(free, int(jobs.num_gpus[job]), sim.cluster.gpus_per_node)
        return place_from_empty(sim, order, allocate, NumpySampler(np.random.default_rng()))
    factors = policy.factors

    def rule(sim, job, free, _):  # type: ignore[no-untyped-def]
        c, n = int(jobs.perf_class[job]), int(jobs.num_gpus[job])
        if isinstance(policy, PMFirst):
            return pm_first_allocation(free, n, factors.sf[c], factors.labels[c], sim.node_of_gpu)
        return pal_allocation(free, n, factors.sf[c], factors.labels[c], sim.node_of_gpu,
                              sim.cluster.gpus_per_node, policy.entries[c],
                              policy.node_order)
    return place_from_empty(sim, class_reordered(sim, order), rule,
                            NumpySampler(np.random.default_rng()))


def next_order(rng: np.random.Generator, order: list[int], pool: list[int]) -> list[int]:
    """One queue change: a job leaves, a job arrives at the end, or two adjacent jobs swap."""
    order = list(order)
    move = rng.integers(3)
    if move == 0 and len(order) > 1:
        del order[int(rng.integers(len(order)))]
    elif move == 1 and pool:
        order.append(pool.pop())
    elif len(order) > 1:
        i = int(rng.integers(len(order) - 1))
        order[i], order[i + 1] = order[i + 1], order[i]
    return order


def make_sim(seed: int, nodes: int, per_node: int, num_jobs: int = 60) -> Simulator:
    rng = np.random.default_rng(seed)
    cluster = ClusterSpec(nodes, per_node)
    trace = random_trace(rng, num_jobs, cluster)
    return Simulator(trace, random_profile(rng, cluster.num_gpus), cluster, preset("default"))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("name", ["pal", "pm-first", "packed-non-sticky"])
def test_memo_walk_equals_reference_walk(seed: int, name: str) -> None:
    sim = make_sim(seed, nodes=6, per_node=4)
    factors = SlowdownFactors.fit(sim.perfvar, ClusterCountRule.OUTLIERS)
    policy = {"pal": PAL(factors, sim.config.locality_penalties), "pm-first": PMFirst(factors),
              "packed-non-sticky": Packed(sticky=False)}[name]
    rng = np.random.default_rng(100 + seed)
    jobs = rng.permutation(sim.jobs.size).tolist()
    order, pool = jobs[:20], jobs[20:]
    reused = 0
    for _ in range(120):
        array = np.asarray(order, dtype=np.int64)
        got = policy.place(sim.view(), array, NumpySampler(np.random.default_rng()))
        reused += policy.memo.placed > 0
        np.testing.assert_array_equal(got, reference(sim.view(), policy, array))
        order = next_order(rng, order, pool)
    assert reused > 0  # the memo was in use (not only full walks)


def test_memo_is_not_used_on_another_layout() -> None:
    # One policy object placing on two engines: same jobs, GPUs on nodes in another layout.
    first = make_sim(7, nodes=4, per_node=4)
    second = make_sim(7, nodes=4, per_node=4)
    second.node_of_gpu = np.arange(16, dtype=np.int64) % 4  # GPU g on node g mod 4
    factors = SlowdownFactors.fit(first.perfvar, ClusterCountRule.OUTLIERS)
    policy = PAL(factors, first.config.locality_penalties)
    order = np.arange(12, dtype=np.int64)
    for sim in (first, second, first, second):
        got = policy.place(sim.view(), order, NumpySampler(np.random.default_rng()))
        np.testing.assert_array_equal(got, reference(sim.view(), policy, order))


@pytest.mark.parametrize("name", ["pal", "pm-first"])
def test_factors_changed_in_place_are_seen(name: str) -> None:
    # The per-job rules read the factors at every call; the memo and the compiled tables must
    # not keep a walk made on the old values.
    sim = make_sim(3, nodes=4, per_node=4)
    factors = SlowdownFactors.fit(sim.perfvar, ClusterCountRule.OUTLIERS)
    policy = (PAL(factors, sim.config.locality_penalties) if name == "pal"
              else PMFirst(factors))
    order = np.arange(10, dtype=np.int64)
    before = policy.place(sim.view(), order, NumpySampler(np.random.default_rng()))
    factors.sf[:] = factors.sf[:, ::-1].copy()  # the GPUs' factors reversed
    factors.labels[:] = factors.labels[:, ::-1].copy()
    after = policy.place(sim.view(), order, NumpySampler(np.random.default_rng()))
    np.testing.assert_array_equal(after, reference(sim.view(), policy, order))
    assert not np.array_equal(before, after)  # the change mattered to this walk
