"""The learned rule selector (agents.selection.selector, agents.selection.runs): its linear
choice worked out by hand, its file, the cross-entropy method on objectives whose optimum is
known, and its runs on bench episodes equal to the heuristics'."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from agents.selection.runs import CENSORED, run_many, selector_objective, split_episodes
from agents.selection.selector import (
    FORMAT,
    UNFINISHED_PENALTY,
    LinearSelector,
    log_ratio,
    train_cem,
)
from palgym.errors import ConfigError
from palgym.rule_selection import STATE_FEATURES

RULES = ("srtf/pal+backfill", "fifo/pal+easy")
F = len(STATE_FEATURES)


def test_linear_choice_by_hand() -> None:
    weights = np.zeros((2, F + 1))
    weights[0, -1] = 1.0  # base: score 1
    weights[1, 0], weights[1, -1] = 2.0, -7.0  # fifo/pal+easy: 2 x ln(1 + max queued h) - 7
    selector = LinearSelector(RULES, weights)
    below, above = np.zeros(F), np.zeros(F)
    below[0], above[0] = 3.9, 4.1  # 2 x 3.9 - 7 = 0.8 < 1; 2 x 4.1 - 7 = 1.2 > 1
    assert selector(below) == 0 and selector(above) == 1
    np.testing.assert_allclose(selector.scores(above), [1.0, 1.2])
    tie = np.zeros(F)
    tie[0] = 4.0  # both score 1: the lower index
    assert selector(tie) == 0
    assert LinearSelector.constant(RULES, 1)(above) == 1


def test_file_round_trip_and_refusals(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    selector = LinearSelector(RULES, rng.standard_normal((2, F + 1)))
    path = selector.save(tmp_path / "s.json", trained={"seed": 3})
    loaded = LinearSelector.load(path)
    assert loaded.rules == RULES and np.array_equal(loaded.weights, selector.weights)
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT and data["trained"] == {"seed": 3}
    for field, value, match in (("format", "other/1", "field format"),
                                ("features", ["x"], "field features"),
                                ("weights", [[1.0]], "field weights"),
                                ("weights", [[math.nan] * (F + 1)] * 2, "finite")):
        bad = tmp_path / f"bad-{field}.json"
        bad.write_text(json.dumps({**data, field: value}))
        with pytest.raises(ConfigError, match=match) as error:
            LinearSelector.load(bad)
        assert str(bad) in str(error.value)
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ConfigError, match="broken.json"):
        LinearSelector.load(tmp_path / "broken.json")
    with pytest.raises(ConfigError, match="ORDER/PLACEMENT"):
        LinearSelector(["pal"], np.zeros((1, F + 1)))


def test_log_ratio() -> None:
    assert log_ratio(200.0, 100.0, 0) == pytest.approx(math.log(2.0))
    assert log_ratio(50.0, 100.0, 3) == pytest.approx(math.log(0.5) + UNFINISHED_PENALTY)


def test_cem_finds_the_cheaper_rule() -> None:
    # The objective only asks which rule is chosen on an empty state (bias decides): rule 1
    # costs 0, rule 0 costs 1. Every elite sample then has bias_1 > bias_0, so does their
    # mean: once the elites all choose rule 1, the mean does.
    zeros = np.zeros(F)

    def objective(selectors: list[LinearSelector]) -> np.ndarray:
        return np.array([0.0 if s(zeros) == 1 else 1.0 for s in selectors])

    means, history = train_cem(RULES, objective, iterations=3, population=40, elite_frac=0.1,
                               seed=0)
    assert history.mean_objective[0] == 1.0  # the search starts at the base rule
    assert means[-1](zeros) == 1
    again, _ = train_cem(RULES, objective, iterations=3, population=40, elite_frac=0.1, seed=0)
    assert all(np.array_equal(a.weights, b.weights) for a, b in zip(means, again, strict=True))


def test_cem_refuses_bad_settings() -> None:
    def objective(selectors: list[LinearSelector]) -> np.ndarray:
        return np.zeros(len(selectors))

    with pytest.raises(ConfigError, match="population"):
        train_cem(RULES, objective, population=1)
    with pytest.raises(ConfigError, match="elite_frac"):
        train_cem(RULES, objective, elite_frac=0.0)


def test_runs_on_bench_episodes_equal_the_heuristics() -> None:
    # the lite suite's first training trace (bundled), its first 30-job window: a constant
    # selector's run is the rule's run, so the objective against that rule is exactly 0
    episode = split_episodes("train", suite="palgym-bench-v1-lite")[:1]
    assert episode[0].stratum == "palgym-bench-v1-lite"
    rules = [("rule", "srtf/pal+backfill", 0), ("rule", "fifo/pal+easy", 0)]
    heuristics = run_many(rules, episode)
    # every job completes here: the censored average equals the average over completed jobs
    assert heuristics[0, 1] == 0 and heuristics[0, CENSORED] == heuristics[0, 0]
    for index in (0, 1):
        selected = run_many([("selector", LinearSelector.constant(RULES, index), 0)], episode)
        assert selected[0, 0] == heuristics[index, 0] and selected[0, 1] == heuristics[index, 1]
    objective = selector_objective(episode, heuristics[:1, 0])
    values = objective([LinearSelector.constant(RULES, 0), LinearSelector.constant(RULES, 1)])
    assert values[0] == 0.0
    assert values[1] == pytest.approx(math.log(heuristics[1, 0] / heuristics[0, 0]))


def tiny_task(folder: Path) -> tuple[list[str], list[str]]:
    """A tiny suite's scheduling-clairvoyant task with a field of three rules (12-job windows
    of bundled traces): the field and the command line's ``--suite`` and ``--task``."""
    from tests.bench_suites import tiny_suite

    field = ["srtf/pal+backfill", "fifo/pal+easy", "srsf/pal"]
    suite = str(tiny_suite(folder, ["scheduling-clairvoyant"], window=12,
                           fields={"scheduling-clairvoyant": field}))
    return field, ["--suite", suite, "--task", "scheduling-clairvoyant"]


def test_command_line_trains_and_evaluates(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from agents.selection.cli import main

    field, common = tiny_task(tmp_path)
    output = tmp_path / "selector.json"
    assert main(["train", *common, "--output", str(output), "--iterations", "2",
                 "--population", "3", "--rules", "srtf/pal+backfill,fifo/pal+easy"]) == 0
    trained = json.loads(output.read_text())["trained"]
    assert trained["train_traces"] == ["sia-philly-gen-0"]
    assert trained["validation_traces"] == ["sia-philly-gen-3"]
    assert len(trained["validation_objective"]) == 2 and 1 <= trained["chosen_iteration"] <= 2
    assert trained["command"].startswith("python -m agents.selection train --suite ")
    # a constant selector of each field member: its test row is that member's, so the
    # validation-chosen best's ratio to itself is exactly 1 and nothing beats the hindsight best
    files = []
    for index in range(len(field)):
        path = tmp_path / f"constant-{index}.json"
        LinearSelector.constant(field, index).save(path)
        files.append(str(path))
    results = tmp_path / "results.json"
    assert main(["evaluate", *common, "--selector", *files, str(output), "--guard", "1",
                 "--pool", "constants", "--output", str(results)]) == 0
    data = json.loads(results.read_text())
    rows = {row["entry"]: row for row in data["rows"]}
    best = field.index(data["best"])
    assert rows[f"constant-{best}.json"]["geomean_vs_best"] == 1.0
    assert rows["hindsight best of the field"]["geomean_vs_hindsight"] == 1.0
    assert all(row["geomean_vs_hindsight"] >= 1.0 for row in data["rows"])
    assert "validation-chosen best" in capsys.readouterr().out
    # pooled over 4 "seeds": the constants and the trained one, one test trace: no interval
    assert data["pooled"]["seeds"] == 4 and len(data["pooled"]["geomean"]) == 3
    ratios = [rows[f"constant-{i}.json"]["geomean_vs_best"] for i in range(3)]
    ratios.append(rows["selector.json"]["geomean_vs_best"])
    assert data["pooled"]["geomean"][0] == pytest.approx(math.exp(np.mean(np.log(ratios))))
    assert "guard 1 h: srtf/pal+backfill -> fifo/pal+easy" in rows
    assert main(["evaluate", *common, "--selector", str(tmp_path / "missing.json")]) == 2


def test_guard_by_hand() -> None:
    guard = LinearSelector.guard(RULES, 4.0, 1)
    features = np.zeros(F)
    for hours, rule in ((3.9, 0), (4.0, 0), (4.1, 1)):  # at exactly 4 h: a tie, the base
        features[0] = math.log1p(hours)
        assert guard(features) == rule
    with pytest.raises(ConfigError, match="guard"):
        LinearSelector.guard(RULES, 0.0, 1)
    with pytest.raises(ConfigError, match="guard"):
        LinearSelector.guard(RULES, 4.0, 0)


def test_floor_overrides_the_scores_by_hand(tmp_path: Path) -> None:
    # scores prefer rule 1 everywhere; the floor (2 h, rule 0) takes over strictly above
    # ln(1 + 2) = ln 3 of the first feature, whatever the scores
    from agents.selection.selector import StarvationFloor

    weights = np.zeros((2, F + 1))
    weights[1, -1] = 5.0
    floored = LinearSelector(RULES, weights, StarvationFloor(2.0, 0))
    features = np.zeros(F)
    for hours, rule in ((1.9, 1), (2.0, 1), (2.1, 0), (100.0, 0)):
        features[0] = math.log1p(hours)
        assert floored(features) == rule
    # the file keeps the floor (its rule by name) and reads back equal
    path = floored.save(tmp_path / "floored.json")
    assert json.loads(path.read_text())["floor"] == {"hours": 2.0, "rule": RULES[0]}
    loaded = LinearSelector.load(path)
    assert loaded.floor == StarvationFloor(2.0, 0)
    # a /1 file (no floor key) is read as a selector without floor
    data = json.loads(path.read_text())
    old = {key: value for key, value in data.items() if key != "floor"}
    (tmp_path / "old.json").write_text(json.dumps({**old, "format": "palgym-rule-selector/1"}))
    assert LinearSelector.load(tmp_path / "old.json").floor is None
    for floor, match in (({"hours": 2.0, "rule": "las/pal"}, "field floor"),
                         ({"hours": -1.0, "rule": RULES[0]}, "finite number > 0"),
                         ({"hours": True, "rule": RULES[0]},
                          "field .floor.hours.: must be a number"),
                         ({"hours": 2.0}, "field floor")):
        bad = tmp_path / "bad-floor.json"
        bad.write_text(json.dumps({**data, "floor": floor}))
        with pytest.raises(ConfigError, match=match) as error:
            LinearSelector.load(bad)
        assert str(bad) in str(error.value)
    with pytest.raises(ConfigError, match="floor"):
        LinearSelector(RULES, weights, StarvationFloor(2.0, 2))
    for hours, rule in ((math.inf, 0), (0.0, 0), (2.0, RULES[0]), (2.0, True)):
        with pytest.raises(ConfigError, match="floor: "):
            StarvationFloor(hours, rule)  # type: ignore[arg-type]
    assert StarvationFloor(8.0, 1).describe(RULES) == "8 h -> fifo/pal+easy"
    # a /1 file cannot carry a floor
    old_floor = {**data, "format": "palgym-rule-selector/1"}
    (tmp_path / "old-floor.json").write_text(json.dumps(old_floor))
    with pytest.raises(ConfigError, match="has no floor"):
        LinearSelector.load(tmp_path / "old-floor.json")
    # the guard is the base's constant selector under a floor
    guard = LinearSelector.guard(RULES, 2.0, 1)
    assert guard.floor == StarvationFloor(2.0, 1) and guard(np.zeros(F)) == 0


def test_command_line_floors_and_run_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from agents.selection.cli import main
    from agents.selection.runs import code_fingerprint

    field, common = tiny_task(tmp_path)
    trained = tmp_path / "trained.json"
    assert main(["train", *common, "--output", str(trained), "--iterations", "1",
                 "--population", "2", "--rules", "srtf/pal+backfill,fifo/pal+easy",
                 "--floor", "3", "--floor-rule", "fifo/pal+easy"]) == 0
    assert json.loads(trained.read_text())["floor"] == {"hours": 3.0, "rule": "fifo/pal+easy"}
    # `floor` adds a floor to a file without one, recording where it came from
    constant = LinearSelector.constant(field, 0).save(tmp_path / "constant-0.json",
                                                      trained={"seed": 7})
    floored = tmp_path / "floored.json"
    assert main(["floor", "--selector", str(constant), "--hours", "0.5",
                 "--chosen-on", "a test", "--output", str(floored)]) == 0
    data = json.loads(floored.read_text())
    assert data["floor"] == {"hours": 0.5, "rule": "fifo/pal+easy"}
    assert data["trained"] == {"seed": 7} and data["floor_added"]["from"] == "constant-0.json"
    assert main(["floor", "--selector", str(floored), "--hours", "1", "--chosen-on", "x",
                 "--output", str(tmp_path / "twice.json")]) == 2
    # evaluate --floor refuses a file that has one too (it would replace it silently)
    assert main(["evaluate", *common, "--selector", str(floored), "--floor", "2"]) == 2
    assert "already has a floor (0.5 h -> fifo/pal+easy)" in capsys.readouterr().err
    assert main(["floor", "--selector", str(constant), "--hours", "1", "--rule", "las/pal",
                 "--chosen-on", "x", "--output", str(tmp_path / "other.json")]) == 2
    # the constant base under a 0.5 h floor to fifo/pal+easy decides as the 0.5 h guard
    # does, so their rows agree; a second call reads every run from the cache
    cache = tmp_path / "runs"
    outputs = []
    for name in ("first.json", "second.json"):
        outputs.append(tmp_path / name)
        assert main(["evaluate", *common, "--selector", str(constant), "--floor", "0.5",
                     "--guard", "0.5", "--run-cache", str(cache),
                     "--output", str(outputs[-1])]) == 0
        if len(outputs) == 1:  # mark every cached row: a reused row shows the mark
            for row_file in cache.glob("*.json"):
                row = json.loads(row_file.read_text())
                row[CENSORED] += 0.25
                row_file.write_text(json.dumps(row))
    rows = {row["entry"]: row for row in json.loads(outputs[0].read_text())["rows"]}
    guard = rows["guard 0.5 h: srtf/pal+backfill -> fifo/pal+easy"]
    assert rows["constant-0.json + floor 0.5 h"]["per_trace"] == guard["per_trace"]
    again = {row["entry"]: row for row in json.loads(outputs[1].read_text())["rows"]}
    for entry in ("constant-0.json + floor 0.5 h", "constant-0.json"):
        (first,), (second,) = (r[entry]["per_trace"].values() for r in (rows, again))
        assert second["censored_avg_jct_s"] == first["censored_avg_jct_s"] + 0.25
    # the field (3 rules) and the three selectors on one validation and one test episode
    assert len(list(cache.glob("*.json"))) == 3 * 2 + 3 * 2
    # other code (another fingerprint) reuses nothing
    monkeypatch.setattr("agents.selection.runs._FINGERPRINT", ["0" * 16])
    assert main(["evaluate", *common, "--selector", str(constant), "--run-cache", str(cache),
                 "--output", str(outputs[1])]) == 0
    fresh = {row["entry"]: row for row in json.loads(outputs[1].read_text())["rows"]}
    assert fresh["constant-0.json"]["per_trace"] == rows["constant-0.json"]["per_trace"]
    assert len(list(cache.glob("*.json"))) == 2 * (3 * 2 + 3 * 2) - 2 * 2
    # a cached row that is not one is refused, naming its file
    capsys.readouterr()
    for content, message in (("[1.0, 2.0]", "a cached run is a list of 6 numbers"),
                             ("{", "not a cached run")):
        for bad in cache.glob("*.json"):
            bad.write_text(content)
        assert main(["evaluate", *common, "--selector", str(constant), "--run-cache",
                     str(cache)]) == 2
        error = capsys.readouterr().err
        assert message in error and str(cache) in error
    assert len(code_fingerprint()) == 16
