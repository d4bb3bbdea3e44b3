"""A user's placement whose GPU sets no env candidate holds enters the bench: it runs on the
engine with its schedule recorded, ``validate`` replays the record without the user's module
(in a process where it cannot be imported) and refuses a record with one GPU set changed."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from agents.bench.runner import run_entry
from palgym.bench.entries import RunRequest
from palgym.bench.replay import validate_files
from palgym.bench.results import SCHEDULE_SCHEMA, decode_actions, read_results
from palgym.bench.suites import DataRoots
from palgym.errors import PalgymError
from palgym.schedule_record import (
    FORMAT,
    ScheduleError,
    ScheduleRecord,
    commit_of,
    record_episode,
    replay_schedule,
)
from palgym.sim.types import FREE
from palgym.simulate import make_episode, run_episode
from tests.bench_suites import tiny_suite
from tests.test_belief import bundled_trace

ROOT = Path(__file__).resolve().parents[1]
SPEC = "tests.node_fastest:NodeFastest"
TASK = "placement-default"


@pytest.fixture(scope="module")
def episode():  # type: ignore[no-untyped-def]
    return make_episode(bundled_trace("sia-philly-gen-0.csv"), seed=3)


@pytest.fixture(scope="module")
def recorded(episode):  # type: ignore[no-untyped-def]
    return record_episode(episode, SPEC)


def test_commit_of_lists_each_changed_job_with_its_new_set() -> None:
    before = np.array([0, 0, FREE, 1, 1, FREE], dtype=np.int64)
    target = np.array([0, 0, 1, 1, FREE, 2], dtype=np.int64)
    # job 0 keeps {0, 1}; job 1 moves from {3, 4} to {2, 3}; job 2 starts on {5}
    commit = commit_of(7, before, target)
    assert commit is not None and commit.round_index == 7
    assert commit.changes == ((1, (2, 3)), (2, (5,)))
    assert commit.target(before).tolist() == target.tolist()
    assert commit_of(7, before, before.copy()) is None
    # a job that stops is listed with no GPU
    stop = commit_of(8, target, np.array([0, 0, FREE, FREE, FREE, 2], dtype=np.int64))
    assert stop is not None and stop.changes == ((1, ()),)


def test_the_replayed_record_gives_the_run_bit_for_bit(episode, recorded) -> None:  # type: ignore[no-untyped-def]
    plain = run_episode(episode, SPEC)
    assert recorded.result.metrics == plain.metrics  # recording changes nothing
    assert len(recorded.record) > 0 and recorded.asked >= len(recorded.record)
    flat = recorded.record.to_ints()
    again = ScheduleRecord.from_ints(flat)
    assert again == recorded.record
    replayed = replay_schedule(episode, again)
    assert replayed.metrics == plain.metrics
    assert replayed.num_rounds == plain.num_rounds
    assert replayed.episode_hash == plain.episode_hash
    assert np.array_equal(replayed.records.jct_s, plain.records.jct_s)


def _with_gpus(record: ScheduleRecord, index: int, gpus: tuple[int, ...]) -> ScheduleRecord:
    """``record`` with the first changed job of commit ``index`` given ``gpus``."""
    commits = list(record.commits)
    commit = commits[index]
    (job, _), *rest = commit.changes
    commits[index] = type(commit)(commit.round_index, ((job, gpus), *rest))
    return ScheduleRecord(tuple(commits))


def test_a_bad_record_is_refused_naming_the_commit(episode, recorded) -> None:  # type: ignore[no-untyped-def]
    record = recorded.record
    first = record.commits[0]
    (job, gpus), *_ = first.changes
    # one GPU short: the engine refuses a job on other than its num_gpus GPUs
    refused = rf"commit 0 \(round {first.round_index}\) is refused: job index {job} needs"
    with pytest.raises(ScheduleError, match=refused):
        replay_schedule(episode, _with_gpus(record, 0, gpus[:-1]))
    with pytest.raises(ScheduleError, match="outside 0..63"):
        replay_schedule(episode, _with_gpus(record, 0, (*gpus[:-1], 64)))
    # a commit after the episode's end
    late = ScheduleRecord((*record.commits, type(first)(10**6, first.changes)))
    with pytest.raises(ScheduleError, match="commits left"):
        replay_schedule(episode, late)
    flat = record.to_ints()
    with pytest.raises(ScheduleError, match="ends at position"):
        ScheduleRecord.from_ints(flat[:-1])
    with pytest.raises(ScheduleError, match="not after the previous"):
        ScheduleRecord.from_ints(flat + flat[:2 + 2 + flat[3]])


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_suite(tmp_path_factory.mktemp("bench"), [TASK], seeds=(0, 1))


def test_the_env_cannot_act_as_it(suite: Path) -> None:
    # what the bench ran before: the placement through the env, whose candidates hold no
    # "fastest node" GPU set of some job
    from agents.bench.runner import run_unit
    from palgym.bench.entries import Unit
    from palgym.bench.suites import load_suite

    loaded = load_suite(str(suite))
    with pytest.raises(PalgymError, match="no env candidate holds"):
        run_unit(Unit(str(suite), DataRoots(), TASK, "test", (SPEC,), "heuristic"))
    assert loaded.task(TASK).queue_order_regime == "fixed"


@pytest.fixture(scope="module")
def results(suite: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    output = tmp_path_factory.mktemp("run") / "node.jsonl"
    run_entry(RunRequest(str(suite), SPEC, output, DataRoots(), progress=False))
    return output


def test_the_run_records_a_schedule_that_validates(results: Path, suite: Path) -> None:
    read = read_results(results)
    header = read.header
    assert header.schema == SCHEDULE_SCHEMA and header.entry_kind == "module"
    assert header.entry == "node-fastest"
    member = header.members[TASK]["node-fastest"]
    assert member["env_kwargs"] == {}
    assert member["schedule"] == {"format": FORMAT, "placement": "node-fastest",
                                  "queue_order": "fifo"}
    assert len(read.episodes) == 2  # one test trace x two seeds
    for _, row in read.episodes:
        record = ScheduleRecord.from_ints(decode_actions(row.actions))
        assert row.decisions == len(record) > 0
        assert row.unfinished_jobs == 0
    [(path, problems)] = list(validate_files([results], DataRoots(), suite))
    assert problems == []


def _tampered(results: Path, folder: Path) -> Path:
    """``results`` with job j's GPU set in the first commit of the first row moved by one
    GPU (same size, another set)."""
    lines = results.read_text().splitlines()
    row = json.loads(lines[1])
    flat = decode_actions(row["actions"]).tolist()
    # flat: round, K, job, N, gpus...; shift the first GPU of the first job to a free one
    n = flat[3]
    gpus = flat[4:4 + n]
    spare = next(g for g in range(64) if g not in flat[4:])
    flat[4] = spare
    assert sorted(flat[4:4 + n]) != sorted(gpus)
    row["actions"] = base64.b64encode(zlib.compress(
        np.asarray(flat, dtype="<i4").tobytes(), 9)).decode("ascii")
    lines[1] = json.dumps(row)
    out = folder / "tampered.jsonl"
    out.write_text("\n".join(lines) + "\n")
    return out


def test_one_changed_gpu_set_is_refused(results: Path, suite: Path, tmp_path: Path) -> None:
    tampered = _tampered(results, tmp_path)
    [(_, problems)] = list(validate_files([tampered], DataRoots(), suite))
    assert problems and {p.line for p in problems} == {2}
    assert any(p.field in ("actions", "avg_jct_s", "episode_hash", "utilization")
               for p in problems)


def _python(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900, check=False)


def test_the_command_line_runs_and_validates_without_the_module(suite: Path,
                                                                tmp_path: Path) -> None:
    # run from a folder holding my.py; validate from one where `my` cannot be imported
    mine, elsewhere = tmp_path / "mine", tmp_path / "elsewhere"
    mine.mkdir()
    elsewhere.mkdir()
    shutil.copy(ROOT / "tests" / "node_fastest.py", mine / "my.py")
    output = mine / "node.jsonl"
    done = _python(["-m", "palgym.bench", "run", "--suite", str(suite), "--agent",
                    "my:NodeFastest", "--output", str(output), "--quiet"], mine)
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stdout
    probe = _python(["-c", "import importlib.util as u; print(u.find_spec('my'))"], elsewhere)
    assert probe.stdout.strip() == "None"
    valid = _python(["-m", "palgym.bench", "validate", str(output), "--suite", str(suite)],
                    elsewhere)
    assert valid.returncode == 0, valid.stdout + valid.stderr
    assert f"valid {output}" in valid.stdout
    tampered = _tampered(output, elsewhere)
    refused = _python(["-m", "palgym.bench", "validate", str(tampered), "--suite", str(suite)],
                      elsewhere)
    assert refused.returncode == 1 and "REJECTED" in refused.stdout
    assert "line 2" in refused.stdout


def test_whole_targets_are_recorded_as_what_changed(episode) -> None:  # type: ignore[no-untyped-def]
    # every target a placement returns, at its round, whether it changed anything or not
    from palgym.schedule_record import schedule_of_targets
    from palgym.simulate import slowdown_factors
    from tests.node_fastest import NodeFastest

    asked: list[tuple[int, np.ndarray]] = []

    class Asked(NodeFastest):
        def place(self, view, order, sampler):  # type: ignore[no-untyped-def]
            target = super().place(view, order, sampler)
            asked.append((view.round_index, target.copy()))
            return target

    placement = Asked(slowdown_factors(episode))
    recorded = record_episode(episode, placement)
    assert len(asked) == recorded.asked > len(recorded.record)  # some targets change nothing
    result, record = schedule_of_targets(episode, asked)
    assert record == recorded.record
    assert result.metrics == recorded.result.metrics
    assert replay_schedule(episode, record).metrics == recorded.result.metrics
    with pytest.raises(ScheduleError, match="not after the previous"):
        schedule_of_targets(episode, [asked[1], asked[0]])
