"""palgym-bench replay validation: a run's file is valid; a changed metric, a changed action
and a file of another env layout are each rejected, named by file, line and field; usage
errors exit with 2."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from agents.bench.cli import main
from agents.bench.runner import run_entry
from palgym import make_episode, preset, run_episode
from palgym.bench.entries import RunRequest
from palgym.bench.replay import Problem, validate_files
from palgym.bench.results import decode_actions, encode_actions, read_results
from palgym.bench.suites import DataRoots, load_suite, split_env_kwargs, split_traces
from palgym.bundled import bundled_profile
from tests.bench_suites import tiny_suite

TASKS = ("placement-default", "scheduling-clairvoyant")


@pytest.fixture(scope="module")
def pal_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """PAL on two tiny tasks (8-job windows of the bundled test trace, seeds 0 and 1)."""
    folder = tmp_path_factory.mktemp("bench")
    suite = tiny_suite(folder, TASKS, seeds=(0, 1))
    output = folder / "pal.jsonl"
    run_entry(RunRequest(str(suite), "pal", output, DataRoots(), progress=False))
    return suite, output


def _problems(path: Path, suite: Path) -> list[Problem]:
    [(checked, problems)] = validate_files([path], DataRoots(), suite)
    assert checked == path
    return problems


def _edit(source: Path, target: Path, line: int, **changes: object) -> Path:
    lines = source.read_text().splitlines()
    row = json.loads(lines[line - 1])
    for key, value in changes.items():
        head, _, rest = key.partition(".")
        if rest:
            row[head][rest] = value
        else:
            row[key] = value
    lines[line - 1] = json.dumps(row)
    target.write_text("\n".join(lines) + "\n")
    return target


def test_a_run_file_is_valid_and_complete(pal_file: tuple[Path, Path]) -> None:
    suite, path = pal_file
    assert _problems(path, suite) == []
    assert main(["validate", str(path), "--suite", str(suite)]) == 0
    results = read_results(path)
    assert [(r.task, r.split, r.seed) for _, r in results.episodes] == [
        (t, "test", s) for t in TASKS for s in (0, 1)]
    assert all(r.decisions == decode_actions(r.actions).size > 0 for _, r in results.episodes)


def test_rows_equal_the_simulator_run_of_the_same_episode(pal_file: tuple[Path, Path]) -> None:
    # The env's heuristic reproduces run_episode bit for bit (benchmarks/env_parity.py): the
    # window the env draws for seed s starts at rng.integers(J - 8 + 1) of the env's seeded
    # generator (named TRACE[start:stop], times rebased), then the episode seed is its next
    # draw; the env's defaults: the bundled profile of the preset's sampling, 100,000 rounds.
    suite_path, path = pal_file
    suite = load_suite(suite_path)
    task = suite.task("placement-default")
    [trace] = split_traces(suite, task, "test", DataRoots())
    for _, row in read_results(path).episodes:
        if row.task != task.name:
            continue
        rng = np.random.default_rng(row.seed)
        start = int(rng.integers(trace.num_jobs - 8 + 1))
        episode_seed = int(rng.integers(2**31 - 1))
        keep = np.zeros(trace.num_jobs, dtype=bool)
        keep[start:start + 8] = True
        window = trace.select(keep, name=f"{trace.name}[{start}:{start + 8}]")
        window = replace(window, submit_time_s=window.submit_time_s - window.submit_time_s[0])
        episode = make_episode(window, config=preset("default", max_rounds=100_000),
                               profile=bundled_profile("gpu-median", 64), seed=episode_seed)
        result = run_episode(episode, policy="pal", queue_order="fifo")
        assert episode.episode_hash() == row.episode_hash
        assert result.metrics.avg_jct_s == row.avg_jct_s
        assert result.metrics.makespan_s == row.makespan_s


def test_a_changed_metric_is_rejected_naming_line_and_field(pal_file: tuple[Path, Path],
                                                            tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    suite, path = pal_file
    row = json.loads(path.read_text().splitlines()[2])
    tampered = _edit(path, tmp_path / "metric.jsonl", 3, avg_jct_s=row["avg_jct_s"] * 0.99)
    problems = _problems(tampered, suite)
    assert [(p.line, p.field) for p in problems] == [(3, "avg_jct_s")]
    assert problems[0].expected == row["avg_jct_s"]
    assert problems[0].found == row["avg_jct_s"] * 0.99
    assert main(["validate", str(tampered), "--suite", str(suite)]) == 1
    out = capsys.readouterr().out
    assert f"REJECTED {tampered}" in out and "line 3, field 'avg_jct_s'" in out


def test_a_changed_action_is_rejected(pal_file: tuple[Path, Path], tmp_path: Path) -> None:
    # (1) "End the round" (action K * M = 16 * (2 * 16 + 2) under the heuristic's max_tiers
    # 16) is not valid in the placement task: the env counts it and takes PAL's action.
    # (2) The first job on a random GPU set (candidate M - 1 = 33 of its slot: valid, drawn
    # from the episode's stream) instead of PAL's set.
    suite_path, path = pal_file
    row = json.loads(path.read_text().splitlines()[1])
    actions = decode_actions(row["actions"])
    end_round = 16 * (2 * 16 + 2)
    assert actions[0] != end_round
    changed = encode_actions([end_round, *actions[1:].tolist()])
    problems = _problems(_edit(path, tmp_path / "action.jsonl", 2, actions=changed), suite_path)
    assert [(p.line, p.field, p.expected, p.found) for p in problems] == [
        (2, "invalid_actions", 1, 0)]
    suite = load_suite(suite_path)
    task = suite.task("placement-default")
    env = gym.make(task.env_id, **split_env_kwargs(suite, task, "test", DataRoots()),
                   max_tiers=16, trace=split_traces(suite, task, "test", DataRoots()))
    env.reset(seed=0, options={"trace": 0})
    valid = np.flatnonzero(env.unwrapped.action_masks())
    env.close()
    other = int(actions[0]) // 34 * 34 + 33
    assert other in valid and other != actions[0]
    changed = encode_actions([other, *actions[1:].tolist()])
    problems = _problems(_edit(path, tmp_path / "valid.jsonl", 2, actions=changed), suite_path)
    assert problems and {p.line for p in problems} == {2}
    assert {p.field for p in problems} <= {"actions", "avg_jct_s", "p99_jct_s", "makespan_s",
                                           "utilization", "decisions", "completed_jobs",
                                           "unfinished_jobs"}


def test_a_file_of_another_layout_version_is_rejected(pal_file: tuple[Path, Path],
                                                      tmp_path: Path) -> None:
    suite, path = pal_file
    current = read_results(path).header.env_layouts["placement-default"]
    other = _edit(path, tmp_path / "layout.jsonl", 1,
                  **{"env_layouts.placement-default": "0123456789abcdef"})
    problems = _problems(other, suite)
    assert [(p.line, p.field, p.expected, p.found) for p in problems] == [
        (1, "env_layouts.placement-default", current, "0123456789abcdef")]
    member = _edit(path, tmp_path / "member.jsonl", 1, **{
        "members.placement-default": {"pal": {"env_kwargs": {"max_tiers": 16, "sticky": False},
                                              "env_layout": "0123456789abcdef"}}})
    assert [(p.line, p.field) for p in _problems(member, suite)] == [
        (1, "members.placement-default.pal.env_layout")]


def test_other_suite_bytes_and_a_missing_episode_are_rejected(pal_file: tuple[Path, Path],
                                                              tmp_path: Path) -> None:
    suite, path = pal_file
    other = _edit(path, tmp_path / "suite.jsonl", 1, suite_sha256="0" * 64)
    assert [(p.line, p.field) for p in _problems(other, suite)] == [(1, "suite_sha256")]
    lines = path.read_text().splitlines()
    short = tmp_path / "short.jsonl"
    short.write_text("\n".join(lines[:-1]) + "\n")
    problems = _problems(short, suite)
    assert [(p.field, p.expected) for p in problems] == [
        ("record", "test episode sia-philly-gen-4 seed 1 of pal on scheduling-clairvoyant")]


def test_a_member_kwarg_outside_the_agents_is_rejected(pal_file: tuple[Path, Path],
                                                       tmp_path: Path) -> None:
    # A member may not change what the scheduler knows (here: the job durations).
    suite, path = pal_file
    edited = _edit(path, tmp_path / "knows.jsonl", 1, **{"members.placement-default": {
        "pal": {"env_kwargs": {"duration_knowledge": "clairvoyant"},
                "env_layout": "945904c44a90ad53"}}})
    assert [(p.line, p.field) for p in _problems(edited, suite)] == [
        (1, "members.placement-default.pal.env_kwargs")]


def test_usage_errors_exit_with_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "missing.jsonl")]) == 2
    assert main(["run", "--suite", "no-such-suite", "--agent", "pal", "--output",
                 str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "missing.jsonl" in err and "unknown suite 'no-such-suite'" in err
    with pytest.raises(SystemExit) as caught:
        main(["run", "--suite", "x"])
    assert caught.value.code == 2


def test_a_submission_that_picks_on_the_test_split_is_rejected(pal_file: tuple[Path, Path],
                                                               tmp_path: Path) -> None:
    # docs/SUBMITTING.md: a parameter is never picked on the test split; validate checks the
    # header's submission object as `run --submission` and the leaderboard do.
    suite, path = pal_file
    submission = {
        "submitter": "A. Tester", "env_modified": False, "env_modifications": "",
        "parameters": {"K": 4}, "parameters_tried": {"K": [2, 4]},
        "selection_data": {"K": "bundled:validation"}, "training_traces": [],
        "training_env_steps": 0, "training_wall_time_s": 0.0, "deterministic": True,
        "hardware": "2 CPU cores", "model": "",
    }
    fine = _edit(path, tmp_path / "fine.jsonl", 1, submission=submission)
    assert _problems(fine, suite) == []
    picked = _edit(path, tmp_path / "picked.jsonl", 1,
                   submission={**submission, "selection_data": {"K": "bundled:test"}})
    rule = "data other than the test split (parameters are never picked on it)"
    assert [(p.line, p.field, p.expected, p.found) for p in _problems(picked, suite)] == [
        (1, "submission.selection_data.K", rule, "bundled:test")]
    # the tiny suite's test split is sia-philly-gen-4 (tests/bench_suites.py): naming it as a
    # whole token is picking on the test split; a longer token is another name
    named = _edit(path, tmp_path / "named.jsonl", 1, submission={
        **submission, "selection_data": {"K": "traces/sia-philly-gen-4.csv"}})
    assert [(p.field, p.expected, p.found) for p in _problems(named, suite)] == [
        ("submission.selection_data.K", f"{rule}; 'sia-philly-gen-4' is a test trace",
         "traces/sia-philly-gen-4.csv")]
    other = _edit(path, tmp_path / "other.jsonl", 1, submission={
        **submission, "selection_data": {"K": "sia-philly-gen-40, sia-philly-gen-3"}})
    assert _problems(other, suite) == []


@pytest.mark.parametrize(("change", "field", "expected", "found"), [
    ({"training_env_steps": -5}, "submission.training_env_steps", ">= 0", -5),
    ({"deterministic": "yes"}, "submission.deterministic", "a JSON boolean", "yes"),
    ({"hardware": None}, "submission.hardware", "a value (every key is required)", "missing"),
    ({"gpu": 1}, "submission", "only the keys ['submitter', 'env_modified', "
     "'env_modifications', 'parameters', 'parameters_tried', 'selection_data', "
     "'training_traces', 'training_env_steps', 'training_wall_time_s', 'deterministic', "
     "'hardware', 'model']", ["gpu"]),
    ({"env_modified": True}, "submission.env_modifications",
     "how the env was modified (env_modified is true)", ""),
    ({"selection_data": {}}, "submission.selection_data", "the keys of parameters_tried ['K']",
     []),
])
def test_a_bad_submission_is_reported_as_rule_and_value(
        pal_file: tuple[Path, Path], tmp_path: Path, change: dict[str, object], field: str,
        expected: str, found: object) -> None:
    suite, path = pal_file
    submission = {
        "submitter": "A. Tester", "env_modified": False, "env_modifications": "",
        "parameters": {"K": 4}, "parameters_tried": {"K": [2, 4]},
        "selection_data": {"K": "bundled:validation"}, "training_traces": [],
        "training_env_steps": 0, "training_wall_time_s": 0.0, "deterministic": True,
        "hardware": "2 CPU cores", "model": "", **change,
    }
    if change.get("hardware", "") is None:
        del submission["hardware"]
    edited = _edit(path, tmp_path / "bad.jsonl", 1, submission=submission)
    [problem] = _problems(edited, suite)
    assert (problem.line, problem.field, problem.expected, problem.found) == (
        1, field, expected, found)
    assert str(problem).startswith(f"{edited}, line 1, field {field!r}: expected "
                                   f"{expected!r}, found {found!r}")


def test_a_work_conserving_member_runs_and_validates(tmp_path: Path) -> None:
    """A model trained on the work-conserving scheduling env (RESERVE, docs/ENV.md) is a
    member whose env kwargs add ``work_conserving``: its rows replay on that env and
    validate, and its header records that env's layout."""
    pytest.importorskip("sb3_contrib")
    from agents.sb3.training import TrainSettings, train
    from palgym.envs.layouts import ENV_LAYOUTS

    env_id = "palgym/PALScheduling-v0"
    run = train(TrainSettings(
        env_id=env_id, n_timesteps=32, trace="sia-philly-gen-0", window=8, eval_freq=-1,
        log_folder=str(tmp_path / "runs"), env_kwargs={"work_conserving": True}, verbose=0,
        n_envs=1, references=(),
        hyperparams={"n_steps": 32, "batch_size": 32, "n_epochs": 1,
                     "policy_kwargs": "dict(scorer_arch=[8], net_arch=[8])"})).run_dir
    suite = tiny_suite(tmp_path, ["scheduling-clairvoyant"], seeds=(0, 1))
    output = tmp_path / "model.jsonl"
    run_entry(RunRequest(str(suite), str(run), output, DataRoots(), progress=False))
    results = read_results(output)
    [(member, entry)] = results.header.members["scheduling-clairvoyant"].items()
    assert entry["env_kwargs"]["work_conserving"] is True
    assert entry["env_layout"] == ENV_LAYOUTS[env_id]["work_conserving"]
    rows = [row for _, row in results.episodes]
    assert len(rows) == 2 and all(row.member == member for row in rows)
    assert all(row.invalid_actions == 0 and row.decisions > 0 for row in rows)
    assert _problems(output, suite) == []
    # a replay on the task's own env (no RESERVE) would be another layout: it is refused
    edited = _edit(output, tmp_path / "plain.jsonl", 1, **{"members.scheduling-clairvoyant": {
        member: {"env_kwargs": {}, "env_layout": entry["env_layout"]}}})
    assert [(p.line, p.field) for p in _problems(edited, suite)] == [
        (1, f"members.scheduling-clairvoyant.{member}.env_layout")]
