"""benchmarks/pooled_entries.py on the committed palgym-bench-v2-lite results: one entry alone
gives the leaderboard's geomean and interval, a pool of two gives the geomean of their ratios
together, and gap closed is (1 - g) / (1 - k) of the printed figures; the held-out and
cross-cluster checks read their inputs and name bad ones."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from palgym.bench.leaderboard import results_files
from palgym.bench.leaderboard_tables import build_leaderboard
from palgym.bench.results import read_results
from palgym.errors import PalgymError
from tests.room_support import script

ROOT = Path(__file__).resolve().parent.parent
pooled_entries = script("pooled_entries")

FOLDER = str(ROOT / "benchmarks" / "leaderboard" / "palgym-bench-v2-lite")
TASK = "scheduling-regimes"
A, B = "rule-selector-clairvoyant-floor32-seed0", "best"


def _rows() -> dict:
    (board,) = build_leaderboard([read_results(p) for p in results_files([FOLDER])])
    (task,) = [t for t in board.tasks if t.task == TASK]
    return {r.entry: r for r in (*task.rows, *task.references)}


def test_one_entry_is_the_leaderboards_row() -> None:
    rows = _rows()
    (line, _all) = pooled_entries.table([FOLDER], [], [A], [TASK])
    summary = rows[A].summary.to_best_geomean
    assert line[:3] == [A, TASK, str(rows[A].ratios_to_best.size)]
    assert line[3] == (f"{summary.point[0]:.3f} [{summary.low[0]:.3f}, "
                       f"{summary.high[0]:.3f}]")
    k = math.exp(np.log(rows["best-known"].ratios_to_best).mean())
    assert line[4] == f"{k:.3f}"
    g = math.exp(np.log(rows[A].ratios_to_best).mean())
    assert line[5] == f"{(1 - g) / (1 - k):.2f}"
    assert line[6] == str(rows[A].unfinished_jobs)


def test_a_pool_is_the_geomean_of_every_ratio() -> None:
    rows = _rows()
    lines = pooled_entries.table([FOLDER], [A, B], [], [TASK])
    both = np.concatenate([rows[A].ratios_to_best, rows[B].ratios_to_best])
    point = float(lines[0][3].split()[0])
    assert point == pytest.approx(math.exp(np.log(both).mean()), abs=5e-4)
    low, high = (float(x) for x in lines[0][3].split("[")[1].rstrip("]").split(","))
    assert low <= point <= high
    assert lines[0][2] == str(both.size)


def test_an_unknown_task_or_entry_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert pooled_entries.main([FOLDER, "--entry", A, "--tasks", "no-such-task"]) == 2
    assert pooled_entries.main([FOLDER, "--entry", "no-such-entry", "--tasks", TASK]) == 2
    assert "no entry" in capsys.readouterr().err
    v2 = str(ROOT / "benchmarks" / "leaderboard" / "palgym-bench-v2")
    assert pooled_entries.main([FOLDER, v2, "--entry", A, "--tasks", TASK]) == 2
    assert "one suite" in capsys.readouterr().err


def test_the_held_out_check_names_missing_data_and_exits_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    heldout = script("priority_heldout")
    code = heldout.main(["--regimes", str(tmp_path), "--cache", str(tmp_path),
                         "--data-dir", str(tmp_path)])
    assert code == 2 and "missing files" in capsys.readouterr().err


def test_the_cross_cluster_check_reads_the_chosen_best_and_bootstraps_over_traces(
        tmp_path: Path) -> None:
    cross = script("priority_cross_cluster")
    # docs/RESULTS.md, "Where the room is": the validation-chosen best per scheduling task
    assert cross.chosen_best(cross.BEST_FILE, "scheduling-clairvoyant") == (
        "srsf/pal+backfill+age=16h:fifo/pal+easy")
    assert cross.chosen_best(cross.BEST_FILE, "scheduling-regimes") == (
        "srsf/pal+backfill+age=48h:fifo/pal+easy")
    empty = tmp_path / "best.jsonl"
    empty.write_text('{"record": "header", "members": {}}\n')
    with pytest.raises(PalgymError, match="scheduling-regimes"):
        cross.chosen_best(empty, "scheduling-regimes")
    # two traces of ratio 2 and 1/2 (two episodes each): geomean 1; a resample of one trace
    # only gives 2 or 1/2, so the interval is [1/2, 2]
    logs = np.log(np.array([[2.0, 2.0, 0.5, 0.5]]))
    mean, low, high = cross.interval(logs, np.array([0, 0, 1, 1]))
    assert mean == pytest.approx(1.0) and (low, high) == pytest.approx((0.5, 2.0))


def test_the_cross_cluster_check_exits_2_on_a_bad_name_or_missing_data(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cross = script("priority_cross_cluster")
    assert cross.main(["--entry", "no-such-order/pal", "--cache", str(tmp_path)]) == 2
    assert "no-such-order" in capsys.readouterr().err
    assert cross.main(["--entry", "srsf/pal+backfill", "--cache", str(tmp_path),
                       "--data-dir", str(tmp_path)]) == 2
    assert "missing" in capsys.readouterr().err


def test_the_cross_cluster_check_refuses_a_limit_below_1(
        capsys: pytest.CaptureFixture[str]) -> None:
    cross = script("priority_cross_cluster")
    for bad in ("0", "-1"):
        with pytest.raises(SystemExit) as stop:
            cross.main(["--entry", "srsf/pal+backfill", "--limit", bad])
        assert stop.value.code == 2
        assert "expected an integer >= 1" in capsys.readouterr().err


def test_the_family_room_reads_best_known_and_never_picks_an_unfinished_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    family = script("priority_family_room")
    # v2's scheduling test episodes: 3 clairvoyant + 28 regime traces, one seed
    known = family.test_jcts(family.FOLDER / "best-known.jsonl")
    assert sum(task.startswith("scheduling-") and task != "scheduling-unknown"
               for task, _ in known) == 31
    # the lower ratio is taken only where its run finished every job
    logs = np.log(np.array([[0.9, 0.95], [1.1, 1.2]]))
    lost = np.array([[1, 0], [0, 0]])
    assert np.exp(family.oracle(logs, lost)) == pytest.approx([0.95, 1.1])
    with pytest.raises(PalgymError, match="nothing.jsonl"):
        family.test_jcts(tmp_path / "nothing.jsonl")
    assert family.main(["--cache", str(tmp_path), "--data-dir", str(tmp_path)]) == 2
    assert "missing" in capsys.readouterr().err


def test_the_online_search_script_builds_the_family_and_its_table(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    online = script("online_search")
    rules = online.field([1.5, 2.0, 3.0])
    assert rules == ["agents.priority.pretrained:ResponseRatioA1_5/pal+backfill",
                     "agents.priority.pretrained:ResponseRatio/pal+backfill",
                     "agents.priority.pretrained:ResponseRatioA3/pal+backfill", "fifo/pal+easy"]
    with pytest.raises(PalgymError, match="7"):
        online.field([7.0])
    with pytest.raises(PalgymError, match="2.5"):
        online.base_member(rules, [1.5, 2.0, 3.0], 2.5, 96.0)
    base = online.base_member(rules, [1.5, 2.0, 3.0], 2.0, 96.0)
    assert base.floor.hours == 96.0 and base.rules[base.floor.rule] == "fifo/pal+easy"
    # two test traces: the search halves one trace's avg JCT and leaves the other's; the base
    # equals the best on both: search / best = sqrt(1/2 x 1) = 0.707
    rows = [{"split": "test", "task": "t", "trace": name, "best_avg_jct_s": 100.0,
             "base_avg_jct_s": 100.0, "search_avg_jct_s": jct, "base_unfinished": 0,
             "search_unfinished": 0, "asks": 10, "searched": 4, "decision_mean_s": 0.01,
             "decision_max_s": 0.2, "searched_over_limit": 1}
            for name, jct in (("a", 50.0), ("b", 100.0))]
    lines = online.table(rows, {("t", "a"): 80.0, ("t", "b"): 80.0})
    assert lines[2].startswith("| test (2) | 1.000 [1.000, 1.000] | 0.707 [0.500, 1.000] | "
                               "0.707 [0.500, 1.000] | 0.800 [0.800, 0.800] | 0, 0 | "
                               "0.010, 0.20; 2 of 8 |")
    assert online.main(["--cache", str(tmp_path), "--data-dir", str(tmp_path)]) == 2
    assert "missing" in capsys.readouterr().err
    import argparse

    online.report([{**rows[0], "stuck_rollouts": 1}], {}, {}, rules,
                  argparse.Namespace(base_exponent=2.0, floor=96.0, limit=None))
    assert "warning: 1 rollouts got stuck" in capsys.readouterr().out
    for bad in (["--limit", "0"], ["--workers", "0"]):
        with pytest.raises(SystemExit) as stop:
            online.main(bad)
        assert stop.value.code == 2
    # a write that fails after the run exits 2 naming the file; nothing half-written is left
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert online.write_rows(rows, str(blocker / "rows.jsonl")) == 2
    assert "rows.jsonl" in capsys.readouterr().err
    assert online.write_rows(rows, str(tmp_path / "rows.jsonl")) == 0
    assert [json.loads(line)["trace"] for line in
            (tmp_path / "rows.jsonl").read_text().splitlines()] == ["a", "b"]


def test_the_cross_cluster_check_runs_a_selector_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a constant selector file plays its one rule: the heuristic's own episode; a value
    # search reports one decision time per ask
    from agents.selection.selector import LinearSelector
    from agents.selection.value_entry import ValueSearch, save_value_search
    from palgym import make_episode, preset
    from palgym.policies.durations import CLAIRVOYANT
    from palgym.tracesets.manifest import split_traces
    from palgym.tracesets.sets import job_range

    cross = script("priority_cross_cluster")
    trace = job_range(split_traces("bundled", "train")[0], 0, 20, "window")
    episode = make_episode(trace, config=preset("pal-artifact"), seed=0)
    rule = "srsf/pal+backfill"
    constant = LinearSelector.constant([rule]).save(tmp_path / "constant.json")
    assert cross.run_name(episode, CLAIRVOYANT, f"selector:{constant}") == (
        *cross.run_name(episode, CLAIRVOYANT, rule)[:2], [])
    rules = [rule, "fifo/pal+easy"]
    search = save_value_search(tmp_path / "search.json", ValueSearch(
        rules, LinearSelector.constant(rules), np.zeros(11), 0, 2, 10, 20), {})
    jct, left, times = cross.run_name(episode, CLAIRVOYANT, f"selector:{search}")
    assert left == 0 and jct > 0 and len(times) > 0 and all(t >= 0 for t in times)
    assert cross.main(["--entry", f"selector:{tmp_path / 'none.json'}"]) == 2
    assert "none.json" in capsys.readouterr().err
