"""Rule selection on the engine (palgym.rule_selection): a constant selector is its rule's
heuristic episode bit for bit, rules of different queue orders share one episode, the selector
is asked at events only, and its features are the documented ones, worked out by hand."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from palgym import ClusterSpec, make_episode, preset
from palgym.errors import ConfigError, InvalidActionError
from palgym.policies.durations import Durations
from palgym.rule_selection import (
    STATE_FEATURES,
    SelectorContext,
    check_rules,
    parse_rule,
    run_selected_episode,
    state_features,
)
from palgym.sim.stall import StallDetector
from palgym.simulate import Episode, make_simulator, run_episode
from palgym.tracesets.manifest import split_traces
from tests.toys import A, R, toy_profile, toy_trace


def toy_episode(belief: str = "oracle") -> Episode:
    """1 node of 4 GPUs, rounds of 100 s, T_it 1 s: J0 (4 GPUs, 300 s) and J1 (4 GPUs, 100 s),
    both submitted at t = 0. FIFO runs J0 then J1 (JCTs 300, 400); SRTF J1 then J0 (100,
    400)."""
    trace = toy_trace((4, 0.0, 300, A), (4, 0.0, 100, A))
    return make_episode(trace, cluster=ClusterSpec(num_nodes=1, gpus_per_node=4),
                        config=preset("default", round_duration_s=R),
                        profile=toy_profile(4), seed=0, belief=belief)


def test_toy_rules_by_hand() -> None:
    episode = toy_episode()
    assert run_episode(episode, "pal", "fifo").records.jct_s.tolist() == [300.0, 400.0]
    assert run_episode(episode, "pal", "srtf").records.jct_s.tolist() == [400.0, 100.0]
    for rule, jct in ((0, [300.0, 400.0]), (1, [400.0, 100.0])):
        selected = run_selected_episode(episode, ["fifo/pal", "srtf/pal"], lambda f, v, r=rule: r)
        assert selected.result.records.jct_s.tolist() == jct
        assert selected.switches == 0


def test_selector_is_asked_at_events_only() -> None:
    # FIFO at t = 0 starts J0. Nothing happens at t = 100 and 200 (SRTF would preempt J0 for
    # J1 there), so the selector is next asked at J0's completion (t = 300), where it picks
    # SRTF: J1 runs 300-400. JCTs 300 and 400, two calls, one switch.
    calls: list[tuple[float, np.ndarray]] = []

    def select(features: np.ndarray, view: object) -> int:
        calls.append((view.now_s, features.copy()))  # type: ignore[attr-defined]
        return 0 if len(calls) == 1 else 1

    selected = run_selected_episode(toy_episode(), ["fifo/pal", "srtf/pal"], select)
    assert selected.result.records.jct_s.tolist() == [300.0, 400.0]
    assert [t for t, _ in calls] == [0.0, 300.0]
    assert (selected.choices, selected.switches) == (2, 1)
    assert selected.rule_rounds.tolist() == [3, 1]
    # at t = 300 only J1 (4 GPUs, 100 s left) waits, since t = 0; the cluster is free
    expected = [math.log1p(300 / 3600), 1.0, math.log1p(100 / 3600), math.log(2) / 5, 1.0,
                1.0, math.log1p(300 / 3600)]
    np.testing.assert_allclose(calls[1][1], expected, rtol=1e-12)


def test_state_features_by_hand() -> None:
    view = make_simulator(toy_episode()).view()  # t = 0: both jobs queued, none waited yet
    features = state_features(view)
    assert features.shape == (len(STATE_FEATURES),) and features.dtype == np.float64
    # the longest wait is a tie at 0: the first queued job, J0 (4 of 4 GPUs, 300 s)
    expected = [0.0, 1.0, math.log1p(300 / 3600), math.log(3) / 5, 8 / 4, 1.0, 0.0]
    np.testing.assert_allclose(features, expected, rtol=1e-12)
    unknown = state_features(view, Durations(knowledge="unknown"))
    assert unknown[2] == 0.0 and np.array_equal(np.delete(unknown, 2), np.delete(features, 2))


@pytest.fixture(scope="module")
def bundled_episode() -> Episode:
    trace = split_traces("bundled", "train")[0]
    return make_episode(trace, config=preset("pal-artifact"), seed=0)


@pytest.mark.parametrize("rule", ["srtf/pal+backfill", "fifo/pal+easy", "srsf/pm-first",
                                  "fifo/packed-non-sticky+backfill"])
def test_constant_selector_is_the_heuristic_bit_for_bit(bundled_episode: Episode,
                                                        rule: str) -> None:
    rules = ["srtf/pal+backfill", "fifo/pal+easy", "srsf/pm-first",
             "fifo/packed-non-sticky+backfill"]
    index = rules.index(rule)
    selected = run_selected_episode(bundled_episode, rules, lambda f, v: index)
    order, _, placement = rule.partition("/")
    expected = run_episode(bundled_episode, placement, order)
    assert selected.result.metrics == expected.metrics
    assert selected.result.num_rounds == expected.num_rounds
    assert selected.result.episode_hash == expected.episode_hash
    np.testing.assert_array_equal(selected.result.records.completion_time_s,
                                  expected.records.completion_time_s)
    assert selected.switches == 0 and selected.rule_rounds.sum() == selected.rule_rounds[index]


def test_switching_selector_finishes_every_job(bundled_episode: Episode) -> None:
    # alternate the queue order at every call: every job still completes exactly once
    calls = [0]

    def alternate(features: np.ndarray, view: object) -> int:
        calls[0] += 1
        return calls[0] % 2

    selected = run_selected_episode(bundled_episode, ["srtf/pal+backfill", "fifo/pal+easy"],
                                    alternate)
    metrics = selected.result.metrics
    assert metrics.num_completed == metrics.num_jobs and not metrics.truncated
    assert selected.choices == calls[0] and selected.switches == calls[0] - 1


def test_bad_input() -> None:
    with pytest.raises(ConfigError, match="ORDER/PLACEMENT"):
        parse_rule("pal+backfill")
    with pytest.raises(ConfigError, match="ORDER/PLACEMENT"):
        parse_rule("sjf/pal")
    with pytest.raises(ConfigError, match="twice"):
        check_rules(["fifo/pal", "fifo/pal"])
    with pytest.raises(ConfigError, match="at least one"):
        check_rules([])
    with pytest.raises(InvalidActionError, match="not a rule index"):
        run_selected_episode(toy_episode(), ["fifo/pal", "srtf/pal"], lambda f, v: 2)


def test_start_hook_gets_the_episode_before_the_first_ask() -> None:
    events: list[object] = []

    class Hooked:
        def start(self, context: SelectorContext) -> None:
            events.append(context)

        def __call__(self, features: np.ndarray, view: object) -> int:
            events.append(view)
            return 1

    selected = run_selected_episode(toy_episode(), ["fifo/pal", "srtf/pal"], Hooked())
    context = events[0]
    assert isinstance(context, SelectorContext) and len(events) == 1 + selected.choices
    # the live engine of the episode, its two rules (in order), its stall detector
    assert all(view is context.sim.view() for view in events[1:])
    assert [o.name for o in context.orders] == ["fifo", "srtf"] and len(context.placements) == 2
    assert isinstance(context.stall, StallDetector) and context.sim.done
    assert selected.result.records.jct_s.tolist() == [400.0, 100.0]  # SRTF's, by hand above


@pytest.mark.parametrize("belief", ["online", "stale"])
def test_constant_selector_in_the_dynamic_world(belief: str) -> None:
    # one shared belief, refitted online: each rule alone is its heuristic's episode, refits
    # included (the dynamic preset's truth drifts, so an online belief refits)
    from palgym.tracesets.sets import job_range

    trace = job_range(split_traces("bundled", "train")[0], 0, 40, "window")
    episode = make_episode(trace, config=preset("dynamic"), seed=1, belief=belief)
    rules = ["srtf/pal+backfill", "fifo/pm-first"]
    for index, rule in enumerate(rules):
        selected = run_selected_episode(episode, rules, lambda f, v, i=index: i)
        order, _, placement = rule.partition("/")
        expected = run_episode(episode, placement, order)
        assert selected.result.metrics == expected.metrics
        assert (selected.result.refits, selected.result.belief) == (expected.refits,
                                                                    expected.belief)
        np.testing.assert_array_equal(selected.result.records.completion_time_s,
                                      expected.records.completion_time_s)
    if belief == "online":
        assert expected.refits > 0  # the case is not vacuous

        class Ahead:
            """A selector that simulates ahead gets the shared belief it must copy."""

            context: Any = None

            def start(self, context: Any) -> None:
                self.context = context

            def __call__(self, features: np.ndarray, view: object) -> int:
                return 0

        ahead = Ahead()
        selected = run_selected_episode(episode, rules, ahead)
        alone = run_episode(episode, "pal+backfill", "srtf")
        assert selected.result.metrics == alone.metrics
        shared = ahead.context.belief  # the belief the rules decide on, handed over
        assert shared is not None and shared.fit.refits == alone.refits > 0
    else:  # a belief that never changes is not handed over
        ahead = type("Ahead", (), {"start": lambda self, c: setattr(self, "context", c),
                                   "__call__": lambda self, f, v: 0})()
        run_selected_episode(episode, rules, ahead)
        assert ahead.context.belief is None
