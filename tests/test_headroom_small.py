"""The shipped small-instance suite (palgym/data/small): every stored schedule replays through
the engine to exactly the stored optimum, the stored bounds are ordered as they must be, and
CP-SAT re-derives an optimum (skipped without the exact extra)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from palgym.headroom import lower_bound
from palgym.headroom.small import small_instance
from palgym.headroom.suite import read_suite, split_of
from palgym.schedule_record import replay_schedule

SUITE = read_suite()
INSTANCES = SUITE["instances"]
HAS_ORTOOLS = importlib.util.find_spec("ortools") is not None


def test_suite_size_and_splits():
    optimal = [item for item in INSTANCES if item["status"] == "optimal"]
    assert len(optimal) >= 50
    splits = {split_of(item["seed"]) for item in optimal}
    assert splits == {"train", "validation", "test"}
    assert all(item["split"] == split_of(item["seed"]) for item in INSTANCES)


@pytest.mark.parametrize("item", INSTANCES, ids=[item["name"] for item in INSTANCES])
def test_stored_schedule_replays_to_the_stored_value(item):
    instance = small_instance(item["seed"])
    episode = instance.episode()
    assert episode.episode_hash() == item["episode_hash"]
    replayed = replay_schedule(episode, item["schedule"])
    assert not replayed.metrics.truncated
    assert replayed.metrics.avg_jct_s == item["optimum_avg_jct_s"]
    # every bound below every schedule: lower bound <= solver bound <= optimum <= search
    bound = lower_bound(episode).avg_jct_s
    assert bound == item["lower_bound_avg_jct_s"]
    assert bound <= item["solver_lower_bound_s"] * (1 + 1e-9)
    assert item["solver_lower_bound_s"] <= item["optimum_avg_jct_s"] * (1 + 1e-9)
    assert item["optimum_avg_jct_s"] <= item["search_avg_jct_s"] <= (
        item["best_heuristic_avg_jct_s"])
    if item["status"] == "optimal":
        assert item["solver_lower_bound_s"] == pytest.approx(item["optimum_avg_jct_s"],
                                                             rel=1e-9)


@pytest.mark.skipif(not HAS_ORTOOLS, reason="needs OR-Tools: pip install -e '.[exact]'")
def test_cp_sat_rederives_two_optima():
    from palgym.headroom.exact import solve_exact

    easy = [item for item in INSTANCES if item["status"] == "optimal"
            and item["solver_wall_s"] < 1.0 and item["num_jobs"] >= 8][:2]
    assert easy
    for item in easy:
        result = solve_exact(small_instance(item["seed"]).episode(), time_limit_s=60.0)
        assert result.status == "optimal"
        assert result.avg_jct_s == item["optimum_avg_jct_s"]


@pytest.mark.skipif(not HAS_ORTOOLS, reason="needs OR-Tools: pip install -e '.[exact]'")
def test_cp_sat_optimum_of_a_hand_worked_toy():
    """Two 1-GPU jobs of 2 ideal rounds at t = 0 on GPUs of speed 1 and 1/2: one runs on the
    fast GPU and ends at round 2; the other gets 2 x 1/2 on the slow one, then the fast one
    for its last round, ending at round 3. No schedule does better (both ending at 2 needs
    the fast GPU twice at once): average JCT (2 + 3) / 2 x 360 s = 900 s."""
    from palgym.headroom.exact import solve_exact
    from tests.test_headroom import toy_episode

    episode = toy_episode([1.0, 2.0], [(0.0, 1, 720.0), (0.0, 1, 720.0)])
    result = solve_exact(episode, time_limit_s=30.0)
    assert result.status == "optimal" and result.avg_jct_s == 900.0
    assert replay_schedule(episode, result.schedule).metrics.avg_jct_s == 900.0


def test_search_reaches_the_optimum_on_most_instances():
    """The hindsight search's stored values: within 1% of the proven optimum on >= 90% of the
    proven instances (the suite's figure, docs/RESULTS.md)."""
    optimal = [item for item in INSTANCES if item["status"] == "optimal"]
    within = [item for item in optimal
              if item["search_avg_jct_s"] <= 1.01 * item["optimum_avg_jct_s"]]
    assert len(within) >= 0.9 * len(optimal)


def test_search_reproduces_its_stored_value():
    from palgym.headroom.search import hindsight_search

    evaluations = SUITE["search"]["evaluations"]
    for item in INSTANCES[:2]:
        result = hindsight_search(small_instance(item["seed"]).episode(),
                                  evaluations=evaluations, seed=SUITE["search"]["seed"])
        assert result.avg_jct_s == item["search_avg_jct_s"]
        assert np.isfinite(result.avg_jct_s)
