"""A trained queue order as a palgym-bench entry: a ``MODULE:CLASS`` order with a palgym
placement runs through the env; its header names the class (what a replay imports) and, when
the class declares ``learned = True``, records the entry as learned; the file replays."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.bench.runner import declares_learned, run_entry
from agents.priority.order import read_order
from agents.priority.pretrained import AgingPrioritySeed0, ResponseRatio
from palgym.bench.entries import RunRequest
from palgym.bench.replay import validate_files
from palgym.bench.results import read_results
from palgym.bench.suites import DataRoots
from tests.bench_suites import tiny_suite

TASK = "scheduling-clairvoyant"
LEARNED = "agents.priority.pretrained:AgingPrioritySeed0"
HAND = "agents.priority.pretrained:ResponseRatio"


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_suite(tmp_path_factory.mktemp("priority"), [TASK], window=10, seeds=(0, 1))


def _run(suite: Path, agent: str, out: Path) -> Path:
    return run_entry(RunRequest(str(suite), agent, out, DataRoots(), tasks=(TASK,),
                                progress=False))[0]


def test_only_a_class_that_declares_it_is_learned() -> None:
    assert declares_learned(f"{LEARNED}/pal+backfill")
    assert not declares_learned(f"{HAND}/pal+backfill")
    assert not declares_learned("srsf/pal+backfill")
    assert AgingPrioritySeed0.learned is True and not hasattr(ResponseRatio, "learned")


@pytest.mark.parametrize(("order", "kind"), [(LEARNED, "learned"), (HAND, "module")])
def test_the_entry_names_its_class_and_replays(suite: Path, tmp_path: Path, order: str,
                                               kind: str) -> None:
    path = _run(suite, f"{order}/pal+backfill", tmp_path / "entry.jsonl")
    results = read_results(path)
    assert results.header.entry_kind == kind
    (member,) = results.header.members[TASK].values()
    assert member["env_kwargs"]["queue_order"] == order
    assert [p for _, p in validate_files([path], DataRoots(), suite, trust_modules=True)] == [[]]
    # without --trust-modules the replay imports nothing and says why
    (_, problems), = validate_files([path], DataRoots(), suite)
    assert problems and "--trust-modules" in str(problems[0])


@pytest.mark.parametrize(("order", "kind"), [(LEARNED, "learned"), (HAND, "heuristic")])
def test_under_a_floor_the_entry_is_a_recorded_guard(suite: Path, tmp_path: Path, order: str,
                                                     kind: str) -> None:
    # as an aging guard's base order the entry runs on the engine and records its schedule,
    # which replays without importing the class
    guard = "pal+backfill+age=1h:fifo/pal+easy"
    path = _run(suite, f"{order}/{guard}", tmp_path / "entry.jsonl")
    results = read_results(path)
    assert results.header.entry_kind == kind
    (member,) = results.header.members[TASK].values()
    assert member["schedule"]["queue_order"] == order
    assert member["schedule"]["placement"] == guard
    assert [p for _, p in validate_files([path], DataRoots(), suite)] == [[]]


def test_the_committed_orders_read() -> None:
    for seed in (0, 1, 2):
        weights, doc = read_order(AgingPrioritySeed0.path.with_name(
            f"aging-priority-seed{seed}.json"))
        assert doc["placement"] == "pal+backfill" and doc["training"]["seed"] == seed
        kept = doc["training"]["kept_iteration"]
        curve = doc["training"]["curve"]["validation"]
        assert curve[kept] == min(curve) and doc["training"]["floor_hours"] == 48
        # the file's weights are the mean of the kept iteration, as the training recorded it
        assert list(weights) == doc["training"]["curve"]["means"][kept]
