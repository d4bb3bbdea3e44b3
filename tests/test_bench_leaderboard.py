"""palgym.bench.leaderboard on a small synthetic suite whose ratios are worked out by hand.

Suite ``toy``: tasks ``task-a`` and ``task-b``, traces tr0, tr1, tr2, seeds 0 and 1 (6 test
episodes per task); entries ``pal``, ``best``, ``field`` (members srtf/pal, fifo/pal, las/pal)
and the learned entry ``agent``. Average JCTs (s), in key order (tr0 s0, tr0 s1, tr1 s0,
tr1 s1, tr2 s0, tr2 s1):

task-a  best (srtf/pal) 100 x6   pal 125 x6   agent 50 200 100 90 25 400
        field: srtf/pal 100 x6; fifo/pal 90 110 120 120 120 120; las/pal 130 x5 then 70
task-b  best (fifo/pal) 200 x6   pal 400 x6   agent 200 x6 (3 unfinished jobs, 2 invalid
        actions in tr1 s0)
        field: fifo/pal 200 x6; srtf/pal 210 x6; las/pal 190 then 220 x5

The field's validation episodes take 1 s more than its test episodes. The files are complete
and valid (written by :func:`palgym.bench.results.write_results`, read by ``read_results``).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import statistics
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from palgym.bench.leaderboard import main, write_leaderboard
from palgym.bench.leaderboard_tables import build_leaderboard
from palgym.bench.results import (
    ChoiceRow,
    EpisodeRow,
    Header,
    Row,
    encode_actions,
    read_results,
    results_text,
    write_results,
)
from palgym.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[1]
KEYS = [(trace, seed) for trace in ("tr0", "tr1", "tr2") for seed in (0, 1)]
BEST_OF = {"task-a": "srtf/pal", "task-b": "fifo/pal"}
FIELD_JCT = {
    "task-a": {"srtf/pal": [100] * 6, "fifo/pal": [90, 110, 120, 120, 120, 120],
               "las/pal": [130] * 5 + [70]},
    "task-b": {"fifo/pal": [200] * 6, "srtf/pal": [210] * 6, "las/pal": [190] + [220] * 5},
}
JCT = {
    "pal": {"task-a": [125] * 6, "task-b": [400] * 6},
    "agent": {"task-a": [50, 200, 100, 90, 25, 400], "task-b": [200] * 6},
    "best": {task: FIELD_JCT[task][member] for task, member in BEST_OF.items()},
    "planner": {"task-a": [40] * 6, "task-b": [150] * 6},
}
KIND = {"pal": "heuristic", "agent": "learned", "best": "best", "field": "field",
        "planner": "planner"}


def members_of(entry: str) -> dict[str, dict[str, dict[str, Any]]]:
    """The header's ``members``: per task, the members the entry runs, with no env kwargs of
    their own (so each member's env layout is the task's)."""
    names = {"field": lambda task: sorted(FIELD_JCT[task]),
             "best": lambda task: [BEST_OF[task]]}.get(entry, lambda task: [entry])
    return {task: {member: {"env_kwargs": {}, "env_layout": "0" * 16} for member in names(task)}
            for task in FIELD_JCT}


def header(entry: str, **changes: Any) -> Header:
    return replace(Header(suite="toy", suite_sha256="ab" * 32, entry=entry,
                          entry_kind=KIND[entry], entry_spec=entry, palgym_version="0.1.0",
                          commit="unknown", env_layouts={task: "0" * 16 for task in FIELD_JCT},
                          seeds=[0, 1], members=members_of(entry)), **changes)


def episode(task: str, split: str, key: tuple[str, int], member: str, jct: float,
            **changes: Any) -> EpisodeRow:
    learned = member == "agent"
    return replace(EpisodeRow(
        task=task, split=split, trace=key[0],
        trace_sha256=hashlib.sha256(key[0].encode()).hexdigest(), seed=key[1], member=member,
        avg_jct_s=float(jct), p99_jct_s=2.0 * jct, makespan_s=10.0 * jct,
        utilization=0.5, num_jobs=10, completed_jobs=10, unfinished_jobs=0, invalid_actions=0,
        decisions=10, decision_time_s=0.5 if learned else 0.01, episode_hash="0" * 16,
        actions=encode_actions([0] * 10)), **changes)


def choice(task: str) -> ChoiceRow:
    """The ``best`` entry's choice on ``task``, with every member's validation geomean (the
    field's validation JCTs are the test ones + 1 s)."""
    return ChoiceRow(task=task, member=BEST_OF[task], selection_split="validation",
                     field=sorted(FIELD_JCT[task]), validation_geomean_avg_jct_s={
                         member: statistics.geometric_mean([j + 1.0 for j in jcts])
                         for member, jcts in sorted(FIELD_JCT[task].items())})


def lines_of(entry: str) -> list[Row]:
    if entry == "field":
        return [episode(task, split, key, member, jcts[i] + (0 if split == "test" else 1))
                for split in ("validation", "test") for task, members in FIELD_JCT.items()
                for member, jcts in members.items() for i, key in enumerate(KEYS)]
    lines: list[Row] = [choice(task) for task in BEST_OF] if entry == "best" else []
    for task, jcts in JCT[entry].items():
        for i, key in enumerate(KEYS):
            member = BEST_OF[task] if entry == "best" else entry
            failures = {"unfinished_jobs": 3, "completed_jobs": 7, "invalid_actions": 2} if (
                entry == "agent" and task == "task-b" and key == ("tr1", 0)) else {}
            lines.append(episode(task, "test", key, member, jcts[i], **failures))
    return lines


def write(path: Path, head: Header, lines: list[Row]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_results(path, head, lines)


def boards(results: dict[str, Path], num_resamples: int = 10) -> list[Any]:
    """The leaderboard of the files, each read by ``read_results`` (as the leaderboard does)."""
    return build_leaderboard([read_results(p) for p in results.values()],
                             num_resamples=num_resamples)


@pytest.fixture()
def results(tmp_path: Path) -> dict[str, Path]:
    return {entry: write(tmp_path / "results" / f"{entry}.jsonl", header(entry), lines_of(entry))
            for entry in ("pal", "best", "field", "agent")}


def test_ratios_intervals_and_improvement_by_hand(results: dict[str, Path]) -> None:
    (board,) = boards(results, num_resamples=2000)
    task_a, task_b = board.tasks
    assert [row.entry for row in task_a.rows] == ["agent", "best", "pal"]
    agent, best, pal = task_a.rows
    # agent / best: 0.5 2 1 0.9 0.25 4 -> geomean 0.9^(1/6); sorted 0.25 0.5 0.9 1 2 4 ->
    # IQM (0.5 * 2 + 0.9 * 4 + 1 * 4 + 2 * 2) / 12 = 1.05; / PAL: x 100/125 = 0.8
    assert agent.summary.to_best_geomean.point[0] == pytest.approx(0.9 ** (1 / 6), rel=1e-12)
    assert agent.summary.to_best_iqm.point[0] == pytest.approx(1.05, rel=1e-12)
    assert agent.summary.to_pal_geomean.point[0] == pytest.approx(0.8 * 0.9 ** (1 / 6), rel=1e-12)
    assert agent.summary.to_pal_iqm.point[0] == pytest.approx(0.84, rel=1e-12)
    low, high = agent.summary.to_best_geomean.low[0], agent.summary.to_best_geomean.high[0]
    assert low < agent.summary.to_best_geomean.point[0] < high
    # P(agent < best): tr0 {50, 200} vs {100, 100}: 2/4; tr1 {100, 90}: 2 ties + 2 wins = 3/4;
    # tr2 {25, 400}: 2/4 -> (0.5 + 0.75 + 0.5) / 3
    assert agent.improvement == pytest.approx(1.75 / 3, rel=1e-15)
    assert best.improvement == 0.5 and pal.improvement == 0.0
    assert pal.summary.to_best_geomean.scalar() == pytest.approx((1.25, 1.25, 1.25), rel=1e-15)
    assert pal.summary.to_best_iqm.scalar() == (1.25, 1.25, 1.25)
    assert pal.summary.to_pal_iqm.scalar() == (1.0, 1.0, 1.0)
    assert agent.decision_time_ms == pytest.approx(50.0) and pal.decision_time_ms == \
        pytest.approx(1.0)
    # oracle (min over the field): 90 100 100 100 100 70 -> / best 0.9 1 1 1 1 0.7
    oracle = task_a.oracle
    assert oracle is not None and oracle.oracle and oracle.decision_time_ms is None
    assert oracle.summary.to_best_geomean.point[0] == pytest.approx(0.63 ** (1 / 6), rel=1e-12)
    assert oracle.summary.to_best_iqm.point[0] == pytest.approx(11.8 / 12, rel=1e-12)
    assert task_a.best_member == "srtf/pal" and task_b.best_member == "fifo/pal"
    assert task_a.traces == ("tr0", "tr1", "tr2") and task_a.seeds == (0, 1)
    # task-b: agent ties the best (ranked by name), PAL is twice as slow
    assert [row.entry for row in task_b.rows] == ["agent", "best", "pal"]
    agent_b = task_b.rows[0]
    assert agent_b.summary.to_best_geomean.scalar() == (1.0, 1.0, 1.0)
    assert agent_b.summary.to_pal_geomean.point[0] == pytest.approx(0.5, rel=1e-15)
    assert agent_b.improvement == 0.5
    assert (agent_b.unfinished_jobs, agent_b.episodes_unfinished, agent_b.invalid_actions) == \
        (3, 1, 2)
    assert task_b.oracle is not None
    assert task_b.oracle.summary.to_best_geomean.point[0] == pytest.approx(0.95 ** (1 / 6),
                                                                           rel=1e-12)


def test_page_shows_ranks_failures_and_the_oracle(results: dict[str, Path],
                                                  tmp_path: Path) -> None:
    page_path = tmp_path / "docs" / "LEADERBOARD.md"
    write_leaderboard(list(results.values()), page_path, tmp_path / "docs" / "leaderboard",
                      num_resamples=500)
    page = page_path.read_text(encoding="utf-8")
    assert page.startswith("<!-- Generated by palgym.bench.leaderboard: do not edit. -->\n")
    assert "Suite file sha256: `" + "ab" * 32 + "`." in page
    assert "python -m palgym.bench leaderboard benchmarks/leaderboard --output" in page
    assert "](leaderboard/toy-profile.svg)" in page
    task_a = page.split("### Task `task-a`")[1].split("### Task")[0]
    assert "| 3 | `pal` | heuristic | 1.250 [1.250, 1.250] | 1.250 [1.250, 1.250] | " \
           "1.000 [1.000, 1.000] | 1.000 [1.000, 1.000] | 0.00 | 0 | 0 | 1 |" in task_a
    assert re.search(r"^\| 1 \| `agent` \| learned \| 0\.983 \[", task_a, re.M)
    assert re.search(r"^\| – \| \*oracle \(field\)\* \| hindsight bound \| 0\.926 ", task_a,
                     re.M)
    task_b = page.split("### Task `task-b`")[1]
    assert "| 0.50 | \u26a0 3 (1 ep.) | \u26a0 2 | 50 |" in task_b
    assert "- \u26a0 `agent`: 3 unfinished jobs in 1 of 6 episodes; 2 invalid actions " \
           "(fallback actions taken)." in task_b
    svg = (tmp_path / "docs" / "leaderboard" / "toy-profile.svg").read_text(encoding="utf-8")
    assert "<dc:title>toy profiles, data sha256 " in svg and "<dc:date>" not in svg


def test_a_planner_is_a_reference_never_ranked_even_when_fastest(
        results: dict[str, Path], tmp_path: Path) -> None:
    # planner: 40 s x6 on task-a (ratio 0.4 to the best's 100 s, faster than every entry and
    # than the oracle's 0.63^(1/6)); 150 s x6 on task-b (0.75 to the best's 200 s)
    results["planner"] = write(results["pal"].parent / "planner.jsonl", header("planner"),
                               lines_of("planner"))
    (board,) = boards(results, num_resamples=50)
    task_a, task_b = board.tasks
    assert [row.entry for row in task_a.rows] == ["agent", "best", "pal"]
    assert [row.entry for row in task_b.rows] == ["agent", "best", "pal"]
    (planner,) = task_a.references
    assert planner.reference and not planner.oracle
    assert planner.kind == "planner (reference: plans on a copy of the simulator)"
    assert planner.summary.to_best_geomean.scalar() == pytest.approx((0.4, 0.4, 0.4))
    assert planner.summary.to_pal_geomean.point[0] == pytest.approx(40 / 125)
    assert planner.improvement == 1.0  # every seed below the best's on every trace
    assert task_b.references[0].summary.to_best_iqm.point[0] == pytest.approx(0.75)
    page = tmp_path / "page.md"
    write_leaderboard(list(results.values()), page, tmp_path / "plots", num_resamples=50)
    table = page.read_text(encoding="utf-8").split("### Task `task-a`")[1].split("###")[0]
    rows = [line for line in table.splitlines() if re.match(r"\| (\d+|–) \| ", line)]
    assert [line.split(" | ")[:2] for line in rows] == [
        ["| 1", "`agent`"], ["| 2", "`best`"], ["| 3", "`pal`"], ["| –", "`planner`"],
        ["| –", "*oracle (field)*"]]
    assert rows[3].startswith("| – | `planner` | planner (reference: plans on a copy of the "
                              "simulator) | 0.400 [0.400, 0.400] | 0.400 [0.400, 0.400] | "
                              "0.320 [0.320, 0.320] |")
    assert "| 1.00 | 0 | 0 | 1 |" in rows[3]


def test_regeneration_is_byte_identical_in_any_order(results: dict[str, Path],
                                                     tmp_path: Path) -> None:
    outputs = []
    for name, paths in (("one", list(results.values())), ("two", list(results.values())[::-1])):
        folder = tmp_path / name
        write_leaderboard(paths, folder / "LEADERBOARD.md", folder / "leaderboard",
                          num_resamples=500)
        outputs.append({p.relative_to(folder): p.read_bytes() for p in folder.rglob("*")
                        if p.is_file()})
    assert outputs[0] == outputs[1]
    assert set(outputs[0]) == {Path("LEADERBOARD.md"), Path("leaderboard/toy-profile.svg")}


def test_an_episode_without_completed_jobs_is_shown_and_not_ranked(
        results: dict[str, Path], tmp_path: Path) -> None:
    # agent completes no job on task-a tr2 seed 1 (was 400 s): its ratio there is +inf
    nothing = {"avg_jct_s": None, "completed_jobs": 0, "unfinished_jobs": 10}
    lines = [replace(obj, **nothing) if (obj.task, obj.trace, obj.seed) == (
        "task-a", "tr2", 1) else obj for obj in lines_of("agent")]
    write(results["agent"], header("agent"), lines)
    (board,) = boards(results, num_resamples=50)
    rows = board.tasks[0].rows
    assert [row.entry for row in rows] == ["best", "pal", "agent"]
    agent = rows[2]
    assert agent.summary is None and agent.episodes_without_jct == 1
    assert agent.improvement == pytest.approx(1.75 / 3)  # +inf loses as 400 did
    assert agent.ratios_to_best[-1] == math.inf
    page = tmp_path / "page.md"
    write_leaderboard(list(results.values()), page, tmp_path / "plots", num_resamples=50)
    text = page.read_text(encoding="utf-8")
    assert "| – | `agent` | learned | \u26a0 none: 1 episodes without an average JCT | – | – | " \
           "– | 0.58 | \u26a0 10 (1 ep.) |" in text
    assert "`agent`: 10 unfinished jobs in 1 of 6 episodes; no job completed in 1 episodes" \
        in text
    write(results["pal"], header("pal"), [replace(obj, **nothing) for obj in lines_of("pal")])
    with pytest.raises(ConfigError, match="line 2, field 'avg_jct_s': entry 'pal' is a "
                                          "reference and completed no job here"):
        boards(results)


def test_fields_may_differ_by_task_as_the_choice_declares(results: dict[str, Path]) -> None:
    # las/pal runs task-a only; without it task-b's oracle is min(fifo 200, srtf 210) = best
    field = [obj for obj in lines_of("field") if not (
        obj.member == "las/pal" and obj.task == "task-b")]
    write(results["field"], header("field"), field)
    message = refusal(results, "field", field)
    assert "its members on task 'task-b' are ['fifo/pal', 'srtf/pal']; the best heuristic " \
           "was chosen among ['fifo/pal', 'las/pal', 'srtf/pal']" in message
    best = [replace(obj, field=["fifo/pal", "srtf/pal"], validation_geomean_avg_jct_s={
        m: obj.validation_geomean_avg_jct_s[m] for m in ("fifo/pal", "srtf/pal")})
            if isinstance(obj, ChoiceRow) and obj.task == "task-b" else obj
            for obj in lines_of("best")]
    write(results["best"], header("best"), best)
    (board,) = boards(results)
    oracle_b = board.tasks[1].oracle
    assert oracle_b is not None and oracle_b.ratios_to_best.tolist() == [1.0] * 6
    best[0] = replace(best[0], member="sjf/pal")
    assert "line 2, field 'member': 'sjf/pal' is not in the field" in refusal(results, "best",
                                                                               best)


def refusal(results: dict[str, Path], entry: str, lines: list[Row], **changes: Any) -> str:
    """The leaderboard's one-line refusal once ``entry``'s file holds ``lines`` (and a header
    with ``changes``)."""
    write(results[entry], header(entry, **changes), lines)
    return leaderboard_error(results)


def leaderboard_error(results: dict[str, Path]) -> str:
    """The leaderboard's refusal of the files."""
    with pytest.raises(ConfigError) as caught:
        boards(results)
    return str(caught.value)


def test_refuses_an_entry_with_missing_or_other_episodes(results: dict[str, Path]) -> None:
    lines = lines_of("agent")
    message = refusal(results, "agent", lines[:-1])
    assert "entry 'agent': not the episodes of entry 'pal'" in message
    assert "missing 1: (task-b, tr2, seed 1)" in message and "extra" not in message
    other_seed = [replace(obj, seed=2) if obj.seed == 1 and obj.task == "task-a" else obj
                  for obj in lines]
    message = refusal(results, "agent", other_seed)
    assert "missing 3: (task-a, tr0, seed 1), (task-a, tr1, seed 1), (task-a, tr2, seed 1)" \
        in message
    assert "extra 3: (task-a, tr0, seed 2)" in message


def test_refuses_a_field_member_missing_an_episode(results: dict[str, Path]) -> None:
    lines = [obj for obj in lines_of("field") if not (
        obj.member == "las/pal" and obj.split == "test" and obj.trace == "tr1")]
    message = refusal(results, "field", lines)
    assert "member 'las/pal': not the episodes of entry 'pal'" in message
    assert "missing 4: (task-a, tr1, seed 0)" in message


def test_refuses_repeats_choices_on_test_and_missing_references(
        results: dict[str, Path]) -> None:
    lines = lines_of("agent")
    assert "line 14: episode ('task-b', 'tr2', 1) repeats" in refusal(
        results, "agent", [*lines, lines[-1]])
    write(results["agent"], header("agent"), lines)
    choices = [replace(obj, selection_split="test") if isinstance(obj, ChoiceRow) else obj
               for obj in lines_of("best")]
    assert "line 2, field 'selection_split': the best heuristic is chosen on the validation" \
        in refusal(results, "best", choices)
    write(results["best"], header("best"), lines_of("best"))
    assert "field 'trace_sha256': trace 'tr0' differs" in refusal(
        results, "agent", [replace(obj, trace_sha256="x") for obj in lines])
    assert "suite 'toy' has another hash" in refusal(results, "agent", lines,
                                                     suite_sha256="cd" * 32)
    write(results["agent"], header("pal"), [replace(obj, member="pal") for obj in lines])
    assert f"{results['agent']}, line 1, field 'entry': entry 'pal' is also in " \
           f"{results['pal']}" in leaderboard_error(results)
    with pytest.raises(ConfigError, match="no results file of entry 'pal'"):
        build_leaderboard([read_results(results["best"]), read_results(results["field"])])


@pytest.mark.parametrize(("change", "expected"), [
    ({"schema": "palgym-bench-results/9"}, "line 1, field 'schema': unknown schema"),
    ({"entry_kind": "robot"}, "line 1, field 'entry_kind': must be one of"),
])
def test_reader_refuses_a_bad_header(results: dict[str, Path], change: dict[str, Any],
                                     expected: str, tmp_path: Path) -> None:
    write(results["pal"], header("pal", **change), lines_of("pal"))
    with pytest.raises(ConfigError, match=re.escape(f"{results['pal']}, {expected}")):
        write_leaderboard(list(results.values()), tmp_path / "page.md")


@pytest.mark.parametrize(("change", "expected"), [
    ({"avg_jct_s": "1"}, "field 'avg_jct_s': must be float|None, got '1'"),
    ({"avg_jct_s": None}, "field 'avg_jct_s': null with 10 completed jobs"),
    ({"seed": True}, "field 'seed': must be int, got True"),
    ({"avg_jct_s": 0.0}, "field 'avg_jct_s': must be finite and > 0"),
    ({"unfinished_jobs": 1},
     "field 'unfinished_jobs': completed_jobs 10 + unfinished_jobs 1 != num_jobs 10"),
    ({"invalid_actions": -1}, "field 'invalid_actions': must be >= 0, got -1"),
    ({"decision_time_s": -0.5}, "field 'decision_time_s': must be finite and >= 0, got -0.5"),
])
def test_reader_refuses_a_bad_episode_line(results: dict[str, Path], change: dict[str, Any],
                                           expected: str) -> None:
    lines = lines_of("pal")
    lines[2] = replace(lines[2], **change)
    assert refusal(results, "pal", lines).startswith(f"{results['pal']}, line 4, {expected}")
    results["pal"].write_text(results_text(header("pal"), []) + "{\"avg_jct_s\": NaN}\n",
                              encoding="utf-8")
    assert leaderboard_error(results).startswith(f"{results['pal']}, line 2, field "
                                                 f"'avg_jct_s': NaN is not a JSON number")


def test_cli_writes_the_page_and_exits_2_on_bad_input(results: dict[str, Path],
                                                      tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    assert main([str(results["pal"].parent), "--output", str(page)]) == 0  # a folder of files
    assert "### Task `task-b`" in page.read_text(encoding="utf-8")
    assert main([str(tmp_path / "nowhere.jsonl"), "--output", str(page)]) == 2
    write(results["agent"], header("agent"), lines_of("agent")[:-2])
    done = subprocess.run([sys.executable, "-m", "palgym.bench.leaderboard",
                           *map(str, results.values()), "--output", str(page)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: ") and "missing 2:" in done.stderr
    assert len(done.stderr.splitlines()) == 1


SUBMISSION = {
    "submitter": "A. Tester", "env_modified": False, "env_modifications": "",
    "parameters": {"learning_rate": 0.0003}, "parameters_tried": {"learning_rate": [1e-4, 3e-4]},
    "selection_data": {"learning_rate": "bundled:validation"},
    "training_traces": ["bundled:train"], "training_env_steps": 2_000_000,
    "training_wall_time_s": 5400.0, "deterministic": True, "hardware": "8 CPU cores",
    "model": "agents/pretrained/x.zip",
}


def test_submission_object_is_shown_in_the_entries_table(results: dict[str, Path],
                                                         tmp_path: Path) -> None:
    write(results["agent"], header("agent", submission=SUBMISSION), lines_of("agent"))
    page = tmp_path / "page.md"
    write_leaderboard(list(results.values()), page, None, num_resamples=10)
    text = page.read_text(encoding="utf-8")
    assert "| `agent` | learned | `agent` | 0.1.0 | `unknown` | stock | 2,000,000 env steps, " \
           "1.5 h | yes |  |" in text
    assert "| `pal` | heuristic | `pal` | 0.1.0 | `unknown` | not stated | not stated | " \
           "not stated |  |" in text
    assert "profile.svg" not in text


@pytest.mark.parametrize(("change", "expected"), [
    ({"selection_data": {"learning_rate": "bundled:test"}},
     "field 'submission.selection_data.learning_rate': parameters are never picked on the test"),
    ({"selection_data": {"learning_rate": "tr1, seeds 0-1"}},
     "field 'submission.selection_data.learning_rate': parameters are never picked on the test "
     "split: 'tr1' is a test trace of the suite, got 'tr1, seeds 0-1'"),
    ({"selection_data": {}}, "field 'submission.selection_data': name the data each tried"),
    ({"env_modified": True}, "field 'submission.env_modifications': say how the env was"),
    ({"deterministic": 1}, "field 'submission.deterministic': must be a JSON boolean, got 1"),
    ({"hardware": None}, "field 'submission.hardware': must be a JSON string, got None"),
    ({"gpu": "x"}, "field 'submission': unknown keys ['gpu']"),
])
def test_reader_refuses_a_bad_submission(results: dict[str, Path], change: dict[str, Any],
                                         expected: str) -> None:
    message = refusal(results, "agent", lines_of("agent"), submission={**SUBMISSION, **change})
    assert message.startswith(f"{results['agent']}, line 1, {expected}")
    lacking = {key: value for key, value in SUBMISSION.items() if key != "hardware"}
    assert f"{results['agent']}, line 1, field 'submission.hardware': missing" in refusal(
        results, "agent", lines_of("agent"), submission=lacking)


def test_a_selection_naming_a_test_trace_only_inside_a_longer_token_is_accepted(
        results: dict[str, Path]) -> None:
    # the toy suite's test traces are tr0, tr1, tr2 (the test episodes): "my-tr1-set" and
    # "tr10" name other data; "tr2" does, whatever the surrounding separators
    for data in ("my-tr1-set", "bundled:tr10"):
        write(results["agent"], header("agent", submission={
            **SUBMISSION, "selection_data": {"learning_rate": data}}), lines_of("agent"))
        (board,) = boards(results)
        assert board.tasks[0].rows[0].entry == "agent"
    assert "'tr2' is a test trace of the suite, got 'windows/tr2.csv'" in refusal(
        results, "agent", lines_of("agent"), submission={
            **SUBMISSION, "selection_data": {"learning_rate": "windows/tr2.csv"}})


def test_a_committed_suite_named_by_the_header_gives_its_test_traces(tmp_path: Path) -> None:
    # a file of palgym-bench-v1 without episodes: the suite's test traces still count
    from palgym.bench.leaderboard_entries import traces_under_test

    path = write(tmp_path / "x.jsonl", header("agent", suite="palgym-bench-v1"), [])
    assert traces_under_test(read_results(path)) == {"workload-4", "workload-5",
                                                     "sia-philly-gen-4"}
    toy = write(tmp_path / "y.jsonl", header("agent"), lines_of("agent"))
    assert traces_under_test(read_results(toy)) == {"tr0", "tr1", "tr2"}


def test_submitting_page_lists_the_submission_keys_and_a_valid_example() -> None:
    from palgym.bench.submission import SUBMISSION_FIELDS, check_submission, json_type

    text = (REPO_ROOT / "docs" / "SUBMITTING.md").read_text(encoding="utf-8")
    table = re.findall(r"^\| `(\w+)` \| (\w+) \|", text, re.M)
    assert table == [(key, json_type(kind)) for key, kind in SUBMISSION_FIELDS.items()]
    example = re.search(r"\(`submission.json`\):\n\n```json\n(.*?)\n```", text, re.S)
    assert example is not None
    check_submission(json.loads(example.group(1)), "docs/SUBMITTING.md")


def test_the_oracle_never_picks_an_episode_that_leaves_a_job_unfinished(
        results: dict[str, Path]) -> None:
    # las/pal's 70 s on (task-a, tr2, seed 1) leaves a job unfinished: the oracle takes the
    # lowest finished episode there (srtf/pal, 100 s), so its ratios to the best become
    # 0.9 1 1 1 1 1 instead of 0.9 1 1 1 1 0.7
    lines = [replace(line, unfinished_jobs=1, completed_jobs=9)
             if (line.task, line.split, line.trace, line.seed, line.member)
             == ("task-a", "test", "tr2", 1, "las/pal") else line
             for line in lines_of("field")]
    write(results["field"], header("field"), lines)
    (board,) = boards(results)
    oracle = board.tasks[0].oracle
    assert oracle is not None
    assert oracle.summary.to_best_geomean.point[0] == pytest.approx(0.9 ** (1 / 6), rel=1e-12)
    assert oracle.unfinished_jobs == 0
