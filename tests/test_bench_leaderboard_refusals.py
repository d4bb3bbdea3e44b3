"""palgym.bench.leaderboard's refusals (bad files, bad headers and episodes, bad submission
objects) and the submission template, on the synthetic suite of
:mod:`tests.bench_leaderboard_files`."""

from __future__ import annotations

import json
import re
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
    read_results,
    results_text,
)
from palgym.errors import ConfigError
from tests.bench_leaderboard_files import (
    REPO_ROOT,
    boards,
    header,
    leaderboard_error,
    lines_of,
    refusal,
    results_files,
    write,
)


@pytest.fixture()
def results(tmp_path: Path) -> dict[str, Path]:
    return results_files(tmp_path)



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


