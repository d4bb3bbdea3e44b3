# ruff: noqa: F405
"""Toy allocation choices worked out by hand (PAL_MODEL section 5): Packed, Random, PM-First
and PAL on crafted free-GPU masks, plus PAL / PM-First end to end."""

from __future__ import annotations

from toys import *  # noqa: F403  (tests/toys.py: the shared toy helpers)


# --------------------------------------------------------------------------- (e) allocation
# Free masks below are written node by node. 3 nodes x 4 GPUs: node n owns GPUs 4n .. 4n+3.
def test_packed_takes_a_node_with_exactly_n_free() -> None:
    # Free per node: 3, 2, 4. N = 2: node 1 has exactly 2 free -> GPUs 6, 7.
    free = mask("0111", "0011", "1111")
    assert packed_allocation(free, 2, 4).tolist() == [6, 7]


def test_packed_takes_the_fullest_fitting_node_otherwise() -> None:
    # Free per node: 3, 4, 3. N = 2: no node has exactly 2; nodes with >= 2 free: all; fewest
    # free = 3 (nodes 0 and 2) -> first, node 0 -> its first 2 free GPUs 1, 2.
    free = mask("0111", "1111", "1110")
    assert packed_allocation(free, 2, 4).tolist() == [1, 2]


def test_packed_spreads_from_the_node_with_most_free() -> None:
    # Free per node: 3 (GPUs 1-3), 2 (GPUs 4, 5), 1 (GPU 8). N = 5: no node has >= 5; total 6.
    # Take node 0's 3 (most free), then node 1's 2 -> 1, 2, 3, 4, 5.
    free = mask("0111", "1100", "1000")
    assert packed_allocation(free, 5, 4).tolist() == [1, 2, 3, 4, 5]
    # Ties: free 2, 2, 0 and N = 3 -> node 0 (lowest id of the most free) gives 2, then node 1
    # (now the most free) gives its first free GPU -> 0, 1, 4.
    free = mask("1100", "1100", "0000")
    assert packed_allocation(free, 3, 4).tolist() == [0, 1, 4]


def test_packed_fails_without_enough_free_and_strict_total() -> None:
    free = mask("1100", "0100", "0000")  # 3 free in total
    assert packed_allocation(free, 4, 4) is None
    # Exactly N free in total: allowed normally (spread 0, 1 then 5), refused by the artifact's
    # Packed-Sticky rule (strictly more than N must be free to spread).
    assert packed_allocation(free, 3, 4).tolist() == [0, 1, 5]
    assert packed_allocation(free, 3, 4, strict_total=True) is None
    # strict_total only affects spreading: exactly-N inside one node still works.
    assert packed_allocation(free, 2, 4, strict_total=True).tolist() == [0, 1]


def test_random_allocation_samples_only_free_gpus() -> None:
    free = mask("0101", "1000", "0011")  # free GPUs 1, 3, 4, 10, 11 (ascending)
    sampler = ListSampler()
    # The sampler sees the free list in ascending order; the last 2 are 10, 11.
    assert random_allocation(free, 2, sampler).tolist() == [10, 11]
    # Too few free: None, and no draw is made (the artifact does not draw either).
    assert random_allocation(free, 6, sampler) is None
    assert sampler.calls == 1
    # With a real generator: always N distinct free GPUs, sorted.
    rng = random.Random(3)
    for _ in range(50):
        picked = random_allocation(free, 3, rng)
        assert picked is not None and len(set(picked.tolist())) == 3
        assert free[picked].all() and (np.diff(picked) > 0).all()


def tiers_of(slowdown: np.ndarray) -> np.ndarray:
    """Tier labels: equal exactly where the slowdown factors are equal."""
    return np.unique(slowdown, return_inverse=True)[1].astype(np.int64)


NODE_OF_GPU_2x4 = np.arange(8) // 4


def test_pm_first_best_factor_then_best_match_locality() -> None:
    # 2 nodes x 4 GPUs, factors: node 0 = [1.0, 0.9, 1.0, 0.9], node 1 = [0.9, 1.0, 1.0, 1.0].
    # Score = |#free GPUs on the node with the same factor - N|.
    slowdown = np.array([1.0, 0.9, 1.0, 0.9, 0.9, 1.0, 1.0, 1.0])
    free = np.ones(8, dtype=bool)
    tiers = tiers_of(slowdown)
    # N = 2: factor 0.9 first: GPUs 1, 3 (node 0 has two 0.9s, score 0), GPU 4 (score 1)
    # -> 1, 3.
    assert pm_first_allocation(free, 2, slowdown, tiers, NODE_OF_GPU_2x4).tolist() == [1, 3]
    # N = 1: among 0.9s, GPU 4 is alone on its node with that factor (score 0) while 1 and 3
    # score |2 - 1| = 1 -> GPU 4 (best-match locality beats lower id).
    assert pm_first_allocation(free, 1, slowdown, tiers, NODE_OF_GPU_2x4).tolist() == [4]
    # N = 4: the three 0.9s (1, 3, 4), then the best-scored 1.0: node 0's 1.0s (0, 2) count 2,
    # score 2; node 1's (5, 6, 7) count 3, score 1 -> GPU 5. Result 1, 3, 4, 5 (spans nodes).
    assert pm_first_allocation(free, 4, slowdown, tiers, NODE_OF_GPU_2x4).tolist() == [1, 3, 4, 5]
    # Only free GPUs count: with GPU 3 busy, GPU 1 is alone too -> tie on score 0 -> lower id.
    free[3] = False
    assert pm_first_allocation(free, 1, slowdown, tiers, NODE_OF_GPU_2x4).tolist() == [1]
    assert pm_first_allocation(free, 8, slowdown, tiers, NODE_OF_GPU_2x4) is None


def pal(free: np.ndarray, num_gpus: int, slowdown: np.ndarray, lf: float = 1.7) -> list[int] | None:
    picked = pal_allocation(free, num_gpus, slowdown, tiers_of(slowdown), NODE_OF_GPU_2x4, 4,
                            matrix_entries(slowdown, lf))
    return None if picked is None else picked.tolist()


def pm_first(free: np.ndarray, num_gpus: int, slowdown: np.ndarray) -> list[int] | None:
    picked = pm_first_allocation(free, num_gpus, slowdown, tiers_of(slowdown), NODE_OF_GPU_2x4)
    return None if picked is None else picked.tolist()


def test_pal_prefers_slower_gpus_within_a_node_when_cheaper_than_spanning() -> None:
    # 2x4, factors node 0 = [0.9, 1.0, x, x], node 1 = [0.9, 1.0, x, x]; only GPUs 0, 1, 4, 5
    # free. N = 2, lf = 1.7. Entries by cost: (0.9 W 0.9), (1.0 W 1.0), (0.9 A 1.53),
    # (1.0 A 1.7). (0.9 W): 0.9-GPUs are 0 and 4, one per node -> nothing. (1.0 W): nodes 0 and
    # 1 both have 2 candidates, max factor 1.0 each -> first, node 0 -> GPUs 0, 1.
    # 1.0 x 1.0 < 0.9 x 1.7, so the within-node slower pair wins. PM-First takes 0, 4.
    slowdown = np.array([0.9, 1.0, 1.0, 1.0, 0.9, 1.0, 1.0, 1.0])
    free = mask("1100", "1100")
    assert pal(free, 2, slowdown) == [0, 1]
    assert pm_first(free, 2, slowdown) == [0, 4]


def test_pal_spans_nodes_when_the_slower_tier_costs_more() -> None:
    # Same, but the slower tier is 2.0: entries (0.9 W 0.9), (0.9 A 1.53), (2.0 W 2.0),
    # (2.0 A 3.4). (0.9 W) fails as above; (0.9 A): 0.9-GPUs 0 and 4 are >= N -> PM-First
    # among them -> 0, 4. Here 0.9 x 1.7 < 2.0 x 1.0.
    slowdown = np.array([0.9, 2.0, 2.0, 2.0, 0.9, 2.0, 2.0, 2.0])
    free = mask("1100", "1100")
    assert pal(free, 2, slowdown) == [0, 4]
    # With lf = 2.5 the order flips again: 0.9 x 2.5 = 2.25 > 2.0 -> (2.0 W) first -> 0, 1.
    assert pal(free, 2, slowdown, lf=2.5) == [0, 1]


def test_pal_within_node_picks_the_fastest_subset() -> None:
    # All free; node 0 all 1.0, node 1 = [0.9, 1.0, 0.9, 1.0]. N = 2: (0.9 W): node 1 has
    # two 0.9-GPUs (4, 6) -> 4, 6 (not the first GPUs of the node).
    slowdown = np.array([1.0, 1.0, 1.0, 1.0, 0.9, 1.0, 0.9, 1.0])
    assert pal(np.ones(8, dtype=bool), 2, slowdown) == [4, 6]


def test_pal_within_node_visits_nodes_by_candidate_count() -> None:
    # Homogeneous factors (one tier 1.0); free: node 0 GPUs 1-3 (3), node 1 all (4). N = 2:
    # (1.0 W): nodes by candidate count descending -> node 1 first, max factor 1.0 -> 4, 5.
    # Packed instead takes node 0 (fewest free among those with >= 2): 1, 2.
    slowdown = np.ones(8)
    free = mask("0111", "1111")
    assert pal(free, 2, slowdown) == [4, 5]
    assert packed_allocation(free, 2, 4).tolist() == [1, 2]


def test_pal_within_node_keeps_the_first_minimum() -> None:
    # All free; node 0 = [1.0, 1.0, 0.9, 1.0], node 1 = [0.9, 0.9, 1.0, 1.0]; N = 3.
    # (0.9 W): at most 2 per node -> nothing. (1.0 W): both nodes have 4 candidates, node 0
    # first; the 3rd smallest factor is 1.0 in both -> node 0 (first minimum), its lowest ids
    # with factor <= 1.0 -> 0, 1, 2.
    slowdown = np.array([1.0, 1.0, 0.9, 1.0, 0.9, 0.9, 1.0, 1.0])
    assert pal(np.ones(8, dtype=bool), 3, slowdown) == [0, 1, 2]


def test_pal_is_pm_first_for_one_gpu_and_for_jobs_larger_than_a_node() -> None:
    slowdown = np.array([1.0, 0.9, 1.0, 0.9, 0.9, 1.0, 1.0, 1.0])
    free = np.ones(8, dtype=bool)
    # N = 1 -> PM-First -> GPU 4 (see the PM-First test); N = 5 > G_n = 4 -> PM-First:
    # 0.9s (1, 3, 4), then node 1's 1.0s score |3 - 5| = 2 < node 0's |2 - 5| = 3 -> 5, 6.
    assert pal(free, 1, slowdown) == pm_first(free, 1, slowdown) == [4]
    assert pal(free, 5, slowdown) == pm_first(free, 5, slowdown) == [1, 3, 4, 5, 6]
    assert pal(mask("1000", "0000"), 2, slowdown) is None


def test_pal_and_pm_first_end_to_end() -> None:
    # 2x2 cluster, class A values [0.9, 1.0 | 0.9, 1.0]. k-means with K = 2 gives centres 0.9
    # and 1.0, median 0.95: factors 0.947 (GPUs 0, 2) and 1.053 (GPUs 1, 3).
    # One class-A 2-GPU job of 500 iterations, lf = 1.7.
    # - PM-First: lowest factor first -> GPUs 0, 2 (span): vp 0.9 x lp 1.7 = 1.53 -> 65.36 per
    #   round, 500 x 1.53 = 765 s -> 8 rounds -> 800 s.
    # - PAL: (0.947 W) has one candidate per node; (1.053 W) -> node 0 -> GPUs 0, 1: vp 1.0,
    #   lp 1 -> 500 s (5 rounds).
    # - Packed: node 0 has exactly 2 free -> 0, 1 -> 500 s.
    trace = toy_trace((2, 0.0, 500.0, A))
    profile = toy_profile(4, [0.9, 1.0, 0.9, 1.0])
    cluster = ClusterSpec(2, 2)
    assert jct(run_toy(trace, cluster, "pm-first", profile=profile)) == [800.0]
    assert jct(run_toy(trace, cluster, "pal", profile=profile)) == [500.0]
    assert jct(run_toy(trace, cluster, "packed-sticky", profile=profile)) == [500.0]
    # Slow tier 2.0 instead: factors 0.9 / 1.45 = 0.621 and 2.0 / 1.45 = 1.379. PAL's
    # (0.621 A, cost 1.055) beats (1.379 W): GPUs 0, 2 -> 1.53 -> 800 s. Packed takes 0, 1:
    # vp 2.0 -> 50 per round -> 10 rounds -> 1000 s.
    profile = toy_profile(4, [0.9, 2.0, 0.9, 2.0])
    assert jct(run_toy(trace, cluster, "pal", profile=profile)) == [800.0]
    assert jct(run_toy(trace, cluster, "packed-sticky", profile=profile)) == [1000.0]


