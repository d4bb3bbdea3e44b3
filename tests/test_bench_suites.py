"""palgym-bench suites: the committed files load, are frozen against the current env layouts
and bundled files, name their missing or changed files, and refuse malformed fields."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from agents.bench.runner import prepare
from agents.evaluation.names import parse_heuristic
from palgym import make_episode, preset, read_profile
from palgym.bench.suites import (
    DataRoots,
    SuiteDataError,
    SuiteError,
    check_files,
    load_suite,
    split_env_kwargs,
    split_files,
    split_traces,
    suite_folder,
    suite_names,
    suite_test_traces,
)
from palgym.envs.layouts import env_layout
from palgym.policies.guards import default_guards
from palgym.sim.cluster import ClusterSpec
from palgym.simulate import slowdown_factors
from tests.bench_suites import LITE, lite_data

FULL = "palgym-bench-v1"


V2, V2_LITE = "palgym-bench-v2", "palgym-bench-v2-lite"
GUARD_HOURS = (8, 16, 24, 32, 48)


def test_the_committed_suites_are_listed() -> None:
    assert suite_names() == [FULL, LITE, V2, V2_LITE]


@pytest.mark.parametrize(("v1", "v2"), [(FULL, V2), (LITE, V2_LITE)])
def test_v2_adds_aging_guards_to_the_scheduling_fields_and_changes_nothing_else(
        v1: str, v2: str) -> None:
    # v2 = v1 but for the scheduling tasks' fields, which keep v1's members and add guards
    # at every threshold the room issue names; each guard parses as a heuristic name.
    old, new = load_suite(v1), load_suite(v2)
    assert [t.name for t in old.tasks] == [t.name for t in new.tasks]
    assert old.files == new.files
    for before, after in zip(old.tasks, new.tasks, strict=True):
        added = [m for m in after.heuristic_field if m not in before.heuristic_field]
        assert after.heuristic_field[:len(before.heuristic_field)] == before.heuristic_field
        if before.queue_order_regime == "fixed":
            assert after == before
            continue
        assert added and all("+age=" in m for m in added)
        for hours in GUARD_HOURS:
            assert any(f"+age={hours}h:" in m for m in added), (after.name, hours)
        assert added == default_guards(after.duration_knowledge)  # evaluate.py's default too
        for member in added:
            assert parse_heuristic(member, "field").label == member
        assert after.splits == before.splits and after.world == before.world


@pytest.mark.parametrize("name", [FULL, LITE, V2, V2_LITE])
def test_each_task_records_the_layout_of_its_env(name: str) -> None:
    # A suite is frozen against the env: each task's env_layout is the hash the current env
    # computes from the task's kwargs (the layout arguments only: no data is read).
    suite = load_suite(name)
    assert len(suite.tasks) == 6
    for task in suite.tasks:
        for split in ("validation", "test"):
            kwargs = split_env_kwargs(suite, task, split, DataRoots())
            assert env_layout(task.env_id, kwargs) == task.env_layout, (task.name, split)


@pytest.mark.parametrize("name", [FULL, LITE])
def test_bundled_files_have_their_recorded_hashes(name: str) -> None:
    suite = load_suite(name)
    bundled = [f for f in suite.files.values() if f.source == "bundled"]
    assert bundled
    for file in bundled:
        path = DataRoots().path(file)
        assert path is not None
        assert hashlib.sha256(path.read_bytes()).hexdigest() == file.sha256, file.id


@pytest.mark.parametrize("name", [FULL, LITE])
def test_heuristic_fields_are_canonical_names(name: str) -> None:
    for task in load_suite(name).tasks:
        for member in task.heuristic_field:
            assert parse_heuristic(member).label == member
        if task.queue_order_regime == "free":  # every member names its queue order
            assert all("/" in m for m in task.heuristic_field)


def test_the_lite_suite_reads_no_public_data() -> None:
    suite = load_suite(LITE)
    assert {f.source for f in suite.files.values()} == {"bundled", "generated"}
    assert all(t.world.get("window") == 30 for t in suite.tasks)


def test_prepare_writes_the_generated_files_with_their_hashes(tmp_path: Path) -> None:
    lines = prepare(LITE, tmp_path)
    suite = load_suite(LITE)
    generated = [f for f in suite.files.values() if f.source == "generated"]
    assert len(lines) == len(generated) == 5
    for file in generated:
        written = (tmp_path / file.path).read_bytes()
        assert hashlib.sha256(written).hexdigest() == file.sha256
    assert all(line.startswith("ok ") for line in prepare(LITE, tmp_path))  # idempotent


def test_the_cross_cluster_test_profile_needs_no_more_tiers_than_the_env_default(
        tmp_path: Path) -> None:
    # A model trained with the env's default max_tiers (4) on the training cluster must be
    # able to act on the test cluster: the drawn profile has <= 4 slowdown tiers per class
    # under the preset's rule (pal-artifact: the outliers rule).
    prepare(LITE, tmp_path, ("cross-cluster",))
    suite = load_suite(LITE)
    task = suite.task("cross-cluster")
    kwargs = split_env_kwargs(suite, task, "test", DataRoots(cache_dir=tmp_path))
    profile = read_profile(kwargs["profile"])
    episode = make_episode(split_traces(suite, task, "test", DataRoots(cache_dir=tmp_path))[0],
                           cluster=ClusterSpec.parse(kwargs["cluster"]),
                           config=preset(kwargs["preset"]), profile=profile, seed=0)
    tiers = [len(t) for t in slowdown_factors(episode).tiers]
    assert profile.perfvar.shape == (4, 128) and max(tiers) <= 4, tiers


def test_missing_public_data_names_the_files_and_the_variable() -> None:
    suite = load_suite(FULL)
    task = suite.task("placement-pal-artifact")
    with pytest.raises(SuiteDataError) as caught:
        check_files(suite, split_files(suite, task, "test"), DataRoots())
    message = str(caught.value)
    assert "traces/sia_philly_pal/workload-4.csv" in message
    assert "variability/longhorn_pal/resnet-longhorn-agg.csv" in message
    assert "PALGYM_DATA_DIR" in message and "--data-dir" in message


def test_missing_generated_files_name_the_prepare_command(tmp_path: Path) -> None:
    suite = load_suite(LITE)
    task = suite.task("cross-cluster")
    with pytest.raises(SuiteDataError) as caught:
        check_files(suite, split_files(suite, task, "test"), DataRoots(cache_dir=tmp_path))
    message = str(caught.value)
    assert str(tmp_path / "model-128-seed6.csv") in message
    assert f"python -m palgym.bench prepare --suite {LITE} --cache {tmp_path}" in message


def test_a_changed_file_is_named_with_both_hashes(tmp_path: Path) -> None:
    suite = load_suite(LITE)
    changed = tmp_path / "model-128-seed6.csv"
    changed.write_text("gpu,perfvar_A,perfvar_B,perfvar_C,perfvar_D\n0,1,1,1,1\n")
    actual = hashlib.sha256(changed.read_bytes()).hexdigest()
    with pytest.raises(SuiteDataError) as caught:
        check_files(suite, [suite.files["model-128-seed6"]], DataRoots(cache_dir=tmp_path))
    message = str(caught.value)
    assert str(changed) in message and actual in message
    assert suite.files["model-128-seed6"].sha256 in message


def _write(tmp_path: Path, data: dict[str, object]) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize(("edit", "field"), [
    (lambda d: d["tasks"][0].update(colour="red"), "tasks[0]"),
    (lambda d: d["files"]["sia-philly-gen-4"].update(sha256="abc"),
     "files.sia-philly-gen-4.sha256"),
    (lambda d: d["tasks"][0].update(heuristic_field=["srtf/pal"]), "tasks[0].heuristic_field"),
    (lambda d: d["tasks"][0].update(variability={"bundled": "longhorn-1024-single-run"}),
     "tasks[0].variability.bundled"),
    (lambda d: d["tasks"][0]["splits"]["test"].update(traces=["workload-9"]),
     "tasks[0].splits.test.traces[0]"),
    (lambda d: d["tasks"][0].update(seeds=[0, 0]), "tasks[0].seeds"),
    (lambda d: d.update(format="other/1"), "format"),
])
def test_a_malformed_suite_is_refused_naming_file_and_field(tmp_path: Path, edit: object,
                                                            field: str) -> None:
    data = lite_data()
    edit(data)  # type: ignore[operator]
    path = _write(tmp_path, data)
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    assert str(path) in str(caught.value) and f"field {field!r}" in str(caught.value)


def test_suite_files_live_in_the_package() -> None:
    assert (suite_folder() / f"{LITE}.yaml").is_file()
    assert load_suite(suite_folder() / f"{FULL}.yaml").name == FULL


def test_the_test_traces_of_a_suite_are_those_of_its_test_splits() -> None:
    # docs/BENCH.md: v1 tests on workloads 4-5 and sia-philly-gen-4 (cross-cluster too, on
    # another cluster), lite on sia-philly-gen-4
    assert suite_test_traces(load_suite("palgym-bench-v1")) == {
        "workload-4", "workload-5", "sia-philly-gen-4"}
    assert suite_test_traces(load_suite("palgym-bench-v1-lite")) == {"sia-philly-gen-4"}


def test_list_prints_each_tasks_field_members(capsys: pytest.CaptureFixture[str]) -> None:
    # palgym-bench-v1-lite.yaml: placement-default's field is the paper's six placements
    from agents.bench.cli import main

    assert main(["list", "--suite", "palgym-bench-v1-lite"]) == 0
    lines = capsys.readouterr().out.splitlines()
    task = next(i for i, line in enumerate(lines) if line.startswith("  placement-default: "))
    assert lines[task + 1] == ("    field (6): pal, pm-first, packed-sticky, packed-non-sticky, "
                               "random-sticky, random-non-sticky")
    assert sum(line.startswith("    field (") for line in lines) == 6  # one per task
