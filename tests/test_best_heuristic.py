"""The best heuristic combination is chosen on the selection split alone, by geomean average
JCT with ties broken by label, and reported on the evaluation split."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from agents.evaluation.best import (
    SELECTION_RULE,
    Combination,
    field_of,
    run_best,
    select_best,
    summarise_field,
)
from agents.evaluation.best_output import format_best, write_best_csv, write_best_json
from agents.rollout import EpisodeOutcome
from evaluate import main
from palgym.errors import ConfigError
from palgym.tracesets import load_trace_set

FIELD = [Combination("fifo", "pal"), Combination("srtf", "pal+easy"),
         Combination("las", "packed-sticky+backfill")]


def _outcome(label: str, trace: str, avg_jct_s: float, truncated: bool = False) -> EpisodeOutcome:
    metrics = {"avg_jct_s": math.nan if truncated else avg_jct_s,
               "censored_avg_jct_s": avg_jct_s, "truncated": truncated}
    return EpisodeOutcome(policy=label, trace=trace, window_start=0, profile="p", seed=0,
                          episode_hash="h", episode_return=0.0, num_steps=0, metrics=metrics,
                          jct_s=(), submit_time_s=())


def _split(values: dict[str, tuple[float, float]], truncated: str = ""
           ) -> dict[str, list[EpisodeOutcome]]:
    return {label: [_outcome(label, "a", v[0]), _outcome(label, "b", v[1], label == truncated)]
            for label, v in values.items()}


def test_validation_winner_is_chosen_even_when_test_prefers_another() -> None:
    # geomean validation: fifo/pal sqrt(4 * 9) = 6, srtf/pal+easy sqrt(2 * 8) = 4, las 5.
    # On test las/... is best (1) and srtf/pal+easy worst (100): the choice stays srtf/pal+easy.
    validation = _split({"fifo/pal": (4, 9), "srtf/pal+easy": (2, 8),
                         "las/packed-sticky+backfill": (5, 5)})
    test = _split({"fifo/pal": (10, 10), "srtf/pal+easy": (100, 100),
                   "las/packed-sticky+backfill": (1, 1)})
    report = summarise_field(FIELD, validation, test, "v", "t", (0,))
    assert report.winner == "srtf/pal+easy"
    assert report.winner_without_backfill == "fifo/pal"
    assert report.row("srtf/pal+easy").selection_geomean_avg_jct_s == pytest.approx(4.0)
    assert report.row("srtf/pal+easy").evaluation_geomean_avg_jct_s == pytest.approx(100.0)
    assert report.row("srtf/pal+easy").chosen == "best"
    assert report.row("fifo/pal").chosen == "best without backfill"
    text = format_best(report)
    assert "best heuristic: srtf/pal+easy" in text and SELECTION_RULE in text


def test_ties_go_to_the_label_and_unfinished_episodes_count_censored() -> None:
    assert select_best({"srtf/pal": 3.0, "las/pal": 3.0, "fifo/pal": 4.0}) == "las/pal"
    assert select_best({"a": math.nan, "b": 7.0}) == "b"
    with pytest.raises(ConfigError, match="finite"):
        select_best({"a": math.nan})
    # fifo/pal's second validation episode is unfinished: its censored 1 counts (sqrt(4) = 2)
    validation = _split({"fifo/pal": (4, 1), "srtf/pal+easy": (3, 3),
                         "las/packed-sticky+backfill": (9, 9)}, truncated="fifo/pal")
    report = summarise_field(FIELD, validation, validation, "v", "t", (0,))
    assert report.winner == "fifo/pal"
    assert report.row("fifo/pal").selection_unfinished == 1


def test_field_and_outputs(tmp_path: Path) -> None:
    field = field_of(["fifo", "srtf"], ["pal", "packed-sticky"], ["none", "easy"])
    assert [c.label for c in field] == [
        "fifo/pal", "fifo/packed-sticky", "fifo/pal+easy", "fifo/packed-sticky+easy",
        "srtf/pal", "srtf/packed-sticky", "srtf/pal+easy", "srtf/packed-sticky+easy"]
    with pytest.raises(ConfigError, match="unknown backfill"):
        field_of(["fifo"], ["pal"], ["conservative"])
    validation = _split({"fifo/pal": (4, 9), "srtf/pal+easy": (2, 8),
                         "las/packed-sticky+backfill": (5, 5)})
    report = summarise_field(FIELD, validation, validation, "v", "t", (0,))
    data = json.loads(write_best_json(report, tmp_path / "best.json").read_text())
    assert data["winner"] == "srtf/pal+easy" and data["rule"] == SELECTION_RULE
    lines = write_best_csv(report, tmp_path / "best.csv").read_text().splitlines()
    rows = list(csv.DictReader(lines[:-1]))
    assert [r["label"] for r in rows if r["chosen"] == "best"] == ["srtf/pal+easy"]
    assert lines[-1].startswith("# chosen: srtf/pal+easy on v")


def test_real_field_is_chosen_on_validation_episodes(tmp_path: Path) -> None:
    bundled = load_trace_set("bundled")
    splits = {"selection": bundled.traces("validation"), "evaluation": bundled.traces("test")}
    field = field_of(["fifo", "srtf"], ["packed-non-sticky"], ["none", "first-fit"])
    report = run_best("palgym/PALScheduling-v0", {"window": 30}, field, splits,
                      {"selection": "bundled:validation", "evaluation": "bundled:test"}, (0,))
    scores = {r.label: r.selection_geomean_avg_jct_s for r in report.rows}
    assert report.winner == min(scores, key=lambda label: (scores[label], label))
    assert all(math.isfinite(r.evaluation_geomean_avg_jct_s) for r in report.rows)
    with pytest.raises(ConfigError, match="share traces"):
        run_best("palgym/PALScheduling-v0", {"window": 30}, field,
                 {"selection": splits["selection"], "evaluation": splits["selection"]},
                 {"selection": "v", "evaluation": "v"}, (0,))


def test_cli_refuses_choosing_on_the_measured_split(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--best-heuristic", "--selection-split", "test", "--split", "test"]) == 2
    assert "must be chosen on other traces" in capsys.readouterr().err
    assert main(["--trace-set", "bundled", "--queue-order", "fifo", "srtf"]) == 2
    assert "--best-heuristic" in capsys.readouterr().err


def test_cli_refuses_a_belief(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--best-heuristic", "--preset", "dynamic", "--belief", "stale"]) == 2
    assert "--belief applies to the heuristic table only" in capsys.readouterr().err


def _labels_and_scores(path: Path) -> dict[str, float]:
    rows = json.loads(path.read_text())["rows"]
    return {row["label"]: row["selection_geomean_avg_jct_s"] for row in rows}


def test_cli_duration_knowledge_reaches_the_field(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Noisy estimates change SRTF and nothing else; unknown durations leave srtf and EASY
    out of the default field (both need durations), with a notice."""
    common = ["--best-heuristic", "--window", "20", "--policy", "packed-non-sticky", "--quiet"]
    runs = {}
    for knowledge in ("clairvoyant", "noisy"):
        out = tmp_path / f"{knowledge}.json"
        assert main([*common, "--queue-order", "fifo", "srtf", "--backfill", "none",
                     "--duration-knowledge", knowledge, "--estimate-sigma", "2",
                     "--json", str(out)]) == 0
        runs[knowledge] = _labels_and_scores(out)
    assert set(runs["noisy"]) == {"fifo/packed-non-sticky", "srtf/packed-non-sticky"}
    assert runs["noisy"]["fifo/packed-non-sticky"] == runs["clairvoyant"]["fifo/packed-non-sticky"]
    assert runs["noisy"]["srtf/packed-non-sticky"] != runs["clairvoyant"]["srtf/packed-non-sticky"]
    capsys.readouterr()
    out = tmp_path / "unknown.json"
    assert main([*common, "--duration-knowledge", "unknown", "--json", str(out)]) == 0
    assert "leaves out srtf, srsf and EASY" in capsys.readouterr().out
    assert set(_labels_and_scores(out)) == {
        f"{order}/packed-non-sticky{suffix}" for order in ("fifo", "las", "tiresias")
        for suffix in ("", "+backfill")}
