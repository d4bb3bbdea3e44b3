"""``python -m palgym.bench show`` and the table ``bench run`` ends with: the leaderboard's
columns and ranks for the given files, ranked among the committed results; CSV export; a
plain table when the suite has no ``pal`` / ``best`` results; ties share a rank."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np
import pytest

from palgym.bench.__main__ import main
from palgym.bench.bootstrap import Interval
from palgym.bench.leaderboard_page import ranks_of
from palgym.bench.leaderboard_tables import Row, Summary
from palgym.bench.results import read_results
from palgym.bench.show import CSV_COLUMNS, render_csv, render_text, show_tasks
from tests.bench_suites import tiny_suite

ROOT = Path(__file__).resolve().parents[1]
LITE = ROOT / "benchmarks" / "leaderboard" / "palgym-bench-v1-lite"
PAGE = ROOT / "docs" / "LEADERBOARD.md"


def _row(geomean: float | None) -> Row:
    one = np.ones(1)
    summary = None if geomean is None else Summary(
        *(Interval(np.array([geomean]), one, one, 0.95, 10) for _ in range(4)))
    return Row("e", "heuristic", False, summary, 0.5, 1, 0, 0, 0, 0, None, one, ("t",))


def test_ties_at_the_shown_precision_share_a_rank() -> None:
    rows = [_row(v) for v in (1.0, 1.0, 1.0004, 1.2, 1.3, 1.3, None)]
    assert ranks_of(rows) == ["1", "1", "1", "4", "5", "5", "–"]


def _page_lines(suite_heading: str) -> dict[str, str]:
    """Task -> the committed page's line of pm-first (in the lite suite's section)."""
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index(suite_heading):]
    following = section.find("\n## Suite `", len(suite_heading))
    section = section if following < 0 else section[:following]  # this suite's section alone
    found: dict[str, str] = {}
    task = None
    for line in section.splitlines():
        if line.startswith("### Task `"):
            task = line.split("`")[1]
        elif line.startswith("| ") and "`pm-first`" in line and task and task not in found:
            found[task] = line
    return found


def test_show_gives_the_committed_page_lines() -> None:
    tasks = show_tasks([LITE / "pm-first.jsonl"])
    expected = _page_lines("## Suite `palgym-bench-v1-lite`")
    lines = render_text(tasks)
    assert {t.task for t in tasks} == set(expected)
    for task in tasks:
        [row] = task.rows
        assert row.entry == "pm-first"
    for line in expected.values():
        assert line in lines


def test_csv_ratios_are_the_episode_ratios_to_pal() -> None:
    tasks = show_tasks([LITE / "pm-first.jsonl"])
    rows = list(csv.DictReader(io.StringIO(render_csv(tasks))))
    assert tuple(rows[0]) == CSV_COLUMNS
    mine = {(r.task, r.trace, r.seed): r.avg_jct_s
            for _, r in read_results(LITE / "pm-first.jsonl").episodes}
    pal = {(r.task, r.trace, r.seed): r.avg_jct_s
           for _, r in read_results(LITE / "pal.jsonl").episodes}
    for line in rows:
        keys = [k for k in mine if k[0] == line["task"]]
        ratios = [mine[k] / pal[k] for k in keys]  # type: ignore[operator]
        expected = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        assert float(line["geomean_to_pal"]) == pytest.approx(expected, rel=1e-12)
        jcts = [mine[k] for k in keys]
        assert float(line["geomean_avg_jct_s"]) == pytest.approx(
            math.exp(sum(math.log(v) for v in jcts) / len(jcts)), rel=1e-12)  # type: ignore[arg-type]
        assert line["episodes"] == str(len(keys))


def test_run_ends_with_its_table_and_show_writes_csv(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    suite = tiny_suite(tmp_path, ["placement-default"], seeds=(0, 1))
    output = tmp_path / "pm.jsonl"
    assert main(["run", "--suite", str(suite), "--agent", "pm-first", "--output", str(output),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    rows = [r for _, r in read_results(output).episodes]
    geomean = math.exp(sum(math.log(r.avg_jct_s) for r in rows) / len(rows))  # type: ignore[arg-type]
    # a suite of one's own has no pal / best results: counts and the geomean JCT, and why
    assert "no ratios" in out and "--agent pal" in out
    assert f"| – | `pm-first` | heuristic | 2 | {geomean:.1f} s | 0 (0 ep.) | 0 |" in out
    table = tmp_path / "pm.csv"
    assert main(["show", str(output), "--csv", str(table)]) == 0
    [line] = list(csv.DictReader(table.open()))
    assert float(line["geomean_avg_jct_s"]) == pytest.approx(geomean, rel=1e-12)
    assert line["geomean_to_pal"] == "" and line["entry"] == "pm-first"


def test_show_names_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(tmp_path / "none.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
