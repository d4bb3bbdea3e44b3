"""Backfilling placements on hand-worked toys: first-fit starts a job that head-of-line
blocking holds back, EASY refuses a backfill that would delay the head's reservation and
accepts one that does not, the skip depth, sticky backfilling, names and options.

Every toy: one homogeneous node (which GPUs a job gets never changes its speed), every job of
class A (class reordering is the identity), T_it = 1 s, R = 100 s, FIFO.
"""

from __future__ import annotations

import numpy as np
import pytest

from palgym.errors import ConfigError, PalgymError
from palgym.policies import BACKFILL_PLACEMENT_NAMES, PlacementPolicy, make_placement
from palgym.policies.backfill import reserve, split_name, with_backfill
from palgym.policies.durations import remaining_run_time_s
from palgym.sim.config import SimConfig
from tests.toys import (
    A,
    ClusterSpec,
    ListSampler,
    R,
    Simulator,
    Trace,
    jct,
    make_episode,
    preset,
    run_episode,
    run_toy,
    toy_profile,
    toy_trace,
)


def sim_with(trace: Trace, cluster: ClusterSpec) -> Simulator:
    return Simulator(trace, toy_profile(cluster.num_gpus), cluster,
                     preset("default", round_duration_s=R))


def placement(name: str, config: SimConfig, **options: object) -> PlacementPolicy:
    """A variability-blind placement (no slowdown factors needed)."""
    return make_placement(name, None, config, **options)  # type: ignore[arg-type]


def jct_of(result: object) -> list[float]:
    return jct(result)  # type: ignore[arg-type]


NON_STICKY = ("pal", "pm-first", "packed-non-sticky", "random-non-sticky")
STICKY = ("packed-sticky", "random-sticky")

# J0: 2 GPUs x 1000 s; J1 (the head once J0 runs): 4 GPUs x 100 s; J2: 2 GPUs x 300 s.
SHORT_BEHIND = ((2, 0.0, 1000.0, A), (4, 0.0, 100.0, A), (2, 0.0, 300.0, A))
# the same with J2 of 1500 s: it would outlast J0 and hold GPUs the head needs.
LONG_BEHIND = ((2, 0.0, 1000.0, A), (4, 0.0, 100.0, A), (2, 0.0, 1500.0, A))
# J0: 2 GPUs x 1000 s; head J1: 3 GPUs x 100 s; J2, J3: 1 GPU x 1500 s each. When J0 ends
# 4 GPUs are free, one more than J1 needs: one extra GPU.
EXTRA_GPU = ((2, 0.0, 1000.0, A), (3, 0.0, 100.0, A), (1, 0.0, 1500.0, A), (1, 0.0, 1500.0, A))


@pytest.mark.parametrize("policy", NON_STICKY + STICKY)
def test_first_fit_starts_a_job_head_of_line_blocking_holds_back(policy: str) -> None:
    # No backfill: t=0 J0 runs, J1 does not fit (2 free) and the walk stops: J2 waits. J0
    # ends at 1000, J1 runs [1000, 1100), J2 [1100, 1400). First-fit: J2 starts at t=0 beside
    # J0 and ends at 300; J1 still starts at 1000 (J2 has left).
    cluster = ClusterSpec(1, 4)
    assert jct_of(run_toy(toy_trace(*SHORT_BEHIND), cluster, policy)) == [1000, 1100, 1400]
    backfill = with_backfill(policy, "first-fit")
    assert jct_of(run_toy(toy_trace(*SHORT_BEHIND), cluster, backfill)) == [1000, 1100, 300]


@pytest.mark.parametrize("policy", NON_STICKY + STICKY)
def test_easy_accepts_a_backfill_that_ends_before_the_reservation(policy: str) -> None:
    # t=0: J1's reservation: J0 (remaining 1000 s) frees 2 GPUs -> 4 >= 4 at shadow 1000 s,
    # extra 0. J2 ends at 300 <= 1000: it starts. Same JCTs as first-fit.
    result = run_toy(toy_trace(*SHORT_BEHIND), ClusterSpec(1, 4), with_backfill(policy, "easy"))
    assert jct_of(result) == [1000, 1100, 300]


@pytest.mark.parametrize("policy", NON_STICKY + STICKY)
def test_easy_refuses_a_backfill_that_would_hold_the_head_back(policy: str) -> None:
    # EASY: J2 would end at 1500 > shadow 1000 (the shadow shrinks with J0's remaining time
    # every round) and needs 2 > extra 0: refused, so J1 runs [1000, 1100) as without
    # backfilling, then J2 [1100, 2600), never preempted. First-fit starts J2 at t=0; at
    # 1000 it holds 2 of the 4 GPUs J1 needs, and J1 (ahead of it in the order) preempts it
    # (non-sticky: re-placed first; sticky: J2 is the lowest-priority victim): J1 still runs
    # [1000, 1100) and J2 resumes at 1100 with 500 iterations left, ending at 1600.
    cluster = ClusterSpec(1, 4)
    easy = run_toy(toy_trace(*LONG_BEHIND), cluster, with_backfill(policy, "easy"))
    assert jct_of(easy) == [1000, 1100, 2600]
    assert easy.records.first_start_time_s.tolist() == [0, 1000, 1100]
    migrates = policy in NON_STICKY  # non-sticky: a job moved to other GPUs counts as preempted
    assert migrates or easy.records.num_preemptions.tolist() == [0, 0, 0]
    assert jct_of(run_toy(toy_trace(*LONG_BEHIND), cluster, policy)) == [1000, 1100, 2600]
    first_fit = run_toy(toy_trace(*LONG_BEHIND), cluster, with_backfill(policy, "first-fit"))
    assert jct_of(first_fit) == [1000, 1100, 1600]
    assert migrates or first_fit.records.num_preemptions.tolist() == [0, 0, 1]


@pytest.mark.parametrize("policy", NON_STICKY + STICKY)
def test_easy_lets_a_long_job_use_the_extra_gpu_only(policy: str) -> None:
    # Reservation of J1 (3 GPUs): shadow 1000 s, extra 4 - 3 = 1. J2 (1 GPU, 1500 s) outlasts
    # the shadow but fits the extra GPU: it starts at 0 (ends 1500) and takes it; J3 then
    # fits the last free GPU but would hold J1 back: refused. t=1000: J1 (3 GPUs) starts
    # beside J2; J1 ends at 1100 and J3 runs [1100, 2600).
    # First-fit starts J3 too; at 1000 J1 preempts it (the lowest-priority holder), and J3
    # resumes at 1100 with 500 left (ends 1600). No backfill: J2 and J3 wait; at 1000 J1 and
    # J2 start, J3 at 1100 (J2 ends 2500).
    cluster = ClusterSpec(1, 4)
    easy = run_toy(toy_trace(*EXTRA_GPU), cluster, with_backfill(policy, "easy"))
    assert jct_of(easy) == [1000, 1100, 1500, 2600]
    migrates = policy in NON_STICKY  # non-sticky: a job moved to other GPUs counts as preempted
    assert migrates or easy.records.num_preemptions.tolist() == [0, 0, 0, 0]
    first_fit = run_toy(toy_trace(*EXTRA_GPU), cluster, with_backfill(policy, "first-fit"))
    assert jct_of(first_fit) == [1000, 1100, 1500, 1600]
    assert migrates or first_fit.records.num_preemptions.tolist() == [0, 0, 0, 1]
    assert jct_of(run_toy(toy_trace(*EXTRA_GPU), cluster, policy)) == [1000, 1100, 2500, 2600]


def test_reservation_by_hand() -> None:
    # 1x8: J0 (2 GPUs, 500 s left) and J1 (4 GPUs, 200 s left) hold GPUs, 2 free. Head J2
    # needs 5: J1 ends first (200 s) -> 6 free >= 5: shadow 200 s, extra 1.
    trace = toy_trace((2, 0, 500, A), (4, 0, 200, A), (5, 0, 10, A))
    sim = sim_with(trace, ClusterSpec(1, 8))
    target = np.array([0, 0, 1, 1, 1, 1, -1, -1])
    assert remaining_run_time_s(sim.view(), np.array([0, 1, 2])).tolist() == [500.0, 200.0, 10.0]
    reservation = reserve(sim.view(), 2, target)
    assert (reservation.shadow_s, reservation.extra) == (200.0, 1)


def test_skip_depth_bounds_the_walk() -> None:
    # 1x2: J0 (1 GPU) runs; J1..J16 need 2 GPUs (16 skipped jobs); J17 (1 GPU, 100 s) would
    # fit the last GPU. Depth 16 (the default, the env's K): the walk stops at the 16th skip,
    # J17 waits until J0 ends at 1000. Depth 17 reaches it.
    jobs = [(1, 0.0, 1000.0, A), *[(2, 0.0, 100.0, A)] * 16, (1, 0.0, 100.0, A)]
    sim = sim_with(toy_trace(*jobs), ClusterSpec(1, 2))
    order = np.arange(18)
    default = placement("packed-non-sticky+backfill", sim.config)
    assert default.place(sim.view(), order, ListSampler()).tolist() == [0, -1]
    deeper = placement("packed-non-sticky", sim.config, backfill="first-fit", depth=17)
    assert deeper.place(sim.view(), order, ListSampler()).tolist() == [0, 17]


def test_names_and_options() -> None:
    assert split_name("pal+easy") == ("pal", "easy")
    assert split_name("packed-sticky+backfill") == ("packed-sticky", "first-fit")
    assert split_name("pm-first") == ("pm-first", "none")
    # every backfilling placement has both suffixed names, and each splits back (an
    # invariant: a contributor's new placement keeps it)
    from palgym.policies.registry import BACKFILLING_PLACEMENT_NAMES

    assert set(BACKFILL_PLACEMENT_NAMES) == {with_backfill(p, mode) for p in
                                             BACKFILLING_PLACEMENT_NAMES
                                             for mode in ("first-fit", "easy")}
    assert all(split_name(n)[0] in BACKFILLING_PLACEMENT_NAMES for n in BACKFILL_PLACEMENT_NAMES)
    config = sim_with(toy_trace((1, 0, 1, A)), ClusterSpec(1, 2)).config
    assert placement("random-sticky", config, backfill="easy").name == "random-sticky+easy"
    assert not placement("packed-sticky+easy", config).deterministic
    assert placement("packed-sticky+backfill", config).deterministic
    with pytest.raises(ConfigError, match="names backfill 'easy'"):
        placement("packed-sticky+easy", config, backfill="first-fit")
    with pytest.raises(ConfigError, match="unknown backfill"):
        placement("packed-sticky", config, backfill="conservative")
    with pytest.raises(ConfigError, match="depth"):
        placement("packed-sticky", config, backfill="easy", depth=0)


def test_strict_packed_sticky_backfill_still_fails_fast() -> None:
    # 2x2, strict total: job 0 needs all 4 GPUs over two nodes, which Packed-Sticky's strict
    # rule never grants (it needs more than 4 free); with backfilling job 1 would run and the
    # episode would then idle forever, so run_episode refuses it up front as without.
    trace = toy_trace((4, 0.0, 10.0, A), (1, 0.0, 10.0, A))
    config = preset("default", round_duration_s=R, packed_sticky_strict_total=True)
    episode = make_episode(trace, cluster=ClusterSpec(2, 2), config=config,
                           profile=toy_profile(4), seed=0)
    for name in ("packed-sticky", "packed-sticky+backfill", "packed-sticky+easy"):
        with pytest.raises(PalgymError, match="can never place job 0"):
            run_episode(episode, name)
