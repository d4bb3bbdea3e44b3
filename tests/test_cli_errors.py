"""Command-line errors that should help: bad seeds and windows, a window covering a whole
trace, a single-episode interval, and every CLI quiet on a closed stdout (``... | head``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
EVALUATE = str(REPO_ROOT / "evaluate.py")
BUNDLED_TRACE = REPO_ROOT / "palgym/data/traces/sia-philly-gen-0.csv"
SMALL = "job_id,num_gpus,submit_time,duration,model\n" + "".join(
    f"{i},1,{100 * i},{500 + 100 * i},resnet50\n" for i in range(6))


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, check=False)


@pytest.fixture()
def small(tmp_path: Path) -> Path:
    path = tmp_path / "small.csv"
    path.write_text(SMALL, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seeds", "-1"], "argument --seeds: seed must be >= 0, got -1"),
        (["--seed", "-3"], "argument --seed: seed must be >= 0, got -3"),
        (["--seeds", "x"], "seed must be an integer >= 0, got 'x'"),
        (["--window", "0"], "argument --window: window must be >= 1, got 0"),
        (["--window", "-5"], "argument --window: window must be >= 1, got -5"),
    ],
)
def test_bad_seeds_and_windows_are_argument_errors(args: list[str], message: str,
                                                   small: Path) -> None:
    done = run([EVALUATE, "--trace", str(small), "--policy", "pal", *args], small.parent)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_window_longer_than_the_trace_is_said_once(small: Path) -> None:
    done = run([EVALUATE, "--trace", str(small), "--seeds", "0", "1", "--policy", "pal",
                "--window", "50", "--bootstrap-resamples", "20", "--quiet"], small.parent)
    assert done.returncode == 0, done.stderr
    note = "--window 50 is not shorter than small (6 jobs): each such episode is the whole trace"
    assert done.stderr.count(note) == 1


def test_single_episode_prints_no_interval(small: Path) -> None:
    done = run([EVALUATE, "--trace", str(small), "--seeds", "0", "--policy", "pal",
                "--bootstrap-resamples", "20", "--quiet"], small.parent)
    assert done.returncode == 0, done.stderr
    summary = done.stdout.split("geomean over episodes")[1]
    pal_row = next(line for line in summary.splitlines() if line.startswith("pal "))
    assert "[no interval]" in pal_row and "[1.000, 1.000]" not in pal_row
    assert "WARNING: a single episode: no bootstrap interval" in done.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["-m", "traces", "describe", str(BUNDLED_TRACE)],
        ["-m", "palgym.tracesets", "show", "bundled"],
        [EVALUATE, "--trace", str(BUNDLED_TRACE), "--policy", "pal", "--quiet"],
        [EVALUATE, "--help"],
        [str(REPO_ROOT / "train.py"), "--help"],
    ],
    ids=["traces-describe", "tracesets-show", "evaluate", "evaluate-help", "train-help"],
)
def test_clis_are_quiet_on_a_closed_stdout(args: list[str], tmp_path: Path) -> None:
    """stdout's reader is gone before the command writes (as after ``| head``): exit 0 and
    nothing on stderr about the pipe."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen([sys.executable, *args], cwd=tmp_path, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader goes away at once
    stderr = proc.stderr.read()
    assert proc.wait(timeout=600) == 0, stderr
    for text in ("Traceback", "BrokenPipeError", "Exception ignored"):
        assert text not in stderr, stderr
