"""The heuristic loop's memo under a dynamic queue order (:class:`palgym.driver.rounds.
RoundMemo`): a round whose ranking equals the last placed round's, with no event since and no
change made then, skips the placement, and the episode is the same, bit for bit, as one that
places every round (the same policy declared non-deterministic, so the memo never applies)."""

from __future__ import annotations

import numpy as np
import pytest

from agents.priority.order import LinearPriorityOrder
from palgym import make_episode, preset
from palgym.driver.rounds import RoundMemo
from palgym.policies.base import IntArray, PlacementPolicy, Sampler, WrappedPlacement
from palgym.sim.views import SimView
from palgym.simulate import run_episode
from palgym.tracesets.manifest import split_traces
from palgym.tracesets.sets import job_range

RESPONSE_RATIO = LinearPriorityOrder((1.0, 0.0, -2.0, 0.0, 0.0))
"""(1 + remaining GPU-h) / (1 + hours queued)^2: its ranking changes between events."""


class Counting(WrappedPlacement):
    """Counts the placements asked for; as deterministic as the inner one."""

    def __init__(self, inner: PlacementPolicy) -> None:
        self.inner, self.calls = inner, 0

    def place(self, view: SimView, order: IntArray, sampler: Sampler) -> IntArray:
        self.calls += 1
        return self.inner.place(view, order, sampler)


class EveryRound(Counting):
    """The same placement declared non-deterministic: the loop places every round."""

    @property
    def deterministic(self) -> bool:
        return False


@pytest.mark.parametrize("placement", ["pal+backfill", "pal", "packed-non-sticky"])
def test_memo_under_a_dynamic_order_is_bit_identical(placement: str) -> None:
    trace = job_range(split_traces("bundled", "train")[0], 0, 40, "window")
    episode = make_episode(trace, config=preset("pal-artifact"), seed=3)
    kept, every = [], []

    def keep(inner: PlacementPolicy) -> PlacementPolicy:
        kept.append(Counting(inner))
        return kept[-1]

    def place_all(inner: PlacementPolicy) -> PlacementPolicy:
        every.append(EveryRound(inner))
        return every[-1]

    memo = run_episode(episode, placement, RESPONSE_RATIO, wrap_placement=keep)
    plain = run_episode(episode, placement, RESPONSE_RATIO, wrap_placement=place_all)
    assert memo.num_rounds == plain.num_rounds
    assert every[0].calls == plain.num_rounds  # placed every round
    assert 0 < kept[0].calls < every[0].calls  # the memo skipped some, not all
    for name in ("job_id", "first_start_time_s", "completion_time_s", "num_preemptions"):
        assert np.array_equal(getattr(memo.records, name), getattr(plain.records, name)), name
    assert memo.metrics == plain.metrics


def test_a_ranking_that_changes_without_an_event_is_placed() -> None:
    # J0 (4 GPUs, 10 h) and J1 (4 GPUs, 20 h) at t = 0 on one node of 4 GPUs. J0 (shorter)
    # runs first; J0's key stays ln(1 + 4 (10 - t)) (it does not queue), J1's falls as
    # ln(81) - 2 ln(1 + t): they cross at t ~ 0.43 h (81 / (1 + t)^2 = 41 - 4t), a round
    # with no event, and the non-sticky placement gives J1 the GPUs: J0 is preempted. A memo
    # that ignored the ranking would keep J0 running to its end (no preemption).
    from palgym import ClusterSpec
    from tests.toys import A, R, toy_profile, toy_trace

    episode = make_episode(toy_trace((4, 0.0, 36_000, A), (4, 0.0, 72_000, A)),
                           cluster=ClusterSpec(num_nodes=1, gpus_per_node=4),
                           config=preset("default", round_duration_s=R),
                           profile=toy_profile(4), seed=0)
    memo = run_episode(episode, "packed-non-sticky", RESPONSE_RATIO)
    plain = run_episode(episode, "packed-non-sticky", RESPONSE_RATIO,
                        wrap_placement=EveryRound)
    assert memo.records.num_preemptions[0] >= 1
    assert np.array_equal(memo.records.completion_time_s, plain.records.completion_time_s)
    assert np.array_equal(memo.records.num_preemptions, plain.records.num_preemptions)


def test_reset_forgets() -> None:
    memo = RoundMemo(True, np.arange(3))
    memo.reset()
    assert (memo.valid, memo.ranking) == (False, None)
