"""palgym-bench-v2's committed results replay bit for bit, and v2 holds every v1 entry and the
room's two references (docs: benchmarks/leaderboard/README.md).

As for v1 (``tests/test_bench_leaderboard_files.py``): the lite files replay in full; the full
suite's need ``PALGYM_DATA_DIR``, and its ``field`` file is replayed only with
``PALGYM_BENCH_REPLAY_FIELD=1``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agents.bench.runner import prepare
from palgym.bench.replay import validate_files
from palgym.bench.results import read_results
from palgym.bench.suites import DataRoots
from tests.test_bench_leaderboard_files import LEADERBOARD, file_name

V1 = {"palgym-bench-v2-lite": "palgym-bench-v1-lite", "palgym-bench-v2": "palgym-bench-v1"}
REFERENCES = ("best-known.jsonl", "lower-bound.jsonl")
NOT_YET_ON_V2: dict[str, set[str]] = {}
"""The v1 entries not yet re-run on a v2 suite (none: every v1 entry is on both)."""


def _files(suite: str) -> list[Path]:
    return sorted((LEADERBOARD / suite).glob("*.jsonl"))


@pytest.mark.parametrize("suite", sorted(V1))
def test_v2_holds_every_v1_entry_and_the_rooms_references(suite: str) -> None:
    names = {p.name for p in _files(suite)}
    missing = {p.name for p in _files(V1[suite])} - names
    assert missing == NOT_YET_ON_V2.get(suite, set()), suite
    assert set(REFERENCES) <= names, suite
    for path in _files(suite):
        header = read_results(path).header
        assert header.suite == suite and path.name == file_name(header.entry), path


OWN_MODULES = "agents.priority."
"""The only modules a committed file may name (a trained priority order's class, its entry run
as ``MODULE:CLASS/PLACEMENT`` or a selector's rule): this repository's, so their replay imports
them."""


def _validate(files: list[Path], roots: DataRoots) -> None:
    """Replay ``files``: those naming a ``MODULE:CLASS`` (only :data:`OWN_MODULES`) with
    ``trust_modules``, the others without."""
    named = {}
    for path in files:
        members = read_results(path).header.members.values()
        orders = {str(m.get("env_kwargs", {}).get("queue_order", ""))
                  for found in members for m in found.values()}
        orders |= {rule.split("/", 1)[0] for found in members for m in found.values()
                   for rule in m.get("selector", {}).get("rules", [])}
        modules = {o for o in orders if ":" in o}
        assert all(o.startswith(OWN_MODULES) for o in modules), (path, modules)
        named[path] = bool(modules)
    for trust in (False, True):
        chosen = [p for p in files if named[p] == trust]
        for path, problems in validate_files(chosen, roots, trust_modules=trust):
            assert problems == [], (path, [str(p) for p in problems[:5]])


def test_the_lite_files_replay(tmp_path: Path) -> None:
    prepare("palgym-bench-v2-lite", tmp_path)
    _validate(_files("palgym-bench-v2-lite"), DataRoots(cache_dir=tmp_path))


def test_the_full_suite_files_replay(data_dir: Path, tmp_path: Path) -> None:
    prepare("palgym-bench-v2", tmp_path)
    files = [p for p in _files("palgym-bench-v2")
             if p.name != "field.jsonl" or os.environ.get("PALGYM_BENCH_REPLAY_FIELD") == "1"]
    _validate(files, DataRoots(data_dir, tmp_path))


@pytest.mark.parametrize("suite", sorted(V1))
def test_the_references_cover_every_task(suite: str) -> None:
    # the dynamic world's too (docs/HEADROOM.md: its bound takes the truth's fastest factor)
    from palgym.bench.suites import load_suite

    tasks = {t.name for t in load_suite(suite).tasks}
    assert {"placement-default", "dynamic-online"} <= tasks
    for name in REFERENCES:
        header = read_results(LEADERBOARD / suite / name).header
        assert set(header.members) == tasks, (suite, name)
