"""Heuristic names everywhere (``[ORDER/]PLACEMENT[+SUFFIX]``), the ``best`` contender chosen on
the selection split (never on test), and the per-episode figures of ``--best-heuristic --json``.

Small: the bundled set, 6-job windows of the scheduling env, two seeds.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest

from agents.evaluation.names import BEST, HeuristicName, parse_heuristic
from evaluate import main
from palgym.errors import ConfigError
from palgym.policies import PLACEMENT_NAMES

ENV = ["--env", "palgym/PALScheduling-v0", "--trace-set", "bundled", "--window", "6",
       "--seeds", "0", "1", "--quiet", "--bootstrap-resamples", "50"]
FIELD = ["fifo/pal", "srsf/pal+backfill", "las/packed-non-sticky+easy"]


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _geomean(values: list[float]) -> float:
    """exp(mean(log v)), written out here (not the code under test)."""
    return math.exp(sum(math.log(v) for v in values) / len(values))


# ------------------------------------------------------------------ parsing
@pytest.mark.parametrize(("text", "expected"), [
    ("pal", HeuristicName(None, "pal", "none")),
    ("pal+backfill", HeuristicName(None, "pal", "first-fit")),
    ("srsf/pal+backfill", HeuristicName("srsf", "pal", "first-fit")),
    ("las/pm-first+easy", HeuristicName("las", "pm-first", "easy")),
    ("tiresias/packed-non-sticky", HeuristicName("tiresias", "packed-non-sticky", "none")),
])
def test_names_parse_and_print_back(text: str, expected: HeuristicName) -> None:
    assert parse_heuristic(text) == expected
    assert expected.label == text


@pytest.mark.parametrize(("text", "message"), [
    ("lifo/pal", "--policy 'lifo/pal': unknown queue order 'lifo'"),
    ("srsf/fastest", "--policy 'srsf/fastest': unknown placement 'fastest'"),
    ("pal+conservative", "--policy 'pal+conservative': unknown placement 'pal+conservative'"),
    ("pal+easy+backfill", "unknown placement 'pal+easy'"),
    ("/pal", "unknown queue order ''"),
])
def test_bad_names_name_the_argument_and_value(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match="expected .ORDER/.PLACEMENT") as caught:
        parse_heuristic(text, "--policy")
    assert message in str(caught.value)


@pytest.mark.parametrize(("args", "message"), [
    (["--policy", "lifo/pal"], "argument --policy: 'lifo/pal': unknown queue order 'lifo'"),
    (["--reference", "srsf/pal+bf"], "argument --reference: 'srsf/pal+bf': unknown placement"),
    (["--baseline", "x"], "argument --baseline: 'x': unknown placement 'x'"),
    (["--best-field", BEST], "argument --best-field: 'best': unknown placement"),
])
def test_cli_refuses_bad_names(args: list[str], message: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(args)
    assert caught.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [
    (["--policy", "srsf/pal"], "--policy 'srsf/pal': here queue orders come from --queue-order"),
    (["--policy", BEST], "--policy 'best' is a side-by-side contender"),
    (["--policy", "pal+easy", "--backfill", "first-fit"], "--policy 'pal+easy' names its backfill"),
    (["--baseline", "las/pal"], "--baseline 'las/pal': here queue orders come from"),
    ([*ENV, "--policy", "pal", "--best-field", "fifo/pal"], "--best-field is the field 'best'"),
    ([*ENV, "--policy", BEST, "--best-field", "pal"], "--best-field 'pal': a combination of the "
                                                      "field names its queue order"),
    ([*ENV, "--best-heuristic", "--policy", "srsf/pal"], "--policy 'srsf/pal': here queue"),
    ([*ENV, "--queue-order", "fifo", "las"], "--policy srsf/pal+backfill las/pm-first+easy"),
])
def test_names_where_they_cannot_apply_exit_2(args: list[str], message: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 2
    assert message in capsys.readouterr().err


# ------------------------------------------------------------------ no choice on test
@pytest.mark.parametrize(("args", "message"), [
    (["--policy", BEST, "--selection-split", "test", "--split", "test"],
     "both 'test': the best heuristic must be chosen on other traces"),
    (["--policy", "pal", "--reference", BEST, "--selection-split", "test", "--split",
      "validation"], "never chosen on the test split"),
    (["--best-heuristic", "--selection-split", "test", "--split", "validation"],
     "never chosen on the test split"),
])
def test_no_choice_is_made_on_the_test_split(args: list[str], message: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ENV, *args]) == 2
    assert message in capsys.readouterr().err


def test_best_needs_trace_set_splits(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--env", "palgym/PALScheduling-v0", "--trace", "sia-philly-gen-4", "--window",
                 "6", "--seeds", "0", "--policy", BEST, "--quiet"]) == 2
    assert "give --trace-set (not --trace)" in capsys.readouterr().err


# ------------------------------------------------------------------ side by side
def test_every_combination_runs_side_by_side_on_identical_episodes(tmp_path: Path) -> None:
    out = tmp_path / "episodes.csv"
    assert main([*ENV, "--policy", "srsf/pal+backfill", "las/pm-first+easy", "pal+easy",
                 "--reference", "tiresias/pal", "--baseline", "fifo/packed-non-sticky+backfill",
                 "--output", str(out)]) == 0
    rows = _rows(out)
    labels = list(dict.fromkeys(r["policy"] for r in rows))
    # the requested ones, then the baseline, with the reference first
    assert labels == ["tiresias/pal", "srsf/pal+backfill", "las/pm-first+easy", "pal+easy",
                      "fifo/packed-non-sticky+backfill"]
    by_episode: dict[tuple[str, str], set[str]] = {}
    for row in rows:
        by_episode.setdefault((row["trace"], row["seed"]), set()).add(row["episode_hash"])
    assert len(by_episode) == 2 and all(len(h) == 1 for h in by_episode.values())
    reference = {(r["trace"], r["seed"]): float(r["censored_avg_jct_s"]) for r in rows
                 if r["policy"] == "tiresias/pal"}
    for row in rows:
        ratio = float(row["censored_avg_jct_s"]) / reference[(row["trace"], row["seed"])]
        assert float(row["ratio_vs_reference"]) == pytest.approx(ratio)


def _best_json(tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "best.json"
    assert main([*ENV, "--best-heuristic", "--best-field", *FIELD, "--json", str(out)]) == 0
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def test_best_heuristic_json_recomputes_from_the_episodes(tmp_path: Path) -> None:
    data = _best_json(tmp_path)
    assert [r["label"] for r in data["rows"]] == FIELD
    # each episode's avg JCT equals the side-by-side run's on the same episodes
    side = tmp_path / "side.csv"
    assert main([*ENV, "--split", "validation", "--policy", *FIELD, "--reference", FIELD[0],
                 "--baseline", FIELD[0], "--output", str(side)]) == 0
    figures = {(r["policy"], r["trace"], int(r["seed"])): (float(r["censored_avg_jct_s"]),
                                                          r["episode_hash"])
               for r in _rows(side)}
    scores = {}
    for row in data["rows"]:
        episodes = row["selection_episodes"]
        assert [e["seed"] for e in episodes] == [0, 1]
        assert all(e["num_completed"] == e["num_jobs"] == 6 and not e["truncated"]
                   for e in episodes + row["evaluation_episodes"])
        for e in episodes:
            avg, episode_hash = figures[(row["label"], e["trace"], e["seed"])]
            assert (e["avg_jct_s"], e["episode_hash"]) == (pytest.approx(avg, rel=1e-12),
                                                           episode_hash)
        scores[row["label"]] = _geomean([e["avg_jct_s"] for e in episodes])
        assert row["selection_geomean_avg_jct_s"] == pytest.approx(scores[row["label"]],
                                                                   rel=1e-12)
        assert row["evaluation_geomean_avg_jct_s"] == pytest.approx(
            _geomean([e["avg_jct_s"] for e in row["evaluation_episodes"]]), rel=1e-12)
    assert data["winner"] == min(scores, key=lambda label: (scores[label], label))
    # episodes at equal positions are the same episode in every row
    for split in ("selection_episodes", "evaluation_episodes"):
        hashes = {tuple(e["episode_hash"] for e in r[split]) for r in data["rows"]}
        assert len(hashes) == 1


def test_best_runs_beside_the_others_on_the_measured_split(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    chosen = _best_json(tmp_path)
    capsys.readouterr()
    out = tmp_path / "side.json"
    assert main([*ENV, "--policy", BEST, "fifo/pal", "--best-field", *FIELD, "--reference",
                 BEST, "--baseline", "pal", "--bootstrap-unit", "trace", "--json",
                 str(out)]) == 0
    text = capsys.readouterr().out
    data = json.loads(out.read_text())
    winner = chosen["winner"]
    assert data["best_heuristic"]["winner"] == winner
    assert data["best_heuristic"]["evaluation_source"] == ""
    assert data["best_heuristic"]["selection_source"] == "bundled:validation"
    assert f"best heuristic: {winner} (chosen on bundled:validation)" in text
    assert data["reference"] == winner
    labels = [p["label"] for p in data["policies"]]
    assert labels == list(dict.fromkeys([winner, "fifo/pal", "pal"]))
    assert {r["trace"].split("[")[0] for r in data["results"]} == {"sia-philly-gen-4"}
    # the winner on test is what --best-heuristic measured for it on test
    measured = next(r for r in chosen["rows"] if r["label"] == winner)["evaluation_episodes"]
    side = [r["censored_avg_jct_s"] for r in data["results"] if r["policy"] == winner]
    assert side == pytest.approx([e["avg_jct_s"] for e in measured], rel=1e-12)


def test_table_takes_suffixed_placements_and_crosses_plain_ones() -> None:
    from agents.evaluation.args import build_parser
    from agents.evaluation.names import table_policies

    def policies(*argv: str) -> list[str]:
        return table_policies(build_parser().parse_args(list(argv)))

    assert policies("--policy", "pal+easy", "pm-first") == ["pal+easy", "pm-first"]
    assert policies("--policy", "pal", "--backfill", "none", "first-fit") == [
        "pal", "pal+backfill"]
    assert policies() == list(PLACEMENT_NAMES)  # no --policy: every registered placement
