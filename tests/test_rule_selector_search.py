"""Policy-guided rollout search over rules (agents.selection.search): costs worked out by
hand on toys, the base's episode bit for bit when no rule beats it, the rollout improvement
property with exact costs, the real run undisturbed by the rollouts, and bad options."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from agents.selection.engine_copies import copy_context, copy_engine
from agents.selection.search import RolloutSearch, run_search_episode
from agents.selection.selector import LinearSelector
from palgym import ClusterSpec, make_episode, preset
from palgym.errors import ConfigError, InvalidActionError, PalgymError
from palgym.policies import make_placement, make_queue_order
from palgym.policies.durations import CLAIRVOYANT
from palgym.rule_selection import (
    SelectorContext,
    drive_selector,
    run_selected_episode,
    state_features,
)
from palgym.simulate import (
    Episode,
    episode_sampler,
    make_simulator,
    run_episode,
    slowdown_factors,
)
from palgym.tracesets.manifest import split_traces
from tests.toys import A, R, toy_profile, toy_trace

FIFO_SRTF = ["fifo/pal", "srtf/pal"]


def fifo(features: np.ndarray, view: object) -> int:
    """The constant base: rule 0."""
    return 0


def toy(*jobs: tuple[int, float, float, int], nodes: int = 1) -> Episode:
    """Toy jobs on ``nodes`` nodes of 4 GPUs, rounds of R = 100 s, T_it 1 s, all GPUs 1.0."""
    return make_episode(toy_trace(*jobs), cluster=ClusterSpec(num_nodes=nodes, gpus_per_node=4),
                        config=preset("default", round_duration_s=R),
                        profile=toy_profile(4 * nodes), seed=0)


def test_toy_exact_search_picks_srtf_by_hand() -> None:
    # 1 node x 4 GPUs; J0 (4 GPUs, 300 s) and J1 (4 GPUs, 100 s) submitted at 0; base FIFO.
    # First ask (t = 0), H = None (every later ask the base's, to the end):
    #   fifo/pal: J0 runs 0-300; at its completion (the next ask) FIFO runs J1 300-400:
    #             time in system 300 + 400 = 700 s;
    #   srtf/pal: J1 runs 0-100; at its completion FIFO runs J0 100-400: 100 + 400 = 500 s.
    # SRTF is cheaper. Second ask (t = 100): only J0 is left, both rules put it on the 4 GPUs,
    # so the pre-filter leaves the base's choice alone (no rollout). JCTs 400 and 100: avg 250.
    out = run_search_episode(toy((4, 0.0, 300, A), (4, 0.0, 100, A)), FIFO_SRTF, fifo, H=None)
    assert out.stats.costs[0] == ((0, 700.0), (1, 500.0))
    assert out.stats.choices == [1, 0] and out.stats.base_choices == [0, 0]
    assert (out.stats.asks, out.stats.searched, out.stats.rollouts) == (2, 1, 2)
    assert out.selected.result.records.jct_s.tolist() == [400.0, 100.0]
    assert out.selected.result.metrics.avg_jct_s == 250.0
    # without the pre-filter the second ask runs both rollouts: both play J0 100-400, a tie
    # (100 + 400 = 500 s each) that goes to the base
    plain = run_search_episode(toy((4, 0.0, 300, A), (4, 0.0, 100, A)), FIFO_SRTF, fifo,
                               H=None, prefilter=False)
    assert plain.stats.costs[1] == ((0, 500.0), (1, 500.0))
    assert plain.stats.choices == [1, 0] and plain.stats.rollouts == 4


@pytest.mark.parametrize(("estimate", "fifo_cost", "srtf_cost"),
                         [("queue", 1300.0, 1000.0), ("ideal", 1200.0, 800.0)])
def test_toy_horizon_estimates_by_hand(estimate: str, fifo_cost: float,
                                       srtf_cost: float) -> None:
    # J0 (300 s), J1 (100 s), J2 (200 s), each 4 GPUs of 4, submitted at 0; base FIFO; H = 0:
    # the rollout stops at the next ask, adding the estimate of the unfinished jobs.
    #   fifo/pal: J0 runs 0-300, stop at t = 300: J0's 300 + J1's and J2's 300 s each so far;
    #     queue: J1 (100 s) then J2 (200 s) on the 4 GPUs (SRTF order): 300-400, 400-600,
    #       so 100 + 300 more: 300 + 600 + 400 = 1300;  ideal: 100 + 200: 300 + 600 + 300 = 1200.
    #   srtf/pal: J1 runs 0-100, stop at t = 100: J1's 100 + 100 s each for J0 and J2;
    #     queue: J2 100-300, J0 300-600: 200 + 500 more: 100 + 200 + 700 = 1000;
    #     ideal: 200 + 300: 100 + 200 + 500 = 800.
    # At t = 100 (J0, J2 waiting) FIFO would run J0 100-400 and stop at 400 with J2 waiting
    # 400 s + 200 s left: 100 + 400 + 600 = 1100; SRTF runs J2 100-300 and stops at 300 with
    # J0 waiting 300 s + 300 s left: 100 + 300 + 600 = 1000 (one job left: both estimates).
    # The search plays SRTF's schedule: JCTs 600, 100, 300.
    episode = toy((4, 0.0, 300, A), (4, 0.0, 100, A), (4, 0.0, 200, A))
    out = run_search_episode(episode, FIFO_SRTF, fifo, H=0, estimate=estimate)
    assert out.stats.costs[:2] == [((0, fifo_cost), (1, srtf_cost)), ((0, 1100.0), (1, 1000.0))]
    assert out.stats.choices == [1, 1, 0]
    assert out.selected.result.records.jct_s.tolist() == [600.0, 100.0, 300.0]


def test_base_episode_when_every_rule_decides_as_the_base() -> None:
    # every job takes the whole cluster, so first-fit backfilling never finds a job that fits
    # beside FIFO's head: fifo/pal+backfill decides as fifo/pal at every round; with the
    # pre-filter off every ask runs both rollouts, every cost ties, and the base's episode is
    # played bit for bit
    episode = toy((4, 0.0, 300, A), (4, 50.0, 100, A), (4, 120.0, 200, A), (4, 130.0, 100, A))
    out = run_search_episode(episode, ["fifo/pal", "fifo/pal+backfill"], fifo, H=None,
                             prefilter=False)
    expected = run_episode(episode, "pal", "fifo")
    assert out.selected.result.metrics == expected.metrics
    np.testing.assert_array_equal(out.selected.result.records.completion_time_s,
                                  expected.records.completion_time_s)
    assert out.stats.rollouts == 2 * out.stats.asks > 0
    assert all(a[1] == b[1] for a, b in out.stats.costs) and out.stats.changed == 0


@pytest.fixture(scope="module")
def bundled() -> Episode:
    trace = split_traces("bundled", "train")[0]
    return make_episode(trace, config=preset("pal-artifact"), seed=0)


RULES = ["srtf/pal+backfill", "fifo/pal+easy", "srsf/pal"]


def test_only_the_base_tried_is_the_base_episode(bundled: Episode) -> None:
    out = run_search_episode(bundled, RULES, LinearSelector.constant(RULES, 0), H=3,
                             tried=["srtf/pal+backfill"])
    expected = run_episode(bundled, "pal+backfill", "srtf")
    assert out.selected.result.metrics == expected.metrics
    assert out.selected.result.num_rounds == expected.num_rounds
    np.testing.assert_array_equal(out.selected.result.records.completion_time_s,
                                  expected.records.completion_time_s)
    assert out.stats.rollouts == 0 and out.stats.asks == out.selected.choices


@pytest.mark.parametrize("rules", [RULES, [*RULES, "fifo/random-non-sticky"]])
def test_rollouts_do_not_disturb_the_real_run(bundled: Episode, rules: list[str]) -> None:
    # a random placement draws from the episode's stream: the rollouts and the pre-filter
    # must draw from copies of it (with this estimate the search plays the random rule)
    out = run_search_episode(bundled, rules, LinearSelector.constant(rules, 0), H=2,
                             estimate="queue")
    assert out.stats.changed > 0  # the search played other rules than the base's
    assert 3 in out.stats.choices or len(rules) == 3
    recorded = iter(out.stats.choices)
    replay = run_selected_episode(bundled, rules, lambda f, v: next(recorded))
    assert next(recorded, None) is None  # asked exactly as often
    assert replay.result.metrics == out.selected.result.metrics
    np.testing.assert_array_equal(replay.result.records.completion_time_s,
                                  out.selected.result.records.completion_time_s)
    assert replay.switches == out.selected.switches
    np.testing.assert_array_equal(replay.rule_rounds, out.selected.rule_rounds)
    stats = out.stats
    assert len(stats.decision_s) == stats.asks and stats.decision_max_s >= stats.decision_mean_s


@pytest.fixture(scope="module")
def dynamic() -> Episode:
    """40 jobs in the dynamic world, online belief with straggler migration: the belief
    refits and flags stragglers during the episode."""
    from palgym.policies.belief import BeliefMode, BeliefOptions
    from palgym.tracesets.sets import job_range

    trace = job_range(split_traces("bundled", "train")[0], 0, 40, "window")
    return make_episode(trace, config=preset("dynamic"), seed=1,
                        belief=BeliefOptions(BeliefMode.ONLINE, straggler_ratio=1.3))


def test_search_under_a_changing_belief(dynamic: Episode) -> None:
    rules = ["srsf/pal+backfill", "fifo/pal+easy", "srtf/pal"]
    base = LinearSelector.constant(rules, 0)
    alone = run_search_episode(dynamic, rules, base, H=3, tried=[rules[0]])
    expected = run_episode(dynamic, "pal+backfill", "srsf")
    assert alone.selected.result.metrics == expected.metrics
    assert alone.selected.result.refits == expected.refits > 0
    # rollouts copy the belief with the engine: the real run equals a replay of its choices
    out = run_search_episode(dynamic, rules, base, H=2, estimate="queue")
    assert out.stats.rollouts > 0 and out.stats.changed > 0
    recorded = iter(out.stats.choices)
    replay = run_selected_episode(dynamic, rules, lambda f, v: next(recorded))
    assert next(recorded, None) is None
    assert replay.result.metrics == out.selected.result.metrics
    assert replay.result.refits == out.selected.result.refits
    np.testing.assert_array_equal(replay.result.records.completion_time_s,
                                  out.selected.result.records.completion_time_s)


@pytest.mark.parametrize("mode", ["oracle", "online"])
def test_a_copy_mid_episode_continues_as_the_real_run(mode: str) -> None:
    # what a rollout copies (copy_context) must go on exactly as the real run does, the
    # belief's refits included: an oracle belief watches the copied engine's truth
    import copy

    from palgym.policies.belief import BeliefMode, BeliefOptions
    from palgym.tracesets.sets import job_range

    trace = job_range(split_traces("bundled", "train")[0], 0, 40, "window")
    episode = make_episode(trace, config=preset("dynamic"), seed=1,
                           belief=BeliefOptions(BeliefMode(mode)))
    rules = ["srsf/pal+backfill", "fifo/pal"]

    class Copier:
        def __init__(self) -> None:
            self.asks = 0
            self.copied: Any = None

        def start(self, context: SelectorContext) -> None:
            self.context = context

        def __call__(self, features: np.ndarray, view: object) -> int:
            self.asks += 1
            if self.asks == 5:
                self.copied = (copy_context(self.context), copy.deepcopy(self.context.orders))
            return 0

    copier = Copier()
    real = run_selected_episode(episode, rules, copier).result
    assert copier.copied is not None
    (sim, stall, sampler, shared), orders = copier.copied
    assert shared is not None
    drive_selector(sim, orders, shared.placements, fifo, sampler, CLAIRVOYANT, stall,
                   shared.on_event)
    np.testing.assert_array_equal(sim.records().completion_time_s,
                                  real.records.completion_time_s)
    assert shared.fit.refits == real.refits > 0


def random_toy(seed: int) -> Episode:
    """12 jobs of 1, 2, 4 or 8 GPUs on 2 nodes x 4 GPUs, 50-600 s, submitted over 0-500 s."""
    rng = random.Random(seed)
    jobs = sorted(((rng.choice((1, 2, 4, 8)), float(rng.randrange(0, 500)),
                    float(rng.randrange(50, 600)), A) for _ in range(12)),
                  key=lambda job: job[1])
    return toy(*jobs, nodes=2)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("base_rule", [0, 1])
def test_exact_search_is_never_worse_than_its_base(seed: int, base_rule: int) -> None:
    # rollout improvement (Bertsekas, Tsitsiklis & Wu 1997): with exact costs (H = None) the
    # search's total time in system is at most its base's
    episode = random_toy(seed)
    rules = ["fifo/pal", "srtf/pal+backfill", "srsf/pal+easy"]
    base = LinearSelector.constant(rules, base_rule)
    reference = run_selected_episode(episode, rules, base).result.metrics
    out = run_search_episode(episode, rules, base, H=None)
    metrics = out.selected.result.metrics
    assert metrics.num_completed == metrics.num_jobs == reference.num_completed
    assert metrics.avg_jct_s <= reference.avg_jct_s * (1 + 1e-12)
    # up to the first ask with two rules left the search played the base's choice, so that
    # ask's first rollout (the base's choice, then the base) is the base's whole episode
    searched = next(costs for costs in out.stats.costs if costs)
    assert searched[0][0] == base_rule
    assert searched[0][1] == pytest.approx(reference.avg_jct_s * reference.num_jobs, rel=1e-12)


def test_engine_copy_continues_identically(bundled: Episode) -> None:
    # drive srtf/pal+backfill to round 40, copy the engine and the stream, finish both: each
    # gives run_episode's records, so neither run disturbed the other
    placement = make_placement("pal+backfill", slowdown_factors(bundled), bundled.config)
    order = make_queue_order("srtf", CLAIRVOYANT, bundled.config)

    class Until:
        def check(self, sim: object) -> str:
            return "stop" if sim.round_index >= 40 else ""  # type: ignore[attr-defined]

    sim, sampler = make_simulator(bundled), episode_sampler(bundled)
    assert drive_selector(sim, [order], [placement], fifo, sampler, stall=Until())[0] == "stop"
    copy_sim, copy_sampler = copy_engine(sim, sampler)
    assert copy_sim.trace is sim.trace and copy_sim.jobs is not sim.jobs
    expected = run_episode(bundled, "pal+backfill", "srtf").records.completion_time_s
    for engine, stream in ((copy_sim, copy_sampler), (sim, sampler)):
        drive_selector(engine, [order], [placement], fifo, stream)
        np.testing.assert_array_equal(engine.records().completion_time_s, expected)


def test_bad_options() -> None:
    episode = toy((4, 0.0, 300, A), (4, 0.0, 100, A))
    with pytest.raises(ConfigError, match="-1"):
        RolloutSearch(FIFO_SRTF, fifo, H=-1)
    with pytest.raises(ConfigError, match="2.5"):
        RolloutSearch(FIFO_SRTF, fifo, H=2.5)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'fifo/pm-first'"):
        RolloutSearch(FIFO_SRTF, fifo, tried=["fifo/pm-first"])
    with pytest.raises(ConfigError, match="'exact'"):
        RolloutSearch(FIFO_SRTF, fifo, estimate="exact")
    with pytest.raises(ConfigError, match="start hook"):
        RolloutSearch(FIFO_SRTF, RolloutSearch(FIFO_SRTF, fifo))
    with pytest.raises(InvalidActionError, match="base selector returned 7"):
        run_search_episode(episode, FIFO_SRTF, lambda f, v: 7)
    with pytest.raises(ConfigError, match="3 rules, the episode 2"):
        run_selected_episode(episode, FIFO_SRTF, RolloutSearch([*FIFO_SRTF, "srsf/pal"], fifo))
    view = make_simulator(episode).view()
    with pytest.raises(PalgymError, match="not bound"):
        RolloutSearch(FIFO_SRTF, fifo)(state_features(view), view)
