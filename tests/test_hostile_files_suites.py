"""Hostile and careless suite files: a path outside its source's folder, a link out of the cache,
a window or a cluster past its limit, a window larger than a trace, a command that would write
another file than its own. Each is refused with an error naming the file and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from palgym.bench.__main__ import main as bench_main
from palgym.bench.suites import DataRoots, load_suite, split_traces
from palgym.errors import ConfigError
from tests.bench_suites import lite_data
from tests.hostile import (
    one_error,
)


def _suite(tmp_path: Path, **changes: Any) -> Path:
    import yaml

    data = lite_data()
    for key, value in changes.items():
        data[key] = value
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("bad", ["../../../../etc/passwd", "/etc/passwd", "traces/../../x",
                                 "traces\\..\\x"])
def test_a_suite_path_outside_its_folder_is_refused_when_listed(
        tmp_path: Path, bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    files = lite_data()["files"]
    first = next(iter(files))
    path = _suite(tmp_path, files={**files, first: {**files[first], "path": bad}})
    assert bench_main(["list", "--suite", str(path)]) == 2
    one_error(capsys.readouterr().err, str(path), f"files.{first}.path",
               "must be a relative path inside the source's folder")


def test_a_link_out_of_the_cache_is_refused(tmp_path: Path) -> None:
    suite = load_suite("palgym-bench-v1-lite")
    generated = next(f for f in suite.files.values() if f.source == "generated")
    cache = tmp_path / "cache"
    (cache / generated.path).parent.mkdir(parents=True)
    (cache / generated.path).symlink_to("/etc/passwd")
    with pytest.raises(ConfigError, match="outside its generated folder"):
        DataRoots(None, cache).path(generated)


def test_a_suite_window_past_the_limit_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = lite_data()
    tasks = [{**data["tasks"][0], "world": {**data["tasks"][0]["world"],
                                            "window": 1_000_000_000}}]
    path = _suite(tmp_path, tasks=tasks)
    assert bench_main(["list", "--suite", str(path)]) == 2
    one_error(capsys.readouterr().err, "tasks[0].world.window", "at most 1000000 jobs")


@pytest.mark.parametrize(("cluster", "why"), [("100000x1000", "at most 100000 GPUs"),
                                               ("16 by 4", "must look like '16x4'")])
def test_a_suite_cluster_is_bounded(tmp_path: Path, cluster: str, why: str) -> None:
    data = lite_data()
    tasks = [{**data["tasks"][0], "world": {**data["tasks"][0]["world"], "cluster": cluster}}]
    with pytest.raises(ConfigError, match=why):
        load_suite(_suite(tmp_path, tasks=tasks))


def test_a_window_larger_than_a_trace_is_refused_not_run_whole(tmp_path: Path) -> None:
    data = lite_data()
    tasks = [{**data["tasks"][0], "world": {**data["tasks"][0]["world"], "window": 161}}]
    suite = load_suite(_suite(tmp_path, tasks=tasks))
    task = suite.tasks[0]
    # the bundled test trace sia-philly-gen-4 has 160 jobs (palgym/data/README.md)
    with pytest.raises(ConfigError, match=r"a window of 161 jobs is larger than trace "
                                          r"'sia-philly-gen-4' of split test \(160 jobs\)"):
        split_traces(suite, task, "test", DataRoots())


@pytest.mark.parametrize(("command", "why"), [
    ("python -m traces bundle --output-dir /tmp/x", "must run one of"),
    ("python -m traces generate --num-jobs 10 --output /etc/x", "must not give --output"),
])
def test_a_suite_command_writes_only_its_own_file(tmp_path: Path, command: str,
                                                  why: str) -> None:
    files = lite_data()["files"]
    first = next(k for k, v in files.items() if v["source"] == "generated")
    path = _suite(tmp_path, files={**files, first: {**files[first], "command": command}})
    with pytest.raises(ConfigError, match=why):
        load_suite(path)
