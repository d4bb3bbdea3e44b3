"""Ordinary mistakes on the command lines end in one ``error: ...`` line naming the argument or
the file (exit status 2, no traceback); a failed training run says so in its folder.

``train.py`` and ``evaluate.py`` are called in-process through their ``main(argv)``; argparse's
own errors raise ``SystemExit(2)``. Skipped without the ``train`` extra.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("sb3_contrib", reason="the train extra (sb3-contrib) is not installed")

REPO_ROOT = Path(__file__).resolve().parents[1]
TRAIN = ["--trace", "sia-philly-gen-0", "--window", "10", "-n", "64", "--eval-freq", "0",
         "--references", "--verbose", "0", "--hyperparams", "n_steps:32", "batch_size:32",
         "n_epochs:1"]


def load_script(name: str) -> ModuleType:
    """``train.py`` or ``evaluate.py`` imported as a module (for in-process ``main``)."""
    spec = importlib.util.spec_from_file_location(f"{name}_cli", REPO_ROOT / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def one_error_line(err: str, *parts: str) -> None:
    """``err`` is one ``error: ...`` line holding every part (no traceback)."""
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    for part in parts:
        assert part in lines[0], err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--hyperparams", "n_steps:abc"], "hyperparameter n_steps must be an integer >= 1, "
                                           "got 'abc'"),
        (["--hyperparams", "n_steps:1.5"], "hyperparameter n_steps must be an integer >= 1, "
                                           "got 1.5"),
        (["--hyperparams", "batch_size:0"], "hyperparameter batch_size must be an integer >= 2, "
                                            "got 0"),
        (["--hyperparams", "gamma:2.0"], "hyperparameter gamma must be a number in [0, 1], "
                                         "got 2.0"),
        (["--env-kwargs", "bogus:1"], "--env-kwargs: 'bogus': not an argument of the env"),
        (["--env", "bogus/Env-v0"], "--env 'bogus/Env-v0' is not a palgym env: give one of "
                                    "palgym/PALPlacement-v0, palgym/PALPlacement-v1, "
                                    "palgym/PALScheduling-v0, palgym/PALScheduling-v1, "
                                    "palgym/PALSelector-v0"),
    ],
    ids=["n_steps-abc", "n_steps-fraction", "batch_size-0", "gamma-2", "env-kwargs", "env-id"],
)
def test_train_names_a_bad_setting_before_making_a_run_folder(
        extra: list[str], message: str, tmp_path: Path, capsys) -> None:
    assert load_script("train").main([*TRAIN, *extra, "-f", str(tmp_path)]) == 2
    one_error_line(capsys.readouterr().err, message)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("-n", "-5", "argument -n/--n-timesteps: n_timesteps must be a positive integer, "
                     "got '-5'"),
        ("-n", "0", "n_timesteps must be a positive integer, got '0'"),
        ("--window", "0", "argument --window: window must be a positive integer, got '0'"),
        ("--seed", "-1", "argument --seed: seed must be >= 0, got -1"),
    ],
)
def test_train_argument_errors(flag: str, value: str, message: str, tmp_path: Path,
                               capsys) -> None:
    with pytest.raises(SystemExit) as done:
        load_script("train").main([*TRAIN, flag, value, "-f", str(tmp_path)])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err, err


def test_a_failed_run_leaves_failed_in_its_folder(tmp_path: Path, monkeypatch) -> None:
    """An error after the run folder is claimed: FAILED holds the error, no model.zip; a
    successful resume would remove it (:func:`agents.sb3.runs.recording_failure`)."""
    import agents.sb3.training as training

    def broken_learn(*_args: object) -> bool:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(training, "learn", broken_learn)
    settings = training.TrainSettings(trace="sia-philly-gen-0", window=10, n_timesteps=64,
                                      eval_freq=0, references=(), verbose=0,
                                      log_folder=str(tmp_path),
                                      hyperparams={"n_steps": 32, "batch_size": 32})
    with pytest.raises(OSError, match="No space left"):
        training.train(settings)
    run = tmp_path / "palgym_PALPlacement-v0_maskable_ppo_0"
    failed = (run / "FAILED").read_text(encoding="utf-8").splitlines()
    assert failed[0] == "OSError: [Errno 28] No space left on device"
    assert "no model.zip was written" in failed[1] and "Traceback" in failed[3]
    assert not (run / "model.zip").exists() and (run / "config.yml").is_file()


def test_recording_failure_removes_a_stale_failed(tmp_path: Path) -> None:
    from agents.sb3.runs import FAILED_FILE, recording_failure

    with pytest.raises(KeyError), recording_failure(tmp_path, resume=True):
        raise KeyError("x")
    assert "model.zip is the model from before this resume" in (
        tmp_path / FAILED_FILE).read_text(encoding="utf-8")
    with recording_failure(tmp_path, resume=True):
        pass
    assert not (tmp_path / FAILED_FILE).exists()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("algo: maskable_ppo\nenv_id: [unclosed\n", "line 3, column 1: expected ',' or ']'"),
        ("a: b: c\n", "line 1, column 5: mapping values are not allowed here"),
    ],
)
def test_evaluate_names_a_malformed_model_yml(text: str, problem: str, tmp_path: Path,
                                              capsys) -> None:
    (tmp_path / "m.zip").write_bytes(b"")  # the .yml beside it is read first
    (tmp_path / "m.yml").write_text(text, encoding="utf-8")
    argv = ["--agent", str(tmp_path / "m.zip"), "--trace", "sia-philly-gen-0", "--quiet"]
    assert load_script("evaluate").main(argv) == 2
    one_error_line(capsys.readouterr().err, f"{tmp_path / 'm.yml'}: not valid YAML: {problem}")


@pytest.mark.parametrize("submit", ["1e18", "1e308"])
def test_evaluate_names_a_time_the_clock_cannot_resolve(submit: str, tmp_path: Path) -> None:
    path = tmp_path / "far.csv"
    path.write_text("job_id,num_gpus,submit_time,duration,model\n1,1,0,1000,resnet50\n"
                    f"2,1,{submit},1000,resnet50\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, str(REPO_ROOT / "evaluate.py"), "--trace", str(path),
                           "--policy", "pal", "--quiet"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2
    one_error_line(done.stderr, f"{path}, line 3, field 'submit_time_s': job 2 arrives at",
                   "clock's resolution")


# --------------------------------------------------------------------------- outputs, folders
def test_a_failed_atomic_write_names_the_destination(tmp_path: Path, monkeypatch) -> None:
    import errno

    from palgym.io import atomic_write_text

    def full_disk(_fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    target = tmp_path / "out" / "results.csv"
    with pytest.raises(OSError) as error:
        atomic_write_text(target, "x")
    assert error.value.errno == errno.ENOSPC and error.value.filename == str(target)
    assert str(error.value) == f"[Errno 28] No space left on device: '{target}'"
    assert list(target.parent.iterdir()) == []  # the temporary file is gone
    monkeypatch.undo()
    (tmp_path / "file").write_text("", encoding="utf-8")
    with pytest.raises(FileExistsError, match=rf"creating its folder {tmp_path / 'file'}\)"):
        atomic_write_text(tmp_path / "file" / "x.csv", "x")


@pytest.mark.parametrize(
    ("flag", "where", "message"),
    [
        ("--output", ".", "--output {p}: is a folder; give a file path"),
        ("--json", "file/x.json", "--json {p}: {t}/file is not a folder"),
        ("--summary-output", ".", "--summary-output {p}: is a folder; give a file path"),
        ("--plot", "file", "--plot {p}: exists and is not a folder"),
    ],
)
def test_evaluate_checks_outputs_before_running(flag: str, where: str, message: str,
                                                tmp_path: Path, capsys, monkeypatch) -> None:
    from agents.evaluation import cli

    def no_run(_args: object) -> None:
        raise AssertionError("the evaluation ran before the outputs were checked")

    monkeypatch.setattr(cli, "evaluation_of", no_run)
    (tmp_path / "file").write_text("", encoding="utf-8")
    path = tmp_path / where
    argv = ["--trace", "sia-philly-gen-0", "--policy", "pal", "--quiet", flag, str(path)]
    assert load_script("evaluate").main(argv) == 2
    one_error_line(capsys.readouterr().err, message.format(p=path, t=tmp_path))


def test_tracesets_write_names_a_missing_folder(tmp_path: Path, capsys) -> None:
    from palgym.tracesets.__main__ import main

    missing = tmp_path / "missing"
    argv = ["write", str(missing), "-o", str(tmp_path / "m.json"), "--train", "workload-1"]
    assert main(argv) == 2
    one_error_line(capsys.readouterr().err, f"folder {missing}: not found")
    folder = tmp_path / "traces"
    folder.mkdir()
    assert main(["write", str(folder), "-o", str(tmp_path)]) == 2
    one_error_line(capsys.readouterr().err, f"--output {tmp_path}: is a folder")


def test_benchmark_names_a_bad_data_dir(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks/duration_headroom.py"),
                           "--data-dir", str(tmp_path / "bad")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (f"error: --data-dir {tmp_path / 'bad'}: no file "
            f"{tmp_path / 'bad/traces/sia_philly_pal/workload-1.csv'}") in done.stderr


def test_dynamic_headroom_names_the_missing_workloads(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks/dynamic_headroom.py"),
                           "--data-dir", str(tmp_path / "bad"), "--regimes", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    missing = tmp_path / "bad/traces/sia_philly_pal/workload-4.csv"
    assert f"error: suite palgym-bench-v1: missing files: {missing}" in done.stderr


@pytest.mark.parametrize("mode", [[], ["--best-heuristic"]])
def test_evaluate_names_an_unknown_env_id(mode: list[str], capsys) -> None:
    argv = ["--env", "bogus/Env-v0", "--quiet", *mode]
    assert load_script("evaluate").main(argv) == 2
    one_error_line(capsys.readouterr().err, "--env 'bogus/Env-v0' is not a palgym env")


def test_missing_public_data_names_where_it_was_looked_for(tmp_path: Path) -> None:
    from palgym.bench.suites import DataRoots, SuiteDataError, check_files, load_suite

    suite = load_suite("palgym-bench-v1")
    files = [f for f in suite.files.values() if f.source == "data"][:1]
    with pytest.raises(SuiteDataError) as given:
        check_files(suite, files, DataRoots(tmp_path / "bad", None))
    assert f"not in {tmp_path / 'bad'} (--data-dir, else PALGYM_DATA_DIR)" in str(given.value)
    with pytest.raises(SuiteDataError) as unset:
        check_files(suite, files, DataRoots(None, None))
    assert "pass --data-dir DIR or set PALGYM_DATA_DIR" in str(unset.value)
