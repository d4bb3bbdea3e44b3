"""The stall detector's blocking proof for sticky placements (palgym.sim.blocking; PAL_MODEL
section 6, "Unfinished episodes", case 2): the prefix lemma it rests on, toys worked out by
hand where it must fire and where it must not (a job that completes late), and runs that
check each claim against the same episode run on to the round cap."""

from __future__ import annotations

import copy
import random

import numpy as np
import pytest
from toys import toy_profile, toy_trace

from palgym import read_sia_trace
from palgym.bundled import bundled_trace_paths
from palgym.policies import CLAIRVOYANT, make_placement, make_queue_order, make_sampler
from palgym.policies.base import PlacementPolicy, Sampler
from palgym.policies.slowdown import SlowdownFactors
from palgym.sim.blocking import PrefixBlocking
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import AttainedService, SimConfig, preset
from palgym.sim.engine import Simulator
from palgym.sim.stall import StallDetector
from palgym.sim.types import FREE, IntArray, JobStatus
from palgym.sim.views import SimView
from palgym.sim.workload import Trace
from palgym.simulate import (
    Episode,
    _runs_prefix,
    drive,
    make_episode,
    run_episode,
)

R = 10.0
NO_FACTORS: SlowdownFactors = None  # type: ignore[assignment]  # Packed / Random read none
EVERY_SECOND = 3.6e6  # background copies per hour: one arrival every 1 s exactly (ceil of < 1 s)


def _config(**options: object) -> SimConfig:
    """The default preset with the artifact's sticky rule and wall-clock LAS, R = 10 s."""
    return preset("default", round_duration_s=R, sticky_keep_victims_stopped=True,
                  las_service=AttainedService.WALL_CLOCK, **options)


def _endless_stream(threshold_s: float | None = None, max_rounds: int = 400) -> Episode:
    """One GPU; job 0 (100 s of work), job 1 (5 s); a copy every second from t = 1 s (copy k
    of row k mod 2). Round [0, 10): job 0 (admitted first, tie at 0 service). At t = 10 the
    copies of [1, 10] s arrive with 0 service: job 1 runs [10, 20) and completes at 20; from
    then on 10 copies with 0 service arrive per round and one runs, so job 0 (service 10 s)
    never runs again."""
    trace = toy_trace((1, 0.0, 100.0, 0), (1, 0.0, 5.0, 0))
    config = _config(background_jobs_per_hour=EVERY_SECOND, max_rounds=max_rounds,
                     starvation_threshold_s=threshold_s)
    return make_episode(trace, cluster=ClusterSpec(1, 1), config=config,
                        profile=toy_profile(1), seed=0)


def _drive(episode: Episode, policy: str, proof: bool, proof_every: int = 1
           ) -> tuple[Simulator, str]:
    """``run_episode``'s loop with a detector trying the proof every ``proof_every`` rounds
    (``proof``), or with no detector at all (to ``max_rounds``)."""
    sim = Simulator(episode.trace, episode.profile, episode.cluster, episode.config)
    stall = (StallDetector(sim, 3.0, None, prefix_order="las", proof_every=proof_every)
             if proof else None)
    placement = make_placement(policy, NO_FACTORS, episode.config)
    order = make_queue_order("las", CLAIRVOYANT, episode.config)
    rng = make_sampler(copy.deepcopy(episode.placement_rng))
    return sim, drive(sim, order, placement, rng, stall=stall)


@pytest.mark.parametrize("policy", ["packed-sticky", "random-sticky"])
def test_fires_behind_an_endless_stream(policy: str) -> None:
    # By hand, at t = 20 (round 2): job 0's level a = 10 s, bar (G - N_0) x a = 0; the 20
    # copies admitted have 0 service and deficits min(s, 10) = 10 s each (row 0: s = 100 s;
    # row 1: 5 s of work, a whole round of service), so L(0) = 200 > 0, and each later round
    # adds 10 arrivals (100) against 10 s of work: L stays > 0 up to the cap. At t = 10 job 1
    # (level 0) is not blocked: nothing has less service than it.
    sim, reason = _drive(_endless_stream(), policy, proof=True)
    assert sim.round_index == 2 and sim.now_s == 20.0
    assert reason.startswith("blocked: 1 of 2 measured jobs can never complete (none can be "
                             "placed again before the round cap (400)")
    assert sim.jobs.completion_time_s[1] == 20.0
    # the same episode run on to the cap: job 0 never ran again, no other measured completion
    capped, end = _drive(_endless_stream(), policy, proof=False)
    assert end == "max_rounds (400) reached" and capped.round_index == 400
    assert capped.jobs.attained_service_s[0] == 10.0
    np.testing.assert_array_equal(capped.records().completion_time_s,
                                  sim.records().completion_time_s)


def test_run_episode_tries_the_proof_every_100_rounds() -> None:
    result = run_episode(_endless_stream(), "random-sticky", "las")
    metrics = result.metrics
    assert result.num_rounds == 100 and metrics.end_time_s == 1000.0  # the first try after 2
    assert metrics.truncated and metrics.completed_text == "1/2"
    assert metrics.truncation_reason.startswith("blocked: 1 of 2")
    assert metrics.censored_avg_jct_s == (1000.0 + 20.0) / 2


def test_an_unpromoted_job_is_claimed_only_once_promoted() -> None:
    """Starvation threshold 50 s. Job 0 is preempted at t = 10 (its waiting reset), waits at
    the commits of 20..60 and is promoted at the commit at 60; by t = 70 copies 5..19 are
    promoted with 0 service (15 x 10 s of deficit), so the proof holds at round 7 and no
    earlier. Run on to the cap, job 0 never runs again: the copies promoted later keep
    coming ahead of it."""
    episode = _endless_stream(threshold_s=50.0)
    sim, reason = _drive(episode, "packed-sticky", proof=True)
    assert sim.round_index == 7 and reason.startswith("blocked: 1 of 2")
    assert sim.jobs.priority[0] == 1
    capped, _ = _drive(episode, "packed-sticky", proof=False)
    assert capped.jobs.attained_service_s[0] == 10.0 and capped.jobs.priority[0] == 1
    np.testing.assert_array_equal(capped.records().completion_time_s,
                                  sim.records().completion_time_s)


def _thirty_ahead() -> Simulator:
    """One GPU, no background: job 0 (100 s) runs [0, 10); jobs 1..30 (10 s each) arrive at
    5 s with 0 service and run one per round, [10, 20) to [300, 310); job 0 runs again from
    t = 310 and completes at 400. Returned at t = 10, before that placement."""
    trace = toy_trace((1, 0.0, 100.0, 0), *([(1, 5.0, 10.0, 0)] * 30))
    config = _config(max_rounds=1000)
    sim = Simulator(trace, toy_profile(1), ClusterSpec(1, 1), config)
    view = sim.view()
    order = make_queue_order("las", CLAIRVOYANT, config)
    placement = make_placement("packed-sticky", NO_FACTORS, config)
    sim.commit(placement.place(view, order.order(view), make_sampler(np.random.default_rng())))
    sim.advance()
    return sim


def test_the_bound_is_tight_on_a_job_that_completes_late() -> None:
    # At t = 10 (round 1): a = 10 s, bar 0, deficit ahead D = 30 x 10 = 300 GPU-s, no
    # arrivals: L(n) = 300 - 10 n > 0 exactly for the placements n = 0..29 (t = 10..300).
    # With the cap at round 31 those are all the placements left: proved. With the cap at 32
    # the placement at t = 310 is left too, where job 0 does run: not proved.
    sim = _thirty_ahead()
    assert sim.round_index == 1
    job = np.array([0])
    assert PrefixBlocking(sim, AttainedService.WALL_CLOCK, 31).blocked(job)
    assert not PrefixBlocking(sim, AttainedService.WALL_CLOCK, 32).blocked(job)
    assert not PrefixBlocking(sim, AttainedService.WALL_CLOCK, 200_000).blocked(job)
    # the run, with the detector trying the proof every round up to the default cap
    placement = make_placement("packed-sticky", NO_FACTORS, sim.config)
    stall = StallDetector(sim, 3.0, None, prefix_order="las", proof_every=1)
    order = make_queue_order("las", CLAIRVOYANT, sim.config)
    assert drive(sim, order, placement, make_sampler(np.random.default_rng()),
                 stall=stall) == ""
    assert sim.jobs.completion_time_s[0] == 400.0
    assert list(sim.jobs.completion_time_s[1:31]) == [20.0 + 10 * k for k in range(30)]


class PrefixChecked:
    """A placement wrapper asserting the prefix lemma at every placement: the jobs holding
    GPUs in the target are exactly the first k of the queue order."""

    def __init__(self, inner: PlacementPolicy) -> None:
        self.inner = inner
        self.name, self.sticky = inner.name, inner.sticky
        self.deterministic = inner.deterministic
        self.placements = 0
        self.cut_short = 0  # placements where some active job was left out

    def place(self, sim: SimView, order: IntArray, sampler: Sampler) -> IntArray:
        target = self.inner.place(sim, order, sampler)
        held = np.unique(target[target != FREE])
        assert sorted(order[: held.size].tolist()) == held.tolist()
        self.placements += 1
        self.cut_short += held.size < order.size
        return target


@pytest.mark.parametrize("policy", ["packed-sticky", "random-sticky"])
def test_prefix_lemma_on_the_artifact_preset(policy: str) -> None:
    """pal-artifact (victims stay stopped, no backfilling), LAS with its background stream,
    on the bundled test trace for 2,000 rounds."""
    config = preset("pal-artifact", max_rounds=2000)
    episode = make_episode(_bundled("sia-philly-gen-4"), cluster=ClusterSpec(16, 4),
                           config=config)
    placement = PrefixChecked(make_placement(policy, NO_FACTORS, config))
    sim = Simulator(episode.trace, episode.profile, episode.cluster, config)
    drive(sim, make_queue_order("las", CLAIRVOYANT, config), placement,  # type: ignore[arg-type]
          make_sampler(copy.deepcopy(episode.placement_rng)))
    assert placement.placements > 1000 and placement.cut_short > 100


def _bundled(name: str) -> Trace:
    return read_sia_trace(bundled_trace_paths()[name])


def test_no_proof_where_the_lemma_does_not_hold() -> None:
    """Victims given back (the default preset's sticky rule) or backfilling: a running job
    may keep its GPUs behind a blocked head, so the detector gets no proof (nor for
    non-sticky placements, which keep the overload test, or a non-LAS order)."""
    episode = _endless_stream()
    factors = NO_FACTORS
    restoring = episode.config.with_options(sticky_keep_victims_stopped=False)
    assert _runs_prefix(make_placement("packed-sticky", factors, episode.config))
    assert _runs_prefix(make_placement("random-sticky", factors, episode.config))
    assert not _runs_prefix(make_placement("packed-sticky", factors, restoring))
    assert not _runs_prefix(make_placement("random-sticky+backfill", factors, episode.config))
    assert not _runs_prefix(make_placement("packed-non-sticky", factors, episode.config))
    result = run_episode(make_episode(episode.trace, cluster=episode.cluster, config=restoring,
                                      profile=episode.profile), "packed-sticky", "las")
    assert result.metrics.truncation_reason == "max_rounds (400) reached"
    sim = Simulator(episode.trace, episode.profile, episode.cluster, episode.config)
    assert StallDetector(sim, 3.0, None, prefix_order="fifo")._blocking is None
    assert StallDetector(sim, 3.0, None, prefix_order="srtf")._blocking is None


def _random_episode(seed: int) -> Episode:
    """A small random sticky-LAS episode: 2 nodes x 2 GPUs, R = 60 s, 6 jobs, a background
    stream and, for some seeds, the starvation option."""
    rng = random.Random(seed)
    jobs = [(rng.choice((1, 1, 2, 4)), float(rng.randrange(0, 600, 30)),
             float(rng.randrange(30, 1500)), rng.randrange(4)) for _ in range(6)]
    jobs.sort(key=lambda job: job[1])
    config = preset("default", round_duration_s=60.0, sticky_keep_victims_stopped=True,
                    las_service=rng.choice(list(AttainedService)),
                    background_jobs_per_hour=rng.choice((1.0, 3.0, 10.0)),
                    background_seed=seed, max_rounds=300,
                    starvation_threshold_s=rng.choice((None, 600.0, 3000.0)))
    perfvar = np.array([[rng.uniform(0.9, 1.4) for _ in range(4)] for _ in range(4)])
    from palgym.sim.variability import VariabilityProfile

    return make_episode(toy_trace(*jobs), cluster=ClusterSpec(2, 2), config=config,
                        profile=VariabilityProfile("toy", perfvar), seed=seed)


def test_every_claim_holds_when_the_episode_is_run_on_to_the_cap() -> None:
    """A claim is that no unfinished measured job is placed again before the cap: run on to
    the cap (no detector), the episode must end unfinished with the same measured records,
    and none of those jobs may gain service. An episode that finishes must finish alike with
    the proof tried every round."""
    fired = finished = 0
    for seed in range(16):
        episode = _random_episode(seed)
        for policy in ("packed-sticky", "random-sticky"):
            sim, reason = _drive(episode, policy, proof=True)
            capped, end = _drive(episode, policy, proof=False)
            left = np.flatnonzero(capped.jobs.status[:6] != JobStatus.COMPLETED)
            if reason.startswith("blocked:"):
                fired += 1
                assert end == "max_rounds (300) reached"
                np.testing.assert_array_equal(
                    capped.jobs.attained_service_s[left], sim.jobs.attained_service_s[left])
            else:
                assert reason == end and sim.round_index == capped.round_index
                finished += end == ""
            np.testing.assert_array_equal(capped.records().completion_time_s,
                                          sim.records().completion_time_s)
    assert fired >= 3 and finished >= 3


def _holds_everywhere(start: float, steps: np.ndarray, deficits: np.ndarray, step_s: float,
                      bar: float, rounds_left: int) -> bool:
    """The bound tested at every placement, as the module's docstring states it."""
    joining = np.cumsum(np.bincount(steps, weights=deficits, minlength=rounds_left))
    work = np.arange(rounds_left) * step_s
    bound = start + joining - work
    return bool(np.all(bound > bar + 1e-9 * (np.abs(bound) + work + bar)))


@pytest.mark.parametrize("whole", [True, False])
def test_bound_tested_between_joinings_is_the_bound_tested_everywhere(whole: bool) -> None:
    from palgym.sim.blocking import bound_holds

    rng = np.random.default_rng(5 if whole else 6)
    outcomes = set()
    for _ in range(400):
        rounds_left = int(rng.integers(1, 60))
        steps = rng.integers(-3, rounds_left + 3, int(rng.integers(0, 14)))
        deficit = rng.integers(0, 40, steps.size) * 360.0
        start, step_s, bar = float(rng.integers(0, 200)) * 360.0, 4 * 360.0, 360.0 * 3
        if not whole:
            deficit, start = deficit + rng.random(steps.size), start + 0.5
        later = (steps > 0) & (steps < rounds_left)
        want = _holds_everywhere(start, steps[later], deficit[later], step_s, bar, rounds_left)
        assert bound_holds(start, steps, deficit, later, step_s, bar, rounds_left) == want
        outcomes.add(want)
    assert outcomes == {True, False}
