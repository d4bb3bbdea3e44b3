"""Parallel sweeps (``evaluate.py --workers N`` / ``--ray``) and progress bars.

The invariant under test: a sweep run in a process pool or as Ray tasks writes the same bytes
as the serial run (every output file, and the printed tables), because each run's result
depends only on its episode and names and the results are gathered in the serial order.
Tiny episodes: the first 12 jobs of two bundled traces on the default 16 x 4 cluster.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from agents.evaluation.parallel import make_runner, pool_runner
from palgym.io import read_sia_trace
from palgym.progress import NEVER, PROGRESS_EVERY_ROUNDS, EpisodeProgress, SweepProgress
from palgym.simulate import EpisodeResult, make_episode, run_episode, slowdown_factors
from palgym.sweep import EpisodeRun, run_one

REPO_ROOT = Path(__file__).resolve().parents[1]
EVALUATE = REPO_ROOT / "evaluate.py"
SMALL_JOBS = 12
HAS_RAY = importlib.util.find_spec("ray") is not None
HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def small_trace(folder: Path, number: int, jobs: int = SMALL_JOBS) -> Path:
    """The first ``jobs`` jobs of bundled trace ``sia-philly-gen-<number>`` as a CSV file."""
    lines = (REPO_ROOT / f"palgym/data/traces/sia-philly-gen-{number}.csv").read_text()
    rows = [line for line in lines.splitlines() if not line.startswith("#")]
    path = folder / f"small-{number}.csv"
    path.write_text("\n".join(rows[: 1 + jobs]) + "\n", encoding="utf-8")
    return path


def same_result(a: EpisodeResult, b: EpisodeResult) -> bool:
    """Bit-for-bit equal results: names, rounds, hash, metrics (exact float reprs, NaN
    included) and every per-job record array."""
    return ((a.trace, a.policy, a.queue_order, a.num_rounds, a.episode_hash, repr(a.metrics))
            == (b.trace, b.policy, b.queue_order, b.num_rounds, b.episode_hash,
                repr(b.metrics))
            and all(np.array_equal(getattr(a.records, f.name), getattr(b.records, f.name),
                                   equal_nan=f.name.endswith("_s"))
                    for f in dataclasses.fields(a.records)))


def run_evaluate(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``evaluate.py args`` in a subprocess (stdout and stderr pipes: not a TTY)."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, str(EVALUATE), *(str(a) for a in args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600, check=False)


def outputs(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path -> bytes)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two small traces, written once for the module."""
    folder = tmp_path_factory.mktemp("traces")
    return [small_trace(folder, 3), small_trace(folder, 4)]


def table_args(traces: list[Path]) -> list[str | Path]:
    """A heuristic-table sweep: 2 traces x 2 queue orders x 6 placements, every output."""
    plots: list[str | Path] = ["--plot", "plots"] if HAS_MATPLOTLIB else []
    return ["--trace", *traces, "--queue-order", "fifo", "las", "--output", "results.csv",
            "--json", "results.json", *plots]


def side_by_side_args(traces: list[Path]) -> list[str | Path]:
    """A side-by-side sweep of heuristic contenders: 2 traces x 2 seeds, every output."""
    return ["--trace", *traces, "--seeds", "0", "1", "--bootstrap-resamples", "200",
            "--output", "episodes.csv", "--summary-output", "summary.csv", "--json", "all.json"]


def run_in(folder: Path, *args: str | Path) -> tuple[subprocess.CompletedProcess[str],
                                                     dict[str, bytes]]:
    """Run ``evaluate.py`` in a fresh ``folder``; the process and the files it wrote."""
    folder.mkdir()
    process = run_evaluate(*args, cwd=folder)
    assert process.returncode == 0, process.stderr
    return process, outputs(folder)


@pytest.fixture(scope="module")
def serial_table(traces: list[Path], tmp_path_factory: pytest.TempPathFactory
                 ) -> tuple[subprocess.CompletedProcess[str], dict[str, bytes]]:
    """The serial heuristic table (not --quiet: its stderr must stay empty off a TTY)."""
    return run_in(tmp_path_factory.mktemp("serial") / "run", *table_args(traces))


def test_workers_table_is_byte_identical_to_serial(serial_table, traces, tmp_path) -> None:
    process, files = run_in(tmp_path / "run", *table_args(traces), "--workers", "2")
    serial_process, serial_files = serial_table
    assert "results.csv" in files and "results.json" in files
    assert files == serial_files
    assert process.stdout == serial_process.stdout


def test_workers_side_by_side_is_byte_identical_to_serial(traces, tmp_path) -> None:
    serial_process, serial_files = run_in(tmp_path / "serial", *side_by_side_args(traces))
    process, files = run_in(tmp_path / "pool", *side_by_side_args(traces), "--workers", "2")
    assert set(files) == {"episodes.csv", "summary.csv", "all.json"}
    assert files == serial_files
    assert process.stdout == serial_process.stdout


@pytest.mark.skipif(not HAS_RAY, reason="ray is not installed (the optional 'ray' extra)")
def test_ray_table_is_byte_identical_to_serial(serial_table, traces, tmp_path) -> None:
    process, files = run_in(tmp_path / "run", *table_args(traces), "--ray")
    serial_process, serial_files = serial_table
    assert files == serial_files
    assert process.stdout == serial_process.stdout


def test_no_progress_bar_when_not_a_tty(serial_table) -> None:
    process, _ = serial_table
    # stderr is a pipe here: no bar, no carriage returns; at most the plain progress lines
    # a run longer than palgym.progress.LINE_INTERVAL_S writes
    assert all(re.fullmatch(r"episodes: \d+/\d+ .*", line)
               for line in process.stderr.splitlines())
    assert "\r" not in process.stdout + process.stderr


def test_pool_gathers_results_in_run_order_not_completion_order(tmp_path: Path) -> None:
    """The first run is the longest (60 jobs; the others 12): the others finish first in a
    2-process pool, yet the results come back in the runs' order, equal to the serial ones."""
    long, short = (make_episode(read_sia_trace(small_trace(tmp_path, n, jobs)))
                   for n, jobs in ((3, 60), (4, SMALL_JOBS)))
    runs = [EpisodeRun(long, slowdown_factors(long), "pal", "las"),
            *(EpisodeRun(short, slowdown_factors(short), name, "fifo")
              for name in ("pal", "packed-sticky", "random-non-sticky"))]
    results = list(pool_runner(2)(runs))
    assert [(r.trace, r.policy, r.queue_order) for r in results] == [
        (run.episode.trace.name, run.policy, run.queue_order) for run in runs]
    assert all(same_result(result, run_one(run)) for result, run in zip(results, runs,
                                                                         strict=True))


@pytest.mark.parametrize(("args", "message"), [
    (("--workers", "0"), "argument --workers: must be >= 1, got 0"),
    (("--workers", "-2"), "argument --workers: must be >= 1, got -2"),
    (("--workers", "two"), "argument --workers: must be an integer >= 1, got 'two'"),
    (("--workers", "1.5"), "argument --workers: must be an integer >= 1, got '1.5'"),
    (("--workers", "2", "--ray"), "argument --ray: not allowed with argument --workers"),
])
def test_bad_workers_values_exit_2(args: tuple[str, ...], message: str, tmp_path) -> None:
    process = run_evaluate(*args, cwd=tmp_path)
    assert process.returncode == 2
    assert message in process.stderr


@pytest.mark.parametrize(("args", "message"), [
    (("--agent", "model.zip", "--workers", "2"),
     "--workers 2 runs heuristic contenders only (on the simulator); learned agents"),
    (("--seeds", "0", "--heuristics-via", "env", "--workers", "2"),
     "--workers 2 runs heuristics on the simulator only"),
])
def test_parallel_contenders_the_pool_cannot_run_are_refused(args, message, tmp_path) -> None:
    process = run_evaluate(*args, cwd=tmp_path)
    assert process.returncode == 2
    assert f"error: {message}" in process.stderr


@pytest.mark.skipif(HAS_RAY, reason="ray is installed: the missing-extra message cannot show")
def test_ray_without_ray_names_the_extra(tmp_path: Path) -> None:
    process = run_evaluate("--ray", cwd=tmp_path)
    assert process.returncode == 2
    assert "--ray needs the optional 'ray' extra" in process.stderr
    assert "pip install -e '.[ray]'" in process.stderr


def test_one_worker_is_the_serial_runner() -> None:
    assert make_runner(1, None).__qualname__ == make_runner(None, None).__qualname__
    assert make_runner(2, None).__qualname__ == pool_runner(2).__qualname__


class FakeTerminal(io.StringIO):
    """A text stream that says it is a TTY."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("policy", "order"), [("random-non-sticky", "las"),
                                              ("packed-sticky", "fifo")])  # memo: idle rounds
def test_drive_calls_progress_every_k_rounds_and_changes_nothing(policy: str, order: str,
                                                                tmp_path: Path) -> None:
    episode = make_episode(read_sia_trace(small_trace(tmp_path, 4)))
    rounds_seen: list[int] = []

    def progress(sim) -> int:  # type: ignore[no-untyped-def]
        rounds_seen.append(sim.round_index)
        return sim.round_index + PROGRESS_EVERY_ROUNDS

    watched = run_episode(episode, policy, order, progress=progress)
    plain = run_episode(episode, policy, order)
    assert same_result(watched, plain)
    assert rounds_seen[0] == 0
    gaps = [b - a for a, b in zip(rounds_seen, rounds_seen[1:], strict=False)]
    assert gaps and min(gaps) >= PROGRESS_EVERY_ROUNDS
    assert len(rounds_seen) <= plain.num_rounds // PROGRESS_EVERY_ROUNDS + 1


def test_episode_bar_is_silent_off_a_tty_and_asks_never_again(tmp_path: Path) -> None:
    episode = make_episode(read_sia_trace(small_trace(tmp_path, 4)))
    stream = io.StringIO()
    bar = EpisodeProgress("small-4 fifo pal", stream=stream, delay_s=0.0)
    calls: list[int] = []

    def counted(sim) -> int:  # type: ignore[no-untyped-def]
        calls.append(bar(sim))
        return calls[-1]

    run_episode(episode, "pal", "fifo", progress=counted)
    bar.close()
    assert calls == [NEVER] and stream.getvalue() == "" and not bar.shown


def test_episode_bar_on_a_tty_shows_jobs_time_and_rate(tmp_path: Path) -> None:
    episode = make_episode(read_sia_trace(small_trace(tmp_path, 4)))
    stream, now = FakeTerminal(), [0.0]

    def clock() -> float:
        now[0] += 1.0  # one wall second per call: every call past the delay redraws
        return now[0]

    bar = EpisodeProgress("small-4 fifo pal", stream=stream, clock=clock, delay_s=0.5)
    result = run_episode(episode, "pal", "fifo", progress=bar)
    shown = bar.shown
    bar.close()
    text = stream.getvalue()
    assert shown and "small-4 fifo pal" in text and f"/{SMALL_JOBS}" in text
    assert "rounds/s" in text and "t=0.0 h, round 0" in text  # the first call: round 0
    assert result.metrics.num_completed == SMALL_JOBS


def test_sweep_bar_counts_on_a_tty_and_is_silent_off_one() -> None:
    terminal, pipe = FakeTerminal(), io.StringIO()
    for stream in (terminal, pipe):
        bar = SweepProgress(5, stream=stream)
        bar.update(1)
        time.sleep(0.2)  # past tqdm's least redraw interval (0.1 s): the next update draws
        bar.update(1)
        bar.close()
    assert "2/5" in terminal.getvalue()
    assert pipe.getvalue() == ""


def test_palgym_runs_a_sweep_without_tqdm(tmp_path: Path) -> None:
    """tqdm blocked: the bars draw nothing and the results are unchanged."""
    trace = small_trace(tmp_path, 4)
    code = (
        "import io, sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'tqdm' or name.startswith('tqdm.'):\n"
        "            raise ImportError('blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "class Tty(io.StringIO):\n"
        "    def isatty(self): return True\n"
        "from palgym import make_episode, read_sia_trace\n"
        "from palgym.progress import EpisodeProgress, SweepProgress\n"
        "from palgym.simulate import run_episode\n"
        f"episode = make_episode(read_sia_trace({str(trace)!r}))\n"
        "stream = Tty()\n"
        "SweepProgress(3, stream=stream).update(1)\n"
        "bar = EpisodeProgress('x', stream=stream, delay_s=0.0)\n"
        "result = run_episode(episode, 'pal', 'fifo', progress=bar)\n"
        "assert 'tqdm' not in sys.modules and stream.getvalue() == ''\n"
        "print(result.metrics.num_completed)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, timeout=300, check=False)
    assert process.returncode == 0, process.stderr
    assert process.stdout.strip() == str(SMALL_JOBS)


def test_a_ray_task_runs_under_its_runs_duration_knowledge() -> None:
    """The Ray task body gets the run's durations: SRTF under noisy estimates (seed 4, sigma 1)
    runs the three one-GPU jobs in estimate order, the hand-checked completions of
    tests/test_duration_knowledge.py (clairvoyant SRTF would give 600, 300, 100)."""
    from agents.evaluation.parallel import _ray_run
    from palgym.policies import Durations
    from palgym.sim.cluster import ClusterSpec
    from palgym.sim.config import preset
    from tests.test_duration_knowledge import THREE
    from tests.toys import R, toy_profile

    episode = make_episode(THREE, cluster=ClusterSpec(1, 1),
                           config=preset("default", round_duration_s=R),
                           profile=toy_profile(1), seed=4)
    result = _ray_run(episode, slowdown_factors(episode), "packed-sticky", "srtf",
                      Durations("noisy", 1.0))
    np.testing.assert_array_equal(result.records.completion_time_s, [300.0, 600.0, 400.0])
