# ruff: noqa: F405
"""Toy instances whose answers are worked out by hand (PAL_MODEL sections 3-6).

Every expected value below is derived in the comment next to it from the rules in
PAL_MODEL.md, never copied from a run. Conventions of all the toys unless said otherwise:
round R = 100 s, T_it = 1 s (so iterations = ideal seconds), locality penalty lf = 1.7 (the
default), ``default`` preset, variability values 1.0 except where given.

Progress rule used in the derivations: a running job gains R / (T_it x vp x lp) iterations per
round (vp = max perfvar of its class over its GPUs, lp = lf if its GPUs span nodes else 1); it
completes at the first round boundary where iterations >= total; JCT = boundary - submit.
"""

from __future__ import annotations

from toys import *  # noqa: F403  (tests/toys.py: the shared toy helpers)


# --------------------------------------------------------------------------- (a) a lone job
@pytest.mark.parametrize("policy", ["packed-sticky", "random-non-sticky", "pm-first", "pal"])
def test_lone_job_runs_its_ideal_duration_rounded_up_to_the_round(policy: str) -> None:
    # 2x2 homogeneous cluster, lf = 1. One 1-GPU job, 250 s of ideal work, submitted at 0.
    # It gains 100 iterations per round: 100 at t=100, 200 at t=200, 300 >= 250 at t=300.
    # JCT = 300 - 0 = 300 s (250 s rounded up to the round), whatever the policy.
    result = run_toy(toy_trace((1, 0.0, 250.0, A)), ClusterSpec(2, 2), policy,
                     locality_penalty=1.0)
    assert jct(result) == [300.0]
    assert result.num_rounds == 3


def test_lone_job_submitted_mid_round_is_admitted_at_the_next_boundary() -> None:
    # Submitted at 30 s: first seen at boundary 100, runs [100,200) and [200,300) -> 200
    # iterations >= 200 at t=300. JCT = 300 - 30 = 270 s; queueing delay 100 - 30 = 70 s.
    result = run_toy(toy_trace((1, 30.0, 200.0, A)), ClusterSpec(2, 2))
    assert jct(result) == [270.0]
    assert result.records.first_start_time_s.tolist() == [100.0]
    assert result.metrics.avg_queueing_delay_s == 70.0


# --------------------------------------------------------------------------- (b) variability
def test_four_gpu_job_on_a_node_with_one_slow_gpu_runs_1_3x_longer() -> None:
    # 1 node x 4 GPUs, class A values {1, 1, 1, 1.3}; one class-A 4-GPU job of 950 iterations.
    # vp = max = 1.3, lp = 1 (one node): 100 / 1.3 = 76.92 iterations per round; after 12 rounds
    # 923.1 < 950, after 13 rounds 1000 >= 950 -> completes at t = 1300 (950 x 1.3 = 1235 s
    # rounded up). On the homogeneous node: 100 per round, 10 rounds (950 -> 1000) -> t = 1000.
    # Ratio 1300 / 1000 = 1.3.
    trace = toy_trace((4, 0.0, 950.0, A))
    slow = run_toy(trace, ClusterSpec(1, 4), profile=toy_profile(4, [1.0, 1.0, 1.0, 1.3]))
    even = run_toy(trace, ClusterSpec(1, 4))
    assert jct(slow) == [1300.0]
    assert jct(even) == [1000.0]
    assert jct(slow)[0] / jct(even)[0] == pytest.approx(1.3)


def test_variability_is_per_class() -> None:
    # Same node, but the job is class B, whose values are all 1.0: 950 -> 10 rounds -> 1000 s.
    trace = toy_trace((4, 0.0, 950.0, B))
    result = run_toy(trace, ClusterSpec(1, 4), profile=toy_profile(4, [1.0, 1.0, 1.0, 1.3]))
    assert jct(result) == [1000.0]


def test_slowest_gpu_sets_the_pace() -> None:
    # 1x2 cluster, class A values {0.8, 2.0}; a 2-GPU class-A job of 400 iterations.
    # vp = max(0.8, 2.0) = 2.0 (not the mean 1.4): 50 iterations per round, 8 rounds -> 800 s.
    trace = toy_trace((2, 0.0, 400.0, A))
    result = run_toy(trace, ClusterSpec(1, 2), profile=toy_profile(2, [0.8, 2.0]))
    assert jct(result) == [800.0]


# --------------------------------------------------------------------------- (c) locality
@pytest.mark.parametrize(
    ("locality_penalty", "expected_s"),
    [
        # lf = 1.7: 100 / 1.7 = 58.82 per round; 16 rounds 941.2 < 950, 17 rounds 1000 -> 1700 s.
        (1.7, 1700.0),
        # lf = 1.0: 100 per round, 10 rounds -> 1000 s (the same as inside one node).
        (1.0, 1000.0),
        # lf = 2.5: 40 per round, 950 / 40 = 23.75 -> 24 rounds -> 2400 s.
        (2.5, 2400.0),
    ],
)
def test_job_spanning_two_nodes_runs_lf_times_longer(
    locality_penalty: float, expected_s: float
) -> None:
    # 2 nodes x 1 GPU, all values 1.0: a 2-GPU job must span both nodes and pays lf.
    trace = toy_trace((2, 0.0, 950.0, A))
    result = run_toy(trace, ClusterSpec(2, 1), locality_penalty=locality_penalty)
    assert jct(result) == [expected_s]


def test_same_job_inside_one_node_pays_no_locality_penalty() -> None:
    # 1 node x 2 GPUs: no span, lp = 1 -> 1000 s even with lf = 1.7.
    assert jct(run_toy(toy_trace((2, 0.0, 950.0, A)), ClusterSpec(1, 2))) == [1000.0]


def test_per_class_locality_penalty() -> None:
    # Per-class lf (A 1.16, B 1.0, C 1.0, D 1.1) on 2x1: a class-D 2-GPU job pays 1.1:
    # 950 x 1.1 = 1045 s -> 11 rounds -> 1100 s; a class-B one pays 1.0 -> 1000 s.
    by_class = (1.16, 1.0, 1.0, 1.1)
    d_job = run_toy(toy_trace((2, 0.0, 950.0, D)), ClusterSpec(2, 1),
                    locality_penalty_by_class=by_class)
    b_job = run_toy(toy_trace((2, 0.0, 950.0, B)), ClusterSpec(2, 1),
                    locality_penalty_by_class=by_class)
    assert jct(d_job) == [1100.0]
    assert jct(b_job) == [1000.0]


def test_larger_than_node_rule() -> None:
    # locality_rule = larger-than-node: a 2-GPU job on 2 nodes x 2 GPUs never pays (2 <= G_n),
    # a 4-GPU job always pays: 950 x 1.7 = 1615 s -> 17 rounds -> 1700 s.
    two = run_toy(toy_trace((2, 0.0, 950.0, A)), ClusterSpec(2, 2),
                  locality_rule="larger-than-node")
    four = run_toy(toy_trace((4, 0.0, 950.0, A)), ClusterSpec(2, 2),
                   locality_rule="larger-than-node")
    assert jct(two) == [1000.0]
    assert jct(four) == [1700.0]


# --------------------------------------------------------------------------- (d) queue orders
# 1 node x 2 GPUs, homogeneous, packed-non-sticky (every round re-placed from scratch), all jobs
# submitted at 0 and admitted in this order:
#   J0: 2 GPUs, 300 s;  J1: 1 GPU, 100 s;  J2: 1 GPU, 200 s.
QUEUE_TOY = ((2, 0.0, 300.0, A), (1, 0.0, 100.0, A), (1, 0.0, 200.0, A))


def test_fifo_order() -> None:
    # FIFO = J0, J1, J2. t=0: J0 takes both GPUs, J1 blocked. J0 runs 3 rounds -> done at 300.
    # t=300: J1 on GPU 0 (packed: no node with exactly 1 free, fewest-free node 0, first GPU),
    # J2 on GPU 1 (node 0 now has exactly 1 free). J1 done at 400 (100 s).
    # t=400: re-placed from scratch, J2 moves to GPU 0 (a migration, counted as a preemption);
    # done at 500 (200 s). JCT = 300, 400, 500; avg 400.
    result = run_toy(toy_trace(*QUEUE_TOY), ClusterSpec(1, 2), "packed-non-sticky", "fifo")
    assert jct(result) == [300.0, 400.0, 500.0]
    assert result.metrics.avg_jct_s == 400.0
    assert result.records.num_preemptions.tolist() == [0, 0, 1]


def test_srtf_order() -> None:
    # SRTF (remaining T_it x (total - done)): 300, 100, 200 -> J1, J2, J0.
    # t=0: J1 GPU 0, J2 GPU 1, J0 (2 GPUs) blocked. t=100: J1 done; remaining J2 100, J0 300:
    # J2 re-placed on GPU 0 (migration), J0 cannot fit. t=200: J2 done (200 s of work).
    # J0 runs 200..500. JCT = 500, 100, 200; avg 800 / 3.
    result = run_toy(toy_trace(*QUEUE_TOY), ClusterSpec(1, 2), "packed-non-sticky", "srtf")
    assert jct(result) == [500.0, 100.0, 200.0]
    assert result.metrics.avg_jct_s == pytest.approx(800.0 / 3)
    assert result.records.num_preemptions.tolist() == [0, 0, 1]


def test_las_order_gpu_time() -> None:
    # LAS on GPU-seconds (default). t=0: all 0, ties keep admission order -> J0 runs [0,100)
    # (J0: 200 GPU-s, 100 iterations). t=100: J1 0, J2 0, J0 200 -> J1 GPU 0, J2 GPU 1, J0
    # preempted. t=200: J1 done; J2 100 < J0 200 -> J2 (moved to GPU 0), J0 blocked.
    # t=300: J2 done (200 iterations). J0 runs [300,500) -> 300 iterations at 500.
    # JCT = 500, 200, 300; avg 1000 / 3.
    result = run_toy(toy_trace(*QUEUE_TOY), ClusterSpec(1, 2), "packed-non-sticky", "las")
    assert jct(result) == [500.0, 200.0, 300.0]
    assert result.metrics.avg_jct_s == pytest.approx(1000.0 / 3)
    assert result.records.num_preemptions.tolist() == [1, 0, 1]


def test_las_order_wall_clock() -> None:
    # LAS on wall-clock seconds (the artifact's). Same as above until t=200, where J0 and J2
    # both have 100 s -> tie -> admission order: J0 runs [200,300) (200 iterations), J2 waits.
    # t=300: J2 100 < J0 200 -> J2 runs [300,400), done at 400 (200 iterations).
    # t=400: J0 runs [400,500) -> 300 iterations at 500. JCT = 500, 200, 400; avg 1100 / 3.
    result = run_toy(toy_trace(*QUEUE_TOY), ClusterSpec(1, 2), "packed-non-sticky", "las",
                     las_service="wall-clock")
    assert jct(result) == [500.0, 200.0, 400.0]
    assert result.metrics.avg_jct_s == pytest.approx(1100.0 / 3)


def test_tiresias_within_first_queue_is_fifo() -> None:
    # Discretised 2D-LAS: every job stays below the first threshold (14400 GPU-s), so all are
    # in queue 0, ordered by submit time (ties: admission order) = FIFO -> 300, 400, 500.
    result = run_toy(toy_trace(*QUEUE_TOY), ClusterSpec(1, 2), "packed-non-sticky", "tiresias")
    assert jct(result) == [300.0, 400.0, 500.0]


def test_tiresias_demotes_jobs_past_the_threshold() -> None:
    # Threshold 150 GPU-s. t=0: queue 0 for all -> FIFO: J0 runs [0,100) (200 GPU-s >= 150 ->
    # queue 1). t=100: J1, J2 (queue 0) first: J1 GPU 0, J2 GPU 1, J0 blocked. t=200: J1 done;
    # J2 has 100 GPU-s < 150 -> still queue 0, before J0: J2 runs [200,300) -> done at 300.
    # J0 runs [300,500). JCT = 500, 200, 300 (plain FIFO would give 300, 400, 500).
    result = run_toy(toy_trace(*QUEUE_TOY), ClusterSpec(1, 2), "packed-non-sticky", "tiresias",
                     tiresias_thresholds_gpu_s=(150.0,))
    assert jct(result) == [500.0, 200.0, 300.0]


QUEUE_CASES = [
    # (queue order, options, JCTs) as derived in the tests above.
    ("fifo", {}, [300.0, 400.0, 500.0]),
    ("srtf", {}, [500.0, 100.0, 200.0]),
    ("srtf", {"srtf_remaining": "nominal"}, [500.0, 100.0, 200.0]),
    ("las", {}, [500.0, 200.0, 300.0]),
    ("las", {"las_service": "wall-clock"}, [500.0, 200.0, 400.0]),
    ("tiresias", {}, [300.0, 400.0, 500.0]),
    ("tiresias", {"tiresias_thresholds_gpu_s": (150.0,)}, [500.0, 200.0, 300.0]),
]


@pytest.mark.parametrize(("queue_order", "options", "expected"), QUEUE_CASES)
@pytest.mark.parametrize("policy", PLACEMENT_NAMES)
def test_queue_orders_for_every_placement(
    policy: str, queue_order: str, options: dict[str, object], expected: list[float]
) -> None:
    # On one homogeneous node which GPUs a job gets never changes its speed, and every job is
    # class A (class reordering is the identity), so only the order and head-of-line blocking
    # matter. Sticky placement reaches the same schedule through preemption: e.g. LAS (GPU-s) at
    # t=100: J1 does not fit, the lower-priority running J0 is the victim; at t=200 J0 (behind
    # the running J2) does not fit and has no lower-priority victim. Wall-clock LAS at t=200:
    # J0 before J2 (tie), J0 does not fit, victim J2; at t=300 J2 first, victim J0. SRTF: J0 is
    # last in every round, nothing is preempted. Nominal SRTF ranks like ideal SRTF here (every
    # penalty is 1).
    result = run_toy(toy_trace(*QUEUE_TOY), ClusterSpec(1, 2), policy, queue_order, **options)
    assert jct(result) == expected


# --------------------------------------------------------------------------- (f) sticky
def sim_with(trace: Trace, cluster: ClusterSpec, **options: object) -> Simulator:
    config = preset("default", round_duration_s=R, **options)
    return Simulator(trace, toy_profile(cluster.num_gpus), cluster, config)


def test_sticky_stops_the_lowest_priority_victim_first() -> None:
    # 1x4; J0 on GPUs 0, 1 and J1 on 2, 3 (2 GPUs each), J2 (2 GPUs) queued. Order J2, J0, J1:
    # J2 does not fit; victims are tried from the lowest priority upward: J1 first -> GPUs 2, 3
    # free -> J2 fits there. J0 is untouched.
    sim = sim_with(toy_trace((2, 0, 1000, A), (2, 0, 1000, A), (2, 0, 1000, A)), ClusterSpec(1, 4))
    sim.commit(np.array([0, 0, 1, 1]))
    target = Packed(sticky=True).place(sim.view(), np.array([2, 0, 1]), ListSampler())
    assert target.tolist() == [0, 0, 2, 2]
    sim.commit(target)
    assert sim.jobs.num_preemptions[:3].tolist() == [0, 1, 0]
    assert sim.jobs.status[1] == JobStatus.QUEUED


@pytest.mark.parametrize(("keep_stopped", "expected"), [(False, [0, 0, 1, 1]),
                                                       (True, [0, 0, FREE, FREE])])
def test_sticky_failed_attempt_restores_or_keeps_victims_stopped(
    keep_stopped: bool, expected: list[int]
) -> None:
    # 1x4; J0 on 0, 1 and J1 on 2, 3; J2 needs 4 GPUs. Order J0, J2, J1: J0 is running (kept);
    # J2 fails; the only lower-priority victim J1 is stopped -> 2 free, still fails -> stop.
    # Default: J1 is restored. pal-artifact quirk: J1 stays stopped for the round.
    trace = toy_trace((2, 0, 1000, A), (2, 0, 1000, A), (4, 0, 1000, A))
    sim = sim_with(trace, ClusterSpec(1, 4))
    sim.commit(np.array([0, 0, 1, 1]))
    packed = Packed(sticky=True, keep_victims_stopped=keep_stopped)
    target = packed.place(sim.view(), np.array([0, 2, 1]), ListSampler())
    assert target.tolist() == expected


def test_sticky_preemption_end_to_end_las() -> None:
    # 1x4, packed-sticky, LAS (GPU-s). J0, J1: 2 GPUs, 1000 s, submitted at 0; J2: 2 GPUs,
    # 100 s, submitted at 50 (admitted at 100).
    # t=0: J0 on 0, 1 (node has 4 free, none exactly 2 -> first 2), J1 on 2, 3.
    # t=100: service J2 0 < J0 = J1 = 200 -> order J2, J0, J1; J2 does not fit; victim J1
    # (lowest priority) -> J2 on 2, 3. t=200: J2 done (100 iterations), JCT 200 - 50 = 150.
    # Order J1 (200) before J0 (400): J1 restarts on 2, 3. J0 ran every round: 10 rounds ->
    # done at 1000. J1 ran [0,100) then from 200: 900 more -> 9 rounds -> done at 1100.
    trace = toy_trace((2, 0.0, 1000.0, A), (2, 0.0, 1000.0, A), (2, 50.0, 100.0, A))
    result = run_toy(trace, ClusterSpec(1, 4), "packed-sticky", "las")
    assert jct(result) == [1000.0, 1100.0, 150.0]
    assert result.records.num_preemptions.tolist() == [0, 1, 0]


# --------------------------------------------------------------------------- (g) HOL blocking
@pytest.mark.parametrize("policy", ["packed-sticky", "packed-non-sticky", "pm-first", "pal"])
def test_head_of_line_blocking(policy: str) -> None:
    # 1x4, FIFO. J0: 3 GPUs, 200 s; J1: 2 GPUs, 100 s; J2: 1 GPU, 100 s; all at 0.
    # t=0: J0 takes 3 GPUs; J1 needs 2, only 1 free -> placement stops, so J2 waits although
    # a GPU is free (no backfilling). t=200: J0 done; J1 and J2 start, both done at 300.
    # JCT = 200, 300, 300 (without blocking J2 would finish at 100).
    # PM-First / PAL: the prefix that fits is J0 alone (3, then 5 > 4), same outcome.
    trace = toy_trace((3, 0.0, 200.0, A), (2, 0.0, 100.0, A), (1, 0.0, 100.0, A))
    result = run_toy(trace, ClusterSpec(1, 4), policy, "fifo")
    assert jct(result) == [200.0, 300.0, 300.0]
    assert result.records.first_start_time_s.tolist() == [0.0, 200.0, 200.0]


# --------------------------------------------------------------------------- (h) class order
def test_class_reordering_of_the_fitting_prefix() -> None:
    # 1x4 cluster. Queue order J0..J4 with (GPUs, class): (1, C), (2, B), (1, A), (1, A), (1, A).
    # Cumulative demand 1, 3, 4, 5, 6: the longest prefix that fits 4 GPUs is J0, J1, J2.
    # Stable sort by class: J2 (A), J1 (B), J0 (C); then J3, J4 unchanged (J3 is class A but
    # outside the prefix).
    trace = toy_trace((1, 0, 100, C), (2, 0, 100, B), (1, 0, 100, A), (1, 0, 100, A),
                      (1, 0, 100, A))
    sim = sim_with(trace, ClusterSpec(1, 4))
    assert class_reordered(sim.view(), np.array([0, 1, 2, 3, 4])).tolist() == [2, 1, 0, 3, 4]
    # A different order: J4, J3, J0, J1, J2 -> demand 1, 2, 3, 5: prefix J4, J3, J0 -> A, A, C
    # (stable: J4 before J3), then J1, J2.
    assert class_reordered(sim.view(), np.array([4, 3, 0, 1, 2])).tolist() == [4, 3, 0, 1, 2]
    # Everything fits (J0, J2, J3: demand 3) -> all sorted: J2, J3 (A), J0 (C).
    assert class_reordered(sim.view(), np.array([0, 2, 3])).tolist() == [2, 3, 0]


def test_class_reordering_gives_class_a_the_best_gpus() -> None:
    # 1x2. Class A values [1.0, 2.0] (factors 1.0 / 1.5 = 0.667 and 2.0 / 1.5 = 1.333); class C
    # values all 1.0 (one factor). FIFO: J0 class C, 1 GPU, 200 s; J1 class A, 1 GPU, 200 s.
    # PM-First: the prefix J0, J1 (demand 2) fits -> class order J1 (A), J0 (C): J1 takes the
    # 0.667 GPU 0, J0 gets GPU 1 (class C value 1.0) -> both done at 200.
    # Packed (no reordering): J0 first takes GPU 0 (no node with exactly 1 free; fewest free:
    # node 0, first GPU), J1 gets GPU 1 with value 2.0 -> 50 per round, 100 by t=200.
    # Packed-Sticky keeps J1 there: 200 at t=400. Packed-Non-Sticky re-places from scratch at
    # t=200 (J0 done): J1 moves to GPU 0 (1.0) -> 100 more in one round -> done at 300.
    trace = toy_trace((1, 0.0, 200.0, C), (1, 0.0, 200.0, A))
    profile = toy_profile(2, [1.0, 2.0])
    cluster = ClusterSpec(1, 2)
    assert jct(run_toy(trace, cluster, "pm-first", profile=profile)) == [200.0, 200.0]
    assert jct(run_toy(trace, cluster, "pal", profile=profile)) == [200.0, 200.0]
    assert jct(run_toy(trace, cluster, "packed-sticky", profile=profile)) == [200.0, 400.0]
    assert jct(run_toy(trace, cluster, "packed-non-sticky", profile=profile)) == [200.0, 300.0]


# --------------------------------------------------------------------------- (i) metrics
def test_makespan_and_utilization_by_hand() -> None:
    # 2x2 cluster (G = 4), homogeneous, FIFO, packed-non-sticky.
    # J0: 1 GPU, 250 s, submitted at 150 -> admitted at 200, runs [200,500): 300 >= 250 at 500.
    # J1: 2 GPUs, 100 s, submitted at 220 -> admitted at 300. At t=300 (from scratch, FIFO):
    # J0 -> node 0 (no node with exactly 1 free; fewest free, first) GPU 0; J1 -> node 1 has
    # exactly 2 free -> GPUs 2, 3 (one node, no penalty). J1 done at 400.
    # JCT: 500 - 150 = 350, 400 - 220 = 180 -> avg 265, p50 265 (mean of two).
    # Makespan: last completion 500 - first submission 150 = 350.
    # Counted rounds: from the first admission (t=200) to the last completion (500): [200,300)
    # 1 GPU, [300,400) 3 GPUs, [400,500) 1 GPU -> 5 GPU-rounds / (3 rounds x 4) = 5 / 12.
    # Effective utilization: every penalty is 1 -> also 5 / 12.
    # Queueing delay: J0 200 - 150 = 50, J1 300 - 220 = 80 -> avg 65.
    trace = toy_trace((1, 150.0, 250.0, A), (2, 220.0, 100.0, A))
    result = run_toy(trace, ClusterSpec(2, 2), "packed-non-sticky", "fifo")
    metrics = result.metrics
    assert jct(result) == [350.0, 180.0]
    assert metrics.avg_jct_s == 265.0
    assert metrics.p50_jct_s == 265.0
    assert metrics.makespan_s == 350.0
    assert metrics.utilization_allocated == pytest.approx(5 / 12, rel=1e-12)
    assert metrics.utilization_effective == pytest.approx(5 / 12, rel=1e-12)
    assert metrics.avg_queueing_delay_s == 65.0
    assert metrics.num_completed == metrics.num_jobs == 2
    assert metrics.num_preemptions == 0
    assert result.num_rounds == 5  # boundaries 100 .. 500
    assert metrics.per_class_avg_jct_s[A] == 265.0
    assert all(math.isnan(v) for v in metrics.per_class_avg_jct_s[1:])


def test_effective_utilization_weights_gpus_by_their_penalties() -> None:
    # The 1.3 toy of (b): 13 rounds with all 4 GPUs allocated -> allocated utilization 1.
    # Effective: each GPU weighted 1 / (1.3 x 1) -> 1 / 1.3. Makespan 1300.
    trace = toy_trace((4, 0.0, 950.0, A))
    result = run_toy(trace, ClusterSpec(1, 4), profile=toy_profile(4, [1.0, 1.0, 1.0, 1.3]))
    assert result.metrics.utilization_allocated == 1.0
    assert result.metrics.utilization_effective == pytest.approx(1 / 1.3, rel=1e-12)
    assert result.metrics.makespan_s == 1300.0
    # The spanning toy of (c): 17 rounds, 2 of 2 GPUs, weight 1 / 1.7 -> 1 / 1.7.
    span = run_toy(toy_trace((2, 0.0, 950.0, A)), ClusterSpec(2, 1))
    assert span.metrics.utilization_allocated == 1.0
    assert span.metrics.utilization_effective == pytest.approx(1 / 1.7, rel=1e-12)
