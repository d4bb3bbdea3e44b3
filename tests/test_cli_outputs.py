"""Command-line outputs checked against values computed independently in the test:
``python -m palgym.tracesets show``, ``python -m traces profile`` without the data, and
``evaluate.py``'s heuristic table (each row = ``run_episode``; improvements = 1 - ratio)."""

from __future__ import annotations

import csv
import hashlib
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from palgym import PLACEMENT_NAMES, make_episode, read_sia_trace, run_episode

REPO_ROOT = Path(__file__).resolve().parents[1]
BUNDLED = REPO_ROOT / "palgym" / "data" / "traces"


def run(args: list[str], cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_tracesets_show_bundled() -> None:
    """Splits as docs/TRACES.md "Trace sets and splits" states them; sizes and hashes from the
    files' bytes."""
    done = run(["-m", "palgym.tracesets", "show", "bundled"])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "train: sia-philly-gen-0, sia-philly-gen-1, sia-philly-gen-2" in lines
    assert "validation: sia-philly-gen-3" in lines and "test: sia-philly-gen-4" in lines
    members = [line for line in lines if line.startswith("  sia-philly-gen-")]
    assert len(members) == 5
    for i, line in enumerate(members):
        path = BUNDLED / f"sia-philly-gen-{i}.csv"
        data = path.read_bytes()
        lines_ = [r for r in data.decode().splitlines() if r and not r.startswith("#")]
        assert lines_[0].startswith("job_id,")  # the header, then one line per job
        assert line.startswith(f"  sia-philly-gen-{i}: {len(lines_) - 1} jobs, sha256 "
                               f"{hashlib.sha256(data).hexdigest()}"), line


def test_tracesets_show_unknown_set_fails_clearly(tmp_path: Path) -> None:
    done = run(["-m", "palgym.tracesets", "show", str(tmp_path / "nope")])
    assert done.returncode != 0 and "nope" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("case", ["missing", "empty"])
def test_traces_profile_without_the_data_fails_clearly(tmp_path: Path, case: str) -> None:
    """No Longhorn folder (or an empty one): exit code 2, the missing path named, no output."""
    folder = tmp_path / "longhorn_pal"
    if case == "empty":
        folder.mkdir()
    output = tmp_path / "profile.csv"
    done = run(["-m", "traces", "profile", "--variability-data", str(folder), "--num-gpus", "64",
                "--output", str(output)], cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert str(folder) in done.stderr and "Traceback" not in done.stderr
    assert not output.exists()


TABLE_TRACES = ("sia-philly-gen-0", "sia-philly-gen-1")


@pytest.fixture(scope="module")
def heuristic_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[dict]]:
    out = tmp_path_factory.mktemp("table") / "table.csv"
    done = run(["evaluate.py", "--trace", *(str(BUNDLED / f"{t}.csv") for t in TABLE_TRACES),
                "--output", str(out), "--quiet"])
    assert done.returncode == 0, done.stderr
    with out.open(newline="", encoding="utf-8") as handle:
        return done.stdout, list(csv.DictReader(handle))


def test_table_rows_equal_run_episode(heuristic_table: tuple[str, list[dict]]) -> None:
    """Default table: FIFO, default preset, 16 x 4, seed 0: every row is run_episode's."""
    _, rows = heuristic_table
    assert [(r["trace"], r["policy"]) for r in rows] == [
        (t, p) for t in TABLE_TRACES for p in PLACEMENT_NAMES]
    for trace_name in TABLE_TRACES:
        episode = make_episode(read_sia_trace(BUNDLED / f"{trace_name}.csv"), seed=0)
        for row in (r for r in rows if r["trace"] == trace_name):
            result = run_episode(episode, row["policy"], "fifo")
            assert row["queue_order"] == "fifo" and row["episode_hash"] == result.episode_hash
            assert float(row["avg_jct_s"]) == result.metrics.avg_jct_s, row["policy"]
            assert float(row["makespan_s"]) == result.metrics.makespan_s, row["policy"]
            assert int(row["num_preemptions"]) == result.metrics.num_preemptions


def test_improvement_column_is_one_minus_the_ratio(
    heuristic_table: tuple[str, list[dict]],
) -> None:
    stdout, rows = heuristic_table
    base = {r["trace"]: float(r["avg_jct_s"]) for r in rows if r["policy"] == "packed-sticky"}
    assert len(base) == len(TABLE_TRACES)
    for row in rows:
        assert row["baseline"] == "packed-sticky"
        expected = 1.0 - float(row["avg_jct_s"]) / base[row["trace"]]
        assert float(row["improvement_vs_baseline"]) == pytest.approx(expected, rel=1e-12,
                                                                      abs=1e-15)
    # the printed geomean over traces: 1 - geomean(avgJCT(P) / avgJCT(packed-sticky)), in %
    for policy in PLACEMENT_NAMES:
        ratios = [float(r["avg_jct_s"]) / base[r["trace"]] for r in rows
                  if r["policy"] == policy]
        geomean = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        line = next(line for line in stdout.splitlines()
                    if re.match(rf"{re.escape(policy)}\s+fifo\s+[-+0-9.]+\s+[-+0-9.]+$", line))
        printed = float(line.split()[2])
        assert printed == pytest.approx(100.0 * (1.0 - geomean), abs=0.05 + 1e-9), policy
