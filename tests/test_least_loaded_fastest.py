"""examples/least_loaded_fastest.py, a Python-only placement named MODULE:CLASS, runs
everywhere palgym's own do: evaluate.py's heuristic table and side-by-side comparison (with
--workers 2), the env as a heuristic agent in both tasks (per-job parity with run_episode) and
--best-field. Its rule is checked against its definition, round by round.
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from palgym import FREE, make_episode, preset, read_sia_trace, run_episode, slowdown_factors
from palgym.envs import ClusterEnv

ROOT = Path(__file__).resolve().parents[1]
SPEC = "examples.least_loaded_fastest:LeastLoadedFastest"
NAME = "least-loaded-fastest"
TRACE = ROOT / "palgym" / "data" / "traces" / "sia-philly-gen-0.csv"
SIDE = ["--env", "palgym/PALScheduling-v0", "--trace-set", "bundled", "--window", "20",
        "--seeds", "0", "1", "--quiet", "--bootstrap-resamples", "20"]


def evaluate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "evaluate.py", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, check=False)


def rows_of(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


class RuleChecked:
    """The example's placement, each target checked against its stated rule."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name, self.sticky, self.deterministic = inner.name, False, True
        self.rounds = 0

    def place(self, view: Any, order: np.ndarray, sampler: Any) -> np.ndarray:
        target = self.inner.place(view, order, sampler)
        free = np.ones(view.cluster.num_gpus, dtype=bool)  # non-sticky: an empty cluster
        sf = self.inner.factors.sf
        for job in order.tolist():  # queue order, no class reordering
            gpus = np.flatnonzero(target == job)
            if gpus.size == 0:  # the walk stopped at the first job that does not fit
                assert view.jobs.num_gpus[job] > free.sum()
                break
            assert gpus.size == view.jobs.num_gpus[job] and free[gpus].all()
            free[gpus] = False
            klass = view.jobs.perf_class[job]
            if free.any():  # no GPU left free is faster for its class
                assert sf[klass, gpus].max() <= sf[klass, free].min()
        assert (target != FREE).sum() == (~free).sum()  # nothing else is placed
        self.rounds += 1
        return target


def test_the_heuristic_table_runs_it_in_workers(tmp_path: Path) -> None:
    output = tmp_path / "table.csv"
    process = evaluate("--trace", str(TRACE), "--policy", SPEC, "pm-first", "--workers", "2",
                       "--output", str(output), "--quiet")
    assert process.returncode == 0, process.stderr
    row = next(r for r in rows_of(output) if r["policy"] == NAME)
    from examples.least_loaded_fastest import LeastLoadedFastest

    episode = make_episode(read_sia_trace(TRACE), config=preset("default"), seed=0)
    checked = RuleChecked(LeastLoadedFastest(slowdown_factors(episode)))
    direct = run_episode(episode, policy=checked)  # the object, checked round by round
    assert checked.rounds > 0 and not direct.metrics.truncated
    assert float(row["avg_jct_s"]) == direct.metrics.avg_jct_s


@pytest.mark.parametrize("task", ["placement", "scheduling"])
def test_the_env_acts_as_it(task: str) -> None:
    env = ClusterEnv("sia-philly-gen-3", window=50, task=task, queue_order="las",
                     sticky=False, class_reorder=False)
    env.reset(seed=2)
    while True:
        _, _, terminated, truncated, info = env.step(env.heuristic_action(SPEC))
        if terminated or truncated:
            break
    direct = run_episode(env.episode, NAME, "las")
    assert np.array_equal(direct.records.completion_time_s,
                          env.simulator.records().completion_time_s)
    assert info["num_invalid_actions"] == 0


def test_side_by_side_on_the_simulator_and_through_the_env(tmp_path: Path) -> None:
    direct, through_env = tmp_path / "direct.csv", tmp_path / "env.csv"
    process = evaluate(*SIDE, "--policy", SPEC, "pal", "--workers", "2", "--output", str(direct))
    assert process.returncode == 0, process.stderr
    process = evaluate(*SIDE, "--policy", SPEC, "--heuristics-via", "env",
                       "--output", str(through_env))
    assert process.returncode == 0, process.stderr
    by_sim = {(r["trace"], r["seed"]): r for r in rows_of(direct) if r["policy"] == NAME}
    by_env = {(r["trace"], r["seed"]): r for r in rows_of(through_env) if r["policy"] == NAME}
    assert len(by_sim) == 2 and by_sim.keys() == by_env.keys()
    for key, row in by_sim.items():
        assert row["avg_jct_s"] == by_env[key]["avg_jct_s"], key
        assert by_env[key]["num_invalid_actions"] == "0"


def test_best_field_chooses_among_it(tmp_path: Path) -> None:
    output = tmp_path / "best.json"
    process = evaluate(*SIDE[:-2], "--best-heuristic", "--best-field", f"fifo/{SPEC}",
                       "fifo/pal", "--workers", "2", "--json", str(output))
    assert process.returncode == 0, process.stderr
    text = output.read_text(encoding="utf-8")
    assert SPEC not in text  # named by the name it registers
    rows = {row["label"]: row for row in json.loads(text)["rows"]}
    assert set(rows) == {f"fifo/{NAME}", "fifo/pal"}
    mine, pal = rows[f"fifo/{NAME}"], rows["fifo/pal"]
    for split in ("selection", "evaluation"):  # the identical episodes, every job finished
        assert ([e["episode_hash"] for e in mine[f"{split}_episodes"]]
                == [e["episode_hash"] for e in pal[f"{split}_episodes"]])
        assert all(e["num_completed"] == e["num_jobs"] for e in mine[f"{split}_episodes"])
    logs = [math.log(e["avg_jct_s"]) for e in mine["selection_episodes"]]
    assert mine["selection_geomean_avg_jct_s"] == pytest.approx(
        math.exp(sum(logs) / len(logs)), rel=1e-12)
    chosen = min(rows.values(), key=lambda r: (r["selection_geomean_avg_jct_s"], r["label"]))
    assert json.loads(text)["winner"] == chosen["label"]
