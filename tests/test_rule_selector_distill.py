"""Distilling the rollout search into a linear selector (agents.selection.distill): the
labels of a toy worked out by hand, the logistic regression's decision mapped back to raw
features checked against scikit-learn's own predictions, and the command line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agents.selection.distill import NEVER, Labels, collect_labels, fit_selector
from agents.selection.runs import LabelledEpisode
from agents.selection.selector import LinearSelector, StarvationFloor
from palgym.errors import ConfigError
from palgym.rule_selection import STATE_FEATURES
from tests.test_rule_selector_search import FIFO_SRTF, toy
from tests.toys import A

F = len(STATE_FEATURES)
RULES = ("srtf/pal+backfill", "srtf/pal+easy", "fifo/pal+backfill", "fifo/pal+easy")


def test_toy_labels_by_hand() -> None:
    # the search's toy (tests/test_rule_selector_search.py): at t = 0 SRTF is cheaper (500 s
    # against FIFO's 700 s), so the search overrides the FIFO base; the second ask has one
    # rule left after the pre-filter and carries no label
    episode = LabelledEpisode("toy", "toy", toy((4, 0.0, 300, A), (4, 0.0, 100, A)))
    labels = collect_labels([episode, episode], LinearSelector.constant(FIFO_SRTF, 0), H=None)
    assert labels.choices.tolist() == [1, 1] and labels.changed.tolist() == [1, 1]
    assert labels.episode.tolist() == [0, 1]
    assert labels.features.shape == (2, F)
    # at t = 0 no job has queued yet: the first feature, ln(1 + max queued h), is 0
    assert labels.features[0, 0] == 0.0


def test_known_teacher_labels_by_hand() -> None:
    # the known-jobs toy (tests/test_known_jobs_search.py): J2 (submitted at 150 s) is not
    # known at t = 0, so the online teacher prices FIFO 700 s and SRTF 500 s there and
    # overrides the FIFO base, as the search that sees J2 does; the labels are the search's
    # choices at its searched asks
    from agents.selection.search import RolloutSearch
    from palgym.rule_selection import run_selected_episode

    episode = LabelledEpisode("toy", "toy", toy((4, 0.0, 300, A), (4, 0.0, 100, A),
                                                (4, 150.0, 50, A)))
    base = LinearSelector.constant(FIFO_SRTF, 0)
    labels = collect_labels([episode], base, H=None, arrivals="known")
    search = RolloutSearch(FIFO_SRTF, base, H=None, arrivals="known")
    run_selected_episode(episode.episode, FIFO_SRTF, search)
    searched = [c for c, costs in zip(search.stats.choices, search.stats.costs, strict=True)
                if len(costs) > 1]
    assert labels.choices.tolist() == searched and searched[0] == 1
    assert search.stats.costs[0] == ((0, 700.0), (1, 500.0))


def _labels(features: np.ndarray, choices: np.ndarray) -> Labels:
    zeros = np.zeros(len(choices), np.int64)
    return Labels(features, choices.astype(np.int64), zeros, zeros)


@pytest.mark.parametrize("classes", [(0, 3), (0, 1, 3)])
def test_fit_maps_the_regression_back_to_raw_features(classes: tuple[int, ...]) -> None:
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(5)
    features = rng.normal([2.0, 10.0, *([0.0] * (F - 2))], [1.0, 5.0, *([1.0] * (F - 2))],
                          (400, F))
    features[:, -1] = 3.0  # a constant feature: scale 1, no division by zero
    choices = np.array(classes)[np.digitize(features[:, 0], [1.5, 2.5][:len(classes) - 1])]
    selector = fit_selector(RULES, _labels(features, choices), C=1.0)
    # scikit-learn's own prediction on standardised features, independently
    mean, scale = features.mean(axis=0), features.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=1.0, max_iter=5000).fit((features - mean) / scale, choices)
    probe = rng.normal(2.0, 1.5, (200, F))
    probe[:, -1] = 3.0
    expected = model.predict((probe - mean) / scale)
    assert [selector(x) for x in probe] == expected.tolist()
    unlabelled = [r for r in range(len(RULES)) if r not in classes]
    assert all(selector.weights[r, -1] == NEVER for r in unlabelled)


def test_fit_edge_cases() -> None:
    features = np.zeros((3, F))
    single = fit_selector(RULES, _labels(features, np.array([2, 2, 2])), C=1.0)
    assert np.array_equal(single.weights, LinearSelector.constant(RULES, 2).weights)
    with pytest.raises(ConfigError, match="no labelled"):
        fit_selector(RULES, _labels(np.zeros((0, F)), np.array([], np.int64)), C=1.0)
    with pytest.raises(ConfigError, match="rule indices"):
        fit_selector(RULES, _labels(features, np.array([0, 1, 4])), C=1.0)
    with pytest.raises(ConfigError, match="C must"):
        fit_selector(RULES, _labels(features, np.array([0, 1, 1])), C=0.0)


def test_command_line_distills(tmp_path: Path) -> None:
    from agents.selection.cli import main
    from tests.bench_suites import tiny_suite

    field = ["srtf/pal+backfill", "fifo/pal+easy"]
    suite = str(tiny_suite(tmp_path, ["scheduling-clairvoyant"], window=12,
                           fields={"scheduling-clairvoyant": field}))
    base = LinearSelector.constant(field, 1).with_floor(StarvationFloor(6.0, 1))
    base_path = base.save(tmp_path / "base.json")
    output = tmp_path / "distilled.json"
    assert main(["distill", "--suite", suite, "--task", "scheduling-clairvoyant",
                 "--base", str(base_path), "--H", "end", "--arrivals", "known",
                 "--C", "0.1", "1", "--output", str(output)]) == 0
    data = json.loads(output.read_text())
    trained = data["trained"]
    assert trained["H"] is None and trained["arrivals"] == "known"
    assert trained["base"] == "base.json" and trained["C"] in (0.1, 1.0)
    assert len(trained["validation_objective"]) == 2
    assert sum(trained["rules_labelled"]) == trained["labelled_asks"]
    assert trained["train_traces"] == ["sia-philly-gen-0"]
    assert data["floor"] == {"hours": 6.0, "rule": "fifo/pal+easy"}  # the base's, kept
    assert trained["suite"] == suite and trained["task"] == "scheduling-clairvoyant"
    # a bad C is refused with status 2 and nothing written
    refused = tmp_path / "refused.json"
    assert main(["distill", "--suite", suite, "--task", "scheduling-clairvoyant",
                 "--base", str(base_path), "--C", "1", "-1", "--output", str(refused)]) == 2
    assert not refused.exists()
    for flag, bad in (("--H", "-1"), ("--H", "never"), ("--arrivals", "later")):
        with pytest.raises(SystemExit) as stop:
            main(["distill", "--suite", suite, "--base", str(base_path), flag, bad,
                  "--output", str(refused)])
        assert stop.value.code == 2
