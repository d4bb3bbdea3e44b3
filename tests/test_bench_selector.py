"""palgym-bench's rule-selector entry (``--agent selector:PATH``): its rows are the engine's
rule selection on the env's episodes, a constant selector's equal the heuristic's, a switching
selector's replay from its recorded choices, tampering is named, and the tasks a selector
cannot run are refused."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from agents.bench.cli import main
from agents.bench.runner import run_entry
from agents.selection.entry import PRETRAINED_SELECTORS
from agents.selection.selector import LinearSelector
from palgym.bench.entries import RunRequest, entry_kind, entry_name
from palgym.bench.leaderboard_tables import build_leaderboard
from palgym.bench.replay import Problem, validate_files
from palgym.bench.results import (
    METRIC_FIELDS,
    SCHEMA,
    ResultsError,
    decode_actions,
    encode_actions,
    read_results,
)
from palgym.bench.selector_entry import selector_path
from palgym.bench.suites import DataRoots, load_suite, split_env_kwargs, split_traces
from palgym.errors import ConfigError
from palgym.rule_selection import run_selected_episode
from tests.bench_suites import tiny_suite

RULES = ("srtf/pal+backfill", "fifo/pal+easy")
TASK = "scheduling-clairvoyant"
FIELDS = {TASK: ["srtf/pal+backfill", "fifo/pal"]}
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_suite(tmp_path_factory.mktemp("bench"),
                      [TASK, "placement-default", "dynamic-online"], seeds=(0, 1),
                      fields=FIELDS)


def _run(suite: Path, agent: str, output: Path, **options: Any) -> Path:
    request = RunRequest(str(suite), agent, output, DataRoots(), tasks=(TASK,), progress=False)
    run_entry(replace(request, **options))
    return output


@pytest.fixture(scope="module")
def files(suite: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("selector")
    LinearSelector.constant(RULES).save(folder / "constant.json")
    # switches to fifo/pal+easy while a job has queued more than 36 s
    LinearSelector.guard(RULES, 0.01, 1).save(folder / "guard.json")
    return {
        "suite": suite, "constant.json": folder / "constant.json",
        "guard.json": folder / "guard.json",
        "heuristic": _run(suite, "srtf/pal+backfill", folder / "heuristic.jsonl"),
        "constant": _run(suite, f"selector:{folder / 'constant.json'}",
                         folder / "constant.jsonl"),
        "guard": _run(suite, f"selector:{folder / 'guard.json'}", folder / "guard.jsonl"),
    }


def _problems(path: Path, suite: Path) -> list[Problem]:
    [(_, problems)] = list(validate_files([path], DataRoots(), suite))
    return problems


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.mark.parametrize(("spec", "name"), [
    ("selector:runs/sel/guard.json", "guard"), ("selector:pretrained:cem-6", "cem-6")])
def test_a_selector_spec_is_its_own_kind_named_after_its_file(spec: str, name: str) -> None:
    assert entry_kind(spec) == "selector" and entry_name(spec, "selector") == name


def test_a_pretrained_selector_is_a_plain_name_in_its_folder(tmp_path: Path) -> None:
    assert PRETRAINED_SELECTORS == REPO / "agents" / "pretrained" / "rule-selector"
    (tmp_path / "cem.json").write_text("{}")
    assert selector_path("selector:pretrained:cem", tmp_path) == tmp_path / "cem.json"
    for name, message in (("../cem", "not a path"), ("sub/cem", "not a path"),
                          (str(tmp_path / "cem"), "not a path"), ("", "not a path"),
                          ("other", "no selector file")):
        with pytest.raises(ConfigError, match=message):
            selector_path(f"selector:pretrained:{name}", tmp_path)
    with pytest.raises(ConfigError, match="does not exist"):
        selector_path("selector:pretrained:cem", tmp_path / "nowhere")


def test_a_constant_selector_writes_the_heuristics_metrics_and_hashes(
        files: dict[str, Path]) -> None:
    heuristic, constant = read_results(files["heuristic"]), read_results(files["constant"])
    assert len(constant.episodes) == len(heuristic.episodes) == 2  # 1 test trace x 2 seeds
    for (_, ours), (_, theirs) in zip(constant.episodes, heuristic.episodes, strict=True):
        assert (ours.trace, ours.seed) == (theirs.trace, theirs.seed)
        for name in ("episode_hash", *METRIC_FIELDS):
            if name != "decisions":  # the selector's asks, not env steps
                assert getattr(ours, name) == getattr(theirs, name), name
        choices = decode_actions(ours.actions).tolist()
        assert choices == [0] * ours.decisions and 0 < ours.decisions < theirs.decisions
    header = constant.header
    assert (header.schema, header.entry_kind, header.entry) == (SCHEMA, "learned", "constant")
    digest = hashlib.sha256(files["constant.json"].read_bytes()).hexdigest()
    layout = load_suite(files["suite"]).task(TASK).env_layout  # the suite's frozen layout
    assert header.members == {TASK: {"constant": {
        "env_kwargs": {}, "env_layout": layout,
        "selector": {"rules": list(RULES), "sha256": digest}}}}

def test_a_switching_selector_validates(files: dict[str, Path], suite: Path) -> None:
    guard = read_results(files["guard"])
    for _, row in guard.episodes:
        choices = decode_actions(row.actions).tolist()
        # nothing has queued at the first round: the guard holds rule 0, then switches
        assert choices[0] == 0 and 1 in choices and len(choices) == row.decisions
    assert _problems(files["guard"], suite) == []
    assert _problems(files["constant"], suite) == []
    assert main(["validate", str(files["guard"]), "--suite", str(suite)]) == 0


def _episode(suite: Path, seed: int, task_name: str = TASK) -> Any:
    """The env's episode of the test trace with ``seed``, and its durations."""
    loaded = load_suite(suite)
    task = loaded.task(task_name)
    env = gym.make(task.env_id, **split_env_kwargs(loaded, task, "test", DataRoots()),
                   trace=split_traces(loaded, task, "test", DataRoots()))
    env.reset(seed=seed, options={"trace": 0})
    base: Any = env.unwrapped
    found = base.episode, base.durations
    env.close()
    return found


def test_a_tampered_choice_is_rejected_naming_the_fields(files: dict[str, Path], suite: Path,
                                                         tmp_path: Path) -> None:
    lines = _lines(files["guard"])
    row = lines[1]
    choices = decode_actions(row["actions"]).tolist()
    episode, durations = _episode(suite, row["seed"])
    for index in range(len(choices)):  # the first choice whose change changes the episode
        flipped = [*choices[:index], 1 - choices[index], *choices[index + 1:]]
        given = iter(flipped)

        def replaying(features: Any, view: Any, given: Any = given) -> int:
            return int(next(given))

        done = run_selected_episode(episode, RULES, replaying, durations)
        metrics = done.result.metrics
        expected = {"avg_jct_s": metrics.avg_jct_s, "p99_jct_s": metrics.p99_jct_s,
                    "makespan_s": metrics.makespan_s,
                    "utilization": metrics.utilization_effective}
        differing = {k: v for k, v in expected.items() if v != row[k]}
        if done.choices == len(choices) and differing:
            break
    else:
        pytest.fail("no single changed choice changes the episode")
    path = _write(tmp_path / "flipped.jsonl",
                  [lines[0], {**row, "actions": encode_actions(flipped)}, *lines[2:]])
    problems = _problems(path, suite)
    assert {(p.path, p.line, p.field, p.expected, p.found) for p in problems} == {
        (str(path), 2, name, value, row[name]) for name, value in differing.items()}
    for actions, note in ((choices + [0], f"after {len(choices)} of the file's "
                                          f"{len(choices) + 1} choices"),
                          (choices[:-1], f"more than the file's {len(choices) - 1} times"),
                          ([*choices[:-1], 2], f"choice {len(choices) - 1} refused")):
        path = _write(tmp_path / "bad.jsonl",
                      [lines[0], {**row, "actions": encode_actions(actions),
                                  "decisions": len(actions)}, *lines[2:]])
        [problem] = _problems(path, suite)
        assert (problem.line, problem.field) == (2, "actions") and note in problem.found


def test_a_tampered_metric_is_rejected_naming_line_and_field(
        files: dict[str, Path], suite: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    lines = _lines(files["guard"])
    original = lines[2]["makespan_s"]
    lines[2]["makespan_s"] = original + 60.0
    path = _write(tmp_path / "tampered.jsonl", lines)
    [problem] = _problems(path, suite)
    assert (problem.line, problem.field, problem.expected, problem.found) == (
        3, "makespan_s", original, original + 60.0)
    assert main(["validate", str(path), "--suite", str(suite)]) == 1
    assert f"{path}, line 3, field 'makespan_s': expected {original!r}" in capsys.readouterr().out


def test_a_bad_selector_object_and_an_old_schema_are_refused(
        files: dict[str, Path], suite: Path, tmp_path: Path) -> None:
    lines = _lines(files["guard"])
    member = lines[0]["members"][TASK]["guard"]
    member["selector"] = {**member["selector"], "rules": ["srtf/pal+backfill", "nope/pal"]}
    [problem] = _problems(_write(tmp_path / "rules.jsonl", lines), suite)
    assert problem.field == f"members.{TASK}.guard.selector" and "nope/pal" in problem.expected
    lines = _lines(files["guard"])
    lines[0]["members"][TASK]["guard"]["env_kwargs"] = {"sticky": True}
    [problem] = _problems(_write(tmp_path / "kwargs.jsonl", lines), suite)
    assert problem.field == f"members.{TASK}.guard.env_kwargs"
    lines = _lines(files["guard"])
    lines[0]["schema"] = "palgym-bench-results/1"
    with pytest.raises(ResultsError) as caught:
        read_results(_write(tmp_path / "old.jsonl", lines))
    assert (caught.value.line, caught.value.field) == (1, f"members.{TASK}.guard.selector")


def test_the_leaderboard_ranks_a_selector_as_learned(files: dict[str, Path], suite: Path,
                                                     tmp_path: Path) -> None:
    others = [_run(suite, name, tmp_path / f"{name}.jsonl") for name in ("pal", "best")]
    (board,) = build_leaderboard([read_results(p) for p in [*others, files["guard"]]],
                                 num_resamples=50)
    (table,) = board.tasks
    [row] = [r for r in table.rows if r.entry == "guard"]
    assert row.kind == "learned" and not row.reference and row.num_episodes == 2


def test_tasks_a_selector_cannot_run_are_refused(files: dict[str, Path], suite: Path,
                                                 tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    spec = f"selector:{files['guard.json']}"
    output = str(tmp_path / "x.jsonl")
    for task, reason in (("placement-default", "fixes queue order 'fifo' (regime fixed)"),
                         ("dynamic-online", "fixes queue order 'fifo' (regime fixed)")):
        assert main(["run", "--suite", str(suite), "--agent", spec, "--tasks", task,
                     "--output", output, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert f"task {task}" in err and reason in err and f"--tasks {TASK}" in err
    for agent, extra, message in (
            ("selector:pretrained:../x", [], "takes the plain name of a selector"),
            (spec, ["--workers", "2"], "runs in one process")):
        assert main(["run", "--suite", str(suite), "--agent", agent, "--tasks", TASK,
                     "--output", output, "--quiet", *extra]) == 2
        assert message in capsys.readouterr().err
    assert not Path(output).exists()


def test_a_missing_selector_file_is_one_line_and_status_2(suite: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    done = subprocess.run(
        [sys.executable, "-m", "palgym.bench", "run", "--suite", str(suite), "--agent",
         f"selector:{missing}", "--tasks", TASK, "--output", str(tmp_path / "x.jsonl")],
        capture_output=True, text=True, cwd=REPO, timeout=300, check=False)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"error: --agent selector:{missing}: no selector file "
                                        f"{str(missing)!r}"]
