"""Hostile and careless arguments of the command lines: a ``--submission`` file with a NaN or
nesting past the depth (refused before any episode), thread and worker counts, the sizes the
``traces`` command takes, ``evaluate.py``'s bootstrap settings. Each ends in a clear error
(exit 2 and one ``error:`` line, no traceback) and writes no output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from palgym.bench.__main__ import main as bench_main
from tests.hostile import (
    one_error,
)


def _submission(**changes: Any) -> dict[str, Any]:
    return {"submitter": "A <a@example.org>", "env_modified": False, "env_modifications": "",
            "parameters": {"lr": 0.001}, "parameters_tried": {}, "selection_data": {},
            "training_traces": [], "training_env_steps": 0, "training_wall_time_s": 0.0,
            "deterministic": True, "hardware": "x", "model": "y", **changes}


def test_a_nan_in_the_submission_is_refused_before_any_episode(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import agents.bench.runner as runner

    def no_episode(*_: Any) -> Any:
        raise AssertionError("an episode ran")

    monkeypatch.setattr(runner, "run_entry", no_episode)
    text = json.dumps(_submission()).replace('"lr": 0.001', '"lr": NaN')
    submission = tmp_path / "s.json"
    submission.write_text(text)
    output = tmp_path / "out.jsonl"
    assert bench_main(["run", "--suite", "palgym-bench-v1-lite", "--agent", "pal", "--output",
                       str(output), "--submission", str(submission)]) == 2
    one_error(capsys.readouterr().err, str(submission), "field 'parameters.lr'",
               "NaN is not a JSON number")
    assert not output.exists()


def test_deep_nesting_in_a_submission_is_a_clear_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    submission = tmp_path / "s.json"
    submission.write_text('{"parameters": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert bench_main(["run", "--suite", "palgym-bench-v1-lite", "--agent", "pal", "--output",
                       str(tmp_path / "o.jsonl"), "--submission", str(submission)]) == 2
    one_error(capsys.readouterr().err, str(submission), "nested deeper")


def test_bench_run_refuses_a_negative_thread_count(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        bench_main(["run", "--suite", "palgym-bench-v1-lite", "--agent", "pal", "--output",
                    "o.jsonl", "--num-threads", "-3"])
    assert caught.value.code == 2
    assert "--num-threads: must be an integer >= 0, got '-3'" in capsys.readouterr().err


@pytest.mark.parametrize("workers", ["0", "100000"])
def test_bench_run_bounds_its_local_processes(workers: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_main(["run", "--suite", "palgym-bench-v1-lite", "--agent", "pal", "--output",
                       "never.jsonl", "--workers", workers]) == 2
    one_error(capsys.readouterr().err, "--workers must be in [1, 256]", workers)
    assert not Path("never.jsonl").exists()


@pytest.mark.parametrize(("argv", "message"), [
    (["model-profile", "--num-gpus", "1000000000"],
     "--num-gpus 1000000000 is larger than the limit of 100000; --allow-large allows up to "
     "100000000"),
    (["generate", "--num-jobs", "100000000000"],
     "--num-jobs 100000000000 is larger than the limit of 1000000; --allow-large allows up to "
     "1000000000"),
    (["generate", "--num-jobs", "0"], "--num-jobs must be >= 1, got 0"),
    (["generate", "--num-jobs", "100000000000", "--allow-large"],
     "--num-jobs 100000000000 is larger than the limit of 1000000000"),
])
def test_traces_sizes_are_bounded(tmp_path: Path, argv: list[str], message: str,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    from traces.__main__ import main as traces_main

    output = tmp_path / "out.csv"
    assert traces_main([*argv, "--output", str(output)]) == 2
    one_error(capsys.readouterr().err, message)
    assert not output.exists()


@pytest.mark.parametrize(("argv", "message"), [
    (["--confidence", "1.5"], "--confidence must be a number in (0, 1), got '1.5'"),
    (["--confidence", "nan"], "--confidence must be a number in (0, 1), got 'nan'"),
    (["--bootstrap-resamples", "0"], "--bootstrap-resamples must be a positive integer, "
                                     "got '0'"),
])
def test_evaluate_refuses_bootstrap_settings_whatever_runs(
        argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    from tests.test_bad_input_cli import load_script

    evaluate = load_script("evaluate")
    with pytest.raises(SystemExit) as caught:
        evaluate.main(["--policy", "pal", "--trace", "sia-philly-gen-0", *argv])
    assert caught.value.code == 2
    assert message in capsys.readouterr().err
