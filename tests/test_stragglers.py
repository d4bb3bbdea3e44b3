"""Straggler migration (palgym.policies.stragglers): the flag and the swap worked out by hand,
its options' refusals, and invariants on whole episodes (nothing flagged changes nothing;
rule selection and run_episode agree)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from palgym import make_episode, preset, read_sia_trace, run_episode
from palgym.bundled import bundled_trace_paths
from palgym.errors import ConfigError
from palgym.policies.belief import BeliefMode, BeliefOptions
from palgym.policies.stragglers import flag_stragglers, migrate_stragglers
from palgym.rule_selection import run_selected_episode
from palgym.sim.types import FREE

F = FREE


def view(job_of_gpu: list[int], gpus_per_node: int, perf_class: list[int]) -> Any:
    """The members of a SimView that migrate_stragglers reads."""
    gpus = np.arange(len(job_of_gpu))
    return SimpleNamespace(job_of_gpu=np.array(job_of_gpu, dtype=np.int64),
                           node_of_gpu=gpus // gpus_per_node,
                           jobs=SimpleNamespace(perf_class=np.array(perf_class)))


def test_flag_compares_with_the_slowest_profiled_gpu_of_the_set() -> None:
    profiled = np.array([[1.0, 1.1, 0.9, 1.0]])
    sets = [np.array([0, 1]), np.array([2]), np.array([3])]
    # expected: max over the set = 1.1, 0.9, 1.0; x 1.3 = 1.43, 1.17, 1.3
    observed = np.array([1.42, 1.2, 1.3])
    flagged = flag_stragglers(np.array([5, 2, 7]), sets, np.array([0, 0, 0]), observed,
                              profiled, 1.3)
    assert flagged.tolist() == [2]  # 1.2 > 1.17; 1.42 < 1.43; 1.3 is not > 1.3
    assert flag_stragglers(np.empty(0, np.int64), [], np.empty(0, np.int64), np.empty(0),
                           profiled, 1.3).size == 0


def test_a_free_gpu_in_the_node_replaces_the_one_believed_slowest() -> None:
    belief = np.array([[1.0, 1.2, 1.1, 0.9]])
    target = np.array([0, 0, F, 1])
    moved, count = migrate_stragglers(view([0, 0, F, 1], 4, [0, 0]), target,
                                      np.array([0]), belief)
    # GPU 1 (1.2) leaves; the free GPU 2 is preferred to job 1's GPU 3 (belief 0.9)
    assert moved.tolist() == [0, F, 0, 1] and count == 1
    assert target.tolist() == [0, 0, F, 1]  # not modified


def test_without_a_free_gpu_it_swaps_with_a_job_that_is_not_a_straggler() -> None:
    belief = np.array([[1.0, 1.2, 1.1, 0.95]])
    current = [0, 0, 1, 2]
    moved, count = migrate_stragglers(view(current, 4, [0, 0, 0]), np.array(current),
                                      np.array([0, 2]), belief)
    # job 0: GPU 1 out; job 2 (GPU 3) is flagged, so job 1's GPU 2 comes in: [0, 1, 0, 2];
    # job 2: GPU 3 out; job 0 is flagged, so job 1 (now on GPU 1) swaps: [0, 2, 0, 1]
    assert moved.tolist() == [0, 2, 0, 1] and count == 2


def test_no_new_locality_penalty_and_a_moved_job_is_left_alone() -> None:
    belief = np.array([[1.0, 1.2, 1.0, 1.0]])
    # job 0 inside node 0; the only other GPUs are on node 1: no replacement
    moved, count = migrate_stragglers(view([0, 0, F, 1], 2, [0, 0]), np.array([0, 0, F, 1]),
                                      np.array([0]), belief)
    assert moved.tolist() == [0, 0, F, 1] and count == 0
    # a job spanning both nodes may take a GPU on either
    moved, count = migrate_stragglers(view([F, 0, 0, 1], 2, [0, 0]), np.array([F, 0, 0, 1]),
                                      np.array([0]), belief)
    assert moved.tolist() == [0, F, 0, 1] and count == 1
    # 2 nodes x 3 GPUs, the straggler spans both: job 1's GPU 0 (belief 0.8) would make job 1
    # span nodes, so job 2's GPU 5 (0.95, beating GPU 4's 1.0) takes the place of GPU 3 (1.5)
    belief6 = np.array([[0.8, 0.9, 1.0, 1.5, 1.0, 0.95]])
    current = [1, 1, 0, 0, 2, 2]
    moved, count = migrate_stragglers(view(current, 3, [0, 0, 0]), np.array(current),
                                      np.array([0]), belief6)
    assert moved.tolist() == [1, 1, 0, 2, 2, 0] and count == 1
    # the placement already moves (or stops) the straggler: its target stands
    for target in ([0, F, 0, 1], [F, F, F, 1]):
        moved, count = migrate_stragglers(view([0, 0, F, 1], 4, [0, 0]), np.array(target),
                                          np.array([0]), belief)
        assert moved.tolist() == target and count == 0


@pytest.mark.parametrize("options", [
    {"mode": "online", "straggler_ratio": 1.0},
    {"mode": "online", "straggler_ratio": float("nan")},
    {"mode": "stale", "straggler_ratio": 1.5},
    {"mode": "oracle", "straggler_ratio": 1.5},
    {"mode": "online", "straggler_ratio": "1.3"},
    {"mode": "online", "straggler_ratio": True},
])
def test_refused_options(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="straggler_ratio"):
        BeliefOptions(**options)


def test_the_env_refuses_migration() -> None:
    from palgym.envs.cluster_env import ClusterEnv

    with pytest.raises(ConfigError, match="straggler_ratio"):
        ClusterEnv("bundled", window=8, preset="dynamic",
                   belief={"mode": "online", "straggler_ratio": 1.5})


def dynamic_episode(ratio: float | None, jobs: int = 60) -> Any:
    full = read_sia_trace(bundled_trace_paths()["sia-philly-gen-3"])
    trace = full.select(np.arange(full.num_jobs) < jobs)
    return make_episode(trace, config=preset("dynamic"), seed=1,
                        belief=BeliefOptions(BeliefMode.ONLINE, straggler_ratio=ratio))


def test_nothing_flagged_changes_nothing() -> None:
    plain = run_episode(dynamic_episode(None), "pal+backfill", "srsf")
    # no observed slowdown reaches 1e9 x its profile: the same episode bit for bit
    never = run_episode(dynamic_episode(1e9), "pal+backfill", "srsf")
    assert np.array_equal(plain.records.jct_s, never.records.jct_s, equal_nan=True)
    # without dynamics every observation equals the profile (the truth): nothing is flagged
    static = [dataclasses.replace(dynamic_episode(r), config=preset("default"))
              for r in (None, 1.01)]
    a, b = (run_episode(e, "pal", "fifo", belief=e.belief) for e in static)
    assert np.array_equal(a.records.jct_s, b.records.jct_s, equal_nan=True)


def test_migration_acts_and_rule_selection_agrees_with_run_episode() -> None:
    episode = dynamic_episode(1.3)
    alone = run_episode(episode, "pal+backfill", "srsf")
    assert alone.migrations > 0  # the episode exercises the swap
    plain = run_episode(dynamic_episode(None), "pal+backfill", "srsf")
    assert plain.migrations == 0
    assert not np.array_equal(alone.records.jct_s, plain.records.jct_s, equal_nan=True)
    selected = run_selected_episode(episode, ["srsf/pal+backfill", "fifo/pal+easy"],
                                    lambda features, view: 0).result
    assert np.array_equal(alone.records.jct_s, selected.records.jct_s, equal_nan=True)
    assert alone.metrics == selected.metrics
    assert selected.migrations == alone.migrations


def test_command_line_rows_with_stragglers(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from agents.selection.cli import main
    from agents.selection.selector import LinearSelector
    from tests.bench_suites import tiny_suite

    field = ["srsf/pal+backfill", "fifo/pal+easy"]
    suite = tiny_suite(tmp_path, ["dynamic-online"], window=30)
    constant = tmp_path / "constant.json"
    LinearSelector.constant(field, 0).save(constant)
    results = tmp_path / "results.json"
    assert main(["evaluate", "--suite", str(suite), "--task", "dynamic-online",
                 "--field", ",".join(field), "--selector", str(constant), "--stragglers", "1.3",
                 "--output", str(results)]) == 0
    rows = {row["entry"]: row for row in json.loads(results.read_text())["rows"]}
    # the task's own field names bare placements (its order is fixed): --field is required
    assert main(["evaluate", "--suite", str(suite), "--task", "dynamic-online",
                 "--stragglers", "1.3"]) == 2
    assert "give --field ORDER/PLACEMENT" in capsys.readouterr().err
    best = json.loads(results.read_text())["best"]
    assert best == field[0]
    # a constant selector of the best rule plays it, with or without migration
    migrated = rows[f"best: {best} + stragglers 1.3"]
    assert rows["constant.json + stragglers 1.3"]["per_trace"] == migrated["per_trace"]
    assert rows["constant.json"]["geomean_vs_best"] == 1.0
