"""palgym.headroom: recorded schedules replay exactly, the lower bound holds for every schedule
palgym produces, and hand-worked toys give their optimum."""

from __future__ import annotations

import math

import numpy as np
import pytest

from palgym import ClusterSpec, make_episode, preset, read_sia_trace, run_episode
from palgym.bundled import bundled_trace_paths
from palgym.errors import ConfigError, PalgymError
from palgym.headroom import lower_bound
from palgym.headroom.bound import admit_rounds, min_rounds, srpt_completions
from palgym.headroom.schedule import record_allocations
from palgym.headroom.search import PriorityOrder, hindsight_search, rank_of
from palgym.schedule_record import (
    ScheduleError,
    ScheduleRecord,
    record_episode,
    replay_allocations,
    replay_schedule,
)
from palgym.sim import dynamics as dynamics_module
from palgym.sim.dynamics import RUN_Z_FLOOR, VariabilityDynamics, VariabilityProcess
from palgym.sim.types import FREE
from palgym.sim.variability import VariabilityProfile
from palgym.sim.workload import Trace
from palgym.testing.generators import random_profile, random_trace

R = 360.0


def toy_episode(perfvar_a: list[float], jobs: list[tuple[float, int, float]], nodes: int = 1,
                config: str = "default"):
    """Jobs (submit s, GPUs, ideal run time s) of class A (resnet50, T_it scaled to 1 s by the
    iteration count), on ``nodes`` nodes of len(perfvar_a) // nodes GPUs."""
    g = len(perfvar_a)
    perfvar = np.ones((4, g))
    perfvar[0] = perfvar_a
    trace = Trace.from_columns(
        "toy", job_id=list(range(len(jobs))), submit_time_s=[j[0] for j in jobs],
        num_gpus=[j[1] for j in jobs], total_iterations=[j[2] for j in jobs],
        iteration_time_s=[1.0] * len(jobs), model=["resnet50"] * len(jobs))
    return make_episode(trace, cluster=ClusterSpec(nodes, g // nodes), config=preset(config),
                        profile=VariabilityProfile("toy", perfvar))


def test_dense_allocations_play_and_record():
    """Two 1-GPU jobs of 2 ideal rounds on GPUs of speed 1: job 0 on GPU 0 in rounds 0-1, job
    1 on GPU 1 in rounds 1-2 (its allocation for round 3 is left over: it has completed, so
    its GPU is freed). Completions 720 s and 1,080 s: average JCT 900 s."""
    episode = toy_episode([1.0, 1.0], [(0.0, 1, 2 * R), (0.0, 1, 2 * R)])
    dense = np.array([[0, FREE], [0, 1], [FREE, 1], [FREE, 1]], np.int64)
    played = record_allocations(episode, dense)
    assert played.result.metrics.avg_jct_s == 900.0
    assert [c.round_index for c in played.record] == [0, 1]  # job 0 ends: no commit
    replayed = replay_schedule(episode, ScheduleRecord.from_ints(played.record.to_ints()))
    assert replayed.metrics == played.result.metrics
    _, allocations = replay_allocations(episode, played.record)
    assert allocations.tolist() == [[0, FREE], [0, 1], [FREE, 1]]


def test_allocations_that_stop_early_are_refused():
    episode = toy_episode([1.0, 1.0], [(0.0, 1, 2 * R)])
    with pytest.raises(PalgymError, match="could never end"):
        record_allocations(episode, np.array([[0, FREE]], np.int64))


@pytest.mark.parametrize("config", ["default", "pal-artifact"])
def test_recorded_heuristics_replay_bit_for_bit(config):
    path = bundled_trace_paths()["sia-philly-gen-0"]
    episode = make_episode(read_sia_trace(path), config=preset(config))
    for policy, order in (("pal", "fifo"), ("pal+backfill", "srtf"), ("packed-sticky", "fifo"),
                          ("pm-first+easy", "srsf")):
        plain = run_episode(episode, policy=policy, queue_order=order)
        recorded = record_episode(episode, policy, order)
        replayed = replay_schedule(episode, recorded.record)
        assert recorded.result.metrics == plain.metrics
        assert replayed.metrics == plain.metrics
        assert np.array_equal(replayed.records.completion_time_s,
                              plain.records.completion_time_s, equal_nan=True)


def test_replay_refuses_a_tampered_schedule_naming_the_round():
    episode = toy_episode([1.0, 1.0], [(0.0, 2, 3 * R)])
    flat = record_episode(episode, "pal", "fifo").record.to_ints()
    assert flat == [0, 1, 0, 2, 0, 1]  # round 0: job 0 on GPUs 0 and 1
    flat[3:] = [1, 0]  # job 0 given 1 of its 2 GPUs
    with pytest.raises(ScheduleError, match="round 0"):
        replay_schedule(episode, ScheduleRecord.from_ints(flat))


def test_lower_bound_of_hand_worked_toys():
    # a lone 1-GPU job, 2.5 ideal rounds, submitted at 100 s: admitted at 360 s, 3 rounds on
    # the 1.0 GPU, completes at 1,440 s: JCT 1,340 s
    episode = toy_episode([1.0, 1.25], [(100.0, 1, 2.5 * R)])
    bound = lower_bound(episode)
    assert bound.admit_round.tolist() == [1] and bound.min_rounds.tolist() == [3]
    assert bound.avg_jct_s == 1340.0 and bound.binding == "job"
    assert run_episode(episode, "pal").metrics.avg_jct_s == 1340.0
    # two 2-GPU jobs of 2 rounds at t = 0 on 2 GPUs: alone each ends at round 2 (sum 4), but
    # the cluster holds one at a time: SRPT ends them at 4 and 8 GPU-rounds, sum 12 / 2 = 6
    # rounds: average JCT 3 x 360 s, which FIFO attains
    episode = toy_episode([1.0, 1.0], [(0.0, 2, 2 * R), (0.0, 2, 2 * R)])
    bound = lower_bound(episode)
    assert bound.job_bound_s == 2 * R and bound.capacity_bound_s == 3 * R
    assert bound.binding == "capacity"
    assert run_episode(episode, "pal").metrics.avg_jct_s == 3 * R


def test_bound_pieces():
    assert admit_rounds(np.array([0.0, 1.0, 360.0, 361.0]), R).tolist() == [0, 1, 1, 2]
    assert min_rounds(np.array([720.0, 720.5]), np.array([1.0, 1.0]), R).tolist() == [2, 3]
    # one machine: job 0 (work 5) at 0, job 1 (work 1) at 1 preempts it: 1 ends at 2, 0 at 6
    assert srpt_completions(np.array([0, 1]), np.array([5, 1])).tolist() == [6, 2]


def test_fastest_factor_of_the_dynamic_truth():
    # exp(-8 x 0.0294) = 0.7903; the outlier ratio 2.49 is slower; throttling is >= 1
    assert VariabilityDynamics(run_variation=True).fastest_factor == math.exp(-8 * 0.0294)
    assert VariabilityDynamics(throttle=True).fastest_factor == 1.0
    assert VariabilityDynamics(run_variation=True, run_outlier_ratio=0.5).fastest_factor == 0.5
    assert VariabilityDynamics(run_variation=True, run_outlier_ratio=0.5,
                               run_outlier_prob=0.0).fastest_factor == math.exp(-8 * 0.0294)
    assert VariabilityDynamics(drift=True).fastest_factor is None


def test_a_run_factor_is_floored():
    # a draw of z = -20 gives exp(sigma x -8), not exp(sigma x -20)
    class Stream:
        def random(self, n):
            return np.ones(n)  # no outlier

        def standard_normal(self, n):
            return np.full(n, -20.0)

    process = VariabilityProcess(VariabilityDynamics(run_variation=True, run_sigma=0.1),
                                 np.ones((1, 2)), np.zeros(2, np.int64), seed=0)
    factors = process.draw_runs(2, Stream())  # type: ignore[arg-type]
    assert factors.tolist() == [math.exp(0.1 * RUN_Z_FLOOR)] * 2 == [math.exp(-0.8)] * 2


def test_lower_bound_of_the_dynamic_truth_scales_the_profile():
    # a lone 1-GPU job of 2.5 ideal rounds on GPUs of speed 1.0 at t = 0: statically 3 rounds;
    # with run variation every GPU may run at 0.79, so 2.5 x 0.79 = 1.98 ideal rounds: 2
    jobs = [(0.0, 1, 2.5 * R)]
    static = lower_bound(toy_episode([1.0, 1.0], jobs))
    dynamic = lower_bound(toy_episode([1.0, 1.0], jobs, config="dynamic"))
    assert static.min_rounds.tolist() == [3] and dynamic.min_rounds.tolist() == [2]
    assert dynamic.avg_jct_s == 2 * R


def test_lower_bound_refuses_drift():
    path = bundled_trace_paths()["sia-philly-gen-0"]
    config = preset("dynamic", dynamics=VariabilityDynamics(drift=True))
    episode = make_episode(read_sia_trace(path), config=config)
    with pytest.raises(ConfigError, match="drift"):
        lower_bound(episode)


def test_lower_bound_holds_on_200_fuzzed_dynamic_episodes(monkeypatch):
    """The bound never exceeds a finished schedule's average JCT in dynamic worlds (an
    invariant), with the run factors' floor raised to z = -0.5 at sigma 0.2 (a run at the
    floor in one draw of three) so that schedules reach it, outliers faster than the floor
    on some episodes, and node-scoped throttling."""
    monkeypatch.setattr(dynamics_module, "RUN_Z_FLOOR", -0.5)

    def dynamic(k: int, rng: np.random.Generator):
        options = VariabilityDynamics(
            run_variation=True, run_sigma=0.2, run_outlier_prob=float(rng.choice([0.0, 0.3])),
            run_outlier_ratio=float(rng.choice([0.8, 2.0])), throttle=True,
            throttle_start_prob=0.2, throttle_rounds=3,
            throttle_scope="node" if k % 3 else "gpu", seed=k)
        return preset("dynamic", dynamics=options, max_rounds=20_000)

    checked, _ = fuzz_the_bound(np.random.default_rng(7), 200, dynamic)
    assert checked >= 185


def fuzz_the_bound(rng: np.random.Generator, count: int, config_of) -> tuple[int, int]:
    """Assert the bound is at most the average JCT of each finished schedule over ``count``
    random small episodes (``config_of(k, rng)`` gives episode k's configuration), eight
    heuristics in turn; returns (episodes checked, episodes where the bound is attained)."""
    checked = tight = 0
    for k in range(count):
        cluster = ClusterSpec(int(rng.integers(1, 4)), int(rng.choice([1, 2, 4])))
        trace = random_trace(rng, int(rng.integers(1, 9)), cluster, max_submit_s=3000.0,
                             max_duration_s=3000.0, name=f"fuzz-{k}")
        profile = random_profile(rng, cluster.num_gpus)
        config = config_of(k, rng)
        episode = make_episode(trace, cluster=cluster, config=config, profile=profile, seed=k)
        policy, order = HEURISTICS[k % len(HEURISTICS)]
        result = run_episode(episode, policy=policy, queue_order=order)
        if result.metrics.truncated:
            continue
        bound = lower_bound(episode).avg_jct_s
        assert bound <= result.metrics.avg_jct_s * (1 + 1e-12), (k, policy, order)
        checked += 1
        tight += bound == result.metrics.avg_jct_s
    return checked, tight


HEURISTICS = (("pal", "fifo"), ("pal+backfill", "srtf"), ("packed-sticky", "las"),
              ("pm-first+easy", "srsf"), ("random-non-sticky+backfill", "fifo"),
              ("packed-non-sticky", "tiresias"), ("pal+easy", "fifo"),
              ("random-sticky", "srtf"))


def test_lower_bound_holds_on_1000_fuzzed_episodes():
    """The bound never exceeds the average JCT of a finished schedule (an invariant), over
    1,000 random small episodes of both static presets and eight heuristics in turn."""
    checked, tight = fuzz_the_bound(
        np.random.default_rng(2024), 1000,
        lambda k, rng: preset("default" if k % 2 else "pal-artifact", max_rounds=20_000))
    assert checked >= 950
    assert tight > 0  # the bound is attained on some episodes (e.g. a lone job)


def test_priority_order_by_submit_time_plays_fifo():
    path = bundled_trace_paths()["sia-philly-gen-0"]
    episode = make_episode(read_sia_trace(path), config=preset("default"))
    fifo = run_episode(episode, "packed-non-sticky+backfill", "fifo")
    order = np.argsort(episode.trace.submit_time_s, kind="stable")
    priority = run_episode(episode, "packed-non-sticky+backfill", PriorityOrder(rank_of(order)))
    assert priority.metrics == fifo.metrics


def test_hindsight_search_never_worse_than_its_start_and_replays():
    episode = toy_episode([1.0, 2.0, 1.0, 1.0], [(0.0, 1, 2 * R), (0.0, 2, 4 * R),
                                                   (0.0, 1, 0.5 * R), (10.0, 2, R)], nodes=2)
    result = hindsight_search(episode, evaluations=60, seed=0)
    assert result.avg_jct_s <= result.start_avg_jct_s
    assert replay_schedule(episode, result.schedule).metrics.avg_jct_s == result.avg_jct_s
    assert result.avg_jct_s >= lower_bound(episode).avg_jct_s
    again = hindsight_search(episode, evaluations=60, seed=0)
    assert again.avg_jct_s == result.avg_jct_s and again.order.tolist() == result.order.tolist()
