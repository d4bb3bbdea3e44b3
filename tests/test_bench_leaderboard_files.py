"""Every committed results file of ``benchmarks/leaderboard/`` replays bit for bit (v1 here;
v2: ``tests/test_bench_leaderboard_v2_files.py``, a file of its own so that the two replays
run on two test workers).

The lite suite's files are replayed in full here (its generated files are prepared into a
temporary cache first), all together, so the ``best`` entry's choices are checked against the
``field`` entry's validation rows. The full suite's files need ``PALGYM_DATA_DIR``; its
``field`` file (600 whole-trace episodes, about ten minutes of replay on one core) is replayed
only with ``PALGYM_BENCH_REPLAY_FIELD=1`` (its run: docs/BENCH.md, "Wall times").
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agents.bench.runner import prepare
from palgym.bench.replay import validate_files
from palgym.bench.results import read_results
from palgym.bench.suites import DataRoots
from palgym.policies.registry import PAPER_PLACEMENT_NAMES

LEADERBOARD = Path(__file__).resolve().parents[1] / "benchmarks" / "leaderboard"
LITE, FULL = "palgym-bench-v1-lite", "palgym-bench-v1"
LITE_LEARNED = ("PALPlacement-v0_maskable_ppo", "sia-philly-artifact_maskable_ppo",
                "sia-philly-artifact-scratch_maskable_ppo", "dynamic-online_maskable_ppo")


def file_name(entry: str) -> str:
    """A results file's name: its entry, ``/``, ``:`` and ``|`` written as ``-``."""
    return entry.replace("/", "-").replace(":", "-").replace("|", "-") + ".jsonl"


def _files(suite: str) -> list[Path]:
    return sorted((LEADERBOARD / suite).glob("*.jsonl"))


@pytest.mark.parametrize("suite", [LITE, FULL])
def test_each_file_is_named_by_its_entry_on_its_suite(suite: str) -> None:
    files = _files(suite)
    assert files, suite
    for path in files:
        header = read_results(path).header
        assert header.suite == suite and path.name == file_name(header.entry), path


@pytest.mark.parametrize("suite", [LITE, "palgym-bench-v2-lite"])
def test_the_lite_entries_are_committed(suite: str) -> None:
    kinds = {read_results(p).header.entry: read_results(p).header.entry_kind
             for p in _files(suite)}
    assert {name: kinds.get(name) for name in PAPER_PLACEMENT_NAMES} == dict.fromkeys(
        PAPER_PLACEMENT_NAMES, "heuristic")
    assert (kinds["best"], kinds["field"]) == ("best", "field")
    assert "planner" in kinds.values()
    assert {name: kinds.get(name) for name in LITE_LEARNED} == dict.fromkeys(LITE_LEARNED,
                                                                           "learned")


def test_the_lite_files_replay(tmp_path: Path) -> None:
    prepare(LITE, tmp_path)
    for path, problems in validate_files(_files(LITE), DataRoots(cache_dir=tmp_path)):
        assert problems == [], (path, [str(p) for p in problems[:5]])


def test_the_full_suite_files_replay(data_dir: Path, tmp_path: Path) -> None:
    prepare(FULL, tmp_path)
    roots = DataRoots(data_dir, tmp_path)
    files = [p for p in _files(FULL)
             if p.name != "field.jsonl" or os.environ.get("PALGYM_BENCH_REPLAY_FIELD") == "1"]
    for path, problems in validate_files(files, roots):
        assert problems == [], (path, [str(p) for p in problems[:5]])
