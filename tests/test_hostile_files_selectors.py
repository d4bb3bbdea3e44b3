"""Hostile and careless selector files and the selector's command line: weights that are no
finite numbers within their bounds (or nest past the depth), a bad file given to ``bench run``,
a rule naming a module (imported only with ``--trust-model``), the cache variable, a task
``bench run`` refuses. Each ends in a clear error (exit 2 and one ``error:`` line, no
traceback) or in the documented behaviour.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from palgym.bench.__main__ import main as bench_main
from palgym.errors import ConfigError
from tests.hostile import (
    one_error,
    trap_module,
)


def _selector(tmp_path: Path, weight: str) -> Path:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    from agents.selection.selector import LinearSelector

    rules = ["fifo/pal", "srtf/pal+backfill"]
    path = LinearSelector.constant(rules).save(tmp_path / "sel.json")
    data = json.loads(path.read_text())
    text = json.dumps({**data, "weights": [[0.0] * len(data["weights"][0])] * 2})
    path.write_text(text.replace("0.0", weight, 1))
    return path


@pytest.mark.parametrize(("weight", "why"), [
    ("9" * 400, "an integer of 400 digits overflows float64"),
    ("1e308", "must be within [-1e+12, 1e+12], got 1e+308"),
    ("-1e308", "must be within [-1e+12, 1e+12], got -1e+308"),
    ('"1.0"', "must be a number, got the string '1.0'"),
    ("true", "must be a number, got the boolean true"),
    ("[" * 10_000 + "]" * 10_000, "nested deeper"),
])
def test_selector_weights_are_strict(tmp_path: Path, weight: str, why: str) -> None:
    from agents.selection.selector import LinearSelector

    path = _selector(tmp_path, weight)
    with pytest.raises(ConfigError) as caught:
        LinearSelector.load(path)
    assert str(path) in str(caught.value) and why in str(caught.value)
    if "nested" not in why:
        assert "field 'weights[0][0]'" in str(caught.value)


def test_a_bad_selector_file_ends_bench_run_with_a_clear_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _selector(tmp_path, "true")
    assert bench_main(["run", "--suite", "palgym-bench-v1-lite", "--agent", f"selector:{path}",
                       "--tasks", "scheduling-clairvoyant", "--output",
                       str(tmp_path / "o.jsonl")]) == 2
    one_error(capsys.readouterr().err, str(path), "weights[0][0]", "boolean true")


def test_the_selector_cli_reads_the_cache_variable(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    import agents.selection.cli as cli

    seen: dict[str, Any] = {}

    def episodes(split: str, **kwargs: Any) -> list[Any]:
        seen.update(kwargs)
        return []

    monkeypatch.setattr(cli, "split_episodes", episodes)
    monkeypatch.setenv("PALGYM_BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PALGYM_DATA_DIR", str(tmp_path / "data"))
    args = cli.build_parser().parse_args(["train", "--output", str(tmp_path / "s.json")])
    cli._episodes(args, "train")
    assert (seen["cache_dir"], seen["data_dir"]) == (tmp_path / "cache", tmp_path / "data")
    args = cli.build_parser().parse_args(["train", "--output", "s.json", "--cache", "c"])
    cli._episodes(args, "train")
    assert seen["cache_dir"] == Path("c")


def test_selector_training_refuses_a_task_bench_run_refuses(
        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    from agents.selection.cli import main as selector_main

    assert selector_main(["train", "--suite", "palgym-bench-v1-lite", "--task",
                          "placement-default", "--output", "never.json"]) == 2
    one_error(capsys.readouterr().err, "train --task placement-default",
               "fixes queue order 'fifo' (regime fixed)")
    assert not Path("never.json").exists()


def test_a_selector_file_imports_no_module_without_trust(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    from agents.selection.selector import LinearSelector

    marker = trap_module(tmp_path, monkeypatch)
    path = LinearSelector.constant(["fifo/pal", "srtf/pal+backfill"]).save(tmp_path / "s.json")
    path.write_text(path.read_text().replace('"srtf/pal+backfill"', '"srtf/trapmod:X"'))
    assert bench_main(["run", "--suite", "palgym-bench-v1-lite", "--agent", f"selector:{path}",
                       "--tasks", "scheduling-clairvoyant", "--output",
                       str(tmp_path / "o.jsonl")]) == 2
    one_error(capsys.readouterr().err, "module 'trapmod' not imported", "--trust-model")
    assert not marker.exists()
