"""Invariants after every event (docs/TESTING.md), over every policy, several seeds and options.

The engine is driven round by round exactly like ``run_episode`` (``palgym.testing.run_checked``)
with :class:`palgym.testing.InvariantChecker` called after every commit and every advance, and
the records are compared with ``run_episode``'s. Plus a hypothesis property test over random
small traces and tests showing the checker itself catches broken states.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from palgym.policies import PLACEMENT_NAMES, QUEUE_ORDER_NAMES, ClusterCountRule, SlowdownFactors
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import SimConfig, preset
from palgym.sim.engine import Simulator
from palgym.sim.types import FREE, JobStatus
from palgym.sim.variability import VariabilityProfile
from palgym.sim.workload import MODEL_ITERATION_TIME_S, Trace
from palgym.simulate import Episode, make_episode, run_episode, slowdown_factors
from palgym.testing import (
    InvariantChecker,
    check_sim_invariants,
    random_profile,
    random_trace,
    run_checked,
)

CLUSTER = ClusterSpec(4, 4)
CONFIGS: dict[str, SimConfig] = {
    "default": preset("default"),
    # The artifact's semantics (wall-clock LAS, nominal SRTF, victims kept stopped, random.Random
    # placement stream), background copies off so that every order terminates quickly.
    "pal-artifact": preset("pal-artifact", background_jobs_per_hour=0.0),
    # Every other option away from its default at once.
    "options": preset(
        "default", round_duration_s=300.0, restart_cost_s=60.0,
        locality_penalty_by_class=(1.16, 1.0, 1.0, 1.1), locality_rule="larger-than-node",
        las_service="wall-clock", srtf_remaining="nominal", pal_node_order="pandas-1.1",
        starvation_threshold_s=3600.0, packed_sticky_strict_total=True,
        tiresias_thresholds_gpu_s=(3600.0, 14400.0),
    ),
}
SEEDS = {"default": 0, "pal-artifact": 1, "options": 2}
# With packed_sticky_strict_total a job of exactly G GPUs (more than a node) can never be placed
# (see test_bad_input.py), so the "options" traces stop at 12 GPUs.
SIZES = {"default": None, "pal-artifact": None, "options": (1, 2, 3, 4, 8, 12)}


def make_random_episode(config_name: str) -> tuple[Episode, SlowdownFactors]:
    seed = SEEDS[config_name]
    rng = np.random.default_rng(seed)
    trace = random_trace(rng, 20, CLUSTER, max_submit_s=7200.0, max_duration_s=1800.0,
                         sizes=SIZES[config_name])
    profile = random_profile(rng, CLUSTER.num_gpus)
    episode = make_episode(trace, cluster=CLUSTER, config=CONFIGS[config_name], profile=profile,
                           seed=seed)
    return episode, slowdown_factors(episode)


_EPISODES: dict[str, tuple[Episode, SlowdownFactors]] = {}


def episode_for(config_name: str) -> tuple[Episode, SlowdownFactors]:
    if config_name not in _EPISODES:  # fit the slowdown factors once per configuration
        _EPISODES[config_name] = make_random_episode(config_name)
    return _EPISODES[config_name]


def check_round_arithmetic(episode: Episode, records: object) -> None:
    """Completions fall on round boundaries, after the submission's boundary, and no job runs
    faster than its ideal duration on the fastest GPU of its class (locality penalty >= 1)."""
    trace, r = episode.trace, episode.config.round_duration_s
    completion = records.completion_time_s  # type: ignore[attr-defined]
    start = records.first_start_time_s  # type: ignore[attr-defined]
    np.testing.assert_array_equal(np.mod(completion, r), 0.0)
    np.testing.assert_array_equal(np.mod(start, r), 0.0)
    assert (start >= np.ceil(trace.submit_time_s / r) * r).all()
    fastest = episode.profile.perfvar.min(axis=1)[trace.perf_class]
    fastest_run_s = trace.total_iterations * trace.iteration_time_s * fastest
    assert (completion - start >= fastest_run_s * (1 - 1e-12)).all()
    assert (completion > start).all()


@pytest.mark.parametrize("queue_order", QUEUE_ORDER_NAMES)
@pytest.mark.parametrize("policy", PLACEMENT_NAMES)
def test_invariants_after_every_event(policy: str, queue_order: str) -> None:
    for config_name in CONFIGS:
        episode, factors = episode_for(config_name)
        sim = run_checked(episode, policy, queue_order, factors)
        assert sim.done, f"{config_name}: not every job completed"
        # The checked loop is the same loop as run_episode: identical records.
        result = run_episode(episode, policy, queue_order, factors)
        for name in ("completion_time_s", "first_start_time_s", "num_preemptions"):
            np.testing.assert_array_equal(getattr(sim.records(), name),
                                          getattr(result.records, name), err_msg=name)
        # Independent of that shared loop: PAL_MODEL section 3 bounds every job's outcome.
        check_round_arithmetic(episode, result.records)
        assert result.metrics.num_completed == episode.trace.num_jobs
        metrics = result.metrics
        assert 0.0 < metrics.utilization_allocated <= 1.0
        assert 0.0 < metrics.utilization_effective
        # Makespan spans every JCT: last completion - first submission >= each job's JCT.
        assert metrics.makespan_s >= float(np.max(result.records.jct_s))


@pytest.mark.parametrize("policy", ["packed-sticky", "random-sticky", "pal"])
def test_invariants_with_background_jobs(policy: str) -> None:
    # The artifact's background copies (2 jobs / hour after the last trace arrival) grow the job
    # table while the episode runs; only trace jobs are measured. Small jobs keep the load light.
    rng = np.random.default_rng(7)
    cluster = ClusterSpec(2, 4)
    trace = Trace.from_columns(
        "light", job_id=np.arange(12), submit_time_s=np.sort(rng.integers(0, 3600, 12)),
        num_gpus=rng.choice([1, 2], 12), total_iterations=rng.integers(500, 20000, 12),
        iteration_time_s=[MODEL_ITERATION_TIME_S["resnet50"]] * 12, model=["resnet50"] * 12,
    )
    episode = make_episode(trace, cluster=cluster, config=preset("pal-artifact"),
                           profile=random_profile(rng, cluster.num_gpus))
    sim = run_checked(episode, policy, "fifo")
    assert sim.done
    assert sim.jobs.size > trace.num_jobs, "no background job was admitted"
    assert sim.records().job_id.tolist() == trace.job_id.tolist()


# --------------------------------------------------------------------------- hypothesis
MODELS = sorted(MODEL_ITERATION_TIME_S)
VALUES = [0.9, 1.0, 1.05, 1.3, 2.0]


@st.composite
def small_episodes(draw: st.DrawFn) -> tuple[Trace, ClusterSpec, np.ndarray, SimConfig]:
    cluster = ClusterSpec(draw(st.integers(1, 3)), draw(st.integers(1, 4)))
    num_jobs = draw(st.integers(1, 8))
    jobs = draw(st.lists(
        st.tuples(
            st.integers(1, cluster.num_gpus),  # num_gpus
            st.integers(0, 2000),  # submit time (s)
            st.integers(1, 3000),  # iterations
            st.sampled_from(MODELS),
        ),
        min_size=num_jobs, max_size=num_jobs,
    ))
    perfvar = np.array(draw(st.lists(st.sampled_from(VALUES), min_size=4 * cluster.num_gpus,
                                     max_size=4 * cluster.num_gpus))).reshape(4, -1)
    config = preset(
        draw(st.sampled_from(["default", "pal-artifact"])),
        round_duration_s=draw(st.sampled_from([60.0, 360.0])),
        locality_penalty=draw(st.sampled_from([1.0, 1.7, 3.0])),
        background_jobs_per_hour=0.0, max_rounds=20_000,
    )
    trace = Trace.from_columns(
        "hypothesis", job_id=list(range(num_jobs)), num_gpus=[j[0] for j in jobs],
        submit_time_s=[j[1] for j in jobs], total_iterations=[j[2] for j in jobs],
        iteration_time_s=[MODEL_ITERATION_TIME_S[j[3]] for j in jobs], model=[j[3] for j in jobs],
    )
    return trace, cluster, perfvar, config


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=small_episodes(),
    policy=st.sampled_from(PLACEMENT_NAMES),
    queue_order=st.sampled_from(QUEUE_ORDER_NAMES),
    seed=st.integers(0, 2**16),
)
def test_property_every_job_completes_no_faster_than_possible(
    case: tuple[Trace, ClusterSpec, np.ndarray, SimConfig], policy: str, queue_order: str,
    seed: int,
) -> None:
    trace, cluster, perfvar, config = case
    episode = make_episode(trace, cluster=cluster, config=config,
                           profile=VariabilityProfile("hypothesis", perfvar), seed=seed)
    factors = SlowdownFactors.fit(perfvar, ClusterCountRule.OUTLIERS)
    sim = run_checked(episode, policy, queue_order, factors)  # no double booking, etc.
    assert sim.done and not sim.truncated
    records = sim.records()
    assert np.isfinite(records.completion_time_s).all()
    # Lower bound: a round on any GPU set gives at most R / (T_it x min_g perfvar[c, g])
    # iterations (the locality penalty is >= 1), so the k rounds a job needs satisfy
    # k x R >= total x T_it x min perfvar, and JCT >= k x R since it is admitted at or after its
    # submission. Also every job runs at least one round.
    fastest = perfvar.min(axis=1)[records.perf_class]
    bound = trace.total_iterations * trace.iteration_time_s * fastest
    jct = records.jct_s
    assert (jct >= bound * (1 - 1e-9)).all()
    assert (jct >= config.round_duration_s).all()
    service = records.completion_time_s - records.first_start_time_s
    assert (service >= bound * (1 - 1e-9)).all()


# --------------------------------------------------------------------------- the checker
def fresh_sim() -> Simulator:
    # 1x4, J0 (2 GPUs, 300 s) and J1 (1 GPU, 100 s) at 0, J2 (1 GPU) at 500 s.
    trace = Trace.from_columns(
        "checker", job_id=[10, 11, 12], submit_time_s=[0.0, 0.0, 500.0], num_gpus=[2, 1, 1],
        total_iterations=[300.0, 100.0, 100.0], iteration_time_s=[1.0, 1.0, 1.0],
        model=["m", "m", "m"],
    )
    return Simulator(trace, VariabilityProfile.homogeneous(4), ClusterSpec(1, 4),
                     preset("default", round_duration_s=100.0))


def test_checker_accepts_a_valid_run() -> None:
    sim = fresh_sim()
    checker = InvariantChecker()
    checker.check(sim)
    sim.commit(np.array([0, 0, 1, FREE]))
    checker.check(sim)
    sim.advance()  # J1 completes at 100
    checker.check(sim)
    assert checker.num_checks == 3


def test_checker_catches_a_gpu_held_by_a_queued_job() -> None:
    sim = fresh_sim()
    sim.job_of_gpu[3] = 1  # J1 is queued, not running
    with pytest.raises(AssertionError, match="not RUNNING"):
        check_sim_invariants(sim)


def test_checker_catches_a_wrong_gang_size() -> None:
    sim = fresh_sim()
    sim.commit(np.array([0, 0, 1, FREE]))
    sim.job_of_gpu[1] = FREE  # J0 now holds 1 GPU but needs 2
    with pytest.raises(AssertionError, match="holds 1 GPUs, needs exactly 2"):
        check_sim_invariants(sim)


def test_checker_catches_a_completed_job_holding_gpus() -> None:
    sim = fresh_sim()
    sim.commit(np.array([0, 0, 1, FREE]))
    sim.advance()
    sim.job_of_gpu[3] = 1  # J1 completed at 100
    with pytest.raises(AssertionError, match="COMPLETED"):
        check_sim_invariants(sim)


def test_checker_catches_lost_progress_and_time_travel() -> None:
    sim = fresh_sim()
    checker = InvariantChecker()
    sim.commit(np.array([0, 0, 1, FREE]))
    sim.advance()
    checker.check(sim)
    sim.advance()
    sim.jobs.iterations_done[0] -= 150.0  # remaining work grows
    with pytest.raises(AssertionError, match="iterations_done of job index 0 decreased"):
        checker.check(sim)
    sim = fresh_sim()
    checker = InvariantChecker()
    sim.advance()
    checker.check(sim)
    sim.now_s = 0.0
    with pytest.raises(AssertionError, match="time went back"):
        checker.check(sim)


def test_checker_catches_a_wrong_penalty_and_early_admission() -> None:
    sim = fresh_sim()
    sim.commit(np.array([0, 0, 1, FREE]))
    sim.jobs.variability_penalty[0] = 0.5
    with pytest.raises(AssertionError, match="variability penalty"):
        check_sim_invariants(sim)
    sim = fresh_sim()
    sim.jobs.status[2] = JobStatus.QUEUED  # J2 arrives at 500 s, it is t = 0
    with pytest.raises(AssertionError, match="admitted before its submission"):
        check_sim_invariants(sim)


def test_checker_catches_a_bad_completion() -> None:
    sim = fresh_sim()
    sim.jobs.status[1] = JobStatus.COMPLETED  # with no work done
    with pytest.raises(AssertionError, match="completed after only 0.0 of 100.0"):
        check_sim_invariants(sim)
    assert math.isnan(sim.jobs.completion_time_s[1])
